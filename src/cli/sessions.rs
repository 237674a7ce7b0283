//! `pirn sessions list|show|export|rm`: the stored sessions from a shell,
//! in the store the environment names (`PIRN_HOME`, `PIRN_STORE`,
//! `PIRN_TENANT`).
//!
//! Exit codes: 0 done; 1 no such session; 2 the store cannot be opened or
//! read, or the session is open in another process (`rm`).

use std::io::Write;

use pirn::conversation::Conversation;
use pirn::store::fold::fold;
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
        SessionsCommand::Rm { id } => {
            if !store.delete(&id).await? {
                return Err(StoreError::NotFound(id));
            }
        }
    }
    Ok(())
}
