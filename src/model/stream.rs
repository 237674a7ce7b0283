//! One open streamed answer: SSE bytes in, text pieces out, the whole
//! [`Completion`] at the end.
//!
//! Owns: the per-chunk idle timeout, the end-of-stream rules (`[DONE]`, a
//! finish reason, or a body that ends early), and where the events come from: the HTTP body (each event also written to
//! the cassette's [`Tape`] when recording) or a [`ReplayBody`].

use std::borrow::Cow;
use std::time::Duration;

use super::Completion;
use super::chunk::apply_event;
use super::error::{ModelError, describe_reqwest};
use crate::cassette::replay::Replayed;
use crate::cassette::{End, ReplayBody, Tape};
use crate::sse::{SseDecoder, SseError};

/// An open streamed answer. Pull text with [`ChatStream::next_text`], then
/// take the whole answer with [`ChatStream::into_completion`].
pub struct ChatStream {
    source: Source,
    idle: Duration,
    acc: Completion,
    /// `[DONE]` seen or the body ended after a finish_reason.
    done: bool,
    /// Set once any byte of the body arrived.
    pub streamed: bool,
    /// LiteLLM's cost of the call (`x-litellm-response-cost`), in dollars.
    pub header_cost: Option<f64>,
}

/// Where a stream's events come from. (One per model call, never in a
/// collection: the size difference of the variants costs nothing.)
#[allow(clippy::large_enum_variant)]
enum Source {
    /// The live HTTP body, and the tape recording it (if any).
    Http { resp: reqwest::Response, sse: SseDecoder, tape: Option<Tape> },
    /// A recorded answer.
    Replay(ReplayBody),
}

/// One step of a stream's events (borrowed from the decoder when live).
enum Step<'a> {
    Data(Cow<'a, [u8]>),
    /// The body ended after a last event without its blank line: complete.
    Last(Cow<'a, [u8]>),
    /// The body ended.
    End,
}

impl ChatStream {
    pub(super) fn new(resp: reqwest::Response, idle: Duration, tape: Option<Tape>) -> Self {
        let header_cost = resp
            .headers()
            .get(super::cost::LITELLM_COST_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        let source = Source::Http { resp, sse: SseDecoder::new(), tape };
        ChatStream { source, idle, acc: Completion::default(), done: false, streamed: false, header_cost }
    }

    pub(super) fn replayed(body: ReplayBody, idle: Duration) -> Self {
        let acc = Completion::default();
        ChatStream { source: Source::Replay(body), idle, acc, done: false, streamed: false, header_cost: None }
    }

    /// The next piece of text, `None` at the end of the answer.
    ///
    /// Errors: the body stalls longer than the idle timeout, the connection
    /// drops before `[DONE]`/a finish reason, a chunk is not JSON, the answer
    /// passes [`MAX_ANSWER_BYTES`](super::MAX_ANSWER_BYTES), or the server streams an `error` object.
    pub async fn next_text(&mut self) -> Result<Option<String>, ModelError> {
        let result = self.pull_text().await;
        if let Source::Http { tape: Some(tape), .. } = &mut self.source {
            match &result {
                Err(e) => tape.finish(e.as_end()),
                Ok(None) => tape.finish(End::Done),
                Ok(Some(_)) => {}
            }
        }
        result
    }

    async fn pull_text(&mut self) -> Result<Option<String>, ModelError> {
        loop {
            if self.done {
                return Ok(None);
            }
            match next_step(&mut self.source, self.idle, &mut self.streamed).await? {
                Step::Data(data) => {
                    if let Some(text) = apply_event(&mut self.acc, &data, &mut self.done)? {
                        return Ok(Some(text));
                    }
                }
                Step::Last(data) => {
                    let text = apply_event(&mut self.acc, &data, &mut self.done)?;
                    self.done = true;
                    if text.is_some() {
                        return Ok(text);
                    }
                }
                Step::End => {
                    if self.acc.finish_reason.is_some() || self.done {
                        self.done = true;
                        return Ok(None);
                    }
                    return Err(ModelError::Stream("model stream ended before the answer was complete".to_owned()));
                }
            }
        }
    }
}

/// The next event's data from `source`, within the `idle` timeout;
/// `streamed` is set once anything arrived.
async fn next_step<'a>(source: &'a mut Source, idle: Duration, streamed: &mut bool) -> Result<Step<'a>, ModelError> {
    let timeout = || ModelError::Timeout(format!("model stream idle for {} ms", idle.as_millis()));
    let (resp, sse, tape) = match source {
        Source::Replay(body) => {
            return match tokio::time::timeout(idle, body.next()).await {
                Err(_) => Err(timeout()),
                Ok(Replayed::Data(d)) => {
                    *streamed = true;
                    Ok(Step::Data(Cow::Owned(d.into_bytes())))
                }
                Ok(Replayed::Done) => Ok(Step::End),
                Ok(Replayed::Failed { kind, message }) => Err(ModelError::recorded(&kind, &message)),
            };
        }
        Source::Http { resp, sse, tape } => (resp, sse, tape),
    };
    loop {
        match sse.ready() {
            Ok(true) => {
                if let Some(t) = tape {
                    t.chunk(sse.current());
                }
                return Ok(Step::Data(Cow::Borrowed(sse.current())));
            }
            Ok(false) => {}
            Err(SseError::TooLong(n)) => {
                return Err(ModelError::Stream(format!("model stream line exceeds {n} bytes")));
            }
        }
        match tokio::time::timeout(idle, resp.chunk()).await {
            Err(_) => return Err(timeout()),
            Ok(Err(e)) => {
                return Err(ModelError::Stream(format!("model stream broke: {}", describe_reqwest(&e))));
            }
            Ok(Ok(Some(bytes))) => {
                *streamed = true;
                sse.feed(&bytes);
            }
            Ok(Ok(None)) => {
                // End of body: flush a last event without its blank line.
                if let Ok(Some(_)) = sse.end_of_input() {
                    if let Some(t) = tape {
                        t.chunk(sse.current());
                    }
                    return Ok(Step::Last(Cow::Borrowed(sse.current())));
                }
                return Ok(Step::End);
            }
        }
    }
}

impl ChatStream {
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
