//! [`SearchStateStore`] for [`SqliteStore`]: `search_sets` (an integer key
//! per index and backend), `search_state` (path and content hash per set)
//! and `search_digest`.

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use super::hashes::{hash_from, hash_value};
use crate::{SearchStateStore, StoreError};

impl SearchStateStore for SqliteStore {
    fn search_state(&self, index_id: &str, backend: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT f.path, f.content_hash FROM search_sets s JOIN search_state f ON f.set_id = s.set_id \
                 WHERE s.index_id = ?1 AND s.backend = ?2 ORDER BY f.path",
            )?;
            st.query_map(params![index_id, backend], |r| Ok((r.get(0)?, hash_from(r.get_ref(1)?))))?.collect()
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
        self.write(|tx| {
            if !indexed.is_empty() || !removed.is_empty() {
                tx.execute(
                    "INSERT OR IGNORE INTO search_sets (index_id, backend) VALUES (?1, ?2)",
                    params![index_id, backend],
                )
                .map_err(self.sql())?;
                let set_id: i64 = tx
                    .query_row(
                        "SELECT set_id FROM search_sets WHERE index_id = ?1 AND backend = ?2",
                        params![index_id, backend],
                        |r| r.get(0),
                    )
                    .map_err(self.sql())?;
                let mut put = tx
                    .prepare("INSERT OR REPLACE INTO search_state (set_id, path, content_hash) VALUES (?1, ?2, ?3)")
                    .map_err(self.sql())?;
                for (path, hash) in indexed {
                    put.execute(params![set_id, path, hash_value(hash)]).map_err(self.sql())?;
                }
                let mut delete =
                    tx.prepare("DELETE FROM search_state WHERE set_id = ?1 AND path = ?2").map_err(self.sql())?;
                for path in removed {
                    delete.execute(params![set_id, path]).map_err(self.sql())?;
                }
            }
            tx.execute(
                "INSERT OR REPLACE INTO search_digest (index_id, backend, digest) VALUES (?1, ?2, ?3)",
                params![index_id, backend, digest],
            )
            .map_err(self.sql())?;
            Ok(())
        })
    }

    fn search_digest(&self, index_id: &str, backend: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT digest FROM search_digest WHERE index_id = ?1 AND backend = ?2",
                params![index_id, backend],
                |r| r.get(0),
            )
            .optional()
        })
    }
}
