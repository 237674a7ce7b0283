//! One tool call of the agent loop: announce it, pass it through the
//! approval gate, run it, report it, and put its result in the conversation.
//!
//! Owns: the `tool_start` / `tool_end` / `permission_*` events of a call, the
//! text the model reads for refused or malformed calls, the wait for a
//! host's permission answer (bounded by `permission_timeout`), and where
//! the operator's `PreToolUse` / `PostToolUse` hooks run (see
//! [`crate::hooks`]): a hook's deny means the call does not run and the
//! model reads why; its `allow` skips the policy's ask (not its deny), its
//! `ask` asks; its `updatedInput` becomes the call's arguments from there
//! on (approval, the run, the record), and the model is told; the hooks'
//! context follows the result.

use serde_json::Value;

use super::call_context::CallContext;
use super::diff;
use super::facts::CallOutcome;
use super::stats::SendStats;
use crate::approval::PolicyVerdict;
use crate::approval::broker::PermissionBroker;
use crate::conversation::Conversation;
use crate::hooks;
use crate::model::ToolCall;
use crate::telemetry::ToolSpan;
use crate::tools::{self, ToolOutput};
use crate::wire::{Decision, Event, ToolCallMade};

/// Runs one tool call and appends its result to the conversation, with
/// `note` (what pirn did not run of the answer) after it. Returns the
/// result as the model reads it and the call's typed outcome.
pub async fn run(
    cx: &CallContext<'_>,
    conv: &mut Conversation,
    stats: &mut SendStats,
    call: &ToolCall,
    note: Option<&str>,
) -> (String, CallOutcome) {
    let parsed = if call.arguments.trim().is_empty() {
        Ok(Value::Object(Default::default()))
    } else {
        serde_json::from_str::<Value>(&call.arguments)
    };
    let args = parsed.as_ref().cloned().unwrap_or_else(|_| Value::String(call.arguments.clone()));
    cx.emit
        .emit(Event::ToolStart { name: call.name.clone(), args: args.clone(), call_id: Some(call.id.clone()) })
        .await;
    stats.begin_tool();
    let span = cx.emit.trace().map_or_else(ToolSpan::none, |t| t.tool(&call.name, &call.id));
    let mut hook = match &parsed {
        Ok(_) if cx.held.is_some() => hooks::HookVerdict::default(),
        Ok(args) => hooks::pre_tool_use(&cx.config.hook_scope(), cx.emit, &call.id, &call.name, args).await,
        Err(_) => hooks::HookVerdict::default(),
    };
    // An operator's hook may give the call other arguments (`updatedInput`):
    // from here on they are the call's, for approval, the run and the record.
    let rewritten = hook.updated_input.take().filter(|input| parsed.as_ref().ok() != Some(input));
    let changed = rewritten.is_some();
    let (parsed, arguments, args) = match rewritten {
        Some(input) => (Ok(input.clone()), input.to_string(), input),
        None => (parsed, call.arguments.clone(), args),
    };
    // The file a write or edit may change, as it stands now (for tool_end.diff).
    // Only a 0.3.0 session carries it: 0.2.0's shape drops the field.
    let wants_diff = cx.config.version >= crate::wire::ProtocolVersion::V0_3;
    let before = match parsed.as_ref() {
        Ok(a) if wants_diff => {
            let (name, a) = (call.name.clone(), a.clone());
            cx.tools.off_thread(move |t| diff::before(&name, &a, t)).await
        }
        _ => None,
    };
    stats.tool_calls_made.push(ToolCallMade { name: call.name.clone(), args: args.clone() });
    let (output, outcome) = match &parsed {
        Err(e) => {
            let text = format!("the arguments of this {} call are not valid JSON ({e}); send a JSON object", call.name);
            (ToolOutput::error(text), CallOutcome::Failed)
        }
        Ok(_) if cx.held.is_some() => (ToolOutput::error(cx.held.clone().unwrap_or_default()), CallOutcome::Withheld),
        Ok(_) if hook.block.is_some() || hook.stop.is_some() => {
            let reason = hook.block.clone().or_else(|| hook.stop.clone()).unwrap_or_default();
            cx.emit.emit(Event::PermissionDenied { name: call.name.clone(), reason: format!("hook: {reason}") }).await;
            let text = format!("not run: an operator's PreToolUse hook blocked this call: {reason}");
            (ToolOutput::error(text), CallOutcome::Denied)
        }
        Ok(args) => match approve(cx, &call.name, args, &hook).await {
            Ok(()) => {
                let (output, delegated) = match cx.config.mcp.as_ref().filter(|m| m.get(&call.name).is_some()) {
                    Some(mcp) => {
                        let out = if cx.config.version >= crate::wire::ProtocolVersion::V0_3 {
                            let (tx, rx) = tokio::sync::mpsc::channel(LIVE_PIECES);
                            streamed(cx, &call.id, mcp.call(&call.name, &arguments, &cx.tools.cancel, Some(tx)), rx)
                                .await
                        } else {
                            mcp.call(&call.name, &arguments, &cx.tools.cancel, None).await
                        };
                        (ToolOutput { text: tools::cap_output(out.text, cx.tools.result_cap), ..out }, None)
                    }
                    None if call.name == tools::todo::NAME && cx.config.plan_tool => {
                        (update_plan(cx, conv, &arguments).await, None)
                    }
                    None if call.name == tools::task::NAME && !cx.config.agents.is_empty() => {
                        super::subagent::run(cx, stats, &call.id, &arguments).await
                    }
                    None if [tools::shells::OUTPUT, tools::shells::KILL].contains(&call.name.as_str())
                        && cx.tools.shells.is_some() =>
                    {
                        (tools::shells::execute(&call.name, &arguments, cx.tools).await, None)
                    }
                    None if call.name == "bash" && cx.config.version >= crate::wire::ProtocolVersion::V0_3 => {
                        (watched(cx, &call.id, &arguments).await, None)
                    }
                    None => (tools::execute(&call.name, &arguments, &cx.config.tools, cx.tools).await, None),
                };
                let outcome = delegated.unwrap_or_else(|| CallOutcome::of(&output));
                (output, outcome)
            }
            Err(reason) => {
                let text = format!("permission denied: {reason}. Do not retry this call.");
                (ToolOutput::error(text), CallOutcome::Denied)
            }
        },
    };
    let spent = stats.end_tool();
    span.end(match (&hook.block, output.is_error) {
        (Some(_), _) => "blocked",
        (None, true) => "error",
        (None, false) => "ok",
    });
    let diff = match before {
        Some(b) => cx.tools.off_thread(move |t| b.after(t)).await,
        None => None,
    };
    cx.emit
        .emit(Event::ToolEnd {
            name: call.name.clone(),
            result_preview: tools::preview(&output.text),
            duration_ms: Some(u64::try_from(spent.as_millis()).unwrap_or(u64::MAX)),
            call_id: Some(call.id.clone()),
            is_error: Some(output.is_error),
            diff,
            output: Some(std::sync::Arc::from(output.text.as_str())),
        })
        .await;
    let text = if output.is_error { format!("Error: {}", output.text) } else { output.text };
    let mut shown = text.clone();
    // What the hooks add for the model: PreToolUse's context, then (when
    // the call ran) PostToolUse's block reason and context.
    let mut notes = vec![hook.context_text()];
    if changed && hook.block.is_none() && hook.stop.is_none() {
        tracing::info!(tool = %call.name, %arguments, "a PreToolUse hook changed the call's arguments");
        notes.insert(0, Some(format!("a PreToolUse hook changed this call's arguments; it ran with {arguments}")));
    }
    if let (Ok(args), None, None, None) = (&parsed, &hook.block, &hook.stop, &cx.held) {
        let post =
            hooks::post_tool_use(&cx.config.hook_scope(), cx.emit, &call.id, &call.name, args, &text, output.is_error)
                .await;
        notes.extend([post.block.clone(), post.context_text()]);
    }
    for note in notes.into_iter().flatten() {
        shown.push_str("\n\n[operator hook] ");
        shown.push_str(&note);
    }
    if let Some(note) = note {
        shown.push_str("\n\n");
        shown.push_str(note);
    }
    conv.push_tool_result(&call.id, shown);
    (text, outcome)
}

