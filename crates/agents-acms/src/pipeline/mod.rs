//! The ACMS assembly pipeline: a Context Request in, an [`AssembledContext`] out,
//! through the spec's ten components (see [`components`]).
//!
//! ```text
//! request ─ 1 StrategySelector ─ 2 BudgetAllocator ─ 3 StrategyExecutor (parallel)
//!         ─ candidates rendered into pieces ─ 10 SkeletonCompressor (parent plan)
//!         ─ 4 FragmentDeduplicator ─ 5 DetailDepthResolver ─ 6 FragmentScorer
//!         ─ ranking ─ policy (ContextBudgetEnforcer) ─ 7 BudgetPacker
//!         ─ 8 FragmentOrderer ─ 9 PreambleGenerator ─ AssembledContext
//! ```
//!
//! Every component is chosen by name from `context.pipeline.<component>`; the
//! built-ins are registered as `default`, and [`PipelineBuilder::register`] adds
//! another in one call. Each run leaves a [`TraceStep`] per component (input and
//! output counts, tokens, time), so `--explain` can show all ten ran.
//!
//! Budget invariant: the rendered output (preamble, headings and fragments) never
//! exceeds the budget's available tokens, as counted by the shared tokenizer.

pub mod components;
pub mod enforcer;
pub mod format;
pub mod piece;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use agents_core::config::{ContextConfig, PipelineComponent, PipelineConfig, ScorerWeights};
use agents_core::error::ValidationError;
use agents_core::fragment::{
    AssembledContext, ContextBudget, ContextFragment, ContextTier, FragmentProvenance, SourceRange,
};
use agents_core::ids::stable_ulid;
use agents_core::policy::ContextView;
use agents_core::request::ContextRequest;
use agents_core::tokens::TokenCounter;
use agents_pack::{DepthRenderer, InlineRenderer, Piece, PieceRole, REPRESENTED_FILES};
use serde::Serialize;

use crate::retrieval::registry::ContextStrategyRegistry;
use crate::retrieval::{Backends, ContextStrategy, PlanContext, RetrievalQuery, StrategyError};
use components::*;
use enforcer::{ContextBudgetEnforcer, Enforcement, FileFacts};
use piece::StoreRenderer;

/// Most tokens the preamble may take (the spec's 200).
pub const PREAMBLE_MAX_TOKENS: usize = 200;

/// Bytes of source per token assumed when estimating whether the pieces above
/// the relevance floor, whole, could fill the budget (code runs 3-5).
const BYTES_PER_TOKEN_ESTIMATE: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("unknown backend {0:?} in required_backends; known: text, vector, graph, temporal")]
    UnknownBackend(String),
    #[error("the request requires the {backend} backend, which is unavailable: {reason}")]
    MissingBackend { backend: String, reason: String },
    #[error("unknown strategy {name:?}; known: {known}")]
    UnknownStrategy { name: String, known: String },
    #[error("strategy {0:?} is not enabled; add it to context.strategies.enabled")]
    DisabledStrategy(String),
    #[error("context.pipeline.{component}: no {component} named {name:?} is registered; known: {known}")]
    UnknownComponent { component: PipelineComponent, name: String, known: String },
    #[error("unknown ranking strategy {name:?}; known: {known}")]
    UnknownRanking { name: String, known: String },
    #[error(
        "a budget of {budget} tokens is below context.budget.min-useful-budget ({min}); give a larger budget or a model with a larger window"
    )]
    BudgetTooSmall { budget: u64, min: u64 },
    #[error("no strategy could serve the request: {0}")]
    NoStrategyRan(String),
    #[error("resource {resource:?} is excluded by the {phase} view of the project's context policy")]
    ResourceExcluded { resource: String, phase: String },
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// Settings the components read, from `[context]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineSettings {
    pub timeout_secs: u64,
    pub max_workers: usize,
    pub circuit_breaker_threshold: u32,
    pub weights: ScorerWeights,
    pub skeleton_ratio: f64,
    pub min_useful_budget: u64,
    pub refresh_threshold: f64,
    /// `context.query.min-relevance`: a candidate whose relevance is below it
    /// only fills what the others leave of the budget, ranked after them (see
    /// [`Pipeline::assemble_request`]).
    pub min_relevance: f64,
}

impl Default for PipelineSettings {
    fn default() -> Self {
        PipelineSettings::from_config(&ContextConfig::default())
    }
}

impl PipelineSettings {
    pub fn from_config(context: &ContextConfig) -> PipelineSettings {
        PipelineSettings {
            timeout_secs: context.executor.timeout_secs,
            max_workers: context.executor.max_workers,
            circuit_breaker_threshold: context.executor.circuit_breaker_threshold,
            weights: context.scorer.clone(),
            skeleton_ratio: context.budget.skeleton_ratio,
            min_useful_budget: context.budget.min_useful_budget as u64,
            refresh_threshold: context.budget.refresh_threshold,
            min_relevance: context.query.min_relevance,
        }
    }
}

/// What phase-1 components see.
pub struct StageInput<'a> {
    pub request: &'a ContextRequest,
    pub query: Option<RetrievalQuery<'a>>,
    pub backends: Option<&'a Backends<'a>>,
    pub registry: Option<&'a ContextStrategyRegistry>,
    pub plan: Option<&'a PlanContext>,
    pub settings: &'a PipelineSettings,
}

/// Orders scored fragments before packing: what survives a tight budget.
pub trait Ranking: Send + Sync {
    fn rank(&self, scored: &mut Vec<ScoredFragment>);
}

/// By composite score (the scorer's order).
pub struct ByRelevance;
/// Newest first (by last change), then by score.
pub struct ByRecency;
/// Hot, then warm, then cold, each by score.
pub struct ByTier;

impl Ranking for ByRelevance {
    fn rank(&self, scored: &mut Vec<ScoredFragment>) {
        sort_scored(scored);
    }
}

impl Ranking for ByRecency {
    fn rank(&self, scored: &mut Vec<ScoredFragment>) {
        sort_scored(scored);
        scored.sort_by(|a, b| b.piece.modified.unwrap_or(i64::MIN).cmp(&a.piece.modified.unwrap_or(i64::MIN)));
    }
}

fn tier_rank(tier: ContextTier) -> u8 {
    match tier {
        ContextTier::Hot => 0,
        ContextTier::Warm => 1,
        ContextTier::Cold => 2,
    }
}

impl Ranking for ByTier {
    fn rank(&self, scored: &mut Vec<ScoredFragment>) {
        sort_scored(scored);
        scored.sort_by_key(|s| tier_rank(s.piece.tier));
    }
}

/// A named implementation of one component, for [`PipelineBuilder::register`].
#[derive(Clone)]
pub enum Component {
    Selector(Arc<dyn StrategySelector>),
    Allocator(Arc<dyn BudgetAllocator>),
    Executor(Arc<dyn StrategyExecutor>),
    Deduplicator(Arc<dyn FragmentDeduplicator>),
    DepthResolver(Arc<dyn DetailDepthResolver>),
    Scorer(Arc<dyn FragmentScorer>),
    Packer(Arc<dyn BudgetPacker>),
    Orderer(Arc<dyn FragmentOrderer>),
    Preamble(Arc<dyn PreambleGenerator>),
    Skeleton(Arc<dyn SkeletonCompressor>),
    /// A ranking strategy for [`Pipeline::assemble`] (not one of the ten).
    Ranking(Arc<dyn Ranking>),
}

impl Component {
    /// Which of the ten components this implements; `None` for a ranking.
    pub fn component(&self) -> Option<PipelineComponent> {
        match self {
            Component::Selector(_) => Some(PipelineComponent::StrategySelector),
            Component::Allocator(_) => Some(PipelineComponent::BudgetAllocator),
            Component::Executor(_) => Some(PipelineComponent::StrategyExecutor),
            Component::Deduplicator(_) => Some(PipelineComponent::FragmentDeduplicator),
            Component::DepthResolver(_) => Some(PipelineComponent::DetailDepthResolver),
            Component::Scorer(_) => Some(PipelineComponent::FragmentScorer),
            Component::Packer(_) => Some(PipelineComponent::BudgetPacker),
            Component::Orderer(_) => Some(PipelineComponent::FragmentOrderer),
            Component::Preamble(_) => Some(PipelineComponent::PreambleGenerator),
            Component::Skeleton(_) => Some(PipelineComponent::SkeletonCompressor),
            Component::Ranking(_) => None,
        }
    }

    /// The `context.pipeline.<key>` this component is chosen by
    /// ([`PipelineComponent::key`]), or `ranking` for a ranking strategy.
    pub fn key(&self) -> &'static str {
        self.component().map_or("ranking", PipelineComponent::key)
    }
}

/// Registers component implementations by name, then builds a [`Pipeline`] from
/// `[context.pipeline]`.
#[derive(Clone)]
pub struct PipelineBuilder {
    registered: BTreeMap<(&'static str, String), Component>,
    breaker: Arc<CircuitBreaker>,
    strategies: Vec<Arc<dyn crate::retrieval::ContextStrategy>>,
}

impl Default for PipelineBuilder {
    fn default() -> Self {
        PipelineBuilder::new()
    }
}

impl PipelineBuilder {
    /// The built-in components, each registered as `default`, and the ranking
    /// strategies `relevance`, `recency` and `tiered`.
    pub fn new() -> PipelineBuilder {
        let breaker = Arc::new(CircuitBreaker::default());
        let builder = PipelineBuilder { registered: BTreeMap::new(), breaker: breaker.clone(), strategies: Vec::new() };
        builder
            .register("default", Component::Selector(Arc::new(DefaultSelector)))
            .register("default", Component::Allocator(Arc::new(ProportionalAllocator)))
            .register("default", Component::Executor(Arc::new(ParallelExecutor::with_breaker(breaker))))
            .register("default", Component::Deduplicator(Arc::new(DefaultDeduplicator)))
            .register("default", Component::DepthResolver(Arc::new(BudgetDepthResolver)))
            .register("default", Component::Scorer(Arc::new(WeightedScorer)))
            .register("default", Component::Packer(Arc::new(GreedyPacker)))
            .register("default", Component::Orderer(Arc::new(RelevanceOrderer)))
            .register("dependency", Component::Orderer(Arc::new(CoherentOrderer)))
            .register("default", Component::Preamble(Arc::new(ProvenancePreamble)))
            .register("default", Component::Skeleton(Arc::new(SignatureSkeleton)))
            .register("relevance", Component::Ranking(Arc::new(ByRelevance)))
            .register("recency", Component::Ranking(Arc::new(ByRecency)))
            .register("tiered", Component::Ranking(Arc::new(ByTier)))
    }

    /// Adds (or replaces) an implementation under `name`; `context.pipeline.<key>
    /// = "name"` selects it.
    pub fn register(mut self, name: impl Into<String>, component: Component) -> PipelineBuilder {
        self.registered.insert((component.key(), name.into()), component);
        self
    }

    /// Adds a retrieval strategy beside the built-ins (the spec's
    /// `register_strategy`); it runs once `context.strategies.enabled` names it.
    pub fn register_strategy(mut self, strategy: Arc<dyn crate::retrieval::ContextStrategy>) -> PipelineBuilder {
        self.strategies.retain(|s| s.name() != strategy.name());
        self.strategies.push(strategy);
        self
    }

    /// Whether a strategy of this name was registered.
    pub fn has_strategy(&self, name: &str) -> bool {
        self.strategies.iter().any(|s| s.name() == name)
    }

