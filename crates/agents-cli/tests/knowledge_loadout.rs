//! `agents knowledge loadout|re-evaluate`, end to end on a copy of the golden
//! fixture of `agents-akms`: the three forms of a loadout (full, routing,
//! degraded) as committed snapshots, reuse while the graph is unchanged,
//! regeneration after a change, phases, bad input.

mod common;
#[path = "common/fixture_model.rs"]
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
