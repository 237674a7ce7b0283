//! `--continue`: the most recent stored session of a workspace.
//!
//! Owns: [`latest_in`], shared by `pirn run --continue` and Claude Code's
//! surface (`pirn -p --continue`, the SDKs' `continue_conversation`).

use std::path::Path;

use crate::store::Store;

/// Sessions looked at, most recent first, before giving up.
const MAX_LOOKED_AT: usize = 200;

/// The id of the session of `workspace` (a canonical path) that was active
/// last, if the store holds one. Sessions another process holds open
/// (`live`) are passed over: resuming one would fail.
pub async fn latest_in(store: &Store, workspace: &Path) -> Option<String> {
    let mut stored = store.list().await.ok()?;
    stored.sort_by_key(|s| std::cmp::Reverse(s.updated_ms));
    for info in stored.into_iter().filter(|s| !s.live).take(MAX_LOOKED_AT) {
        let Ok(entries) = store.load(&info.session_id, 0).await else { continue };
        if Path::new(&crate::store::fold::fold(&entries).workspace) == workspace {
            return Some(info.session_id);
        }
    }
    None
}
