//! Separating a model's reasoning from its answer, whichever way the server delivers it.
//!
//! Servers send reasoning in a field of its own (`reasoning_content` from DeepSeek and vLLM,
//! `reasoning` from OpenRouter, `thinking` from Ollama) or inline in the answer text as a
//! `<think>…</think>` span (llama.cpp without a reasoning parser, raw Qwen / GLM / DeepSeek-R1
//! templates). [`ContentRouter`] takes both and hands back [`Span`]s of answer text and of
//! reasoning, so reasoning never reaches the answer, even when a tag arrives cut across stream
//! chunks (`"<thi"` + `"nk>"`): a fragment that may be the start of a tag is held back until the
//! next one decides.
//!
//! Two choices, both deterministic whatever the chunking:
//! * By default ([`ThinkTags::Leading`]) a `<think>` tag is recognised only before the answer
//!   has started (while the text so far is whitespace or think spans), which is where every
//!   template puts it; later, `<think>` is literal text — a model explaining these tags must not
//!   have the rest of its answer swallowed. [`ThinkTags::Anywhere`] and [`ThinkTags::Off`]
//!   exist for servers that need them. A span never closed (the model was cut off) is
//!   reasoning.
//! * Whitespace-only text before or between reasoning (the `"\n"` vLLM and llama.cpp send
//!   before thinking, the blank line after `</think>`) is a template artefact: when reasoning
//!   precedes the answer, the answer's leading whitespace is dropped. Without reasoning, text
//!   is passed through verbatim.

/// Where `<think>…</think>` spans inside answer text are recognised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ThinkTags {
    /// Only before the answer has started (the default; see the module documentation).
    #[default]
    Leading,
    /// Anywhere in the text.
    Anywhere,
    /// Never: the text is the answer, verbatim.
    Off,
}

/// A routed piece of the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Text(String),
    Reasoning(String),
}

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Splits answer text into text and `<think>` spans, across fragment boundaries.
#[derive(Debug, Default)]
struct ThinkSplitter {
    mode: ThinkTags,
    in_think: bool,
    /// Text not yet routed: at most a possible partial tag, or (in `Leading` mode) what may
    /// still turn out to be one.
    pending: String,
    /// `Leading` mode: non-whitespace text was routed, tags are no longer recognised.
    text_started: bool,
}

impl ThinkSplitter {
    fn push(&mut self, fragment: &str, out: &mut Vec<Span>) {
        self.pending.push_str(fragment);
        loop {
            if self.in_think {
                if let Some(pos) = self.pending.find(CLOSE) {
                    self.take(pos, CLOSE.len(), true, out);
                    self.in_think = false;
                    continue;
                }
                let keep = partial_tag_suffix(&self.pending, CLOSE);
                self.take(self.pending.len() - keep, 0, true, out);
                return;
            }
            match self.mode {
                ThinkTags::Off => {
                    self.take(self.pending.len(), 0, false, out);
                    return;
                }
                ThinkTags::Anywhere => {
                    if let Some(pos) = self.pending.find(OPEN) {
                        self.take(pos, OPEN.len(), false, out);
                        self.in_think = true;
                        continue;
                    }
                    let keep = partial_tag_suffix(&self.pending, OPEN);
                    self.take(self.pending.len() - keep, 0, false, out);
                    return;
                }
                ThinkTags::Leading => {
                    if self.text_started {
                        self.take(self.pending.len(), 0, false, out);
                        return;
                    }
                    let ws = self.pending.len() - self.pending.trim_start().len();
                    self.take(ws, 0, false, out);
                    if self.pending.len() < OPEN.len() && OPEN.starts_with(self.pending.as_str()) {
                        // Nothing yet, or maybe the start of "<think>": wait for more.
                        return;
                    }
                    if self.pending.starts_with(OPEN) {
                        self.take(0, OPEN.len(), false, out);
                        self.in_think = true;
                        continue;
                    }
                    self.text_started = true;
                    self.take(self.pending.len(), 0, false, out);
                    return;
                }
            }
        }
    }

    /// End of the text: whatever is pending is final.
    fn finish(&mut self, out: &mut Vec<Span>) {
        let in_think = self.in_think;
        self.take(self.pending.len(), 0, in_think, out);
    }

    /// Routes `pending[..len]` (as reasoning or text), then drops a further `skip` bytes (a
    /// tag). Both are character boundaries by construction (tags are ASCII); should that ever
    /// not hold, everything pending is routed rather than panicking.
    fn take(&mut self, len: usize, skip: usize, reasoning: bool, out: &mut Vec<Span>) {
        let end = len.saturating_add(skip).min(self.pending.len());
        let (len, end) = if self.pending.is_char_boundary(len) && self.pending.is_char_boundary(end)
        {
            (len.min(end), end)
        } else {
            (self.pending.len(), self.pending.len())
        };
        let mut routed: String = self.pending.drain(..end).collect();
        routed.truncate(len);
        if !routed.is_empty() {
            out.push(if reasoning {
                Span::Reasoning(routed)
            } else {
                Span::Text(routed)
            });
        }
    }
}

/// The length of the longest proper prefix of `tag` that `s` ends with.
fn partial_tag_suffix(s: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&k| tag.get(..k).is_some_and(|prefix| s.ends_with(prefix)))
        .unwrap_or(0)
}

/// Routes a response's reasoning fields and answer text into [`Span`]s; see the module
/// documentation.
#[derive(Debug, Default)]
pub struct ContentRouter {
    splitter: ThinkSplitter,
    /// Non-whitespace answer text was emitted.
    answer_started: bool,
    /// Whitespace-only answer text held back until we know whether reasoning precedes it.
    held_ws: String,
    reasoning_seen: bool,
}

impl ContentRouter {
    pub fn new(mode: ThinkTags) -> Self {
        ContentRouter {
            splitter: ThinkSplitter {
                mode,
                ..ThinkSplitter::default()
            },
            ..ContentRouter::default()
        }
    }

    /// A fragment from a dedicated reasoning field.
    pub fn reasoning(&mut self, fragment: &str, out: &mut Vec<Span>) {
        self.route(Span::Reasoning(fragment.to_owned()), out);
    }

    /// A fragment of answer text, possibly containing `<think>` spans.
    pub fn content(&mut self, fragment: &str, out: &mut Vec<Span>) {
        let mut spans = Vec::new();
        self.splitter.push(fragment, &mut spans);
        for span in spans {
            self.route(span, out);
        }
    }

    /// End of the response: releases anything held back.
    pub fn finish(&mut self, out: &mut Vec<Span>) {
        let mut spans = Vec::new();
        self.splitter.finish(&mut spans);
        for span in spans {
            self.route(span, out);
        }
        let held = std::mem::take(&mut self.held_ws);
        if !self.answer_started && !self.reasoning_seen && !held.is_empty() {
            out.push(Span::Text(held));
        }
    }

    fn route(&mut self, span: Span, out: &mut Vec<Span>) {
        match span {
            Span::Reasoning(r) => {
                if !r.is_empty() {
                    self.reasoning_seen = true;
                    out.push(Span::Reasoning(r));
                }
            }
            Span::Text(t) => {
                if self.answer_started {
                    if !t.is_empty() {
                        out.push(Span::Text(t));
                    }
                } else if t.trim_start().is_empty() {
                    self.held_ws.push_str(&t);
                } else {
                    self.answer_started = true;
                    let held = std::mem::take(&mut self.held_ws);
                    let text = if self.reasoning_seen {
                        t.trim_start().to_owned()
                    } else {
                        held + &t
                    };
                    out.push(Span::Text(text));
                }
            }
        }
    }
}
