//! [`FileIndexStore`] for [`SqliteStore`]: `repo_indexes`, `indexed_files`,
//! `skipped_files` and `index_runs`, and the open transaction of an indexing
//! run ([`SqliteIndexWrite`]), which also writes the code graph.

use std::path::Path;
use std::sync::MutexGuard;

use agents_core::ids::{from_iso, new_ulid, now_utc, to_iso};
use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::uko_sql::{self, GraphWriter};
use super::{SqliteStore, classify};
use crate::{
    FileIndexStore, IndexCommit, IndexWrite, Naming, Reshaped, SkippedFile, StoreError, UkoCommit, UkoNode, UkoRef,
};

const INDEX_COLUMNS: &str = "index_id, resource_id, indexed_at, file_count, token_estimate, \
     primary_language, status, error_message, created_at";

/// One `repo_indexes` row as stored, before validation.
struct IndexRow {
    index_id: String,
    resource_id: String,
    indexed_at: String,
    file_count: i64,
    token_estimate: i64,
    primary_language: String,
    status: String,
    error_message: Option<String>,
    created_at: String,
}

impl IndexRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<IndexRow> {
        Ok(IndexRow {
            index_id: row.get(0)?,
            resource_id: row.get(1)?,
            indexed_at: row.get(2)?,
            file_count: row.get(3)?,
            token_estimate: row.get(4)?,
            primary_language: row.get(5)?,
            status: row.get(6)?,
            error_message: row.get(7)?,
            created_at: row.get(8)?,
        })
    }

    fn into_metadata(self) -> Result<IndexMetadata, StoreError> {
        let parse_ts = |field: &'static str, s: &str| {
            from_iso(s).ok_or_else(|| {
                agents_core::ValidationError::new("IndexMetadata", field, format!("bad timestamp `{s}`"))
            })
        };
        Ok(IndexMetadata::new(
            self.index_id,
            self.resource_id,
            parse_ts("indexed_at", &self.indexed_at)?,
            self.file_count.max(0) as u64,
            self.token_estimate.max(0) as u64,
            self.primary_language,
            self.status.parse()?,
            self.error_message,
            parse_ts("created_at", &self.created_at)?,
        )?)
    }
}

fn file_from_row(row: &Row<'_>) -> rusqlite::Result<FileRecord> {
    Ok(FileRecord {
        path: row.get(0)?,
        content_hash: row.get(1)?,
        token_count: row.get::<_, i64>(2)? as u64,
        size_bytes: row.get::<_, i64>(3)? as u64,
        language: row.get(4)?,
        last_modified: row.get(5)?,
    })
}

impl SqliteStore {
    fn query_index(&self, sql_where: &str, param: &str) -> Result<Option<IndexMetadata>, StoreError> {
        let sql = format!("SELECT {INDEX_COLUMNS} FROM repo_indexes WHERE {sql_where}");
        let row = self.read(|c| c.query_row(&sql, [param], IndexRow::read).optional())?;
        row.map(IndexRow::into_metadata).transpose()
    }
}

impl FileIndexStore for SqliteStore {
    fn index_metadata(&self, resource_id: &str) -> Result<Option<IndexMetadata>, StoreError> {
        self.query_index("resource_id = ?1", resource_id)
    }

    fn ensure_index(&self, resource_id: &str) -> Result<IndexMetadata, StoreError> {
        if let Some(meta) = self.index_metadata(resource_id)? {
            return Ok(meta);
        }
        let now = to_iso(now_utc());
        self.write(|tx| {
            tx.execute(
                "INSERT OR IGNORE INTO repo_indexes (index_id, resource_id, indexed_at, status, created_at) \
                 VALUES (?1, ?2, ?3, 'pending', ?3)",
                params![new_ulid(), resource_id, now],
            )
            .map_err(self.sql())?;
            Ok(())
        })?;
        self.index_metadata(resource_id)?
            .ok_or_else(|| StoreError::NotFound { what: "index of resource", name: resource_id.to_string() })
    }

