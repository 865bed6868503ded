//! Keeping the search backends in step with the store, and the candidates
//! strategies rank.
//!
//! [`ContextSearch::sync`] brings a resource's text index (BM25 over UKO nodes)
//! and, when a model is present, its vector index (embeddings of node summaries)
//! up to date from the store: only files whose content hash differs from what a
//! backend holds are re-read and re-indexed; each backend keeps its own record.
//! A retrieval strategy (`crate::retrieval`) then ranks [`Candidate`]s, and the
//! assembly pipeline (`crate::pipeline`) renders and packs them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use agents_core::indexing::FileRecord;
use agents_search::vector::{Embedder, VectorBackend, VectorDoc};
use agents_search::{SearchError, TextBackend, TextDoc};
use agents_store::{Store, StoreError, UkoNodeRecord};
use agents_uko::lang::ANALYZER_VERSION;
use serde::Serialize;

use crate::graph::{CodeGraph, GraphError};

/// Longest body indexed per node of code; longer ones are cut (search only).
const MAX_BODY_CHARS: usize = 100_000;
/// Longest body indexed for a file no analyzer parsed (data, prose, logs): its
/// opening says what it is, and its bulk would cost more than it finds.
const MAX_UNPARSED_BODY_CHARS: usize = 20_000;
/// Names what [`embedding_text`] produces; change it when that changes, so stored
/// vectors are rebuilt.
pub const EMBEDDING_TEXT_VERSION: &str = "summary-v4";
/// Texts embedded per batch while syncing.
const EMBED_BATCH: usize = 512;

#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Search(#[from] SearchError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error("the query is empty: give some words to search for")]
    EmptyQuery,
}

/// A node (or a ready-made text) a strategy proposes, best first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// The UKO node URI (or a `plan://` / `git://` id for inline content).
    pub uri: String,
    pub path: String,
    /// Relevance in [0, 1].
    pub score: f32,
    /// Detail depth to render at (the packer may fall back below it).
    pub depth: u8,
    /// The strategy that proposed it.
    pub strategy: String,
    /// Why it was proposed, for provenance (e.g. the commits that touched it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Content to pack as it is instead of rendering a stored node.
    #[serde(skip)]
    pub content: Option<String>,
    /// Counts as evidence for its file's rank but is not packed on its own (an
    /// import, a variable, a field).
    #[serde(skip)]
    pub evidence_only: bool,
    /// Ranks its whole file as one document (with `evidence_only`): it joins the
    /// file ranking as a second list, fused by reciprocal rank (see
    /// [`crate::retrieval::rank_paths`]), and is never packed on its own.
    #[serde(skip)]
    pub whole_file: bool,
    /// Graph hops from the request's focus, when a strategy walked to it.
    #[serde(skip)]
    pub hops: Option<u32>,
    /// Set for a context entry ([`crate::tiers::entry_candidates`]): the tier it
    /// is stored in and the UKO node its content was taken from.
    #[serde(skip)]
    pub entry: Option<EntryOrigin>,
}

impl Candidate {
    /// A candidate for the stored node `uri` of the file `path`, with its
    /// relevance, depth and strategy, and nothing else: no note, no inline
    /// content, packed on its own, found by no graph walk, no context entry.
    /// The other fields are set with struct update syntax
    /// (`Candidate { note: Some(..), ..Candidate::new(..) }`).
    pub fn new(
        uri: impl Into<String>,
        path: impl Into<String>,
        score: f32,
        depth: u8,
        strategy: impl Into<String>,
    ) -> Candidate {
        Candidate {
            uri: uri.into(),
            path: path.into(),
            score,
            depth,
            strategy: strategy.into(),
            note: None,
            content: None,
            evidence_only: false,
            whole_file: false,
            hops: None,
            entry: None,
        }
    }

    /// `piece` as proposed by this candidate of a strategy of `quality`: its
    /// relevance (f32, kept to six places so it prints as computed), hops,
    /// strategy and note.
    pub fn propose(&self, piece: agents_pack::Piece, quality: f64) -> agents_pack::Piece {
        agents_pack::Piece {
            relevance: (f64::from(self.score).clamp(0.0, 1.0) * 1e6).round() / 1e6,
            quality,
            hops: self.hops,
            strategies: vec![self.strategy.clone()],
            note: self.note.clone(),
            ..piece
        }
    }
}

