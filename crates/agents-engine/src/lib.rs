//! The application container: one [`Engine`] built once from the resolved
//! configuration, owning every service.
//!
//! The CLI, the MCP server and tests all wire the system through
//! [`Engine::open`], so there is exactly one way the store, the tokenizer and
//! the services are put together. Services arrive here as their issues land
//! (today: the store, the tokenizer, projects and repository indexing).
//!
//! On-disk layout under the home directory ([`Home`]):
//! ```text
//! $AGENTS_HOME/
//!   agents.db        SQLite (WAL): projects, resources, indexes, files
//!   config.toml      optional user configuration
//!   locks/           one lock file per resource being indexed
//!   search/<resource>/<backend>/   full-text index (tantivy or fts5)
//!   search/<resource>/vector/      embeddings and the HNSW graph
//!   models/minilm-code-static/     an embedding model overriding the bundled one (optional)
//!   tiers/hot.json   the hot context tier's snapshot (warm rows live in agents.db)
//!   tiers/cold/<fragment>.zst      the cold tier's archive, one zstd file per fragment
//!   tiers/metrics.json             tier hit and miss counters
//! ```

pub mod history;
pub mod knowledge;
pub mod live;
pub mod query;
pub mod services;
pub mod session;

/// The store's records the adapters render.
pub use agents_store::{Plan, PlanDecision, Project, Resource, UkoNodeRecord};
pub use query::{QueryOptions, QueryReport, QueryRun, RequestOverrides};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_acms::graph::CodeGraph;
use agents_acms::indexing::{IndexError, IndexOptions, Progress, RepoIndexingService};
use agents_acms::pipeline::components::FileDependencies;
use agents_acms::pipeline::enforcer::FsFacts;
use agents_acms::pipeline::piece::StoreRenderer;
use agents_acms::pipeline::{Assembly, Pipeline, PipelineBuilder, PipelineError, PipelineSettings, RequestInput};
use agents_acms::projects::{ProjectError, ProjectService, canonical_dir, project_name_for};
use agents_acms::query::{ContextSearch, QueryError, SyncReport, VectorSink};
use agents_acms::retrieval::registry::{ContextStrategyRegistry, RegistryError, StrategyStatus};
use agents_acms::retrieval::{BackendKind, Backends, PlanContext, PlanDecisions, RetrievalQuery};
use agents_acms::tiers::{ContextTierService, TierError, TierSettings};
use agents_core::config::ResolvedConfig;
use agents_core::fragment::ContextBudget;
use agents_core::indexing::RepoIndex;
use agents_core::policy::ContextView;
use agents_core::request::ContextRequest;
use agents_core::tokens::Tokenizer;
use agents_postgres::PostgresStore;
use agents_postgres::text::PgTextBackend;
use agents_postgres::vector::PgVectorBackend;
use agents_search::SearchFilter;
use agents_search::history::GitHistory;
use agents_search::vector::VectorBackend;
use agents_search::vector::{Embedder, LocalVectorIndex, StaticEmbedder, VectorOptions};
use agents_store::{FileIndexStore, SqliteStore, Store, StoreError, WarmTierStore};

/// What the engine holds of the database: every role, the warm tier's included.
pub trait EngineStore: Store + WarmTierStore {}

impl<T> EngineStore for T where T: Store + WarmTierStore {}

/// The environment variable naming a team server's store (wins over `[store] url`).
pub const STORE_URL_ENV: &str = "AGENTS_STORE_URL";

/// The embedding model: the directory `context.backends.embedding-model` names,
/// else a model the user put in the home's default folder
/// (`models/minilm-code-static`, e.g. by `scripts/get-model.sh`), else the model
/// bundled into the binary; or why there is none (`context.backends.vector =
/// "none"`, or a configured directory without a model).
pub fn load_embedder(home: &Home, config: &agents_core::config::Config) -> Result<StaticEmbedder, NoEmbedder> {
    let backends = &config.context.backends;
    if backends.vector == agents_core::config::VectorBackendKind::Disabled {
        return Err(NoEmbedder::Disabled);
    }
    let load = |dir: &Path| StaticEmbedder::load(dir).map_err(|e| NoEmbedder::Unreadable(Arc::new(e)));
    if !backends.embedding_model.is_empty() {
        let dir = PathBuf::from(&backends.embedding_model);
        if !dir.join("model.safetensors").exists() {
            return Err(NoEmbedder::Missing { dir });
        }
        return load(&dir);
    }
    let dir = home.default_model_dir();
    if dir.join("model.safetensors").exists() {
        return load(&dir);
    }
    StaticEmbedder::bundled().map_err(|e| NoEmbedder::Unreadable(Arc::new(e)))
}

/// Why a query has no embedding model (its vector backend is then unavailable
/// and says so).
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoEmbedder {
    #[error("disabled by context.backends.vector = \"none\"")]
    Disabled,
    #[error("no embedding model in {} (context.backends.embedding-model; scripts/get-model.sh DIR makes one)", dir.display())]
    Missing { dir: PathBuf },
    /// The model's files could not be read or loaded.
    #[error(transparent)]
    Unreadable(Arc<agents_search::SearchError>),
}

/// The engine's home directory and the paths inside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

