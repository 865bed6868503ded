//! The main use case: context for a request ([`Engine::query`]).
//!
//! Both adapters call it: `agents query` (and `agents project context
//! simulate`) with options parsed from flags or a request file, the MCP
//! server's `request_context` with options from the tool's arguments. The
//! options are typed and their defaults live here once ([`QueryOptions::new`]);
//! an adapter parses its input into them, calls, and renders the
//! [`QueryRun`].
//!
//! A run: the request is built (the given request, or the defaults, with the
//! overrides applied over it), the budget is derived and checked against
//! `context.budget.min-useful-budget`, the resource is brought up to date,
//! the project's policy view for the phase is checked (a resource the view
//! excludes is refused with [`PipelineError::ResourceExcluded`]), the
//! project's settings and the phase's defaults fill what the request leaves
//! open, the project's context entries the role sees join the candidates,
//! and the pipeline assembles and fits the text to the format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_acms::pipeline::format::OutputFormat;
use agents_acms::pipeline::piece::StoreRenderer;
use agents_acms::pipeline::{Assembly, PipelineError};
use agents_acms::query::{QueryError, SyncReport};
use agents_acms::retrieval::registry::Fallback;
use agents_core::fragment::ContextTier;
use agents_core::policy::Phase;
use agents_core::project_context::ProjectContextSettings;
use agents_core::request::{ContextRequest, ContextRequestBuilder, Depth, RankingStrategy, TemporalScope};
use agents_core::tier::ActorRole;
use agents_search::SearchFilter;
use agents_uko::ontology::Ontology;
use serde::Serialize;

use crate::{AssembleOptions, BudgetDerivation, Engine, EngineError, IndexOutcome};

/// The depth when neither the request nor the project nor the phase gives
/// one: full source for the best matches.
pub const DEFAULT_DEPTH: u8 = 9;
/// The role whose context entries a query sees when none is named.
pub const DEFAULT_ROLE: ActorRole = ActorRole::Executor;
/// The plan phase whose policy view applies when none is named.
pub const DEFAULT_PHASE: Phase = Phase::Default;
/// The format the context is delivered in when none is named.
pub const DEFAULT_FORMAT: OutputFormat = OutputFormat::Md;

/// Request fields given one by one (flags), applied over the request.
#[derive(Clone, Debug, Default)]
pub struct RequestOverrides {
    /// The query text.
    pub text: Option<String>,
    pub entities: Vec<String>,
    pub focus: Vec<String>,
    /// UKO node types.
    pub kinds: Vec<String>,
    /// Preferred strategies; when given, neither the project's nor the
    /// phase's preferred strategies apply.
    pub strategies: Vec<String>,
    pub required_backends: Vec<String>,
    pub breadth: Option<u32>,
    pub depth: Option<Depth>,
    /// Turns the depth gradient off.
    pub no_depth_gradient: bool,
    pub temporal: Option<TemporalScope>,
    pub ranking: Option<RankingStrategy>,
    pub max_tokens: Option<u64>,
    pub priority: Option<f64>,
    pub purpose: Option<String>,
}

/// What [`Engine::query`] is asked for, typed and with its defaults resolved.
#[derive(Clone, Debug)]
pub struct QueryOptions {
    /// A directory inside the repository (indexed or refreshed first).
    pub path: PathBuf,
    /// A dry run over this project's first linked resource instead of `path`
    /// (`agents project context simulate`).
    pub project: Option<String>,
    /// A whole request (a request file, a tool call). With one, the project's
    /// breadth, depth and temporal scope and the phase's depth are not
    /// applied; without one, the request starts from [`DEFAULT_DEPTH`].
    pub request: Option<ContextRequestBuilder>,
    /// Fields applied over the request.
    pub overrides: RequestOverrides,
    /// Size the budget from this model's window (`[models]`).
    pub model: Option<String>,
    /// Candidates kept from each strategy; `None` lets the budget decide
    /// ([`crate::candidates_for_budget`]).
    pub candidates: Option<usize>,
    /// Only code under these path prefixes.
    pub under: Vec<String>,
    /// The role whose context entries join the assembly.
    pub role: ActorRole,
    /// The plan phase whose policy view and defaults apply.
    pub phase: Phase,
    /// The plan the context is for.
    pub plan: Option<String>,
    /// The format the text is delivered (and fitted to the budget) in.
    pub format: OutputFormat,
}

