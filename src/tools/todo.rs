//! `todo_write`: the model's plan of the task, a list of steps with their
//! status, which the client shows as it changes (0.3.0 `plan` events).
//!
//! Owns the tool's name, description and arguments, and reading a call's
//! arguments into the plan ([`parse`]). The tool touches nothing in the
//! workspace: the agent records the plan in the conversation and emits the
//! `plan` event (`agent::tool_call`); where a plan lives and how a resumed
//! or forked session finds it is `conversation::plan`.
//!
//! Source of the semantics: the plan tools of Claude Code (`TodoWrite`:
//! the whole list each time, statuses pending, in progress, completed) and
//! Codex (`update_plan`), as their public documentation describes them.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::wire::{TodoItem, TodoStatus};

/// The tool's name, as the model calls it.
pub const NAME: &str = "todo_write";

/// What the model reads about the tool.
pub const DESCRIPTION: &str = "Keep a plan of the current task as a list of steps, each pending, in_progress or \
completed; the user sees it. Send the whole list each time: it replaces the previous one. Use it for work of \
three or more steps, not for a question or a one-step change. Mark a step in_progress before you start it and \
completed as soon as it is done; keep one step in_progress at a time.";

/// Most steps one plan may hold.
pub const MAX_STEPS: usize = 100;

/// Most characters of one step.
pub const MAX_STEP_CHARS: usize = 500;

/// `todo_write`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Args {
    /// The whole plan, in order: every step with its status.
    pub todos: Vec<Step>,
}

/// One step as the model sends it.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Step {
    /// The step, in the imperative ("Run the tests").
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: TodoStatus,
    /// The step as it is being done ("Running the tests"); optional.
    #[serde(default, alias = "activeForm")]
    pub active_form: Option<String>,
}

/// Reads a call's raw JSON arguments into the plan and the text the model
/// gets back. Errors: the text of an error result (arguments that are not
/// the tool's, an empty or over-long step, more than [`MAX_STEPS`] steps),
/// which leaves the plan as it was.
pub fn parse(arguments: &str) -> Result<(Vec<TodoItem>, String), String> {
    let args: Args = serde_json::from_str(if arguments.trim().is_empty() { "{}" } else { arguments }).map_err(|e| {
        format!("invalid arguments: {e}. Send {{\"todos\": [{{\"content\": \"…\", \"status\": \"pending\"}}, …]}}")
    })?;
    if args.todos.len() > MAX_STEPS {
        return Err(format!("the plan has {} steps; at most {MAX_STEPS} are kept", args.todos.len()));
    }
    let mut todos = Vec::with_capacity(args.todos.len());
    for (i, step) in args.todos.into_iter().enumerate() {
        let content = step.content.trim();
        if content.is_empty() || content.chars().count() > MAX_STEP_CHARS {
            return Err(format!("step {} must say what it is in 1 to {MAX_STEP_CHARS} characters", i + 1));
        }
        let active_form = step.active_form.map(|a| a.trim().to_owned()).filter(|a| !a.is_empty());
        if active_form.as_ref().is_some_and(|a| a.chars().count() > MAX_STEP_CHARS) {
            return Err(format!("step {}'s active_form is over {MAX_STEP_CHARS} characters", i + 1));
        }
        todos.push(TodoItem { content: content.to_owned(), status: step.status, active_form });
    }
    let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
    let text = if todos.is_empty() {
        "Plan cleared.".to_owned()
    } else {
        format!(
            "Plan updated: {} steps ({} completed, {} in progress, {} pending).",
            todos.len(),
            count(TodoStatus::Completed),
            count(TodoStatus::InProgress),
            count(TodoStatus::Pending)
        )
    };
    Ok((todos, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_whole_list_in_either_spelling() {
        let args = r#"{"todos": [
            {"content": " Read the config ", "status": "completed"},
            {"content": "Fix the timeout", "status": "in_progress", "activeForm": "Fixing the timeout"},
            {"content": "Run the tests", "status": "pending", "active_form": ""}]}"#;
        let (todos, text) = parse(args).unwrap();
        assert_eq!(todos.len(), 3);
        assert_eq!(todos[0].content, "Read the config");
        assert_eq!(todos[1].active_form.as_deref(), Some("Fixing the timeout"));
        assert_eq!(todos[2].active_form, None);
        assert_eq!(text, "Plan updated: 3 steps (1 completed, 1 in progress, 1 pending).");
        assert_eq!(parse(r#"{"todos": []}"#).unwrap().1, "Plan cleared.");
    }

    #[test]
    fn refuses_what_is_not_a_plan() {
        assert!(parse("").unwrap_err().contains("invalid arguments"));
        assert!(parse(r#"{"todos": [{"content": "x", "status": "done"}]}"#).unwrap_err().contains("invalid"));
        assert!(parse(r#"{"todos": [{"content": "  ", "status": "pending"}]}"#).unwrap_err().contains("step 1"));
        let many: Vec<String> =
            (0..=MAX_STEPS).map(|i| format!(r#"{{"content":"s{i}","status":"pending"}}"#)).collect();
        assert!(parse(&format!(r#"{{"todos":[{}]}}"#, many.join(","))).unwrap_err().contains("at most"));
    }
}
