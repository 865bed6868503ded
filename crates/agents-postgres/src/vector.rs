//! Vectors on the server: [`PgVectorBackend`], a [`VectorBackend`] on
//! pgvector.
//!
//! One table per dimension (`agents_vectors_<dim>`, a `vector(<dim>)` column)
//! holds the vectors of every index, each row under its key (index id, model
//! and embedding-text version). A search scans the key's rows exactly up to a
//! threshold ([`ANN_THRESHOLD`] rows by default, the local backend's); a key
//! that reaches it gets an HNSW index for cosine distance of its own (a
//! partial index, built in one pass, without blocking writers, by the commit
//! that crossed the threshold), which searches then ask, falling back to the
//! exact scan when the filters leave fewer hits than asked for. Small keys
//! never pay for maintaining an HNSW graph they would not use.
//! Scores are cosine similarities; hits are ordered by score descending,
//! then id. Writes are one transaction on a connection of the backend's own,
//! under the key's advisory lock, committed by [`VectorBackend::commit`].
//!
//! The `vector` extension must be installed in the database (created here
//! when the role may): without it, opening is a clear error saying so.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use agents_search::SearchError;
use agents_search::SearchFilter;
use agents_search::vector::{VectorBackend, VectorDoc, VectorHit};
use agents_store::StoreError;
use postgres::types::Type;

use crate::text::search_error;
use crate::{Conn, PostgresStore};

/// The name of this backend's kind (its search-state key is `vector-pgvector`).
pub const NAME: &str = "pgvector";

/// From this many rows of a key up, searches go through the HNSW index.
pub const ANN_THRESHOLD: usize = 50_000;

/// A vector index on the server: the vectors of one key.
pub struct PgVectorBackend {
    store: Arc<PostgresStore>,
    key: String,
    dim: usize,
    table: String,
    /// Committed rows of the key, as last counted.
    count: AtomicUsize,
    /// From this many rows up, searches go through the HNSW index.
    ann_threshold: usize,
    /// Whether the key's HNSW index exists, once known to.
    hnsw: std::sync::OnceLock<()>,
    /// The database's `vector` type, once looked up (for binary `COPY`).
    vector_type: std::sync::OnceLock<Type>,
    writer: Mutex<Option<Conn>>,
}

impl std::fmt::Debug for PgVectorBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgVectorBackend").field("location", &self.store.location()).field("key", &self.key).finish()
    }
}

/// A vector as pgvector's text input: `[0.1,0.2,...]`.
fn literal(vector: &[f32]) -> String {
    let mut out = String::with_capacity(vector.len() * 10 + 2);
    out.push('[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Finite by construction of the embeddings; a NaN would be refused by the server.
        let _ = write!(out, "{x}");
    }
    out.push(']');
    out
}

/// A vector in pgvector's binary format (`vector_recv`): the dimension and
/// a reserved word as 16-bit integers, then each float, big-endian.
#[derive(Debug)]
struct Binary<'a>(&'a [f32]);

impl postgres::types::ToSql for Binary<'_> {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use bytes::BufMut;
        out.put_i16(i16::try_from(self.0.len())?);
        out.put_i16(0);
        for x in self.0 {
            out.put_f32(*x);
        }
        Ok(postgres::types::IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        ty.name() == "vector"
    }

    postgres::types::to_sql_checked!();
}

/// The `vector` type of the connection's database, for binary `COPY`.
fn vector_type(c: &mut Conn) -> Result<Type, StoreError> {
    let row = c.query_one(
        "SELECT t.oid, n.nspname::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
         WHERE t.oid = 'vector'::regtype",
        &[],
    )?;
    Ok(Type::new("vector".to_owned(), row.get(0), postgres::types::Kind::Simple, row.get(1)))
}

