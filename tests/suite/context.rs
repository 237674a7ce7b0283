//! Context that never overflows: a mock model with a hard window refuses any
//! request over it (as llama.cpp does, HTTP 400 `exceed_context_size_error`)
//! and counts tokens as bytes / 4; pirn must finish long tasks through it.

use serde_json::{Value, json};

use super::mock::{MockCall, MockServer, Recorded, Reply, SUMMARY};
use super::worker::{Worker, event, names};

/// A 30-step task: each step reads a different ~11 KB file (~2,800 tokens).
fn long_task() -> Vec<Reply> {
    let mut script: Vec<Reply> = (0..30)
        .map(|i| Reply::ToolCalls {
            calls: vec![MockCall { name: "read_file".into(), arguments: format!(r#"{{"file_path":"f{i}.txt"}}"#) }],
            usage: Some([0, 20]),
            text: None,
        })
        .collect();
    script.push(Reply::text(&["All thirty files read."]));
    script
}

fn write_files(w: &Worker) {
    for i in 0..30 {
        let body: String = (0..180).map(|l| format!("file {i} line {l}: {}\n", "x".repeat(40))).collect();
        std::fs::write(w.workspace.path().join(format!("f{i}.txt")), body).unwrap();
    }
}

fn refused(requests: &[Recorded]) -> usize {
    requests.iter().filter(|r| r.refused).count()
}

async fn run_long_task(mock: &MockServer, extra: Value) -> (Vec<Value>, Value) {
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"max_iterations": 40}).merge(extra)).await;
    write_files(&w);
    w.write(json!({"type":"send","id":"long","message":"Read f0.txt to f29.txt one by one."})).await;
    w.result_for("long").await
}

trait Merge {
    fn merge(self, other: Value) -> Value;
}

impl Merge for Value {
    fn merge(mut self, other: Value) -> Value {
        if let (Some(a), Some(b)) = (self.as_object_mut(), other.as_object()) {
            a.extend(b.clone());
        }
        self
    }
}

#[tokio::test]
async fn a_30_step_task_fits_a_configured_16k_window() {
    let mock = MockServer::start_windowed(long_task(), 16_384, false).await;
    let (events, r) = run_long_task(&mock, json!({"context_window": 16_384})).await;
    assert_eq!(r["status"], "ok", "{r}");
    let requests = mock.requests();
    assert_eq!(refused(&requests), 0, "a known window is never overflowed");
    assert!(requests.iter().all(|q| q.tokens <= 16_384));
    let prune = event(&events, "context_prune");
    assert!(
        prune["messages_pruned"].as_u64().unwrap() >= 1
            && prune["tokens_after"].as_u64() < prune["tokens_before"].as_u64()
    );
    // The last request still shows the two most recent results whole.
    let last = requests.iter().rev().find(|q| !q.refused && q.body["messages"][0]["role"] == "system").unwrap();
    let msgs = last.body["messages"].as_array().unwrap();
    assert!(msgs.last().unwrap()["content"].as_str().unwrap().contains("file 29 line 0"));
    assert!(msgs.iter().any(|m| m["content"].as_str().is_some_and(|c| c.starts_with("[pruned: read_file output"))));
    for q in &requests {
        let room = 16_384 * 9 / 10;
        assert!(q.body["max_tokens"].as_u64().unwrap() <= room, "max_tokens fits the room left");
    }
}

#[tokio::test]
async fn the_window_is_learned_from_props() {
    let mock = MockServer::start_windowed(long_task(), 16_384, true).await;
    let (_, r) = run_long_task(&mock, json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(refused(&mock.requests()), 0, "the window came from GET /props");
}

#[tokio::test]
async fn without_a_known_window_one_refusal_teaches_it() {
    let mock = MockServer::start_windowed(long_task(), 16_384, false).await;
    let (events, r) = run_long_task(&mock, json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(refused(&mock.requests()), 1, "at most one refused request");
    assert!(!names(&events).contains(&"error".to_owned()), "a context error is not a provider error");
}

#[tokio::test]
async fn twelve_long_turns_through_an_8k_window_all_end_ok() {
    let script: Vec<Reply> = (0..12).map(|i| Reply::text(&[&format!("answer {i}")])).collect();
    let mock = MockServer::start_windowed(script, 8_192, true).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let mut compactions = 0;
    for i in 0..12 {
        let long: String = (0..100).map(|l| format!("turn {i} detail {l}: {}\n", "y".repeat(60))).collect();
        w.write(json!({"type":"send","id":format!("t{i}"),"message":long})).await;
        let (events, r) = w.result_for(&format!("t{i}")).await;
        assert_eq!(r["status"], "ok", "turn {i}: {r}");
        assert_eq!(r["response"], format!("answer {i}"));
        compactions += names(&events).iter().filter(|n| *n == "context_compact").count();
    }
    assert!(compactions >= 2, "long turns are summarised ({compactions} compactions)");
    assert_eq!(refused(&mock.requests()), 0);
    let last = mock.requests().into_iter().rev().find(|q| q.body["messages"][0]["role"] == "system").unwrap();
    let text = last.body["messages"].to_string();
    assert!(text.contains(SUMMARY) && text.contains("turn 11 detail 99"), "summary + the current turn");
}

#[tokio::test]
async fn one_message_larger_than_the_window_is_a_context_overflow() {
    let mock = MockServer::start_windowed(vec![Reply::text(&["never"])], 4_096, true).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"huge","message":"z".repeat(40_000)})).await;
    let (_, r) = w.result_for("huge").await;
    assert_eq!(
        (r["error"]["code"].as_str(), r["error"]["retryable"].as_bool()),
        (Some("context_overflow"), Some(false))
    );
    w.write(json!({"type":"send","id":"small","message":"hi"})).await;
    assert_eq!(w.result_for("small").await.1["status"], "ok", "the session goes on");
}

