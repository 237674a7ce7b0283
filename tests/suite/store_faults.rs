//! The session log under faults, through the binary: a disk that fills
//! mid-send (the file-size limit, which fails a write part-way as a full
//! disk does) and then frees up, and a log damaged at its end and in its
//! middle.

use std::process::Stdio;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, names, pirn_command};

/// The stored entries of a file log, every line checked to be whole JSON.
fn entries(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a partial last line was left: {:?}",
        &text[text.len().saturating_sub(80)..]
    );
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Ids of the sends whose `result` line the log holds, in log order.
fn logged_results(entries: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for e in entries {
        let lines = match e["body"]["kind"].as_str() {
            Some("line") => vec![e["body"].clone()],
            Some("lines") => e["body"]["lines"].as_array().unwrap().clone(),
            _ => continue,
        };
        for l in lines.iter().filter(|l| l["event"] == "result") {
            out.push(l["send_id"].as_str().unwrap().to_owned());
        }
    }
    out
}

fn set_file_size_limit(pid: u32, bytes: u64) {
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: prlimit on a child of this test, with a valid rlimit.
    let rc = unsafe { libc::prlimit(pid as i32, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

#[tokio::test]
async fn a_full_disk_makes_results_say_not_durable_and_the_log_catches_up_when_it_frees() {
    let home = tempfile::tempdir().unwrap();
    let long: Vec<String> = (0..400).map(|i| format!("word {i:03} of a long answer that fills the disk. ")).collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    let mock =
        MockServer::start(vec![Reply::text(&["short first answer"]), Reply::text(&long), Reply::text(&["ok"])]).await;
    let mut cmd = pirn_command(&mock.base_url(), &[("PIRN_HOME", home.path().to_str().unwrap())]);
    // SAFETY: async-signal-safe calls only (signal, setrlimit) between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Writes past the limit fail with EFBIG (part-way, like ENOSPC)
            // instead of killing the process; SIG_IGN survives exec.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit { rlim_cur: 64 * 1024, rlim_max: libc::RLIM_INFINITY };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let (mut w, ok) = Worker::from_command(cmd).init("0.3.0", json!({"answer_checks": false})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    let log = home.path().join("sessions").join("default").join(format!("{sid}.jsonl"));
    w.write(json!({"type":"send","id":"a","message":"hello"})).await;
    let (_, r) = w.result_for("a").await;
    assert!(r.get("durable").is_none(), "written in full: {r}");
    assert_eq!(w.status("st0").await["store"], "ok");

    w.write(json!({"type":"send","id":"b","message":"write a lot"})).await;
    let (events, r) = w.result_for("b").await;
    assert_eq!(r["status"], "ok", "the send itself is fine: {r}");
    assert_eq!(r["durable"], false, "{r}");
    assert_eq!(names(&events).last().map(String::as_str), Some("store_error"), "{:?}", names(&events));
    let said = events.last().unwrap()["event"]["message"].as_str().unwrap().to_owned();
    assert!(said.contains("File too large") || said.contains("os error 27"), "{said}");
    assert_eq!(w.status("st1").await["store"], "degraded");
    let before = entries(&log);
    assert!(!logged_results(&before).contains(&"b".to_owned()));

    // Space again: the next send's entries go in after what was missed.
    set_file_size_limit(w.child.id().unwrap(), libc::RLIM_INFINITY);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    w.write(json!({"type":"send","id":"c","message":"and now?"})).await;
    let (_, r) = w.result_for("c").await;
    assert!(r.get("durable").is_none(), "{r}");
    assert_eq!(w.status("st2").await["store"], "ok");
    let after = entries(&log);
    assert_eq!(logged_results(&after), ["a", "b", "c"], "in order, nothing silently missing");
    let seqs: Vec<u64> = after.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|p| p[1] == p[0] + 1), "{seqs:?}");

    // The session resumes from that log, whole.
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    let envs = [("PIRN_HOME", home.path().to_str().unwrap())];
    let (mut w, _) = Worker::ready(&mock.base_url(), &envs, json!({"resume_session_id": sid})).await;
    assert_eq!(w.status("st").await["messages_count"], 8, "system prompt, listing note and three turns");
}

#[tokio::test]
async fn a_torn_tail_is_cut_and_damage_in_the_middle_is_named_by_line() {
    let home = tempfile::tempdir().unwrap();
    let envs = [("PIRN_HOME", home.path().to_str().unwrap())];
    let mock = MockServer::start(vec![Reply::text(&["one"]), Reply::text(&["two"])]).await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &envs, json!({})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type":"send","id":"a","message":"first"})).await;
    w.result_for("a").await;
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    let log = home.path().join("sessions").join("default").join(format!("{sid}.jsonl"));
    let whole = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, format!("{whole}{{\"seq\":99,\"writer\":\"x\",\"n\":")).unwrap();
    let (mut w, _) = Worker::ready(&mock.base_url(), &envs, json!({"resume_session_id": sid})).await;
    w.write(json!({"type":"send","id":"b","message":"second"})).await;
    assert_eq!(w.result_for("b").await.1["status"], "ok");
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.starts_with(&whole) && !text.contains("\"seq\":99"), "the torn tail was cut, the rest kept");
    entries(&log);

    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(2, "{not an entry");
    std::fs::write(&log, lines.join("\n") + "\n").unwrap();
    let out = pirn_command(&mock.base_url(), &envs)
        .args(["sessions", "show", &sid])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("line 3") && err.contains(&format!("{sid}.jsonl")), "{err}");
}

