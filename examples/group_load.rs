//! Load on a group of `pirn serve` hosts (scripts/bench section 14).
//!
//! `group_load SESSIONS SENDS BASE_URL...`: opens SESSIONS sessions, the
//! i-th on host i mod N, then runs every session's SENDS sends at once
//! (each session's one after the other), send j of session i posted with
//! `?stream=1` to host (i + j) mod N, so with N hosts (N-1)/N of the sends
//! are forwarded to the session's owner. A send's latency is POST → its
//! `result` frame. With `--one` instead: one session on the first host,
//! SENDS sends one after the other, alternately to the owner and to the
//! second host (forwarded): the forwarding cost.
//!
//! Prints one JSON object: `{sends, seconds, sends_per_s, p50_ms, p99_ms,
//! errors}` (with `--one`: `direct` and `forwarded`, each `{p50_ms,
//! p99_ms}`).
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Instant;

use serde_json::{Value, json};

async fn session(c: &reqwest::Client, base: &str) -> String {
    let body = json!({"model": "m", "system_prompt": "s", "tools": []});
    let resp = c.post(format!("{base}/v1/sessions")).header("content-type", "application/json").body(body.to_string());
    let r: Value = serde_json::from_slice(&resp.send().await.unwrap().bytes().await.unwrap()).unwrap();
    r["session_id"].as_str().unwrap_or_else(|| panic!("{r}")).to_owned()
}

/// One send with `?stream=1`, read to its result; its latency in ms, or
/// `None` when it did not end `ok`.
async fn send(c: &reqwest::Client, base: &str, sid: &str, n: usize) -> Option<f64> {
    let t0 = Instant::now();
    let url = format!("{base}/v1/sessions/{sid}/sends?stream=1");
    let body = json!({"message": format!("message {n}"), "send_id": format!("s{n}")});
    let req = c.post(url).header("content-type", "application/json").body(body.to_string());
    let mut resp = req.send().await.ok()?;
    let mut buf = Vec::new();
    while let Some(chunk) = resp.chunk().await.ok()? {
        buf.extend_from_slice(&chunk);
        if let Some(at) = find(&buf, b"event: result") {
            // The frame's data line follows; wait for its end.
            if find(&buf[at..], b"\n\n").is_some() {
                let ok = find(&buf[at..], b"\"status\":\"ok\"").is_some();
                return ok.then(|| t0.elapsed().as_secs_f64() * 1000.0);
            }
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((p / 100.0) * (v.len() - 1) as f64).round() as usize]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let one = args.iter().any(|a| a == "--one");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--one").collect();
    let (sessions, sends): (usize, usize) = (args[0].parse().unwrap(), args[1].parse().unwrap());
    let hosts: Vec<String> = args[2..].iter().map(|s| s.to_string()).collect();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let c = reqwest::Client::builder().pool_max_idle_per_host(1024).build().unwrap();
    if one {
        let sid = session(&c, &hosts[0]).await;
        let (mut direct, mut forwarded) = (Vec::new(), Vec::new());
        for n in 0..sends {
            let (base, acc) = if n % 2 == 0 { (&hosts[0], &mut direct) } else { (&hosts[1], &mut forwarded) };
            acc.push(send(&c, base, &sid, n).await.expect("an ok send"));
        }
        let fig = |v: &mut Vec<f64>| json!({"p50_ms": pct(v, 50.0), "p99_ms": pct(v, 99.0)});
        println!("{}", json!({"direct": fig(&mut direct), "forwarded": fig(&mut forwarded)}));
        return;
    }
    let mut ids = Vec::new();
    for i in 0..sessions {
        ids.push(session(&c, &hosts[i % hosts.len()]).await);
    }
    let t0 = Instant::now();
    let runs = ids.iter().enumerate().map(|(i, sid)| {
        let (c, hosts) = (c.clone(), hosts.clone());
        async move {
            let mut out = Vec::new();
            for j in 0..sends {
                out.push(send(&c, &hosts[(i + j) % hosts.len()], sid, j).await);
            }
            out
        }
    });
    let all: Vec<Option<f64>> = futures_util::future::join_all(runs).await.into_iter().flatten().collect();
    let seconds = t0.elapsed().as_secs_f64();
    let errors = all.iter().filter(|l| l.is_none()).count();
    let mut ok: Vec<f64> = all.into_iter().flatten().collect();
    println!(
        "{}",
        json!({
            "sends": ok.len(), "seconds": seconds, "sends_per_s": ok.len() as f64 / seconds,
            "p50_ms": pct(&mut ok, 50.0), "p99_ms": pct(&mut ok, 99.0), "errors": errors,
        })
    );
}
