//! The knowledge service: the use cases of a repository's `knowledge/`
//! folder over the global vault (AKMS), for `agents knowledge`, the MCP
//! server's knowledge tools and the orchestrator.
//!
//! One resolver finds the repository and the global vault
//! ([`KnowledgeService::resolve`], over [`resolve_global_vault`]), and the
//! `knowledge-graph` context strategy ([`KnowledgeGraphStrategy`]) uses the
//! same one, so a query and `agents knowledge` read the same vault. The
//! service creates the folders ([`KnowledgeService::init`]), derives and
//! writes a task's tags ([`KnowledgeService::derive_task_tags`]), builds the
//! graph and re-indexes it for search in one step
//! ([`KnowledgeService::build`], [`KnowledgeService::update`]), records an
//! agent's session ([`KnowledgeService::record_session`]) and makes loadouts
//! ([`loadout`]). Every writer holds the repository's knowledge lock
//! ([`KnowledgeService::lock`]); readers never do.

pub mod loadout;
mod strategy;

use std::path::{Path, PathBuf};
use std::time::Duration;

use agents_akms::vault::{Layout, expand_home, find_repo_root};
use agents_akms::{AkmsError, CompileOptions, Compiled, CompiledGraph, DEFAULT_CONFIG_YAML, PropagationConfig};
use serde::Serialize;

use crate::Home;
pub use loadout::{LoadoutOptions, LoadoutReport};
pub use strategy::{KNOWLEDGE_GRAPH, KnowledgeGraphStrategy};

/// The agent role whose profile a knowledge query or loadout uses when none
/// is named.
pub const DEFAULT_ROLE: &str = "implementer";

/// The global vault when nothing configures one (spec 4.8).
pub const DEFAULT_GLOBAL_VAULT: &str = "~/.claude/akms/nodes";

