//! The contract suite for capable models (issue 68), through JSONL 0.3.0:
//! trajectories in the style of Claude Code and Codex transcripts, each a
//! scripted model that makes the calls a capable model makes, and what
//! the tools' public documentation promises of them. Claude Code's `Edit`
//! replaces exactly `old_string` (unique unless `replace_all`) with exactly
//! `new_string` and leaves the rest of the file byte-identical; `Write`
//! writes the content as sent; Codex's `apply_patch` has the same exact
//! model. With no profile chosen pirn is in its `exact` profile: every
//! case asserts the bytes on disk, the status, and that the model calls
//! were exactly the scripted turns (no hidden call, `iterations` equal to
//! them). The cases are defined here once; `contract_surfaces.rs` drives
//! them through `pirn run`, and `contract_edges.rs` holds the failures,
//! the follow-up and the profiles.

use std::path::Path;

use serde_json::{Value, json};

use super::finish::send_with;
use super::mock::{MockCall, MockServer, Reply};

/// One trajectory: the workspace before, the request, the model's turns,
/// and what must hold after.
pub struct Case {
    pub files: Vec<(&'static str, &'static str)>,
    pub message: &'static str,
    pub turns: Vec<Reply>,
    /// Files whose bytes must be these after the send (every other file of
    /// `files` must be unchanged).
    pub after: Vec<(&'static str, String)>,
    /// The result's `files_changed`.
    pub changed: Vec<&'static str>,
    /// (turn, text): the tool results the model read in request `turn`
    /// (0-based) hold `text`.
    pub reads: Vec<(usize, &'static str)>,
}

/// One model answer making these calls at once (parallel tool calls).
pub fn calls(list: &[(&str, Value)]) -> Reply {
    let calls = list.iter().map(|(n, a)| MockCall { name: (*n).into(), arguments: a.to_string() }).collect();
    Reply::ToolCalls { calls, usage: Some([20, 8]), text: None }
}

fn read(path: &str) -> Reply {
    Reply::tool("read_file", json!({"file_path": path}))
}

fn edit(path: &str, old: &str, new: &str) -> Reply {
    Reply::tool("edit_file", json!({"file_path": path, "old_string": old, "new_string": new}))
}

pub const CALC: &str = "def div(x, y):\n    return x / y\n";
pub const DIV_OLD: &str = "return x / y";
/// The continuation lines carry their absolute indentation, as Claude
/// Code's and Codex's edit tools expect.
pub const DIV_NEW: &str = "if y == 0:\n        return 0\n    return x / y";
pub const CALC_AFTER: &str = "def div(x, y):\n    if y == 0:\n        return 0\n    return x / y\n";

/// Python: a multi-line `new_string` at an indented line, landing as sent.
pub fn python_div() -> Case {
    Case {
        files: vec![("calc.py", CALC)],
        message: "Make div return 0 when y is 0.",
        turns: vec![read("calc.py"), edit("calc.py", DIV_OLD, DIV_NEW), Reply::text(&["div returns 0 for y == 0."])],
        after: vec![("calc.py", CALC_AFTER.into())],
        changed: vec!["calc.py"],
        reads: vec![],
    }
}

pub const COMPOSE: &str = "services:\n  web:\n    image: nginx\n  db:\n    image: postgres\n";

/// YAML: `ports:` under `web`, at the indentation the model wrote.
pub fn yaml_ports() -> Case {
    let after = "services:\n  web:\n    image: nginx\n    ports:\n      - 80:80\n  db:\n    image: postgres\n";
    Case {
        files: vec![("compose.yaml", COMPOSE)],
        message: "Publish port 80 of the web service.",
        turns: vec![
            read("compose.yaml"),
            edit("compose.yaml", "image: nginx", "image: nginx\n    ports:\n      - 80:80"),
            Reply::text(&["web now publishes port 80."]),
        ],
        after: vec![("compose.yaml", after.into())],
        changed: vec!["compose.yaml"],
        reads: vec![],
    }
}

const MAIN_GO: &str = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n";

/// Go: tab-indented continuation lines, no spaces added.
pub fn go_tabs() -> Case {
    let after = "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tname := \"pirn\"\n\tfmt.Println(\"hi\", name)\n}\n";
    Case {
        files: vec![("main.go", MAIN_GO)],
        message: "Greet pirn by name in main.go.",
        turns: vec![
            read("main.go"),
            edit("main.go", "fmt.Println(\"hi\")", "name := \"pirn\"\n\tfmt.Println(\"hi\", name)"),
            Reply::text(&["main prints hi pirn."]),
        ],
        after: vec![("main.go", after.into())],
        changed: vec!["main.go"],
        reads: vec![],
    }
}

const MAKEFILE: &str = "build:\n\tgo build ./...\n\ntest:\n\tgo test ./...\n";

/// A Makefile: a recipe line added with its TAB, which must stay a TAB.
pub fn makefile_recipe() -> Case {
    let after = "build:\n\tgo build ./...\n\ntest:\n\tgo vet ./...\n\tgo test ./...\n";
    Case {
        files: vec![("Makefile", MAKEFILE)],
        message: "Run go vet before the tests in the Makefile.",
        turns: vec![
            read("Makefile"),
            edit("Makefile", "go test ./...", "go vet ./...\n\tgo test ./..."),
            Reply::text(&["make test now vets first."]),
        ],
        after: vec![("Makefile", after.into())],
        changed: vec!["Makefile"],
        reads: vec![],
    }
}

const STORE: &str = "import os\n\n\ndef load(path):\n    with open(path) as f:\n        return f.read()\n\n\ndef save(path, text):\n    with open(path, \"w\") as f:\n        f.write(text)\n";

/// Two edits of one file in one answer; the second's `old_string` is text
/// the first wrote, so they must be applied in order.
pub fn parallel_edits() -> Case {
    let (old1, new1) = (
        "with open(path) as f:\n        return f.read()",
        "if not os.path.exists(path):\n        return \"\"\n    with open(path) as f:\n        return f.read()",
    );
    let (old2, new2) = ("return \"\"", "return None");
    let after = STORE.replacen(old1, new1, 1).replacen(old2, new2, 1);
    let args = |old: &str, new: &str| json!({"file_path": "store.py", "old_string": old, "new_string": new});
    Case {
        files: vec![("store.py", STORE)],
        message: "Make load return None for a missing file.",
        turns: vec![
            read("store.py"),
            calls(&[("edit_file", args(old1, new1)), ("edit_file", args(old2, new2))]),
            Reply::text(&["load returns None when the file is missing."]),
        ],
        after: vec![("store.py", after)],
        changed: vec!["store.py"],
        reads: vec![],
    }
}

const VALS: &str = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n\n\ndef perimeter(r):\n    return 2 * math.pi * r\n\n\ndef unused():\n    return None\n";

/// A rewrite that removes most of a file lands at once, byte for byte.
pub fn rewrite() -> Case {
    let new = "import math\n\n\ndef area(r):\n    return math.pi * r ** 2\n";
    Case {
        files: vec![("geometry.py", VALS)],
        message: "Rewrite geometry.py to hold only area, using r ** 2.",
        turns: vec![
            read("geometry.py"),
            Reply::tool("write_file", json!({"file_path": "geometry.py", "content": new})),
            Reply::text(&["geometry.py holds only area now."]),
        ],
        after: vec![("geometry.py", new.into())],
        changed: vec!["geometry.py"],
        reads: vec![],
    }
}

/// "Make sure …; fix it if not" on a file where it is so: read, answer.
pub fn already_done() -> Case {
    Case {
        files: vec![("config.py", "TIMEOUT = 30  # seconds\nRETRIES = 3\n")],
        message: "Make sure the timeout in config.py is 30 seconds; fix it if it is not.",
        turns: vec![read("config.py"), Reply::text(&["The timeout is already 30 seconds; nothing to change."])],
        after: vec![],
        changed: vec![],
        reads: vec![(1, "TIMEOUT = 30")],
    }
}

/// A question answered after reading.
pub fn question() -> Case {
    Case {
        files: vec![("calc.py", CALC)],
        message: "What does div do when y is 0?",
        turns: vec![read("calc.py"), Reply::text(&["It raises ZeroDivisionError: there is no check for 0."])],
        after: vec![],
        changed: vec![],
        reads: vec![(1, "return x / y")],
    }
}

const TEST_CALC: &str = "import unittest\n\nfrom calc import div\n\n\nclass DivTest(unittest.TestCase):\n    def test_div(self):\n        self.assertEqual(div(6, 3), 2)\n\n    def test_div_by_zero(self):\n        self.assertEqual(div(1, 0), 0)\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n";

/// Codex style: both files read at once, the fix, the tests run through
/// bash (they pass only when the edit landed as sent), the answer.
pub fn bash_test_run() -> Case {
    Case {
        files: vec![("calc.py", CALC), ("test_calc.py", TEST_CALC)],
        message: "Make the tests in test_calc.py pass.",
        turns: vec![
            calls(&[
                ("read_file", json!({"file_path": "calc.py"})),
                ("read_file", json!({"file_path": "test_calc.py"})),
            ]),
            edit("calc.py", DIV_OLD, DIV_NEW),
            Reply::tool("bash", json!({"command": "python3 -m unittest -q test_calc"})),
            Reply::text(&["Both tests pass."]),
        ],
        after: vec![("calc.py", CALC_AFTER.into())],
        changed: vec!["calc.py"],
        reads: vec![(1, "def test_div_by_zero"), (3, "Ran 2 tests"), (3, "OK")],
    }
}

/// Asserts what every contract send must show: `ok`, each file's bytes,
/// `files_changed`, the tool results named, and exactly the scripted
/// model calls (no side call, `iterations` equal to them).
pub fn assert_holds(case: &Case, r: &Value, mock: &MockServer, ws: &Path) {
    assert_eq!(r["status"], "ok", "{r}");
    assert_files(case, ws);
    let mut changed: Vec<&str> = r["files_changed"]
        .as_array()
        .unwrap_or_else(|| panic!("no files_changed: {r}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    let mut want = case.changed.clone();
    want.sort_unstable();
    assert_eq!(changed, want, "{r}");
    for (turn, text) in &case.reads {
        let read = tool_texts(&mock.requests()[*turn].body).join("\n");
        assert!(read.contains(text), "request {turn} should show {text:?}: {read}");
    }
    assert_no_hidden_calls(r, mock, case.turns.len());
}

/// The model was called exactly `turns` times, each a turn of the
/// conversation: no reading or other side call, and `iterations` says so.
pub fn assert_no_hidden_calls(r: &Value, mock: &MockServer, turns: usize) {
    assert_eq!(mock.requests().len(), turns, "model calls beyond the scripted turns: {r}");
    assert_eq!(mock.readings().len(), 0, "side calls reading the request or answer: {:?}", mock.readings());
    assert_eq!(r["iterations"], turns, "{r}");
    if let Some(side) = r.get("side_calls") {
        assert_eq!(side["calls"], 0, "side calls reported: {r}");
    }
}

/// Every file of the case holds the bytes it must: `after`'s, or else
/// what it held before.
pub fn assert_files(case: &Case, ws: &Path) {
    for (path, before) in &case.files {
        let want = case.after.iter().find(|(p, _)| p == path).map_or(*before, |(_, a)| a.as_str());
        assert_bytes(ws, path, want);
    }
    for (path, want) in &case.after {
        assert_bytes(ws, path, want);
    }
}

/// `path` under `ws` holds exactly `want`.
pub fn assert_bytes(ws: &Path, path: &str, want: &str) {
    let got = std::fs::read(ws.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(got == want.as_bytes(), "{path} holds\n{:?}\nnot\n{want:?}", String::from_utf8_lossy(&got));
}

/// The tool results that end a request body (the results of the calls of
/// the answer before it, in order).
pub fn tool_texts(body: &Value) -> Vec<String> {
    let msgs = body["messages"].as_array().unwrap();
    let tail = msgs.iter().rev().take_while(|m| m["role"] == "tool").collect::<Vec<_>>();
    tail.into_iter().rev().map(|m| m["content"].as_str().unwrap_or_default().to_owned()).collect()
}

/// The `tool_end` events of a send, in order.
pub fn tool_ends(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["event"]["event"] == "tool_end").map(|e| &e["event"]).collect()
}

/// Runs `case` as one JSONL 0.3.0 send with no profile chosen; asserts it
/// holds; returns the send's events.
async fn jsonl(case: Case) -> Vec<Value> {
    let (events, r, mock, w) = send_with(case.turns.clone(), &case.files, case.message, json!({})).await;
    assert_holds(&case, &r, &mock, w.workspace.path());
    for end in tool_ends(&events) {
        assert_eq!(end["is_error"], false, "{end}");
    }
    events
}

#[tokio::test]
async fn contract_jsonl_python_edit_lands_with_its_absolute_indentation() {
    let events = jsonl(python_div()).await;
    // The event's diff shows the whole file as it now is.
    let edit = tool_ends(&events).into_iter().find(|e| e["name"] == "edit_file").cloned().unwrap();
    assert_eq!(edit["diff"]["new_text"], CALC_AFTER, "{edit}");
}

#[tokio::test]
async fn contract_jsonl_yaml_edit_keeps_ports_under_its_service() {
    jsonl(yaml_ports()).await;
}

#[tokio::test]
async fn contract_jsonl_go_edit_keeps_tabs() {
    jsonl(go_tabs()).await;
}

#[tokio::test]
async fn contract_jsonl_makefile_recipe_keeps_its_tab() {
    jsonl(makefile_recipe()).await;
}

#[tokio::test]
async fn contract_jsonl_two_edits_of_one_file_in_one_answer_apply_in_order() {
    let events = jsonl(parallel_edits()).await;
    assert_eq!(tool_ends(&events).iter().filter(|e| e["name"] == "edit_file").count(), 2);
}

#[tokio::test]
async fn contract_jsonl_a_rewrite_removing_most_of_a_file_lands_as_sent() {
    jsonl(rewrite()).await;
}

#[tokio::test]
async fn contract_jsonl_an_already_done_answer_ends_ok() {
    jsonl(already_done()).await;
}

#[tokio::test]
async fn contract_jsonl_a_question_answered_after_reading_ends_ok() {
    jsonl(question()).await;
}

#[tokio::test]
async fn contract_jsonl_a_test_run_through_bash_then_an_answer_ends_ok() {
    let events = jsonl(bash_test_run()).await;
    assert_eq!(tool_ends(&events).iter().filter(|e| e["name"] == "bash").count(), 1);
}

/// A write over a file not read first is refused and shows the file (as
/// Claude Code's Write refuses an unread file); the same call sent again
/// then lands as sent, never answered from an earlier failure.
#[tokio::test]
async fn contract_jsonl_a_write_refused_as_unread_lands_when_sent_again() {
    let new = "# Notes\n\n- first\n- second\n";
    let write = || Reply::tool("write_file", json!({"file_path": "notes.md", "content": new}));
    let case = Case {
        files: vec![("notes.md", "# Notes\n\n- first\n")],
        message: "Add a second item to notes.md.",
        turns: vec![write(), write(), Reply::text(&["notes.md has a second item."])],
        after: vec![("notes.md", new.into())],
        changed: vec!["notes.md"],
        reads: vec![(1, "you had not read it"), (2, "overwrote notes.md")],
    };
    let (events, r, mock, w) = send_with(case.turns.clone(), &case.files, case.message, json!({})).await;
    assert_holds(&case, &r, &mock, w.workspace.path());
    let errors: Vec<bool> = tool_ends(&events).iter().map(|e| e["is_error"] == true).collect();
    assert_eq!(errors, [true, false], "{events:?}");
}

/// The same edit in three answers, each inserting a line: three steps
/// that each change the file, so each runs (no loop is called).
#[tokio::test]
async fn contract_jsonl_the_same_insertion_three_times_runs_three_times() {
    let insert = || edit("todo.txt", "END", "- item\nEND");
    let case = Case {
        files: vec![("todo.txt", "TODO\nEND\n")],
        message: "Add three '- item' lines before END in todo.txt, one edit at a time.",
        turns: vec![read("todo.txt"), insert(), insert(), insert(), Reply::text(&["Three items added."])],
        after: vec![("todo.txt", "TODO\n- item\n- item\n- item\nEND\n".into())],
        changed: vec!["todo.txt"],
        reads: vec![(4, "edited todo.txt")],
    };
    let (events, r, mock, w) = send_with(case.turns.clone(), &case.files, case.message, json!({})).await;
    assert_holds(&case, &r, &mock, w.workspace.path());
    assert_eq!(tool_ends(&events).iter().filter(|e| e["name"] == "edit_file").count(), 3);
}

/// Content a read would refuse (a NUL byte) still lands as sent, and the
/// check that it landed reads the bytes back, so the send ends `ok`.
#[tokio::test]
async fn contract_jsonl_a_write_holding_a_nul_byte_lands_and_ends_ok() {
    let content = "magic\u{0}header\n";
    let case = Case {
        files: vec![],
        message: "Create blob.bin holding magic, a NUL byte, header.",
        turns: vec![
            Reply::tool("write_file", json!({"file_path": "blob.bin", "content": content})),
            Reply::text(&["blob.bin created."]),
        ],
        after: vec![("blob.bin", content.into())],
        changed: vec!["blob.bin"],
        reads: vec![(1, "blob.bin")],
    };
    let (_, r, mock, w) = send_with(case.turns.clone(), &case.files, case.message, json!({})).await;
    assert_holds(&case, &r, &mock, w.workspace.path());
}
