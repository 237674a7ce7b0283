//! The tools through the real binary: a scripted model calls them, the test
//! checks the files, the processes and what the model was told.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, mock_worker};

/// One send in which the model makes one tool call; returns the send's
/// events and the tool message the model got back.
pub async fn call(w: &mut Worker, mock: &MockServer, name: &str, args: Value) -> (Vec<Value>, String) {
    let before = mock.requests().len();
    mock.push(Reply::tool(name, args));
    mock.push(Reply::text(&["done"]));
    let id = format!("s{before}");
    w.write(json!({"type":"send","id":id,"message":"use the tool"})).await;
    let (events, r) = w.result_for(&id).await;
    assert_eq!(r["status"], "ok", "{r}");
    let reqs = mock.requests();
    let msgs = reqs[before + 1].body["messages"].as_array().unwrap().clone();
    let out = msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    (events, out)
}

/// The tool message only.
pub async fn call_tool(w: &mut Worker, mock: &MockServer, name: &str, args: Value) -> String {
    call(w, mock, name, args).await.1
}

/// A worker for tests of what a tool did and what the model was told, its
/// sends ending as the script says ([`super::worker::scripted_only`]).
pub async fn tool_worker(extra: Value) -> (Worker, MockServer) {
    mock_worker(vec![], &[], super::worker::scripted_only(extra)).await
}

#[tokio::test]
async fn file_tools_round_trip() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let out =
        call_tool(&mut w, &mock, "write_file", json!({"file_path":"src/a.txt","content":"alpha\nbeta\ngamma\n"})).await;
    assert!(out.contains("17 bytes"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).unwrap(), "alpha\nbeta\ngamma\n");
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path":"src/a.txt","offset":2,"limit":1})).await;
    assert!(out.contains("     2\tbeta"), "{out}");
    assert!(out.contains("showing lines 2-2 of 3") && out.contains("offset=3"), "{out}");
    let out =
        call_tool(&mut w, &mock, "edit_file", json!({"file_path":"src/a.txt","old_string":"beta","new_string":"BETA"}))
            .await;
    assert!(out.contains("     2\tBETA"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("src/a.txt")).unwrap(), "alpha\nBETA\ngamma\n");
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern":"**/*.txt"})).await;
    assert_eq!(out.trim(), "src/a.txt\n[1 file matches]");
    // An empty path is the workspace, as a missing one is (a small model sends "").
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern":"**/*.txt", "path": ""})).await;
    assert_eq!(out.trim(), "src/a.txt\n[1 file matches]");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern":"gam+a", "path": " "})).await;
    assert!(out.starts_with("src/a.txt:3:gamma"), "{out}");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern":"gam+a"})).await;
    assert_eq!(out.trim(), "src/a.txt:3:gamma\n[1 matching line in 1 file]");
    let out = call_tool(&mut w, &mock, "bash", json!({"command":"echo out; echo err >&2; exit 3"})).await;
    assert!(out.contains("out\nerr\n") && out.contains("exit code 3"), "{out}");
}

#[tokio::test]
async fn paths_cannot_leave_the_workspace_unless_allowed() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "top secret\n").unwrap();
    let allowed = tempfile::tempdir().unwrap();
    std::fs::write(allowed.path().join("shared.txt"), "shared\n").unwrap();
    let (mut w, mock) = tool_worker(json!({"allowed_paths": [allowed.path()]})).await;
    let ws = w.workspace.path().to_path_buf();
    std::os::unix::fs::symlink(outside.path(), ws.join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("new.txt"), ws.join("dangling")).unwrap();
    let secret = outside.path().join("secret.txt").display().to_string();
    for args in [
        json!({"file_path": "../../../../../../etc/passwd"}),
        json!({"file_path": secret}),
        json!({"file_path": "escape/secret.txt"}),
    ] {
        let out = call_tool(&mut w, &mock, "read_file", args.clone()).await;
        assert!(out.starts_with("Error:") && out.contains("outside the workspace"), "{args}: {out}");
        assert!(!out.contains("top secret"));
    }
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "dangling", "content": "x"})).await;
    assert!(out.contains("outside the workspace"), "{out}");
    assert!(!outside.path().join("new.txt").exists());
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "escape/secret.txt", "old_string": "top", "new_string": "no"}),
    )
    .await;
    assert!(out.contains("outside the workspace"), "{out}");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "secret", "path": "escape"})).await;
    assert!(out.contains("outside the workspace"), "{out}");
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern": "*", "path": "/"})).await;
    assert!(out.contains("outside the workspace"), "{out}");
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": allowed.path().join("shared.txt")})).await;
    assert!(out.contains("1\tshared"), "allowed_paths: {out}");
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "pwd"})).await;
    assert!(out.starts_with(&ws.canonicalize().unwrap().display().to_string()), "bash cwd: {out}");
}

