//! Durable session logs: what lets a session outlive its process, and two
//! `pirn serve` hosts share sessions.
//!
//! Owns: the [`Store`] contract and its two back ends, chosen by
//! `PIRN_STORE`:
//! - [`file`] (the default): one append-only JSONL file per session under
//!   `$PIRN_HOME/sessions/<tenant>/` (`PIRN_HOME` defaults to `~/.pirn`;
//!   `HEDDLE_HOME` is read as an alias). Why files and not SQLite: a session
//!   log is append-only and read whole, which is what a file does best; the
//!   file *is* the export format (`tail -f` works), a torn last line after
//!   `kill -9` is found by its missing newline, and nothing is compiled in.
//!   Its one weakness, listing (a directory scan reading each file's head),
//!   costs milliseconds for hundreds of sessions.
//! - [`postgres`] (`PIRN_STORE=postgres://…`): the same entries as rows, for
//!   several hosts on one database, with LISTEN/NOTIFY for live fan-out.
//!
//! The contract, tested on both by one suite: entries of a session come
//! back in append order with gap-free `seq` from 1; an entry id
//! (`writer`, `n`) already stored is not stored again; concurrent appends
//! to one session keep each append's entries together and in order; every
//! row carries the tenant (`PIRN_TENANT`, default `default`), and a store
//! sees its tenant's sessions only. [`journal`] is the per-session writer
//! on top (the task behind it, batching and retrying, is [`writer`]'s),
//! [`fold`] turns a log back into a conversation. The contract
//! itself is [`backend`]'s; this file only declares and re-exports.

mod backend;
pub mod entry;
mod error;
pub mod file;
pub mod fold;
mod info;
pub mod journal;
mod lines;
pub mod postgres;
pub mod writer;

pub use backend::{MAX_ID_LEN, Store, check_id, home};
pub use entry::{Body, FileBefore, FileLeft, FileSeen, NewEntry, Stored};
pub use error::StoreError;
pub use info::{Appended, SessionInfo};
pub use journal::Journal;