    fn set_index_status(
        &self,
        index_id: &str,
        status: IndexStatus,
        error_message: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            let n = tx
                .execute(
                    "UPDATE repo_indexes SET status = ?2, error_message = ?3 WHERE index_id = ?1",
                    params![index_id, status.as_str(), error_message],
                )
                .map_err(self.sql())?;
            if n == 0 {
                return Err(StoreError::NotFound { what: "index", name: index_id.to_string() });
            }
            Ok(())
        })
    }

    fn indexes_with_status(&self, status: IndexStatus) -> Result<Vec<IndexMetadata>, StoreError> {
        let sql = format!("SELECT {INDEX_COLUMNS} FROM repo_indexes WHERE status = ?1 ORDER BY index_id");
        let rows = self.read(|c| {
            let mut st = c.prepare(&sql)?;
            st.query_map([status.as_str()], IndexRow::read)?.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        rows.into_iter().map(IndexRow::into_metadata).collect()
    }

    fn file_records(&self, index_id: &str) -> Result<Vec<FileRecord>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT path, content_hash, token_count, size_bytes, language, last_modified \
                 FROM indexed_files WHERE index_id = ?1 ORDER BY path",
            )?;
            st.query_map([index_id], file_from_row)?.collect()
        })
    }

    fn skipped_files(&self, index_id: &str) -> Result<Vec<SkippedFile>, StoreError> {
        let rows: Vec<(String, i64, String, String)> = self.read(|c| {
            let mut st = c.prepare(
                "SELECT path, size_bytes, last_modified, reason FROM skipped_files WHERE index_id = ?1 ORDER BY path",
            )?;
            st.query_map([index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?.collect()
        })?;
        rows.into_iter()
            .map(|(path, size, last_modified, reason)| {
                Ok(SkippedFile { path, size_bytes: size.max(0) as u64, last_modified, reason: reason.parse()? })
            })
            .collect()
    }

    fn begin_index_write(&self, index_id: &str) -> Result<Box<dyn IndexWrite + '_>, StoreError> {
        let conn = self.conn();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| classify(&self.path, e))?;
        Ok(Box::new(SqliteIndexWrite {
            store: self,
            conn: Some(conn),
            index_id: index_id.to_string(),
            now: to_iso(now_utc()),
            graph: None,
        }))
    }

    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let now = to_iso(now_utc());
        let resource_id = self.write(|tx| {
            apply_uko(tx, &self.path, index_id, &commit.uko, &now, &mut None)?;
            finish_commit(tx, &self.path, index_id, commit, &now)
        })?;
        self.index_metadata(&resource_id)?
            .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })
    }

    fn last_report(&self, index_id: &str) -> Result<Option<IndexReport>, StoreError> {
        let text: Option<String> = self.read(|c| {
            c.query_row(
                "SELECT report FROM index_runs WHERE index_id = ?1 ORDER BY finished_at DESC LIMIT 1",
                [index_id],
                |r| r.get(0),
            )
            .optional()
        })?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    fn remove_index(&self, resource_id: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let n = tx.execute("DELETE FROM repo_indexes WHERE resource_id = ?1", [resource_id]).map_err(self.sql())?;
            Ok(n > 0)
        })
    }
}

/// Applies the UKO part of a commit through `graph` (opened if needed).
fn apply_uko(
    tx: &Connection,
    db: &Path,
    index_id: &str,
    uko: &UkoCommit,
    now: &str,
    graph: &mut Option<GraphWriter>,
) -> Result<(), StoreError> {
    if uko.files.is_empty() && uko.removed_paths.is_empty() && uko.re_resolved.is_empty() {
        return Ok(());
    }
    let writer = open_graph(tx, db, index_id, now, graph)?;
    writer.apply(tx, uko).map_err(|e| e.into_store(db))
}

/// The graph writer of the transaction, opened on first use.
fn open_graph<'g>(
    tx: &Connection,
    db: &Path,
    index_id: &str,
    now: &str,
    graph: &'g mut Option<GraphWriter>,
) -> Result<&'g mut GraphWriter, StoreError> {
    if graph.is_none() {
        let opened = GraphWriter::open(tx, index_id, now).map_err(|e| e.into_store(db))?;
        *graph = Some(opened.ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })?);
    }
    // Just set when it was `None`.
    graph.as_mut().ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })
}

fn validate_commit(commit: &IndexCommit) -> Result<(), StoreError> {
    if commit.primary_language.is_empty() || commit.primary_language.len() > 50 {
        return Err(
            agents_core::ValidationError::new("IndexMetadata", "primary_language", "must be 1-50 characters").into()
        );
    }
    Ok(())
}

/// The file-list part of a commit and the status change to `ready`.
fn finish_commit(
    tx: &Connection,
    db: &Path,
    index_id: &str,
    commit: &IndexCommit,
    now: &str,
) -> Result<String, StoreError> {
    let sql = |e| classify(db, e);
    let report = serde_json::to_string(&commit.report).expect("report serialises");
    {
        let mut upsert = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO indexed_files \
                 (index_id, path, content_hash, token_count, size_bytes, language, last_modified) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(sql)?;
        for f in &commit.upserts {
            upsert
                .execute(params![
                    index_id,
                    f.path,
                    f.content_hash,
                    f.token_count as i64,
                    f.size_bytes as i64,
                    f.language,
                    f.last_modified
                ])
                .map_err(sql)?;
        }
        let mut touch = tx
            .prepare_cached("UPDATE indexed_files SET last_modified = ?3 WHERE index_id = ?1 AND path = ?2")
            .map_err(sql)?;
        for (path, modified) in &commit.touched {
            touch.execute(params![index_id, path, modified]).map_err(sql)?;
        }
        let mut delete =
            tx.prepare_cached("DELETE FROM indexed_files WHERE index_id = ?1 AND path = ?2").map_err(sql)?;
        for path in &commit.removed {
            delete.execute(params![index_id, path]).map_err(sql)?;
        }
        tx.execute("DELETE FROM skipped_files WHERE index_id = ?1", [index_id]).map_err(sql)?;
        let mut skip = tx
            .prepare_cached(
                "INSERT OR REPLACE INTO skipped_files (index_id, path, size_bytes, last_modified, reason) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(sql)?;
        for f in &commit.skipped {
            skip.execute(params![index_id, f.path, f.size_bytes as i64, f.last_modified, f.reason.as_str()])
                .map_err(sql)?;
        }
    }
    let resource_id: String = tx
        .query_row(
            "UPDATE repo_indexes SET indexed_at = ?2, file_count = ?3, token_estimate = ?4, \
             primary_language = ?5, status = 'ready', error_message = NULL \
             WHERE index_id = ?1 RETURNING resource_id",
            params![index_id, now, commit.file_count as i64, commit.token_estimate as i64, commit.primary_language],
            |r| r.get(0),
        )
        .optional()
        .map_err(sql)?
        .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })?;
    tx.execute("DELETE FROM index_runs WHERE index_id = ?1", [index_id]).map_err(sql)?;
    tx.execute(
        "INSERT INTO index_runs (index_id, finished_at, report) VALUES (?1, ?2, ?3)",
        params![index_id, now, report],
    )
    .map_err(sql)?;
    Ok(resource_id)
}

