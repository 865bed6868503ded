//! Knowledge nodes: a Markdown file with YAML frontmatter, validated for its
//! layer (spec 4.1, 4.7).
//!
//! Fields are checked one by one on the parsed mapping rather than through a
//! `deny_unknown_fields` struct: unknown optional fields are allowed (adding
//! one is not a breaking change, spec 8.2) and pass into the compiled graph as
//! attributes, and every problem of a file is reported, not only the first.
//!
//! Constraints by layer:
//! - global (4.1.2): no experiential fields (`activations`, `last_activated`,
//!   `activated_by_tasks`, `session_refs`, `auto_update`), no
//!   `source: generated`, no reserved domain;
//! - local (4.1.4): `source` is `agent` or `human`; an agent-written node is
//!   `tentative` when written (a human may promote or suppress it) and has a `content_draft` section (a Markdown heading named
//!   `content_draft`) in its body;
//! - code mirror (4.7): `domain: code-mirror`, `status: established` (or
//!   `draft`, which docstring drift sets, 5.6),
//!   `confidence: 1.0`, `source: generated`, `auto_update: true`,
//!   `source_file` set, no `tags`, no `edges`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use yaml_serde::Value as Yaml;

use crate::diag::{Diagnostic, ProblemKind};
use crate::yaml::{check_schema, key_lines, parse_mapping, scalar_text, split_frontmatter, to_json};

/// The source a node was read from; `node_origin` in the compiled graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    Global,
    Local,
    CodeMirror,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Global => "global",
            Layer::Local => "local",
            Layer::CodeMirror => "code-mirror",
        }
    }
}

/// The edge types of spec 4.1.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeType {
    Requires,
    FeedsInto,
    Refines,
    Contradicts,
    Pitfall,
    Implements,
}

impl EdgeType {
    pub const ALL: [EdgeType; 6] = [
        EdgeType::Requires,
        EdgeType::FeedsInto,
        EdgeType::Refines,
        EdgeType::Contradicts,
        EdgeType::Pitfall,
        EdgeType::Implements,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeType::Requires => "requires",
            EdgeType::FeedsInto => "feeds-into",
            EdgeType::Refines => "refines",
            EdgeType::Contradicts => "contradicts",
            EdgeType::Pitfall => "pitfall",
            EdgeType::Implements => "implements",
        }
    }

    fn parse(text: &str) -> Option<EdgeType> {
        EdgeType::ALL.into_iter().find(|t| t.as_str() == text)
    }
}

impl fmt::Display for EdgeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub const STATUSES: &[&str] = &["draft", "tentative", "established", "deprecated"];
pub const SOURCES: &[&str] = &["human", "agent", "hybrid", "generated"];
const CONTEXT_SIZES: &[&str] = &["small", "medium", "large"];
const READING_PRIORITIES: &[&str] = &["full", "summary", "pitfalls-only"];
/// Fields that hold per-repository state and never appear in a global node.
pub const EXPERIENTIAL_FIELDS: &[&str] =
    &["activations", "last_activated", "activated_by_tasks", "session_refs", "auto_update"];
/// Domains the system assigns; no authored node may use them.
pub const RESERVED_DOMAINS: &[&str] = &["session", CODE_MIRROR_DOMAIN];

/// The domain of every code-mirror node (4.7).
pub const CODE_MIRROR_DOMAIN: &str = "code-mirror";

/// A structural edge declared in a node's frontmatter.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    pub to: String,
    pub kind: EdgeType,
    pub weight: f64,
    pub note: Option<String>,
    /// Field path for messages, e.g. `edges[2]`.
    pub field: String,
    pub line: Option<usize>,
}

/// A validated node: the typed fields the compiler needs plus every
/// frontmatter field as a JSON attribute (`edges` excluded: they become links).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub layer: Layer,
    pub domain: String,
    pub confidence: f64,
    pub edges: Vec<Edge>,
    pub content_ref: Option<String>,
    /// `source_file` of a code-mirror node, relative to the repository.
    pub source_file: Option<String>,
    pub attributes: BTreeMap<String, Json>,
    /// Line of the `id` field.
    pub id_line: Option<usize>,
    /// Line of each top-level field, for messages about it.
    pub field_lines: BTreeMap<String, usize>,
}

