//! The honest loop, through the real binary with a model that does exactly
//! the right thing: pirn runs nothing the model did not call, a write lands
//! byte for byte (or is held back once, saying why), a question gets its
//! answer without extra turns, and nothing is edited on pirn's own account.

use serde_json::{Value, json};

use super::finish::{last_message, send_with};
use super::mock::{Reply, last_tool_text};

/// The `tool_start` events of `events` for tool `name`.
fn starts<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"]["event"] == "tool_start" && e["event"]["name"] == name).collect()
}

#[tokio::test]
async fn a_script_named_in_a_question_is_never_run_by_pirn() {
    // Running deploy.sh would leave a marker; the model answers from reading it.
    let files = [("deploy.sh", "#!/bin/sh\ntouch DEPLOYED\necho deployed to \"$1\"\n")];
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "deploy.sh"})),
        Reply::text(&["It creates a DEPLOYED marker and prints the target."]),
    ];
    let message = "Explain what `sh deploy.sh staging` does. Do not deploy.";
    let (events, r, mock, w) = send_with(script, &files, message, json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert!(starts(&events, "bash").is_empty(), "no command ran: {events:?}");
    assert!(!w.workspace.path().join("DEPLOYED").exists(), "the script ran");
    assert_eq!(mock.requests().len(), 2, "the question is answered without extra turns");
    assert_eq!(starts(&events, "read_file").len(), 1, "only the model's own call");
    // The first request holds the request and the listing, and no tool result pirn made.
    let first = mock.requests()[0].body["messages"].as_array().unwrap().clone();
    assert!(first.iter().all(|m| m["role"] != "tool"), "{first:?}");
}

#[tokio::test]
async fn questions_and_advice_end_ok_at_once_and_change_nothing() {
    let files = [("Makefile", "release:\n\t./publish.sh\n"), ("app.py", "def f():\n    return 1\n")];
    for (message, answer) in [
        ("Explain what `make release` does.", "It runs ./publish.sh."),
        ("Write a short summary of this repository.", "A Makefile and app.py with f()."),
        ("Show me how to make f return 2; don't change the file.", "```python\ndef f():\n    return 2\n```"),
        ("How many lines does app.py have?", "2"),
    ] {
        let script = vec![Reply::text(&[answer])];
        let (events, r, mock, w) = send_with(script, &files, message, json!({})).await;
        assert_eq!(r["status"], "ok", "{message}: {r}");
        assert_eq!(r["response"], answer, "{message}");
        assert_eq!(mock.requests().len(), 1, "{message}: no extra turn");
        assert!(!events.iter().any(|e| e["event"]["event"] == "tool_start"), "{message}: {events:?}");
        assert_eq!(std::fs::read_to_string(w.workspace.path().join("app.py")).unwrap(), files[1].1, "{message}");
        assert_eq!(r["files_changed"], json!([]), "{message}: the result says nothing changed");
    }
}

#[tokio::test]
async fn a_rewrite_that_drops_a_function_is_held_back_once_then_lands_exactly() {
    let old = "import os\n\n\ndef keep():\n    return 1\n\n\ndef old_helper():\n    return os.sep\n\n\ndef other():\n    return 2\n";
    let new = "def keep():\n    return 1\n";
    let write = || Reply::tool("write_file", json!({"file_path": "util.py", "content": new}));
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "util.py"})),
        write(),
        write(),
        Reply::text(&["util.py now holds only keep()."]),
    ];
    let message = "Rewrite util.py so that it holds only keep().";
    // The small profile's help (the default lands it at once: contract.rs).
    let (_, r, mock, w) = send_with(script, &[("util.py", old)], message, json!({"profile": "small"})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("util.py")).unwrap(), new, "exactly as sent");
    let held = last_tool_text(&mock.requests()[2].body);
    assert!(held.starts_with("Error: not written (held back once)"), "{held}");
    assert!(held.contains("`old_helper`") && held.contains("return os.sep"), "it shows what goes: {held}");
    assert!(last_tool_text(&mock.requests()[3].body).starts_with("overwrote util.py"), "the same call again lands");
    assert_eq!(r["files_changed"], json!(["util.py"]), "{r}");
}

