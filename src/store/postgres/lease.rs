//! Who owns a session on a shared Postgres, and until when: claims,
//! leases, and the hosts of a `pirn serve` group.
//!
//! Owns: the rules every claim follows, group or not.
//! - A claim makes this process the session's owner and raises its `epoch`
//!   (the fencing number every append carries: an append with an older one
//!   is refused, so a process that lost the session cannot write into it).
//! - A claim is refused ([`StoreError::Owned`]) while another process holds
//!   a **live lease** on the session: `owner` set, `lease_until_ms` in the
//!   future of the database's clock. A session with no owner, an owner
//!   without a lease (a worker, or a host outside a group) or a lapsed
//!   lease can be claimed: that is how a session is taken over from a host
//!   that died or stopped.
//! - A group host ([`PgStore::set_lease`]) claims with a lease of its
//!   `--lease-secs` and renews all of its leases together
//!   ([`PgStore::renew`], every third of the lease); the sessions a renewal
//!   no longer finds were taken over, and the host closes them.
//! - Times are the database's (`pirn_now_ms()`), so host clocks need not agree.

pub use super::client::Lease;
use super::client::{PgStore, pg, timed};
use crate::store::entry::now_ms;
use crate::store::error::StoreError;
use crate::wire::http::group::{GroupHost, SessionLease};

/// Who owns a session now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// This process.
    Me,
    /// Another host with a live lease, reached at `url`.
    Host { id: String, url: String },
    /// Nobody with a live lease: a claim would succeed.
    Free,
}

impl PgStore {
    /// Makes this process's claims leases (a group host). Set once, before
    /// any claim; a second call is ignored.
    pub fn set_lease(&self, lease: Lease) {
        let _ = self.lease.set(lease);
    }

    /// This process's name in the `owner` columns.
    pub fn host_id(&self) -> &str {
        &self.owner
    }

    /// See [`crate::store::Store::claim`]; the rules are the module doc's.
    pub async fn claim(&self, id: &str) -> Result<u64, StoreError> {
        timed("claim the session", self.timeout, self.claim_now(id)).await
    }

    async fn claim_now(&self, id: &str) -> Result<u64, StoreError> {
        let client = self.pool.get().await.map_err(pg)?;
        let lease = self.lease.get();
        let url = lease.map(|l| l.url.as_str());
        let ms = lease.map(|l| l.duration_ms as i64);
        let now = now_ms() as i64;
        let row = client
            .query_opt(
                "INSERT INTO pirn_sessions AS s
                     (tenant, session_id, created_ms, updated_ms, epoch, owner, owner_url, lease_until_ms)
                 VALUES ($1, $2, $3, $3, 1, $4, $5, pirn_now_ms() + $6::bigint)
                 ON CONFLICT (tenant, session_id) DO UPDATE
                     SET epoch = s.epoch + 1, owner = $4, owner_url = $5, lease_until_ms = EXCLUDED.lease_until_ms
                     WHERE s.owner IS NULL OR s.owner = $4 OR s.lease_until_ms IS NULL
                         OR s.lease_until_ms < pirn_now_ms()
                 RETURNING epoch",
                &[&self.tenant, &id, &now, &self.owner, &url, &ms],
            )
            .await
            .map_err(pg)?;
        if let Some(row) = row {
            return Ok(row.get::<_, i64>(0) as u64);
        }
        let holder = client
            .query_opt(
                "SELECT owner, owner_url FROM pirn_sessions WHERE tenant = $1 AND session_id = $2",
                &[&self.tenant, &id],
            )
            .await
            .map_err(pg)?;
        let (owner, url) = holder.map(|r| (r.get(0), r.get(1))).unwrap_or_default();
        Err(StoreError::Owned { session: id.to_owned(), owner, url })
    }

    /// Clears the owner and its lease if `epoch` is still the session's.
    pub async fn release(&self, id: &str, epoch: u64) {
        let released = async {
            let client = self.pool.get().await.map_err(pg)?;
            client
                .execute(
                    "UPDATE pirn_sessions SET owner = NULL, owner_url = NULL, lease_until_ms = NULL
                     WHERE tenant = $1 AND session_id = $2 AND epoch = $3",
                    &[&self.tenant, &id, &(epoch as i64)],
                )
                .await
                .map_err(pg)
        };
        if let Err(e) = timed("release the session", self.timeout, released).await {
            tracing::warn!(session_id = id, "releasing the session: {e}");
        }
    }

