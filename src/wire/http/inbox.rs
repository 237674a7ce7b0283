//! Bodies of the webhook inbox (`/v1/sessions/{id}/webhook`,
//! `/webhook/{token}`, `/v1/sessions/{id}/inbox…`, `/v1/events/stream`),
//! after stringd's local webhook (`../shared/reference/stringd-protocol-v0.1.txt`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What an inbox event does besides waiting in the inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Deliver {
    /// It waits in the inbox until acknowledged.
    #[default]
    Queue,
    /// It becomes a queued send of the session (its text is the message).
    Send,
}

/// Where an inbox event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InboxStatus {
    /// Waiting to be acknowledged.
    Pending,
    /// Queued as a send of the session (`deliver: send`).
    Sent,
    /// Acknowledged (`POST …/inbox/{event_id}/ack`).
    Acked,
}

/// A session's webhook (`GET` creates it once; `POST` rotates it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    /// The session the webhook feeds.
    pub session_id: String,
    /// The secret URL to post text to (`http://HOST/webhook/wh_…`; HOST is
    /// the one the client reached the daemon by).
    pub webhook_url: String,
    /// What a posted event does besides waiting in the inbox.
    pub deliver: Deliver,
}

/// `POST /v1/sessions/{id}/webhook`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(default)]
pub struct WebhookSettings {
    /// Sets what new events do (unchanged when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliver: Option<Deliver>,
    /// false: only change `deliver`, keep the URL. Default true: a new
    /// token, and the old URL stops at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotate: Option<bool>,
}

/// `202` to `POST /webhook/{token}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookAccepted {
    /// Always true.
    pub ok: bool,
    /// The session whose inbox took the event.
    pub session_id: String,
    /// The new event's id (`evt_…`).
    pub event_id: String,
    /// `pending`, or `sent` when it was also queued as a send.
    pub status: InboxStatus,
}

/// An error answer of `POST /webhook/{token}`: stringd's `{error}` shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebhookError {
    /// What went wrong, for a person.
    pub error: String,
}

/// One inbox event, as `GET …/inbox` and the stream's `event` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboxEvent {
    /// `evt_` and 32 hex digits.
    pub id: String,
    /// The session whose inbox holds it.
    pub session_id: String,
    /// stringd's name for the owner (here the session).
    #[serde(rename = "agentId")]
    pub agent_id: String,
    /// When it arrived: ISO 8601 UTC with milliseconds.
    #[serde(rename = "receivedAt")]
    pub received_at: String,
    /// Always `local-webhook`.
    pub source: String,
    /// The posted text (stored, never executed), at most 64 KiB.
    pub text: String,
    /// Where it stands.
    pub status: InboxStatus,
}

/// `GET /v1/sessions/{id}/inbox`.
// Borrows the events it shows (each may hold 64 KiB of text): a listing
// copies none of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InboxList<'a> {
    /// Oldest first; at most 1,000 kept per session.
    pub events: Vec<std::borrow::Cow<'a, InboxEvent>>,
}

/// The `ready` event of `GET /v1/events/stream`, first on every stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StreamReady {
    /// The one session followed (stringd's name), or null for all.
    pub agent_id: Option<String>,
    /// The same.
    pub session_id: Option<String>,
}

/// The `ping` event of `GET /v1/events/stream`, every 15 s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StreamPing {
    /// Now: ISO 8601 UTC with milliseconds.
    pub t: String,
}
