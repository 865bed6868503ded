//! The command line, as clap types. Commands live in `commands/`, one module each.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// A context and knowledge engine for coding agents.
///
/// Indexes repositories into a knowledge graph and answers context requests
/// inside a hard token budget. All state lives under one home directory
/// ($AGENTS_HOME, default ~/.local/share/agents); no server to start.
#[derive(Debug, Parser)]
#[command(name = "agents", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Home directory holding the database and configuration.
    #[arg(long, global = true, env = "AGENTS_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Configuration file to use instead of $AGENTS_HOME/config.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress bars or informational messages.
    #[arg(long, short, global = true)]
    pub quiet: bool,
    /// More log output on stderr (repeat for more).
    #[arg(long, short, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Get the context for a task: the code that matches it, packed under a token budget.
    ///
    /// Indexes PATH first (or refreshes it), brings its text and vector
    /// indexes up to date, and runs the ten-component assembly pipeline:
    /// strategies chosen for the request retrieve in parallel (falling back
    /// when one is unavailable), their candidates are deduplicated, scored and
    /// packed into the budget, each at the requested depth or, when it does not
    /// fit, a shallower one (4, 2, 0), then ordered by file and dependency.
    /// Prints Markdown (a preamble, then each fragment headed by path, line
    /// range and, short of the full source, depth), --format xml, or
    /// --format json (the spec's AssembledContext), each within the budget;
    /// --json prints the run's report; --explain shows what each component
    /// did.
    Query(Box<QueryArgs>),
    /// Index a directory (default: the current one), or refresh its index.
    ///
    /// Finds the resource that holds PATH, or creates a project named after
    /// the directory and links it; then indexes incrementally: only files
    /// whose size or modification time changed are read again.
    Index(IndexArgs),
    /// Show the index status of the resource holding PATH.
    Status(StatusArgs),
    /// Manage projects and their linked resources.
    #[command(subcommand)]
    Project(ProjectCommand),
    /// Inspect and initialise the configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// The code knowledge graph (UKO): nodes, depths, SPARQL, Turtle.
    #[command(subcommand)]
    Uko(UkoCommand),
    /// Plans and their decision records (what `--plan` and plan-decision-context read).
    #[command(subcommand)]
    Plan(PlanCommand),
    /// Context entries of the current project: files, symbols or notes kept in
    /// the hot, warm or cold tier, which `agents query` includes for the roles
    /// that see them.
    #[command(subcommand)]
    Context(ContextCommand),
    /// The retrieval strategies: enabled or not, what each needs, and whether it can
    /// run on PATH now (and why not).
    Strategies {
        /// Directory of the repository.
        #[arg(default_value = ".")]
        path: PathBuf,
    },
    /// Serve the context tools to a coding agent over the Model Context Protocol (stdio).
    ///
    /// Tools: request_context (a whole CRP request, packed under its token
    /// budget), query_history (plan decisions, commits, node revisions),
    /// get_context_budget, index_status and refresh_index. Relative paths
    /// resolve against the directory the server starts in. Register it with
    /// an MCP client as the command `agents mcp`; logs go to stderr.
    ///
    /// Linked resources whose project refreshes live (`agents project context
    /// set --auto-refresh`, the default) are watched: a change is indexed
    /// after a short pause, and requests answer from the current index
    /// without walking the tree.
    ///
    /// A request's `path` must lie under the directory the server starts in,
    /// an --allow-root or a linked resource (after `..` and symbolic links
    /// are resolved); the file-system root and the home folder are never
    /// indexed unless linked (started there, the server takes no working
    /// directory root). Anything else is a tool error naming the path.
    Mcp {
        /// Do not watch resources; refresh each one on every request instead.
        #[arg(long)]
        no_watch: bool,
        /// Also accept paths under DIR (repeatable).
        #[arg(long = "allow-root", value_name = "DIR")]
        allow_root: Vec<PathBuf>,
    },
    /// Serve the MCP tools of `agents mcp` over streamable HTTP, to many agents at once.
    ///
    /// The same tools as `agents mcp`, at http://ADDR:PORT/mcp, one MCP
    /// session per client over one shared engine (each session has its own
    /// context budget). Listens on 127.0.0.1:7391 unless --bind says
    /// otherwise (port 0: a free port, reported at start).
    ///
    /// Every request needs the header `Authorization: Bearer TOKEN`; a
    /// missing or wrong token gets 401. The token is made on first start
    /// (256 random bits) and kept in $AGENTS_HOME/serve/token (mode 0600) or
    /// --token-file; --print-token prints it. It is never logged. `GET
    /// /health` needs no token. SIGINT or SIGTERM stop the server: no new
    /// connections, requests in flight get 10 seconds to finish.
    ///
    /// Paths are confined as in `agents mcp` (the directory the server starts
    /// in, --allow-root, linked resources). With --json the start-up line on
    /// stdout is JSON: address, url, health, token_file (never the token).
    Serve(ServeArgs),
    /// Keep the index of PATH current: index it, then watch it and refresh
    /// after every change (a line per refresh), until interrupted.
    Watch {
        /// Directory of the repository.
        #[arg(default_value = ".")]
        path: PathBuf,
        /// Quiet time after the last change before refreshing, in milliseconds.
        #[arg(long, default_value_t = 300)]
        debounce_ms: u64,
    },
    /// Knowledge (AKMS): the repository's `knowledge/` folder over the global vault.
    ///
    /// Works on the repository holding the current directory (the nearest
    /// folder with a `knowledge/` folder, else with `.git`), or on --repo.
    /// The global vault, only ever read, is $AKMS_GLOBAL_VAULT, else the
    /// configuration's `global-vault`, else `global_vault` in
    /// knowledge/graph/propagation_config.yaml, else ~/.claude/akms/nodes.
    Knowledge(KnowledgeArgs),
    /// The reference orchestrator (AKMS spec 5.8): a plan's phases of tasks
    /// run by coding agents, with a human gate after every stage.
    ///
    /// INIT -> PLAN -> TASK BREAKDOWN -> SCAFFOLD -> EXECUTE -> REVIEW (per
    /// phase) -> FINALIZE. Each stage writes a checkpoint
    /// (knowledge/orchestrator/checkpoints/) and waits: on a terminal `run`,
    /// `approve` and `resume` ask what to do; otherwise (or with
    /// --no-interactive) they stop and the gate is answered with `approve`,
    /// `reject --reason` or `abort`. State lives in knowledge/orchestrator/.
    Orchestrate(OrchestrateArgs),
}

