//! An MCP tool's progress while it runs, for the client (0.3.0
//! `tool_output` events, as `bash` streams its output).
//!
//! Owns [`Listener`], the client handler every MCP server connection gets:
//! it routes `notifications/progress` to the call that asked for them by
//! their `progressToken` (rmcp's `ProgressDispatcher`); and [`follow`],
//! which waits for a call's answer while turning each notification into a
//! line (`[progress 3/10] copying`) fed through [`crate::tools::live::Live`],
//! so the pieces are bounded and rate-limited like bash's and never waited
//! on. A server that sends no progress streams nothing; the call's result
//! is what the model reads, as before.

use std::future::Future;

use futures_util::StreamExt;
use rmcp::handler::client::progress::{ProgressDispatcher, ProgressSubscriber};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc::Sender;

use crate::tools::live::{EVERY, Live, OutputDelta};

/// The client side of one MCP connection: hands progress notifications to
/// whoever subscribed to their token.
#[derive(Debug, Clone, Default)]
pub struct Listener {
    /// Progress subscriptions by token.
    pub dispatcher: ProgressDispatcher,
}

impl ClientHandler for Listener {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.dispatcher.handle_notification(params).await;
    }
}

/// One notification as the line the client sees: `[progress 3/10] copying`
/// (`total` and the message when the server gave them).
pub fn line(p: &ProgressNotificationParam) -> String {
    let amount = match p.total {
        Some(total) => format!("{}/{}", p.progress, total),
        None => p.progress.to_string(),
    };
    match p.message.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => format!("[progress {amount}] {message}\n"),
        None => format!("[progress {amount}]\n"),
    }
}

/// Awaits `answer`; meanwhile each notification of `updates` goes to its
/// sender as a line (see [`line`]). Without `updates`, just `answer`.
pub async fn follow<F: Future>(answer: F, updates: Option<(ProgressSubscriber, Sender<OutputDelta>)>) -> F::Output {
    let Some((mut progress, tx)) = updates else {
        return answer.await;
    };
    let mut live = Live::new(tx);
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(answer);
    let mut open = true;
    let out = loop {
        tokio::select! {
            out = &mut answer => break out,
            p = progress.next(), if open => match p {
                Some(p) => live.push(line(&p).as_bytes()),
                None => open = false,
            },
            _ = tick.tick(), if live.waiting() => {
                if live.due() {
                    live.flush();
                }
            }
        }
    };
    // A server sends its last progress just before its answer, and rmcp
    // hands notifications on from a task of their own: let that task run,
    // then take what came, without waiting for more.
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
    while open {
        match futures_util::FutureExt::now_or_never(progress.next()) {
            Some(Some(p)) => live.push(line(&p).as_bytes()),
            _ => open = false,
        }
    }
    live.flush();
    out
}

#[cfg(test)]
mod tests {
    use rmcp::model::{NumberOrString, ProgressToken};

    use super::*;

    #[test]
    fn a_notification_reads_as_one_line() {
        let token = ProgressToken(NumberOrString::Number(1));
        let mut p = ProgressNotificationParam::new(token, 3.0).with_total(10.0);
        assert_eq!(line(&p), "[progress 3/10]\n");
        p.message = Some("copying".into());
        assert_eq!(line(&p), "[progress 3/10] copying\n");
        p.total = None;
        p.progress = 2.5;
        assert_eq!(line(&p), "[progress 2.5] copying\n");
    }
}
