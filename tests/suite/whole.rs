//! The whole-file edit format (`edit_format: "whole"`) through the real
//! binary: no tool is offered, the target file is shown after the request,
//! the answer's block replaces it byte for byte, and the operator's check
//! still judges the send. Also: a send whose check cannot run is refused,
//! never reported `ok` unchecked.

use serde_json::{Value, json};

use super::file_blocks::{ORIGINAL, app_py, send};
use super::mock::{MockServer, Reply};
use super::worker::Worker;

const CHECK: &str = "grep -q 'return 2' app.py";

fn block(n: u32) -> String {
    format!("```python\ndef f():\n    return {n}\n```")
}

#[tokio::test]
async fn the_whole_format_offers_no_tool_shows_the_file_and_writes_the_answers_block_until_the_check_passes() {
    let (b3, b2) = (block(3), block(2));
    let script = vec![Reply::text(&[&b3]), Reply::text(&["Done."]), Reply::text(&[&b2]), Reply::text(&["Done now."])];
    let config = json!({"edit_format": "whole", "file_block_target": "app.py", "verify_command": CHECK});
    let (events, r, mock, w) = send(script, config).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("Done now.")), "{r}");
    assert_eq!(app_py(&w), "def f():\n    return 2\n", "exactly the block's lines");
    assert_eq!(r["verification"]["passed"], true, "{r}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    for q in &requests {
        assert!(q.body.get("tools").is_none() && q.body.get("tool_choice").is_none(), "no tool offered: {}", q.body);
    }
    // The file in the chat follows the request, as it was; the system
    // prompt says the format and names the target.
    let messages = requests[0].body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("replaces app.py") && !system.contains("greet"), "{system}");
    let shown = messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(messages[messages.len() - 2]["content"], "Make f in app.py return 2.");
    assert!(shown.contains(&format!("app.py now holds:\n\napp.py\n```\n{ORIGINAL}```")), "{shown}");
    // The failing check goes back in the format's words.
    let note = requests[2].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(note.contains(CHECK) && note.contains("complete new content in a fenced block"), "{note}");
    // Each block ran as a write_file call, seen as any call is.
    let writes: Vec<&Value> = events
        .iter()
        .map(|e| &e["event"])
        .filter(|e| e["event"] == "tool_start" && e["name"] == "write_file")
        .collect();
    assert_eq!(writes.len(), 2, "{events:?}");
    assert_eq!(writes[1]["args"]["content"], "def f():\n    return 2\n");
}

#[tokio::test]
async fn in_the_whole_format_only_the_file_in_the_chat_is_overwritten() {
    // The model names another existing file (one it was never shown) twice:
    // refused with why (without the rule, the refusal would be the one for
    // an unread file, which shows it and lets a new call land), while a new
    // file may be created.
    let other = "app_test.py\n```python\nassert True\n```";
    let new = "notes.md\n```\nx\n```";
    // A bash call written as JSON in the text is shown code, not a call:
    // in this format the model only writes files.
    let shell = "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"touch pwned\"}}\n```";
    let script = vec![
        Reply::text(&[shell]),
        Reply::text(&[other]),
        Reply::text(&[other]),
        Reply::text(&[new]),
        Reply::text(&["Done."]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), ORIGINAL).unwrap();
    std::fs::write(w.workspace.path().join("app_test.py"), "assert False\n").unwrap();
    let config =
        json!({"edit_format": "whole", "file_block_target": "app.py", "request_check": false, "write_check": false});
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": "Make f return 2."})).await;
    let (events, r) = w.result_for("s").await;
    assert!(!w.workspace.path().join("pwned").exists(), "a JSON bash call in the text ran");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app_test.py")).unwrap(), "assert False\n");
    // The lone block is the target's new content, as sent (not a call).
    assert!(app_py(&w).contains("touch pwned") && !app_py(&w).contains("def f"), "{r}");
    assert_eq!(r["files_changed"], json!(["app.py", "notes.md"]), "{r}");
    let ends: Vec<&Value> = events.iter().map(|e| &e["event"]).filter(|e| e["event"] == "tool_end").collect();
    // A failed write_file sent again runs again (a refusal of an unread
    // file would let it land): this one is refused again, for the same reason.
    assert_eq!(ends.len(), 4, "{ends:?}");
    for end in &ends[1..3] {
        assert!(end["result_preview"].as_str().unwrap().contains("not the file in the chat"), "{end:?}");
        assert_eq!(end["is_error"], true, "{end:?}");
    }
    assert_eq!(ends[3]["is_error"], false, "{:?}", ends[3]);
}

#[tokio::test]
async fn the_whole_format_needs_write_file() {
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let config = json!({"model": "m", "system_prompt": "s", "tools": ["read_file"], "edit_format": "whole"});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0", "config": config})).await;
    let answer = w.next().await;
    assert_ne!(answer["type"], "init_ok", "{answer}");
    assert!(answer.to_string().contains("write_file is not among the enabled tools"), "{answer}");
}

