//! Budgets: how many tokens (and, where prices are known, how much money) a
//! conversation and a day may spend on LLM requests. A gate before every request: a request
//! that would go over is refused, or sent to a cheaper tier when the user said so — never
//! sent silently.
//!
//! Requests are estimated before they are sent (prompt bytes / 4, see
//! [`crate::llm::estimate_tokens`]); what they really used (the provider's usage, else
//! the estimate plus the answer's estimate) is recorded after. The day's spending is kept in
//! `usage.json` in the state directory, so restarting Emacs does not reset it. Costs come
//! from [`crate::llm::prices`], the figures the chat shows: a request whose price is unknown
//! counts no money (its tokens are kept apart, as unpriced).

use crate::llm::cascade::{Answer, Cascade};
use crate::llm::completion::Completion;
use crate::llm::estimate_tokens;
use crate::llm::prices::{self, Price, Tokens};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// The limits; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    pub conversation_tokens: Option<u64>,
    pub day_tokens: Option<u64>,
    /// In the currency of the configured prices (USD by convention).
    pub day_cost: Option<f64>,
}

/// What one day has used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DayUse {
    pub tokens: u64,
    pub cost: f64,
    /// Of `tokens`, those of requests whose price is unknown (not in `cost`).
    #[serde(default)]
    pub unpriced_tokens: u64,
}

/// Spending per day (UTC), optionally persisted.
#[derive(Debug, Default)]
pub struct Ledger {
    days: Mutex<BTreeMap<String, DayUse>>,
    path: Option<PathBuf>,
    /// Held while the file is written, so concurrent turns never interleave their writes
    /// or rename an older snapshot over a newer one.
    writing: Mutex<()>,
}

/// Days of history kept in the file.
const KEEP_DAYS: usize = 60;

impl Ledger {
    /// A ledger kept in `path` (read now if it exists; an unreadable file starts empty, it is
    /// only a record of spending).
    pub fn at(path: PathBuf) -> Ledger {
        let days = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Ledger {
            days: Mutex::new(days),
            path: Some(path),
            writing: Mutex::new(()),
        }
    }

    /// What `day` (YYYY-MM-DD) has used.
    pub fn used(&self, day: &str) -> DayUse {
        self.days.lock().get(day).copied().unwrap_or_default()
    }

    /// Records a request of `day` and what it cost (`None`: unknown), and saves the ledger
    /// (best effort: a full disk must not stop the agent; the figures stay in memory).
    pub fn add(&self, day: &str, tokens: u64, cost: Option<f64>) {
        // The file lock first: the snapshot taken under it is the newest when written.
        let _writing = self.writing.lock();
        let snapshot = {
            let mut days = self.days.lock();
            let d = days.entry(day.to_owned()).or_default();
            d.tokens += tokens;
            match cost {
                Some(cost) => d.cost += cost,
                None => d.unpriced_tokens += tokens,
            }
            while days.len() > KEEP_DAYS {
                let Some(oldest) = days.keys().next().cloned() else {
                    break;
                };
                days.remove(&oldest);
            }
            serde_json::to_vec(&*days).unwrap_or_default()
        };
        if let Some(path) = &self.path {
            let tmp = path.with_extension("json.tmp");
            if std::fs::write(&tmp, &snapshot).is_ok() {
                let _ = std::fs::rename(&tmp, path);
            }
        }
    }
}

/// Today's date (UTC) as YYYY-MM-DD.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date((secs / 86_400) as i64)
}

/// The date `days` days after 1970-01-01, as YYYY-MM-DD.
pub fn civil_date(days: i64) -> String {
    crate::store::date::Day(days).to_string()
}

/// Why a request estimated at `tokens` (costing about `cost`) may not be sent, if it may not:
/// `conversation` tokens used so far in the conversation, `day` today's use.
pub fn over(
    limits: &Limits,
    conversation: u64,
    day: DayUse,
    tokens: u64,
    cost: f64,
) -> Option<String> {
    if let Some(max) = limits.conversation_tokens {
        if conversation + tokens > max {
            return Some(format!(
                "this conversation would use about {} tokens, over its budget of {max} \
                 (org-agent-budget :conversation-tokens)",
                conversation + tokens
            ));
        }
    }
    if let Some(max) = limits.day_tokens {
        if day.tokens + tokens > max {
            return Some(format!(
                "today would use about {} tokens, over the daily budget of {max} \
                 (org-agent-budget :day-tokens)",
                day.tokens + tokens
            ));
        }
    }
    if let Some(max) = limits.day_cost {
        if cost > 0.0 && day.cost + cost > max {
            return Some(format!(
                "today would cost about {:.4}, over the daily budget of {max} \
                 (org-agent-budget :day-cost)",
                day.cost + cost
            ));
        }
    }
    None
}

/// The budget gate of a turn: its limits, the ledger of the days, and where a request over
/// the limits goes instead.
pub struct Budget {
    pub limits: Limits,
    pub ledger: Arc<Ledger>,
    /// A cheaper tier; `None`: a request over budget is refused.
    pub fallback: Option<Cascade>,
}

/// Where a request goes, as the budget decides.
pub enum Route<'a> {
    /// The cascade it was meant for.
    Within,
    /// Over budget, to the cheaper tier instead (the reason says which limit).
    Cheaper(&'a Cascade, String),
    /// Over budget and no cheaper tier: not sent.
    Refused(String),
}

