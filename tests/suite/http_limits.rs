//! `pirn serve`'s limits and edges through a real HTTP client: a full
//! queue, duplicate send ids and the queue timeout, a streaming client that
//! leaves, a subscriber that stops reading, keepalive comments, and the
//! token, body cap, CORS and shutdown rules.

use std::time::{Duration, Instant};

use serde_json::json;

use super::http::{SseReader, call, client, daemon, new_session, post, stream_send, subscribe};
use super::mock::{MockServer, Reply};
use super::worker::pirn_command;

#[tokio::test]
async fn token_body_cap_cors_and_shutdown() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["x".into()] }]).await;
    // Off loopback without a token: refuses to start.
    let out =
        pirn_command(&mock.base_url(), &[]).args(["serve", "--bind", "0.0.0.0", "--port", "0"]).output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("token"));
    let mut d = daemon(&mock.base_url(), &["--token", "s3cret", "--allow-origin", "http://app.example"]).await;
    let c = client();
    assert_eq!(call(c.get(format!("{}/health", d.base))).await.0, 200, "health needs no token");
    let (s, e) = call(c.get(format!("{}/v1/sessions", d.base))).await;
    assert_eq!((s, e["error"].as_str()), (401, Some("UNAUTHORIZED")));
    assert_eq!(call(c.get(format!("{}/v1/sessions", d.base)).bearer_auth("wrong")).await.0, 401);
    let auth = |r: reqwest::RequestBuilder| r.bearer_auth("s3cret");
    assert_eq!(call(auth(c.get(format!("{}/v1/sessions", d.base)))).await.0, 200);
    // CORS, for the one allowed origin only.
    let origin = "http://app.example";
    let pre = c
        .request(reqwest::Method::OPTIONS, format!("{}/v1/sessions", d.base))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 204);
    assert_eq!(pre.headers()["access-control-allow-origin"], origin);
    // Header names are case-insensitive (RFC 9110 §5.1); tower-http lists them in lower case.
    assert!(
        pre.headers()["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase().contains("authorization")
    );
    let r = auth(c.get(format!("{}/v1/sessions", d.base))).header("origin", origin).send().await.unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], origin);
    // Body cap.
    let cfg = json!({"model": "m", "system_prompt": "s", "tools": []});
    let (s, b) = call(
        auth(c.post(format!("{}/v1/sessions", d.base)))
            .header("content-type", "application/json")
            .body(cfg.to_string()),
    )
    .await;
    assert_eq!(s, 201);
    let sid = b["session_id"].as_str().unwrap().to_owned();
    let huge = format!(r#"{{"message":"{}"}}"#, "a".repeat(11 * 1024 * 1024));
    let (s, e) = call(
        auth(c.post(format!("{}/v1/sessions/{sid}/sends", d.base)))
            .header("content-type", "application/json")
            .body(huge),
    )
    .await;
    assert_eq!((s, e["error"].as_str()), (413, Some("BODY_TOO_LARGE")));
    let (s, e) = call(
        auth(c.post(format!("{}/v1/sessions/{sid}/sends", d.base)))
            .header("content-type", "application/json")
            .body("{nope"),
    )
    .await;
    assert_eq!((s, e["error"].as_str()), (400, Some("BAD_REQUEST")));
    // Shutdown cancels the active send, its result reaches the stream, exit 0.
    let mut sse = SseReader::new(auth(c.get(format!("{}/v1/sessions/{sid}/events", d.base))).send().await.unwrap());
    call(
        auth(c.post(format!("{}/v1/sessions/{sid}/sends", d.base)))
            .header("content-type", "application/json")
            .body(r#"{"message":"go","send_id":"x"}"#),
    )
    .await;
    sse.next().await;
    let (s, b) = call(auth(c.post(format!("{}/shutdown", d.base)))).await;
    assert_eq!((s, b["ok"].as_bool()), (200, Some(true)));
    let r = sse.until_result("x").await;
    assert_eq!(r.last().unwrap().data["error"]["code"], "cancelled");
    let code = tokio::time::timeout(Duration::from_secs(5), d.child.wait()).await.unwrap().unwrap();
    assert_eq!(code.code(), Some(0));
}

#[tokio::test]
async fn keepalive_comments_are_sent() {
    // The interval is 15 s; this checks the frame format on a short stream by
    // reading the first bytes of a fresh subscription within the interval.
    let mock = MockServer::start(vec![]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let resp = subscribe(&c, &d.base, &sid, None).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
}

/// Every documented route answers (no 404/405 from the router) on a live
/// daemon.

#[tokio::test]
async fn a_subscriber_that_stops_reading_is_cut_off_and_can_resume() {
    // 2 KB chunks that do not repeat themselves (a runaway loop would be cut short).
    let filler = |i: u64| (0..400u64).map(|j| format!("{} ", (i * 7919 + j * j) % 100_003)).collect::<String>();
    let big: Vec<String> = (0..3000).map(|i| format!("{i:04}{}", &filler(i)[..2000])).collect();
    let mock =
        MockServer::start(vec![Reply::Text { chunks: big, usage: None, delay_ms: 0, finish_reason: None }]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let stalled = subscribe(&c, &d.base, &sid, None).await;
    let mut reader = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "flood", "send_id": "f"})).await;
    // The session is not slowed down: a reading subscriber gets everything.
    let all = reader.until_result("f").await;
    assert_eq!(all.len(), 3001);
    // The one that did not read was dropped somewhere after its buffers filled.
    let mut slow = SseReader::new(stalled);
    let mut got = Vec::new();
    while let Some(f) = slow.next().await {
        got.push(f.id.unwrap());
    }
    assert!(got.len() < 3001, "the stalled subscriber was not disconnected");
    // It resumes from where it stopped.
    let last = got.last().copied().unwrap_or(0);
    let mut resumed = SseReader::new(subscribe(&c, &d.base, &sid, Some(&last.to_string())).await);
    let rest = resumed.until_result("f").await;
    assert_eq!(rest.first().unwrap().id, Some(last + 1));
    assert_eq!(got.len() + rest.len(), 3001);
}

