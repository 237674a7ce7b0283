//! Renames a request asks for ("rename calc_total to compute_total",
//! "replace X with Y"): where the old name still appears in the workspace.
//!
//! Owns: reading the pair out of the request and the bounded, whole-word
//! search for the old name. The loop names the places in its cycle note
//! and the answer check sends a "done" back while any remain: the logs
//! showed a small model renaming the definition, then rewriting the same
//! file until its calls ran out, never looking at the callers.

use std::path::Path;

/// Most places named.
const MAX_PLACES: usize = 6;
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

/// Where `name` still appears as a whole word: `file:line`, at most six,
/// paths relative to `workspace` (the bounded walk of
/// [`crate::tools::references::find_uses`]).
pub fn remaining(name: &str, workspace: &Path) -> Vec<String> {
    let (uses, _) = crate::tools::references::find_uses(workspace, &[name.to_owned()], MAX_PLACES, &|| false);
    uses.iter().map(|(path, n, _)| format!("{}:{n}", path.strip_prefix(workspace).unwrap_or(path).display())).collect()
}

/// For a rename request whose old name is still in the workspace: a
/// sentence naming where, for the model; `None` otherwise.
pub fn unfinished(request: &str, workspace: &Path) -> Option<String> {
    let (old, new) = pair(request)?;
    let places = remaining(&old, workspace);
    (!places.is_empty()).then(|| {
        format!(
            "`{old}` still appears in {}: each of those lines must say `{new}` too. Read those files and change \
             the lines with edit_file.",
            places.join(", ")
        )
    })
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
        assert_eq!(remaining("calc_total", ws.path()), ["main.py:1", "main.py:3"]);
        let note = unfinished("Rename calc_total to compute_total.", ws.path()).unwrap();
        assert!(note.contains("main.py:1, main.py:3") && note.contains("`compute_total`"), "{note}");
        std::fs::write(ws.path().join("main.py"), "print(compute_total(1))\n").unwrap();
        assert_eq!(unfinished("Rename calc_total to compute_total.", ws.path()), None);
    }
}
