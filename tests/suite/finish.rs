//! How a send ends, through the real binary with a scripted model: the
//! answer gates in their order (a write held back and never confirmed, a
//! file the send broke, the operator's check, loops and cycles), each
//! reading facts, never the request's or the answer's words.

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
async fn verification_never_gets_round_the_approval_gate() {
    // In auto-edit mode bash needs approval: the check must not run unasked,
    // and a send it cannot check is refused rather than reported `ok`
    // unchecked (it once ended `ok` with no `verification`).
    let marker_cmd = "touch verified-marker && python3 check.py";
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"})),
        Reply::text(&["Done."]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let (mut w, _) = w.init("0.3.0", json!({"approval_mode": "auto-edit", "verify_command": marker_cmd})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Write double(x) in calc.py."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
    assert!(r.get("verification").is_none(), "{r}");
    assert!(!w.workspace.path().join("verified-marker").exists(), "the command ran without approval");
    assert_eq!(mock.requests().len(), 0, "refused before the model was asked");
    // A deny rule on bash holds for it too, in full-auto.
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "x = 1\n"})),
        Reply::text(&["Done."]),
    ])
    .await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let rules = json!({"verify_command": marker_cmd, "permissions": {"deny": ["bash(touch*)"]}});
    let (mut w, _) = w.init("0.3.0", rules).await;
    w.write(json!({"type": "send", "id": "s", "message": "Write calc.py."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
    assert!(r.get("verification").is_none(), "{r}");
    assert!(!w.workspace.path().join("verified-marker").exists());
}

#[tokio::test]
async fn a_sends_own_verify_command_overrides_the_sessions() {
    let write =
        || Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return 2 * x\n"}));
    let script = vec![write(), Reply::text(&["Done."])];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let (mut w, _) = w.init("0.3.0", json!({"verify_command": "false"})).await;
    std::fs::write(w.workspace.path().join("check.py"), "from calc import double\nassert double(5) == 10\n").unwrap();
    let send = json!({"type": "send", "id": "s", "message": "Write double(x) in calc.py.", "verify_command": "python3 check.py"});
    w.write(send).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"], json!({"command": "python3 check.py", "exit_code": 0, "passed": true}));
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
async fn the_operators_check_sends_failing_work_back_and_reports_passing_work() {
    let wrong = json!({"file_path": "calc.py", "content": "def double(x):\n    return x + 2\n"});
    let right = json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"});
    let script = vec![
        Reply::tool("write_file", wrong),
        Reply::text(&["Done."]),
        Reply::tool("write_file", right),
        Reply::text(&["Fixed: double multiplies by 2."]),
    ];
    let files = [("check.py", "from calc import double\nassert double(5) == 10, double(5)\nprint('OK')\n")];
    let config = json!({"verify_command": "python3 check.py"});
    let (_, r, mock, _w) = send_with(script, &files, "Write double(x) in calc.py.", config).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"], json!({"command": "python3 check.py", "exit_code": 0, "passed": true}));
    let told = last_message(&mock, 2);
    assert!(told.contains("`python3 check.py`") && told.contains("AssertionError: 7"), "{told}");
}

/// The calc.py that `double(x)` starts as in the checked sends.
const CALC: &str = "def double(x):\n    return x\n";

/// One send of `message` whose workspace holds that calc.py and a
/// check.py that `python3 check.py`, the session's verify command, runs.
async fn checked_send(script: Vec<Reply>, message: &str) -> (Vec<Value>, Value, MockServer, Worker) {
    let files = [("calc.py", CALC), ("check.py", "from calc import double\nassert double(5) == 10\n")];
    send_with(script, &files, message, json!({"verify_command": "python3 check.py"})).await
}

#[tokio::test]
async fn the_check_runs_when_the_model_claims_work_it_never_did() {
    // "Done." without a single write: the operator's check says otherwise,
    // whatever the answer's words.
    let script = vec![
        Reply::text(&["Done: double now multiplies by 2."]),
        Reply::tool("read_file", json!({"file_path": "calc.py"})),
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"})),
        Reply::text(&["Now it is done."]),
    ];
    let (_, r, mock, w) = checked_send(script, "Make double(x) in calc.py double its argument.").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true, "{r}");
    assert_eq!(mock.requests().len(), 4);
    assert!(last_message(&mock, 1).contains("I ran `python3 check.py`"), "{}", last_message(&mock, 1));
    // Words met a failing check and nothing was written: only a change can
    // make it pass, so the next request must call a tool.
    assert_eq!(mock.requests()[1].body["tool_choice"], "required");
    assert!(mock.requests()[2].body.get("tool_choice").is_none(), "one such round, then the ordinary turn");
    assert!(std::fs::read_to_string(w.workspace.path().join("calc.py")).unwrap().contains("x * 2"));
}

#[tokio::test]
async fn a_repeated_look_before_any_change_to_a_checked_task_must_act() {
    // With an operator's check and no file changed, a look asked for again
    // is not answered with a wrap-up in words (which the check would fail,
    // spending one of its rounds): the next request must call a tool.
    let read = || Reply::tool("read_file", json!({"file_path": "calc.py"}));
    let script = vec![
        read(),
        read(),
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"})),
        Reply::text(&["Done."]),
    ];
    let (_, r, mock, _w) = checked_send(script, "Make double(x) double its argument.").await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "no wrap-up, no failed check given back");
    assert_eq!(reqs[2].body["tool_choice"], "required");
    assert!(last_message(&mock, 2).contains("an answer in words cannot finish it"), "{}", last_message(&mock, 2));
    // Without a check the same repeat asks for the answer without tools.
    let script = vec![read(), read(), Reply::text(&["It returns x."])];
    let files = [("calc.py", CALC)];
    let (_, r, mock, _w) = send_with(script, &files, "What does double return?", json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(mock.requests()[2].body["tool_choice"], "none");
}

#[tokio::test]
async fn work_that_stays_broken_ends_verification_failed() {
    let wrong =
        || Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"}));
    let script = vec![wrong(), Reply::text(&["Done."]), Reply::text(&["Done, really."]), Reply::text(&["It is done."])];
    let files = [("check.py", "from calc import double\nassert double(5) == 10\n")];
    let config = json!({"verify_command": "python3 check.py"});
    let (_, r, mock, _w) = send_with(script, &files, "Write double(x) in calc.py.", config).await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert_eq!(r["verification"]["passed"], false);
    assert_eq!(r["verification"]["exit_code"], 1);
    assert_eq!(r["response"], "It is done.");
    assert_eq!(mock.requests().len(), 4, "two rounds given back, then the end");
    let first = last_message(&mock, 2);
    assert!(first.contains("AssertionError"), "the first failure shows its output: {first}");
    // The answer in words changed nothing: the check ran again, on the same
    // code, and the model is told that fact with the end of the output.
    let again = last_message(&mock, 3);
    assert!(again.contains("No file has changed since it last failed"), "{again}");
    assert!(again.contains("AssertionError") && !again.contains("Read the error"), "{again}");
    // After new work failed, an ordinary turn; after words failed on the
    // same code, a tool call is required.
    assert!(mock.requests()[2].body.get("tool_choice").is_none());
    assert_eq!(mock.requests()[3].body["tool_choice"], "required");
}

#[tokio::test]
async fn a_failure_after_new_work_shows_its_output_again() {
    let write = |body: &str| {
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": format!("def double(x):\n    {body}\n")}))
    };
    let script = vec![
        write("return x"),
        Reply::text(&["Done."]),
        write("return x + 0"),
        Reply::text(&["Done now."]),
        Reply::tool("bash", json!({"command": "true"})),
        Reply::text(&["Checked."]),
        Reply::text(&["Still done."]),
    ];
    let files = [("check.py", "from calc import double\nassert double(5) == 10\n")];
    let config = json!({"verify_command": "python3 check.py", "verify_rounds": 3});
    let (_, r, mock, _w) = send_with(script, &files, "Write double(x) in calc.py.", config).await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    for n in [2, 4] {
        let told = last_message(&mock, n);
        assert!(told.contains("AssertionError") && !told.contains("No file has changed"), "request {n}: {told}");
    }
    // A command ran since the last failure: it may have changed files, so
    // the failure is reported in full.
    let told = last_message(&mock, 6);
    assert!(told.contains("AssertionError") && !told.contains("No file has changed"), "{told}");
    assert_eq!(mock.requests().len(), 7, "three rounds given back, then the end");
}

#[tokio::test]
async fn work_done_when_the_calls_run_out_ends_ok_when_its_check_passes() {
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"})),
        Reply::tool("read_file", json!({"file_path": "check.py"})),
        Reply::tool("read_file", json!({"file_path": "calc.py"})),
        Reply::text(&["never asked"]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("check.py"), "from calc import double\nassert double(5) == 10\n").unwrap();
    let (mut w, _) = w.init("0.3.0", json!({"max_iterations": 3, "verify_command": "python3 check.py"})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Write double(x) in calc.py."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true);
    assert!(r["response"].as_str().unwrap().contains("`python3 check.py`, which now passes"), "{r}");
    assert!(r["response"].as_str().unwrap().contains("Files changed: calc.py."), "{r}");
    assert_eq!(mock.requests().len(), 3);
    // Without a passing check the limit is still an error.
    std::fs::write(w.workspace.path().join("check.py"), "raise SystemExit(1)\n").unwrap();
    for reply in [
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"})),
        Reply::tool("read_file", json!({"file_path": "check.py"})),
        Reply::tool("read_file", json!({"file_path": "calc.py"})),
    ] {
        mock.push(reply);
    }
    w.write(json!({"type": "send", "id": "t", "message": "Write double(x) in calc.py."})).await;
    let (_, r) = w.result_for("t").await;
    assert_eq!(r["error"]["code"], "max_iterations", "{r}");
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
