//! `agents project context ...`: a project's context policy (a view per plan
//! phase) and ACMS pipeline settings.
//!
//! `set` reads what is stored (or an empty policy and the spec's default
//! settings), applies the flags given, validates everything, and only then
//! writes, in one transaction; a bad value is a usage error naming its flag.
//! `show` prints every phase's resolved view and the phase it comes from.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use agents_acms::tiers::TierSettings;
use agents_core::ValidationError;
use agents_core::fragment::ContextTier;
use agents_core::policy::{ContextView, Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
use agents_core::tier::{ActorRole, TierMetrics};
use agents_engine::Project;
use serde::Serialize;

use crate::cli::{ContextSetArgs, ProjectContextCommand};
use crate::exit::UsageError;
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: ProjectContextCommand) -> anyhow::Result<()> {
    if let ProjectContextCommand::Simulate { project, query } = cmd {
        return crate::commands::query::simulate(settings, &project, *query);
    }
    let engine = settings.engine()?;
    let printer = settings.printer;
    match cmd {
        ProjectContextCommand::Set(args) => {
            let project = engine.projects().get(&args.project)?;
            let phase = parse_phase("--view", &args.view)?;
            let (policy, stored) = stored_or_default(&project, engine.project_context(&project)?)?;
            let policy = apply_view(policy, phase, &args)?;
            let context_settings = apply_settings(stored, &args)?;
            engine.set_project_context(&project, &policy, &context_settings)?;
            let report = ContextReport::new(&project, &policy, &context_settings, &Phase::ALL)
                .with_acms(engine.config().config(), engine.pipeline());
            printer.emit(&report, || format!("Updated the context of project {}\n\n{}", project.name, report.render()))
        }
        ProjectContextCommand::Show { project, view } => {
            let project = engine.projects().get(&project)?;
            let phases = match view {
                Some(view) => vec![parse_phase("--view", &view)?],
                None => Phase::ALL.to_vec(),
            };
            let (policy, context_settings) = stored_or_default(&project, engine.project_context(&project)?)?;
            let report = ContextReport::new(&project, &policy, &context_settings, &phases)
                .with_acms(engine.config().config(), engine.pipeline());
            printer.emit(&report, || report.render())
        }
        ProjectContextCommand::Inspect { project } => {
            let project = engine.projects().get(&project)?;
            let tiers = crate::commands::context::open_tiers(&engine)?;
            crate::commands::context::prepare(&engine, &tiers, &project)?;
            let report = Inspection::new(&engine, &tiers, &project)?;
            printer.emit(&report, || report.render())
        }
        ProjectContextCommand::Simulate { .. } => unreachable!("handled above"),
    }
}

/// Parses a phase name given to `flag`, as a usage error naming the flag.
pub fn parse_phase(flag: &str, text: &str) -> anyhow::Result<Phase> {
    text.parse::<Phase>().map_err(|e| usage(flag, &e))
}

fn usage(flag: &str, error: &ValidationError) -> anyhow::Error {
    UsageError(format!("{flag}: {}", error.message)).into()
}

/// The flag of `set` that sets a field of `ContextView` or `ProjectContextSettings`.
fn flag_of(field: &str) -> String {
    let singular = match field {
        "include_resources" => "include_resource",
        "exclude_resources" => "exclude_resource",
        "include_paths" => "include_path",
        "exclude_paths" => "exclude_path",
        "strategies" => "strategy",
        other => other,
    };
    format!("--{}", singular.replace('_', "-"))
}

fn stored_or_default(
    project: &Project,
    stored: Option<(ProjectContextPolicy, ProjectContextSettings)>,
) -> anyhow::Result<(ProjectContextPolicy, ProjectContextSettings)> {
    match stored {
        Some(stored) => Ok(stored),
        None => Ok((ProjectContextPolicy::new(&project.name)?, ProjectContextSettings::default())),
    }
}

/// The policy with `phase`'s view replaced when a view option is given, or
/// removed with `--clear-view`.
fn apply_view(
    policy: ProjectContextPolicy,
    phase: Phase,
    args: &ContextSetArgs,
) -> anyhow::Result<ProjectContextPolicy> {
    if args.clear_view {
        return Ok(policy.without_view(phase));
    }
    let given = !args.include_resources.is_empty()
        || !args.exclude_resources.is_empty()
        || !args.include_paths.is_empty()
        || !args.exclude_paths.is_empty()
        || args.max_file_size.is_some()
        || args.max_total_size.is_some();
    if !given {
        return Ok(policy);
    }
    let mut view = ContextView::builder()
        .include_resources(&args.include_resources)
        .exclude_resources(&args.exclude_resources)
        .include_paths(&args.include_paths)
        .exclude_paths(&args.exclude_paths);
    if let Some(bytes) = args.max_file_size {
        view = view.max_file_size(bytes);
    }
    if let Some(bytes) = args.max_total_size {
        view = view.max_total_size(bytes);
    }
    let view = view.build().map_err(|e| usage(&flag_of(e.field), &e))?;
    Ok(policy.with_view(phase, view))
}

