//! The body of one chat-completions request, in the OpenAI form every
//! provider pirn drives accepts.
//!
//! Owns: which fields a request carries: the conversation and the tools
//! (borrowed, never copied), streaming with usage, `tool_choice: "none"`
//! for a wrap-up answer, `"required"` for a turn that must act, `response_format` for an answer that must match a
//! send's `output_schema`, and the answer's token room.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;

use async_openai::types::chat::ChatCompletionRequestMessage;

use crate::config::SessionConfig;
use crate::conversation::Conversation;
use crate::wire::{ErrorCode, ErrorEnvelope};

/// The body of a chat-completions request, borrowing the conversation.
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatCompletionRequestMessage],
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
    /// `"none"` for a wrap-up request: the tools stay in the request (a
    /// history with tool calls needs them at some providers) but may not
    /// be called; `"required"` when the model must call one.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    /// `{"type": "json_schema", …}` when the answer must match a schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    max_tokens: u32,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// How one request differs from the plain next turn.
#[derive(Debug, Default, Clone, Copy)]
pub struct Shape<'a> {
    /// No tool calls allowed (`tool_choice: "none"`).
    pub no_tools: bool,
    /// The structured-output request to send, if any.
    pub response_format: Option<&'a Value>,
    /// A tool call is required (`tool_choice: "required"`).
    pub require_tool: bool,
}

/// Encodes the request for the conversation as it stands.
/// Errors: the conversation cannot be encoded (a `protocol_error`).
pub fn body(
    config: &SessionConfig,
    conv: &Conversation,
    shape: Shape<'_>,
    max_tokens: u32,
) -> Result<Bytes, ErrorEnvelope> {
    let tools = config.tool_specs();
    let request = ChatRequest {
        model: &config.model,
        messages: conv.messages(),
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        tools,
        tool_choice: match (tools.is_empty(), shape.no_tools, shape.require_tool) {
            (true, ..) | (false, false, false) => None,
            (false, true, _) => Some("none"),
            (false, false, true) => Some("required"),
        },
        response_format: shape.response_format,
        temperature: config.temperature,
        max_tokens,
    };
    serde_json::to_vec(&request)
        .map(Bytes::from)
        .map_err(|e| ErrorEnvelope::new(ErrorCode::ProtocolError, format!("cannot encode the request: {e}")))
}
