//! The ten pipeline components: one trait each, and the production defaults.
//!
//! Phase 1 (strategy orchestration): [`StrategySelector`], [`BudgetAllocator`],
//! [`StrategyExecutor`]. Phase 2 (fragment fusion): [`FragmentDeduplicator`],
//! [`DetailDepthResolver`], [`FragmentScorer`], [`BudgetPacker`],
//! [`FragmentOrderer`]. Phase 3 (finalisation): [`PreambleGenerator`],
//! [`SkeletonCompressor`]. Every assembly calls all ten; an empty output is fine.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agents_core::config::ScorerWeights;
use agents_core::fragment::ContextTier;
use agents_core::tokens::TokenCounter;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{PipelineError, StageInput};
use crate::retrieval::registry::Fallback;
use crate::retrieval::{BackendKind, Candidate};
pub use agents_pack::packer::{
    Allocation, BudgetPacker, GreedyPacker, MAX_BYTES_PER_TOKEN, PackOutcome, ScoreParts, ScoredFragment, at_depth,
    depth_ladder, sort_scored,
};
use agents_pack::piece::{DEPTH_STEPS, DepthRenderer, MIN_FRAGMENT_TOKENS, Piece, PieceRole, line_span};

// ---------------------------------------------------------------- phase 1

/// A strategy chosen to run, with the selector's confidence in it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Selection {
    pub strategy: String,
    /// `can_handle` (1.0 for a strategy the request asked for).
    pub confidence: f64,
    pub quality: f64,
}

/// 1. Decides which strategies run.
pub trait StrategySelector: Send + Sync {
    fn select(&self, input: &StageInput<'_>) -> Result<Vec<Selection>, PipelineError>;
}

/// Polls `can_handle` on every enabled strategy whose backends are present. The
/// request's preferred strategies run when given (each may still fall back).
/// Otherwise strategies are taken best `confidence x quality` first while they
/// score at least half the best and add coverage: a backend no strategy taken
/// so far reads, or the plan hierarchy when the request names a plan (ARCE, which
/// reads text, vectors and graph, leaves keyword and semantic search nothing to
/// add); a strategy reading none of them (it brings its own content, as
/// `knowledge-graph` does) is always taken when it can handle the request. At
/// most `max_workers` run. Required backends must be present, and only
/// strategies using one of them are selected.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultSelector;

impl StrategySelector for DefaultSelector {
    fn select(&self, input: &StageInput<'_>) -> Result<Vec<Selection>, PipelineError> {
        let (Some(backends), Some(registry), Some(query)) = (input.backends, input.registry, input.query.as_ref())
        else {
            return Ok(Vec::new());
        };
        let mut required = Vec::new();
        for name in input.request.required_backends() {
            let kind = BackendKind::parse(name).ok_or_else(|| PipelineError::UnknownBackend(name.clone()))?;
            if let Some(reason) = backends.why_missing(kind) {
                return Err(PipelineError::MissingBackend { backend: name.clone(), reason });
            }
            required.push(kind);
        }
        let uses_required = |s: &dyn crate::retrieval::ContextStrategy| {
            required.is_empty() || {
                let caps = s.capabilities().required();
                required.iter().any(|k| caps.contains(k))
            }
        };
        let preferred = input.request.preferred_strategies();
        if !preferred.is_empty() {
            let mut out = Vec::new();
            for name in preferred {
                let strategy = registry.get(name).ok_or_else(|| PipelineError::UnknownStrategy {
                    name: name.clone(),
                    known: registry.names().join(", "),
                })?;
                if !registry.is_enabled(name) {
                    return Err(PipelineError::DisabledStrategy(name.clone()));
                }
                if out.iter().all(|s: &Selection| s.strategy != *name) {
                    let quality = strategy.capabilities().quality_score;
                    out.push(Selection { strategy: name.clone(), confidence: 1.0, quality });
                }
            }
            return Ok(out);
        }
        let mut scored: Vec<Selection> = Vec::new();
        for name in registry.enabled() {
            let Some(strategy) = registry.get(name) else { continue };
            if registry.validate(strategy.as_ref(), backends).is_err() || !uses_required(strategy.as_ref()) {
                continue;
            }
            let caps = strategy.capabilities();
            let confidence = if input.plan.is_some() && caps.supports_plan_hierarchy {
                1.0
            } else {
                strategy.can_handle(query, backends)
            };
            if confidence > 0.0 {
                scored.push(Selection { strategy: name.clone(), confidence, quality: caps.quality_score });
            }
        }
        let value = |s: &Selection| s.confidence * s.quality;
        scored.sort_by(|a, b| value(b).total_cmp(&value(a)).then_with(|| a.strategy.cmp(&b.strategy)));
        let best = scored.first().map(value).unwrap_or(0.0);
        let mut chosen: Vec<Selection> = Vec::new();
        let mut covered: BTreeSet<BackendKind> = BTreeSet::new();
        let mut plan_covered = false;
        for s in scored {
            if chosen.len() >= input.settings.max_workers.max(1) {
                break;
            }
            let Some(strategy) = registry.get(&s.strategy) else { continue };
            let caps = strategy.capabilities();
            let plan_walk = input.plan.is_some() && caps.supports_plan_hierarchy;
            // A strategy that reads none of the code backends brings content of
            // its own (knowledge nodes): it always adds coverage.
            let own_content = caps.required().is_empty();
            // A plan's decisions always travel with its context.
            if !plan_walk && !own_content && value(&s) < best * 0.5 {
                continue;
            }
            let adds =
                caps.required().iter().any(|k| !covered.contains(k)) || (plan_walk && !plan_covered) || own_content;
            if adds || chosen.is_empty() {
                covered.extend(caps.required());
                plan_covered |= plan_walk;
                chosen.push(s);
            }
        }
        if chosen.is_empty() {
            // Nothing claims the request: the executor walks the fallback path.
            if let Some(first) = crate::retrieval::registry::DEGRADATION_PATH.iter().find(|n| registry.is_enabled(n)) {
                let quality = registry.get(first).map_or(0.0, |s| s.capabilities().quality_score);
                chosen.push(Selection { strategy: (*first).to_owned(), confidence: 0.0, quality });
            }
        }
        Ok(chosen)
    }
}

/// 2. Splits the budget across the selected strategies.
pub trait BudgetAllocator: Send + Sync {
    fn allocate(&self, selections: &[Selection], budget: usize) -> Vec<Allocation>;
}

/// Shares proportional to `confidence x quality` (equal shares when all are 0);
/// rounding leftovers go to the first.
#[derive(Clone, Copy, Debug, Default)]
pub struct ProportionalAllocator;

impl BudgetAllocator for ProportionalAllocator {
    fn allocate(&self, selections: &[Selection], budget: usize) -> Vec<Allocation> {
        if selections.is_empty() {
            return Vec::new();
        }
        let weights: Vec<f64> = selections.iter().map(|s| (s.confidence * s.quality).max(0.0)).collect();
        let total: f64 = weights.iter().sum();
        let mut out: Vec<Allocation> = selections
            .iter()
            .zip(&weights)
            .map(|(s, w)| {
                let share = if total > 0.0 { w / total } else { 1.0 / selections.len() as f64 };
                Allocation { strategy: s.strategy.clone(), tokens: (budget as f64 * share).floor() as usize }
            })
            .collect();
        let given: usize = out.iter().map(|a| a.tokens).sum();
        out[0].tokens += budget.saturating_sub(given);
        out
    }
}

/// What one selected strategy produced.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StrategyRun {
    /// The strategy selected.
    pub selected: String,
    /// The strategy whose candidates these are (after fallback), if any ran.
    pub strategy: Option<String>,
    pub fallbacks: Vec<Fallback>,
    #[serde(skip)]
    pub candidates: Vec<Candidate>,
    pub elapsed_ms: u64,
    pub error: Option<String>,
}

/// 3. Runs the selected strategies.
pub trait StrategyExecutor: Send + Sync {
    fn execute(&self, input: &StageInput<'_>, selections: &[Selection]) -> Vec<StrategyRun>;
}

/// Consecutive failures per strategy, shared by every assembly of one engine.
///
/// The state is per process, on purpose: it lives as long as the engine (a
/// `agents serve` or MCP server keeps it across requests; each CLI command starts
/// with every circuit closed). A stored breaker would keep a strategy off after
/// the failure that opened it was fixed, with nothing to close it again.
#[derive(Debug, Default)]
pub struct CircuitBreaker {
    failures: Mutex<HashMap<String, u32>>,
}

impl CircuitBreaker {
    pub fn is_open(&self, strategy: &str, threshold: u32) -> bool {
        threshold > 0
            && self.failures.lock().unwrap_or_else(|e| e.into_inner()).get(strategy).copied().unwrap_or(0) >= threshold
    }

    pub fn record(&self, strategy: &str, ok: bool) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if ok {
            failures.remove(strategy);
        } else {
            *failures.entry(strategy.to_owned()).or_insert(0) += 1;
        }
    }

    pub fn failures(&self, strategy: &str) -> u32 {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).get(strategy).copied().unwrap_or(0)
    }
}

/// Runs the strategies on at most `max_workers` threads, each with the
/// registry's fallback path, all within one time limit (`timeout_secs` from the
/// start of the executor, however many strategies there are). At the limit the
/// executor returns: every strategy still running or not yet started is
/// reported as timed out (a failure for the circuit breaker), the running ones
/// are asked to stop (the query's cancel flag, which the registry checks before
/// each fallback step and ARCE between its rounds), and a late result is
/// dropped. A strategy that panics is reported as failed. A strategy whose
/// circuit is open (`circuit_breaker_threshold` consecutive failures) is not
/// called.
///
/// When the backends come owned ([`Backends::owned`], as the engine gives
/// them), the threads are the strategies' own: one that ignores its cancel flag
/// runs on after the executor has returned, holding its copy of the backends,
/// and its result is dropped. Over borrowed backends (tests, embedders) the
/// threads are scoped, and such a strategy is waited for.
#[derive(Debug, Default)]
pub struct ParallelExecutor {
    breaker: Arc<CircuitBreaker>,
}

impl ParallelExecutor {
    pub fn with_breaker(breaker: Arc<CircuitBreaker>) -> ParallelExecutor {
        ParallelExecutor { breaker }
    }
}

/// Why a strategy run by the executor produced nothing.
#[derive(Debug, thiserror::Error)]
pub enum RunFailure {
    /// The strategy and every fallback after it failed or could not run.
    #[error(transparent)]
    Failed(#[from] crate::retrieval::registry::RegistryError),
    /// The strategy panicked; the executor caught it.
    #[error("the strategy panicked")]
    Panicked,
}

/// What a worker sends back: the selection's index, its result, its time.
type Finished = (usize, Result<crate::retrieval::registry::Retrieval, RunFailure>, Duration);

/// One worker: takes the next selection to run until none is left or the time
/// limit passed, and sends each result back.
#[allow(clippy::too_many_arguments)]
fn work(
    todo: &[usize],
    names: &[String],
    next: &std::sync::atomic::AtomicUsize,
    cancel: &AtomicBool,
    deadline: Instant,
    query: &crate::retrieval::RetrievalQuery<'_>,
    registry: &crate::retrieval::registry::ContextStrategyRegistry,
    backends: &crate::retrieval::Backends<'_>,
    plan: Option<&crate::retrieval::PlanContext>,
    tx: &std::sync::mpsc::Sender<Finished>,
) {
    while let Some(&i) = todo.get(next.fetch_add(1, Ordering::Relaxed)) {
        // Past the limit nothing more starts; the waiter reports it.
        if cancel.load(Ordering::Relaxed) || Instant::now() >= deadline {
            break;
        }
        let query = query.clone().with_cancel(cancel, deadline);
        let started = Instant::now();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            registry.run(Some(&names[i]), &query, backends, plan)
        }));
        let result = match result {
            Ok(Ok(retrieval)) => Ok(retrieval),
            Ok(Err(error)) => Err(RunFailure::Failed(error)),
            Err(_) => Err(RunFailure::Panicked),
        };
        if tx.send((i, result, started.elapsed())).is_err() {
            break;
        }
    }
}

