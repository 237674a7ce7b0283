//! `pirn acp` through the binary, driven by the official ACP TypeScript SDK
//! (@agentclientprotocol/sdk from npm, `scripts/acp-client`; the driver is
//! tests/acp/drive.mjs) against the mock model; and at the JSON-RPC level
//! for what an SDK never sends (lines that are not JSON, unknown methods).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::mock::{MockServer, Reply};
use super::worker::{counterpart, pirn_command, test_home};

/// Runs the SDK driver with `script` against `mock`; its report.
pub(super) async fn drive(mock: &MockServer, script: Value) -> Value {
    let Some(sdk) = counterpart("PIRN_TEST_ACP_SDK") else { return Value::Null };
    let driver = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/drive.mjs");
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("node")
            .args([driver, &sdk, env!("CARGO_BIN_EXE_pirn"), &script.to_string()])
            .env("PIRN_BASE_URL", mock.base_url())
            .env("PIRN_HOME", test_home())
            .env_remove("PIRN_LOG")
            .output(),
    )
    .await
    .expect("the ACP client finishes within 60 s")
    .unwrap();
    assert!(out.status.success(), "node failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The `sessionUpdate` kinds of a report, in order.
fn kinds(report: &Value) -> Vec<String> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["update"]["sessionUpdate"].as_str().unwrap().to_owned())
        .collect()
}

