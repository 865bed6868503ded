//! The Tantivy text backend: the default engine behind [`TextBackend`].
//!
//! Layout of the index (one Tantivy document per [`TextDoc`]):
//! - `id` and `path_raw`: raw (`STRING`) and stored; the id term deletes a node on
//!   upsert, the path term deletes a file's nodes, and both come back in hits;
//! - `kind_raw`: raw, for the kind filter;
//! - `name`, `signature`, `path`, `doc`, `body`, `kind`: analyzed by the `code`
//!   tokenizer ([`CodeTokenizer`], a wrapper of [`crate::search_tokens`]), with term
//!   frequencies and field norms for BM25 but no positions (there are no phrase queries).
//!
//! A query is a boolean OR of one term query per (token, field), each boosted by the
//! field's weight; filters are added as zero-scored required clauses. One `IndexWriter`
//! (two threads, 50 MB) lives as long as the backend and holds the directory lock; the
//! reader is reloaded on commit. A backend opened read-only ([`TantivyBackend::open_read_only`])
//! has no writer, so any number of them search one index while a writer works on it.
//!
//! # Scores depend on the documents only, never on the index's history
//! Tantivy's own BM25 statistics (document count, document frequencies, total field
//! lengths) are summed over segments and count a deleted document until its segment is
//! merged; and a merge of a segment holding deletions estimates the field lengths it
//! keeps. So searches here score with [`LiveStatistics`] instead, which depend on the
//! live documents alone: the number of live documents; a term's document frequency
//! counted over live documents (a segment holding deletions has the term's postings
//! read against its alive bitset); and a field's total length summed over the live
//! documents' stored field norms (the length each document is scored with). A commit
//! that deleted or replaced documents only writes delete bitsets; segments are merged
//! by size ([`compact`]: the small ones a refresh writes merged among themselves once
//! there are [`MERGE_AT_SEGMENTS`], and any whose deleted share passes
//! [`MAX_DELETED_SHARE`]), which changes no score. Ties are
//! broken by id, never by document address. Two indexes holding the same documents then
//! score every query identically, however they came to hold them. Opening an index first
//! removes the files no commit refers to (segments a killed writer left behind).

use std::ops::Bound;
use std::path::{Path, PathBuf};

use std::collections::HashMap;
use std::sync::Mutex;

use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::index::SegmentId;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::Bm25StatisticsProvider;
use tantivy::query::{BooleanQuery, BoostQuery, ConstScoreQuery, InvertedIndexRangeQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TantivyDocument, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{TextAnalyzer, Token, TokenStream, Tokenizer};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, Searcher, SegmentReader, Term};

use crate::tokenize::for_each_search_token;
use crate::{
    SearchError, SearchFilter, TEXT_FIELDS, TextBackend, TextDoc, TextHit, field_texts, query_tokens, sort_hits,
};

/// Name under which [`CodeTokenizer`] is registered with the index.
const TOKENIZER: &str = "code";
/// Memory budget of the indexing threads together.
const WRITER_MEMORY_BYTES: usize = 50_000_000;
/// Segments of at most this many documents are small: what a refresh of a
/// few files writes. A first sync's segments are larger.
const SMALL_SEGMENT_DOCS: u32 = 10_000;
/// Once there are this many small segments, they are merged into one: an
/// index updated a few files at a time (a watched repository) merges its
/// small segments among themselves (each document a few times at most
/// before its segment stops being small), never into a first sync's.
const MERGE_AT_SEGMENTS: usize = 8;
/// A segment whose deleted documents make up more than this share of it is
/// merged at the next commit, whatever its size: deleted documents cost disk
/// and search time, not scores; the cost of the merge is spread over the
/// many refreshes that replaced a quarter of the segment.
const MAX_DELETED_SHARE: f64 = 0.25;

pub(crate) struct TantivyBackend {
    dir: PathBuf,
    /// `None` when opened read-only.
    writer: Option<IndexWriter>,
    reader: IndexReader,
    fields: Fields,
    /// Total field lengths of the live documents, per segment state: see [`LiveStatistics`].
    lengths: FieldLengths,
}

