//! The warm context tier on PostgreSQL: [`WarmTierStore`] for [`PostgresStore`].
//!
//! One row per fragment in `warm_fragments`, as in the SQLite store: the
//! fragment as JSON plus the columns eviction and retention read (the truth
//! for access statistics, overlaid on read).

use agents_core::ids::{from_iso, to_iso};
use agents_core::tier::TieredFragment;
use agents_store::{StoreError, TierEntry, WarmTierStore};
use chrono::{DateTime, Utc};
use postgres::Row;

use crate::PostgresStore;

const TABLE: &str = "warm_fragments";
const FRAGMENT_COLUMNS: &str = "fragment_id, fragment_json, access_count, last_accessed";

impl PostgresStore {
    fn corrupt(&self, id: &str, column: &'static str, message: String) -> StoreError {
        StoreError::CorruptRow { path: self.path(), table: TABLE, key: id.to_owned(), column, message }
    }

    /// A row's fragment with the access columns applied.
    fn warm_fragment(&self, row: &Row) -> Result<TieredFragment, StoreError> {
        let (id, json, count, last): (String, String, i64, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
        let fragment: TieredFragment =
            serde_json::from_str(&json).map_err(|e| self.corrupt(&id, "fragment_json", e.to_string()))?;
        let last = from_iso(&last)
            .ok_or_else(|| self.corrupt(&id, "last_accessed", format!("`{last}` is not a timestamp")))?;
        Ok(fragment.with_access(count.max(0) as u64, last))
    }
}

impl WarmTierStore for PostgresStore {
    fn warm_put(&self, fragment: &TieredFragment) -> Result<(), StoreError> {
        let json = serde_json::to_string(fragment)
            .map_err(|e| self.corrupt(fragment.fragment_id(), "fragment_json", e.to_string()))?;
        self.write(|c| {
            c.execute(
                "INSERT INTO warm_fragments \
                 (fragment_id, project_name, token_count, access_count, last_accessed, fragment_json) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (fragment_id) DO UPDATE SET \
                 project_name = excluded.project_name, token_count = excluded.token_count, \
                 access_count = excluded.access_count, last_accessed = excluded.last_accessed, \
                 fragment_json = excluded.fragment_json",
                &[
                    &fragment.fragment_id(),
                    &fragment.project_name(),
                    &(fragment.fragment().token_count() as i64),
                    &(fragment.access_count() as i64),
                    &to_iso(fragment.last_accessed()),
                    &json,
                ],
            )?;
            Ok(())
        })
    }

    fn warm_get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError> {
        let row = self.read(|c| {
            c.query_opt(
                &format!("SELECT {FRAGMENT_COLUMNS} FROM warm_fragments WHERE fragment_id = $1"),
                &[&fragment_id],
            )
        })?;
        row.map(|r| self.warm_fragment(&r)).transpose()
    }

    fn warm_touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, StoreError> {
        let at = to_iso(at);
        let row = self.write(|c| {
            c.query_opt(
                &format!(
                    "UPDATE warm_fragments SET access_count = access_count + 1, last_accessed = $2 \
                     WHERE fragment_id = $1 RETURNING {FRAGMENT_COLUMNS}"
                ),
                &[&fragment_id, &at],
            )
        })?;
        row.map(|r| self.warm_fragment(&r)).transpose()
    }

    fn warm_remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError> {
        let row = self.write(|c| {
            c.query_opt(
                &format!("DELETE FROM warm_fragments WHERE fragment_id = $1 RETURNING {FRAGMENT_COLUMNS}"),
                &[&fragment_id],
            )
        })?;
        row.map(|r| self.warm_fragment(&r)).transpose()
    }

    fn warm_entries(&self) -> Result<Vec<TierEntry>, StoreError> {
        let rows = self.read(|c| {
            c.query(
                "SELECT fragment_id, project_name, token_count, access_count, last_accessed FROM warm_fragments \
                 ORDER BY last_accessed, fragment_id",
                &[],
            )
        })?;
        rows.iter()
            .map(|r| {
                let (fragment_id, last): (String, String) = (r.get(0), r.get(4));
                let last_accessed = from_iso(&last).ok_or_else(|| {
                    self.corrupt(&fragment_id, "last_accessed", format!("`{last}` is not a timestamp"))
                })?;
                Ok(TierEntry {
                    fragment_id,
                    project_name: r.get(1),
                    token_count: r.get::<_, i64>(2).max(0) as u64,
                    access_count: r.get::<_, i64>(3).max(0) as u64,
                    last_accessed,
                })
            })
            .collect()
    }

    fn warm_fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, StoreError> {
        let rows = self.read(|c| match projects {
            None => c.query(&format!("SELECT {FRAGMENT_COLUMNS} FROM warm_fragments ORDER BY fragment_id"), &[]),
            Some(projects) => c.query(
                &format!(
                    "SELECT {FRAGMENT_COLUMNS} FROM warm_fragments WHERE project_name = ANY($1) ORDER BY fragment_id"
                ),
                &[&projects],
            ),
        })?;
        rows.iter().map(|r| self.warm_fragment(r)).collect()
    }
}
