//! Tag derivation (spec 4.5): the tags a task's subgraph query is seeded
//! with, when its author gave none. Deterministic string matching, no LLM:
//!
//! 1. scope-based: each path of the task's `scope` is matched against every
//!    node's `content_ref` and every code-mirror node's `source_file`; a
//!    matched node's tags are collected. Mirror nodes carry no tags: a mirror
//!    match leads, through the mirror file (its own `content_ref`), to the
//!    concept nodes whose `content_ref` is that file;
//! 2. text-based: the task's title, objective and implementation steps are
//!    matched against every node title (whole words, case-insensitive) and
//!    every node tag (substring, at least `min_tag_length` characters);
//! 3. the union, deduplicated and sorted, each tag with every reason it was
//!    derived (for the log a human checks before the task runs).
//!
//! The graph is the compiled node-link JSON (`graph.json`'s shape).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::config::{TagDerivationConfig, TitleMatch};
use crate::graph::CompiledGraph;

/// Why a tag was derived.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "rule", rename_all = "snake_case")]
pub enum TagSource {
    /// A scope path is the node's `content_ref`.
    ScopeContentRef { scope: String, node: String },
    /// A scope path is a mirror node's `source_file`, and the node's
    /// `content_ref` is that mirror's file.
    ScopeMirror { scope: String, mirror: String, node: String },
    /// The node's title appears in the task's text.
    Title { node: String },
    /// The tag itself appears in the task's text.
    Tag { node: String },
}

/// One derived tag and every reason for it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DerivedTag {
    pub tag: String,
    pub sources: Vec<TagSource>,
}

/// What a task offers to derivation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskText {
    pub scope: Vec<String>,
    /// Title, objective and implementation steps, in that order.
    pub text: String,
}

impl TaskText {
    /// From a task record (4.5): `scope`, and `title`, `objective` and
    /// `steps` (or `implementation_steps`), each a string or a list of strings.
    pub fn from_record(record: &serde_json::Map<String, Value>) -> TaskText {
        let strings = |value: Option<&Value>| -> Vec<String> {
            match value {
                Some(Value::String(s)) => vec![s.clone()],
                Some(Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
                _ => Vec::new(),
            }
        };
        let mut text = Vec::new();
        for field in ["title", "objective", "steps", "implementation_steps"] {
            text.extend(strings(record.get(field)));
        }
        TaskText { scope: strings(record.get("scope")), text: text.join("\n") }
    }
}

struct TagNode<'a> {
    id: &'a str,
    title: Option<&'a str>,
    tags: Vec<&'a str>,
    content_ref: Option<&'a str>,
    source_file: Option<&'a str>,
    mirror: bool,
}

fn nodes(graph: &CompiledGraph) -> Vec<TagNode<'_>> {
    let mut out: Vec<TagNode<'_>> = graph
        .nodes()
        .iter()
        .map(|n| TagNode {
            id: n.id(),
            title: n.title(),
            tags: n.tags().collect(),
            content_ref: n.content_ref(),
            source_file: n.text("source_file"),
            mirror: n.origin() == Some("code-mirror"),
        })
        .collect();
    out.sort_by(|a, b| a.id.cmp(b.id));
    out
}

/// Paths compare without a leading `./` and with `/` separators.
fn same_path(a: &str, b: &str) -> bool {
    let clean = |p: &str| p.trim_start_matches("./").replace('\\', "/");
    clean(a) == clean(b)
}

