//! pirn's session events as Claude Code's stream-json messages.
//!
//! Owns: [`ClaudeTurn`], the state of one turn (one pirn send) on this surface:
//! the text streamed since the last block ended (flushed as one assistant
//! text message when a tool call starts or the turn ends), the partial
//! message open on `stream_event` (when asked), the permission denials,
//! and the `result` built from pirn's `SendResult`.

use std::time::Instant;

use serde_json::Value;

use super::mapping::claude_name;
use super::wire::{
    AssistantBody, AssistantMsg, Block, ClaudeMessageDelta, ClaudeSideCalls, ClaudeUsage, Out, PermissionDenial,
    ResultMsg, StreamEvent, StreamEventMsg, TextDelta, UserBody, UserMsg,
};
use crate::wire::{ErrorCode, Event, SendResult, Status, StopReason};

mod nested;

/// A fresh message uuid.
pub fn uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// A tool call started and not yet ended.
struct Call {
    /// pirn's call id (the model's, when it gave one).
    pirn_id: Option<String>,
    /// The `tool_use` block's id.
    id: String,
    /// pirn's tool name.
    name: String,
    input: Value,
}

/// One turn being translated.
pub struct ClaudeTurn {
    session_id: String,
    model: String,
    partial: bool,
    started: Instant,
    /// Text since the last block boundary.
    text: String,
    /// The partial message open on the stream (its block index).
    open: Option<u32>,
    /// The id of the assistant message being streamed.
    message_id: String,
    /// Tool calls started and not ended.
    calls: Vec<Call>,
    denials: Vec<PermissionDenial>,
    next_call: u32,
    /// The last model call's usage, not yet put on an assistant message:
    /// the first message after it carries it, later ones zeros, so a
    /// client summing messages counts each call once.
    usage: Option<ClaudeUsage>,
    /// The pirn send this turn is, and what the next assistant message
    /// stands for in the conversation (`call:<id>`, `text:<id>` or
    /// `final`): what its uuid is made of (see `super::checkpoints`).
    send_id: String,
    anchor: String,
    /// A subagent's turn: the Claude id of the parent's `Agent` call its
    /// messages carry as `parent_tool_use_id`.
    parent: Option<String>,
    /// The subagents running, by the pirn id of their `task` call.
    children: Vec<(String, ClaudeTurn)>,
    /// Subagents' text is written too (`forwardSubagentText`).
    pub forward_subagent_text: bool,
    /// The Claude id of the last tool call started (a subagent's
    /// included): what a permission request is about.
    last_started: String,
}

impl ClaudeTurn {
    /// The same turn, of pirn send `send_id`.
    pub fn for_send(mut self, send_id: &str) -> ClaudeTurn {
        send_id.clone_into(&mut self.send_id);
        self
    }

    /// The Claude id (`tool_use` block id) of the call pirn knows as
    /// `pirn_id`, while it runs.
    pub fn claude_id_of(&self, pirn_id: &str) -> Option<String> {
        let own = self.calls.iter().find(|c| c.pirn_id.as_deref() == Some(pirn_id)).map(|c| c.id.clone());
        own.or_else(|| self.children.iter().find_map(|(_, t)| t.claude_id_of(pirn_id)))
    }

    /// A turn of session `session_id` on `model`; `partial`: write
    /// `stream_event` messages too.
    pub fn new(session_id: &str, model: &str, partial: bool) -> ClaudeTurn {
        ClaudeTurn {
            session_id: session_id.to_owned(),
            model: model.to_owned(),
            partial,
            started: Instant::now(),
            text: String::new(),
            open: None,
            message_id: new_message_id(),
            calls: Vec::new(),
            denials: Vec::new(),
            next_call: 0,
            usage: None,
            send_id: String::new(),
            anchor: "final".to_owned(),
            parent: None,
            children: Vec::new(),
            forward_subagent_text: false,
            last_started: String::new(),
        }
    }

