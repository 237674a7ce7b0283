//! Hook callbacks: hooks that are functions in the client's process (the
//! Claude Agent SDKs' `hooks=` / `hooks:` option) rather than commands.
//!
//! Owns: the [`ClientHooks`] trait a transport implements (the Claude
//! surface sends each call as a `hook_callback` control request and
//! returns the SDK's answer), the [`CallbackTable`] the client registered
//! (event → matcher groups of callback ids, with their timeouts), and
//! [`run`], which calls one callback and reads its answer exactly as a
//! command hook's stdout is read ([`super::answer`]). A callback gets the
//! same input a command hook gets on stdin.
//!
//! Fail safe: a callback that errs, or does not answer within its timeout
//! (default 60 s), denies the tool call when it is a `PreToolUse` hook (a
//! check that could not run must not let the call through); for the other
//! events the send goes on, as after a failed command hook. A matcher
//! group's `onFailure` (the SDKs' option) overrides this: `"block"` (or
//! any value other than `"continue"`, as Claude Code reads it) makes a
//! failure block what the event guards (the tool call, the prompt, the
//! compaction; never `Stop`), `"continue"` lets it go on, `PreToolUse`
//! included ([`fails_closed`]).
//!
//! Trust: callbacks come only from the stdio parent (the SDK that spawned
//! pirn); a repository cannot register one.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use super::process::{Exit, Ran};
pub use super::table::{CallbackFuture, ClientHooks, OnFailure, fails_closed};
use super::table::{HookAction, HookEvent, Hooks, Matcher, timeout_of};

/// One matcher group of a [`CallbackTable`]: the SDK's wire shape
/// (`{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 30}`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CallbackGroup {
    /// As a command hook's matcher (see [`crate::wire::HookMatcher`]).
    #[serde(default)]
    pub matcher: Option<String>,
    /// The callbacks, called in parallel.
    #[serde(default)]
    pub hook_callback_ids: Vec<String>,
    /// Seconds each may take (default 60).
    #[serde(default)]
    pub timeout: Option<f64>,
    /// What a failure does: `"continue"`, `"block"` (any other text reads
    /// as `"block"`); absent: [`OnFailure::Default`].
    #[serde(default)]
    pub on_failure: Option<String>,
}

/// The callbacks a client registered: event name (`PreToolUse`, …) → its
/// matcher groups, in the order given.
pub type CallbackTable = std::collections::BTreeMap<String, Vec<CallbackGroup>>;

/// Reads `initialize.hooks`. Errors name an event pirn never fires (the
/// client would wait for calls that never come) or a bad shape.
pub fn table(value: &Value) -> Result<CallbackTable, String> {
    let table: CallbackTable =
        serde_json::from_value(value.clone()).map_err(|e| format!("hooks: not a table of callback groups: {e}"))?;
    for event in table.keys() {
        if !HookEvent::ALL.iter().any(|e| e.name() == event) {
            let fired: Vec<&str> = HookEvent::ALL.iter().map(|e| e.name()).collect();
            return Err(format!("hook callbacks for {event} are not supported: pirn fires {}", fired.join(", ")));
        }
    }
    Ok(table)
}

/// Calls callback `id` with `input`; returns what it did as a command
/// hook's run, so [`super::answer::read`] reads it: an answer is exit 0
/// with that JSON on stdout, a client error is `NotRun`, no answer within
/// `timeout` is `TimedOut`.
pub async fn run(client: &dyn ClientHooks, id: &str, input: &[u8], timeout: Duration) -> Ran {
    let started = Instant::now();
    let input: Value = serde_json::from_slice(input).unwrap_or(Value::Null);
    let tool_use_id = input.get("tool_use_id").and_then(Value::as_str).map(str::to_owned);
    let called = tokio::time::timeout(timeout, client.call(id, tool_use_id.as_deref(), input)).await;
    let (exit, stdout) = match called {
        Ok(Ok(answer)) => (Exit::Code(0), answer.to_string()),
        Ok(Err(why)) => (Exit::NotRun(format!("the client's callback {id} failed: {why}")), String::new()),
        Err(_) => (Exit::TimedOut, String::new()),
    };
    Ran { exit, stdout, stderr: String::new(), elapsed: started.elapsed() }
}

/// The block reason of a callback of `event` that did not answer.
pub fn fail_safe_reason(event: HookEvent, id: &str, ran: &Ran) -> String {
    let why = match &ran.exit {
        Exit::TimedOut => format!("no answer within {:.0} s", ran.elapsed.as_secs_f64().ceil()),
        Exit::NotRun(why) => why.clone(),
        _ => "it failed".to_owned(),
    };
    let what = match event {
        HookEvent::PreToolUse => "the call does not run",
        HookEvent::UserPromptSubmit => "the prompt is refused",
        _ => "it counts as a block",
    };
    format!("denied: the client's {} hook callback {id} could not decide ({why}), so {what}", event.name())
}

impl Hooks {
    /// These hooks and the callbacks of `table`, run by `client`. Errors:
    /// an event pirn never fires, a bad matcher or timeout.
    pub fn with_callbacks(mut self, table: &CallbackTable, client: Arc<dyn ClientHooks>) -> Result<Hooks, String> {
        for (name, groups) in table {
            let Some(event) = HookEvent::ALL.into_iter().find(|e| e.name() == name) else {
                return Err(format!("hook callbacks for {name} are not supported"));
            };
            for g in groups {
                let matcher = Matcher::new(g.matcher.as_deref())?;
                let timeout = timeout_of(name, g.timeout)?;
                let commands: Vec<HookAction> = g
                    .hook_callback_ids
                    .iter()
                    .map(|id| HookAction {
                        line: id.clone(),
                        timeout,
                        callback: true,
                        on_failure: OnFailure::of(g.on_failure.as_deref()),
                    })
                    .collect();
                if !commands.is_empty() {
                    self.groups.push((event, matcher, commands));
                }
            }
        }
        self.client = Some(client);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_sdks_table_reads_and_an_unfired_event_is_refused() {
        let t =
            table(&json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0"], "timeout": 5}]})).unwrap();
        assert_eq!(t["PreToolUse"][0].hook_callback_ids, ["hook_0"]);
        assert_eq!(t["PreToolUse"][0].timeout, Some(5.0));
        assert_eq!(t["PreToolUse"][0].on_failure, None);
        let t = table(&json!({"UserPromptSubmit": [{"hookCallbackIds": ["hook_0"], "onFailure": "block"}]})).unwrap();
        assert_eq!(OnFailure::of(t["UserPromptSubmit"][0].on_failure.as_deref()), OnFailure::Block);
        assert!(fails_closed(HookEvent::UserPromptSubmit, OnFailure::Block));
        assert!(!fails_closed(HookEvent::UserPromptSubmit, OnFailure::Default));
        assert!(fails_closed(HookEvent::PreToolUse, OnFailure::Default));
        assert!(!fails_closed(HookEvent::PreToolUse, OnFailure::Continue));
        assert!(!fails_closed(HookEvent::Stop, OnFailure::Block));
        assert_eq!(OnFailure::of(Some("strict")), OnFailure::Block);
        let e = table(&json!({"Notification": [{"hookCallbackIds": ["hook_1"]}]})).unwrap_err();
        assert!(e.contains("Notification") && e.contains("PreToolUse"), "{e}");
    }
}
