//! The graph update (spec 5.5): the only path by which experience enters the
//! graph. Validated evidence ([`crate::evidence`]) mutates the local overlay
//! and creates or extends tentative nodes in `knowledge/local-nodes/`; then
//! `graph.json` is recompiled. The global vault is never written.
//!
//! Mutation rules (5.5.1), per document, in one cycle:
//! 1. hits: every `nodes_used` entry with coverage `missing-detail` or
//!    `outdated`, in document order, decays the node and propagates to its
//!    predecessors (5.5.2); several hits compound;
//! 2. recovery: every entry with `useful: true` boosts the node, counts an
//!    activation and sets `last_activated` (the document's day); every used
//!    node records the task in `activated_by_tasks` and the document in
//!    `session_refs` (most recent `max_session_refs` kept);
//! 3. pitfalls: an edge `pitfall` from the node to the document's session
//!    node (weight by severity, `graph.pitfall_weight`: by default high 1.0,
//!    medium 0.6, low 0.3; the
//!    descriptions of one document for one node share its note); a pitfall
//!    with `node_ref: null` is logged only;
//! 4. new knowledge: the deterministic token-Jaccard dedup of 5.5.3, then an
//!    append to the best local tentative match or a new tentative node file;
//! 5. the session node is registered in `session_nodes`.
//!
//! Nodes with `auto_update: true` (code-mirror and session nodes) are skipped
//! entirely: no hit, boost, activation or neighbour effect (FR-U10).
//!
//! Idempotence (NFR-D03): a document is applied once. "Already applied" is
//! decided by its content: a registered session node records the SHA-256 of
//! its document (`content_hash`), and a document with the hash of one is
//! skipped, whatever its file or task id (a registry written before hashes
//! were recorded counts a node with the document's own id and file as its
//! application). A document not applied yet gets its own session node:
//! `session-<task id>` (`session-phase-<N>` for a PCD) when that id is free,
//! else that id with a suffix of its content hash (`-<8 hex>`, longer on a
//! clash), so a second plan reusing a task id gets a second session node and
//! an existing session node is never pointed at another file. Replaying
//! evidence changes nothing.
//! Confidences are rounded to six decimals at the end of each document's
//! cycle, so one run over several documents equals one run per document.
//!
//! Everything is planned in memory first: all documents validated, every id
//! they name resolved against the compiled graph, every file to write
//! rendered and the result compiled in memory (the node files parsed once
//! for both compilations). Only then are files written, each atomically,
//! new nodes and the log first, the overlay (the "applied" marker) next,
//! `graph.json` last, all through a journal ([`crate::lock`]): a process
//! killed part-way leaves the journal, which the next writer replays, so an
//! update lands whole or not at all; if a write fails, the previous bytes
//! are restored. What
//! changed is appended to `knowledge/logs/update.jsonl`, one JSON object per
//! line, for `agents knowledge review`.

use crate::graph::CompiledGraph;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::compile::{CompileOptions, Compiled, Sources, compile, read_config, read_local_state};
use crate::config::PropagationConfig;
use crate::diag::{AkmsError, Diagnostic, ProblemKind};
use crate::evidence::{Evidence, parse_evidence_with};
use crate::overlay::{LocalState, SessionNode, parse_local_state, render_local_state};
use crate::schema::{Edge, EdgeType, Layer, parse_node};
use crate::vault::Layout;

/// The propagation parameters of 5.5.2 (from `propagation_config.yaml`).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// α, the multiplicative decay of a hit.
    pub local_decay: f64,
    /// λ, the neighbour-propagation strength.
    pub propagation_factor: f64,
    /// β, the additive recovery.
    pub activation_boost: f64,
    pub min_confidence: f64,
    pub max_confidence: f64,
    pub hop_limit: u32,
    /// μₑ by edge type.
    pub multipliers: BTreeMap<EdgeType, f64>,
}

impl Params {
    pub fn from_config(config: &PropagationConfig) -> Params {
        let c = &config.confidence;
        Params {
            local_decay: c.local_decay,
            propagation_factor: c.propagation_factor,
            activation_boost: c.activation_boost,
            min_confidence: c.min_confidence,
            max_confidence: c.max_confidence,
            hop_limit: c.hop_limit,
            multipliers: config.edge_type_propagation.clone(),
        }
    }

    /// The node's lower bound: its `confidence_floor`, else `min_confidence`.
    pub fn floor(&self, floor: Option<f64>) -> f64 {
        floor.unwrap_or(self.min_confidence)
    }

    /// Clamps to [floor or min_confidence, max_confidence] (FR-U07); a floor
    /// above max_confidence wins (a node never falls below its floor).
    pub fn clamp(&self, c: f64, floor: Option<f64>) -> f64 {
        c.min(self.max_confidence).max(self.floor(floor))
    }

    /// A direct hit: c ← max(c·α, c_min), clamped.
    pub fn hit(&self, c: f64, floor: Option<f64>) -> f64 {
        self.clamp(c * self.local_decay, floor)
    }

    /// A neighbour of a hit of magnitude δ along an edge of multiplier μ and
    /// weight w: c ← max(c − δ·λ·μ·w, c_min), clamped.
    pub fn neighbour(&self, c: f64, delta: f64, multiplier: f64, weight: f64, floor: Option<f64>) -> f64 {
        self.clamp(c - delta * self.propagation_factor * multiplier * weight, floor)
    }

    /// Recovery: c ← min(c + β, c_max), clamped.
    pub fn recover(&self, c: f64, floor: Option<f64>) -> f64 {
        self.clamp(c + self.activation_boost, floor)
    }
}

/// Rounds a confidence to six decimals (what the overlay stores).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// What the update needs of one compiled node.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewNode {
    pub confidence: f64,
    pub floor: Option<f64>,
    pub auto_update: bool,
    pub domain: String,
    pub status: String,
    pub title: String,
    /// `node_origin`: global, local or code-mirror.
    pub origin: String,
    pub activations: u64,
    pub last_activated: Option<String>,
    pub activated_by_tasks: Vec<String>,
    pub session_refs: Vec<String>,
}

/// An edge into a node, seen from its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Predecessor {
    pub source: String,
    pub kind: EdgeType,
    pub weight: f64,
}

/// The compiled graph as the update sees it: nodes by id and, per node, the
/// edges pointing at it (sorted by source).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphView {
    pub nodes: BTreeMap<String, ViewNode>,
    pub predecessors: BTreeMap<String, Vec<Predecessor>>,
}

