//! The file store: one append-only JSONL log per session,
//! `<root>/<tenant>/<session_id>.jsonl`, one [`super::entry`] per line.
//!
//! Owns: the files. Appends are one `write(2)` per batch on an `O_APPEND`
//! descriptor (`fdatasync` when durable); the process appending to a log
//! holds an exclusive `flock` on it, so a second process cannot write the
//! same session (`Busy`) and a killed one releases it with its descriptors.
//! Opening a log after a crash drops a torn last line (no newline, or not
//! an entry) by truncating it away; a bad line before the last is reported,
//! never skipped. Entry ids: a writer's `n` only grows, so an entry whose
//! `n` is not above its writer's highest stored `n` is a retried duplicate.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::entry::{Body, NewEntry, Stored, json_str};
use super::error::StoreError;
use super::info::{Appended, SessionInfo};
use super::lines::parse;
pub use super::lines::title_of;

/// How much of a log's head `list` reads to find the meta and first send.
const HEAD_BYTES: u64 = 256 * 1024;

/// Most log files a store keeps open. Beyond it the least recently used
/// are closed (their lock released: another process may then take the
/// session over, which fences this one) and reopened by their next
/// append, so open descriptors do not grow with idle sessions.
pub const MAX_OPEN: usize = 256;

/// See the module doc.
pub struct FileStore {
    root: PathBuf,
    open: Mutex<HashMap<String, Arc<Mutex<Log>>>>,
    watch: broadcast::Sender<Appended>,
    /// The logs holding a descriptor, by last use.
    lru: Mutex<Lru>,
}

/// Last use of the logs that hold a descriptor: `order` maps a tick to an
/// id, `at` an id to its tick.
#[derive(Default)]
struct Lru {
    tick: u64,
    order: std::collections::BTreeMap<u64, String>,
    at: HashMap<String, u64>,
}

/// A log of this process: locked while it holds its descriptor.
struct Log {
    /// `None` while closed for the descriptor bound ([`MAX_OPEN`]).
    file: Option<File>,
    path: PathBuf,
    next_seq: u64,
    /// Highest `n` stored per writer.
    writers: HashMap<String, u64>,
    /// Opened by [`FileStore::claim`] (a live session), not just by an
    /// append.
    claimed: bool,
    /// Bytes of whole lines in the file: where a failed write's partial
    /// line is cut back to.
    len: u64,
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io { op, path: path.to_owned(), source }
}

/// Takes an exclusive `flock` without waiting (std's `File::try_lock`,
/// `flock(2)` on Linux); `false` when another open file description holds
/// one.
fn try_lock(file: &File) -> std::io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Whether another process holds `file`'s log (an exclusive `flock`).
/// Probed with a shared lock, released at once: two processes listing the
/// same logs at the same moment do not see each other's probe as a holder
/// (an exclusive probe would), and an unreadable lock state counts as held.
fn held_elsewhere(file: &File) -> bool {
    if file.try_lock_shared().is_ok() {
        let _ = file.unlock();
        return false;
    }
    true
}

impl FileStore {
    /// A store for `tenant` under `root` (created on first write).
    pub fn new(root: PathBuf, tenant: &str) -> FileStore {
        FileStore {
            root: root.join(tenant),
            open: Mutex::default(),
            watch: broadcast::channel(1024).0,
            lru: Mutex::default(),
        }
    }

    /// The tenant's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// No log of `id` exists yet (one `stat`).
    pub fn is_new(&self, id: &str) -> bool {
        !self.path(id).exists()
    }

