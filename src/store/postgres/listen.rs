//! The LISTEN side of the Postgres store: one connection of its own per
//! process, `LISTEN pirn_entries`, each notification of this tenant fanned
//! out in-process; reconnects after a second when the connection drops,
//! and tells every follower to reload ([`super::RESYNC`]).

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, NoTls};

use crate::store::info::Appended;

/// The session id of a broadcast that means "reload whatever you follow"
/// (sent after the LISTEN connection was re-established).
pub const RESYNC: &str = "";
/// The NOTIFY channel.
const CHANNEL: &str = "pirn_entries";

/// Runs LISTEN for the life of the process, reconnecting when the
/// connection drops. `ready` fires once LISTEN is first in force; after a
/// reconnect every subscriber gets [`RESYNC`] (notifications may have been
/// missed meanwhile: reload).
pub(super) async fn listen(
    config: tokio_postgres::Config,
    tenant: String,
    tx: broadcast::Sender<Appended>,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    let mut ready = Some(ready);
    loop {
        match listen_once(&config, &tenant, &tx, &mut ready).await {
            Ok(()) => tracing::warn!("postgres LISTEN connection closed, reconnecting"),
            Err(e) => tracing::warn!("postgres LISTEN connection lost, reconnecting: {e}"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

async fn listen_once(
    config: &tokio_postgres::Config,
    tenant: &str,
    tx: &broadcast::Sender<Appended>,
    ready: &mut Option<tokio::sync::oneshot::Sender<()>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let first = ready.take();
    let tx2 = tx.clone();
    let listen = async move {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        match first {
            Some(r) => {
                let _ = r.send(());
            }
            None => {
                let _ = tx2.send((Arc::from(RESYNC), 0));
            }
        }
        // Keep the client (and so the connection) alive.
        std::future::pending::<()>().await;
        Ok::<_, tokio_postgres::Error>(client)
    };
    tokio::pin!(listen);
    loop {
        tokio::select! {
            r = &mut listen => { r?; }
            m = messages.next() => match m {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let mut parts = n.payload().split('\t');
                    if let (Some(t), Some(id), Some(seq)) = (parts.next(), parts.next(), parts.next())
                        && t == tenant
                        && let Ok(seq) = seq.parse()
                    {
                        // No receiver right now is fine.
                        let _ = tx.send((Arc::from(id), seq));
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    }
}
