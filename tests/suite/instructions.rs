//! Project instruction files (`AGENTS.md`, else `CLAUDE.md`) through the
//! binary: read into a 0.3.0 session's system prompt and named in
//! `init_ok`; not read by a 0.2.0 session (whose init_ok keeps heddle's
//! shape); a symlink leaving its directory not read. And `pirn run
//! --continue`, which resumes the workspace's latest session.

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, pirn_command};

fn system_prompt(mock: &MockServer, i: usize) -> String {
    mock.requests()[i].body["messages"][0]["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_0_3_session_reads_agents_md_and_a_0_2_session_does_not() {
    let mock = MockServer::start(vec![Reply::text(&["a"]), Reply::text(&["b"]), Reply::text(&["c"])]).await;
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::create_dir(root.join(".git")).unwrap();
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::fs::write(root.join("AGENTS.md"), "Answer in French.\n").unwrap();
    std::fs::write(root.join("pkg/CLAUDE.md"), "Run the tests with make.\n").unwrap();
    let cwd = json!({"cwd": root.join("pkg")});

    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], cwd.clone()).await;
    let files = json!([root.join("AGENTS.md"), root.join("pkg/CLAUDE.md")]);
    assert_eq!(ok["instruction_files"], files, "{ok}");
    w.write(json!({"type": "send", "id": "s1", "message": "hi"})).await;
    w.result_for("s1").await;
    let sys = system_prompt(&mock, 0);
    assert!(sys.starts_with("You are a test."), "the base prompt comes first: {sys}");
    let (french, make) = (sys.find("Answer in French.").unwrap(), sys.find("Run the tests with make.").unwrap());
    assert!(french < make, "the git root's file comes before the workspace's: {sys}");

    let (mut w, ok) = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", cwd.clone()).await;
    let keys: Vec<&String> = ok.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "id", "session_id", "protocol_version"], "0.2.0 init_ok is heddle's: {ok}");
    w.write(json!({"type": "send", "id": "s1", "message": "hi"})).await;
    w.result_for("s1").await;
    assert!(!system_prompt(&mock, 1).contains("French"), "a 0.2.0 session read AGENTS.md");

    let mut off = cwd.clone();
    off["instruction_files"] = json!(false);
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], off).await;
    assert_eq!(ok.get("instruction_files"), None, "{ok}");
    w.write(json!({"type": "send", "id": "s1", "message": "hi"})).await;
    w.result_for("s1").await;
    assert!(!system_prompt(&mock, 2).contains("French"), "config.instruction_files: false still read it");
}

#[tokio::test]
async fn instruction_sources_read_the_user_file_the_project_files_or_neither() {
    let mock = MockServer::start((0..4).map(|_| Reply::text(&["ok"])).collect()).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("AGENTS.md"), "USER RULE: be brief.\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    std::fs::write(root.join("AGENTS.md"), "PROJECT RULE: use tabs.\n").unwrap();
    let home_dir = home.path().to_str().unwrap();
    for (i, (sources, user, project)) in [
        (json!(["user"]), true, false),
        (json!(["project"]), false, true),
        (json!([]), false, false),
        (json!(["user", "project"]), true, true),
    ]
    .into_iter()
    .enumerate()
    {
        let config = json!({"cwd": root, "instruction_sources": sources});
        let (mut w, _) = Worker::ready(&mock.base_url(), &[("PIRN_HOME", home_dir)], config).await;
        w.write(json!({"type": "send", "id": "s", "message": "hi"})).await;
        w.result_for("s").await;
        let sys = system_prompt(&mock, i);
        assert_eq!((sys.contains("USER RULE"), sys.contains("PROJECT RULE")), (user, project), "{sources}: {sys}");
    }
    // Both switches at once contradict each other: the session does not open.
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let config = json!({"model": "m", "system_prompt": "s", "tools": [], "cwd": root, "instruction_sources": ["user"], "instruction_files": true});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0", "config": config})).await;
    let err = w.next().await;
    assert!(err["type"] != "init_ok" && err.to_string().contains("instruction_sources"), "{err}");
}

#[tokio::test]
async fn a_symlinked_agents_md_pointing_outside_the_workspace_is_not_read() {
    let mock = MockServer::start(vec![Reply::text(&["a"])]).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.md"), "LEAKED TEXT\n").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes.md"), ws.path().join("AGENTS.md")).unwrap();
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"cwd": ws.path()})).await;
    assert_eq!(ok.get("instruction_files"), None, "{ok}");
    w.write(json!({"type": "send", "id": "s1", "message": "hi"})).await;
    w.result_for("s1").await;
    assert!(!system_prompt(&mock, 0).contains("LEAKED"));
}

#[tokio::test]
async fn run_continue_resumes_the_latest_session_of_the_workspace() {
    let mock = MockServer::start(vec![Reply::text(&["first answer"]), Reply::text(&["second answer"])]).await;
    let ws = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    let run = |args: &[&str]| {
        let mut c = pirn_command(&mock.base_url(), &[("PIRN_HOME", home_s)]);
        c.arg("run").args(args).current_dir(ws.path());
        c
    };
    let session = |out: &std::process::Output| -> String {
        let text = String::from_utf8_lossy(&out.stdout);
        let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        last["session_id"].as_str().unwrap().to_owned()
    };
    let a = run(&["first question"]).output().await.unwrap();
    assert!(a.status.success(), "{a:?}");
    let b = run(&["--continue", "second question"]).output().await.unwrap();
    assert!(b.status.success(), "{b:?}");
    assert_eq!(session(&a), session(&b));
    let body = mock.requests()[1].body["messages"].to_string();
    assert!(body.contains("first question") && body.contains("first answer"), "{body}");
}