    fn path(&self, id: &str) -> PathBuf {
        self.root.join(format!("{id}.jsonl"))
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Mutex<Log>>>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The log of `id`, opening (and locking) it when needed; marks it
    /// used, closing the least recently used beyond [`MAX_OPEN`].
    fn log(&self, id: &str) -> Result<Arc<Mutex<Log>>, StoreError> {
        let log = {
            let mut table = self.table();
            match table.get(id) {
                Some(log) => log.clone(),
                None => {
                    let log = Arc::new(Mutex::new(self.open_log(id)?));
                    table.insert(id.to_owned(), log.clone());
                    log
                }
            }
        };
        self.touch(id);
        Ok(log)
    }

    /// Marks `id` used and closes the descriptors of the least recently
    /// used logs beyond [`MAX_OPEN`] (never `id`'s). No log lock is held
    /// here, so this cannot deadlock with an append.
    fn touch(&self, id: &str) {
        let victims: Vec<String> = {
            let mut lru = self.lru.lock().unwrap_or_else(|p| p.into_inner());
            lru.tick += 1;
            let tick = lru.tick;
            if let Some(old) = lru.at.insert(id.to_owned(), tick) {
                lru.order.remove(&old);
            }
            lru.order.insert(tick, id.to_owned());
            let mut out = Vec::new();
            while lru.order.len() > MAX_OPEN {
                let Some((_, victim)) = lru.order.pop_first() else { break };
                lru.at.remove(&victim);
                out.push(victim);
            }
            out
        };
        for victim in victims {
            let log = self.table().get(&victim).cloned();
            if let Some(log) = log {
                log.lock().unwrap_or_else(|p| p.into_inner()).file = None;
            }
        }
    }

    fn forget(&self, id: &str) {
        let mut lru = self.lru.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tick) = lru.at.remove(id) {
            lru.order.remove(&tick);
        }
    }

    fn open_log(&self, id: &str) -> Result<Log, StoreError> {
        let path = self.path(id);
        std::fs::create_dir_all(&self.root).map_err(io("create", &self.root))?;
        let mut file =
            OpenOptions::new().read(true).append(true).create(true).open(&path).map_err(io("open", &path))?;
        if !try_lock(&file).map_err(io("lock", &path))? {
            return Err(StoreError::Busy(id.to_owned()));
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(io("read", &path))?;
        let (entries, good_len) = parse(&text, &path)?;
        if good_len < text.len() {
            tracing::warn!(
                path = %path.display(),
                offset = good_len,
                bytes = text.len() - good_len,
                "dropping a torn last line (truncating the log at this byte offset)"
            );
            file.set_len(good_len as u64).map_err(io("truncate", &path))?;
            file.seek(std::io::SeekFrom::End(0)).map_err(io("seek", &path))?;
        }
        let mut writers: HashMap<String, u64> = HashMap::new();
        for e in &entries {
            let max = writers.entry(e.writer.clone()).or_insert(e.n);
            *max = (*max).max(e.n);
        }
        let next_seq = entries.last().map_or(1, |e| e.seq + 1);
        Ok(Log { file: Some(file), path, next_seq, writers, claimed: false, len: good_len as u64 })
    }

    /// See [`super::Store::claim`].
    pub fn claim(&self, id: &str) -> Result<u64, StoreError> {
        self.log(id)?.lock().unwrap_or_else(|p| p.into_inner()).claimed = true;
        Ok(0)
    }

    fn claimed(&self, id: &str) -> bool {
        self.table().get(id).is_some_and(|l| l.lock().unwrap_or_else(|p| p.into_inner()).claimed)
    }

    /// Closes the log (dropping the lock).
    pub fn release(&self, id: &str) {
        self.table().remove(id);
        self.forget(id);
    }

    /// See [`super::Store::append`].
    pub fn append(&self, id: &str, writer: &str, entries: &[NewEntry], durable: bool) -> Result<u64, StoreError> {
        let log = self.log(id)?;
        let mut log = log.lock().unwrap_or_else(|p| p.into_inner());
        let stored = log.writers.get(writer).copied();
        let mut text = String::new();
        let mut seq = log.next_seq;
        let mut top = stored;
        let writer_json = json_str(writer);
        for e in entries.iter().filter(|e| stored.is_none_or(|max| e.n > max)) {
            e.write_line(seq, &writer_json, &mut text);
            text.push('\n');
            seq += 1;
            top = Some(top.map_or(e.n, |t| t.max(e.n)));
        }
        let Log { file, path, next_seq, writers, len, .. } = &mut *log;
        let file = match file {
            Some(f) => f,
            None => file.insert(reopen(id, path, *len)?),
        };
        if !text.is_empty() {
            if let Err(e) = file.write_all(text.as_bytes()) {
                // Disk full mid-line: cut the partial line away at once, so
                // the log stays whole lines (the entries are kept by the
                // journal and appended again).
                if let Err(c) = file.set_len(*len) {
                    tracing::error!(path = %path.display(), "cannot cut a partial line after a failed write: {c}");
                }
                return Err(io("append to", path)(e));
            }
            *len += text.len() as u64;
            *next_seq = seq;
            if let Some(top) = top {
                writers.insert(writer.to_owned(), top);
            }
        }
        if durable {
            file.sync_data().map_err(io("sync", path))?;
        }
        let last = log.next_seq - 1;
        drop(log);
        if !text.is_empty() {
            let _ = self.watch.send((Arc::from(id), last));
        }
        Ok(last)
    }

    /// See [`super::Store::load`].
    pub fn load(&self, id: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        let path = self.path(id);
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(StoreError::NotFound(id.to_owned())),
            Err(e) => return Err(io("read", &path)(e)),
        };
        let (mut entries, _) = parse(&text, &path)?;
        entries.retain(|e| e.seq > after);
        Ok(entries)
    }

