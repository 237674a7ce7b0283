//! One open streamed answer: SSE bytes in, text pieces out, the whole
//! [`Completion`] at the end.
//!
//! Owns: the per-chunk idle timeout, the end-of-stream rules (`[DONE]`, a
//! finish reason, or a body that ends early) and the cap on one answer's size.

use std::time::Duration;

use super::Completion;
use super::chunk::apply_event;
use super::endpoint::describe_reqwest;
use super::error::ModelError;
use crate::sse::{SseDecoder, SseError};

/// Most bytes of text plus tool-call arguments one answer may stream; a
/// server that streams past it without stopping ends the call.
pub const MAX_ANSWER_BYTES: usize = 32 * 1024 * 1024;

/// An open streamed answer. Pull text with [`ChatStream::next_text`], then
/// take the whole answer with [`ChatStream::into_completion`].
pub struct ChatStream {
    resp: reqwest::Response,
    sse: SseDecoder,
    idle: Duration,
    acc: Completion,
    /// `[DONE]` seen or the body ended after a finish_reason.
    done: bool,
    /// Set once any byte of the body arrived.
    pub streamed: bool,
}

impl ChatStream {
    pub(super) fn new(resp: reqwest::Response, idle: Duration) -> Self {
        ChatStream { resp, sse: SseDecoder::new(), idle, acc: Completion::default(), done: false, streamed: false }
    }

    /// The next piece of text, `None` at the end of the answer.
    ///
    /// Errors: the body stalls longer than the idle timeout, the connection
    /// drops before `[DONE]`/a finish reason, a chunk is not JSON, the answer
    /// passes [`MAX_ANSWER_BYTES`], or the server streams an `error` object.
    pub async fn next_text(&mut self) -> Result<Option<String>, ModelError> {
        loop {
            if self.done {
                return Ok(None);
            }
            match self.sse.next_event() {
                Ok(Some(data)) => {
                    if let Some(text) = apply_event(&mut self.acc, data, &mut self.done)? {
                        return Ok(Some(text));
                    }
                    continue;
                }
                Ok(None) => {}
                Err(SseError::TooLong(n)) => {
                    return Err(ModelError::Stream(format!("model stream line exceeds {n} bytes")));
                }
            }
            match tokio::time::timeout(self.idle, self.resp.chunk()).await {
                Err(_) => {
                    return Err(ModelError::Timeout(format!("model stream idle for {} ms", self.idle.as_millis())));
                }
                Ok(Err(e)) => {
                    return Err(ModelError::Stream(format!("model stream broke: {}", describe_reqwest(&e))));
                }
                Ok(Ok(Some(bytes))) => {
                    self.streamed = true;
                    self.sse.feed(&bytes);
                }
                Ok(Ok(None)) => {
                    // End of body: flush a last event without its blank line.
                    if let Ok(Some(data)) = self.sse.end_of_input() {
                        let text = apply_event(&mut self.acc, data, &mut self.done)?;
                        self.done = true;
                        if text.is_some() {
                            return Ok(text);
                        }
                    }
                    if self.acc.finish_reason.is_some() || self.done {
                        self.done = true;
                        return Ok(None);
                    }
                    return Err(ModelError::Stream("model stream ended before the answer was complete".to_owned()));
                }
            }
        }
    }

    /// The assembled answer. Tool calls without an id get `call_<index>`;
    /// empty slots (no name, no arguments) are dropped.
    pub fn into_completion(self) -> Completion {
        let mut c = self.acc;
        for (i, call) in c.tool_calls.iter_mut().enumerate() {
            if call.id.is_empty() {
                call.id = format!("call_{i}");
            }
        }
        c.tool_calls.retain(|call| !call.name.is_empty() || !call.arguments.is_empty());
        c
    }
}
