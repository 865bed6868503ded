//! The UKOStore: the code graph as RDF, in an embedded in-memory oxigraph
//! store, queryable with SPARQL and exportable as Turtle.
//!
//! Input is plain data ([`RdfNode`], [`RdfEdge`]) so that this crate stays
//! independent of the database crate. The code graph lives in the store's
//! default graph; the ontology, when given, is loaded into the named graph
//! [`ONTOLOGY_GRAPH`] so that the Turtle export stays the code graph alone
//! (and byte-for-byte deterministic) while queries see both: a query that
//! names no dataset (`FROM`) runs over the union of the two, so
//! `?m a/rdfs:subClassOf* uko-code:Callable` works.
//!
//! Node URIs (`uko://01ABC/src/app.py#App.run`) may hold spaces and
//! non-ASCII characters; [`node_iri`] percent-encodes them into a valid IRI
//! (always the same way, `%` itself included, so [`decode_iri`] is its exact
//! inverse). Query results render node IRIs back as the original URIs.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use oxigraph::io::{RdfFormat, RdfParser, RdfSerializer};
use oxigraph::model::vocab::{rdf, xsd};
use oxigraph::model::{GraphName, GraphNameRef, Literal, NamedNode, NamedNodeRef, Quad, Term, Triple};
use oxigraph::sparql::{QueryResults, SparqlEvaluator};
use oxigraph::store::Store;

/// The prefixes known to the UKO graph: the ontology layers, then the RDF
/// vocabularies. Used to expand CURIEs, compact IRIs, predeclare prefixes in
/// queries and write Turtle.
pub const PREFIXES: [(&str, &str); 30] = [
    ("uko", "https://cleveragents.ai/ontology/uko#"),
    ("uko-code", "https://cleveragents.ai/ontology/uko/code#"),
    ("uko-doc", "https://cleveragents.ai/ontology/uko/doc#"),
    ("uko-data", "https://cleveragents.ai/ontology/uko/data#"),
    ("uko-infra", "https://cleveragents.ai/ontology/uko/infra#"),
    ("uko-oo", "https://cleveragents.ai/ontology/uko/oo#"),
    ("uko-func", "https://cleveragents.ai/ontology/uko/func#"),
    ("uko-proc", "https://cleveragents.ai/ontology/uko/proc#"),
    ("uko-py", "https://cleveragents.ai/ontology/uko/py#"),
    ("uko-ts", "https://cleveragents.ai/ontology/uko/ts#"),
    ("uko-rs", "https://cleveragents.ai/ontology/uko/rs#"),
    ("uko-java", "https://cleveragents.ai/ontology/uko/java#"),
    ("uko-go", "https://cleveragents.ai/ontology/uko/go#"),
    ("uko-c", "https://cleveragents.ai/ontology/uko/c#"),
    ("uko-cpp", "https://cleveragents.ai/ontology/uko/cpp#"),
    ("uko-rb", "https://cleveragents.ai/ontology/uko/rb#"),
    ("uko-sh", "https://cleveragents.ai/ontology/uko/sh#"),
    ("uko-lua", "https://cleveragents.ai/ontology/uko/lua#"),
    ("uko-cs", "https://cleveragents.ai/ontology/uko/cs#"),
    ("uko-php", "https://cleveragents.ai/ontology/uko/php#"),
    ("uko-kt", "https://cleveragents.ai/ontology/uko/kt#"),
    ("uko-scala", "https://cleveragents.ai/ontology/uko/scala#"),
    ("uko-swift", "https://cleveragents.ai/ontology/uko/swift#"),
    ("uko-zig", "https://cleveragents.ai/ontology/uko/zig#"),
    ("uko-hs", "https://cleveragents.ai/ontology/uko/hs#"),
    ("uko-ex", "https://cleveragents.ai/ontology/uko/ex#"),
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

/// The named graph the ontology is loaded into (the ontology's own IRI).
pub const ONTOLOGY_GRAPH: &str = "https://cleveragents.ai/ontology/uko";

/// The URI prefix of external dependency nodes (unresolved edge targets).
pub const EXTERNAL_PREFIX: &str = "uko://external/";

/// The class of external dependency nodes: what a resource references but
/// does not contain, named as written.
pub const EXTERNAL_CLASS: &str = "uko:ExternalDependency";

/// Ontology object properties refining `uko:dependsOn` per reference kind.
const KIND_PROPERTIES: [(&str, &str); 3] =
    [("import", "uko:imports"), ("inherits", "uko:inheritsFrom"), ("calls", "uko:calls")];

/// One UKO node (one revision of it) to put in the graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RdfNode {
    /// The node URI, e.g. `uko://01ABC/src/app.py#App.run`; may contain
    /// spaces or non-ASCII characters (see [`node_iri`]).
    pub uri: String,
    /// The ontology class as a CURIE, e.g. `uko-oo:Method`.
    pub class_curie: String,
    /// A more specific class of the node's language layer, e.g.
    /// `uko-kt:DataClass` (a subclass of `class_curie`'s meaning): a second
    /// `rdf:type`. See [`crate::lang::classes`].
    pub language_class: Option<String>,
    pub name: String,
    /// Empty for file nodes (then no `uko:symbolPath` triple).
    pub symbol_path: String,
    /// ULID of the resource the node was extracted from.
    pub resource_id: String,
    pub path: String,
    /// `line:col-line:col`, e.g. `3:0-11:12`.
    pub source_range: String,
    pub language: String,
    pub signature: Option<String>,
    pub summary: Option<String>,
    /// ISO-8601 / RFC 3339 timestamp, written as an `xsd:dateTime`.
    pub valid_from: String,
    pub valid_until: Option<String>,
    pub is_current: bool,
    /// URI of the previous revision node, only when exporting history.
    pub revision_of: Option<String>,
    /// URI of the containing node: emits `<parent> uko:contains <node>`.
    pub parent_uri: Option<String>,
}