    /// See [`super::Store::list`].
    pub fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let dir = match std::fs::read_dir(&self.root) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io("list", &self.root)(e)),
        };
        let mut out = Vec::new();
        for item in dir.flatten() {
            let path = item.path();
            let Some(id) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl")) else {
                continue;
            };
            match self.info(id, &path) {
                Ok(Some(info)) => out.push(info),
                Ok(None) => {}
                Err(e) => tracing::warn!("listing sessions: {e}"),
            }
        }
        out.sort_by(|a, b| b.updated_ms.cmp(&a.updated_ms).then_with(|| a.session_id.cmp(&b.session_id)));
        Ok(out)
    }

    fn info(&self, id: &str, path: &Path) -> Result<Option<SessionInfo>, StoreError> {
        let file = File::open(path).map_err(io("open", path))?;
        let updated_ms = file
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as u64);
        let mut head = Vec::new();
        (&file).take(HEAD_BYTES).read_to_end(&mut head).map_err(io("read", path))?;
        // A head cut mid-line parses as a torn tail, which is what we want.
        let (entries, _) = parse(&head, path)?;
        let Some(first) = entries.first() else { return Ok(None) };
        let Body::Meta { model, .. } = &first.body else { return Ok(None) };
        let title = entries
            .iter()
            .find_map(|e| match &e.body {
                Body::Send { message, compact: false, .. } => Some(title_of(message)),
                _ => None,
            })
            .unwrap_or_default();
        let live = self.claimed(id) || (!self.table().contains_key(id) && held_elsewhere(&file));
        Ok(Some(SessionInfo {
            session_id: id.to_owned(),
            title,
            model: model.clone(),
            created_ms: first.at_ms,
            updated_ms,
            live,
        }))
    }

    /// See [`super::Store::delete`].
    pub fn delete(&self, id: &str) -> Result<bool, StoreError> {
        if self.claimed(id) {
            return Err(StoreError::Busy(id.to_owned()));
        }
        // Opened by appends only: close it (and its lock) first.
        self.table().remove(id);
        self.forget(id);
        let path = self.path(id);
        let file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(io("open", &path)(e)),
        };
        if !try_lock(&file).map_err(io("lock", &path))? {
            return Err(StoreError::Busy(id.to_owned()));
        }
        std::fs::remove_file(&path).map_err(io("remove", &path))?;
        Ok(true)
    }

    /// See [`super::Store::watch`].
    pub fn watch(&self) -> broadcast::Receiver<Appended> {
        self.watch.subscribe()
    }
}

/// Opens a log closed for the descriptor bound again, locked.
/// `Superseded` when another process holds it or its length is no longer
/// `len` (another process took the session over while it was closed).
fn reopen(id: &str, path: &Path, len: u64) -> Result<File, StoreError> {
    let file = OpenOptions::new().read(true).append(true).open(path).map_err(io("open", path))?;
    let locked = try_lock(&file).map_err(io("lock", path))?;
    if !locked || file.metadata().map_err(io("stat", path))?.len() != len {
        return Err(StoreError::Superseded(id.to_owned()));
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
