//! The `ContextStrategyRegistry`: named strategies, validated against the backends at
//! hand, with the spec's fallback degradation path.
//!
//! - [`ContextStrategyRegistry::register`] adds a strategy (a custom one is one call);
//!   `context.strategies.enabled` decides which may run.
//! - [`ContextStrategyRegistry::validate`] rejects a strategy whose required backend is
//!   absent, with the reason the backend gave.
//! - [`ContextStrategyRegistry::run`] runs the asked strategy, or without one the
//!   enabled strategy with the best `can_handle x quality`; when it cannot run (a
//!   backend missing, `can_handle` 0) or fails, it walks
//!   arce -> breadth-depth-navigator -> semantic-embedding -> simple-keyword from the
//!   step after it (from the top for strategies off the path), skipping disabled ones.
//!   Every step taken is reported in [`Retrieval::fallbacks`]. Once the query's
//!   cancel flag is set or its deadline passed, no further step starts.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::{BackendKind, Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities};

/// The spec's degradation path, best first.
pub const DEGRADATION_PATH: [&str; 4] = ["arce", "breadth-depth-navigator", "semantic-embedding", "simple-keyword"];

#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("context.strategies.enabled: unknown strategy {name:?}; known: {known}")]
    UnknownEnabled { name: String, known: String },
    #[error("unknown strategy {name:?}; known: {known}")]
    Unknown { name: String, known: String },
    #[error("strategy {name:?} is not enabled; add it to context.strategies.enabled")]
    Disabled { name: String },
    #[error("no strategy could serve the request: {}", render_steps(.steps))]
    Exhausted { steps: Vec<Fallback> },
}

/// Why a strategy cannot run here: a backend it requires is absent.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("requires the {} backend, which is unavailable: {reason}", backend.as_str())]
pub struct BackendUnavailable {
    /// The backend the strategy requires.
    pub backend: BackendKind,
    /// Why the backend is absent, as it said.
    pub reason: String,
}

fn render_steps(steps: &[Fallback]) -> String {
    steps.iter().map(|s| format!("{}: {}", s.strategy, s.reason)).collect::<Vec<_>>().join("; ")
}

/// A strategy that was passed over, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fallback {
    pub strategy: String,
    pub reason: String,
}

/// Candidates from the strategy that ran, and the path that led to it.
#[derive(Clone, Debug, Serialize)]
pub struct Retrieval {
    /// The strategy asked for (or chosen, without one).
    pub requested: String,
    /// The strategy whose candidates these are.
    pub strategy: String,
    pub fallbacks: Vec<Fallback>,
    #[serde(skip)]
    pub candidates: Vec<Candidate>,
}

/// A strategy's standing against the backends at hand.
#[derive(Clone, Debug, Serialize)]
pub struct StrategyStatus {
    pub name: String,
    pub enabled: bool,
    pub capabilities: StrategyCapabilities,
    pub required_backends: Vec<BackendKind>,
    /// Why it cannot run here; `None` when it can.
    pub unavailable: Option<String>,
}

#[derive(Clone)]
pub struct ContextStrategyRegistry {
    strategies: BTreeMap<String, Arc<dyn ContextStrategy>>,
    enabled: Vec<String>,
}

impl ContextStrategyRegistry {
    /// The built-ins, with `enabled` (from `context.strategies.enabled`) checked.
    pub fn with_builtins(enabled: &[String]) -> Result<ContextStrategyRegistry, RegistryError> {
        ContextStrategyRegistry::with_custom(&[], enabled)
    }

    /// The built-ins and `custom` strategies (a custom one replaces a built-in of
    /// the same name), with `enabled` checked against all of them.
    pub fn with_custom(
        custom: &[Arc<dyn ContextStrategy>],
        enabled: &[String],
    ) -> Result<ContextStrategyRegistry, RegistryError> {
        let mut registry = ContextStrategyRegistry { strategies: BTreeMap::new(), enabled: Vec::new() };
        for strategy in super::strategies::builtins().into_iter().chain(custom.iter().cloned()) {
            registry.register(strategy);
        }
        registry.set_enabled(enabled)?;
        Ok(registry)
    }

    /// Adds (or replaces) a strategy under its name. It runs once enabled.
    pub fn register(&mut self, strategy: Arc<dyn ContextStrategy>) {
        self.strategies.insert(strategy.name().to_owned(), strategy);
    }

    /// Which strategies may run; every name must be registered.
    pub fn set_enabled(&mut self, enabled: &[String]) -> Result<(), RegistryError> {
        if let Some(name) = enabled.iter().find(|n| !self.strategies.contains_key(n.as_str())) {
            return Err(RegistryError::UnknownEnabled { name: name.clone(), known: self.known() });
        }
        self.enabled = enabled.to_vec();
        Ok(())
    }

    fn known(&self) -> String {
        self.strategies.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// Every registered name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.strategies.keys().cloned().collect()
    }

