//! The contract suite for capable models (issue 68), continued through
//! JSONL 0.3.0: what Claude Code's `Edit` documents for an `old_string`
//! that is missing (the call fails, the file is untouched, the error says
//! where the nearest text is) or not unique without `replace_all` (fails,
//! saying how many and where; `replace_all` then changes every one), a
//! CRLF file edited with LF text, a follow-up send in the same session,
//! `init_ok.profile`, and the `small` profile: still re-indenting, and a
//! held-back write never confirmed does not end `ok`.

use serde_json::{Value, json};

use super::contract::{
    CALC, CALC_AFTER, Case, DIV_NEW, DIV_OLD, assert_bytes, assert_holds, assert_no_hidden_calls, python_div,
    tool_ends, tool_texts,
};
use super::finish::send_with;
use super::mock::{MockServer, Reply};
use super::worker::Worker;

fn read(path: &str) -> Reply {
    Reply::tool("read_file", json!({"file_path": path}))
}

/// `text` names each of `numbers` as a number of its own.
fn names_numbers(text: &str, numbers: &[usize]) -> bool {
    numbers.iter().all(|n| regex::Regex::new(&format!(r"\b{n}\b")).unwrap().is_match(text))
}

#[tokio::test]
async fn contract_an_old_string_not_in_the_file_fails_unchanged_and_says_where_the_nearest_text_is() {
    let script = vec![
        read("calc.py"),
        Reply::tool("edit_file", json!({"file_path": "calc.py", "old_string": "retrun x / y", "new_string": DIV_NEW})),
        Reply::text(&["The edit did not apply: the text I gave is not in calc.py."]),
    ];
    let (events, r, mock, w) =
        send_with(script, &[("calc.py", CALC)], "Make div return 0 when y is 0.", json!({})).await;
    let edit = tool_ends(&events).into_iter().find(|e| e["name"] == "edit_file").cloned().unwrap();
    assert_eq!(edit["is_error"], true, "{edit}");
    assert_bytes(w.workspace.path(), "calc.py", CALC);
    let told = tool_texts(&mock.requests()[2].body).join("\n");
    let lower = told.to_lowercase();
    assert!(lower.contains("not found") || lower.contains("no match"), "{told}");
    // Where the nearest text is: line 2, as the file has it.
    assert!(lower.contains("line 2") || lower.contains("lines 2"), "{told}");
    assert!(told.contains("return x / y"), "{told}");
    // A failed tool call is a result the model reads, not the send's failure.
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    assert_no_hidden_calls(&r, &mock, 3);
}

const SERVER_GO: &str = "package server\n\nimport \"log\"\n\nfunc Start(addr string) {\n\tlog.Printf(\"starting on %s\", addr)\n}\n\nfunc Stop() {\n\tlog.Printf(\"stopping\")\n}\n\nfunc Reload() {\n\tlog.Printf(\"reloading\")\n}\n";

#[tokio::test]
async fn contract_several_matches_fail_with_count_and_lines_then_replace_all_changes_every_one() {
    let args = |all: bool| json!({"file_path": "server.go", "old_string": "log.Printf(", "new_string": "logger.Infof(", "replace_all": all});
    let case = Case {
        files: vec![("server.go", SERVER_GO)],
        message: "Use logger.Infof instead of log.Printf in server.go.",
        turns: vec![
            read("server.go"),
            Reply::tool("edit_file", args(false)),
            Reply::tool("edit_file", args(true)),
            Reply::text(&["All three calls use logger.Infof now."]),
        ],
        after: vec![("server.go", SERVER_GO.replace("log.Printf(", "logger.Infof("))],
        changed: vec!["server.go"],
        reads: vec![],
    };
    let (events, r, mock, w) = send_with(case.turns.clone(), &case.files, case.message, json!({})).await;
    assert_holds(&case, &r, &mock, w.workspace.path());
    let ends = tool_ends(&events);
    let errors: Vec<Value> = ends.iter().filter(|e| e["name"] == "edit_file").map(|e| e["is_error"].clone()).collect();
    assert_eq!(errors, [json!(true), json!(false)], "{ends:?}");
    // The refusal: how many matches (3) and on which lines (6, 10, 14).
    let told = tool_texts(&mock.requests()[2].body).join("\n");
    assert!(names_numbers(&told, &[3, 6, 10, 14]), "{told}");
    assert!(told.contains("replace_all"), "the way to change every one is named: {told}");
}