impl GraphView {
    /// From the compiled graph.
    pub fn from_graph(graph: &CompiledGraph) -> GraphView {
        let mut view = GraphView::default();
        for node in graph.nodes() {
            let text = |key: &str| node.text(key).unwrap_or_default().to_owned();
            let strings = |key: &str| node.strings(key).map(str::to_owned).collect::<Vec<_>>();
            view.nodes.insert(
                node.id().to_owned(),
                ViewNode {
                    confidence: node.number("confidence").unwrap_or(0.0),
                    floor: node.number("confidence_floor"),
                    auto_update: node.value("auto_update").and_then(Json::as_bool) == Some(true),
                    domain: text("domain"),
                    status: text("status"),
                    title: text("title"),
                    origin: text("node_origin"),
                    activations: node.value("activations").and_then(Json::as_u64).unwrap_or(0),
                    last_activated: node.text("last_activated").map(str::to_owned),
                    activated_by_tasks: strings("activated_by_tasks"),
                    session_refs: strings("session_refs"),
                },
            );
        }
        for link in graph.links() {
            let Some(kind) = EdgeType::ALL.into_iter().find(|t| t.as_str() == link.kind()) else { continue };
            view.predecessors.entry(link.target().to_owned()).or_default().push(Predecessor {
                source: link.source().to_owned(),
                kind,
                weight: link.weight().unwrap_or(0.0),
            });
        }
        for preds in view.predecessors.values_mut() {
            preds.sort_by(|a, b| a.source.cmp(&b.source).then(a.kind.cmp(&b.kind)));
        }
        view
    }
}

/// One change the update made, as logged in `knowledge/logs/update.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Change {
    /// A direct hit (coverage `missing-detail` or `outdated`); the node is
    /// flagged for review.
    Hit { node: String, before: f64, after: f64, coverage: String },
    /// A neighbour of a hit, `hops` edges upstream of `from`.
    Propagated { node: String, before: f64, after: f64, from: String, hops: u32 },
    /// Recovery of a node found useful (one activation).
    Boost { node: String, before: f64, after: f64 },
    /// A node with `auto_update: true`, left alone.
    Skipped { node: String, reason: String },
    /// A pitfall; `node` is `None` for one tied to no node.
    Pitfall { node: Option<String>, description: String, severity: String },
    /// A new tentative node file.
    NewNode { node: String, file: String, domain: String },
    /// A near-duplicate (5.5.3): `into` is the node that received the draft
    /// (the match when it is local, else a new local node).
    Dedup { suggested_id: String, matched: String, matched_origin: String, score: f64, action: String, into: String },
    /// Knowledge a task missed (`nodes_missing`).
    Missing { suggested_id: String, domain: String, priority: String, description: String },
}

impl Change {
    /// The node the change concerns, when there is one.
    pub fn node(&self) -> Option<&str> {
        match self {
            Change::Hit { node, .. }
            | Change::Propagated { node, .. }
            | Change::Boost { node, .. }
            | Change::Skipped { node, .. }
            | Change::NewNode { node, .. } => Some(node),
            Change::Pitfall { node, .. } => node.as_deref(),
            Change::Dedup { into, .. } => Some(into),
            Change::Missing { suggested_id, .. } => Some(suggested_id),
        }
    }
}

/// One line of the update log: a change and the document it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub session: String,
    /// The task id, or `phase-<N>`.
    pub task: String,
    pub phase: i64,
    pub date: String,
    /// The document, relative to `knowledge/`.
    pub document: String,
    #[serde(flatten)]
    pub change: Change,
}

/// The update log's path.
pub fn update_log(layout: &Layout) -> PathBuf {
    layout.knowledge().join("logs").join("update.jsonl")
}

/// Reads the update log; a line that does not parse is skipped with a warning.
pub fn read_log(layout: &Layout) -> Result<Vec<LogEntry>, AkmsError> {
    let path = update_log(layout);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(AkmsError::Io { path, source }),
    };
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter_map(|(i, line)| match serde_json::from_str(line) {
            Ok(entry) => Some(entry),
            Err(e) => {
                tracing::warn!(line = i + 1, %e, "unreadable update-log line skipped");
                None
            }
        })
        .collect())
}

/// Applies a direct hit on `id` and propagates it upstream (5.5.2): each
/// predecessor within `hop_limit` hops moves once per hit, at its shortest
/// distance (ties by source id), by the magnitude of the change of the node
/// it points at times λ·μₑ·w; edges whose μₑ·w is zero do not propagate, and
/// nodes with `auto_update: true` are neither changed nor passed through.
/// Updates the view's confidences and returns the changes.
pub fn hit_and_propagate(view: &mut GraphView, id: &str, coverage: &str, params: &Params) -> Vec<Change> {
    let mut changes = Vec::new();
    let Some(node) = view.nodes.get_mut(id) else { return changes };
    if node.auto_update {
        return changes;
    }
    let before = node.confidence;
    let after = params.hit(before, node.floor);
    node.confidence = after;
    changes.push(Change::Hit { node: id.to_owned(), before, after, coverage: coverage.to_owned() });
    let mut visited: BTreeSet<String> = BTreeSet::from([id.to_owned()]);
    let mut frontier: Vec<(String, f64)> = vec![(id.to_owned(), (before - after).max(0.0))];
    for hops in 1..=params.hop_limit {
        let mut next = Vec::new();
        for (target, delta) in &frontier {
            if *delta <= 0.0 {
                continue;
            }
            let preds = view.predecessors.get(target).cloned().unwrap_or_default();
            for pred in preds {
                let multiplier = params.multipliers.get(&pred.kind).copied().unwrap_or(0.0);
                if multiplier * pred.weight <= 0.0 || visited.contains(&pred.source) {
                    continue;
                }
                let Some(node) = view.nodes.get_mut(&pred.source) else { continue };
                if node.auto_update {
                    continue;
                }
                visited.insert(pred.source.clone());
                let before = node.confidence;
                let after = params.neighbour(before, *delta, multiplier, pred.weight, node.floor);
                node.confidence = after;
                changes.push(Change::Propagated {
                    node: pred.source.clone(),
                    before,
                    after,
                    from: id.to_owned(),
                    hops,
                });
                next.push((pred.source.clone(), (before - after).max(0.0)));
            }
        }
        frontier = next;
    }
    changes
}

/// Token-Jaccard similarity (5.5.3): lower-case runs of letters and digits
/// as sets, |A ∩ B| / |A ∪ B|; 0 when both are empty.
pub fn jaccard(a: &str, b: &str) -> f64 {
    let tokens = |s: &str| -> BTreeSet<String> {
        s.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).map(str::to_lowercase).collect()
    };
    let (a, b) = (tokens(a), tokens(b));
    let union = a.union(&b).count();
    if union == 0 { 0.0 } else { a.intersection(&b).count() as f64 / union as f64 }
}

/// The `content_draft` section of a node body (from its heading to the end),
/// or the whole body when it has none.
pub fn content_draft(body: &str) -> &str {
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let t = line.trim();
        offset += line.len();
        if t.starts_with('#') && t.trim_start_matches('#').trim().eq_ignore_ascii_case("content_draft") {
            return &body[offset..];
        }
    }
    body
}

