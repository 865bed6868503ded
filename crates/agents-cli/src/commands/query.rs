//! `agents query`: the main job. Builds a CRP request from flags (or a JSON
//! file), indexes or refreshes the repository, runs the assembly pipeline and
//! prints the context as Markdown, JSON or XML.

use std::collections::BTreeMap;

use agents_acms::pipeline::Assembly;
use agents_acms::pipeline::format::OutputFormat;
use agents_acms::query::SyncReport;
use agents_core::request::{ContextRequest, ContextRequestBuilder, Depth, RankingStrategy, TemporalScope};
use agents_engine::{AssembleOptions, BudgetDerivation, Engine, IndexOutcome};
use agents_search::SearchFilter;
use anyhow::Context as _;
use serde::Serialize;

use crate::cli::QueryArgs;
use crate::commands::uko::{refresh, resolve_depth};
use crate::exit::UsageError;
use crate::output::thousands;
use crate::settings::Settings;
use agents_uko::ontology::Ontology;

/// The CLI's default depth: full source for the best matches.
const DEFAULT_DEPTH: u8 = 9;

/// What `agents query --format json` prints: the AssembledContext (spec field
/// names) and how it was made.
#[derive(Serialize)]
pub struct QueryOutput<'a> {
    query: String,
    /// The strategy selected first (asked for, or the selector's best).
    requested_strategy: String,
    /// The strategy whose candidates lead the context (after any fallback).
    strategy: String,
    /// Every strategy passed over on the way, and why.
    fallbacks: Vec<agents_acms::retrieval::registry::Fallback>,
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

/// The request from `--request FILE.json` (if any) with the flags applied over it.
/// Project settings (`agents project context set`) fill what neither the request
/// file nor the flags say: preferred strategies, breadth, depth and temporal
/// scope; the phase's defaults (`[context.phases.<phase>]`) fill what the
/// project's settings leave unset: preferred strategies and depth.
fn build_request(
    args: &QueryArgs,
    text: Option<String>,
    project: Option<&agents_core::project_context::ProjectContextSettings>,
    phase: Option<&PhaseDefaults>,
) -> anyhow::Result<ContextRequest> {
    let mut builder: ContextRequestBuilder = match (&args.request_value, &args.request) {
        (Some(value), _) => value.clone().build().map_err(|e| UsageError(e.to_string()))?.into_builder(),
        (None, Some(file)) => {
            let json = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            let request: ContextRequest = serde_json::from_str(&json).map_err(|e| {
                UsageError(format!("{}: line {}, column {}: {e}", file.display(), e.line(), e.column()))
            })?;
            request.into_builder()
        }
        (None, None) => ContextRequest::builder().depth(Depth::level(DEFAULT_DEPTH)?),
    };
    if let Some(text) = text {
        builder = builder.query(text);
    }
    let no_request = args.request.is_none() && args.request_value.is_none();
    if let Some(phase) = phase
        && no_request
    {
        if let Some(depth) = &phase.depth {
            builder = builder.depth(depth.clone());
        }
        if args.strategy.is_empty() && !phase.strategies.is_empty() {
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
        if args.strategy.is_empty() && !project.strategies().is_empty() {
            builder = builder.preferred_strategies(project.strategies().to_vec());
        }
    }
    if !args.entities.is_empty() {
        builder = builder.entities(args.entities.clone());
    }
    if !args.focus.is_empty() {
        builder = builder.focus(args.focus.clone());
    }
    if !args.kinds.is_empty() {
        builder = builder.uko_types(args.kinds.clone());
    }
    if !args.strategy.is_empty() {
        builder = builder.preferred_strategies(args.strategy.clone());
    }
    if !args.require_backend.is_empty() {
        builder = builder.required_backends(args.require_backend.clone());
    }
    if let Some(breadth) = args.breadth {
        builder = builder.breadth(breadth);
    }
    if let Some(depth) = &args.depth {
        builder = builder.depth(depth.parse().map_err(|e| UsageError(format!("--depth: {e}")))?);
    }
    if args.no_depth_gradient {
        builder = builder.depth_gradient(false);
    }
    if let Some(temporal) = &args.temporal {
        let scope: TemporalScope = temporal.parse().map_err(|e| UsageError(format!("--temporal: {e}")))?;
        builder = builder.temporal(scope);
    }
    if let Some(ranking) = &args.ranking {
        let ranking: RankingStrategy = ranking.parse().map_err(|e| UsageError(format!("--ranking: {e}")))?;
        builder = builder.ranking(ranking);
    }
    if let Some(max_tokens) = args.max_tokens {
        builder = builder.max_tokens(max_tokens);
    }
    if let Some(priority) = args.priority {
        builder = builder.priority(priority);
    }
    if let Some(purpose) = &args.purpose {
        builder = builder.purpose(purpose.clone());
    }
    Ok(builder.build().map_err(|e| UsageError(e.to_string()))?)
}

pub fn query(settings: &Settings, args: QueryArgs) -> anyhow::Result<()> {
    run(settings, args, None)
}

/// `agents project context simulate PROJECT TEXT [flags]`: a dry run of the
/// assembly over the project's first resource with its stored policy and
/// settings; prints the AssembledContext summary, not the content.
pub fn simulate(settings: &Settings, project: &str, args: QueryArgs) -> anyhow::Result<()> {
    run(settings, args, Some(project))
}

/// What `simulate` prints.
#[derive(Serialize)]
struct Simulation<'a> {
    project: &'a str,
    resource: &'a str,
    phase: String,
    payload_id: &'a str,
    fragments: usize,
    total_tokens: u64,
    rendered_tokens: usize,
    available_tokens: u64,
    budget_used: f64,
    is_within_budget: bool,
    remaining_tokens: u64,
    strategies_used: &'a [String],
    context_hash: &'a str,
    files: Vec<String>,
    enforcement: &'a [agents_acms::pipeline::enforcer::Enforcement],
    trace: &'a [agents_acms::pipeline::TraceStep],
}

