//! Errors of the store, each naming the database it concerns.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: not a valid agents database (corrupted or not SQLite): {source}", path = path.display())]
    Corrupt { path: PathBuf, source: rusqlite::Error },
    #[error("{path}: database is locked by another process; try again when it finishes", path = path.display())]
    Locked { path: PathBuf },
    #[error("{path}: database was written by a newer agents (schema version {found}, this build knows {known})", path = path.display())]
    TooNew { path: PathBuf, found: i64, known: i64 },
    #[error("{path}: {source}", path = path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    #[error("{path}: cannot create the database directory: {source}", path = path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{what} `{name}` already exists")]
    AlreadyExists { what: &'static str, name: String },
    #[error("{what} `{name}` not found")]
    NotFound { what: &'static str, name: String },
    #[error("stored value is invalid: {0}")]
    Invalid(#[from] agents_core::ValidationError),
    /// A database server failed or refused a request; `location` names it
    /// (a URL with its password redacted).
    #[error("{location}: {message}")]
    Server { location: String, message: String },
    #[error("{path}: {table} row `{key}` holds invalid {column}: {message}", path = path.display())]
    CorruptRow { path: PathBuf, table: &'static str, key: String, column: &'static str, message: String },
}