/// Where a context entry's content comes from.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryOrigin {
    /// The entry's storage tier, which its fragment carries.
    pub tier: agents_core::fragment::ContextTier,
    /// The UKO node a file or symbol entry was taken from (`uko://...`): when the
    /// content does not fit, the node is re-rendered at a shallower depth.
    pub node: Option<String>,
}

/// What a backend update did.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SyncReport {
    pub files_indexed: u64,
    pub files_removed: u64,
    pub docs_indexed: u64,
    /// Node summaries embedded into the vector index.
    pub vectors_indexed: u64,
}

/// Node kinds whose summaries are embedded: code units a question is about, not
/// every field, import or variable.
pub fn is_embedded_kind(kind: &str) -> bool {
    !matches!(kind, "field" | "import" | "variable")
}

/// Most identifiers of a body [`embedding_text`] adds: 24 and 96 did no
/// better on the natural-language sets (docs/benchmarks.md).
const MAX_BODY_IDENTIFIERS: usize = 48;
/// Most bytes of a body [`body_identifiers`] reads.
const MAX_BODY_SCAN_BYTES: usize = 32_768;

/// Words of a body that say nothing about what it does: keywords and the
/// receiver names most languages share, separated by spaces.
const BODY_NOISE: &str = "and bool break case char const continue def default elif else end false fn for func \
                          function if int let mut new nil none not null private protected pub public return self \
                          static struct the this true var void while";

/// The distinct identifiers of `body`, each of three characters or more,
/// not a number and not in [`BODY_NOISE`], at most
/// [`MAX_BODY_IDENTIFIERS`]: the names it calls (followed by `(`) first,
/// then the others, each in their first order. What a function calls and
/// names are the words a question about its behaviour uses when it has no
/// docstring.
fn body_identifiers(body: &str) -> Vec<&str> {
    // A body's opening says what it does; a minified bundle's one huge
    // function would otherwise be scanned whole.
    let mut end = body.len().min(MAX_BODY_SCAN_BYTES);
    while !body.is_char_boundary(end) {
        end -= 1;
    }
    let body = &body[..end];
    let mut seen = HashSet::new();
    let (mut calls, mut others) = (Vec::new(), Vec::new());
    for span in agents_search::identifiers(body) {
        let word = &body[span.clone()];
        if word.len() < 3
            || word.starts_with(|c: char| c.is_ascii_digit())
            || BODY_NOISE.split_whitespace().any(|noise| word.eq_ignore_ascii_case(noise))
            || !seen.insert(word)
        {
            continue;
        }
        if body[span.end..].trim_start_matches([' ', '\t']).starts_with('(') {
            calls.push(word);
            if calls.len() == MAX_BODY_IDENTIFIERS {
                break;
            }
        } else {
            others.push(word);
        }
    }
    calls.extend(others);
    calls.truncate(MAX_BODY_IDENTIFIERS);
    calls
}

/// The text embedded for a node: its kind and name, signature, docstring, and the
/// identifiers of its path and name split into words; a file adds the names of its
/// top-level symbols, and a node without members (a function, a method) the
/// identifiers of its `body` ([`body_identifiers`]).
pub fn embedding_text(node: &agents_store::UkoNode, child_names: &[&str], body: Option<&str>) -> String {
    let mut text = String::new();
    let words = |s: &str| agents_search::code_tokens(s).join(" ");
    text.push_str(&node.kind);
    text.push(' ');
    text.push_str(&words(&node.name));
    if let Some(signature) = &node.signature {
        text.push_str(". ");
        text.push_str(signature.chars().take(300).collect::<String>().as_str());
    }
    if let Some(doc) = &node.doc {
        text.push_str(". ");
        text.push_str(doc.chars().take(600).collect::<String>().as_str());
    }
    text.push_str(". ");
    text.push_str(&words(&node.path));
    if !child_names.is_empty() {
        text.push_str(". ");
        text.push_str(&words(&child_names.join(" ")));
    }
    if let Some(body) = body {
        let identifiers = body_identifiers(body);
        if !identifiers.is_empty() {
            text.push_str(". ");
            text.push_str(&words(&identifiers.join(" ")));
        }
    }
    text
}

/// A vector backend and the model that fills it.
pub struct VectorSink<'a> {
    pub backend: &'a mut dyn VectorBackend,
    pub embedder: &'a dyn Embedder,
}

