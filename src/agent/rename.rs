//! Renames a request asks for ("rename calc_total to compute_total",
//! "replace X with Y"): where the old name still appears in the workspace.
//!
//! Owns: reading the pair out of the request. The loop's cycle note and the
//! answer check spell out the edits that finish it while the old name
//! remains (the bounded, whole-word search is
//! [`crate::tools::references::rename_calls`]): the logs showed a small
//! model renaming the definition, then rewriting the same file until its
//! calls ran out, never looking at the callers; told only where the uses
//! were, it read those files and still did not edit them.

use std::path::Path;

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

/// For a rename request whose old name is still in the workspace: a
/// sentence naming where, for the model; `None` otherwise.
/// The edits that finish it are spelled out
/// ([`crate::tools::references::rename_calls`]).
pub fn unfinished(request: &str, workspace: &Path) -> Option<String> {
    let (old, new) = pair(request)?;
    let ctx = crate::tools::ToolContext::new(workspace.to_path_buf(), Vec::new(), Default::default());
    crate::tools::references::rename_calls(&ctx, &old, &new)
}

#[cfg(test)]
mod tests {
    use super::*;

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
