//! Multi-host routing of `pirn serve` (`--advertise-url` with a Postgres
//! store): [`group`] decides which host serves a session (its lease in the
//! store) and takes over sessions of dead hosts; [`forward`] relays a
//! request, or a WebSocket upgrade, to the host that holds the lease;
//! [`membership`] is this host's place in the group ([`membership::Group`]).
//!
//! Neither knows what a request means: they route by the session id in its
//! path.

pub mod forward;
pub mod group;
pub mod membership;
