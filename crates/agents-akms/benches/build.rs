//! Build time of `graph.json` for synthetic vaults of 500 and 20,000 nodes
//! (`scripts/gen-vault.py`), against references measured in the same run:
//! reading every source file (the floor any compiler pays) and NetworkX
//! loading the written graph with `node_link_graph` (when python3 has it);
//! and the subgraph query (`implementer`, seed tag `tag-5`) on the loaded
//! graph, against NetworkX computing just the union of the seeds' radius-2
//! ego graphs (step 3 of the query's nine).
//!
//!     cargo bench -p agents-akms --bench build
//!
//! Spec NFR-P02: under 10 s for 500 nodes; our targets: 500 under 100 ms,
//! 20,000 under 3 s.

mod common;

use common::{median, ms};

use std::path::{Path, PathBuf};
use std::process::Command;

use agents_akms::{PropagationConfig, build, compile};

fn main() {
    println!(
        "{:>7} {:>10} {:>12} {:>12} {:>14} {:>11} {:>15}",
        "nodes", "read (ms)", "compile (ms)", "build (ms)", "networkx (ms)", "query (ms)", "nx ego (ms)"
    );
    for (n, runs) in [(500usize, 20usize), (20_000, 5)] {
        let (dir, layout, options) = common::generated_vault(n);
        let files = source_files(dir.path());
        let read = median(runs, || {
            let bytes: usize = files.iter().map(|f| std::fs::read(f).expect("readable").len()).sum();
            std::hint::black_box(bytes);
        });
        let compiled = median(runs, || {
            let c = compile(&layout, &options).expect("the synthetic vault is valid");
            assert_eq!(c.node_count, n);
        });
        let built = median(runs, || {
            build(&layout, &options).expect("the synthetic vault builds");
        });
        let (networkx, ego) = networkx_ms(&layout.graph_json())
            .map_or(("-".to_owned(), "-".to_owned()), |(load, ego)| (format!("{load:.1}"), format!("{ego:.2}")));
        let graph = agents_akms::CompiledGraph::load(&layout.graph_json()).expect("graph.json");
        let config = PropagationConfig::default();
        let tags = ["tag-5".to_owned()];
        let queried = median(runs * 4, || {
            let s = agents_akms::query::query(&graph, &config, "implementer", &tags).expect("a query");
            std::hint::black_box(s);
        });
        println!(
            "{n:>7} {:>10.1} {:>12.1} {:>12.1} {networkx:>14} {:>11.2} {ego:>15}",
            ms(read),
            ms(compiled),
            ms(built),
            ms(queried)
        );
    }
}

fn source_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable folder").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "yaml") {
                out.push(path);
            }
        }
    }
    out
}

/// Median milliseconds NetworkX takes to load `graph` (json.load plus
/// node_link_graph), measured inside Python; `None` without networkx.
/// NetworkX's medians: loading the graph, and the union of the radius-2 ego
/// graphs of the nodes tagged `tag-5`.
fn networkx_ms(graph: &Path) -> Option<(f64, f64)> {
    let script = r#"
import json, sys, time
import networkx as nx
times, egos = [], []
for _ in range(5):
    t = time.perf_counter()
    with open(sys.argv[1]) as f:
        data = json.load(f)
    try:
        G = nx.node_link_graph(data, edges="links")
    except TypeError:
        G = nx.node_link_graph(data, link="links")
    times.append(time.perf_counter() - t)
    t = time.perf_counter()
    seeds = [n for n, a in G.nodes(data=True) if "tag-5" in (a.get("tags") or [])]
    union = set()
    for s in seeds:
        union |= set(nx.ego_graph(G, s, radius=2).nodes)
    egos.append(time.perf_counter() - t)
print(sorted(times)[2] * 1000, sorted(egos)[2] * 1000)
"#;
    let out = Command::new("python3").arg("-c").arg(script).arg(graph).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace().map(|p| p.parse::<f64>().ok());
    Some((parts.next()??, parts.next()??))
}
