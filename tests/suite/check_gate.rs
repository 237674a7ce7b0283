//! The operator's check (`verify_command`), through the real binary with a
//! scripted model: it runs after work and sends failing work back while
//! rounds last, it runs when the model claims work it never did, it never
//! gets round the approval gate, a send's own command overrides the
//! session's, and work done when the calls run out ends `ok` only when the
//! check passes.

use serde_json::{Value, json};

use super::finish::{last_message, send_with};
use super::mock::{MockServer, Reply};
use super::worker::Worker;

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
