//! The UKO ontology and its loader (the spec's `UKOLoader`).
//!
//! [`Ontology::load`] parses a Turtle document (normally
//! `docs/ontology/uko.ttl`, embedded as [`Ontology::builtin`]) with oxigraph's
//! Turtle parser and builds an in-memory view of it: the classes with their
//! `rdfs:subClassOf` parents, the properties, and the CRP detail-level maps as
//! [`DetailLevelMaps`].
//!
//! Structure the loader enforces (each violation is an [`OntologyError`]
//! naming the offending class or map):
//!
//! * every declared class (`owl:Class` or `rdfs:Class`) and property lives in
//!   one of the twenty-six UKO [`NAMESPACES`], whose prefix fixes its layer;
//! * every named `rdfs:subClassOf` parent is itself a declared class
//!   (`owl:Thing` and anonymous class expressions are ignored);
//! * `rdfs:subClassOf` forms no cycle, and no class specializes a class of a
//!   higher layer;
//! * `uko:InformationUnit` is declared, has no parent, and every class of
//!   layers 1–3 descends from it (layer 0 may hold other roots: the
//!   `uko:DetailLevelMap` vocabulary);
//! * every `uko:DetailLevelMap` has one `uko:domain`, at most one
//!   `uko:extendsMap` naming another map (only the `uko` domain may have
//!   none), no inheritance cycle, and levels whose depths lie in `0..=9`.
//!
//! RDF keeps no order, so parents are ordered deterministically: by layer,
//! highest first, then by CURIE. [`Ontology::resolve_inheritance`] walks them
//! breadth first.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::LazyLock;

use agents_core::request::{DetailLevelMap, DetailLevelMaps, UNIVERSAL_DOMAIN};
use oxigraph::io::{RdfFormat, RdfParser, RdfSerializer, RdfSyntaxError};
use oxigraph::model::{NamedNode, NamedOrBlankNode, Term, Triple};
use serde::Serialize;

/// One UKO namespace: its prefix, IRI and layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Namespace {
    pub prefix: &'static str,
    pub iri: &'static str,
    pub layer: u8,
}

const fn ns(prefix: &'static str, iri: &'static str, layer: u8) -> Namespace {
    Namespace { prefix, iri, layer }
}

/// The UKO namespaces of the spec, by layer.
pub const NAMESPACES: [Namespace; 26] = [
    ns("uko", "https://cleveragents.ai/ontology/uko#", 0),
    ns("uko-code", "https://cleveragents.ai/ontology/uko/code#", 1),
    ns("uko-doc", "https://cleveragents.ai/ontology/uko/doc#", 1),
    ns("uko-data", "https://cleveragents.ai/ontology/uko/data#", 1),
    ns("uko-infra", "https://cleveragents.ai/ontology/uko/infra#", 1),
    ns("uko-oo", "https://cleveragents.ai/ontology/uko/oo#", 2),
    ns("uko-func", "https://cleveragents.ai/ontology/uko/func#", 2),
    ns("uko-proc", "https://cleveragents.ai/ontology/uko/proc#", 2),
    ns("uko-py", "https://cleveragents.ai/ontology/uko/py#", 3),
    ns("uko-ts", "https://cleveragents.ai/ontology/uko/ts#", 3),
    ns("uko-rs", "https://cleveragents.ai/ontology/uko/rs#", 3),
    ns("uko-java", "https://cleveragents.ai/ontology/uko/java#", 3),
    ns("uko-go", "https://cleveragents.ai/ontology/uko/go#", 3),
    ns("uko-c", "https://cleveragents.ai/ontology/uko/c#", 3),
    ns("uko-cpp", "https://cleveragents.ai/ontology/uko/cpp#", 3),
    ns("uko-rb", "https://cleveragents.ai/ontology/uko/rb#", 3),
    ns("uko-sh", "https://cleveragents.ai/ontology/uko/sh#", 3),
    ns("uko-lua", "https://cleveragents.ai/ontology/uko/lua#", 3),
    ns("uko-cs", "https://cleveragents.ai/ontology/uko/cs#", 3),
    ns("uko-php", "https://cleveragents.ai/ontology/uko/php#", 3),
    ns("uko-kt", "https://cleveragents.ai/ontology/uko/kt#", 3),
    ns("uko-scala", "https://cleveragents.ai/ontology/uko/scala#", 3),
    ns("uko-swift", "https://cleveragents.ai/ontology/uko/swift#", 3),
    ns("uko-zig", "https://cleveragents.ai/ontology/uko/zig#", 3),
    ns("uko-hs", "https://cleveragents.ai/ontology/uko/hs#", 3),
    ns("uko-ex", "https://cleveragents.ai/ontology/uko/ex#", 3),
];

/// The CURIE of the root class.
pub const ROOT_CLASS: &str = "uko:InformationUnit";

/// Prefixes used only to display (and serialize) IRIs outside UKO.
const STANDARD_PREFIXES: [(&str, &str); 4] = [
    ("rdf", "http://www.w3.org/1999/02/22-rdf-syntax-ns#"),
    ("rdfs", "http://www.w3.org/2000/01/rdf-schema#"),
    ("owl", "http://www.w3.org/2002/07/owl#"),
    ("xsd", "http://www.w3.org/2001/XMLSchema#"),
];

const RDF_TYPE: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type";
const RDFS_CLASS: &str = "http://www.w3.org/2000/01/rdf-schema#Class";
const RDFS_SUB_CLASS_OF: &str = "http://www.w3.org/2000/01/rdf-schema#subClassOf";
const RDFS_SUB_PROPERTY_OF: &str = "http://www.w3.org/2000/01/rdf-schema#subPropertyOf";
const RDFS_LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";
const RDFS_COMMENT: &str = "http://www.w3.org/2000/01/rdf-schema#comment";
const RDFS_DOMAIN: &str = "http://www.w3.org/2000/01/rdf-schema#domain";
const RDFS_RANGE: &str = "http://www.w3.org/2000/01/rdf-schema#range";
const OWL_CLASS: &str = "http://www.w3.org/2002/07/owl#Class";
const OWL_THING: &str = "http://www.w3.org/2002/07/owl#Thing";
const OWL_ONTOLOGY: &str = "http://www.w3.org/2002/07/owl#Ontology";
const OWL_VERSION_INFO: &str = "http://www.w3.org/2002/07/owl#versionInfo";
const OWL_OBJECT_PROPERTY: &str = "http://www.w3.org/2002/07/owl#ObjectProperty";
const OWL_DATATYPE_PROPERTY: &str = "http://www.w3.org/2002/07/owl#DatatypeProperty";
const OWL_ANNOTATION_PROPERTY: &str = "http://www.w3.org/2002/07/owl#AnnotationProperty";
const UKO_DETAIL_LEVEL_MAP: &str = "https://cleveragents.ai/ontology/uko#DetailLevelMap";
const UKO_DOMAIN: &str = "https://cleveragents.ai/ontology/uko#domain";
const UKO_EXTENDS_MAP: &str = "https://cleveragents.ai/ontology/uko#extendsMap";
const UKO_LEVEL: &str = "https://cleveragents.ai/ontology/uko#level";
const UKO_LEVEL_NAME: &str = "https://cleveragents.ai/ontology/uko#levelName";
const UKO_DEPTH: &str = "https://cleveragents.ai/ontology/uko#depth";

/// The namespace of a CURIE (`uko-oo:Class`) or IRI.
pub fn namespace_of(curie_or_iri: &str) -> Option<&'static Namespace> {
    if let Some((prefix, _)) = curie_or_iri.split_once(':')
        && let Some(ns) = NAMESPACES.iter().find(|ns| ns.prefix == prefix)
    {
        return Some(ns);
    }
    NAMESPACES.iter().find(|ns| curie_or_iri.starts_with(ns.iri))
}

/// The layer (0–3) of a UKO CURIE or IRI, from its prefix alone.
pub fn layer_of(curie_or_iri: &str) -> Option<u8> {
    namespace_of(curie_or_iri).map(|ns| ns.layer)
}

/// The CURIE of a UKO IRI (`https://cleveragents.ai/ontology/uko/oo#Class`
/// is `uko-oo:Class`); `None` outside the UKO namespaces.
pub fn compact(iri: &str) -> Option<String> {
    NAMESPACES.iter().find_map(|ns| {
        let local = iri.strip_prefix(ns.iri)?;
        let well_formed = !local.is_empty() && !local.contains(['#', '/', ':']);
        well_formed.then(|| format!("{}:{local}", ns.prefix))
    })
}

/// The IRI of a UKO CURIE; `None` for an unknown prefix.
pub fn expand(curie: &str) -> Option<String> {
    let (prefix, local) = curie.split_once(':')?;
    let ns = NAMESPACES.iter().find(|ns| ns.prefix == prefix)?;
    (!local.is_empty()).then(|| format!("{}{local}", ns.iri))
}

