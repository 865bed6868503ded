//! [`FileIndexStore`] for [`PostgresStore`], and the open transaction of an
//! indexing run ([`PgIndexWrite`]), which also writes the code graph.

use agents_core::ids::{from_iso, new_ulid, now_utc, to_iso};
use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus};
use agents_store::{
    FileIndexStore, IndexCommit, IndexWrite, Naming, Reshaped, SkippedFile, StoreError, UkoNode, UkoRef,
};
use std::collections::{BTreeMap, BTreeSet, HashSet};

use postgres::Row;

use crate::code_graph as uko;
use crate::{Conn, Pooled, PostgresStore};

const INDEX_COLUMNS: &str = "index_id, resource_id, indexed_at, file_count, token_estimate, \
     primary_language, status, error_message, created_at";

/// How long a run waits for another run of the same index (on any machine)
/// before reporting [`StoreError::Locked`]; SQLite's busy timeout.
const LOCK_TIMEOUT: &str = "300s";

fn metadata_from_row(row: &Row) -> Result<IndexMetadata, StoreError> {
    let parse_ts = |field: &'static str, s: String| {
        from_iso(&s)
            .ok_or_else(|| agents_core::ValidationError::new("IndexMetadata", field, format!("bad timestamp `{s}`")))
    };
    let status: String = row.get(6);
    Ok(IndexMetadata::new(
        row.get(0),
        row.get(1),
        parse_ts("indexed_at", row.get(2))?,
        row.get::<_, i64>(3).max(0) as u64,
        row.get::<_, i64>(4).max(0) as u64,
        row.get(5),
        status.parse()?,
        row.get(7),
        parse_ts("created_at", row.get(8))?,
    )?)
}

fn file_from_row(row: &Row) -> FileRecord {
    FileRecord {
        path: row.get(0),
        content_hash: row.get(1),
        token_count: row.get::<_, i64>(2).max(0) as u64,
        size_bytes: row.get::<_, i64>(3).max(0) as u64,
        language: row.get(4),
        last_modified: row.get(5),
    }
}

/// Takes the run lock of an index inside the open transaction: one indexer
/// per index at a time, across every machine sharing the server.
fn lock_index(c: &mut Conn, index_id: &str) -> Result<(), StoreError> {
    c.batch(&format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))?;
    c.query_one("SELECT pg_advisory_xact_lock(hashtextextended('agents-index:' || $1, 0))", &[&index_id])?;
    Ok(())
}

impl PostgresStore {
    /// Whether an indexing run (from this machine or another) holds the run
    /// lock of `index_id` now.
    pub fn index_run_in_progress(&self, index_id: &str) -> Result<bool, StoreError> {
        self.write(|c| {
            let free: bool = c
                .query_one(
                    "SELECT pg_try_advisory_xact_lock(hashtextextended('agents-index:' || $1, 0))",
                    &[&index_id],
                )?
                .get(0);
            Ok(!free)
        })
    }

    fn query_index(&self, sql_where: &str, param: &str) -> Result<Option<IndexMetadata>, StoreError> {
        let sql = format!("SELECT {INDEX_COLUMNS} FROM repo_indexes WHERE {sql_where}");
        let row = self.read(|c| c.query_opt(&sql, &[&param]))?;
        row.as_ref().map(metadata_from_row).transpose()
    }
}

impl FileIndexStore for PostgresStore {
    fn index_metadata(&self, resource_id: &str) -> Result<Option<IndexMetadata>, StoreError> {
        self.query_index("resource_id = $1", resource_id)
    }

