//! Claude Code's headless surface (`pirn --output-format stream-json
//! --input-format stream-json …`) driven by the official Claude Agent
//! SDKs — Python `claude-agent-sdk` and TypeScript
//! `@anthropic-ai/claude-agent-sdk`, pinned, installed by
//! scripts/claude-sdk-client; the drivers are tests/claude/drive.{py,mjs} —
//! against the mock model, and `pirn -p` from a shell.

use std::time::Duration;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{counterpart, pirn_command, test_home};

/// Runs the Python driver with `script` against `mock`; its report.
pub(super) async fn python(mock: &MockServer, script: Value) -> Value {
    let report = python_report(mock, script).await;
    if !report.is_null() {
        assert_eq!(report["errors"], json!([]), "{report}");
    }
    report
}

/// As [`python`], errors left in the report for the caller to read.
pub(super) async fn python_report(mock: &MockServer, script: Value) -> Value {
    let Some(sdk) = counterpart("PIRN_TEST_CLAUDE_SDK") else { return Value::Null };
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/claude/drive.py");
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(format!("{sdk}/venv/bin/python"))
            .args([driver, env!("CARGO_BIN_EXE_pirn"), &script.to_string()])
            .env("PIRN_BASE_URL", mock.base_url())
            .env("PIRN_HOME", test_home())
            .env_remove("PIRN_LOG")
            .output(),
    )
    .await
    .expect("the Python SDK finishes within 90 s")
    .unwrap();
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    report
}

/// Runs the TypeScript driver with `script` against `mock`; its report.
pub(super) async fn typescript(mock: &MockServer, script: Value) -> Value {
    let Some(sdk) = counterpart("PIRN_TEST_CLAUDE_SDK") else { return Value::Null };
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/claude/drive.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new("node")
            .args([driver, &sdk, env!("CARGO_BIN_EXE_pirn"), &script.to_string()])
            .env("PIRN_BASE_URL", mock.base_url())
            .env("PIRN_HOME", test_home())
            .env_remove("PIRN_LOG")
            .output(),
    )
    .await
    .expect("the TypeScript SDK finishes within 90 s")
    .unwrap();
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["errors"], json!([]), "{report}");
    report
}

pub(super) fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

/// The messages of turn `i` of a Python report.
pub(super) fn turn(report: &Value, i: usize) -> Vec<Value> {
    report["turns"][i].as_array().cloned().unwrap_or_default()
}

/// The message kinds of a turn (stream events left out).
fn kinds(turn: &[Value]) -> Vec<String> {
    turn.iter().map(|m| m["kind"].as_str().unwrap().to_owned()).filter(|k| k != "StreamEvent").collect()
}

pub(super) fn result(turn: &[Value]) -> Value {
    turn.iter().find(|m| m["kind"] == "ResultMessage").cloned().expect("a ResultMessage")
}

fn read_then_answer() -> Vec<Reply> {
    vec![Reply::tool("read_file", json!({"file_path": "note.txt"})), Reply::text(&["The note ", "says hello."])]
}

