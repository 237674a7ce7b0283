//! What a store tells about its sessions: a listing's row and the
//! notice a follower gets when an entry is stored.
//!
//! Owns: [`SessionInfo`] and [`Appended`].

use std::sync::Arc;

use serde::Serialize;

/// A stored session as listings show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionInfo {
    pub session_id: String,
    /// The first send's message, cut at 80 characters (empty before one).
    pub title: String,
    pub model: String,
    /// Unix ms of the first entry.
    pub created_ms: u64,
    /// Unix ms of the last entry (the file's mtime for the file store).
    pub updated_ms: u64,
    /// Whether a process holds it open now (file store: a lock on the
    /// file; Postgres: claimed and not released, so a killed host's
    /// sessions read live until another host resumes them).
    pub live: bool,
}

/// A new entry was stored: `(session_id, its seq)`.
pub type Appended = (Arc<str>, u64);
