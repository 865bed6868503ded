//! One connection to the server with its cache of prepared statements, and
//! the mapping of PostgreSQL failures to [`StoreError`]s.

use std::collections::HashMap;
use std::path::PathBuf;

use agents_store::StoreError;
use postgres::binary_copy::BinaryCopyInWriter;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, NoTls, Row, Statement};

/// Parameters of a statement.
pub type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

/// A connection, the statements prepared on it (by their SQL), and the
/// server's redacted URL for errors.
pub struct Conn {
    client: Client,
    cache: HashMap<String, Statement>,
    location: String,
    /// A rollback failed: the connection's state is unknown, so it is not reused.
    poisoned: bool,
}

impl Conn {
    /// Connects with `config`; `location` is the redacted URL errors name.
    pub(crate) fn connect(config: &postgres::Config, location: &str) -> Result<Conn, StoreError> {
        let client = config.connect(NoTls).map_err(|e| StoreError::Server {
            location: location.to_owned(),
            message: format!("cannot connect: {}", describe(&e)),
        })?;
        Ok(Conn { client, cache: HashMap::new(), location: location.to_owned(), poisoned: false })
    }

    /// The error of a failed statement, naming the server.
    pub fn err(&self, e: postgres::Error) -> StoreError {
        classify(&self.location, e)
    }

    /// The error of a failed statement; a connection the server ended (a
    /// restart, an administrator) is marked lost, so it is not reused and a
    /// read on it is tried again on a new one.
    fn fail(&mut self, e: postgres::Error) -> StoreError {
        let ended = e.is_closed()
            || e.code().is_some_and(|c| {
                *c == SqlState::ADMIN_SHUTDOWN || *c == SqlState::CRASH_SHUTDOWN || *c == SqlState::CANNOT_CONNECT_NOW
            });
        if ended {
            self.poisoned = true;
        }
        classify(&self.location, e)
    }

    /// Whether the connection is gone or unusable (closed, ended by the
    /// server, or left in an unknown state).
    pub(crate) fn is_lost(&self) -> bool {
        self.poisoned || self.client.is_closed()
    }

    /// Runs statements without parameters or results.
    pub fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client.batch_execute(sql).map_err(|e| self.fail(e))
    }

    /// Rolls back the open transaction; a connection where that fails is
    /// not reused.
    pub fn rollback(&mut self) {
        if self.client.batch_execute("ROLLBACK").is_err() {
            self.poisoned = true;
        }
    }

    fn statement(&mut self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(st) = self.cache.get(sql) {
            return Ok(st.clone());
        }
        let st = match self.client.prepare(sql) {
            Ok(st) => st,
            Err(e) => return Err(self.fail(e)),
        };
        self.cache.insert(sql.to_owned(), st.clone());
        Ok(st)
    }

    /// Every row of a query (prepared once per connection).
    pub fn query(&mut self, sql: &str, params: Params<'_>) -> Result<Vec<Row>, StoreError> {
        let st = self.statement(sql)?;
        match self.client.query(&st, params) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The row of a query returning at most one.
    pub fn query_opt(&mut self, sql: &str, params: Params<'_>) -> Result<Option<Row>, StoreError> {
        let st = self.statement(sql)?;
        match self.client.query_opt(&st, params) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The row of a query returning exactly one.
    pub fn query_one(&mut self, sql: &str, params: Params<'_>) -> Result<Row, StoreError> {
        let st = self.statement(sql)?;
        match self.client.query_one(&st, params) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Runs a statement; the number of rows it changed.
    pub fn execute(&mut self, sql: &str, params: Params<'_>) -> Result<u64, StoreError> {
        let st = self.statement(sql)?;
        match self.client.execute(&st, params) {
            Ok(value) => Ok(value),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Loads rows with `sql` (`COPY table (columns) FROM STDIN (FORMAT
    /// binary)`, columns of `types`): `rows` writes them, all in one stream,
    /// without a round trip per row or per statement. The number of rows loaded.
    pub fn copy_in(
        &mut self,
        sql: &str,
        types: &[Type],
        rows: impl FnOnce(&mut BinaryCopyInWriter<'_>) -> Result<(), postgres::Error>,
    ) -> Result<u64, StoreError> {
        let result = (|| {
            let mut writer = BinaryCopyInWriter::new(self.client.copy_in(sql)?, types);
            rows(&mut writer)?;
            writer.finish()
        })();
        result.map_err(|e| self.fail(e))
    }

    /// The server's redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }
}

/// Maps a PostgreSQL failure to the error users can act on.
pub(crate) fn classify(location: &str, e: postgres::Error) -> StoreError {
    match e.code() {
        Some(code) if *code == SqlState::LOCK_NOT_AVAILABLE || *code == SqlState::T_R_DEADLOCK_DETECTED => {
            StoreError::Locked { path: PathBuf::from(location) }
        }
        _ => StoreError::Server { location: location.to_owned(), message: describe(&e) },
    }
}

/// A failure in words: the server's own message (with its detail and hint)
/// when it sent one, else the client's.
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(hint) = db.hint() {
                text.push_str(&format!("; hint: {hint}"));
            }
            text
        }
        None => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !text.contains(&more) {
                    text.push_str(&format!(": {more}"));
                }
                source = s.source();
            }
            text
        }
    }
}
