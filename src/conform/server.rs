//! The cassette served over real HTTP: an OpenAI-compatible model server on
//! 127.0.0.1 that answers from a [`Player`], so any worker that takes a base
//! URL (pirn, heddle, another implementation) can be driven by a cassette.
//!
//! Owns: the routes (`POST …/chat/completions` in recorded order, `GET
//! …/props` and `…/models` by path, anything else 404), how a recorded
//! exchange becomes an answer (status, `Retry-After`, body; a stream as
//! `data: …\n\n` events paced by the player's [`Timing`]; a recorded
//! broken stream as a connection cut mid-body; a cut exchange as a stream
//! that stays open), and the answer to a request the cassette cannot serve
//! (HTTP 400 with an OpenAI-style error body naming the difference).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::cassette::replay::Replayed;
use crate::cassette::{Player, ReplayBody};

/// A running replay server; stopped when dropped.
pub struct ReplayServer {
    pub addr: SocketAddr,
    stop: CancellationToken,
}

impl ReplayServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serves `player` on a free port of 127.0.0.1. `strict`: a chat request
/// must equal the recorded one (the path `workspace` aside) or it gets a 400;
/// otherwise chat requests are answered in recorded order whatever they
/// hold. Errors: the port cannot be bound.
pub async fn start(player: Arc<Player>, strict: bool, workspace: String) -> std::io::Result<ReplayServer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let stop = CancellationToken::new();
    let workspace = Arc::new(workspace);
    let app = Router::new().fallback(move |method: Method, uri: Uri, body: Bytes| {
        let (player, workspace) = (player.clone(), workspace.clone());
        async move { answer(&player, strict.then_some(workspace.as_str()), method, uri.path(), &body).await }
    });
    let until = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).with_graceful_shutdown(until.cancelled_owned()).await;
    });
    Ok(ReplayServer { addr, stop })
}

async fn answer(player: &Player, strict: Option<&str>, method: Method, path: &str, body: &[u8]) -> Response {
    if method == Method::GET {
        return match player.get(path) {
            Some(e) => with_status(e.status.unwrap_or(502), e.body.unwrap_or_default(), None),
            None => with_status(404, error_body(&format!("replay: no recorded GET {path}"), Value::Null), None),
        };
    }
    if method != Method::POST || !path.ends_with("/chat/completions") {
        return with_status(
            404,
            error_body(&format!("replay: nothing recorded for {method} {path}"), Value::Null),
            None,
        );
    }
    let started = Instant::now();
    let request = serde_json::from_slice::<Value>(body).unwrap_or(Value::Null);
    let recorded = match strict {
        Some(workspace) => player.next_post(&request, workspace),
        None => player.next_post_unchecked(),
    };
    let recorded = match recorded {
        Ok(e) => e,
        Err(m) => return with_status(400, error_body(&m.message, m.details), None),
    };
    player.pace(started, recorded.headers_ms).await;
    let Some(status) = recorded.status else {
        // No answer was recorded (the connection failed): a 502 is the
        // closest a live server can come.
        return with_status(502, error_body("replay: the recorded request got no answer", Value::Null), None);
    };
    if !(200..300).contains(&status) {
        let body = recorded.body.clone().unwrap_or_default();
        return with_status(status, body, recorded.retry_after.clone());
    }
    let replay = ReplayBody::new(recorded, started, player.timing);
    let events = futures_util::stream::unfold((replay, false), |(mut replay, ended)| async move {
        if ended {
            return None;
        }
        match replay.next().await {
            Replayed::Data(d) => Some((Ok(Bytes::from(format!("data: {d}\n\n"))), (replay, false))),
            Replayed::Done => None,
            Replayed::Failed { message, .. } => Some((Err(std::io::Error::other(message)), (replay, true))),
        }
    });
    let mut resp = Body::from_stream(events).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    resp
}

fn error_body(message: &str, details: Value) -> String {
    json!({"error": {"message": message, "type": "replay_mismatch", "details": details}}).to_string()
}

fn with_status(status: u16, body: String, retry_after: Option<String>) -> Response {
    let mut resp = (StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY), body).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(v) = retry_after.and_then(|v| HeaderValue::from_str(&v).ok()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}
