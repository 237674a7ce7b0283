//! The queue of one session's sends: who waits, who runs, which ids were
//! used.
//!
//! Owns: the rules of accepting a send ([`Queue::admit`]: ids are never
//! reused in a session, the transport's length limit, nothing after
//! closing) and of taking one off ([`Queue::remove_waiting`],
//! [`Queue::next`]). Every operation is one short critical section under the
//! session's lock, so a send cannot be both cancelled and started.

use std::collections::{HashSet, VecDeque};

use tokio_util::sync::CancellationToken;

use crate::agent::SendSpec;

/// Why a send was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendRejected {
    #[error("a send with this id was already accepted in this session")]
    DuplicateId,
    #[error("too many sends are waiting")]
    QueueFull,
    #[error("the session is shutting down")]
    Closing,
    /// The send's options cannot be used (an `output_schema` that does
    /// not compile); answered with an `invalid_request` result.
    #[error("{0}")]
    InvalidRequest(String),
}

/// One accepted send (or manual compaction, which queues like one).
#[derive(Debug)]
pub struct Job {
    pub id: String,
    pub message: String,
    pub cancel: CancellationToken,
    pub kind: JobKind,
    /// Its resolved 0.3.0 options (defaults for a compaction).
    pub spec: Box<SendSpec>,
}

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Runs the agent loop on `message`.
    Send,
    /// Summarises the older conversation (0.3.0 `compact`).
    Compact,
    /// Puts the files back to before the send whose id is the job's
    /// `message` (0.3.0 `rewind`).
    Rewind,
    /// The same, checked and listed, nothing written (`dry_run`).
    RewindPreview,
}

/// See the module doc.
#[derive(Debug, Default)]
pub struct Queue {
    pub waiting: VecDeque<Job>,
    /// Id and token of the running send.
    pub active: Option<(String, CancellationToken)>,
    /// No more sends; the runner stops when the queue is empty.
    pub closing: bool,
    /// Every send id accepted so far (ids are never reused in a session).
    seen: HashSet<String>,
}

/// What the runner should do next.
#[derive(Debug)]
pub enum Next {
    /// Run this send (now marked active).
    Run(Job),
    /// Nothing waits; wait for a wake-up.
    Wait,
    /// Closing and empty: the runner ends.
    Stop,
}

impl Queue {
    /// Accepts send `id` at the back of the queue, unless the session is
    /// closing, the id was used before, or `max_waiting` sends already wait.
    pub fn admit(
        &mut self,
        id: &str,
        message: String,
        kind: JobKind,
        max_waiting: Option<usize>,
    ) -> Result<(), SendRejected> {
        if self.closing {
            return Err(SendRejected::Closing);
        }
        if self.seen.contains(id) {
            return Err(SendRejected::DuplicateId);
        }
        if max_waiting.is_some_and(|max| self.waiting.len() >= max) {
            return Err(SendRejected::QueueFull);
        }
        self.seen.insert(id.to_owned());
        let cancel = CancellationToken::new();
        self.waiting.push_back(Job { id: id.to_owned(), message, cancel, kind, spec: Box::default() });
        Ok(())
    }

    /// Puts a steer the running send ended before taking at the front of
    /// the queue, as a send of its own (its id was admitted with the steer).
    pub fn readmit_front(&mut self, id: String, message: String, spec: crate::agent::SendSpec) {
        let cancel = CancellationToken::new();
        self.waiting.push_front(Job { id, message, cancel, kind: JobKind::Send, spec: Box::new(spec) });
    }

    /// Records `id` as used (a steer a running send took): a later request
    /// may not reuse it.
    pub fn note_id(&mut self, id: &str) {
        self.seen.insert(id.to_owned());
    }

    /// True when `id` was used by a request of this session.
    pub fn used(&self, id: &str) -> bool {
        self.seen.contains(id)
    }

    /// Removes send `id` if it is still waiting.
    pub fn remove_waiting(&mut self, id: &str) -> Option<Job> {
        let at = self.waiting.iter().position(|j| j.id == id)?;
        self.waiting.remove(at)
    }

    /// Takes the next send off the queue and marks it active.
    pub fn take_next(&mut self) -> Next {
        match self.waiting.pop_front() {
            Some(job) => {
                self.active = Some((job.id.clone(), job.cancel.clone()));
                Next::Run(job)
            }
            None if self.closing => Next::Stop,
            None => Next::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_and_the_limit_counts_waiting_sends() {
        let mut q = Queue::default();
        q.admit("a", "1".into(), JobKind::Send, Some(1)).unwrap();
        assert_eq!(q.admit("b", "2".into(), JobKind::Send, Some(1)), Err(SendRejected::QueueFull));
        let Next::Run(job) = q.take_next() else { panic!("a runs") };
        assert_eq!(job.id, "a");
        assert_eq!(q.admit("a", "again".into(), JobKind::Send, Some(1)), Err(SendRejected::DuplicateId));
        q.admit("b", "2".into(), JobKind::Send, Some(1)).unwrap();
        assert!(q.remove_waiting("b").is_some());
        assert_eq!(
            q.admit("b", "3".into(), JobKind::Send, None),
            Err(SendRejected::DuplicateId),
            "a withdrawn id stays used"
        );
    }

    #[test]
    fn fifo_then_stop_once_closing() {
        let mut q = Queue::default();
        for id in ["1", "2", "3"] {
            q.admit(id, String::new(), JobKind::Send, None).unwrap();
        }
        assert!(q.remove_waiting("2").is_some() && q.remove_waiting("2").is_none());
        q.closing = true;
        assert_eq!(q.admit("4", String::new(), JobKind::Send, None), Err(SendRejected::Closing));
        let order: Vec<String> = std::iter::from_fn(|| match q.take_next() {
            Next::Run(j) => Some(j.id),
            _ => None,
        })
        .collect();
        assert_eq!(order, ["1", "3"]);
        assert!(matches!(q.take_next(), Next::Stop));
        q.closing = false;
        assert!(matches!(q.take_next(), Next::Wait));
    }
}