struct Fields {
    id: Field,
    path_raw: Field,
    kind_raw: Field,
    /// Analyzed fields in the order of [`TEXT_FIELDS`].
    text: [Field; 6],
}

fn schema() -> Schema {
    let mut builder = Schema::builder();
    builder.add_text_field("id", STRING | STORED);
    builder.add_text_field("path_raw", STRING | STORED);
    builder.add_text_field("kind_raw", STRING);
    let analyzed = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default().set_tokenizer(TOKENIZER).set_index_option(IndexRecordOption::WithFreqs),
    );
    for (name, _) in TEXT_FIELDS {
        builder.add_text_field(name, analyzed.clone());
    }
    builder.build()
}

impl TantivyBackend {
    pub(crate) fn open(dir: &Path) -> Result<TantivyBackend, SearchError> {
        Self::open_with(dir, true)
    }

    /// Opens an existing index for searching only: no writer, so no writer
    /// lock; a missing or unreadable index is an error.
    pub(crate) fn open_read_only(dir: &Path) -> Result<TantivyBackend, SearchError> {
        Self::open_with(dir, false)
    }

    fn open_with(dir: &Path, write: bool) -> Result<TantivyBackend, SearchError> {
        let error = |action| move |source| SearchError::Tantivy { dir: dir.to_owned(), action, source };
        let directory = MmapDirectory::open(dir).map_err(|source| error("open directory")(source.into()))?;
        let index = if write {
            Index::open_or_create(directory, schema()).map_err(error("open index"))?
        } else {
            Index::open(directory).map_err(error("open index"))?
        };
        index.tokenizers().register(TOKENIZER, TextAnalyzer::from(CodeTokenizer::default()));
        let schema = index.schema();
        let field = |name: &str| schema.get_field(name).map_err(error("read schema"));
        let fields = Fields {
            id: field("id")?,
            path_raw: field("path_raw")?,
            kind_raw: field("kind_raw")?,
            text: [
                field(TEXT_FIELDS[0].0)?,
                field(TEXT_FIELDS[1].0)?,
                field(TEXT_FIELDS[2].0)?,
                field(TEXT_FIELDS[3].0)?,
                field(TEXT_FIELDS[4].0)?,
                field(TEXT_FIELDS[5].0)?,
            ],
        };
        // Two indexing threads for an empty index: the machines this runs on
        // have a few cores, and a first sync of a large repository is bound by
        // tokenizing bodies. One for an index that holds documents: a sync
        // then replaces a few files' documents, and each thread that gets
        // some builds a segment of its own (setting one up took a refresh
        // of ten files more time than indexing their documents).
        let writer = match write {
            true => {
                let empty = index.searchable_segment_metas().map_err(error("read segments"))?.is_empty();
                let threads = if empty { 2 } else { 1 };
                let mut writer: IndexWriter =
                    writer_when_unlocked(&index, threads).map_err(error("open index writer"))?;
                writer.set_merge_policy(Box::new(NoMergePolicy));
                // Files of segments no commit refers to: what a killed writer left.
                writer.garbage_collect_files().wait().map_err(error("remove unused files"))?;
                // An index written before deletions were merged away on commit.
                compact(&mut writer).map_err(error("merge segments"))?;
                Some(writer)
            }
            false => None,
        };
        let reader =
            index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(error("open reader"))?;
        tracing::debug!(dir = %dir.display(), "opened tantivy text index");
        Ok(TantivyBackend { dir: dir.to_owned(), writer, reader, fields, lengths: FieldLengths::default() })
    }

    fn writer(&mut self) -> Result<&mut IndexWriter, SearchError> {
        let dir = self.dir.clone();
        self.writer.as_mut().ok_or_else(|| SearchError::Io {
            path: dir,
            action: "write",
            source: std::io::Error::other("the index was opened read-only"),
        })
    }

