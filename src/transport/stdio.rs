//! The JSONL worker on stdin/stdout: what an orchestrator spawns.
//!
//! Owns: reading request lines (bounded at [`MAX_LINE_BYTES`]; longer lines
//! are discarded, invalid UTF-8 and bad JSON answered, never fatal),
//! dispatching them to the session API while a send runs, the `init`
//! handshake, and the end of the process: `shutdown` and stdin EOF (the
//! sends finish first), SIGTERM or SIGINT (they are cancelled), or stdout
//! going away.
//!
//! A thin front-end: all behaviour of sends lives in `session` and `agent`.

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

use crate::config::Limits;
use crate::environment::Environment;
use crate::session::{Ending, OpenError, Outbox, Session};
use crate::store::Store;
use crate::transport::lines::{LineFrame, LineFramer};
use crate::transport::pipe_writer::PipeWriter;
use crate::transport::signal::{ShutdownSignal, shutdown_signal};
use crate::transport::tap::JournalSlot;
use crate::transport::writer::{self, Format};
use crate::wire::{
    self, DecodeError, ErrorEnvelope, IdOnly, InitOk, InitRequest, MAX_LINE_BYTES, NOT_INITIALIZED, OutgoingMessage,
    PROTOCOL_VERSION, Request, SendResult, UNKNOWN_ID,
};

/// Sends that may wait behind the running one; one more is refused with a
/// `protocol_error` (each waiting send holds its message, up to 10 MiB).
pub const MAX_WAITING_SENDS: usize = 1024;

/// Exit code when stdout was closed by the reader.
pub const EXIT_STDOUT_CLOSED: i32 = 3;

/// stdout's single writer: the runtime-thread writer when stdout is a pipe
/// or socket, else the thread writer (terminals, files).
enum Stdout {
    Pipe(PipeWriter),
    Thread(writer::Writer),
}

impl Stdout {
    fn start(journal: &JournalSlot) -> Stdout {
        match PipeWriter::spawn_if_pipe(journal.clone()) {
            Some(p) => Stdout::Pipe(p),
            None => Stdout::Thread(writer::spawn(std::io::stdout(), Format::Jsonl, journal.clone())),
        }
    }

    fn outbox(&self) -> Outbox {
        match self {
            Stdout::Pipe(p) => p.outbox.clone(),
            Stdout::Thread(w) => w.outbox.clone(),
        }
    }

    fn stdout_closed(&self) -> CancellationToken {
        match self {
            Stdout::Pipe(p) => p.stdout_closed.clone(),
            Stdout::Thread(w) => w.stdout_closed.clone(),
        }
    }

    /// Writes what is queued (every other outbox clone must be gone) and
    /// returns whether a write failed.
    async fn close(self) -> bool {
        match self {
            Stdout::Pipe(p) => p.close().await.is_some(),
            Stdout::Thread(w) => w.finish().await.error.is_some(),
        }
    }
}

/// Runs the worker until it ends; returns the process exit code.
///
/// How it ends decides what happens to the sends: `shutdown` and stdin EOF
/// finish the running and queued sends first (their results come first, in
/// order), while SIGTERM/SIGINT, or a signal during that wait, cancel them
/// at once; stdout closing cancels them too (nobody reads the results).
pub async fn serve() -> i32 {
    let journal = JournalSlot::default();
    let out = Stdout::start(&journal);
    let mut worker = Worker {
        outbox: out.outbox(),
        session: None,
        env: with_store(Environment::from_process()).await,
        signals: shutdown_signal(),
        shutting_down: None,
        journal: journal.clone(),
    };
    let stdout_closed = out.stdout_closed();
    let end = worker.read_loop(tokio::io::stdin(), &stdout_closed).await;
    let ending = match end {
        StdioEnd::Shutdown(_) | StdioEnd::Eof => Ending::Finish,
        StdioEnd::Signal | StdioEnd::StdoutClosed => Ending::Cancel,
    };
    let session = worker.session.take();
    let outbox = worker.outbox.clone();
    let mut signals = std::mem::replace(&mut worker.signals, shutdown_signal());
    drop(worker);
    // After the sends: `shutdown_ok`, then stdout's writer finishes.
    let output = async {
        if let StdioEnd::Shutdown(id) = &end {
            let _ = outbox.send(OutgoingMessage::ShutdownOk(IdOnly { id: id.clone() })).await;
        }
        drop(outbox);
        out.close().await
    };
    let failed = match session {
        Some(session) => {
            let interrupt = async {
                tokio::select! {
                    _ = signals.recv() => {}
                    _ = stdout_closed.cancelled() => {}
                }
            };
            session.end(ending, interrupt, output).await
        }
        None => output.await,
    };
    if failed || stdout_closed.is_cancelled() { EXIT_STDOUT_CLOSED } else { 0 }
}

#[derive(Debug, PartialEq, Eq)]
enum StdioEnd {
    /// `shutdown` with this request id.
    Shutdown(String),
    Eof,
    Signal,
    StdoutClosed,
}

struct Worker {
    outbox: Outbox,
    session: Option<Session>,
    env: Environment,
    signals: ShutdownSignal,
    /// The id of a `shutdown` being carried out: the session finishes its
    /// sends while requests are still read (a `cancel` still works).
    shutting_down: Option<String>,
    /// Set when the session opens with a journal (the writer logs to it).
    journal: JournalSlot,
}

