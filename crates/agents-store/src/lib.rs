//! The store: every byte of engine state that lives in a database.
//!
//! This is the only crate that speaks SQL. Callers see the [`Store`] trait, a
//! narrow interface over projects, resources and repository indexes, so a
//! shared server database (PostgreSQL, planned for teams) can be a second
//! implementation without touching the services. [`SqliteStore`] is the
//! embedded default: one `agents.db` file under `$AGENTS_HOME`, WAL mode,
//! versioned migrations, every multi-row change inside one transaction.
//!
//! Invariants:
//! - `repo_indexes` and `indexed_files` have exactly the columns of the spec's
//!   Database Schema; extra state lives in extra tables.
//! - a file list is replaced only by [`Store::commit_index`], atomically with
//!   the index row's transition to `ready`; a process killed before that
//!   leaves the previous file list intact.

mod error;
mod migrations;
mod sqlite;
mod uko_sql;

/// Atomic writes are agents-fs's; re-exported for the store's callers.
pub use agents_fs::atomic_write;
pub use error::StoreError;
pub use sqlite::SqliteStore;

use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus, SkipReason};
use agents_core::policy::{Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
use agents_core::tier::TieredFragment;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A named project; resources are linked to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub project_id: String,
    pub name: String,
    pub created_at: String,
}

/// A plan: a unit of work whose decisions its child plans inherit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub plan_id: String,
    pub parent_id: Option<String>,
    pub title: String,
    pub created_at: String,
    /// The phase the plan is in: `default`, `strategize`, `execute` or `apply`
    /// (see [`agents_core::policy::Phase`]); it picks the project's context view.
    pub phase: String,
    /// The project whose context policy scopes the plan, if any.
    pub project_id: Option<String>,
}

/// A decision recorded on a plan, kept in the warm or cold tier (or hot while the
/// plan is active).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDecision {
    pub decision_id: String,
    pub plan_id: String,
    pub title: String,
    pub body: String,
    /// `hot`, `warm` or `cold`.
    pub tier: String,
    pub created_at: String,
}

/// A directory known to the engine, linked to one or more projects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    pub resource_id: String,
    /// Canonical absolute path of the directory.
    pub path: String,
    /// Short display name (the directory's name).
    pub name: String,
    pub created_at: String,
}

/// A file left out of an index because of its content (e.g. binary),
/// remembered so a refresh need not read it again while its stat is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub size_bytes: u64,
    pub last_modified: String,
    pub reason: SkipReason,
}

/// One UKO node as the indexer produced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoNode {
    /// `uko://<resource>/<path>` for a file, `...#<symbol_path>` for a symbol.
    pub uri: String,
    pub path: String,
    pub symbol_path: String,
    pub kind: String,
    pub name: String,
    pub parent_uri: Option<String>,
    pub language: String,
    pub start_byte: i64,
    pub end_byte: i64,
    pub start_line: i64,
    pub start_col: i64,
    pub end_line: i64,
    pub end_col: i64,
    pub signature: Option<String>,
    pub doc: Option<String>,
    /// SHA-256 of the node's source text: a change makes a new revision.
    pub content_hash: String,
}

/// A stored UKO node revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoNodeRecord {
    pub node_id: i64,
    #[serde(flatten)]
    pub node: UkoNode,
    pub valid_from: String,
    pub valid_until: Option<String>,
    pub is_current: bool,
    /// The revision this one replaced.
    pub revision_of: Option<i64>,
}

/// A reference from a node, as written and as resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoRef {
    /// The file the reference is written in.
    pub path: String,
    pub from_uri: String,
    /// `import`, `inherits`, `calls` or `mentions`.
    pub kind: String,
    pub target: String,
    /// The last segment of the target, for finding references by name.
    pub target_name: String,
    pub names: Vec<String>,
    pub system: bool,
    pub line: i64,
    /// The node (file or symbol) it resolved to; `None` = external.
    pub resolved_uri: Option<String>,
    pub resolved_path: Option<String>,
}

