//! The reading end of the relay benchmark: spawns a worker binary, inits,
//! sends one message, reads its stdout in large blocks until the result line,
//! and prints `deltas seconds text_matches`. The clock runs from the send
//! to the complete result line; the deltas are parsed after it stops, so the
//! reader costs next to nothing while pirn relays.
//! `relay_reader WORKER_BIN BASE_URL EXPECTED_TEXT_FILE`
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let (bin, url, expected) = (args.next().unwrap(), args.next().unwrap(), args.next().unwrap());
    let expected = std::fs::read_to_string(expected).unwrap();
    let dir = std::env::temp_dir().join(format!("relay-reader-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = Command::new(bin)
        .env("PIRN_BASE_URL", &url)
        .env("OPENAI_BASE_URL", &url)
        .env("HEDDLE_BASE_URL", &url)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
    stdin
        .write_all(
            b"{\"type\":\"init\",\"id\":\"i\",\"config\":{\"model\":\"bench\",\"system_prompt\":\"s\",\"tools\":[]}}\n",
        )
        .unwrap();
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let start = Instant::now();
    stdin.write_all(b"{\"type\":\"send\",\"id\":\"r\",\"message\":\"go\"}\n").unwrap();
    stdin.flush().unwrap();
    let mut buf: Vec<u8> = Vec::with_capacity(8 << 20);
    let mut block = vec![0u8; 1 << 20];
    let mut result_at: Option<usize> = None;
    let mut scanned: usize = 0;
    loop {
        let n = out.read(&mut block).unwrap();
        assert!(n > 0, "worker closed stdout early");
        buf.extend_from_slice(&block[..n]);
        if result_at.is_none() {
            let from = scanned.saturating_sub(20);
            result_at = memchr::memmem::find(&buf[from..], b"{\"type\":\"result\"").map(|i| i + from);
            scanned = buf.len();
        }
        if let Some(at) = result_at
            && buf[at..].contains(&b'\n')
        {
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    drop(stdin);
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let mut text = String::new();
    let mut deltas = 0u64;
    for l in buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
        if v["type"] == "event" && v["event"]["event"] == "content_delta" {
            text.push_str(v["event"]["text"].as_str().unwrap());
            deltas += 1;
        }
    }
    println!("{deltas} {secs:.6} {}", text == expected);
}
