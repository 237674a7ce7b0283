//! `file_blocks` through the real binary: with it on, a path line and a
//! fenced block in the model's answer are a `write_file` call of exactly
//! the block's lines, run and reported like any other call; without it,
//! or without a path line, code in an answer writes nothing.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

pub(super) const ORIGINAL: &str = "def f():\n    return 1\n";
const BLOCK_ANSWER: &str = "Here it is.\n\napp.py\n```python\ndef f():\n    return 2\n```\nf returns 2 now.";

/// One send on a workspace holding app.py, the model-reading checks off,
/// `config` added to the init config.
pub(super) async fn send(script: Vec<Reply>, config: Value) -> (Vec<Value>, Value, MockServer, Worker) {
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), ORIGINAL).unwrap();
    let mut config = config;
    config["request_check"] = json!(false);
    config["write_check"] = json!(false);
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": "Make f in app.py return 2."})).await;
    let (events, r) = w.result_for("s").await;
    (events, r, mock, w)
}

fn read_app() -> Reply {
    Reply::tool("read_file", json!({"file_path": "app.py"}))
}

pub(super) fn app_py(w: &Worker) -> String {
    std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap()
}

/// The send's `tool_start` and `tool_end` events, in order.
fn tool_events(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .map(|e| e["event"].clone())
        .filter(|e| e["event"] == "tool_start" || e["event"] == "tool_end")
        .collect()
}

#[tokio::test]
async fn a_file_block_is_written_exactly_as_sent_and_reported_as_a_write_file_call() {
    let script = vec![read_app(), Reply::text(&[BLOCK_ANSWER]), Reply::text(&["Done: f returns 2."])];
    let (events, r, mock, w) = send(script, json!({"file_blocks": true})).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("Done: f returns 2.")), "{r}");
    assert_eq!(app_py(&w), "def f():\n    return 2\n", "the block's lines, each ending in a newline");
    assert_eq!(r["files_changed"], json!(["app.py"]), "{r}");
    let tools = tool_events(&events);
    let start = &tools[2];
    assert_eq!(
        (start["event"].as_str(), start["name"].as_str()),
        (Some("tool_start"), Some("write_file")),
        "{tools:?}"
    );
    assert_eq!(start["args"], json!({"file_path": "app.py", "content": "def f():\n    return 2\n"}));
    assert!(start["call_id"].as_str().unwrap().starts_with("file-block-"), "{start}");
    assert_eq!((tools[3]["call_id"].clone(), tools[3]["is_error"].clone()), (start["call_id"].clone(), json!(false)));
    // The model was told the format, and its answer is in the history as
    // its prose plus the call, followed by the call's result.
    let requests = mock.requests();
    let system = requests[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Writing a whole file") && system.contains("path alone on one line"), "{system}");
    let messages = requests[2].body["messages"].as_array().unwrap().clone();
    let n = messages.len();
    let (assistant, result) = (&messages[n - 2], &messages[n - 1]);
    assert_eq!(assistant["content"], "Here it is.\n\nf returns 2 now.", "{assistant}");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "write_file", "{assistant}");
    assert_eq!((result["role"].as_str(), result["tool_call_id"].clone()), (Some("tool"), start["call_id"].clone()));
    assert!(result["content"].as_str().unwrap().starts_with("overwrote app.py"), "{result}");
}

#[tokio::test]
async fn code_in_an_answer_writes_nothing_when_the_option_is_off_or_no_path_line_names_a_file() {
    // Off (the default): the same answer is an answer, and the model is not told the format.
    let (events, r, mock, w) = send(vec![read_app(), Reply::text(&[BLOCK_ANSWER])], json!({})).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some(BLOCK_ANSWER)), "{r}");
    assert_eq!((app_py(&w).as_str(), r["files_changed"].clone()), (ORIGINAL, json!([])));
    assert_eq!(tool_events(&events).len(), 2, "the read only");
    assert!(!mock.requests()[0].body["messages"][0]["content"].as_str().unwrap().contains("Writing a whole file"));
    // On, but the code has no path line above it: shown, not written.
    let shown = "Change it like this:\n```python\ndef f():\n    return 2\n```";
    let (events, r, _mock, w) = send(vec![read_app(), Reply::text(&[shown])], json!({"file_blocks": true})).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some(shown)), "{r}");
    assert_eq!((app_py(&w).as_str(), tool_events(&events).len()), (ORIGINAL, 2));
}

