//! `agents knowledge loadout|re-evaluate`, end to end on a copy of the golden
//! fixture of `agents-akms`: the three forms of a loadout (full, routing,
//! degraded) as committed snapshots, reuse while the graph is unchanged,
//! regeneration after a change, phases, bad input.

mod common;
#[path = "../../agents-engine/tests/common/fixture_model.rs"]
mod fixture_model;

use std::process::Output;

use common::{Knowledge, agents, assert_one_error_line, knowledge, parse, stderr, stdout, tree_bytes};

/// 2025-06-01T13:55:00Z, the spec's example time.
const EPOCH: &str = "1748786100";

/// The fixture copied, built, with one task record `task.json`.
fn built() -> Knowledge {
    let k = knowledge();
    write_task(&k, "task.json", "phase2-task3");
    let out = run(&k, &["build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    k
}

fn write_task(k: &Knowledge, name: &str, id: &str) {
    let record = serde_json::json!({
        "task_id": id,
        "phase": 2,
        "title": "Regularise the Green operator",
        "objective": "Avoid the division by zero at the zero frequency",
        "scope": ["src/green.py"],
        "akms_tags": ["green-operator"],
        "akms_schema": "v2"
    });
    std::fs::write(k.repo.join(name), serde_json::to_string_pretty(&record).unwrap()).unwrap();
}

fn run(k: &Knowledge, args: &[&str]) -> Output {
    agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .arg("knowledge")
        .args(args)
        .output()
        .unwrap()
}

fn ok(k: &Knowledge, args: &[&str]) -> String {
    let out = run(k, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn loadout_file(k: &Knowledge, name: &str) -> String {
    std::fs::read_to_string(k.repo.join("knowledge/loadouts").join(name)).unwrap()
}

fn graph_version(k: &Knowledge) -> String {
    // The first 16 hex digits of graph.json's SHA-256.
    let bytes = std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap();
    agents_akms::loadout::graph_version(&bytes)
}

/// The snapshot of a loadout, its machine-dependent graph_version replaced.
fn golden(k: &Knowledge, snapshot: &str) {
    let text = loadout_file(k, "phase2-task3-loadout.md");
    assert!(text.contains(&format!("graph_version: {}\n", graph_version(k))), "{text}");
    let text = text.replace(&graph_version(k), "[graph-version]");
    // Global nodes are named by absolute paths (an agent can open them).
    let vault = std::path::absolute(&k.vault).unwrap().to_string_lossy().into_owned();
    let text = text.replace(&vault, "[global-vault]");
    insta::assert_snapshot!(snapshot, text);
}

#[test]
fn golden_full_mode() {
    let k = built();
    // 200,000 - task - 4,000: the full cost fits in 15% of it.
    ok(&k, &["loadout", "--task", "task.json", "--context-limit", "200000"]);
    golden(&k, "loadout_full");
}

#[test]
fn golden_routing_mode() {
    let k = built();
    // 20,000 - task - 4,000 safety margin: above low_threshold, too small for the full cost.
    let out = ok(&k, &["--json", "loadout", "--task", "task.json", "--context-limit", "20000"]);
    let report = parse(out.as_bytes());
    assert_eq!(report[0]["mode"], "routing", "{report:#}");
    golden(&k, "loadout_routing");
}

#[test]
fn nfr_r05_degraded_without_search_layer() {
    let k = built();
    // No context limit either: the configured default mode (routing).
    ok(&k, &["loadout", "--task", "task.json", "--no-search"]);
    golden(&k, "loadout_degraded");
    // The same with the layer disabled in the config, then without the
    // search index on disk: the same bytes.
    let before = loadout_file(&k, "phase2-task3-loadout.md");
    let config = k.repo.join("knowledge/graph/propagation_config.yaml");
    std::fs::write(&config, "akms_schema: v2\nloadout:\n  search_layer: false\n").unwrap();
    let out = ok(&k, &["loadout", "--task", "task.json", "--force"]);
    assert!(out.contains("degraded"), "{out}");
    assert_eq!(loadout_file(&k, "phase2-task3-loadout.md"), before);
    std::fs::remove_file(&config).unwrap();
    std::fs::remove_dir_all(k.home.join("search")).unwrap();
    let out = ok(&k, &["loadout", "--task", "task.json", "--force"]);
    assert!(out.contains("degraded"), "{out}");
    assert_eq!(loadout_file(&k, "phase2-task3-loadout.md"), before);
}

#[test]
fn fr_l09_header_has_timestamp_and_graph_version() {
    let k = built();
    ok(&k, &["loadout", "--task", "task.json", "--role", "physics_reviewer"]);
    let text = loadout_file(&k, "phase2-task3-physics_reviewer-loadout.md");
    let header: Vec<&str> = text.lines().skip(1).take_while(|l| *l != "---").collect();
    let keys: Vec<&str> = header.iter().map(|l| l.split(": ").next().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "task_id",
            "phase",
            "generated_at",
            "graph_version",
            "seed_tags",
            "agent_role",
            "node_count",
            "loadout_mode",
            "available_context",
            "qmd_available",
            "akms_schema"
        ]
    );
    assert!(header.contains(&"generated_at: 2025-06-01T13:55:00Z"), "{text}");
    assert!(header.contains(&format!("graph_version: {}", graph_version(&k)).as_str()), "{text}");
    assert!(header.contains(&"agent_role: physics_reviewer"), "{text}");
    // The sections of the frozen structure, in order.
    let sections: Vec<&str> = text.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        sections,
        ["## Domain Knowledge", "## Known Pitfalls", "## Relevant Session History", "## Suggested Reading Order"]
    );
}

#[test]
fn fr_l08_reused_while_graph_unchanged_and_re_evaluate_regenerates_after_a_change() {
    let k = built();
    ok(&k, &["loadout", "--task", "task.json"]);
    let first = loadout_file(&k, "phase2-task3-loadout.md");
    // The task record now names its loadout (spec 4.5).
    let task: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(k.repo.join("task.json")).unwrap()).unwrap();
    assert_eq!(task["loadout_path"], "knowledge/loadouts/phase2-task3-loadout.md");

    // Another clock, the same graph: the file is reused, not rewritten.
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .env("SOURCE_DATE_EPOCH", "1800000000")
        .args(["knowledge", "--json", "loadout", "--task", "task.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(parse(&out.stdout)[0]["reused"], true);
    assert_eq!(loadout_file(&k, "phase2-task3-loadout.md"), first);

    // Nothing changed: re-evaluate leaves it.
    ok(&k, &["re-evaluate"]);
    assert_eq!(loadout_file(&k, "phase2-task3-loadout.md"), first);

    // The graph changes: the loadout is stale, re-evaluate regenerates it.
    let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
    let text = std::fs::read_to_string(&node).unwrap().replace("confidence: 0.5", "confidence: 0.55");
    std::fs::write(&node, text).unwrap();
    ok(&k, &["build"]);
    let out = ok(&k, &["--json", "re-evaluate"]);
    let reports = parse(out.as_bytes());
    assert_eq!(reports.as_array().unwrap().len(), 1, "{reports:#}");
    let second = loadout_file(&k, "phase2-task3-loadout.md");
    assert_ne!(second, first);
    assert!(second.contains(&format!("graph_version: {}\n", graph_version(&k))));
    assert!(second.contains("| epsilon-regularisation | local | 0.55 |"), "{second}");
}

#[test]
fn fr_l01_one_loadout_per_task_of_a_phase() {
    let k = built();
    std::fs::create_dir_all(k.repo.join("plan")).unwrap();
    for id in ["phase3-task1", "phase3-task2"] {
        write_task(&k, &format!("plan/{id}.json"), id);
    }
    std::fs::write(
        k.repo.join("plan/phase3.json"),
        r#"{"phase": 3, "tasks": ["phase3-task1.json", "phase3-task2.json"]}"#,
    )
    .unwrap();
    let vault_before = tree_bytes(&k.vault);
    let out = ok(&k, &["--json", "loadout", "--phase", "plan/phase3.json"]);
    ok(&k, &["re-evaluate"]);
    assert!(tree_bytes(&k.vault) == vault_before, "the global vault is read-only (FR-O01)");
    let reports = parse(out.as_bytes());
    let paths: Vec<&str> = reports.as_array().unwrap().iter().map(|r| r["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["knowledge/loadouts/phase3-task1-loadout.md", "knowledge/loadouts/phase3-task2-loadout.md"]);
    for id in ["phase3-task1", "phase3-task2"] {
        let text = loadout_file(&k, &format!("{id}-loadout.md"));
        assert!(text.contains(&format!("task_id: {id}\nphase: 3\n")), "the plan's phase wins: {text}");
        let task = std::fs::read_to_string(k.repo.join(format!("plan/{id}.json"))).unwrap();
        assert!(task.contains(&format!("\"loadout_path\": \"knowledge/loadouts/{id}-loadout.md\"")), "{task}");
    }
    // Identical inputs, identical loadouts (NFR-D02), task id aside.
    let a = loadout_file(&k, "phase3-task1-loadout.md").replace("phase3-task1", "X");
    let b = loadout_file(&k, "phase3-task2-loadout.md").replace("phase3-task2", "X");
    assert_eq!(a, b);
}

#[test]
fn bad_input_is_one_error_line_naming_file_and_field() {
    let k = built();
    std::fs::write(k.repo.join("bad.json"), r#"{"akms_schema": "v2", "akms_tags": ["x"]}"#).unwrap();
    let out = run(&k, &["loadout", "--task", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    let line = assert_one_error_line(&out);
    assert!(line.contains("bad.json") && line.contains("task_id"), "{line}");

    std::fs::write(k.repo.join("bad.json"), r#"{"task_id": "../escape", "akms_schema": "v2", "akms_tags": ["x"]}"#)
        .unwrap();
    let line = assert_one_error_line(&run(&k, &["loadout", "--task", "bad.json"]));
    assert!(line.contains("task_id") && line.contains("plain name"), "{line}");
    assert!(!k.repo.join("knowledge/escape-loadout.md").exists());

    // A phase with one bad task writes nothing at all.
    std::fs::write(k.repo.join("plan.json"), r#"{"phase": 1, "tasks": ["task.json", "bad.json"]}"#).unwrap();
    let line = assert_one_error_line(&run(&k, &["loadout", "--phase", "plan.json"]));
    assert!(line.contains("bad.json") && line.contains("task_id"), "{line}");
    assert!(
        !k.repo.join("knowledge/loadouts").exists()
            || std::fs::read_dir(k.repo.join("knowledge/loadouts")).unwrap().next().is_none()
    );
    assert!(!std::fs::read_to_string(k.repo.join("task.json")).unwrap().contains("loadout_path"));

    std::fs::write(k.repo.join("plan.json"), r#"{"tasks": [3]}"#).unwrap();
    let line = assert_one_error_line(&run(&k, &["loadout", "--phase", "plan.json"]));
    assert!(line.contains("plan.json") && line.contains("tasks[0]"), "{line}");

    std::fs::remove_file(k.repo.join("knowledge/graph/graph.json")).unwrap();
    let line = assert_one_error_line(&run(&k, &["loadout", "--task", "task.json"]));
    assert!(line.contains("agents knowledge build"), "{line}");
}

/// `agents --json query TEXT REPO` in the fixture's environment.
fn query(k: &Knowledge, text: &str) -> serde_json::Value {
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .args(["--json", "query", text])
        .arg(&k.repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    parse(&out.stdout)
}

fn knowledge_fragments(v: &serde_json::Value) -> Vec<(String, String)> {
    v["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["provenance"]["strategy"] == "knowledge-graph")
        .map(|f| (f["uko_node"].as_str().unwrap().to_owned(), f["content"].as_str().unwrap().to_owned()))
        .collect()
}

#[test]
fn the_knowledge_graph_strategy_adds_nodes_and_pitfalls_to_a_query_and_is_skipped_without_a_graph() {
    let k = built();
    let v = query(&k, "green operator zero frequency");
    let used: Vec<&str> = v["strategies_used"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(used.contains(&"knowledge-graph"), "{used:?}");
    let fragments = knowledge_fragments(&v);
    let nodes: Vec<&str> = fragments.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        nodes.contains(&"knowledge://lippmann-schwinger") && nodes.contains(&"knowledge://green-operator"),
        "{nodes:?}"
    );
    let (_, lippmann) = fragments.iter().find(|(n, _)| n == "knowledge://lippmann-schwinger").unwrap();
    assert!(lippmann.contains("Pitfall: Near-zero frequency: division by zero"), "{lippmann}");
    let (_, green) = fragments.iter().find(|(n, _)| n == "knowledge://green-operator").unwrap();
    assert!(green.contains("pointwise product per frequency"), "the node's ## Summary: {green}");
    // Draft and deprecated nodes never appear (FR-G04).
    assert!(!nodes.contains(&"knowledge://solver-notes"), "{nodes:?}");

    // No compiled graph: the strategy is skipped, the query still answers.
    std::fs::remove_file(k.repo.join("knowledge/graph/graph.json")).unwrap();
    let v = query(&k, "green operator zero frequency");
    let used: Vec<&str> = v["strategies_used"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(!used.contains(&"knowledge-graph") && !used.is_empty(), "{used:?}");
    assert!(knowledge_fragments(&v).is_empty());
    assert_eq!(v["fallbacks"], serde_json::json!([]), "{:#}", v["fallbacks"]);
}

#[test]
fn the_search_layer_uses_the_embedding_model_when_there_is_one() {
    let k = built();
    let cache = k.repo.join("knowledge/cache/search");
    let entries = || std::fs::read_dir(&cache).map_or(0, |d| d.count());
    ok(&k, &["loadout", "--task", "task.json", "--context-limit", "20000"]);
    assert_eq!(entries(), 1);
    // A model: the passages are another cache entry (the model is in its key),
    // and the loadout still has its structure.
    let model = k.home.join("model");
    fixture_model::write(
        &model,
        &["Regularise the Green operator", "Avoid the division by zero at the zero frequency", "green-operator"],
        &[&["zero", "singularity"]],
    );
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .env("AGENTS_EMBEDDING_MODEL", &model)
        .args(["knowledge", "loadout", "--task", "task.json", "--context-limit", "20000", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(entries(), 2);
    let text = loadout_file(&k, "phase2-task3-loadout.md");
    assert!(text.contains("qmd_available: true\n") && text.contains("### Summaries"), "{text}");
}

fn write_config(k: &Knowledge, loadout: &str) {
    let path = k.repo.join("knowledge/graph/propagation_config.yaml");
    std::fs::write(path, format!("akms_schema: v2\nloadout:\n{loadout}")).unwrap();
}

/// The table row of node `id`.
fn row<'t>(text: &'t str, id: &str) -> Option<&'t str> {
    text.lines().find(|l| l.starts_with(&format!("| {id} |")))
}

#[test]
fn pitfalls_always_reach_the_agent() {
    let k = knowledge();
    // A fresh graph: no node has been activated, so `confidence x
    // activations` ranks every node 0.
    let state = k.repo.join("knowledge/graph/local_state.yaml");
    std::fs::write(&state, std::fs::read_to_string(&state).unwrap().replace("    activations: 7\n", "")).unwrap();
    let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
    std::fs::write(&node, std::fs::read_to_string(&node).unwrap().replace("activations: 2\n", "")).unwrap();
    write_task(&k, "task.json", "phase2-task3");
    write_config(&k, "  max_nodes_per_loadout: 2\n");
    ok(&k, &["build"]);
    ok(&k, &["loadout", "--task", "task.json", "--no-search"]);
    let text = loadout_file(&k, "phase2-task3-loadout.md");
    // The seed carrying the pitfall (lippmann-schwinger, the most confident
    // seed) is kept over the alphabetically first non-seed, and its warning
    // is rendered with the pitfall node.
    assert!(row(&text, "lippmann-schwinger").is_some(), "{text}");
    assert!(row(&text, "fft-galerkin-basics").is_none(), "{text}");
    assert!(row(&text, "session-phase2-task3").is_some(), "{text}");
    assert!(
        text.contains(
            "- **lippmann-schwinger** -> `session-phase2-task3` (Session: phase2-task3): Near-zero frequency"
        ),
        "{text}"
    );
    assert!(!text.contains("_No known pitfalls._"), "{text}");

    // A cap of 1: the seed with the pitfall may be cut, its warning is not.
    write_config(&k, "  max_nodes_per_loadout: 1\n  min_confidence_threshold: 0.0\n");
    let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
    std::fs::write(&node, std::fs::read_to_string(&node).unwrap().replace("confidence: 0.5", "confidence: 0.99"))
        .unwrap();
    ok(&k, &["build"]);
    ok(&k, &["loadout", "--task", "task.json", "--no-search"]);
    let text = loadout_file(&k, "phase2-task3-loadout.md");
    assert!(row(&text, "epsilon-regularisation").is_some() && row(&text, "lippmann-schwinger").is_none(), "{text}");
    assert!(text.contains("- **lippmann-schwinger** -> `session-phase2-task3`"), "{text}");
}

#[test]
fn the_loop_works_from_a_cold_start_an_untagged_task_gets_a_loadout_without_nodes() {
    let k = built();
    let record = serde_json::json!({
        "task_id": "cold-1",
        "title": "Write the changelog",
        "akms_tags": [],
        "akms_schema": "v2"
    });
    std::fs::write(k.repo.join("cold.json"), record.to_string()).unwrap();
    let out = run(&k, &["--json", "loadout", "--task", "cold.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = parse(&out.stdout);
    assert_eq!(report[0]["node_count"], 0, "{report:#}");
    let text = loadout_file(&k, "cold-1-loadout.md");
    assert!(text.contains("seed_tags: []\n") && text.contains("node_count: 0\n"), "{text}");
    assert!(text.contains("_No nodes: the task has no `akms_tags` and none could be derived"), "{text}");
    // The same in a phase, next to a tagged task.
    std::fs::write(k.repo.join("plan.json"), r#"{"phase": 1, "tasks": ["task.json", "cold.json"]}"#).unwrap();
    let out = ok(&k, &["--json", "loadout", "--phase", "plan.json"]);
    let counts: Vec<u64> =
        parse(out.as_bytes()).as_array().unwrap().iter().map(|r| r["node_count"].as_u64().unwrap()).collect();
    assert_eq!(counts, [5, 0]);
    // An unknown role is still an error.
    let out = run(&k, &["loadout", "--task", "cold.json", "--role", "poet"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Every path a loadout names: the table's Path column, the backquoted
/// `.md` paths and the search layer's `Matched at` places.
fn named_paths(text: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| Node |") {
            in_table = true;
            continue;
        }
        if in_table && line.starts_with("| ") {
            paths.push(line.split(" | ").nth(4).unwrap().to_owned());
        } else if !line.starts_with("|") {
            in_table = false;
        }
        if let Some(rest) = line.strip_prefix("> Matched at ") {
            let place = rest.split(": ").next().unwrap();
            paths.push(place.rsplit_once(':').unwrap().0.to_owned());
        }
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 1 && part.ends_with(".md") {
                paths.push(part.to_owned());
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn agents_can_open_what_a_loadout_names() {
    let k = built();
    for args in [&["--context-limit", "20000"][..], &["--context-limit", "200000"], &["--no-search"]] {
        ok(&k, &[&["loadout", "--task", "task.json", "--force"], args].concat());
        let text = loadout_file(&k, "phase2-task3-loadout.md");
        assert!(!text.contains("global-vault/"), "{text}");
        let paths = named_paths(&text);
        assert!(paths.iter().any(|p| p.ends_with("/lippmann-schwinger.md")), "{paths:?}");
        assert!(paths.iter().any(|p| p.starts_with("knowledge/")), "{paths:?}");
        for path in &paths {
            // Absolute, or relative to the repository root (the agent's working directory).
            let p = std::path::Path::new(path);
            let file = if p.is_absolute() { p.to_path_buf() } else { k.repo.join(p) };
            assert!(file.is_file(), "{args:?}: {path} cannot be opened:\n{text}");
        }
    }
}

#[test]
fn no_stale_loadouts() {
    let k = built();
    let made = |k: &Knowledge| -> serde_json::Value {
        let out = ok(k, &["--json", "loadout", "--task", "task.json", "--context-limit", "200000"]);
        parse(out.as_bytes())[0].clone()
    };
    let first = made(&k);
    assert_eq!(first["reused"], false);
    let fresh = loadout_file(&k, "phase2-task3-loadout.md");
    assert_eq!(made(&k)["reused"], true);

    // The config changes (no rebuild): a 2-node cap, then reverted.
    write_config(&k, "  max_nodes_per_loadout: 2\n");
    let capped = made(&k);
    assert_eq!((capped["reused"].clone(), capped["node_count"].clone()), (false.into(), 3.into()), "{capped:#}");
    std::fs::remove_file(k.repo.join("knowledge/graph/propagation_config.yaml")).unwrap();
    let reverted = made(&k);
    assert_eq!((reverted["reused"].clone(), reverted["node_count"].clone()), (false.into(), 5.into()));
    // NFR-D02: the same inputs, the same file, whatever was on disk before.
    assert_eq!(loadout_file(&k, "phase2-task3-loadout.md"), fresh);

    // A node's body changes (no rebuild): new content, and new passages.
    let cache = k.repo.join("knowledge/cache/search");
    let entries = || std::fs::read_dir(&cache).map_or(0, |d| d.count());
    let before = entries();
    let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
    let text = std::fs::read_to_string(&node).unwrap();
    std::fs::write(&node, format!("{text}\nUse an epsilon of 1e-12 relative to the stiffness.\n")).unwrap();
    assert_eq!(made(&k)["reused"], false);
    assert!(loadout_file(&k, "phase2-task3-loadout.md").contains("1e-12 relative"));
    assert_eq!(entries(), before + 1, "the passage cache key covers the nodes' documents");

    // The task is renamed.
    let task = k.repo.join("task.json");
    let record = std::fs::read_to_string(&task).unwrap().replace("Regularise the Green operator", "Renamed task");
    std::fs::write(&task, record).unwrap();
    assert_eq!(made(&k)["reused"], false);
    let current = loadout_file(&k, "phase2-task3-loadout.md");
    assert!(current.contains("# Loadout: Renamed task\n"), "{current}");
    assert_eq!(made(&k)["reused"], true);

    // re-evaluate catches a config change too, and only reports what it rewrote.
    write_config(&k, "  max_nodes_per_loadout: 2\n");
    let reports = parse(ok(&k, &["--json", "re-evaluate"]).as_bytes());
    assert_eq!(reports.as_array().unwrap().len(), 1, "{reports:#}");
    assert!(loadout_file(&k, "phase2-task3-loadout.md").contains("node_count: 3\n"));
    // And the result is what a first run makes.
    std::fs::remove_file(k.repo.join("knowledge/loadouts/phase2-task3-loadout.md")).unwrap();
    std::fs::remove_dir_all(&cache).unwrap();
    ok(&k, &["re-evaluate"]);
    assert!(loadout_file(&k, "phase2-task3-loadout.md").contains("node_count: 3\n"));
}

#[test]
fn agent_written_content_is_marked() {
    let k = built();
    ok(&k, &["loadout", "--task", "task.json", "--context-limit", "200000"]);
    let text = loadout_file(&k, "phase2-task3-loadout.md");
    assert!(text.contains("| Node | Origin | Confidence | Priority | Path | Read | Status | Source |\n"), "{text}");
    // Agent-drafted and tentative nodes are marked unreviewed, in the table and at their content.
    assert!(row(&text, "epsilon-regularisation").unwrap().ends_with("| tentative, **unreviewed** | agent |"), "{text}");
    assert!(row(&text, "green-operator").unwrap().ends_with("| tentative, **unreviewed** | hybrid |"), "{text}");
    assert!(row(&text, "lippmann-schwinger").unwrap().ends_with("| established | human |"), "{text}");
    assert!(
        text.contains("#### epsilon-regularisation: Epsilon Regularisation of the Zero Frequency [unreviewed: tentative, source agent]\n"),
        "{text}"
    );
    assert!(text.contains("#### lippmann-schwinger: Lippmann-Schwinger Equation & Green's Operator\n"), "{text}");
}
