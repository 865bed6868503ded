//! The search-state role: what each text or vector search index holds, so
//! it can be brought up to date with the file list by content hash.

use crate::StoreError;

/// Per index and backend (`tantivy`, `vectors`, ...): the path -> content
/// hash of every file the search index holds, and the digest of the file
/// list it was last synced with. Every method is one transaction.
///
/// Guarantees (checked by `conformance::search_state`):
/// - [`SearchStateStore::set_search_state`] applies `indexed` (insert or
///   replace by path), then `removed`, then records `digest`, all at once;
/// - [`SearchStateStore::search_state`] is sorted by path;
/// - backends and indexes are independent of each other;
/// - nothing recorded reads as an empty list and a `None` digest;
/// - the state belongs to its index: removing the index removes it.
pub trait SearchStateStore: Send + Sync {
    /// What a text-search index holds: path -> content hash of the indexed
    /// version, sorted by path.
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
}
