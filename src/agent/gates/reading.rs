//! The model's yes-or-no reading of one text, for the gates that need to
//! know what was asked or what was said without pirn reading words.
//!
//! Owns: [`yes_no`], one short side call (no tools, no conversation, an
//! answer of at most 16 tokens held to `{"<key>": boolean}` by
//! `response_format`, a grammar on llama.cpp) whose usage, tokens and model
//! time are the send's ([`crate::agent::outcome::side_call`]), and
//! [`quiet`], the facts under which a reading is worth its call.

use serde_json::{Value, json};

use crate::agent::cx::SendCx;
use crate::agent::mode::Mode;
use crate::agent::outcome::side_call;

/// The longest text shown to a reading call, in bytes (the head of a
/// longer one).
pub const MAX_SHOWN_BYTES: usize = 4000;

/// True when a final answer came from a send that could have written a
/// file and changed nothing the facts can see: no file changed (a write
/// held back is not on disk), no command ran, no call denied; an ordinary
/// turn (not a wrap-up), no `output_schema`, token budget not spent, the
/// fact gates on.
pub(super) fn quiet(cx: &SendCx<'_>) -> bool {
    let can_write = cx.config.tools.iter().any(|t| crate::tools::writes_text(t));
    let facts = &cx.facts;
    cx.checks
        && can_write
        && !facts.wrote()
        && facts.ran.is_empty()
        && facts.denied == 0
        && cx.mode == Mode::Work
        && cx.spec.output.is_none()
        && !cx.spec.meter.tokens_spent()
}

/// What one reading asks: the instructions, the label the text is shown
/// under, the question after it, and the JSON key of the boolean answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask {
    pub system: &'static str,
    pub label: &'static str,
    pub question: &'static str,
    pub key: &'static str,
}

/// The model's answer to `ask` about `text` (its head, when long):
/// `Some(b)` when it answered `{"<key>": b}`; `None` when the call failed
/// or its answer was not that JSON (a reading that cannot be had lets the
/// answer through).
pub(super) async fn yes_no(cx: &mut SendCx<'_>, ask: Ask, text: &str) -> Option<bool> {
    let body = serde_json::to_vec(&request(&cx.config.model, cx.config.temperature, ask, text)).ok()?;
    let said = match side_call(cx.config, body.into(), cx.emit, cx.stats).await {
        Ok(said) => said,
        Err(e) => {
            tracing::info!(key = ask.key, "a reading call failed: {e}");
            return None;
        }
    };
    let said: Value = serde_json::from_str(said.trim()).ok()?;
    let answer = said.get(ask.key)?.as_bool()?;
    tracing::info!(key = ask.key, answer, "the model's reading");
    Some(answer)
}

/// The reading call's body: `ask.system`, then one user message with
/// `ask.label`, the head of `text` and `ask.question`; no tools; at most 16
/// tokens held to `{"<key>": boolean}`.
fn request(model: &str, temperature: Option<f32>, ask: Ask, text: &str) -> Value {
    let mut end = text.len().min(MAX_SHOWN_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let user = format!("{}:\n{}\n\n{} Answer with JSON.", ask.label, &text[..end], ask.question);
    json!({
        "model": model,
        "messages": [{"role": "system", "content": ask.system}, {"role": "user", "content": user}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": temperature.unwrap_or(0.0),
        "max_tokens": 16,
        "response_format": {"type": "json_schema", "json_schema": {"name": ask.key, "schema": {
            "type": "object",
            "properties": {ask.key: {"type": "boolean"}},
            "required": [ask.key],
        }}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_shows_only_the_head_of_a_long_text() {
        let long = "é".repeat(3000);
        let ask = Ask { system: "sys", label: "Request", question: "Is it?", key: "changes_files" };
        let body = request("m", None, ask, &long);
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.starts_with("Request:\n") && user.ends_with("Is it? Answer with JSON."), "{user}");
        assert!(user.len() < MAX_SHOWN_BYTES + 100, "{}", user.len());
        assert_eq!(body["max_tokens"], 16);
        assert_eq!(body["response_format"]["json_schema"]["schema"]["required"][0], "changes_files");
        assert!(body.get("tools").is_none());
    }
}