    /// The circuit breaker the default executor shares across assemblies.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// The implementation `config` names for `component`.
    fn pick(
        &self,
        component: PipelineComponent,
        config: &PipelineConfig,
    ) -> Result<(String, Component), PipelineError> {
        let key = component.key();
        let name = config.get(component);
        self.registered.get(&(key, name.to_owned())).map(|c| (name.to_owned(), c.clone())).ok_or_else(|| {
            PipelineError::UnknownComponent {
                component,
                name: name.to_owned(),
                known: self
                    .registered
                    .keys()
                    .filter(|(k, _)| *k == key)
                    .map(|(_, n)| n.clone())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })
    }

    /// The pipeline `config` names, with `settings`.
    pub fn build(&self, config: &PipelineConfig, settings: PipelineSettings) -> Result<Pipeline, PipelineError> {
        macro_rules! take {
            ($component:ident, $variant:ident) => {{
                match self.pick(PipelineComponent::$component, config)? {
                    (name, Component::$variant(c)) => (name, c),
                    _ => unreachable!("components are registered under their own key"),
                }
            }};
        }
        let rankings = self
            .registered
            .iter()
            .filter_map(|((_, name), c)| match c {
                Component::Ranking(r) => Some((name.clone(), r.clone())),
                _ => None,
            })
            .collect();
        Ok(Pipeline {
            selector: take!(StrategySelector, Selector),
            allocator: take!(BudgetAllocator, Allocator),
            executor: take!(StrategyExecutor, Executor),
            deduplicator: take!(FragmentDeduplicator, Deduplicator),
            resolver: take!(DetailDepthResolver, DepthResolver),
            scorer: take!(FragmentScorer, Scorer),
            packer: take!(BudgetPacker, Packer),
            orderer: take!(FragmentOrderer, Orderer),
            preamble: take!(PreambleGenerator, Preamble),
            skeleton: take!(SkeletonCompressor, Skeleton),
            rankings,
            strategies: self.strategies.clone(),
            settings,
        })
    }
}

/// One component's part in an assembly.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceStep {
    /// The component key (`strategy-selector`, ...), or `policy` for the enforcer.
    pub component: &'static str,
    /// The implementation's registered name.
    pub implementation: String,
    pub input: usize,
    pub output: usize,
    /// Tokens of the output, where it has any.
    pub tokens: usize,
    pub micros: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The result of an assembly: the payload and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct Assembly {
    #[serde(flatten)]
    pub context: AssembledContext,
    /// Every component, in the order it ran.
    pub trace: Vec<TraceStep>,
    pub selections: Vec<Selection>,
    pub allocations: Vec<Allocation>,
    pub runs: Vec<StrategyRun>,
    /// What the project's policy excluded or summarised.
    pub enforcement: Vec<Enforcement>,
    /// Candidates the strategies proposed (with the files the packer brought
    /// in whole, around their pieces), and how many the packer left out.
    pub candidates: usize,
    pub omitted: usize,
    /// Candidates left out because their relevance is below
    /// `context.query.min-relevance` and the pieces above it could fill the
    /// budget (with room to spare they fill it, ranked after the others).
    pub below_min_relevance: usize,
    /// Tokens of the whole rendered output (preamble included).
    pub rendered_tokens: usize,
    /// Wall time of the whole assembly in microseconds: the ten components
    /// and, between the executor and the deduplicator, rendering the
    /// candidates the strategies proposed into fragments.
    pub assembly_micros: u64,
    #[serde(skip)]
    pub refresh_threshold: f64,
    #[serde(skip)]
    pub pieces: Vec<ScoredFragment>,
    /// Spaces before the closing brace of the JSON rendering: what lets it
    /// state its own token count ([`Pipeline::fit`]).
    #[serde(skip)]
    pub json_padding: usize,
}

impl Assembly {
    /// Whether a caller holding this payload should reassemble now that
    /// `new_available` tokens are available (the change passes
    /// `context.budget.refresh-threshold`).
    pub fn needs_refresh(&self, new_available: u64) -> bool {
        self.context.needs_refresh(new_available, self.refresh_threshold)
    }

    /// The files of the context in the order the context presents them: by the
    /// best final score of their packed pieces (the `relevance_score` of their
    /// first fragment), ties by path.
    pub fn ranked_files(&self) -> Vec<String> {
        let mut best: BTreeMap<&str, f64> = BTreeMap::new();
        for s in self
            .pieces
            .iter()
            .filter(|s| !s.piece.path.is_empty() && !s.piece.inline && s.piece.role == PieceRole::Context)
        {
            let entry = best.entry(s.piece.path.as_str()).or_insert(f64::MIN);
            *entry = entry.max(s.score);
        }
        let mut files: Vec<(&str, f64)> = best.into_iter().collect();
        files.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        files.into_iter().map(|(p, _)| p.to_owned()).collect()
    }

    /// The context as agents read it: the preamble, then each fragment under a
    /// heading naming its path, line range and, short of the complete source,
    /// its depth ([`agents_pack::heading`]); its type and name open its content.
    pub fn to_markdown(&self) -> String {
        render_text(self.context.preamble(), &self.pieces)
    }
}

/// Everything a request-driven assembly needs.
pub struct RequestInput<'a> {
    pub request: &'a ContextRequest,
    pub query: RetrievalQuery<'a>,
    pub backends: &'a Backends<'a>,
    pub registry: &'a ContextStrategyRegistry,
    pub plan: Option<&'a PlanContext>,
    /// The plan the payload is for (`adhoc` without one).
    pub plan_id: String,
    pub resource_id: &'a str,
    pub budget: ContextBudget,
    /// The parent plan's packed context, for the skeleton.
    pub parent: &'a [Piece],
    /// Share of the budget the skeleton may take, over the settings' ratio.
    pub skeleton_ratio: Option<f64>,
    /// The policy view in force (path filters and size limits).
    pub view: Option<&'a ContextView>,
    pub renderer: &'a dyn DepthRenderer,
    pub facts: &'a dyn FileFacts,
    pub deps: &'a dyn FileDependencies,
    pub tokenizer: &'a dyn TokenCounter,
    /// Inline candidates the caller brings (the project's context entries, see
    /// [`crate::tiers::entry_candidates`]): they join the strategies' runs as
    /// one more run, [`crate::tiers::CONTEXT_ENTRIES`], and compete for the budget.
    pub entries: &'a [crate::retrieval::Candidate],
}

/// The ten components, chosen.
pub struct Pipeline {
    selector: (String, Arc<dyn StrategySelector>),
    allocator: (String, Arc<dyn BudgetAllocator>),
    executor: (String, Arc<dyn StrategyExecutor>),
    deduplicator: (String, Arc<dyn FragmentDeduplicator>),
    resolver: (String, Arc<dyn DetailDepthResolver>),
    scorer: (String, Arc<dyn FragmentScorer>),
    packer: (String, Arc<dyn BudgetPacker>),
    orderer: (String, Arc<dyn FragmentOrderer>),
    preamble: (String, Arc<dyn PreambleGenerator>),
    skeleton: (String, Arc<dyn SkeletonCompressor>),
    rankings: BTreeMap<String, Arc<dyn Ranking>>,
    strategies: Vec<Arc<dyn crate::retrieval::ContextStrategy>>,
    settings: PipelineSettings,
}

/// Times a stage and records it.
struct Tracer {
    steps: Vec<TraceStep>,
}

impl Tracer {
    fn run<T>(
        &mut self,
        component: PipelineComponent,
        implementation: &str,
        input: usize,
        f: impl FnOnce() -> T,
        measure: impl Fn(&T) -> (usize, usize),
    ) -> T {
        let started = Instant::now();
        let out = f();
        let (output, tokens) = measure(&out);
        self.steps.push(TraceStep {
            component: component.key(),
            implementation: implementation.to_owned(),
            input,
            output,
            tokens,
            micros: started.elapsed().as_micros() as u64,
            detail: None,
        });
        out
    }

    fn detail(&mut self, detail: String) {
        if let Some(last) = self.steps.last_mut() {
            last.detail = Some(detail);
        }
    }
}

fn piece_tokens(pieces: &[Piece]) -> usize {
    pieces.iter().map(|p| p.tokens).sum()
}

fn scored_tokens(scored: &[ScoredFragment]) -> usize {
    scored.iter().map(|s| s.piece.tokens).sum()
}

/// A request's `priority` (0 to 1, default 0.5) as a factor on effort: `0.5 +
/// priority`, so the default leaves `value` as it is, 1.0 gives half as much
/// again and 0.0 half. It scales the strategies' time limit
/// (`context.executor.timeout-secs`) and, when the budget decides it, the
/// number of candidates kept from each strategy.
pub fn scaled_by_priority(value: u64, priority: f64) -> u64 {
    (value as f64 * (0.5 + priority.clamp(0.0, 1.0))).round() as u64
}

/// What a request asks of the members [`member_candidates`] proposes: the
/// query's words, the names it gives, and the kinds and paths it lets through.
#[derive(Clone, Copy)]
struct MembersAsked<'a> {
    terms: &'a agents_search::QueryTerms,
    names: &'a crate::retrieval::QueryNames,
    filter: &'a agents_search::SearchFilter,
}

/// How many of the best-standing files [`member_candidates`] reads.
pub const MEMBER_FILES: usize = 12;
/// How many members of one file [`member_candidates`] proposes at most.
pub const MEMBERS_PER_FILE: usize = 3;
/// The share of the query's words a member's text must hold to be proposed.
pub const MEMBER_MIN_SHARE: f64 = 0.3;
/// The fewest of the query's words a proposed member's text holds.
const MEMBER_MIN_WORDS: f64 = 2.0;

/// A file whose members [`member_candidates`] may propose.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LeadingFile {
    path: String,
    /// No strategy proposed a piece of it: its whole text matched the question
    /// (ARCE's whole-file ranking), so its members need hold only
    /// [`MEMBER_MIN_WORDS`] of the query's words.
    by_text_only: bool,
}

/// Candidates no strategy proposed: the functions and methods of the
/// [`MEMBER_FILES`] best-standing leading source files ([`LeadingFile`], best
/// first) whose text holds at least [`MEMBER_MIN_SHARE`] of the query's words
/// and [`MEMBER_MIN_WORDS`] (in a file known by its whole text, the latter alone), the
/// [`MEMBERS_PER_FILE`] holding most per file (the longer first on a tie),
/// and every one the query names outright ([`crate::retrieval::QueryNames::of`]
/// 1: `RouteFuture.poll` for "RouteFuture and its Future::poll
/// implementation", whose text holds neither `RouteFuture` nor
/// `implementation`), of the kinds and under the paths the request's `filter`
/// lets through. A strategy's lists are ranked over the whole repository, so
/// the long function that does the work in a file the evidence ranks high (gin's
/// `node.getValue` for "how does gin match a request path against the route
/// tree") can miss them all while its file leads. Classes and other
/// containers are left out: a large one holds most words of any question
/// about its file (proposing them too measured 0.675 chunk NDCG@10 on the
/// questions, against 0.684 without). A member that only declares (an
/// interface's method, a header's prototype) is proposed as its definition,
/// as a strategy's candidate is ([`definitions_for_declarations`]), once.
/// They come with no evidence of their own
/// (relevance 0): the chunk ranker places them by their file's standing,
/// kind, size and the words their text holds.
fn member_candidates(
    renderer: &dyn DepthRenderer,
    leading: &[LeadingFile],
    proposed: &std::collections::HashSet<&str>,
    asked: &MembersAsked<'_>,
    strategy: &str,
    depth: u8,
) -> Vec<crate::retrieval::Candidate> {
    let MembersAsked { terms, names, filter } = *asked;
    if terms.is_empty() {
        return Vec::new();
    }
    // What the request lets through: its kinds and path prefixes.
    let kind_allowed = |kind: &str| filter.kinds.is_empty() || filter.kinds.iter().any(|k| k == kind);
    let path_allowed =
        |path: &str| filter.paths_prefix.is_empty() || filter.paths_prefix.iter().any(|p| path.starts_with(p.as_str()));
    let needed = (MEMBER_MIN_SHARE * terms.len() as f64).max(MEMBER_MIN_WORDS);
    let mut out = Vec::new();
    for LeadingFile { path, by_text_only } in leading
        .iter()
        .filter(|f| {
            crate::retrieval::FileRole::of(&f.path) == crate::retrieval::FileRole::Source && path_allowed(&f.path)
        })
        .take(MEMBER_FILES)
    {
        let needed = if *by_text_only { MEMBER_MIN_WORDS } else { needed };
        // The file is tokenized once; each member counts the words in its range.
        let mut occurrences = Vec::new();
        if !renderer.with_file_text(path, &mut |text| occurrences = terms.occurrences(text)) {
            continue;
        }
        let mut found: Vec<(usize, usize, String)> = Vec::new();
        let mut named: Vec<(usize, String)> = Vec::new();
        for member in renderer.file_members(path) {
            if !matches!(member.kind.as_str(), "function" | "method")
                || !kind_allowed(&member.kind)
                || proposed.contains(member.uri.as_str())
                || crate::retrieval::in_test_module(&member.uri)
            {
                continue;
            }
            let met = terms.met_within(&occurrences, member.bytes.clone(), &member.doc);
            if names.of(&member.uri) >= 1.0 {
                named.push((met, member.uri));
            } else if met as f64 >= needed {
                found.push((met, member.bytes.len(), member.uri));
            }
        }
        let propose = |uri: String, why: &str, met: usize| {
            let mut c = crate::retrieval::Candidate::new(uri, path.clone(), 0.0, depth, strategy);
            if !as_definition(&mut c, renderer) {
                c.note = Some(format!(
                    "a member of a leading file{why}; its text holds {met} of the query's {} words",
                    terms.len()
                ));
            }
            c
        };
        out.extend(named.into_iter().map(|(met, uri)| propose(uri, " the query names", met)));
        found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then_with(|| a.2.cmp(&b.2)));
        out.extend(found.into_iter().take(MEMBERS_PER_FILE).map(|(met, _, uri)| propose(uri, "", met)));
    }
    // A definition a strategy or an earlier member already stands for is not proposed again.
    let mut seen = std::collections::HashSet::new();
    out.retain(|c| !proposed.contains(c.uri.as_str()) && seen.insert(c.uri.clone()));
    out
}

