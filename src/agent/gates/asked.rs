//! Gate: an answer that changed nothing, to a request the model reads as
//! asking for a change.
//!
//! Reads: that no file changed in the send and no command ran
//! ([`crate::agent::facts::Facts`]), and the model's own reading of the
//! request: one short extra call that shows the model only the request and
//! holds its answer to `{"changes_files": boolean}` (`response_format`, a
//! grammar on llama.cpp). pirn reads no word of the request itself; the
//! model says what was asked and the facts say what happened. May: when
//! the model says the request asks for a change, send it back once, its
//! next request made with `tool_choice: "required"` ([`Mode::Act`]); when
//! a later answer of the same send still changed nothing, end the send
//! `verification_failed` (the model's answer is kept in the result), so
//! an answer in words to a request the model reads as a change is never
//! reported `ok` (nor is a right "already so" to a conditional request, or
//! an answer to a question the model misreads). With an operator's check
//! (`verify_command`) the check decides instead: a request whose check
//! already passes needs no change.
//!
//! Off by default: on in a profile with `request_check` (`small`, see
//! `config::profile`) in a 0.3.0 session, never in a 0.2.0 one unless asked
//! (a scripted model server replaying 0.2.0 exchanges would get a request
//! it never recorded); `request_check` sets it, `answer_checks: false`
//! turns it off too. It never
//! asks when the send cannot write (no `write_file`/`edit_file`, a write
//! denied, plan mode), has an `output_schema`, or wraps up. Any failure of
//! the extra call (refused, unreadable, not JSON) lets the answer through.
//! The request is read at most once per send ([`RequestReading`],
//! [`read_request`]), and the reading
//! counts like a turn: its usage, tokens, cost and model time are the
//! send's ([`crate::agent::outcome::side_call`]).
//!
//! The same reading also guards the other way, before a call rather than
//! after an answer: [`crate::agent::request_reading::hold_write`]
//! (`write_check`), which is the call path's, not a gate.

use super::order::Gate;
use super::verdict::Verdict;
use crate::agent::mode::Mode;
use crate::agent::reading::quiet;
use crate::agent::request_reading::read_request;
use crate::agent::send_state::{RequestReading, SendState};
use crate::wire::{ErrorCode, ErrorEnvelope};

/// What the model is told when it reads the request as asking for a change.
pub const NOTE: &str = "No file has changed in this send, so your last answer is left out: nothing it described is in \
     the files yet. If the request asks for a change to files, call edit_file or write_file now to make it. If it \
     asks only for information, call read_file or grep for what you need, then answer.";

pub(super) async fn review(cx: &mut SendState<'_>) -> Verdict {
    // A write held back was an attempt at a change: the `HeldBack` gate
    // speaks to it.
    if !cx.config.request_check || !quiet(cx) || !cx.facts.held_back.is_empty() {
        return Verdict::Pass;
    }
    // Read once per send: a later answer (after a verify round, a Stop
    // hook, or the one round this gate gave) is held against the same
    // reading, and a failed call is not made again.
    if read_request(cx).await != RequestReading::ChangesFiles(true) {
        return Verdict::Pass;
    }
    if cx.fire_once(Gate::Asked) {
        return Verdict::Again { note: NOTE.to_owned(), mode: Mode::Act };
    }
    if cx.verifier.is_some() {
        return Verdict::Pass;
    }
    Verdict::Fail {
        error: ErrorEnvelope::new(
            ErrorCode::VerificationFailed,
            "the request was read as asking for a change to files, but no file changed in this send",
        ),
        answer: None,
    }
}