    fn error(&self, action: &'static str) -> impl Fn(tantivy::TantivyError) -> SearchError + '_ {
        move |source| SearchError::Tantivy { dir: self.dir.clone(), action, source }
    }

    fn document(&self, doc: &TextDoc) -> TantivyDocument {
        let mut document = TantivyDocument::default();
        document.add_text(self.fields.id, &doc.id);
        document.add_text(self.fields.path_raw, &doc.path);
        document.add_text(self.fields.kind_raw, &doc.kind);
        for (field, text) in self.fields.text.iter().zip(field_texts(doc)) {
            document.add_text(*field, text);
        }
        document
    }

    fn query(&self, tokens: &[String], filter: &SearchFilter) -> BooleanQuery {
        let mut text_clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for token in tokens {
            for (field, (name, boost)) in self.fields.text.iter().zip(TEXT_FIELDS) {
                if filter.body_only && name != "body" {
                    continue;
                }
                let boost = if filter.body_only { 1.0 } else { boost };
                let term = TermQuery::new(Term::from_field_text(*field, token), IndexRecordOption::WithFreqs);
                text_clauses.push((Occur::Should, Box::new(BoostQuery::new(Box::new(term), boost))));
            }
        }
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, Box::new(BooleanQuery::new(text_clauses)))];
        let unscored = |query: Box<dyn Query>| -> (Occur, Box<dyn Query>) {
            (Occur::Must, Box::new(ConstScoreQuery::new(query, 0.0)))
        };
        if !filter.paths_prefix.is_empty() && !filter.paths_prefix.iter().any(String::is_empty) {
            let prefixes = filter.paths_prefix.iter().map(|prefix| {
                let upper = match prefix_successor(prefix.as_bytes()) {
                    Some(bytes) => Bound::Excluded(Term::from_field_bytes(self.fields.path_raw, &bytes)),
                    None => Bound::Unbounded,
                };
                let lower = Bound::Included(Term::from_field_text(self.fields.path_raw, prefix));
                (Occur::Should, Box::new(InvertedIndexRangeQuery::new(lower, upper)) as Box<dyn Query>)
            });
            clauses.push(unscored(Box::new(BooleanQuery::new(prefixes.collect()))));
        }
        if !filter.kinds.is_empty() {
            let kinds = filter.kinds.iter().map(|kind| {
                let term = Term::from_field_text(self.fields.kind_raw, kind);
                (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>)
            });
            clauses.push(unscored(Box::new(BooleanQuery::new(kinds.collect()))));
        }
        BooleanQuery::new(clauses)
    }
}

/// How long opening a writer waits for the index's lock to be free, in
/// steps of [`LOCK_RETRY`]. The lock is an `flock` on a file: a process
/// forked (to run `git`, an agent) between another writer's open and its
/// drop shares it until its `exec`, so a writer dropped a moment ago can
/// still look busy. Writers of one index never overlap otherwise (the
/// callers hold the resource's lock), so a lock that stays busy is an error.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

/// `index`'s writer with `threads` indexing threads, waiting up to
/// [`LOCK_WAIT`] for a lock another handle is letting go of.
fn writer_when_unlocked(index: &Index, threads: usize) -> tantivy::Result<IndexWriter> {
    let started = std::time::Instant::now();
    loop {
        match index.writer_with_num_threads(threads, WRITER_MEMORY_BYTES) {
            Err(tantivy::TantivyError::LockFailure(tantivy::directory::error::LockError::LockBusy, _))
                if started.elapsed() < LOCK_WAIT =>
            {
                std::thread::sleep(LOCK_RETRY);
            }
            result => return result,
        }
    }
}

/// The merge policy, run synchronously after a commit (Tantivy's background
/// merges are off): the small segments into one once there are
/// [`MERGE_AT_SEGMENTS`] of them, and with them any segment past
/// [`MAX_DELETED_SHARE`] deleted; then removes the files the merge made
/// unused. Merging changes no score (see the module docs). Returns whether
/// anything was merged.
fn compact(writer: &mut IndexWriter) -> tantivy::Result<bool> {
    let mut segments = writer.index().searchable_segment_metas()?;
    // Ties by id: the same segments always make the same choice.
    segments.sort_by_key(|s| (s.max_doc(), s.id().uuid_string()));
    let small = segments.iter().filter(|s| s.max_doc() <= SMALL_SEGMENT_DOCS).count();
    let merge: Vec<SegmentId> = segments
        .iter()
        .filter(|s| {
            let garbage = f64::from(s.num_deleted_docs()) > MAX_DELETED_SHARE * f64::from(s.max_doc());
            garbage || (small >= MERGE_AT_SEGMENTS && s.max_doc() <= SMALL_SEGMENT_DOCS)
        })
        .map(|s| s.id())
        .collect();
    if merge.is_empty() {
        return Ok(false);
    }
    writer.merge(&merge).wait()?;
    writer.garbage_collect_files().wait()?;
    Ok(true)
}