impl Budget {
    /// Where a request estimated at `tokens` goes on `day`, `conversation` tokens having been
    /// used in its conversation, `price` being the price of the backend it would go to
    /// ([`crate::llm::prices::Prices::of`]; unknown: no cost is counted).
    pub fn route(
        &self,
        day: &str,
        conversation: u64,
        tokens: u64,
        price: Option<Price>,
    ) -> Route<'_> {
        let prompt = Tokens {
            prompt: tokens,
            ..Tokens::default()
        };
        let estimated_cost = prices::cost(price, prompt).unwrap_or(0.0);
        let used = self.ledger.used(day);
        match (
            over(&self.limits, conversation, used, tokens, estimated_cost),
            &self.fallback,
        ) {
            (None, _) => Route::Within,
            (Some(reason), Some(cheaper)) => Route::Cheaper(cheaper, reason),
            (Some(reason), None) => Route::Refused(reason),
        }
    }

    /// Record on `day` what a request used, at `price`; what it cost (`None`: unknown).
    pub fn charge(&self, day: &str, used: Tokens, price: Option<Price>) -> Option<f64> {
        let cost = prices::cost(price, used);
        self.ledger.add(day, used.total(), cost);
        cost
    }
}

/// What `answer` used: the provider's count (with its cached prompt tokens), else
/// `estimate` for the prompt and an estimate of the answer's text and tool arguments. Times
/// `copies` (the backends asked in consensus: their own figures do not come back, each is
/// counted as the winner).
pub fn usage(answer: &Answer, estimate: u64, copies: u64) -> Tokens {
    let t = match answer.completion.usage {
        Some(u) => Tokens {
            prompt: u.prompt_tokens,
            completion: u.completion_tokens,
            cached: u.cached_tokens.unwrap_or(0),
        },
        None => Tokens {
            prompt: estimate,
            completion: estimated_completion(&answer.completion),
            cached: 0,
        },
    };
    Tokens {
        prompt: t.prompt * copies,
        completion: t.completion * copies,
        cached: t.cached * copies,
    }
}

fn estimated_completion(c: &Completion) -> u64 {
    estimate_tokens(&c.text) as u64
        + c.tool_calls
            .iter()
            .map(|call| estimate_tokens(&call.arguments.to_string()) as u64)
            .sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_779), "2026-11-22");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(-1), "1969-12-31");
    }

    #[test]
    fn limits() {
        let l = Limits {
            conversation_tokens: Some(1_000),
            day_tokens: Some(10_000),
            day_cost: Some(1.0),
        };
        let day = DayUse {
            tokens: 9_000,
            cost: 0.99,
            unpriced_tokens: 0,
        };
        assert!(over(&l, 0, DayUse::default(), 500, 0.0).is_none());
        assert!(over(&l, 600, DayUse::default(), 500, 0.0)
            .unwrap()
            .contains(":conversation-tokens"));
        let busy_day = DayUse {
            tokens: 9_800,
            ..DayUse::default()
        };
        assert!(over(&l, 0, busy_day, 500, 0.0)
            .unwrap()
            .contains(":day-tokens"));
        assert!(over(&l, 0, day, 10, 0.02).unwrap().contains(":day-cost"));
        // A free backend is never over a cost budget.
        assert!(over(&l, 0, day, 10, 0.0).is_none());
    }

    #[test]
    fn the_gate_charges_and_estimates_at_the_prices_the_chat_shows() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget {
            limits: Limits {
                day_cost: Some(1.0),
                ..Limits::default()
            },
            ledger: Arc::new(Ledger::at(dir.path().join("usage.json"))),
            fallback: None,
        };
        let price = Some(Price {
            input: 3.0,
            output: 15.0,
            cached: Some(0.3),
        });
        let used = Tokens {
            prompt: 200_000,
            completion: 10_000,
            cached: 100_000,
        };
        let cost = budget.charge("2026-11-27", used, price).unwrap();
        assert!((cost - (0.3 + 0.03 + 0.15)).abs() < 1e-9, "{cost}");
        assert!((budget.ledger.used("2026-11-27").cost - cost).abs() < 1e-12);
        // The next request of 200k prompt tokens would cost about 0.6 more: over 1.0.
        match budget.route("2026-11-27", 0, 200_000, price) {
            Route::Refused(r) => assert!(r.contains(":day-cost"), "{r}"),
            _ => panic!("not refused"),
        }
        assert!(matches!(
            budget.route("2026-11-27", 0, 100_000, price),
            Route::Within
        ));
        // An unknown price counts tokens, apart, and no money.
        assert_eq!(budget.charge("2026-11-27", used, None), None);
        let day = budget.ledger.used("2026-11-27");
        assert_eq!((day.tokens, day.unpriced_tokens), (420_000, 210_000));
        assert!(matches!(
            budget.route("2026-11-27", 0, 10_000_000, None),
            Route::Within
        ));
    }

    #[test]
    fn the_ledger_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("usage.json");
        let l = Ledger::at(path.clone());
        l.add("2026-11-22", 100, Some(0.5));
        l.add("2026-11-22", 50, Some(0.25));
        l.add("2026-11-22", 7, None);
        let again = Ledger::at(path.clone());
        assert_eq!(
            again.used("2026-11-22"),
            DayUse {
                tokens: 157,
                cost: 0.75,
                unpriced_tokens: 7
            }
        );
        assert_eq!(again.used("2026-11-21"), DayUse::default());
        std::fs::write(&path, b"garbage").unwrap();
        assert_eq!(Ledger::at(path).used("2026-11-22"), DayUse::default());
    }
}
