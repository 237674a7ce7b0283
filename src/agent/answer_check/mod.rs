//! Answer checks: before a final answer is accepted, compare it with what
//! the send actually did, and send the model back once when they disagree.
//!
//! Small models end a task with a confident sentence that nothing backs:
//! "hello.txt has been created" with no `write_file` call, "parse_header is
//! defined in src/parser.rs" in a Python repository, the output of a script
//! they only read. The eval's tasks failed that way more than any other.
//! Each check below looks only at facts pirn has (the request's words, the
//! tool calls that succeeded, the files on disk); when one fails, the model
//! gets one short user message saying what is wrong and the loop goes on.
//! The message goes to the model as a note (`Conversation::push_note`), so a
//! chat template can tell it from a new request. Every check fires at most once per send, so a model that insists still
//! ends the send, with its own answer.
//!
//! The checks, in order:
//! - [`Check::UnmadeChange`]: the request asks for a change (a change verb,
//!   not a question) and no `write_file`, `edit_file` or `bash` call
//!   succeeded;
//! - [`Check::NothingFound`]: a question is answered when every search of
//!   the send (`glob`, `grep`) found nothing and nothing was read or run:
//!   the answer rests on an empty result, most often a wrong pattern;
//! - [`Check::FalseAlready`]: the request asks for a change and the answer
//!   says a name it quotes is "already" there, yet no file of the
//!   workspace contains that name;
//! - [`Check::Announced`]: the request asks for a change and the answer
//!   announces work instead of reporting it ("I will fix it and run the
//!   tests again");
//! - [`Check::NotRun`]: a sentence of the request starts with "run" or
//!   "execute" (a command, not the noun) and no `bash` call ran;
//! - [`Check::MissingPath`]: the answer names a file (a path with a source or
//!   data extension) that exists nowhere in the workspace and that the
//!   request did not name;
//! - [`Check::UnsupportedNumber`]: a question is answered with one number
//!   that no tool result of the send showed and the request does not hold
//!   (seen: "3" right after grep said `[6 matching lines in 1 file]`).
//!
//! Off with `config.answer_checks: false`; never in plan mode.

use std::collections::HashSet;
use std::path::Path;

use super::claims::{absent_already, announces_work};

/// What went wrong with an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Check {
    UnmadeChange,
    NothingFound,
    FalseAlready,
    Announced,
    NotRun,
    MissingPath,
    EchoedNote,
    UnfinishedRename,
    UnsupportedNumber,
    /// A file the send changed no longer parses (checked by the loop).
    BrokenFile,
    /// A definition a deletion request names is still there (checked by the loop).
    StillDefined,
}

/// Verbs that make a request a change request.
const CHANGE_VERBS: &[&str] = &[
    "add",
    "append",
    "change",
    "create",
    "delete",
    "edit",
    "fix",
    "implement",
    "insert",
    "make",
    "modify",
    "move",
    "refactor",
    "remove",
    "rename",
    "replace",
    "set",
    "update",
    "write",
];
/// Openings of a polite request phrased as a question ("can you fix …?").
const POLITE: &[&str] = &["can", "could", "would", "will", "please"];
/// Extensions that make a word a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "conf", "cpp", "cs", "css", "csv", "go", "h", "hpp", "html", "ini", "java", "js", "json", "jsx",
    "kt", "lock", "lua", "md", "php", "py", "rb", "rs", "scss", "sh", "sql", "swift", "toml", "ts", "tsx", "txt",
    "xml", "yaml", "yml",
];

/// What one send has done so far, as far as the checks care.
#[derive(Debug, Default)]
pub struct Progress {
    /// A `write_file`, `edit_file` or `bash` call succeeded.
    changed: bool,
    /// A `bash` call ran (its command's exit code does not matter).
    ran: bool,
    /// A `write_file` or `edit_file` call succeeded.
    wrote: bool,
    /// The first line of each successful write or edit ("edited a.py: …").
    done: Vec<String>,
    /// Searches (`glob`, `grep`) that found nothing / something; reads and
    /// runs that succeeded.
    empty_searches: u32,
    evidence: u32,
    /// Checks that already sent the model back.
    fired: HashSet<Check>,
    /// A call was refused by the approval gate or the user: a change not
    /// made is then the user's choice, not a claim to send back.
    denied: bool,
    /// Every number the tool results of this send showed (as written).
    seen_numbers: HashSet<String>,
    /// The count lines of grep and glob results (`[6 matching lines in 1 file]`).
    counts: Vec<String>,
    /// The numbers that can answer "how many": those of count lines, of
    /// commands' output and of what the user said, not the numbers inside
    /// file content (seen: "3" from `assertEqual(2 + 1, 3)` as the count
    /// of six test functions).
    counted: HashSet<String>,
}

