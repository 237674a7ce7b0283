//! Three `pirn serve` hosts in one group on the throwaway Postgres
//! (`--advertise-url`, `--lease-secs`): any host serves any session;
//! a killed or paused owner is taken over after its lease; a paused owner
//! that wakes up cannot write into the session it lost; one send at a
//! time across the group.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::http::{Daemon, SseReader, call, client, daemon_with_env, post};
use super::mock::{MockServer, Reply};
use super::store::{postgres_url, tenant};

const LEASE_SECS: u64 = 2;

/// A group host on the store `env` names.
async fn host(mock: &MockServer, env: &[(&str, &str)]) -> Daemon {
    let lease = LEASE_SECS.to_string();
    let args = ["--advertise-url", "http://127.0.0.1:0", "--lease-secs", &lease, "--max-queue", "32"];
    daemon_with_env(&mock.base_url(), &args, env).await
}

/// A new session on `base`.
async fn session(c: &reqwest::Client, base: &str) -> String {
    let cfg = json!({"model": "mock-model", "system_prompt": "s", "tools": []});
    let (s, body) = post(c, &format!("{base}/v1/sessions"), cfg).await;
    assert_eq!(s, 201, "{body}");
    body["session_id"].as_str().unwrap().to_owned()
}

/// The session's log as the database holds it: `(seq, writer, kind)`.
async fn rows(url: &str, tenant: &str, sid: &str) -> Vec<(i64, String, String)> {
    let (db, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let rows = db
        .query(
            "SELECT seq, writer, kind FROM pirn_entries WHERE tenant = $1 AND session_id = $2 ORDER BY seq",
            &[&tenant, &sid],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()
}

/// Sends `sig` to the daemon `d` (pausing and waking an owner).
fn signal(d: &Daemon, sig: libc::c_int) {
    let pid = d.child.id().unwrap() as i32;
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(pid, sig) };
}

/// The user messages of the model's last request.
fn last_user_messages(mock: &MockServer) -> Vec<String> {
    let last = mock.requests().last().unwrap().body.clone();
    last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or("").to_owned())
        // Not pirn's workspace listing, which opens a 0.3.0 session.
        .filter(|t| !t.starts_with("[pirn] The workspace is"))
        .collect()
}

#[tokio::test]
async fn any_host_serves_any_session() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let replies = vec![Reply::text(&["one"]), Reply::text(&["two"]), Reply::text(&["three"]), Reply::text(&["four"])];
    let mock = MockServer::start(replies).await;
    let (a, b, c3) = (host(&mock, &env).await, host(&mock, &env).await, host(&mock, &env).await);
    let c = client();
    let sid = session(&c, &a.base).await;
    let on = |base: &str, path: &str| format!("{base}/v1/sessions/{sid}{path}");

    // C follows the session's live stream while A runs it.
    let mut follow = SseReader::new(c.get(on(&c3.base, "/events")).send().await.unwrap());
    for (i, (base, message)) in [(&b.base, "first"), (&c3.base, "second"), (&a.base, "third")].into_iter().enumerate() {
        let send_id = format!("s{i}");
        let (s, body) = post(&c, &on(base, "/sends"), json!({"message": message, "send_id": send_id})).await;
        assert_eq!((s, body["send_id"].as_str()), (202, Some(send_id.as_str())), "{body}");
        let frames = follow.until_result(&send_id).await;
        let result = &frames.last().unwrap().data;
        assert_eq!(result["status"], "ok", "{result}");
    }
    assert_eq!(last_user_messages(&mock), ["first", "second", "third"], "the conversation is intact");

    // The session's WebSocket through B: the upgrade and the frames cross to A.
    let ws_url = on(&b.base, "/ws").replace("http://", "ws://");
    let (mut ws, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    ws.send(Message::Text(json!({"type": "send", "id": "w4", "message": "fourth"}).to_string().into())).await.unwrap();
    let result = loop {
        let msg = tokio::time::timeout(Duration::from_secs(10), ws.next()).await.expect("a frame within 10 s");
        let Some(Ok(Message::Text(t))) = msg else { panic!("{msg:?}") };
        let v: Value = serde_json::from_str(&t).unwrap();
        if v["type"] == "result" {
            break v;
        }
    };
    assert_eq!((&result["id"], &result["response"]), (&json!("w4"), &json!("four")), "{result}");
    follow.until_result("w4").await;

    // Status through a host that does not run it; the owner says so on /health.
    let (s, st) = call(c.get(on(&b.base, ""))).await;
    assert_eq!((s, st["messages_count"].as_u64()), (200, Some(10)), "{st} (with the listing note)");
    let (_, health) = call(c.get(format!("{}/health", a.base))).await;
    assert_eq!(health["sessions_owned"], 1, "{health}");
    assert_eq!(health["advertise_url"].as_str(), Some(a.base.as_str()));
    let (_, hosts) = call(c.get(format!("{}/v1/hosts", c3.base))).await;
    let alive = hosts["hosts"].as_array().unwrap().iter().filter(|h| h["alive"] == true).count();
    assert_eq!(alive, 3, "{hosts}");
    let lease = hosts["leases"].as_array().unwrap().iter().find(|l| l["session_id"] == sid.as_str()).unwrap();
    assert_eq!((lease["owner"].as_str(), lease["live"].as_bool()), (health["host_id"].as_str(), Some(true)));
    // Sessions created on each host: listed by all.
    let (_, list) = call(c.get(format!("{}/v1/sessions", b.base))).await;
    assert!(list["sessions"].as_array().unwrap().iter().any(|s| s["session_id"] == sid.as_str()), "{list}");
}

