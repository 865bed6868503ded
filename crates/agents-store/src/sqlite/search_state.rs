//! [`SearchStateStore`] for [`SqliteStore`]: `search_state` and
//! `search_digest`.

use rusqlite::{OptionalExtension, params};

use super::SqliteStore;
use crate::{SearchStateStore, StoreError};

impl SearchStateStore for SqliteStore {
    fn search_state(&self, index_id: &str, backend: &str) -> Result<Vec<(String, String)>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT path, content_hash FROM search_state WHERE index_id = ?1 AND backend = ?2 ORDER BY path",
            )?;
            st.query_map(params![index_id, backend], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
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
            let mut put = tx
                .prepare(
                    "INSERT OR REPLACE INTO search_state (index_id, backend, path, content_hash) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(self.sql())?;
            for (path, hash) in indexed {
                put.execute(params![index_id, backend, path, hash]).map_err(self.sql())?;
            }
            let mut delete = tx
                .prepare("DELETE FROM search_state WHERE index_id = ?1 AND backend = ?2 AND path = ?3")
                .map_err(self.sql())?;
            for path in removed {
                delete.execute(params![index_id, backend, path]).map_err(self.sql())?;
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
