//! The webhook inbox, after stringd's local webhook
//! (`../shared/reference/stringd-protocol-v0.1.txt`): a secret URL per
//! session that anything (a CI job, a chat bot) can post text to.
//!
//! Owns: the webhook tokens (`wh_` + 256 random bits, found by a
//! constant-time comparison), each session's inbox of events (text stored,
//! never executed; at most [`MAX_EVENTS`], acknowledged ones dropped
//! first), the delivery choice (`queue`: the event waits in the inbox until
//! acknowledged; `send`: it also becomes a queued send of the session, so it
//! wakes the agent), and `GET /v1/events/stream` (SSE `ready`, `event`,
//! `ping`, as stringd's). Inboxes live in the daemon's memory
//! ([`super::inboxes`]).
//!
//! Routes: `GET|POST /v1/sessions/{id}/webhook`, `POST /webhook/{token}`,
//! `GET /v1/sessions/{id}/inbox`, `POST /v1/sessions/{id}/inbox/{event_id}/ack`,
//! `GET /v1/events/stream`.

use std::borrow::Cow;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response as HttpResponse};
use serde::Deserialize;
use tokio::sync::broadcast;

use super::inboxes::{SessionInbox, new_token};
use crate::transport::http::api::{ApiError, BodyError, json_body, read_limited};
use crate::transport::http::events::KEEPALIVE;
use crate::transport::http::state::App;
use crate::wire::http::ErrorBody;
use crate::wire::http::inbox::{
    Deliver, InboxEvent, InboxList, InboxStatus, StreamPing, StreamReady, Webhook, WebhookAccepted, WebhookError,
    WebhookSettings,
};
use crate::wire::http::to_json;

/// Largest webhook body (bytes), as stringd.
pub const MAX_WEBHOOK_BODY: usize = 64 * 1024;
/// Events kept per session.
pub const MAX_EVENTS: usize = 1000;
/// `ping` interval of `/v1/events/stream`.
pub const PING: Duration = Duration::from_secs(15);

/// The webhook's description; its URL uses the host the client reached
/// the daemon by (its `Host` header), else the listening address.
fn webhook(app: &App, headers: &HeaderMap, session_id: &str, inbox: &SessionInbox) -> Webhook {
    let token = inbox.token.as_deref().unwrap_or("");
    let host = headers.get("host").and_then(|h| h.to_str().ok()).map_or_else(|| app.local_addr.clone(), str::to_owned);
    Webhook {
        session_id: session_id.to_owned(),
        webhook_url: format!("http://{host}/webhook/{token}"),
        deliver: inbox.deliver,
    }
}