    fn body(&self, content: Vec<Block>, stop: Option<&str>) -> AssistantBody {
        AssistantBody {
            id: self.message_id.clone(),
            kind: "message",
            role: "assistant",
            model: self.model.clone(),
            content,
            stop_reason: stop.map(str::to_owned),
            stop_sequence: None,
            usage: ClaudeUsage::default(),
        }
    }

    fn stream(&self, event: StreamEvent) -> Out {
        Out::StreamEvent(StreamEventMsg {
            uuid: uuid(),
            session_id: self.session_id.clone(),
            event,
            parent_tool_use_id: self.parent.clone(),
        })
    }

    fn assistant(&mut self, block: Block, stop: Option<&str>) -> Out {
        let mut message = self.body(vec![block], stop);
        message.usage = self.usage.take().unwrap_or_default();
        let anchor = std::mem::replace(&mut self.anchor, "final".to_owned());
        // A subagent's messages are not places of the session's
        // conversation (`--resume-session-at` cannot name them).
        let uuid = match &self.parent {
            Some(_) => uuid(),
            None => super::checkpoints::assistant_uuid(&self.session_id, &self.send_id, &anchor),
        };
        let parent_tool_use_id = self.parent.clone();
        Out::Assistant(AssistantMsg { message, parent_tool_use_id, session_id: self.session_id.clone(), uuid })
    }

    /// The Claude id of the last tool call started and not ended (the one
    /// a permission request is about).
    pub fn last_call_id(&self) -> String {
        self.last_started.clone()
    }

    /// The messages event `event` becomes.
    pub fn event(&mut self, event: &Event) -> Vec<Out> {
        let mut out = Vec::new();
        match event {
            Event::ContentDelta { text } => {
                if self.partial {
                    if self.open.is_none() {
                        out.push(self.stream(StreamEvent::MessageStart { message: self.body(Vec::new(), None) }));
                        let start = Block::Text { text: String::new() };
                        out.push(self.stream(StreamEvent::ContentBlockStart { index: 0, content_block: start }));
                        self.open = Some(0);
                    }
                    let delta = TextDelta { kind: "text_delta", text: text.clone() };
                    out.push(self.stream(StreamEvent::ContentBlockDelta { index: 0, delta }));
                }
                self.text.push_str(text);
            }
            Event::ToolStart { name, args, call_id } => {
                let pirn_call = call_id.clone().unwrap_or_default();
                self.anchor = format!("text:{pirn_call}");
                self.flush(&mut out, Some("tool_use"));
                self.anchor = format!("call:{pirn_call}");
                self.next_call += 1;
                let id = call_id.clone().unwrap_or_else(|| format!("toolu_pirn_{}", self.next_call));
                let input = if name == crate::tools::todo::NAME { todo_input(args) } else { args.clone() };
                let block = Block::ToolUse { id: id.clone(), name: claude_name(name).to_owned(), input };
                out.push(self.assistant(block, Some("tool_use")));
                self.message_id = new_message_id();
                id.clone_into(&mut self.last_started);
                self.calls.push(Call { pirn_id: call_id.clone(), id, name: name.clone(), input: args.clone() });
            }
            Event::ToolEnd { name, result_preview, call_id, is_error, .. } => {
                if let Some(pirn_id) = call_id.as_deref() {
                    self.end_child(pirn_id, &mut out);
                }
                let at = self.calls.iter().position(|c| c.pirn_id == *call_id && c.name == *name);
                let id = at.map(|i| self.calls.remove(i).id).unwrap_or_else(|| call_id.clone().unwrap_or_default());
                let block = Block::ToolResult {
                    tool_use_id: id,
                    content: result_preview.clone(),
                    is_error: is_error.unwrap_or(false),
                };
                out.push(Out::User(UserMsg {
                    message: UserBody { role: "user", content: vec![block] },
                    parent_tool_use_id: self.parent.clone(),
                    session_id: self.session_id.clone(),
                    uuid: uuid(),
                }));
            }
            // A side call's usage is the result's `side_calls`, not a message's.
            Event::Usage { usage, side_call: None } => self.usage = Some(ClaudeUsage::from(usage)),
            Event::ModelFallback { model, fallback, reason } => {
                out.push(Out::Fallback(Box::new(super::wire::SystemFallback {
                    subtype: "model_fallback",
                    model: model.clone(),
                    fallback_model: fallback.clone(),
                    reason: reason.clone(),
                    session_id: self.session_id.clone(),
                    uuid: uuid(),
                })));
            }
            Event::PermissionDenied { name, .. } => {
                let last = self.calls.iter().rev().find(|c| c.name == *name);
                let (id, input) = last.map(|c| (c.id.clone(), c.input.clone())).unwrap_or_default();
                self.denials.push(PermissionDenial {
                    tool_name: claude_name(name).to_owned(),
                    tool_use_id: id,
                    tool_input: input,
                });
            }
            _ => {}
        }
        out
    }

