//! The local state overlay, `knowledge/graph/local_state.yaml` (spec 4.2):
//! per-node experiential state, repo-local edges and the session-node
//! registry. `suppressed_edges` is reserved and must be `[]` (FR-O06).
//!
//! Read with typed structs and `deny_unknown_fields` at the top level (the
//! overlay's structure is frozen); node overrides keep unknown fields, which
//! spec 8.2 allows. Serde's errors name the field path and the line.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value as Json;
use yaml_serde::Value as Yaml;

use crate::diag::{Diagnostic, ProblemKind};
use crate::schema::{Checker, Edge, valid_id};
use crate::yaml::{check_schema, key_lines, parse_mapping, to_json, yaml_error};

/// The parsed overlay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LocalState {
    pub repo_id: Option<String>,
    /// Per-node overrides, each as the attributes it sets.
    pub nodes: BTreeMap<String, BTreeMap<String, Json>>,
    /// Repo-local edges with their source node.
    pub local_edges: Vec<(String, Edge)>,
    pub session_nodes: BTreeMap<String, SessionNode>,
    /// Line of each top-level key, for messages.
    pub lines: BTreeMap<String, usize>,
}

/// A session-node registry entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionNode {
    pub title: String,
    #[serde(default)]
    pub tags: Vec<String>,
    pub outcome: String,
    pub content_ref: String,
    pub phase: i64,
    /// The SHA-256 (hex) of the document the session node was made from:
    /// what "already applied" is decided by (a registry written before it
    /// existed has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read for validation; the values are taken from the mapping
