//! The contract suite for capable models (issue 68) through the other
//! surfaces: the cases of `contract.rs` through `pirn run` (no
//! `--profile`: the `exact` profile), `pirn run --profile small` holding a
//! write back without ending `ok`, and exact edits through Claude Code's
//! surface driven by the official Claude Agent SDKs (Python and
//! TypeScript; `Edit` is `edit_file` there) and through `pirn acp` driven
//! by the official ACP SDK. Each asserts the bytes on disk, the status,
//! and that the model was called exactly the scripted turns.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

use super::contract::{
    CALC, CALC_AFTER, COMPOSE, Case, assert_bytes, assert_holds, bash_test_run, go_tabs, makefile_recipe,
    parallel_edits, python_div, question, rewrite, yaml_ports,
};
use super::mock::{MockServer, Reply};
use super::worker::pirn_command;

/// `pirn run ARGS` in a fresh workspace holding `files`, against `mock`:
/// its exit code, its stdout's JSON lines, and the workspace.
async fn pirn_run(
    mock: &MockServer,
    files: &[(&str, &str)],
    args: &[&str],
    envs: &[(&str, &str)],
) -> (Option<i32>, Vec<Value>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let mut cmd = pirn_command(&mock.base_url(), envs);
    cmd.arg("run").args(args).current_dir(dir.path()).stdin(Stdio::null()).stderr(Stdio::inherit());
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output()).await.expect("pirn run ends").unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (out.status.code(), lines, dir)
}

/// The result line of a `pirn run`.
fn result_line(lines: &[Value]) -> Value {
    lines.iter().find(|l| l["type"] == "result").cloned().unwrap_or_else(|| panic!("no result: {lines:?}"))
}

/// Runs `case` with `pirn run PROMPT` (no profile chosen); asserts it holds
/// and exits 0.
async fn run_case(case: Case) {
    let mock = MockServer::start(case.turns.clone()).await;
    let (code, lines, ws) = pirn_run(&mock, &case.files, &[case.message], &[]).await;
    let r = result_line(&lines);
    assert_holds(&case, &r, &mock, ws.path());
    assert_eq!(code, Some(0), "{r}");
    for e in lines.iter().filter(|l| l["event"]["event"] == "tool_end") {
        assert_eq!(e["event"]["is_error"], false, "{e}");
    }
}

#[tokio::test]
async fn contract_run_python_edit_lands_with_its_absolute_indentation() {
    run_case(python_div()).await;
}

#[tokio::test]
async fn contract_run_yaml_edit_keeps_ports_under_its_service() {
    run_case(yaml_ports()).await;
}

#[tokio::test]
async fn contract_run_go_edit_keeps_tabs() {
    run_case(go_tabs()).await;
}

#[tokio::test]
async fn contract_run_makefile_recipe_keeps_its_tab() {
    run_case(makefile_recipe()).await;
}

#[tokio::test]
async fn contract_run_two_edits_of_one_file_in_one_answer_apply_in_order() {
    run_case(parallel_edits()).await;
}

#[tokio::test]
async fn contract_run_a_rewrite_removing_most_of_a_file_lands_as_sent() {
    run_case(rewrite()).await;
}

#[tokio::test]
async fn contract_run_an_already_done_answer_ends_ok() {
    run_case(super::contract::already_done()).await;
}

#[tokio::test]
async fn contract_run_a_question_answered_after_reading_ends_ok() {
    run_case(question()).await;
}

#[tokio::test]
async fn contract_run_a_test_run_through_bash_then_an_answer_ends_ok() {
    run_case(bash_test_run()).await;
}

#[tokio::test]
async fn contract_run_profile_small_a_held_write_never_confirmed_is_not_ok() {
    let old = "a = 1\nb = 2\nc = 3\nd = 4\n";
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "vals.py"})),
        Reply::tool("write_file", json!({"file_path": "vals.py", "content": "a = 1\n"})),
        Reply::text(&["Done: vals.py holds only a."]),
        Reply::text(&["Done: vals.py holds only a."]),
    ])
    .await;
    let args = ["--profile", "small", "Keep only a in vals.py."];
    let (code, lines, ws) = pirn_run(&mock, &[("vals.py", old)], &args, &[]).await;
    let r = result_line(&lines);
    assert_bytes(ws.path(), "vals.py", old);
    assert_eq!(r["status"], "error", "{r}");
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("vals.py"), "{r}");
    assert_eq!(r["files_changed"], json!([]), "{r}");
    assert_ne!(code, Some(0), "{r}");
}