impl PgVectorBackend {
    /// Stores `docs` (checked, the last of an id winning) with one binary
    /// `COPY`, after deleting the stored vectors of their ids when `replace`.
    fn store(&mut self, docs: &[VectorDoc], replace: bool) -> Result<(), SearchError> {
        if docs.is_empty() {
            return Ok(());
        }
        if let Some(bad) = docs.iter().find(|d| d.vector.len() != self.dim) {
            return Err(SearchError::Dimension { id: bad.id.clone(), expected: self.dim, found: bad.vector.len() });
        }
        let mut last: HashMap<&str, &VectorDoc> = HashMap::new();
        for doc in docs {
            last.insert(doc.id.as_str(), doc);
        }
        let mut docs: Vec<&VectorDoc> = last.into_values().collect();
        docs.sort_by(|a, b| a.id.cmp(&b.id));
        let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
        let known = self.vector_type.get().cloned();
        let found = self.write("store vectors", |c, key, table| {
            if replace {
                c.execute(&format!("DELETE FROM {table} WHERE index_key = $1 AND id = ANY($2)"), &[&key, &ids])?;
            }
            let vector = match known {
                Some(t) => t,
                None => vector_type(c)?,
            };
            c.copy_in(
                &format!("COPY {table} (index_key, id, path, kind, embedding) FROM STDIN (FORMAT binary)"),
                &[Type::TEXT, Type::TEXT, Type::TEXT, Type::TEXT, vector.clone()],
                |w| {
                    for d in &docs {
                        w.write(&[&key, &d.id, &d.path, &d.kind, &Binary(&d.vector)])?;
                    }
                    Ok(())
                },
            )?;
            Ok(vector)
        })?;
        let _ = self.vector_type.set(found);
        Ok(())
    }

