//! Cost in money (`usage.cost_usd`, `result.session_cost_usd`) and the cost
//! budget (`max_cost_usd`, `pirn run --max-budget-usd`), through the real
//! binary against the mock model: OpenRouter-style `usage.cost` in the
//! streamed usage chunk, and the operator's price table.

use std::process::Stdio;

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, mock_worker, names, pirn_command, scripted_only};

/// An OpenRouter-style streamed answer: `delta`, then a usage chunk with
/// its `cost` in dollars.
fn openrouter(delta: Value, finish: &str, cost: f64) -> Reply {
    let chunk = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    let usage = json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
        "cost": cost, "is_byok": false}});
    Reply::Raw { body: format!("data: {chunk}\n\ndata: {end}\n\ndata: {usage}\n\ndata: [DONE]\n\n") }
}

fn glob_call(pattern: &str, cost: f64) -> Reply {
    let arguments = json!({"pattern": pattern}).to_string();
    let delta = json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
        "function": {"name": "glob", "arguments": arguments}}]});
    openrouter(delta, "tool_calls", cost)
}

fn answer(text: &str, cost: f64) -> Reply {
    openrouter(json!({"content": text}), "stop", cost)
}

fn costs(events: &[Value]) -> Vec<Value> {
    events.iter().filter(|e| e["event"]["event"] == "usage").map(|e| e["event"]["cost_usd"].clone()).collect()
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-12)
}

#[tokio::test]
async fn the_providers_cost_reaches_usage_events_results_and_the_session_sum() {
    let script = vec![glob_call("*", 0.002), answer("done", 0.001), answer("again", 0.0005)];
    let (mut w, _mock) = mock_worker(script, &[], scripted_only(json!({}))).await;
    w.write(json!({"type":"send","id":"s1","message":"look"})).await;
    let (events, r) = w.result_for("s1").await;
    assert_eq!(r["status"], "ok", "{r}");
    let per_call = costs(&events);
    assert!(close(&per_call[0], 0.002) && close(&per_call[1], 0.001), "{per_call:?}");
    assert!(close(&r["usage"]["cost_usd"], 0.003), "{r}");
    assert!(close(&r["session_cost_usd"], 0.003), "{r}");
    w.write(json!({"type":"send","id":"s2","message":"again"})).await;
    let (_, r) = w.result_for("s2").await;
    assert!(close(&r["usage"]["cost_usd"], 0.0005), "{r}");
    assert!(close(&r["session_cost_usd"], 0.0035), "the session's sum: {r}");
    // A 0.2.0 client sees heddle's shapes: no cost anywhere.
    let mock = MockServer::start(vec![answer("done", 0.001)]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[]).await.init("0.2.0", json!({})).await.0;
    w.write(json!({"type":"send","id":"h","message":"look"})).await;
    let lines = w.until(|v| v["type"] == "result").await;
    let text = serde_json::to_string(&lines).unwrap();
    assert!(!text.contains("cost"), "{text}");
}

#[tokio::test]
async fn the_price_table_prices_calls_and_without_one_the_cost_is_unknown() {
    // 10 prompt + 5 completion tokens per answer, at $1 and $2 per million.
    let prices = json!({"prices": {"prompt": 1.0, "completion": 2.0}});
    let (mut w, _mock) = mock_worker(vec![Reply::text(&["hi"])], &[], scripted_only(prices)).await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let (events, r) = w.result_for("s").await;
    assert!(close(&costs(&events)[0], 20e-6), "{events:?}");
    assert!(close(&r["usage"]["cost_usd"], 20e-6), "{r}");
    // The environment's table, with a cached price: 4 of the 10 prompt
    // tokens served from the cache would be cheaper, but the mock says none.
    let (mut w, _mock) = mock_worker(
        vec![Reply::text(&["hi"])],
        &[("PIRN_PRICES", "prompt=3,cached=0.3,completion=15")],
        scripted_only(json!({})),
    )
    .await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let (_, r) = w.result_for("s").await;
    assert!(close(&r["usage"]["cost_usd"], (10.0 * 3.0 + 5.0 * 15.0) / 1e6), "{r}");
    // Neither a provider figure nor a table: absent, never 0.
    let (mut w, _mock) = mock_worker(vec![Reply::text(&["hi"])], &[], json!({})).await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let (events, r) = w.result_for("s").await;
    assert!(costs(&events).iter().all(Value::is_null), "{events:?}");
    assert!(r["usage"].get("cost_usd").is_none() && r.get("session_cost_usd").is_none(), "{r}");
    // A bad table fails init.
    let mock = MockServer::start(vec![]).await;
    let mut w = Worker::spawn(&mock.base_url(), &[("PIRN_PRICES", "prompt=1")]).await;
    w.write(json!({"type":"init","id":"i","protocol_version":"0.3.0","config":{"model":"m","system_prompt":"s","tools":[]}})).await;
    let r = w.next().await;
    assert!(r["error"]["message"].as_str().unwrap().contains("completion price"), "{r}");
}

#[tokio::test]
async fn the_cost_budget_makes_the_crossing_call_the_last() {
    let script = ["*.a", "*.b", "*.c", "*.d"].map(|p| glob_call(p, 0.004)).to_vec();
    let (mut w, mock) = mock_worker(script, &[], json!({"max_cost_usd": 0.01})).await;
    w.write(json!({"type":"send","id":"s","message":"look around"})).await;
    let (events, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert_eq!(r["stop_reason"], "budget_exhausted");
    assert_eq!(mock.requests().len(), 3, "the third call reached $0.012");
    assert!(close(&r["usage"]["cost_usd"], 0.012), "{r}");
    assert!(close(&r["error"]["details"]["max_cost_usd"], 0.01), "{r}");
    assert_eq!(names(&events).iter().filter(|n| *n == "tool_start").count(), 2, "the crossing call's tools do not run");
    // Without any cost figure the budget cannot hold: the first call is the last.
    let (mut w, mock) = mock_worker(vec![Reply::tool("glob", json!({"pattern": "*"}))], &[], json!({})).await;
    w.write(json!({"type":"send","id":"u","message":"look","max_cost_usd": 1.0})).await;
    let (_, r) = w.result_for("u").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("unknown"), "{r}");
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn a_call_the_price_table_shows_would_pass_the_budget_is_not_made() {
    // $1 a prompt token: the first request alone passes $0.50.
    let config = json!({"prices": {"prompt": 1e6, "completion": 1e6}, "max_cost_usd": 0.5});
    let (mut w, mock) = mock_worker(vec![Reply::text(&["hi"])], &[], config).await;
    w.write(json!({"type":"send","id":"s","message":"hello"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["error"]["code"], "budget_exceeded", "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("would cost at least"), "{r}");
    assert!(mock.requests().is_empty(), "no request was sent");
}

#[tokio::test]
async fn pirn_run_takes_a_cost_budget_and_a_price_table() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockServer::start(vec![glob_call("*", 0.02)]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--max-budget-usd", "0.01", "look"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--prices", "prompt=1,completion=2", "hello"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("\"cost_usd\":2e-5") || stdout.contains("\"cost_usd\":0.00002"), "{stdout}");
}
