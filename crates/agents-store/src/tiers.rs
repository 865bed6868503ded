//! The tiers role: the warm context tier's rows.

use agents_core::tier::TieredFragment;
use chrono::{DateTime, Utc};

use crate::StoreError;

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
/// assemblies. A narrow trait of its own (outside [`crate::Store`]) so the
/// tier service depends on nothing else of the database; every method is one
/// transaction.
///
/// Guarantees (checked by `conformance::tiers`):
/// - a fragment reads back equal to what was put, and a put with the same
///   id replaces it;
/// - [`WarmTierStore::warm_get`] records no access,
///   [`WarmTierStore::warm_touch`] records exactly one (count + 1, last
///   access = `at`) and returns the fragment as it now is;
/// - [`WarmTierStore::warm_entries`] is least recently used first, ties by
///   id; [`WarmTierStore::warm_fragments`] is sorted by id and filtered by
///   project name;
/// - an unknown id reads, touches and removes as `None`.
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
