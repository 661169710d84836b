//! Think: the request as the store is now, past the budget gate, to the cascade (or to
//! several backends in consensus); what the request used is charged to the budget.

use super::{step_request_read, Spent, StepView, Turn, TurnError, TurnEvent};
use crate::gates::budget::{self, Route};
use crate::llm::cascade::{Answer, Cascade, CascadeEvent};
use crate::llm::completion::Completion;
use crate::llm::error::LlmError;
use crate::llm::http::ChatRequest;
use crate::llm::prices::{Price, Prices};

/// What the LLM proposed in one step, and why the user must decide about it even where the
/// gates would allow it (the backends asked in consensus were split evenly).
pub(super) struct Thought {
    pub completion: Completion,
    pub tie: Option<String>,
}

impl<'a, E: FnMut(TurnEvent)> Turn<'a, E> {
    /// One request to the LLM. `None` when its error was fed back to the LLM (the next step
    /// asks again); an error when the turn cannot go on.
    pub(super) async fn think(&mut self) -> Result<Option<Thought>, TurnError> {
        let request = self.request();
        // In consensus mode every voter gets the request.
        let copies = self
            .cfg
            .consensus
            .clamp(1, self.eq.llm.members().len().max(1)) as u64;
        let estimate = request.estimated_tokens() * copies;
        let day = budget::today();
        let llm = self.route(&day, estimate)?;
        let started = std::time::Instant::now();
        let emit = &mut self.emit;
        let eq = self.eq;
        let result = llm
            .ask(&request, self.cfg.consensus, self.cancel, |e| {
                if let CascadeEvent::Redacted(hits) = &e {
                    if let Err(warning) = eq.audit(|log, now| log.append_redaction(hits, now)) {
                        emit(TurnEvent::Warning(warning));
                    }
                }
                emit(turn_event(e))
            })
            .await;
        let spent = result
            .as_ref()
            .ok()
            .map(|reply| self.spend(llm, &reply.answer, estimate, copies, &day));
        let usage = result
            .as_ref()
            .ok()
            .and_then(|r| r.answer.completion.usage.as_ref())
            .map(|u| (u.prompt_tokens, u.completion_tokens))
            .unwrap_or((0, 0));
        self.emit(TurnEvent::Request {
            backend: result.as_ref().ok().map(|r| r.answer.backend.clone()),
            took: started.elapsed(),
            prompt_tokens: usage.0,
            completion_tokens: usage.1,
            error: result.as_ref().err().map(|e| e.to_string()),
            spent,
        });
        match result {
            Ok(reply) => Ok(Some(Thought {
                completion: reply.answer.completion,
                tie: reply.tie,
            })),
            Err(LlmError::Cancelled) => Err(TurnError::Cancelled),
            Err(e)
                if self.errors_fed_back < self.cfg.max_error_feedback
                    && e.worth_telling_the_model() =>
            {
                let note = format!(
                    "(:loop-error \"{}\") Your last reply could not be used; reply again.",
                    e.to_string().replace('"', "'")
                );
                self.feed_back(e.to_string(), note);
                Ok(None)
            }
            Err(e) => Err(TurnError::Llm(e)),
        }
    }

    /// What `answer` used and cost, counted in the conversation and charged to the budget
    /// on `day`.
    fn spend(
        &mut self,
        llm: &Cascade,
        answer: &Answer,
        estimate: u64,
        copies: u64,
        day: &str,
    ) -> Spent {
        let price = price_of(&self.eq.prices, llm, &answer.backend);
        let spent = spent(answer, estimate, copies, price);
        self.conversation.tokens_used += spent.tokens.total();
        if let Some(b) = &self.eq.budget {
            b.charge(day, spent.tokens, price);
        }
        spent
    }

    /// This step's request: the focus is the node the last tool was about when the user was
    /// on none; no tools once the tool rounds are used up. The untrusted notes its context
    /// shows count as read.
    fn request(&mut self) -> ChatRequest {
        let step = StepView {
            tool_focus: self.tool_focus.as_deref(),
            tools_off: self.cfg.tool_rounds.is_some_and(|n| self.tool_rounds >= n),
        };
        let (request, untrusted) = step_request_read(self.eq, self.conversation, &self.cfg, step);
        self.conversation.context.read_untrusted(untrusted);
        request
    }

    /// The cascade the request goes to: the turn's own, or the cheaper tier when it would
    /// go over budget; an error when it may not be sent at all.
    fn route(&mut self, day: &str, estimate: u64) -> Result<&'a Cascade, TurnError> {
        let eq = self.eq;
        let Some(b) = &eq.budget else {
            return Ok(&eq.llm);
        };
        let price = eq.llm.first_backend().and_then(|b| eq.prices.of(b));
        match b.route(day, self.conversation.tokens_used, estimate, price) {
            Route::Within => Ok(&eq.llm),
            Route::Cheaper(cheaper, reason) => {
                self.emit(TurnEvent::Warning(format!(
                    "{reason}; asking the cheaper tier instead"
                )));
                Ok(cheaper)
            }
            Route::Refused(reason) => Err(TurnError::OverBudget(reason)),
        }
    }
}

/// The price of `backend` of `llm` (the one that answered), as [`Prices::of`] says.
pub(super) fn price_of(prices: &Prices, llm: &Cascade, backend: &str) -> Option<Price> {
    llm.backend_named(backend).and_then(|b| prices.of(b))
}

/// What `answer` used (the provider's count, else the estimate: see [`budget::usage`]) and
/// cost at `price`.
pub(super) fn spent(answer: &Answer, estimate: u64, copies: u64, price: Option<Price>) -> Spent {
    let tokens = budget::usage(answer, estimate, copies);
    Spent {
        tokens,
        cost: crate::llm::prices::cost(price, tokens),
        estimated: answer.completion.usage.is_none(),
    }
}

/// The turn's view of what the cascade reports.
pub(super) fn turn_event(e: CascadeEvent) -> TurnEvent {
    match e {
        CascadeEvent::Delta(d) => TurnEvent::Delta(d),
        CascadeEvent::Redacted(hits) => TurnEvent::Warning(format!(
            "secret gate: {} from the request",
            crate::secrets::describe_hits(&hits)
        )),
        CascadeEvent::Retry {
            backend,
            after,
            error,
        } => TurnEvent::Retry {
            backend,
            after,
            error: error.to_string(),
        },
        CascadeEvent::Failover {
            backend,
            error,
            streamed,
            next,
        } => TurnEvent::Failover {
            backend,
            error: error.to_string(),
            streamed,
            next,
        },
        CascadeEvent::Failed { backend, error } => TurnEvent::Failed {
            backend,
            error: error.to_string(),
        },
        CascadeEvent::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        } => TurnEvent::Consensus {
            agreed,
            answered,
            tie,
            proposals,
        },
    }
}