/// What went wrong in a knowledge use case.
#[derive(Debug, thiserror::Error)]
pub enum KnowledgeError {
    /// A `--repo` that is not a directory.
    #[error("--repo {}: not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// No repository with `knowledge/` (or `.git`) above the directory.
    #[error("no knowledge/ folder in {} or above: run `agents knowledge init` or pass --repo", .0.display())]
    NoKnowledge(PathBuf),
    /// The repository lies inside the read-only global vault.
    #[error("{} is inside the global vault, which is read-only", .0.display())]
    InsideVault(PathBuf),
    /// Input the caller can fix: a bad task record, config, memory document,
    /// environment variable; the message says what and where.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Akms(#[from] AkmsError),
    #[error("{}: cannot {action}: {source}", path.display())]
    Io { path: PathBuf, action: &'static str, source: std::io::Error },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Search(#[from] agents_search::SearchError),
    #[error(transparent)]
    Loadout(#[from] agents_akms::loadout::LoadoutError),
}

impl KnowledgeError {
    /// Whether the caller's input is at fault (rather than the system).
    pub fn is_bad_input(&self) -> bool {
        match self {
            KnowledgeError::NotADirectory(_)
            | KnowledgeError::NoKnowledge(_)
            | KnowledgeError::InsideVault(_)
            | KnowledgeError::Invalid(_) => true,
            KnowledgeError::Akms(e) => e.is_bad_input(),
            KnowledgeError::Io { .. }
            | KnowledgeError::Json(_)
            | KnowledgeError::Search(_)
            | KnowledgeError::Loadout(_) => false,
        }
    }
}

/// The user's home folder, for `~` in a configured vault.
pub fn user_home() -> Option<PathBuf> {
    dirs::home_dir()
}

/// The global vault of a repository, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalVault {
    /// Where it is: `~` expanded.
    pub path: PathBuf,
    /// How `graph.json` records it: as the repository configures it (its
    /// `propagation_config.yaml`, else the default), never as this machine's
    /// environment spells it, so the same sources give the same bytes for
    /// everyone.
    pub recorded: String,
}

/// The one vault resolver: `configured` (the configuration's `global-vault`,
/// with `$AKMS_GLOBAL_VAULT` merged in), else the repository's
/// `propagation_config.yaml`, else [`DEFAULT_GLOBAL_VAULT`]; `~` stands for
/// `user_home`.
pub fn resolve_global_vault(layout: &Layout, configured: Option<&str>, user_home: Option<&Path>) -> GlobalVault {
    // A broken config is reported by validate and build with the other problems.
    let from_repo = agents_akms::read_config(layout).ok().and_then(|config| config.global_vault);
    let recorded = from_repo.clone().unwrap_or_else(|| DEFAULT_GLOBAL_VAULT.to_owned());
    let display = configured.map(str::to_owned).or(from_repo).unwrap_or_else(|| DEFAULT_GLOBAL_VAULT.to_owned());
    GlobalVault { path: expand_home(&display, user_home), recorded }
}

/// A repository's knowledge and how to compile it.
#[derive(Clone, Debug)]
pub struct Vault {
    pub layout: Layout,
    pub options: CompileOptions,
}

/// What [`KnowledgeService::init`] did.
#[derive(Clone, Debug, Serialize)]
pub struct InitReport {
    pub knowledge: PathBuf,
    pub created: Vec<String>,
    pub kept: Vec<String>,
}

/// What [`KnowledgeService::derive_task_tags`] did.
#[derive(Clone, Debug, Serialize)]
pub struct TagsReport {
    pub task: String,
    pub task_id: Option<String>,
    /// Tags the author gave; derivation only fills an empty list.
    pub kept: Vec<String>,
    pub derived: Vec<agents_akms::tags::DerivedTag>,
    /// Whether the task file was rewritten with the derived tags.
    pub written: bool,
}

/// What [`KnowledgeService::record_session`] did.
#[derive(Clone, Debug, Serialize)]
pub struct SessionRecord {
    /// The file holding the memory.
    pub file: PathBuf,
    pub session: String,
    /// Whether this call wrote it (the same content again is a no-op).
    pub written: bool,
    pub nodes_used: usize,
    pub pitfalls: usize,
    pub new_knowledge: usize,
    pub next: &'static str,
}

/// One passage of a knowledge search.
#[derive(Clone, Debug, Serialize)]
pub struct Passage {
    pub node: String,
    pub title: String,
    pub file: String,
    pub score: f32,
    pub passage: String,
}

/// See the module documentation.
#[derive(Clone, Debug)]
pub struct KnowledgeService {
    home: Home,
    /// `global-vault` from the configuration (with `$AKMS_GLOBAL_VAULT`).
    global_vault: Option<String>,
    /// `context.backends.text`: the knowledge search index's backend.
    text_backend: agents_core::config::TextBackendKind,
    tokenizer: agents_core::config::TokenizerConfig,
    config: agents_core::config::Config,
    user_home: Option<PathBuf>,
}

impl KnowledgeService {
    /// The service over the home `home` and the configuration `config`; it
    /// opens no store, so commands that only touch `knowledge/` leave the
    /// home as it is.
    pub fn new(home: Home, config: &agents_core::config::Config) -> KnowledgeService {
        KnowledgeService {
            home,
            global_vault: config.global_vault.clone(),
            text_backend: config.context.backends.text,
            tokenizer: config.tokenizer.clone(),
            config: config.clone(),
            user_home: user_home(),
        }
    }

    /// The repository (`repo`, else the nearest above `cwd` with `knowledge/`
    /// or `.git`) and its global vault ([`resolve_global_vault`]). A
    /// repository inside the (read-only) vault is refused.
    pub fn resolve(&self, repo: Option<&Path>, cwd: &Path) -> Result<Vault, KnowledgeError> {
        let root = match repo {
            Some(repo) => existing_dir(repo)?,
            None => find_repo_root(cwd).ok_or_else(|| KnowledgeError::NoKnowledge(cwd.to_path_buf()))?,
        };
        self.resolve_root(root)
    }

