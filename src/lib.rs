//! pirn: a headless coding-agent worker speaking the heddle headless protocol
//! 0.2.0 (newline-delimited JSON on stdin/stdout).
//!
//! Dependencies point one way:
//! [`transport`] (stdio, `pirn run`, `pirn serve`) → [`session`] (queue of
//! sends, status, cancel, one result per send) → [`agent`] (the turn loop)
//! → [`conversation`], [`tools`], [`approval`], [`model`] (the streamed
//! OpenAI-compatible call, which records to or replays from a [`cassette`])
//! → [`wire`] (message types, no I/O). A session's log goes through its
//! [`store::Journal`] to a [`store::Store`] (files or Postgres). [`config`]
//! is built once per session from `init.config`, an [`environment::Environment`]
//! snapshot and the transport's [`config::Limits`]. `main.rs` is the
//! command line only.

pub mod acp;
pub mod agent;
pub mod approval;
pub mod cassette;
pub mod checkpoint;
pub mod claude;
pub mod codex;
pub mod config;
pub mod conform;
pub mod context;
pub mod conversation;
pub mod environment;
pub mod hooks;
pub mod logging;
pub mod mcp;
pub mod model;
pub mod sandbox;
pub mod secret;
pub mod session;
pub mod sse;
pub mod store;
pub mod telemetry;
pub mod terminal;
pub mod tools;
pub mod transcript;
pub mod transport;
pub mod wire;
pub mod worktree;
