//! Record, replay, transcript diff and conform, through the binary: a
//! session recorded against the mock replays with no model at all.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, event, names};

/// A base URL nothing listens on: a replaying worker must never need it.
fn dead_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/v1")
}

fn tool_script() -> Vec<Reply> {
    vec![
        Reply::tool("grep", json!({"pattern": "fn answer"})),
        Reply::tool("read_file", json!({"file_path": "src/lib.rs"})),
        Reply::text(&["`answer` returns ", "42."]),
    ]
}

/// One session (init 0.3.0, the sends, shutdown) in a workspace holding
/// src/lib.rs; returns every stdout line as text.
async fn session(base_url: &str, envs: &[(&str, &str)], sends: &[&str]) -> (String, Worker) {
    let w = Worker::spawn(base_url, envs).await;
    std::fs::create_dir_all(w.workspace.path().join("src")).unwrap();
    std::fs::write(w.workspace.path().join("src/lib.rs"), "pub fn answer() -> u32 { 42 }\n").unwrap();
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    for (i, message) in sends.iter().enumerate() {
        w.write(json!({"type": "send", "id": format!("s{i}"), "message": message})).await;
        w.result_for(&format!("s{i}")).await;
    }
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    let text: String = w.seen.iter().map(|l| format!("{l}\n")).collect();
    (text, w)
}

fn pirn(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_pirn"))
        .args(args)
        .env("PIRN_HOME", super::worker::test_home())
        .output()
        .unwrap()
}

fn last_result(w: &Worker, id: &str) -> Value {
    w.seen.iter().rev().find(|v| v["type"] == "result" && v["id"] == id).cloned().unwrap()
}

