//! Preflight and checked wrap-ups, through the real binary with a scripted
//! model: the files a request names (and the workspace modules they import)
//! are read, and the check command it names is run, before the model's
//! first answer, as ordinary tool calls behind the approval gate; and an
//! answer given after a loop is verified like any other.

use serde_json::{Value, json};

use super::mock::{MockCall, MockServer, Reply};
use super::worker::{Worker, names};

/// A worker on `script` whose workspace holds `files`, initialised with `config`.
async fn worker(script: Vec<Reply>, files: &[(&str, &str)], config: Value) -> (Worker, MockServer) {
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    for (path, text) in files {
        let p = w.workspace.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let (w, _) = w.init("0.3.0", config).await;
    (w, mock)
}

/// (tool name, file path or command) of each `tool_start` event.
fn started(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["event"]["event"] == "tool_start")
        .map(|e| {
            let args = &e["event"]["args"];
            let what = args.get("file_path").or(args.get("command")).and_then(Value::as_str).unwrap_or("");
            (e["event"]["name"].as_str().unwrap().to_owned(), what.to_owned())
        })
        .collect()
}

const CALC: &str = "from helpers import sign\n\ndef add(a, b):\n    return a - b\n";
const TEST: &str = "from calc import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n";

#[tokio::test]
async fn named_files_their_imports_and_the_named_check_come_first() {
    let files = [("calc.py", CALC), ("helpers.py", "def sign(x):\n    return x\n"), ("test_calc.py", TEST)];
    let script = vec![
        Reply::tool("edit_file", json!({"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})),
        Reply::text(&["Fixed add in calc.py."]),
    ];
    let (mut w, mock) = worker(script, &files, json!({})).await;
    w.write(json!({"type": "send", "id": "s", "message": "Running `python3 test_calc.py` fails. Fix calc.py."})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let want: Vec<(String, String)> = [
        ("read_file", "test_calc.py"),
        ("read_file", "calc.py"),
        ("read_file", "helpers.py"),
        ("bash", "python3 test_calc.py"),
        ("edit_file", "calc.py"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(started(&events), want);
    // They come before the first model call (its usage event).
    let order = names(&events);
    assert_eq!(&order[..8], ["tool_start", "tool_end"].repeat(4), "{order:?}");
    assert_eq!(r["tool_calls_made"].as_array().unwrap().len(), 5);
    // The model sees them as calls already made, with their results.
    let first = mock.requests()[0].body["messages"].as_array().unwrap().clone();
    let asked = first.iter().find(|m| m["role"] == "assistant").expect("the preflight calls");
    let ids: Vec<&str> = asked["tool_calls"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["pirn_pre_1", "pirn_pre_2", "pirn_pre_3", "pirn_pre_4"]);
    let results: Vec<&str> =
        first.iter().filter(|m| m["role"] == "tool").map(|m| m["content"].as_str().unwrap()).collect();
    assert!(results[1].contains("return a - b") && results[2].contains("def sign"), "{results:?}");
    assert!(results[3].contains("AssertionError") && results[3].contains("exit code 1"), "{results:?}");
    assert_eq!(r["verification"]["passed"], true, "the same command checks the fix: {r}");
}

#[tokio::test]
async fn only_what_the_session_may_do_unasked_and_never_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "KEY = 'outside'\n").unwrap();
    let files = [("calc.py", CALC), ("test_calc.py", TEST)];
    let message = "Running `python3 test_calc.py` fails. Look at calc.py and link.py.";

    // suggest: bash would ask, so the check is not run (and nothing is asked); reads are.
    let (mut w, mock) =
        worker(vec![Reply::text(&["add subtracts."])], &files, json!({"approval_mode": "suggest"})).await;
    std::os::unix::fs::symlink(outside.path().join("secret.py"), w.workspace.path().join("link.py")).unwrap();
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (events, _) = w.result_for("s").await;
    let want: Vec<(String, String)> = [("read_file", "test_calc.py"), ("read_file", "calc.py")]
        .iter()
        .map(|(a, b)| ((*a).into(), (*b).into()))
        .collect();
    assert_eq!(started(&events), want, "no bash, and the link out is not followed");
    assert!(!names(&events).iter().any(|n| n.starts_with("permission")), "{:?}", names(&events));
    let sent = mock.requests()[0].body.to_string();
    assert!(!sent.contains("outside"), "nothing from outside the workspace reaches the model");

    // Tools the session does not enable are not used; `preflight: false` turns it off.
    for config in [json!({"tools": ["glob", "grep"]}), json!({"preflight": false})] {
        let (mut w, _mock) = worker(vec![Reply::text(&["no idea"])], &files, config.clone()).await;
        w.write(json!({"type": "send", "id": "s", "message": message})).await;
        let (events, _) = w.result_for("s").await;
        assert!(started(&events).is_empty(), "{config}: {:?}", started(&events));
    }
}

#[tokio::test]
async fn an_answer_after_a_loop_is_verified_and_the_tools_open_again() {
    let files = [("check.py", "from calc import double\nassert double(5) == 10\n")];
    let message = "Write double(x) in calc.py; python3 check.py must pass.";
    let wrong = json!({"file_path": "calc.py", "content": "def double(x):\n    return x\n"});
    let right = json!({"file_path": "calc.py", "content": "def double(x):\n    return 2 * x\n"});
    let read = json!({"file_path": "calc.py"});
    let looped = || {
        vec![
            Reply::tool("write_file", wrong.clone()),
            Reply::tool("read_file", read.clone()),
            Reply::tool("read_file", read.clone()),
            Reply::tool("read_file", read.clone()),
            Reply::text(&["Done."]),
        ]
    };
    // The wrap-up answer's check fails: the model is shown why, with its tools, and fixes it.
    let mut script = looped();
    script.extend([Reply::tool("write_file", right.clone()), Reply::text(&["Fixed."])]);
    let (mut w, mock) = worker(script, &files, json!({"preflight": false})).await;
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true, "{r}");
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 7);
    assert!(reqs[4].body.get("tool_choice").is_some_and(|c| c == "none"), "the wrap-up request");
    assert!(reqs[5].body.get("tool_choice").is_none_or(|c| c != "none"), "tools again after the failed check");

    // A model that only says it is done is never `ok`.
    let mut script = looped();
    script.extend([Reply::text(&["Done."]), Reply::text(&["Done."])]);
    let (mut w, _mock) = worker(script, &files, json!({"preflight": false})).await;
    w.write(json!({"type": "send", "id": "s", "message": message})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "error", "{r}");
    assert_eq!(r["error"]["code"], "verification_failed", "{r}");
}

#[tokio::test]
async fn a_call_repeated_after_an_edit_runs_again() {
    let files = [("greet.py", "def greet(name)\n    return name\n\n\nprint(greet('world'))\n")];
    let read = json!({"file_path": "greet.py"});
    let edit = json!({"file_path": "greet.py", "old_string": "def greet(name)", "new_string": "def greet(name):"});
    // The fix and the same read again in one answer: the read is a new
    // question, not a repeat to answer from memory with the old content.
    let both = Reply::ToolCalls {
        calls: vec![
            MockCall { name: "edit_file".into(), arguments: edit.to_string() },
            MockCall { name: "read_file".into(), arguments: read.to_string() },
        ],
        usage: Some([20, 8]),
        text: None,
    };
    let script = vec![Reply::tool("read_file", read.clone()), both, Reply::text(&["Added the colon."])];
    let (mut w, mock) = worker(script, &files, json!({"preflight": false})).await;
    w.write(json!({"type": "send", "id": "s", "message": "greet.py has a SyntaxError. Fix it."})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let reads = events.iter().filter(|e| e["event"]["event"] == "tool_end" && e["event"]["name"] == "read_file");
    assert_eq!(reads.count(), 2, "the second read is a real read");
    let last = mock.requests()[2].body["messages"].as_array().unwrap().clone();
    let seen = last.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(seen.contains("def greet(name):"), "the file after the fix: {seen}");
}

#[tokio::test]
async fn the_preflight_run_is_not_the_change_asked_for() {
    let files =
        [("receipt.py", "prices = ['4', '5']\ntotal = 0\nfor p in prices:\n    total = total + p\nprint(total)\n")];
    let script = vec![
        Reply::text(&["Convert p with int(p):\n```python\ntotal = total + int(p)\n```"]),
        Reply::tool(
            "edit_file",
            json!({"file_path": "receipt.py", "old_string": "total + p", "new_string": "total + int(p)"}),
        ),
        Reply::text(&["Converted each price with int()."]),
    ];
    let (mut w, mock) = worker(script, &files, json!({})).await;
    w.write(
        json!({"type": "send", "id": "s", "message": "receipt.py crashes. Fix it so `python3 receipt.py` prints 9"}),
    )
    .await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["verification"]["passed"], true, "{r}");
    let nudge =
        mock.requests()[1].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(nudge.starts_with("[pirn] That is not true yet: no file has been changed"), "{nudge}");
}

#[tokio::test]
async fn python_answers_what_a_call_returns_and_how_many_methods_a_class_has() {
    let files = [
        ("limits.py", "from defaults import BASE, FACTOR\n\n\ndef get_limit():\n    return BASE * FACTOR\n"),
        ("defaults.py", "BASE = 24\nFACTOR = 4\n"),
        (
            "stack.py",
            "class Stack:\n    def push(self, x):\n        pass\n\n    def pop(self):\n        pass\n\n\ndef make():\n    pass\n",
        ),
    ];
    let script = vec![Reply::text(&["96"]), Reply::text(&["2"])];
    let (mut w, mock) = worker(script, &files, json!({})).await;
    w.write(json!({"type": "send", "id": "a", "message": "What value does get_limit() in limits.py return?"})).await;
    let (events, r) = w.result_for("a").await;
    assert_eq!(r["status"], "ok", "{r}");
    let ran: Vec<(String, String)> = started(&events).into_iter().filter(|(n, _)| n == "bash").collect();
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(ran[0].1.contains("from limits import get_limit\nprint(repr(get_limit()))"), "{ran:?}");
    let seen = mock.requests()[0].body["messages"].to_string();
    assert!(seen.contains("96"), "the model sees the value the call returned: {seen}");
    w.write(json!({"type": "send", "id": "b", "message": "How many methods does the Stack class in stack.py define?"}))
        .await;
    let (_, r) = w.result_for("b").await;
    assert_eq!(r["status"], "ok", "{r}");
    let seen = mock.requests()[1].body["messages"].to_string();
    assert!(seen.contains("stack.py: class Stack defines 2 methods: push, pop"), "{seen}");
    assert!(seen.contains("stack.py: 1 top-level functions (outside any class): make"), "{seen}");
}