/// How an IRI is shown in errors and property ranges: a UKO or standard
/// CURIE when it has one, else `<iri>`.
fn display_iri(iri: &str) -> String {
    if let Some(curie) = compact(iri) {
        return curie;
    }
    for (prefix, ns) in STANDARD_PREFIXES {
        if let Some(local) = iri.strip_prefix(ns) {
            return format!("{prefix}:{local}");
        }
    }
    format!("<{iri}>")
}

fn display_node(node: &NamedOrBlankNode) -> String {
    match node {
        NamedOrBlankNode::NamedNode(n) => display_iri(n.as_str()),
        NamedOrBlankNode::BlankNode(b) => b.to_string(),
    }
}

fn display_term(term: &Term) -> String {
    if let Term::NamedNode(n) = term {
        display_iri(n.as_str())
    } else if let Term::BlankNode(b) = term {
        b.to_string()
    } else if let Term::Literal(l) = term {
        l.value().to_string()
    } else {
        term.to_string()
    }
}

/// Why an ontology could not be loaded.
///
/// Classes, properties and maps are named by CURIE when they have one, else
/// as `<iri>` or a blank node label.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OntologyError {
    /// The document is not valid Turtle. `line` and `column` are 1-based
    /// (column in characters) and point at the token where the parser gave
    /// up, which for a missing `.` is the start of the next statement.
    #[error("{source_name}:{line}:{column}: Turtle syntax error: {message}")]
    Syntax { source_name: String, line: u64, column: u64, message: String },
    /// A class or property declared outside the UKO namespaces.
    #[error("{source_name}: `{iri}` is declared outside the UKO namespaces")]
    Foreign { source_name: String, iri: String },
    /// A subject of `rdfs:subClassOf` that is not declared as a class.
    #[error("{source_name}: `{class}` has rdfs:subClassOf but is not declared as an owl:Class")]
    UndeclaredClass { source_name: String, class: String },
    /// A named `rdfs:subClassOf` parent that is not declared as a class.
    #[error("{source_name}: `{class}` is a subclass of `{parent}`, which is not a declared class")]
    UndeclaredParent { source_name: String, class: String, parent: String },
    /// The subclass relation loops; `cycle` starts and ends at `class`.
    #[error("{source_name}: rdfs:subClassOf cycle through `{class}`: {}", cycle.join(" -> "))]
    Cycle { source_name: String, class: String, cycle: Vec<String> },
    /// A class specializing a class of a higher layer.
    #[error(
        "{source_name}: `{class}` (layer {layer}) cannot be a subclass of `{parent}` (layer {parent_layer}): \
         layers build only on lower layers"
    )]
    LayerInversion { source_name: String, class: String, layer: u8, parent: String, parent_layer: u8 },
    /// `uko:InformationUnit` is missing or not a root.
    #[error("{source_name}: {message}")]
    Root { source_name: String, message: String },
    /// A class of layers 1–3 that does not descend from `uko:InformationUnit`.
    #[error("{source_name}: `{class}` does not descend from uko:InformationUnit")]
    Unrooted { source_name: String, class: String },
    /// A detail level map with a missing, repeated or malformed `uko:domain`.
    #[error("{source_name}: detail level map `{map}`: {message}")]
    MapDomain { source_name: String, map: String, message: String },
    /// A detail level map whose `uko:extendsMap` parent is missing or unknown.
    #[error("{source_name}: detail level map `{map}`: {message}")]
    MapParent { source_name: String, map: String, message: String },
    /// Detail level maps that extend each other in a loop.
    #[error("{source_name}: detail level map `{map}` inherits from itself: {}", cycle.join(" -> "))]
    MapCycle { source_name: String, map: String, cycle: Vec<String> },
    /// A level whose `uko:depth` is not an integer in `0..=9`.
    #[error("{source_name}: detail level map `{map}`: level `{level}` has depth `{depth}`, expected 0 to 9")]
    LevelDepth { source_name: String, map: String, level: String, depth: String },
    /// A level without a name or depth, with a malformed name, or defined twice differently.
    #[error("{source_name}: detail level map `{map}`: {message}")]
    InvalidLevel { source_name: String, map: String, message: String },
}

/// One class of the ontology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClassInfo {
    pub iri: String,
    /// `prefix:LocalName`, e.g. `uko-oo:Class`.
    pub curie: String,
    /// The `rdfs:label` (untagged or English); the local name if none.
    pub label: String,
    /// The `rdfs:comment` (untagged or English); empty if none.
    pub comment: String,
    /// Direct named superclasses as CURIEs, by layer (highest first), then CURIE.
    pub parents: Vec<String>,
    /// 0–3, from the prefix.
    pub layer: u8,
}

/// The kind of an ontology property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PropertyKind {
    /// Links two resources (`owl:ObjectProperty`): `uko:contains`, `uko:dependsOn`.
    Object,
    /// Links a resource to a literal (`owl:DatatypeProperty`): `uko:sourcePath`.
    Datatype,
    /// `owl:AnnotationProperty`.
    Annotation,
}

/// One property of the ontology.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyInfo {
    pub iri: String,
    pub curie: String,
    pub kind: PropertyKind,
    pub label: String,
    pub comment: String,
    /// `rdfs:domain`, as a CURIE (or `<iri>`).
    pub domain: Option<String>,
    /// `rdfs:range`, as a CURIE (`xsd:string`, `uko:InformationUnit`) or `<iri>`.
    pub range: Option<String>,
    /// `rdfs:subPropertyOf` parents, as CURIEs, sorted.
    pub parents: Vec<String>,
}

/// A loaded UKO ontology.
#[derive(Clone, Debug)]
pub struct Ontology {
    source_name: String,
    version: Option<String>,
    classes: BTreeMap<String, ClassInfo>,
    /// Direct subclasses per class, by layer then CURIE.
    children: BTreeMap<String, Vec<String>>,
    properties: BTreeMap<String, PropertyInfo>,
    maps: DetailLevelMaps,
    triples: Vec<Triple>,
}

static BUILTIN: LazyLock<Ontology> = LazyLock::new(|| {
    Ontology::load(Ontology::BUILTIN_TURTLE, Ontology::BUILTIN_SOURCE)
        .unwrap_or_else(|e| panic!("the built-in UKO ontology is invalid (a bug): {e}"))
});

impl Ontology {
    /// The text of `docs/ontology/uko.ttl`, compiled in.
    pub const BUILTIN_TURTLE: &'static str = include_str!("../../../docs/ontology/uko.ttl");
    /// The source name of the built-in ontology in errors.
    pub const BUILTIN_SOURCE: &'static str = "docs/ontology/uko.ttl";

