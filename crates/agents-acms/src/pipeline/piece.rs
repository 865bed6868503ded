//! How a stored UKO node is rendered at another depth ([`StoreRenderer`]).
//! The piece itself, the depth renderer trait and the inline renderer are
//! agents-pack's, shared with the knowledge half; they are re-exported here
//! under their old paths for the engine and the CLI.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

pub use agents_pack::piece::{
    DEPTH_STEPS, DepthRenderer, InlineRenderer, MIN_FRAGMENT_TOKENS, Piece, PieceRole, cost, heading, is_inside,
    line_span, source_inside,
};
use agents_search::SearchFilter;
use agents_store::{Store, UkoNodeRecord, UkoRef};
use agents_uko::render::ShownElsewhere;

use crate::graph::{CodeGraph, read_source, source_range};

/// Renders stored UKO nodes from the index (and the files under `root`); inline
/// pieces fall back to [`InlineRenderer`]. Files and nodes are read once.
pub struct StoreRenderer<'a> {
    root: &'a Path,
    index_id: &'a str,
    store: &'a dyn Store,
    graph: &'a CodeGraph,
    sources: Mutex<HashMap<String, Option<std::sync::Arc<String>>>>,
    nodes: Mutex<HashMap<String, Option<UkoNodeRecord>>>,
    /// Children and references of each node rendered so far: the resolver and
    /// the packer render a node again at shallower depths.
    contexts: Mutex<HashMap<String, crate::graph::NodeContext>>,
    /// The references written inside each node asked about, read once: the
    /// ranker reads a piece's called names and the callee proposals its
    /// calls.
    refs: Mutex<HashMap<String, std::sync::Arc<Vec<UkoRef>>>>,
    /// The nodes of each file asked about, read once: the member proposals
    /// read the leading files' and the callee proposals a caller's.
    file_nodes: Mutex<HashMap<String, std::sync::Arc<Vec<UkoNodeRecord>>>>,
    /// The request's restriction of paths and kinds: a new piece
    /// ([`DepthRenderer::piece`]) is never made of a node outside it.
    filter: SearchFilter,
}

/// The node kinds a call reaches: what [`DepthRenderer::callees`] lists.
pub(crate) const CALLABLE_KINDS: [&str; 2] = ["function", "method"];

impl<'a> StoreRenderer<'a> {
    pub fn new(root: &'a Path, index_id: &'a str, store: &'a dyn Store, graph: &'a CodeGraph) -> StoreRenderer<'a> {
        StoreRenderer {
            root,
            index_id,
            store,
            graph,
            sources: Mutex::new(HashMap::new()),
            nodes: Mutex::new(HashMap::new()),
            contexts: Mutex::new(HashMap::new()),
            refs: Mutex::new(HashMap::new()),
            file_nodes: Mutex::new(HashMap::new()),
            filter: SearchFilter::default(),
        }
    }

    /// The renderer makes new pieces only of nodes within `filter`'s paths
    /// and kinds (the request's `--under` and `--kind`): the packer brings in
    /// a whole file only where the request looks.
    pub fn within(mut self, filter: &SearchFilter) -> StoreRenderer<'a> {
        self.filter = SearchFilter { body_only: false, ..filter.clone() };
        self
    }

    fn admits(&self, node: &UkoNodeRecord) -> bool {
        let SearchFilter { paths_prefix, kinds, .. } = &self.filter;
        (paths_prefix.is_empty() || paths_prefix.iter().any(|p| node.node.path.starts_with(p.as_str())))
            && (kinds.is_empty() || kinds.contains(&node.node.kind))
    }

    /// The stored node `uri`, read once.
    pub fn node(&self, uri: &str) -> Option<UkoNodeRecord> {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(node) = nodes.get(uri) {
            return node.clone();
        }
        let node = self.store.uko_node(self.index_id, uri).ok().flatten();
        nodes.insert(uri.to_owned(), node.clone());
        node
    }

    /// The references written anywhere inside the node `uri`, read once
    /// (none when the store cannot answer).
    fn refs_within(&self, uri: &str) -> std::sync::Arc<Vec<UkoRef>> {
        let mut refs = self.refs.lock().unwrap_or_else(|e| e.into_inner());
        refs.entry(uri.to_owned())
            .or_insert_with(|| std::sync::Arc::new(self.store.uko_refs_within(self.index_id, uri).unwrap_or_default()))
            .clone()
    }

    /// The current nodes of the file `path`, read once (none when the store
    /// cannot answer).
    fn file_nodes(&self, path: &str) -> std::sync::Arc<Vec<UkoNodeRecord>> {
        let mut files = self.file_nodes.lock().unwrap_or_else(|e| e.into_inner());
        files
            .entry(path.to_owned())
            .or_insert_with(|| std::sync::Arc::new(self.store.uko_file_nodes(self.index_id, path).unwrap_or_default()))
            .clone()
    }

    fn source(&self, path: &str) -> Option<std::sync::Arc<String>> {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        sources
            .entry(path.to_owned())
            .or_insert_with(|| read_source(self.root, path).ok().map(std::sync::Arc::new))
            .clone()
    }

    fn new_piece(&self, uri: &str, depth: u8) -> Option<Piece> {
        let node = self.node(uri).filter(|node| self.admits(node))?;
        let content = self.render_node(&node, depth)?;
        let start_line = u32::try_from(node.node.start_line).unwrap_or(0);
        Some(Piece {
            source_range: source_range(&node),
            start_line,
            ..Piece::new(node.node.uri.clone(), node.node.kind.clone(), node.node.path.clone(), content, depth)
        })
    }

    fn render_node_around(&self, node: &UkoNodeRecord, shown: &[ShownElsewhere]) -> Option<String> {
        let source = self.source(&node.node.path)?;
        let mut contexts = self.contexts.lock().unwrap_or_else(|e| e.into_inner());
        let context = contexts.entry(node.node.uri.clone()).or_default();
        context.load(self.graph, self.index_id, node, agents_uko::render::MAX_DEPTH).ok()?;
        Some(context.render_around(node, &source, shown))
    }

    fn render_node(&self, node: &UkoNodeRecord, depth: u8) -> Option<String> {
        let source = self.source(&node.node.path)?;
        let depth = depth.min(agents_uko::render::MAX_DEPTH);
        let mut contexts = self.contexts.lock().unwrap_or_else(|e| e.into_inner());
        let context = contexts.entry(node.node.uri.clone()).or_default();
        context.load(self.graph, self.index_id, node, depth).ok()?;
        Some(context.render(node, &source, depth))
    }
}

