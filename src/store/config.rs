//! The settings that shape how text becomes nodes (keywords, dialect, tag inheritance,
//! inline tasks) and how many snapshots are kept. Part of every text's digest: the same
//! text under other settings is parsed again.

use super::parse::Dialect;
use super::todo::TodoKeywords;

/// Settings that shape how text becomes nodes.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub default_todo: TodoKeywords,
    pub dialect: Dialect,
    pub no_inherit_tags: Vec<String>,
    pub snapshot_capacity: usize,
    /// `org-inlinetask-min-level` while org-inlinetask is loaded (see `ParseOptions`).
    pub inlinetask_min_level: Option<u32>,
}
