//! What a hook's run means, in Claude Code's terms.
//!
//! Owns: reading one run ([`read`]): exit 0 is success and a JSON object on
//! stdout is honoured (plain stdout is context for `UserPromptSubmit` and
//! `SessionStart`, else only logged); exit 2 blocks with stderr as the
//! reason; any other exit, a timeout or a hook that cannot start is a
//! non-blocking error (logged; the send goes on). And folding the runs of
//! one event into one [`HookVerdict`] ([`HookVerdict::fold`]): any block blocks,
//! `deny` beats `ask` beats `allow`, contexts join in order.
//!
//! The JSON answer's fields (Claude Code's): `continue: false` with
//! `stopReason`; `decision: "block"` with `reason` (`Stop`: the model goes
//! on with the reason; `PostToolUse`: the reason reaches the model;
//! `UserPromptSubmit`: the prompt is refused; `PreToolUse`'s older
//! `decision: "approve" | "block"` is read as allow / deny);
//! `hookSpecificOutput.permissionDecision` (`allow` | `deny` | `ask`) with
//! `permissionDecisionReason` for `PreToolUse`;
//! `hookSpecificOutput.additionalContext`;
//! `hookSpecificOutput.updatedInput` (`PreToolUse`, with allow, ask or no
//! decision: the call runs with these arguments instead, and the model is
//! told; one that is not a JSON object blocks the call). `suppressOutput`
//! and `systemMessage` are not acted on.

use serde::Deserialize;
use serde_json::Value;

use super::process::{Exit, Ran};
use super::table::HookEvent;

/// A `PreToolUse` hook's permission decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Permission {
    /// Run without asking (the policy's deny rules still apply).
    Allow,
    /// Ask the client, as the policy's `ask` does.
    Ask,
}

/// What the hooks of one event decided together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookVerdict {
    /// Blocked (exit 2, `decision: "block"`, `permissionDecision: "deny"`),
    /// with the reasons.
    pub block: Option<String>,
    /// `PreToolUse`: the strongest of allow / ask (deny is `block`).
    pub permission: Option<Permission>,
    /// The reason given with `ask` or `allow`.
    pub permission_reason: Option<String>,
    /// `additionalContext` (and plain stdout where it counts), in order.
    pub context: Vec<String>,
    /// `continue: false`: the `stopReason` (or a default text).
    pub stop: Option<String>,
    /// `PreToolUse`: the arguments the call runs with instead of the
    /// model's (`updatedInput`, a JSON object; the last hook's wins).
    pub updated_input: Option<Value>,
}

impl HookVerdict {
    /// Folds `other` (a later hook of the same event) into `self`.
    pub fn fold(&mut self, other: HookVerdict) {
        self.block = match (self.block.take(), other.block) {
            (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
            (a, b) => a.or(b),
        };
        if other.permission > self.permission {
            self.permission = other.permission;
            self.permission_reason = other.permission_reason;
        }
        self.context.extend(other.context);
        self.stop = self.stop.take().or(other.stop);
        self.updated_input = other.updated_input.or(self.updated_input.take());
    }

    /// The context as one text, `None` when there is none.
    pub fn context_text(&self) -> Option<String> {
        let text = self.context.iter().map(|c| c.trim()).filter(|c| !c.is_empty()).collect::<Vec<_>>().join("\n");
        (!text.is_empty()).then_some(text)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct HookOutput {
    #[serde(rename = "continue")]
    keep_going: Option<bool>,
    stop_reason: Option<String>,
    decision: Option<String>,
    reason: Option<String>,
    hook_specific_output: Option<Specific>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    additional_context: Option<String>,
    updated_input: Option<Value>,
}

/// How one run reads as a verdict, and the `hook_end` outcome word (`ok`,
/// `blocked`, `error`, `timeout`).
pub fn read(event: HookEvent, ran: &Ran) -> (HookVerdict, &'static str) {
    let mut v = HookVerdict::default();
    match &ran.exit {
        Exit::Code(0) => {}
        Exit::Code(2) => {
            let reason = ran.stderr.trim();
            v.block = Some(if reason.is_empty() { "blocked by a hook (exit 2)".to_owned() } else { reason.to_owned() });
            return (v, "blocked");
        }
        Exit::TimedOut => return (v, "timeout"),
        Exit::Code(_) | Exit::Killed | Exit::NotRun(_) => return (v, "error"),
    }
    let out = ran.stdout.trim();
    if !out.starts_with('{') {
        if matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart) && !out.is_empty() {
            v.context.push(out.to_owned());
        }
        return (v, "ok");
    }
    let Ok(o) = serde_json::from_str::<HookOutput>(out) else {
        tracing::warn!(event = event.name(), "a hook's stdout starts like JSON but is not a valid answer; ignored");
        return (v, "ok");
    };
    if o.keep_going == Some(false) {
        v.stop = Some(o.stop_reason.clone().unwrap_or_else(|| format!("a {} hook stopped the send", event.name())));
    }
    let specific = o.hook_specific_output.unwrap_or_default();
    v.context.extend(specific.additional_context);
    let reason = |r: Option<String>, what: &str| {
        r.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| format!("{what} by a {} hook", event.name()))
    };
    match (event, specific.permission_decision.as_deref(), o.decision.as_deref()) {
        (HookEvent::PreToolUse, Some("deny"), _) | (HookEvent::PreToolUse, None, Some("block")) => {
            v.block = Some(reason(specific.permission_decision_reason.or(o.reason), "denied"));
        }
        (HookEvent::PreToolUse, Some("ask"), _) => {
            v.permission = Some(Permission::Ask);
            v.permission_reason = Some(reason(specific.permission_decision_reason, "asked for"));
        }
        (HookEvent::PreToolUse, Some("allow"), _) | (HookEvent::PreToolUse, None, Some("approve")) => {
            v.permission = Some(Permission::Allow);
        }
        (_, _, Some("block")) => v.block = Some(reason(o.reason, "blocked")),
        _ => {}
    }
    match specific.updated_input {
        Some(_) if event != HookEvent::PreToolUse || v.block.is_some() => {}
        Some(Value::Null) | None => {}
        Some(input @ Value::Object(_)) => v.updated_input = Some(input),
        Some(other) => {
            v.block =
                Some(format!("a {} hook answered an updatedInput that is not a JSON object: {other}", event.name()));
        }
    }
    let outcome = if v.block.is_some() || v.stop.is_some() { "blocked" } else { "ok" };
    (v, outcome)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran { exit: Exit::Code(code), stdout: stdout.into(), stderr: stderr.into(), elapsed: Duration::ZERO }
    }

