//! MCP servers as tool sources, through the binary: the server is a real
//! MCP server on stdio (`pirn mcp`, built on the official Rust SDK), started
//! by the session from `config.mcp_servers`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::{Worker, counterpart, event, names, processes_with, until_gone};

/// A stdio MCP server entry: `pirn mcp` serving `tools`, tagged with a
/// unique allowed path so the test can find its processes.
fn pirn_mcp(name: &str, tools: &str, tag: &std::path::Path) -> Value {
    json!({
        "name": name,
        "command": env!("CARGO_BIN_EXE_pirn"),
        "args": ["mcp", "--tools", tools, "--allowed-path", tag],
    })
}

#[tokio::test]
async fn mcp_tools_follow_the_allowlist_and_their_results_reach_the_model() {
    let mock = MockServer::start(vec![
        Reply::tool("mcp__files__read_file", json!({"file_path": "hello.txt"})),
        Reply::text(&["it says hi"]),
    ])
    .await;
    let tag = tempfile::tempdir().unwrap();
    let w = Worker::spawn(&mock.base_url(), &[]).await;
    std::fs::write(w.workspace.path().join("hello.txt"), "hi from the file\n").unwrap();
    let config = json!({
        "tools": ["read_file", "mcp__files__read_*", "mcp__files__grep"],
        "mcp_servers": [pirn_mcp("files", "read_file,glob,grep,bash", tag.path())],
        "preflight": false,
    });
    let (mut w, _) = w.init("0.3.0", config).await;
    w.write(json!({"type": "send", "id": "s1", "message": "what does hello.txt say?"})).await;
    let (events, result) = w.result_for("s1").await;
    assert_eq!(result["response"], "it says hi", "{result}");
    assert_eq!(event(&events, "tool_start")["name"], "mcp__files__read_file");
    assert_eq!(event(&events, "tool_end")["is_error"], false, "{:?}", names(&events));
    let requests = mock.requests();
    let advertised: Vec<&str> =
        requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    // Exactly what the allowlist names: glob and bash are served but not enabled.
    assert_eq!(advertised, ["read_file", "todo_write", "mcp__files__grep", "mcp__files__read_file"]);
    let grep =
        requests[0].body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__files__grep");
    assert_eq!(grep.unwrap()["function"]["parameters"]["required"], json!(["pattern"]));
    let tool_message = requests[1].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert!(tool_message["content"].as_str().unwrap().contains("hi from the file"), "{tool_message}");
    // Shutdown takes the server with it.
    let marker = tag.path().to_str().unwrap().to_owned();
    assert_eq!(processes_with(&marker).len(), 1, "{:?}", processes_with(&marker));
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    assert_eq!(w.exit_code().await, Some(0));
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());
}

