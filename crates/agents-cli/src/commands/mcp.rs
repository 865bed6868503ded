//! The context skill as a Model Context Protocol server, built on the
//! official Rust SDK (`rmcp`): `agents mcp` over stdio (here and [`stdio`]),
//! `agents serve` over streamable HTTP ([`http`]). Both serve the one
//! [`ContextServer`] defined here.
//!
//! One [`Engine`] stays open for the whole server ([`Shared`]), so the store,
//! the tokenizer's tables and the search indexes are read once, not per
//! request or per client; each session has its own context budget.
//! Tools: `request_context` (a whole CRP request: the same
//! `ContextRequestBuilder` type `agents query --request FILE.json` reads, so
//! its JSON schema is generated from it), `query_history`,
//! `get_context_budget`, `index_status`, `refresh_index`, `record_session`
//! (an AgentMemory validated and filed under `knowledge/sessions/`; the graph
//! itself changes only through `agents knowledge update`) and `get_loadout`
//! (a task record's AKMS loadout, as `agents knowledge loadout` makes it).
//!
//! Errors follow the protocol's split: a malformed message, an unknown tool
//! or missing arguments are JSON-RPC errors; arguments of the wrong type,
//! requests the CRP rules reject (a depth of 12, a blank query) and
//! operational failures (an unreadable repository) are tool results with
//! `isError: true` and a message that says what to fix, so a model can
//! correct its call. Nothing a client sends ends the server: every line gets
//! an answer, a malformed one its JSON-RPC error ([`stdio`] reads stdin
//! before `rmcp` does). Logs go to stderr: stdout carries the protocol only.
//!
//! A tool's `path` is confined ([`Roots`]): after `..` and symbolic links are
//! resolved it must lie under the server's working directory, an
//! `--allow-root` or a linked resource, and never be the file-system root or
//! the home folder unless that is linked itself.

pub mod http;
mod stdio;
pub mod token;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agents_core::request::ContextRequestBuilder;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

use crate::commands::index::{IndexSummary, status_of};
use crate::exit::UsageError;
use crate::settings::Settings;
use agents_engine::live::{DEFAULT_DEBOUNCE, LiveIndex, LiveRefresh};
use agents_engine::{Engine, EngineError, IndexMode, IndexOutcome, QueryOptions, QueryRun};

/// `request_context`: a CRP request and where to run it.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct RequestContextParams {
    /// The Context Request: every CRP field (query, entities, uko_types,
    /// focus, breadth, depth, depth_gradient, temporal, max_tokens,
    /// preferred_strategies, required_backends, priority, purpose). Depth 9
    /// is full source for the best matches; the spec's default is 3.
    #[serde(flatten)]
    pub request: ContextRequestBuilder,
    /// Repository directory (default: the directory the server started in).
    #[serde(default)]
    pub path: Option<String>,
    /// Size the budget from this model's context window (`[models]` in the config).
    #[serde(default)]
    pub model: Option<String>,
    /// Plan phase whose policy view applies: default, strategize, execute, apply.
    #[serde(default)]
    pub phase: Option<String>,
    /// The plan the context is for: its ancestors' decisions become
    /// retrievable and its parent's context is inherited as a skeleton.
    #[serde(default)]
    pub plan: Option<String>,
    /// The actor's role, deciding which of the project's context entries it
    /// sees: strategist (hot, warm, cold), executor (hot, warm; the default)
    /// or reviewer (hot).
    #[serde(default)]
    pub role: Option<String>,
    /// Only code under these path prefixes.
    #[serde(default)]
    pub under: Vec<String>,
    /// How the context is returned: md (default), json (the AssembledContext
    /// on one line) or xml; the budget holds for the text in that format.
    #[serde(default)]
    pub format: Option<Format>,
}

/// Output formats of `request_context`.
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Md,
    Json,
    Xml,
}

