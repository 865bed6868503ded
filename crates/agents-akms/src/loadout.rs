//! Loadouts (spec 4.6 and 5.4): the Markdown file a task agent reads, made
//! from the subgraph of [`crate::query`] and the text the search layer
//! retrieved within it.
//!
//! The structure is the frozen contract: a YAML header (task, phase,
//! `generated_at`, `graph_version`, seed tags, role, node count, mode,
//! available context, `qmd_available`), then `# Loadout: <task>` with
//! `## Domain Knowledge` (the node table, then `### Summaries` in routing
//! mode or `### Content` in full mode), `## Known Pitfalls` (always),
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
//!   ([`agents_acms::pipeline::components::GreedyPacker`]) with one
//!   allocation per node proportional to its `context_size` hint, best
//!   ranked first, cut line-wise when a node does not fit; the delivered
//!   content section is then measured with the shared tokenizer and the
//!   lowest-ranked block dropped until it fits `max_loadout_tokens`.
//! - **Degraded** (no search layer, NFR-R05): the table, paths, confidence,
//!   pitfall warnings, session history and reading order; no summaries, no
//!   content, `qmd_available: false`.
//!
//! Generation is a pure function of its inputs (NFR-D02): the timestamp is
//! handed in, every list is sorted or ranked with ties by id.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use agents_acms::pipeline::components::{Allocation, BudgetPacker, GreedyPacker, ScoreParts, ScoredFragment};
use agents_acms::pipeline::piece::{InlineRenderer, Piece};
use agents_core::tokens::TokenCounter;
use agents_search::TextDoc;
use serde::Serialize;
use serde_json::{Map, Value};

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
    use sha2::{Digest, Sha256};
    Sha256::digest(graph_json).iter().take(8).map(|b| format!("{b:02x}")).collect()
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
pub fn full_cost(graph: &Value, subgraph: &Subgraph, config: &PropagationConfig) -> u64 {
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

fn node_index(graph: &Value) -> BTreeMap<&str, &Map<String, Value>> {
    graph["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n.get("id")?.as_str()?, n.as_object()?)))
        .collect()
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
            inline.iter().filter_map(|r| packed.get(r.id).map(|c| content_block(r.id, r.title, c))).collect();
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

/// Spec 4.6's reading order: a node after the nodes it `requires` (among the
/// loadout's nodes), otherwise in table order; a cycle is broken by taking the
/// smallest id left.
pub fn reading_order(ids: &[&str], requires: &[(&str, &str)]) -> Vec<String> {
    let members: BTreeSet<&str> = ids.iter().copied().collect();
    let mut needs: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to) in requires {
        if from != to && members.contains(from) && members.contains(to) {
            needs.entry(from).or_default().insert(to);
        }
    }
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut order = Vec::with_capacity(ids.len());
    while order.len() < members.len() {
        let ready = ids
            .iter()
            .find(|id| !done.contains(*id) && needs.get(*id).is_none_or(|n| n.iter().all(|d| done.contains(d))));
        let next = match ready {
            Some(id) => *id,
            None => match members.iter().find(|id| !done.contains(*id)) {
                Some(id) => *id,
                None => break,
            },
        };
        done.insert(next);
        order.push(next.to_owned());
    }
    order
}

/// Renders the loadout of `request` over `graph` and its `subgraph`. `docs`
/// are the nodes' documents (their paths; their text only with the search
/// layer); `passages` is what the search layer found within the node set, by
/// (path, line), and `None` when it is unavailable: the degraded mode.
pub fn generate(
    request: &LoadoutRequest,
    graph: &Value,
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
            let path = doc
                .map(|d| d.path.clone())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| attr(node, "content_ref").map(|r| format!("knowledge/{r}")).unwrap_or_default());
            Row {
                id: &n.id,
                title: &n.title,
                origin: attr(node, "node_origin").unwrap_or("global"),
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
    out.push_str("| Node | Origin | Confidence | Priority | Path | Read |\n|---|---|---|---|---|---|\n");
    for (i, row) in rows.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {:.2} | {} | {} | {} |\n",
            cell(row.id),
            cell(row.origin),
            row.confidence,
            i + 1,
            cell(&row.path),
            row.read.name()
        ));
    }
    if rows.is_empty() {
        out.push_str("\n_No node matched the seed tags._\n");
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
                out.push_str(&format!("#### {}: {}\n\n", row.id, one_line(row.title)));
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
                    out.push_str(&format!("> Matched at {}:{}: {}\n\n", p.path, p.line, one_line(&p.text)));
                }
            }
        }
        let inline: Vec<&Row<'_>> = rows.iter().filter(|r| content.contains_key(r.id)).collect();
        if !inline.is_empty() {
            out.push_str("### Content\n\n");
            for row in inline {
                out.push_str(&content_block(row.id, &one_line(row.title), &content[row.id]));
            }
        }
        let missing: Vec<&Row<'_>> =
            rows.iter().filter(|r| r.read == ReadMode::Full && !content.contains_key(r.id)).collect();
        if !missing.is_empty() {
            let ids: Vec<String> = missing.iter().map(|r| format!("`{}`", r.path)).collect();
            out.push_str(&format!("Not inlined (no text, or over max_loadout_tokens): {}.\n\n", ids.join(", ")));
        }
    }

    // Pitfalls: every pitfall edge leaving a loadout node, always.
    let ids: BTreeSet<&str> = rows.iter().map(|r| r.id).collect();
    let links: Vec<&Value> = graph["links"].as_array().into_iter().flatten().collect();
    let mut pitfalls: Vec<(String, String, String)> = links
        .iter()
        .filter(|l| l["type"] == "pitfall")
        .filter_map(|l| {
            let (source, target) = (l["source"].as_str()?, l["target"].as_str()?);
            ids.contains(source)
                .then(|| (source.to_owned(), target.to_owned(), l["note"].as_str().unwrap_or("").to_owned()))
        })
        .collect();
    pitfalls.sort();
    pitfalls.dedup();
    out.push_str("## Known Pitfalls\n\n");
    for (source, target, note) in &pitfalls {
        let node = nodes.get(target.as_str()).copied();
        let title = attr(node, "title").unwrap_or(target);
        let mut line = format!("- **{source}** -> `{target}` ({})", one_line(title));
        if !note.trim().is_empty() {
            line.push_str(&format!(": {}", one_line(note)));
        }
        if let Some(r) = attr(node, "content_ref") {
            line.push_str(&format!(" (see `knowledge/{r}`)"));
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
    let session_ids: BTreeSet<&str> = ids.iter().copied().chain(pitfalls.iter().map(|(_, t, _)| t.as_str())).collect();
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
            if let Some(r) = attr(node, "content_ref") {
                line.push_str(&format!(" (`knowledge/{r}`)"));
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
    let requires: Vec<(&str, &str)> = links
        .iter()
        .filter(|l| l["type"] == "requires")
        .filter_map(|l| Some((l["source"].as_str()?, l["target"].as_str()?)))
        .collect();
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
            rows.iter().filter_map(|r| content.get(r.id).map(|c| content_block(r.id, &one_line(r.title), c))).collect();
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
    fn reading_order_follows_requires_and_breaks_cycles_by_id() {
        // c requires b requires a: a, b, c whatever the table order.
        assert_eq!(reading_order(&["c", "b", "a"], &[("c", "b"), ("b", "a")]), ["a", "b", "c"]);
        // A cycle x <-> y, z free: z first (ready, in table order), then the
        // smallest id of the cycle, then the other.
        let cycle = [("y", "x"), ("x", "y")];
        assert_eq!(reading_order(&["y", "x", "z"], &cycle), ["z", "x", "y"]);
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
    fn synthetic(bodies: &[(String, &str)]) -> (Value, BTreeMap<String, TextDoc>) {
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
        (json!({"nodes": nodes, "links": []}), docs)
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
}
