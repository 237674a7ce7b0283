//! The one writer of stdout.
//!
//! Owns: stdout, the [`Sequencer`] that numbers events, line framing
//! (`serde_json` into a reused buffer, `\n`, flushed as soon as no other line
//! is waiting, so no line sits in a buffer while the worker idles), and the
//! two output formats of `pirn run` (`jsonl`, or the plain streamed text).
//!
//! Runs on its own OS thread: stdout writes are blocking calls, and a thread
//! keeps them off the async runtime without a blocking-pool hop per line.

use std::io::{self, Write};
use std::thread::JoinHandle;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::tap::{JournalSlot, Tap};
use crate::session::{OUTBOX_CAPACITY, Outbox};
use crate::wire::{Event, OutgoingMessage, SendResult, Sequencer, TodoStatus};

/// How responses are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// One JSON object per line: the protocol.
    Jsonl,
    /// `pirn run --format text`: the model's text on stdout, tool activity
    /// and errors on stderr.
    Text,
    /// `pirn run --format text --output-schema`: as `Text` on stderr, and
    /// on stdout only the validated JSON document (`structured_output`).
    Document,
}

/// What the writer saw, returned when it ends.
#[derive(Debug, Default)]
pub struct WriterReport {
    /// The last `result` written.
    pub last_result: Option<SendResult>,
    /// The write error that stopped it (EPIPE when the reader went away).
    pub error: Option<io::Error>,
}

/// A running writer: its outbox, a token cancelled when stdout fails, and
/// the thread to join for the report.
pub struct Writer {
    pub outbox: Outbox,
    pub stdout_closed: CancellationToken,
    pub thread: JoinHandle<WriterReport>,
}

impl Writer {
    /// Drops this outbox and waits for the thread's report off the runtime
    /// thread (the writer may be waiting on a journal task that needs the
    /// runtime). Every other outbox clone must be gone.
    pub async fn finish(self) -> WriterReport {
        drop(self.outbox);
        let thread = self.thread;
        tokio::task::spawn_blocking(move || thread.join().unwrap_or_default()).await.unwrap_or_default()
    }
}

/// Starts the writer thread on `out`. It ends when every [`Outbox`] clone is
/// dropped (after writing everything queued) or at the first write error.
/// Lines go to the journal set in `journal` once it is (a `result` is
/// written once it is durable).
pub fn spawn<W: Write + Send + 'static>(out: W, format: Format, journal: JournalSlot) -> Writer {
    let (tx, rx) = mpsc::channel(OUTBOX_CAPACITY);
    let stdout_closed = CancellationToken::new();
    let closed2 = stdout_closed.clone();
    let thread = std::thread::Builder::new()
        .name("pirn-writer".to_owned())
        .spawn(move || {
            let report = write_loop(rx, out, format, Tap::new(journal));
            if report.error.is_some() {
                closed2.cancel();
            }
            report
        })
        .unwrap_or_else(|e| {
            // Without a thread there is no output at all; nothing sensible remains.
            tracing::error!("cannot start the writer thread: {e}");
            std::process::exit(70)
        });
    Writer { outbox: tx, stdout_closed, thread }
}