pub struct ContextSearch {
    store: Arc<dyn Store>,
    graph: CodeGraph,
}

impl ContextSearch {
    pub fn new(store: Arc<dyn Store>) -> ContextSearch {
        ContextSearch { graph: CodeGraph::new(store.clone()), store }
    }

    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    pub fn graph(&self) -> &CodeGraph {
        &self.graph
    }

    /// Files whose content differs from what `state_key` recorded, and recorded
    /// paths gone from `files` (the index's file list). A backend holding nothing
    /// starts from scratch.
    fn stale<'f>(
        &self,
        index_id: &str,
        files: &'f [FileRecord],
        state_key: &str,
        backend_is_empty: bool,
    ) -> Result<(Vec<&'f FileRecord>, Vec<String>), QueryError> {
        let held = self.store.search_state(index_id, state_key)?;
        Ok(stale_files(files, held, backend_is_empty))
    }

    /// Brings the text backend, and the vector backend when given, up to date with
    /// the index of the resource at `root`, whose file list is `files` (as the
    /// refresh that produced it returned it). Each backend has its own record of
    /// what it holds; a file either needs is read from the store once.
    pub fn sync(
        &self,
        root: &Path,
        index_id: &str,
        files: &[FileRecord],
        text: &mut dyn TextBackend,
        vector: Option<VectorSink<'_>>,
    ) -> Result<SyncReport, QueryError> {
        self.sync_with_digest(root, index_id, files, &files_digest(files), text, vector)
    }

    /// Whether the backend recorded under `key` (a text backend's
    /// [`TextBackend::name`], or [`vector_state_key`]) holds exactly the file
    /// list whose [`files_digest`] is `digest`; an `empty` backend never does.
    /// One read of the store: what a query checks before it decides that it
    /// needs no writer.
    pub fn is_current(&self, index_id: &str, key: &str, empty: bool, digest: &str) -> Result<bool, QueryError> {
        Ok(!empty && self.store.search_digest(index_id, key)?.as_deref() == Some(digest))
    }

    /// [`ContextSearch::sync`] with the file list's [`files_digest`] already
    /// computed (a long-lived engine keeps it per index run).
    pub fn sync_with_digest(
        &self,
        root: &Path,
        index_id: &str,
        files: &[FileRecord],
        digest: &str,
        text: &mut dyn TextBackend,
        mut vector: Option<VectorSink<'_>>,
    ) -> Result<SyncReport, QueryError> {
        let mut report = SyncReport::default();
        let digest = digest.to_owned();
        let text_key = text.name();
        let text_empty = text.doc_count()? == 0;
        let vector_key = vector.as_ref().map(|sink| vector_state_key(sink.backend.name()));
        let vector_empty = vector.as_ref().is_some_and(|sink| sink.backend.is_empty());
        // Each backend already up to date with this very file list (the
        // common case: nothing changed since the last query) needs no
        // comparison at all.
        let current = |key: &str, empty: bool| self.is_current(index_id, key, empty, &digest);
        let text_current = current(text_key, text_empty)?;
        let vector_current = match &vector_key {
            Some(key) => current(key, vector_empty)?,
            None => true,
        };
        if text_current && vector_current {
            return Ok(report);
        }
        let (text_changed, text_removed) =
            if text_current { (Vec::new(), Vec::new()) } else { self.stale(index_id, files, text_key, text_empty)? };
        let (vector_changed, vector_removed) = match &vector_key {
            Some(key) if !vector_current => self.stale(index_id, files, key, vector_empty)?,
            _ => (Vec::new(), Vec::new()),
        };
        let for_text: HashSet<&str> = text_changed.iter().map(|f| f.path.as_str()).collect();
        let for_vector: HashSet<&str> = vector_changed.iter().map(|f| f.path.as_str()).collect();
        // Each path once, with what both backends record of it.
        let paths: BTreeMap<&str, &str> =
            text_changed.iter().chain(&vector_changed).map(|f| (f.path.as_str(), f.content_hash.as_str())).collect();
        if let Some(sink) = vector.as_mut() {
            let stale: Vec<String> = vector_changed.iter().map(|f| f.path.clone()).collect();
            sink.backend.delete_paths(&stale)?;
        }
        let (mut text_indexed, mut vector_indexed) = (Vec::new(), Vec::new());
        let mut pending: Vec<VectorDoc> = Vec::new();
        let mut pending_texts: Vec<String> = Vec::new();
        for (path, content_hash) in paths {
            let nodes = self.store.uko_file_nodes(index_id, path)?;
            let hash = search_hash(content_hash);
            // Read once for both backends; valid UTF-8 (the usual case) is
            // borrowed, not copied.
            let bytes = std::fs::read(root.join(path)).ok();
            let source = bytes.as_deref().map(String::from_utf8_lossy);
            if for_text.contains(path)
                && let Some(source) = &source
            {
                // A node's id is its URI, which holds its path: once the
                // path's documents are deleted (or the index was empty),
                // none of these is stored, so they are added without a
                // replacement queued for each (what made a first sync of a
                // large tree cost gigabytes); a node id given twice keeps
                // its last document, as upserts do.
                let docs = last_of_each_id(text_docs(&nodes, source));
                if !text_empty {
                    text.delete_paths(&[path.to_owned()])?;
                }
                text.insert(&docs)?;
                report.files_indexed += 1;
                report.docs_indexed += docs.len() as u64;
                text_indexed.push((path.to_owned(), hash.clone()));
            }
            if for_vector.contains(path)
                && let Some(sink) = vector.as_mut()
            {
                for (doc, text) in vector_docs(&nodes, source.as_deref()) {
                    pending.push(doc);
                    pending_texts.push(text);
                }
                if pending.len() >= EMBED_BATCH {
                    report.vectors_indexed += embed_into(sink, &mut pending, &mut pending_texts, vector_empty)?;
                }
                vector_indexed.push((path.to_owned(), hash));
            }
        }
        if !text_removed.is_empty() {
            text.delete_paths(&text_removed)?;
        }
        report.files_removed = text_removed.len() as u64;
        if !text_indexed.is_empty() || !text_removed.is_empty() {
            text.commit()?;
        }
        if !text_current {
            self.store.set_search_state(index_id, text_key, &text_indexed, &text_removed, &digest)?;
        }
        if let (Some(sink), Some(key)) = (vector.as_mut(), &vector_key) {
            report.vectors_indexed += embed_into(sink, &mut pending, &mut pending_texts, vector_empty)?;
            if !vector_removed.is_empty() {
                sink.backend.delete_paths(&vector_removed)?;
            }
            if !vector_indexed.is_empty() || !vector_removed.is_empty() {
                sink.backend.commit()?;
            }
            if !vector_current {
                self.store.set_search_state(index_id, key, &vector_indexed, &vector_removed, &digest)?;
            }
        }
        Ok(report)
    }
}

