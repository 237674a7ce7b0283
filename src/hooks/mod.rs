//! Operator hooks in Claude Code's format, so one policy script works for
//! pirn and Claude Code alike.
//!
//! Owns: the compiled hook table of a session ([`Hooks`], from
//! `config.hooks`: Claude Code's settings `hooks` value), which hooks an
//! event runs (matchers), the JSON each gets on stdin, running them in
//! parallel ([`process`], sandboxed like `bash`, with a timeout) with their
//! `hook_start` / `hook_end` events (0.3.0 only, through [`Announce`]), and
//! what their answers mean ([`answer`]). The entry points are one function
//! per event: [`pre_tool_use`], [`post_tool_use`], [`user_prompt_submit`],
//! [`on_stop`], [`session_start`], [`session_end`], [`pre_compact`].
//!
//! Trust: hooks come from the operator only (the stdio parent's `init`,
//! `pirn run --settings`; over HTTP only the commands `pirn serve
//! --allow-hook-command` lists), never from the repository. A hook is a
//! child like `bash`: it gets the session's sandbox and allowlisted
//! environment, and a hang costs at most its timeout.
//!
//! Tool names: a hook's `tool_name` is Claude Code's name of the tool
//! (`Bash`, `Write`, `Edit`, `Read`, `Grep`, `Glob`; MCP tools keep their
//! `mcp__server__tool` names), so existing scripts work; `pirn_tool_name`
//! carries pirn's name. A matcher matches either spelling. `tool_input` is
//! the call's arguments (their names are already Claude Code's:
//! `file_path`, `command`, `old_string`, …) with a relative `file_path`
//! made absolute beneath the workspace. `tool_response` is
//! `{"output": text, "is_error": bool}`.
//!
//! Callbacks: a client that spawned pirn may register hooks that are
//! functions in its own process ([`callback`]); they are matched and
//! answered like commands, and fail safe.
//!
//! Events without a send (`SessionStart`, `SessionEnd`) have no
//! `hook_start` / `hook_end` events (every event belongs to a send); their
//! runs are logged.

pub mod answer;
pub mod callback;
mod fire;
pub mod process;
pub mod settings;
mod table;

use serde_json::{Map, Value, json};

pub use answer::{HookVerdict, Permission};
use fire::fire;
pub use table::{Announce, DEFAULT_TIMEOUT_SECS, HookEvent, HookScope, Hooks, Silent};

use crate::wire::claude_names::claude_tool_name;

fn has(config: &HookScope<'_>, event: HookEvent) -> bool {
    config.hooks.is_some_and(|h| h.has(event))
}

/// The tool fields of a hook's input.
fn tool_fields(config: &HookScope<'_>, call_id: &str, name: &str, args: &Value) -> Map<String, Value> {
    let mut input = args.clone();
    if let Some(path) = input.get_mut("file_path")
        && let Some(p) = path.as_str()
        && std::path::Path::new(p).is_relative()
    {
        *path = json!(config.workspace.join(p));
    }
    let mut m = Map::new();
    m.insert("tool_name".into(), json!(claude_tool_name(name)));
    m.insert("pirn_tool_name".into(), json!(name));
    m.insert("tool_input".into(), input);
    m.insert("tool_use_id".into(), json!(call_id));
    m
}

/// `PreToolUse`: before tool call `call_id` (`name`, parsed `args`) runs.
/// A `block` means it must not run (the reason goes to the model).
pub async fn pre_tool_use(
    config: &HookScope<'_>,
    out: &impl Announce,
    call_id: &str,
    name: &str,
    args: &Value,
) -> HookVerdict {
    if !has(config, HookEvent::PreToolUse) {
        return HookVerdict::default();
    }
    let fields = Value::Object(tool_fields(config, call_id, name, args));
    fire(config, out, HookEvent::PreToolUse, &[name, claude_tool_name(name)], fields).await
}

/// `PostToolUse`: after the call ran with result `output`. Its context and
/// block reasons are for the model, after the result.
pub async fn post_tool_use(
    config: &HookScope<'_>,
    out: &impl Announce,
    call_id: &str,
    name: &str,
    args: &Value,
    output: &str,
    is_error: bool,
) -> HookVerdict {
    if !has(config, HookEvent::PostToolUse) {
        return HookVerdict::default();
    }
    let mut fields = tool_fields(config, call_id, name, args);
    fields.insert("tool_response".into(), json!({"output": output, "is_error": is_error}));
    fire(config, out, HookEvent::PostToolUse, &[name, claude_tool_name(name)], Value::Object(fields)).await
}