    fn ensure_index(&self, resource_id: &str) -> Result<IndexMetadata, StoreError> {
        if let Some(meta) = self.index_metadata(resource_id)? {
            return Ok(meta);
        }
        let now = to_iso(now_utc());
        self.write(|c| {
            c.execute(
                "INSERT INTO repo_indexes (index_id, resource_id, indexed_at, status, created_at) \
                 VALUES ($1, $2, $3, 'pending', $3) ON CONFLICT (resource_id) DO NOTHING",
                &[&new_ulid(), &resource_id, &now],
            )?;
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
        self.write(|c| {
            let n = c.execute(
                "UPDATE repo_indexes SET status = $2, error_message = $3 WHERE index_id = $1",
                &[&index_id, &status.as_str(), &error_message],
            )?;
            if n == 0 {
                return Err(StoreError::NotFound { what: "index", name: index_id.to_string() });
            }
            Ok(())
        })
    }

    fn indexes_with_status(&self, status: IndexStatus) -> Result<Vec<IndexMetadata>, StoreError> {
        let sql = format!("SELECT {INDEX_COLUMNS} FROM repo_indexes WHERE status = $1 ORDER BY index_id");
        let rows = self.read(|c| c.query(&sql, &[&status.as_str()]))?;
        rows.iter().map(metadata_from_row).collect()
    }

    fn file_records(&self, index_id: &str) -> Result<Vec<FileRecord>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT path, content_hash, token_count, size_bytes, language, last_modified \
                 FROM indexed_files WHERE index_id = $1 ORDER BY path",
                &[&index_id],
            )?
            .iter()
            .map(file_from_row)
            .collect())
        })
    }

    fn skipped_files(&self, index_id: &str) -> Result<Vec<SkippedFile>, StoreError> {
        let rows = self.read(|c| {
            c.query(
                "SELECT path, size_bytes, last_modified, reason FROM skipped_files WHERE index_id = $1 ORDER BY path",
                &[&index_id],
            )
        })?;
        rows.iter()
            .map(|r| {
                let reason: String = r.get(3);
                Ok(SkippedFile {
                    path: r.get(0),
                    size_bytes: r.get::<_, i64>(1).max(0) as u64,
                    last_modified: r.get(2),
                    reason: reason.parse()?,
                })
            })
            .collect()
    }

    fn begin_index_write(&self, index_id: &str) -> Result<Box<dyn IndexWrite + '_>, StoreError> {
        let mut conn = self.conn()?;
        conn.batch("BEGIN")?;
        let has_nodes = (|| {
            lock_index(&mut conn, index_id)?;
            let row = conn.query_one(
                "SELECT EXISTS(SELECT 1 FROM uko_nodes WHERE index_id = $1) \
                 OR EXISTS(SELECT 1 FROM uko_refs WHERE index_id = $1)",
                &[&index_id],
            )?;
            Ok::<bool, StoreError>(row.get(0))
        })();
        let has_nodes = match has_nodes {
            Ok(has) => has,
            Err(e) => {
                conn.rollback();
                return Err(e);
            }
        };
        Ok(Box::new(PgIndexWrite {
            store: self,
            conn: Some(conn),
            index_id: index_id.to_string(),
            now: to_iso(now_utc()),
            has_nodes,
            bulk: Bulk::default(),
        }))
    }

    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let now = to_iso(now_utc());
        let resource_id = self.write(|c| {
            lock_index(c, index_id)?;
            uko::apply(c, index_id, &commit.uko, &now)?;
            finish_commit(c, index_id, commit, &now)
        })?;
        self.index_metadata(&resource_id)?
            .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })
    }

    fn last_report(&self, index_id: &str) -> Result<Option<IndexReport>, StoreError> {
        let text: Option<String> = self.read(|c| {
            Ok(c.query_opt(
                "SELECT report FROM index_runs WHERE index_id = $1 ORDER BY finished_at DESC LIMIT 1",
                &[&index_id],
            )?
            .map(|r| r.get(0)))
        })?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    }

    fn remove_index(&self, resource_id: &str) -> Result<bool, StoreError> {
        self.write(|c| Ok(c.execute("DELETE FROM repo_indexes WHERE resource_id = $1", &[&resource_id])? > 0))
    }
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
fn finish_commit(c: &mut Conn, index_id: &str, commit: &IndexCommit, now: &str) -> Result<String, StoreError> {
    let report = serde_json::to_string(&commit.report)
        .map_err(|e| StoreError::Invalid(agents_core::ValidationError::new("IndexReport", "report", e.to_string())))?;
    // Each list in one statement (the last entry of a path wins, as
    // statements in turn would).
    if !commit.upserts.is_empty() {
        let last: BTreeMap<&str, &FileRecord> = commit.upserts.iter().map(|f| (f.path.as_str(), f)).collect();
        let files: Vec<&FileRecord> = last.into_values().collect();
        let text = |f: fn(&FileRecord) -> &str| files.iter().map(|r| f(r)).collect::<Vec<&str>>();
        let int = |f: fn(&FileRecord) -> u64| files.iter().map(|r| f(r) as i64).collect::<Vec<i64>>();
        c.execute(
            "INSERT INTO indexed_files \
             (index_id, path, content_hash, token_count, size_bytes, language, last_modified) \
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[]) \
             ON CONFLICT (index_id, path) DO UPDATE SET content_hash = excluded.content_hash, \
             token_count = excluded.token_count, size_bytes = excluded.size_bytes, \
             language = excluded.language, last_modified = excluded.last_modified",
            &[
                &index_id,
                &text(|f| &f.path),
                &text(|f| &f.content_hash),
                &int(|f| f.token_count),
                &int(|f| f.size_bytes),
                &text(|f| &f.language),
                &text(|f| &f.last_modified),
            ],
        )?;
    }
    if !commit.touched.is_empty() {
        let last: BTreeMap<&str, &str> = commit.touched.iter().map(|(p, m)| (p.as_str(), m.as_str())).collect();
        let paths: Vec<&str> = last.keys().copied().collect();
        let modified: Vec<&str> = last.values().copied().collect();
        c.execute(
            "UPDATE indexed_files f SET last_modified = t.modified \
             FROM unnest($2::text[], $3::text[]) AS t(path, modified) WHERE f.index_id = $1 AND f.path = t.path",
            &[&index_id, &paths, &modified],
        )?;
    }
    if !commit.removed.is_empty() {
        c.execute("DELETE FROM indexed_files WHERE index_id = $1 AND path = ANY($2)", &[&index_id, &commit.removed])?;
    }
    c.execute("DELETE FROM skipped_files WHERE index_id = $1", &[&index_id])?;
    if !commit.skipped.is_empty() {
        let last: BTreeMap<&str, &SkippedFile> = commit.skipped.iter().map(|f| (f.path.as_str(), f)).collect();
        let files: Vec<&SkippedFile> = last.into_values().collect();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let sizes: Vec<i64> = files.iter().map(|f| f.size_bytes as i64).collect();
        let modified: Vec<&str> = files.iter().map(|f| f.last_modified.as_str()).collect();
        let reasons: Vec<&str> = files.iter().map(|f| f.reason.as_str()).collect();
        c.execute(
            "INSERT INTO skipped_files (index_id, path, size_bytes, last_modified, reason) \
             SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[])",
            &[&index_id, &paths, &sizes, &modified, &reasons],
        )?;
    }
    let resource_id: String = c
        .query_opt(
            "UPDATE repo_indexes SET indexed_at = $2, file_count = $3, token_estimate = $4, \
             primary_language = $5, status = 'ready', error_message = NULL \
             WHERE index_id = $1 RETURNING resource_id",
            &[&index_id, &now, &(commit.file_count as i64), &(commit.token_estimate as i64), &commit.primary_language],
        )?
        .map(|r| r.get(0))
        .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })?;
    c.execute("DELETE FROM index_runs WHERE index_id = $1", &[&index_id])?;
    c.execute(
        "INSERT INTO index_runs (index_id, finished_at, report) VALUES ($1, $2, $3)",
        &[&index_id, &now, &report],
    )?;
    Ok(resource_id)
}

