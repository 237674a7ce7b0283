//! The model's reading of the send's request: one side call, made once per
//! send by the first that needs it, the `Asked` gate after an answer
//! (`gates/asked.rs`) or [`hold_write`] before a write; later callers get
//! the same reading (kept in the send's state as a
//! [`RequestReading`]).
//!
//! Owns: the reading itself ([`read_request`]: the request alone, shown
//! with worked examples and asked whether it asks for a change to files)
//! and the rule that acts on it before a call runs, [`hold_write`]
//! (`write_check`, whose default is the profile's as `request_check`'s
//! is): before the first `write_file` or `edit_file` of a send that has
//! changed no file and no operator's check will judge runs, the request is
//! read; when the model says it asks only for information, that call and
//! every later write of the send are held back (not run; the result says
//! why and asks for the answer in words, with any change it needs
//! described). pirn reads no word of the request itself.

use crate::agent::reading::{Ask, yes_no};
use crate::agent::send_state::{RequestReading, SendState};

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
/// check decides what the send must do, as in the `Asked` gate), no file
/// has changed in the send, and the model's reading of the request (made
/// now if not yet; a failed reading holds nothing) says it asks for no
/// change. Every such write of the send is held: a
/// model that repeats the call is answered the same, and its loop ends as
/// any other.
pub async fn hold_write(cx: &mut SendState<'_>, tool: &str) -> Option<String> {
    let off = !cx.config.write_check || !cx.checks || cx.verifier.is_some();
    if off || !crate::tools::writes_text(tool) || cx.facts.wrote() {
        return None;
    }
    (read_request(cx).await == RequestReading::ChangesFiles(false)).then(|| held_note(tool))
}

/// The send's reading of its request, made by the first caller (one side
/// call); later callers, and callers after a failed reading, get the same.
pub(super) async fn read_request(cx: &mut SendState<'_>) -> RequestReading {
    if cx.reading == RequestReading::NotYet {
        let request = cx.request;
        cx.reading = match yes_no(cx, ASK, request).await {
            Some(changes) => RequestReading::ChangesFiles(changes),
            None => RequestReading::Failed,
        };
    }
    cx.reading
}
