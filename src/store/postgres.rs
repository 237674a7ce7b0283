//! The Postgres store (`PIRN_STORE=postgres://…`): session logs as rows,
//! shared by every host on the database.
//!
//! Owns: the schema (created idempotently at start, under an advisory lock
//! so hosts starting together do not race), appends, claims and LISTEN.
//!
//! - `pirn_sessions(tenant, session_id, created_ms, updated_ms, next_seq,
//!   epoch, owner, owner_url, lease_until_ms)`: one row per session;
//!   appends lock it (`FOR UPDATE`), which keeps concurrent appends to one
//!   session in order and `seq` gap-free. `epoch` fences: a claim raises
//!   it, and an append carrying an older epoch is refused (`Superseded`),
//!   so a host that lost a session (it was resumed elsewhere) cannot write
//!   into it. Who owns a session, and for how long, is [`lease`]'s.
//! - `pirn_hosts(tenant, host_id, url, started_ms, heartbeat_ms)`: the
//!   hosts of a `pirn serve` group ([`lease`]).
//! - `pirn_entries(tenant, session_id, seq, writer, n, at_ms, kind, body)`:
//!   `body` is the entry's JSON body as the file store writes it; `(tenant,
//!   session_id, writer, n)` is unique, and an append skips ids already
//!   stored (a retried append is a no-op).
//! - An append is one call of the `pirn_append` function (one round trip
//!   of a prepared statement, one transaction): lock the session row,
//!   check the epoch, skip stored ids, insert, advance `next_seq`, and
//!   `pg_notify('pirn_entries', 'tenant<TAB>session<TAB>seq')`, delivered
//!   at commit. [`PgStore::watch`] LISTENs on a connection of its own and
//!   fans the notifications out in-process.
//!
//! Connections come from a deadpool pool; TLS is not configured (a
//! database on loopback or a private network).

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio::sync::{OnceCell, broadcast};
use tokio_postgres::NoTls;

use super::entry::{Body, NewEntry, Stored, now_ms};
use super::error::StoreError;
use super::file::title_of;
use super::info::{Appended, SessionInfo};

mod client;
pub mod lease;
mod listen;

