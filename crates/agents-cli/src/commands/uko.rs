//! `agents uko ...`: the code knowledge graph.

use std::path::{Path, PathBuf};

use agents_core::request::Depth;
use agents_engine::{Engine, IndexMode, IndexOutcome};
use agents_store::UkoNodeRecord;
use agents_uko::ontology::Ontology;
use agents_uko::rdf::{RdfEdge, RdfNode, UkoGraph};
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
            let stats = engine.store().uko_stats(&outcome.index.metadata.index_id)?;
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
                    agents_store::atomic_write(&file, turtle.as_bytes())
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

fn render_stats(stats: &agents_store::UkoStatsRows) -> String {
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
    let index_id = &outcome.index.metadata.index_id;
    let resource_id = &outcome.resource.resource_id;
    let store = engine.store();
    let nodes = store.uko_all_nodes(index_id)?;
    let mut rdf_nodes: Vec<RdfNode> = Vec::with_capacity(nodes.len());
    for n in &nodes {
        if !history {
            rdf_nodes.push(rdf_node(n, resource_id));
            continue;
        }
        // The current node keeps its URI; retired revisions get `~rev<id>`,
        // and each revision points at the one it replaced.
        let revisions = store.uko_revisions(index_id, &n.node.uri)?;
        let uri_of = |r: &UkoNodeRecord| {
            if r.is_current { r.node.uri.clone() } else { format!("{}~rev{}", r.node.uri, r.node_id) }
        };
        let by_id: std::collections::HashMap<i64, String> = revisions.iter().map(|r| (r.node_id, uri_of(r))).collect();
        for rev in &revisions {
            let mut node = rdf_node(rev, resource_id);
            node.uri = uri_of(rev);
            node.revision_of = rev.revision_of.and_then(|id| by_id.get(&id).cloned());
            rdf_nodes.push(node);
        }
    }
    let edges: Vec<RdfEdge> = store
        .uko_all_refs(index_id)?
        .into_iter()
        .map(|r| RdfEdge {
            from_uri: r.from_uri,
            property: if r.kind == "mentions" { "uko:references" } else { "uko:dependsOn" },
            external: r.resolved_uri.is_none().then(|| r.target.clone()),
            to_uri: r.resolved_uri,
            kind: r.kind,
        })
        .collect();
    Ok(UkoGraph::build(&rdf_nodes, &edges, Some(Ontology::builtin_ttl()))?)
}

fn rdf_node(n: &UkoNodeRecord, resource_id: &str) -> RdfNode {
    let kind = agents_uko::model::NodeKind::parse(&n.node.kind).unwrap_or(agents_uko::model::NodeKind::File);
    RdfNode {
        uri: n.node.uri.clone(),
        class_curie: kind.curie().to_string(),
        name: n.node.name.clone(),
        symbol_path: n.node.symbol_path.clone(),
        resource_id: resource_id.to_string(),
        path: n.node.path.clone(),
        source_range: format!("{}:{}-{}:{}", n.node.start_line, n.node.start_col, n.node.end_line, n.node.end_col),
        language: n.node.language.clone(),
        signature: n.node.signature.clone(),
        summary: n.node.doc.as_deref().and_then(|d| d.lines().find(|l| !l.trim().is_empty())).map(str::to_string),
        valid_from: n.valid_from.clone(),
        valid_until: n.valid_until.clone(),
        is_current: n.is_current,
        revision_of: None,
        parent_uri: n.node.parent_uri.clone(),
    }
}
