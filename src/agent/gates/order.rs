//! The answer gates by name, and the one order in which an answer meets
//! them.
//!
//! Owns: [`Gate`] (one variant per gate, each gate in its own file; a
//! gate's verdict is `Gate::review`, in `gates/mod.rs`) and [`ORDER`].
//! Names nothing else, so the send's state ([`crate::agent::send_state::SendState`],
//! which records the gates that already sent the model back) can hold a
//! [`Gate`] without importing the gates themselves.

/// The gates, each in its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    CutOff,
    BudgetStop,
    LoopStop,
    HeldBack,
    Broken,
    Landed,
    Claimed,
    Asked,
    SearchedOnly,
    Verify,
    Schema,
    StopHook,
}

/// The order in which an answer meets the gates: first what makes it no
/// answer at all (cut off, out of budget, a loop), then whether the work
/// it reports is on disk and sound, whether an answer that changed nothing
/// says it changed something or was asked for a change, or rests on
/// search results alone, then the
/// operator's check, the form the operator asked for, and last the
/// operator's own Stop hooks.
pub const ORDER: [Gate; 12] = [
    Gate::CutOff,
    Gate::BudgetStop,
    Gate::LoopStop,
    Gate::HeldBack,
    Gate::Broken,
    Gate::Landed,
    Gate::Claimed,
    Gate::Asked,
    Gate::SearchedOnly,
    Gate::Verify,
    Gate::Schema,
    Gate::StopHook,
];
