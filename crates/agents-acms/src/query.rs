//! Keyword context: the `simple-keyword` path from a question to a packed,
//! budgeted context, end to end.
//!
//! 1. The resource's text index (BM25 over UKO nodes, `agents-search`) is
//!    brought up to date from the store: only files whose content hash
//!    differs from what the index holds are re-read and re-indexed.
//! 2. The query's hits are rendered at the requested depth and packed
//!    greedily under the token budget, best first, falling back through
//!    depths 4, 2, 0 when a fragment does not fit (the spec's depth
//!    fallback); a hit whose ancestor is already packed with its source is
//!    skipped, and a hit some of whose parts are already packed gets at most
//!    depth 4 (its structure), so no source text is packed twice. Every count comes from the shared tokenizer and includes each
//!    fragment's heading, so the rendered output never exceeds the budget.
//!
//! The multi-strategy pipeline (semantic, graph, temporal, ARCE) builds on
//! this; the packing rules here are the budget invariant it keeps.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use agents_core::tokens::TokenCounter;
use agents_search::{SearchError, SearchFilter, TextBackend, TextDoc};
use agents_store::{Store, StoreError};
use serde::Serialize;

use crate::graph::{CodeGraph, GraphError, read_source, source_range};

/// Depth fallback steps below the requested depth.
const FALLBACK: [u8; 3] = [4, 2, 0];
/// Smallest fragment worth including, in tokens.
const MIN_FRAGMENT_TOKENS: usize = 10;
/// Longest body indexed per node; longer ones are cut (search only).
const MAX_BODY_CHARS: usize = 20_000;

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

/// A keyword context request.
#[derive(Clone, Debug)]
pub struct KeywordQuery {
    pub text: String,
    /// Hard ceiling for the rendered output, headings included.
    pub max_tokens: usize,
    /// Preferred detail depth 0-9; fragments fall back to shallower ones.
    pub depth: u8,
    /// How many search hits to consider.
    pub candidates: usize,
    pub filter: SearchFilter,
}

/// One packed piece of context.
#[derive(Clone, Debug, Serialize)]
pub struct Fragment {
    pub uko_node: String,
    pub kind: String,
    pub source_path: String,
    pub source_range: String,
    pub detail_depth: u8,
    pub token_count: usize,
    /// BM25 score relative to the best hit, in [0, 1].
    pub relevance_score: f32,
    pub content: String,
}

/// What a text-index update did.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct SyncReport {
    pub files_indexed: u64,
    pub files_removed: u64,
    pub docs_indexed: u64,
}

/// The packed context.
#[derive(Clone, Debug, Serialize)]
pub struct KeywordContext {
    pub query: String,
    pub backend: String,
    pub fragments: Vec<Fragment>,
    /// Tokens of the rendered output (fragments and their headings).
    pub total_tokens: usize,
    pub max_tokens: usize,
    pub candidates: usize,
    /// Hits left out: no depth fitted the remaining budget, or an ancestor
    /// already carried their source.
    pub omitted: usize,
    pub sync: SyncReport,
}

impl KeywordContext {
    /// The context as Markdown, as agents read it.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for f in &self.fragments {
            out.push_str(&heading(f));
            out.push_str(&f.content);
            out.push('\n');
        }
        out
    }
}

fn heading(f: &Fragment) -> String {
    format!("## {} {} ({}, depth {})\n", f.source_path, f.source_range, f.kind, f.detail_depth)
}

pub struct ContextSearch {
    store: Arc<dyn Store>,
    graph: CodeGraph,
}

impl ContextSearch {
    pub fn new(store: Arc<dyn Store>) -> ContextSearch {
        ContextSearch { graph: CodeGraph::new(store.clone()), store }
    }

    /// Brings `backend` up to date with the stored index of the resource at `root`.
    pub fn sync(&self, root: &Path, index_id: &str, backend: &mut dyn TextBackend) -> Result<SyncReport, QueryError> {
        let kind = backend.name();
        let held: HashMap<String, String> = self.store.search_state(index_id, kind)?.into_iter().collect();
        let files = self.store.file_records(index_id)?;
        let mut report = SyncReport::default();
        let mut indexed = Vec::new();
        for f in &files {
            if held.get(&f.path) == Some(&f.content_hash) {
                continue;
            }
            let Ok(bytes) = std::fs::read(root.join(&f.path)) else { continue };
            let text = String::from_utf8_lossy(&bytes);
            let nodes = self.store.uko_file_nodes(index_id, &f.path)?;
            let docs: Vec<TextDoc> = nodes
                .iter()
                .map(|n| {
                    let n = &n.node;
                    let body = text.get(n.start_byte.max(0) as usize..n.end_byte.max(0) as usize).unwrap_or("");
                    TextDoc {
                        id: n.uri.clone(),
                        path: n.path.clone(),
                        name: n.name.clone(),
                        kind: n.kind.clone(),
                        signature: n.signature.clone().unwrap_or_default(),
                        doc: n.doc.clone().unwrap_or_default(),
                        body: body.chars().take(MAX_BODY_CHARS).collect(),
                    }
                })
                .collect();
            backend.delete_paths(std::slice::from_ref(&f.path))?;
            backend.upsert(&docs)?;
            report.files_indexed += 1;
            report.docs_indexed += docs.len() as u64;
            indexed.push((f.path.clone(), f.content_hash.clone()));
        }
        let current: std::collections::HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let mut removed: Vec<String> = held.keys().filter(|p| !current.contains(p.as_str())).cloned().collect();
        removed.sort();
        if !removed.is_empty() {
            backend.delete_paths(&removed)?;
        }
        report.files_removed = removed.len() as u64;
        if !indexed.is_empty() || !removed.is_empty() {
            backend.commit()?;
            self.store.set_search_state(index_id, kind, &indexed, &removed)?;
        }
        Ok(report)
    }

