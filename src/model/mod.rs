//! The OpenAI-compatible chat-completions client: one streamed call at a time.
//!
//! - [`endpoint`]: where the model is, the HTTP clients, retries of 429/503;
//! - [`stream`]: the open answer, pulled chunk by chunk with an idle timeout;
//! - [`completion`]: [`Completion`], one answer as assembled, and its
//!   [`ToolCall`]s;
//! - [`chunk`]: the borrowed shapes of one stream chunk and how a chunk is
//!   folded into the answer (text, tool-call fragments by `index`, usage);
//! - [`error`]: [`ModelError`] and the one retry rule;
//! - [`cost`]: what a call cost in money (provider figure or price table);
//! - [`runaway`]: an answer that keeps repeating a few bytes, ended early.
//!
//! Request bodies are built by the agent from async-openai's message types;
//! the stream chunks are decoded by small borrowed structs rather than
//! async-openai's response types, because "OpenAI-compatible" servers differ
//! in the fields they send (`object`, `created`, `model` are often missing)
//! and because a relay should not allocate five strings per token.
//!
//! Cancellation: dropping a [`ChatStream`] (or the future of
//! [`Endpoint::open`]) drops the HTTP response and with it the connection.

pub mod chunk;
pub mod completion;
pub mod cost;
pub mod endpoint;
pub mod error;
pub mod runaway;
pub mod stream;

pub use chunk::MAX_ANSWER_BYTES;
pub use completion::{Completion, ToolCall};
pub use endpoint::{DEFAULT_IDLE_TIMEOUT, Endpoint, MAX_RETRY_AFTER, MAX_TRIES, OnRetry, RetryNotice};
pub use error::ModelError;
pub use stream::ChatStream;