    /// Ends the text block being streamed: its assistant message, and the
    /// end of the partial message.
    fn flush(&mut self, out: &mut Vec<Out>, stop: Option<&str>) {
        if let Some(index) = self.open.take() {
            out.push(self.stream(StreamEvent::ContentBlockStop { index }));
            let delta = ClaudeMessageDelta { stop_reason: stop.map(str::to_owned), stop_sequence: None };
            out.push(self.stream(StreamEvent::ClaudeMessageDelta { delta, usage: ClaudeUsage::default() }));
            out.push(self.stream(StreamEvent::MessageStop));
        }
        if !self.text.trim().is_empty() {
            let text = std::mem::take(&mut self.text);
            out.push(self.assistant(Block::Text { text }, stop));
        }
        self.text.clear();
    }

    /// The messages that end the turn: the last text, then `result`.
    pub fn finish(mut self, r: &SendResult) -> (Vec<Out>, ResultMsg) {
        let mut out = Vec::new();
        self.flush(&mut out, Some("end_turn"));
        let result = result_msg(r, &self.session_id, self.started, std::mem::take(&mut self.denials));
        (out, result)
    }
}

/// A serde enum's wire name (`max_iterations`, `cancelled`, …).
fn snake(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

/// One step of Claude Code's `TodoWrite` input.
#[derive(serde::Serialize)]
struct ClaudeTodo {
    content: String,
    status: crate::wire::TodoStatus,
    #[serde(rename = "activeForm")]
    active_form: String,
}

/// `TodoWrite`'s input: `{todos: [ClaudeTodo]}`.
#[derive(serde::Serialize)]
struct ClaudeTodos {
    todos: Vec<ClaudeTodo>,
}

/// A `todo_write` call's input in Claude Code's `TodoWrite` shape
/// (`activeForm` the step itself when the model gave none); arguments that
/// are not a plan as the model sent them.
fn todo_input(args: &Value) -> Value {
    let Ok((todos, _)) = crate::tools::todo::parse(&args.to_string()) else { return args.clone() };
    let todos = todos
        .into_iter()
        .map(|t| ClaudeTodo {
            active_form: t.active_form.unwrap_or_else(|| t.content.clone()),
            content: t.content,
            status: t.status,
        })
        .collect();
    serde_json::to_value(ClaudeTodos { todos }).unwrap_or_else(|_| args.clone())
}

fn new_message_id() -> String {
    format!("msg_{}", uuid::Uuid::new_v4().simple())
}

/// Claude Code's `result` for pirn's `r`: `success` when the send ended
/// well, `error_max_turns` when it ran out of model calls,
/// `error_max_structured_output_retries` when the answer never matched
/// the schema, `error_max_budget_usd` when the cost budget was spent, else `error_during_execution` (pirn's error in `errors`).
pub fn result_msg(r: &SendResult, session_id: &str, started: Instant, denials: Vec<PermissionDenial>) -> ResultMsg {
    let code = r.error.as_ref().map(|e| e.code);
    let ok = r.status == Status::Ok;
    let subtype = if ok {
        "success"
    } else if code == Some(ErrorCode::MaxIterations) || r.stop_reason == Some(StopReason::MaxIterations) {
        "error_max_turns"
    } else if code == Some(ErrorCode::OutputInvalid) {
        "error_max_structured_output_retries"
    } else if code == Some(ErrorCode::BudgetExceeded) {
        "error_max_budget_usd"
    } else {
        "error_during_execution"
    };
    let stop = r.stop_reason.as_ref().map(snake);
    ResultMsg {
        subtype,
        is_error: !ok,
        duration_ms: r.total_latency_ms.unwrap_or_else(|| started.elapsed().as_millis() as u64),
        duration_api_ms: r.model_latency_ms.unwrap_or(0),
        num_turns: r.iterations,
        result: if ok { Some(r.response.clone().unwrap_or_default()) } else { r.response.clone() },
        session_id: session_id.to_owned(),
        total_cost_usd: r.session_cost_usd.or_else(|| r.usage.as_ref().and_then(|u| u.cost_usd)),
        usage: r.usage.as_ref().map(ClaudeUsage::from).unwrap_or_default(),
        model_usage: serde_json::Map::new(),
        permission_denials: denials,
        structured_output: r.structured_output.clone(),
        errors: r.error.iter().map(|e| format!("{}: {}", snake(&e.code), e.message)).collect(),
        stop_reason: stop,
        side_calls: r.side_calls.as_ref().map(ClaudeSideCalls::from),
        uuid: uuid(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_then_a_tool_call_then_its_result_then_text() {
        let mut t = ClaudeTurn::new("s1", "m", true);
        let mut lines = Vec::new();
        lines.extend(t.event(&Event::ContentDelta { text: "Look".into() }));
        lines.extend(t.event(&Event::ToolStart {
            name: "read_file".into(),
            args: json!({"path": "a"}),
            call_id: Some("c1".into()),
        }));
        lines.extend(t.event(&Event::ToolEnd {
            name: "read_file".into(),
            result_preview: "x".into(),
            duration_ms: None,
            call_id: Some("c1".into()),
            is_error: None,
            diff: None,
            output: None,
        }));
        let v: Vec<Value> = lines.iter().map(|l| serde_json::to_value(l).unwrap()).collect();
        let kinds: Vec<&str> = v.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "stream_event",
                "stream_event",
                "stream_event",
                "stream_event",
                "stream_event",
                "stream_event",
                "assistant",
                "assistant",
                "user"
            ]
        );
        assert_eq!(v[6]["message"]["content"][0], json!({"type": "text", "text": "Look"}));
        assert_eq!(v[7]["message"]["content"][0]["name"], "Read");
        assert_eq!(v[8]["message"]["content"][0]["tool_use_id"], "c1");
    }

    #[test]
    fn a_model_calls_usage_goes_on_the_first_assistant_message_after_it_once_and_a_side_calls_on_none() {
        let mut t = ClaudeTurn::new("s1", "m", false);
        let usage =
            crate::wire::Usage { prompt_tokens: 900, completion_tokens: 12, total_tokens: 912, ..Default::default() };
        let start = |id: &str| Event::ToolStart { name: "glob".into(), args: json!({}), call_id: Some(id.into()) };
        let side = crate::wire::Usage { prompt_tokens: 7, ..Default::default() };
        let mut lines = t.event(&Event::Usage { usage, side_call: None });
        lines.extend(t.event(&Event::Usage { usage: side, side_call: Some(true) }));
        lines.extend(t.event(&start("c1")));
        lines.extend(t.event(&start("c2")));
        let v: Vec<Value> = lines.iter().map(|l| serde_json::to_value(l).unwrap()).collect();
        assert_eq!(
            (v[0]["message"]["usage"]["input_tokens"].as_u64(), v[0]["message"]["usage"]["output_tokens"].as_u64()),
            (Some(900), Some(12))
        );
        assert_eq!(v[1]["message"]["usage"]["input_tokens"], 0, "counted once: {v:?}");
    }
}
