//! Firing an event's hooks: every command and callback whose matcher
//! takes the event's subjects, in parallel, each announced with
//! `hook_start` / `hook_end`, their answers folded into one [`HookVerdict`].
//!
//! Owns: [`fire`] and the run of one hook (a command through
//! [`super::process`], a callback through [`super::callback`], whose
//! failure blocks as [`callback::fails_closed`] says).

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::answer::{self, HookVerdict};
use super::table::{Announce, HookAction, HookEvent, HookScope};
use super::{callback, process};
use crate::wire::Event;
use crate::wire::claude_names::permission_mode_name;

/// Runs `event`'s hooks matching `subjects` with `fields` added to the
/// common input, in parallel, and folds their answers.
pub(super) async fn fire(
    config: &HookScope<'_>,
    out: &impl Announce,
    event: HookEvent,
    subjects: &[&str],
    fields: Value,
) -> HookVerdict {
    let Some(hooks) = config.hooks else { return HookVerdict::default() };
    let commands = hooks.matching(event, subjects);
    if commands.is_empty() {
        return HookVerdict::default();
    }
    let mut input = Map::new();
    input.insert("session_id".into(), json!(config.session_id));
    input.insert("cwd".into(), json!(config.workspace));
    input.insert("hook_event_name".into(), json!(event.name()));
    input.insert("permission_mode".into(), json!(permission_mode_name(config.mode)));
    if let Value::Object(f) = fields {
        input.extend(f);
    }
    let input = serde_json::to_vec(&input).unwrap_or_default();
    let runs = commands.into_iter().map(|c| run_one(config, hooks.client.as_deref(), out, event, c, &input));
    let mut verdict = HookVerdict::default();
    for v in futures_util::future::join_all(runs).await {
        verdict.fold(v);
    }
    verdict
}

async fn run_one(
    config: &HookScope<'_>,
    client: Option<&dyn callback::ClientHooks>,
    out: &impl Announce,
    event: HookEvent,
    c: &HookAction,
    input: &[u8],
) -> HookVerdict {
    let name = event.name().to_owned();
    // A callback is shown as `callback:ID` where a command shows its line.
    let shown = if c.callback { format!("callback:{}", c.line) } else { c.line.clone() };
    out.announce(Event::HookStart { hook_event_name: name.clone(), command: shown.clone() }).await;
    let ran = match (c.callback, client) {
        (false, _) => process::run(config, &c.line, input, c.timeout).await,
        (true, Some(client)) => callback::run(client, &c.line, input, c.timeout).await,
        (true, None) => process::Ran {
            exit: process::Exit::NotRun("no client to call back".to_owned()),
            stdout: String::new(),
            stderr: String::new(),
            elapsed: Duration::ZERO,
        },
    };
    let (mut verdict, outcome) = answer::read(event, &ran);
    let failed = matches!(outcome, "error" | "timeout");
    let outcome = if c.callback && failed && callback::fails_closed(event, c.on_failure) {
        verdict.block = Some(callback::fail_safe_reason(event, &c.line, &ran));
        "blocked"
    } else {
        outcome
    };
    let exit_code = match ran.exit {
        process::Exit::Code(code) => Some(code),
        _ => None,
    };
    match (&ran.exit, outcome) {
        (process::Exit::NotRun(why), _) => tracing::warn!(event = %name, command = %c.line, "hook not run: {why}"),
        (_, "error" | "timeout") => tracing::warn!(
            event = %name, command = %c.line, ?exit_code, stderr = %ran.stderr.trim(),
            "hook failed ({outcome}); the send goes on"
        ),
        _ => tracing::debug!(event = %name, command = %c.line, outcome, "hook ran"),
    }
    let duration_ms = u64::try_from(ran.elapsed.as_millis()).unwrap_or(u64::MAX);
    out.announce(Event::HookEnd {
        hook_event_name: name,
        command: shown,
        outcome: outcome.to_owned(),
        exit_code,
        duration_ms,
    })
    .await;
    verdict
}