impl From<Format> for agents_acms::pipeline::format::OutputFormat {
    fn from(format: Format) -> Self {
        use agents_acms::pipeline::format::OutputFormat;
        match format {
            Format::Md => OutputFormat::Md,
            Format::Json => OutputFormat::Json,
            Format::Xml => OutputFormat::Xml,
        }
    }
}

/// `query_history`: decision records and temporal context.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryHistoryParams {
    /// Repository directory (default: the directory the server started in).
    #[serde(default)]
    pub path: Option<String>,
    /// A plan id: its decision records and those of its ancestors, nearest first.
    #[serde(default)]
    pub plan: Option<String>,
    /// Only commits touching this file or directory (relative to the repository).
    #[serde(default)]
    pub file: Option<String>,
    /// A node (`uko://` URI or symbol name) whose stored revisions to list.
    #[serde(default)]
    pub node: Option<String>,
    /// Most commits to return (default 20).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `get_context_budget`: the session's budget, what it spent and has left.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetParams {
    /// Sizes (or resizes) the session's budget: a model from `[models]` in the
    /// configuration, its window less the reserves.
    #[serde(default)]
    pub model: Option<String>,
    /// Sizes (or resizes) the session's budget: a cap (default 8000 without a model).
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// `index_status` and `refresh_index`: which repository.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathParams {
    /// Repository directory (default: the directory the server started in).
    #[serde(default)]
    pub path: Option<String>,
}

/// `record_session`: an AgentMemory to file under `knowledge/sessions/`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSessionParams {
    /// The task's id; the file is `knowledge/sessions/{task_id}.md` and the
    /// document's own `task_id` must match it.
    pub task_id: String,
    /// The whole AgentMemory document (AKMS spec 4.3): YAML frontmatter
    /// between `---` lines (task_id, phase_id, timestamp, agent_model,
    /// loadout_used, status, tests_passed, tests_total, nodes_used,
    /// pitfalls_discovered, new_knowledge, ..., akms_schema: v2), then notes.
    pub memory: String,
    /// Repository directory (default: the directory the server started in).
    #[serde(default)]
    pub path: Option<String>,
}

/// `get_loadout`: a task record and the role whose loadout to make.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetLoadoutParams {
    /// The task record (spec 4.5): task_id, akms_tags (derived when empty),
    /// title, objective, scope, akms_schema "v2".
    pub task: serde_json::Map<String, serde_json::Value>,
    /// The agent role (default implementer).
    #[serde(default)]
    pub role: Option<String>,
    /// The model's context window in tokens (unknown: the config's
    /// `mode_selection.default_mode`).
    #[serde(default)]
    pub context_limit: Option<u64>,
    /// Tokens of the agent's system prompt (default 0).
    #[serde(default)]
    pub system_prompt_tokens: Option<u64>,
    /// Repository directory (default: the directory the server started in).
    #[serde(default)]
    pub path: Option<String>,
}

/// What every session of a server shares: one engine, the live index and
/// the roots. The engine is `Sync` and every use of it here goes through
/// `&self` (the store guards its own connections; an indexer takes the
/// resource's lock, `wait_for_lock`), so many sessions may call it at once.
pub struct Shared {
    settings: Settings,
    engine: Arc<Engine>,
    /// Watched resources answer from their last refresh while unchanged.
    live: LiveIndex,
    /// Whether resources are watched (`--no-watch` turns it off).
    watch: bool,
    /// Where relative and missing paths resolve.
    root: PathBuf,
    /// The directories a request may name.
    roots: Roots,
}

/// What one session holds between calls: the shared server, and the
/// session's own context budget. Stdio has one session; HTTP one per client.
struct State {
    shared: Arc<Shared>,
    /// The session's context budget and what it spent.
    budget: agents_engine::session::SessionBudget,
}

