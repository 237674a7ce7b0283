//! The model's yes-or-no reading of one text, for the gates that need to
//! know what was asked or what was said without pirn reading words
//! (`claimed`, `asked`), and for the hold before a write
//! ([`crate::agent::request_reading::hold_write`]).
//!
//! Owns: [`yes_no`], one short side call (no tools, no conversation, an
//! answer of at most 16 tokens held to `{"<key>": boolean}` by
//! `response_format`, a grammar on llama.cpp) whose usage, tokens and model
//! time are the send's ([`crate::agent::outcome::side_call`]), and
//! [`quiet`], the facts under which a reading is worth its call.

use serde_json::{Value, json};

use crate::agent::mode::Mode;
use crate::agent::outcome::side_call;
use crate::agent::send_state::SendState;

/// The longest text shown to a reading call, in bytes: a longer one is
/// shown as its first and last `MAX_SHOWN_BYTES / 2` bytes around a
/// `[…]` line (a long request often opens with background and ends with
/// what it asks).
pub const MAX_SHOWN_BYTES: usize = 4000;

/// True when a final answer came from a send that could have written a
/// file and changed nothing the facts can see: no file changed (a write
/// held back is not on disk), no command ran, no call denied; an ordinary
/// turn, or the one that had to call a tool and answered in words anyway
/// (a provider that does not hold the model to `tool_choice: "required"`;
/// not a wrap-up), no `output_schema`, token budget not spent, the fact
/// gates on.
pub(super) fn quiet(cx: &SendState<'_>) -> bool {
    let can_write = cx.config.tools.iter().any(|t| crate::tools::writes_text(t));
    let facts = &cx.facts;
    cx.checks
        && can_write
        && !facts.wrote()
        && facts.ran.is_empty()
        && facts.denied == 0
        && matches!(cx.mode, Mode::Work | Mode::Act)
        && cx.spec.output.is_none()
        && cx.spec.meter.at(crate::agent::budget::BudgetPoint::BeforeCall, false)
            == crate::agent::budget::BudgetCall::Go
}

/// What one reading asks: the instructions, the label the text is shown
/// under, the question after it, the JSON key of the boolean answer, and
/// worked examples (a text and its right answer), shown to the model as
/// earlier turns of the same exchange before the text itself.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask {
    pub system: &'static str,
    pub label: &'static str,
    pub question: &'static str,
    pub key: &'static str,
    pub examples: &'static [(&'static str, bool)],
}

/// The model's answer to `ask` about `text` (its ends, when long):
/// `Some(b)` when it answered `{"<key>": b}`; `None` when the call failed
/// or its answer was not that JSON (a reading that cannot be had lets the
/// answer through).
pub(super) async fn yes_no(cx: &mut SendState<'_>, ask: Ask, text: &str) -> Option<bool> {
    let mut body = request(&cx.config.model, cx.config.temperature, ask, text);
    if cx.conv.budget.no_response_format
        && let Some(o) = body.as_object_mut()
    {
        o.remove("response_format");
    }
    let body = serde_json::to_vec(&body).ok()?;
    let said = match side_call(cx.config, body.into(), cx.emit, cx.stats).await {
        Ok(said) => said,
        Err(e) => {
            tracing::info!(key = ask.key, "a reading call failed: {e}");
            if crate::agent::structured::rejects_response_format(e.status(), &format!("{e} {}", e.details())) {
                // Never sent again this session (a turn learns it the same way).
                cx.conv.budget.no_response_format = true;
            }
            return None;
        }
    };
    let said: Value = serde_json::from_str(said.trim()).ok()?;
    let answer = said.get(ask.key)?.as_bool()?;
    tracing::info!(key = ask.key, answer, "the model's reading");
    Some(answer)
}

/// The reading call's body: `ask.system`; for each of `ask.examples` a
/// user message shown as the text is and the assistant's answer
/// `{"<key>": b}`; then one user message with `ask.label`, `text`
/// ([`shown`]) and `ask.question`; no tools; the session's temperature
/// when it sets one; at most 16 tokens held to `{"<key>": boolean}` (the
/// caller leaves `response_format` out once the provider refused it).
fn request(model: &str, temperature: Option<f32>, ask: Ask, text: &str) -> Value {
    let user = |text: &str| {
        let content = format!("{}:\n{}\n\n{} Answer with JSON.", ask.label, shown(text), ask.question);
        json!({"role": "user", "content": content})
    };
    let mut messages = vec![json!({"role": "system", "content": ask.system})];
    for &(example, answer) in ask.examples {
        messages.push(user(example));
        messages.push(json!({"role": "assistant", "content": format!("{{\"{}\": {answer}}}", ask.key)}));
    }
    messages.push(user(text));
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 16,
        "response_format": {"type": "json_schema", "json_schema": {"name": ask.key, "schema": {
            "type": "object",
            "properties": {ask.key: {"type": "boolean"}},
            "required": [ask.key],
        }}},
    });
    if let Some(t) = temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// `text` as a reading shows it: whole up to [`MAX_SHOWN_BYTES`], else its
/// first and last half of that (cut on character boundaries) around `[…]`.
fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_SHOWN_BYTES {
        return text.into();
    }
    let half = MAX_SHOWN_BYTES / 2;
    let head = crate::tools::floor_char_boundary(text, half);
    let tail = crate::tools::ceil_char_boundary(text, text.len() - half);
    format!("{}\n[…]\n{}", &text[..head], &text[tail..]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_shows_the_ends_of_a_long_text() {
        // Both cuts (byte 2000, and 2000 from the end) fall inside a
        // two-byte character: the head ends before it, the tail starts after.
        let long = format!("a{}{}{}b", "é".repeat(1500), "x".repeat(3000), "ü".repeat(1500));
        let ask = Ask { system: "sys", label: "Request", question: "Is it?", key: "changes_files", examples: &[] };
        let body = request("m", None, ask, &long);
        let user = body["messages"][1]["content"].as_str().unwrap();
        let (head, tail) = user.split_once("\n[…]\n").expect("the marker");
        assert_eq!(head, format!("Request:\na{}", "é".repeat(999)), "the first 1,999 bytes");
        assert_eq!(tail, format!("{}b\n\nIs it? Answer with JSON.", "ü".repeat(999)), "the last 1,999 bytes");
        assert!(user.len() < MAX_SHOWN_BYTES + 100, "{}", user.len());
        let short = "Make f return 2.";
        let body = request("m", None, ask, short);
        assert_eq!(body["messages"][1]["content"], "Request:\nMake f return 2.\n\nIs it? Answer with JSON.");
        assert_eq!(body["max_tokens"], 16);
        assert_eq!(body["response_format"]["json_schema"]["schema"]["required"][0], "changes_files");
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn a_readings_examples_come_first_as_earlier_turns() {
        let examples = &[("What is x?", false), ("Set x to 2.", true)];
        let ask = Ask { system: "sys", label: "Request", question: "Is it?", key: "changes_files", examples };
        let body = request("m", None, ask, "Make f return 2.");
        let shown: Vec<(String, String)> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap().to_owned()))
            .collect();
        let asked = |t: &str| ("user".to_owned(), format!("Request:\n{t}\n\nIs it? Answer with JSON."));
        let said = |b: bool| ("assistant".to_owned(), format!("{{\"changes_files\": {b}}}"));
        assert_eq!(
            shown,
            vec![
                ("system".to_owned(), "sys".to_owned()),
                asked("What is x?"),
                said(false),
                asked("Set x to 2."),
                said(true),
                asked("Make f return 2."),
            ]
        );
    }
}
