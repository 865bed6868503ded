//! `agents knowledge update|status|review|promote|suppress` end to end on
//! copies of the golden fixture of `agents-akms`: evidence in (AgentMemory and
//! PCD), malformed evidence changing nothing, the health and review reports,
//! the one-command review actions, and the multi-repository guarantee (6.3).

mod common;

use std::path::Path;
use std::process::Output;

use common::{Knowledge, agents, copy_tree, knowledge, parse, stderr, stdout, tree_bytes as snapshot};

const MEMORY: &str = "---\ntask_id: TASK-101\ntask_description: \"Fix strain-rate formula\"\nphase_id: 2\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase2-loadout.md\nstatus: complete\ntests_passed: 7\ntests_total: 7\nnodes_used:\n  - id: lippmann-schwinger\n    useful: true\n    coverage: sufficient\n  - id: green-operator\n    useful: false\n    coverage: outdated\nnodes_missing:\n  - description: \"How to regularise\"\n    suggested_id: epsilon-regularisation\n    domain: fft-galerkin\n    priority: high\npitfalls_discovered:\n  - node_ref: lippmann-schwinger\n    description: \"Division by zero at k = 0\"\n    severity: high\nnew_knowledge:\n  - suggested_id: strain-rate-formula\n    title: \"Strain-rate formula\"\n    domain: fft-galerkin\n    content_draft: \"Use the symmetric gradient for the strain rate.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n\n## Task Notes\n";

const PCD: &str = "---\nphase_id: 2\nplan_file: plans/plan.md\nbranch: plan_phase-2\ndate: 2026-03-05\nloadout_used: loadouts/phase2-loadout.md\ntasks:\n  - task_id: TASK-101\n    title: \"Strain rate\"\n    commit: abc1234\n    tests_passed: 7\n    tests_total: 7\n    status: complete\n    agent_model: test-model\noverall_test_status: {passed: 7, total: 7, skipped: 0, fixed: 0}\nfiles_modified:\n  - path: src/green.py\n    changes: \"regularised\"\nnext_phase_warnings:\n  - \"No warnings\"\nnodes_used:\n  - id: fft-galerkin-basics\n    useful: true\n    coverage: sufficient\nnew_knowledge:\n  - suggested_id: zero-frequency-epsilon\n    title: \"Epsilon Regularisation of the Zero Frequency\"\n    domain: fft-galerkin\n    content_draft: \"Drafted by an agent: add an epsilon to the zero-frequency denominator.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n";

fn run_in(k: &Knowledge, repo: &Path, args: &[&str]) -> Output {
    agents(&k.home).current_dir(repo).env("AKMS_GLOBAL_VAULT", &k.vault).arg("knowledge").args(args).output().unwrap()
}

fn run(k: &Knowledge, args: &[&str]) -> Output {
    run_in(k, &k.repo, args)
}

fn ok(k: &Knowledge, args: &[&str]) -> String {
    let out = run(k, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn json(k: &Knowledge, args: &[&str]) -> serde_json::Value {
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .args([&["--json", "knowledge"], args].concat())
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    parse(&out.stdout)
}

fn session(repo: &Path, name: &str, text: &str) -> String {
    let path = repo.join("knowledge/sessions").join(name);
    std::fs::write(&path, text).unwrap();
    format!("knowledge/sessions/{name}")
}

fn node<'g>(graph: &'g serde_json::Value, id: &str) -> &'g serde_json::Value {
    graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap_or_else(|| panic!("no node {id}"))
}

fn graph(repo: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(repo.join("knowledge/graph/graph.json")).unwrap()).unwrap()
}

