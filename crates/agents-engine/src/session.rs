//! The context budget of one agent session (an MCP server's life): what its
//! `get_context_budget` reports, and what every delivered context spends
//! ([`Engine::record_run`], [`Engine::session_budget`]).
//!
//! A session's budget is sized once, by the first `get_context_budget` that
//! names a `model` or `max_tokens`, or else by the first `request_context`
//! (its model's window less the reserves; 8,000 tokens without a model); a
//! later `get_context_budget` naming either resizes it. Every
//! `request_context` spends the tokens of the text it delivered, so
//! `remaining_tokens` is what the session has left, not a fresh budget.
//! `needs_refresh` says whether the remaining budget moved away from the budget
//! the last payload was assembled for by more than
//! `context.budget.refresh-threshold` ([`AssembledContext::needs_refresh`]):
//! then that payload should be requested again at the new size.

use std::sync::Mutex;

use agents_core::fragment::AssembledContext;
use agents_core::tokens::TokenCounter as _;
use serde::Serialize;

use crate::{BudgetDerivation, Engine, EngineError, QueryRun};

/// The session's budget and what it has spent.
#[derive(Debug, Default)]
pub struct SessionBudget {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    size: Option<(u64, BudgetDerivation)>,
    used: u64,
    requests: u64,
    /// The last payload delivered, for `needs_refresh`.
    last: Option<AssembledContext>,
}

/// What `get_context_budget` returns.
#[derive(Debug, Serialize)]
pub struct BudgetReport {
    /// The session's budget.
    pub available_tokens: u64,
    /// Tokens delivered by `request_context` in this session.
    pub used_tokens: u64,
    /// `available_tokens - used_tokens` (0 when spent).
    pub remaining_tokens: u64,
    /// `request_context` calls answered.
    pub requests: u64,
    /// Whether the last payload should be reassembled for the remaining budget.
    pub needs_refresh: bool,
    pub derivation: BudgetDerivation,
}

impl SessionBudget {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets (or resets) the session's budget; what was spent stays spent.
    pub fn resize(&self, available: u64, derivation: BudgetDerivation) {
        self.lock().size = Some((available, derivation));
    }

    /// Whether the session's budget is sized yet.
    pub fn is_sized(&self) -> bool {
        self.lock().size.is_some()
    }

    /// Records a delivered payload of `delivered` tokens.
    pub fn spend(&self, delivered: u64, payload: &AssembledContext) {
        let mut inner = self.lock();
        inner.used = inner.used.saturating_add(delivered);
        inner.requests += 1;
        inner.last = Some(payload.clone());
    }

    /// The report, with `threshold` as the refresh threshold; `None` until sized.
    pub fn report(&self, threshold: f64) -> Option<BudgetReport> {
        let inner = self.lock();
        let size = inner.size.clone()?;
        Some(inner.report(size, threshold))
    }
}

impl Inner {
    /// The report for a budget of `size`.
    fn report(&self, (available, derivation): (u64, BudgetDerivation), threshold: f64) -> BudgetReport {
        let remaining = available.saturating_sub(self.used);
        BudgetReport {
            available_tokens: available,
            used_tokens: self.used,
            remaining_tokens: remaining,
            requests: self.requests,
            needs_refresh: self.last.as_ref().is_some_and(|last| last.needs_refresh(remaining, threshold)),
            derivation,
        }
    }
}

/// What `get_context_budget` returns: the session's report and the
/// settings that go with it.
#[derive(Debug, Serialize)]
pub struct BudgetStatus {
    #[serde(flatten)]
    pub report: BudgetReport,
    /// `context.budget.min-useful-budget`.
    pub min_useful_budget: usize,
    /// `context.budget.refresh-threshold`.
    pub refresh_threshold: f64,
    /// `context.budget.skeleton-ratio`.
    pub skeleton_ratio: f64,
}

impl Engine {
    /// Records a delivered run in `session`: spends the tokens of its text,
    /// sizing the budget first (from `model`) when nothing sized it yet.
    pub fn record_run(&self, session: &SessionBudget, model: Option<&str>, run: &QueryRun) {
        if !session.is_sized()
            && let Ok((budget, derivation)) = self.budget(model, None)
        {
            session.resize(budget.available_tokens(), derivation);
        }
        session.spend(self.tokenizer.count(&run.text) as u64, &run.assembly.context);
    }

    /// The session's budget: sized (or resized) from `model` and
    /// `max_tokens` when either is given or nothing sized it yet.
    pub fn session_budget(
        &self,
        session: &SessionBudget,
        model: Option<&str>,
        max_tokens: Option<u64>,
    ) -> Result<BudgetStatus, EngineError> {
        let config = &self.config.config().context.budget;
        let mut inner = session.lock();
        let size = match inner.size.clone() {
            Some(size) if model.is_none() && max_tokens.is_none() => size,
            _ => {
                let (budget, derivation) = self.budget(model, max_tokens)?;
                (budget.available_tokens(), derivation)
            }
        };
        inner.size = Some(size.clone());
        let report = inner.report(size, config.refresh_threshold);
        Ok(BudgetStatus {
            report,
            min_useful_budget: config.min_useful_budget,
            refresh_threshold: config.refresh_threshold,
            skeleton_ratio: config.skeleton_ratio,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::fragment::ContextBudget;

    fn derivation(available: u64) -> BudgetDerivation {
        BudgetDerivation {
            model: None,
            context_window: None,
            response_reserve: 0,
            tool_definitions: 0,
            max_tokens: Some(available),
            available,
        }
    }

    fn payload(available: u64) -> AssembledContext {
        AssembledContext::builder("adhoc", ContextBudget::new(available, 0).unwrap()).build().unwrap()
    }

    #[test]
    fn get_context_budget_reports_what_the_session_has_left() {
        let session = SessionBudget::default();
        assert!(session.report(0.3).is_none() && !session.is_sized());
        session.resize(10_000, derivation(10_000));
        session.spend(1_000, &payload(8_000));
        let report = session.report(0.3).unwrap();
        assert_eq!((report.available_tokens, report.used_tokens, report.remaining_tokens), (10_000, 1_000, 9_000));
        assert_eq!(report.requests, 1);
        // 9,000 left against a payload made for 8,000: a change of 12.5%.
        assert!(!report.needs_refresh);
        session.spend(4_000, &payload(8_000));
        let report = session.report(0.3).unwrap();
        assert_eq!(report.remaining_tokens, 5_000);
        // 5,000 left against 8,000: 37.5% > 30%, so the payload is stale.
        assert!(report.needs_refresh);
        session.spend(9_000, &payload(5_000));
        assert_eq!(session.report(0.3).unwrap().remaining_tokens, 0, "spent, never negative");
        session.resize(20_000, derivation(20_000));
        assert_eq!(session.report(0.3).unwrap().remaining_tokens, 6_000, "resizing keeps what was spent");
    }
}