    /// Who owns session `id` (`NotFound` when it is not stored).
    pub async fn locate(&self, id: &str) -> Result<Owner, StoreError> {
        timed("locate the session's owner", self.timeout, async {
            let client = self.pool.get().await.map_err(pg)?;
            let row = client
                .query_opt(
                    "SELECT owner, owner_url, lease_until_ms >= pirn_now_ms()
                     FROM pirn_sessions WHERE tenant = $1 AND session_id = $2",
                    &[&self.tenant, &id],
                )
                .await
                .map_err(pg)?
                .ok_or_else(|| StoreError::NotFound(id.to_owned()))?;
            let (owner, url, live): (Option<String>, Option<String>, Option<bool>) =
                (row.get(0), row.get(1), row.get(2));
            Ok(match (owner, url, live) {
                (Some(o), _, _) if o == self.owner => Owner::Me,
                (Some(id), Some(url), Some(true)) => Owner::Host { id, url },
                _ => Owner::Free,
            })
        })
        .await
    }

    /// Renews every lease this host holds and its `pirn_hosts` row; returns
    /// the sessions it still owns (a live session missing from them was
    /// taken over). Without a lease (not a group host): nothing to renew.
    pub async fn renew(&self, started_ms: u64) -> Result<Vec<String>, StoreError> {
        let Some(lease) = self.lease.get() else { return Ok(Vec::new()) };
        timed("renew the leases", self.timeout, async {
            let mut client = self.pool.get().await.map_err(pg)?;
            let tx = client.transaction().await.map_err(pg)?;
            let ms = lease.duration_ms as i64;
            tx.execute(
                "INSERT INTO pirn_hosts (tenant, host_id, url, started_ms, heartbeat_ms)
                 VALUES ($1, $2, $3, $4, pirn_now_ms())
                 ON CONFLICT (tenant, host_id) DO UPDATE SET url = $3, heartbeat_ms = pirn_now_ms()",
                &[&self.tenant, &self.owner, &lease.url, &(started_ms as i64)],
            )
            .await
            .map_err(pg)?;
            let rows = tx
                .query(
                    "UPDATE pirn_sessions SET lease_until_ms = pirn_now_ms() + $3
                     WHERE tenant = $1 AND owner = $2 RETURNING session_id",
                    &[&self.tenant, &self.owner, &ms],
                )
                .await
                .map_err(pg)?;
            tx.commit().await.map_err(pg)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
        .await
    }

    /// Forgets this host in `pirn_hosts` (it stops).
    pub async fn leave(&self) {
        let left = async {
            let client = self.pool.get().await.map_err(pg)?;
            client
                .execute("DELETE FROM pirn_hosts WHERE tenant = $1 AND host_id = $2", &[&self.tenant, &self.owner])
                .await
                .map_err(pg)
        };
        if let Err(e) = timed("leave the group", self.timeout, left).await {
            tracing::warn!("leaving the group: {e}");
        }
    }

    /// The group's hosts (those seen within ten leases) and every claimed
    /// session, as `GET /v1/hosts` shows them.
    pub async fn group(&self) -> Result<(Vec<GroupHost>, Vec<SessionLease>), StoreError> {
        let lease_ms = self.lease.get().map_or(10_000, |l| l.duration_ms) as i64;
        timed("list the group", self.timeout, async {
            let client = self.pool.get().await.map_err(pg)?;
            let hosts = client
                .query(
                    "SELECT h.host_id, h.url, h.started_ms, h.heartbeat_ms, h.heartbeat_ms + $2 >= pirn_now_ms(),
                        (SELECT count(*) FROM pirn_sessions s WHERE s.tenant = h.tenant AND s.owner = h.host_id
                            AND s.lease_until_ms >= pirn_now_ms())
                     FROM pirn_hosts h
                     WHERE h.tenant = $1 AND h.heartbeat_ms + 10 * $2 >= pirn_now_ms()
                     ORDER BY h.started_ms, h.host_id",
                    &[&self.tenant, &lease_ms],
                )
                .await
                .map_err(pg)?;
            let leases = client
                .query(
                    "SELECT session_id, owner, owner_url, lease_until_ms, epoch,
                        coalesce(lease_until_ms >= pirn_now_ms(), false)
                     FROM pirn_sessions WHERE tenant = $1 AND owner IS NOT NULL ORDER BY session_id",
                    &[&self.tenant],
                )
                .await
                .map_err(pg)?;
            let hosts = hosts
                .iter()
                .map(|r| GroupHost {
                    host_id: r.get(0),
                    url: r.get(1),
                    started_ms: r.get::<_, i64>(2) as u64,
                    heartbeat_ms: r.get::<_, i64>(3) as u64,
                    alive: r.get(4),
                    sessions: r.get::<_, i64>(5) as u64,
                })
                .collect();
            let leases = leases
                .iter()
                .map(|r| SessionLease {
                    session_id: r.get(0),
                    owner: r.get(1),
                    owner_url: r.get(2),
                    lease_until_ms: r.get::<_, Option<i64>>(3).map(|v| v as u64),
                    epoch: r.get::<_, i64>(4) as u64,
                    live: r.get(5),
                })
                .collect();
            Ok((hosts, leases))
        })
        .await
    }
}