/// One dependency or reference edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdfEdge {
    pub from_uri: String,
    /// `uko:dependsOn` or `uko:references` (any CURIE of a known prefix works).
    pub property: &'static str,
    /// The resolved target node. Wins over `external` when both are set.
    pub to_uri: Option<String>,
    /// The unresolved target name: becomes a named external node
    /// `uko://external/<name>`.
    pub external: Option<String>,
    /// `import`, `inherits`, `calls` or `mentions`. The first three also emit
    /// the ontology sub-property (`uko:imports`, `uko:inheritsFrom`,
    /// `uko:calls`) next to the plain property.
    pub kind: String,
}

/// Errors of building and querying the graph.
#[derive(Debug, thiserror::Error)]
pub enum RdfError {
    /// Malformed SPARQL. Line and column (1-based) refer to the caller's query text.
    #[error("sparql syntax error{}: {message}", location(*.line, *.column))]
    Syntax { message: String, line: Option<usize>, column: Option<usize> },
    /// The query failed while running, or the store failed.
    #[error("sparql evaluation failed: {0}")]
    Evaluation(String),
    /// The ontology Turtle could not be loaded.
    #[error("invalid ontology: {0}")]
    Ontology(String),
    /// A node or edge could not be turned into RDF (unknown CURIE prefix,
    /// URI that is no IRI even once encoded, edge without target).
    #[error("invalid graph input: {0}")]
    Input(String),
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(" at line {l}, column {c}"),
        (Some(l), None) => format!(" at line {l}"),
        _ => String::new(),
    }
}

/// The result of a SPARQL query, with terms rendered as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryResult {
    /// SELECT: one row per solution, `None` for unbound variables. IRIs are
    /// compacted to CURIEs where a known prefix applies, node IRIs are
    /// rendered as their original URI, literals as their lexical value,
    /// blank nodes as `_:id`.
    Solutions { variables: Vec<String>, rows: Vec<Vec<Option<String>>> },
    /// ASK.
    Boolean(bool),
    /// CONSTRUCT or DESCRIBE: the constructed triples as sorted Turtle.
    Graph(String),
}

impl QueryResult {
    /// An aligned text table (SELECT), `true`/`false` (ASK) or the Turtle (CONSTRUCT).
    pub fn to_table(&self) -> String {
        match self {
            QueryResult::Boolean(b) => format!("{b}\n"),
            QueryResult::Graph(turtle) => turtle.clone(),
            QueryResult::Solutions { variables, rows } => {
                let cell = |v: &Option<String>| v.as_deref().unwrap_or("").replace('\n', "\\n");
                let mut widths: Vec<usize> = variables.iter().map(|v| v.chars().count()).collect();
                for row in rows {
                    for (w, v) in widths.iter_mut().zip(row) {
                        *w = (*w).max(cell(v).chars().count());
                    }
                }
                let line = |cells: Vec<String>| {
                    let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, &w)| format!("{c:<w$}")).collect();
                    padded.join(" | ").trim_end().to_string() + "\n"
                };
                let mut out = line(variables.clone());
                out.push_str(&widths.iter().map(|&w| "-".repeat(w)).collect::<Vec<_>>().join("-+-"));
                out.push('\n');
                for row in rows {
                    out.push_str(&line(row.iter().map(cell).collect()));
                }
                let _ = writeln!(out, "({} row{})", rows.len(), if rows.len() == 1 { "" } else { "s" });
                out
            }
        }
    }

    /// SPARQL-results-like JSON: `{"head":{"vars":[..]},"results":{"bindings":[{var: value}]}}`
    /// (unbound variables left out of their binding), `{"head":{},"boolean":b}`,
    /// or `{"graph": "<turtle>"}`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            QueryResult::Boolean(b) => serde_json::json!({ "head": {}, "boolean": b }),
            QueryResult::Graph(turtle) => serde_json::json!({ "graph": turtle }),
            QueryResult::Solutions { variables, rows } => {
                let bindings: Vec<serde_json::Value> = rows
                    .iter()
                    .map(|row| {
                        let map: serde_json::Map<String, serde_json::Value> = variables
                            .iter()
                            .zip(row)
                            .filter_map(|(var, v)| {
                                v.as_ref().map(|v| (var.clone(), serde_json::Value::from(v.clone())))
                            })
                            .collect();
                        serde_json::Value::Object(map)
                    })
                    .collect();
                serde_json::json!({ "head": { "vars": variables }, "results": { "bindings": bindings } })
            }
        }
    }
}

/// The code graph in an in-memory RDF store.
pub struct UkoGraph {
    store: Store,
    /// Triples of the code graph (the default graph).
    triples: usize,
    has_ontology: bool,
}

impl std::fmt::Debug for UkoGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UkoGraph").field("triples", &self.triples).field("has_ontology", &self.has_ontology).finish()
    }
}

