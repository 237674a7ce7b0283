//! Files as a client holds them: the text file tools read and write when
//! the transport's client offers its own file system (ACP's
//! `fs/read_text_file` and `fs/write_text_file`, so an editor's unsaved
//! buffers are what the model sees and edits land in the editor).
//!
//! Owns: the [`ClientFiles`] trait a transport implements, and the two
//! functions every file tool reads and writes text through
//! ([`read_text`], [`write_text`]). Confinement is unchanged: a path is
//! resolved beneath the workspace by the OS ([`super::confine`]) before
//! the client is asked about it, so a client is never asked for a file
//! outside the workspace and a symlink cannot lead a write out of it.
//! `grep`, `glob` and `bash` still see the disk.

use std::io;
use std::path::Path;

use super::confine::Confined;

/// A client's file system. Both methods block the calling thread (file
/// tools run on tokio's blocking pool) until the client answers or a
/// timeout passes; an error names what the client said.
pub trait ClientFiles: Send + Sync + std::fmt::Debug {
    /// True when the client reads text files (`fs.readTextFile`).
    fn reads(&self) -> bool;
    /// True when the client writes text files (`fs.writeTextFile`).
    fn writes(&self) -> bool;
    /// The whole text of the file at the absolute `path` as the client has
    /// it (an unsaved buffer included). `NotFound` when there is none.
    fn read(&self, path: &Path) -> io::Result<String>;
    /// Replaces the file at the absolute `path` with `text` (creating it).
    fn write(&self, path: &Path, text: &str) -> io::Result<()>;
}

/// The text of `target`, at most `max` bytes: from the client when it
/// reads files, else from disk beneath the workspace root. Errors:
/// missing (`NotFound`), a directory, larger than `max` (`FileTooLarge`),
/// binary (a NUL in the first 8 KiB) or not UTF-8 (`InvalidData`).
pub fn read_text(client: Option<&dyn ClientFiles>, target: &Confined, max: u64) -> io::Result<String> {
    let bytes = match client.filter(|c| c.reads()) {
        Some(c) if !target.is_dir() => c.read(target.path())?.into_bytes(),
        _ => {
            use std::io::Read;
            let mut f = target.open_read()?;
            let meta = f.metadata()?;
            if meta.is_dir() {
                return Err(io::Error::new(io::ErrorKind::IsADirectory, "a directory"));
            }
            if meta.len() > max {
                return Err(too_large(meta.len(), max));
            }
            let mut bytes = Vec::with_capacity(meta.len() as usize);
            f.read_to_end(&mut bytes)?;
            bytes
        }
    };
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64, max));
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "binary file"));
    }
    String::from_utf8(bytes).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8 text"))
}

/// The bytes of `target`, whatever they hold and however large (what a
/// write left, read back to check it landed): from the client when it
/// reads files, else from disk beneath the workspace root. Errors: missing
/// (`NotFound`), a directory, unreadable.
pub fn read_bytes(client: Option<&dyn ClientFiles>, target: &Confined) -> io::Result<Vec<u8>> {
    match client.filter(|c| c.reads()) {
        Some(c) if !target.is_dir() => Ok(c.read(target.path())?.into_bytes()),
        _ => {
            use std::io::Read;
            let mut f = target.open_read()?;
            if f.metadata()?.is_dir() {
                return Err(io::Error::new(io::ErrorKind::IsADirectory, "a directory"));
            }
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)?;
            Ok(bytes)
        }
    }
}

/// Writes `text` to `target`: through the client when it writes files,
/// else atomically on disk ([`Confined::write_atomic`]).
pub fn write_text(client: Option<&dyn ClientFiles>, target: &Confined, text: &str) -> io::Result<()> {
    match client.filter(|c| c.writes()) {
        Some(c) => c.write(target.path(), text),
        None => target.write_atomic(text.as_bytes()),
    }
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, format!("{len} bytes, over the {max} byte limit"))
}
