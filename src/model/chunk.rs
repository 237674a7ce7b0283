//! One chunk of a chat-completions stream and how it is folded into the
//! answer being assembled.
//!
//! Owns: the borrowed chunk shapes (every field optional, since
//! "compatible" servers omit many), tool-call fragments accumulated by
//! `index`, usage from a final `choices: []` chunk (with OpenRouter's
//! `usage.cost`), mid-stream `error`
//! objects, and the cap on one answer's size ([`MAX_ANSWER_BYTES`]).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;

use super::completion::{Completion, ToolCall};
use super::error::ModelError;
use crate::wire::Usage;

/// Most bytes of text plus tool-call arguments one answer may stream; a
/// server that streams past it without stopping ends the call.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// Highest tool-call `index` accepted in one answer.
pub const MAX_TOOL_CALL_INDEX: usize = 1024;

#[derive(Deserialize)]
struct SseChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChoiceChunk<'a>>,
    #[serde(default)]
    usage: Option<UsageChunk>,
    #[serde(default)]
    error: Option<Value>,
    /// llama.cpp's timings (final chunk): `cache_n` prompt tokens reused.
    #[serde(default)]
    timings: Option<Timings>,
}

#[derive(Deserialize)]
struct Timings {
    #[serde(default)]
    cache_n: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct ChoiceChunk<'a> {
    #[serde(default)]
    index: u32,
    #[serde(default, borrow)]
    delta: Option<DeltaChunk<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct DeltaChunk<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallChunk<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallChunk<'a> {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<FunctionChunk<'a>>,
}

#[derive(Deserialize)]
struct FunctionChunk<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UsageChunk {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    total_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// OpenRouter: what the call cost, in US dollars (credits).
    #[serde(default)]
    cost: Option<f64>,
}

/// Folds one SSE `data:` payload into `acc`; returns its text, if any.
/// `[DONE]` sets `done`.
pub fn apply_event(acc: &mut Completion, data: &[u8], done: &mut bool) -> Result<Option<String>, ModelError> {
    let trimmed = data.trim_ascii();
    if trimmed == b"[DONE]" {
        *done = true;
        return Ok(None);
    }
    if trimmed.is_empty() {
        return Ok(None);
    }
    let chunk: SseChunk<'_> = serde_json::from_slice(trimmed).map_err(|e| {
        let shown: String = String::from_utf8_lossy(&trimmed[..trimmed.len().min(200)]).into_owned();
        ModelError::BadChunk(format!("model stream sent a chunk that is not valid JSON ({e}): {shown}"))
    })?;
    if let Some(err) = chunk.error {
        let message = err.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| err.to_string());
        let status = err.get("code").and_then(Value::as_u64).and_then(|c| u16::try_from(c).ok());
        return Err(ModelError::Remote {
            status,
            message: format!("model server reported an error mid-stream: {message}"),
        });
    }
    if let Some(u) = chunk.usage {
        let total =
            if u.total_tokens == 0 { u.prompt_tokens.saturating_add(u.completion_tokens) } else { u.total_tokens };
        let cached = u.prompt_tokens_details.and_then(|d| d.cached_tokens);
        acc.usage = Some(Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: total,
            cached_tokens: cached,
            cost_usd: u.cost,
        });
    }
    if let (Some(u), Some(cache_n)) = (acc.usage.as_mut(), chunk.timings.and_then(|t| t.cache_n)) {
        u.cached_tokens.get_or_insert(cache_n);
    }
    let streamed = acc.text.len() + acc.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
    if streamed > MAX_ANSWER_BYTES {
        return Err(ModelError::Stream(format!("the model's answer exceeds {MAX_ANSWER_BYTES} bytes")));
    }
    let mut text: Option<String> = None;
    for choice in chunk.choices {
        if choice.index != 0 {
            continue;
        }
        if let Some(reason) = choice.finish_reason {
            acc.finish_reason = Some(reason.into_owned());
        }
        let Some(delta) = choice.delta else { continue };
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            acc.text.push_str(&content);
            match &mut text {
                Some(t) => t.push_str(&content),
                None => text = Some(content.into_owned()),
            }
        }
        for (n, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            let index = call.index.unwrap_or(n);
            if index > MAX_TOOL_CALL_INDEX {
                return Err(ModelError::BadToolIndex(index));
            }
            if acc.tool_calls.len() <= index {
                acc.tool_calls.resize_with(index + 1, ToolCall::default);
            }
            let slot = &mut acc.tool_calls[index];
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                slot.id = id.into_owned();
            }
            if let Some(f) = call.function {
                if let Some(name) = f.name {
                    slot.name.push_str(&name);
                }
                if let Some(args) = f.arguments {
                    slot.arguments.push_str(&args);
                }
            }
        }
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_call_fragments_accumulate_by_index() {
        let mut acc = Completion::default();
        let mut done = false;
        let events = [
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#,
            "[DONE]",
        ];
        for e in events {
            apply_event(&mut acc, e.as_bytes(), &mut done).unwrap();
        }
        assert!(done);
        assert_eq!(acc.tool_calls[0], ToolCall { id: "a".into(), name: "read_file".into(), arguments: "{}".into() });
        assert_eq!(acc.tool_calls[1].arguments, r#"{"pattern":"x"}"#);
        assert_eq!(acc.usage.unwrap().total_tokens, 7);
        assert_eq!(acc.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn bad_chunks_and_indexes_are_typed_errors() {
        let mut acc = Completion::default();
        let mut done = false;
        assert!(matches!(apply_event(&mut acc, b"{nope", &mut done), Err(ModelError::BadChunk(_))));
        let far = br#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":99999}]}}]}"#;
        assert_eq!(apply_event(&mut acc, far, &mut done), Err(ModelError::BadToolIndex(99999)));
    }
}
