//! The test suite's mock model server as a standalone process, for
//! benchmarks and manual runs.
//!
//! `cargo run --release --example mock_model -- SCRIPT.json [--count] [--window N]`
//! serves the replies of SCRIPT.json (the `Reply` list of
//! `tests/suite/mock.rs`, the format of `fixtures/*/script.json`)
//! round-robin on an ephemeral loopback port and prints
//! `http://127.0.0.1:PORT/v1` on stdout. `--count` makes usage report the
//! mock's own prompt count (bytes / 4); `--window N` also refuses requests
//! over N tokens, as llama.cpp does. Runs until killed.
#![allow(clippy::print_stdout, clippy::unwrap_used, dead_code, unused_imports)]

#[path = "../tests/suite/mock.rs"]
mod mock;
#[path = "../tests/suite/mock_reply.rs"]
mod mock_reply;
#[path = "../tests/suite/mock_wire.rs"]
mod mock_wire;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("usage: mock_model SCRIPT.json [--count] [--window N]");
    let script: Vec<mock::Reply> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let server = mock::MockServer::start_cycling(script).await;
    let window = args.iter().position(|a| a == "--window").and_then(|i| args.get(i + 1)).map(|w| w.parse().unwrap());
    server.configure(window, false, window.is_some() || args.iter().any(|a| a == "--count"));
    println!("{}", server.base_url());
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}