/// How many callers [`callee_candidates`] reads: a look-up's named
/// definitions, or a question's best candidates.
pub const CALLERS_READ: usize = 3;
/// How many functions one caller brings at most.
pub const CALLEES_PER_CALLER: usize = 8;

/// Candidates no strategy proposed: the functions and methods each of
/// `callers` calls ([`DepthRenderer::callees`], in the order of their first
/// call), at most [`CALLEES_PER_CALLER`] each, that lie in a file the
/// evidence ranks (`ranked`: they add no file to the answer) and are neither
/// in a test module nor proposed already. A look-up that names a function
/// is answered by its code and by the helpers that code calls (bat's
/// `InteractivePrinter::print_line` by `preprocess` and
/// `highlight_regions_for_line`), which no strategy finds by the name. They
/// come with no evidence of their own (relevance 0), a note naming their
/// caller, and are placed by the chunk ranker; on the dev set they fill the
/// budget's tail: the relevant lines packed at 8,000 tokens rose from 0.817
/// to 0.827 while the top ten barely moved (docs/benchmarks.md).
fn callee_candidates(
    renderer: &dyn DepthRenderer,
    callers: &[&crate::retrieval::Candidate],
    proposed: &std::collections::HashSet<&str>,
    ranked: &dyn Fn(&str) -> bool,
    strategy: &str,
    depth: u8,
) -> Vec<crate::retrieval::Candidate> {
    let mut seen: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut out = Vec::new();
    for caller in callers {
        let name = agents_pack::own_name(&caller.uri);
        let callees = renderer
            .callees(&caller.uri)
            .into_iter()
            .filter(|(uri, path)| {
                ranked(path) && !crate::retrieval::in_test_module(uri) && !proposed.contains(uri.as_str())
            })
            .filter(|(uri, _)| seen.insert(uri.clone()))
            .take(CALLEES_PER_CALLER);
        out.extend(callees.map(|(uri, path)| crate::retrieval::Candidate {
            note: Some(format!("called by {name}")),
            ..crate::retrieval::Candidate::new(uri, path, 0.0, depth, strategy)
        }));
    }
    out
}

/// Replaces each candidate that only declares a function (a C or C++
/// prototype in a header, an interface's method:
/// [`DepthRenderer::definition_of`]) by its definition, which takes its
/// place, score and strategy, and a note naming the declaring file: the
/// declaration's doc comment is what matches a question, and the body that
/// does the work is the answer. A definition a run already holds keeps its
/// better place. Returns each definition proposed so with the declaration it
/// stands for, whose doc comment the ranker then counts.
fn definitions_for_declarations(runs: &mut [StrategyRun], renderer: &dyn DepthRenderer) -> HashMap<String, String> {
    let mut declared: HashMap<String, String> = HashMap::new();
    for run in runs.iter_mut() {
        let mut replaced = std::collections::HashSet::new();
        for c in run.candidates.iter_mut().filter(|c| c.content.is_none() && !c.evidence_only && !c.whole_file) {
            let declaration = c.uri.clone();
            if !as_definition(c, renderer) {
                continue;
            }
            declared.entry(c.uri.clone()).or_insert(declaration);
            replaced.insert(c.uri.clone());
        }
        if !replaced.is_empty() {
            let mut seen = std::collections::HashSet::new();
            run.candidates.retain(|c| !replaced.contains(&c.uri) || seen.insert(c.uri.clone()));
        }
    }
    declared
}

/// Turns `c`, when its node only declares a function
/// ([`DepthRenderer::definition_of`]), into that function's definition, with
/// a note naming the declaring file unless it has one; whether it did.
fn as_definition(c: &mut crate::retrieval::Candidate, renderer: &dyn DepthRenderer) -> bool {
    let Some((uri, path)) = renderer.definition_of(&c.uri) else { return false };
    if c.note.is_none() {
        c.note = Some(format!("the definition of what {} declares", c.path));
    }
    c.uri = uri;
    c.path = path;
    true
}

/// Tokens the preamble is guaranteed: 200, or a tenth of a small budget.
fn preamble_reserve(available: usize) -> usize {
    PREAMBLE_MAX_TOKENS.min(available / 10)
}

impl Pipeline {
    pub fn settings(&self) -> &PipelineSettings {
        &self.settings
    }

    /// Strategies registered beside the built-ins.
    pub fn custom_strategies(&self) -> &[Arc<dyn crate::retrieval::ContextStrategy>] {
        &self.strategies
    }

    /// The implementation chosen for `component`.
    pub fn implementation(&self, component: PipelineComponent) -> &str {
        match component {
            PipelineComponent::StrategySelector => &self.selector.0,
            PipelineComponent::BudgetAllocator => &self.allocator.0,
            PipelineComponent::StrategyExecutor => &self.executor.0,
            PipelineComponent::FragmentDeduplicator => &self.deduplicator.0,
            PipelineComponent::DetailDepthResolver => &self.resolver.0,
            PipelineComponent::FragmentScorer => &self.scorer.0,
            PipelineComponent::BudgetPacker => &self.packer.0,
            PipelineComponent::FragmentOrderer => &self.orderer.0,
            PipelineComponent::PreambleGenerator => &self.preamble.0,
            PipelineComponent::SkeletonCompressor => &self.skeleton.0,
        }
    }