/// A private Postgres cluster (not the suite's shared one, which other
/// tests use while this one stops it): `(dir, url)`.
async fn own_cluster() -> Option<(tempfile::TempDir, String)> {
    super::store::postgres_url()?;
    let dir = tempfile::tempdir().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postgres");
    let out = tokio::process::Command::new(&script).arg("start").arg(dir.path().join("pg")).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some((dir, String::from_utf8(out.stdout).unwrap().trim().to_owned()))
}

/// Sends `sig` to the cluster's postmaster and every backend.
fn signal_cluster(dir: &std::path::Path, sig: i32) {
    let pid_file = std::fs::read_to_string(dir.join("pg/data/postmaster.pid")).unwrap();
    let postmaster: i32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
    let children =
        std::fs::read_to_string(format!("/proc/{postmaster}/task/{postmaster}/children")).unwrap_or_default();
    for pid in std::iter::once(postmaster).chain(children.split_whitespace().filter_map(|p| p.parse().ok())) {
        // SAFETY: kill(2) on the cluster's own processes.
        unsafe { libc::kill(pid, sig) };
    }
}

#[tokio::test]
async fn sigterm_ends_the_worker_within_15_s_with_postgres_stopped_mid_send() {
    let Some((dir, url)) = own_cluster().await else { return };
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["thinking".into()] }]).await;
    let envs = [("PIRN_STORE", url.as_str())];
    let (mut w, _) = Worker::ready(&mock.base_url(), &envs, json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "content_delta").await;
    signal_cluster(dir.path(), libc::SIGSTOP);
    let started = std::time::Instant::now();
    super::worker::signal(w.child.id().unwrap(), libc::SIGTERM);
    let (events, r) = w.result_for("s").await;
    let code = w.exit_code().await;
    let took = started.elapsed();
    signal_cluster(dir.path(), libc::SIGCONT);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postgres");
    let _ = tokio::process::Command::new(&script).arg("stop").arg(dir.path().join("pg")).output().await;
    assert!(took < std::time::Duration::from_secs(15), "SIGTERM took {took:?}");
    assert_eq!(code, Some(0));
    assert_eq!(r["error"]["code"], "cancelled", "{r}");
    assert_eq!(r["durable"], false, "the stalled store never took it: {r}");
    assert_eq!(names(&events).last().map(String::as_str), Some("store_error"));
}

#[tokio::test]
async fn postgres_stopped_mid_session_then_back_loses_nothing() {
    let Some((dir, url)) = own_cluster().await else { return };
    let pg = |cmd: &'static str| {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postgres");
        let arg = dir.path().join("pg");
        async move {
            let out = tokio::process::Command::new(&script).arg(cmd).arg(arg).output().await.unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
    };
    let mock = MockServer::start(vec![Reply::text(&["one"]), Reply::text(&["two"]), Reply::text(&["three"])]).await;
    let envs = [("PIRN_STORE", url.as_str())];
    let (mut w, ok) = Worker::ready(&mock.base_url(), &envs, json!({})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type":"send","id":"a","message":"first"})).await;
    assert!(w.result_for("a").await.1.get("durable").is_none());
    pg("stop").await;
    w.write(json!({"type":"send","id":"b","message":"second"})).await;
    let (events, r) = w.result_for("b").await;
    assert_eq!((r["status"].as_str(), r["durable"].as_bool()), (Some("ok"), Some(false)), "{r}");
    assert_eq!(names(&events).last().map(String::as_str), Some("store_error"));
    assert_eq!(w.status("st").await["store"], "degraded");
    pg("restart").await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    w.write(json!({"type":"send","id":"c","message":"third"})).await;
    let (_, r) = w.result_for("c").await;
    assert!(r.get("durable").is_none(), "{r}");
    assert_eq!(w.status("st2").await["store"], "ok");
    w.write(json!({"type":"shutdown","id":"bye"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    // The log, read back through pirn, holds all three results in order.
    let out = super::worker::pirn_command(&mock.base_url(), &envs)
        .args(["sessions", "export", &sid])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stored: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(logged_results(&stored), ["a", "b", "c"]);
    pg("stop").await;
}

#[tokio::test]
async fn fifty_thousand_deltas_with_postgres_stalled_stay_under_200_mb() {
    let Some((dir, url)) = own_cluster().await else { return };
    let chunks: Vec<String> = (0..50_000).map(|i| format!("delta {i:05} of a long answer; ")).collect();
    let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let mock = MockServer::start(vec![Reply::text(&["warm"]), Reply::text(&chunks)]).await;
    let envs = [("PIRN_STORE", url.as_str())];
    let (mut w, _) = Worker::ready(&mock.base_url(), &envs, json!({"answer_checks": false})).await;
    w.write(json!({"type":"send","id":"a","message":"warm up"})).await;
    w.result_for("a").await;
    signal_cluster(dir.path(), libc::SIGSTOP);
    w.write(json!({"type":"send","id":"b","message":"talk a lot"})).await;
    let (events, r) = w.result_for("b").await;
    let pid = w.child.id().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    signal_cluster(dir.path(), libc::SIGCONT);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postgres");
    let _ = tokio::process::Command::new(&script).arg("stop").arg(dir.path().join("pg")).output().await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["durable"], false);
    assert!(events.len() > 50_000, "every delta reached the client: {}", events.len());
    eprintln!("peak RSS with Postgres stalled: {peak_kb} KiB");
    assert!(peak_kb < 200 * 1024, "peak RSS {peak_kb} KiB");
}
