//! The compiled knowledge graph as types: [`CompiledGraph`], its
//! [`GraphNode`]s and [`GraphLink`]s.
//!
//! `graph.json` (NetworkX node-link JSON, written by [`crate::compile`]) is
//! the file format only: every reader goes through [`CompiledGraph::load`],
//! which parses the file once and keeps it, keyed by its path, size and
//! modification time, so a server answering many requests, or one command
//! reading the graph in several steps, parses it once per version. A node's
//! attributes stay an open map (rank formulas may name any numeric attribute
//! a team adds), read through typed accessors for the ones the code knows.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::vault::Layout;

/// Why `graph.json` could not be read as a compiled graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The file could not be read (a missing file is the caller's to report
    /// as "not built yet": see [`CompiledGraph::load_optional`]).
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Not JSON.
    #[error("{}:{line}:{column}: not a compiled graph: {message}; run `agents knowledge build`", path.display())]
    Json { path: PathBuf, line: usize, column: usize, message: String },
    /// No `graph.json` yet.
    #[error("{}: no compiled graph; run `agents knowledge build` first", path.display())]
    Missing { path: PathBuf },
    /// JSON, but not a compiled graph.
    #[error("{}: not a compiled graph: {what}; run `agents knowledge build`", path.display())]
    Shape { path: PathBuf, what: String },
}

/// What a node-link value lacks to be a compiled graph (`node 3 has no string `id``).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ShapeError(pub String);

/// One node: its id and every attribute it was compiled with (the id
/// included, as in the file).
#[derive(Debug, Clone, PartialEq)]
pub struct GraphNode {
    id: String,
    attributes: Map<String, Value>,
}

impl GraphNode {
    /// The node id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Every attribute, the id included (what rank formulas read).
    pub fn attributes(&self) -> &Map<String, Value> {
        &self.attributes
    }

    /// A string attribute (`None` when absent, null or not a string).
    pub fn text(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }

    /// A numeric attribute.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.attributes.get(key).and_then(Value::as_f64)
    }

    /// The strings of a list attribute, in order (non-strings left out).
    pub fn strings<'a>(&'a self, key: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.attributes.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str)
    }

    /// A present, non-null attribute.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key).filter(|v| !v.is_null())
    }

    /// `title`.
    pub fn title(&self) -> Option<&str> {
        self.text("title")
    }

    /// `tags`.
    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.strings("tags")
    }

    /// `status` (empty when absent).
    pub fn status(&self) -> &str {
        self.text("status").unwrap_or_default()
    }

    /// `domain` (empty when absent).
    pub fn domain(&self) -> &str {
        self.text("domain").unwrap_or_default()
    }

    /// `node_origin`: `global`, `local`, `code-mirror` or `session`.
    pub fn origin(&self) -> Option<&str> {
        self.text("node_origin")
    }

    /// `content_ref`, the body's file relative to the node's layer.
    pub fn content_ref(&self) -> Option<&str> {
        self.text("content_ref")
    }
}

/// One directed edge.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphLink {
    source: String,
    target: String,
    kind: String,
    attributes: Map<String, Value>,
}

impl GraphLink {
    /// The id of the node the edge leaves.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The id of the node the edge enters.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The edge type (`requires`, `pitfall`, ...; empty when absent).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// `weight`.
    pub fn weight(&self) -> Option<f64> {
        self.attributes.get("weight").and_then(Value::as_f64)
    }

    /// A string attribute (`note`, `edge_origin`).
    pub fn text(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }
}

/// The compiled graph: nodes in file order (the compiler sorts them by id),
/// links in file order, and an index by id.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompiledGraph {
    meta: Map<String, Value>,
    nodes: Vec<GraphNode>,
    links: Vec<GraphLink>,
    by_id: HashMap<String, usize>,
    /// [`crate::loadout::graph_version`] of the file's bytes (empty for a
    /// graph made from a value).
    version: String,
}

