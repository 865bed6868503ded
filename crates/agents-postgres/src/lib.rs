//! The team server store: every role of `agents-store` on PostgreSQL, and the
//! text and vector search backends of `agents-search` on the same server, so
//! many machines share one index.
//!
//! [`PostgresStore`] implements [`agents_store::Store`] and
//! [`agents_store::WarmTierStore`] and passes the store conformance suite
//! (`tests/conformance.rs`). Its guarantees are the traits', kept with
//! PostgreSQL's means instead of SQLite's single writer:
//! - every method is one transaction; an indexing run
//!   ([`agents_store::FileIndexStore::begin_index_write`]) is one transaction
//!   from its first row to [`agents_store::IndexWrite::finish`], so readers
//!   (MVCC snapshots) see the state before the run or after it;
//! - one indexer per index at a time, across machines: a run and a commit
//!   take the transaction-scoped advisory lock of their index
//!   (`pg_advisory_xact_lock`), waiting at most five minutes
//!   ([`agents_store::StoreError::Locked`] after that);
//! - versioned migrations recorded in `agents_schema_version`, applied under
//!   an advisory lock so two processes never migrate at once; a schema from a
//!   newer build is [`agents_store::StoreError::TooNew`];
//! - every text column sorts bytewise (`COLLATE "C"`), as SQLite does, so
//!   every listing is in the same order whatever the server's locale.
//!
//! Errors name the server by its URL with the password replaced by `***`
//! ([`redact_url`]); the password is never logged or printed.
//!
//! [`text::PgTextBackend`] (full text over tokens split by agents-search's
//! own analyzer, ranked by BM25 in SQL) and [`vector::PgVectorBackend`]
//! (pgvector, HNSW, cosine) implement the search traits on the server.

mod code_graph;
mod conn;
mod file_index;
mod migrations;
mod plans;
mod projects;
mod search_state;
pub mod text;
pub mod vector;
mod warm;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use agents_store::StoreError;

pub use conn::Conn;

/// How long a connection attempt waits for the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections kept for reuse; more are opened while more callers run
/// at once, and closed when they finish.
const IDLE_CONNECTIONS: usize = 8;

/// A URL as it may be shown: the password replaced by `***` (the
/// configuration's own redaction, which `agents config show` uses too).
pub use agents_core::config::redact_url;