#[tokio::test]
async fn a_manual_compact_request_summarises_on_demand() {
    let script: Vec<Reply> = (0..4).map(|i| Reply::text(&[&format!("answer {i}")])).collect();
    // A window far larger than needed: the mock then reports realistic usage.
    let mock = MockServer::start_windowed(script, 1_000_000, false).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    for i in 0..4 {
        let question = format!("question {i}: {}", "long context ".repeat(200));
        w.write(json!({"type":"send","id":format!("s{i}"),"message":question})).await;
        w.result_for(&format!("s{i}")).await;
    }
    w.write(json!({"type":"compact","id":"c1"})).await;
    let (events, r) = w.result_for("c1").await;
    assert_eq!(r["status"], "ok", "{r}");
    let c = event(&events, "context_compact");
    assert!(c["tokens_after"].as_u64() < c["tokens_before"].as_u64(), "{c}");
    assert!(w.status("st").await["messages_count"].as_u64().unwrap() < 9);
    // The summary call asks for its usage (a server may send it only when
    // asked) and sends no temperature the session did not set.
    let requests = mock.requests();
    let summary = requests
        .iter()
        .map(|r| &r.body)
        .find(|b| b["messages"][0]["content"].as_str().is_some_and(|c| c.starts_with("You condense")))
        .expect("a summary request");
    assert_eq!(summary["stream_options"]["include_usage"], true, "{summary}");
    assert!(summary.get("temperature").is_none(), "{summary}");
    // Its usage event says it was a side call; the turns' do not.
    let usage: Vec<&Value> = events.iter().map(|e| &e["event"]).filter(|e| e["event"] == "usage").collect();
    assert_eq!(usage.len(), 1, "the compact request's only model call: {usage:?}");
    assert_eq!(usage[0]["side_call"], true, "{usage:?}");
    assert_eq!(r["side_calls"]["calls"], 1, "{r}");
}

#[tokio::test]
async fn work_done_when_the_window_is_outgrown_ends_ok_only_when_its_check_passes() {
    // The model's own calls are never cut: a long write fills the 4,096-token
    // window, and the send cannot go on. Whether the work is done is the
    // operator's check's to say.
    let notes: String = (0..160).map(|i| format!("note {i}: {}\n", i * 7919 % 10007)).collect();
    for (check, status) in
        [("from calc import double\nassert double(5) == 10\n", "ok"), ("raise SystemExit(1)\n", "error")]
    {
        let script = vec![
            Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"})),
            Reply::tool("write_file", json!({"file_path": "notes.txt", "content": notes.repeat(3)})),
            Reply::text(&["never asked"]),
        ];
        let mock = MockServer::start_windowed(script, 4_096, true).await;
        let w = Worker::spawn(&mock.base_url(), &[]).await;
        std::fs::write(w.workspace.path().join("check.py"), check).unwrap();
        let (mut w, _) = w.init("0.3.0", json!({"verify_command": "python3 check.py"})).await;
        w.write(json!({"type": "send", "id": "s", "message": "Write double(x) in calc.py and notes."})).await;
        let (_, r) = w.result_for("s").await;
        assert_eq!(r["status"], status, "{r}");
        assert_eq!(refused(&mock.requests()), 0, "no request over the window was sent");
        if status == "ok" {
            let response = r["response"].as_str().unwrap();
            assert!(response.contains("outgrew the model's context window before the model said so"), "{r}");
            assert_eq!(r["verification"]["passed"], true, "{r}");
        } else {
            assert_eq!(r["error"]["code"], "context_overflow", "{r}");
        }
    }
}
