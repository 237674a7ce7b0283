//! Codex's headless surface (`pirn exec --experimental-json …`) driven by
//! the official Codex SDK — TypeScript `@openai/codex-sdk`, pinned,
//! installed by scripts/codex-sdk-client; the driver is
//! tests/codex/drive.mjs, which points `codexPathOverride` at pirn —
//! against the mock model, and `pirn exec` from a shell.

use std::time::Duration;

use serde_json::{Value, json};

use super::claude::workspace;
use super::mock::{MockServer, Reply};
use super::worker::{counterpart, pirn_command, test_home};

/// Runs the driver with `script` against `mock`; its report (`Null` when
/// the SDK is not installed outside CI).
async fn drive(mock: &MockServer, script: Value) -> Value {
    let Some(sdk) = counterpart("PIRN_TEST_CODEX_SDK") else { return Value::Null };
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/codex/drive.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new("node")
            .args([driver, &sdk, env!("CARGO_BIN_EXE_pirn"), &script.to_string()])
            .env("PIRN_BASE_URL", mock.base_url())
            .env("PIRN_HOME", test_home())
            .env_remove("PIRN_LOG")
            .env_remove("PIRN_SANDBOX")
            .output(),
    )
    .await
    .expect("the Codex SDK finishes within 90 s")
    .unwrap();
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["errors"], json!([]), "{report}");
    report
}

fn items_of<'a>(step: &'a Value, kind: &str) -> Vec<&'a Value> {
    step["items"].as_array().unwrap().iter().filter(|i| i["type"] == kind).collect()
}

#[tokio::test]
async fn run_gives_the_command_the_file_changes_the_plan_and_the_answer_as_codex_items() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "echo built; exit 0"})),
        Reply::tool(
            "todo_write",
            json!({"todos": [
            {"content": "Write the note", "status": "completed"},
            {"content": "Fix the greeting", "status": "in_progress"}]}),
        ),
        Reply::tool("write_file", json!({"file_path": "note.txt", "content": "a note\n"})),
        Reply::tool(
            "edit_file",
            json!({"file_path": "greet.py", "old_string": "return x / y",
            "new_string": "if y == 0:\n        return 0\n    return x / y"}),
        ),
        Reply::tool("bash", json!({"command": "exit 3"})),
        Reply::text(&["Done: ", "note written, greeting fixed."]),
    ])
    .await;
    let ws = workspace(&[("greet.py", "def div(x, y):\n    return x / y\n")]);
    let r = drive(&mock, json!({"cwd": ws.path(), "steps": [{"op": "run", "prompt": "Do the work."}]})).await;
    if r.is_null() {
        return;
    }
    let step = &r["steps"][0];
    assert_eq!(step["ok"], true, "{step}");
    assert_eq!(step["finalResponse"], "Done: note written, greeting fixed.");
    let thread = step["threadId"].as_str().unwrap();
    assert!(!thread.is_empty());
    let commands = items_of(step, "command_execution");
    assert_eq!(commands.len(), 2, "{step}");
    assert_eq!(commands[0]["command"], "echo built; exit 0");
    assert_eq!(commands[0]["aggregated_output"], "built\n", "the output alone: {}", commands[0]);
    assert_eq!(commands[0]["exit_code"], 0);
    assert_eq!(commands[0]["status"], "completed");
    assert_eq!(commands[1]["exit_code"], 3);
    assert_eq!(commands[1]["status"], "failed");
    let changes = items_of(step, "file_change");
    assert_eq!(changes.len(), 2, "{step}");
    assert_eq!(changes[0]["changes"], json!([{"path": "note.txt", "kind": "add"}]));
    assert_eq!(changes[1]["changes"], json!([{"path": "greet.py", "kind": "update"}]));
    assert!(changes.iter().all(|c| c["status"] == "completed"));
    let todo = items_of(step, "todo_list");
    assert_eq!(todo.len(), 1);
    assert_eq!(
        todo[0]["items"],
        json!([{"text": "Write the note", "completed": true}, {"text": "Fix the greeting", "completed": false}])
    );
    let usage = &step["usage"];
    assert_eq!(usage["input_tokens"], 5 * 20 + 10, "{usage}");
    assert_eq!(usage["output_tokens"], 5 * 8 + 5);
    // The bytes on disk are the model's, exactly.
    assert_eq!(std::fs::read_to_string(ws.path().join("note.txt")).unwrap(), "a note\n");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("greet.py")).unwrap(),
        "def div(x, y):\n    if y == 0:\n        return 0\n    return x / y\n"
    );
    // Item ids are distinct.
    let ids: std::collections::HashSet<&str> =
        step["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), step["items"].as_array().unwrap().len());
}

