//! The agent's runtime: worker threads, the event queue that carries results back to Emacs,
//! the perceive → think → decide → act loop, and semantic search.

pub mod answer;
pub mod approvals;
pub mod background;
pub mod chat;
pub mod embedding;
pub mod equipment;
pub mod event;
pub mod ingest;
pub mod mcp_server;
pub mod operator;
pub mod options;
pub mod runs;
pub mod runtime;
pub mod semantic;
pub mod skill_loading;
pub mod telemetry;
pub mod trigger_state;
pub mod triggers;
pub mod turn;

pub use event::Event;
pub use runtime::Runtime;
