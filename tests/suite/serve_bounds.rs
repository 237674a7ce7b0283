//! `pirn serve` bounds its live sessions: `--max-sessions`,
//! `--session-idle-secs`, and `/mcp` runs that leave nothing open.

use serde_json::json;

use super::http::{call, client, daemon, new_session, post};
use super::mcp::{call as tool_call, mcp_transport};
use super::mock::{MockServer, Reply};

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn beyond_max_sessions_creating_one_answers_503() {
    let mock = MockServer::start(vec![]).await;
    let d = daemon(&mock.base_url(), &["--max-sessions", "2"]).await;
    let c = client();
    let first = new_session(&c, &d.base, json!({})).await;
    new_session(&c, &d.base, json!({})).await;
    let cfg = json!({"model": "m", "system_prompt": "s", "tools": []});
    let (status, body) = post(&c, &format!("{}/v1/sessions", d.base), cfg.clone()).await;
    assert_eq!((status, body["error"].as_str()), (503, Some("TOO_MANY_SESSIONS")), "{body}");
    // Closing one makes room.
    let (status, _) = call(c.delete(format!("{}/v1/sessions/{first}", d.base))).await;
    assert!(status < 300, "{status}");
    let (status, body) = post(&c, &format!("{}/v1/sessions", d.base), cfg).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn an_idle_session_is_closed_and_can_be_resumed() {
    let mock = MockServer::start(vec![Reply::text(&["noted"])]).await;
    let d = daemon(&mock.base_url(), &["--session-idle-secs", "2"]).await;
    let c = client();
    let sid = new_session(&c, &d.base, json!({})).await;
    let (status, body) = post(&c, &format!("{}/v1/sessions/{sid}/sends", d.base), json!({"message": "hi"})).await;
    assert_eq!(status, 202, "{body}");
    // Kept alive by use...
    for _ in 0..6 {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let (status, _) = call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await;
        assert_eq!(status, 200, "a session in use is not idle");
    }
    // ...closed when idle, its log kept.
    tokio::time::sleep(std::time::Duration::from_millis(3000)).await;
    let (status, _) = call(c.get(format!("{}/v1/sessions/{sid}", d.base))).await;
    assert_eq!(status, 404);
    let (status, body) = post(&c, &format!("{}/v1/sessions", d.base), json!({"resume": sid})).await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn mcp_runs_leave_no_session_and_no_descriptor_behind() {
    use rmcp::ServiceExt;
    let replies: Vec<Reply> = (0..31).map(|i| Reply::text(&[&format!("answer {i}")])).collect();
    let mock = MockServer::start(replies).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let pid = d.child.id().unwrap();
    let client = ().serve(mcp_transport(&d.base, None)).await.unwrap();
    let run = |i: usize| tool_call("pirn_run", json!({"prompt": format!("task {i}"), "model": "m", "tools": []}));
    assert_eq!(client.call_tool(run(0)).await.unwrap().is_error, Some(false));
    let before = fds(pid);
    for i in 1..31 {
        assert_eq!(client.call_tool(run(i)).await.unwrap().is_error, Some(false));
    }
    let after = fds(pid);
    assert!(after <= before + 2, "descriptors grew from {before} to {after} over 30 runs");
    let (_, list) = call(super::http::client().get(format!("{}/v1/sessions", d.base))).await;
    let ours: Vec<&serde_json::Value> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["title"].as_str().is_some_and(|t| t.starts_with("task ")))
        .collect();
    assert_eq!(ours.len(), 31, "every run is stored");
    assert!(ours.iter().all(|s| s["live"] == false), "{list}");
    client.cancel().await.unwrap();
}