/// The stored settings with the ones given on the command line changed.
fn apply_settings(stored: ProjectContextSettings, args: &ContextSetArgs) -> anyhow::Result<ProjectContextSettings> {
    let mut builder = stored.into_builder();
    if let Some(tokens) = args.hot_max_tokens {
        builder = builder.hot_max_tokens(tokens);
    }
    if let Some(decisions) = args.warm_max_decisions {
        builder = builder.warm_max_decisions(decisions);
    }
    if let Some(decisions) = args.cold_max_decisions {
        builder = builder.cold_max_decisions(decisions);
    }
    if !args.strategies.is_empty() {
        builder = builder.strategies(&args.strategies);
    }
    if let Some(breadth) = args.default_breadth {
        builder = builder.default_breadth(breadth);
    }
    if let Some(depth) = &args.default_depth {
        let depth: agents_core::request::Depth = depth.parse().map_err(|e| usage("--default-depth", &e))?;
        check_level_known(&depth)?;
        builder = builder.default_depth(depth);
    }
    if let Some(ratio) = args.skeleton_ratio {
        builder = builder.skeleton_ratio(ratio);
    }
    if let Some(scope) = &args.temporal_scope {
        builder = builder.temporal_scope(scope.parse().map_err(|e| usage("--temporal-scope", &e))?);
    }
    if args.auto_refresh || args.no_auto_refresh {
        builder = builder.auto_refresh(args.auto_refresh);
    }
    builder.build().map_err(|e| usage(&flag_of(e.field), &e))
}

/// A named depth must be a level of the universal map or of a language's map
/// (`SIGNATURES`, `DOCSTRINGS`, ...): a name no map knows would be stored and
/// then fail every query.
fn check_level_known(depth: &agents_core::request::Depth) -> anyhow::Result<()> {
    let Some(name) = depth.as_name() else { return Ok(()) };
    let ontology = agents_uko::ontology::Ontology::builtin();
    let maps = ontology.detail_level_maps();
    if maps.maps().keys().any(|domain| maps.resolve(domain, name).is_ok()) {
        return Ok(());
    }
    let mut known: Vec<String> =
        maps.maps().keys().filter_map(|d| maps.effective_levels(d).ok()).flat_map(|l| l.into_keys()).collect();
    known.sort();
    known.dedup();
    Err(UsageError(format!("--default-depth: unknown detail level `{name}`; give 0-9 or one of {}", known.join(", ")))
        .into())
}

/// What `show` (and `set`) print: `--json` gives this object as is.
#[derive(Serialize)]
struct ContextReport<'a> {
    project: &'a str,
    views: BTreeMap<Phase, ResolvedView<'a>>,
    settings: &'a ProjectContextSettings,
    /// The engine's ACMS configuration in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    acms: Option<AcmsConfig>,
}

/// The effective ACMS configuration: tiers, budget, strategies, pipeline.
#[derive(Serialize)]
struct AcmsConfig {
    tiers: TierSettings,
    budget: BTreeMap<&'static str, String>,
    strategies_enabled: Vec<String>,
    pipeline: BTreeMap<&'static str, String>,
}

impl AcmsConfig {
    fn rows(&self) -> Vec<(String, String)> {
        let t = &self.tiers;
        let mut rows = vec![
            ("context.hot.max-tokens".to_owned(), t.hot_max_tokens.to_string()),
            ("context.warm.max-decisions".to_owned(), t.warm_max_entries.to_string()),
            ("context.warm.retention-hours".to_owned(), t.warm_retention_hours.to_string()),
            ("context.cold.max-decisions".to_owned(), t.cold_max_entries.to_string()),
            ("context.cold.retention-days".to_owned(), t.cold_retention_days.to_string()),
        ];
        rows.extend(self.budget.iter().map(|(k, v)| (format!("context.budget.{k}"), v.clone())));
        rows.push(("context.strategies.enabled".to_owned(), self.strategies_enabled.join(", ")));
        rows.extend(self.pipeline.iter().map(|(k, v)| (format!("context.pipeline.{k}"), v.clone())));
        rows
    }
}

/// A phase's effective view and the phase it comes from (`None`: no phase on
/// its chain has a view, so everything is visible).
#[derive(Serialize)]
struct ResolvedView<'a> {
    source: Option<Phase>,
    view: &'a ContextView,
}