impl Home {
    pub fn new(root: impl Into<PathBuf>) -> Home {
        Home { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn database(&self) -> PathBuf {
        self.root.join("agents.db")
    }

    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.toml")
    }

    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// Where the embedding model is looked for when the configuration names none.
    pub fn default_model_dir(&self) -> PathBuf {
        self.root.join("models").join("minilm-code-static")
    }

    /// The context tiers: the hot snapshot, the cold archive, the counters.
    pub fn tiers_dir(&self) -> PathBuf {
        self.root.join("tiers")
    }

    /// The text-search index of a resource for one backend.
    pub fn search_dir(&self, resource_id: &str, backend: &str) -> PathBuf {
        self.root.join("search").join(resource_id).join(backend)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error(transparent)]
    Project(#[from] ProjectError),
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error(transparent)]
    Strategy(#[from] RegistryError),
    #[error("plan `{0}` not found")]
    PlanNotFound(String),
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    #[error("unknown model {name:?} (models.specs); known: {known}")]
    UnknownModel { name: String, known: String },
    #[error(
        "model {model}'s window of {window} tokens leaves nothing after the response reserve ({reserve}) and tool definitions ({tools})"
    )]
    WindowTooSmall { model: String, window: usize, reserve: usize, tools: usize },
    #[error("max_tokens: 0 leaves no budget; give at least {min} (context.budget.min-useful-budget)")]
    ZeroMaxTokens { min: usize },
    /// A request the CRP rules reject.
    #[error(transparent)]
    Invalid(#[from] agents_core::error::ValidationError),
    /// A dry run over a project with no linked resource.
    #[error("project {0} has no linked resource: `agents project link-resource {0} PATH`")]
    NoResource(String),
    #[error("--depth {name}: unknown detail level; give 0-9 or one of {known}")]
    UnknownDepth { name: String, known: String },
    #[error("--depth {name}: the level means different depths in {meanings}; give a number 0-9")]
    AmbiguousDepth { name: String, meanings: String },
    #[error(transparent)]
    Tier(#[from] TierError),
    /// A path in no indexed resource, or in one not indexed yet.
    #[error("{}: {reason}", path.display())]
    NotIndexed { path: PathBuf, reason: &'static str },
    #[error(transparent)]
    Knowledge(#[from] knowledge::KnowledgeError),
    /// A plan or decision the store refuses: an unknown plan, parent or project.
    #[error("{0}")]
    PlanRefused(String),
    #[error(transparent)]
    Rdf(#[from] agents_uko::rdf::RdfError),
}

/// What `agents query` asks the pipeline for, beyond the request itself.
#[derive(Clone, Debug, Default)]
pub struct AssembleOptions {
    /// The requested depth, resolved to 0-9.
    pub depth: u8,
    /// Candidates kept from each strategy; 0 lets the budget decide
    /// ([`candidates_for_budget`]).
    pub limit: usize,
    pub filter: SearchFilter,
    /// The token budget (see [`Engine::budget`]).
    pub budget: ContextBudget,
    /// The plan the context is for: its ancestors' decisions become retrievable
    /// and its parent's context becomes the skeleton.
    pub plan_id: Option<String>,
    /// The policy view in force. Without one, or without a total size limit of
    /// its own, `context.file.max-total-size` limits the total (see
    /// [`effective_view`]).
    pub view: Option<ContextView>,
    /// The project's skeleton ratio when the project set one (`agents project
    /// context set --skeleton-ratio`): it wins over `context.budget.skeleton-ratio`,
    /// which applies when this is `None`.
    pub skeleton_ratio: Option<f64>,
    /// The project's context entries the requesting role sees, as inline
    /// candidates ([`agents_acms::tiers::entry_candidates`]).
    pub entries: Vec<agents_acms::retrieval::Candidate>,
}

/// How a budget was derived, for people reading the output.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BudgetDerivation {
    pub model: Option<String>,
    pub context_window: Option<usize>,
    pub response_reserve: usize,
    pub tool_definitions: usize,
    /// `--max-tokens` or the request's `max_tokens`, when given.
    pub max_tokens: Option<u64>,
    /// What the fragments (and preamble and skeleton) may use.
    pub available: u64,
}

/// File-level dependencies read from the stored references.
struct StoreDependencies<'a> {
    store: &'a dyn Store,
    index_id: &'a str,
}

impl FileDependencies for StoreDependencies<'_> {
    fn edges(&self, paths: &[String]) -> Vec<(String, String)> {
        let wanted: std::collections::HashSet<&str> = paths.iter().map(String::as_str).collect();
        let mut edges = Vec::new();
        for path in paths {
            let Ok(targets) = self.store.uko_file_dependencies(self.index_id, path) else { continue };
            edges.extend(targets.into_iter().filter(|to| wanted.contains(to.as_str())).map(|to| (path.clone(), to)));
        }
        edges.sort();
        edges.dedup();
        edges
    }
}

/// The view an assembly enforces: the policy's view for the phase, or the
/// unrestricted default view, with `context.file.max-total-size` as its total
/// size limit when it sets none of its own.
pub fn effective_view(view: Option<&ContextView>, config: &agents_core::config::Config) -> ContextView {
    let view = view.cloned().unwrap_or_default();
    if view.max_total_size().is_some() {
        return view;
    }
    let limit = i64::try_from(config.context.file.max_total_size).unwrap_or(i64::MAX);
    // The configuration is validated (the limit is at least context.file.max-size >= 1).
    view.clone().into_builder().max_total_size(limit).build().unwrap_or(view)
}

/// The request the strategies retrieve with: the request's `purpose` joins its
/// query text (so the purpose's words are searched for too); its other fields
/// are kept.
pub fn retrieval_request(request: &ContextRequest) -> ContextRequest {
    let purpose = request.purpose().trim();
    if purpose.is_empty() {
        return request.clone();
    }
    let text = match request.query() {
        Some(query) if !query.trim().is_empty() => format!("{query} {purpose}"),
        _ => purpose.to_owned(),
    };
    request.clone().into_builder().query(text).build().unwrap_or_else(|_| request.clone())
}

/// Candidates kept from each strategy when the caller names no number: 50 up to
/// an 8,000-token budget, then one per 160 tokens (200 at 32,000, 625 at
/// 100,000), at most 1,000, so a large budget has enough to spend itself on.
pub fn candidates_for_budget(available: u64) -> usize {
    (available / 160).clamp(50, 1_000) as usize
}

/// The budget when neither a model nor a token limit is given.
pub const DEFAULT_MAX_TOKENS: u64 = 8_000;

/// The result of [`Engine::index_path`].
#[derive(Debug)]
pub struct IndexOutcome {
    pub project: Project,
    pub resource: Resource,
    /// Whether this call created the resource (and so did a first index).
    pub new_resource: bool,
    pub index: RepoIndex,
}

/// How [`Engine::index_path`] runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexMode {
    /// Read only what changed since the last run (the default).
    #[default]
    Refresh,
    /// Re-read and re-hash every file.
    Full,
}

/// The application container.
pub struct Engine {
    home: Home,
    config: ResolvedConfig,
    store: Arc<dyn EngineStore>,
    /// The team server, when `[store] url` names one: it holds the store and
    /// the search indexes (text and vectors) every machine shares.
    server: Option<Arc<PostgresStore>>,
    tokenizer: Tokenizer,
    indexing: RepoIndexingService,
    projects: ProjectService,
    graph: CodeGraph,
    search: ContextSearch,
    pipeline: Pipeline,
    stale_repaired: usize,
    /// The embedding model, loaded on first use and kept for the engine's life.
    /// Shared with [`Engine::preload`]'s thread.
    embedder: Arc<std::sync::OnceLock<Result<Arc<StaticEmbedder>, NoEmbedder>>>,
    /// Vector indexes opened before, by directory, with the stamp of their
    /// files then: a long-lived engine (the MCP server) reopens one only when
    /// another process changed it.
    /// Every query shares it (an `Arc` each); a sync takes it only when no
    /// query reads it any more, else opens a copy.
    vectors: std::sync::Mutex<BTreeMap<PathBuf, (VectorStamp, Arc<LocalVectorIndex>)>>,
    /// Local Tantivy text indexes opened for searching, by directory, with the
    /// stamp of their `meta.json` then: shared by every query, reopened after
    /// a commit.
    texts: std::sync::Mutex<BTreeMap<PathBuf, (FileStamp, SharedText)>>,
    /// The digest of each index's file list, with the run it is of and its
    /// length: computed once per run, not once per query.
    digests: std::sync::Mutex<BTreeMap<String, (RunMarker, usize, String)>>,
    /// How many queries assemble at once.
    admission: Admission,
}

/// At most `limit` assemblies at once, admitted in the order they asked.
///
/// An assembly is CPU-bound work (several strategies, each a thread): more of
/// them at once than there are cores only shares the same cores among more
/// of them, so each takes longer, and under a burst of requests their
/// strategies ran into their time limit. The waiting comes before the
/// strategies start, so it never counts against that limit.
struct Admission {
    limit: u64,
    state: std::sync::Mutex<AdmissionState>,
    changed: std::sync::Condvar,
}

#[derive(Default)]
struct AdmissionState {
    /// Tickets handed out.
    issued: u64,
    /// Assemblies that ended.
    ended: u64,
}

impl Admission {
    /// As many at once as the machine has cores, and at least two.
    fn for_this_machine() -> Admission {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Admission {
            limit: cores.max(2) as u64,
            state: std::sync::Mutex::new(AdmissionState::default()),
            changed: std::sync::Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, AdmissionState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits for this caller's turn; the turn ends when the guard is dropped.
    fn enter(&self) -> Admitted<'_> {
        let mut state = self.lock();
        let ticket = state.issued;
        state.issued += 1;
        while ticket >= state.ended + self.limit {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        Admitted(self)
    }
}

/// One admitted assembly ([`Admission::enter`]).
struct Admitted<'a>(&'a Admission);

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.0.lock().ended += 1;
        self.0.changed.notify_all();
    }
}