/// `UserPromptSubmit`: before a send's message reaches the model. A
/// `block` (or `stop`) refuses the send; the context joins the message.
pub async fn user_prompt_submit(config: &HookScope<'_>, out: &impl Announce, prompt: &str) -> HookVerdict {
    if !has(config, HookEvent::UserPromptSubmit) {
        return HookVerdict::default();
    }
    fire(config, out, HookEvent::UserPromptSubmit, &[], json!({"prompt": prompt})).await
}

/// `Stop`: the model answered without tools and the send is about to end
/// `ok` with `answer`. Returns the reason to go on when a hook blocks the
/// stop (`decision: "block"` or exit 2): the loop gives it to the model
/// and calls it again. `active` is Claude Code's `stop_hook_active`: set
/// once a Stop hook kept this send going (hooks read it to avoid looping;
/// `max_iterations` bounds it anyway).
pub async fn on_stop(config: &HookScope<'_>, out: &impl Announce, active: &mut bool, answer: &str) -> Option<String> {
    if !has(config, HookEvent::Stop) {
        return None;
    }
    let fields = json!({"stop_hook_active": *active, "last_assistant_message": answer});
    let verdict = fire(config, out, HookEvent::Stop, &[], fields).await;
    if verdict.stop.is_some() {
        return None;
    }
    let reason = verdict.block?;
    *active = true;
    Some(format!("A Stop hook asks you to keep working: {reason}"))
}

/// `SessionStart` (`source`: `startup` or `resume`): its context is for
/// the model, at the start of the conversation.
pub async fn session_start(config: &HookScope<'_>, source: &str) -> Option<String> {
    if !has(config, HookEvent::SessionStart) {
        return None;
    }
    fire(config, &Silent, HookEvent::SessionStart, &[source], json!({"source": source})).await.context_text()
}

/// `SessionEnd` (`reason`: `other`, as pirn's sessions end by their
/// client closing them). Answers are not acted on.
pub async fn session_end(config: &HookScope<'_>, reason: &str) {
    if has(config, HookEvent::SessionEnd) {
        fire(config, &Silent, HookEvent::SessionEnd, &[reason], json!({"reason": reason})).await;
    }
}

/// `PreCompact` (`trigger`: `auto` before a compaction to fit the
/// window, `manual` for `compact`). A block refuses a manual compaction;
/// an automatic one goes on (the request would not fit otherwise).
pub async fn pre_compact(config: &HookScope<'_>, out: &impl Announce, trigger: &str) -> HookVerdict {
    if !has(config, HookEvent::PreCompact) {
        return HookVerdict::default();
    }
    fire(config, out, HookEvent::PreCompact, &[trigger], json!({"trigger": trigger, "custom_instructions": ""})).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::HooksConfig;
    use crate::wire::{HookCommand, HookMatcher};

    fn table(event: &str, matcher: &str) -> Hooks {
        let command = HookCommand { kind: "command".into(), command: "true".into(), timeout: None };
        let m = HookMatcher { matcher: Some(matcher.into()), hooks: vec![command] };
        Hooks::new(&HooksConfig::from([(event.to_owned(), vec![m])])).unwrap()
    }

    #[test]
    fn matchers_take_either_spelling_of_a_tool() {
        let h = table("PreToolUse", "Write|Edit");
        assert_eq!(h.matching(HookEvent::PreToolUse, &["write_file", "Write"]).len(), 1);
        assert!(h.matching(HookEvent::PreToolUse, &["bash", "Bash"]).is_empty());
        assert!(h.matching(HookEvent::PostToolUse, &["write_file", "Write"]).is_empty());
        assert_eq!(table("PreToolUse", "").matching(HookEvent::PreToolUse, &["x"]).len(), 1);
        assert_eq!(table("PreToolUse", "mcp__.*").matching(HookEvent::PreToolUse, &["mcp__fs__read"]).len(), 1);
        assert_eq!(
            table("PreToolUse", "write_file").matching(HookEvent::PreToolUse, &["write_file", "Write"]).len(),
            1
        );
        assert!(!table("Notification", "").has(HookEvent::PreToolUse));
        let bad = HookMatcher { matcher: Some("(".into()), hooks: vec![] };
        assert!(Hooks::new(&HooksConfig::from([("Stop".to_owned(), vec![bad])])).is_err());
    }
}