#[tokio::test]
async fn queue_full_duplicate_ids_and_queue_timeout() {
    let stall = || Reply::Stall { chunks: vec!["x".into()] };
    let mock = MockServer::start(vec![stall(), stall(), stall(), stall(), stall(), stall(), stall()]).await;
    let d = daemon(&mock.base_url(), &["--queue-timeout-secs", "1"]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let mut sse = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    let url = format!("{}/v1/sessions/{sid}/sends", d.base);
    assert_eq!(post(&c, &url, json!({"message": "run", "send_id": "active"})).await.0, 202);
    sse.next().await; // the active send streams
    for i in 0..5 {
        assert_eq!(post(&c, &url, json!({"message": "wait", "send_id": format!("q{i}")})).await.0, 202);
    }
    let (s, e) = post(&c, &url, json!({"message": "one too many"})).await;
    assert_eq!((s, e["error"].as_str()), (429, Some("QUEUE_FULL")));
    let (s, e) = post(&c, &url, json!({"message": "again", "send_id": "q1"})).await;
    assert_eq!((s, e["error"].as_str()), (409, Some("DUPLICATE_SEND_ID")));
    assert_eq!(call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await.1["queue_length"], 5);
    let t = Instant::now();
    let mut timed_out = Vec::new();
    while timed_out.len() < 5 {
        let f = sse.next().await.unwrap();
        if f.event == "result" {
            assert_eq!(f.data["error"]["code"], "queue_timeout", "{:?}", f.data);
            timed_out.push(f.data["id"].as_str().unwrap().to_owned());
        }
    }
    // A queue timeout of 1 s ends them all: the bound only rules out waiting
    // for the active send (it stalls until cancelled), with room for a loaded machine.
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert_eq!(timed_out, ["q0", "q1", "q2", "q3", "q4"]);
    assert_eq!(mock.requests().len(), 1, "none of the queued sends ran");
    // Cancel the active one: 202, and its cancelled result arrives on the stream.
    let (s, _) = post(&c, &format!("{}/v1/sessions/{sid}/cancel", d.base), json!({"send_id": "active"})).await;
    assert_eq!(s, 202);
    let r = sse.until_result("active").await;
    assert_eq!(r.last().unwrap().data["error"]["code"], "cancelled");
}

#[tokio::test]
async fn a_streaming_client_that_leaves_withdraws_its_queued_send() {
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["x".into()] }, Reply::text(&["never"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let mut sse = SseReader::new(subscribe(&c, &d.base, &sid, None).await);
    post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "run", "send_id": "a"})).await;
    sse.next().await;
    let resp = stream_send(&c, &d.base, &sid, r#"{"message":"later","send_id":"b"}"#).await;
    assert_eq!(resp.status(), 200);
    drop(resp);
    let r = sse.until_result("b").await;
    assert_eq!(r.last().unwrap().data["error"]["code"], "cancelled");
    assert_eq!(call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await.1["queue_length"], 0);
}
