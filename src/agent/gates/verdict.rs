//! What a gate is given and what it decides.
//!
//! Owns: [`Answer`] (the final answer on its way through the gates),
//! [`Verdict`] (pass, send back, or end the send) and [`said`] (the
//! answer as a result carries it), shared by every gate file and by the
//! review that runs them in order (`gates/mod.rs`).

use crate::agent::mode::Mode;
use crate::wire::ErrorEnvelope;

/// A final answer on its way through the gates.
#[derive(Debug)]
pub struct Answer {
    /// What the model said (a gate may put pirn's account in its place).
    pub text: String,
    /// The model stopped at its token limit (`finish_reason: length`).
    pub cut_off: bool,
}

/// What a gate decides.
#[derive(Debug)]
pub enum Verdict {
    /// On to the next gate.
    Pass,
    /// Back to the model with `note`; the next request is made in `mode`.
    Again { note: String, mode: Mode },
    /// The send ends with `error`; `answer` is what the result carries
    /// (`None`: the model's answer).
    Fail { error: ErrorEnvelope, answer: Option<String> },
}

/// The answer as a result carries it: `None` when it is empty.
pub(super) fn said(text: &str) -> Option<String> {
    Some(text.to_owned()).filter(|t| !t.trim().is_empty())
}