    /// The implementation chosen for each component as `(key, name)`, in the
    /// order of [`PipelineComponent::ALL`].
    pub fn implementations(&self) -> [(&'static str, &str); 10] {
        PipelineComponent::ALL.map(|component| (component.key(), self.implementation(component)))
    }

    fn check_budget(&self, budget: &ContextBudget) -> Result<(), PipelineError> {
        if budget.available_tokens() < self.settings.min_useful_budget {
            return Err(PipelineError::BudgetTooSmall {
                budget: budget.available_tokens(),
                min: self.settings.min_useful_budget,
            });
        }
        Ok(())
    }

    fn ranking(&self, name: &str) -> Result<&Arc<dyn Ranking>, PipelineError> {
        self.rankings.get(name).ok_or_else(|| PipelineError::UnknownRanking {
            name: name.to_owned(),
            known: self.rankings.keys().cloned().collect::<Vec<_>>().join(", "),
        })
    }

    /// Request-driven assembly: strategies retrieve, then fusion and packing.
    pub fn assemble_request(&self, input: RequestInput<'_>) -> Result<Assembly, PipelineError> {
        let started = std::time::Instant::now();
        self.check_budget(&input.budget)?;
        let available = input.budget.available_tokens() as usize;
        let mut tracer = Tracer { steps: Vec::new() };
        // The request's priority scales the strategies' time limit.
        let settings = PipelineSettings {
            timeout_secs: scaled_by_priority(self.settings.timeout_secs, input.request.priority()).max(1),
            ..self.settings.clone()
        };
        let stage = StageInput {
            request: input.request,
            query: Some(input.query.clone()),
            backends: Some(input.backends),
            registry: Some(input.registry),
            plan: input.plan,
            settings: &settings,
        };
        // The skeleton comes off the top of the budget when there is a parent.
        let skeleton_budget = if input.parent.is_empty() {
            0
        } else {
            let ratio = input.skeleton_ratio.unwrap_or(self.settings.skeleton_ratio);
            (available as f64 * ratio.clamp(0.0, 1.0)).floor() as usize
        };
        let fragment_budget = available - preamble_reserve(available) - skeleton_budget;
        let PhaseOne { selections, allocations, mut runs } =
            self.orchestrate(&mut tracer, &stage, input.registry.enabled().len(), fragment_budget)?;
        if selections.is_empty() {
            // Nothing enabled can run: say why each enabled strategy cannot.
            let reasons: Vec<String> = input
                .registry
                .enabled()
                .iter()
                .map(|name| {
                    let why = match input.registry.get(name) {
                        Some(s) => match input.registry.validate(s.as_ref(), input.backends) {
                            Err(unavailable) => unavailable.to_string(),
                            Ok(()) => "cannot handle this request".to_owned(),
                        },
                        None => "not registered".to_owned(),
                    };
                    format!("{name}: {why}")
                })
                .collect();
            return Err(PipelineError::NoStrategyRan(format!(
                "nothing in context.strategies.enabled can run: {}",
                if reasons.is_empty() { "none is enabled".to_owned() } else { reasons.join("; ") }
            )));
        }
        let failed: Vec<String> =
            runs.iter().filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.selected))).collect();
        if !selections.is_empty() && runs.iter().all(|r| r.strategy.is_none()) {
            return Err(PipelineError::NoStrategyRan(failed.join("; ")));
        }
        if !input.entries.is_empty() {
            runs.push(StrategyRun {
                selected: crate::tiers::CONTEXT_ENTRIES.to_owned(),
                strategy: Some(crate::tiers::CONTEXT_ENTRIES.to_owned()),
                fallbacks: Vec::new(),
                candidates: input.entries.to_vec(),
                elapsed_ms: 0,
                error: None,
            });
        }
        let declared = definitions_for_declarations(&mut runs, input.renderer);
        let candidates: usize = runs.iter().map(|r| r.candidates.len()).sum();
        let (pieces, excluded, below_min_relevance) = self.materialize(&input, &runs, &declared, fragment_budget);
        let skeleton = tracer.run(
            PipelineComponent::SkeletonCompressor,
            &self.skeleton.0,
            input.parent.len(),
            || self.skeleton.1.compress(input.parent, skeleton_budget, input.renderer, input.tokenizer),
            |s| (s.len(), piece_tokens(s)),
        );
        let strategies_used = strategies_used(&runs);
        let ranking = self.ranking(input.request.ranking().as_str())?.clone();
        self.fuse(
            tracer,
            FuseInput {
                pieces,
                skeleton,
                plan: input.plan,
                view: input.view,
                facts: input.facts,
                deps: input.deps,
                renderer: input.renderer,
                tokenizer: input.tokenizer,
                available,
                fragment_budget,
                allocations: &allocations,
                ranking: ranking.as_ref(),
                query: input.query.text(),
                strategies_used,
                plan_id: input.plan_id,
                budget: input.budget,
                resource_id: input.resource_id,
            },
            Extra {
                selections: selections.clone(),
                allocations: allocations.clone(),
                runs,
                candidates,
                below_min_relevance,
                excluded,
                started,
            },
        )
    }

    /// Phase 1: the selector, the allocator and the executor, traced.
    fn orchestrate(
        &self,
        tracer: &mut Tracer,
        stage: &StageInput<'_>,
        strategies: usize,
        fragment_budget: usize,
    ) -> Result<PhaseOne, PipelineError> {
        let selections = tracer.run(
            PipelineComponent::StrategySelector,
            &self.selector.0,
            strategies,
            || self.selector.1.select(stage),
            |r| (r.as_ref().map_or(0, Vec::len), 0),
        )?;
        tracer.detail(selections.iter().map(|s| s.strategy.as_str()).collect::<Vec<_>>().join(", "));
        let allocations = tracer.run(
            PipelineComponent::BudgetAllocator,
            &self.allocator.0,
            selections.len(),
            || self.allocator.1.allocate(&selections, fragment_budget),
            |a| (a.len(), a.iter().map(|a| a.tokens).sum()),
        );
        let runs = tracer.run(
            PipelineComponent::StrategyExecutor,
            &self.executor.0,
            selections.len(),
            || self.executor.1.execute(stage, &selections),
            |runs| (runs.iter().map(|r| r.candidates.len()).sum(), 0),
        );
        tracer.detail(
            runs.iter()
                .map(|r| match (&r.strategy, &r.error) {
                    (Some(s), _) if *s == r.selected => format!("{s} {} ms", r.elapsed_ms),
                    (Some(s), _) => format!("{} -> {s} {} ms", r.selected, r.elapsed_ms),
                    (None, Some(e)) => format!("{}: {e}", r.selected),
                    (None, None) => r.selected.clone(),
                })
                .collect::<Vec<_>>()
                .join("; "),
        );
        Ok(PhaseOne { selections, allocations, runs })
    }

    /// Renders the strategies' candidates into pieces: each run's best `limit`,
    /// in selection order, with facts for recency. Ranked candidates whose
    /// relevance is below `context.query.min-relevance` are rendered only when
    /// the whole source of the others could not fill the budget, flagged
    /// [`Piece::below_floor`] (they fill what the others leave and rank after
    /// them); else they are left out (their count is the third value). Nodes a
    /// graph walk reached, and a file standing in for the imports or fields that
    /// rank it among the best, are kept.
    /// Candidates on paths the policy view excludes are dropped here, before they
    /// take a place, and reported once per path.
    fn materialize(
        &self,
        input: &RequestInput<'_>,
        runs: &[StrategyRun],
        declared: &HashMap<String, String>,
        fragment_budget: usize,
    ) -> (Vec<Piece>, Vec<Enforcement>, usize) {
        let mut pieces = Vec::new();
        let names = crate::retrieval::QueryNames::new(&input.query.text());
        let terms = agents_search::QueryTerms::new(&input.query.text());
        let roles = crate::retrieval::RolesAsked::of(&input.query.text());
        let mut excluded: BTreeMap<&str, usize> = BTreeMap::new();
        let allowed = |c: &&crate::retrieval::Candidate| {
            c.content.is_some() || c.path.is_empty() || input.view.is_none_or(|v| v.allows_path(&c.path))
        };
        // `context.query.min-relevance`: below it a ranked candidate is evidence
        // for its file's rank at most, never a fragment. A node a graph walk
        // reached (its distance is the request's breadth to decide) is kept.
        let min_relevance = self.settings.min_relevance;
        let relevant = |c: &&crate::retrieval::Candidate| c.hops.is_some() || f64::from(c.score) >= min_relevance;
        // Each file's standing over every candidate of every run (evidence-only
        // ones included), in the order `ranked_files` gives them: its fused
        // evidence as a share of the best file's (`components::fused_standing`).
        let fused = crate::retrieval::fuse_paths_named(
            runs.iter()
                .flat_map(|r| &r.candidates)
                .filter(|c| !c.path.is_empty() && allowed(c))
                // A node the query names is stronger evidence for its file too.
                .map(|c| {
                    let named = if c.whole_file { 0.0 } else { names.of(&c.uri) };
                    let boosted = c.score * (1.0 + components::NAME_BOOST as f32 * named as f32);
                    // Only a look-up ranks the files defining what it names first.
                    (c.path.as_str(), boosted, c.whole_file, if names.is_lookup() { named } else { 0.0 })
                }),
            roles,
        );
        let asks_how = names.asks_how();
        let best_fused = fused.first().map_or(0.0, |(_, s)| f64::from(*s));
        let standing: std::collections::HashMap<&str, f64> = fused
            .iter()
            .enumerate()
            .map(|(place, (path, s))| {
                let share = if best_fused > 0.0 { f64::from(*s) / best_fused } else { 1.0 };
                (path.as_str(), components::fused_standing(place, share, asks_how))
            })
            .collect();
        let ranked = || fused.iter().map(|(path, _)| path);
        // The best `limit` of each run, plus, for each of the best-standing files
        // none of those come from, its best candidate (its file node when all its
        // evidence is imports or fields): the files that matter most are all
        // represented.
        let mut chosen: Vec<(&crate::retrieval::Candidate, f64)> = Vec::new();
        let mut below_floor: Vec<(&crate::retrieval::Candidate, f64)> = Vec::new();
        for run in runs {
            for c in run.candidates.iter().filter(|c| !c.evidence_only && !allowed(c)) {
                *excluded.entry(c.path.as_str()).or_default() += 1;
            }
            let Some(strategy) = &run.strategy else { continue };
            let quality = input.registry.get(strategy).map_or(0.5, |s| s.capabilities().quality_score);
            let usable: Vec<&crate::retrieval::Candidate> =
                run.candidates.iter().filter(|c| !c.evidence_only).filter(allowed).take(input.query.limit).collect();
            below_floor.extend(usable.iter().filter(|c| !relevant(c)).map(|c| (*c, quality)));
            chosen.extend(usable.into_iter().filter(relevant).map(|c| (c, quality)));
        }
        let mut file_nodes: Vec<crate::retrieval::Candidate> = Vec::new();
        for path in ranked().take(REPRESENTED_FILES) {
            if chosen.iter().any(|(c, _)| c.path == *path) {
                continue;
            }
            let mut best: Option<(&crate::retrieval::Candidate, f64)> = None;
            for run in runs {
                let Some(strategy) = &run.strategy else { continue };
                let quality = input.registry.get(strategy).map_or(0.5, |s| s.capabilities().quality_score);
                if let Some(c) =
                    run.candidates.iter().find(|c| c.path == *path && allowed(c) && (c.evidence_only || relevant(c)))
                    && best.is_none_or(|(b, _)| c.score > b.score)
                {
                    best = Some((c, quality));
                }
            }
            let Some((c, quality)) = best else { continue };
            if c.evidence_only {
                // Stand in with the file itself, at its structure.
                let file_uri = agents_pack::file_uri(&c.uri).to_owned();
                file_nodes.push(crate::retrieval::Candidate {
                    uri: file_uri,
                    depth: c.depth.min(4),
                    evidence_only: false,
                    whole_file: false,
                    hops: None,
                    ..c.clone()
                });
            } else {
                chosen.push((c, quality));
            }
        }
        // Members of the best-standing files that no strategy proposed but whose
        // text holds much of the question (a long function the rarer words of
        // its file's best pieces point to).
        let strategy = runs.iter().find_map(|r| r.strategy.clone()).unwrap_or_default();
        let proposed: std::collections::HashSet<&str> =
            chosen.iter().map(|(c, _)| c.uri.as_str()).chain(file_nodes.iter().map(|c| c.uri.as_str())).collect();
        // Files a strategy proposed pieces of, and among the best-standing
        // ones those whose whole text alone matched the question (cJSON's
        // `cJSON.c`, whose `print_number` writes the shortest round-tripping
        // double, while every node hit came from elsewhere); one known only
        // through an import or a field stays represented by its file.
        let with_pieces: std::collections::HashSet<&str> = chosen.iter().map(|(c, _)| c.path.as_str()).collect();
        let whole_text: std::collections::HashSet<&str> =
            runs.iter().flat_map(|r| &r.candidates).filter(|c| c.whole_file).map(|c| c.path.as_str()).collect();
        let leading: Vec<LeadingFile> = ranked()
            .enumerate()
            .filter_map(|(i, path)| {
                let by_text_only = !with_pieces.contains(path.as_str());
                let leads = !by_text_only || (i < REPRESENTED_FILES && whole_text.contains(path.as_str()));
                leads.then(|| LeadingFile { path: path.clone(), by_text_only })
            })
            .collect();
        // A request that names a focus asks for the graph around it: nothing is added.
        if input.request.focus().is_empty() {
            let members = member_candidates(
                input.renderer,
                &leading,
                &proposed,
                &MembersAsked { terms: &terms, names: &names, filter: &input.query.filter },
                &strategy,
                input.query.depth,
            );
            file_nodes.extend(members);
            // What the answer's functions call: for a look-up, the definitions
            // it names; for a question, the best candidates (none when the
            // request's kinds leave out functions or methods).
            let kinds = &input.query.filter.kinds;
            let callables_asked =
                kinds.is_empty() || piece::CALLABLE_KINDS.iter().all(|kind| kinds.iter().any(|k| k == kind));
            let callers: Vec<&crate::retrieval::Candidate> = if !callables_asked {
                Vec::new()
            } else if names.is_lookup() {
                chosen.iter().map(|(c, _)| *c).chain(file_nodes.iter()).filter(|c| names.of(&c.uri) >= 1.0).collect()
            } else {
                let mut best: Vec<&crate::retrieval::Candidate> = chosen.iter().map(|(c, _)| *c).collect();
                best.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.uri.cmp(&b.uri)));
                best
            };
            let proposed: std::collections::HashSet<&str> =
                chosen.iter().map(|(c, _)| c.uri.as_str()).chain(file_nodes.iter().map(|c| c.uri.as_str())).collect();
            let callees = callee_candidates(
                input.renderer,
                &callers[..callers.len().min(CALLERS_READ)],
                &proposed,
                &|path| standing.contains_key(path),
                &strategy,
                input.query.depth,
            );
            file_nodes.extend(callees);
        }
        let file_quality = chosen.first().map_or(0.5, |(_, q)| *q);
        let chosen: Vec<(&crate::retrieval::Candidate, f64)> =
            chosen.into_iter().chain(file_nodes.iter().map(|c| (c, file_quality))).collect();
        // Below the floor: rendered, to fill what the others leave and rank
        // after them, only when the others' whole source could not fill the
        // budget (a large budget on a small answer); else left out.
        let mut seen: std::collections::HashSet<&str> = chosen.iter().map(|(c, _)| c.uri.as_str()).collect();
        let below_floor: Vec<(&crate::retrieval::Candidate, f64)> =
            below_floor.into_iter().filter(|(c, _)| seen.insert(c.uri.as_str())).collect();
        let fills = !below_floor.is_empty() && {
            // Each file counts its candidates' sources, at most its own (a
            // class and its methods overlap).
            let mut by_file: BTreeMap<&str, usize> = BTreeMap::new();
            for (c, _) in &chosen {
                let file = agents_pack::file_uri(&c.uri);
                *by_file.entry(file).or_default() += input.renderer.source_bytes(&c.uri).unwrap_or(0);
            }
            let whole: usize = by_file
                .into_iter()
                .map(|(file, bytes)| input.renderer.source_bytes(file).map_or(bytes, |all| bytes.min(all)))
                .sum();
            whole / BYTES_PER_TOKEN_ESTIMATE < fragment_budget
        };
        let left_out = if fills { 0 } else { below_floor.len() };
        let chosen: Vec<(&crate::retrieval::Candidate, f64, bool)> = chosen
            .into_iter()
            .map(|(c, q)| (c, q, false))
            .chain(below_floor.into_iter().filter(|_| fills).map(|(c, q)| (c, q, true)))
            .collect();
        // Those that may rank among the resolver's leaders (by relevance, with
        // room for deduplication to reorder them) may be rendered whole.
        let mut by_relevance: Vec<&crate::retrieval::Candidate> =
            chosen.iter().filter(|(_, _, below)| !below).map(|(c, _, _)| *c).collect();
        by_relevance.sort_by(|a, b| {
            b.score.clamp(0.0, 1.0).total_cmp(&a.score.clamp(0.0, 1.0)).then_with(|| a.uri.cmp(&b.uri))
        });
        let may_lead: std::collections::HashSet<&str> =
            by_relevance.iter().take(2 * components::RESOLVER_LEADERS).map(|c| c.uri.as_str()).collect();
        // The most of a question's words a passage of each file holds, read
        // once per file. A look-up asks for a name, not for words said
        // together: neither passage is counted for it.
        let mut file_near: HashMap<String, u32> = HashMap::new();
        let question = !names.is_lookup();
        // The query's words each function or method holds, by its place in
        // `pieces` (questions only): what its callers add to them.
        let mut callable_words: BTreeMap<usize, Vec<bool>> = BTreeMap::new();
        {
            for (c, quality, below) in chosen {
                let piece = match &c.content {
                    Some(content) => Some(Piece {
                        inline: true,
                        // A context entry keeps its tier and the node it was taken from.
                        tier: c.entry.as_ref().map_or(ContextTier::Warm, |e| e.tier),
                        source_node: c.entry.as_ref().and_then(|e| e.node.clone()),
                        ..Piece::new(c.uri.clone(), "note", c.path.clone(), content.clone(), c.depth)
                    }),
                    None => input.renderer.piece(
                        &c.uri,
                        components::first_depth(
                            c.depth,
                            input.renderer.source_bytes(&c.uri),
                            fragment_budget,
                            may_lead.contains(c.uri.as_str()),
                        ),
                    ),
                };
                let Some(piece) = piece else { continue };
                let mut piece = c.propose(piece, quality);
                piece.below_floor = below;
                // What the request asks for this node, which the deepen pass may
                // give it when room is left: the request's depth, less the depth
                // gradient's cut by hops when the request names a focus (the cuts
                // by relevance and for size only decide its first rendering); a
                // file standing in for its evidence keeps its structure depth.
                let stand_in = file_nodes.iter().any(|f| std::ptr::eq(f, c));
                let asked = if stand_in {
                    c.depth
                } else if input.request.focus().is_empty() {
                    c.depth.max(input.query.depth)
                } else {
                    c.depth.max(input.query.depth_at(c.hops.unwrap_or(0)))
                };
                piece.requested_depth = piece.requested_depth.max(asked);
                if !piece.inline && !piece.path.is_empty() {
                    // A focus the request names is wanted whatever its size.
                    let asked_for = !input.request.focus().is_empty() && c.hops == Some(0);
                    let size = if asked_for { 1.0 } else { components::size_prior(&piece) };
                    piece.name_match = names.of(&piece.uko_node);
                    if !terms.is_empty() {
                        let mut met = 0;
                        let callable = matches!(piece.kind.as_str(), "function" | "method");
                        // A definition proposed for its declaration also
                        // holds the words of the declaration's doc comment.
                        let mut declaration_doc = String::new();
                        if let Some(declaration) = declared.get(&piece.uko_node) {
                            input.renderer.with_node_text(declaration, &mut |doc, _| declaration_doc = doc.to_owned());
                        }
                        // A look-up naming the node (`ORunner.runEffects`) names
                        // it by its enclosing names too, which its own text need
                        // not hold (a wrapper calling it does).
                        let symbol = if !question && piece.name_match > 0.0 {
                            crate::uko_index::symbol_path_of(&piece.uko_node)
                        } else {
                            ""
                        };
                        let mut near = 0;
                        let mut words = Vec::new();
                        let counted = input.renderer.with_node_text(&piece.uko_node, &mut |doc, text| {
                            words = terms.words_met(&[if callable { doc } else { "" }, &declaration_doc, text, symbol]);
                            met = words.iter().filter(|&&w| w).count();
                            if question {
                                near = terms.nearest(text, components::NEAR_WINDOW);
                            }
                        });
                        if !counted {
                            words = terms.words_met(&[&piece.content]);
                            met = words.iter().filter(|&&w| w).count();
                        }
                        piece.terms_met = u32::try_from(met).unwrap_or(u32::MAX);
                        piece.terms_mask =
                            words.iter().take(64).enumerate().fold(0, |m, (i, &w)| m | (u64::from(w) << i));
                        if question && callable && counted {
                            callable_words.insert(pieces.len(), words);
                        }
                        piece.terms_near = u32::try_from(near).unwrap_or(u32::MAX);
                        if question {
                            piece.file_terms_near = *file_near.entry(piece.path.clone()).or_insert_with(|| {
                                let mut near = 0;
                                input.renderer.with_file_text(&piece.path, &mut |text| {
                                    near = terms.nearest(text, components::NEAR_WINDOW);
                                });
                                u32::try_from(near).unwrap_or(u32::MAX)
                            });
                        }
                        piece.query_words = u32::try_from(terms.len()).unwrap_or(u32::MAX);
                    }
                    piece.asks_how = asks_how;
                    piece.role_asked = roles.asks(crate::retrieval::FileRole::of(&piece.path));
                    piece.boost = components::chunk_boost(&piece.path, piece.name_match, roles) * size;
                }
                piece.file_standing = standing.get(piece.path.as_str()).copied().unwrap_or(0.0);
                if !piece.path.is_empty() && !piece.inline {
                    piece.modified = input.facts.modified(&piece.path);
                }
                piece.measure(input.tokenizer);
                pieces.push(piece);
            }
        }
        components::link_calls(&mut pieces, &callable_words, input.renderer, asks_how);
        if !question {
            components::link_named_callees(&mut pieces, input.renderer);
        }
        let excluded = excluded
            .into_iter()
            .map(|(path, n)| Enforcement {
                uko_node: String::new(),
                path: path.to_owned(),
                action: "excluded",
                reason: format!("path excluded by the policy view ({n} candidate(s))"),
            })
            .collect();
        (pieces, excluded, left_out)
    }

    /// Fragment-driven assembly (the spec's `ACMSPipeline.assemble`): the given
    /// fragments ranked by `ranking` (`relevance`, `recency`, `tiered` or a
    /// registered one), then fused and packed. Phase-1 components run with no
    /// strategies to select and produce empty output. A fragment whose
    /// `relevance_score` is below `context.query.min-relevance` is not packed.
    pub fn assemble(
        &self,
        plan_id: &str,
        fragments: &[ContextFragment],
        budget: ContextBudget,
        ranking: &str,
        tokenizer: &dyn TokenCounter,
    ) -> Result<Assembly, PipelineError> {
        self.check_budget(&budget)?;
        let ranking = self.ranking(ranking)?.clone();
        let started = std::time::Instant::now();
        let available = budget.available_tokens() as usize;
        let fragment_budget = available - preamble_reserve(available);
        let mut tracer = Tracer { steps: Vec::new() };
        let request = ContextRequest::default();
        let stage = StageInput {
            request: &request,
            query: None,
            backends: None,
            registry: None,
            plan: None,
            settings: &self.settings,
        };
        let PhaseOne { selections, allocations, runs } = self.orchestrate(&mut tracer, &stage, 0, fragment_budget)?;
        let resource_id = fragments.first().map(|f| f.provenance().resource_id().to_owned()).unwrap_or_default();
        let mut strategies_used: Vec<String> = Vec::new();
        let min_relevance = self.settings.min_relevance;
        let below_min_relevance = fragments.iter().filter(|f| f.relevance_score() < min_relevance).count();
        let pieces: Vec<Piece> = fragments
            .iter()
            .filter(|f| f.relevance_score() >= min_relevance)
            .map(|f| {
                let strategy = f.provenance().strategy().unwrap_or("given").to_owned();
                if !strategies_used.contains(&strategy) {
                    strategies_used.push(strategy.clone());
                }
                let mut piece = Piece {
                    source_range: f.provenance().source_range().map(|r| r.to_string()).unwrap_or_default(),
                    start_line: f.provenance().source_range().and_then(|r| r.line_span()).map_or(0, |s| s.0),
                    relevance: f.relevance_score(),
                    quality: 0.5,
                    strategies: vec![strategy],
                    tier: f.tier(),
                    inline: true,
                    modified: Some(f.created_at().timestamp()),
                    ..Piece::new(
                        f.uko_node(),
                        f.metadata().get("kind").cloned().unwrap_or_else(|| "fragment".to_owned()),
                        f.provenance().source_path(),
                        f.content(),
                        f.detail_depth(),
                    )
                };
                piece.measure(tokenizer);
                piece
            })
            .collect();
        let skeleton = tracer.run(
            PipelineComponent::SkeletonCompressor,
            &self.skeleton.0,
            0,
            || self.skeleton.1.compress(&[], 0, &InlineRenderer, tokenizer),
            |s| (s.len(), piece_tokens(s)),
        );
        let candidates = pieces.len();
        self.fuse(
            tracer,
            FuseInput {
                pieces,
                skeleton,
                plan: None,
                view: None,
                facts: &enforcer::NoFacts,
                deps: &NoDependencies,
                renderer: &InlineRenderer,
                tokenizer,
                available,
                fragment_budget,
                allocations: &[],
                ranking: ranking.as_ref(),
                query: String::new(),
                strategies_used,
                plan_id: plan_id.to_owned(),
                budget,
                resource_id: &resource_id,
            },
            Extra { selections, allocations, runs, candidates, below_min_relevance, excluded: Vec::new(), started },
        )
    }

    /// Phase 2 and 3: dedup, depth, score, rank, policy, pack, order, preamble.
    fn fuse(&self, mut tracer: Tracer, input: FuseInput<'_>, extra: Extra) -> Result<Assembly, PipelineError> {
        let FuseInput { mut pieces, skeleton, tokenizer, renderer, .. } = input;
        // The parent's skeleton is deduplicated with the retrieved pieces, after
        // them: a node both hold stays once, as the retrieved piece (at the
        // deeper of the two renderings), so a child payload never holds the
        // same node twice.
        let skeleton_in = skeleton.len();
        pieces.extend(skeleton);
        let n = pieces.len();
        let deduped = tracer.run(
            PipelineComponent::FragmentDeduplicator,
            &self.deduplicator.0,
            n,
            || self.deduplicator.1.dedup(pieces),
            |p| (p.len(), piece_tokens(p)),
        );
        let (skeleton, pieces): (Vec<Piece>, Vec<Piece>) =
            deduped.into_iter().partition(|p| p.role == PieceRole::Skeleton);
        if skeleton_in > skeleton.len() {
            tracer.detail(format!(
                "{} of {skeleton_in} skeleton piece(s) already retrieved",
                skeleton_in - skeleton.len()
            ));
        }
        let n = pieces.len();
        let pieces = tracer.run(
            PipelineComponent::DetailDepthResolver,
            &self.resolver.0,
            n,
            || self.resolver.1.resolve(pieces, input.fragment_budget, renderer, tokenizer),
            |p| (p.len(), piece_tokens(p)),
        );
        let n = pieces.len();
        let mut scored = tracer.run(
            PipelineComponent::FragmentScorer,
            &self.scorer.0,
            n,
            || self.scorer.1.score(pieces, input.plan, &self.settings.weights),
            |s| (s.len(), scored_tokens(s)),
        );
        input.ranking.rank(&mut scored);
        let n = scored.len();
        let (scored, enforcement) = match input.view {
            Some(view) => {
                let started = Instant::now();
                let (kept, actions) = ContextBudgetEnforcer.enforce(scored, view, input.facts, renderer, tokenizer);
                tracer.steps.push(TraceStep {
                    component: "policy",
                    implementation: "context-budget-enforcer".to_owned(),
                    input: n,
                    output: kept.len(),
                    tokens: scored_tokens(&kept),
                    micros: started.elapsed().as_micros() as u64,
                    detail: (!actions.is_empty()).then(|| format!("{} excluded or summarised", actions.len())),
                });
                (kept, actions)
            }
            None => (scored, Vec::new()),
        };
        let mut enforcement = enforcement;
        enforcement.splice(0..0, extra.excluded.iter().cloned());
        // A piece the policy summarised is not deepened again by the packer.
        let mut scored = scored;
        for s in scored.iter_mut() {
            if enforcement.iter().any(|e| e.action == "summarised" && e.uko_node == s.piece.uko_node) {
                s.piece.requested_depth = s.piece.requested_depth.min(s.piece.depth);
            }
        }
        let n = scored.len();
        let outcome = tracer.run(
            PipelineComponent::BudgetPacker,
            &self.packer.0,
            n,
            || self.packer.1.pack(scored, input.fragment_budget, input.allocations, renderer, tokenizer),
            |o| (o.packed.len(), o.tokens),
        );
        tracer.detail(format!("{} omitted, {} downgraded", outcome.omitted, outcome.downgraded));
        let omitted = outcome.omitted;
        let added = outcome.added;
        let mut packed = outcome.packed;
        // The view's size limits hold for what is delivered: what the packer
        // deepened is checked again, best first.
        if let Some(view) = input.view
            && (view.max_total_size().is_some() || view.max_file_size().is_some())
        {
            packed.sort_by(|a, b| b.score.total_cmp(&a.score));
            let (kept, again) = ContextBudgetEnforcer.enforce(packed, view, input.facts, renderer, tokenizer);
            for action in again {
                if !enforcement.iter().any(|e| e.uko_node == action.uko_node && e.action == action.action) {
                    enforcement.push(action);
                }
            }
            packed = kept;
        }
        // The delivered ranking puts a named member before its container and
        // spreads over files; what was packed stays.
        named_members_first(&mut packed);
        spread_over_files(&mut packed);
        cover_question_words(&mut packed);
        // A node the packer kept is not repeated by the skeleton.
        let packed_nodes: std::collections::HashSet<String> = packed.iter().map(|s| s.piece.uko_node.clone()).collect();
        packed.extend(
            skeleton.into_iter().filter(|p| !packed_nodes.contains(&p.uko_node)).map(|piece| ScoredFragment {
                score: piece.relevance,
                parts: ScoreParts::default(),
                piece,
            }),
        );
        // The orderer reads the ranking's order (files by their best-ranked piece).
        input.ranking.rank(&mut packed);
        let n = packed.len();
        let ordered = tracer.run(
            PipelineComponent::FragmentOrderer,
            &self.orderer.0,
            n,
            || self.orderer.1.order(packed, input.deps),
            |o| (o.len(), scored_tokens(o)),
        );
        let mut ordered = ordered;
        let ceiling = input.available - preamble_reserve(input.available);
        // The hard ceiling: a custom packer that overspends loses its worst
        // fragments here.
        while scored_tokens(&ordered) > ceiling && !ordered.is_empty() {
            drop_worst(&mut ordered);
        }
        let strategies_used = input.strategies_used.clone();
        let preamble = loop {
            let used = scored_tokens(&ordered);
            let preamble_budget = PREAMBLE_MAX_TOKENS.min(input.available.saturating_sub(used));
            let preamble = tracer.run(
                PipelineComponent::PreambleGenerator,
                &self.preamble.0,
                ordered.len(),
                || {
                    self.preamble.1.generate(
                        &PreambleInput {
                            query: &input.query,
                            fragments: &ordered,
                            strategies_used: &strategies_used,
                            budget_used: used,
                            budget: input.available,
                            max_tokens: preamble_budget,
                        },
                        tokenizer,
                    )
                },
                |p| (usize::from(p.is_some()), p.as_deref().map_or(0, |p| tokenizer.count(p))),
            );
            let preamble = preamble.filter(|p| tokenizer.count(p) <= preamble_budget);
            // Measured on the text as delivered, not on the sum of its parts.
            let text = render_text(preamble.as_deref(), &ordered);
            if tokenizer.count(&text) <= input.available || ordered.is_empty() {
                break preamble;
            }
            drop_worst(&mut ordered);
            tracer.steps.pop();
        };
        let fragments = ordered
            .iter()
            .map(|s| to_fragment(&s.piece, s.score, input.resource_id, tokenizer))
            .collect::<Result<Vec<_>, _>>()?;
        // Content-addressed: the same context for the same plan has the same id.
        let payload_id = stable_ulid(&[&input.plan_id, &agents_core::fragment::context_hash(&fragments)]);
        let mut builder = AssembledContext::builder(input.plan_id.clone(), input.budget)
            .payload_id(payload_id)
            .fragments(fragments)
            .strategies_used(strategies_used.clone());
        if let Some(p) = &preamble {
            builder = builder.preamble(p.clone());
        }
        let context = builder.build()?;
        let rendered_tokens = tokenizer.count(&render_text(preamble.as_deref(), &ordered));
        Ok(Assembly {
            context,
            trace: tracer.steps,
            selections: extra.selections,
            allocations: extra.allocations,
            runs: extra.runs,
            enforcement,
            candidates: extra.candidates + added,
            omitted,
            below_min_relevance: extra.below_min_relevance,
            rendered_tokens,
            assembly_micros: extra.started.elapsed().as_micros() as u64,
            refresh_threshold: self.settings.refresh_threshold,
            pieces: ordered,
            json_padding: 0,
        })
    }
}