    /// The built-in ontology, parsed once.
    pub fn builtin() -> &'static Ontology {
        &BUILTIN
    }

    /// The Turtle text of the built-in ontology ([`Ontology::BUILTIN_TURTLE`]).
    pub fn builtin_ttl() -> &'static str {
        Ontology::BUILTIN_TURTLE
    }

    /// Parses `ttl` (Turtle) and checks its structure; `source_name` names
    /// the document in errors.
    pub fn load(ttl: &str, source_name: &str) -> Result<Ontology, OntologyError> {
        let triples = parse_turtle(ttl, source_name)?;
        Loader::new(source_name, &triples).load(triples.clone())
    }

    /// The name the ontology was loaded under.
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// The `owl:versionInfo` of the `owl:Ontology`, if declared.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Every class, sorted by CURIE.
    pub fn classes(&self) -> impl Iterator<Item = &ClassInfo> {
        self.classes.values()
    }

    /// The class with this CURIE (`uko-oo:Class`) or IRI.
    pub fn class(&self, curie_or_iri: &str) -> Option<&ClassInfo> {
        match self.classes.get(curie_or_iri) {
            Some(class) => Some(class),
            None => self.classes.get(&compact(curie_or_iri)?),
        }
    }

    /// The layer (0–3) of a CURIE or IRI, from its prefix; the class need not exist.
    pub fn layer_of(&self, curie_or_iri: &str) -> Option<u8> {
        layer_of(curie_or_iri)
    }

    /// The class and all its ancestors as CURIEs, each once: the class
    /// first, then breadth first through the parents (each class's parents in
    /// [`ClassInfo::parents`] order), with the guarantee that a class always
    /// comes before every one of its superclasses — so `uko:InformationUnit`
    /// is last. (A FIFO topological sort of the ancestor graph; for single
    /// inheritance it is plain BFS.) Empty for an unknown class.
    pub fn resolve_inheritance(&self, curie_or_iri: &str) -> Vec<String> {
        let Some(start) = self.class(curie_or_iri) else {
            return Vec::new();
        };
        // The ancestor set, and for each member how many of its direct
        // subclasses inside the set are still to be emitted.
        let mut pending: HashMap<&str, usize> = HashMap::from([(start.curie.as_str(), 0)]);
        let mut stack = vec![start];
        let mut seen = BTreeSet::from([start.curie.as_str()]);
        while let Some(class) = stack.pop() {
            for parent in &class.parents {
                *pending.entry(parent.as_str()).or_default() += 1;
                if seen.insert(parent.as_str()) {
                    stack.push(&self.classes[parent]);
                }
            }
        }
        let mut chain = Vec::with_capacity(pending.len());
        let mut queue = VecDeque::from([start]);
        while let Some(class) = queue.pop_front() {
            chain.push(class.curie.clone());
            for parent in &class.parents {
                let count = pending.get_mut(parent.as_str()).expect("every parent is in the ancestor set");
                *count -= 1;
                if *count == 0 {
                    queue.push_back(&self.classes[parent]);
                }
            }
        }
        chain
    }

    /// Whether `class` is `ancestor` or one of its subclasses (reflexive,
    /// as `rdfs:subClassOf`). `false` when either is unknown.
    pub fn is_subclass_of(&self, class: &str, ancestor: &str) -> bool {
        let Some(ancestor) = self.class(ancestor) else {
            return false;
        };
        self.resolve_inheritance(class).contains(&ancestor.curie)
    }

    /// The direct subclasses of a class, by layer then CURIE.
    pub fn children(&self, curie_or_iri: &str) -> Vec<&ClassInfo> {
        let Some(class) = self.class(curie_or_iri) else {
            return Vec::new();
        };
        self.children.get(&class.curie).into_iter().flatten().map(|child| &self.classes[child]).collect()
    }

    /// Every property, sorted by CURIE.
    pub fn properties(&self) -> impl Iterator<Item = &PropertyInfo> {
        self.properties.values()
    }

    /// The property with this CURIE (`uko:dependsOn`) or IRI.
    pub fn property(&self, curie_or_iri: &str) -> Option<&PropertyInfo> {
        match self.properties.get(curie_or_iri) {
            Some(property) => Some(property),
            None => self.properties.get(&compact(curie_or_iri)?),
        }
    }

    /// The detail level maps of the ontology, by domain (`uko`, `uko-py`, ...).
    pub fn detail_level_maps(&self) -> &DetailLevelMaps {
        &self.maps
    }

    /// The detail level map that serves a class: the map of the class's own
    /// domain (its prefix) if there is one, else that of the nearest ancestor
    /// in [`Ontology::resolve_inheritance`] order whose domain has one, else
    /// the universal map. Resolve names through it with
    /// [`DetailLevelMaps::resolve`] to inherit up to the universal levels.
    /// `None` for an unknown class.
    pub fn detail_level_map_for(&self, curie_or_iri: &str) -> Option<&DetailLevelMap> {
        let chain = self.resolve_inheritance(curie_or_iri);
        if chain.is_empty() {
            return None;
        }
        chain
            .iter()
            .filter_map(|curie| curie.split_once(':'))
            .find_map(|(prefix, _)| self.maps.get(prefix))
            .or_else(|| self.maps.get(UNIVERSAL_DOMAIN))
    }

    /// The detail-level domain for files of a detected language (the names
    /// of [`crate::language`]): each language with a structural analyzer has
    /// its layer-3 domain (`python` is `uko-py`; `typescript`, `tsx` and
    /// `javascript` are `uko-ts`; `rust` `uko-rs`; `java` `uko-java`; `go`
    /// `uko-go`; `c` `uko-c`; `cpp` `uko-cpp`; `ruby` `uko-rb`; `shell`
    /// `uko-sh`; `lua` `uko-lua`; `csharp` `uko-cs`; `php` `uko-php`;
    /// `kotlin` `uko-kt`; `scala` `uko-scala`; `swift` `uko-swift`; `zig`
    /// `uko-zig`; `haskell` `uko-hs`; `elixir` `uko-ex`); prose (`markdown`,
    /// `restructuredtext`, `org`, `text`) is `uko-doc`; `csv` and `tsv` are
    /// `uko-data`. Anything else is the universal domain `uko`. A domain
    /// this ontology has no map for falls back to `uko-code` for source
    /// languages, then to `uko`.
    pub fn domain_for_language(&self, language: &str) -> &str {
        let domain = match language {
            "python" => "uko-py",
            "typescript" | "tsx" | "javascript" => "uko-ts",
            "rust" => "uko-rs",
            "java" => "uko-java",
            "go" => "uko-go",
            "c" => "uko-c",
            "cpp" => "uko-cpp",
            "ruby" => "uko-rb",
            "shell" => "uko-sh",
            "lua" => "uko-lua",
            "csharp" => "uko-cs",
            "php" => "uko-php",
            "kotlin" => "uko-kt",
            "scala" => "uko-scala",
            "swift" => "uko-swift",
            "zig" => "uko-zig",
            "haskell" => "uko-hs",
            "elixir" => "uko-ex",
            "markdown" | "restructuredtext" | "org" | "text" => "uko-doc",
            "csv" | "tsv" => "uko-data",
            _ => UNIVERSAL_DOMAIN,
        };
        let code = layer_of(domain) == Some(3);
        self.maps
            .get(domain)
            .or_else(|| if code { self.maps.get("uko-code") } else { None })
            .or_else(|| self.maps.get(UNIVERSAL_DOMAIN))
            .map_or(UNIVERSAL_DOMAIN, |m| m.domain())
    }

    /// The ontology as Turtle, with the UKO and standard prefixes.
    pub fn to_turtle(&self) -> String {
        let mut serializer = RdfSerializer::from_format(RdfFormat::Turtle);
        let prefixes = || STANDARD_PREFIXES.iter().copied().chain(NAMESPACES.iter().map(|ns| (ns.prefix, ns.iri)));
        for (prefix, iri) in prefixes() {
            serializer = serializer.with_prefix(prefix, iri).expect("the prefix IRIs are valid");
        }
        let mut writer = serializer.for_writer(Vec::new());
        for triple in &self.triples {
            writer.serialize_triple(triple).expect("writing to memory cannot fail");
        }
        let bytes = writer.finish().expect("writing to memory cannot fail");
        let body = String::from_utf8(bytes).expect("Turtle is UTF-8");
        // The serializer writes its prefixes in hash order: restate them in a
        // fixed one so the output is deterministic.
        let mut out: String = prefixes().map(|(prefix, iri)| format!("@prefix {prefix}: <{iri}> .\n")).collect();
        for line in body.lines().skip_while(|line| line.starts_with("@prefix ")) {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The class hierarchy as an indented tree, for `agents uko types`.
    ///
    /// Starts at `uko:InformationUnit`; other roots (the detail level map
    /// vocabulary) follow as their own trees. A class with several parents
    /// is expanded under its first parent, where `(also under ...)` lists the
    /// others; under each other parent it appears once more, marked
    /// `(see under ...)`, without its subtree.
    pub fn render_class_tree(&self) -> String {
        let mut roots: Vec<&ClassInfo> = self.classes.values().filter(|c| c.parents.is_empty()).collect();
        roots.sort_by_key(|c| (c.curie != ROOT_CLASS, c.layer, c.curie.as_str()));
        let mut out = String::new();
        for (i, root) in roots.into_iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(&format!("{} — {}\n", root.curie, root.label));
            self.render_children(root, "", &mut out);
        }
        out
    }

    fn render_children(&self, class: &ClassInfo, indent: &str, out: &mut String) {
        let children = self.children(&class.curie);
        for (i, child) in children.iter().enumerate() {
            let last = i + 1 == children.len();
            let (branch, next) = if last { ("└── ", "    ") } else { ("├── ", "│   ") };
            let primary = child.parents.first().is_some_and(|p| *p == class.curie);
            out.push_str(&format!("{indent}{branch}{} — {}", child.curie, child.label));
            if primary {
                if child.parents.len() > 1 {
                    out.push_str(&format!(" (also under {})", child.parents[1..].join(", ")));
                }
                out.push('\n');
                self.render_children(child, &format!("{indent}{next}"), out);
            } else {
                out.push_str(&format!(" (see under {})\n", child.parents[0]));
            }
        }
    }
}

/// Parses Turtle with oxigraph, stopping at the first syntax error.
fn parse_turtle(ttl: &str, source_name: &str) -> Result<Vec<Triple>, OntologyError> {
    RdfParser::from_format(RdfFormat::Turtle)
        .for_slice(ttl)
        .map(|quad| quad.map(Triple::from).map_err(|e| syntax_error(source_name, &e)))
        .collect()
}