#[tokio::test]
async fn config_cwd_sets_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("here.txt"), "in cwd\n").unwrap();
    let (mut w, mock) = tool_worker(json!({"cwd": dir.path()})).await;
    assert!(call_tool(&mut w, &mock, "read_file", json!({"file_path": "here.txt"})).await.contains("in cwd"));
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "ls"})).await;
    assert!(out.contains("here.txt"), "{out}");
}

#[tokio::test]
async fn read_file_limits() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let long = "x".repeat(5000);
    std::fs::write(ws.join("long.txt"), format!("short\n{long}\n")).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "long.txt"})).await;
    assert!(out.contains("line cut at 2000 of 5000 characters"), "{out}");
    assert!(out.len() < 2500);
    let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    png.extend_from_slice(b"IHDR");
    std::fs::write(ws.join("logo.png"), &png).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "logo.png"})).await;
    assert!(out.contains("binary file") && out.contains("image/png"), "{out}");
    std::fs::write(ws.join("blob.bin"), [1u8, 0, 2, 0, 3]).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "blob.bin"})).await;
    assert!(out.contains("binary file") && out.contains("5 bytes"), "{out}");
    std::fs::File::create(ws.join("huge.log")).unwrap().set_len(25 * 1024 * 1024).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "huge.log"})).await;
    assert!(out.contains("26214400 bytes") && out.contains("limit"), "{out}");
    let lines: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("many.txt"), lines).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "many.txt"})).await;
    assert!(out.contains("  2000\tline 2000\n") && !out.contains("line 2001\n"), "default limit");
    assert!(out.contains("showing lines 1-2000 of 3000; read on with offset=2001"));
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "many.txt", "offset": 2999})).await;
    assert!(out.contains("  2999\tline 2999\n  3000\tline 3000\n") && !out.contains("showing"), "{out}");
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "many.txt", "offset": 5000})).await;
    assert!(out.contains("past the end"), "{out}");
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "."})).await;
    assert!(out.contains("is a directory"), "{out}");
}

#[tokio::test]
async fn write_file_is_atomic_and_keeps_permissions() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho old\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    // An existing file is overwritten only after the model has read it.
    let out =
        call_tool(&mut w, &mock, "write_file", json!({"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}))
            .await;
    assert!(out.starts_with("Error: nothing written: run.sh already exists and you had not read it"), "{out}");
    assert!(out.contains("     2\techo old"), "the file is shown instead: {out}");
    assert_eq!(std::fs::read_to_string(ws.join("run.sh")).unwrap(), "#!/bin/sh\necho old\n");
    let out =
        call_tool(&mut w, &mock, "write_file", json!({"file_path": "run.sh", "content": "#!/bin/sh\necho new\n"}))
            .await;
    assert!(out.contains("overwrote run.sh: 19 bytes written"), "{out}");
    assert_eq!(std::fs::metadata(ws.join("run.sh")).unwrap().permissions().mode() & 0o777, 0o750);
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "a/b/c/d.txt", "content": "deep"})).await;
    assert!(out.contains("created a/b/c/d.txt"), "{out}");
    let leftovers: Vec<_> = std::fs::read_dir(&ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out = call_tool(&mut w, &mock, "write_file", json!({"file_path": "a/b", "content": "x"})).await;
    assert!(out.starts_with("Error:") && out.contains("directory"), "{out}");
}

