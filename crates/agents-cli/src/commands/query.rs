//! `agents query`: the main job. Parses the flags (or a JSON request file)
//! into [`QueryOptions`], calls [`Engine::query_with`] (which indexes or
//! refreshes the repository and runs the assembly pipeline) and prints the
//! context as Markdown, JSON or XML.

use std::sync::Arc;

use agents_acms::pipeline::Assembly;
use agents_core::request::{ContextRequest, RankingStrategy, TemporalScope};
use agents_engine::{IndexMode, QueryOptions, QueryRun, RequestOverrides};
use anyhow::Context as _;
use serde::Serialize;

use crate::cli::QueryArgs;
use crate::commands::uko::refresh;
use crate::exit::UsageError;
use crate::output::thousands;
use crate::progress::Bar;
use crate::settings::Settings;

/// The options of a query from its flags: `--request FILE.json` is read, the
/// flags are parsed and applied over it (with `--request` the one positional
/// argument is the PATH); `simulate` names the project whose first resource
/// is used instead of the PATH.
pub(crate) fn options(mut args: QueryArgs, simulate: Option<&str>) -> anyhow::Result<QueryOptions> {
    let text = if args.request.is_some() {
        if let Some(path) = args.text.take() {
            args.path = path.into();
        }
        None
    } else {
        args.text.clone()
    };
    let request = match &args.request {
        Some(file) => {
            let json = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
            let request: ContextRequest = serde_json::from_str(&json).map_err(|e| {
                UsageError(format!("{}: line {}, column {}: {e}", file.display(), e.line(), e.column()))
            })?;
            Some(request.into_builder())
        }
        None => None,
    };
    let overrides = RequestOverrides {
        text,
        entities: args.entities,
        focus: args.focus,
        kinds: args.kinds,
        strategies: args.strategy,
        required_backends: args.require_backend,
        breadth: args.breadth,
        depth: args.depth.map(|d| d.parse().map_err(|e| UsageError(format!("--depth: {e}")))).transpose()?,
        no_depth_gradient: args.no_depth_gradient,
        temporal: args
            .temporal
            .map(|t| t.parse::<TemporalScope>().map_err(|e| UsageError(format!("--temporal: {e}"))))
            .transpose()?,
        ranking: args
            .ranking
            .map(|r| r.parse::<RankingStrategy>().map_err(|e| UsageError(format!("--ranking: {e}"))))
            .transpose()?,
        max_tokens: args.max_tokens,
        priority: args.priority,
        purpose: args.purpose,
    };
    Ok(QueryOptions {
        path: args.path,
        project: simulate.map(str::to_owned),
        request,
        overrides,
        model: args.model,
        candidates: args.candidates,
        under: args.under,
        role: crate::commands::context::parse_role("--role", &args.role)?,
        phase: args.phase.parse().map_err(|e| UsageError(format!("--phase: {e}")))?,
        plan: args.plan,
        format: args.format.parse().map_err(|e| UsageError(format!("--format: {e}")))?,
    })
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

fn run(settings: &Settings, args: QueryArgs, simulate: Option<&str>) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    engine.preload();
    let explain_trace = args.explain;
    let options = options(args, simulate)?;
    let bar = Bar::new(settings.progress);
    let index = agents_acms::IndexOptions { wait_for_lock: true, ..engine.index_options() };
    let run = engine
        .query_with(&options, &|path| Ok(Arc::new(engine.index_path(path, IndexMode::Refresh, &index, &bar)?)))?;
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
    settings.printer.emit(&run.report(), || run.text.clone())
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
