//! Gate: an answer the model stopped at its token limit is no answer.
//!
//! Reads: the model call's `finish_reason: length`, whether the send has
//! the operator's check ([`crate::agent::verify::Verifier`]) with rounds
//! left, and the [`Mode`] the answer was asked in. May: ask again, short
//! and constrained, while the send's schema has retries left (a runaway
//! answer is a miss like any other); in a checked send, outside a wrap-up
//! (a loop or a spent budget stays stopped), spend one of the check's
//! rounds to send the model back to work (the cut-off answer left out of
//! the history, the next request made in [`Mode::Act`]): the operator
//! asked that the send pass its check, and an answer that never ended is a
//! miss it may still make good; else end the send `provider_error`.

use super::verdict::{Answer, Verdict};
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::agent::structured;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) fn review(cx: &mut SendState<'_>, answer: &Answer) -> Verdict {
    if !answer.cut_off {
        return Verdict::Pass;
    }
    if let Some(output) = cx.spec.output.as_mut().filter(|o| o.retries_left > 0) {
        output.retries_left -= 1;
        return Verdict::Again { note: output.retry_note(&[structured::CUT_OFF.to_owned()]), mode: Mode::Structured };
    }
    // A wrap-up (a loop, a spent budget) is never reopened this way.
    if !cx.verified
        && matches!(cx.mode, Mode::Work | Mode::Act)
        && let Some(verifier) = cx.verifier.as_mut()
        && verifier.take_round()
    {
        return Verdict::Again { note: note(cx.config.max_tokens, verifier.fix_with()), mode: Mode::Act };
    }
    let error = ErrorEnvelope {
        code: ErrorCode::ProviderError,
        message: "the model's answer was cut off at its token limit (finish_reason: length)".to_owned(),
        retryable: false,
        details: Some(serde_json::json!({"finish_reason": "length"})),
    };
    Verdict::Fail { error, answer: Some(answer.text.clone()) }
}

/// What a checked send's model is told after an answer cut off at
/// `max_tokens` (tokens), `fix_with` saying how to change a file in the
/// session's edit format.
fn note(max_tokens: u32, fix_with: &str) -> String {
    format!(
        "Your last answer ran to the token limit ({max_tokens} tokens) without ending, so it was dropped and \
         nothing in it was done. The task is not done yet: {fix_with}, and keep the answer short."
    )
}
