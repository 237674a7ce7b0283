//! Faults of the host, the model server and the tools: the worker survives,
//! stays bounded, and leaks nothing.

use std::time::{Duration, Instant};

use serde_json::json;

use super::mock::{MockServer, Reply};
use super::tools::call_tool;
use super::worker::{Worker, signal};

fn proc_count(pid: u32, what: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/{what}")).map(|d| d.count()).unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_closed_stdout_ends_the_worker_quietly() {
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    w.drop_stdout();
    w.write(json!({"type":"init","id":"1","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    for i in 0..3 {
        let _ = w.try_write(json!({"type":"status","id":format!("s{i}")})).await;
    }
    assert_eq!(w.exit_code().await, Some(3));
}

#[tokio::test]
async fn sigterm_cancels_the_active_send_and_exits_0() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["x".into()] }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    signal(w.child.id().unwrap(), libc::SIGTERM);
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "cancelled");
    assert_eq!(w.exit_code().await, Some(0));
}

#[tokio::test]
async fn secrets_never_reach_stdout_logs_or_tools() {
    let secret = "sk-test-4f9a1c7e2b";
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "env; echo done"})), Reply::text(&["ok"])]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = super::worker::pirn_command(
        &mock.base_url(),
        &[("PIRN_API_KEY", secret), ("OPENAI_API_KEY", secret), ("PIRN_LOG", "trace")],
    );
    cmd.current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"type":"init","id":"1","config":{"model":"m","system_prompt":"s","tools":["bash"]}}),
        json!({"type":"send","id":"2","message":"print the environment"}),
    ];
    for l in lines {
        stdin.write_all(format!("{l}\n").as_bytes()).await.unwrap();
    }
    // Give the send time to finish, then EOF.
    for _ in 0..100 {
        if mock.requests().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output()).await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.contains("\"status\":\"ok\""), "{stdout}");
    assert!(stdout.contains("done"), "the tool ran: {stdout}");
    assert!(!stderr.is_empty(), "trace logging was on");
    assert!(!stdout.contains(secret), "secret on stdout");
    assert!(!stderr.contains(secret), "secret in the logs");
    let reqs = mock.requests();
    assert_eq!(reqs[0].authorization.as_deref(), Some(format!("Bearer {secret}").as_str()), "the key is used");
    let tool_msg = reqs[1].body["messages"][3]["content"].as_str().unwrap();
    assert!(tool_msg.contains("PATH=") && !tool_msg.contains(secret), "secret in a tool result: {tool_msg}");
}

