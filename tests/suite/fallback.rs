//! The fallback model (`config.fallback_model`, Claude Code's
//! `--fallback-model`): a request the session's model refuses with an
//! error another model could absorb goes to the fallback, the rest of the
//! send stays there, the next send tries the session's model again; a bad
//! request never falls back. Through JSONL and the official Python Claude
//! SDK (`fallback_model`).

use serde_json::{Value, json};

use super::claude::{python, result, turn, workspace};
use super::mock::{MockServer, Reply};
use super::worker::Worker;

fn models(mock: &MockServer) -> Vec<String> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_failing_model_hands_the_rest_of_the_send_to_the_fallback() {
    let mock = MockServer::start(vec![
        Reply::status(500, "{\"error\": {\"message\": \"primary overloaded\"}}"),
        Reply::tool("read_file", json!({"file_path": "a.txt"})),
        Reply::text(&["It says a."]),
        Reply::text(&["Back on the primary."]),
        Reply::status(400, "{\"error\": {\"message\": \"bad request\"}}"),
    ])
    .await;
    let extra = json!({"fallback_model": "mock-small", "workspace_listing": false, "approval_mode": "full-auto"});
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type": "send", "id": "1", "message": "read a.txt"})).await;
    let (events, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    let switched: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "model_fallback").collect();
    assert_eq!(switched.len(), 1, "{events:?}");
    assert_eq!(switched[0]["event"]["model"], "mock-model");
    assert_eq!(switched[0]["event"]["fallback"], "mock-small");
    assert!(switched[0]["event"]["reason"].as_str().unwrap().contains("500"), "{}", switched[0]);
    assert_eq!(models(&mock), ["mock-model", "mock-small", "mock-small"], "the rest of the send stays on the fallback");

    w.write(json!({"type": "send", "id": "2", "message": "again"})).await;
    let (events, r) = w.result_for("2").await;
    assert_eq!(r["response"], "Back on the primary.");
    assert!(!events.iter().any(|e| e["event"]["event"] == "model_fallback"));
    assert_eq!(models(&mock)[3], "mock-model", "the next send tries the session's model first");

    // A bad request is the request's fault: no fallback.
    w.write(json!({"type": "send", "id": "3", "message": "bad"})).await;
    let (events, r) = w.result_for("3").await;
    assert_eq!(r["status"], "error", "{r}");
    assert!(!events.iter().any(|e| e["event"]["event"] == "model_fallback"));
    assert_eq!(models(&mock).len(), 5);
}

#[tokio::test]
async fn a_0_2_client_gets_the_fallback_without_the_event() {
    let mock = MockServer::start(vec![
        Reply::status(404, "{\"error\": {\"message\": \"model not found\"}}"),
        Reply::text(&["from the fallback"]),
    ])
    .await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let (mut w, _) = w.init("0.2.0", json!({"fallback_model": "mock-small"})).await;
    w.write(json!({"type": "send", "id": "1", "message": "hi"})).await;
    let (events, r) = w.result_for("1").await;
    assert_eq!(r["response"], "from the fallback", "{r}");
    assert!(events.iter().all(|e| e["event"]["event"] != "model_fallback"), "{events:?}");
    assert_eq!(models(&mock), ["mock-model", "mock-small"]);
}

#[tokio::test]
async fn the_claude_sdks_fallback_model_takes_over_after_the_primary_fails() {
    let mock = MockServer::start(vec![
        Reply::status(500, "{\"error\": {\"message\": \"primary down\"}}"),
        Reply::text(&["Answered by the fallback."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"model": "big-model", "fallback_model": "small-model"},
        "steps": [{"op": "query", "text": "hi"}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let t = turn(&r, 0);
    let notice = t.iter().find(|m| m["kind"] == "SystemMessage" && m["subtype"] == "model_fallback");
    let notice = notice.unwrap_or_else(|| panic!("no model_fallback message: {t:?}"));
    assert_eq!(notice["data"]["fallback_model"], "small-model", "{notice}");
    let res = result(&t);
    assert_eq!(res["subtype"], "success", "{res}");
    assert_eq!(res["result"], "Answered by the fallback.");
    assert_eq!(models(&mock), ["big-model", "small-model"]);
}
