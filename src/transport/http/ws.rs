//! `GET /v1/sessions/{id}/ws`: the stdio protocol over one WebSocket.
//! Requests in (`send`, `status`, `cancel`, `permission_response`); every
//! frame of the session out, plus this socket's own `status_ok` and
//! protocol errors.

use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response as HttpResponse;
use futures_util::{SinkExt, StreamExt};

use super::api::{ApiError, MAX_BODY};
use super::state::{App, HttpSession};
use crate::wire::http::ErrorBody;
use crate::wire::{self, OutgoingMessage, Request, SendResult};

#[utoipa::path(get, path = "/v1/sessions/{id}/ws", operation_id = "session_websocket", tag = "sessions",
    summary = "WebSocket carrying the stdio protocol's JSON lines both ways: send, status, cancel, permission_response in (request.schema.json); every frame's data, status_ok and protocol errors out (response.schema.json)",
    params(
        ("id" = String, Path, description = "session_id"),
        ("token" = Option<String>, Query, description = "the daemon's token, for clients that cannot set headers on a WebSocket")),
    responses(
        (status = 101, description = "switching protocols"),
        (status = 404, description = "unknown session", body = ErrorBody)))]
pub async fn websocket(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    ws: WebSocketUpgrade,
) -> Result<HttpResponse, ApiError> {
    let s = app.get(&id)?;
    Ok(ws.max_message_size(MAX_BODY).on_upgrade(move |socket| ws_session(socket, s)))
}

async fn ws_session(socket: WebSocket, s: Arc<HttpSession>) {
    let (mut tx, mut rx) = socket.split();
    let Ok((_, mut live)) = s.hub.subscribe(None) else { return };
    loop {
        tokio::select! {
            frame = live.recv() => match frame {
                Ok(f) => if tx.send(Message::Text(f.data.clone().into())).await.is_err() { return },
                Err(_) => { let _ = tx.send(Message::Close(None)).await; return }
            },
            msg = rx.next() => {
                let text = match msg {
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Binary(b))) => match String::from_utf8(b.to_vec()) { Ok(t) => t.into(), Err(_) => continue },
                    Some(Ok(_)) => continue,
                    _ => return,
                };
                if let Some(reply) = ws_request(&s, text.as_bytes()).await
                    && tx.send(Message::Text(reply.into())).await.is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Handles one WebSocket request; returns the direct reply, if any.
async fn ws_request(s: &HttpSession, line: &[u8]) -> Option<String> {
    let refuse = |id: String, message: &dyn std::fmt::Display| {
        let r = SendResult::protocol_error(id, message, s.session.config().correlation.clone());
        serde_json::to_string(&OutgoingMessage::Result(Box::new(r))).ok()
    };
    let reply = match wire::decode_request(line) {
        Err(e) => return refuse(e.id.clone(), &e),
        Ok(Request::Init(r)) => return refuse(r.id.clone(), &"the session is created with POST /v1/sessions"),
        Ok(Request::Shutdown(r)) => return refuse(r.id, &"end the session with DELETE /v1/sessions/{id}"),
        Ok(other) => s.session.handle(other).await?,
    };
    serde_json::to_string(&reply).ok()
}
