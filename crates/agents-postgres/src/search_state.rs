//! [`SearchStateStore`] for [`PostgresStore`].

use agents_store::{SearchStateStore, StoreError};

use crate::PostgresStore;

impl SearchStateStore for PostgresStore {
    fn search_state(&self, index_id: &str, backend: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT path, content_hash FROM search_state WHERE index_id = $1 AND backend = $2 ORDER BY path",
                &[&index_id, &backend],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect())
        })
    }

    fn set_search_state(
        &self,
        index_id: &str,
        backend: &str,
        indexed: &[(String, String)],
        removed: &[String],
        digest: &str,
    ) -> Result<(), StoreError> {
        self.write(|c| {
            if !indexed.is_empty() {
                let paths: Vec<&str> = indexed.iter().map(|(p, _)| p.as_str()).collect();
                let hashes: Vec<&str> = indexed.iter().map(|(_, h)| h.as_str()).collect();
                // A path given twice keeps its last hash, as upserts in turn would.
                c.execute(
                    "INSERT INTO search_state (index_id, backend, path, content_hash) \
                     SELECT DISTINCT ON (path) $1, $2, path, hash \
                     FROM unnest($3::text[], $4::text[]) WITH ORDINALITY AS t(path, hash, ord) \
                     ORDER BY path, ord DESC \
                     ON CONFLICT (index_id, backend, path) DO UPDATE SET content_hash = excluded.content_hash",
                    &[&index_id, &backend, &paths, &hashes],
                )?;
            }
            if !removed.is_empty() {
                c.execute(
                    "DELETE FROM search_state WHERE index_id = $1 AND backend = $2 AND path = ANY($3)",
                    &[&index_id, &backend, &removed],
                )?;
            }
            c.execute(
                "INSERT INTO search_digest (index_id, backend, digest) VALUES ($1, $2, $3) \
                 ON CONFLICT (index_id, backend) DO UPDATE SET digest = excluded.digest",
                &[&index_id, &backend, &digest],
            )?;
            Ok(())
        })
    }

    fn search_digest(&self, index_id: &str, backend: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt(
                "SELECT digest FROM search_digest WHERE index_id = $1 AND backend = $2",
                &[&index_id, &backend],
            )?
            .map(|r| r.get(0)))
        })
    }
}
