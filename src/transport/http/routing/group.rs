//! A group of `pirn serve` hosts on one Postgres (`--advertise-url`,
//! `--lease-secs`): any host serves any session.
//!
//! Owns: where a request for a session goes, and the host's leases (this
//! host's [`Group`] is [`super::membership`]'s).
//! - A request that needs the session's live state (sends, cancel,
//!   compact, permission answers, status, close, its WebSocket, webhook and
//!   inbox; agent-webkit's stream, input and close) is served here when the
//!   session is live here; forwarded to the owner when another host holds
//!   a live lease on it ([`super::forward`]); and otherwise taken over: the
//!   session is resumed here from its log (a send that was running on the
//!   old owner is reported interrupted, as any resume reports it), and the
//!   request served. A request for a session whose owner does not answer
//!   waits until the owner's lease lapses (at most the lease), then takes
//!   it over. Two hosts taking over at once: the database lets one claim
//!   win; the other forwards to it.
//! - What the log can answer (`…/events`, `…/messages`, the listing) is
//!   served by any host from the store, as before.
//! - Every third of the lease the host renews all of its leases in one
//!   statement; a live session the renewal no longer finds was taken over
//!   by another host (this one was paused or cut off), and is closed here:
//!   its late appends are refused by the store's fencing anyway. While its
//!   last renewal is older than two thirds of a lease, the host asks the
//!   store before serving a session it runs, so a request that reaches it
//!   right after a pause (even one forwarded to it before the pause) never
//!   runs a send in a session another host has taken over.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response as HttpResponse};

use super::forward::{FORWARDED, Unreachable, forward, forward_upgrade};
use super::membership::Group;
use crate::store::StoreError;
use crate::store::postgres::lease::Owner;
use crate::transport::http::api::{ApiError, read_body};
use crate::transport::http::sessions;
use crate::transport::http::state::App;
use crate::transport::http::trust::host_name;
use crate::transport::hub::mono_ms;
use crate::wire::http::group::GroupStatus;

/// How often a request for a session with an unreachable owner looks again.
const RETRY: Duration = Duration::from_millis(200);

/// The session a request acts on, when serving it needs the session live:
/// `(id, may take it over)`. A close (`DELETE`) is forwarded to a live
/// owner but never takes a session over.
pub(in crate::transport::http) fn session_of<'p>(method: &Method, path: &'p str) -> Option<(&'p str, bool)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let take = *method != Method::DELETE;
    match parts.as_slice() {
        ["v1", "sessions", id] if *method != Method::POST => Some((id, take)),
        ["v1", "sessions", id, "sends" | "cancel" | "compact" | "ws" | "webhook" | "inbox"] => Some((id, take)),
        ["v1", "sessions", id, "permissions", _] | ["v1", "sessions", id, "inbox", _, "ack"] => Some((id, take)),
        ["agent-webkit", "sessions", id] | ["agent-webkit", "sessions", id, "stream" | "input"] => Some((id, take)),
        _ => None,
    }
}

/// Middleware: serves, forwards or takes over, as the module doc says.
pub async fn route(State(app): State<Arc<App>>, req: Request, next: Next) -> HttpResponse {
    let Some(group) = app.group.clone() else { return next.run(req).await };
    let Some((id, may_take)) = session_of(req.method(), req.uri().path()) else { return next.run(req).await };
    let id = id.to_owned();
    if app.is_live(&id) && !group.fresh() {
        // Woken from a pause, or the store was away: another host may have
        // taken the session over meanwhile. Never run a send it now runs.
        match group.store.locate(&id).await {
            Ok(Owner::Me) => {}
            Ok(_) => {
                tracing::warn!(session_id = %id, "another host took the session over; closing it here");
                sessions::close_session(&app, &id).await;
            }
            Err(e) => return sessions::store_error(e).into_response(),
        }
    }
    if app.is_live(&id) {
        return next.run(req).await;
    }
    if req.headers().contains_key(FORWARDED) {
        // Sent here as the owner: never forwarded again. Not live here any
        // more (closed meanwhile): take it over if nobody holds it. Another
        // host's live lease is refused before the log is read (its newest
        // entries, even the session's creation, may not be stored yet).
        match group.store.locate(&id).await {
            Ok(Owner::Host { id: owner, url }) => {
                let owned = StoreError::Owned { session: id.clone(), owner, url: Some(url) };
                return sessions::store_error(owned).into_response();
            }
            Err(StoreError::NotFound(_)) | Ok(_) => {}
            Err(e) => return sessions::store_error(e).into_response(),
        }
        if may_take && let Err(e) = take_over(&app, &group, &id).await {
            return e.into_response();
        }
        return next.run(req).await;
    }
    let upgrade = req.headers().contains_key("upgrade");
    let (parts, body, mut upgrade_req) = if upgrade {
        (None, bytes::Bytes::new(), Some(req))
    } else {
        let (parts, body) = req.into_parts();
        match read_body(body).await {
            Ok(b) => (Some(parts), bytes::Bytes::from(b), None),
            Err(e) => return e.into_response(),
        }
    };
    // An unreachable owner's lease lapses within one lease; a little more
    // for the takeover itself.
    let deadline = Instant::now() + group.lease + Duration::from_secs(2);
    let mut last = String::new();
    while Instant::now() < deadline {
        match group.store.locate(&id).await {
            Err(StoreError::NotFound(_)) => break,
            Err(e) => return sessions::store_error(e).into_response(),
            Ok(Owner::Host { url, .. }) if url != group.url => {
                let sent = match (&parts, upgrade_req.take()) {
                    (Some(parts), _) => {
                        forward(&group.client, parts, body.clone(), &url, group.host_id(), group.lease).await
                    }
                    (None, Some(req)) => forward_upgrade(req, &url, group.host_id(), group.lease).await,
                    (None, None) => Err(Unreachable("the upgrade request was spent on an earlier try".into())),
                };
                match sent {
                    Ok(resp) => return resp,
                    Err(Unreachable(why)) => {
                        tracing::debug!(session_id = %id, owner = %url, "owner unreachable: {why}");
                        last = format!("its owner {url} does not answer ({why})");
                        if upgrade {
                            // The upgrade cannot be replayed: the client retries.
                            break;
                        }
                        tokio::time::sleep(RETRY).await;
                    }
                }
            }
            Ok(_) if !may_take => break,
            Ok(_) => match take_over(&app, &group, &id).await {
                Ok(()) => break,
                // Another host won the claim (forward to it), or a lease
                // of an earlier process at this URL runs out: look again.
                Err(e) if e.code == "SESSION_OWNED" => {
                    last = e.message;
                    tokio::time::sleep(RETRY).await;
                }
                Err(e) => return e.into_response(),
            },
        }
    }
    if !app.is_live(&id) && !last.is_empty() {
        return ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "OWNER_UNREACHABLE",
            format!("session {id:?}: {last}; try again"),
        )
        .into_response();
    }
    let req = match (parts, upgrade_req) {
        (Some(parts), _) => Request::from_parts(parts, axum::body::Body::from(body)),
        (None, Some(req)) => req,
        (None, None) => {
            return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "OWNER_UNREACHABLE", "try again").into_response();
        }
    };
    next.run(req).await
}

