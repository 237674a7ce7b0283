//! agent-webkit's wire protocol 1.0 under `/agent-webkit`, through the
//! binary: with the real client (@agent-webkit/core on Node.js) and at the
//! HTTP level (ids, Last-Event-ID, inputs, teardown).

use std::time::Duration;

use serde_json::{Value, json};

use super::http::{SseReader, call, client, daemon, post};
use super::mock::{MockServer, Reply};

/// The unpacked @agent-webkit/core (scripts/agent-webkit-client).
fn client_package() -> Option<String> {
    super::worker::counterpart("PIRN_TEST_AGENT_WEBKIT")
}

#[tokio::test]
async fn the_real_agent_webkit_client_drives_pirn() {
    let Some(pkg) = client_package() else { return };
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "hello.txt", "content": "hi\n"})),
        Reply::text(&["wrote ", "hello.txt"]),
    ])
    .await;
    let d = daemon(&mock.base_url(), &["--token", "tk"]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agent_webkit/drive.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("node").args([script, &pkg, &d.base, "tk"]).output(),
    )
    .await
    .expect("the client finishes within 60 s")
    .unwrap();
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["created"]["protocol_version"], "1.0");
    let sid = seen["created"]["id"].as_str().unwrap();
    assert_eq!(
        seen["first"],
        json!({"id": 0, "event": "session_ready", "data": {"session_id": sid, "protocol_version": "1.0"}})
    );
    let run = seen["run"].as_array().unwrap();
    let names: Vec<&str> = run.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "tool_use",
            "permission_request",
            "tool_result",
            "message_delta",
            "message_delta",
            "message_complete",
            "result"
        ]
    );
    let ids: Vec<u64> = run.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    assert_eq!(run[0]["data"]["tool_name"], "write_file");
    assert_eq!(run[0]["data"]["input"], json!({"file_path": "hello.txt", "content": "hi\n"}));
    assert_eq!(run[1]["data"]["tool_name"], "write_file");
    assert_eq!(run[2]["data"]["tool_use_id"], run[0]["data"]["tool_use_id"]);
    assert_eq!(run[2]["data"]["is_error"], false);
    assert_eq!(run[3]["data"]["delta"], json!({"type": "text", "text": "wrote "}));
    assert_eq!(run[5]["data"]["message"]["content"], json!([{"type": "text", "text": "wrote hello.txt"}]));
    assert_eq!(
        (run[6]["data"]["subtype"].as_str(), run[6]["data"]["session_id"].as_str()),
        (Some("success"), Some(sid))
    );
    assert_eq!(seen["second_answer"], 409, "first reply wins");
    assert_eq!(std::fs::read_to_string(d.workspace().join("hello.txt")).unwrap(), "hi\n");
    // Resumed after event run[1]: exactly the events that followed it.
    assert_eq!(seen["resumed"].as_array().unwrap(), &run[2..].to_vec());
    // DELETE ends every stream with done.
    let after = seen["after_close"].as_array().unwrap();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0]["event"], "done");
    assert!(after[0]["id"].as_u64().unwrap() > ids[6]);
}

async fn webkit_session(c: &reqwest::Client, base: &str, body: Value) -> String {
    let (status, created) = post(c, &format!("{base}/agent-webkit/sessions"), body).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["protocol_version"], "1.0");
    created["session_id"].as_str().unwrap().to_owned()
}

async fn stream(c: &reqwest::Client, base: &str, sid: &str, last: Option<&str>) -> reqwest::Response {
    let mut req = c.get(format!("{base}/agent-webkit/sessions/{sid}/stream"));
    if let Some(l) = last {
        req = req.header("Last-Event-ID", l);
    }
    req.send().await.unwrap()
}

async fn input(c: &reqwest::Client, base: &str, sid: &str, msg: Value) -> u16 {
    post(c, &format!("{base}/agent-webkit/sessions/{sid}/input"), msg).await.0
}

