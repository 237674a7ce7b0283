//! The mock model server's HTTP/1.1 and SSE: reading one request, and
//! writing status answers, chunked event streams and their chunks.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads one HTTP/1.1 request: its path, its `Authorization` header and
/// its JSON body (`Null` when it does not parse); `None` when the peer
/// closed before a whole head.
pub async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<(String, Option<String>, Value)>> {
    // Read the head.
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 8192];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.lines();
    let path = lines.next().unwrap_or("").split(' ').nth(1).unwrap_or("").to_owned();
    let mut content_length = 0usize;
    let mut authorization = None;
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => content_length = v.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(v.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut body = buf[head_end..].to_vec();
    while body.len() < content_length {
        let mut chunk = vec![0u8; 64 * 1024];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(Some((path, authorization, body)))
}

pub fn event(delta: &Value, finish: Option<&str>) -> Vec<u8> {
    let v = json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {v}\n\n").into_bytes()
}

pub fn usage_event([prompt, completion]: [u64; 2]) -> Vec<u8> {
    let v = json!({
        "id": "chatcmpl-mock", "object": "chat.completion.chunk", "created": 0, "model": "mock", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    });
    format!("data: {v}\n\n").into_bytes()
}

pub async fn respond_status(
    stream: &mut TcpStream,
    code: u16,
    body: &str,
    retry_after: Option<&str>,
) -> std::io::Result<()> {
    let extra = retry_after.map(|r| format!("Retry-After: {r}\r\n")).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {code} Mock\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

pub async fn start_sse(stream: &mut TcpStream) -> std::io::Result<()> {
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        .await
}

pub async fn chunk(stream: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    stream.write_all(format!("{:x}\r\n", data.len()).as_bytes()).await?;
    stream.write_all(data).await?;
    stream.write_all(b"\r\n").await?;
    stream.flush().await
}

pub async fn end_sse(stream: &mut TcpStream) -> std::io::Result<()> {
    stream.write_all(b"0\r\n\r\n").await?;
    stream.shutdown().await
}
