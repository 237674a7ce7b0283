//! How a send's model call streams and how a send ends in an error: the
//! two steps of the turn loop that talk to the outside (the model server,
//! the emitter) without deciding anything.

use bytes::Bytes;

use super::emit::Emitter;
use crate::config::SessionConfig;
use crate::model::{Completion, ModelError};
use crate::wire::{ErrorEnvelope, Event};

/// How a send ended (cancellation is decided by the caller).
#[derive(Debug)]
pub enum Outcome {
    /// The model answered without tool calls; its text.
    Ok { response: String },
    /// A fatal error; its `error` event has been emitted.
    Failed { error: ErrorEnvelope, response: Option<String> },
}

/// Streams one model call, emitting `content_delta` per text piece (and a
/// `retry` event before each retry of a 429/503).
pub(super) async fn call_model(config: &SessionConfig, body: Bytes, emit: &Emitter) -> Result<Completion, ModelError> {
    let mut stream = config.endpoint.open(body, emit).await?;
    while let Some(text) = stream.next_text().await? {
        emit.emit(Event::ContentDelta { text }).await;
    }
    Ok(stream.into_completion())
}

/// Emits the `error` event of a fatal error and ends the send with it.
/// (`provider` names the model server for provider errors.)
pub(crate) async fn fail(
    emit: &Emitter,
    error: ErrorEnvelope,
    response: Option<String>,
    provider: Option<String>,
) -> Outcome {
    emit.emit(Event::Error {
        code: error.code,
        message: error.message.clone(),
        retryable: error.retryable,
        provider,
        details: error.details.clone(),
    })
    .await;
    Outcome::Failed { error, response }
}
