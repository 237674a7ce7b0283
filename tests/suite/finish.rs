//! What makes a small model finish a task, through the real binary with a
//! scripted model: edits that land despite a squeezed layout, cycles that
//! are named and then stopped, work checked by the command the request
//! names, and announced work sent back.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, mock_worker, names};

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
fn last_message(mock: &MockServer, n: usize) -> String {
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
    let (mut w, _) = w.init("0.3.0", json!({})).await;
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
    assert!(noted.contains("going round in circles") && noted.contains("Call edit_file now"), "{noted}");
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
    let (_, r, mock) = send(script, &[], "Write a.txt containing same.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "I wrote a.txt with the line 'same'.");
    let second = mock.requests()[3].body["messages"].as_array().unwrap().clone();
    let said = second.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(said.contains("no change: a.txt already holds exactly this content"), "{said}");
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(mock.requests()[3].body["tool_choice"], "none", "the answer is asked for");
}

#[tokio::test]
async fn the_command_the_request_names_checks_the_work() {
    let wrong = json!({"file_path": "calc.py", "content": "def double(x):\n    return x + 2\n"});
    let right = json!({"file_path": "calc.py", "content": "def double(x):\n    return x * 2\n"});
    let script = vec![
        Reply::tool("write_file", wrong),
        Reply::text(&["Done."]),
        Reply::tool("write_file", right),
        Reply::text(&["Fixed: double multiplies by 2."]),
    ];
    let files = [("check.py", "from calc import double\nassert double(5) == 10, double(5)\nprint('OK')\n")];
    let (_, r, mock) =
        send(script, &files, "Write double(x) in calc.py, so that `python3 check.py` prints OK.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"], json!({"command": "python3 check.py", "exit_code": 0, "passed": true}));
    let told = last_message(&mock, 2);
    assert!(told.contains("`python3 check.py`") && told.contains("AssertionError: 7"), "{told}");
}

#[tokio::test]
async fn work_that_stays_broken_ends_verification_failed() {
    let wrong =
        || Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"}));
    let script = vec![wrong(), Reply::text(&["Done."]), Reply::text(&["Done, really."]), Reply::text(&["It is done."])];
    let files = [("check.py", "from calc import double\nassert double(5) == 10\n")];
    let message = "Write double(x) in calc.py; python3 check.py must pass.";
    let (_, r, mock) = send(script.clone(), &files, message, "0.3.0").await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert_eq!(r["verification"]["passed"], false);
    assert_eq!(r["verification"]["exit_code"], 1);
    assert_eq!(r["response"], "It is done.");
    assert_eq!(mock.requests().len(), 4, "two rounds given back, then the end");
    // A 0.2.0 client sees heddle's error codes and fields only.
    let (_, r, _) = send(script, &files, message, "0.2.0").await;
    assert_eq!(r["error"]["code"], "tool_error", "{r}");
    assert!(r.get("verification").is_none());
}

