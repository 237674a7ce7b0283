//! The `Asked` gate through the real binary: an answer that changed no
//! file is held against the model's own reading of the request (one short
//! extra call showing only the request), never against pirn's reading of
//! its words.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

/// One send of `message` to a fresh worker on `app.py`, the mock reading
/// the request as asking for a change when `reads_change`.
async fn send(script: Vec<Reply>, reads_change: bool, message: &str, config: Value) -> (Value, MockServer, Worker) {
    let mock = MockServer::start(script).await;
    mock.reads_change(reads_change);
    send_on_app_py(mock, "request_check", message, config).await
}

/// One send of `message` through `mock` to a fresh worker whose workspace
/// holds `app.py` (`f` returning 1), with the gate `check` (a config key)
/// on and the other gates that read through the model off, unless
/// `config` names them.
pub(super) async fn send_on_app_py(
    mock: MockServer,
    check: &str,
    message: &str,
    config: Value,
) -> (Value, MockServer, Worker) {
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), "def f():\n    return 1\n").unwrap();
    let mut config = config;
    for key in ["request_check", "write_check", "claim_check"] {
        if config.get(key).is_none() {
            config[key] = json!(key == check);
        }
    }
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (_, r) = w.result_for("s").await;
    (r, mock, w)
}

/// Asserts that `r` ended `verification_failed` because no file changed,
/// with the model's `answer` kept, and that app.py is as it was.
pub(super) fn failed_with_nothing_changed(r: &Value, answer: &str, w: &Worker) {
    assert_eq!(r["status"], "error", "never `ok` when nothing changed: {r}");
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("no file changed"), "{r}");
    assert_eq!(r["response"], answer, "the model's answer is kept: {r}");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), "def f():\n    return 1\n");
}

#[tokio::test]
async fn a_change_answered_without_a_write_is_sent_back_once_and_then_made() {
    let mock = sent_back_once_then_made("I changed f to return 2.", "request_check", |m| m.reads_change(true)).await;
    let shown = &mock.readings()[0]["messages"];
    let last = shown.as_array().unwrap().last().unwrap();
    assert!(last["content"].as_str().unwrap().contains("Make f in app.py return 2."), "the request: {shown}");
    assert!(mock.requests()[2].body["messages"].to_string().contains("No file has changed in this send"));
}

/// A gate's (`check`'s) send back: the model answers `claim` after reading
/// app.py, the gate (its reading set up by `setup`) sends it back once with
/// a required tool call, the write lands and the send ends `ok`, read once.
/// Returns the mock, for what the reading and the note say.
pub(super) async fn sent_back_once_then_made(claim: &str, check: &str, setup: impl Fn(&MockServer)) -> MockServer {
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::text(&[claim]),
        Reply::tool("write_file", json!({"file_path": "app.py", "content": "def f():\n    return 2\n"})),
        Reply::text(&["f now returns 2."]),
    ];
    let mock = MockServer::start(script).await;
    setup(&mock);
    let (r, mock, w) = send_on_app_py(mock, check, "Make f in app.py return 2.", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), "def f():\n    return 2\n");
    assert_eq!(r["files_changed"], json!(["app.py"]), "{r}");
    let readings = mock.readings();
    assert_eq!(readings.len(), 1, "read once, at the answer that changed nothing");
    // The reading sees the request alone after its worked examples: none
    // of the send's conversation.
    let shown = readings[0]["messages"].as_array().unwrap();
    let text = |m: &Value| m["content"].as_str().unwrap_or_default().to_owned();
    let label = text(shown.last().unwrap()).split_once(":\n").unwrap().0.to_owned();
    assert!(!shown.iter().any(|m| m["role"] == "tool" || text(m) == claim), "{shown:?}");
    assert!(shown.iter().filter(|m| m["role"] == "user").all(|m| text(m).starts_with(&format!("{label}:\n"))));
    assert!(readings[0].get("tools").is_none() && readings[0]["response_format"]["type"] == "json_schema");
    let second = &mock.requests()[2].body;
    assert_eq!(second["tool_choice"], "required", "the next request must act");
    // The answer sent back is out of the model's view (kept, the small
    // model repeats it); the note ends the history.
    let shown = second["messages"].as_array().unwrap();
    assert!(!shown.iter().any(|m| m["content"].as_str() == Some(claim)), "the answer is left out: {second}");
    assert!(shown.last().unwrap()["content"].as_str().unwrap().starts_with("[pirn] No file has changed"), "{second}");
    assert!(mock.requests()[3].body.get("tool_choice").is_none(), "then the tools are free again");
    mock
}

#[tokio::test]
async fn a_change_request_still_unchanged_after_the_round_ends_verification_failed() {
    let script = || {
        vec![
            Reply::text(&["f already returns what you want."]),
            Reply::tool("read_file", json!({"file_path": "app.py"})),
            Reply::text(&["It already does."]),
        ]
    };
    let (r, mock, w) = send(script(), true, "Make sure f in app.py returns 1.", json!({})).await;
    failed_with_nothing_changed(&r, "It already does.", &w);
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 1), "sent back once, read once");

    // With the operator's check, the check decides: it passes, so the
    // request needed no change.
    let checked = json!({"verify_command": "true"});
    let (r, mock, _w) = send(script(), true, "Make sure f in app.py returns 1.", checked).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "It already does.");
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 1), "sent back once, read once");
}

