//! What a request costs: prices per model, and the one function that says what a backend
//! charges ([`Prices::of`]). The chat's usage events, the header line, `org-agent-status`
//! and the budget gate all take their figures from it.
//!
//! Where a price comes from, first match wins:
//! 1. the backend's own `:price (INPUT . OUTPUT)`;
//! 2. the user's table (`org-agent-prices`), the longest pattern that matches the model;
//! 3. a local server (Ollama's own API, or a URL on this machine) costs nothing;
//! 4. the built-in table below, the longest pattern that matches the model.
//!
//! A model none of them knows has no price: its cost is unknown (shown as `?`), never
//! guessed. A pattern matches a model name that begins with it, ignoring case, either the
//! whole name or the part after its last `/` (`openai/gpt-4o`, `models/gemini-2.0-flash`).

use crate::llm::http::Backend;
use crate::llm::wire::Wire;

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens served from the provider's cache; `None`: at the input price.
    pub cached: Option<f64>,
}

/// What nothing costs: a model on this machine.
pub const FREE: Price = Price {
    input: 0.0,
    output: 0.0,
    cached: Some(0.0),
};

/// The tokens of one request (or several, added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
    /// Of `prompt`, those the provider served from its cache (0 when it does not say).
    pub cached: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.prompt + self.completion
    }
}

impl Price {
    /// What `tokens` cost at this price, in USD: cached prompt tokens at the cached rate.
    pub fn cost(&self, tokens: Tokens) -> f64 {
        let cached = tokens.cached.min(tokens.prompt);
        let fresh = tokens.prompt - cached;
        (fresh as f64 * self.input
            + cached as f64 * self.cached.unwrap_or(self.input)
            + tokens.completion as f64 * self.output)
            / 1e6
    }
}

/// What `tokens` cost at `price`; `None` when the price is unknown.
pub fn cost(price: Option<Price>, tokens: Tokens) -> Option<f64> {
    price.map(|p| p.cost(tokens))
}

/// The built-in prices: (model pattern, input, output, cached input), USD per million tokens,
/// standard (not batch) rates, the lowest context tier where a provider has several (Gemini
/// 2.5 Pro and 1.5 charge more for long prompts). Taken from the providers' public pricing
/// pages (openai.com/api/pricing, anthropic.com/pricing, ai.google.dev/pricing) as they stood
/// in late 2025; written down here on 2026-11-27 from those published figures, not fetched.
/// Prices change: `org-agent-prices` (or a backend's `:price`) overrides any of them.
const BUILT_IN: &[(&str, f64, f64, Option<f64>)] = &[
    // OpenAI
    ("gpt-4o", 2.50, 10.00, Some(1.25)),
    ("gpt-4o-mini", 0.15, 0.60, Some(0.075)),
    ("gpt-4.1", 2.00, 8.00, Some(0.50)),
    ("gpt-4.1-mini", 0.40, 1.60, Some(0.10)),
    ("gpt-4.1-nano", 0.10, 0.40, Some(0.025)),
    ("o1", 15.00, 60.00, Some(7.50)),
    ("o1-mini", 1.10, 4.40, Some(0.55)),
    ("o3", 2.00, 8.00, Some(0.50)),
    ("o3-mini", 1.10, 4.40, Some(0.55)),
    ("o4-mini", 1.10, 4.40, Some(0.275)),
    // Anthropic (cache reads at a tenth of the input price)
    ("claude-3-5-haiku", 0.80, 4.00, Some(0.08)),
    ("claude-haiku-4-5", 1.00, 5.00, Some(0.10)),
    ("claude-3-5-sonnet", 3.00, 15.00, Some(0.30)),
    ("claude-3-7-sonnet", 3.00, 15.00, Some(0.30)),
    ("claude-sonnet-4", 3.00, 15.00, Some(0.30)),
    ("claude-3-opus", 15.00, 75.00, Some(1.50)),
    ("claude-opus-4", 15.00, 75.00, Some(1.50)),
    ("claude-opus-4-5", 5.00, 25.00, Some(0.50)),
    // Google Gemini
    ("gemini-1.5-flash", 0.075, 0.30, None),
    ("gemini-1.5-flash-8b", 0.0375, 0.15, None),
    ("gemini-1.5-pro", 1.25, 5.00, None),
    ("gemini-2.0-flash", 0.10, 0.40, Some(0.025)),
    ("gemini-2.0-flash-lite", 0.075, 0.30, None),
    ("gemini-2.5-flash", 0.30, 2.50, None),
    ("gemini-2.5-flash-lite", 0.10, 0.40, None),
    ("gemini-2.5-pro", 1.25, 10.00, None),
];

/// The price table: the user's entries over the built-in ones.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    /// `org-agent-prices`: (pattern, price), patterns lower-case.
    user: Vec<(String, Price)>,
}

impl Prices {
    /// The built-in table under the user's `entries` (pattern, price). A pattern's trailing
    /// `*` is dropped: patterns match by prefix anyway.
    pub fn new(entries: Vec<(String, Price)>) -> Prices {
        Prices {
            user: entries
                .into_iter()
                .map(|(p, price)| (p.trim_end_matches('*').to_lowercase(), price))
                .collect(),
        }
    }

    /// What `backend` charges, or `None` when nobody knows. The one place a price is
    /// decided (see the module's documentation for the order).
    pub fn of(&self, backend: &Backend) -> Option<Price> {
        if let Some((input, output)) = backend.price {
            return Some(Price {
                input,
                output,
                cached: None,
            });
        }
        let model = &backend.endpoint.model;
        if let Some(p) = longest(
            self.user.iter().map(|(p, price)| (p.as_str(), *price)),
            model,
        ) {
            return Some(p);
        }
        if is_local(backend) {
            return Some(FREE);
        }
        longest(
            BUILT_IN.iter().map(|&(p, input, output, cached)| {
                (
                    p,
                    Price {
                        input,
                        output,
                        cached,
                    },
                )
            }),
            model,
        )
    }
}

