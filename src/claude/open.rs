//! Opening the session behind Claude Code's surface without stopping the
//! surface's loop: the SDK's in-process MCP servers answer pirn's MCP
//! handshake over stdin while the session opens, so the loop must keep
//! reading it.
//!
//! Owns: [`Opening`] (the future the loop polls), [`opened`], and
//! [`Surface::open`], which builds it from the setup: the init config and
//! what the SDK does in its own process (hook callbacks, MCP servers).

use tokio::sync::mpsc;

use super::control::{SdkHooks, SdkMcp};
use super::surface::Surface;
use crate::config::Limits;
use crate::hooks::callback::ClientHooks;
use crate::session::{ClientSide, OUTBOX_CAPACITY, Session};
use crate::wire::{OutgoingMessage, PROTOCOL_VERSION};

/// A session being opened: it, and its outbox.
pub(super) type Opening =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(Session, mpsc::Receiver<OutgoingMessage>), String>>>>;

/// The end of an opening (pending when none is under way).
pub(super) async fn opened(
    opening: &mut Option<Opening>,
) -> Result<(Session, mpsc::Receiver<OutgoingMessage>), String> {
    match opening {
        Some(f) => {
            let done = f.as_mut().await;
            *opening = None;
            done
        }
        None => std::future::pending().await,
    }
}

impl Surface {
    /// The opening of the session (the loop polls it; see `want_open`).
    /// An error is written to stderr; the process then exits 2.
    #[allow(clippy::print_stderr)]
    pub(super) fn open(&mut self) -> Opening {
        let (outbox, rx) = mpsc::channel(OUTBOX_CAPACITY);
        let config = self.setup.init_config();
        let runner: std::sync::Arc<dyn ClientHooks> = std::sync::Arc::new(SdkHooks(self.sdk_tx.clone()));
        let mcp = (!self.setup.sdk_mcp.is_empty()).then(|| crate::mcp::bridge::ClientServers {
            names: self.setup.sdk_mcp.clone(),
            client: std::sync::Arc::new(SdkMcp(self.sdk_tx.clone())),
        });
        let hooks = self.setup.callbacks.clone().map(|table| (table, runner));
        let client = ClientSide { files: None, hooks, mcp };
        let env = self.env.clone();
        Box::pin(async move {
            let version = Some(PROTOCOL_VERSION);
            match Session::open_with_client(version, &config, &env, Limits::default(), outbox, client).await {
                Ok(s) => Ok((s, rx)),
                Err(e) => {
                    eprintln!("pirn: {e}");
                    Err(e.to_string())
                }
            }
        })
    }
}
