//! The code-graph role: UKO nodes with their revisions, and the references
//! between them, as indexing runs wrote them (see
//! [`crate::FileIndexStore::begin_index_write`]); this role only reads.

use serde::{Deserialize, Serialize};

use crate::StoreError;

/// One UKO node as the indexer produced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoNode {
    /// `uko://<resource>/<path>` for a file, `...#<symbol_path>` for a symbol.
    pub uri: String,
    pub path: String,
    pub symbol_path: String,
    pub kind: String,
    pub name: String,
    pub parent_uri: Option<String>,
    pub language: String,
    pub start_byte: i64,
    pub end_byte: i64,
    pub start_line: i64,
    pub start_col: i64,
    pub end_line: i64,
    pub end_col: i64,
    pub signature: Option<String>,
    pub doc: Option<String>,
    /// SHA-256 of the node's source text: a change makes a new revision.
    pub content_hash: String,
}

/// A stored UKO node revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoNodeRecord {
    pub node_id: i64,
    #[serde(flatten)]
    pub node: UkoNode,
    pub valid_from: String,
    pub valid_until: Option<String>,
    pub is_current: bool,
    /// The revision this one replaced.
    pub revision_of: Option<i64>,
}

/// A reference from a node, as written and as resolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoRef {
    /// The file the reference is written in.
    pub path: String,
    pub from_uri: String,
    /// `import`, `inherits`, `calls` or `mentions`.
    pub kind: String,
    pub target: String,
    /// The last segment of the target, for finding references by name.
    pub target_name: String,
    pub names: Vec<String>,
    pub system: bool,
    pub line: i64,
    /// The node (file or symbol) it resolved to; `None` = external.
    pub resolved_uri: Option<String>,
    pub resolved_path: Option<String>,
}

/// The UKO part of an index commit.
#[derive(Clone, Debug, Default)]
pub struct UkoCommit {
    /// Files whose nodes and references are replaced (revisions kept).
    pub files: Vec<UkoFile>,
    /// Files whose nodes are retired and references deleted.
    pub removed_paths: Vec<String>,
    /// New resolutions of references in unchanged files.
    pub re_resolved: Vec<Rebinding>,
}

/// A stored reference bound anew: (ref_id, resolved uri, resolved path).
pub type Rebinding = (i64, Option<String>, Option<String>);

/// A file's fresh nodes and references.
#[derive(Clone, Debug, Default)]
pub struct UkoFile {
    pub path: String,
    pub nodes: Vec<UkoNode>,
    pub refs: Vec<UkoRef>,
}

/// A current symbol, for name resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UkoSymbol {
    pub uri: String,
    pub path: String,
    pub symbol_path: String,
    pub name: String,
    pub kind: String,
    pub parent_uri: Option<String>,
}

/// Aggregate counts of a code graph.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UkoStatsRows {
    /// (language, node kind, count).
    pub nodes: Vec<(String, String, i64)>,
    /// (language, reference kind, count, resolved).
    pub refs: Vec<(String, String, i64, i64)>,
}