#[tokio::test]
async fn announced_work_is_sent_back() {
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "stats.py", "old_string": "/ len(xs)", "new_string": "/ max(len(xs), 1)"}),
        ),
        Reply::text(&["I will now run the tests to confirm the fix."]),
        Reply::text(&["Fixed: an empty list no longer divides by zero."]),
    ];
    let files = [("stats.py", "def mean(xs):\n    return sum(xs) / len(xs)\n")];
    let (_, r, mock) = send(script, &files, "Fix the ZeroDivisionError in stats.py for an empty list.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "Fixed: an empty list no longer divides by zero.");
    assert!(last_message(&mock, 2).contains("you have not done it"));
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
    let (mut w, _) = w.init("0.3.0", json!({"max_iterations": 3, "preflight": false})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Write double(x) in calc.py; python3 check.py must pass."}))
        .await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true);
    assert!(r["response"].as_str().unwrap().contains("`python3 check.py`, which now passes"), "{r}");
    assert_eq!(mock.requests().len(), 3);
    // Without a passing check the limit is still an error.
    std::fs::write(w.workspace.path().join("check.py"), "raise SystemExit(1)\n").unwrap();
    let script = [
        Reply::tool("write_file", json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"})),
        Reply::tool("read_file", json!({"file_path": "check.py"})),
        Reply::tool("read_file", json!({"file_path": "calc.py"})),
    ];
    for reply in script {
        mock.push(reply);
    }
    w.write(json!({"type": "send", "id": "t", "message": "Write double(x) in calc.py; python3 check.py must pass."}))
        .await;
    let (_, r) = w.result_for("t").await;
    assert_eq!(r["error"]["code"], "max_iterations", "{r}");
}

#[tokio::test]
async fn verification_never_gets_round_the_approval_gate() {
    // In auto-edit mode bash needs approval: the command the request names
    // must not run unasked, so the wrong file is not "verified" either way.
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
    assert_eq!(r["status"], "ok", "{r}");
    assert!(r.get("verification").is_none(), "{r}");
    assert!(!w.workspace.path().join("verified-marker").exists(), "the command ran without approval");
    assert_eq!(mock.requests().len(), 2);
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
async fn an_answer_narrating_the_repeated_calls_is_sent_back_once() {
    let glob = || Reply::tool("glob", json!({"pattern": "*.md"}));
    let script = vec![
        glob(),
        glob(),
        glob(),
        Reply::text(&["I made the same glob call in my previous answer, and its result has not changed."]),
        Reply::text(&["There is one Markdown file: README.md."]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Which Markdown files are there?"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "There is one Markdown file: README.md.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let wrap_up =
        requests[3].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(wrap_up.contains("The request was: Which Markdown files are there?"), "{wrap_up}");
    let nudge =
        requests[4].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(nudge.starts_with("[pirn] Your reply talks about repeated tool calls"), "{nudge}");
    assert_eq!(requests[4].body["tool_choice"], "none", "still without tools");
}

#[tokio::test]
async fn a_rename_left_half_done_is_sent_back_naming_the_places() {
    // Renamed by a command in one file only: no edit result names the uses
    // left, so pirn does not finish it; the answer check catches it.
    let script = vec![
        Reply::tool("bash", json!({"command": "sed -i 's/calc_total/compute_total/' utils.py"})),
        Reply::text(&["Renamed."]),
        Reply::tool(
            "edit_file",
            json!({"file_path": "main.py", "old_string": "calc_total", "new_string": "compute_total", "replace_all": true}),
        ),
        Reply::text(&["Renamed in both files."]),
    ];
    let files = [
        ("utils.py", "def calc_total(items):\n    return sum(items)\n"),
        ("main.py", "from utils import calc_total\nprint(calc_total([1]))\n"),
    ];
    let (_, r, mock) =
        send(script, &files, "Rename the function calc_total to compute_total everywhere.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "Renamed in both files.");
    let nudge = last_message(&mock, 2);
    assert!(
        nudge.contains("`calc_total` is still used where `compute_total` is meant, at main.py:1, main.py:2"),
        "{nudge}"
    );
    assert!(
        nudge.contains(r#"{"name": "edit_file", "arguments": {"file_path": "main.py", "old_string": "from utils import calc_total", "new_string": "from utils import compute_total"}}"#),
        "the next edit is spelled out: {nudge}"
    );
}

#[tokio::test]
async fn redoing_an_edit_that_is_made_gets_the_wrap_up_and_ends_ok() {
    let edit = json!({"file_path": "stats.py", "old_string": "def average(v):\n    return sum(v) / len(v)",
                      "new_string": "def average(v):\n    if not v:\n        return 0.0\n    return sum(v) / len(v)"});
    let read = json!({"file_path": "stats.py"});
    let script = vec![
        Reply::tool("edit_file", edit.clone()),
        Reply::tool("read_file", read.clone()),
        Reply::tool("edit_file", edit.clone()),
        Reply::text(&["average returns 0.0 for an empty list now."]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("stats.py"), "def average(v):\n    return sum(v) / len(v)\n").unwrap();
    let (mut w, _) = w.init("0.3.0", json!({"max_iterations": 10})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Make average in stats.py return 0.0 for an empty list."}))
        .await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    // edit, read, "no change": the edit is redone work, so the next request
    // asks for the answer without tools.
    assert_eq!(reqs.len(), 4);
    assert_eq!(reqs[3].body["tool_choice"], "none", "{}", reqs[3].body);
    assert!(reqs[2].body["tool_choice"].is_null());
    assert_eq!(r["response"], "average returns 0.0 for an empty list now.");
}

#[tokio::test]
async fn a_tool_call_written_out_as_the_wrap_up_answer_is_no_answer() {
    let read = || Reply::tool("read_file", json!({"file_path": "greet.py"}));
    let script = vec![
        read(),
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
    assert_eq!(mock.requests()[3].body["tool_choice"], "none");
}

#[tokio::test]
async fn a_rename_the_model_starts_is_carried_into_every_use() {
    let files = [
        ("billing.py", "def get_total(prices):\n    return sum(prices)\n"),
        (
            "report.py",
            "from billing import get_total\n\n\ndef summary(p):\n    return f'total {get_total(p)}'\n\n\nprint(get_total([1]))\nprint(get_total([1]))\n",
        ),
        ("notes.txt", "get_totals is another word\n"),
    ];
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "billing.py", "old_string": "def get_total(prices):", "new_string": "def compute_total(prices):"}),
        ),
        Reply::text(&["Renamed get_total to compute_total."]),
    ];
    let (events, r, _mock) =
        send(script, &files, "Rename the function get_total to compute_total everywhere.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    let edits: Vec<&Value> =
        events.iter().filter(|e| e["event"]["event"] == "tool_start" && e["event"]["name"] == "edit_file").collect();
    assert_eq!(edits.len(), 4, "the model's edit, then pirn's three lines (one of them twice in its file): {edits:?}");
    assert_eq!(edits[3]["event"]["args"]["replace_all"], true, "{:?}", edits[3]);
}

#[tokio::test]
async fn the_fixed_file_shown_in_an_answer_is_written() {
    let files =
        [("receipt.py", "prices = ['4', '5']\ntotal = 0\nfor p in prices:\n    total = total + p\nprint(total)\n")];
    let shown = "Convert each price first. Here's the corrected code:\n\n```python\nprices = ['4', '5']\ntotal = 0\nfor p in prices:\n    total = total + int(p)\nprint(total)\n```\n\nNow it prints 9.";
    let script = vec![Reply::text(&[shown]), Reply::text(&["Converted each price with int()."])];
    let (events, r, mock) =
        send(script, &files, "receipt.py crashes. Fix it so `python3 receipt.py` prints 9", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true, "{r}");
    let writes: Vec<&Value> =
        events.iter().filter(|e| e["event"]["event"] == "tool_start" && e["event"]["name"] == "write_file").collect();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0]["event"]["args"]["file_path"], "receipt.py");
    // The model is shown what was written, as a call made for it.
    let second = mock.requests()[1].body["messages"].as_array().unwrap().clone();
    let call = second.iter().rev().find(|m| m["role"] == "assistant" && m["tool_calls"].is_array()).unwrap();
    assert!(call["tool_calls"][0]["id"].as_str().unwrap().starts_with("pirn_apply_"), "{call}");
}

#[tokio::test]
async fn a_rename_left_unfinished_is_never_ok_and_only_its_named_files_count() {
    let files = [("inventory.py", "qty = 3\nprint(qty)\n"), ("other.py", "qty = 'another module, another qty'\n")];
    // The model says it is done twice without touching print(qty): the
    // second time the send ends, and not as ok.
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "inventory.py", "old_string": "qty = 3", "new_string": "quantity = 3"}),
        ),
        Reply::text(&["Renamed."]),
        Reply::text(&["Renamed, really."]),
    ];
    let mut first = script;
    // pirn finishes what the model started (print(qty) in inventory.py), so
    // this send ends ok; other.py, outside the named file, is left alone.
    first.truncate(2);
    let (_, r, _mock) = send(first, &files, "In inventory.py, rename the variable qty to quantity.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");

    // Renamed by a command in one line only (no edit result to start pirn's
    // edits from): the rename stays half done.
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sed -i 's/qty = 3/quantity = 3/' inventory.py"})),
        Reply::text(&["Renamed."]),
        Reply::text(&["Renamed, really."]),
    ])
    .await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    for (path, text) in files {
        std::fs::write(w.workspace.path().join(path), text).unwrap();
    }
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    w.write(json!({"type": "send", "id": "s", "message": "In inventory.py, rename the variable qty to quantity."}))
        .await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    let why = r["error"]["message"].as_str().unwrap();
    assert!(why.contains("the rename is not finished") && why.contains("inventory.py:2"), "{why}");
    assert!(!why.contains("other.py"), "only the file the request names: {why}");
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
async fn a_number_no_tool_showed_is_sent_back_once() {
    let files = [("test_m.py", "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")];
    let script = vec![
        Reply::tool("grep", json!({"pattern": "def test_", "output_mode": "count"})),
        Reply::text(&["3"]),
        Reply::text(&["2"]),
    ];
    let (_, r, mock) =
        send(script, &files, "How many test functions does test_m.py define? Answer with the number.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "2");
    let told = last_message(&mock, 2);
    assert!(told.starts_with("[pirn] No tool result of this task shows the number 3"), "{told}");
}

#[tokio::test]
async fn a_file_the_send_broke_is_never_ok() {
    let files = [("utils.py", "def shout(t):\n    return t.upper()\n\n\ndef helper(x):\n    return x\n")];
    // The model deletes a function by its name only; pirn deletes the definition.
    let script = vec![
        Reply::tool("edit_file", json!({"file_path": "utils.py", "old_string": "helper", "new_string": ""})),
        Reply::text(&["Deleted helper."]),
    ];
    let (events, r, _mock) = send(script, &files, "Delete the function helper from utils.py.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end" && e["event"]["name"] == "edit_file").unwrap();
    assert!(end["event"]["result_preview"].as_str().unwrap().contains("the whole definition was deleted"), "{end}");
    // A break the model leaves in place: sent back once, then not done.
    let script = vec![
        Reply::tool(
            "edit_file",
            json!({"file_path": "utils.py", "old_string": "def shout(t):", "new_string": "def shout(t)"}),
        ),
        Reply::text(&["Done."]),
        Reply::text(&["Done, really."]),
    ];
    let (_, r, mock) = send(script, &files, "Tidy utils.py.", "0.3.0").await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("utils.py no longer parses"), "{r}");
    let told = last_message(&mock, 2);
    assert!(told.starts_with("[pirn] Not finished: utils.py does not parse now"), "{told}");
}

