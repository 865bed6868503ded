//! The `knowledge-graph` context strategy: AKMS knowledge nodes and their
//! pitfall warnings for a context request, so `agents query` and the MCP
//! `request_context` carry what the repository's knowledge graph says about
//! the request's tags and entities.
//!
//! It lives here because it needs both halves: the strategy protocol of
//! `agents-acms` and the subgraph query of `agents-akms` (which depends on
//! `agents-acms`, so the strategy cannot live there). The engine registers it
//! through the pipeline builder like any custom strategy.
//!
//! Seeds are the node tags the request names: an entity equal to a tag, or a
//! tag whose every word is a word of the query. The implementer's subgraph
//! (spec 5.3) is ranked and capped as for a loadout; each node becomes one
//! inline candidate: title, provenance, path, its `## Summary` section (or
//! lead paragraph) and the pitfall warnings leaving it. Without
//! `knowledge/graph/graph.json` under the resource, or without a matching
//! tag, it cannot handle the request (confidence 0) and the selector skips it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_acms::retrieval::{
    Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities, StrategyError,
};
use agents_akms::CompiledGraph;
use agents_akms::vault::Layout;

/// The strategy's registered name.
pub const KNOWLEDGE_GRAPH: &str = "knowledge-graph";
/// The role whose profile the query uses.
const ROLE: &str = super::DEFAULT_ROLE;

/// See the module documentation.
pub struct KnowledgeGraphStrategy {
    /// The global vault as configured (`global-vault`, `$AKMS_GLOBAL_VAULT`),
    /// unexpanded; `None`: the repository's config says, else the default.
    /// Resolved by [`super::resolve_global_vault`], as `agents knowledge` does.
    global_vault: Option<String>,
    /// The user's home folder, for `~`.
    user_home: Option<PathBuf>,
}

impl KnowledgeGraphStrategy {
    /// The strategy reading node bodies from the global vault `global_vault`
    /// (as configured, unexpanded) with `~` standing for `user_home`.
    pub fn new(global_vault: Option<String>, user_home: Option<PathBuf>) -> KnowledgeGraphStrategy {
        KnowledgeGraphStrategy { global_vault, user_home }
    }

    /// The compiled graph under the layout's repository, if any (parsed once
    /// per version of the file: `can_handle` and `retrieve`, and a server's
    /// requests until the graph is rebuilt, share it).
    fn graph(&self, layout: &Layout) -> Option<Arc<CompiledGraph>> {
        CompiledGraph::load(&layout.graph_json()).ok()
    }

    pub(crate) fn layout(&self, root: &Path) -> Layout {
        let mut layout = Layout::new(root, PathBuf::new());
        layout.global_vault =
            super::resolve_global_vault(&layout, self.global_vault.as_deref(), self.user_home.as_deref()).path;
        layout
    }
}

/// Node tags the request names (sorted).
fn seed_tags(graph: &CompiledGraph, query: &RetrievalQuery<'_>) -> Vec<String> {
    let entities: BTreeSet<String> = query.request.entities().iter().map(|e| e.to_lowercase()).collect();
    let words: BTreeSet<String> = agents_search::code_tokens(&query.text()).into_iter().collect();
    let mut tags = BTreeSet::new();
    for tag in graph.nodes().iter().flat_map(|n| n.tags()) {
        let parts = agents_search::code_tokens(tag);
        if entities.contains(&tag.to_lowercase()) || (!parts.is_empty() && parts.iter().all(|p| words.contains(p))) {
            tags.insert(tag.to_owned());
        }
    }
    tags.into_iter().collect()
}

impl ContextStrategy for KnowledgeGraphStrategy {
    fn name(&self) -> &'static str {
        KNOWLEDGE_GRAPH
    }

    fn capabilities(&self) -> StrategyCapabilities {
        // Reads none of the code backends: its content comes from the graph.
        StrategyCapabilities { quality_score: 0.6, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        let layout = self.layout(backends.root);
        match self.graph(&layout) {
            Some(graph) if !seed_tags(&graph, query).is_empty() => 0.8,
            _ => 0.0,
        }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let nothing =
            |reason: &str| StrategyError::NothingToDo { strategy: KNOWLEDGE_GRAPH.into(), reason: reason.into() };
        let layout = self.layout(backends.root);
        let graph =
            self.graph(&layout).ok_or_else(|| nothing("no compiled knowledge graph (agents knowledge build)"))?;
        let tags = seed_tags(&graph, query);
        if tags.is_empty() {
            return Err(nothing("the request names no knowledge tag"));
        }
        let config = agents_akms::read_config(&layout).unwrap_or_default();
        let subgraph = agents_akms::query::query(&graph, &config, ROLE, &tags).map_err(|e| nothing(&e.to_string()))?;
        let docs: std::collections::BTreeMap<String, agents_search::TextDoc> =
            agents_akms::search::documents(&layout, &graph).into_iter().map(|d| (d.id.clone(), d)).collect();
        let count = subgraph.nodes.len().max(1) as f32;
        let mut candidates = Vec::new();
        for (i, node) in subgraph.nodes.iter().enumerate() {
            let attrs = graph.node(&node.id);
            let doc = docs.get(&node.id);
            let path = doc.map(|d| d.path.clone()).filter(|p| !p.is_empty()).unwrap_or_else(|| {
                attrs.and_then(|n| n.content_ref()).map(|r| format!("knowledge/{r}")).unwrap_or_default()
            });
            let mut text = format!(
                "Knowledge node `{}`: {} ({}, {}, confidence {:.2}, {})\n",
                node.id,
                node.title,
                node.domain,
                node.status,
                node.confidence,
                attrs.and_then(|n| n.origin()).unwrap_or("global")
            );
            if !path.is_empty() {
                text.push_str(&format!("Path: {path}\n"));
            }
            if let Some(summary) = doc.and_then(|d| agents_akms::loadout::summary_section(&d.body)) {
                text.push('\n');
                text.push_str(&summary);
                text.push('\n');
            }
            let mut warnings: Vec<String> = graph
                .links()
                .iter()
                .filter(|l| l.kind() == "pitfall" && l.source() == node.id)
                .map(|l| {
                    let target = l.target();
                    let title = graph.node(target).and_then(|n| n.title()).unwrap_or(target);
                    let note = l.text("note").unwrap_or_default().trim();
                    if note.is_empty() { format!("Pitfall: see {title}") } else { format!("Pitfall: {note} ({title})") }
                })
                .collect();
            warnings.sort();
            if !warnings.is_empty() {
                text.push('\n');
                text.push_str(&warnings.join("\n"));
                text.push('\n');
            }
            let score = (1.0 - i as f32 / (count + 1.0)).clamp(0.0, 1.0);
            candidates.push(Candidate {
                note: Some(if node.pitfall { "knowledge pitfall".into() } else { "knowledge node".into() }),
                content: Some(text),
                hops: Some(node.hops),
                ..Candidate::new(format!("knowledge://{}", node.id), "", score, query.depth, KNOWLEDGE_GRAPH)
            });
        }
        Ok(candidates)
    }
}
