//! What the parsers accumulate.
//!
//! [`Prose`] is shared by every format: the response's id and model, its answer and reasoning
//! text (with `<think>` routing) and the byte budget the whole response counts against.
//!
//! [`Collector`] is the whole accumulator behind the Gemini and Ollama parsers. Both formats
//! send each tool call whole (name and complete arguments in one chunk) and report usage as
//! running totals; the format files only decode their own chunks into calls on it. (The
//! OpenAI and Anthropic accumulators keep their own tool-call state because those formats
//! stream arguments in pieces, keyed by index or content block.)

use crate::llm::completion::{Completion, Delta, FinishReason, StreamOptions, ToolCall, Usage};
use crate::llm::error::{bounded, LlmError};
use crate::llm::think::{ContentRouter, Span};
use serde_json::Value;

#[derive(Debug, Clone)]
struct Call {
    id: Option<String>,
    name: String,
    /// The arguments' JSON text, as the deltas carried it.
    arguments: String,
    signature: Option<String>,
}

impl Call {
    fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_default()
    }
}

/// What every format's accumulator keeps the same way: the response's id and model, its
/// answer and reasoning text (answer text routed through `<think>` detection), and the one
/// byte budget every part of the response (text, reasoning, tool calls, signatures) counts
/// against.
#[derive(Debug)]
pub(crate) struct Prose {
    limit: usize,
    router: ContentRouter,
    pub(crate) id: Option<String>,
    pub(crate) model: Option<String>,
    pub(crate) text: String,
    pub(crate) reasoning: String,
    bytes: usize,
}

impl Prose {
    pub(crate) fn new(opts: StreamOptions) -> Self {
        Prose {
            limit: opts.max_response_bytes,
            router: ContentRouter::new(opts.think_tags),
            id: None,
            model: None,
            text: String::new(),
            reasoning: String::new(),
            bytes: 0,
        }
    }

    /// Counts `n` more bytes of the response: [`LlmError::ResponseTooLarge`] past the limit.
    pub(crate) fn count(&mut self, n: usize) -> Result<(), LlmError> {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.limit {
            return Err(LlmError::ResponseTooLarge { limit: self.limit });
        }
        Ok(())
    }

    /// The response id and model: the first non-empty values win (some formats repeat them
    /// in every chunk).
    pub(crate) fn identity(&mut self, id: Option<String>, model: Option<String>) {
        if self.id.is_none() {
            self.id = id.filter(|s| !s.is_empty()).map(|s| bounded(&s));
        }
        if self.model.is_none() {
            self.model = model.filter(|s| !s.is_empty()).map(|s| bounded(&s));
        }
    }

    fn spans(&mut self, spans: Vec<Span>, out: &mut Vec<Delta>) {
        for span in spans {
            match span {
                Span::Text(t) => {
                    self.text.push_str(&t);
                    out.push(Delta::Text(t));
                }
                Span::Reasoning(r) => {
                    self.reasoning.push_str(&r);
                    out.push(Delta::Reasoning(r));
                }
            }
        }
    }

    /// A fragment of answer text (which may hold `<think>` spans).
    pub(crate) fn text(&mut self, fragment: &str, out: &mut Vec<Delta>) -> Result<(), LlmError> {
        if fragment.is_empty() {
            return Ok(());
        }
        self.count(fragment.len())?;
        let mut spans = Vec::new();
        self.router.content(fragment, &mut spans);
        self.spans(spans, out);
        Ok(())
    }

    /// A fragment from a dedicated reasoning field or part.
    pub(crate) fn reasoning(
        &mut self,
        fragment: &str,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        if fragment.is_empty() {
            return Ok(());
        }
        self.count(fragment.len())?;
        let mut spans = Vec::new();
        self.router.reasoning(fragment, &mut spans);
        self.spans(spans, out);
        Ok(())
    }

    /// End of the response: releases text held back (a possible `<think>` tag, leading
    /// whitespace).
    pub(crate) fn flush(&mut self, out: &mut Vec<Delta>) {
        let mut spans = Vec::new();
        self.router.finish(&mut spans);
        self.spans(spans, out);
    }
}

/// Accumulates one response; see the module documentation.
#[derive(Debug)]
pub(crate) struct Collector {
    opts: StreamOptions,
    /// Id, model, text, reasoning and the byte budget.
    pub(crate) prose: Prose,
    calls: Vec<Call>,
    usage: Option<Usage>,
    /// The wire's reason, before "stop with tool calls" becomes [`FinishReason::ToolCalls`].
    finish: Option<FinishReason>,
    /// What the last `Usage` and `Finish` deltas said, so a running total that did not change
    /// is not sent again.
    sent_usage: Option<Usage>,
    sent_finish: Option<FinishReason>,
}

impl Collector {
    pub(crate) fn new(opts: StreamOptions) -> Self {
        Collector {
            opts,
            prose: Prose::new(opts),
            calls: Vec::new(),
            usage: None,
            finish: None,
            sent_usage: None,
            sent_finish: None,
        }
    }