/// The UKO part of an index commit.
#[derive(Clone, Debug, Default)]
pub struct UkoCommit {
    /// Files whose nodes and references are replaced (revisions kept).
    pub files: Vec<UkoFile>,
    /// Files whose nodes are retired and references deleted.
    pub removed_paths: Vec<String>,
    /// New resolutions of references in unchanged files.
    pub re_resolved: Vec<Rebinding>,
}

/// A stored reference bound anew: (ref_id, resolved uri, resolved path).
pub type Rebinding = (i64, Option<String>, Option<String>);

/// A file's fresh nodes and references.
#[derive(Clone, Debug, Default)]
pub struct UkoFile {
    pub path: String,
    pub nodes: Vec<UkoNode>,
    pub refs: Vec<UkoRef>,
}

/// The open write transaction of an indexing run.
pub trait IndexWrite {
    /// Replaces the current nodes of one file (keeping revisions). Returns
    /// the names of symbols the file did not define before.
    fn write_nodes(&mut self, path: &str, nodes: &[UkoNode]) -> Result<Vec<String>, StoreError>;
    /// Replaces the references written in one file.
    fn write_refs(&mut self, path: &str, refs: &[UkoRef]) -> Result<(), StoreError>;
    /// Retires the nodes and deletes the references of files that left the index.
    fn retire_paths(&mut self, paths: &[String]) -> Result<(), StoreError>;
    /// Calls `f(path, symbol_path, name, kind)` for every current node,
    /// sorted by path, as the transaction sees them.
    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str)) -> Result<(), StoreError>;
    /// Like [`IndexWrite::for_each_symbol`], for current nodes named one of `names`.
    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str),
    ) -> Result<(), StoreError>;
    /// References written in `path`, as the transaction sees them.
    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// See [`Store::uko_refs_affected_by`].
    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Applies the rest of the commit, marks the index `ready` and commits.
    fn finish(self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
}

/// A current symbol, for name resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UkoSymbol {
    pub uri: String,
    pub path: String,
    pub symbol_path: String,
    pub name: String,
    pub kind: String,
    pub parent_uri: Option<String>,
}

/// The changes of one indexing run, applied in one transaction.
#[derive(Clone, Debug, Default)]
pub struct IndexCommit {
    /// New or changed files (replaced whole).
    pub upserts: Vec<FileRecord>,
    /// Files whose only change is their modification time.
    pub touched: Vec<(String, String)>,
    /// Paths that are gone.
    pub removed: Vec<String>,
    /// The complete list of content-skipped files (replaces the stored one).
    pub skipped: Vec<SkippedFile>,
    /// Code-graph changes.
    pub uko: UkoCommit,
    pub file_count: u64,
    pub token_estimate: u64,
    pub primary_language: String,
    /// What the run did, kept in `index_runs` for `status`.
    pub report: IndexReport,
}

/// The narrow interface the services use. Every method is one transaction.
pub trait Store: Send + Sync {
    // -- projects and resources --
    fn create_project(&self, name: &str) -> Result<Project, StoreError>;
    fn project(&self, name: &str) -> Result<Option<Project>, StoreError>;
    /// All projects, sorted by name.
    fn projects(&self) -> Result<Vec<Project>, StoreError>;
    /// Resources of a project, sorted by path.
    fn project_resources(&self, project_id: &str) -> Result<Vec<Resource>, StoreError>;
    /// Projects a resource is linked to, sorted by name.
    fn resource_projects(&self, resource_id: &str) -> Result<Vec<Project>, StoreError>;
    fn resource_by_path(&self, path: &str) -> Result<Option<Resource>, StoreError>;
    fn resource(&self, resource_id: &str) -> Result<Option<Resource>, StoreError>;
    /// All resources, sorted by path.
    fn resources(&self) -> Result<Vec<Resource>, StoreError>;
    /// Links `path` to the project, creating the resource if new. Idempotent.
    fn link_resource(&self, project_id: &str, path: &str, name: &str) -> Result<Resource, StoreError>;
    /// Removes the link; a resource linked to no project any more is deleted
    /// with its index. Returns whether a link existed.
    fn unlink_resource(&self, project_id: &str, resource_id: &str) -> Result<bool, StoreError>;

