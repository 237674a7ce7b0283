//! pirn: a headless coding-agent worker speaking the heddle headless protocol
//! 0.2.0 (newline-delimited JSON on stdin/stdout).
//!
//! Layout: [`wire`] (message types, no I/O) → [`session`] (queue of sends,
//! status, cancel) → [`agent`] (the turn loop) → [`model`] (the streamed
//! OpenAI-compatible call) and [`tools`]; [`transport`] holds the thin
//! front-ends that drive a session. `main.rs` is the command line only.

pub mod agent;
pub mod approval;
pub mod conversation;
pub mod model;
pub mod session;
pub mod sse;
pub mod tools;
pub mod transport;
pub mod wire;
