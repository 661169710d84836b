//! Backends as users configure them: S-expression plists (from Emacs, through
//! the Emacs skin) read into [`Backend`]s, [`EmbeddingBackend`]s and tier routing.
//! Read here in plain Rust so every default and every message is tested without Emacs.
//!
//! A chat backend is `(:name NAME :type openai :url URL :model MODEL :key KEY :price (INPUT .
//! OUTPUT) :context-window N :max-tokens N :headers ((NAME . VALUE) …) :connect-timeout S
//! :first-byte-timeout S :idle-timeout S :total-timeout S)`; an embedding backend is `(:type
//! openai|ollama|gemini :url URL :model MODEL :name NAME :key KEY :headers … :encoding
//! float|base64 …)` with the same four timeouts. Names (`:type`, `:encoding`, tiers) are
//! symbols, keywords or strings, as Emacs `(format "%s" …)` takes them; a number is an integer
//! or a float wherever a float is wanted, as Emacs `float` takes it.

use crate::llm::cascade::{Tier, TierMember};
use crate::llm::embeddings::{EmbeddingBackend, EmbeddingWire, EncodingFormat};
use crate::llm::endpoint::Endpoint;
use crate::llm::http::Backend;
use crate::llm::prices::{Price, Prices};
use crate::llm::wire::Wire;
use crate::sexp::fields::Fields;
use crate::sexp::{print, SexpError, Value};
use std::time::Duration;

/// The longest timeout a configuration sets, in seconds (a day); longer ones are cut to it.
const MAX_CONFIGURED_TIMEOUT_SECS: f64 = 86_400.0;

/// What is wrong with a backend configuration, worded for the user who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("the backend has no :url")]
    NoUrl,
    /// `written` as the user wrote it (a keyword with its colon).
    #[error("unknown backend :type {written} (known: {known})")]
    UnknownWire { written: String, known: String },
    #[error("no backend is configured")]
    NoBackend,
    #[error("two backends are named {0:?}; give each its own :name")]
    DuplicateName(String),
    #[error("unknown tier {0} in the model tiers")]
    UnknownTier(String),
    /// The key (`url`, `model`) the embedding backend lacks.
    #[error("the embedding backend has no :{0}")]
    EmbeddingLacks(&'static str),
    #[error("unknown embedding :type {0} (openai, ollama or gemini)")]
    UnknownEmbeddingWire(String),
    #[error("unknown :encoding {0} (float or base64)")]
    UnknownEncoding(String),
    /// The tier a turn asks for (`:tier`) is not one.
    #[error("unknown tier {0} (reflex, cognition or reasoning)")]
    UnknownTurnTier(String),
    /// A tier's backends cannot be found (a name the tier lists is not configured).
    #[error("{0}")]
    Routing(String),
    /// `org-agent-budget :over TIER` with no entry of its own for TIER.
    #[error(
        "org-agent-budget :over {0} needs an entry for {0} in org-agent-model-tiers (its \
         cheaper backends)"
    )]
    BudgetTierWithoutBackends(String),
    #[error("org-agent-budget :over is refuse or a tier, not {0}")]
    BudgetOver(String),
    #[error("tool parameters are not JSON: {0}")]
    ToolParameters(String),
    /// A value of the wrong type or shape; the message names the key and what was there.
    #[error("{0}")]
    Shape(String),
}

impl From<SexpError> for ConfigError {
    fn from(e: SexpError) -> ConfigError {
        ConfigError::Shape(e.to_string())
    }
}

impl Backend {
    /// The backend a plist configures. Defaults: `:type` openai, `:model` `"default"`,
    /// `:name` `"MODEL @ URL"`, timeouts as [`crate::llm::Timeouts::default`]. A
    /// `:context-window` below 0 is 0, a `:max-tokens` below 1 is 1.
    pub fn from_sexp(plist: &Value) -> Result<Backend, ConfigError> {
        let f = Fields::new(plist, "backend")?;
        let url = f.opt_string("url")?.ok_or(ConfigError::NoUrl)?;
        let model = f
            .opt_string("model")?
            .unwrap_or_else(|| "default".to_owned());
        let wire = match f.name("type")? {
            None => Wire::OpenAi,
            Some(name) => Wire::from_name(&name).ok_or_else(|| ConfigError::UnknownWire {
                written: match f.get("type") {
                    Some(Value::Keyword(k)) => format!(":{k}"),
                    _ => name,
                },
                known: Wire::ALL.map(Wire::name).join(", "),
            })?,
        };
        let name = f
            .opt_string("name")?
            .unwrap_or_else(|| format!("{model} @ {url}"));
        let mut backend = Backend::with_wire(wire, url, model);
        backend.endpoint.name = name;
        read_connection(&f, &mut backend.endpoint)?;
        backend.price = f.number_pair("price")?;
        backend.context_window = f.integer("context-window")?.map(|n| n.max(0) as u64);
        backend.max_tokens = f.integer("max-tokens")?.map(|n| n.max(1) as u64);
        backend.vision = f.flag("vision");
        Ok(backend)
    }
}

