//! Gate: the operator's `Stop` hooks (see [`crate::hooks::on_stop`]).
//!
//! Reads: what the operator's hook commands answer for this answer (a
//! hook is configured by the operator, never by the model or the
//! repository). May: send the model back to work with the hook's reason;
//! `max_iterations` bounds how often. Last, so a hook sees the answer the
//! send would otherwise end with.

use super::verdict::{Answer, Verdict};
use crate::agent::mode::Mode;
use crate::agent::send_state::SendState;

pub(super) async fn review(cx: &mut SendState<'_>, answer: &Answer) -> Verdict {
    match crate::hooks::on_stop(&cx.config.hook_scope(), cx.emit, &mut cx.stats.stop_hook_active, &answer.text).await {
        Some(note) => Verdict::Again { note, mode: Mode::Work },
        None => Verdict::Pass,
    }
}
