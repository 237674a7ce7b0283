//! A bare streaming client for the relay benchmark: POSTs one
//! chat-completions request, decodes the SSE stream with the same decoder
//! pirn uses and the JSON of each chunk, concatenates the text, and prints
//! `deltas seconds sha256-free-checksum` — no agent, no relay, no stdout per
//! delta. `cargo run --release --example bare_client -- BASE_URL`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Instant;

use serde_json::Value;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let base = std::env::args().nth(1).expect("usage: bare_client BASE_URL");
    let body = r#"{"model":"bench","stream":true,"messages":[{"role":"user","content":"go"}]}"#;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let start = Instant::now();
    let mut resp = client.post(format!("{base}/chat/completions")).body(body).send().await.unwrap();
    let mut sse = pirn::sse::SseDecoder::new();
    let mut text = String::new();
    let mut deltas = 0u64;
    'outer: while let Some(bytes) = resp.chunk().await.unwrap() {
        sse.feed(&bytes);
        while let Some(data) = sse.next_event().unwrap() {
            if data == b"[DONE]" {
                break 'outer;
            }
            let v: Value = serde_json::from_slice(data).unwrap();
            if let Some(t) = v.pointer("/choices/0/delta/content").and_then(Value::as_str) {
                text.push_str(t);
                deltas += 1;
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!("{deltas} {secs:.6} {}", text.len());
    std::fs::write(std::env::var("BARE_TEXT_OUT").unwrap_or_else(|_| "/dev/null".into()), text).unwrap();
}
