//! `agents query`: the main job.

use agents_acms::query::KeywordQuery;
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
    let depth = resolve_depth(&args.depth, "")?;
    let engine = settings.engine()?;
    let outcome = refresh(settings, &engine, &args.path)?;
    let query = KeywordQuery {
        text: args.text,
        max_tokens: args.max_tokens,
        depth,
        candidates: args.candidates,
        filter: SearchFilter { paths_prefix: args.under, kinds: args.kinds },
    };
    let context = engine.keyword_context(&outcome, &query)?;
    settings.printer.note(format!(
        "{} fragments, {} of {} tokens, from {} hits ({} left out)",
        context.fragments.len(),
        thousands(context.total_tokens as u64),
        thousands(context.max_tokens as u64),
        context.candidates,
        context.omitted
    ));
    settings.printer.emit(&context, || context.to_markdown())
}
