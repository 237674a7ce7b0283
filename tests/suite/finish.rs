//! How a send ends, through the real binary with a scripted model: the
//! answer gates in their order (a write held back and never confirmed, a
//! file the send broke, loops and cycles; the operator's check is
//! `check_gate`'s), each reading facts, never the request's or the
//! answer's words.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, names};

/// One send of `message` in a fresh worker whose workspace holds `files`,
/// with `config` in its init.
pub async fn send_with(
    script: Vec<Reply>,
    files: &[(&str, &str)],
    message: &str,
    config: Value,
) -> (Vec<Value>, Value, MockServer, Worker) {
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    for (path, text) in files {
        std::fs::write(w.workspace.path().join(path), text).unwrap();
    }
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (events, r) = w.result_for("s").await;
    (events, r, mock, w)
}

/// One send of `message` in a fresh worker whose workspace holds `files`.
async fn send(
    script: Vec<Reply>,
    files: &[(&str, &str)],
    message: &str,
    version: &str,
) -> (Vec<Value>, Value, MockServer) {
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    for (path, text) in files {
        std::fs::write(w.workspace.path().join(path), text).unwrap();
    }
    let (mut w, _) = w.init(version, json!({})).await;
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (events, r) = w.result_for("s").await;
    (events, r, mock)
}

/// The content of the `n`th request's last message.
pub fn last_message(mock: &MockServer, n: usize) -> String {
    let reqs = mock.requests();
    let msgs = reqs[n].body["messages"].as_array().unwrap().clone();
    msgs.last().unwrap()["content"].as_str().unwrap_or("").to_owned()
}

#[tokio::test]
async fn a_squeezed_json_edit_lands_and_keeps_the_layout() {
    let config = "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30,\n    \"retries\": 2\n  }\n}\n";
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "config.json", "old_string": "\"timeout\": 30, \"retries\": 2", "new_string": "\"timeout\": 60, \"retries\": 2"}),
        ),
        Reply::text(&["Set the timeout to 60."]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("config.json"), config).unwrap();
    let (mut w, _) = w.init("0.3.0", json!({"profile": "small"})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Set the server timeout in config.json to 60."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let after = std::fs::read_to_string(w.workspace.path().join("config.json")).unwrap();
    assert_eq!(after, config.replace("30", "60"));
    let told = last_message(&mock, 1);
    assert!(
        told.contains("ignoring whitespace, line breaks and quotes") && told.contains("\"30\" with \"60\""),
        "{told}"
    );
}

#[tokio::test]
async fn a_cycle_is_named_once_then_stopped_with_an_answer() {
    // read, a failing edit, read, the same failing edit: the same results
    // each time. Named after the 4th call; gone round again: stopped after
    // the 8th, and the wrap-up answer is the last request.
    let read = || Reply::tool("read_file", json!({"file_path": "a.txt"}));
    let edit = || Reply::tool("edit_file", json!({"file_path": "a.txt", "old_string": "sane", "new_string": "other"}));
    let mut script: Vec<Reply> = (0..8).map(|i| if i % 2 == 0 { read() } else { edit() }).collect();
    script.push(Reply::text(&["I could not find the word in a.txt."]));
    script.push(Reply::text(&["never asked"]));
    let files = [("a.txt", "same\n")];
    let (events, r, mock) = send(script, &files, "Change the word same in a.txt to other.", "0.3.0").await;
    assert_eq!(r["error"]["code"], "loop_detected", "{r}");
    assert_eq!(r["stop_reason"], "loop_detected");
    assert_eq!(r["response"], "I could not find the word in a.txt.");
    let noted = last_message(&mock, 4);
    assert!(noted.contains("going round in circles") && noted.contains("do something different"), "{noted}");
    assert!(names(&events).contains(&"error".to_owned()));
    assert_eq!(mock.requests().len(), 9, "the wrap-up request is the last");
    assert_eq!(mock.requests()[8].body["tool_choice"], "none");
}

