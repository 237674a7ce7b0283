//! Steering on Claude Code's surface: a `user` message with the Agent
//! SDK's `priority: "now"` written while a turn runs joins that turn (the
//! model reads it at its next request; one `result`); one without
//! `priority` is queued as a turn of its own (two results), as Claude Code
//! queues a follow-up.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::claude::workspace;
use super::mock::{MockServer, Reply};
use super::worker::pirn_command;

/// Runs the surface: the first prompt, then (once its bash call started)
/// `second`; returns every stdout line.
async fn two_messages(mock: &MockServer, second: Value) -> Vec<Value> {
    let ws = workspace(&[]);
    let mut c = pirn_command(&mock.base_url(), &[]);
    c.args(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .args(["--permission-mode", "bypassPermissions"])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = json!({"type": "user", "message": {"role": "user", "content": "run the slow check"}});
    stdin.as_mut().unwrap().write_all(format!("{first}\n").as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let read = async {
        let mut second = Some(second);
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            let tool_use = v["type"] == "assistant"
                && v["message"]["content"].as_array().is_some_and(|c| c.iter().any(|b| b["type"] == "tool_use"));
            if tool_use && let (Some(msg), Some(mut pipe)) = (second.take(), stdin.take()) {
                pipe.write_all(format!("{msg}\n").as_bytes()).await.unwrap();
                // Dropped: stdin closes, and the surface ends after its turns.
            }
            seen.push(v);
        }
    };
    let ended = tokio::time::timeout(Duration::from_secs(30), read).await;
    assert!(ended.is_ok(), "the surface ends within 30 s; it wrote {seen:?}");
    let _ = child.wait().await;
    seen
}

fn user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_priority_now_message_joins_the_running_turn() {
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "sleep 1"})), Reply::text(&["took the hint"])])
            .await;
    let steer =
        json!({"type": "user", "message": {"role": "user", "content": "also mention the hint"}, "priority": "now"});
    let out = two_messages(&mock, steer).await;
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "result").collect();
    assert_eq!(results.len(), 1, "one turn, one result: {results:?}");
    assert_eq!(results[0]["result"], "took the hint", "{}", results[0]);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let texts = user_texts(&reqs[1].body);
    assert!(texts.iter().any(|t| t.contains("also mention the hint")), "the next request has it: {texts:?}");
}

#[tokio::test]
async fn a_message_without_priority_waits_for_its_own_turn() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 1"})),
        Reply::text(&["first done"]),
        Reply::text(&["second done"]),
    ])
    .await;
    let queued = json!({"type": "user", "message": {"role": "user", "content": "and then this"}});
    let out = two_messages(&mock, queued).await;
    let results: Vec<&Value> = out.iter().filter(|v| v["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(
        (results[0]["result"].as_str(), results[1]["result"].as_str()),
        (Some("first done"), Some("second done"))
    );
    let reqs = mock.requests();
    assert!(!user_texts(&reqs[1].body).iter().any(|t| t.contains("and then this")), "not in the first turn");
}
