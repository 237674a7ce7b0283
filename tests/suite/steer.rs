//! Steering a running send (0.3.0 `steer`), through the binary: the text
//! reaches the same send's next model request and its result lists the
//! steer; a steer given when nothing runs is a send of its own; 0.2.0 is
//! refused it; over HTTP, `POST /v1/sessions/{id}/steer`.

use serde_json::{Value, json};

use super::http::{SseReader, client, daemon, new_session, post};
use super::mock::{MockServer, Reply};
use super::worker::Worker;

fn chat_requests(mock: &MockServer) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body).collect()
}

/// The `(role, text)` of each message of a recorded request.
fn turns(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

#[tokio::test]
async fn steering_text_reaches_the_running_sends_next_model_request() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 1; echo built"})),
        Reply::text(&["Built, and the README mentions it."]),
        Reply::text(&["second send"]),
    ])
    .await;
    let extra = json!({"workspace_listing": false, "approval_mode": "full-auto"});
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type": "send", "id": "1", "message": "build it"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    w.write(json!({"type": "steer", "id": "st1", "message": "also mention it in the README", "send_id": "1"})).await;
    let ack = w.until(|v| v["type"] == "steer_ok").await;
    assert_eq!(ack.last().unwrap()["send_id"], "1", "{ack:?}");
    let (_, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["steered"], json!(["st1"]));
    assert_eq!(r["iterations"], 2, "no extra model call: the text joins the next one");
    let second = turns(&chat_requests(&mock)[1]);
    let roles: Vec<&str> = second.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"], "{second:?}");
    assert_eq!(second[4].1, "also mention it in the README");

    // Nothing runs: the steer is a send of its own, answered as one.
    w.write(json!({"type": "steer", "id": "st2", "message": "and now?"})).await;
    let (_, r) = w.result_for("st2").await;
    assert_eq!(r["response"], "second send");
    assert!(r.get("steered").is_none());
}

#[tokio::test]
async fn a_steer_the_send_ends_before_taking_runs_next_as_its_own_send() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 1"})),
        Reply::text(&["the steer, answered on its own"]),
    ])
    .await;
    let extra = json!({"workspace_listing": false, "approval_mode": "full-auto", "max_iterations": 1});
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type": "send", "id": "1", "message": "go"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    w.write(json!({"type": "steer", "id": "st", "message": "and then this"})).await;
    w.until(|v| v["type"] == "steer_ok").await;
    let (_, r1) = w.result_for("1").await;
    assert_eq!(r1["error"]["code"], "max_iterations", "{r1}");
    assert!(r1.get("steered").is_none(), "{r1}");
    let (_, r2) = w.result_for("st").await;
    assert_eq!(r2["response"], "the steer, answered on its own", "{r2}");
    let last = turns(&chat_requests(&mock)[1]);
    assert_eq!(last.last().unwrap(), &("user".to_owned(), "and then this".to_owned()));
    // Its id is taken now.
    w.write(json!({"type": "send", "id": "st", "message": "again"})).await;
    let (_, r3) = w.result_for("st").await;
    assert_eq!(r3["error"]["code"], "protocol_error", "{r3}");
}

#[tokio::test]
async fn a_steer_for_another_send_is_queued_and_0_2_0_is_refused() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 1"})),
        Reply::text(&["first"]),
        Reply::text(&["queued"]),
    ])
    .await;
    let extra = json!({"workspace_listing": false, "approval_mode": "full-auto"});
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type": "send", "id": "1", "message": "go"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    w.write(json!({"type": "steer", "id": "st", "message": "later", "send_id": "other"})).await;
    let (_, r1) = w.result_for("1").await;
    assert!(r1.get("steered").is_none(), "{r1}");
    let (_, r2) = w.result_for("st").await;
    assert_eq!(r2["response"], "queued");

    let (mut old, _) = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", json!({})).await;
    old.write(json!({"type": "steer", "id": "x", "message": "hi"})).await;
    let (_, r) = old.result_for("x").await;
    assert_eq!(r["error"]["code"], "protocol_error", "{r}");
}

#[tokio::test]
async fn over_http_a_steer_joins_the_running_send_and_its_plan_events_stream() {
    let plan = super::plan::plan(&[("Build", "in_progress"), ("Document", "pending")]);
    let mock = MockServer::start(vec![
        Reply::tool("todo_write", plan.clone()),
        Reply::tool("bash", json!({"command": "sleep 1"})),
        Reply::text(&["done"]),
    ])
    .await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let config = json!({"tools": ["bash"], "approval_mode": "full-auto", "workspace_listing": false});
    let id = new_session(&c, &d.base, config).await;
    let url = |p: &str| format!("{}/v1/sessions/{id}{p}", d.base);
    let mut events = SseReader::new(c.get(url("/events")).send().await.unwrap());
    post(&c, &url("/sends"), json!({"message": "build", "send_id": "h1"})).await;
    loop {
        let f = events.next().await.expect("a frame");
        if f.event == "tool_start" && f.data["event"]["name"] == "bash" {
            break;
        }
        if f.event == "plan" {
            assert_eq!(f.data["event"]["todos"], plan["todos"], "{:?}", f.data);
        }
    }
    let (status, body) = post(&c, &url("/steer"), json!({"message": "and document it"})).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body, json!({"send_id": "h1", "taken": true}));
    let frames = events.until_result("h1").await;
    let result = &frames.last().unwrap().data;
    assert_eq!(result["steered"].as_array().map(Vec::len), Some(1), "{result}");
    let last = turns(&chat_requests(&mock)[2]);
    assert_eq!(last.last().unwrap(), &("user".to_owned(), "and document it".to_owned()));
}