#[tokio::test]
async fn a_new_function_written_alone_is_offered_the_call_that_keeps_the_file() {
    let old = "def mean(v):\n    return sum(v) / len(v)\n\n\ndef spread(v):\n    return max(v) - min(v)\n";
    let clamp = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n";
    let both = format!("{old}\n\n{clamp}");
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "mathutil.py"})),
        Reply::tool("write_file", json!({"file_path": "mathutil.py", "content": clamp})),
        // The call the held-back error offers, as the model copies it.
        Reply::tool("write_file", json!({"file_path": "mathutil.py", "content": both})),
        Reply::text(&["clamp is added to mathutil.py."]),
    ];
    let message = "Add clamp(x, lo, hi) to mathutil.py.";
    let (_, r, mock, w) = send_with(script, &[("mathutil.py", old)], message, json!({"profile": "small"})).await;
    let held = last_tool_text(&mock.requests()[2].body);
    assert!(held.starts_with("Error: not written (held back once)"), "{held}");
    let offered = held.split("```json\n").nth(1).and_then(|c| c.split("\n```").next()).expect("a ready call");
    let offered: serde_json::Value = serde_json::from_str(offered).unwrap();
    assert_eq!(offered["arguments"]["content"], json!(both), "the file as it is, then the new function");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("mathutil.py")).unwrap(), both, "exactly as sent");
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["files_changed"], json!(["mathutil.py"]), "{r}");
}

#[tokio::test]
async fn data_files_are_written_as_sent_never_merged() {
    let cases = [
        ("requirements.txt", "requests==2.31\nflask==3.0\nnumpy==1.26\n", "requests==2.31\nnumpy==1.26\n"),
        ("config.json", "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n", "{\n  \"a\": 1,\n  \"c\": 3\n}\n"),
        ("app.toml", "[server]\nport = 80\n\n[debug]\nlevel = 2\n", "[server]\nport = 80\n"),
        ("notes.md", "one\ntwo  \n", "one\ntwo\n"),
    ];
    for (file, old, new) in cases {
        let script = vec![
            Reply::tool("read_file", json!({"file_path": file})),
            Reply::tool("write_file", json!({"file_path": file, "content": new})),
            Reply::text(&["Done."]),
        ];
        let (events, r, _mock, w) = send_with(script, &[(file, old)], &format!("Edit {file}."), json!({})).await;
        assert_eq!(r["status"], "ok", "{file}: {r}");
        assert_eq!(std::fs::read_to_string(w.workspace.path().join(file)).unwrap(), new, "{file}");
        let end = events.iter().find(|e| e["event"]["event"] == "tool_end" && e["event"]["name"] == "write_file");
        assert_eq!(end.unwrap()["event"]["is_error"], false, "{file}");
    }
}

#[tokio::test]
async fn a_held_back_write_never_confirmed_is_named_once_and_the_send_is_not_ok() {
    let old = "a = 1\nb = 2\nc = 3\nd = 4\n";
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "vals.py"})),
        Reply::tool("write_file", json!({"file_path": "vals.py", "content": "a = 1\n"})),
        Reply::text(&["Done."]),
        Reply::text(&["I left vals.py as it was."]),
    ];
    let (_, r, mock, w) = send_with(script, &[("vals.py", old)], "Tidy vals.py.", json!({"profile": "small"})).await;
    // A write the model meant and never confirmed is not on disk: not ok.
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("vals.py") && message.contains("never confirmed") && !message.contains("  "), "{r}");
    assert_eq!(r["response"], "I left vals.py as it was.");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("vals.py")).unwrap(), old, "nothing written");
    assert_eq!(r["files_changed"], json!([]), "an ok that changed nothing says so: {r}");
    let told = last_message(&mock, 3);
    assert!(told.starts_with("[pirn] Not written: your write_file to vals.py was held back"), "{told}");
}