impl std::ops::Deref for State {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// Where requests may read: paths under the server's working directory, an
/// `--allow-root` or a resource already linked in the store, checked after
/// resolving `..` and symbolic links. The file-system root, the home folder
/// and the folders above it are refused even under a root (they would index
/// a whole disk or home) unless they are linked themselves.
#[derive(Debug)]
pub struct Roots {
    /// Canonical directories: the working directory, then every `--allow-root`.
    dirs: Vec<PathBuf>,
    /// The user's home folder, canonical, when there is one.
    home: Option<PathBuf>,
    /// The command that serves (`agents mcp`, `agents serve`), for the advice.
    command: &'static str,
}

impl Roots {
    /// The working directory and the `--allow-root` directories, each of which
    /// must exist. A working directory that is the file-system root or holds
    /// the home folder (where some clients start their servers) is no root:
    /// it would admit the whole disk or home.
    pub fn new(cwd: &Path, allowed: &[PathBuf], command: &'static str) -> anyhow::Result<Roots> {
        let home = dirs::home_dir().and_then(|h| h.canonicalize().ok());
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let mut dirs = Vec::new();
        if cwd.parent().is_none() || home.as_ref().is_some_and(|home| home.starts_with(&cwd)) {
            tracing::warn!(
                dir = %cwd.display(),
                "the working directory is the file-system root or holds the home folder, so it is no root: \
                 requests may name linked resources and --allow-root directories only"
            );
        } else {
            dirs.push(cwd);
        }
        for dir in allowed {
            let canonical = agents_acms::projects::canonical_dir(dir)
                .map_err(|e| UsageError(format!("--allow-root {}: {e}", dir.display())))?;
            if !dirs.contains(&canonical) {
                dirs.push(canonical);
            }
        }
        Ok(Roots { dirs, home, command })
    }

    /// The canonical form of `path` (which the request gave as `shown`) when
    /// a request may read it, else a tool error naming it and how to allow it.
    fn check(&self, shown: &str, path: &Path, linked: &[PathBuf]) -> Result<PathBuf, ToolFailure> {
        let canonical = match path.canonicalize() {
            Ok(canonical) => canonical,
            // A path that does not resolve is reported as missing only when
            // it would be allowed, so the answer says nothing about the
            // world outside the roots.
            Err(e) => {
                let resolved = agents_fs::confine::resolve_missing(path);
                if agents_fs::confine::under_any(&resolved, self.dirs.iter().chain(linked)) {
                    return Err(ToolFailure::Invalid(format!("path `{shown}` ({}): {e}", resolved.display())));
                }
                return Err(self.outside(shown, &resolved));
            }
        };
        if agents_fs::confine::under_any(&canonical, linked) {
            return Ok(canonical);
        }
        let whole_disk = canonical.parent().is_none();
        if whole_disk || self.home.as_ref().is_some_and(|home| home.starts_with(&canonical)) {
            return Err(ToolFailure::Invalid(format!(
                "path `{shown}` ({}) is {}: the server never indexes it; give a repository's directory, \
                 or link this one yourself with `agents project link-resource PROJECT {}` if you mean it",
                canonical.display(),
                if whole_disk { "the file-system root" } else { "the home folder or holds it" },
                canonical.display()
            )));
        }
        if agents_fs::confine::under_any(&canonical, &self.dirs) {
            return Ok(canonical);
        }
        Err(self.outside(shown, &canonical))
    }

    fn outside(&self, shown: &str, resolved: &Path) -> ToolFailure {
        let mut roots: Vec<String> = self.dirs.iter().map(|d| d.display().to_string()).collect();
        roots.push("the linked resources".to_owned());
        ToolFailure::Invalid(format!(
            "path `{shown}` ({}) is outside the directories this server may read ({}); start it with \
             `{} --allow-root {}`, or link it with `agents project link-resource PROJECT {}`",
            resolved.display(),
            roots.join(", "),
            self.command,
            resolved.display(),
            resolved.display()
        ))
    }
}

impl Shared {
    /// The directory a request's `path` names (default: the server's working
    /// directory), canonical, when it lies under the roots; else a tool error.
    fn allowed(&self, path: Option<&str>) -> Result<PathBuf, ToolFailure> {
        let resolved = match path {
            Some(p) if Path::new(p).is_absolute() => PathBuf::from(p),
            Some(p) => self.root.join(p),
            None => self.root.clone(),
        };
        let linked = self.linked()?;
        self.roots.check(path.unwrap_or("."), &resolved, &linked)
    }

