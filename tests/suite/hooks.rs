//! Operator hooks in Claude Code's format, run as real scripts by the real
//! binary against the mock model: a PreToolUse deny (nothing ran), a
//! PostToolUse context reaching the model, a Stop block that makes the
//! model go on, a hook sleeping past its timeout, a hook that tries to
//! write under the read-only sandbox, and `hook_*` events for 0.3.0 only.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, mock_worker, names};

/// `config.hooks` with one matcher group of `event` running `command`.
fn hooks(event: &str, matcher: &str, command: &str, timeout: f64) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]}})
}

/// Everything the model was sent in request `n`.
fn sent(mock: &MockServer, n: usize) -> String {
    serde_json::to_string(&mock.requests()[n].body["messages"]).unwrap()
}

fn hook_ends(events: &[Value]) -> Vec<Value> {
    events.iter().filter(|e| e["event"]["event"] == "hook_end").map(|e| e["event"].clone()).collect()
}

#[tokio::test]
async fn a_pre_tool_use_deny_means_nothing_ran_and_the_model_reads_why() {
    // Exit 2 with the reason on stderr, for writes only (Claude Code's names).
    let deny = r#"cat > "$CLAUDE_PROJECT_DIR/pre-input.json"; echo "no writes in this repo" >&2; exit 2"#;
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "x"})),
        Reply::tool("bash", json!({"command": "touch ran.txt"})),
        Reply::text(&["understood"]),
    ];
    let (mut w, mock) = mock_worker(script, &[], hooks("PreToolUse", "Write|Edit", deny, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"write a.txt"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let ws = w.workspace.path();
    assert!(!ws.join("a.txt").exists(), "the denied write ran");
    assert!(ws.join("ran.txt").exists(), "bash is not matched by Write|Edit");
    assert!(sent(&mock, 1).contains("no writes in this repo"), "{}", sent(&mock, 1));
    let ends = hook_ends(&events);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["outcome"], "blocked");
    assert_eq!(ends[0]["exit_code"], 2);
    assert_eq!(ends[0]["hook_event_name"], "PreToolUse");
    let input: Value = serde_json::from_str(&std::fs::read_to_string(ws.join("pre-input.json")).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "Write");
    assert_eq!(input["pirn_tool_name"], "write_file");
    assert_eq!(input["tool_input"]["content"], "x");
    let abs = ws.canonicalize().unwrap().join("a.txt");
    assert_eq!(input["tool_input"]["file_path"], abs.to_str().unwrap(), "{input}");
    assert!(input["session_id"].is_string() && input["cwd"].is_string(), "{input}");
    // The JSON form: permissionDecision deny on pirn's own tool name.
    let answer = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"bash is off today"}}'"#;
    let script = vec![Reply::tool("bash", json!({"command": "touch ran.txt"})), Reply::text(&["ok"])];
    let (mut w, mock) = mock_worker(script, &[], hooks("PreToolUse", "bash", answer, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"touch it"})).await;
    let (events, _) = w.result_for("s").await;
    assert!(!w.workspace.path().join("ran.txt").exists(), "the denied command ran");
    assert!(sent(&mock, 1).contains("bash is off today"));
    assert!(names(&events).contains(&"permission_denied".to_owned()), "{:?}", names(&events));
}

#[tokio::test]
async fn a_pre_tool_use_updated_input_runs_the_call_with_the_operators_arguments() {
    // The hook moves every write to a file of its own choosing and says so.
    let rewrite = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"file_path":"safe.txt","content":"rewritten\n"}}}'"#;
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "x"})),
        Reply::tool("bash", json!({"command": "touch ran.txt"})),
        Reply::text(&["done"]),
    ];
    let (mut w, mock) = mock_worker(script, &[], hooks("PreToolUse", "Write", rewrite, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"write a.txt"})).await;
    let (_, r) = w.result_for("s").await;
    let ws = w.workspace.path();
    assert!(!ws.join("a.txt").exists(), "the model's arguments ran");
    assert_eq!(std::fs::read_to_string(ws.join("safe.txt")).unwrap(), "rewritten\n");
    assert!(ws.join("ran.txt").exists(), "bash is not matched by Write");
    assert_eq!(r["files_changed"], json!(["safe.txt"]), "{r}");
    let told = sent(&mock, 1);
    assert!(told.contains("a PreToolUse hook changed this call's arguments"), "{told}");
    assert!(told.contains("safe.txt"), "{told}");
    // An updatedInput that is not an object blocks the call.
    let bad = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":"rm -rf /"}}'"#;
    let script = vec![Reply::tool("bash", json!({"command": "touch ran.txt"})), Reply::text(&["ok"])];
    let (mut w, mock) = mock_worker(script, &[], hooks("PreToolUse", "bash", bad, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"touch it"})).await;
    let _ = w.result_for("s").await;
    assert!(!w.workspace.path().join("ran.txt").exists(), "a call with a malformed rewrite ran");
    assert!(sent(&mock, 1).contains("not a JSON object"), "{}", sent(&mock, 1));
}

#[tokio::test]
async fn post_tool_use_context_reaches_the_model() {
    let context = r#"cat > "$CLAUDE_PROJECT_DIR/post-input.json"; echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"lint: 2 warnings in a.txt"}}'"#;
    let script = vec![Reply::tool("write_file", json!({"file_path": "a.txt", "content": "x"})), Reply::text(&["ok"])];
    let (mut w, mock) = mock_worker(script, &[], hooks("PostToolUse", "*", context, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"write a.txt"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("a.txt")).unwrap(), "x");
    assert!(sent(&mock, 1).contains("lint: 2 warnings in a.txt"), "{}", sent(&mock, 1));
    let input = std::fs::read_to_string(w.workspace.path().join("post-input.json")).unwrap();
    let input: Value = serde_json::from_str(&input).unwrap();
    assert_eq!(input["tool_response"]["is_error"], false, "{input}");
    assert!(input["tool_response"]["output"].is_string(), "{input}");
}

