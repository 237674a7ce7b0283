//! ACECode's console PTYs under `pirn serve --terminals`: a real WebSocket
//! client, real shells, cursors, the 2 MiB backlog and the 16-console limit.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::http::{call, client, post};
use super::terminals::{WAIT, Ws, terminal_daemon};

/// A console WebSocket client.
struct Console {
    ws: Ws,
    data: Vec<u8>,
    controls: Vec<Value>,
}

impl Console {
    async fn attach(base: &str, id: &str, cursor: Option<i64>) -> Console {
        let q = cursor.map(|c| format!("?cursor={c}")).unwrap_or_default();
        let url = format!("{}/ws/pty/{id}{q}", base.replace("http://", "ws://"));
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Console { ws, data: Vec::new(), controls: Vec::new() }
    }

    /// Reads one frame; false once closed.
    async fn read(&mut self) -> bool {
        match tokio::time::timeout(WAIT, self.ws.next()).await.expect("a frame within 10 s") {
            Some(Ok(Message::Binary(b))) if b.first() == Some(&0) => {
                self.controls.push(serde_json::from_slice(&b[1..]).unwrap());
                true
            }
            Some(Ok(Message::Binary(b))) => {
                assert!(b.len() <= 64 * 1024, "frame of {} bytes", b.len());
                self.data.extend_from_slice(&b);
                true
            }
            Some(Ok(_)) => true,
            None | Some(Err(_)) => false,
        }
    }

    /// Reads until the first `{"cursor": N}`; returns N.
    async fn synced(&mut self) -> u64 {
        loop {
            if let Some(c) = self.controls.iter().find_map(|c| c["cursor"].as_u64()) {
                return c;
            }
            assert!(self.read().await, "closed before the cursor");
        }
    }

    async fn expect(&mut self, needle: &str) {
        while !String::from_utf8_lossy(&self.data).contains(needle) {
            assert!(self.read().await, "closed before {needle:?}: {:?}", String::from_utf8_lossy(&self.data));
        }
    }

    async fn type_(&mut self, text: &str) {
        self.ws.send(Message::Text(text.into())).await.unwrap();
    }
}

#[tokio::test]
async fn console_reconnects_with_its_cursor_and_loses_nothing() {
    let (_mock, d, _, _home) = terminal_daemon(&["--console-shell", "/bin/bash"]).await;
    let c = client();
    let (status, info) = post(&c, &format!("{}/api/pty", d.base), json!({"title": "build"})).await;
    assert_eq!(status, 201, "{info}");
    let id = info["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (info["status"].as_str(), info["backend"].as_str(), info["title"].as_str()),
        (Some("running"), Some("posix"), Some("build"))
    );
    assert!(info.get("exit_code").is_none());
    let (_, health) = call(c.get(format!("{}/api/health", d.base))).await;
    assert_eq!(health["console"], json!({"available": true, "backend": "posix"}));

    let mut a = Console::attach(&d.base, &id, None).await;
    let start = a.synced().await;
    assert_eq!(start as usize, a.data.len(), "a fresh attach replays everything");
    a.type_("echo on''e\n").await;
    a.expect("one\r\n").await;
    // The data came from cursor 0, so its length is the cursor.
    let seen = a.data.len() as u64;
    // Output produced while nobody is attached.
    a.type_("sleep 0.3; echo miss''ed$((2+3))\n").await;
    drop(a);
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let mut b = Console::attach(&d.base, &id, Some(seen as i64)).await;
    let end = b.synced().await;
    let missed = b.data.clone();
    assert_eq!(missed.len() as u64, end - seen);
    assert!(String::from_utf8_lossy(&missed).contains("missed5"), "{:?}", String::from_utf8_lossy(&missed));
    // Exactly the missed bytes: what A saw plus what B got is the whole log.
    let mut whole = Console::attach(&d.base, &id, Some(0)).await;
    assert_eq!(whole.synced().await, end);
    assert!(whole.data[seen as usize..] == missed[..], "the reconnect got other bytes than the ones missed");
    // cursor=-1: no backlog, just where it ends.
    let mut tail = Console::attach(&d.base, &id, Some(-1)).await;
    assert_eq!(tail.synced().await, end);
    assert!(tail.data.is_empty());
    // Typing on any attached socket reaches the shell; all see the output.
    tail.type_("echo bo''th\n").await;
    tail.expect("both").await;
    whole.expect("both").await;

    // Resize and title.
    let url = format!("{}/api/pty/{id}", d.base);
    assert_eq!(post(&c, &format!("{url}/resize"), json!({"cols": 100, "rows": 40})).await.0, 204);
    assert_eq!(post(&c, &format!("{url}/resize"), json!({"cols": 1, "rows": 40})).await.0, 400);
    tail.type_("stty size\n").await;
    tail.expect("40 100").await;
    assert_eq!(post(&c, &format!("{url}/title"), json!({"title": "  "})).await.0, 204);
    assert_eq!(post(&c, &format!("{url}/title"), json!({"title": "tests"})).await.0, 204);
    let (_, list) = call(c.get(format!("{}/api/pty", d.base))).await;
    assert_eq!(list["backend"], "posix");
    assert_eq!(list["sessions"][0]["title"], "tests");

    // Exit: every attached socket gets the code; the console stays listed.
    tail.type_("exit 7\n").await;
    while tail.read().await {}
    assert_eq!(tail.controls.last(), Some(&json!({"exit_code": 7})));
    let (_, list) = call(c.get(format!("{}/api/pty", d.base))).await;
    assert_eq!(
        (list["sessions"][0]["status"].as_str(), list["sessions"][0]["exit_code"].as_i64()),
        (Some("exited"), Some(7))
    );
    assert_eq!(call(c.delete(&url)).await.0, 204);
    assert_eq!(call(c.delete(&url)).await.0, 404);
}