/// An open write transaction of an indexing run, holding its index's run
/// lock. Dropped without [`IndexWrite::finish`], it rolls back.
struct PgIndexWrite<'a> {
    store: &'a PostgresStore,
    conn: Option<Pooled<'a>>,
    index_id: String,
    now: String,
    /// Whether the index had graph nodes or references when the run began;
    /// a first index has no old revisions to look up and nothing to replace,
    /// so its rows wait in `bulk` and go in with a few `COPY`s.
    has_nodes: bool,
    bulk: Bulk,
}

/// Graph rows of a first index not loaded yet.
#[derive(Default)]
struct Bulk {
    nodes: Vec<UkoNode>,
    refs: Vec<UkoRef>,
    /// Files whose references were written (buffered or loaded) in this run.
    ref_paths: HashSet<String>,
}

/// Buffered graph rows from which a first index loads them.
const BULK_ROWS: usize = 50_000;

impl PgIndexWrite<'_> {
    fn closed(&self) -> StoreError {
        StoreError::Server {
            location: self.store.location().to_owned(),
            message: "the indexing transaction is already closed".to_owned(),
        }
    }

    fn conn(&mut self) -> Result<&mut Conn, StoreError> {
        if self.conn.is_none() {
            return Err(self.closed());
        }
        Ok(self.conn.as_deref_mut().unwrap_or_else(|| unreachable!("checked above")))
    }

    /// The connection with every buffered graph row loaded: what reads and
    /// row-by-row writes use.
    fn loaded(&mut self) -> Result<&mut Conn, StoreError> {
        let (nodes, refs) = (std::mem::take(&mut self.bulk.nodes), std::mem::take(&mut self.bulk.refs));
        let (index_id, now) = (self.index_id.clone(), self.now.clone());
        let c = self.conn()?;
        uko::copy_nodes(c, &index_id, &nodes, &now)?;
        uko::copy_refs(c, &index_id, &refs)?;
        Ok(c)
    }

    /// Loads the buffered rows once there are many.
    fn load_if_full(&mut self) -> Result<(), StoreError> {
        if self.bulk.nodes.len() + self.bulk.refs.len() >= BULK_ROWS {
            self.loaded()?;
        }
        Ok(())
    }
}

