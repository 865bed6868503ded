//! One graph-update cycle (spec 5.5) on a synthetic 20,000-node vault
//! (`scripts/gen-vault.py`): an AgentMemory with ten `nodes_used` entries
//! (four hits with propagation, six boosts), two pitfalls and two new
//! knowledge drafts (dedup against the domain's tentative nodes), then the
//! recompilation of `graph.json` — everything `agents knowledge update` does
//! but re-indexing the search. Also timed: the compile alone (for
//! reference, split into parsing the sources and merging them) and replaying
//! an applied document (a no-op: only the overlay is read).
//!
//!     cargo bench -p agents-akms --bench update
//!
//! Target: one cycle under 2 s at 20,000 nodes.

mod common;

use agents_akms::update::update;
use agents_akms::{build, compile};

fn main() {
    let n = 20_000usize;
    let runs = 5usize;
    let (_dir, layout, options) = common::generated_vault(n);
    build(&layout, &options).expect("the synthetic vault builds");
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(layout.graph_json()).expect("graph.json")).expect("json");

    // Nodes with predecessors (so hits propagate), global and local.
    let mut targets: Vec<&str> = graph["links"]
        .as_array()
        .expect("links")
        .iter()
        .filter(|l| l["type"] == "requires" || l["type"] == "refines")
        .filter_map(|l| l["target"].as_str())
        .filter(|t| t.starts_with("g-") || t.starts_with("l-"))
        .collect();
    targets.sort_unstable();
    targets.dedup();
    let used: Vec<&str> = targets.iter().step_by(targets.len() / 10).take(10).copied().collect();

    let compiled = common::median_cold(runs, || {
        let c = compile(&layout, &options).expect("compiles");
        assert_eq!(c.node_count, n);
    });
    let loaded = common::median_cold(runs, || {
        std::hint::black_box(agents_akms::compile::Sources::load(&layout));
    });
    let sources = agents_akms::compile::Sources::load(&layout);
    let (state, _) = agents_akms::compile::read_local_state(&layout);
    let merged = common::median_cold(runs, || {
        std::hint::black_box(sources.compile(&layout, &options, &state).expect("compiles"));
    });
    let mut run = 0usize;
    let cycle = common::median_cold(runs, || {
        let doc = layout.knowledge().join("sessions").join(format!("bench-{run}.md"));
        std::fs::write(&doc, memory(run, &used)).expect("session written");
        run += 1;
        let report = update(&layout, &options, &[doc]).expect("the update applies");
        assert_eq!(report.applied.len(), 1);
    });
    let replayed = common::median_cold(runs, || {
        let doc = layout.knowledge().join("sessions").join("bench-0.md");
        let report = update(&layout, &options, &[doc]).expect("the replay is checked");
        assert_eq!(report.skipped.len(), 1);
    });
    println!(
        "{:>7} {:>13} {:>15} {:>20} {:>18} {:>12}",
        "nodes", "compile (ms)", "of which parse", "merge + serialise", "update cycle (ms)", "replay (ms)"
    );
    println!(
        "{n:>7} {:>13.1} {:>15.1} {:>20.1} {:>18.1} {:>12.1}",
        common::ms(compiled),
        common::ms(loaded),
        common::ms(merged),
        common::ms(cycle),
        common::ms(replayed)
    );
}

/// An AgentMemory over `used`: the first four are hits, the rest boosts.
fn memory(run: usize, used: &[&str]) -> String {
    let mut text = format!(
        "---\ntask_id: BENCH-{run}\ntask_description: bench\nphase_id: 1\ntimestamp: 2026-03-04T10:00:00\nagent_model: bench\nloadout_used: loadouts/l.md\nstatus: complete\ntests_passed: 1\ntests_total: 1\nnodes_used:\n"
    );
    for (i, id) in used.iter().enumerate() {
        let (useful, coverage) = if i < 4 { (false, "outdated") } else { (true, "sufficient") };
        text.push_str(&format!("  - id: {id}\n    useful: {useful}\n    coverage: {coverage}\n"));
    }
    text.push_str(&format!(
        "pitfalls_discovered:\n  - node_ref: {}\n    description: \"bench pitfall {run}\"\n    severity: high\n  - node_ref: null\n    description: \"unattached\"\n    severity: low\n",
        used[0]
    ));
    text.push_str(&format!(
        "new_knowledge:\n  - suggested_id: bench-idea-{run}\n    domain: domain-3\n    content_draft: \"a new idea number {run} about node bodies\"\n    status: tentative\n    source: agent\n  - suggested_id: bench-other-{run}\n    domain: domain-5\n    title: \"Node g-000005\"\n    content_draft: \"Body text Body text\"\n    status: tentative\n    source: agent\n"
    ));
    text.push_str("akms_schema: v2\n---\n");
    text
}
