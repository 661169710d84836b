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

/// The protocol revision org-agent implements: its client asks for it in the `initialize`
/// handshake, its server answers the handshake with it at most; older ones the SDK
/// negotiates are accepted. Named, not the SDK's default: the SDK's newest (2026-07-28)
/// drops the handshake this client starts with.
pub const PROTOCOL_REVISION: rmcp::model::ProtocolVersion =
    rmcp::model::ProtocolVersion::V_2025_11_25;

#[cfg(test)]
mod tests {
    /// README.org names the revision spoken; when the SDK gains a newer one with the
    /// handshake, this says to move both.
    #[test]
    fn the_revision_readme_names_is_the_newest_with_a_handshake() {
        let revision = super::PROTOCOL_REVISION;
        assert_eq!(
            rmcp::model::ProtocolVersion::LATEST_WITH_INITIALIZE,
            revision
        );
        let readme = include_str!("../../README.org");
        assert!(
            readme.contains(&format!("protocol revision {revision}")),
            "README.org does not name protocol revision {revision}"
        );
    }
}
