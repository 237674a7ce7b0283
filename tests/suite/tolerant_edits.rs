//! Edits as a small model makes them, through the real binary: an
//! `old_string` that leaves out a docstring, a "rewrite" holding only the
//! new function, a rename that forgets the callers. Each must land (or be
//! caught) and the tool result must say what happened.

use serde_json::json;

use super::mock::Reply;
use super::tools::call_tool;
use super::worker::mock_worker;

const BILLING: &str =
    "def get_total(prices):\n    \"\"\"Sum of the prices, rounded to cents.\"\"\"\n    return round(sum(prices), 2)\n";
const REPORT: &str =
    "from billing import get_total\n\n\ndef summary(prices):\n    return f\"total {get_total(prices)}\"\n";

#[tokio::test]
async fn an_old_string_without_the_docstring_still_renames_and_the_callers_are_named() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("billing.py"), BILLING).unwrap();
    std::fs::write(ws.join("report.py"), REPORT).unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "billing.py",
               "old_string": "def get_total(prices):\n    return round(sum(prices), 2)",
               "new_string": "def compute_total(prices):\n    return round(sum(prices), 2)"}),
    )
    .await;
    assert!(out.starts_with("edited billing.py: old_string matched lines 1-3 with line 2 left out"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("billing.py")).unwrap(), BILLING.replace("get_total", "compute_total"));
    // The uses of the old name that the rename left behind, with their lines.
    assert!(
        out.contains("`get_total` is still used where `compute_total` is meant, at report.py:1, report.py:5"),
        "{out}"
    );
    assert!(
        out.contains(
            r#""old_string": "from billing import get_total", "new_string": "from billing import compute_total""#
        ),
        "the first remaining use, as the next call: {out}"
    );
    // Once every use is renamed, no note.
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "report.py", "old_string": "get_total", "new_string": "compute_total", "replace_all": true}),
    )
    .await;
    assert!(out.starts_with("edited report.py: replaced 2 occurrences") && !out.contains("Note:"), "{out}");
    // Two regions that both fit: no guess, the closest region is quoted.
    std::fs::write(ws.join("twice.py"), "a = 1\nx = 0\nb = 2\na = 1\ny = 0\nb = 2\n").unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "twice.py", "old_string": "a = 1\nb = 2", "new_string": "a = 1\nb = 3"}),
    )
    .await;
    assert!(out.starts_with("Error: twice.py: old_string not found"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("twice.py")).unwrap(), "a = 1\nx = 0\nb = 2\na = 1\ny = 0\nb = 2\n");
}

#[tokio::test]
async fn a_rewrite_holding_only_new_definitions_is_merged_not_a_wipe() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let util = "def shout(text):\n    \"\"\"Upper-case text.\"\"\"\n    return text.upper() + \"!\"\n\n\ndef initials(name):\n    return \"\".join(p[0] for p in name.split())\n\n\nif __name__ == \"__main__\":\n    print(shout(\"hi\"))\n";
    std::fs::write(ws.join("util.py"), util).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "util.py"})).await;
    let added = "def is_palindrome(text):\n    t = text.lower()\n    return t == t[::-1]\n";
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "util.py", "content": added})).await;
    assert!(out.starts_with("merged into util.py") && out.contains("added is_palindrome"), "{out}");
    let now = std::fs::read_to_string(ws.join("util.py")).unwrap();
    assert_eq!(
        now,
        util.replace(
            "\n\n\nif __name__",
            &format!("\n\n\n{}\n\nif __name__", added.trim_end_matches('\n').to_owned() + "\n")
        )
    );
    // The same call again changes nothing and says so.
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "util.py", "content": added})).await;
    assert!(out.starts_with("no change: util.py already holds these definitions"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("util.py")).unwrap(), now);
    // A fixed function alone replaces its old self, nothing else.
    let fixed = "def shout(text):\n    return text.upper() + \"!!\"\n";
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "util.py", "content": fixed})).await;
    assert!(out.contains("replaced the old shout"), "{out}");
    let after = std::fs::read_to_string(ws.join("util.py")).unwrap();
    assert!(
        after.starts_with(fixed) && after.contains("def initials(name):") && after.contains("def is_palindrome"),
        "{after}"
    );
    // Content that is not only definitions is guarded as before (refused once).
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "util.py", "content": "print('hi')\n"})).await;
    assert!(out.starts_with("Error: not written: this would remove"), "{out}");
}

