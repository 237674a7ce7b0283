//! One open streamed answer: SSE bytes in, text pieces out, the whole
//! [`Completion`] at the end.
//!
//! Owns: the per-chunk idle timeout, the end-of-stream rules (`[DONE]`, a
//! finish reason, a body that ends early, an answer that keeps repeating
//! tool calls it already made: [`cut_at`], or one whose text or tool-call
//! arguments run away repeating a few bytes: [`super::runaway`]), and where the events come from:
//! the HTTP body (each event also written to the cassette's [`Tape`] when
//! recording) or a [`ReplayBody`].

use std::borrow::Cow;
use std::time::Duration;

use super::chunk::apply_event;
use super::completion::Completion;
use super::error::{ModelError, describe_reqwest};
use super::runaway::{self, Runaway};
use crate::cassette::replay::Replayed;
use crate::cassette::{ReplayBody, Tape, TapeEnd};
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
    /// The answer's size (text and all arguments, in bytes) when its tail
    /// was last read for a runaway.
    looked: usize,
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
enum StreamStep<'a> {
    Data(Cow<'a, [u8]>),
    /// The body ended after a last event without its blank line: complete.
    Last(Cow<'a, [u8]>),
    /// The body ended.
    TapeEnd,
}

impl ChatStream {
    pub(super) fn new(resp: reqwest::Response, idle: Duration, tape: Option<Tape>) -> Self {
        let header_cost = resp
            .headers()
            .get(super::cost::LITELLM_COST_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok());
        let source = Source::Http { resp, sse: SseDecoder::new(), tape };
        ChatStream { source, idle, acc: Completion::default(), done: false, streamed: false, header_cost, looked: 0 }
    }

    pub(super) fn replayed(body: ReplayBody, idle: Duration) -> Self {
        let acc = Completion::default();
        ChatStream {
            source: Source::Replay(body),
            idle,
            acc,
            done: false,
            streamed: false,
            header_cost: None,
            looked: 0,
        }
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
                Ok(None) => tape.finish(TapeEnd::Done),
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
                StreamStep::Data(data) => {
                    let text = apply_event(&mut self.acc, &data, &mut self.done)?;
                    if let Some(at) = cut_at(&self.acc.tool_calls) {
                        // A small model caught in a loop writes the same calls
                        // over and over until max_tokens; the repeats would
                        // only be answered with the same results. The rest of
                        // the answer is not read (dropping the stream closes
                        // the request, and the server stops generating). The
                        // repeats read are kept: the turn drops them and tells
                        // the model ([`crate::agent::batch`]).
                        tracing::info!(at, "the answer keeps repeating tool calls it already made: ended there");
                        self.acc.tool_calls.truncate(at + 1);
                        self.acc.finish_reason = Some("tool_calls".to_owned());
                        self.done = true;
                    }
                    if !self.done
                        && let Some(runaway) = self.runaway()
                    {
                        // The rest of the loop is not read (dropping the
                        // stream stops the server); the agent runs nothing
                        // of this answer and tells the model why.
                        tracing::info!(what = %runaway.describe(), "a runaway answer: ended there");
                        self.acc.runaway = Some(runaway);
                        self.acc.finish_reason = Some("length".to_owned());
                        self.done = true;
                    }
                    if text.is_some() {
                        return Ok(text);
                    }
                }
                StreamStep::Last(data) => {
                    let text = apply_event(&mut self.acc, &data, &mut self.done)?;
                    self.done = true;
                    if text.is_some() {
                        return Ok(text);
                    }
                }
                StreamStep::TapeEnd => {
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
async fn next_step<'a>(
    source: &'a mut Source,
    idle: Duration,
    streamed: &mut bool,
) -> Result<StreamStep<'a>, ModelError> {
    let timeout = || ModelError::Timeout(format!("model stream idle for {} ms", idle.as_millis()));
    let (resp, sse, tape) = match source {
        Source::Replay(body) => {
            return match tokio::time::timeout(idle, body.next()).await {
                Err(_) => Err(timeout()),
                Ok(Replayed::Data(d)) => {
                    *streamed = true;
                    Ok(StreamStep::Data(Cow::Owned(d.into_bytes())))
                }
                Ok(Replayed::Done) => Ok(StreamStep::TapeEnd),
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
                return Ok(StreamStep::Data(Cow::Borrowed(sse.current())));
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
                    return Ok(StreamStep::Last(Cow::Borrowed(sse.current())));
                }
                return Ok(StreamStep::TapeEnd);
            }
        }
    }
}

impl ChatStream {
    /// Reads the tail of the text and of the last tool call's arguments,
    /// each [`runaway::LOOK_EVERY`] bytes the answer grows.
    fn runaway(&mut self) -> Option<Runaway> {
        let size = self.acc.text.len() + self.acc.tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        if size < self.looked + runaway::LOOK_EVERY {
            return None;
        }
        self.looked = size;
        let last = self.acc.tool_calls.last();
        Runaway::of(&self.acc.text, None).or_else(|| last.and_then(|c| Runaway::of(&c.arguments, Some(&c.name))))
    }
}

/// Tool calls an answer may repeat (each the same as one it already made)
/// before the rest of it is not read. A model that repeats a call once or
/// twice and then asks for something new still gets the new call run.
pub const REPEATS_READ: usize = 4;

/// The index of the tool call in `calls` that makes [`REPEATS_READ`]
/// repeats: calls the same as an earlier one of the same answer (same
/// name, the same arguments text, and that text a complete JSON value, so
/// neither call can still grow).
fn cut_at(calls: &[super::completion::ToolCall]) -> Option<usize> {
    // Runs at every streamed event: with too few calls for the limit to be
    // reached (it needs one original and REPEATS_READ repeats), skip the scan.
    if calls.len() <= REPEATS_READ {
        return None;
    }
    let complete = |c: &super::completion::ToolCall| serde_json::from_str::<serde_json::Value>(&c.arguments).is_ok();
    let mut repeats = 0;
    for (i, c) in calls.iter().enumerate().skip(1) {
        if !c.name.is_empty()
            && calls[..i].iter().any(|e| e.name == c.name && e.arguments == c.arguments)
            && complete(c)
        {
            repeats += 1;
            if repeats == REPEATS_READ {
                return Some(i);
            }
        }
    }
    None
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

#[cfg(test)]
mod tests {
    use super::cut_at;
    use crate::model::ToolCall;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall { id: String::new(), name: name.into(), arguments: arguments.into() }
    }

    #[test]
    fn an_answer_is_read_up_to_its_fourth_repeated_call() {
        let read = call("read_file", r#"{"file_path":"a.py"}"#);
        let grep = call("grep", r#"{"pattern":"f"}"#);
        // A repeat or two, then something new: all read.
        assert_eq!(cut_at(&[read.clone(), read.clone(), grep.clone(), grep.clone()]), None);
        let looping: Vec<ToolCall> = [&read, &grep].iter().cycle().take(9).map(|c| (*c).clone()).collect();
        assert_eq!(cut_at(&looping), Some(5), "repeats at 2, 3, 4 and 5");
        // Same arguments, another tool: no repeat.
        let other = call("glob", &read.arguments);
        assert_eq!(
            cut_at(&[read.clone(), other.clone(), other.clone(), other.clone(), other.clone(), other.clone()]),
            Some(5)
        );
        assert_eq!(cut_at(&[read.clone(), other.clone(), call("grep", &read.arguments), other.clone()]), None);
        // Still streaming: a prefix is not a repeat, even of a call it will equal.
        let mut growing = vec![read.clone(); 4];
        growing.push(call("read_file", r#"{"file_path":"a.py""#));
        assert_eq!(cut_at(&growing), None);
    }
}
