//! `pirn serve --terminals`: muti's shell WebSocket driven byte by byte by a
//! real WebSocket client against real PTYs, and the terminals' trust rules
//! (off by default, loopback only). The console's tests are in `console.rs`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::http::{Daemon, call, client, daemon, daemon_with_env, new_session, post};
use super::mock::{MockServer, Reply};
use super::worker::{pirn_command, processes_with, until_gone};

pub type Ws = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub const WAIT: Duration = Duration::from_secs(10);

/// A daemon with terminals, its shells' HOME an empty directory (no rc
/// files of this machine's user), and one session.
pub async fn terminal_daemon(extra: &[&str]) -> (MockServer, Daemon, String, tempfile::TempDir) {
    let mock = MockServer::start(vec![Reply::text(&["unused"])]).await;
    let mut args = vec!["--terminals"];
    args.extend_from_slice(extra);
    let home = tempfile::tempdir().unwrap();
    let d = daemon_with_env(&mock.base_url(), &args, &[("HOME", home.path().to_str().unwrap())]).await;
    let sid = new_session(&client(), &d.base, json!({})).await;
    (mock, d, sid, home)
}

/// A muti shell client.
struct Shell {
    ws: Ws,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// A server frame, split.
#[derive(Debug)]
enum Got {
    Frame(u8, Vec<u8>),
    Closed(Option<CloseCode>),
}

impl Shell {
    async fn connect(base: &str, sid: &str, mode: &str) -> Shell {
        let url = format!("{}/agents/{sid}/shell?mode={mode}", base.replace("http://", "ws://"));
        let mut req = url.into_client_request().unwrap();
        req.headers_mut().insert("Sec-WebSocket-Protocol", "muti-shell".parse().unwrap());
        let (ws, resp) = tokio_tungstenite::connect_async(req).await.unwrap();
        assert_eq!(resp.headers()["sec-websocket-protocol"], "muti-shell");
        Shell { ws, stdout: Vec::new(), stderr: Vec::new() }
    }

    async fn send(&mut self, kind: u8, payload: &[u8]) {
        let mut msg = vec![kind];
        msg.extend_from_slice(payload);
        self.ws.send(Message::Binary(msg.into())).await.unwrap();
    }

    async fn meta(&mut self, meta: Value) {
        self.send(0x01, meta.to_string().as_bytes()).await;
    }

    async fn stdin(&mut self, text: &str) {
        self.send(0x03, text.as_bytes()).await;
    }

    async fn next(&mut self) -> Got {
        loop {
            let next = tokio::time::timeout(WAIT, self.ws.next()).await;
            let next = next.unwrap_or_else(|_| {
                panic!("no frame within 10 s; stdout: {:?}", String::from_utf8_lossy(&self.stdout))
            });
            match next {
                Some(Ok(Message::Binary(b))) => {
                    let (kind, payload) = (b[0], b[1..].to_vec());
                    match kind {
                        0x04 => self.stdout.extend_from_slice(&payload),
                        0x05 => self.stderr.extend_from_slice(&payload),
                        _ => {}
                    }
                    return Got::Frame(kind, payload);
                }
                Some(Ok(Message::Close(frame))) => return Got::Closed(frame.map(|f| f.code)),
                Some(Ok(_)) => {}
                None | Some(Err(_)) => return Got::Closed(None),
            }
        }
    }

    /// Reads until STDOUT contains `needle` (after what was read already).
    async fn expect_stdout(&mut self, needle: &str) {
        let from = self.stdout.len();
        while !String::from_utf8_lossy(&self.stdout[from..]).contains(needle) {
            if let Got::Closed(c) = self.next().await {
                panic!("closed ({c:?}) before {needle:?}: {:?}", String::from_utf8_lossy(&self.stdout));
            }
        }
    }

    async fn ack(&mut self) -> Value {
        match self.next().await {
            Got::Frame(0x02, p) => serde_json::from_slice(&p).unwrap(),
            other => panic!("expected ACK, got {other:?}"),
        }
    }

