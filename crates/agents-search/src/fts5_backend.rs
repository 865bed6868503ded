//! The SQLite FTS5 text backend: the alternative to Tantivy behind [`TextBackend`].
//!
//! FTS5's tokenizers know nothing of camelCase, so the documents are split here by
//! [`crate::search_tokens`] and the token stream is stored joined by spaces; FTS5 then only
//! has to split on spaces. Tokens outside `[a-z0-9_]` (`store.rs`, `größe`) are stored
//! hex-encoded behind a `$` (a character the analyzer never emits), so FTS5's
//! tokenizer, whose idea of letters and case differs from Rust's, never sees them.
//!
//! Layout of `fts5.db` (WAL):
//! - `text_docs(rowid, id UNIQUE, path, kind)`: the raw keys, for replacement, deletion by
//!   path, filters and hits;
//! - `text_fts`: a contentless FTS5 table (`contentless_delete=1`) with one column per
//!   analyzed field, sharing rowids with `text_docs`.
//!
//! Scores are `-bm25(text_fts, <field boosts>)`. Writes go through one connection inside
//! a transaction opened on the first write and committed by `commit`; searches use a
//! second connection, so they see committed data only, as with Tantivy.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{Connection, params, params_from_iter};

use crate::{
    SearchError, SearchFilter, TEXT_FIELDS, TextBackend, TextDoc, TextHit, field_texts, query_tokens, sort_hits,
};

/// File name of the database inside the backend directory.
const DATABASE_FILE: &str = "fts5.db";

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS text_docs (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    kind TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS text_docs_path ON text_docs(path);
CREATE VIRTUAL TABLE IF NOT EXISTS text_fts USING fts5(
    name, signature, path, doc, body, kind,
    content = '', contentless_delete = 1,
    tokenize = \"unicode61 remove_diacritics 0 tokenchars '_$'\"
);
";

pub(crate) struct Fts5Backend {
    path: PathBuf,
    /// Written through `&mut self` only; the mutex makes the backend `Sync`.
    writer: Mutex<Connection>,
    /// Whether `writer` is inside a transaction that `commit` must end.
    in_transaction: bool,
    reader: Mutex<Connection>,
}

impl Fts5Backend {
    pub(crate) fn open(dir: &Path) -> Result<Fts5Backend, SearchError> {
        let path = dir.join(DATABASE_FILE);
        let error = |action| {
            let path = path.clone();
            move |source| SearchError::Sqlite { path, action, source }
        };
        let writer = Connection::open(&path).map_err(error("open database"))?;
        writer
            .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;")
            .map_err(error("configure database"))?;
        writer.execute_batch(SCHEMA).map_err(error("create tables"))?;
        let reader = Connection::open(&path).map_err(error("open database"))?;
        reader.execute_batch("PRAGMA busy_timeout = 5000;").map_err(error("configure database"))?;
        tracing::debug!(path = %path.display(), "opened fts5 text index");
        Ok(Fts5Backend { path, writer: Mutex::new(writer), in_transaction: false, reader: Mutex::new(reader) })
    }

    /// Opens an existing database for searching only (both connections
    /// read-only, `immutable`: no locks, no WAL or shared-memory files, so a
    /// reader keeps working when the folder is replaced under it); a missing
    /// database is an error. For a finished index no writer changes anymore.
    pub(crate) fn open_read_only(dir: &Path) -> Result<Fts5Backend, SearchError> {
        let path = dir.join(DATABASE_FILE);
        let mut uri = String::from("file:");
        for byte in path.to_string_lossy().bytes() {
            if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
                uri.push(char::from(byte));
            } else {
                let _ = write!(uri, "%{byte:02X}");
            }
        }
        uri.push_str("?immutable=1");
        let open = || {
            let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                | rusqlite::OpenFlags::SQLITE_OPEN_URI
                | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
            let connection = Connection::open_with_flags(&uri, flags).map_err(|source| SearchError::Sqlite {
                path: path.clone(),
                action: "open database",
                source,
            })?;
            connection.execute_batch("PRAGMA busy_timeout = 5000;").map_err(|source| SearchError::Sqlite {
                path: path.clone(),
                action: "configure database",
                source,
            })?;
            Ok::<_, SearchError>(connection)
        };
        let (writer, reader) = (open()?, open()?);
        Ok(Fts5Backend {
            path: path.clone(),
            writer: Mutex::new(writer),
            in_transaction: false,
            reader: Mutex::new(reader),
        })
    }

    fn error(&self, action: &'static str) -> impl Fn(rusqlite::Error) -> SearchError + '_ {
        move |source| SearchError::Sqlite { path: self.path.clone(), action, source }
    }

    /// Opens the write transaction that `commit` ends, unless one is open.
    fn begin(&mut self) -> Result<(), SearchError> {
        if !self.in_transaction {
            self.writer()?.execute_batch("BEGIN IMMEDIATE").map_err(self.error("begin transaction"))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    fn writer(&self) -> Result<std::sync::MutexGuard<'_, Connection>, SearchError> {
        self.writer.lock().map_err(|_| SearchError::Poisoned { path: self.path.clone() })
    }

    fn reader(&self) -> Result<std::sync::MutexGuard<'_, Connection>, SearchError> {
        self.reader.lock().map_err(|_| SearchError::Poisoned { path: self.path.clone() })
    }
}

/// The indexed form of one field: its tokens, encoded, joined by spaces.
fn indexed_text(text: &str) -> String {
    let mut indexed = String::new();
    for token in crate::search_tokens(text) {
        if !indexed.is_empty() {
            indexed.push(' ');
        }
        push_encoded(&mut indexed, &token);
    }
    indexed
}

/// Appends `token` as FTS5 will see it: unchanged when made of `[a-z0-9_]`, else `$` and
/// the hex of its UTF-8 bytes.
fn push_encoded(out: &mut String, token: &str) {
    if token.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        out.push_str(token);
    } else {
        out.push('$');
        for byte in token.bytes() {
            let _ = write!(out, "{byte:02x}");
        }
    }
}

