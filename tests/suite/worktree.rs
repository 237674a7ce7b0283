//! Worktrees through the binary: ten `pirn run --worktree` workers started
//! at once on one repository, each in its own worktree; a worktree removed
//! at the end when nothing changed; a SIGKILLed worker's worktree listed
//! and removed by `pirn sessions`; `init.config.worktree` with a rewind in
//! it and a fork that gets a worktree of its own.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, pirn_command};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit holding `a.txt`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    git(dir.path(), &["add", "a.txt"]);
    git(dir.path(), &["commit", "-q", "-m", "first"]);
    dir
}

fn result_of(stdout: &[u8]) -> Value {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["type"] == "result")
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn ten_workers_at_once_on_one_repository_never_touch_each_others_files() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let mut runs = Vec::new();
    let mut mocks = Vec::new();
    for _ in 0..10 {
        let mock = MockServer::start(vec![
            Reply::tool("bash", json!({"command": "pwd > where.txt && echo x >> a.txt"})),
            Reply::text(&["done"]),
        ])
        .await;
        let child = pirn_command(&mock.base_url(), &[])
            .args(["run", "--cwd", root.to_str().unwrap(), "--format", "jsonl", "--worktree", "--", "go"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        runs.push(child.wait_with_output());
        mocks.push(mock);
    }
    let outs = futures_util::future::join_all(runs).await;
    let mut paths = std::collections::BTreeSet::new();
    for out in outs {
        let out = out.unwrap();
        let r = result_of(&out.stdout);
        assert_eq!(r["status"], "ok", "{r}: {}", String::from_utf8_lossy(&out.stderr));
        let wt = &r["worktree"];
        let path = Path::new(wt["path"].as_str().unwrap());
        assert!(!path.starts_with(&root), "outside the tree the operator works in: {wt}");
        assert!(wt["branch"].as_str().unwrap().starts_with("pirn/pirn-"), "{wt}");
        assert_eq!(wt["changed"], json!(["a.txt", "where.txt"]), "{wt}");
        assert!(wt["diff_stat"].as_str().unwrap().contains("1 file changed"), "{wt}");
        assert_eq!(std::fs::read_to_string(path.join("where.txt")).unwrap().trim(), path.to_str().unwrap());
        assert_eq!(std::fs::read_to_string(path.join("a.txt")).unwrap(), "a\nx\n", "one worker's change only");
        paths.insert(path.to_owned());
    }
    assert_eq!(paths.len(), 10, "ten worktrees");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a\n", "the main tree is untouched");
    assert!(!root.join("where.txt").exists());
    assert_eq!(git(&root, &["worktree", "list"]).lines().count(), 11);
}

#[tokio::test]
async fn an_unchanged_worktree_is_removed_when_asked_and_a_killed_workers_is_listed_and_removed() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let mock = MockServer::start(vec![Reply::text(&["nothing to do"]), Reply::Hang]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--cwd", root.to_str().unwrap(), "--format", "jsonl"])
        .args(["--worktree", "tidy", "--remove-unchanged-worktree", "look"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let r = result_of(&out.stdout);
    assert_eq!(r["worktree"]["changed"], json!([]), "{r}");
    let path = r["worktree"]["path"].as_str().unwrap().to_owned();
    assert!(!Path::new(&path).exists(), "removed at the end");
    assert!(!git(&root, &["branch"]).contains("pirn/tidy"), "its branch too");

    let mut child = pirn_command(&mock.base_url(), &[])
        .args(["run", "--cwd", root.to_str().unwrap(), "--format", "jsonl", "--worktree", "killed", "wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let list = || async {
        let out = pirn_command(&mock.base_url(), &[]).args(["sessions", "worktrees", "--json"]).output().await.unwrap();
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        all.as_array().unwrap().iter().find(|w| w["name"] == "killed" && w["repo"] == root.to_str().unwrap()).cloned()
    };
    let mut listed = None;
    for _ in 0..200 {
        if mock.requests().len() == 2 {
            listed = list().await;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let live = listed.expect("listed while it runs");
    assert_eq!(live["live"], true, "{live}");
    child.kill().await.unwrap();
    let _ = child.wait().await;
    let dead = list().await.unwrap();
    assert_eq!(dead["live"], false, "{dead}");
    assert!(!dead["session_id"].as_str().unwrap().is_empty(), "{dead}");
    let out = pirn_command(&mock.base_url(), &[])
        .args(["sessions", "worktree-rm", "killed", "--force"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(list().await.is_none());
    assert!(!Path::new(dead["path"].as_str().unwrap()).exists());
}

#[tokio::test]
async fn a_rewind_in_a_worktree_restores_that_worktree_only_and_a_fork_gets_its_own() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "a.txt"})),
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "changed\n"})),
        Reply::text(&["done"]),
        Reply::text(&["forked"]),
    ])
    .await;
    let cwd = json!({"cwd": root.to_str().unwrap(), "worktree": "rw"});
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], cwd).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type": "send", "id": "1", "message": "change a.txt"})).await;
    let (_, r) = w.result_for("1").await;
    let path = std::path::PathBuf::from(r["worktree"]["path"].as_str().unwrap());
    assert_eq!(r["worktree"]["branch"], "pirn/rw");
    assert_eq!(std::fs::read_to_string(path.join("a.txt")).unwrap(), "changed\n");
    // The main tree has the same file; a rewind must not touch it.
    std::fs::write(root.join("a.txt"), "the operator's own edit\n").unwrap();
    w.write(json!({"type": "rewind", "id": "r", "send_id": "1"})).await;
    let (_, r) = w.result_for("r").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(std::fs::read_to_string(path.join("a.txt")).unwrap(), "a\n");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "the operator's own edit\n");
    w.write(json!({"type": "shutdown", "id": "x"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));

    let fork = json!({"resume_session_id": sid, "fork_session": true, "worktree": "rw-fork", "cwd": path});
    let (mut f, _) = Worker::ready(&mock.base_url(), &[], fork).await;
    f.write(json!({"type": "send", "id": "2", "message": "and now?"})).await;
    let (_, r) = f.result_for("2").await;
    assert_eq!(r["worktree"]["branch"], "pirn/rw-fork", "{r}");
    assert_ne!(r["worktree"]["path"].as_str().unwrap(), path.to_str().unwrap());
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    let mut w = w;
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0",
        "config": {"model": "m", "system_prompt": "", "tools": [], "cwd": "/", "worktree": true}}))
        .await;
    let refused = w.next().await;
    assert!(refused["error"]["message"].as_str().unwrap().contains("not inside a git repository"), "{refused}");
}