    /// [`KnowledgeService::resolve`] for `agents knowledge init`: `repo`, else
    /// the repository above `cwd`, else `cwd` itself.
    pub fn resolve_for_init(&self, repo: Option<&Path>, cwd: &Path) -> Result<Vault, KnowledgeError> {
        let root = match repo {
            Some(repo) => existing_dir(repo)?,
            None => find_repo_root(cwd).unwrap_or_else(|| cwd.to_path_buf()),
        };
        self.resolve_root(root)
    }

    fn resolve_root(&self, root: PathBuf) -> Result<Vault, KnowledgeError> {
        let mut layout = Layout::new(root, PathBuf::new());
        let vault = resolve_global_vault(&layout, self.global_vault.as_deref(), self.user_home.as_deref());
        layout.global_vault = vault.path;
        // The vault is read-only: a repository inside it would write there.
        if let (Ok(repo), Ok(vault)) = (layout.repo_root.canonicalize(), layout.global_vault.canonicalize())
            && repo.starts_with(&vault)
        {
            return Err(KnowledgeError::InsideVault(layout.repo_root.clone()));
        }
        Ok(Vault { layout, options: CompileOptions { global_vault_display: vault.recorded } })
    }

    /// Creates the folders of `knowledge/` and the default config, keeping
    /// whatever is already there.
    pub fn init(&self, layout: &Layout) -> Result<InitReport, KnowledgeError> {
        let knowledge = layout.knowledge();
        let mut report = InitReport { knowledge: knowledge.clone(), created: Vec::new(), kept: Vec::new() };
        for dir in ["local-nodes", "code-mirror", "sessions", "loadouts", "graph"] {
            let path = knowledge.join(dir);
            let list = if path.is_dir() { &mut report.kept } else { &mut report.created };
            std::fs::create_dir_all(&path).map_err(|source| KnowledgeError::Io {
                path: path.clone(),
                action: "create",
                source,
            })?;
            list.push(format!("knowledge/{dir}/"));
        }
        let config = layout.propagation_config();
        let name = "knowledge/graph/propagation_config.yaml".to_owned();
        if config.exists() {
            report.kept.push(name);
        } else {
            write(&config, DEFAULT_CONFIG_YAML.as_bytes())?;
            report.created.push(name);
        }
        Ok(report)
    }

    /// Takes the repository's knowledge lock, for a use case that writes its
    /// `knowledge/` (or its search index): waits for another writer up to
    /// `$AGENTS_KNOWLEDGE_WAIT` seconds (default 120), calling `waiting` with
    /// the holder's pid and the wait once, then refuses naming the holder.
    /// Taking it finishes what a killed writer left (`agents_akms::lock`).
    pub fn lock(
        &self,
        layout: &Layout,
        waiting: &mut dyn FnMut(Option<u32>, Duration),
    ) -> Result<agents_akms::lock::KnowledgeLock, KnowledgeError> {
        let wait = match std::env::var("AGENTS_KNOWLEDGE_WAIT") {
            Ok(text) => Duration::from_secs(text.trim().parse().map_err(|_| {
                KnowledgeError::Invalid(format!("AGENTS_KNOWLEDGE_WAIT: `{text}` is not a whole number of seconds"))
            })?),
            Err(_) => agents_akms::lock::DEFAULT_WAIT,
        };
        Ok(agents_akms::lock::acquire(&self.home.locks_dir(), layout, wait, &mut |pid| waiting(pid, wait))?)
    }

    /// The directory of the repository's knowledge search index.
    pub fn index_dir(&self, layout: &Layout) -> PathBuf {
        agents_akms::search::index_dir(&self.home.root().join("search"), &layout.repo_root)
            .join(self.text_backend.as_str())
    }

    /// The text backend the knowledge search index uses.
    pub fn text_backend(&self) -> agents_core::config::TextBackendKind {
        self.text_backend
    }

