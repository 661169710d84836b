//! A chat turn's options as Elisp sends them (the BACKEND and OPTIONS plists of
//! `org-agent--stimulus` and `org-agent--preview-request`), read in plain Rust: which
//! backends, tier, retry policy, bounds, context, budget, tools and audit file.

use crate::agent::turn::TurnConfig;
use crate::context::added::GivenItem;
use crate::gates::budget::Limits;
use crate::gates::permissions::Permissions;
use crate::llm::cascade::{Policy, Routing, Tier};
use crate::llm::config::{backends_from_sexp, tiers_from_sexp, ConfigError};
use crate::llm::embeddings::EmbeddingBackend;
use crate::llm::http::Backend;
use crate::llm::prices::Prices;
use crate::sexp::fields::Fields;
use crate::sexp::Value;
use crate::tools::emacs::ElispTool;
use crate::tools::shell::ShellConfig;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a chat turn is equipped with besides its backends and configuration.
#[derive(Default)]
pub struct ChatSetup {
    /// The user's system prompt (`None`: the default one).
    pub system_prompt: Option<String>,
    pub elisp_tools: Vec<ElispTool>,
    /// Where gate decisions are appended (none: not audited).
    pub audit_file: Option<PathBuf>,
    /// Whether the user may be asked (false in batch Emacs: asking means deny).
    pub interactive: bool,
    /// The embedding server, for semantic search and related notes.
    pub embedding: Option<EmbeddingBackend>,
    /// Token and cost limits, and the backends of the cheaper tier requests over them go to
    /// (none: they are refused).
    pub budget: Option<(Limits, Option<Vec<Backend>>)>,
    /// A skill in use from the start (`/NAME` in the chat), rather than loaded on demand.
    pub skill: Option<String>,
    /// The user's permissions (`org-agent-permissions`).
    pub permissions: Arc<Permissions>,
    /// The file (absolute) or buffer whose text the user's message carries (a summary of a
    /// buffer): unless it is a note with no untrusted node, the conversation has read
    /// untrusted text.
    pub pasted: Option<String>,
    /// The shell tool, when the user's policy enables it (none: not offered).
    pub shell: Option<ShellConfig>,
    /// The folder of messages the user set aside as files (too large to send): read_file
    /// may read it.
    pub paste_dir: Option<String>,
    /// What the user added to the conversation's context, as Emacs gives it; the notes
    /// layer decides what of it the model sees.
    pub context_items: Vec<GivenItem>,
    /// The user's prices over the built-in table (`org-agent-prices`).
    pub prices: Prices,
    /// How the answer's text is shown (`:answer-format`).
    pub answer_format: AnswerFormat,
    /// The level of the heading the answer goes under (`:answer-level`; none: the chat's),
    /// so that its Markdown headings become headlines below it.
    pub answer_level: Option<usize>,
}

/// One of `:context-items`: `(:label L :id ID)` or `(:label L :text T [:file F])`.
fn given_item(item: &Value) -> Result<GivenItem, ConfigError> {
    let f = Fields::new(item, "context item")?;
    let given = GivenItem {
        label: f.string("label")?,
        id: f.opt_string("id")?,
        file: f.opt_string("file")?,
        text: f.opt_string("text")?,
        image: f.opt_string("image")?,
    };
    if given.id.is_none() && given.text.is_none() && given.image.is_none() {
        return Err(ConfigError::Shape(format!(
            "context item {:?} has none of :id, :text, :image",
            given.label
        )));
    }
    Ok(given)
}

/// How a chat shows the model's answer text (`:answer-format`): `org` (the default), its
/// Markdown converted to Org as it streams; `raw`, as the model wrote it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerFormat {
    #[default]
    Org,
    Raw,
}

/// Bounds of every background run.
#[derive(Clone, Copy, Debug)]
pub struct RunLimits {
    /// Wall-clock time a run may take before it is cancelled.
    pub timeout: Duration,
    /// Failures in a row after which the skill is suspended.
    pub max_failures: u32,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            timeout: Duration::from_secs(300),
            max_failures: 3,
        }
    }
}