#[tokio::test]
async fn a_killed_owner_is_taken_over_within_its_lease() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let mock = MockServer::start(vec![
        Reply::text(&["before"]),
        Reply::Stall { chunks: vec!["half an ".into(), "answer".into()] },
        Reply::text(&["after the takeover"]),
    ])
    .await;
    let (mut a, b) = (host(&mock, &env).await, host(&mock, &env).await);
    let c = client();
    let sid = session(&c, &a.base).await;
    let on = |base: &str, path: &str| format!("{base}/v1/sessions/{sid}{path}");
    let mut watch = SseReader::new(c.get(on(&b.base, "/events")).send().await.unwrap());
    post(&c, &on(&b.base, "/sends"), json!({"message": "one", "send_id": "s1"})).await;
    watch.until_result("s1").await;
    post(&c, &on(&b.base, "/sends"), json!({"message": "two", "send_id": "s2"})).await;
    while watch.next().await.unwrap().data["event"]["text"] != "answer" {}
    a.child.kill().await.unwrap();

    let killed = Instant::now();
    let (s, body) = post(&c, &on(&b.base, "/sends"), json!({"message": "three", "send_id": "s3"})).await;
    let took = killed.elapsed();
    assert_eq!(s, 202, "{body}");
    assert!(took < Duration::from_secs(LEASE_SECS + 5), "taken over after {took:?}");
    let (_, st) = call(c.get(on(&b.base, ""))).await;
    assert_eq!(st["interrupted"], json!(["s2"]), "the send running on A is reported interrupted: {st}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, h) = call(c.get(on(&b.base, "/messages?since=0"))).await;
        let result =
            h["events"].as_array().unwrap().iter().find(|e| e["event"] == "result" && e["data"]["id"] == "s3").cloned();
        if let Some(r) = result {
            assert_eq!(r["data"]["response"], "after the takeover", "{r}");
            break;
        }
        assert!(Instant::now() < deadline, "no result for s3: {h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The conversation went on from the log, told of the interrupted send
    // (as every resume tells it).
    let users = last_user_messages(&mock);
    assert_eq!(
        (users.len(), &users[..2], &users[3]),
        (4, &["one".to_owned(), "two".to_owned()][..], &"three".to_owned())
    );
    assert!(users[2].contains("interrupted") && users[2].contains("\"two\""), "{users:?}");
    let (_, health) = call(c.get(format!("{}/health", b.base))).await;
    assert_eq!(health["sessions_owned"], 1, "{health}");
}

#[tokio::test]
async fn a_paused_owner_loses_the_session_and_cannot_write_into_it() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let mock = MockServer::start(vec![
        Reply::Stall { chunks: vec!["stalled ".into(), "on A".into()] },
        Reply::text(&["on B"]),
    ])
    .await;
    let (a, b) = (host(&mock, &env).await, host(&mock, &env).await);
    let c = client();
    let sid = session(&c, &a.base).await;
    let on = |base: &str, path: &str| format!("{base}/v1/sessions/{sid}{path}");
    let mut watch = SseReader::new(c.get(on(&b.base, "/events")).send().await.unwrap());
    post(&c, &on(&a.base, "/sends"), json!({"message": "one", "send_id": "s1"})).await;
    while watch.next().await.unwrap().data["event"]["text"] != "on A" {}
    signal(&a, libc::SIGSTOP);

    let (s, body) = post(&c, &on(&b.base, "/sends"), json!({"message": "two", "send_id": "s2"})).await;
    assert_eq!(s, 202, "{body}");
    let frames = watch.until_result("s2").await;
    assert_eq!(frames.last().unwrap().data["response"], "on B");
    let taken = rows(&url, &tenant, &sid).await;

    // A wakes up: its renewal finds the session gone; it closes its copy
    // (cancelling s1) and whatever it appends is refused.
    signal(&a, libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(LEASE_SECS + 5);
    loop {
        let (_, health) = call(c.get(format!("{}/health", a.base))).await;
        if health["sessions_owned"] == 0 {
            break;
        }
        assert!(Instant::now() < deadline, "A still runs the session: {health}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = rows(&url, &tenant, &sid).await;
    let seqs: Vec<i64> = after.iter().map(|r| r.0).collect();
    assert_eq!(seqs, (1..=after.len() as i64).collect::<Vec<_>>(), "gap-free, strictly increasing, no duplicates");
    assert_eq!(after, taken, "nothing was stored after B took over but by B: {after:?}");
    // The send B forwarded to A while A was stopped (it sat in A's socket)
    // did not run on A once A woke: two model calls, s1 on A and s2 on B.
    assert_eq!(mock.requests().len(), 2, "a send ran twice");
    let b_writer = &taken.last().unwrap().1;
    let first_b = taken.iter().position(|r| &r.1 == b_writer).unwrap();
    assert!(taken[first_b..].iter().all(|r| &r.1 == b_writer), "A's entries after B's: {taken:?}");
}

#[tokio::test]
async fn concurrent_sends_over_three_hosts_run_one_at_a_time() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let replies: Vec<Reply> = (0..20)
        .map(|i| Reply::Text {
            chunks: vec![format!("answer {i} "), "done".into()],
            usage: None,
            delay_ms: 20,
            finish_reason: None,
        })
        .collect();
    let mock = MockServer::start(replies).await;
    let hosts = [host(&mock, &env).await, host(&mock, &env).await, host(&mock, &env).await];
    let c = client();
    let sid = session(&c, &hosts[0].base).await;
    let mut watch = SseReader::new(c.get(format!("{}/v1/sessions/{sid}/events", hosts[1].base)).send().await.unwrap());
    let sends = (0..20).map(|i| {
        let (c, url) = (c.clone(), format!("{}/v1/sessions/{sid}/sends", hosts[i % 3].base));
        async move { post(&c, &url, json!({"message": format!("m{i}"), "send_id": format!("s{i}")})).await }
    });
    for (s, body) in futures_util::future::join_all(sends).await {
        assert_eq!(s, 202, "{body}");
    }
    // Every frame of a send lies between its first and its result, with
    // no other send's frame in between: one at a time.
    let mut running: Option<String> = None;
    let mut results = Vec::new();
    while results.len() < 20 {
        let f = watch.next().await.expect("frames of 20 sends");
        let id = f.data["send_id"].as_str().or(f.data["id"].as_str()).unwrap().to_owned();
        match &running {
            Some(r) => assert_eq!(r, &id, "a frame of {id} while {r} runs"),
            None => running = Some(id.clone()),
        }
        if f.event == "result" {
            assert_eq!(f.data["status"], "ok", "{:?}", f.data);
            results.push(id);
            running = None;
        }
    }
    results.sort();
    results.dedup();
    assert_eq!(results.len(), 20, "each send has exactly one result");
    let total: Value = call(c.get(format!("{}/v1/sessions/{sid}", hosts[2].base))).await.1;
    assert_eq!(total["messages_count"], 42, "{total} (with the listing note)");
}

/// A group needs the shared Postgres store and a plain-HTTP URL: anything
/// else refuses to start (exit 2) and says why.
#[tokio::test]
async fn a_group_host_without_postgres_or_with_a_bad_url_refuses_to_start() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    for (url, store, why) in [
        ("http://127.0.0.1:0", "", "needs a shared Postgres store"),
        ("https://10.0.0.5:3923", "postgres://nobody@127.0.0.1:9/none", "expected http://HOST:PORT"),
    ] {
        let mut envs = vec![("PIRN_HOME", home)];
        if !store.is_empty() {
            envs.push(("PIRN_STORE", store));
        }
        let out = super::worker::pirn_command("http://127.0.0.1:9/v1", &envs)
            .args(["serve", "--port", "0", "--advertise-url", url])
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {stderr}");
        assert!(stderr.contains(why), "{url}: {stderr}");
    }
}

/// A send forwarded to an owner that is stopped waits in the owner's
/// socket while another host takes the session over and runs it; when the
/// old owner wakes it must not run that send again.
#[tokio::test]
async fn a_woken_owner_does_not_run_a_send_that_was_taken_over() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let mock = MockServer::start(vec![Reply::text(&["on A"]), Reply::text(&["on B"]), Reply::text(&["twice"])]).await;
    let (a, b) = (host(&mock, &env).await, host(&mock, &env).await);
    let c = client();
    let sid = session(&c, &a.base).await;
    let on = |base: &str, path: &str| format!("{base}/v1/sessions/{sid}{path}");
    let mut watch = SseReader::new(c.get(on(&b.base, "/events")).send().await.unwrap());
    post(&c, &on(&a.base, "/sends"), json!({"message": "one", "send_id": "s1"})).await;
    watch.until_result("s1").await;
    signal(&a, libc::SIGSTOP);
    let (s, body) = post(&c, &on(&b.base, "/sends"), json!({"message": "two", "send_id": "s2"})).await;
    assert_eq!(s, 202, "{body}");
    assert_eq!(watch.until_result("s2").await.last().unwrap().data["response"], "on B");
    signal(&a, libc::SIGCONT);
    let deadline = Instant::now() + Duration::from_secs(LEASE_SECS + 5);
    while call(c.get(format!("{}/health", a.base))).await.1["sessions_owned"] != 0 {
        assert!(Instant::now() < deadline, "A still runs the session");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(mock.requests().len(), 2, "s2 ran on B only");
    // A request to A now goes to B, which runs the session.
    let (s, body) = post(&c, &on(&a.base, "/sends"), json!({"message": "three", "send_id": "s3"})).await;
    assert_eq!(s, 202, "{body}");
    assert_eq!(watch.until_result("s3").await.last().unwrap().data["response"], "twice");
}

/// What a peer forwards is only what its own guard admitted: no token, a
/// foreign Origin or a forged forwarding header gets nothing run and moves
/// nothing; the group's routes need the token like every other.
#[tokio::test]
async fn forwarding_is_no_way_around_the_token_origin_or_lease() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let mock = MockServer::start(vec![Reply::text(&["should not run"])]).await;
    let lease = LEASE_SECS.to_string();
    let args = ["--advertise-url", "http://127.0.0.1:0", "--lease-secs", &lease, "--token", "group-secret"];
    let (a, b) =
        (daemon_with_env(&mock.base_url(), &args, &env).await, daemon_with_env(&mock.base_url(), &args, &env).await);
    let c = client();
    let auth = "Bearer group-secret";
    let cfg = json!({"model": "mock-model", "system_prompt": "s", "tools": []});
    let created = c
        .post(format!("{}/v1/sessions", a.base))
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(cfg.to_string());
    let (s, body) = call(created).await;
    assert_eq!(s, 201, "{body}");
    let sid = body["session_id"].as_str().unwrap().to_owned();
    let send = |extra: &[(&str, &str)]| {
        let mut r = c
            .post(format!("{}/v1/sessions/{sid}/sends", b.base))
            .header("content-type", "application/json")
            .body(json!({"message": "m", "send_id": "x"}).to_string());
        for (k, v) in extra {
            r = r.header(*k, *v);
        }
        r
    };
    assert_eq!(call(send(&[])).await.0, 401, "no token: not forwarded");
    let (s, body) = call(send(&[("authorization", auth), ("origin", "http://evil.example")])).await;
    assert_eq!((s, body["error"].as_str()), (403, Some("FORBIDDEN_ORIGIN")), "{body}");
    let (s, body) = call(send(&[("authorization", auth), ("x-pirn-forwarded-by", "forged")])).await;
    assert_eq!(
        (s, body["error"].as_str()),
        (409, Some("SESSION_OWNED")),
        "a forged header takes no live lease: {body}"
    );
    assert!(mock.requests().is_empty(), "nothing ran");
    for path in ["/v1/hosts", "/openapi.json"] {
        assert_eq!(call(c.get(format!("{}{path}", b.base))).await.0, 401, "{path}");
    }
    let (_, hosts) = call(c.get(format!("{}/v1/hosts", b.base)).header("authorization", auth)).await;
    let (_, health) = call(c.get(format!("{}/health", a.base))).await;
    let lease = hosts["leases"].as_array().unwrap().iter().find(|l| l["session_id"] == sid.as_str()).unwrap().clone();
    assert_eq!(lease["owner"], health["host_id"], "A still holds the session: {hosts}");
}
