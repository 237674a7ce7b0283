//! What the model has seen survives a resume in a new process: a
//! whole-file write of a file the model read before the resume lands as
//! sent, and one from a view the file no longer matches (changed while no
//! process held the session) is refused as stale, as within one process.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

const OLD: &str = "def f():\n    return 1\n";
const NEW: &str = "def f():\n    return 2\n";

/// Reads `app.py` in a first worker (a logged 0.3.0 session), shuts it
/// down, changes the file to `between` when given, and resumes the
/// session in a second worker on the same workspace, whose model writes
/// `NEW` over the file. Returns the write's tool_end, the file's bytes
/// after and the log's entries.
async fn read_resume_write(between: Option<&str>) -> (Value, String, String) {
    let write = Reply::tool("write_file", json!({"file_path": "app.py", "content": NEW}));
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::text(&["f returns 1."]),
        write,
        Reply::text(&["Done."]),
    ];
    let mock = MockServer::start(script).await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"profile": "exact"})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    let app = w.workspace.path().join("app.py");
    std::fs::write(&app, OLD).unwrap();
    w.write(json!({"type": "send", "id": "1", "message": "What does f return?"})).await;
    assert_eq!(w.result_for("1").await.1["status"], "ok");
    w.write(json!({"type": "shutdown", "id": "2"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    if let Some(text) = between {
        std::fs::write(&app, text).unwrap();
    }

    let cwd = w.workspace.path().to_str().unwrap().to_owned();
    let resume = json!({"profile": "exact", "resume_session_id": sid, "cwd": cwd});
    let (mut w2, _) = Worker::ready(&mock.base_url(), &[], resume).await;
    w2.write(json!({"type": "send", "id": "3", "message": "Make f return 2."})).await;
    let (events, r) = w2.result_for("3").await;
    assert_eq!(r["status"], "ok", "{r}");
    let end = super::contract::tool_ends(&events).into_iter().find(|e| e["name"] == "write_file").cloned().unwrap();
    let export = super::persist::pirn_sync(&mock.base_url(), &["sessions", "export", &sid]);
    let entries = String::from_utf8(export.stdout).unwrap();
    (end, std::fs::read_to_string(&app).unwrap(), entries)
}

#[tokio::test]
async fn a_file_read_before_a_resume_counts_as_read_after_it() {
    let (end, on_disk, log) = read_resume_write(None).await;
    assert_eq!(end["is_error"], false, "the view came back with the session: {end}");
    assert_eq!(on_disk, NEW, "the write landed as sent");
    let seen = log.lines().filter(|l| l.contains(r#""kind":"seen""#)).count();
    assert_eq!(seen, 2, "one entry per send that changed what was seen: {log}");
}

#[tokio::test]
async fn a_file_changed_while_no_process_held_the_session_is_refused_as_changed() {
    let changed = "def f():\n    return 3\n";
    let (end, on_disk, _) = read_resume_write(Some(changed)).await;
    assert_eq!(end["is_error"], true, "a whole write from the old view: {end}");
    let text = end["result_preview"].as_str().unwrap_or_default();
    assert!(text.contains("changed since"), "refused as stale, not as unread: {text}");
    assert_eq!(on_disk, changed, "nothing written");
}