pub(super) fn workspace(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

#[tokio::test]
async fn the_official_client_runs_a_prompt_with_tool_calls_and_a_diff() {
    let mock = MockServer::start(vec![
        Reply::tool("edit_file", json!({"file_path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})),
        Reply::text(&["Set x ", "to 2."]),
    ])
    .await;
    let ws = workspace(&[("a.py", "x = 1\n")]);
    let script = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "steps": [{"op": "new"}, {"op": "prompt", "text": "Set x to 2 in a.py."}],
    });
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    let init = &r["initialize"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(init["agentInfo"]["name"], "pirn");
    assert_eq!(init["authMethods"], json!([]));
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    // The model's edit, then its answer: pirn makes no calls of its own.
    assert_eq!(kinds(&r), ["tool_call", "tool_call_update", "agent_message_chunk", "agent_message_chunk"]);
    let updates = r["updates"].as_array().unwrap();
    let edit = &updates[0]["update"];
    assert_eq!(edit["kind"], "edit");
    assert_eq!(edit["status"], "in_progress");
    assert_eq!(edit["rawInput"]["new_string"], "x = 2");
    let path = ws.path().canonicalize().unwrap().join("a.py");
    assert_eq!(edit["locations"][0]["path"], path.to_str().unwrap());
    let done = &updates[1]["update"];
    assert_eq!(done["toolCallId"], edit["toolCallId"]);
    assert_eq!(done["status"], "completed");
    let diff = done["content"].as_array().unwrap().iter().find(|c| c["type"] == "diff").expect("a diff");
    assert_eq!(diff["oldText"], "x = 1\n");
    assert_eq!(diff["newText"], "x = 2\n");
    assert_eq!(diff["path"], path.to_str().unwrap());
    let text: String = updates[2..].iter().map(|u| u["update"]["content"]["text"].as_str().unwrap()).collect();
    assert_eq!(text, "Set x to 2.");
    assert_eq!(r["exitCode"], 0);
}

#[tokio::test]
async fn permissions_are_asked_and_always_is_remembered() {
    let write = |n: u32| Reply::tool("write_file", json!({"file_path": format!("f{n}.txt"), "content": "hi\n"}));
    let mock = MockServer::start(vec![write(1), write(2), Reply::text(&["Wrote both."])]).await;
    let ws = workspace(&[]);
    let script = json!({
        "cwd": ws.path(), "permission": "allow_always",
        "steps": [{"op": "new"}, {"op": "prompt", "text": "Write f1.txt and f2.txt."}],
    });
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    let asked = r["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "the second write is allowed by the remembered answer: {asked:?}");
    let kinds: Vec<&str> =
        asked[0]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert_eq!(asked[0]["toolCall"]["kind"], "edit");
    assert!(ws.path().join("f1.txt").exists() && ws.path().join("f2.txt").exists());

    // Rejected: the call fails, the model is told, the prompt still ends.
    let mock = MockServer::start(vec![write(1), Reply::text(&["I could not write it."])]).await;
    let ws = workspace(&[]);
    let script = json!({
        "cwd": ws.path(), "permission": "reject_once",
        "steps": [{"op": "new"}, {"op": "prompt", "text": "Write f1.txt."}],
    });
    let r = drive(&mock, script).await;
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    let failed = r["updates"].as_array().unwrap().iter().find(|u| u["update"]["sessionUpdate"] == "tool_call_update");
    assert_eq!(failed.unwrap()["update"]["status"], "failed");
    assert!(!ws.path().join("f1.txt").exists());
    let told = mock.requests()[1].body.to_string();
    assert!(told.contains("permission denied"), "the model is told: {told}");
}

#[tokio::test]
async fn cancel_answers_the_prompt_at_once_and_kills_the_command() {
    let mock = MockServer::start(vec![
        Reply::tool("bash", json!({"command": "sleep 30; echo never > late.txt"})),
        Reply::text(&["unused"]),
    ])
    .await;
    let ws = workspace(&[]);
    let script = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "steps": [{"op": "new"}, {"op": "prompt", "text": "Run the slow thing.", "cancelOn": "tool_call"}],
    });
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    let step = &r["steps"][1];
    assert_eq!(step["stopReason"], "cancelled", "{r}");
    assert!(step["cancelMs"].as_u64().unwrap() < 1000, "cancelled within a second: {step}");
    std::thread::sleep(Duration::from_millis(300));
    assert!(!ws.path().join("late.txt").exists(), "the command's process group was killed");
}

#[tokio::test]
async fn a_stored_session_is_loaded_and_replayed_then_listed() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "notes.txt"})),
        Reply::text(&["The notes say hi."]),
        Reply::text(&["Still hi."]),
    ])
    .await;
    let ws = workspace(&[("notes.txt", "hi\n")]);
    let first = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "steps": [{"op": "new"}, {"op": "prompt", "text": "What do the notes say?"}],
    });
    let r = drive(&mock, first).await;
    if r.is_null() {
        return;
    }
    let sid = r["steps"][0]["sessionId"].as_str().unwrap().to_owned();
    // A new process: the session comes back from the store, replayed first.
    let second = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "steps": [{"op": "load", "sessionId": sid}, {"op": "prompt", "text": "And now?"}, {"op": "list"}],
    });
    let r = drive(&mock, second).await;
    assert!(r["steps"][0].get("error").is_none(), "{r}");
    let before = r["steps"][0]["updatesBefore"].as_u64().unwrap() as usize;
    let replayed: Vec<String> = kinds(&r)[..before].to_vec();
    assert_eq!(replayed.first().map(String::as_str), Some("user_message_chunk"), "{replayed:?}");
    assert!(replayed.contains(&"tool_call".to_owned()) && replayed.contains(&"agent_message_chunk".to_owned()));
    let texts: Vec<&str> = r["updates"].as_array().unwrap()[..before]
        .iter()
        .filter_map(|u| u["update"]["content"]["text"].as_str())
        .collect();
    assert!(texts.contains(&"What do the notes say?") && texts.contains(&"The notes say hi."), "{texts:?}");
    assert_eq!(r["steps"][1]["stopReason"], "end_turn");
    let last = mock.requests().last().unwrap().body.to_string();
    assert!(last.contains("The notes say hi."), "the conversation continues: {last}");
    let listed = r["steps"][2]["result"]["sessions"].as_array().unwrap();
    assert!(listed.iter().any(|s| s["sessionId"] == sid.as_str()), "{listed:?}");
}