#[tokio::test]
async fn contract_a_crlf_file_edited_with_lf_text_says_so_and_keeps_every_other_line() {
    let before = "[server]\r\nhost = \"localhost\"\r\nport = 8080\r\n\r\n[log]\r\nlevel = \"info\"\r\n";
    let (old, new) = ("host = \"localhost\"\nport = 8080", "host = \"0.0.0.0\"\nport = 9090");
    let script = vec![
        read("settings.toml"),
        Reply::tool("edit_file", json!({"file_path": "settings.toml", "old_string": old, "new_string": new})),
        Reply::text(&["The server listens on 0.0.0.0:9090."]),
    ];
    let message = "Listen on 0.0.0.0 port 9090.";
    let (events, r, mock, w) = send_with(script, &[("settings.toml", before)], message, json!({})).await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_no_hidden_calls(&r, &mock, 3);
    let edit = tool_ends(&events).into_iter().find(|e| e["name"] == "edit_file").cloned().unwrap();
    let told = tool_texts(&mock.requests()[2].body).join("\n");
    let got = std::fs::read(w.workspace.path().join("settings.toml")).unwrap();
    if edit["is_error"] == true {
        // Not matched: nothing changed.
        assert_eq!(String::from_utf8_lossy(&got), before, "{told}");
        return;
    }
    // Matched: the result says the line endings differed, and the lines
    // outside the match are the file's, byte for byte.
    let lower = told.to_lowercase();
    assert!(lower.contains("crlf") || lower.contains("line ending"), "{told}");
    let got = String::from_utf8(got).unwrap();
    let crlf = "[server]\r\nhost = \"0.0.0.0\"\r\nport = 9090\r\n\r\n[log]\r\nlevel = \"info\"\r\n";
    let as_sent = "[server]\r\nhost = \"0.0.0.0\"\nport = 9090\r\n\r\n[log]\r\nlevel = \"info\"\r\n";
    assert!(got == crlf || got == as_sent, "{got:?}");
    assert_eq!(r["files_changed"], json!(["settings.toml"]), "{r}");
}

#[tokio::test]
async fn contract_a_follow_up_send_in_the_same_session_lands_exactly() {
    let doc = "def div(x, y):\n    \"\"\"x / y, or 0 when y is 0.\"\"\"";
    let mut script = python_div().turns;
    script.push(Reply::tool(
        "edit_file",
        json!({"file_path": "calc.py", "old_string": "def div(x, y):", "new_string": doc}),
    ));
    script.push(Reply::text(&["Added a docstring."]));
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("calc.py"), CALC).unwrap();
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    w.write(json!({"type": "send", "id": "s1", "message": "Make div return 0 when y is 0."})).await;
    let (_, first) = w.result_for("s1").await;
    assert_eq!(first["status"], "ok", "{first}");
    assert_bytes(w.workspace.path(), "calc.py", CALC_AFTER);
    w.write(json!({"type": "send", "id": "s2", "message": "Now give div a docstring."})).await;
    let (events, second) = w.result_for("s2").await;
    assert_eq!(second["status"], "ok", "{second}");
    let after = "def div(x, y):\n    \"\"\"x / y, or 0 when y is 0.\"\"\"\n    if y == 0:\n        return 0\n    return x / y\n";
    assert_bytes(w.workspace.path(), "calc.py", after);
    assert_eq!(second["files_changed"], json!(["calc.py"]), "{second}");
    assert_eq!(tool_ends(&events)[0]["is_error"], false, "{events:?}");
    // Two turns for the follow-up, five model calls in all, no side call.
    assert_eq!(second["iterations"], 2, "{second}");
    assert_eq!((mock.requests().len(), mock.readings().len()), (5, 0));
    assert!(second.get("side_calls").is_none_or(|s| s["calls"] == 0), "{second}");
    // The follow-up is a turn of the same conversation.
    let history = mock.requests()[3].body["messages"].to_string();
    assert!(history.contains("Make div return 0 when y is 0.") && history.contains(DIV_OLD), "{history}");
}