fn write_loop<W: Write>(mut rx: mpsc::Receiver<OutgoingMessage>, out: W, format: Format, mut tap: Tap) -> WriterReport {
    let mut out = io::BufWriter::with_capacity(64 * 1024, out);
    let mut seq = Sequencer::default();
    let mut line: Vec<u8> = Vec::with_capacity(4096);
    let mut report = WriterReport::default();
    while let Some(mut msg) = rx.blocking_recv() {
        tap.room_blocking();
        line.clear();
        encode_line(&mut seq, &mut msg, &mut line);
        let (_, durable) = tap.line(&msg, line.strip_suffix(b"\n").unwrap_or(&line));
        let mut written = Ok(());
        if let Some(durable) = durable
            && let Err(cause) = super::tap::wait_blocking(durable)
            && let Some(mut event) = tap.not_durable(&mut msg, &cause)
        {
            // The store_error event goes first; the result is written again
            // with `durable: false`.
            let mut ev_line = Vec::new();
            encode_line(&mut seq, &mut event, &mut ev_line);
            tap.line(&event, ev_line.strip_suffix(b"\n").unwrap_or(&ev_line));
            written = match format {
                Format::Jsonl => out.write_all(&ev_line),
                Format::Text | Format::Document => write_text(&mut out, &event, format),
            };
            line.clear();
            reencode(&msg, &mut line);
        }
        let written = written.and_then(|()| match format {
            Format::Jsonl => out.write_all(&line),
            Format::Text | Format::Document => write_text(&mut out, &msg, format),
        });
        if let OutgoingMessage::Result(r) = msg {
            report.last_result = Some(*r);
        }
        let flushed = written.and_then(|()| if rx.is_empty() { out.flush() } else { Ok(()) });
        if let Err(e) = flushed {
            tracing::debug!("stdout closed: {e}");
            report.error = Some(e);
            return report;
        }
    }
    if let Err(e) = out.flush() {
        report.error = Some(e);
    }
    report
}

/// Numbers `msg` (events) and appends it to `out` as one JSON line.
pub(crate) fn encode_line(seq: &mut Sequencer, msg: &mut OutgoingMessage, out: &mut Vec<u8>) {
    seq.stamp(msg);
    match serde_json::to_writer(&mut *out, msg) {
        Ok(()) => out.push(b'\n'),
        Err(e) => tracing::error!("cannot serialise a response: {e}"),
    }
}

/// Serialises `msg` again (after a change), without stamping it.
pub(crate) fn reencode(msg: &OutgoingMessage, out: &mut Vec<u8>) {
    match serde_json::to_writer(&mut *out, msg) {
        Ok(()) => out.push(b'\n'),
        Err(e) => tracing::error!("cannot serialise a response: {e}"),
    }
}

/// The `text` format: deltas verbatim on stdout; tool calls and errors as
/// short lines on stderr (a person is watching).
#[allow(clippy::print_stderr)]
fn write_text<W: Write>(out: &mut W, msg: &OutgoingMessage, format: Format) -> io::Result<()> {
    match msg {
        OutgoingMessage::Event(ev) => match &ev.event {
            Event::ContentDelta { .. } if format == Format::Document || ev.parent_call_id.is_some() => Ok(()),
            Event::ContentDelta { text } => out.write_all(text.as_bytes()),
            Event::ToolStart { name, args, .. } => {
                out.flush()?;
                eprintln!("\n[tool] {name} {args}");
                Ok(())
            }
            Event::ToolEnd { name, result_preview, is_error, .. } => {
                let first = result_preview.lines().next().unwrap_or("");
                let mark = if *is_error == Some(true) { "failed" } else { "done" };
                eprintln!("[tool] {name} {mark}: {first}");
                Ok(())
            }
            Event::Error { code, message, .. } => {
                eprintln!("[error] {code:?}: {message}");
                Ok(())
            }
            Event::StoreError { message } => {
                eprintln!("[store] {message}");
                Ok(())
            }
            Event::ModelFallback { model, fallback, reason } => {
                eprintln!("[fallback] {model} refused the request ({reason}); {fallback} takes the rest of the send");
                Ok(())
            }
            Event::ToolOutput { text, .. } => {
                eprint!("{text}");
                Ok(())
            }
            Event::Plan { todos } => {
                for t in todos {
                    let mark = match t.status {
                        TodoStatus::Pending => "[ ]",
                        TodoStatus::InProgress => "[>]",
                        TodoStatus::Completed => "[x]",
                    };
                    eprintln!("[plan] {mark} {}", t.content);
                }
                Ok(())
            }
            _ => Ok(()),
        },
        OutgoingMessage::Result(r) if format == Format::Document => match &r.structured_output {
            Some(doc) => {
                serde_json::to_writer_pretty(&mut *out, doc)?;
                out.write_all(b"\n")
            }
            None => Ok(()),
        },
        OutgoingMessage::Result(_) => out.write_all(b"\n"),
        _ => Ok(()),
    }
}