impl ParallelExecutor {
    /// Waits for the workers' results until all came or the time limit passed,
    /// filling `runs`; at the limit sets `cancel` and reports the rest.
    #[allow(clippy::too_many_arguments)]
    fn collect(
        &self,
        rx: &std::sync::mpsc::Receiver<Finished>,
        todo: &[usize],
        names: &[String],
        cancel: &AtomicBool,
        deadline: Instant,
        timeout: Duration,
        runs: &mut [Option<StrategyRun>],
    ) {
        let mut pending: BTreeSet<usize> = todo.iter().copied().collect();
        while !pending.is_empty() {
            let wait = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok((i, result, elapsed)) => {
                    if !pending.remove(&i) {
                        continue;
                    }
                    let selected = names[i].clone();
                    let elapsed_ms = elapsed.as_millis() as u64;
                    self.breaker.record(&selected, result.is_ok());
                    runs[i] = Some(match result {
                        Ok(r) => StrategyRun {
                            selected,
                            strategy: Some(r.strategy),
                            fallbacks: r.fallbacks,
                            candidates: r.candidates,
                            elapsed_ms,
                            error: None,
                        },
                        Err(error) => {
                            StrategyRun { selected, elapsed_ms, error: Some(error.to_string()), ..Default::default() }
                        }
                    });
                }
                // Past the limit (or every worker gone): ask the rest to stop,
                // report them, and wait no more for their results.
                Err(_) => {
                    cancel.store(true, Ordering::Relaxed);
                    for i in std::mem::take(&mut pending) {
                        let selected = names[i].clone();
                        self.breaker.record(&selected, false);
                        runs[i] = Some(StrategyRun {
                            selected,
                            elapsed_ms: timeout.as_millis() as u64,
                            error: Some(format!(
                                "timed out after {} s (context.executor.timeout-secs)",
                                timeout.as_secs()
                            )),
                            ..Default::default()
                        });
                    }
                }
            }
        }
    }
}

impl StrategyExecutor for ParallelExecutor {
    fn execute(&self, input: &StageInput<'_>, selections: &[Selection]) -> Vec<StrategyRun> {
        let (Some(backends), Some(registry), Some(query)) = (input.backends, input.registry, input.query.as_ref())
        else {
            return Vec::new();
        };
        let settings = input.settings;
        let timeout = Duration::from_secs(settings.timeout_secs.max(1));
        let deadline = Instant::now() + timeout;
        let mut runs: Vec<Option<StrategyRun>> = vec![None; selections.len()];
        let mut todo: Vec<usize> = Vec::new();
        for (i, s) in selections.iter().enumerate() {
            if self.breaker.is_open(&s.strategy, settings.circuit_breaker_threshold) {
                runs[i] = Some(StrategyRun {
                    selected: s.strategy.clone(),
                    error: Some(format!(
                        "circuit open after {} consecutive failures",
                        self.breaker.failures(&s.strategy)
                    )),
                    ..StrategyRun::default()
                });
            } else {
                todo.push(i);
            }
        }
        let names: Vec<String> = selections.iter().map(|s| s.strategy.clone()).collect();
        let workers = settings.max_workers.max(1).min(todo.len());
        let (tx, rx) = std::sync::mpsc::channel::<Finished>();
        match &backends.owned {
            // Threads of their own, holding what they use: the executor returns
            // at the limit whatever they do.
            Some(owned) => {
                let cancel = Arc::new(AtomicBool::new(false));
                let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let shared = Arc::new((
                    todo.clone(),
                    names.clone(),
                    registry.clone(),
                    query.to_owned_query(),
                    input.plan.cloned(),
                ));
                for _ in 0..workers {
                    let (tx, cancel, next, shared, owned) =
                        (tx.clone(), cancel.clone(), next.clone(), shared.clone(), owned.clone());
                    let spawned = std::thread::Builder::new().name("strategy".to_owned()).spawn(move || {
                        let (todo, names, registry, query, plan) = &*shared;
                        let backends = owned.view();
                        let query = query.query();
                        work(todo, names, &next, &cancel, deadline, &query, registry, &backends, plan.as_ref(), &tx);
                    });
                    if let Err(error) = spawned {
                        tracing::warn!(%error, "cannot start a strategy thread");
                    }
                }
                drop(tx);
                self.collect(&rx, &todo, &names, &cancel, deadline, timeout, &mut runs);
            }
            // Borrowed backends: scoped threads, joined before returning.
            None => {
                let cancel = AtomicBool::new(false);
                let next = std::sync::atomic::AtomicUsize::new(0);
                std::thread::scope(|scope| {
                    for _ in 0..workers {
                        let tx = tx.clone();
                        let (todo, names, next, cancel) = (&todo, &names, &next, &cancel);
                        let plan = input.plan;
                        scope.spawn(move || {
                            work(todo, names, next, cancel, deadline, query, registry, backends, plan, &tx);
                        });
                    }
                    drop(tx);
                    self.collect(&rx, &todo, &names, &cancel, deadline, timeout, &mut runs);
                });
            }
        }
        runs.into_iter().flatten().collect()
    }
}

// ---------------------------------------------------------------- phase 2

/// 4. Removes duplicates.
pub trait FragmentDeduplicator: Send + Sync {
    fn dedup(&self, pieces: Vec<Piece>) -> Vec<Piece>;
}

/// Merges pieces of the same UKO node (best relevance wins, strategies and the
/// deepest requested depth are kept), then drops copies: pieces whose content
/// hashes equal another's, then near-duplicates (texts of at least 40 words whose
/// word-trigram sets overlap by 90% or more, Jaccard). Of two copies the one
/// whose file stands higher in the evidence stays (the earlier on a tie), so a
/// helper pasted into two files does not take the better file's only piece.
/// Input order is kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultDeduplicator;

const NEAR_DUPLICATE_JACCARD: f64 = 0.9;
const NEAR_DUPLICATE_MIN_WORDS: usize = 40;

fn shingles(text: &str) -> Option<HashSet<u64>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.len() < NEAR_DUPLICATE_MIN_WORDS {
        return None;
    }
    Some(
        words
            .windows(3)
            .map(|w| {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                w.hash(&mut hasher);
                hasher.finish()
            })
            .collect(),
    )
}

fn jaccard(a: &HashSet<u64>, b: &HashSet<u64>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 { 1.0 } else { inter as f64 / union as f64 }
}

impl FragmentDeduplicator for DefaultDeduplicator {
    fn dedup(&self, pieces: Vec<Piece>) -> Vec<Piece> {
        // UKO identity.
        let mut by_node: HashMap<String, usize> = HashMap::new();
        let mut merged: Vec<Piece> = Vec::with_capacity(pieces.len());
        for piece in pieces {
            match by_node.get(&piece.uko_node) {
                Some(&i) => {
                    let kept = &mut merged[i];
                    for s in &piece.strategies {
                        if !kept.strategies.contains(s) {
                            kept.strategies.push(s.clone());
                        }
                    }
                    kept.quality = kept.quality.max(piece.quality);
                    kept.hops = match (kept.hops, piece.hops) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    if piece.relevance > kept.relevance {
                        kept.relevance = piece.relevance;
                        kept.note = piece.note.clone().or(kept.note.take());
                    }
                    if piece.depth > kept.depth {
                        kept.depth = piece.depth;
                        kept.content = piece.content;
                        kept.tokens = piece.tokens;
                    }
                    kept.requested_depth = kept.requested_depth.max(piece.requested_depth);
                }
                None => {
                    by_node.insert(piece.uko_node.clone(), merged.len());
                    merged.push(piece);
                }
            }
        }
        // Content hash, then near-duplicate text: of two copies (a helper
        // pasted into two files), the one whose file stands higher in the
        // evidence is kept, the earlier on a tie; the kept keep their order.
        let mut by_standing: Vec<usize> = (0..merged.len()).collect();
        by_standing.sort_by(|&a, &b| merged[b].file_standing.total_cmp(&merged[a].file_standing).then(a.cmp(&b)));
        let mut hashes = HashSet::new();
        let mut kept_shingles: Vec<HashSet<u64>> = Vec::new();
        let mut keep = vec![false; merged.len()];
        for i in by_standing {
            let piece = &merged[i];
            if !hashes.insert(Sha256::digest(piece.content.as_bytes())) {
                continue;
            }
            if let Some(set) = shingles(&piece.content) {
                if kept_shingles.iter().any(|k| jaccard(k, &set) >= NEAR_DUPLICATE_JACCARD) {
                    continue;
                }
                kept_shingles.push(set);
            }
            keep[i] = true;
        }
        merged.into_iter().zip(keep).filter_map(|(piece, keep)| keep.then_some(piece)).collect()
    }
}

