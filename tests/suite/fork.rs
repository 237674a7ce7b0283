//! Forks, through the binary and the store: a 0.3.0 `init` with
//! `fork_session` at message 3 of 6, both sessions continued on their own;
//! a cut without a fork; `pirn run --fork-session`, `pirn sessions fork`,
//! the Claude surface's `--fork-session`, `POST /v1/sessions/{id}/fork`;
//! the fork on both store back ends.

use std::process::Stdio;

use serde_json::{Value, json};

use super::http::{client, daemon, post};
use super::mock::{MockServer, Reply};
use super::worker::{Worker, pirn_command, test_home};

fn chat_requests(mock: &MockServer) -> Vec<Value> {
    mock.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).map(|r| r.body).collect()
}

/// The `(role, text)` of each message of a recorded chat request.
fn turns(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_owned(), m["content"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

fn log_of(sid: &str) -> std::path::PathBuf {
    test_home().join("sessions/default").join(format!("{sid}.jsonl"))
}

/// A stored session of three sends (six messages after the system prompt),
/// its id, and the worker's exit.
async fn six_messages(mock: &MockServer) -> String {
    let (mut w, ok) = Worker::ready(&mock.base_url(), &[], json!({"workspace_listing": false})).await;
    let sid = ok["session_id"].as_str().unwrap().to_owned();
    for (id, m) in [("1", "one"), ("2", "two"), ("3", "three")] {
        w.write(json!({"type": "send", "id": id, "message": m})).await;
        assert_eq!(w.result_for(id).await.1["status"], "ok");
    }
    w.write(json!({"type": "shutdown", "id": "x"})).await;
    w.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(w.exit_code().await, Some(0));
    sid
}

#[tokio::test]
async fn a_fork_at_message_3_of_6_and_its_origin_go_on_independently() {
    let answers = ["A1", "A2", "A3", "fork answer", "origin answer", "fork again"];
    let mock = MockServer::start(answers.iter().map(|a| Reply::text(&[a])).collect()).await;
    let sid = six_messages(&mock).await;
    let before = std::fs::read(log_of(&sid)).unwrap();

    let at3 =
        json!({"workspace_listing": false, "resume_session_id": sid, "fork_session": true, "resume_at_message": 3});
    let (mut f, ok) = Worker::ready(&mock.base_url(), &[], at3).await;
    let fid = ok["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fid, sid, "a fork has its own id");
    assert_eq!(f.status("s").await["messages_count"], 4, "system prompt and three messages");
    f.write(json!({"type": "send", "id": "4", "message": "fork question"})).await;
    let (events, r) = f.result_for("4").await;
    assert_eq!(r["response"], "fork answer");
    assert!(events.iter().all(|e| e["session_id"] == fid.as_str()));
    let sent = turns(&chat_requests(&mock)[3]);
    let texts: Vec<&str> = sent.iter().skip(1).map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["one", "A1", "two", "fork question"], "{sent:?}");
    assert_eq!(std::fs::read(log_of(&sid)).unwrap(), before, "the origin's log is not touched");

    // The origin goes on with all six messages, not the fork's.
    let (mut o, ok) = Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": sid})).await;
    assert_eq!(ok["session_id"], sid.as_str());
    o.write(json!({"type": "send", "id": "5", "message": "origin question"})).await;
    assert_eq!(o.result_for("5").await.1["response"], "origin answer");
    let texts: Vec<String> = turns(&chat_requests(&mock)[4]).into_iter().skip(1).map(|(_, t)| t).collect();
    assert_eq!(texts, ["one", "A1", "two", "A2", "three", "A3", "origin question"]);

    // The fork is stored like any session: a new process resumes it,
    // with its own send and not the origin's.
    f.write(json!({"type": "shutdown", "id": "x"})).await;
    f.until(|v| v["type"] == "shutdown_ok").await;
    assert_eq!(f.exit_code().await, Some(0));
    let (mut f2, _) = Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": fid})).await;
    f2.write(json!({"type": "send", "id": "6", "message": "again"})).await;
    assert_eq!(f2.result_for("6").await.1["response"], "fork again");
    let texts: Vec<String> = turns(&chat_requests(&mock)[5]).into_iter().skip(1).map(|(_, t)| t).collect();
    assert_eq!(texts, ["one", "A1", "two", "fork question", "fork answer", "again"]);
    let meta: Value =
        serde_json::from_str(std::fs::read_to_string(log_of(&fid)).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(meta["body"]["forked_from"], json!({"session_id": sid, "at_message": 3}), "{meta}");

    // A message the session does not hold is refused, naming how many it holds.
    let refused =
        refused_init(&mock, json!({"resume_session_id": sid, "fork_session": true, "resume_at_message": 99})).await;
    assert!(refused.contains("holds 8 messages") && refused.contains("99"), "{refused}");
    let refused = refused_init(&mock, json!({"fork_session": true})).await;
    assert!(refused.contains("resume_session_id"), "{refused}");
}

/// The error message of an `init` with `extra` in its config that pirn refuses.
async fn refused_init(mock: &MockServer, extra: Value) -> String {
    let mut w = Worker::spawn(&mock.base_url(), &[]).await;
    let mut config = json!({"model": "m", "system_prompt": "", "tools": []});
    config.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    w.write(json!({"type": "init", "id": "i", "protocol_version": "0.3.0", "config": config})).await;
    let refused = w.next().await;
    assert_eq!(refused["type"], "result", "{refused}");
    refused["error"]["message"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_cut_without_a_fork_drops_the_later_messages_of_the_session_itself() {
    let mock = MockServer::start(["A1", "A2", "A3", "after the cut"].iter().map(|a| Reply::text(&[a])).collect()).await;
    let sid = six_messages(&mock).await;
    let (mut w, ok) =
        Worker::ready(&mock.base_url(), &[], json!({"resume_session_id": sid, "resume_at_message": 2})).await;
    assert_eq!(ok["session_id"], sid.as_str(), "the same session");
    w.write(json!({"type": "send", "id": "4", "message": "next"})).await;
    assert_eq!(w.result_for("4").await.1["response"], "after the cut");
    let texts: Vec<String> = turns(&chat_requests(&mock)[3]).into_iter().skip(1).map(|(_, t)| t).collect();
    assert_eq!(texts, ["one", "A1", "next"]);
}

#[tokio::test]
async fn pirn_run_the_sessions_command_and_the_claude_surface_fork() {
    let mock =
        MockServer::start(["A1", "A2", "A3", "run fork", "claude fork"].iter().map(|a| Reply::text(&[a])).collect())
            .await;
    let sid = six_messages(&mock).await;
    let before = std::fs::read(log_of(&sid)).unwrap();

    // `pirn sessions fork --at 2 --json`: the new id and where it came from.
    let out = pirn_command(&mock.base_url(), &[])
        .args(["sessions", "fork", &sid, "--at", "2", "--json"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let forked: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(forked["forked_from"], json!({"session_id": sid, "at_message": 2}));
    let fid = forked["session_id"].as_str().unwrap();
    let show = pirn_command(&mock.base_url(), &[]).args(["sessions", "show", fid]).output().await.unwrap();
    let show = String::from_utf8_lossy(&show.stdout);
    assert!(show.contains("one") && show.contains("A1") && !show.contains("two"), "{show}");
    let bad = pirn_command(&mock.base_url(), &[]).args(["sessions", "fork", &sid, "--at", "7"]).output().await.unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("holds 6 messages"), "{bad:?}");

    // `pirn run --resume ID --fork-session`: a new session id, the whole conversation.
    let dir = tempfile::tempdir().unwrap();
    let out = pirn_command(&mock.base_url(), &[])
        .args(["run", "--cwd", dir.path().to_str().unwrap(), "--format", "jsonl"])
        .args(["--resume", &sid, "--fork-session", "forked question"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["response"], "run fork", "{lines:?}");
    assert_ne!(result["session_id"], sid.as_str());
    let texts: Vec<String> = turns(&chat_requests(&mock)[3]).into_iter().map(|(_, t)| t).collect();
    assert!(texts.iter().any(|t| t == "A3") && texts.last().unwrap() == "forked question", "{texts:?}");

    // Claude Code's `--resume ID --fork-session`: the system init names a new session.
    let out = pirn_command(&mock.base_url(), &[])
        .args(["-p", "claude question", "--output-format", "stream-json", "--verbose"])
        .args(["--resume", &sid, "--fork-session"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let lines: Vec<Value> =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let init = lines.iter().find(|l| l["type"] == "system").unwrap();
    let result = lines.iter().find(|l| l["type"] == "result").unwrap();
    assert_ne!(init["session_id"], sid.as_str(), "{init}");
    assert_eq!(result["result"], "claude fork", "{result}");
    let texts: Vec<String> = turns(&chat_requests(&mock)[4]).into_iter().map(|(_, t)| t).collect();
    assert!(texts.iter().any(|t| t == "A3") && !texts.iter().any(|t| t == "forked question"), "{texts:?}");
    assert_eq!(std::fs::read(log_of(&sid)).unwrap(), before, "no fork touched the origin");
}

#[tokio::test]
async fn the_http_fork_route_opens_a_live_fork() {
    let mock = MockServer::start(["A1", "A2", "A3", "http fork"].iter().map(|a| Reply::text(&[a])).collect()).await;
    let sid = six_messages(&mock).await;
    let d = daemon(&mock.base_url(), &[]).await;
    let c = client();
    let url = format!("{}/v1/sessions/{sid}/fork", d.base);
    let (s, b) = post(&c, &url, json!({"at_message": 99})).await;
    assert_eq!((s, b["error"].as_str()), (400, Some("NO_SUCH_MESSAGE")), "{b}");
    let (s, _) = post(&c, &format!("{}/v1/sessions/no-such/fork", d.base), json!({})).await;
    assert_eq!(s, 404);
    let (s, b) = post(&c, &url, json!({"at_message": 4})).await;
    assert_eq!(s, 201, "{b}");
    let fid = b["session_id"].as_str().unwrap().to_owned();
    assert_ne!(fid, sid);
    let (s, _) =
        post(&c, &format!("{}/v1/sessions/{fid}/sends", d.base), json!({"message": "via http", "send_id": "h"})).await;
    assert_eq!(s, 202);
    for _ in 0..200 {
        if chat_requests(&mock).len() == 4 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let texts: Vec<String> = turns(&chat_requests(&mock)[3]).into_iter().skip(1).map(|(_, t)| t).collect();
    assert_eq!(texts, ["one", "A1", "two", "A2", "via http"]);
}

#[tokio::test]
async fn a_fork_on_each_store_back_end_copies_and_leaves_the_origin() {
    use pirn::session::fork::fork_stored;
    use pirn::store::{Body, NewEntry, Store};
    let dir = tempfile::tempdir().unwrap();
    let mut backends = vec![dir.path().display().to_string()];
    backends.extend(super::store::postgres_url());
    for url in backends {
        let tenant = super::store::tenant();
        let vars = [("PIRN_STORE", url.clone()), ("PIRN_TENANT", tenant)];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        let store: Store = Store::from_env(&get).await.unwrap().unwrap();
        let meta = Body::Meta {
            session_id: "o".into(),
            protocol_version: "0.3.0".into(),
            model: "m".into(),
            workspace: "/w".into(),
            config: json!({"model": "m"}),
            forked_from: None,
        };
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": "{}"}}]});
        let bodies = [
            meta,
            Body::Message { message: json!({"role": "system", "content": "s"}) },
            Body::Message { message: json!({"role": "user", "content": "u"}) },
            Body::Message { message: call },
            Body::Message { message: json!({"role": "tool", "tool_call_id": "c1", "content": "r"}) },
        ];
        let entries: Vec<NewEntry> =
            bodies.iter().enumerate().map(|(n, b)| NewEntry::new(n as u64, 1, b).unwrap()).collect();
        store.append("o", None, "w", entries.into(), true).await.unwrap();
        let before = store.load("o", 0).await.unwrap();
        let forked = fork_stored(&store, "o", Some(2), "f", None).await.unwrap();
        assert_eq!(forked.forked_from.at_message, 3, "{url}: the cut call got a result of its own");
        assert_eq!(store.load("o", 0).await.unwrap(), before, "{url}");
        let folded = pirn::store::fold::fold(&store.load("f", 0).await.unwrap());
        assert_eq!(folded.model, "m");
        let last = serde_json::to_value(folded.messages.last().unwrap()).unwrap();
        assert_eq!(last["tool_call_id"], "c1", "{url}");
        assert!(last["content"].as_str().unwrap().contains("no result: the conversation was cut"), "{last}");
        assert!(fork_stored(&store, "o", None, "f", None).await.is_err(), "{url}: the id is taken");
    }
}
