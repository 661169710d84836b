//! The Model Context Protocol, both ways, through the official Rust SDK (`rmcp`).
//!
//! As a client ([`client`]), org-agent offers the tools of the MCP servers the user lists
//! (`org-agent-mcp-servers`, in mcp.el's `mcp-hub-servers` format, read by [`config`]) to the
//! model next to its own, named `SERVER__TOOL` so no two collide, their input schemas checked
//! ([`schema`]) when listed and every call's arguments checked against them before the gates
//! see it. Servers start lazily on a worker, with a timeout; a server that crashes or hangs
//! ends the call with an error and is started again on the next use. What they return is
//! untrusted: the turn spotlights it and any edit after it asks.
//!
//! As a server (`mcp_server.rs` in the agent's folder, since it serves the agent's notes and
//! queue), org-agent serves Streamable HTTP on loopback, behind a bearer
//! token, so outside agents reach the notes only as the notes layer shows them, and their
//! edits wait in the approvals queue.
//!
//! Does not: decide anything (the gates do) or talk to Emacs.

pub mod client;
pub mod config;
pub mod content;
pub mod schema;

/// The protocol revision org-agent implements (and asks for first); older ones the SDK
/// negotiates are accepted.
pub const PROTOCOL_REVISION: &str = "2025-11-25";

/// Between a server's name and its tool's in the names the model sees.
pub const SEPARATOR: &str = "__";

/// Whether `tool` names an MCP server's tool (`SERVER__TOOL`): no other tool has the
/// separator in its name.
pub fn is_mcp_tool(tool: &str) -> bool {
    tool.contains(SEPARATOR)
}