/// Runs a `bash` call whose output goes to the client while it runs, as
/// `tool_output` events (see [`tools::live`]), and then as the result.
async fn watched(cx: &CallContext<'_>, call_id: &str, arguments: &str) -> ToolOutput {
    let (tx, rx) = tokio::sync::mpsc::channel(LIVE_PIECES);
    let tools = tools::ToolContext { live: Some(tx), ..cx.tools.clone() };
    streamed(cx, call_id, tools::execute("bash", arguments, &cx.config.tools, &tools), rx).await
}

/// Awaits `run` while the pieces it sends to `rx` go to the client as
/// `tool_output` events of call `call_id` (never waited on).
async fn streamed(
    cx: &CallContext<'_>,
    call_id: &str,
    run: impl std::future::Future<Output = ToolOutput>,
    mut rx: tokio::sync::mpsc::Receiver<tools::live::OutputDelta>,
) -> ToolOutput {
    tokio::pin!(run);
    let output = loop {
        tokio::select! {
            output = &mut run => break output,
            Some(d) = rx.recv() => {
                cx.emit.try_emit(Event::ToolOutput { call_id: call_id.to_owned(), offset: d.offset, text: d.text });
            }
        }
    };
    while let Ok(d) = rx.try_recv() {
        cx.emit.try_emit(Event::ToolOutput { call_id: call_id.to_owned(), offset: d.offset, text: d.text });
    }
    output
}