/// How many times a query reads when index runs keep committing under it; the
/// last read is answered even if one more did.
const MAX_READS: usize = 3;

/// What tells one committed index run from another: its commit time (to the
/// nanosecond), file count and token estimate.
type RunMarker = (String, u64, u64);

fn run_marker(metadata: &agents_core::indexing::IndexMetadata) -> RunMarker {
    (agents_core::ids::to_iso(metadata.indexed_at), metadata.file_count, metadata.token_estimate)
}

/// A text index as the queries share it.
type SharedText = Arc<dyn agents_search::TextBackend>;

/// The backends a query reads: text, and vectors when there is a model.
type SharedBackends = (SharedText, Option<Arc<dyn VectorBackend>>);

/// What one read of a resource's backends gives its strategies: the backends,
/// the report of the sync it took (empty when none was stale), and a line per
/// backend kind saying what serves it.
type OpenedBackends = (Arc<agents_acms::retrieval::OwnedBackends>, SyncReport, BTreeMap<String, String>);

/// The model id a local vector index is keyed by: the model and what text is embedded.
fn vector_model_id(embedder: &dyn Embedder) -> String {
    format!("{}/{}", embedder.model_id(), agents_acms::query::EMBEDDING_TEXT_VERSION)
}

/// Size, modification time and (on Unix) inode of a file that is replaced
/// whole (written, then renamed over): any replacement changes it. `None`
/// when the file is missing.
type FileStamp = (u64, std::time::SystemTime, u64);

fn file_stamp(path: &Path) -> Option<FileStamp> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&meta);
    #[cfg(not(unix))]
    let inode = 0;
    Some((meta.len(), meta.modified().ok()?, inode))
}

/// Marks `stale` the server's indexes left `indexing` whose run lock no
/// machine holds (an indexer that died); a run in progress elsewhere keeps
/// its status. Returns how many were repaired.
fn repair_server_runs(server: &PostgresStore) -> Result<usize, StoreError> {
    let mut repaired = 0;
    for meta in server.indexes_with_status(agents_core::indexing::IndexStatus::Indexing)? {
        if !server.index_run_in_progress(&meta.index_id)? {
            server.set_index_status(
                &meta.index_id,
                agents_core::indexing::IndexStatus::Stale,
                Some("interrupted: the indexing process exited before finishing; the next index run repairs it"),
            )?;
            repaired += 1;
        }
    }
    Ok(repaired)
}

/// The one warning for a derived file that could not be read and is being
/// rebuilt from the store (the sync that follows refills it).
fn warn_rebuilt(what: &str, dir: &Path, damage: &agents_search::SearchError) {
    tracing::warn!("{what} in {} was unreadable and is rebuilt from the store ({damage})", dir.display());
}

/// Sizes and modification times of a vector index's files: a commit replaces
/// them (write, then rename), so any change by any process changes the stamp.
type VectorStamp = Vec<Option<(u64, std::time::SystemTime)>>;

fn vector_stamp(dir: &Path) -> VectorStamp {
    agents_search::vector::FILES
        .iter()
        .map(|name| std::fs::metadata(dir.join(name)).ok().and_then(|m| Some((m.len(), m.modified().ok()?))))
        .collect()
}

impl Engine {
    /// Opens the store under `home` (creating it on first use), builds every
    /// service from `config`, and repairs index rows orphaned by a killed
    /// indexer.
    pub fn open(home: Home, config: ResolvedConfig) -> Result<Engine, EngineError> {
        Engine::open_with(home, config, PipelineBuilder::new())
    }