/// A candidate for dedup: an existing tentative node of the same domain.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub id: String,
    pub title: String,
    pub draft: String,
    /// Whether it is a local node (an append target) or a global one.
    pub local: bool,
}

/// The best candidate for `id` with `title` and `draft` among `candidates`:
/// an exact id match scores 1.0, otherwise the token Jaccard of title plus
/// draft; ties go to the smaller id. `None` when nothing scores above
/// `threshold` (strictly, 5.5.3).
pub fn best_match<'c>(
    id: &str,
    title: &str,
    draft: &str,
    candidates: &'c [Candidate],
    threshold: f64,
) -> Option<(&'c Candidate, f64)> {
    let text = format!("{title} {draft}");
    let mut best: Option<(&Candidate, f64)> = None;
    for c in candidates {
        let score = if c.id == id { 1.0 } else { jaccard(&text, &format!("{} {}", c.title, c.draft)) };
        let better = match best {
            None => true,
            Some((b, s)) => score > s || (score == s && c.id < b.id),
        };
        if better {
            best = Some((c, score));
        }
    }
    best.filter(|(_, score)| *score > threshold)
}

/// Pitfall edge weight by severity, at the defaults
/// (`graph.pitfall_weight` in `propagation_config.yaml` sets them).
pub fn severity_weight(severity: &str) -> f64 {
    crate::config::PitfallWeights::default().of(severity)
}

/// The confidence a new tentative node starts with by default
/// (`confidence.new_node_confidence` sets it).
pub const NEW_NODE_CONFIDENCE: f64 = 0.5;

/// What an update did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct UpdateReport {
    /// Documents applied, by session node.
    pub applied: Vec<AppliedDocument>,
    /// Documents whose session node was already registered (applied before).
    pub skipped: Vec<AppliedDocument>,
    /// Every change, in order.
    pub changes: Vec<LogEntry>,
    /// What was applied with a warning: a node id no node has (recorded as
    /// a `missing` change instead), a pitfall on a node that carries none.
    pub warnings: Vec<Diagnostic>,
    /// Files written, relative to the repository.
    pub written: Vec<PathBuf>,
    /// The recompiled graph (`None` when nothing was applied).
    pub compiled: Option<Compiled>,
}

/// A document and its session node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppliedDocument {
    pub file: PathBuf,
    pub session: String,
    pub kind: crate::evidence::DocumentKind,
}

/// Everything the update plans before writing.
struct Plan<'a> {
    layout: &'a Layout,
    params: Params,
    max_session_refs: usize,
    dedup_threshold: f64,
    pitfall_weight: crate::config::PitfallWeights,
    new_node_confidence: f64,
    view: GraphView,
    state: LocalState,
    /// Node files of this run: path -> text.
    files: BTreeMap<PathBuf, String>,
    /// Where each node lives (from the compiled graph).
    node_files: BTreeMap<String, PathBuf>,
    /// Ids taken (nodes, plus files in local-nodes/).
    taken: BTreeSet<String>,
    /// Dedup candidates by domain.
    candidates: BTreeMap<String, Vec<Candidate>>,
}

/// Applies the evidence `documents` (paths under `knowledge/`) to the
/// repository of `layout` and recompiles `graph.json`.
///
/// The caller holds the repository's lock ([`crate::lock::acquire`], which
/// also replays an update a killed process left half written).
pub fn update(layout: &Layout, options: &CompileOptions, documents: &[PathBuf]) -> Result<UpdateReport, AkmsError> {
    update_until(layout, options, documents, None)
}

