//! Loadouts (spec 4.6 and 5.4): the Markdown file a task agent reads, made
//! from the subgraph of [`crate::query`] and the text the search layer
//! retrieved within it.
//!
//! The structure is the frozen contract: a YAML header (task, phase,
//! `generated_at`, `graph_version`, seed tags, role, node count, mode,
//! available context, `qmd_available`), then `# Loadout: <task>` with
//! `## Domain Knowledge` (the node table, then `### Summaries` in routing
//! mode or `### Content` in full mode; the table has `Status` and `Source`
//! after the spec's six columns), `## Known Pitfalls` (always),
//! `## Relevant Session History` and `## Suggested Reading Order`.
//!
//! - **Mode** ([`select_mode`]): without a known context limit,
//!   `mode_selection.default_mode`; else `available = context_limit -
//!   system_prompt_tokens - task_tokens - safety_margin`; routing below
//!   `low_threshold` or when the full cost exceeds `available x
//!   budget_fraction`, else full.
//! - **Per node** ([`read_mode`]): `reading_priority` overrides the mode both
//!   ways; `summary` without a `## Summary` section falls back to full.
//! - **Full content** is packed by the context pipeline's packer
//!   ([`agents_pack::GreedyPacker`]) with one
//!   allocation per node proportional to its `context_size` hint, best
//!   ranked first, cut line-wise when a node does not fit; the delivered
//!   content section is then measured with the shared tokenizer and the
//!   lowest-ranked block dropped until it fits `max_loadout_tokens`.
//! - **Degraded** (no search layer, NFR-R05): the table, paths, confidence,
//!   pitfall warnings, session history and reading order; no summaries, no
//!   content, `qmd_available: false`.
//!
//! - **Pitfalls** are the query's warnings ([`crate::query::Subgraph::pitfalls`]):
//!   from every seed and reached node, whether the node cap kept it or not.
//! - **Paths** are ones an agent can open: a global node's path under the
//!   absolute `global_vault` of the request, repository paths relative to the
//!   repository root.
//! - **Provenance** (UR-05): the table's `Status` and `Source` columns; a
//!   tentative or agent-written node is marked unreviewed in the table, in a
//!   line naming them under it and on its summary or content heading.
//! - **No nodes** (a task without tags): valid; the table says why.
//!
//! Generation is a pure function of its inputs (NFR-D02): the timestamp is
//! handed in, every list is sorted or ranked with ties by id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use agents_core::tokens::TokenCounter;
use agents_pack::{Allocation, BudgetPacker, GreedyPacker, InlineRenderer, Piece, ScoreParts, ScoredFragment};
use agents_search::TextDoc;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::graph::CompiledGraph;

use crate::config::{LoadoutMode, PropagationConfig};
use crate::query::Subgraph;
use crate::search::Passage;

/// What can go wrong making a loadout.
#[derive(Debug, thiserror::Error)]
pub enum LoadoutError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("search layer: {0}")]
    Search(#[from] agents_search::SearchError),
    #[error(transparent)]
    Query(#[from] crate::query::QueryError),
    #[error("{field}: {message}")]
    Input { field: String, message: String },
}

/// The `graph_version` of a compiled graph: the first 16 hex digits of the
/// SHA-256 of `graph.json`'s bytes.
pub fn graph_version(graph_json: &[u8]) -> String {
    agents_core::digest::sha256_hex(graph_json)[..16].to_owned()
}

/// Spec 5.4's estimate of the tokens left for a loadout (may be negative).
pub fn available_context(
    context_limit: u64,
    system_prompt_tokens: u64,
    task_tokens: u64,
    config: &PropagationConfig,
) -> i64 {
    context_limit as i64
        - system_prompt_tokens as i64
        - task_tokens as i64
        - i64::from(config.loadout.mode_selection.safety_margin)
}

/// Spec 5.4: routing below `low_threshold`, routing when the full cost passes
/// `available x budget_fraction`, else full.
pub fn select_mode(available: i64, full_cost: u64, config: &PropagationConfig) -> LoadoutMode {
    let selection = &config.loadout.mode_selection;
    let too_small = available < i64::from(selection.low_threshold);
    if too_small || full_cost as f64 > available as f64 * selection.budget_fraction {
        LoadoutMode::Routing
    } else {
        LoadoutMode::Full
    }
}

/// How a node is delivered (the table's `Read` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadMode {
    Full,
    Summary,
    PitfallsOnly,
}

impl ReadMode {
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::Full => "full",
            ReadMode::Summary => "summary",
            ReadMode::PitfallsOnly => "pitfalls-only",
        }
    }
}

/// FR-L10c: the node's `reading_priority` wins over the mode both ways; a
/// summary is only given when the node has a `## Summary` section (FR-L11).
pub fn read_mode(mode: LoadoutMode, reading_priority: Option<&str>, has_summary: bool) -> ReadMode {
    match reading_priority {
        Some("pitfalls-only") => ReadMode::PitfallsOnly,
        Some("full") => ReadMode::Full,
        Some("summary") if has_summary => ReadMode::Summary,
        Some("summary") => ReadMode::Full,
        _ => match mode {
            LoadoutMode::Full => ReadMode::Full,
            LoadoutMode::Routing => ReadMode::Summary,
        },
    }
}

