//! Golden transcripts (`fixtures/<case>/`) and the protocol schemas
//! (`protocol/*.schema.json`).
//!
//! A case holds `script.json` (the mock model's replies), `input.jsonl` (the
//! lines written to pirn, plus harness directives starting with `_`),
//! optional `env.json` and `files/` (copied into the workspace),
//! `expected.jsonl` (pirn's stdout) and `requests.json` (what pirn sent the
//! model), and `cassette.jsonl` (pirn's own recording of the model
//! exchanges, which `pirn conform` replays). Only fields that cannot be
//! deterministic are normalised (`pirn::transcript::Normalizer`, heartbeats
//! kept): session ids, latencies, heartbeat durations, the mock's port and
//! the workspace path.
//! `UPDATE_GOLDEN=1 cargo test golden` rewrites the expected files;
//! `UPDATE_SCHEMAS=1 cargo test schemas` rewrites the schemas from the Rust
//! types.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use pirn::cassette::normalize::without_workspace;
use pirn::transcript::Normalizer;

use super::mock::{MockServer, Reply};
use super::worker::Worker;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn protocol_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol")
}

fn cases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("input.jsonl").exists())
        .collect();
    dirs.sort();
    dirs
}

/// True when `line` contains every field of `want` (recursively).
fn contains(line: &Value, want: &Value) -> bool {
    match (line, want) {
        (Value::Object(l), Value::Object(w)) => w.iter().all(|(k, v)| l.get(k).is_some_and(|lv| contains(lv, v))),
        (l, w) => l == w,
    }
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs one case; returns its stdout and model requests, both normalised,
/// and the cassette pirn recorded (workspace path as `$WORKSPACE`).
async fn run_case(dir: &Path) -> (Vec<String>, Value, String) {
    let script: Vec<Reply> = serde_json::from_str(&std::fs::read_to_string(dir.join("script.json")).unwrap()).unwrap();
    let env: Vec<(String, String)> = std::fs::read_to_string(dir.join("env.json"))
        .ok()
        .map(|s| serde_json::from_str::<serde_json::Map<String, Value>>(&s).unwrap())
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap().to_owned()))
        .collect();
    // Every case is recorded, so that `pirn conform` can replay it.
    let tape_dir = tempfile::tempdir().unwrap();
    let tape = tape_dir.path().join("cassette.jsonl");
    let mut env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let tape_text = tape.display().to_string();
    env_refs.push(("PIRN_RECORD", &tape_text));
    // As `pirn conform` replays them: no session log (env.json may say otherwise).
    if !env.iter().any(|(k, _)| k == "PIRN_PERSIST") {
        env_refs.push(("PIRN_PERSIST", "0"));
    }
    let mock = MockServer::start(script).await;
    let mut w = Worker::spawn(&mock.base_url(), &env_refs).await;
    if dir.join("files").is_dir() {
        copy_dir(&dir.join("files"), w.workspace.path());
    }
    let input = std::fs::read_to_string(dir.join("input.jsonl")).unwrap();
    let mut read = 0usize;
    for line in input.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if let Some(want) = v.get("_wait") {
            let count = v.get("_count").and_then(Value::as_u64).unwrap_or(1) as usize;
            loop {
                let seen = w.seen[read..].iter().filter(|l| contains(l, want)).count();
                if seen >= count {
                    break;
                }
                w.next().await;
            }
        } else if let Some(ms) = v.get("_sleep_ms").and_then(Value::as_u64) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else if v.get("_close_stdin").is_some() {
            w.close_stdin();
        } else {
            // Written verbatim, so malformed lines can be part of a case.
            w.write_raw(format!("{line}\n").as_bytes()).await;
            read = w.seen.len();
        }
    }
    w.close_stdin();
    while w.try_next(Duration::from_secs(20)).await.is_some() {}
    assert!(w.exit_code().await.is_some());
    let ws = w.workspace.path().canonicalize().unwrap().display().to_string();
    let raw: String = w.seen.iter().map(|l| format!("{l}\n")).collect();
    let lines =
        Normalizer { workspaces: vec![ws.clone()], keep_heartbeats: true, ..Normalizer::default() }.normalize(&raw);
    let cassette = std::fs::read_to_string(&tape).unwrap_or_default().replace(&ws, "$WORKSPACE");
    let requests: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| {
            let tools: Vec<Value> = r.body["tools"]
                .as_array()
                .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect())
                .unwrap_or_default();
            json!({"model": r.body["model"], "messages": r.body["messages"], "tools": tools})
        })
        .collect();
    let requests: Vec<Value> = requests.iter().map(|r| without_workspace(r, Some(&ws))).collect();
    (lines, Value::Array(requests), cassette)
}

