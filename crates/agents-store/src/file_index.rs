//! The file-index role: one index per resource, its file list, the files
//! skipped for their content, and the transaction an indexing run writes in.

use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus, SkipReason};
use serde::{Deserialize, Serialize};

use crate::{StoreError, UkoCommit, UkoNode, UkoRef};

/// A file left out of an index because of its content (e.g. binary),
/// remembered so a refresh need not read it again while its stat is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    pub path: String,
    pub size_bytes: u64,
    pub last_modified: String,
    pub reason: SkipReason,
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
    /// Calls `f(path, symbol_path, name, kind, signature)` for every current
    /// node (the signature empty when it has none), sorted by path, as the
    /// transaction sees them.
    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str, &str)) -> Result<(), StoreError>;
    /// Like [`IndexWrite::for_each_symbol`], for current nodes named one of `names`.
    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str, &str),
    ) -> Result<(), StoreError>;
    /// References written in `path`, as the transaction sees them.
    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// See [`crate::CodeGraphStore::uko_refs_affected_by`], as the transaction sees it.
    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// See [`crate::CodeGraphStore::uko_refs_importing`], as the transaction sees it.
    fn refs_importing(&mut self, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Applies the rest of the commit, marks the index `ready` and commits.
    fn finish(self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError>;
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

/// Repository indexes: the index row of each resource, its status, the file
/// records and skipped files of the last run, and the run's report.
/// Every method is one transaction.
///
/// Guarantees (checked by `conformance::file_index`):
/// - [`FileIndexStore::ensure_index`] creates one `pending` index per
///   resource and returns the same one afterwards;
/// - a run's changes ([`FileIndexStore::commit_index`], or an
///   [`IndexWrite`] and its [`IndexWrite::finish`]) are applied atomically
///   with the index's move to `ready`: a rejected commit changes nothing,
///   and an [`IndexWrite`] dropped without `finish` leaves nothing of the
///   run visible (readers never see half a run);
/// - file records and skipped files are sorted by path; the skipped list is
///   replaced whole by each commit;
/// - [`FileIndexStore::last_report`] is the latest commit's report;
/// - unknown ids read as `None` or an empty list; setting the status of an
///   unknown index is [`StoreError::NotFound`].
pub trait FileIndexStore: Send + Sync {
    /// The index of a resource.
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
}
