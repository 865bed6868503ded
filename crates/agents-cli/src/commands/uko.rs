//! `agents uko ...`: the code knowledge graph.

use std::path::{Path, PathBuf};

use agents_core::request::Depth;
use agents_engine::UkoNodeRecord;
use agents_engine::{Engine, IndexMode, IndexOutcome};
use agents_uko::ontology::Ontology;
use agents_uko::rdf::UkoGraph;
use anyhow::Context;
use serde::Serialize;

use crate::cli::UkoCommand;
use crate::exit::UsageError;
use crate::progress::Bar;
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: UkoCommand) -> anyhow::Result<()> {
    let printer = settings.printer;
    match cmd {
        UkoCommand::Types => {
            let ontology = Ontology::builtin();
            let classes: Vec<_> = ontology
                .classes()
                .map(|c| {
                    serde_json::json!({
                        "curie": c.curie, "iri": c.iri, "label": c.label, "layer": c.layer, "parents": c.parents,
                    })
                })
                .collect();
            printer.emit(&classes, || ontology.render_class_tree())
        }
        UkoCommand::Stats { path } => {
            let engine = settings.engine()?;
            let outcome = refresh(settings, &engine, &path)?;
            let stats = engine.uko_stats(&outcome)?;
            printer.emit(&stats, || render_stats(&stats))
        }
        UkoCommand::Show { target, depth, history, path } => {
            let engine = settings.engine()?;
            let outcome = refresh(settings, &engine, &path)?;
            let index_id = &outcome.index.metadata.index_id;
            let nodes = engine.graph().find(&outcome.resource.resource_id, index_id, &target)?;
            let root = PathBuf::from(&outcome.resource.path);
            let mut shown = Vec::new();
            for node in nodes.iter().take(20) {
                let level = resolve_depth(&depth, &node.node.language)?;
                let rendered = engine.graph().render(&root, index_id, node, level, &engine.tokenizer())?;
                let revisions = if history { engine.graph().revisions(index_id, &node.node.uri)? } else { Vec::new() };
                shown.push(ShowView { rendered, revisions });
            }
            printer.emit(&shown, || render_show(&shown, nodes.len()))
        }
        UkoCommand::Query { sparql, path } => {
            let engine = settings.engine()?;
            let graph = build_graph(settings, &engine, &path, false)?;
            let result = graph.query(&sparql).map_err(|e| UsageError(e.to_string()))?;
            printer.emit(&result.to_json(), || result.to_table())
        }
        UkoCommand::Export { format: _, output, path } => {
            let engine = settings.engine()?;
            let graph = build_graph(settings, &engine, &path, true)?;
            let turtle = graph.to_turtle()?;
            match output {
                Some(file) => {
                    agents_engine::services::write_file(&file, &turtle)
                        .with_context(|| format!("cannot write {}", file.display()))?;
                    let view = serde_json::json!({ "path": file.display().to_string(), "triples": graph.len() });
                    printer.emit(&view, || format!("Wrote {} triples to {}", graph.len(), file.display()))
                }
                None => {
                    print!("{turtle}");
                    Ok(())
                }
            }
        }
    }
}

/// Refreshes (or first indexes) the resource holding `path`, waiting for
/// an indexer already at work on it rather than failing: a reader only
/// needs the index to be current.
pub fn refresh(settings: &Settings, engine: &Engine, path: &Path) -> anyhow::Result<IndexOutcome> {
    let bar = Bar::new(settings.progress);
    let options = agents_acms::IndexOptions { wait_for_lock: true, ..engine.index_options() };
    Ok(engine.index_path(path, IndexMode::Refresh, &options, &bar)?)
}

/// `4`, `SIGNATURES`, `full-source`, or a level of the node's language map.
pub fn resolve_depth(depth: &str, language: &str) -> anyhow::Result<u8> {
    let parsed: Depth = depth.parse().map_err(|e| UsageError(format!("--depth: {e}")))?;
    if let Some(level) = parsed.as_level() {
        return Ok(level);
    }
    let ontology = Ontology::builtin();
    let domain = ontology.domain_for_language(language);
    ontology
        .detail_level_maps()
        .resolve_depth(domain, &parsed)
        .map_err(|e| UsageError(format!("--depth {depth}: {e}")).into())
}

#[derive(Serialize)]
struct ShowView {
    #[serde(flatten)]
    rendered: agents_acms::graph::Rendered,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    revisions: Vec<UkoNodeRecord>,
}

fn render_show(shown: &[ShowView], total: usize) -> String {
    let mut out = String::new();
    for v in shown {
        let r = &v.rendered;
        let counts: Vec<String> = r.tokens_by_depth.iter().map(|t| t.to_string()).collect();
        out.push_str(&format!(
            "── {} ({}, {} {}) depth {}, {} tokens [by depth: {}]\n",
            r.uri,
            r.kind,
            r.path,
            r.source_range,
            r.depth,
            r.tokens,
            counts.join(" ")
        ));
        out.push_str(&r.content);
        for rev in &v.revisions {
            out.push_str(&format!(
                "  revision {}: valid {} .. {}{}\n",
                rev.node_id,
                rev.valid_from,
                rev.valid_until.as_deref().unwrap_or("now"),
                rev.revision_of.map(|p| format!(" (replaces {p})")).unwrap_or_default()
            ));
        }
        out.push('\n');
    }
    if total > shown.len() {
        out.push_str(&format!("({} more matches not shown)\n", total - shown.len()));
    }
    out
}

fn render_stats(stats: &agents_engine::services::UkoStatsRows) -> String {
    use crate::output::{table, thousands};
    use std::collections::BTreeMap;
    let mut nodes: BTreeMap<&str, u64> = BTreeMap::new();
    for (lang, _, n) in &stats.nodes {
        *nodes.entry(lang).or_default() += *n as u64;
    }
    let mut t = table(&["language", "nodes", "imports", "resolved", "calls", "resolved", "other refs"]);
    let mut langs: Vec<&str> = nodes.keys().copied().collect();
    langs.sort();
    for lang in langs {
        let get = |kind: &str| {
            stats.refs.iter().find(|r| r.0 == lang && r.1 == kind).map(|r| (r.2 as u64, r.3 as u64)).unwrap_or((0, 0))
        };
        let (imports, imports_ok) = get("import");
        let (calls, calls_ok) = get("calls");
        let other: u64 =
            stats.refs.iter().filter(|r| r.0 == lang && r.1 != "import" && r.1 != "calls").map(|r| r.2 as u64).sum();
        let pct = |ok: u64, all: u64| {
            if all == 0 { "-".to_string() } else { format!("{:.0}%", 100.0 * ok as f64 / all as f64) }
        };
        t.add_row(vec![
            lang.to_string(),
            thousands(nodes[lang]),
            thousands(imports),
            pct(imports_ok, imports),
            thousands(calls),
            pct(calls_ok, calls),
            thousands(other),
        ]);
    }
    format!("{t}\n")
}

/// The stored graph of the resource holding `path`, as RDF.
fn build_graph(settings: &Settings, engine: &Engine, path: &Path, history: bool) -> anyhow::Result<UkoGraph> {
    let outcome = refresh(settings, engine, path)?;
    Ok(engine.uko_rdf(&outcome, history)?)
}
