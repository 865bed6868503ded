//! [`SqliteStore`]: the embedded implementation of [`Store`].

mod warm;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use agents_core::ids::{from_iso, new_ulid, now_utc, stable_ulid, to_iso};
use agents_core::indexing::{FileRecord, IndexMetadata, IndexReport, IndexStatus};
use agents_core::policy::{Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, params};

use crate::migrations::MIGRATIONS;
use crate::uko_sql;
use crate::{
    IndexCommit, Plan, PlanDecision, Project, Resource, SkippedFile, Store, StoreError, UkoNodeRecord, UkoRef,
    UkoSymbol,
};

/// How long a writer waits for another writer before reporting `Locked`.
/// How long a writer waits for another writer (an indexing run holds the
/// write lock for its whole duration) before reporting `Locked`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);

/// Idle read connections kept for reuse; more are opened while more readers
/// run at once, and closed when they finish.
const IDLE_READERS: usize = 4;

/// The embedded SQLite store. Writes go through one connection behind a
/// mutex (SQLite serialises writers anyway; an indexing run holds it for its
/// whole transaction). Reads of a file-backed store go through a pool of
/// read-only connections of their own: WAL lets them read the last commit
/// while a writer works, so an index run on one resource never delays
/// queries on another.
pub struct SqliteStore {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Idle read connections; `None` for an in-memory store, whose data only
    /// its one connection sees.
    readers: Option<Mutex<Vec<Connection>>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish()
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, switches it to WAL
    /// and applies pending migrations.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        }
        let conn = Connection::open(path).map_err(|e| classify(path, e))?;
        let store =
            SqliteStore { path: path.to_path_buf(), conn: Mutex::new(conn), readers: Some(Mutex::new(Vec::new())) };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    /// An in-memory store, for tests.
    pub fn open_in_memory() -> Result<SqliteStore, StoreError> {
        let path = PathBuf::from(":memory:");
        let conn = Connection::open_in_memory().map_err(|e| classify(&path, e))?;
        let store = SqliteStore { path, conn: Mutex::new(conn), readers: None };
        store.configure()?;
        store.migrate()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let conn = self.conn();
        conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| classify(&self.path, e))
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent
        // (transactions roll back on drop), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn configure(&self) -> Result<(), StoreError> {
        let conn = self.conn();
        let err = |e| classify(&self.path, e);
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        // An assembly reads nodes, children, references and imports with a few
        // dozen distinct statements; keep them all parsed.
        conn.set_prepared_statement_cache_capacity(64);
        // The first real read: a corrupted file fails here. Switching to WAL
        // needs a moment alone with the file and does not wait on the busy
        // handler, so retry while another process is opening it.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e)
                    if matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(err(e)),
            }
        }
        conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY;").map_err(err)?;
        Ok(())
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let err = |e| classify(&self.path, e);
        let known = MIGRATIONS.len() as i64;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(err)?;
        if version == known {
            return Ok(());
        }
        // Read the version again under the write lock: another process may
        // have migrated between our read and our lock.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(err)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(err)?;
        if version > known {
            return Err(StoreError::TooNew { path: self.path.clone(), found: version, known });
        }
        for sql in MIGRATIONS.iter().skip(version as usize) {
            tx.execute_batch(sql).map_err(err)?;
        }
        tx.pragma_update(None, "user_version", known).map_err(err)?;
        tx.commit().map_err(err)?;
        Ok(())
    }

    fn write<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|e| classify(&self.path, e))?;
        let value = f(&tx)?;
        tx.commit().map_err(|e| classify(&self.path, e))?;
        Ok(value)
    }

    /// Runs `f` on a read connection: one of the pool's (never waiting for
    /// a writer), or the only connection of an in-memory store.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let Some(readers) = &self.readers else {
            let conn = self.conn();
            return f(&conn).map_err(|e| classify(&self.path, e));
        };
        let idle = readers.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => self.open_reader()?,
        };
        let result = f(&conn).map_err(|e| classify(&self.path, e));
        let mut idle = readers.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE_READERS {
            idle.push(conn);
        }
        result
    }

    /// A new read connection to the database file: it only reads
    /// (`query_only`), and sees the last committed state.
    fn open_reader(&self) -> Result<Connection, StoreError> {
        let err = |e| classify(&self.path, e);
        let conn = Connection::open(&self.path).map_err(err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
        conn.set_prepared_statement_cache_capacity(64);
        conn.execute_batch("PRAGMA query_only = ON; PRAGMA cache_size = -16384; PRAGMA temp_store = MEMORY;")
            .map_err(err)?;
        Ok(conn)
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| classify(&self.path, e)
    }
}

/// Maps SQLite failures to the errors users can act on.
fn classify(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt { path: path.to_path_buf(), source: e }
        }
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            StoreError::Locked { path: path.to_path_buf() }
        }
        _ => StoreError::Sqlite { path: path.to_path_buf(), source: e },
    }
}

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

fn project_from_row(row: &Row<'_>) -> rusqlite::Result<Project> {
    Ok(Project { project_id: row.get(0)?, name: row.get(1)?, created_at: row.get(2)? })
}

const PLAN_COLUMNS: &str = "plan_id, parent_id, title, created_at, phase, project_id";

fn plan_from_row(row: &Row<'_>) -> rusqlite::Result<Plan> {
    Ok(Plan {
        plan_id: row.get(0)?,
        parent_id: row.get(1)?,
        title: row.get(2)?,
        created_at: row.get(3)?,
        phase: row.get(4)?,
        project_id: row.get(5)?,
    })
}

