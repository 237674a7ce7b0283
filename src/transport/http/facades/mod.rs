//! The foreign facades of `pirn serve`: other daemons' wire formats served
//! as they are, each over the same sessions as the native API.
//!
//! - [`webkit`]: agent-webkit 1.0 under `/agent-webkit`;
//! - [`mcp`]: pirn as an MCP server at `/mcp` (streamable HTTP);
//! - [`inbox`]: stringd's webhook inbox (its table: [`inboxes`]);
//! - [`shell`]: muti's shell WebSocket, and [`console`]: ACECode's console
//!   PTYs (both only with `--terminals`; otherwise their routes answer 404).
//!
//! None holds agent logic or its own session table: each maps its format onto
//! [`super::sessions`] and reads a session's output through its hub.

pub mod console;
pub mod inbox;
pub mod inboxes;
pub mod mcp;
pub mod shell;
pub mod webkit;
