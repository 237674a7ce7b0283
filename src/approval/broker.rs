//! The [`PermissionBroker`]: the permission requests of one session that
//! wait for the host's answer (`permission_response`, pirn's opt-in
//! extension), matched by `request_id`; the first answer (or the timeout)
//! wins and later ones are told apart from unknown ids.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::wire::Decision;

/// Why an answer was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No request with that id was ever made here.
    #[error("no permission request with this request_id")]
    Unknown,
    /// Another answer (or the timeout) came first.
    #[error("this permission request was already answered or has expired")]
    AlreadyAnswered,
}

/// Pending permission requests of one session.
#[derive(Debug, Default)]
pub struct PermissionBroker {
    pending: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
    /// Ids settled (answered, timed out or abandoned), so late answers are
    /// told apart from unknown ones. Bounded by the number of requests made.
    settled: Mutex<HashSet<String>>,
}

impl PermissionBroker {
    /// Opens a request; the receiver yields the host's decision.
    pub fn open(&self) -> (String, oneshot::Receiver<Decision>) {
        let id = format!("perm_{}", uuid::Uuid::new_v4().simple());
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        (id, rx)
    }

    /// Delivers an answer. The first answer wins.
    pub fn answer(&self, id: &str, decision: Decision) -> Result<(), AnswerError> {
        let sender = lock(&self.pending).remove(id);
        match sender {
            Some(tx) => {
                lock(&self.settled).insert(id.to_owned());
                // The waiter may have been cancelled meanwhile; the answer is
                // still the first one.
                let _ = tx.send(decision);
                Ok(())
            }
            None if lock(&self.settled).contains(id) => Err(AnswerError::AlreadyAnswered),
            None => Err(AnswerError::Unknown),
        }
    }

    /// Closes a request that will not be answered any more (timeout, cancel).
    pub fn settle(&self, id: &str) {
        if lock(&self.pending).remove(id).is_some() {
            lock(&self.settled).insert(id.to_owned());
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broker_first_answer_wins() {
        let b = PermissionBroker::default();
        let (id, mut rx) = b.open();
        assert_eq!(b.answer(&id, Decision::Allow), Ok(()));
        assert_eq!(b.answer(&id, Decision::Deny), Err(AnswerError::AlreadyAnswered));
        assert_eq!(b.answer("nope", Decision::Deny), Err(AnswerError::Unknown));
        assert_eq!(rx.try_recv(), Ok(Decision::Allow));
    }
}
