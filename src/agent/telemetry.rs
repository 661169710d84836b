//! What the agent did: a ring of recent log entries and counters per tool and per backend.
//! Shown by `M-x org-agent-log` and `M-x org-agent-status`.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many log entries are kept.
pub const LOG_CAPACITY: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
    /// The entry's place in the log: 1 for the first entry ever logged, one more for each
    /// after it. Entries that fall out of the ring take their numbers with them, so a reader
    /// that saw up to N asks for the entries after N and sees the gap if it fell behind.
    pub seq: u64,
    /// Milliseconds since the epoch.
    pub time_ms: i64,
    /// `ingest`, `chat`, `tool`, `llm`, `gate`, …
    pub kind: String,
    pub message: String,
}

/// Counters for one tool or backend.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub calls: u64,
    pub failures: u64,
    pub total: Duration,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Default)]
pub struct Telemetry {
    log: VecDeque<LogEntry>,
    /// The sequence number of the newest entry ever logged (0: none yet).
    last_seq: u64,
    pub tools: BTreeMap<String, Counters>,
    pub backends: BTreeMap<String, Counters>,
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Telemetry {
    pub fn log(&mut self, kind: &str, message: impl Into<String>) {
        if self.log.len() >= LOG_CAPACITY {
            self.log.pop_front();
        }
        self.last_seq += 1;
        self.log.push_back(LogEntry {
            seq: self.last_seq,
            time_ms: now_ms(),
            kind: kind.to_string(),
            message: message.into(),
        });
    }

    /// The log, oldest first.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.log.iter().cloned().collect()
    }

    /// The entries after sequence number `seq`, oldest first: a reader that saw up to `seq`
    /// copies only what is new. When entries after `seq` already fell out of the ring, the
    /// first one returned is numbered above `seq + 1`; none when `seq` is the newest.
    pub fn entries_since(&self, seq: u64) -> Vec<LogEntry> {
        let Some(first) = self.log.front().map(|e| e.seq) else {
            return Vec::new();
        };
        // The ring's numbers are consecutive: the entry after `seq` is at this index.
        let skip = seq.saturating_add(1).saturating_sub(first);
        self.log
            .iter()
            .skip(usize::try_from(skip).unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }

    pub fn tool_call(&mut self, name: &str, ok: bool, took: Duration) {
        let c = self.tools.entry(name.to_string()).or_default();
        c.calls += 1;
        c.failures += u64::from(!ok);
        c.total += took;
    }

    pub fn llm_request(&mut self, backend: &str, ok: bool, took: Duration, tokens: (u64, u64)) {
        let c = self.backends.entry(backend.to_string()).or_default();
        c.calls += 1;
        c.failures += u64::from(!ok);
        c.total += took;
        c.prompt_tokens += tokens.0;
        c.completion_tokens += tokens.1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_keeps_the_newest_entries() {
        let mut t = Telemetry::default();
        for i in 0..(LOG_CAPACITY + 20) {
            t.log("test", format!("entry {i}"));
        }
        let entries = t.entries();
        assert_eq!(entries.len(), LOG_CAPACITY);
        assert_eq!(entries[0].message, "entry 20");
        assert_eq!(
            entries.last().unwrap().message,
            format!("entry {}", LOG_CAPACITY + 19)
        );
        assert!(entries.windows(2).all(|w| w[0].time_ms <= w[1].time_ms));
    }

    #[test]
    fn entries_since_returns_only_the_newer_ones() {
        let mut t = Telemetry::default();
        assert!(t.entries_since(0).is_empty());
        for i in 0..5 {
            t.log("test", format!("entry {i}"));
        }
        let seqs = |v: Vec<LogEntry>| v.iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(t.entries_since(0)), vec![1, 2, 3, 4, 5]);
        assert_eq!(seqs(t.entries_since(3)), vec![4, 5]);
        assert_eq!(t.entries_since(3)[0].message, "entry 3");
        assert!(t.entries_since(5).is_empty());
        assert!(t.entries_since(u64::MAX).is_empty());
    }

    #[test]
    fn entries_since_skips_what_fell_out_of_the_ring() {
        let mut t = Telemetry::default();
        for i in 0..(LOG_CAPACITY + 20) {
            t.log("test", format!("entry {i}"));
        }
        let last = (LOG_CAPACITY + 20) as u64;
        // A reader that saw 10 entries missed 10 more that fell out: the ring starts at 21.
        let since = t.entries_since(10);
        assert_eq!(since.len(), LOG_CAPACITY);
        assert_eq!(since[0].seq, 21);
        assert_eq!(since.last().unwrap().seq, last);
        assert!(since.windows(2).all(|w| w[1].seq == w[0].seq + 1));
        assert_eq!(t.entries_since(last - 2).len(), 2);
        assert_eq!(t.entries(), t.entries_since(0));
    }

    #[test]
    fn counters_add_up() {
        let mut t = Telemetry::default();
        t.tool_call("read_node", true, Duration::from_millis(3));
        t.tool_call("read_node", false, Duration::from_millis(2));
        t.llm_request("local", true, Duration::from_millis(100), (50, 7));
        t.llm_request("local", false, Duration::from_millis(10), (0, 0));
        assert_eq!(
            t.tools["read_node"],
            Counters {
                calls: 2,
                failures: 1,
                total: Duration::from_millis(5),
                prompt_tokens: 0,
                completion_tokens: 0
            }
        );
        let b = &t.backends["local"];
        assert_eq!(
            (b.calls, b.failures, b.prompt_tokens, b.completion_tokens),
            (2, 1, 50, 7)
        );
    }
}