    /// The roots of the linked resources.
    fn linked(&self) -> Result<Vec<PathBuf>, ToolFailure> {
        let resources = self.engine.projects().resources().map_err(|e| ToolFailure::Failed(e.to_string()))?;
        Ok(resources.into_iter().map(|r| PathBuf::from(r.path)).collect())
    }

    /// The repository holding `path` (the nearest folder above it with
    /// `knowledge/` or `.git`), when it too lies under the roots.
    fn repo_root(&self, path: &Path) -> Result<Option<PathBuf>, ToolFailure> {
        match agents_akms::vault::find_repo_root(path) {
            Some(repo) => {
                let linked = self.linked()?;
                let shown = repo.display().to_string();
                self.roots.check(&shown, &repo, &linked).map(Some)
            }
            None => Ok(None),
        }
    }

    /// The index of the resource holding `path`: from the live index while
    /// nothing changed, else refreshed. A resource seen for the first time is
    /// watched from then on when its project refreshes live.
    fn outcome(&self, path: &Path) -> Result<Arc<IndexOutcome>, EngineError> {
        let outcome = self.live.outcome(path, || {
            let bar = crate::progress::Bar::new(self.settings.progress);
            let options = agents_acms::IndexOptions { wait_for_lock: true, ..self.engine.index_options() };
            self.engine.index_path(path, IndexMode::Refresh, &options, &bar)
        })?;
        if self.watch
            && self.engine.auto_refresh(&outcome.project.project_id)?
            && let Err(error) = self.live.watch(Path::new(&outcome.resource.path))
        {
            tracing::warn!(root = %outcome.resource.path, %error, "cannot watch for changes; refreshing on every request");
        }
        Ok(outcome)
    }
}

/// The MCP server: tools over one long-lived engine.
#[derive(Clone)]
pub struct ContextServer {
    state: Arc<State>,
    tool_router: ToolRouter<ContextServer>,
}

/// A failure inside a tool: bad input the client can fix, or an operational error.
#[derive(Debug)]
enum ToolFailure {
    Invalid(String),
    Failed(String),
}

impl From<EngineError> for ToolFailure {
    fn from(err: EngineError) -> Self {
        anyhow::Error::from(err).into()
    }
}

impl From<anyhow::Error> for ToolFailure {
    fn from(err: anyhow::Error) -> Self {
        let message = crate::exit::render(&err);
        if crate::exit::code_for(&err) == crate::exit::USAGE {
            ToolFailure::Invalid(message)
        } else {
            ToolFailure::Failed(message)
        }
    }
}

/// A tool's answer: its result, or a tool error saying what went wrong.
fn answer(result: Result<CallToolResult, ToolFailure>) -> Result<CallToolResult, McpError> {
    Ok(match result {
        Ok(result) => result,
        Err(ToolFailure::Invalid(message)) => {
            CallToolResult::error(vec![ContentBlock::text(format!("invalid request: {message}"))])
        }
        Err(ToolFailure::Failed(message)) => CallToolResult::error(vec![ContentBlock::text(message)]),
    })
}

/// A JSON value as a tool result: pretty text for the model, structured for programs.
fn json_result<T: Serialize>(value: &T) -> Result<CallToolResult, ToolFailure> {
    let json = serde_json::to_value(value).map_err(|e| ToolFailure::Failed(e.to_string()))?;
    let text = serde_json::to_string_pretty(&json).map_err(|e| ToolFailure::Failed(e.to_string()))?;
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json);
    Ok(result)
}

impl ContextServer {
    /// Runs blocking engine work off the protocol's threads.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&State) -> Result<T, ToolFailure> + Send + 'static,
    ) -> Result<T, ToolFailure> {
        let state = self.state.clone();
        tokio::task::spawn_blocking(move || work(&state))
            .await
            .unwrap_or_else(|e| Err(ToolFailure::Failed(format!("the tool stopped unexpectedly: {e}"))))
    }
}

