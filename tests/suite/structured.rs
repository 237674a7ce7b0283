//! Schema-checked final answers (`output_schema`), budgets
//! (`max_total_tokens`, `max_tool_calls`), and heddle's 0.2.0 error result,
//! through the real binary against the mock model server.

use std::process::Stdio;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, event, mock_worker, names, pirn_command};

fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["functions"],
        "properties": {"functions": {"type": "array", "items": {
            "type": "object", "required": ["name", "line"],
            "properties": {"name": {"type": "string"}, "line": {"type": "integer"}}}}}
    })
}

/// The last user or system text of a recorded request.
fn last_text(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_valid_answer_is_parsed_into_structured_output() {
    let answer = r#"{"functions": [{"name": "add", "line": 1}]}"#;
    let (mut w, mock) = mock_worker(vec![Reply::text(&[answer])], &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"list the functions","output_schema": schema()})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["structured_output"], json!({"functions": [{"name": "add", "line": 1}]}));
    assert_eq!(r["response"], answer, "the raw text stays in response");
    let first = &mock.requests()[0].body;
    assert!(last_text(first).contains("\"functions\""), "the model is shown the schema: {first}");
    // With tools offered the first request does not hold the answer to the
    // schema (a server with grammars would then allow no tool call); a
    // session without tools asks for it from the first request.
    assert!(first.get("response_format").is_none() && first["tools"].is_array(), "{first}");
    let (mut w, mock) = mock_worker(vec![Reply::text(&[answer])], &[], json!({"tools": []})).await;
    w.write(json!({"type":"send","id":"s","message":"list the functions","output_schema": schema()})).await;
    assert_eq!(w.result_for("s").await.1["structured_output"]["functions"][0]["name"], "add");
    let first = &mock.requests()[0].body;
    assert_eq!(first["response_format"]["json_schema"]["schema"], schema(), "{first}");
}