fn decision_from_row(row: &Row<'_>) -> rusqlite::Result<PlanDecision> {
    Ok(PlanDecision {
        decision_id: row.get(0)?,
        plan_id: row.get(1)?,
        title: row.get(2)?,
        body: row.get(3)?,
        tier: row.get(4)?,
        created_at: row.get(5)?,
    })
}

fn resource_from_row(row: &Row<'_>) -> rusqlite::Result<Resource> {
    Ok(Resource { resource_id: row.get(0)?, path: row.get(1)?, name: row.get(2)?, created_at: row.get(3)? })
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
    /// [`StoreError::NotFound`] naming `what` when `table` has no row whose
    /// `column` is `key`.
    fn require_row(
        &self,
        tx: &Transaction<'_>,
        (table, column): (&str, &str),
        what: &'static str,
        key: &str,
    ) -> Result<(), StoreError> {
        let sql = format!("SELECT EXISTS(SELECT 1 FROM {table} WHERE {column} = ?1)");
        let exists: bool = tx.query_row(&sql, [key], |r| r.get(0)).map_err(self.sql())?;
        if exists { Ok(()) } else { Err(StoreError::NotFound { what, name: key.to_owned() }) }
    }

    fn query_index(&self, sql_where: &str, param: &str) -> Result<Option<IndexMetadata>, StoreError> {
        let sql = format!("SELECT {INDEX_COLUMNS} FROM repo_indexes WHERE {sql_where}");
        let row = self.read(|c| c.query_row(&sql, [param], IndexRow::read).optional())?;
        row.map(IndexRow::into_metadata).transpose()
    }
}

impl Store for SqliteStore {
    fn create_project(&self, name: &str) -> Result<Project, StoreError> {
        let project = Project { project_id: new_ulid(), name: name.to_string(), created_at: to_iso(now_utc()) };
        self.write(|tx| {
            let exists: bool = tx
                .query_row("SELECT EXISTS(SELECT 1 FROM projects WHERE name = ?1)", [name], |r| r.get(0))
                .map_err(self.sql())?;
            if exists {
                return Err(StoreError::AlreadyExists { what: "project", name: name.to_string() });
            }
            tx.execute(
                "INSERT INTO projects (project_id, name, created_at) VALUES (?1, ?2, ?3)",
                params![project.project_id, project.name, project.created_at],
            )
            .map_err(self.sql())?;
            Ok(())
        })?;
        Ok(project)
    }

    fn project(&self, name: &str) -> Result<Option<Project>, StoreError> {
        self.read(|c| {
            c.query_row("SELECT project_id, name, created_at FROM projects WHERE name = ?1", [name], project_from_row)
                .optional()
        })
    }