    /// Rebuilds the knowledge search index from the compiled graph (it is
    /// small: a rebuild is cheaper than tracking what changed) beside the
    /// live one, which it then replaces (`agents_akms::search::rebuild_index`):
    /// a search never finds it missing. The caller holds the knowledge lock.
    /// Returns the document count.
    pub fn reindex(&self, layout: &Layout, compiled: &Compiled) -> Result<usize, KnowledgeError> {
        self.reindex_graph(layout, &compiled.graph)
    }

    /// [`KnowledgeService::reindex`] from a parsed graph.
    pub fn reindex_graph(&self, layout: &Layout, graph: &CompiledGraph) -> Result<usize, KnowledgeError> {
        let docs = agents_akms::search::documents(layout, graph);
        agents_akms::search::rebuild_index(&self.index_dir(layout), self.text_backend, &docs)?;
        Ok(docs.len())
    }

    /// The best passages of the knowledge search index for `text`, only of
    /// the nodes `nodes` when given, at most `limit`. Read-only (no lock, no
    /// index writer; any number of searches at once) unless the index is
    /// missing or unreadable: then it is rebuilt from `graph.json` under the
    /// knowledge lock (`damaged` is told why, `waiting` when another writer
    /// holds the lock), never an empty answer.
    pub fn search(
        &self,
        vault: &Vault,
        text: &str,
        nodes: &[String],
        limit: usize,
        damaged: &mut dyn FnMut(&agents_search::SearchError),
        waiting: &mut dyn FnMut(Option<u32>, Duration),
    ) -> Result<Vec<Passage>, KnowledgeError> {
        let layout = &vault.layout;
        let dir = self.index_dir(layout);
        let kind = self.text_backend;
        let run = |backend: &dyn agents_search::TextBackend| {
            // Scoped to a node set: search deep enough that the set's best survive.
            let deep = if nodes.is_empty() { limit } else { (backend.doc_count()? as usize).max(limit) };
            backend.search(text, deep, &agents_search::SearchFilter::default())
        };
        let hits = match agents_akms::search::with_index(&dir, kind, run) {
            Ok(Some(hits)) => hits,
            outcome => {
                let graph_path = layout.graph_json();
                if !graph_path.is_file() {
                    outcome?;
                    return Err(KnowledgeError::Invalid(format!(
                        "{}: no knowledge search index yet; run `agents knowledge build` first",
                        layout.repo_root.display()
                    )));
                }
                if let Err(e) = &outcome {
                    damaged(e);
                }
                let _lock = self.lock(layout, waiting)?;
                match agents_akms::search::with_index(&dir, kind, run) {
                    // Another process rebuilt it meanwhile.
                    Ok(Some(hits)) => hits,
                    _ => {
                        let graph = CompiledGraph::of(layout).map_err(|e| KnowledgeError::Invalid(e.to_string()))?;
                        self.reindex_graph(layout, &graph)?;
                        agents_akms::search::with_index(&dir, kind, run)?.ok_or_else(|| KnowledgeError::Io {
                            path: dir.clone(),
                            action: "open",
                            source: std::io::Error::new(
                                std::io::ErrorKind::NotFound,
                                "the knowledge search index is missing after a rebuild",
                            ),
                        })?
                    }
                }
            }
        };
        let graph = CompiledGraph::of(layout).unwrap_or_default();
        let docs: std::collections::BTreeMap<String, agents_search::TextDoc> =
            agents_akms::search::documents(layout, &graph).into_iter().map(|d| (d.id.clone(), d)).collect();
        let words = agents_search::code_tokens(text);
        Ok(hits
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
            .collect())
    }

    /// Builds the graph, then re-indexes it for search. The caller holds the
    /// knowledge lock.
    pub fn build(&self, vault: &Vault) -> Result<Compiled, KnowledgeError> {
        let compiled = agents_akms::build(&vault.layout, &vault.options)?;
        let indexed = self.reindex(&vault.layout, &compiled)?;
        tracing::info!(documents = indexed, "knowledge indexed for search");
        Ok(compiled)
    }