    #[test]
    fn exit_codes_and_json_answers_read_as_claude_code_reads_them() {
        let (v, o) = read(HookEvent::PreToolUse, &ran(2, "", "no writes to .env\n"));
        assert_eq!((v.block.as_deref(), o), (Some("no writes to .env"), "blocked"));
        let (v, o) = read(HookEvent::PreToolUse, &ran(1, "", "oops"));
        assert_eq!((v, o), (HookVerdict::default(), "error"));
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"policy"}}"#;
        assert_eq!(read(HookEvent::PreToolUse, &ran(0, deny, "")).0.block.as_deref(), Some("policy"));
        let ask = r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}"#;
        assert_eq!(read(HookEvent::PreToolUse, &ran(0, ask, "")).0.permission, Some(Permission::Ask));
        let stop = r#"{"decision":"block","reason":"tests still fail"}"#;
        assert_eq!(read(HookEvent::Stop, &ran(0, stop, "")).0.block.as_deref(), Some("tests still fail"));
        let ctx = r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: ok"}}"#;
        assert_eq!(read(HookEvent::PostToolUse, &ran(0, ctx, "")).0.context_text().as_deref(), Some("lint: ok"));
        assert_eq!(read(HookEvent::UserPromptSubmit, &ran(0, "today is Monday\n", "")).0.context, ["today is Monday"]);
        assert!(read(HookEvent::PostToolUse, &ran(0, "plain", "")).0.context.is_empty());
        let rewrite = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -a"}}}"#;
        let v = read(HookEvent::PreToolUse, &ran(0, rewrite, "")).0;
        assert_eq!(
            (v.permission, v.updated_input),
            (Some(Permission::Allow), Some(serde_json::json!({"command": "ls -a"})))
        );
        let bad = r#"{"hookSpecificOutput":{"updatedInput":"ls -a"}}"#;
        assert!(read(HookEvent::PreToolUse, &ran(0, bad, "")).0.block.is_some());
        let denied = r#"{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"command":"ls"}}}"#;
        assert_eq!(read(HookEvent::PreToolUse, &ran(0, denied, "")).0.updated_input, None);
        let halt = r#"{"continue":false,"stopReason":"enough"}"#;
        assert_eq!(read(HookEvent::PostToolUse, &ran(0, halt, "")).0.stop.as_deref(), Some("enough"));
    }

    #[test]
    fn fold_keeps_every_block_and_the_strongest_permission() {
        let mut v = HookVerdict { permission: Some(Permission::Allow), ..HookVerdict::default() };
        v.fold(HookVerdict { permission: Some(Permission::Ask), context: vec!["a".into()], ..HookVerdict::default() });
        v.fold(HookVerdict { block: Some("x".into()), context: vec!["b".into()], ..HookVerdict::default() });
        v.fold(HookVerdict { block: Some("y".into()), ..HookVerdict::default() });
        assert_eq!(v.permission, Some(Permission::Ask));
        assert_eq!(v.block.as_deref(), Some("x\ny"));
        assert_eq!(v.context_text().as_deref(), Some("a\nb"));
    }
}
