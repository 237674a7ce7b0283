//! This host's membership of its group of `pirn serve` hosts
//! (`--advertise-url`, `--lease-secs`).
//!
//! Owns: [`Group`]: the store that holds the leases, how peers reach this
//! host, the lease's length, the client that forwards to peers, the one
//! takeover at a time and when the leases were last renewed. What a
//! request for a session does with it is [`super::group`]'s.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::store::postgres::PgStore;
use crate::store::postgres::lease::Lease;
use crate::transport::hub::mono_ms;

/// This host's place in its group.
pub struct Group {
    pub store: Arc<PgStore>,
    /// How peers reach this host.
    pub url: String,
    /// `--lease-secs`.
    pub lease: Duration,
    /// Unix ms this host started (its `pirn_hosts` row).
    pub started_ms: u64,
    pub(super) client: reqwest::Client,
    /// One takeover at a time on this host (two requests for the same
    /// free session must not open it twice).
    pub(super) taking: tokio::sync::Mutex<()>,
    /// When the last renewal succeeded ([`crate::transport::hub::mono_ms`]).
    pub(super) renewed_ms: AtomicU64,
}

impl Group {
    /// Joins the group on `store` as the host reached at `url`, claiming
    /// with leases of `lease`.
    pub fn new(store: Arc<PgStore>, url: String, lease: Duration) -> Group {
        store.set_lease(Lease { url: url.clone(), duration_ms: lease.as_millis() as u64 });
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client =
            reqwest::Client::builder().connect_timeout(lease).pool_idle_timeout(Duration::from_secs(30)).build();
        Group {
            store,
            url,
            lease,
            started_ms: crate::store::entry::now_ms(),
            client: client.unwrap_or_default(),
            taking: tokio::sync::Mutex::new(()),
            renewed_ms: AtomicU64::new(mono_ms()),
        }
    }

    /// True while the last renewal is recent enough that this host's
    /// leases surely still hold (two thirds of a lease). A host that was
    /// paused or cut off is not fresh until it renews again: until then it
    /// asks the store before serving a session it runs.
    pub(super) fn fresh(&self) -> bool {
        let lease = self.lease.as_millis() as u64;
        mono_ms().saturating_sub(self.renewed_ms.load(Ordering::Relaxed)) < lease * 2 / 3
    }

    /// This host's id (its `owner` in the store).
    pub fn host_id(&self) -> &str {
        self.store.host_id()
    }
}