#[tool_router]
impl ContextServer {
    /// A session's server: the shared engine, a budget of its own.
    pub fn new(shared: Arc<Shared>) -> ContextServer {
        let state = State { shared, budget: agents_engine::session::SessionBudget::default() };
        ContextServer { state: Arc::new(state), tool_router: Self::tool_router() + Self::knowledge_router() }
    }

    /// Context for a task: the code that matches a Context Request, packed
    /// under its token budget by the ten-component assembly pipeline. The
    /// repository is indexed on first use and refreshed when it changed.
    #[tool(
        name = "request_context",
        description = "Get the context for a task: the code of a repository that matches a Context Request (CRP), packed under a hard token budget (max_tokens, default 8000). Returns Markdown (a preamble, then fragments headed by path, line range and, short of the full source, depth; each opens with its UKO type and name) or format json/xml; the structured result says how many tokens were used and which files are covered."
    )]
    async fn request_context(
        &self,
        Parameters(params): Parameters<RequestContextParams>,
    ) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                let options = query_options(params, path)?;
                let model = options.model.clone();
                let run = state.engine.query_with(&options, &|path| state.outcome(path))?;
                // The text is in the requested format, fitted to the budget in
                // that format; `rendered_tokens` is its count. The session
                // spends what was delivered.
                state.engine.record_run(&state.budget, model.as_deref(), &run);
                let mut result = CallToolResult::success(vec![ContentBlock::text(run.text.clone())]);
                result.structured_content = Some(summary(&run));
                Ok(result)
            })
            .await,
        )
    }

    #[tool(
        name = "query_history",
        description = "Decision records and temporal context: the decisions of a plan and its ancestors (nearest first), the git commits that touched the repository or one of its files (newest first), and the stored revisions of a code node."
    )]
    async fn query_history(
        &self,
        Parameters(params): Parameters<QueryHistoryParams>,
    ) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                let query = agents_engine::history::HistoryQuery {
                    plan: params.plan,
                    file: params.file,
                    node: params.node,
                    limit: params.limit,
                };
                json_result(&state.engine.history(&path, &query)?)
            })
            .await,
        )
    }

    #[tool(
        name = "get_context_budget",
        description = "The session's context budget: available_tokens (sized by this call's model or max_tokens, else by the first request_context: the model's context window less the response reserve and tool definitions, default 8000), used_tokens delivered by request_context so far, remaining_tokens, and needs_refresh (the remaining budget moved from the last payload's by more than the refresh threshold: request it again), with the minimum useful budget and the refresh threshold."
    )]
    async fn get_context_budget(
        &self,
        Parameters(params): Parameters<BudgetParams>,
    ) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let status = state
                    .engine
                    .session_budget(&state.budget, params.model.as_deref(), params.max_tokens)
                    .map_err(|e| ToolFailure::Invalid(e.to_string()))?;
                json_result(&status)
            })
            .await,
        )
    }

    #[tool(
        name = "index_status",
        description = "The index status of a repository: its project, resource id, file count, token estimate, languages and the report of the last run."
    )]
    async fn index_status(&self, Parameters(params): Parameters<PathParams>) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                json_result(&status_of(&state.engine, &path)?)
            })
            .await,
        )
    }

    #[tool(
        name = "refresh_index",
        description = "Index a repository, or refresh its index: only files whose size or modification time changed are read again; the text and vector search indexes follow."
    )]
    async fn refresh_index(&self, Parameters(params): Parameters<PathParams>) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                let outcome = state.live.refresh_now(&path).map_err(anyhow::Error::from)?;
                let mut summary = IndexSummary::of(&outcome);
                summary.sync_search(&state.engine, &outcome)?;
                json_result(&summary)
            })
            .await,
        )
    }

    #[tool(
        name = "get_loadout",
        description = "The AKMS loadout of a task record for an agent role: the Markdown file of knowledge nodes (table with paths and confidence, summaries or inline content by the available context, known pitfalls, session history, reading order) made from the repository's compiled knowledge graph, written to knowledge/loadouts/ and reused while the graph is unchanged."
    )]
    async fn get_loadout(&self, Parameters(params): Parameters<GetLoadoutParams>) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                let repo = state.repo_root(&path)?.unwrap_or(path);
                let mut ctx = crate::commands::loadout::open(&state.settings, Some(&repo))?;
                let options = crate::commands::loadout::LoadoutOptions {
                    role: params.role.unwrap_or_else(|| agents_engine::knowledge::DEFAULT_ROLE.to_owned()),
                    context_limit: params.context_limit,
                    system_prompt_tokens: params.system_prompt_tokens.unwrap_or(0),
                    no_search: false,
                };
                let (report, text) =
                    agents_engine::knowledge::loadout::make(&mut ctx, &params.task, "task", None, &options, false)
                        .map_err(EngineError::from)?;
                let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
                result.structured_content =
                    Some(serde_json::to_value(&report).map_err(|e| ToolFailure::Failed(e.to_string()))?);
                Ok(result)
            })
            .await,
        )
    }
}