#[tokio::test]
async fn edit_file_tolerates_indentation_differences_in_the_small_profile() {
    let (mut w, mock) = tool_worker(json!({"profile": "small"})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(ws.join("s.py"), "def average(values):\n    return sum(values) / len(values)\n").unwrap();
    let args = json!({"file_path": "s.py", "old_string": "return sum(values) / len(values)",
                      "new_string": "if not values:\n    return 0.0\nreturn sum(values) / len(values)"});
    // The match starts at an indented line: the new lines keep its column.
    let out = call_tool(&mut w, &mock, "edit_file", args).await;
    assert!(out.starts_with("edited s.py"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("s.py")).unwrap(),
        "def average(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n"
    );
    // Lines that match only when indentation is ignored are found and re-indented.
    let args = json!({"file_path": "s.py", "old_string": "if not values:\nreturn 0.0",
                      "new_string": "if len(values) == 0:\n    return 0.0"});
    let out = call_tool(&mut w, &mock, "edit_file", args).await;
    assert!(out.contains("ignoring indentation"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.join("s.py")).unwrap(),
        "def average(values):\n    if len(values) == 0:\n        return 0.0\n    return sum(values) / len(values)\n"
    );
}

#[tokio::test]
async fn edit_file_explains_misses_and_keeps_line_endings() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::write(
        ws.join("m.rs"),
        "fn main() {\n    let total = compute(1);\n    println!(\"{total}\");\n}\nlet x = 1;\nlet x = 1;\n",
    )
    .unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "m.rs", "old_string": "let totl = compute(1);", "new_string": "y"}),
    )
    .await;
    assert!(
        out.contains("not found")
            && out.contains("closest region is line 2")
            && out.contains("2\t    let total = compute(1);"),
        "{out}"
    );
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
    )
    .await;
    assert!(out.contains("occurs 2 times (lines 5, 6)") && out.contains("replace_all"), "{out}");
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "m.rs", "old_string": "let x = 1;", "new_string": "let x = 2;", "replace_all": true}),
    )
    .await;
    assert!(out.contains("replaced 2 occurrences"), "{out}");
    assert!(std::fs::read_to_string(ws.join("m.rs")).unwrap().ends_with("let x = 2;\nlet x = 2;\n"));
    std::fs::write(ws.join("dos.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    let out = call_tool(
        &mut w,
        &mock,
        "edit_file",
        json!({"file_path": "dos.txt", "old_string": "one\ntwo", "new_string": "uno\ndos\nextra"}),
    )
    .await;
    assert!(out.contains("edited dos.txt") && out.contains("CRLF"), "{out}");
    assert_eq!(std::fs::read_to_string(ws.join("dos.txt")).unwrap(), "uno\r\ndos\r\nextra\r\nthree\r\n");
}

