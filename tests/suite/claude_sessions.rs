//! Fork, resume-at and file rewind on Claude Code's surface, driven by the
//! official Python Agent SDK (`fork_session`, `resume_session_at`,
//! `enable_file_checkpointing` with `rewind_files`).

use serde_json::{Value, json};

use super::claude::{python, result, turn, workspace};
use super::mock::{MockServer, Reply};

fn chat_texts(mock: &MockServer, i: usize) -> Vec<String> {
    let reqs: Vec<Value> =
        mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body).collect();
    reqs[i]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn rewind_files_puts_back_each_turns_files() {
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "one\n"})),
        Reply::text(&["Wrote it."]),
        Reply::tool("read_file", json!({"file_path": "a.txt"})),
        Reply::tool("edit_file", json!({"file_path": "a.txt", "old_string": "one", "new_string": "two"})),
        Reply::text(&["Edited it."]),
    ])
    .await;
    let ws = workspace(&[("keep.txt", "untouched\n")]);
    let options = json!({"permission_mode": "bypassPermissions", "enable_file_checkpointing": true,
        "extra_args": {"replay-user-messages": null}});
    let script = json!({"cwd": ws.path(), "options": options, "steps": [
        {"op": "query", "text": "write a.txt"},
        {"op": "query", "text": "edit a.txt"},
        {"op": "rewind", "turn": 1},
    ]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(result(&turn(&r, 1))["result"], "Edited it.");
    assert_eq!(turn(&r, 2)[0]["kind"], "Rewound", "{}", r["turns"][2]);
    assert_eq!(std::fs::read_to_string(ws.path().join("a.txt")).unwrap(), "one\n", "back to after the first turn");

    // A second client: both turns, then back to before the first (a.txt did not exist).
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "b.txt", "content": "bee\n"})),
        Reply::text(&["Wrote b."]),
    ])
    .await;
    let script = json!({"cwd": ws.path(), "options": options, "steps": [
        {"op": "query", "text": "write b.txt"},
        {"op": "rewind", "turn": 0},
        {"op": "rewind", "turn": 0},
    ]});
    let r = python(&mock, script).await;
    assert_eq!(turn(&r, 1)[0]["kind"], "Rewound", "{}", r["turns"][1]);
    assert!(!ws.path().join("b.txt").exists(), "created in the turn: deleted");
    assert_eq!(turn(&r, 2)[0]["kind"], "RewindError", "spent: {}", r["turns"][2]);
    assert_eq!(std::fs::read_to_string(ws.path().join("keep.txt")).unwrap(), "untouched\n");
}

#[tokio::test]
async fn fork_session_and_resume_session_at_an_assistant_message() {
    let mock = MockServer::start(vec![
        Reply::text(&["First answer."]),
        Reply::text(&["Second answer."]),
        Reply::text(&["Forked answer."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"}, "steps": [
        {"op": "query", "text": "first question"},
        {"op": "query", "text": "second question"},
    ]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let first = turn(&r, 0);
    let sid = result(&first)["session_id"].as_str().unwrap().to_owned();
    let at = first.iter().find(|m| m["kind"] == "AssistantMessage").unwrap()["uuid"].as_str().unwrap().to_owned();
    let options = json!({"permission_mode": "bypassPermissions", "resume": sid, "fork_session": true,
        "resume_session_at": at});
    let r = python(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "third question"})).await;
    let forked = result(&turn(&r, 0));
    assert_eq!(forked["result"], "Forked answer.");
    assert_ne!(forked["session_id"].as_str().unwrap(), sid, "a fork has its own id");
    let texts = chat_texts(&mock, 2);
    assert!(texts.contains(&"first question".to_owned()) && texts.contains(&"First answer.".to_owned()), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("second")), "cut after the first answer: {texts:?}");
    assert_eq!(texts.last().unwrap(), "third question");
}

#[tokio::test]
async fn resume_session_at_a_tool_calls_message_keeps_that_call() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "n.txt"})),
        Reply::text(&["It says n."]),
        Reply::text(&["Later answer."]),
        Reply::text(&["Resumed."]),
    ])
    .await;
    let ws = workspace(&[("n.txt", "n\n")]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"}, "steps": [
        {"op": "query", "text": "read n.txt"},
        {"op": "query", "text": "later question"},
    ]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let first = turn(&r, 0);
    let sid = result(&first)["session_id"].as_str().unwrap().to_owned();
    let call = first
        .iter()
        .find(|m| m["kind"] == "AssistantMessage" && m["content"][0].get("name").is_some())
        .expect("the tool call's message");
    let options = json!({"permission_mode": "bypassPermissions", "resume": sid,
        "resume_session_at": call["uuid"]});
    let r = python(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "go on"})).await;
    assert_eq!(result(&turn(&r, 0))["result"], "Resumed.");
    let texts = chat_texts(&mock, 3);
    assert!(texts.contains(&"read n.txt".to_owned()), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("It says n.") || t.contains("later")), "cut at the call: {texts:?}");
    assert!(texts.iter().any(|t| t.contains("no result: the conversation was cut")), "the call's result: {texts:?}");
}
