//! Gate: every file the send reports changed holds what was written.
//!
//! Reads: [`crate::agent::facts::Facts::changed`] (the hash of what each
//! file's last `write_file`/`edit_file` wrote) against the file on disk,
//! for the files no later command or MCP call may have touched. May: end
//! the send `verification_failed` naming the file when they differ (the
//! file changed under pirn, or the write did not land): a result is `ok`
//! only when what it reports is on disk.

use super::verdict::Verdict;
use crate::agent::send_state::SendState;
use crate::tools::content_hash;
use crate::wire::{ErrorCode, ErrorEnvelope};

pub(super) async fn review(cx: &mut SendState<'_>) -> Verdict {
    let expected: Vec<(std::path::PathBuf, u64)> = cx
        .facts
        .changed
        .iter()
        .filter(|(p, _)| !cx.facts.touched_since.contains(*p))
        .map(|(p, h)| (p.clone(), *h))
        .collect();
    if expected.is_empty() {
        return Verdict::Pass;
    }
    let differs = cx
        .tools
        .off_thread(move |t| {
            expected.into_iter().find(|(path, hash)| {
                // The bytes, whatever they hold: a write may land text a
                // read would refuse (a NUL, more than read_file shows).
                let on_disk = t.resolve(&path.to_string_lossy()).ok().and_then(|c| t.read_bytes(&c).ok());
                on_disk.is_none_or(|bytes| content_hash(&bytes) != *hash)
            })
        })
        .await;
    match differs {
        None => Verdict::Pass,
        Some((path, _)) => {
            let error = ErrorEnvelope::new(
                ErrorCode::VerificationFailed,
                format!("{} does not hold what the model last wrote to it: the change is not on disk", cx.shown(&path)),
            );
            Verdict::Fail { error, answer: None }
        }
    }
}
