//! The warm context tier in SQLite: [`WarmTierStore`] for [`SqliteStore`].
//!
//! One row per fragment in `warm_fragments`: the [`TieredFragment`] as JSON,
//! plus the columns eviction and retention read without parsing it (project,
//! tokens, access count, last access). The columns are the truth for access
//! statistics; the JSON's copy is overlaid on read. Timestamps are stored by
//! [`to_iso`] (fixed width, nanoseconds), so text order is time order.

use agents_core::ids::{from_iso, to_iso};
use agents_core::tier::TieredFragment;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Row, params};

use super::SqliteStore;
use crate::{StoreError, TierEntry, WarmTierStore};

const TABLE: &str = "warm_fragments";

impl SqliteStore {
    /// A row's fragment with the access columns applied, or a clear error
    /// naming the row when its JSON no longer parses or validates.
    fn warm_fragment(
        &self,
        (id, json, count, last): (String, String, i64, String),
    ) -> Result<TieredFragment, StoreError> {
        let corrupt = |column: &'static str, message: String| StoreError::CorruptRow {
            path: self.path.clone(),
            table: TABLE,
            key: id.clone(),
            column,
            message,
        };
        let fragment: TieredFragment =
            serde_json::from_str(&json).map_err(|e| corrupt("fragment_json", e.to_string()))?;
        let last = from_iso(&last).ok_or_else(|| corrupt("last_accessed", format!("`{last}` is not a timestamp")))?;
        Ok(fragment.with_access(count.max(0) as u64, last))
    }

    fn warm_entry(&self, row: (String, String, i64, i64, String)) -> Result<TierEntry, StoreError> {
        let (fragment_id, project_name, tokens, count, last) = row;
        let last_accessed = from_iso(&last).ok_or_else(|| StoreError::CorruptRow {
            path: self.path.clone(),
            table: TABLE,
            key: fragment_id.clone(),
            column: "last_accessed",
            message: format!("`{last}` is not a timestamp"),
        })?;
        Ok(TierEntry {
            fragment_id,
            project_name,
            token_count: tokens.max(0) as u64,
            access_count: count.max(0) as u64,
            last_accessed,
        })
    }
}

type FragmentRow = (String, String, i64, String);

fn fragment_row(row: &Row<'_>) -> rusqlite::Result<FragmentRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

const FRAGMENT_COLUMNS: &str = "fragment_id, fragment_json, access_count, last_accessed";

impl WarmTierStore for SqliteStore {
    fn warm_put(&self, fragment: &TieredFragment) -> Result<(), StoreError> {
        // Plain data: serialising a validated fragment cannot fail.
        let json = serde_json::to_string(fragment).expect("fragment serialises");
        self.write(|tx| {
            tx.execute(
                "INSERT OR REPLACE INTO warm_fragments \
                 (fragment_id, project_name, token_count, access_count, last_accessed, fragment_json) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    fragment.fragment_id(),
                    fragment.project_name(),
                    fragment.fragment().token_count() as i64,
                    fragment.access_count() as i64,
                    to_iso(fragment.last_accessed()),
                    json
                ],
            )
            .map_err(self.sql())?;
            Ok(())
        })
    }

    fn warm_get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError> {
        let row = self.read(|c| {
            c.prepare_cached(&format!("SELECT {FRAGMENT_COLUMNS} FROM warm_fragments WHERE fragment_id = ?1"))?
                .query_row([fragment_id], fragment_row)
                .optional()
        })?;
        row.map(|row| self.warm_fragment(row)).transpose()
    }

    fn warm_touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, StoreError> {
        let row = self.write(|tx| {
            tx.prepare_cached(&format!(
                "UPDATE warm_fragments SET access_count = access_count + 1, last_accessed = ?2 \
                 WHERE fragment_id = ?1 RETURNING {FRAGMENT_COLUMNS}"
            ))
            .and_then(|mut st| st.query_row(params![fragment_id, to_iso(at)], fragment_row).optional())
            .map_err(self.sql())
        })?;
        row.map(|row| self.warm_fragment(row)).transpose()
    }

    fn warm_remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, StoreError> {
        let row = self.write(|tx| {
            tx.prepare_cached(&format!(
                "DELETE FROM warm_fragments WHERE fragment_id = ?1 RETURNING {FRAGMENT_COLUMNS}"
            ))
            .and_then(|mut st| st.query_row([fragment_id], fragment_row).optional())
            .map_err(self.sql())
        })?;
        row.map(|row| self.warm_fragment(row)).transpose()
    }

    fn warm_entries(&self) -> Result<Vec<TierEntry>, StoreError> {
        let rows = self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT fragment_id, project_name, token_count, access_count, last_accessed FROM warm_fragments \
                 ORDER BY last_accessed, fragment_id",
            )?;
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
                .collect::<Result<Vec<_>, _>>()
        })?;
        rows.into_iter().map(|row| self.warm_entry(row)).collect()
    }

    fn warm_fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, StoreError> {
        let rows = self.read(|c| {
            let mut st = c.prepare_cached(&format!(
                "SELECT {FRAGMENT_COLUMNS}, project_name FROM warm_fragments ORDER BY fragment_id"
            ))?;
            let rows = st.query_map([], |r| Ok((fragment_row(r)?, r.get::<_, String>(4)?)))?;
            let mut kept = Vec::new();
            for row in rows {
                let (row, project) = row?;
                if projects.is_none_or(|p| p.contains(&project)) {
                    kept.push(row);
                }
            }
            Ok(kept)
        })?;
        rows.into_iter().map(|row| self.warm_fragment(row)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_core::fragment::{ContextFragment, ContextTier, FragmentProvenance};

    fn fragment(project: &str, tokens: u64) -> TieredFragment {
        let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CD", "src/lib.rs").unwrap();
        let f =
            ContextFragment::builder("uko://a", "body", tokens, provenance).tier(ContextTier::Warm).build().unwrap();
        TieredFragment::new(f, project).unwrap()
    }

    #[test]
    fn corrupt_warm_row_names_the_row() {
        let store = SqliteStore::open_in_memory().unwrap();
        let a = fragment("web", 1);
        store.warm_put(&a).unwrap();
        store.conn().execute_batch("UPDATE warm_fragments SET fragment_json = 'nope'").unwrap();
        let error = store.warm_get(a.fragment_id()).unwrap_err();
        assert!(error.to_string().contains(&format!("warm_fragments row `{}`", a.fragment_id())), "{error}");
    }
}