/// BM25 statistics over the live documents only, so that a score depends on
/// the documents an index holds and not on how its segments came to be (see
/// the module docs). Tantivy's own (the [`Searcher`]'s) count deleted
/// documents until a merge.
struct LiveStatistics<'a> {
    searcher: &'a Searcher,
    lengths: &'a FieldLengths,
}

impl Bm25StatisticsProvider for LiveStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut total = 0;
        for segment in self.searcher.segment_readers() {
            total += self.lengths.live_total(segment, field)?;
        }
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.num_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut total = 0;
        for segment in self.searcher.segment_readers() {
            let inverted = segment.inverted_index(term.field())?;
            total += u64::from(match segment.alive_bitset() {
                None => inverted.doc_freq(term)?,
                Some(alive) => match inverted.read_postings(term, IndexRecordOption::Basic)? {
                    Some(postings) => postings.doc_freq_given_deletes(alive),
                    None => 0,
                },
            });
        }
        Ok(total)
    }
}

/// Per segment and field, the sum of the live documents' field lengths as
/// their field norms store them (the length BM25 scores a document with):
/// a segment's is computed once per state (segment, number of deletions).
#[derive(Default)]
struct FieldLengths {
    totals: Mutex<HashMap<(SegmentId, u32, Field), u64>>,
}

/// Past this many cached totals, the cache starts over (a long-lived
/// process whose segments keep changing).
const KEPT_LENGTHS: usize = 4096;

impl FieldLengths {
    fn live_total(&self, segment: &SegmentReader, field: Field) -> tantivy::Result<u64> {
        let key = (segment.segment_id(), segment.num_deleted_docs(), field);
        if let Some(total) = self.totals.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(*total);
        }
        let norms = segment.get_fieldnorms_reader(field)?;
        let mut counts = [0u64; 256];
        match segment.alive_bitset() {
            None => (0..segment.max_doc()).for_each(|doc| counts[usize::from(norms.fieldnorm_id(doc))] += 1),
            Some(alive) => {
                alive.iter_alive().for_each(|doc| counts[usize::from(norms.fieldnorm_id(doc))] += 1);
            }
        }
        let total =
            (0..=u8::MAX).map(|id| counts[usize::from(id)] * u64::from(FieldNormReader::id_to_fieldnorm(id))).sum();
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        if totals.len() >= KEPT_LENGTHS {
            totals.clear();
        }
        totals.insert(key, total);
        Ok(total)
    }
}

/// The smallest byte string greater than every string starting with `prefix`, if any.
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut bytes = prefix.to_vec();
    while let Some(last) = bytes.pop() {
        if last < u8::MAX {
            bytes.push(last + 1);
            return Some(bytes);
        }
    }
    None
}