    /// The vector index `key` of `dim`-long vectors on `store`'s server:
    /// checks for pgvector (creating the extension when the role may) and
    /// creates the dimension's table and HNSW index if missing.
    pub fn open(store: Arc<PostgresStore>, key: &str, dim: usize) -> Result<PgVectorBackend, SearchError> {
        let location = store.location().to_owned();
        let err = |action: &'static str| {
            let location = location.clone();
            move |e| search_error(&location, action, e)
        };
        if dim == 0 || dim > 16_000 {
            return Err(SearchError::Server {
                location: store.location().to_owned(),
                action: "open the vector index",
                message: format!("{dim} dimensions: pgvector's HNSW index takes 1 to 16000"),
            });
        }
        let table = format!("agents_vectors_{dim}");
        {
            let mut c = store.conn().map_err(err("connect"))?;
            ensure_extension(&mut c).map_err(err("use pgvector"))?;
            // In the store's own schema: the first of the search path.
            let exists: bool = c
                .query_one("SELECT to_regclass(quote_ident(current_schema()) || '.' || $1) IS NOT NULL", &[&table])
                .map_err(err("open the vector index"))?
                .get(0);
            if !exists {
                create_table(&mut c, &table, dim).map_err(err("create the vector table"))?;
            }
        }
        let backend = PgVectorBackend {
            store,
            key: key.to_owned(),
            dim,
            table,
            count: AtomicUsize::new(0),
            ann_threshold: ANN_THRESHOLD,
            hnsw: std::sync::OnceLock::new(),
            vector_type: std::sync::OnceLock::new(),
            writer: Mutex::new(None),
        };
        backend.recount()?;
        Ok(backend)
    }

    /// Searches go through the HNSW index from `rows` rows of the key up
    /// (`context.backends.ann-threshold`; [`ANN_THRESHOLD`] by default).
    pub fn with_ann_threshold(mut self, rows: usize) -> PgVectorBackend {
        self.ann_threshold = rows;
        self
    }

    /// The key of the vectors this backend holds.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the key has its HNSW index (built once it reached the threshold).
    pub fn has_hnsw(&self) -> bool {
        if self.hnsw.get().is_some() {
            return true;
        }
        let sql = "SELECT to_regclass(quote_ident(current_schema()) || '.' || $1) IS NOT NULL \
                   AND (SELECT indisvalid FROM pg_index WHERE indexrelid = \
                        to_regclass(quote_ident(current_schema()) || '.' || $1))";
        let exists = self.store.read(|c| {
            let name = self.hnsw_name(c)?;
            Ok(c.query_one(sql, &[&name])?.get::<_, Option<bool>>(0).unwrap_or(false))
        });
        match exists {
            Ok(true) => {
                let _ = self.hnsw.set(());
                true
            }
            _ => false,
        }
    }

    /// The name of the key's HNSW index: the table's and a digest of the key.
    fn hnsw_name(&self, c: &mut Conn) -> Result<String, StoreError> {
        let digest: String = c.query_one("SELECT substr(md5($1), 1, 16)", &[&self.key])?.get(0);
        Ok(format!("{}_hnsw_{digest}", self.table))
    }

    /// The key as an SQL literal, for the partial index's predicate (which a
    /// query must spell the same way for the planner to use the index).
    fn key_literal(&self) -> String {
        format!("'{}'", self.key.replace('\'', "''"))
    }

    /// Builds the key's HNSW index when the key reached the threshold and has
    /// none (`CREATE INDEX CONCURRENTLY`: writers of other keys go on). A
    /// pgvector without HNSW (before 0.5) leaves exact scans, with a warning.
    fn ensure_hnsw(&self) -> Result<(), SearchError> {
        if self.len() < self.ann_threshold || self.has_hnsw() {
            return Ok(());
        }
        let err = |e| search_error(self.store.location(), "build the HNSW index", e);
        let mut c = self.store.dedicated().map_err(err)?;
        let name = self.hnsw_name(&mut c).map_err(err)?;
        // A build interrupted before left an invalid index of that name.
        c.batch(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}")).map_err(err)?;
        let build = format!(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} USING hnsw (embedding vector_cosine_ops) \
             WHERE index_key = {key}",
            table = self.table,
            key = self.key_literal()
        );
        match c.batch(&build) {
            Ok(()) => {
                let _ = self.hnsw.set(());
            }
            Err(e) => tracing::warn!(
                "{}: no HNSW index for {} rows of {} (pgvector 0.5 or later has it); searches scan exactly: {e}",
                self.store.location(),
                self.len(),
                self.table
            ),
        }
        Ok(())
    }

    fn recount(&self) -> Result<(), SearchError> {
        let sql = format!("SELECT count(*) FROM {} WHERE index_key = $1", self.table);
        let row = self
            .store
            .read(|c| c.query_one(&sql, &[&self.key]))
            .map_err(|e| search_error(self.store.location(), "count vectors", e))?;
        self.count.store(usize::try_from(row.get::<_, i64>(0)).unwrap_or_default(), Ordering::Relaxed);
        Ok(())
    }

    fn write<T>(
        &mut self,
        action: &'static str,
        f: impl FnOnce(&mut Conn, &str, &str) -> Result<T, StoreError>,
    ) -> Result<T, SearchError> {
        let location = self.store.location().to_owned();
        let err = |e| search_error(&location, action, e);
        let slot = self.writer.get_mut().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.store.begin_locked(&format!("agents-vector:{}", self.key)).map_err(err)?);
        }
        let Some(conn) = slot.as_mut() else { unreachable!("opened above") };
        match f(conn, &self.key, &self.table) {
            Ok(value) => Ok(value),
            Err(e) => {
                if let Some(mut conn) = slot.take() {
                    conn.rollback();
                }
                Err(err(e))
            }
        }
    }

    fn query(
        &self,
        sql: &str,
        query: &str,
        limit: i64,
        filter: &SearchFilter,
        ann: bool,
    ) -> Result<Vec<VectorHit>, SearchError> {
        let run = |c: &mut Conn| -> Result<Vec<postgres::Row>, StoreError> {
            let params: [&(dyn postgres::types::ToSql + Sync); 5] =
                [&self.key, &query, &filter.paths_prefix, &filter.kinds, &limit];
            if !ann {
                return c.query(sql, &params);
            }
            c.batch("BEGIN")?;
            let ef = (limit.saturating_mul(4)).clamp(40, 1000);
            let result = c
                .batch(&format!("SET LOCAL hnsw.ef_search = {ef}; SET LOCAL enable_seqscan = off"))
                .and_then(|()| c.query(sql, &params));
            c.rollback();
            result
        };
        let rows = self.store.read(run).map_err(|e| search_error(self.store.location(), "search vectors", e))?;
        Ok(rows
            .iter()
            .map(|r| VectorHit { id: r.get(0), path: r.get(1), score: (1.0 - r.get::<_, f64>(2)) as f32 })
            .collect())
    }
}

