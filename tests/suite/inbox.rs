//! The webhook inbox (stringd's local webhook) through the binary: tokens,
//! limits, the inbox, `deliver: send`, and the events stream.

use std::time::Duration;

use serde_json::{Value, json};

use super::http::{SseReader, call, client, daemon, new_session, post};
use super::mock::{MockServer, Reply};

#[tokio::test]
async fn webhook_tokens_limits_inbox_and_ack() {
    let mock = MockServer::start(vec![Reply::text(&["unused"])]).await;
    let d = daemon(&mock.base_url(), &["--token", "tk"]).await;
    let c = client();
    let auth = |r: reqwest::RequestBuilder| r.bearer_auth("tk");
    let (status, created) = call(
        auth(c.post(format!("{}/v1/sessions", d.base)))
            .header("content-type", "application/json")
            .body(json!({"model": "m", "system_prompt": "s", "tools": []}).to_string()),
    )
    .await;
    assert_eq!(status, 201);
    let sid = created["session_id"].as_str().unwrap().to_owned();
    let hook_url = format!("{}/v1/sessions/{sid}/webhook", d.base);
    assert_eq!(call(c.get(&hook_url)).await.0, 401, "the webhook's description needs the daemon's token");
    let (status, hook) = call(auth(c.get(&hook_url))).await;
    assert_eq!(status, 200, "{hook}");
    let url = hook["webhook_url"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{}/webhook/wh_", d.base)), "{url}");
    assert_eq!((hook["session_id"].as_str(), hook["deliver"].as_str()), (Some(sid.as_str()), Some("queue")));
    assert_eq!(call(auth(c.get(&hook_url))).await.1["webhook_url"], url.as_str(), "created once");

    // The URL is the credential: no bearer token needed.
    let (status, body) = call(c.post(&url).body("CI failed: test_parse")).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!((body["ok"].as_bool(), body["session_id"].as_str()), (Some(true), Some(sid.as_str())));
    let first = body["event_id"].as_str().unwrap().to_owned();
    assert!(first.starts_with("evt_"));
    assert_eq!(call(c.post(&url).body("")).await, (400, json!({"error": "Webhook body must be non-empty text"})));
    assert_eq!(call(c.post(&url).body(" \n ")).await.0, 400);
    assert_eq!(call(c.post(&url).body(vec![0xff, 0xfe])).await.0, 400);
    assert_eq!(call(c.post(&url).body("x".repeat(64 * 1024))).await.0, 202);
    let (status, body) = call(c.post(&url).body("x".repeat(64 * 1024 + 1))).await;
    assert_eq!((status, body["error"].as_str()), (413, Some("Webhook body exceeds 65536 bytes")));
    assert_eq!(
        call(c.post(format!("{}/webhook/wh_nope", d.base)).body("x")).await,
        (401, json!({"error": "Unknown webhook token"}))
    );
    // Stored, never executed.
    let marker = std::env::temp_dir().join(format!("pirn-webhook-{}", std::process::id()));
    let (status, _) = call(c.post(&url).body(format!("$(touch {0}) `touch {0}`", marker.display()))).await;
    assert_eq!(status, 202);

    let inbox_url = format!("{}/v1/sessions/{sid}/inbox", d.base);
    let (_, inbox) = call(auth(c.get(&inbox_url))).await;
    let events = inbox["events"].as_array().unwrap();
    assert_eq!(events.len(), 3);
    assert_eq!(events[0]["text"], "CI failed: test_parse");
    assert_eq!((events[0]["status"].as_str(), events[0]["source"].as_str()), (Some("pending"), Some("local-webhook")));
    assert!(events[0]["receivedAt"].as_str().unwrap().ends_with('Z'));
    assert!(!marker.exists());
    let ack = format!("{inbox_url}/{first}/ack");
    assert_eq!(call(auth(c.post(&ack))).await.0, 204);
    assert_eq!(call(auth(c.post(format!("{inbox_url}/evt_nope/ack")))).await.0, 404);
    let (_, pending) = call(auth(c.get(format!("{inbox_url}?status=pending")))).await;
    assert_eq!(pending["events"].as_array().unwrap().len(), 2);
    let (_, acked) = call(auth(c.get(format!("{inbox_url}?status=acked")))).await;
    assert_eq!(acked["events"][0]["id"], first.as_str());

    // Rotation: the old URL stops at once.
    let (_, rotated) = call(auth(c.post(&hook_url))).await;
    let new_url = rotated["webhook_url"].as_str().unwrap();
    assert_ne!(new_url, url);
    assert_eq!(call(c.post(&url).body("late")).await.0, 401);
    assert_eq!(call(c.post(new_url).body("fresh")).await.0, 202);
    // A deleted session's webhook is gone with it.
    assert_eq!(call(auth(c.delete(format!("{}/v1/sessions/{sid}", d.base)))).await.0, 204);
    assert_eq!(call(c.post(new_url).body("after")).await.0, 401);
}

#[tokio::test]
async fn deliver_send_wakes_the_agent_and_the_stream_carries_events() {
    let mock = MockServer::start(vec![Reply::text(&["looking at the failure"])]).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let a = new_session(&c, &d.base, json!({})).await;
    let b = new_session(&c, &d.base, json!({})).await;
    // Streams: one for session a (stringd's X-Agent-Id), one for all.
    let only_a = c.get(format!("{}/v1/events/stream", d.base)).header("X-Agent-Id", &a).send().await.unwrap();
    let mut only_a = SseReader::new(only_a);
    let everything = SseReader::new(c.get(format!("{}/v1/events/stream", d.base)).send().await.unwrap());
    let mut everything = everything;
    let ready = only_a.next().await.unwrap();
    assert_eq!((ready.event.as_str(), ready.data["agent_id"].as_str()), ("ready", Some(a.as_str())));
    assert_eq!(everything.next().await.unwrap().event, "ready");
    assert_eq!(call(c.get(format!("{}/v1/events/stream?session_id=nope", d.base))).await.0, 404);

    let (_, hook_a) =
        post(&c, &format!("{}/v1/sessions/{a}/webhook", d.base), json!({"deliver": "send", "rotate": false})).await;
    assert_eq!(hook_a["deliver"], "send");
    let (_, hook_b) = call(c.get(format!("{}/v1/sessions/{b}/webhook", d.base))).await;
    let events_a = c.get(format!("{}/v1/sessions/{a}/events", d.base)).send().await.unwrap();
    let mut events_a = SseReader::new(events_a);

    let (_, to_b) = call(c.post(hook_b["webhook_url"].as_str().unwrap()).body("for b")).await;
    let (status, to_a) = call(c.post(hook_a["webhook_url"].as_str().unwrap()).body("CI failed: test_x")).await;
    assert_eq!((status, to_a["status"].as_str()), (202, Some("sent")), "{to_a}");
    let evt = to_a["event_id"].as_str().unwrap();
    // The event became a send whose id is the event's.
    let frames = events_a.until_result(evt).await;
    assert_eq!(frames.last().unwrap().data["response"], "looking at the failure");
    let last = mock.requests()[0].body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], Value::String(format!("[webhook event {evt}]\nCI failed: test_x")));
    let (_, inbox) = call(c.get(format!("{}/v1/sessions/{a}/inbox", d.base))).await;
    assert_eq!(inbox["events"][0]["status"], "sent");
    // Streams: a's sees only a's event; the other sees both, in order.
    let got = tokio::time::timeout(Duration::from_secs(5), only_a.next()).await.unwrap().unwrap();
    assert_eq!(
        (got.event.as_str(), got.data["id"].as_str(), got.data["agentId"].as_str()),
        ("event", Some(evt), Some(a.as_str()))
    );
    let first = everything.next().await.unwrap();
    let second = everything.next().await.unwrap();
    assert_eq!((first.data["id"].as_str(), second.data["id"].as_str()), (to_b["event_id"].as_str(), Some(evt)));
    assert_eq!(first.data["text"], "for b");
}
