//! The protocol itself: handshake, bad input, events, results, concurrency.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, assert_gapless, names, signal};

#[tokio::test]
async fn init_ok_carries_the_protocol_version_file() {
    let mock = MockServer::start(vec![]).await;
    let (_w, ok) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let file = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/PROTOCOL_VERSION")).unwrap();
    assert_eq!(ok["protocol_version"], file.trim());
    assert_eq!(ok["id"], "init-1");
    assert_eq!(ok["session_id"].as_str().unwrap().len(), 36, "a uuid: {ok}");
    assert!(ok.get("error").is_none());
}

#[tokio::test]
async fn version_mismatch_leaves_the_worker_uninitialized() {
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    w.write(json!({"type":"init","id":"1","protocol_version":"1.0.0","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    let ok = w.next().await;
    assert_eq!(ok["type"], "init_ok");
    assert_eq!(ok["session_id"], "");
    assert_eq!(ok["error"]["code"], "protocol_version_mismatch");
    assert_eq!(ok["error"]["retryable"], false);
    assert_eq!(ok["error"]["message"], "Client requested 1.0.0, server is 0.3.0");
    w.write(json!({"type":"send","id":"2","message":"hi"})).await;
    let r = w.next().await;
    assert_eq!(
        (r["type"].as_str(), r["id"].as_str(), r["error"]["code"].as_str()),
        (Some("result"), Some("2"), Some("protocol_error"))
    );
    // A compatible minor version is accepted afterwards.
    w.write(json!({"type":"init","id":"3","protocol_version":"0.9.0","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    let ok = w.next().await;
    assert!(ok.get("error").is_none(), "{ok}");
    assert_eq!(ok["protocol_version"], "0.3.0", "the lower of the two minors");
}

#[tokio::test]
async fn bad_lines_get_protocol_errors_and_the_worker_survives() {
    let mock = MockServer::start(vec![Reply::text(&["still ", "alive"])]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (br#"{"type":"send","id":"early","message":"x"}"#.to_vec(), "early"),
        (b"this is not json".to_vec(), "unknown"),
        (b"{\"type\":\"status\",\"id\":\"\xff\xfe\"}".to_vec(), "unknown"),
        (br#"{"id":"no-type"}"#.to_vec(), "no-type"),
        (br#"{"type":"status"}"#.to_vec(), "unknown"),
        (br#"{"type":"dance","id":"d1"}"#.to_vec(), "d1"),
        (br#"[1,2,3]"#.to_vec(), "unknown"),
        (br#"{"type":"init","id":"i0","config":{"model":"m"}}"#.to_vec(), "i0"),
    ];
    for (line, want_id) in &cases {
        let mut l = line.clone();
        l.push(b'\n');
        w.write_raw(&l).await;
        let r = w.next().await;
        assert_eq!(r["type"], "result", "{r}");
        assert_eq!(r["status"], "error");
        assert_eq!(r["error"]["code"], "protocol_error", "{r}");
        assert_eq!(r["error"]["retryable"], false);
        assert_eq!(r["id"], *want_id, "for line {:?}", String::from_utf8_lossy(line));
        assert!(!r["error"]["message"].as_str().unwrap().is_empty());
    }
    // Blank lines are ignored; the worker still initialises and answers.
    w.write_raw(b"\n\n").await;
    w.write(json!({"type":"init","id":"i1","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    assert_eq!(w.next().await["type"], "init_ok");
    w.write(json!({"type":"send","id":"s1"})).await;
    let r = w.next().await;
    assert_eq!((r["id"].as_str(), r["error"]["code"].as_str()), (Some("s1"), Some("protocol_error")));
    assert!(r["error"]["message"].as_str().unwrap().contains("message"), "{r}");
    assert!(r["session_id"].is_string(), "after init, errors carry the session: {r}");
    w.write(json!({"type":"init","id":"i2","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    assert_eq!(w.next().await["error"]["code"], "protocol_error");
    w.write(json!({"type":"send","id":"s2","message":"ok?"})).await;
    let (_, r) = w.result_for("s2").await;
    assert_eq!(r["response"], "still alive");
}

#[tokio::test]
async fn a_line_over_10_mib_is_discarded_and_reading_goes_on() {
    let mock = MockServer::start(vec![]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let mut huge = br#"{"type":"send","id":"big","message":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'a', 11 * 1024 * 1024));
    huge.extend_from_slice(b"\"}\n");
    w.write_raw(&huge).await;
    let r = w.next().await;
    assert_eq!(r["error"]["code"], "protocol_error");
    assert_eq!(r["id"], "unknown");
    assert!(r["error"]["message"].as_str().unwrap().contains("10485760"), "{r}");
    let s = w.status("after").await;
    assert_eq!(s["active"], false);
    assert_eq!(s["messages_count"], 1, "the system prompt");
}

#[tokio::test]
async fn text_answer_streams_deltas_usage_and_one_result() {
    let mock = MockServer::start(vec![Reply::text(&["Hel", "lo, ", "world"])]).await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"task_id":"t-9","worker_id":"w-3"})).await;
    let sid = ok["session_id"].clone();
    w.write(json!({"type":"send","id":"s1","message":"say hello"})).await;
    let (events, r) = w.result_for("s1").await;
    assert_eq!(names(&events), ["content_delta", "content_delta", "content_delta", "usage"]);
    assert_gapless(&events);
    let text: String = events.iter().filter_map(|e| e["event"]["text"].as_str()).collect();
    assert_eq!(text, "Hello, world");
    for line in events.iter().chain([&r]) {
        assert_eq!(line["session_id"], sid);
        assert_eq!(line["task_id"], "t-9");
        assert_eq!(line["worker_id"], "w-3");
    }
    assert_eq!(r["status"], "ok");
    assert_eq!(r["response"], "Hello, world");
    assert_eq!(r["iterations"], 1);
    assert_eq!(r["usage"], json!({"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}));
    assert_eq!(r["tool_calls_made"], json!([]));
    for k in ["model_latency_ms", "tool_latency_ms", "total_latency_ms"] {
        assert!(r[k].is_u64(), "{k}: {r}");
    }
    // The request was streamed with usage and the configured model.
    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.body["stream"], true);
    assert_eq!(req.body["stream_options"]["include_usage"], true);
    assert_eq!(req.body["model"], "mock-model");
    // The system prompt as given (a stable prefix for a server's prompt
    // cache), then the request with the workspace listing before it.
    assert_eq!(req.body["messages"][0], json!({"role":"system","content":"You are a test."}));
    let note = req.body["messages"][1]["content"].as_str().unwrap();
    assert!(note.starts_with("[pirn] The workspace is /"), "the listing, as pirn's note: {note}");
    assert_eq!(req.body["messages"][2], json!({"role":"user","content":"say hello"}));
    let tools: Vec<&str> =
        req.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        ["read_file", "write_file", "edit_file", "glob", "grep", "bash", "bash_output", "kill_shell", "todo_write"]
    );
}

#[tokio::test]
async fn tool_round_trip_sums_usage_and_feeds_the_result_back() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "notes.txt"})),
        Reply::text(&["The note says hi."]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"preflight": false})).await;
    std::fs::write(w.workspace.path().join("notes.txt"), "hi from the note\n").unwrap();
    w.write(json!({"type":"send","id":"s1","message":"what does notes.txt say?"})).await;
    let (events, r) = w.result_for("s1").await;
    let order = names(&events);
    assert_eq!(order, ["usage", "tool_start", "tool_end", "content_delta", "usage"]);
    assert_gapless(&events);
    assert_eq!(events[1]["event"]["name"], "read_file");
    assert_eq!(events[1]["event"]["args"], json!({"file_path":"notes.txt"}));
    assert!(events[2]["event"]["result_preview"].as_str().unwrap().contains("hi from the note"));
    assert_eq!(r["status"], "ok");
    assert_eq!(r["iterations"], 2);
    assert_eq!(r["tool_calls_made"], json!([{"name":"read_file","args":{"file_path":"notes.txt"}}]));
    assert_eq!(r["usage"], json!({"prompt_tokens":30,"completion_tokens":13,"total_tokens":43}));
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    // system, the listing note, the request, then the tool round.
    let msgs = reqs[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs[3]["role"], "assistant");
    assert_eq!(msgs[3]["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(msgs[3]["tool_calls"][0]["function"]["arguments"], r#"{"file_path":"notes.txt"}"#);
    assert_eq!(msgs[4]["role"], "tool");
    assert_eq!(msgs[4]["tool_call_id"], msgs[3]["tool_calls"][0]["id"]);
    assert!(msgs[4]["content"].as_str().unwrap().contains("1\thi from the note"), "{}", msgs[4]);
}

#[tokio::test]
async fn conversation_persists_across_sends() {
    let mock = MockServer::start(vec![Reply::text(&["first answer"]), Reply::text(&["second answer"])]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"a","message":"one"})).await;
    w.result_for("a").await;
    w.write(json!({"type":"send","id":"b","message":"two"})).await;
    let (events, _) = w.result_for("b").await;
    assert_eq!(events[0]["event_seq"], 0, "event_seq restarts per send");
    let msgs = &mock.requests()[1].body["messages"];
    // [1] is pirn's note with the workspace listing, before the first request.
    assert_eq!(msgs[2]["content"], "one");
    assert_eq!(msgs[3], json!({"role":"assistant","content":"first answer"}));
    assert_eq!(msgs[4]["content"], "two");
    assert_eq!(w.status("st").await["messages_count"], 6, "system prompt, listing + 4");
}

#[tokio::test]
async fn status_is_answered_during_a_send_and_sends_queue_fifo() {
    let mock = MockServer::start(vec![
        Reply::Text { chunks: vec!["slow ".into(), "answer".into()], usage: None, delay_ms: 400, finish_reason: None },
        Reply::text(&["second"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"a","message":"one"})).await;
    w.write(json!({"type":"send","id":"b","message":"two"})).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let t = std::time::Instant::now();
    let s = w.status("st").await;
    assert!(t.elapsed() < Duration::from_millis(300), "status waited for the send: {:?}", t.elapsed());
    assert_eq!(s["active"], true);
    assert_eq!(s["queue_length"], 1);
    assert_eq!(s["model"], "mock-model");
    // A duplicate id is refused, not run twice.
    w.write(json!({"type":"send","id":"b","message":"again"})).await;
    let dup = w.until(|v| v["type"] == "result" && v["error"]["code"] == "protocol_error").await;
    assert_eq!(dup.last().unwrap()["id"], "b");
    let lines = w.until(|v| v["type"] == "result" && v["id"] == "b").await;
    let results: Vec<&str> = w
        .seen
        .iter()
        .filter(|v| v["type"] == "result" && v["status"] == "ok")
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["a", "b"]);
    assert!(lines.iter().all(|l| l["type"] != "event" || l["send_id"] == "a" || l["send_id"] == "b"));
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(w.status("st2").await["active"], false);
}

#[tokio::test]
async fn heartbeats_share_the_sequence_and_stop_at_the_result() {
    let mock = MockServer::start(vec![Reply::Text {
        chunks: vec!["a".into(), "b".into(), "c".into()],
        usage: Some([1, 1]),
        delay_ms: 250,
        finish_reason: None,
    }])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[("PIRN_HEARTBEAT_INTERVAL", "100")], json!({})).await;
    w.write(json!({"type":"send","id":"h","message":"slow"})).await;
    let (events, r) = w.result_for("h").await;
    assert_gapless(&events);
    let beats: Vec<u64> = events
        .iter()
        .filter(|e| e["event"]["event"] == "heartbeat")
        .map(|e| e["event"]["duration_ms"].as_u64().unwrap())
        .collect();
    assert!(beats.len() >= 4, "expected several heartbeats over ~750 ms, got {beats:?}");
    assert!(beats[0] >= 90, "first heartbeat after one interval: {beats:?}");
    assert!(beats.windows(2).all(|p| p[0] < p[1]), "{beats:?}");
    assert_eq!(r["status"], "ok");
    // Nothing after the result while idle.
    assert!(w.try_next(Duration::from_millis(350)).await.is_none());
}

#[tokio::test]
async fn heddle_heartbeat_variable_is_honoured() {
    let mock = MockServer::start(vec![Reply::Text {
        chunks: vec!["a".into(), "b".into()],
        usage: None,
        delay_ms: 200,
        finish_reason: None,
    }])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[("HEDDLE_HEARTBEAT_INTERVAL", "50")], json!({})).await;
    w.write(json!({"type":"send","id":"h","message":"slow"})).await;
    let (events, _) = w.result_for("h").await;
    assert!(names(&events).iter().filter(|n| *n == "heartbeat").count() >= 3, "{:?}", names(&events));
}

fn slow_text(text: &str, delay_ms: u64) -> Reply {
    Reply::Text { chunks: vec![text.into(), "!".into()], usage: None, delay_ms, finish_reason: None }
}

/// Results of `lines` as (id, status), in order.
fn results(lines: &[Value]) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|v| v["type"] == "result")
        .map(|v| (v["id"].as_str().unwrap().to_owned(), v["status"].as_str().unwrap().to_owned()))
        .collect()
}

#[tokio::test]
async fn shutdown_finishes_the_running_and_queued_sends_first() {
    let mock = MockServer::start(vec![slow_text("first", 150), slow_text("second", 50)]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.write(json!({"type":"send","id":"q","message":"queued"})).await;
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    // Requests are still read while the sends finish: a late send is refused.
    w.write(json!({"type":"send","id":"late","message":"too late"})).await;
    let rest = w.until(|v| v["type"] == "shutdown_ok").await;
    let got = results(&rest);
    assert_eq!(got[0], ("late".to_owned(), "error".to_owned()), "{rest:#?}");
    assert_eq!(got[1..], [("s".to_owned(), "ok".to_owned()), ("q".to_owned(), "ok".to_owned())], "{rest:#?}");
    assert_eq!(rest.last().unwrap()["id"], "bye");
    assert_eq!(w.exit_code().await, Some(0));
    assert!(w.try_next(Duration::from_millis(100)).await.is_none(), "nothing after shutdown_ok");
}

#[tokio::test]
async fn cancel_then_shutdown_is_the_fast_way_out() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["thinking".into()] }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.write(json!({"type":"send","id":"q","message":"queued"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    let started = Instant::now();
    w.write(json!({"type":"cancel","id":"c1","target_id":"q"})).await;
    w.write(json!({"type":"cancel","id":"c2","target_id":"s"})).await;
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    let rest = w.until(|v| v["type"] == "shutdown_ok").await;
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    let codes: Vec<&str> = rest.iter().filter_map(|v| v["error"]["code"].as_str()).collect();
    assert_eq!(codes, ["cancelled", "cancelled"], "{rest:#?}");
    assert_eq!(w.exit_code().await, Some(0));
}

#[tokio::test]
async fn a_signal_during_the_shutdown_wait_cancels_at_once() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["x".into()] }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    assert!(w.try_next(Duration::from_millis(200)).await.is_none(), "the stalled send is still running");
    signal(w.child.id().unwrap(), libc::SIGTERM);
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "cancelled");
    assert_eq!(w.exit_code().await, Some(0));
}

#[tokio::test]
async fn stdin_eof_finishes_the_sends_then_exits_silently() {
    let mock = MockServer::start(vec![slow_text("piped", 100), slow_text("also", 10)]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.write(json!({"type":"send","id":"t","message":"and this"})).await;
    w.close_stdin();
    let (_, r) = w.result_for("s").await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("piped!")));
    let (_, r) = w.result_for("t").await;
    assert_eq!(r["status"], "ok");
    assert!(w.try_next(Duration::from_millis(300)).await.is_none(), "no shutdown_ok on EOF");
    assert_eq!(w.exit_code().await, Some(0));
}

#[tokio::test]
async fn shutdown_before_init_exits_cleanly() {
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    w.write(json!({"type":"shutdown","id":"x"})).await;
    assert_eq!(w.next().await, json!({"type":"shutdown_ok","id":"x"}));
    assert_eq!(w.exit_code().await, Some(0));
}

/// Every stdout line of a busy run is one JSON object (checked by `next`).
#[tokio::test]
async fn every_line_is_one_json_object() {
    let mock = MockServer::start(vec![Reply::text(&["line\nbreaks\n", "and \"quotes\" \u{2028}"])]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"x"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["response"], Value::String("line\nbreaks\nand \"quotes\" \u{2028}".into()));
}
