//! `pirn run`, `--help`, `--version`, exit codes.

use std::process::Stdio;

use serde_json::Value;

use super::mock::{MockServer, Reply};
use super::worker::{pirn_command, signal};

async fn run(base: &str, args: &[&str]) -> (i32, String, String) {
    run_with(base, args, &[]).await
}

async fn run_with(base: &str, args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), "# demo\n").unwrap();
    let out = pirn_command(base, envs).args(args).current_dir(dir.path()).stdin(Stdio::null()).output().await.unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[tokio::test]
async fn version_names_the_protocol() {
    let (code, out, _) = run("http://127.0.0.1:9", &["--version"]).await;
    assert_eq!(code, 0);
    let newest = include_str!("../../PROTOCOL_VERSION").trim();
    assert!(out.contains(env!("CARGO_PKG_VERSION")) && out.contains(&format!("protocol {newest}")), "{out}");
    let (code, out, _) = run("http://127.0.0.1:9", &["--help"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("run"), "{out}");
}

#[tokio::test]
async fn run_text_prints_the_streamed_answer() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", serde_json::json!({"file_path":"README.md"})),
        Reply::text(&["It is ", "a demo."]),
    ])
    .await;
    let (code, out, err) = run(&mock.base_url(), &["run", "--format", "text", "what is this?"]).await;
    assert_eq!(code, 0, "stderr: {err}");
    assert_eq!(out, "It is a demo.\n");
    assert!(err.contains("[tool] read_file"), "{err}");
    assert_eq!(mock.requests()[0].body["messages"][2]["content"], "what is this?");
}

#[tokio::test]
async fn run_jsonl_prints_events_and_the_result() {
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let (code, out, _) = run(&mock.base_url(), &["run", "--model", "m1", "--tools", "grep,glob", "hello"]).await;
    assert_eq!(code, 0);
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_eq!(lines.last().unwrap()["response"], "hi");
    assert_eq!(lines[0]["event"]["event"], "content_delta");
    let req = &mock.requests()[0].body;
    assert_eq!(req["model"], "m1");
    assert_eq!(req["tools"].as_array().unwrap().len(), 3, "grep, glob and the plan tool");
}

#[tokio::test]
async fn run_exit_codes() {
    let mock = MockServer::start(vec![Reply::status(500, "down")]).await;
    assert_eq!(run(&mock.base_url(), &["run", "x"]).await.0, 1, "provider error");
    let same = || Reply::tool("glob", serde_json::json!({"pattern":"*"}));
    let mock = MockServer::start(vec![same(), same(), same(), same()]).await;
    assert_eq!(run(&mock.base_url(), &["run", "x"]).await.0, 3, "loop detected");
    let mock = MockServer::start(vec![same()]).await;
    assert_eq!(run(&mock.base_url(), &["run", "--max-iterations", "1", "x"]).await.0, 3, "max iterations");
    assert_eq!(run("http://127.0.0.1:9", &["run", "--bogus"]).await.0, 2, "bad usage");
    assert_eq!(run("http://127.0.0.1:9", &["run", "--cwd", "/nonexistent-dir", "x"]).await.0, 2, "bad workspace");
}

#[tokio::test]
async fn sigint_cancels_a_run() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["thinking".into()] }]).await;
    let dir = tempfile::tempdir().unwrap();
    let child = pirn_command(&mock.base_url(), &[])
        .args(["run", "x"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    signal(child.id().unwrap(), libc::SIGINT);
    let out = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait_with_output()).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let last: Value = serde_json::from_str(String::from_utf8(out.stdout).unwrap().lines().last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "cancelled");
}

#[tokio::test]
async fn run_reads_the_request_only_in_a_profile_or_when_told() {
    // `pirn run` speaks 0.3.0. In the default profile an answer that changed
    // nothing is taken as it is (no side call); the small profile, or
    // `--request-check`, holds it against the model's reading of the
    // request (the mock reads it as a question, so the answer stands).
    let runs: [(&[&str], usize); 5] = [
        (&["run", "what is this?"], 0),
        (&["run", "--profile", "small", "what is this?"], 1),
        (&["run", "--profile", "small", "--request-check=false", "what is this?"], 0),
        (&["run", "--request-check=true", "what is this?"], 1),
        // Without `=` the flag takes no value: the word after it is the prompt.
        (&["run", "--request-check", "false"], 1),
    ];
    for (args, readings) in runs {
        let mock = MockServer::start(vec![Reply::text(&["It is a demo."])]).await;
        let (code, _, err) = run(&mock.base_url(), args).await;
        assert_eq!((code, mock.readings().len()), (0, readings), "{args:?}: {err}");
        let prompt = mock.requests()[0].body["messages"].as_array().unwrap().last().unwrap()["content"].clone();
        assert_eq!(&prompt, args.last().unwrap(), "{args:?}");
    }
    let mock = MockServer::start(vec![]).await;
    let (code, _, err) = run(&mock.base_url(), &["run", "--profile", "tiny", "hi"]).await;
    assert_eq!(code, 2, "an unknown profile is a usage error: {err}");
    assert!(err.contains("\"tiny\"") && err.contains("small"), "{err}");
}

/// Variables of a run's environment.
type Envs = &'static [(&'static str, &'static str)];

#[tokio::test]
async fn run_help_states_the_profile_a_run_would_have() {
    let cases: [(&[&str], Envs, &str); 5] = [
        (&["run", "--help"], &[], "Profile in force for model `local`: exact (from the model-settings table's rule"),
        (
            &["run", "-h"],
            &[("PIRN_PROFILE", "small")],
            "Profile in force for model `local`: small (from PIRN_PROFILE).",
        ),
        (
            &["run", "--model", "Qwen2.5-Coder-1.5B-Instruct", "--help"],
            &[],
            "`Qwen2.5-Coder-1.5B-Instruct`: small (from the",
        ),
        (
            &["help", "run"],
            &[("PIRN_MODEL", "qwen2.5-coder-1.5b"), ("PIRN_PROFILE", "exact")],
            "`qwen2.5-coder-1.5b`: exact (from PIRN_PROFILE)",
        ),
        (&["run", "--profile=small", "--help"], &[], "`local`: small (from --profile)."),
    ];
    for (args, envs, says) in cases {
        let (code, out, _) = run_with("http://127.0.0.1:9", args, envs).await;
        assert_eq!(code, 0, "{args:?}");
        assert!(out.contains(says), "{args:?} {envs:?}: {out}");
    }
    let (_, out, _) = run_with("http://127.0.0.1:9", &["run", "--help"], &[("PIRN_PROFILE", "tiny")]).await;
    assert!(out.contains("none, the run would be refused") && out.contains("\"tiny\""), "{out}");
}