/// The text of a body's `## Summary` section (up to the next heading of level
/// 1 or 2), trimmed; `None` when there is none or it is empty.
pub fn summary_section(body: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    let mut inside = false;
    for line in body.lines() {
        let trimmed = line.trim_end();
        if inside {
            if trimmed.starts_with("# ") || trimmed.starts_with("## ") {
                break;
            }
            out.push(line);
        } else if trimmed.eq_ignore_ascii_case("## summary") {
            inside = true;
        }
    }
    let text = out.join("\n").trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// A task's loadout request, resolved by the caller.
#[derive(Clone, Debug)]
pub struct LoadoutRequest {
    pub task_id: String,
    pub phase: Option<String>,
    /// The `# Loadout:` title: the task's title, else its id.
    pub title: String,
    pub role: String,
    /// Seed tags, as the query used them.
    pub seed_tags: Vec<String>,
    /// From [`available_context`]; `None` when the model's context is not
    /// known: the mode is then `mode_selection.default_mode`.
    pub available_context: Option<i64>,
    /// The header's timestamp (injected: NFR-D02).
    pub generated_at: String,
    pub graph_version: String,
    /// The global vault's directory as an agent can open it (absolute): the
    /// paths of global nodes are written under it instead of the
    /// machine-independent `global-vault/` the search layer uses. `None`
    /// leaves them as they are.
    pub global_vault: Option<String>,
}

/// A generated loadout.
#[derive(Clone, Debug, Serialize)]
pub struct Loadout {
    pub task_id: String,
    pub mode: LoadoutMode,
    pub qmd_available: bool,
    pub available_context: Option<i64>,
    pub node_count: usize,
    /// Tokens of the inline content section, as delivered.
    pub content_tokens: usize,
    /// Nodes whose content was cut or left out to fit `max_loadout_tokens`.
    pub trimmed: Vec<String>,
    #[serde(skip)]
    pub text: String,
}

struct Row<'a> {
    id: &'a str,
    title: &'a str,
    origin: &'a str,
    status: &'a str,
    source: &'a str,
    confidence: f64,
    path: String,
    read: ReadMode,
    body: Option<&'a str>,
    summary: Option<String>,
    context_size: u32,
}

fn attr<'a>(node: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    node?.get(key)?.as_str()
}

/// UR-05: a node no human has vouched for: `tentative`, or written by an
/// agent (`source: agent`, session records included).
pub fn unreviewed(status: &str, source: &str) -> bool {
    status == "tentative" || source == "agent"
}

impl Row<'_> {
    fn unreviewed(&self) -> bool {
        unreviewed(self.status, self.source)
    }

    /// The title as a heading shows it: marked when unreviewed (UR-05).
    fn heading(&self) -> String {
        let title = one_line(self.title);
        if self.unreviewed() { format!("{title} [unreviewed: {}, source {}]", self.status, self.source) } else { title }
    }
}

/// Prefix of the machine-independent paths of global nodes (see
/// [`crate::search::documents`]).
const GLOBAL_PREFIX: &str = "global-vault/";

/// A node path an agent can open: `global-vault/<file>` becomes
/// `<global_vault>/<file>`; repository paths stay relative to the repository.
fn readable(path: &str, global_vault: Option<&str>) -> String {
    match (path.strip_prefix(GLOBAL_PREFIX), global_vault) {
        (Some(rest), Some(vault)) => format!("{}/{rest}", vault.trim_end_matches(['/', '\\'])),
        _ => path.to_owned(),
    }
}

/// Where a node's `content_ref` is, as an agent can open it: under the global
/// vault for a global node, under `knowledge/` otherwise.
fn content_ref_path(node: Option<&Map<String, Value>>, global_vault: Option<&str>) -> Option<String> {
    let r = attr(node, "content_ref")?;
    Some(if attr(node, "node_origin") == Some("global") {
        readable(&format!("{GLOBAL_PREFIX}{r}"), global_vault)
    } else {
        format!("knowledge/{r}")
    })
}

