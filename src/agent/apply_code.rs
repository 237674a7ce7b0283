//! Code in an answer, applied: a change request answered with the fixed
//! file in a fenced block, and no tool call, is written as that block.
//!
//! A small model asked to fix a file often explains the fix and shows the
//! corrected file ("Here's the corrected code: ```python …```"), then
//! stops; sent back ("no file has been changed"), it shows the same block
//! again. The eval's logs have it on four tasks. Aider's "whole" edit
//! format is built on the same observation: weak models write whole files
//! well and tool calls badly, so the file in the answer is the edit.
//!
//! Owns: [`proposed_write`], which finds the one fenced block of an answer
//! and the workspace file it is meant for (the file named just before the
//! fence, else the one file of its language that the request names or that
//! this session read), and [`apply`], which writes it as pirn's own
//! `write_file` call: the approval gate, the events, `write_file`'s guards
//! and merges (a block holding one function is merged, a block that only
//! reformats is refused once), then the loop goes on, so the model sees the
//! result and the send's check still decides. Only for change requests,
//! only when the answer checks are on, at most [`MAX_APPLIED`] times a send.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::SendStats;
use super::answer_check::Progress;
use super::tool_call::CallContext;
use crate::conversation::Conversation;
use crate::model::ToolCall;

/// Blocks applied at most per send.
pub const MAX_APPLIED: u32 = 2;
/// Characters before a fence searched for the file's name.
const NAME_WINDOW: usize = 160;

/// Fence language tags and the file extensions they stand for.
const LANGUAGES: &[(&str, &[&str])] = &[
    ("python", &["py"]),
    ("py", &["py"]),
    ("javascript", &["js", "mjs", "cjs"]),
    ("js", &["js", "mjs", "cjs"]),
    ("typescript", &["ts", "tsx"]),
    ("ts", &["ts", "tsx"]),
    ("rust", &["rs"]),
    ("go", &["go"]),
    ("json", &["json"]),
    ("yaml", &["yaml", "yml"]),
    ("toml", &["toml"]),
    ("ini", &["ini", "cfg"]),
    ("sh", &["sh"]),
    ("bash", &["sh"]),
];

/// The one fenced block of `answer`: (its language tag, lower-case, maybe
/// empty; its content; the text before it). `None` for none or several.
fn the_block(answer: &str) -> Option<(String, String, &str)> {
    let mut parts = answer.split("```");
    let before = parts.next()?;
    let block = parts.next()?;
    let _after = parts.next()?;
    if parts.next().is_some() {
        return None; // more than one block: which one is meant is a guess
    }
    let (tag, content) = block.split_once('\n')?;
    let tag = tag.trim().to_lowercase();
    let content = content.trim_end().to_owned() + "\n";
    (content.trim().lines().count() >= 1 && !tag.contains(' ')).then_some((tag, content, before))
}

/// The workspace file the one fenced block of `answer` is meant for, and
/// the block: the file named in the text right before the fence (when it
/// exists), else the one file of the block's language named in `request`,
/// else the one such file in `read` (the session's reads). A block that is
/// a tool call written out, or a `json` block for a code file, is none.
pub fn proposed_write(
    answer: &str,
    request: &str,
    read: &HashSet<PathBuf>,
    workspace: &Path,
) -> Option<(String, String)> {
    let (tag, content, before) = the_block(answer)?;
    if super::claims::is_call_text(&content) {
        return None;
    }
    let extensions: Option<&[&str]> = LANGUAGES.iter().find(|(t, _)| *t == tag).map(|(_, e)| *e);
    if extensions.is_none() && !tag.is_empty() {
        return None; // `text`, `diff`, `console`…: not a file's content
    }
    let fits = |p: &Path| {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        extensions.is_none_or(|exts| exts.contains(&ext))
    };
    let rel = |p: &Path| p.strip_prefix(workspace).ok().map(|r| r.to_string_lossy().into_owned());
    let near = &before[before.floor_char_boundary(before.len().saturating_sub(NAME_WINDOW))..];
    let named_before: Vec<PathBuf> =
        super::preflight::mentioned_files(near).iter().filter_map(|n| super::preflight::locate(n, workspace)).collect();
    if let Some(last) = named_before.last().filter(|p| fits(p)) {
        return Some((rel(last)?, content));
    }
    let named: Vec<PathBuf> = super::preflight::mentioned_files(request)
        .iter()
        .filter_map(|n| super::preflight::locate(n, workspace))
        .filter(|p| fits(p))
        .collect();
    let pick = match &named[..] {
        [one] => one.clone(),
        [] => {
            let mut seen: Vec<&PathBuf> = read.iter().filter(|p| p.starts_with(workspace) && fits(p)).collect();
            seen.sort();
            match seen[..] {
                [one] => one.clone(),
                _ => return None,
            }
        }
        _ => return None,
    };
    // The block must be about that file: it shares a line with it.
    let text = std::fs::read_to_string(&pick).ok()?;
    let lines: HashSet<&str> = text.lines().map(str::trim).filter(|l| l.len() >= 6).collect();
    if !content.lines().any(|l| lines.contains(l.trim())) {
        return None;
    }
    Some((rel(&pick)?, content))
}

