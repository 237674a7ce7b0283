//! The one way a front-end learns it should stop: SIGTERM or SIGINT.
//!
//! Owns: [`shutdown_signal`], shared by the stdio worker, `pirn run` and
//! `pirn serve`, so each reacts to the same signals the same way.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// Which signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Terminate,
    Interrupt,
}

/// Listens for SIGTERM and SIGINT from the moment it is created (so a signal
/// between creation and the first poll is not lost). If a handler cannot be
/// installed, that signal keeps its default action.
pub struct ShutdownSignal {
    term: Option<Signal>,
    int: Option<Signal>,
}

/// Starts listening for SIGTERM and SIGINT.
pub fn shutdown_signal() -> ShutdownSignal {
    ShutdownSignal { term: signal(SignalKind::terminate()).ok(), int: signal(SignalKind::interrupt()).ok() }
}

impl ShutdownSignal {
    /// Resolves when either signal arrives (never, if neither could be installed).
    pub async fn recv(&mut self) -> StopSignal {
        async fn one(sig: &mut Option<Signal>) {
            match sig {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = one(&mut self.term) => StopSignal::Terminate,
            _ = one(&mut self.int) => StopSignal::Interrupt,
        }
    }
}
