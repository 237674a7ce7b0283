//! The exit codes of pirn's one-shot commands (`pirn run`, `pirn -p`), and
//! the mapping from a send's result to one of them ([`exit_code`]).

use crate::wire::{ErrorCode, SendResult, Status};

/// The send succeeded.
pub const EXIT_OK: i32 = 0;
/// Provider error (model server failed or unreachable).
pub const EXIT_PROVIDER: i32 = 1;
/// Bad usage (clap's code for bad flags; also an invalid workspace).
pub const EXIT_USAGE: i32 = 2;
/// Stopped by `max_iterations`, loop detection or a spent budget.
pub const EXIT_LIMIT: i32 = 3;
/// Any other error (tool or protocol).
pub const EXIT_OTHER: i32 = 4;
/// Cancelled by SIGINT or SIGTERM (128 + SIGINT).
pub const EXIT_CANCELLED: i32 = 130;

/// Exit code of a send's result (see the constants).
pub fn exit_code(result: &SendResult) -> i32 {
    match (result.status, result.error.as_ref().map(|e| e.code)) {
        (Status::Ok, _) => EXIT_OK,
        (_, Some(ErrorCode::ProviderError)) => EXIT_PROVIDER,
        (_, Some(ErrorCode::MaxIterations | ErrorCode::LoopDetected | ErrorCode::BudgetExceeded)) => EXIT_LIMIT,
        (_, Some(ErrorCode::Cancelled)) => EXIT_CANCELLED,
        _ => EXIT_OTHER,
    }
}
