//! File blocks: an opt-in second way for the model to write a whole file,
//! for models that write code well in a Markdown fence and badly inside a
//! tool call's JSON string (aider's "whole" edit format is the same idea).
//!
//! Owns: the format and its parse. With `file_blocks` on (config key, `pirn
//! run --file-blocks`; off by default), the system prompt gains
//! [`INSTRUCTIONS`], and an answer without tool calls is read for blocks of
//! this shape: a line holding only a relative path (optionally in
//! backticks, bold or after `#`s, optionally ending in `:`), then, on the
//! next line or after one blank line, a fenced code block (three or more
//! backticks, any info string) closed by a fence at least as long. Each
//! block becomes one `write_file` call with exactly the block's lines (each
//! ending in `\n`) as `content`: the model sent those bytes as a write,
//! in the syntax the operator enabled and the model was told. The calls
//! then run like any other (approval, hooks, `write_check`, read before
//! overwrite, events); the answer's other text is kept as its prose.
//!
//! What is read is syntax, never words: a fence without a path line right
//! above it is code shown, not written. With the option on, a "show me"
//! answer that puts a path above its code writes that file: that is the
//! cost of the format, and why it is off unless the operator asks.

/// Appended to the system prompt when file blocks are on.
pub const INSTRUCTIONS: &str = "\n\nWriting a whole file: besides write_file, you may answer with the file's path \
alone on one line, then a fenced code block holding the file's complete new content:\n\nsrc/greet.py\n```python\n\
def greet(name):\n    return f\"Hello, {name}!\"\n```\n\nEach such block in your answer replaces that file with exactly \
the block's content, as write_file would. Use it only for a change the request asks for; to show code without \
changing a file, give no path line.";

/// Longest path line read as a path, in bytes.
const MAX_PATH_BYTES: usize = 255;

/// One file block of an answer.
#[derive(Debug, PartialEq)]
pub struct FileBlock {
    /// The path as the model wrote it (relative; resolved by `write_file`).
    pub path: String,
    /// The block's lines, each ending in `\n` (empty for an empty block).
    pub content: String,
}

/// The answer `text` split into its file blocks and the prose around them
/// (the path lines and fences removed, the rest as written, trimmed).
/// `None` when it holds no file block. An unclosed fence is not a block.
pub fn split(text: &str) -> Option<(String, Vec<FileBlock>)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(ticks) = fence_open(lines[i]) else {
            prose.push_str(lines[i]);
            i += 1;
            continue;
        };
        let Some(close) = (i + 1..lines.len()).find(|&j| fence_close(lines[j], ticks)) else {
            lines[i..].iter().for_each(|l| prose.push_str(l));
            break;
        };
        match path_above(&prose) {
            Some((path, keep)) => {
                prose.truncate(keep);
                let content: String = lines[i + 1..close]
                    .iter()
                    .map(|l| if l.ends_with('\n') { (*l).to_owned() } else { format!("{l}\n") })
                    .collect();
                blocks.push(FileBlock { path, content });
            }
            None => lines[i..=close].iter().for_each(|l| prose.push_str(l)),
        }
        i = close + 1;
    }
    (!blocks.is_empty()).then(|| (prose.trim().to_owned(), blocks))
}

impl FileBlock {
    /// The `write_file` arguments the block stands for, as a JSON object
    /// string: `{"file_path": path, "content": content}`.
    pub fn arguments(&self) -> String {
        serde_json::json!({ "file_path": self.path, "content": self.content }).to_string()
    }
}

/// The backtick count of an opening fence line (3 or more, then an info
/// string without backticks), else `None`.
fn fence_open(line: &str) -> Option<usize> {
    let l = line.trim_start_matches([' ']).trim_end();
    let ticks = l.bytes().take_while(|&b| b == b'`').count();
    (ticks >= 3 && line.len() - line.trim_start_matches(' ').len() <= 3 && !l[ticks..].contains('`')).then_some(ticks)
}

/// Whether `line` closes a fence opened with `ticks` backticks.
fn fence_close(line: &str, ticks: usize) -> bool {
    let l = line.trim();
    l.len() >= ticks && l.bytes().all(|b| b == b'`')
}