/// The cascade a configuration lists: one backend plist, or a list of them in order. Names
/// must differ: they key cool-downs, prices and tiers.
pub fn backends_from_sexp(value: &Value) -> Result<Vec<Backend>, ConfigError> {
    if let Value::Cons(cell) = value {
        if matches!(cell.car(), Value::Keyword(_)) {
            return Ok(vec![Backend::from_sexp(value)?]);
        }
    }
    let plists = items(
        value,
        "the backends: expected a backend plist or a list of them",
    )?;
    if plists.is_empty() {
        return Err(ConfigError::NoBackend);
    }
    let backends = plists
        .into_iter()
        .map(Backend::from_sexp)
        .collect::<Result<Vec<_>, _>>()?;
    for (i, b) in backends.iter().enumerate() {
        let name = &b.endpoint.name;
        if backends[..i]
            .iter()
            .any(|other| &other.endpoint.name == name)
        {
            return Err(ConfigError::DuplicateName(name.clone()));
        }
    }
    Ok(backends)
}

/// Tier routing from an alist `((TIER NAME-OR-(NAME . MODEL) …) …)`, TIER a symbol or keyword
/// (`reflex`, `cognition`, `reasoning`), NAME a backend's name, MODEL another model on it.
pub fn tiers_from_sexp(value: &Value) -> Result<Vec<(Tier, Vec<TierMember>)>, ConfigError> {
    const SHAPE: &str = "the model tiers: expected ((TIER NAME-OR-(NAME . MODEL) …) …)";
    let mut tiers = Vec::new();
    for entry in items(value, SHAPE)? {
        let Value::Cons(cell) = entry else {
            return Err(ConfigError::Shape(format!(
                "{SHAPE}, found {}",
                print(entry)
            )));
        };
        let written = as_written(cell.car());
        let tier = Tier::from_name(&written).ok_or(ConfigError::UnknownTier(written))?;
        let mut members = Vec::new();
        for member in items(cell.cdr(), SHAPE)? {
            let bad = || ConfigError::Shape(format!("{SHAPE}, found {}", print(member)));
            members.push(match member {
                Value::Cons(pair) => (
                    text(pair.car()).ok_or_else(bad)?,
                    Some(text(pair.cdr()).ok_or_else(bad)?),
                ),
                atom => (text(atom).ok_or_else(bad)?, None),
            });
        }
        tiers.push((tier, members));
    }
    Ok(tiers)
}

/// The user's price table (`org-agent-prices`): `((PATTERN INPUT OUTPUT [CACHED]) …)`, USD
/// per million tokens, PATTERN a string or symbol matched against the model's name.
pub fn prices_from_sexp(value: &Value) -> Result<Prices, ConfigError> {
    const SHAPE: &str = "org-agent-prices: expected ((PATTERN INPUT OUTPUT [CACHED]) …)";
    let mut entries = Vec::new();
    for entry in items(value, SHAPE)? {
        let bad = || ConfigError::Shape(format!("{SHAPE}, found {}", print(entry)));
        let fields = items(entry, SHAPE)?;
        let (Some(pattern), numbers) = (
            fields.first().and_then(|v| text(v)),
            &fields[1.min(fields.len())..],
        ) else {
            return Err(bad());
        };
        let numbers = numbers
            .iter()
            .map(|v| v.as_f64().filter(|n| n.is_finite() && *n >= 0.0))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(bad)?;
        let price = match numbers[..] {
            [input, output] => Price {
                input,
                output,
                cached: None,
            },
            [input, output, cached] => Price {
                input,
                output,
                cached: Some(cached),
            },
            _ => return Err(bad()),
        };
        entries.push((pattern, price));
    }
    Ok(Prices::new(entries))
}