    /// Applies evidence documents (`agents knowledge update`); when the graph
    /// was rebuilt, re-indexes it. The caller holds the knowledge lock.
    pub fn update(
        &self,
        vault: &Vault,
        documents: &[PathBuf],
    ) -> Result<agents_akms::update::UpdateReport, KnowledgeError> {
        for doc in documents {
            if !doc.is_file() {
                return Err(KnowledgeError::Invalid(format!("{}: no such file", doc.display())));
            }
        }
        let report = agents_akms::update::update(&vault.layout, &vault.options, documents)?;
        if let Some(compiled) = &report.compiled {
            self.reindex(&vault.layout, compiled)?;
        }
        Ok(report)
    }

    /// Derives a task's tags when its record has none, writes them back
    /// (unless `dry_run`) and logs where each came from (spec 4.5). The
    /// caller holds the knowledge lock unless `dry_run`.
    pub fn derive_task_tags(
        &self,
        vault: &Vault,
        task_path: &Path,
        dry_run: bool,
    ) -> Result<TagsReport, KnowledgeError> {
        derive_task_tags(vault, task_path, dry_run)
    }

    /// Validates an AgentMemory and writes it to
    /// `knowledge/sessions/{task_id}.md` of `repo` (the repository holding
    /// `path`) atomically; never touches the graph. Writing the same text
    /// again is a no-op; different text for a recorded task id goes to
    /// `{task_id}-<8 hex of its hash>.md`: a recorded file is never
    /// overwritten.
    pub fn record_session(
        &self,
        path: &Path,
        repo: Option<PathBuf>,
        task_id: &str,
        memory: &str,
    ) -> Result<SessionRecord, KnowledgeError> {
        let safe = !task_id.is_empty()
            && !task_id.starts_with('.')
            && task_id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !safe {
            return Err(KnowledgeError::Invalid(format!(
                "task_id `{task_id}`: use letters, digits, `-`, `_` and `.` only (it names the file)"
            )));
        }
        let file = PathBuf::from(format!("knowledge/sessions/{task_id}.md"));
        let evidence = agents_akms::evidence::parse_evidence(&file, memory).map_err(|problems| {
            KnowledgeError::Invalid(problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))
        })?;
        if evidence.kind != agents_akms::evidence::DocumentKind::AgentMemory || evidence.label != task_id {
            return Err(KnowledgeError::Invalid(format!(
                "{}: task_id: the document's task_id `{}` is not `{task_id}`",
                file.display(),
                evidence.label
            )));
        }
        let root = repo.filter(|root| root.join("knowledge").is_dir()).ok_or_else(|| {
            KnowledgeError::Invalid(format!(
                "no knowledge/ folder in {} or above: run `agents knowledge init`",
                path.display()
            ))
        })?;
        // A recorded session file is never overwritten (it may be applied
        // already, and its session node names it): other content for the same
        // task id (a second plan reusing it) goes beside it, named with a
        // suffix of its content hash. The same content again is a no-op.
        let hash = agents_akms::update::content_hash(memory);
        let mut written = false;
        let mut target = PathBuf::new();
        for name in [format!("{task_id}.md"), format!("{task_id}-{}.md", &hash[..8]), format!("{task_id}-{hash}.md")] {
            target = root.join("knowledge/sessions").join(name);
            match std::fs::read_to_string(&target) {
                Ok(existing) if existing == memory => break,
                Ok(_) => continue,
                Err(_) if target.symlink_metadata().is_ok() => continue,
                Err(_) => {
                    write(&target, memory.as_bytes())?;
                    written = true;
                    break;
                }
            }
        }
        if !written && std::fs::read_to_string(&target).ok().as_deref() != Some(memory) {
            return Err(KnowledgeError::Invalid(format!(
                "{}: every name for task {task_id} holds other content",
                file.display()
            )));
        }
        Ok(SessionRecord {
            file: target,
            session: evidence.session_id,
            written,
            nodes_used: evidence.nodes_used.len(),
            pitfalls: evidence.pitfalls.len(),
            new_knowledge: evidence.new_knowledge.len(),
            next: "a human applies it with `agents knowledge update`",
        })
    }

