//! Integration tests: every test spawns the real binary against a real
//! HTTP mock model server on 127.0.0.1.

mod mock;
mod mock_wire;
mod worker;

mod acp;
mod approval;
mod architecture;
mod asked;
mod cancel;
mod cassette;
mod claimed;
mod claude;
mod console;
mod context;
mod cost;
mod errors;
mod failover;
mod faults;
mod file_blocks;
mod finish;
mod golden;
mod group;
mod hardening;
mod honest;
mod hooks;
mod http;
mod inbox;
mod instructions;
mod interleavings;
mod mcp;
mod openapi;
mod otel;
mod persist;
mod protocol;
mod run_cmd;
mod security;
mod serve_bounds;
mod store;
mod store_faults;
mod structured;
mod terminals;
mod tolerant_edits;
mod tools;
mod webkit;
mod write_check;
