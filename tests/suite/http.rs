//! `pirn serve` through a real HTTP client (reqwest), a small SSE parser and
//! a WebSocket client, against the mock model server.

use std::process::Stdio;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use super::mock::{MockServer, Reply};
use super::worker::pirn_command;

pub struct Daemon {
    pub child: Child,
    pub base: String,
    _dir: tempfile::TempDir,
}

impl Daemon {
    /// The daemon's working directory (the default workspace of its sessions).
    pub fn workspace(&self) -> &std::path::Path {
        self._dir.path()
    }
}

pub async fn daemon(model_url: &str, args: &[&str]) -> Daemon {
    daemon_with_env(model_url, args, &[]).await
}

/// As [`daemon`], with extra environment.
pub async fn daemon_with_env(model_url: &str, args: &[&str], envs: &[(&str, &str)]) -> Daemon {
    let dir = tempfile::tempdir().unwrap();
    let mut child = pirn_command(model_url, envs)
        .arg("serve")
        .args(["--port", "0"])
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    let base = first.rsplit(' ').next().unwrap().to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{first}");
    Daemon { child, base, _dir: dir }
}

pub fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// (status, JSON body or Null).
pub async fn call(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub async fn post(c: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    call(c.post(url).header("content-type", "application/json").body(body.to_string())).await
}

pub async fn new_session(c: &reqwest::Client, base: &str, extra: Value) -> String {
    let mut cfg =
        json!({"model": "mock-model", "system_prompt": "s", "tools": ["read_file", "glob", "bash", "write_file"]});
    cfg.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let (status, body) = post(c, &format!("{base}/v1/sessions"), cfg).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["protocol_version"], "0.3.0");
    body["session_id"].as_str().unwrap().to_owned()
}

/// One SSE frame.
#[derive(Debug, Clone)]
pub struct Frame {
    pub id: Option<u64>,
    pub event: String,
    pub data: Value,
}

/// Reads SSE frames off a streaming response; counts comment lines.
pub struct SseReader {
    resp: reqwest::Response,
    buf: Vec<u8>,
    pub comments: Vec<String>,
}

impl SseReader {
    pub fn new(resp: reqwest::Response) -> Self {
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        SseReader { resp, buf: Vec::new(), comments: Vec::new() }
    }

    /// The next frame within 10 s; `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Frame> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
                let text = String::from_utf8(block).unwrap();
                let (mut id, mut event, mut data) = (None, String::new(), String::new());
                for line in text.lines() {
                    if let Some(c) = line.strip_prefix(':') {
                        self.comments.push(c.to_owned());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Some(Frame { id, event, data: serde_json::from_str(&data).unwrap() });
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.resp.chunk())
                .await
                .expect("SSE frame within 10 s")
                .ok()??;
            self.buf.extend_from_slice(&chunk);
        }
    }

    /// Frames until (and including) the result of `send_id`.
    pub async fn until_result(&mut self, send_id: &str) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(f) = self.next().await {
            let done = f.event == "result" && f.data["id"] == send_id;
            out.push(f);
            if done {
                return out;
            }
        }
        panic!("stream ended before the result of {send_id}: {out:?}");
    }
}