    /// The enabled names, in configuration order.
    pub fn enabled(&self) -> &[String] {
        &self.enabled
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn ContextStrategy>> {
        self.strategies.get(name)
    }

    pub fn is_enabled(&self, name: &str) -> bool {
        self.enabled.iter().any(|n| n == name)
    }

    /// An error naming the first backend the strategy requires that is absent.
    pub fn validate(&self, strategy: &dyn ContextStrategy, backends: &Backends<'_>) -> Result<(), BackendUnavailable> {
        for backend in strategy.capabilities().required() {
            if let Some(reason) = backends.why_missing(backend) {
                return Err(BackendUnavailable { backend, reason });
            }
        }
        Ok(())
    }

    /// Every registered strategy and whether it can run here, by name.
    pub fn status(&self, backends: &Backends<'_>) -> Vec<StrategyStatus> {
        self.strategies
            .values()
            .map(|s| StrategyStatus {
                name: s.name().to_owned(),
                enabled: self.is_enabled(s.name()),
                capabilities: s.capabilities(),
                required_backends: s.capabilities().required(),
                unavailable: self.validate(s.as_ref(), backends).err().map(|e| e.to_string()),
            })
            .collect()
    }

    /// The enabled strategy with the best `can_handle x quality` (ties by name).
    fn choose(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> Option<String> {
        let mut best: Option<(f64, &str)> = None;
        for name in &self.enabled {
            let strategy = &self.strategies[name];
            if self.validate(strategy.as_ref(), backends).is_err() {
                continue;
            }
            let value = strategy.can_handle(query, backends) * strategy.capabilities().quality_score;
            if value > 0.0 && best.is_none_or(|(v, n)| value > v || (value == v && name.as_str() < n)) {
                best = Some((value, name));
            }
        }
        best.map(|(_, n)| n.to_owned())
    }

    /// Runs `name` (or the best enabled strategy) with fallback; see the module docs.
    pub fn run(
        &self,
        name: Option<&str>,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        plan: Option<&PlanContext>,
    ) -> Result<Retrieval, RegistryError> {
        let requested =
            match name {
                Some(name) => {
                    if !self.strategies.contains_key(name) {
                        return Err(RegistryError::Unknown { name: name.to_owned(), known: self.known() });
                    }
                    if !self.is_enabled(name) {
                        return Err(RegistryError::Disabled { name: name.to_owned() });
                    }
                    name.to_owned()
                }
                // Nothing claims the request: walk the path from its first enabled step,
                // so every strategy passed over says why.
                None => match self.choose(query, backends) {
                    Some(name) => name,
                    None => DEGRADATION_PATH.iter().find(|n| self.is_enabled(n)).map(|n| (*n).to_owned()).ok_or_else(
                        || RegistryError::Exhausted {
                            steps: vec![Fallback {
                                strategy: "(none)".to_owned(),
                                reason: "no strategy on the fallback path is enabled (context.strategies.enabled)"
                                    .to_owned(),
                            }],
                        },
                    )?,
                },
            };
        let start = DEGRADATION_PATH.iter().position(|n| *n == requested).map_or(0, |i| i + 1);
        let mut order = vec![requested.clone()];
        order.extend(DEGRADATION_PATH[start..].iter().map(|s| (*s).to_owned()).filter(|s| *s != requested));
        let mut fallbacks = Vec::new();
        for (i, name) in order.iter().enumerate() {
            // The first is enabled (checked above, or chosen among enabled ones).
            if i > 0 && !self.is_enabled(name) {
                continue;
            }
            // The executor gave up on this run: start nothing more.
            if query.should_stop() {
                fallbacks
                    .push(Fallback { strategy: name.clone(), reason: "not tried: the time limit passed".to_owned() });
                break;
            }
            let Some(strategy) = self.strategies.get(name) else { continue };
            if let Err(unavailable) = self.validate(strategy.as_ref(), backends) {
                fallbacks.push(Fallback { strategy: name.clone(), reason: unavailable.to_string() });
                continue;
            }
            let can = if plan.is_some() && strategy.capabilities().supports_plan_hierarchy {
                1.0
            } else {
                strategy.can_handle(query, backends)
            };
            if can <= 0.0 {
                fallbacks.push(Fallback { strategy: name.clone(), reason: "cannot handle this request".to_owned() });
                continue;
            }
            match strategy.retrieve(query, backends, plan) {
                Ok(candidates) => {
                    return Ok(Retrieval { requested, strategy: name.clone(), fallbacks, candidates });
                }
                Err(error) => {
                    tracing::warn!(strategy = %name, %error, "strategy failed; falling back");
                    fallbacks.push(Fallback { strategy: name.clone(), reason: format!("failed: {error}") });
                }
            }
        }
        Err(RegistryError::Exhausted { steps: fallbacks })
    }
}