/// The path line at the end of `prose` (directly above the fence, or with
/// one blank line between): the path and the length `prose` keeps without it.
fn path_above(prose: &str) -> Option<(String, usize)> {
    let mut end = prose.len();
    for blank_lines in 0..=1 {
        // `prose` holds whole lines, each ending in `\n`.
        let body = prose.get(..end).filter(|b| !b.is_empty())?;
        let start = body[..body.len() - 1].rfind('\n').map_or(0, |p| p + 1);
        let line = &body[start..];
        if !line.trim().is_empty() {
            return as_path(line).map(|p| (p, start));
        }
        if blank_lines == 1 {
            break;
        }
        end = start;
    }
    None
}

/// `line` as a relative path, with its decoration removed, if it is one:
/// no whitespace, quotes or glob characters, not absolute, no `..`
/// component, and either a directory part or a file name with an
/// extension (`.gitignore`, `src/lib.rs`, `main.go`; not `python`, `Output`).
fn as_path(line: &str) -> Option<String> {
    let mut p = line.trim().trim_start_matches('#').trim();
    p = p.strip_suffix(':').unwrap_or(p).trim();
    for wrap in ["**", "`"] {
        if let Some(inner) = p.strip_prefix(wrap).and_then(|s| s.strip_suffix(wrap)) {
            p = inner.trim();
        }
    }
    p = p.strip_suffix(':').unwrap_or(p);
    let bad = |c: char| c.is_whitespace() || "`'\"*?<>|\\:;,()[]{}".contains(c);
    if p.is_empty() || p.len() > MAX_PATH_BYTES || p.starts_with('/') || p.chars().any(bad) {
        return None;
    }
    if p.split('/').any(|c| c == ".." || c.is_empty())
        || !p.starts_with(|c: char| c.is_alphanumeric() || "._".contains(c))
    {
        return None;
    }
    let name = p.rsplit('/').next().unwrap_or(p);
    let has_ext = name.rfind('.').is_some_and(|d| d + 1 < name.len());
    (p.contains('/') || has_ext).then(|| p.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(path: &str, content: &str) -> FileBlock {
        FileBlock { path: path.into(), content: content.into() }
    }

    #[test]
    fn a_path_line_then_a_fence_is_a_write_of_exactly_its_lines() {
        let text = "Here it is.\n\nreverse.py\n```python\ndef reverse(t):\n    return t[::-1]\n```\nDone.";
        let (prose, blocks) = split(text).unwrap();
        assert_eq!(blocks, vec![block("reverse.py", "def reverse(t):\n    return t[::-1]\n")]);
        assert_eq!(prose, "Here it is.\n\nDone.");
        // Decorated path lines, one blank line between, a longer fence.
        for line in ["`src/a.rs`", "**src/a.rs**", "### src/a.rs", "src/a.rs:", "`src/a.rs`:"] {
            let (_, b) = split(&format!("{line}\n\n````rust\nfn a() {{}}\n````")).unwrap();
            assert_eq!(b, vec![block("src/a.rs", "fn a() {}\n")], "{line}");
        }
        // Two blocks; an empty block empties the file; a fence at the very end.
        let (prose, b) = split("a.txt\n```\nx\n```\nb/c.json\n```json\n```").unwrap();
        assert_eq!((prose.as_str(), b), ("", vec![block("a.txt", "x\n"), block("b/c.json", "")]));
    }

    #[test]
    fn code_without_a_path_line_is_shown_not_written() {
        for text in [
            "The answer is:\n```python\nreturn x\n```",
            "```python\nreturn x\n```",
            "python\n```\nx\n```",
            "Output:\n```\nx\n```",
            "Run it like this\n```sh\nmake\n```",
            "a.py\n\n\n```\nx\n```",
            "/etc/passwd\n```\nx\n```",
            "../up.py\n```\nx\n```",
            "e.g.\n```\nx\n```",
            "a.py\n```python\nunclosed\n",
        ] {
            assert_eq!(split(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_block_stands_for_write_file_arguments_with_the_exact_content() {
        let (prose, blocks) = split("x.py\n```\nprint(\"hi\")\n```\nWritten.").unwrap();
        assert_eq!(prose, "Written.");
        let args: serde_json::Value = serde_json::from_str(&blocks[0].arguments()).unwrap();
        assert_eq!(args, serde_json::json!({"file_path": "x.py", "content": "print(\"hi\")\n"}));
    }
}
