//! Front-ends over the session API. Each one reads requests its own way and
//! hands responses to a single writer; none holds agent logic.
//!
//! - [`stdio`]: the JSONL worker; [`exit`]: the one-shot commands' exit
//!   codes;
//! - [`http`]: `pirn serve` (HTTP, SSE, WebSocket), each session's output
//!   through its [`hub`];
//! - [`writer`] and [`pipe_writer`]: the two single writers of stdout;
//! - [`signal`]: the SIGTERM/SIGINT future all of them stop on;
//! - [`latest`]: the session `--continue` resumes;
//! - [`lines`]: stdin's lines, framed with a bound (the worker and the
//!   Claude surface).

pub mod exit;
pub mod http;
pub mod hub;
pub mod latest;
pub mod lines;
pub mod pipe_writer;
pub mod signal;
pub mod stdio;
pub mod tap;
pub mod writer;