/// 5. Settles one depth per UKO node.
pub trait DetailDepthResolver: Send + Sync {
    fn resolve(
        &self,
        pieces: Vec<Piece>,
        budget: usize,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> Vec<Piece>;
}

/// Each node gets the deepest depth (from its requested depth down the fallback
/// steps) whose rendering fits its share of the budget: a quarter for the three
/// most relevant pieces (the best match comes whole when a single function fits
/// a quarter of the budget), a twelfth for the rest, so that no few fragments crowd
/// out the others and the context covers more of the places that matter. Pieces
/// that fit nowhere keep their shallowest rendering for the packer to judge.
#[derive(Clone, Copy, Debug, Default)]
pub struct BudgetDepthResolver;

/// How many of the most relevant pieces get the larger share (the packer's
/// first leaders get the same).
pub const RESOLVER_LEADERS: usize = agents_pack::FIRST_LEADERS;
/// Budget divisors: a leader may take a quarter, any other piece a twelfth.
const RESOLVER_LEADER_SHARE: usize = agents_pack::LEADER_SHARE;
const RESOLVER_SHARE: usize = agents_pack::PIECE_SHARE;

/// The depth to render a node proposed at `depth` first: its full text (depth
/// 9) only when `source_bytes` of it could fit the share the resolver may give
/// it (`budget` / 4 for one of the few most relevant, `budget` / 12 for the
/// rest) at [`MAX_BYTES_PER_TOKEN`]; otherwise the next depth of the ladder,
/// which the resolver would fall back to anyway. Rendering and counting whole
/// files only to discard them was most of what a query spent.
pub fn first_depth(depth: u8, source_bytes: Option<usize>, budget: usize, may_lead: bool) -> u8 {
    let share = if may_lead { RESOLVER_LEADER_SHARE } else { RESOLVER_SHARE };
    let cap = (budget / share).max(MIN_FRAGMENT_TOKENS);
    match source_bytes {
        Some(bytes) if depth >= DEPTH_STEPS[0] && bytes > cap * MAX_BYTES_PER_TOKEN => {
            depth_ladder(depth).nth(1).unwrap_or(depth)
        }
        _ => depth,
    }
}

impl DetailDepthResolver for BudgetDepthResolver {
    fn resolve(
        &self,
        pieces: Vec<Piece>,
        budget: usize,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> Vec<Piece> {
        // Rank by relevance (ties by URI): the leaders may take more.
        let mut order: Vec<usize> = (0..pieces.len()).collect();
        let weight = |p: &Piece| p.relevance * p.boost;
        order.sort_by(|&a, &b| {
            weight(&pieces[b]).total_cmp(&weight(&pieces[a])).then_with(|| pieces[a].uko_node.cmp(&pieces[b].uko_node))
        });
        let mut rank = vec![0; pieces.len()];
        for (r, i) in order.into_iter().enumerate() {
            rank[i] = r;
        }
        pieces
            .into_iter()
            .zip(rank)
            .map(|(piece, rank)| {
                let share = if rank < RESOLVER_LEADERS { RESOLVER_LEADER_SHARE } else { RESOLVER_SHARE };
                let cap = (budget / share).max(MIN_FRAGMENT_TOKENS);
                if piece.tokens <= cap {
                    return piece;
                }
                let mut last = None;
                for depth in depth_ladder(piece.depth).skip(1) {
                    if let Some(p) = at_depth(&piece, depth, renderer, tokenizer) {
                        if p.tokens <= cap {
                            return p;
                        }
                        last = Some(p);
                    }
                }
                last.unwrap_or(piece)
            })
            .collect()
    }
}

/// 6. Scores pieces; the result is sorted best first (ties by URI).
pub trait FragmentScorer: Send + Sync {
    fn score(
        &self,
        pieces: Vec<Piece>,
        plan: Option<&crate::retrieval::PlanContext>,
        weights: &ScorerWeights,
    ) -> Vec<ScoredFragment>;
}

/// `relevance x w1 + hierarchy x w2 + quality x w3 + recency x w4`, divided by the
/// sum of the weights. Hierarchy position is where the piece sits in the evidence:
/// the standing of its file (the file's summed relevance, best parts first, as a
/// share of the best file's), or `1 / (1 + hops)` from the focus when a strategy
/// walked to it, whichever is higher; 1.0 when the plan's decisions name its file
/// or symbol, 0.9 for inline notes. Recency: `0.5 ^ (age / 30 days)` against the
/// newest piece; 0.5 when unknown.
#[derive(Clone, Copy, Debug, Default)]
pub struct WeightedScorer;

const RECENCY_HALF_LIFE_SECS: f64 = 30.0 * 86_400.0;

/// Each file's standing in [0, 1]: summed relevance of its pieces (best first,
/// halving weights) times its role prior, relative to the best file.
fn file_standing(pieces: &[Piece]) -> HashMap<String, f64> {
    let evidence = crate::retrieval::path_evidence(
        pieces.iter().filter(|p| !p.path.is_empty() && !p.inline).map(|p| (p.path.as_str(), p.relevance as f32)),
    );
    let best = evidence.first().map_or(0.0, |(_, e)| f64::from(*e));
    evidence.into_iter().map(|(path, e)| (path, if best > 0.0 { f64::from(e) / best } else { 0.0 })).collect()
}

fn hierarchy_of(piece: &Piece, plan_mentions: &[String], standing: &HashMap<String, f64>) -> f64 {
    let mentioned = plan_mentions.iter().any(|m| {
        (!piece.path.is_empty() && m.contains(piece.path.as_str()))
            || piece.uko_node.rsplit(['#', '.']).next().is_some_and(|name| name.len() > 3 && m.contains(name))
    });
    if mentioned {
        return 1.0;
    }
    if piece.inline {
        return 0.9;
    }
    let file = standing.get(piece.path.as_str()).copied().unwrap_or(0.0).max(piece.file_standing);
    let walk = piece.hops.map_or(0.0, |hops| 1.0 / (1.0 + f64::from(hops)));
    file.max(walk)
}

impl FragmentScorer for WeightedScorer {
    fn score(
        &self,
        pieces: Vec<Piece>,
        plan: Option<&crate::retrieval::PlanContext>,
        weights: &ScorerWeights,
    ) -> Vec<ScoredFragment> {
        let mentions: Vec<String> = plan
            .map(|p| {
                p.ancestors.iter().flat_map(|a| a.decisions.iter().map(|d| format!("{} {}", d.title, d.body))).collect()
            })
            .unwrap_or_default();
        let newest = pieces.iter().filter_map(|p| p.modified).max();
        let standing = file_standing(&pieces);
        let total = weights.relevance + weights.hierarchy + weights.quality + weights.recency;
        let total = if total > 0.0 { total } else { 1.0 };
        let mut scored: Vec<ScoredFragment> = pieces
            .into_iter()
            .map(|piece| {
                let recency = match (piece.modified, newest) {
                    (Some(m), Some(n)) => 0.5f64.powf((n - m).max(0) as f64 / RECENCY_HALF_LIFE_SECS),
                    _ => 0.5,
                };
                let parts = ScoreParts {
                    relevance: piece.relevance.clamp(0.0, 1.0),
                    hierarchy: hierarchy_of(&piece, &mentions, &standing),
                    quality: piece.quality.clamp(0.0, 1.0),
                    recency,
                };
                let score = (parts.relevance * weights.relevance
                    + parts.hierarchy * weights.hierarchy
                    + parts.quality * weights.quality
                    + parts.recency * weights.recency)
                    / total
                    * piece.boost;
                ScoredFragment { piece, score, parts }
            })
            .collect();
        calibrate(&mut scored);
        sort_scored(&mut scored);
        diversify(scored)
    }
}

/// The chunk ranker's logistic model: each feature's weight in the log-odds
/// that a piece delivers what the query asks for. Fitted by
/// `scripts/fit-chunk-ranker.py` pairwise (within each case, a piece that
/// delivers against one that does not) on both dev sets at once: the 430
/// natural-language questions (a piece delivers when its lines meet an
/// annotated span; a whole file's node only when its text came with it) and
/// the 280 commit messages (when its file is one the commit changed); the
/// constant is then fitted alone so the probabilities stay calibrated.
/// Checked by leaving each repository out in turn
/// (docs/benchmarks.md#chunk-ranking).
pub mod ranker {
    /// Constant term.
    pub const BIAS: f64 = -4.5333;
    /// `ln` of the file's standing ([`super::fused_standing`]: 1 for the best
    /// file).
    pub const LN_STANDING: f64 = 1.8023;
    /// The same for a question asking how something works
    /// ([`Piece::asks_how`]): its answer is a path through several files, so
    /// the best file's lesser pieces should not crowd out the others' best.
    /// Set on top of the fitted weights by measurement: 1.0, 1.3, 1.5 gave
    /// chunk NDCG@10 0.737, 0.739 and 0.737 over all 466 questions (0.735 at
    /// 1.80); for every question of more than five words, 0.738 and the
    /// commit messages' MRR 0.726 -> 0.711, docs/benchmarks.md.
    pub const LN_STANDING_HOW: f64 = 1.3;
    /// `1 / (1 + j)` for the `j`-th piece of its file by its own score: the
    /// learned weight of a further piece of a file already represented.
    pub const INV_ORDINAL: f64 = 0.2297;
    /// The strategies' relevance of the piece itself, in [0, 1].
    pub const EVIDENCE: f64 = 1.4063;
    /// How strongly the query names the node ([`crate::retrieval::name_match`]).
    pub const NAME_MATCH: f64 = 1.0318;
    /// A function or method.
    pub const FUNCTION: f64 = 1.4667;
    /// A class, struct, interface, trait, enum or impl. Set below the fitted
    /// 1.13 by measurement: 0.7 gave chunk NDCG@10 0.735 over all 466
    /// questions (0.734 at 1.13; symbol look-ups 0.886 -> 0.891), and with
    /// the question's standing at 1.3, 0.4 and 0.7 measured the same,
    /// docs/benchmarks.md.
    pub const CONTAINER: f64 = 0.7;
    /// A whole file's node (a module, a file, a document).
    pub const WHOLE_FILE: f64 = 0.3560;
    /// `ln` of the lines of a node that is not a whole file.
    pub const LN_LINES: f64 = 0.1729;
    /// A test file's piece ([`crate::retrieval::FileRole::Test`]).
    pub const TEST: f64 = -4.6800;
    /// A document's piece.
    pub const DOC: f64 = -7.7390;
    /// An example's or benchmark's piece.
    pub const EXAMPLE: f64 = -3.8352;
    /// A type stub's or generated file's piece (its file's standing already
    /// carries the path prior that ranks such files last).
    pub const STUB_OR_GENERATED: f64 = 0.3199;
    /// The share of the query's words the node's text contains.
    pub const TERM_COVERAGE: f64 = 2.7145;
    /// How many of the query's words the node's text contains.
    pub const TERMS_MET: f64 = 0.0669;
    /// The share of the query's words that [`super::NEAR_WINDOW`] tokens of
    /// the node's text hold together (questions only, not look-ups). Set on
    /// top of the fitted weights by measurement: 1 and 1.5 gave chunk
    /// NDCG@10 0.717 and 0.716 over all 466 questions (0.714 without),
    /// docs/benchmarks.md.
    pub const TERMS_NEAR: f64 = 1.0;
    /// The same share for the best passage of the piece's whole file: a file
    /// that speaks of the question in one place holds its answer more often
    /// than one whose pieces each hold a word. Set on top of the fitted
    /// weights: 1.5 and 3 gave 0.723 and 0.722 over all 466 questions (0.717
    /// without), docs/benchmarks.md.
    pub const FILE_NEAR: f64 = 1.5;
    /// The share of the query's words a caller of the piece adds to its own
    /// ([`Piece::caller_terms`]; questions only). Set on top of the fitted
    /// weights by measurement: 1.5, 2, 3, 4 and 5 gave chunk NDCG@10 0.724,
    /// 0.728, 0.728, 0.720 and 0.706 over all 466 questions (0.723
    /// without), docs/benchmarks.md.
    pub const CALLER_TERMS: f64 = 2.0;
    /// `ln(1 +` the names of the answer's functions and methods a piece
    /// calls`)` ([`Piece::callees`]; only for a question asking how something
    /// works, [`crate::retrieval::QueryNames::asks_how`]). Set on top of the
    /// fitted weights by measurement: 0.5, 0.75 and 1 gave chunk NDCG@10
    /// 0.733, 0.733 and 0.730 over all 466 questions counting the pieces
    /// called (0.728 without); counting their names, 0.4, 0.5 and 0.75 gave
    /// 0.733, 0.734 and 0.731; for every question, not only how-questions,
    /// 0.732 (symbol questions down), docs/benchmarks.md.
    pub const CALLEES: f64 = 0.5;
    /// A function or method that the function a look-up names calls
    /// ([`Piece::called_by_named`]: `Opts::search_paths` and the helpers it
    /// calls, which the answer reads on into). Set on top of the fitted
    /// weights by measurement: 0.5, 1 and 1.5 gave chunk NDCG@10 0.7400,
    /// 0.7400 and 0.7390 over all 466 questions (0.7393 without; symbol
    /// look-ups of the dev set 0.8905 -> 0.8925 at 0.5), docs/benchmarks.md.
    pub const CALLED_BY_NAMED: f64 = 0.5;
}

/// How steeply a file's standing falls with its share of the best file's
/// fused evidence ([`fused_standing`]). Measured over all 646 questions
/// against the standing by place alone (0.7267): 1.5, 2 and 2.5 gave chunk
/// NDCG@10 0.7299, 0.7301 and 0.7282 (how-questions by place; by the
/// squared share too, 0.7294, by the share itself, 0.7287: architecture
/// -0.004 and -0.007); the commit messages' MRR 0.724 -> 0.720 at 2, R@10
/// 0.905 either way, docs/benchmarks.md.
pub const STANDING_POWER: f64 = 2.0;

/// The standing of a file, the [`ranker`]'s prior for its pieces: the file at
/// `place` (0 for the best) of the fused file ranking, whose fused evidence
/// ([`crate::retrieval::fuse_paths_named`]) is `share` of the best file's,
/// stands at `share^`[`STANDING_POWER`]: a file as well supported as the best
/// stands as high, whatever its place, and one only a single list names falls
/// away. A question asking how something works, whose answer is a path
/// through several files, keeps the standing of its place alone, `1 / (1 +
/// place / 3)`.
pub fn fused_standing(place: usize, share: f64, asks_how: bool) -> f64 {
    if asks_how { 1.0 / (1.0 + place as f64 / 3.0) } else { share.clamp(0.0, 1.0).powf(STANDING_POWER) }
}

/// Tokens of the passage [`Piece::terms_near`] counts the query's words in:
/// 20 and 80 measured the same.
pub const NEAR_WINDOW: usize = 40;

/// Sets each function's or method's [`Piece::caller_terms`]: the most of the
/// query's words one of the pieces calling it holds that it does not; and,
/// when `count_callees` (a question asking how something works), its
/// [`Piece::callees`]: how many distinct names of those pieces it calls.
/// `words` holds the query's words each callable piece meets, by its place in
/// `pieces` (a question's only); a call is matched by the called name (the
/// last segment of its target, resolved or not: a method called through a
/// field, `group.engine.addRoute(...)`, is rarely resolved) against each
/// callable piece's own name, so a name several pieces bear links each of
/// them. A question about how a route ends up in a tree speaks of routes in
/// the function a user calls and of trees in the helper it calls.
pub fn link_calls(
    pieces: &mut [Piece],
    words: &BTreeMap<usize, Vec<bool>>,
    renderer: &dyn DepthRenderer,
    count_callees: bool,
) {
    let mut by_name: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &i in words.keys() {
        by_name.entry(agents_pack::own_name(&pieces[i].uko_node)).or_default().push(i);
    }
    let mut best: BTreeMap<usize, usize> = BTreeMap::new();
    for (&caller, caller_words) in words {
        // The pieces each called name links, and how many names link one:
        // a call to a name several pieces bear (`get`, a trait's method) is
        // one call.
        let mut callees: BTreeSet<usize> = BTreeSet::new();
        let mut called = 0u32;
        for name in renderer.called_names(&pieces[caller].uko_node) {
            let before = callees.len();
            let bearers = by_name.get(name.as_str()).map(Vec::as_slice).unwrap_or_default();
            callees.extend(bearers.iter().copied().filter(|&callee| callee != caller));
            called += u32::from(callees.len() > before);
        }
        if count_callees {
            pieces[caller].callees = called;
        }
        for callee in callees {
            let added = words[&callee].iter().zip(caller_words).filter(|&(&own, &theirs)| theirs && !own).count();
            let slot = best.entry(callee).or_default();
            *slot = (*slot).max(added);
        }
    }
    for (i, added) in best {
        pieces[i].caller_terms = u32::try_from(added).unwrap_or(u32::MAX);
    }
}

/// Sets [`Piece::called_by_named`] on each function and method that a
/// function or method the query names outright (name match 1) calls, by
/// the called name against the piece's own, as [`link_calls`] matches them.
pub fn link_named_callees(pieces: &mut [Piece], renderer: &dyn DepthRenderer) {
    let callable = |p: &Piece| matches!(p.kind.as_str(), "function" | "method");
    let called: BTreeSet<String> = pieces
        .iter()
        .filter(|p| callable(p) && p.name_match >= 1.0)
        .flat_map(|p| renderer.called_names(&p.uko_node))
        .collect();
    if called.is_empty() {
        return;
    }
    for piece in pieces.iter_mut().filter(|p| callable(p) && p.name_match < 1.0) {
        piece.called_by_named = called.contains(agents_pack::own_name(&piece.uko_node));
    }
}

/// The log-odds [`ranker`] gives a piece: `ordinal` is its place among its
/// file's pieces by their own score (0 for the best).
pub fn ranker_logit(piece: &Piece, ordinal: usize) -> f64 {
    use crate::retrieval::FileRole;
    // A definition the query names outright in a file that is not a test, a
    // document or the like by its own name, only by its folder (a helper
    // class in a `fixtures/` folder): no role penalty.
    // Test cases are left out: their names are descriptions that repeat the
    // API they test (`req.hostname` in `test/req.hostname.js`).
    let named = piece.name_match >= 1.0
        && piece.kind != "test"
        && FileRole::of(piece.path.rsplit('/').next().unwrap_or(&piece.path)) == FileRole::Source;
    // A test case, or a piece of a test module inside a source file (Rust's
    // `mod tests`), is a test whatever its file.
    let test_piece = piece.kind == "test" || crate::retrieval::in_test_module(&piece.uko_node);
    let role = match FileRole::of(&piece.path) {
        _ if piece.role_asked || named => 0.0,
        _ if test_piece => ranker::TEST,
        FileRole::Source => 0.0,
        FileRole::Test => ranker::TEST,
        FileRole::Doc => ranker::DOC,
        FileRole::Example => ranker::EXAMPLE,
        FileRole::Stub | FileRole::Generated => ranker::STUB_OR_GENERATED,
    };
    let lines = || line_span(&piece.source_range).map_or(1, |(a, b)| b.saturating_sub(a) + 1).max(1);
    let (kind, size) = match piece.kind.as_str() {
        "function" | "method" => (ranker::FUNCTION, f64::from(lines()).ln()),
        "class" | "struct" | "interface" | "trait" | "enum" | "impl" | "type" | "protocol" | "record" | "object" => {
            (ranker::CONTAINER, f64::from(lines()).ln())
        }
        "module" | "file" | "document" => (ranker::WHOLE_FILE, 0.0),
        _ => (0.0, f64::from(lines()).ln()),
    };
    let standing_weight = if piece.asks_how { ranker::LN_STANDING_HOW } else { ranker::LN_STANDING };
    ranker::BIAS
        + standing_weight * piece.file_standing.max(1e-3).ln()
        + ranker::INV_ORDINAL / (1.0 + ordinal as f64)
        + ranker::EVIDENCE * piece.relevance.clamp(0.0, 1.0)
        + ranker::NAME_MATCH * piece.name_match.clamp(0.0, 1.0)
        + kind
        + ranker::LN_LINES * size
        + role
        + ranker::TERM_COVERAGE * piece.term_coverage()
        + ranker::TERMS_MET * f64::from(piece.terms_met)
        + ranker::TERMS_NEAR * piece.near_coverage()
        + ranker::FILE_NEAR * piece.file_near_coverage()
        + ranker::CALLER_TERMS * piece.caller_coverage()
        + ranker::CALLEES * f64::from(piece.callees).ln_1p()
        + ranker::CALLED_BY_NAMED * f64::from(u8::from(piece.called_by_named))
}

/// One story for files and pieces: every piece of a ranked file (one with a
/// standing) scores the [`ranker`]'s probability that it holds the answer,
/// as a share of the best such piece's, so files rank (`ranked_files`) by
/// their best piece and pieces by their calibrated chance, whatever file they
/// come from. Within a file, pieces are placed by their own weighted score.
/// Pieces without a standing (inline notes, a scorer used alone) keep their
/// weighted score.
fn calibrate(scored: &mut [ScoredFragment]) {
    let calibrated = |s: &ScoredFragment| s.piece.file_standing > 0.0 && !s.piece.inline;
    let mut by_file: HashMap<&str, Vec<(f64, &str, usize)>> = HashMap::new();
    for (i, s) in scored.iter().enumerate().filter(|(_, s)| calibrated(s)) {
        by_file.entry(s.piece.path.as_str()).or_default().push((s.score, s.piece.uko_node.as_str(), i));
    }
    let mut probability = vec![None; scored.len()];
    for group in by_file.values_mut() {
        // Pieces below the relevance floor take the places after the others.
        group.sort_by(|a, b| {
            scored[a.2]
                .piece
                .below_floor
                .cmp(&scored[b.2].piece.below_floor)
                .then(b.0.total_cmp(&a.0))
                .then_with(|| a.1.cmp(b.1))
        });
        for (ordinal, &(_, _, i)) in group.iter().enumerate() {
            let logit = ranker_logit(&scored[i].piece, ordinal);
            probability[i] = Some(1.0 / (1.0 + (-logit).exp()));
        }
    }
    let best = probability.iter().flatten().copied().fold(0.0_f64, f64::max);
    if best <= 0.0 {
        return;
    }
    for (s, p) in scored.iter_mut().zip(probability) {
        if let Some(p) = p {
            s.score = p / best;
        }
    }
}

/// How much a query naming a node ([`crate::retrieval::name_match`] = 1) raises
/// its score: it doubles.
pub const NAME_BOOST: f64 = 1.0;

/// What a piece's score is multiplied by for where it lives and what it is
/// named: its file's role prior ([`crate::retrieval::prior_of`]: tests,
/// examples, docs, stubs and generated code after source), times `1 +
/// NAME_BOOST x name_match`; the prior is 1 for a role the query asks for
/// ([`crate::retrieval::RolesAsked`]). Kept to six places. ([`diversify`]
/// scales the final scores back into [0, 1].)
pub fn chunk_boost(path: &str, name_match: f64, roles: crate::retrieval::RolesAsked) -> f64 {
    let prior = f64::from(roles.prior(path));
    let boost = prior * (1.0 + NAME_BOOST * name_match.clamp(0.0, 1.0));
    (boost * 1e6).round() / 1e6
}

/// Lines at which a function's size prior reaches `sqrt(1/2)`.
const SIZE_PRIOR_LINES: f64 = 4.0;

/// The size prior of a function or method: `sqrt(lines / (lines + 4))`, 0.61
/// for 3 lines, 0.93 for 25, so a two-line wrapper or accessor whose few words
/// happen to match ranks below the body that does the work (BM25's length
/// normalisation favours the short one). Measured on the natural-language dev
/// set: chunk NDCG@10 0.507 to 0.525, better in nine repositories of ten.
/// Other kinds: 1.
pub fn size_prior(piece: &Piece) -> f64 {
    if !matches!(piece.kind.as_str(), "function" | "method") {
        return 1.0;
    }
    let lines = line_span(&piece.source_range).map_or(1, |(a, b)| b.saturating_sub(a) + 1) as f64;
    (lines / (lines + SIZE_PRIOR_LINES)).sqrt()
}

/// Weight of each further piece of a file already placed higher in the ranking:
/// the second piece of a file counts 0.9 of its score, the third 0.81, ... so
/// the top of the list spreads over more files.
pub const DIVERSITY_DECAY: f64 = 0.9;
/// Weight of a piece whose lines overlap those of a piece already placed higher
/// (a class after one of its methods, a file after its function): it repeats
/// what the agent already has.
pub const OVERLAP_DECAY: f64 = 0.5;
/// Step between neighbouring final scores: the ranking is strict, so equal
/// evidence never leaves the order to chance.
const SCORE_STEP: f64 = 1e-6;

/// Re-ranks scored pieces greedily: each round takes the piece whose score,
/// times [`DIVERSITY_DECAY`] per piece of its file already taken and
/// [`OVERLAP_DECAY`] when its lines overlap one of theirs, is highest
/// (ties by URI), and gives it that score. A piece of a ranked file (one with
/// a standing) keeps its calibrated score: [`ranker`] already weighs its place
/// in its file, and on the dev set any further decay cost answers. Pieces
/// below the relevance floor ([`Piece::below_floor`]) are taken after every
/// other. Then the scores are scaled so the best is 1, kept to six places and
/// made strictly lower than the one before it (never below 0), so the scores
/// delivered as `relevance_score` tell the same order as the list.
pub fn diversify(rest: Vec<ScoredFragment>) -> Vec<ScoredFragment> {
    let mut out = Vec::with_capacity(rest.len());
    take_by_weight(rest, &mut out, diversity_weight);
    // Scaled so the best is 1: a boosted score may pass 1, and a consumer reads
    // the scores as shares of the best.
    let scale = out.first().map_or(1.0, |s| if s.score > 0.0 { 1.0 / s.score } else { 1.0 });
    make_strict(&mut out, scale);
    out
}

/// [`diversify`]'s weight of a piece, given the lines of its file's pieces
/// taken before it. A ranked file's pieces (with a standing) carry the
/// ranker's own weight for their place in their file: measured, a further
/// decay there only costs answers.
fn diversity_weight(s: &ScoredFragment, before: &[Option<(u32, u32)>]) -> f64 {
    if s.piece.file_standing > 0.0 {
        return 1.0;
    }
    let lines = line_span(&s.piece.source_range);
    let overlaps = before.iter().any(|b| match (lines, b) {
        (Some((a0, a1)), Some((b0, b1))) => a0 <= *b1 && *b0 <= a1,
        _ => false,
    });
    DIVERSITY_DECAY.powi(before.len() as i32) * if overlaps { OVERLAP_DECAY } else { 1.0 }
}

/// Weight of each further packed piece of a file already listed higher, in
/// the delivered ranking ([`spread_over_files`]): the second piece of a file
/// counts 0.9 of its score, the third 0.81, ...
pub const PACKED_FILE_DECAY: f64 = 0.9;

/// The delivered ranking of what was packed: each round takes the packed
/// piece whose score, times [`PACKED_FILE_DECAY`] per packed piece of its file
/// already taken, is highest (ties by URI), so the top of the list spreads
/// over more files while the packer chose the pieces, and their depths, by
/// their own scores. A file's best piece keeps its score, so files keep their
/// order (`ranked_files`). Scores are then made strictly decreasing as in
/// [`diversify`]. Measured on the natural-language sets (430 questions):
/// distinct files in the top ten 3.44 -> 3.86, chunk NDCG@10 0.704 -> 0.707,
/// the packed context unchanged (a decay before packing spent the budget on
/// more files: relevant lines at 8k 0.783 -> 0.774).
pub fn spread_over_files(packed: &mut Vec<ScoredFragment>) {
    let rest = std::mem::take(packed);
    take_by_weight(rest, packed, |_, before| PACKED_FILE_DECAY.powi(before.len() as i32));
    make_strict(packed, 1.0);
}

/// The most a piece of a how-question's answer gains over its score
/// ([`cover_question_words`]): when it holds every word of the question that
/// no piece above it holds.
pub const NEW_WORDS_GAIN: f64 = 0.25;

/// For a question asking how something works ([`Piece::asks_how`]), whose
/// answer is several pieces each covering a part of it (gin's route
/// registration: the router group's `handle`, the engine's `addRoute`, the
/// radix tree's `addRoute`), the delivered ranking is taken again greedily:
/// each round takes the piece whose score, times `1 +` [`NEW_WORDS_GAIN`]
/// times the weighted share of the question's words it holds that no piece
/// taken before holds ([`Piece::terms_mask`]), is highest, and gives it that
/// score. A word weighs `ln(1 + n / (1 + pieces holding it))` over the `n`
/// packed pieces, so a word every piece holds adds little. Pieces below the
/// relevance floor stay after the others; scores are then scaled so the best
/// is 1 and made strict. Any other query keeps its order. Measured offline on
/// the delivered answers of the 646 questions: architecture 0.588 -> 0.596,
/// all 0.7209 -> 0.7229, in the dev set and outside it alike.
pub fn cover_question_words(packed: &mut Vec<ScoredFragment>) {
    if !packed.iter().any(|s| s.piece.asks_how) {
        return;
    }
    let n = packed.len() as f64;
    let weights: Vec<f64> = (0..64)
        .map(|bit| {
            let holding = packed.iter().filter(|s| s.piece.terms_mask >> bit & 1 == 1).count() as f64;
            if holding == 0.0 { 0.0 } else { (1.0 + n / (1.0 + holding)).ln() }
        })
        .collect();
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return;
    }
    let gain = |mut mask: u64| -> f64 {
        let mut sum = 0.0;
        while mask != 0 {
            sum += weights[mask.trailing_zeros() as usize];
            mask &= mask - 1;
        }
        1.0 + NEW_WORDS_GAIN * sum / total
    };
    let rest = std::mem::take(packed);
    let (above, below): (Vec<_>, Vec<_>) = rest.into_iter().partition(|s| !s.piece.below_floor);
    let mut covered = 0u64;
    for mut group in [above, below] {
        sort_scored(&mut group);
        while !group.is_empty() {
            let adjusted = |s: &ScoredFragment| s.score * gain(s.piece.terms_mask & !covered);
            let most = gain(!covered);
            let mut best = 0;
            let mut best_score = adjusted(&group[0]);
            for (i, s) in group.iter().enumerate().skip(1) {
                // Sorted best first: once a score at the most it could gain
                // is no higher than the best, no piece after it can win.
                if s.score * most <= best_score {
                    break;
                }
                let a = adjusted(s);
                if a > best_score {
                    best = i;
                    best_score = a;
                }
            }
            let mut s = group.remove(best);
            s.score = best_score;
            covered |= s.piece.terms_mask;
            packed.push(s);
        }
    }
    let scale = packed.first().map_or(1.0, |s| if s.score > 0.0 { 1.0 / s.score } else { 1.0 });
    make_strict(packed, scale);
}

/// A packed container whose member the query names outright, packed on its own
/// ([`agents_pack::names_member_of`]), ranks just below the best such member:
/// the member is the answer, the container (its outline, as the packer left
/// it) the context around it. Run before [`spread_over_files`], which orders
/// by the scores this leaves.
pub fn named_members_first(packed: &mut [ScoredFragment]) {
    let below: Vec<Option<f64>> = packed
        .iter()
        .map(|c| {
            packed
                .iter()
                .filter(|m| agents_pack::names_member_of(&m.piece, &c.piece))
                .map(|m| m.score * NAMED_MEMBER_GAP)
                .reduce(f64::max)
        })
        .collect();
    for (c, below) in packed.iter_mut().zip(below) {
        if let Some(below) = below {
            c.score = c.score.min(below);
        }
    }
}

/// What a container's score becomes, as a share of its named member's
/// ([`named_members_first`]): just below it.
const NAMED_MEMBER_GAP: f64 = 0.999;

/// Greedy rounds over `rest`, appending to `out`: pieces below the relevance
/// floor ([`Piece::below_floor`]) after every other; in each group, each round
/// takes the piece whose score times its `weight` (at most 1; given the lines
/// of its file's pieces already taken, in either group) is highest, ties by
/// URI, and gives it that score. Pieces without a file, and inline ones, weigh
/// 1 and count for no file.
fn take_by_weight(
    rest: Vec<ScoredFragment>,
    out: &mut Vec<ScoredFragment>,
    weight: impl Fn(&ScoredFragment, &[Option<(u32, u32)>]) -> f64,
) {
    let (above, below): (Vec<_>, Vec<_>) = rest.into_iter().partition(|s| !s.piece.below_floor);
    let mut taken: HashMap<String, Vec<Option<(u32, u32)>>> = HashMap::new();
    for mut group in [above, below] {
        sort_scored(&mut group);
        let adjusted = |s: &ScoredFragment, taken: &HashMap<String, Vec<Option<(u32, u32)>>>| {
            if s.piece.path.is_empty() || s.piece.inline {
                return s.score;
            }
            taken.get(&s.piece.path).map_or(s.score, |before| s.score * weight(s, before))
        };
        while !group.is_empty() {
            let mut best = 0;
            let mut best_score = adjusted(&group[0], &taken);
            for (i, s) in group.iter().enumerate().skip(1) {
                // `group` is sorted best first, ties by URI, and a weight is at
                // most 1: once a score is no higher than the best adjusted one,
                // no piece after it can win (the first of equals does).
                if s.score <= best_score {
                    break;
                }
                let a = adjusted(s, &taken);
                if a > best_score {
                    best = i;
                    best_score = a;
                }
            }
            let mut s = group.remove(best);
            s.score = best_score;
            if !s.piece.path.is_empty() && !s.piece.inline {
                taken.entry(s.piece.path.clone()).or_default().push(line_span(&s.piece.source_range));
            }
            out.push(s);
        }
    }
}

/// Scores times `scale`, kept to six places and each strictly lower than the
/// one before it (never below 0), so the order of the scores is the list's.
fn make_strict(out: &mut [ScoredFragment], scale: f64) {
    let mut previous = f64::INFINITY;
    for s in out {
        let score = ((s.score * scale * 1e6).round() / 1e6).min(previous - SCORE_STEP).max(0.0);
        s.score = (score * 1e6).round() / 1e6;
        previous = s.score;
    }
}

/// Reports which files depend on which, for reading order.
pub trait FileDependencies: Sync {
    /// `(from, to)` pairs among `paths`: `from` imports or calls into `to`.
    fn edges(&self, paths: &[String]) -> Vec<(String, String)>;
}

/// No dependency knowledge: files keep their score order.
pub struct NoDependencies;

impl FileDependencies for NoDependencies {
    fn edges(&self, _paths: &[String]) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// 8. Puts packed pieces in reading order.
pub trait FragmentOrderer: Send + Sync {
    fn order(&self, packed: Vec<ScoredFragment>, deps: &dyn FileDependencies) -> Vec<ScoredFragment>;
}

/// What both orderers start from: the skeleton in path and line order, the
/// inline notes by score, and the file pieces grouped by path.
type ForOrder = (Vec<ScoredFragment>, Vec<ScoredFragment>, BTreeMap<String, Vec<ScoredFragment>>);

fn split_for_order(packed: Vec<ScoredFragment>) -> ForOrder {
    let (mut skeleton, rest): (Vec<_>, Vec<_>) = packed.into_iter().partition(|s| s.piece.role == PieceRole::Skeleton);
    let (mut inline, files): (Vec<_>, Vec<_>) = rest.into_iter().partition(|s| s.piece.path.is_empty());
    sort_scored(&mut inline);
    skeleton.sort_by(|a, b| (&a.piece.path, a.piece.start_line).cmp(&(&b.piece.path, b.piece.start_line)));
    let mut groups: BTreeMap<String, Vec<ScoredFragment>> = BTreeMap::new();
    for s in files {
        groups.entry(s.piece.path.clone()).or_default().push(s);
    }
    (skeleton, inline, groups)
}

/// Skeleton first, then inline notes (decisions), then files: grouped, in
/// dependency order (a file before the files that depend on it; among files free
/// to go, the best-scored first; cycles broken by score), symbols in source order.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoherentOrderer;

impl FragmentOrderer for CoherentOrderer {
    fn order(&self, packed: Vec<ScoredFragment>, deps: &dyn FileDependencies) -> Vec<ScoredFragment> {
        let (skeleton, mut inline, mut groups) = split_for_order(packed);
        // Files by best score.
        let best = |g: &Vec<ScoredFragment>| g.iter().map(|s| s.score).fold(f64::MIN, f64::max);
        let mut paths: Vec<String> = groups.keys().cloned().collect();
        paths.sort_by(|a, b| best(&groups[b]).total_cmp(&best(&groups[a])).then_with(|| a.cmp(b)));
        let mut needs: HashMap<String, BTreeSet<String>> = HashMap::new();
        for (from, to) in deps.edges(&paths) {
            if from != to && groups.contains_key(&from) && groups.contains_key(&to) {
                needs.entry(from).or_default().insert(to);
            }
        }
        let mut done: HashSet<String> = HashSet::new();
        let mut order = Vec::with_capacity(paths.len());
        while order.len() < paths.len() {
            let ready = paths
                .iter()
                .find(|p| !done.contains(*p) && needs.get(*p).is_none_or(|n| n.iter().all(|d| done.contains(d))));
            // A cycle: take the best-scored file left.
            let next = ready.or_else(|| paths.iter().find(|p| !done.contains(*p))).cloned();
            let Some(next) = next else { break };
            done.insert(next.clone());
            order.push(next);
        }
        let mut out = skeleton;
        out.append(&mut inline);
        for path in order {
            let mut group = groups.remove(&path).unwrap_or_default();
            group.sort_by(|a, b| (a.piece.start_line, &a.piece.uko_node).cmp(&(b.piece.start_line, &b.piece.uko_node)));
            out.extend(group);
        }
        out
    }
}

/// The `default` orderer, in the order of the ranking strategy (the pipeline
/// hands it the packed pieces ranked): skeleton first, then inline notes
/// (decisions) in ranked order, then files in the order of their best-ranked
/// piece; within a file that piece first, the rest in source order. With the
/// `relevance` ranking the first file is the one the best piece comes from and
/// files follow `ranked_files`; with `recency` the newest file comes first, with
/// `tiered` the hot ones. An agent that reads only the top gets the best evidence.
/// (The spec's dependency order is the `dependency` orderer, [`CoherentOrderer`].)
#[derive(Clone, Copy, Debug, Default)]
pub struct RelevanceOrderer;

impl FragmentOrderer for RelevanceOrderer {
    fn order(&self, packed: Vec<ScoredFragment>, _deps: &dyn FileDependencies) -> Vec<ScoredFragment> {
        let (mut skeleton, rest): (Vec<_>, Vec<_>) =
            packed.into_iter().partition(|s| s.piece.role == PieceRole::Skeleton);
        skeleton.sort_by(|a, b| (&a.piece.path, a.piece.start_line).cmp(&(&b.piece.path, b.piece.start_line)));
        let (mut inline, files): (Vec<_>, Vec<_>) = rest.into_iter().partition(|s| s.piece.path.is_empty());
        let mut groups: Vec<(String, Vec<ScoredFragment>)> = Vec::new();
        for s in files {
            match groups.iter_mut().find(|(path, _)| *path == s.piece.path) {
                Some((_, group)) => group.push(s),
                None => groups.push((s.piece.path.clone(), vec![s])),
            }
        }
        for (_, group) in &mut groups {
            group[1..]
                .sort_by(|a, b| (a.piece.start_line, &a.piece.uko_node).cmp(&(b.piece.start_line, &b.piece.uko_node)));
        }
        let mut out = skeleton;
        out.append(&mut inline);
        out.extend(groups.into_iter().flat_map(|(_, group)| group));
        out
    }
}

// ---------------------------------------------------------------- phase 3

/// What the preamble summarises.
pub struct PreambleInput<'a> {
    pub query: &'a str,
    pub fragments: &'a [ScoredFragment],
    pub strategies_used: &'a [String],
    /// Tokens the fragments use, and the budget they were packed into.
    pub budget_used: usize,
    pub budget: usize,
    /// Most tokens the preamble may take.
    pub max_tokens: usize,
}

/// 9. Writes the provenance and structure summary placed before the fragments.
pub trait PreambleGenerator: Send + Sync {
    fn generate(&self, input: &PreambleInput<'_>, tokenizer: &dyn TokenCounter) -> Option<String>;
}

/// "Context for ...; strategies; budget; files covered", cut to `max_tokens`
/// (whole lines dropped from the file list first).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProvenancePreamble;

impl PreambleGenerator for ProvenancePreamble {
    fn generate(&self, input: &PreambleInput<'_>, tokenizer: &dyn TokenCounter) -> Option<String> {
        if input.fragments.is_empty() || input.max_tokens == 0 {
            return None;
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let mut files: Vec<&str> = Vec::new();
        for s in input.fragments {
            *counts.entry(s.piece.strategy()).or_default() += 1;
            if !s.piece.path.is_empty() && !files.contains(&s.piece.path.as_str()) {
                files.push(&s.piece.path);
            }
        }
        let strategies: Vec<String> = input
            .strategies_used
            .iter()
            .map(|s| format!("{s} ({})", counts.get(s.as_str()).copied().unwrap_or(0)))
            .collect();
        let percent = if input.budget == 0 { 0.0 } else { 100.0 * input.budget_used as f64 / input.budget as f64 };
        let mut head = String::new();
        if !input.query.is_empty() {
            head.push_str(&format!("> Context for: {}\n", input.query.lines().next().unwrap_or("")));
        }
        head.push_str(&format!(
            "> {} fragments from {} files; strategies: {}; {} of {} tokens ({percent:.0}%).\n",
            input.fragments.len(),
            files.len(),
            if strategies.is_empty() { "none".to_owned() } else { strategies.join(", ") },
            input.budget_used,
            input.budget,
        ));
        let mut text = head.clone();
        let mut listed = 0;
        for (i, file) in files.iter().enumerate() {
            let line = if i == 0 { format!("> Files: {file}") } else { format!(", {file}") };
            let candidate = format!("{text}{line}");
            if tokenizer.count(&candidate) + 8 > input.max_tokens {
                break;
            }
            text = candidate;
            listed += 1;
        }
        if listed > 0 {
            if listed < files.len() {
                text.push_str(&format!(" (+{} more)", files.len() - listed));
            }
            text.push('\n');
        }
        text.push('\n');
        if tokenizer.count(&text) > input.max_tokens {
            // Even the head is too long (a long query): keep the counts line only.
            let short = format!("> {} fragments from {} files.\n\n", input.fragments.len(), files.len());
            return (tokenizer.count(&short) <= input.max_tokens).then_some(short);
        }
        Some(text)
    }
}

/// 10. Compresses a parent plan's context into a skeleton for a child plan.
pub trait SkeletonCompressor: Send + Sync {
    fn compress(
        &self,
        parent: &[Piece],
        budget: usize,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> Vec<Piece>;
}

/// The parent's fragments, best first, at signature depth (4) or shallower
/// (2, then 0) until the skeleton budget is spent.
#[derive(Clone, Copy, Debug, Default)]
pub struct SignatureSkeleton;

impl SkeletonCompressor for SignatureSkeleton {
    fn compress(
        &self,
        parent: &[Piece],
        budget: usize,
        renderer: &dyn DepthRenderer,
        tokenizer: &dyn TokenCounter,
    ) -> Vec<Piece> {
        let mut used = 0;
        let mut out = Vec::new();
        let mut ordered: Vec<&Piece> = parent.iter().collect();
        ordered.sort_by(|a, b| b.relevance.total_cmp(&a.relevance).then_with(|| a.uko_node.cmp(&b.uko_node)));
        for piece in ordered {
            let remaining = budget.saturating_sub(used);
            if remaining < MIN_FRAGMENT_TOKENS {
                break;
            }
            for depth in [4u8, 2, 0] {
                let depth = depth.min(piece.depth);
                let Some(content) = renderer.render(piece, depth) else { continue };
                let mut p = Piece {
                    depth,
                    content,
                    role: PieceRole::Skeleton,
                    tier: ContextTier::Warm,
                    note: Some("from the parent plan".to_owned()),
                    ..piece.clone()
                };
                p.measure(tokenizer);
                if p.tokens >= MIN_FRAGMENT_TOKENS && p.tokens <= remaining {
                    used += p.tokens;
                    out.push(p);
                    break;
                }
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "executor_tests.rs"]
mod executor_tests;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use agents_core::tokens::{Encoding, Tokenizer};

    fn tok() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase)
    }