/// The key under which the store records what a vector backend named `name`
/// ([`VectorBackend::name`]) holds.
pub fn vector_state_key(name: &str) -> String {
    format!("vector-{name}")
}

/// SHA-256 over a file list's paths and content hashes, and the analyzers'
/// version ([`ANALYZER_VERSION`]) whose graph the search documents come
/// from: equal digests, equal lists of the same graph.
pub fn files_digest(files: &[FileRecord]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(b"analyzers ");
    hasher.update(ANALYZER_VERSION.to_le_bytes());
    hasher.update(b"\n");
    for f in files {
        hasher.update(f.path.as_bytes());
        hasher.update([0]);
        hasher.update(f.content_hash.as_bytes());
        hasher.update([b'\n']);
    }
    agents_core::digest::hex(&hasher.finalize())
}

/// What a search backend records of a file it holds: the SHA-256 of the
/// file's content hash and the analyzers' version ([`ANALYZER_VERSION`])
/// whose graph nodes its documents were made from. When an upgrade has the
/// graph re-analysed, the records of unchanged files no longer match, so the
/// next sync makes their documents again from the new nodes, while every
/// path a backend holds stays recorded (a file removed meanwhile still goes).
pub fn search_hash(content_hash: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(content_hash.as_bytes());
    hasher.update(b" analyzers ");
    hasher.update(ANALYZER_VERSION.to_le_bytes());
    agents_core::digest::hex(&hasher.finalize())
}

