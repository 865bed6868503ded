//! Health and review reports (spec 5.7, 3.7: FR-R01, FR-R02) over the
//! compiled graph, the compiler's warnings and the update log
//! (`knowledge/logs/update.jsonl`, written by [`crate::update`]).
//!
//! The health report lists every item of 5.7: nodes with degraded
//! confidence (default and local side by side), nodes flagged
//! `missing-detail` or `outdated`, tentative nodes awaiting promotion with
//! their location, dedup events, docstring-drift warnings (code-mirror nodes
//! set to `draft`), id collisions between global and local nodes, orphaned
//! and stale nodes, blocked downstream tasks and orphaned overlay entries.
//! The review report is the FR-R01 subset for one phase: new tentative nodes,
//! dedup events, nodes whose confidence the phase degraded, new pitfalls,
//! blocked downstream tasks and id collisions.
//!
//! Event sections cover one phase: the latest in the log unless one is
//! asked for. A task is *blocked* when its evidence listed, in
//! `nodes_missing`, a node that exists only as a tentative node: it waits for
//! a human to promote it. Both reports carry one table row per node they
//! mention (status, origin, default and local confidence, flags: UR-06,
//! UR-08). Everything is sorted; "today" is handed in, never read here.

use crate::graph::{CompiledGraph, GraphNode};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::Serialize;

use crate::config::PropagationConfig;
use crate::diag::{Diagnostic, ProblemKind};
use crate::update::{Change, LogEntry};

/// One row of the node table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    pub id: String,
    pub status: String,
    /// `node_origin`: global, local or code-mirror.
    pub origin: String,
    /// The seed confidence of the node's file (the global default).
    pub confidence_default: f64,
    /// The effective confidence (the local override when there is one).
    pub confidence: f64,
    pub flags: Vec<String>,
}

/// A node flagged by a hit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Flagged {
    pub node: String,
    pub coverage: String,
    pub session: String,
}

/// A tentative node awaiting promotion.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Tentative {
    pub node: String,
    /// `global` or `local`.
    pub origin: String,
    pub file: PathBuf,
}

/// A dedup event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DedupEvent {
    pub session: String,
    pub suggested_id: String,
    pub matched: String,
    pub matched_origin: String,
    pub score: f64,
    pub action: String,
    pub into: String,
}

/// A pitfall recorded by a session.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct PitfallEvent {
    pub node: Option<String>,
    pub session: String,
    pub severity: String,
    pub description: String,
}

/// A task waiting for a tentative node's promotion.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Blocked {
    pub task: String,
    pub session: String,
    pub node: String,
    pub description: String,
}

/// A local node skipped because a global node has its id (FR-O03).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Collision {
    pub node: String,
    pub local_file: PathBuf,
}

/// A node not activated for `stale_node_days`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Stale {
    pub node: String,
    pub last_activated: String,
    pub days: i64,
}

/// The health report (5.7).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Health {
    /// The phase the event sections cover (`None`: no update yet).
    pub phase: Option<i64>,
    pub degraded: Vec<String>,
    pub flagged: Vec<Flagged>,
    pub tentative: Vec<Tentative>,
    pub dedup: Vec<DedupEvent>,
    pub drift: Vec<String>,
    pub collisions: Vec<Collision>,
    pub orphans: Vec<String>,
    pub stale: Vec<Stale>,
    pub blocked: Vec<Blocked>,
    pub orphaned_overlay: Vec<String>,
    /// Edges skipped because a node they name is in no source (an orphaned
    /// overlay edge, or an edge to a global node while the vault is missing),
    /// as `source -> target (file)`.
    pub skipped_edges: Vec<String>,
    /// Sections not in 5.7 but in the review: what the phase added.
    pub new_tentative: Vec<String>,
    pub new_pitfalls: Vec<PitfallEvent>,
    /// Nodes whose confidence the phase lowered.
    pub degraded_by_phase: Vec<String>,
    /// One row per node mentioned above.
    pub nodes: Vec<NodeRow>,
}

