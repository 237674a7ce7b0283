//! pirn's events of one send as the Codex SDK's thread items.
//!
//! Owns: [`CodexTurn`], the state of the one turn `pirn exec` runs: the text
//! streamed since the last tool call (an `agent_message` once a call
//! starts), the items open by pirn call id, the plan's `todo_list` item,
//! and the turn's end (`turn.completed` or `turn.failed`) built from the
//! send's result. Which tool becomes which item:
//!
//! | pirn | Codex item |
//! |---|---|
//! | `bash` | `command_execution` (started, updated with output, completed with the exit code) |
//! | `write_file`, `edit_file` | `file_change` (completed: `add` for a new file, else `update`) |
//! | `mcp__SERVER__TOOL` | `mcp_tool_call` with `server`, `tool` |
//! | `read_file`, `glob`, `grep` | `mcp_tool_call` with `server` `pirn` |
//! | `todo_write` (its `plan` events) | `todo_list` (started, updated, completed at the turn's end) |
//! | a retried model request | a top-level `error` event (the turn goes on) |
//! | a store failure | an `error` item |

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::events::{
    FileUpdateChange, ItemDetails, ItemStatus, McpResult, ThreadError, ThreadEvent, ThreadItem, ThreadSideCalls,
    ThreadUsage, TodoEntry,
};
use crate::wire::{ErrorCode, Event, SendResult, Status, TodoStatus};

/// The most of a running command's output `item.updated` carries (the
/// completed item has the whole result).
const LIVE_CAP: usize = 64 * 1024;

/// One turn being translated.
pub struct CodexTurn {
    /// The workspace (whether a written file existed before).
    cwd: PathBuf,
    next_item: u32,
    text: String,
    open: HashMap<String, ThreadItem>,
    todo: Option<ThreadItem>,
    usage: ThreadUsage,
    /// The last `agent_message` written.
    pub last_message: Option<String>,
}

impl CodexTurn {
    /// A turn in workspace `cwd`.
    pub fn new(cwd: &Path) -> CodexTurn {
        CodexTurn {
            cwd: cwd.to_owned(),
            next_item: 0,
            text: String::new(),
            open: HashMap::new(),
            todo: None,
            usage: ThreadUsage::default(),
            last_message: None,
        }
    }

    fn item(&mut self, details: ItemDetails) -> ThreadItem {
        let id = format!("item_{}", self.next_item);
        self.next_item += 1;
        ThreadItem { id, details }
    }

    /// The text streamed since the last call, as a completed message.
    fn flush_text(&mut self) -> Option<ThreadEvent> {
        let text = std::mem::take(&mut self.text);
        if text.trim().is_empty() {
            return None;
        }
        self.last_message = Some(text.clone());
        Some(ThreadEvent::ItemCompleted { item: self.item(ItemDetails::AgentMessage { text }) })
    }

