//! Recording: `PIRN_RECORD=FILE` writes every model exchange of the process
//! to FILE (created or truncated when the first session opens it).
//!
//! Owns: the file and the order of its lines. An exchange is written when
//! it ends ([`Tape::finish`]) or when pirn stops reading it (a [`Tape`]
//! dropped unfinished, i.e. a cancelled stream, is written with
//! [`TapeEnd::Cut`]), as one `write` of one whole line on an `O_APPEND` file
//! followed by `fdatasync`: a crash can lose at most the line being
//! written, and a torn last line is dropped when the cassette is loaded.

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use serde_json::Value;

use super::format::{CassetteError, Exchange, FORMAT_VERSION, Method, TapeChunk, TapeEnd};

/// The record file of the process.
#[derive(Debug)]
pub struct Recorder {
    /// The file and the next `seq`, under one lock so lines and numbers agree.
    file: Mutex<(std::fs::File, u64)>,
}

impl Recorder {
    /// Creates (or truncates) `path`. Errors: the file cannot be created.
    pub fn create(path: &Path) -> Result<Recorder, CassetteError> {
        let open = || {
            std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
            std::fs::OpenOptions::new().append(true).open(path)
        };
        let file = open().map_err(|source| CassetteError::Open { path: path.to_path_buf(), source })?;
        Ok(Recorder { file: Mutex::new((file, 0)) })
    }

    /// Appends `exchange` with the next `seq`. A write failure is logged and
    /// otherwise ignored: recording must not break the send it records.
    pub fn append(&self, mut exchange: Exchange) {
        let mut guard = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let (file, seq) = &mut *guard;
        exchange.seq = *seq;
        let mut line = match serde_json::to_vec(&exchange) {
            Ok(l) => l,
            Err(e) => return tracing::warn!(error = %e, "cannot encode a cassette line"),
        };
        line.push(b'\n');
        match file.write_all(&line).and_then(|()| file.sync_data()) {
            Ok(()) => *seq += 1,
            Err(e) => tracing::warn!(error = %e, "cannot append to the cassette"),
        }
    }

    /// A tape for one exchange, written to this file when it ends.
    pub fn tape(self: &std::sync::Arc<Self>, method: Method, path: &str, workspace: &str, request: Value) -> Tape {
        Tape {
            recorder: self.clone(),
            started: Instant::now(),
            exchange: Some(Exchange {
                cassette: FORMAT_VERSION,
                seq: 0,
                method,
                path: path.to_owned(),
                workspace: Some(workspace.to_owned()).filter(|w| !w.is_empty()),
                request,
                status: None,
                headers_ms: 0,
                retry_after: None,
                body: None,
                chunks: Vec::new(),
                end: TapeEnd::Cut,
            }),
        }
    }
}

/// One exchange being recorded.
#[derive(Debug)]
pub struct Tape {
    recorder: std::sync::Arc<Recorder>,
    started: Instant,
    /// `None` once written.
    exchange: Option<Exchange>,
}

impl Tape {
    fn millis(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// The answer's headers arrived with `status`.
    pub fn answered(&mut self, status: u16, retry_after: Option<&str>) {
        let ms = self.millis();
        if let Some(e) = &mut self.exchange {
            e.status = Some(status);
            e.headers_ms = ms;
            e.retry_after = retry_after.map(str::to_owned);
        }
    }

    /// One event of the streamed answer.
    pub fn chunk(&mut self, data: &[u8]) {
        let t_ms = self.millis();
        if let Some(e) = &mut self.exchange {
            e.chunks.push(TapeChunk { t_ms, data: String::from_utf8_lossy(data).into_owned() });
        }
    }

    /// The body of an answer that is not a stream.
    pub fn body(&mut self, body: &str) {
        if let Some(e) = &mut self.exchange {
            e.body = Some(body.to_owned());
        }
    }

    /// The exchange ended: it is written now.
    pub fn finish(&mut self, end: TapeEnd) {
        if let Some(mut e) = self.exchange.take() {
            e.end = end;
            self.recorder.append(e);
        }
    }
}

impl Drop for Tape {
    fn drop(&mut self) {
        self.finish(TapeEnd::Cut);
    }
}
