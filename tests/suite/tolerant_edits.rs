//! Edits as a small model makes them, through the real binary, in the
//! profile made for it (`small`; the default profile's exact edits are
//! `contract.rs`'s): an
//! `old_string` that leaves out a docstring or runs on over lines the file
//! has, a rename that forgets the callers. Each must land as the tolerant
//! tier says (or fail saying why) and the result must say what happened;
//! whole-file writes land byte for byte (see `honest.rs`).

use serde_json::json;

use super::mock::last_tool_text;
use super::tools::{call_tool, tool_worker};

const BILLING: &str =
    "def get_total(prices):\n    \"\"\"Sum of the prices, rounded to cents.\"\"\"\n    return round(sum(prices), 2)\n";
const REPORT: &str =
    "from billing import get_total\n\n\ndef summary(prices):\n    return f\"total {get_total(prices)}\"\n";

#[tokio::test]
async fn an_old_string_without_the_docstring_still_renames_and_the_callers_are_named() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
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
    // The uses of the old name that the rename left behind, with their lines:
    // information for the model; pirn edits none of them.
    assert!(out.contains("this change took away `get_total`, which is still used here"), "{out}");
    assert!(out.contains("report.py:1: from billing import get_total") && out.contains("report.py:5:"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("report.py")).unwrap(), REPORT);
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
async fn an_edit_made_already_writes_nothing_and_says_where_new_string_stands() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("report.py"), REPORT.replacen("get_total", "compute_total", 1)).unwrap();
    let (events, out) = super::tools::call(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "report.py", "old_string": "from billing import get_total", "new_string": "from billing import compute_total"}),
    )
    .await;
    assert!(out.starts_with("Error: report.py: old_string not found, and nothing was written"), "{out}");
    assert!(out.contains("new_string is already in the file (at line 1)"), "{out}");
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end").unwrap();
    assert_eq!(end["event"]["is_error"], true, "nothing was written: {end}");
}

#[tokio::test]
async fn the_still_used_note_never_reads_through_a_symlink_out_of_the_workspace() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
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
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
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
async fn an_edit_that_runs_on_into_the_same_bytes_is_no_change_and_says_so() {
    // Seen on Exercism's bob: the same edit again after it was made. The
    // run-on tier would write the file back as it is: that is no change,
    // never "edited" (the model read "edited" four times and went round).
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("bob.py"), "def response(hey_bob):\n    pass\n").unwrap();
    let edit = json!({"file_path": "bob.py", "old_string": "def response(hey_bob):",
                      "new_string": "def response(hey_bob):\n    return 'Sure.'"});
    let first = call_tool(&mut w, &mock, "edit_file", edit.clone()).await;
    assert!(first.starts_with("edited bob.py"), "{first}");
    let made = std::fs::read_to_string(ws.join("bob.py")).unwrap();
    let mtime = std::fs::metadata(ws.join("bob.py")).unwrap().modified().unwrap();
    let again = call_tool(&mut w, &mock, "edit_file", edit).await;
    assert!(again.starts_with("no change: bob.py already holds what this edit makes"), "{again}");
    assert!(again.contains("2\t    return 'Sure.'"), "it shows where: {again}");
    assert_eq!(std::fs::read_to_string(ws.join("bob.py")).unwrap(), made);
    assert_eq!(std::fs::metadata(ws.join("bob.py")).unwrap().modified().unwrap(), mtime, "nothing written");
}

