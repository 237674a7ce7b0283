//! The one way a session ends, for every transport (`pirn`, `pirn run`,
//! `pirn serve`): its sends end, then the transport's output, then its log.
//!
//! Owns: [`Session::end`] and the order it keeps. The order matters: the
//! transport's writer logs every line it writes to the session's journal,
//! so the journal is closed only once that writer is done, and the writer
//! is done only once nothing more can be emitted (the runner has ended and
//! every handle that could emit has been dropped). The journal's close is
//! bounded (see [`crate::store::Journal::close`]): a store that stalls
//! (Postgres SIGSTOPped, a full disk) is given up on loudly, in the log,
//! and the process still ends.

use std::future::Future;

use super::api::Session;

/// How a session's sends end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The running and queued sends finish (their results come first, in
    /// order); new ones are refused. `shutdown`, stdin EOF, the end of
    /// `pirn run`'s one send.
    Finish,
    /// The running send and every queued one are cancelled now (each gets
    /// its cancelled result). A signal, a closed stdout, `pirn serve`
    /// closing a session.
    Cancel,
}

impl Session {
    /// Ends the session: its sends as `ending` says (a `Finish` that
    /// `interrupt` cuts short becomes a `Cancel`), then `output` (the
    /// transport's writer or streams, which end once this handle is
    /// dropped, since nothing else can emit any more), then its log, flushed
    /// within the journal's close bound. Returns what `output` returned.
    pub async fn end<R>(
        self,
        ending: Ending,
        interrupt: impl Future<Output = ()>,
        output: impl Future<Output = R>,
    ) -> R {
        match ending {
            Ending::Finish => {
                tokio::select! {
                    _ = self.drain() => {}
                    _ = interrupt => self.shutdown().await,
                }
            }
            Ending::Cancel => self.shutdown().await,
        }
        let journal = self.journal().cloned();
        drop(self);
        let result = output.await;
        if let Some(j) = journal {
            j.close().await;
        }
        result
    }
}
