//! MCP servers as tool sources, through the binary: the server is a real
//! MCP server on stdio (`pirn mcp`, built on the official Rust SDK), started
//! by the session from `config.mcp_servers`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, event, names};

/// A stdio MCP server entry: `pirn mcp` serving `tools`, tagged with a
/// unique allowed path so the test can find its processes.
fn pirn_mcp(name: &str, tools: &str, tag: &std::path::Path) -> Value {
    json!({
        "name": name,
        "command": env!("CARGO_BIN_EXE_pirn"),
        "args": ["mcp", "--tools", tools, "--allowed-path", tag],
    })
}

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) {
                found.push(format!("{}: {cmd}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

async fn until_gone(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn mcp_tools_follow_the_allowlist_and_their_results_reach_the_model() {
    let mock = MockServer::start(vec![
        Reply::tool("mcp__files__read_file", json!({"file_path": "hello.txt"})),
        Reply::text(&["it says hi"]),
    ])
    .await;
    let tag = tempfile::tempdir().unwrap();
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("hello.txt"), "hi from the file\n").unwrap();
    let config = json!({
        "tools": ["read_file", "mcp__files__read_*", "mcp__files__grep"],
        "mcp_servers": [pirn_mcp("files", "read_file,glob,grep,bash", tag.path())],
    });
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s1", "message": "what does hello.txt say?"})).await;
    let (events, result) = w.result_for("s1").await;
    assert_eq!(result["response"], "it says hi", "{result}");
    assert_eq!(event(&events, "tool_start")["name"], "mcp__files__read_file");
    assert_eq!(event(&events, "tool_end")["is_error"], false, "{:?}", names(&events));
    let requests = mock.requests();
    let advertised: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    // Exactly what the allowlist names: glob and bash are served but not enabled.
    assert_eq!(advertised, ["read_file", "mcp__files__grep", "mcp__files__read_file"]);
    let grep =
        requests[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__files__grep");
    assert_eq!(grep.unwrap()["function"]["parameters"]["required"], json!(["pattern"]));
    let tool_message = requests[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool_message["content"].as_str().unwrap().contains("hi from the file"), "{tool_message}");
    // Shutdown takes the server with it.
    let marker = tag.path().to_str().unwrap().to_owned();
    assert_eq!(processes_with(&marker).len(), 1, "{:?}", processes_with(&marker));
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    assert_eq!(w.exit_code().await, Some(0));
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_cancel_reaches_the_mcp_server_and_approval_modes_apply() {
    let tag = tempfile::tempdir().unwrap();
    let sleeper = format!("sleep 77{}.5", std::process::id() % 1000);
    let mock = MockServer::start(vec![
        Reply::tool("mcp__sh__bash", json!({"command": sleeper})),
        // suggest mode: bash is not read-only, so it needs an answer nobody gives.
        Reply::tool("mcp__sh__bash", json!({"command": "echo ran > ran.txt"})),
        Reply::tool("mcp__sh__glob", json!({"pattern": "*"})),
        Reply::text(&["done"]),
    ])
    .await;
    let config = json!({
        "tools": ["mcp__sh__*"],
        "mcp_servers": [pirn_mcp("sh", "bash,glob", tag.path())],
    });
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config).await;
    w.write(json!({"type": "send", "id": "s1", "message": "sleep"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&sleeper).is_empty() {
        assert!(Instant::now() < deadline, "the server never ran {sleeper}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.write(json!({"type": "cancel", "id": "c1", "target_id": "s1"})).await;
    let (_, result) = w.result_for("s1").await;
    assert_eq!(result["error"]["code"], "cancelled", "{result}");
    // notifications/cancelled made the server cancel the call: its bash is gone.
    assert_eq!(until_gone(&sleeper).await, Vec::<String>::new());
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    w.exit_code().await;

    let (mut w, _) = Worker::ready(
        &mock.base_url(),
        &[],
        json!({"tools": ["mcp__sh__*"], "approval_mode": "suggest", "mcp_servers": [pirn_mcp("sh", "bash,glob", tag.path())]}),
    )
    .await;
    w.write(json!({"type": "send", "id": "s2", "message": "write"})).await;
    let (events, result) = w.result_for("s2").await;
    assert_eq!(result["response"], "done", "{result}");
    let denied: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "permission_denied").collect();
    assert_eq!(denied.len(), 1, "{:?}", names(&events));
    assert_eq!(denied[0]["event"]["name"], "mcp__sh__bash");
    assert!(!w.workspace.path().join("ran.txt").exists());
    // glob is read-only: it ran unasked.
    let ends: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "tool_end").collect();
    assert_eq!(
        (ends[1]["event"]["name"].as_str(), ends[1]["event"]["is_error"].as_bool()),
        (Some("mcp__sh__glob"), Some(false))
    );
}

#[tokio::test]
async fn mcp_servers_fail_the_init_clearly_and_die_with_pirn() {
    let mock = MockServer::start(vec![Reply::text(&["x"])]).await;
    // Only 0.3.0 clients may ask for MCP servers.
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let cfg = json!({"model": "m", "system_prompt": "s", "tools": [],
        "mcp_servers": [{"name": "x", "command": "true"}]});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.2.0", "config": cfg})).await;
    let reply = w.next().await;
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("mcp_servers needs protocol_version 0.3.0"),
        "{reply}"
    );
    // A server that cannot start is named in the init error.
    for (server, expect) in [
        (json!({"name": "gone", "command": "/nonexistent/mcp-server"}), "MCP server \"gone\""),
        (json!({"name": "notmcp", "command": "true"}), "MCP server \"notmcp\": initialize"),
        (json!({"name": "bad name"}), "server name \"bad name\""),
        (json!({"name": "both", "command": "x", "url": "http://127.0.0.1:1/mcp"}), "either command"),
        (json!({"name": "http", "url": "http://127.0.0.1:9/mcp"}), "MCP server \"http\""),
    ] {
        let mut w = Worker::spawn(&mock.base_url(), &[]).await;
        let mut cfg = cfg.clone();
        cfg["mcp_servers"] = json!([server]);
        w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0", "config": cfg})).await;
        let reply = w.next().await;
        let message = reply["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains(expect), "{expect}: {reply}");
    }
    // SIGKILLed pirn: its server's supervisor takes the server down.
    let tag = tempfile::tempdir().unwrap();
    let marker = tag.path().to_str().unwrap().to_owned();
    let (mut w, _) =
        Worker::ready(&mock.base_url(), &[], json!({"tools": [], "mcp_servers": [pirn_mcp("k", "glob", tag.path())]}))
            .await;
    assert_eq!(processes_with(&marker).len(), 1);
    w.child.start_kill().unwrap();
    w.child.wait().await.unwrap();
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());
}
