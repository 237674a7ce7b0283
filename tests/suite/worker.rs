//! Spawns the real `pirn` binary and talks JSONL to it.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Longest wait for any one line in a test.
pub const LINE_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Worker {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Option<Lines<BufReader<ChildStdout>>>,
    /// Every line read so far, in order.
    pub seen: Vec<Value>,
    pub workspace: tempfile::TempDir,
}

/// Where the spawned workers keep their session logs (one directory per
/// test run, under the system's temp dir).
pub fn test_home() -> std::path::PathBuf {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    HOME.get_or_init(|| tempfile::Builder::new().prefix("pirn-test-home").tempdir().expect("tempdir")).path().to_owned()
}

/// A command for the pirn binary with a clean environment pointing at `base_url`.
pub fn pirn_command(base_url: &str, envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pirn"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", std::env::var("HOME").unwrap_or_default())
        .env("PIRN_BASE_URL", base_url)
        .env("PIRN_HOME", test_home())
        .kill_on_drop(true);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

impl Worker {
    pub async fn spawn(base_url: &str, envs: &[(&str, &str)]) -> Worker {
        Worker::spawn_with_stderr(base_url, envs, Stdio::inherit()).await
    }

    /// As [`Worker::spawn`], with pirn's stderr going to `stderr` (a pipe
    /// nobody reads, in the logging tests).
    pub async fn spawn_with_stderr(base_url: &str, envs: &[(&str, &str)], stderr: Stdio) -> Worker {
        let workspace = tempfile::tempdir().expect("tempdir");
        let mut cmd = pirn_command(base_url, envs);
        cmd.current_dir(workspace.path()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(stderr);
        let mut child = cmd.spawn().expect("spawn pirn");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Worker { child, stdin, lines: Some(BufReader::new(stdout).lines()), seen: Vec::new(), workspace }
    }

    /// A worker from a prepared command (its stdio is set here).
    pub fn from_command(mut cmd: Command) -> Worker {
        let workspace = tempfile::tempdir().expect("tempdir");
        cmd.current_dir(workspace.path()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn pirn");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        Worker { child, stdin, lines: Some(BufReader::new(stdout).lines()), seen: Vec::new(), workspace }
    }

    /// Spawns and initialises (protocol 0.3.0, so pirn's extensions show) with
    /// all six tools; returns the worker and init_ok.
    pub async fn ready(base_url: &str, envs: &[(&str, &str)], extra: Value) -> (Worker, Value) {
        let w = Worker::spawn(base_url, envs).await;
        w.init("0.3.0", extra).await
    }

    /// Initialises a spawned worker asking for `version`, with all six tools
    /// and `extra` merged into the config; returns it and init_ok.
    pub async fn init(mut self, version: &str, extra: Value) -> (Worker, Value) {
        let w = &mut self;
        let mut config = json!({
            "model": "mock-model",
            "system_prompt": "You are a test.",
            "tools": ["read_file", "write_file", "edit_file", "glob", "grep", "bash"],
        });
        if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                c.insert(k.clone(), v.clone());
            }
        }
        w.write(json!({"type": "init", "id": "init-1", "protocol_version": version, "config": config})).await;
        let ok = w.next().await;
        assert_eq!(ok["type"], "init_ok", "{ok}");
        (self, ok)
    }

    pub async fn write(&mut self, v: Value) {
        self.write_raw(format!("{v}\n").as_bytes()).await;
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write stdin");
        stdin.flush().await.expect("flush stdin");
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Closes our end of pirn's stdout (pirn's writes then fail with EPIPE).
    pub fn drop_stdout(&mut self) {
        self.lines = None;
    }

    /// Writes a line; an error when pirn has gone away.
    pub async fn try_write(&mut self, v: Value) -> std::io::Result<()> {
        self.write_raw_checked(format!("{v}\n").as_bytes()).await
    }

    /// Writes bytes; an error when pirn has gone away.
    pub async fn write_raw_checked(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let stdin = self.stdin.as_mut().ok_or_else(|| std::io::Error::other("stdin closed"))?;
        stdin.write_all(bytes).await?;
        stdin.flush().await
    }

    /// The next line, parsed; panics after [`LINE_TIMEOUT`] or at EOF.
    pub async fn next(&mut self) -> Value {
        self.try_next(LINE_TIMEOUT).await.expect("a line from pirn")
    }