/// The PostgreSQL store. Connections come from a small pool of its own;
/// each carries a cache of prepared statements.
pub struct PostgresStore {
    /// The URL with the password redacted: what errors name.
    location: String,
    config: postgres::Config,
    idle: Mutex<Vec<Conn>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("location", &self.location).finish()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`)
    /// and applies pending migrations.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::open_with(url, None)
    }

    /// [`PostgresStore::open`] with every table in the schema `schema`
    /// (created if missing; `public` stays on the search path for the
    /// `vector` type): several stores in one database, as tests use.
    pub fn open_in_schema(url: &str, schema: &str) -> Result<PostgresStore, StoreError> {
        PostgresStore::open_with(url, Some(schema))
    }

    fn open_with(url: &str, schema: Option<&str>) -> Result<PostgresStore, StoreError> {
        let location = match schema {
            Some(s) => format!("{} (schema {s})", redact_url(url)),
            None => redact_url(url),
        };
        let mut config: postgres::Config = url.parse().map_err(|e: postgres::Error| StoreError::Server {
            location: location.clone(),
            message: format!("not a valid PostgreSQL URL: {}", strip_secrets(&e.to_string(), url)),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            // What `pg_stat_activity` shows the server's administrator.
            match schema {
                Some(schema) => config.application_name(&format!("agents/{schema}")),
                None => config.application_name("agents"),
            };
        }
        if let Some(schema) = schema {
            if !schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || schema.is_empty() {
                return Err(StoreError::Server {
                    location,
                    message: format!("schema name `{schema}` must be letters, digits and `_`"),
                });
            }
            config.options(&format!("-c search_path={schema},public"));
        }
        let store = PostgresStore { location, config, idle: Mutex::new(Vec::new()) };
        if let Some(schema) = schema {
            let mut conn = store.conn()?;
            conn.batch(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))?;
        }
        store.migrate()?;
        Ok(store)
    }

    /// The server's URL with the password redacted.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        let mut conn = self.conn()?;
        migrations::version(&mut conn)
    }

    /// A connection from the pool (or a new one); it goes back when dropped.
    pub fn conn(&self) -> Result<Pooled<'_>, StoreError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(conn) if !conn.is_lost() => conn,
            _ => Conn::connect(&self.config, &self.location)?,
        };
        Ok(Pooled { store: self, conn: Some(conn) })
    }

    /// A connection of its own, outside the pool: for a search backend's
    /// write transaction, open across calls until its commit.
    pub fn dedicated(&self) -> Result<Conn, StoreError> {
        Conn::connect(&self.config, &self.location)
    }

    /// A search backend's write transaction: a [`PostgresStore::dedicated`]
    /// connection in a transaction holding the advisory lock named `lock`
    /// (one writer per index across machines), waiting for it at most 300 s.
    pub(crate) fn begin_locked(&self, lock: &str) -> Result<Conn, StoreError> {
        let mut conn = self.dedicated()?;
        conn.batch("BEGIN")?;
        conn.batch("SET LOCAL lock_timeout = '300s'")?;
        conn.query_one("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", &[&lock])?;
        Ok(conn)
    }

    fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.conn()?;
        migrations::migrate(&mut conn)
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, rolled
    /// back otherwise.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        if let Err(e) = conn.batch("BEGIN") {
            // Nothing was done: a connection the server dropped is replaced once.
            if !conn.is_lost() {
                return Err(e);
            }
            drop(conn);
            self.drop_idle();
            conn = self.conn()?;
            conn.batch("BEGIN")?;
        }
        match f(&mut conn) {
            Ok(value) => {
                conn.batch("COMMIT")?;
                Ok(value)
            }
            Err(e) => {
                conn.rollback();
                Err(e)
            }
        }
    }

    /// Runs `f`, whose statements each see the last commit, on a pooled
    /// connection. A read on a connection the server dropped meanwhile (a
    /// restart, an idle timeout) is run once more on a new one.
    pub(crate) fn read<T>(&self, f: impl Fn(&mut Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        match f(&mut conn) {
            Err(_) if conn.is_lost() => {
                drop(conn);
                self.drop_idle();
                let mut fresh = self.conn()?;
                f(&mut fresh)
            }
            result => result,
        }
    }

    /// Closes the idle connections: after one was found dropped by the
    /// server, the others likely were too.
    fn drop_idle(&self) {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Runs `f` in one read-only snapshot: several statements that must agree.
    pub(crate) fn snapshot<T>(&self, f: impl FnOnce(&mut Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let mut conn = self.conn()?;
        conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
        let result = f(&mut conn);
        conn.rollback();
        result
    }

    /// A path-like name of the server for the store's errors that carry one.
    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(&self.location)
    }
}

/// What a connection error may print: the URL's password never.
fn strip_secrets(message: &str, url: &str) -> String {
    let mut out = message.to_owned();
    if let Some(password) = password_of(url)
        && !password.is_empty()
    {
        out = out.replace(&password, "***");
    }
    out
}

/// The password of a URL's user-info part, if any.
fn password_of(url: &str) -> Option<String> {
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let userinfo = &authority[..authority.rfind('@')?];
    Some(userinfo[userinfo.find(':')? + 1..].to_owned())
}

/// A pooled connection; returned to the pool when dropped (unless closed).
pub struct Pooled<'a> {
    store: &'a PostgresStore,
    conn: Option<Conn>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        // Some from construction until drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!("a pooled connection is present until dropped"))
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().unwrap_or_else(|| unreachable!("a pooled connection is present until dropped"))
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !conn.is_lost()
        {
            let mut idle = self.store.idle.lock().unwrap_or_else(|p| p.into_inner());
            if idle.len() < IDLE_CONNECTIONS {
                idle.push(conn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact_url("postgres://agents:s3cret@db:5432/agents"), "postgres://agents:***@db:5432/agents");
        assert_eq!(redact_url("postgres://agents@db/agents"), "postgres://agents@db/agents");
        assert_eq!(
            redact_url("postgres://db/agents?user=a&password=s3cret&x=1"),
            "postgres://db/agents?user=a&password=***&x=1"
        );
        assert_eq!(redact_url("host=db password=s3cret user=a"), "host=db password=*** user=a");
        assert_eq!(redact_url("postgres://a:p@ss@db/x"), "postgres://a:***@db/x");
    }

    #[test]
    fn a_bad_url_is_a_clear_error_without_the_password() {
        let error = PostgresStore::open("postgres://agents:s3cret@db:notaport/agents").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("not a valid PostgreSQL URL"), "{text}");
        assert!(text.contains("postgres://agents:***@db:notaport/agents"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }

    #[test]
    fn a_refused_connection_is_a_clear_error_without_the_password() {
        // Port 1 on localhost: nothing listens there.
        let error = PostgresStore::open("postgres://agents:s3cret@127.0.0.1:1/agents").unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, StoreError::Server { .. }), "{error:?}");
        assert!(text.starts_with("postgres://agents:***@127.0.0.1:1/agents: cannot connect"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
    }
}