#[tokio::test]
async fn the_same_write_again_is_no_change_and_ends_the_round_with_an_answer() {
    // W R W with the same content: the second write writes nothing and
    // says so; that is work already done, so the model is asked for its
    // answer, which ends the send ok.
    let write = || Reply::tool("write_file", json!({"file_path": "a.txt", "content": "same\n"}));
    let read = || Reply::tool("read_file", json!({"file_path": "a.txt"}));
    let mut script: Vec<Reply> = (0..3).map(|i| if i % 2 == 0 { write() } else { read() }).collect();
    script.push(Reply::text(&["I wrote a.txt with the line 'same'."]));
    let (_, r, mock, _w) = send_with(script, &[], "Write a.txt containing same.", json!({"profile": "small"})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "I wrote a.txt with the line 'same'.");
    let second = mock.requests()[3].body["messages"].as_array().unwrap().clone();
    let said = second.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(said.contains("no change: a.txt already holds exactly this content"), "{said}");
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(mock.requests()[3].body["tool_choice"], "none", "the answer is asked for");
}

#[tokio::test]
async fn a_tool_call_written_out_as_the_wrap_up_answer_is_no_answer() {
    let read = || Reply::tool("read_file", json!({"file_path": "greet.py"}));
    let script = vec![
        read(),
        read(),
        Reply::text(&["```json\n{\"name\": \"read_file\", \"arguments\": {\"file_path\": \"greet.py\"}}\n```"]),
    ];
    let files = [("greet.py", "def greet(n):\n    return 'hi ' + n\n")];
    let (_, r, mock) = send(script, &files, "What does greet('x') return?", "0.3.0").await;
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "loop_detected", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("wrote out another tool call"), "{r}");
    assert!(!r["response"].as_str().unwrap().contains("read_file\", \"arguments"), "not the junk: {r}");
    assert_eq!(mock.requests()[2].body["tool_choice"], "none");
}

#[tokio::test]
async fn an_answer_the_server_cannot_parse_is_asked_for_again() {
    // llama-server's answer when the model's tool call is not JSON.
    let unreadable = r#"{"error":{"code":500,"message":"Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error","type":"server_error"}}"#;
    let script = vec![Reply::status(500, unreadable), Reply::text(&["It returns 2."])];
    let (_, r, mock) = send(script, &[], "What does two() return?", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "It returns 2.");
    let told = last_message(&mock, 1);
    assert!(told.starts_with("[pirn] Your last answer could not be read"), "{told}");
}

#[tokio::test]
async fn after_a_loop_the_answer_without_tools_ends_the_send() {
    let glob = || Reply::tool("glob", json!({"pattern": "*.md"}));
    let script = vec![glob(), glob(), Reply::text(&["There is one Markdown file: README.md."])];
    let (_, r, mock, _w) =
        send_with(script, &[("README.md", "# x\n")], "Which Markdown files are there?", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "There is one Markdown file: README.md.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["tool_choice"], "none");
    let wrap_up = last_message(&mock, 2);
    assert!(wrap_up.contains("The request was: Which Markdown files are there?"), "{wrap_up}");
}

#[tokio::test]
async fn a_file_the_send_broke_is_sent_back_once_then_never_ok() {
    // The small profile's parse check (`parse_check`).
    let files = [("config.json", "{\"a\": 1, \"b\": 2}\n")];
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "config.json", "old_string": "\"b\": 2}", "new_string": "\"b\": 3"}),
        ),
        Reply::text(&["Done."]),
        Reply::text(&["Done, really."]),
    ];
    let (_, r, mock, _w) = send_with(script, &files, "Set b to 3 in config.json.", json!({"profile": "small"})).await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("config.json no longer parses"), "{r}");
    let told = last_message(&mock, 2);
    assert!(told.starts_with("[pirn] Not finished: config.json does not parse now"), "{told}");
    // Fixed after the note: ok.
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "config.json", "old_string": "\"b\": 2}", "new_string": "\"b\": 3"}),
        ),
        Reply::text(&["Done."]),
        Reply::tool(
            "edit_file",
            json!({"file_path": "config.json", "old_string": "\"b\": 3", "new_string": "\"b\": 3}"}),
        ),
        Reply::text(&["Fixed the brace."]),
    ];
    let small = json!({"profile": "small"});
    let (_, r, _mock, w) = send_with(script, &files, "Set b to 3 in config.json.", small).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(w.workspace.path().join("config.json")).unwrap(), "{\"a\": 1, \"b\": 3}\n");
}
