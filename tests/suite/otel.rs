//! OpenTelemetry traces, received by a minimal OTLP/HTTP collector written
//! here (protobuf decoded with the `opentelemetry-proto` crate): the span
//! tree of a send (`invoke_agent` → `chat`, `execute_tool`), its `gen_ai.*`
//! attributes, parenting from a W3C `traceparent` (stdio `init.config`, the
//! HTTP header), and a collector that is down failing nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::http::{client, daemon_with_env, new_session, post};
use super::mock::{MockServer, Reply};
use super::worker::Worker;

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

/// One received span, flattened.
#[derive(Debug, Clone)]
struct Got {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    attrs: HashMap<String, String>,
    service: String,
}

/// A minimal OTLP/HTTP collector on 127.0.0.1: every `POST /v1/traces`
/// body is decoded and its spans kept.
struct Collector {
    url: String,
    spans: Arc<Mutex<Vec<Got>>>,
}

impl Collector {
    async fn start() -> Collector {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = spans.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve(stream, kept.clone()));
            }
        });
        Collector { url, spans }
    }

    /// The spans once `n` arrived (panics after 15 s).
    async fn wait_for(&self, n: usize) -> Vec<Got> {
        for _ in 0..300 {
            let got = self.spans.lock().unwrap().clone();
            if got.len() >= n {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("fewer than {n} spans: {:?}", self.spans.lock().unwrap());
    }
}

async fn serve(mut stream: TcpStream, spans: Arc<Mutex<Vec<Got>>>) {
    let mut buf = Vec::new();
    loop {
        // Read one request: head, then content-length bytes.
        let (head_len, body_len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut req = httparse::Request::new(&mut headers);
            if let Ok(httparse::Status::Complete(n)) = req.parse(&buf) {
                let len = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok())
                    .unwrap_or(0);
                break (n, len);
            }
            let mut chunk = [0u8; 65536];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        };
        while buf.len() < head_len + body_len {
            let mut chunk = [0u8; 65536];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        let body: Vec<u8> = buf.drain(..head_len + body_len).skip(head_len).collect();
        let export = ExportTraceServiceRequest::decode(body.as_slice()).expect("an OTLP protobuf body");
        {
            let mut out = spans.lock().unwrap();
            for rs in export.resource_spans {
                let service = rs
                    .resource
                    .iter()
                    .flat_map(|r| &r.attributes)
                    .find(|a| a.key == "service.name")
                    .map(|a| show(a.value.as_ref().and_then(|v| v.value.as_ref())))
                    .unwrap_or_default();
                for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
                    let attrs = span
                        .attributes
                        .iter()
                        .map(|a| (a.key.clone(), show(a.value.as_ref().and_then(|v| v.value.as_ref()))))
                        .collect();
                    out.push(Got {
                        name: span.name,
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent: hex(&span.parent_span_id),
                        attrs,
                        service: service.clone(),
                    });
                }
            }
        }
        let ok = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(ok.as_bytes()).await.is_err() {
            return;
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn show(v: Option<&Any>) -> String {
    match v {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::ArrayValue(a)) => a.values.iter().map(|v| show(v.value.as_ref())).collect::<Vec<_>>().join(","),
        _ => String::new(),
    }
}

fn otel_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.to_owned()),
        ("OTEL_SERVICE_NAME", "pirn-under-test".to_owned()),
        ("OTEL_BSP_SCHEDULE_DELAY", "50".to_owned()),
    ]
}

