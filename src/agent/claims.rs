//! Claims in a final answer that pirn can hold against the facts: work
//! announced instead of done, and names said to be "already" there that no
//! file contains. Used by [`super::answer_check`].

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::answer_check::looks_like_file;

/// Most bytes [`absent_already`] reads from the workspace.
const SEARCHED_BYTES: u64 = 16 << 20;

/// For an answer saying something is "already" there: the first name it
/// quotes in backquotes (`is_palindrome`, `is_palindrome(text)`) that no
/// file of the workspace contains.
pub(super) fn absent_already(answer: &str, workspace: &Path) -> Option<String> {
    if !answer.to_lowercase().contains("already") {
        return None;
    }
    let quoted = answer.split('`').skip(1).step_by(2);
    let names: Vec<&str> = quoted
        .map(|q| q.split('(').next().unwrap_or("").trim())
        .filter(|n| n.len() >= 3 && n.chars().all(|c| c.is_alphanumeric() || c == '_') && !looks_like_file(n))
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut present = vec![false; names.len()];
    // Bounded: at most the listing's entries, files of at most 1 MiB and
    // SEARCHED_BYTES in all (past it, a name not seen counts as present).
    let mut budget = SEARCHED_BYTES;
    let walk = ignore::WalkBuilder::new(workspace).require_git(false).build().flatten();
    for entry in walk.take(crate::context::workspace::MAX_VISITED) {
        let len = entry.metadata().map_or(u64::MAX, |m| m.len());
        if !entry.file_type().is_some_and(|t| t.is_file()) || len > 1 << 20 {
            continue;
        }
        if len > budget {
            return None;
        }
        budget -= len;
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        for (i, n) in names.iter().enumerate() {
            present[i] |= text.contains(n);
        }
    }
    names.iter().zip(present).find(|(_, p)| !p).map(|(n, _)| (*n).to_owned())
}

/// Phrases that announce work still to do, when they open a sentence.
const ANNOUNCING: &[&str] = &[
    "i will ",
    "i'll ",
    "let me ",
    "i am going to ",
    "i'm going to ",
    "next, i ",
    "now i will ",
    "now, i will ",
    "i need to ",
    "we need to ",
    "i would need to ",
];

/// True when a sentence of `answer` opens with an announcement of work
/// ("I will fix it", "Let me run the tests").
pub(super) fn announces_work(answer: &str) -> bool {
    answer.split(['.', '!', '?', '\n']).any(|sentence| {
        let s = sentence.trim_start().to_lowercase();
        ANNOUNCING.iter().any(|a| s.starts_with(a))
    })
}

/// A plain-text answer the model wrapped in a ```` ```json ```` fence (the
/// 1.5B model does after tool calls written that way) without the fence;
/// anything else as it is.
/// True when `answer` narrates pirn's notes about repeated tool calls
/// ("I made the same read_file call…", "its result has not changed")
/// instead of answering the request.
pub(super) fn echoes_loop_note(answer: &str) -> bool {
    const ECHOES: &[&str] = &[
        "made the same",
        "made exactly this",
        "same call in my previous",
        "result has not changed",
        "result did not change",
        "result will not change",
        "stopped the tool calls",
        "in my previous answer",
    ];
    let a = answer.to_lowercase();
    ECHOES.iter().any(|e| a.contains(e))
}

pub(super) fn unfence(text: String) -> String {
    let t = text.trim();
    let Some(inner) = t.strip_prefix("```json") else { return text };
    let inner = inner.trim().strip_suffix("```").unwrap_or(inner).trim();
    if inner.is_empty() || serde_json::from_str::<Value>(inner).is_ok() || inner.contains("```") {
        return text;
    }
    inner.to_owned()
}

/// The numbers written in `text` (runs of digits, with a decimal part
/// when there is one), as written.
pub(super) fn numbers(text: &str) -> impl Iterator<Item = String> + '_ {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || (c == '.' && !current.is_empty() && chars.peek().is_some_and(char::is_ascii_digit)) {
            current.push(c);
        } else if !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out.into_iter()
}

