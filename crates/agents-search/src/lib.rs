//! Retrieval backends: full text, vectors, the code graph and git history.
//!
//! Full text is the main part of this page; the other backends have their own modules:
//! [`vector`] (embeddings and nearest neighbours), [`graph`] (expansion and personalised
//! PageRank over UKO edges) and [`history`] (commits and the files they touched).
//!
//! # Full-text search over UKO nodes, behind one trait with two on-disk engines
//!
//! The `simple-keyword` retrieval strategy (and the text third of ARCE) asks "which code
//! units mention these words?". This crate answers it with BM25 over the fields of a UKO
//! node ([`TextDoc`]: path, name, kind, signature, docstring, body), with field boosts so a
//! match in a name outweighs a mention in a body. Two engines implement [`TextBackend`]:
//!
//! - `tantivy` (default): a Tantivy index in an `MmapDirectory`;
//! - `fts5`: an SQLite FTS5 table in `fts5.db`, for hosts that would rather not carry a
//!   second on-disk format.
//!
//! They are chosen by kind ([`TextBackendKind`], read from `context.backends.text` by the
//! configuration layer, which rejects any other name) through [`open_text_backend`] and
//! pass one test suite (`tests/backends.rs`). Both split text with the same code-aware
//! analyzer, [`search_tokens`] ([`code_tokens`] plus English stems), so `http request`
//! finds `parseHttpRequest` and `parsing` finds `parse_date` in either.
//!
//! # Contract shared by the backends
//! - Documents are keyed by [`TextDoc::id`] (the node URI): [`TextBackend::upsert`]
//!   replaces, [`TextBackend::delete_paths`] drops every node of a file.
//! - Writes become visible to [`TextBackend::search`] and [`TextBackend::doc_count`] and
//!   durable only after [`TextBackend::commit`]; dropping a backend without committing
//!   discards them.
//! - A query is free text: it is split by [`search_tokens`], tokens are deduplicated and
//!   OR-ed; there is no query syntax, so no user text is a syntax error. A query without
//!   tokens finds nothing.
//! - Scores are BM25 summed over fields, each weighted by its boost: name 4.0,
//!   signature 2.0, path 1.5, doc 1.0, body 0.5, kind 0.5. Scores are comparable within
//!   one backend and one index only.
//! - Hits are ordered by score descending, then id ascending, so equal scores come back
//!   in the same order every time, including across the `limit` cut.
//! - [`SearchFilter`] restricts hits to paths starting with one of the given prefixes
//!   (plain string prefixes: add a trailing `/` to mean a directory) and to the given
//!   kinds; filters never change scores.

mod abbrev;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod fts5_backend;
pub mod graph;
pub mod history;
mod tantivy_backend;
mod tokenize;
pub mod vector;

use std::path::{Path, PathBuf};

pub use abbrev::{ShortForm, short_forms};
/// The kinds of text backend, defined with the configuration that names them.
pub use agents_core::config::TextBackendKind;
pub use tokenize::{code_tokens, identifiers, search_tokens};

/// The version of what the text indexes hold (the analyzer, the fields): a
/// change makes every text index a new one, built from the store. 2: stems.
pub const TEXT_INDEX_VERSION: u32 = 2;

/// One searchable unit: a UKO node with the text of its fields.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TextDoc {
    /// The node URI; unique in an index.
    pub id: String,
    /// Path of the file holding the node, relative to the repository root.
    pub path: String,
    pub name: String,
    /// The UKO kind (`function`, `class`, `module`, ...); searchable and filterable.
    pub kind: String,
    pub signature: String,
    /// The docstring or leading comment.
    pub doc: String,
    pub body: String,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct TextHit {
    pub id: String,
    pub path: String,
    /// Boosted BM25 score, greater is better.
    pub score: f32,
}

/// Restricts a search; an empty list means no restriction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchFilter {
    /// Keep hits whose path starts with one of these strings.
    pub paths_prefix: Vec<String>,
    /// Keep hits whose kind is one of these, compared exactly.
    pub kinds: Vec<String>,
    /// Match and score the body alone, unboosted, as a plain BM25 over the text:
    /// with the whole-file kinds, it ranks files by what they say, not by their names.
    pub body_only: bool,
}