#[tokio::test]
async fn a_recorded_session_replays_with_no_model_and_the_same_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("tape.jsonl");
    let tape_s = tape.to_str().unwrap();
    let mock = MockServer::start(tool_script()).await;
    let (live, _w) = session(&mock.base_url(), &[("PIRN_RECORD", tape_s)], &["What does answer() return?"]).await;
    // The turns, and any reading of the request (the `Asked` gate).
    let live_requests = mock.requests().len() + mock.readings().len();
    drop(mock);
    let recorded: Vec<Value> =
        std::fs::read_to_string(&tape).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let posts: Vec<&Value> = recorded.iter().filter(|e| e["method"] == "POST").collect();
    assert_eq!(posts.len(), live_requests, "one line per model call");
    assert!(
        posts.iter().all(|e| e["status"] == 200 && e["end"] == "done" && !e["chunks"].as_array().unwrap().is_empty())
    );
    assert!(!std::fs::read_to_string(&tape).unwrap().contains("authorization"), "headers are never written");

    let (replayed, _w) = session(&dead_url(), &[("PIRN_REPLAY", tape_s)], &["What does answer() return?"]).await;
    assert!(replayed.contains("\"response\":\"`answer` returns 42.\""), "{replayed}");
    std::fs::write(dir.path().join("live.jsonl"), &live).unwrap();
    std::fs::write(dir.path().join("replayed.jsonl"), &replayed).unwrap();
    let (a, b) = (dir.path().join("live.jsonl"), dir.path().join("replayed.jsonl"));
    let out = pirn(&["transcript", "diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    // A real difference is shown and fails.
    std::fs::write(&b, replayed.replace("read_file", "cat_file")).unwrap();
    let out = pirn(&["transcript", "diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("+{"), "{}", String::from_utf8_lossy(&out.stdout));
}

#[tokio::test]
async fn a_changed_prompt_or_a_short_cassette_is_a_replay_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("tape.jsonl");
    let tape_s = tape.to_str().unwrap();
    let mock = MockServer::start(tool_script()).await;
    session(&mock.base_url(), &[("PIRN_RECORD", tape_s)], &["What does answer() return?"]).await;

    let (_, w) = session(&dead_url(), &[("PIRN_REPLAY", tape_s)], &["What does answer() give back?"]).await;
    let r = last_result(&w, "s0");
    assert_eq!(r["error"]["code"], "replay_mismatch", "{r}");
    assert_eq!(r["error"]["retryable"], false);
    let details = &r["error"]["details"];
    assert_eq!(details["path"], "/messages/2/content", "{details}");
    assert_eq!(details["recorded"], "What does answer() return?");
    assert_eq!(details["sent"], "What does answer() give back?");
    assert!(details["exchange"].is_u64());

    // The same first send, then one the cassette does not have.
    let (_, w) = session(&dead_url(), &[("PIRN_REPLAY", tape_s)], &["What does answer() return?", "And then?"]).await;
    assert_eq!(last_result(&w, "s0")["status"], "ok");
    let r = last_result(&w, "s1");
    assert_eq!(r["error"]["code"], "replay_mismatch", "{r}");
    // Two turns with tool calls and the answer, recorded and replayed alike
    // (no side call in the default profile).
    assert_eq!(r["error"]["details"]["recorded_calls"], 3);
    assert!(r["error"]["message"].as_str().unwrap().contains("no more model calls"), "{r}");
}

#[tokio::test]
async fn a_torn_last_line_is_dropped_and_a_bad_line_fails_init() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("tape.jsonl");
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    session(&mock.base_url(), &[("PIRN_RECORD", tape.to_str().unwrap())], &["hello"]).await;
    let good = std::fs::read_to_string(&tape).unwrap();
    std::fs::write(&tape, format!("{good}{{\"cassette\":1,\"seq\":9,\"meth")).unwrap();
    let (_, w) = session(&dead_url(), &[("PIRN_REPLAY", tape.to_str().unwrap())], &["hello"]).await;
    assert_eq!(last_result(&w, "s0")["response"], "hi");

    std::fs::write(&tape, format!("not an exchange\n{good}")).unwrap();
    let mut w = Worker::spawn(&dead_url(), &[("PIRN_REPLAY", tape.to_str().unwrap())]).await;
    w.write(json!({"type":"init","id":"i","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    let r = w.next().await;
    let message = r["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("tape.jsonl") && message.contains("line 1"), "{r}");
}

#[tokio::test]
async fn replay_with_recorded_timing_lets_a_cancel_meet_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("tape.jsonl");
    let slow = Reply::Text {
        chunks: (0..20).map(|i| format!("w{i} ")).collect(),
        usage: Some([10, 20]),
        delay_ms: 100,
        finish_reason: None,
    };
    let mock = MockServer::start(vec![slow]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[("PIRN_RECORD", tape.to_str().unwrap())], json!({})).await;
    w.write(json!({"type":"send","id":"c","message":"count"})).await;
    assert_eq!(w.result_for("c").await.1["status"], "ok");
    drop(w);

    for (timing, cancelled) in [("recorded", true), ("instant", false)] {
        let envs = [("PIRN_REPLAY", tape.to_str().unwrap()), ("PIRN_REPLAY_TIMING", timing)];
        let (mut w, _) = Worker::ready(&dead_url(), &envs, json!({})).await;
        w.write(json!({"type":"send","id":"c","message":"count"})).await;
        w.until(|v| v["event"]["event"] == "content_delta").await;
        tokio::time::sleep(Duration::from_millis(250)).await;
        w.write(json!({"type":"cancel","id":"x","target_id":"c"})).await;
        let (events, r) = w.result_for("c").await;
        let deltas = names(&events).iter().filter(|n| *n == "content_delta").count();
        if cancelled {
            assert_eq!(r["error"]["code"], "cancelled", "{timing}: {r}");
            assert!((1..20).contains(&deltas), "{timing}: {deltas} deltas before the cancel");
        } else {
            assert_eq!(r["status"], "ok", "{timing}: the whole answer streams at once: {r}");
            assert_eq!(event(&events, "usage")["completion_tokens"], 20);
        }
    }
}

#[test]
fn conform_passes_pirn_on_its_fixtures_and_fails_a_worker_that_drops_an_event() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let bin = env!("CARGO_BIN_EXE_pirn");
    let out = pirn(&["conform", "--strict", "--worker", bin, fixtures.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("PASS tool_round_trip") && text.contains("cases passed"), "{text}");

    // The first tool_end of each run is dropped: the cases with a tool call fail, the others pass.
    let broken = format!("{bin} | sed -u '0,/\"tool_end\"/{{/\"tool_end\"/d}}'");
    let out = pirn(&["conform", "--timeout-secs", "20", "--worker", &broken, fixtures.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("FAIL tool_round_trip") && text.contains("-{"), "{text}");
    assert!(text.contains("PASS text_answer") && text.contains("PASS provider_error"), "{text}");
}

/// A small first request goes out before the window probe (a mock that
/// counts requests, like heddle's tests, sees the chat call first); the
/// probe runs before the first tool result is sized.
#[tokio::test]
async fn the_window_probe_waits_for_the_first_tool_call() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("tape.jsonl");
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "echo hi"})), Reply::text(&["done"])]).await;
    let envs = [("PIRN_RECORD", tape.to_str().unwrap())];
    let (mut w, _) = Worker::ready(&mock.base_url(), &envs, json!({"tools": ["bash"]})).await;
    w.write(json!({"type":"send","id":"s","message":"Say hi with bash."})).await;
    assert_eq!(w.result_for("s").await.1["response"], "done");
    let order: Vec<String> = std::fs::read_to_string(&tape)
        .unwrap()
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            format!("{} {}", e["method"].as_str().unwrap(), e["path"].as_str().unwrap())
        })
        .collect();
    assert_eq!(
        order,
        ["POST /v1/chat/completions", "GET /props", "GET /v1/models", "POST /v1/chat/completions"],
        "{order:?}"
    );
}