struct File {
    akms_schema: String,
    repo_id: Option<String>,
    #[serde(default)]
    nodes: BTreeMap<String, NodeState>,
    #[serde(default)]
    local_edges: Vec<Yaml>,
    #[serde(default)]
    session_nodes: BTreeMap<String, SessionNode>,
    #[serde(default)]
    suppressed_edges: Option<Vec<Yaml>>,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct NodeState {
    confidence: Option<f64>,
    activations: Option<u64>,
    last_activated: Option<String>,
    activated_by_tasks: Option<Vec<String>>,
    session_refs: Option<Vec<String>>,
    #[serde(flatten)]
    extra: BTreeMap<String, Yaml>,
}

/// Parses and validates the overlay text; `file` names it in messages.
pub fn parse_local_state(file: &Path, text: &str) -> Result<LocalState, Vec<Diagnostic>> {
    let map = parse_mapping(file, text, 1).map_err(|d| vec![d])?;
    let lines = key_lines(text, 1);
    if let Some(d) = check_schema(file, &map, &lines) {
        return Err(vec![d]);
    }
    let typed: File = yaml_serde::from_str(text).map_err(|e| vec![yaml_error(file, &e, 1, "")])?;
    let mut check = Checker { file, lines: &lines, map: &map, problems: Vec::new() };

    if typed.suppressed_edges.as_ref().is_some_and(|s| !s.is_empty()) {
        check.problems.push(Diagnostic::error(
            ProblemKind::SuppressedEdges,
            file,
            lines.get("suppressed_edges").copied(),
            Some("suppressed_edges"),
            "is reserved in schema v2 and must be an empty list []".into(),
        ));
    }
    let mut nodes = BTreeMap::new();
    if let Some(Yaml::Mapping(entries)) = map.get("nodes") {
        for (id, state) in entries {
            let id = id.as_str().unwrap_or_default().to_owned();
            let attributes: BTreeMap<String, Json> = match state {
                Yaml::Mapping(m) => m.iter().filter_map(|(k, v)| Some((k.as_str()?.to_owned(), to_json(v)))).collect(),
                _ => BTreeMap::new(),
            };
            if let Some(c) = attributes.get("confidence").and_then(Json::as_f64)
                && !(0.0..=1.0).contains(&c)
            {
                check.invalid(
                    &format!("nodes.{id}.confidence"),
                    format!("expected a number from 0.0 to 1.0, found `{c}`"),
                );
            }
            nodes.insert(id, attributes);
        }
    }
    let mut local_edges = Vec::new();
    for (i, item) in typed.local_edges.iter().enumerate() {
        let at = format!("local_edges[{i}]");
        let Yaml::Mapping(edge) = item else {
            check.invalid(&at, "expected a mapping with from, to, type and weight".into());
            continue;
        };
        let from = match edge.get("from") {
            Some(Yaml::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => {
                check.missing(&format!("{at}.from"));
                None
            }
        };
        for key in edge.keys().filter_map(Yaml::as_str) {
            if !matches!(key, "from" | "to" | "type" | "weight" | "note") {
                check.invalid(&format!("{at}.{key}"), "unknown field of a local edge".into());
            }
        }
        if let (Some(from), Some(mut parsed)) = (from, check.edge(edge, &at)) {
            parsed.line = lines.get("local_edges").copied();
            local_edges.push((from, parsed));
        }
    }
    for (id, session) in &typed.session_nodes {
        if !valid_id(id) {
            check.invalid(&format!("session_nodes.{id}"), format!("`{id}` is not a lower-case identifier"));
        }
        if session.title.trim().is_empty() {
            check.invalid(&format!("session_nodes.{id}.title"), "must not be empty".into());
        }
        if session.outcome.trim().is_empty() {
            check.invalid(&format!("session_nodes.{id}.outcome"), "must not be empty".into());
        }
        if let Some(hash) = &session.content_hash
            && !(hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            check.invalid(
                &format!("session_nodes.{id}.content_hash"),
                format!("`{hash}` is not a SHA-256 in hex (64 characters 0-9, a-f)"),
            );
        }
    }
    if !check.problems.is_empty() {
        return Err(check.problems);
    }
    Ok(LocalState { repo_id: typed.repo_id, nodes, local_edges, session_nodes: typed.session_nodes, lines })
}

/// The overlay as YAML text that [`parse_local_state`] reads back to the
/// same state: keys sorted, `suppressed_edges: []`. Comments are not kept
/// (the file is written by the update step only, spec 4.2).
pub fn render_local_state(state: &LocalState) -> String {
    let nodes: serde_json::Map<String, Json> = state
        .nodes
        .iter()
        .map(|(id, attributes)| (id.clone(), Json::Object(attributes.clone().into_iter().collect())))
        .collect();
    let edges: Vec<Json> = state
        .local_edges
        .iter()
        .map(|(from, edge)| {
            let mut e = serde_json::json!({
                "from": from,
                "to": edge.to,
                "type": edge.kind.as_str(),
                "weight": edge.weight,
            });
            if let Some(note) = &edge.note {
                e["note"] = Json::from(note.clone());
            }
            e
        })
        .collect();
    let sessions: serde_json::Map<String, Json> = state
        .session_nodes
        .iter()
        .map(|(id, s)| {
            let mut entry = serde_json::json!({
                "title": s.title,
                "tags": s.tags,
                "outcome": s.outcome,
                "content_ref": s.content_ref,
                "phase": s.phase,
            });
            if let Some(hash) = &s.content_hash {
                entry["content_hash"] = Json::from(hash.clone());
            }
            (id.clone(), entry)
        })
        .collect();
    let mut file = serde_json::json!({
        "akms_schema": crate::yaml::SCHEMA_VERSION,
        "nodes": nodes,
        "local_edges": edges,
        "session_nodes": sessions,
        "suppressed_edges": [],
    });
    if let Some(repo_id) = &state.repo_id {
        file["repo_id"] = Json::from(repo_id.clone());
    }
    yaml_serde::to_string(&crate::yaml::sorted(file)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const EXAMPLE: &str = "akms_schema: v2\nrepo_id: example-repo\nnodes:\n  lippmann-schwinger:\n    confidence: 0.85\n    activations: 7\n    last_activated: 2025-06-01\n    activated_by_tasks:\n      - phase1-task14\n    session_refs:\n      - sessions/phase1-task14.md\nlocal_edges:\n  - from: lippmann-schwinger\n    to: session-phase2-task3\n    type: pitfall\n    weight: 0.8\n    note: \"Add epsilon regularization.\"\nsession_nodes:\n  session-phase2-task3:\n    title: \"Session: phase2-task3\"\n    tags: [fft-galerkin]\n    outcome: success\n    content_ref: sessions/phase2-task3.md\n    phase: 2\nsuppressed_edges: []\n";

    fn errors(text: &str) -> Vec<String> {
        parse_local_state(Path::new("local_state.yaml"), text).unwrap_err().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn nfr_i05_rendered_overlay_reads_back_to_the_same_state() {
        let state = parse_local_state(Path::new("local_state.yaml"), EXAMPLE).unwrap();
        let text = render_local_state(&state);
        let again = parse_local_state(Path::new("local_state.yaml"), &text).unwrap();
        assert_eq!(
            (&state.nodes, &state.session_nodes, &state.repo_id),
            (&again.nodes, &again.session_nodes, &again.repo_id)
        );
        let edges = |s: &LocalState| -> Vec<(String, String, f64)> {
            s.local_edges.iter().map(|(f, e)| (f.clone(), e.to.clone(), e.weight)).collect()
        };
        assert_eq!(edges(&state), edges(&again));
        assert_eq!(render_local_state(&again), text, "rendering is stable");
    }

    #[test]
    fn parses_the_spec_example() {
        let state = parse_local_state(Path::new("local_state.yaml"), EXAMPLE).unwrap();
        assert_eq!(state.repo_id.as_deref(), Some("example-repo"));
        assert_eq!(state.nodes["lippmann-schwinger"]["last_activated"], "2025-06-01");
        assert_eq!(state.local_edges[0].0, "lippmann-schwinger");
        assert_eq!(state.session_nodes["session-phase2-task3"].phase, 2);
    }

    #[test]
    fn fr_o06_non_empty_suppressed_edges_is_rejected() {
        let text = EXAMPLE.replace("suppressed_edges: []", "suppressed_edges:\n  - {from: a, to: b}");
        assert_eq!(
            errors(&text),
            ["local_state.yaml:25: suppressed_edges: is reserved in schema v2 and must be an empty list []"]
        );
    }

    #[test]
    fn names_the_field_of_a_missing_or_unknown_entry() {
        let missing = errors(&EXAMPLE.replace("    outcome: success\n", ""));
        assert!(missing[0].contains("session_nodes") && missing[0].contains("outcome"), "{missing:?}");
        let unknown = errors(&EXAMPLE.replace("repo_id:", "repo:"));
        assert!(unknown[0].contains("unknown field `repo`"), "{unknown:?}");
        let schema = parse_local_state(Path::new("l.yaml"), &EXAMPLE.replace("v2", "v3")).unwrap_err();
        assert_eq!(schema[0].kind, ProblemKind::SchemaVersion);
        let bad_type = errors(&EXAMPLE.replace("type: pitfall", "type: warns"));
        assert!(bad_type[0].contains("local_edges[0].type: `warns` is not one of"), "{bad_type:?}");
    }
}