#[tokio::test]
async fn a_worktree_runs_no_program_the_repositorys_config_names() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let marker = tempfile::tempdir().unwrap();
    let hit = |name: &str| marker.path().join(name);
    // What a model could plant: .git is inside the workspace it may write.
    std::fs::write(root.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    git(&root, &["add", ".gitattributes"]);
    git(&root, &["commit", "-q", "-m", "attributes"]);
    let sh = |name: &str| format!("sh -c 'touch {}; cat'", hit(name).display());
    git(&root, &["config", "filter.evil.smudge", &sh("smudge")]);
    git(&root, &["config", "filter.evil.clean", &sh("clean")]);
    git(&root, &["config", "filter.evil.required", "true"]);
    git(&root, &["config", "diff.evil.textconv", &sh("textconv")]);
    git(&root, &["config", "diff.external", &sh("external")]);
    let hook = root.join(".git/hooks/post-checkout");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch {}\n", hit("hook").display())).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "a.txt"})),
        Reply::tool("write_file", json!({"file_path": "a.txt", "content": "changed\n"})),
        Reply::text(&["done"]),
    ])
    .await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--cwd", root.to_str().unwrap(), "--format", "jsonl", "--worktree", "safe", "change a"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let r = result_of(&out.stdout);
    assert_eq!(r["status"], "ok", "{r}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(r["worktree"]["changed"], json!(["a.txt"]), "{r}");
    for name in ["smudge", "clean", "textconv", "external", "hook"] {
        assert!(!hit(name).exists(), "the repository's {name} program ran");
    }
}

#[tokio::test]
async fn the_http_session_body_asks_for_a_worktree() {
    let repo = repo();
    let root = repo.path().canonicalize().unwrap();
    let mock = MockServer::start(vec![
        Reply::tool("write_file", json!({"file_path": "b.txt", "content": "b\n"})),
        Reply::text(&["done"]),
    ])
    .await;
    let d = super::http::daemon(&mock.base_url(), &[]).await;
    let c = super::http::client();
    let body = json!({"cwd": root.to_str().unwrap(), "worktree": "over-http", "worktree_cleanup": "keep"});
    let id = super::http::new_session(&c, &d.base, body).await;
    let url = |p: &str| format!("{}/v1/sessions/{id}{p}", d.base);
    let mut events = super::http::SseReader::new(c.get(url("/events")).send().await.unwrap());
    super::http::post(&c, &url("/sends"), json!({"message": "write b", "send_id": "h"})).await;
    let frames = events.until_result("h").await;
    let r = &frames.last().unwrap().data;
    assert_eq!(r["worktree"]["branch"], "pirn/over-http", "{r}");
    assert_eq!(r["worktree"]["changed"], json!(["b.txt"]), "{r}");
    let path = Path::new(r["worktree"]["path"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(path.join("b.txt")).unwrap(), "b\n");
    assert!(!root.join("b.txt").exists(), "the repository's own tree is untouched");
}
