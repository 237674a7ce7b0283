//! The plan tool, `todo_write`, through the binary: a plan changed three
//! times is three `plan` events carrying the whole list; `status_ok.plan`
//! holds the last one, in this process and in a resumed or forked one; a
//! call that is not a plan is the model's error and changes nothing; the
//! tool is not offered to a 0.2.0 session, nor by the `small` profile
//! unless the config asks for it. Through the official SDKs: three ACP
//! `plan` updates, and three `TodoWrite` tool uses in Claude Code's shape.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;
use super::{acp, claude};

/// Steps of a plan as `todo_write` takes them: `(content, status)`.
pub fn plan(steps: &[(&str, &str)]) -> Value {
    let todos: Vec<Value> = steps.iter().map(|(c, s)| json!({"content": c, "status": s})).collect();
    json!({ "todos": todos })
}

/// The three plans of a task done step by step, as a capable model keeps
/// them (Claude Code's TodoWrite: the whole list every time).
pub fn three_plans() -> [Value; 3] {
    [
        plan(&[("Read the config", "in_progress"), ("Fix the timeout", "pending"), ("Run the tests", "pending")]),
        plan(&[("Read the config", "completed"), ("Fix the timeout", "in_progress"), ("Run the tests", "pending")]),
        plan(&[("Read the config", "completed"), ("Fix the timeout", "completed"), ("Run the tests", "completed")]),
    ]
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

fn chat_requests(mock: &MockServer) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body).collect()
}

#[tokio::test]
async fn a_plan_changed_three_times_is_three_plan_events_and_the_status_holds_the_last() {
    let [a, b, c] = three_plans();
    let script = vec![
        Reply::tool("todo_write", a.clone()),
        Reply::tool("todo_write", b.clone()),
        Reply::tool("todo_write", json!({"todos": [{"content": "", "status": "pending"}]})),
        Reply::tool("todo_write", c.clone()),
        Reply::text(&["Done: the timeout is fixed."]),
    ];
    let mock = MockServer::start(script).await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"workspace_listing": false})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type": "send", "id": "1", "message": "fix the timeout"})).await;
    let (events, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    let plans: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "plan").map(|e| &e["event"]).collect();
    assert_eq!(plans.len(), 3, "one event per accepted change: {events:?}");
    for (event, sent) in plans.iter().zip([&a, &b, &c]) {
        assert_eq!(event["todos"], sent["todos"], "the whole list each time");
    }
    // Each plan event comes between its call's tool_start and tool_end.
    let names: Vec<&str> = events.iter().filter_map(|e| e["event"]["event"].as_str()).collect();
    let first = names.iter().position(|n| *n == "plan").unwrap();
    assert_eq!(&names[first - 1..=first + 1], ["tool_start", "plan", "tool_end"], "{names:?}");
    let ends: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "tool_end").map(|e| &e["event"]).collect();
    assert_eq!(ends[2]["is_error"], true, "an empty step is refused: {}", ends[2]);
    assert!(ends[2]["result_preview"].as_str().unwrap().contains("step 1"), "{}", ends[2]);
    assert_eq!(ends[3]["result_preview"], "Plan updated: 3 steps (3 completed, 0 in progress, 0 pending).");
    assert!(offered(&chat_requests(&mock)[0]).contains(&"todo_write".to_owned()));
    assert_eq!(r["files_changed"], json!([]), "a plan is not a file");
    assert_eq!(w.status("s").await["plan"], c["todos"]);
    w.write(json!({"type": "shutdown", "id": "x"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));

    // A resumed session has the plan its log ends with; a fork cut before
    // the last change has the plan as it stood there.
    let (mut resumed, _) = Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": sid})).await;
    assert_eq!(resumed.status("s").await["plan"], c["todos"]);
    resumed.write(json!({"type": "shutdown", "id": "x"})).await;
    resumed.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(resumed.exit_code().await, Some(0));
    let at = json!({"resume_session_id": sid, "fork_session": true, "resume_at_message": 5});
    let (mut fork, _) = Worker::ready(&mock.base_url(), &[], at).await;
    assert_eq!(fork.status("s").await["plan"], b["todos"], "messages 4 and 5: the second plan's call and result");
}