impl IndexWrite for PgIndexWrite<'_> {
    fn write_nodes(&mut self, path: &str, nodes: &[UkoNode]) -> Result<Vec<Reshaped>, StoreError> {
        let (index_id, now, has_nodes) = (self.index_id.clone(), self.now.clone(), self.has_nodes);
        if !has_nodes {
            self.conn()?;
            self.bulk.nodes.extend_from_slice(nodes);
            self.load_if_full()?;
            let reshaped: BTreeSet<Reshaped> = nodes.iter().filter_map(|n| Reshaped::of_node(n, None)).collect();
            return Ok(reshaped.into_iter().collect());
        }
        let c = self.conn()?;
        uko::write_nodes(c, &index_id, path, nodes, &now)
    }

    fn write_refs(&mut self, path: &str, refs: &[UkoRef]) -> Result<(), StoreError> {
        let index_id = self.index_id.clone();
        // A file's first references in a first index replace nothing.
        if !self.has_nodes && self.bulk.ref_paths.insert(path.to_owned()) {
            self.conn()?;
            self.bulk.refs.extend_from_slice(refs);
            return self.load_if_full();
        }
        uko::write_refs(self.loaded()?, &index_id, path, refs)
    }

    fn retire_paths(&mut self, paths: &[String]) -> Result<(), StoreError> {
        let (index_id, now) = (self.index_id.clone(), self.now.clone());
        let c = self.loaded()?;
        for path in paths {
            uko::retire_path(c, &index_id, path, &now)?;
        }
        Ok(())
    }

    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str, &str)) -> Result<(), StoreError> {
        let index_id = self.index_id.clone();
        let rows = self.loaded()?.query(
            "SELECT path, symbol_path, name, kind, coalesce(signature, '') FROM uko_nodes \
             WHERE index_id = $1 AND is_current ORDER BY path",
            &[&index_id],
        )?;
        for row in &rows {
            f(row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        }
        Ok(())
    }

    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str, &str),
    ) -> Result<(), StoreError> {
        let index_id = self.index_id.clone();
        let c = self.loaded()?;
        for name in names {
            let rows = c.query(
                "SELECT path, symbol_path, name, kind, coalesce(signature, '') FROM uko_nodes \
                 WHERE index_id = $1 AND name = $2 AND is_current",
                &[&index_id, name],
            )?;
            for row in &rows {
                f(row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            }
        }
        Ok(())
    }

    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let index_id = self.index_id.clone();
        uko::query_refs(self.loaded()?, "index_id = $1 AND path = $2", &[&index_id, &path])
    }

    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let index_id = self.index_id.clone();
        uko::refs_affected_by(self.loaded()?, &index_id, paths, names)
    }

    fn refs_importing(&mut self, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let index_id = self.index_id.clone();
        uko::refs_importing(self.loaded()?, &index_id, paths)
    }

    fn refs_naming(&mut self, naming: &Naming<'_>) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let index_id = self.index_id.clone();
        uko::refs_naming(self.loaded()?, &index_id, naming)
    }

    fn import_refs(&mut self) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let index_id = self.index_id.clone();
        uko::query_refs(self.loaded()?, "index_id = $1 AND kind = 'import'", &[&index_id])
    }

    fn functions_mentioning(&mut self, words: &[String]) -> Result<Vec<String>, StoreError> {
        let index_id = self.index_id.clone();
        uko::functions_mentioning(self.loaded()?, &index_id, words)
    }

    fn finish(mut self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let (index_id, now) = (self.index_id.clone(), self.now.clone());
        self.loaded()?;
        let Some(mut conn) = self.conn.take() else { return Err(self.closed()) };
        let result = (|| {
            uko::apply(&mut conn, &index_id, &commit.uko, &now)?;
            finish_commit(&mut conn, &index_id, commit, &now)
        })();
        match result {
            Ok(resource_id) => {
                conn.batch("COMMIT")?;
                drop(conn);
                self.store
                    .index_metadata(&resource_id)?
                    .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.clone() })
            }
            Err(e) => {
                conn.rollback();
                Err(e)
            }
        }
    }
}

impl Drop for PgIndexWrite<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            conn.rollback();
        }
    }
}
