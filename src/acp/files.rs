//! The ACP client's file system as pirn's file tools see it: `read_file`,
//! `edit_file` and `write_file` read and write text with
//! `fs/read_text_file` and `fs/write_text_file` when the client advertised
//! them at `initialize` (so an editor's unsaved buffers are what the model
//! sees, and edits land in the editor).
//!
//! Owns: [`ClientFs`], the [`ClientFiles`] of one ACP session. Paths reach
//! it already confined beneath the workspace (see `tools::client_files`);
//! each call waits at most [`CALL_TIMEOUT`] for the client.

use std::io;
use std::path::Path;
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{FileSystemCapabilities, ReadTextFileRequest, SessionId, WriteTextFileRequest};

use crate::tools::client_files::ClientFiles;

/// Longest wait for the client's answer to one `fs/*` call.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One session's view of the client's file system.
pub struct ClientFs {
    cx: ConnectionTo<Client>,
    /// Set once the pirn session (whose id the ACP session takes) is open.
    session: std::sync::OnceLock<SessionId>,
    caps: FileSystemCapabilities,
    runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for ClientFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFs").field("session", &self.session).field("caps", &self.caps).finish()
    }
}

impl ClientFs {
    /// The client's files, or `None` when the client offers neither
    /// reading nor writing. Must be called on the tokio runtime; usable
    /// once [`ClientFs::bind`] named the session.
    pub fn new(cx: ConnectionTo<Client>, caps: FileSystemCapabilities) -> Option<ClientFs> {
        (caps.read_text_file || caps.write_text_file).then(|| ClientFs {
            cx,
            session: std::sync::OnceLock::new(),
            caps,
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// Names the ACP session the calls are made for.
    pub fn bind(&self, session: SessionId) {
        let _ = self.session.set(session);
    }

    fn session(&self) -> io::Result<SessionId> {
        self.session.get().cloned().ok_or_else(|| io::Error::other("the session is not open yet"))
    }

    /// Sends `request` and waits for its answer on the blocking thread the
    /// file tool runs on.
    fn call<R>(&self, request: R) -> io::Result<R::Response>
    where
        R: agent_client_protocol::JsonRpcRequest + Send + 'static,
        R::Response: Send + 'static,
    {
        let sent = self.cx.send_request(request);
        let answer = self.runtime.block_on(async { tokio::time::timeout(CALL_TIMEOUT, sent.block_task()).await });
        match answer {
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "the client did not answer in 30 s")),
            Ok(Err(e)) => {
                let not_found = i32::from(e.code) == -32002
                    || ["not found", "no such file", "enoent"].iter().any(|w| e.message.to_lowercase().contains(w));
                let kind = if not_found { io::ErrorKind::NotFound } else { io::ErrorKind::Other };
                let detail = e.data.as_ref().map(|d| format!(" ({d})")).unwrap_or_default();
                Err(io::Error::new(kind, format!("the client says: {}{detail}", e.message)))
            }
            Ok(Ok(response)) => Ok(response),
        }
    }
}

impl ClientFiles for ClientFs {
    fn reads(&self) -> bool {
        self.caps.read_text_file
    }

    fn writes(&self) -> bool {
        self.caps.write_text_file
    }

    fn read(&self, path: &Path) -> io::Result<String> {
        Ok(self.call(ReadTextFileRequest::new(self.session()?, path))?.content)
    }

    fn write(&self, path: &Path, text: &str) -> io::Result<()> {
        self.call(WriteTextFileRequest::new(self.session()?, path, text)).map(|_| ())
    }
}
