//! Approval modes, permission rules and the opt-in permission_response.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::tools::call;
use super::worker::{Worker, event, mock_worker, names};

async fn worker(envs: &[(&str, &str)], extra: Value) -> (Worker, MockServer) {
    mock_worker(vec![], envs, extra).await
}

#[tokio::test]
async fn suggest_mode_denies_writes_for_a_client_that_cannot_answer() {
    let (mut w, mock) = worker(&[], json!({"approval_mode": "suggest"})).await;
    let (events, out) = call(&mut w, &mock, "write_file", json!({"file_path": "x.txt", "content": "x"})).await;
    assert_eq!(names(&events)[1..4], ["tool_start", "permission_request", "permission_denied"]);
    let req = event(&events, "permission_request");
    assert_eq!(req["name"], "write_file");
    assert_eq!(req["reason"], "write_file (write) requires approval in suggest mode");
    assert_eq!(req["args"], json!({"file_path": "x.txt", "content": "x"}));
    assert!(req["request_id"].is_string());
    assert_eq!(event(&events, "permission_denied")["name"], "write_file");
    assert!(out.contains("permission denied"), "{out}");
    assert!(!w.workspace.path().join("x.txt").exists());
    let (events, _) = call(&mut w, &mock, "bash", json!({"command": "touch y"})).await;
    assert_eq!(event(&events, "permission_request")["reason"], "bash (execute) requires approval in suggest mode");
    assert!(!w.workspace.path().join("y").exists());
    let (events, out) = call(&mut w, &mock, "grep", json!({"pattern": "x"})).await;
    assert!(!names(&events).contains(&"permission_request".to_owned()), "reads need no approval");
    assert!(out.contains("no matches"));
}

#[tokio::test]
async fn auto_edit_mode_allows_edits_but_not_bash() {
    let (mut w, mock) = worker(&[], json!({"approval_mode": "auto-edit"})).await;
    let (events, _) = call(&mut w, &mock, "write_file", json!({"file_path": "x.txt", "content": "x"})).await;
    assert!(!names(&events).iter().any(|n| n.starts_with("permission")));
    assert!(w.workspace.path().join("x.txt").exists());
    let (events, _) = call(&mut w, &mock, "bash", json!({"command": "touch y"})).await;
    assert!(names(&events).contains(&"permission_denied".to_owned()));
    assert!(!w.workspace.path().join("y").exists());
}

#[tokio::test]
async fn the_mode_can_come_from_the_environment() {
    let (mut w, mock) = worker(&[("PIRN_APPROVAL_MODE", "suggest")], json!({})).await;
    let (events, _) = call(&mut w, &mock, "bash", json!({"command": "true"})).await;
    assert!(names(&events).contains(&"permission_request".to_owned()));
}

#[tokio::test]
async fn plan_mode_hides_writes_and_ends_with_the_plan() {
    let mock = MockServer::start(vec![
        Reply::tool("edit_file", json!({"file_path": "a", "old_string": "x", "new_string": "y"})),
        Reply::text(&["1. Read main.rs\n", "2. Fix the bug"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"approval_mode": "plan"})).await;
    w.write(json!({"type":"send","id":"p","message":"fix the bug"})).await;
    let (events, r) = w.result_for("p").await;
    let req = &mock.requests()[0].body;
    let tools: Vec<&str> =
        req["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["read_file", "glob", "grep", "todo_write"], "plan mode keeps the plan tool");
    assert!(req["messages"][0]["content"].as_str().unwrap().contains("plan mode"));
    assert!(event(&events, "permission_denied")["reason"].as_str().unwrap().contains("plan mode"));
    let plan = "1. Read main.rs\n2. Fix the bug";
    assert_eq!(event(&events, "plan_complete")["plan"], plan);
    assert_eq!(r["status"], "ok");
    assert_eq!(r["response"], plan);
    assert_eq!(names(&events).last().unwrap(), "plan_complete");
}

#[tokio::test]
async fn rules_deny_beats_ask_beats_allow() {
    let perms = json!({"permissions": {
        "allow": ["bash(git *)", "bash(echo *)"],
        "ask": ["bash(git commit*)", "write_file(.env*)"],
        "deny": ["bash(git push*)", "read_file(secrets/**)"]
    }, "approval_mode": "suggest"});
    let (mut w, mock) = worker(&[], perms).await;
    std::fs::create_dir_all(w.workspace.path().join("secrets")).unwrap();
    std::fs::write(w.workspace.path().join("secrets/key"), "k").unwrap();
    let (events, out) = call(&mut w, &mock, "bash", json!({"command": "git push origin main"})).await;
    assert!(!names(&events).contains(&"permission_request".to_owned()), "deny needs no request");
    assert_eq!(event(&events, "permission_denied")["reason"], "bash is denied by the rule bash(git push*)");
    assert!(out.contains("denied"));
    let (events, _) = call(&mut w, &mock, "bash", json!({"command": "git commit -m x"})).await;
    assert_eq!(event(&events, "permission_request")["reason"], "bash requires approval by the rule bash(git commit*)");
    let (events, out) = call(&mut w, &mock, "bash", json!({"command": "echo allowed"})).await;
    assert!(!names(&events).iter().any(|n| n.starts_with("permission")), "allow beats suggest mode");
    assert!(out.contains("allowed"));
    let (events, _) = call(&mut w, &mock, "read_file", json!({"file_path": "./secrets/key"})).await;
    assert!(names(&events).contains(&"permission_denied".to_owned()));
    let (events, _) = call(&mut w, &mock, "write_file", json!({"file_path": ".env.local", "content": "A=1"})).await;
    assert!(names(&events).contains(&"permission_request".to_owned()));
}

#[tokio::test]
async fn bad_rules_and_modes_fail_init() {
    let mock = MockServer::start(vec![]).await;
    for config in [
        json!({"approval_mode": "yolo"}),
        json!({"permissions": {"deny": ["rm(-rf)"]}}),
        json!({"allowed_paths": ["/does/not/exist"]}),
    ] {
        let mut w = Worker::spawn(&mock.base_url(), &[]).await;
        let mut c = json!({"model": "m", "system_prompt": "s", "tools": ["bash"]});
        c.as_object_mut().unwrap().extend(config.as_object().unwrap().clone());
        w.write(json!({"type":"init","id":"i","config": c})).await;
        let r = w.next().await;
        assert_eq!(r["error"]["code"], "protocol_error", "{config}: {r}");
    }
}

/// Starts a bash call under suggest mode with answers enabled; returns the
/// worker, the mock and the permission request's id.
async fn waiting_call(timeout_ms: u64) -> (Worker, MockServer, String) {
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "touch approved"})), Reply::text(&["ok"])]).await;
    let extra = json!({"approval_mode": "suggest", "permission_responses": true, "permission_timeout_ms": timeout_ms});
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    let lines = w.until(|v| v["event"]["event"] == "permission_request").await;
    let id = lines.last().unwrap()["event"]["request_id"].as_str().unwrap().to_owned();
    (w, mock, id)
}

