//! `agents knowledge update|status|review|promote|suppress|restore`: evidence in,
//! health and review out, and the human's one-command review actions. Thin:
//! resolve the repository, call `agents_akms::{update, health}`, print.

use std::path::{Path, PathBuf};

use agents_akms::CompileOptions;
use agents_akms::health::{Health, NodeRow};
use agents_akms::update::{Change, Review};
use agents_akms::vault::Layout;
use serde::Serialize;

use super::knowledge::{into_anyhow, lock_knowledge, read_config, resolve};
use crate::exit::UsageError;
use crate::settings::Settings;

pub fn update(settings: &Settings, repo: Option<&Path>, documents: &[PathBuf]) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, repo)?;
    for doc in documents {
        if !doc.is_file() {
            return Err(UsageError(format!("{}: no such file", doc.display())).into());
        }
    }
    let _lock = lock_knowledge(settings, &layout)?;
    let vault = agents_engine::knowledge::Vault { layout: layout.clone(), options };
    let report = super::knowledge::service(settings).update(&vault, documents).map_err(super::knowledge::usage)?;
    for warning in &report.warnings {
        settings.printer.note(format!("warning: {warning}"));
    }
    if let Some(compiled) = &report.compiled {
        for warning in &compiled.warnings {
            settings.printer.note(format!("warning: {warning}"));
        }
    }
    settings.printer.emit(&report, || {
        let mut out = String::new();
        for doc in &report.applied {
            out.push_str(&format!("applied {} as {}\n", doc.file.display(), doc.session));
            for entry in report.changes.iter().filter(|e| e.session == doc.session) {
                out.push_str(&format!("  {}\n", describe(&entry.change)));
            }
        }
        for doc in &report.skipped {
            out.push_str(&format!("skipped {}: {} was already applied\n", doc.file.display(), doc.session));
        }
        if let Some(c) = &report.compiled {
            out.push_str(&format!(
                "Built {}: {} nodes, {} edges\n",
                layout.display(&layout.graph_json()).display(),
                c.node_count,
                c.edge_count
            ));
        } else {
            out.push_str("Nothing to apply; nothing written\n");
        }
        out
    })
}

/// One change in one line.
pub(crate) fn describe(change: &Change) -> String {
    match change {
        Change::Hit { node, before, after, coverage } => {
            format!("hit        {node} {before:.3} -> {after:.3} ({coverage})")
        }
        Change::Propagated { node, before, after, from, hops } => {
            format!("propagated {node} {before:.3} -> {after:.3} (from {from}, {hops} hop)")
        }
        Change::Boost { node, before, after } => format!("boost      {node} {before:.3} -> {after:.3}"),
        Change::Skipped { node, reason } => format!("skipped    {node} ({reason})"),
        Change::Pitfall { node, severity, description } => {
            format!("pitfall    {} [{severity}] {description}", node.as_deref().unwrap_or("(no node)"))
        }
        Change::NewNode { node, file, .. } => format!("new node   {node} ({file}, tentative)"),
        Change::Dedup { suggested_id, matched, matched_origin, score, action, into } => {
            format!("dedup      {suggested_id} ~ {matched} ({matched_origin}, {score:.2}): {action} into {into}")
        }
        Change::Missing { suggested_id, priority, .. } => format!("missing    {suggested_id} [{priority}]"),
    }
}

/// `status` (the whole health report) or `review` (the phase's FR-R01 part).
pub fn report(settings: &Settings, repo: Option<&Path>, phase: Option<i64>, review: bool) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, repo)?;
    let health = health_of(&layout, &options, phase)?;
    if review {
        let r = health.review();
        settings.printer.emit(&r, || review_text(&health))
    } else {
        settings.printer.emit(&health, || status_text(&health))
    }
}

/// The health of the repository's knowledge graph, with the events of
/// `phase` (the last update's phase when `None`).
pub(crate) fn health_of(layout: &Layout, options: &CompileOptions, phase: Option<i64>) -> anyhow::Result<Health> {
    let config = read_config(layout)?;
    let compiled = agents_akms::compile(layout, options).map_err(into_anyhow)?;
    let log = agents_akms::update::read_log(layout).map_err(into_anyhow)?;
    let now = agents_core::ids::to_iso(agents_core::ids::now_utc());
    let today = now.get(..10).unwrap_or_default();
    Ok(agents_akms::health::health(&agents_akms::health::Inputs {
        graph: &compiled.graph,
        warnings: &compiled.warnings,
        files: &compiled.files,
        log: &log,
        config: &config,
        today,
        phase,
    }))
}