/// Writes `content` to `file` as pirn's own `write_file` call (see the
/// module docs), when the session enables `write_file` and its policy lets
/// it run unasked. Returns the call's result, `None` when not run.
pub async fn apply(
    cx: &CallContext<'_>,
    conv: &mut Conversation,
    stats: &mut SendStats,
    progress: &mut Progress,
    file: &str,
    content: &str,
) -> Option<String> {
    let config = cx.config;
    let args = json!({"file_path": file, "content": content});
    if !super::tool_call::allowed_unasked(config, "write_file", &args) {
        return None;
    }
    tracing::info!(%file, "the answer's code block is written as the change it proposes");
    let id = format!("pirn_apply_{}", stats.tool_calls_made.len() + 1);
    let call = ToolCall { id, name: "write_file".to_owned(), arguments: args.to_string() };
    let ran = super::tool_call::run_own(cx, conv, stats, std::slice::from_ref(&call), |n, t| progress.record(n, t));
    ran.await.pop().map(|(_, text)| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        for (n, t) in files {
            std::fs::write(dir.path().join(n), t).unwrap();
        }
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn the_block_goes_to_the_file_it_is_about() {
        let (_d, root) =
            ws(&[("receipt.py", "total = 0\nfor p in prices:\n    total = total + p\n"), ("other.py", "x = 1\n")]);
        let answer = "Convert p first. Here's the corrected code:\n\n```python\ntotal = 0\nfor p in prices:\n    total = total + int(p)\n```\n\nNow it prints 15.";
        let none = HashSet::new();
        let (file, content) = proposed_write(answer, "receipt.py crashes. Fix it.", &none, &root).unwrap();
        assert_eq!(file, "receipt.py");
        assert!(content.ends_with("total + int(p)\n"), "{content}");
        // Named right before the fence wins; read files decide when the request names none.
        let named = "In `other.py`:\n```python\nx = 2\n```";
        assert_eq!(proposed_write(named, "Fix it.", &none, &root).unwrap().0, "other.py");
        let read: HashSet<PathBuf> = [root.join("receipt.py")].into();
        assert_eq!(proposed_write(answer, "Fix the crash.", &read, &root).unwrap().0, "receipt.py");
    }

    #[test]
    fn no_guessing() {
        let (_d, root) = ws(&[("a.py", "x = 1\n"), ("b.py", "y = 2\n")]);
        let none = HashSet::new();
        let two = "```python\nx = 1\n```\nand\n```python\ny = 3\n```";
        assert!(proposed_write(two, "Fix a.py", &none, &root).is_none(), "two blocks");
        let unrelated = "```python\nimport os\nprint(os.getcwd())\n```";
        assert!(proposed_write(unrelated, "Fix a.py", &none, &root).is_none(), "shares no line with a.py");
        let call = "```json\n{\"name\": \"write_file\", \"arguments\": {}}\n```";
        assert!(proposed_write(call, "Fix a.py", &none, &root).is_none());
        let shell = "```bash\npython3 a.py\n```";
        assert!(proposed_write(shell, "Fix a.py", &none, &root).is_none(), "a command is not a.py's content");
        assert!(proposed_write("```python\nx = 1\n```", "Fix a.py and b.py", &none, &root).is_none(), "which one?");
    }
}
