//! The test suite's mock model server as a standalone process, for
//! benchmarks and manual runs.
//!
//! `cargo run --release --example mock_model -- SCRIPT.json` serves the
//! replies of SCRIPT.json (the `Reply` list of `tests/suite/mock.rs`, the
//! format of `fixtures/*/script.json`) round-robin on an ephemeral loopback
//! port and prints `http://127.0.0.1:PORT/v1` on stdout. Runs until killed.
#![allow(clippy::print_stdout, clippy::unwrap_used, dead_code)]

#[path = "../tests/suite/mock.rs"]
mod mock;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let path = std::env::args().nth(1).expect("usage: mock_model SCRIPT.json");
    let script: Vec<mock::Reply> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let server = mock::MockServer::start_cycling(script).await;
    println!("{}", server.base_url());
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    std::future::pending::<()>().await;
}
