//! [`SqliteStore`]: the embedded implementation of the store's role traits
//! (and so of [`crate::Store`]).
//!
//! This module holds the connection handling (one write connection, a pool
//! of read connections, migrations, error classification); each role's
//! queries live in a module of their own: `projects`, `file_index` (with the
//! indexing run's transaction), `code_graph` (reads; `uko_sql` has the
//! graph's SQL), `plans`, `search_state` and `warm`.

mod code_graph;
mod file_index;
mod hashes;
mod plans;
mod projects;
mod search_state;
mod uko_sql;
mod warm;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, Transaction};

use crate::StoreError;
use crate::migrations::MIGRATIONS;

/// How long a writer waits for another writer (an indexing run holds the
/// write lock for its whole duration) before reporting `Locked`.
const BUSY_TIMEOUT: Duration = Duration::from_secs(300);

/// The schema version whose migration drops the old (large) code graph.
const COMPACT_GRAPH_VERSION: i64 = 11;

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
        keep_plans(&conn).map_err(err)?;
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
        // Foreign keys are off while the schema changes: with them on,
        // dropping a table deletes its rows one by one and checks each
        // against every reference to it (quadratic for the old graph, whose
        // revisions referred to each other unindexed). The pragma does
        // nothing inside a transaction, so it is set around it.
        conn.execute_batch("PRAGMA foreign_keys = OFF").map_err(err)?;
        let migrated = Self::apply_migrations(&mut conn, known).map_err(|e| match e {
            Ok(e) => err(e),
            Err(found) => StoreError::TooNew { path: self.path.clone(), found, known },
        });
        let restored = conn.execute_batch("PRAGMA foreign_keys = ON").map_err(err);
        let version = migrated?;
        restored?;
        if (1..COMPACT_GRAPH_VERSION).contains(&version) {
            // The old graph's pages are free now: give them back to the file
            // system while the database is small (best effort: another
            // process reading it makes VACUUM wait, then give up).
            if let Err(e) = conn.execute_batch("VACUUM") {
                tracing::warn!("{}: could not reclaim the old code graph's space: {e}", self.path.display());
            }
        }
        Ok(())
    }

    /// Applies the pending migrations in one transaction; returns the
    /// version found. `Err(Err(found))`: the database is newer than `known`.
    fn apply_migrations(conn: &mut Connection, known: i64) -> Result<i64, Result<rusqlite::Error, i64>> {
        // Read the version again under the write lock: another process may
        // have migrated between our read and our lock.
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(Ok)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(Ok)?;
        if version > known {
            return Err(Err(version));
        }
        for sql in MIGRATIONS.iter().skip(version as usize) {
            tx.execute_batch(sql).map_err(Ok)?;
        }
        tx.pragma_update(None, "user_version", known).map_err(Ok)?;
        tx.commit().map_err(Ok)?;
        Ok(version)
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
        keep_plans(&conn).map_err(err)?;
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
}

/// Turns on SQLite's query planner stability guarantee: a statement keeps
/// the plan it was prepared with whatever its parameters are bound to.
/// Without it, SQLite marks a parameter that its planner compared with a
/// constant (a bound id joined to another table's column: every node query,
/// `Graph::find`) as able to change the plan, and a statement re-binding it
/// is compiled again at its next step: every cached join was re-prepared
/// on every call (300 file-node reads 43 ms -> 17 ms). The store has no
/// `sqlite_stat4` statistics, so no plan depended on values anyway.
fn keep_plans(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map(|_| ())
}

#[cfg(test)]
mod tests {
    use agents_core::indexing::IndexStatus;
    use agents_core::policy::ProjectContextPolicy;
    use agents_core::project_context::ProjectContextSettings;

    use super::*;
    use crate::conformance::file;
    use crate::{FileIndexStore, IndexCommit, PlanStore, ProjectStore};