#[test]
fn fr_m08_update_applies_an_agent_memory_and_a_pcd_through_one_validator() {
    let k = knowledge();
    let vault = snapshot(&k.vault);
    let memory = session(&k.repo, "TASK-101.md", MEMORY);
    let pcd = session(&k.repo, "handoff_phase_2.md", PCD);
    let out = ok(&k, &["update", &memory, &pcd]);
    assert!(out.contains("applied knowledge/sessions/TASK-101.md as session-task-101\n"), "{out}");
    assert!(out.contains("  hit        green-operator 0.600 -> 0.510 (outdated)\n"), "{out}");
    assert!(out.contains("  propagated epsilon-regularisation 0.500 -> 0.495 (from green-operator, 1 hop)\n"), "{out}");
    assert!(out.contains("applied knowledge/sessions/handoff_phase_2.md as session-phase-2\n"), "{out}");
    assert!(out.contains("dedup      zero-frequency-epsilon ~ epsilon-regularisation (local, 1.00): appended into epsilon-regularisation"), "{out}");
    let g = graph(&k.repo);
    assert_eq!(node(&g, "lippmann-schwinger")["confidence"], 0.87);
    assert_eq!(node(&g, "fft-galerkin-basics")["activations"], 1);
    assert_eq!(node(&g, "session-phase-2")["domain"], "session");
    assert_eq!(node(&g, "strain-rate-formula")["status"], "tentative");
    assert_eq!(node(&g, "strain-rate-formula")["source"], "agent");
    // FR-O01: the vault is byte-identical; 3.4: graph.json equals a rebuild.
    assert_eq!(snapshot(&k.vault), vault);
    let incremental = std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap();
    ok(&k, &["build"]);
    assert_eq!(std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap(), incremental);
    // NFR-D03: applying the same documents again changes nothing.
    let once = snapshot(&k.repo);
    let again = json(&k, &["update", &memory, &pcd]);
    assert_eq!(again["applied"], serde_json::json!([]));
    assert_eq!(again["skipped"].as_array().unwrap().len(), 2);
    assert_eq!(snapshot(&k.repo), once);
}

#[test]
fn nfr_r01_malformed_pcd_changes_nothing() {
    let k = knowledge();
    ok(&k, &["build"]);
    let before = snapshot(&k.repo.join("knowledge/graph"));
    let cases = [
        (
            "h1.md",
            PCD.replace("next_phase_warnings:\n  - \"No warnings\"", "next_phase_warnings: []"),
            "h1.md:19: next_phase_warnings: needs at least one entry",
        ),
        (
            "h2.md",
            PCD.replace("coverage: sufficient", "coverage: fine"),
            "h2.md:21: nodes_used[0].coverage: `fine` is not one of",
        ),
        ("t2.md", MEMORY.replace("phase_id: 2", "phase_id: [2"), "t2.md:"),
    ];
    for (name, text, want) in cases {
        let good = session(&k.repo, "TASK-101.md", MEMORY);
        let bad = session(&k.repo, name, &text);
        let out = run(&k, &["update", &good, &bad]);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{name}: {}", stderr(&out));
        assert_eq!(snapshot(&k.repo.join("knowledge/graph")), before, "{name}");
        assert!(!k.repo.join("knowledge/local-nodes/strain-rate-formula.md").exists());
    }
}

