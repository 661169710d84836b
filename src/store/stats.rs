//! What the store holds and where, at a glance (`M-x org-agent-store-stats`): counts of
//! files, nodes and versions, duplicated ids, the log's size and path, and its last write
//! error.

use super::Store;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub files: usize,
    pub nodes: usize,
    pub headlines: usize,
    pub versions: usize,
    pub ids_with_duplicates: usize,
    pub bytes_on_disk: u64,
    pub snapshots: usize,
    pub path: Option<String>,
    pub write_error: Option<String>,
    /// Tag strings the files' nodes hold, own and inherited, each shared list counted once.
    pub tag_strings: usize,
    /// Entries of the files' tag indexes.
    pub tag_index_entries: usize,
}

impl Store {
    pub fn stats(&self) -> Stats {
        let state = self.state();
        let nodes = state.node_count();
        Stats {
            files: state.files.len(),
            nodes,
            headlines: nodes - state.files.len(),
            versions: self.archive.lock().versions.len(),
            ids_with_duplicates: state.duplicated_ids().count(),
            bytes_on_disk: self
                .writer
                .as_ref()
                .and_then(|w| std::fs::metadata(&w.path).ok())
                .map(|m| m.len())
                .unwrap_or(0),
            snapshots: self.snapshots.lock().len(),
            path: self.writer.as_ref().map(|w| w.path.display().to_string()),
            write_error: self.writer.as_ref().and_then(|w| w.last_error()),
            tag_strings: state.files.values().map(|d| d.tag_strings()).sum(),
            tag_index_entries: state
                .files
                .values()
                .map(|d| d.tag_index.values().map(Vec::len).sum::<usize>())
                .sum(),
        }
    }
}