#[tokio::test]
async fn a_question_read_as_one_ends_at_once_and_the_check_is_the_small_profiles_in_0_3_only() {
    let (r, mock, _w) = send(vec![Reply::text(&["It returns 1."])], false, "What does f return?", json!({})).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("It returns 1.")));
    assert_eq!((mock.requests().len(), mock.readings().len()), (1, 1), "no extra turn");

    // The default: off (no side call) unless the profile turns it on, and
    // then only in a 0.3.0 session (0.2.0 servers never recorded the call).
    let default = |version: &'static str, config: Value| async move {
        let mock = MockServer::start(vec![Reply::text(&["Done."]), Reply::text(&["Done."])]).await;
        mock.reads_change(true);
        let w = Worker::spawn(&mock.base_url(), &[]).await;
        let (mut w, _) = w.init(version, config).await;
        w.write(json!({"type": "send", "id": "s", "message": "Make f return 2."})).await;
        let (_, r) = w.result_for("s").await;
        (r, mock.requests().len(), mock.readings().len())
    };
    let (r, requests, readings) = default("0.3.0", json!({})).await;
    assert_eq!((r["status"].as_str(), requests, readings), (Some("ok"), 1, 0), "the default profile: {r}");
    assert!(r.get("side_calls").is_none(), "{r}");
    // The mock does not hold the model to `tool_choice: "required"`: the
    // answer in words it gives in that round still ends the send.
    let small = json!({"profile": "small"});
    let (r, requests, readings) = default("0.3.0", small.clone()).await;
    assert_eq!(r["error"]["code"], "verification_failed", "the small profile: {r}");
    assert_eq!((requests, readings), (2, 1), "sent back once, read once");
    assert_eq!((r["iterations"].as_u64(), r["side_calls"]["calls"].as_u64()), (Some(2), Some(1)), "{r}");
    let (r, requests, readings) = default("0.2.0", small).await;
    assert_eq!((r["status"].as_str(), requests, readings), (Some("ok"), 1, 0), "0.2.0 with the small profile: {r}");
    let off = json!({"request_check": false});
    let (r, mock, _w) = send(vec![Reply::text(&["Done."])], true, "Make f return 2.", off).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!((mock.requests().len(), mock.readings().len()), (1, 0), "never asked when off");
}

#[tokio::test]
async fn a_send_that_cannot_write_or_ran_a_command_is_not_read() {
    // Read-only tools: nothing the model could have written.
    let ro = json!({"tools": ["read_file", "grep"]});
    let (r, mock, _w) = send(vec![Reply::text(&["Done."])], true, "Make f return 2.", ro).await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{r}");
    // A command ran: what it changed pirn cannot see.
    let script = vec![Reply::tool("bash", json!({"command": "true"})), Reply::text(&["Done."])];
    let (r, mock, _w) = send(script, true, "Make f return 2.", json!({})).await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{r}");
}

#[tokio::test]
async fn a_provider_that_refuses_a_required_tool_call_is_asked_an_ordinary_turn() {
    let refused = r#"{"error":{"message":"tool_choice \"required\" is not supported"}}"#;
    let script = vec![
        Reply::text(&["I changed f."]),
        Reply::status(400, refused),
        Reply::text(&["Nothing to change after all."]),
    ];
    let (r, mock, _w) = send(script, true, "Make f in app.py return 2.", json!({})).await;
    assert_eq!(r["error"]["code"], "verification_failed", "still no change: {r}");
    assert_eq!(r["response"], "Nothing to change after all.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "the refused request, then the same turn without it");
    assert_eq!(requests[1].body["tool_choice"], "required");
    assert!(requests[2].body.get("tool_choice").is_none());
}

#[tokio::test]
async fn a_reading_that_is_not_the_json_asked_for_lets_the_answer_through() {
    // Prose, a string where a boolean belongs, extra keys meant to steer:
    // none of them is a reading, and none gets more than the one answer.
    for reply in ["Sure, it asks for a change.", r#"{"changes_files": "yes"}"#, "", r#"{"tools": ["bash"]}"#] {
        let mock = MockServer::start(vec![Reply::text(&["Done."])]).await;
        mock.reading_reply(reply);
        let w = Worker::spawn(&mock.base_url(), &[]).await;
        let (mut w, _) = w.init("0.3.0", json!({"request_check": true})).await;
        w.write(json!({"type": "send", "id": "s", "message": "Make f return 2."})).await;
        let (_, r) = w.result_for("s").await;
        assert_eq!(r["status"], "ok", "{reply:?}: {r}");
        assert_eq!(r["response"], "Done.", "{reply:?}");
        assert_eq!((mock.requests().len(), mock.readings().len()), (1, 1), "{reply:?}: one turn, one reading");
    }
}

#[tokio::test]
async fn the_request_is_read_once_per_send() {
    // The operator's check fails at every answer, so the model answers three
    // times without changing a file; the request was read as a question once.
    let script = vec![Reply::text(&["It returns 1."]), Reply::text(&["Still 1."]), Reply::text(&["1."])];
    let config = json!({"verify_command": "false"});
    let (r, mock, _w) = send(script, false, "What does f return?", config).await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 1), "three answers, one reading");
}

#[tokio::test]
async fn the_reading_counts_against_the_token_budget_like_a_turn() {
    // The mock reports no usage for a reading, so pirn's estimate of it
    // (its request's bytes / 4, ~170 tokens) is what the budget counts: with
    // the two turns at 43 tokens, a 100-token budget is spent by the reading
    // and the round the gate gave is never asked for.
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::text(&["I changed f to return 2."]),
        Reply::tool("write_file", json!({"file_path": "app.py", "content": "def f():\n    return 2\n"})),
    ];
    let (r, mock, _w) = send(script, true, "Make f in app.py return 2.", json!({"max_total_tokens": 100})).await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert_eq!((mock.requests().len(), mock.readings().len()), (2, 1), "two turns, one reading, then the budget");
    assert_eq!(r["usage"]["total_tokens"], 43, "usage is what the server reported: {r}");
}
