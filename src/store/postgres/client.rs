//! The handle on the database every Postgres store call goes through: the
//! pool, the tenant, this process's owner name, the lease a group host
//! claims with; how a driver error becomes a [`StoreError`], and the bound of
//! every call.
//!
//! Owns: [`PgStore`] (its fields; its calls are in [`super`] and
//! [`super::lease`]), [`Lease`], [`DEFAULT_TIMEOUT`], `pg` and `timed`.

use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{OnceCell, broadcast};

use crate::store::error::StoreError;
use crate::store::info::Appended;

/// The default bound of every store call (`PIRN_STORE_TIMEOUT_MS`): a
/// database that does not answer fails the call (the journal then goes on
/// in memory) instead of hanging it; also the server's statement_timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// See the module doc.
pub struct PgStore {
    pub(super) pool: Pool,
    /// Every call's client-side bound (also the server's statement_timeout).
    pub(super) timeout: Duration,
    pub(super) config: tokio_postgres::Config,
    pub(super) tenant: String,
    /// This process's name in `owner` columns (`hostname:pid`).
    pub(super) owner: String,
    pub(super) watch: OnceCell<broadcast::Sender<Appended>>,
    /// Set by a `pirn serve` host of a group (`--advertise-url`): its
    /// claims are leases ([`lease`]).
    pub(super) lease: std::sync::OnceLock<Lease>,
}

/// What a group host claims with.
#[derive(Debug, Clone)]
pub struct Lease {
    /// How peers reach this host (`--advertise-url`), e.g. `http://10.0.0.5:3923`.
    pub url: String,
    /// How long a claim or renewal holds the session, in ms (`--lease-secs`).
    pub duration_ms: u64,
}

/// A database error with its SQLSTATE, found on `e` or its sources (a
/// pool error wraps the driver's).
pub(super) fn pg<E: std::error::Error + 'static>(e: E) -> StoreError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    let mut code = None;
    while let Some(err) = source {
        if let Some(db) = err.downcast_ref::<tokio_postgres::Error>().and_then(|d| d.code()) {
            code = Some(db.code().to_owned());
            break;
        }
        source = err.source();
    }
    StoreError::Postgres { code, message: e.to_string() }
}

/// Runs one store call under the client-side timeout.
pub(super) async fn timed<T>(
    op: &'static str,
    after: Duration,
    call: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(after, call).await.unwrap_or(Err(StoreError::Timeout { op, after }))
}