#[tokio::test]
async fn glob_honours_gitignore_hidden_files_and_mtime() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::create_dir_all(ws.join("target")).unwrap();
    std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(ws.join("target/gen.rs"), "").unwrap();
    std::fs::write(ws.join(".hidden.rs"), "").unwrap();
    std::fs::write(ws.join("top.rs"), "").unwrap();
    std::fs::write(ws.join("src/old.rs"), "").unwrap();
    let t = std::time::SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(ws.join("src/old.rs")).unwrap().set_modified(t).unwrap();
    std::fs::write(ws.join("src/new.rs"), "").unwrap();
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern": "**/*.rs"})).await;
    let lines: Vec<&str> = out.lines().collect();
    assert!(!out.contains("target/") && !out.contains(".hidden"), "{out}");
    assert_eq!(lines[2], "src/old.rs", "oldest last: {out}");
    assert_eq!(lines[3], "[3 files match]", "the count is stated: {out}");
    assert_eq!(lines.len(), 4, "{out}");
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern": "*.rs"})).await;
    assert_eq!(out.trim(), "top.rs\n[1 file matches]", "* does not cross /");
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern": ".*.rs"})).await;
    assert_eq!(out.trim(), ".hidden.rs\n[1 file matches]");
    // A pattern that repeats `path` is taken from the workspace, as meant.
    let out = call_tool(&mut w, &mock, "glob", json!({"path": "src", "pattern": "src/*.rs"})).await;
    assert_eq!(out.lines().count(), 3, "{out}");
    // No match says what the directory holds.
    let out = call_tool(&mut w, &mock, "glob", json!({"path": "src", "pattern": "*.py"})).await;
    assert!(out.starts_with("no files match") && out.contains("src contains: new.rs, old.rs"), "{out}");
    for i in 0..1005 {
        std::fs::write(ws.join(format!("src/f{i}.txt")), "").unwrap();
    }
    let out = call_tool(&mut w, &mock, "glob", json!({"pattern": "src/*.txt"})).await;
    assert!(out.contains("[1005 files match; showing the 1000 newest"), "{}", &out[out.len() - 200..]);
}

#[tokio::test]
async fn grep_options() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join(".gitignore"), "ignored.txt\n").unwrap();
    std::fs::write(ws.join("ignored.txt"), "Needle\n").unwrap();
    std::fs::write(ws.join("src/a.rs"), "one\nNeedle here\nthree\nfour\nneedle again\n").unwrap();
    std::fs::write(ws.join("src/b.txt"), "needle\n").unwrap();
    std::fs::write(ws.join("bin.dat"), b"needle\0\x01\x02").unwrap();
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "needle"})).await;
    assert_eq!(out, "src/a.rs:5:needle again\nsrc/b.txt:1:needle\n[2 matching lines in 2 files]\n");
    let out =
        call_tool(&mut w, &mock, "grep", json!({"pattern": "needle", "case_insensitive": true, "glob": "*.rs"})).await;
    assert_eq!(out, "src/a.rs:2:Needle here\nsrc/a.rs:5:needle again\n[2 matching lines in 1 file]\n");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "needle", "-i": true, "output_mode": "count"})).await;
    assert_eq!(out, "src/a.rs:2\nsrc/b.txt:1\n[3 matching lines in 2 files]\n");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "needle", "output_mode": "files_with_matches"})).await;
    assert_eq!(out, "src/a.rs\nsrc/b.txt\n[2 files match]\n");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "Needle", "context": 1, "path": "src"})).await;
    assert_eq!(out, "src/a.rs-1-one\nsrc/a.rs:2:Needle here\nsrc/a.rs-3-three\n[1 matching line in 1 file]\n");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "e", "head_limit": 2})).await;
    assert!(out.starts_with("src/a.rs:1:one\nsrc/a.rs:2:Needle here\n[") && out.contains("head_limit=2"), "{out}");
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "("})).await;
    assert!(out.contains("not a valid regular expression: searched for as text"), "{out}");
    let big: String = (0..3000).map(|i| format!("hit {i}\n")).collect();
    std::fs::write(ws.join("src/big.txt"), big).unwrap();
    let out = call_tool(&mut w, &mock, "grep", json!({"pattern": "hit", "path": "src/big.txt"})).await;
    assert!(out.contains("stopped after 2000 matching lines"), "{}", &out[out.len() - 300..]);
}

#[tokio::test]
async fn bash_timeout_output_cap_stdin_and_stray_children() {
    let (mut w, mock) = tool_worker(json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    let t = Instant::now();
    let out =
        call_tool(&mut w, &mock, "bash", json!({"command": "sleep 5 & sleep 6; echo never", "timeout_ms": 300})).await;
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert!(out.contains("timed out after 300 ms") && !out.contains("never"), "{out}");
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "seq 1 200000"})).await;
    assert!(
        out.starts_with("1\n2\n3\n") && out.contains("200000\n[exit code 0]") && out.contains("lines ("),
        "{}",
        &out[..200]
    );
    assert!(out.len() < 48 * 1024, "{}", out.len());
    let t = Instant::now();
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "cat; echo read-stdin"})).await;
    assert!(out.contains("read-stdin") && t.elapsed() < Duration::from_secs(5), "{out}");
    // A background job holding the pipe is killed with the group; one that
    // escaped the group (setsid) stops being read shortly after the shell exits.
    let t = Instant::now();
    let out =
        call_tool(&mut w, &mock, "bash", json!({"command": "(sleep 31.7; touch bg-survived) & echo started"})).await;
    assert!(out.contains("started") && t.elapsed() < Duration::from_secs(5), "{out} {:?}", t.elapsed());
    assert!(processes_with("31.7").is_empty(), "background job survived: {:?}", processes_with("31.7"));
    let t = Instant::now();
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "setsid sleep 3 & echo detached"})).await;
    assert!(out.contains("detached") && t.elapsed() < Duration::from_secs(2), "{out} {:?}", t.elapsed());
    let out = call_tool(&mut w, &mock, "bash", json!({"command": "kill -9 $$"})).await;
    assert!(out.contains("killed by signal 9"), "{out}");
    let (events, _) = call(&mut w, &mock, "bash", json!({"command": "yes | head -c 100000"})).await;
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end").unwrap();
    assert!(end["event"]["result_preview"].as_str().unwrap().chars().count() <= 500);
    assert!(!ws.join("bg-survived").exists());
}

/// Pids whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").contains(needle))
                .unwrap_or(false)
        })
        .collect()
}
