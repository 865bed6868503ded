//! Full-text search on the server: [`PgTextBackend`], a [`TextBackend`]
//! whose documents live in PostgreSQL.
//!
//! Text is split by agents-search's own analyzer ([`search_tokens`]: code
//! tokens plus English stems), so identifiers split exactly as with Tantivy
//! or FTS5; the server stores per document its field lengths and, per
//! (term, field) and load, the numbers of the documents holding the term and
//! its frequency in each (two arrays, `text_postings`), and ranks in SQL with
//! BM25 per field (k1 = 1.2, b = 0.75, Tantivy's IDF) weighted by the field
//! boosts of [`TEXT_FIELDS`] and summed. Filters, query tokens and the
//! ordering (score descending, then id) are the trait's contract.
//!
//! Writes go into one transaction on a connection of the backend's own,
//! taken on the first write with the text index's advisory lock (one writer
//! per text index across machines) and committed by [`TextBackend::commit`];
//! searches read the last commit on the store's pool. New documents wait in
//! a buffer and are loaded with binary `COPY` at the commit (or once the
//! buffer holds [`LOAD_POSTINGS`] postings): a first index of 63,000
//! documents is a few hundred thousand postings rows, not four million.
//! A replaced or deleted document's row goes at once and its numbers stay in
//! the postings until a commit finds them as many as half the live documents
//! and compacts the key; searches count only live documents, so no score
//! depends on the index's history.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use agents_search::{
    SearchError, SearchFilter, TEXT_FIELDS, TextBackend, TextDoc, TextHit, field_texts, query_tokens, search_tokens,
    sort_hits,
};
use agents_store::StoreError;
use postgres::types::Type;

use crate::{Conn, PostgresStore};

/// The name of this backend's kind, and its key in the search state.
pub const NAME: &str = "postgres";

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Buffered postings from which a write loads them before its commit: a
/// first index loads in a few large `COPY`s, within a bounded memory.
pub const LOAD_POSTINGS: usize = 5_000_000;

/// Rewrites the postings of `key` with only live documents' numbers, one
/// row per term and field (in the caller's transaction).
fn compact(c: &mut Conn, key: i32) -> Result<(), StoreError> {
    c.execute(
        "WITH old AS (DELETE FROM text_postings WHERE key_id = $1 RETURNING term, field, doc_ids, tfs), \
         live AS (SELECT o.term, o.field, u.doc_id, u.tf FROM old o, unnest(o.doc_ids, o.tfs) AS u(doc_id, tf) \
           WHERE EXISTS (SELECT 1 FROM text_docs d WHERE d.doc_id = u.doc_id)) \
         INSERT INTO text_postings (key_id, term, field, doc_ids, tfs) \
         SELECT $1, term, field, array_agg(doc_id ORDER BY doc_id), array_agg(tf ORDER BY doc_id) \
         FROM live GROUP BY term, field",
        &[&key],
    )?;
    c.execute("UPDATE text_stats SET churn = 0 WHERE key_id = $1", &[&key])?;
    Ok(())
}

/// A text index on the server: the documents of one key (an index id and
/// the analyzer's version) in the store's database.
pub struct PgTextBackend {
    store: Arc<PostgresStore>,
    key: String,
    /// The key's number in `text_keys`, once known (it never changes).
    key_id: std::sync::OnceLock<i32>,
    /// The open write transaction, from the first write to the commit.
    writer: Mutex<Option<Conn>>,
    /// Documents written in that transaction and not loaded yet.
    pending: Pending,
    /// Buffered postings from which a write loads them.
    load_postings: usize,
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
        PgTextBackend {
            store,
            key: key.to_owned(),
            key_id: std::sync::OnceLock::new(),
            writer: Mutex::new(None),
            pending: Pending::default(),
            load_postings: LOAD_POSTINGS,
        }
    }

    /// Loads the buffered documents once they hold `postings` postings
    /// ([`LOAD_POSTINGS`] by default) instead of at the commit: a smaller
    /// buffer holds less memory and makes more postings rows.
    pub fn with_load_postings(mut self, postings: usize) -> PgTextBackend {
        self.load_postings = postings;
        self
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

/// A document split for the write buffer: its keys, field lengths and
/// (term, field, frequency) postings.
struct Split {
    path: String,
    kind: String,
    lens: [i32; 6],
    postings: Vec<(String, i16, i32)>,
}

impl Split {
    fn of(doc: &TextDoc) -> Split {
        let mut lens = [0i32; 6];
        let mut postings = Vec::new();
        for (field, text) in field_texts(doc).into_iter().enumerate() {
            let split = tokens(text);
            if let Some(len) = lens.get_mut(field) {
                *len = i32::try_from(split.len()).unwrap_or(i32::MAX);
            }
            let mut counts: HashMap<String, i32> = HashMap::new();
            for token in split {
                *counts.entry(token).or_default() += 1;
            }
            postings.extend(counts.into_iter().map(|(term, tf)| (term, field as i16, tf)));
        }
        Split { path: doc.path.clone(), kind: doc.kind.clone(), lens, postings }
    }
}

/// Postings of one (term, field) in the write buffer: (document's place, frequency).
type Places = Vec<(u32, i32)>;

/// A document in the write buffer: its place in the buffer, keys and field lengths.
struct PendingDoc {
    seq: u32,
    path: String,
    kind: String,
    lens: [i32; 6],
}

/// Documents written since the last load, by id (the last of an id wins),
/// and their postings per (term, field), the terms interned: a few bytes
/// per posting, so a large buffer (few, long postings rows) stays small.
#[derive(Default)]
struct Pending {
    docs: BTreeMap<String, PendingDoc>,
    /// Per (term number, field), (document's place, frequency); places of
    /// documents replaced or deleted since are skipped when loading.
    lists: HashMap<(u32, i16), Places>,
    terms: HashMap<String, u32>,
    names: Vec<String>,
    next_seq: u32,
    /// Postings in `lists`, all together.
    postings: usize,
    /// Stored documents this transaction replaced or deleted.
    churn: i64,
}

impl Pending {
    fn add(&mut self, id: &str, doc: Split) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.postings += doc.postings.len();
        for (term, field, tf) in doc.postings {
            let number = match self.terms.get(&term) {
                Some(n) => *n,
                None => {
                    let n = self.names.len() as u32;
                    self.names.push(term.clone());
                    self.terms.insert(term, n);
                    n
                }
            };
            self.lists.entry((number, field)).or_default().push((seq, tf));
        }
        self.docs.insert(id.to_owned(), PendingDoc { seq, path: doc.path, kind: doc.kind, lens: doc.lens });
    }

    fn remove_paths(&mut self, paths: &HashSet<&str>) {
        self.docs.retain(|_, d| !paths.contains(d.path.as_str()));
    }
}