#[derive(Debug, Args)]
pub struct OrchestrateArgs {
    /// The repository to work on (default: the one holding the current directory).
    #[arg(long, global = true, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    /// Never ask at a gate, even on a terminal: stop there.
    #[arg(long, global = true)]
    pub no_interactive: bool,
    #[command(subcommand)]
    pub command: OrchestrateCommand,
}

#[derive(Debug, Subcommand)]
pub enum OrchestrateCommand {
    /// Start an orchestration of PLAN (JSON: plan_name, base_branch, phases
    /// of task records with scope and depends_on) and run PLAN up to its gate.
    Run {
        /// The plan file.
        plan: PathBuf,
    },
    /// Where the orchestration stands: stage, gate, every task's status.
    Status,
    /// Approve the waiting checkpoint; the next stage runs up to its gate.
    Approve,
    /// Reject the waiting checkpoint with a reason; the stage runs again on `resume`.
    Reject {
        /// Why (recorded in the state's history).
        #[arg(long)]
        reason: String,
    },
    /// Stop, keeping everything; a running stage stops after its current wave.
    Abort,
    /// Continue a stopped orchestration where it stood.
    Resume,
}

#[derive(Debug, Args)]
pub struct KnowledgeArgs {
    /// The repository to work on (default: the one holding the current directory).
    #[arg(long, global = true, value_name = "PATH")]
    pub repo: Option<PathBuf>,
    #[command(subcommand)]
    pub command: KnowledgeCommand,
}