#[tokio::test]
async fn an_invalid_answer_is_sent_back_with_its_errors_then_accepted() {
    let script = vec![
        Reply::text(&["There is one function, add, on line 1."]),
        Reply::text(&[r#"{"functions": [{"name": "add", "line": "one"}]}"#]),
        Reply::text(&[r#"{"functions": [{"name": "add", "line": 1}]}"#]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"list the functions","output_schema": schema()})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["structured_output"]["functions"][0]["line"], 1);
    assert_eq!(r["iterations"], 3);
    let requests = mock.requests();
    let second = &requests[1].body;
    assert!(last_text(second).contains("not JSON"), "{}", last_text(second));
    assert_eq!(second["response_format"]["type"], "json_schema");
    assert_eq!(second["response_format"]["json_schema"]["schema"], schema());
    assert_eq!(second["tool_choice"], "none");
    let third = last_text(&requests[2].body);
    assert!(third.contains("at /functions/0/line") && third.contains("integer"), "{third}");
}

#[tokio::test]
async fn an_answer_that_never_validates_ends_output_invalid_with_the_errors() {
    let bad = || Reply::text(&[r#"{"functions": "none"}"#]);
    let (mut w, mock) = mock_worker(vec![bad(), bad()], &[], json!({})).await;
    let send = json!({"type":"send","id":"s","message":"list","output_schema": schema(),"output_retries": 1});
    w.write(send).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!((r["status"].as_str(), r["error"]["code"].as_str()), (Some("error"), Some("output_invalid")), "{r}");
    assert!(r["error"]["details"]["errors"][0].as_str().unwrap().contains("/functions"), "{r}");
    assert_eq!(r["response"], r#"{"functions": "none"}"#);
    assert!(r.get("structured_output").is_none());
    assert_eq!(event(&events, "error")["code"], "output_invalid");
    assert_eq!(mock.requests().len(), 2, "one retry, as output_retries says");
}

#[tokio::test]
async fn a_provider_that_refuses_response_format_is_asked_without_it_for_the_session() {
    let refusal = r#"{"error":{"message":"Unrecognized request argument supplied: response_format"}}"#;
    let script = vec![
        Reply::text(&["prose"]),
        Reply::status(400, refusal),
        Reply::text(&["still prose"]),
        Reply::text(&["more prose"]),
        Reply::text(&[r#"{"functions": []}"#]),
    ];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    w.write(json!({"type":"send","id":"a","message":"list","output_schema": schema(),"output_retries": 1})).await;
    let (_, r) = w.result_for("a").await;
    assert_eq!(r["error"]["code"], "output_invalid", "{r}");
    w.write(json!({"type":"send","id":"b","message":"list","output_schema": schema()})).await;
    let (_, r) = w.result_for("b").await;
    assert_eq!(r["structured_output"], json!({"functions": []}), "{r}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    assert!(requests[1].body.get("response_format").is_some());
    assert!(requests[2].body.get("response_format").is_none(), "retried once without it");
    assert!(requests[4].body.get("response_format").is_none(), "remembered for the session");
    assert_eq!(requests[4].body["tool_choice"], "none");
}

#[tokio::test]
async fn an_invalid_schema_is_refused_before_any_model_call() {
    let (mut w, mock) = mock_worker(vec![Reply::text(&["x"])], &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"list","output_schema": {"type": "nonsense"}})).await;
    let (events, r) = w.result_for("s").await;
    assert!(events.is_empty(), "{events:?}");
    assert_eq!(r["error"]["code"], "invalid_request", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("not a valid JSON Schema"), "{r}");
    assert!(mock.requests().is_empty());
    // A 0.2.0 session refuses send options by name.
    let mut w = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", json!({})).await.0;
    w.write(json!({"type":"send","id":"s","message":"list","output_schema": schema()})).await;
    let r = w.until(|v| v["id"] == "s").await.pop().unwrap();
    assert_eq!(r["error"]["code"], "protocol_error");
    assert!(r["error"]["message"].as_str().unwrap().contains("0.3.0"), "{r}");
}

#[tokio::test]
async fn the_token_budget_makes_the_crossing_call_the_last() {
    let glob = || Reply::tool("glob", json!({"pattern": "*"}));
    // Each tool-call answer reports 20 + 8 tokens.
    let (mut w, mock) = mock_worker(vec![glob(), glob(), glob(), glob()], &[], json!({"max_total_tokens": 50})).await;
    w.write(json!({"type":"send","id":"s","message":"look around"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert_eq!(r["stop_reason"], "budget_exhausted");
    assert_eq!(r["usage"]["total_tokens"], 56, "two calls: the second crossed 50");
    assert_eq!(r["error"]["details"]["total_tokens"], 56);
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 1, "the crossing call's tools do not run");
    // Without usage from the provider, pirn's estimate counts.
    let no_usage = || Reply::ToolCalls {
        calls: vec![super::mock::MockCall { name: "glob".into(), arguments: r#"{"pattern":"*"}"#.into() }],
        usage: None,
        text: None,
    };
    let (mut w, mock) = mock_worker(vec![no_usage(), no_usage(), no_usage()], &[], json!({})).await;
    w.write(json!({"type":"send","id":"e","message":"look around","max_total_tokens": 10})).await;
    let (_, r) = w.result_for("e").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn the_tool_call_budget_stops_calls_beyond_it_and_the_model_is_told() {
    let glob = |p: &str| Reply::tool("glob", json!({"pattern": p}));
    let script = vec![glob("*.md"), glob("*.rs"), glob("*.txt"), Reply::text(&["I looked at two patterns."])];
    let (mut w, mock) = mock_worker(script, &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"look around","max_tool_calls": 2})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert_eq!(r["response"], "I looked at two patterns.");
    assert_eq!(r["tool_calls_made"].as_array().unwrap().len(), 2);
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 2);
    let last = &mock.requests()[3].body;
    assert_eq!(last["tool_choice"], "none");
    let told = serde_json::to_string(&last["messages"]).unwrap();
    assert!(told.contains("budget of 2 tool calls is spent"), "{told}");
}

#[tokio::test]
async fn status_reports_the_running_sends_budget() {
    let script = vec![
        Reply::tool("glob", json!({"pattern": "*"})),
        Reply::Text { chunks: vec!["done".into()], usage: Some([10, 5]), delay_ms: 1500, finish_reason: None },
    ];
    let (mut w, _mock) = mock_worker(script, &[], json!({"max_tool_calls": 5})).await;
    w.write(json!({"type":"send","id":"s","message":"go"})).await;
    w.until(|v| v["event"]["event"] == "tool_end").await;
    let st = w.status("st").await;
    assert_eq!(st["budget"], json!({"total_tokens": 28, "tool_calls": 1, "max_tool_calls": 5}), "{st}");
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok");
    assert!(w.status("st2").await.get("budget").is_none());
}

#[tokio::test]
async fn heddles_provider_error_result_for_0_2_clients() {
    let body = r#"{"error":{"message":"Model error","type":"error","code":500}}"#;
    let mock = MockServer::start(vec![Reply::status(500, body), Reply::status(500, body)]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", json!({})).await.0;
    w.write(json!({"type":"send","id":"2","message":"Do the thing."})).await;
    let (events, r) = w.result_for("2").await;
    let parsed: Value = serde_json::from_str(body).unwrap();
    assert_eq!(event(&events, "error")["details"], parsed);
    assert_eq!(r["error"]["details"], parsed, "{r}");
    assert_eq!(r["iterations"], 0, "no model call completed");
    assert!(r.get("usage").is_none(), "{r}");
    // 0.3.0 keeps pirn's richer details and counts the call made.
    let mock = MockServer::start(vec![Reply::status(500, body)]).await;
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    w.write(json!({"type":"send","id":"2","message":"Do the thing."})).await;
    let (_, r) = w.result_for("2").await;
    assert_eq!(r["error"]["details"], json!({"kind": "http", "status": 500, "body": body}), "{r}");
    assert_eq!(r["iterations"], 1);
}

#[tokio::test]
async fn pirn_run_prints_only_the_validated_document_and_exits_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let schema_file = dir.path().join("schema.json");
    std::fs::write(&schema_file, schema().to_string()).unwrap();
    let mock = MockServer::start(vec![Reply::text(&["Sure! ", r#"{"functions": [{"name": "f", "line": 3}]}"#])]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--format", "text", "--output-schema", schema_file.to_str().unwrap(), "list"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout:?}"));
    assert_eq!(doc, json!({"functions": [{"name": "f", "line": 3}]}));
    // Never valid: exit code 4 and nothing on stdout.
    let bad = || Reply::text(&["no idea"]);
    let mock = MockServer::start(vec![bad(), bad(), bad()]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--format", "text", "--output-schema", &schema().to_string(), "list"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert!(out.stdout.is_empty(), "{:?}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("OutputInvalid"));
    // A spent budget exits 3, like the other limits.
    let mock = MockServer::start(vec![Reply::tool("glob", json!({"pattern": "*"}))]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--max-total-tokens", "5", "look"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
}