/// A full-text engine over [`TextDoc`]s; see the crate documentation for the contract.
pub trait TextBackend: Send + Sync {
    /// The name of this backend's kind: `"tantivy"` or `"fts5"` ([`TextBackendKind::as_str`]).
    fn name(&self) -> &'static str;
    /// Adds the documents, replacing any stored document with the same id.
    fn upsert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError>;
    /// Adds documents the caller knows are not stored (their ids are new to the
    /// index and unique among them): [`TextBackend::upsert`] without looking for
    /// what each one replaces. A first sync into an empty index adds every
    /// document this way; queueing a replacement per document cost Tantivy
    /// gigabytes and most of the sync's time on a large repository.
    fn insert(&mut self, docs: &[TextDoc]) -> Result<(), SearchError> {
        self.upsert(docs)
    }
    /// Removes every document whose path is one of `paths`.
    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError>;
    /// Makes the changes since the last commit durable and visible.
    fn commit(&mut self) -> Result<(), SearchError>;
    /// The best `limit` documents for `query`, by score descending then id ascending.
    fn search(&self, query: &str, limit: usize, filter: &SearchFilter) -> Result<Vec<TextHit>, SearchError>;
    /// Number of committed documents.
    fn doc_count(&self) -> Result<u64, SearchError>;
    /// Gives up the right to write (Tantivy's writer lock, held from opening),
    /// keeping the backend searchable: a backend handed to searches that may
    /// outlive the caller's turn must not keep the next turn from opening
    /// the index. Writing afterwards is an error.
    fn finish_writing(&mut self) {}
}

/// Opens (creating if needed) the text backend `kind` with its files in `dir`.
///
/// `dir` is created if missing. Tantivy keeps its segment files directly in `dir`; FTS5
/// uses `dir/fts5.db`. An index that exists but cannot be read is an error.
pub fn open_text_backend(kind: TextBackendKind, dir: &Path) -> Result<Box<dyn TextBackend>, SearchError> {
    std::fs::create_dir_all(dir).map_err(|source| SearchError::CreateDir { dir: dir.to_owned(), source })?;
    match kind {
        TextBackendKind::Tantivy => Ok(Box::new(tantivy_backend::TantivyBackend::open(dir)?)),
        TextBackendKind::Fts5 => Ok(Box::new(fts5_backend::Fts5Backend::open(dir)?)),
    }
}

/// Opens the existing text index `kind` in `dir` for searching only: no writer (so
/// no writer lock: any number of readers run beside each other), nothing created. A
/// missing or unreadable index is an error; writing through it is an error. Meant for
/// a finished index that no writer changes anymore (FTS5 opens it `immutable`): one
/// that is replaced as a whole, like the knowledge index's generations.
pub fn open_text_reader(kind: TextBackendKind, dir: &Path) -> Result<Box<dyn TextBackend>, SearchError> {
    match kind {
        TextBackendKind::Tantivy => Ok(Box::new(tantivy_backend::TantivyBackend::open_read_only(dir)?)),
        TextBackendKind::Fts5 => Ok(Box::new(fts5_backend::Fts5Backend::open_read_only(dir)?)),
    }
}

/// Opens the text backend `kind` in `dir` like [`open_text_backend`], except that an
/// index that exists but cannot be opened (damaged or truncated files, a foreign format)
/// is deleted and created empty. Everything in a text index is derived, so the caller
/// refills it from its source; the error that caused the reset comes back with the
/// backend so the caller can say so. A lock held by another writer is no damage: it is
/// returned as an error and nothing is deleted.
pub fn open_or_reset_text_backend(
    kind: TextBackendKind,
    dir: &Path,
) -> Result<(Box<dyn TextBackend>, Option<SearchError>), SearchError> {
    match open_text_backend(kind, dir) {
        Ok(backend) => Ok((backend, None)),
        Err(damage) if damage.is_damage() => {
            if let Err(source) = std::fs::remove_dir_all(dir)
                && source.kind() != std::io::ErrorKind::NotFound
            {
                tracing::debug!(dir = %dir.display(), %source, "cannot remove a damaged text index");
                return Err(damage);
            }
            let backend = open_text_backend(kind, dir)?;
            Ok((backend, Some(damage)))
        }
        Err(error) => Err(error),
    }
}