#[tokio::test]
async fn a_cancel_reaches_the_mcp_server_and_approval_modes_apply() {
    let tag = tempfile::tempdir().unwrap();
    let sleeper = format!("sleep 77{}.5", std::process::id() % 1000);
    let mock = MockServer::start(vec![
        Reply::tool("mcp__sh__bash", json!({"command": sleeper})),
        // suggest mode: bash is not read-only, so it needs an answer nobody gives.
        Reply::tool("mcp__sh__bash", json!({"command": "echo ran > ran.txt"})),
        Reply::tool("mcp__sh__glob", json!({"pattern": "*"})),
        Reply::text(&["done"]),
    ])
    .await;
    let config = json!({
        "tools": ["mcp__sh__*"],
        "mcp_servers": [pirn_mcp("sh", "bash,glob", tag.path())],
    });
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config).await;
    w.write(json!({"type": "send", "id": "s1", "message": "sleep"})).await;
    w.until(|v| v["event"]["event"] == "tool_start").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with(&sleeper).is_empty() {
        assert!(Instant::now() < deadline, "the server never ran {sleeper}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    w.write(json!({"type": "cancel", "id": "c1", "target_id": "s1"})).await;
    let (_, result) = w.result_for("s1").await;
    assert_eq!(result["error"]["code"], "cancelled", "{result}");
    // notifications/cancelled made the server cancel the call: its bash is gone.
    assert_eq!(until_gone(&sleeper).await, Vec::<String>::new());
    w.write(json!({"type": "shutdown", "id": "bye"})).await;
    w.exit_code().await;

    let (mut w, _) = Worker::ready(
        &mock.base_url(),
        &[],
        json!({"tools": ["mcp__sh__*"], "approval_mode": "suggest", "mcp_servers": [pirn_mcp("sh", "bash,glob", tag.path())]}),
    )
    .await;
    w.write(json!({"type": "send", "id": "s2", "message": "write"})).await;
    let (events, result) = w.result_for("s2").await;
    assert_eq!(result["response"], "done", "{result}");
    let denied: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "permission_denied").collect();
    assert_eq!(denied.len(), 1, "{:?}", names(&events));
    assert_eq!(denied[0]["event"]["name"], "mcp__sh__bash");
    assert!(!w.workspace.path().join("ran.txt").exists());
    // glob is read-only: it ran unasked.
    let ends: Vec<&Value> = events.iter().filter(|e| e["event"]["event"] == "tool_end").collect();
    assert_eq!(
        (ends[1]["event"]["name"].as_str(), ends[1]["event"]["is_error"].as_bool()),
        (Some("mcp__sh__glob"), Some(false))
    );
    // A call past the server's timeout_ms is cancelled (the server's bash
    // with it) and the model is told; the send goes on.
    let slow = format!("sleep 88{}.5", std::process::id() % 1000);
    mock.push(Reply::tool("mcp__sh__bash", json!({"command": slow})));
    mock.push(Reply::text(&["gave up"]));
    let mut server = pirn_mcp("sh", "bash,glob", tag.path());
    server["timeout_ms"] = json!(300);
    let (mut w, _) =
        Worker::ready(&mock.base_url(), &[], json!({"tools": ["mcp__sh__*"], "mcp_servers": [server]})).await;
    let t = Instant::now();
    w.write(json!({"type": "send", "id": "slow", "message": "sleep"})).await;
    let (events, result) = w.result_for("slow").await;
    assert_eq!(result["response"], "gave up", "{result}");
    let end = event(&events, "tool_end");
    assert_eq!(end["is_error"], true);
    assert!(end["result_preview"].as_str().unwrap().contains("did not answer within 300 ms"), "{end}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    assert_eq!(until_gone(&slow).await, Vec::<String>::new());
}

#[tokio::test]
async fn mcp_servers_fail_the_init_clearly_and_die_with_pirn() {
    let mock = MockServer::start(vec![Reply::text(&["x"])]).await;
    // Only 0.3.0 clients may ask for MCP servers.
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let cfg = json!({"model": "m", "system_prompt": "s", "tools": [],
        "mcp_servers": [{"name": "x", "command": "true"}]});
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.2.0", "config": cfg})).await;
    let reply = w.next().await;
    assert!(
        reply["error"]["message"].as_str().unwrap().contains("mcp_servers needs protocol_version 0.3.0"),
        "{reply}"
    );
    // A server that cannot start is named in the init error.
    for (server, expect) in [
        (json!({"name": "gone", "command": "/nonexistent/mcp-server"}), "MCP server \"gone\""),
        (json!({"name": "notmcp", "command": "true"}), "MCP server \"notmcp\": initialize"),
        (
            json!({"name": "loud", "command": "sh", "args": ["-c", "echo boom: no API key >&2; exit 1"]}),
            "its stderr ends: boom: no API key",
        ),
        (json!({"name": "bad name"}), "server name \"bad name\""),
        (json!({"name": "both", "command": "x", "url": "http://127.0.0.1:1/mcp"}), "either command"),
        (json!({"name": "http", "url": "http://127.0.0.1:9/mcp"}), "MCP server \"http\""),
    ] {
        let mut w = Worker::spawn(&mock.base_url(), &[]).await;
        let mut cfg = cfg.clone();
        cfg["mcp_servers"] = json!([server]);
        w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0", "config": cfg})).await;
        let reply = w.next().await;
        let message = reply["error"]["message"].as_str().unwrap_or_default().to_owned();
        assert!(message.contains(expect), "{expect}: {reply}");
    }
    // SIGKILLed pirn: its server's supervisor takes the server down.
    let tag = tempfile::tempdir().unwrap();
    let marker = tag.path().to_str().unwrap().to_owned();
    let (mut w, _) =
        Worker::ready(&mock.base_url(), &[], json!({"tools": [], "mcp_servers": [pirn_mcp("k", "glob", tag.path())]}))
            .await;
    assert_eq!(processes_with(&marker).len(), 1);
    w.child.start_kill().unwrap();
    w.child.wait().await.unwrap();
    assert_eq!(until_gone(&marker).await, Vec::<String>::new());
}

/// Collects the progress notifications the server sends.
#[derive(Clone, Default)]
struct Progress(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.message.unwrap_or_default());
    }
}

