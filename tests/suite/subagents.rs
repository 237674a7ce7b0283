//! Subagents through the real binary (0.3.0 JSONL) against the mock
//! model: a `task` call runs a child send with the operator's prompt and a
//! narrower tool set; its events arrive marked with the parent's call id;
//! its answer is the call's result and its writes are the send's facts;
//! its budget is carved out of the parent's and stops it; cancelling the
//! parent kills the child's command; a 0.2.0 session cannot have agents.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply, last_tool_text};
use super::worker::{Worker, until_gone};

fn agents() -> Value {
    json!({"writer": {"description": "writes one file it is told to", "prompt": "You are the writer subagent.",
        "tools": ["Write", "Read"], "maxToolCalls": 2}})
}

fn task(prompt: &str) -> Reply {
    Reply::tool("task", json!({"description": "write a file", "prompt": prompt, "subagent_type": "writer"}))
}

fn tool_names(body: &Value) -> Vec<String> {
    body["tools"].as_array().map_or_else(Vec::new, |t| {
        t.iter().map(|t| t["function"]["name"].as_str().unwrap_or_default().to_owned()).collect()
    })
}

#[tokio::test]
async fn a_task_call_runs_a_child_whose_events_nest_and_whose_answer_and_writes_reach_the_parent() {
    let mock = MockServer::start(vec![
        task("Write a.txt holding hi."),
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "hi\n"})),
        Reply::text(&["Wrote a.txt."]),
        Reply::text(&["The writer wrote a.txt."]),
    ])
    .await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"agents": agents()})).await;
    assert_eq!(ok["type"], "init_ok");
    w.write(json!({"type": "send", "id": "s", "message": "Have a.txt written."})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("a.txt")).unwrap(), "hi\n");
    assert_eq!(r["files_changed"], json!(["a.txt"]), "the child's write is the send's: {r}");
    assert_eq!(r["usage"]["prompt_tokens"], 60, "every model call counted, the child's too: {r}");
    let reqs = mock.requests();
    // The parent's two turns are its iterations; the child's two calls are side calls.
    assert_eq!((&r["iterations"], &r["side_calls"]["calls"]), (&json!(2), &json!(2)), "{r}");
    assert_eq!(r["side_calls"]["usage"]["prompt_tokens"], 30, "{r}");
    assert_eq!(reqs.len(), 4);
    // The parent is offered the task tool; the child only what its definition allows.
    assert!(tool_names(&reqs[0].body).contains(&"task".to_owned()), "{:?}", tool_names(&reqs[0].body));
    let spec = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "task").unwrap();
    assert!(spec["function"]["description"].as_str().unwrap().contains("writer: writes one file"), "{spec}");
    assert_eq!(tool_names(&reqs[1].body), ["read_file", "write_file"]);
    assert_eq!(reqs[1].body["messages"][0]["content"], "You are the writer subagent.");
    assert_eq!(reqs[1].body["messages"][1]["content"], "Write a.txt holding hi.");
    let told = last_tool_text(&reqs[3].body);
    assert!(told.starts_with("Wrote a.txt.") && told.contains("the subagent changed a.txt"), "{told}");
    // Events: the task call's, and the child's nested under it.
    let task_start =
        events.iter().find(|e| e["event"]["event"] == "tool_start" && e["event"]["name"] == "task").unwrap();
    let task_id = task_start["event"]["call_id"].as_str().unwrap();
    assert!(task_start.get("parent_call_id").is_none(), "{task_start}");
    let nested: Vec<&Value> = events.iter().filter(|e| e["parent_call_id"] == task_id).collect();
    let kinds: Vec<&str> = nested.iter().map(|e| e["event"]["event"].as_str().unwrap()).collect();
    assert!(
        kinds.contains(&"tool_start") && kinds.contains(&"tool_end") && kinds.contains(&"content_delta"),
        "{kinds:?}"
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["event_seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|p| p[1] == p[0] + 1), "one gapless sequence per send: {seqs:?}");
    let task_end =
        events.iter().position(|e| e["event"]["event"] == "tool_end" && e["event"]["name"] == "task").unwrap();
    let last_nested = events.iter().rposition(|e| e["parent_call_id"] == task_id).unwrap();
    assert!(last_nested < task_end, "the child's events come before the task call ends");
}

#[tokio::test]
async fn the_childs_budget_stops_it_and_a_02_session_has_no_agents() {
    // maxToolCalls 2: the third call of the child does not run.
    let mock = MockServer::start(vec![
        task("Write three files."),
        Reply::tool("write_file", json!({"file_path": "1.txt", "content": "1"})),
        Reply::tool("write_file", json!({"file_path": "2.txt", "content": "2"})),
        Reply::tool("write_file", json!({"file_path": "3.txt", "content": "3"})),
        Reply::text(&["Stopped."]),
        Reply::text(&["The writer ran out of tool calls."]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"agents": agents()})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Write three files."})).await;
    let (_, r) = w.result_for("s").await;
    let ws = w.workspace.path();
    assert!(ws.join("1.txt").exists() && ws.join("2.txt").exists());
    assert!(!ws.join("3.txt").exists(), "the child's third call ran past its budget");
    assert_eq!(r["files_changed"], json!(["1.txt", "2.txt"]), "{r}");

    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let config = json!({"model": "m", "system_prompt": "s", "tools": [], "agents": agents()});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.2.0", "config": config})).await;
    let err = w.next().await;
    assert!(err["type"] != "init_ok" && err.to_string().contains("agents"), "{err}");
}

#[tokio::test]
async fn cancelling_the_parent_kills_the_childs_command() {
    let marker = format!("pirn-subagent-{}", std::process::id());
    let agents = json!({"runner": {"description": "runs commands", "prompt": "You run commands.", "tools": ["Bash"]}});
    let mock = MockServer::start(vec![
        Reply::tool("task", json!({"description": "wait", "prompt": "Wait.", "subagent_type": "runner"})),
        Reply::tool("bash", json!({"command": format!("sleep 30 # {marker}")})),
        Reply::text(&["never"]),
    ])
    .await;
    let (mut w, _) =
        Worker::ready(&mock.base_url(), &[], json!({"agents": agents, "approval_mode": "full-auto"})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Wait."})).await;
    w.until(|e| e["event"]["event"] == "tool_start" && e["event"]["name"] == "bash" && e["parent_call_id"].is_string())
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = Instant::now();
    w.write(json!({"type": "cancel", "id": "c", "target_id": "s"})).await;
    let (_, r) = w.result_for("s").await;
    assert!(sent.elapsed() < Duration::from_secs(2), "{:?}", sent.elapsed());
    assert_eq!(r["error"]["code"], "cancelled", "{r}");
    assert_eq!(until_gone(&marker).await, Vec::<String>::new(), "the child's command survived the cancel");
}

#[tokio::test]
async fn the_python_sdks_agents_run_as_subagents_whose_messages_carry_the_parent_tool_use_id() {
    use super::claude::{python, result, turn, workspace};
    let mock = MockServer::start(vec![
        task("Write a.txt holding hi."),
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "hi\n"})),
        Reply::text(&["Wrote a.txt."]),
        Reply::text(&["Done: the writer wrote a.txt."]),
    ])
    .await;
    let ws = workspace(&[]);
    let agents = json!({"writer": {"description": "writes one file it is told to",
        "prompt": "You are the writer subagent.", "tools": ["Write"]}});
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions", "agents": agents},
        "steps": [{"op": "query", "text": "Have a.txt written."}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "hi\n");
    let t = turn(&r, 0);
    let init = &t[0]["data"];
    assert_eq!(init["agents"], json!(["writer"]), "{init}");
    assert!(init["tools"].as_array().unwrap().contains(&json!("Agent")), "{init}");
    assert_eq!(mock.requests()[1].body["messages"][0]["content"], "You are the writer subagent.");
    let uses: Vec<(&Value, &Value)> = t
        .iter()
        .filter(|m| m["kind"] == "AssistantMessage")
        .flat_map(|m| m["content"].as_array().unwrap().iter().map(move |b| (b, &m["parent_tool_use_id"])))
        .filter(|(b, _)| b.get("name").is_some())
        .collect();
    assert_eq!(uses.len(), 2, "{t:?}");
    let (agent, top) = uses[0];
    assert_eq!((agent["name"].as_str(), top.is_null()), (Some("Agent"), true), "{t:?}");
    assert_eq!(agent["input"]["subagent_type"], "writer");
    let (write, parent) = uses[1];
    assert_eq!(write["name"], "Write");
    assert_eq!(parent, &agent["id"], "the child's call is nested under the Agent call");
    let results: Vec<&Value> = t.iter().filter(|m| m["kind"] == "UserMessage").collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0]["parent_tool_use_id"], agent["id"], "{:?}", results[0]);
    assert_eq!(results[1]["content"][0]["tool_use_id"], agent["id"]);
    assert!(results[1]["parent_tool_use_id"].is_null());
    // Subagent text is not forwarded by default: no nested text message.
    let nested_text = t.iter().any(|m| {
        m["kind"] == "AssistantMessage"
            && !m["parent_tool_use_id"].is_null()
            && m["content"].as_array().unwrap().iter().any(|b| b.get("text").is_some())
    });
    assert!(!nested_text, "{t:?}");
    assert_eq!(result(&t)["result"], "Done: the writer wrote a.txt.");
}