impl TextBackend for TantivyBackend {
    fn name(&self) -> &'static str {
        crate::TextBackendKind::Tantivy.as_str()
    }

    fn upsert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        for doc in docs {
            let document = self.document(doc);
            let id = Term::from_field_text(self.fields.id, &doc.id);
            let writer = self.writer()?;
            writer.delete_term(id);
            let added = writer.add_document(document);
            added.map_err(self.error("add document"))?;
        }
        Ok(())
    }

    fn insert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        for doc in docs {
            let document = self.document(doc);
            let added = self.writer()?.add_document(document);
            added.map_err(self.error("add document"))?;
        }
        Ok(())
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        let field = self.fields.path_raw;
        let writer = self.writer()?;
        for path in paths {
            writer.delete_term(Term::from_field_text(field, path));
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        let committed = self.writer()?.commit();
        committed.map_err(self.error("commit"))?;
        let writer = self.writer.as_mut().expect("a commit went through the writer above");
        compact(writer).map_err(|source| SearchError::Tantivy {
            dir: self.dir.clone(),
            action: "merge segments",
            source,
        })?;
        self.reader.reload().map_err(self.error("reload reader"))
    }

    fn search(&self, query: &str, limit: usize, filter: &SearchFilter) -> Result<Vec<TextHit>, SearchError> {
        let tokens = query_tokens(query);
        let searcher = self.reader.searcher();
        // Tantivy allocates for the requested count, so never ask for more than exist.
        let available = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        let limit = limit.min(available);
        if tokens.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let query = self.query(&tokens, filter);
        // Fetch past `limit` until the cut falls between two different scores, so that
        // every document tied with the last kept one is seen and the id rule can apply.
        let mut fetch = limit.saturating_add(1);
        let top = loop {
            let statistics = LiveStatistics { searcher: &searcher, lengths: &self.lengths };
            let collector = TopDocs::with_limit(fetch).order_by_score();
            let top = searcher
                .search_with_statistics_provider(&query, &collector, &statistics)
                .map_err(self.error("search"))?;
            if top.len() < fetch || top[fetch - 1].0 < top[limit - 1].0 {
                break top;
            }
            fetch = fetch.saturating_mul(2).min(available.saturating_add(1));
        };
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let document: TantivyDocument = searcher.doc(address).map_err(self.error("read stored document"))?;
            let text =
                |field| document.get_first(field).and_then(|value| value.as_str()).unwrap_or_default().to_owned();
            hits.push(TextHit { id: text(self.fields.id), path: text(self.fields.path_raw), score });
        }
        sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    fn doc_count(&self) -> Result<u64, SearchError> {
        Ok(self.reader.searcher().num_docs())
    }

    fn finish_writing(&mut self) {
        // Dropping the writer waits for its threads and releases the lock.
        self.writer = None;
    }
}

/// [`crate::search_tokens`] as a Tantivy tokenizer, so indexing and querying split
/// alike. Each indexing thread has its own copy, whose tokens (and their strings)
/// are reused from one text to the next.
#[derive(Clone, Default)]
struct CodeTokenizer {
    tokens: Vec<Token>,
}

/// Past this many tokens, a tokenizer's buffer is given back after use (a
/// very long body), so an indexing thread does not keep its peak.
const KEPT_TOKENS: usize = 1 << 16;

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        if self.tokens.len() > KEPT_TOKENS {
            self.tokens = Vec::new();
        }
        let tokens = &mut self.tokens;
        let mut count = 0;
        for_each_search_token(text, |token, span| {
            if count == tokens.len() {
                tokens.push(Token::default());
            }
            let slot = &mut tokens[count];
            slot.text.clear();
            slot.text.push_str(token);
            slot.offset_from = span.start;
            slot.offset_to = span.end;
            slot.position = count;
            slot.position_length = 1;
            count += 1;
        });
        CodeTokenStream { tokens: &mut self.tokens[..count], next: 0 }
    }
}

struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    /// Index of the token after the current one.
    next: usize,
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn tokenizer_matches_search_tokens_with_its_buffers_reused() {
        // One tokenizer over several texts, as an indexing thread uses it: a
        // long text, then shorter ones, then one past the kept buffer.
        let mut tokenizer = CodeTokenizer::default();
        let long = "def parse_configuration_files(paths): return merge_defaults(os.path.join(paths)) ".repeat(50);
        let huge = "serializers parsing ".repeat(KEPT_TOKENS);
        for text in [long.as_str(), "fn parseHttpRequest(src/store.rs)", "Ünïcödé ΣΑΣ running", "", &huge, "x.y"]
        {
            let mut stream = tokenizer.token_stream(text);
            let mut seen = Vec::new();
            let mut positions = Vec::new();
            while let Some(token) = stream.next() {
                seen.push(token.text.clone());
                positions.push(token.position);
            }
            assert_eq!(seen, crate::search_tokens(text), "tokens of {:?}", &text[..text.len().min(40)]);
            assert_eq!(positions, (0..seen.len()).collect::<Vec<_>>());
        }
    }

    fn files(dir: &Path) -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }

    fn doc(id: &str, path: &str) -> TextDoc {
        TextDoc { id: id.into(), path: path.into(), name: format!("parse {id}"), ..TextDoc::default() }
    }

    /// A writer killed after writing a commit's segments but before removing the
    /// ones they replace leaves files that no commit refers to: opening removes them.
    #[test]
    fn a_backend_done_writing_still_searches_and_lets_the_index_open_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = TantivyBackend::open(dir.path()).unwrap();
        first.upsert(&[doc("a", "a.rs")]).unwrap();
        first.commit().unwrap();
        assert!(TantivyBackend::open(dir.path()).is_err(), "the writer lock is held while writing");
        first.finish_writing();
        let second = TantivyBackend::open(dir.path()).unwrap();
        assert_eq!(first.doc_count().unwrap(), 1);
        assert_eq!(second.doc_count().unwrap(), 1);
        assert!(first.upsert(&[doc("b", "b.rs")]).is_err());
    }

    /// A writer let go of while another opens (or whose lock a forked child
    /// still shares for a moment) is waited for, not reported busy.
    #[test]
    fn opening_waits_for_a_writer_being_let_go_of() {
        let dir = tempfile::tempdir().unwrap();
        let first = TantivyBackend::open(dir.path()).unwrap();
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(50));
            drop(first);
        });
        let second = TantivyBackend::open(dir.path());
        letting_go.join().unwrap();
        assert_eq!(second.unwrap().doc_count().unwrap(), 0);
    }

    #[test]
    fn opening_removes_the_files_of_segments_no_commit_refers_to() {
        let dir = tempfile::tempdir().unwrap();
        let mut backend = TantivyBackend::open(dir.path()).unwrap();
        backend.upsert(&[doc("a", "a.rs"), doc("b", "b.rs")]).unwrap();
        backend.commit().unwrap();
        let first: BTreeMap<String, Vec<u8>> =
            files(dir.path()).into_iter().map(|f| (f.clone(), std::fs::read(dir.path().join(&f)).unwrap())).collect();
        backend.upsert(&[doc("a", "a.rs")]).unwrap();
        backend.commit().unwrap();
        drop(backend);
        let second = files(dir.path());
        let orphans: Vec<&String> = first.keys().filter(|f| !second.contains(*f)).collect();
        assert!(!orphans.is_empty(), "the replacing commit merged the first segment away");
        // Put the replaced segment's files back, listed as the index's own.
        let managed_path = dir.path().join(".managed.json");
        let mut managed: Vec<String> = serde_json::from_slice(&std::fs::read(&managed_path).unwrap()).unwrap();
        for orphan in &orphans {
            std::fs::write(dir.path().join(orphan), &first[*orphan]).unwrap();
            managed.push((*orphan).clone());
        }
        std::fs::write(&managed_path, serde_json::to_vec(&managed).unwrap()).unwrap();
        let backend = TantivyBackend::open(dir.path()).unwrap();
        assert_eq!(files(dir.path()), second, "the orphans are gone");
        assert_eq!(backend.doc_count().unwrap(), 2);
    }

    /// A first sync inserts (nothing to replace); a later one upserts over what
    /// was there: the same documents must come out with the same scores, and an
    /// insert queues no deletion, so its commit merges nothing.
    #[test]
    fn inserting_into_an_empty_index_scores_as_upserting_does() {
        let tmp = tempfile::tempdir().unwrap();
        let docs: Vec<TextDoc> = (0..40)
            .map(|i| TextDoc {
                body: format!("fn handler_{i}() {{ retry_request(backoff); parse_config_{} }}", i % 5),
                ..doc(&format!("n{i}"), &format!("src/f{}.rs", i % 7))
            })
            .collect();
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let mut inserted = TantivyBackend::open(&a).unwrap();
        inserted.insert(&docs).unwrap();
        inserted.commit().unwrap();
        let mut upserted = TantivyBackend::open(&b).unwrap();
        let older: Vec<TextDoc> = docs.iter().map(|d| TextDoc { body: "stale words".into(), ..d.clone() }).collect();
        upserted.upsert(&older).unwrap();
        upserted.commit().unwrap();
        upserted.upsert(&docs).unwrap();
        upserted.commit().unwrap();
        assert_eq!(inserted.doc_count().unwrap(), upserted.doc_count().unwrap());
        for query in ["retry request", "parse config 3", "handler_7", "stale"] {
            let filter = SearchFilter::default();
            assert_eq!(
                inserted.search(query, 20, &filter).unwrap(),
                upserted.search(query, 20, &filter).unwrap(),
                "{query}"
            );
        }
    }

    /// Many small commits (a watched repository) do not pile up segments.
    #[test]
    fn small_commits_are_merged_down_to_a_few_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut backend = TantivyBackend::open(dir.path()).unwrap();
        for i in 0..3 * MERGE_AT_SEGMENTS {
            backend.upsert(&[doc(&format!("d{i}"), &format!("f{i}.rs"))]).unwrap();
            backend.commit().unwrap();
            let segments = backend.writer.as_ref().unwrap().index().searchable_segment_ids().unwrap().len();
            assert!(segments < MERGE_AT_SEGMENTS, "{segments} segments after {} commits", i + 1);
        }
        assert_eq!(backend.doc_count().unwrap(), 3 * MERGE_AT_SEGMENTS as u64);
        assert_eq!(backend.search("parse", 100, &SearchFilter::default()).unwrap().len(), 3 * MERGE_AT_SEGMENTS);
    }

    /// Words the generated documents are made of: a few frequent, a few rare.
    const WORDS: [&str; 8] = ["parse", "date", "token", "config", "merge", "retry", "handler", "zebra"];

    /// A document whose fields' lengths vary with `seed`, some past the 40
    /// tokens from which field norms are rounded.
    fn generated(id: usize, version: usize, seed: usize) -> TextDoc {
        let words = |n: usize, skip: usize| -> String {
            (0..n).map(|k| WORDS[(seed + k * skip) % WORDS.len()]).collect::<Vec<_>>().join(" ")
        };
        TextDoc {
            id: format!("n:{id:02}"),
            path: format!("src/f{}.rs", id % 5),
            name: format!("{} {id}", WORDS[seed % WORDS.len()]),
            kind: if id.is_multiple_of(3) { "class" } else { "function" }.into(),
            signature: words(seed % 4, 3),
            doc: words((seed * 7) % 13, 5),
            body: format!("{} v{version}", words((seed * 13) % 97, 3)),
        }
    }

    /// One step of an index's history.
    #[derive(Clone, Debug)]
    enum Step {
        /// Upsert documents (id, seed), in order.
        Upsert(Vec<(usize, usize)>),
        /// Delete every document of file `src/f{n}.rs`.
        DeletePath(usize),
        Commit,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            3 => proptest::collection::vec((0..24usize, 0..1000usize), 1..6).prop_map(Step::Upsert),
            1 => (0..5usize).prop_map(Step::DeletePath),
            2 => Just(Step::Commit),
        ]
    }

    /// The queries the two indexes are compared on, with and without filters.
    fn compare(edited: &TantivyBackend, fresh: &TantivyBackend) -> Result<(), proptest::test_runner::TestCaseError> {
        let filters = [
            SearchFilter::default(),
            SearchFilter { body_only: true, ..SearchFilter::default() },
            SearchFilter { kinds: vec!["function".into()], paths_prefix: vec!["src/f1".into()], ..Default::default() },
        ];
        proptest::prop_assert_eq!(edited.doc_count().unwrap(), fresh.doc_count().unwrap());
        for query in ["parse date", "zebra", "config merge retry handler", "token v3", "parse 7", "class"] {
            for filter in &filters {
                for limit in [3, 50] {
                    let (a, b) =
                        (edited.search(query, limit, filter).unwrap(), fresh.search(query, limit, filter).unwrap());
                    // Scores compared bit for bit, not within a tolerance.
                    let bits =
                        |hits: &[TextHit]| hits.iter().map(|h| (h.id.clone(), h.score.to_bits())).collect::<Vec<_>>();
                    proptest::prop_assert_eq!(bits(&a), bits(&b), "{} {:?} {}", query, filter, limit);
                }
            }
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 24, ..Default::default() })]

        /// An index built by a history of upserts, deletions and commits (so
        /// with segments holding deleted documents, merged or not) scores
        /// every query bit for bit as a fresh index of the documents it ends
        /// with, in the same order.
        #[test]
        fn an_edited_index_scores_as_a_fresh_one(
            first in proptest::collection::vec(0..1000usize, 24),
            steps in proptest::collection::vec(step(), 1..24),
        ) {
            let tmp = tempfile::tempdir().unwrap();
            let (a, b) = (tmp.path().join("edited"), tmp.path().join("fresh"));
            std::fs::create_dir_all(&a).unwrap();
            std::fs::create_dir_all(&b).unwrap();
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
            let mut edited = TantivyBackend::open(&a).unwrap();
            // The model: what the index holds once committed.
            let mut pending: BTreeMap<String, TextDoc> = BTreeMap::new();
            let docs: Vec<TextDoc> = first.iter().enumerate().map(|(id, seed)| generated(id, 0, *seed)).collect();
            edited.insert(&docs).unwrap();
            pending.extend(docs.into_iter().map(|d| (d.id.clone(), d)));
            for (version, step) in steps.iter().enumerate() {
                match step {
                    Step::Upsert(batch) => {
                        let docs: Vec<TextDoc> = batch.iter().map(|(id, seed)| generated(*id, version + 1, *seed)).collect();
                        edited.upsert(&docs).unwrap();
                        pending.extend(docs.into_iter().map(|d| (d.id.clone(), d)));
                    }
                    Step::DeletePath(n) => {
                        let path = format!("src/f{n}.rs");
                        edited.delete_paths(std::slice::from_ref(&path)).unwrap();
                        pending.retain(|_, d| d.path != path);
                    }
                    Step::Commit => edited.commit().unwrap(),
                }
            }
            edited.commit().unwrap();
            let held = pending;
            let mut fresh = TantivyBackend::open(&b).unwrap();
            fresh.insert(&held.into_values().collect::<Vec<_>>()).unwrap();
            fresh.commit().unwrap();
            compare(&edited, &fresh)?;
            // Opened again (a later process), still the same.
            drop(edited);
            compare(&TantivyBackend::open(&a).unwrap(), &fresh)?;
        }
    }

    /// A large segment with a few documents replaced keeps its deletions (no
    /// merge: that is what keeps a refresh cheap) and still scores as a
    /// fresh index does, field lengths past the rounding point included.
    #[test]
    fn a_few_replacements_merge_nothing_and_change_no_score() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("edited"), tmp.path().join("fresh"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let mut edited = TantivyBackend::open(&a).unwrap();
        let docs: Vec<TextDoc> = (0..200).map(|id| generated(id, 0, id * 31 + 7)).collect();
        edited.insert(&docs).unwrap();
        edited.commit().unwrap();
        let segments = |backend: &TantivyBackend| backend.reader.searcher().segment_readers().to_vec();
        let first = segments(&edited);
        let replaced: Vec<TextDoc> = [3, 50, 77].iter().map(|&id| generated(id, 1, id * 17)).collect();
        edited.upsert(&replaced).unwrap();
        edited.delete_paths(&["src/f4.rs".to_owned()]).unwrap();
        edited.commit().unwrap();
        let after = segments(&edited);
        assert!(
            after.iter().any(|s| first.iter().any(|f| f.segment_id() == s.segment_id()) && s.num_deleted_docs() > 0),
            "the first segment is kept, with its deletions"
        );
        let mut wanted: BTreeMap<String, TextDoc> = docs.into_iter().map(|d| (d.id.clone(), d)).collect();
        wanted.extend(replaced.into_iter().map(|d| (d.id.clone(), d)));
        wanted.retain(|_, d| d.path != "src/f4.rs");
        let mut fresh = TantivyBackend::open(&b).unwrap();
        fresh.insert(&wanted.into_values().collect::<Vec<_>>()).unwrap();
        fresh.commit().unwrap();
        compare(&edited, &fresh).unwrap();
    }

    #[test]
    fn prefix_successor_increments_last_byte() {
        assert_eq!(prefix_successor(b"src/"), Some(b"src0".to_vec()));
        assert_eq!(prefix_successor(&[b'a', 0xff]), Some(vec![b'b']));
        assert_eq!(prefix_successor(&[0xff]), None);
    }
}
