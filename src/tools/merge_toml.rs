//! `write_file`'s merge of a TOML rewrite: asked to change one setting of a
//! `config.toml` or `pyproject.toml`, a small model writes the tables it
//! thought about and drops the rest (seen on the eval's tune half: `[server]
//! workers = 8` written back without the `port` beside it or the
//! `timeout` of `[client]`). Written as asked, those settings are gone;
//! merged, only the values that differ change.
//!
//! Owns: [`merge`]. It applies when the file and the content are both TOML
//! documents and every key the content gives is one the file has, at the
//! same place (a table where the file has a table, a value where it has a
//! value). Each changed value is set in the file's document with
//! `toml_edit` (the crate Cargo edits manifests with), so the file keeps
//! its layout, key order and comments. Anything else is not a merge.

use toml_edit::{DocumentMut, Item, Table, Value};

/// One changed setting: its dotted path, the old and the new value (as TOML).
pub type Change = (String, String, String);

/// `old` with the values `new` changes, and the changes (none when `old`
/// already has every value); `None` when this is not a partial rewrite of
/// `old` (see the module docs).
pub fn merge(old: &str, new: &str) -> Option<(String, Vec<Change>)> {
    let mut doc: DocumentMut = old.parse().ok()?;
    let partial: DocumentMut = new.parse().ok()?;
    if partial.as_table().is_empty() {
        return None;
    }
    let mut changes = Vec::new();
    apply(doc.as_table_mut(), partial.as_table(), "", &mut changes)?;
    Some((doc.to_string(), changes))
}

/// Sets `partial`'s values in `table`; `None` when `partial` has a key
/// `table` lacks or of another kind.
fn apply(table: &mut Table, partial: &Table, prefix: &str, changes: &mut Vec<Change>) -> Option<()> {
    for (key, item) in partial.iter() {
        let path = if prefix.is_empty() { key.to_owned() } else { format!("{prefix}.{key}") };
        let target = table.get_mut(key)?;
        match (target, item) {
            (Item::Table(t), Item::Table(p)) => apply(t, p, &path, changes)?,
            (Item::Value(Value::InlineTable(t)), Item::Value(Value::InlineTable(p))) => {
                let (mut t2, p2) = (t.clone().into_table(), p.clone().into_table());
                apply(&mut t2, &p2, &path, changes)?;
                *t = t2.into_inline_table();
            }
            (Item::Value(was), Item::Value(now)) if !matches!(was, Value::InlineTable(_)) => {
                if plain(was) != plain(now) {
                    changes.push((path, plain(was), plain(now)));
                    let decor = was.decor().clone();
                    *was = now.clone();
                    *was.decor_mut() = decor;
                }
            }
            _ => return None,
        }
    }
    Some(())
}

/// A value as TOML text, without the spaces and comments around it.
fn plain(v: &Value) -> String {
    let mut v = v.clone();
    v.decor_mut().clear();
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str =
        "# service settings\n[server]\nport = 9000\nworkers = 4 # per core\n\n[client]\nworkers = 2\ntimeout = 5\n";

    #[test]
    fn only_the_changed_value_changes_and_the_rest_stays() {
        let (merged, changes) = merge(CONFIG, "[server]\nworkers = 8\n\n[client]\nworkers = 2\n").unwrap();
        assert_eq!(merged, CONFIG.replace("workers = 4", "workers = 8"), "layout, comments, other keys kept");
        assert_eq!(changes, vec![("server.workers".to_owned(), "4".to_owned(), "8".to_owned())]);
        assert!(merge(CONFIG, "[server]\nthreads = 8\n").is_none(), "a key the file lacks is not a partial rewrite");
        assert!(merge(CONFIG, "server = 1\n").is_none(), "a value where the file has a table");
        assert!(merge(CONFIG, "[client]\ntimeout = 5\n").unwrap().1.is_empty(), "nothing changes");
        let inline = "[project]\nname = \"pkg\"\nversion = \"0.4.1\"\nurls = { home = \"a\" }\n";
        let (merged, _) = merge(inline, "[project]\nversion = \"0.5.0\"\n").unwrap();
        assert_eq!(merged, inline.replace("0.4.1", "0.5.0"));
        assert!(merge(CONFIG, "not toml [").is_none());
    }
}
