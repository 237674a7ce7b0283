//! The HTTP API's OpenAPI document (`protocol/openapi.json`): generated
//! from the handlers and body types, served at `GET /openapi.json`, every
//! route in it and no other, the daemon's real answers valid against it,
//! and a client generated from it by a standard generator working.

use serde_json::{Value, json};

use super::http::{call, client, daemon, new_session, post};
use super::mock::{MockServer, Reply};

fn committed_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("protocol/openapi.json")
}

fn generated() -> Value {
    serde_json::from_str(pirn::transport::http::openapi::document_json()).unwrap()
}

#[test]
fn the_committed_document_is_the_generated_one() {
    let text = pirn::transport::http::openapi::document_json();
    if std::env::var("UPDATE_SCHEMAS").is_ok() {
        std::fs::write(committed_path(), text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(committed_path()).unwrap();
    assert!(
        committed == text,
        "protocol/openapi.json drifted from the handlers and wire::http types (UPDATE_SCHEMAS=1 cargo test regenerates it)"
    );
    let doc = generated();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
}

#[test]
fn the_document_lists_exactly_the_routes() {
    let doc = generated();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in
            ops.as_object().unwrap().keys().filter(|k| ["get", "post", "delete", "put", "patch"].contains(&k.as_str()))
        {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    documented.sort();
    let mut served: Vec<(String, String)> =
        pirn::transport::http::ROUTES.iter().map(|(m, p)| (m.to_string(), p.to_string())).collect();
    served.sort();
    assert_eq!(documented, served);
    // Every operation has its own id (generators name functions by them).
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|ops| ops.as_object().unwrap().values().filter_map(|op| op["operationId"].as_str()))
        .collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!((ids.len(), n), (documented.len(), documented.len()), "operationIds are unique and on every operation");
}

/// The document's components with every object schema closed
/// (`additionalProperties: false` where it says nothing): a field a
/// handler sends that the document does not name fails validation.
fn strict_components(doc: &Value) -> Value {
    fn close(v: &mut Value) {
        match v {
            Value::Object(m) => {
                let is_object = m
                    .get("type")
                    .is_some_and(|t| t == "object" || t.as_array().is_some_and(|a| a.contains(&json!("object"))));
                if is_object && m.contains_key("properties") && !m.contains_key("additionalProperties") {
                    m.insert("additionalProperties".into(), Value::Bool(false));
                }
                m.values_mut().for_each(close);
            }
            Value::Array(a) => a.iter_mut().for_each(close),
            _ => {}
        }
    }
    let mut components = doc["components"].clone();
    close(&mut components);
    components
}

/// Checks `body`, the answer of `method path` with `status`, against the
/// document: the status is documented and the body valid against its schema.
fn check(doc: &Value, components: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    assert!(!response.is_null(), "{method} {path} answered {status}, which the document does not list: {body}");
    let schema = &response["content"]["application/json"]["schema"];
    if schema.is_null() {
        assert!(body.is_null(), "{method} {path} {status}: no body documented, got {body}");
        return;
    }
    let root = json!({"allOf": [schema], "components": components});
    let validator = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = validator.iter_errors(body).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{method} {path} {status}: {errors:?}\nbody: {body}");
}

/// The daemon's real answers, route by route, are valid against the
/// document it serves (which is the committed one).
#[tokio::test]
async fn real_answers_match_the_document() {
    let mock = MockServer::start(vec![Reply::text(&["hello"])]).await;
    let d = daemon(&mock.base_url(), &["--terminals"]).await;
    let c = client();
    let served: Value = c.get(format!("{}/openapi.json", d.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(served, generated(), "GET /openapi.json serves the generated document");
    let doc = served;
    let components = strict_components(&doc);
    let base = d.base.clone();
    let get = |p: &str| c.get(format!("{base}{p}"));
    let check = |m: &str, p: &str, (status, body): (u16, Value)| check(&doc, &components, m, p, status, &body);

    check("get", "/health", call(get("/health")).await);
    check("get", "/api/health", call(get("/api/health")).await);
    let sid = new_session(&c, &base, json!({})).await;
    let s = |p: &str| format!("{base}/v1/sessions/{sid}{p}");
    check("post", "/v1/sessions", post(&c, &format!("{base}/v1/sessions"), json!({"model": "m"})).await);
    check(
        "post",
        "/v1/sessions",
        post(&c, &format!("{base}/v1/sessions"), json!({"model": "m", "system_prompt": "s", "tools": []})).await,
    );
    check("post", "/v1/sessions/{id}/sends", post(&c, &s("/sends"), json!({"message": "hi", "send_id": "a"})).await);
    check("post", "/v1/sessions/{id}/sends", post(&c, &s("/sends"), json!({"message": "hi", "send_id": "a"})).await);
    check("post", "/v1/sessions/{id}/sends", post(&c, &s("/sends"), json!({"nothing": 1})).await);
    check("post", "/v1/sessions/{id}/cancel", post(&c, &s("/cancel"), json!({"send_id": "nope"})).await);
    // The send's result is stored; its history then has every line.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, body) = call(get(&format!("/v1/sessions/{sid}/messages"))).await;
        let done = body["events"].as_array().is_some_and(|e| e.iter().any(|e| e["event"] == "result"));
        if done {
            check("get", "/v1/sessions/{id}/messages", (status, body));
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no result stored: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    check("get", "/v1/sessions/{id}/messages", call(get(&format!("/v1/sessions/{sid}/messages?since=2"))).await);
    check("get", "/v1/sessions/{id}", call(get(&format!("/v1/sessions/{sid}"))).await);
    check("get", "/v1/sessions/{id}", call(get("/v1/sessions/nope")).await);
    check("get", "/v1/sessions", call(get("/v1/sessions")).await);
    check("post", "/v1/sessions/{id}/compact", post(&c, &s("/compact"), json!({})).await);
    check(
        "post",
        "/v1/sessions/{id}/permissions/{request_id}",
        post(&c, &s("/permissions/x"), json!({"decision": "allow"})).await,
    );
    check("get", "/v1/sessions/{id}/webhook", call(get(&format!("/v1/sessions/{sid}/webhook"))).await);
    let (status, hook) = post(&c, &s("/webhook"), json!({"deliver": "queue"})).await;
    check("post", "/v1/sessions/{id}/webhook", (status, hook.clone()));
    let token = hook["webhook_url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let text = |body: &'static str, token: &str| {
        c.post(format!("{base}/webhook/{token}")).header("content-type", "text/plain").body(body)
    };
    let (status, accepted) = call(text("build failed", &token)).await;
    check("post", "/webhook/{token}", (status, accepted.clone()));
    check("post", "/webhook/{token}", call(text("x", "wh_wrong")).await);
    check("post", "/webhook/{token}", call(text("  ", &token)).await);
    check("get", "/v1/sessions/{id}/inbox", call(get(&format!("/v1/sessions/{sid}/inbox"))).await);
    let ack = format!("/inbox/{}/ack", accepted["event_id"].as_str().unwrap());
    check("post", "/v1/sessions/{id}/inbox/{event_id}/ack", post(&c, &s(&ack), json!({})).await);
    check("post", "/v1/sessions/{id}/inbox/{event_id}/ack", post(&c, &s("/inbox/evt_none/ack"), json!({})).await);
    // agent-webkit and the consoles.
    let (status, wk) = post(&c, &format!("{base}/agent-webkit/sessions"), json!({"model": "m"})).await;
    check("post", "/agent-webkit/sessions", (status, wk.clone()));
    let wk_input = format!("{base}/agent-webkit/sessions/{}/input", wk["session_id"].as_str().unwrap());
    check(
        "post",
        "/agent-webkit/sessions/{id}/input",
        post(&c, &wk_input, json!({"type": "question_response", "correlation_id": "q"})).await,
    );
    check("post", "/api/pty", post(&c, &format!("{base}/api/pty"), json!({"cwd": "/no/such/dir"})).await);
    let (status, console) = post(&c, &format!("{base}/api/pty"), json!({"title": "t"})).await;
    check("post", "/api/pty", (status, console.clone()));
    check("get", "/api/pty", call(get("/api/pty")).await);
    let pty = format!("{base}/api/pty/{}", console["id"].as_str().unwrap());
    check("post", "/api/pty/{id}/resize", post(&c, &format!("{pty}/resize"), json!({"cols": 1, "rows": 1})).await);
    check("delete", "/api/pty/{id}", call(c.delete(&pty)).await);
    check("delete", "/v1/sessions/{id}", call(c.delete(s(""))).await);
    check("delete", "/v1/sessions/{id}", call(c.delete(format!("{base}/v1/sessions/nope"))).await);
    // Refusals before any handler: a foreign Host.
    check("get", "/v1/sessions", call(get("/v1/sessions").header("host", "evil.example")).await);
}

/// The check itself fails on what it must catch: an undocumented field, a
/// missing one, an undocumented status.
#[test]
fn the_check_catches_undocumented_fields_and_statuses() {
    let doc = generated();
    let components = strict_components(&doc);
    let health = json!({"ok": true, "version": "x", "protocol_version": "0.3.0", "sessions": 0,
                        "console": {"available": false, "backend": "b"}});
    check(&doc, &components, "get", "/health", 200, &health);
    let mut renamed = health.clone();
    renamed["console"] = json!({"available": false, "back_end": "b"});
    for (status, body) in [(200, renamed), (200, json!({"ok": true})), (418, health)] {
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(&doc, &components, "get", "/health", status, &body);
        }));
        assert!(failed.is_err(), "{status} {body} passed");
    }
}

/// A client generated from `protocol/openapi.json` by a standard generator
/// (openapi-python-client, from PyPI: `scripts/openapi-client`) talks to
/// the real daemon: refused without the token, then creates a session,
/// sends, and reads the send's result from the history.
#[tokio::test]
async fn a_generated_client_creates_a_session_sends_and_reads_the_result() {
    let Some(python) = super::worker::counterpart("PIRN_TEST_OPENAPI_CLIENT") else { return };
    let generator = std::path::Path::new(&python).with_file_name("openapi-python-client");
    let out = tempfile::tempdir().unwrap();
    let generated = tokio::process::Command::new(&generator)
        .args(["generate", "--meta", "none", "--path"])
        .arg(committed_path())
        .arg("--output-path")
        .arg(out.path().join("pirn_client"))
        .output()
        .await
        .unwrap();
    let log = String::from_utf8_lossy(&generated.stderr).into_owned() + &String::from_utf8_lossy(&generated.stdout);
    assert!(generated.status.success(), "the generator failed: {log}");
    for module in ["api/sessions/create_session.py", "api/sessions/create_send.py", "api/sessions/session_messages.py"]
    {
        assert!(out.path().join("pirn_client").join(module).is_file(), "{module} not generated: {log}");
    }

    let mock = MockServer::start(vec![Reply::text(&["Hello ", "from pirn."])]).await;
    let d = daemon(&mock.base_url(), &["--token", "generated-client-token"]).await;
    let run = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(&python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openapi/drive.py"))
            .arg(out.path())
            .arg(&d.base)
            .arg("generated-client-token")
            .output(),
    )
    .await
    .expect("the generated client finishes within 60 s")
    .unwrap();
    assert!(run.status.success(), "the driver failed: {}", String::from_utf8_lossy(&run.stderr));
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["health_ok"], true);
    assert_eq!(report["without_token"], "UNAUTHORIZED", "{report}");
    assert_eq!(report["protocol_version"], "0.3.0");
    assert_eq!(report["send_id"], "gen-1");
    assert_eq!((&report["status"], &report["response"]), (&json!("ok"), &json!("Hello from pirn.")), "{report}");
    // system, pirn's workspace listing note, the request, the answer.
    assert_eq!(report["roles"], json!(["system", "user", "user", "assistant"]));
    assert_eq!((&report["active"], &report["messages_count"]), (&json!(false), &json!(4)), "{report}");
}
