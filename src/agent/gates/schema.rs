//! Gate: the send's `output_schema`.
//!
//! Reads: the answer as JSON, checked against the schema (see
//! [`crate::agent::structured`]). May: keep the parsed value for the
//! result; send the model back with the validation errors, to answer
//! without tools and with `response_format`, while retries last; then end
//! the send `output_invalid`.

use super::verdict::{Answer, Verdict};
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::agent::structured;

pub(super) fn review(cx: &mut SendState<'_>, answer: &Answer) -> Verdict {
    let Some(output) = cx.spec.output.as_mut() else { return Verdict::Pass };
    match output.check(&answer.text) {
        Ok(value) => {
            cx.stats.structured_output = Some(value);
            Verdict::Pass
        }
        Err(errors) if output.retries_left > 0 => {
            output.retries_left -= 1;
            Verdict::Again { note: output.retry_note(&errors), mode: Mode::Structured }
        }
        Err(errors) => Verdict::Fail { error: structured::invalid(errors), answer: Some(answer.text.clone()) },
    }
}
