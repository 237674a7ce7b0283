//! File blocks: an opt-in second way for the model to make a tool call,
//! for models that write code well in a Markdown fence and badly inside a
//! tool call's JSON string (aider's "whole" edit format is the same idea).
//!
//! Owns: the format and its parse. With `file_blocks` on (config key, `pirn
//! run --file-blocks`; off by default), the system prompt gains
//! [`instructions`], and the fenced code blocks (three or more backticks,
//! any info string, closed by a fence at least as long) of an answer
//! without tool calls are read, each one once, in this order:
//! 1. a block whose content is one JSON object `{"name": <an enabled
//!    tool>, "arguments": {...}}` is that call (small models write the
//!    call they mean in the text: 15 of 376 answers in the Exercism runs);
//! 2. a block right below a line holding only a relative path (optionally
//!    in backticks, bold or after `#`s, optionally ending in `:`; one blank
//!    line between is allowed) is a `write_file` of that path;
//! 3. with `file_block_target` set by the operator (aider's one file "in
//!    the chat"), the answer's only block, with no path line, is a
//!    `write_file` of that file.
//!
//! The same holds for an answer that is, whole, one JSON call. A write's
//! `content` is exactly the block's lines, each ending in `\n`: the model
//! sent those bytes, in a syntax the operator enabled and the model was
//! told. The calls then run like any other (approval, hooks,
//! `write_check`, read before overwrite, the rewrite held back once,
//! events); the rest of the answer is kept as its prose.
//!
//! What is read is syntax, never words: a block that matches none of the
//! three is code shown, not written. The cost of the format, and why it is
//! off unless the operator asks: an answer that puts a path above code it
//! only shows writes that file, and with a target, so does an answer's one
//! block of code.

/// What the system prompt gains when file blocks are on: the format, and
/// what a block without a path line does (writes `target`, or nothing).
pub fn instructions(target: Option<&str>) -> String {
    let base = "\n\nWriting a whole file: besides write_file, you may answer with the file's path alone on one \
line, then a fenced code block holding the file's complete new content:\n\nsrc/greet.py\n```python\n\
def greet(name):\n    return f\"Hello, {name}!\"\n```\n\nEach such block in your answer replaces that file with \
exactly the block's content, as write_file would. Use it only for a change the request asks for.";
    match target {
        Some(t) => format!(
            "{base} A fenced block with no path line, when it is the only one in your answer, replaces {t}; to \
             show code without changing it, do not put it in a fence."
        ),
        None => format!("{base} To show code without changing a file, give no path line."),
    }
}

/// Longest path line read as a path, in bytes.
const MAX_PATH_BYTES: usize = 255;

/// How a session reads an answer's blocks.
#[derive(Debug, Clone, Copy)]
pub struct BlockRules<'a> {
    /// The tools the session enables (a JSON call names one of them).
    pub tools: &'a [String],
    /// The file a lone block with no path line writes (`file_block_target`).
    pub target: Option<&'a str>,
}

/// A call an answer's text stands for: the tool's name and its arguments
/// as a JSON object string.
#[derive(Debug, PartialEq)]
pub struct TextCall {
    pub name: String,
    pub arguments: String,
}

/// A closed fence of an answer: its lines' indexes and its content.
struct Fence {
    open: usize,
    close: usize,
    content: String,
}

/// The calls an answer without tool calls stands for (see the module doc)
/// and the prose left (the lines of those blocks and their path lines
/// removed, trimmed). `None` when it stands for none.
pub fn calls(text: &str, reading: BlockRules<'_>) -> Option<(String, Vec<TextCall>)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let fences = fences(&lines);
    if fences.is_empty() {
        return json_call(text, reading.tools).map(|c| (String::new(), vec![c]));
    }
    let mut cut = vec![false; lines.len()];
    let mut calls = Vec::new();
    for f in &fences {
        let path_line = path_line_above(&lines, &cut, f.open);
        let call = if let Some(call) = json_call(&f.content, reading.tools) {
            call
        } else if let Some((at, path)) = path_line {
            cut[at..f.open].iter_mut().for_each(|c| *c = true);
            write(&path, &f.content)
        } else if let (Some(target), 1) = (reading.target, fences.len()) {
            write(target, &f.content)
        } else {
            continue;
        };
        cut[f.open..=f.close].iter_mut().for_each(|c| *c = true);
        calls.push(call);
    }
    let prose: String = lines.iter().zip(&cut).filter(|(_, c)| !**c).map(|(l, _)| *l).collect();
    (!calls.is_empty()).then(|| (prose.trim().to_owned(), calls))
}

/// A `write_file` call of `content` to `path`.
fn write(path: &str, content: &str) -> TextCall {
    let arguments = serde_json::json!({ "file_path": path, "content": content }).to_string();
    TextCall { name: "write_file".to_owned(), arguments }
}

/// `text` as one JSON tool call `{"name": <one of tools>, "arguments":
/// {...}}` (the arguments may also be a string holding that object).
fn json_call(text: &str, tools: &[String]) -> Option<TextCall> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let name = value.get("name")?.as_str()?;
    if !tools.iter().any(|t| t == name) || value.as_object()?.len() != 2 {
        return None;
    }
    let arguments = match value.get("arguments")? {
        serde_json::Value::String(s) => serde_json::from_str::<serde_json::Value>(s).ok()?,
        other => other.clone(),
    };
    arguments.is_object().then(|| TextCall { name: name.to_owned(), arguments: arguments.to_string() })
}

