//! Two `pirn serve` hosts on one Postgres: a session created on A is
//! followed live from B (LISTEN/NOTIFY), A is SIGKILLed mid-send, a client
//! reconnects to B with `Last-Event-ID` and gets the replay from the store,
//! and B resumes the session and takes the next send (A's send reported
//! interrupted).

use serde_json::{Value, json};

use super::http::{SseReader, call, client, daemon_with_env, post};
use super::mock::{MockServer, Reply};
use super::store::{postgres_url, tenant};

#[tokio::test]
async fn a_session_fails_over_from_a_killed_host_to_another() {
    let Some(url) = postgres_url() else { return };
    let tenant = tenant();
    let env = [("PIRN_STORE", url.as_str()), ("PIRN_TENANT", tenant.as_str())];
    let mock = MockServer::start(vec![
        Reply::text(&["one"]),
        Reply::Stall { chunks: vec!["partial ".into(), "answer".into()] },
        Reply::text(&["after failover"]),
    ])
    .await;
    let mut a = daemon_with_env(&mock.base_url(), &[], &env).await;
    let b = daemon_with_env(&mock.base_url(), &[], &env).await;
    let c = client();
    let cfg = json!({"model": "mock-model", "system_prompt": "s", "tools": []});
    let (s, body) = post(&c, &format!("{}/v1/sessions", a.base), cfg).await;
    assert_eq!(s, 201, "{body}");
    let sid = body["session_id"].as_str().unwrap().to_owned();
    let on = |host: &str, path: &str| format!("{host}/v1/sessions/{sid}{path}");

    // B follows A's session through the store.
    let mut watcher = SseReader::new(c.get(on(&b.base, "/events")).send().await.unwrap());
    post(&c, &on(&a.base, "/sends"), json!({"message": "first", "send_id": "s1"})).await;
    let s1 = watcher.until_result("s1").await;
    let s1_result = s1.last().unwrap().id.unwrap();
    post(&c, &on(&a.base, "/sends"), json!({"message": "second", "send_id": "s2"})).await;
    let mut seen = String::new();
    while seen != "partial answer" {
        let f = watcher.next().await.expect("B streams A's running send");
        assert_eq!(f.data["send_id"], "s2", "{f:?}");
        seen.push_str(f.data["event"]["text"].as_str().unwrap_or(""));
    }
    a.child.kill().await.unwrap();

    // A reconnecting client gets the frames after the last one it saw, from the store.
    let resp = c.get(on(&b.base, "/events")).header("Last-Event-ID", s1_result.to_string()).send().await.unwrap();
    let mut back = SseReader::new(resp);
    let first = back.next().await.unwrap();
    assert_eq!((first.id, first.data["send_id"].as_str()), (Some(s1_result + 1), Some("s2")));

    let (_, list) = call(c.get(format!("{}/v1/sessions", b.base))).await;
    let listed: Vec<&Value> =
        list["sessions"].as_array().unwrap().iter().filter(|s| s["session_id"] == sid.as_str()).collect();
    assert_eq!((listed.len(), listed[0]["title"].as_str()), (1, Some("first")), "{list}");

    let (s, body) = post(&c, &format!("{}/v1/sessions", b.base), json!({"resume": sid})).await;
    assert_eq!(s, 201, "{body}");
    let (_, st) = call(c.get(on(&b.base, ""))).await;
    assert_eq!(st["interrupted"], json!(["s2"]), "{st}");
    post(&c, &on(&b.base, "/sends"), json!({"message": "third", "send_id": "s3"})).await;
    let s3 = back.until_result("s3").await;
    let result = s3.last().unwrap();
    assert_eq!(result.data["response"], "after failover");
    assert!(s3.iter().filter(|f| f.data["send_id"] == "s3").all(|f| f.id.unwrap() > s1_result + 2));
    let third = &mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).nth(2).unwrap().body;
    let texts: Vec<String> =
        third["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap_or("").to_owned()).collect();
    // [0] system prompt, [1] the 0.3.0 workspace-listing note, then the turns.
    assert!(texts[1].starts_with("[pirn] The workspace is"), "{texts:?}");
    assert_eq!(texts[2..4], ["first".to_owned(), "one".to_owned()], "{texts:?}");
    assert_eq!(texts[4], "second");
    assert!(texts[5].starts_with("[pirn] The previous request was interrupted"), "{texts:?}");
    assert_eq!(texts.last().unwrap(), "third");
    // The watcher on B saw B's send too.
    assert_eq!(watcher.until_result("s3").await.last().unwrap().data["response"], "after failover");
}
