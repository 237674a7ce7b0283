//! `write_file`'s merge of a partial JSON rewrite: asked to change one
//! setting, a small model writes a JSON object holding only the part it
//! thought about (`{"server": {"timeout": 60}}`). Written as asked, every
//! other setting would be lost; merged, only the values that differ change.
//!
//! Owns: [`merge`]. It applies only when the file and the content are both
//! JSON objects and every value the content gives is a scalar (or array)
//! at a path the file already has; each changed value is spliced in where
//! its `"key": value` pair occurs exactly once in the file (the whitespace-
//! and quote-blind match of [`super::edit_match::squeezed`]), so the file
//! keeps its layout and key order. Anything else is not a merge.

use serde_json::Value;

/// One changed setting: its dotted path, the old and the new value (as JSON).
pub type Change = (String, String, String);

/// `old` with the values `new` changes, and the changes (none when `old`
/// already has every value); `None` when this is not a partial rewrite of
/// `old` (see the module docs).
pub fn merge(old: &str, new: &str) -> Option<(String, Vec<Change>)> {
    let (Ok(Value::Object(before)), Ok(Value::Object(after))) =
        (serde_json::from_str::<Value>(old), serde_json::from_str::<Value>(new))
    else {
        return None;
    };
    let mut leaves = Vec::new();
    collect(&after, &before, String::new(), &mut leaves)?;
    let mut content = old.to_owned();
    let mut changes = Vec::new();
    for (path, key, was, now) in leaves {
        let (was_s, now_s) = (was.to_string(), now.to_string());
        let splice = super::edit_match::squeezed(
            &content,
            &format!("{}: {was_s}", Value::from(key.as_str())),
            &format!("{}: {now_s}", Value::from(key.as_str())),
        )?;
        content = format!("{}{}{}", &content[..splice.from], splice.replacement, &content[splice.to..]);
        changes.push((path, was_s, now_s));
    }
    Some((content, changes))
}

/// The leaves of `new` whose value differs from `old`'s at the same path:
/// `(dotted path, key, old value, new value)`. `None` when `new` has a path
/// `old` lacks or an object where `old` has none.
fn collect(
    new: &serde_json::Map<String, Value>,
    old: &serde_json::Map<String, Value>,
    prefix: String,
    out: &mut Vec<(String, String, Value, Value)>,
) -> Option<()> {
    for (key, value) in new {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match (old.get(key)?, value) {
            (Value::Object(o), Value::Object(n)) => collect(n, o, path, out)?,
            (Value::Object(_), _) | (_, Value::Object(_)) => return None,
            (was, now) if was != now => out.push((path, key.clone(), was.clone(), now.clone())),
            _ => {}
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30,\n    \"retries\": 2\n  },\n  \"log\": {\n    \"level\": \"info\"\n  }\n}\n";

    #[test]
    fn only_the_changed_value_changes_and_the_layout_stays() {
        let (merged, changes) = merge(CONFIG, r#"{"server":{"host":"localhost","timeout":60,"retries":2}}"#).unwrap();
        assert_eq!(merged, CONFIG.replace("30", "60"));
        assert_eq!(changes, vec![("server.timeout".to_owned(), "30".to_owned(), "60".to_owned())]);
        assert!(merge(CONFIG, r#"{"server":{"port":1}}"#).is_none(), "a new key is not a partial rewrite");
        assert!(merge(CONFIG, r#"{"server":{"timeout":30}}"#).unwrap().1.is_empty(), "nothing changes");
        assert!(merge(CONFIG, "[1]").is_none());
        let twice = "{\"a\": {\"n\": 1}, \"b\": {\"n\": 1}}";
        assert!(merge(twice, r#"{"a":{"n":2}}"#).is_none(), "the pair occurs twice: no guess");
    }
}
