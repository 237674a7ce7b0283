//! Which protocol version a session speaks, and how what it writes is
//! shaped for it.
//!
//! Owns: [`negotiate`] (a client's `protocol_version` against this build's
//! [`PROTOCOL_VERSION`], at `init`) and [`shape`] (a 0.2.0 session gets
//! heddle's shapes: no 0.3.0 event types or fields, heddle's error codes).
//! Source: `heddle-headless-protocol.md` (0.2.0) and `protocol/` (0.3.0).

use serde_json::Value;

use super::error::{ErrorCode, ErrorEnvelope};
use super::outgoing::{Event, OutgoingMessage};

/// The protocol version this build speaks: the content of `PROTOCOL_VERSION`.
pub const PROTOCOL_VERSION: &str = include_str!("../../PROTOCOL_VERSION").trim_ascii();

/// A client's `protocol_version` that this build cannot serve. The text is
/// phrased as in the protocol document (`Client requested 1.0.0, server is
/// 0.3.0`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// A different MAJOR version.
    #[error("Client requested {requested}, server is {server}")]
    Incompatible { requested: String, server: String },
    /// Not `MAJOR.MINOR.PATCH`.
    #[error("Client requested {requested:?}, which is not a semver version ({reason}); server is {server}")]
    NotSemver { requested: String, reason: String, server: String },
}

impl From<&VersionError> for ErrorEnvelope {
    fn from(e: &VersionError) -> Self {
        ErrorEnvelope::new(ErrorCode::ProtocolVersionMismatch, e.to_string())
    }
}

/// The protocol versions pirn serves. A session speaks one of them, chosen
/// at `init` by [`negotiate`]; what it writes is shaped by [`shape`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// heddle's headless protocol as its document and worker define it.
    #[default]
    V0_2,
    /// 0.2.0 plus pirn's extensions (`protocol/protocol-0.3.md`).
    V0_3,
}

impl ProtocolVersion {
    /// `"0.2.0"` or `"0.3.0"`, as `init_ok.protocol_version` carries it.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V0_2 => "0.2.0",
            ProtocolVersion::V0_3 => "0.3.0",
        }
    }
}

/// Picks the version for a client that asked for `requested` (`None`: it
/// named none, which means 0.2.0). Compatible when the MAJOR matches
/// [`PROTOCOL_VERSION`]'s; the answer is the lower of the two minors (a
/// 0.2.x or older client gets 0.2.0, a 0.3.x or newer one 0.3.0).
pub fn negotiate(requested: Option<&str>) -> Result<ProtocolVersion, VersionError> {
    let Some(requested) = requested else { return Ok(ProtocolVersion::V0_2) };
    let server = PROTOCOL_VERSION.to_owned();
    let ours = semver::Version::parse(PROTOCOL_VERSION).unwrap_or(semver::Version::new(0, 0, 0));
    match semver::Version::parse(requested.trim()) {
        Ok(theirs) if theirs.major == ours.major && theirs.minor >= 3 => Ok(ProtocolVersion::V0_3),
        Ok(theirs) if theirs.major == ours.major => Ok(ProtocolVersion::V0_2),
        Ok(_) => Err(VersionError::Incompatible { requested: requested.to_owned(), server }),
        Err(e) => Err(VersionError::NotSemver { requested: requested.to_owned(), reason: e.to_string(), server }),
    }
}

/// Shapes `msg` for a session speaking `version`: a 0.2.0 client gets
/// exactly the fields heddle's document lists (pirn's extension fields are
/// removed) and no extension events. Returns false when `msg` is not part of
/// that version at all (it must not be written).
pub fn shape(msg: &mut OutgoingMessage, version: ProtocolVersion) -> bool {
    if version >= ProtocolVersion::V0_3 {
        return true;
    }
    if let OutgoingMessage::Event(e) = msg
        && e.parent_call_id.is_some()
    {
        // A subagent's event: 0.2.0 has no subagents (config.agents needs
        // 0.3.0), so this never happens; were it to, it is not written.
        return false;
    }
    match msg {
        OutgoingMessage::Event(e) => match &mut e.event {
            Event::ToolStart { call_id, .. } => *call_id = None,
            Event::ToolEnd { call_id, is_error, duration_ms, diff, .. } => {
                *call_id = None;
                *is_error = None;
                *duration_ms = None;
                *diff = None;
            }
            Event::PermissionRequest { request_id, args, .. } => {
                *request_id = None;
                *args = None;
            }
            Event::Retry { .. }
            | Event::StoreError { .. }
            | Event::HookStart { .. }
            | Event::HookEnd { .. }
            | Event::Plan { .. }
            | Event::ModelFallback { .. }
            | Event::ToolOutput { .. } => {
                return false;
            }
            Event::Usage { usage: u, side_call } => {
                u.cached_tokens = None;
                u.cost_usd = None;
                *side_call = None;
            }
            Event::ContextCompact { tokens_before, tokens_after, summary_tokens } => {
                *tokens_before = None;
                *tokens_after = None;
                *summary_tokens = None;
            }
            Event::Error { code, details, .. } => {
                *code = heddle_code(*code);
                heddle_details(details);
            }
            _ => {}
        },
        OutgoingMessage::Result(r) => {
            r.stop_reason = None;
            r.verification = None;
            r.structured_output = None;
            r.durable = None;
            r.session_cost_usd = None;
            r.files_changed = None;
            r.side_calls = None;
            r.checkpoint = None;
            r.rewound = None;
            r.steered = None;
            r.worktree = None;
            if let Some(e) = &mut r.error {
                e.code = heddle_code(e.code);
                heddle_details(&mut e.details);
            }
            // heddle counts the model calls that answered, and reports no
            // usage when none did.
            if r.iterations > 0 {
                r.iterations = r.calls_completed;
                if r.calls_completed == 0 {
                    r.usage = None;
                }
            }
            if let Some(u) = &mut r.usage {
                u.cached_tokens = None;
                u.cost_usd = None;
            }
        }
        OutgoingMessage::StatusOk(s) => {
            s.queue_length = None;
            s.interrupted = None;
            s.sandbox = None;
            s.budget = None;
            s.store = None;
            s.plan = None;
        }
        OutgoingMessage::InitOk(i) => {
            i.sandbox = None;
            i.instruction_files = None;
            i.profile = None;
        }
        OutgoingMessage::ShutdownOk(_) => {}
        OutgoingMessage::SteerOk(_) => return false,
    }
    true
}

/// The 0.2.0 code of a 0.3.0-only error code: the nearest one heddle's
/// document lists.
fn heddle_code(code: ErrorCode) -> ErrorCode {
    match code {
        ErrorCode::VerificationFailed
        | ErrorCode::OutputInvalid
        | ErrorCode::HookBlocked
        | ErrorCode::RewindRefused => ErrorCode::ToolError,
        ErrorCode::BudgetExceeded => ErrorCode::MaxIterations,
        ErrorCode::InvalidRequest => ErrorCode::ProtocolError,
        other => other,
    }
}

/// heddle's `details` of a provider's HTTP error: the body the server sent,
/// parsed when it is JSON (pirn's 0.3.0 `{kind: "http", status, body}`
/// keeps the status and the raw text).
fn heddle_details(details: &mut Option<Value>) {
    let Some(d) = details.as_mut() else { return };
    if d.get("kind").and_then(Value::as_str) != Some("http") {
        return;
    }
    if let Some(body) = d.get("body").and_then(Value::as_str) {
        *d = serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned()));
    }
}
