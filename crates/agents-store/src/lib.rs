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

mod atomic;
mod error;
mod migrations;
mod sqlite;

pub use atomic::atomic_write;
pub use error::StoreError;
pub use sqlite::SqliteStore;

use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus, SkipReason};
use serde::{Deserialize, Serialize};

/// A named project; resources are linked to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub project_id: String,
    pub name: String,
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
    /// Applies a run's changes and marks the index `ready`, atomically.
    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
    /// The report of the latest completed run of an index.
    fn last_report(&self, index_id: &str) -> Result<Option<IndexReport>, StoreError>;
    /// Deletes an index and its files. Returns whether it existed.
    fn remove_index(&self, resource_id: &str) -> Result<bool, StoreError>;
}
