//! The cassette file: JSON Lines, one [`Exchange`] per HTTP request pirn
//! made to the model server, in the order the requests were made.
//!
//! A streamed answer is kept as the `data:` payloads of its server-sent
//! events ([`TapeChunk`]s, each with the milliseconds since the request), not
//! as raw bytes: the payloads are what the answer is made of, and replaying
//! them re-frames them as `data: …\n\n`. An error answer keeps its status,
//! body and `Retry-After`; a failure without an answer (no connection, a
//! broken stream) keeps its kind and message in [`TapeEnd::Error`]. Request
//! headers are never written (they hold the API key); the request body is
//! written as sent. Schema: `protocol/cassette.schema.json`.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a cassette cannot be used. Each names the file.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    #[error("cannot open the cassette {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("the cassette {path}, line {line}, is not a recorded exchange: {message}")]
    Line { path: PathBuf, line: usize, message: String },
    #[error("PIRN_RECORD and PIRN_REPLAY cannot both be set")]
    Both,
    #[error("PIRN_REPLAY_TIMING must be `instant` or `recorded`, not {0:?}")]
    Timing(String),
}

/// The `cassette` field of every line.
pub const FORMAT_VERSION: u32 = 1;

/// One HTTP exchange with the model server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Exchange {
    /// The format version, [`FORMAT_VERSION`].
    pub cassette: u32,
    /// 0-based position of the exchange in the process's recording.
    pub seq: u64,
    pub method: Method,
    /// The URL's path, e.g. `/v1/chat/completions` or `/props`.
    pub path: String,
    /// The workspace of the session that made the request (a replayed
    /// request may differ from the recorded one in this path only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The request body as sent (`null` for a GET).
    #[serde(default)]
    pub request: Value,
    /// The HTTP status; absent when no answer came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Milliseconds from the request to the answer's headers.
    #[serde(default)]
    pub headers_ms: u64,
    /// The `Retry-After` header of the answer, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// The body of an answer that is not a stream (an error, a GET).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The events of a streamed answer, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<TapeChunk>,
    /// How the exchange ended.
    pub end: TapeEnd,
}

/// `POST` (a chat completion) or `GET` (the context-window probe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Method {
    #[serde(rename = "POST")]
    Post,
    #[serde(rename = "GET")]
    Get,
}

/// One server-sent event of a streamed answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TapeChunk {
    /// Milliseconds from the request to this event.
    pub t_ms: u64,
    /// The event's `data` (a `chat.completion.chunk` JSON text, or `[DONE]`).
    pub data: String,
}

/// How an exchange ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TapeEnd {
    /// The answer was read to its end.
    Done,
    /// pirn stopped reading (the send was cancelled): a replay stalls after
    /// the last chunk, as the server did for the cancel to matter.
    Cut,
    /// The exchange failed: `kind` is the `details.kind` of the error
    /// (`connect`, `timeout`, `stream`, …), `message` its text.
    Error { kind: String, message: String },
}