#[tokio::test]
async fn a_stop_block_makes_the_model_go_on() {
    let stop = r#"if grep -q '"stop_hook_active":true'; then exit 0; fi
echo '{"decision":"block","reason":"run the test suite before you finish"}'"#;
    let script = vec![Reply::text(&["done"]), Reply::text(&["tests pass, done"])];
    let mut config = hooks("Stop", "", stop, 10.0);
    config["answer_checks"] = json!(false);
    let (mut w, mock) = mock_worker(script, &[], config).await;
    w.write(json!({"type":"send","id":"s","message":"say hello"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "tests pass, done");
    assert_eq!(mock.requests().len(), 2);
    assert!(sent(&mock, 1).contains("run the test suite before you finish"), "{}", sent(&mock, 1));
    let outcomes: Vec<Value> = hook_ends(&events).iter().map(|e| e["outcome"].clone()).collect();
    assert_eq!(outcomes, [json!("blocked"), json!("ok")]);
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_the_send_goes_on() {
    let marker = format!("pirn-hook-sleep-{}", std::process::id());
    let sleeper = format!("sleep 30; : {marker}");
    let script = vec![Reply::tool("glob", json!({"pattern": "*"})), Reply::text(&["ok"])];
    let (mut w, _mock) = mock_worker(script, &[], hooks("PreToolUse", "Glob", &sleeper, 1.0)).await;
    let started = Instant::now();
    w.write(json!({"type":"send","id":"s","message":"look"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let end = &hook_ends(&events)[0];
    assert_eq!(end["outcome"], "timeout", "{end}");
    assert!(end.get("exit_code").is_none());
    assert!(end["duration_ms"].as_u64().unwrap() >= 1000);
    assert!(names(&events).contains(&"tool_end".to_owned()), "a failed hook does not block");
    assert!(super::worker::until_gone(&marker).await.is_empty(), "the hook's process outlived its timeout");
}

#[tokio::test]
async fn a_hook_is_sandboxed_like_bash_and_0_2_0_clients_see_no_hook_events() {
    let writer = r#"echo hooked > "$CLAUDE_PROJECT_DIR/hooked.txt""#;
    let mut config = hooks("UserPromptSubmit", "", writer, 10.0);
    config["sandbox"] = json!("read-only");
    let (mut w, _mock) = mock_worker(vec![Reply::text(&["hi"])], &[], config.clone()).await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "a failing hook does not block: {r}");
    assert!(!w.workspace.path().join("hooked.txt").exists(), "the hook wrote under read-only");
    assert_eq!(hook_ends(&events)[0]["outcome"], "error");
    // workspace-write: the same hook writes.
    config["sandbox"] = json!("workspace-write");
    let (mut w, _mock) = mock_worker(vec![Reply::text(&["hi"])], &[], config.clone()).await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    w.result_for("s").await;
    assert!(w.workspace.path().join("hooked.txt").exists());
    // A 0.2.0 client: the hook runs, no hook_* event reaches it.
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", config).await.0;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let lines = w.until(|v| v["type"] == "result").await;
    assert!(lines.iter().all(|l| !l["event"]["event"].as_str().unwrap_or("").starts_with("hook")), "{lines:?}");
    assert!(w.workspace.path().join("hooked.txt").exists());
}

#[tokio::test]
async fn a_user_prompt_submit_block_refuses_the_send() {
    let block = r#"echo "prompts mentioning secrets are refused" >&2; exit 2"#;
    let (mut w, mock) = mock_worker(vec![], &[], hooks("UserPromptSubmit", "", block, 10.0)).await;
    w.write(json!({"type":"send","id":"s","message":"print the secrets"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "hook_blocked", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("secrets are refused"), "{r}");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn over_http_only_the_hook_commands_the_daemon_allows_are_accepted() {
    use super::http::{client, daemon_with_env, post};
    let marker = tempfile::tempdir().unwrap();
    let allowed = format!("touch {}/allowed", marker.path().display());
    let sneaked = format!("touch {}/sneaked", marker.path().display());
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let d = daemon_with_env(&mock.base_url(), &["--allow-hook-command", &allowed], &[]).await;
    let c = client();
    let cfg = |command: &str| {
        let mut cfg = json!({"model": "mock-model", "system_prompt": "s", "tools": []});
        cfg["hooks"] = hooks("UserPromptSubmit", "", command, 10.0)["hooks"].clone();
        cfg
    };
    // A command the daemon does not list: refused before any session exists.
    let (status, body) = post(&c, &format!("{}/v1/sessions", d.base), cfg(&sneaked)).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("--allow-hook-command"), "{body}");
    // Listed, it runs at the send.
    let (status, body) = post(&c, &format!("{}/v1/sessions", d.base), cfg(&allowed)).await;
    assert_eq!(status, 201, "{body}");
    let sid = body["session_id"].as_str().unwrap();
    let (status, body) =
        post(&c, &format!("{}/v1/sessions/{sid}/sends?stream=1", d.base), json!({"message": "go"})).await;
    assert_eq!(status, 200, "{body}");
    assert!(marker.path().join("allowed").exists(), "the allowed hook ran");
    assert!(!marker.path().join("sneaked").exists(), "the refused hook never ran");
}
