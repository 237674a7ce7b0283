//! muti's shell protocol (`../shared/reference/muti-shell-websocket-api.md`):
//! its binary frames and the checks a META must pass.
//!
//! Owns: the frame types ([`ClientFrame`], one type byte then the payload), the
//! META message ([`Meta`]) and [`admit`], which turns a META into a
//! [`Spec`] or a [`Refusal`] (allowlist, password, `work_dir` confinement,
//! timeout). No I/O here; the WebSocket side is `transport::http::shell`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::TerminalOptions;
use super::process::{Spec, TerminalMode};

/// META (client → server): the session's configuration, JSON.
pub const META: u8 = 0x01;
/// ACK (server → client): `{success, error}`.
pub const ACK: u8 = 0x02;
/// STDIN (client → server): raw bytes.
pub const STDIN: u8 = 0x03;
/// STDOUT (server → client): raw bytes.
pub const STDOUT: u8 = 0x04;
/// STDERR (server → client, stream mode only): raw bytes.
pub const STDERR: u8 = 0x05;
/// RESIZE (client → server): rows, cols as u16 big-endian.
pub const RESIZE: u8 = 0x06;
/// SIGNAL (client → server): one byte, the signal number.
pub const SIGNAL: u8 = 0x07;
/// EXIT (server → client): the exit code as i32 big-endian.
pub const EXIT: u8 = 0x08;
/// ERROR (server → client): `{message}`.
pub const ERROR: u8 = 0x09;

/// A client frame, decoded.
#[derive(Debug, PartialEq)]
pub enum ClientFrame {
    Meta(Bytes),
    Stdin(Bytes),
    Resize { rows: u16, cols: u16 },
    Signal(u8),
}

/// A client frame that is not one (the connection closes with 1002).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadFrame(pub String);

impl ClientFrame {
    /// Decodes one binary message from the client.
    pub fn decode(msg: Bytes) -> Result<ClientFrame, BadFrame> {
        let Some(&kind) = msg.first() else { return Err(BadFrame("empty message".into())) };
        let payload = msg.slice(1..);
        match (kind, payload.len()) {
            (META, _) => Ok(ClientFrame::Meta(payload)),
            (STDIN, _) => Ok(ClientFrame::Stdin(payload)),
            (RESIZE, 4) => Ok(ClientFrame::Resize {
                rows: u16::from_be_bytes([payload[0], payload[1]]),
                cols: u16::from_be_bytes([payload[2], payload[3]]),
            }),
            (SIGNAL, 1) => Ok(ClientFrame::Signal(payload[0])),
            (RESIZE | SIGNAL, n) => Err(BadFrame(format!("message type 0x{kind:02x} with a {n}-byte payload"))),
            _ => Err(BadFrame(format!("unknown message type 0x{kind:02x}"))),
        }
    }
}

/// A server frame: the type byte, then `payload`.
pub fn frame(kind: u8, payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(1 + payload.len());
    out.push(kind);
    out.extend_from_slice(payload);
    out.into()
}

/// ACK `{success, error}`.
pub fn ack(error: Option<&str>) -> Bytes {
    frame(ACK, json!({"success": error.is_none(), "error": error.unwrap_or("")}).to_string().as_bytes())
}

/// ERROR `{message}`.
pub fn error(message: &str) -> Bytes {
    frame(ERROR, json!({"message": message}).to_string().as_bytes())
}

/// EXIT with `code`.
pub fn exit(code: i32) -> Bytes {
    frame(EXIT, &code.to_be_bytes())
}

/// META, as the document lists it. Unknown fields are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub command: String,
    pub args: Vec<String>,
    pub env: std::collections::BTreeMap<String, String>,
    pub work_dir: Option<String>,
    pub password: Option<String>,
    pub tty: Option<TtyMeta>,
    /// Seconds; 0 or absent: the daemon's default.
    pub timeout: Option<f64>,
}

/// META's `tty` object.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct TtyMeta {
    pub rows: Option<u16>,
    pub cols: Option<u16>,
    pub term: Option<String>,
}

/// Why a META is refused; the text goes into the ERROR frame.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct Refusal(pub String);

/// Where a shell may run: its session's workspace and allowed paths.
pub struct Confinement<'a> {
    pub workspace: &'a Path,
    pub allowed_paths: &'a [PathBuf],
}