#[tokio::test]
async fn a_write_refused_as_unread_and_never_made_is_not_ok_in_the_small_profile() {
    let old = "from utils import calc_total\n\nprint(calc_total([1]))\n";
    let new = "from utils import compute_total\n\nprint(compute_total([1]))\n";
    let write = || Reply::tool("write_file", json!({"file_path": "main.py", "content": new}));
    let ask = "Rename calc_total to compute_total in main.py.";
    let small = || json!({"profile": "small"});
    // Refused (not read first), then two answers and no write: not ok.
    let script = vec![write(), Reply::text(&["Renamed in main.py."]), Reply::text(&["Renamed in main.py."])];
    let (_, r, mock, w) = send_with(script, &[("main.py", old)], ask, small()).await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("main.py"), "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("main.py")).unwrap(), old, "nothing written");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    let told = last_message(&mock, 2);
    assert!(told.starts_with("[pirn] Not written: your write_file to main.py was refused because"), "{told}");
    // Sent back, the model makes the write (the file was shown, so it counts as read): ok, as sent.
    let script = vec![write(), Reply::text(&["Renamed."]), write(), Reply::text(&["Renamed in main.py."])];
    let (_, r, _, w) = send_with(script, &[("main.py", old)], ask, small()).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("main.py")).unwrap(), new, "exactly as sent");
    assert_eq!(r["files_changed"], json!(["main.py"]), "{r}");
    // The default profile has no check of its own: the refusal is a failed
    // call the model read, and the answer ends the send with nothing changed.
    let script = vec![write(), Reply::text(&["Renamed in main.py."])];
    let (_, r, _, _) = send_with(script, &[("main.py", old)], ask, json!({})).await;
    assert_eq!((&r["status"], &r["files_changed"]), (&json!("ok"), &json!([])), "{r}");
}

#[tokio::test]
async fn a_rename_leaves_library_calls_that_share_the_name_alone() {
    let files = [
        ("store.py", "import json\n\n\ndef load(path):\n    with open(path) as f:\n        return json.load(f)\n"),
        ("main.py", "import json\nfrom store import load\n\nprint(load('a.json'), json.load(open('b.json')))\n"),
    ];
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "store.py", "old_string": "def load(path):", "new_string": "def load_config(path):"}),
        ),
        Reply::text(&["Renamed load to load_config in store.py."]),
    ];
    let message = "Rename load to load_config in store.py.";
    let (events, r, _mock, w) = send_with(script, &files, message, json!({"profile": "small"})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(starts(&events, "edit_file").len(), 1, "only the model's edit");
    let store = std::fs::read_to_string(w.workspace.path().join("store.py")).unwrap();
    assert!(store.contains("return json.load(f)") && store.contains("def load_config"), "{store}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("main.py")).unwrap(), files[1].1);
    // The model is told where the old name is still used (the small
    // profile's reference notes): information, not an edit.
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end").unwrap();
    assert!(end["event"]["result_preview"].as_str().unwrap().contains("still used"), "{end}");
}

#[tokio::test]
async fn a_removal_inside_a_function_keeps_the_function() {
    let old = "def f(x):\n    print('debug', x)\n    y = x * 2\n    print('debug', y)\n    return y\n";
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "m.py", "old_string": "    print('debug', x)\n", "new_string": ""}),
        ),
        Reply::tool(
            "edit_file",
            json!({"file_path": "m.py", "old_string": "    print('debug', y)\n", "new_string": ""}),
        ),
        Reply::text(&["Removed both debug prints."]),
    ];
    let (_, r, mock, w) =
        send_with(script, &[("m.py", old)], "Remove the debug prints from the function f.", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(
        std::fs::read_to_string(w.workspace.path().join("m.py")).unwrap(),
        "def f(x):\n    y = x * 2\n    return y\n"
    );
    assert_eq!(mock.requests().len(), 3, "no extra turn");
}

#[tokio::test]
async fn a_rewrite_that_keeps_every_line_lands_as_sent_and_asks_for_the_answer() {
    // The edit is right; the model reads the file and writes it whole
    // without its final newline. That write lands byte for byte, its result
    // says only white space changed, and (the small profile's early wrap-up)
    // the next request is for the answer.
    let files = [("config.go", "package config\n\nconst DefaultPort = 8080\n")];
    let relaid = "package config\n\nconst DefaultPort = 9090";
    let script = vec![
        Reply::tool("edit_file", json!({"file_path": "config.go", "old_string": "= 8080", "new_string": "= 9090"})),
        Reply::tool("read_file", json!({"file_path": "config.go"})),
        Reply::tool("write_file", json!({"file_path": "config.go", "content": relaid})),
        Reply::text(&["The default port is 9090 now."]),
    ];
    let small = json!({"profile": "small"});
    let (_, r, mock, w) = send_with(script, &files, "Change the default port to 9090.", small).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("config.go")).unwrap(), relaid, "exactly as sent");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{r}");
    assert_eq!(requests[3].body["tool_choice"], "none", "the answer is asked for");
    let said = last_message(&mock, 3);
    assert!(said.contains("Stop calling tools"), "{said}");
    let result = last_tool_text(&requests[3].body);
    assert!(result.starts_with("overwrote config.go") && result.contains("the same lines as before"), "{result}");
}