#[tool_router(router = knowledge_router, vis = "pub(crate)")]
impl ContextServer {
    #[tool(
        name = "record_session",
        description = "Record a task's AgentMemory (AKMS evidence): the document is validated (every problem is reported with its line and field) and written to knowledge/sessions/{task_id}.md (never overwriting one recorded with other content: that goes to {task_id}-<hash>.md). The knowledge graph itself changes only when a human runs `agents knowledge update`."
    )]
    async fn record_session(
        &self,
        Parameters(params): Parameters<RecordSessionParams>,
    ) -> Result<CallToolResult, McpError> {
        answer(
            self.blocking(move |state| {
                let path = state.allowed(params.path.as_deref())?;
                let repo = state.repo_root(&path)?;
                let knowledge = state.engine.knowledge();
                json_result(
                    &knowledge
                        .record_session(&path, repo, &params.task_id, &params.memory)
                        .map_err(EngineError::from)?,
                )
            })
            .await,
        )
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for ContextServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("agents", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Context for coding agents: call request_context with a query (and max_tokens) to get the \
                 code that matters for a task, packed under a token budget; query_history for decisions and \
                 commits; get_context_budget to size a request.",
            )
    }
}

/// The query options of a `request_context` call: the request as given,
/// the tool's own fields over the engine's defaults.
fn query_options(params: RequestContextParams, path: PathBuf) -> Result<QueryOptions, ToolFailure> {
    let mut options = QueryOptions::new(path);
    options.request = Some(params.request);
    options.model = params.model;
    options.under = params.under;
    options.plan = params.plan;
    if let Some(phase) = params.phase {
        options.phase = phase.parse().map_err(|e| ToolFailure::Invalid(format!("--phase: {e}")))?;
    }
    if let Some(role) = params.role {
        options.role = crate::commands::context::parse_role("--role", &role)?;
    }
    if let Some(format) = params.format {
        options.format = format.into();
    }
    Ok(options)
}

/// The structured part of a `request_context` result.
fn summary(run: &QueryRun) -> serde_json::Value {
    let context = &run.assembly.context;
    serde_json::json!({
        "payload_id": context.payload_id(),
        "context_hash": context.context_hash(),
        "fragments": context.fragments().len(),
        "rendered_tokens": run.assembly.rendered_tokens,
        "available_tokens": context.budget().available_tokens(),
        "is_within_budget": run.assembly.is_within_budget(),
        "strategies_used": context.strategies_used(),
        "ranked_files": run.assembly.ranked_files(),
        "candidates": run.assembly.candidates,
        "omitted": run.assembly.omitted,
    })
}

