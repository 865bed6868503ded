//! Decision records and temporal context for a repository (the MCP server's
//! `query_history`): a plan's decisions and its ancestors', the git commits
//! that touched the repository or one of its files, and a code node's stored
//! revisions.

use std::path::Path;

use agents_acms::projects::canonical_dir;
use agents_acms::query::QueryError;
use agents_acms::retrieval::PlanContext;
use agents_search::history::GitHistory;
use agents_store::UkoNodeRecord;
use serde::Serialize;

use crate::{Engine, EngineError};

/// Commits listed when the caller names no limit.
pub const DEFAULT_HISTORY_LIMIT: usize = 20;

/// What [`Engine::history`] is asked for.
#[derive(Clone, Debug, Default)]
pub struct HistoryQuery {
    /// A plan: its decision records and those of its ancestors, nearest first.
    pub plan: Option<String>,
    /// Only commits touching this file or directory (relative to the repository).
    pub file: Option<String>,
    /// A node (`uko://` URI or symbol name) whose stored revisions to list.
    pub node: Option<String>,
    /// Most commits to return ([`DEFAULT_HISTORY_LIMIT`] when `None`).
    pub limit: Option<usize>,
}

/// One commit, as the history lists it.
#[derive(Clone, Debug, Serialize)]
pub struct CommitView {
    pub id: String,
    pub time: i64,
    pub author: String,
    /// The first line of the message.
    pub subject: String,
    pub paths: Vec<String>,
}

/// What [`Engine::history`] returns.
#[derive(Clone, Debug, Serialize)]
pub struct History {
    pub decisions: Option<PlanContext>,
    /// Newest first.
    pub commits: Vec<CommitView>,
    pub revisions: Vec<UkoNodeRecord>,
}

impl Engine {
    /// The history of the repository holding `path` (see the module documentation).
    pub fn history(&self, path: &Path, query: &HistoryQuery) -> Result<History, EngineError> {
        let decisions = query.plan.as_deref().map(|plan| self.plan_context(plan)).transpose()?;
        let dir = canonical_dir(path)?;
        let limit = query.limit.unwrap_or(DEFAULT_HISTORY_LIMIT).max(1);
        let mut commits = Vec::new();
        if let Some(git) = GitHistory::discover(&dir).map_err(QueryError::from)? {
            // Enough of the history to find `limit` commits touching the file.
            let scan = if query.file.is_some() { limit * 50 } else { limit };
            for c in git.commits(scan).map_err(QueryError::from)? {
                let touches = |p: &String| match &query.file {
                    Some(file) => p == file || p.starts_with(&format!("{}/", file.trim_end_matches('/'))),
                    None => true,
                };
                if !c.paths.iter().any(touches) {
                    continue;
                }
                commits.push(CommitView {
                    subject: c.message.lines().next().unwrap_or_default().to_owned(),
                    id: c.id,
                    time: c.time,
                    author: c.author,
                    paths: c.paths,
                });
                if commits.len() >= limit {
                    break;
                }
            }
        }
        let mut revisions = Vec::new();
        if let Some(node) = &query.node {
            let resource = self.projects.resource_containing(&dir)?.ok_or_else(|| EngineError::NotIndexed {
                path: dir.clone(),
                reason: "not inside an indexed resource",
            })?;
            let index = self
                .indexing
                .get_index_status(&resource.resource_id)?
                .ok_or_else(|| EngineError::NotIndexed { path: dir.clone(), reason: "not indexed yet" })?;
            let store = self.store();
            let uris: Vec<String> = if node.starts_with("uko://") {
                vec![node.clone()]
            } else {
                store.uko_find(&index.index_id, node)?.into_iter().map(|n| n.node.uri).collect()
            };
            for uri in uris {
                revisions.extend(store.uko_revisions(&index.index_id, &uri)?);
            }
        }
        Ok(History { decisions, commits, revisions })
    }
}