impl StoreRenderer<'_> {
    /// The one implementation of the interface method `node` (declared
    /// without a body): the method of the same name, with a body, of the
    /// classes whose `inherits` edges resolve to its interface. `None` when
    /// its parent is no interface or there is not exactly one.
    fn implementation_of(&self, node: &UkoNodeRecord) -> Option<(String, String)> {
        let parent = self.node(node.node.parent_uri.as_deref()?)?;
        if parent.node.kind != "interface" {
            return None;
        }
        let refs = self.store.uko_refs_to(self.index_id, &parent.node.uri).ok()?;
        let mut classes: Vec<&str> =
            refs.iter().filter(|r| r.kind == "inherits").map(|r| r.from_uri.as_str()).collect();
        classes.sort_unstable();
        classes.dedup();
        let mut found: Vec<(String, String)> = Vec::new();
        for class in classes {
            for member in self.store.uko_children(self.index_id, class).ok()? {
                if member.node.name == node.node.name
                    && member.node.kind == "method"
                    && self.has_body(&member) == Some(true)
                {
                    found.push((member.node.uri, member.node.path));
                }
            }
        }
        (found.len() == 1).then(|| found.remove(0))
    }

    /// Whether the function or method `node` comes with its body: its text
    /// holds a `{` and does not end in `;` (a C or C++ prototype does).
    fn has_body(&self, node: &UkoNodeRecord) -> Option<bool> {
        let source = self.source(&node.node.path)?;
        let text = node_text(&source, node)?;
        Some(text.contains('{') && !text.trim_end().ends_with(';'))
    }
}

/// The source of `node` in its file's text `source`; a whole file's node
/// may record no byte range: it is the whole text.
fn node_text<'s>(source: &'s str, node: &UkoNodeRecord) -> Option<&'s str> {
    let start = usize::try_from(node.node.start_byte).unwrap_or(0);
    let end = usize::try_from(node.node.end_byte).unwrap_or(0).min(source.len());
    if end <= start { Some(source) } else { source.get(start..end) }
}

/// Whether the file name of `path` ends with one of `suffixes`, in any case.
fn name_ends_with(path: &str, suffixes: &[&str]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    suffixes.iter().any(|suffix| name.ends_with(suffix))
}

/// Whether `path` is a C or C++ header, where prototypes declare what a
/// source file defines.
fn is_header(path: &str) -> bool {
    name_ends_with(path, &[".h", ".hh", ".hpp", ".hxx", ".h++", ".inl"])
}

/// Whether `path` is in a language whose interfaces declare methods that
/// classes implement under other names (`Connection.execute`,
/// `HttpConnection.execute`).
fn has_interfaces(path: &str) -> bool {
    matches!(
        agents_uko::language::detect_language(path, None),
        "java" | "csharp" | "kotlin" | "typescript" | "tsx" | "swift" | "scala" | "php"
    )
}

