//! The smaller use cases the adapters call: plans and their decisions, a
//! project's context policy and settings, a resource's index report and
//! first resource, the code graph as RDF, the default configuration file.

use std::path::Path;

use agents_acms::retrieval::PlanContext;
use agents_core::indexing::IndexReport;
use agents_core::policy::{Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
pub use agents_store::UkoStatsRows;
use agents_store::{Plan, PlanDecision, Project, Resource, StoreError, UkoNodeRecord};
use agents_uko::ontology::Ontology;
use agents_uko::rdf::{RdfEdge, RdfNode, UkoGraph};
use serde::Serialize;

use crate::{Engine, EngineError, Home, IndexOutcome};

/// A plan as `agents plan show` shows it: its ancestry and decisions, its
/// phase and the name of its project.
#[derive(Clone, Debug, Serialize)]
pub struct PlanView {
    #[serde(flatten)]
    pub context: PlanContext,
    pub phase: String,
    pub project: Option<String>,
}

/// A plan the store refuses (one that does not exist, an unknown parent or
/// project) is the caller's mistake.
fn refused(error: StoreError) -> EngineError {
    match error {
        StoreError::NotFound { .. } | StoreError::Invalid(_) => EngineError::PlanRefused(error.to_string()),
        other => other.into(),
    }
}

impl Engine {
    /// Creates a plan in `phase`, under `parent` and for the project named
    /// `project` (each of which must exist when given).
    pub fn create_plan(
        &self,
        title: &str,
        parent: Option<&str>,
        phase: Phase,
        project: Option<&str>,
    ) -> Result<Plan, EngineError> {
        let project = project.map(|name| self.projects.get(name)).transpose()?;
        let project_id = project.as_ref().map(|p| p.project_id.as_str());
        self.store().create_plan(title, parent, phase, project_id).map_err(refused)
    }

    /// Records a decision on `plan` in `tier`.
    pub fn add_decision(&self, plan: &str, title: &str, body: &str, tier: &str) -> Result<PlanDecision, EngineError> {
        self.store().add_decision(plan, title, body, tier).map_err(refused)
    }

    /// Every plan.
    pub fn plans(&self) -> Result<Vec<Plan>, EngineError> {
        Ok(self.store().plans()?)
    }

    /// The plan `plan_id` with its ancestry, decisions, phase and project.
    pub fn plan_view(&self, plan_id: &str) -> Result<PlanView, EngineError> {
        let context = self.plan_context(plan_id)?;
        let shown = self.store().plan(plan_id)?.ok_or_else(|| EngineError::PlanNotFound(plan_id.to_owned()))?;
        let project = match &shown.project_id {
            Some(id) => self.store().projects()?.into_iter().find(|p| p.project_id == *id).map(|p| p.name),
            None => None,
        };
        Ok(PlanView { context, phase: shown.phase, project })
    }

    /// The project's context policy and settings; `None` when never set.
    pub fn project_context(
        &self,
        project: &Project,
    ) -> Result<Option<(ProjectContextPolicy, ProjectContextSettings)>, EngineError> {
        Ok(self.store().project_context(&project.project_id)?)
    }

    /// Replaces the project's context policy and settings together.
    pub fn set_project_context(
        &self,
        project: &Project,
        policy: &ProjectContextPolicy,
        settings: &ProjectContextSettings,
    ) -> Result<(), EngineError> {
        Ok(self.store().set_project_context(&project.project_id, policy, settings)?)
    }

    /// The first resource linked to `project`, if any.
    pub fn first_resource(&self, project: &Project) -> Result<Option<Resource>, EngineError> {
        Ok(self.store().project_resources(&project.project_id)?.into_iter().next())
    }

    /// The report of the last indexing run of the index `index_id`.
    pub fn index_report(&self, index_id: &str) -> Result<Option<IndexReport>, EngineError> {
        Ok(self.store().last_report(index_id)?)
    }

    /// Counts of the resource's code graph (`agents uko stats`).
    pub fn uko_stats(&self, outcome: &IndexOutcome) -> Result<UkoStatsRows, EngineError> {
        Ok(self.store().uko_stats(&outcome.index.metadata.index_id)?)
    }

    /// The resource's stored code graph as RDF, with every retired revision
    /// of a node when `history` (`agents uko query|export`).
    pub fn uko_rdf(&self, outcome: &IndexOutcome, history: bool) -> Result<UkoGraph, EngineError> {
        let index_id = &outcome.index.metadata.index_id;
        let resource_id = &outcome.resource.resource_id;
        let store = self.store();
        let nodes = store.uko_all_nodes(index_id)?;
        let mut rdf_nodes: Vec<RdfNode> = Vec::with_capacity(nodes.len());
        // Lines of each current node, to tell members declared outside their parent.
        let lines: std::collections::HashMap<&str, (i64, i64)> =
            nodes.iter().map(|n| (n.node.uri.as_str(), (n.node.start_line, n.node.end_line))).collect();
        let rdf_node = |n: &UkoNodeRecord| {
            let outside_parent =
                n.node.parent_uri.as_deref().and_then(|p| lines.get(p)).is_some_and(|&(start, end)| {
                    let is_file = n.node.parent_uri.as_deref().is_some_and(|p| !p.contains('#'));
                    !is_file && (n.node.start_line > end || n.node.end_line < start)
                });
            rdf_node(n, resource_id, outside_parent)
        };
        for n in &nodes {
            if !history {
                rdf_nodes.push(rdf_node(n));
                continue;
            }
            // The current node keeps its URI; retired revisions get `~rev<id>`,
            // and each revision points at the one it replaced.
            let revisions = store.uko_revisions(index_id, &n.node.uri)?;
            let uri_of = |r: &UkoNodeRecord| {
                if r.is_current { r.node.uri.clone() } else { format!("{}~rev{}", r.node.uri, r.node_id) }
            };
            let by_id: std::collections::HashMap<i64, String> =
                revisions.iter().map(|r| (r.node_id, uri_of(r))).collect();
            for rev in &revisions {
                let mut node = rdf_node(rev);
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
}

/// The RDF form of a stored node, typed with its kind's class and, where the
/// language layer has one, its language class (`uko-kt:DataClass`).
fn rdf_node(n: &UkoNodeRecord, resource_id: &str, outside_parent: bool) -> RdfNode {
    let kind = agents_uko::model::NodeKind::parse(&n.node.kind).unwrap_or(agents_uko::model::NodeKind::File);
    let facts = agents_uko::lang::classes::NodeFacts {
        language: &n.node.language,
        kind,
        name: &n.node.name,
        symbol_path: &n.node.symbol_path,
        signature: n.node.signature.as_deref(),
        outside_parent,
    };
    RdfNode {
        uri: n.node.uri.clone(),
        class_curie: kind.curie().to_string(),
        language_class: agents_uko::lang::classes::language_class(&facts).map(str::to_string),
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

/// Writes `text` to `path` atomically (an export, the default configuration).
pub fn write_file(path: &Path, text: &str) -> Result<(), std::io::Error> {
    agents_store::atomic_write(path, text.as_bytes())
}

impl Home {
    /// Writes the default configuration to `path` (the home's `config.toml`
    /// unless the caller names another).
    pub fn write_default_config(&self, path: &Path) -> Result<(), std::io::Error> {
        write_file(path, &agents_core::config::Config::default_toml())
    }
}