pub use client::{DEFAULT_TIMEOUT, PgStore};
use client::{pg, timed};
pub use listen::RESYNC;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS pirn_sessions (
    tenant text NOT NULL,
    session_id text NOT NULL,
    created_ms bigint NOT NULL,
    updated_ms bigint NOT NULL,
    next_seq bigint NOT NULL DEFAULT 1,
    epoch bigint NOT NULL DEFAULT 0,
    owner text,
    PRIMARY KEY (tenant, session_id)
);
CREATE TABLE IF NOT EXISTS pirn_entries (
    tenant text NOT NULL,
    session_id text NOT NULL,
    seq bigint NOT NULL,
    writer text NOT NULL,
    n bigint NOT NULL,
    at_ms bigint NOT NULL,
    kind text NOT NULL,
    body text NOT NULL,
    PRIMARY KEY (tenant, session_id, seq),
    UNIQUE (tenant, session_id, writer, n)
);
CREATE OR REPLACE FUNCTION pirn_append(p_tenant text, p_session text, p_epoch bigint, p_writer text,
    p_ns bigint[], p_ats bigint[], p_kinds text[], p_bodies text[], p_now bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_next bigint;
    v_epoch bigint;
    v_max bigint;
    v_count bigint;
BEGIN
    INSERT INTO pirn_sessions (tenant, session_id, created_ms, updated_ms)
        VALUES (p_tenant, p_session, p_now, p_now) ON CONFLICT DO NOTHING;
    SELECT next_seq, epoch INTO v_next, v_epoch FROM pirn_sessions
        WHERE tenant = p_tenant AND session_id = p_session FOR UPDATE;
    IF p_epoch IS NOT NULL AND p_epoch <> v_epoch THEN
        RAISE EXCEPTION 'pirn: superseded' USING ERRCODE = 'PR001';
    END IF;
    SELECT max(n) INTO v_max FROM pirn_entries
        WHERE tenant = p_tenant AND session_id = p_session AND writer = p_writer;
    INSERT INTO pirn_entries (tenant, session_id, seq, writer, n, at_ms, kind, body)
        SELECT p_tenant, p_session, v_next - 1 + row_number() OVER (ORDER BY u.ord), p_writer, u.n, u.a, u.k, u.b
        FROM unnest(p_ns, p_ats, p_kinds, p_bodies) WITH ORDINALITY AS u(n, a, k, b, ord)
        WHERE v_max IS NULL OR u.n > v_max;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    IF v_count > 0 THEN
        UPDATE pirn_sessions SET next_seq = v_next + v_count, updated_ms = p_now
            WHERE tenant = p_tenant AND session_id = p_session;
        PERFORM pg_notify('pirn_entries', p_tenant || chr(9) || p_session || chr(9) || (v_next + v_count - 1));
    END IF;
    RETURN v_next + v_count - 1;
END
$$;
ALTER TABLE pirn_sessions ADD COLUMN IF NOT EXISTS owner_url text;
ALTER TABLE pirn_sessions ADD COLUMN IF NOT EXISTS lease_until_ms bigint;
CREATE TABLE IF NOT EXISTS pirn_hosts (
    tenant text NOT NULL,
    host_id text NOT NULL,
    url text NOT NULL,
    started_ms bigint NOT NULL,
    heartbeat_ms bigint NOT NULL,
    PRIMARY KEY (tenant, host_id)
);
CREATE OR REPLACE FUNCTION pirn_now_ms() RETURNS bigint
LANGUAGE sql AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;
";

/// An arbitrary constant naming pirn's schema lock.
const SCHEMA_LOCK: i64 = 0x7069_726e;
impl PgStore {
    /// Connects to `url` and creates the schema if it is missing.
    pub async fn connect(url: &str, tenant: &str, timeout: Duration) -> Result<PgStore, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(pg)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(timeout);
        }
        if config.get_options().is_none() {
            config.options(format!("-c statement_timeout={}", timeout.as_millis()));
        }
        let manager =
            Manager::from_config(config.clone(), NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(timeout))
            .create_timeout(Some(timeout))
            .build()
            .map_err(pg)?;
        timed("create the schema", timeout, async {
            let mut client = pool.get().await.map_err(pg)?;
            let tx = client.transaction().await.map_err(pg)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK]).await.map_err(pg)?;
            tx.batch_execute(SCHEMA).await.map_err(pg)?;
            tx.commit().await.map_err(pg)
        })
        .await?;
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        let owner = format!("{}:{}", host.trim(), std::process::id());
        Ok(PgStore {
            pool,
            timeout,
            config,
            tenant: tenant.to_owned(),
            owner,
            watch: OnceCell::new(),
            lease: std::sync::OnceLock::new(),
        })
    }

    /// The tenant this store reads and writes.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// See [`super::Store::append`].
    pub async fn append(
        &self,
        id: &str,
        epoch: Option<u64>,
        writer: &str,
        entries: &[NewEntry],
    ) -> Result<u64, StoreError> {
        timed("append to the session log", self.timeout, self.append_now(id, epoch, writer, entries)).await
    }

    async fn append_now(
        &self,
        id: &str,
        epoch: Option<u64>,
        writer: &str,
        entries: &[NewEntry],
    ) -> Result<u64, StoreError> {
        let client = self.pool.get().await.map_err(pg)?;
        let stmt = client.prepare_cached("SELECT pirn_append($1, $2, $3, $4, $5, $6, $7, $8, $9)").await.map_err(pg)?;
        let ns: Vec<i64> = entries.iter().map(|e| e.n as i64).collect();
        let ats: Vec<i64> = entries.iter().map(|e| e.at_ms as i64).collect();
        let kinds: Vec<&str> = entries.iter().map(|e| e.kind).collect();
        let bodies: Vec<&str> = entries.iter().map(|e| e.body.as_str()).collect();
        let epoch = epoch.map(|e| e as i64);
        let now = now_ms() as i64;
        let row = client
            .query_one(&stmt, &[&self.tenant, &id, &epoch, &writer, &ns, &ats, &kinds, &bodies, &now])
            .await
            .map_err(|e| match e.code() {
                Some(code) if code.code() == "PR001" => StoreError::Superseded(id.to_owned()),
                _ => pg(e),
            })?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// See [`super::Store::load`].
    pub async fn load(&self, id: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        timed("load the session log", self.timeout, self.load_now(id, after)).await
    }

    async fn load_now(&self, id: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        let client = self.pool.get().await.map_err(pg)?;
        let rows = client
            .query(
                "SELECT seq, writer, n, at_ms, body FROM pirn_entries
                 WHERE tenant = $1 AND session_id = $2 AND seq > $3 ORDER BY seq",
                &[&self.tenant, &id, &(after as i64)],
            )
            .await
            .map_err(pg)?;
        if rows.is_empty() {
            let known = client
                .query_opt("SELECT 1 FROM pirn_sessions WHERE tenant = $1 AND session_id = $2", &[&self.tenant, &id])
                .await
                .map_err(pg)?;
            if known.is_none() {
                return Err(StoreError::NotFound(id.to_owned()));
            }
        }
        rows.iter()
            .map(|r| {
                let body: &str = r.get(4);
                Ok(Stored {
                    seq: r.get::<_, i64>(0) as u64,
                    writer: r.get(1),
                    n: r.get::<_, i64>(2) as u64,
                    at_ms: r.get::<_, i64>(3) as u64,
                    body: serde_json::from_str(body).map_err(pg)?,
                })
            })
            .collect()
    }

    /// See [`super::Store::list`].
    pub async fn list(&self) -> Result<Vec<SessionInfo>, StoreError> {
        timed("list sessions", self.timeout, self.list_now()).await
    }

    async fn list_now(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let client = self.pool.get().await.map_err(pg)?;
        let rows = client
            .query(
                "SELECT s.session_id, m.at_ms, s.updated_ms, s.owner IS NOT NULL, m.body,
                    (SELECT body FROM pirn_entries e WHERE e.tenant = s.tenant AND e.session_id = s.session_id
                        AND e.kind = 'send' AND e.body NOT LIKE '%\"compact\":true%' ORDER BY seq LIMIT 1)
                 FROM pirn_sessions s
                 JOIN LATERAL (SELECT body, at_ms FROM pirn_entries e
                     WHERE e.tenant = s.tenant AND e.session_id = s.session_id AND e.kind = 'meta'
                     ORDER BY seq LIMIT 1) m ON true
                 WHERE s.tenant = $1 ORDER BY s.updated_ms DESC, s.session_id",
                &[&self.tenant],
            )
            .await
            .map_err(pg)?;
        let mut out = Vec::new();
        for r in rows {
            let Ok(Body::Meta { model, .. }) = serde_json::from_str(r.get::<_, &str>(4)) else { continue };
            let title = match r.get::<_, Option<&str>>(5).map(serde_json::from_str) {
                Some(Ok(Body::Send { message, .. })) => title_of(&message),
                _ => String::new(),
            };
            out.push(SessionInfo {
                session_id: r.get(0),
                title,
                model,
                created_ms: r.get::<_, i64>(1) as u64,
                updated_ms: r.get::<_, i64>(2) as u64,
                live: r.get(3),
            });
        }
        Ok(out)
    }

    /// See [`super::Store::delete`]. A claimed session is deleted too (a
    /// killed host never releases its claims).
    pub async fn delete(&self, id: &str) -> Result<bool, StoreError> {
        timed("delete the session", self.timeout, self.delete_now(id)).await
    }

    async fn delete_now(&self, id: &str) -> Result<bool, StoreError> {
        let mut client = self.pool.get().await.map_err(pg)?;
        let tx = client.transaction().await.map_err(pg)?;
        tx.execute("DELETE FROM pirn_entries WHERE tenant = $1 AND session_id = $2", &[&self.tenant, &id])
            .await
            .map_err(pg)?;
        let n = tx
            .execute("DELETE FROM pirn_sessions WHERE tenant = $1 AND session_id = $2", &[&self.tenant, &id])
            .await
            .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        Ok(n > 0)
    }

    /// See [`super::Store::watch`]: starts the LISTEN connection on first
    /// use; it reconnects (after a second) when the connection drops.
    pub async fn watch(&self) -> broadcast::Receiver<Appended> {
        let sender = self
            .watch
            .get_or_init(|| async {
                let (tx, _) = broadcast::channel(4096);
                let (ready, listening) = tokio::sync::oneshot::channel();
                tokio::spawn(listen::listen(self.config.clone(), self.tenant.clone(), tx.clone(), ready));
                // Subscribers must not miss what is stored after they
                // subscribe: wait until LISTEN is in force (bounded).
                if tokio::time::timeout(self.timeout, listening).await.is_err() {
                    tracing::warn!("postgres LISTEN not ready after {:?}; followers may lag", self.timeout);
                }
                tx
            })
            .await;
        sender.subscribe()
    }
}