/// `GET /v1/sessions/{id}/webhook`: creates the webhook once, then shows it.
#[utoipa::path(get, path = "/v1/sessions/{id}/webhook", operation_id = "get_webhook", tag = "inbox",
    summary = "The session's webhook, created on first call (stringd's local webhook)",
    params(("id" = String, Path, description = "session_id")),
    responses(
        (status = 200, description = "the webhook", body = Webhook),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn show(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Webhook>, ApiError> {
    app.get(&id)?;
    let mut inboxes = app.inbox.lock();
    let inbox = inboxes.entry(id.clone()).or_default();
    inbox.token.get_or_insert_with(new_token);
    Ok(Json(webhook(&app, &headers, &id, inbox)))
}

/// `POST /v1/sessions/{id}/webhook {deliver?, rotate?}`: a new token (the
/// old URL stops at once) unless `rotate` is false; sets `deliver`.
#[utoipa::path(post, path = "/v1/sessions/{id}/webhook", operation_id = "rotate_webhook", tag = "inbox",
    summary = "Rotate the webhook token (the old URL stops at once) unless rotate is false; set deliver: queue (events wait in the inbox) or send (each event also becomes a queued send, its text the message, its send_id the event id)",
    params(("id" = String, Path, description = "session_id")),
    request_body = WebhookSettings,
    responses(
        (status = 200, description = "the webhook", body = Webhook),
        (status = 400, description = "bad body", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn rotate(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Webhook>, ApiError> {
    app.get(&id)?;
    let body: WebhookSettings = json_body(body).await?;
    let mut inboxes = app.inbox.lock();
    let inbox = inboxes.entry(id.clone()).or_default();
    if body.rotate != Some(false) || inbox.token.is_none() {
        inbox.token = Some(new_token());
    }
    if let Some(d) = body.deliver {
        inbox.deliver = d;
    }
    Ok(Json(webhook(&app, &headers, &id, inbox)))
}

fn webhook_error(status: StatusCode, message: String) -> HttpResponse {
    (status, Json(WebhookError { error: message })).into_response()
}

/// `POST /webhook/{token}`: text up to 64 KiB → 202 `{ok, session_id,
/// event_id, status}`; 401 unknown token, 400 empty or not UTF-8, 413 too
/// long, 429 when the inbox holds [`MAX_EVENTS`] unacknowledged events.
#[utoipa::path(post, path = "/webhook/{token}", operation_id = "post_webhook", tag = "inbox",
    summary = "Append a text event to the session's inbox; stored, never executed",
    security(()),
    params(("token" = String, Path, description = "wh_…; the URL is the credential (no bearer token needed)")),
    request_body(content = String, content_type = "text/plain", description = "non-empty UTF-8 text, at most 64 KiB"),
    responses(
        (status = 202, description = "stored", body = WebhookAccepted),
        (status = 400, description = "empty, whitespace-only or not UTF-8", body = WebhookError),
        (status = 401, description = "unknown webhook token", body = WebhookError),
        (status = 413, description = "over 65,536 bytes", body = WebhookError),
        (status = 429, description = "the inbox holds 1,000 unacknowledged events", body = WebhookError)))]
pub async fn post(State(app): State<Arc<App>>, Path(token): Path<String>, body: Body) -> HttpResponse {
    let Some(session_id) = app.inbox.owner(&token) else {
        return webhook_error(StatusCode::UNAUTHORIZED, "Unknown webhook token".into());
    };
    let bytes = match read_limited(body, MAX_WEBHOOK_BODY).await {
        Ok(b) => b,
        Err(BodyError::Read(_)) => return webhook_error(StatusCode::BAD_REQUEST, "cannot read the body".into()),
        Err(BodyError::TooLarge) => {
            return webhook_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Webhook body exceeds {MAX_WEBHOOK_BODY} bytes"),
            );
        }
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) if !t.trim().is_empty() => t,
        _ => return webhook_error(StatusCode::BAD_REQUEST, "Webhook body must be non-empty text".into()),
    };
    let event_id = format!("evt_{}", uuid::Uuid::new_v4().simple());
    let mut event = InboxEvent {
        id: event_id.clone(),
        session_id: session_id.clone(),
        agent_id: session_id.clone(),
        received_at: iso_utc(SystemTime::now()),
        source: "local-webhook".to_owned(),
        text,
        status: InboxStatus::Pending,
    };
    let deliver = app.inbox.lock().get(&session_id).map(|i| i.deliver).unwrap_or_default();
    if deliver == Deliver::Send
        && let Ok(s) = app.get(&session_id)
    {
        let message = format!("[webhook event {event_id}]\n{}", event.text);
        match s.session.send(event_id.clone(), message) {
            Ok(()) => event.status = InboxStatus::Sent,
            Err(e) => tracing::warn!("webhook event {event_id} stays in the inbox: {e}"),
        }
    }
    {
        let mut inboxes = app.inbox.lock();
        let Some(inbox) = inboxes.get_mut(&session_id) else {
            return webhook_error(StatusCode::UNAUTHORIZED, "Unknown webhook token".into());
        };
        if inbox.events.len() >= MAX_EVENTS {
            match inbox.events.iter().position(|e| e.status != InboxStatus::Pending) {
                Some(i) => {
                    inbox.events.remove(i);
                }
                None => {
                    return webhook_error(
                        StatusCode::TOO_MANY_REQUESTS,
                        format!("the inbox holds {MAX_EVENTS} unacknowledged events"),
                    );
                }
            }
        }
        inbox.events.push_back(event.clone());
    }
    let _ = app.inbox.live.send(event.clone());
    let body = WebhookAccepted { ok: true, session_id, event_id, status: event.status };
    (StatusCode::ACCEPTED, Json(body)).into_response()
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct InboxQuery {
    /// `pending`, `sent` or `acked`; all when absent.
    status: Option<InboxStatus>,
}

/// `GET /v1/sessions/{id}/inbox[?status=pending]` → `{events}`, oldest first.
#[utoipa::path(get, path = "/v1/sessions/{id}/inbox", operation_id = "list_inbox", tag = "inbox",
    summary = "The session's inbox events, oldest first (at most 1,000; acknowledged ones are dropped first)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("status" = Option<InboxStatus>, Query, description = "only events with this status")),
    responses(
        (status = 200, description = "events", body = InboxList),
        (status = 400, description = "an unknown status", body = ErrorBody),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn list(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<InboxQuery>,
) -> Result<HttpResponse, ApiError> {
    app.get(&id)?;
    let inboxes = app.inbox.lock();
    let events = inboxes
        .get(&id)
        .map(|i| i.events.iter().filter(|e| q.status.is_none_or(|s| s == e.status)).map(Cow::Borrowed).collect())
        .unwrap_or_default();
    // Serialised here, under the lock: the events are borrowed, not copied.
    Ok(Json(InboxList { events }).into_response())
}

/// `POST /v1/sessions/{id}/inbox/{event_id}/ack` → 204 (404 unknown).
#[utoipa::path(post, path = "/v1/sessions/{id}/inbox/{event_id}/ack", operation_id = "ack_inbox_event", tag = "inbox",
    summary = "Acknowledge an inbox event (status acked)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("event_id" = String, Path, description = "the event's id (evt_…)")),
    responses(
        (status = 204, description = "acknowledged"),
        (status = 404, description = "unknown session or event", body = ErrorBody)))]
pub async fn ack(
    State(app): State<Arc<App>>,
    Path((id, event_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    app.get(&id)?;
    let mut inboxes = app.inbox.lock();
    let event = inboxes.get_mut(&id).and_then(|i| i.events.iter_mut().find(|e| e.id == event_id));
    match event {
        Some(e) => {
            e.status = InboxStatus::Acked;
            Ok(StatusCode::NO_CONTENT)
        }
        None => Err(ApiError::not_found(format!("no event {event_id:?} in this inbox"))),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub struct StreamQuery {
    session_id: Option<String>,
}

/// `GET /v1/events/stream`: new inbox events of one session (`X-Agent-Id`
/// header, as stringd, or `?session_id=`) or of all; `ready` first, `ping`
/// every 15 s.
#[utoipa::path(get, path = "/v1/events/stream", operation_id = "inbox_stream", tag = "inbox",
    summary = "SSE of inbox events appended after the stream opens: `ready` (StreamReady), then `event` (InboxEvent) per event, `ping` (StreamPing) every 15 s",
    params(
        ("session_id" = Option<String>, Query, description = "only this session's events (or the X-Agent-Id header, as stringd); all sessions when neither"),
        ("X-Agent-Id" = Option<String>, Header, description = "stringd's way to name the one session followed")),
    responses(
        (status = 200, description = "SSE: events `ready`, `event`, `ping`; data: the JSON of StreamReady, InboxEvent, StreamPing", content_type = "text/event-stream", body = String),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn stream(
    State(app): State<Arc<App>>,
    Query(q): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<HttpResponse, ApiError> {
    let header = headers.get("x-agent-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let only = q.session_id.or(header).filter(|s| !s.is_empty());
    if let Some(id) = &only {
        app.get(id)?;
    }
    let ready = StreamReady { agent_id: only.clone(), session_id: only.clone() };
    let ready = SseEvent::default().event("ready").data(to_json(&ready));
    let state = InboxFollow {
        rx: app.inbox.live.subscribe(),
        ping: tokio::time::interval_at(tokio::time::Instant::now() + PING, PING),
        only,
        shutdown: app.shutdown.clone(),
        ready: Some(ready),
    };
    let events = futures_util::stream::unfold(state, |mut st| async move {
        let next = st.next().await?;
        Some((Ok::<_, Infallible>(next), st))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEPALIVE).text("keepalive")).into_response())
}

/// The state of one `/v1/events/stream` subscriber.
struct InboxFollow {
    rx: broadcast::Receiver<InboxEvent>,
    ping: tokio::time::Interval,
    only: Option<String>,
    shutdown: tokio_util::sync::CancellationToken,
    ready: Option<SseEvent>,
}

impl InboxFollow {
    /// `ready` first, then the events of the followed session(s) and
    /// pings; `None` when the daemon stops.
    async fn next(&mut self) -> Option<SseEvent> {
        if let Some(ready) = self.ready.take() {
            return Some(ready);
        }
        loop {
            tokio::select! {
                e = self.rx.recv() => match e {
                    Ok(e) if self.only.as_deref().is_none_or(|s| s == e.session_id) => {
                        return Some(SseEvent::default().event("event").data(to_json(&e)));
                    }
                    // Another session's event, or events missed by a slow reader.
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = self.ping.tick() => {
                    let ping = StreamPing { t: iso_utc(SystemTime::now()) };
                    return Some(SseEvent::default().event("ping").data(to_json(&ping)));
                }
                () = self.shutdown.cancelled() => return None,
            }
        }
    }
}

/// `2026-11-23T07:05:09.123Z` for `t` (UTC, milliseconds).
pub fn iso_utc(t: SystemTime) -> String {
    let ms = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn iso_dates() {
        assert_eq!(super::iso_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_417_509_123);
        assert_eq!(super::iso_utc(t), "2026-11-23T07:05:09.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(super::iso_utc(leap), "2000-02-29T00:00:00.000Z");
    }
}
