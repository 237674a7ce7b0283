//! The session's compiled hook table and the types every hook file shares:
//! [`HookEvent`], [`Hooks`] (the groups of each event with their matchers,
//! from the settings and the client's callbacks), [`HookScope`] (what a
//! run needs of its session), [`Announce`] (where `hook_start`/`hook_end`
//! go), and the client-callback contract ([`ClientHooks`], [`OnFailure`]).
//! Pure data; the runs are `fire`, `process` and `callback`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::wire::{Event, HooksConfig};

/// Seconds a hook may run when its `timeout` is not set (Claude Code's).
pub const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// The events pirn runs hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    UserPromptSubmit,
    Stop,
    SessionStart,
    SessionEnd,
    PreCompact,
}

impl HookEvent {
    pub(super) const ALL: [HookEvent; 7] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::PreCompact,
    ];

    /// Claude Code's name of the event.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
        }
    }
}

/// Which subjects (tool names, sources, triggers) a matcher group takes.
#[derive(Debug, Clone)]
pub(super) enum Matcher {
    All,
    Names(Vec<String>),
    Pattern(regex::Regex),
}

impl Matcher {
    pub(super) fn new(text: Option<&str>) -> Result<Matcher, String> {
        let text = text.map(str::trim).unwrap_or_default();
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') {
            return Ok(Matcher::Names(text.split('|').filter(|n| !n.is_empty()).map(str::to_owned).collect()));
        }
        regex::Regex::new(text).map(Matcher::Pattern).map_err(|e| format!("matcher {text:?}: {e}"))
    }

    pub(super) fn takes(&self, subjects: &[&str]) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => subjects.iter().any(|s| names.iter().any(|n| n == s)),
            Matcher::Pattern(re) => subjects.iter().any(|s| re.is_match(s)),
        }
    }
}

/// One command of a group, or (`callback`) the id of a client's callback.
#[derive(Debug, Clone)]
pub(super) struct HookAction {
    pub(super) line: String,
    pub(super) timeout: Duration,
    pub(super) callback: bool,
    /// A callback's `onFailure` (commands: always `Default`).
    pub(super) on_failure: OnFailure,
}

/// A session's hooks, compiled from `config.hooks` and the client's
/// callbacks.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub(super) groups: Vec<(HookEvent, Matcher, Vec<HookAction>)>,
    /// Who runs the callbacks (set with them).
    pub(super) client: Option<Arc<dyn ClientHooks>>,
}

/// A hook's timeout in seconds, checked.
pub(super) fn timeout_of(event: &str, secs: Option<f64>) -> Result<Duration, String> {
    let secs = secs.unwrap_or(DEFAULT_TIMEOUT_SECS);
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!("hooks.{event}: timeout must be a positive number of seconds"));
    }
    Ok(Duration::from_secs_f64(secs.min(24.0 * 3600.0)))
}

impl Hooks {
    /// Compiles Claude Code's `hooks` value. Events pirn does not run and
    /// hook types other than `command` are skipped with a warning (a
    /// settings file written for Claude Code still loads). Errors: a
    /// matcher that is not a valid regular expression, an empty command, a
    /// timeout that is not a positive number of seconds.
    pub fn new(config: &HooksConfig) -> Result<Hooks, String> {
        let mut groups = Vec::new();
        for (name, matchers) in config {
            let Some(event) = HookEvent::ALL.into_iter().find(|e| e.name() == name) else {
                tracing::warn!(event = %name, "hooks: pirn runs no {name} hooks; skipped");
                continue;
            };
            for m in matchers {
                let matcher = Matcher::new(m.matcher.as_deref())?;
                let mut commands = Vec::new();
                for h in &m.hooks {
                    if h.kind != "command" {
                        tracing::warn!(event = %name, kind = %h.kind, "hooks: only type \"command\" runs; skipped");
                        continue;
                    }
                    if h.command.trim().is_empty() {
                        return Err(format!("hooks.{name}: a command is empty"));
                    }
                    let timeout = timeout_of(name, h.timeout)?;
                    commands.push(HookAction {
                        line: h.command.clone(),
                        timeout,
                        callback: false,
                        on_failure: OnFailure::Default,
                    });
                }
                if !commands.is_empty() {
                    groups.push((event, matcher, commands));
                }
            }
        }
        Ok(Hooks { groups, client: None })
    }