impl EmbeddingBackend {
    /// The embedding backend a plist configures; `:url` and `:model` are required.
    /// Defaults: `:type` openai, `:name` the type's name, `:encoding` float, timeouts as
    /// [`crate::llm::Timeouts::default`].
    pub fn from_sexp(plist: &Value) -> Result<EmbeddingBackend, ConfigError> {
        let f = Fields::new(plist, "embedding backend")?;
        let wire = match f.name("type")? {
            None => EmbeddingWire::OpenAi,
            Some(name) => {
                EmbeddingWire::from_name(&name).ok_or(ConfigError::UnknownEmbeddingWire(name))?
            }
        };
        let url = f
            .opt_string("url")?
            .ok_or(ConfigError::EmbeddingLacks("url"))?;
        let model = f
            .opt_string("model")?
            .ok_or(ConfigError::EmbeddingLacks("model"))?;
        let mut backend = EmbeddingBackend::new(wire, url, model);
        if let Some(name) = f.opt_string("name")? {
            backend.endpoint.name = name;
        }
        read_connection(&f, &mut backend.endpoint)?;
        if let Some(name) = f.name("encoding")? {
            backend.encoding =
                EncodingFormat::from_name(&name).ok_or(ConfigError::UnknownEncoding(name))?;
        }
        Ok(backend)
    }
}

/// What chat and embedding plists both set on an endpoint: `:key`, `:headers` and the four
/// timeouts. A timeout that is not a positive finite number of seconds leaves the default.
fn read_connection(f: &Fields, endpoint: &mut Endpoint) -> Result<(), ConfigError> {
    if let Some(key) = f.opt_string("key")? {
        endpoint.api_key = Some(key);
    }
    endpoint.headers.extend(f.pairs("headers")?);
    let t = &mut endpoint.timeouts;
    for (key, slot) in [
        ("connect-timeout", &mut t.connect),
        ("first-byte-timeout", &mut t.first_byte),
        ("idle-timeout", &mut t.idle),
        ("total-timeout", &mut t.total),
    ] {
        if let Some(secs) = f.number(key)? {
            if secs.is_finite() && secs > 0.0 {
                *slot = Duration::from_secs_f64(secs.min(MAX_CONFIGURED_TIMEOUT_SECS));
            }
        }
    }
    Ok(())
}

/// The items of a proper list (none for nil); `shape` says what was expected otherwise.
fn items<'v>(list: &'v Value, shape: &str) -> Result<Vec<&'v Value>, ConfigError> {
    crate::sexp::list_items(list)
        .map_err(|_| ConfigError::Shape(format!("{shape}, found {}", print(list))))
}

/// A string, or a symbol's name: a backend or model name.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) | Value::Symbol(s) => Some(s.to_string()),
        _ => None,
    }
}

