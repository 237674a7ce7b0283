//! The JSONL worker on stdin/stdout: what an orchestrator spawns.
//!
//! Owns: reading request lines (bounded at [`MAX_LINE_BYTES`]; longer lines
//! are discarded, invalid UTF-8 and bad JSON answered, never fatal),
//! dispatching them to the session API while a send runs, the `init`
//! handshake and version check, and the end of the process: `shutdown`,
//! stdin EOF, SIGTERM, or stdout going away.
//!
//! A thin front-end: all behaviour of sends lives in `session` and `agent`.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::codec::{Decoder, LinesCodec, LinesCodecError};

use crate::session::{Outbox, Session, SessionSettings};
use crate::transport::pipe_writer::PipeWriter;
use crate::transport::writer::{self, Format};
use crate::wire::{
    self, DecodeError, ErrorCode, ErrorEnvelope, IdOnly, InitOk, InitRequest, MAX_LINE_BYTES, PROTOCOL_VERSION,
    Request, Response, SendResult, UNKNOWN_ID,
};

/// Sends that may wait behind the running one; one more is refused with a
/// `protocol_error` (each waiting send holds its message, up to 10 MiB).
pub const MAX_WAITING_SENDS: usize = 1024;

/// Exit code when stdout was closed by the reader.
pub const EXIT_STDOUT_CLOSED: i32 = 3;

/// Runs the worker until shutdown; returns the process exit code.
pub async fn serve() -> i32 {
    // The runtime-thread writer when stdout is a pipe or socket, else the
    // thread writer (terminals, files).
    enum Out {
        Pipe(PipeWriter),
        Thread(writer::Writer),
    }
    let out = match PipeWriter::spawn_if_pipe() {
        Some(p) => Out::Pipe(p),
        None => Out::Thread(writer::spawn(std::io::stdout(), Format::Jsonl)),
    };
    let (outbox, dead) = match &out {
        Out::Pipe(p) => (p.outbox.clone(), p.dead.clone()),
        Out::Thread(w) => (w.outbox.clone(), w.dead.clone()),
    };
    let mut worker = Worker { outbox, session: None };
    let end = worker.read_loop(tokio::io::stdin(), dead).await;
    if let Some(session) = worker.session.take() {
        session.shutdown().await;
    }
    if let End::Shutdown(id) = &end {
        let _ = worker.outbox.send(Response::ShutdownOk(IdOnly { id: id.clone() })).await;
    }
    drop(worker);
    let failed = match out {
        Out::Pipe(p) => p.finish().await.is_some(),
        Out::Thread(w) => {
            drop(w.outbox);
            w.thread.join().unwrap_or_default().error.is_some()
        }
    };
    if failed || end == End::StdoutClosed { EXIT_STDOUT_CLOSED } else { 0 }
}

#[derive(Debug, PartialEq, Eq)]
enum End {
    /// `shutdown` with this request id.
    Shutdown(String),
    Eof,
    Signal,
    StdoutClosed,
}

struct Worker {
    outbox: Outbox,
    session: Option<Session>,
}

impl Worker {
    async fn read_loop<R: AsyncRead + Unpin>(
        &mut self,
        mut input: R,
        dead: tokio_util::sync::CancellationToken,
    ) -> End {
        let mut codec = LinesCodec::new_with_max_length(MAX_LINE_BYTES);
        let mut buf = BytesMut::with_capacity(64 * 1024);
        let mut term = signal(tokio::signal::unix::SignalKind::terminate());
        let mut eof = false;
        loop {
            loop {
                let item = if eof { codec.decode_eof(&mut buf) } else { codec.decode(&mut buf) };
                match item {
                    Ok(Some(line)) => {
                        if let Some(end) = self.handle_line(line.as_bytes()).await {
                            return end;
                        }
                    }
                    Ok(None) => break,
                    Err(LinesCodecError::MaxLineLengthExceeded) => {
                        self.protocol_error(
                            UNKNOWN_ID.to_owned(),
                            format!("request line longer than {MAX_LINE_BYTES} bytes; discarded"),
                        )
                        .await;
                    }
                    Err(LinesCodecError::Io(e)) => {
                        self.protocol_error(UNKNOWN_ID.to_owned(), format!("request line is not valid UTF-8 ({e})"))
                            .await;
                    }
                }
            }
            if eof {
                return End::Eof;
            }
            buf.reserve(64 * 1024);
            tokio::select! {
                n = input.read_buf(&mut buf) => match n {
                    Ok(0) | Err(_) => eof = true,
                    Ok(_) => {}
                },
                _ = recv(&mut term) => return End::Signal,
                _ = dead.cancelled() => return End::StdoutClosed,
            }
        }
    }

    /// Handles one line; `Some` ends the worker.
    async fn handle_line(&mut self, line: &[u8]) -> Option<End> {
        if line.trim_ascii().is_empty() {
            return None;
        }
        let request = match wire::decode_request(line) {
            Ok(r) => r,
            Err(DecodeError { id, message }) => {
                self.protocol_error(id, message).await;
                return None;
            }
        };
        match request {
            Request::Init(init) => self.init(*init).await,
            Request::Shutdown(IdOnly { id }) => return Some(End::Shutdown(id)),
            other => {
                let Some(session) = &self.session else {
                    self.protocol_error(other.id().to_owned(), "not initialized: send init first".to_owned()).await;
                    return None;
                };
                if let Some(reply) = session.handle(other).await {
                    let _ = self.outbox.send(reply).await;
                }
            }
        }
        None
    }

    async fn init(&mut self, init: InitRequest) {
        if self.session.is_some() {
            self.protocol_error(init.id, "already initialized".to_owned()).await;
            return;
        }
        if let Some(requested) = &init.protocol_version
            && let Err(message) = wire::check_version(requested)
        {
            let reply = InitOk {
                id: init.id,
                session_id: String::new(),
                protocol_version: PROTOCOL_VERSION.to_owned(),
                error: Some(ErrorEnvelope::new(ErrorCode::ProtocolVersionMismatch, message)),
            };
            let _ = self.outbox.send(Response::InitOk(reply)).await;
            return;
        }
        match SessionSettings::from_init(&init.config) {
            Ok(mut settings) => {
                settings.max_queue = Some(MAX_WAITING_SENDS);
                let reply = InitOk {
                    id: init.id,
                    session_id: settings.session_id.clone(),
                    protocol_version: PROTOCOL_VERSION.to_owned(),
                    error: None,
                };
                self.session = Some(Session::start(settings, self.outbox.clone()));
                let _ = self.outbox.send(Response::InitOk(reply)).await;
            }
            Err(message) => self.protocol_error(init.id, format!("invalid init: {message}")).await,
        }
    }

    async fn protocol_error(&self, id: String, message: String) {
        let correlation = self.session.as_ref().map(|s| s.settings().correlation.clone()).unwrap_or_default();
        let result = SendResult::error(id, ErrorEnvelope::new(ErrorCode::ProtocolError, message), correlation);
        let _ = self.outbox.send(Response::Result(result)).await;
    }
}

fn signal(kind: tokio::signal::unix::SignalKind) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind).ok()
}

async fn recv(sig: &mut Option<tokio::signal::unix::Signal>) {
    match sig {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending().await,
    }
}