fn syntax_error(source_name: &str, error: &RdfSyntaxError) -> OntologyError {
    let text = error.to_string();
    // oxttl's message reads "Parser error at line L column C: message";
    // the location is reported separately.
    let message = match text.strip_prefix("Parser error") {
        Some(rest) => rest.split_once(": ").map_or(text.as_str(), |(_, message)| message),
        None => text.as_str(),
    };
    let (line, column) = error.location().map_or((0, 0), |range| (range.start.line + 1, range.start.column + 1));
    OntologyError::Syntax { source_name: source_name.to_string(), line, column, message: message.to_string() }
}

/// The triples indexed by subject, objects in document order.
struct Graph<'t> {
    by_subject: HashMap<&'t NamedOrBlankNode, Vec<(&'t str, &'t Term)>>,
    subjects: Vec<&'t NamedOrBlankNode>,
}

impl<'t> Graph<'t> {
    fn new(triples: &'t [Triple]) -> Graph<'t> {
        let mut by_subject: HashMap<&NamedOrBlankNode, Vec<(&str, &Term)>> = HashMap::new();
        let mut subjects = Vec::new();
        for triple in triples {
            let entry = by_subject.entry(&triple.subject).or_insert_with(|| {
                subjects.push(&triple.subject);
                Vec::new()
            });
            entry.push((triple.predicate.as_str(), &triple.object));
        }
        Graph { by_subject, subjects }
    }

    fn objects<'g>(&'g self, subject: &NamedOrBlankNode, predicate: &'g str) -> impl Iterator<Item = &'t Term> + 'g {
        self.by_subject.get(subject).into_iter().flatten().filter(move |(p, _)| *p == predicate).map(|(_, o)| *o)
    }

    fn has_type(&self, subject: &NamedOrBlankNode, types: &[&str]) -> bool {
        self.objects(subject, RDF_TYPE).any(|t| matches!(t, Term::NamedNode(n) if types.contains(&n.as_str())))
    }

    /// Subjects (in document order) typed with one of `types`.
    fn typed(&self, types: &[&str]) -> Vec<&'t NamedOrBlankNode> {
        self.subjects.iter().copied().filter(|s| self.has_type(s, types)).collect()
    }

    fn named_objects<'g>(
        &'g self,
        subject: &NamedOrBlankNode,
        predicate: &'g str,
    ) -> impl Iterator<Item = &'t str> + 'g {
        self.objects(subject, predicate)
            .filter_map(|t| if let Term::NamedNode(n) = t { Some(n.as_str()) } else { None })
    }

    /// The preferred literal: untagged or English, the smallest if several.
    fn text(&self, subject: &NamedOrBlankNode, predicate: &str) -> Option<String> {
        self.objects(subject, predicate)
            .filter_map(|t| if let Term::Literal(l) = t { Some(l) } else { None })
            .filter(|l| l.language().is_none_or(|lang| lang.eq_ignore_ascii_case("en")))
            .map(|l| l.value().to_string())
            .min()
    }

    fn literals<'g>(&'g self, subject: &NamedOrBlankNode, predicate: &'g str) -> Vec<&'t str> {
        self.objects(subject, predicate)
            .filter_map(|t| if let Term::Literal(l) = t { Some(l.value()) } else { None })
            .collect()
    }
}

struct Loader<'t> {
    source_name: String,
    graph: Graph<'t>,
}

impl<'t> Loader<'t> {
    fn new(source_name: &str, triples: &'t [Triple]) -> Loader<'t> {
        Loader { source_name: source_name.to_string(), graph: Graph::new(triples) }
    }

    fn load(self, triples: Vec<Triple>) -> Result<Ontology, OntologyError> {
        let classes = self.classes()?;
        self.check_hierarchy(&classes)?;
        let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for class in classes.values() {
            for parent in &class.parents {
                children.entry(parent.clone()).or_default().push(class.curie.clone());
            }
        }
        for list in children.values_mut() {
            list.sort_by_key(|c| (classes[c].layer, c.clone()));
        }
        let properties = self.properties()?;
        let maps = self.detail_level_maps()?;
        let version = self
            .graph
            .typed(&[OWL_ONTOLOGY])
            .into_iter()
            .find_map(|ontology| self.graph.text(ontology, OWL_VERSION_INFO));
        Ok(Ontology { source_name: self.source_name, version, classes, children, properties, maps, triples })
    }

    fn curie_of(&self, iri: &str) -> Result<String, OntologyError> {
        compact(iri)
            .ok_or_else(|| OntologyError::Foreign { source_name: self.source_name.clone(), iri: display_iri(iri) })
    }

    fn classes(&self) -> Result<BTreeMap<String, ClassInfo>, OntologyError> {
        let declared: Vec<&NamedNode> = self
            .graph
            .typed(&[OWL_CLASS, RDFS_CLASS])
            .into_iter()
            .filter_map(|s| if let NamedOrBlankNode::NamedNode(n) = s { Some(n) } else { None })
            .collect();
        let declared_iris: BTreeSet<&str> = declared.iter().map(|n| n.as_str()).collect();
        let mut classes = BTreeMap::new();
        for node in declared {
            let curie = self.curie_of(node.as_str())?;
            let subject = NamedOrBlankNode::NamedNode(node.clone());
            let mut parents = Vec::new();
            for parent in self.graph.named_objects(&subject, RDFS_SUB_CLASS_OF) {
                if parent == OWL_THING {
                    continue;
                }
                if !declared_iris.contains(parent) {
                    return Err(OntologyError::UndeclaredParent {
                        source_name: self.source_name.clone(),
                        class: curie,
                        parent: display_iri(parent),
                    });
                }
                parents.push(self.curie_of(parent)?);
            }
            parents.sort_by(|a, b| layer_of(b).cmp(&layer_of(a)).then_with(|| a.cmp(b)));
            parents.dedup();
            let local = curie.split_once(':').map_or(curie.as_str(), |(_, local)| local).to_string();
            let info = ClassInfo {
                iri: node.as_str().to_string(),
                label: self.graph.text(&subject, RDFS_LABEL).unwrap_or(local),
                comment: self.graph.text(&subject, RDFS_COMMENT).unwrap_or_default(),
                layer: layer_of(&curie).expect("a CURIE of a UKO namespace"),
                curie: curie.clone(),
                parents,
            };
            classes.insert(curie, info);
        }
        // Subjects of rdfs:subClassOf must be declared too.
        for subject in &self.graph.subjects {
            if let NamedOrBlankNode::NamedNode(n) = subject
                && !declared_iris.contains(n.as_str())
                && self.graph.objects(subject, RDFS_SUB_CLASS_OF).next().is_some()
            {
                return Err(OntologyError::UndeclaredClass {
                    source_name: self.source_name.clone(),
                    class: display_iri(n.as_str()),
                });
            }
        }
        Ok(classes)
    }

    fn check_hierarchy(&self, classes: &BTreeMap<String, ClassInfo>) -> Result<(), OntologyError> {
        let source_name = || self.source_name.clone();
        if let Some(cycle) =
            find_cycle(classes.keys().map(String::as_str), |c| classes[c].parents.iter().map(String::as_str).collect())
        {
            return Err(OntologyError::Cycle { source_name: source_name(), class: cycle[0].clone(), cycle });
        }
        for class in classes.values() {
            for parent in &class.parents {
                let parent_layer = classes[parent].layer;
                if parent_layer > class.layer {
                    return Err(OntologyError::LayerInversion {
                        source_name: source_name(),
                        class: class.curie.clone(),
                        layer: class.layer,
                        parent: parent.clone(),
                        parent_layer,
                    });
                }
            }
        }
        let Some(root) = classes.get(ROOT_CLASS) else {
            return Err(OntologyError::Root {
                source_name: source_name(),
                message: format!("the root class `{ROOT_CLASS}` is not declared"),
            });
        };
        if !root.parents.is_empty() {
            return Err(OntologyError::Root {
                source_name: source_name(),
                message: format!(
                    "the root class `{ROOT_CLASS}` must have no parent, found {}",
                    root.parents.join(", ")
                ),
            });
        }
        // Rootedness, memoized over the acyclic hierarchy.
        let mut rooted: HashMap<&str, bool> = HashMap::from([(ROOT_CLASS, true)]);
        fn is_rooted<'c>(
            curie: &'c str,
            classes: &'c BTreeMap<String, ClassInfo>,
            memo: &mut HashMap<&'c str, bool>,
        ) -> bool {
            if let Some(&known) = memo.get(curie) {
                return known;
            }
            let result = classes[curie].parents.iter().any(|p| is_rooted(p, classes, memo));
            memo.insert(curie, result);
            result
        }
        for class in classes.values() {
            if class.layer > 0 && !is_rooted(&class.curie, classes, &mut rooted) {
                return Err(OntologyError::Unrooted { source_name: source_name(), class: class.curie.clone() });
            }
        }
        Ok(())
    }

