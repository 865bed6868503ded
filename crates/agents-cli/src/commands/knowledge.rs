//! `agents knowledge init|validate|build|tags|query|search|migrate|mirror`
//! (update, status, review, promote, suppress and restore are in `feedback`, loadouts
//! in `loadout.rs`): the repository's `knowledge/` folder over the global
//! vault (AKMS). Thin: parse, call the engine's knowledge service
//! ([`KnowledgeService`]: the repository and vault resolver, init, tags,
//! build-and-reindex) or `agents_akms` for the read-only views, print.
//! Every command that writes `knowledge/` holds the repository's knowledge
//! lock ([`lock_knowledge`]); readers never do.

use std::path::Path;

use agents_akms::vault::Layout;
use agents_akms::{AkmsError, CompileOptions, Diagnostic};
use agents_engine::knowledge::{KnowledgeError, KnowledgeService, TagsReport};
use serde::Serialize;

use crate::cli::{KnowledgeArgs, KnowledgeCommand};
use crate::exit::UsageError;
use crate::settings::Settings;

/// The knowledge service over the settings' home and configuration (no
/// store is opened).
pub(crate) fn service(settings: &Settings) -> KnowledgeService {
    KnowledgeService::new(settings.home.clone(), settings.config.config())
}

pub fn run(settings: &Settings, args: KnowledgeArgs) -> anyhow::Result<()> {
    let printer = settings.printer;
    match args.command {
        KnowledgeCommand::Init => {
            let service = service(settings);
            let vault = service.resolve_for_init(args.repo.as_deref(), &std::env::current_dir()?).map_err(usage)?;
            let report = service.init(&vault.layout).map_err(usage)?;
            printer.emit(&report, || {
                let mut out = format!("Initialised {}\n", report.knowledge.display());
                for path in &report.created {
                    out.push_str(&format!("  created {path}\n"));
                }
                for path in &report.kept {
                    out.push_str(&format!("  kept    {path}\n"));
                }
                out
            })
        }
        KnowledgeCommand::Validate { paths } => {
            let (layout, options) = resolve(settings, args.repo.as_deref())?;
            let diagnostics = if paths.is_empty() {
                agents_akms::check(&layout, &options)
            } else {
                for path in &paths {
                    if !path.exists() {
                        return Err(UsageError(format!("{}: no such file or directory", path.display())).into());
                    }
                }
                agents_akms::check_paths(&layout, &paths)
            };
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let report = ValidateReport {
                repo: &layout.repo_root,
                global_vault: &layout.global_vault,
                errors,
                warnings: diagnostics.len() - errors,
                diagnostics: &diagnostics,
            };
            printer.emit(&report, || {
                let mut out: String = diagnostics.iter().map(|d| format!("{}: {d}\n", severity(d))).collect();
                if diagnostics.is_empty() {
                    out.push_str("No problems found\n");
                }
                out
            })?;
            if errors > 0 {
                let s = if errors == 1 { "" } else { "s" };
                return Err(UsageError(format!("{errors} error{s} in the knowledge sources")).into());
            }
            Ok(())
        }
        KnowledgeCommand::Query { tags, role, task } => {
            query(settings, args.repo.as_deref(), tags, &role, task.as_deref())
        }
        KnowledgeCommand::Search { text, nodes, limit } => search(settings, args.repo.as_deref(), &text, &nodes, limit),
        KnowledgeCommand::Tags { task, dry_run } => tags(settings, args.repo.as_deref(), &task, dry_run),
        KnowledgeCommand::Migrate { dry_run } => migrate(settings, args.repo.as_deref(), dry_run),
        KnowledgeCommand::Update { documents } => super::feedback::update(settings, args.repo.as_deref(), &documents),
        KnowledgeCommand::Status { phase } => super::feedback::report(settings, args.repo.as_deref(), phase, false),
        KnowledgeCommand::Review { phase } => super::feedback::report(settings, args.repo.as_deref(), phase, true),
        KnowledgeCommand::Promote { id } => {
            super::feedback::set_status(settings, args.repo.as_deref(), &id, agents_akms::update::Review::Promote)
        }
        KnowledgeCommand::Suppress { id } => {
            super::feedback::set_status(settings, args.repo.as_deref(), &id, agents_akms::update::Review::Suppress)
        }
        KnowledgeCommand::Restore { id } => {
            super::feedback::set_status(settings, args.repo.as_deref(), &id, agents_akms::update::Review::Restore)
        }
        KnowledgeCommand::Mirror { base, files, phase } => {
            mirror(settings, args.repo.as_deref(), base.as_deref(), &files, phase)
        }
        KnowledgeCommand::Loadout { task, phase, role, context_limit, system_prompt_tokens, no_search, force } => {
            let options = super::loadout::LoadoutOptions { role, context_limit, system_prompt_tokens, no_search };
            super::loadout::loadout_command(
                settings,
                args.repo.as_deref(),
                task.as_deref(),
                phase.as_deref(),
                options,
                force,
            )
        }
        KnowledgeCommand::ReEvaluate => super::loadout::re_evaluate(settings, args.repo.as_deref()),
        KnowledgeCommand::Build => {
            let (layout, options) = resolve(settings, args.repo.as_deref())?;
            let _lock = lock_knowledge(settings, &layout)?;
            let vault = agents_engine::knowledge::Vault { layout: layout.clone(), options };
            let compiled = service(settings).build(&vault).map_err(usage)?;
            if !compiled.global_vault_found {
                printer.note(format!(
                    "note: no global vault at {}; built from local sources only",
                    layout.global_vault.display()
                ));
            }
            for warning in &compiled.warnings {
                printer.note(format!("warning: {warning}"));
            }
            let path = layout.graph_json();
            let report = BuildReport { graph: &path, compiled: &compiled };
            printer.emit(&report, || {
                let origins: Vec<String> =
                    compiled.nodes_by_origin.iter().map(|(origin, n)| format!("{n} {origin}")).collect();
                let origins = if origins.is_empty() { String::new() } else { format!(" ({})", origins.join(", ")) };
                format!(
                    "Built {}: {} nodes{origins}, {} edges\n",
                    layout.display(&path).display(),
                    compiled.node_count,
                    compiled.edge_count
                )
            })
        }
    }
}

