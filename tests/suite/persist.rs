//! Sessions that outlive their process, through the binary: resume on
//! stdio after a shutdown and after `kill -9`, `pirn run --resume`,
//! `pirn sessions`, and the HTTP side (stored listing, `messages?since`,
//! SSE replay from the log, resume over HTTP).

use std::process::Stdio;

use serde_json::{Value, json};

use super::http::{SseReader, call, client, daemon, post};
use super::mock::{MockServer, Reply};
use super::worker::{Worker, pirn_command, test_home};

/// The `content` strings of a recorded chat request's messages, with roles.
fn conversation(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Null => format!("calls {}", m["tool_calls"]),
                other => other.to_string(),
            };
            (m["role"].as_str().unwrap().to_owned(), text)
        })
        .collect()
}

fn chat_requests(mock: &MockServer) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body).collect()
}

#[tokio::test]
async fn a_session_resumed_in_a_new_process_carries_its_earlier_turns() {
    let mock = MockServer::start(vec![Reply::text(&["Noted: 42."]), Reply::text(&["It was 42."])]).await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type": "send", "id": "1", "message": "Remember the number 42."})).await;
    let (_, r) = w.result_for("1").await;
    assert_eq!(r["status"], "ok", "{r}");
    w.write(json!({"type": "shutdown", "id": "2"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));

    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": sid})).await;
    assert_eq!(ok["session_id"], sid.as_str(), "init_ok names the resumed session");
    let st = w.status("s").await;
    assert_eq!(st["messages_count"], 4, "system prompt, listing note, user, assistant: {st}");
    assert!(st.get("interrupted").is_none(), "{st}");
    w.write(json!({"type": "send", "id": "1", "message": "Which number?"})).await;
    let (events, r) = w.result_for("1").await;
    assert_eq!(r["response"], "It was 42.");
    assert!(events.iter().all(|e| e["session_id"] == sid.as_str()));
    let second = &chat_requests(&mock)[1];
    let turns = conversation(second);
    let roles: Vec<&str> = turns.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "user"], "{turns:?}");
    assert!(turns[1].1.starts_with("[pirn] The workspace is"), "the listing note: {turns:?}");
    assert_eq!(turns[2].1, "Remember the number 42.");
    assert_eq!(turns[3].1, "Noted: 42.");

    // A 0.2.0 client cannot resume (the field is 0.3.0), and an unknown id is refused.
    let w2 = Worker::spawn(&mock.base_url(), &[]).await;
    let mut w2 = w2;
    w2.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0",
        "config": {"model": "m", "system_prompt": "", "tools": [], "resume_session_id": "no-such-session"}}))
        .await;
    let refused = w2.next().await;
    assert_eq!((refused["type"].as_str(), refused["error"]["code"].as_str()), (Some("result"), Some("protocol_error")));
    assert!(refused["error"]["message"].as_str().unwrap().contains("no stored session"), "{refused}");
}

#[tokio::test]
async fn resume_keeps_the_system_prompt_without_a_workspace_listing() {
    let mock = MockServer::start(vec![Reply::text(&["Noted."]), Reply::text(&["Yes."])]).await;
    let quiet = json!({"workspace_listing": false});
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], quiet.clone()).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type": "send", "id": "1", "message": "Remember 7."})).await;
    assert_eq!(w.result_for("1").await.1["status"], "ok");
    w.write(json!({"type": "shutdown", "id": "2"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    // The log is closed as the process exits, after `shutdown_ok`: resume
    // once it has.
    assert_eq!(w.exit_code().await, Some(0));
    let mut resume = quiet;
    resume["resume_session_id"] = json!(sid);
    resume["system_prompt"] = json!("A different prompt that must not replace the stored one.");
    let (mut w, _) = Worker::ready(&mock.base_url(), &[], resume).await;
    w.write(json!({"type": "send", "id": "3", "message": "Still there?"})).await;
    assert_eq!(w.result_for("3").await.1["status"], "ok");
    let turns = conversation(&chat_requests(&mock)[1]);
    assert_eq!(turns[0], ("system".to_owned(), "You are a test.".to_owned()), "{turns:?}");
    assert_eq!(turns.len(), 4, "{turns:?}");
}

#[tokio::test]
async fn after_kill_9_mid_send_the_history_is_intact_and_the_send_reported_interrupted() {
    let mock = MockServer::start(vec![
        Reply::tool("read_file", json!({"file_path": "notes.txt"})),
        Reply::Stall { chunks: vec!["Half an ans".into()] },
        Reply::text(&["Resumed."]),
    ])
    .await;
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"preflight": false})).await;
    std::fs::write(w.workspace.path().join("notes.txt"), "the notes\n").unwrap();
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    w.write(json!({"type": "send", "id": "7", "message": "Summarise notes.txt"})).await;
    // The second model call streams, then stalls: the tool round is committed.
    w.until(|v| v["event"]["event"] == "content_delta").await;
    w.child.kill().await.unwrap();

    let path = test_home().join("sessions/default").join(format!("{sid}.jsonl"));
    let log = std::fs::read_to_string(&path).unwrap();
    assert!(log.ends_with('\n'), "every entry is whole");

    let (mut w, _) = Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": sid})).await;
    let st = w.status("s").await;
    assert_eq!(st["interrupted"], json!(["7"]), "{st}");
    w.write(json!({"type": "send", "id": "8", "message": "Go on."})).await;
    let (_, r) = w.result_for("8").await;
    assert_eq!(r["response"], "Resumed.");
    let turns = conversation(&chat_requests(&mock)[2]);
    let roles: Vec<&str> = turns.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "tool", "user", "user"], "{turns:#?}");
    assert!(turns[4].1.contains("the notes"), "the tool result survived: {turns:?}");
    assert!(turns[5].1.starts_with("[pirn] The previous request was interrupted"), "{turns:?}");
    assert_eq!(turns[6].1, "Go on.");
}

