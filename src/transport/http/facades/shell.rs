//! `GET /agents/{agent_id}/shell?mode=tty|stream`: muti's shell WebSocket,
//! as `../shared/reference/muti-shell-websocket-api.md` describes it
//! (subprotocol `muti-shell`, binary frames with a type byte).
//!
//! One connection is one process: META (first message) → checks
//! ([`crate::terminal::shell::admit`]) → ACK → STDIN/RESIZE/SIGNAL in,
//! STDOUT/STDERR out → EXIT with the real code → close 1000. A refusal is
//! an ERROR frame with the reason, then close 1002; a process that cannot
//! start gets ACK `{success: false}`, ERROR, close 1011. When the socket
//! closes, the timeout passes or the daemon stops, the process's whole
//! session is killed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response as HttpResponse;
use bytes::Bytes;
use serde::Deserialize;

use crate::terminal::process::{Events, InputError, Process, ProcessEvent, ProcessOutput};
use crate::terminal::shell::{self as proto, ClientFrame, Confinement};
use crate::terminal::{ShellSlot, Terminals};
use crate::transport::http::api::ApiError;
use crate::transport::http::state::App;
use crate::transport::http::trust::is_loopback;
use crate::wire::http::ErrorBody;

/// How long a client has to send META.
pub const META_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest client message (bytes).
const MAX_MESSAGE: usize = 1024 * 1024;

#[derive(Deserialize)]
pub struct ShellQuery {
    mode: Option<String>,
}

#[utoipa::path(get, path = "/agents/{agent_id}/shell", operation_id = "shell_websocket", tag = "console",
    summary = "muti's shell WebSocket (subprotocol muti-shell), as muti-shell-websocket-api.md describes it: binary frames with a type byte (META 0x01, ACK 0x02, STDIN 0x03, STDOUT 0x04, STDERR 0x05, RESIZE 0x06, SIGNAL 0x07, EXIT 0x08, ERROR 0x09). Refusals (command off --shell-allow, wrong --shell-password, --shell-max-sessions reached, work_dir outside the workspace and allowed paths, unknown session) are ERROR then close 1002. Requires --terminals; loopback peers only unless --terminals-remote.",
    params(
        ("agent_id" = String, Path, description = "session_id whose workspace is the default work_dir"),
        ("mode" = Option<String>, Query, description = "`tty` (a PTY) or `stream` (pipes)"),
        ("token" = Option<String>, Query, description = "the daemon's token, for clients that cannot set headers on a WebSocket")),
    responses(
        (status = 101, description = "switching protocols"),
        (status = 400, description = "bad mode", body = ErrorBody),
        (status = 403, description = "peer off loopback without --terminals-remote", body = ErrorBody),
        (status = 404, description = "pirn serve runs without --terminals", body = ErrorBody)))]
pub async fn shell(
    State(app): State<Arc<App>>,
    Path(agent_id): Path<String>,
    Query(q): Query<ShellQuery>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Result<HttpResponse, ApiError> {
    let terminals = app.terminals()?;
    if !terminals.options.remote && !is_loopback(peer) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "FORBIDDEN",
            "the shell answers loopback peers only (start pirn serve with --terminals-remote)",
        ));
    }
    let tty = match q.mode.as_deref() {
        None | Some("tty") => true,
        Some("stream") => false,
        Some(other) => return Err(ApiError::bad_request(format!("mode must be tty or stream, not {other:?}"))),
    };
    let ws = ws.protocols(["muti-shell"]).max_message_size(MAX_MESSAGE);
    Ok(ws.on_upgrade(move |socket| async move {
        let mut conn = Conn { socket };
        if let Err(refusal) = run(&mut conn, &app, &terminals, &agent_id, tty).await {
            conn.refuse(refusal).await;
        }
    }))
}

/// How a connection ends early: a reason for ERROR and a close code.
struct EarlyClose(String, u16);

impl From<proto::Refusal> for EarlyClose {
    fn from(r: proto::Refusal) -> Self {
        EarlyClose(r.0, close_code::PROTOCOL)
    }
}

struct Conn {
    socket: WebSocket,
}

impl Conn {
    async fn send(&mut self, frame: Bytes) -> bool {
        self.socket.send(Message::Binary(frame)).await.is_ok()
    }

    async fn close(&mut self, code: u16, reason: &str) {
        let frame = CloseFrame { code, reason: reason.chars().take(100).collect::<String>().into() };
        let _ = self.socket.send(Message::Close(Some(frame))).await;
    }

    async fn refuse(&mut self, EarlyClose(message, code): EarlyClose) {
        self.send(proto::error(&message)).await;
        self.close(code, "").await;
    }
}