#[derive(Serialize)]
struct ValidateReport<'a> {
    repo: &'a Path,
    global_vault: &'a Path,
    errors: usize,
    warnings: usize,
    diagnostics: &'a [Diagnostic],
}

#[derive(Serialize)]
struct BuildReport<'a> {
    graph: &'a Path,
    #[serde(flatten)]
    compiled: &'a agents_akms::Compiled,
}

fn severity(d: &Diagnostic) -> &'static str {
    if d.is_error() { "error" } else { "warning" }
}

/// Bad sources are the user's input (exit 2); IO failures are failures.
pub(crate) fn into_anyhow(error: AkmsError) -> anyhow::Error {
    if error.is_bad_input() { UsageError(error.to_string()).into() } else { error.into() }
}

/// A knowledge service error: the caller's input exits 2, the rest 1.
pub(crate) fn usage(error: KnowledgeError) -> anyhow::Error {
    if error.is_bad_input() { UsageError(error.to_string()).into() } else { error.into() }
}

/// The repository and the global vault: the engine's one resolver
/// ([`KnowledgeService::resolve`]) from the current directory.
pub(crate) fn resolve(settings: &Settings, repo: Option<&Path>) -> anyhow::Result<(Layout, CompileOptions)> {
    let vault = service(settings).resolve(repo, &std::env::current_dir()?).map_err(usage)?;
    Ok((vault.layout, vault.options))
}

fn tags(settings: &Settings, repo: Option<&Path>, task_path: &Path, dry_run: bool) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, repo)?;
    let _lock = if dry_run { None } else { Some(lock_knowledge(settings, &layout)?) };
    let report = derive_task_tags(&layout, &options, task_path, dry_run)?;
    print_tags(settings, &report)
}

/// Derives a task's tags when its record has none, writes them back (unless
/// `dry_run`) and logs where each came from (spec 4.5).
pub(crate) fn derive_task_tags(
    layout: &Layout,
    options: &CompileOptions,
    task_path: &Path,
    dry_run: bool,
) -> anyhow::Result<TagsReport> {
    let vault = agents_engine::knowledge::Vault { layout: layout.clone(), options: options.clone() };
    agents_engine::knowledge::derive_task_tags(&vault, task_path, dry_run).map_err(usage)
}

fn print_tags(settings: &Settings, report: &TagsReport) -> anyhow::Result<()> {
    settings.printer.emit(report, || {
        let mut out = String::new();
        if !report.kept.is_empty() {
            out.push_str(&format!("kept the author's tags: {}\n", report.kept.join(", ")));
        }
        for d in &report.derived {
            let why: Vec<String> = d
                .sources
                .iter()
                .map(|s| match s {
                    agents_akms::tags::TagSource::ScopeContentRef { scope, node } => {
                        format!("scope {scope} = {node}'s content_ref")
                    }
                    agents_akms::tags::TagSource::ScopeMirror { scope, mirror, node } => {
                        format!("scope {scope} = {mirror}'s source_file, mirrored in {node}")
                    }
                    agents_akms::tags::TagSource::Title { node } => format!("title of {node}"),
                    agents_akms::tags::TagSource::Tag { node } => format!("tag of {node} in the text"),
                })
                .collect();
            out.push_str(&format!("{}  <- {}\n", d.tag, why.join("; ")));
        }
        if report.derived.is_empty() {
            out.push_str("no tags derived\n");
        }
        if report.written {
            out.push_str(&format!("wrote akms_tags to {}\n", report.task));
        }
        out
    })
}

