//! `write_check` through the real binary: every write of a send whose
//! request the model itself reads as asking only for information is held
//! back (nothing written, the result says why); pirn reads no word of the
//! request.

use serde_json::{Value, json};

use super::asked::send_on_app_py;
use super::mock::{MockServer, Reply};

const ORIGINAL: &str = "def f():\n    return 1\n";
const CHANGED: &str = "def f():\n    return 2\n";

fn write_app() -> Reply {
    Reply::tool("write_file", json!({"file_path": "app.py", "content": CHANGED}))
}

fn read_app() -> Reply {
    Reply::tool("read_file", json!({"file_path": "app.py"}))
}

/// One send of `message` whose request the mock reads as a question: it
/// ends `ok` with app.py as it was and no file changed.
async fn held_send(script: Vec<Reply>, message: &str) -> (Value, MockServer) {
    let mock = MockServer::start(script).await;
    mock.reads_change(false);
    let (r, mock, w) = send_on_app_py(mock, "write_check", message, json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), ORIGINAL, "nothing written");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    (r, mock)
}

/// The `tool_end` events of a send, in order.
fn tool_ends(events: &[Value]) -> Vec<Value> {
    events.iter().filter(|e| e["event"]["event"] == "tool_end").map(|e| e["event"].clone()).collect()
}

#[tokio::test]
async fn a_write_to_a_request_read_as_a_question_is_held_and_the_answer_changes_nothing() {
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        write_app(),
        Reply::text(&["f returns 1; to make it return 2, change the return line."]),
    ];
    let (_, mock) = held_send(script, "Show me how f could return 2.").await;
    let readings = mock.readings();
    assert_eq!(readings.len(), 1, "read once, at the first write");
    let last = readings[0]["messages"].as_array().unwrap().last().unwrap().clone();
    assert!(last["content"].as_str().unwrap().contains("Show me how f could return 2."), "{last}");
    let held = &mock.requests()[2].body["messages"];
    let last = held.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool", "{last}");
    let text = last["content"].as_str().unwrap();
    assert!(text.contains("no file changes in this send") && text.contains("Answer the request in words"), "{text}");
}

#[tokio::test]
async fn every_write_of_a_send_read_as_a_question_is_held_and_it_is_read_once() {
    let script = vec![
        write_app(),
        Reply::tool("edit_file", json!({"file_path": "app.py", "old_string": "1", "new_string": "2"})),
        Reply::text(&["Change the return line of f to return 2."]),
    ];
    let (r, mock) = held_send(script, "How would I make f return 2?").await;
    assert_eq!(mock.readings().len(), 1, "one reading per send");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{r}");
    let messages = requests[2].body["messages"].as_array().unwrap();
    let held = &messages[messages.len() - 2];
    assert!(held["content"].as_str().unwrap().contains("this edit_file call wrote nothing"), "{held}");
    // The second write withheld: the answer is asked for without tools.
    assert_eq!(requests[2].body["tool_choice"], "none", "{r}");
    let note = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(note.contains("writes are not run") && note.contains("How would I make f return 2?"), "{note}");
}

#[tokio::test]
async fn a_write_to_a_request_read_as_a_change_runs_at_once() {
    let mock = MockServer::start(vec![read_app(), write_app(), Reply::text(&["Done."])]).await;
    mock.reads_change(true);
    let (r, mock, w) = send_on_app_py(mock, "write_check", "Make f return 2.", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), CHANGED);
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 1), "one reading, no extra turn");
}

#[tokio::test]
async fn a_held_write_is_reported_as_a_failed_tool_call() {
    let mock = MockServer::start(vec![write_app(), Reply::text(&["It returns 1."])]).await;
    mock.reads_change(false);
    let w = super::worker::Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("app.py"), ORIGINAL).unwrap();
    let (mut w, _) = w.init("0.3.0", json!({"write_check": true})).await;
    w.write(json!({"type": "send", "id": "s", "message": "What does f return?"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let ends = tool_ends(&events);
    assert_eq!(ends.len(), 1, "{events:?}");
    assert_eq!((ends[0]["name"].as_str(), ends[0]["is_error"].as_bool()), (Some("write_file"), Some(true)));
}

#[tokio::test]
async fn off_when_set_off_or_with_an_operators_check_and_a_failed_reading_holds_nothing() {
    // Off, or a send with a verify_command (the operator's check decides
    // what the send must do): the write runs, the request is never read.
    for config in [json!({"write_check": false}), json!({"verify_command": "true"})] {
        let mock = MockServer::start(vec![read_app(), write_app(), Reply::text(&["Done."])]).await;
        mock.reads_change(false);
        let (r, mock, w) = send_on_app_py(mock, "write_check", "Make f return 2.", config.clone()).await;
        assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 0), "{config}: {r}");
        assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), CHANGED, "{config}");
    }
    for reply in ["no", r#"{"changes_files": "no"}"#] {
        let mock = MockServer::start(vec![read_app(), write_app(), Reply::text(&["Done."])]).await;
        mock.reading_reply(reply);
        let (r, mock, w) = send_on_app_py(mock, "write_check", "Make f return 2.", json!({})).await;
        assert_eq!((r["status"].as_str(), mock.readings().len()), (Some("ok"), 1), "{reply}: {r}");
        assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), CHANGED, "{reply}");
    }
}

#[tokio::test]
async fn a_write_withheld_a_second_time_asks_for_the_answer_without_tools() {
    // The model reads the file, tries an edit (withheld), reads again and
    // tries the same edit: told once that no write runs, it is asked for
    // its answer without tools, which ends the send as any answer does.
    let edit = || Reply::tool("edit_file", json!({"file_path": "app.py", "old_string": "1", "new_string": "2"}));
    let script = vec![read_app(), edit(), read_app(), edit(), Reply::text(&["f returns 1."])];
    let (r, mock) = held_send(script, "What does f return?").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "{r}");
    assert!(requests[..4].iter().all(|q| q.body["tool_choice"] != "none"), "tools until the second withheld write");
    assert_eq!(requests[4].body["tool_choice"], "none", "the answer is asked for without tools");
    assert_eq!(r["response"], "f returns 1.", "{r}");
    // A single withheld write leaves the model its tools.
    let script = vec![edit(), read_app(), Reply::text(&["f returns 1."])];
    let (r, mock) = held_send(script, "What does f return?").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{r}");
    assert!(requests.iter().all(|q| q.body["tool_choice"] != "none"), "{r}");
}
