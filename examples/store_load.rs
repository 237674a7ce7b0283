//! Load on a session store, as `pirn serve` makes it: many sessions at
//! once, each logging sends through its own [`Journal`] on one
//! current-thread runtime (as the server runs).
//!
//!     store_load STORE [SESSIONS] [SENDS]
//!
//! STORE is a directory (the file store) or a postgres:// URL. Each send
//! logs what a real one does: a `send` entry, the user message, 40 emitted
//! lines (content deltas, usage), the assistant message and the `result`
//! line, then waits until the result is durable (what a writer waits for
//! before the result leaves the process). Prints one line of JSON: sends/s,
//! records/s (messages, sends and lines; the journal stores lines that
//! arrive together in one entry), the latency of that durable wait (p50,
//! p99, max, in ms) and the bytes the store grew by.

#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use pirn::store::{Body, Journal, Store};
use serde_json::json;

const LINES_PER_SEND: usize = 40;

async fn store_bytes(store_arg: &str) -> u64 {
    if store_arg.starts_with("postgres") {
        let Ok((client, conn)) = tokio_postgres::connect(store_arg, tokio_postgres::NoTls).await else { return 0 };
        tokio::spawn(conn);
        let q = "SELECT (pg_total_relation_size('pirn_entries') + pg_total_relation_size('pirn_sessions'))::bigint";
        client.query_one(q, &[]).await.map(|r| r.get::<_, i64>(0) as u64).unwrap_or(0)
    } else {
        fn walk(p: &std::path::Path) -> u64 {
            std::fs::read_dir(p)
                .map(|d| {
                    d.flatten()
                        .map(|e| match e.metadata() {
                            Ok(m) if m.is_dir() => walk(&e.path()),
                            Ok(m) => m.len(),
                            Err(_) => 0,
                        })
                        .sum()
                })
                .unwrap_or(0)
        }
        walk(std::path::Path::new(store_arg))
    }
}

async fn session(store: Store, index: usize, sends: usize) -> Vec<Duration> {
    let id = format!("load-{}-{index}", uuid::Uuid::new_v4().simple());
    let epoch = store.claim(&id).await.expect("claim");
    let journal = Journal::start(store, &id, epoch, 0);
    journal.record(Body::Meta {
        session_id: id.clone(),
        protocol_version: "0.3.0".into(),
        model: "load".into(),
        workspace: "/tmp".into(),
        config: json!({"model": "load", "system_prompt": "s", "tools": []}),
        forked_from: None,
    });
    let mut waits = Vec::with_capacity(sends);
    let mut frame = 0u64;
    for s in 0..sends {
        let send_id = format!("s{s}");
        journal.record(Body::Send { send_id: send_id.clone(), message: format!("task {s}"), compact: false });
        journal.record(Body::Message { message: json!({"role": "user", "content": format!("task {s}")}) });
        for i in 0..LINES_PER_SEND {
            frame += 1;
            let line = json!({"type": "event", "event": {"event": "content_delta", "text": format!("word{i} ")},
                "event_seq": i, "send_id": send_id, "session_id": id});
            journal.line(frame, Some(&send_id), "content_delta", &line.to_string());
            if i % 8 == 7 {
                // The model streams; the journal batches what arrives meanwhile.
                tokio::task::yield_now().await;
            }
        }
        journal.record(Body::Message { message: json!({"role": "assistant", "content": "done"}) });
        frame += 1;
        let result = json!({"type": "result", "id": send_id, "status": "ok", "response": "done", "session_id": id});
        journal.line(frame, Some(&send_id), "result", &result.to_string());
        let t0 = Instant::now();
        let _ = journal.durable().await;
        waits.push(t0.elapsed());
    }
    journal.close().await;
    waits
}

fn main() {
    let mut args = std::env::args().skip(1);
    let store_arg = args.next().expect("usage: store_load STORE [SESSIONS] [SENDS]");
    let sessions: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let sends: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let tenant = format!("load{}", std::process::id());
        let vars = [("PIRN_STORE", store_arg.clone()), ("PIRN_TENANT", tenant)];
        let get = |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        let store = Store::from_env(&get).await.expect("store").expect("persistence on");
        let before = store_bytes(&store_arg).await;
        let t0 = Instant::now();
        let tasks: Vec<_> = (0..sessions).map(|i| tokio::spawn(session(store.clone(), i, sends))).collect();
        let mut waits = Vec::new();
        for t in tasks {
            waits.extend(t.await.expect("session task"));
        }
        let secs = t0.elapsed().as_secs_f64();
        waits.sort();
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
        let at = |p: f64| ms(waits[((waits.len() - 1) as f64 * p).round() as usize]);
        let total_sends = sessions * sends;
        let entries = sessions * (1 + sends * (LINES_PER_SEND + 4));
        let grew = store_bytes(&store_arg).await.saturating_sub(before);
        println!(
            "{}",
            json!({
                "sessions": sessions, "sends": total_sends, "records": entries, "seconds": (secs * 100.0).round() / 100.0,
                "sends_per_s": (total_sends as f64 / secs).round(), "records_per_s": (entries as f64 / secs).round(),
                "durable_wait_ms": {"p50": at(0.5), "p99": at(0.99), "max": ms(*waits.last().unwrap_or(&Duration::ZERO))},
                "bytes": grew,
            })
        );
    });
}