/// The files of `files` whose [`search_hash`] differs from the one `held`
/// records for their path (or that it does not record; every file when the
/// backend is `empty`), in `files`' order, and the paths `held` records that `files`
/// lacks, sorted. Both lists are walked side by side in path order (the
/// store and a refresh give them sorted, so sorting them is only a check): a
/// refresh of a few files among tens of thousands compares them without
/// hashing a path or building a map.
fn stale_files(files: &[FileRecord], mut held: Vec<(String, String)>, empty: bool) -> (Vec<&FileRecord>, Vec<String>) {
    let mut order: Vec<usize> = (0..files.len()).collect();
    if !files.is_sorted_by(|a, b| a.path <= b.path) {
        order.sort_by(|&a, &b| files[a].path.cmp(&files[b].path));
    }
    if !held.is_sorted_by(|a, b| a.0 <= b.0) {
        held.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let mut changed: Vec<usize> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    let mut held = held.into_iter().peekable();
    let (mut last_path, mut recorded): (Option<&str>, Option<String>) = (None, None);
    for i in order {
        let path = files[i].path.as_str();
        // Recorded paths before this one are gone from the list.
        while let Some((gone, _)) = held.next_if(|(p, _)| p.as_str() < path) {
            removed.push(gone);
        }
        // A path recorded twice (no store does) counts as its last record; a
        // path listed twice (no refresh does) compares with it each time.
        if last_path != Some(path) {
            recorded = None;
        }
        while let Some((_, hash)) = held.next_if(|(p, _)| p == path) {
            recorded = Some(hash);
        }
        last_path = Some(path);
        if empty || recorded.as_deref() != Some(search_hash(&files[i].content_hash).as_str()) {
            changed.push(i);
        }
    }
    removed.extend(held.map(|(path, _)| path));
    removed.dedup();
    changed.sort_unstable();
    (changed.into_iter().map(|i| &files[i]).collect(), removed)
}

/// The full-text documents of one file's nodes. Containers inside a file (classes,
/// namespaces) are indexed without a body: their members carry it, and the file's
/// own node carries the whole text, so no text is indexed three times.
fn text_docs(nodes: &[UkoNodeRecord], source: &str) -> Vec<TextDoc> {
    let containers: std::collections::HashSet<&str> =
        nodes.iter().filter_map(|n| n.node.parent_uri.as_deref()).collect();
    nodes
        .iter()
        .map(|n| {
            let n = &n.node;
            let nested_container = n.parent_uri.is_some() && containers.contains(n.uri.as_str());
            let body = if nested_container {
                ""
            } else {
                source.get(n.start_byte.max(0) as usize..n.end_byte.max(0) as usize).unwrap_or("")
            };
            let cap = if n.kind == "file" { MAX_UNPARSED_BODY_CHARS } else { MAX_BODY_CHARS };
            TextDoc {
                id: n.uri.clone(),
                path: n.path.clone(),
                name: n.name.clone(),
                kind: n.kind.clone(),
                signature: n.signature.clone().unwrap_or_default(),
                doc: n.doc.clone().unwrap_or_default(),
                body: body.chars().take(cap).collect(),
            }
        })
        .collect()
}

/// The vector documents (still without vectors) of one file's embedded nodes, each
/// with the text to embed. The file's own node (kind `file` or `module`) lists its
/// members' names; a node no other names as its parent adds its body's
/// identifiers from `source`, the file's text (when it could be read).
fn vector_docs(nodes: &[UkoNodeRecord], source: Option<&str>) -> Vec<(VectorDoc, String)> {
    let parents: HashSet<&str> = nodes.iter().filter_map(|n| n.node.parent_uri.as_deref()).collect();
    nodes
        .iter()
        .filter(|n| is_embedded_kind(&n.node.kind))
        .map(|n| {
            let body = source
                .filter(|_| n.node.parent_uri.is_some() && !parents.contains(n.node.uri.as_str()))
                .and_then(|source| source.get(n.node.start_byte.max(0) as usize..n.node.end_byte.max(0) as usize));
            let children: Vec<&str> = if n.node.parent_uri.is_none() {
                nodes
                    .iter()
                    .filter(|c| c.node.parent_uri.as_deref() == Some(n.node.uri.as_str()))
                    .map(|c| c.node.name.as_str())
                    .take(40)
                    .collect()
            } else {
                Vec::new()
            };
            let doc = VectorDoc {
                id: n.node.uri.clone(),
                path: n.node.path.clone(),
                kind: n.node.kind.clone(),
                vector: Vec::new(),
            };
            (doc, embedding_text(&n.node, &children, body))
        })
        .collect()
}

/// Embeds the pending texts into their documents and stores them; empties both lists.
/// `docs` with only the last document of each id, in their order: what
/// upserting them one by one would leave.
fn last_of_each_id(docs: Vec<TextDoc>) -> Vec<TextDoc> {
    let keep: std::collections::HashSet<usize> = {
        let mut last: HashMap<&str, usize> = HashMap::with_capacity(docs.len());
        for (i, doc) in docs.iter().enumerate() {
            last.insert(doc.id.as_str(), i);
        }
        last.into_values().collect()
    };
    if keep.len() == docs.len() {
        return docs;
    }
    docs.into_iter().enumerate().filter(|(i, _)| keep.contains(i)).map(|(_, doc)| doc).collect()
}

/// Embeds the pending documents and adds them: inserted when the backend
/// was empty before this sync (`fresh`: none of them can be stored yet),
/// upserted otherwise.
fn embed_into(
    sink: &mut VectorSink<'_>,
    docs: &mut Vec<VectorDoc>,
    texts: &mut Vec<String>,
    fresh: bool,
) -> Result<u64, QueryError> {
    if docs.is_empty() {
        return Ok(0);
    }
    let vectors = sink.embedder.embed(texts);
    for (doc, vector) in docs.iter_mut().zip(vectors) {
        doc.vector = vector;
    }
    if fresh {
        sink.backend.insert(docs)?;
    } else {
        sink.backend.upsert(docs)?;
    }
    let count = docs.len() as u64;
    docs.clear();
    texts.clear();
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, body: &str) -> TextDoc {
        TextDoc { id: id.into(), body: body.into(), ..TextDoc::default() }
    }

    #[test]
    fn a_repeated_id_keeps_its_last_document_in_order() {
        let unique = vec![doc("a", "1"), doc("b", "2")];
        assert_eq!(last_of_each_id(unique.clone()), unique);
        let repeated = vec![doc("a", "1"), doc("b", "2"), doc("a", "3"), doc("c", "4")];
        assert_eq!(last_of_each_id(repeated), vec![doc("b", "2"), doc("a", "3"), doc("c", "4")]);
    }

    #[test]
    fn body_identifiers_are_distinct_words_without_keywords_or_numbers() {
        let body = "def merge_patch(target, patch):\n    if patch is None: return target  # null deletes\n    \
                    for key in patch: merge_patch(target[key], patch[key]) or 0x10 or 42";
        assert_eq!(body_identifiers(body), ["merge_patch", "target", "patch", "deletes", "key"]);
        assert_eq!(
            body_identifiers("let total = sum (items) + count(other)"),
            ["sum", "count", "total", "items", "other"]
        );
        let long: String = (0..100).map(|i| format!("name{i} ")).collect();
        assert_eq!(body_identifiers(&long).len(), MAX_BODY_IDENTIFIERS);
        // Only the opening of a huge body is read, and cut on a character.
        let huge = format!("call_me() {}{}", "€".repeat(20_000), "late_call() ".repeat(1_000));
        assert_eq!(body_identifiers(&huge), ["call_me"]);
    }

    fn node(uri: &str, kind: &str, name: &str, parent: Option<&str>, bytes: (i64, i64)) -> UkoNodeRecord {
        UkoNodeRecord {
            node_id: 0,
            node: agents_store::UkoNode {
                uri: uri.into(),
                path: "lib.c".into(),
                symbol_path: name.into(),
                kind: kind.into(),
                name: name.into(),
                parent_uri: parent.map(Into::into),
                language: "c".into(),
                start_byte: bytes.0,
                end_byte: bytes.1,
                start_line: 1,
                start_col: 0,
                end_line: 1,
                end_col: 0,
                signature: None,
                doc: None,
                content_hash: String::new(),
            },
            valid_from: String::new(),
            valid_until: None,
            is_current: true,
            revision_of: None,
        }
    }

    /// A function without members embeds the words of its body (a C
    /// function has no docstring to say what it does); a class with members
    /// leaves its body to them, and the file lists its symbols.
    #[test]
    fn a_leaf_embeds_its_body_words_and_a_container_its_members() {
        let source = "struct Pool { int size; };\nvoid pool_release(Pool *p) { free_buffer(p->slots); }\n";
        let release = source.find("void").unwrap() as i64;
        let nodes = vec![
            node("f", "module", "lib.c", None, (0, source.len() as i64)),
            node("f#Pool", "struct", "Pool", Some("f"), (0, 26)),
            node("f#Pool.size", "method", "size", Some("f#Pool"), (14, 23)),
            node("f#pool_release", "function", "pool_release", Some("f"), (release, source.len() as i64 - 1)),
        ];
        let texts: HashMap<String, String> =
            vector_docs(&nodes, Some(source)).into_iter().map(|(doc, text)| (doc.id, text)).collect();
        // The names it calls first, then the others.
        assert!(
            texts["f#pool_release"].ends_with(". pool_release pool release free_buffer free buffer pool slots"),
            "{}",
            texts["f#pool_release"]
        );
        assert!(!texts["f#Pool"].contains("size"), "{}", texts["f#Pool"]);
        assert!(texts["f"].ends_with(". pool pool_release pool release"), "{}", texts["f"]);
        let without_source: HashMap<String, String> =
            vector_docs(&nodes, None).into_iter().map(|(doc, text)| (doc.id, text)).collect();
        assert!(!without_source["f#pool_release"].contains("free"), "{}", without_source["f#pool_release"]);
    }

    fn record(path: &str, hash: &str) -> FileRecord {
        FileRecord {
            path: path.into(),
            content_hash: hash.into(),
            token_count: 0,
            size_bytes: 0,
            language: String::new(),
            last_modified: String::new(),
        }
    }

    /// Records made from another analyzers' graph (before the version was
    /// recorded: the plain content hash) leave every file stale, and a path
    /// held and no longer listed is still removed.
    #[test]
    fn another_graph_leaves_every_file_stale_and_removals_known() {
        let files = vec![record("a.py", "ha"), record("b.py", "hb")];
        let older: Vec<(String, String)> =
            [("a.py", "ha"), ("b.py", "hb"), ("gone.py", "hg")].map(|(p, h)| (p.into(), h.into())).into();
        let (changed, removed) = stale_files(&files, older, false);
        assert_eq!(changed.len(), 2);
        assert_eq!(removed, ["gone.py"]);
        let current: Vec<(String, String)> =
            [("a.py", "ha"), ("b.py", "hb")].map(|(p, h)| (p.to_owned(), search_hash(h))).into();
        assert_eq!(stale_files(&files, current, false), (Vec::new(), Vec::new()));
        assert_ne!(search_hash("ha"), search_hash("hb"));
        assert_eq!(search_hash("ha").len(), 64);
    }

    /// What [`stale_files`] computes, the obvious way: a map of what is held.
    fn stale_by_map(files: &[FileRecord], held: Vec<(String, String)>, empty: bool) -> (Vec<&FileRecord>, Vec<String>) {
        let held: HashMap<String, String> = held.into_iter().collect();
        let current: std::collections::HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let mut removed: Vec<String> = held.keys().filter(|p| !current.contains(p.as_str())).cloned().collect();
        removed.sort();
        let changed =
            files.iter().filter(|f| empty || held.get(&f.path) != Some(&search_hash(&f.content_hash))).collect();
        (changed, removed)
    }

    proptest::proptest! {
        /// The side-by-side walk finds what a map of the held records finds,
        /// whatever the order of either list (and with paths repeated).
        #[test]
        fn stale_files_are_those_a_map_finds(
            files in proptest::collection::vec((0..40u8, 0..3u8), 0..40),
            held in proptest::collection::vec((0..40u8, 0..3u8), 0..40),
            sorted in proptest::bool::ANY,
            empty in proptest::bool::ANY,
        ) {
            let mut files: Vec<FileRecord> = files
                .into_iter()
                .map(|(p, h)| FileRecord {
                    path: format!("f{p}"),
                    content_hash: format!("h{h}"),
                    token_count: 0,
                    size_bytes: 0,
                    language: String::new(),
                    last_modified: String::new(),
                })
                .collect();
            let mut held: Vec<(String, String)> =
                held.into_iter().map(|(p, h)| (format!("f{p}"), search_hash(&format!("h{h}")))).collect();
            if sorted {
                files.sort_by(|a, b| a.path.cmp(&b.path));
                held.sort();
            }
            proptest::prop_assert_eq!(stale_files(&files, held.clone(), empty), stale_by_map(&files, held, empty));
        }
    }
}