impl Progress {
    /// Notes one tool call's result (`result` as the model read it; failed
    /// calls start with `Error:`).
    pub fn record(&mut self, tool: &str, result: &str) {
        if matches!(tool, "grep" | "glob") {
            let count = result.lines().rev().find(|l| l.starts_with('[') && l.contains("match"));
            if let Some(line) = count.filter(|l| !self.counts.iter().any(|c| c == l)) {
                self.counted.extend(super::claims::numbers(line));
                self.counts.push(line.to_owned());
            }
        }
        if tool == "read_file" {
            // Not the line numbers read_file puts in front of each line.
            let text = result.lines().map(|l| l.split_once('\t').map_or(l, |(_, t)| t));
            self.seen_numbers.extend(text.flat_map(super::claims::numbers));
        } else {
            self.seen_numbers.extend(super::claims::numbers(result));
        }
        let ok = !result.starts_with("Error:");
        self.denied |= result.starts_with("Error: permission denied");
        match tool {
            "write_file" | "edit_file" => {
                self.changed |= ok;
                self.wrote |= ok;
                if ok {
                    let first = result.lines().next().unwrap_or("");
                    self.done.push(first.split(". Lines around").next().unwrap_or(first).to_owned());
                }
            }
            "glob" | "grep" if ok && (result.starts_with("no files match") || result.starts_with("no matches for")) => {
                self.empty_searches += 1;
            }
            "glob" | "grep" | "read_file" if ok => self.evidence += 1,
            "bash" => {
                self.counted.extend(super::claims::numbers(result));
                self.evidence += 1;
                // A command that ran and exited non-zero is still a run.
                let ran = ok || result.contains("exit code");
                self.ran |= ran;
                self.changed |= ran;
            }
            _ => {}
        }
    }

    /// Takes the numbers of the conversation so far (earlier turns, the
    /// system prompt) as seen: what the user said before is evidence too.
    pub fn seen_in(&mut self, texts: impl Iterator<Item = String>) {
        for text in texts {
            self.seen_numbers.extend(super::claims::numbers(&text).collect::<Vec<_>>());
            self.counted.extend(super::claims::numbers(&text).collect::<Vec<_>>());
        }
    }

    /// Notes a call pirn made itself to look (the preflight): it counts as
    /// evidence and a `bash` one as a run, never as a change.
    pub fn record_look(&mut self, tool: &str, result: &str) {
        match tool {
            "bash" => {
                self.seen_numbers.extend(super::claims::numbers(result));
                self.counted.extend(super::claims::numbers(result));
                self.evidence += 1;
                self.ran |= !result.starts_with("Error:") || result.contains("exit code");
            }
            _ => self.record(tool, result),
        }
    }

    /// pirn's own account of the send, for an answer the model did not
    /// give: the writes and edits that succeeded.
    pub fn summary(&self) -> String {
        if self.done.is_empty() {
            "Stopped: the model kept repeating the same tool calls, and no file was changed.".to_owned()
        } else {
            format!(
                "Stopped: the model kept repeating the same tool calls. Done before that: {}.",
                self.done.join("; ")
            )
        }
    }

    /// The writes and edits that succeeded, as one sentence.
    pub fn account(&self) -> String {
        if self.done.is_empty() {
            "No file was changed.".to_owned()
        } else {
            format!("Changes: {}.", self.done.join("; "))
        }
    }

    /// True when `request` asks for a change and nothing has changed yet.
    pub fn change_pending(&self, request: &str) -> bool {
        !self.changed && asks_for_change(request, &words(request))
    }

    /// True the first time `check` is asked about in this send (it fires
    /// at most once).
    pub fn fire_once(&mut self, check: Check) -> bool {
        self.fired.insert(check)
    }

    /// True when `request` asks for a change (a change verb, not a question).
    pub fn is_change_request(request: &str) -> bool {
        asks_for_change(request, &words(request))
    }