pub fn mcp_transport(
    base: &str,
    token: Option<&str>,
) -> rmcp::transport::StreamableHttpClientTransport<reqwest::Client> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let mut config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"));
    if let Some(t) = token {
        config = config.auth_header(t);
    }
    rmcp::transport::StreamableHttpClientTransport::with_client(super::http::client(), config)
}

pub fn call(name: &'static str, args: Value) -> rmcp::model::CallToolRequestParams {
    let mut params = rmcp::model::CallToolRequestParams::new(name);
    params.arguments = args.as_object().cloned();
    params
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect()
}

#[tokio::test]
async fn pirn_serve_is_an_mcp_server_for_the_official_client() {
    use rmcp::ServiceExt;
    let mock = MockServer::start(vec![Reply::text(&["forty", "-two"]), Reply::text(&["still ", "42"])]).await;
    let d = super::http::daemon(&mock.base_url(), &["--token", "tk"]).await;
    // The daemon's token applies to /mcp as to every route.
    assert!(().serve(mcp_transport(&d.base, None)).await.is_err());
    assert!(().serve(mcp_transport(&d.base, Some("nope"))).await.is_err());
    let progress = Progress::default();
    let client = progress.clone().serve(mcp_transport(&d.base, Some("tk"))).await.unwrap();
    let tools: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(tools, ["pirn_run", "pirn_send"]);

    let run = client
        .call_tool(call("pirn_run", json!({"prompt": "what is 6*7?", "model": "mock-model", "tools": ["read_file"]})))
        .await
        .unwrap();
    assert_eq!(text_of(&run), "forty-two");
    assert_eq!(run.is_error, Some(false));
    let structured = run.structured_content.clone().unwrap();
    assert_eq!(structured["stop_reason"], "end_turn", "{structured}");
    let sid = structured["session_id"].as_str().unwrap().to_owned();
    assert_eq!(*progress.0.lock().unwrap(), ["forty", "-two"], "progress carries the streamed text");
    let first = &mock.requests()[0].body;
    assert_eq!(first["model"], "mock-model");
    assert_eq!(first["messages"].as_array().unwrap().last().unwrap()["content"], "what is 6*7?");

    // The run's session closed with it (its log kept); pirn_send continues
    // it from the log and closes it again. The REST API sees it stored.
    let c = super::http::client();
    let (status, _) = super::http::call(c.get(format!("{}/v1/sessions/{sid}", d.base)).bearer_auth("tk")).await;
    assert_eq!(status, 404, "not live after the run");
    let again = client.call_tool(call("pirn_send", json!({"session_id": sid, "message": "sure?"}))).await.unwrap();
    assert_eq!(text_of(&again), "still 42");
    assert_eq!(mock.requests()[1].body["messages"].as_array().unwrap().len(), 5, "with the listing note");
    let (status, body) =
        super::http::call(c.get(format!("{}/v1/sessions/{sid}/messages", d.base)).bearer_auth("tk")).await;
    assert_eq!(status, 200, "{body}");
    let (_, list) = super::http::call(c.get(format!("{}/v1/sessions", d.base)).bearer_auth("tk")).await;
    assert!(list.to_string().contains(&sid), "{list}");

    // Errors: an unknown session, bad arguments, an unknown tool.
    assert!(client.call_tool(call("pirn_send", json!({"session_id": "nope", "message": "x"}))).await.is_err());
    assert!(client.call_tool(call("pirn_run", json!({"prompt": 3}))).await.is_err());
    assert!(client.call_tool(call("pirn_fly", json!({}))).await.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_mcp_cancel_cancels_the_send_and_pirn_reaches_itself_over_http() {
    use rmcp::ServiceExt;
    let mock = MockServer::start(vec![Reply::Stall { chunks: vec!["thinking".into()] }]).await;
    let d = super::http::daemon(&mock.base_url(), &[]).await;
    let client = ().serve(mcp_transport(&d.base, None)).await.unwrap();
    let handle = client
        .peer()
        .send_cancellable_request(
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::Request::new(call(
                "pirn_run",
                json!({"prompt": "think", "model": "mock-model", "tools": []}),
            ))),
            rmcp::service::PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let c = super::http::client();
    let sessions = || async {
        let (_, body) = super::http::call(c.get(format!("{}/v1/sessions", d.base))).await;
        body["sessions"].as_array().cloned().unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !sessions().await.iter().any(|s| s["active"] == true) {
        assert!(Instant::now() < deadline, "the send never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    handle.cancel(Some("user stop".into())).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while sessions().await.iter().any(|s| s["active"] == true) {
        assert!(Instant::now() < deadline, "the send was not cancelled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    client.cancel().await.unwrap();

    // A session of one pirn using another pirn's /mcp as a Streamable HTTP
    // MCP server: the model calls mcp__peer__pirn_run.
    let mock2 = MockServer::start(vec![
        Reply::tool("mcp__peer__pirn_run", json!({"prompt": "inner task", "model": "mock-model", "tools": []})),
        Reply::text(&["inner answer"]),
        Reply::text(&["outer done"]),
    ])
    .await;
    let inner = super::http::daemon(&mock2.base_url(), &[]).await;
    let (mut w, _) = Worker::ready(
        &mock2.base_url(),
        &[],
        json!({"tools": ["mcp__peer__*"], "mcp_servers": [{"name": "peer", "url": format!("{}/mcp", inner.base)}]}),
    )
    .await;
    w.write(json!({"type": "send", "id": "s1", "message": "delegate"})).await;
    let (events, result) = w.result_for("s1").await;
    assert_eq!(result["response"], "outer done", "{result}");
    assert_eq!(event(&events, "tool_end")["result_preview"], "inner answer");
}

/// The MCP reference server's entry point (scripts/mcp-everything).
fn everything() -> Option<String> {
    counterpart("PIRN_TEST_MCP_EVERYTHING").map(|dir| format!("{dir}/dist/index.js"))
}

/// The reference server of the MCP project (TypeScript SDK) as a tool
/// source, over stdio and over Streamable HTTP.
#[tokio::test]
async fn the_mcp_reference_server_works_over_stdio_and_streamable_http() {
    let Some(index) = everything() else { return };
    // Streamable HTTP: the server on a free port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut http = tokio::process::Command::new("node")
        .args([index.as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(Instant::now() < deadline, "the reference server never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mock = MockServer::start(vec![
        Reply::tool("mcp__ev__echo", json!({"message": "over stdio"})),
        Reply::tool("mcp__ev__get-sum", json!({"a": 2, "b": 40})),
        Reply::tool("mcp__evh__echo", json!({"message": "over http"})),
        Reply::tool("mcp__ev__toggle-subscriber-updates", json!({})),
        Reply::text(&["done"]),
    ])
    .await;
    let config = json!({
        "tools": ["mcp__ev__echo", "mcp__ev__get-sum", "mcp__ev__toggle-*", "mcp__evh__echo"],
        "approval_mode": "suggest",
        "mcp_servers": [
            {"name": "ev", "command": "node", "args": [index, "stdio"]},
            {"name": "evh", "url": format!("http://127.0.0.1:{port}/mcp")},
        ],
    });
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], config).await;
    w.write(json!({"type": "send", "id": "s1", "message": "use the tools"})).await;
    let (events, result) = w.result_for("s1").await;
    assert_eq!(result["response"], "done", "{result}");
    let ends: Vec<(String, String)> = events
        .iter()
        .filter(|e| e["event"]["event"] == "tool_end")
        .map(|e| {
            (e["event"]["name"].as_str().unwrap().to_owned(), e["event"]["result_preview"].as_str().unwrap().to_owned())
        })
        .collect();
    assert_eq!(ends[0], ("mcp__ev__echo".to_owned(), "Echo: over stdio".to_owned()), "{ends:?}");
    assert_eq!(ends[2], ("mcp__evh__echo".to_owned(), "Echo: over http".to_owned()), "{ends:?}");
    assert!(ends[1].1.contains("42"), "{ends:?}");
    // echo and get-sum are marked read-only by their server: they ran unasked
    // in suggest mode; toggle-subscriber-updates is not, so it was asked and
    // denied (nobody answers permission requests here).
    let denied: Vec<&str> = events
        .iter()
        .filter(|e| e["event"]["event"] == "permission_denied")
        .map(|e| e["event"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(denied, ["mcp__ev__toggle-subscriber-updates"]);
    // The advertised schema is the server's own.
    let tools = mock.requests()[0].body["tools"].clone();
    let echo = tools.as_array().unwrap().iter().find(|t| t["function"]["name"] == "mcp__ev__echo").unwrap();
    assert_eq!(echo["function"]["parameters"]["properties"]["message"]["type"], "string");
    let _ = http.kill().await;
}