/// [`update`], stopping as if killed after `stop_after` file writes (the
/// crash tests' seam; not for other use).
#[doc(hidden)]
pub fn update_until(
    layout: &Layout,
    options: &CompileOptions,
    documents: &[PathBuf],
    stop_after: Option<usize>,
) -> Result<UpdateReport, AkmsError> {
    let config = read_config(layout).map_err(|problems| AkmsError::Invalid { problems })?;
    let knowledge = layout.knowledge();
    let real_knowledge = knowledge.canonicalize().unwrap_or_else(|_| knowledge.clone());

    // 1. Every document parsed and validated.
    let mut problems = Vec::new();
    let mut evidence: Vec<(Evidence, String, String)> = Vec::new();
    for path in documents {
        let shown = layout.display(path);
        let text = match crate::bounded::read_text(path, None, crate::compile::SESSION_CAP) {
            Ok(text) => text,
            Err(e) => {
                problems.push(e.diagnostic(&shown, None, None));
                continue;
            }
        };
        let relative = path
            .canonicalize()
            .ok()
            .and_then(|p| p.strip_prefix(&real_knowledge).ok().map(Path::to_path_buf))
            .map(|p| p.to_string_lossy().replace('\\', "/"));
        let Some(relative) = relative else {
            problems.push(Diagnostic::error(
                ProblemKind::InvalidValue,
                &shown,
                None,
                None,
                format!(
                    "evidence must lie under {} (its session node points at it); write it to knowledge/sessions/",
                    knowledge.display()
                ),
            ));
            continue;
        };
        match parse_evidence_with(&shown, &text, &config.limits) {
            Ok(e) => evidence.push((e, relative, content_hash(&text))),
            Err(p) => problems.extend(p),
        }
    }
    if let Some(error) = AkmsError::from_diagnostics(&problems) {
        return Err(error);
    }

    // 2. The overlay: documents whose content a registered session node
    // records were applied before; when that is all of them there is
    // nothing to read.
    let (state, state_problems) = read_local_state(layout);
    if let Some(error) = AkmsError::from_diagnostics(&state_problems) {
        return Err(error);
    }
    if evidence.iter().all(|(e, relative, hash)| applied_as(&state, e, relative, hash).is_some()) {
        let skipped = evidence
            .iter()
            .map(|(e, relative, hash)| AppliedDocument {
                file: e.file.clone(),
                session: applied_as(&state, e, relative, hash).unwrap_or_default(),
                kind: e.kind,
            })
            .collect();
        return Ok(UpdateReport { skipped, ..UpdateReport::default() });
    }

    // 3. The current graph, parsed once for both compilations; every id a
    // pending document names resolves.
    let mut sources = Sources::load(layout);
    let compiled = sources.compile(layout, options, &state)?;
    let view = GraphView::from_graph(&compiled.graph);
    let state_path = layout.local_state();
    let mut warnings = Vec::new();
    for (e, _, _) in evidence.iter().filter(|(e, relative, hash)| applied_as(&state, e, relative, hash).is_none()) {
        resolve(e, &view, &mut warnings);
    }

    // 4. The mutations, in memory.
    let mut taken: BTreeSet<String> = view.nodes.keys().cloned().collect();
    let (local_files, _) = crate::vault::markdown_files(&layout.local_nodes());
    taken.extend(local_files.iter().filter_map(|f| f.file_stem().map(|s| s.to_string_lossy().into_owned())));
    let mut plan = Plan {
        layout,
        params: Params::from_config(&config),
        max_session_refs: config.graph.max_session_refs as usize,
        dedup_threshold: config.graph.dedup_threshold,
        pitfall_weight: config.graph.pitfall_weight.clone(),
        new_node_confidence: config.confidence.new_node_confidence,
        view,
        state,
        files: BTreeMap::new(),
        node_files: compiled.files.clone(),
        taken,
        candidates: BTreeMap::new(),
    };
    let mut report = UpdateReport { warnings, ..UpdateReport::default() };
    for (e, relative, hash) in &mut evidence {
        if let Some(session) = applied_as(&plan.state, e, relative, hash) {
            report.skipped.push(AppliedDocument { file: e.file.clone(), session, kind: e.kind });
            continue;
        }
        e.session_id = plan.free_session_id(&e.session_id, hash);
        let doc = AppliedDocument { file: e.file.clone(), session: e.session_id.clone(), kind: e.kind };
        let changes = plan.apply(e, relative, hash)?;
        report.changes.extend(changes.into_iter().map(|change| LogEntry {
            session: e.session_id.clone(),
            task: e.label.clone(),
            phase: e.phase,
            date: e.date.clone(),
            document: relative.clone(),
            change,
        }));
        report.applied.push(doc);
    }
    if report.applied.is_empty() {
        return Ok(report);
    }

    // 5. Render everything and compile the result in memory: any error
    // leaves every file as it was.
    let overlay = render_local_state(&plan.state);
    let written_state = parse_local_state(&layout.display(&state_path), &overlay)
        .map_err(|problems| AkmsError::Invalid { problems })?;
    for (path, text) in &plan.files {
        sources.set_local(layout, path, text);
    }
    let compiled = sources.compile(layout, options, &written_state)?;
    let mut writes: BTreeMap<PathBuf, String> = plan.files.clone();
    writes.insert(state_path.clone(), overlay);
    let log_path = update_log(layout);
    let mut log = match std::fs::read_to_string(&log_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(AkmsError::Io { path: log_path, source }),
    };
    if !log.is_empty() && !log.ends_with('\n') {
        log.push('\n');
    }
    for entry in &report.changes {
        let line = serde_json::to_value(entry).map(crate::yaml::sorted).map(|v| v.to_string()).unwrap_or_default();
        log.push_str(&line);
        log.push('\n');
    }
    writes.insert(log_path, log);
    // The new nodes and the log first, then the overlay (whose session
    // nodes mark the documents applied), graph.json last: it is a function
    // of the files before it. All of it through the journal, so a killed
    // update is replayed whole by the next writer.
    let state_text = writes.remove(&state_path).unwrap_or_default();
    let mut ordered: Vec<(PathBuf, &str)> = writes.iter().map(|(p, t)| (p.clone(), t.as_str())).collect();
    ordered.push((state_path, state_text.as_str()));
    ordered.push((layout.graph_json(), compiled.json.as_str()));
    crate::lock::commit_until(layout, &ordered, stop_after)?;
    report.written = ordered.iter().map(|(p, _)| layout.display(p)).collect();
    report.written.sort();
    report.compiled = Some(compiled);
    Ok(report)
}

/// The SHA-256 of a document's text, in hex: its identity for "already
/// applied".
pub fn content_hash(text: &str) -> String {
    agents_core::digest::sha256_hex(text.as_bytes())
}

/// The registered session node a document was applied as: the one that
/// records its content hash or, in a registry from before hashes were
/// recorded, one with the document's own id for the same file.
fn applied_as(state: &LocalState, e: &Evidence, relative: &str, hash: &str) -> Option<String> {
    if let Some((id, _)) = state.session_nodes.iter().find(|(_, s)| s.content_hash.as_deref() == Some(hash)) {
        return Some(id.clone());
    }
    state
        .session_nodes
        .get(&e.session_id)
        .filter(|s| s.content_hash.is_none() && s.content_ref == relative)
        .map(|_| e.session_id.clone())
}

/// Warns of every node a document names that does not exist or cannot take
/// what the document does to it. Never a block (one agent's typo must not
/// stop a phase's update): an unknown id in `nodes_used` is left out and
/// recorded as missing knowledge, a pitfall on an unknown or generated node
/// is kept as a pitfall tied to no node ([`Plan::apply`]).
fn resolve(e: &Evidence, view: &GraphView, warnings: &mut Vec<Diagnostic>) {
    for used in &e.nodes_used {
        if !view.nodes.contains_key(&used.id) {
            warnings.push(Diagnostic::warning(
                ProblemKind::UnknownEdgeTarget,
                &e.file,
                None,
                Some(&format!("{}.id", used.field)),
                format!("no node has the id `{}`; recorded as missing knowledge", used.id),
            ));
        }
    }
    for pitfall in &e.pitfalls {
        let Some(id) = &pitfall.node_ref else { continue };
        let field = format!("{}.node_ref", pitfall.field);
        match view.nodes.get(id) {
            None => warnings.push(Diagnostic::warning(
                ProblemKind::UnknownEdgeTarget,
                &e.file,
                None,
                Some(&field),
                format!("no node has the id `{id}`; the pitfall is kept tied to no node and `{id}` recorded as missing knowledge"),
            )),
            Some(node) if !takes_pitfall(node) => warnings.push(Diagnostic::warning(
                ProblemKind::InvalidValue,
                &e.file,
                None,
                Some(&field),
                format!(
                    "`{id}` is a {} node, which carries no edges; the pitfall is kept tied to no node (name the domain node)",
                    node.domain
                ),
            )),
            Some(_) => {}
        }
    }
}

/// Whether a node may carry a pitfall edge (not a generated session or
/// code-mirror node).
fn takes_pitfall(node: &ViewNode) -> bool {
    node.domain != "session" && node.origin != "code-mirror"
}