    /// True once a `write_file` or `edit_file` call succeeded in this send.
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// The message that sends the model back, or `None` to accept `answer`.
    /// `tools` are the enabled tools; `workspace` is the canonical root.
    pub fn review(&mut self, request: &str, answer: &str, tools: &[String], workspace: &Path) -> Option<String> {
        let enabled = |t: &str| tools.iter().any(|x| x == t);
        let words = words(request);
        let (check, message) = if !self.changed
            && !self.denied
            && (enabled("write_file") || enabled("edit_file"))
            && asks_for_change(request, &words)
            && !self.fired.contains(&Check::UnmadeChange)
        {
            (
                Check::UnmadeChange,
                "That is not true yet: no file has been changed (no write_file, edit_file or bash call \
                 succeeded in this task). Call write_file or edit_file now to make the change."
                    .to_owned(),
            )
        } else if self.empty_searches > 0
            && self.evidence == 0
            && is_question(request, &words)
            && !self.fired.contains(&Check::NothingFound)
        {
            (
                Check::NothingFound,
                "Your search found nothing, so that answer rests on no evidence: the pattern was probably wrong \
                 for this workspace. Look at the files that are there (glob with a pattern such as \"**/*\", or \
                 read_file), then answer from what you find."
                    .to_owned(),
            )
        } else if !self.fired.contains(&Check::FalseAlready)
            && asks_for_change(request, &words)
            && let Some(name) = absent_already(answer, workspace)
        {
            (
                Check::FalseAlready,
                format!(
                    "That is not true: `{name}` does not appear in any file of the workspace, so it is not there \
                     yet. Make the change now with edit_file or write_file, then answer with what you did."
                ),
            )
        } else if asks_for_change(request, &words) && announces_work(answer) && !self.fired.contains(&Check::Announced)
        {
            (
                Check::Announced,
                "You said what you are going to do, but you have not done it: the task is finished only when the \
                 change is made. Do it now with the tools, then answer with what you did."
                    .to_owned(),
            )
        } else if !self.ran && enabled("bash") && asks_to_run(request) && !self.fired.contains(&Check::NotRun) {
            let command = match quoted_command(request) {
                Some(c) => format!("Call bash with the command {c:?}"),
                None => "Run it with bash".to_owned(),
            };
            (
                Check::NotRun,
                format!(
                    "You were asked to run something, but you have not run any command. {command} and report \
                     its real output."
                ),
            )
        } else if !self.fired.contains(&Check::MissingPath)
            && let missing = missing_paths(request, answer, workspace)
            && !missing.is_empty()
        {
            (
                Check::MissingPath,
                format!(
                    "Your answer names {}, which does not exist in the workspace. Find the right file with glob \
                     or grep, then answer again.",
                    missing.join(", ")
                ),
            )
        } else if let Some(nudge) = self.review_number(request, answer) {
            return Some(nudge);
        } else if !self.fired.contains(&Check::UnfinishedRename)
            && let Some(left) = super::rename::unfinished(request, workspace)
        {
            (Check::UnfinishedRename, format!("Not finished yet: {left} Then answer."))
        } else if let Some(nudge) = self.review_echo(request, answer) {
            return Some(nudge);
        } else {
            return None;
        };
        self.fired.insert(check);
        tracing::info!(?check, "the answer was sent back to the model");
        Some(message)
    }
}

impl Progress {
    /// The number check, which a wrap-up answer gets too: a number-asking
    /// question answered with one number no tool result showed (once per
    /// send). The note quotes the counts the tools did give.
    pub fn review_number(&mut self, request: &str, answer: &str) -> Option<String> {
        let words = words(request);
        if self.fired.contains(&Check::UnsupportedNumber) || !is_question(request, &words) || !asks_for_number(request)
        {
            return None;
        }
        let how_many = request.to_lowercase().contains("how many");
        let support = if how_many { &self.counted } else { &self.seen_numbers };
        let n = super::claims::unsupported_number(answer, request, support)?;
        self.fired.insert(Check::UnsupportedNumber);
        tracing::info!(check = ?Check::UnsupportedNumber, "the answer was sent back to the model");
        let counts = if self.counts.is_empty() {
            String::new()
        } else {
            format!(" The counts the tools gave: {}.", self.counts.join(", "))
        };
        Some(format!(
            "No tool result of this task shows the number {n}, so that answer rests on nothing you saw.{counts} Answer \
             with the number a tool showed. If the number must be computed, compute it with bash (for example \
             python3 -c \"…\") and answer with what it prints."
        ))
    }