impl CompiledGraph {
    /// Reads `path` (NetworkX node-link JSON) through the cache: the same
    /// file at the same size and modification time is parsed once per
    /// process.
    pub fn load(path: &Path) -> Result<Arc<CompiledGraph>, GraphError> {
        let read_error = |source| GraphError::Read { path: path.to_owned(), source };
        let meta = std::fs::metadata(path).map_err(read_error)?;
        let stamp = (meta.len(), meta.modified().ok());
        let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(cached) = cache.get(path)
            && cached.0 == stamp
        {
            return Ok(cached.1.clone());
        }
        let text = std::fs::read_to_string(path).map_err(read_error)?;
        let graph = Arc::new(CompiledGraph::parse(&text, path)?);
        // One entry per path: a server rarely sees more than a few repositories.
        cache.insert(path.to_owned(), (stamp, graph.clone()));
        Ok(graph)
    }

    /// The compiled graph of the repository of `layout`, its file named in
    /// errors as users see it (relative to the repository); a missing file
    /// is [`GraphError::Missing`].
    pub fn of(layout: &Layout) -> Result<Arc<CompiledGraph>, GraphError> {
        let path = layout.graph_json();
        let shown = layout.display(&path);
        CompiledGraph::load(&path).map_err(|e| match e {
            GraphError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                GraphError::Missing { path: shown }
            }
            GraphError::Read { source, .. } => GraphError::Read { path: shown, source },
            GraphError::Json { line, column, message, .. } => GraphError::Json { path: shown, line, column, message },
            GraphError::Shape { what, .. } => GraphError::Shape { path: shown, what },
            GraphError::Missing { .. } => GraphError::Missing { path: shown },
        })
    }

    /// [`CompiledGraph::load`], with a missing file read as `None` (the graph
    /// has not been built yet).
    pub fn load_optional(path: &Path) -> Result<Option<Arc<CompiledGraph>>, GraphError> {
        match CompiledGraph::load(path) {
            Err(GraphError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            other => other.map(Some),
        }
    }

    /// Parses the text of `graph.json` (`path` names it in errors).
    pub fn parse(text: &str, path: &Path) -> Result<CompiledGraph, GraphError> {
        let value: Value = serde_json::from_str(text).map_err(|e| GraphError::Json {
            path: path.to_owned(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let mut graph =
            CompiledGraph::from_value(value).map_err(|e| GraphError::Shape { path: path.to_owned(), what: e.0 })?;
        graph.version = crate::loadout::graph_version(text.as_bytes());
        Ok(graph)
    }

    /// Sets the version from the text the graph was written as (the compiler's).
    pub(crate) fn with_version_of(mut self, text: &str) -> CompiledGraph {
        self.version = crate::loadout::graph_version(text.as_bytes());
        self
    }

    /// The version of the file read: the first 16 hex digits of its SHA-256,
    /// as loadout headers state it.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The graph of a node-link JSON value; the error says what is missing.
    /// `links` and `graph` may be absent (an empty graph, a test's fixture).
    pub fn from_value(value: Value) -> Result<CompiledGraph, ShapeError> {
        CompiledGraph::shape(value).map_err(ShapeError)
    }

    fn shape(value: Value) -> Result<CompiledGraph, String> {
        let Value::Object(mut top) = value else { return Err("not a JSON object".to_owned()) };
        let list = |top: &mut Map<String, Value>, key: &str| -> Result<Vec<Value>, String> {
            match top.remove(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => Ok(items),
                Some(_) => Err(format!("`{key}` is not a list")),
            }
        };
        let mut graph = CompiledGraph::default();
        for (i, node) in list(&mut top, "nodes")?.into_iter().enumerate() {
            let Value::Object(attributes) = node else { return Err(format!("node {} is not an object", i + 1)) };
            let id = match attributes.get("id") {
                Some(Value::String(id)) => id.clone(),
                _ => return Err(format!("node {} has no string `id`", i + 1)),
            };
            graph.by_id.entry(id.clone()).or_insert(graph.nodes.len());
            graph.nodes.push(GraphNode { id, attributes });
        }
        for (i, link) in list(&mut top, "links")?.into_iter().enumerate() {
            let Value::Object(attributes) = link else { return Err(format!("link {} is not an object", i + 1)) };
            let end = |key: &str| match attributes.get(key) {
                Some(Value::String(id)) => Ok(id.clone()),
                _ => Err(format!("link {} has no string `{key}`", i + 1)),
            };
            let (source, target) = (end("source")?, end("target")?);
            let kind = attributes.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
            graph.links.push(GraphLink { source, target, kind, attributes });
        }
        graph.meta = match top.remove("graph") {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        };
        Ok(graph)
    }

    /// The graph-level attributes (`akms_schema`, `repo_id`, `global_vault`, counts).
    pub fn meta(&self) -> &Map<String, Value> {
        &self.meta
    }

    /// Every node, in file order.
    pub fn nodes(&self) -> &[GraphNode] {
        &self.nodes
    }

    /// Every link, in file order.
    pub fn links(&self) -> &[GraphLink] {
        &self.links
    }

    /// The node with `id` (the first, should a hand-edited file repeat one).
    pub fn node(&self, id: &str) -> Option<&GraphNode> {
        self.by_id.get(id).map(|&i| &self.nodes[i])
    }
}

/// Graphs read so far, by path: (size, modification time) and the graph.
type Cache = HashMap<PathBuf, ((u64, Option<SystemTime>), Arc<CompiledGraph>)>;

static CACHE: std::sync::LazyLock<Mutex<Cache>> = std::sync::LazyLock::new(|| Mutex::new(HashMap::new()));

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nodes_and_links_are_read_with_their_attributes() {
        let graph = CompiledGraph::from_value(json!({
            "directed": true,
            "graph": {"repo_id": "r"},
            "nodes": [
                {"id": "a", "title": "A", "tags": ["x", 3, "y"], "confidence": 0.5, "status": "established"},
                {"id": "b"}
            ],
            "links": [{"source": "a", "target": "b", "type": "requires", "weight": 0.8, "note": "n"}]
        }))
        .unwrap();
        let a = graph.node("a").unwrap();
        assert_eq!((a.id(), a.title(), a.status(), a.number("confidence")), ("a", Some("A"), "established", Some(0.5)));
        assert_eq!(a.tags().collect::<Vec<_>>(), ["x", "y"]);
        assert_eq!(a.attributes().get("id"), Some(&json!("a")));
        assert_eq!(graph.node("b").unwrap().status(), "");
        assert!(graph.node("c").is_none());
        let link = &graph.links()[0];
        assert_eq!((link.source(), link.target(), link.kind(), link.weight()), ("a", "b", "requires", Some(0.8)));
        assert_eq!(link.text("note"), Some("n"));
        assert_eq!(graph.meta().get("repo_id"), Some(&json!("r")));
    }

    #[test]
    fn a_file_that_is_not_a_compiled_graph_is_an_error_naming_it() {
        let path = Path::new("knowledge/graph/graph.json");
        let err = CompiledGraph::parse("{\"nodes\": [", path).unwrap_err().to_string();
        assert!(err.starts_with("knowledge/graph/graph.json:1:"), "{err}");
        let err = CompiledGraph::parse(r#"{"nodes": [{"title": "x"}]}"#, path).unwrap_err().to_string();
        assert!(err.contains("not a compiled graph: node 1 has no string `id`"), "{err}");
        assert!(err.contains("agents knowledge build"), "{err}");
        let err = CompiledGraph::parse(r#"{"nodes": [], "links": [{"source": "a"}]}"#, path).unwrap_err().to_string();
        assert!(err.contains("link 1 has no string `target`"), "{err}");
        assert!(CompiledGraph::parse("[]", path).unwrap_err().to_string().contains("not a JSON object"));
    }

    #[test]
    fn a_graph_is_parsed_once_per_version_of_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("graph.json");
        std::fs::write(&path, r#"{"nodes": [{"id": "a"}]}"#).unwrap();
        let first = CompiledGraph::load(&path).unwrap();
        assert!(Arc::ptr_eq(&first, &CompiledGraph::load(&path).unwrap()));
        assert_eq!(first.version(), crate::loadout::graph_version(br#"{"nodes": [{"id": "a"}]}"#));
        // A new version (another size) is read again.
        std::fs::write(&path, r#"{"nodes": [{"id": "a"}, {"id": "bb"}]}"#).unwrap();
        let second = CompiledGraph::load(&path).unwrap();
        assert_eq!(second.nodes().len(), 2);
        assert!(CompiledGraph::load_optional(&dir.path().join("missing.json")).unwrap().is_none());
        let layout = Layout::new(dir.path(), PathBuf::new());
        let err = CompiledGraph::of(&layout).unwrap_err().to_string();
        assert_eq!(err, "knowledge/graph/graph.json: no compiled graph; run `agents knowledge build` first");
    }
}
