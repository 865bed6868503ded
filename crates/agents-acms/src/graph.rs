//! Reading the stored code graph: find nodes, render them at a depth, list
//! their edges and revisions. The read side of what `uko_index` writes.

use std::path::Path;
use std::sync::Arc;

use agents_core::tokens::TokenCounter;
use agents_store::{Store, StoreError, UkoNodeRecord, UkoRef};
use agents_uko::model::{NodeKind, Point, RefKind, Span};
use agents_uko::render::{EdgeView, NodeView, RenderInput, ShownElsewhere, render_all};

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    #[error("no node matches `{0}`; give a file path, `path#Symbol`, or a symbol name")]
    NotFound(String),
    #[error("{path}: cannot read the source: {source}", path = .path.display())]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A node rendered at one depth.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Rendered {
    pub uri: String,
    pub kind: String,
    pub path: String,
    pub source_range: String,
    pub depth: u8,
    pub tokens: usize,
    pub content: String,
    /// Token count at every depth 0-9.
    pub tokens_by_depth: Vec<usize>,
}

pub struct CodeGraph {
    store: Arc<dyn Store>,
}

impl CodeGraph {
    pub fn new(store: Arc<dyn Store>) -> CodeGraph {
        CodeGraph { store }
    }

    /// Nodes matching `query`: a file path (`src/app.py`), `path#Symbol`,
    /// a node URI, a symbol path (`App.run`) or a bare name (`run`).
    pub fn find(&self, resource_id: &str, index_id: &str, query: &str) -> Result<Vec<UkoNodeRecord>, GraphError> {
        let query = query.trim();
        let uri = if query.starts_with("uko://") {
            query.to_string()
        } else {
            let (path, symbol) = query.split_once('#').unwrap_or((query, ""));
            let path = path.trim_start_matches("./");
            if symbol.is_empty() {
                format!("uko://{resource_id}/{path}")
            } else {
                format!("uko://{resource_id}/{path}#{symbol}")
            }
        };
        if let Some(node) = self.store.uko_node(index_id, &uri)? {
            return Ok(vec![node]);
        }
        let found = self.store.uko_find(index_id, query)?;
        if found.is_empty() {
            return Err(GraphError::NotFound(query.to_string()));
        }
        Ok(found)
    }

    /// Renders `node` at every depth 0-9 (text and token count), reading its
    /// file under `root`.
    pub fn render_depths(
        &self,
        root: &Path,
        index_id: &str,
        node: &UkoNodeRecord,
        tokenizer: &dyn TokenCounter,
    ) -> Result<Vec<(u8, String, usize)>, GraphError> {
        let text = read_source(root, &node.node.path)?;
        self.render_depths_of(index_id, node, &text, tokenizer)
    }

    /// [`CodeGraph::render_depths`] with the file's text already in hand.
    pub fn render_depths_of(
        &self,
        index_id: &str,
        node: &UkoNodeRecord,
        file_text: &str,
        tokenizer: &dyn TokenCounter,
    ) -> Result<Vec<(u8, String, usize)>, GraphError> {
        let children = self.store.uko_children(index_id, &node.node.uri)?;
        let members = self.members(index_id, &children)?;
        let edges: Vec<EdgeView> =
            self.store.uko_refs_within(index_id, &node.node.uri)?.iter().filter_map(edge_view).collect();
        Ok(render_all(&render_input(node, &children, &members, edges, file_text), tokenizer))
    }

    /// The members of each container child (a class's methods), for the
    /// header view at depth 4; an empty list for every other child.
    fn members(&self, index_id: &str, children: &[UkoNodeRecord]) -> Result<Vec<Vec<UkoNodeRecord>>, GraphError> {
        children
            .iter()
            .map(|c| {
                let container = NodeKind::parse(&c.node.kind).is_some_and(agents_uko::render::is_container);
                if container { Ok(self.store.uko_children(index_id, &c.node.uri)?) } else { Ok(Vec::new()) }
            })
            .collect()
    }

    /// Renders `node` at one depth from its file's text (no token counting).
    pub fn render_one(
        &self,
        index_id: &str,
        node: &UkoNodeRecord,
        file_text: &str,
        depth: u8,
    ) -> Result<String, GraphError> {
        let depth = depth.min(agents_uko::render::MAX_DEPTH);
        let mut context = NodeContext::default();
        context.load(self, index_id, node, depth)?;
        Ok(context.render(node, file_text, depth))
    }

    /// Renders `node` at `depth`, reading its file under `root`.
    pub fn render(
        &self,
        root: &Path,
        index_id: &str,
        node: &UkoNodeRecord,
        depth: u8,
        tokenizer: &dyn TokenCounter,
    ) -> Result<Rendered, GraphError> {
        let mut all = self.render_depths(root, index_id, node, tokenizer)?;
        let tokens_by_depth: Vec<usize> = all.iter().map(|(_, _, tokens)| *tokens).collect();
        let depth = depth.min(agents_uko::render::MAX_DEPTH);
        let content = std::mem::take(&mut all[depth as usize].1);
        Ok(Rendered {
            uri: node.node.uri.clone(),
            kind: node.node.kind.clone(),
            path: node.node.path.clone(),
            source_range: source_range(node),
            depth,
            tokens: tokens_by_depth[depth as usize],
            content,
            tokens_by_depth,
        })
    }

