//! Profiles: the help pirn gives a model beyond exact tools, as data.
//!
//! Owns: [`Profile`] (a name and its switches), the model-settings table
//! that names the profiles and maps model names to them
//! (`model-settings.jsonc` beside this file, built in; a user's own file in
//! the same format extends it, see [`ModelSettings::load`]), and the choice
//! of a session's profile ([`choose`]). The built-in default, [`EXACT`],
//! turns every switch off: writes and edits land byte for byte as sent and
//! no side call is made. What each switch does is written in the data
//! file; the tools and the answer gates read the switches, never the name.
//!
//! I/O: reading the user's file, once per session opened (a missing
//! default file is no error; a named one that is missing or does not parse
//! refuses the session).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use crate::environment::Environment;

/// The name of the default profile.
pub const EXACT: &str = "exact";

/// The built-in model settings (JSON with comments).
const BUILT_IN: &str = include_str!("model-settings.jsonc");

/// A named set of help for a model. Every switch defaults to off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The profile's name (the key it has in the table).
    #[serde(skip)]
    pub name: String,
    /// What the profile is for, in a sentence.
    #[serde(default)]
    pub description: String,
    /// `edit_file`'s tolerant matching, re-indentation, widening and
    /// made-already answers (`tools::edit_file`).
    #[serde(default)]
    pub tolerant_edits: bool,
    /// A rewrite removing most of a file is held back once, and a write over
    /// an unread file refused as held back (`tools::write_file`); the
    /// `HeldBack` gate reads both.
    #[serde(default)]
    pub hold_large_writes: bool,
    /// Parse notes after a write and the `Broken` answer gate.
    #[serde(default)]
    pub parse_check: bool,
    /// Uses of a renamed or removed name listed after a write or edit.
    #[serde(default)]
    pub reference_notes: bool,
    /// The `Asked` gate's side call (the default of `config.request_check`).
    #[serde(default)]
    pub request_check: bool,
    /// `hold_write`'s side call (the default of `config.write_check`); a
    /// write withheld a second time asks for the answer without tools
    /// (`agent::round`, `WrapUp::Withheld`).
    #[serde(default)]
    pub write_check: bool,
    /// The `Claimed` gate's side call (the default of `config.claim_check`).
    #[serde(default)]
    pub claim_check: bool,
    /// An answer that changed nothing and rests on `grep` results alone,
    /// no file read, is sent back once to read the file
    /// (`agent::gates::searched_only`).
    #[serde(default)]
    pub read_before_answer: bool,
    /// A rewrite with the bytes a file holds, or an edit the workspace
    /// shows made, asks for the answer at once (`agent::round`, `WrapUp::Redone`).
    #[serde(default)]
    pub early_wrap_up: bool,
    /// The plan tool (`todo_write`) is not offered by default: its spec
    /// costs a small model's window more than the plan gives it.
    #[serde(default)]
    pub without_plan_tool: bool,
    /// Background shells (`bash` `run_in_background`, `bash_output`,
    /// `kill_shell`) are not offered by default: their specs cost a small
    /// model's window more than they give it.
    #[serde(default)]
    pub without_background_shells: bool,
}

impl Profile {
    /// The default profile: exact tools, no side calls.
    pub fn exact() -> Profile {
        Profile { name: EXACT.to_owned(), ..Profile::default() }
    }
}

/// One row of the table's `models`: a glob over model names (matched
/// case-insensitively) and the profile such a model gets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelRule {
    model: String,
    profile: String,
}

/// The model-settings table: profiles by name, and the rules that pick one
/// for a model, in the order they are tried.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    #[serde(default)]
    profiles: BTreeMap<String, Profile>,
    #[serde(default)]
    models: Vec<ModelRule>,
}