impl Plan<'_> {
    /// The session node id for a document not applied yet: `base` (its task
    /// or phase id) when no node, registered session or local node file has
    /// it, else `base` with a suffix of the document's content hash.
    fn free_session_id(&self, base: &str, hash: &str) -> String {
        let free = |id: &str| !self.taken.contains(id) && !self.state.session_nodes.contains_key(id);
        if free(base) {
            return base.to_owned();
        }
        [8, 16, hash.len()]
            .into_iter()
            .map(|n| format!("{base}-{}", &hash[..n.min(hash.len())]))
            .find(|id| free(id))
            .unwrap_or_else(|| format!("{base}-{hash}-{}", self.state.session_nodes.len()))
    }

    /// One document's cycle; returns its changes.
    fn apply(&mut self, e: &Evidence, content_ref: &str, hash: &str) -> Result<Vec<Change>, AkmsError> {
        let mut changes = Vec::new();
        let mut touched: BTreeSet<String> = BTreeSet::new();
        // 1. Hits, compounding, with propagation.
        for used in &e.nodes_used {
            if self.view.nodes.get(&used.id).is_some_and(|n| n.auto_update) || !used.coverage.is_negative() {
                continue;
            }
            let hit = hit_and_propagate(&mut self.view, &used.id, used.coverage.as_str(), &self.params);
            touched.extend(hit.iter().filter_map(|c| c.node().map(str::to_owned)));
            changes.extend(hit);
        }
        // 2. Recovery and activation history.
        for used in &e.nodes_used {
            let Some(node) = self.view.nodes.get_mut(&used.id) else { continue };
            if node.auto_update {
                changes.push(Change::Skipped { node: used.id.clone(), reason: "auto_update".into() });
                continue;
            }
            if used.useful {
                let before = node.confidence;
                node.confidence = self.params.recover(before, node.floor);
                node.activations += 1;
                if node.last_activated.as_deref().is_none_or(|d| d < e.date.as_str()) {
                    node.last_activated = Some(e.date.clone());
                }
                changes.push(Change::Boost { node: used.id.clone(), before, after: node.confidence });
            }
            if !node.activated_by_tasks.contains(&e.label) {
                node.activated_by_tasks.push(e.label.clone());
            }
            if !node.session_refs.iter().any(|r| r == content_ref) {
                node.session_refs.push(content_ref.to_owned());
            }
            let excess = node.session_refs.len().saturating_sub(self.max_session_refs);
            node.session_refs.drain(..excess);
            touched.insert(used.id.clone());
        }
        // Round, and write every touched node's state into the overlay.
        for id in &touched {
            let Some(node) = self.view.nodes.get_mut(id) else { continue };
            node.confidence = round6(node.confidence);
            let entry = self.state.nodes.entry(id.clone()).or_default();
            entry.insert("confidence".into(), Json::from(node.confidence));
            if e.nodes_used.iter().any(|u| &u.id == id) {
                if node.activations > 0 {
                    entry.insert("activations".into(), Json::from(node.activations));
                }
                if let Some(day) = &node.last_activated {
                    entry.insert("last_activated".into(), Json::from(day.clone()));
                }
                entry.insert("activated_by_tasks".into(), Json::from(node.activated_by_tasks.clone()));
                entry.insert("session_refs".into(), Json::from(node.session_refs.clone()));
            }
        }
        for change in &mut changes {
            if let Change::Hit { before, after, .. }
            | Change::Propagated { before, after, .. }
            | Change::Boost { before, after, .. } = change
            {
                *before = round6(*before);
                *after = round6(*after);
            }
        }

        // 3. Pitfalls: one edge per node to the session node; one on a node
        // that cannot carry it is logged tied to no node.
        let mut pitfalls: BTreeMap<String, (f64, Vec<String>)> = BTreeMap::new();
        for p in &e.pitfalls {
            let node_ref = p.node_ref.clone().filter(|id| self.view.nodes.get(id).is_some_and(takes_pitfall));
            changes.push(Change::Pitfall {
                node: node_ref.clone(),
                description: p.description.clone(),
                severity: p.severity.clone(),
            });
            if let Some(node) = &node_ref {
                let entry = pitfalls.entry(node.clone()).or_insert((0.0, Vec::new()));
                entry.0 = entry.0.max(self.pitfall_weight.of(&p.severity));
                entry.1.push(p.description.clone());
            }
        }
        for (node, (weight, notes)) in pitfalls {
            let edge = Edge {
                to: e.session_id.clone(),
                kind: EdgeType::Pitfall,
                weight,
                note: Some(notes.join(" | ")),
                field: String::new(),
                line: None,
            };
            self.state.local_edges.push((node, edge));
        }

        // 4. Missing knowledge is logged (the review's blocked tasks), with
        // every id the document named that no node has.
        for m in &e.nodes_missing {
            changes.push(Change::Missing {
                suggested_id: m.suggested_id.clone(),
                domain: m.domain.clone(),
                priority: m.priority.clone(),
                description: m.description.clone(),
            });
        }
        let mut unknown: BTreeSet<&str> = e.nodes_missing.iter().map(|m| m.suggested_id.as_str()).collect();
        let named = e
            .nodes_used
            .iter()
            .map(|u| (&u.id, &u.field, "medium"))
            .chain(e.pitfalls.iter().filter_map(|p| Some((p.node_ref.as_ref()?, &p.field, p.severity.as_str()))));
        for (id, field, priority) in named {
            if self.view.nodes.contains_key(id) || !unknown.insert(id.as_str()) {
                continue;
            }
            changes.push(Change::Missing {
                suggested_id: id.clone(),
                domain: crate::evidence::DEFAULT_DOMAIN.to_owned(),
                priority: priority.to_owned(),
                description: format!("named in {field} but no node has this id"),
            });
        }

        // 5. New knowledge: dedup, then append or create.
        for k in &e.new_knowledge {
            let candidates = self.candidates_for(&k.domain)?;
            let matched = best_match(&k.suggested_id, &k.title, &k.content_draft, &candidates, self.dedup_threshold)
                .map(|(c, score)| (c.clone(), score));
            match matched {
                Some((c, score)) if c.local => {
                    self.append(&c.id, &e.session_id, &k.content_draft)?;
                    changes.push(Change::Dedup {
                        suggested_id: k.suggested_id.clone(),
                        matched: c.id.clone(),
                        matched_origin: "local".into(),
                        score: round6(score),
                        action: "appended".into(),
                        into: c.id.clone(),
                    });
                }
                other => {
                    let (id, file) = self.create(k, &e.session_id);
                    if let Some((c, score)) = other {
                        changes.push(Change::Dedup {
                            suggested_id: k.suggested_id.clone(),
                            matched: c.id.clone(),
                            matched_origin: "global".into(),
                            score: round6(score),
                            action: "created".into(),
                            into: id.clone(),
                        });
                    }
                    changes.push(Change::NewNode { node: id, file, domain: k.domain.clone() });
                }
            }
        }

        // 6. The session node.
        let mut tags: BTreeSet<String> = BTreeSet::new();
        for id in e.nodes_used.iter().map(|u| &u.id).chain(e.pitfalls.iter().filter_map(|p| p.node_ref.as_ref())) {
            if let Some(node) = self.view.nodes.get(id)
                && !node.auto_update
                && !node.domain.is_empty()
            {
                tags.insert(node.domain.clone());
            }
        }
        let session = SessionNode {
            title: format!("Session: {}", e.label),
            tags: tags.into_iter().collect(),
            outcome: e.outcome.clone(),
            content_ref: content_ref.to_owned(),
            phase: e.phase,
            content_hash: Some(hash.to_owned()),
        };
        // A free id (free_session_id): an existing session node is never
        // pointed at another file.
        debug_assert!(!self.state.session_nodes.contains_key(&e.session_id));
        self.state.session_nodes.insert(e.session_id.clone(), session);
        self.taken.insert(e.session_id.clone());
        self.view.nodes.insert(
            e.session_id.clone(),
            ViewNode {
                confidence: 1.0,
                floor: None,
                auto_update: true,
                domain: "session".into(),
                status: "established".into(),
                title: format!("Session: {}", e.label),
                origin: "local".into(),
                activations: 0,
                last_activated: None,
                activated_by_tasks: Vec::new(),
                session_refs: Vec::new(),
            },
        );
        Ok(changes)
    }

    /// The text of a node file: planned in this run, else on disk.
    fn node_text(&self, path: &Path) -> Result<String, AkmsError> {
        if let Some(text) = self.files.get(path) {
            return Ok(text.clone());
        }
        std::fs::read_to_string(path).map_err(|source| AkmsError::Io { path: path.to_path_buf(), source })
    }

    fn absolute(&self, shown: &Path) -> PathBuf {
        if shown.is_absolute() { shown.to_path_buf() } else { self.layout.repo_root.join(shown) }
    }

    /// The tentative nodes of `domain` (global and local), read once.
    fn candidates_for(&mut self, domain: &str) -> Result<Vec<Candidate>, AkmsError> {
        if let Some(found) = self.candidates.get(domain) {
            return Ok(found.clone());
        }
        let mut found = Vec::new();
        let ids: Vec<String> = self
            .view
            .nodes
            .iter()
            .filter(|(_, n)| n.status == "tentative" && n.domain == domain && !n.auto_update)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            let Some(shown) = self.node_files.get(&id) else { continue };
            let text = self.node_text(&self.absolute(shown))?;
            let body = crate::yaml::split_frontmatter(&text).map_or("", |f| f.body);
            let node = &self.view.nodes[&id];
            found.push(Candidate {
                id: id.clone(),
                title: node.title.clone(),
                draft: content_draft(body).to_owned(),
                local: node.origin == "local",
            });
        }
        self.candidates.insert(domain.to_owned(), found.clone());
        Ok(found)
    }

    /// Appends a draft to a local tentative node, with a separator naming
    /// the session.
    fn append(&mut self, id: &str, session: &str, draft: &str) -> Result<(), AkmsError> {
        let Some(shown) = self.node_files.get(id).cloned() else { return Ok(()) };
        let path = self.absolute(&shown);
        let mut text = self.node_text(&path)?;
        let trimmed = text.trim_end().len();
        text.truncate(trimmed);
        text.push_str(&format!(
            "\n\n---\n\n_Appended by the graph update from {session} (agent-drafted):_\n\n{}\n",
            draft.trim()
        ));
        self.files.insert(path, text);
        for list in self.candidates.values_mut() {
            for c in list.iter_mut().filter(|c| c.id == id) {
                c.draft.push_str(&format!(" {draft}"));
            }
        }
        Ok(())
    }

    /// Creates a tentative node file for `k` in local-nodes/ under a free id;
    /// returns the id and the file (relative to `knowledge/`).
    fn create(&mut self, k: &crate::evidence::NewKnowledge, session: &str) -> (String, String) {
        let mut id = k.suggested_id.clone();
        let mut n = 2;
        while self.taken.contains(&id) || self.layout.local_nodes().join(format!("{id}.md")).exists() {
            id = format!("{}-{n}", k.suggested_id);
            n += 1;
        }
        self.taken.insert(id.clone());
        let mut front = yaml_serde::Mapping::new();
        front.insert("id".into(), id.clone().into());
        front.insert("title".into(), k.title.clone().into());
        front.insert("domain".into(), k.domain.clone().into());
        front.insert("tags".into(), yaml_serde::Value::Sequence(k.tags.iter().map(|t| t.clone().into()).collect()));
        front.insert("status".into(), "tentative".into());
        front.insert("confidence".into(), self.new_node_confidence.into());
        front.insert("source".into(), "agent".into());
        front.insert("drafted_in".into(), session.into());
        front.insert("akms_schema".into(), crate::yaml::SCHEMA_VERSION.into());
        let yaml = yaml_serde::to_string(&front).unwrap_or_default();
        let text = format!("---\n{yaml}---\n\n## content_draft\n\n{}\n", k.content_draft.trim());
        let path = self.layout.local_nodes().join(format!("{id}.md"));
        let shown = self.layout.display(&path);
        self.files.insert(path, text);
        self.node_files.insert(id.clone(), shown);
        self.view.nodes.insert(
            id.clone(),
            ViewNode {
                confidence: self.new_node_confidence,
                floor: None,
                auto_update: false,
                domain: k.domain.clone(),
                status: "tentative".into(),
                title: k.title.clone(),
                origin: "local".into(),
                activations: 0,
                last_activated: None,
                activated_by_tasks: Vec::new(),
                session_refs: Vec::new(),
            },
        );
        if let Some(list) = self.candidates.get_mut(&k.domain) {
            list.push(Candidate {
                id: id.clone(),
                title: k.title.clone(),
                draft: k.content_draft.clone(),
                local: true,
            });
        }
        (id.clone(), format!("local-nodes/{id}.md"))
    }
}