/// An FTS5 MATCH expression: the OR of the encoded tokens, each quoted.
fn match_expression(tokens: &[String]) -> String {
    let mut expression = String::new();
    for token in tokens {
        if !expression.is_empty() {
            expression.push_str(" OR ");
        }
        expression.push('"');
        push_encoded(&mut expression, token);
        expression.push('"');
    }
    expression
}

impl TextBackend for Fts5Backend {
    fn name(&self) -> &'static str {
        crate::TextBackendKind::Fts5.as_str()
    }

    fn upsert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        self.begin()?;
        let writer = self.writer()?;
        let mut upsert_key = writer
            .prepare_cached(
                "INSERT INTO text_docs (id, path, kind) VALUES (?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET path = excluded.path, kind = excluded.kind
                 RETURNING rowid",
            )
            .map_err(self.error("prepare upsert"))?;
        let mut delete_text =
            writer.prepare_cached("DELETE FROM text_fts WHERE rowid = ?1").map_err(self.error("prepare upsert"))?;
        let mut insert_text = writer
            .prepare_cached(
                "INSERT INTO text_fts (rowid, name, signature, path, doc, body, kind)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .map_err(self.error("prepare upsert"))?;
        for doc in docs {
            let rowid: i64 = upsert_key
                .query_row(params![doc.id, doc.path, doc.kind], |row| row.get(0))
                .map_err(self.error("store document key"))?;
            delete_text.execute([rowid]).map_err(self.error("replace document"))?;
            let [name, signature, path, doc_text, body, kind] = field_texts(doc).map(indexed_text);
            insert_text
                .execute(params![rowid, name, signature, path, doc_text, body, kind])
                .map_err(self.error("index document"))?;
        }
        Ok(())
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.begin()?;
        let writer = self.writer()?;
        let mut delete_text = writer
            .prepare_cached("DELETE FROM text_fts WHERE rowid IN (SELECT rowid FROM text_docs WHERE path = ?1)")
            .map_err(self.error("prepare delete"))?;
        let mut delete_keys =
            writer.prepare_cached("DELETE FROM text_docs WHERE path = ?1").map_err(self.error("prepare delete"))?;
        for path in paths {
            delete_text.execute([path]).map_err(self.error("delete documents"))?;
            delete_keys.execute([path]).map_err(self.error("delete documents"))?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        if self.in_transaction {
            self.writer()?.execute_batch("COMMIT").map_err(self.error("commit"))?;
            self.in_transaction = false;
        }
        Ok(())
    }

    fn search(&self, query: &str, limit: usize, filter: &SearchFilter) -> Result<Vec<TextHit>, SearchError> {
        let tokens = query_tokens(query);
        if tokens.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let weights: Vec<String> = TEXT_FIELDS.iter().map(|(_, boost)| format!("{boost:?}")).collect();
        let mut sql = format!(
            "SELECT d.id, d.path, bm25(text_fts, {}) AS rank
             FROM text_fts JOIN text_docs AS d ON d.rowid = text_fts.rowid
             WHERE text_fts MATCH ?1",
            weights.join(", ")
        );
        let expression = match_expression(&tokens);
        // FTS5's column filter: only the body column can match (and score).
        let mut values = vec![if filter.body_only { format!("body : ({expression})") } else { expression }];
        if !filter.paths_prefix.is_empty() {
            let conditions: Vec<String> = filter
                .paths_prefix
                .iter()
                .map(|prefix| {
                    values.push(prefix.clone());
                    format!("substr(d.path, 1, length(?{n})) = ?{n}", n = values.len())
                })
                .collect();
            let _ = write!(sql, " AND ({})", conditions.join(" OR "));
        }
        if !filter.kinds.is_empty() {
            let placeholders: Vec<String> = filter
                .kinds
                .iter()
                .map(|kind| {
                    values.push(kind.clone());
                    format!("?{}", values.len())
                })
                .collect();
            let _ = write!(sql, " AND d.kind IN ({})", placeholders.join(", "));
        }
        let _ = write!(sql, " ORDER BY rank, d.id LIMIT {}", i64::try_from(limit).unwrap_or(i64::MAX));

        let reader = self.reader()?;
        let mut statement = reader.prepare_cached(&sql).map_err(self.error("prepare search"))?;
        let rows = statement
            .query_map(params_from_iter(&values), |row| {
                let rank: f64 = row.get(2)?;
                Ok(TextHit { id: row.get(0)?, path: row.get(1)?, score: -rank as f32 })
            })
            .map_err(self.error("search"))?;
        let mut hits = rows.collect::<Result<Vec<_>, _>>().map_err(self.error("search"))?;
        // SQL ordered by the f64 rank; re-apply the tie rule on the f32 scores we return.
        sort_hits(&mut hits);
        Ok(hits)
    }

    fn doc_count(&self) -> Result<u64, SearchError> {
        let reader = self.reader()?;
        let count: i64 =
            reader.query_row("SELECT count(*) FROM text_docs", [], |row| row.get(0)).map_err(self.error("count"))?;
        Ok(u64::try_from(count).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_outside_ascii_word_chars_are_hex_encoded() {
        assert_eq!(indexed_text("parseHttp store.rs"), "parsehttp parse pars http store rs $73746f72652e7273");
        assert_eq!(match_expression(&["a_b".into(), "é".into()]), "\"a_b\" OR \"$c3a9\"");
    }
}
