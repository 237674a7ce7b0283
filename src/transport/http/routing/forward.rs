//! Passing a request on to the host that owns its session (a `pirn serve`
//! group), and its answer back, streamed: JSON, SSE and WebSocket alike.
//!
//! Owns: which headers cross (end-to-end ones; never `Host`, `Origin` or
//! the hop-by-hop ones), the loop guard ([`FORWARDED`]: a forwarded request
//! is never forwarded again), the bounds (the owner must answer the
//! request's head within the lease, else it counts as unreachable and the
//! caller may take the session over), and the byte pipe of an upgraded
//! connection. Only `http://` owner URLs: group traffic stays on a private
//! network, as the Postgres it shares.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, request::Parts};
use axum::response::Response as HttpResponse;
use bytes::Bytes;
use futures_util::TryStreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::model::error::with_sources;

/// Set on a forwarded request: the forwarding host's id. A host that gets
/// one serves the request itself (or takes the session over) and never
/// forwards it again.
pub const FORWARDED: &str = "x-pirn-forwarded-by";

/// Largest response head read from an owner on an upgrade (bytes).
const MAX_HEAD: usize = 16 * 1024;

/// The owner did not answer: not reachable, or no response head within the bound.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Headers that describe one connection, not the message (RFC 9110 7.6.1),
/// and those the forwarding host sets itself.
fn crosses(name: &HeaderName) -> bool {
    !matches!(
        name.as_str(),
        "host"
            | "origin"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "content-length"
            | FORWARDED
    )
}

/// Forwards a request whose body is `body` to `owner` (`http://host:port`);
/// the answer streams back as it comes. Errors: the owner is unreachable
/// or sends no response head within `within`.
pub async fn forward(
    client: &reqwest::Client,
    parts: &Parts,
    body: Bytes,
    owner: &str,
    me: &str,
    within: Duration,
) -> Result<HttpResponse, Unreachable> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut req = client.request(parts.method.clone(), format!("{}{path}", owner.trim_end_matches('/')));
    for (name, value) in parts.headers.iter().filter(|(n, _)| crosses(n)) {
        req = req.header(name, value);
    }
    let req = req.header(FORWARDED, me).body(body);
    let resp = match tokio::time::timeout(within, req.send()).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(Unreachable(with_sources(e.to_string(), std::error::Error::source(&e)))),
        Err(_) => return Err(Unreachable(format!("no answer within {} ms", within.as_millis()))),
    };
    let mut out = HttpResponse::builder().status(resp.status());
    if let Some(h) = out.headers_mut() {
        for (name, value) in resp.headers().iter().filter(|(n, _)| crosses(n)) {
            h.append(name, value.clone());
        }
    }
    let stream = resp.bytes_stream().map_err(std::io::Error::other);
    out.body(Body::from_stream(stream)).map_err(|e| Unreachable(e.to_string()))
}

/// Forwards an upgrade request (a WebSocket) to `owner` over a TCP
/// connection of its own: the owner's response head goes back as it is,
/// and after a `101` the bytes flow both ways until either side closes.
pub async fn forward_upgrade(
    mut req: Request,
    owner: &str,
    me: &str,
    within: Duration,
) -> Result<HttpResponse, Unreachable> {
    let authority = owner
        .strip_prefix("http://")
        .ok_or_else(|| Unreachable(format!("{owner}: only http:// owners are reached")))?
        .trim_end_matches('/');
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let mut head = format!("{} {path} HTTP/1.1\r\nhost: {authority}\r\n", req.method());
    for (name, value) in req.headers() {
        let send = crosses(name) || matches!(name.as_str(), "upgrade" | "connection");
        if send && let Ok(v) = value.to_str() {
            head.push_str(&format!("{name}: {v}\r\n"));
        }
    }
    head.push_str(&format!("{FORWARDED}: {me}\r\n\r\n"));
    let exchange = async {
        let mut tcp = tokio::net::TcpStream::connect(authority).await.map_err(|e| Unreachable(e.to_string()))?;
        tcp.write_all(head.as_bytes()).await.map_err(|e| Unreachable(e.to_string()))?;
        let mut buf = Vec::with_capacity(1024);
        loop {
            if let Some((status, headers, end)) = parse_head(&buf)? {
                return Ok((tcp, status, headers, Bytes::copy_from_slice(&buf[end..])));
            }
            if buf.len() > MAX_HEAD {
                return Err(Unreachable("the owner's response head is too long".into()));
            }
            let mut chunk = [0u8; 4096];
            let n = tcp.read(&mut chunk).await.map_err(|e| Unreachable(e.to_string()))?;
            if n == 0 {
                return Err(Unreachable("the owner closed the connection".into()));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    let (tcp, status, headers, rest) = tokio::time::timeout(within, exchange)
        .await
        .map_err(|_| Unreachable(format!("no answer within {} ms", within.as_millis())))??;
    let mut out = HttpResponse::builder().status(status);
    if let Some(h) = out.headers_mut() {
        *h = headers;
    }
    if status != StatusCode::SWITCHING_PROTOCOLS {
        // A refusal (404, 401, …): its head and what came of its body.
        return out.body(Body::from(rest)).map_err(|e| Unreachable(e.to_string()));
    }
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(client) = upgrade.await else { return };
        let mut client = hyper_util::rt::TokioIo::new(client);
        let mut tcp = tcp;
        if client.write_all(&rest).await.is_ok() {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut tcp).await;
        }
    });
    out.body(Body::empty()).map_err(|e| Unreachable(e.to_string()))
}

/// The status, headers and length of the HTTP/1.1 response head that
/// `buf` starts with (httparse); `None` while it is incomplete.
fn parse_head(buf: &[u8]) -> Result<Option<(StatusCode, HeaderMap, usize)>, Unreachable> {
    let bad = |why: String| Unreachable(format!("a bad response head: {why}"));
    let mut raw = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut raw);
    let end = match resp.parse(buf).map_err(|e| bad(e.to_string()))? {
        httparse::Status::Complete(end) => end,
        httparse::Status::Partial => return Ok(None),
    };
    let status = resp.code.and_then(|c| StatusCode::from_u16(c).ok()).ok_or_else(|| bad("no status".into()))?;
    let mut headers = HeaderMap::new();
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes()).map_err(|e| bad(e.to_string()))?;
        headers.append(name, HeaderValue::from_bytes(h.value).map_err(|e| bad(e.to_string()))?);
    }
    Ok(Some((status, headers, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_head_is_parsed_and_hop_headers_stay() {
        let head = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nsec-websocket-accept: x=\r\n\r\n";
        let (status, h, end) = parse_head(head).unwrap().unwrap();
        assert_eq!((status, end), (StatusCode::SWITCHING_PROTOCOLS, head.len()));
        assert_eq!(h["sec-websocket-accept"], "x=");
        assert!(parse_head(&head[..20]).unwrap().is_none(), "incomplete");
        assert!(parse_head(b"garbage\r\n\r\n").is_err());
        for hop in ["host", "origin", "connection", "transfer-encoding", FORWARDED] {
            assert!(!crosses(&HeaderName::from_static(hop)), "{hop}");
        }
        assert!(crosses(&HeaderName::from_static("authorization")));
        assert!(crosses(&HeaderName::from_static("last-event-id")));
    }
}