/// Parses and validates one node file of `layer`. `file` is the path used in
/// messages. Returns the node when it has no errors, and every diagnostic.
pub fn parse_node(file: &Path, text: &str, layer: Layer) -> (Option<Node>, Vec<Diagnostic>) {
    let Some(front) = split_frontmatter(text) else {
        let d = Diagnostic::error(
            ProblemKind::Yaml,
            file,
            Some(1),
            None,
            "no yaml frontmatter: a node starts with a `---` line and its fields end with another".into(),
        );
        return (None, vec![d]);
    };
    let map = match parse_mapping(file, front.yaml, front.first_line) {
        Ok(map) => map,
        Err(d) => return (None, vec![d]),
    };
    let lines = key_lines(front.yaml, front.first_line);
    let mut check = Checker { file, lines: &lines, map: &map, problems: Vec::new() };
    if let Some(d) = check_schema(file, &map, &lines) {
        // A version mismatch halts: the other fields follow another schema.
        return (None, vec![d]);
    }

    let id = check.required_string("id");
    if let Some(id) = &id
        && !valid_id(id)
    {
        check.invalid("id", format!("`{id}` is not a lower-case identifier (a-z, 0-9, `-`, `_`, `.`)"));
    }
    check.required_string("title");
    let domain = check.required_string("domain");
    check.optional_string("subdomain");
    let status = check.required_enum("status", STATUSES);
    let confidence = check.required_unit("confidence");
    let source = check.required_enum("source", SOURCES);
    check.optional_unit("confidence_floor");
    check.optional_string_list("load_with");
    check.optional_enum("context_size", CONTEXT_SIZES);
    check.optional_enum("reading_priority", READING_PRIORITIES);
    let content_ref = check.optional_string("content_ref");
    let edges = check.edges();

    match layer {
        Layer::Global | Layer::Local => {
            check.tags();
            if let Some(domain) = &domain
                && RESERVED_DOMAINS.contains(&domain.as_str())
            {
                check.invalid("domain", format!("`{domain}` is reserved for nodes the system generates"));
            }
        }
        Layer::CodeMirror => {}
    }
    match layer {
        Layer::Global => {
            for field in EXPERIENTIAL_FIELDS {
                if map.contains_key(*field) {
                    check.invalid(
                        field,
                        "experiential state is not allowed in a global node (it lives in local_state.yaml)".into(),
                    );
                }
            }
            if source.as_deref() == Some("generated") {
                check.invalid("source", "`generated` is reserved for code-mirror nodes".into());
            }
        }
        Layer::Local => {
            if let Some(source) = &source
                && source != "agent"
                && source != "human"
            {
                check.invalid("source", format!("`{source}` is not allowed in local-nodes/ (agent or human)"));
            }
            // An agent writes its nodes `tentative` (the updater guarantees
            // it, FR-M04); a human may then promote one to `established` or
            // suppress it as `draft` (4.1.4, FR-R03, FR-R04), so every status
            // is valid here.
            if source.as_deref() == Some("agent") && !has_content_draft(front.body) {
                check.problems.push(Diagnostic::error(
                    ProblemKind::MissingField,
                    file,
                    None,
                    Some("content_draft"),
                    "an agent-written node needs a `content_draft` section (a `## content_draft` heading) marking its content as agent-authored".into(),
                ));
            }
        }
        Layer::CodeMirror => {
            check.exact("domain", domain.as_deref(), CODE_MIRROR_DOMAIN);
            // Established, or draft when the docstring drifted (5.6, FR-C03).
            if let Some(status) = status.as_deref()
                && status != "established"
                && status != "draft"
            {
                check.invalid(
                    "status",
                    format!("is `{status}`, a code-mirror node has `established` (or `draft` after docstring drift)"),
                );
            }
            check.exact("source", source.as_deref(), "generated");
            if confidence.is_some_and(|c| c != 1.0) {
                check.invalid("confidence", "a code-mirror node always has confidence 1.0".into());
            }
            match map.get("auto_update") {
                Some(Yaml::Bool(true)) => {}
                Some(other) => {
                    check.invalid("auto_update", format!("is {}, a code-mirror node has `true`", scalar_text(other)))
                }
                None => check.missing("auto_update"),
            }
            for field in ["tags", "edges"] {
                if map.contains_key(field) {
                    check.invalid(field, "a code-mirror node has no tags and no edges".into());
                }
            }
        }
    }
    let source_file = match layer {
        Layer::CodeMirror => check.required_string("source_file"),
        _ => None,
    };

    let problems = check.problems;
    if problems.iter().any(Diagnostic::is_error) {
        return (None, problems);
    }
    let (Some(id), Some(domain), Some(confidence)) = (id, domain, confidence) else {
        return (None, problems);
    };
    let mut attributes: BTreeMap<String, Json> = map
        .iter()
        .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), to_json(v))))
        .filter(|(k, _)| k != "edges")
        .collect();
    // Typed numbers: an integer `confidence: 1` is still the float 1.0.
    attributes.insert("confidence".into(), Json::from(confidence));
    if let Some(floor) = map.get("confidence_floor").and_then(Yaml::as_f64) {
        attributes.insert("confidence_floor".into(), Json::from(floor));
    }
    let node = Node {
        id,
        layer,
        domain,
        confidence,
        edges: edges.unwrap_or_default(),
        content_ref,
        source_file,
        attributes,
        id_line: lines.get("id").copied(),
        field_lines: lines.clone(),
    };
    (Some(node), problems)
}