/// Pieces of live output that may wait for the client (the oldest are
/// not dropped; a new one is, when these wait).
const LIVE_PIECES: usize = 16;

/// Runs a `todo_write` call: the plan it sends replaces the conversation's
/// and goes to the client whole as a `plan` event; arguments that are not
/// a plan are the model's error, and the plan stays as it was.
async fn update_plan(cx: &CallContext<'_>, conv: &Conversation, arguments: &str) -> ToolOutput {
    match tools::todo::parse(arguments) {
        Ok((todos, text)) => {
            *conv.plan.lock().unwrap_or_else(|p| p.into_inner()) = todos.clone();
            cx.emit.emit(Event::Plan { todos }).await;
            ToolOutput::ok(text)
        }
        Err(text) => ToolOutput::error(text),
    }
}

/// Answers a call identical to one of the previous answer without running
/// it again: the same call gives the same result, and a small model that
/// repeats itself needs to hear that, not the result a second time.
/// `failed`: the earlier call failed.
pub fn repeat(conv: &mut Conversation, call: &ToolCall, previous: &str, failed: bool) {
    // Whole when short: a note at its end matters most.
    let shown = if previous.len() <= REPEAT_SHOWN { previous.to_owned() } else { crate::tools::preview(previous) };
    let advice = if failed {
        "It failed, so it will fail again: change the arguments or use another tool (glob with pattern **/* lists the files)."
    } else {
        "Use that result. If it answers the request, reply now; otherwise take the next step with a different call."
    };
    let text = format!(
        "Not run again: you made exactly this {} call in your previous answer. Its result was:\n{shown}\n{advice}",
        call.name
    );
    conv.push_tool_result(&call.id, text);
}

/// Bytes of an earlier result repeated whole (longer ones are previewed).
const REPEAT_SHOWN: usize = 2000;

/// Applies the approval policy to one call, as the PreToolUse hooks'
/// `hook` adjusts it (`allow` turns the policy's ask into allow, `ask`
/// its allow into ask): `Ok` runs it, `Err` carries the refusal (already
/// announced with `permission_denied`).
async fn approve(cx: &CallContext<'_>, name: &str, args: &Value, hook: &hooks::HookVerdict) -> Result<(), String> {
    let config = cx.config;
    let mcp = config.mcp.as_ref().and_then(|m| m.get(name));
    // `execute` answers unknown tools and tools the config did not enable;
    // tools hidden by plan mode get the policy's refusal.
    let builtin = tools::ALL_TOOLS.contains(&name);
    if mcp.is_none() && (!builtin || (!config.tools.iter().any(|t| t == name) && config.policy.visible(name))) {
        return Ok(());
    }
    let verdict = match mcp {
        Some(tool) => config.policy.check_mcp(name, args, tool.read_only),
        None => config.policy.check(name, args, &config.workspace),
    };
    let verdict = match (verdict, hook.permission) {
        (PolicyVerdict::Ask(_), Some(hooks::Permission::Allow)) => PolicyVerdict::Allow,
        (PolicyVerdict::Allow, Some(hooks::Permission::Ask)) => {
            PolicyVerdict::Ask(hook.permission_reason.clone().unwrap_or_else(|| "a PreToolUse hook asks".to_owned()))
        }
        (v, _) => v,
    };
    let reason = match verdict {
        PolicyVerdict::Allow => return Ok(()),
        PolicyVerdict::Deny(reason) => {
            cx.emit.emit(Event::PermissionDenied { name: name.to_owned(), reason: reason.clone() }).await;
            return Err(reason);
        }
        PolicyVerdict::Ask(reason) => reason,
    };
    let (request_id, answer) = cx.permissions.open();
    cx.emit
        .emit(Event::PermissionRequest {
            name: name.to_owned(),
            reason: reason.clone(),
            request_id: Some(request_id.clone()),
            args: Some(args.clone()),
        })
        .await;
    // Settles the request however this wait ends (answer, timeout, cancel).
    struct Settle<'a>(&'a PermissionBroker, &'a str);
    impl Drop for Settle<'_> {
        fn drop(&mut self) {
            self.0.settle(self.1);
        }
    }
    let _settle = Settle(cx.permissions, &request_id);
    let denial = if !config.permission_responses {
        format!("{reason}, and the client does not answer permission requests")
    } else {
        match tokio::time::timeout(config.permission_timeout, answer).await {
            Ok(Ok(Decision::Allow)) => return Ok(()),
            Ok(Ok(Decision::Deny)) => "denied by the user".to_owned(),
            Ok(Err(_)) => "the permission request was dropped".to_owned(),
            Err(_) => format!("no answer within {} ms", config.permission_timeout.as_millis()),
        }
    };
    cx.emit.emit(Event::PermissionDenied { name: name.to_owned(), reason: denial.clone() }).await;
    Err(denial)
}