impl UkoGraph {
    /// Builds the graph from nodes and edges; `ontology_ttl`, when given, is
    /// loaded too (into [`ONTOLOGY_GRAPH`]) so queries can reason over
    /// `rdfs:subClassOf*`.
    pub fn build(nodes: &[RdfNode], edges: &[RdfEdge], ontology_ttl: Option<&str>) -> Result<UkoGraph, RdfError> {
        let store = Store::new().map_err(|e| RdfError::Evaluation(format!("cannot create the store: {e}")))?;
        let mut quads = Vec::new();
        let mut add = |s: &NamedNode, p: NamedNode, o: Term| {
            quads.push(Quad::new(s.clone(), p, o, GraphName::DefaultGraph));
        };
        let string = |s: &str| Term::Literal(Literal::new_simple_literal(s));
        let date_time = |s: &str| Term::Literal(Literal::new_typed_literal(s, xsd::DATE_TIME));

        for node in nodes {
            let s = node_named(&node.uri)?;
            let class = expand_curie(&node.class_curie).ok_or_else(|| {
                RdfError::Input(format!("unknown prefix in class `{}` of `{}`", node.class_curie, node.uri))
            })?;
            add(&s, known("rdf:type"), Term::NamedNode(iri_named(&class)?));
            if let Some(curie) = &node.language_class {
                let class = expand_curie(curie)
                    .ok_or_else(|| RdfError::Input(format!("unknown prefix in class `{curie}` of `{}`", node.uri)))?;
                add(&s, known("rdf:type"), Term::NamedNode(iri_named(&class)?));
            }
            add(&s, known("uko:name"), string(&node.name));
            if !node.symbol_path.is_empty() {
                add(&s, known("uko:symbolPath"), string(&node.symbol_path));
            }
            add(&s, known("uko:sourceResource"), string(&node.resource_id));
            add(&s, known("uko:sourcePath"), string(&node.path));
            if !node.source_range.is_empty() {
                add(&s, known("uko:sourceRange"), string(&node.source_range));
            }
            if !node.language.is_empty() {
                add(&s, known("uko:language"), string(&node.language));
            }
            if let Some(sig) = &node.signature {
                add(&s, known("uko:signature"), string(sig));
            }
            if let Some(summary) = &node.summary {
                add(&s, known("uko:summary"), string(summary));
            }
            if !node.valid_from.is_empty() {
                add(&s, known("uko:validFrom"), date_time(&node.valid_from));
            }
            if let Some(until) = &node.valid_until {
                add(&s, known("uko:validUntil"), date_time(until));
            }
            add(&s, known("uko:isCurrent"), Term::Literal(Literal::from(node.is_current)));
            if let Some(prev) = &node.revision_of {
                add(&s, known("uko:isRevisionOf"), Term::NamedNode(node_named(prev)?));
            }
            if let Some(parent) = &node.parent_uri {
                add(&node_named(parent)?, known("uko:contains"), Term::NamedNode(s.clone()));
            }
        }

        let external_class = known(EXTERNAL_CLASS);
        for edge in edges {
            let from = node_named(&edge.from_uri)?;
            let property = expand_curie(edge.property).ok_or_else(|| {
                RdfError::Input(format!(
                    "unknown prefix in property `{}` of an edge from `{}`",
                    edge.property, edge.from_uri
                ))
            })?;
            let property = iri_named(&property)?;
            let to = match (&edge.to_uri, &edge.external) {
                (Some(to), _) => node_named(to)?,
                (None, Some(name)) => {
                    let ext = external_named(name)?;
                    add(&ext, known("rdf:type"), Term::NamedNode(external_class.clone()));
                    add(&ext, known("uko:name"), string(name));
                    ext
                }
                (None, None) => {
                    return Err(RdfError::Input(format!(
                        "{} edge from `{}` has neither a target node nor an external name",
                        edge.kind, edge.from_uri
                    )));
                }
            };
            if let Some((_, sub)) = KIND_PROPERTIES.iter().find(|(k, _)| *k == edge.kind) {
                add(&from, known(sub), Term::NamedNode(to.clone()));
            }
            add(&from, property, Term::NamedNode(to));
        }
        store.extend(quads).map_err(|e| RdfError::Evaluation(format!("cannot fill the store: {e}")))?;
        let triples = store.quads_for_pattern(None, None, None, Some(GraphNameRef::DefaultGraph)).count();

        let has_ontology = ontology_ttl.is_some();
        if let Some(ttl) = ontology_ttl {
            let graph = NamedNode::new_unchecked(ONTOLOGY_GRAPH);
            let parser = RdfParser::from_format(RdfFormat::Turtle).without_named_graphs().with_default_graph(graph);
            store.load_from_slice(parser, ttl).map_err(|e| RdfError::Ontology(e.to_string()))?;
            warn_undeclared_classes(&store, nodes);
        }
        Ok(UkoGraph { store, triples, has_ontology })
    }

    /// Runs a SPARQL query. The UKO prefixes and `rdf:`, `rdfs:`, `owl:`,
    /// `xsd:` are predeclared (a query's own `PREFIX` wins). A query without
    /// `FROM` runs over the code graph and the ontology together.
    pub fn query(&self, sparql: &str) -> Result<QueryResult, RdfError> {
        let mut evaluator = SparqlEvaluator::new();
        for (prefix, ns) in PREFIXES {
            evaluator = evaluator.with_prefix(prefix, ns).map_err(|e| RdfError::Evaluation(e.to_string()))?;
        }
        let mut prepared = evaluator.parse_query(sparql).map_err(syntax_error)?;
        if self.has_ontology && prepared.dataset().is_default_dataset() {
            prepared
                .dataset_mut()
                .set_default_graph(vec![GraphName::DefaultGraph, NamedNode::new_unchecked(ONTOLOGY_GRAPH).into()]);
        }
        let eval = |e: &dyn std::fmt::Display| RdfError::Evaluation(e.to_string());
        match prepared.on_store(&self.store).execute().map_err(|e| eval(&e))? {
            QueryResults::Boolean(b) => Ok(QueryResult::Boolean(b)),
            QueryResults::Solutions(solutions) => {
                let vars = solutions.variables().to_vec();
                let mut rows = Vec::new();
                for solution in solutions {
                    let solution = solution.map_err(|e| eval(&e))?;
                    rows.push(vars.iter().map(|v| solution.get(v).map(render_term)).collect());
                }
                Ok(QueryResult::Solutions { variables: vars.iter().map(|v| v.as_str().to_string()).collect(), rows })
            }
            QueryResults::Graph(triples) => {
                let triples = triples.collect::<Result<Vec<_>, _>>().map_err(|e| eval(&e))?;
                Ok(QueryResult::Graph(write_turtle(triples)?))
            }
        }
    }