    /// Reads to the end: (EXIT code, ERROR messages, close code).
    async fn finish(&mut self) -> (Option<i32>, Vec<String>, Option<CloseCode>) {
        let (mut exit, mut errors) = (None, Vec::new());
        loop {
            match self.next().await {
                Got::Frame(0x08, p) => exit = Some(i32::from_be_bytes(p[..4].try_into().unwrap())),
                Got::Frame(0x09, p) => {
                    errors.push(serde_json::from_slice::<Value>(&p).unwrap()["message"].as_str().unwrap().to_owned())
                }
                Got::Frame(..) => {}
                Got::Closed(code) => return (exit, errors, code),
            }
        }
    }
}

#[tokio::test]
async fn muti_tty_echo_resize_signal_and_exit_code() {
    let (_mock, d, sid, _home) = terminal_daemon(&[]).await;
    let mut sh = Shell::connect(&d.base, &sid, "tty").await;
    sh.meta(json!({"command": "bash", "args": ["--norc", "--noprofile"], "tty": {"rows": 24, "cols": 80}})).await;
    assert_eq!(sh.ack().await, json!({"success": true, "error": ""}));
    sh.stdin("echo h''i\n").await;
    sh.expect_stdout("hi\r\n").await;
    sh.stdin("echo $TERM\n").await;
    sh.expect_stdout("xterm-256color").await;
    // RESIZE 40x100: the program sees the new size.
    sh.send(0x06, &[0, 40, 0, 100]).await;
    sh.stdin("stty size\n").await;
    sh.expect_stdout("40 100").await;
    // SIGNAL 2 reaches the foreground job at once.
    sh.stdin("echo go''ne; sleep 30\n").await;
    sh.expect_stdout("gone\r\n").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let t = Instant::now();
    sh.send(0x07, &[2]).await;
    sh.stdin("echo back$((40+2))\n").await;
    sh.expect_stdout("back42").await;
    assert!(t.elapsed() < Duration::from_secs(5), "SIGINT took {:?}", t.elapsed());
    sh.stdin("exit 3\n").await;
    let (exit, errors, close) = sh.finish().await;
    assert_eq!((exit, errors, close), (Some(3), vec![], Some(CloseCode::Normal)));
}

#[tokio::test]
async fn muti_stream_mode_keeps_stderr_apart_and_reports_signals() {
    let (_mock, d, sid, _home) = terminal_daemon(&[]).await;
    let mut sh = Shell::connect(&d.base, &sid, "stream").await;
    sh.meta(json!({"command": "bash", "args": ["-c", "read x; echo out-$x; echo err-$x >&2; exit 5"]})).await;
    sh.ack().await;
    sh.stdin("42\n").await;
    let (exit, _, close) = sh.finish().await;
    assert_eq!((exit, close), (Some(5), Some(CloseCode::Normal)));
    assert_eq!(String::from_utf8_lossy(&sh.stdout), "out-42\n");
    assert_eq!(String::from_utf8_lossy(&sh.stderr), "err-42\n");
    // A process killed by a signal exits 128 + signal.
    let mut sh = Shell::connect(&d.base, &sid, "stream").await;
    sh.meta(json!({"command": "sh", "args": ["-c", "echo ready; exec sleep 30"]})).await;
    sh.ack().await;
    sh.expect_stdout("ready").await;
    sh.send(0x07, &[15]).await;
    assert_eq!(sh.finish().await.0, Some(128 + 15));
}

#[tokio::test]
async fn muti_refusals_are_an_error_then_close_1002() {
    let (_mock, d, sid, _home) = terminal_daemon(&["--shell-password", "pw", "--shell-max-sessions", "1"]).await;
    let refused = |meta: Value, sid: String| {
        let base = d.base.clone();
        async move {
            let mut sh = Shell::connect(&base, &sid, "tty").await;
            sh.meta(meta).await;
            let (exit, errors, close) = sh.finish().await;
            assert_eq!((exit, close), (None, Some(CloseCode::Protocol)), "{errors:?}");
            errors.join("; ")
        }
    };
    let off_list = refused(json!({"command": "python3", "password": "pw"}), sid.clone()).await;
    assert!(off_list.contains("command not allowed"), "{off_list}");
    let wrong = refused(json!({"command": "bash", "password": "nope"}), sid.clone()).await;
    assert_eq!(wrong, "authentication failed");
    let outside = refused(json!({"command": "bash", "password": "pw", "work_dir": "/"}), sid.clone()).await;
    assert!(outside.contains("outside"), "{outside}");
    let nobody = refused(json!({"command": "bash", "password": "pw"}), "no-such-session".into()).await;
    assert!(nobody.contains("no session"), "{nobody}");
    // The one place is taken: the next shell is refused until it frees.
    let mut first = Shell::connect(&d.base, &sid, "tty").await;
    first.meta(json!({"command": "bash", "args": ["--norc"], "password": "pw"})).await;
    assert_eq!(first.ack().await["success"], true);
    let full = refused(json!({"command": "bash", "password": "pw"}), sid.clone()).await;
    assert!(full.contains("session limit"), "{full}");
    first.stdin("exit\n").await;
    assert_eq!(first.finish().await.0, Some(0));
    let mut again = Shell::connect(&d.base, &sid, "tty").await;
    again.meta(json!({"command": "bash", "password": "pw"})).await;
    assert_eq!(again.ack().await["success"], true);
}

#[tokio::test]
async fn no_shell_process_survives_a_closed_socket_or_a_timeout() {
    let (_mock, d, sid, _home) = terminal_daemon(&[]).await;
    let marker = format!("{}.{}", 900 + std::process::id() % 97, std::process::id());
    let mut sh = Shell::connect(&d.base, &sid, "tty").await;
    sh.meta(json!({"command": "bash", "args": ["--norc"]})).await;
    sh.ack().await;
    // Background jobs (their own process groups under job control), a
    // subshell and a foreground job.
    sh.stdin(&format!("sleep {marker}1 & (sleep {marker}2 &) ; echo st''arted; sleep {marker}3\n")).await;
    sh.expect_stdout("started").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(processes_with(&marker).len(), 3, "{:?}", processes_with(&marker));
    drop(sh);
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());

