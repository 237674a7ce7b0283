//! The Model Context Protocol, both ways: MCP servers as tool sources for
//! the model ([`client`]), and pirn's own tools served over MCP stdio
//! ([`tool_server`], `pirn mcp`).

pub mod client;
pub mod tool_server;