impl<'a> ContextReport<'a> {
    fn new(
        project: &'a Project,
        policy: &'a ProjectContextPolicy,
        settings: &'a ProjectContextSettings,
        phases: &[Phase],
    ) -> ContextReport<'a> {
        let views = phases
            .iter()
            .map(|&phase| (phase, ResolvedView { source: policy.view_source(phase), view: policy.resolve_view(phase) }))
            .collect();
        ContextReport { project: &project.name, views, settings, acms: None }
    }

    /// The same report with the engine's ACMS configuration.
    fn with_acms(self, config: &agents_core::config::Config, pipeline: &agents_acms::pipeline::Pipeline) -> Self {
        let context = &config.context;
        let budget = BTreeMap::from([
            ("refresh-threshold", context.budget.refresh_threshold.to_string()),
            ("min-useful-budget", context.budget.min_useful_budget.to_string()),
            ("skeleton-ratio", context.budget.skeleton_ratio.to_string()),
            ("response-reserve", context.budget.response_reserve.to_string()),
            ("tool-definitions", context.budget.tool_definitions.to_string()),
        ]);
        let acms = AcmsConfig {
            tiers: TierSettings::from_config(context),
            budget,
            strategies_enabled: context.strategies.enabled.clone(),
            pipeline: pipeline.implementations().into_iter().map(|(k, v)| (k, v.to_owned())).collect(),
        };
        ContextReport { acms: Some(acms), ..self }
    }

    fn render(&self) -> String {
        let mut out =
            format!("Project {}\n\nViews (exclusions win over inclusions; no includes = all)\n", self.project);
        for (phase, resolved) in &self.views {
            let source = match resolved.source {
                None => "unrestricted".to_string(),
                Some(source) if source == *phase => "own view".to_string(),
                Some(source) => format!("from {source}"),
            };
            let _ = writeln!(out, "  {:<12}{source}", phase.as_str());
            if resolved.source.is_some() {
                for (key, value) in view_rows(resolved.view) {
                    let _ = writeln!(out, "    {key:<20}{value}");
                }
            }
        }
        out.push_str("\nSettings\n");
        for (key, value) in settings_rows(self.settings) {
            let _ = writeln!(out, "  {key:<22}{value}");
        }
        if let Some(acms) = &self.acms {
            out.push_str("\nACMS configuration (config.toml; project settings above take precedence)\n");
            for (key, value) in acms.rows() {
                let _ = writeln!(out, "  {key:<44}{value}");
            }
        }
        out
    }
}

/// What `inspect` prints: the tiers' counters and population, the project's
/// entries by tier, kind and depth, and what each role sees of them.
#[derive(Serialize)]
struct Inspection {
    project: String,
    tiers: TierSettings,
    /// The project's tier capacities when `set` stored them.
    project_budget: Option<agents_core::tier::TierBudget>,
    metrics: TierMetrics,
    /// The project's entries and tokens per tier.
    by_tier: BTreeMap<ContextTier, Distribution>,
    by_kind: BTreeMap<String, Distribution>,
    by_depth: BTreeMap<u8, Distribution>,
    /// Entry ids each role sees, hottest tier first.
    visibility: BTreeMap<ActorRole, Vec<String>>,
}

#[derive(Clone, Copy, Default, Serialize)]
struct Distribution {
    entries: u64,
    tokens: u64,
}

impl Inspection {
    fn new(
        engine: &agents_engine::Engine,
        tiers: &agents_acms::tiers::ContextTierService,
        project: &Project,
    ) -> anyhow::Result<Inspection> {
        let view = tiers.get_scoped_view(std::slice::from_ref(&project.name))?;
        let mut by_tier: BTreeMap<ContextTier, Distribution> =
            ContextTier::ALL.into_iter().map(|t| (t, Distribution::default())).collect();
        let mut by_kind: BTreeMap<String, Distribution> = BTreeMap::new();
        let mut by_depth: BTreeMap<u8, Distribution> = BTreeMap::new();
        for entry in view.all() {
            let fragment = entry.fragment();
            let kind = fragment.metadata().get("kind").cloned().unwrap_or_else(|| "fragment".to_owned());
            for slot in [
                by_tier.entry(entry.tier()).or_default(),
                by_kind.entry(kind).or_default(),
                by_depth.entry(fragment.detail_depth()).or_default(),
            ] {
                slot.entries += 1;
                slot.tokens += fragment.token_count();
            }
        }
        let visibility = ActorRole::ALL
            .into_iter()
            .map(|role| (role, view.visible_to(role).map(|f| f.fragment_id().to_owned()).collect()))
            .collect();
        let project_budget = engine.project_context(project)?.map(|(_, s)| {
            agents_core::tier::TierBudget::new(s.hot_max_tokens(), s.warm_max_decisions(), s.cold_max_decisions())
        });
        Ok(Inspection {
            project: project.name.clone(),
            tiers: *tiers.settings(),
            project_budget: project_budget.transpose()?,
            metrics: tiers.get_metrics()?,
            by_tier,
            by_kind,
            by_depth,
            visibility,
        })
    }