    /// The code graph (not the ontology) as Turtle: triples sorted by
    /// subject, then `rdf:type` first, then predicate and object, with the
    /// [`PREFIXES`] declared. Two builds of the same input give the same bytes.
    pub fn to_turtle(&self) -> Result<String, RdfError> {
        let triples = self
            .store
            .quads_for_pattern(None, None, None, Some(GraphNameRef::DefaultGraph))
            .map(|q| q.map(Triple::from))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RdfError::Evaluation(e.to_string()))?;
        write_turtle(triples)
    }

    /// Number of triples in the code graph (the ontology is not counted).
    pub fn len(&self) -> usize {
        self.triples
    }

    pub fn is_empty(&self) -> bool {
        self.triples == 0
    }

    /// Number of ontology triples loaded (0 without an ontology).
    pub fn ontology_len(&self) -> usize {
        let graph = NamedNode::new_unchecked(ONTOLOGY_GRAPH);
        self.store.quads_for_pattern(None, None, None, Some(graph.as_ref().into())).count()
    }
}

/// Logs node classes the loaded ontology does not declare as `owl:Class`.
fn warn_undeclared_classes(store: &Store, nodes: &[RdfNode]) {
    let owl_class = NamedNodeRef::new_unchecked("http://www.w3.org/2002/07/owl#Class");
    let graph = NamedNode::new_unchecked(ONTOLOGY_GRAPH);
    let curies: BTreeSet<&str> =
        nodes.iter().flat_map(|n| std::iter::once(n.class_curie.as_str()).chain(n.language_class.as_deref())).collect();
    for curie in curies {
        let Some(iri) = expand_curie(curie) else { continue };
        let class = NamedNode::new_unchecked(iri);
        let declared = store
            .quads_for_pattern(
                Some(class.as_ref().into()),
                Some(rdf::TYPE),
                Some(owl_class.into()),
                Some(graph.as_ref().into()),
            )
            .next()
            .is_some();
        if !declared {
            tracing::warn!(class = curie, "UKO node class is not declared in the ontology");
        }
    }
}

/// Sorts triples (subject, `rdf:type` first, predicate, object) and writes them as Turtle.
fn write_turtle(mut triples: Vec<Triple>) -> Result<String, RdfError> {
    // IRIs compare without their angle brackets, so `<a>` sorts before `<a#b>`.
    let key = |t: &Triple| {
        let object = match &t.object {
            Term::NamedNode(n) => n.as_str().to_string(),
            other => other.to_string(),
        };
        (term_key(&t.subject.to_string()), t.predicate != rdf::TYPE, t.predicate.as_str().to_string(), object)
    };
    triples.sort_by_cached_key(key);
    triples.dedup();
    let mut serializer = RdfSerializer::from_format(RdfFormat::Turtle);
    for (prefix, ns) in PREFIXES {
        serializer = serializer.with_prefix(prefix, ns).map_err(|e| RdfError::Evaluation(e.to_string()))?;
    }
    let mut writer = serializer.for_writer(Vec::new());
    let io = |e: std::io::Error| RdfError::Evaluation(format!("cannot write turtle: {e}"));
    for t in &triples {
        writer.serialize_triple(t).map_err(io)?;
    }
    let bytes = writer.finish().map_err(io)?;
    String::from_utf8(bytes).map_err(|e| RdfError::Evaluation(e.to_string()))
}

fn term_key(rendered: &str) -> String {
    rendered.strip_prefix('<').and_then(|r| r.strip_suffix('>')).unwrap_or(rendered).to_string()
}

/// Turns oxigraph's parse error (`error at 3:7: expected ...`) into [`RdfError::Syntax`].
fn syntax_error(e: impl std::fmt::Display) -> RdfError {
    let text = e.to_string();
    let parsed = text.strip_prefix("error at ").and_then(|rest| {
        let (pos, message) = rest.split_once(": ")?;
        let (line, column) = pos.split_once(':')?;
        Some((line.parse().ok()?, column.parse().ok()?, tidy_expected(message)))
    });
    match parsed {
        Some((line, column, message)) => RdfError::Syntax { message, line: Some(line), column: Some(column) },
        None => RdfError::Syntax { message: text, line: None, column: None },
    }
}

/// Shortens peg's `expected one of ...` list: a grammar message among the
/// alternatives (`Prefix not found`) replaces the list, and long character
/// classes are left out.
fn tidy_expected(message: &str) -> String {
    let Some(list) = message.strip_prefix("expected one of ").or_else(|| message.strip_prefix("expected ")) else {
        return message.to_string();
    };
    let mut items = Vec::new();
    let (mut depth, mut quote, mut escaped, mut start) = (0usize, None, false, 0);
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (Some(_), _) if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                items.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(list[start..].trim());
    let notes: Vec<String> = items
        .iter()
        .filter(|i| i.contains(' ') && !i.starts_with(['[', '"', '\'']))
        .map(|i| {
            let mut chars = i.chars();
            chars.next().map(|f| f.to_lowercase().chain(chars).collect()).unwrap_or_default()
        })
        .collect();
    if !notes.is_empty() {
        return notes.join("; ");
    }
    let kept: Vec<&str> = items.into_iter().filter(|i| !(i.starts_with('[') && i.len() > 24)).collect();
    match kept.as_slice() {
        [] => "unexpected input".to_string(),
        [one] => format!("expected {one}"),
        many => format!("expected one of {}", many.join(", ")),
    }
}

