//! `pirn sessions list|show|export|rm|fork|rewind|worktrees|worktree-rm`: the stored sessions from a shell,
//! in the store the environment names (`PIRN_HOME`, `PIRN_STORE`,
//! `PIRN_TENANT`).
//!
//! Exit codes: 0 done; 1 no such session; 2 the store cannot be opened or
//! read, the session is open in another process (`rm`, `rewind`), a fork
//! names a message the session does not hold, or a rewind is refused.

use std::io::Write;

use pirn::checkpoint::rewind::{apply, plan};
use pirn::conversation::Conversation;
use pirn::session::fork::{ForkError, fork_stored};
use pirn::store::entry::now_ms;
use pirn::store::fold::fold;
use pirn::store::{Body, NewEntry};
use pirn::store::{Store, StoreError};

/// `pirn sessions` subcommands.
#[derive(clap::Subcommand, Debug, Clone)]
pub enum SessionsCommand {
    /// One line per session (id, last activity, live, model, title), newest
    /// activity first.
    List {
        /// A JSON array instead.
        #[arg(long)]
        json: bool,
    },
    /// The conversation of a session, one message per paragraph.
    Show { id: String },
    /// The session's log as stored, one JSON entry per line.
    Export { id: String },
    /// Delete the session's log.
    Rm { id: String },
    /// Put the files of a stored session's workspace back to how they were
    /// before send SEND (each file put back on stdout); refused, changing
    /// nothing, when a file's state was not kept or it changed since.
    Rewind {
        id: String,
        /// The send to undo, with every send after it.
        send: String,
    },
    /// The git worktrees pirn made for sessions (`--worktree`), with the
    /// session, branch and whether the process that made it still runs.
    Worktrees {
        /// A JSON array instead.
        #[arg(long)]
        json: bool,
    },
    /// Remove a worktree pirn made (by name or path; its branch stays).
    WorktreeRm {
        name: String,
        /// Even with changes in it that are not committed.
        #[arg(long)]
        force: bool,
    },
    /// Copy a stored session into a new one (its id on stdout); the stored
    /// one is not changed.
    Fork {
        id: String,
        /// Keep messages up to and including this one (from 1, the system
        /// prompt not counted; default all).
        #[arg(long, value_name = "N")]
        at: Option<u64>,
        /// `{"session_id", "forked_from": {"session_id", "at_message"}}`
        /// instead of the id alone.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `cmd`; returns the exit code.
#[allow(clippy::print_stderr)]
pub async fn run(cmd: SessionsCommand) -> i32 {
    let store = match Store::from_env(&|k| std::env::var(k).ok()).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            eprintln!("pirn sessions: persistence is off (PIRN_PERSIST=0)");
            return 2;
        }
        Err(e) => {
            eprintln!("pirn sessions: {e}");
            return 2;
        }
    };
    let mut out = Vec::new();
    let code = match execute(&store, cmd, &mut out).await {
        Ok(()) => 0,
        Err(e @ StoreError::NotFound(_)) => {
            eprintln!("pirn sessions: {e}");
            1
        }
        Err(e) => {
            eprintln!("pirn sessions: {e}");
            2
        }
    };
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out);
    let _ = stdout.flush();
    code
}

