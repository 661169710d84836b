//! Symbolic first: a turn whose question the store answers exactly (what is waiting, due,
//! overdue, finished…) is answered by the store, and the model only phrases that answer in
//! a sentence — for a small local model, which reads a notes context badly and generates a
//! few tokens a second. The store's answer is always shown as it is, under the model's
//! sentence, so a wrong sentence cannot hide a right answer; if the model fails, the answer
//! is shown alone.

use super::think::{price_of, spent, turn_event};
use super::{Conversation, TurnConfig, TurnError, TurnEvent};
use crate::agent::equipment::Equipment;
use crate::llm::completion::Delta;
use crate::llm::http::{CancelToken, ChatRequest, Message};
use crate::notes::scans::ask::{answer, understand};
use crate::notes::scans::{self, Day, Scan, ScanInput};

/// Most lines of the store's answer the model reads (the reader sees them all, up to
/// [`SHOWN`]): a short prompt is read in a second on a CPU.
const PHRASED: usize = 12;
/// Most lines of the store's answer shown.
const SHOWN: usize = 60;
/// The phrasing is a sentence or two.
const PHRASE_TOKENS: u64 = 96;

const PHRASE_PROMPT: &str = "You answer questions about the user's Org notes. \
The notes were already searched: the facts you get are exactly what they say, and all of \
it. Answer in one sentence, speaking to the user as \"you\": say how many items answer the \
question and name every one by its title, as in the example. Use only the facts. If the \
facts say nothing was found, say so plainly.";

/// One worked example: a small model copies a shape far better than it follows a rule.
const EXAMPLE_QUESTION: &str = "Question: What is due this week?\n\nToday: 2026-03-02 Mon\n\n\
Facts from the notes:\nOpen tasks due or scheduled from 2026-03-02 to 2026-03-08 (2):\n\
- TODO Pay the rent — DEADLINE 2026-03-03 Tue\n\
- NEXT Send the invoice to Acme — SCHEDULED 2026-03-06 Fri";
const EXAMPLE_ANSWER: &str =
    "You have 2 tasks due this week: Pay the rent (Tuesday) and Send the invoice to Acme (Friday).";

/// What a store-first turn answers from.
pub enum Source<'a> {
    /// The user's question, if the store understands it.
    Question(&'a str),
    /// A skill in use from the start whose question is one of the scans (`/daily-briefing`).
    Scan(Scan),
}

/// The question a scan answers, as the phrasing model is asked it.
fn scan_question(scan: Scan) -> &'static str {
    match scan {
        Scan::DailyBriefing => "What does my day look like?",
        Scan::Inbox => "What is in my inbox, and where could each item go?",
        Scan::WeeklyReview => "What needs attention in my weekly review?",
        Scan::GtdIntegrity => "Which tasks and projects are inconsistent?",
        Scan::Garden => "What in my notes needs tidying?",
        Scan::Ids => "Which ids are duplicated or broken?",
        Scan::Secrets => "Are there credentials pasted into my notes?",
    }
}

/// The day the turn's "today" names (`cfg.today`, "2026-11-26 Thu"), else the local today.
fn today(cfg: &TurnConfig) -> Day {
    cfg.today
        .as_deref()
        .and_then(Day::parse)
        .unwrap_or_else(Day::local_today)
}

/// A store-first turn before it is sent: the request that asks the model to phrase the
/// store's answer, and the answer as the chat shows it.
pub struct Prepared {
    pub request: ChatRequest,
    pub facts: String,
}

/// The request a store-first turn sends for `text`, and the store's answer; `None` when the
/// store does not answer it (the turn goes on as usual). The preview shows this same request.
pub fn prepare(
    eq: &Equipment,
    text: &str,
    source: Source<'_>,
    cfg: &TurnConfig,
) -> Result<Option<Prepared>, TurnError> {
    let day = today(cfg);
    let (asked, facts, phrased_facts) = match source {
        Source::Question(q) => {
            let Some(understood) = understand(&eq.notes, q, day) else {
                return Ok(None);
            };
            let a = answer(&eq.notes, &understood, day);
            (text, a.text_limited(SHOWN), a.for_model(PHRASED))
        }
        Source::Scan(scan) => {
            let input = ScanInput {
                today: day,
                file: None,
                inbox: cfg.inbox.clone(),
            };
            let report = scans::run(&eq.notes, scan, &input).map_err(TurnError::Store)?;
            (
                scan_question(scan),
                report.brief(SHOWN, true),
                report.brief(PHRASED, false),
            )
        }
    };
    let request = ChatRequest {
        messages: vec![
            Message::System(PHRASE_PROMPT.to_string()),
            Message::User(EXAMPLE_QUESTION.to_string()),
            Message::Assistant {
                content: EXAMPLE_ANSWER.to_string(),
                tool_calls: Vec::new(),
            },
            Message::User(format!(
                "Question: {asked}\n\nToday: {day} {}\n\nFacts from the notes:\n{phrased_facts}",
                day.weekday_name()
            )),
        ],
        tools: Vec::new(),
        stream: cfg.stream,
        temperature: Some(cfg.temperature.unwrap_or(0.0)),
        max_tokens: Some(PHRASE_TOKENS),
        cache_prefix: None,
        images: Vec::new(),
    };
    Ok(Some(Prepared { request, facts }))
}

/// Answer `text` from the store, phrased by the model: `None` when the store does not
/// answer it (the turn goes on as usual).
pub async fn answer_from_store(
    eq: &Equipment,
    conversation: &mut Conversation,
    text: &str,
    source: Source<'_>,
    cfg: &TurnConfig,
    cancel: &CancelToken,
    mut emit: impl FnMut(TurnEvent),
) -> Result<Option<String>, TurnError> {
    let Some(Prepared { request, facts }) = prepare(eq, text, source, cfg)? else {
        return Ok(None);
    };
    let started = std::time::Instant::now();
    let reply = eq
        .llm
        .ask(&request, 0, cancel, |e| emit(turn_event(e)))
        .await;
    let sentence = match reply {
        Ok(reply) => {
            let usage = reply.answer.completion.usage.as_ref();
            let price = price_of(&eq.prices, &eq.llm, &reply.answer.backend);
            emit(TurnEvent::Request {
                spent: Some(spent(&reply.answer, request.estimated_tokens(), 1, price)),
                backend: Some(reply.answer.backend.clone()),
                took: started.elapsed(),
                prompt_tokens: usage.map_or(0, |u| u.prompt_tokens),
                completion_tokens: usage.map_or(0, |u| u.completion_tokens),
                error: None,
            });
            let s = reply.answer.completion.text.trim().to_string();
            if !cfg.stream && !s.is_empty() {
                emit(TurnEvent::Delta(Delta::Text(s.clone())));
            }
            s
        }
        Err(_) if cancel.is_cancelled() => return Err(TurnError::Cancelled),
        Err(e) => {
            emit(TurnEvent::Warning(format!(
                "the model could not phrase the answer ({e}); here is what the notes say"
            )));
            String::new()
        }
    };
    let shown = if sentence.is_empty() {
        facts
    } else {
        format!("\n\n{facts}")
    };
    emit(TurnEvent::Delta(Delta::Text(shown.clone())));
    let full = format!("{sentence}{shown}");
    conversation.messages.push(Message::User(text.to_string()));
    conversation.messages.push(Message::Assistant {
        content: full.clone(),
        tool_calls: Vec::new(),
    });
    Ok(Some(full))
}