/// Takes the repository's knowledge lock ([`KnowledgeService::lock`]),
/// saying on stderr when it waits for another writer.
pub(crate) fn lock_knowledge(settings: &Settings, layout: &Layout) -> anyhow::Result<agents_akms::lock::KnowledgeLock> {
    service(settings).lock(layout, &mut waiting(settings, layout)).map_err(usage)
}

/// The note printed while another knowledge writer holds the lock.
pub(crate) fn waiting<'a>(
    settings: &'a Settings,
    layout: &'a Layout,
) -> impl FnMut(Option<u32>, std::time::Duration) + 'a {
    move |pid, wait| {
        let holder = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        settings.printer.note(format!(
            "waiting for another knowledge writer of {}{holder} (up to {} s)",
            layout.repo_root.display(),
            wait.as_secs()
        ));
    }
}

/// Re-indexes the compiled graph for search ([`KnowledgeService::reindex`]).
/// The caller holds the knowledge lock. Returns the document count.
pub(crate) fn index_knowledge(
    settings: &Settings,
    layout: &Layout,
    compiled: &agents_akms::Compiled,
) -> anyhow::Result<usize> {
    service(settings).reindex(layout, compiled).map_err(usage)
}

fn search(settings: &Settings, repo: Option<&Path>, text: &str, nodes: &[String], limit: usize) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, repo)?;
    let vault = agents_engine::knowledge::Vault { layout: layout.clone(), options };
    let passages = service(settings)
        .search(
            &vault,
            text,
            nodes,
            limit,
            &mut |damage| settings.printer.note(format!("warning: {damage}; rebuilding the knowledge search index")),
            &mut waiting(settings, &layout),
        )
        .map_err(usage)?;
    settings.printer.emit(&passages, || {
        let mut out = String::new();
        for p in &passages {
            out.push_str(&format!("## {} ({}, {:.2})\n{}\n\n", p.node, p.title, p.score, p.passage));
        }
        if passages.is_empty() {
            out.push_str("no passage matches\n");
        }
        out
    })
}

/// What `agents knowledge migrate` reports.
#[derive(Serialize)]
struct MigrateReport<'a> {
    #[serde(flatten)]
    plan: &'a agents_akms::migrate::Plan,
    /// Whether any file was written (false for --dry-run or nothing to do).
    written: bool,
}

fn migrate(settings: &Settings, repo: Option<&Path>, dry_run: bool) -> anyhow::Result<()> {
    let (layout, _) = resolve(settings, repo)?;
    let _lock = if dry_run { None } else { Some(lock_knowledge(settings, &layout)?) };
    let plan = agents_akms::migrate::plan(&layout).map_err(into_anyhow)?;
    let written = !dry_run && plan.write().map_err(into_anyhow)?;
    for path in &plan.upstream {
        settings.printer.note(format!(
            "warning: {}: an older schema in the read-only global vault; migrate it upstream",
            path.display()
        ));
    }
    let report = MigrateReport { plan: &plan, written };
    settings.printer.emit(&report, || {
        let mut out = String::new();
        let verb = if dry_run { "would migrate" } else { "migrated" };
        for file in &plan.files {
            out.push_str(&format!("{verb} {}", file.path.display()));
            if !file.moved.is_empty() {
                out.push_str(&format!(": moved {} to local_state.yaml", file.moved.join(", ")));
            }
            out.push('\n');
        }
        if plan.files.is_empty() {
            out.push_str("Nothing to migrate: every local source is at the current schema\n");
        } else {
            out.push_str(&format!(
                "{} ({})\n",
                if dry_run { "Dry run, nothing written" } else { "Done" },
                plan.migrations.join(", ")
            ));
        }
        out
    })
}

/// The repository's propagation config; its problems are bad input.
pub(crate) fn read_config(layout: &Layout) -> anyhow::Result<agents_akms::PropagationConfig> {
    agents_engine::knowledge::read_config(layout).map_err(usage)
}

/// The task record at `path`, checked for `akms_schema: v2`.
pub(crate) fn read_task(path: &Path) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    agents_engine::knowledge::read_task(path).map_err(usage)
}