    /// [`Engine::open`] with pipeline components registered beyond the built-ins;
    /// `[context.pipeline]` chooses among them.
    pub fn open_with(home: Home, config: ResolvedConfig, components: PipelineBuilder) -> Result<Engine, EngineError> {
        // Knowledge nodes join context requests (a caller's own wins).
        let components = if components.has_strategy(knowledge::KNOWLEDGE_GRAPH) {
            components
        } else {
            let vault = config.config().global_vault.clone();
            components
                .register_strategy(Arc::new(knowledge::KnowledgeGraphStrategy::new(vault, knowledge::user_home())))
        };
        let pipeline = components
            .build(&config.config().context.pipeline, PipelineSettings::from_config(&config.config().context))?;
        // `[store] url` (or AGENTS_STORE_URL, layered by the caller) selects a
        // team server; else the embedded store under the home.
        let server = match &config.config().store.url {
            Some(url) => Some(Arc::new(PostgresStore::open(url)?)),
            None => None,
        };
        let store: Arc<dyn EngineStore> = match &server {
            Some(server) => server.clone(),
            None => Arc::new(SqliteStore::open(&home.database())?),
        };
        let tokenizer =
            Tokenizer::with_impl(config.config().tokenizer.encoding, config.config().tokenizer.implementation);
        let dyn_store: Arc<dyn Store> = store.clone();
        let indexing = RepoIndexingService::new(dyn_store.clone(), tokenizer, home.locks_dir());
        let projects = ProjectService::new(dyn_store.clone());
        let graph = CodeGraph::new(dyn_store.clone());
        let search = ContextSearch::new(dyn_store);
        let stale_repaired = match &server {
            None => indexing.cleanup_stale_indexing()?,
            Some(server) => repair_server_runs(server)?,
        };
        Ok(Engine {
            home,
            config,
            store,
            server,
            tokenizer,
            indexing,
            projects,
            graph,
            search,
            pipeline,
            stale_repaired,
            embedder: Arc::new(std::sync::OnceLock::new()),
            vectors: std::sync::Mutex::new(BTreeMap::new()),
            texts: std::sync::Mutex::new(BTreeMap::new()),
            digests: std::sync::Mutex::new(BTreeMap::new()),
            admission: Admission::for_this_machine(),
        })
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    pub fn config(&self) -> &ResolvedConfig {
        &self.config
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Where the store is: the team server's URL (password redacted), or the
    /// embedded database file.
    pub fn store_location(&self) -> String {
        match &self.server {
            Some(server) => server.location().to_owned(),
            None => self.home.database().display().to_string(),
        }
    }

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Starts building the tokenizer's tables and loading the embedding
    /// model on background threads, so a command that refreshes an index
    /// before it counts and embeds (a query) does not wait for them
    /// afterwards. The threads end on their own; a count or an embedding
    /// that comes first simply waits for what it needs.
    pub fn preload(&self) {
        let tokenizer = self.tokenizer;
        // A failure to spawn only loses the head start.
        let _ = std::thread::Builder::new().name("tokenizer-preload".into()).spawn(move || tokenizer.preload());
        let (cell, home, config) = (self.embedder.clone(), self.home.clone(), self.config.config().clone());
        let _ = std::thread::Builder::new().name("model-preload".into()).spawn(move || {
            cell.get_or_init(|| load_embedder(&home, &config).map(Arc::new));
        });
    }

    /// Starts loading the embedding model on a background thread (the half of
    /// [`Engine::preload`] a sync needs): an index run calls it once it found
    /// files to read, so the model loads while they are parsed.
    pub fn preload_model(&self) {
        if self.embedder.get().is_some() {
            return;
        }
        let (cell, home, config) = (self.embedder.clone(), self.home.clone(), self.config.config().clone());
        let _ = std::thread::Builder::new().name("model-preload".into()).spawn(move || {
            cell.get_or_init(|| load_embedder(&home, &config).map(Arc::new));
        });
    }

    /// The id ([`vector_model_id`]) and length of the vectors the embedding
    /// model makes, `None` without a model. The bundled model's id is known
    /// without loading it (its length is its file's business: the id names
    /// its weights), so a refresh that changed nothing loads no model.
    fn embedder_id(&self) -> Option<(String, Option<usize>)> {
        let backends = &self.config.config().context.backends;
        let bundled = self.embedder.get().is_none()
            && backends.vector != agents_core::config::VectorBackendKind::Disabled
            && backends.embedding_model.is_empty()
            && !self.home.default_model_dir().join("model.safetensors").exists();
        if bundled {
            let id = format!("{}/{}", StaticEmbedder::bundled_id(), agents_acms::query::EMBEDDING_TEXT_VERSION);
            return Some((id, None));
        }
        let embedder = self.embedder().ok()?;
        Some((vector_model_id(embedder.as_ref()), Some(embedder.dim())))
    }

    /// Whether the project's settings keep its resources refreshed live
    /// (`agents project context set --auto-refresh`; on by default).
    pub fn auto_refresh(&self, project_id: &str) -> Result<bool, EngineError> {
        Ok(self.store.project_context(project_id)?.is_none_or(|(_, settings)| settings.auto_refresh()))
    }

    /// The roots of every linked resource whose project refreshes live, sorted.
    pub fn auto_refresh_roots(&self) -> Result<Vec<PathBuf>, EngineError> {
        let mut roots = std::collections::BTreeSet::new();
        for (project, resources) in self.projects.list()? {
            if self.auto_refresh(&project.project_id)? {
                roots.extend(resources.into_iter().map(|r| PathBuf::from(r.path)));
            }
        }
        Ok(roots.into_iter().collect())
    }

    pub fn indexing(&self) -> &RepoIndexingService {
        &self.indexing
    }

    pub fn projects(&self) -> &ProjectService {
        &self.projects
    }

    /// The stored code graph (UKO nodes and edges).
    pub fn graph(&self) -> &CodeGraph {
        &self.graph
    }

    /// The embedding model, or why there is none (`context.backends.vector = "none"`,
    /// or no model files where the configuration points).
    /// The embedding model, or why there is none. Loaded once per engine: a
    /// model installed while a long-lived engine runs is used after a restart.
    pub fn embedder(&self) -> Result<Arc<StaticEmbedder>, NoEmbedder> {
        self.embedder.get_or_init(|| load_embedder(&self.home, self.config.config()).map(Arc::new)).clone()
    }

    /// The resource's local vector index as the queries share it: the one
    /// this engine holds, while no process changed its files since; `None`
    /// when it holds none (the writer's turn opens it, see
    /// [`Engine::vector_for_writing`]).
    fn shared_vector(
        &self,
        resource_id: &str,
        embedder: &dyn Embedder,
    ) -> Option<(Arc<LocalVectorIndex>, VectorStamp)> {
        let dir = self.home.search_dir(resource_id, "vector");
        let id = vector_model_id(embedder);
        let cache = self.vectors.lock().unwrap_or_else(|e| e.into_inner());
        match cache.get(&dir) {
            Some((stamp, index)) if index.model_id() == id && *stamp == vector_stamp(&dir) => {
                Some((index.clone(), stamp.clone()))
            }
            _ => None,
        }
    }

    /// The resource's vector index to sync, under the resource's lock: the
    /// shared one when no query reads it any more, else opened from its
    /// files (queries still reading the shared one keep their copy). Give it
    /// back with [`Engine::keep_vector_index`] once committed.
    fn vector_for_writing(&self, resource_id: &str, embedder: &dyn Embedder) -> Result<LocalVectorIndex, QueryError> {
        let dir = self.home.search_dir(resource_id, "vector");
        // The stored vectors depend on the model and on what text is embedded: a
        // change to either (bump EMBEDDING_TEXT_VERSION) rebuilds them.
        let id = vector_model_id(embedder);
        let cached = self.vectors.lock().unwrap_or_else(|e| e.into_inner()).remove(&dir);
        if let Some((stamp, index)) = cached
            && stamp == vector_stamp(&dir)
            && index.model_id() == id
            && let Ok(index) = Arc::try_unwrap(index)
        {
            return Ok(index);
        }
        let options = VectorOptions {
            ann_threshold: self.config.config().context.backends.ann_threshold,
            ..VectorOptions::default()
        };
        let (index, damage) = LocalVectorIndex::open_or_reset(&dir, &id, embedder.dim(), options)?;
        if let Some(damage) = damage {
            warn_rebuilt("vector index", &dir, &damage);
        }
        Ok(index)
    }

    /// Shares a vector index with the queries that follow, stamped with its files now.
    fn keep_vector_index(&self, resource_id: &str, index: LocalVectorIndex) -> Arc<LocalVectorIndex> {
        let dir = self.home.search_dir(resource_id, "vector");
        let stamp = vector_stamp(&dir);
        let index = Arc::new(index);
        self.vectors.lock().unwrap_or_else(|e| e.into_inner()).insert(dir, (stamp, index.clone()));
        index
    }

    /// The folder of the resource's local text index. It names the analyzer's
    /// version: a new one starts empty and is built from the store.
    fn text_dir(&self, resource_id: &str) -> PathBuf {
        let kind = self.config.config().context.backends.text;
        self.home.search_dir(resource_id, &format!("{kind}-v{}", agents_search::TEXT_INDEX_VERSION))
    }

    /// The resource's text index for searching only, without the lock: on the
    /// team server its tables; a local Tantivy index shared by every query
    /// (reopened when a commit, by any process, replaced its `meta.json`:
    /// a reader sees one committed generation, never a commit half-written);
    /// a local FTS5 database opened for this query (SQLite readers see
    /// committed transactions only). `None` when there is no readable index
    /// yet (the writer's turn creates or repairs it).
    /// With a local Tantivy index, the stamp of the `meta.json` it was opened at.
    fn shared_text(
        &self,
        resource_id: &str,
        index_id: &str,
    ) -> Option<(Arc<dyn agents_search::TextBackend>, Option<FileStamp>)> {
        if let Some(server) = &self.server {
            let text =
                PgTextBackend::open(server.clone(), &format!("{index_id}/v{}", agents_search::TEXT_INDEX_VERSION));
            return Some((Arc::new(text), None));
        }
        let kind = self.config.config().context.backends.text;
        let dir = self.text_dir(resource_id);
        match kind {
            agents_search::TextBackendKind::Tantivy => {
                let stamp = file_stamp(&dir.join("meta.json"))?;
                let mut cache = self.texts.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((held, backend)) = cache.get(&dir)
                    && *held == stamp
                {
                    return Some((backend.clone(), Some(stamp)));
                }
                let backend: Arc<dyn agents_search::TextBackend> =
                    Arc::from(agents_search::open_text_reader(kind, &dir).ok()?);
                // The stamp read before opening: a commit in between only
                // makes the next query open it again.
                cache.insert(dir, (stamp, backend.clone()));
                Some((backend, Some(stamp)))
            }
            agents_search::TextBackendKind::Fts5 => {
                if !dir.join("fts5.db").is_file() {
                    return None;
                }
                agents_search::open_text_backend(kind, &dir).ok().map(|mut backend| {
                    backend.finish_writing();
                    (Arc::from(backend), None)
                })
            }
        }
    }

    /// The digest of an index run's file list ([`agents_acms::query::files_digest`]),
    /// computed once per run.
    fn files_digest(&self, index: &RepoIndex) -> String {
        let run = run_marker(&index.metadata);
        let mut digests = self.digests.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((held, count, digest)) = digests.get(&index.metadata.index_id)
            && *held == run
            && *count == index.files.len()
        {
            return digest.clone();
        }
        let digest = agents_acms::query::files_digest(&index.files);
        digests.insert(index.metadata.index_id.clone(), (run, index.files.len(), digest.clone()));
        digest
    }

    /// Brings the resource's text index and (with a model) vector index up to date.
    pub fn sync_search(&self, outcome: &IndexOutcome) -> Result<SyncReport, EngineError> {
        if self.search_saved_current(outcome)? {
            return Ok(SyncReport::default());
        }
        self.with_backends(outcome, |_, sync, _| Ok(sync))
    }

    /// Whether the local search indexes on disk already hold `outcome`'s file
    /// list, known without opening them: the digest each recorded at its last
    /// sync, its files present, and the vectors of the model in use. What a
    /// refresh that changed nothing asks (opening Tantivy's writer and the
    /// vector rows cost it a third of its time); `false` sends it to the
    /// full check.
    fn search_saved_current(&self, outcome: &IndexOutcome) -> Result<bool, EngineError> {
        if self.server.is_some() {
            return Ok(false);
        }
        let resource_id = &outcome.resource.resource_id;
        let index_id = &outcome.index.metadata.index_id;
        let kind = self.config.config().context.backends.text;
        let text_file = match kind {
            agents_search::TextBackendKind::Tantivy => "meta.json",
            agents_search::TextBackendKind::Fts5 => "fts5.db",
        };
        if !self.text_dir(resource_id).join(text_file).is_file() {
            return Ok(false);
        }
        let digest = self.files_digest(&outcome.index);
        if !self.search.is_current(index_id, kind.as_str(), false, &digest)? {
            return Ok(false);
        }
        match self.embedder_id() {
            None => Ok(true),
            Some((id, dim)) => {
                let dir = self.home.search_dir(resource_id, "vector");
                let saved = agents_search::vector::saved_model(&dir);
                let same_model =
                    saved.is_some_and(|(saved_id, saved_dim)| saved_id == id && dim.is_none_or(|d| d == saved_dim));
                Ok(same_model
                    && self.search.is_current(
                        index_id,
                        &agents_acms::query::vector_state_key(agents_search::vector::LOCAL_NAME),
                        false,
                        &digest,
                    )?)
            }
        }
    }

    /// The plan `plan_id` and its ancestors' decisions, nearest first.
    pub fn plan_context(&self, plan_id: &str) -> Result<PlanContext, EngineError> {
        let mut context = PlanContext { plan_id: plan_id.to_owned(), ancestors: Vec::new() };
        let mut next = Some(plan_id.to_owned());
        let mut seen = std::collections::HashSet::new();
        while let Some(id) = next {
            if !seen.insert(id.clone()) {
                break;
            }
            let plan = self.store.plan(&id)?.ok_or_else(|| EngineError::PlanNotFound(id.clone()))?;
            let decisions = self.store.plan_decisions(&id)?;
            context.ancestors.push(PlanDecisions { plan_id: plan.plan_id, title: plan.title, decisions });
            next = plan.parent_id;
        }
        Ok(context)
    }

    /// The strategy registry from `context.strategies.enabled`.
    pub fn strategies(&self) -> Result<ContextStrategyRegistry, EngineError> {
        Ok(ContextStrategyRegistry::with_custom(
            self.pipeline.custom_strategies(),
            &self.config.config().context.strategies.enabled,
        )?)
    }

    /// Brings the resource's search backends up to date with `outcome`'s file
    /// list, then hands read-only, shared backends to `f` with the sync report
    /// and a line per backend kind saying what serves it.
    ///
    /// The resource's lock (which an index run holds too) is taken only when a
    /// backend is stale, for the sync; `f` runs without it, beside other
    /// queries, and a strategy it leaves running holds nothing a writer waits
    /// for. An index run that commits while `f` reads the store would let it
    /// mix two runs, so `f` is run again, over the new run, when the store's
    /// run changed in the meantime. `f` waits for its turn among the
    /// assemblies running at once ([`Admission`]).
    fn with_backends<R>(
        &self,
        outcome: &IndexOutcome,
        f: impl Fn(&Backends<'_>, SyncReport, BTreeMap<String, String>) -> Result<R, EngineError>,
    ) -> Result<R, EngineError> {
        let started = std::time::Instant::now();
        let resource_id = &outcome.resource.resource_id;
        let mut reread: Option<IndexOutcome> = None;
        let mut before = self.store_run(resource_id)?;
        let mut attempt = 1;
        loop {
            let current = reread.as_ref().unwrap_or(outcome);
            let (owned, sync, served) = self.open_backends(current)?;
            tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "search indexes ready");
            let turn = self.admission.enter();
            let result = f(&owned.view(), sync, served);
            drop(turn);
            drop(owned);
            let after = self.store_run(resource_id)?;
            if result.is_err() || after == before || attempt == MAX_READS {
                tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, attempt, "backends used");
                return result;
            }
            // An index run committed while `f` read: read again, over its files.
            tracing::debug!(attempt, "an index run committed during the query; reading the new run");
            let Some(metadata) = self.store.index_metadata(resource_id)? else { return result };
            let files = self.store.file_records(&metadata.index_id)?;
            let languages = RepoIndex::language_stats(&files);
            reread = Some(IndexOutcome {
                project: outcome.project.clone(),
                resource: outcome.resource.clone(),
                new_resource: outcome.new_resource,
                index: RepoIndex { metadata, files, languages, report: None },
            });
            before = after;
            attempt += 1;
        }
    }

    /// The store's last committed index run of a resource.
    fn store_run(&self, resource_id: &str) -> Result<Option<RunMarker>, EngineError> {
        Ok(self.store.index_metadata(resource_id)?.as_ref().map(run_marker))
    }

    /// The backends of one read: shared ones when each already holds
    /// `outcome`'s file list (no lock), else synced under the resource's lock
    /// first.
    fn open_backends(&self, outcome: &IndexOutcome) -> Result<OpenedBackends, EngineError> {
        let root = PathBuf::from(&outcome.resource.path);
        let resource_id = &outcome.resource.resource_id;
        let index_id = &outcome.index.metadata.index_id;
        let digest = self.files_digest(&outcome.index);
        let embedder = self.embedder();
        let mut ready = self.ready_backends(resource_id, index_id, &digest, &embedder)?;
        let mut sync = SyncReport::default();
        if ready.is_none() {
            // A writer's turn: one at a time, and never beside an index run.
            let _lock = self.indexing.lock_resource(resource_id, &root)?;
            // Another query may have synced while this one waited.
            ready = self.ready_backends(resource_id, index_id, &digest, &embedder)?;
            if ready.is_none() {
                let (report, backends) = self.sync_locked(outcome, &digest, &embedder)?;
                sync = report;
                ready = Some(backends);
            }
        }
        let Some((text, vector)) = ready else { unreachable!("set on every path above") };

        let kind = self.config.config().context.backends.text;
        let history = GitHistory::discover(&root).map_err(QueryError::from)?;
        let mut missing = BTreeMap::new();
        let mut served = BTreeMap::new();
        match &self.server {
            Some(server) => served.insert("text".to_owned(), format!("postgres ({})", server.location())),
            None => served.insert("text".to_owned(), kind.to_string()),
        };
        match &embedder {
            Ok(e) => {
                let name = if self.server.is_some() { "pgvector" } else { "local" };
                served.insert("vector".to_owned(), format!("{name} ({})", e.model_id()));
            }
            Err(reason) => {
                missing.insert(BackendKind::Vector, reason.to_string());
                served.insert("vector".to_owned(), format!("unavailable: {reason}"));
            }
        }
        served.insert("graph".to_owned(), "uko edges (store)".to_owned());
        if history.is_none() {
            missing.insert(BackendKind::Temporal, format!("{} is not in a git repository", root.display()));
            served.insert("temporal".to_owned(), "unavailable: not a git repository".to_owned());
        } else {
            served.insert("temporal".to_owned(), "git history".to_owned());
        }
        // Owned, so that a strategy past its time limit can be left running
        // with its copy while the assembly goes on (see `ParallelExecutor`).
        let owned = Arc::new(agents_acms::retrieval::OwnedBackends {
            root: root.clone(),
            index_id: index_id.clone(),
            store: self.store.clone(),
            search: ContextSearch::new(self.store.clone()),
            tokenizer: Arc::new(self.tokenizer),
            text: Some(text),
            vector: match (vector, &embedder) {
                (Some(backend), Ok(embedder)) => Some((backend, embedder.clone() as _)),
                _ => None,
            },
            history: history.map(Arc::new),
            missing,
        });
        Ok((owned, sync, served))
    }

    /// The shared backends when each holds the file list of `digest`, else `None`.
    fn ready_backends(
        &self,
        resource_id: &str,
        index_id: &str,
        digest: &str,
        embedder: &Result<Arc<StaticEmbedder>, NoEmbedder>,
    ) -> Result<Option<SharedBackends>, EngineError> {
        let Some((text, text_stamp)) = self.shared_text(resource_id, index_id) else { return Ok(None) };
        if !self.search.is_current(index_id, text.name(), text.doc_count().map_err(QueryError::from)? == 0, digest)? {
            return Ok(None);
        }
        let mut vector_stamp_held = None;
        let vector: Option<Arc<dyn VectorBackend>> = match (&self.server, embedder) {
            (_, Err(_)) => None,
            (Some(server), Ok(e)) => Some(Arc::new(self.server_vector(server, index_id, e.as_ref())?)),
            (None, Ok(e)) => match self.shared_vector(resource_id, e.as_ref()) {
                Some((index, stamp)) => {
                    vector_stamp_held = Some(stamp);
                    Some(index)
                }
                None => return Ok(None),
            },
        };
        if let Some(vector) = &vector {
            let key = agents_acms::query::vector_state_key(vector.name());
            if !self.search.is_current(index_id, &key, vector.is_empty(), digest)? {
                return Ok(None);
            }
        }
        // A writer that committed after the engine opened these, and recorded
        // it before the checks above, would have them searched as if they
        // held what it wrote.
        if let Some(stamp) = text_stamp
            && file_stamp(&self.text_dir(resource_id).join("meta.json")) != Some(stamp)
        {
            return Ok(None);
        }
        if let Some(stamp) = vector_stamp_held
            && vector_stamp(&self.home.search_dir(resource_id, "vector")) != stamp
        {
            return Ok(None);
        }
        Ok(Some((text, vector)))
    }

    /// The team server's vector table of an index for the model.
    fn server_vector(
        &self,
        server: &Arc<PostgresStore>,
        index_id: &str,
        embedder: &StaticEmbedder,
    ) -> Result<PgVectorBackend, QueryError> {
        // Keyed by the model and the embedded text's version, as the local index is.
        let key = format!("{index_id}/{}/{}", embedder.model_id(), agents_acms::query::EMBEDDING_TEXT_VERSION);
        Ok(PgVectorBackend::open(server.clone(), &key, embedder.dim())?
            // A server answers many clients at once: its exact scans cost
            // the database's CPU, so it goes through HNSW from pgvector's
            // own threshold even where a local index would still scan.
            .with_ann_threshold(
                self.config.config().context.backends.ann_threshold.min(agents_postgres::vector::ANN_THRESHOLD),
            ))
    }

    /// Opens the resource's backends for writing and syncs them with
    /// `outcome`'s file list; the caller holds the resource's lock. Returns
    /// the report and the backends the queries share from then on (the
    /// writers are closed: nothing a strategy keeps holds a writer lock).
    fn sync_locked(
        &self,
        outcome: &IndexOutcome,
        digest: &str,
        embedder: &Result<Arc<StaticEmbedder>, NoEmbedder>,
    ) -> Result<(SyncReport, SharedBackends), EngineError> {
        let started = std::time::Instant::now();
        let root = PathBuf::from(&outcome.resource.path);
        let resource_id = &outcome.resource.resource_id;
        let index_id = &outcome.index.metadata.index_id;
        let kind = self.config.config().context.backends.text;
        let mut text: Box<dyn agents_search::TextBackend> = match &self.server {
            // On the team server, keyed like the local folder by the analyzer's version.
            Some(server) => Box::new(PgTextBackend::open(
                server.clone(),
                &format!("{index_id}/v{}", agents_search::TEXT_INDEX_VERSION),
            )),
            None => {
                // The folder of the analyzer version before goes.
                let text_dir = self.text_dir(resource_id);
                let old_dir = self.home.search_dir(resource_id, kind.as_str());
                if old_dir.is_dir() {
                    let _ = std::fs::remove_dir_all(&old_dir);
                }
                let (text, damage) =
                    agents_search::open_or_reset_text_backend(kind, &text_dir).map_err(QueryError::from)?;
                if let Some(damage) = damage {
                    warn_rebuilt("text index", &text_dir, &damage);
                }
                text
            }
        };
        // A vector index already holding this file list is not written: the
        // shared one stays with the queries reading it.
        let shared_vector = match (&self.server, embedder) {
            (None, Ok(e)) => self.shared_vector(resource_id, e.as_ref()).map(|(index, _)| index).filter(|index| {
                let key = agents_acms::query::vector_state_key(index.name());
                self.search.is_current(index_id, &key, index.is_empty(), digest).unwrap_or(false)
            }),
            _ => None,
        };
        let (mut vector, mut server_vector) = (None, None);
        match (&self.server, embedder) {
            (Some(server), Ok(e)) => server_vector = Some(self.server_vector(server, index_id, e.as_ref())?),
            (None, Ok(e)) if shared_vector.is_none() => {
                vector = Some(self.vector_for_writing(resource_id, e.as_ref())?)
            }
            _ => {}
        }
        let sink_backend: Option<&mut dyn VectorBackend> = match (&mut vector, &mut server_vector) {
            (Some(local), _) => Some(local),
            (None, Some(server)) => Some(server),
            (None, None) => None,
        };
        let sink = match (sink_backend, embedder) {
            (Some(backend), Ok(embedder)) => Some(VectorSink { backend, embedder: embedder.as_ref() }),
            _ => None,
        };
        let sync = self.search.sync_with_digest(&root, index_id, &outcome.index.files, digest, text.as_mut(), sink)?;
        // The strategies only search: a strategy left running past its time
        // limit must not hold the writer lock into the next writer's turn.
        text.finish_writing();
        let text: Arc<dyn agents_search::TextBackend> = match (&self.server, kind) {
            // The committed index, opened for searching as every query shares it.
            (None, agents_search::TextBackendKind::Tantivy) => {
                drop(text);
                self.texts.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.text_dir(resource_id));
                match self.shared_text(resource_id, index_id) {
                    Some((text, _)) => text,
                    None => Arc::from(
                        agents_search::open_text_reader(kind, &self.text_dir(resource_id)).map_err(QueryError::from)?,
                    ),
                }
            }
            _ => Arc::from(text),
        };
        let vector: Option<Arc<dyn VectorBackend>> = match (vector, server_vector, shared_vector) {
            (Some(local), _, _) => Some(self.keep_vector_index(resource_id, local)),
            (None, Some(server), _) => Some(Arc::new(server)),
            (None, None, Some(shared)) => Some(shared),
            (None, None, None) => None,
        };
        tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, "search indexes synced");
        Ok((sync, (text, vector)))
    }

    /// Every registered strategy and whether it can run on the resource now.
    pub fn strategy_status(&self, outcome: &IndexOutcome) -> Result<Vec<StrategyStatus>, EngineError> {
        let registry = self.strategies()?;
        self.with_backends(outcome, |backends, _, _| Ok(registry.status(backends)))
    }

    /// The assembly pipeline, as `[context.pipeline]` chose it.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The budget for a request: `model_context_window - response_reserve -
    /// tool_definitions` for `model` (from `[models]`), capped by `max_tokens`;
    /// without a model, `max_tokens` (8,000 when not given). The skeleton's share
    /// comes off it inside the pipeline.
    pub fn budget(
        &self,
        model: Option<&str>,
        max_tokens: Option<u64>,
    ) -> Result<(ContextBudget, BudgetDerivation), EngineError> {
        let config = self.config.config();
        if max_tokens == Some(0) {
            return Err(EngineError::ZeroMaxTokens { min: config.context.budget.min_useful_budget });
        }
        let reserve = config.context.budget.response_reserve;
        let tools = config.context.budget.tool_definitions;
        let mut derivation = BudgetDerivation {
            model: model.map(str::to_owned),
            context_window: None,
            response_reserve: reserve,
            tool_definitions: tools,
            max_tokens,
            available: 0,
        };
        let from_model = match model {
            Some(name) => {
                let spec = config.models.specs.get(name).ok_or_else(|| EngineError::UnknownModel {
                    name: name.to_owned(),
                    known: config.models.specs.keys().cloned().collect::<Vec<_>>().join(", "),
                })?;
                derivation.context_window = Some(spec.context_window);
                let left = spec.context_window.checked_sub(reserve + tools).filter(|l| *l > 0).ok_or_else(|| {
                    EngineError::WindowTooSmall { model: name.to_owned(), window: spec.context_window, reserve, tools }
                })?;
                Some(left as u64)
            }
            None => None,
        };
        let available = match (from_model, max_tokens) {
            (Some(m), Some(t)) => m.min(t),
            (Some(m), None) => m,
            (None, Some(t)) => t,
            (None, None) => DEFAULT_MAX_TOKENS,
        };
        derivation.available = available;
        let budget = ContextBudget::new(available, 0).map_err(PipelineError::from)?;
        Ok((budget, derivation))
    }

    /// Assembles context for `request` over the resource of an index outcome: syncs
    /// the search backends, then runs the ten-component pipeline.
    pub fn assemble(
        &self,
        outcome: &IndexOutcome,
        request: &ContextRequest,
        options: &AssembleOptions,
    ) -> Result<(Assembly, SyncReport, BTreeMap<String, String>), EngineError> {
        let registry = self.strategies()?;
        let plan = options.plan_id.as_deref().map(|id| self.plan_context(id)).transpose()?;
        let config = self.config.config();
        let retrieval = retrieval_request(request);
        let request = &retrieval;
        let view = effective_view(options.view.as_ref(), config);
        let query = RetrievalQuery {
            request,
            depth: options.depth,
            // The request's priority scales the candidates the budget allows.
            limit: if options.limit == 0 {
                (agents_acms::pipeline::scaled_by_priority(
                    candidates_for_budget(options.budget.available_tokens()) as u64,
                    request.priority(),
                ) as usize)
                    .max(1)
            } else {
                options.limit
            },
            filter: options.filter.clone(),
            arce_max_rounds: config.context.strategies.arce.max_rounds,
            max_hops: config.context.strategies.breadth_depth_navigator.max_hops,
            cancel: None,
            deadline: None,
        };
        // The parent plan's last context becomes this one's skeleton.
        let parent: Vec<agents_acms::pipeline::piece::Piece> = match &options.plan_id {
            Some(id) => match self.store.plan(id)?.and_then(|p| p.parent_id) {
                Some(parent) => match self.store.plan_payload(&parent)? {
                    Some(json) => serde_json::from_str(&json).unwrap_or_else(|error| {
                        tracing::warn!(plan = %parent, %error, "stored plan context unreadable; no skeleton");
                        Vec::new()
                    }),
                    None => Vec::new(),
                },
                None => Vec::new(),
            },
            None => Vec::new(),
        };
        self.with_backends(outcome, |backends, sync, served| {
            let renderer = StoreRenderer::new(backends.root, backends.index_id, self.store.as_ref(), &self.graph)
                .within(&options.filter);
            let facts = FsFacts::new(backends.root);
            let deps = StoreDependencies { store: self.store.as_ref(), index_id: backends.index_id };
            let assembly = self.pipeline.assemble_request(RequestInput {
                request,
                query: query.clone(),
                backends,
                registry: &registry,
                plan: plan.as_ref(),
                plan_id: options.plan_id.clone().unwrap_or_else(|| "adhoc".to_owned()),
                resource_id: &outcome.resource.resource_id,
                budget: options.budget,
                parent: &parent,
                skeleton_ratio: options.skeleton_ratio,
                view: Some(&view),
                renderer: &renderer,
                facts: &facts,
                deps: &deps,
                tokenizer: &self.tokenizer,
                entries: &options.entries,
            })?;
            if let Some(id) = &options.plan_id {
                let own: Vec<&agents_acms::pipeline::piece::Piece> = assembly
                    .pieces
                    .iter()
                    .map(|s| &s.piece)
                    .filter(|p| p.role == agents_acms::pipeline::piece::PieceRole::Context)
                    .collect();
                // Pieces are plain data: serialising them cannot fail.
                let json = serde_json::to_string(&own).unwrap_or_else(|_| "[]".to_owned());
                self.store.set_plan_payload(id, &json)?;
            }
            Ok((assembly, sync, served))
        })
    }

    /// Opens the context tier service: hot snapshot and cold archive under
    /// [`Home::tiers_dir`], warm rows in the database, capacities and retention
    /// from `[context.hot]`, `[context.warm]` and `[context.cold]`.
    pub fn open_tiers(&self) -> Result<ContextTierService, TierError> {
        let warm: Arc<dyn WarmTierStore> = self.store.clone();
        ContextTierService::open(
            &self.home.tiers_dir(),
            warm,
            TierSettings::from_config(&self.config.config().context),
            Arc::new(self.tokenizer),
        )
    }

    /// How many orphaned `indexing` rows start-up marked `stale`.
    pub fn stale_repaired(&self) -> usize {
        self.stale_repaired
    }

    /// Indexing options from the configuration.
    pub fn index_options(&self) -> IndexOptions {
        let c = self.config.config();
        IndexOptions {
            include_globs: c.index.include.clone(),
            exclude_globs: c.index.exclude.clone(),
            max_file_size: Some(c.context.file.max_size),
            max_total_size: (c.index.max_total_size > 0).then_some(c.index.max_total_size),
            hidden: c.index.hidden,
            follow_symlinks: c.index.follow_symlinks,
            wait_for_lock: false,
        }
    }

    /// Unlinks the resource given by path or id from `project`. A resource left
    /// in no project is deleted from the store, and everything the home held for
    /// it goes too: its search indexes (`search/<resource>/`: text, vectors, the
    /// HNSW graph) and its lock file, once a query or indexer using them is done.
    pub fn unlink_resource(&self, project: &Project, path_or_id: &str) -> Result<Resource, EngineError> {
        let resource = self.projects.unlink(project, path_or_id)?;
        if !self.projects.is_deleted(&resource)? {
            return Ok(resource);
        }
        let held = self.indexing.lock_resource(&resource.resource_id, Path::new(&resource.path))?;
        let search = self.home.root().join("search").join(&resource.resource_id);
        self.vectors.lock().unwrap_or_else(|e| e.into_inner()).retain(|dir, _| !dir.starts_with(&search));
        self.texts.lock().unwrap_or_else(|e| e.into_inner()).retain(|dir, _| !dir.starts_with(&search));
        let lock = self.indexing.lock_file(&resource.resource_id);
        for (path, removed) in [(&search, std::fs::remove_dir_all(&search)), (&lock, std::fs::remove_file(&lock))] {
            match removed {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    return Err(ProjectError::Io { path: path.clone(), source }.into());
                }
                _ => {}
            }
        }
        drop(held);
        Ok(resource)
    }

    /// Links `path` to `project` and indexes it (refreshing if already indexed).
    pub fn link_and_index(
        &self,
        project: &str,
        path: &Path,
        options: &IndexOptions,
        progress: &dyn Progress,
    ) -> Result<IndexOutcome, EngineError> {
        options.validate()?;
        let project = self.projects.get(project)?;
        let existed = self.store.resource_by_path(&canonical_dir(path)?.to_string_lossy())?.is_some();
        let resource = self.projects.link(&project, path)?;
        let index = self.indexing.refresh_index(&resource.resource_id, Path::new(&resource.path), options, progress)?;
        Ok(IndexOutcome { project, resource, new_resource: !existed, index })
    }

    /// The convenience behind `agents index PATH`: finds the resource that
    /// holds PATH (or creates a project named after the directory and links
    /// it), then indexes or refreshes it.
    pub fn index_path(
        &self,
        path: &Path,
        mode: IndexMode,
        options: &IndexOptions,
        progress: &dyn Progress,
    ) -> Result<IndexOutcome, EngineError> {
        options.validate()?;
        let dir = canonical_dir(path)?;
        let (resource, new_resource) = match self.projects.resource_containing(&dir)? {
            Some(r) => (r, false),
            None => {
                let project = self.projects.get_or_create(&project_name_for(&dir))?;
                (self.projects.link(&project, &dir)?, true)
            }
        };
        let project = self
            .projects
            .projects_of(&resource)?
            .into_iter()
            .next()
            .ok_or_else(|| ProjectError::NotLinked { project: "(any)".into(), resource: resource.path.clone() })?;
        let root = PathBuf::from(&resource.path);
        let index = match mode {
            IndexMode::Refresh => self.indexing.refresh_index(&resource.resource_id, &root, options, progress)?,
            IndexMode::Full => self.indexing.index_resource(&resource.resource_id, &root, options, progress)?,
        };
        Ok(IndexOutcome { project, resource, new_resource, index })
    }
}

#[cfg(test)]
mod tests {
    use super::candidates_for_budget;

    #[test]
    fn the_candidates_grow_with_the_budget_within_bounds() {
        assert_eq!(candidates_for_budget(1_800), 50);
        assert_eq!(candidates_for_budget(7_800), 50);
        assert_eq!(candidates_for_budget(31_800), 198);
        assert_eq!(candidates_for_budget(100_000), 625);
        assert_eq!(candidates_for_budget(1_000_000), 1_000);
        let grown: Vec<usize> = (0..40).map(|k| candidates_for_budget(k * 5_000)).collect();
        assert!(grown.windows(2).all(|w| w[0] <= w[1]), "{grown:?}");
    }
}
