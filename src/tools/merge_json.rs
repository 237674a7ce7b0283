//! `write_file`'s merge of a partial JSON rewrite: asked to change one
//! setting, a small model writes a JSON object holding only the part it
//! thought about (`{"server": {"timeout": 60}}`). Written as asked, every
//! other setting would be lost; merged, only the values that differ change.
//!
//! Owns: [`merge`]. It applies only when the file and the content are both
//! JSON objects and every value the content gives is a scalar (or array)
//! at a path the file already has; each changed value is set at its path
//! in the file's concrete syntax tree (the `jsonc-parser` crate's CST, as
//! dprint and Deno edit JSON), so the file keeps its layout, key order and
//! comments, and a key that occurs in two objects (`logging.level`,
//! `database.level`) is told apart by its path. Anything else is not a
//! merge.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use serde_json::Value;

/// One changed setting: its dotted path, the old and the new value (as JSON).
pub type Change = (String, String, String);

/// `old` with the values `new` changes, and the changes (none when `old`
/// already has every value); `None` when this is not a partial rewrite of
/// `old` (see the module docs).
pub fn merge(old: &str, new: &str) -> Option<(String, Vec<Change>)> {
    // The file may be JSON with comments (tsconfig.json); the content is plain JSON.
    let (Ok(Value::Object(before)), Ok(Value::Object(after))) = (
        jsonc_parser::parse_to_serde_value::<Value>(old, &ParseOptions::default()),
        serde_json::from_str::<Value>(new),
    ) else {
        return None;
    };
    let mut leaves = Vec::new();
    collect(&after, &before, Vec::new(), &mut leaves)?;
    let root = CstRootNode::parse(old, &ParseOptions::default()).ok()?;
    let mut changes = Vec::new();
    for (path, was, now) in leaves {
        let (last, parents) = path.split_last()?;
        let mut object = root.object_value()?;
        for key in parents {
            object = object.get(key)?.object_value()?;
        }
        object.get(last)?.set_value(input(&now));
        changes.push((path.join("."), was.to_string(), now.to_string()));
    }
    Some((root.to_string(), changes))
}

/// A JSON value as the CST takes it.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
}

/// The leaves of `new` whose value differs from `old`'s at the same path:
/// `(keys, old value, new value)`. `None` when `new` has a path `old`
/// lacks or an object where `old` has none.
fn collect(
    new: &serde_json::Map<String, Value>,
    old: &serde_json::Map<String, Value>,
    prefix: Vec<String>,
    out: &mut Vec<(Vec<String>, Value, Value)>,
) -> Option<()> {
    for (key, value) in new {
        let mut path = prefix.clone();
        path.push(key.clone());
        match (old.get(key)?, value) {
            (Value::Object(o), Value::Object(n)) => collect(n, o, path, out)?,
            (Value::Object(_), _) | (_, Value::Object(_)) => return None,
            (was, now) if was != now => out.push((path, was.clone(), now.clone())),
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
        let twice = "{\n  \"a\": {\"n\": 1},\n  // b stays\n  \"b\": {\"n\": 1}\n}\n";
        let (merged, _) = merge(twice, r#"{"a":{"n":2}}"#).unwrap();
        assert_eq!(merged, twice.replacen("1", "2", 1), "the same pair twice: told apart by its path");
    }
}
