//! Renames a request asks for ("rename calc_total to compute_total",
//! "replace X with Y"): where the old name still appears in the workspace.
//!
//! Owns: reading the pair out of the request, and [`complete`]: once the
//! model itself has renamed the old name to the new one somewhere (its edit's
//! result says where the old name is still used), pirn carries the same
//! rename into every other line that uses it, as an editor's rename
//! refactoring would. The logs showed why: a small model renames the
//! definition, then rewrites the same file until its calls run out, never
//! looking at the callers; told where the uses were, it read those files
//! and still did not edit them; handed the exact call to make, it copied
//! its own last call instead. The cycle note and the answer check spell
//! out the next edit when the rename is still not finished
//! ([`crate::tools::references::rename_calls`]).

use std::path::{Path, PathBuf};

use serde_json::json;

use super::SendStats;
use super::answer_check::Progress;
use super::calls::Done;
use super::tool_call::CallContext;
use crate::conversation::Conversation;
use crate::model::ToolCall;

/// Lines that use the old name, at most, for pirn to finish a rename.
pub const MAX_COMPLETED: usize = 24;

/// Words between the verb and the name that are not the name.
const KINDS: &[&str] = &["the", "function", "class", "variable", "method", "constant", "field", "key", "type", "name"];

/// An identifier: a letter or `_`, then letters, digits or `_`.
fn identifier(token: &str) -> Option<&str> {
    let t = token.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
    let t = t.split('(').next().unwrap_or(t);
    let ok = t.len() >= 2
        && t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && t.chars().all(|c| c.is_alphanumeric() || c == '_');
    ok.then_some(t)
}

/// `(old, new)` of "rename [the function] OLD to NEW" or "replace OLD with NEW".
pub fn pair(request: &str) -> Option<(String, String)> {
    let tokens: Vec<&str> = request.split_whitespace().collect();
    for (i, t) in tokens.iter().enumerate() {
        let verb = t.to_lowercase();
        let link = match verb.trim_matches(|c: char| !c.is_alphabetic()) {
            "rename" => "to",
            "replace" => "with",
            _ => continue,
        };
        let rest = &tokens[i + 1..];
        let start = rest.iter().position(|w| !KINDS.contains(&w.to_lowercase().as_str()))?;
        let old = identifier(rest[start])?;
        let at = rest.iter().position(|w| w.eq_ignore_ascii_case(link))?;
        let new = rest.get(at + 1).and_then(|w| identifier(w))?;
        if at > start && old != new {
            return Some((old.to_owned(), new.to_owned()));
        }
    }
    None
}

/// Words that make a rename reach past the files a request names ("its
/// definition in utils.py and every call to it").
const WIDE: &[&str] = &["everywhere", "every", "all", "across", "project", "callers", "calls", "uses", "usages"];

/// Where a rename request applies: the files it names that exist ("in
/// inventory.py, rename …"), unless it also says everywhere, every call,
/// all files…; else the whole workspace (empty).
pub fn scope(request: &str, workspace: &Path) -> Vec<PathBuf> {
    let lower = request.to_lowercase();
    let wide = lower.split(|c: char| !c.is_alphanumeric()).any(|w| WIDE.contains(&w));
    if wide {
        return Vec::new();
    }
    super::preflight::mentioned_files(request).iter().filter_map(|n| super::preflight::locate(n, workspace)).collect()
}

/// For a rename request whose old name is still used in its [`scope`]: a
/// sentence naming where, with the next edit spelled out
/// ([`crate::tools::references::rename_calls`]); `None` otherwise.
pub fn unfinished(request: &str, workspace: &Path) -> Option<String> {
    let (old, new) = pair(request)?;
    let ctx = crate::tools::ToolContext::new(workspace.to_path_buf(), Vec::new(), Default::default());
    crate::tools::references::rename_calls(&ctx, &old, &new, &scope(request, workspace))
}

/// When the request asks to rename `old` to `new` and one of `answered`
/// (this answer's results) is an edit that did so and names uses of `old`
/// left elsewhere: pirn's own `edit_file` calls that rename each of those
/// lines (whole words; at most [`MAX_COMPLETED`] lines, else nothing), run
/// like the model's (approval, events, conversation), when the session's
/// policy lets `edit_file` run unasked. Returns their results.
pub async fn complete(
    cx: &CallContext<'_>,
    conv: &mut Conversation,
    stats: &mut SendStats,
    progress: &mut Progress,
    request: &str,
    answered: &[Done],
) -> Vec<Done> {
    let Some((old, new)) = pair(request) else { return Vec::new() };
    let started = format!("`{old}` is still used where `{new}` is meant");
    if !answered.iter().any(|(_, r)| !r.starts_with("Error:") && r.contains(&started)) {
        return Vec::new();
    }
    let config = cx.config;
    let within = scope(request, &config.workspace);
    let Some(edits) = crate::tools::references::rename_edits(cx.tools, &old, &new, MAX_COMPLETED, &within) else {
        return Vec::new();
    };
    let calls: Vec<ToolCall> = edits
        .into_iter()
        .enumerate()
        .map(|(i, (file, line, renamed, repeated))| {
            let mut args = json!({"file_path": file, "old_string": line, "new_string": renamed});
            if repeated {
                args["replace_all"] = json!(true);
            }
            ToolCall { id: format!("pirn_ren_{}", i + 1), name: "edit_file".to_owned(), arguments: args.to_string() }
        })
        .filter(|c| {
            let args: serde_json::Value = serde_json::from_str(&c.arguments).unwrap_or_default();
            super::tool_call::allowed_unasked(config, "edit_file", &args)
        })
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    tracing::info!(%old, %new, lines = calls.len(), "pirn finishes the rename the model started");
    super::tool_call::run_own(cx, conv, stats, &calls, |name, text| progress.record(name, text)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_reaches_past_the_named_files_when_it_says_so() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::write(root.join("utils.py"), "def f():\n    pass\n").unwrap();
        assert!(scope("Rename f to g everywhere: its definition in utils.py and every call to it.", &root).is_empty());
        assert_eq!(scope("In utils.py, rename the variable f to g.", &root), [root.join("utils.py")]);
    }

    #[test]
    fn the_pair_and_the_places_left() {
        assert_eq!(
            pair("Rename the function calc_total to compute_total everywhere: its definition"),
            Some(("calc_total".into(), "compute_total".into()))
        );
        assert_eq!(
            pair("Replace `old_name` with `new_name` in every file."),
            Some(("old_name".into(), "new_name".into()))
        );
        assert_eq!(pair("Fix the bug in calc.py."), None);
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(
            ws.path().join("main.py"),
            "from utils import calc_total\nx = calc_totals\nprint(calc_total(1))\n",
        )
        .unwrap();
        let note = unfinished("Rename calc_total to compute_total.", ws.path()).unwrap();
        assert!(note.contains("at main.py:1, main.py:3"), "{note}");
        assert!(
            note.contains(
                r#""old_string": "from utils import calc_total", "new_string": "from utils import compute_total""#
            ),
            "{note}"
        );
        std::fs::write(ws.path().join("main.py"), "print(compute_total(1))\n").unwrap();
        assert_eq!(unfinished("Rename calc_total to compute_total.", ws.path()), None);
    }
}