async fn execute(store: &Store, cmd: SessionsCommand, out: &mut Vec<u8>) -> Result<(), StoreError> {
    match cmd {
        SessionsCommand::List { json } => {
            let list = store.list().await?;
            if json {
                let _ = serde_json::to_writer_pretty(&mut *out, &list);
                out.push(b'\n');
                return Ok(());
            }
            for s in list {
                let when =
                    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_millis(s.updated_ms));
                let live = if s.live { "live" } else { "-" };
                let _ = writeln!(out, "{}  {when}  {live:4}  {}  {}", s.session_id, s.model, s.title);
            }
        }
        SessionsCommand::Show { id } => {
            let folded = fold(&store.load(&id, 0).await?);
            let conv = Conversation::restore(folded.messages, Default::default());
            for i in 0..conv.len() {
                let _ = writeln!(out, "[{}]\n{}\n", conv.role_of(i), conv.text_of(i).trim_end());
            }
            for (send, message) in &folded.interrupted {
                let _ = writeln!(out, "[interrupted send {send}] {message}");
            }
        }
        SessionsCommand::Export { id } => {
            for e in store.load(&id, 0).await? {
                let _ = serde_json::to_writer(&mut *out, &e);
                out.push(b'\n');
            }
        }
        SessionsCommand::Fork { id, at, json } => {
            let new_id = uuid::Uuid::new_v4().to_string();
            let forked = match fork_stored(store, &id, at, &new_id, None).await {
                Ok(f) => f,
                Err(ForkError::Store(e)) => return Err(e),
                Err(e) => return Err(StoreError::Config(format!("cannot fork session {id:?}: {e}"))),
            };
            if json {
                let _ = serde_json::to_writer(&mut *out, &forked);
                out.push(b'\n');
            } else {
                let _ = writeln!(out, "{}", forked.session_id);
            }
        }
        SessionsCommand::Rewind { id, send } => {
            let entries = store.load(&id, 0).await?;
            let workspace = std::path::PathBuf::from(fold(&entries).workspace);
            let epoch = store.claim(&id).await?;
            let done = plan(&entries, &send).and_then(|p| apply(&p, &workspace, false).map(|r| (p, r)));
            let (p, restored) = match done {
                Ok(d) => d,
                Err(e) => {
                    store.release(&id, epoch).await;
                    return Err(StoreError::Config(format!("cannot rewind session {id:?}: {e}")));
                }
            };
            let body = Body::Rewind { to_seq: p.to_seq, restored: restored.iter().map(|r| r.path.clone()).collect() };
            let entry = NewEntry::new(0, now_ms(), &body).into_iter().collect::<Vec<_>>();
            let stored = store.append(&id, Some(epoch), &uuid::Uuid::new_v4().to_string(), entry.into(), true).await;
            store.release(&id, epoch).await;
            stored?;
            for r in restored {
                let _ = writeln!(out, "{} {}", r.action, r.path);
            }
        }
        SessionsCommand::Worktrees { json } => {
            let home = pirn::store::home(&|k| std::env::var(k).ok());
            let all = pirn::worktree::list(&home);
            if json {
                let rows: Vec<serde_json::Value> = all
                    .iter()
                    .map(|(wt, live)| {
                        let mut v = serde_json::to_value(wt).unwrap_or_default();
                        v["live"] = serde_json::Value::Bool(*live);
                        v
                    })
                    .collect();
                let _ = serde_json::to_writer_pretty(&mut *out, &rows);
                out.push(b'\n');
            } else {
                for (wt, live) in all {
                    let live = if live { "live" } else { "-" };
                    let _ =
                        writeln!(out, "{}  {live:4}  {}  {}  {}", wt.name, wt.branch, wt.session_id, wt.path.display());
                }
            }
        }
        SessionsCommand::WorktreeRm { name, force } => {
            let home = pirn::store::home(&|k| std::env::var(k).ok());
            let found: Vec<_> = pirn::worktree::list(&home)
                .into_iter()
                .filter(|(wt, _)| wt.name == name || wt.path == std::path::Path::new(&name))
                .collect();
            let (wt, _) = match <[_; 1]>::try_from(found) {
                Ok([one]) => one,
                Err(v) if v.is_empty() => return Err(StoreError::NotFound(format!("worktree {name}"))),
                Err(_) => {
                    return Err(StoreError::Config(format!(
                        "worktrees of several repositories are named {name:?}: give its path (pirn sessions worktrees)"
                    )));
                }
            };
            pirn::worktree::remove(&wt.repo, &wt.path, force).map_err(|e| StoreError::Config(e.to_string()))?;
            let _ = writeln!(out, "removed {} (branch {} kept)", wt.path.display(), wt.branch);
        }
        SessionsCommand::Rm { id } => {
            if !store.delete(&id).await? {
                return Err(StoreError::NotFound(id));
            }
        }
    }
    Ok(())
}