    fn projects(&self) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare("SELECT project_id, name, created_at FROM projects ORDER BY name")?;
            st.query_map([], project_from_row)?.collect()
        })
    }

    fn project_resources(&self, project_id: &str) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT r.resource_id, r.path, r.name, r.created_at FROM resources r \
                 JOIN project_resources pr ON pr.resource_id = r.resource_id \
                 WHERE pr.project_id = ?1 ORDER BY r.path",
            )?;
            st.query_map([project_id], resource_from_row)?.collect()
        })
    }

    fn resource_projects(&self, resource_id: &str) -> Result<Vec<Project>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT p.project_id, p.name, p.created_at FROM projects p \
                 JOIN project_resources pr ON pr.project_id = p.project_id \
                 WHERE pr.resource_id = ?1 ORDER BY p.name",
            )?;
            st.query_map([resource_id], project_from_row)?.collect()
        })
    }

    fn resource_by_path(&self, path: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT resource_id, path, name, created_at FROM resources WHERE path = ?1",
                [path],
                resource_from_row,
            )
            .optional()
        })
    }

    fn resource(&self, resource_id: &str) -> Result<Option<Resource>, StoreError> {
        self.read(|c| {
            c.query_row(
                "SELECT resource_id, path, name, created_at FROM resources WHERE resource_id = ?1",
                [resource_id],
                resource_from_row,
            )
            .optional()
        })
    }

    fn resources(&self) -> Result<Vec<Resource>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare("SELECT resource_id, path, name, created_at FROM resources ORDER BY path")?;
            st.query_map([], resource_from_row)?.collect()
        })
    }

    fn link_resource(&self, project_id: &str, path: &str, name: &str) -> Result<Resource, StoreError> {
        self.write(|tx| {
            let existing = tx
                .query_row(
                    "SELECT resource_id, path, name, created_at FROM resources WHERE path = ?1",
                    [path],
                    resource_from_row,
                )
                .optional()
                .map_err(self.sql())?;
            let now = to_iso(now_utc());
            let resource = match existing {
                Some(r) => r,
                None => {
                    // Derived from the path (unique among resources): the same
                    // repository has the same id in every store, so what is
                    // delivered for it does not depend on which store answered.
                    let r = Resource {
                        resource_id: stable_ulid(&["resource", path]),
                        path: path.to_string(),
                        name: name.to_string(),
                        created_at: now.clone(),
                    };
                    tx.execute(
                        "INSERT INTO resources (resource_id, path, name, created_at) VALUES (?1, ?2, ?3, ?4)",
                        params![r.resource_id, r.path, r.name, r.created_at],
                    )
                    .map_err(self.sql())?;
                    r
                }
            };
            tx.execute(
                "INSERT OR IGNORE INTO project_resources (project_id, resource_id, linked_at) VALUES (?1, ?2, ?3)",
                params![project_id, resource.resource_id, now],
            )
            .map_err(self.sql())?;
            Ok(resource)
        })
    }

    fn unlink_resource(&self, project_id: &str, resource_id: &str) -> Result<bool, StoreError> {
        self.write(|tx| {
            let n = tx
                .execute(
                    "DELETE FROM project_resources WHERE project_id = ?1 AND resource_id = ?2",
                    params![project_id, resource_id],
                )
                .map_err(self.sql())?;
            let still_linked: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM project_resources WHERE resource_id = ?1)",
                    [resource_id],
                    |r| r.get(0),
                )
                .map_err(self.sql())?;
            if !still_linked {
                tx.execute("DELETE FROM repo_indexes WHERE resource_id = ?1", [resource_id]).map_err(self.sql())?;
                tx.execute("DELETE FROM resources WHERE resource_id = ?1", [resource_id]).map_err(self.sql())?;
            }
            Ok(n > 0)
        })
    }

    fn project_context(
        &self,
        project_id: &str,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, StoreError> {
        let row: Option<(String, String)> = self.read(|c| {
            c.query_row(
                "SELECT policy_json, settings_json FROM project_context WHERE project_id = ?1",
                [project_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
        })?;
        let Some((policy, settings)) = row else { return Ok(None) };
        let corrupt = |column: &'static str, e: serde_json::Error| StoreError::CorruptRow {
            path: self.path.clone(),
            table: "project_context",
            key: project_id.to_owned(),
            column,
            message: e.to_string(),
        };
        let policy = serde_json::from_str(&policy).map_err(|e| corrupt("policy_json", e))?;
        let settings = serde_json::from_str(&settings).map_err(|e| corrupt("settings_json", e))?;
        Ok(Some((policy, settings)))
    }

    fn set_project_context(
        &self,
        project_id: &str,
        policy: &ProjectContextPolicy,
        settings: &ProjectContextSettings,
    ) -> Result<(), StoreError> {
        let policy = serde_json::to_string(policy).expect("a policy serialises");
        let settings = serde_json::to_string(settings).expect("settings serialise");
        self.write(|tx| {
            self.require_row(tx, ("projects", "project_id"), "project", project_id)?;
            tx.execute(
                "INSERT INTO project_context (project_id, policy_json, settings_json, updated_at) \
                 VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (project_id) DO UPDATE SET policy_json = excluded.policy_json, \
                 settings_json = excluded.settings_json, updated_at = excluded.updated_at",
                params![project_id, policy, settings, to_iso(now_utc())],
            )
            .map_err(self.sql())?;
            Ok(())
        })
    }

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

    fn commit_index(&self, index_id: &str, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let now = to_iso(now_utc());
        let resource_id = self.write(|tx| {
            uko_sql::apply(tx, index_id, &commit.uko, &now).map_err(self.sql())?;
            finish_commit(tx, &self.path, index_id, commit, &now)
        })?;
        self.index_metadata(&resource_id)?
            .ok_or_else(|| StoreError::NotFound { what: "index", name: index_id.to_string() })
    }

    fn begin_index_write(&self, index_id: &str) -> Result<Box<dyn crate::IndexWrite + '_>, StoreError> {
        let conn = self.conn();
        conn.execute_batch("BEGIN IMMEDIATE").map_err(|e| classify(&self.path, e))?;
        let has_nodes: bool = conn
            .query_row("SELECT EXISTS(SELECT 1 FROM uko_nodes WHERE index_id = ?1)", [index_id], |r| r.get(0))
            .map_err(|e| classify(&self.path, e))?;
        Ok(Box::new(SqliteIndexWrite {
            store: self,
            conn: Some(conn),
            index_id: index_id.to_string(),
            now: to_iso(now_utc()),
            has_nodes,
        }))
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

    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND path = ?2 AND is_current = 1",
                "start_byte, symbol_path",
                &[&index_id, &path],
            )
        })
    }

    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::node_by_uri(c, index_id, uri))
    }

    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND is_current = 1 AND (symbol_path = ?2 OR name = ?2)",
                "uri",
                &[&index_id, &query],
            )
        })
    }

    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| {
            uko_sql::query_nodes(
                c,
                "index_id = ?1 AND parent_uri = ?2 AND is_current = 1",
                "start_byte, symbol_path",
                &[&index_id, &uri],
            )
        })
    }

    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::query_nodes(c, "index_id = ?1 AND uri = ?2", "node_id DESC", &[&index_id, &uri]))
    }

    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        // A node's references are written in its file: find them through the
        // path index instead of scanning every reference of the index.
        let Some(node) = self.uko_node(index_id, uri)? else { return Ok(Vec::new()) };
        let path = node.node.path;
        let rows = self.read(|c| {
            uko_sql::query_refs_by(
                c,
                Some("ix_uko_refs_path"),
                "index_id = ?1 AND path = ?2 AND from_uri = ?3",
                &[&index_id, &path, &uri],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        // Descendants' URIs extend the node's: `file#Sym` under a file,
        // `file#Sym.member` under a symbol. All live in the node's file.
        let Some(node) = self.uko_node(index_id, uri)? else { return Ok(Vec::new()) };
        let child_prefix = if uri.contains('#') { format!("{uri}.") } else { format!("{uri}#") };
        let upper = format!("{child_prefix}\u{10FFFF}");
        let rows = self.read(|c| {
            uko_sql::query_refs(
                c,
                "index_id = ?1 AND path = ?2 AND (from_uri = ?3 OR (from_uri >= ?4 AND from_uri < ?5))",
                &[&index_id, &node.node.path, &uri, &child_prefix, &upper],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError> {
        let rows = self.read(|c| {
            uko_sql::query_refs_by(
                c,
                Some("ix_uko_refs_resolved_uri"),
                "index_id = ?1 AND resolved_uri = ?2",
                &[&index_id, &uri],
            )
        })?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
    }

    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT uri, path, symbol_path, name, kind, parent_uri FROM uko_nodes \
                 WHERE index_id = ?1 AND is_current = 1 ORDER BY uri",
            )?;
            st.query_map([index_id], |r| {
                Ok(UkoSymbol {
                    uri: r.get(0)?,
                    path: r.get(1)?,
                    symbol_path: r.get(2)?,
                    name: r.get(3)?,
                    kind: r.get(4)?,
                    parent_uri: r.get(5)?,
                })
            })?
            .collect()
        })
    }

    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::query_refs(c, "index_id = ?1 AND path = ?2", &[&index_id, &path]))
    }

    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        // Only the columns the graph needs, each part through its index: the
        // graph walk asks this of hundreds of nodes per query.
        self.read(|c| {
            let node: Option<(String, Option<String>)> = c
                .prepare_cached(
                    "SELECT path, parent_uri FROM uko_nodes INDEXED BY ix_uko_nodes_uri \
                     WHERE index_id = ?1 AND uri = ?2 AND is_current = 1",
                )?
                .query_row(rusqlite::params![index_id, uri], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            let mut out = Vec::new();
            let mut children = c.prepare_cached(
                "SELECT uri FROM uko_nodes INDEXED BY ix_uko_nodes_parent \
                 WHERE index_id = ?1 AND parent_uri = ?2 AND is_current = 1 ORDER BY start_byte, symbol_path",
            )?;
            let mut from = c.prepare_cached(
                "SELECT resolved_uri, kind FROM uko_refs INDEXED BY ix_uko_refs_path \
                 WHERE index_id = ?1 AND path = ?2 AND from_uri = ?3 AND resolved_uri IS NOT NULL \
                 ORDER BY line, target, ref_id",
            )?;
            // A node that is not current has only references into it.
            if let Some((path, parent)) = node {
                if let Some(parent) = parent {
                    out.push((parent, "contains".to_owned(), false));
                }
                for child in children.query_map(rusqlite::params![index_id, uri], |row| row.get::<_, String>(0))? {
                    out.push((child?, "contains".to_owned(), true));
                }
                for row in from.query_map(rusqlite::params![index_id, path, uri], |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
                })? {
                    let (target, kind) = row?;
                    out.push((target, kind, true));
                }
            }
            let mut to = c.prepare_cached(
                "SELECT from_uri, kind FROM uko_refs INDEXED BY ix_uko_refs_resolved_uri \
                 WHERE index_id = ?1 AND resolved_uri = ?2 ORDER BY path, line, target, ref_id",
            )?;
            for row in to.query_map(rusqlite::params![index_id, uri], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })? {
                let (source, kind) = row?;
                out.push((source, kind, false));
            }
            Ok(out)
        })
    }

    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare_cached(
                "SELECT DISTINCT resolved_path FROM uko_refs WHERE index_id = ?1 AND path = ?2 \
                 AND resolved_path IS NOT NULL AND resolved_path != path AND kind != 'mentions' \
                 ORDER BY resolved_path",
            )?;
            st.query_map(rusqlite::params![index_id, path], |row| row.get::<_, String>(0))?.collect()
        })
    }

    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        self.read(|c| uko_sql::refs_affected_by(c, index_id, paths, names))
    }

    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError> {
        self.read(|c| uko_sql::query_nodes(c, "index_id = ?1 AND is_current = 1", "uri", &[&index_id]))
    }

    fn create_plan(
        &self,
        title: &str,
        parent: Option<&str>,
        phase: Phase,
        project_id: Option<&str>,
    ) -> Result<Plan, StoreError> {
        let plan = Plan {
            plan_id: new_ulid(),
            parent_id: parent.map(str::to_owned),
            title: title.to_owned(),
            created_at: to_iso(now_utc()),
            phase: phase.as_str().to_owned(),
            project_id: project_id.map(str::to_owned),
        };
        self.write(|tx| {
            if let Some(parent) = parent {
                self.require_row(tx, ("plans", "plan_id"), "plan", parent)?;
            }
            if let Some(project_id) = project_id {
                self.require_row(tx, ("projects", "project_id"), "project", project_id)?;
            }
            tx.execute(
                &format!("INSERT INTO plans ({PLAN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"),
                params![plan.plan_id, plan.parent_id, plan.title, plan.created_at, plan.phase, plan.project_id],
            )
            .map_err(self.sql())?;
            Ok(())
        })?;
        Ok(plan)
    }

    fn plan(&self, plan_id: &str) -> Result<Option<Plan>, StoreError> {
        self.read(|c| {
            c.query_row(&format!("SELECT {PLAN_COLUMNS} FROM plans WHERE plan_id = ?1"), [plan_id], plan_from_row)
                .optional()
        })
    }

    fn plans(&self) -> Result<Vec<Plan>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(&format!("SELECT {PLAN_COLUMNS} FROM plans ORDER BY created_at, plan_id"))?;
            st.query_map([], plan_from_row)?.collect()
        })
    }

    fn add_decision(&self, plan_id: &str, title: &str, body: &str, tier: &str) -> Result<PlanDecision, StoreError> {
        let decision = PlanDecision {
            decision_id: new_ulid(),
            plan_id: plan_id.to_owned(),
            title: title.to_owned(),
            body: body.to_owned(),
            tier: tier.to_owned(),
            created_at: to_iso(now_utc()),
        };
        if !matches!(tier, "hot" | "warm" | "cold") {
            return Err(StoreError::Invalid(agents_core::ValidationError::new(
                "PlanDecision",
                "tier",
                format!("`{tier}` is not hot, warm or cold"),
            )));
        }
        self.write(|tx| {
            self.require_row(tx, ("plans", "plan_id"), "plan", plan_id)?;
            tx.execute(
                "INSERT INTO plan_decisions (decision_id, plan_id, title, body, tier, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    decision.decision_id,
                    decision.plan_id,
                    decision.title,
                    decision.body,
                    decision.tier,
                    decision.created_at
                ],
            )
            .map_err(self.sql())?;
            Ok(())
        })?;
        Ok(decision)
    }

    fn plan_decisions(&self, plan_id: &str) -> Result<Vec<PlanDecision>, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT decision_id, plan_id, title, body, tier, created_at FROM plan_decisions \
                 WHERE plan_id = ?1 ORDER BY created_at, decision_id",
            )?;
            st.query_map([plan_id], decision_from_row)?.collect()
        })
    }

    fn set_plan_payload(&self, plan_id: &str, payload_json: &str) -> Result<(), StoreError> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO plan_payloads (plan_id, payload_json, assembled_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(plan_id) DO UPDATE SET payload_json = excluded.payload_json, \
                 assembled_at = excluded.assembled_at",
                params![plan_id, payload_json, to_iso(now_utc())],
            )
            .map_err(self.sql())?;
            Ok(())
        })
    }

    fn plan_payload(&self, plan_id: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            c.query_row("SELECT payload_json FROM plan_payloads WHERE plan_id = ?1", [plan_id], |r| r.get(0)).optional()
        })
    }

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

    fn uko_stats(&self, index_id: &str) -> Result<crate::UkoStatsRows, StoreError> {
        self.read(|c| {
            let mut st = c.prepare(
                "SELECT language, kind, COUNT(*) FROM uko_nodes WHERE index_id = ?1 AND is_current = 1 \
                 GROUP BY language, kind ORDER BY language, kind",
            )?;
            let nodes =
                st.query_map([index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<Result<_, _>>()?;
            let mut st = c.prepare(
                "SELECT f.language, r.kind, COUNT(*), SUM(r.resolved_uri IS NOT NULL) FROM uko_refs r \
                 JOIN indexed_files f ON f.index_id = r.index_id AND f.path = r.path \
                 WHERE r.index_id = ?1 GROUP BY f.language, r.kind ORDER BY f.language, r.kind",
            )?;
            let refs = st
                .query_map([index_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<Result<_, _>>()?;
            Ok(crate::UkoStatsRows { nodes, refs })
        })
    }

    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError> {
        let rows = self.read(|c| uko_sql::query_refs(c, "index_id = ?1", &[&index_id]))?;
        Ok(rows.into_iter().map(|(_, r)| r).collect())
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

/// An open write transaction of an indexing run (see [`crate::IndexWrite`]).
/// Dropped without [`crate::IndexWrite::finish`], it rolls back.
struct SqliteIndexWrite<'a> {
    store: &'a SqliteStore,
    conn: Option<MutexGuard<'a, Connection>>,
    index_id: String,
    now: String,
    /// Whether the index had graph nodes when the run began; a first index
    /// has no old revisions to look up.
    has_nodes: bool,
}

impl SqliteIndexWrite<'_> {
    fn conn(&self) -> &Connection {
        self.conn.as_ref().expect("write transaction is open")
    }

    fn sql(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        move |e| classify(&self.store.path, e)
    }
}

impl crate::IndexWrite for SqliteIndexWrite<'_> {
    fn write_nodes(&mut self, path: &str, nodes: &[crate::UkoNode]) -> Result<Vec<String>, StoreError> {
        if !self.has_nodes {
            return uko_sql::insert_nodes(self.conn(), &self.index_id, nodes, &self.now).map_err(self.sql());
        }
        uko_sql::write_nodes(self.conn(), &self.index_id, path, nodes, &self.now).map_err(self.sql())
    }

    fn write_refs(&mut self, path: &str, refs: &[UkoRef]) -> Result<(), StoreError> {
        uko_sql::write_refs(self.conn(), &self.index_id, path, refs).map_err(self.sql())
    }

    fn retire_paths(&mut self, paths: &[String]) -> Result<(), StoreError> {
        for path in paths {
            uko_sql::retire_path(self.conn(), &self.index_id, path, &self.now).map_err(self.sql())?;
        }
        Ok(())
    }

    fn for_each_symbol(&mut self, f: &mut dyn FnMut(&str, &str, &str, &str)) -> Result<(), StoreError> {
        let conn = self.conn();
        let mut st = conn
            .prepare_cached(
                "SELECT path, symbol_path, name, kind FROM uko_nodes WHERE index_id = ?1 AND is_current = 1 \
                 ORDER BY path",
            )
            .map_err(self.sql())?;
        let mut rows = st.query([&self.index_id]).map_err(self.sql())?;
        while let Some(row) = rows.next().map_err(self.sql())? {
            let get = |i| row.get_ref(i).ok().and_then(|v| v.as_str().ok()).unwrap_or("");
            f(get(0), get(1), get(2), get(3));
        }
        Ok(())
    }

    fn for_each_symbol_named(
        &mut self,
        names: &[String],
        f: &mut dyn FnMut(&str, &str, &str, &str),
    ) -> Result<(), StoreError> {
        let conn = self.conn();
        let mut st = conn
            .prepare_cached(
                "SELECT path, symbol_path, name, kind FROM uko_nodes INDEXED BY ix_uko_nodes_name \
                 WHERE index_id = ?1 AND name = ?2 AND is_current = 1",
            )
            .map_err(self.sql())?;
        for name in names {
            let mut rows = st.query(params![self.index_id, name]).map_err(self.sql())?;
            while let Some(row) = rows.next().map_err(self.sql())? {
                let get = |i| row.get_ref(i).ok().and_then(|v| v.as_str().ok()).unwrap_or("");
                f(get(0), get(1), get(2), get(3));
            }
        }
        Ok(())
    }

    fn file_refs(&mut self, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::query_refs(self.conn(), "index_id = ?1 AND path = ?2", &[&self.index_id, &path]).map_err(self.sql())
    }

    fn refs_affected_by(&mut self, paths: &[String], names: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        uko_sql::refs_affected_by(self.conn(), &self.index_id, paths, names).map_err(self.sql())
    }

    fn finish(mut self: Box<Self>, commit: &IndexCommit) -> Result<IndexMetadata, StoreError> {
        validate_commit(commit)?;
        let result = (|| {
            uko_sql::apply(self.conn(), &self.index_id, &commit.uko, &self.now).map_err(self.sql())?;
            finish_commit(self.conn(), &self.store.path, &self.index_id, commit, &self.now)
        })();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, hash: char, tokens: u64) -> FileRecord {
        FileRecord::new(
            path.into(),
            hash.to_string().repeat(64),
            tokens,
            tokens * 4,
            "python".into(),
            "2026-01-01T00:00:00.000000000Z".into(),
        )
        .unwrap()
    }

    fn store_with_resource() -> (SqliteStore, Resource, IndexMetadata) {
        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("demo").unwrap();
        let r = store.link_resource(&p.project_id, "/tmp/demo", "demo").unwrap();
        let meta = store.ensure_index(&r.resource_id).unwrap();
        (store, r, meta)
    }

    #[test]
    fn migrations_set_version_and_reopen_is_idempotent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as i64);
        drop(s);
        let s = SqliteStore::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as i64);
        let mode: String = s.read(|c| c.query_row("PRAGMA journal_mode", [], |r| r.get(0))).unwrap();
        assert_eq!(mode, "wal");
    }

    #[test]
    fn reads_answer_while_an_index_write_is_open() {
        let dir = tempfile::tempdir().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open(&dir.path().join("agents.db")).unwrap());
        let p = store.create_project("demo").unwrap();
        let busy = store.link_resource(&p.project_id, "/src/busy", "busy").unwrap();
        let idle = store.link_resource(&p.project_id, "/src/idle", "idle").unwrap();
        let busy_index = store.ensure_index(&busy.resource_id).unwrap();
        let idle_index = store.ensure_index(&idle.resource_id).unwrap();
        store
            .commit_index(
                &idle_index.index_id,
                &IndexCommit {
                    upserts: vec![file("a.py", 'a', 7)],
                    file_count: 1,
                    token_estimate: 7,
                    primary_language: "python".into(),
                    ..IndexCommit::default()
                },
            )
            .unwrap();
        // An indexing run of one resource holds the write connection...
        let writer = store.begin_index_write(&busy_index.index_id).unwrap();
        // ...while another thread reads another resource's index: it answers
        // with the last commit instead of waiting for the run.
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = store.clone();
        let idle_id = idle.resource_id.clone();
        std::thread::spawn(move || {
            let read = || -> Result<(IndexStatus, usize, usize), StoreError> {
                let meta = reader.index_metadata(&idle_id)?.expect("indexed");
                let files = reader.file_records(&meta.index_id)?;
                Ok((meta.status, files.len(), reader.projects()?.len()))
            };
            let _ = tx.send(read());
        });
        let answer = rx.recv_timeout(Duration::from_secs(20));
        drop(writer);
        let (status, files, projects) = answer.expect("a read waited for the writer").unwrap();
        assert_eq!((status, files, projects), (IndexStatus::Ready, 1, 1));
        // Reads see what a later write commits.
        store.set_index_status(&busy_index.index_id, IndexStatus::Stale, Some("test")).unwrap();
        assert_eq!(store.index_metadata(&busy.resource_id).unwrap().unwrap().status, IndexStatus::Stale);
    }

    #[test]
    fn corrupted_file_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        std::fs::write(&path, b"this is definitely not a sqlite database, just some text padding it out").unwrap();
        let err = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("not a valid agents database"));
        // and the file was left as it was
        assert!(std::fs::read(&path).unwrap().starts_with(b"this is definitely"));
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        drop(SqliteStore::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        assert!(matches!(SqliteStore::open(&path).unwrap_err(), StoreError::TooNew { found: 99, .. }));
    }

    #[test]
    fn projects_are_unique_and_sorted() {
        let store = SqliteStore::open_in_memory().unwrap();
        store.create_project("zeta").unwrap();
        store.create_project("alpha").unwrap();
        assert!(matches!(store.create_project("zeta"), Err(StoreError::AlreadyExists { .. })));
        let names: Vec<_> = store.projects().unwrap().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["alpha", "zeta"]);
    }

    #[test]
    fn resources_are_shared_between_projects_and_deleted_with_last_link() {
        let store = SqliteStore::open_in_memory().unwrap();
        let a = store.create_project("a").unwrap();
        let b = store.create_project("b").unwrap();
        let r1 = store.link_resource(&a.project_id, "/src/x", "x").unwrap();
        let r2 = store.link_resource(&b.project_id, "/src/x", "x").unwrap();
        assert_eq!(r1, r2);
        store.ensure_index(&r1.resource_id).unwrap();
        assert!(store.unlink_resource(&a.project_id, &r1.resource_id).unwrap());
        assert!(store.resource(&r1.resource_id).unwrap().is_some());
        assert!(store.unlink_resource(&b.project_id, &r1.resource_id).unwrap());
        assert!(store.resource(&r1.resource_id).unwrap().is_none());
        assert!(store.index_metadata(&r1.resource_id).unwrap().is_none());
        assert!(!store.unlink_resource(&b.project_id, &r1.resource_id).unwrap());
    }

    #[test]
    fn commit_replaces_files_and_marks_ready() {
        let (store, r, meta) = store_with_resource();
        assert_eq!(meta.status, IndexStatus::Pending);
        store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
        let commit = IndexCommit {
            upserts: vec![file("b.py", 'b', 5), file("a.py", 'a', 7)],
            file_count: 2,
            token_estimate: 12,
            primary_language: "python".into(),
            ..IndexCommit::default()
        };
        let done = store.commit_index(&meta.index_id, &commit).unwrap();
        assert_eq!(done.status, IndexStatus::Ready);
        assert_eq!(done.file_count, 2);
        let paths: Vec<_> = store.file_records(&meta.index_id).unwrap().into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["a.py", "b.py"]);

        let commit = IndexCommit {
            upserts: vec![file("a.py", 'c', 9)],
            touched: vec![("b.py".into(), "2026-02-02T00:00:00Z".into())],
            removed: vec![],
            skipped: vec![SkippedFile {
                path: "logo.png".into(),
                size_bytes: 3,
                last_modified: "2026-02-02T00:00:00Z".into(),
                reason: agents_core::indexing::SkipReason::Binary,
            }],
            file_count: 2,
            token_estimate: 14,
            primary_language: "python".into(),
            report: IndexReport { changed: 1, unchanged: 1, ..Default::default() },
            uko: crate::UkoCommit::default(),
        };
        store.commit_index(&meta.index_id, &commit).unwrap();
        let files = store.file_records(&meta.index_id).unwrap();
        assert_eq!(files[0].content_hash, "c".repeat(64));
        assert_eq!(files[1].last_modified, "2026-02-02T00:00:00Z");
        assert_eq!(store.last_report(&meta.index_id).unwrap().unwrap().changed, 1);
        assert_eq!(store.skipped_files(&meta.index_id).unwrap()[0].path, "logo.png");

        let bad = IndexCommit { removed: vec!["a.py".into()], ..IndexCommit::default() };
        assert!(matches!(store.commit_index(&meta.index_id, &bad), Err(StoreError::Invalid(_))));
        assert_eq!(store.file_records(&meta.index_id).unwrap().len(), 2, "a rejected commit changes nothing");
        let commit = IndexCommit { primary_language: "python".into(), ..bad };
        store.commit_index(&meta.index_id, &commit).unwrap();
        assert_eq!(store.file_records(&meta.index_id).unwrap().len(), 1);
        assert!(store.remove_index(&r.resource_id).unwrap());
        assert!(store.file_records(&meta.index_id).unwrap().is_empty());
    }

    #[test]
    fn status_transitions_and_lookup() {
        let (store, _, meta) = store_with_resource();
        store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
        assert_eq!(store.indexes_with_status(IndexStatus::Indexing).unwrap().len(), 1);
        store.set_index_status(&meta.index_id, IndexStatus::Error, Some("boom")).unwrap();
        let m = store.indexes_with_status(IndexStatus::Error).unwrap().remove(0);
        assert_eq!(m.error_message.as_deref(), Some("boom"));
        assert!(matches!(
            store.set_index_status("01ARZ3NDEKTSV4RRFFQ69G5FAV", IndexStatus::Ready, None),
            Err(StoreError::NotFound { .. })
        ));
    }

    fn execute(store: &SqliteStore, sql: &str) {
        store.conn().execute_batch(sql).unwrap();
    }

    fn settings(hot_max_tokens: i64) -> ProjectContextSettings {
        ProjectContextSettings::builder().hot_max_tokens(hot_max_tokens).build().unwrap()
    }

    #[test]
    fn project_context_round_trips_and_is_replaced_whole() {
        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("web").unwrap();
        assert_eq!(store.project_context(&p.project_id).unwrap(), None);

        let view = agents_core::policy::ContextView::builder().exclude_paths(["target"]).build().unwrap();
        let policy = ProjectContextPolicy::new("web").unwrap().with_view(Phase::Execute, view);
        store.set_project_context(&p.project_id, &policy, &settings(100)).unwrap();
        let (read_policy, read_settings) = store.project_context(&p.project_id).unwrap().unwrap();
        assert_eq!((&read_policy, &read_settings), (&policy, &settings(100)));
        assert!(!read_policy.allows_path(Phase::Apply, "target/x"), "views are rebuilt on read");

        let empty = ProjectContextPolicy::new("web").unwrap();
        store.set_project_context(&p.project_id, &empty, &settings(200)).unwrap();
        assert_eq!(store.project_context(&p.project_id).unwrap(), Some((empty, settings(200))));

        let unknown = store.set_project_context("NOPE", &policy, &settings(1)).unwrap_err();
        assert!(matches!(unknown, StoreError::NotFound { what: "project", .. }), "{unknown:?}");
        assert_eq!(store.project_context("NOPE").unwrap(), None);

        execute(&store, &format!("DELETE FROM projects WHERE project_id = '{}'", p.project_id));
        let rows: i64 = store.read(|c| c.query_row("SELECT COUNT(*) FROM project_context", [], |r| r.get(0))).unwrap();
        assert_eq!(rows, 0, "deleted with its project");
    }

    #[test]
    fn corrupt_project_context_is_a_clear_error() {
        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("web").unwrap();
        let policy = ProjectContextPolicy::new("web").unwrap();
        store.set_project_context(&p.project_id, &policy, &settings(1)).unwrap();
        for (column, value, field) in [
            ("settings_json", r#"{"hot_max_tokens":0}"#, "settings_json"),
            ("settings_json", "not json", "settings_json"),
            ("policy_json", r#"{"project":"web","views":{"review":{}}}"#, "policy_json"),
        ] {
            execute(&store, &format!("UPDATE project_context SET {column} = '{value}'"));
            let error = store.project_context(&p.project_id).unwrap_err();
            assert!(matches!(error, StoreError::CorruptRow { column, .. } if column == field), "{error:?}");
            assert!(error.to_string().contains(&format!("project_context row `{}`", p.project_id)), "{error}");
            store.set_project_context(&p.project_id, &policy, &settings(1)).unwrap();
        }
    }

    #[test]
    fn plans_keep_their_phase_and_project() {
        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("web").unwrap();
        let root = store.create_plan("root", None, Phase::Default, None).unwrap();
        let child = store.create_plan("child", Some(&root.plan_id), Phase::Execute, Some(&p.project_id)).unwrap();
        assert_eq!((child.phase.as_str(), child.project_id.as_deref()), ("execute", Some(p.project_id.as_str())));
        assert_eq!(store.plan(&child.plan_id).unwrap().as_ref(), Some(&child));
        assert_eq!(store.plans().unwrap(), vec![root.clone(), child]);
        assert_eq!((root.phase.as_str(), root.project_id), ("default", None));

        let error = store.create_plan("x", None, Phase::Apply, Some("NOPE")).unwrap_err();
        assert!(matches!(error, StoreError::NotFound { what: "project", .. }), "{error:?}");
        let error = store.create_plan("x", Some("NOPE"), Phase::Apply, None).unwrap_err();
        assert!(matches!(error, StoreError::NotFound { what: "plan", .. }), "{error:?}");
        assert_eq!(store.plans().unwrap().len(), 2);
    }

    #[test]
    fn settings_written_with_the_old_defaults_read_as_unset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        let old = |depth: &str, ratio: &str| {
            format!(
                r#"{{"hot_max_tokens":100,"warm_max_fragments":500,"cold_max_decisions":1000,"default_depth":{depth},"skeleton_ratio":{ratio}}}"#
            )
        };
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..9] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch("PRAGMA user_version = 9;").unwrap();
            for (id, name, settings) in [
                ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "a", old("3", "0.2")),
                ("01ARZ3NDEKTSV4RRFFQ69G5FAW", "b", old("7", "0.3")),
            ] {
                conn.execute(
                    "INSERT INTO projects (project_id, name, created_at) VALUES (?1, ?2, '2026-01-01T00:00:00Z')",
                    [id, name],
                )
                .unwrap();
                conn.execute(
                    "INSERT INTO project_context (project_id, policy_json, settings_json, updated_at) \
                     VALUES (?1, '{}', ?2, '2026-01-01T00:00:00Z')",
                    [id, settings.as_str()],
                )
                .unwrap();
            }
        }
        let _store = SqliteStore::open(&path).unwrap();
        let conn = Connection::open(&path).unwrap();
        let settings = |id: &str| -> serde_json::Value {
            let text: String = conn
                .query_row("SELECT settings_json FROM project_context WHERE project_id = ?1", [id], |r| r.get(0))
                .unwrap();
            serde_json::from_str(&text).unwrap()
        };
        let a = settings("01ARZ3NDEKTSV4RRFFQ69G5FAV");
        assert!(a.get("default_depth").is_none() && a.get("skeleton_ratio").is_none(), "{a}");
        assert_eq!(a["hot_max_tokens"], 100);
        let b = settings("01ARZ3NDEKTSV4RRFFQ69G5FAW");
        assert_eq!(
            (b["default_depth"].as_u64(), b["skeleton_ratio"].as_f64()),
            (Some(7), Some(0.3)),
            "chosen values stay"
        );
    }

    #[test]
    fn plans_written_before_phases_read_as_default() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..5] {
                conn.execute_batch(sql).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 5; INSERT INTO plans (plan_id, parent_id, title, created_at) \
                 VALUES ('01ARZ3NDEKTSV4RRFFQ69G5FAV', NULL, 'old', '2026-01-01T00:00:00Z');",
            )
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        let plan = store.plan("01ARZ3NDEKTSV4RRFFQ69G5FAV").unwrap().unwrap();
        assert_eq!((plan.title.as_str(), plan.phase.as_str(), plan.project_id), ("old", "default", None));
    }
}
