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
//! The request is read at most once per send ([`RequestReading`]), and the reading
//! counts like a turn: its usage, tokens, cost and model time are the
//! send's ([`crate::agent::outcome::side_call`]).
//!
//! The same reading also guards the other way ([`hold_write`],
//! `write_check`, whose default is the profile's as `request_check`'s is): before the first
//! `write_file` or `edit_file` of a send that has changed no file and no
//! operator's check will judge runs, the request is read; when the model
//! says it asks only for information, that call and every later write of
//! the send are held back (not run; the result says why and asks for the
//! answer in words, with any change it needs described).

use super::reading::{Ask, quiet, yes_no};
use super::{Gate, Verdict};
use crate::agent::cx::SendCx;
use crate::agent::mode::Mode;
use crate::wire::{ErrorCode, ErrorEnvelope};

/// What the model is told when it reads the request as asking for a change.
pub const NOTE: &str = "No file has changed in this send, so your last answer is left out: nothing it described is in \
     the files yet. If the request asks for a change to files, call edit_file or write_file now to make it. If it \
     asks only for information, call read_file or grep for what you need, then answer.";

/// The reading: the request alone, asked whether it asks for a change.
const ASK: Ask = Ask {
    system: "You sort requests made to a coding assistant that works in a project's files. Decide whether doing \
             what the request asks means creating, editing or deleting files, or only reading files, running \
             commands and answering in words.",
    label: "Request",
    question: "Does this request ask for a change to the project's files (true), or only for information in words \
               (false)?",
    key: "changes_files",
    examples: EXAMPLES,
};

/// The reading's worked examples, three of each answer, written for it
/// (none is an eval task's request). Without them the 1.5B model read 10
/// of 30 questions as changes (an explanation, a summary, a list, a
/// review, "which file defines"); with them 2, and changes read as
/// questions stayed at 1 of 60; on 20 requests written after the
/// examples were chosen, 17 right without them and 19 with them
/// (docs/results-history.md, 2026-12-02). They are instances, not rules: no
/// word of them is matched against the request.
const EXAMPLES: &[(&str, bool)] = &[
    ("Where is the retry limit set, and what is it?", false),
    ("The greeting in hello.rs has a typo, fix it.", true),
    ("Describe how the upload handler validates file sizes; don't touch anything.", false),
    ("Remove the deprecated flag from config.toml.", true),
    ("Show me how I could add caching to fetch_user.", false),
    ("Add a --dry-run option to deploy.py that prints the commands instead of running them.", true),
];

pub(super) async fn review(cx: &mut SendCx<'_>) -> Verdict {
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

/// What a write held back by [`hold_write`] reads as its result.
fn held_note(tool: &str) -> String {
    format!(
        "Not run: this request was read as asking only for information, not for a change to files, so no file \
         changes in this send and this {tool} call wrote nothing. Answer the request in words; if it needs a \
         change, say in your answer what to change and where."
    )
}

/// Before a tool call runs: `Some(result)` when it is held back, i.e. it
/// is a `write_file`/`edit_file` call ([`crate::tools::writes_text`]),
/// `write_check` is on, the fact gates are on, no operator's check will
/// judge the send (a `verify_command` pirn can run, i.e. a verifier: the
/// check decides what the send must do, as in [`review`]), no file has changed in the send, and the model's reading
/// of the request (made now if not yet; a failed reading holds nothing)
/// says it asks for no change. Every such write of the send is held: a
/// model that repeats the call is answered the same, and its loop ends as
/// any other.
pub async fn hold_write(cx: &mut SendCx<'_>, tool: &str) -> Option<String> {
    let off = !cx.config.write_check || !cx.checks || cx.verifier.is_some();
    if off || !crate::tools::writes_text(tool) || cx.facts.wrote() {
        return None;
    }
    (read_request(cx).await == RequestReading::ChangesFiles(false)).then(|| held_note(tool))
}

/// The send's reading of its request, made by the first caller (one side
/// call); later callers, and callers after a failed reading, get the same.
async fn read_request(cx: &mut SendCx<'_>) -> RequestReading {
    if cx.reading == RequestReading::NotYet {
        let request = cx.request;
        cx.reading = match yes_no(cx, ASK, request).await {
            Some(changes) => RequestReading::ChangesFiles(changes),
            None => RequestReading::Failed,
        };
    }
    cx.reading
}

/// The model's reading of a send's request, made at most once per send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RequestReading {
    /// Not asked yet.
    #[default]
    NotYet,
    /// The reading call failed or did not answer the JSON asked for.
    Failed,
    /// The model said whether the request asks for files to change.
    ChangesFiles(bool),
}
