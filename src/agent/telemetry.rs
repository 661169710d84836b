//! What the agent did: a ring of recent log entries and counters per tool and per backend.
//! Shown by `M-x org-agent-log` and `M-x org-agent-status`.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many log entries are kept.
pub const LOG_CAPACITY: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEntry {
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
        self.log.push_back(LogEntry {
            time_ms: now_ms(),
            kind: kind.to_string(),
            message: message.into(),
        });
    }

    /// The log, oldest first.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.log.iter().cloned().collect()
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
