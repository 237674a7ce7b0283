//! Why a session cannot be opened or resumed, as [`super::open`] and
//! [`super::persist`] report it.
//!
//! Owns: [`OpenError`] and [`ResumeError`].

use crate::config::ConfigError;
use crate::wire::VersionError;

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The client asked for a protocol version this build cannot serve.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// `init.config` is unusable.
    #[error("invalid init: {0}")]
    Config(#[from] ConfigError),
    /// `resume_session_id` names a session that cannot be resumed.
    #[error("cannot resume session {id:?}: {reason}")]
    Resume { id: String, reason: ResumeError },
}

/// Why a stored session cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    #[error("persistence is off (PIRN_PERSIST=0 or config.persist false)")]
    PersistenceOff,
    #[error("its log has no meta entry")]
    NoMeta,
    /// Not stored, held by another process, or the store failed.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// `resume_at_message` names no message it holds.
    #[error("{0}")]
    At(super::fork::ForkError),
}

impl From<super::fork::ForkError> for ResumeError {
    fn from(e: super::fork::ForkError) -> ResumeError {
        match e {
            super::fork::ForkError::Store(s) => ResumeError::Store(s),
            super::fork::ForkError::NoMeta => ResumeError::NoMeta,
            other => ResumeError::At(other),
        }
    }
}
