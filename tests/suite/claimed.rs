//! The `Claimed` gate through the real binary: an answer that says files
//! were changed, from a send in which none changed, is held against the
//! model's own reading of the answer (one short extra call showing only
//! the answer), never against pirn's reading of its words.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

/// One send of `message` to a fresh worker on `app.py` with `claim_check`
/// on (unless `config` says otherwise), the mock reading every answer as
/// reporting a change when `claims`.
async fn send(script: Vec<Reply>, claims: bool, message: &str, config: Value) -> (Value, MockServer, Worker) {
    let mock = MockServer::start(script).await;
    mock.claims(claims);
    super::asked::send_on_app_py(mock, "claim_check", message, config).await
}

#[tokio::test]
async fn a_change_reported_but_not_made_is_sent_back_once_and_then_made() {
    let claim = "f has been changed to return 2.";
    let mock = super::asked::sent_back_once_then_made(claim, "claim_check", |m| m.claims(true)).await;
    let user = mock.readings()[0]["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(user.contains(claim) && !user.contains("Make f"), "the answer, not the request: {user}");
    assert!(
        mock.requests()[2].body["messages"]
            .to_string()
            .contains("your last answer (left out here) said files were changed")
    );
}

#[tokio::test]
async fn a_change_reported_again_with_nothing_changed_fails_the_send() {
    let script = vec![
        Reply::text(&["I changed f to return 2."]),
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::text(&["Done: f returns 2 now."]),
    ];
    let (r, mock, w) = send(script, true, "Make f in app.py return 2.", json!({})).await;
    super::asked::failed_with_nothing_changed(&r, "Done: f returns 2 now.", &w);
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 2), "sent back once, each answer read");
    // The claim again in the round that had to call a tool (the mock does
    // not hold the model to `tool_choice: "required"`): read and failed too.
    let script = vec![Reply::text(&["I changed f to return 2."]), Reply::text(&["Done: f returns 2 now."])];
    let (r, mock, w) = send(script, true, "Make f in app.py return 2.", json!({})).await;
    super::asked::failed_with_nothing_changed(&r, "Done: f returns 2 now.", &w);
    assert_eq!((mock.requests().len(), mock.readings().len()), (2, 2), "sent back once, each answer read");
}

#[tokio::test]
async fn an_answer_that_reports_no_change_ends_at_once_and_the_check_is_off_unless_asked_for() {
    let (r, mock, _w) = send(vec![Reply::text(&["It returns 1."])], false, "What does f return?", json!({})).await;
    assert_eq!((r["status"].as_str(), r["response"].as_str()), (Some("ok"), Some("It returns 1.")));
    assert_eq!((mock.requests().len(), mock.readings().len()), (1, 1), "no extra turn");

    // Off unless asked for: a worker without the key never reads the
    // answer (the request check, on in 0.3.0, is turned off to count only
    // this gate's readings).
    let mock = MockServer::start(vec![Reply::text(&["Done, f returns 2."])]).await;
    mock.claims(true);
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let (mut w, _) = w.init("0.3.0", json!({"request_check": false})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Make f return 2."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "the default: {r}");
    // answer_checks: false turns it off too.
    let off = json!({"answer_checks": false});
    let (r, mock, _w) = send(vec![Reply::text(&["Done, f returns 2."])], true, "Make f return 2.", off).await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{r}");
}

#[tokio::test]
async fn a_send_that_changed_a_file_or_ran_a_command_is_not_read() {
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "new.py", "content": "x = 1\n"})),
        Reply::text(&["Created new.py."]),
    ];
    let (r, mock, _w) = send(script, true, "Create new.py.", json!({})).await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{r}");
    // A command ran: what it changed pirn cannot see.
    let script = vec![Reply::tool("bash", json!({"command": "true"})), Reply::text(&["Done."])];
    let (r, mock, _w) = send(script, true, "Make f return 2.", json!({})).await;
    assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{r}");
}

#[tokio::test]
async fn a_write_held_back_and_never_confirmed_fails_before_any_reading() {
    // The rewrite drops most of app.py, so the small profile holds it back;
    // the model then reports the change it never confirmed, twice: the
    // held-back note, then the send fails naming the file, before the
    // claimed gate would read anything.
    let old = "def f():\n    return 1\n\n\ndef g():\n    return 2\n";
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::tool("write_file", json!({"file_path": "app.py", "content": "def h():\n    return 3\n"})),
        Reply::text(&["h has been added."]),
        Reply::text(&["h has been added to app.py."]),
    ];
    let mock = MockServer::start(script).await;
    mock.claims(true);
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), old).unwrap();
    let only = json!({"profile": "small", "claim_check": true, "request_check": false, "write_check": false});
    let (mut w, _) = w.init("0.3.0", only).await;
    w.write(json!({"type": "send", "id": "s", "message": "Add h to app.py."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("app.py"), "{r}");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), old, "nothing written");
    let notes: Vec<String> = mock.requests().iter().map(|q| q.body["messages"].to_string()).collect();
    assert_eq!(notes.len(), 4, "{r}");
    assert!(notes[3].contains("was held back"), "{}", notes[3]);
    assert_eq!(mock.readings().len(), 0, "the facts decided: no side call");
}
