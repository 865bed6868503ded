//! Full-text search on the server: [`PgTextBackend`], a [`TextBackend`]
//! whose documents live in PostgreSQL.
//!
//! Text is split by agents-search's own analyzer ([`search_tokens`]: code
//! tokens plus English stems), so identifiers split exactly as with Tantivy
//! or FTS5; the server stores per (term, field, document) the term's
//! frequency and per document its field lengths, and ranks in SQL with BM25
//! per field (k1 = 1.2, b = 0.75, Tantivy's IDF) weighted by the field
//! boosts of [`TEXT_FIELDS`] and summed. Filters, query tokens and the
//! ordering (score descending, then id) are the trait's contract.
//!
//! Writes go into one transaction on a connection of the backend's own,
//! taken on the first write with the text index's advisory lock (one writer
//! per text index across machines) and committed by [`TextBackend::commit`];
//! searches read the last commit on the store's pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agents_search::{
    SearchError, SearchFilter, TEXT_FIELDS, TextBackend, TextDoc, TextHit, field_texts, query_tokens, search_tokens,
    sort_hits,
};
use agents_store::StoreError;

use crate::{Conn, PostgresStore};

/// The name of this backend's kind, and its key in the search state.
pub const NAME: &str = "postgres";

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// A text index on the server: the documents of one key (an index id and
/// the analyzer's version) in the store's database.
pub struct PgTextBackend {
    store: Arc<PostgresStore>,
    key: String,
    /// The key's number in `text_keys`, once known (it never changes).
    key_id: std::sync::OnceLock<i32>,
    /// The open write transaction, from the first write to the commit.
    writer: Mutex<Option<Conn>>,
}

impl std::fmt::Debug for PgTextBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgTextBackend").field("location", &self.store.location()).field("key", &self.key).finish()
    }
}

/// The search error of a failed store call.
pub(crate) fn search_error(location: &str, action: &'static str, e: StoreError) -> SearchError {
    let message = match e {
        StoreError::Server { message, .. } => message,
        other => other.to_string(),
    };
    SearchError::Server { location: location.to_owned(), action, message }
}

impl PgTextBackend {
    /// The text index `key` (e.g. `<index id>/v<TEXT_INDEX_VERSION>`) of `store`.
    pub fn open(store: Arc<PostgresStore>, key: &str) -> PgTextBackend {
        PgTextBackend { store, key: key.to_owned(), key_id: std::sync::OnceLock::new(), writer: Mutex::new(None) }
    }

    fn err(&self, action: &'static str) -> impl Fn(StoreError) -> SearchError + '_ {
        move |e| search_error(self.store.location(), action, e)
    }

    /// Runs `f` in the open write transaction, opening it (and taking the
    /// index's lock) first if needed.
    fn write<T>(
        &mut self,
        action: &'static str,
        f: impl FnOnce(&mut Conn, i32) -> Result<T, StoreError>,
    ) -> Result<T, SearchError> {
        let location = self.store.location().to_owned();
        let err = |e| search_error(&location, action, e);
        let slot = self.writer.get_mut().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.store.begin_locked(&format!("agents-text:{}", self.key)).map_err(err)?);
        }
        let Some(conn) = slot.as_mut() else { unreachable!("opened above") };
        let key_id = match self.key_id.get() {
            Some(id) => Ok(*id),
            None => create_key(conn, &self.key),
        };
        match key_id.and_then(|id| {
            let _ = self.key_id.set(id);
            f(conn, id)
        }) {
            Ok(value) => Ok(value),
            Err(e) => {
                // The transaction is aborted: give it up whole, with a key
                // number it may have made.
                if let Some(mut conn) = slot.take() {
                    conn.rollback();
                }
                self.key_id.take();
                Err(err(e))
            }
        }
    }
}

/// The number of `key`, created if new (in the caller's transaction).
fn create_key(c: &mut Conn, key: &str) -> Result<i32, StoreError> {
    c.execute("INSERT INTO text_keys (index_key) VALUES ($1) ON CONFLICT (index_key) DO NOTHING", &[&key])?;
    Ok(c.query_one("SELECT key_id FROM text_keys WHERE index_key = $1", &[&key])?.get(0))
}

