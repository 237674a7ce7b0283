//! Property test: random interleavings of init/send/status/cancel/shutdown
//! (and garbage) against the mock model. For every sequence: each stdout
//! line is one JSON object, each send line gets exactly one result,
//! `event_seq` is gapless per send, and nothing follows `shutdown_ok`.
//! `PROPTEST_CASES` sets the number of sequences (default 24: each one spawns
//! the binary).

use std::collections::HashMap;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

#[derive(Debug, Clone)]
enum Op {
    Init,
    Send,
    Status,
    /// Cancel the n-th send written so far (or an unknown id).
    Cancel(usize),
    Garbage,
    Pause(u64),
    Shutdown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Init),
        6 => Just(Op::Send),
        2 => Just(Op::Status),
        4 => (0usize..8).prop_map(Op::Cancel),
        1 => Just(Op::Garbage),
        3 => (0u64..30).prop_map(Op::Pause),
        1 => Just(Op::Shutdown),
    ]
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let mock = MockServer::start_cycling(vec![
        Reply::text(&["a", "b"]),
        Reply::Stall { chunks: vec!["s".into()] },
        Reply::tool("bash", json!({"command": "sleep 0.05; echo hi"})),
        Reply::text(&["done"]),
    ])
    .await;
    // shutdown and EOF let running sends finish: the stalled stream ends by
    // the idle timeout.
    let env = [("PIRN_HEARTBEAT_INTERVAL", "20"), ("PIRN_IDLE_TIMEOUT_MS", "300")];
    let mut w = Worker::spawn(&mock.base_url(), &env).await;
    let mut sends: Vec<String> = Vec::new();
    let mut shut = false;
    for (i, op) in ops.iter().enumerate() {
        if shut {
            break;
        }
        let line = match op {
            Op::Init => {
                json!({"type":"init","id":format!("i{i}"),"config":{"model":"m","system_prompt":"s","tools":["bash"]}})
            }
            Op::Send => {
                sends.push(format!("s{i}"));
                json!({"type":"send","id":format!("s{i}"),"message":"go"})
            }
            Op::Status => json!({"type":"status","id":format!("st{i}")}),
            Op::Cancel(n) => {
                let target = sends.get(*n).cloned().unwrap_or_else(|| "nobody".to_owned());
                json!({"type":"cancel","id":format!("c{i}"),"target_id":target})
            }
            Op::Garbage => Value::String("{not json".into()),
            Op::Pause(ms) => {
                tokio::time::sleep(Duration::from_millis(*ms)).await;
                continue;
            }
            Op::Shutdown => {
                shut = true;
                json!({"type":"shutdown","id":format!("x{i}")})
            }
        };
        let text = match &line {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        if w.write_raw_checked(format!("{text}\n").as_bytes()).await.is_err() {
            break;
        }
    }
    w.close_stdin();
    while w.try_next(Duration::from_secs(10)).await.is_some() {}
    let code = w.exit_code().await;
    prop_assert_eq!(code, Some(0));
    // Exactly one result per send line.
    let mut results: HashMap<String, usize> = HashMap::new();
    for v in &w.seen {
        if v["type"] == "result" {
            *results.entry(v["id"].as_str().unwrap_or("").to_owned()).or_default() += 1;
        }
    }
    for s in &sends {
        prop_assert_eq!(results.get(s).copied().unwrap_or(0), 1, "send {} in {:?}", s, w.seen);
    }
    // event_seq gapless per send.
    let mut next: HashMap<String, u64> = HashMap::new();
    for v in w.seen.iter().filter(|v| v["type"] == "event") {
        let id = v["send_id"].as_str().unwrap_or("").to_owned();
        let want = next.entry(id.clone()).or_default();
        prop_assert_eq!(v["event_seq"].as_u64(), Some(*want), "send {}", id);
        *want += 1;
    }
    // Nothing after shutdown_ok.
    if let Some(pos) = w.seen.iter().position(|v| v["type"] == "shutdown_ok") {
        prop_assert_eq!(pos, w.seen.len() - 1);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn invariants_hold_for_any_interleaving(ops in prop::collection::vec(op(), 1..30)) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(run(ops))?;
    }
}