/// Opens what every session shares: the engine (preloaded), the live index
/// and the roots. With `watch`, every linked resource whose project
/// refreshes live is watched from the start.
/// `command` names the serving command in the advice of a refused path.
pub fn open(
    settings: Settings,
    watch: bool,
    allow_roots: &[PathBuf],
    command: &'static str,
) -> anyhow::Result<Arc<Shared>> {
    let root = std::env::current_dir().map_err(|e| UsageError(format!("cannot read the current directory: {e}")))?;
    open_in(settings, watch, root, allow_roots, command)
}

/// [`open`] with `root` as the working directory.
pub(crate) fn open_in(
    settings: Settings,
    watch: bool,
    root: PathBuf,
    allow_roots: &[PathBuf],
    command: &'static str,
) -> anyhow::Result<Arc<Shared>> {
    let roots = Roots::new(&root, allow_roots, command)?;
    let engine = Arc::new(settings.engine()?);
    engine.preload();
    let live = LiveIndex::new(engine.clone(), DEFAULT_DEBOUNCE, log_refresh);
    if watch {
        for resource in engine.auto_refresh_roots()? {
            if let Err(error) = live.watch(&resource) {
                tracing::warn!(root = %resource.display(), %error, "cannot watch for changes");
            }
        }
    }
    Ok(Arc::new(Shared { settings, engine, live, watch, root, roots }))
}

/// `agents mcp`: serves until the client closes stdin.
pub fn serve(settings: Settings, watch: bool, allow_roots: &[PathBuf]) -> anyhow::Result<()> {
    let server = ContextServer::new(open(settings, watch, allow_roots, "agents mcp")?);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    runtime.block_on(async move {
        let (transport, writer) = stdio::checked(tokio::io::stdin(), tokio::io::stdout());
        let service = server.serve(transport).await?;
        service.waiting().await?;
        // Every response is written before the process exits.
        let _ = writer.await;
        anyhow::Ok(())
    })
}

/// A background refresh, in the log (stderr).
fn log_refresh(refresh: &LiveRefresh) {
    let elapsed_ms = refresh.elapsed.as_millis() as u64;
    match &refresh.result {
        Ok((outcome, sync)) => {
            let report = outcome.index.report.clone().unwrap_or_default();
            tracing::info!(
                root = %refresh.root.display(),
                added = report.added,
                changed = report.changed,
                removed = report.removed,
                search_files = sync.files_indexed,
                elapsed_ms,
                "refreshed after a change"
            );
        }
        Err(error) => {
            tracing::warn!(root = %refresh.root.display(), %error, elapsed_ms, "refresh after a change failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_context_takes_the_crp_fields_and_its_own() {
        let params: RequestContextParams = serde_json::from_value(serde_json::json!({
            "query": "retry with backoff",
            "max_tokens": 2000,
            "depth": "SIGNATURES",
            "preferred_strategies": ["simple-keyword"],
            "path": "repo",
            "format": "json"
        }))
        .unwrap();
        let request = params.request.clone().build().unwrap();
        assert_eq!(request.query(), Some("retry with backoff"));
        assert_eq!(request.max_tokens(), Some(2000));
        assert_eq!(params.path.as_deref(), Some("repo"));
        assert!(matches!(params.format, Some(Format::Json)));
        // A value of the wrong type is rejected.
        let bad =
            serde_json::from_value::<RequestContextParams>(serde_json::json!({"query": "x", "max_tokens": "many"}));
        assert!(bad.is_err());
    }

    #[test]
    fn the_schema_lists_every_crp_field() {
        let schema = serde_json::to_value(schemars::schema_for!(RequestContextParams)).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        for field in [
            "query",
            "entities",
            "uko_types",
            "focus",
            "breadth",
            "depth",
            "depth_gradient",
            "temporal",
            "ranking",
            "max_tokens",
            "preferred_strategies",
            "required_backends",
            "priority",
            "purpose",
            "path",
            "model",
            "phase",
            "plan",
            "role",
            "format",
        ] {
            assert!(properties.contains_key(field), "{field} missing from {schema:#}");
        }
        assert_ne!(schema["additionalProperties"], serde_json::Value::Bool(false), "{schema:#}");
    }
}