/// The lines `piece` shows, as a container's source leaves them out
/// ([`DepthRenderer::render_around`]): a range ending at column 0 of a line
/// holds none of it.
fn shown_elsewhere(piece: &Piece) -> Option<ShownElsewhere> {
    let (_, end) = piece.source_range.split_once('-')?;
    let (first_line, last_line) = line_span(&piece.source_range)?;
    let ends_at_column_0 = end.split_once(':').is_some_and(|(_, column)| column == "0");
    let last_line = if ends_at_column_0 && last_line > first_line { last_line - 1 } else { last_line };
    let symbol = piece.uko_node.split_once('#').map_or(piece.path.as_str(), |(_, symbol)| symbol);
    Some(ShownElsewhere { first_line, last_line, title: format!("{} {}", piece.kind, strip_ordinals(symbol)) })
}

/// `symbol` without the ordinals that tell apart a name defined again in
/// one scope (`Cache.Insert~2` -> `Cache.Insert`).
fn strip_ordinals(symbol: &str) -> String {
    symbol.split('.').map(crate::retrieval::without_ordinal).collect::<Vec<_>>().join(".")
}

/// The first paragraph of a doc comment: what it says of its node, before
/// the details, examples and caveats after the first blank line.
pub(crate) fn doc_summary(doc: &str) -> &str {
    let doc = doc.trim_start();
    let mut end = doc.len();
    let mut at = 0;
    for line in doc.split_inclusive('\n') {
        if line.trim().is_empty() {
            end = at;
            break;
        }
        at += line.len();
    }
    doc[..end].trim_end()
}

