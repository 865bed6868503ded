//! `agents knowledge init|validate|build|tags|query|search|migrate|mirror`
//! (update, status, review, promote, suppress and restore are in `feedback`, loadouts
//! in `loadout.rs`): the repository's `knowledge/` folder over the global
//! vault (AKMS). Thin: find the repository and the vault, call
//! `agents_akms`, print. Every command that writes `knowledge/` holds the
//! repository's knowledge lock ([`lock_knowledge`]); readers never do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agents_akms::vault::{Layout, expand_home, find_repo_root};
use agents_akms::{AkmsError, CompileOptions, DEFAULT_CONFIG_YAML, Diagnostic};
use serde::Serialize;

use crate::cli::{KnowledgeArgs, KnowledgeCommand};
use crate::exit::UsageError;
use crate::settings::Settings;

/// The global vault when nothing configures one (spec 4.8).
const DEFAULT_GLOBAL_VAULT: &str = "~/.claude/akms/nodes";

pub fn run(settings: &Settings, args: KnowledgeArgs) -> anyhow::Result<()> {
    let printer = settings.printer;
    match args.command {
        KnowledgeCommand::Init => {
            let root = match &args.repo {
                Some(repo) => existing_dir(repo)?,
                None => {
                    let cwd = std::env::current_dir()?;
                    find_repo_root(&cwd).unwrap_or(cwd)
                }
            };
            let (layout, _) = resolve(settings, Some(&root))?;
            let report = init(&layout.repo_root)?;
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
            let compiled = agents_akms::build(&layout, &options).map_err(into_anyhow)?;
            let indexed = index_knowledge(settings, &layout, &compiled)?;
            tracing::info!(documents = indexed, "knowledge indexed for search");
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

#[derive(Serialize)]
struct InitReport {
    knowledge: PathBuf,
    created: Vec<String>,
    kept: Vec<String>,
}

fn severity(d: &Diagnostic) -> &'static str {
    if d.is_error() { "error" } else { "warning" }
}

/// Bad sources are the user's input (exit 2); IO failures are failures.
pub(crate) fn into_anyhow(error: AkmsError) -> anyhow::Error {
    if error.is_bad_input() { UsageError(error.to_string()).into() } else { error.into() }
}

fn existing_dir(path: &Path) -> anyhow::Result<PathBuf> {
    if !path.is_dir() {
        return Err(UsageError(format!("--repo {}: not a directory", path.display())).into());
    }
    Ok(path.to_path_buf())
}

/// The repository and the global vault: $AKMS_GLOBAL_VAULT (merged into the
/// configuration by the settings), the configuration's `global-vault`, the
/// repository's propagation_config.yaml, the default.
pub(crate) fn resolve(settings: &Settings, repo: Option<&Path>) -> anyhow::Result<(Layout, CompileOptions)> {
    let root = match repo {
        Some(repo) => existing_dir(repo)?,
        None => {
            let cwd = std::env::current_dir()?;
            find_repo_root(&cwd).ok_or_else(|| {
                UsageError(format!(
                    "no knowledge/ folder in {} or above: run `agents knowledge init` or pass --repo",
                    cwd.display()
                ))
            })?
        }
    };
    let mut layout = Layout::new(root, PathBuf::new());
    let from_repo = match agents_akms::read_config(&layout) {
        Ok(config) => config.global_vault,
        // Reported by validate and build with the other problems.
        Err(_) => None,
    };
    // graph.json records the vault as the repository configures it (its
    // propagation_config.yaml, else the default), never as this machine's
    // environment spells it: the same sources give the same bytes (and
    // graph_version) for everyone, whatever $AKMS_GLOBAL_VAULT says.
    let recorded = from_repo.clone().unwrap_or_else(|| DEFAULT_GLOBAL_VAULT.to_owned());
    let display =
        settings.config.config().global_vault.clone().or(from_repo).unwrap_or_else(|| DEFAULT_GLOBAL_VAULT.to_owned());
    layout.global_vault = expand_home(&display, dirs::home_dir().as_deref());
    // The vault is read-only: a repository inside it would write there.
    if let (Ok(repo), Ok(vault)) = (layout.repo_root.canonicalize(), layout.global_vault.canonicalize())
        && repo.starts_with(&vault)
    {
        return Err(UsageError(format!(
            "{} is inside the global vault, which is read-only",
            layout.repo_root.display()
        ))
        .into());
    }
    Ok((layout, CompileOptions { global_vault_display: recorded }))
}

/// Creates the folders of `knowledge/` and the default config, keeping
/// whatever is already there.
fn init(root: &Path) -> anyhow::Result<InitReport> {
    let layout = Layout::new(root, PathBuf::new());
    let knowledge = layout.knowledge();
    let mut report = InitReport { knowledge: knowledge.clone(), created: Vec::new(), kept: Vec::new() };
    for dir in ["local-nodes", "code-mirror", "sessions", "loadouts", "graph"] {
        let path = knowledge.join(dir);
        let list = if path.is_dir() { &mut report.kept } else { &mut report.created };
        std::fs::create_dir_all(&path).map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", path.display()))?;
        list.push(format!("knowledge/{dir}/"));
    }
    let config = layout.propagation_config();
    let name = "knowledge/graph/propagation_config.yaml".to_owned();
    if config.exists() {
        report.kept.push(name);
    } else {
        agents_store::atomic_write(&config, DEFAULT_CONFIG_YAML.as_bytes())
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", config.display()))?;
        report.created.push(name);
    }
    Ok(report)
}

/// What `agents knowledge tags` reports.
#[derive(Serialize)]
pub(crate) struct TagsReport {
    task: String,
    task_id: Option<String>,
    /// Tags the author gave; derivation only fills an empty list.
    pub kept: Vec<String>,
    pub derived: Vec<agents_akms::tags::DerivedTag>,
    /// Whether the task file was rewritten with the derived tags.
    written: bool,
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
    let config = read_config(layout)?;
    let mut record = read_task(task_path)?;
    let kept: Vec<String> = match record.get("akms_tags") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    UsageError(format!("{}: akms_tags: every tag must be a string", task_path.display()))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(UsageError(format!("{}: akms_tags: must be a list of strings", task_path.display())).into());
        }
    };
    let compiled = agents_akms::compile(layout, options).map_err(into_anyhow)?;
    let graph: serde_json::Value = serde_json::from_str(&compiled.json)?;
    let derived = agents_akms::tags::derive_tags(
        &graph,
        &agents_akms::tags::TaskText::from_record(&record),
        &config.tag_derivation,
    );
    let task_id = record.get("task_id").and_then(|v| v.as_str()).map(str::to_owned);
    let written = kept.is_empty() && !derived.is_empty() && !dry_run;
    if written {
        let names: Vec<serde_json::Value> = derived.iter().map(|d| d.tag.clone().into()).collect();
        record.insert("akms_tags".to_owned(), serde_json::Value::Array(names));
        let mut json = serde_json::to_string_pretty(&record)?;
        json.push('\n');
        agents_store::atomic_write(task_path, json.as_bytes())?;
        if config.tag_derivation.log_derived_tags {
            let log = layout.knowledge().join("logs").join("tag-derivation.jsonl");
            let mut lines = match std::fs::read_to_string(&log) {
                Ok(existing) => existing,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", log.display())),
            };
            let entry = serde_json::json!({
                "derived_at": agents_core::ids::to_iso(agents_core::ids::now_utc()),
                "task": task_path.display().to_string(),
                "task_id": task_id,
                "tags": derived,
            });
            lines.push_str(&serde_json::to_string(&entry)?);
            lines.push('\n');
            agents_store::atomic_write(&log, lines.as_bytes())?;
        }
    }
    Ok(TagsReport { task: task_path.display().to_string(), task_id, kept, derived, written })
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

/// The directory of the repository's knowledge search index.
pub(crate) fn knowledge_index(settings: &Settings, layout: &Layout) -> PathBuf {
    let kind = settings.config.config().context.backends.text;
    agents_akms::search::index_dir(&settings.home.root().join("search"), &layout.repo_root).join(kind.as_str())
}

/// Takes the repository's knowledge lock, for a command that writes its
/// `knowledge/` (or its search index): waits for another writer up to
/// `$AGENTS_KNOWLEDGE_WAIT` seconds (default 120), saying so on stderr, then
/// refuses naming the holder. Taking it finishes what a killed writer left
/// (`agents_akms::lock`).
pub(crate) fn lock_knowledge(settings: &Settings, layout: &Layout) -> anyhow::Result<agents_akms::lock::KnowledgeLock> {
    let wait =
        match std::env::var("AGENTS_KNOWLEDGE_WAIT") {
            Ok(text) => Duration::from_secs(text.trim().parse().map_err(|_| {
                UsageError(format!("AGENTS_KNOWLEDGE_WAIT: `{text}` is not a whole number of seconds"))
            })?),
            Err(_) => agents_akms::lock::DEFAULT_WAIT,
        };
    let printer = settings.printer;
    let repo = &layout.repo_root;
    agents_akms::lock::acquire(&settings.home.locks_dir(), layout, wait, &mut |pid| {
        let holder = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
        printer.note(format!(
            "waiting for another knowledge writer of {}{holder} (up to {} s)",
            repo.display(),
            wait.as_secs()
        ));
    })
    .map_err(into_anyhow)
}

/// Rebuilds the knowledge search index from the compiled graph (it is small:
/// a rebuild is cheaper than tracking what changed) beside the live one,
/// which it then replaces (`agents_akms::search::rebuild_index`): a search
/// never finds it missing. The caller holds the knowledge lock. Returns the
/// document count.
pub(crate) fn index_knowledge(
    settings: &Settings,
    layout: &Layout,
    compiled: &agents_akms::Compiled,
) -> anyhow::Result<usize> {
    let graph: serde_json::Value = serde_json::from_str(&compiled.json)?;
    index_graph(settings, layout, &graph)
}

fn index_graph(settings: &Settings, layout: &Layout, graph: &serde_json::Value) -> anyhow::Result<usize> {
    let docs = agents_akms::search::documents(layout, graph);
    let dir = knowledge_index(settings, layout);
    let kind = settings.config.config().context.backends.text;
    agents_akms::search::rebuild_index(&dir, kind, &docs)?;
    Ok(docs.len())
}

/// One passage `agents knowledge search` prints.
#[derive(Serialize)]
struct Passage {
    node: String,
    title: String,
    file: String,
    score: f32,
    passage: String,
}

fn search(settings: &Settings, repo: Option<&Path>, text: &str, nodes: &[String], limit: usize) -> anyhow::Result<()> {
    let (layout, _) = resolve(settings, repo)?;
    let dir = knowledge_index(settings, &layout);
    let kind = settings.config.config().context.backends.text;
    // Read-only: no lock, no index writer; any number of searches at once.
    let run = |backend: &dyn agents_search::TextBackend| {
        // Scoped to a node set: search deep enough that the set's best survive.
        let deep = if nodes.is_empty() { limit } else { (backend.doc_count()? as usize).max(limit) };
        backend.search(text, deep, &agents_search::SearchFilter::default())
    };
    let hits = match agents_akms::search::with_index(&dir, kind, run) {
        Ok(Some(hits)) => hits,
        // Missing or unreadable: rebuilt from graph.json, never an empty answer.
        outcome => {
            let graph_path = layout.graph_json();
            if !graph_path.is_file() {
                outcome?;
                return Err(UsageError(format!(
                    "{}: no knowledge search index yet; run `agents knowledge build` first",
                    layout.repo_root.display()
                ))
                .into());
            }
            if let Err(e) = &outcome {
                settings.printer.note(format!("warning: {e}; rebuilding the knowledge search index"));
            }
            let _lock = lock_knowledge(settings, &layout)?;
            match agents_akms::search::with_index(&dir, kind, run) {
                // Another process rebuilt it meanwhile.
                Ok(Some(hits)) => hits,
                _ => {
                    let shown = layout.display(&graph_path);
                    let json = std::fs::read_to_string(&graph_path)
                        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", shown.display()))?;
                    let graph: serde_json::Value = serde_json::from_str(&json).map_err(|e| {
                        UsageError(format!(
                            "{}:{}: not a compiled graph ({e}); run `agents knowledge build`",
                            shown.display(),
                            e.line()
                        ))
                    })?;
                    index_graph(settings, &layout, &graph)?;
                    agents_akms::search::with_index(&dir, kind, run)?.ok_or_else(|| {
                        anyhow::anyhow!("{}: the knowledge search index is missing after a rebuild", dir.display())
                    })?
                }
            }
        }
    };
    let graph = std::fs::read_to_string(layout.graph_json())
        .ok()
        .and_then(|json| serde_json::from_str::<serde_json::Value>(&json).ok())
        .unwrap_or_default();
    let docs: std::collections::BTreeMap<String, agents_search::TextDoc> =
        agents_akms::search::documents(&layout, &graph).into_iter().map(|d| (d.id.clone(), d)).collect();
    let words = agents_search::code_tokens(text);
    let passages: Vec<Passage> = hits
        .into_iter()
        .filter(|hit| nodes.is_empty() || nodes.contains(&hit.id))
        .take(limit)
        .map(|hit| {
            let doc = docs.get(&hit.id);
            Passage {
                title: doc.map(|d| d.name.clone()).unwrap_or_default(),
                file: hit.path.clone(),
                score: hit.score,
                passage: doc
                    .and_then(|d| agents_akms::search::best_passage(&d.body, &words))
                    .map(|(_, text)| text)
                    .unwrap_or_default(),
                node: hit.id,
            }
        })
        .collect();
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
    agents_akms::read_config(layout).map_err(|diagnostics| {
        let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        UsageError(lines.join("; ")).into()
    })
}

/// The task record at `path`, checked for `akms_schema: v2`.
pub(crate) fn read_task(path: &Path) -> anyhow::Result<serde_json::Map<String, serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("{}: cannot read the task record: {e}", path.display())))?;
    let record: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("{}:{}: not a task record (a JSON object): {e}", path.display(), e.line())))?;
    match record.get("akms_schema").and_then(|v| v.as_str()) {
        Some(agents_akms::SCHEMA_VERSION) => Ok(record),
        found => Err(UsageError(format!(
            "{}: akms_schema: SchemaVersionError: expected {:?}, found {}",
            path.display(),
            agents_akms::SCHEMA_VERSION,
            found.map_or_else(|| "none".to_owned(), |v| format!("{v:?}"))
        ))
        .into()),
    }
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
    let path = layout.graph_json();
    let json = std::fs::read_to_string(&path).map_err(|_| {
        UsageError(format!(
            "{}: no compiled graph; run `agents knowledge build` first",
            layout.display(&path).display()
        ))
    })?;
    let graph: serde_json::Value = serde_json::from_str(&json)
        .map_err(|e| UsageError(format!("{}:{}: not a compiled graph: {e}", path.display(), e.line())))?;
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