    /// Searches and packs (the backend must be synced).
    pub fn query(
        &self,
        root: &Path,
        index_id: &str,
        backend: &dyn TextBackend,
        query: &KeywordQuery,
        tokenizer: &dyn TokenCounter,
    ) -> Result<KeywordContext, QueryError> {
        if agents_search::code_tokens(&query.text).is_empty() {
            return Err(QueryError::EmptyQuery);
        }
        let hits = backend.search(&query.text, query.candidates, &query.filter)?;
        let best = hits.first().map_or(1.0, |h| h.score.max(f32::MIN_POSITIVE));
        let mut context = KeywordContext {
            query: query.text.clone(),
            backend: backend.name().to_string(),
            fragments: Vec::new(),
            total_tokens: 0,
            max_tokens: query.max_tokens,
            candidates: hits.len(),
            omitted: 0,
            sync: SyncReport::default(),
        };
        let requested = query.depth.min(agents_uko::render::MAX_DEPTH);
        // Packed nodes, and which of them carry their source (depth >= 5).
        let mut packed: Vec<String> = Vec::new();
        let mut with_source: Vec<String> = Vec::new();
        // Hits cluster in few files: read each once.
        let mut sources: HashMap<String, String> = HashMap::new();
        for hit in &hits {
            let remaining = query.max_tokens.saturating_sub(context.total_tokens);
            if remaining < MIN_FRAGMENT_TOKENS {
                context.omitted += 1;
                continue;
            }
            let Some(node) = self.store.uko_node(index_id, &hit.id)? else { continue };
            if with_source.iter().any(|p| is_inside(&node.node.uri, p)) {
                context.omitted += 1;
                continue;
            }
            // A node some of whose parts are already packed gets its
            // structure, not its source again.
            let ceiling = if packed.iter().any(|p| is_inside(p, &node.node.uri)) { 4 } else { requested };
            let top = requested.min(ceiling);
            if !sources.contains_key(&node.node.path) {
                sources.insert(node.node.path.clone(), read_source(root, &node.node.path)?);
            }
            let renderings = self.graph.render_depths_of(index_id, &node, &sources[&node.node.path], tokenizer)?;
            let mut chosen = None;
            for depth in std::iter::once(top).chain(FALLBACK.into_iter().filter(|d| *d < top)) {
                let (_, content, _) = &renderings[depth as usize];
                let fragment = Fragment {
                    uko_node: node.node.uri.clone(),
                    kind: node.node.kind.clone(),
                    source_path: node.node.path.clone(),
                    source_range: source_range(&node),
                    detail_depth: depth,
                    token_count: 0,
                    relevance_score: (hit.score / best).clamp(0.0, 1.0),
                    content: content.clone(),
                };
                let cost = tokenizer.count(&heading(&fragment)) + tokenizer.count(&fragment.content) + 1;
                if cost >= MIN_FRAGMENT_TOKENS && cost <= remaining {
                    chosen = Some(Fragment { token_count: cost, ..fragment });
                    break;
                }
            }
            match chosen {
                Some(f) => {
                    if f.detail_depth >= 5 {
                        with_source.push(f.uko_node.clone());
                    }
                    packed.push(f.uko_node.clone());
                    context.total_tokens += f.token_count;
                    context.fragments.push(f);
                }
                None => context.omitted += 1,
            }
        }
        Ok(context)
    }
}

/// Whether `uri` names a node inside the node `ancestor` (`file#A` is inside
/// `file`, `file#A.b` inside `file#A`).
fn is_inside(uri: &str, ancestor: &str) -> bool {
    let sep = if ancestor.contains('#') { '.' } else { '#' };
    uri.len() > ancestor.len() && uri.starts_with(ancestor) && uri[ancestor.len()..].starts_with(sep)
}

#[cfg(test)]
mod tests {
    use super::is_inside;

    #[test]
    fn containment_by_uri() {
        assert!(is_inside("uko://r/a.py#A", "uko://r/a.py"));
        assert!(is_inside("uko://r/a.py#A.b", "uko://r/a.py#A"));
        assert!(!is_inside("uko://r/a.py#AB", "uko://r/a.py#A"));
        assert!(!is_inside("uko://r/a.pyc", "uko://r/a.py"));
        assert!(!is_inside("uko://r/a.py", "uko://r/a.py"));
    }
}