#[tokio::test]
async fn contract_init_ok_names_the_profile_in_force() {
    let mock = MockServer::start(vec![]).await;
    let (_, ok) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    assert_eq!(ok["profile"], "exact", "no profile chosen: {ok}");
    let (_, ok) = Worker::ready(&mock.base_url(), &[], json!({"profile": "small"})).await;
    assert_eq!(ok["profile"], "small", "{ok}");
    let (_, ok) = Worker::ready(&mock.base_url(), &[("PIRN_PROFILE", "small")], json!({})).await;
    assert_eq!(ok["profile"], "small", "the operator's PIRN_PROFILE: {ok}");
    let (_, ok) = Worker::ready(&mock.base_url(), &[("PIRN_PROFILE", "small")], json!({"profile": "exact"})).await;
    assert_eq!(ok["profile"], "exact", "init.config decides over PIRN_PROFILE: {ok}");
    // 0.2.0 is heddle's shape: no pirn field.
    let (_, ok) = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", json!({})).await;
    assert!(ok.get("profile").is_none(), "{ok}");
    assert!(mock.requests().is_empty() && mock.readings().is_empty());
}

#[tokio::test]
async fn contract_the_small_profile_still_reindents_continuation_lines() {
    let mut script = python_div().turns;
    // The re-indented file no longer parses: the profile's parse check may
    // send the model back once.
    script.push(Reply::text(&["div returns 0 for y == 0."]));
    let message = "Make div return 0 when y is 0.";
    let (_, r, _mock, w) = send_with(script, &[("calc.py", CALC)], message, json!({"profile": "small"})).await;
    let reindented = "def div(x, y):\n    if y == 0:\n            return 0\n        return x / y\n";
    assert_bytes(w.workspace.path(), "calc.py", reindented);
    assert_eq!(r["files_changed"], json!(["calc.py"]), "{r}");
}