fn render_term(term: &Term) -> String {
    match term {
        Term::NamedNode(n) => render_iri(n.as_str()),
        Term::BlankNode(b) => b.to_string(),
        Term::Literal(l) => l.value().to_string(),
        #[allow(unreachable_patterns)]
        other => other.to_string(),
    }
}

/// A node IRI (`uko:` scheme) as its original URI, another IRI as a CURIE
/// where a known prefix applies, else as is.
fn render_iri(iri: &str) -> String {
    if iri.starts_with("uko:/") { decode_iri(iri) } else { compact_iri(iri) }
}

/// `uko-oo:Method` -> `https://cleveragents.ai/ontology/uko/oo#Method`;
/// `None` for an unknown prefix or a string without `:`.
pub fn expand_curie(curie: &str) -> Option<String> {
    let (prefix, local) = curie.split_once(':')?;
    PREFIXES.iter().find(|(p, _)| *p == prefix).map(|(_, ns)| format!("{ns}{local}"))
}

/// The CURIE of an IRI under a known prefix (`uko-oo:Method`), or the IRI
/// unchanged when no prefix applies or the local part is not a plain name.
pub fn compact_iri(iri: &str) -> String {
    for (prefix, ns) in PREFIXES {
        if let Some(local) = iri.strip_prefix(ns) {
            let plain = local.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
                && !local.starts_with(['-', '.'])
                && !local.ends_with('.');
            if plain {
                return format!("{prefix}:{local}");
            }
        }
    }
    iri.to_string()
}