#[tokio::test]
async fn console_keeps_the_last_2_mb_and_16_sessions() {
    let (_mock, d, _, _home) = terminal_daemon(&["--console-shell", "/bin/bash"]).await;
    let c = client();
    let (_, info) = post(&c, &format!("{}/api/pty", d.base), json!({})).await;
    let id = info["id"].as_str().unwrap().to_owned();
    let mut live = Console::attach(&d.base, &id, None).await;
    live.synced().await;
    live.type_("head -c 3000000 /dev/zero | tr '\\0' x; echo; echo do''ne\n").await;
    let t = Instant::now();
    while !String::from_utf8_lossy(&live.data[live.data.len().saturating_sub(64)..]).contains("done") {
        assert!(live.read().await);
        assert!(t.elapsed() < Duration::from_secs(60));
    }
    let mut late = Console::attach(&d.base, &id, Some(5)).await;
    let end = late.synced().await;
    assert!(end >= 3_000_000, "{end}");
    assert_eq!(late.data.len(), 2 * 1024 * 1024, "an evicted cursor replays the whole buffer");
    // The live socket (attached at 0, so its length is its cursor) catches
    // up with the prompt printed after "done"; the replay is its tail.
    while (live.data.len() as u64) < end {
        assert!(live.read().await);
    }
    let tail = &live.data[end as usize - 2 * 1024 * 1024..end as usize];
    assert!(late.data == tail, "the replay differs from the last 2 MiB printed");

    // 16 consoles at most (exited or not, until deleted).
    let mut ids = vec![id];
    for _ in 1..16 {
        let (status, info) = post(&c, &format!("{}/api/pty", d.base), json!({})).await;
        assert_eq!(status, 201);
        ids.push(info["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(post(&c, &format!("{}/api/pty", d.base), json!({})).await.0, 429);
    let pids: Vec<i64> = {
        let (_, list) = call(c.get(format!("{}/api/pty", d.base))).await;
        list["sessions"].as_array().unwrap().iter().map(|s| s["pid"].as_i64().unwrap()).collect()
    };
    assert_eq!(pids.len(), 16);
    assert_eq!(call(c.delete(format!("{}/api/pty/{}", d.base, ids[3]))).await.0, 204);
    assert_eq!(post(&c, &format!("{}/api/pty", d.base), json!({"cwd": "/nonexistent"})).await.0, 400);
    assert_eq!(post(&c, &format!("{}/api/pty", d.base), json!({})).await.0, 201);
    // A daemon stop kills every shell.
    let mut d = d;
    assert_eq!(post(&c, &format!("{}/shutdown", d.base), json!({})).await.0, 200);
    tokio::time::timeout(WAIT, d.child.wait()).await.unwrap().unwrap();
    // Each shell gets up to WAIT to go (a loaded machine reaps them late).
    let running = || pids.iter().filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists()).count();
    let until = std::time::Instant::now() + WAIT;
    while running() > 0 && std::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let alive: Vec<_> = pids.iter().filter(|p| std::path::Path::new(&format!("/proc/{p}")).exists()).collect();
    assert!(alive.is_empty(), "still running: {alive:?}");
}
