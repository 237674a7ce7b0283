//! Hook callbacks of the official Python Claude Agent SDK (`hooks=` in
//! `ClaudeAgentOptions`, sent in `initialize` and called back as
//! `hook_callback` control requests) on Claude Code's surface, against the
//! mock model: they are called for the same events, with the same input
//! and answers, as the settings-file hooks, and fail safe.

use serde_json::{Value, json};

use super::claude::{python, result, turn, workspace};
use super::mock::{MockServer, Reply, last_tool_text};

fn deny(reason: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": reason}})
}

#[tokio::test]
async fn a_pre_tool_use_callback_that_denies_bash_keeps_the_command_from_running() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "touch ran.txt"})),
        Reply::text(&["The shell is not allowed here."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "answer": deny("no shell in this project")}]},
        "steps": [{"op": "query", "text": "Touch a file."}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert!(!ws.path().join("ran.txt").exists(), "the denied command ran");
    let hooked = r["hooked"].as_array().unwrap();
    assert_eq!(hooked.len(), 1, "{hooked:?}");
    let input = &hooked[0]["input"];
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"]["command"], "touch ran.txt");
    // The id the callback gets is the tool_use block's the SDK showed.
    let t = turn(&r, 0);
    let tool_use = t
        .iter()
        .filter(|m| m["kind"] == "AssistantMessage")
        .flat_map(|m| m["content"].as_array().unwrap())
        .find(|b| b.get("name").is_some())
        .unwrap();
    assert_eq!(hooked[0]["tool_use_id"], tool_use["id"], "{hooked:?}");
    assert_eq!(input["tool_use_id"], tool_use["id"]);
    // The model read the reason.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(last_tool_text(&reqs[1].body).contains("no shell in this project"), "{}", last_tool_text(&reqs[1].body));
    assert_eq!(result(&t)["subtype"], "success");
}

#[tokio::test]
async fn prompt_and_post_tool_use_callbacks_see_what_command_hooks_see() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "note.txt"})),
        Reply::text(&["It says hello."]),
    ])
    .await;
    let ws = workspace(&[("note.txt", "hello\n")]);
    let context = json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
        "additionalContext": "The reader's name is Ada."}});
    let after =
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "checked by the SDK"}});
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "hooks": {"UserPromptSubmit": [{"answer": context}], "PostToolUse": [{"matcher": "Read", "answer": after}],
                  "PreToolUse": [{"matcher": "Bash", "answer": deny("unused")}]},
        "steps": [{"op": "query", "text": "What does the note say?"}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let events: Vec<&str> = r["hooked"].as_array().unwrap().iter().map(|h| h["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["UserPromptSubmit", "PostToolUse"], "the Bash matcher took no Read call");
    let post = &r["hooked"][1]["input"];
    assert_eq!(post["tool_name"], "Read");
    assert!(post["tool_response"]["output"].as_str().unwrap().contains("hello"), "{post}");
    let reqs = mock.requests();
    assert!(reqs[0].body["messages"].to_string().contains("The reader's name is Ada."), "{}", reqs[0].body);
    assert!(last_tool_text(&reqs[1].body).contains("checked by the SDK"));
}

#[tokio::test]
async fn a_pre_tool_use_callback_that_fails_or_is_too_slow_denies_the_call() {
    for (hook, why) in [
        (json!({"matcher": "Bash", "raise": "policy server down"}), "policy server down"),
        (json!({"matcher": "Bash", "sleep_s": 3, "timeout": 1, "answer": {}}), "no answer within"),
    ] {
        let mock = MockServer::start(vec![
            Reply::tool("bash", json!({"command": "touch ran.txt"})),
            Reply::text(&["Could not run it."]),
        ])
        .await;
        let ws = workspace(&[]);
        let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
            "hooks": {"PreToolUse": [hook]}, "steps": [{"op": "query", "text": "Touch a file."}]});
        let r = python(&mock, script).await;
        if r.is_null() {
            return;
        }
        assert!(!ws.path().join("ran.txt").exists(), "a failed check let the command run ({why})");
        let told = last_tool_text(&mock.requests()[1].body);
        assert!(told.contains("could not decide") && told.contains(why), "{told}");
    }
}

#[tokio::test]
async fn an_in_process_sdk_tool_is_offered_called_and_its_result_read_by_the_model() {
    let mock = MockServer::start(vec![
        Reply::tool("mcp__calc__add", json!({"a": 2, "b": 40})),
        Reply::text(&["The sum is 42."]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "sdk_tools": {"calc": [{"name": "add", "description": "adds two integers"}]},
        "steps": [{"op": "query", "text": "What is 2 + 40?"}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    let reqs = mock.requests();
    let offered: Vec<&str> =
        reqs[0].body["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
    assert!(offered.contains(&"mcp__calc__add"), "{offered:?}");
    let spec = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__calc__add");
    assert_eq!(spec.unwrap()["function"]["description"], "adds two integers");
    // The SDK's function ran with the model's arguments; the model read its answer.
    assert_eq!(r["asked"], json!([{"tool": "add", "input": {"a": 2, "b": 40}}]), "{r}");
    assert_eq!(last_tool_text(&reqs[1].body), "sum=42");
    let t = turn(&r, 0);
    assert_eq!(t[0]["data"]["mcp_servers"], json!([{"name": "calc", "status": "connected"}]), "{}", t[0]);
    assert_eq!(result(&t)["result"], "The sum is 42.");
}

#[tokio::test]
async fn a_pre_tool_use_callback_may_rewrite_the_arguments_and_the_model_is_told() {
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "touch ran.txt"})), Reply::text(&["Done."])])
            .await;
    let ws = workspace(&[]);
    let rewrite = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {"command": "touch rewritten.txt"}}});
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "answer": rewrite}]},
        "steps": [{"op": "query", "text": "Touch a file."}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert!(!ws.path().join("ran.txt").exists(), "the model's command ran");
    assert!(ws.path().join("rewritten.txt").exists(), "the hook's command did not run");
    let told = last_tool_text(&mock.requests()[1].body);
    assert!(told.contains("changed this call's arguments") && told.contains("touch rewritten.txt"), "{told}");
    assert_eq!(result(&turn(&r, 0))["subtype"], "success");
}

#[tokio::test]
async fn on_failure_decides_what_a_failed_callback_does() {
    // "continue": a PreToolUse check that fails lets the call through, as asked.
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "touch ran.txt"})), Reply::text(&["Ran it."])])
            .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "options": {"permission_mode": "bypassPermissions"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "raise": "audit log down", "on_failure": "continue"}]},
        "steps": [{"op": "query", "text": "Touch a file."}]});
    let r = python(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert!(ws.path().join("ran.txt").exists(), "onFailure continue still blocked the call");
    // "block" on UserPromptSubmit: a prompt check that fails refuses the prompt,
    // and the model is never called (the SDK checked that pirn honours it).
    let mock = MockServer::start(vec![Reply::text(&["should not be asked"])]).await;
    let script = json!({"cwd": ws.path(), "options": {},
        "hooks": {"UserPromptSubmit": [{"raise": "classifier down", "on_failure": "block"}]},
        "steps": [{"op": "query", "text": "Hello."}]});
    let r = python(&mock, script).await;
    let res = result(&turn(&r, 0));
    assert_eq!(res["is_error"], true, "{res}");
    assert!(res.to_string().contains("classifier down"), "{res}");
    assert!(mock.requests().iter().all(|q| !q.path.ends_with("/chat/completions")), "the model was called");
}