/// Posts a streamed send to session `id` on host `base` with the test's
/// `traceparent` header; returns the SSE body after checking the 200.
async fn traced_send(c: &reqwest::Client, base: &str, id: &str) -> String {
    let resp = c
        .post(format!("{base}/v1/sessions/{id}/sends?stream=1"))
        .header("content-type", "application/json")
        .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
        .body(json!({"message": "hello"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

fn one<'a>(spans: &'a [Got], name: &str) -> &'a Got {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
}

#[tokio::test]
async fn a_send_is_one_span_tree_under_the_orchestrators_traceparent() {
    let collector = Collector::start().await;
    let env = otel_env(&collector.url);
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mock =
        MockServer::start(vec![Reply::tool("glob", json!({"pattern": "*"})), Reply::text(&["secret answer"])]).await;
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let w = Worker::spawn(&mock.base_url(), &envs).await;
    // The small profile, so that a side call is among the spans.
    let (mut w, _) = w.init("0.3.0", json!({"traceparent": traceparent, "profile": "small"})).await;
    w.write(json!({"type":"send","id":"s","message":"secret prompt"})).await;
    let (_, r) = w.result_for("s").await;
    assert_eq!(r["status"], "ok", "{r}");
    // The send, the tool call, the two turns and the model's reading of
    // the request (the small profile's `request_check`: the answer changed
    // nothing).
    let spans = collector.wait_for(5).await;
    let send = one(&spans, "invoke_agent pirn");
    assert_eq!((send.trace_id.as_str(), send.parent.as_str()), (TRACE, PARENT), "{send:?}");
    assert_eq!(send.attrs["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(send.attrs["gen_ai.request.model"], "mock-model");
    assert_eq!(send.attrs["pirn.stop_reason"], "end_turn");
    assert_eq!(send.service, "pirn-under-test");
    let chats: Vec<&Got> = spans.iter().filter(|s| s.name == "chat mock-model").collect();
    assert_eq!(chats.len(), 3, "{spans:?}");
    for c in &chats {
        assert_eq!((c.trace_id.as_str(), c.parent.as_str()), (TRACE, send.span_id.as_str()), "{c:?}");
        assert_eq!(c.attrs["gen_ai.operation.name"], "chat");
    }
    assert_eq!(chats[0].attrs["gen_ai.usage.input_tokens"], "20");
    assert_eq!(chats[0].attrs["gen_ai.usage.output_tokens"], "8");
    assert_eq!(chats[0].attrs["gen_ai.response.finish_reasons"], "tool_calls");
    assert!(chats[1].attrs.contains_key("gen_ai.response.time_to_first_chunk"), "{:?}", chats[1]);
    let tool = one(&spans, "execute_tool glob");
    assert_eq!(tool.parent, send.span_id);
    assert_eq!(tool.attrs["gen_ai.tool.name"], "glob");
    assert_eq!(tool.attrs["pirn.tool.outcome"], "ok");
    assert!(!tool.attrs["gen_ai.tool.call.id"].is_empty());
    // No prompt or answer text without the operator's opt-in.
    let all = format!("{spans:?}");
    assert!(!all.contains("secret prompt") && !all.contains("secret answer"), "{all}");
}

#[tokio::test]
async fn the_http_traceparent_header_parents_the_send_and_a_dead_collector_fails_nothing() {
    let collector = Collector::start().await;
    let env = otel_env(&collector.url);
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let d = daemon_with_env(&mock.base_url(), &[], &envs).await;
    let c = client();
    let id = new_session(&c, &d.base, json!({})).await;
    traced_send(&c, &d.base, &id).await;
    let spans = collector.wait_for(2).await;
    let send = one(&spans, "invoke_agent pirn");
    assert_eq!((send.trace_id.as_str(), send.parent.as_str()), (TRACE, PARENT), "{send:?}");
    // A collector nobody listens at: the send is as it would be.
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let env = otel_env(&dead_url);
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let d = daemon_with_env(&mock.base_url(), &[], &envs).await;
    let id = new_session(&c, &d.base, json!({})).await;
    let (status, body) =
        post(&c, &format!("{}/v1/sessions/{id}/sends?stream=1", d.base), json!({"message": "x"})).await;
    assert!(status == 200, "{status} {body}");
}

#[tokio::test]
async fn a_send_forwarded_between_group_hosts_keeps_its_traceparent() {
    let Some(url) = super::store::postgres_url() else { return };
    let tenant = super::store::tenant();
    let collector = Collector::start().await;
    let mut env = otel_env(&collector.url);
    env.extend([("PIRN_STORE", url.clone()), ("PIRN_TENANT", tenant.clone())]);
    let envs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mock = MockServer::start(vec![Reply::text(&["hi"])]).await;
    let args = ["--advertise-url", "http://127.0.0.1:0", "--lease-secs", "2"];
    let (a, b) =
        (daemon_with_env(&mock.base_url(), &args, &envs).await, daemon_with_env(&mock.base_url(), &args, &envs).await);
    let c = client();
    // The session lives on A; the send arrives at B, which forwards it.
    let id = new_session(&c, &a.base, json!({})).await;
    let text = traced_send(&c, &b.base, &id).await;
    assert!(text.contains("\"status\":\"ok\""), "{text}");
    let spans = collector.wait_for(2).await;
    let send = one(&spans, "invoke_agent pirn");
    assert_eq!((send.trace_id.as_str(), send.parent.as_str()), (TRACE, PARENT), "{send:?}");
    assert_eq!(spans.iter().filter(|s| s.name == "invoke_agent pirn").count(), 1, "one send, one span: {spans:?}");
}
