//! The tools through the real binary: a scripted model calls them, the test
//! checks the files, the processes and what the model was told.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

/// Runs one tool call through pirn; returns the tool message the model got.
pub async fn call_tool(w: &mut Worker, mock: &MockServer, name: &str, args: Value) -> String {
    let before = mock.requests().len();
    mock.push(Reply::tool(name, args));
    mock.push(Reply::text(&["done"]));
    let id = format!("s{before}");
    w.write(json!({"type":"send","id":id,"message":"use the tool"}))
        .await;
    let (_, r) = w.result_for(&id).await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    let msgs = reqs[before + 1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn file_tools_round_trip() {
    let mock = MockServer::start(vec![]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path":"src/a.txt","content":"alpha\nbeta\ngamma\n"}),
    )
    .await;
    assert!(out.contains("17 bytes"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "alpha\nbeta\ngamma\n"
    );
    let out = call_tool(
        &mut w,
        &mock,
        "read_file",
        json!({"file_path":"src/a.txt","offset":2,"limit":1}),
    )
    .await;
    assert!(out.contains("     2\tbeta"), "{out}");
    assert!(out.contains("offset=3"), "{out}");
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path":"src/a.txt","old_string":"beta","new_string":"BETA"}),
    )
    .await;
    assert!(out.contains("BETA"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("src/a.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern":"**/*.txt"})).await;
    assert_eq!(out.trim(), "src/a.txt");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern":"gam+a"})).await;
    assert_eq!(out.trim(), "src/a.txt:3:gamma");
    let out = call_tool(
        &mut w,
        &mock,
        "bash",
        json!({"command":"echo out; echo err >&2; exit 3"}),
    )
    .await;
    assert!(
        out.contains("out\nerr\n") && out.contains("exit code 3"),
        "{out}"
    );
    let out = call_tool(
        &mut w,
        &mock,
        "read_file",
        json!({"file_path":"../../etc/passwd"}),
    )
    .await;
    assert!(out.contains("outside the workspace"), "{out}");
}
