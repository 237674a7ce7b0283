//! What keeping a conversation inside its context window costs per model
//! call, measured in process (no model, no I/O): a 30-step task whose tool
//! results are ~11 KB each is grown one step at a time, and before each
//! "call" pirn's estimate and pruning run against a 16,384-token window.
//! Prints the median and maximum time per call, in microseconds.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

use pirn::context::{self, BYTES_PER_TOKEN, KEEP_TURNS};
use pirn::conversation::Conversation;
use pirn::model::ToolCall;

fn main() {
    let window = 16_384;
    let limit = context::prompt_limit(window, 4096);
    let result: String = (0..180).map(|l| format!("line {l}: {}\n", "x".repeat(40))).collect();
    let mut times = Vec::new();
    for _round in 0..20 {
        let mut conv = Conversation::new("You are a coding agent.", Arc::new(AtomicU64::new(0)));
        conv.push_user("Read f0.txt to f29.txt one by one.");
        for step in 0..30 {
            let call = ToolCall { id: format!("c{step}"), name: "read_file".into(), arguments: "{}".into() };
            conv.push_assistant("", std::slice::from_ref(&call));
            conv.push_tool_result(&call.id, result.clone());
            let started = Instant::now();
            let estimate = conv.budget.estimate(conv.bytes());
            if estimate > limit {
                let to_free = ((estimate - limit * 70 / 100) * BYTES_PER_TOKEN) as usize;
                conv.prune_outputs(to_free, conv.recent_start(KEEP_TURNS));
            }
            let after = conv.budget.estimate(conv.bytes());
            times.push(started.elapsed().as_nanos() as f64 / 1000.0);
            // As the server would count it: bytes / 4.
            conv.budget.record((conv.bytes() / 4) as u64, conv.bytes());
            assert!(after <= limit, "step {step}: {after} > {limit}");
        }
    }
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!("{:.1} {:.1}", times[times.len() / 2], times[times.len() - 1]);
}