    /// Every command line of the table (for `pirn serve`'s allowlist).
    pub fn commands(config: &HooksConfig) -> impl Iterator<Item = &str> {
        config.values().flatten().flat_map(|m| &m.hooks).map(|h| h.command.as_str())
    }

    /// True when `event` has a hook (else its entry point returns at once).
    pub fn has(&self, event: HookEvent) -> bool {
        self.groups.iter().any(|(e, _, _)| *e == event)
    }

    /// The commands `event` runs for `subjects`, each once.
    pub(super) fn matching(&self, event: HookEvent, subjects: &[&str]) -> Vec<&HookAction> {
        let mut out: Vec<&HookAction> = Vec::new();
        for (_, _, commands) in self.groups.iter().filter(|(e, m, _)| *e == event && m.takes(subjects)) {
            for c in commands {
                if !out.iter().any(|o| o.line == c.line && o.callback == c.callback) {
                    out.push(c);
                }
            }
        }
        out
    }
}

/// Where `hook_start` / `hook_end` go: the send's emitter (which drops
/// them for 0.2.0 clients).
pub trait Announce {
    /// Emits `event` for the send.
    fn announce(&self, event: Event) -> impl Future<Output = ()>;
}

/// No events (hooks outside a send).
pub struct Silent;

impl Announce for Silent {
    async fn announce(&self, _event: Event) {}
}

/// What running a hook needs of its session: its compiled hooks, its id,
/// workspace and approval mode (in every hook's input), and the sandbox
/// and environment a command hook runs under. Built by the session's
/// config (`SessionConfig::hook_scope`), so the hooks know nothing of the
/// config.
#[derive(Clone, Copy)]
pub struct HookScope<'a> {
    /// `None`: the session has no hooks (every event is a no-op).
    pub hooks: Option<&'a Hooks>,
    pub session_id: &'a str,
    pub workspace: &'a std::path::Path,
    pub mode: crate::wire::ApprovalMode,
    pub sandbox: &'a crate::sandbox::Sandbox,
    pub env_passthrough: &'a [String],
}

/// What a callback returns: the hook's answer (the JSON a command hook
/// prints: `decision`, `reason`, `continue`, `hookSpecificOutput`, …) or
/// why the client could not answer.
pub type CallbackFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// A client that runs hook callbacks.
pub trait ClientHooks: Send + Sync + std::fmt::Debug {
    /// Calls the client's callback `callback_id` with the hook's `input`
    /// (`tool_use_id`: the tool call it is about, for tool events). The
    /// future ends when the client answers or is gone; the caller bounds
    /// it with the callback's timeout.
    fn call(&self, callback_id: &str, tool_use_id: Option<&str>, input: Value) -> CallbackFuture;
}

/// What a callback's failure (an error answer, or none within its
/// timeout) does to what its event guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// pirn's default: `PreToolUse` blocks the call, other events go on.
    Default,
    /// The client asked to go on (`onFailure: "continue"`).
    Continue,
    /// The client asked to block (`onFailure: "block"`).
    Block,
}

impl OnFailure {
    /// Reads the SDK's `onFailure` text.
    pub fn of(text: Option<&str>) -> OnFailure {
        match text {
            None => OnFailure::Default,
            Some("continue") => OnFailure::Continue,
            Some(_) => OnFailure::Block,
        }
    }
}

/// True when a failed callback of `event` blocks what the event guards.
/// `Stop` never does (its block means "go on", the opposite of failing).
pub fn fails_closed(event: HookEvent, on_failure: OnFailure) -> bool {
    match (event, on_failure) {
        (HookEvent::Stop | HookEvent::SessionEnd, _) => false,
        (_, OnFailure::Block) => true,
        (_, OnFailure::Continue) => false,
        (HookEvent::PreToolUse, OnFailure::Default) => true,
        (_, OnFailure::Default) => false,
    }
}