    pub(crate) fn home(&self) -> &Home {
        &self.home
    }

    pub(crate) fn config(&self) -> &agents_core::config::Config {
        &self.config
    }

    pub(crate) fn tokenizer(&self) -> agents_core::tokens::Tokenizer {
        agents_core::tokens::Tokenizer::with_impl(self.tokenizer.encoding, self.tokenizer.implementation)
    }
}

impl crate::Engine {
    /// The knowledge service over this engine's home and configuration.
    pub fn knowledge(&self) -> KnowledgeService {
        KnowledgeService::new(self.home.clone(), self.config.config())
    }
}

/// See [`KnowledgeService::derive_task_tags`] (it needs no state of the service).
pub fn derive_task_tags(vault: &Vault, task_path: &Path, dry_run: bool) -> Result<TagsReport, KnowledgeError> {
    let layout = &vault.layout;
    let config = read_config(layout)?;
    let mut record = read_task(task_path)?;
    let kept: Vec<String> = match record.get("akms_tags") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    KnowledgeError::Invalid(format!("{}: akms_tags: every tag must be a string", task_path.display()))
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(KnowledgeError::Invalid(format!(
                "{}: akms_tags: must be a list of strings",
                task_path.display()
            )));
        }
    };
    let compiled = agents_akms::compile(layout, &vault.options)?;
    let derived = agents_akms::tags::derive_tags(
        &compiled.graph,
        &agents_akms::tags::TaskText::from_record(&record),
        &config.tag_derivation,
    );
    let task_id = record.get("task_id").and_then(|v| v.as_str()).map(str::to_owned);
    let written = kept.is_empty() && !derived.is_empty() && !dry_run;
    if written {
        let names: Vec<serde_json::Value> = derived.iter().map(|d| d.tag.clone().into()).collect();
        record.insert("akms_tags".to_owned(), serde_json::Value::Array(names));
        write_json(task_path, &record)?;
        if config.tag_derivation.log_derived_tags {
            let log = layout.knowledge().join("logs").join("tag-derivation.jsonl");
            let mut lines = match std::fs::read_to_string(&log) {
                Ok(existing) => existing,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(source) => return Err(KnowledgeError::Io { path: log, action: "read", source }),
            };
            let entry = serde_json::json!({
                "derived_at": agents_core::ids::to_iso(agents_core::ids::now_utc()),
                "task": task_path.display().to_string(),
                "task_id": task_id,
                "tags": derived,
            });
            lines.push_str(&serde_json::to_string(&entry)?);
            lines.push('\n');
            write(&log, lines.as_bytes())?;
        }
    }
    Ok(TagsReport { task: task_path.display().to_string(), task_id, kept, derived, written })
}

fn existing_dir(path: &Path) -> Result<PathBuf, KnowledgeError> {
    if !path.is_dir() {
        return Err(KnowledgeError::NotADirectory(path.to_path_buf()));
    }
    Ok(path.to_path_buf())
}

/// Writes `bytes` to `path` atomically.
fn write(path: &Path, bytes: &[u8]) -> Result<(), KnowledgeError> {
    agents_store::atomic_write(path, bytes).map_err(|source| KnowledgeError::Io {
        path: path.to_path_buf(),
        action: "write",
        source,
    })
}

/// Writes `value` as pretty JSON with a final newline, atomically.
fn write_json(path: &Path, value: &impl Serialize) -> Result<(), KnowledgeError> {
    let mut json = serde_json::to_string_pretty(value)?;
    json.push('\n');
    write(path, json.as_bytes())
}

