//! Model-server failures, limits and loop detection.

use std::time::{Duration, Instant};

use serde_json::json;

use super::mock::{MockCall, MockServer, Reply};
use super::worker::{Worker, event, names};

async fn one_send(
    script: Vec<Reply>,
    extra: serde_json::Value,
) -> (Vec<serde_json::Value>, serde_json::Value, MockServer) {
    let mock = MockServer::start(script).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], extra).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    let (events, r) = w.result_for("s").await;
    (events, r, mock)
}

fn error_event(events: &[serde_json::Value]) -> &serde_json::Value {
    event(events, "error")
}

#[tokio::test]
async fn http_500_is_a_retryable_provider_error_with_the_status() {
    let (events, r, mock) = one_send(vec![Reply::status(500, r#"{"error":{"message":"boom"}}"#)], json!({})).await;
    let e = error_event(&events);
    assert_eq!(e["code"], "provider_error");
    assert_eq!(e["retryable"], true);
    assert_eq!(e["details"]["status"], 500);
    assert!(e["message"].as_str().unwrap().contains("boom"));
    assert_eq!(r["status"], "error");
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["retryable"], true);
    assert_eq!(r["error"]["details"]["status"], 500);
    assert_eq!(mock.requests().len(), 1, "500 is not retried");
}

#[tokio::test]
async fn http_401_is_not_retryable() {
    let (events, r, _) =
        one_send(vec![Reply::status(401, r#"{"error":{"message":"invalid api key"}}"#)], json!({})).await;
    assert_eq!(error_event(&events)["retryable"], false);
    assert_eq!(r["error"]["retryable"], false);
    assert_eq!(r["error"]["details"]["status"], 401);
}

#[tokio::test]
async fn statuses_map_to_retryable_as_specified() {
    for (code, retryable) in
        [(400, false), (403, false), (404, false), (422, false), (408, true), (409, true), (502, true)]
    {
        let (_, r, _) = one_send(vec![Reply::status(code, "nope")], json!({})).await;
        assert_eq!(r["error"]["retryable"], retryable, "HTTP {code}: {r}");
        assert_eq!(r["error"]["details"]["status"], code);
    }
}

#[tokio::test]
async fn a_dropped_stream_is_retryable_and_not_retried() {
    let (events, r, mock) = one_send(vec![Reply::Drop { chunks: vec!["half an ans".into()] }], json!({})).await;
    assert_eq!(names(&events)[0], "content_delta");
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["retryable"], true);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn connection_refused_is_retryable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let (mut w, _) = Worker::ready(&format!("http://127.0.0.1:{port}/v1"), &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(error_event(&events)["retryable"], true);
    assert_eq!(r["error"]["code"], "provider_error");
    assert!(r["error"]["message"].as_str().unwrap().contains("connect"), "{r}");
}

#[tokio::test]
async fn retry_after_is_honoured_for_429_and_503() {
    let (_, r, mock) = one_send(
        vec![
            Reply::Status { code: 429, body: "slow down".into(), retry_after: Some("0".into()) },
            Reply::Status { code: 503, body: "busy".into(), retry_after: Some("1".into()) },
            Reply::text(&["made it"]),
        ],
        json!({}),
    )
    .await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "made it");
    assert_eq!(mock.requests().len(), 3);
    assert!(r["model_latency_ms"].as_u64().unwrap() >= 1000, "waited Retry-After: {r}");
}

#[tokio::test]
async fn at_most_three_tries() {
    let busy = || Reply::Status { code: 503, body: "busy".into(), retry_after: Some("0".into()) };
    let (_, r, mock) = one_send(vec![busy(), busy(), busy(), Reply::text(&["never"])], json!({})).await;
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["details"]["status"], 503);
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn a_stalled_stream_hits_the_idle_timeout() {
    let t = Instant::now();
    let (_, r, _) = one_send(vec![Reply::Stall { chunks: vec!["x".into()] }], json!({"idle_timeout_ms": 300})).await;
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["retryable"], true);
    assert!(r["error"]["message"].as_str().unwrap().contains("idle"), "{r}");
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_idle_timeout() {
    let (_, r, _) = one_send(vec![Reply::Hang], json!({"idle_timeout_ms": 300})).await;
    assert_eq!(r["error"]["code"], "provider_error");
    assert_eq!(r["error"]["retryable"], true);
}

#[tokio::test]
async fn garbage_in_the_stream_is_a_provider_error() {
    let (_, r, _) = one_send(vec![Reply::Raw { body: "data: {not json\n\n".into() }], json!({})).await;
    assert_eq!(r["error"]["code"], "provider_error");
    assert!(r["error"]["message"].as_str().unwrap().contains("not valid JSON"), "{r}");
}

#[tokio::test]
async fn max_iterations_ends_the_send() {
    let script = (0..3).map(|i| Reply::tool("glob", json!({"pattern": format!("*.{i}")}))).collect();
    let (events, r, mock) = one_send(script, json!({"max_iterations": 2})).await;
    assert_eq!(r["error"]["code"], "max_iterations");
    assert_eq!(r["error"]["retryable"], false);
    assert_eq!(r["iterations"], 2);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(error_event(&events)["code"], "max_iterations");
}

#[tokio::test]
async fn a_repeated_look_gets_one_last_request_that_forbids_tools() {
    let same = || Reply::tool("grep", json!({"pattern": "x", "path": "."}));
    let (events, r, mock) = one_send(vec![same(), same(), Reply::text(&["found nothing"])], json!({})).await;
    assert_eq!(r["response"], "found nothing", "{r}");
    assert_eq!(r["iterations"], 3);
    // The first call runs; the repeat asks again for a result the model
    // has: it is answered with that result, and the next request asks for
    // the answer and forbids tool calls.
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 1, "repeats are not run");
    let requests = mock.requests();
    assert!(requests[1].body.get("tool_choice").is_none());
    let last = &requests[2].body;
    assert_eq!(last["tool_choice"], "none", "the wrap-up request forbids tool calls");
    assert!(last["tools"].is_array(), "the tools stay for the history's sake");
    let messages = last["messages"].as_array().unwrap();
    let nudge = messages.last().unwrap();
    assert_eq!(nudge["role"], "user");
    assert!(
        nudge["content"]
            .as_str()
            .unwrap()
            .starts_with("[pirn] Stop calling tools: the same call gives the same result"),
        "{nudge}"
    );
    let repeat = messages.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap();
    assert!(
        repeat.starts_with("Not run: the same call") && !repeat.contains("result was"),
        "not shown again: {repeat}"
    );
}

#[tokio::test]
async fn three_identical_failing_iterations_get_one_last_request_that_forbids_tools() {
    // A failed call repeated may still find its way with other arguments:
    // it is told so, and only the third identical request makes a loop.
    let same = || Reply::tool("read_file", json!({"file_path": "nope.txt"}));
    let script = vec![same(), same(), same(), Reply::text(&["no such file"])];
    let (events, r, mock) = one_send(script, json!({})).await;
    assert_eq!(r["response"], "no such file", "{r}");
    assert_eq!(r["iterations"], 4);
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 1, "repeats are not run");
    let requests = mock.requests();
    assert!(requests[2].body.get("tool_choice").is_none(), "the failed call's repeat may try again");
    assert_eq!(requests[3].body["tool_choice"], "none");
    let nudge =
        requests[3].body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(nudge.starts_with("[pirn] Stop calling tools"), "{nudge}");
}

#[tokio::test]
async fn a_loop_that_goes_on_after_the_wrap_up_ends_the_send() {
    let same = || Reply::tool("grep", json!({"pattern": "x", "path": "."}));
    let (events, r, _) = one_send(vec![same(), same(), same(), Reply::text(&["never"])], json!({})).await;
    assert_eq!(r["error"]["code"], "loop_detected");
    assert_eq!(r["error"]["retryable"], false);
    assert_eq!(r["iterations"], 3);
    assert_eq!(error_event(&events)["code"], "loop_detected");
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 1, "nothing runs after the loop");
}

#[tokio::test]
async fn a_repeated_call_is_answered_with_the_earlier_result_not_run_again() {
    let script = vec![
        Reply::tool("read_file", json!({"file_path": "nope.txt"})),
        Reply::tool("read_file", json!({"file_path": "nope.txt"})),
        Reply::text(&["giving up"]),
    ];
    let (events, r, mock) = one_send(script, json!({})).await;
    assert_eq!(r["status"], "ok");
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 1);
    let msgs = mock.requests()[2].body["messages"].clone();
    let msgs = msgs.as_array().unwrap();
    let tool = msgs.iter().rev().find(|m| m["role"] == "tool").unwrap()["content"].as_str().unwrap().to_owned();
    assert!(tool.starts_with("Not run again") && tool.contains("no such file") && tool.contains("glob"), "{tool}");
    // Period one stays the older guard's: no cycle note on top.
    assert!(!msgs.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("going round"))));
}

