//! `grep {pattern, path?, glob?, case_insensitive?, output_mode?, before?,
//! after?, context?, head_limit?}`: regex search with ripgrep's libraries.
//!
//! Owns: the parallel `ignore` walk, `grep-regex` matching,
//! `grep-searcher` line search (binary files skipped), rg-style output
//! (`path:line:text` for matches, `path-line-text` for context lines),
//! the global match cap and cancellation between files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;

use super::cap::floor_char_boundary;
use super::context::ToolContext;
use super::error::{ToolError, failed};
use super::glob::walk_threads;

/// Matching lines collected at most over the whole search.
pub const MAX_MATCHES: usize = 2000;
/// Characters kept of one output line.
const MAX_LINE_CHARS: usize = 500;

/// How results are shown.
#[derive(Debug, Default, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// `path:line:text` for each matching line (and context lines).
    #[default]
    Content,
    /// One path per matching file.
    FilesWithMatches,
    /// `path:count` per matching file.
    Count,
}

/// Arguments as the model sends them (their schema is the tool's `parameters`).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// Regular expression to search for.
    pub pattern: String,
    /// File or directory to search. Default: the workspace.
    #[serde(default)]
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`.
    #[serde(default)]
    pub glob: Option<String>,
    /// Ignore case. Default false.
    #[serde(default, alias = "-i")]
    pub case_insensitive: bool,
    /// `content` (default): `path:line:text` lines; `files_with_matches`: one
    /// path per matching file; `count`: `path:count` per matching file.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Context lines before each match.
    #[serde(default, alias = "-B")]
    pub before: Option<usize>,
    /// Context lines after each match.
    #[serde(default, alias = "-A")]
    pub after: Option<usize>,
    /// Context lines before and after each match.
    #[serde(default, alias = "-C")]
    pub context: Option<usize>,
    /// Return at most this many output lines.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub head_limit: Option<usize>,
}

/// What the model is told the tool does.
pub const DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax). Honours .gitignore, skips binary files. Output: `path:line:text`.";

/// Per-file results, gathered by the walker threads.
struct FileHits {
    path: PathBuf,
    text: String,
    count: usize,
}

/// Searches. Errors (to the model): invalid regex or glob, path outside the
/// workspace. A pattern that is not a valid regex, or one with regex
/// characters that matches nothing, is searched for as the text itself
/// (a small model greps for code it copied: `def __init__(self):` as a
/// regex matches nothing), and the result says so.
pub fn run(args: Args, ctx: &ToolContext) -> Result<String, ToolError> {
    // A resolved path holds no links; the walk below follows none, so a
    // link to a directory outside is never searched.
    let target = ctx.resolve(args.path.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or("."))?;
    let root = target.path().to_path_buf();
    if !target.exists() {
        return failed(format!("{} does not exist", ctx.display(&root)));
    }
    let build = |literal: bool| {
        RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive)
            .fixed_strings(literal)
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
    };
    let mut walk = WalkBuilder::new(&root);
    walk.require_git(false).threads(walk_threads());
    if let Some(g) = args.glob.as_deref().filter(|g| !g.trim().is_empty()) {
        let base = if root.is_dir() { root.clone() } else { root.parent().map(Path::to_path_buf).unwrap_or_default() };
        let mut ob = OverrideBuilder::new(base);
        if let Err(e) = ob.add(g.trim()) {
            return failed(format!("invalid glob {g:?}: {e}"));
        }
        match ob.build() {
            Ok(o) => {
                walk.overrides(o);
            }
            Err(e) => return failed(format!("invalid glob {g:?}: {e}")),
        }
    }
    let found = match build(false) {
        Ok(matcher) => search(&walk, &matcher, &args, ctx)?,
        Err(e) => {
            let Ok(literal) = build(true) else { return failed(format!("invalid regex {:?}: {e}", args.pattern)) };
            let mut found = search(&walk, &literal, &args, ctx)?;
            found.note =
                Some(format!("[{:?} is not a valid regular expression; searched for the text itself]", args.pattern));
            found
        }
    };
    let found = if found.hits.is_empty()
        && found.note.is_none()
        && args.pattern.contains(['(', ')', '[', ']', '{', '}', '.', '*', '+', '?', '|', '^', '$', '\\'])
        && let Ok(literal) = build(true)
        && let mut plain = search(&walk, &literal, &args, ctx)?
        && !plain.hits.is_empty()
    {
        plain.note = Some(format!(
            "[as a regular expression {:?} matches nothing; these are the lines holding it as written]",
            args.pattern
        ));
        plain
    } else {
        found
    };
    if found.hits.is_empty() {
        let how = if found.note.is_some() { " (not a valid regular expression: searched for as text)" } else { "" };
        return Ok(format!("no matches for {:?}{how} under {}", args.pattern, ctx.display(&root)));
    }
    Ok(report(found, &args, ctx))
}

/// What one search found.
struct Found {
    hits: Vec<FileHits>,
    /// It stopped at [`MAX_MATCHES`].
    capped: bool,
    /// Said before the matches (a fallback to the literal text).
    note: Option<String>,
}

/// Walks `walk` in parallel with `matcher`. Errors: cancelled.
fn search(
    walk: &WalkBuilder,
    matcher: &grep_regex::RegexMatcher,
    args: &Args,
    ctx: &ToolContext,
) -> Result<Found, ToolError> {
    let before = args.before.or(args.context).unwrap_or(0).min(50);
    let after = args.after.or(args.context).unwrap_or(0).min(50);
    let mode = args.output_mode;
    let total = AtomicUsize::new(0);
    let capped = AtomicBool::new(false);
    let cancelled = AtomicBool::new(false);
    let hits: Mutex<Vec<FileHits>> = Mutex::new(Vec::new());
    walk.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .before_context(if mode == OutputMode::Content { before } else { 0 })
            .after_context(if mode == OutputMode::Content { after } else { 0 })
            .build();
        let matcher = matcher.clone();
        let (total, capped, cancelled, hits, cancel) = (&total, &capped, &cancelled, &hits, ctx.cancel.clone());
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                cancelled.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            if capped.load(Ordering::Relaxed) {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let shown = ctx.display(entry.path());
            let mut sink = HitSink { shown: &shown, mode, text: String::new(), count: 0, total, capped };
            if searcher.search_path(&matcher, entry.path(), &mut sink).is_err() {
                return WalkState::Continue;
            }
            if sink.count > 0 {
                let (text, count) = (sink.text, sink.count);
                if let Ok(mut h) = hits.lock() {
                    h.push(FileHits { path: entry.into_path(), text, count });
                }
            }
            WalkState::Continue
        })
    });
    if cancelled.load(Ordering::Relaxed) {
        return Err(ToolError::Failed("cancelled".to_owned()));
    }
    Ok(Found { hits: hits.into_inner().unwrap_or_default(), capped: capped.load(Ordering::Relaxed), note: None })
}

/// The result text: the matches sorted by path, as `mode` asks, then the count.
fn report(found: Found, args: &Args, ctx: &ToolContext) -> String {
    let Found { mut hits, capped, note } = found;
    hits.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let mode = args.output_mode;
    let mut out = String::new();
    if let Some(note) = note {
        out.push_str(&note);
        out.push('\n');
    }
    for h in &hits {
        match mode {
            OutputMode::Content => out.push_str(&h.text),
            OutputMode::FilesWithMatches => {
                let _ = writeln!(out, "{}", ctx.display(&h.path));
            }
            OutputMode::Count => {
                let _ = writeln!(out, "{}:{}", ctx.display(&h.path), h.count);
            }
        }
    }
    if let Some(limit) = args.head_limit.filter(|l| *l > 0) {
        let lines = out.lines().count();
        if lines > limit {
            let cut: String = out.lines().take(limit).flat_map(|l| [l, "\n"]).collect();
            out = format!("{cut}[{} more lines not shown (head_limit={limit})]\n", lines - limit);
        }
    }
    if capped {
        let _ = writeln!(out, "[stopped after {MAX_MATCHES} matching lines; narrow the pattern, path or glob]");
    } else {
        // A small model miscounts a list it reads; the count is stated.
        let lines: usize = hits.iter().map(|h| h.count).sum();
        let files = hits.len();
        if mode == OutputMode::FilesWithMatches {
            let _ = writeln!(out, "[{files} file{} match]", plural(files));
        } else {
            let _ = writeln!(out, "[{lines} matching line{} in {files} file{}]", plural(lines), plural(files));
        }
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

struct HitSink<'a> {
    shown: &'a str,
    mode: OutputMode,
    text: String,
    count: usize,
    total: &'a AtomicUsize,
    capped: &'a AtomicBool,
}

impl HitSink<'_> {
    fn line(&mut self, sep: char, number: Option<u64>, bytes: &[u8]) {
        let line = String::from_utf8_lossy(bytes);
        let line = line.trim_end_matches(['\n', '\r']);
        let cut = floor_char_boundary(line, MAX_LINE_CHARS);
        let _ = write!(self.text, "{}{sep}{}{sep}{}", self.shown, number.unwrap_or(0), &line[..cut]);
        if cut < line.len() {
            self.text.push_str(" [...]");
        }
        self.text.push('\n');
    }
}

impl Sink for HitSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.count += 1;
        match self.mode {
            OutputMode::FilesWithMatches => return Ok(false),
            OutputMode::Count => return Ok(true),
            OutputMode::Content => {}
        }
        if self.total.fetch_add(1, Ordering::Relaxed) >= MAX_MATCHES {
            self.capped.store(true, Ordering::Relaxed);
            self.count -= 1;
            return Ok(false);
        }
        self.line(':', m.line_number(), m.bytes());
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(c.kind(), SinkContextKind::Before | SinkContextKind::After) {
            self.line('-', c.line_number(), c.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.text.push_str("--\n");
        Ok(true)
    }
}