/// `v` as Emacs `(format "%s" v)` writes it: a keyword with its colon, a string without
/// quotes.
fn as_written(v: &Value) -> String {
    match v {
        Value::Keyword(k) => format!(":{k}"),
        Value::String(s) | Value::Symbol(s) => s.to_string(),
        other => print(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::endpoint::Timeouts;

    fn read(text: &str) -> crate::sexp::Sexp {
        crate::sexp::read(text).expect("test input reads")
    }

    fn backend(text: &str) -> Result<Backend, ConfigError> {
        Backend::from_sexp(read(text).value())
    }

    fn backends(text: &str) -> Result<Vec<Backend>, ConfigError> {
        backends_from_sexp(read(text).value())
    }

    fn tiers(text: &str) -> Result<Vec<(Tier, Vec<TierMember>)>, ConfigError> {
        tiers_from_sexp(read(text).value())
    }

    fn embedding(text: &str) -> Result<EmbeddingBackend, ConfigError> {
        EmbeddingBackend::from_sexp(read(text).value())
    }

    fn message<T: std::fmt::Debug>(result: Result<T, ConfigError>) -> String {
        result
            .expect_err("the configuration is refused")
            .to_string()
    }

    #[test]
    fn a_backend_with_only_a_url_takes_every_default() {
        let b = backend(r#"(:url "http://x/v1")"#).unwrap();
        assert_eq!(b.wire, Wire::OpenAi);
        assert_eq!(b.endpoint.base_url, "http://x/v1");
        assert_eq!(b.endpoint.model, "default");
        assert_eq!(b.endpoint.name, "default @ http://x/v1");
        assert_eq!(b.endpoint.api_key, None);
        assert!(b.endpoint.headers.is_empty());
        assert_eq!(b.endpoint.timeouts, Timeouts::default());
        assert_eq!(
            (b.price, b.context_window, b.max_tokens),
            (None, None, None)
        );
        // An explicit nil is no value, as for `plist-get`.
        let b = backend(r#"(:url "http://x/v1" :model nil :type nil)"#).unwrap();
        assert_eq!(
            (b.endpoint.model.as_str(), b.wire),
            ("default", Wire::OpenAi)
        );
    }

    #[test]
    fn a_backend_reads_every_field() {
        let b = backend(
            r#"(:name "remote" :type :anthropic :url "https://api.anthropic.com/v1"
                :model "claude" :key "sk-secret-123" :price (3 . 15.5) :context-window 200000
                :max-tokens 4096 :headers (("X-Title" . "org-agent"))
                :connect-timeout 5 :first-byte-timeout 0.5 :idle-timeout 30
                :total-timeout 900)"#,
        )
        .unwrap();
        assert_eq!(b.wire, Wire::Anthropic);
        assert_eq!(b.endpoint.name, "remote");
        assert_eq!(b.endpoint.model, "claude");
        assert_eq!(b.endpoint.api_key.as_deref(), Some("sk-secret-123"));
        assert_eq!(
            b.endpoint.headers,
            vec![("X-Title".to_owned(), "org-agent".to_owned())]
        );
        assert_eq!(b.price, Some((3.0, 15.5)));
        assert_eq!(b.context_window, Some(200_000));
        assert_eq!(b.max_tokens, Some(4096));
        let t = b.endpoint.timeouts;
        assert_eq!(t.connect, Duration::from_secs(5));
        assert_eq!(t.first_byte, Duration::from_millis(500));
        assert_eq!(t.idle, Duration::from_secs(30));
        assert_eq!(t.total, Duration::from_secs(900));
        // The key stays out of Debug output.
        let shown = format!("{b:?}");
        assert!(!shown.contains("sk-secret-123") && shown.contains("[redacted]"));
        // A name given without :name is MODEL @ URL, whatever the model.
        let b = backend(r#"(:url "http://x/v1" :model "qwen")"#).unwrap();
        assert_eq!(b.endpoint.name, "qwen @ http://x/v1");
    }

    #[test]
    fn a_type_is_a_keyword_a_symbol_or_a_string() {
        for (written, wire) in [
            (":gemini", Wire::Gemini),
            ("ollama", Wire::Ollama),
            ("\"anthropic\"", Wire::Anthropic),
            ("openai", Wire::OpenAi),
        ] {
            let b = backend(&format!(r#"(:url "http://x" :type {written})"#)).unwrap();
            assert_eq!(b.wire, wire, "{written}");
        }
    }

    #[test]
    fn an_unknown_type_is_named_as_written_with_the_known_ones() {
        assert_eq!(
            message(backend(r#"(:url "http://x" :type :mistral)"#)),
            "unknown backend :type :mistral (known: openai, anthropic, gemini, ollama)"
        );
        assert_eq!(
            message(backend(r#"(:url "http://x" :type mistral)"#)),
            "unknown backend :type mistral (known: openai, anthropic, gemini, ollama)"
        );
    }

    #[test]
    fn a_backend_without_a_url_is_refused() {
        assert_eq!(
            message(backend(r#"(:model "m")"#)),
            "the backend has no :url"
        );
        assert_eq!(message(backend("nil")), "the backend has no :url");
    }

    #[test]
    fn counts_are_clamped_and_must_be_integers() {
        let b = backend(r#"(:url "http://x" :context-window -5 :max-tokens 0)"#).unwrap();
        assert_eq!((b.context_window, b.max_tokens), (Some(0), Some(1)));
        assert_eq!(
            message(backend(r#"(:url "http://x" :context-window 8192.5)"#)),
            "backend: :context-window must be an integer, got 8192.5"
        );
        assert_eq!(
            message(backend(r#"(:url "http://x" :max-tokens "many")"#)),
            "backend: :max-tokens must be an integer, got \"many\""
        );
    }

    #[test]
    fn timeouts_are_positive_and_at_most_a_day() {
        let b = backend(
            r#"(:url "http://x" :connect-timeout 0 :first-byte-timeout -3
                :idle-timeout 1000000 :total-timeout 86400.0)"#,
        )
        .unwrap();
        let t = b.endpoint.timeouts;
        let default = Timeouts::default();
        assert_eq!(t.connect, default.connect);
        assert_eq!(t.first_byte, default.first_byte);
        assert_eq!(t.idle, Duration::from_secs(86_400));
        assert_eq!(t.total, Duration::from_secs(86_400));
        assert_eq!(
            message(backend(r#"(:url "http://x" :idle-timeout "soon")"#)),
            "backend: :idle-timeout must be a number, got \"soon\""
        );
    }

    #[test]
    fn wrong_shapes_name_the_key() {
        assert_eq!(
            message(backend(r#"(:url "http://x" :price 3)"#)),
            "backend: :price must be a pair of numbers (A . B), got 3"
        );
        assert_eq!(
            message(backend(r#"(:url 42)"#)),
            "backend: :url must be a string, got 42"
        );
        assert_eq!(
            message(backend(r#"(:url "http://x" :headers "X-A: b")"#)),
            "backend: :headers must be an alist of strings or a plist, found \"X-A: b\""
        );
        assert_eq!(
            message(backend(r#""http://x""#)),
            "backend: expected a plist, got \"http://x\""
        );
    }

    #[test]
    fn one_plist_or_a_list_of_them() {
        let one = backends(r#"(:url "http://a" :name "a")"#).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].endpoint.name, "a");
        let two =
            backends(r#"((:url "http://a" :name "a") (:url "http://b" :type ollama))"#).unwrap();
        let names: Vec<&str> = two.iter().map(|b| b.endpoint.name.as_str()).collect();
        assert_eq!(names, ["a", "default @ http://b"]);
        assert_eq!(two[1].wire, Wire::Ollama);
    }

    #[test]
    fn an_empty_cascade_is_refused() {
        assert_eq!(message(backends("nil")), "no backend is configured");
        assert_eq!(message(backends("()")), "no backend is configured");
    }

    #[test]
    fn two_backends_may_not_share_a_name() {
        assert_eq!(
            message(backends(
                r#"((:url "http://a" :name "x") (:url "http://b" :name "x"))"#
            )),
            "two backends are named \"x\"; give each its own :name"
        );
        // Default names collide too: same model at the same URL.
        assert_eq!(
            message(backends(r#"((:url "http://a") (:url "http://a"))"#)),
            "two backends are named \"default @ http://a\"; give each its own :name"
        );
    }

    #[test]
    fn a_cascade_that_is_not_a_list_is_refused() {
        assert_eq!(
            message(backends(r#""http://a""#)),
            "the backends: expected a backend plist or a list of them, found \"http://a\""
        );
        // A bad backend inside the list is reported as itself.
        assert_eq!(
            message(backends(r#"((:url "http://a") (:model "m"))"#)),
            "the backend has no :url"
        );
    }

    #[test]
    fn tiers_name_backends_or_backends_with_another_model() {
        let t = tiers(r#"((reflex "local") (:reasoning ("remote" . "big") remote) (cognition))"#)
            .unwrap();
        assert_eq!(
            t,
            vec![
                (Tier::Reflex, vec![("local".to_owned(), None)]),
                (
                    Tier::Reasoning,
                    vec![
                        ("remote".to_owned(), Some("big".to_owned())),
                        ("remote".to_owned(), None)
                    ]
                ),
                (Tier::Cognition, vec![]),
            ]
        );
        assert!(tiers("nil").unwrap().is_empty());
    }

    #[test]
    fn an_unknown_tier_is_named_as_written() {
        assert_eq!(
            message(tiers(r#"((fast "local"))"#)),
            "unknown tier fast in the model tiers"
        );
        assert_eq!(
            message(tiers(r#"((:fast "local"))"#)),
            "unknown tier :fast in the model tiers"
        );
    }

    #[test]
    fn malformed_tiers_are_refused() {
        assert_eq!(
            message(tiers("(reflex)")),
            "the model tiers: expected ((TIER NAME-OR-(NAME . MODEL) …) …), found reflex"
        );
        assert_eq!(
            message(tiers("((reflex 42))")),
            "the model tiers: expected ((TIER NAME-OR-(NAME . MODEL) …) …), found 42"
        );
        assert_eq!(
            message(tiers(r#"((reflex ("a" "b")))"#)),
            "the model tiers: expected ((TIER NAME-OR-(NAME . MODEL) …) …), found (\"a\" \"b\")"
        );
        assert_eq!(
            message(tiers("reflex")),
            "the model tiers: expected ((TIER NAME-OR-(NAME . MODEL) …) …), found reflex"
        );
    }

    #[test]
    fn an_embedding_backend_takes_its_defaults() {
        let b = embedding(r#"(:url "http://x/v1" :model "nomic")"#).unwrap();
        assert_eq!(b.wire, EmbeddingWire::OpenAi);
        assert_eq!(b.endpoint.name, "openai");
        assert_eq!(b.endpoint.model, "nomic");
        assert_eq!(b.encoding, EncodingFormat::Float);
        assert_eq!(b.endpoint.timeouts, Timeouts::default());
        assert_eq!(b.endpoint.api_key, None);
        let b = embedding(r#"(:type :ollama :url "http://x" :model "m")"#).unwrap();
        assert_eq!(
            (b.wire, b.endpoint.name.as_str()),
            (EmbeddingWire::Ollama, "ollama")
        );
    }

    #[test]
    fn an_embedding_backend_reads_every_field() {
        let b = embedding(
            r#"(:type gemini :url "https://g/v1beta" :model "text-embedding-004" :name "g"
                :key "sk-secret-123" :headers (("X-A" . "b")) :encoding base64
                :connect-timeout 3 :first-byte-timeout 600 :idle-timeout 0
                :total-timeout 100000)"#,
        )
        .unwrap();
        assert_eq!(b.wire, EmbeddingWire::Gemini);
        assert_eq!(b.endpoint.name, "g");
        assert_eq!(b.endpoint.api_key.as_deref(), Some("sk-secret-123"));
        assert_eq!(b.endpoint.headers, vec![("X-A".to_owned(), "b".to_owned())]);
        assert_eq!(b.encoding, EncodingFormat::Base64);
        let t = b.endpoint.timeouts;
        assert_eq!(t.connect, Duration::from_secs(3));
        assert_eq!(t.first_byte, Duration::from_secs(600));
        assert_eq!(t.idle, Timeouts::default().idle);
        assert_eq!(t.total, Duration::from_secs(86_400));
        assert!(!format!("{b:?}").contains("sk-secret-123"));
    }

    #[test]
    fn embedding_errors() {
        assert_eq!(
            message(embedding(r#"(:type :cohere :url "http://x" :model "m")"#)),
            "unknown embedding :type cohere (openai, ollama or gemini)"
        );
        assert_eq!(
            message(embedding(r#"(:model "m")"#)),
            "the embedding backend has no :url"
        );
        assert_eq!(
            message(embedding(r#"(:url "http://x")"#)),
            "the embedding backend has no :model"
        );
        assert_eq!(
            message(embedding(r#"(:url "http://x" :model "m" :encoding hex)"#)),
            "unknown :encoding hex (float or base64)"
        );
        assert_eq!(
            message(embedding(
                r#"(:url "http://x" :model "m" :first-byte-timeout (1))"#
            )),
            "embedding backend: :first-byte-timeout must be a number, got (1)"
        );
    }

    #[test]
    fn the_users_prices_read_with_or_without_a_cached_rate() {
        let prices =
            prices_from_sexp(read(r#"(("my-model" 1 2) (gpt-4o 2.5 10 1.25))"#).value()).unwrap();
        let b = |model: &str| Backend::new("https://x.example/v1", model);
        assert_eq!(
            prices
                .of(&b("my-model-v2"))
                .map(|p| (p.input, p.output, p.cached)),
            Some((1.0, 2.0, None))
        );
        assert_eq!(prices.of(&b("gpt-4o")).and_then(|p| p.cached), Some(1.25));
        assert_eq!(prices_from_sexp(&Value::Nil).unwrap(), Prices::default());
        for bad in [
            r#"(("x" 1))"#,
            r#"(("x" 1 2 3 4))"#,
            r#"(("x" "1" 2))"#,
            r#"((1 2 3))"#,
            r#"(("x" -1 2))"#,
            "x",
        ] {
            let e = prices_from_sexp(read(bad).value()).unwrap_err().to_string();
            assert!(e.starts_with("org-agent-prices: expected"), "{bad}: {e}");
        }
    }
}