/// Errors of the text backends; each names the index directory or database file.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("cannot create index directory {}: {source}", dir.display())]
    CreateDir { dir: PathBuf, source: std::io::Error },
    #[error("tantivy index {}: cannot {action}: {source}", dir.display())]
    Tantivy { dir: PathBuf, action: &'static str, source: tantivy::TantivyError },
    #[error("fts5 index {}: cannot {action}: {source}", path.display())]
    Sqlite { path: PathBuf, action: &'static str, source: rusqlite::Error },
    #[error("fts5 index {}: a previous call panicked while holding the connection", path.display())]
    Poisoned { path: PathBuf },
    #[error("embedding model file {}: {source}", path.display())]
    ModelFile { path: PathBuf, source: std::io::Error },
    #[error("embedding model in {}: {message}", dir.display())]
    Model { dir: PathBuf, message: String },
    #[error("vector index {}: {source}", path.display())]
    Corrupt { path: PathBuf, source: vector::DecodeError },
    #[error("{}: cannot {action}: {source}", path.display())]
    Io { path: PathBuf, action: &'static str, source: std::io::Error },
    #[error("hnsw graph {}: cannot {action}: {message}", path.display())]
    Graph { path: PathBuf, action: &'static str, message: String },
    #[error("vector {id:?} has {found} dimensions, the index holds {expected}")]
    Dimension { id: String, expected: usize, found: usize },
    /// A database server holding an index (PostgreSQL) failed or refused a
    /// request; `location` names it (a URL with its password redacted).
    #[error("{location}: cannot {action}: {message}")]
    Server { location: String, action: &'static str, message: String },
    #[error("git repository {}: cannot {action}: {message}", path.display())]
    Git { path: PathBuf, action: &'static str, message: String },
}

impl SearchError {
    /// Whether the error says that an index's files are damaged or unreadable as an
    /// index (truncated, garbage, a foreign format), so that rebuilding the index from
    /// its source is the cure; an index locked by another writer, a missing model or
    /// a bad argument is not damage.
    pub fn is_damage(&self) -> bool {
        match self {
            SearchError::Tantivy { source, .. } => !matches!(source, tantivy::TantivyError::LockFailure(..)),
            SearchError::Sqlite { source, .. } => matches!(
                source.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
            ),
            SearchError::Corrupt { .. } | SearchError::Graph { .. } => true,
            _ => false,
        }
    }
}

/// The indexed fields of a [`TextDoc`] with their BM25 boosts, in the order every backend
/// lays them out (public for backends in other crates, such as the server's).
pub const TEXT_FIELDS: [(&str, f32); 6] =
    [("name", 4.0), ("signature", 2.0), ("path", 1.5), ("doc", 1.0), ("body", 0.5), ("kind", 0.5)];

/// The text of `doc` for each entry of [`TEXT_FIELDS`], in the same order.
pub fn field_texts(doc: &TextDoc) -> [&str; 6] {
    [&doc.name, &doc.signature, &doc.path, &doc.doc, &doc.body, &doc.kind]
}

/// The distinct tokens of a query, in first-seen order, without English
/// function words (`the`, `of`, `a`, ...) unless the query has nothing else:
/// they match nearly every document, so they cost the longest posting lists
/// and rank nothing. Every backend searches these tokens.
pub fn query_tokens(query: &str) -> Vec<String> {
    let mut tokens = search_tokens(query);
    let mut seen = std::collections::HashSet::new();
    tokens.retain(|token| seen.insert(token.clone()));
    if tokens.iter().any(|t| !is_stop_word(t)) {
        tokens.retain(|t| !is_stop_word(t));
    }
    tokens
}

/// The content words of a query (its identifiers and their parts, without
/// function words and question words: `how`, `does`, `where`), each with its
/// English stem, so that how many of them a piece of text contains can be
/// counted ([`QueryTerms::met`]). A word and its inflections are one word
/// (`retries` meets `retry`); the words two spellings share (`parse`,
/// `parsing`) count once; a word of prose is met by the short forms code
/// writes for it too ([`short_forms`]: `args` meets "arguments", `stdout`
/// "standard output"). The chunk ranker weighs a piece by the share of
/// the question it speaks to, which its BM25 evidence (dominated by the
/// rarest word) does not tell.
#[derive(Clone, Debug, Default)]
pub struct QueryTerms {
    /// Each token that meets a word (the word, its stem, its short forms) ->
    /// the word's number.
    keys: std::collections::HashMap<String, usize>,
    words: usize,
}

impl QueryTerms {
    pub fn new(query: &str) -> QueryTerms {
        let mut keys = std::collections::HashMap::new();
        let mut by_root: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        tokenize::for_each_code_token(query, |token, _| {
            if is_stop_word(token) || is_question_word(token) || keys.contains_key(token) {
                return;
            }
            let mut root = token.to_owned();
            tokenize::with_search_stem(token, |stem| root = stem.to_owned());
            let next = by_root.len();
            let word = *by_root.entry(root.clone()).or_insert(next);
            keys.insert(token.to_owned(), word);
            keys.insert(root, word);
        });
        // A prose word is met by the short forms code writes for it too.
        // Searching them too (every `req` and `res` of an Express app)
        // measured no better: they only count towards the share a piece
        // holds, docs/benchmarks.md.
        for form in short_forms(query) {
            if let Some(&word) = keys.get(&form.word) {
                keys.entry(form.short.to_owned()).or_insert(word);
            }
        }
        QueryTerms { words: by_root.len(), keys }
    }

    /// How many words the query has.
    pub fn len(&self) -> usize {
        self.words
    }

    pub fn is_empty(&self) -> bool {
        self.words == 0
    }

    /// How many of the query's words `text` contains (as a token or by its stem).
    pub fn met(&self, text: &str) -> usize {
        self.met_all(&[text])
    }

    /// How many of the query's words the texts hold between them (a node's
    /// doc comment and its source).
    pub fn met_all(&self, texts: &[&str]) -> usize {
        self.words_met(texts).iter().filter(|&&met| met).count()
    }

    /// Which of the query's words the texts hold between them, by the word's
    /// number (`len` of them): what two texts hold together is the union of
    /// theirs ([`QueryTerms::met_all`] counts it).
    pub fn words_met(&self, texts: &[&str]) -> Vec<bool> {
        let mut seen = vec![false; self.words];
        let mut count = 0;
        for text in texts {
            if count == self.words {
                break;
            }
            self.mark(text, &mut seen, &mut count);
        }
        seen
    }

    /// Marks in `seen` the words `text` holds, counting the new ones.
    fn mark(&self, text: &str, seen: &mut [bool], count: &mut usize) {
        tokenize::for_each_search_token(text, |token, _| {
            if *count < self.words
                && let Some(&word) = self.keys.get(token)
                && !seen[word]
            {
                seen[word] = true;
                *count += 1;
            }
        });
    }

    /// The most of the query's words any `window` consecutive tokens of
    /// `text` hold ([`code_tokens`], each met as a token or by its stem): a
    /// passage that speaks of the question's words together, where
    /// [`QueryTerms::met`] counts them wherever they are.
    pub fn nearest(&self, text: &str, window: usize) -> usize {
        if self.words == 0 || window == 0 {
            return 0;
        }
        let mut hits: Vec<(usize, usize)> = Vec::new();
        let mut index = 0;
        tokenize::for_each_code_token(text, |token, _| {
            let mut word = self.keys.get(token).copied();
            if word.is_none() {
                tokenize::with_search_stem(token, |stem| word = self.keys.get(stem).copied());
            }
            if let Some(word) = word {
                hits.push((index, word));
            }
            index += 1;
        });
        let (mut in_window, mut distinct, mut best, mut first) = (vec![0usize; self.words], 0, 0, 0);
        for &(at, word) in &hits {
            in_window[word] += 1;
            if in_window[word] == 1 {
                distinct += 1;
            }
            while hits[first].0 + window <= at {
                let gone = hits[first].1;
                in_window[gone] -= 1;
                if in_window[gone] == 0 {
                    distinct -= 1;
                }
                first += 1;
            }
            best = best.max(distinct);
            if best == self.words {
                break;
            }
        }
        best
    }

    /// Where `text` meets the query's words: `(byte offset, word number)` of
    /// each token that does, in text order. With [`QueryTerms::met_within`],
    /// a file is tokenized once for all its members.
    pub fn occurrences(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        if self.words == 0 {
            return out;
        }
        tokenize::for_each_search_token(text, |token, span| {
            if let Some(&word) = self.keys.get(token) {
                out.push((span.start, word));
            }
        });
        out
    }

    /// How many of the query's words the bytes `range` of a text and `also`
    /// (a doc comment outside the range) hold between them, given that text's
    /// [`QueryTerms::occurrences`]: what [`QueryTerms::met_all`] of the slice
    /// and `also` counts.
    pub fn met_within(&self, occurrences: &[(usize, usize)], range: std::ops::Range<usize>, also: &str) -> usize {
        if self.words == 0 {
            return 0;
        }
        let lo = occurrences.partition_point(|(at, _)| *at < range.start);
        let hi = occurrences.partition_point(|(at, _)| *at < range.end);
        let mut seen = vec![false; self.words];
        let mut count =
            occurrences[lo..hi.max(lo)].iter().filter(|(_, word)| !std::mem::replace(&mut seen[*word], true)).count();
        self.mark(also, &mut seen, &mut count);
        count
    }
}

/// Words that ask rather than say (`how does X work`): never a query's content.
fn is_question_word(token: &str) -> bool {
    matches!(token, "how" | "what" | "where" | "why" | "who" | "whose" | "does" | "do" | "did" | "can" | "is")
}

/// English function words a query is searched without.
fn is_stop_word(token: &str) -> bool {
    const STOP_WORDS: [&str; 33] = [
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "have", "in", "into", "is", "it", "its",
        "of", "on", "or", "s", "should", "t", "that", "the", "their", "this", "to", "was", "when", "which", "will",
        "with",
    ];
    STOP_WORDS.binary_search(&token).is_ok()
}

/// Orders hits by score descending then id ascending: the tie rule of the contract.
pub fn sort_hits(hits: &mut [TextHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
}

#[cfg(test)]
mod query_tests {
    use super::*;

    #[test]
    fn query_terms_count_the_words_a_text_meets_once_each_whatever_their_form() {
        let terms = QueryTerms::new("How does the session retry requests with RetryPolicy?");
        // session, retry, requests, retrypolicy, policy (retry counted once)
        assert_eq!(terms.len(), 5);
        assert_eq!(terms.met("fn retries(req: Request) { session.retry(); }"), 3);
        assert_eq!(terms.met("class RetryPolicy: pass"), 3);
        assert_eq!(terms.met("nothing here"), 0);
        // Together in a few tokens, or far apart.
        let near = "session.retry(requests)";
        assert_eq!(terms.nearest(near, 8), 3);
        let apart = format!("session {} retry", "x ".repeat(20));
        assert_eq!(terms.nearest(&apart, 8), 1);
        assert_eq!(terms.met(&apart), 2);
        assert_eq!(QueryTerms::new("how does it").met("how does it"), 0);
        assert!(QueryTerms::new("").is_empty());
    }

    #[test]
    fn the_words_two_texts_meet_together_are_the_union_of_each_texts() {
        let terms = QueryTerms::new("How does the session retry requests with RetryPolicy?");
        let caller = terms.words_met(&["session.send(request)"]);
        let callee = terms.words_met(&["fn retries() {}"]);
        assert_eq!(caller.len(), terms.len());
        assert_eq!(caller.iter().filter(|&&m| m).count(), 2);
        assert_eq!(callee.iter().filter(|&&m| m).count(), 1);
        assert!(caller.iter().zip(&callee).all(|(a, b)| !(a & b)));
        assert_eq!(terms.met_all(&["session.send(request)", "fn retries() {}"]), 3);
        assert!(QueryTerms::new("").words_met(&["anything"]).is_empty());
    }

    #[test]
    fn words_met_within_a_range_of_a_text_are_those_the_slice_meets() {
        let terms = QueryTerms::new("How does the session retry requests with RetryPolicy?");
        let text = "fn retries(req: Request) { session.retry(); }\nclass RetryPolicy: pass\nnothing here\n";
        let occurrences = terms.occurrences(text);
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let range = at..at + line.len();
            assert_eq!(terms.met_within(&occurrences, range.clone(), ""), terms.met(line), "{line:?}");
            at = range.end;
        }
        assert_eq!(terms.met_within(&occurrences, 0..text.len(), ""), terms.met(text));
        assert_eq!(terms.met_within(&occurrences, 5..5, ""), 0);
        // A doc comment outside the range adds the words the slice lacks, once.
        let doc = "Retry a session's requests.";
        assert_eq!(terms.met_within(&occurrences, 0..5, doc), terms.met_all(&[&text[..5], doc]));
        assert_eq!(terms.met_all(&[doc, text]), terms.met(&format!("{doc}\n{text}")));
        assert_eq!(terms.met_within(&occurrences, 0..text.len(), doc), terms.met_all(&[text, doc]));
        assert!(terms.met_within(&occurrences, 0..5, doc) > terms.met_within(&occurrences, 0..5, ""));
        assert!(QueryTerms::new("how does it").occurrences(text).is_empty());
    }

    #[test]
    fn queries_drop_function_words_unless_nothing_else_is_left() {
        assert_eq!(query_tokens("Return the path of a file"), ["return", "path", "file"]);
        assert_eq!(query_tokens("to be or not"), ["not"]);
        assert_eq!(query_tokens("to be"), ["to", "be"]);
    }

    #[test]
    fn a_prose_word_is_met_by_its_short_forms() {
        let terms = QueryTerms::new("where is the configuration printed to standard output");
        // configuration, printed, standard, output
        assert_eq!(terms.len(), 4);
        assert_eq!(terms.met("fn show(cfg: &Config) { println!(\"{cfg}\"); io::stdout(); }"), 2);
        assert_eq!(terms.met("write(sys.stdout, conf)"), 2);
        // A name the query writes is not prose.
        assert_eq!(QueryTerms::new("RequestContext").met("req ctx"), 0);
    }
}