#[tokio::test]
async fn tool_mistakes_go_back_to_the_model() {
    let calls = vec![
        MockCall { name: "teleport".into(), arguments: "{}".into() },
        MockCall { name: "read_file".into(), arguments: "{\"file_path\": ".into() },
        MockCall { name: "read_file".into(), arguments: "{\"path\": \"x\"}".into() },
        MockCall { name: "read_file".into(), arguments: "{\"file_path\": \"missing.txt\"}".into() },
    ];
    let (events, r, mock) = one_send(
        vec![Reply::ToolCalls { calls, usage: None, text: Some("let me look".into()) }, Reply::text(&["sorry"])],
        json!({}),
    )
    .await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["response"], "sorry");
    let ends: Vec<_> = events.iter().filter(|e| e["event"]["event"] == "tool_end").collect();
    assert_eq!(ends.len(), 4);
    assert!(ends.iter().all(|e| e["event"]["is_error"] == true));
    let starts: Vec<_> = events.iter().filter(|e| e["event"]["event"] == "tool_start").collect();
    assert_eq!(starts[1]["event"]["args"], "{\"file_path\": ", "unparseable args are shown raw");
    let tool_msgs: Vec<String> = mock.requests()[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert!(tool_msgs[0].contains("unknown tool \"teleport\""), "{tool_msgs:?}");
    assert!(tool_msgs[1].contains("not valid JSON"), "{tool_msgs:?}");
    assert!(tool_msgs[2].contains("missing field `file_path`"), "{tool_msgs:?}");
    assert!(tool_msgs[3].contains("no such file"), "{tool_msgs:?}");
}