impl QueryOptions {
    /// Options for a query over the repository at `path`, every other field
    /// at its default.
    pub fn new(path: impl Into<PathBuf>) -> QueryOptions {
        QueryOptions {
            path: path.into(),
            project: None,
            request: None,
            overrides: RequestOverrides::default(),
            model: None,
            candidates: None,
            under: Vec::new(),
            role: DEFAULT_ROLE,
            phase: DEFAULT_PHASE,
            plan: None,
            format: DEFAULT_FORMAT,
        }
    }
}

/// One assembled context and how it was made: what `agents query` prints and
/// what the MCP server's `request_context` tool returns.
#[derive(Debug)]
pub struct QueryRun {
    /// The request as finally built.
    pub request: ContextRequest,
    /// The assembly: the payload, its pieces, the trace, the enforcement.
    pub assembly: Assembly,
    pub derivation: BudgetDerivation,
    /// What serves each backend kind.
    pub backends: BTreeMap<String, String>,
    pub sync: SyncReport,
    pub outcome: Arc<IndexOutcome>,
    pub phase: Phase,
    /// The context as delivered in the requested format, within the budget
    /// (its token count is `assembly.rendered_tokens`).
    pub text: String,
}

/// The run's report (`agents query --json`): the AssembledContext (spec
/// field names) and how it was made.
#[derive(Serialize)]
pub struct QueryReport<'a> {
    query: String,
    /// The strategy selected first (asked for, or the selector's best).
    requested_strategy: String,
    /// The strategy whose candidates lead the context (after any fallback).
    strategy: String,
    /// Every strategy passed over on the way, and why.
    fallbacks: Vec<Fallback>,
    #[serde(flatten)]
    assembly: &'a Assembly,
    is_within_budget: bool,
    remaining_tokens: u64,
    budget_derivation: &'a BudgetDerivation,
    /// The files of the context, ranked by their fragments' relevance.
    ranked_files: Vec<String>,
    backends: &'a BTreeMap<String, String>,
    sync: &'a SyncReport,
}

impl QueryRun {
    /// The run's report.
    pub fn report(&self) -> QueryReport<'_> {
        let assembly = &self.assembly;
        QueryReport {
            query: self.request.query().unwrap_or_default().to_owned(),
            requested_strategy: assembly.selections.first().map(|s| s.strategy.clone()).unwrap_or_default(),
            strategy: assembly.runs.iter().find_map(|r| r.strategy.clone()).unwrap_or_default(),
            fallbacks: assembly.runs.iter().flat_map(|r| r.fallbacks.iter().cloned()).collect(),
            assembly,
            is_within_budget: assembly.is_within_budget(),
            remaining_tokens: assembly.remaining_tokens(),
            budget_derivation: &self.derivation,
            ranked_files: assembly.ranked_files(),
            backends: &self.backends,
            sync: &self.sync,
        }
    }
}

/// A plan phase's assembly defaults (`[context.phases.<phase>]`), with the
/// strategies `context.strategies.enabled` leaves out dropped.
struct PhaseDefaults {
    strategies: Vec<String>,
    depth: Option<Depth>,
    /// Tiers whose context entries join the assembly.
    tiers: Vec<ContextTier>,
}

