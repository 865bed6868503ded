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
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_acms::graph::CodeGraph;
use agents_acms::indexing::{IndexError, IndexOptions, Progress, RepoIndexingService};
use agents_acms::projects::{ProjectError, ProjectService, canonical_dir, project_name_for};
use agents_acms::query::{ContextSearch, KeywordContext, KeywordQuery, QueryError};
use agents_core::config::ResolvedConfig;
use agents_core::indexing::RepoIndex;
use agents_core::tokens::Tokenizer;
use agents_store::{Project, Resource, SqliteStore, Store, StoreError};

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
}

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
    store: Arc<SqliteStore>,
    tokenizer: Tokenizer,
    indexing: RepoIndexingService,
    projects: ProjectService,
    graph: CodeGraph,
    search: ContextSearch,
    stale_repaired: usize,
}

impl Engine {
    /// Opens the store under `home` (creating it on first use), builds every
    /// service from `config`, and repairs index rows orphaned by a killed
    /// indexer.
    pub fn open(home: Home, config: ResolvedConfig) -> Result<Engine, EngineError> {
        let store = Arc::new(SqliteStore::open(&home.database())?);
        let tokenizer =
            Tokenizer::with_impl(config.config().tokenizer.encoding, config.config().tokenizer.implementation);
        let dyn_store: Arc<dyn Store> = store.clone();
        let indexing = RepoIndexingService::new(dyn_store.clone(), tokenizer, home.locks_dir());
        let projects = ProjectService::new(dyn_store.clone());
        let graph = CodeGraph::new(dyn_store.clone());
        let search = ContextSearch::new(dyn_store);
        let stale_repaired = indexing.cleanup_stale_indexing()?;
        Ok(Engine { home, config, store, tokenizer, indexing, projects, graph, search, stale_repaired })
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

    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
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

    /// Keyword context for `query` over the resource of an index outcome:
    /// syncs the resource's text index, searches, packs under the budget.
    pub fn keyword_context(&self, outcome: &IndexOutcome, query: &KeywordQuery) -> Result<KeywordContext, EngineError> {
        let kind = &self.config.config().context.backends.text;
        let dir = self.home.search_dir(&outcome.resource.resource_id, kind);
        let root = PathBuf::from(&outcome.resource.path);
        // One writer of the resource's text index at a time: concurrent
        // queries take turns to sync it (an index run waits for them too).
        let _lock = self.indexing.lock_resource(&outcome.resource.resource_id, &root)?;
        let mut backend = agents_search::open_text_backend(kind, &dir).map_err(QueryError::from)?;
        let index_id = &outcome.index.metadata.index_id;
        let sync = self.search.sync(&root, index_id, backend.as_mut())?;
        let mut context = self.search.query(&root, index_id, backend.as_ref(), query, &self.tokenizer)?;
        context.sync = sync;
        Ok(context)
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
