//! An MCP tool's progress as it happens (0.3.0 `tool_output`), with the MCP
//! project's reference server: its long-running operation reports each step
//! to a client that asks, and pirn asks, passing each step on while the
//! call runs; the result is the tool's own.

use std::time::{Duration, Instant};

use serde_json::json;

use super::mock::{MockServer, Reply};
use super::worker::{Worker, counterpart};

#[tokio::test]
async fn the_reference_servers_progress_streams_while_its_tool_runs() {
    let Some(dir) = counterpart("PIRN_TEST_MCP_EVERYTHING") else { return };
    let index = format!("{dir}/dist/index.js");
    {
        let mock = MockServer::start(vec![
            Reply::tool("mcp__ev__trigger-long-running-operation", json!({"duration": 2, "steps": 4})),
            Reply::text(&["done"]),
        ])
        .await;
        let config = json!({
            "tools": ["mcp__ev__trigger-long-running-operation"],
            "workspace_listing": false,
            "mcp_servers": [{"name": "ev", "command": "node", "args": [index, "stdio"]}],
        });
        let (mut w, _) = Worker::spawn(&mock.base_url(), &[]).await.init("0.3.0", config).await;
        w.write(json!({"type": "send", "id": "s1", "message": "run the long operation"})).await;
        let mut pieces = Vec::new();
        let result = loop {
            let v = w.next().await;
            if v["type"] == "result" {
                break v;
            }
            if v["event"]["event"] == "tool_output" {
                pieces.push((Instant::now(), v["event"].clone()));
            }
        };
        assert_eq!(result["status"], "ok", "{result}");
        let body = &mock.requests()[1].body;
        let answer = super::mock::last_tool_text(body);
        assert!(answer.contains("Long running operation completed"), "{answer}");
        let text: String = pieces.iter().map(|(_, e)| e["text"].as_str().unwrap()).collect();
        assert_eq!(text, "[progress 1/4]\n[progress 2/4]\n[progress 3/4]\n[progress 4/4]\n", "{pieces:?}");
        let spread = pieces.last().unwrap().0.duration_since(pieces[0].0);
        assert!(spread > Duration::from_millis(1000), "they came while it ran: {spread:?}");
        assert_eq!(pieces[1].1["offset"], "[progress 1/4]\n".len(), "{pieces:?}");
        assert!(pieces.iter().all(|(_, e)| e["call_id"].is_string()));
    }
}
