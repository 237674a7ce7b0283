//! How a tool call fails: [`ToolError`] (its text is what the model reads),
//! the short form tools use ([`failed`]), and arguments that do not parse
//! ([`parse_args`]). A path the model may not use is [`PathError`], owned
//! by [`super::confine`].

use std::path::PathBuf;

use serde::de::DeserializeOwned;

use super::confine::PathError;

/// Why a tool call failed; the text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    #[error(transparent)]
    Path(#[from] PathError),
    /// Any other failure, said for the model (what failed, on which path).
    #[error("{0}")]
    Failed(String),
    /// A write to `path` was held back for the reason `why`: nothing was
    /// written; `message` shows why and how to go on.
    #[error("{message}")]
    HeldBack { path: PathBuf, why: super::output::Hold, message: String },
    /// The edit looks made already in `path` ([`Effect::MadeAlready`](super::output::Effect::MadeAlready)):
    /// nothing was written; `message` says where and why.
    #[error("{message}")]
    MadeAlready { path: PathBuf, message: String },
}

/// `Err(ToolError::Failed(message))`: the short form tools use.
pub(crate) fn failed(message: impl Into<String>) -> Result<String, ToolError> {
    Err(ToolError::Failed(message.into()))
}

pub(crate) fn parse_args<A: DeserializeOwned>(arguments: &str) -> Result<A, ToolError> {
    let text = if arguments.trim().is_empty() { "{}" } else { arguments };
    serde_json::from_str(text).map_err(|e| {
        ToolError::Failed(format!(
            "invalid arguments: {e}. Arguments must be a JSON object matching the tool's parameters."
        ))
    })
}
