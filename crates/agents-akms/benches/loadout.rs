//! Loadouts for a 10-task phase on synthetic vaults of 500 and 5,000 nodes
//! (`scripts/gen-vault.py`), as `agents knowledge loadout --phase` makes
//! them: read and hash `graph.json`, read the nodes' documents, open the
//! knowledge search index, then per task (seed tag `tag-<i>`) the subgraph
//! query, the passages within the node set, the rendering and the atomic
//! write. Three ways: with the search layer and a cold passage cache, with a
//! warm cache, and degraded (no search layer).
//!
//!     cargo bench -p agents-akms --bench loadout
//!
//! Spec NFR-P03: under 30 s for a phase of up to 10 tasks; our target: 1 s.

mod common;

use common::{median, ms};

use std::collections::BTreeMap;
use std::path::Path;

use agents_akms::loadout::{self, LoadoutRequest};
use agents_akms::{Layout, build};
use agents_core::tokens::Tokenizer;

const TASKS: usize = 10;

fn main() {
    println!(
        "{:>7} {:>6} {:>16} {:>16} {:>15} {:>12}",
        "nodes", "tasks", "cold cache (ms)", "warm cache (ms)", "degraded (ms)", "per task (ms)"
    );
    for (n, runs) in [(500usize, 9usize), (5_000, 5)] {
        let (dir, layout, options) = common::generated_vault(n);
        build(&layout, &options).expect("the synthetic vault builds");
        // The knowledge search index, as `agents knowledge build` writes it.
        let index = dir.path().join("index");
        {
            let graph = agents_akms::CompiledGraph::load(&layout.graph_json()).expect("graph.json");
            let docs = agents_akms::search::documents(&layout, &graph);
            let mut backend = agents_search::open_text_backend(agents_search::TextBackendKind::Tantivy, &index)
                .expect("a text index");
            backend.upsert(&docs).expect("indexed");
            backend.commit().expect("committed");
        }
        let tokenizer = Tokenizer::default();
        tokenizer.preload();
        let cache = layout.knowledge().join("cache");
        let cold = median(runs, || {
            let _ = std::fs::remove_dir_all(&cache);
            phase(&layout, Some(&index), &tokenizer);
        });
        let warm = median(runs, || phase(&layout, Some(&index), &tokenizer));
        let degraded = median(runs, || phase(&layout, None, &tokenizer));
        println!(
            "{n:>7} {TASKS:>6} {:>16.1} {:>16.1} {:>15.1} {:>12.2}",
            ms(cold),
            ms(warm),
            ms(degraded),
            ms(cold) / TASKS as f64
        );
    }
}

/// One phase: everything `agents knowledge loadout --phase` does after
/// parsing its arguments.
fn phase(layout: &Layout, index: Option<&Path>, tokenizer: &Tokenizer) {
    let bytes = std::fs::read(layout.graph_json()).expect("graph.json");
    let text = std::str::from_utf8(&bytes).expect("UTF-8");
    let graph = agents_akms::CompiledGraph::parse(text, &layout.graph_json()).expect("graph.json");
    let version = loadout::graph_version(&bytes);
    let config = agents_akms::read_config(layout).expect("config");
    let docs: BTreeMap<String, agents_search::TextDoc> =
        agents_akms::search::documents(layout, &graph).into_iter().map(|d| (d.id.clone(), d)).collect();
    let backend = index.map(|dir| {
        agents_search::open_text_backend(agents_search::TextBackendKind::Tantivy, dir).expect("the index opens")
    });
    for i in 0..TASKS {
        let tags = vec![format!("tag-{i}")];
        let subgraph = agents_akms::query::query(&graph, &config, "implementer", &tags).expect("a query");
        let ids: Vec<String> = subgraph.nodes.iter().map(|n| n.id.clone()).collect();
        let passages = backend.as_deref().map(|b| {
            agents_akms::search::cached_passages(
                layout,
                &version,
                b,
                None,
                &docs,
                &ids,
                &format!("tag-{i} body text"),
                agents_akms::search::SEMANTIC_FLOOR,
            )
            .expect("passages")
        });
        let request = LoadoutRequest {
            task_id: format!("phase1-task{i}"),
            phase: Some("1".into()),
            title: format!("Task {i}"),
            role: "implementer".into(),
            seed_tags: tags,
            available_context: Some(loadout::available_context(200_000, 0, 200, &config)),
            generated_at: "2025-06-01T13:55:00Z".into(),
            graph_version: version.clone(),
            global_vault: None,
        };
        let made = loadout::generate(&request, &graph, &subgraph, &docs, passages.as_deref(), &config, tokenizer);
        let path = layout.knowledge().join("loadouts").join(format!("phase1-task{i}-loadout.md"));
        agents_fs::atomic_write(&path, made.text.as_bytes()).expect("written");
    }
}