impl PhaseDefaults {
    /// The defaults of `phase` in `config`; `None` for the `default` phase.
    fn of(config: &agents_core::config::Config, phase: Phase) -> Option<PhaseDefaults> {
        let defaults = config.context.phases.of(phase)?;
        let enabled = &config.context.strategies.enabled;
        Some(PhaseDefaults {
            strategies: defaults.strategies.iter().filter(|s| enabled.contains(s)).cloned().collect(),
            depth: defaults.depth.clone(),
            tiers: ContextTier::ALL.into_iter().filter(|t| defaults.tiers.contains(t)).collect(),
        })
    }
}

/// How the resource at a path is brought up to date before an assembly.
pub type Refresher<'a> = &'a dyn Fn(&Path) -> Result<Arc<IndexOutcome>, EngineError>;

/// The request from `options.request` (or the defaults) with the overrides
/// applied over it. Project settings fill what neither the request nor the
/// overrides say: preferred strategies, breadth, depth and temporal scope;
/// the phase's defaults fill what the project's settings leave unset:
/// preferred strategies and depth.
fn build_request(
    options: &QueryOptions,
    project: Option<&ProjectContextSettings>,
    phase: Option<&PhaseDefaults>,
) -> Result<ContextRequest, EngineError> {
    let o = &options.overrides;
    let mut builder = match &options.request {
        Some(request) => request.clone().build()?.into_builder(),
        None => ContextRequest::builder().depth(Depth::level(DEFAULT_DEPTH)?),
    };
    if let Some(text) = &o.text {
        builder = builder.query(text.clone());
    }
    let no_request = options.request.is_none();
    if let Some(phase) = phase
        && no_request
    {
        if let Some(depth) = &phase.depth {
            builder = builder.depth(depth.clone());
        }
        if o.strategies.is_empty() && !phase.strategies.is_empty() {
            builder = builder.preferred_strategies(phase.strategies.clone());
        }
    }
    if let Some(project) = project {
        if no_request {
            builder = builder.breadth(project.default_breadth()).temporal(project.temporal_scope());
            if let Some(depth) = project.default_depth() {
                builder = builder.depth(depth.clone());
            }
        }
        if o.strategies.is_empty() && !project.strategies().is_empty() {
            builder = builder.preferred_strategies(project.strategies().to_vec());
        }
    }
    if !o.entities.is_empty() {
        builder = builder.entities(o.entities.clone());
    }
    if !o.focus.is_empty() {
        builder = builder.focus(o.focus.clone());
    }
    if !o.kinds.is_empty() {
        builder = builder.uko_types(o.kinds.clone());
    }
    if !o.strategies.is_empty() {
        builder = builder.preferred_strategies(o.strategies.clone());
    }
    if !o.required_backends.is_empty() {
        builder = builder.required_backends(o.required_backends.clone());
    }
    if let Some(breadth) = o.breadth {
        builder = builder.breadth(breadth);
    }
    if let Some(depth) = &o.depth {
        builder = builder.depth(depth.clone());
    }
    if o.no_depth_gradient {
        builder = builder.depth_gradient(false);
    }
    if let Some(temporal) = o.temporal {
        builder = builder.temporal(temporal);
    }
    if let Some(ranking) = o.ranking {
        builder = builder.ranking(ranking);
    }
    if let Some(max_tokens) = o.max_tokens {
        builder = builder.max_tokens(max_tokens);
    }
    if let Some(priority) = o.priority {
        builder = builder.priority(priority);
    }
    if let Some(purpose) = &o.purpose {
        builder = builder.purpose(purpose.clone());
    }
    Ok(builder.build()?)
}

impl Engine {
    /// Context for a request: see the module documentation. The resource is
    /// refreshed as `agents index` would (waiting for another indexer).
    pub fn query(&self, options: &QueryOptions) -> Result<QueryRun, EngineError> {
        let progress = agents_acms::indexing::NoProgress;
        self.query_with(options, &|path| {
            let index = agents_acms::IndexOptions { wait_for_lock: true, ..self.index_options() };
            Ok(Arc::new(self.index_path(path, crate::IndexMode::Refresh, &index, &progress)?))
        })
    }