    /// The project's context policy and ACMS settings; `None` when never set.
    /// A stored value that no longer parses or validates is
    /// [`StoreError::CorruptRow`].
    fn project_context(
        &self,
        project_id: &str,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, StoreError>;
    /// Replaces the project's context policy and ACMS settings together.
    fn set_project_context(
        &self,
        project_id: &str,
        policy: &ProjectContextPolicy,
        settings: &ProjectContextSettings,
    ) -> Result<(), StoreError>;

    // -- repository indexes --
    fn index_metadata(&self, resource_id: &str) -> Result<Option<IndexMetadata>, StoreError>;
    /// Creates the index row (status `pending`) if the resource has none.
    fn ensure_index(&self, resource_id: &str) -> Result<IndexMetadata, StoreError>;
    /// Sets the status (and error message) of an index.
    fn set_index_status(
        &self,
        index_id: &str,
        status: IndexStatus,
        error_message: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Index rows in a given status.
    fn indexes_with_status(&self, status: IndexStatus) -> Result<Vec<IndexMetadata>, StoreError>;
    /// Every file record of an index, sorted by path.
    fn file_records(&self, index_id: &str) -> Result<Vec<FileRecord>, StoreError>;
    /// Files the last run skipped for their content, sorted by path.
    fn skipped_files(&self, index_id: &str) -> Result<Vec<SkippedFile>, StoreError>;
    /// Opens the write transaction of an indexing run: graph rows can be
    /// written file by file (bounded memory), and nothing is visible until
    /// [`IndexWrite::finish`]; dropping the writer rolls everything back.
    /// Other writers wait while it is open.
    fn begin_index_write(&self, index_id: &str) -> Result<Box<dyn IndexWrite + '_>, StoreError>;
    /// Applies a run's changes and marks the index `ready`, atomically.
    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
    /// The report of the latest completed run of an index.
    fn last_report(&self, index_id: &str) -> Result<Option<IndexReport>, StoreError>;
    /// Deletes an index and its files. Returns whether it existed.
    fn remove_index(&self, resource_id: &str) -> Result<bool, StoreError>;

    // -- the UKO graph --
    /// Current nodes of one file, in source order.
    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// The current revision of a node.
    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError>;
    /// Current nodes whose symbol path or name equals `query`, sorted by uri.
    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// Current children of a node, in source order.
    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// Every revision of a node, newest first.
    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// References written in a node, in line order.
    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// References written anywhere inside a node (its own and its
    /// descendants'), in path and line order.
    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// References resolved to a node.
    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// Every current symbol, for name resolution.
    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError>;
    /// References written in `path` (with their ids).
    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// The graph neighbours of a node, each `(uri, kind, outgoing)`: its parent
    /// (`contains`, incoming), its children (`contains`, outgoing), the nodes
    /// its resolved references point at (the reference's kind, outgoing) and
    /// the nodes whose references point at it (incoming), in that order.
    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        neighbors_from_parts(self, index_id, uri)
    }
    /// The other files the references of `path` resolved into (imports,
    /// calls, inheritance; not mere mentions), sorted.
    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        let mut out: Vec<String> = self
            .uko_file_refs(index_id, path)?
            .into_iter()
            .filter(|(_, r)| r.kind != "mentions")
            .filter_map(|(_, r)| r.resolved_path)
            .filter(|to| to != path)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
    /// References outside `paths` that resolved into one of `paths`, or
    /// that are unresolved and whose target name is one of `names`.
    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Every current node, sorted by uri.
    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// Every reference, sorted by path, line and target.
    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// Creates a plan in `phase` under `parent` and for `project_id` (each of
    /// which must exist when given).
    fn create_plan(
        &self,
        title: &str,
        parent: Option<&str>,
        phase: Phase,
        project_id: Option<&str>,
    ) -> Result<Plan, StoreError>;
    fn plan(&self, plan_id: &str) -> Result<Option<Plan>, StoreError>;
    /// Every plan, oldest first.
    fn plans(&self) -> Result<Vec<Plan>, StoreError>;
    /// Records a decision on a plan; `tier` is `hot`, `warm` or `cold`.
    fn add_decision(&self, plan_id: &str, title: &str, body: &str, tier: &str) -> Result<PlanDecision, StoreError>;
    /// The decisions of a plan, oldest first.
    fn plan_decisions(&self, plan_id: &str) -> Result<Vec<PlanDecision>, StoreError>;
    /// Stores the context assembled for a plan (the pipeline's packed pieces as
    /// JSON), replacing the one before.
    fn set_plan_payload(&self, plan_id: &str, payload_json: &str) -> Result<(), StoreError>;
    /// The context last assembled for a plan.
    fn plan_payload(&self, plan_id: &str) -> Result<Option<String>, StoreError>;
    /// What a text-search index holds: path -> content hash of the indexed version.
    fn search_state(&self, index_id: &str, backend: &str) -> Result<Vec<(String, String)>, StoreError>;
    /// Records that a text-search index now holds `indexed` and no longer
    /// `removed`, and that it is up to date with the file list whose digest is
    /// `digest`, in one transaction.
    fn set_search_state(
        &self,
        index_id: &str,
        backend: &str,
        indexed: &[(String, String)],
        removed: &[String],
        digest: &str,
    ) -> Result<(), StoreError>;
    /// The digest of the file list a search index was last brought up to date with.
    fn search_digest(&self, index_id: &str, backend: &str) -> Result<Option<String>, StoreError>;
    /// Node counts by (language, kind) and reference counts by (language,
    /// kind) with how many resolved, sorted.
    fn uko_stats(&self, index_id: &str) -> Result<UkoStatsRows, StoreError>;
}

/// Aggregate counts of a code graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoStatsRows {
    /// (language, node kind, count).
    pub nodes: Vec<(String, String, i64)>,
    /// (language, reference kind, count, resolved).
    pub refs: Vec<(String, String, i64, i64)>,
}