/// The documents holding a term in a field, by number, and its frequency in each.
type PostingList = (Vec<i64>, Vec<i32>);

/// Loads the buffered documents and their postings (one `COPY` each, one
/// postings row per term and field): the documents get numbers in id order,
/// and each row's document numbers come sorted.
fn load(c: &mut Conn, key: i32, pending: &mut Pending) -> Result<(), StoreError> {
    let churn = pending.churn;
    let Pending { docs, lists, names, .. } = std::mem::take(pending);
    // What outlives a load: this transaction's count of replaced documents.
    pending.churn = churn;
    if docs.is_empty() {
        return Ok(());
    }
    let count = i64::try_from(docs.len()).unwrap_or(i64::MAX);
    let numbers: Vec<i64> = c
        .query(
            "SELECT nextval(pg_get_serial_sequence('text_docs', 'doc_id')) FROM generate_series(1, $1::bigint) \
             ORDER BY 1",
            &[&count],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let numbered: Vec<(i64, (&String, &PendingDoc))> = numbers.into_iter().zip(docs.iter()).collect();
    c.copy_in(
        "COPY text_docs (doc_id, key_id, id, path, kind, len_0, len_1, len_2, len_3, len_4, len_5) \
         FROM STDIN (FORMAT binary)",
        &[
            Type::INT8,
            Type::INT4,
            Type::TEXT,
            Type::TEXT,
            Type::TEXT,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::INT4,
        ],
        |w| {
            for (number, (id, d)) in &numbered {
                let [l0, l1, l2, l3, l4, l5] = &d.lens;
                w.write(&[number, &key, id, &d.path, &d.kind, l0, l1, l2, l3, l4, l5])?;
            }
            Ok(())
        },
    )?;
    // Each live document's number by its place in the buffer.
    let places = numbered.iter().map(|(_, (_, d))| d.seq as usize).max().map_or(0, |m| m + 1);
    let mut number_of: Vec<Option<i64>> = vec![None; places];
    for (number, (_, d)) in &numbered {
        if let Some(slot) = number_of.get_mut(d.seq as usize) {
            *slot = Some(*number);
        }
    }
    let mut keys: Vec<(&str, i16, &Places)> = lists
        .iter()
        .filter_map(|((term, field), list)| Some((names.get(*term as usize)?.as_str(), *field, list)))
        .collect();
    keys.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    c.copy_in(
        "COPY text_postings (key_id, term, field, doc_ids, tfs) FROM STDIN (FORMAT binary)",
        &[Type::INT4, Type::TEXT, Type::INT2, Type::INT8_ARRAY, Type::INT4_ARRAY],
        |w| {
            let mut live: Vec<(i64, i32)> = Vec::new();
            for (term, field, list) in &keys {
                live.clear();
                live.extend(list.iter().filter_map(|(seq, tf)| Some(((*number_of.get(*seq as usize)?)?, *tf))));
                if live.is_empty() {
                    continue;
                }
                live.sort_unstable();
                let (numbers, tfs): PostingList = live.iter().copied().unzip();
                w.write(&[&key, term, field, &numbers, &tfs])?;
            }
            Ok(())
        },
    )?;
    Ok(())
}

impl PgTextBackend {
    /// Buffers `docs`, replacing stored documents of their ids when
    /// `replace` (one statement), and loads the buffer once it is large.
    fn buffer(&mut self, docs: &[TextDoc], replace: bool) -> Result<(), SearchError> {
        if docs.is_empty() {
            return Ok(());
        }
        let split: Vec<(&str, Split)> = docs.iter().map(|d| (d.id.as_str(), Split::of(d))).collect();
        let ids: Vec<&str> = if replace { docs.iter().map(|d| d.id.as_str()).collect() } else { Vec::new() };
        let mut pending = std::mem::take(&mut self.pending);
        let load_postings = self.load_postings;
        let result = self.write("index documents", |c, key| {
            if !ids.is_empty() {
                pending.churn +=
                    c.execute("DELETE FROM text_docs WHERE key_id = $1 AND id = ANY($2)", &[&key, &ids])? as i64;
            }
            for (id, doc) in split {
                pending.add(id, doc);
            }
            if pending.postings >= load_postings {
                load(c, key, &mut pending)?;
            }
            Ok(())
        });
        // A failed write gave up the transaction, and the buffer with it.
        if result.is_ok() {
            self.pending = pending;
        }
        result
    }
}

impl TextBackend for PgTextBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn upsert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        self.buffer(docs, true)
    }

    fn insert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        self.buffer(docs, false)
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut pending = std::mem::take(&mut self.pending);
        let result = self.write("delete documents", |c, key| {
            pending.churn +=
                c.execute("DELETE FROM text_docs WHERE key_id = $1 AND path = ANY($2)", &[&key, &paths])? as i64;
            pending.remove_paths(&paths.iter().map(String::as_str).collect());
            Ok(())
        });
        if result.is_ok() {
            self.pending = pending;
        }
        result
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        if self.writer.get_mut().unwrap_or_else(|p| p.into_inner()).is_none() {
            return Ok(());
        }
        let mut pending = std::mem::take(&mut self.pending);
        self.write("commit", |c, key| {
            load(c, key, &mut pending)?;
            let row = c.query_one(
                "INSERT INTO text_stats (key_id, doc_count, len_0, len_1, len_2, len_3, len_4, len_5, churn) \
                 SELECT $1, count(*), coalesce(sum(len_0), 0), coalesce(sum(len_1), 0), coalesce(sum(len_2), 0), \
                 coalesce(sum(len_3), 0), coalesce(sum(len_4), 0), coalesce(sum(len_5), 0), $2 \
                 FROM text_docs WHERE key_id = $1 \
                 ON CONFLICT (key_id) DO UPDATE SET doc_count = excluded.doc_count, len_0 = excluded.len_0, \
                 len_1 = excluded.len_1, len_2 = excluded.len_2, len_3 = excluded.len_3, len_4 = excluded.len_4, \
                 len_5 = excluded.len_5, churn = text_stats.churn + excluded.churn \
                 RETURNING doc_count, churn",
                &[&key, &pending.churn],
            )?;
            let (docs, churn): (i64, i64) = (row.get(0), row.get(1));
            // Once as many documents were replaced or deleted as half the
            // live ones, their numbers are dropped from the postings.
            if churn > 0 && churn * 2 >= docs {
                compact(c, key)?;
            }
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
            // Narrow rows until the best are known: postings of live documents
            // with their field's length and the term's document frequency,
            // scores per document number (summed in one order, so a score
            // never depends on the rows' order), then ids, paths and filters.
            "WITH s AS MATERIALIZED (SELECT doc_count::float8 AS n, \
               ARRAY[len_0, len_1, len_2, len_3, len_4, len_5]::float8[] AS total \
               FROM text_stats WHERE key_id = $1), \
             p AS MATERIALIZED (SELECT g.term, g.field, u.doc_id, u.tf, \
               (ARRAY[d.len_0, d.len_1, d.len_2, d.len_3, d.len_4, d.len_5])[g.field + 1] AS len, \
               (count(*) OVER (PARTITION BY g.term, g.field))::float8 AS df \
               FROM text_postings g CROSS JOIN LATERAL unnest(g.doc_ids, g.tfs) AS u(doc_id, tf) \
               JOIN text_docs d ON d.doc_id = u.doc_id AND d.key_id = $1 \
               WHERE g.key_id = $1 AND g.term = ANY($2) AND g.field = ANY($3)), \
             scored AS (SELECT p.doc_id, sum( \
               ($4::float8[])[p.field + 1] \
               * ln(1 + (s.n - p.df + 0.5) / (p.df + 0.5)) \
               * (p.tf * {k1plus}) / (p.tf + {K1} * ({one_minus_b} + {B} * p.len \
                 / greatest(s.total[p.field + 1] / greatest(s.n, 1), 1e-9))) ORDER BY p.field, p.term) AS score \
               FROM p CROSS JOIN s GROUP BY p.doc_id) \
             SELECT d.id, d.path, scored.score FROM scored JOIN text_docs d ON d.doc_id = scored.doc_id \
             WHERE (cardinality($5::text[]) = 0 OR EXISTS (SELECT 1 FROM unnest($5::text[]) AS pre \
               WHERE starts_with(d.path, pre))) \
               AND (cardinality($6::text[]) = 0 OR d.kind = ANY($6)) \
             ORDER BY scored.score DESC, d.id LIMIT $7",
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
