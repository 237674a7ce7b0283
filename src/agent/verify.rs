//! Verification: when the model says it is done, run the command that shows
//! whether it is, and send it back while that command fails.
//!
//! Owns: choosing the command (`config.verify_command`, else one the request
//! itself names as the way to check: `python3 test_x.py`, `python3 -m
//! unittest …`, `pytest …`, `cargo test`, `npm test`, `make …`, `go test …`),
//! running it like a `bash` call (same sandbox, environment and process-group
//! kill), the note that gives the model its failing output, and the
//! [`Verification`] the result reports.
//!
//! A small model often stops one step short: it writes a function and never
//! runs the test the request names, or rewrites a crashing script without the
//! line that prints. pirn runs the command itself, at most
//! [`DEFAULT_VERIFY_ROUNDS`](crate::config::DEFAULT_VERIFY_ROUNDS) times per send after a failure, and only when the send
//! changed something (a read-only question is never "verified").

use crate::config::SessionConfig;
use crate::tools::{self, ToolContext, ToolError};
use crate::wire::{ErrorCode, ErrorEnvelope, Verification};

/// What follows a verification run.
#[derive(Debug)]
pub enum Checked {
    /// The command passed.
    Passed,
    /// It failed and the model gets another round: the note to give it.
    Retry(String),
    /// It failed with no rounds left.
    Failed(ErrorEnvelope),
}

/// Longest a verification command may run, in ms.
pub const TIMEOUT_MS: u64 = 120_000;
/// Bytes of a failing command's output the model is shown (its tail).
const SHOWN_BYTES: usize = 3000;

/// Programs whose invocation, written in a request, is a way to check it.
const CHECKERS: &[&str] = &["python3", "python", "pytest", "cargo", "npm", "make", "go", "node", "bash", "sh", "./"];

/// The command that checks this send: `configured`, else one named in
/// `request` (in backquotes, or a `python3 x.py` / `python3 -m unittest …`
/// / `pytest …` run written inline).
pub fn command_for(configured: Option<&str>, request: &str) -> Option<String> {
    if let Some(c) = configured.map(str::trim).filter(|c| !c.is_empty()) {
        return Some(c.to_owned());
    }
    // `…` spans first: what the user quoted is the command.
    let mut rest = request;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let quoted = after[..end].trim();
        if is_check(quoted) {
            return Some(quoted.to_owned());
        }
        rest = &after[end + 1..];
    }
    inline_command(request)
}

/// True when `command` starts with a program that runs code or tests.
fn is_check(command: &str) -> bool {
    let first = command.split_whitespace().next().unwrap_or("");
    !command.is_empty()
        && CHECKERS.iter().any(|c| first == *c || (c.ends_with('/') && first.starts_with(c)))
        && !command.contains('\n')
}

/// `python3 name.py`, `python3 -m unittest [name]`, `pytest [path]` written
/// without quotes: the words from the program up to the end of the clause.
fn inline_command(request: &str) -> Option<String> {
    let words: Vec<&str> = request.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        let w = w.trim_matches(|c: char| c == '(' || c == '"' || c == '\'');
        let take = match w {
            "python3" | "python" => match words.get(i + 1).map(|n| clean(n)) {
                Some(n) if n.ends_with(".py") => 2,
                Some("-m") if words.get(i + 2).is_some_and(|m| matches!(clean(m), "unittest" | "pytest")) => {
                    let module = words.get(i + 3).map(|m| clean(m));
                    if module
                        .is_some_and(|m| !m.is_empty() && m.chars().all(|c| c.is_alphanumeric() || "_.".contains(c)))
                    {
                        4
                    } else {
                        3
                    }
                }
                _ => continue,
            },
            "pytest" => 1,
            _ => continue,
        };
        let parts: Vec<&str> = words[i..(i + take).min(words.len())].iter().map(|p| clean(p)).collect();
        return Some(parts.join(" "));
    }
    None
}

/// A word without the punctuation a sentence puts around it.
fn clean(word: &str) -> &str {
    word.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '"' | '\'' | '`')).trim_end_matches('.')
}

/// What the request says the command must print, when it says so
/// literally: "… so that `python3 greet.py` prints Hello, world!", "…
/// which must print OK", "… prints 'Name: Ada'". Not "prints the total"
/// (a description, not the text).
pub fn expected_output(request: &str) -> Option<String> {
    let lower = request.to_lowercase();
    let at = ["prints ", "print ", "outputs "].iter().filter_map(|w| lower.find(w).map(|i| i + w.len())).min()?;
    let rest = request[at..].trim_start();
    let quoted = ['"', '\'', '`'].iter().find_map(|q| {
        let inner = rest.strip_prefix(*q)?;
        inner.find(*q).map(|end| inner[..end].to_owned())
    });
    if let Some(q) = quoted {
        return Some(q).filter(|q| !q.trim().is_empty());
    }
    let first = rest.split_whitespace().next()?.to_lowercase();
    if ["the", "a", "an", "its", "their", "it", "something", "nothing", "out", "to", "and"].contains(&first.as_str()) {
        return None;
    }
    let line = rest.lines().next().unwrap_or("").trim();
    let text = line.strip_suffix('.').unwrap_or(line).trim();
    Some(text.to_owned()).filter(|t| !t.is_empty() && t.len() <= 200)
}

/// The check of one send: its command, the text its output must show,
/// and the failed runs that may still be given back to the model.
#[derive(Debug)]
pub struct Verifier {
    command: String,
    expected: Option<String>,
    rounds_left: u32,
}