#[tokio::test]
async fn agent_webkit_ids_replay_inputs_and_teardown() {
    let many: Vec<String> = (0..5000).map(|i| format!("{i} ")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mock = MockServer::start(vec![
        Reply::text(&many),
        Reply::Stall { chunks: vec!["slow".into()] },
        Reply::tool("bash", json!({"command": "echo no"})),
        Reply::text(&["planned"]),
    ])
    .await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = webkit_session(&c, &d.base, json!({"model": "mock-model", "permission_mode": "bypassPermissions"})).await;
    // Visible to pirn's own API too.
    assert_eq!(call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await.0, 200);
    for bad in ["abc", "-1", "1.5"] {
        assert_eq!(stream(&c, &d.base, &sid, Some(bad)).await.status(), 400, "{bad}");
    }
    assert_eq!(stream(&c, &d.base, "nope", None).await.status(), 404);
    assert_eq!(post(&c, &format!("{}/agent-webkit/sessions", d.base), json!({"permission_mode": "yolo"})).await.0, 400);

    // Two subscribers see the same events with the same ids.
    let mut a = SseReader::new(stream(&c, &d.base, &sid, None).await);
    let mut b = SseReader::new(stream(&c, &d.base, &sid, None).await);
    assert_eq!(a.next().await.unwrap().event, "session_ready");
    assert_eq!(b.next().await.unwrap().event, "session_ready");
    assert_eq!(
        input(&c, &d.base, &sid, json!({"type": "user_message", "content": [{"type": "text", "text": "count"}]})).await,
        204
    );
    let mut got_a = Vec::new();
    while let Some(f) = a.next().await {
        let end = f.event == "result";
        got_a.push((f.id, f.event));
        if end {
            break;
        }
    }
    assert_eq!(got_a.len(), 5002, "5000 deltas, message_complete, result");
    for expected in &got_a {
        let f = b.next().await.unwrap();
        assert_eq!(&(f.id, f.event), expected);
    }
    // The first deltas have left the hub's 4096-frame ring: 412.
    assert_eq!(stream(&c, &d.base, &sid, Some("4")).await.status(), 412);
    let last_delta = got_a[4999].0.unwrap().to_string();
    let mut tail = SseReader::new(stream(&c, &d.base, &sid, Some(&last_delta)).await);
    assert_eq!(tail.next().await.unwrap().event, "message_complete");
    assert_eq!(tail.next().await.unwrap().event, "result");

    // interrupt cancels the running turn: error, then result.
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "user_message", "content": "think"})).await, 204);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "interrupt"})).await, 204);
    let mut names = Vec::new();
    let mut result = Value::Null;
    while let Some(f) = a.next().await {
        names.push(f.event.clone());
        if f.event == "error" {
            assert_eq!(f.data["code"], "cancelled");
        }
        if f.event == "result" {
            result = f.data;
            break;
        }
    }
    assert_eq!(names[names.len() - 2..], ["error", "result"]);
    assert_eq!(
        (result["subtype"].as_str(), result["is_error"].as_bool()),
        (Some("error_during_execution"), Some(true))
    );

    // set_model and set_permission_mode apply from the next turn.
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "set_model", "model": "other-model"})).await, 204);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "set_permission_mode", "mode": "plan"})).await, 204);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "set_permission_mode", "mode": "sideways"})).await, 400);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "user_message", "content": "plan it"})).await, 204);
    let mut tool_result = Value::Null;
    while let Some(f) = a.next().await {
        if f.event == "tool_result" {
            tool_result = f.data.clone();
        }
        if f.event == "result" {
            break;
        }
    }
    assert_eq!(tool_result["is_error"], true, "plan mode refuses bash: {tool_result}");
    let requests = mock.requests();
    assert_eq!(requests.last().unwrap().body["model"], "other-model");
    let (_, status) = call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await;
    assert_eq!(status["model"], "other-model");

    // Inputs pirn cannot take.
    let image = json!({"type": "user_message", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]});
    assert_eq!(input(&c, &d.base, &sid, image).await, 400);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "user_message", "content": "  "})).await, 400);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "teleport"})).await, 400);
    assert_eq!(input(&c, &d.base, &sid, json!({"type": "stop_task", "task_id": "nope"})).await, 404);
    assert_eq!(
        input(&c, &d.base, &sid, json!({"type": "question_response", "correlation_id": "q", "answers": {}})).await,
        404
    );
    assert_eq!(
        input(&c, &d.base, &sid, json!({"type": "permission_response", "correlation_id": "nope", "behavior": "allow"}))
            .await,
        404
    );

    // DELETE: every subscriber gets done, then the stream ends.
    assert_eq!(call(c.delete(format!("{}/agent-webkit/sessions/{sid}", d.base))).await.0, 204);
    let done = a.next().await.unwrap();
    assert_eq!((done.event.as_str(), done.data.clone()), ("done", json!({})));
    assert!(a.next().await.is_none());
    assert_eq!(call(c.delete(format!("{}/agent-webkit/sessions/{sid}", d.base))).await.0, 404);
}
