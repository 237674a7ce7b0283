//! `--settings FILE_OR_JSON`: Claude Code's settings document, of which
//! pirn reads the `hooks` key (the operator's hook table) and, of its
//! `env` (the variables Claude Code sets for the session), `PIRN_PROFILE`
//! (the session's profile, see `config::profile`).
//!
//! Used by `pirn run --settings` and by Claude Code's surface
//! (`pirn -p --settings …`); both are the operator's command line, so the
//! hooks are trusted as the operator's.

use crate::wire::HooksConfig;

/// What pirn takes from a settings document.
#[derive(Debug, Default)]
pub struct Settings {
    /// Its `hooks` (an empty table when it has none).
    pub hooks: HooksConfig,
    /// Its `env.PIRN_PROFILE`, when it is a non-empty string.
    pub profile: Option<String>,
}

/// The `hooks` of a settings document given as its JSON text (starting
/// with `{`) or as a file path ([`read`]).
pub fn hooks_from_settings(arg: &str) -> Result<HooksConfig, String> {
    read(arg).map(|s| s.hooks)
}

/// A settings document given as its JSON text (starting with `{`) or as a
/// file path. Errors: the file cannot be read, the text is not JSON, or
/// `hooks` does not have Claude Code's shape. No `hooks` key (or `null`):
/// an empty table.
pub fn read(arg: &str) -> Result<Settings, String> {
    let text = if arg.trim_start().starts_with('{') {
        arg.to_owned()
    } else {
        std::fs::read_to_string(arg).map_err(|e| format!("cannot read {arg}: {e}"))?
    };
    let mut settings: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{arg}: not JSON: {e}"))?;
    let profile = settings
        .pointer("/env/PIRN_PROFILE")
        .and_then(serde_json::Value::as_str)
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_owned);
    let hooks = settings.get_mut("hooks").map(serde_json::Value::take).unwrap_or_default();
    if hooks.is_null() {
        return Ok(Settings { hooks: HooksConfig::default(), profile });
    }
    let hooks = serde_json::from_value(hooks).map_err(|e| format!("{arg}: hooks: {e}"))?;
    Ok(Settings { hooks, profile })
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

    #[test]
    fn settings_env_names_the_profile() {
        let s = read(r#"{"env":{"PIRN_PROFILE":" small ","OTHER":"x"}}"#).unwrap();
        assert_eq!((s.profile.as_deref(), s.hooks.is_empty()), (Some("small"), true));
        assert_eq!(read(r#"{"env":{"PIRN_PROFILE":""}}"#).unwrap().profile, None);
        assert_eq!(read(r#"{"env":{"PIRN_PROFILE":3}}"#).unwrap().profile, None);
    }
}