/// Makes sure the `vector` type exists in the database.
fn ensure_extension(c: &mut Conn) -> Result<(), StoreError> {
    let installed: bool =
        c.query_one("SELECT EXISTS(SELECT 1 FROM pg_extension WHERE extname = 'vector')", &[])?.get(0);
    if installed {
        return Ok(());
    }
    match c.batch("CREATE EXTENSION IF NOT EXISTS vector") {
        Ok(()) => Ok(()),
        Err(e) => {
            let why = match e {
                StoreError::Server { message, .. } => message,
                other => other.to_string(),
            };
            Err(StoreError::Server {
                location: c.location().to_owned(),
                message: format!(
                    "the pgvector extension is not installed in this database ({why}); install it \
                     (Debian: apt install postgresql-<version>-pgvector) and run `CREATE EXTENSION vector;` \
                     as a superuser"
                ),
            })
        }
    }
}

fn create_table(c: &mut Conn, table: &str, dim: usize) -> Result<(), StoreError> {
    c.batch("BEGIN")?;
    let result = (|| {
        c.query_one("SELECT pg_advisory_xact_lock(hashtextextended('agents-vector-table:' || $1, 0))", &[&table])?;
        c.batch(&format!(
            "CREATE TABLE IF NOT EXISTS {table} (
                index_key TEXT COLLATE \"C\" NOT NULL,
                id        TEXT COLLATE \"C\" NOT NULL,
                path      TEXT COLLATE \"C\" NOT NULL,
                kind      TEXT COLLATE \"C\" NOT NULL,
                embedding vector({dim}) NOT NULL,
                PRIMARY KEY (index_key, id)
            );
            CREATE INDEX IF NOT EXISTS {table}_path ON {table}(index_key, path);"
        ))?;
        Ok(())
    })();
    match result {
        Ok(()) => c.batch("COMMIT"),
        Err(e) => {
            c.rollback();
            Err(e)
        }
    }
}

impl VectorBackend for PgVectorBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn upsert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError> {
        self.store(docs, true)
    }

    fn insert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError> {
        self.store(docs, false)
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.write("delete vectors", |c, key, table| {
            c.execute(&format!("DELETE FROM {table} WHERE index_key = $1 AND path = ANY($2)"), &[&key, &paths])?;
            Ok(())
        })
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        let open = self.writer.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(mut conn) = open {
            conn.batch("COMMIT").map_err(|e| search_error(self.store.location(), "commit", e))?;
        }
        self.recount()?;
        self.ensure_hnsw()
    }

    fn search(&self, query: &[f32], limit: usize, filter: &SearchFilter) -> Result<Vec<VectorHit>, SearchError> {
        if limit == 0 || query.len() != self.dim {
            return Ok(Vec::new());
        }
        let q = literal(query);
        let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
        let filters = "(cardinality($3::text[]) = 0 OR EXISTS (SELECT 1 FROM unnest($3::text[]) AS pre \
             WHERE starts_with(path, pre))) AND (cardinality($4::text[]) = 0 OR kind = ANY($4))";
        let dim = self.dim;
        let count = self.len();
        let mut hits = if count >= self.ann_threshold && self.has_hnsw() {
            // The key's HNSW index orders by distance (its predicate spelled
            // as the index's); ties are broken outside it.
            let sql = format!(
                "SELECT id, path, d FROM (SELECT id, path, embedding <=> ($2::text)::vector({dim}) AS d FROM {table} \
                 WHERE index_key = {key} AND $1::text IS NOT NULL AND {filters} \
                 ORDER BY embedding <=> ($2::text)::vector({dim}) LIMIT $5) AS ann ORDER BY d, id",
                table = self.table,
                key = self.key_literal(),
            );
            let hits = self.query(&sql, &q, limit_sql, filter, true)?;
            if hits.len() < limit.min(count) { None } else { Some(hits) }
        } else {
            None
        };
        if hits.is_none() {
            // `+ 0` keeps the planner off the HNSW index: an exact scan of the key's rows.
            let sql = format!(
                "SELECT id, path, (embedding <=> ($2::text)::vector({dim})) + 0 AS d FROM {table} \
                 WHERE index_key = $1 AND {filters} ORDER BY d, id LIMIT $5",
                table = self.table
            );
            hits = Some(self.query(&sql, &q, limit_sql, filter, false)?);
        }
        let mut hits = hits.unwrap_or_default();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
        Ok(hits)
    }

    fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}