/// What eviction and retention read of a stored fragment, without its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierEntry {
    pub fragment_id: String,
    pub project_name: String,
    pub token_count: u64,
    pub access_count: u64,
    pub last_accessed: DateTime<Utc>,
}

/// The warm context tier's storage: fragments kept on fast disk between
/// assemblies. A narrow trait of its own (beside [`Store`]) so the tier service
/// depends on nothing else of the database; every method is one transaction.
pub trait WarmTierStore: Send + Sync {
    /// Stores `fragment`, replacing one with the same id.
    fn warm_put(&self, fragment: &TieredFragment) -> Result<(), StoreError>;
    /// The fragment, without recording an access.
    fn warm_get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError>;
    /// The fragment after recording one access at `at`.
    fn warm_touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, StoreError>;
    /// Removes the fragment and returns it.
    fn warm_remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError>;
    /// Every fragment's entry, least recently used first (ties by id).
    fn warm_entries(&self) -> Result<Vec<TierEntry>, StoreError>;
    /// The fragments of `projects` (all with `None`), sorted by id.
    fn warm_fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, StoreError>;
}

/// [`Store::uko_neighbors`] composed of the node, children and reference
/// queries: the default, and what a store's own faster query must equal.
pub fn neighbors_from_parts<S: Store + ?Sized>(
    store: &S,
    index_id: &str,
    uri: &str,
) -> Result<Vec<(String, String, bool)>, StoreError> {
    let mut out = Vec::new();
    if let Some(parent) = store.uko_node(index_id, uri)?.and_then(|n| n.node.parent_uri) {
        out.push((parent, "contains".to_owned(), false));
    }
    out.extend(store.uko_children(index_id, uri)?.into_iter().map(|c| (c.node.uri, "contains".to_owned(), true)));
    for r in store.uko_refs_from(index_id, uri)? {
        if let Some(target) = r.resolved_uri {
            out.push((target, r.kind, true));
        }
    }
    out.extend(store.uko_refs_to(index_id, uri)?.into_iter().map(|r| (r.from_uri, r.kind, false)));
    Ok(out)
}
