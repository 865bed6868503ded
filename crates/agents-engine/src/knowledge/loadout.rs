//! Loadouts, for `agents knowledge loadout|re-evaluate`, the MCP tool
//! `get_loadout` and the orchestrator: a task record -> tags -> subgraph
//! query -> search within the node set -> `knowledge/loadouts/<task>-loadout.md`
//! (spec 4.6, 5.4): the repository, the graph, the tokenizer and the search
//! layer are resolved once per run ([`Loadouts::open`]), `agents_akms::loadout`
//! makes each, and the files are written here.
//!
//! A loadout is reused (FR-L08) only when what would be generated now is the
//! file on disk, its `generated_at` aside: the graph, the config, the task
//! record and the nodes' documents all count, so the result never depends on
//! what is already on disk (NFR-D02). The passage cache is keyed the same way.
//! `knowledge/loadouts/index.json` remembers how each was made so
//! `re-evaluate` can regenerate the stale ones.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agents_akms::PropagationConfig;
use agents_akms::loadout::{self, LoadoutRequest};
use agents_akms::vault::Layout;
use agents_core::tokens::{TokenCounter, Tokenizer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use agents_akms::CompiledGraph;
use std::sync::Arc;

use super::{KnowledgeError, KnowledgeService, read_config, read_task, write, write_json};

type Result<T, E = KnowledgeError> = std::result::Result<T, E>;

/// How a loadout is made (what the index remembers for re-evaluation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadoutOptions {
    pub role: String,
    /// The model's context window; `None`: unknown (the config's default_mode).
    pub context_limit: Option<u64>,
    pub system_prompt_tokens: u64,
    /// Leave the search layer out (the degraded mode of NFR-R05).
    pub no_search: bool,
}

/// One entry of `knowledge/loadouts/index.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct IndexEntry {
    /// The task record's path, relative to the repository when inside it.
    task: String,
    phase: Option<String>,
    #[serde(flatten)]
    options: LoadoutOptions,
}

/// What one loadout run reports.
#[derive(Clone, Debug, Serialize)]
pub struct LoadoutReport {
    pub task_id: String,
    /// Relative to the repository.
    pub path: String,
    pub graph_version: String,
    pub mode: &'static str,
    pub qmd_available: bool,
    pub available_context: Option<i64>,
    pub node_count: usize,
    pub content_tokens: usize,
    pub trimmed: Vec<String>,
    /// The file was current and left as it was (FR-L08).
    pub reused: bool,
}

/// Everything the loadouts of one run share: read once.
pub struct Loadouts {
    pub layout: Layout,
    config: PropagationConfig,
    graph: Arc<CompiledGraph>,
    graph_version: String,
    tokenizer: Tokenizer,
    index_dir: PathBuf,
    text_kind: agents_core::config::TextBackendKind,
    docs: BTreeMap<String, agents_search::TextDoc>,
    backend: Option<Box<dyn agents_search::TextBackend>>,
    /// The embedding model, when one is configured and present.
    embedder: Option<agents_search::vector::StaticEmbedder>,
    /// Loadouts are written: the repository's knowledge lock, held from
    /// before the graph is read to the last write.
    _lock: agents_akms::lock::KnowledgeLock,
    /// The global vault's directory, absolute: where a loadout says global
    /// nodes are.
    global_vault: String,
}

impl Loadouts {
    /// Resolves the repository (as [`KnowledgeService::resolve`]), takes its
    /// knowledge lock (`waiting` is told when another writer holds it) and
    /// reads the graph, the documents and the models.
    pub fn open(
        service: &KnowledgeService,
        repo: Option<&Path>,
        cwd: &Path,
        waiting: &mut dyn FnMut(Option<u32>, std::time::Duration),
    ) -> Result<Loadouts> {
        let layout = service.resolve(repo, cwd)?.layout;
        let lock = service.lock(&layout, waiting)?;
        let config = read_config(&layout)?;
        let graph = CompiledGraph::of(&layout).map_err(|e| KnowledgeError::Invalid(e.to_string()))?;
        let graph_version = graph.version().to_owned();
        let tokenizer = service.tokenizer();
        let docs = agents_akms::search::documents(&layout, &graph).into_iter().map(|d| (d.id.clone(), d)).collect();
        let embedder = match crate::load_embedder(service.home(), service.config()) {
            Ok(model) => Some(model),
            Err(why) => {
                tracing::debug!(%why, "loadout passages by BM25 only");
                None
            }
        };
        let global_vault = std::path::absolute(&layout.global_vault)
            .unwrap_or_else(|_| layout.global_vault.clone())
            .to_string_lossy()
            .into_owned();
        Ok(Loadouts {
            _lock: lock,
            embedder,
            global_vault,
            graph_version,
            index_dir: service.index_dir(&layout),
            text_kind: service.text_backend(),
            docs,
            backend: None,
            layout,
            config,
            graph,
            tokenizer,
        })
    }