    /// The lines one pirn event makes.
    pub fn event(&mut self, event: &Event) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        match event {
            Event::ContentDelta { text } => self.text.push_str(text),
            Event::ToolStart { name, args, call_id } => {
                out.extend(self.flush_text());
                if name == crate::tools::todo::NAME {
                    return out;
                }
                let details = start_details(name, args, &self.cwd);
                let item = self.item(details);
                if !matches!(item.details, ItemDetails::FileChange { .. }) {
                    out.push(ThreadEvent::ItemStarted { item: item.clone() });
                }
                self.open.insert(call_id.clone().unwrap_or_default(), item);
            }
            Event::ToolOutput { call_id, text, .. } => {
                if let Some(item) = self.open.get_mut(call_id)
                    && let ItemDetails::CommandExecution { aggregated_output, .. } = &mut item.details
                    && aggregated_output.len() < LIVE_CAP
                {
                    aggregated_output.push_str(text);
                    out.push(ThreadEvent::ItemUpdated { item: item.clone() });
                }
            }
            Event::ToolEnd { call_id, is_error, result_preview, output, diff, .. } => {
                let Some(mut item) = self.open.remove(call_id.as_deref().unwrap_or_default()) else { return out };
                let text = output.as_deref().unwrap_or(result_preview).to_owned();
                let failed = is_error.unwrap_or(false);
                let created = diff.as_ref().map(|d| d.old_text.is_none());
                end_details(&mut item.details, text, failed, created);
                out.push(ThreadEvent::ItemCompleted { item });
            }
            Event::Plan { todos } => {
                let items = todos
                    .iter()
                    .map(|t| TodoEntry { text: t.content.clone(), completed: t.status == TodoStatus::Completed })
                    .collect();
                match &mut self.todo {
                    Some(item) => {
                        item.details = ItemDetails::TodoList { items };
                        out.push(ThreadEvent::ItemUpdated { item: item.clone() });
                    }
                    None => {
                        let item = self.item(ItemDetails::TodoList { items });
                        out.push(ThreadEvent::ItemStarted { item: item.clone() });
                        self.todo = Some(item);
                    }
                }
            }
            // Every call's, side calls' too: `turn.completed.usage` is the total.
            Event::Usage { usage: u, .. } => {
                self.usage.input_tokens += u.prompt_tokens;
                self.usage.cached_input_tokens += u.cached_tokens.unwrap_or(0);
                self.usage.output_tokens += u.completion_tokens;
            }
            Event::Retry { attempt, wait_ms, status } => {
                let status = status.map_or_else(|| "no answer".to_owned(), |s| format!("HTTP {s}"));
                let message = format!("the model request failed ({status}); try {attempt} in {wait_ms} ms");
                out.push(ThreadEvent::Error { message });
            }
            Event::StoreError { message } => {
                let message = format!("the session could not be stored: {message}");
                out.push(ThreadEvent::ItemCompleted { item: self.item(ItemDetails::Error { message }) });
            }
            _ => {}
        }
        out
    }

    /// The lines that end the turn: the final message, the plan's item
    /// completed, then `turn.completed` (usage, iterations, side calls) or
    /// `turn.failed`.
    pub fn finish(&mut self, r: &SendResult) -> Vec<ThreadEvent> {
        let mut out = Vec::new();
        let open: Vec<ThreadItem> = self.open.drain().map(|(_, i)| i).collect();
        for mut item in open {
            end_details(&mut item.details, "not finished: the turn ended".to_owned(), true, None);
            out.push(ThreadEvent::ItemCompleted { item });
        }
        if r.status == Status::Ok {
            let text = match &r.structured_output {
                Some(doc) => doc.to_string(),
                None => r.response.clone().unwrap_or_else(|| std::mem::take(&mut self.text)),
            };
            self.text = text;
        }
        out.extend(self.flush_text());
        if let Some(item) = self.todo.take() {
            out.push(ThreadEvent::ItemCompleted { item });
        }
        if let Some(u) = &r.usage {
            self.usage = ThreadUsage::from(u);
        }
        match (r.status, r.error.as_ref()) {
            (Status::Ok, _) => out.push(ThreadEvent::TurnCompleted {
                usage: self.usage.clone(),
                iterations: r.iterations,
                side_calls: r
                    .side_calls
                    .as_ref()
                    .map(|s| ThreadSideCalls { calls: s.calls, usage: ThreadUsage::from(&s.usage) }),
            }),
            // An interrupted turn ends without a word, as Codex's does.
            (Status::Error, Some(e)) if e.code == ErrorCode::Cancelled => {}
            (Status::Error, e) => {
                let message = e.map_or_else(|| "the turn failed".to_owned(), |e| e.message.clone());
                out.push(ThreadEvent::Error { message: message.clone() });
                out.push(ThreadEvent::TurnFailed { error: ThreadError { message } });
            }
        }
        out
    }
}

/// The item a starting call opens.
fn start_details(name: &str, args: &Value, cwd: &Path) -> ItemDetails {
    let arg = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    match name {
        "bash" => ItemDetails::CommandExecution {
            command: arg("command"),
            aggregated_output: String::new(),
            exit_code: None,
            status: ItemStatus::InProgress,
        },
        "write_file" | "edit_file" => {
            let path = ["path", "file_path"].iter().map(|k| arg(k)).find(|p| !p.is_empty()).unwrap_or_default();
            // Known before the call runs: whether the file is there.
            let kind = if name == "write_file" && !cwd.join(&path).exists() { "add" } else { "update" };
            ItemDetails::FileChange { changes: vec![FileUpdateChange { path, kind }], status: ItemStatus::InProgress }
        }
        _ => {
            let (server, tool) = match name.strip_prefix(crate::mcp::client::PREFIX).and_then(|r| r.split_once("__")) {
                Some((server, tool)) => (server.to_owned(), tool.to_owned()),
                None => ("pirn".to_owned(), name.to_owned()),
            };
            ItemDetails::McpToolCall {
                server,
                tool,
                arguments: args.clone(),
                result: None,
                error: None,
                status: ItemStatus::InProgress,
            }
        }
    }
}

/// Ends an item with the call's result `text`. `created`: the call's diff
/// says whether the file was new.
fn end_details(details: &mut ItemDetails, text: String, failed: bool, created: Option<bool>) {
    match details {
        ItemDetails::CommandExecution { aggregated_output, exit_code, status, .. } => {
            *exit_code = crate::tools::bash::exit_code_of(&text);
            *status = if !failed && *exit_code == Some(0) { ItemStatus::Completed } else { ItemStatus::Failed };
            // The output alone, as Codex shows it: pirn's `[exit code N]`
            // line is the item's `exit_code`.
            *aggregated_output = match text.trim_end().rsplit_once('\n') {
                Some((output, last)) if exit_code.is_some() && last.starts_with("[exit code ") => format!("{output}\n"),
                None if exit_code.is_some() && text.starts_with("[exit code ") => String::new(),
                _ => text,
            };
        }
        ItemDetails::FileChange { changes, status } => {
            if let (Some(created), Some(change)) = (created, changes.first_mut()) {
                change.kind = if created { "add" } else { "update" };
            }
            *status = if failed { ItemStatus::Failed } else { ItemStatus::Completed };
        }
        ItemDetails::McpToolCall { result, error, status, .. } => {
            if failed {
                *error = Some(ThreadError { message: text });
                *status = ItemStatus::Failed;
            } else {
                *result = Some(McpResult {
                    content: vec![json!({"type": "text", "text": text})],
                    structured_content: Value::Null,
                });
                *status = ItemStatus::Completed;
            }
        }
        _ => {}
    }
}
