//! Bodies of ACECode's console routes (`/api/health`, `/api/pty…`,
//! `WS /ws/pty/{id}`), after `../shared/reference/acecode-daemon-api.md`
//! section 7.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::sessions::ConsoleAvailability;

/// `GET /api/health`: ACECode's liveness probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DaemonHealth {
    /// A random id of this daemon process, new at each start.
    pub guid: String,
    /// The daemon's process id.
    pub pid: u32,
    /// The port it listens on.
    pub port: u16,
    /// pirn's version.
    pub version: String,
    /// The daemon's working directory (a console's default `cwd`).
    pub cwd: String,
    /// Seconds since the daemon started.
    pub uptime_seconds: u64,
    /// Whether the console routes are on, and their PTY backend.
    pub console: ConsoleAvailability,
}

/// `POST /api/pty`: a new console (a shell on a PTY).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct CreateConsole {
    /// Its directory (an existing one; default: the daemon's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Its title (default: `Terminal N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A console, as `POST /api/pty` and `GET /api/pty` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConsoleInfo {
    /// The console's id (`pty-` and 32 hex digits): the path segment of its routes.
    pub id: String,
    /// Its title (at most 200 bytes).
    pub title: String,
    /// The shell's path.
    pub shell: String,
    /// Its working directory, canonical.
    pub cwd: String,
    /// `running` or `exited`.
    pub status: String,
    /// The shell's process id.
    pub pid: i32,
    /// The PTY backend's name.
    pub backend: String,
    /// Set once the shell exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// `GET /api/pty`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConsoleList {
    /// The PTY backend's name.
    pub backend: String,
    /// Every console, running or exited, until deleted (at most 16).
    pub sessions: Vec<ConsoleInfo>,
}

/// `POST /api/pty/{id}/resize`: each 2..=1000 (else 400).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Resize {
    /// Columns, 2..=1000.
    #[schema(minimum = 2, maximum = 1000)]
    pub cols: u64,
    /// Rows, 2..=1000.
    #[schema(minimum = 2, maximum = 1000)]
    pub rows: u64,
}

/// `POST /api/pty/{id}/title`: a blank title is ignored; a long one is cut
/// to 200 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Title {
    /// The new title.
    pub title: String,
}

/// A control frame of `WS /ws/pty/{id}`: a binary frame whose first byte
/// is 0x00, then this object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ConsoleControl {
    /// After the replay: the byte offset where live output starts (pass it
    /// as `?cursor=` to resume).
    Cursor {
        /// Bytes of output so far (the replay's end).
        cursor: u64,
    },
    /// The shell exited; the socket closes next.
    Exit {
        /// The shell's exit code (128 + N after signal N).
        exit_code: i32,
    },
}