#[tokio::test]
async fn a_file_block_goes_through_the_same_rules_as_a_write_file_call() {
    // Denied by the operator's rules: nothing written, the model told why.
    let config = json!({"file_blocks": true, "permissions": {"deny": ["write_file(app.py)"]}});
    let script = vec![read_app(), Reply::text(&[BLOCK_ANSWER]), Reply::text(&["I could not write app.py."])];
    let (events, r, _mock, w) = send(script, config).await;
    assert_eq!(app_py(&w), ORIGINAL);
    let end = tool_events(&events).into_iter().rfind(|e| e["event"] == "tool_end").unwrap();
    assert_eq!((end["name"].as_str(), end["is_error"].as_bool()), (Some("write_file"), Some(true)), "{end}");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    // An existing file the model never read is not overwritten blind.
    let script = vec![Reply::text(&[BLOCK_ANSWER]), Reply::text(&["Done."])];
    let (events, _r, _mock, w) = send(script, json!({"file_blocks": true})).await;
    assert_eq!(app_py(&w), ORIGINAL);
    let end = tool_events(&events).into_iter().rfind(|e| e["event"] == "tool_end").unwrap();
    assert_eq!(end["is_error"], true, "{end}");
}

#[tokio::test]
async fn with_a_target_the_answers_only_block_writes_it_and_a_json_call_in_the_text_runs_as_that_call() {
    // The target (aider's one file in the chat): the lone block, no path line.
    let lone = "The answer is:\n```python\ndef f():\n    return 2\n```";
    let script = vec![read_app(), Reply::text(&[lone]), Reply::text(&["Done."])];
    let config = json!({"file_blocks": true, "file_block_target": "app.py"});
    let (events, r, mock, w) = send(script, config).await;
    assert_eq!((r["status"].as_str(), app_py(&w).as_str()), (Some("ok"), "def f():\n    return 2\n"), "{r}");
    assert_eq!(tool_events(&events)[2]["args"]["file_path"], "app.py");
    let system = mock.requests()[0].body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("when it is the only one in your answer, replaces app.py"), "{system}");
    // Two blocks without path lines: neither is written.
    let two = "Code:\n```python\ndef f():\n    return 2\n```\nRun it:\n```sh\npython3 app.py\n```";
    let config = json!({"file_blocks": true, "file_block_target": "app.py"});
    let (_, r, _mock, w) = send(vec![read_app(), Reply::text(&[two])], config).await;
    assert_eq!((r["response"].as_str(), app_py(&w).as_str()), (Some(two), ORIGINAL), "{r}");
    // A tool call the model wrote as JSON text is that call, not the target's content.
    let call = r#"```json
{"name": "write_file", "arguments": {"file_path": "new.py", "content": "x = 1\n"}}
```"#;
    let config = json!({"file_blocks": true, "file_block_target": "app.py"});
    let (events, r, _mock, w) = send(vec![Reply::text(&[call]), Reply::text(&["Done."])], config).await;
    assert_eq!(r["files_changed"], json!(["new.py"]), "{r}");
    assert_eq!((app_py(&w).as_str(), tool_events(&events)[0]["name"].as_str()), (ORIGINAL, Some("write_file")));
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("new.py")).unwrap(), "x = 1\n");
}

#[tokio::test]
async fn pirn_run_takes_the_option_and_its_target() {
    let lone = "```python\ndef f():\n    return 2\n```";
    for (flag, written) in [("--file-blocks=app.py", true), ("--file-blocks", false)] {
        let mock = MockServer::start(vec![read_app(), Reply::text(&[lone]), Reply::text(&["Done."])]).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("app.py"), ORIGINAL).unwrap();
        let args = ["run", "--request-check=false", "--write-check=false", flag, "Make f return 2."];
        let out = super::worker::pirn_command(&mock.base_url(), &[])
            .args(args)
            .current_dir(dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{flag}: {}", String::from_utf8_lossy(&out.stderr));
        let now = std::fs::read_to_string(dir.path().join("app.py")).unwrap();
        assert_eq!(now == "def f():\n    return 2\n", written, "{flag}: {now}");
    }
}

#[tokio::test]
async fn a_block_in_an_answer_asked_for_without_tools_writes_nothing() {
    // The same write twice: the next request offers no tools (`tool_choice:
    // "none"`), so a block in its answer is not a call.
    let first = "def f():\n    return 2\n";
    let write = || Reply::tool("write_file", json!({"file_path": "app.py", "content": first}));
    let wrap_up = "app.py\n```python\ndef f():\n    return 3\n```";
    let script = vec![read_app(), write(), write(), Reply::text(&[wrap_up])];
    // The answer asked for at once after an identical rewrite is the small
    // profile's (`early_wrap_up`).
    let config = json!({"profile": "small", "file_blocks": true, "file_block_target": "app.py"});
    let (events, r, mock, w) = send(script, config).await;
    assert_eq!(mock.requests()[3].body["tool_choice"], "none", "the answer was asked for without tools");
    assert_eq!((app_py(&w).as_str(), r["response"].as_str()), (first, Some(wrap_up)), "{r}");
    assert_eq!(tool_events(&events).len(), 6, "the read and the two writes only");
}