impl ModelSettings {
    /// The built-in table extended by the user's: the file `PIRN_MODEL_SETTINGS`
    /// names (it must exist), else `$PIRN_HOME/model-settings.json` when it
    /// exists. The user's profiles are added to (or replace) the built-in
    /// ones; the user's model rules are tried first.
    ///
    /// Errors: [`ConfigError::ModelSettings`] when a file cannot be read or
    /// parsed, or a rule names a profile the table does not have.
    pub fn load(env: &Environment) -> Result<ModelSettings, ConfigError> {
        let mut table = built_in()?;
        let named = env.model_settings.clone();
        let path = named.clone().unwrap_or_else(|| env.home.join("model-settings.json"));
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let user = parse(&text, &path)?;
                table.profiles.extend(user.profiles);
                table.models.splice(0..0, user.models);
            }
            Err(e) if named.is_some() || e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ConfigError::ModelSettings { path, message: e.to_string() });
            }
            Err(_) => {}
        }
        for rule in &table.models {
            if rule.profile != EXACT && !table.profiles.contains_key(&rule.profile) {
                let message =
                    format!("the rule for {:?} names no profile of the table: {:?}", rule.model, rule.profile);
                return Err(ConfigError::ModelSettings { path, message });
            }
        }
        Ok(table)
    }

    /// The profile called `name` (`exact` is always there).
    pub fn profile(&self, name: &str) -> Option<Profile> {
        let found = self.profiles.get(name).cloned().or_else(|| (name == EXACT).then(Profile::default))?;
        Some(Profile { name: name.to_owned(), ..found })
    }

    /// The names of the table's profiles, sorted (`exact` among them).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.profiles.keys().cloned().collect();
        if !names.iter().any(|n| n == EXACT) {
            names.push(EXACT.to_owned());
            names.sort();
        }
        names
    }

    /// The profile the first rule matching `model` names, if any.
    fn for_model(&self, model: &str) -> Option<&str> {
        self.models.iter().find(|r| glob_matches(&r.model, model)).map(|r| r.profile.as_str())
    }
}

/// The profile of a session on `model`: `asked` (the init config's
/// `profile`), else the operator's `PIRN_PROFILE`, else the table's rule
/// for the model, else [`EXACT`].
///
/// Errors: a profile name the table does not have (the message lists the
/// ones it has), or the table's own errors ([`ModelSettings::load`]).
pub fn choose(asked: Option<&str>, env: &Environment, model: &str) -> Result<Profile, ConfigError> {
    let asked = asked.map(str::trim).filter(|n| !n.is_empty());
    let operator = env.profile.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let table = ModelSettings::load(env)?;
    let name = asked.or(operator).or_else(|| table.for_model(model)).unwrap_or(EXACT);
    table.profile(name).ok_or_else(|| ConfigError::UnknownProfile { name: name.to_owned(), known: table.names() })
}

/// The built-in table, parsed once per process (a session's open reads
/// only the user's file, if any).
fn built_in() -> Result<ModelSettings, ConfigError> {
    static TABLE: std::sync::OnceLock<Result<ModelSettings, String>> = std::sync::OnceLock::new();
    let parsed = TABLE.get_or_init(|| parse(BUILT_IN, Path::new("(built in)")).map_err(|e| e.to_string()));
    parsed.clone().map_err(|message| ConfigError::ModelSettings { path: PathBuf::from("(built in)"), message })
}

/// Parses a table in the data file's format (JSON, comments allowed).
fn parse(text: &str, path: &Path) -> Result<ModelSettings, ConfigError> {
    let options = jsonc_parser::ParseOptions::default();
    jsonc_parser::parse_to_serde_value::<ModelSettings>(text, &options)
        .map_err(|e| ConfigError::ModelSettings { path: PathBuf::from(path), message: e.to_string() })
}

/// `pattern` (a glob: `*`, `?`, `[…]`) matches all of `name`, ignoring case.
/// A pattern whose plain text is not in `name` is not compiled ([`may_match`]):
/// compiling a glob builds a regex, a megabyte of a plain worker's memory.
fn glob_matches(pattern: &str, name: &str) -> bool {
    may_match(pattern, name)
        && globset::GlobBuilder::new(pattern)
            .case_insensitive(true)
            .literal_separator(false)
            .build()
            .is_ok_and(|g| g.compile_matcher().is_match(name))
}

