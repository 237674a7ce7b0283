//! The Model Context Protocol, both ways: MCP servers as tool sources for
//! the model ([`client`]; servers in the client's own process through
//! [`bridge`]), and pirn's own tools served over MCP stdio ([`tool_server`],
//! `pirn mcp`).

pub mod bridge;
pub mod client;
pub mod connect;
pub mod progress;
pub mod tool_server;