    let mut sh = Shell::connect(&d.base, &sid, "stream").await;
    sh.meta(json!({"command": "sh", "args": ["-c", format!("sleep {marker}4 & sleep {marker}5")], "timeout": 1})).await;
    sh.ack().await;
    let t = Instant::now();
    let (exit, errors, close) = sh.finish().await;
    assert_eq!((exit, close), (Some(128 + 9), Some(CloseCode::Normal)));
    assert!(errors[0].contains("timed out"), "{errors:?}");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());
}

/// A local address that is not loopback (from the kernel's table).
fn non_loopback_ipv4() -> Option<String> {
    let trie = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    let lines: Vec<&str> = trie.lines().collect();
    lines.windows(2).find_map(|w| {
        let ip = w[0].trim().strip_prefix("|-- ")?;
        (w[1].contains("/32 host LOCAL") && !ip.starts_with("127.")).then(|| ip.to_owned())
    })
}

#[tokio::test]
async fn terminals_are_off_by_default_and_loopback_only() {
    let mock = MockServer::start(vec![Reply::text(&["unused"])]).await;
    let plain = daemon(&mock.base_url(), &[]).await;
    let c = client();
    assert_eq!(call(c.get(format!("{}/api/pty", plain.base))).await.0, 404);
    assert_eq!(post(&c, &format!("{}/api/pty", plain.base), json!({})).await.0, 404);
    let sid = new_session(&c, &plain.base, json!({})).await;
    let url = format!("{}/agents/{sid}/shell", plain.base.replace("http://", "ws://"));
    assert!(tokio_tungstenite::connect_async(url).await.is_err());
    let (_, health) = call(c.get(format!("{}/api/health", plain.base))).await;
    assert_eq!(health["console"]["available"], false);

    let Some(ip) = non_loopback_ipv4() else {
        assert!(std::env::var_os("CI").is_none(), "no non-loopback address to test the 403 from");
        super::worker::skip("no non-loopback IPv4 address to test the 403 from");
        return;
    };
    for remote in [false, true] {
        let mut cmd = pirn_command(&mock.base_url(), &[]);
        cmd.args(["serve", "--bind", "0.0.0.0", "--port", "0", "--token", "tk", "--terminals"]);
        if remote {
            cmd.arg("--terminals-remote");
        }
        let dir = tempfile::tempdir().unwrap();
        let mut child = cmd.current_dir(dir.path()).stdout(Stdio::piped()).spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(WAIT, lines.next_line()).await.unwrap().unwrap().unwrap();
        let port = first.rsplit(':').next().unwrap().to_owned();
        let base = format!("http://{ip}:{port}");
        // The console: 403 with the right token, from any non-loopback peer.
        let pty = c
            .post(format!("{base}/api/pty"))
            .header("X-ACECode-Token", "tk")
            .header("content-type", "application/json")
            .body("{}");
        assert_eq!(call(pty).await.0, 403);
        assert_eq!(call(c.get(format!("{base}/api/pty")).header("X-ACECode-Token", "nope")).await.0, 401);
        let (status, body) = call(
            c.post(format!("{base}/v1/sessions"))
                .bearer_auth("tk")
                .header("content-type", "application/json")
                .body(r#"{"model":"m","system_prompt":"s","tools":[]}"#),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let sid = body["session_id"].as_str().unwrap();
        // The shell: 403 unless --terminals-remote; the token is still needed.
        let ws = |token: &str| format!("ws://{ip}:{port}/agents/{sid}/shell?token={token}");
        let err = tokio_tungstenite::connect_async(ws("nope")).await.unwrap_err().to_string();
        assert!(err.contains("401"), "{err}");
        let opened = tokio_tungstenite::connect_async(ws("tk")).await;
        if remote {
            let (mut sock, _) = opened.unwrap();
            let mut sh_meta = vec![1u8];
            sh_meta.extend_from_slice(json!({"command": "sh"}).to_string().as_bytes());
            sock.send(Message::Binary(sh_meta.into())).await.unwrap();
            let Some(Ok(Message::Binary(b))) = sock.next().await else { panic!("no ACK") };
            assert_eq!(b[0], 0x02);
        } else {
            assert!(opened.unwrap_err().to_string().contains("403"));
        }
        let _ = child.kill().await;
    }
}