#[tokio::test]
async fn several_matches_get_one_call_each_and_no_replace_all_offer() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
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
async fn grep_for_copied_code_finds_the_code() {
    // Every profile's grep; the small profile would send the answer after
    // a grep alone back to read the file (`read_before_answer`).
    let (mut w, mock) = tool_worker(json!({"profile": "exact"})).await;
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

#[tokio::test]
async fn an_edit_whose_old_string_this_send_removed_says_the_change_is_made_and_a_new_send_does_not() {
    use super::mock::Reply;
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    let settings = "{\n  \"theme\": \"dark\",\n  \"legacy\": true,\n  \"size\": 13\n}\n";
    std::fs::write(ws.join("settings.json"), settings).unwrap();
    let drop_legacy = json!({"file_path": "settings.json", "old_string": "  \"legacy\": true,\n", "new_string": ""});
    let rename_theme = json!({"file_path": "settings.json", "old_string": "\"theme\"", "new_string": "\"ui\""});
    let script = vec![
        Reply::tool("edit_file", drop_legacy.clone()),
        Reply::tool("edit_file", rename_theme.clone()),
        Reply::tool("edit_file", rename_theme.clone()),
        Reply::tool("edit_file", drop_legacy.clone()),
        Reply::text(&["done"]),
    ];
    let r = scripted_send(&mut w, &mock, script, "drop legacy, rename theme").await;
    assert_eq!(r["status"], "ok", "{r}");
    let now = "{\n  \"ui\": \"dark\",\n  \"size\": 13\n}\n";
    assert_eq!(std::fs::read_to_string(ws.join("settings.json")).unwrap(), now);
    let reqs = mock.requests();
    let tool_text = |i: usize| last_tool_text(&reqs[i].body);
    // An edit whose text the send changed: said, and read_file named; the
    // model may go on with tools.
    let out = tool_text(3);
    assert!(out.contains("before your earlier change in this request, which changed that part"), "{out}");
    assert!(!out.contains("looks made already"), "{out}");
    assert!(reqs[3].body.get("tool_choice").is_none(), "{}", reqs[3].body);
    // The deletion again: its text was in the file before this send's own
    // change, so the error says the deletion looks made, and the answer is
    // asked for next, without tools (as after a rewrite with the same bytes).
    let out = tool_text(4);
    assert!(out.starts_with("Error: settings.json: old_string not found, and nothing was written"), "{out}");
    assert!(out.contains("this deletion looks made already"), "{out}");
    assert_eq!(reqs[4].body["tool_choice"], "none", "the answer is asked for");
    assert_eq!(std::fs::read_to_string(ws.join("settings.json")).unwrap(), now, "nothing written");
    // A later send did not change the file: the plain error.
    let out = call_tool(&mut w, &mock, "edit_file", drop_legacy).await;
    assert!(out.contains("old_string not found (not even ignoring whitespace)"), "{out}");
    assert!(!out.contains("earlier change"), "{out}");
}

#[tokio::test]
async fn the_same_edit_again_inside_its_own_new_string_writes_nothing_and_a_wider_one_lands() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("banner.py"), "def banner(u):\n    return f\"Welcom to Ledger, {u}!\"\n").unwrap();
    let fix = json!({"file_path": "banner.py", "old_string": "Welcom", "new_string": "Welcome"});
    let out = call_tool(&mut w, &mock, "edit_file", fix.clone()).await;
    assert!(out.starts_with("edited banner.py: replaced 1 occurrence"), "{out}");
    let fixed = "def banner(u):\n    return f\"Welcome to Ledger, {u}!\"\n";
    assert_eq!(std::fs::read_to_string(ws.join("banner.py")).unwrap(), fixed);
    // "Welcom" now matches only inside the "Welcome" the first edit wrote.
    let out = call_tool(&mut w, &mock, "edit_file", fix).await;
    assert!(out.starts_with("Error: banner.py: nothing was written"), "{out}");
    assert!(out.contains("(line 2) the file already reads new_string, so this edit looks made already"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("banner.py")).unwrap(), fixed, "not Welcomee");
    // The whole text in old_string: the edit lands as sent.
    let wider = json!({"file_path": "banner.py", "old_string": "Welcome", "new_string": "Welcomee"});
    let out = call_tool(&mut w, &mock, "edit_file", wider).await;
    assert!(out.starts_with("edited banner.py"), "{out}");
    assert!(std::fs::read_to_string(ws.join("banner.py")).unwrap().contains("Welcomee to"));
}

#[tokio::test]
async fn an_old_string_the_named_file_lacks_is_shown_where_the_workspace_has_it() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::create_dir_all(ws.join("app")).unwrap();
    std::fs::write(ws.join("README.md"), "# Ledger\n\nA tiny ledger.\n").unwrap();
    std::fs::write(ws.join("app/banner.py"), "def banner(u):\n    return f\"Welcom to Ledger, {u}!\"\n").unwrap();
    let guess = json!({"file_path": "README.md", "old_string": "Welcom", "new_string": "Welcome"});
    let out = call_tool(&mut w, &mock, "edit_file", guess.clone()).await;
    assert_eq!(
        out,
        "Error: README.md: old_string not found, and nothing was written. That text is in app/banner.py (line 2), \
         not in README.md; if that is the file you mean, edit it there."
    );
    let missing = json!({"file_path": "app/banner.txt", "old_string": "Welcom to", "new_string": "Welcome to"});
    let out = call_tool(&mut w, &mock, "edit_file", missing).await;
    assert!(out.contains("That text is in app/banner.py (line 2), not in app/banner.txt"), "{out}");
    // Nothing was written anywhere.
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "# Ledger\n\nA tiny ledger.\n");
    assert!(std::fs::read_to_string(ws.join("app/banner.py")).unwrap().contains("Welcom to"));
    assert!(!ws.join("app/banner.txt").exists());
    // Once app/banner.py reads "Welcome", its "Welcom" is the edit made, not a place to make it.
    let fix = json!({"file_path": "app/banner.py", "old_string": "Welcom", "new_string": "Welcome"});
    assert!(call_tool(&mut w, &mock, "edit_file", fix).await.starts_with("edited app/banner.py"));
    let out = call_tool(&mut w, &mock, "edit_file", guess).await;
    assert!(out.starts_with("Error: README.md: old_string not found (not even ignoring whitespace)"), "{out}");
}