    fn properties(&self) -> Result<BTreeMap<String, PropertyInfo>, OntologyError> {
        let kinds = [
            (OWL_OBJECT_PROPERTY, PropertyKind::Object),
            (OWL_DATATYPE_PROPERTY, PropertyKind::Datatype),
            (OWL_ANNOTATION_PROPERTY, PropertyKind::Annotation),
        ];
        let mut properties = BTreeMap::new();
        for (type_iri, kind) in kinds {
            for subject in self.graph.typed(&[type_iri]) {
                let NamedOrBlankNode::NamedNode(node) = subject else { continue };
                let curie = self.curie_of(node.as_str())?;
                let first = |predicate| self.graph.named_objects(subject, predicate).next().map(display_iri);
                let mut parents: Vec<String> =
                    self.graph.named_objects(subject, RDFS_SUB_PROPERTY_OF).map(display_iri).collect();
                parents.sort();
                let local = curie.split_once(':').map_or(curie.as_str(), |(_, local)| local).to_string();
                let info = PropertyInfo {
                    iri: node.as_str().to_string(),
                    curie: curie.clone(),
                    kind,
                    label: self.graph.text(subject, RDFS_LABEL).unwrap_or(local),
                    comment: self.graph.text(subject, RDFS_COMMENT).unwrap_or_default(),
                    domain: first(RDFS_DOMAIN),
                    range: first(RDFS_RANGE),
                    parents,
                };
                properties.entry(curie).or_insert(info);
            }
        }
        Ok(properties)
    }

    fn detail_level_maps(&self) -> Result<DetailLevelMaps, OntologyError> {
        let source_name = || self.source_name.clone();
        let nodes = self.graph.typed(&[UKO_DETAIL_LEVEL_MAP]);
        // Domain of every map node, and the node of every domain.
        let mut domains: HashMap<NamedOrBlankNode, String> = HashMap::new();
        let mut by_domain: BTreeMap<String, &NamedOrBlankNode> = BTreeMap::new();
        for &node in &nodes {
            let map = display_node(node);
            let domain = match self.graph.literals(node, UKO_DOMAIN).as_slice() {
                [domain] => domain.to_string(),
                [] => {
                    return Err(OntologyError::MapDomain {
                        source_name: source_name(),
                        map,
                        message: "has no uko:domain".into(),
                    });
                }
                several => {
                    return Err(OntologyError::MapDomain {
                        source_name: source_name(),
                        map,
                        message: format!("has several uko:domain values: {}", several.join(", ")),
                    });
                }
            };
            if let Err(e) = DetailLevelMap::new(domain.clone(), None) {
                return Err(OntologyError::MapDomain { source_name: source_name(), map, message: e.message });
            }
            if let Some(other) = by_domain.insert(domain.clone(), node) {
                return Err(OntologyError::MapDomain {
                    source_name: source_name(),
                    map,
                    message: format!("domain `{domain}` is already served by `{}`", display_node(other)),
                });
            }
            domains.insert(node.clone(), domain);
        }
        // Parent of every map, as a domain.
        let mut parents: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        for &node in &nodes {
            let map = display_node(node);
            let domain = domains[node].as_str();
            let targets: Vec<&Term> = self.graph.objects(node, UKO_EXTENDS_MAP).collect();
            let parent = match targets.as_slice() {
                [] if domain == UNIVERSAL_DOMAIN => None,
                [] => {
                    return Err(OntologyError::MapParent {
                        source_name: source_name(),
                        map,
                        message: format!(
                            "has no uko:extendsMap; only the universal map (domain `{UNIVERSAL_DOMAIN}`) is a root"
                        ),
                    });
                }
                [target] => {
                    let parent_node = match target {
                        Term::NamedNode(n) => Some(NamedOrBlankNode::NamedNode(n.clone())),
                        Term::BlankNode(b) => Some(NamedOrBlankNode::BlankNode(b.clone())),
                        _ => None,
                    };
                    let Some(parent_domain) = parent_node.as_ref().and_then(|p| domains.get(p)) else {
                        return Err(OntologyError::MapParent {
                            source_name: source_name(),
                            map,
                            message: format!(
                                "extends `{}`, which is not a declared uko:DetailLevelMap",
                                display_term(target)
                            ),
                        });
                    };
                    Some(parent_domain.as_str())
                }
                several => {
                    let names: Vec<String> = several.iter().map(|t| display_term(t)).collect();
                    return Err(OntologyError::MapParent {
                        source_name: source_name(),
                        map,
                        message: format!("extends several maps: {}", names.join(", ")),
                    });
                }
            };
            parents.insert(domain, parent);
        }
        if let Some(cycle) = find_cycle(parents.keys().copied(), |d| parents[d].into_iter().collect()) {
            let map = display_node(by_domain[&cycle[0]]);
            let cycle = cycle.iter().map(|d| display_node(by_domain[d])).collect();
            return Err(OntologyError::MapCycle { source_name: source_name(), map, cycle });
        }
        // Insert parents before children: by distance from the root, then domain.
        let distance = |start: &str| {
            let (mut domain, mut n) = (start, 0);
            while let Some(Some(parent)) = parents.get(domain) {
                domain = parent;
                n += 1;
            }
            n
        };
        let mut order: Vec<&str> = parents.keys().copied().collect();
        order.sort_by_key(|d| (distance(d), *d));
        let mut maps = DetailLevelMaps::default();
        for domain in order {
            let map = self.level_map(by_domain[domain], domain, parents[domain])?;
            maps = maps.insert(map).map_err(|e| OntologyError::MapParent {
                source_name: source_name(),
                map: display_node(by_domain[domain]),
                message: e.message,
            })?;
        }
        Ok(maps)
    }

    /// The map of one node with its own levels.
    fn level_map(
        &self,
        node: &NamedOrBlankNode,
        domain: &str,
        parent: Option<&str>,
    ) -> Result<DetailLevelMap, OntologyError> {
        let map_name = display_node(node);
        let invalid = |message: String| OntologyError::InvalidLevel {
            source_name: self.source_name.clone(),
            map: map_name.clone(),
            message,
        };
        let mut map = DetailLevelMap::new(domain, parent.map(str::to_string)).map_err(|e| invalid(e.message))?;
        let mut levels: Vec<(String, &str)> = Vec::new();
        for level in self.graph.objects(node, UKO_LEVEL) {
            let level_node = match level {
                Term::NamedNode(n) => NamedOrBlankNode::NamedNode(n.clone()),
                Term::BlankNode(b) => NamedOrBlankNode::BlankNode(b.clone()),
                other => return Err(invalid(format!("uko:level `{}` is not a node", display_term(other)))),
            };
            let name = match self.graph.literals(&level_node, UKO_LEVEL_NAME).as_slice() {
                [name] => name.to_string(),
                _ => {
                    return Err(invalid(format!(
                        "level `{}` needs exactly one uko:levelName",
                        display_node(&level_node)
                    )));
                }
            };
            let depth = match self.graph.literals(&level_node, UKO_DEPTH).as_slice() {
                [depth] => *depth,
                _ => return Err(invalid(format!("level `{name}` needs exactly one uko:depth"))),
            };
            levels.push((name, depth));
        }
        levels.sort();
        for (name, depth_text) in levels {
            let depth = depth_text.trim().parse::<i64>().ok().and_then(|d| u8::try_from(d).ok()).filter(|d| *d <= 9);
            let Some(depth) = depth else {
                return Err(OntologyError::LevelDepth {
                    source_name: self.source_name.clone(),
                    map: map_name.clone(),
                    level: name,
                    depth: depth_text.to_string(),
                });
            };
            if let Some(existing) = map.get(&name)
                && existing != depth
            {
                return Err(invalid(format!("level `{name}` is defined twice, with depths {existing} and {depth}")));
            }
            map = map.with_level(&name, depth).map_err(|e| invalid(e.message))?;
        }
        Ok(map)
    }
}