async fn run(conn: &mut Conn, app: &App, terminals: &Arc<Terminals>, agent: &str, tty: bool) -> Result<(), EarlyClose> {
    let meta = match tokio::time::timeout(META_TIMEOUT, conn.socket.recv()).await {
        Err(_) => return Err(EarlyClose("no META within 10 s".into(), close_code::PROTOCOL)),
        Ok(None | Some(Err(_))) => return Ok(()),
        Ok(Some(Ok(Message::Binary(b)))) => match ClientFrame::decode(b) {
            Ok(ClientFrame::Meta(meta)) => meta,
            Ok(_) => return Err(EarlyClose("the first message must be META".into(), close_code::PROTOCOL)),
            Err(e) => return Err(EarlyClose(e.0, close_code::PROTOCOL)),
        },
        Ok(Some(Ok(_))) => return Err(EarlyClose("messages must be binary frames".into(), close_code::PROTOCOL)),
    };
    let session = app.get(agent).map_err(|_| EarlyClose(format!("no session {agent:?}"), close_code::PROTOCOL))?;
    let config = session.session.config();
    let place = Confinement { workspace: &config.workspace, allowed_paths: &config.allowed_paths };
    let (spec, timeout) = proto::admit(&meta, tty, &terminals.options, &place)?;
    let Some(slot) = terminals.claim_shell() else {
        let max = terminals.options.max_shells;
        return Err(EarlyClose(format!("session limit reached ({max} shells)"), close_code::PROTOCOL));
    };
    let (process, events) = match Process::spawn(&spec) {
        Ok(started) => started,
        Err(e) => {
            conn.send(proto::ack(Some(&e.to_string()))).await;
            return Err(EarlyClose(e.to_string(), close_code::ERROR));
        }
    };
    slot.hold(process.killer());
    tracing::info!(agent, program = spec.program, pid = process.pid(), tty, "shell started");
    if !conn.send(proto::ack(None)).await {
        return Ok(());
    }
    relay(conn, app, process, events, slot, timeout).await
}

/// Pumps frames both ways until the process has exited (EXIT, close 1000)
/// or the connection, timeout or daemon ends it (the process is killed).
async fn relay(
    conn: &mut Conn,
    app: &App,
    process: Process,
    mut events: Events,
    _slot: ShellSlot,
    timeout: Duration,
) -> Result<(), EarlyClose> {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let (mut timed_out, mut stopping) = (false, false);
    loop {
        tokio::select! {
            event = events.next() => {
                let code = match event {
                    Some(ProcessEvent::Output(ProcessOutput::Stdout(b))) => {
                        if conn.send(proto::frame(proto::STDOUT, &b)).await { continue } else { break }
                    }
                    Some(ProcessEvent::Output(ProcessOutput::Stderr(b))) => {
                        if conn.send(proto::frame(proto::STDERR, &b)).await { continue } else { break }
                    }
                    Some(ProcessEvent::Exit(code)) => code,
                    None => -1,
                };
                if timed_out {
                    conn.send(proto::error(&format!("session timed out after {} s", timeout.as_secs()))).await;
                }
                conn.send(proto::exit(code)).await;
                conn.close(close_code::NORMAL, "").await;
                return Ok(());
            }
            msg = conn.socket.recv() => match msg {
                Some(Ok(Message::Binary(b))) => match ClientFrame::decode(b) {
                    Ok(ClientFrame::Stdin(bytes)) => match process.write(bytes) {
                        // Input after the program closed its end is dropped, as a pipe would.
                        Ok(()) | Err(InputError::Closed) => {}
                        Err(e @ InputError::Backlog) => return Err(EarlyClose(e.to_string(), close_code::ERROR)),
                    },
                    Ok(ClientFrame::Resize { rows, cols }) => process.resize(rows, cols),
                    Ok(ClientFrame::Signal(sig)) => process.signal(i32::from(sig)),
                    Ok(ClientFrame::Meta(_)) => return Err(EarlyClose("META was already sent".into(), close_code::PROTOCOL)),
                    Err(e) => return Err(EarlyClose(e.0, close_code::PROTOCOL)),
                },
                Some(Ok(Message::Text(_))) => {
                    return Err(EarlyClose("messages must be binary frames".into(), close_code::PROTOCOL));
                }
                Some(Ok(_)) => {}
                // Closed or broken: the process goes with it.
                None | Some(Err(_)) => break,
            },
            () = &mut deadline, if !timed_out => { timed_out = true; process.kill() }
            () = app.shutdown.cancelled(), if !stopping => { stopping = true; process.kill() }
        }
    }
    process.kill();
    Ok(())
}