#[tokio::test]
async fn a_rewrite_that_renames_a_used_definition_names_its_users_and_one_fix_keeps_the_rest() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("billing.py"), BILLING).unwrap();
    std::fs::write(ws.join("report.py"), REPORT).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "billing.py"})).await;
    let renamed = BILLING.replace("get_total", "compute_total");
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "billing.py", "content": renamed})).await;
    assert!(out.starts_with("merged into billing.py") && out.contains("get_total (now compute_total)"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("billing.py")).unwrap(), renamed);
    assert!(
        out.contains("at report.py:1, report.py:5") && out.contains(r#""old_string": "from billing import get_total""#),
        "{out}"
    );
    // One function of several, fixed and written alone: the others stay
    // (they were dropped before, and the model then "fixed" their tests).
    let calc = "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a + b\n";
    std::fs::write(ws.join("calc.py"), calc).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "calc.py"})).await;
    let fixed = "def subtract(a, b):\n    return a - b\n";
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "calc.py", "content": fixed})).await;
    assert!(out.contains("replaced the old subtract"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("calc.py")).unwrap(),
        calc.replace(
            "a + b\n\n\ndef subtract(a, b):\n    return a + b",
            "a + b\n\n\ndef subtract(a, b):\n    return a - b"
        )
    );
}

#[tokio::test]
async fn a_partial_json_rewrite_changes_only_its_values() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let config = "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30,\n    \"retries\": 2\n  },\n  \"log\": {\n    \"level\": \"info\",\n    \"file\": \"app.log\"\n  }\n}\n";
    std::fs::write(ws.join("config.json"), config).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "config.json"})).await;
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path": "config.json", "content": "{\"server\":{\"host\":\"localhost\",\"timeout\":60,\"retries\":2}}"}),
    )
    .await;
    assert!(out.starts_with("merged into config.json") && out.contains("server.timeout 30 → 60"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("config.json")).unwrap(), config.replace("30", "60"));
    // A partial object with a key the file lacks is not guessed at: refused
    // once, and never with advice to append JSON to the end.
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path": "config.json", "content": "{\"server\":{\"port\":1}}"}),
    )
    .await;
    assert!(out.starts_with("Error: not written") && !out.contains("at the end"), "{out}");
}

#[tokio::test]
async fn a_rewrite_holding_only_the_changed_line_replaces_that_line_and_breakage_is_named() {
    // The answer checks would send a broken file back to the model: this
    // test reads what the tool itself says.
    let (mut w, mock) = mock_worker(vec![], &[], json!({"answer_checks": false})).await;
    let ws = w.workspace.path().to_path_buf();
    let main = "from utils import calc_total\n\nCART = [(\"pen\", 10)]\n\nif __name__ == \"__main__\":\n    print(calc_total(CART))\n";
    std::fs::write(ws.join("main.py"), main).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "main.py"})).await;
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path": "main.py", "content": "from utils import compute_total\n"}),
    )
    .await;
    assert!(out.starts_with("merged into main.py: your content holds only lines like its line 1"), "{out}");
    assert!(
        out.contains(r#"at main.py:6."#) && out.contains(r#""new_string": "print(compute_total(CART))""#),
        "the use left behind: {out}"
    );
    assert_eq!(std::fs::read_to_string(ws.join("main.py")).unwrap(), main.replacen("calc_total", "compute_total", 1));
    // A file that no longer parses is named in the result (in-process:
    // Python through tree-sitter, JSON through serde_json).
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "bad.json", "content": "{\"a\": 1"})).await;
    assert!(out.contains("Warning: bad.json does not parse now"), "{out}");
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "main.py", "old_string": "CART = [", "new_string": "CART = [("}),
    )
    .await;
    assert!(out.contains("Warning: main.py does not parse now: syntax error at line"), "{out}");
}