#[tokio::test]
async fn the_python_sdk_runs_a_query_with_a_tool_call_and_a_streamed_answer() {
    let mock = MockServer::start(read_then_answer()).await;
    let ws = workspace(&[("note.txt", "hello from the note\n")]);
    let script = json!({"cwd": ws.path(), "prompt": "What does the note say?",
        "options": {"include_partial_messages": true, "allowed_tools": ["Read"]}});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let t = turn(&r, 0);
    assert_eq!(kinds(&t), ["SystemMessage", "AssistantMessage", "UserMessage", "AssistantMessage", "ResultMessage"]);
    let init = &t[0]["data"];
    assert_eq!(init["subtype"], "init");
    assert!(init["tools"].as_array().unwrap().contains(&json!("Read")), "{init}");
    let session = init["session_id"].as_str().unwrap();
    let asst: Vec<&Value> = t.iter().filter(|m| m["kind"] == "AssistantMessage").collect();
    assert_eq!(asst[0]["content"][0]["name"], "Read");
    assert_eq!(asst[0]["content"][0]["input"], json!({"file_path": "note.txt"}));
    let user = t.iter().find(|m| m["kind"] == "UserMessage").unwrap();
    assert_eq!(user["content"][0]["tool_use_id"], asst[0]["content"][0]["id"]);
    assert!(user["content"][0]["content"].as_str().unwrap().contains("hello from the note"), "{user}");
    assert_eq!(asst[1]["content"][0]["text"], "The note says hello.");
    // The answer streamed: its deltas, in order.
    let deltas: Vec<&str> = t
        .iter()
        .filter(|m| m["kind"] == "StreamEvent" && m["event"]["type"] == "content_block_delta")
        .map(|m| m["event"]["delta"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, ["The note ", "says hello."]);
    let res = result(&t);
    assert_eq!(res["subtype"], "success");
    assert_eq!(res["is_error"], false);
    assert_eq!(res["result"], "The note says hello.");
    assert_eq!(res["session_id"], session);
    assert_eq!(res["num_turns"], 2);
    assert_eq!(res["total_cost_usd"], Value::Null);
    assert_eq!(res["usage"]["input_tokens"], 30, "{res}");
}

#[tokio::test]
async fn the_typescript_sdk_runs_a_query_with_a_tool_call() {
    let mock = MockServer::start(read_then_answer()).await;
    let ws = workspace(&[("note.txt", "hello from the note\n")]);
    let script = json!({"cwd": ws.path(), "prompt": "What does the note say?",
        "options": {"allowedTools": ["Read"], "includePartialMessages": true}});
    let r = typescript(&mock, script).await;
    if r.is_null() {
        return;
    }
    let types: Vec<&str> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .filter(|t| *t != "stream_event")
        .collect();
    assert_eq!(types, ["system", "assistant", "user", "assistant", "result"], "{r}");
    let last = r["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["subtype"], "success");
    assert_eq!(last["result"], "The note says hello.");
    let first = &r["messages"][0];
    assert_eq!(last["session_id"], first["session_id"]);
}

#[tokio::test]
async fn a_client_session_keeps_its_conversation_over_turns() {
    let mock = MockServer::start(vec![Reply::text(&["Noted: blue."]), Reply::text(&["You said blue."])]).await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {},
        "steps": [{"op": "query", "text": "My colour is blue."}, {"op": "query", "text": "What colour did I say?"}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let (a, b) = (result(&turn(&r, 0)), result(&turn(&r, 1)));
    assert_eq!(a["result"], "Noted: blue.");
    assert_eq!(b["result"], "You said blue.");
    assert_eq!(a["session_id"], b["session_id"]);
    let second = mock.requests()[1].body["messages"].to_string();
    assert!(second.contains("My colour is blue.") && second.contains("Noted: blue."), "{second}");
}

#[tokio::test]
async fn an_interrupt_during_a_long_bash_call_kills_it_and_ends_the_turn() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 37.25; echo late"})),
        Reply::text(&["unused"]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "steps": [{"op": "interrupt_on_tool", "text": "wait a while", "after_s": 0.5}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let res = result(&turn(&r, 0));
    assert_eq!(res["subtype"], "error_during_execution", "{res}");
    assert_eq!(res["is_error"], true);
    assert_eq!(res["stop_reason"], "cancelled");
    let after = r["timings"][0]["after_interrupt_s"].as_f64().unwrap();
    assert!(after < 5.0, "the result came {after} s after the interrupt");
    let ps = std::process::Command::new("pgrep").args(["-f", "sleep 37.25"]).output().unwrap();
    assert!(ps.stdout.is_empty(), "the bash call outlived the interrupt: {}", String::from_utf8_lossy(&ps.stdout));
    assert_eq!(mock.requests().len(), 1, "no model call after the interrupt");
}

#[tokio::test]
async fn a_permission_callback_that_denies_a_write_leaves_the_file_unwritten() {
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "out.txt", "content": "x\n"})),
        Reply::text(&["I could not write it."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "prompt": "Write x.", "options": {}, "deny": ["Write"]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["asked"][0]["tool"], "Write", "{r}");
    assert_eq!(r["asked"][0]["input"], json!({"file_path": "out.txt", "content": "x\n"}));
    assert!(!ws.path().join("out.txt").exists(), "a denied write landed");
    let res = result(&turn(&r, 0));
    assert_eq!(res["result"], "I could not write it.");
    assert_eq!(res["permission_denials"][0]["tool_name"], "Write", "{res}");
}

#[tokio::test]
async fn a_permission_callback_that_allows_a_write_lets_it_land() {
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "out.txt", "content": "x\n"})),
        Reply::text(&["Written."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "prompt": "Write x.", "options": {}, "deny": []});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["asked"][0]["tool"], "Write", "{r}");
    assert_eq!(std::fs::read_to_string(ws.path().join("out.txt")).unwrap(), "x\n");
}