struct FuseInput<'a> {
    pieces: Vec<Piece>,
    skeleton: Vec<Piece>,
    plan: Option<&'a PlanContext>,
    view: Option<&'a ContextView>,
    facts: &'a dyn FileFacts,
    deps: &'a dyn FileDependencies,
    renderer: &'a dyn DepthRenderer,
    tokenizer: &'a dyn TokenCounter,
    available: usize,
    fragment_budget: usize,
    allocations: &'a [Allocation],
    ranking: &'a dyn Ranking,
    query: String,
    strategies_used: Vec<String>,
    plan_id: String,
    budget: ContextBudget,
    resource_id: &'a str,
}

/// What phase 1 produced.
struct PhaseOne {
    selections: Vec<Selection>,
    allocations: Vec<Allocation>,
    runs: Vec<StrategyRun>,
}

struct Extra {
    selections: Vec<Selection>,
    allocations: Vec<Allocation>,
    runs: Vec<StrategyRun>,
    candidates: usize,
    /// Candidates below `context.query.min-relevance` left out.
    below_min_relevance: usize,
    /// What the policy excluded before fusion.
    excluded: Vec<Enforcement>,
    /// When the assembly began.
    started: std::time::Instant,
}

fn drop_worst(ordered: &mut Vec<ScoredFragment>) {
    // A parent's skeleton has its own share of the budget: retrieved pieces
    // go first, the worst of them first.
    let worst = (0..ordered.len())
        .min_by(|&a, &b| {
            let (x, y) = (&ordered[a], &ordered[b]);
            let skeleton = |s: &ScoredFragment| s.piece.role == PieceRole::Skeleton;
            skeleton(x).cmp(&skeleton(y)).then(x.score.total_cmp(&y.score)).then_with(|| b.cmp(&a))
        })
        .unwrap_or(0);
    if !ordered.is_empty() {
        ordered.remove(worst);
    }
}

