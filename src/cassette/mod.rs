//! Cassettes: every model exchange of a process, recorded to a file and
//! served back from it, so a test of an orchestrator can drive pirn with no
//! model and no network.
//!
//! - [`format`]: the file: one JSON line per HTTP exchange ([`Exchange`]),
//!   its JSON Schema in `protocol/cassette.schema.json`;
//! - [`record`]: `PIRN_RECORD=FILE` appends each exchange as it completes;
//! - [`replay`]: `PIRN_REPLAY=FILE` serves model calls from the file, in
//!   order, checking each request against the recorded one;
//! - [`normalize`]: what a request may differ in and still match (the
//!   workspace path), and where two JSON values first differ.
//!
//! The mode is process-wide (all sessions of a `pirn serve` share one
//! cassette, in the order their calls were made) and is chosen by the
//! [`Environment`](crate::environment::Environment): [`Cassette::from_env`].

pub mod format;
pub mod normalize;
pub mod record;
pub mod replay;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use format::{CassetteError, Exchange, FORMAT_VERSION, Method, TapeChunk, TapeEnd};
pub use record::{Recorder, Tape};
pub use replay::{Player, ReplayBody, Timing};

use crate::environment::Environment;

/// What the process does with model exchanges.
#[derive(Debug, Clone)]
pub enum Cassette {
    /// Sent to the network and appended to a file.
    Record(Arc<Recorder>),
    /// Served from a file; nothing goes to the network.
    Replay(Arc<Player>),
}

impl Cassette {
    /// The cassette `env` asks for (`PIRN_RECORD`, `PIRN_REPLAY`,
    /// `PIRN_REPLAY_TIMING`), shared by every session of the process that
    /// names the same file. `None`: neither is set.
    ///
    /// Errors: both set, a bad timing, a replay file that cannot be read or
    /// holds a line that is not an exchange (a torn last line, as a crash
    /// leaves it, is dropped), a record file that cannot be created.
    pub fn from_env(env: &Environment) -> Result<Option<Cassette>, CassetteError> {
        match (&env.record, &env.replay) {
            (Some(_), Some(_)) => Err(CassetteError::Both),
            (Some(path), None) => Ok(Some(Cassette::Record(shared(&RECORDERS, path, Recorder::create)?))),
            (None, Some(path)) => {
                let timing = match env.replay_timing.as_deref().map(str::trim) {
                    None | Some("") | Some("instant") => Timing::Instant,
                    Some("recorded") => Timing::Recorded,
                    Some(other) => return Err(CassetteError::Timing(other.to_owned())),
                };
                let player = shared(&PLAYERS, path, |p| Player::load(p, timing))?;
                Ok(Some(Cassette::Replay(player)))
            }
            (None, None) => Ok(None),
        }
    }
}

type Registry<T> = Mutex<Vec<(PathBuf, Arc<T>)>>;
static RECORDERS: Registry<Recorder> = Mutex::new(Vec::new());
static PLAYERS: Registry<Player> = Mutex::new(Vec::new());

/// The one `T` of the process for `path`, made by `open` on first use.
fn shared<T>(
    registry: &Registry<T>,
    path: &Path,
    open: impl FnOnce(&Path) -> Result<T, CassetteError>,
) -> Result<Arc<T>, CassetteError> {
    let mut all = registry.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, t)) = all.iter().find(|(p, _)| p == path) {
        return Ok(t.clone());
    }
    let t = Arc::new(open(path)?);
    all.push((path.to_path_buf(), t.clone()));
    Ok(t)
}