    /// The next line within `timeout`; `None` at EOF or timeout.
    pub async fn try_next(&mut self, timeout: Duration) -> Option<Value> {
        let lines = self.lines.as_mut().expect("stdout open");
        let line = tokio::time::timeout(timeout, lines.next_line()).await.ok()?.expect("read stdout")?;
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"));
        assert!(v.is_object(), "not an object: {line}");
        self.seen.push(v.clone());
        Some(v)
    }

    /// Reads until `pred` holds; returns the lines read (the matching one last).
    pub async fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut out = Vec::new();
        loop {
            let v = self.next().await;
            let done = pred(&v);
            out.push(v);
            if done {
                return out;
            }
        }
    }

    /// Reads until the result of send `id`; returns (events of that send, result).
    pub async fn result_for(&mut self, id: &str) -> (Vec<Value>, Value) {
        let lines = self.until(|v| v["type"] == "result" && v["id"] == id).await;
        let result = lines.last().cloned().expect("result");
        let events = lines.into_iter().filter(|v| v["type"] == "event" && v["send_id"] == id).collect();
        (events, result)
    }

    /// Waits for the process to exit; returns its code.
    pub async fn exit_code(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(LINE_TIMEOUT, self.child.wait()).await.expect("pirn exits").expect("wait");
        status.code()
    }

    /// Sends status and returns status_ok (skipping and keeping other lines).
    pub async fn status(&mut self, id: &str) -> Value {
        self.write(json!({"type": "status", "id": id})).await;
        let lines = self.until(|v| v["type"] == "status_ok" && v["id"] == id).await;
        lines.last().cloned().expect("status_ok")
    }
}

/// Asserts `event_seq` is 0.. gapless over `events` (all of one send).
pub fn assert_gapless(events: &[Value]) {
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["event_seq"], i as u64, "event_seq gap at {i}: {events:#?}");
    }
}

/// Names of the events, in order.
pub fn names(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["event"]["event"].as_str().unwrap_or("?").to_owned()).collect()
}

/// A mock model serving `script` and a worker initialised against it (all
/// six tools, `extra` merged into the config).
/// `config` for a worker whose model calls are only the script's: the
/// request check (on in 0.3.0) makes a reading call of its own after an
/// answer that changed nothing, and sends such an answer back once when
/// the write before it failed; off unless `config` names it (asked.rs
/// tests it).
pub fn scripted_only(mut config: Value) -> Value {
    if config.get("request_check").is_none() {
        config["request_check"] = json!(false);
    }
    config
}

pub async fn mock_worker(
    script: Vec<super::mock::Reply>,
    envs: &[(&str, &str)],
    extra: Value,
) -> (Worker, super::mock::MockServer) {
    let mock = super::mock::MockServer::start(script).await;
    let (w, _) = Worker::ready(&mock.base_url(), envs, extra).await;
    (w, mock)
}

/// The payload of the first `name` event among `events` (panics, listing
/// the names, when there is none).
pub fn event<'a>(events: &'a [Value], name: &str) -> &'a Value {
    &events.iter().find(|e| e["event"]["event"] == name).unwrap_or_else(|| panic!("no {name} in {:?}", names(events)))["event"]
}

/// Sends signal `sig` to process `pid` (a child of the test).
pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid the test spawned; no memory is involved.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// Processes whose command line contains `marker` (from `/proc`).
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(marker) {
                found.push(format!("{}: {cmd}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Waits up to 5 s for every process with `marker` to be gone; returns the
/// ones left.
pub async fn until_gone(marker: &str) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(marker);
        if left.is_empty() || std::time::Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A test counterpart that `scripts/test` provides through environment
/// variable `var` (a database URL, a package directory): its value, or
/// `None` after [`skip`] says so outside CI. In CI (`CI` set) a missing one
/// fails the test instead of skipping it.
pub fn counterpart(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{var} is not set: in CI its tests must run (scripts/test sets it)"
            );
            skip(&format!("{var} unset (scripts/test sets it)"));
            None
        }
    }
}

/// Says that the running test is skipped, and why, where a run shows it:
/// `SKIPPED: <test>: <why>` written straight to the process's stderr
/// (libtest captures `eprintln!`, not writes to the handle, so the line
/// shows next to the test's `ok`), and appended to the file named by
/// `PIRN_TEST_SKIPPED`, which `scripts/test` lists at the end. The caller
/// then returns: libtest has no "skipped" outcome.
pub fn skip(why: &str) {
    use std::io::Write;
    let thread = std::thread::current();
    let line = format!("SKIPPED: {}: {why}\n", thread.name().unwrap_or("a test"));
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("PIRN_TEST_SKIPPED")
        && let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path)
    {
        let _ = file.write_all(line.as_bytes());
    }
}