#[tokio::test]
async fn a_send_whose_check_cannot_run_is_refused_and_the_model_never_asked() {
    // bash not enabled: the check could not run, so the send would end on
    // the model's word alone. Before, it ended `ok` unchecked.
    let config = json!({"tools": ["read_file", "write_file"], "verify_command": CHECK});
    let (_, r, mock, w) = send(vec![Reply::text(&["Done."])], config).await;
    assert_eq!((r["status"].as_str(), r["error"]["code"].as_str()), (Some("error"), Some("invalid_request")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("bash is not among the enabled tools"), "{r}");
    assert!(mock.requests().is_empty());
    assert_eq!(app_py(&w), ORIGINAL);
    // The approval policy would ask for it: refused the same way.
    let config = json!({"approval_mode": "auto-edit", "verify_command": CHECK});
    let (_, r, mock, _w) = send(vec![Reply::text(&["Done."])], config).await;
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("would need approval"), "{r}");
    assert!(mock.requests().is_empty());
}

#[tokio::test]
async fn pirn_run_takes_the_whole_format_with_its_own_system_prompt() {
    let mock = MockServer::start(vec![Reply::text(&[&block(2)]), Reply::text(&["Done."])]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), ORIGINAL).unwrap();
    let args = ["run", "--request-check=false", "--edit-format", "whole", "--file-blocks=app.py", "--verify", CHECK];
    let out = super::worker::pirn_command(&mock.base_url(), &[])
        .args(args)
        .arg("Make f return 2.")
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("app.py")).unwrap(), "def f():\n    return 2\n");
    let system = mock.requests()[0].body["messages"][0]["content"].as_str().unwrap().to_owned();
    assert!(system.contains("The file you may change is shown below the request"), "{system}");
    assert!(!system.contains("edit_file"), "the tool-call prompt is not used: {system}");
}

fn cut_off(text: &str) -> Reply {
    Reply::Text {
        chunks: vec![text.to_owned()],
        usage: Some([10, 5]),
        delay_ms: 0,
        finish_reason: Some("length".into()),
    }
}

#[tokio::test]
async fn a_checked_sends_answer_cut_off_at_the_token_limit_spends_a_round_and_is_dropped() {
    // With the operator's check, a cut-off answer is a miss the model may
    // make good: it is left out of the history and the model is told why.
    // Without the gate's round, the send ends provider_error at once.
    let b2 = block(2);
    let script = vec![cut_off("Let me explain at length RAMBLE"), Reply::text(&[&b2]), Reply::text(&["Done."])];
    let config = json!({"edit_format": "whole", "file_block_target": "app.py", "verify_command": CHECK});
    let (_, r, mock, w) = send(script, config).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("Done.")), "{r}");
    assert_eq!(app_py(&w), "def f():\n    return 2\n");
    let requests = mock.requests();
    let second = requests[1].body["messages"].to_string();
    assert!(!second.contains("RAMBLE"), "the cut-off answer is dropped: {second}");
    let note = requests[1].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(note.contains("token limit") && note.contains("complete new content in a fenced block"), "{note}");
}

#[tokio::test]
async fn a_cut_off_answer_ends_the_send_once_the_checks_rounds_are_spent() {
    // verify_rounds 1: the first cut-off answer spends it; the second ends
    // the send provider_error with its text, and no third request is made.
    let script = vec![cut_off("one"), cut_off("two"), Reply::text(&[&block(2)])];
    let config =
        json!({"edit_format": "whole", "file_block_target": "app.py", "verify_command": CHECK, "verify_rounds": 1});
    let (_, r, mock, w) = send(script, config).await;
    assert_eq!((r["status"].as_str(), r["error"]["code"].as_str()), (Some("error"), Some("provider_error")), "{r}");
    assert_eq!(r["response"], "two");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(app_py(&w), ORIGINAL, "nothing written");
}

#[tokio::test]
async fn an_earlier_checks_output_is_pruned_so_a_long_checked_send_fits_its_window() {
    // Each failing check sends back ~3 KB of output in a note of pirn's.
    // In a 4,096-token window a few rounds no longer fit: the oldest notes
    // become stubs (no summary call, which would take a scripted
    // reply), while the request, the model's blocks and the note being
    // answered stay whole.
    let check = "seq 1 800; grep -q 'return 2' app.py";
    let mut script = Vec::new();
    for n in [3, 4, 5, 6] {
        script.extend([Reply::text(&[&block(n)]), Reply::text(&["Done."])]);
    }
    script.extend([Reply::text(&[&block(2)]), Reply::text(&["Done now."])]);
    let mock = MockServer::start_windowed(script, 4096, true).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), ORIGINAL).unwrap();
    let config = json!({"edit_format": "whole", "file_block_target": "app.py", "verify_command": check,
        "verify_rounds": 6, "max_iterations": 20, "max_tokens": 512, "request_check": false, "write_check": false});
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": "Make f in app.py return 2."})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("Done now.")), "{r}");
    assert_eq!(app_py(&w), "def f():\n    return 2\n");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"]["event"].as_str()).collect();
    assert!(kinds.contains(&"context_prune") && !kinds.contains(&"context_compact"), "{kinds:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 10, "one request per scripted answer, none for a summary");
    let last = requests[9].body["messages"].as_array().unwrap().clone();
    let text = |m: &Value| m["content"].as_str().unwrap_or("").to_owned();
    assert!(last.iter().any(|m| text(m).starts_with("[pirn] [pruned: an earlier note")), "{last:?}");
    assert!(last.iter().any(|m| text(m) == "Make f in app.py return 2."), "the request stays whole");
    let notes: Vec<String> = last.iter().map(text).filter(|t| t.starts_with("[pirn] ")).collect();
    let latest = notes.last().unwrap();
    assert!(latest.contains(check) && latest.contains("\n800"), "the latest check's output stays whole: {latest}");
}