/// Reads of the code graph of an index. They see committed runs only, never
/// part of a run still being written.
///
/// Guarantees (checked by `conformance::code_graph`):
/// - only current revisions are answered, except by
///   [`CodeGraphStore::uko_revisions`]: a node whose content changed keeps
///   its old revision (not current, `valid_until` set) and gets a new one
///   pointing at it (`revision_of`); a node unchanged but moved is updated
///   in place; a file that left the index has its nodes retired and its
///   references deleted;
/// - every listing is in the order its method names;
/// - unknown indexes, nodes and paths read as `None` or an empty list;
/// - [`CodeGraphStore::uko_neighbors`] equals [`neighbors_from_parts`] and
///   [`CodeGraphStore::uko_file_dependencies`] equals its default, so a
///   store's faster query may replace either.
pub trait CodeGraphStore: Send + Sync {
    /// Current nodes of one file, in source order.
    fn uko_file_nodes(&self, index_id: &str, path: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// The current revision of a node.
    fn uko_node(&self, index_id: &str, uri: &str) -> Result<Option<UkoNodeRecord>, StoreError>;
    /// Current nodes whose symbol path or name equals `query`, sorted by uri.
    fn uko_find(&self, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// The one current node named `name` (its own name, not its symbol path)
    /// whose kind is one of `kinds`; `None` when there is none or more than
    /// one. What a call by name alone (`ctx.find_object(...)`) can be bound
    /// to. This default reads every node of the name; a store may stop at
    /// the second.
    fn uko_the_one_named(
        &self,
        index_id: &str,
        name: &str,
        kinds: &[&str],
    ) -> Result<Option<UkoNodeRecord>, StoreError> {
        let mut found = self
            .uko_find(index_id, name)?
            .into_iter()
            .filter(|n| n.node.name == name && kinds.contains(&n.node.kind.as_str()));
        let first = found.next();
        Ok(if found.next().is_some() { None } else { first })
    }
    /// Current children of a node, in source order.
    fn uko_children(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// Every revision of a node, newest first.
    fn uko_revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// References written in a node, in line order.
    fn uko_refs_from(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// References written anywhere inside a node (its own and its
    /// descendants'), in path and line order.
    fn uko_refs_within(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// References resolved to a node, in path and line order.
    fn uko_refs_to(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// Every current symbol, for name resolution, sorted by uri.
    fn uko_symbols(&self, index_id: &str) -> Result<Vec<UkoSymbol>, StoreError>;
    /// References written in `path` (with their ids), in line order.
    fn uko_file_refs(&self, index_id: &str, path: &str) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// The graph neighbours of a node, each `(uri, kind, outgoing)`: its parent
    /// (`contains`, incoming), its children (`contains`, outgoing), the nodes
    /// its resolved references point at (the reference's kind, outgoing) and
    /// the nodes whose references point at it (incoming), in that order.
    fn uko_neighbors(&self, index_id: &str, uri: &str) -> Result<Vec<(String, String, bool)>, StoreError> {
        neighbors_from_parts(self, index_id, uri)
    }
    /// The other files the references of `path` resolved into (imports,
    /// calls, inheritance; not mere mentions), sorted.
    fn uko_file_dependencies(&self, index_id: &str, path: &str) -> Result<Vec<String>, StoreError> {
        let mut out: Vec<String> = self
            .uko_file_refs(index_id, path)?
            .into_iter()
            .filter(|(_, r)| r.kind != "mentions")
            .filter_map(|(_, r)| r.resolved_path)
            .filter(|to| to != path)
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }
    /// References outside `paths` that resolved into one of `paths` to a
    /// node that is no longer current, or that are unresolved and whose
    /// target name is one of `names`, by id: what a run must resolve anew.
    /// A reference whose target still exists keeps its binding.
    fn uko_refs_affected_by(
        &self,
        index_id: &str,
        paths: &[String],
        names: &[String],
    ) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// The resolved references, imports aside, of the files outside
    /// `paths` that import one of `paths` (an import reference resolved to
    /// the file), by id: what a changed package entry file (`__init__.py`,
    /// `index.ts`, `mod.rs`) may have bound by the names it re-exported,
    /// though their targets still exist.
    fn uko_refs_importing(&self, index_id: &str, paths: &[String]) -> Result<Vec<(i64, UkoRef)>, StoreError>;
    /// Every current node, sorted by uri.
    fn uko_all_nodes(&self, index_id: &str) -> Result<Vec<UkoNodeRecord>, StoreError>;
    /// Every reference, sorted by path, line and target.
    fn uko_all_refs(&self, index_id: &str) -> Result<Vec<UkoRef>, StoreError>;
    /// Node counts by (language, kind) and reference counts by (language,
    /// kind) with how many resolved, sorted.
    fn uko_stats(&self, index_id: &str) -> Result<UkoStatsRows, StoreError>;
}

/// [`CodeGraphStore::uko_neighbors`] composed of the node, children and reference
/// queries: the default, and what a store's own faster query must equal.
pub fn neighbors_from_parts<S: CodeGraphStore + ?Sized>(
    store: &S,
    index_id: &str,
    uri: &str,
) -> Result<Vec<(String, String, bool)>, StoreError> {
    let mut out = Vec::new();
    if let Some(parent) = store.uko_node(index_id, uri)?.and_then(|n| n.node.parent_uri) {
        out.push((parent, "contains".to_owned(), false));
    }
    out.extend(store.uko_children(index_id, uri)?.into_iter().map(|c| (c.node.uri, "contains".to_owned(), true)));
    for r in store.uko_refs_from(index_id, uri)? {
        if let Some(target) = r.resolved_uri {
            out.push((target, r.kind, true));
        }
    }
    out.extend(store.uko_refs_to(index_id, uri)?.into_iter().map(|r| (r.from_uri, r.kind, false)));
    Ok(out)
}