/// Runs `pirn ARGS` to its end with the tests' home and `base` as the model.
pub fn pirn_sync(base: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_pirn"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PIRN_HOME", test_home())
        .env("PIRN_BASE_URL", base)
        .args(args)
        .stdin(Stdio::null());
    cmd.output().unwrap()
}

#[tokio::test]
async fn run_resume_and_the_sessions_command() {
    let mock = MockServer::start(vec![Reply::text(&["First answer."]), Reply::text(&["Second answer."])]).await;
    let base = mock.base_url();
    let dir = tempfile::tempdir().unwrap();
    let out = pirn_command(&base, &[])
        .args(["run", "--cwd", dir.path().to_str().unwrap(), "A very particular first question"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let first: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let sid = first["session_id"].as_str().unwrap().to_owned();
    let base2 = base.clone();
    let sid2 = sid.clone();
    let out =
        tokio::task::spawn_blocking(move || pirn_sync(&base2, &["run", "--resume", &sid2, "And then?"])).await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(conversation(&chat_requests(&mock)[1]).len(), 5, "system, listing, question, answer, follow-up");

    let list = String::from_utf8(pirn_sync(&base, &["sessions", "list"]).stdout).unwrap();
    let line = list.lines().find(|l| l.starts_with(&sid)).unwrap_or_else(|| panic!("{list}"));
    assert!(line.contains("A very particular first question") && line.contains("local"), "{line}");
    let json: Value = serde_json::from_slice(&pirn_sync(&base, &["sessions", "list", "--json"]).stdout).unwrap();
    assert!(json.as_array().unwrap().iter().any(|s| s["session_id"] == sid.as_str() && s["live"] == false));
    let show = String::from_utf8(pirn_sync(&base, &["sessions", "show", &sid]).stdout).unwrap();
    assert!(show.contains("[user]\nA very particular first question") && show.contains("Second answer."), "{show}");
    let export = String::from_utf8(pirn_sync(&base, &["sessions", "export", &sid]).stdout).unwrap();
    let kinds: Vec<String> = export
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["body"]["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("meta"));
    assert!(kinds.contains(&"resume".to_owned()) && kinds.iter().filter(|k| *k == "send").count() == 2, "{kinds:?}");
    assert_eq!(pirn_sync(&base, &["sessions", "rm", &sid]).status.code(), Some(0));
    assert_eq!(pirn_sync(&base, &["sessions", "rm", &sid]).status.code(), Some(1));
    assert_eq!(pirn_sync(&base, &["sessions", "show", &sid]).status.code(), Some(1));
    let off = pirn_command(&base, &[("PIRN_PERSIST", "0")]).args(["run", "--resume", &sid, "x"]).output().await;
    assert_eq!(off.unwrap().status.code(), Some(2), "resume with persistence off is a usage error");
}

#[tokio::test]
async fn http_lists_stored_sessions_serves_history_and_replays_evicted_frames_from_the_log() {
    let many: Vec<String> = (0..5000).map(|i| format!("{i} ")).collect();
    let mock = MockServer::start(vec![
        Reply::text(&["a", "b", "c"]),
        Reply::Text { chunks: many, usage: None, delay_ms: 0, finish_reason: None },
        Reply::text(&["after resume"]),
    ])
    .await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let cfg = json!({"model": "mock-model", "system_prompt": "s", "tools": []});
    let (s, b) = post(&c, &format!("{}/v1/sessions", d.base), cfg).await;
    assert_eq!(s, 201);
    let sid = b["session_id"].as_str().unwrap().to_owned();
    let sessions = |c: &reqwest::Client| {
        let url = format!("{}/v1/sessions", d.base);
        let c = c.clone();
        async move { call(c.get(url)).await.1["sessions"].clone() }
    };
    let url = |p: &str| format!("{}/v1/sessions/{sid}{p}", d.base);
    let mut all = SseReader::new(c.get(url("/events")).send().await.unwrap());
    for (send, message) in [("s1", "first question"), ("s2", "count")] {
        post(&c, &url("/sends"), json!({"message": message, "send_id": send})).await;
        all.until_result(send).await;
    }
    // Frame 1 left the 4096-frame ring; the log still has it.
    let mut replay = SseReader::new(c.get(url("/events")).header("Last-Event-ID", "1").send().await.unwrap());
    let first = replay.next().await.unwrap();
    assert_eq!((first.id, first.event.as_str()), (Some(2), "content_delta"));
    assert_eq!(first.data["event"]["text"], "b");

    let list = sessions(&c).await;
    let me = list.as_array().unwrap().iter().find(|s| s["session_id"] == sid.as_str()).unwrap().clone();
    assert_eq!((me["live"].as_bool(), me["title"].as_str()), (Some(true), Some("first question")), "{me}");

    let h = call(c.get(url("/messages?since=0"))).await.1;
    let roles: Vec<&str> = h["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "user", "assistant", "user", "assistant"], "with the listing note");
    let total = h["events"].as_array().unwrap().len() as u64;
    assert_eq!(total, 5 + 5001, "every frame of both sends");
    let tail = call(c.get(url(&format!("/messages?since={}", total - 2)))).await.1;
    assert_eq!(tail["events"].as_array().unwrap().len(), 2);
    assert!(tail.get("messages").is_none());
    assert_eq!(c.get(format!("{}/v1/sessions/nope/messages", d.base)).send().await.unwrap().status(), 404);

    // Closed: listed as stored, and resumable over HTTP.
    assert_eq!(c.delete(url("")).send().await.unwrap().status(), 204);
    let me = sessions(&c).await.as_array().unwrap().iter().find(|s| s["session_id"] == sid.as_str()).cloned();
    assert_eq!(me.unwrap()["live"], false);
    // Not live here: SSE replays from the log.
    let last = (total - 1).to_string();
    let mut stored = SseReader::new(c.get(url("/events")).header("Last-Event-ID", last).send().await.unwrap());
    let f = stored.next().await.unwrap();
    assert_eq!((f.id, f.event.as_str(), f.data["id"].as_str()), (Some(total), "result", Some("s2")));
    let future = c.get(url("/events")).header("Last-Event-ID", (total + 5).to_string()).send().await.unwrap();
    assert_eq!(future.status(), 400, "an id the log never had");
    let (s, b) = post(&c, &format!("{}/v1/sessions", d.base), json!({"resume": sid})).await;
    assert_eq!((s, b["session_id"].as_str()), (201, Some(sid.as_str())), "{b}");
    let (s, _) = post(&c, &format!("{}/v1/sessions", d.base), json!({"resume": sid})).await;
    assert_eq!(s, 409, "already live here");
    let mut live = SseReader::new(c.get(url("/events")).send().await.unwrap());
    post(&c, &url("/sends"), json!({"message": "more", "send_id": "s3"})).await;
    let frames = live.until_result("s3").await;
    assert!(frames[0].id.unwrap() > total, "frame ids continue after the stored ones: {:?}", frames[0].id);
    assert_eq!(conversation(&chat_requests(&mock)[2]).len(), 7, "with the listing note");
    assert_eq!(c.delete(url("?purge=true")).send().await.unwrap().status(), 204);
    assert_eq!(c.get(url("/messages")).send().await.unwrap().status(), 404);
    assert_eq!(c.delete(url("")).send().await.unwrap().status(), 404);
}