    /// A complete tool call. `arguments` is its JSON text (empty for none); `id` is the
    /// server's, if it sent one.
    pub(crate) fn tool_call(
        &mut self,
        id: Option<String>,
        name: String,
        arguments: String,
        signature: Option<String>,
        out: &mut Vec<Delta>,
    ) -> Result<(), LlmError> {
        if self.calls.len() >= self.opts.max_tool_calls {
            return Err(LlmError::TooManyToolCalls {
                limit: self.opts.max_tool_calls,
            });
        }
        let id = id.filter(|s| !s.is_empty());
        self.prose.count(
            id.as_ref().map_or(0, String::len)
                + name.len()
                + arguments.len()
                + signature.as_ref().map_or(0, String::len),
        )?;
        let index = self.calls.len();
        let call = Call {
            id,
            name,
            arguments,
            signature,
        };
        out.push(Delta::ToolCallStart {
            index,
            id: call_id(call.id(), index),
            name: call.name.clone(),
        });
        if !call.arguments.is_empty() {
            out.push(Delta::ToolCallArgs {
                index,
                fragment: call.arguments.clone(),
            });
        }
        self.calls.push(call);
        Ok(())
    }

    /// The latest token counts (both formats send running or final totals, never increments).
    pub(crate) fn set_usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }

    pub(crate) fn set_finish(&mut self, reason: FinishReason) {
        self.finish = Some(reason);
    }

    /// The finish reason as reported: a natural stop after tool calls is
    /// [`FinishReason::ToolCalls`] (neither format has a reason of its own for it).
    fn finish_reason(&self) -> Option<FinishReason> {
        match &self.finish {
            Some(FinishReason::Stop) if !self.calls.is_empty() => Some(FinishReason::ToolCalls),
            other => other.clone(),
        }
    }

    /// The answer is over (a finish reason, or the end of the body): releases text held back
    /// for a possible `<think>` tag, then sends usage and the finish reason if they changed
    /// since last sent. Safe to call more than once.
    pub(crate) fn settle(&mut self, out: &mut Vec<Delta>) {
        self.prose.flush(out);
        if self.usage.is_some() && self.usage != self.sent_usage {
            self.sent_usage = self.usage;
            if let Some(u) = self.usage {
                out.push(Delta::Usage(u));
            }
        }
        let finish = self.finish_reason();
        if finish.is_some() && finish != self.sent_finish {
            self.sent_finish.clone_from(&finish);
            if let Some(f) = finish {
                out.push(Delta::Finish(f));
            }
        }
    }

    fn base(&self) -> Completion {
        Completion {
            id: self.prose.id.clone(),
            model: self.prose.model.clone(),
            text: self.prose.text.clone(),
            reasoning: self.prose.reasoning.clone(),
            refusal: None,
            tool_calls: Vec::new(),
            usage: self.usage,
            finish_reason: self.finish_reason(),
        }
    }

    /// The completion so far; arguments that do not parse are kept as a JSON string.
    pub(crate) fn partial(&self) -> Completion {
        let mut c = self.base();
        c.tool_calls = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                partial_call(
                    i,
                    call.id(),
                    &call.name,
                    &call.arguments,
                    call.signature.clone(),
                )
            })
            .collect();
        c
    }

    /// The finished completion; arguments that do not parse are an error.
    pub(crate) fn complete(&self) -> Result<Completion, LlmError> {
        let mut c = self.base();
        for (i, call) in self.calls.iter().enumerate() {
            c.tool_calls.push(finished_call(
                i,
                call.id(),
                &call.name,
                &call.arguments,
                call.signature.clone(),
                "",
            )?);
        }
        Ok(c)
    }
}

/// Whether the last payload of a body, `data`, is JSON the connection cut off (it ends early):
/// truncation, not garbage. Blank data is not.
pub(crate) fn cut_short(data: &[u8]) -> bool {
    serde_json::from_slice::<Value>(data).is_err_and(|e| e.is_eof())
        && !data.iter().all(u8::is_ascii_whitespace)
}

/// The id a tool call is echoed back with: the server's, else `call_<index>`.
pub(crate) fn call_id(id: &str, index: usize) -> String {
    if id.is_empty() {
        format!("call_{index}")
    } else {
        id.to_owned()
    }
}

/// Tool arguments text → JSON; empty (a tool without parameters) → `{}`.
fn parse_arguments(text: &str) -> Result<Value, serde_json::Error> {
    if text.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    serde_json::from_str(text)
}

/// Tool call `index` as received so far: arguments that do not parse (yet) are kept as a
/// JSON string, for [`LlmError::Truncated`].
pub(crate) fn partial_call(
    index: usize,
    id: &str,
    name: &str,
    arguments: &str,
    signature: Option<String>,
) -> ToolCall {
    ToolCall {
        id: call_id(id, index),
        name: name.to_owned(),
        arguments: parse_arguments(arguments)
            .unwrap_or_else(|_| Value::String(arguments.to_owned())),
        signature,
    }
}

/// Tool call `index` of a finished response: arguments that do not parse are
/// [`LlmError::InvalidToolArguments`], its message after `why` (what the format knows of the
/// cause).
pub(crate) fn finished_call(
    index: usize,
    id: &str,
    name: &str,
    arguments: &str,
    signature: Option<String>,
    why: &str,
) -> Result<ToolCall, LlmError> {
    let parsed = parse_arguments(arguments).map_err(|e| LlmError::InvalidToolArguments {
        index,
        id: call_id(id, index),
        name: name.to_owned(),
        message: format!("{why}{e}"),
    })?;
    Ok(ToolCall {
        id: call_id(id, index),
        name: name.to_owned(),
        arguments: parsed,
        signature,
    })
}