#[tokio::test]
async fn contract_under_small_a_held_write_never_confirmed_ends_in_an_error_naming_the_file() {
    let old = "a = 1\nb = 2\nc = 3\nd = 4\n";
    let script = vec![
        read("vals.py"),
        Reply::tool("write_file", json!({"file_path": "vals.py", "content": "a = 1\n"})),
        Reply::text(&["Done: vals.py holds only a."]),
        Reply::text(&["Done: vals.py holds only a."]),
    ];
    let config = json!({"profile": "small"});
    let (events, r, _mock, w) = send_with(script, &[("vals.py", old)], "Keep only a in vals.py.", config).await;
    let write = tool_ends(&events).into_iter().find(|e| e["name"] == "write_file").cloned().unwrap();
    assert_eq!(write["is_error"], true, "the write was held back: {write}");
    assert_bytes(w.workspace.path(), "vals.py", old);
    assert_eq!(r["status"], "error", "a held write never confirmed is not ok: {r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("vals.py"), "the error names the held file: {r}");
    assert_eq!(r["files_changed"], json!([]), "true to the disk: {r}");
}

#[tokio::test]
async fn contract_the_claude_surface_names_its_profile_and_takes_one_from_settings_env() {
    // Claude Code's settings document sets variables for the session in
    // `env`; pirn takes `PIRN_PROFILE` from there, and `system init` names
    // the profile in force (`pirn_profile`).
    let mock = MockServer::start(vec![Reply::text(&["four"]), Reply::text(&["five"])]).await;
    let ws = tempfile::tempdir().unwrap();
    let init = |settings: Option<&str>| {
        let mut c = super::worker::pirn_command(&mock.base_url(), &[]);
        c.args(["-p", "--output-format", "stream-json", "--verbose"]).current_dir(ws.path());
        if let Some(s) = settings {
            c.args(["--settings", s]);
        }
        c.arg("2+2?");
        async move {
            let out = c.output().await.unwrap();
            assert!(out.status.success(), "{out:?}");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            assert_eq!((first["type"].as_str(), first["subtype"].as_str()), (Some("system"), Some("init")), "{text}");
            first["pirn_profile"].as_str().unwrap_or("").to_owned()
        }
    };
    assert_eq!(init(None).await, "exact");
    assert_eq!(init(Some(r#"{"env": {"PIRN_PROFILE": "small"}}"#)).await, "small");
}

/// Claude Code's `Write` refuses to replace a file changed since it was
/// read: a whole-file write from the model's old view would undo the
/// change unseen. Here the user changes the file between two sends of one
/// session; the model's second write, from its first view, is refused with
/// the file as it is now, and its write from that view lands as sent.
#[tokio::test]
async fn contract_a_write_from_an_old_view_does_not_undo_a_change_made_since() {
    let (before, by_user) = ("TIMEOUT = 10\nRETRIES = 3\n", "TIMEOUT = 30\nRETRIES = 5\n");
    let (stale, fresh) = ("TIMEOUT = 30\nRETRIES = 3\nDEBUG = False\n", "TIMEOUT = 30\nRETRIES = 5\nDEBUG = False\n");
    let write = |content: &str| Reply::tool("write_file", json!({"file_path": "settings.py", "content": content}));
    let script = vec![
        read("settings.py"),
        write("TIMEOUT = 30\nRETRIES = 3\n"),
        Reply::text(&["TIMEOUT is 30."]),
        write(stale),
        write(fresh),
        Reply::text(&["Added DEBUG."]),
    ];
    let mock = MockServer::start(script).await;
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("settings.py"), before).unwrap();
    let (mut w, _) = w.init("0.3.0", json!({})).await;
    w.write(json!({"type": "send", "id": "s1", "message": "Set TIMEOUT to 30 in settings.py."})).await;
    let (_, first) = w.result_for("s1").await;
    assert_eq!(first["status"], "ok", "{first}");
    std::fs::write(w.workspace.path().join("settings.py"), by_user).unwrap();
    w.write(json!({"type": "send", "id": "s2", "message": "Add DEBUG = False to settings.py."})).await;
    let (events, second) = w.result_for("s2").await;
    let ends = tool_ends(&events);
    assert_eq!((ends[0]["is_error"].as_bool(), ends[1]["is_error"].as_bool()), (Some(true), Some(false)), "{ends:?}");
    let refused = &tool_texts(&mock.requests()[4].body)[0];
    assert!(refused.contains("nothing written: settings.py changed since you last read it"), "{refused}");
    assert!(refused.contains("     2\tRETRIES = 5\n"), "the file as it is now: {refused}");
    assert_bytes(w.workspace.path(), "settings.py", fresh);
    assert_eq!((second["status"].as_str(), &second["files_changed"]), (Some("ok"), &json!(["settings.py"])));
    assert_eq!(mock.readings().len(), 0);
}

/// The same within one send: a command the model ran changed the file
/// after its read (here `sed -i`); its write from the read is refused.
#[tokio::test]
async fn contract_a_write_after_a_command_changed_the_file_is_refused_then_lands_as_sent() {
    let script = vec![
        read("v.txt"),
        Reply::tool("bash", json!({"command": "sed -i 's/1.0/1.1/' v.txt"})),
        Reply::tool("write_file", json!({"file_path": "v.txt", "content": "version 1.0\nname demo\n"})),
        Reply::tool("write_file", json!({"file_path": "v.txt", "content": "version 1.1\nname demo\n"})),
        Reply::text(&["Done."]),
    ];
    let files = [("v.txt", "version 1.0\n")];
    let (events, r, _mock, w) = send_with(script, &files, "Bump v.txt to 1.1 and add its name.", json!({})).await;
    let ends = tool_ends(&events);
    assert_eq!(
        ends.iter().map(|e| e["is_error"].as_bool()).collect::<Vec<_>>(),
        [Some(false), Some(false), Some(true), Some(false)]
    );
    assert_bytes(w.workspace.path(), "v.txt", "version 1.1\nname demo\n");
    assert_eq!(r["status"], "ok", "{r}");
}
