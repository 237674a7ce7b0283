//! The wire types of many attempts at one task: fork, rewind and worktrees
//! (0.3.0).
//!
//! Owns: `init.config.worktree` and `worktree_cleanup` ([`WorktreeSpec`],
//! [`WorktreeCleanup`]), the `rewind` request ([`RewindRequest`]), and what
//! a `result` says of them ([`CheckpointKept`], [`RewoundFile`],
//! [`WorktreeState`]). The fork fields are plain `init.config` fields
//! (`fork_session`, `resume_at_message`, in `request`). The behaviour is
//! `session::fork`, `checkpoint` and `worktree`'s; protocol.md Part 5 says
//! it field by field.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `init.config.worktree`: `true`/`false`, or the worktree's name.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq)]
#[serde(untagged)]
pub enum WorktreeSpec {
    Switch(bool),
    Name(String),
}

impl WorktreeSpec {
    /// `None` for no worktree, `Some(None)` for a generated name.
    pub fn wanted(&self) -> Option<Option<&str>> {
        match self {
            WorktreeSpec::Switch(false) => None,
            WorktreeSpec::Switch(true) => Some(None),
            WorktreeSpec::Name(n) => Some(Some(n)),
        }
    }
}

/// `init.config.worktree_cleanup`.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, utoipa::ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeCleanup {
    #[default]
    Keep,
    RemoveIfUnchanged,
}

/// 0.3.0 `rewind`: `{type, id, send_id}`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq)]
pub struct RewindRequest {
    pub id: String,
    /// The send whose changes, and every later send's, are undone (the
    /// latest send with this id when the session reused one).
    pub send_id: String,
    /// Only say what would be put back (`rewound`), the checks included;
    /// nothing is written (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
}

/// 0.3.0 `result.checkpoint`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct CheckpointKept {
    /// Files whose state before the send is kept (created files included).
    pub files: u32,
    /// Bytes of content kept.
    pub bytes: u64,
    /// Files the send changed whose state before was not kept (over the
    /// bounds: 8 MiB a file, 64 MiB a send; or unreadable): a rewind across
    /// this send refuses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unkept: Vec<String>,
}

/// 0.3.0 `result.worktree`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct WorktreeState {
    pub name: String,
    /// The worktree's root (absolute).
    pub path: String,
    /// Its branch, `pirn/<name>`.
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The files that differ from `base` (tracked and untracked, relative
    /// to the worktree's root, sorted).
    pub changed: Vec<String>,
    /// `git diff --shortstat` against `base` (tracked files), e.g. "2
    /// files changed, 3 insertions(+), 1 deletion(-)"; empty when none.
    pub diff_stat: String,
}

/// One file a `rewind` put back (`result.rewound`).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub struct RewoundFile {
    /// Relative to the workspace.
    pub path: String,
    /// `restored` (its bytes and mode put back) or `deleted` (it did not
    /// exist before the send).
    pub action: String,
}
