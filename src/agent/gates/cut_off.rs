//! Gate: an answer the model stopped at its token limit is no answer.
//!
//! Reads: the model call's `finish_reason: length`. May: ask again, short
//! and constrained, while the send's schema has retries left (a runaway
//! answer is a miss like any other); else end the send `provider_error`.

use super::{Answer, Verdict};
use crate::agent::cx::SendCx;
use crate::agent::mode::Mode;
use crate::agent::structured;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) fn review(cx: &mut SendCx<'_>, answer: &Answer) -> Verdict {
    if !answer.cut_off {
        return Verdict::Pass;
    }
    if let Some(output) = cx.spec.output.as_mut().filter(|o| o.retries_left > 0) {
        output.retries_left -= 1;
        return Verdict::Again { note: output.retry_note(&[structured::CUT_OFF.to_owned()]), mode: Mode::Structured };
    }
    let error = ErrorEnvelope {
        code: ErrorCode::ProviderError,
        message: "the model's answer was cut off at its token limit (finish_reason: length)".to_owned(),
        retryable: false,
        details: Some(serde_json::json!({"finish_reason": "length"})),
    };
    Verdict::Fail { error, answer: Some(answer.text.clone()) }
}