    /// The one check a wrap-up answer gets too: it narrates pirn's notes
    /// about repeated calls instead of answering (once per send).
    pub fn review_echo(&mut self, request: &str, answer: &str) -> Option<String> {
        if self.fired.contains(&Check::EchoedNote) || !super::claims::echoes_loop_note(answer) {
            return None;
        }
        self.fired.insert(Check::EchoedNote);
        tracing::info!(check = ?Check::EchoedNote, "the answer was sent back to the model");
        let request: String = request.trim().chars().take(300).collect();
        Some(format!(
            "Your reply talks about repeated tool calls instead of answering. Answer the request itself, in plain \
             words, from what the tool results above show. The request was: {request}"
        ))
    }
}

/// Lower-case words of `text` (letters, digits and `_`; `create_file` is one word).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// "run" or "execute" as a command: the first word of a sentence or of the
/// request, possibly after "please", "now", "then", "and" or "first"
/// ("Run `make test` and …", "… Then run it."), not a noun ("the exit code
/// of `pirn run`").
fn asks_to_run(request: &str) -> bool {
    const LEAD: &[&str] = &["please", "now", "then", "and", "first", "also"];
    request.split(['.', '!', '?', ';', '\n', ':']).any(|sentence| {
        let w = words(sentence);
        let verb = w.iter().position(|x| !LEAD.contains(&x.as_str()));
        verb.is_some_and(|i| w[i] == "run" || w[i] == "execute")
    })
}

/// The first `` `…` `` span of the request (the command a user quotes).
fn quoted_command(request: &str) -> Option<&str> {
    let (_, rest) = request.split_once('`')?;
    let (command, _) = rest.split_once('`')?;
    Some(command.trim()).filter(|c| !c.is_empty())
}

/// A question asking for a fact: a `?`, or a question word first
/// ("How many …", "Which file …"), and no change asked for.
fn is_question(request: &str, words: &[String]) -> bool {
    const ASKING: &[&str] =
        &["how", "what", "which", "where", "who", "when", "why", "is", "are", "does", "do", "count"];
    let asks = request.contains('?') || words.first().is_some_and(|w| ASKING.contains(&w.as_str()));
    asks && !asks_for_change(request, words)
}

/// A question whose answer is a number: "how many", "how much", "what
/// number", "what value", "the value of", "count".
fn asks_for_number(request: &str) -> bool {
    let lower = request.to_lowercase();
    ["how many", "how much", "number", "what value", "value of", "count"].iter().any(|p| lower.contains(p))
}

/// A change verb, and not a question (unless a polite request).
fn asks_for_change(request: &str, words: &[String]) -> bool {
    let question = request.trim_end().ends_with('?') && !words.first().is_some_and(|w| POLITE.contains(&w.as_str()));
    !question && words.iter().any(|w| CHANGE_VERBS.contains(&w.as_str()))
}

/// File names in `answer` that exist nowhere in the workspace and are not
/// named in `request`. A name with a directory must exist at that path; a
/// bare name anywhere in the tree.
fn missing_paths(request: &str, answer: &str, workspace: &Path) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    let mut bare_names: Option<HashSet<String>> = None;
    for token in answer.split(|c: char| c.is_whitespace() || "`'\"()[]{},;<>*".contains(c)) {
        let token = token.trim_end_matches(['.', ':', '!', '?']).trim_start_matches("./");
        if !looks_like_file(token) || request.contains(token) || missing.iter().any(|m| m == token) {
            continue;
        }
        let exists = if token.contains('/') {
            workspace.join(token).exists()
        } else {
            bare_names.get_or_insert_with(|| file_names(workspace)).contains(token)
        };
        if !exists {
            missing.push(token.to_owned());
        }
    }
    missing
}

/// `name.ext` with a known extension, made of path characters.
pub(super) fn looks_like_file(token: &str) -> bool {
    let Some((stem, ext)) = token.rsplit_once('.') else { return false };
    !stem.is_empty()
        && !stem.ends_with('/')
        && !token.starts_with('/')
        && !token.contains("..")
        && FILE_EXTENSIONS.contains(&ext)
        && token.chars().all(|c| c.is_alphanumeric() || "_-./".contains(c))
}

/// Every file name in the workspace (`.gitignore` honoured, hidden files
/// left out, at most the listing's `MAX_VISITED` entries; unlike the
/// listing, dependency directories count: a name found there exists).
fn file_names(workspace: &Path) -> HashSet<String> {
    ignore::WalkBuilder::new(workspace)
        .require_git(false)
        .build()
        .flatten()
        .take(crate::context::workspace::MAX_VISITED)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests;