#[tokio::test]
async fn bad_lines_get_json_rpc_errors_and_the_connection_lives() {
    let mock = MockServer::start(vec![]).await;
    let mut child = pirn_command(&mock.base_url(), &[])
        .arg("acp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
        serde_json::from_str(&line).unwrap()
    };
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .await
        .unwrap();
    assert_eq!(next().await["result"]["protocolVersion"], 1);
    stdin.write_all(b"this is not json\n").await.unwrap();
    let e = next().await;
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert_eq!(e["id"], Value::Null);
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"no/such\",\"params\":{}}\n").await.unwrap();
    let e = next().await;
    assert_eq!((e["id"].clone(), e["error"]["code"].clone()), (json!(2), json!(-32601)), "{e}");
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"nope\",\"prompt\":[]}}\n").await.unwrap();
    let e = next().await;
    assert_eq!(e["id"], 3);
    assert!(e["error"].is_object(), "{e}");
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn file_tools_read_and_write_through_the_client_inside_the_workspace() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "app.py"})),
        Reply::tool("edit_file", json!({"file_path": "app.py", "old_string": "X = 2", "new_string": "X = 3"})),
        Reply::tool("read_file", json!({"file_path": "link/secret.txt"})),
        Reply::text(&["X is 3 now."]),
    ])
    .await;
    let ws = workspace(&[("app.py", "X = 1\n")]);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "outside\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).unwrap();
    let app = ws.path().canonicalize().unwrap().join("app.py");
    let app = app.to_str().unwrap();
    let script = json!({
        "cwd": ws.path(), "args": ["--approval-mode", "full-auto"],
        "capabilities": {"fs": {"readTextFile": true, "writeTextFile": true}},
        // The editor holds an unsaved change: X = 2, while the disk has X = 1.
        "files": {app: "X = 2\n"},
        "steps": [{"op": "new"}, {"op": "prompt", "text": "What is X? Then make it 3."}],
    });
    let r = drive(&mock, script).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["steps"][1]["stopReason"], "end_turn", "{r}");
    // The model saw the editor's buffer, not the disk.
    let reqs = mock.requests();
    let seen = reqs[1].body["messages"].to_string();
    assert!(seen.contains("X = 2") && !seen.contains("X = 1"), "{seen}");
    // The edit went to the editor; the disk is untouched.
    assert_eq!(r["editor"][app], "X = 3\n", "{r}");
    assert_eq!(std::fs::read_to_string(ws.path().join("app.py")).unwrap(), "X = 1\n");
    let writes: Vec<&Value> = r["fs"].as_array().unwrap().iter().filter(|c| c["op"] == "write").collect();
    assert_eq!(writes.len(), 1, "{r}");
    assert_eq!(writes[0]["path"], app);
    let updates = r["updates"].as_array().unwrap();
    let diff = updates
        .iter()
        .filter_map(|u| u["update"]["content"].as_array())
        .flatten()
        .find(|c| c["type"] == "diff")
        .expect("a diff");
    assert_eq!((diff["oldText"].as_str(), diff["newText"].as_str()), (Some("X = 2\n"), Some("X = 3\n")));
    // The symlink out of the workspace is refused before the client is asked.
    let fs_paths: Vec<&str> = r["fs"].as_array().unwrap().iter().map(|c| c["path"].as_str().unwrap()).collect();
    assert!(fs_paths.iter().all(|p| *p == app), "only app.py reached the client: {fs_paths:?}");
    let escaped = reqs[3].body["messages"].to_string();
    assert!(!escaped.contains("outside\\n"), "{escaped}");
}

#[tokio::test]
async fn session_fork_copies_a_stored_session_and_leaves_it() {
    let mock = MockServer::start(vec![
        Reply::text(&["The first answer."]),
        Reply::text(&["The fork's answer."]),
        Reply::text(&["The origin's answer."]),
    ])
    .await;
    let ws = workspace(&[]);
    let args = json!(["--approval-mode", "full-auto"]);
    let first = json!({"cwd": ws.path(), "args": args, "steps": [{"op": "new"}, {"op": "prompt", "text": "first"}]});
    let r = drive(&mock, first).await;
    if r.is_null() {
        return;
    }
    assert_eq!(r["initialize"]["agentCapabilities"]["sessionCapabilities"]["fork"], json!({}), "{}", r["initialize"]);
    let sid = r["steps"][0]["sessionId"].as_str().unwrap().to_owned();
    let second = json!({"cwd": ws.path(), "args": args, "steps": [
        {"op": "fork", "sessionId": sid}, {"op": "prompt", "text": "in the fork"},
        {"op": "load", "sessionId": sid}, {"op": "prompt", "text": "in the origin"},
    ]});
    let r = drive(&mock, second).await;
    let fork = r["steps"][0]["sessionId"].as_str().unwrap_or_default().to_owned();
    assert!(!fork.is_empty() && fork != sid, "{r}");
    let bodies: Vec<String> = mock.requests().iter().map(|q| q.body["messages"].to_string()).collect();
    assert!(bodies[1].contains("The first answer.") && bodies[1].contains("in the fork"), "{}", bodies[1]);
    assert!(!bodies[2].contains("in the fork"), "the origin never saw the fork's turn: {}", bodies[2]);
    assert!(bodies[2].contains("The first answer.") && bodies[2].contains("in the origin"));
}