#[tokio::test]
async fn a_tool_flooding_a_gigabyte_keeps_memory_bounded_and_status_live() {
    let mock = MockServer::start(vec![]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let pid = w.child.id().unwrap();
    mock.push(Reply::tool("bash", json!({"command": "head -c 1000000000 /dev/zero | tr '\\0' 'a'; echo; echo end"})));
    mock.push(Reply::text(&["ok"]));
    w.write(json!({"type":"send","id":"flood","message":"flood"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    let mut peak = 0;
    let t = Instant::now();
    loop {
        peak = peak.max(rss_kb(pid));
        let asked = Instant::now();
        let s = w.status("st").await;
        assert!(asked.elapsed() < Duration::from_millis(500), "status took {:?}", asked.elapsed());
        if s["active"] == false {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "flood did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(peak < 100 * 1024, "RSS peaked at {peak} KiB while the tool printed 1 GB");
    let tool_msg = mock.requests()[1].body["messages"][4]["content"].as_str().unwrap().to_owned();
    assert!(tool_msg.contains("end\n") && tool_msg.contains("omitted"), "{}", &tool_msg[tool_msg.len() - 200..]);
}

#[tokio::test]
async fn a_several_megabyte_chunk_passes_through() {
    // Text that does not repeat itself (a runaway loop would be cut short).
    let mut big = String::new();
    for i in 0u64.. {
        if big.len() >= 6 * 1024 * 1024 {
            break;
        }
        big.push_str(&format!("{i} squared is {}\n", i * i));
    }
    let body = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"choices":[{"index":0,"delta":{"content": big}}]}),
        json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})
    );
    let mock = MockServer::start(vec![Reply::Raw { body }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"big"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok");
    assert_eq!(r["response"].as_str().unwrap().len(), big.len());
}

#[tokio::test]
async fn model_faults_leak_no_threads_or_sockets() {
    let script = vec![
        Reply::Hang,
        Reply::Drop { chunks: vec!["a".into()] },
        Reply::Stall { chunks: vec!["b".into()] },
        Reply::status(500, "x"),
        Reply::Raw { body: "data: garbage\n\n".into() },
        Reply::text(&["fine"]),
    ];
    let mock = MockServer::start(script).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"idle_timeout_ms": 300})).await;
    let pid = w.child.id().unwrap();
    w.write(json!({"type":"send","id":"warm","message":"x"})).await;
    w.result_for("warm").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (threads0, fds0) = (proc_count(pid, "task"), proc_count(pid, "fd"));
    for i in 0..5 {
        let id = format!("f{i}");
        w.write(json!({"type":"send","id":id,"message":"x"})).await;
        let (_, r) = w.result_for(&id).await;
        assert!(r["status"] == "error" || r["status"] == "ok", "{r}");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (threads1, fds1) = (proc_count(pid, "task"), proc_count(pid, "fd"));
    assert!(fds1 <= fds0, "fds {fds0} -> {fds1}");
    assert!(threads1 <= threads0 + 1, "threads {threads0} -> {threads1}");
}

#[tokio::test]
async fn the_workspace_changing_under_a_tool_is_a_clear_error() {
    let mock = MockServer::start(vec![]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let ws = w.workspace.path().to_path_buf();
    std::fs::create_dir_all(ws.join("d")).unwrap();
    std::fs::write(ws.join("d/f.txt"), "x").unwrap();
    std::fs::remove_dir_all(ws.join("d")).unwrap();
    std::os::unix::fs::symlink("/etc", ws.join("d")).unwrap();
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "d/f.txt"})).await;
    assert!(out.contains("outside the workspace"), "{out}");
    let out = call_tool(&mut w, &mock, "read_file", json!({"file_path": "gone.txt"})).await;
    assert!(out.contains("no such file"), "{out}");
}

#[tokio::test]
async fn a_tool_that_ignores_sigterm_and_forks_a_tree_is_killed_whole() {
    let mock = MockServer::start(vec![]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    // Timeout: the whole tree goes.
    let cmd = "trap '' TERM; (trap '' TERM; sleep 41.1) & (sleep 41.2 &); bash -c 'sleep 41.3' & sleep 41.4";
    let t = Instant::now();
    let out = call_tool(&mut w, &mock, "bash", json!({"command": cmd, "timeout_ms": 300})).await;
    assert!(out.contains("timed out after 300 ms"), "{out}");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        super::tools::processes_with("sleep 41.").is_empty(),
        "survivors: {:?}",
        super::tools::processes_with("sleep 41.")
    );
    // Cancel: the whole tree goes too.
    mock.push(Reply::tool("bash", json!({"command": cmd.replace("41.", "42.")})));
    w.write(json!({"type":"send","id":"c","message":"x"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    w.write(json!({"type":"cancel","id":"k","target_id":"c"})).await;
    let (_, r) = w.result_for("c").await;
    assert_eq!(r["error"]["code"], "cancelled");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        super::tools::processes_with("sleep 42.").is_empty(),
        "survivors: {:?}",
        super::tools::processes_with("sleep 42.")
    );
}

#[tokio::test]
async fn a_stream_that_ends_inside_an_event_is_a_retryable_error() {
    let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"whole\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par".to_owned();
    let mock = MockServer::start(vec![Reply::Raw { body }]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"x"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(events[0]["event"]["text"], "whole");
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["retryable"], true);
}