#[tokio::test]
async fn run_streamed_gives_the_thread_events_in_codex_order() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "note.txt"})),
        Reply::tool("bash", json!({"command": "printf 'one\\n'; sleep 0.6; printf 'two\\n'"})),
        Reply::text(&["The note says hello."]),
    ])
    .await;
    let ws = workspace(&[("note.txt", "hello\n")]);
    let r = drive(&mock, json!({"cwd": ws.path(), "steps": [{"op": "streamed", "prompt": "Read the note."}]})).await;
    if r.is_null() {
        return;
    }
    let events = r["steps"][0]["events"].as_array().unwrap();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e["item"]["type"].as_str() {
            Some(item) => format!("{} {item}", e["type"].as_str().unwrap()),
            None => e["type"].as_str().unwrap().to_owned(),
        })
        .filter(|k| k != "item.updated command_execution")
        .collect();
    assert_eq!(
        kinds,
        [
            "thread.started",
            "turn.started",
            "item.started mcp_tool_call",
            "item.completed mcp_tool_call",
            "item.started command_execution",
            "item.completed command_execution",
            "item.completed agent_message",
            "turn.completed"
        ],
        "{events:?}"
    );
    assert_eq!(events[0]["thread_id"], r["steps"][0]["threadId"]);
    let read = &events[3]["item"];
    assert_eq!((read["server"].as_str(), read["tool"].as_str()), (Some("pirn"), Some("read_file")));
    assert!(read["result"]["content"][0]["text"].as_str().unwrap().contains("hello"), "{read}");
    // The command's output arrived while it ran.
    let live: Vec<&Value> = events.iter().filter(|e| e["type"] == "item.updated").collect();
    assert!(!live.is_empty(), "{events:?}");
    assert!(live[0]["item"]["aggregated_output"].as_str().unwrap().contains("one"));
    assert_eq!(live[0]["item"]["status"], "in_progress");
}

#[tokio::test]
async fn an_output_schema_gives_the_json_answer_and_resume_continues_the_thread() {
    let mock =
        MockServer::start(vec![Reply::text(&["{\"colour\": \"blue\"}"]), Reply::text(&["You said blue."])]).await;
    let ws = workspace(&[]);
    let schema = json!({"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"],
        "additionalProperties": false});
    let script = json!({"cwd": ws.path(), "steps": [
        {"op": "run", "prompt": "My colour is blue. Answer as JSON.", "outputSchema": schema},
        {"op": "resume", "prompt": "What colour did I say?"}]});
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    let (a, b) = (&r["steps"][0], &r["steps"][1]);
    assert_eq!(a["ok"], true, "{a}");
    let doc: Value = serde_json::from_str(a["finalResponse"].as_str().unwrap()).unwrap();
    assert_eq!(doc, json!({"colour": "blue"}));
    assert_eq!(b["ok"], true, "{b}");
    assert_eq!(b["finalResponse"], "You said blue.");
    assert_eq!(a["threadId"], b["threadId"]);
    let second = mock.requests()[1].body["messages"].to_string();
    assert!(second.contains("My colour is blue.") && second.contains("blue"), "{second}");
}