#[tokio::test]
async fn no_plan_tool_for_0_2_0_nor_for_the_small_profile_unless_asked() {
    let mock = MockServer::start((0..5).map(|_| Reply::text(&["hi"])).collect()).await;
    let tools_of = |extra: Value, version: &'static str| {
        let url = mock.base_url();
        async move {
            let (mut w, _) = Worker::spawn(&url, &[]).await.init(version, extra).await;
            w.write(json!({"type": "send", "id": "1", "message": "hello"})).await;
            assert_eq!(w.result_for("1").await.1["status"], "ok");
        }
    };
    tools_of(json!({}), "0.2.0").await;
    tools_of(json!({"profile": "small"}), "0.3.0").await;
    tools_of(json!({"profile": "small", "plan_tool": true}), "0.3.0").await;
    tools_of(json!({"plan_tool": false}), "0.3.0").await;
    tools_of(json!({"tools": []}), "0.3.0").await;
    let bodies: Vec<Vec<String>> = chat_requests(&mock).iter().map(offered).collect();
    let has = |i: usize| bodies[i].contains(&"todo_write".to_owned());
    assert_eq!(bodies.len(), 5, "{bodies:?}");
    assert_eq!([has(0), has(1), has(2), has(3), has(4)], [false, false, true, false, false], "{bodies:?}");

    // 0.2.0 never sees a plan event, so it may not ask for the tool.
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let config = json!({"model": "m", "system_prompt": "", "tools": ["read_file"], "plan_tool": true});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.2.0", "config": config})).await;
    let refused = w.next().await;
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("plan_tool"), "{refused}");
}

/// The mock's replies for a task planned in three steps, then answered.
fn planned_task() -> Vec<Reply> {
    let mut replies: Vec<Reply> = three_plans().into_iter().map(|p| Reply::tool("todo_write", p)).collect();
    replies.push(Reply::text(&["All three steps are done."]));
    replies
}

#[tokio::test]
async fn an_acp_editor_gets_three_plan_updates() {
    let mock = MockServer::start(planned_task()).await;
    let ws = acp::workspace(&[]);
    let script = json!({"cwd": ws.path(), "steps": [{"op": "new"}, {"op": "prompt", "text": "Fix the timeout."}]});
    let r = acp::drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    let plans: Vec<&Value> = r["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert_eq!(plans.len(), 3, "{r}");
    for (update, sent) in plans.iter().zip(three_plans()) {
        let entries: Vec<(String, String)> = update["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["content"].as_str().unwrap().to_owned(), e["status"].as_str().unwrap().to_owned()))
            .collect();
        let want: Vec<(String, String)> = sent["todos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["content"].as_str().unwrap().to_owned(), t["status"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(entries, want);
    }
    let call = r["updates"].as_array().unwrap().iter().find(|u| u["update"]["sessionUpdate"] == "tool_call").unwrap();
    assert_eq!(call["update"]["kind"], "think", "{call}");
}

#[tokio::test]
async fn the_claude_sdk_sees_three_todo_write_uses_in_claude_codes_shape() {
    let mock = MockServer::start(planned_task()).await;
    let ws = claude::workspace(&[]);
    let script = json!({"cwd": ws.path(), "prompt": "Fix the timeout.", "options": {}});
    let r = claude::python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let t = claude::turn(&r, 0);
    assert!(t[0]["data"]["tools"].as_array().unwrap().contains(&json!("TodoWrite")), "{}", t[0]);
    let uses: Vec<&Value> = t
        .iter()
        .filter(|m| m["kind"] == "AssistantMessage")
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["name"] == "TodoWrite")
        .collect();
    assert_eq!(uses.len(), 3, "{t:?}");
    let last = &uses[2]["input"]["todos"];
    assert_eq!(last[0], json!({"content": "Read the config", "status": "completed", "activeForm": "Read the config"}));
    assert_eq!(claude::result(&t)["result"], "All three steps are done.");

    // --tools without TodoWrite (the SDK's `tools` option) leaves it out.
    let mock = MockServer::start(vec![Reply::text(&["ok"])]).await;
    let script = json!({"cwd": ws.path(), "prompt": "hi", "options": {"tools": ["Read"]}});
    let r = claude::python(&mock, script).await;
    assert!(!claude::turn(&r, 0)[0]["data"]["tools"].as_array().unwrap().contains(&json!("TodoWrite")));
    assert_eq!(offered(&chat_requests(&mock)[0]), ["read_file"]);
}
