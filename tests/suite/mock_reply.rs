//! The mock model server's scripted replies: what one [`Reply`] is (text,
//! tool calls, an HTTP error, a stall, a drop, a hang, raw bytes) and how
//! [`send`] writes it as the chat-completions SSE a real server streams.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::mock_wire::{chunk, end_sse, event, respond_status, start_sse, usage_event};

/// A scripted answer to one request.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    /// Streams `chunks` as content deltas, then finish_reason, usage, [DONE].
    Text {
        chunks: Vec<String>,
        #[serde(default)]
        usage: Option<[u64; 2]>,
        #[serde(default)]
        delay_ms: u64,
        #[serde(default)]
        finish_reason: Option<String>,
    },
    /// Streams tool calls (arguments split in two fragments), then usage, [DONE].
    ToolCalls {
        calls: Vec<MockCall>,
        #[serde(default)]
        usage: Option<[u64; 2]>,
        #[serde(default)]
        text: Option<String>,
    },
    /// Answers with an HTTP error.
    Status {
        code: u16,
        #[serde(default)]
        body: String,
        #[serde(default)]
        retry_after: Option<String>,
    },
    /// Streams `chunks` as content deltas, then goes silent (connection open).
    Stall { chunks: Vec<String> },
    /// Streams `chunks` as content deltas, then closes the connection mid-body.
    Drop { chunks: Vec<String> },
    /// Reads the request and never answers.
    Hang,
    /// 200 text/event-stream with this exact body.
    Raw { body: String },
}

/// One tool call of a [`Reply::ToolCalls`].
#[derive(Debug, Clone, Deserialize)]
pub struct MockCall {
    pub name: String,
    /// Raw argument text (need not be valid JSON).
    pub arguments: String,
}

impl Reply {
    pub fn text(chunks: &[&str]) -> Reply {
        Reply::Text {
            chunks: chunks.iter().map(|s| s.to_string()).collect(),
            usage: Some([10, 5]),
            delay_ms: 0,
            finish_reason: None,
        }
    }

    pub fn tool(name: &str, arguments: Value) -> Reply {
        Reply::ToolCalls {
            calls: vec![MockCall { name: name.into(), arguments: arguments.to_string() }],
            usage: Some([20, 8]),
            text: None,
        }
    }

    pub fn status(code: u16, body: &str) -> Reply {
        Reply::Status { code, body: body.into(), retry_after: None }
    }
}

/// Writes `reply` to `stream`; `counted` maps the reply's scripted usage
/// (prompt, completion) to what the stream reports.
pub async fn send(
    stream: &mut TcpStream,
    reply: Reply,
    counted: impl Fn(Option<[u64; 2]>) -> Option<[u64; 2]>,
) -> std::io::Result<()> {
    match reply {
        Reply::Status { code, body, retry_after } => respond_status(stream, code, &body, retry_after.as_deref()).await,
        Reply::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        Reply::Raw { body } => {
            start_sse(stream).await?;
            chunk(stream, body.as_bytes()).await?;
            end_sse(stream).await
        }
        Reply::Text { chunks, usage, delay_ms, finish_reason } => {
            let usage = counted(usage);
            start_sse(stream).await?;
            // Without a delay the events go out in 64 KiB writes, as fast as
            // the socket takes them (the relay benchmark).
            let mut pending = Vec::new();
            for c in &chunks {
                if delay_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                    chunk(stream, &event(&json!({"content": c}), None)).await?;
                } else {
                    pending.extend_from_slice(&event(&json!({"content": c}), None));
                    if pending.len() >= 64 * 1024 {
                        chunk(stream, &pending).await?;
                        pending.clear();
                    }
                }
            }
            chunk(stream, &pending).await?;
            let finish = finish_reason.unwrap_or_else(|| "stop".to_owned());
            chunk(stream, &event(&json!({}), Some(&finish))).await?;
            if let Some(u) = usage {
                chunk(stream, &usage_event(u)).await?;
            }
            chunk(stream, b"data: [DONE]\n\n").await?;
            end_sse(stream).await
        }
        Reply::ToolCalls { calls, usage, text } => {
            let usage = counted(usage);
            start_sse(stream).await?;
            if let Some(t) = text {
                chunk(stream, &event(&json!({"content": t}), None)).await?;
            }
            for (i, c) in calls.iter().enumerate() {
                let (a, b) = c.arguments.split_at(c.arguments.len() / 2);
                let first = json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function", "function": {"name": c.name, "arguments": a}}]});
                let second = json!({"tool_calls": [{"index": i, "function": {"arguments": b}}]});
                chunk(stream, &event(&first, None)).await?;
                chunk(stream, &event(&second, None)).await?;
            }
            chunk(stream, &event(&json!({}), Some("tool_calls"))).await?;
            if let Some(u) = usage {
                chunk(stream, &usage_event(u)).await?;
            }
            chunk(stream, b"data: [DONE]\n\n").await?;
            end_sse(stream).await
        }
        Reply::Stall { chunks } => {
            start_sse(stream).await?;
            for c in &chunks {
                chunk(stream, &event(&json!({"content": c}), None)).await?;
            }
            // Silence until the client goes away.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await.unwrap_or(0) > 0 {}
            Ok(())
        }
        Reply::Drop { chunks } => {
            start_sse(stream).await?;
            for c in &chunks {
                chunk(stream, &event(&json!({"content": c}), None)).await?;
            }
            stream.shutdown().await
        }
    }
}
