//! `agents query`: the main job.

use agents_core::request::{ContextRequest, Depth, TemporalScope};
use agents_engine::RetrieveOptions;
use agents_search::SearchFilter;

use crate::cli::QueryArgs;
use crate::commands::uko::{refresh, resolve_depth};
use crate::exit::UsageError;
use crate::output::thousands;
use crate::settings::Settings;

pub fn query(settings: &Settings, args: QueryArgs) -> anyhow::Result<()> {
    let min = settings.config.config().context.budget.min_useful_budget;
    if args.max_tokens < min {
        return Err(UsageError(format!(
            "--max-tokens {} is below context.budget.min-useful-budget ({min}); give a larger budget",
            args.max_tokens
        ))
        .into());
    }
    if agents_search::code_tokens(&args.text).is_empty() && args.focus.is_empty() && args.plan.is_none() {
        return Err(UsageError(agents_acms::query::QueryError::EmptyQuery.to_string()).into());
    }
    let depth = resolve_depth(&args.depth, "")?;
    let temporal: TemporalScope = args.temporal.parse().map_err(|e| UsageError(format!("--temporal: {e}")))?;
    let request = ContextRequest::builder()
        .query(args.text.clone())
        .entities(args.entities.clone())
        .focus(args.focus.clone())
        .uko_types(args.kinds.clone())
        .breadth(args.breadth)
        .depth(Depth::level(depth).map_err(|e| UsageError(format!("--depth: {e}")))?)
        .depth_gradient(args.depth_gradient)
        .temporal(temporal)
        .max_tokens(args.max_tokens as u64)
        .preferred_strategies(args.strategy.clone())
        .build()
        .map_err(|e| UsageError(e.to_string()))?;
    let engine = settings.engine()?;
    let outcome = refresh(settings, &engine, &args.path)?;
    let options = RetrieveOptions {
        strategy: args.strategy,
        depth,
        limit: args.candidates,
        filter: SearchFilter { paths_prefix: args.under, kinds: args.kinds },
        max_tokens: args.max_tokens,
        plan_id: args.plan,
    };
    let context = engine.retrieve(&outcome, &request, &options)?;
    for step in &context.fallbacks {
        settings.printer.note(format!("strategy {} passed over: {}", step.strategy, step.reason));
    }
    settings.printer.note(format!(
        "{}: {} fragments, {} of {} tokens, from {} candidates ({} left out)",
        context.strategy,
        context.packed.fragments.len(),
        thousands(context.packed.total_tokens as u64),
        thousands(context.packed.max_tokens as u64),
        context.candidates,
        context.packed.omitted
    ));
    settings.printer.emit(&context, || context.to_markdown())
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
