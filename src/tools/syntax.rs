//! After a write: does the file still parse? A warning the model reads in
//! the tool result, the cheap form of the diagnostics an editor shows.
//!
//! Owns: [`problem`] and [`warning`] (the note after a write, and the
//! files a send left unparsable, are [`super::parse_notes`]'). Everything is
//! parsed in-process and runs none of the file's code: Python, Rust, TypeScript
//! (and TSX), JavaScript (and JSX) and Go with tree-sitter grammars, JSON
//! with `serde_json`, TOML with `toml_edit`. The kind is read off the file
//! name's extension; other files are not checked. A tree-sitter parser is
//! made per check (a few hundred bytes; grammars are static tables), so an
//! idle pirn holds none.

use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use tree_sitter::{Language, Node, ParseOptions, Parser};

/// Bytes of a file, at most, that are checked.
pub(super) const MAX_BYTES: usize = 512 * 1024;
/// How long one tree-sitter parse may take before it is given up (and
/// nothing is said).
const PARSE_LIMIT: Duration = Duration::from_secs(3);
/// Characters of the offending text quoted in a problem, at most.
const QUOTE_CHARS: usize = 40;

/// `"\nWarning: …"` when `content`, the new text of `path` (shown to the
/// model as `shown`), no longer parses; `None` when it does or cannot be
/// checked.
pub fn warning(path: &Path, shown: &str, content: &str) -> Option<String> {
    let problem = problem(path, content)?;
    Some(format!("\nWarning: {shown} does not parse now: {problem}. Read it and fix it."))
}

/// What the parser says of `content`, the text of `path`, when it does
/// not parse, such as ``syntax error at line 12 (unexpected `)`)``;
/// `None` when it parses, when the kind is not one this module knows
/// (see the module doc), or when `content` is over 512 KiB.
pub fn problem(path: &Path, content: &str) -> Option<String> {
    if content.len() > MAX_BYTES {
        return None;
    }
    match path.extension().and_then(|e| e.to_str())? {
        "json" => serde_json::from_str::<serde_json::Value>(content).err().map(|e| e.to_string()),
        "toml" => content.parse::<toml_edit::DocumentMut>().err().map(|e| toml_problem(content, &e)),
        ext => tree_problem(&grammar(ext)?, content),
    }
}

/// The tree-sitter grammar for files ending in `.{ext}`, if any.
fn grammar(ext: &str) -> Option<Language> {
    let lang = match ext {
        "py" | "pyi" => tree_sitter_python::LANGUAGE,
        "rs" => tree_sitter_rust::LANGUAGE,
        "ts" | "mts" | "cts" => tree_sitter_typescript::LANGUAGE_TYPESCRIPT,
        "tsx" => tree_sitter_typescript::LANGUAGE_TSX,
        "js" | "mjs" | "cjs" | "jsx" => tree_sitter_javascript::LANGUAGE,
        "go" => tree_sitter_go::LANGUAGE,
        _ => return None,
    };
    Some(lang.into())
}

/// The first ERROR or MISSING node of `content`'s tree under `language`,
/// described; `None` when there is none or the parse did not finish
/// within [`PARSE_LIMIT`].
fn tree_problem(language: &Language, content: &str) -> Option<String> {
    let mut parser = Parser::new();
    parser.set_language(language).ok()?;
    let bytes = content.as_bytes();
    let deadline = Instant::now() + PARSE_LIMIT;
    let mut give_up = |_: &tree_sitter::ParseState| {
        if Instant::now() < deadline { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    };
    let tree = parser.parse_with_options(
        &mut |at, _| bytes.get(at..).unwrap_or_default(),
        None,
        Some(ParseOptions::new().progress_callback(&mut give_up)),
    )?;
    let bad = first_bad(tree.root_node())?;
    let what = if bad.is_missing() {
        format!("missing `{}`", bad.kind())
    } else {
        let first = first_leaf(bad);
        let text = first.utf8_text(bytes).unwrap_or_default();
        match quote(text) {
            q if q.is_empty() => "unexpected end of file".to_owned(),
            q => format!("unexpected `{q}`"),
        }
    };
    Some(format!("syntax error at line {} ({what})", bad.start_position().row + 1))
}

/// The first node, in document order, that is an ERROR or MISSING node.
fn first_bad(root: Node<'_>) -> Option<Node<'_>> {
    let mut node = root;
    loop {
        if node.is_error() || node.is_missing() {
            return Some(node);
        }
        let mut cursor = node.walk();
        node = node.children(&mut cursor).find(|c| c.has_error())?;
    }
}

/// The first leaf of `node` (itself when it has no children).
fn first_leaf(mut node: Node<'_>) -> Node<'_> {
    while let Some(child) = node.child(0) {
        node = child;
    }
    node
}

/// `text`'s first line, trimmed, shortened to [`QUOTE_CHARS`] with `…`.
fn quote(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default().trim_end();
    match line.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// toml_edit's error as ``syntax error at line N (message)``; its
/// message alone when it names no place.
fn toml_problem(content: &str, e: &toml_edit::TomlError) -> String {
    let message = e.message().trim().replace('\n', "; ");
    match e.span() {
        Some(span) => {
            let line = content.get(..span.start).unwrap_or_default().matches('\n').count() + 1;
            format!("syntax error at line {line} ({message})")
        }
        None => message,
    }
}

#[cfg(test)]
mod tests;
