//! Background shells (0.3.0), through the binary: `bash` with
//! `run_in_background` returns at once; `bash_output` reads what the command
//! printed since the last read and whether it runs; `kill_shell` kills its
//! group; a shell outlives its send but not a cancel of that send nor the
//! session; at most eight run at once; 0.2.0 and the small profile do not
//! offer them.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockCall, MockServer, Reply, last_tool_text};
use super::worker::{Worker, processes_with, until_gone};

fn config() -> Value {
    json!({"workspace_listing": false, "approval_mode": "full-auto"})
}

/// A marker no other test's processes carry.
fn marker(what: &str) -> String {
    format!("pirn-bg-{what}-{}", std::process::id())
}

/// The tool names a request offered.
fn offered(body: &Value) -> Vec<String> {
    body["tools"].as_array().into_iter().flatten().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

/// The text of every tool message of a request body, in order.
fn tool_texts(body: &Value) -> Vec<String> {
    let msgs = body["messages"].as_array().unwrap();
    msgs.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_background_command_is_read_later_and_killed() {
    let mark = marker("read");
    let command =
        format!("echo started; for i in $(seq 1 5); do echo tick $i; sleep 0.1; done; sleep 300; echo never # {mark}");
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": command, "run_in_background": true, "description": "a watcher"})),
        Reply::tool("bash_output", json!({"shell_id": "shell_1", "wait_ms": 1500})),
        Reply::tool("KillShell", json!({"shell_id": "shell_1"})),
        Reply::tool("kill_shell", json!({"shell_id": "shell_1"})),
        Reply::tool("bash_output", json!({"bash_id": "shell_1"})),
        Reply::tool("bash_output", json!({"shell_id": "shell_9"})),
        Reply::text(&["done"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config()).await;
    w.write(json!({"type": "send", "id": "1", "message": "start the watcher"})).await;
    let started = Instant::now();
    let (_, result) = w.result_for("1").await;
    assert_eq!(result["status"], "ok", "{result}");
    let reqs = mock.requests();
    let first = offered(&reqs[0].body);
    assert!(first.contains(&"bash_output".to_owned()) && first.contains(&"kill_shell".to_owned()), "{first:?}");
    let bash = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "bash").unwrap();
    assert!(bash["function"]["parameters"]["properties"]["run_in_background"].is_object(), "{bash}");
    let texts = tool_texts(&reqs.last().unwrap().body);
    assert!(texts[0].contains("started in the background as shell_1"), "{texts:?}");
    // Waited for the ticks (not for the end: it sleeps 300 s).
    assert!(texts[1].contains("started\ntick 1\n") && texts[1].contains("tick 5\n"), "{texts:?}");
    assert!(texts[1].contains("[shell_1 is still running"), "{texts:?}");
    // `KillShell` is Claude Code's name; only pirn's are offered here.
    assert!(texts[2].contains("unknown tool"), "{texts:?}");
    assert!(texts[3].contains("shell_1 was killed"), "{texts:?}");
    assert!(texts[4].contains("[shell_1 ended: killed by kill_shell"), "{texts:?}");
    assert!(!texts[4].contains("tick"), "read once: {texts:?}");
    assert!(texts[5].contains("no background shell \"shell_9\"") && texts[5].contains("shell_1"), "{texts:?}");
    assert!(started.elapsed() < Duration::from_secs(30), "the send did not wait for the command");
    assert_eq!(until_gone(&mark).await, Vec::<String>::new(), "killed with its group");
}

#[tokio::test]
async fn a_shell_outlives_its_send_but_not_its_cancel_nor_the_session() {
    let (kept, cancelled) = (marker("kept"), marker("cancelled"));
    let mock = MockServer::start(vec![
        Reply::tool(
            "bash",
            json!({"command": format!("echo up; sleep 300; echo x # {kept}"), "run_in_background": true}),
        ),
        Reply::text(&["started"]),
        Reply::tool("bash_output", json!({"shell_id": "shell_1", "wait_ms": 200})),
        Reply::text(&["still up"]),
        Reply::tool("bash", json!({"command": format!("sleep 300; echo x # {cancelled}"), "run_in_background": true})),
        Reply::tool("bash", json!({"command": "sleep 30"})),
        Reply::text(&["never"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config()).await;
    w.write(json!({"type": "send", "id": "1", "message": "start it"})).await;
    let (_, r1) = w.result_for("1").await;
    assert_eq!(r1["status"], "ok", "{r1}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(processes_with(&kept).len(), 1, "it outlives the send that started it");
    w.write(json!({"type": "send", "id": "2", "message": "is it up?"})).await;
    let (_, r2) = w.result_for("2").await;
    assert_eq!(r2["status"], "ok", "{r2}");
    let read = last_tool_text(&mock.requests()[3].body);
    assert!(read.contains("up\n") && read.contains("[shell_1 is still running"), "{read}");

    w.write(json!({"type": "send", "id": "3", "message": "start another, then wait"})).await;
    w.until(|v| v["event"]["event"] == "tool_start" && v["event"]["name"] == "bash" && v["send_id"] == "3").await;
    w.until(|v| v["event"]["event"] == "tool_start" && v["event"]["name"] == "bash" && v["send_id"] == "3").await;
    assert_eq!(processes_with(&cancelled).len(), 1);
    w.write(json!({"type": "cancel", "id": "c", "target_id": "3"})).await;
    let (_, r3) = w.result_for("3").await;
    assert_eq!(r3["error"]["code"], "cancelled", "{r3}");
    assert_eq!(until_gone(&cancelled).await, Vec::<String>::new(), "a cancel kills the send's background shells");
    assert_eq!(processes_with(&kept).len(), 1, "and no other send's");

    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    let _ = w.exit_code().await;
    assert_eq!(until_gone(&kept).await, Vec::<String>::new(), "the session's end kills the rest");
}

#[tokio::test]
async fn at_most_eight_run_at_once() {
    let mark = marker("many");
    let start = |i: usize| MockCall {
        name: "bash".into(),
        arguments: json!({"command": format!("sleep 300; echo {i} # {mark}"), "run_in_background": true}).to_string(),
    };
    let mock = MockServer::start(vec![
        Reply::ToolCalls { calls: (0..9).map(start).collect(), usage: Some([20, 8]), text: None },
        Reply::text(&["nine asked"]),
    ])
    .await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config()).await;
    w.write(json!({"type": "send", "id": "1", "message": "start many"})).await;
    let (_, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    let texts = tool_texts(&mock.requests()[1].body);
    assert_eq!(texts.iter().filter(|t| t.contains("started in the background")).count(), 8, "{texts:?}");
    assert!(texts[8].contains("at most 8"), "{texts:?}");
    assert_eq!(processes_with(&mark).len(), 8);
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    let _ = w.exit_code().await;
    assert_eq!(until_gone(&mark).await, Vec::<String>::new());
}

#[tokio::test]
async fn not_offered_in_0_2_0_nor_by_the_small_profile_nor_when_set_off() {
    for (version, extra) in
        [("0.2.0", json!({})), ("0.3.0", json!({"profile": "small"})), ("0.3.0", json!({"background_shells": false}))]
    {
        let mock = MockServer::start(vec![
            Reply::tool("bash", json!({"command": "echo hi", "run_in_background": true})),
            Reply::text(&["ok"]),
        ])
        .await;
        let mut cfg = config();
        cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (mut w, _) = Worker::spawn(&mock.base_url(), &[]).await.init(version, cfg).await;
        w.write(json!({"type": "send", "id": "1", "message": "run"})).await;
        let _ = w.result_for("1").await;
        let reqs = mock.requests();
        let tools = offered(&reqs[0].body);
        assert!(!tools.iter().any(|t| t == "bash_output" || t == "kill_shell"), "{version} {extra}: {tools:?}");
        let bash = reqs[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "bash").unwrap();
        assert!(bash["function"]["parameters"]["properties"].get("run_in_background").is_none(), "{bash}");
        let text = last_tool_text(&reqs[1].body);
        assert!(text.contains("run_in_background is not offered"), "{version} {extra}: {text}");
    }
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.2.0",
        "config": {"model": "m", "system_prompt": "s", "tools": ["bash"], "background_shells": true}}))
        .await;
    let answer = w.next().await;
    assert_eq!(answer["error"]["code"], "protocol_error", "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("background_shells"), "{answer}");
}