/// A cycle in the graph `nodes` -> `edges(node)`, as the list of nodes from
/// the smallest one of the cycle back to itself; nodes are visited in order.
fn find_cycle<'a>(
    nodes: impl Iterator<Item = &'a str>,
    edges: impl Fn(&'a str) -> Vec<&'a str>,
) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        OnStack,
        Done,
    }
    let mut state: HashMap<&str, State> = HashMap::new();
    for start in nodes {
        if state.contains_key(start) {
            continue;
        }
        // Iterative DFS: the path and, per node on it, its remaining edges.
        let mut path: Vec<&str> = vec![start];
        let mut pending: Vec<std::vec::IntoIter<&str>> = vec![edges(start).into_iter()];
        state.insert(start, State::OnStack);
        while let Some(next_edges) = pending.last_mut() {
            match next_edges.next() {
                Some(next) => match state.get(next) {
                    Some(State::OnStack) => {
                        let from = path.iter().position(|n| *n == next).expect("a node on the stack is on the path");
                        let mut cycle: Vec<&str> = path[from..].to_vec();
                        let min = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
                        cycle.rotate_left(min);
                        cycle.push(cycle[0]);
                        return Some(cycle.into_iter().map(str::to_string).collect());
                    }
                    Some(State::Done) => {}
                    None => {
                        state.insert(next, State::OnStack);
                        path.push(next);
                        pending.push(edges(next).into_iter());
                    }
                },
                None => {
                    pending.pop();
                    if let Some(done) = path.pop() {
                        state.insert(done, State::Done);
                    }
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{NodeKind, RefKind};

    const PREFIXES: &str = "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n\
                            @prefix owl: <http://www.w3.org/2002/07/owl#> .\n\
                            @prefix uko: <https://cleveragents.ai/ontology/uko#> .\n\
                            @prefix uko-code: <https://cleveragents.ai/ontology/uko/code#> .\n\
                            @prefix uko-oo: <https://cleveragents.ai/ontology/uko/oo#> .\n\
                            @prefix uko-py: <https://cleveragents.ai/ontology/uko/py#> .\n";

    /// A small valid ontology: the root and two layer-0 types.
    const BASE: &str = "uko:InformationUnit a owl:Class .\n\
                        uko:Container a owl:Class ; rdfs:subClassOf uko:InformationUnit .\n\
                        uko:Atom a owl:Class ; rdfs:subClassOf uko:InformationUnit .\n";

    fn load(body: &str) -> Result<Ontology, OntologyError> {
        Ontology::load(&format!("{PREFIXES}{BASE}{body}"), "test.ttl")
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn uko_loader_parses_the_builtin_ontology() {
        let ontology = Ontology::builtin();
        assert_eq!(ontology.source_name(), "docs/ontology/uko.ttl");
        assert_eq!(ontology.version(), Some("1.0.0"));
        for curie in ["uko:InformationUnit", "uko:Container", "uko:Atom", "uko:Annotation", "uko:Boundary"] {
            let class = ontology.class(curie).unwrap_or_else(|| panic!("{curie} is declared"));
            assert_eq!(class.layer, 0);
        }
        for class in ontology.classes() {
            for predicate in [RDFS_LABEL, RDFS_COMMENT] {
                let stated = ontology.triples.iter().any(|t| {
                    matches!(&t.subject, NamedOrBlankNode::NamedNode(n) if n.as_str() == class.iri)
                        && t.predicate.as_str() == predicate
                        && matches!(&t.object, Term::Literal(l) if !l.value().is_empty())
                });
                assert!(stated, "{} has {}", class.curie, display_iri(predicate));
            }
            assert_eq!(expand(&class.curie).as_deref(), Some(class.iri.as_str()));
        }
        let curies: Vec<&str> = ontology.classes().map(|c| c.curie.as_str()).collect();
        let mut sorted = curies.clone();
        sorted.sort();
        assert_eq!(curies, sorted, "classes() is sorted by CURIE");
        // Lookup by IRI as well as CURIE.
        let class = ontology.class("https://cleveragents.ai/ontology/uko/oo#Class").unwrap();
        assert_eq!(class.curie, "uko-oo:Class");
        assert!(ontology.class("uko-oo:Nope").is_none());
    }

    #[test]
    fn resolve_inheritance_returns_the_bfs_chain_for_uko_oo_class() {
        let ontology = Ontology::builtin();
        assert_eq!(
            ontology.resolve_inheritance("uko-oo:Class"),
            strings(&["uko-oo:Class", "uko-code:Type", "uko:Container", "uko:InformationUnit"])
        );
        assert_eq!(
            ontology.resolve_inheritance("uko-py:Dataclass"),
            strings(&["uko-py:Dataclass", "uko-oo:Class", "uko-code:Type", "uko:Container", "uko:InformationUnit"])
        );
        assert_eq!(ontology.resolve_inheritance("uko:InformationUnit"), strings(&["uko:InformationUnit"]));
        assert!(ontology.resolve_inheritance("uko-oo:Nope").is_empty());
    }

    #[test]
    fn uko_loader_resolves_multi_parent_inheritance() {
        let ontology = Ontology::builtin();
        let method = ontology.class("uko-oo:Method").unwrap();
        assert_eq!(method.parents, strings(&["uko-oo:Member", "uko-code:Callable"]));
        let chain = ontology.resolve_inheritance("uko-oo:Method");
        assert_eq!(
            chain,
            strings(&["uko-oo:Method", "uko-oo:Member", "uko-code:Callable", "uko:Atom", "uko:InformationUnit"])
        );
        assert_eq!(chain.iter().filter(|c| *c == ROOT_CLASS).count(), 1);
        assert_eq!(chain.last().map(String::as_str), Some(ROOT_CLASS));

        // Three parents one level up: BFS, and the root still comes last.
        let chain = ontology.resolve_inheritance("uko-rs:Trait");
        assert_eq!(
            chain,
            strings(&[
                "uko-rs:Trait",
                "uko-oo:Interface",
                "uko-code:Type",
                "uko:Boundary",
                "uko:Container",
                "uko:InformationUnit"
            ])
        );
        for class in ontology.classes() {
            let chain = ontology.resolve_inheritance(&class.curie);
            let unique: BTreeSet<&String> = chain.iter().collect();
            assert_eq!(unique.len(), chain.len(), "{}: each ancestor once", class.curie);
            for (i, curie) in chain.iter().enumerate() {
                for parent in &ontology.classes[curie].parents {
                    let j = chain.iter().position(|c| c == parent).expect("parents are in the chain");
                    assert!(j > i, "{}: {parent} comes after its subclass {curie}", class.curie);
                }
            }
        }

        assert!(ontology.is_subclass_of("uko-oo:Method", "uko-code:Callable"));
        assert!(ontology.is_subclass_of("uko-oo:Method", "uko-oo:Member"));
        assert!(ontology.is_subclass_of("uko-oo:Attribute", "uko:Atom"));
        assert!(ontology.is_subclass_of("uko-code:Test", "uko-code:Callable"));
        assert!(ontology.is_subclass_of("uko-oo:Class", "uko-oo:Class"));
        assert!(!ontology.is_subclass_of("uko-oo:Class", "uko:Atom"));
        assert!(!ontology.is_subclass_of("uko-oo:Nope", ROOT_CLASS));
        let children: Vec<&str> = ontology.children("uko-oo:Method").iter().map(|c| c.curie.as_str()).collect();
        assert_eq!(
            children,
            [
                "uko-oo:Constructor",
                "uko-cpp:Destructor",
                "uko-cpp:OutOfLineDefinition",
                "uko-go:ReceiverMethod",
                "uko-lua:TableFunction",
                "uko-lua:TableMethod",
                "uko-rb:SingletonMethod",
                "uko-swift:ExtensionMethod"
            ],
            "layer 2, then the language layer"
        );
        let children: Vec<&str> = ontology.children("uko-code:Callable").iter().map(|c| c.curie.as_str()).collect();
        assert_eq!(
            children,
            ["uko-code:Function", "uko-code:Macro", "uko-code:Test", "uko-func:Closure", "uko-oo:Method"]
        );
    }

    #[test]
    fn all_four_layers_are_identified_by_prefix() {
        let ontology = Ontology::builtin();
        let cases = [
            ("uko:InformationUnit", 0),
            ("uko-code:Module", 1),
            ("uko-doc:Document", 1),
            ("uko-data:Dataset", 1),
            ("uko-infra:BuildFile", 1),
            ("uko-oo:Class", 2),
            ("uko-func:Closure", 2),
            ("uko-proc:Procedure", 2),
            ("uko-py:Decorator", 3),
            ("uko-ts:InterfaceDeclaration", 3),
            ("uko-rs:Trait", 3),
            ("uko-java:Record", 3),
        ];
        for (curie, layer) in cases {
            assert_eq!(ontology.layer_of(curie), Some(layer), "{curie}");
            assert_eq!(ontology.class(curie).map(|c| c.layer), Some(layer), "{curie}");
            let iri = expand(curie).unwrap();
            assert_eq!(layer_of(&iri), Some(layer), "{iri}");
            assert_eq!(compact(&iri).as_deref(), Some(curie));
        }
        for curie in ["uko-go:ReceiverMethod", "uko-kt:DataClass", "uko-ex:Impl", "uko-zig:TestBlock"] {
            assert_eq!(layer_of(curie), Some(3), "{curie}");
        }
        assert_eq!(layer_of("uko-nim:Thing"), None);
        assert_eq!(layer_of("http://example.com/x#Y"), None);
        // Every layer is populated.
        let layers: BTreeSet<u8> = ontology.classes().map(|c| c.layer).collect();
        assert_eq!(layers, BTreeSet::from([0, 1, 2, 3]));
        for ns in NAMESPACES {
            assert!(ontology.classes().any(|c| c.curie.starts_with(&format!("{}:", ns.prefix))), "{}", ns.prefix);
        }
    }

    #[test]
    fn every_node_kind_class_exists_and_descends_from_information_unit() {
        let ontology = Ontology::builtin();
        for kind in NodeKind::ALL {
            let curie = kind.curie();
            assert!(ontology.class(curie).is_some(), "{curie} ({}) is defined", kind.as_str());
            assert!(ontology.is_subclass_of(curie, ROOT_CLASS), "{curie} descends from {ROOT_CLASS}");
        }
        assert!(ontology.is_subclass_of(NodeKind::Import.curie(), "uko:Boundary"));
        assert!(ontology.is_subclass_of(NodeKind::Trait.curie(), "uko-oo:Interface"));
    }

    #[test]
    fn ref_kind_properties_are_object_properties() {
        let ontology = Ontology::builtin();
        for kind in [RefKind::Import, RefKind::Inherits, RefKind::Calls, RefKind::Mentions] {
            let property = ontology.property(kind.property()).unwrap();
            assert_eq!(property.kind, PropertyKind::Object);
        }
        for curie in ["uko:sourceResource", "uko:sourcePath", "uko:sourceRange", "uko:validFrom", "uko:isCurrent"] {
            assert_eq!(ontology.property(curie).map(|p| p.kind), Some(PropertyKind::Datatype), "{curie}");
        }
        let revision = ontology.property("uko:isRevisionOf").unwrap();
        assert_eq!(revision.kind, PropertyKind::Object);
        assert_eq!(revision.range.as_deref(), Some(ROOT_CLASS));
        assert_eq!(ontology.property("uko:validUntil").unwrap().range.as_deref(), Some("xsd:dateTime"));
        assert_eq!(ontology.property("uko:calls").unwrap().parents, strings(&["uko:dependsOn"]));
    }

    #[test]
    fn detail_level_maps_inherit_the_universal_levels() {
        let ontology = Ontology::builtin();
        let maps = ontology.detail_level_maps();
        assert_eq!(maps.get("uko"), Some(&DetailLevelMap::universal()));
        let python = maps.effective_levels("uko-py").unwrap();
        assert_eq!(python.get("MODULE_LISTING"), Some(&0));
        assert_eq!(python.get("SIGNATURES"), Some(&4));
        assert_eq!(python.get("FULL_SOURCE"), Some(&9));
        assert_eq!(python.get("DOCSTRINGS"), Some(&3));
        assert_eq!(python.get("DECORATORS"), Some(&5));
        assert_eq!(python.get("MEMBER_LISTING"), Some(&1), "through uko-oo");
        assert_eq!(maps.get("uko-py").unwrap().parent(), Some("uko-oo"));
        assert!(!maps.get("uko-py").unwrap().levels().contains_key("SIGNATURES"), "inherited, not copied");
        assert_eq!(maps.resolve("uko-rs", "trait-bounds"), Ok(5));
        assert_eq!(maps.resolve("uko-java", "signatures"), Ok(4));
        assert_eq!(maps.resolve("uko-ts", "JSDOC"), Ok(3));
        assert!(maps.resolve("uko-rs", "JAVADOC").is_err());
        let domains: Vec<&str> = maps.maps().keys().map(String::as_str).collect();
        assert_eq!(
            domains,
            [
                "uko",
                "uko-c",
                "uko-code",
                "uko-cpp",
                "uko-cs",
                "uko-data",
                "uko-doc",
                "uko-ex",
                "uko-go",
                "uko-hs",
                "uko-java",
                "uko-kt",
                "uko-lua",
                "uko-oo",
                "uko-php",
                "uko-py",
                "uko-rb",
                "uko-rs",
                "uko-scala",
                "uko-sh",
                "uko-swift",
                "uko-ts",
                "uko-zig"
            ]
        );
        for domain in domains {
            let levels = maps.effective_levels(domain).unwrap();
            for name in ["MODULE_LISTING", "SIGNATURES", "FULL_SOURCE"] {
                assert!(levels.contains_key(name), "{domain} inherits {name}");
            }
        }
    }

    #[test]
    fn detail_level_map_for_picks_the_nearest_domain() {
        let ontology = Ontology::builtin();
        let domain = |curie| ontology.detail_level_map_for(curie).map(|m| m.domain().to_string());
        assert_eq!(domain("uko-py:Decorator").as_deref(), Some("uko-py"));
        assert_eq!(domain("uko-rs:Trait").as_deref(), Some("uko-rs"));
        assert_eq!(domain("uko-oo:Method").as_deref(), Some("uko-oo"));
        assert_eq!(domain("uko-func:Closure").as_deref(), Some("uko-code"), "via uko-code:Callable");
        assert_eq!(domain("uko-infra:BuildFile").as_deref(), Some("uko"), "via uko:Container");
        assert_eq!(domain("uko-doc:Section").as_deref(), Some("uko-doc"));
        assert_eq!(domain("uko-oo:Nope"), None);

        assert_eq!(ontology.domain_for_language("python"), "uko-py");
        assert_eq!(ontology.domain_for_language("tsx"), "uko-ts");
        assert_eq!(ontology.domain_for_language("rust"), "uko-rs");
        assert_eq!(ontology.domain_for_language("java"), "uko-java");
        let languages = [
            ("go", "uko-go", "uko-code"),
            ("c", "uko-c", "uko-code"),
            ("cpp", "uko-cpp", "uko-oo"),
            ("ruby", "uko-rb", "uko-oo"),
            ("shell", "uko-sh", "uko-code"),
            ("lua", "uko-lua", "uko-code"),
            ("csharp", "uko-cs", "uko-oo"),
            ("php", "uko-php", "uko-oo"),
            ("kotlin", "uko-kt", "uko-oo"),
            ("scala", "uko-scala", "uko-oo"),
            ("swift", "uko-swift", "uko-oo"),
            ("zig", "uko-zig", "uko-code"),
            ("haskell", "uko-hs", "uko-code"),
            ("elixir", "uko-ex", "uko-code"),
        ];
        let maps = ontology.detail_level_maps();
        for (language, domain, parent) in languages {
            assert_eq!(ontology.domain_for_language(language), domain, "{language}");
            let map = maps.get(domain).unwrap();
            assert_eq!(map.parent(), Some(parent), "{domain}");
            assert!(!map.levels().is_empty(), "{domain} inserts levels");
            assert_eq!(maps.resolve(domain, "SIGNATURES"), Ok(4), "{domain} inherits the universal levels");
            assert_eq!(maps.resolve(domain, "SUMMARIES"), Ok(3), "{domain} inherits uko-code");
            assert!(ontology.classes().any(|c| c.curie.starts_with(&format!("{domain}:"))), "{domain} has classes");
        }
        assert_eq!(maps.resolve("uko-kt", "KDOC"), Ok(3));
        assert_eq!(maps.resolve("uko-cs", "ATTRIBUTES"), Ok(5));
        assert_eq!(maps.resolve("uko-hs", "TYPE_SIGNATURES"), Ok(4));
        assert_eq!(maps.resolve("uko-go", "METHOD_SETS"), Ok(1));
        assert_eq!(maps.resolve("uko-rb", "MEMBER_LISTING"), Ok(1), "through uko-oo");
        assert!(maps.resolve("uko-go", "MEMBER_LISTING").is_err(), "Go's map extends uko-code, not uko-oo");
        // A level name means one depth in every map that has it.
        let mut depths: BTreeMap<String, BTreeSet<u8>> = BTreeMap::new();
        for domain in maps.maps().keys() {
            for (name, depth) in maps.effective_levels(domain).unwrap() {
                depths.entry(name).or_default().insert(depth);
            }
        }
        for (name, set) in depths {
            assert_eq!(set.len(), 1, "{name} has one depth in every map: {set:?}");
        }
        assert_eq!(ontology.domain_for_language("markdown"), "uko-doc");
        assert_eq!(ontology.domain_for_language("yaml"), "uko");
        assert_eq!(maps.resolve(ontology.domain_for_language("python"), "DOCSTRINGS"), Ok(3));
        // A domain the ontology has no map for falls back to the universal one.
        let bare = load("").unwrap();
        assert_eq!(bare.domain_for_language("python"), "uko");
        assert_eq!(bare.detail_level_maps(), &DetailLevelMaps::default());
        assert_eq!(Ontology::builtin_ttl(), Ontology::BUILTIN_TURTLE);
    }

    #[test]
    fn malformed_turtle_is_a_syntax_error_with_its_location() {
        // Line 3 holds two statements without the `.` between them.
        let ttl = "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n\
                   @prefix uko: <https://cleveragents.ai/ontology/uko#> .\n\
                   uko:InformationUnit a owl:Class uko:Atom a owl:Class .\n";
        let err = Ontology::load(ttl, "broken.ttl").unwrap_err();
        let OntologyError::Syntax { source_name, line, column, message } = &err else {
            panic!("expected a syntax error, got {err:?}");
        };
        assert_eq!((source_name.as_str(), *line, *column), ("broken.ttl", 3, 33));
        assert!(!message.is_empty() && !message.starts_with("Parser error"), "{message}");
        assert!(err.to_string().starts_with("broken.ttl:3:33: Turtle syntax error: "), "{err}");

        // A `.` missing at the end of line 3: the parser notices at the next statement.
        let ttl = "@prefix owl: <http://www.w3.org/2002/07/owl#> .\n\
                   @prefix uko: <https://cleveragents.ai/ontology/uko#> .\n\
                   uko:InformationUnit a owl:Class\n\
                   uko:Atom a owl:Class .\n";
        let err = Ontology::load(ttl, "broken.ttl").unwrap_err();
        assert!(matches!(err, OntologyError::Syntax { line: 4, column: 1, .. }), "{err:?}");

        let err = Ontology::load("@prefix uko: <https://cleveragents.ai/ontology/uko#> .\nuko:A uko:b \"open", "x")
            .unwrap_err();
        assert!(matches!(err, OntologyError::Syntax { line: 2, .. }), "{err:?}");
    }

    #[test]
    fn a_subclass_cycle_is_an_error_naming_a_class() {
        let err = load(
            "uko-code:B a owl:Class ; rdfs:subClassOf uko-code:A .\n\
             uko-code:A a owl:Class ; rdfs:subClassOf uko-code:C , uko:Atom .\n\
             uko-code:C a owl:Class ; rdfs:subClassOf uko-code:B .\n",
        )
        .unwrap_err();
        assert_eq!(
            err,
            OntologyError::Cycle {
                source_name: "test.ttl".into(),
                class: "uko-code:A".into(),
                cycle: strings(&["uko-code:A", "uko-code:C", "uko-code:B", "uko-code:A"]),
            }
        );
        assert!(err.to_string().contains("uko-code:A -> uko-code:C -> uko-code:B -> uko-code:A"), "{err}");
        let err = load("uko-code:S a owl:Class ; rdfs:subClassOf uko-code:S .\n").unwrap_err();
        assert!(matches!(&err, OntologyError::Cycle { class, .. } if class == "uko-code:S"), "{err:?}");
    }

    #[test]
    fn structural_errors_name_the_class() {
        let err = load("uko-oo:X a owl:Class ; rdfs:subClassOf uko-oo:Missing .\n").unwrap_err();
        assert!(
            matches!(&err, OntologyError::UndeclaredParent { class, parent, .. }
                if class == "uko-oo:X" && parent == "uko-oo:Missing"),
            "{err:?}"
        );
        let err = load("uko-code:Y rdfs:subClassOf uko:Atom .\n").unwrap_err();
        assert!(matches!(&err, OntologyError::UndeclaredClass { class, .. } if class == "uko-code:Y"), "{err:?}");
        let err = load("<http://example.com/Z> a owl:Class .\n").unwrap_err();
        assert!(matches!(&err, OntologyError::Foreign { iri, .. } if iri == "<http://example.com/Z>"), "{err:?}");
        let err = load(
            "uko-oo:P a owl:Class ; rdfs:subClassOf uko:Atom .\n\
             uko-code:Q a owl:Class ; rdfs:subClassOf uko-oo:P .\n",
        )
        .unwrap_err();
        assert!(
            matches!(&err, OntologyError::LayerInversion { class, parent, layer: 1, parent_layer: 2, .. }
                if class == "uko-code:Q" && parent == "uko-oo:P"),
            "{err:?}"
        );
        let err =
            load("uko:Meta a owl:Class .\nuko-code:Orphan a owl:Class ; rdfs:subClassOf uko:Meta .\n").unwrap_err();
        assert!(matches!(&err, OntologyError::Unrooted { class, .. } if class == "uko-code:Orphan"), "{err:?}");
        let err = Ontology::load(&format!("{PREFIXES}uko:Atom a owl:Class .\n"), "t").unwrap_err();
        assert!(matches!(err, OntologyError::Root { .. }), "{err:?}");
        // owl:Thing as a parent is ignored; extra layer-0 roots are fine.
        let ontology = load("uko:Meta a owl:Class ; rdfs:subClassOf owl:Thing .\n").unwrap();
        assert!(ontology.class("uko:Meta").unwrap().parents.is_empty());
    }

    #[test]
    fn detail_level_map_errors_name_the_map() {
        let universal = "uko:U a uko:DetailLevelMap ; uko:domain \"uko\" ; \
                         uko:level [ uko:levelName \"SIGNATURES\" ; uko:depth 4 ] .\n";
        let ok = load(&format!(
            "{universal}uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" ; uko:extendsMap uko:U ; \
             uko:level [ uko:levelName \"docstrings\" ; uko:depth 3 ] .\n"
        ))
        .unwrap();
        assert_eq!(ok.detail_level_maps().resolve("uko-py", "DOCSTRINGS"), Ok(3));
        assert_eq!(ok.detail_level_maps().resolve("uko-py", "SIGNATURES"), Ok(4));

        let err = load(&format!(
            "{universal}uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" ; uko:extendsMap uko-code:Gone .\n"
        ))
        .unwrap_err();
        assert!(
            matches!(&err, OntologyError::MapParent { map, message, .. }
                if map == "uko-py:Levels" && message.contains("uko-code:Gone")),
            "{err:?}"
        );
        let err = load("uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" .\n").unwrap_err();
        assert!(matches!(&err, OntologyError::MapParent { map, .. } if map == "uko-py:Levels"), "{err:?}");

        let err = load(&format!(
            "{universal}uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" ; uko:extendsMap uko:U ; \
             uko:level [ uko:levelName \"DEEP\" ; uko:depth 12 ] .\n"
        ))
        .unwrap_err();
        assert_eq!(
            err,
            OntologyError::LevelDepth {
                source_name: "test.ttl".into(),
                map: "uko-py:Levels".into(),
                level: "DEEP".into(),
                depth: "12".into(),
            }
        );
        let err = load(&format!(
            "{universal}uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" ; uko:extendsMap uko:U ; \
             uko:level [ uko:levelName \"NEG\" ; uko:depth -1 ] .\n"
        ))
        .unwrap_err();
        assert!(matches!(&err, OntologyError::LevelDepth { depth, .. } if depth == "-1"), "{err:?}");

        let err = load(
            "uko-py:A a uko:DetailLevelMap ; uko:domain \"a\" ; uko:extendsMap uko-py:B .\n\
             uko-py:B a uko:DetailLevelMap ; uko:domain \"b\" ; uko:extendsMap uko-py:A .\n",
        )
        .unwrap_err();
        assert!(matches!(&err, OntologyError::MapCycle { map, .. } if map == "uko-py:A"), "{err:?}");

        let err = load(&format!("{universal}uko:V a uko:DetailLevelMap ; uko:domain \"uko\" .\n")).unwrap_err();
        assert!(matches!(&err, OntologyError::MapDomain { .. }), "{err:?}");
        let err = load(&format!(
            "{universal}uko-py:Levels a uko:DetailLevelMap ; uko:domain \"uko-py\" ; uko:extendsMap uko:U ; \
             uko:level [ uko:levelName \"X\" ; uko:depth 1 ] , [ uko:levelName \"x\" ; uko:depth 2 ] .\n"
        ))
        .unwrap_err();
        assert!(matches!(&err, OntologyError::InvalidLevel { map, .. } if map == "uko-py:Levels"), "{err:?}");
    }

    #[test]
    fn to_turtle_round_trips() {
        let ontology = Ontology::builtin();
        let again = Ontology::load(&ontology.to_turtle(), "round-trip.ttl").unwrap();
        assert!(ontology.classes().eq(again.classes()));
        assert!(ontology.properties().eq(again.properties()));
        assert_eq!(ontology.detail_level_maps(), again.detail_level_maps());
        assert_eq!(again.version(), Some("1.0.0"));
        let turtle = ontology.to_turtle();
        assert!(turtle.starts_with("@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .\n"), "{turtle}");
        assert_eq!(turtle, ontology.to_turtle());
        assert!(turtle.contains("uko-oo:Method a owl:Class ;"), "{turtle}");
    }

    #[test]
    fn render_class_tree_snapshot() {
        let tree = Ontology::builtin().render_class_tree();
        assert!(tree.starts_with("uko:InformationUnit — Information unit\n"));
        insta::assert_snapshot!("class_tree", tree);
    }
}