impl Verifier {
    /// The send's check: [`command_for`] with [`expected_output`], given
    /// back at most `config.verify_rounds` times. `None` when there is no
    /// command, `verify_rounds` is 0, `checks` (answer checks, off in plan
    /// mode) is false, the session does not enable `bash`, or its approval
    /// policy would not let `bash` run the command unasked: verification
    /// never runs a command the model itself could not.
    /// `own`: the send's own `verify_command`, before the session's.
    pub fn for_send(config: &SessionConfig, own: Option<&str>, request: &str, checks: bool) -> Option<Verifier> {
        if !checks || config.verify_rounds == 0 || !config.tools.iter().any(|t| t == "bash") {
            return None;
        }
        let command = command_for(own.or(config.verify_command.as_deref()), request)?;
        let as_bash = serde_json::json!({ "command": command });
        if config.policy.check("bash", &as_bash, &config.workspace) != crate::approval::Verdict::Allow {
            tracing::info!(%command, "not verified: bash would need approval for it");
            return None;
        }
        Some(Verifier { command, expected: expected_output(request), rounds_left: config.verify_rounds })
    }

    /// The command.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Runs the command in the workspace as a `bash` call would (sandbox,
    /// environment, timeout, group kill); it passes when it exits 0 and
    /// its output shows the expected text, if any. Returns the report and
    /// the output the model reads.
    pub async fn run(&self, ctx: &ToolContext) -> (Verification, String) {
        let args = tools::bash::Args { command: self.command.clone(), timeout_ms: Some(TIMEOUT_MS) };
        let (mut text, mut passed) = match tools::bash::run(args, ctx).await {
            Ok(text) => (text, true),
            Err(ToolError::Failed(text)) => (text, false),
            Err(e) => (e.to_string(), false),
        };
        if let Some(want) = self.expected.as_deref().filter(|_| passed)
            && !text.contains(want)
        {
            passed = false;
            text.push_str(&format!("[the output does not contain {want:?}, which the request says it must print]\n"));
        }
        let exit_code = tools::bash::exit_code_of(&text);
        (Verification { command: self.command.clone(), exit_code, passed }, text)
    }

    /// Runs the check after the model said it is done, records its report
    /// in `report`, and says what follows: done, another round for the model
    /// (the note to give it), or the `verification_failed` error.
    pub async fn check(&mut self, ctx: &ToolContext, report: &mut Option<Verification>) -> Checked {
        let (verification, output) = self.run(ctx).await;
        let passed = verification.passed;
        let text = note(&verification, &output);
        *report = Some(verification);
        if passed {
            Checked::Passed
        } else if self.take_round() {
            Checked::Retry(text)
        } else {
            Checked::Failed(ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("`{}` still fails after the model's fixes; the task is not done", self.command),
            ))
        }
    }

    /// After a failed run: true (and one round fewer) while the failure may
    /// still be given back to the model.
    pub fn take_round(&mut self) -> bool {
        let left = self.rounds_left > 0;
        self.rounds_left = self.rounds_left.saturating_sub(1);
        left
    }

    /// At `max_iterations`, for a send that changed files: when the command
    /// now passes, the task is done though the model never said so; returns
    /// the verification and pirn's account for the answer.
    pub async fn at_the_limit(
        &self,
        progress: &super::answer_check::Progress,
        max_iterations: u32,
        ctx: &ToolContext,
    ) -> Option<(Verification, String)> {
        let (v, _) = self.run(ctx).await;
        if !v.passed {
            return None;
        }
        let answer = format!(
            "Done, checked by `{}`, which now passes (the model ran out of its {max_iterations} model calls before \
             saying so). {}",
            self.command,
            progress.account()
        );
        Some((v, answer))
    }
}

/// What the model is told after a failed verification.
pub fn note(v: &Verification, output: &str) -> String {
    let cut = tools::ceil_char_boundary(output, output.len().saturating_sub(SHOWN_BYTES));
    let shown = output[cut..].trim_end();
    let how = match v.exit_code {
        Some(0) => "it does not print what was asked for".to_owned(),
        Some(code) => format!("exit code {code}"),
        None => "it did not finish".to_owned(),
    };
    format!(
        "The task is not done yet: I ran `{}` to check your work and it failed ({how}). Its output:\n{shown}\n\
         Read the error, fix the cause with edit_file or write_file, then answer again.",
        v.command
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_named_in_requests() {
        let c = |r: &str| command_for(None, r);
        assert_eq!(
            c("Fix it so that `python3 -m unittest test_discount` passes."),
            Some("python3 -m unittest test_discount".into())
        );
        assert_eq!(
            c("Implement f, then run python3 check_f.py, which must print OK."),
            Some("python3 check_f.py".into())
        );
        assert_eq!(c("python3 test_ranges.py fails. Fix inclusive_range."), Some("python3 test_ranges.py".into()));
        assert_eq!(c("Make the tests pass: python3 -m unittest"), Some("python3 -m unittest".into()));
        assert_eq!(c("Run `cargo test` after the change"), Some("cargo test".into()));
        assert_eq!(c("What does `answer` return?"), None);
        assert_eq!(c("Rename calc_total to compute_total."), None);
        assert_eq!(command_for(Some("make check"), "anything"), Some("make check".into()));
    }

    #[test]
    fn literal_expected_output_only() {
        let e = expected_output;
        assert_eq!(e("Fix it so that `python3 greet.py` prints Hello, world!"), Some("Hello, world!".into()));
        assert_eq!(e("Then run python3 check.py, which must print OK."), Some("OK".into()));
        assert_eq!(e("Make it print 'Name: Ada' again"), Some("Name: Ada".into()));
        assert_eq!(e("Fix the error so the script runs and prints the total."), None);
        assert_eq!(e("Rename the function."), None);
    }
}