    pub(crate) fn piece(uri: &str, path: &str, relevance: f64, content: &str) -> Piece {
        let mut p = Piece {
            source_range: "1:0-2:0".to_owned(),
            start_line: 1,
            relevance,
            quality: 0.5,
            strategies: vec!["s".to_owned()],
            inline: true,
            ..Piece::new(uri, "function", path, content, 9)
        };
        p.measure(&tok());
        p
    }

    fn scored(pieces: Vec<Piece>) -> Vec<ScoredFragment> {
        WeightedScorer.score(pieces, None, &ScorerWeights::default())
    }

    fn long_text(seed: &str, lines: usize) -> String {
        (0..lines).map(|i| format!("{seed} line {i} with some words to count\n")).collect()
    }

    /// A retrieved (not inline) piece of `path` at lines `start`..`start + 2`.
    fn code_piece(uri: &str, path: &str, relevance: f64, start: u32) -> Piece {
        let mut p = Piece {
            source_range: format!("{start}:0-{}:0", start + 2),
            start_line: start,
            relevance,
            quality: 0.5,
            strategies: vec!["s".to_owned()],
            ..Piece::new(uri, "function", path, format!("def {}(): pass", uri.rsplit('#').next().unwrap()), 9)
        };
        p.measure(&tok());
        p
    }