/// The review report (FR-R01, FR-R02) as text: a table a line per node, then
/// one line per section.
pub(crate) fn review_text(health: &Health) -> String {
    let r = health.review();
    let mut out = format!("Review of {}\n", phase_name(r.phase));
    out.push_str(&table(&r.nodes));
    out.push_str(&section("new tentative nodes", r.new_tentative.clone()));
    out.push_str(&section("dedup events", r.dedup.iter().map(dedup_line).collect()));
    out.push_str(&section("degraded confidence", r.degraded.clone()));
    out.push_str(&section("new pitfalls", r.new_pitfalls.iter().map(pitfall_line).collect()));
    out.push_str(&section("blocked tasks", r.blocked.iter().map(blocked_line).collect()));
    out.push_str(&section("id collisions", r.collisions.iter().map(|c| c.node.clone()).collect()));
    out.push_str(&section("docstring drift", r.drift.clone()));
    out.push_str(
        "one command per node: agents knowledge promote ID | agents knowledge suppress ID | agents knowledge restore ID\n",
    );
    out
}

pub(crate) fn status_text(h: &Health) -> String {
    let mut out = format!("Health of the knowledge graph (events of {})\n", phase_name(h.phase));
    out.push_str(&table(&h.nodes));
    let rows: std::collections::BTreeMap<&str, &NodeRow> = h.nodes.iter().map(|r| (r.id.as_str(), r)).collect();
    let degraded = h
        .degraded
        .iter()
        .map(|id| match rows.get(id.as_str()) {
            Some(r) => format!("{id} {:.3} -> {:.3}", r.confidence_default, r.confidence),
            None => id.clone(),
        })
        .collect();
    out.push_str(&section("degraded confidence", degraded));
    out.push_str(&section(
        "flagged missing-detail/outdated",
        h.flagged.iter().map(|f| format!("{} ({}, {})", f.node, f.coverage, f.session)).collect(),
    ));
    out.push_str(&section(
        "tentative, awaiting promotion",
        h.tentative.iter().map(|t| format!("{} ({}: {})", t.node, t.origin, t.file.display())).collect(),
    ));
    out.push_str(&section("dedup events", h.dedup.iter().map(dedup_line).collect()));
    out.push_str(&section("docstring drift", h.drift.clone()));
    out.push_str(&section(
        "id collisions (global wins)",
        h.collisions.iter().map(|c| format!("{} ({})", c.node, c.local_file.display())).collect(),
    ));
    out.push_str(&section("orphaned nodes", h.orphans.clone()));
    out.push_str(&section(
        "stale nodes",
        h.stale.iter().map(|s| format!("{} (last {}, {} days)", s.node, s.last_activated, s.days)).collect(),
    ));
    out.push_str(&section("blocked tasks", h.blocked.iter().map(blocked_line).collect()));
    out.push_str(&section("orphaned overlay entries", h.orphaned_overlay.clone()));
    out.push_str(&section("skipped edges (a node they name is in no source)", h.skipped_edges.clone()));
    out
}

fn phase_name(phase: Option<i64>) -> String {
    phase.map_or_else(|| "no update yet".to_owned(), |p| format!("phase {p}"))
}

fn table(rows: &[NodeRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut t = crate::output::table(&["node", "status", "origin", "default", "local", "flags"]);
    for r in rows {
        t.add_row(vec![
            r.id.clone(),
            r.status.clone(),
            r.origin.clone(),
            format!("{:.3}", r.confidence_default),
            format!("{:.3}", r.confidence),
            r.flags.join(", "),
        ]);
    }
    format!("{t}\n")
}

fn section(name: &str, items: Vec<String>) -> String {
    if items.is_empty() {
        format!("{name}: none\n")
    } else {
        format!("{name} ({}): {}\n", items.len(), items.join("; "))
    }
}

fn dedup_line(d: &agents_akms::health::DedupEvent) -> String {
    format!("{} ~ {} ({}, {:.2}): {} into {}", d.suggested_id, d.matched, d.matched_origin, d.score, d.action, d.into)
}

fn pitfall_line(p: &agents_akms::health::PitfallEvent) -> String {
    format!("{} [{}] {}", p.node.as_deref().unwrap_or("(no node)"), p.severity, p.description)
}

fn blocked_line(b: &agents_akms::health::Blocked) -> String {
    format!("{} waits for {} ({})", b.task, b.node, b.description)
}

/// What `promote` and `suppress` print.
#[derive(Serialize)]
struct StatusReport<'a> {
    #[serde(flatten)]
    change: &'a agents_akms::update::StatusChange,
    /// The manual step that would share a promoted node across repositories.
    manual_step: Option<String>,
}

pub fn set_status(settings: &Settings, repo: Option<&Path>, id: &str, review: Review) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, repo)?;
    let _lock = lock_knowledge(settings, &layout)?;
    let change = agents_akms::update::set_status(&layout, &options, id, review).map_err(into_anyhow)?;
    let manual_step = (review == Review::Promote).then(|| {
        format!(
            "to share it with every repository, move {} into the global vault {} (a manual step, FR-O08)",
            change.node_file.display(),
            layout.global_vault.display()
        )
    });
    let report = StatusReport { change: &change, manual_step };
    settings.printer.emit(&report, || {
        let mut out = format!("{}: {} -> {} ({})\n", change.node, change.from, change.to, change.file.display());
        if let Some(step) = &report.manual_step {
            out.push_str(step);
            out.push('\n');
        }
        out
    })
}