    /// Every revision of a node, newest first.
    pub fn revisions(&self, index_id: &str, uri: &str) -> Result<Vec<UkoNodeRecord>, GraphError> {
        Ok(self.store.uko_revisions(index_id, uri)?)
    }

    /// References resolved to the node (who depends on it).
    pub fn dependents(&self, index_id: &str, uri: &str) -> Result<Vec<UkoRef>, GraphError> {
        Ok(self.store.uko_refs_to(index_id, uri)?)
    }
}

/// The text of a file of a resource (lossily decoded, as indexing reads it).
pub fn read_source(root: &Path, path: &str) -> Result<String, GraphError> {
    let file = root.join(path);
    let bytes = std::fs::read(&file).map_err(|source| GraphError::Io { path: file.clone(), source })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `line:col-line:col` of a stored node.
pub fn source_range(n: &UkoNodeRecord) -> String {
    let n = &n.node;
    format!("{}:{}-{}:{}", n.start_line, n.start_col, n.end_line, n.end_col)
}

/// The rendering view of a stored node.
/// What rendering a node needs besides the node and its file: its children
/// (from depth 1) and the references written inside it (from depth 2), read
/// from the store as a depth first needs them, so one node rendered at several
/// depths reads each once.
#[derive(Clone, Debug, Default)]
pub struct NodeContext {
    children: Option<Vec<UkoNodeRecord>>,
    members: Option<Vec<Vec<UkoNodeRecord>>>,
    edges: Option<Vec<EdgeView>>,
}

impl NodeContext {
    /// Reads what rendering `node` at `depth` needs and this context lacks.
    pub fn load(
        &mut self,
        graph: &CodeGraph,
        index_id: &str,
        node: &UkoNodeRecord,
        depth: u8,
    ) -> Result<(), GraphError> {
        if depth >= 1 && self.children.is_none() {
            self.children = Some(graph.store.uko_children(index_id, &node.node.uri)?);
        }
        if depth >= 4 && self.members.is_none() {
            self.members = Some(graph.members(index_id, self.children.as_deref().unwrap_or_default())?);
        }
        if depth >= 2 && self.edges.is_none() {
            let refs = graph.store.uko_refs_within(index_id, &node.node.uri)?;
            self.edges = Some(refs.iter().filter_map(edge_view).collect());
        }
        Ok(())
    }

    /// `node`'s complete source save the lines `shown` (after
    /// [`NodeContext::load`] at depth 9): [`agents_uko::render::render_around`].
    pub fn render_around(&self, node: &UkoNodeRecord, file_text: &str, shown: &[ShownElsewhere]) -> String {
        let edges = self.edges.clone().unwrap_or_default();
        let input = render_input(node, self.children.as_deref().unwrap_or_default(), &[], edges, file_text);
        agents_uko::render::render_around(&input, shown)
    }

    /// `node` at `depth` (after [`NodeContext::load`] for that depth).
    pub fn render(&self, node: &UkoNodeRecord, file_text: &str, depth: u8) -> String {
        let children = if depth >= 1 { self.children.as_deref().unwrap_or_default() } else { &[] };
        let edges = if depth >= 2 { self.edges.clone().unwrap_or_default() } else { Vec::new() };
        let members = if depth >= 4 { self.members.as_deref().unwrap_or_default() } else { &[] };
        agents_uko::render::render(&render_input(node, children, members, edges, file_text), depth)
    }
}

/// What the depth renderer reads of `node`: its children, the members of
/// each container child, and its edges.
fn render_input<'a>(
    node: &'a UkoNodeRecord,
    children: &'a [UkoNodeRecord],
    members: &'a [Vec<UkoNodeRecord>],
    edges: Vec<EdgeView>,
    file_text: &'a str,
) -> RenderInput<'a> {
    RenderInput {
        node: view(node),
        children: children.iter().map(view).collect(),
        members: members.iter().map(|m| m.iter().map(view).collect()).collect(),
        edges,
        file_text,
    }
}

pub fn view(n: &UkoNodeRecord) -> NodeView<'_> {
    let n = &n.node;
    NodeView {
        kind: NodeKind::parse(&n.kind).unwrap_or(NodeKind::File),
        name: &n.name,
        symbol_path: &n.symbol_path,
        path: &n.path,
        span: Span {
            start_byte: n.start_byte.max(0) as usize,
            end_byte: n.end_byte.max(0) as usize,
            start: Point { line: n.start_line.max(0) as u32, column: n.start_col.max(0) as u32 },
            end: Point { line: n.end_line.max(0) as u32, column: n.end_col.max(0) as u32 },
        },
        signature: n.signature.as_deref(),
        doc: n.doc.as_deref(),
    }
}

/// An edge for rendering: where a reference written in the node (or inside
/// it) leads.
fn edge_view(r: &UkoRef) -> Option<EdgeView> {
    let kind = RefKind::parse(&r.kind)?;
    let target = match (&r.resolved_uri, &r.resolved_path) {
        (Some(uri), Some(path)) => match uri.split_once('#') {
            Some((_, symbol)) => format!("{path}#{symbol}"),
            None => path.clone(),
        },
        _ => r.target.clone(),
    };
    Some(EdgeView { kind, target, external: r.resolved_uri.is_none() })
}