/// For an answer that gives exactly one number (outside file names and
/// code spans): that number, when neither `seen` (the numbers of the send's
/// tool results) nor the request holds it.
pub(super) fn unsupported_number(answer: &str, request: &str, seen: &HashSet<String>) -> Option<String> {
    let words: Vec<&str> = answer
        .split(|c: char| c.is_whitespace() || "`'\"()[]{},;:".contains(c))
        .filter(|w| !w.is_empty() && !super::answer_check::looks_like_file(w.trim_end_matches('.')))
        .collect();
    let mut found: Vec<String> = words.iter().flat_map(|w| numbers(w)).collect();
    found.dedup();
    let [n] = &found[..] else { return None };
    let asked: HashSet<String> = numbers(request).collect();
    (!seen.contains(n) && !asked.contains(n)).then(|| n.clone())
}

/// True when `text` is nothing but a tool call written out (`{"name": …,
/// "arguments": …}`, fenced or not): what a small model asked for its
/// answer without tools sometimes sends instead of one.
pub(super) fn is_call_text(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).unwrap_or(t);
    let t = t.trim().strip_suffix("```").unwrap_or(t).trim();
    serde_json::from_str::<Value>(t)
        .is_ok_and(|v| v.get("name").is_some_and(Value::is_string) && v.get("arguments").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_no_tool_showed_is_named() {
        let seen: HashSet<String> = numbers("test_math_utils.py:6\n[6 matching lines in 1 file]").collect();
        assert_eq!(unsupported_number("```json\n3\n```", "How many tests?", &seen), Some("3".to_owned()));
        assert_eq!(unsupported_number("There are 6 test functions.", "How many tests?", &seen), None);
        assert_eq!(unsupported_number("Between 3 and 6.", "How many?", &seen), None, "two numbers: no claim to check");
        assert_eq!(unsupported_number("It is in test2.py.", "Where?", &seen), None, "a file name");
        assert_eq!(unsupported_number("It prints 42.", "Does it print 42?", &seen), None, "the request's own");
        let seen: HashSet<String> = numbers("price = 12.50\n").collect();
        assert_eq!(unsupported_number("12.50", "What is the price?", &seen), None);
    }

    #[test]
    fn a_call_written_out_is_no_answer() {
        assert!(is_call_text("```json\n{\"name\": \"read_file\", \"arguments\": {\"file_path\": \"a.py\"}}\n```"));
        assert!(is_call_text("{\"name\":\"grep\",\"arguments\":{}}"));
        assert!(!is_call_text("```json\n24\n```"));
        assert!(!is_call_text("It returns {\"name\": \"x\"}."));
    }

    #[test]
    fn an_answer_narrating_the_loop_notes_is_told_apart_from_an_answer() {
        assert!(echoes_loop_note("I made the same `read_file` call in my previous answer. Its result was: …"));
        assert!(echoes_loop_note("I made the same grep call multiple times, and its result has not changed."));
        assert!(!echoes_loop_note("The function greet returns \"Welcome, Dr. Ada\"."));
        assert!(!echoes_loop_note("I changed the port to 9090 in settings.json."));
    }

    #[test]
    fn a_false_already_is_caught_by_looking_at_the_files() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("s.py"), "def shout(t):\n    return t\n").unwrap();
        assert_eq!(
            absent_already("`is_palindrome` is already defined in s.py.", ws.path()),
            Some("is_palindrome".into())
        );
        assert_eq!(absent_already("`shout(t)` is already there.", ws.path()), None);
        assert_eq!(absent_already("I added `is_palindrome`.", ws.path()), None, "no claim of 'already'");
    }

    #[test]
    fn a_fenced_plain_answer_is_unfenced_and_json_is_kept() {
        assert_eq!(unfence("```json\nI created hello.txt.\n```".into()), "I created hello.txt.");
        assert_eq!(unfence("```json I created hello.txt.".into()), "I created hello.txt.");
        assert_eq!(unfence("```json\n{\"a\": 1}\n```".into()), "```json\n{\"a\": 1}\n```");
        assert_eq!(unfence("Plain.".into()), "Plain.");
    }
}