/// Everything a chat turn needs besides its text.
pub struct TurnSetup {
    /// The backends of the chosen tier, in cascade order.
    pub backends: Vec<Backend>,
    pub policy: Policy,
    pub cfg: TurnConfig,
    pub setup: ChatSetup,
}

/// Seconds as a duration: finite and not negative (else `None`), at most a day.
fn seconds(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

impl TurnSetup {
    /// The turn `backend` (one backend plist or a list, the cascade) and `options` describe;
    /// `focus`: the node a command was invoked on, unless `:focus` says otherwise.
    pub fn from_sexp(
        backend: &Value,
        options: &Value,
        focus: Option<String>,
    ) -> Result<TurnSetup, ConfigError> {
        let o = Fields::new(options, "turn options")?;
        let routing = Routing {
            backends: backends_from_sexp(backend)?,
            // Tiers may name configured backends left out of the cascade.
            pool: match o.get("pool") {
                Some(pool) => backends_from_sexp(pool)?,
                None => Vec::new(),
            },
            tiers: match o.get("tiers") {
                Some(tiers) => tiers_from_sexp(tiers)?,
                None => Vec::new(),
            },
        };
        let tier = match o.name("tier")? {
            None => Tier::Cognition,
            Some(name) => Tier::from_name(&name).ok_or(ConfigError::UnknownTurnTier(name))?,
        };
        let backends = backends_for(&routing, tier)?;
        let mut cfg = turn_config(&o, focus)?;
        cfg.context_budget = match o.integer("context-budget")? {
            Some(n) => n.clamp(0, 10_000_000) as usize,
            // A quarter of the first backend's window, when it says.
            None => backends
                .first()
                .and_then(|b| b.context_window)
                .map(|w| (w / 4) as usize)
                .unwrap_or(crate::context::DEFAULT_BUDGET_TOKENS),
        };
        let mut setup = chat_setup(&o)?;
        if let Some(budget) = o.get("budget") {
            setup.budget = Some(budget_from_sexp(budget, &routing)?);
        }
        Ok(TurnSetup {
            backends,
            policy: policy(&o)?,
            cfg,
            setup,
        })
    }
}

/// The backends of `tier`, in cascade order.
fn backends_for(routing: &Routing, tier: Tier) -> Result<Vec<Backend>, ConfigError> {
    routing
        .backends_for(tier)
        .map_err(|e| ConfigError::Routing(e.to_string()))
}

/// The cascade's retry policy: `:cooldown` and `:retry-cap` in seconds.
fn policy(o: &Fields) -> Result<Policy, ConfigError> {
    let mut policy = Policy::default();
    if let Some(d) = o.number("cooldown")?.and_then(seconds) {
        policy.cooldown = d;
    }
    if let Some(d) = o.number("retry-cap")?.and_then(seconds) {
        policy.retry_cap = d;
    }
    Ok(policy)
}

/// The turn's bounds and what its requests show.
fn turn_config(o: &Fields, focus: Option<String>) -> Result<TurnConfig, ConfigError> {
    let mut cfg = TurnConfig::default();
    if let Some(n) = o.integer("max-depth")? {
        cfg.max_depth = n.clamp(1, 100) as u32;
    }
    if let Some(n) = o.integer("tool-rounds")? {
        cfg.tool_rounds = Some(n.clamp(0, 100) as u32);
    }
    cfg.temperature = o.number("temperature")?;
    cfg.stream = !o.flag("no-stream");
    cfg.store_first = o.flag("store-first");
    cfg.inbox = o.opt_string("inbox")?;
    cfg.focus = o.opt_string("focus")?.or(focus);
    if let Some(n) = o.integer("consensus")? {
        cfg.consensus = n.clamp(0, 16) as usize;
    }
    if let Some(t) = o.number("related-threshold")? {
        cfg.related_threshold = t as f32;
    }
    cfg.done_since = o.opt_string("done-since")?;
    cfg.today = o.opt_string("today")?;
    cfg.due_before = o.opt_string("due-before")?;
    Ok(cfg)
}

/// The turn's equipment beyond the backends: prompt, Elisp tools, audit file, whether the
/// user may be asked, semantic search.
fn chat_setup(o: &Fields) -> Result<ChatSetup, ConfigError> {
    let mut setup = ChatSetup {
        system_prompt: o.opt_string("system-prompt")?,
        interactive: o.flag("interactive"),
        audit_file: o.opt_string("audit-file")?.map(PathBuf::from),
        skill: o.opt_string("skill")?,
        pasted: o.opt_string("pasted")?,
        paste_dir: o.opt_string("paste-dir")?,
        ..ChatSetup::default()
    };
    setup.answer_format = match o.name("answer-format")?.as_deref() {
        None | Some("org") => AnswerFormat::Org,
        Some("raw") => AnswerFormat::Raw,
        Some(other) => {
            return Err(ConfigError::Shape(format!(
                "turn options: :answer-format is org or raw, not {other}"
            )))
        }
    };
    setup.answer_level = o.integer("answer-level")?.map(|n| n.clamp(0, 50) as usize);
    if let Some(rules) = o.get("permissions") {
        setup.permissions =
            Arc::new(Permissions::from_sexp(rules).map_err(|e| ConfigError::Shape(e.to_string()))?);
    }
    for item in o.list("context-items")? {
        setup.context_items.push(given_item(item)?);
    }
    for spec in o.list("tools")? {
        setup.elisp_tools.push(elisp_tool(spec)?);
    }
    if let Some(embedding) = o.get("embedding") {
        setup.embedding = Some(EmbeddingBackend::from_sexp(embedding)?);
    }
    if let Some(shell) = o.get("shell").filter(|v| !crate::sexp::is_nil(v)) {
        setup.shell = Some(shell_config(shell)?);
    }
    if let Some(prices) = o.get("prices") {
        setup.prices = crate::llm::config::prices_from_sexp(prices)?;
    }
    Ok(setup)
}

/// The shell tool's `:shell (:roots (DIR…) :timeout SECONDS :output-cap BYTES :notes (DIR…)
/// :view-dir DIR :sandbox BOOL :writable (DIR…) :network (LINE…))`: offered only when the
/// option is given, with at least one root. `:sandbox` defaults to t; without `:notes` every
/// root is seen as notes (through the notes layer's view).
fn shell_config(spec: &Value) -> Result<ShellConfig, ConfigError> {
    let s = Fields::new(spec, ":shell")?;
    let roots: Vec<PathBuf> = s.strings("roots")?.into_iter().map(PathBuf::from).collect();
    if roots.is_empty() {
        return Err(ConfigError::Shape(
            ":shell needs :roots, the directories commands may run in".into(),
        ));
    }
    let mut config = ShellConfig::new(roots);
    if let Some(d) = s.number("timeout")?.and_then(seconds) {
        config.timeout = d;
    }
    if let Some(n) = s.integer("output-cap")? {
        config.output_cap = n.clamp(100, 10_000_000) as usize;
    }
    config.notes_dirs = s.strings("notes")?.into_iter().map(PathBuf::from).collect();
    config.view_dir = s.opt_string("view-dir")?.map(PathBuf::from);
    if !s.bool("sandbox", true) {
        config.sandbox = crate::tools::shell::Sandboxing::Off;
    }
    config.writable = s
        .strings("writable")?
        .into_iter()
        .map(PathBuf::from)
        .collect();
    for line in s.strings("network")? {
        let argv = crate::gates::command::parse(&line)
            .ok()
            .filter(|c| c.parts.len() == 1)
            .and_then(|c| c.parts.into_iter().next())
            .ok_or_else(|| {
                ConfigError::Shape(format!(
                    ":shell :network {line:?} is not one plain command (an argv prefix)"
                ))
            })?;
        config.network.push(argv);
    }
    Ok(config)
}

/// The bounds of a background run: `:run-timeout` (seconds) and `:max-failures` (in a row,
/// before the skill is suspended) of `options`.
pub fn run_limits(options: &Value) -> Result<RunLimits, ConfigError> {
    let o = Fields::new(options, "turn options")?;
    let mut limits = RunLimits::default();
    if let Some(d) = o.number("run-timeout")?.and_then(seconds) {
        limits.timeout = d;
    }
    if let Some(n) = o.integer("max-failures")? {
        limits.max_failures = n.clamp(1, 1000) as u32;
    }
    Ok(limits)
}

/// A tool defined with `org-agent-define-tool`: (:name :description :parameters JSON
/// :confirm).
fn elisp_tool(spec: &Value) -> Result<ElispTool, ConfigError> {
    let t = Fields::new(spec, "tool")?;
    let parameters = t.string("parameters")?;
    Ok(ElispTool {
        name: t.string("name")?,
        description: t.opt_string("description")?.unwrap_or_default(),
        parameters: serde_json::from_str(&parameters)
            .map_err(|e| ConfigError::ToolParameters(e.to_string()))?,
        confirm: t.flag("confirm"),
    })
}

/// `org-agent-budget`: the limits, and the cheaper tier's backends requests over them go to
/// (`:over refuse`, or absent: none).
fn budget_from_sexp(
    budget: &Value,
    routing: &Routing,
) -> Result<(Limits, Option<Vec<Backend>>), ConfigError> {
    let b = Fields::new(budget, "org-agent-budget")?;
    let tokens = |key: &str| -> Result<Option<u64>, ConfigError> {
        Ok(b.integer(key)?.map(|n| n.max(0) as u64))
    };
    let limits = Limits {
        conversation_tokens: tokens("conversation-tokens")?,
        day_tokens: tokens("day-tokens")?,
        day_cost: b.number("day-cost")?,
    };
    let fallback = match b.name("over")?.as_deref() {
        None | Some("refuse") => None,
        Some(other) => match Tier::from_name(other) {
            // A tier without its own backends is the whole cascade: no cheaper.
            Some(t) if !routing.tiers.iter().any(|(tier, _)| *tier == t) => {
                return Err(ConfigError::BudgetTierWithoutBackends(other.to_owned()))
            }
            Some(t) => Some(backends_for(routing, t)?),
            None => return Err(ConfigError::BudgetOver(other.to_owned())),
        },
    };
    Ok((limits, fallback))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(backend: &str, options: &str) -> Result<TurnSetup, ConfigError> {
        let backend = crate::sexp::read(backend).unwrap();
        let options = crate::sexp::read(options).unwrap();
        TurnSetup::from_sexp(backend.value(), options.value(), Some("cmd-focus".into()))
    }

    fn error(backend: &str, options: &str) -> String {
        match setup(backend, options) {
            Ok(_) => panic!("{options} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    const ONE: &str = "(:name \"a\" :url \"http://a/v1\" :model \"m\" :context-window 32000)";
    const TWO: &str = "((:name \"a\" :url \"http://a/v1\") (:name \"b\" :url \"http://b/v1\"))";

    #[test]
    fn defaults_and_what_the_options_set() {
        let t = setup(ONE, "nil").unwrap();
        assert_eq!(t.backends.len(), 1);
        assert_eq!(t.cfg.max_depth, TurnConfig::default().max_depth);
        // A quarter of the backend's window, the focus of the command.
        assert_eq!(t.cfg.context_budget, 8_000);
        assert_eq!(t.cfg.focus.as_deref(), Some("cmd-focus"));
        assert!(t.cfg.stream && t.setup.system_prompt.is_none() && t.setup.budget.is_none());
        let t = setup(
            ONE,
            "(:max-depth 500 :tool-rounds 0 :temperature 0 :no-stream t :focus \"n1\" \
             :system-prompt \"Be terse.\" :context-budget 100 :consensus 3 \
             :related-threshold 0.5 :done-since \"2026-11-01\" :today \"2026-11-23 Mon\" \
             :due-before \"2026-11-30\" :interactive t :audit-file \"/tmp/a.org\" \
             :cooldown 5 :retry-cap 2.5 \
             :tools ((:name \"weather\" :description \"Today's weather\" \
                      :parameters \"{\\\"type\\\": \\\"object\\\"}\" :confirm t)))",
        )
        .unwrap();
        assert_eq!(t.cfg.max_depth, 100, "clamped");
        assert_eq!(t.cfg.tool_rounds, Some(0));
        assert_eq!(t.cfg.temperature, Some(0.0));
        assert!(!t.cfg.stream);
        assert_eq!(t.cfg.focus.as_deref(), Some("n1"));
        assert_eq!(t.setup.system_prompt.as_deref(), Some("Be terse."));
        assert_eq!(t.cfg.context_budget, 100);
        assert_eq!(t.cfg.consensus, 3);
        assert_eq!(t.cfg.related_threshold, 0.5);
        assert_eq!(t.cfg.today.as_deref(), Some("2026-11-23 Mon"));
        assert!(t.setup.interactive);
        assert_eq!(t.setup.audit_file, Some(PathBuf::from("/tmp/a.org")));
        assert_eq!(t.policy.cooldown, Duration::from_secs(5));
        assert_eq!(t.policy.retry_cap, Duration::from_millis(2500));
        assert_eq!(t.setup.elisp_tools[0].name, "weather");
        assert!(t.setup.elisp_tools[0].confirm);
        assert_eq!(t.setup.answer_format, AnswerFormat::Org);
        let raw = setup(ONE, "(:answer-format raw)").unwrap();
        assert_eq!(raw.setup.answer_format, AnswerFormat::Raw);
        let e = error(ONE, "(:answer-format html)");
        assert!(e.contains(":answer-format is org or raw, not html"), "{e}");
        assert_eq!(raw.setup.answer_level, None);
        let level = setup(ONE, "(:answer-level 0)").unwrap();
        assert_eq!(level.setup.answer_level, Some(0));
        assert_eq!(
            setup(ONE, "(:answer-level 99)").unwrap().setup.answer_level,
            Some(50)
        );
    }

    #[test]
    fn the_shell_is_offered_only_when_asked_for() {
        assert!(setup(ONE, "nil").unwrap().setup.shell.is_none());
        assert!(setup(ONE, "(:shell nil)").unwrap().setup.shell.is_none());
        let t = setup(
            ONE,
            "(:shell (:roots (\"/tmp/notes\" \"/tmp/src\") :timeout 2.5 :output-cap 500))",
        )
        .unwrap();
        let shell = t.setup.shell.unwrap();
        assert_eq!(
            shell.roots,
            vec![PathBuf::from("/tmp/notes"), PathBuf::from("/tmp/src")]
        );
        assert_eq!(shell.timeout, Duration::from_millis(2500));
        assert_eq!(shell.output_cap, 500);
        let e = error(ONE, "(:shell (:timeout 3))");
        assert!(e.contains(":shell needs :roots"), "{e}");
    }

    #[test]
    fn tiers_and_budgets_route_to_named_backends() {
        let t = setup(
            TWO,
            "(:tiers ((reflex \"b\")) :tier reflex \
              :budget (:day-tokens 1000 :day-cost 0.5 :over :reflex))",
        )
        .unwrap();
        assert_eq!(t.backends.len(), 1);
        assert_eq!(t.backends[0].endpoint.name, "b");
        let (limits, fallback) = t.setup.budget.unwrap();
        assert_eq!(limits.day_tokens, Some(1000));
        assert_eq!(limits.day_cost, Some(0.5));
        assert_eq!(fallback.unwrap()[0].endpoint.name, "b");
        let t = setup(TWO, "(:budget (:conversation-tokens 10 :over refuse))").unwrap();
        assert!(t.setup.budget.unwrap().1.is_none());
    }

    #[test]
    fn every_wrong_option_says_what_is_wrong() {
        for (options, says) in [
            (
                "(:tier fast)",
                "unknown tier fast (reflex, cognition or reasoning)",
            ),
            (
                "(:budget (:over reflex))",
                "org-agent-budget :over reflex needs an entry for reflex in \
                 org-agent-model-tiers (its cheaper backends)",
            ),
            (
                "(:budget (:over cheap))",
                "org-agent-budget :over is refuse or a tier, not cheap",
            ),
            (
                "(:tools ((:name \"t\" :parameters \"{oops\")))",
                "tool parameters are not JSON",
            ),
            ("(:tools ((:name \"t\")))", ":parameters is missing"),
            (
                "(:max-depth \"ten\")",
                ":max-depth must be an integer, got \"ten\"",
            ),
            (
                "(:temperature hot)",
                ":temperature must be a number, got hot",
            ),
            ("(:tools 3)", ":tools must be a list, got 3"),
            ("\"options\"", "turn options: expected a plist"),
        ] {
            let e = error(TWO, options);
            assert!(e.contains(says), "{options}: {e}");
        }
    }
}
