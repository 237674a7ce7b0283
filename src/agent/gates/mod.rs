//! The answer gates: what a final answer (one without tool calls) passes
//! before a send ends `ok`. Their order is written once, in [`ORDER`].
//!
//! Each gate reads facts the send gathered (the model call's finish reason,
//! the [`super::mode::Mode`], the files the tools changed and their hashes,
//! the operator's check, the send's schema) and may do one of three
//! things ([`Verdict`]): let the answer through to the next gate, send the
//! model back with a note (each gate at most as often as it says), or end
//! the send with an error. No gate reads the user's request or the
//! model's prose: where a check needs to know what was asked, the operator
//! says it (`verify_command`, `output_schema`) or the model does
//! ([`Gate::Claimed`], [`Gate::Asked`]). What a profile turns on (see
//! `config::profile`) is named in the table; the default profile, `exact`,
//! turns on no side call and no check of its own. The rule that acts on
//! the same reading of the request before a call rather than after an
//! answer, `hold_write` (`write_check`), is the call path's
//! ([`crate::agent::request_reading`]), not a gate.
//!
//! | gate | reads | may |
//! |---|---|---|
//! | [`Gate::CutOff`] | `finish_reason: length`; the operator's check and its rounds left | ask again (schema), send back (a checked send, one round) or fail `provider_error` |
//! | [`Gate::BudgetStop`] | mode `WrapUp(Budget)` | fail `budget_exceeded` |
//! | [`Gate::LoopStop`] | mode `WrapUp(..)`, the answer's JSON shape | fail `loop_detected` |
//! | [`Gate::HeldBack`] | writes held back (`hold_large_writes`: most of a file removed, or a file not read first), not made since | send back once, then fail `verification_failed` |
//! | [`Gate::Broken`] | files that parsed before the send and not now (`parse_check`) | send back once, then fail `verification_failed` |
//! | [`Gate::Landed`] | each changed file's hash on disk | fail `verification_failed` |
//! | [`Gate::Claimed`] | no file changed, no command ran; the model's reading of its answer (one side call; `claim_check`) | send back once, then fail `verification_failed` |
//! | [`Gate::Asked`] | no file changed, no command ran; the model's reading of the request (one side call; `request_check`) | send back once, then fail `verification_failed` (no operator's check) |
//! | [`Gate::SearchedOnly`] | no file changed, no command ran; `grep` looked and no `read_file` did (`read_before_answer`) | send back once (then the answer passes) |
//! | [`Gate::Verify`] | the operator's check command and its exit code | send back while rounds last, then fail |
//! | [`Gate::Schema`] | the send's `output_schema` | ask again (no tools), then fail `output_invalid` |
//! | [`Gate::StopHook`] | the operator's `Stop` hooks' answers | send back to work (bounded by `max_iterations`) |
//!
//! Every other way a send ends, with its status and code (`ok` without a
//! code), what triggers it and where:
//!
//! | status / code | trigger | where |
//! |---|---|---|
//! | `ok` | an answer every gate let through (plan mode: `plan_complete` first) | `agent::run` |
//! | `ok` | the operator's check passes at a limit the send reached (iterations, context window) after it changed files | `agent::send_state::SendState::checked_anyway` |
//! | `ok` | a `compact` request: compacted, or nothing to compact | `agent::fit::compact_now` |
//! | `budget_exceeded` | the token or cost budget is spent: before a model call, or by the call whose tool calls would run next, or a wrap-up that called tools (each decided by `budget::Meter::at`, whose table lists them) | `agent::limits`, `agent::turn`, `agent::round` |
//! | `max_iterations` | no model call left | `agent::limits` |
//! | `context_overflow` | the conversation cannot be fitted to the window (after one retry with the learned window) | `agent::turn` (`fit::fit`) |
//! | `provider_error` and the provider's codes | the model call failed after retries; or the answer ran away repeating itself | `agent::turn` |
//! | `protocol_error` | the request body cannot be built | `agent::turn` |
//! | `loop_detected` | the same calls again after an answer without tools was asked for | `agent::round` |
//! | `hook_blocked` | a `UserPromptSubmit` hook blocked the message, or a `PreCompact` hook the compaction | `session::runner`, `agent::fit` |
//! | `cancelled` | `cancel`, `shutdown`, SIGINT/SIGTERM | `session::runner` |
//! | `internal_error` | a panic inside the send (caught) | `session::runner` |
//! | `queue_timeout` | waited in the queue past `queue_timeout` | `session` |

mod asked;
mod broken;
mod budget_stop;
mod claimed;
mod cut_off;
mod held_back;
mod landed;
mod loop_stop;
pub mod order;
mod schema;
mod searched_only;
mod stop_hook;
pub mod verdict;
mod verify;

pub use order::{Gate, ORDER};
pub use verdict::{Answer, Verdict};

use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;
use crate::wire::ErrorEnvelope;
use verdict::said;

impl Gate {
    /// This gate's verdict on `answer`.
    pub async fn review(self, cx: &mut SendState<'_>, answer: &mut Answer) -> Verdict {
        match self {
            Gate::CutOff => cut_off::review(cx, answer),
            Gate::BudgetStop => budget_stop::review(cx, answer),
            Gate::LoopStop => loop_stop::review(cx, answer),
            Gate::HeldBack => held_back::review(cx),
            Gate::Broken => broken::review(cx).await,
            Gate::Landed => landed::review(cx).await,
            Gate::Claimed => claimed::review(cx, &answer.text).await,
            Gate::Asked => asked::review(cx).await,
            Gate::SearchedOnly => searched_only::review(cx),
            Gate::Verify => verify::review(cx).await,
            Gate::Schema => schema::review(cx, answer),
            Gate::StopHook => stop_hook::review(cx, answer).await,
        }
    }
}

/// What follows a final answer, once every gate has had its say.
#[derive(Debug)]
pub enum Review {
    /// It passed every gate: the send ends `ok` with this response.
    Accept(String),
    /// Back to the model with `note`, the next request made in `mode`.
    Again { note: String, mode: Mode },
    /// The send ends with `error`.
    Fail { error: ErrorEnvelope, answer: Option<String> },
}

/// Runs `answer` through the gates in [`ORDER`]; the first that does not
/// let it pass decides.
pub async fn review(cx: &mut SendState<'_>, mut answer: Answer) -> Review {
    for gate in ORDER {
        let verdict = gate.review(cx, &mut answer).await;
        if !matches!(verdict, Verdict::Pass) {
            tracing::info!(?gate, "an answer gate stopped the answer");
        }
        match verdict {
            Verdict::Pass => {}
            Verdict::Again { note, mode } => return Review::Again { note, mode },
            // A gate that has no answer of its own to report keeps the model's.
            Verdict::Fail { error, answer: own } => {
                return Review::Fail { error, answer: own.or_else(|| said(&answer.text)) };
            }
        }
    }
    Review::Accept(answer.text)
}