    /// Each piece's boost for `query`, as the pipeline gives it.
    fn boost_for(query: &str, pieces: &mut [Piece]) {
        for p in pieces {
            p.boost = chunk_boost(
                &p.path,
                crate::retrieval::name_match(query, &p.uko_node),
                crate::retrieval::RolesAsked::of(query),
            );
        }
    }

    fn order(out: &[ScoredFragment]) -> Vec<&str> {
        out.iter().map(|s| s.piece.uko_node.rsplit('#').next().unwrap()).collect()
    }

    #[test]
    fn a_file_stands_by_its_share_of_the_best_evidence_unless_the_question_asks_how() {
        // The best file stands at 1 either way.
        assert_eq!(fused_standing(0, 1.0, false), 1.0);
        assert_eq!(fused_standing(0, 1.0, true), 1.0);
        // A second file nearly as well supported stands nearly as high; one
        // with half the evidence, at a quarter.
        assert!((fused_standing(1, 0.95, false) - 0.9025).abs() < 1e-12);
        assert!((fused_standing(1, 0.5, false) - 0.25).abs() < 1e-12);
        assert!(fused_standing(1, 0.95, false) > fused_standing(1, 0.5, false));
        // A how-question's files stand by their place: 1, 0.75, 0.6, 0.5.
        assert!((fused_standing(1, 0.5, true) - 0.75).abs() < 1e-12);
        assert!((fused_standing(3, 0.1, true) - 0.5).abs() < 1e-12);
        // A share outside [0, 1] is clamped.
        assert_eq!(fused_standing(2, 1.5, false), 1.0);
        assert_eq!(fused_standing(2, -0.5, false), 0.0);
    }