/// YAML scalar: plain when it is a simple word, else a JSON (double-quoted) string.
fn scalar(text: &str) -> String {
    let plain = !text.is_empty()
        && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
        && !text.ends_with(':')
        && !matches!(text, "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "~")
        && text.parse::<f64>().is_err();
    if plain { text.to_owned() } else { Value::from(text).to_string() }
}

/// Moves a body's Markdown headings three levels down (so a node's `#` sits
/// under the loadout's `###`), leaving fenced code alone.
fn demote_headings(body: &str) -> String {
    let mut fenced = false;
    let mut out = String::with_capacity(body.len() + 32);
    for line in body.lines() {
        if line.trim_start().starts_with("```") || line.trim_start().starts_with("~~~") {
            fenced = !fenced;
        }
        let level = line.chars().take_while(|c| *c == '#').count();
        if !fenced && level > 0 && line[level..].starts_with(' ') {
            out.push_str(&"#".repeat((level + 3).min(6)));
            out.push_str(&line[level..]);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out.trim_end().to_owned()
}

/// `text` cut at word boundaries to at most `max` tokens.
fn fit_tokens(text: &str, max: usize, tokenizer: &dyn TokenCounter) -> String {
    if tokenizer.count(text) <= max {
        return text.to_owned();
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    let (mut lo, mut hi) = (0usize, words.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if tokenizer.count(&format!("{} …", words[..mid].join(" "))) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 { String::new() } else { format!("{} …", words[..lo].join(" ")) }
}

/// The first paragraph of a body that is not a heading.
fn lead_paragraph(body: &str) -> Option<String> {
    crate::search::paragraphs(body)
        .into_iter()
        .map(|(_, p)| p.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n"))
        .find(|p| !p.trim().is_empty())
}

fn content_block(id: &str, title: &str, content: &str) -> String {
    format!("#### {id}: {title}\n\n{content}\n\n")
}

/// Spec 5.4's full cost: every node's `context_size` allocation, at most
/// `max_loadout_tokens` (what a full loadout can cost at most).
pub fn full_cost(graph: &CompiledGraph, subgraph: &Subgraph, config: &PropagationConfig) -> u64 {
    let nodes = node_index(graph);
    let sum: u64 = subgraph
        .nodes
        .iter()
        .filter(|n| attr(nodes.get(n.id.as_str()).copied(), "reading_priority") != Some("pitfalls-only"))
        .map(|n| u64::from(context_tokens(attr(nodes.get(n.id.as_str()).copied(), "context_size"), config)))
        .sum();
    sum.min(u64::from(config.loadout.max_loadout_tokens))
}

fn context_tokens(hint: Option<&str>, config: &PropagationConfig) -> u32 {
    let sizes = &config.loadout.context_size_tokens;
    match hint {
        Some("small") => sizes.small,
        Some("large") => sizes.large,
        _ => sizes.medium,
    }
}

fn node_index(graph: &CompiledGraph) -> BTreeMap<&str, &Map<String, Value>> {
    graph.nodes().iter().map(|n| (n.id(), n.attributes())).collect()
}

/// Packs the full-mode nodes (best ranked first) under `max_loadout_tokens`
/// with the pipeline's packer: one allocation per node, proportional to its
/// `context_size` hint; returns node id -> delivered content, and the nodes cut
/// or left out.
fn pack_content(
    rows: &[Row<'_>],
    config: &PropagationConfig,
    tokenizer: &dyn TokenCounter,
) -> (BTreeMap<String, String>, Vec<String>) {
    let max = config.loadout.max_loadout_tokens as usize;
    let inline: Vec<&Row<'_>> = rows.iter().filter(|r| r.read == ReadMode::Full && r.body.is_some()).collect();
    let hints: u64 = inline.iter().map(|r| u64::from(r.context_size)).sum();
    let scale = if hints as f64 > max as f64 { max as f64 / hints as f64 } else { 1.0 };
    let count = inline.len().max(1) as f64;
    let mut allocations = Vec::new();
    let mut scored = Vec::new();
    let mut full = BTreeMap::new();
    for (rank, row) in inline.iter().enumerate() {
        let content = demote_headings(row.body.unwrap_or_default());
        full.insert(row.id.to_owned(), content.clone());
        let mut piece = Piece::new(row.id, "knowledge", "", content, 9);
        piece.inline = true;
        piece.strategies = vec![row.id.to_owned()];
        piece.note = Some(row.title.to_owned());
        piece.measure(tokenizer);
        allocations
            .push(Allocation { strategy: row.id.to_owned(), tokens: (f64::from(row.context_size) * scale) as usize });
        scored.push(ScoredFragment { piece, score: 1.0 - rank as f64 / count, parts: ScoreParts::default() });
    }
    let outcome = GreedyPacker.pack(scored, max, &allocations, &InlineRenderer, tokenizer);
    let mut packed: BTreeMap<String, String> =
        outcome.packed.into_iter().map(|s| (s.piece.uko_node, s.piece.content)).collect();
    // The section as delivered must fit, whatever the headings cost: drop the
    // lowest-ranked block until it does.
    let section = |packed: &BTreeMap<String, String>| -> usize {
        let text: String =
            inline.iter().filter_map(|r| packed.get(r.id).map(|c| content_block(r.id, &r.heading(), c))).collect();
        tokenizer.count(&text)
    };
    while section(&packed) > max {
        let Some(last) = inline.iter().rev().find(|r| packed.contains_key(r.id)) else { break };
        packed.remove(last.id);
    }
    let trimmed = inline
        .iter()
        .filter(|r| packed.get(r.id).is_none_or(|c| Some(c) != full.get(r.id)))
        .map(|r| r.id.to_owned())
        .collect();
    (packed, trimmed)
}

/// Spec 4.6's reading order: the table's nodes in table order (best ranked
/// first), each one preceded by the loadout nodes it `requires` (depth
/// first, themselves in table order), so the best node is read as early as
/// its prerequisites allow; a cycle is broken where it is entered.
pub fn reading_order(ids: &[&str], requires: &[(&str, &str)]) -> Vec<String> {
    let position: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut needs: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in requires {
        if from != to && position.contains_key(from) && position.contains_key(to) {
            needs.entry(from).or_default().push(to);
        }
    }
    for list in needs.values_mut() {
        list.sort_by_key(|id| position[id]);
        list.dedup();
    }
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut order = Vec::with_capacity(ids.len());
    // Iterative depth-first walk: (node, index of its next requirement).
    for &start in ids {
        if !seen.insert(start) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some((id, next)) = stack.last_mut() {
            let required = needs.get(*id).map_or(&[][..], Vec::as_slice);
            if let Some(dep) = required.get(*next) {
                *next += 1;
                if seen.insert(dep) {
                    stack.push((dep, 0));
                }
            } else {
                order.push((*id).to_owned());
                stack.pop();
            }
        }
    }
    order
}

/// Renders the loadout of `request` over `graph` and its `subgraph`. `docs`
/// are the nodes' documents (their paths; their text only with the search
/// layer); `passages` is what the search layer found within the node set, by
/// (path, line), and `None` when it is unavailable: the degraded mode.
pub fn generate(
    request: &LoadoutRequest,
    graph: &CompiledGraph,
    subgraph: &Subgraph,
    docs: &BTreeMap<String, TextDoc>,
    passages: Option<&[Passage]>,
    config: &PropagationConfig,
    tokenizer: &dyn TokenCounter,
) -> Loadout {
    let nodes = node_index(graph);
    let full_cost = full_cost(graph, subgraph, config);
    let mode = match request.available_context {
        Some(available) => select_mode(available, full_cost, config),
        None => config.loadout.mode_selection.default_mode,
    };
    let rows: Vec<Row<'_>> = subgraph
        .nodes
        .iter()
        .map(|n| {
            let node = nodes.get(n.id.as_str()).copied();
            let doc = docs.get(&n.id);
            let body = doc.filter(|_| passages.is_some()).map(|d| d.body.as_str()).filter(|b| !b.trim().is_empty());
            let summary = body.and_then(summary_section);
            let has_summary = summary.is_some();
            // Routing mode without a `## Summary` section: the lead paragraph.
            let summary = summary.or_else(|| body.and_then(lead_paragraph));
            let vault = request.global_vault.as_deref();
            let path = doc
                .map(|d| readable(&d.path, vault))
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| content_ref_path(node, vault).unwrap_or_default());
            Row {
                id: &n.id,
                title: &n.title,
                origin: attr(node, "node_origin").unwrap_or("global"),
                status: attr(node, "status").unwrap_or("unknown"),
                source: attr(node, "source").unwrap_or("unknown"),
                confidence: n.confidence,
                path,
                read: read_mode(mode, attr(node, "reading_priority"), has_summary),
                body,
                summary,
                context_size: context_tokens(attr(node, "context_size"), config),
            }
        })
        .collect();
    let degraded = passages.is_none();
    let (content, trimmed) =
        if degraded { (BTreeMap::new(), Vec::new()) } else { pack_content(&rows, config, tokenizer) };

    let mut out = String::new();
    // Header.
    let tags: Vec<String> = request.seed_tags.iter().map(|t| scalar(t)).collect();
    out.push_str("---\n");
    out.push_str(&format!("task_id: {}\n", scalar(&request.task_id)));
    let phase = match request.phase.as_deref() {
        None => "null".to_owned(),
        Some(p) if !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()) => p.to_owned(),
        Some(p) => scalar(p),
    };
    out.push_str(&format!("phase: {phase}\n"));
    out.push_str(&format!("generated_at: {}\n", scalar(&request.generated_at)));
    out.push_str(&format!("graph_version: {}\n", scalar(&request.graph_version)));
    out.push_str(&format!("seed_tags: [{}]\n", tags.join(", ")));
    out.push_str(&format!("agent_role: {}\n", scalar(&request.role)));
    out.push_str(&format!("node_count: {}\n", rows.len()));
    out.push_str(&format!("loadout_mode: {}\n", mode_name(mode)));
    let available = request.available_context.map_or_else(|| "null".to_owned(), |a| a.to_string());
    out.push_str(&format!("available_context: {available}\n"));
    out.push_str(&format!("qmd_available: {}\n", !degraded));
    out.push_str(&format!("akms_schema: {}\n", crate::SCHEMA_VERSION));
    out.push_str("---\n\n");
    out.push_str(&format!("# Loadout: {}\n\n", one_line(&request.title)));

    // Domain knowledge.
    out.push_str("## Domain Knowledge\n\n");
    out.push_str(
        "| Node | Origin | Confidence | Priority | Path | Read | Status | Source |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (i, row) in rows.iter().enumerate() {
        let status = if row.unreviewed() { format!("{}, **unreviewed**", row.status) } else { row.status.to_owned() };
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {} | {} | {} | {} |\n",
            cell(row.id),
            cell(row.origin),
            row.confidence,
            i + 1,
            cell(&row.path),
            row.read.name(),
            cell(&status),
            cell(row.source)
        ));
    }
    if rows.is_empty() && request.seed_tags.is_empty() {
        out.push_str(
            "\n_No nodes: the task has no `akms_tags` and none could be derived from it, so the knowledge graph \
             has nothing for it yet. Work from the task record and the repository._\n",
        );
    } else if rows.is_empty() {
        out.push_str("\n_No node matched the seed tags._\n");
    }
    let unreviewed: Vec<String> = rows.iter().filter(|r| r.unreviewed()).map(|r| format!("`{}`", r.id)).collect();
    if !unreviewed.is_empty() {
        out.push_str(&format!(
            "\n_**Unreviewed** (tentative, or written by an agent; no human has reviewed it): {}. \
             Check what they say before relying on it._\n",
            unreviewed.join(", ")
        ));
    }
    out.push('\n');
    if degraded {
        out.push_str("_The search layer is unavailable (degraded mode): no summaries or inline content; read the nodes at their paths._\n\n");
    } else {
        let passages: BTreeMap<&str, Vec<&Passage>> =
            passages.unwrap_or_default().iter().fold(BTreeMap::new(), |mut m, p| {
                m.entry(p.node.as_str()).or_insert_with(Vec::new).push(p);
                m
            });
        let summaries: Vec<&Row<'_>> = rows.iter().filter(|r| r.read == ReadMode::Summary).collect();
        if !summaries.is_empty() {
            out.push_str("### Summaries\n\n");
            for row in summaries {
                out.push_str(&format!("#### {}: {}\n\n", row.id, row.heading()));
                out.push_str(&format!(
                    "Path: `{}`. Confidence {:.2}. Read the full node on demand.\n\n",
                    row.path, row.confidence
                ));
                let summary = row.summary.as_deref().unwrap_or_default();
                let summary = fit_tokens(summary, config.loadout.routing_tokens_per_node as usize, tokenizer);
                if !summary.is_empty() {
                    out.push_str(&summary);
                    out.push_str("\n\n");
                }
                let shown = one_line(&summary);
                for p in passages.get(row.id).into_iter().flatten().filter(|p| !shown.contains(&one_line(&p.text))) {
                    let at = readable(&p.path, request.global_vault.as_deref());
                    out.push_str(&format!("> Matched at {at}:{}: {}\n\n", p.line, one_line(&p.text)));
                }
            }
        }
        let inline: Vec<&Row<'_>> = rows.iter().filter(|r| content.contains_key(r.id)).collect();
        if !inline.is_empty() {
            out.push_str("### Content\n\n");
            for row in inline {
                out.push_str(&content_block(row.id, &row.heading(), &content[row.id]));
            }
        }
        let missing: Vec<&Row<'_>> =
            rows.iter().filter(|r| r.read == ReadMode::Full && !content.contains_key(r.id)).collect();
        if !missing.is_empty() {
            let ids: Vec<String> = missing.iter().map(|r| format!("`{}`", r.path)).collect();
            out.push_str(&format!("Not inlined (no text, or over max_loadout_tokens): {}.\n\n", ids.join(", ")));
        }
    }

    // Pitfalls: every warning the query collected (from the seeds and every
    // reached node, cut by the cap or not), always.
    let pitfalls = &subgraph.pitfalls;
    out.push_str("## Known Pitfalls\n\n");
    for warning in pitfalls {
        let node = nodes.get(warning.target.as_str()).copied();
        let title = attr(node, "title").unwrap_or(&warning.target);
        let mut line = format!("- **{}** -> `{}` ({})", warning.source, warning.target, one_line(title));
        if !warning.note.trim().is_empty() {
            line.push_str(&format!(": {}", one_line(&warning.note)));
        }
        if let Some(path) = content_ref_path(node, request.global_vault.as_deref()) {
            line.push_str(&format!(" (see `{path}`)"));
        }
        out.push_str(&line);
        out.push('\n');
    }
    if pitfalls.is_empty() {
        out.push_str("_No known pitfalls._\n");
    }
    out.push('\n');

    // Session history: session nodes in the loadout or warned about, and the
    // session_refs of the loadout's nodes.
    let mut sessions: BTreeSet<String> = BTreeSet::new();
    let session_ids: BTreeSet<&str> =
        rows.iter().map(|r| r.id).chain(pitfalls.iter().map(|w| w.target.as_str())).collect();
    for id in session_ids {
        let node = nodes.get(id).copied();
        if attr(node, "domain") == Some("session") {
            let mut line = format!("`{id}`: {}", one_line(attr(node, "title").unwrap_or(id)));
            let phase = node.and_then(|n| n.get("phase")).filter(|v| !v.is_null());
            if let Some(phase) = phase {
                line.push_str(&format!(", phase {}", phase.as_str().map_or_else(|| phase.to_string(), str::to_owned)));
            }
            if let Some(outcome) = attr(node, "outcome") {
                line.push_str(&format!(", outcome {outcome}"));
            }
            if let Some(path) = content_ref_path(node, request.global_vault.as_deref()) {
                line.push_str(&format!(" (`{path}`)"));
            }
            sessions.insert(line);
        }
    }
    for row in &rows {
        let node = nodes.get(row.id).copied();
        for r in node.and_then(|n| n.get("session_refs")).and_then(Value::as_array).into_iter().flatten() {
            if let Some(r) = r.as_str() {
                sessions.insert(format!("`knowledge/{r}`, referenced by `{}`", row.id));
            }
        }
    }
    out.push_str("## Relevant Session History\n\n");
    for line in &sessions {
        out.push_str(&format!("- {line}\n"));
    }
    if sessions.is_empty() {
        out.push_str("_No session history._\n");
    }
    out.push('\n');

    // Reading order along `requires`.
    let requires: Vec<(&str, &str)> =
        graph.links().iter().filter(|l| l.kind() == "requires").map(|l| (l.source(), l.target())).collect();
    let table: Vec<&str> = rows.iter().filter(|r| r.read != ReadMode::PitfallsOnly).map(|r| r.id).collect();
    out.push_str("## Suggested Reading Order\n\n");
    let order = reading_order(&table, &requires);
    for (i, id) in order.iter().enumerate() {
        out.push_str(&format!("{}. {id}\n", i + 1));
    }
    if order.is_empty() {
        out.push_str("_Nothing to read._\n");
    }

    let content_tokens = if content.is_empty() {
        0
    } else {
        let text: String =
            rows.iter().filter_map(|r| content.get(r.id).map(|c| content_block(r.id, &r.heading(), c))).collect();
        tokenizer.count(&text)
    };
    Loadout {
        task_id: request.task_id.clone(),
        mode,
        qmd_available: !degraded,
        available_context: request.available_context,
        node_count: rows.len(),
        content_tokens,
        trimmed,
        text: out,
    }
}

pub fn mode_name(mode: LoadoutMode) -> &'static str {
    match mode {
        LoadoutMode::Routing => "routing",
        LoadoutMode::Full => "full",
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}

/// A hash (16 hex digits) of what a loadout depends on besides the graph:
/// the config, the task record, the global vault's place and the documents
/// (path and text) of the selected nodes `ids`. Part of the passage cache key.
pub fn inputs_hash(
    config: &PropagationConfig,
    record: &Map<String, Value>,
    global_vault: &str,
    docs: &BTreeMap<String, TextDoc>,
    ids: &[String],
) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    part(serde_json::to_string(config).unwrap_or_default().as_bytes());
    part(Value::Object(record.clone()).to_string().as_bytes());
    part(global_vault.as_bytes());
    for id in ids {
        part(id.as_bytes());
        if let Some(doc) = docs.get(id) {
            part(doc.path.as_bytes());
            part(doc.body.as_bytes());
        }
    }
    agents_core::digest::hex(&hasher.finalize()[..8])
}

/// Whether two loadout texts are the same loadout: equal but for the
/// header's `generated_at` line (FR-L08 reuse).
pub fn same_loadout(a: &str, b: &str) -> bool {
    let strip = |text: &str| -> String {
        let mut header = text.starts_with("---\n");
        let mut out = String::with_capacity(text.len());
        for (i, line) in text.split_inclusive('\n').enumerate() {
            if header && i > 0 && line == "---\n" {
                header = false;
            }
            if header && line.starts_with("generated_at: ") {
                continue;
            }
            out.push_str(line);
        }
        out
    };
    strip(a) == strip(b)
}

/// The header fields of a loadout file, as written (for reuse and staleness).
pub fn read_header(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(rest) = text.strip_prefix("---\n") else { return out };
    for line in rest.lines() {
        if line == "---" {
            break;
        }
        if let Some((key, value)) = line.split_once(": ") {
            out.insert(key.to_owned(), value.to_owned());
        }
    }
    out
}

/// The file name of a task's loadout: `<task_id>-loadout.md` for the default
/// role, `<task_id>-<role>-loadout.md` for the others. Ids that are not plain
/// names (a path separator, `..`) are refused.
pub fn file_name(task_id: &str, role: &str) -> Result<String, LoadoutError> {
    let plain =
        |s: &str| !s.is_empty() && s != "." && s != ".." && s.chars().all(|c| c.is_alphanumeric() || "-_.".contains(c));
    if !plain(task_id) {
        return Err(LoadoutError::Input {
            field: "task_id".into(),
            message: format!("{task_id:?} is not a plain name (letters, digits, - _ .)"),
        });
    }
    if !plain(role) {
        return Err(LoadoutError::Input { field: "role".into(), message: format!("{role:?} is not a plain name") });
    }
    Ok(if role == "implementer" { format!("{task_id}-loadout.md") } else { format!("{task_id}-{role}-loadout.md") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::query;
    use agents_core::tokens::Tokenizer;
    use serde_json::json;

    fn config() -> PropagationConfig {
        PropagationConfig::default()
    }

    #[test]
    fn mode_selection_boundaries_follow_the_formula() {
        let c = config();
        // low_threshold 8000: 7999 is routing even for a zero cost, 8000 may be full.
        assert_eq!(select_mode(7999, 0, &c), LoadoutMode::Routing);
        assert_eq!(select_mode(8000, 0, &c), LoadoutMode::Full);
        // budget_fraction 0.15 of 20000 = 3000: 3000 fits, 3001 does not.
        assert_eq!(select_mode(20_000, 3000, &c), LoadoutMode::Full);
        assert_eq!(select_mode(20_000, 3001, &c), LoadoutMode::Routing);
        assert_eq!(select_mode(-5, 0, &c), LoadoutMode::Routing);
        // available = limit - system - task - safety_margin (4000).
        assert_eq!(available_context(50_000, 1000, 500, &c), 44_500);
        assert_eq!(available_context(1000, 1000, 500, &c), -4500);
    }

    #[test]
    fn fr_l10c_reading_priority_overrides_the_mode_both_ways() {
        use LoadoutMode::*;
        assert_eq!(read_mode(Routing, Some("full"), true), ReadMode::Full);
        assert_eq!(read_mode(Full, Some("summary"), true), ReadMode::Summary);
        // FR-L11: no ## Summary section: summary falls back to full.
        assert_eq!(read_mode(Full, Some("summary"), false), ReadMode::Full);
        assert_eq!(read_mode(Routing, Some("summary"), false), ReadMode::Full);
        assert_eq!(read_mode(Full, Some("pitfalls-only"), true), ReadMode::PitfallsOnly);
        assert_eq!(read_mode(Routing, None, false), ReadMode::Summary);
        assert_eq!(read_mode(Full, None, false), ReadMode::Full);
    }

    #[test]
    fn summary_sections_end_at_the_next_heading() {
        let body = "# T\n\nIntro.\n\n## Summary\n\nOne. Two.\n\n### Detail\nkept\n\n## Next\nnot kept\n";
        assert_eq!(summary_section(body).unwrap(), "One. Two.\n\n### Detail\nkept");
        assert_eq!(summary_section("# T\n## Summary\n\n## Other\n"), None);
        assert_eq!(summary_section("no sections"), None);
    }

    #[test]
    fn reading_order_follows_requires_and_breaks_cycles_where_entered() {
        // c requires b requires a: a, b, c whatever the table order.
        assert_eq!(reading_order(&["c", "b", "a"], &[("c", "b"), ("b", "a")]), ["a", "b", "c"]);
        // The best ranked node comes as early as its prerequisites allow:
        // b (requires a) before the free c.
        assert_eq!(reading_order(&["b", "c", "a"], &[("b", "a")]), ["a", "b", "c"]);
        // A cycle x <-> y, z free: broken where it is entered (y first in the
        // table: its requirement x, then y), then z.
        let cycle = [("y", "x"), ("x", "y")];
        assert_eq!(reading_order(&["y", "x", "z"], &cycle), ["x", "y", "z"]);
        assert_eq!(reading_order(&["x", "y", "z"], &cycle), reading_order(&["x", "y", "z"], &cycle));
        // Edges to nodes outside the loadout are ignored.
        assert_eq!(reading_order(&["b", "a"], &[("b", "zz")]), ["b", "a"]);
    }

    #[test]
    fn headings_move_down_outside_code_fences() {
        let body = "# Title\n## Summary\n```python\n# a comment\n```\n#hashtag";
        assert_eq!(demote_headings(body), "#### Title\n##### Summary\n```python\n# a comment\n```\n#hashtag");
    }

    #[test]
    fn file_names_refuse_paths() {
        assert_eq!(file_name("phase2-task3", "implementer").unwrap(), "phase2-task3-loadout.md");
        assert_eq!(file_name("t1", "code_reviewer").unwrap(), "t1-code_reviewer-loadout.md");
        assert!(file_name("../x", "implementer").is_err());
        assert!(file_name("a/b", "implementer").is_err());
        assert!(file_name("", "implementer").is_err());
    }

    /// A graph of `n` nodes tagged `t`, each with a body of `lines[i]` lines
    /// and the context size `sizes[i]`.
    fn synthetic(bodies: &[(String, &str)]) -> (CompiledGraph, BTreeMap<String, TextDoc>) {
        let nodes: Vec<Value> = bodies
            .iter()
            .enumerate()
            .map(|(i, (_, size))| {
                json!({"id": format!("n{i:02}"), "title": format!("Node {i}"), "tags": ["t"], "status": "established",
                       "confidence": 0.9, "activations": 1 + i, "context_size": size, "node_origin": "global"})
            })
            .collect();
        let docs = bodies
            .iter()
            .enumerate()
            .map(|(i, (body, _))| {
                let id = format!("n{i:02}");
                let doc = TextDoc {
                    id: id.clone(),
                    path: format!("global-vault/{id}.md"),
                    name: String::new(),
                    kind: "knowledge".into(),
                    signature: String::new(),
                    doc: String::new(),
                    body: body.clone(),
                };
                (id, doc)
            })
            .collect();
        (CompiledGraph::from_value(json!({"nodes": nodes, "links": []})).unwrap(), docs)
    }

    fn request(available: i64) -> LoadoutRequest {
        LoadoutRequest {
            task_id: "t1".into(),
            phase: Some("1".into()),
            title: "Task one".into(),
            role: "implementer".into(),
            seed_tags: vec!["t".into()],
            available_context: Some(available),
            generated_at: "2025-06-01T13:55:00Z".into(),
            graph_version: "0123456789abcdef".into(),
            global_vault: None,
        }
    }

    #[test]
    fn fr_l10b_full_mode_trims_the_lowest_ranked_first() {
        let tokenizer = Tokenizer::default();
        let long = (0..400).map(|i| format!("line {i} of a long node body about spectral solvers")).collect::<Vec<_>>();
        let bodies: Vec<(String, &str)> = (0..4).map(|_| (long.join("\n"), "large")).collect();
        let (graph, docs) = synthetic(&bodies);
        let mut c = config();
        c.loadout.max_loadout_tokens = 3000;
        let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        let l = generate(&request(1_000_000), &graph, &subgraph, &docs, Some(&[]), &c, &tokenizer);
        assert_eq!(l.mode, LoadoutMode::Full);
        assert!(l.content_tokens <= 3000, "{}", l.content_tokens);
        // Every node was cut, and the best ranked (n03: most activations) kept the most.
        assert_eq!(l.trimmed.len(), 4);
        let at = |id: &str| l.text.find(&format!("#### {id}:"));
        assert!(at("n03").is_some(), "{}", l.text);
        assert!(at("n00").is_none_or(|p| p > at("n03").unwrap()));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        #[test]
        fn fr_l10b_full_content_never_exceeds_max_loadout_tokens(
            lines in proptest::collection::vec(0usize..300, 1..8),
            sizes in proptest::collection::vec(0usize..3, 8),
            max in 50u32..6000,
        ) {
            let tokenizer = Tokenizer::default();
            let names = ["small", "medium", "large"];
            let bodies: Vec<(String, &str)> = lines
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let body = (0..*n).map(|j| format!("## h{j}\nword{i} {j} grid Fourier épsilon")).collect::<Vec<_>>().join("\n");
                    (body, names[sizes[i]])
                })
                .collect();
            let (graph, docs) = synthetic(&bodies);
            let mut c = config();
            c.loadout.max_loadout_tokens = max;
            let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
            let l = generate(&request(10_000_000), &graph, &subgraph, &docs, Some(&[]), &c, &tokenizer);
            // Measure the delivered section from the file itself.
            let section = l.text.split("### Content\n\n").nth(1).map(|rest| {
                let rest = rest.split("## Known Pitfalls").next().unwrap_or("");
                rest.split("Not inlined (").next().unwrap_or("")
            });
            let measured = section.map_or(0, |s| tokenizer.count(s));
            proptest::prop_assert!(l.content_tokens <= max as usize, "{} > {max}", l.content_tokens);
            proptest::prop_assert_eq!(measured, l.content_tokens);
        }
    }

    #[test]
    fn nfr_r05_degraded_without_search_layer_has_no_content() {
        let (graph, docs) = synthetic(&[("## Summary\nSecret summary.".into(), "small")]);
        let c = config();
        let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        let l = generate(&request(100_000), &graph, &subgraph, &docs, None, &c, &Tokenizer::default());
        assert!(l.text.contains("qmd_available: false\n"));
        assert!(!l.text.contains("Secret summary") && !l.text.contains("### Summaries"));
        // The node table keeps paths and confidence.
        assert!(l.text.contains("| n00 | global | 0.90 | 1 | global-vault/n00.md |"), "{}", l.text);
        let mut c = config();
        c.loadout.mode_selection.low_threshold = u32::MAX;
        let l = generate(&request(100_000), &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert!(l.text.contains("qmd_available: true\n") && l.text.contains("Secret summary"), "{}", l.text);
    }

    #[test]
    fn an_unknown_context_limit_takes_the_default_mode() {
        let (graph, docs) = synthetic(&[("## Summary\nShort.".into(), "small")]);
        let mut c = config();
        let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        let unknown = LoadoutRequest { available_context: None, ..request(0) };
        let l = generate(&unknown, &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert_eq!(l.mode, LoadoutMode::Routing);
        assert!(l.text.contains("available_context: null\n"), "{}", l.text);
        c.loadout.mode_selection.default_mode = LoadoutMode::Full;
        let l = generate(&unknown, &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert_eq!(l.mode, LoadoutMode::Full);
    }

    #[test]
    fn header_scalars_are_quoted_when_not_plain() {
        assert_eq!(scalar("phase2-task3"), "phase2-task3");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar("2025-06-01T13:55:00Z"), "2025-06-01T13:55:00Z");
        assert_eq!(scalar("key:"), "\"key:\"");
        assert_eq!(scalar("2"), "\"2\"");
        assert_eq!(scalar("true"), "\"true\"");
        let header = read_header("---\ntask_id: t\ngraph_version: abc\n---\nbody: no\n");
        assert_eq!(header.len(), 2);
        assert_eq!(header["graph_version"], "abc");
    }

    /// The seed `zz` (tentative, agent-written, tag `t`) requires the
    /// established `a1`; `zz` has a pitfall edge to the session `s1`; the
    /// global node `g1` is reached from `zz` too.
    fn cut_graph() -> (CompiledGraph, BTreeMap<String, TextDoc>) {
        let graph = json!({
            "nodes": [
                {"id": "a1", "title": "A1", "tags": [], "status": "established", "source": "human",
                 "confidence": 0.9, "node_origin": "local"},
                {"id": "g1", "title": "G1", "tags": [], "status": "established", "source": "human",
                 "confidence": 0.95, "node_origin": "global", "content_ref": "docs/g1.md"},
                {"id": "s1", "title": "Session s1", "tags": [], "domain": "session", "status": "established",
                 "source": "agent", "confidence": 1.0, "node_origin": "local", "content_ref": "sessions/s1.md"},
                {"id": "zz", "title": "ZZ", "tags": ["t"], "status": "tentative", "source": "agent",
                 "confidence": 0.5, "node_origin": "local"},
            ],
            "links": [
                {"source": "zz", "target": "a1", "type": "requires"},
                {"source": "zz", "target": "g1", "type": "requires"},
                {"source": "zz", "target": "s1", "type": "pitfall", "weight": 1.0, "note": "k = 0 divides by zero"},
            ]
        });
        let doc = |id: &str, path: &str| TextDoc {
            id: id.into(),
            path: path.into(),
            name: String::new(),
            kind: "knowledge".into(),
            signature: String::new(),
            doc: String::new(),
            body: format!("Body of {id}."),
        };
        let docs = [
            doc("a1", "knowledge/local-nodes/a1.md"),
            doc("g1", "global-vault/g1.md"),
            doc("s1", ""),
            doc("zz", "knowledge/local-nodes/zz.md"),
        ]
        .into_iter()
        .map(|d| (d.id.clone(), d))
        .collect();
        (CompiledGraph::from_value(graph).unwrap(), docs)
    }

    #[test]
    fn pitfalls_always_reach_the_agent_when_their_source_is_cut_by_the_cap() {
        let (graph, docs) = cut_graph();
        let mut c = config();
        c.loadout.max_nodes_per_loadout = 1;
        // A subgraph whose only node is a1: the warning of the cut seed zz is still rendered.
        let mut subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        subgraph.nodes.retain(|n| n.id == "a1");
        let l = generate(&request(100_000), &graph, &subgraph, &docs, None, &c, &Tokenizer::default());
        assert!(l.text.contains("- **zz** -> `s1` (Session s1): k = 0 divides by zero"), "{}", l.text);
        assert!(!l.text.contains("_No known pitfalls._"), "{}", l.text);
    }

    #[test]
    fn agents_can_open_what_a_loadout_names_global_paths_are_absolute() {
        let (graph, docs) = cut_graph();
        let c = config();
        let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        // Routing mode (a small context): summaries name their paths.
        let request = LoadoutRequest { global_vault: Some("/home/me/vault/".into()), ..request(1_000) };
        let l = generate(&request, &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert!(l.text.contains("| /home/me/vault/g1.md |"), "{}", l.text);
        assert!(l.text.contains("Path: `/home/me/vault/g1.md`"), "{}", l.text);
        assert!(!l.text.contains("global-vault/"), "{}", l.text);
        // A node without a document: its content_ref, under knowledge/ for a local node.
        assert!(l.text.contains("| knowledge/sessions/s1.md |"), "{}", l.text);
        assert_eq!(content_ref_path(node_index(&graph).get("g1").copied(), Some("/v")).unwrap(), "/v/docs/g1.md");
    }

    #[test]
    fn agent_written_content_is_marked_with_status_and_source() {
        let (graph, docs) = cut_graph();
        let c = config();
        let subgraph = query(&graph, &c, "implementer", &["t".into()]).unwrap();
        let l = generate(&request(1_000_000), &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert!(l.text.contains("| Read | Status | Source |\n"), "{}", l.text);
        let row = |id: &str| l.text.lines().find(|line| line.starts_with(&format!("| {id} |"))).unwrap().to_owned();
        assert!(row("zz").ends_with("| tentative, **unreviewed** | agent |"), "{}", row("zz"));
        assert!(row("s1").ends_with("| established, **unreviewed** | agent |"), "{}", row("s1"));
        assert!(row("a1").ends_with("| established | human |"), "{}", row("a1"));
        assert!(l.text.contains("#### zz: ZZ [unreviewed: tentative, source agent]"), "{}", l.text);
        assert!(l.text.contains("#### a1: A1\n"), "{}", l.text);
        assert!(l.text.contains("_**Unreviewed** (tentative, or written by an agent"), "{}", l.text);
    }

    #[test]
    fn a_loadout_without_tags_has_no_nodes_and_says_so() {
        let (graph, docs) = cut_graph();
        let c = config();
        let subgraph = crate::query::empty(&c, "implementer").unwrap();
        let request = LoadoutRequest { seed_tags: Vec::new(), ..request(100_000) };
        let l = generate(&request, &graph, &subgraph, &docs, Some(&[]), &c, &Tokenizer::default());
        assert_eq!(l.node_count, 0);
        assert!(l.text.contains("seed_tags: []\nagent_role: implementer\nnode_count: 0\n"), "{}", l.text);
        assert!(l.text.contains("_No nodes: the task has no `akms_tags`"), "{}", l.text);
        assert!(l.text.contains("_No known pitfalls._"), "{}", l.text);
    }

    #[test]
    fn no_stale_loadouts_inputs_hash_covers_config_record_and_documents() {
        let (_, docs) = cut_graph();
        let c = config();
        let record = json!({"task_id": "t1", "title": "One"});
        let record = record.as_object().unwrap();
        let ids = vec!["a1".to_owned()];
        let base = inputs_hash(&c, record, "/v", &docs, &ids);
        assert_eq!(base, inputs_hash(&c, record, "/v", &docs, &ids));
        let mut other = c.clone();
        other.loadout.max_nodes_per_loadout = 2;
        assert_ne!(base, inputs_hash(&other, record, "/v", &docs, &ids));
        let renamed = json!({"task_id": "t1", "title": "Two"});
        assert_ne!(base, inputs_hash(&c, renamed.as_object().unwrap(), "/v", &docs, &ids));
        let mut edited = docs.clone();
        edited.get_mut("a1").unwrap().body.push_str(" Edited.");
        assert_ne!(base, inputs_hash(&c, record, "/v", &edited, &ids));
        assert_ne!(base, inputs_hash(&c, record, "/w", &docs, &ids));
        // Reuse compares everything but the timestamp.
        let a = "---\ntask_id: t\ngenerated_at: 1\n---\n\nbody\n";
        assert!(same_loadout(a, &a.replace("generated_at: 1", "generated_at: 2")));
        assert!(!same_loadout(a, &a.replace("body", "other")));
        assert!(!same_loadout(a, "---\ntask_id: t\n---\n\nbody\ngenerated_at: 1\n"));
    }
}
