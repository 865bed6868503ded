//! The warm tier: fragments in the database, through the store's
//! [`WarmTierStore`] (the SQL lives in `agents-store`).

use std::sync::Arc;

use agents_core::fragment::ContextTier;
use agents_core::tier::TieredFragment;
use agents_store::{TierEntry, WarmTierStore};
use chrono::{DateTime, Utc};

use super::{TierBackend, TierError};

/// The SQLite-backed warm tier.
pub struct WarmTier {
    store: Arc<dyn WarmTierStore>,
}

impl WarmTier {
    pub fn new(store: Arc<dyn WarmTierStore>) -> WarmTier {
        WarmTier { store }
    }
}

impl TierBackend for WarmTier {
    fn tier(&self) -> ContextTier {
        ContextTier::Warm
    }

    fn put(&self, fragment: TieredFragment) -> Result<(), TierError> {
        Ok(self.store.warm_put(&fragment.with_tier(ContextTier::Warm))?)
    }

    fn get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        Ok(self.store.warm_get(fragment_id)?)
    }

    fn touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, TierError> {
        Ok(self.store.warm_touch(fragment_id, at)?)
    }

    fn remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        Ok(self.store.warm_remove(fragment_id)?)
    }

    fn entries(&self) -> Result<Vec<TierEntry>, TierError> {
        Ok(self.store.warm_entries()?)
    }

    fn fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, TierError> {
        Ok(self.store.warm_fragments(projects)?)
    }
}