#[tokio::test]
async fn an_opted_in_client_can_allow() {
    let (mut w, _mock, id) = waiting_call(60_000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(w.status("st").await["active"], true, "the call waits");
    assert!(!w.workspace.path().join("approved").exists());
    w.write(json!({"type":"permission_response","id":"a1","request_id":id,"decision":"allow"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok");
    assert!(w.workspace.path().join("approved").exists());
    // A second answer is refused.
    w.write(json!({"type":"permission_response","id":"a2","request_id":id,"decision":"deny"})).await;
    let late = w.next().await;
    assert_eq!((late["id"].as_str(), late["error"]["code"].as_str()), (Some("a2"), Some("protocol_error")));
    w.write(json!({"type":"permission_response","id":"a3","request_id":"perm_nope","decision":"deny"})).await;
    assert!(w.next().await["error"]["message"].as_str().unwrap().contains("no permission request"));
}

#[tokio::test]
async fn an_opted_in_client_can_deny() {
    let (mut w, mock, id) = waiting_call(60_000).await;
    w.write(json!({"type":"permission_response","id":"a1","request_id":id,"decision":"deny"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok");
    assert_eq!(event(&events, "permission_denied")["reason"], "denied by the user");
    assert!(!w.workspace.path().join("approved").exists());
    // system, the listing note, the request, the call, its result.
    let tool_msg = mock.requests()[1].body["messages"][4]["content"].as_str().unwrap().to_owned();
    assert!(tool_msg.contains("denied by the user"), "{tool_msg}");
}

#[tokio::test]
async fn an_unanswered_request_times_out_as_a_denial() {
    let (mut w, _mock, _) = waiting_call(300).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok");
    assert_eq!(event(&events, "permission_denied")["reason"], "no answer within 300 ms");
}

#[tokio::test]
async fn cancel_works_while_a_call_waits_for_permission() {
    let (mut w, _mock, id) = waiting_call(60_000).await;
    let t = Instant::now();
    w.write(json!({"type":"cancel","id":"c","target_id":"s"})).await;
    let (_, r) = w.result_for("s").await;
    assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed());
    assert_eq!(r["error"]["code"], "cancelled");
    w.write(json!({"type":"permission_response","id":"late","request_id":id,"decision":"allow"})).await;
    assert_eq!(w.next().await["error"]["code"], "protocol_error", "the request expired with the send");
    assert!(!w.workspace.path().join("approved").exists());
}

#[tokio::test]
async fn permission_responses_need_the_opt_in() {
    let (mut w, _) = worker(&[], json!({})).await;
    w.write(json!({"type":"permission_response","id":"x","request_id":"perm_1","decision":"allow"})).await;
    let r = w.next().await;
    assert!(r["error"]["message"].as_str().unwrap().contains("permission_responses"), "{r}");
}
