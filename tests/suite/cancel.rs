//! Cancellation: fast, exactly one result, no surviving tool processes, and a
//! conversation that stays valid for the next send.

use std::time::{Duration, Instant};

use serde_json::json;

use super::mock::{MockServer, Reply};
use super::worker::{Worker, assert_gapless};

/// Budget for the cancelled result, as the core issue sets it.
const CANCEL_BUDGET: Duration = Duration::from_millis(50);

#[tokio::test]
async fn cancel_while_the_model_stream_is_stalled() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["partial".into()] }, Reply::text(&["fine"])]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s1","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    let t = Instant::now();
    w.write(json!({"type":"cancel","id":"c1","target_id":"s1"})).await;
    let (events, r) = w.result_for("s1").await;
    let took = t.elapsed();
    assert!(took < CANCEL_BUDGET, "cancelled result took {took:?}");
    assert_gapless(&w.seen.iter().filter(|v| v["send_id"] == "s1").cloned().collect::<Vec<_>>());
    assert!(events.iter().all(|e| e["event"]["event"] != "heartbeat"));
    assert_eq!(r["status"], "error");
    assert_eq!(r["error"], json!({"code":"cancelled","message":"cancelled","retryable":false}));
    // The next send works and the conversation is valid.
    w.write(json!({"type":"send","id":"s2","message":"again"})).await;
    let (_, r2) = w.result_for("s2").await;
    assert_eq!(r2["status"], "ok");
    let msgs = mock.requests()[1].body["messages"].clone();
    // [1] is pirn's note with the workspace listing.
    assert_eq!(msgs[2]["content"], "go");
    assert_eq!(msgs[3]["content"], "again");
}

#[tokio::test]
async fn cancel_kills_the_whole_tool_process_group() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 3; touch X; sleep 30"})),
        Reply::text(&["ok"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s1","message":"run it"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let t = Instant::now();
    w.write(json!({"type":"cancel","id":"c","target_id":"s1"})).await;
    let (_, r) = w.result_for("s1").await;
    let took = t.elapsed();
    assert!(took < CANCEL_BUDGET, "cancelled result took {took:?}");
    assert_eq!(r["error"]["code"], "cancelled");
    assert_eq!(r["tool_calls_made"][0]["name"], "bash");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!w.workspace.path().join("X").exists(), "the shell survived the cancel");
    // The dangling tool call got a result, so the next request is valid.
    w.write(json!({"type":"send","id":"s2","message":"next"})).await;
    let (_, r2) = w.result_for("s2").await;
    assert_eq!(r2["status"], "ok");
    let msgs = mock.requests()[1].body["messages"].clone();
    let roles: Vec<&str> = msgs.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "tool", "user"], "with the listing note");
    assert!(msgs[4]["content"].as_str().unwrap().contains("cancelled"));
}

#[tokio::test]
async fn cancel_of_unknown_or_finished_sends_is_ignored_and_queued_sends_are_answered() {
    let mock = MockServer::start(vec![Reply::text(&["one"]), Reply::Stall { chunks: vec!["x".into()] }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"a","message":"1"})).await;
    w.result_for("a").await;
    w.write(json!({"type":"cancel","id":"c1","target_id":"a"})).await;
    w.write(json!({"type":"cancel","id":"c2","target_id":"nope"})).await;
    assert!(w.try_next(Duration::from_millis(200)).await.is_none(), "cancel of finished/unknown sends writes nothing");
    w.write(json!({"type":"send","id":"b","message":"2"})).await;
    w.write(json!({"type":"send","id":"q","message":"3"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    w.write(json!({"type":"cancel","id":"c3","target_id":"q"})).await;
    let (_, rq) = w.result_for("q").await;
    assert_eq!(rq["error"]["code"], "cancelled");
    assert_eq!(rq["iterations"], 0);
    assert_eq!(w.status("st").await["active"], true, "b still runs");
    w.write(json!({"type":"cancel","id":"c4","target_id":"b"})).await;
    let (_, rb) = w.result_for("b").await;
    assert_eq!(rb["error"]["code"], "cancelled");
    assert_eq!(mock.requests().len(), 2, "the queued send never reached the model");
    let results = w.seen.iter().filter(|v| v["type"] == "result").count();
    assert_eq!(results, 3);
}