    /// The search layer, opened read-only on first use (no index writer;
    /// the lock this context holds keeps rebuilds away); `None` when its
    /// index is missing.
    fn search(&mut self) -> Result<Option<&dyn agents_search::TextBackend>> {
        if self.backend.is_none() {
            match agents_akms::search::open_index(&self.index_dir, self.text_kind)? {
                Some(backend) => self.backend = Some(backend),
                None => return Ok(None),
            }
        }
        Ok(self.backend.as_deref())
    }

    pub fn loadouts_dir(&self) -> PathBuf {
        self.layout.knowledge().join("loadouts")
    }
}

/// The header's timestamp: `$SOURCE_DATE_EPOCH` (seconds, the
/// reproducible-builds convention) when set, else now.
fn generated_at() -> Result<String> {
    let time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(secs) => {
            let secs: i64 = secs.trim().parse().map_err(|_| {
                KnowledgeError::Invalid(format!("SOURCE_DATE_EPOCH: {secs:?} is not a number of seconds"))
            })?;
            agents_core::ids::from_epoch_secs(secs)
                .ok_or_else(|| KnowledgeError::Invalid(format!("SOURCE_DATE_EPOCH: {secs} is out of range")))?
        }
        Err(_) => agents_core::ids::now_utc(),
    };
    Ok(time.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

/// What a task record resolves to before anything is written.
struct Prepared {
    task_id: String,
    file: String,
    subgraph: agents_akms::query::Subgraph,
}

/// Checks `record` and runs its subgraph query: every way a task record can
/// be bad input fails here, so a phase is checked whole before any write.
fn prepare(ctx: &Loadouts, record: &Map<String, Value>, origin: &str, options: &LoadoutOptions) -> Result<Prepared> {
    let task_id = record
        .get("task_id")
        .and_then(Value::as_str)
        .ok_or_else(|| KnowledgeError::Invalid(format!("{origin}: task_id: a task record needs a string task_id")))?
        .to_owned();
    if let Some(found) = record.get("akms_schema").filter(|v| v.as_str() != Some(agents_akms::SCHEMA_VERSION)) {
        return Err(KnowledgeError::Invalid(format!(
            "{origin}: akms_schema: SchemaVersionError: expected {:?}, found {found}",
            agents_akms::SCHEMA_VERSION
        )));
    }
    let file =
        loadout::file_name(&task_id, &options.role).map_err(|e| KnowledgeError::Invalid(format!("{origin}: {e}")))?;
    let mut tags = strings(record.get("akms_tags"));
    if tags.is_empty() {
        let text = agents_akms::tags::TaskText::from_record(record);
        tags = agents_akms::tags::derive_tags(&ctx.graph, &text, &ctx.config.tag_derivation)
            .into_iter()
            .map(|d| d.tag)
            .collect();
    }
    // No tag given or derivable (a cold start): a loadout without nodes, which says so.
    let subgraph = if tags.iter().all(|t| t.trim().is_empty()) {
        agents_akms::query::empty(&ctx.config, &options.role)
    } else {
        agents_akms::query::query(&ctx.graph, &ctx.config, &options.role, &tags)
    }
    .map_err(|e| KnowledgeError::Invalid(format!("{origin}: {e}")))?;
    Ok(Prepared { task_id, file, subgraph })
}

/// Generates (or reuses) the loadout of `record`. `origin` names the record in
/// errors (its file, or `task`). Returns the report and the loadout's text.
pub fn make(
    ctx: &mut Loadouts,
    record: &Map<String, Value>,
    origin: &str,
    phase: Option<String>,
    options: &LoadoutOptions,
    force: bool,
) -> Result<(LoadoutReport, String)> {
    let Prepared { task_id, file, subgraph } = prepare(ctx, record, origin, options)?;
    // The task's own tokens, without the loadout_path this command writes.
    let mut counted = record.clone();
    counted.remove("loadout_path");
    let task_tokens = ctx.tokenizer.count(&serde_json::to_string(&counted)?) as u64;
    let available = options
        .context_limit
        .map(|limit| loadout::available_context(limit, options.system_prompt_tokens, task_tokens, &ctx.config));
    let phase = phase.or_else(|| match record.get("phase") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    });
    let request = LoadoutRequest {
        title: record.get("title").and_then(Value::as_str).unwrap_or(&task_id).to_owned(),
        task_id: task_id.clone(),
        phase,
        role: options.role.clone(),
        seed_tags: subgraph.tags.clone(),
        available_context: available,
        generated_at: generated_at()?,
        graph_version: ctx.graph_version.clone(),
        global_vault: Some(ctx.global_vault.clone()),
    };
    let path = ctx.loadouts_dir().join(&file);
    let shown = ctx.layout.display(&path).to_string_lossy().replace('\\', "/");
    let search_on = !options.no_search && ctx.config.loadout.search_layer && ctx.search()?.is_some();

    let ids: Vec<String> = subgraph.nodes.iter().map(|n| n.id.clone()).collect();
    let query = {
        let text = agents_akms::tags::TaskText::from_record(record).text;
        format!("{} {text}", subgraph.tags.join(" "))
    };
    // The passage cache key: the graph, and every other input (NFR-D02).
    let inputs = loadout::inputs_hash(&ctx.config, &counted, &ctx.global_vault, &ctx.docs, &ids);
    let key = format!("{}-{inputs}", ctx.graph_version);
    let passages = match (search_on, ctx.backend.as_deref()) {
        (true, Some(backend)) => Some(agents_akms::search::cached_passages(
            &ctx.layout,
            &key,
            backend,
            ctx.embedder.as_ref().map(|e| e as &dyn agents_search::vector::Embedder),
            &ctx.docs,
            &ids,
            &query,
            ctx.config.loadout.semantic_floor as f32,
        )?),
        _ => None,
    };
    let made =
        loadout::generate(&request, &ctx.graph, &subgraph, &ctx.docs, passages.as_deref(), &ctx.config, &ctx.tokenizer);
    // FR-L08: what is on disk is exactly what would be written (its
    // timestamp aside): keep it.
    let existing = if force { None } else { std::fs::read_to_string(&path).ok() };
    let existing = existing.filter(|old| loadout::same_loadout(old, &made.text));
    let report = LoadoutReport {
        task_id,
        path: shown,
        graph_version: ctx.graph_version.clone(),
        mode: loadout::mode_name(made.mode),
        qmd_available: made.qmd_available,
        available_context: available,
        node_count: made.node_count,
        content_tokens: made.content_tokens,
        trimmed: made.trimmed,
        reused: existing.is_some(),
    };
    if let Some(existing) = existing {
        return Ok((report, existing));
    }
    write(&path, made.text.as_bytes())?;
    Ok((report, made.text))
}

