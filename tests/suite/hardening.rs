//! Drop-in hardening: logs that never block, tools that die with the worker,
//! runaway answers, hostile servers, figures of cancelled sends, and the
//! exact 0.2.0 shapes beside pirn's 0.3.0 extensions.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use super::mock::{MockCall, MockServer, Reply};
use super::worker::{Worker, event, mock_worker, names, pirn_command, signal};

/// Pids of live processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return vec![] };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // A zombie is dead already; its parent just has not reaped it.
            String::from_utf8_lossy(&cmd).replace('\0', " ").contains(needle) && !state.contains(") Z ")
        })
        .collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
}

#[tokio::test]
async fn logging_never_blocks_a_worker_whose_stderr_nobody_reads() {
    let mock = MockServer::start_cycling(vec![Reply::text(&["ok"])]).await;
    let w = Worker::spawn_with_stderr(&mock.base_url(), &[("PIRN_LOG", "trace")], Stdio::piped()).await;
    let (mut w, _) = w.init("0.2.0", json!({})).await;
    // The pipe stays open and unread for the whole test (pirn's writes would block).
    assert!(w.child.stderr.is_some());
    for i in 0..300 {
        let id = format!("s{i}");
        w.write(json!({"type":"send","id":id,"message":"hi"})).await;
        let started = Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(5), w.result_for(&id)).await;
        assert!(r.is_ok(), "send {i} got no result within 5 s");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test]