/// The repository's propagation config; its problems are bad input.
pub fn read_config(layout: &Layout) -> Result<PropagationConfig, KnowledgeError> {
    agents_akms::read_config(layout).map_err(|diagnostics| {
        let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
        KnowledgeError::Invalid(lines.join("; "))
    })
}

/// The task record at `path`, checked for `akms_schema: v2`.
pub fn read_task(path: &Path) -> Result<serde_json::Map<String, serde_json::Value>, KnowledgeError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| KnowledgeError::Invalid(format!("{}: cannot read the task record: {e}", path.display())))?;
    let record: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).map_err(|e| {
        KnowledgeError::Invalid(format!("{}:{}: not a task record (a JSON object): {e}", path.display(), e.line()))
    })?;
    match record.get("akms_schema").and_then(|v| v.as_str()) {
        Some(agents_akms::SCHEMA_VERSION) => Ok(record),
        found => Err(KnowledgeError::Invalid(format!(
            "{}: akms_schema: SchemaVersionError: expected {:?}, found {}",
            path.display(),
            agents_akms::SCHEMA_VERSION,
            found.map_or_else(|| "none".to_owned(), |v| format!("{v:?}"))
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(home: &Path, global_vault: Option<&str>) -> KnowledgeService {
        let config =
            agents_core::config::Config { global_vault: global_vault.map(str::to_owned), ..Default::default() };
        KnowledgeService::new(Home::new(home), &config)
    }

    /// `agents knowledge` and the `knowledge-graph` strategy of `agents
    /// query` resolve the global vault the same way: `~` expanded, the same
    /// default when nothing configures one.
    #[test]
    fn one_vault_resolver_serves_the_cli_and_the_strategy() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("knowledge")).unwrap();
        let home = user_home();
        for configured in [Some("~/x"), None] {
            let knowledge = service(dir.path(), configured).resolve(Some(&repo), &repo).unwrap();
            let strategy = KnowledgeGraphStrategy::new(configured.map(str::to_owned), home.clone());
            assert_eq!(strategy.layout(&repo).global_vault, knowledge.layout.global_vault, "{configured:?}");
            let expected = configured.unwrap_or(DEFAULT_GLOBAL_VAULT);
            assert_eq!(knowledge.layout.global_vault, expand_home(expected, home.as_deref()));
            if home.is_some() {
                assert!(!knowledge.layout.global_vault.starts_with("~"), "{configured:?}: `~` is expanded");
            }
            // graph.json records the repository's spelling, not the environment's.
            assert_eq!(knowledge.options.global_vault_display, DEFAULT_GLOBAL_VAULT);
        }
        // The repository's own config is read by both.
        std::fs::create_dir_all(repo.join("knowledge/graph")).unwrap();
        std::fs::write(
            repo.join("knowledge/graph/propagation_config.yaml"),
            "akms_schema: v2\nglobal_vault: ~/vault\n",
        )
        .unwrap();
        let knowledge = service(dir.path(), None).resolve(Some(&repo), &repo).unwrap();
        let strategy = KnowledgeGraphStrategy::new(None, home.clone());
        assert_eq!(strategy.layout(&repo).global_vault, knowledge.layout.global_vault);
        assert_eq!(knowledge.layout.global_vault, expand_home("~/vault", home.as_deref()));
    }

    #[test]
    fn init_creates_the_folders_and_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let service = service(dir.path(), None);
        let vault = service.resolve_for_init(None, dir.path()).unwrap();
        let first = service.init(&vault.layout).unwrap();
        assert_eq!(first.created.len(), 6, "{first:?}");
        assert!(dir.path().join("knowledge/graph/propagation_config.yaml").is_file());
        let second = service.init(&vault.layout).unwrap();
        assert!(second.created.is_empty() && second.kept.len() == 6, "{second:?}");
    }
}
