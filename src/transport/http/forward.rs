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
        Ok(Err(e)) => return Err(Unreachable(describe(&e))),
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

/// reqwest's error with its sources ("connection refused").
fn describe(e: &reqwest::Error) -> String {
    let mut msg = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        src = s.source();
    }
    msg
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
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
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
        };
        Ok((tcp, buf, end))
    };
    let (tcp, buf, end) = tokio::time::timeout(within, exchange)
        .await
        .map_err(|_| Unreachable(format!("no answer within {} ms", within.as_millis())))??;
    let (status, headers) = parse_head(&buf[..end]).ok_or_else(|| Unreachable("a bad response head".into()))?;
    let mut out = HttpResponse::builder().status(status);
    if let Some(h) = out.headers_mut() {
        *h = headers;
    }
    let rest = Bytes::copy_from_slice(&buf[end..]);
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

/// The status and headers of an HTTP/1.1 response head.
fn parse_head(head: &[u8]) -> Option<(StatusCode, HeaderMap)> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse::<u16>().ok()?;
    let mut headers = HeaderMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':')?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).ok()?;
        headers.append(name, HeaderValue::from_str(value.trim()).ok()?);
    }
    Some((StatusCode::from_u16(status).ok()?, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_response_head_is_parsed_and_hop_headers_stay() {
        let (status, h) =
            parse_head(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nsec-websocket-accept: x=\r\n\r\n")
                .unwrap();
        assert_eq!(status, StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(h["sec-websocket-accept"], "x=");
        assert!(parse_head(b"garbage").is_none());
        for hop in ["host", "origin", "connection", "transfer-encoding", FORWARDED] {
            assert!(!crosses(&HeaderName::from_static(hop)), "{hop}");
        }
        assert!(crosses(&HeaderName::from_static("authorization")));
        assert!(crosses(&HeaderName::from_static("last-event-id")));
    }
}