/// `pirn acp` spoken to at the JSON-RPC level with `envs` (what an SDK
/// hides, `_meta` included, is seen), in workspace `ws`.
struct Rpc {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Rpc {
    fn start(mock: &MockServer, envs: &[(&str, &str)]) -> Rpc {
        let mut child = pirn_command(&mock.base_url(), envs)
            .args(["acp", "--approval-mode", "full-auto"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Rpc { _child: child, stdin, lines, next_id: 0 }
    }

    /// Calls `method`; its result, and the notifications before it.
    async fn call(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let mut notes = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line()).await.unwrap();
            let v: Value = serde_json::from_str(&line.unwrap().unwrap()).unwrap();
            if v["id"] == self.next_id {
                assert!(v.get("error").is_none(), "{method}: {v}");
                return (v["result"].clone(), notes);
            }
            notes.push(v);
        }
    }
}

#[tokio::test]
async fn the_profile_and_each_prompts_side_calls_are_in_meta() {
    let mock = MockServer::start(vec![Reply::text(&["It returns 1."])]).await;
    let ws = workspace(&[("app.py", "def f():\n    return 1\n")]);
    let mut rpc = Rpc::start(&mock, &[("PIRN_PROFILE", "small")]);
    let (init, _) = rpc.call("initialize", json!({"protocolVersion": 1})).await;
    assert_eq!(init["_meta"]["pirn"]["profile"], "small", "{init}");
    let (new, _) = rpc.call("session/new", json!({"cwd": ws.path(), "mcpServers": []})).await;
    assert_eq!(new["_meta"]["pirn"]["profile"], "small", "{new}");
    let prompt = json!({"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": "What does f return?"}]});
    let (answer, _) = rpc.call("session/prompt", prompt).await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    // The small profile read the request: one side call, apart from the turn.
    assert_eq!((mock.requests().len(), mock.readings().len()), (1, 1));
    let pirn = &answer["_meta"]["pirn"];
    assert_eq!((pirn["iterations"].as_u64(), pirn["side_calls"]["calls"].as_u64()), (Some(1), Some(1)), "{answer}");
}

#[tokio::test]
async fn a_compactions_summary_call_does_not_move_the_context_gauge() {
    let script: Vec<Reply> = (0..8).map(|i| Reply::text(&[&format!("answer {i}")])).collect();
    let mock = MockServer::start_windowed(script, 8_192, false).await;
    let ws = workspace(&[]);
    let mut rpc = Rpc::start(&mock, &[("PIRN_CONTEXT_WINDOW", "8192")]);
    rpc.call("initialize", json!({"protocolVersion": 1})).await;
    let (new, _) = rpc.call("session/new", json!({"cwd": ws.path(), "mcpServers": []})).await;
    assert_eq!(new["_meta"]["pirn"]["profile"], "exact", "{new}");
    let (mut used, mut side_calls) = (Vec::new(), 0);
    for i in 0..8 {
        let long: String = (0..50).map(|l| format!("turn {i} detail {l}: {}\n", "y".repeat(40))).collect();
        let prompt = json!({"sessionId": new["sessionId"], "prompt": [{"type": "text", "text": long}]});
        let (answer, notes) = rpc.call("session/prompt", prompt).await;
        assert_eq!(answer["_meta"]["pirn"]["iterations"], 1, "{answer}");
        side_calls += answer["_meta"]["pirn"]["side_calls"]["calls"].as_u64().unwrap_or(0);
        let gauge = notes.iter().map(|n| &n["params"]["update"]).filter(|u| u["sessionUpdate"] == "usage_update");
        used.extend(gauge.map(|u| (u["used"].as_u64().unwrap(), u["size"].as_u64().unwrap())));
    }
    let summary = |b: &Value| b["messages"][0]["content"].as_str().is_some_and(|c| c.starts_with("You condense"));
    let requests = mock.requests();
    let summaries: Vec<u64> = requests.iter().filter(|r| summary(&r.body)).map(|r| r.tokens).collect();
    assert!(!summaries.is_empty() && side_calls == summaries.len() as u64, "{side_calls} side calls: {summaries:?}");
    // Every turn's prompt shows; no summary's does (the mock reports each
    // request's own count as its usage).
    for turn in requests.iter().filter(|r| !summary(&r.body)) {
        assert!(used.contains(&(turn.tokens, 8_192)), "turn of {} tokens: {used:?}", turn.tokens);
    }
    assert!(summaries.iter().all(|s| !used.iter().any(|(u, _)| u == s)), "{summaries:?} in {used:?}");
}