impl PgTextBackend {
    /// The key's number, or `None` when nothing was ever written under it.
    fn existing_key(&self) -> Result<Option<i32>, SearchError> {
        if let Some(id) = self.key_id.get() {
            return Ok(Some(*id));
        }
        let row = self
            .store
            .read(|c| c.query_opt("SELECT key_id FROM text_keys WHERE index_key = $1", &[&self.key]))
            .map_err(self.err("look up the text index"))?;
        let id = row.map(|r| r.get::<_, i32>(0));
        if let Some(id) = id {
            let _ = self.key_id.set(id);
        }
        Ok(id)
    }
}

/// A field's tokens as stored: without NUL (PostgreSQL text has none).
fn tokens(text: &str) -> Vec<String> {
    search_tokens(text).into_iter().filter(|t| !t.contains('\0')).collect()
}

impl TextBackend for PgTextBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn upsert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        if docs.is_empty() {
            return Ok(());
        }
        // The last document of an id wins, as upserts in turn would.
        let mut last: HashMap<&str, &TextDoc> = HashMap::new();
        for doc in docs {
            last.insert(doc.id.as_str(), doc);
        }
        let mut docs: Vec<&TextDoc> = last.into_values().collect();
        docs.sort_by(|a, b| a.id.cmp(&b.id));
        let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
        let paths: Vec<&str> = docs.iter().map(|d| d.path.as_str()).collect();
        let kinds: Vec<&str> = docs.iter().map(|d| d.kind.as_str()).collect();
        let mut lens: [Vec<i32>; 6] = Default::default();
        // Per document, its (term, field, tf) rows.
        let mut postings: Vec<Vec<(String, i16, i32)>> = Vec::with_capacity(docs.len());
        for doc in &docs {
            let mut rows = Vec::new();
            for (field, text) in field_texts(doc).into_iter().enumerate() {
                let split = tokens(text);
                lens[field].push(i32::try_from(split.len()).unwrap_or(i32::MAX));
                let mut counts: HashMap<String, i32> = HashMap::new();
                for token in split {
                    *counts.entry(token).or_default() += 1;
                }
                let mut counts: Vec<(String, i32)> = counts.into_iter().collect();
                counts.sort();
                rows.extend(counts.into_iter().map(|(term, tf)| (term, field as i16, tf)));
            }
            postings.push(rows);
        }
        self.write("index documents", |c, key| {
            c.execute(
                "DELETE FROM text_terms WHERE key_id = $1 AND doc_id IN \
                 (SELECT doc_id FROM text_docs WHERE key_id = $1 AND id = ANY($2))",
                &[&key, &ids],
            )?;
            c.execute("DELETE FROM text_docs WHERE key_id = $1 AND id = ANY($2)", &[&key, &ids])?;
            let inserted = c.query(
                "INSERT INTO text_docs (key_id, id, path, kind, len_0, len_1, len_2, len_3, len_4, len_5) \
                 SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[], \
                 $8::int[], $9::int[], $10::int[]) RETURNING id, doc_id",
                &[&key, &ids, &paths, &kinds, &lens[0], &lens[1], &lens[2], &lens[3], &lens[4], &lens[5]],
            )?;
            let doc_ids: HashMap<String, i64> = inserted.iter().map(|r| (r.get(0), r.get(1))).collect();
            let (mut t_docs, mut t_terms, mut t_fields, mut t_tfs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for (doc, rows) in docs.iter().zip(&postings) {
                let Some(doc_id) = doc_ids.get(&doc.id) else { continue };
                for (term, field, tf) in rows {
                    t_docs.push(*doc_id);
                    t_terms.push(term.as_str());
                    t_fields.push(*field);
                    t_tfs.push(*tf);
                }
            }
            c.execute(
                "INSERT INTO text_terms (key_id, doc_id, term, field, tf) \
                 SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::smallint[], $5::int[])",
                &[&key, &t_docs, &t_terms, &t_fields, &t_tfs],
            )?;
            Ok(())
        })
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        if paths.is_empty() {
            return Ok(());
        }
        self.write("delete documents", |c, key| {
            c.execute(
                "DELETE FROM text_terms WHERE key_id = $1 AND doc_id IN \
                 (SELECT doc_id FROM text_docs WHERE key_id = $1 AND path = ANY($2))",
                &[&key, &paths],
            )?;
            c.execute("DELETE FROM text_docs WHERE key_id = $1 AND path = ANY($2)", &[&key, &paths])?;
            Ok(())
        })
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        if self.writer.get_mut().unwrap_or_else(|p| p.into_inner()).is_none() {
            return Ok(());
        }
        self.write("commit", |c, key| {
            c.execute(
                "INSERT INTO text_stats (key_id, doc_count, len_0, len_1, len_2, len_3, len_4, len_5) \
                 SELECT $1, count(*), coalesce(sum(len_0), 0), coalesce(sum(len_1), 0), coalesce(sum(len_2), 0), \
                 coalesce(sum(len_3), 0), coalesce(sum(len_4), 0), coalesce(sum(len_5), 0) \
                 FROM text_docs WHERE key_id = $1 \
                 ON CONFLICT (key_id) DO UPDATE SET doc_count = excluded.doc_count, len_0 = excluded.len_0, \
                 len_1 = excluded.len_1, len_2 = excluded.len_2, len_3 = excluded.len_3, len_4 = excluded.len_4, \
                 len_5 = excluded.len_5",
                &[&key],
            )?;
            c.batch("COMMIT")
        })?;
        *self.writer.get_mut().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    fn search(&self, query: &str, limit: usize, filter: &SearchFilter) -> Result<Vec<TextHit>, SearchError> {
        let terms: Vec<String> = query_tokens(query).into_iter().filter(|t| !t.contains('\0')).collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let body = TEXT_FIELDS.iter().position(|(name, _)| *name == "body").unwrap_or(4) as i16;
        let (fields, boosts): (Vec<i16>, Vec<f64>) = if filter.body_only {
            (vec![body], vec![1.0; TEXT_FIELDS.len()])
        } else {
            ((0..TEXT_FIELDS.len() as i16).collect(), TEXT_FIELDS.iter().map(|(_, b)| f64::from(*b)).collect())
        };
        let Some(key_id) = self.existing_key()? else { return Ok(Vec::new()) };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "WITH s AS (SELECT doc_count::float8 AS n, \
               ARRAY[len_0, len_1, len_2, len_3, len_4, len_5]::float8[] AS total \
               FROM text_stats WHERE key_id = $1), \
             p AS (SELECT term, field, doc_id, tf FROM text_terms \
               WHERE key_id = $1 AND term = ANY($2) AND field = ANY($3)), \
             df AS (SELECT term, field, count(*)::float8 AS df FROM p GROUP BY term, field) \
             SELECT d.id, d.path, sum( \
               ($4::float8[])[p.field + 1] \
               * ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) \
               * (p.tf * {k1plus}) / (p.tf + {K1} * ({one_minus_b} + {B} \
                 * (ARRAY[d.len_0, d.len_1, d.len_2, d.len_3, d.len_4, d.len_5])[p.field + 1] \
                 / greatest(s.total[p.field + 1] / greatest(s.n, 1), 1e-9)))) AS score \
             FROM p JOIN df USING (term, field) \
             JOIN text_docs d ON d.doc_id = p.doc_id CROSS JOIN s \
             WHERE (cardinality($5::text[]) = 0 OR EXISTS (SELECT 1 FROM unnest($5::text[]) AS pre \
               WHERE starts_with(d.path, pre))) \
               AND (cardinality($6::text[]) = 0 OR d.kind = ANY($6)) \
             GROUP BY d.id, d.path ORDER BY score DESC, d.id LIMIT $7",
            k1plus = K1 + 1.0,
            one_minus_b = 1.0 - B,
        );
        let rows = self
            .store
            .read(|c| c.query(&sql, &[&key_id, &terms, &fields, &boosts, &filter.paths_prefix, &filter.kinds, &limit]))
            .map_err(self.err("search"))?;
        let mut hits: Vec<TextHit> =
            rows.iter().map(|r| TextHit { id: r.get(0), path: r.get(1), score: r.get::<_, f64>(2) as f32 }).collect();
        // SQL ordered by the f64 score; the tie rule holds on the f32 scores returned.
        sort_hits(&mut hits);
        Ok(hits)
    }

    fn doc_count(&self) -> Result<u64, SearchError> {
        let Some(key_id) = self.existing_key()? else { return Ok(0) };
        let row = self
            .store
            .read(|c| c.query_one("SELECT count(*) FROM text_docs WHERE key_id = $1", &[&key_id]))
            .map_err(self.err("count documents"))?;
        Ok(u64::try_from(row.get::<_, i64>(0)).unwrap_or_default())
    }
}
