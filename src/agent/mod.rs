//! The agent's runtime: worker threads, the event queue that carries results back to Emacs,
//! the perceive → think → decide → act loop, and semantic search.

pub mod embedding;
pub mod event;
pub mod message;
pub mod runtime;
pub mod semantic;
pub mod telemetry;
pub mod turn;

pub use event::Event;
pub use runtime::Runtime;