/// Checks `meta` against the options and returns what to run and for how
/// long. `tty` is the connection's mode (`?mode=`).
pub fn admit(
    meta: &[u8],
    tty: bool,
    options: &TerminalOptions,
    place: &Confinement<'_>,
) -> Result<(Spec, Duration), Refusal> {
    let meta: Meta = serde_json::from_slice(meta).map_err(|e| Refusal(format!("invalid META: {e}")))?;
    if let Some(expected) = &options.password {
        let given = meta.password.as_deref().unwrap_or("");
        if !crate::secret::matches(given.as_bytes(), expected.as_bytes()) {
            return Err(Refusal("authentication failed".into()));
        }
    }
    if meta.command.is_empty() {
        return Err(Refusal("META has no command".into()));
    }
    if !options.allow.contains(&meta.command) {
        return Err(Refusal(format!("command not allowed: {:?}", meta.command)));
    }
    let cwd = work_dir(meta.work_dir.as_deref(), options, place)?;
    let timeout = match meta.timeout {
        Some(t) if t.is_finite() && t > 0.0 => Duration::from_secs_f64(t.min(options.max_timeout.as_secs_f64())),
        _ => options.default_timeout,
    };
    let mut env: Vec<(String, String)> = meta.env.into_iter().collect();
    let mode = if tty {
        let t = meta.tty.unwrap_or_default();
        let term = t.term.or_else(|| env.iter().find(|(k, _)| k == "TERM").map(|(_, v)| v.clone()));
        env.retain(|(k, _)| k != "TERM");
        env.push(("TERM".into(), term.filter(|t| !t.is_empty()).unwrap_or_else(|| "xterm-256color".into())));
        TerminalMode::Tty {
            rows: t.rows.filter(|r| *r > 0).unwrap_or(24),
            cols: t.cols.filter(|c| *c > 0).unwrap_or(80),
        }
    } else {
        TerminalMode::Stream
    };
    let passthrough = options.env_passthrough.clone();
    Ok((Spec { program: meta.command, args: meta.args, env, passthrough, cwd, mode }, timeout))
}

/// META's `work_dir` (relative ones from the workspace), which must be an
/// existing directory inside the workspace or an allowed path.
fn work_dir(asked: Option<&str>, options: &TerminalOptions, place: &Confinement<'_>) -> Result<PathBuf, Refusal> {
    let Some(asked) = asked.filter(|d| !d.is_empty()) else { return Ok(place.workspace.to_path_buf()) };
    let path = place.workspace.join(asked);
    let real = path.canonicalize().map_err(|e| Refusal(format!("work_dir {asked:?}: {e}")))?;
    if !real.is_dir() {
        return Err(Refusal(format!("work_dir {asked:?} is not a directory")));
    }
    let roots = std::iter::once(place.workspace).chain(place.allowed_paths.iter().map(PathBuf::as_path));
    let mut roots = roots.chain(options.allowed_paths.iter().map(PathBuf::as_path));
    if roots.any(|root| real.starts_with(root)) {
        Ok(real)
    } else {
        Err(Refusal(format!("work_dir {asked:?} is outside the session's workspace and allowed paths")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> TerminalOptions {
        TerminalOptions {
            remote: false,
            allow: vec!["bash".into()],
            password: Some("pw".into()),
            max_shells: 2,
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            allowed_paths: Vec::new(),
            console_shell: "/bin/sh".into(),
            env_passthrough: Vec::new(),
        }
    }

    #[test]
    fn frames_decode_and_refuse_bad_lengths() {
        assert_eq!(
            ClientFrame::decode(Bytes::from_static(&[RESIZE, 0, 40, 0, 100])).unwrap(),
            ClientFrame::Resize { rows: 40, cols: 100 }
        );
        assert_eq!(ClientFrame::decode(Bytes::from_static(&[SIGNAL, 2])).unwrap(), ClientFrame::Signal(2));
        assert_eq!(
            ClientFrame::decode(Bytes::from_static(b"\x03hi")).unwrap(),
            ClientFrame::Stdin(Bytes::from_static(b"hi"))
        );
        assert!(ClientFrame::decode(Bytes::from_static(&[RESIZE, 1])).is_err());
        assert!(ClientFrame::decode(Bytes::from_static(&[0x42])).is_err());
        assert!(ClientFrame::decode(Bytes::new()).is_err());
        assert_eq!(&exit(-2)[..], &[EXIT, 0xff, 0xff, 0xff, 0xfe]);
    }

    #[test]
    fn admit_checks_password_command_work_dir_and_timeout() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        let workspace = ws.path().canonicalize().unwrap();
        let place = Confinement { workspace: &workspace, allowed_paths: &[] };
        let o = options();
        let meta = |v: serde_json::Value| v.to_string().into_bytes();
        let refused = |v| admit(&meta(v), true, &o, &place).unwrap_err().0;
        assert_eq!(refused(json!({"command": "bash"})), "authentication failed");
        assert_eq!(refused(json!({"command": "bash", "password": "px"})), "authentication failed");
        assert!(refused(json!({"command": "/bin/bash", "password": "pw"})).starts_with("command not allowed"));
        assert!(refused(json!({"command": "bash", "password": "pw", "work_dir": "/"})).contains("outside"));
        assert!(refused(json!({"command": "bash", "password": "pw", "work_dir": "../.."})).contains("outside"));
        let (spec, timeout) = admit(
            &meta(json!({"command": "bash", "password": "pw", "work_dir": "sub", "timeout": 9999})),
            true,
            &o,
            &place,
        )
        .unwrap();
        assert_eq!((spec.cwd, timeout), (workspace.join("sub"), Duration::from_secs(600)));
        assert_eq!(spec.mode, TerminalMode::Tty { rows: 24, cols: 80 });
        assert!(spec.env.contains(&("TERM".into(), "xterm-256color".into())));
        let (spec, timeout) = admit(&meta(json!({"command": "bash", "password": "pw"})), false, &o, &place).unwrap();
        assert_eq!((spec.mode, timeout), (TerminalMode::Stream, Duration::from_secs(60)));
    }
}