#[tokio::test]
async fn contract_claude_python_sdk_edit_lands_exactly() {
    use super::claude::{python, result, turn, workspace};
    let case = python_div();
    let mock = MockServer::start(case.turns.clone()).await;
    let ws = workspace(&case.files);
    let script = json!({"cwd": ws.path(), "prompt": case.message, "options": {"allowed_tools": ["Read", "Edit"]}});
    let report = python(&mock, script).await;
    if report.is_null() {
        return;
    }
    let t = turn(&report, 0);
    let init = t.iter().find(|m| m["kind"] == "SystemMessage").expect("system init");
    assert_eq!(init["data"]["pirn_profile"], "exact", "the profile in force: {init}");
    let uses: Vec<&Value> = t
        .iter()
        .filter(|m| m["kind"] == "AssistantMessage")
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b.get("name").is_some())
        .collect();
    let names: Vec<&str> = uses.iter().map(|b| b["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Read", "Edit"], "{t:?}");
    assert_eq!(uses[1]["input"]["new_string"], super::contract::DIV_NEW);
    let edited = t
        .iter()
        .filter(|m| m["kind"] == "UserMessage")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["tool_use_id"] == uses[1]["id"])
        .expect("the Edit's tool result");
    assert_ne!(edited["is_error"], true, "{edited}");
    let res = result(&t);
    assert_eq!((res["subtype"].as_str(), res["is_error"].as_bool()), (Some("success"), Some(false)), "{res}");
    assert_eq!(res["num_turns"], 3, "{res}");
    assert_bytes(ws.path(), "calc.py", CALC_AFTER);
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 0), "no hidden model call");
}

#[tokio::test]
async fn contract_claude_typescript_sdk_yaml_edit_lands_exactly() {
    use super::claude::{typescript, workspace};
    let case = yaml_ports();
    let mock = MockServer::start(case.turns.clone()).await;
    let ws = workspace(&case.files);
    let script = json!({"cwd": ws.path(), "prompt": case.message, "options": {"allowedTools": ["Read", "Edit"]}});
    let report = typescript(&mock, script).await;
    if report.is_null() {
        return;
    }
    let messages = report["messages"].as_array().unwrap();
    let names: Vec<&str> = messages
        .iter()
        .filter(|m| m["type"] == "assistant")
        .flat_map(|m| m["message"]["content"].as_array().unwrap())
        .filter_map(|b| b["name"].as_str())
        .collect();
    assert_eq!(names, ["Read", "Edit"], "{report}");
    let last = messages.last().unwrap();
    assert_eq!((last["subtype"].as_str(), last["is_error"].as_bool()), (Some("success"), Some(false)), "{last}");
    assert_eq!(last["num_turns"], 3, "{last}");
    assert_bytes(ws.path(), "compose.yaml", &case.after[0].1);
    assert_ne!(case.after[0].1, COMPOSE);
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 0), "no hidden model call");
}

#[tokio::test]
async fn contract_acp_edit_lands_exactly_and_its_diff_is_the_file() {
    let case = python_div();
    let mock = MockServer::start(case.turns.clone()).await;
    let ws = super::acp::workspace(&case.files);
    let script = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "steps": [{"op": "new"}, {"op": "prompt", "text": case.message}],
    });
    let r = super::acp::drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    assert_bytes(ws.path(), "calc.py", CALC_AFTER);
    let updates = r["updates"].as_array().unwrap();
    let done: Vec<&Value> = updates
        .iter()
        .map(|u| &u["update"])
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"].is_string())
        .collect();
    assert!(done.iter().all(|u| u["status"] == "completed"), "{done:?}");
    let diff = done
        .iter()
        .filter_map(|u| u["content"].as_array())
        .flatten()
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff: {updates:?}"));
    assert_eq!((diff["oldText"].as_str(), diff["newText"].as_str()), (Some(CALC), Some(CALC_AFTER)));
    assert_eq!((mock.requests().len(), mock.readings().len()), (3, 0), "no hidden model call");
}
