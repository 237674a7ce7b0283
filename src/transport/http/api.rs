//! The HTTP API's error answers and request bodies.
//!
//! Owns: [`ApiError`] (every error body is `{"error": CODE, "message": "…"}`),
//! the body cap ([`MAX_BODY`], 413 past it, the rest drained so the client
//! sees the answer), and JSON body decoding.

use axum::body::Body;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response as HttpResponse};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::wire::http::ErrorBody;

/// Largest request body accepted (10 MiB); larger ones get 413.
pub const MAX_BODY: usize = 10 * 1024 * 1024;
/// Bytes of an oversized body read (and discarded) before answering 413.
pub const DRAIN_LIMIT: usize = 64 * 1024 * 1024;

/// An error answer: `{"error": CODE, "message": "…"}` with an HTTP status.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }

    /// 400 `BAD_REQUEST`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "BAD_REQUEST", message)
    }

    /// 404 `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> HttpResponse {
        (self.status, axum::Json(ErrorBody { error: self.code.to_owned(), message: self.message })).into_response()
    }
}

/// Why a body was not read.
#[derive(Debug)]
pub enum BodyError {
    /// The connection failed mid-body.
    Read(String),
    /// Longer than the limit (the rest was drained).
    TooLarge,
}

/// Reads a body of at most `max` bytes. A longer one is read on and
/// discarded up to [`DRAIN_LIMIT`] so the client finishes writing and sees
/// the answer (413) instead of a broken pipe.
pub async fn read_limited(body: Body, max: usize) -> Result<Vec<u8>, BodyError> {
    let mut stream = body.into_data_stream();
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Read(e.to_string()))?;
        total = total.saturating_add(chunk.len());
        if total <= max {
            buf.extend_from_slice(&chunk);
        } else if total > DRAIN_LIMIT {
            break;
        }
    }
    if total > max { Err(BodyError::TooLarge) } else { Ok(buf) }
}

/// Reads a body of at most [`MAX_BODY`] bytes ([`read_limited`]).
pub async fn read_body(body: Body) -> Result<Vec<u8>, ApiError> {
    read_limited(body, MAX_BODY).await.map_err(|e| match e {
        BodyError::Read(e) => ApiError::bad_request(format!("cannot read the body: {e}")),
        BodyError::TooLarge => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "BODY_TOO_LARGE",
            format!("request bodies are limited to {MAX_BODY} bytes"),
        ),
    })
}

/// Reads a JSON body (see [`read_body`]); an empty body reads as `{}`.
pub async fn json_body<T: DeserializeOwned>(body: Body) -> Result<T, ApiError> {
    let bytes = read_body(body).await?;
    let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { &bytes[..] };
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}