/// An open write transaction of an indexing run (see [`IndexWrite`]).
/// Dropped without [`IndexWrite::finish`], it rolls back.
struct SqliteIndexWrite<'a> {
    store: &'a SqliteStore,
    conn: Option<MutexGuard<'a, Connection>>,
    index_id: String,
    now: String,
    /// The interning state of the index's graph, once the run writes to it.
    graph: Option<GraphWriter>,
}

impl SqliteIndexWrite<'_> {
    /// The open transaction's connection and the graph writer.
    fn parts(&mut self) -> Result<(&Connection, &mut GraphWriter), StoreError> {
        let conn: &Connection = self.conn.as_ref().expect("write transaction is open");
        let graph = open_graph(conn, &self.store.path, &self.index_id, &self.now, &mut self.graph)?;
        Ok((conn, graph))
    }

    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("write transaction is open")
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| classify(&self.store.path, e)
    }
}

impl IndexWrite for SqliteIndexWrite<'_> {
    fn write_nodes(&mut self, path: &str, nodes: &[UkoNode]) -> Result<Vec<Reshaped>, StoreError> {
        let db = self.store.path.clone();
        let (conn, graph) = self.parts()?;
        // A first index has no old revisions to look up.
        let written = if graph.fresh { graph.insert_nodes(conn, nodes) } else { graph.write_nodes(conn, path, nodes) };
        written.map_err(|e| e.into_store(&db))
    }

    fn write_refs(&mut self, path: &str, refs: &[UkoRef]) -> Result<(), StoreError> {
        let db = self.store.path.clone();
        let (conn, graph) = self.parts()?;
        graph.write_refs(conn, path, refs).map_err(|e| e.into_store(&db))
    }

    fn retire_paths(&mut self, paths: &[String]) -> Result<(), StoreError> {
        let db = self.store.path.clone();
        let (conn, graph) = self.parts()?;
        for path in paths {
            graph.retire_path(conn, path).map_err(|e| e.into_store(&db))?;
        }
        Ok(())
    }

    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str, &str)) -> Result<(), StoreError> {
        uko_sql::for_each_symbol(self.conn(), &self.index_id, None, f).map_err(self.sql())
    }

    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str, &str),
    ) -> Result<(), StoreError> {
        uko_sql::for_each_symbol(self.conn(), &self.index_id, Some(names), f).map_err(self.sql())
    }

    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::file_refs(self.conn(), &self.index_id, path).map_err(self.sql())
    }

    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::refs_affected_by(self.conn(), &self.index_id, paths, names).map_err(self.sql())
    }

    fn refs_importing(&mut self, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::refs_importing(self.conn(), &self.index_id, paths).map_err(self.sql())
    }

    fn refs_naming(&mut self, naming: &Naming<'_>) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::refs_naming(self.conn(), &self.index_id, naming).map_err(self.sql())
    }

    fn import_refs(&mut self) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::import_refs(self.conn(), &self.index_id).map_err(self.sql())
    }

    fn functions_mentioning(&mut self, words: &[String]) -> Result<Vec<String>, StoreError> {
        uko_sql::functions_mentioning(self.conn(), &self.index_id, words).map_err(self.sql())
    }

    fn finish(mut self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let result = {
            let this = &mut *self;
            let conn: &Connection = this.conn.as_ref().expect("write transaction is open");
            apply_uko(conn, &this.store.path, &this.index_id, &commit.uko, &this.now, &mut this.graph)
                .and_then(|()| finish_commit(conn, &this.store.path, &this.index_id, commit, &this.now))
        };
        let conn = self.conn.take().expect("write transaction is open");
        match result {
            Ok(resource_id) => {
                conn.execute_batch("COMMIT").map_err(|e| classify(&self.store.path, e))?;
                drop(conn);
                self.store
                    .index_metadata(&resource_id)?
                    .ok_or_else(|| StoreError::NotFound { what: "index", name: self.index_id.clone() })
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }
}

impl Drop for SqliteIndexWrite<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let _ = conn.execute_batch("ROLLBACK");
        }
    }
}