    #[test]
    fn a_test_file_ranks_below_source_with_the_same_evidence() {
        let mut pieces = vec![
            code_piece("uko://r/tests/test_a.py#test_f", "tests/test_a.py", 0.8, 1),
            code_piece("uko://r/docs/a.md#F", "docs/a.md", 0.8, 1),
            code_piece("uko://r/src/a.py#f", "src/a.py", 0.8, 1),
        ];
        boost_for("", &mut pieces);
        let out = scored(pieces);
        assert_eq!(order(&out), ["f", "test_f", "F"]);
        assert!(out[1].score <= out[0].score * 0.4 + 1e-9, "{out:?}");
    }

    #[test]
    fn a_test_module_in_a_source_file_ranks_as_a_test() {
        let source = Piece { file_standing: 1.0, ..code_piece("uko://r/src/a.rs#path_params", "src/a.rs", 0.8, 1) };
        let in_tests = Piece {
            file_standing: 1.0,
            ..code_piece("uko://r/src/a.rs#tests.extracts_path_params", "src/a.rs", 0.8, 1)
        };
        let test_file =
            Piece { file_standing: 1.0, ..code_piece("uko://r/tests/a.rs#extracts_path_params", "tests/a.rs", 0.8, 1) };
        assert!(ranker_logit(&in_tests, 0) < ranker_logit(&source, 0) - 1.0);
        assert_eq!(ranker_logit(&in_tests, 0), ranker_logit(&test_file, 0));
        // A test case is one wherever it is; a method named `test` is not.
        let case = Piece { kind: "test".to_owned(), ..source.clone() };
        assert!(ranker_logit(&case, 0) < ranker_logit(&source, 0) - 1.0);
        let method = Piece { file_standing: 1.0, ..code_piece("uko://r/src/re.js#Regex.test", "src/re.js", 0.8, 1) };
        assert_eq!(ranker_logit(&method, 0), ranker_logit(&source, 0));
    }

    #[test]
    fn an_example_the_query_asks_for_ranks_as_source() {
        let source = Piece { file_standing: 1.0, ..code_piece("uko://r/src/a.py#f", "src/a.py", 0.8, 1) };
        let mut example =
            Piece { file_standing: 1.0, ..code_piece("uko://r/examples/a.py#f", "examples/a.py", 0.8, 1) };
        assert!(ranker_logit(&example, 0) < ranker_logit(&source, 0) - 1.0);
        example.role_asked = true;
        assert_eq!(ranker_logit(&example, 0), ranker_logit(&source, 0));
        let roles = crate::retrieval::RolesAsked::of("how does the websocket example send frames");
        assert_eq!(chunk_boost(&example.path, 0.0, roles), chunk_boost(&source.path, 0.0, roles));
        let unasked = chunk_boost(&example.path, 0.0, crate::retrieval::RolesAsked::NONE);
        assert!(unasked < chunk_boost(&source.path, 0.0, roles));
    }

    #[test]
    fn a_node_the_query_names_outright_keeps_no_role_penalty() {
        let source =
            Piece { file_standing: 1.0, name_match: 1.0, ..code_piece("uko://r/src/a.py#F.g", "src/a.py", 0.8, 1) };
        let mut helper = Piece {
            file_standing: 1.0,
            name_match: 0.5,
            ..code_piece("uko://r/pkg/fixtures/http.py#F.g", "pkg/fixtures/http.py", 0.8, 1)
        };
        assert!(ranker_logit(&helper, 0) < ranker_logit(&source, 0) - 1.0);
        helper.name_match = 1.0;
        assert_eq!(ranker_logit(&helper, 0), ranker_logit(&source, 0));
        // A test case, or any piece of a file named as a test, keeps it.
        let mut case = Piece { kind: "test".into(), ..helper.clone() };
        assert!(ranker_logit(&case, 0) < ranker_logit(&source, 0) - 1.0);
        case = Piece { kind: "function".into(), path: "pkg/fixtures/test_http.py".into(), ..case };
        assert!(ranker_logit(&case, 0) < ranker_logit(&source, 0) - 1.0);
    }

    #[test]
    fn a_definition_the_query_names_is_boosted() {
        let query = "where is Session.merge_settings defined";
        let mut pieces = vec![
            code_piece("uko://r/src/a.py#Session.merge_settings", "src/a.py", 0.5, 10),
            code_piece("uko://r/src/b.py#Session.close", "src/b.py", 0.8, 10),
        ];
        boost_for(query, &mut pieces);
        assert_eq!(order(&scored(pieces)), ["Session.merge_settings", "Session.close"]);
    }

    #[test]
    fn a_short_function_weighs_less_than_a_long_one() {
        let mut short = code_piece("uko://r/a.py#wrap", "a.py", 0.8, 10);
        short.source_range = "10:0-12:0".to_owned();
        let mut long = code_piece("uko://r/a.py#work", "a.py", 0.8, 20);
        long.source_range = "20:0-60:0".to_owned();
        assert!(size_prior(&short) < 0.7 && size_prior(&long) > 0.95, "{} {}", size_prior(&short), size_prior(&long));
        let mut class = long.clone();
        class.kind = "class".to_owned();
        assert_eq!(size_prior(&class), 1.0);
        for p in [&mut short, &mut long] {
            p.boost = size_prior(p);
        }
        assert_eq!(order(&scored(vec![short, long])), ["work", "wrap"]);
    }

    #[test]
    fn further_pieces_of_one_file_give_way_to_other_files() {
        let pieces = vec![
            code_piece("uko://r/a.py#a1", "a.py", 0.90, 1),
            code_piece("uko://r/a.py#a2", "a.py", 0.88, 10),
            code_piece("uko://r/a.py#a3", "a.py", 0.86, 20),
            code_piece("uko://r/b.py#b1", "b.py", 0.92, 1),
        ];
        // Without diversity a2 and a3 would come before b1.
        assert_eq!(order(&scored(pieces)), ["a1", "b1", "a2", "a3"]);
        // A piece whose lines overlap one placed higher (a class after its
        // method) weighs half.
        let mut class = code_piece("uko://r/c.py#C", "c.py", 0.95, 1);
        class.source_range = "1:0-40:0".to_owned();
        let method = code_piece("uko://r/c.py#C.m", "c.py", 1.0, 5);
        let other = code_piece("uko://r/d.py#g", "d.py", 0.6, 1);
        assert_eq!(order(&scored(vec![class, method, other])), ["C.m", "g", "C"]);
    }

    #[test]
    fn pieces_of_ranked_files_score_the_rankers_calibrated_chance() {
        let standing = |mut p: Piece, standing: f64| {
            p.file_standing = standing;
            p
        };
        // a.py leads the file ranking; b.py is fourth (standing 3 / 6). With
        // equal evidence the better file's piece leads, and a strong second
        // piece of a.py comes before b.py's best: the learned weight of a
        // further piece of a file is small.
        let pieces = vec![
            standing(code_piece("uko://r/a.py#a1", "a.py", 0.8, 1), 1.0),
            standing(code_piece("uko://r/a.py#a2", "a.py", 0.7, 10), 1.0),
            standing(code_piece("uko://r/b.py#b1", "b.py", 0.8, 1), 0.5),
        ];
        let out = scored(pieces);
        assert_eq!(order(&out), ["a1", "a2", "b1"]);
        assert_eq!(out[0].score, 1.0);
        // The scores are the model's probabilities as shares of the best.
        let p = |logit: f64| 1.0 / (1.0 + (-logit).exp());
        let a1 = p(ranker_logit(&out[0].piece, 0));
        let b1 = p(ranker_logit(&out[2].piece, 0));
        assert!((out[2].score - (b1 / a1 * 1e6).round() / 1e6).abs() < 2e-6, "{out:?}");
        // A test's piece ranks below source with the same evidence and standing,
        // and a named definition above an unnamed one.
        let mut named = standing(code_piece("uko://r/src/s.py#Session.merge_settings", "src/s.py", 0.5, 1), 1.0);
        named.name_match = 1.0;
        let pieces = vec![
            standing(code_piece("uko://r/tests/test_s.py#test_merge", "tests/test_s.py", 0.9, 1), 1.0),
            standing(code_piece("uko://r/src/s.py#close", "src/s.py", 0.6, 20), 1.0),
            named,
        ];
        assert_eq!(order(&scored(pieces)), ["Session.merge_settings", "close", "test_merge"]);
    }