/// `POST …/sends?stream=1` with a raw JSON body.
pub async fn stream_send(c: &reqwest::Client, base: &str, sid: &str, body: &'static str) -> reqwest::Response {
    c.post(format!("{base}/v1/sessions/{sid}/sends?stream=1"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

pub async fn subscribe(c: &reqwest::Client, base: &str, sid: &str, last: Option<&str>) -> reqwest::Response {
    let mut req = c.get(format!("{base}/v1/sessions/{sid}/events"));
    if let Some(l) = last {
        req = req.header("Last-Event-ID", l);
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn session_lifecycle_and_health() {
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let (s, h) = call(c.get(format!("{}/health", d.base))).await;
    assert_eq!(s, 200);
    assert_eq!(h["ok"], true);
    assert_eq!(h["protocol_version"], "0.3.0");
    assert_eq!(h["sessions"], 0);
    let sid = new_session(&c, &d.base, json!({})).await;
    let (s, st) = call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await;
    assert_eq!(s, 200);
    assert_eq!(
        st,
        json!({"session_id": sid, "model": "mock-model", "messages_count": 1, "active": false, "queue_length": 0})
    );
    let (_, list) = call(c.get(format!("{}/v1/sessions", d.base))).await;
    assert_eq!(list["sessions"][0]["session_id"], sid);
    assert_eq!(call(c.get(format!("{}/health", d.base))).await.1["sessions"], 1);
    let (s, _) = post(
        &c,
        &format!("{}/v1/sessions", d.base),
        json!({"protocol_version": "2.0.0", "model": "m", "system_prompt": "s", "tools": []}),
    )
    .await;
    assert_eq!(s, 400);
    let (s, e) = post(
        &c,
        &format!("{}/v1/sessions", d.base),
        json!({"protocol_version": "9.0.0", "model": "m", "system_prompt": "s", "tools": []}),
    )
    .await;
    assert_eq!((s, e["error"].as_str()), (400, Some("protocol_version_mismatch")));
    let (s, e) = post(&c, &format!("{}/v1/sessions", d.base), json!({"model": "m"})).await;
    assert_eq!((s, e["error"].as_str()), (400, Some("protocol_error")));
    assert!(e["message"].as_str().unwrap().contains("system_prompt"), "{e}");
    let (s, _) = call(c.delete(format!("{}/v1/sessions/{sid}", d.base))).await;
    assert_eq!(s, 204);
    let (s, e) = call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await;
    assert_eq!((s, e["error"].as_str()), (404, Some("NOT_FOUND")));
    assert_eq!(call(c.delete(format!("{}/v1/sessions/{sid}", d.base))).await.0, 404);
}

#[tokio::test]
async fn a_streamed_send_ends_with_its_result() {
    let mock =
        MockServer::start(vec![Reply::tool("glob", json!({"pattern": "*"})), Reply::text(&["Hello", " there"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let resp = stream_send(&c, &d.base, &sid, r#"{"message":"hi","send_id":"s1"}"#).await;
    assert_eq!(resp.status(), 200);
    let mut sse = SseReader::new(resp);
    let frames = sse.until_result("s1").await;
    let names: Vec<&str> = frames.iter().map(|f| f.event.as_str()).collect();
    assert_eq!(names, ["usage", "tool_start", "tool_end", "content_delta", "content_delta", "usage", "result"]);
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.id, Some(i as u64 + 1), "session-wide ids");
        if f.event != "result" {
            assert_eq!(f.data["event_seq"], i as u64, "the stdio line, event_seq and all");
            assert_eq!(f.data["type"], "event");
            assert_eq!(f.data["event"]["event"], f.event);
        }
    }
    assert_eq!(frames.last().unwrap().data["response"], "Hello there");
    assert!(sse.next().await.is_none(), "the stream ends after the result");
}

#[tokio::test]
async fn events_replay_after_last_event_id_and_412_once_evicted() {
    let many: Vec<String> = (0..5000).map(|i| format!("{i} ")).collect();
    let mock = MockServer::start(vec![
        Reply::text(&["a", "b", "c"]),
        Reply::Text { chunks: many, usage: None, delay_ms: 0, finish_reason: None },
    ])
    .await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    // Not persisted: the ring is all there is (tests/suite/persist.rs has
    // the replay from the log).
    let sid = new_session(&c, &d.base, json!({"persist": false})).await;
    // Two independent live subscribers.
    let mut one = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    let mut two = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    let (s, b) =
        post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "go", "send_id": "s1"})).await;
    assert_eq!((s, b["send_id"].as_str()), (202, Some("s1")));
    let a = one.until_result("s1").await;
    let b = two.until_result("s1").await;
    assert_eq!(a.len(), 5);
    assert_eq!(a.iter().map(|f| f.id).collect::<Vec<_>>(), b.iter().map(|f| f.id).collect::<Vec<_>>());
    // Resume after frame 2: frames 3.. come back.
    let mut resumed = SseReader::new(subscribe(&c, &d.base, &sid, Some("2")).await);
    let replay = resumed.until_result("s1").await;
    assert_eq!(replay.iter().map(|f| f.id.unwrap()).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(replay[0].data, a[2].data);
    assert_eq!(subscribe(&c, &d.base, &sid, Some("banana")).await.status(), 400);
    assert_eq!(subscribe(&c, &d.base, &sid, Some("-1")).await.status(), 400);
    // An id never issued is refused, not replayed (and cannot overflow).
    assert_eq!(subscribe(&c, &d.base, &sid, Some("6")).await.status(), 400);
    assert_eq!(subscribe(&c, &d.base, &sid, Some("18446744073709551615")).await.status(), 400);
    assert_eq!(subscribe(&c, &d.base, &sid, Some("5")).await.status(), 200, "the newest id is fine");
    // Push frame 1 out of the 4096-frame ring.
    post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "more", "send_id": "s2"})).await;
    one.until_result("s2").await;
    let r = subscribe(&c, &d.base, &sid, Some("1")).await;
    assert_eq!(r.status(), 412);
    let e: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    assert_eq!(e["error"], "EVICTED");
    let last = 5 + 5001;
    let mut tail = SseReader::new(subscribe(&c, &d.base, &sid, Some(&(last - 2).to_string())).await);
    assert_eq!(tail.next().await.unwrap().id, Some(last - 1));
}

#[tokio::test]
async fn permission_answers_first_reply_wins() {
    let mock =
        MockServer::start(vec![Reply::tool("bash", json!({"command": "echo approved"})), Reply::text(&["ok"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({"approval_mode": "suggest"})).await;
    let mut sse = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "go", "send_id": "s"})).await;
    let req = loop {
        let f = sse.next().await.unwrap();
        if f.event == "permission_request" {
            break f;
        }
    };
    let rid = req.data["event"]["request_id"].as_str().unwrap().to_owned();
    let url = format!("{}/v1/sessions/{sid}/permissions/{rid}", d.base);
    let (first, second) =
        tokio::join!(post(&c, &url, json!({"decision": "allow"})), post(&c, &url, json!({"decision": "deny"})));
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(statuses, [204, 409]);
    let frames = sse.until_result("s").await;
    let end = frames.iter().find(|f| f.event == "tool_end").unwrap();
    let allowed = first.0 == 204;
    assert_eq!(end.data["event"]["result_preview"].as_str().unwrap().contains("approved"), allowed);
    assert_eq!(
        post(&c, &format!("{}/v1/sessions/{sid}/permissions/perm_nope", d.base), json!({"decision": "allow"})).await.0,
        404
    );
    assert_eq!(post(&c, &url, json!({"decision": "maybe"})).await.0, 400);
}

#[tokio::test]
async fn websocket_carries_the_stdio_protocol() {
    let mock = MockServer::start(vec![Reply::text(&["over ", "ws"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let url = format!("{}/v1/sessions/{sid}/ws", d.base.replace("http://", "ws://"));
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    use tokio_tungstenite::tungstenite::Message;
    ws.send(Message::Text(json!({"type": "status", "id": "st"}).to_string().into())).await.unwrap();
    ws.send(Message::Text(json!({"type": "send", "id": "w1", "message": "hi"}).to_string().into())).await.unwrap();
    ws.send(Message::Text("not json".into())).await.unwrap();
    // The three answers arrive in any order: read until all are in.
    let mut got: Vec<Value> = Vec::new();
    let complete = |got: &[Value]| {
        got.iter().any(|v| v["type"] == "result" && v["id"] == "w1")
            && got.iter().any(|v| v["type"] == "result" && v["id"] == "unknown")
            && got.iter().any(|v| v["type"] == "status_ok")
    };
    while !complete(&got) {
        let Some(Ok(Message::Text(t))) = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.unwrap() else {
            panic!("socket closed early: {got:?}");
        };
        got.push(serde_json::from_str(&t).unwrap());
    }
    assert!(got.iter().any(|v| v["type"] == "status_ok" && v["id"] == "st"));
    assert!(
        got.iter().any(|v| v["type"] == "result" && v["id"] == "unknown" && v["error"]["code"] == "protocol_error")
    );
    let text: String = got
        .iter()
        .filter(|v| v["event"]["event"] == "content_delta")
        .map(|v| v["event"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "over ws");
    assert_eq!(got.iter().find(|v| v["id"] == "w1").unwrap()["response"], "over ws");
}

#[tokio::test]
async fn every_documented_route_is_served() {
    let mock = MockServer::start(vec![Reply::text(&["x"])]).await;
    let d = daemon(&mock.base_url(), &["--terminals"]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    for (method, path) in pirn::transport::http::ROUTES {
        let websocket = path.ends_with("/ws") || path.ends_with("/shell") || path.starts_with("/ws/");
        let stream = path.ends_with("/events") || path.ends_with("/stream");
        if *path == "/shutdown" || websocket || stream {
            continue; // covered by their own tests
        }
        let url = format!("{}{}", d.base, path.replace("{id}", &sid).replace("{request_id}", "perm_x"));
        let req = c
            .request(method.parse().unwrap(), url)
            .header("content-type", "application/json")
            .body(r#"{"send_id":"z","message":"m","decision":"allow","model":"m","system_prompt":"s","tools":[]}"#);
        let (status, body) = call(req).await;
        assert!(
            status != 405 && !(status == 404 && body["message"] == "no such route"),
            "{method} {path}: {status} {body}"
        );
    }
}