#[tokio::test]
async fn a_failing_model_surfaces_as_the_sdks_error_and_a_refused_flag_names_itself() {
    let mock = MockServer::start(vec![Reply::status(400, "{\"error\": {\"message\": \"no such model\"}}")]).await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "steps": [{"op": "run", "prompt": "hi"}]});
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    let step = &r["steps"][0];
    assert_eq!(step["ok"], false, "{step}");
    assert!(step["error"].as_str().unwrap().contains("no such model"), "{step}");
    // A setting pirn cannot honour is refused, never ignored.
    let script = json!({"cwd": ws.path(), "thread": {"webSearchMode": "live"},
        "steps": [{"op": "run", "prompt": "hi"}]});
    let r = drive(&mock, script).await;
    let step = &r["steps"][0];
    assert_eq!(step["ok"], false, "{step}");
    let error = step["error"].as_str().unwrap();
    assert!(error.contains("web_search") && error.contains("code 1"), "{error}");
    assert_eq!(mock.requests().len(), 1, "the refused run called no model");
}

#[tokio::test]
async fn the_abort_signal_ends_a_long_command_and_its_process_group() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 41.25; echo late"})),
        Reply::tool("bash", json!({"command": "sleep 41.5; echo late"})),
        Reply::text(&["unused"]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({"cwd": ws.path(), "steps": [{"op": "abort_on_command", "prompt": "wait", "after_ms": 500},
        {"op": "run_abort_after", "prompt": "wait again", "after_ms": 1500}]});
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    let step = &r["steps"][0];
    assert_eq!(step["ok"], false, "{step}");
    assert_eq!(step["name"], "AbortError", "{step}");
    // SIGTERM reaches pirn, which kills the command's process group.
    let mut gone = false;
    for _ in 0..50 {
        let ps = std::process::Command::new("pgrep").args(["-f", "sleep 41.25"]).output().unwrap();
        if ps.stdout.is_empty() {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the command outlived the abort by 5 s");
    // `run()` too rejects with the abort, not with a failed turn (pirn
    // writes no turn.failed for an interrupted turn, as Codex).
    let step = &r["steps"][1];
    assert_eq!((step["ok"].as_bool(), step["name"].as_str()), (Some(false), Some("AbortError")), "{step}");
    assert_eq!(mock.requests().len(), 2, "no model call after either abort");
}

#[tokio::test]
async fn read_only_offers_no_write_tools_and_pirn_exec_prints_the_answer_in_a_shell() {
    let mock = MockServer::start(vec![Reply::text(&["Nothing to change."])]).await;
    let ws = workspace(&[("a.txt", "x\n")]);
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let out = pirn_command(&mock.base_url(), &[])
        .args(["exec", "--sandbox", "read-only", "--cd", ws.path().to_str().unwrap(), "Look around."])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Nothing to change.\n");
    let tools: Vec<String> = mock.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(tools.contains(&"bash".to_owned()), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "write_file" || t == "edit_file"), "{tools:?}");
    // Outside a git repository without --skip-git-repo-check: refused, as Codex does.
    let bare = workspace(&[]);
    let out = pirn_command(&mock.base_url(), &[])
        .args(["exec", "--experimental-json", "--cd", bare.path().to_str().unwrap(), "hi"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "Codex's exit code for a refused run");
    assert!(out.stdout.is_empty(), "nothing on stdout, as Codex");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Not inside a trusted directory and --skip-git-repo-check was not specified."), "{err}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn the_profile_starts_the_thread_and_side_calls_are_counted_apart_on_turn_completed() {
    for (profile, side_calls) in [("small", Some(1)), ("exact", None)] {
        let mock = MockServer::start(vec![Reply::text(&["It returns 1."])]).await;
        let ws = workspace(&[("app.py", "def f():\n    return 1\n")]);
        let cd = ws.path().to_str().unwrap();
        let out = pirn_command(&mock.base_url(), &[("PIRN_PROFILE", profile)])
            .args(["exec", "--experimental-json", "--skip-git-repo-check", "--cd", cd, "What does f return?"])
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(
            (lines[0]["type"].as_str(), lines[0]["pirn_profile"].as_str()),
            (Some("thread.started"), Some(profile))
        );
        let done = lines.last().unwrap();
        assert_eq!((done["type"].as_str(), done["iterations"].as_u64()), (Some("turn.completed"), Some(1)), "{done}");
        // The small profile read the request: one side call, apart from the turn.
        assert_eq!(done["side_calls"]["calls"].as_u64(), side_calls, "{profile}: {done}");
        assert_eq!(mock.readings().len() as u64, side_calls.unwrap_or(0));
    }
}