    #[test]
    fn the_delivered_ranking_spreads_packed_pieces_over_files() {
        let with = |uri: &str, path: &str, score: f64, below_floor: bool| {
            let mut piece = code_piece(uri, path, 0.5, 1);
            piece.file_standing = 1.0;
            piece.below_floor = below_floor;
            ScoredFragment { piece, score, parts: ScoreParts::default() }
        };
        let mut packed = vec![
            with("uko://r/a.py#a1", "a.py", 1.0, false),
            with("uko://r/a.py#a2", "a.py", 0.95, false),
            with("uko://r/a.py#a3", "a.py", 0.9, false),
            with("uko://r/b.py#b1", "b.py", 0.88, false),
            with("uko://r/b.py#b2", "b.py", 0.5, false),
            with("uko://r/c.py#c1", "c.py", 0.2, true),
        ];
        spread_over_files(&mut packed);
        // a2 (0.95 x 0.9 = 0.855) gives way to b.py's best (0.88); a3 weighs
        // 0.9 x 0.81 = 0.729; b2 0.5 x 0.9 = 0.45. A piece below the
        // relevance floor stays last, whatever the decay did to the others.
        assert_eq!(order(&packed), ["a1", "b1", "a2", "a3", "b2", "c1"]);
        let scores: Vec<f64> = packed.iter().map(|s| s.score).collect();
        assert_eq!(scores, [1.0, 0.88, 0.855, 0.729, 0.45, 0.2]);
        // Each file's best piece keeps its score, so files keep their order.
        let mut alone = vec![with("uko://r/a.py#a1", "a.py", 1.0, false), with("uko://r/b.py#b1", "b.py", 0.7, false)];
        spread_over_files(&mut alone);
        assert_eq!(alone.iter().map(|s| s.score).collect::<Vec<_>>(), [1.0, 0.7]);
        // Equal scores stay strict, decided by the URI.
        let mut equal = vec![with("uko://r/b.py#x", "b.py", 0.5, false), with("uko://r/a.py#x", "a.py", 0.5, false)];
        spread_over_files(&mut equal);
        assert_eq!(equal[0].piece.uko_node, "uko://r/a.py#x");
        assert!(equal[0].score > equal[1].score);
    }

    #[test]
    fn a_how_question_ranks_next_the_piece_holding_words_no_piece_above_holds() {
        let with = |uri: &str, score: f64, mask: u64, asks_how: bool| {
            let mut piece = code_piece(uri, "a.py", 0.5, 1);
            piece.terms_mask = mask;
            piece.asks_how = asks_how;
            ScoredFragment { piece, score, parts: ScoreParts::default() }
        };
        // Words 0-2: `route` (every piece holds it), `group`, `tree`.
        let packed = |asks_how| {
            vec![
                with("uko://r/a.py#group", 1.0, 0b011, asks_how),
                with("uko://r/a.py#any", 0.95, 0b011, asks_how),
                with("uko://r/a.py#tree", 0.9, 0b101, asks_how),
                with("uko://r/a.py#other", 0.5, 0b001, asks_how),
            ]
        };
        let mut how = packed(true);
        cover_question_words(&mut how);
        // Weights over four pieces: route ln(1 + 4/5), group and tree
        // ln(1 + 4/3) each. `tree` gains 0.25 x 0.37 of its score, `any`
        // nothing: `group` above it holds its words.
        assert_eq!(order(&how), ["group", "tree", "any", "other"]);
        let scores: Vec<f64> = how.iter().map(|s| s.score).collect();
        assert_eq!(scores[0], 1.0);
        assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
        // Any other query keeps its order and scores.
        let mut other = packed(false);
        cover_question_words(&mut other);
        assert_eq!(order(&other), ["group", "any", "tree", "other"]);
        assert_eq!(other.iter().map(|s| s.score).collect::<Vec<_>>(), [1.0, 0.95, 0.9, 0.5]);
    }

    #[test]
    fn a_container_ranks_just_below_the_member_the_query_names() {
        let with = |uri: &str, range: &str, score: f64, name_match: f64| {
            let mut piece = code_piece(uri, "a.py", 0.5, 1);
            piece.source_range = range.to_owned();
            piece.name_match = name_match;
            piece.file_standing = 1.0;
            ScoredFragment { piece, score, parts: ScoreParts::default() }
        };
        let mut packed = vec![
            with("uko://r/a.py#Choice", "1:0-90:0", 1.0, 0.3),
            with("uko://r/a.py#Other", "100:0-120:0", 0.8, 0.0),
            with("uko://r/a.py#Choice.convert", "40:4-60:0", 0.6, 1.0),
            with("uko://r/a.py#Choice.fail", "61:4-70:0", 0.7, 0.0),
        ];
        named_members_first(&mut packed);
        let scores: Vec<f64> = packed.iter().map(|s| s.score).collect();
        // The class takes 0.999 of its named member's score; the member that
        // the query does not name leaves it alone, and so do the others.
        assert_eq!(scores, [0.6 * 0.999, 0.8, 0.6, 0.7]);
        spread_over_files(&mut packed);
        assert_eq!(order(&packed), ["Other", "Choice.fail", "Choice.convert", "Choice"]);
    }

    #[test]
    fn a_piece_whose_text_meets_more_of_the_question_ranks_higher() {
        // Two functions of two equally ranked files with the same evidence: the
        // one whose text holds four of the query's words leads the one holding one.
        let with_terms = |mut p: Piece, met: u32, of: u32| {
            p.file_standing = 1.0;
            p.terms_met = met;
            p.query_words = of;
            p
        };
        let pieces = vec![
            with_terms(code_piece("uko://r/a.py#thin", "a.py", 0.8, 1), 1, 5),
            with_terms(code_piece("uko://r/b.py#full", "b.py", 0.8, 1), 4, 5),
        ];
        assert_eq!(order(&scored(pieces)), ["full", "thin"]);
    }

    #[test]
    fn each_passage_share_puts_the_piece_holding_more_of_the_question_first() {
        // Two functions alike in every other way (four of five words met,
        // the same evidence): the one whose node holds the words in one
        // passage, whose file does, or whose caller holds the rest, leads.
        type SetShare = fn(&mut Piece, u32);
        let shares: [(&str, SetShare); 3] = [
            ("its own passage", |p, n| p.terms_near = n),
            ("its file's passage", |p, n| p.file_terms_near = n),
            ("its caller", |p, n| p.caller_terms = n),
        ];
        for (share, set) in shares {
            let with = |mut p: Piece, n: u32| {
                p.file_standing = 1.0;
                p.terms_met = 4;
                p.query_words = 5;
                set(&mut p, n);
                p
            };
            let pieces = vec![
                with(code_piece("uko://r/a.py#less", "a.py", 0.8, 1), 1),
                with(code_piece("uko://r/b.py#more", "b.py", 0.8, 1), 4),
            ];
            assert_eq!(order(&scored(pieces)), ["more", "less"], "{share}");
        }
    }

    /// Answers [`DepthRenderer::called_names`] from a table.
    struct Calls(HashMap<&'static str, Vec<&'static str>>);

    impl DepthRenderer for Calls {
        fn render(&self, piece: &Piece, _depth: u8) -> Option<String> {
            Some(piece.content.clone())
        }

        fn called_names(&self, uri: &str) -> Vec<String> {
            self.0.get(uri).map(|names| names.iter().map(|n| (*n).to_owned()).collect()).unwrap_or_default()
        }
    }

    #[test]
    fn a_helper_takes_the_question_s_words_its_caller_adds() {
        // "how does registering a route on a group end up in the tree":
        // the group's `handle` speaks of routes and groups, the tree's
        // `addRoute~2` (a second definition of the name) of routes and trees.
        let calls = Calls(HashMap::from([
            ("uko://r/group.go#Group.handle", vec!["addRoute", "combine"]),
            ("uko://r/tree.go#node.addRoute~2", vec!["insertChild"]),
            ("uko://r/main.go#main", vec!["handle"]),
        ]));
        let mut pieces = vec![
            code_piece("uko://r/group.go#Group.handle", "group.go", 0.8, 1),
            code_piece("uko://r/tree.go#node.addRoute~2", "tree.go", 0.5, 1),
            code_piece("uko://r/main.go#main", "main.go", 0.5, 1),
            code_piece("uko://r/tree.go#node.insertChild", "tree.go", 0.5, 1),
            code_piece("uko://r/gin.go#Engine.addRoute", "gin.go", 0.5, 1),
        ];
        // Words: register, route, group, tree.
        let words = BTreeMap::from([
            (0, vec![false, true, true, false]),
            (1, vec![false, true, false, true]),
            (2, vec![false, false, false, false]),
            (4, vec![false, true, false, false]),
        ]);
        link_calls(&mut pieces, &words, &calls, false);
        let added: Vec<u32> = pieces.iter().map(|p| p.caller_terms).collect();
        // `handle` adds "group" to each `addRoute` (the tree's and the
        // engine's: the call is matched by name); `main` adds nothing to
        // `handle`; a piece without its words counted (not a function of
        // the question) takes none, and a caller nobody calls takes none.
        assert_eq!(added, [0, 1, 0, 0, 1]);
        // Callees are counted for a how-question only, by name: `handle`
        // calls `addRoute` (two pieces bear it; `combine` is no piece),
        // `main` calls `handle`, and `insertChild` is no function of the
        // question.
        assert!(pieces.iter().all(|p| p.callees == 0));
        link_calls(&mut pieces, &words, &calls, true);
        let callees: Vec<u32> = pieces.iter().map(|p| p.callees).collect();
        assert_eq!(callees, [1, 0, 1, 0, 0]);
    }

    #[test]
    fn a_look_up_reads_on_into_what_the_named_function_calls() {
        // "Opts::search_paths": the method named calls `normalize` (a piece)
        // and `push` (none); `other` calls `helper`, but it is not named.
        let calls = Calls(HashMap::from([
            ("uko://r/cli.rs#Opts.search_paths", vec!["normalize", "push"]),
            ("uko://r/cli.rs#other", vec!["helper"]),
        ]));
        let with = |mut p: Piece, name_match: f64| {
            p.file_standing = 1.0;
            p.name_match = name_match;
            p
        };
        let mut pieces = vec![
            with(code_piece("uko://r/cli.rs#Opts.search_paths", "cli.rs", 0.9, 1), 1.0),
            with(code_piece("uko://r/cli.rs#other", "cli.rs", 0.6, 10), 0.0),
            with(code_piece("uko://r/path.rs#normalize~2", "path.rs", 0.6, 1), 0.0),
            with(code_piece("uko://r/util.rs#helper", "util.rs", 0.7, 1), 0.0),
        ];
        link_named_callees(&mut pieces, &calls);
        let called: Vec<bool> = pieces.iter().map(|p| p.called_by_named).collect();
        assert_eq!(called, [false, false, true, false]);
        // The callee of the named method ranks above a helper with a little
        // more evidence.
        let ranked = scored(pieces);
        let order = order(&ranked);
        let at = |name: &str| order.iter().position(|n| *n == name).unwrap();
        assert_eq!(at("Opts.search_paths"), 0);
        assert!(at("normalize~2") < at("helper"), "{order:?}");
    }

    #[test]
    fn a_function_calling_more_of_the_answer_leads_a_how_question() {
        // Alike in every other way: the one tying three of the answer's
        // functions together comes first.
        let with = |mut p: Piece, callees: u32| {
            p.file_standing = 1.0;
            p.terms_met = 3;
            p.query_words = 5;
            p.callees = callees;
            p
        };
        let pieces = vec![
            with(code_piece("uko://r/a.py#leaf", "a.py", 0.8, 1), 0),
            with(code_piece("uko://r/b.py#spine", "b.py", 0.8, 1), 3),
        ];
        assert_eq!(order(&scored(pieces)), ["spine", "leaf"]);
    }