/// A necessary condition for `pattern` to match `name`: each run of plain
/// characters between its wildcards (`*`, `?`, a `[…]` class) occurs in
/// `name`, case ignored. True for a pattern with escapes or alternatives
/// (`\`, `{…}`), which only the glob itself can judge.
fn may_match(pattern: &str, name: &str) -> bool {
    if pattern.contains(['\\', '{', '}']) {
        return true;
    }
    let name = name.to_lowercase();
    let mut runs = vec![String::new()];
    let mut in_class = false;
    for c in pattern.to_lowercase().chars() {
        match c {
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            '*' | '?' => runs.push(String::new()),
            c => runs.last_mut().map_or((), |r| r.push(c)),
        }
        if c == '[' || c == ']' {
            runs.push(String::new());
        }
    }
    runs.iter().all(|run| name.contains(run.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_whose_text_is_absent_is_not_compiled_and_others_still_match() {
        assert!(!may_match("*qwen2.5-coder-1.5b*", "gpt-4o"));
        assert!(may_match("*qwen2.5-coder-1.5b*", "Qwen2.5-Coder-1.5B-Instruct-Q4"));
        assert!(glob_matches("*qwen2.5-coder-1.5b*", "Qwen2.5-Coder-1.5B-Instruct-Q4"));
        assert!(glob_matches("llama-3.?-8b*", "llama-3.1-8b-instruct") && !glob_matches("llama-3.?-8b*", "llama-3-8b"));
        assert!(glob_matches("m[ai]stral*", "Mistral-7B") && !may_match("m[ai]stral*", "mixtral"));
        assert!(may_match("{a,b}*", "zzz"), "alternatives are left to the glob");
        assert!(!glob_matches("{a,b}*", "zzz"));
    }

    fn env(pairs: &[(&str, &str)]) -> Environment {
        let home = tempfile::tempdir().unwrap().keep();
        let home = home.to_str().unwrap().to_owned();
        let mut all: Vec<(&str, &str)> = vec![("PIRN_HOME", &home)];
        all.extend_from_slice(pairs);
        Environment::from_pairs(&all)
    }

    #[test]
    fn the_default_is_exact_and_turns_everything_off() {
        let p = choose(None, &env(&[]), "gpt-5").unwrap();
        assert_eq!(Profile { description: String::new(), ..p.clone() }, Profile::exact());
        assert!(!p.tolerant_edits && !p.request_check && !p.write_check && !p.hold_large_writes);
        assert!(!p.read_before_answer);
    }

    #[test]
    fn the_table_picks_the_small_profile_for_the_measured_model_and_the_config_wins() {
        let e = env(&[]);
        let small = choose(None, &e, "Qwen2.5-Coder-1.5B-Instruct-Q4_K_M").unwrap();
        assert_eq!(small.name, "small");
        assert!(small.tolerant_edits && small.request_check && small.write_check && small.hold_large_writes);
        assert!(small.read_before_answer);
        assert_eq!(choose(Some("exact"), &e, "qwen2.5-coder-1.5b-instruct").unwrap().name, "exact");
        let op = env(&[("PIRN_PROFILE", "small")]);
        assert_eq!(choose(None, &op, "gpt-5").unwrap().name, "small");
        assert_eq!(choose(Some("exact"), &op, "gpt-5").unwrap().name, "exact");
    }

    #[test]
    fn an_unknown_profile_is_refused_naming_the_known_ones() {
        let e = choose(Some("tiny"), &env(&[]), "m").unwrap_err().to_string();
        assert!(e.contains("\"tiny\"") && e.contains("exact") && e.contains("small"), "{e}");
        // A client's profile is a name in the operator's table, never a path:
        // one that looks like a file is refused like any unknown name.
        let dir = tempfile::tempdir().unwrap();
        let planted = dir.path().join("model-settings.json");
        std::fs::write(&planted, r#"{"profiles": {"evil": {"tolerant_edits": true}}}"#).unwrap();
        assert!(choose(Some(planted.to_str().unwrap()), &env(&[]), "m").is_err());
        assert!(choose(Some("evil"), &env(&[]), "m").is_err(), "a file the operator did not name is not read");
    }

    #[test]
    fn a_user_table_adds_profiles_and_its_rules_come_first() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(
            &file,
            r#"{ // mine
              "profiles": {"lenient": {"tolerant_edits": true}},
              "models": [{"model": "qwen2.5-coder-1.5b*", "profile": "lenient"}, {"model": "llama*", "profile": "exact"}]
            }"#,
        )
        .unwrap();
        let e = env(&[("PIRN_MODEL_SETTINGS", file.to_str().unwrap())]);
        let p = choose(None, &e, "qwen2.5-coder-1.5b-instruct").unwrap();
        assert_eq!((p.name.as_str(), p.tolerant_edits, p.request_check), ("lenient", true, false));
        assert_eq!(choose(None, &e, "llama-3").unwrap().name, "exact");
        std::fs::write(&file, r#"{"models": [{"model": "x", "profile": "nope"}]}"#).unwrap();
        assert!(choose(None, &e, "x").unwrap_err().to_string().contains("nope"));
        std::fs::write(&file, r#"{"profiles": {"p": {"tolerant": true}}}"#).unwrap();
        assert!(choose(None, &e, "x").is_err(), "an unknown switch is refused, not ignored");
        let missing = env(&[("PIRN_MODEL_SETTINGS", "/nonexistent/settings.json")]);
        assert!(choose(None, &missing, "x").is_err());
    }
}