/// Issue 18 item 3: a node id no node has is a warning and a `missing`
/// entry, never a block: the update exits 0 and applies the document.
#[test]
fn item_3_update_warns_of_an_unknown_node_and_applies_the_document() {
    let k = knowledge();
    let doc = session(&k.repo, "t1.md", &MEMORY.replace("id: green-operator", "id: no-such-node"));
    let out = run(&k, &["update", &doc]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: knowledge/sessions/t1.md: nodes_used[1].id: no node has the id `no-such-node`"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("  missing    no-such-node [medium]\n"), "{}", stdout(&out));
    let g = graph(&k.repo);
    assert_eq!(node(&g, "session-task-101")["domain"], "session");
}

/// Issue 18 item 3 (NFR-R04): with the global vault gone, a repository
/// whose overlay has edges to global nodes builds from its local sources;
/// `status` lists the skipped edges.
#[test]
fn item_3_without_the_global_vault_the_repository_builds_and_status_lists_skipped_edges() {
    let k = knowledge();
    std::fs::remove_dir_all(&k.vault).unwrap();
    let out = run(&k, &["build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("orphaned overlay edge `epsilon-regularisation` -> `green-operator`"),
        "{}",
        stderr(&out)
    );
    let status = ok(&k, &["status"]);
    assert!(status.contains("epsilon-regularisation -> green-operator (knowledge/graph/local_state.yaml)"), "{status}");
    let health = json(&k, &["status"]);
    assert!(!health["skipped_edges"].as_array().unwrap().is_empty(), "{health:#}");
}

#[test]
fn fr_m06_a_pcd_without_next_phase_warnings_is_rejected() {
    let k = knowledge();
    let pcd = session(&k.repo, "h.md", &PCD.replace("next_phase_warnings:\n  - \"No warnings\"\n", ""));
    let out = run(&k, &["update", &pcd]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("next_phase_warnings: required field is missing"), "{}", stderr(&out));
}

#[test]
fn fr_r01_status_and_review_report_the_phase_in_text_and_json() {
    let k = knowledge();
    let memory = session(&k.repo, "TASK-101.md", MEMORY);
    ok(&k, &["update", &memory]);
    let review = ok(&k, &["review"]);
    assert!(review.starts_with("Review of phase 2\n"), "{review}");
    assert!(review.contains("new tentative nodes (1): strain-rate-formula\n"), "{review}");
    assert!(review.contains("degraded confidence (2): epsilon-regularisation; green-operator\n"), "{review}");
    assert!(review.contains("new pitfalls (1): lippmann-schwinger [high] Division by zero at k = 0\n"), "{review}");
    assert!(review.contains("blocked tasks (1): TASK-101 waits for epsilon-regularisation"), "{review}");
    assert!(review.contains("id collisions (1): solver-notes\n"), "{review}");
    // UR-08: confidence (default and local) and status per node, one line each.
    let row = review.lines().find(|l| l.trim_start().starts_with("green-operator")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..5], ["green-operator", "tentative", "global", "0.600", "0.510"], "{row}");
    let r = json(&k, &["review"]);
    assert_eq!(r["phase"], 2);
    assert_eq!(r["new_tentative"], serde_json::json!(["strain-rate-formula"]));
    assert_eq!(r["blocked"][0]["task"], "TASK-101");

    let status = ok(&k, &["status"]);
    for section in [
        "degraded confidence (3)",
        "flagged missing-detail/outdated (1): green-operator (outdated, session-task-101)",
        "tentative, awaiting promotion (3)",
        "dedup events: none",
        "docstring drift: none",
        "id collisions (global wins) (1): solver-notes (knowledge/local-nodes/solver-notes.md)",
        "orphaned nodes",
        "stale nodes",
        "blocked tasks (1)",
        "orphaned overlay entries (1): removed-node",
    ] {
        assert!(status.contains(section), "{section} not in\n{status}");
    }
    let s = json(&k, &["status"]);
    assert_eq!(s["orphaned_overlay"], serde_json::json!(["removed-node"]));
    assert_eq!(s["collisions"][0]["node"], "solver-notes");
    let tentative: Vec<&str> = s["tentative"].as_array().unwrap().iter().map(|t| t["node"].as_str().unwrap()).collect();
    assert_eq!(tentative, ["epsilon-regularisation", "green-operator", "strain-rate-formula"]);
}

#[test]
fn fr_r03_promote_single_command() {
    let k = knowledge();
    let vault = snapshot(&k.vault);
    let memory = session(&k.repo, "TASK-101.md", MEMORY);
    ok(&k, &["update", &memory]);
    let out = ok(&k, &["promote", "strain-rate-formula"]);
    assert!(
        out.starts_with(
            "strain-rate-formula: tentative -> established (knowledge/local-nodes/strain-rate-formula.md)\n"
        ),
        "{out}"
    );
    assert!(out.contains("move knowledge/local-nodes/strain-rate-formula.md into the global vault"), "{out}");
    let file = std::fs::read_to_string(k.repo.join("knowledge/local-nodes/strain-rate-formula.md")).unwrap();
    assert!(file.contains("status: established\n") && file.contains("source: agent\n"), "{file}");
    assert_eq!(node(&graph(&k.repo), "strain-rate-formula")["status"], "established");
    // Nothing to promote twice; a global node is promoted in the vault by hand.
    let again = run(&k, &["promote", "strain-rate-formula"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("is established, not tentative"), "{}", stderr(&again));
    let global = run(&k, &["promote", "green-operator"]);
    assert_eq!(global.status.code(), Some(2));
    assert!(stderr(&global).contains("global vault is read-only"), "{}", stderr(&global));
    assert_eq!(snapshot(&k.vault), vault);
}

#[test]
fn fr_r04_suppress_marks_draft_and_deletes_nothing() {
    let k = knowledge();
    let vault = snapshot(&k.vault);
    let out = ok(&k, &["suppress", "epsilon-regularisation"]);
    assert_eq!(out, "epsilon-regularisation: tentative -> draft (knowledge/local-nodes/epsilon-regularisation.md)\n");
    assert!(k.repo.join("knowledge/local-nodes/epsilon-regularisation.md").exists());
    // A global node is suppressed in this repository's overlay only.
    let out = ok(&k, &["suppress", "green-operator"]);
    assert_eq!(out, "green-operator: tentative -> draft (knowledge/graph/local_state.yaml)\n");
    let g = graph(&k.repo);
    assert_eq!(node(&g, "epsilon-regularisation")["status"], "draft");
    assert_eq!(node(&g, "green-operator")["status"], "draft");
    assert_eq!(snapshot(&k.vault), vault);
    let unknown = run(&k, &["suppress", "nope"]);
    assert_eq!(unknown.status.code(), Some(2));
}

/// Issue 18 item 8: `restore` undoes a suppress, for a local node (its file
/// gets back the status it had, byte for byte) and a global one (the
/// overlay's draft is removed); the vault is never written.
#[test]
fn item_8_restore_undoes_a_suppress() {
    let k = knowledge();
    let vault = snapshot(&k.vault);
    let file = k.repo.join("knowledge/local-nodes/repo-conventions.md");
    let original = std::fs::read(&file).unwrap();
    ok(&k, &["suppress", "repo-conventions"]);
    ok(&k, &["suppress", "green-operator"]);
    assert_eq!(node(&graph(&k.repo), "repo-conventions")["status"], "draft");
    let out = ok(&k, &["restore", "repo-conventions"]);
    assert_eq!(out, "repo-conventions: draft -> established (knowledge/local-nodes/repo-conventions.md)\n");
    assert_eq!(std::fs::read(&file).unwrap(), original);
    let out = ok(&k, &["restore", "green-operator"]);
    assert_eq!(out, "green-operator: draft -> tentative (knowledge/graph/local_state.yaml)\n");
    let g = graph(&k.repo);
    assert_eq!(node(&g, "repo-conventions")["status"], "established");
    assert_eq!(node(&g, "green-operator")["status"], "tentative");
    let state = std::fs::read_to_string(k.repo.join("knowledge/graph/local_state.yaml")).unwrap();
    assert!(!state.contains("suppressed_from") && !state.contains("status: draft"), "{state}");
    assert_eq!(snapshot(&k.vault), vault);
    // Nothing to restore: a clear error, exit 2, nothing written.
    let before = snapshot(&k.repo);
    let out = run(&k, &["restore", "green-operator"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`green-operator` is tentative, not suppressed (draft): nothing to restore"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&k.repo), before);
}

#[test]
fn spec_6_3_two_repositories_sharing_one_vault_stay_isolated() {
    let k = knowledge();
    let vault = snapshot(&k.vault);
    let other = k.repo.parent().unwrap().join("other");
    copy_tree(&k.repo, &other);
    // Repository A boosts lippmann-schwinger and records a pitfall on it;
    // repository B decays it.
    let a = session(&k.repo, "TASK-101.md", MEMORY);
    let out = run_in(&k, &k.repo, &["update", &a]);
    assert!(out.status.success(), "{}", stderr(&out));
    let decay = MEMORY
        .replace("task_id: TASK-101", "task_id: TASK-900")
        .replace("useful: true\n    coverage: sufficient", "useful: false\n    coverage: missing-detail")
        .replace("description: \"Division by zero at k = 0\"", "description: \"B only\"");
    let decay = decay.replace(
        "pitfalls_discovered:\n  - node_ref: lippmann-schwinger\n    description: \"B only\"\n    severity: high\n",
        "",
    );
    let b = session(&other, "TASK-900.md", &decay);
    let out = run_in(&k, &other, &["update", &b]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(snapshot(&k.vault), vault, "the global node files are byte-identical");
    let (ga, gb) = (graph(&k.repo), graph(&other));
    assert_eq!(node(&ga, "lippmann-schwinger")["confidence"], 0.87);
    assert_eq!(node(&gb, "lippmann-schwinger")["confidence"], 0.7225);
    let text_b = std::fs::read_to_string(other.join("knowledge/graph/graph.json")).unwrap();
    assert!(!text_b.contains("Division by zero at k = 0") && !text_b.contains("session-task-101"));
    let text_a = std::fs::read_to_string(k.repo.join("knowledge/graph/graph.json")).unwrap();
    assert!(!text_a.contains("session-task-900"));
}

#[test]
fn fr_m03_validate_checks_evidence_under_sessions() {
    let k = knowledge();
    session(&k.repo, "TASK-101.md", MEMORY);
    session(&k.repo, "bad.md", &MEMORY.replace("severity: high", "severity: dire"));
    let out = run(&k, &["validate", "knowledge/sessions"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("error: knowledge/sessions/bad.md:23: pitfalls_discovered[0].severity: `dire` is not one of high, medium, low"),
        "{text}"
    );
    assert!(!text.contains("TASK-101.md"), "a valid AgentMemory has no problem: {text}");
}