#[tokio::test]
async fn only_enabled_tools_are_advertised_and_run() {
    let (events, r, mock) = one_send(
        vec![Reply::tool("bash", json!({"command": "touch should-not-exist"})), Reply::text(&["ok"])],
        json!({"tools": ["read_file"]}),
    )
    .await;
    assert_eq!(r["status"], "ok");
    let tools = mock.requests()[0].body["tools"].as_array().unwrap().len();
    assert_eq!(tools, 2, "read_file and the plan tool");
    let end = events.iter().find(|e| e["event"]["event"] == "tool_end").unwrap();
    assert_eq!(end["event"]["is_error"], true);
    assert!(end["event"]["result_preview"].as_str().unwrap().contains("available are read_file"));
}

#[tokio::test]
async fn finish_reason_length_is_not_reported_as_success() {
    let (_, r, _) = one_send(
        vec![Reply::Text {
            chunks: vec!["the answer is".into()],
            usage: None,
            delay_ms: 0,
            finish_reason: Some("length".into()),
        }],
        json!({}),
    )
    .await;
    assert_eq!(r["status"], "error");
    assert_eq!(r["response"], "the answer is");
    assert!(r["error"]["message"].as_str().unwrap().contains("length"));
}

#[tokio::test]
async fn a_cut_off_wrap_up_answer_ends_a_checked_send_without_reopening_the_tools() {
    // A checked send may spend a round on a cut-off answer, but not once
    // its tool calls are spent: the budget's wrap-up stays the last answer.
    let glob = |p: &str| Reply::tool("glob", json!({"pattern": p}));
    let cut =
        Reply::Text { chunks: vec!["and so".into()], usage: None, delay_ms: 0, finish_reason: Some("length".into()) };
    let script = vec![glob("*"), glob("*.md"), cut, glob("*.rs"), Reply::text(&["late"])];
    let mock = MockServer::start(script).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"verify_command": "test -f never_there"})).await;
    w.write(json!({"type":"send","id":"s","message":"go","max_tool_calls": 1})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!((r["status"].as_str(), r["error"]["code"].as_str()), (Some("error"), Some("provider_error")), "{r}");
    assert_eq!(r["response"], "and so", "{r}");
    assert_eq!(mock.requests().len(), 3, "no request after the wrap-up's answer");
}