    /// [`Engine::query`] with the resource brought up to date by `refresh`
    /// (a progress bar, a live index).
    pub fn query_with(&self, options: &QueryOptions, refresh: Refresher<'_>) -> Result<QueryRun, EngineError> {
        let config = self.config.config();
        let phase = options.phase;
        let phase_defaults = PhaseDefaults::of(config, phase);
        let request = build_request(options, None, phase_defaults.as_ref())?;
        let words = agents_search::code_tokens(request.query().unwrap_or_default());
        if words.is_empty() && request.focus().is_empty() && request.entities().is_empty() && options.plan.is_none() {
            return Err(QueryError::EmptyQuery.into());
        }
        let (budget, derivation) = self.budget(options.model.as_deref(), request.max_tokens())?;
        let min = config.context.budget.min_useful_budget as u64;
        if budget.available_tokens() < min {
            return Err(PipelineError::BudgetTooSmall { budget: budget.available_tokens(), min }.into());
        }
        let path = match &options.project {
            Some(name) => {
                let project = self.projects.get(name)?;
                let resources = self.store().project_resources(&project.project_id)?;
                let first = resources.first().ok_or_else(|| EngineError::NoResource(name.clone()))?;
                PathBuf::from(&first.path)
            }
            None => options.path.clone(),
        };
        // A level name no language knows is refused before anything is indexed.
        if let Some(name) = request.depth().as_name() {
            let ontology = Ontology::builtin();
            if ontology.detail_level_maps().resolve_depth(ontology.domain_for_language(""), request.depth()).is_err() {
                levels_named(name)?;
            }
        }
        let outcome = refresh(&path)?;
        let project_context = self.store().project_context(&outcome.project.project_id)?;
        let (view, project_settings) = match &project_context {
            Some((policy, project_settings)) => {
                if !policy.allows_resource(phase, &outcome.resource.name) {
                    return Err(PipelineError::ResourceExcluded {
                        resource: outcome.resource.name.clone(),
                        phase: phase.to_string(),
                    }
                    .into());
                }
                (Some(policy.resolve_view(phase).clone()), Some(project_settings))
            }
            None => (None, None),
        };
        let request = match project_settings {
            Some(settings) => build_request(options, Some(settings), phase_defaults.as_ref())?,
            None => request,
        };
        let depth = query_depth(request.depth(), &outcome.index.metadata.primary_language)?;
        // The project's context entries the role sees compete for the budget too.
        let entries = {
            let tiers = self.open_tiers()?;
            self.prepare_tiers(&tiers, &outcome.project)?;
            let mut visible = tiers.get_for_actor(options.role, std::slice::from_ref(&outcome.project.name))?;
            // A phase takes the entries of its tiers only (apply: the hot tier).
            if let Some(phase) = &phase_defaults {
                visible.retain(|entry| phase.tiers.contains(&entry.tier()));
            }
            agents_acms::tiers::entry_candidates(&visible, request.query().unwrap_or_default())
        };
        let assemble = AssembleOptions {
            depth,
            limit: options.candidates.unwrap_or(0),
            filter: SearchFilter {
                paths_prefix: options.under.clone(),
                kinds: request.uko_types().to_vec(),
                body_only: false,
            },
            budget,
            plan_id: options.plan.clone(),
            view,
            skeleton_ratio: project_settings.and_then(|s| s.skeleton_ratio()),
            entries,
        };
        let (mut assembly, sync, backends) = self.assemble(&outcome, &request, &assemble)?;
        // The budget holds for the text in the format delivered, not only Markdown.
        let query_text = [request.query().unwrap_or_default()]
            .into_iter()
            .chain(request.entities().iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let root = PathBuf::from(&outcome.resource.path);
        let renderer = StoreRenderer::new(&root, &outcome.index.metadata.index_id, self.store.as_ref(), &self.graph)
            .within(&assemble.filter);
        let text = self.pipeline.fit(&mut assembly, options.format, query_text.trim(), &renderer, &self.tokenizer)?;
        Ok(QueryRun { request, assembly, derivation, backends, sync, outcome, phase, text })
    }

    /// Applies retention and the project's own tier capacities
    /// (`agents project context set --hot-max-tokens ...`) to `tiers`.
    pub fn prepare_tiers(
        &self,
        tiers: &agents_acms::tiers::ContextTierService,
        project: &agents_store::Project,
    ) -> Result<(), EngineError> {
        if let Some((_, settings)) = self.store().project_context(&project.project_id)? {
            let budget = agents_core::tier::TierBudget::new(
                settings.hot_max_tokens(),
                settings.warm_max_decisions(),
                settings.cold_max_decisions(),
            )
            .map_err(agents_acms::tiers::TierError::from)?;
            tiers.set_project_budget(&project.name, budget);
        }
        tiers.sweep()?;
        Ok(())
    }
}

/// The depth a query's depth stands for: a number, a universal level, a
/// level of the map of the resource's main language (`DOCSTRINGS` in a
/// Python repository), else a level of any language's map (as `agents uko
/// show` resolves it per node) when every map that names it gives it the
/// same depth. An unknown name is refused with the levels there are.
pub fn query_depth(depth: &Depth, primary_language: &str) -> Result<u8, EngineError> {
    if let Some(level) = depth.as_level() {
        return Ok(level);
    }
    let Some(name) = depth.as_name() else { return Ok(DEFAULT_DEPTH) };
    let ontology = Ontology::builtin();
    let maps = ontology.detail_level_maps();
    if let Ok(level) = maps.resolve_depth(ontology.domain_for_language(primary_language), depth) {
        return Ok(level);
    }
    let depths = levels_named(name)?;
    match depths.len() {
        1 => Ok(depths.keys().next().copied().unwrap_or(DEFAULT_DEPTH)),
        _ => Err(EngineError::AmbiguousDepth {
            name: name.to_owned(),
            meanings: depths
                .iter()
                .map(|(d, domains)| format!("{} ({d})", domains.join(", ")))
                .collect::<Vec<_>>()
                .join(" and "),
        }),
    }
}

/// The depths each language map gives the level `name`, with the domains that
/// give it; a name no map knows is refused, listing the levels there are.
fn levels_named(name: &str) -> Result<BTreeMap<u8, Vec<String>>, EngineError> {
    let ontology = Ontology::builtin();
    let maps = ontology.detail_level_maps();
    let mut depths: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    let mut known = BTreeSet::new();
    for domain in maps.maps().keys() {
        let Ok(levels) = maps.effective_levels(domain) else { continue };
        known.extend(levels.keys().cloned());
        if let Some(level) = levels.get(name) {
            depths.entry(*level).or_default().push(domain.clone());
        }
    }
    if depths.is_empty() {
        return Err(EngineError::UnknownDepth {
            name: name.to_owned(),
            known: known.into_iter().collect::<Vec<_>>().join(", "),
        });
    }
    Ok(depths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_written_once() {
        let options = QueryOptions::new(".");
        assert_eq!(options.role, ActorRole::Executor);
        assert_eq!(options.phase, Phase::Default);
        assert_eq!(options.format, OutputFormat::Md);
        assert_eq!(options.candidates, None);
        let request = build_request(
            &QueryOptions {
                overrides: RequestOverrides { text: Some("x".into()), ..RequestOverrides::default() },
                ..options
            },
            None,
            None,
        )
        .unwrap();
        assert_eq!(request.depth().as_level(), Some(DEFAULT_DEPTH));
    }

    #[test]
    fn depth_names_resolve_or_are_refused() {
        assert_eq!(query_depth(&Depth::level(4).unwrap(), "python").unwrap(), 4);
        let unknown: Depth = "DEEPEST".parse().unwrap();
        let err = query_depth(&unknown, "python").unwrap_err();
        assert!(matches!(err, EngineError::UnknownDepth { .. }), "{err}");
        assert!(err.to_string().contains("unknown detail level"), "{err}");
    }
}