fn index_path(ctx: &Loadouts) -> PathBuf {
    ctx.loadouts_dir().join("index.json")
}

fn read_index(ctx: &Loadouts) -> Result<BTreeMap<String, IndexEntry>> {
    let path = index_path(ctx);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| KnowledgeError::Invalid(format!("{}:{}: not a loadout index: {e}", path.display(), e.line()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(source) => Err(KnowledgeError::Io { path, action: "read", source }),
    }
}

/// A task file's loadout: made, `loadout_path` written back into the record
/// (spec 4.5), remembered in the index.
fn for_task_file(
    ctx: &mut Loadouts,
    index: &mut BTreeMap<String, IndexEntry>,
    task: &Path,
    phase: Option<String>,
    options: &LoadoutOptions,
    force: bool,
) -> Result<LoadoutReport> {
    let mut record = read_task(task)?;
    let (report, _) = make(ctx, &record, &task.display().to_string(), phase.clone(), options, force)?;
    if record.get("loadout_path").and_then(Value::as_str) != Some(report.path.as_str()) {
        record.insert("loadout_path".into(), report.path.clone().into());
        write_json(task, &record)?;
    }
    let absolute = std::path::absolute(task).unwrap_or_else(|_| task.to_path_buf());
    let shown = match absolute.strip_prefix(&ctx.layout.repo_root) {
        Ok(inside) => inside.to_string_lossy().replace('\\', "/"),
        Err(_) => absolute.to_string_lossy().into_owned(),
    };
    let name = report.path.rsplit('/').next().unwrap_or(&report.path).to_owned();
    index.insert(name, IndexEntry { task: shown, phase, options: options.clone() });
    Ok(report)
}

/// The loadout of one task file, as `agents orchestrate` asks for it before
/// dispatch: made (or reused), `loadout_path` written back into the record,
/// remembered for `re-evaluate`.
pub fn for_task(
    service: &KnowledgeService,
    repo: &Path,
    task: &Path,
    phase: Option<String>,
    options: &LoadoutOptions,
    waiting: &mut dyn FnMut(Option<u32>, std::time::Duration),
) -> Result<LoadoutReport> {
    let mut ctx = Loadouts::open(service, Some(repo), repo, waiting)?;
    let mut index = read_index(&ctx)?;
    let report = for_task_file(&mut ctx, &mut index, task, phase, options, false)?;
    write_json(&index_path(&ctx), &index)?;
    Ok(report)
}

/// The task files of a phase plan: `{"phase": N, "tasks": ["path", ...]}`,
/// paths relative to the plan's folder.
fn plan_tasks(plan: &Path) -> Result<(Option<String>, Vec<PathBuf>)> {
    let text = std::fs::read_to_string(plan)
        .map_err(|e| KnowledgeError::Invalid(format!("{}: cannot read the phase plan: {e}", plan.display())))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        KnowledgeError::Invalid(format!("{}:{}: not a phase plan (JSON): {e}", plan.display(), e.line()))
    })?;
    let phase = match value.get("phase") {
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::String(s)) => Some(s.clone()),
        _ => None,
    };
    let dir = plan.parent().unwrap_or(Path::new("."));
    let tasks = value
        .get("tasks")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            KnowledgeError::Invalid(format!(
                "{}: tasks: a phase plan needs a list of task record paths",
                plan.display()
            ))
        })?
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_str().map(|p| dir.join(p)).ok_or_else(|| {
                KnowledgeError::Invalid(format!("{}: tasks[{i}]: must be a path to a task record", plan.display()))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((phase, tasks))
}

/// The loadouts of a task file and (or) of every task of a phase plan, in
/// that order; bad input changes nothing (every task of the plan is checked
/// before the first write).
pub fn make_loadouts(
    ctx: &mut Loadouts,
    task: Option<&Path>,
    plan: Option<&Path>,
    options: &LoadoutOptions,
    force: bool,
) -> Result<Vec<LoadoutReport>> {
    let mut index = read_index(ctx)?;
    let mut reports = Vec::new();
    if let Some(task) = task {
        reports.push(for_task_file(ctx, &mut index, task, None, options, force)?);
    }
    if let Some(plan) = plan {
        let (phase, tasks) = plan_tasks(plan)?;
        for task in &tasks {
            prepare(ctx, &read_task(task)?, &task.display().to_string(), options)?;
        }
        for task in tasks {
            reports.push(for_task_file(ctx, &mut index, &task, phase.clone(), options, force)?);
        }
    }
    write_json(&index_path(ctx), &index)?;
    Ok(reports)
}

/// What [`re_evaluate`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReEvaluation {
    /// The loadouts regenerated (the current ones are left out).
    pub reports: Vec<LoadoutReport>,
    /// Remembered loadouts whose task record is gone, left as they were:
    /// (loadout file, task record).
    pub orphaned: Vec<(String, String)>,
}

/// `agents knowledge re-evaluate`: regenerates every remembered loadout that
/// is not what would be generated now (the graph, the config, its task record
/// or its nodes' documents changed); reports only those.
pub fn re_evaluate(ctx: &mut Loadouts) -> Result<ReEvaluation> {
    let index = read_index(ctx)?;
    let mut new_index = index.clone();
    let mut run = ReEvaluation::default();
    for (name, entry) in &index {
        let task = ctx.layout.repo_root.join(&entry.task);
        if !task.exists() {
            run.orphaned.push((name.clone(), entry.task.clone()));
            continue;
        }
        let report = for_task_file(ctx, &mut new_index, &task, entry.phase.clone(), &entry.options, false)?;
        if !report.reused {
            run.reports.push(report);
        }
    }
    write_json(&index_path(ctx), &new_index)?;
    Ok(run)
}