/// The review report (FR-R01, FR-R02): the phase's part of the health report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Review {
    pub phase: Option<i64>,
    pub new_tentative: Vec<String>,
    pub dedup: Vec<DedupEvent>,
    pub degraded: Vec<String>,
    pub new_pitfalls: Vec<PitfallEvent>,
    pub blocked: Vec<Blocked>,
    pub collisions: Vec<Collision>,
    /// Code-mirror nodes set to `draft` by docstring drift (FR-R01).
    pub drift: Vec<String>,
    pub nodes: Vec<NodeRow>,
}

/// What the reports read.
pub struct Inputs<'a> {
    /// The compiled graph.
    pub graph: &'a CompiledGraph,
    /// The compiler's warnings (collisions, orphaned overlay entries).
    pub warnings: &'a [Diagnostic],
    /// Where each node was read from.
    pub files: &'a BTreeMap<String, PathBuf>,
    pub log: &'a [LogEntry],
    pub config: &'a PropagationConfig,
    /// Today, `YYYY-MM-DD`, for stale nodes.
    pub today: &'a str,
    /// The phase whose events to report (default: the latest in the log).
    pub phase: Option<i64>,
}

/// Computes the health report.
pub fn health(inputs: &Inputs) -> Health {
    let nodes: BTreeMap<&str, &GraphNode> = inputs.graph.nodes().iter().map(|n| (n.id(), n)).collect();
    let concept = |n: &GraphNode| n.domain() != "session" && n.origin() != Some("code-mirror");
    let mut h =
        Health { phase: inputs.phase.or_else(|| inputs.log.iter().map(|e| e.phase).max()), ..Health::default() };
    let events: Vec<&LogEntry> = inputs.log.iter().filter(|e| Some(e.phase) == h.phase).collect();

    let max = inputs.config.confidence.max_confidence;
    for (id, n) in &nodes {
        let (c, d) = (n.number("confidence").unwrap_or(0.0), n.number("confidence_default").unwrap_or(0.0));
        // A seed above max_confidence comes down to it on its first update:
        // the clamp, not a degradation.
        if concept(n) && c < d.min(max) - 1e-9 {
            h.degraded.push((*id).to_owned());
        }
        if concept(n) && n.status() == "tentative" {
            h.tentative.push(Tentative {
                node: (*id).to_owned(),
                origin: n.origin().unwrap_or_default().to_owned(),
                file: inputs.files.get(*id).cloned().unwrap_or_default(),
            });
        }
        if n.origin() == Some("code-mirror") && n.status() == "draft" {
            h.drift.push((*id).to_owned());
        }
        if let Some(last) = n.text("last_activated")
            && let (Some(then), Some(now)) = (day_number(last), day_number(inputs.today))
            && now - then > i64::from(inputs.config.graph.stale_node_days)
        {
            h.stale.push(Stale { node: (*id).to_owned(), last_activated: last.to_owned(), days: now - then });
        }
    }
    if inputs.config.graph.orphan_warning {
        let mut linked: BTreeSet<&str> = BTreeSet::new();
        for link in inputs.graph.links() {
            linked.extend([link.source(), link.target()]);
        }
        h.orphans = nodes
            .iter()
            .filter(|(id, n)| concept(n) && !linked.contains(*id))
            .map(|(id, _)| (*id).to_owned())
            .collect();
    }
    for w in inputs.warnings {
        match w.kind {
            ProblemKind::IdCollision => {
                let id = w.message.split('`').nth(1).unwrap_or_default().to_owned();
                h.collisions.push(Collision { node: id, local_file: w.file.clone() });
            }
            ProblemKind::OrphanedOverlay | ProblemKind::UnknownEdgeTarget => {
                if let Some(id) = w.field.as_deref().and_then(|f| f.strip_prefix("nodes.")) {
                    h.orphaned_overlay.push(id.to_owned());
                } else if w.message.contains("skipped") {
                    let mut names = w.message.split('`').skip(1).step_by(2);
                    if let (Some(source), Some(target)) = (names.next(), names.next()) {
                        h.skipped_edges.push(format!("{source} -> {target} ({})", w.file.display()));
                    }
                }
            }
            _ => {}
        }
    }

    let mut flagged = BTreeSet::new();
    // Per node, its confidence before the phase's first change and after
    // its last (the log is in order).
    let mut span: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for e in &events {
        if let Change::Hit { node, before, after, .. }
        | Change::Propagated { node, before, after, .. }
        | Change::Boost { node, before, after } = &e.change
        {
            span.entry(node.clone()).or_insert((*before, *after)).1 = *after;
        }
        match &e.change {
            Change::Hit { node, coverage, .. } => {
                flagged.insert(Flagged { node: node.clone(), coverage: coverage.clone(), session: e.session.clone() });
            }
            Change::Dedup { suggested_id, matched, matched_origin, score, action, into } => h.dedup.push(DedupEvent {
                session: e.session.clone(),
                suggested_id: suggested_id.clone(),
                matched: matched.clone(),
                matched_origin: matched_origin.clone(),
                score: *score,
                action: action.clone(),
                into: into.clone(),
            }),
            Change::NewNode { node, .. } => h.new_tentative.push(node.clone()),
            Change::Pitfall { node, description, severity } => h.new_pitfalls.push(PitfallEvent {
                node: node.clone(),
                session: e.session.clone(),
                severity: severity.clone(),
                description: description.clone(),
            }),
            Change::Missing { suggested_id, description, .. }
                if nodes.get(suggested_id.as_str()).is_some_and(|n| n.status() == "tentative") =>
            {
                h.blocked.push(Blocked {
                    task: e.task.clone(),
                    session: e.session.clone(),
                    node: suggested_id.clone(),
                    description: description.clone(),
                });
            }
            _ => {}
        }
    }
    h.flagged = flagged.into_iter().collect();
    // Degraded by the phase: lower at its end than before it, beyond what
    // the max_confidence clamp alone takes (1.0 found useful becomes 0.99).
    h.degraded_by_phase =
        span.into_iter().filter(|(_, (before, after))| *after < before.min(max) - 1e-9).map(|(id, _)| id).collect();
    h.dedup.sort_by(|a, b| (&a.session, &a.suggested_id, &a.into).cmp(&(&b.session, &b.suggested_id, &b.into)));
    h.new_tentative.sort();
    h.new_tentative.dedup();
    h.new_pitfalls.sort();
    h.blocked.sort();
    h.blocked.dedup();
    h.collisions.sort();
    h.orphaned_overlay.sort();
    h.skipped_edges.sort();

    // The table: one row per node mentioned.
    let mut mentioned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut flag = |id: &str, f: &str| {
        mentioned.entry(id.to_owned()).or_default().insert(f.to_owned());
    };
    h.degraded.iter().for_each(|id| flag(id, "degraded"));
    h.flagged.iter().for_each(|f| flag(&f.node, &f.coverage));
    h.tentative.iter().for_each(|t| flag(&t.node, "tentative"));
    h.new_tentative.iter().for_each(|id| flag(id, "new"));
    h.new_pitfalls.iter().filter_map(|p| p.node.as_deref()).for_each(|id| flag(id, "pitfall"));
    h.blocked.iter().for_each(|b| flag(&b.node, "blocking"));
    h.dedup.iter().for_each(|d| flag(&d.into, "dedup"));
    h.drift.iter().for_each(|id| flag(id, "drift"));
    h.stale.iter().for_each(|s| flag(&s.node, "stale"));
    h.orphans.iter().for_each(|id| flag(id, "orphan"));
    h.collisions.iter().for_each(|c| flag(&c.node, "collision"));
    h.nodes = mentioned
        .into_iter()
        .filter_map(|(id, flags)| {
            let n = nodes.get(id.as_str())?;
            Some(NodeRow {
                status: n.status().to_owned(),
                origin: n.origin().unwrap_or_default().to_owned(),
                confidence_default: n.number("confidence_default").unwrap_or(0.0),
                confidence: n.number("confidence").unwrap_or(0.0),
                flags: flags.into_iter().collect(),
                id,
            })
        })
        .collect();
    h
}

