//! The TypeScript Claude Agent SDK's own extension points on Claude Code's
//! surface, against the mock model (the Python SDK's are in
//! `claude_hooks.rs` and `fallback.rs`): an in-process tool (`tool()` with
//! `createSdkMcpServer`) called by the model, a `PreToolUse` hook callback
//! that denies bash, and `fallbackModel` taking over from a failing model.

use serde_json::{Value, json};

use super::claude::{typescript, workspace};
use super::mock::{MockServer, Reply, last_tool_text};

/// The report's messages of SDK type `kind`.
fn of_type<'a>(r: &'a Value, kind: &str) -> Vec<&'a Value> {
    r["messages"].as_array().unwrap().iter().filter(|m| m["type"] == kind).collect()
}

fn the_result(r: &Value) -> Value {
    of_type(r, "result").last().map(|m| (*m).clone()).unwrap_or_else(|| panic!("no result: {r}"))
}

#[tokio::test]
async fn an_in_process_typescript_tool_is_called_and_its_result_read_by_the_model() {
    let mock = MockServer::start(vec![
        Reply::tool("mcp__calc__add", json!({"a": 2, "b": 40})),
        Reply::text(&["The sum is 42."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "prompt": "What is 2 + 40?",
        "options": {"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true},
        "sdk_tools": {"calc": [{"name": "add", "description": "adds two integers"}]}});
    let r = typescript(&mock, script).await;
    if r.is_null() {
        return;
    }
    let reqs = mock.requests();
    let spec = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__calc__add");
    let spec = spec.unwrap_or_else(|| panic!("mcp__calc__add not offered: {}", reqs[0].body["tools"]));
    assert_eq!(spec["function"]["description"], "adds two integers");
    assert_eq!(spec["function"]["parameters"]["properties"]["a"]["type"], "integer", "{spec}");
    assert_eq!(r["asked"], json!([{"tool": "add", "input": {"a": 2, "b": 40}}]), "{r}");
    assert_eq!(last_tool_text(&reqs[1].body), "sum=42");
    let init = of_type(&r, "system")[0];
    assert_eq!(init["mcp_servers"], json!([{"name": "calc", "status": "connected"}]), "{init}");
    let res = the_result(&r);
    assert_eq!((res["subtype"].as_str(), res["result"].as_str()), (Some("success"), Some("The sum is 42.")), "{res}");
}

#[tokio::test]
async fn a_typescript_pre_tool_use_callback_that_denies_bash_keeps_the_command_from_running() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "touch ran.txt"})),
        Reply::text(&["The shell is not allowed here."]),
    ])
    .await;
    let ws = workspace(&[]);
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "no shell in this project"}});
    let script = json!({"cwd": ws.path(), "prompt": "Touch a file.",
        "options": {"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "answer": deny}]}});
    let r = typescript(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert!(!ws.path().join("ran.txt").exists(), "the denied command ran");
    let hooked = r["hooked"].as_array().unwrap();
    assert_eq!(hooked.len(), 1, "{hooked:?}");
    assert_eq!(hooked[0]["input"]["tool_name"], "Bash");
    assert_eq!(hooked[0]["input"]["tool_input"]["command"], "touch ran.txt");
    let tool_use = of_type(&r, "assistant")
        .into_iter()
        .flat_map(|m| m["message"]["content"].as_array().unwrap())
        .find(|b| b["type"] == "tool_use")
        .cloned()
        .unwrap_or_else(|| panic!("no tool_use: {r}"));
    assert_eq!(hooked[0]["tool_use_id"], tool_use["id"], "{hooked:?}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(last_tool_text(&reqs[1].body).contains("no shell in this project"), "{}", last_tool_text(&reqs[1].body));
    assert_eq!(the_result(&r)["subtype"], "success");
}

#[tokio::test]
async fn the_typescript_sdks_fallback_model_takes_over_after_the_primary_fails() {
    let mock = MockServer::start(vec![
        Reply::status(500, "{\"error\": {\"message\": \"primary down\"}}"),
        Reply::text(&["Answered by the fallback."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "prompt": "hi",
        "options": {"model": "big-model", "fallbackModel": "small-model"}});
    let r = typescript(&mock, script).await;
    if r.is_null() {
        return;
    }
    let notice = of_type(&r, "system").into_iter().find(|m| m["subtype"] == "model_fallback");
    let notice = notice.unwrap_or_else(|| panic!("no model_fallback message: {r}"));
    assert_eq!(notice["fallback_model"], "small-model", "{notice}");
    let res = the_result(&r);
    assert_eq!((res["subtype"].as_str(), res["result"].as_str()), (Some("success"), Some("Answered by the fallback.")));
    let models: Vec<String> = mock
        .requests()
        .iter()
        .filter(|q| q.path.ends_with("/chat/completions"))
        .map(|q| q.body["model"].to_string())
        .collect();
    assert_eq!(models, ["\"big-model\"", "\"small-model\""]);
}