impl DepthRenderer for StoreRenderer<'_> {
    fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
        if piece.inline {
            // A file or symbol entry: its node, from the index, at the shallower
            // depth; summarised when the node is no longer indexed.
            if depth < piece.depth
                && let Some(node) = piece.source_node.as_deref().and_then(|uri| self.node(uri))
                && let Some(content) = self.render_node(&node, depth)
            {
                return Some(content);
            }
            return InlineRenderer.render(piece, depth);
        }
        if depth == piece.depth {
            return Some(piece.content.clone());
        }
        let node = self.node(&piece.uko_node)?;
        self.render_node(&node, depth)
    }

    fn piece(&self, uri: &str, depth: u8) -> Option<Piece> {
        self.new_piece(uri, depth)
    }

    fn render_around(&self, piece: &Piece, shown: &[&Piece]) -> Option<String> {
        if piece.inline {
            return None;
        }
        let node = self.node(&piece.uko_node)?;
        let shown: Vec<ShownElsewhere> = shown.iter().filter_map(|p| shown_elsewhere(p)).collect();
        self.render_node_around(&node, &shown)
    }

    fn source_bytes(&self, uri: &str) -> Option<usize> {
        let node = self.node(uri)?;
        usize::try_from(node.node.end_byte - node.node.start_byte).ok()
    }

    fn definition_of(&self, uri: &str) -> Option<(String, String)> {
        // Only a symbol of a header or of a language with interfaces
        // (`uko://<resource>/<path>#<symbol>`) can be one: every other
        // candidate costs no read.
        let file = uri.split_once('#')?.0;
        let header = is_header(file);
        if !header && !has_interfaces(file) {
            return None;
        }
        let node = self.node(uri)?;
        if !matches!(node.node.kind.as_str(), "function" | "method") || self.has_body(&node)? {
            return None;
        }
        if !header {
            return self.implementation_of(&node);
        }
        let symbol = strip_ordinals(&node.node.symbol_path);
        let found = self.store.uko_find(self.index_id, &symbol).ok()?;
        // One definition, the same every time: a source file's before a
        // header's (an inline one), then by URI (the store's order).
        let mut definitions: Vec<&UkoNodeRecord> = found
            .iter()
            .filter(|d| {
                d.node.uri != node.node.uri
                    && matches!(d.node.kind.as_str(), "function" | "method")
                    && strip_ordinals(&d.node.symbol_path) == symbol
                    && self.has_body(d) == Some(true)
            })
            .collect();
        definitions.sort_by_key(|d| is_header(&d.node.path));
        definitions.first().map(|d| (d.node.uri.clone(), d.node.path.clone()))
    }

    fn file_members(&self, path: &str) -> Vec<agents_pack::piece::FileMember> {
        let records = self.file_nodes(path);
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        records
            .iter()
            .map(|r| {
                let bytes =
                    usize::try_from(r.node.start_byte).unwrap_or(0)..usize::try_from(r.node.end_byte).unwrap_or(0);
                let member = agents_pack::piece::FileMember {
                    uri: r.node.uri.clone(),
                    kind: r.node.kind.clone(),
                    bytes,
                    doc: doc_summary(r.node.doc.as_deref().unwrap_or("")).to_owned(),
                };
                nodes.entry(r.node.uri.clone()).or_insert_with(|| Some(r.clone()));
                member
            })
            .collect()
    }

    fn with_file_text(&self, path: &str, read: &mut dyn FnMut(&str)) -> bool {
        self.source(path).map(|text| read(&text)).is_some()
    }

    fn called_names(&self, uri: &str) -> Vec<String> {
        let names: std::collections::BTreeSet<String> = self
            .refs_within(uri)
            .iter()
            .filter(|r| r.kind == "calls" && !r.target_name.is_empty())
            .map(|r| r.target_name.clone())
            .collect();
        names.into_iter().collect()
    }

    fn callees(&self, uri: &str) -> Vec<(String, String)> {
        let callable = |kind: &str| CALLABLE_KINDS.contains(&kind);
        let Some(caller) = self.node(uri).filter(|n| callable(&n.node.kind)) else { return Vec::new() };
        let refs = self.refs_within(uri);
        let mut out: Vec<(String, String)> = Vec::new();
        let mut names = std::collections::HashSet::new();
        // The caller's file's nodes, read at the first call by name alone.
        let mut local: Option<std::sync::Arc<Vec<UkoNodeRecord>>> = None;
        // A macro (`matches!`) is no function of the repository.
        for r in refs.iter().filter(|r| r.kind == "calls" && !r.target.ends_with('!')) {
            let found = match (&r.resolved_uri, &r.resolved_path) {
                (Some(to), Some(path)) => {
                    self.node(to).filter(|n| callable(&n.node.kind)).map(|_| (to.clone(), path.clone()))
                }
                _ => {
                    let name = r.target_name.as_str();
                    if name.len() < 3 || !names.insert(name) {
                        continue;
                    }
                    let local = local.get_or_insert_with(|| self.file_nodes(&caller.node.path));
                    let mut bearers = local
                        .iter()
                        .filter(|d| d.node.name == name && callable(&d.node.kind) && d.node.uri != caller.node.uri);
                    match (bearers.next(), bearers.next()) {
                        (Some(one), None) => Some((one.node.uri.clone(), one.node.path.clone())),
                        (Some(_), Some(_)) => None,
                        (None, _) => self
                            .store
                            .uko_the_one_named(self.index_id, name, &CALLABLE_KINDS)
                            .ok()
                            .flatten()
                            .map(|one| (one.node.uri, one.node.path)),
                    }
                }
            };
            if let Some((to, path)) = found
                && to != caller.node.uri
                && !out.iter().any(|(u, _)| *u == to)
            {
                out.push((to, path));
            }
        }
        out
    }

    fn with_node_text(&self, uri: &str, read: &mut dyn FnMut(&str, &str)) -> bool {
        let Some(node) = self.node(uri) else { return false };
        let Some(source) = self.source(&node.node.path) else { return false };
        let text = node_text(&source, &node);
        let doc = doc_summary(node.node.doc.as_deref().unwrap_or(""));
        text.map(|text| read(doc, text)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::{doc_summary, has_interfaces, is_header, strip_ordinals};

    #[test]
    fn headers_and_ordinals() {
        for header in ["include/leveldb/db.h", "src/a.HPP", "x.hh", "y.hxx", "z.inl", "uko://r/cJSON.h"] {
            assert!(is_header(header), "{header}");
        }
        for other in ["src/a.c", "db/db_impl.cc", "a.hs", "h", "include/x.html"] {
            assert!(!is_header(other), "{other}");
        }
        for interfaces in
            ["src/main/java/a/B.java", "Src/Store.CS", "a.kt", "b.ts", "c.tsx", "d.swift", "e.scala", "f.php"]
        {
            assert!(has_interfaces(interfaces), "{interfaces}");
        }
        for other in ["a.py", "b.go", "c.rs", "d.js", "e.h"] {
            assert!(!has_interfaces(other), "{other}");
        }
        assert_eq!(strip_ordinals("leveldb.LRUCache.Insert~2"), "leveldb.LRUCache.Insert");
        assert_eq!(strip_ordinals("Cache~2.Cache"), "Cache.Cache");
        assert_eq!(strip_ordinals("operator~"), "operator~");
        assert_eq!(strip_ordinals("Foo.~Foo"), "Foo.~Foo");
    }

    #[test]
    fn a_doc_summary_is_the_first_paragraph() {
        let rust = "Extractor that will get captures from the URL.\nThey are parsed with serde.\n\n# Example\n\n```rust\nuse axum::Router;\n```";
        assert_eq!(doc_summary(rust), "Extractor that will get captures from the URL.\nThey are parsed with serde.");
        assert_eq!(doc_summary("\n  One paragraph only.\n"), "One paragraph only.");
        assert_eq!(doc_summary("Windows lines.\r\n\r\nMore."), "Windows lines.");
        assert_eq!(doc_summary(""), "");
    }
}
