//! [`CodeGraphStore`] for [`SqliteStore`]: reads of the code graph (its SQL,
//! and what an indexing run writes, is in `uko_sql`).

use super::{SqliteStore, uko_sql};
use crate::{CodeGraphStore, StoreError, UkoNodeRecord, UkoRef, UkoStatsRows, UkoSymbol};

impl CodeGraphStore for SqliteStore {
    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::file_nodes(c, index_id, path))
    }

    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::node(c, index_id, uri))
    }

    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::find(c, index_id, query))
    }

    fn uko_the_one_named(
        &self,
        index_id: &str,
        name: &str,
        kinds: &[&str],
    ) -> Result<Option<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::the_one_named(c, index_id, name, kinds))
    }

    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::children(c, index_id, uri))
    }

    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::revisions(c, index_id, uri))
    }

    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| uko_sql::refs_from(c, index_id, uri))
    }

    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| uko_sql::refs_within(c, index_id, uri))
    }

    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| uko_sql::refs_to(c, index_id, uri))
    }

    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError> {
        self.read(|c| uko_sql::symbols(c, index_id))
    }

    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::file_refs(c, index_id, path))
    }

    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        // Only the columns the graph needs, each part through its index: the
        // graph walk asks this of hundreds of nodes per query.
        self.read(|c| uko_sql::neighbors(c, index_id, uri))
    }

    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        self.read(|c| uko_sql::file_dependencies(c, index_id, path))
    }

    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::refs_affected_by(c, index_id, paths, names))
    }

    fn uko_refs_importing(&self, index_id: &str, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::refs_importing(c, index_id, paths))
    }

    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::all_nodes(c, index_id))
    }

    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError> {
        self.read(|c| uko_sql::all_refs(c, index_id))
    }

    fn uko_stats(&self, index_id: &str) -> Result<UkoStatsRows, StoreError> {
        self.read(|c| uko_sql::stats(c, index_id))
    }
}