/// Lower-case identifiers: `a-z`, digits, `-`, `_`, `.`, starting with a
/// letter or digit.
pub fn valid_id(id: &str) -> bool {
    id.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

/// Whether the body has a Markdown heading named `content_draft`.
fn has_content_draft(body: &str) -> bool {
    body.lines().any(|line| {
        let line = line.trim();
        line.starts_with('#') && line.trim_start_matches('#').trim().eq_ignore_ascii_case("content_draft")
    })
}

/// Field-by-field validation of one mapping, collecting problems.
pub(crate) struct Checker<'a> {
    pub file: &'a Path,
    pub lines: &'a BTreeMap<String, usize>,
    pub map: &'a yaml_serde::Mapping,
    pub problems: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn line(&self, field: &str) -> Option<usize> {
        let top = field.split(['[', '.']).next().unwrap_or(field);
        self.lines.get(top).copied()
    }

    pub fn invalid(&mut self, field: &str, message: String) {
        let line = self.line(field);
        self.problems.push(Diagnostic::error(ProblemKind::InvalidValue, self.file, line, Some(field), message));
    }

    pub fn missing(&mut self, field: &str) {
        let line = self.line(field);
        self.problems.push(Diagnostic::error(
            ProblemKind::MissingField,
            self.file,
            line,
            Some(field),
            "required field is missing".into(),
        ));
    }

    fn exact(&mut self, field: &str, value: Option<&str>, want: &str) {
        if let Some(value) = value
            && value != want
        {
            self.invalid(field, format!("is `{value}`, a code-mirror node has `{want}`"));
        }
    }

    pub fn required_string(&mut self, field: &str) -> Option<String> {
        match self.map.get(field) {
            None | Some(Yaml::Null) => {
                self.missing(field);
                None
            }
            Some(_) => self.optional_string(field),
        }
    }

    pub fn optional_string(&mut self, field: &str) -> Option<String> {
        match self.map.get(field) {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Yaml::String(_)) => {
                self.invalid(field, "must not be empty".into());
                None
            }
            Some(other) => {
                self.invalid(field, format!("expected a string, found {}", scalar_text(other)));
                None
            }
        }
    }

    fn required_enum(&mut self, field: &str, allowed: &[&str]) -> Option<String> {
        if self.map.get(field).is_none_or(Yaml::is_null) {
            self.missing(field);
            return None;
        }
        self.optional_enum(field, allowed)
    }

    fn optional_enum(&mut self, field: &str, allowed: &[&str]) -> Option<String> {
        let value = self.optional_string(field)?;
        if allowed.contains(&value.as_str()) {
            Some(value)
        } else {
            self.invalid(field, format!("`{value}` is not one of {}", allowed.join(", ")));
            None
        }
    }

    fn required_unit(&mut self, field: &str) -> Option<f64> {
        if self.map.get(field).is_none_or(Yaml::is_null) {
            self.missing(field);
            return None;
        }
        self.optional_unit(field)
    }

    fn optional_unit(&mut self, field: &str) -> Option<f64> {
        let value = self.map.get(field)?;
        if value.is_null() {
            return None;
        }
        let number = value.as_f64().filter(|_| value.is_number());
        match number {
            Some(x) if (0.0..=1.0).contains(&x) => Some(x),
            _ => {
                self.invalid(field, format!("expected a number from 0.0 to 1.0, found {}", scalar_text(value)));
                None
            }
        }
    }

    fn optional_string_list(&mut self, field: &str) -> Option<Vec<String>> {
        match self.map.get(field) {
            None | Some(Yaml::Null) => None,
            Some(Yaml::Sequence(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Yaml::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                        other => self.invalid(
                            &format!("{field}[{i}]"),
                            format!("expected a non-empty string, found {}", scalar_text(other)),
                        ),
                    }
                }
                Some(out)
            }
            Some(other) => {
                self.invalid(field, format!("expected a list of strings, found {}", scalar_text(other)));
                None
            }
        }
    }

    fn tags(&mut self) {
        match self.optional_string_list("tags") {
            None if !self.map.contains_key("tags") => self.missing("tags"),
            Some(tags) if tags.is_empty() => self.invalid("tags", "needs at least one tag".into()),
            _ => {}
        }
    }

    fn edges(&mut self) -> Option<Vec<Edge>> {
        let items = match self.map.get("edges") {
            None | Some(Yaml::Null) => return None,
            Some(Yaml::Sequence(items)) => items,
            Some(other) => {
                self.invalid("edges", format!("expected a list of edges, found {}", scalar_text(other)));
                return None;
            }
        };
        let line = self.line("edges");
        let mut edges = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("edges[{i}]");
            let Yaml::Mapping(edge) = item else {
                self.invalid(&at, format!("expected a mapping with to, type and weight, found {}", scalar_text(item)));
                continue;
            };
            if let Some(edge) = self.edge(edge, &at) {
                edges.push(Edge { line, ..edge });
            }
        }
        Some(edges)
    }

    /// One edge mapping (`to`, `type`, `weight`, `note`), shared with the
    /// overlay's `local_edges` (which adds `from`).
    pub fn edge(&mut self, edge: &yaml_serde::Mapping, at: &str) -> Option<Edge> {
        let mut ok = true;
        let to = match edge.get("to") {
            Some(Yaml::String(s)) if !s.is_empty() => Some(s.clone()),
            None | Some(Yaml::Null) => {
                self.missing(&format!("{at}.to"));
                None
            }
            Some(other) => {
                self.invalid(&format!("{at}.to"), format!("expected a node id, found {}", scalar_text(other)));
                None
            }
        };
        let kind = match edge.get("type") {
            None | Some(Yaml::Null) => {
                self.missing(&format!("{at}.type"));
                None
            }
            Some(Yaml::String(s)) => {
                let kind = EdgeType::parse(s);
                if kind.is_none() {
                    let all: Vec<&str> = EdgeType::ALL.iter().map(|t| t.as_str()).collect();
                    self.invalid(&format!("{at}.type"), format!("`{s}` is not one of {}", all.join(", ")));
                }
                kind
            }
            Some(other) => {
                self.invalid(&format!("{at}.type"), format!("expected an edge type, found {}", scalar_text(other)));
                None
            }
        };
        let weight = match edge.get("weight") {
            None | Some(Yaml::Null) => {
                self.missing(&format!("{at}.weight"));
                None
            }
            Some(value) => match value.as_f64().filter(|_| value.is_number()) {
                Some(w) if (0.0..=1.0).contains(&w) => Some(w),
                _ => {
                    self.invalid(
                        &format!("{at}.weight"),
                        format!("expected a number from 0.0 to 1.0, found {}", scalar_text(value)),
                    );
                    None
                }
            },
        };
        let note = match edge.get("note") {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(s)) => Some(s.clone()),
            Some(other) => {
                self.invalid(&format!("{at}.note"), format!("expected a string, found {}", scalar_text(other)));
                ok = false;
                None
            }
        };
        match (to, kind, weight) {
            (Some(to), Some(kind), Some(weight)) if ok => {
                Some(Edge { to, kind, weight, note, field: at.to_owned(), line: None })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const MINIMAL: &str = "---\nid: my-concept\ntitle: \"My Concept\"\ndomain: my-domain\ntags: [my-tag]\nstatus: tentative\nconfidence: 0.7\nsource: human\nakms_schema: v2\n---\nbody\n";

    fn problems(text: &str, layer: Layer) -> Vec<String> {
        parse_node(Path::new("n.md"), text, layer).1.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn ur_07_minimal_node_is_valid_in_both_layers() {
        for layer in [Layer::Global, Layer::Local] {
            let (node, problems) = parse_node(Path::new("n.md"), MINIMAL, layer);
            assert!(problems.is_empty(), "{problems:?}");
            let node = node.unwrap();
            assert_eq!(node.id, "my-concept");
            assert_eq!(node.attributes["tags"], serde_json::json!(["my-tag"]));
        }
    }

    #[test]
    fn fr_g08_schema_version_mismatch_is_a_schema_version_error() {
        let text = MINIMAL.replace("akms_schema: v2", "akms_schema: v1");
        let (node, problems) = parse_node(Path::new("n.md"), &text, Layer::Global);
        assert!(node.is_none());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].kind, ProblemKind::SchemaVersion);
        assert_eq!(problems[0].line, Some(9));
        let missing = MINIMAL.replace("akms_schema: v2\n", "");
        assert_eq!(parse_node(Path::new("n.md"), &missing, Layer::Local).1[0].kind, ProblemKind::SchemaVersion);
    }

    #[test]
    fn reports_every_problem_with_line_and_field() {
        let text = MINIMAL
            .replace("status: tentative", "status: done")
            .replace("confidence: 0.7", "confidence: 1.5")
            .replace("title: \"My Concept\"\n", "");
        let got = problems(&text, Layer::Global);
        assert_eq!(
            got,
            [
                "n.md: title: required field is missing",
                "n.md:5: status: `done` is not one of draft, tentative, established, deprecated",
                "n.md:6: confidence: expected a number from 0.0 to 1.0, found `1.5`",
            ]
        );
    }

    #[test]
    fn required_fields_and_types_of_4_1_2() {
        let no_tags = MINIMAL.replace("tags: [my-tag]", "tags: []");
        assert_eq!(problems(&no_tags, Layer::Global), ["n.md:5: tags: needs at least one tag"]);
        let upper = MINIMAL.replace("id: my-concept", "id: My Concept");
        assert!(
            problems(&upper, Layer::Local)[0].starts_with("n.md:2: id: `My Concept` is not a lower-case identifier")
        );
        let reserved = MINIMAL.replace("domain: my-domain", "domain: session");
        assert_eq!(
            problems(&reserved, Layer::Local),
            ["n.md:4: domain: `session` is reserved for nodes the system generates"]
        );
        let hints = MINIMAL.replace("akms_schema", "context_size: huge\nreading_priority: all\nakms_schema");
        assert_eq!(problems(&hints, Layer::Global).len(), 2);
        let extra = MINIMAL.replace("akms_schema", "reviewed_by: ada\nakms_schema");
        let node = parse_node(Path::new("n.md"), &extra, Layer::Global).0.unwrap();
        assert_eq!(node.attributes["reviewed_by"], "ada", "an unknown optional field is kept (spec 8.2)");
    }

    #[test]
    fn fr_o01_global_nodes_reject_experiential_fields_and_generated_source() {
        for field in EXPERIENTIAL_FIELDS {
            let text = MINIMAL.replace("akms_schema", &format!("{field}: 1\nakms_schema"));
            let got = problems(&text, Layer::Global);
            assert_eq!(got.len(), 1, "{got:?}");
            assert!(got[0].contains(&format!(": {field}: experiential state")), "{got:?}");
            assert!(problems(&text, Layer::Local).is_empty(), "local nodes may carry {field}");
        }
        let generated = MINIMAL.replace("source: human", "source: generated");
        assert!(problems(&generated, Layer::Global)[0].contains("source: `generated` is reserved"));
        assert!(problems(&generated, Layer::Local)[0].contains("source: `generated` is not allowed"));
    }

    #[test]
    fn fr_m04_agent_drafted_local_nodes_are_tentative_with_a_content_draft() {
        let agent = MINIMAL.replace("source: human", "source: agent");
        let got = problems(&agent, Layer::Local);
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("content_draft"), "{got:?}");
        let drafted = agent.replace("body\n", "## content_draft\nthe agent wrote this\n");
        assert!(problems(&drafted, Layer::Local).is_empty());
        // A human promotes (FR-R03) or suppresses (FR-R04) an agent's node.
        for status in ["established", "draft"] {
            let changed = drafted.replace("status: tentative", &format!("status: {status}"));
            assert!(problems(&changed, Layer::Local).is_empty());
        }
    }

    #[test]
    fn edges_are_validated_field_by_field() {
        let text = MINIMAL.replace(
            "akms_schema",
            "edges:\n  - to: other\n    type: requires\n    weight: 1\n  - to: x\n    type: causes\n    weight: 2\n  - type: refines\n    weight: 0.5\nakms_schema",
        );
        let got = problems(&text, Layer::Global);
        assert_eq!(
            got,
            [
                "n.md:9: edges[1].type: `causes` is not one of requires, feeds-into, refines, contradicts, pitfall, implements",
                "n.md:9: edges[1].weight: expected a number from 0.0 to 1.0, found `2`",
                "n.md:9: edges[2].to: required field is missing",
            ]
        );
        let ok =
            MINIMAL.replace("akms_schema", "edges:\n  - to: other\n    type: requires\n    weight: 1\nakms_schema");
        let node = parse_node(Path::new("n.md"), &ok, Layer::Global).0.unwrap();
        assert_eq!(node.edges[0].weight, 1.0);
        assert!(!node.attributes.contains_key("edges"));
    }

    #[test]
    fn spec_4_7_code_mirror_invariants_no_tags_no_edges_confidence_one_generated() {
        let mirror = "---\nid: mirror-src-a\ntitle: \"Code Mirror: src/a.py\"\ndomain: code-mirror\nstatus: established\nconfidence: 1.0\nsource: generated\nauto_update: true\ncontent_ref: code-mirror/src/a.md\nsource_file: src/a.py\ngenerated_at: 2025-06-01T14:32:00\ngenerated_by_phase: 2\nakms_schema: v2\n---\n";
        let (node, problems) = parse_node(Path::new("m.md"), mirror, Layer::CodeMirror);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(node.unwrap().source_file.as_deref(), Some("src/a.py"));
        let bad = mirror
            .replace("confidence: 1.0", "confidence: 0.5")
            .replace("auto_update: true", "auto_update: false\ntags: [x]");
        let got: Vec<String> =
            parse_node(Path::new("m.md"), &bad, Layer::CodeMirror).1.iter().map(ToString::to_string).collect();
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got.iter().any(|p| p.contains("confidence: a code-mirror node always has confidence 1.0")));
        assert!(got.iter().any(|p| p.contains("auto_update: is `false`")));
        assert!(got.iter().any(|p| p.contains("tags: a code-mirror node has no tags")));
        let drifted = mirror.replace("status: established", "status: draft");
        assert!(parse_node(Path::new("m.md"), &drifted, Layer::CodeMirror).1.is_empty(), "drift sets draft (5.6)");
        let tentative = mirror.replace("status: established", "status: tentative");
        let got = parse_node(Path::new("m.md"), &tentative, Layer::CodeMirror).1;
        assert!(got[0].to_string().contains("status: is `tentative`"), "{got:?}");
    }

    #[test]
    fn malformed_yaml_and_missing_frontmatter_are_errors() {
        let got = problems("---\nid: [a\n---\n", Layer::Global);
        assert!(got[0].starts_with("n.md:") && got[0].contains("invalid yaml"), "{got:?}");
        assert!(problems("# just markdown\n", Layer::Global)[0].contains("no yaml frontmatter"));
    }
}