    /// A cached join re-bound to other values keeps its compiled program, on
    /// the writer's connection and on a reader's.
    #[test]
    fn cached_joins_are_not_compiled_again_per_call() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("agents.db")).unwrap();
        let sql = "SELECT g.graph_id FROM uko_graphs g JOIN repo_indexes r ON r.index_id = g.index_id \
                   WHERE g.index_id = ?1";
        let check = |conn: &Connection| {
            use rusqlite::OptionalExtension;
            for id in ["a", "b", "c"] {
                let row = conn.prepare_cached(sql).unwrap().query_row([id], |r| r.get::<_, i64>(0)).optional();
                assert_eq!(row.unwrap(), None);
            }
            let st = conn.prepare_cached(sql).unwrap();
            assert_eq!(st.get_status(rusqlite::StatementStatus::RePrepare), 0);
        };
        check(&store.conn());
        check(&store.open_reader().unwrap());
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

    fn execute(store: &SqliteStore, sql: &str) {
        store.conn().execute_batch(sql).unwrap();
    }

    fn settings(hot_max_tokens: i64) -> ProjectContextSettings {
        ProjectContextSettings::builder().hot_max_tokens(hot_max_tokens).build().unwrap()
    }

    #[test]
    fn project_context_is_deleted_with_its_project() {
        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("web").unwrap();
        store.set_project_context(&p.project_id, &ProjectContextPolicy::new("web").unwrap(), &settings(1)).unwrap();
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

    /// A database of schema version 10 (URIs, paths and hashes as text on
    /// every graph row, the ULID on every search-state row) upgrades to the
    /// compact tables: its old graph is dropped, its file list forgotten so
    /// the next refresh analyses every file, and a run written afterwards
    /// reads back; its search state is converted.
    #[test]
    fn a_version_10_graph_is_replaced_and_rebuilt_by_the_next_run() {
        use crate::conformance::code_graph::two_files;
        use crate::{CodeGraphStore, SearchStateStore, UkoCommit};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.db");
        let (index, resource) = ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW");
        {
            let conn = Connection::open(&path).unwrap();
            for sql in &MIGRATIONS[..10] {
                conn.execute_batch(sql).unwrap();
            }
            let uri = format!("uko://{resource}/a.py");
            conn.execute_batch(&format!(
                "PRAGMA user_version = 10;
                 INSERT INTO projects VALUES ('01ARZ3NDEKTSV4RRFFQ69G5FAX', 'demo', '2026-01-01T00:00:00Z');
                 INSERT INTO resources VALUES ('{resource}', '/src/demo', 'demo', '2026-01-01T00:00:00Z');
                 INSERT INTO project_resources VALUES ('01ARZ3NDEKTSV4RRFFQ69G5FAX', '{resource}', '2026-01-01T00:00:00Z');
                 INSERT INTO repo_indexes (index_id, resource_id, indexed_at, status, created_at)
                     VALUES ('{index}', '{resource}', '2026-01-01T00:00:00Z', 'ready', '2026-01-01T00:00:00Z');
                 INSERT INTO indexed_files VALUES ('{index}', 'a.py', '{hash}', 7, 28, 'python', '2026-01-01T00:00:00Z');
                 INSERT INTO uko_nodes (index_id, uri, path, symbol_path, kind, name, parent_uri, language,
                     start_byte, end_byte, start_line, start_col, end_line, end_col, content_hash, valid_from, is_current)
                     VALUES ('{index}', '{uri}', 'a.py', '', 'file', 'a.py', NULL, 'python', 0, 28, 1, 0, 2, 0,
                     '{hash}', '2026-01-01T00:00:00Z', 1);
                 INSERT INTO uko_refs (index_id, path, from_uri, kind, target, target_name, names, system, line)
                     VALUES ('{index}', 'a.py', '{uri}', 'import', 'os', 'os', '[]', 1, 1);
                 INSERT INTO search_state VALUES ('{index}', 'tantivy', 'a.py', '{hash}'),
                     ('{index}', 'tantivy', 'b.py', 'not-hex'), ('{index}', 'vectors', 'a.py', '{hash}');
                 INSERT INTO search_digest VALUES ('{index}', 'tantivy', 'd1');",
                hash = "a".repeat(64),
            ))
            .unwrap();
        }
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
        // The search state is converted, not dropped: no search index is rebuilt.
        let state = |backend: &str| store.search_state(index, backend).unwrap();
        let hash = "a".repeat(64);
        assert_eq!(state("tantivy"), [("a.py".to_owned(), hash.clone()), ("b.py".to_owned(), "not-hex".to_owned())]);
        assert_eq!(state("vectors"), [("a.py".to_owned(), hash)]);
        assert_eq!(store.search_digest(index, "tantivy").unwrap().as_deref(), Some("d1"));
        let blobs: i64 = store
            .read(|c| {
                c.query_row("SELECT COUNT(*) FROM search_state WHERE length(content_hash) = 32", [], |r| r.get(0))
            })
            .unwrap();
        assert_eq!(blobs, 2, "hex hashes are stored as bytes");
        assert!(store.file_records(index).unwrap().is_empty(), "the next refresh reads every file again");
        assert!(store.uko_all_nodes(index).unwrap().is_empty() && store.uko_all_refs(index).unwrap().is_empty());
        let old_columns: i64 = store
            .read(|c| {
                c.query_row("SELECT COUNT(*) FROM pragma_table_info('uko_nodes') WHERE name = 'uri'", [], |r| r.get(0))
            })
            .unwrap();
        assert_eq!(old_columns, 0, "no stored URIs");

        // The next run writes the graph anew, through the first-index path.
        let files = two_files(resource);
        let mut writer = store.begin_index_write(index).unwrap();
        for f in &files {
            writer.write_nodes(&f.path, &f.nodes).unwrap();
        }
        for f in &files {
            writer.write_refs(&f.path, &f.refs).unwrap();
        }
        let commit = IndexCommit {
            upserts: vec![file("a.py", 'a', 7), file("b.py", 'b', 5)],
            file_count: 2,
            token_estimate: 12,
            primary_language: "python".into(),
            uko: UkoCommit::default(),
            ..IndexCommit::default()
        };
        writer.finish(&commit).unwrap();
        let mut nodes: Vec<_> = files.iter().flat_map(|f| f.nodes.clone()).collect();
        nodes.sort_by(|a, b| a.uri.cmp(&b.uri));
        let read: Vec<_> = store.uko_all_nodes(index).unwrap().into_iter().map(|n| n.node).collect();
        assert_eq!(read, nodes);
        let refs: Vec<_> = files.iter().flat_map(|f| f.refs.clone()).collect();
        assert_eq!(store.uko_all_refs(index).unwrap(), refs);
        assert_eq!(store.file_records(index).unwrap().len(), 2);
        // Removing the index removes its graph.
        assert!(store.remove_index(resource).unwrap());
        let left: i64 = store
            .read(|c| {
                c.query_row(
                    "SELECT (SELECT COUNT(*) FROM uko_graphs) + (SELECT COUNT(*) FROM uko_paths) \
                     + (SELECT COUNT(*) FROM uko_strings) + (SELECT COUNT(*) FROM uko_nodes) \
                     + (SELECT COUNT(*) FROM uko_refs) + (SELECT COUNT(*) FROM search_state) \
                     + (SELECT COUNT(*) FROM search_sets)",
                    [],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(left, 0);
    }

    /// Hex content hashes are stored as their 32 bytes (and read back as
    /// hex), other hashes as text; a node whose URI is not the one its path
    /// and symbol path derive is refused, naming the field.
    #[test]
    fn hashes_are_blobs_and_uris_must_derive_from_paths() {
        use crate::conformance::code_graph::two_files;
        use crate::{CodeGraphStore, ProjectStore, UkoCommit};

        let store = SqliteStore::open_in_memory().unwrap();
        let p = store.create_project("demo").unwrap();
        let r = store.link_resource(&p.project_id, "/src/demo", "demo").unwrap();
        let index = store.ensure_index(&r.resource_id).unwrap().index_id;
        let mut files = two_files(&r.resource_id);
        let hex = "0123456789abcdef".repeat(4);
        files[0].nodes[0].content_hash = hex.clone();
        let commit = |files: Vec<crate::UkoFile>| IndexCommit {
            uko: UkoCommit { files, ..UkoCommit::default() },
            primary_language: "python".into(),
            ..IndexCommit::default()
        };
        store.commit_index(&index, &commit(files.clone())).unwrap();
        let node = store.uko_node(&index, &files[0].nodes[0].uri).unwrap().unwrap();
        assert_eq!(node.node.content_hash, hex);
        let kinds: Vec<(String, i64)> = store
            .read(|c| {
                let mut st = c.prepare(
                    "SELECT typeof(content_hash), length(content_hash) FROM uko_nodes ORDER BY node_id LIMIT 2",
                )?;
                st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
            })
            .unwrap();
        assert_eq!(kinds, [("blob".to_owned(), 32), ("text".to_owned(), 12)]);

        let mut bad = files[1].clone();
        bad.nodes[1].uri = format!("uko://{}/elsewhere.py#helper", r.resource_id);
        let error = store.commit_index(&index, &commit(vec![bad])).unwrap_err();
        assert!(error.to_string().contains("invalid UkoNode.uri"), "{error}");
        assert!(error.to_string().contains("elsewhere.py#helper"), "{error}");
        assert!(store.uko_node(&index, &files[1].nodes[1].uri).unwrap().is_some(), "nothing of it was written");
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