/// A status a human sets with one command (FR-R03, FR-R04).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Review {
    /// `tentative` -> `established`, in the local layer.
    Promote,
    /// Any status -> `draft`: out of every loadout, nothing deleted. The
    /// status it had is kept in the overlay (`nodes.<id>.suppressed_from`).
    Suppress,
    /// Undoes a suppress: `draft` -> the status before it (a global node's
    /// own; for a local node `suppressed_from`, else `tentative`).
    Restore,
}

/// The overlay key recording the status a suppressed node had.
pub const SUPPRESSED_FROM: &str = "suppressed_from";

/// What [`set_status`] changed.
#[derive(Debug, Clone, Serialize)]
pub struct StatusChange {
    pub node: String,
    pub from: String,
    pub to: String,
    /// The file written: the node's own file (local nodes) or the overlay
    /// (a global node suppressed through `nodes.<id>.status`).
    pub file: PathBuf,
    /// The node's file.
    pub node_file: PathBuf,
    pub origin: String,
}

fn refuse(layout: &Layout, message: String) -> AkmsError {
    let file = layout.display(&layout.graph_json());
    AkmsError::Invalid {
        problems: vec![Diagnostic::error(ProblemKind::InvalidValue, &file, None, Some("status"), message)],
    }
}

/// Promotes, suppresses or restores node `id`, then recompiles `graph.json`.
/// A local node's file gets the new `status` line (nothing else changes); a
/// global node is never written: suppressing one sets `status: draft` in its
/// overlay entry (restoring removes it), and promoting one is refused (the
/// vault is read-only; promotion to global is a manual move, FR-O08). A
/// suppress records the status it replaced in the overlay, which a restore
/// brings back.
pub fn set_status(
    layout: &Layout,
    options: &CompileOptions,
    id: &str,
    review: Review,
) -> Result<StatusChange, AkmsError> {
    let compiled = compile(layout, options)?;
    let view = GraphView::from_graph(&compiled.graph);
    let Some(node) = view.nodes.get(id) else {
        return Err(refuse(layout, format!("no node has the id `{id}`")));
    };
    if node.domain == "session" || node.origin == "code-mirror" {
        return Err(refuse(layout, format!("`{id}` is a generated {} node; its status is not reviewed", node.domain)));
    }
    let state_path = layout.local_state();
    let (before, problems) = read_local_state(layout);
    if let Some(error) = AkmsError::from_diagnostics(&problems) {
        return Err(error);
    }
    let mut state = before.clone();
    let entry = state.nodes.get(id);
    let overlay_status = entry.and_then(|e| e.get("status")).and_then(Json::as_str).map(str::to_owned);
    let suppressed_from = entry.and_then(|e| e.get(SUPPRESSED_FROM)).and_then(Json::as_str).map(str::to_owned);
    let global = node.origin == "global";
    let to: String = match review {
        Review::Promote if node.status != "tentative" => {
            return Err(refuse(layout, format!("`{id}` is {}, not tentative: nothing to promote", node.status)));
        }
        Review::Promote if global => {
            return Err(refuse(
                layout,
                format!("`{id}` is a global node; the global vault is read-only, so promote it there by hand"),
            ));
        }
        Review::Promote => "established".into(),
        Review::Suppress => "draft".into(),
        Review::Restore if node.status != "draft" => {
            return Err(refuse(
                layout,
                format!("`{id}` is {}, not suppressed (draft): nothing to restore", node.status),
            ));
        }
        Review::Restore if global && overlay_status.as_deref() != Some("draft") => {
            return Err(refuse(
                layout,
                format!("`{id}` is draft in the global vault itself, which is read-only: change it there by hand"),
            ));
        }
        // The global node's own status, once the overlay's draft is gone.
        Review::Restore if global => String::new(),
        Review::Restore => suppressed_from.clone().unwrap_or_else(|| "tentative".into()),
    };
    // The overlay: a global node's status override, and what a suppress
    // replaced.
    {
        let entry = state.nodes.entry(id.to_owned()).or_default();
        match review {
            Review::Suppress if node.status != "draft" => {
                entry.insert(SUPPRESSED_FROM.into(), Json::from(node.status.clone()));
            }
            Review::Restore | Review::Promote => {
                entry.remove(SUPPRESSED_FROM);
            }
            Review::Suppress => {}
        }
        if global {
            match review {
                Review::Restore => {
                    entry.remove("status");
                }
                _ => {
                    entry.insert("status".into(), Json::from(to.clone()));
                }
            }
        }
        if entry.is_empty() {
            state.nodes.remove(id);
        }
    }
    let shown = compiled.files.get(id).cloned().unwrap_or_default();
    let node_path = if shown.is_absolute() { shown.clone() } else { layout.repo_root.join(&shown) };
    let mut writes: Vec<(PathBuf, String)> = Vec::new();
    let mut sources = Sources::load(layout);
    if !global {
        let text =
            std::fs::read_to_string(&node_path).map_err(|source| AkmsError::Io { path: node_path.clone(), source })?;
        let edited = set_status_line(&text, &to)
            .ok_or_else(|| refuse(layout, format!("cannot find a top-level `status:` line in {}", shown.display())))?;
        let (parsed, problems) = parse_node(&shown, &edited, Layer::Local);
        if parsed.is_none_or(|n| n.attributes.get("status").and_then(Json::as_str) != Some(to.as_str())) {
            return Err(AkmsError::from_diagnostics(&problems)
                .unwrap_or_else(|| refuse(layout, format!("cannot edit the status of {} safely", shown.display()))));
        }
        sources.set_local(layout, &node_path, &edited);
        writes.push((node_path.clone(), edited));
    }
    let state = if state == before {
        before
    } else {
        let text = render_local_state(&state);
        let written = parse_local_state(&layout.display(&state_path), &text)
            .map_err(|problems| AkmsError::Invalid { problems })?;
        writes.push((state_path.clone(), text));
        written
    };
    // The edited files and graph.json, compiled in memory first and written
    // as one unit through the journal.
    let rebuilt = sources.compile(layout, options, &state)?;
    let to = GraphView::from_graph(&rebuilt.graph).nodes.get(id).map(|n| n.status.clone()).unwrap_or(to);
    let file = if global { state_path } else { node_path };
    let mut ordered: Vec<(PathBuf, &str)> = writes.iter().map(|(p, t)| (p.clone(), t.as_str())).collect();
    ordered.push((layout.graph_json(), rebuilt.json.as_str()));
    crate::lock::commit(layout, &ordered)?;
    Ok(StatusChange {
        node: id.to_owned(),
        from: node.status.clone(),
        to,
        file: layout.display(&file),
        node_file: shown,
        origin: node.origin.clone(),
    })
}