/// The closed fences of `lines`, in order (an unclosed one ends the scan).
fn fences(lines: &[&str]) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(ticks) = fence_open(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(close) = (i + 1..lines.len()).find(|&j| fence_close(lines[j], ticks)) else { break };
        let content = lines[i + 1..close]
            .iter()
            .map(|l| if l.ends_with('\n') { (*l).to_owned() } else { format!("{l}\n") })
            .collect();
        out.push(Fence { open: i, close, content });
        i = close + 1;
    }
    out
}

/// The path line above the fence opening at `open` (directly above, or
/// with one blank line between), not part of a block already read: its
/// index and the path.
fn path_line_above(lines: &[&str], cut: &[bool], open: usize) -> Option<(usize, String)> {
    let mut at = open.checked_sub(1)?;
    if lines[at].trim().is_empty() {
        at = at.checked_sub(1)?;
    }
    if cut[at] || lines[at].trim().is_empty() {
        return None;
    }
    as_path(lines[at]).map(|p| (at, p))
}

/// The backtick count of an opening fence line (3 or more, then an info
/// string without backticks), else `None`.
fn fence_open(line: &str) -> Option<usize> {
    let unindented = line.trim_start_matches(' ');
    let l = unindented.trim_end();
    let ticks = l.bytes().take_while(|&b| b == b'`').count();
    let indent = line.len() - unindented.len();
    (ticks >= 3 && indent <= 3 && !l[ticks..].contains('`')).then_some(ticks)
}

/// Whether `line` closes a fence opened with `ticks` backticks.
fn fence_close(line: &str, ticks: usize) -> bool {
    let l = line.trim();
    l.len() >= ticks && l.bytes().all(|b| b == b'`')
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

    fn tools() -> Vec<String> {
        ["read_file", "write_file", "edit_file", "bash"].map(String::from).to_vec()
    }

    /// The answer's calls as (name, arguments) and its prose, read with `target`.
    fn read(text: &str, target: Option<&str>) -> Option<(String, Vec<(String, serde_json::Value)>)> {
        let tools = tools();
        let (prose, calls) = calls(text, BlockRules { tools: &tools, target })?;
        let calls = calls.into_iter().map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap())).collect();
        Some((prose, calls))
    }

    fn write_of(path: &str, content: &str) -> (String, serde_json::Value) {
        ("write_file".to_owned(), serde_json::json!({"file_path": path, "content": content}))
    }

    #[test]
    fn a_path_line_then_a_fence_is_a_write_of_exactly_its_lines() {
        let text = "Here it is.\n\nreverse.py\n```python\ndef reverse(t):\n    return t[::-1]\n```\nDone.";
        let (prose, calls) = read(text, None).unwrap();
        assert_eq!(calls, vec![write_of("reverse.py", "def reverse(t):\n    return t[::-1]\n")]);
        assert_eq!(prose, "Here it is.\n\nDone.");
        // Decorated path lines, one blank line between, a longer fence.
        for line in ["`src/a.rs`", "**src/a.rs**", "### src/a.rs", "src/a.rs:", "`src/a.rs`:"] {
            let (_, calls) = read(&format!("{line}\n\n````rust\nfn a() {{}}\n````"), None).unwrap();
            assert_eq!(calls, vec![write_of("src/a.rs", "fn a() {}\n")], "{line}");
        }
        // Two blocks; an empty block empties the file; a fence at the very end.
        let (prose, calls) = read("a.txt\n```\nx\n```\nb/c.json\n```json\n```", None).unwrap();
        assert_eq!((prose.as_str(), calls), ("", vec![write_of("a.txt", "x\n"), write_of("b/c.json", "")]));
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
            "Just words.",
        ] {
            assert_eq!(read(text, None), None, "{text:?}");
        }
    }

    #[test]
    fn with_a_target_only_a_lone_block_without_a_path_line_writes_it() {
        let text = "The answer is:\n```python\ndef reverse(t):\n    return t[::-1]\n```\nThat reverses it.";
        let (prose, calls) = read(text, Some("reverse.py")).unwrap();
        assert_eq!(calls, vec![write_of("reverse.py", "def reverse(t):\n    return t[::-1]\n")]);
        assert_eq!(prose, "The answer is:\nThat reverses it.");
        // Two blocks without path lines: neither is written.
        let two = "Code:\n```python\nx = 1\n```\nRun:\n```sh\npython x.py\n```";
        assert_eq!(read(two, Some("x.py")), None);
        // A named block still goes where it says.
        let (_, calls) = read("b.py\n```\ny = 2\n```", Some("x.py")).unwrap();
        assert_eq!(calls, vec![write_of("b.py", "y = 2\n")]);
    }

    #[test]
    fn a_tool_call_written_as_json_text_is_that_call() {
        let call = r#"{"name": "write_file", "arguments": {"file_path": "a.py", "content": "x = 1\n"}}"#;
        let fenced = format!("```json\n{call}\n```");
        for text in [call.to_owned(), fenced] {
            // Even with a target: the JSON is the call, not the file's content.
            let (prose, calls) = read(&text, Some("b.py")).unwrap();
            assert_eq!((prose.as_str(), calls), ("", vec![write_of("a.py", "x = 1\n")]), "{text}");
        }
        // Arguments given as a string holding the object.
        let (_, calls) = read(r#"{"name": "bash", "arguments": "{\"command\": \"ls\"}"}"#, None).unwrap();
        assert_eq!(calls, vec![("bash".to_owned(), serde_json::json!({"command": "ls"}))]);
        // A tool the session does not enable, extra keys, or arguments that are not an object: not a call.
        for text in [
            r#"{"name": "delete_all", "arguments": {}}"#,
            r#"{"name": "bash", "arguments": {"command": "ls"}, "id": 1}"#,
            r#"{"name": "bash", "arguments": [1]}"#,
            r#"{"name": "x", "value": 2}"#,
        ] {
            assert_eq!(read(text, None), None, "{text}");
        }
    }
}
