//! The `SearchedOnly` gate through the real binary: in the `small`
//! profile, an answer that changed nothing and rests on `grep` results
//! alone is sent back once to read the file; the exact profile, a send
//! that read a file, and a second answer are let through. No side call.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

const APP: &str = "def f():\n    return 1\n\n\ndef g():\n    return 2\n";

/// One send of `message` to a fresh 0.3.0 worker on `app.py` in `profile`
/// with the side calls off (this gate makes none): the result and the
/// requests the mock saw.
async fn send(script: Vec<Reply>, profile: &str) -> (Value, Vec<Value>, MockServer) {
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), APP).unwrap();
    let config = json!({"profile": profile, "request_check": false, "write_check": false, "claim_check": false});
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": "How many functions does app.py define?"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), APP, "nothing written");
    let bodies = mock.requests().iter().map(|q| q.body.clone()).collect();
    (r, bodies, mock)
}

fn grep() -> Reply {
    Reply::tool("grep", json!({"pattern": "def f", "path": "app.py"}))
}

#[tokio::test]
async fn an_answer_from_grep_alone_is_sent_back_once_to_read_the_file() {
    let script = vec![
        grep(),
        Reply::text(&["1"]),
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::text(&["2"]),
    ];
    let (r, bodies, mock) = send(script, "small").await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("2")), "{r}");
    assert_eq!(bodies.len(), 4, "one model call more: {r}");
    assert_eq!(r["iterations"], 4, "the call it asked for counts: {r}");
    let note = bodies[2]["messages"].to_string();
    assert!(note.contains("rests on grep results alone"), "{note}");
    assert!(!note.contains("\"1\""), "the first answer is left out of what the model reads next: {note}");
    assert_eq!(bodies[2]["tool_choice"], "required", "the next request must call a tool");
    assert_eq!(mock.readings().len(), 0, "no side call");
}

#[tokio::test]
async fn the_second_answer_passes_whatever_it_rests_on() {
    // The mock does not hold the model to `tool_choice: "required"`: it
    // answers again from the same grep, and the gate lets it through.
    let (r, bodies, _) = send(vec![grep(), Reply::text(&["1"]), Reply::text(&["1 function."])], "small").await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("1 function.")), "{r}");
    assert_eq!(bodies.len(), 3, "{r}");
}

#[tokio::test]
async fn a_read_the_exact_profile_or_glob_alone_let_the_answer_through() {
    let read_then_grep = vec![Reply::tool("read_file", json!({"file_path": "app.py"})), grep(), Reply::text(&["2"])];
    let glob = vec![Reply::tool("glob", json!({"pattern": "*.py"})), Reply::text(&["1 file."])];
    for (script, profile, why) in [
        (vec![grep(), Reply::text(&["1"])], "exact", "the default profile has no such check"),
        (read_then_grep, "small", "a file was read"),
        (glob, "small", "names answer a question about files"),
    ] {
        let (r, bodies, _) = send(script.clone(), profile).await;
        assert_eq!(r["status"], "ok", "{why}: {r}");
        assert_eq!(bodies.len(), script.len(), "{why}: no send-back: {r}");
    }
}