/// The delivered text: the preamble, then every fragment under its heading.
pub fn render_text(preamble: Option<&str>, fragments: &[ScoredFragment]) -> String {
    let mut out = preamble.unwrap_or("").to_owned();
    for s in fragments {
        out.push_str(&s.piece.rendered());
    }
    out
}

/// The strategies whose candidates were used, in selection order, once each.
fn strategies_used(runs: &[StrategyRun]) -> Vec<String> {
    let mut used: Vec<String> = Vec::new();
    for run in runs {
        if let Some(s) = &run.strategy
            && !run.candidates.is_empty()
            && !used.contains(s)
        {
            used.push(s.clone());
        }
    }
    used
}

/// The delivered form of a packed piece. Its `token_count` is the count of
/// its `content`, the text every format delivers (the Markdown heading and the
/// XML or JSON around it are counted in the assembly's `rendered_tokens`).
fn to_fragment(
    piece: &Piece,
    score: f64,
    resource_id: &str,
    tokenizer: &dyn TokenCounter,
) -> Result<ContextFragment, ValidationError> {
    let source_path = if piece.path.is_empty() { piece.uko_node.clone() } else { piece.path.clone() };
    let mut provenance = FragmentProvenance::new(resource_id, source_path)?;
    if let Ok(range) = piece.source_range.parse::<SourceRange>() {
        provenance = provenance.with_source_range(range);
    }
    if !piece.strategy().is_empty() {
        provenance = provenance.with_strategy(piece.strategy())?;
    }
    let mut metadata = BTreeMap::new();
    metadata.insert("kind".to_owned(), piece.kind.clone());
    metadata.insert("score".to_owned(), format!("{score:.6}"));
    metadata.insert("evidence".to_owned(), format!("{:.6}", piece.relevance));
    metadata.insert("name_match".to_owned(), format!("{:.6}", piece.name_match));
    metadata.insert("standing".to_owned(), format!("{:.6}", piece.file_standing));
    // `met/words`: how many of the query's words the node's text holds.
    if piece.terms_met > 0 || piece.file_terms_near > 0 || piece.caller_terms > 0 || piece.callees > 0 {
        metadata.insert("terms".to_owned(), format!("{}/{}", piece.terms_met, piece.query_words));
        metadata.insert("near".to_owned(), piece.terms_near.to_string());
        metadata.insert("file_near".to_owned(), piece.file_terms_near.to_string());
        if piece.caller_terms > 0 {
            metadata.insert("caller".to_owned(), piece.caller_terms.to_string());
        }
        if piece.callees > 0 {
            metadata.insert("callees".to_owned(), piece.callees.to_string());
        }
    }
    if piece.called_by_named {
        metadata.insert("called_by_named".to_owned(), "1".to_owned());
    }
    metadata.insert("strategies".to_owned(), piece.strategies.join(","));
    metadata.insert("requested_depth".to_owned(), piece.requested_depth.to_string());
    if piece.role == PieceRole::Skeleton {
        metadata.insert("role".to_owned(), "skeleton".to_owned());
    }
    if let Some(note) = &piece.note {
        metadata.insert("note".to_owned(), note.clone());
    }
    let id = stable_ulid(&[&piece.uko_node, &piece.depth.to_string(), &piece.content]);
    let tokens = tokenizer.count(&piece.content) as u64;
    ContextFragment::builder(piece.uko_node.clone(), piece.content.clone(), tokens, provenance)
        .fragment_id(id)
        .detail_depth(piece.depth)
        .relevance_score(score.clamp(0.0, 1.0))
        .tier(piece.tier)
        .metadata(metadata)
        .build()
}