impl Worker {
    async fn read_loop<R: AsyncRead + Unpin>(&mut self, mut input: R, stdout_closed: &CancellationToken) -> StdioEnd {
        let mut framer = LineFramer::default();
        let mut eof = false;
        loop {
            while let Some(frame) = framer.next_frame(eof) {
                match frame {
                    LineFrame::Line(line) => {
                        if let Some(end) = self.handle_line(line.as_bytes()).await {
                            return end;
                        }
                    }
                    LineFrame::TooLong => {
                        let message = format!("request line longer than {MAX_LINE_BYTES} bytes; discarded");
                        self.protocol_error(UNKNOWN_ID.to_owned(), message).await;
                    }
                    LineFrame::NotUtf8(e) => {
                        self.protocol_error(UNKNOWN_ID.to_owned(), format!("request line is not valid UTF-8 ({e})"))
                            .await;
                    }
                }
            }
            if eof {
                // A `shutdown` already read still gets its `shutdown_ok`.
                return self.shutting_down.take().map_or(StdioEnd::Eof, StdioEnd::Shutdown);
            }
            tokio::select! {
                n = input.read_buf(framer.buffer()) => match n {
                    Ok(0) | Err(_) => eof = true,
                    Ok(_) => {}
                },
                _ = self.signals.recv() => return StdioEnd::Signal,
                _ = stdout_closed.cancelled() => return StdioEnd::StdoutClosed,
                _ = drained(self.session.as_ref(), self.shutting_down.is_some()) => {
                    return StdioEnd::Shutdown(self.shutting_down.take().unwrap_or_default());
                }
            }
        }
    }

    /// Handles one line; `Some` ends the worker.
    async fn handle_line(&mut self, line: &[u8]) -> Option<StdioEnd> {
        if line.trim_ascii().is_empty() {
            return None;
        }
        let request = match wire::decode_request(line) {
            Ok(r) => r,
            Err(e @ DecodeError { .. }) => {
                self.protocol_error(e.id.clone(), e).await;
                return None;
            }
        };
        match request {
            Request::Init(init) => self.init(*init).await,
            Request::Shutdown(IdOnly { id }) => match &self.session {
                None => return Some(StdioEnd::Shutdown(id)),
                Some(_) if self.shutting_down.is_some() => self.protocol_error(id, "already shutting down").await,
                Some(session) => {
                    session.close();
                    self.shutting_down = Some(id);
                }
            },
            other => {
                let Some(session) = &self.session else {
                    self.protocol_error(other.id().to_owned(), NOT_INITIALIZED).await;
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
            self.protocol_error(init.id, "already initialized").await;
            return;
        }
        let limits = Limits { max_queue: Some(MAX_WAITING_SENDS), queue_timeout: None };
        let opened =
            Session::open(init.protocol_version.as_deref(), &init.config, &self.env, limits, self.outbox.clone()).await;
        let reply = match opened {
            Ok(session) => {
                if let Some(j) = session.journal() {
                    let _ = self.journal.set(j.clone());
                }
                let session_id = session.config().session_id.clone();
                let protocol_version = session.config().version.as_str().to_owned();
                let v0_3 = session.config().version >= crate::wire::ProtocolVersion::V0_3;
                let sandbox = v0_3.then(|| session.config().sandbox.describe());
                let files = &session.config().instruction_files;
                let instruction_files =
                    (v0_3 && !files.is_empty()).then(|| files.iter().map(|f| f.display().to_string()).collect());
                let profile = v0_3.then(|| session.config().profile.name.clone());
                self.session = Some(session);
                InitOk { id: init.id, session_id, protocol_version, error: None, sandbox, instruction_files, profile }
            }
            Err(OpenError::Version(e)) => InitOk {
                id: init.id,
                session_id: String::new(),
                protocol_version: PROTOCOL_VERSION.to_owned(),
                error: Some(ErrorEnvelope::from(&e)),
                sandbox: None,
                instruction_files: None,
                profile: None,
            },
            Err(e @ (OpenError::Config(_) | OpenError::Resume { .. })) => return self.protocol_error(init.id, e).await,
        };
        let _ = self.outbox.send(OutgoingMessage::InitOk(Box::new(reply))).await;
    }

    async fn protocol_error(&self, id: String, message: impl std::fmt::Display) {
        let correlation = self.session.as_ref().map(|s| s.config().correlation.clone()).unwrap_or_default();
        let _ = self
            .outbox
            .send(OutgoingMessage::Result(Box::new(SendResult::protocol_error(id, message, correlation))))
            .await;
    }
}

/// `env` with the session store the environment asks for (none, with a
/// logged error, when it cannot be opened: the worker runs on without
/// persistence).
pub async fn with_store(mut env: Environment) -> Environment {
    match Store::from_env(&|k| std::env::var(k).ok()).await {
        Ok(store) => env.store = store,
        Err(e) => tracing::error!("sessions will not be logged: {e}"),
    }
    env
}

/// Resolves once `session` has finished its sends, when `active`; never otherwise.
async fn drained(session: Option<&Session>, active: bool) {
    match session {
        // `close` was called when the shutdown was read.
        Some(s) if active => s.finished().await,
        _ => std::future::pending().await,
    }
}