/// The price of the longest of `patterns` that `model` begins with (the whole name or the
/// part after its last `/`), ignoring case.
fn longest<'p>(patterns: impl Iterator<Item = (&'p str, Price)>, model: &str) -> Option<Price> {
    let model = model.to_lowercase();
    let short = model.rsplit('/').next().unwrap_or(&model);
    patterns
        .filter(|(p, _)| !p.is_empty() && (model.starts_with(p) || short.starts_with(p)))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, price)| price)
}

/// Whether `backend` runs on this machine: Ollama's own API, or a loopback URL
/// (`localhost`, `127.x.x.x`, `[::1]`). A proxy on this machine that forwards to a paid API
/// needs a `:price`.
fn is_local(backend: &Backend) -> bool {
    if backend.wire == Wire::Ollama {
        return true;
    }
    let url = backend.endpoint.base_url.to_lowercase();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host == "localhost" || host.ends_with(".localhost") || host == "::1" || host.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosted(model: &str) -> Backend {
        Backend::new("https://api.example.com/v1", model)
    }

    fn price(input: f64, output: f64, cached: Option<f64>) -> Price {
        Price {
            input,
            output,
            cached,
        }
    }

    #[test]
    fn the_longest_prefix_wins() {
        let p = Prices::default();
        assert_eq!(p.of(&hosted("gpt-4o")).unwrap().input, 2.50);
        assert_eq!(p.of(&hosted("gpt-4o-2024-08-06")).unwrap().input, 2.50);
        assert_eq!(p.of(&hosted("gpt-4o-mini")).unwrap().input, 0.15);
        assert_eq!(
            p.of(&hosted("GPT-4.1-mini-2025-04-14")).unwrap().input,
            0.40
        );
        assert_eq!(p.of(&hosted("o3-mini")).unwrap().output, 4.40);
        assert_eq!(p.of(&hosted("o3")).unwrap().input, 2.00);
        assert_eq!(
            p.of(&hosted("claude-opus-4-1-20250805")).unwrap().input,
            15.0
        );
        assert_eq!(
            p.of(&hosted("claude-opus-4-5-20251101")).unwrap().input,
            5.0
        );
        assert_eq!(
            p.of(&hosted("claude-sonnet-4-5-20250929")).unwrap().output,
            15.0
        );
        assert_eq!(p.of(&hosted("gemini-2.0-flash-lite")).unwrap().input, 0.075);
        // A provider's prefix before the model's own name.
        assert_eq!(p.of(&hosted("models/gemini-2.5-pro")).unwrap().input, 1.25);
        assert_eq!(p.of(&hosted("openai/gpt-4o-mini")).unwrap().input, 0.15);
    }

    #[test]
    fn an_unknown_model_has_no_price() {
        let p = Prices::default();
        assert_eq!(p.of(&hosted("mystery-model-7b")), None);
        // Not a prefix of the name: "o1" does not price "pro-1".
        assert_eq!(p.of(&hosted("pro1")), None);
        assert_eq!(cost(None, Tokens::default()), None);
    }

    #[test]
    fn local_servers_cost_nothing() {
        let p = Prices::default();
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080/v1",
            "http://[::1]:8080/v1",
        ] {
            assert_eq!(p.of(&Backend::new(url, "llama3")), Some(FREE), "{url}");
        }
        let ollama = Backend::with_wire(Wire::Ollama, "http://gpu-box:11434", "qwen3");
        assert_eq!(p.of(&ollama), Some(FREE));
        assert_eq!(
            p.of(&Backend::new("http://localhost.example.com", "x")),
            None
        );
    }

    #[test]
    fn the_backends_price_then_the_users_table_override_the_built_in_one() {
        let users = Prices::new(vec![
            ("gpt-4o*".into(), price(1.0, 2.0, None)),
            ("LLAMA".into(), price(0.5, 0.5, None)),
        ]);
        assert_eq!(users.of(&hosted("gpt-4o")), Some(price(1.0, 2.0, None)));
        // The longest pattern still wins: the user's gpt-4o is shorter than gpt-4o-mini,
        // but the user's table is asked first.
        assert_eq!(
            users.of(&hosted("gpt-4o-mini")),
            Some(price(1.0, 2.0, None))
        );
        // The user's table is asked before a local server is taken for free.
        assert_eq!(
            users.of(&Backend::new("http://127.0.0.1:1/v1", "llama3")),
            Some(price(0.5, 0.5, None))
        );
        let mut own = hosted("gpt-4o");
        own.price = Some((3.0, 4.0));
        assert_eq!(users.of(&own), Some(price(3.0, 4.0, None)));
    }

    #[test]
    fn cached_prompt_tokens_cost_the_cached_rate() {
        let p = price(3.0, 15.0, Some(0.3));
        let t = Tokens {
            prompt: 1_000_000,
            completion: 100_000,
            cached: 500_000,
        };
        // 0.5 M fresh at 3, 0.5 M cached at 0.3, 0.1 M out at 15.
        assert!((p.cost(t) - (1.5 + 0.15 + 1.5)).abs() < 1e-9);
        // Without a cached rate, at the input price; a server's count above the prompt is cut.
        assert!((price(3.0, 15.0, None).cost(t) - 4.5).abs() < 1e-9);
        let odd = Tokens {
            cached: 2_000_000,
            ..t
        };
        assert!((p.cost(odd) - (0.3 + 1.5)).abs() < 1e-9);
        assert_eq!(FREE.cost(t), 0.0);
    }
}
