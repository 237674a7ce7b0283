//! Gate: an answer that changed nothing, to a request the model reads as
//! asking for a change.
//!
//! Reads: that no file changed in the send and no command ran
//! ([`crate::agent::facts::Facts`]), and the model's own reading of the
//! request: one short extra call that shows the model only the request and
//! holds its answer to `{"changes_files": boolean}` (`response_format`, a
//! grammar on llama.cpp). pirn reads no word of the request itself; the
//! model says what was asked and the facts say what happened. May: when
//! the model says the request asks for a change, send it back once, its
//! next request made with `tool_choice: "required"` ([`Mode::Act`]); the
//! answer after that goes on whatever it does.
//!
//! On with `request_check: true` (off by default; `answer_checks: false`
//! turns it off too), and it never
//! asks when the send cannot write (no `write_file`/`edit_file`, a write
//! denied, plan mode), has an `output_schema`, or wraps up. Any failure of
//! the extra call (refused, unreadable, not JSON) lets the answer through.
//! The request is read at most once per send ([`Reading`]), and the reading
//! counts like a turn: its usage, tokens, cost and model time are the
//! send's ([`crate::agent::outcome::side_call`]).

use serde_json::{Value, json};

use super::Verdict;
use crate::agent::cx::SendCx;
use crate::agent::mode::Mode;
use crate::agent::outcome::side_call;

/// What the model is told when it reads the request as asking for a change.
pub const NOTE: &str = "No file has changed in this send: nothing you described is in the files yet. If the request \
     asks for a change to files, call edit_file or write_file now to make it. If it asks only for information, call \
     read_file or grep for what you need, then answer.";

/// The reading call's instructions.
const SYSTEM: &str = "You sort requests made to a coding assistant that works in a project's files. Decide \
     whether doing what the request asks means creating, editing or deleting files, or only reading files, \
     running commands and answering in words.";

/// The longest request shown to the reading call, in bytes (the head of a
/// longer one).
const MAX_REQUEST_BYTES: usize = 4000;

pub(super) async fn review(cx: &mut SendCx<'_>) -> Verdict {
    let can_write = cx.config.tools.iter().any(|t| t == "write_file" || t == "edit_file");
    let facts = &cx.facts;
    let quiet = !facts.wrote() && facts.ran.is_empty() && facts.denied == 0 && facts.held_back.is_empty();
    if !cx.checks
        || !cx.config.request_check
        || !can_write
        || !quiet
        || cx.mode != Mode::Work
        || cx.spec.output.is_some()
        || cx.spec.meter.tokens_spent()
    {
        return Verdict::Pass;
    }
    // Read once per send: a later answer (after a verify round, a Stop
    // hook, or the one round this gate gave) is held against the same
    // reading, and a failed call is not made again.
    if cx.reading == Reading::NotYet {
        cx.reading = match asks_for_change(cx).await {
            Some(changes) => Reading::ChangesFiles(changes),
            None => Reading::Failed,
        };
    }
    if cx.reading == Reading::ChangesFiles(true) && cx.fire_once("asked") {
        return Verdict::Again { note: NOTE.to_owned(), mode: Mode::Act };
    }
    Verdict::Pass
}

/// The model's reading of a send's request, made at most once per send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reading {
    /// Not asked yet.
    #[default]
    NotYet,
    /// The reading call failed or did not answer the JSON asked for.
    Failed,
    /// The model said whether the request asks for files to change.
    ChangesFiles(bool),
}

/// The model's reading of the send's request: `Some(true)` when it says the
/// request asks for files to change; `None` when the call failed or its
/// answer was not the JSON asked for.
async fn asks_for_change(cx: &mut SendCx<'_>) -> Option<bool> {
    let body = serde_json::to_vec(&reading_request(&cx.config.model, cx.config.temperature, cx.request)).ok()?;
    let text = match side_call(cx.config, body.into(), cx.emit, cx.stats).await {
        Ok(text) => text,
        Err(e) => {
            tracing::info!("the request's reading call failed: {e}");
            return None;
        }
    };
    let said: Value = serde_json::from_str(text.trim()).ok()?;
    let changes = said.get("changes_files")?.as_bool()?;
    tracing::info!(changes, "the model read the request");
    Some(changes)
}

/// The reading call: the request alone (its head, when long), no tools,
/// an answer of at most 16 tokens held to `{"changes_files": boolean}`.
fn reading_request(model: &str, temperature: Option<f32>, request: &str) -> Value {
    let mut end = request.len().min(MAX_REQUEST_BYTES);
    while !request.is_char_boundary(end) {
        end -= 1;
    }
    let user = format!(
        "Request:\n{}\n\nDoes this request ask for a change to the project's files (true), or only for information in \
         words (false)? Answer with JSON.",
        &request[..end]
    );
    json!({
        "model": model,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": temperature.unwrap_or(0.0),
        "max_tokens": 16,
        "response_format": {"type": "json_schema", "json_schema": {"name": "request", "schema": {
            "type": "object",
            "properties": {"changes_files": {"type": "boolean"}},
            "required": ["changes_files"],
        }}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reading_call_shows_only_the_head_of_a_long_request() {
        let long = "é".repeat(3000);
        let body = reading_request("m", None, &long);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.len() < MAX_REQUEST_BYTES + 300, "{}", user.len());
        assert_eq!(body["max_tokens"], 16);
        assert_eq!(body["response_format"]["json_schema"]["schema"]["required"][0], "changes_files");
    }
}