/// One assembled context and how it was made: what `agents query` prints and
/// what the MCP server's `request_context` tool returns.
pub struct QueryRun {
    pub request: ContextRequest,
    pub assembly: Assembly,
    pub derivation: BudgetDerivation,
    pub backends: BTreeMap<String, String>,
    pub sync: SyncReport,
    pub outcome: std::sync::Arc<IndexOutcome>,
    pub phase: agents_core::policy::Phase,
    /// The context as delivered in the requested format, within the budget
    /// (its token count is `assembly.rendered_tokens`).
    pub text: String,
}

impl QueryRun {
    /// What `--format json` prints.
    pub fn output(&self) -> QueryOutput<'_> {
        let assembly = &self.assembly;
        QueryOutput {
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
pub struct PhaseDefaults {
    pub strategies: Vec<String>,
    pub depth: Option<Depth>,
    /// Tiers whose context entries join the assembly.
    pub tiers: Vec<agents_core::fragment::ContextTier>,
}

impl PhaseDefaults {
    /// The defaults of `phase` in `config`; `None` for the `default` phase.
    pub fn of(config: &agents_core::config::Config, phase: agents_core::policy::Phase) -> Option<PhaseDefaults> {
        let defaults = config.context.phases.of(phase)?;
        let enabled = &config.context.strategies.enabled;
        Some(PhaseDefaults {
            strategies: defaults.strategies.iter().filter(|s| enabled.contains(s)).cloned().collect(),
            depth: defaults.depth.clone(),
            tiers: agents_core::fragment::ContextTier::ALL.into_iter().filter(|t| defaults.tiers.contains(t)).collect(),
        })
    }
}

/// How the resource at a path is brought up to date before an assembly.
pub type Refresher<'a> = &'a dyn Fn(&Engine, &std::path::Path) -> anyhow::Result<std::sync::Arc<IndexOutcome>>;

/// Builds the request from `args`, brings the resource up to date with
/// `refresh`, applies the project's policy and settings, and assembles.
/// `simulate` names the project whose first resource is used instead of
/// `args.path`.
pub fn assemble(
    settings: &Settings,
    engine: &Engine,
    mut args: QueryArgs,
    simulate: Option<&str>,
    refresh: Refresher<'_>,
) -> anyhow::Result<QueryRun> {
    // With --request the one positional argument is the PATH.
    let text = if args.request.is_some() {
        if let Some(path) = args.text.take() {
            args.path = path.into();
        }
        None
    } else {
        args.text.clone()
    };
    let phase: agents_core::policy::Phase = args.phase.parse().map_err(|e| UsageError(format!("--phase: {e}")))?;
    let phase_defaults = PhaseDefaults::of(settings.config.config(), phase);
    let request = build_request(&args, text.clone(), None, phase_defaults.as_ref())?;
    let words = agents_search::code_tokens(request.query().unwrap_or_default());
    if words.is_empty() && request.focus().is_empty() && request.entities().is_empty() && args.plan.is_none() {
        return Err(UsageError(agents_acms::query::QueryError::EmptyQuery.to_string()).into());
    }
    let format: OutputFormat = args.format.parse().map_err(|e| UsageError(format!("--format: {e}")))?;
    let role = crate::commands::context::parse_role("--role", &args.role)?;
    let (budget, derivation) = engine.budget(args.model.as_deref(), request.max_tokens()).map_err(|e| match e {
        agents_engine::EngineError::UnknownModel { .. } | agents_engine::EngineError::WindowTooSmall { .. } => {
            anyhow::Error::from(UsageError(e.to_string()))
        }
        e => e.into(),
    })?;
    let min = settings.config.config().context.budget.min_useful_budget as u64;
    if budget.available_tokens() < min {
        return Err(UsageError(format!(
            "a budget of {} tokens is below context.budget.min-useful-budget ({min}); give a larger --max-tokens",
            budget.available_tokens()
        ))
        .into());
    }
    let path = match simulate {
        Some(name) => {
            let project = engine.projects().get(name)?;
            let resources = engine.store().project_resources(&project.project_id)?;
            let first = resources.first().ok_or_else(|| {
                UsageError(format!("project {name} has no linked resource: `agents project link-resource {name} PATH`"))
            })?;
            std::path::PathBuf::from(&first.path)
        }
        None => args.path.clone(),
    };
    // A level name no language knows is refused before anything is indexed.
    if let Some(name) = request.depth().as_name()
        && resolve_depth(name, "").is_err()
    {
        levels_named(name)?;
    }
    let outcome = refresh(engine, &path)?;
    let project_context = engine.store().project_context(&outcome.project.project_id)?;
    let (view, project_settings) = match &project_context {
        Some((policy, project_settings)) => {
            if !policy.allows_resource(phase, &outcome.resource.name) {
                return Err(UsageError(format!(
                    "resource {} is excluded by the {phase} view of project {}'s context policy",
                    outcome.resource.name, outcome.project.name
                ))
                .into());
            }
            (Some(policy.resolve_view(phase).clone()), Some(project_settings))
        }
        None => (None, None),
    };
    let request = if project_settings.is_some() {
        build_request(&args, text, project_settings, phase_defaults.as_ref())?
    } else {
        request
    };
    let depth = query_depth(request.depth(), &outcome.index.metadata.primary_language)?;
    // The project's context entries the role sees compete for the budget too.
    let entries = {
        let tiers = crate::commands::context::open_tiers(engine)?;
        crate::commands::context::prepare(engine, &tiers, &outcome.project)?;
        let mut visible = tiers.get_for_actor(role, std::slice::from_ref(&outcome.project.name))?;
        // A phase takes the entries of its tiers only (apply: the hot tier).
        if let Some(phase) = &phase_defaults {
            visible.retain(|entry| phase.tiers.contains(&entry.tier()));
        }
        agents_acms::tiers::entry_candidates(&visible, request.query().unwrap_or_default())
    };
    let options = AssembleOptions {
        depth,
        limit: args.candidates.unwrap_or(0),
        filter: SearchFilter {
            paths_prefix: args.under.clone(),
            kinds: request.uko_types().to_vec(),
            body_only: false,
        },
        budget,
        plan_id: args.plan.clone(),
        view,
        skeleton_ratio: project_settings.and_then(|s| s.skeleton_ratio()),
        entries,
    };
    let (mut assembly, sync, backends) = engine.assemble(&outcome, &request, &options)?;
    // The budget holds for the text in the format delivered, not only Markdown.
    let query_text = [request.query().unwrap_or_default()]
        .into_iter()
        .chain(request.entities().iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    let root = std::path::PathBuf::from(&outcome.resource.path);
    let renderer = agents_acms::pipeline::piece::StoreRenderer::new(
        &root,
        &outcome.index.metadata.index_id,
        engine.store(),
        engine.graph(),
    );
    let tokenizer = engine.tokenizer();
    let text = engine.pipeline().fit(&mut assembly, format, query_text.trim(), &renderer, &tokenizer)?;
    Ok(QueryRun { request, assembly, derivation, backends, sync, outcome, phase, text })
}

/// The depth a query's `--depth` (or request `depth`) stands for: a number,
/// a universal level, a level of the map of the resource's main language
/// (`DOCSTRINGS` in a Python repository), else a level of any language's map
/// (as `agents uko show` resolves it per node) when every map that names it
/// gives it the same depth. An unknown name is a usage error listing the
/// levels there are.
fn query_depth(depth: &Depth, primary_language: &str) -> anyhow::Result<u8> {
    let Some(name) = depth.as_name() else {
        return resolve_depth(&depth.to_string(), primary_language);
    };
    let ontology = Ontology::builtin();
    let maps = ontology.detail_level_maps();
    if let Ok(level) = maps.resolve_depth(ontology.domain_for_language(primary_language), depth) {
        return Ok(level);
    }
    let depths = levels_named(name)?;
    match depths.len() {
        1 => Ok(*depths.keys().next().unwrap_or(&DEFAULT_DEPTH)),
        _ => Err(UsageError(format!(
            "--depth {name}: the level means different depths in {}; give a number 0-9",
            depths.iter().map(|(d, domains)| format!("{} ({d})", domains.join(", "))).collect::<Vec<_>>().join(" and ")
        ))
        .into()),
    }
}

/// The depths each language map gives the level `name`, with the domains that
/// give it; a name no map knows is a usage error listing the levels there are.
fn levels_named(name: &str) -> anyhow::Result<BTreeMap<u8, Vec<String>>> {
    let ontology = Ontology::builtin();
    let maps = ontology.detail_level_maps();
    let mut depths: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    let mut known = std::collections::BTreeSet::new();
    for domain in maps.maps().keys() {
        let Ok(levels) = maps.effective_levels(domain) else { continue };
        known.extend(levels.keys().cloned());
        if let Some(level) = levels.get(name) {
            depths.entry(*level).or_default().push(domain.clone());
        }
    }
    if depths.is_empty() {
        return Err(UsageError(format!(
            "--depth {name}: unknown detail level; give 0-9 or one of {}",
            known.into_iter().collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    Ok(depths)
}

fn run(settings: &Settings, args: QueryArgs, simulate: Option<&str>) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    engine.preload_tokenizer();
    let explain_trace = args.explain;
    let run =
        assemble(settings, &engine, args, simulate, &|engine, path| refresh(settings, engine, path).map(Into::into))?;
    let QueryRun { assembly, outcome, phase, .. } = &run;
    for run in &assembly.runs {
        for step in &run.fallbacks {
            settings.printer.note(format!("strategy {} passed over: {}", step.strategy, step.reason));
        }
        if let (None, Some(error)) = (&run.strategy, &run.error) {
            settings.printer.note(format!("strategy {} failed: {error}", run.selected));
        }
    }
    for action in &assembly.enforcement {
        settings.printer.note(format!("policy {}: {} ({})", action.action, action.path, action.reason));
    }
    let context = &assembly.context;
    settings.printer.note(format!(
        "{}: {} fragments, {} of {} tokens, from {} candidates ({} left out)",
        context.strategies_used().join(" + "),
        context.fragments().len(),
        thousands(assembly.rendered_tokens as u64),
        thousands(context.budget().available_tokens()),
        assembly.candidates,
        assembly.omitted
    ));
    if explain_trace {
        eprint!("{}", explain(assembly));
    }
    if let Some(project) = simulate {
        let report = Simulation {
            project,
            resource: &outcome.resource.path,
            phase: phase.to_string(),
            payload_id: context.payload_id(),
            fragments: context.fragments().len(),
            total_tokens: context.total_tokens(),
            rendered_tokens: assembly.rendered_tokens,
            available_tokens: context.budget().available_tokens(),
            budget_used: context.budget_used(),
            is_within_budget: assembly.is_within_budget(),
            remaining_tokens: assembly.remaining_tokens(),
            strategies_used: context.strategies_used(),
            context_hash: context.context_hash(),
            files: assembly.ranked_files(),
            enforcement: &assembly.enforcement,
            trace: &assembly.trace,
        };
        return settings.printer.emit(&report, || render_simulation(&report, assembly));
    }
    // --json is the run's report (the context and how it was made); without
    // it the context goes out as --format says, within the budget.
    settings.printer.emit(&run.output(), || run.text.clone())
}

fn render_simulation(report: &Simulation<'_>, assembly: &Assembly) -> String {
    let mut out = format!(
        "Dry run for project {} ({}), phase {}
  fragments  {} ({} tokens of {}, {:.0}% used, {} left)
  strategies {}
  hash       {}
  files      {}
",
        report.project,
        report.resource,
        report.phase,
        report.fragments,
        thousands(report.rendered_tokens as u64),
        thousands(report.available_tokens),
        report.budget_used * 100.0,
        thousands(report.remaining_tokens),
        report.strategies_used.join(", "),
        report.context_hash,
        report.files.join(", "),
    );
    for e in report.enforcement {
        out.push_str(&format!("  policy     {} {} ({})\n", e.action, e.path, e.reason));
    }
    out.push('\n');
    out.push_str(&explain(assembly));
    out
}

/// The trace of the ten components, for `--explain`.
fn explain(assembly: &Assembly) -> String {
    let mut t = crate::output::table(&["component", "implementation", "in", "out", "tokens", "ms", "detail"]);
    for step in &assembly.trace {
        t.add_row(vec![
            step.component.to_owned(),
            step.implementation.clone(),
            step.input.to_string(),
            step.output.to_string(),
            step.tokens.to_string(),
            format!("{:.1}", step.micros as f64 / 1000.0),
            step.detail.clone().unwrap_or_default(),
        ]);
    }
    let components: u64 = assembly.trace.iter().map(|s| s.micros).sum();
    format!(
        "{t}\nassembly: {:.1} ms in all, of which {:.1} ms rendering the proposed candidates into fragments\n",
        assembly.assembly_micros as f64 / 1000.0,
        assembly.assembly_micros.saturating_sub(components) as f64 / 1000.0
    )
}

/// `agents strategies`: the registry's view of PATH.
pub fn strategies(settings: &Settings, path: &std::path::Path) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let outcome = refresh(settings, &engine, path)?;
    let status = engine.strategy_status(&outcome)?;
    settings.printer.emit(&status, || {
        let mut t = crate::output::table(&["strategy", "enabled", "quality", "needs", "status"]);
        for s in &status {
            let needs: Vec<&str> = s.required_backends.iter().map(|b| b.as_str()).collect();
            t.add_row(vec![
                s.name.clone(),
                if s.enabled { "yes" } else { "no" }.to_owned(),
                format!("{:.2}", s.capabilities.quality_score),
                if needs.is_empty() { "-".to_owned() } else { needs.join(", ") },
                s.unavailable.clone().unwrap_or_else(|| "available".to_owned()),
            ]);
        }
        format!("{t}\n")
    })
}