impl Health {
    /// The review report: the phase's FR-R01 items and their nodes' rows.
    pub fn review(&self) -> Review {
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        ids.extend(self.new_tentative.iter().map(String::as_str));
        ids.extend(self.dedup.iter().map(|d| d.into.as_str()));
        ids.extend(self.degraded_by_phase.iter().map(String::as_str));
        ids.extend(self.new_pitfalls.iter().filter_map(|p| p.node.as_deref()));
        ids.extend(self.blocked.iter().map(|b| b.node.as_str()));
        ids.extend(self.collisions.iter().map(|c| c.node.as_str()));
        ids.extend(self.flagged.iter().map(|f| f.node.as_str()));
        ids.extend(self.drift.iter().map(String::as_str));
        Review {
            phase: self.phase,
            new_tentative: self.new_tentative.clone(),
            dedup: self.dedup.clone(),
            degraded: self.degraded_by_phase.clone(),
            new_pitfalls: self.new_pitfalls.clone(),
            blocked: self.blocked.clone(),
            collisions: self.collisions.clone(),
            drift: self.drift.clone(),
            nodes: self.nodes.iter().filter(|r| ids.contains(r.id.as_str())).cloned().collect(),
        }
    }
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` (or a date-time starting with one).
pub fn day_number(text: &str) -> Option<i64> {
    let day = crate::evidence::iso_day(text)?;
    let (y, m, d): (i64, i64, i64) = (day[..4].parse().ok()?, day[5..7].parse().ok()?, day[8..10].parse().ok()?);
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_numbers() {
        assert_eq!(day_number("1970-01-01"), Some(0));
        assert_eq!(day_number("2000-03-01"), Some(11_017));
        assert_eq!(day_number("2026-03-04T10:00:00").unwrap() - day_number("2025-12-04").unwrap(), 90);
        assert_eq!(day_number("nope"), None);
    }

    fn inputs<'a>(graph: &'a CompiledGraph, log: &'a [LogEntry], config: &'a PropagationConfig) -> Inputs<'a> {
        static FILES: std::sync::OnceLock<BTreeMap<String, PathBuf>> = std::sync::OnceLock::new();
        Inputs {
            graph,
            warnings: &[],
            files: FILES.get_or_init(BTreeMap::new),
            log,
            config,
            today: "2026-01-02",
            phase: None,
        }
    }

    fn logged(change: Change) -> LogEntry {
        LogEntry {
            session: "session-t".into(),
            task: "T".into(),
            phase: 3,
            date: "2026-01-01".into(),
            document: "sessions/t.md".into(),
            change,
        }
    }

    /// Issue 18 item 8: a node at 1.0 found useful comes down to
    /// max_confidence (0.99): not degraded, in status or review; a node hit
    /// then boosted back within the phase is judged by where it ends.
    #[test]
    fn item_8_degraded_is_judged_against_the_value_before_the_phase_and_ignores_the_clamp() {
        let node = |id: &str, c: f64, d: f64| serde_json::json!({"id": id, "status": "established", "node_origin": "global", "domain": "d", "confidence": c, "confidence_default": d});
        let graph = serde_json::json!({"nodes": [
            node("seed", 0.99, 1.0),
            node("recovered", 0.8, 0.8),
            node("hit", 0.68, 0.8),
            node("earlier", 0.7, 0.8),
        ], "links": []});
        let graph = CompiledGraph::from_value(graph).unwrap();
        let log = vec![
            LogEntry {
                phase: 2,
                ..logged(Change::Hit { node: "earlier".into(), before: 0.8, after: 0.7, coverage: "outdated".into() })
            },
            logged(Change::Boost { node: "seed".into(), before: 1.0, after: 0.99 }),
            logged(Change::Hit { node: "recovered".into(), before: 0.8, after: 0.78, coverage: "outdated".into() }),
            logged(Change::Boost { node: "recovered".into(), before: 0.78, after: 0.8 }),
            logged(Change::Hit { node: "hit".into(), before: 0.8, after: 0.68, coverage: "missing-detail".into() }),
        ];
        let config = PropagationConfig::default();
        let h = health(&inputs(&graph, &log, &config));
        assert_eq!(h.degraded, ["earlier", "hit"], "against the default, the clamp aside");
        assert_eq!(h.review().degraded, ["hit"], "against the value before phase 3");
        assert_eq!(h.flagged.iter().map(|f| f.node.as_str()).collect::<Vec<_>>(), ["hit", "recovered"]);
    }

    /// Issue 18 item 8: the review lists docstring drift.
    #[test]
    fn item_8_the_review_includes_docstring_drift() {
        let graph = serde_json::json!({"nodes": [
            {"id": "mirror-src-a", "status": "draft", "node_origin": "code-mirror", "domain": "code-mirror", "confidence": 1.0, "confidence_default": 1.0},
        ], "links": []});
        let graph = CompiledGraph::from_value(graph).unwrap();
        let config = PropagationConfig::default();
        let r = health(&inputs(&graph, &[], &config)).review();
        assert_eq!(r.drift, ["mirror-src-a"]);
        assert_eq!(r.nodes[0].flags, ["drift"]);
    }

    #[test]
    fn fr_r01_the_review_lists_the_phase_and_its_nodes() {
        let graph = serde_json::json!({"nodes": [
            {"id": "a", "status": "established", "node_origin": "global", "domain": "d", "confidence": 0.5, "confidence_default": 0.9, "last_activated": "2025-01-01"},
            {"id": "b", "status": "tentative", "node_origin": "local", "domain": "d", "confidence": 0.5, "confidence_default": 0.5},
            {"id": "s", "status": "established", "node_origin": "local", "domain": "session", "confidence": 1.0, "confidence_default": 1.0},
        ], "links": [{"source": "a", "target": "s", "type": "pitfall", "weight": 1.0}]});
        let graph = CompiledGraph::from_value(graph).unwrap();
        let entry = |phase: i64, change: Change| LogEntry {
            session: "session-t".into(),
            task: "T".into(),
            phase,
            date: "2026-01-01".into(),
            document: "sessions/t.md".into(),
            change,
        };
        let log = vec![
            entry(1, Change::NewNode { node: "old".into(), file: "x".into(), domain: "d".into() }),
            entry(2, Change::Hit { node: "a".into(), before: 0.6, after: 0.5, coverage: "outdated".into() }),
            entry(2, Change::NewNode { node: "b".into(), file: "local-nodes/b.md".into(), domain: "d".into() }),
            entry(
                2,
                Change::Missing {
                    suggested_id: "b".into(),
                    domain: "d".into(),
                    priority: "high".into(),
                    description: "need b".into(),
                },
            ),
            entry(
                2,
                Change::Pitfall { node: Some("a".into()), description: "careful".into(), severity: "high".into() },
            ),
        ];
        let config = PropagationConfig::default();
        let files = BTreeMap::from([("b".to_owned(), PathBuf::from("knowledge/local-nodes/b.md"))]);
        let h = health(&Inputs {
            graph: &graph,
            warnings: &[],
            files: &files,
            log: &log,
            config: &config,
            today: "2026-01-02",
            phase: None,
        });
        assert_eq!(h.phase, Some(2));
        assert_eq!(h.degraded, ["a"]);
        assert_eq!(h.flagged[0].node, "a");
        assert_eq!(h.tentative[0].file, PathBuf::from("knowledge/local-nodes/b.md"));
        assert_eq!(h.stale[0].node, "a");
        assert_eq!(h.orphans, ["b"]);
        assert_eq!(h.blocked[0].node, "b");
        let r = h.review();
        assert_eq!(r.new_tentative, ["b"]);
        assert_eq!(r.degraded, ["a"]);
        assert_eq!(r.nodes.iter().map(|n| n.id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(r.nodes[1].flags, ["blocking", "new", "orphan", "tentative"]);
        let earlier = health(&Inputs {
            phase: Some(1),
            ..Inputs {
                graph: &graph,
                warnings: &[],
                files: &files,
                log: &log,
                config: &config,
                today: "2026-01-02",
                phase: None,
            }
        });
        assert_eq!(earlier.new_tentative, ["old"]);
    }
}
