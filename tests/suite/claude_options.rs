//! The Agent SDK options that map onto pirn settings, through the official
//! Python SDK against the mock model: each is honoured or refused, never
//! ignored. `add_dirs` (`--add-dir`) widens where the file tools and bash
//! may write; `env` reaches bash only for the names `PIRN_ENV_PASSTHROUGH`
//! lists; `setting_sources` picks the user and project instruction files;
//! an `extra_args` flag pirn does not know fails the connection. And the
//! profile's side calls (`--settings` `env.PIRN_PROFILE`), counted apart
//! in `result.side_calls`, through both SDKs and from a shell.

use serde_json::{Value, json};

use super::claude::{python, python_report, result, turn, typescript, workspace};
use super::mock::{MockServer, Reply, last_tool_text};
use super::worker::pirn_command;

#[tokio::test]
async fn a_profiles_side_calls_are_counted_apart_in_the_result() {
    let app = [("app.py", "def f():\n    return 1\n")];
    // From a shell: the small profile reads the request (one side call).
    for (profile, side_calls) in [("small", Some(1)), ("exact", None)] {
        let mock = MockServer::start(vec![Reply::text(&["It returns 1."])]).await;
        let ws = workspace(&app);
        let out = pirn_command(&mock.base_url(), &[("PIRN_PROFILE", profile)])
            .args(["-p", "--output-format", "stream-json", "--verbose", "What does f return?"])
            .current_dir(ws.path())
            .output()
            .await
            .unwrap();
        let lines: Vec<Value> =
            String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let init = lines.iter().find(|l| l["subtype"] == "init").expect("system init");
        assert_eq!(init["pirn_profile"], profile, "{init}");
        let r = lines.last().unwrap();
        assert_eq!((r["type"].as_str(), r["num_turns"].as_u64()), (Some("result"), Some(1)), "{r}");
        assert_eq!(r["side_calls"]["calls"].as_u64(), side_calls, "{profile}: {r}");
        assert_eq!(mock.readings().len() as u64, side_calls.unwrap_or(0));
        if side_calls.is_some() {
            assert!(r["side_calls"]["usage"]["input_tokens"].is_u64(), "{r}");
        }
    }
    // Through the SDKs, the profile set as Claude Code's settings' env.
    let settings = r#"{"env": {"PIRN_PROFILE": "small"}}"#;
    let mock = MockServer::start(vec![Reply::text(&["It returns 1."])]).await;
    let ws = workspace(&app);
    let script = json!({"cwd": ws.path(), "prompt": "What does f return?", "options": {"settings": settings}});
    let report = typescript(&mock, script).await;
    if report.is_null() {
        return;
    }
    let last = report["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["num_turns"].as_u64(), last["side_calls"]["calls"].as_u64()), (Some(1), Some(1)), "{last}");
    let mock = MockServer::start(vec![Reply::text(&["It returns 1."])]).await;
    let script = json!({"cwd": ws.path(), "prompt": "What does f return?", "options": {"settings": settings}});
    let r = result(&turn(&python(&mock, script).await, 0));
    assert_eq!((r["subtype"].as_str(), r["num_turns"].as_u64()), (Some("success"), Some(1)), "the SDK parses it: {r}");
    assert_eq!(mock.readings().len(), 1);
}

#[tokio::test]
async fn add_dirs_let_the_tools_write_beyond_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().canonicalize().unwrap().join("x.txt");
    for (add, lands) in [(true, true), (false, false)] {
        let mock = MockServer::start(vec![
            Reply::tool("write_file", json!({"file_path": target, "content": "hi\n"})),
            Reply::text(&["Done."]),
        ])
        .await;
        let ws = workspace(&[]);
        let mut options = json!({"permission_mode": "bypassPermissions"});
        if add {
            options["add_dirs"] = json!([outside.path()]);
        }
        let r = python(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "Write x.txt there."})).await;
        if r.is_null() {
            return;
        }
        assert_eq!(target.exists(), lands, "add_dirs {add}: {}", last_tool_text(&mock.requests()[1].body));
        let _ = std::fs::remove_file(&target);
    }
}

#[tokio::test]
async fn env_reaches_bash_only_for_the_names_passed_through() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "echo \"a=$PIRN_T_SHOWN b=$PIRN_T_KEPT\" > env.txt"})),
        Reply::text(&["Done."]),
    ])
    .await;
    let ws = workspace(&[]);
    let env = json!({"PIRN_T_SHOWN": "visible", "PIRN_T_KEPT": "secret", "PIRN_ENV_PASSTHROUGH": "PIRN_T_SHOWN"});
    let options = json!({"permission_mode": "bypassPermissions", "env": env});
    let r = python(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "Record the env."})).await;
    if r.is_null() {
        return;
    }
    assert_eq!(std::fs::read_to_string(ws.path().join("env.txt")).unwrap(), "a=visible b=\n");
}

#[tokio::test]
async fn setting_sources_pick_the_instruction_files() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("AGENTS.md"), "USER RULE: be brief.\n").unwrap();
    for (sources, user, project) in [(json!(["project"]), false, true), (json!(["user"]), true, false)] {
        let mock = MockServer::start(vec![Reply::text(&["ok"])]).await;
        let ws = workspace(&[("AGENTS.md", "PROJECT RULE: use tabs.\n")]);
        let options = json!({"setting_sources": sources, "env": {"PIRN_HOME": home.path()}});
        let r = python(&mock, json!({"cwd": ws.path(), "options": options, "steps": [{"op": "query", "text": "hi"}]}))
            .await;
        if r.is_null() {
            return;
        }
        let sys = mock.requests()[0].body["messages"][0]["content"].as_str().unwrap_or_default().to_owned();
        assert_eq!((sys.contains("USER RULE"), sys.contains("PROJECT RULE")), (user, project), "{sources}: {sys}");
        let init = &turn(&r, 0)[0]["data"];
        assert_eq!(init["instruction_files"].as_array().map(Vec::len), Some(1), "{init}");
        assert_eq!(result(&turn(&r, 0))["subtype"], "success");
    }
}

#[tokio::test]
async fn an_extra_arg_pirn_does_not_know_fails_the_connection() {
    let mock = MockServer::start(vec![Reply::text(&["never asked"])]).await;
    let ws = workspace(&[]);
    let options = json!({"extra_args": {"no-such-flag": null}});
    let r = python_report(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "hi"})).await;
    if r.is_null() {
        return;
    }
    assert_ne!(r["errors"], json!([]), "an unknown flag was ignored: {r}");
    assert!(mock.requests().iter().all(|q| !q.path.ends_with("/chat/completions")), "the model was called");
    // A flag pirn knows is honoured through extra_args like any other.
    let mock = MockServer::start(vec![Reply::text(&["ok"])]).await;
    let options = json!({"extra_args": {"max-budget-usd": "5"}});
    let r = python(&mock, json!({"cwd": ws.path(), "options": options, "prompt": "hi"})).await;
    assert_eq!(result(&turn(&r, 0))["subtype"], "success");
}