impl dyn ContextStrategy + '_ {
    /// The spec's `assemble` of one strategy: its candidates rendered,
    /// scored and packed under `budget` tokens. It is the pipeline's (its
    /// scorer, [`StoreRenderer`] and the packer), not a trait method, so the
    /// retrieval layer does not depend on the pipeline.
    pub fn assemble(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        budget: usize,
        plan: Option<&PlanContext>,
    ) -> Result<PackOutcome, StrategyError> {
        let candidates = self.retrieve(query, backends, plan)?;
        let renderer = StoreRenderer::new(backends.root, backends.index_id, backends.store, backends.search.graph())
            .within(&query.filter);
        let quality = self.capabilities().quality_score;
        let pieces = candidates
            .iter()
            .filter(|c| !c.evidence_only && c.content.is_none())
            .filter_map(|c| {
                let mut piece = c.propose(renderer.piece(&c.uri, c.depth)?, quality);
                piece.measure(backends.tokenizer);
                Some(piece)
            })
            .collect();
        let scored = WeightedScorer.score(pieces, plan, &agents_core::config::ScorerWeights::default());
        Ok(GreedyPacker.pack(scored, budget, &[], &renderer, backends.tokenizer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::ids::new_ulid;
    use agents_core::tokens::{Encoding, Tokenizer};
    use proptest::prelude::*;

    fn tok() -> Tokenizer {
        Tokenizer::new(Encoding::O200kBase)
    }

    /// Knows one header prototype, `db.h#DB.Put`, defined in `db.cc`.
    struct Prototypes;

    impl DepthRenderer for Prototypes {
        fn render(&self, _piece: &Piece, _depth: u8) -> Option<String> {
            None
        }

        fn definition_of(&self, uri: &str) -> Option<(String, String)> {
            (uri == "uko://r/db.h#DB.Put").then(|| ("uko://r/db.cc#DB.Put".to_owned(), "db.cc".to_owned()))
        }
    }

    #[test]
    fn a_declaration_gives_its_place_to_its_definition() {
        let candidate =
            |uri: &str, path: &str, score: f32| crate::retrieval::Candidate::new(uri, path, score, 9, "arce");
        let run = |candidates| StrategyRun {
            selected: "arce".to_owned(),
            strategy: Some("arce".to_owned()),
            fallbacks: Vec::new(),
            candidates,
            elapsed_ms: 0,
            error: None,
        };
        let mut runs = vec![
            run(vec![
                candidate("uko://r/db.h#DB.Put", "db.h", 0.9),
                candidate("uko://r/db.h#DB.Get", "db.h", 0.5),
                candidate("uko://r/db.cc#DB.Put", "db.cc", 0.2),
            ]),
            run(vec![candidate("uko://r/db.cc#DB.Put", "db.cc", 0.7), candidate("uko://r/db.h#DB.Put", "db.h", 0.6)]),
        ];
        let declared = definitions_for_declarations(&mut runs, &Prototypes);
        fn listed(run: &StrategyRun) -> Vec<(&str, &str, f32)> {
            run.candidates.iter().map(|c| (c.uri.as_str(), c.path.as_str(), c.score)).collect()
        }
        // The definition takes the prototype's place and score; where the run
        // held it already, its better place is kept, once.
        assert_eq!(listed(&runs[0]), [("uko://r/db.cc#DB.Put", "db.cc", 0.9), ("uko://r/db.h#DB.Get", "db.h", 0.5)]);
        assert_eq!(listed(&runs[1]), [("uko://r/db.cc#DB.Put", "db.cc", 0.7)]);
        assert_eq!(runs[0].candidates[0].note.as_deref(), Some("the definition of what db.h declares"));
        assert_eq!(declared.get("uko://r/db.cc#DB.Put").map(String::as_str), Some("uko://r/db.h#DB.Put"));
        assert_eq!(declared.len(), 1);
    }

    /// A store of two files' members and their texts.
    struct Members;

    impl Members {
        fn file(path: &str) -> Vec<(&'static str, &'static str, &'static str)> {
            match path {
                "tree.go" => vec![
                    (
                        "node.getValue",
                        "method",
                        "walk the tree: match the path against each node's prefix, then the route's wildcard",
                    ),
                    ("node.addRoute", "method", "add a route with the given path to the tree"),
                    ("countParams", "function", "count the wildcards in a path"),
                    ("nodeType", "variable", "path tree route match"),
                    ("tests.matches", "function", "the tree matches the route's path"),
                    (
                        "node.findCaseInsensitivePath",
                        "method",
                        "match the path case-insensitively against the tree's nodes",
                    ),
                    ("node", "struct", "match a request path against the route tree"),
                    // Its doc comment, outside its source, holds the words.
                    ("node.nextSegment", "function", "i := strings.IndexByte(s, '/')"),
                ],
                "tree_test.go" => vec![("TestTreeWildcard", "test", "match a request path against the route tree")],
                _ => Vec::new(),
            }
        }
    }

    impl DepthRenderer for Members {
        fn render(&self, _piece: &Piece, _depth: u8) -> Option<String> {
            None
        }

        fn file_members(&self, path: &str) -> Vec<agents_pack::piece::FileMember> {
            let mut at = 0;
            Members::file(path)
                .into_iter()
                .map(|(name, kind, text)| {
                    let bytes = at..at + text.len();
                    at = bytes.end + 1;
                    let doc = match name {
                        "node.nextSegment" => {
                            "nextSegment finds where the next segment of a request path ends in the route tree"
                        }
                        _ => "",
                    };
                    agents_pack::piece::FileMember {
                        uri: format!("uko://r/{path}#{name}"),
                        kind: kind.to_owned(),
                        bytes,
                        doc: doc.to_owned(),
                    }
                })
                .collect()
        }

        fn with_file_text(&self, path: &str, read: &mut dyn FnMut(&str)) -> bool {
            let text: Vec<&str> = Members::file(path).into_iter().map(|(_, _, text)| text).collect();
            read(&text.join("\n"));
            true
        }
    }

    fn leading(paths: &[&str], by_text_only: bool) -> Vec<LeadingFile> {
        paths.iter().map(|p| LeadingFile { path: (*p).to_owned(), by_text_only }).collect()
    }

    fn asked<'a>(
        terms: &'a agents_search::QueryTerms,
        names: &'a crate::retrieval::QueryNames,
        filter: &'a agents_search::SearchFilter,
    ) -> MembersAsked<'a> {
        MembersAsked { terms, names, filter }
    }

    #[test]
    fn members_of_leading_files_that_hold_the_question_are_proposed() {
        let everything = agents_search::SearchFilter::default();
        let question = "how does gin match a request path against the route tree";
        let (terms, names) = (agents_search::QueryTerms::new(question), crate::retrieval::QueryNames::new(question));
        let ranked = leading(&["tree_test.go", "tree.go"], false);
        let proposed: std::collections::HashSet<&str> = ["uko://r/tree.go#node.addRoute"].into_iter().collect();
        let out = member_candidates(&Members, &ranked, &proposed, &asked(&terms, &names, &everything), "arce", 9);
        // Not a test file's, not one already proposed, not a variable, a struct
        // or a test module's, and those whose text holds enough of the question.
        let uris: Vec<&str> = out.iter().map(|c| c.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "uko://r/tree.go#node.getValue",
                "uko://r/tree.go#node.findCaseInsensitivePath",
                "uko://r/tree.go#node.nextSegment"
            ]
        );
        assert!(out.iter().all(|c| c.score == 0.0 && c.path == "tree.go" && c.strategy == "arce" && c.depth == 9));
        assert!(
            out[0].note.as_deref().is_some_and(|n| n.contains("holds 5 of the query's 7 words")),
            "{:?}",
            out[0].note
        );
        // Nor against the request's kinds or paths.
        let modules = agents_search::SearchFilter { kinds: vec!["module".to_owned()], ..Default::default() };
        assert!(
            member_candidates(&Members, &ranked, &proposed, &asked(&terms, &names, &modules), "arce", 9).is_empty()
        );
        let elsewhere = agents_search::SearchFilter { paths_prefix: vec!["src/".to_owned()], ..Default::default() };
        assert!(
            member_candidates(&Members, &ranked, &proposed, &asked(&terms, &names, &elsewhere), "arce", 9).is_empty()
        );
        // One the query names outright is proposed whatever words its text
        // holds, beside the three holding most.
        let question = "countParams in the route tree";
        let (terms, names) = (agents_search::QueryTerms::new(question), crate::retrieval::QueryNames::new(question));
        let out = member_candidates(&Members, &ranked, &proposed, &asked(&terms, &names, &everything), "arce", 9);
        let uris: Vec<&str> = out.iter().map(|c| c.uri.as_str()).collect();
        assert_eq!(
            uris,
            ["uko://r/tree.go#countParams", "uko://r/tree.go#node.getValue", "uko://r/tree.go#node.nextSegment"]
        );
        assert!(
            out[0].note.as_deref().is_some_and(|n| n.contains("the query names; its text holds 1 of")),
            "{:?}",
            out[0].note
        );
        // A question without content words proposes nothing.
        let (terms, names) =
            (agents_search::QueryTerms::new("how does it"), crate::retrieval::QueryNames::new("how does it"));
        assert!(
            member_candidates(&Members, &ranked, &proposed, &asked(&terms, &names, &everything), "arce", 9).is_empty()
        );
    }

    /// [`Members`], where `node.getValue` only declares what `impl.go` defines.
    struct Declaring;

    impl DepthRenderer for Declaring {
        fn render(&self, _piece: &Piece, _depth: u8) -> Option<String> {
            None
        }

        fn file_members(&self, path: &str) -> Vec<agents_pack::piece::FileMember> {
            Members.file_members(path)
        }

        fn with_file_text(&self, path: &str, read: &mut dyn FnMut(&str)) -> bool {
            Members.with_file_text(path, read)
        }

        fn definition_of(&self, uri: &str) -> Option<(String, String)> {
            (uri == "uko://r/tree.go#node.getValue")
                .then(|| ("uko://r/impl.go#impl.getValue".to_owned(), "impl.go".to_owned()))
        }
    }

    #[test]
    fn a_member_that_only_declares_proposes_its_definition_once() {
        let everything = agents_search::SearchFilter::default();
        let question = "how does gin match a request path against the route tree";
        let (terms, names) = (agents_search::QueryTerms::new(question), crate::retrieval::QueryNames::new(question));
        let ranked = leading(&["tree.go"], false);
        let uris = |proposed: &[&str]| -> Vec<(String, String)> {
            let proposed: std::collections::HashSet<&str> = proposed.iter().copied().collect();
            member_candidates(&Declaring, &ranked, &proposed, &asked(&terms, &names, &everything), "arce", 9)
                .into_iter()
                .map(|c| (c.uri, c.path))
                .collect()
        };
        let out = uris(&["uko://r/tree.go#node.addRoute"]);
        assert_eq!(out[0], ("uko://r/impl.go#impl.getValue".to_owned(), "impl.go".to_owned()));
        assert_eq!(out.len(), 3, "{out:?}");
        let first = member_candidates(
            &Declaring,
            &ranked,
            &std::collections::HashSet::new(),
            &asked(&terms, &names, &everything),
            "arce",
            9,
        );
        assert_eq!(first[0].note.as_deref(), Some("the definition of what tree.go declares"));
        // A definition a strategy already proposed is not proposed again.
        let out = uris(&["uko://r/tree.go#node.addRoute", "uko://r/impl.go#impl.getValue"]);
        assert!(out.iter().all(|(uri, _)| uri.starts_with("uko://r/tree.go#")), "{out:?}");
        assert_eq!(out.len(), 2, "{out:?}");
    }

    #[test]
    fn a_file_known_by_its_whole_text_proposes_members_holding_two_words() {
        let everything = agents_search::SearchFilter::default();
        // Seven content words: a strategy's file needs three of them in a member.
        let question = "where does a lookup walk the tree matching each segment wildcard";
        let (terms, names) = (agents_search::QueryTerms::new(question), crate::retrieval::QueryNames::new(question));
        let proposed = std::collections::HashSet::new();
        let uris = |leading: &[LeadingFile]| -> Vec<String> {
            member_candidates(&Members, leading, &proposed, &asked(&terms, &names, &everything), "arce", 9)
                .into_iter()
                .map(|c| c.uri)
                .collect()
        };
        let by_pieces = uris(&leading(&["tree.go"], false));
        let by_text = uris(&leading(&["tree.go"], true));
        assert_eq!(by_pieces, ["uko://r/tree.go#node.getValue"]);
        assert_eq!(
            by_text,
            [
                "uko://r/tree.go#node.getValue",
                "uko://r/tree.go#node.findCaseInsensitivePath",
                "uko://r/tree.go#node.nextSegment"
            ]
        );
    }

    /// Who calls what, from a table: `Printer.print_line` calls a helper of
    /// its file, a test module's function, a function of a file the evidence
    /// does not rank, one a strategy proposed, and eleven more helpers.
    struct Calls;

    impl DepthRenderer for Calls {
        fn render(&self, _piece: &Piece, _depth: u8) -> Option<String> {
            None
        }

        fn callees(&self, uri: &str) -> Vec<(String, String)> {
            let of = |names: &[String]| -> Vec<(String, String)> {
                names.iter().map(|n| (format!("uko://r/printer.rs#{n}"), "printer.rs".to_owned())).collect()
            };
            match uri {
                "uko://r/printer.rs#Printer.print_line" => {
                    let mut out = of(&["Printer.preprocess".to_owned(), "tests.helper".to_owned()]);
                    out.push(("uko://r/vendor.rs#strip".to_owned(), "vendor.rs".to_owned()));
                    out.extend(of(&["Printer.new".to_owned()]));
                    out.extend(of(&(0..11).map(|i| format!("Printer.step{i}")).collect::<Vec<_>>()));
                    out
                }
                "uko://r/printer.rs#Printer.print_header" => {
                    of(&["Printer.preprocess".to_owned(), "Printer.width".to_owned()])
                }
                _ => Vec::new(),
            }
        }
    }

    #[test]
    fn what_the_answers_functions_call_is_proposed_once_from_ranked_files() {
        let caller = |name: &str| {
            crate::retrieval::Candidate::new(format!("uko://r/printer.rs#{name}"), "printer.rs", 0.9, 9, "arce")
        };
        let (line, header, class) = (caller("Printer.print_line"), caller("Printer.print_header"), caller("Printer"));
        let proposed: std::collections::HashSet<&str> = ["uko://r/printer.rs#Printer.new"].into_iter().collect();
        let ranked = |path: &str| path == "printer.rs";
        let out = callee_candidates(&Calls, &[&line, &class, &header], &proposed, &ranked, "arce", 9);
        let uris: Vec<&str> = out.iter().map(|c| c.uri.trim_start_matches("uko://r/printer.rs#")).collect();
        // Not a test module's, not one of a file without standing, not one
        // already proposed; at most eight from one caller, each once.
        let mut expected = vec!["Printer.preprocess".to_owned()];
        expected.extend((0..7).map(|i| format!("Printer.step{i}")));
        expected.push("Printer.width".to_owned());
        assert_eq!(uris, expected);
        assert!(out.iter().all(|c| c.score == 0.0 && c.path == "printer.rs" && c.strategy == "arce" && c.depth == 9));
        assert_eq!(out[0].note.as_deref(), Some("called by print_line"));
        assert_eq!(out[8].note.as_deref(), Some("called by print_header"));
        // Without callers, or from a renderer without a store, nothing.
        assert!(callee_candidates(&Calls, &[], &proposed, &ranked, "arce", 9).is_empty());
        assert!(callee_candidates(&Members, &[&line], &proposed, &ranked, "arce", 9).is_empty());
    }

    fn fragment(
        resource: &str,
        i: usize,
        content: &str,
        relevance: f64,
        tier: ContextTier,
        age: i64,
    ) -> ContextFragment {
        let provenance = FragmentProvenance::new(resource, format!("src/f{}.py", i % 7)).unwrap();
        ContextFragment::builder(format!("uko://r/src/f{}.py#s{i}", i % 7), content, 0, provenance)
            .detail_depth(9)
            .relevance_score(relevance)
            .tier(tier)
            .created_at(chrono::DateTime::from_timestamp(1_700_000_000 - age, 0).unwrap())
            .build()
            .unwrap()
    }

    /// The default pipeline with no relevance floor (the fixtures' relevances
    /// are arbitrary); [`fragments_below_min_relevance_are_not_packed`] tests the floor.
    fn pipeline() -> Pipeline {
        let settings = PipelineSettings { min_relevance: 0.0, ..PipelineSettings::default() };
        PipelineBuilder::new().build(&PipelineConfig::default(), settings).unwrap()
    }

    #[test]
    fn fragments_below_min_relevance_are_not_packed() {
        let resource = new_ulid();
        let fragments: Vec<_> = [0.1, 0.29, 0.3, 0.8]
            .iter()
            .enumerate()
            .map(|(i, r)| fragment(&resource, i, &format!("body {i}"), *r, ContextTier::Warm, 0))
            .collect();
        let budget = ContextBudget::new(4000, 0).unwrap();
        let kept = |min_relevance: f64| {
            let settings = PipelineSettings { min_relevance, ..PipelineSettings::default() };
            let out = PipelineBuilder::new()
                .build(&PipelineConfig::default(), settings)
                .unwrap()
                .assemble("p", &fragments, budget, "relevance", &tok())
                .unwrap();
            let mut kept: Vec<String> =
                out.context.fragments().iter().map(|f| f.uko_node().rsplit('#').next().unwrap().to_owned()).collect();
            kept.sort();
            (kept, out.below_min_relevance)
        };
        assert_eq!(PipelineSettings::default().min_relevance, 0.3, "context.query.min-relevance's default");
        assert_eq!(kept(0.3), (vec!["s2".to_owned(), "s3".to_owned()], 2));
        assert_eq!(kept(0.5), (vec!["s3".to_owned()], 3));
        assert_eq!(kept(0.0).0.len(), 4);
    }

    #[test]
    fn a_child_payload_never_holds_a_skeleton_node_twice() {
        let tokenizer = tok();
        // Retrieval found `a` (full source) and `b`; the parent's skeleton holds
        // `a` again (its signature) and `c`.
        let retrieved = |uri: &str, content: &str| {
            let mut p = Piece { relevance: 0.9, quality: 0.5, ..Piece::new(uri, "function", "src/x.py", content, 9) };
            p.measure(&tokenizer);
            p
        };
        let skeleton = |uri: &str, content: &str| {
            let mut p = Piece {
                role: PieceRole::Skeleton,
                relevance: 0.5,
                ..Piece::new(uri, "function", "src/x.py", content, 4)
            };
            p.measure(&tokenizer);
            p
        };
        let pieces = vec![
            retrieved("uko://r/src/x.py#a", "def a(x):\n    return x + 1\n"),
            retrieved("uko://r/src/x.py#b", "def b(y):\n    return y * 2\n"),
        ];
        let parent = vec![skeleton("uko://r/src/x.py#a", "def a(x)"), skeleton("uko://r/src/x.py#c", "def c(z)")];
        let budget = ContextBudget::new(4000, 0).unwrap();
        let out = pipeline()
            .fuse(
                Tracer { steps: Vec::new() },
                FuseInput {
                    pieces,
                    skeleton: parent,
                    plan: None,
                    view: None,
                    facts: &enforcer::NoFacts,
                    deps: &NoDependencies,
                    renderer: &InlineRenderer,
                    tokenizer: &tokenizer,
                    available: 4000,
                    fragment_budget: 3000,
                    allocations: &[],
                    ranking: &ByRelevance,
                    query: "a".to_owned(),
                    strategies_used: vec!["s".to_owned()],
                    plan_id: "child".to_owned(),
                    budget,
                    resource_id: &new_ulid(),
                },
                Extra {
                    selections: Vec::new(),
                    allocations: Vec::new(),
                    runs: Vec::new(),
                    candidates: 2,
                    below_min_relevance: 0,
                    excluded: Vec::new(),
                    started: Instant::now(),
                },
            )
            .unwrap();
        let mut nodes: Vec<(&str, u8, bool)> = out
            .pieces
            .iter()
            .map(|s| (s.piece.uko_node.as_str(), s.piece.depth, s.piece.role == PieceRole::Skeleton))
            .collect();
        nodes.sort();
        assert_eq!(
            nodes,
            [("uko://r/src/x.py#a", 9, false), ("uko://r/src/x.py#b", 9, false), ("uko://r/src/x.py#c", 4, true)],
            "a is delivered once, as retrieved (at depth 9), and the skeleton keeps c"
        );
        let dedup = out.trace.iter().find(|s| s.component == "fragment-deduplicator").unwrap();
        assert_eq!((dedup.input, dedup.output), (4, 3), "the skeleton went through deduplication");
    }

    /// The ten components in the order they run: the skeleton of the parent
    /// plan is compressed before fusion starts.
    const RUN_ORDER: [PipelineComponent; 10] = [
        PipelineComponent::StrategySelector,
        PipelineComponent::BudgetAllocator,
        PipelineComponent::StrategyExecutor,
        PipelineComponent::SkeletonCompressor,
        PipelineComponent::FragmentDeduplicator,
        PipelineComponent::DetailDepthResolver,
        PipelineComponent::FragmentScorer,
        PipelineComponent::BudgetPacker,
        PipelineComponent::FragmentOrderer,
        PipelineComponent::PreambleGenerator,
    ];

    #[test]
    fn every_component_runs_even_on_empty_input() {
        let budget = ContextBudget::new(1000, 0).unwrap();
        let out = pipeline().assemble("plan", &[], budget, "relevance", &tok()).unwrap();
        let ran: Vec<&str> = out.trace.iter().map(|s| s.component).collect();
        assert_eq!(ran, RUN_ORDER.map(PipelineComponent::key));
        let mut table = PipelineComponent::ALL;
        table.sort_unstable();
        let mut run = RUN_ORDER;
        run.sort_unstable();
        assert_eq!(run, table, "every component of the table runs, once");
        assert!(out.context.fragments().is_empty() && out.context.is_within_budget());
    }

    #[test]
    fn every_component_of_the_table_is_chosen_by_its_key_and_traced() {
        let builder = PipelineBuilder::new();
        let resource = new_ulid();
        let fragments: Vec<_> =
            (0..4).map(|i| fragment(&resource, i, &format!("body {i}"), 0.5, ContextTier::Warm, 0)).collect();
        for component in PipelineComponent::ALL {
            // The built-in, registered again under another name for this key.
            let builtin = builder.registered.get(&(component.key(), "default".to_owned())).cloned();
            let builtin = builtin.unwrap_or_else(|| panic!("{component} has no built-in"));
            assert_eq!(builtin.component(), Some(component));
            // Chosen by name through the configuration layer, by its key.
            let mut resolved = agents_core::config::ResolvedConfig::default();
            let key = format!("context.pipeline.{component}");
            resolved.set_override(&key, "mine", agents_core::config::Origin::Flag("--set".into())).unwrap();
            let pipeline = builder
                .clone()
                .register("mine", builtin)
                .build(&resolved.config().context.pipeline, PipelineSettings::default())
                .unwrap();
            assert_eq!(pipeline.implementation(component), "mine");
            let out =
                pipeline.assemble("p", &fragments, ContextBudget::new(2000, 0).unwrap(), "relevance", &tok()).unwrap();
            assert_eq!(out.context.fragments().len(), 4, "{component}");
            let step = out.trace.iter().find(|s| s.component == component.key());
            assert_eq!(step.map(|s| s.implementation.as_str()), Some("mine"), "{component} in the trace");
            let others = out.trace.iter().filter(|s| s.component != component.key() && s.implementation == "mine");
            assert_eq!(others.count(), 0, "only {component} is `mine`");
        }
    }

    #[test]
    fn below_the_minimum_budget_is_an_error_not_an_empty_payload() {
        let budget = ContextBudget::new(100, 0).unwrap();
        let error = pipeline().assemble("plan", &[], budget, "relevance", &tok()).unwrap_err();
        assert!(matches!(error, PipelineError::BudgetTooSmall { budget: 100, min: 500 }), "{error}");
    }

    #[test]
    fn unknown_component_names_its_key() {
        let config = PipelineConfig { fragment_orderer: "nope".into(), ..PipelineConfig::default() };
        let error = PipelineBuilder::new().build(&config, PipelineSettings::default()).err().unwrap();
        assert_eq!(
            error.to_string(),
            "context.pipeline.fragment-orderer: no fragment-orderer named \"nope\" is registered; known: default, dependency"
        );
        let error = pipeline().assemble("p", &[], ContextBudget::new(1000, 0).unwrap(), "loudest", &tok()).unwrap_err();
        assert!(error.to_string().contains("known: recency, relevance, tiered"), "{error}");
    }

    struct Reverse;
    impl FragmentOrderer for Reverse {
        fn order(&self, mut packed: Vec<ScoredFragment>, _: &dyn FileDependencies) -> Vec<ScoredFragment> {
            packed.sort_by(|a, b| b.piece.uko_node.cmp(&a.piece.uko_node));
            packed
        }
    }

    #[test]
    fn a_custom_component_registered_and_configured_runs() {
        let config = PipelineConfig { fragment_orderer: "reverse".into(), ..PipelineConfig::default() };
        let pipeline = PipelineBuilder::new()
            .register("reverse", Component::Orderer(Arc::new(Reverse)))
            .build(&config, PipelineSettings::default())
            .unwrap();
        assert_eq!(pipeline.implementations()[7], ("fragment-orderer", "reverse"));
        let resource = new_ulid();
        let fragments: Vec<_> =
            (0..5).map(|i| fragment(&resource, i, &format!("body {i}"), 0.5, ContextTier::Warm, 0)).collect();
        let out =
            pipeline.assemble("p", &fragments, ContextBudget::new(2000, 0).unwrap(), "relevance", &tok()).unwrap();
        let step = out.trace.iter().find(|s| s.component == "fragment-orderer").unwrap();
        assert_eq!(step.implementation, "reverse");
        let uris: Vec<&str> = out.context.fragments().iter().map(|f| f.uko_node()).collect();
        let mut sorted = uris.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(uris, sorted);
    }

    #[test]
    fn ranking_strategies_decide_what_survives_a_tight_budget() {
        let resource = new_ulid();
        let body = |i: usize| (0..30).map(|l| format!("fragment {i} line {l} of text\n")).collect::<String>();
        let fragments = [
            fragment(&resource, 0, &body(0), 0.9, ContextTier::Cold, 900),
            fragment(&resource, 1, &body(1), 0.2, ContextTier::Hot, 500),
            fragment(&resource, 2, &body(2), 0.5, ContextTier::Warm, 0),
        ];
        let order = |ranking: &str| -> Vec<String> {
            let mut scored = WeightedScorer.score(
                fragments
                    .iter()
                    .map(|f| {
                        let mut p = components::tests::piece(f.uko_node(), "", f.relevance_score(), f.content());
                        p.tier = f.tier();
                        p.modified = Some(f.created_at().timestamp());
                        p
                    })
                    .collect(),
                None,
                &ScorerWeights::default(),
            );
            pipeline().ranking(ranking).unwrap().rank(&mut scored);
            scored.iter().map(|s| s.piece.uko_node.rsplit('#').next().unwrap().to_owned()).collect()
        };
        assert_eq!(order("relevance"), ["s0", "s2", "s1"]);
        assert_eq!(order("recency"), ["s2", "s1", "s0"]);
        assert_eq!(order("tiered"), ["s1", "s2", "s0"]);
        // One-line fragments that cannot be cut, and a budget that holds two of
        // the three: the ranking picks which two.
        let short: Vec<ContextFragment> = fragments
            .iter()
            .map(|f| {
                let content = format!("body of {}", f.uko_node().rsplit('#').next().unwrap());
                f.clone().into_builder().content(content).build().unwrap()
            })
            .collect();
        let roomy =
            pipeline().assemble("p", &short, ContextBudget::new(4000, 0).unwrap(), "relevance", &tok()).unwrap();
        // What one fragment costs in the Markdown (heading included) at the
        // depth a tight budget resolves it to (its content stays whole).
        let one = roomy
            .pieces
            .iter()
            .map(|s| {
                let mut p = s.piece.clone();
                p.depth = 0;
                p.measure(&tok());
                p.tokens
            })
            .max()
            .unwrap();
        let available = ((one * 25) as f64 / 9.0).ceil() as u64;
        let small = PipelineBuilder::new()
            .build(
                &PipelineConfig::default(),
                PipelineSettings { min_useful_budget: 1, min_relevance: 0.0, ..PipelineSettings::default() },
            )
            .unwrap();
        let kept = |ranking| {
            let out = small.assemble("p", &short, ContextBudget::new(available, 0).unwrap(), ranking, &tok()).unwrap();
            let mut kept: Vec<String> =
                out.context.fragments().iter().map(|f| f.uko_node().rsplit('#').next().unwrap().to_owned()).collect();
            kept.sort();
            kept
        };
        assert_eq!(kept("relevance"), ["s0", "s2"]);
        assert_eq!(kept("recency"), ["s1", "s2"]);
        assert_eq!(kept("tiered"), ["s1", "s2"]);
    }

    #[test]
    fn output_is_deterministic_apart_from_timestamps() {
        let resource = new_ulid();
        let fragments: Vec<_> = (0..12)
            .map(|i| fragment(&resource, i, &format!("body {i}\n").repeat(i + 1), 0.3, ContextTier::Warm, 0))
            .collect();
        let run =
            || pipeline().assemble("p", &fragments, ContextBudget::new(600, 0).unwrap(), "relevance", &tok()).unwrap();
        let (a, b) = (run(), run());
        assert_eq!(a.to_markdown(), b.to_markdown());
        assert_eq!(a.context.context_hash(), b.context.context_hash());
        let ids = |x: &Assembly| x.context.fragments().iter().map(|f| f.fragment_id().to_owned()).collect::<Vec<_>>();
        assert_eq!(ids(&a), ids(&b));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The rendered output, measured with the real tokenizer, never exceeds the
        /// budget, and a payload is always within its budget.
        #[test]
        fn budget_is_never_exceeded(
            bodies in prop::collection::vec(("[a-z ]{0,40}", 0usize..60, 0.0f64..1.0, 0u8..=9), 0..25),
            available in 500u64..4000,
        ) {
            let resource = new_ulid();
            let fragments: Vec<ContextFragment> = bodies
                .iter()
                .enumerate()
                .map(|(i, (line, lines, relevance, depth))| {
                    let content = format!("{line}\n").repeat(*lines);
                    let provenance = FragmentProvenance::new(&resource, format!("src/f{}.rs", i % 5)).unwrap();
                    ContextFragment::builder(format!("uko://r/f{i}"), content, 0, provenance)
                        .detail_depth(*depth)
                        .relevance_score(*relevance)
                        .build()
                        .unwrap()
                })
                .collect();
            let budget = ContextBudget::new(available, 0).unwrap();
            let out = pipeline().assemble("p", &fragments, budget, "relevance", &tok()).unwrap();
            prop_assert!(out.context.is_within_budget());
            prop_assert!(tok().count(&out.to_markdown()) as u64 <= available);
            prop_assert_eq!(out.rendered_tokens, tok().count(&out.to_markdown()));
            prop_assert_eq!(out.trace.iter().filter(|s| s.component.parse::<PipelineComponent>().is_ok()).count(), 10);
        }
    }
}
