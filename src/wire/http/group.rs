//! Bodies about a group of `pirn serve` hosts on one Postgres
//! (`--advertise-url`): `GET /v1/hosts`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `GET /v1/hosts`: the group's hosts and who holds which session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GroupStatus {
    /// The host that answered.
    pub host_id: String,
    /// Hosts seen within the last ten leases, oldest first.
    pub hosts: Vec<GroupHost>,
    /// Every session some process holds (owner set), by id.
    pub leases: Vec<SessionLease>,
}

/// A host of the group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct GroupHost {
    /// Its id (`hostname:pid`), the `owner` of the sessions it runs.
    pub host_id: String,
    /// How peers reach it (its `--advertise-url`).
    pub url: String,
    /// Unix ms it started.
    pub started_ms: u64,
    /// Unix ms (the database's clock) of its last lease renewal.
    pub heartbeat_ms: u64,
    /// Its last renewal is younger than a lease.
    pub alive: bool,
    /// Sessions it holds a live lease on.
    pub sessions: u64,
}

/// Who holds a session, and until when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionLease {
    /// The session's id.
    pub session_id: String,
    /// The process that holds it (a group host's id, or a worker's).
    pub owner: String,
    /// The owner's advertised URL (absent for a process outside a group).
    pub owner_url: Option<String>,
    /// Unix ms (the database's clock) the lease runs to; absent for an
    /// owner without a lease, whose session any host may take over.
    pub lease_until_ms: Option<u64>,
    /// The fencing number: raised by every claim; appends carrying an
    /// older one are refused.
    pub epoch: u64,
    /// The lease is in the future: requests for the session go to its owner.
    pub live: bool,
}