#[tokio::test]
async fn json_quoted_as_a_partial_object_edits_and_a_repeat_changes_nothing() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let config = "{\n  \"server\": {\n    \"host\": \"localhost\",\n    \"timeout\": 30,\n    \"retries\": 2\n  }\n}\n";
    std::fs::write(ws.join("config.json"), config).unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "config.json", "old_string": "{\"server\":{\"timeout\":30,\"retries\":2}}",
               "new_string": "{\"server\":{\"timeout\":60,\"retries\":2}}"}),
    )
    .await;
    assert!(out.starts_with("edited config.json") && out.contains("server.timeout 30 → 60"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("config.json")).unwrap(), config.replace("30", "60"));
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path": "config.json", "content": "{\"server\":{\"timeout\":60,\"retries\":2}}"}),
    )
    .await;
    assert!(out.starts_with("no change: config.json already holds every value"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("config.json")).unwrap(), config.replace("30", "60"));
}

#[tokio::test]
async fn an_edit_made_already_is_no_error_and_the_remaining_uses_are_named_again() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("report.py"), REPORT.replacen("get_total", "compute_total", 1)).unwrap();
    let (events, out) = super::tools::call(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "report.py", "old_string": "from billing import get_total", "new_string": "from billing import compute_total"}),
    )
    .await;
    assert!(out.starts_with("no change: report.py already holds new_string (at line 1)"), "{out}");
    assert!(out.contains("at report.py:5."), "{out}");
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end").unwrap();
    assert_eq!(end["event"]["is_error"], false, "{end}");
}

#[tokio::test]
async fn the_still_used_note_never_reads_through_a_symlink_out_of_the_workspace() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "get_total = 'OUTSIDE-SECRET'\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.py"), ws.join("link.py")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("linkdir")).unwrap();
    std::fs::write(ws.join("billing.py"), BILLING).unwrap();
    std::fs::write(ws.join("report.py"), REPORT).unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "billing.py", "old_string": "def get_total(prices):", "new_string": "def compute_total(prices):"}),
    )
    .await;
    assert!(out.contains("report.py:1"), "the workspace's own uses are named: {out}");
    assert!(!out.contains("OUTSIDE-SECRET") && !out.contains("link"), "nothing read through a symlink: {out}");
}

#[tokio::test]
async fn a_new_string_that_runs_on_over_the_next_lines_replaces_them_once() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let script = "STOCK = {\"apples\": 12, \"pears\": 30}\n\n\ndef total(stock)\n    return sum(stock.values())\n\n\nprint(f\"Total items: {total(STOCK)}\")\n";
    std::fs::write(ws.join("inventory.py"), script).unwrap();
    // Seen on the tune half: the fixed line, then the body and the call that
    // already follow it (one blank line fewer, other quotes).
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "inventory.py", "old_string": "def total(stock)",
               "new_string": "def total(stock):\n    return sum(stock.values())\n\nprint(f'Total items: {total(STOCK)}')"}),
    )
    .await;
    assert!(out.contains("new_string also held 2 lines the file already had after old_string"), "{out}");
    assert!(!out.contains("Warning"), "the file parses: {out}");
    let after = std::fs::read_to_string(ws.join("inventory.py")).unwrap();
    assert_eq!(after.matches("return sum").count(), 1, "{after}");
    let run = std::process::Command::new("python3").arg("inventory.py").current_dir(&ws).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&run.stdout), "Total items: 42\n");
}

#[tokio::test]
async fn a_rewrite_that_only_reformats_is_refused_once() {
    let hello = "def greet():\n    return \"Hello, team!\"\n\n\nif __name__ == \"__main__\":\n    print(greet())\n";
    // Seen on the tune half: asked to check a correct function, the model
    // wrote it back with other quotes and answered "no changes are needed".
    let requoted = hello.replace('"', "'");
    let write = Reply::tool("write_file", json!({"file_path": "hello.py", "content": requoted}));
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "hello.py"})),
        write.clone(),
        write,
        Reply::text(&["Requoted."]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({"preflight": false})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("hello.py"), hello).unwrap();
    w.write(json!({"type": "send", "id": "s", "message": "Use single quotes in hello.py."})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    let told = |n: usize| {
        let msgs = mock.requests()[n].body["messages"].as_array().unwrap().clone();
        msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned()
    };
    assert!(told(2).contains("not written: your content is the same code as hello.py already holds"), "{}", told(2));
    // Asked again, it is what the model wants: written.
    assert!(told(3).starts_with("overwrote hello.py"), "{}", told(3));
    assert_eq!(std::fs::read_to_string(ws.join("hello.py")).unwrap(), requoted);
}