#[tokio::test]
async fn a_json_schema_gives_a_structured_answer() {
    let mock = MockServer::start(vec![Reply::text(&["{\"answer\": ", "4}"])]).await;
    let ws = workspace(&[]);
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]});
    let script = json!({"cwd": ws.path(), "prompt": "2+2?",
        "options": {"output_format": {"type": "json_schema", "schema": schema}}});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let res = result(&turn(&r, 0));
    assert_eq!(res["subtype"], "success", "{res}");
    assert_eq!(res["structured_output"], json!({"answer": 4}));
}

#[tokio::test]
async fn a_session_is_resumed_by_its_id() {
    let mock = MockServer::start(vec![Reply::text(&["Remembered 7."]), Reply::text(&["It was 7."])]).await;
    let ws = workspace(&[]);
    let first = python(&mock, json!({"cwd": ws.path(), "prompt": "Remember 7.", "options": {}})).await;
    if first.is_null() {
        return;
    }
    let id = result(&turn(&first, 0))["session_id"].as_str().unwrap().to_owned();
    let second =
        python(&mock, json!({"cwd": ws.path(), "prompt": "Which number?", "options": {"resume": id.clone()}})).await;
    let res = result(&turn(&second, 0));
    assert_eq!(res["session_id"], id.as_str());
    assert_eq!(res["result"], "It was 7.");
    let body = mock.requests()[1].body["messages"].to_string();
    assert!(body.contains("Remember 7.") && body.contains("Remembered 7."), "{body}");
}

#[tokio::test]
async fn mcp_servers_passed_in_the_options_serve_their_tools() {
    let Some(dir) = counterpart("PIRN_TEST_MCP_EVERYTHING") else { return };
    let index = format!("{dir}/dist/index.js");
    let mock =
        MockServer::start(vec![Reply::tool("mcp__ev__echo", json!({"message": "hi"})), Reply::text(&["ok"])]).await;
    let ws = workspace(&[]);
    let servers = json!({"ev": {"type": "stdio", "command": "node", "args": [index, "stdio"]}});
    let script = json!({"cwd": ws.path(), "prompt": "Echo hi.",
        "options": {"mcp_servers": servers, "permission_mode": "bypassPermissions"}});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let t = turn(&r, 0);
    assert_eq!(t[0]["data"]["mcp_servers"][0]["name"], "ev", "{:?}", t[0]);
    let user = t.iter().find(|m| m["kind"] == "UserMessage").unwrap();
    assert_eq!(user["content"][0]["content"], "Echo: hi", "{user}");
    assert_eq!(result(&t)["result"], "ok");
}