    fn render(&self) -> String {
        let mut out = format!("Project {}\n\nTiers (all projects)\n", self.project);
        let _ = writeln!(
            out,
            "  {:<6}{:>10}{:>8}{:>8}{:>10}  capacity",
            "tier", "population", "hits", "misses", "hit rate"
        );
        for tier in ContextTier::ALL {
            let rate = self.metrics.hit_rate(tier).map_or_else(|| "-".to_owned(), |r| format!("{:.0}%", r * 100.0));
            let capacity = match tier {
                ContextTier::Hot => format!("{} tokens", self.tiers.hot_max_tokens),
                ContextTier::Warm => {
                    format!("{} entries, {} h retention", self.tiers.warm_max_entries, self.tiers.warm_retention_hours)
                }
                ContextTier::Cold => {
                    format!("{} entries, {} d retention", self.tiers.cold_max_entries, self.tiers.cold_retention_days)
                }
            };
            let _ = writeln!(
                out,
                "  {:<6}{:>10}{:>8}{:>8}{:>10}  {capacity}",
                tier.as_str(),
                self.metrics.population_in(tier),
                self.metrics.hits_in(tier),
                self.metrics.misses_in(tier),
                rate
            );
        }
        if let Some(budget) = &self.project_budget {
            let _ = writeln!(
                out,
                "  project capacity: hot {} tokens, warm {} entries, cold {} entries",
                budget.hot_max_tokens(),
                budget.warm_max_decisions(),
                budget.cold_max_decisions()
            );
        }
        out.push_str("\nEntries of the project\n");
        let mut section = |title: &str, rows: Vec<(String, Distribution)>| {
            let _ = writeln!(out, "  by {title}");
            if rows.is_empty() {
                let _ = writeln!(out, "    (none)");
            }
            for (key, d) in rows {
                let _ = writeln!(out, "    {key:<10}{:>5} entries {:>8} tokens", d.entries, d.tokens);
            }
        };
        section("tier", ContextTier::ALL.into_iter().map(|t| (t.to_string(), self.by_tier[&t])).collect());
        section("kind", self.by_kind.iter().map(|(k, d)| (k.clone(), *d)).collect());
        section("depth", self.by_depth.iter().map(|(k, d)| (k.to_string(), *d)).collect());
        out.push_str("\nWhat each role sees\n");
        for (role, ids) in &self.visibility {
            let tiers: Vec<&str> = role.visible_tiers().iter().map(|t| t.as_str()).collect();
            let _ = writeln!(out, "  {:<11}{:>4} entries ({})", role.as_str(), ids.len(), tiers.join(" + "));
        }
        out
    }
}

fn view_rows(view: &ContextView) -> [(&'static str, String); 6] {
    let list = |items: &[String], empty: &str| if items.is_empty() { empty.to_string() } else { items.join(", ") };
    let size = |bytes: Option<u64>| bytes.map_or_else(|| "no limit".to_string(), |b| format!("{b} bytes"));
    [
        ("include resources", list(view.include_resources(), "all")),
        ("exclude resources", list(view.exclude_resources(), "none")),
        ("include paths", list(view.include_paths(), "all")),
        ("exclude paths", list(view.exclude_paths(), "none")),
        ("max file size", size(view.max_file_size())),
        ("max total size", size(view.max_total_size())),
    ]
}

/// The settings as `set`'s flag names and values.
fn settings_rows(settings: &ProjectContextSettings) -> [(&'static str, String); 9] {
    let strategies = match settings.strategies() {
        [] => "none (the registry chooses)".to_string(),
        names => names.join(", "),
    };
    [
        ("hot-max-tokens", settings.hot_max_tokens().to_string()),
        ("warm-max-decisions", settings.warm_max_decisions().to_string()),
        ("cold-max-decisions", settings.cold_max_decisions().to_string()),
        ("strategy", strategies),
        ("default-breadth", settings.default_breadth().to_string()),
        (
            "default-depth",
            settings.default_depth().map_or_else(|| "unset (the query's own)".to_owned(), ToString::to_string),
        ),
        (
            "skeleton-ratio",
            settings
                .skeleton_ratio()
                .map_or_else(|| "unset (context.budget.skeleton-ratio)".to_owned(), |r| r.to_string()),
        ),
        ("temporal-scope", settings.temporal_scope().to_string()),
        ("auto-refresh", settings.auto_refresh().to_string()),
    ]
}