#[tokio::test]
async fn a_snippet_written_again_and_again_never_replaces_the_file() {
    let receipt =
        "prices = [\"4\", \"5\"]\n\ntotal = 0\nfor p in prices:\n    total = total + int(p)\n\nprint(total)\n";
    let snippet = Reply::tool("write_file", json!({"file_path": "receipt.py", "content": "total = total + int(p)"}));
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "receipt.py"})),
        snippet.clone(),
        snippet,
        Reply::text(&["ok"]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({"preflight": false})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("receipt.py"), receipt).unwrap();
    w.write(json!({"type": "send", "id": "s", "message": "Make receipt.py add the prices as numbers."})).await;
    let (_, _r) = w.result_for("s").await;
    assert_eq!(std::fs::read_to_string(ws.join("receipt.py")).unwrap(), receipt, "the file is whole");
    let told = mock.requests()[2].body["messages"].as_array().unwrap().clone();
    let said = told.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(said.starts_with("no change: every line of your content is already in receipt.py (line 5)"), "{said}");
}

#[tokio::test]
async fn several_matches_get_one_call_each_and_no_replace_all_offer() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let ops = "def add(a, b):\n    return a + b\n\n\ndef multiply(a, b):\n    return a + b\n";
    std::fs::write(ws.join("ops.py"), ops).unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "ops.py", "old_string": "return a + b", "new_string": "return a * b"}),
    )
    .await;
    assert!(out.contains("old_string matches 2 times (lines 2, 6); nothing was changed"), "{out}");
    assert!(out.contains("For line 6 (in multiply):") && out.contains("For line 2 (in add):"), "{out}");
    assert!(!out.contains("replace_all"), "the call a small model copied broke add: {out}");
    assert_eq!(std::fs::read_to_string(ws.join("ops.py")).unwrap(), ops);
}

#[tokio::test]
async fn a_toml_rewrite_of_some_settings_changes_only_those() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let config = "[server]\nport = 9000\nworkers = 4\n\n[client]\nworkers = 2\ntimeout = 5\n";
    std::fs::write(ws.join("config.toml"), config).unwrap();
    call_tool(&mut w, &mock, "read_file", json!({"file_path": "config.toml"})).await;
    // Seen on the tune half: the tables written back without port and timeout.
    let out = call_tool(
        &mut w,
        &mock,
        "write_file",
        json!({"file_path": "config.toml", "content": "[server]\nworkers = 8\n\n[client]\nworkers = 2\n"}),
    )
    .await;
    assert!(out.starts_with("merged into config.toml") && out.contains("server.workers 4 → 8"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("config.toml")).unwrap(), config.replace("workers = 4", "workers = 8"));
}

#[tokio::test]
async fn grep_for_copied_code_finds_the_code() {
    let (mut w, mock) = mock_worker(vec![], &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("stack.py"), "class Stack:\n    def __init__(self):\n        self.items = []\n").unwrap();
    // Seen on the tune half: `(self)` as a regex is a group, so this found nothing.
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "def __init__(self):"})).await;
    assert!(out.contains("matches nothing; these are the lines holding it as written"), "{out}");
    assert!(out.contains("stack.py:2:    def __init__(self):") && out.contains("[1 matching line in 1 file]"), "{out}");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "items = ["})).await;
    assert!(out.contains("is not a valid regular expression; searched for the text itself"), "{out}");
    assert!(out.contains("stack.py:3:"), "{out}");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "def \\w+\\(self\\)"})).await;
    assert!(out.starts_with("stack.py:2:"), "a regex that matches is a regex: {out}");
}
