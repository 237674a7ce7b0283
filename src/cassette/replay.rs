//! Replaying: `PIRN_REPLAY=FILE` serves the model calls of the process from
//! FILE instead of the network.
//!
//! Owns: loading (a torn last line is dropped, any other bad line is an
//! error naming it), the order of service (chat requests in recorded order,
//! probe GETs by their path), the request check ([`Player::next_post`]: the
//! request must equal the recorded one, workspace path aside), and the
//! pacing of a replayed stream ([`Timing`]).

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::format::{CassetteError, Exchange, Method, TapeChunk, TapeEnd};
use super::normalize::{first_difference, without_workspace};

/// How fast a replayed answer streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    /// Everything at once (`PIRN_REPLAY_TIMING=instant`, the default);
    /// `Retry-After` waits are skipped too.
    Instant,
    /// Headers and each chunk at the recorded time since the request
    /// (`PIRN_REPLAY_TIMING=recorded`), so heartbeats and cancels meet the
    /// stream where they met it live.
    Recorded,
}

/// A replayed request that is not the recorded one, or one too many.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub message: String,
    /// `{"exchange": seq or null, "path", "recorded", "sent"}` or
    /// `{"exchange": null, "recorded_calls": N}` past the end.
    pub details: Value,
}

/// The loaded cassette of the process.
#[derive(Debug)]
pub struct Player {
    path: PathBuf,
    exchanges: Vec<Exchange>,
    pub timing: Timing,
    /// Index of the next POST to serve; GETs already served.
    state: Mutex<(usize, Vec<bool>)>,
}

impl Player {
    /// Loads `path`. Errors: unreadable, or a line other than a torn last
    /// one that is not an [`Exchange`].
    pub fn load(path: &Path, timing: Timing) -> Result<Player, CassetteError> {
        let file = std::fs::File::open(path).map_err(|source| CassetteError::Open { path: path.into(), source })?;
        let lines: Vec<String> = std::io::BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(|source| CassetteError::Open { path: path.into(), source })?;
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        let mut exchanges = Vec::new();
        for (i, line) in lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            match serde_json::from_str::<Exchange>(line) {
                Ok(e) => exchanges.push(e),
                Err(e) if Some(i) == last && e.is_eof() => {
                    tracing::warn!(path = %path.display(), line = i + 1, "dropped a torn last line of the cassette");
                }
                Err(e) => {
                    return Err(CassetteError::Line { path: path.into(), line: i + 1, message: e.to_string() });
                }
            }
        }
        let gets = exchanges.len();
        Ok(Player { path: path.into(), exchanges, timing, state: Mutex::new((0, vec![false; gets])) })
    }

    /// A cassette with no exchanges (a case that never calls the model).
    pub fn empty(timing: Timing) -> Player {
        Player { path: PathBuf::from("(none)"), exchanges: Vec::new(), timing, state: Mutex::new((0, Vec::new())) }
    }

    /// Every recorded exchange, in order.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }

    /// The next recorded POST, if `request` (sent from `workspace`) is the
    /// request recorded there. A mismatch does not use the exchange up.
    pub fn next_post(&self, request: &Value, workspace: &str) -> Result<Exchange, Mismatch> {
        self.take_post(|recorded| {
            let want = without_workspace(&recorded.request, recorded.workspace.as_deref());
            let got = without_workspace(request, Some(workspace));
            let mut details = first_difference(&want, &got)?;
            details["exchange"] = json!(recorded.seq);
            Some(Mismatch {
                message: format!(
                    "replay: the request differs from exchange {} of {} at {}",
                    recorded.seq,
                    self.path.display(),
                    details["path"].as_str().unwrap_or("")
                ),
                details,
            })
        })
    }

    /// The next recorded POST, whatever the request (the conformance
    /// runner serving another implementation, whose requests differ).
    pub fn next_post_unchecked(&self) -> Result<Exchange, Mismatch> {
        self.take_post(|_| None)
    }

    /// Takes the next recorded POST unless `mismatch` finds fault with it;
    /// past the last one, the "no more model calls" mismatch.
    fn take_post(&self, mismatch: impl FnOnce(&Exchange) -> Option<Mismatch>) -> Result<Exchange, Mismatch> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some((at, recorded)) =
            self.exchanges.iter().enumerate().skip(state.0).find(|(_, e)| e.method == Method::Post)
        else {
            let posts = self.exchanges.iter().filter(|e| e.method == Method::Post).count();
            return Err(Mismatch {
                message: format!(
                    "replay: the cassette {} has no more model calls ({posts} recorded); this request was not recorded",
                    self.path.display()
                ),
                details: json!({"exchange": null, "recorded_calls": posts}),
            });
        };
        if let Some(m) = mismatch(recorded) {
            return Err(m);
        }
        state.0 = at + 1;
        Ok(recorded.clone())
    }

    /// The first unserved recorded GET whose path ends like `path`'s last
    /// segment (`/props`, `/models`).
    pub fn get(&self, path: &str) -> Option<Exchange> {
        let last = path.rsplit('/').next().unwrap_or(path);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let i = self
            .exchanges
            .iter()
            .enumerate()
            .position(|(i, e)| e.method == Method::Get && !state.1[i] && e.path.rsplit('/').next() == Some(last))?;
        state.1[i] = true;
        Some(self.exchanges[i].clone())
    }

    /// Waits, under [`Timing::Recorded`], until `ms` after `since`.
    pub async fn pace(&self, since: Instant, ms: u64) {
        if self.timing == Timing::Recorded {
            tokio::time::sleep_until((since + Duration::from_millis(ms)).into()).await;
        }
    }
}

/// What a replayed stream yields next.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// One event's data.
    Data(String),
    /// The recorded answer ended here.
    Done,
    /// The recorded exchange failed here (`kind`, `message` as recorded).
    Failed { kind: String, message: String },
}

/// The body of one replayed streamed answer.
#[derive(Debug)]
pub struct ReplayBody {
    chunks: VecDeque<TapeChunk>,
    end: TapeEnd,
    started: Instant,
    timing: Timing,
}

impl ReplayBody {
    /// The answer of `exchange`, timed from `started` (when it was requested).
    pub fn new(exchange: Exchange, started: Instant, timing: Timing) -> ReplayBody {
        ReplayBody { chunks: exchange.chunks.into(), end: exchange.end, started, timing }
    }

    /// The next event. After the last chunk of a cut exchange it never
    /// returns (the caller's idle timeout or cancel ends the wait), as the
    /// recorded server kept the stream open.
    pub async fn next(&mut self) -> Replayed {
        if let Some(chunk) = self.chunks.pop_front() {
            if self.timing == Timing::Recorded {
                tokio::time::sleep_until((self.started + Duration::from_millis(chunk.t_ms)).into()).await;
            }
            return Replayed::Data(chunk.data);
        }
        match &self.end {
            TapeEnd::Done => Replayed::Done,
            TapeEnd::Error { kind, message } => Replayed::Failed { kind: kind.clone(), message: message.clone() },
            TapeEnd::Cut => std::future::pending().await,
        }
    }
}
