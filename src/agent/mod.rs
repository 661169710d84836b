//! The agent's runtime: worker threads, the event queue that carries results back to Emacs,
//! and (in later work) the perceive → think → decide → act loop.

pub mod embedding;
pub mod event;
pub mod message;
pub mod runtime;
pub mod telemetry;
pub mod turn;

pub use event::Event;
pub use runtime::Runtime;
