//! `--settings FILE_OR_JSON`: Claude Code's settings document, of which
//! pirn reads only the `hooks` key (the operator's hook table).
//!
//! Used by `pirn run --settings` and by Claude Code's surface
//! (`pirn -p --settings …`); both are the operator's command line, so the
//! hooks are trusted as the operator's.

use crate::wire::HooksConfig;

/// The `hooks` of a settings document given as its JSON text (starting
/// with `{`) or as a file path. Errors: the file cannot be read, the text
/// is not JSON, or `hooks` does not have Claude Code's shape. No `hooks`
/// key (or `null`): an empty table.
pub fn hooks_from_settings(arg: &str) -> Result<HooksConfig, String> {
    let text = if arg.trim_start().starts_with('{') {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read {arg}: {e}"))?
    };
    let mut settings: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{arg}: not JSON: {e}"))?;
    let hooks = settings.get_mut("hooks").map(serde_json::Value::take).unwrap_or_default();
    if hooks.is_null() {
        return Ok(HooksConfig::default());
    }
    serde_json::from_value(hooks).map_err(|e| format!("{arg}: hooks: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_json_gives_its_hooks_and_bad_shapes_are_named() {
        let h =
            hooks_from_settings(r#"{"model":"x","hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]}}"#)
                .unwrap();
        assert_eq!(crate::hooks::Hooks::commands(&h).collect::<Vec<_>>(), ["true"]);
        assert!(hooks_from_settings(r#"{"permissions":{}}"#).unwrap().is_empty());
        assert!(hooks_from_settings(r#"{"hooks":{"Stop":"nope"}}"#).unwrap_err().contains("hooks:"));
        assert!(hooks_from_settings("/no/such/settings.json").unwrap_err().contains("cannot read"));
    }
}