#[tokio::test]
async fn the_wrong_file_again_after_the_fix_in_the_same_send_says_where_the_edit_was_made() {
    use super::mock::Reply;
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::create_dir_all(ws.join("app")).unwrap();
    std::fs::write(ws.join("README.md"), "# Ledger\n").unwrap();
    std::fs::write(ws.join("app/banner.py"), "def banner(u):\n    return f\"Welcom to Ledger, {u}!\"\n").unwrap();
    std::fs::write(ws.join("app/notes.txt"), "old: x = 1\n").unwrap();
    let guess = json!({"file_path": "README.md", "old_string": "Welcom to", "new_string": "Welcome to"});
    let fix = json!({"file_path": "app/banner.py", "old_string": "Welcom to", "new_string": "Welcome to"});
    let drop = json!({"file_path": "app/notes.txt", "old_string": "old: x = 1\n", "new_string": ""});
    let drop_guess = json!({"file_path": "README.md", "old_string": "old: x = 1\n", "new_string": ""});
    let script = vec![
        Reply::tool("edit_file", guess.clone()),
        Reply::tool("edit_file", fix),
        Reply::tool("edit_file", drop),
        Reply::tool("edit_file", drop_guess),
        Reply::text(&["Fixed the banner."]),
    ];
    let r = scripted_send(&mut w, &mock, script, "Fix the spelling of the welcome banner.").await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    let tool_text = |i: usize| last_tool_text(&reqs[i].body);
    assert!(tool_text(1).contains("That text is in app/banner.py (line 2), not in README.md"), "{}", tool_text(1));
    // A deletion made in one file, then asked of another: the file the
    // send changed is named, the deletion said made, and the answer asked for.
    let out = tool_text(4);
    assert!(out.contains("app/notes.txt held that text before your earlier change in this request, which removed it: this deletion looks made already"), "{out}");
    assert_eq!(reqs[4].body["tool_choice"], "none", "the answer is asked for");
    assert_eq!(std::fs::read_to_string(ws.join("README.md")).unwrap(), "# Ledger\n", "nothing written");
    assert_eq!(std::fs::read_to_string(ws.join("app/notes.txt")).unwrap(), "", "the deletion landed once");

    // In a new send: the fix, then the same guess: the changed file is
    // named and the edit said made.
    let again = |file: &str| json!({"file_path": file, "old_string": "Welcome to", "new_string": "Welcome to the"});
    let script = vec![
        Reply::tool("edit_file", again("app/banner.py")),
        Reply::tool("edit_file", again("README.md")),
        Reply::text(&["Done."]),
    ];
    let r = scripted_send(&mut w, &mock, script, "Say 'Welcome to the Ledger'.").await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    let n = reqs.len();
    let last_tool = last_tool_text(&reqs[n - 1].body);
    assert_eq!(
        last_tool,
        "Error: README.md: old_string not found, and nothing was written. app/banner.py held that text before \
         your earlier change in this request and now reads new_string there (line 2): this edit looks made \
         already. Go on with the rest of the task."
    );
    assert_eq!(reqs[n - 1].body["tool_choice"], "none", "the answer is asked for");
    // Another send changed nothing yet: the plain error, nothing said made.
    let out = call_tool(&mut w, &mock, "edit_file", guess).await;
    assert!(out.starts_with("Error: README.md: old_string not found (not even ignoring whitespace)"), "{out}");
}

#[tokio::test]
async fn the_wrong_file_note_never_names_a_file_through_a_symlink_or_a_hidden_one() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "API_KEY=OUTSIDE-SECRET\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), ws.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("linkdir")).unwrap();
    std::fs::write(ws.join(".env"), "API_KEY=OUTSIDE-SECRET\n").unwrap();
    std::fs::write(ws.join("notes.md"), "# notes\n").unwrap();
    let probe = json!({"file_path": "notes.md", "old_string": "API_KEY=OUTSIDE", "new_string": "x"});
    let out = call_tool(&mut w, &mock, "edit_file", probe).await;
    assert!(out.starts_with("Error: notes.md: old_string not found (not even ignoring whitespace)"), "{out}");
    assert!(!out.contains("link") && !out.contains(".env") && !out.contains("secret"), "{out}");
}

/// One send of `message` on `w`, the mock answering it with `script`; its result.
async fn scripted_send(
    w: &mut super::worker::Worker,
    mock: &super::mock::MockServer,
    script: Vec<super::mock::Reply>,
    message: &str,
) -> serde_json::Value {
    for reply in script {
        mock.push(reply);
    }
    let id = format!("s{}", mock.requests().len());
    w.write(json!({"type": "send", "id": id, "message": message})).await;
    w.result_for(&id).await.1
}