/// `text` with the value of its frontmatter's top-level `status:` line
/// replaced (a trailing comment kept); `None` without one.
fn set_status_line(text: &str, status: &str) -> Option<String> {
    let front = crate::yaml::split_frontmatter(text)?;
    let start = front.yaml.as_ptr() as usize - text.as_ptr() as usize;
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    let mut found = false;
    for line in front.yaml.split_inclusive('\n') {
        if !found && let Some(rest) = line.strip_prefix("status:") {
            let comment = rest.find(" #").map(|i| &rest[i..]).unwrap_or_default().trim_end();
            out.push_str(&format!("status: {status}{comment}\n"));
            found = true;
        } else {
            out.push_str(line);
        }
    }
    out.push_str(&text[start + front.yaml.len()..]);
    found.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params::from_config(&PropagationConfig::default())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// a -requires(1.0)-> b -refines(0.5)-> c ; d -contradicts-> c ; e(auto_update) -requires-> c
    fn chain() -> GraphView {
        let node = |c: f64, floor: Option<f64>, auto: bool| ViewNode {
            confidence: c,
            floor,
            auto_update: auto,
            domain: "d".into(),
            status: "established".into(),
            title: String::new(),
            origin: "global".into(),
            activations: 0,
            last_activated: None,
            activated_by_tasks: Vec::new(),
            session_refs: Vec::new(),
        };
        let graph = serde_json::json!({"nodes": [], "links": [
            {"source": "a", "target": "b", "type": "requires", "weight": 1.0},
            {"source": "b", "target": "c", "type": "refines", "weight": 0.5},
            {"source": "d", "target": "c", "type": "contradicts", "weight": 1.0},
            {"source": "e", "target": "c", "type": "requires", "weight": 1.0},
        ]});
        let mut view = GraphView::from_graph(&CompiledGraph::from_value(graph).unwrap());
        view.nodes.insert("a".into(), node(0.8, None, false));
        view.nodes.insert("b".into(), node(0.9, None, false));
        view.nodes.insert("c".into(), node(0.9, None, false));
        view.nodes.insert("d".into(), node(0.9, None, false));
        view.nodes.insert("e".into(), node(1.0, None, true));
        view
    }

    #[test]
    fn fr_u06_direct_hit_is_multiplicative_decay() {
        let p = params();
        assert!(close(p.hit(0.9, None), 0.765));
        assert!(close(p.hit(0.5, None), 0.425));
        // Floors: the node's confidence_floor, else min_confidence.
        assert!(close(p.hit(0.75, Some(0.7)), 0.7));
        assert!(close(p.hit(0.11, None), 0.1));
    }

    #[test]
    fn fr_u07_confidence_clamped() {
        let p = params();
        assert!(close(p.recover(0.98, None), 0.99), "max_confidence");
        assert!(close(p.recover(1.0, None), 0.99), "a seed above the maximum comes down");
        assert!(close(p.hit(0.05, None), 0.1), "min_confidence");
        assert!(close(p.neighbour(0.71, 1.0, 1.0, 1.0, Some(0.7)), 0.7), "the floor holds against any hit");
        assert!(close(p.clamp(0.5, Some(1.0)), 1.0), "a floor above max_confidence wins");
    }

    #[test]
    fn spec_5_5_2_eight_activations_recover_from_one_hit() {
        let p = params();
        let start = p.max_confidence;
        let mut c = p.hit(start, None);
        assert!(close(c, 0.8415));
        let mut activations = 0;
        while c < start - 1e-12 {
            c = p.recover(c, None);
            activations += 1;
        }
        assert_eq!(activations, 8, "one hit (-15%) takes eight activations at +0.02");
        assert!(close(c, 0.99));
    }

    #[test]
    fn fr_u06_neighbour_propagation_by_edge_type_and_weight() {
        let p = params();
        let mut view = chain();
        let changes = hit_and_propagate(&mut view, "c", "outdated", &p);
        // c: 0.9 -> 0.765, δ = 0.135; b (refines 0.7, w 0.5): 0.9 - 0.135*0.3*0.7*0.5 = 0.885825.
        assert!(close(view.nodes["c"].confidence, 0.765));
        assert!(close(view.nodes["b"].confidence, 0.9 - 0.135 * 0.3 * 0.7 * 0.5));
        assert!(close(view.nodes["b"].confidence, 0.885825));
        // hop_limit 1: a is two hops away and untouched; contradicts (μ 0)
        // does not propagate; auto_update nodes are skipped.
        assert!(close(view.nodes["a"].confidence, 0.8));
        assert!(close(view.nodes["d"].confidence, 0.9));
        assert!(close(view.nodes["e"].confidence, 1.0));
        assert_eq!(changes.len(), 2);
    }

    #[test]
    fn fr_u06_hop_limit_two_carries_the_neighbours_change() {
        let mut p = params();
        p.hop_limit = 2;
        let mut view = chain();
        hit_and_propagate(&mut view, "c", "outdated", &p);
        let delta_b = 0.135 * 0.3 * 0.7 * 0.5; // 0.014175
        // a (requires 1.0, w 1.0): 0.8 - 0.014175*0.3 = 0.7957475.
        assert!(close(view.nodes["a"].confidence, 0.8 - delta_b * 0.3));
        assert!(close(view.nodes["a"].confidence, 0.7957475));
    }

    #[test]
    fn spec_5_5_2_hits_in_one_cycle_compound() {
        let p = params();
        let mut view = chain();
        hit_and_propagate(&mut view, "c", "outdated", &p);
        hit_and_propagate(&mut view, "c", "missing-detail", &p);
        assert!(close(view.nodes["c"].confidence, 0.9 * 0.85 * 0.85));
        let first = 0.135 * 0.3 * 0.35;
        let second = (0.765 - 0.65025) * 0.3 * 0.35;
        assert!(close(view.nodes["b"].confidence, 0.9 - first - second));
    }

    #[test]
    fn fr_u10_auto_update_nodes_take_no_hit() {
        let mut view = chain();
        assert!(hit_and_propagate(&mut view, "e", "outdated", &params()).is_empty());
        assert!(close(view.nodes["e"].confidence, 1.0));
    }

    #[test]
    fn fr_u09_dedup_threshold_is_strict_and_exact_ids_score_one() {
        // 3 shared tokens of 4: 0.75, not above the default threshold.
        assert!(close(jaccard("alpha beta gamma", "alpha beta gamma delta"), 0.75));
        let c = |id: &str, title: &str, draft: &str| Candidate {
            id: id.into(),
            title: title.into(),
            draft: draft.into(),
            local: true,
        };
        let at = [c("x", "alpha beta", "gamma delta")];
        assert!(best_match("new", "alpha beta", "gamma", &at, 0.75).is_none(), "0.75 is not > 0.75");
        // 4 of 5 (0.8) is above it.
        let above = [c("x", "alpha beta", "gamma delta epsilon")];
        let (m, score) = best_match("new", "alpha beta gamma", "delta", &above, 0.75).unwrap();
        assert_eq!(m.id, "x");
        assert!(close(score, 0.8));
        // Just below: 0.7499... never matches, just above always does.
        assert!(best_match("new", "a b c", "", &[c("x", "a b c d", "")], 0.7499).is_some());
        assert!(best_match("new", "a b c", "", &[c("x", "a b c d", "")], 0.7501).is_none());
        let exact = [c("same-id", "unrelated", "words")];
        assert!(close(best_match("same-id", "other", "text", &exact, 0.75).unwrap().1, 1.0));
        assert_eq!(content_draft("# T\n\n## content_draft\n\nthe draft\n"), "\nthe draft\n");
        assert_eq!(content_draft("no heading"), "no heading");
    }

    #[test]
    fn the_status_line_is_the_only_edit() {
        let text = "---\nid: a\nstatus: tentative # review me\ntags: [x]\n---\nstatus: in the body\n";
        assert_eq!(
            set_status_line(text, "established").unwrap(),
            "---\nid: a\nstatus: established # review me\ntags: [x]\n---\nstatus: in the body\n"
        );
        assert_eq!(set_status_line("---\nid: a\n---\n", "draft"), None);
    }
}
