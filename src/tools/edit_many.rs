//! `edit_file`'s answer when `old_string` occurs more than once: one
//! ready-made call per occurrence, each made unique by the lines above it
//! and labelled with the definition it sits in.
//!
//! The answer used to offer the model a `replace_all` call. A small model
//! copies a complete call it is shown: asked to fix `multiply`, whose body
//! `return a + b` is also `add`'s, it took the offer and broke `add` (seen
//! on the eval's tune half). Each occurrence now gets its own call, named by
//! its enclosing `def`/`class`/`function`, and `replace_all` is offered only
//! for a bare name (a rename), where changing every occurrence is the point.

/// Occurrences given their own call, at most.
const MAX_SPELLED: usize = 4;
/// Lines above an occurrence added, at most, to make it unique.
const MAX_CONTEXT: usize = 4;

/// The model-facing text for `old` occurring at `starts` (byte offsets) in
/// `content` of `shown`, replaced by `new`.
pub fn answer(shown: &str, content: &str, starts: &[usize], old: &str, new: &str) -> String {
    let lines: Vec<String> = starts.iter().take(20).map(|&i| line_of(content, i).to_string()).collect();
    let mut text = format!(
        "{shown}: old_string matches {} times (lines {}); nothing was changed. Each call below changes one of \
         them; make the one for the place the task is about.",
        starts.len(),
        lines.join(", ")
    );
    for &at in starts.iter().take(MAX_SPELLED) {
        let Some((old_unique, new_unique)) = unique_at(content, at, old, new) else { continue };
        let place = match enclosing(content, at) {
            Some(name) => format!("line {} (in {name})", line_of(content, at)),
            None => format!("line {}", line_of(content, at)),
        };
        let call = serde_json::json!({"file_path": shown, "old_string": old_unique, "new_string": new_unique});
        text.push_str(&format!("\nFor {place}:\n```json\n{{\"name\": \"edit_file\", \"arguments\": {call}}}\n```"));
    }
    let bare_name = old.chars().all(|c| c.is_alphanumeric() || c == '_');
    if bare_name {
        text.push_str(&format!(
            "\nTo change every one (a rename), call edit_file with the same arguments and \"replace_all\": true. ({} \
             in all)",
            starts.len()
        ));
    }
    text
}

/// 1-based line of byte offset `at`.
fn line_of(content: &str, at: usize) -> usize {
    content[..at].matches('\n').count() + 1
}

/// `old` at `at`, with as few whole lines above it as make it occur once
/// in `content`, and `new` with the same lines above: the pair an
/// `edit_file` call needs. `None` when [`MAX_CONTEXT`] lines are not enough.
fn unique_at(content: &str, at: usize, old: &str, new: &str) -> Option<(String, String)> {
    let line_start = content[..at].rfind('\n').map_or(0, |i| i + 1);
    let mut from = line_start;
    for _ in 0..=MAX_CONTEXT {
        let before = &content[from..at];
        let candidate = format!("{before}{old}");
        if content.matches(&candidate).count() == 1 {
            return Some((candidate, format!("{before}{new}")));
        }
        if from == 0 {
            return None;
        }
        from = content[..from - 1].rfind('\n').map_or(0, |i| i + 1);
    }
    None
}

/// The name of the definition (`def`, `class`, `function`, `fn`) that
/// encloses byte offset `at`: the nearest line above it that opens one at
/// a smaller indentation.
fn enclosing(content: &str, at: usize) -> Option<String> {
    let line_start = content[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = content[line_start..].lines().next().unwrap_or("");
    let indent = line.len() - line.trim_start().len();
    content[..line_start].lines().rev().find_map(|l| {
        let lead = l.len() - l.trim_start().len();
        let t = l.trim_start();
        if lead >= indent || t.is_empty() {
            return None;
        }
        let rest =
            ["async def ", "def ", "class ", "function ", "pub fn ", "fn "].iter().find_map(|k| t.strip_prefix(k))?;
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        (!name.is_empty()).then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_occurrence_gets_its_own_call_named_by_its_definition() {
        let ops = "def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a + b\n";
        let starts: Vec<usize> = ops.match_indices("return a + b").map(|(i, _)| i).collect();
        let text = answer("ops.py", ops, &starts, "return a + b", "return a * b");
        assert!(text.contains("For line 6 (in multiply):"), "{text}");
        assert!(
            text.contains(r#""old_string":"def multiply(a, b):\n    return a + b""#)
                && text.contains(r#""new_string":"def multiply(a, b):\n    return a * b""#),
            "{text}"
        );
        assert!(!text.contains("replace_all"), "not offered for a line of code: {text}");
        let starts: Vec<usize> = ops.match_indices("add").map(|(i, _)| i).collect();
        assert!(answer("ops.py", ops, &starts[..1], "add", "plus").contains("replace_all"), "a bare name");
    }
}