    #[test]
    fn a_how_question_weighs_the_files_standing_less() {
        // A piece of the best file loses nothing; one further down loses
        // less for a question asking how something works than for any other.
        let logit = |standing: f64, asks_how: bool| {
            let mut p = code_piece("uko://r/a.py#f", "a.py", 0.8, 1);
            p.file_standing = standing;
            p.asks_how = asks_how;
            ranker_logit(&p, 0)
        };
        assert_eq!(logit(1.0, true), logit(1.0, false));
        let (how, other) = (logit(1.0, true) - logit(0.5, true), logit(1.0, false) - logit(0.5, false));
        assert!(how > 0.0 && how < other, "{how} {other}");
        assert!((other - how - (ranker::LN_STANDING - ranker::LN_STANDING_HOW) * 2f64.ln()).abs() < 1e-9);
    }

    #[test]
    fn scores_are_strict_and_the_best_is_one() {
        let pieces: Vec<Piece> =
            (0..12).map(|i| code_piece(&format!("uko://r/f{i}.py#same"), &format!("f{i}.py"), 0.5, 1)).collect();
        let out = scored(pieces);
        assert_eq!(out[0].score, 1.0);
        assert!(
            out.windows(2).all(|w| w[0].score > w[1].score),
            "{:?}",
            out.iter().map(|s| s.score).collect::<Vec<_>>()
        );
        // Equal evidence falls to the URI, the same way every time.
        assert_eq!(out[0].piece.uko_node, "uko://r/f0.py#same");
    }

    /// Renders a piece from its full text, cut as [`InlineRenderer`] cuts.
    struct FullText(HashMap<String, String>);

    impl DepthRenderer for FullText {
        fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
            Some(agents_pack::InlineRenderer::cut(self.0.get(&piece.uko_node)?, depth))
        }
    }

    #[test]
    fn the_deepen_pass_spends_what_packing_left() {
        let full = long_text("body", 60);
        let renderer = FullText(HashMap::from([("uko://r/a.py#f".to_owned(), full.clone())]));
        let mut p = code_piece("uko://r/a.py#f", "a.py", 0.9, 1);
        p.content = agents_pack::InlineRenderer::cut(&full, 4);
        p.depth = 4;
        p.requested_depth = 9;
        p.measure(&tok());
        let whole = at_depth(&p, 9, &renderer, &tok()).unwrap().tokens;
        // Room for the whole text: it comes whole.
        let out = GreedyPacker.pack(scored(vec![p.clone()]), whole + 5, &[], &renderer, &tok());
        assert_eq!((out.packed[0].piece.depth, out.tokens), (9, whole));
        // Room for less: it stays as packed, and the budget holds.
        let out = GreedyPacker.pack(scored(vec![p.clone()]), whole - 1, &[], &renderer, &tok());
        assert_eq!(out.packed[0].piece.depth, 4);
        assert!(out.tokens < whole);
        // Never deeper than asked.
        let mut shallow = p;
        shallow.requested_depth = 4;
        let out = GreedyPacker.pack(scored(vec![shallow]), whole + 5, &[], &renderer, &tok());
        assert_eq!(out.packed[0].piece.depth, 4);
    }

    #[test]
    fn whole_text_is_rendered_first_only_when_it_could_fit_a_share() {
        let budget = 7_800;
        // A leader may take a quarter of the budget: 1,950 tokens, at most 16 bytes each.
        assert_eq!(first_depth(9, Some(1_950 * MAX_BYTES_PER_TOKEN), budget, true), 9);
        assert_eq!(first_depth(9, Some(1_950 * MAX_BYTES_PER_TOKEN + 1), budget, true), 4);
        // Any other piece a twelfth.
        assert_eq!(first_depth(9, Some(650 * MAX_BYTES_PER_TOKEN), budget, false), 9);
        assert_eq!(first_depth(9, Some(650 * MAX_BYTES_PER_TOKEN + 1), budget, false), 4);
        // Shallower requests, and nodes of unknown size, are rendered as asked.
        assert_eq!(first_depth(4, Some(usize::MAX), budget, false), 4);
        assert_eq!(first_depth(9, None, budget, false), 9);
        // The resolver would have fallen back to the same depth: a text that
        // long never fits the share.
        let text = long_text("x", 2_000);
        let p = piece("u", "a.py", 0.1, &text);
        assert!(text.len() > 650 * MAX_BYTES_PER_TOKEN && p.tokens > budget / 12);
    }

    #[test]
    fn allocator_splits_by_confidence_times_quality() {
        assert!(ProportionalAllocator.allocate(&[], 1000).is_empty());
        let selections = [
            Selection { strategy: "a".into(), confidence: 1.0, quality: 0.9 },
            Selection { strategy: "b".into(), confidence: 0.5, quality: 0.6 },
        ];
        let shares = ProportionalAllocator.allocate(&selections, 1000);
        assert_eq!(shares.iter().map(|a| a.tokens).sum::<usize>(), 1000);
        assert_eq!(shares[1].tokens, 250);
        let zero = [Selection { strategy: "z".into(), confidence: 0.0, quality: 0.0 }];
        assert_eq!(ProportionalAllocator.allocate(&zero, 10)[0].tokens, 10);
    }

    #[test]
    fn breaker_opens_after_consecutive_failures_and_closes_on_success() {
        let breaker = CircuitBreaker::default();
        for _ in 0..3 {
            assert!(!breaker.is_open("s", 3));
            breaker.record("s", false);
        }
        assert!(breaker.is_open("s", 3));
        breaker.record("s", true);
        assert!(!breaker.is_open("s", 3));
    }

    #[test]
    fn dedup_merges_identity_content_and_near_duplicates() {
        assert!(DefaultDeduplicator.dedup(Vec::new()).is_empty());
        let text = long_text("alpha", 20);
        let mut near = text.clone();
        near.push_str("one more line\n");
        let mut a2 = piece("u:a", "a.py", 0.9, "short");
        a2.strategies = vec!["t".into()];
        let out = DefaultDeduplicator.dedup(vec![
            piece("u:a", "a.py", 0.4, &text),
            a2,
            piece("u:b", "b.py", 0.3, &text),
            piece("u:c", "c.py", 0.2, &near),
            piece("u:d", "d.py", 0.1, "different"),
        ]);
        let uris: Vec<&str> = out.iter().map(|p| p.uko_node.as_str()).collect();
        assert_eq!(uris, ["u:a", "u:d"]);
        assert_eq!(out[0].relevance, 0.9);
        assert_eq!(out[0].strategies, ["s", "t"]);
        assert_eq!(out[0].content, text, "the deeper rendering is kept");
    }

    #[test]
    fn of_two_copies_dedup_keeps_the_one_whose_file_stands_higher() {
        // A helper pasted into two files: the evidence ranks `cJSON.c` first,
        // so its copy stays even though the other came first; order is kept.
        let text = long_text("compare_double", 20);
        let mut copy = piece("u:utils#compare_double", "cJSON_Utils.c", 0.37, &text);
        copy.file_standing = 0.75;
        let mut other = piece("u:utils#apply_patch", "cJSON_Utils.c", 0.3, "different");
        other.file_standing = 0.75;
        let mut original = piece("u:core#compare_double", "cJSON.c", 0.33, &text);
        original.file_standing = 1.0;
        let out = DefaultDeduplicator.dedup(vec![copy, other, original]);
        let uris: Vec<&str> = out.iter().map(|p| p.uko_node.as_str()).collect();
        assert_eq!(uris, ["u:utils#apply_patch", "u:core#compare_double"]);
        // On a tie the earlier copy stays.
        let (mut a, mut b) = (piece("u:a", "a.py", 0.3, &text), piece("u:b", "b.py", 0.9, &text));
        (a.file_standing, b.file_standing) = (0.5, 0.5);
        let out = DefaultDeduplicator.dedup(vec![a, b]);
        assert_eq!(out.iter().map(|p| p.uko_node.as_str()).collect::<Vec<_>>(), ["u:a"]);
    }

    #[test]
    fn resolver_keeps_one_depth_the_budget_affords() {
        assert!(BudgetDepthResolver.resolve(Vec::new(), 100, &agents_pack::InlineRenderer, &tok()).is_empty());
        let big = piece("u:a", "a.py", 1.0, &long_text("a", 200));
        let small = piece("u:b", "b.py", 1.0, "fits");
        let out = BudgetDepthResolver.resolve(vec![big, small.clone()], 400, &agents_pack::InlineRenderer, &tok());
        assert!(out[0].depth < 9 && out[0].tokens <= 200, "{} at {}", out[0].tokens, out[0].depth);
        assert_eq!(out[1], small);
    }

    #[test]
    fn scorer_weights_relevance_and_file_standing() {
        assert!(scored(Vec::new()).is_empty());
        let mut strong = piece("u:a#f", "a.py", 0.9, "x");
        strong.inline = false;
        let mut weak = piece("u:b#g", "b.py", 0.2, "y");
        weak.inline = false;
        let out = scored(vec![weak, strong]);
        assert_eq!(out[0].piece.uko_node, "u:a#f");
        assert_eq!(out[0].parts.hierarchy, 1.0);
        assert!(out[1].parts.hierarchy < 0.5);
    }

    #[test]
    fn the_default_orderer_follows_the_ranking() {
        // Ranked input (by recency, say): lib.py's piece first although
        // app.py holds the best score.
        let mut late = piece("u:app#b", "app.py", 1.0, "b");
        late.start_line = 20;
        let mut early = piece("u:app#a", "app.py", 0.5, "a");
        early.start_line = 3;
        let lib = piece("u:lib#c", "lib.py", 0.2, "c");
        let note = piece("plan://p/d", "", 0.1, "decision");
        let ranked = [lib, note, late, early]
            .into_iter()
            .map(|piece| ScoredFragment { score: piece.relevance, parts: ScoreParts::default(), piece })
            .collect();
        let out = RelevanceOrderer.order(ranked, &NoDependencies);
        let uris: Vec<&str> = out.iter().map(|s| s.piece.uko_node.as_str()).collect();
        // Notes first; files in ranked order; a file's best-ranked piece first.
        assert_eq!(uris, ["plan://p/d", "u:lib#c", "u:app#b", "u:app#a"]);
    }

    #[test]
    fn orderer_groups_files_in_dependency_and_source_order() {
        assert!(CoherentOrderer.order(Vec::new(), &NoDependencies).is_empty());
        struct Deps;
        impl FileDependencies for Deps {
            fn edges(&self, _: &[String]) -> Vec<(String, String)> {
                vec![("app.py".into(), "lib.py".into())]
            }
        }
        let mut later = piece("u:app#b", "app.py", 1.0, "b");
        later.start_line = 20;
        let mut earlier = piece("u:app#a", "app.py", 0.5, "a");
        earlier.start_line = 3;
        let lib = piece("u:lib#c", "lib.py", 0.2, "c");
        let note = piece("plan://p/d", "", 0.1, "decision");
        let out = CoherentOrderer.order(scored(vec![later, earlier, lib, note]), &Deps);
        let uris: Vec<&str> = out.iter().map(|s| s.piece.uko_node.as_str()).collect();
        assert_eq!(uris, ["plan://p/d", "u:lib#c", "u:app#a", "u:app#b"]);
    }

    #[test]
    fn preamble_stays_within_its_cap() {
        let input = |fragments: &[ScoredFragment], max_tokens| -> Option<String> {
            ProvenancePreamble.generate(
                &PreambleInput {
                    query: "q",
                    fragments,
                    strategies_used: &["s".to_owned()],
                    budget_used: 10,
                    budget: 100,
                    max_tokens,
                },
                &tok(),
            )
        };
        assert_eq!(input(&[], 200), None);
        let many: Vec<Piece> =
            (0..200).map(|i| piece(&format!("u:{i}"), &format!("dir/file_{i}.py"), 0.5, "x")).collect();
        let many = scored(many);
        let text = input(&many, 200).unwrap();
        assert!(tok().count(&text) <= 200, "{text}");
        assert!(text.contains("more)"));
        assert!(input(&many, 3).is_none());
    }

    #[test]
    fn skeleton_compresses_to_signatures_within_its_budget() {
        assert!(SignatureSkeleton.compress(&[], 100, &agents_pack::InlineRenderer, &tok()).is_empty());
        let parent: Vec<Piece> = (0..10).map(|i| piece(&format!("u:{i}"), "a.py", 0.5, &long_text("p", 30))).collect();
        let out = SignatureSkeleton.compress(&parent, 300, &agents_pack::InlineRenderer, &tok());
        assert!(!out.is_empty());
        assert!(out.iter().map(|p| p.tokens).sum::<usize>() <= 300);
        assert!(out.iter().all(|p| p.depth <= 4 && p.role == PieceRole::Skeleton));
    }
}