/// Whether `needle` occurs in `haystack` (both lowercase) with no letter,
/// digit or underscore right before or after it.
fn whole_words(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let word = |c: char| c.is_alphanumeric() || c == '_';
    haystack.match_indices(needle).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The tags derived for `task` from the compiled `graph`, sorted, each with
/// its reasons (sorted). Mirror nodes never contribute tags of their own.
pub fn derive_tags(graph: &CompiledGraph, task: &TaskText, config: &TagDerivationConfig) -> Vec<DerivedTag> {
    let nodes = nodes(graph);
    let mut found: BTreeMap<String, BTreeSet<TagSource>> = BTreeMap::new();
    let collect =
        |found: &mut BTreeMap<String, BTreeSet<TagSource>>, node: &TagNode<'_>, source: &dyn Fn(&str) -> TagSource| {
            for tag in &node.tags {
                found.entry((*tag).to_owned()).or_default().insert(source(node.id));
            }
        };
    // 1. Scope.
    for scope in &task.scope {
        for node in nodes.iter().filter(|n| !n.mirror) {
            if node.content_ref.is_some_and(|r| same_path(r, scope)) {
                collect(&mut found, node, &|id| TagSource::ScopeContentRef {
                    scope: scope.clone(),
                    node: id.to_owned(),
                });
            }
        }
        for mirror in nodes.iter().filter(|n| n.mirror && n.source_file.is_some_and(|f| same_path(f, scope))) {
            let Some(mirror_file) = mirror.content_ref else { continue };
            for node in nodes.iter().filter(|n| !n.mirror && n.content_ref.is_some_and(|r| same_path(r, mirror_file))) {
                collect(&mut found, node, &|id| TagSource::ScopeMirror {
                    scope: scope.clone(),
                    mirror: mirror.id.to_owned(),
                    node: id.to_owned(),
                });
            }
        }
    }
    // 2. Text.
    let text = task.text.to_lowercase();
    let min = config.min_tag_length as usize;
    for node in nodes.iter().filter(|n| !n.mirror) {
        if let Some(title) = node.title {
            let title = title.to_lowercase();
            let matched = match config.title_match {
                TitleMatch::WholeWord => whole_words(&text, title.trim()),
                TitleMatch::Substring => !title.trim().is_empty() && text.contains(title.trim()),
            };
            if matched {
                collect(&mut found, node, &|id| TagSource::Title { node: id.to_owned() });
            }
        }
        for tag in &node.tags {
            if tag.chars().count() >= min && text.contains(&tag.to_lowercase()) {
                found.entry((*tag).to_owned()).or_default().insert(TagSource::Tag { node: node.id.to_owned() });
            }
        }
    }
    // 3. Union, sorted.
    found.into_iter().map(|(tag, sources)| DerivedTag { tag, sources: sources.into_iter().collect() }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn graph() -> CompiledGraph {
        CompiledGraph::from_value(json!({"nodes": [
            {"id": "green", "node_origin": "global", "title": "Lippmann-Schwinger Equation",
             "tags": ["green-operator", "spectral"], "content_ref": "docs/ls.md"},
            {"id": "eps", "node_origin": "local", "title": "Epsilon Regularisation",
             "tags": ["numerics"], "content_ref": "code-mirror/src/green.md"},
            {"id": "mirror-src-green", "node_origin": "code-mirror", "title": "Code Mirror: src/green.py",
             "content_ref": "code-mirror/src/green.md", "source_file": "src/green.py"},
            {"id": "fft", "node_origin": "local", "title": "FFT", "tags": ["fft", "x"]}
        ], "links": []}))
        .unwrap()
    }

    fn config() -> TagDerivationConfig {
        TagDerivationConfig::default()
    }

    fn tags(derived: &[DerivedTag]) -> Vec<&str> {
        derived.iter().map(|d| d.tag.as_str()).collect()
    }

    #[test]
    fn fr_t05_scope_matches_content_refs_and_reaches_concepts_through_the_mirror() {
        let task = TaskText { scope: vec!["src/green.py".into(), "./docs/ls.md".into()], text: String::new() };
        let derived = derive_tags(&graph(), &task, &config());
        assert_eq!(tags(&derived), ["green-operator", "numerics", "spectral"]);
        let numerics = derived.iter().find(|d| d.tag == "numerics").unwrap();
        assert_eq!(
            numerics.sources,
            [TagSource::ScopeMirror {
                scope: "src/green.py".into(),
                mirror: "mirror-src-green".into(),
                node: "eps".into()
            }]
        );
    }

    #[test]
    fn fr_t05_titles_match_whole_words_and_tags_as_substrings() {
        let text = "Fix the lippmann-schwinger equation solver; spectral accuracy.\nUse FFTW.".to_owned();
        let derived = derive_tags(&graph(), &TaskText { scope: vec![], text }, &config());
        // The title brings both of its node's tags; "spectral" also matched as
        // a tag; "fft" is a substring of "FFTW" (tags match as substrings), but
        // the title "FFT" is not a whole word there; "x" is shorter than 2.
        assert_eq!(tags(&derived), ["fft", "green-operator", "spectral"]);
        let spectral = derived.iter().find(|d| d.tag == "spectral").unwrap();
        assert_eq!(
            spectral.sources,
            [TagSource::Title { node: "green".into() }, TagSource::Tag { node: "green".into() }]
        );
        assert!(!whole_words("fftw", "fft") && whole_words("an fft.", "fft"));
    }

    #[test]
    fn mirror_nodes_contribute_no_tags_and_derivation_is_deterministic() {
        let text = "code mirror: src/green.py".to_owned();
        let task = TaskText { scope: vec![], text };
        let a = derive_tags(&graph(), &task, &config());
        assert!(a.is_empty(), "{a:?}");
        let task = TaskText { scope: vec!["src/green.py".into()], text: "spectral fft".into() };
        assert_eq!(derive_tags(&graph(), &task, &config()), derive_tags(&graph(), &task, &config()));
    }

    #[test]
    fn a_task_record_gives_its_scope_and_text() {
        let record = json!({"task_id": "T-1", "scope": ["a.py"], "title": "Title", "objective": "Goal",
                            "steps": ["one", "two"], "akms_tags": [], "akms_schema": "v2"});
        let task = TaskText::from_record(record.as_object().unwrap());
        assert_eq!(task.scope, ["a.py"]);
        assert_eq!(task.text, "Title\nGoal\none\ntwo");
    }
}