#[derive(Debug, Subcommand)]
pub enum KnowledgeCommand {
    /// Create knowledge/ (local-nodes, code-mirror, sessions, loadouts, graph)
    /// and a commented default graph/propagation_config.yaml; existing files are kept.
    Init,
    /// Check every source against the v2 schema and report every problem at once.
    ///
    /// Without PATH: the whole tree (global vault, local nodes, code mirror,
    /// overlay, config), cross-file checks included. With PATHs: those files
    /// and folders, each by where it lies. Exits 2 when there is an error.
    Validate {
        /// Files or folders to check.
        paths: Vec<PathBuf>,
    },
    /// Compile the sources into knowledge/graph/graph.json (NetworkX node-link JSON).
    ///
    /// The five steps of the spec: global nodes, local nodes (a global node
    /// wins an id collision), code-mirror nodes, the overlay, serialisation
    /// with sorted keys. Identical sources give identical bytes; on any error
    /// graph.json is left as it was. The nodes' text is then indexed for
    /// `agents knowledge search` (in $AGENTS_HOME/search/knowledge/).
    Build,
    /// The subgraph for a task (spec 5.3): seed nodes by tag, the ego graph
    /// around them along the role's edge types, loadable statuses, preferred
    /// and excluded domains, confidence floors, ranked by the role's formula and
    /// capped, pitfall nodes injected. Reads knowledge/graph/graph.json.
    Query {
        /// Seed tags (comma-separated or repeated).
        #[arg(long, value_delimiter = ',', value_name = "TAG")]
        tags: Vec<String>,
        /// The agent role whose profile applies (query_roles in propagation_config.yaml).
        #[arg(long, default_value = agents_engine::knowledge::DEFAULT_ROLE)]
        role: String,
        /// A task record: its akms_tags seed the query (derived as by `tags` when
        /// empty, without writing), joined with --tags.
        #[arg(long, value_name = "FILE.json")]
        task: Option<PathBuf>,
    },
    /// Search the knowledge nodes' text (bodies and content_ref files, as the
    /// last `build` indexed them) and print the best passages, optionally only
    /// within a node set (`--node`, repeatable).
    Search {
        /// What to look for.
        text: String,
        /// Only these nodes (repeatable).
        #[arg(long = "node", value_name = "ID")]
        nodes: Vec<String>,
        /// Most passages to print.
        #[arg(long, default_value_t = 5)]
        limit: usize,
    },
    /// Derive a task's `akms_tags` when its author gave none (spec 4.5): from
    /// its `scope` (nodes whose content_ref, or whose code mirror's
    /// source_file, is a scope path) and its title, objective and steps (node
    /// titles as whole words, node tags as substrings). No LLM. The tags are
    /// written back to the task file (atomically) and, with
    /// `tag_derivation.log_derived_tags`, logged with where each came from in
    /// knowledge/logs/tag-derivation.jsonl; a task that has tags keeps them.
    Tags {
        /// The task record (JSON with task_id, scope, akms_tags, akms_schema, ...).
        #[arg(long, value_name = "FILE.json")]
        task: PathBuf,
        /// Print what would be derived; write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Migrate the repository's knowledge sources to the current schema (spec 8.3).
    ///
    /// v1 -> v2 moves the experiential fields (activations, last_activated,
    /// activated_by_tasks, session_refs) of local and code-mirror nodes into
    /// knowledge/graph/local_state.yaml and stamps `akms_schema: v2`, keeping
    /// every other line of the node. Idempotent; plans everything before
    /// writing anything, and writes each file atomically. Global-vault nodes
    /// are never written: old ones are reported for migration upstream.
    Migrate {
        /// Print the plan (files, fields moved); write nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Fold evidence into the graph (spec 5.5): AgentMemory and PCD files
    /// under knowledge/, validated first (nothing is written when one is
    /// malformed), then confidence decay, propagation and recovery, pitfall
    /// edges, session nodes and deduplicated tentative nodes in local-nodes/;
    /// graph.json is recompiled. A document already applied is skipped.
    Update {
        /// AgentMemory or PCD files (knowledge/sessions/*.md).
        #[arg(required = true)]
        documents: Vec<PathBuf>,
    },
    /// The health report (spec 5.7): degraded and flagged nodes, tentative
    /// nodes, dedup events, drift, id collisions, orphaned and stale nodes,
    /// blocked tasks, orphaned overlay entries, and a table of those nodes.
    Status {
        /// Report the events of this phase (default: the latest updated).
        #[arg(long)]
        phase: Option<i64>,
    },
    /// The review report of a phase (FR-R01): new tentative nodes, dedup
    /// events, degraded nodes, new pitfalls, blocked tasks, id collisions,
    /// with confidence (default and local) and status per node.
    Review {
        /// The phase to review (default: the latest updated).
        #[arg(long)]
        phase: Option<i64>,
    },
    /// Promote a tentative local node to established (FR-R03); moving it to
    /// the global vault stays a manual step.
    Promote {
        /// The node id.
        id: String,
    },
    /// Mark a node draft so no loadout includes it, deleting nothing (FR-R04).
    Suppress {
        /// The node id.
        id: String,
    },
    /// Undo a suppress: the node gets back the status it had (journaled and
    /// locked like suppress).
    Restore {
        /// The node id.
        id: String,
    },
    /// Generate the code mirror (spec 4.7, 5.6): one knowledge/code-mirror/<file>.md
    /// per changed source file, with each function's and class's docstring and
    /// full source, and the structural docstring-drift check (drift sets the
    /// mirror node to `status: draft` and is printed).
    ///
    /// Files: those changed against --base (committed, uncommitted and untracked
    /// changes since the merge base; default `orchestrator.base_branch` of
    /// propagation_config.yaml, else main), or exactly --files (repository-relative,
    /// e.g. a Phase Completion Document's files_modified). A file that is gone
    /// loses its mirror. Deterministic; no model is called.
    Mirror {
        /// The branch to diff against.
        #[arg(long, value_name = "BRANCH", conflicts_with = "files")]
        base: Option<String>,
        /// Mirror these files instead of the changed ones (relative to the
        /// repository, or absolute inside it).
        #[arg(long, num_args = 1.., value_name = "FILE")]
        files: Vec<String>,
        /// The phase, recorded as generated_by_phase.
        #[arg(long)]
        phase: Option<u32>,
    },
    /// Generate a task's loadout (spec 4.6, 5.4) in knowledge/loadouts/: the
    /// role's subgraph for the task's tags, routing or full mode by the
    /// available context, passages found within the node set, pitfalls,
    /// session history, reading order. Reused while the graph is unchanged;
    /// writes `loadout_path` back into the task record. Without the search
    /// index (`agents knowledge build`) or with --no-search: the degraded form.
    /// `$SOURCE_DATE_EPOCH` fixes generated_at.
    Loadout {
        /// The task record (JSON).
        #[arg(long, value_name = "FILE.json", required_unless_present = "phase")]
        task: Option<PathBuf>,
        /// A phase plan: `{"phase": N, "tasks": ["task.json", ...]}`; one loadout per task.
        #[arg(long, value_name = "PLAN.json", conflicts_with = "task")]
        phase: Option<PathBuf>,
        /// The agent role (query_roles in propagation_config.yaml).
        #[arg(long, default_value = agents_engine::knowledge::DEFAULT_ROLE)]
        role: String,
        /// The model's context window, in tokens; without it the mode is
        /// `loadout.mode_selection.default_mode`.
        #[arg(long, value_name = "N")]
        context_limit: Option<u64>,
        /// Tokens the agent's system prompt takes.
        #[arg(long, default_value_t = 0, value_name = "N")]
        system_prompt_tokens: u64,
        /// Leave the search layer out: the degraded loadout (NFR-R05).
        #[arg(long)]
        no_search: bool,
        /// Regenerate even when the existing loadout is current.
        #[arg(long)]
        force: bool,
    },
    /// Regenerate the loadouts whose graph_version is no longer the graph's.
    ReEvaluate,
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Create a plan, optionally under a parent plan.
    Create {
        title: String,
        /// The parent plan's id.
        #[arg(long)]
        parent: Option<String>,
        /// The plan's phase, which picks its project's context view: default,
        /// strategize, execute or apply.
        #[arg(long, default_value = "default", value_name = "PHASE")]
        phase: String,
        /// The project whose context policy scopes the plan.
        #[arg(long, value_name = "NAME")]
        project: Option<String>,
    },
    /// Record a decision on a plan.
    Decide {
        plan: String,
        /// One line: what was decided.
        title: String,
        /// Why, and what it rules out.
        #[arg(long, default_value = "")]
        body: String,
        /// Context tier of the record: hot, warm or cold.
        #[arg(long, default_value = "warm")]
        tier: String,
    },
    /// A plan, its ancestors and every decision on them, nearest first.
    Show { plan: String },
    /// Every plan, oldest first.
    List,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// List the project's entries, hottest tier first.
    List {
        #[command(flatten)]
        scope: ProjectScope,
        /// Only this tier: hot, warm or cold.
        #[arg(long, value_name = "TIER")]
        tier: Option<String>,
        /// Only what this role sees: strategist, executor or reviewer.
        #[arg(long, value_name = "ROLE")]
        role: Option<String>,
    },
    /// Add an entry: a file (--file), a symbol of the indexed resource
    /// (--symbol, rendered at --depth), or text read from stdin.
    Add(Box<ContextAddArgs>),
    /// Show one entry with its content (records an access).
    Show {
        /// The entry's id.
        id: String,
    },
    /// Remove every entry of the project.
    Clear {
        #[command(flatten)]
        scope: ProjectScope,
    },
    /// Move an entry one tier up (cold -> warm -> hot).
    Promote {
        /// The entry's id.
        id: String,
    },
    /// Move an entry one tier down (hot -> warm -> cold).
    Demote {
        /// The entry's id.
        id: String,
        /// Replace the content with an extractive summary (a quarter of its tokens).
        #[arg(long)]
        summarize: bool,
    },
}

/// Which project a context command works on.
#[derive(Debug, Args)]
pub struct ProjectScope {
    /// The project (default: the project of the resource holding the current directory).
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

#[derive(Debug, Args)]
pub struct ContextAddArgs {
    #[command(flatten)]
    pub scope: ProjectScope,
    /// Add this file's content.
    #[arg(long, value_name = "PATH", conflicts_with = "symbol")]
    pub file: Option<PathBuf>,
    /// Add this symbol of the project's indexed resource (`App.run`, `src/app.py#App.run`).
    #[arg(long, value_name = "NAME")]
    pub symbol: Option<String>,
    /// Detail depth of a --symbol: 0-9 or a named level.
    #[arg(long, default_value = "9", value_name = "DEPTH", requires = "symbol")]
    pub depth: String,
    /// The tier to place it in: hot, warm or cold.
    #[arg(long, default_value = "warm", value_name = "TIER")]
    pub tier: String,
    /// Only these roles may see it (repeatable; default: every role that sees the tier).
    #[arg(long = "role-visibility", value_name = "ROLE")]
    pub role_visibility: Vec<String>,
    /// A short label shown in listings.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum UkoCommand {
    /// Render a file or symbol at a detail depth (refreshing the index first).
    ///
    /// TARGET is a file path (`src/app.py`), `path#Symbol` (`src/app.py#App.run`),
    /// a symbol path (`App.run`) or a name (`run`).
    Show {
        target: String,
        /// Detail depth 0-9, or a named level (MODULE_LISTING, SIGNATURES, FULL_SOURCE, ...).
        #[arg(long, short, default_value = "4")]
        depth: String,
        /// Also list every revision of the node (validFrom / validUntil).
        #[arg(long)]
        history: bool,
        /// A directory inside the indexed resource.
        #[arg(long, default_value = ".")]
        path: PathBuf,
    },
    /// Print the ontology's class tree.
    Types,
    /// Counts of the code graph: nodes by kind, references and how many
    /// resolved, per language (refreshing the index first).
    Stats {
        #[arg(long, default_value = ".")]
        path: PathBuf,
    },
    /// Run a SPARQL query over the code graph (UKO prefixes are predeclared).
    Query {
        sparql: String,
        #[arg(long, default_value = ".")]
        path: PathBuf,
    },
    /// Export the code graph (and the ontology) as Turtle.
    Export {
        #[arg(long, default_value = "ttl", value_parser = ["ttl"])]
        format: String,
        /// Write to this file (atomically) instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
        #[arg(long, default_value = ".")]
        path: PathBuf,
    },
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    /// What the context is for, in words (with --request: the PATH instead).
    #[arg(required_unless_present = "request")]
    pub text: Option<String>,
    /// Directory of the repository (indexed or refreshed first).
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// A whole CRP request as JSON (the spec's ContextRequest fields); flags given
    /// too override it.
    #[arg(long, value_name = "FILE.json")]
    pub request: Option<PathBuf>,
    /// Token budget for the whole output (default 8000, or the model's window
    /// less the response reserve when --model is given).
    #[arg(long, value_name = "TOKENS")]
    pub max_tokens: Option<u64>,
    /// Size the budget from this model's context window ([models] in the config).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// Detail depth 0-9 or a named level (SIGNATURES, FULL_SOURCE, ...); default 9
    /// (full source for the best matches, less further out).
    #[arg(long, short)]
    pub depth: Option<String>,
    /// Candidates kept from each strategy (default: 50 up to an 8,000-token
    /// budget, then one per 160 tokens of budget, at most 1,000).
    #[arg(long)]
    pub candidates: Option<usize>,
    /// Only code under this path prefix (repeatable).
    #[arg(long = "under", value_name = "PREFIX")]
    pub under: Vec<String>,
    /// Only nodes of this UKO type: function, class, method, module, ... (repeatable).
    #[arg(long = "type", value_name = "KIND")]
    pub kinds: Vec<String>,
    /// Preferred strategy (repeatable): simple-keyword, semantic-embedding,
    /// breadth-depth-navigator, arce, temporal-archaeology, plan-decision-context.
    /// Without one the selector runs the best for the request.
    #[arg(long, value_name = "NAME")]
    pub strategy: Vec<String>,
    /// A backend the request needs (repeatable): text, vector, graph, temporal.
    #[arg(long = "require-backend", value_name = "KIND")]
    pub require_backend: Vec<String>,
    /// Start from this node: a file path, a `uko://` URI or a symbol name (repeatable).
    #[arg(long, value_name = "NODE")]
    pub focus: Vec<String>,
    /// A named entity the context must cover (repeatable).
    #[arg(long = "entity", value_name = "NAME")]
    pub entities: Vec<String>,
    /// Graph hops from the focus.
    #[arg(long)]
    pub breadth: Option<u32>,
    /// Give every node the same depth instead of more detail near the focus.
    #[arg(long)]
    pub no_depth_gradient: bool,
    /// History to consider: current, recent or all.
    #[arg(long)]
    pub temporal: Option<String>,
    /// Ranking strategy: relevance (default), recency (newest change first) or
    /// tiered (hot, warm, cold). It decides what survives a tight budget and
    /// the order files come in.
    #[arg(long, value_name = "STRATEGY")]
    pub ranking: Option<String>,
    /// 0.0 = background, 1.0 = critical.
    #[arg(long)]
    pub priority: Option<f64>,
    /// Why the context is needed.
    #[arg(long)]
    pub purpose: Option<String>,
    /// Role whose tiers the project's context entries come from: strategist
    /// (hot, warm, cold), executor (hot, warm) or reviewer (hot).
    #[arg(long, default_value = agents_engine::query::DEFAULT_ROLE.as_str(), value_name = "ROLE")]
    pub role: String,
    /// Plan phase whose policy view applies: default, strategize, execute, apply.
    #[arg(long, default_value = agents_engine::query::DEFAULT_PHASE.as_str())]
    pub phase: String,
    /// The plan the context is for: its ancestors' decisions become retrievable,
    /// and its parent's context is inherited as a skeleton.
    #[arg(long, value_name = "PLAN_ID")]
    pub plan: Option<String>,
    /// Output: md (Markdown), json (the AssembledContext on one line) or xml;
    /// the budget holds for the text in that format. --json prints the run's
    /// report instead (the context and how it was made).
    #[arg(long, default_value = agents_engine::query::DEFAULT_FORMAT.as_str(), value_parser = ["md", "json", "xml"])]
    pub format: String,
    /// Also print (on stderr) what each of the ten pipeline components did.
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Directory to index.
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Re-read and re-hash every file instead of refreshing incrementally.
    #[arg(long)]
    pub full: bool,
    /// Wait for another indexer of the same resource instead of refusing.
    #[arg(long)]
    pub wait: bool,
    /// Only the code graph: leave the text and vector indexes for the first query.
    #[arg(long)]
    pub no_search: bool,
    #[command(flatten)]
    pub filters: IndexFilterArgs,
}

/// Per-run overrides of the `[index]` configuration.
#[derive(Debug, Args, Clone, Default)]
pub struct IndexFilterArgs {
    /// Only index files matching this glob (repeatable; adds to the configuration's).
    #[arg(long = "include", value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob (repeatable; exclusions win).
    #[arg(long = "exclude", value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Skip files larger than this many bytes.
    #[arg(long, value_name = "BYTES")]
    pub max_file_size: Option<u64>,
    /// Stop adding files once this many bytes are indexed.
    #[arg(long, value_name = "BYTES")]
    pub max_total_size: Option<u64>,
    /// Also index hidden files and directories.
    #[arg(long)]
    pub hidden: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A directory inside an indexed resource.
    #[arg(default_value = ".")]
    pub path: PathBuf,
}

#[derive(Debug, Subcommand)]
pub enum ProjectCommand {
    /// Create a project.
    Create {
        /// Project name: letters, digits, `.`, `_`, `-`.
        name: String,
    },
    /// List projects and their resources.
    List,
    /// Link a directory to a project and index it.
    LinkResource {
        project: String,
        path: PathBuf,
        #[command(flatten)]
        filters: IndexFilterArgs,
    },
    /// Unlink a resource (by path or resource id) from a project.
    ///
    /// A resource that no other project links is deleted with its index.
    UnlinkResource {
        project: String,
        /// The resource's directory or its ULID.
        resource: String,
    },
    /// A project's context policy (a view per plan phase) and ACMS pipeline settings.
    #[command(subcommand)]
    Context(ProjectContextCommand),
}

#[derive(Debug, Subcommand)]
pub enum ProjectContextCommand {
    /// Set a phase's context view and the project's ACMS pipeline settings.
    ///
    /// Any view option replaces the whole view of --view's phase (phases
    /// without a view of their own inherit along default -> strategize ->
    /// execute -> apply). Settings not given keep their stored values. Nothing
    /// is written when a value is invalid.
    Set(Box<ContextSetArgs>),
    /// Show each phase's resolved view, the phase it comes from, and the settings.
    Show {
        /// The project's name.
        project: String,
        /// Only this phase: default, strategize, execute or apply.
        #[arg(long, value_name = "PHASE")]
        view: Option<String>,
    },
    /// Tier metrics, the project's entries by tier, kind and depth, and what each role sees.
    Inspect {
        /// The project's name.
        project: String,
    },
    /// Dry run: assemble context for TEXT over the project's first resource with
    /// its stored policy (--phase's view) and settings, and print the
    /// AssembledContext summary and the pipeline trace instead of the content.
    Simulate {
        /// The project's name.
        project: String,
        #[command(flatten)]
        query: Box<QueryArgs>,
    },
}

#[derive(Debug, Args)]
pub struct ContextSetArgs {
    /// The project's name.
    pub project: String,
    /// The phase whose view the view options set: default, strategize, execute or apply.
    #[arg(long, default_value = "default", value_name = "PHASE")]
    pub view: String,
    /// Resource name or glob to include (repeatable; none = all).
    #[arg(long = "include-resource", value_name = "PATTERN")]
    pub include_resources: Vec<String>,
    /// Resource name or glob to exclude (repeatable; exclusions win).
    #[arg(long = "exclude-resource", value_name = "PATTERN")]
    pub exclude_resources: Vec<String>,
    /// File path glob to include, gitignore-style (repeatable; none = all).
    #[arg(long = "include-path", value_name = "GLOB")]
    pub include_paths: Vec<String>,
    /// File path glob to exclude, gitignore-style (repeatable; exclusions win).
    #[arg(long = "exclude-path", value_name = "GLOB")]
    pub exclude_paths: Vec<String>,
    /// Largest file in bytes (default: no limit).
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub max_file_size: Option<i64>,
    /// Largest total context in bytes (default: no limit).
    #[arg(long, value_name = "BYTES", allow_negative_numbers = true)]
    pub max_total_size: Option<i64>,
    /// Remove the phase's own view, so it inherits again.
    #[arg(long, conflicts_with_all = [
        "include_resources", "exclude_resources", "include_paths", "exclude_paths", "max_file_size", "max_total_size",
    ])]
    pub clear_view: bool,
    /// Token capacity of the hot tier [default: 8000].
    #[arg(long, value_name = "TOKENS", allow_negative_numbers = true)]
    pub hot_max_tokens: Option<i64>,
    /// Decision capacity of the warm tier [default: 500].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub warm_max_decisions: Option<i64>,
    /// Decision capacity of the cold tier [default: 5000].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub cold_max_decisions: Option<i64>,
    /// Preferred strategy, best first (repeatable; replaces the stored list): simple-keyword,
    /// semantic-embedding, breadth-depth-navigator, arce, temporal-archaeology,
    /// plan-decision-context.
    #[arg(long = "strategy", value_name = "NAME")]
    pub strategies: Vec<String>,
    /// Graph hops from the focus [default: 2].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub default_breadth: Option<i64>,
    /// Detail depth 0-9 or a named level (SIGNATURES, ...) [default: 3].
    #[arg(long, value_name = "DEPTH")]
    pub default_depth: Option<String>,
    /// Share of a child plan's budget for its parent's skeleton, 0.0-1.0 [default: 0.2].
    #[arg(long, value_name = "RATIO", allow_negative_numbers = true)]
    pub skeleton_ratio: Option<f64>,
    /// History to consider: current, recent or all [default: current].
    #[arg(long, value_name = "SCOPE")]
    pub temporal_scope: Option<String>,
    /// Refresh context when a resource changes [default].
    #[arg(long, overrides_with = "no_auto_refresh")]
    pub auto_refresh: bool,
    /// Do not refresh context when a resource changes.
    #[arg(long, overrides_with = "auto_refresh")]
    pub no_auto_refresh: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the effective configuration and where each value came from.
    Show,
    /// Print the path of the configuration file in use.
    Path,
    /// Write a commented default configuration file (refuses to overwrite).
    Init {
        /// Overwrite an existing file.
        #[arg(long)]
        force: bool,
    },
}

/// Where `agents serve` listens unless `--bind` says otherwise.
pub const DEFAULT_BIND: &str = "127.0.0.1:7391";

/// `agents serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address and port to listen on (an IP address; port 0 picks a free one).
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_BIND)]
    pub bind: std::net::SocketAddr,
    /// The bearer token's file, made on first start (default: $AGENTS_HOME/serve/token).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Print the bearer token (making it on first use) and exit, to configure a client.
    #[arg(long)]
    pub print_token: bool,
    /// Do not watch resources; refresh each one on every request instead.
    #[arg(long)]
    pub no_watch: bool,
    /// Also accept paths under DIR (repeatable).
    #[arg(long = "allow-root", value_name = "DIR")]
    pub allow_root: Vec<PathBuf>,
}