/// Resumes session `id` here from its log (a no-op when it is live here).
async fn take_over(app: &Arc<App>, group: &Group, id: &str) -> Result<(), ApiError> {
    let _one = group.taking.lock().await;
    if app.is_live(id) {
        return Ok(());
    }
    sessions::resume_stored(app, id).await?;
    tracing::info!(session_id = %id, "took the session over");
    Ok(())
}

/// `GET /v1/hosts`: the group's hosts and who holds which session (404
/// when this daemon is not a group host).
#[utoipa::path(get, path = "/v1/hosts", operation_id = "group_status", tag = "daemon",
    summary = "The group's hosts (with --advertise-url) and who holds which session",
    responses(
        (status = 200, description = "hosts and leases", body = GroupStatus),
        (status = 404, description = "not a group host (started without --advertise-url)", body = crate::wire::http::ErrorBody),
        (status = 503, description = "STORE_UNAVAILABLE", body = crate::wire::http::ErrorBody)))]
pub async fn hosts(State(app): State<Arc<App>>) -> Result<axum::Json<GroupStatus>, ApiError> {
    let group = app
        .group
        .as_ref()
        .ok_or_else(|| ApiError::not_found("not a group host (start pirn serve with --advertise-url)"))?;
    let (hosts, leases) = group.store.group().await.map_err(sessions::store_error)?;
    Ok(axum::Json(GroupStatus { host_id: group.host_id().to_owned(), hosts, leases }))
}

/// Renews this host's leases every third of the lease until the daemon
/// stops; closes the live sessions another host took over.
pub async fn keep_leases(app: Arc<App>, group: Arc<Group>) {
    let every = (group.lease / 3).max(Duration::from_millis(100));
    loop {
        // Sessions opened after this list was taken were claimed after the
        // renewal may have run: not judged this round.
        let before: Vec<String> = app.all().iter().map(|s| s.session.config().session_id.clone()).collect();
        let started = mono_ms();
        match group.store.renew(group.started_ms).await {
            Ok(owned) => {
                group.renewed_ms.store(started, Ordering::Relaxed);
                for id in before {
                    if !owned.contains(&id) && app.is_live(&id) {
                        tracing::warn!(session_id = %id, "another host took the session over; closing it here");
                        sessions::close_session(&app, &id).await;
                    }
                }
            }
            Err(e) => tracing::warn!("renewing the leases: {e}"),
        }
        tokio::select! {
            _ = app.shutdown.cancelled() => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// The host name of an advertised `http://HOST[:PORT]` URL, as a `Host`
/// header naming it is compared ([`host_name`]).
pub(in crate::transport::http) fn advertised_host(url: &str) -> Option<String> {
    let authority = url.strip_prefix("http://")?.split('/').next()?;
    Some(host_name(authority)).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertised_name_is_accepted_as_host() {
        let name = advertised_host;
        assert_eq!(name("http://Pirn-A.internal:3923").as_deref(), Some("pirn-a.internal"));
        assert_eq!(name("http://[fd00::5]:3923/").as_deref(), Some("[fd00::5]"));
        assert_eq!(name("http://10.0.0.5").as_deref(), Some("10.0.0.5"));
        assert_eq!(name("https://x:1"), None);
    }

    #[test]
    fn which_requests_need_the_session_live() {
        let get = Method::GET;
        assert_eq!(session_of(&Method::POST, "/v1/sessions/s1/sends"), Some(("s1", true)));
        assert_eq!(session_of(&get, "/v1/sessions/s1"), Some(("s1", true)));
        assert_eq!(session_of(&Method::DELETE, "/v1/sessions/s1"), Some(("s1", false)));
        assert_eq!(session_of(&Method::POST, "/v1/sessions/s1/permissions/r"), Some(("s1", true)));
        assert_eq!(session_of(&get, "/agent-webkit/sessions/s1/stream"), Some(("s1", true)));
        for served_from_the_log in ["/v1/sessions/s1/events", "/v1/sessions/s1/messages", "/v1/sessions", "/health"] {
            assert_eq!(session_of(&get, served_from_the_log), None, "{served_from_the_log}");
        }
    }
}