/// The IRI of a node URI: every byte outside the ASCII characters an IRI
/// path or fragment allows unescaped is percent-encoded, `%` and every `#`
/// after the first included; non-ASCII characters are encoded as their
/// UTF-8 bytes. Deterministic, and [`decode_iri`] inverts it exactly.
pub fn node_iri(uri: &str) -> String {
    let mut out = String::with_capacity(uri.len());
    let mut seen_hash = false;
    for &b in uri.as_bytes() {
        let keep = match b {
            b'#' if !seen_hash => {
                seen_hash = true;
                true
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => true,
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=' => {
                true
            }
            b':' | b'@' | b'/' | b'?' => true,
            _ => false,
        };
        if keep {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The IRI of the external dependency named `name`: `uko://external/<name>`
/// with the name percent-encoded into a single path segment.
pub fn external_iri(name: &str) -> String {
    let mut out = String::from(EXTERNAL_PREFIX);
    for &b in name.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':' | b'@' | b'$' | b'+' | b',' | b'=')
        {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Percent-decodes an IRI (the inverse of [`node_iri`] and, after
/// [`EXTERNAL_PREFIX`], of [`external_iri`]). Invalid escapes and bytes
/// that do not decode to UTF-8 are kept as written.
pub fn decode_iri(iri: &str) -> String {
    let bytes = iri.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (bytes.get(i + 1).and_then(|&b| hex(b)), bytes.get(i + 2).and_then(|&b| hex(b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| iri.to_string())
}

/// The IRI of a built-in CURIE (one of this module's constants).
fn known(curie: &str) -> NamedNode {
    NamedNode::new_unchecked(expand_curie(curie).expect("built-in CURIE of a known prefix"))
}

fn iri_named(iri: &str) -> Result<NamedNode, RdfError> {
    NamedNode::new(iri).map_err(|e| RdfError::Input(format!("`{iri}` is not a valid IRI: {e}")))
}

fn node_named(uri: &str) -> Result<NamedNode, RdfError> {
    NamedNode::new(node_iri(uri)).map_err(|e| RdfError::Input(format!("node URI `{uri}` is not a valid IRI: {e}")))
}

fn external_named(name: &str) -> Result<NamedNode, RdfError> {
    iri_named(&external_iri(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const R: &str = "01HZXRESOURCE0000000000000";
    const T0: &str = "2024-05-01T10:00:00Z";

    fn node(uri: &str, class: &str, name: &str, symbol_path: &str, parent: Option<&str>) -> RdfNode {
        let path = uri.trim_start_matches("uko://").split_once('/').map(|(_, p)| p).unwrap_or("");
        RdfNode {
            uri: uri.to_string(),
            class_curie: class.to_string(),
            language_class: None,
            name: name.to_string(),
            symbol_path: symbol_path.to_string(),
            resource_id: R.to_string(),
            path: path.split('#').next().unwrap_or("").to_string(),
            source_range: "1:0-2:0".to_string(),
            language: "python".to_string(),
            signature: None,
            summary: None,
            valid_from: T0.to_string(),
            valid_until: None,
            is_current: true,
            revision_of: None,
            parent_uri: parent.map(str::to_string),
        }
    }

    fn edge(from: &str, property: &'static str, to: Option<&str>, external: Option<&str>, kind: &str) -> RdfEdge {
        RdfEdge {
            from_uri: from.to_string(),
            property,
            to_uri: to.map(str::to_string),
            external: external.map(str::to_string),
            kind: kind.to_string(),
        }
    }

    const APP: &str = "uko://01HZX/src/app.py";
    const CLS: &str = "uko://01HZX/src/app.py#App";
    const RUN: &str = "uko://01HZX/src/app.py#App.run";
    const STOP: &str = "uko://01HZX/src/app.py#App.stop";
    const IMP: &str = "uko://01HZX/src/app.py#import:util";
    const UTIL: &str = "uko://01HZX/src/util.py";
    const HELPER: &str = "uko://01HZX/src/util.py#helper";

    fn small() -> (Vec<RdfNode>, Vec<RdfEdge>) {
        let mut run = node(RUN, "uko-oo:Method", "run", "App.run", Some(CLS));
        run.signature = Some("def run(self, n: int) -> str".to_string());
        run.summary = Some("Runs the app.".to_string());
        run.source_range = "3:4-11:12".to_string();
        let nodes = vec![
            node(APP, "uko-code:Module", "app.py", "", None),
            node(IMP, "uko-code:Import", "util", "import:util", Some(APP)),
            node(CLS, "uko-oo:Class", "App", "App", Some(APP)),
            run,
            node(STOP, "uko-oo:Method", "stop", "App.stop", Some(CLS)),
            node(UTIL, "uko-code:Module", "util.py", "", None),
            node(HELPER, "uko-code:Function", "helper", "helper", Some(UTIL)),
        ];
        let edges = vec![
            edge(IMP, "uko:dependsOn", Some(UTIL), None, "import"),
            edge(APP, "uko:dependsOn", None, Some("os.path"), "import"),
            edge(RUN, "uko:dependsOn", Some(HELPER), None, "calls"),
            edge(STOP, "uko:references", None, Some("Config"), "mentions"),
        ];
        (nodes, edges)
    }

    const MINI_ONTOLOGY: &str = r#"
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix uko: <https://cleveragents.ai/ontology/uko#> .
@prefix uko-code: <https://cleveragents.ai/ontology/uko/code#> .
@prefix uko-oo: <https://cleveragents.ai/ontology/uko/oo#> .
uko:InformationUnit a owl:Class .
uko:Atom a owl:Class ; rdfs:subClassOf uko:InformationUnit .
uko-code:Callable a owl:Class ; rdfs:subClassOf uko:Atom .
uko-code:Function a owl:Class ; rdfs:subClassOf uko-code:Callable .
uko-oo:Member a owl:Class ; rdfs:subClassOf uko:InformationUnit .
uko-oo:Method a owl:Class ; rdfs:subClassOf uko-code:Callable , uko-oo:Member .
[] a uko:Thing ; rdfs:label "a blank node, to check the export stays deterministic" .
"#;

    fn rows(result: &QueryResult) -> Vec<Vec<Option<String>>> {
        match result {
            QueryResult::Solutions { rows, .. } => rows.clone(),
            other => panic!("expected solutions, got {other:?}"),
        }
    }

    fn col(result: &QueryResult) -> Vec<String> {
        rows(result).into_iter().map(|r| r[0].clone().unwrap_or_default()).collect()
    }

    #[test]
    fn curies_expand_and_compact() {
        assert_eq!(expand_curie("uko-oo:Method").as_deref(), Some("https://cleveragents.ai/ontology/uko/oo#Method"));
        assert_eq!(expand_curie("uko:dependsOn").as_deref(), Some("https://cleveragents.ai/ontology/uko#dependsOn"));
        assert_eq!(expand_curie("nope:Thing"), None);
        assert_eq!(expand_curie("no-colon"), None);
        assert_eq!(compact_iri("https://cleveragents.ai/ontology/uko/rs#Trait"), "uko-rs:Trait");
        assert_eq!(compact_iri("http://www.w3.org/2001/XMLSchema#dateTime"), "xsd:dateTime");
        assert_eq!(compact_iri("http://example.com/x"), "http://example.com/x");
        for (prefix, _) in PREFIXES {
            let curie = format!("{prefix}:Local_name-1");
            assert_eq!(compact_iri(&expand_curie(&curie).unwrap()), curie);
        }
    }

    #[test]
    fn unknown_class_prefix_is_an_error() {
        let bad = node(APP, "nope:Module", "app.py", "", None);
        let err = UkoGraph::build(&[bad], &[], None).unwrap_err();
        assert!(matches!(err, RdfError::Input(_)), "{err:?}");
        assert!(err.to_string().contains("nope:Module"), "{err}");
    }

    #[test]
    fn select_methods_sorted() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let r = g.query("SELECT ?m ?name WHERE { ?m a uko-oo:Method ; uko:name ?name } ORDER BY ?name").unwrap();
        assert_eq!(
            rows(&r),
            vec![
                vec![Some(RUN.to_string()), Some("run".to_string())],
                vec![Some(STOP.to_string()), Some("stop".to_string())],
            ]
        );
        let QueryResult::Solutions { variables, .. } = &r else { unreachable!() };
        assert_eq!(variables, &["m", "name"]);
        let json = r.to_json();
        assert_eq!(json["head"]["vars"], serde_json::json!(["m", "name"]));
        assert_eq!(json["results"]["bindings"][0]["name"], "run");
        let table = r.to_table();
        assert!(table.starts_with("m "), "{table}");
        assert!(table.contains("| run"), "{table}");
        assert!(table.ends_with("(2 rows)\n"), "{table}");
    }

    #[test]
    fn edges_containment_and_externals() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let r = g.query("SELECT ?c WHERE { <uko://01HZX/src/app.py#App> uko:contains ?c } ORDER BY ?c").unwrap();
        assert_eq!(col(&r), vec![RUN, STOP]);
        // The typed sub-property sits next to the plain one.
        let r = g.query("SELECT ?t WHERE { ?f uko:calls ?t . ?f uko:dependsOn ?t }").unwrap();
        assert_eq!(col(&r), vec![HELPER]);
        let r = g.query("SELECT ?t WHERE { ?f uko:imports ?t } ORDER BY ?t").unwrap();
        assert_eq!(col(&r), vec!["uko://01HZX/src/util.py", "uko://external/os.path"]);
        let r = g
            .query("SELECT ?n ?cls WHERE { ?x uko:name ?n ; a ?cls FILTER(STRSTARTS(STR(?x), 'uko://external/')) } ORDER BY ?n")
            .unwrap();
        assert_eq!(
            rows(&r),
            vec![
                vec![Some("Config".to_string()), Some(EXTERNAL_CLASS.to_string())],
                vec![Some("os.path".to_string()), Some(EXTERNAL_CLASS.to_string())],
            ]
        );
        // Mentions get the plain property only.
        let r = g.query("SELECT ?p WHERE { <uko://01HZX/src/app.py#App.stop> ?p <uko://external/Config> }").unwrap();
        assert_eq!(col(&r), vec!["uko:references"]);
        // Literal datatypes.
        let r = g
            .query(&format!(
                "ASK {{ <{RUN}> uko:validFrom ?t ; uko:isCurrent true ; uko:sourceRange '3:4-11:12' \
                 FILTER(DATATYPE(?t) = xsd:dateTime && ?t < '2025-01-01T00:00:00Z'^^xsd:dateTime) }}"
            ))
            .unwrap();
        assert_eq!(r, QueryResult::Boolean(true));
    }

    #[test]
    fn edge_without_target_is_an_error() {
        let (nodes, _) = small();
        let err = UkoGraph::build(&nodes, &[edge(RUN, "uko:dependsOn", None, None, "calls")], None).unwrap_err();
        assert!(matches!(err, RdfError::Input(_)), "{err:?}");
    }

    #[test]
    fn revisions() {
        let (mut nodes, edges) = small();
        let mut old = node(&format!("{RUN}~rev1"), "uko-oo:Method", "run", "App.run", Some(CLS));
        old.is_current = false;
        old.valid_until = Some("2024-05-02T00:00:00.123456789Z".to_string());
        nodes[3].revision_of = Some(old.uri.clone());
        nodes.push(old);
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let r = g.query("SELECT ?new ?old WHERE { ?new uko:isRevisionOf ?old . ?old uko:isCurrent false }").unwrap();
        assert_eq!(rows(&r), vec![vec![Some(RUN.to_string()), Some(format!("{RUN}~rev1"))]]);
    }

    #[test]
    fn subclass_reasoning_over_inline_ontology() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, Some(MINI_ONTOLOGY)).unwrap();
        let r = g.query("SELECT ?x WHERE { ?x a/rdfs:subClassOf* uko-code:Callable } ORDER BY ?x").unwrap();
        assert_eq!(col(&r), vec![RUN, STOP, HELPER]);
        // The ontology is reachable as its own named graph too.
        let r = g
            .query(&format!("ASK {{ GRAPH <{ONTOLOGY_GRAPH}> {{ uko-oo:Method rdfs:subClassOf uko-oo:Member }} }}"))
            .unwrap();
        assert_eq!(r, QueryResult::Boolean(true));
        // ...but not part of the code graph's count or export.
        let without = UkoGraph::build(&nodes, &edges, None).unwrap();
        assert_eq!(g.len(), without.len());
        assert!(g.ontology_len() > 0);
        assert_eq!(without.ontology_len(), 0);
        assert_eq!(g.to_turtle().unwrap(), without.to_turtle().unwrap());
    }

    #[test]
    fn real_ontology_loads() {
        let ttl = include_str!("../../../docs/ontology/uko.ttl");
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, Some(ttl)).unwrap();
        let r = g.query("SELECT DISTINCT ?x WHERE { ?x a/rdfs:subClassOf* uko:InformationUnit }").unwrap();
        let found = col(&r);
        for uri in [APP, CLS, RUN, STOP, HELPER] {
            assert!(found.iter().any(|f| f == uri), "{uri} not an InformationUnit: {found:?}");
        }
        let r = g.query("ASK { ?m a uko-oo:Method ; a/rdfs:subClassOf* uko-code:Callable }").unwrap();
        assert_eq!(r, QueryResult::Boolean(true));
    }

    #[test]
    fn a_language_class_is_a_second_type() {
        let ttl = include_str!("../../../docs/ontology/uko.ttl");
        let (mut nodes, edges) = small();
        let cls = nodes.iter_mut().find(|n| n.uri == CLS).unwrap();
        cls.language = "kotlin".to_string();
        cls.language_class = Some("uko-kt:DataClass".to_string());
        let g = UkoGraph::build(&nodes, &edges, Some(ttl)).unwrap();
        let turtle = g.to_turtle().unwrap();
        assert!(turtle.contains("@prefix uko-kt: <https://cleveragents.ai/ontology/uko/kt#> ."), "{turtle}");
        assert!(turtle.contains("a uko-kt:DataClass , uko-oo:Class ;"), "{turtle}");
        let classes = |q: &str| col(&g.query(q).unwrap());
        // Queries on the generic class still find the node; the language class narrows.
        assert_eq!(classes("SELECT ?x WHERE { ?x a uko-oo:Class }"), [CLS]);
        assert_eq!(classes("SELECT ?x WHERE { ?x a uko-kt:DataClass }"), [CLS]);
        assert_eq!(classes("SELECT DISTINCT ?x WHERE { ?x a/rdfs:subClassOf* uko-oo:Class }"), [CLS]);

        let cls = nodes.iter_mut().find(|n| n.uri == CLS).unwrap();
        cls.language_class = Some("nope:Thing".to_string());
        let err = UkoGraph::build(&nodes, &[], None).unwrap_err();
        assert!(err.to_string().contains("unknown prefix in class `nope:Thing`"), "{err}");
    }

    #[test]
    fn ask_queries() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        assert_eq!(g.query("ASK { ?x a uko-oo:Class }").unwrap(), QueryResult::Boolean(true));
        assert_eq!(g.query("ASK { ?x a uko-rs:Trait }").unwrap(), QueryResult::Boolean(false));
        let r = g.query("ASK { ?x a uko-oo:Class }").unwrap();
        assert_eq!(r.to_json(), serde_json::json!({ "head": {}, "boolean": true }));
        assert_eq!(r.to_table(), "true\n");
    }

    #[test]
    fn own_prefix_declarations_win() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let q = "PREFIX m: <https://cleveragents.ai/ontology/uko/oo#>\nPREFIX uko: <http://example.com/other#>\n\
                 SELECT (COUNT(?x) AS ?n) WHERE { ?x a m:Method . OPTIONAL { ?x uko:name ?nm } FILTER(!BOUND(?nm)) }";
        assert_eq!(col(&g.query(q).unwrap()), vec!["2"]);
    }

    #[test]
    fn malformed_sparql_reports_user_position() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let err = g.query("SELECT ?m\nWHERE { ?m a uko-oo:Method . FILTER( }").unwrap_err();
        let RdfError::Syntax { line, column, message } = &err else { panic!("expected a syntax error, got {err:?}") };
        assert_eq!(*line, Some(2), "{err}");
        assert!(column.is_some_and(|c| c > 1), "{err}");
        assert!(!message.is_empty());
        assert!(err.to_string().starts_with("sparql syntax error at line 2, column "), "{err}");
        // An undeclared prefix is a syntax error too, on the user's first line.
        let err = g.query("SELECT ?x WHERE { ?x a nope:Thing }").unwrap_err();
        assert!(matches!(err, RdfError::Syntax { line: Some(1), .. }), "{err:?}");
        assert!(err.to_string().ends_with(": prefix not found"), "{err}");
    }

    #[test]
    fn construct_gives_turtle() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let r = g.query("CONSTRUCT { ?m uko:name ?n } WHERE { ?m a uko-oo:Method ; uko:name ?n }").unwrap();
        let QueryResult::Graph(ttl) = &r else { panic!("expected a graph, got {r:?}") };
        assert!(ttl.contains("@prefix uko: <https://cleveragents.ai/ontology/uko#>"), "{ttl}");
        assert!(ttl.find("App.run").unwrap() < ttl.find("App.stop").unwrap(), "{ttl}");
        assert_eq!(r.to_json()["graph"], serde_json::Value::from(ttl.clone()));
    }

    fn reparse_count(ttl: &str) -> usize {
        let store = Store::new().unwrap();
        store.load_from_slice(RdfFormat::Turtle, ttl).unwrap();
        store.len().unwrap()
    }

    #[test]
    fn turtle_is_deterministic_and_reparses() {
        let (nodes, edges) = small();
        let a = UkoGraph::build(&nodes, &edges, Some(MINI_ONTOLOGY)).unwrap().to_turtle().unwrap();
        let mut rev_nodes = nodes.clone();
        rev_nodes.reverse();
        let mut rev_edges = edges.clone();
        rev_edges.reverse();
        let g = UkoGraph::build(&rev_nodes, &rev_edges, None).unwrap();
        let b = g.to_turtle().unwrap();
        assert_eq!(a, b);
        assert_eq!(reparse_count(&a), g.len());
        assert!(!g.is_empty());
    }

    #[test]
    fn iris_with_spaces_and_unicode_round_trip() {
        let weird = [
            "uko://01HZX/src/my app/naïve módulo.py",
            "uko://01HZX/src/my app/naïve módulo.py#Clâss.rün",
            "uko://01HZX/docs/日本語 ノート.md#見出し 1#2",
            "uko://01HZX/src/100%done<x>|{y}\"`^\\.py",
        ];
        for uri in weird {
            let iri = node_iri(uri);
            assert!(NamedNode::new(&iri).is_ok(), "{iri}");
            assert!(iri.is_ascii() && !iri.contains(' '), "{iri}");
            assert_eq!(decode_iri(&iri), uri);
            assert_eq!(node_iri(uri), iri, "deterministic");
        }
        assert_eq!(node_iri(RUN), RUN, "plain URIs stay as they are");
        assert_eq!(external_iri("./util"), "uko://external/.%2Futil");
        assert_eq!(decode_iri(&external_iri("net/http #1")), "uko://external/net/http #1");

        let nodes = vec![
            node(weird[0], "uko-code:Module", "naïve módulo.py", "", None),
            node(weird[1], "uko-oo:Class", "Clâss.rün", "Clâss.rün", Some(weird[0])),
            node(weird[2], "uko-doc:Section", "見出し 1#2", "見出し 1#2", None),
            node(weird[3], "uko-code:File", "odd", "", None),
        ];
        let edges = vec![edge(weird[1], "uko:dependsOn", None, Some("ünïcode mod/x"), "import")];
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        let r = g.query("SELECT ?c WHERE { ?p uko:contains ?c }").unwrap();
        assert_eq!(col(&r), vec![weird[1]]);
        let r = g.query("SELECT ?t WHERE { ?f uko:imports ?t }").unwrap();
        assert_eq!(col(&r), vec!["uko://external/ünïcode mod/x"]);
        let ttl = g.to_turtle().unwrap();
        assert_eq!(reparse_count(&ttl), g.len());
        assert!(ttl.contains("\"見出し 1#2\""), "literals keep their text: {ttl}");
    }

    #[test]
    fn turtle_snapshot() {
        let (nodes, edges) = small();
        let g = UkoGraph::build(&nodes, &edges, None).unwrap();
        insta::assert_snapshot!("small_graph_turtle", g.to_turtle().unwrap());
    }
}
