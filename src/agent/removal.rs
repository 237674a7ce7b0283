//! Deletions a request asks for ("Delete the function old_format", "The
//! function unused_helper is not called anywhere. Delete it."): whether the
//! definition is still there, and the call that deletes it.
//!
//! Owns: reading the names out of the request ([`targets`]) and finding a
//! definition of one still in the workspace ([`still_defined`]). The loop's
//! done-gate uses it: the logs showed a small model asked to delete a
//! function write that very function back (`write_file` with its text, which
//! changes nothing) and report it deleted.

use std::path::Path;

use serde_json::json;

/// Words after which a name is what the request is about.
const KINDS: &[&str] = &["function", "method", "class", "def", "constant", "variable"];
/// Verbs of a deletion.
const VERBS: &[&str] = &["delete", "remove"];

/// The names a deletion request is about: the identifier right after
/// "delete"/"remove" (past "the function" and the like), and the ones
/// introduced with "function X", "class X", … when the verb's object is
/// "it". Empty when the request deletes nothing.
pub fn targets(request: &str) -> Vec<String> {
    let tokens: Vec<String> = request
        .split(|c: char| c.is_whitespace() || ",.;:!?()".contains(c))
        .map(|t| t.trim_matches(|c: char| c == '`' || c == '\'' || c == '"').to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    let lower: Vec<String> = tokens.iter().map(|t| t.to_lowercase()).collect();
    let Some(verb) = lower.iter().position(|t| VERBS.contains(&t.as_str())) else { return Vec::new() };
    let ident = |t: &str| {
        t.len() >= 3
            && t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    // A bare word after the verb is a name only when it looks like code.
    let code_like = |t: &str| ident(t) && t.contains(|c: char| c == '_' || c.is_uppercase() || c.is_ascii_digit());
    let mut names: Vec<String> = Vec::new();
    let object = lower[verb + 1..].iter().position(|t| !matches!(t.as_str(), "the" | "a" | "an"));
    if let Some(at) = object.map(|o| verb + 1 + o)
        && !KINDS.contains(&lower[at].as_str())
        && code_like(&tokens[at])
    {
        names.push(tokens[at].clone());
    }
    // "function X", "class X": X is a name.
    for (i, t) in lower.iter().enumerate() {
        if KINDS.contains(&t.as_str())
            && let Some(next) = tokens.get(i + 1).filter(|n| ident(n) && !matches!(n.as_str(), "in" | "from" | "that"))
            && !names.contains(next)
        {
            names.push(next.clone());
        }
    }
    names
}

/// A definition of one of the request's [`targets`] still in the workspace:
/// `(file as shown, 1-based first and last line, the model-facing note with
/// the edit_file call that deletes it)`.
pub fn still_defined(request: &str, workspace: &Path) -> Option<(String, (usize, usize), String)> {
    for name in targets(request) {
        let (uses, _) = crate::tools::references::find_uses(workspace, std::slice::from_ref(&name), 50, &|| false);
        let Some((path, line, _)) = uses.iter().find(|(_, _, l)| {
            let l = l.trim_start();
            ["def ", "async def ", "class ", "function "]
                .iter()
                .any(|k| l.strip_prefix(k).is_some_and(|r| r.starts_with(&*name)))
        }) else {
            continue;
        };
        let text = std::fs::read_to_string(path).ok()?;
        let (first, last) = block_at(&text, *line);
        let block: Vec<&str> = text.lines().skip(first - 1).take(last - first + 1).collect();
        let shown = path.strip_prefix(workspace).unwrap_or(path).display().to_string();
        let args = json!({"file_path": shown, "old_string": block.join("\n"), "new_string": ""});
        let note = format!(
            "Not finished: `{name}` is still defined in {shown} (lines {first}-{last}). To delete it, make this call \
             exactly as written:\n```json\n{{\"name\": \"edit_file\", \"arguments\": {args}}}\n```"
        );
        return Some((shown, (first, last), note));
    }
    None
}

/// The lines of the definition that starts at 1-based `line`: it and the
/// lines after it indented deeper (blank lines inside kept, trailing ones not).
fn block_at(text: &str, line: usize) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let head = indent(lines[line - 1]);
    let mut last = line;
    for (i, l) in lines.iter().enumerate().skip(line) {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) <= head && !l.trim_start().starts_with([')', ']', '}']) {
            break;
        }
        last = i + 1;
    }
    (line, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_a_deletion_is_about() {
        assert_eq!(targets("Delete the function old_format from helpers.py."), ["old_format"]);
        assert_eq!(
            targets("The function unused_helper in utils.py is not called anywhere. Delete it."),
            ["unused_helper"]
        );
        assert!(targets("Rename the function calc_total to compute_total.").is_empty());
        assert!(targets("Remove the two debug print lines.").is_empty(), "no name");
        assert_eq!(targets("Delete the function helper."), ["helper"]);
    }

    #[test]
    fn a_definition_still_there_gets_its_deleting_call() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        let utils = "def shout(t):\n    return t\n\n\ndef unused_helper(items):\n    out = []\n\n    return out\n\n\ndef whisper(t):\n    return t\n";
        std::fs::write(root.join("utils.py"), utils).unwrap();
        let (file, lines, note) = still_defined("Delete the function unused_helper.", &root).unwrap();
        assert_eq!((file.as_str(), lines), ("utils.py", (5, 8)));
        assert!(note.contains(r#""old_string":"def unused_helper(items):\n    out = []\n\n    return out""#), "{note}");
        std::fs::write(root.join("utils.py"), "def shout(t):\n    return t\n").unwrap();
        assert!(still_defined("Delete the function unused_helper.", &root).is_none());
    }
}