#[tokio::test]
async fn golden_transcripts() {
    let update = std::env::var("UPDATE_GOLDEN").is_ok();
    let all = cases();
    assert!(all.len() >= 7, "expected the golden cases, found {all:?}");
    let mut failures = Vec::new();
    for dir in all {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let (lines, requests, cassette) = run_case(&dir).await;
        let got: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let got_requests = serde_json::to_string_pretty(&requests).unwrap() + "\n";
        if update {
            std::fs::write(dir.join("expected.jsonl"), &got).unwrap();
            std::fs::write(dir.join("requests.json"), &got_requests).unwrap();
            std::fs::write(dir.join("cassette.jsonl"), &cassette).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(dir.join("expected.jsonl")).unwrap_or_default();
        let want_requests = std::fs::read_to_string(dir.join("requests.json")).unwrap_or_default();
        let want_lines: Vec<String> = want.lines().map(str::to_owned).collect();
        if want_lines != lines {
            failures.push(format!("{name}: stdout differs\n--- expected\n{want}--- got\n{got}"));
        }
        let want_req: Value = serde_json::from_str(&want_requests).unwrap_or(Value::Null);
        if want_req != requests {
            failures
                .push(format!("{name}: model requests differ\n--- expected\n{want_requests}--- got\n{got_requests}"));
        }
    }
    assert!(failures.is_empty(), "{}\n(UPDATE_GOLDEN=1 rewrites them after a reviewed change)", failures.join("\n"));
}

/// The events of protocol 0.2.0.
const EVENTS: &[&str] = &[
    "content_delta",
    "tool_start",
    "tool_end",
    "usage",
    "error",
    "permission_request",
    "permission_denied",
    "plan_complete",
    "heartbeat",
];

fn committed_schema(name: &str) -> Value {
    let path = protocol_dir().join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

#[test]
fn schemas_match_the_rust_types() {
    let generated = [
        ("request.schema.json", serde_json::to_value(schemars::schema_for!(pirn::wire::Request)).unwrap()),
        ("response.schema.json", serde_json::to_value(schemars::schema_for!(pirn::wire::OutgoingMessage)).unwrap()),
        ("cassette.schema.json", serde_json::to_value(schemars::schema_for!(pirn::cassette::Exchange)).unwrap()),
    ];
    for (name, schema) in generated {
        if std::env::var("UPDATE_SCHEMAS").is_ok() {
            std::fs::create_dir_all(protocol_dir()).unwrap();
            std::fs::write(protocol_dir().join(name), serde_json::to_string_pretty(&schema).unwrap() + "\n").unwrap();
            continue;
        }
        assert_eq!(
            committed_schema(name),
            schema,
            "protocol/{name} drifted from the Rust types (UPDATE_SCHEMAS=1 regenerates it)"
        );
    }
}

#[test]
fn schemas_cover_every_message_and_event() {
    let text = serde_json::to_string(&committed_schema("response.schema.json")).unwrap();
    for name in ["init_ok", "event", "result", "status_ok", "shutdown_ok"].iter().chain(EVENTS) {
        assert!(text.contains(&format!("\"{name}\"")), "response schema lacks {name}");
    }
    let text = serde_json::to_string(&committed_schema("request.schema.json")).unwrap();
    for name in ["init", "send", "status", "cancel", "shutdown"] {
        assert!(text.contains(&format!("\"{name}\"")), "request schema lacks {name}");
    }
}

/// Every line the golden runs produce (and every request they write) is
/// valid against the committed schemas; a wrong line is rejected.
#[tokio::test]
async fn golden_lines_validate_against_the_schemas() {
    let responses = jsonschema::validator_for(&committed_schema("response.schema.json")).unwrap();
    let requests = jsonschema::validator_for(&committed_schema("request.schema.json")).unwrap();
    let exchanges = jsonschema::validator_for(&committed_schema("cassette.schema.json")).unwrap();
    let mut checked = 0;
    for dir in cases() {
        for line in std::fs::read_to_string(dir.join("cassette.jsonl")).unwrap_or_default().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = exchanges.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: cassette line fails the schema: {errors:?}", dir.display());
            checked += 1;
        }
        for line in std::fs::read_to_string(dir.join("expected.jsonl")).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = responses.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{}: {line}\n{errors:?}", dir.display());
            checked += 1;
        }
        for line in std::fs::read_to_string(dir.join("input.jsonl")).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v.as_object().is_some_and(|o| o.keys().any(|k| k.starts_with('_')))
                || pirn::wire::decode_request(line.as_bytes()).is_err()
            {
                continue;
            }
            assert!(requests.is_valid(&v), "{}: request {line} fails the schema", dir.display());
        }
    }
    assert!(checked > 30, "only {checked} lines checked");
    let bad = [
        json!({"type":"event","event":{"event":"content_delta"},"event_seq":0,"send_id":"1"}),
        json!({"type":"result","id":"1","status":"maybe","tool_calls_made":[],"iterations":0}),
        json!({"type":"event","event":{"event":"content_delta","text":"x"},"send_id":"1"}),
    ];
    for b in bad {
        assert!(!responses.is_valid(&b), "schema accepted {b}");
    }
}

/// `protocol/protocol.md` describes every event, error code, stop reason and
/// request the schemas define.
#[test]
fn the_protocol_document_names_everything_the_schemas_define() {
    let doc = std::fs::read_to_string(protocol_dir().join("protocol.md")).unwrap();
    let schema = serde_json::to_string(&committed_schema("response.schema.json")).unwrap();
    let mut names: Vec<&str> = EVENTS.to_vec();
    names.extend([
        "retry",
        "context_prune",
        "context_compact",
        "provider_error",
        "protocol_error",
        "protocol_version_mismatch",
        "loop_detected",
        "cancelled",
        "max_iterations",
        "queue_timeout",
        "internal_error",
        "context_overflow",
        "end_turn",
        "stop_reason",
        "call_id",
        "is_error",
        "duration_ms",
        "queue_length",
        "cached_tokens",
        "permission_response",
    ]);
    names.sort();
    for name in names {
        assert!(doc.contains(&format!("`{name}`")), "protocol.md does not describe `{name}`");
        if name != "permission_response" {
            assert!(schema.contains(&format!("\"{name}\"")), "the response schema lacks {name}");
        }
    }
}