fn query(
    settings: &Settings,
    repo: Option<&Path>,
    mut tags: Vec<String>,
    role: &str,
    task: Option<&Path>,
) -> anyhow::Result<()> {
    let (layout, _) = resolve(settings, repo)?;
    let config = read_config(&layout)?;
    let graph = agents_akms::CompiledGraph::of(&layout).map_err(|e| UsageError(e.to_string()))?;
    if let Some(task) = task {
        let record = read_task(task)?;
        let given: Vec<String> = record
            .get("akms_tags")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect())
            .unwrap_or_default();
        if given.is_empty() {
            let text = agents_akms::tags::TaskText::from_record(&record);
            tags.extend(
                agents_akms::tags::derive_tags(&graph, &text, &config.tag_derivation).into_iter().map(|d| d.tag),
            );
        } else {
            tags.extend(given);
        }
    }
    let subgraph = agents_akms::query::query(&graph, &config, role, &tags).map_err(|e| UsageError(e.to_string()))?;
    settings.printer.emit(&subgraph, || {
        let mut t = crate::output::table(&["rank", "node", "title", "domain", "confidence", "hops", ""]);
        for n in &subgraph.nodes {
            let flag = if n.seed {
                "seed"
            } else if n.pitfall {
                "pitfall"
            } else {
                ""
            };
            t.add_row(vec![
                format!("{:.3}", n.rank),
                n.id.clone(),
                n.title.clone(),
                n.domain.clone(),
                format!("{:.2}", n.confidence),
                n.hops.to_string(),
                flag.to_owned(),
            ]);
        }
        let mut out = format!(
            "{} for tags {}: {} seeds, {} nodes\n{t}\n",
            subgraph.role,
            subgraph.tags.join(", "),
            subgraph.seeds.len(),
            subgraph.nodes.len()
        );
        for (step, ids) in &subgraph.excluded {
            out.push_str(&format!("left out by {step}: {}\n", ids.join(", ")));
        }
        out
    })
}

/// What `agents knowledge mirror` reports.
#[derive(Serialize)]
struct MirrorRun<'a> {
    /// The base branch diffed against; none with --files.
    base: Option<&'a str>,
    /// The files considered, sorted.
    files: &'a [String],
    #[serde(flatten)]
    report: &'a agents_akms::MirrorReport,
    /// `off`, or `configured, not run` (the mirror path never calls a model).
    semantic_drift_check: &'static str,
}

fn mirror(
    settings: &Settings,
    repo: Option<&Path>,
    base: Option<&str>,
    files: &[String],
    phase: Option<u32>,
) -> anyhow::Result<()> {
    let (layout, _) = resolve(settings, repo)?;
    let _lock = lock_knowledge(settings, &layout)?;
    let config = read_config(&layout)?;
    let (base, mut files) = if files.is_empty() {
        let base = base.unwrap_or(&config.orchestrator.base_branch);
        (Some(base), agents_akms::changed_files(&layout.repo_root, base).map_err(into_anyhow)?)
    } else {
        // An absolute path inside the repository is taken relative to it;
        // any other is left for the library to refuse.
        let root = layout.repo_root.canonicalize().unwrap_or_else(|_| layout.repo_root.clone());
        let relative = |file: &String| {
            let path = Path::new(file);
            let inside = path.is_absolute().then(|| path.canonicalize().ok()).flatten();
            match inside.as_deref().and_then(|p| p.strip_prefix(&root).ok()) {
                Some(rel) => rel.to_string_lossy().into_owned(),
                None => file.clone(),
            }
        };
        (None, files.iter().map(relative).collect())
    };
    files.sort();
    files.dedup();
    let options = agents_akms::MirrorOptions { phase };
    let report = agents_akms::mirror_files(&layout.repo_root, &files, &options).map_err(into_anyhow)?;
    let semantic = config.semantic_drift_check();
    if semantic {
        settings.printer.note(
            "note: model_routing asks for the semantic docstring-drift check; it is not run: \
             `agents knowledge mirror` is deterministic and runs the structural check only (spec 3.2, 5.6)",
        );
    }
    for file in &report.drift {
        for drift in &file.symbols {
            settings.printer.note(format!("drift: {}: {}", file.file, drift.describe()));
        }
    }
    let run = MirrorRun {
        base,
        files: &files,
        report: &report,
        semantic_drift_check: if semantic { "configured, not run" } else { "off" },
    };
    settings.printer.emit(&run, || {
        let mut out = String::new();
        for path in &report.written {
            out.push_str(&format!("wrote     {path}\n"));
        }
        for path in &report.unchanged {
            out.push_str(&format!("unchanged {path}\n"));
        }
        for path in &report.removed {
            out.push_str(&format!("removed   {path}\n"));
        }
        for skipped in &report.skipped {
            out.push_str(&format!("skipped   {} ({})\n", skipped.file, skipped.reason));
        }
        for file in &report.drift {
            out.push_str(&format!("draft     {} (docstring drift)\n", file.mirror));
        }
        let against = base.map_or_else(String::new, |b| format!(" changed against {b}"));
        out.push_str(&format!(
            "Mirrored {} file(s){against}: {} written, {} unchanged, {} removed, {} skipped, {} with docstring drift\n",
            files.len(),
            report.written.len(),
            report.unchanged.len(),
            report.removed.len(),
            report.skipped.len(),
            report.drift.len()
        ));
        out
    })
}