#[tokio::test]
async fn a_definition_a_deletion_names_must_be_gone_before_ok() {
    let utils = "def shout(t):\n    return t.upper()\n\n\ndef unused_helper(items):\n    return list(items)\n\n\ndef whisper(t):\n    return t.lower()\n";
    let block = "def unused_helper(items):\n    return list(items)";
    // Seen on the tune half: the function written back (no change) and "deleted" claimed.
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "utils.py", "content": format!("{block}\n")})),
        Reply::text(&["Deleted unused_helper."]),
        Reply::tool("edit_file", json!({"file_path": "utils.py", "old_string": block, "new_string": ""})),
        Reply::text(&["Deleted unused_helper."]),
    ];
    let files = [("utils.py", utils)];
    let (_, r, mock) =
        send(script, &files, "The function unused_helper in utils.py is never called. Delete it.", "0.3.0").await;
    assert_eq!(r["status"], "ok", "{r}");
    let told = last_message(&mock, 2);
    assert!(
        told.starts_with("[pirn] Not finished: `unused_helper` is still defined in utils.py (lines 5-6)"),
        "{told}"
    );
    assert!(told.contains(r#""old_string":"def unused_helper(items):\n    return list(items)""#), "{told}");
    // Without the second edit the send is not ok.
    let script = vec![
        Reply::tool("write_file", json!({"file_path": "utils.py", "content": format!("{block}\n")})),
        Reply::text(&["Deleted unused_helper."]),
        Reply::text(&["Deleted unused_helper."]),
    ];
    let (_, r, _mock) =
        send(script, &files, "The function unused_helper in utils.py is never called. Delete it.", "0.3.0").await;
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
}
