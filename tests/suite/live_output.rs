//! A running command's output as it happens (0.3.0 `tool_output`), through
//! the binary: pieces arrive while the command runs, at least once a
//! second, in order and without gaps for a slow printer, and the result
//! still holds the whole output; a flood is bounded; 0.2.0 sees none.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mock::{MockServer, Reply};
use super::worker::Worker;

async fn run_command(command: &str, version: &str) -> (Vec<(Instant, Value)>, Value, Instant) {
    let mock = MockServer::start(vec![Reply::tool("bash", json!({"command": command})), Reply::text(&["ran"])]).await;
    let extra = json!({"workspace_listing": false, "approval_mode": "full-auto"});
    let (mut w, _) = Worker::spawn(&mock.base_url(), &[]).await.init(version, extra).await;
    w.write(json!({"type": "send", "id": "1", "message": "run it"})).await;
    let mut seen = Vec::new();
    loop {
        let v = w.next().await;
        let now = Instant::now();
        if v["type"] == "result" {
            let end = seen.iter().find(|(_, e): &&(Instant, Value)| e["event"]["event"] == "tool_end").unwrap().0;
            return (seen.into_iter().filter(|(_, e)| e["event"]["event"] == "tool_output").collect(), v, end);
        }
        seen.push((now, v));
    }
}

#[tokio::test]
async fn a_slow_command_streams_its_output_while_it_runs() {
    let script = "for i in 1 2 3 4 5 6 7 8; do echo line $i; sleep 0.4; done";
    let (pieces, result, ended) = run_command(script, "0.3.0").await;
    assert_eq!(result["status"], "ok", "{result}");
    assert!(pieces.len() >= 4, "{pieces:?}");
    assert!(ended.duration_since(pieces[0].0) > Duration::from_secs(2), "the first piece came while it ran");
    let gaps = pieces.windows(2).map(|w| w[1].0.duration_since(w[0].0)).max().unwrap();
    assert!(gaps < Duration::from_secs(1), "a piece at least every second: {gaps:?}");
    let mut text = String::new();
    for (_, e) in &pieces {
        assert_eq!(e["event"]["offset"], text.len(), "no gap for a slow printer: {e}");
        assert!(e["event"]["call_id"].is_string());
        text.push_str(e["event"]["text"].as_str().unwrap());
    }
    let whole: String = (1..=8).map(|i| format!("line {i}\n")).collect();
    assert_eq!(text, whole);
}

#[tokio::test]
async fn a_flood_is_bounded_and_0_2_0_sees_no_pieces() {
    let (pieces, result, _) = run_command("head -c 50000000 /dev/zero | tr '\\0' x; echo; echo end", "0.3.0").await;
    assert_eq!(result["status"], "ok", "{result}");
    let bytes: usize = pieces.iter().map(|(_, e)| e["event"]["text"].as_str().unwrap().len()).sum();
    assert!(pieces.iter().all(|(_, e)| e["event"]["text"].as_str().unwrap().len() <= 8192));
    assert!(bytes < 1_000_000, "50 MB of output, {bytes} bytes of pieces");
    let last = &pieces.last().unwrap().1["event"];
    assert!(last["text"].as_str().unwrap().ends_with("end\n"), "the last bytes arrive: {last}");
    assert_eq!(last["offset"].as_u64().unwrap() + last["text"].as_str().unwrap().len() as u64, 50_000_005);

    let (pieces, result, _) = run_command("echo hi", "0.2.0").await;
    assert_eq!(result["status"], "ok");
    assert!(pieces.is_empty(), "{pieces:?}");
}