#[tokio::test]
async fn print_mode_answers_in_text_and_json_and_refuses_what_it_cannot_honour() {
    let mock = MockServer::start(vec![Reply::text(&["four"]), Reply::text(&["five"])]).await;
    let ws = workspace(&[]);
    let run = |args: &[&str]| {
        let mut c = pirn_command(&mock.base_url(), &[]);
        c.args(args).current_dir(ws.path());
        c
    };
    let out = run(&["-p", "2+2?"]).output().await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "four\n");
    assert!(out.status.success());
    let out = run(&["-p", "--output-format", "json", "2+3?"]).output().await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["type"].as_str(), v["subtype"].as_str(), v["result"].as_str()),
        (Some("result"), Some("success"), Some("five"))
    );
    let out = run(&["-p", "--task-budget", "5", "hi"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--task-budget is not supported"), "{out:?}");
    assert_eq!(mock.requests().len(), 2, "a refused command line calls no model");
}

/// An OpenRouter-style streamed reply carrying its `cost` in dollars.
fn priced(delta: Value, finish: &str, cost: f64) -> Reply {
    let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "cost": cost}});
    Reply::Raw { body: format!("data: {chunk}\n\ndata: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n") }
}

#[tokio::test]
async fn settings_hooks_run_and_the_cost_budget_ends_the_run_as_claude_code_names_it() {
    let bash = |cmd: &str| {
        let arguments = json!({"command": cmd}).to_string();
        json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": arguments}}]})
    };
    let mock = MockServer::start(vec![
        priced(bash("touch ran.txt"), "tool_calls", 0.01),
        priced(json!({"content": "not allowed, fine"}), "stop", 0.01),
        priced(bash("touch again.txt"), "tool_calls", 0.05),
        priced(json!({"content": "never asked"}), "stop", 0.01),
    ])
    .await;
    let ws = workspace(&[]);
    // The operator's PreToolUse hook (Claude Code's settings format) refuses Bash.
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": "echo 'no shell here' >&2; exit 2"}]}]}})
    .to_string();
    let run = |args: &[&str]| {
        let mut c = pirn_command(&mock.base_url(), &[]);
        c.args(args).current_dir(ws.path());
        c
    };
    let out = run(&["-p", "--output-format", "json", "--settings", &settings, "--max-budget-usd", "0.04", "go"])
        .output()
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!((v["subtype"].as_str(), v["result"].as_str()), (Some("success"), Some("not allowed, fine")), "{v}");
    assert!(!ws.path().join("ran.txt").exists(), "the hook's deny must keep bash from running");
    assert!(mock.requests()[1].body.to_string().contains("no shell here"), "the model reads the hook's reason");
    assert!((v["total_cost_usd"].as_f64().unwrap() - 0.02).abs() < 1e-9, "{v}");
    // Over budget: the call that crosses it is the last, its tool call never runs.
    let out = run(&["-p", "--output-format", "json", "--max-budget-usd", "0.04", "go on"]).output().await.unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!((v["subtype"].as_str(), v["is_error"].as_bool()), (Some("error_max_budget_usd"), Some(true)), "{v}");
    assert!(!ws.path().join("again.txt").exists());
    assert_eq!(mock.requests().len(), 3, "no model call after the budget is spent");
    assert_eq!(out.status.code(), Some(3), "pirn run's exit code for a spent budget: {out:?}");
}

#[tokio::test]
async fn a_stdin_line_over_10_mib_is_discarded_and_the_next_prompt_is_answered() {
    use tokio::io::AsyncWriteExt;
    let mock = MockServer::start(vec![Reply::text(&["still here"])]).await;
    let ws = workspace(&[]);
    let mut c = pirn_command(&mock.base_url(), &[]);
    c.args(["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let huge = format!("{{\"type\":\"user\",\"pad\":\"{}\"}}\n", "x".repeat(11 << 20));
    let prompt = json!({"type": "user", "message": {"role": "user", "content": "hello"}}).to_string() + "\n";
    let writer = tokio::spawn(async move {
        stdin.write_all(huge.as_bytes()).await.unwrap();
        stdin.write_all(prompt.as_bytes()).await.unwrap();
    });
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output()).await.unwrap().unwrap();
    writer.await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("longer than 10485760 bytes; discarded"), "{stderr}");
    let result = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| panic!("no result: {out:?}"));
    assert_eq!(result["result"], "still here", "{result}");
}