async fn an_inherited_rust_log_has_no_effect() {
    let mock = MockServer::start(vec![Reply::text(&["ok"])]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = pirn_command(&mock.base_url(), &[("RUST_LOG", "trace")])
        .args(["run", "hi"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).await.unwrap();
    assert_eq!(child.wait().await.unwrap().code(), Some(0));
    assert_eq!(err, "", "RUST_LOG must not turn pirn's logs on");
}

#[tokio::test]
async fn a_sigkilled_worker_leaves_no_tool_process_behind() {
    // A tree that ignores SIGTERM: nested subshells and background jobs.
    let command = "trap '' TERM; (trap '' TERM; sleep 3701 & sleep 3702; wait) & sleep 3703 & sleep 3704; wait";
    let (mut w, _mock) = mock_worker(vec![Reply::tool("bash", json!({ "command": command }))], &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    // The four sleeps, plus the shells whose command lines name them.
    while processes_with("sleep 370").len() < 6 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(processes_with("sleep 370").len() >= 6, "the tree did not start");
    signal(w.child.id().unwrap(), libc::SIGKILL);
    w.child.wait().await.unwrap();
    let killed = Instant::now();
    while !processes_with("sleep 370").is_empty() && killed.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left = processes_with("sleep 370");
    for pid in &left {
        signal(*pid, libc::SIGKILL);
    }
    assert!(left.is_empty(), "tool processes survived pirn's SIGKILL: {left:?}");
}

#[tokio::test]
async fn a_runaway_answer_runs_each_call_once_and_at_most_16() {
    let same = MockCall { name: "read_file".into(), arguments: r#"{"file_path":"a.txt"}"#.into() };
    let distinct: Vec<MockCall> =
        (0..40).map(|i| MockCall { name: "glob".into(), arguments: format!(r#"{{"pattern":"f{i}*"}}"#) }).collect();
    let script = vec![
        Reply::ToolCalls { calls: vec![same; 200], usage: Some([10, 7000]), text: None },
        Reply::ToolCalls { calls: distinct, usage: Some([10, 500]), text: None },
        Reply::text(&["done"]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    std::fs::write(w.workspace.path().join("a.txt"), "alpha\n").unwrap();
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let starts = names(&events).iter().filter(|n| *n == "tool_start").count();
    assert_eq!(starts, 1 + 16, "one read_file, then 16 of 40 globs: {:?}", names(&events));
    let second = &mock.requests()[1].body["messages"];
    let calls = second.as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(calls["tool_calls"].as_array().unwrap().len(), 1, "dropped copies cost no context");
    let note = second.as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    // The answer is read up to its fourth repeat: four copies dropped, and
    // the 195 that follow never read.
    assert!(note.contains("1\talpha") && note.contains("4 times"), "{note}");
    let third = mock.requests()[2].body["messages"].to_string();
    assert!(third.contains("24 were not run"), "the model is told what did not run");
    for req in mock.requests() {
        assert_eq!(req.body["max_tokens"], 4096, "every request carries max_tokens");
    }
}

/// A write_file call whose content loops on one short unit, as a small
/// model's does (`"zruogvqf "` over and over), closed or not.
fn looping_write(closed: bool) -> MockCall {
    let loop_text = "zruogvqf ".repeat(1000);
    let tail = if closed { "\"}" } else { "" };
    MockCall {
        name: "write_file".into(),
        arguments: format!(r#"{{"file_path": "t.py", "content": "x = '{loop_text}{tail}"#),
    }
}

#[tokio::test]
async fn a_runaway_answer_is_stopped_unused_and_the_model_is_told_why() {
    let script = vec![
        Reply::ToolCalls { calls: vec![looping_write(true)], usage: Some([10, 2300]), text: None },
        Reply::tool("write_file", json!({"file_path": "t.py", "content": "x = 1\n"})),
        Reply::text(&["Wrote t.py."]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"write t.py"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let starts = names(&events).iter().filter(|n| *n == "tool_start").count();
    assert_eq!(starts, 1, "nothing of the runaway answer ran: {:?}", names(&events));
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("t.py")).unwrap(), "x = 1\n");
    let second = &mock.requests()[1].body["messages"];
    let msgs = second.as_array().unwrap();
    assert!(msgs.iter().all(|m| m["role"] != "assistant"), "the runaway answer is not kept: {second}");
    let note = msgs.last().unwrap()["content"].as_str().unwrap();
    assert!(
        note.starts_with(
            "[pirn] Your last answer was stopped and nothing of it ran: the arguments of the write_file call repeated"
        ) && note.contains("times in a row"),
        "{note}"
    );
}

#[tokio::test]
async fn an_answer_that_keeps_running_away_ends_the_send_with_what_repeated() {
    let runaway = || Reply::ToolCalls { calls: vec![looping_write(false)], usage: None, text: None };
    let spin = Reply::text(&[&"ha ".repeat(900)]);
    let (mut w, mock) = mock_worker(vec![runaway(), spin, runaway()], &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"write t.py"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "provider_error", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("stopped as a runaway"), "{r}");
    assert_eq!(r["error"]["details"]["tool"], "write_file", "{r}");
    let told = mock.requests()[2].body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert!(told.as_str().unwrap().contains("the text repeated \"ha \""), "{told}");
    assert!(!w.workspace.path().join("t.py").exists());
}

#[tokio::test]
async fn a_call_cut_off_mid_arguments_does_not_poison_the_history() {
    // llama.cpp renders past calls through the chat template and refuses a
    // request whose history holds arguments that do not parse.
    let cut = MockCall { name: "write_file".into(), arguments: r#"{"file_path": "t.py", "content": "x = "#.into() };
    let script = vec![
        Reply::ToolCalls { calls: vec![cut], usage: Some([10, 4096]), text: None },
        Reply::text(&["I could not write it."]),
    ];
    let (mut w, mock) = mock_worker(script, &[], super::worker::scripted_only(json!({}))).await;
    w.write(json!({"type":"send","id":"s","message":"write t.py"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(event(&events, "tool_end")["is_error"], true);
    let second = &mock.requests()[1].body["messages"];
    let call = second.as_array().unwrap().iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], "{}", "{second}");
    assert!(second.to_string().contains("not valid JSON"), "the result says what was wrong: {second}");
}

#[tokio::test]
async fn hostile_retry_after_values_end_the_send_with_a_result() {
    let far = "Fri, 31 Dec 9999 23:59:59 GMT";
    let script = vec![
        Reply::Status { code: 429, body: String::new(), retry_after: Some("1e30".into()) },
        Reply::Status { code: 503, body: String::new(), retry_after: Some(far.into()) },
        Reply::Status { code: 429, body: String::new(), retry_after: Some("NaN".into()) },
        Reply::text(&["recovered"]),
    ];
    let (mut w, _mock) = mock_worker(script, &[], json!({})).await;
    for id in ["a", "b"] {
        let started = Instant::now();
        w.write(json!({"type":"send","id":id,"message":"go"})).await;
        let (_, r) = w.result_for(id).await;
        assert_eq!(
            (r["error"]["code"].as_str(), r["error"]["retryable"].as_bool()),
            (Some("provider_error"), Some(true))
        );
        assert!(started.elapsed() < Duration::from_secs(2), "gave up at once over the cap");
    }
    // NaN is no Retry-After: the default 1 s wait, announced by a 0.3.0 retry event.
    w.write(json!({"type":"send","id":"c","message":"go"})).await;
    let (events, r) = w.result_for("c").await;
    assert_eq!(r["status"], "ok", "{r}");
    let retry = event(&events, "retry");
    assert_eq!(
        (retry["attempt"].as_u64(), retry["wait_ms"].as_u64(), retry["status"].as_u64()),
        (Some(2), Some(1000), Some(429))
    );
}

#[tokio::test]
async fn cancelled_results_keep_the_time_of_the_interrupted_call() {
    let (mut w, _mock) = mock_worker(vec![Reply::Stall { chunks: vec!["thinking".into()] }], &[], json!({})).await;
    w.write(json!({"type":"send","id":"m","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    tokio::time::sleep(Duration::from_millis(1200)).await;
    w.write(json!({"type":"cancel","id":"c","target_id":"m"})).await;
    let (_, r) = w.result_for("m").await;
    assert!(r["model_latency_ms"].as_u64().unwrap() >= 1000, "{r}");
    assert_eq!(r["stop_reason"], "cancelled");

    let (mut w, _mock) = mock_worker(vec![Reply::tool("bash", json!({"command": "sleep 30"}))], &[], json!({})).await;
    w.write(json!({"type":"send","id":"t","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    w.write(json!({"type":"cancel","id":"c","target_id":"t"})).await;
    let (_, r) = w.result_for("t").await;
    assert!(r["tool_latency_ms"].as_u64().unwrap() >= 900, "{r}");
}

#[tokio::test]
async fn a_0_2_client_gets_exactly_the_fields_heddle_documents() {
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "missing.txt"})),
        Reply::text(&["no such file"]),
        Reply::Status {
            code: 500,
            body: r#"{"error":{"message":"Model error","type":"error","code":500}}"#.into(),
            retry_after: None,
        },
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[("OPENROUTER_API_KEY", "test-key")]).await;
    let (mut w, ok) = w.init("0.2.0", json!({})).await;
    assert_eq!(ok["protocol_version"], "0.2.0");
    let st = w.status("st").await;
    assert_eq!(keys(&st), ["active", "id", "messages_count", "model", "session_id", "type"].map(String::from).into());
    assert_eq!(st["messages_count"], 1, "the system prompt counts");
    w.write(json!({"type":"send","id":"s","message":"read it"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(keys(event(&events, "tool_start")), ["args", "event", "name"].map(String::from).into());
    assert_eq!(keys(event(&events, "tool_end")), ["event", "name", "result_preview"].map(String::from).into());
    assert!(r.get("stop_reason").is_none(), "{r}");
    w.write(json!({"type":"send","id":"e","message":"again"})).await;
    let (events, r) = w.result_for("e").await;
    let err = event(&events, "error");
    assert_eq!((err["message"].as_str(), err["provider"].as_str()), (Some("Model error"), Some("openrouter")));
    // heddle's details: the provider's body, parsed.
    assert_eq!((err["details"]["error"]["code"].as_u64(), err["retryable"].as_bool()), (Some(500), Some(true)));
    assert_eq!(r["error"]["message"], "Model error");
    // Extension requests get a clear error naming 0.3.0.
    w.write(json!({"type":"permission_response","id":"p","request_id":"perm_x","decision":"allow"})).await;
    let p = w.until(|v| v["id"] == "p").await.pop().unwrap();
    assert!(p["error"]["message"].as_str().unwrap().contains("0.3.0"), "{p}");
}

#[tokio::test]
async fn a_client_naming_no_version_gets_0_2_and_extension_config_needs_0_3() {
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let config = json!({"model":"m","system_prompt":"s","tools":[],"permission_responses":true});
    w.write(json!({"type":"init","id":"1","config":config})).await;
    let r = w.next().await;
    assert_eq!(r["error"]["code"], "protocol_error");
    assert!(r["error"]["message"].as_str().unwrap().contains("0.3.0"), "{r}");
    w.write(json!({"type":"init","id":"2","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    assert_eq!(w.next().await["protocol_version"], "0.2.0");
}

#[tokio::test]
async fn stop_reasons_say_why_a_0_3_send_ended() {
    let glob = || Reply::tool("glob", json!({"pattern": "*.md"}));
    let (mut w, _mock) = mock_worker(vec![glob(), glob(), glob(), glob()], &[], json!({})).await;
    w.write(json!({"type":"send","id":"l","message":"go"})).await;
    assert_eq!(w.result_for("l").await.1["stop_reason"], "loop_detected");
    let (mut w, _mock) = mock_worker(vec![glob()], &[], json!({"max_iterations": 1})).await;
    w.write(json!({"type":"send","id":"m","message":"go"})).await;
    assert_eq!(w.result_for("m").await.1["stop_reason"], "max_iterations");
}
