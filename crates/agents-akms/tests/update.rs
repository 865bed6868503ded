//! The graph update (spec 5.5) on copies of the golden fixture: mutation
//! rules, dedup, idempotence (a proptest), rebuild equals incremental, and
//! malformed evidence changing nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::Duration;

use agents_akms::update::{Change, read_log, update, update_until};
use agents_akms::{CompileOptions, Layout, compile};
use proptest::prelude::*;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");

const MEMORY: &str = "---\ntask_id: TASK-101\ntask_description: \"Fix strain-rate formula\"\nphase_id: 1\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase1-loadout.md\nstatus: complete\ntests_passed: 7\ntests_total: 7\nnodes_used:\n  - id: lippmann-schwinger\n    useful: true\n    coverage: sufficient\n  - id: green-operator\n    useful: false\n    coverage: outdated\n  - id: mirror-src-green\n    useful: true\n    coverage: sufficient\npitfalls_discovered:\n  - node_ref: lippmann-schwinger\n    description: \"Division by zero at k = 0\"\n    severity: high\n  - node_ref: null\n    description: \"Flaky CI\"\n    severity: low\nnew_knowledge:\n  - suggested_id: strain-rate-formula\n    title: \"Strain-rate formula\"\n    domain: fft-galerkin\n    content_draft: \"Use the symmetric gradient for the strain rate.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n\n## Task Notes\n";

fn fixture() -> (tempfile::TempDir, Layout) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(Path::new(FIXTURE), dir.path());
    let layout = Layout::new(dir.path().join("repo"), dir.path().join("global"));
    (dir, layout)
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.insert(path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn options() -> CompileOptions {
    CompileOptions { global_vault_display: "~/.claude/akms/nodes".into() }
}

fn write_session(layout: &Layout, name: &str, text: &str) -> PathBuf {
    let path = layout.knowledge().join("sessions").join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn overlay(layout: &Layout) -> serde_json::Value {
    let text = std::fs::read_to_string(layout.local_state()).unwrap();
    serde_json::to_value(yaml_serde::from_str::<yaml_serde::Value>(&text).unwrap()).unwrap()
}

fn close(a: &serde_json::Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn spec_5_5_1_an_agent_memory_mutates_the_overlay_and_drafts_a_local_node() {
    let (dir, layout) = fixture();
    let global = snapshot(&dir.path().join("global"));
    let doc = write_session(&layout, "TASK-101.md", MEMORY);
    let report = update(&layout, &options(), &[doc]).unwrap();
    assert_eq!(report.applied.len(), 1);
    let state = overlay(&layout);
    let ls = &state["nodes"]["lippmann-schwinger"];
    assert!(close(&ls["confidence"], 0.87), "0.85 + 0.02: {ls}");
    assert_eq!(ls["activations"], 8);
    assert_eq!(ls["last_activated"], "2026-03-04");
    assert_eq!(ls["activated_by_tasks"], serde_json::json!(["phase1-task14", "TASK-101"]));
    assert_eq!(ls["session_refs"], serde_json::json!(["sessions/phase2-task3.md", "sessions/TASK-101.md"]));
    // green-operator: 0.6 * 0.85; its predecessor epsilon-regularisation
    // (feeds-into 0.5, weight 0.4): 0.5 - 0.09 * 0.3 * 0.5 * 0.4.
    assert!(close(&state["nodes"]["green-operator"]["confidence"], 0.51));
    assert!(close(&state["nodes"]["epsilon-regularisation"]["confidence"], 0.4946));
    // FR-U10: the code-mirror node is left alone.
    assert!(state["nodes"].get("mirror-src-green").is_none());
    // The pitfall edge goes to the session node, which is registered.
    let edge = state["local_edges"].as_array().unwrap().iter().find(|e| e["to"] == "session-task-101").unwrap();
    assert_eq!(
        (edge["from"].as_str(), edge["type"].as_str(), edge["weight"].as_f64()),
        (Some("lippmann-schwinger"), Some("pitfall"), Some(1.0))
    );
    let session = &state["session_nodes"]["session-task-101"];
    assert_eq!(session["content_ref"], "sessions/TASK-101.md");
    assert_eq!(session["outcome"], "complete");
    // FR-M04: a tentative agent node with a content_draft, in local-nodes/.
    let node = std::fs::read_to_string(layout.local_nodes().join("strain-rate-formula.md")).unwrap();
    assert!(
        node.contains("status: tentative") && node.contains("source: agent") && node.contains("## content_draft"),
        "{node}"
    );
    // The log has every change.
    let log = read_log(&layout).unwrap();
    assert!(log.iter().any(|e| matches!(&e.change, Change::Skipped { node, .. } if node == "mirror-src-green")));
    assert!(log.iter().any(|e| matches!(&e.change, Change::Pitfall { node: None, .. })));
    // FR-O01: the global vault is byte-identical.
    assert_eq!(snapshot(&dir.path().join("global")), global);
    // NFR-D03 / 3.4: graph.json equals a rebuild from scratch.
    let rebuilt = compile(&layout, &options()).unwrap();
    assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), rebuilt.json);
    assert!(rebuilt.json.contains("\"session-task-101\""));
}

/// What the CLI does before a write: the lock, which replays a journal a
/// killed writer left.
fn lock(dir: &Path, layout: &Layout) -> agents_akms::lock::KnowledgeLock {
    agents_akms::lock::acquire(&dir.join("locks"), layout, Duration::from_secs(20), &mut |_| {}).unwrap()
}

#[test]
fn a_killed_update_lands_whole_on_the_next_run_equal_to_a_clean_run() {
    let (clean_dir, clean) = fixture();
    let doc = write_session(&clean, "TASK-101.md", MEMORY);
    let report = update(&clean, &options(), &[doc]).unwrap();
    // The new node, the log, the overlay, graph.json.
    assert_eq!(report.written.len(), 4, "{:?}", report.written);
    let expected = snapshot(&clean_dir.path().join("repo"));
    for stop in 1..=4 {
        let (dir, layout) = fixture();
        let doc = write_session(&layout, "TASK-101.md", MEMORY);
        // Killed after `stop` of the four writes: the journal stays.
        update_until(&layout, &options(), std::slice::from_ref(&doc), Some(stop)).unwrap_err();
        assert!(agents_akms::lock::journal_path(&layout).exists());
        let _held = lock(dir.path(), &layout);
        let report = update(&layout, &options(), &[doc]).unwrap();
        assert_eq!(report.skipped.len(), 1, "replayed whole, so applied: stop {stop}");
        assert_eq!(snapshot(&dir.path().join("repo")), expected, "stop {stop}");
    }
}

#[test]
fn two_updates_of_different_sessions_at_once_both_land() {
    let (dir, layout) = fixture();
    let second = MEMORY
        .replace("TASK-101", "TASK-102")
        .replace("suggested_id: strain-rate-formula", "suggested_id: stress-divergence")
        .replace("title: \"Strain-rate formula\"", "title: \"Stress divergence check\"")
        .replace("Use the symmetric gradient for the strain rate.", "Check the divergence of the stress field.");
    let docs = [write_session(&layout, "TASK-101.md", MEMORY), write_session(&layout, "TASK-102.md", &second)];
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|scope| {
        let runs: Vec<_> = docs
            .iter()
            .map(|doc| {
                let (layout, barrier, root) = (&layout, &barrier, dir.path());
                scope.spawn(move || {
                    barrier.wait();
                    let _held = lock(root, layout);
                    update(layout, &options(), std::slice::from_ref(doc)).unwrap()
                })
            })
            .collect();
        for run in runs {
            assert_eq!(run.join().unwrap().applied.len(), 1);
        }
    });
    let state = overlay(&layout);
    assert!(state["session_nodes"].get("session-task-101").is_some(), "{state}");
    assert!(state["session_nodes"].get("session-task-102").is_some(), "{state}");
    assert!(layout.local_nodes().join("strain-rate-formula.md").exists());
    assert!(layout.local_nodes().join("stress-divergence.md").exists());
    let sessions: std::collections::BTreeSet<String> =
        read_log(&layout).unwrap().into_iter().map(|e| e.session).collect();
    assert_eq!(sessions.len(), 2);
    assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), compile(&layout, &options()).unwrap().json);
}

#[test]
fn fr_u09_a_near_duplicate_of_a_local_tentative_node_is_appended_to_it() {
    let (_dir, layout) = fixture();
    let draft = MEMORY
        .replace("suggested_id: strain-rate-formula", "suggested_id: epsilon-regularisation-again")
        .replace("title: \"Strain-rate formula\"", "title: \"Epsilon Regularisation of the Zero Frequency\"")
        .replace(
            "content_draft: \"Use the symmetric gradient for the strain rate.\"",
            "content_draft: \"Drafted by an agent: add an epsilon to the zero-frequency denominator.\"",
        );
    let doc = write_session(&layout, "TASK-101.md", &draft);
    update(&layout, &options(), &[doc]).unwrap();
    let node = std::fs::read_to_string(layout.local_nodes().join("epsilon-regularisation.md")).unwrap();
    assert!(node.contains("_Appended by the graph update from session-task-101"), "{node}");
    assert!(!layout.local_nodes().join("epsilon-regularisation-again.md").exists());
    let log = read_log(&layout).unwrap();
    assert!(log.iter().any(|e| matches!(&e.change, Change::Dedup { matched, action, .. } if matched == "epsilon-regularisation" && action == "appended")));
}

#[test]
fn fr_m04_fr_m05_agent_drafts_are_tentative_and_never_promoted_by_updates() {
    let (_dir, layout) = fixture();
    let first = write_session(&layout, "TASK-101.md", MEMORY);
    update(&layout, &options(), &[first]).unwrap();
    // Later tasks find the draft useful, again and again: it stays tentative.
    for i in 0..3 {
        let text = MEMORY.replace("TASK-101", &format!("TASK-20{i}")).replace(
            "nodes_used:\n",
            "nodes_used:\n  - id: strain-rate-formula\n    useful: true\n    coverage: sufficient\n",
        );
        let doc = write_session(&layout, &format!("TASK-20{i}.md"), &text);
        update(&layout, &options(), &[doc]).unwrap();
    }
    let node = std::fs::read_to_string(layout.local_nodes().join("strain-rate-formula.md")).unwrap();
    assert!(node.contains("status: tentative\n") && node.contains("source: agent\n"), "{node}");
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(layout.graph_json()).unwrap()).unwrap();
    let n = graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "strain-rate-formula").unwrap();
    assert_eq!((n["status"].as_str(), n["activations"].as_u64()), (Some("tentative"), Some(3)));
    assert!(close(&n["confidence"], 0.56), "{n}");
}

#[test]
fn fr_g13_session_refs_are_pruned_to_max_session_refs_most_recent_kept() {
    let (_dir, layout) = fixture();
    std::fs::write(layout.propagation_config(), "akms_schema: v2\ngraph:\n  max_session_refs: 2\n").unwrap();
    for i in 0..3 {
        let doc = write_session(&layout, &format!("T{i}.md"), &MEMORY.replace("TASK-101", &format!("T{i}")));
        update(&layout, &options(), &[doc]).unwrap();
    }
    let ls = &overlay(&layout)["nodes"]["lippmann-schwinger"];
    assert_eq!(ls["session_refs"], serde_json::json!(["sessions/T1.md", "sessions/T2.md"]));
    assert_eq!(ls["activations"], 10);
    // 0.85 + 3 x 0.02, clamped at nothing yet.
    assert!(close(&ls["confidence"], 0.91), "{ls}");
}

#[test]
fn nfr_r01_malformed_evidence_changes_nothing() {
    let (dir, layout) = fixture();
    update(&layout, &options(), &[]).unwrap();
    agents_akms::build(&layout, &options()).unwrap();
    let before = snapshot(dir.path());
    let good = write_session(&layout, "TASK-101.md", MEMORY);
    let bad = write_session(&layout, "TASK-102.md", &MEMORY.replace("coverage: outdated", "coverage: meh"));
    let with_docs = snapshot(dir.path());
    let error = update(&layout, &options(), &[good, bad]).unwrap_err().to_string();
    assert!(error.contains("nodes_used[1]"), "{error}");
    assert_eq!(snapshot(dir.path()), with_docs);
    assert_eq!(before.len() + 2, with_docs.len());
}

/// Issue 18 item 3: an AgentMemory naming a node no one has is applied with
/// a warning; the id becomes a `missing` entry, the pitfall is kept tied to
/// no node, and the other documents of the phase land.
#[test]
fn item_3_an_unknown_node_is_a_warning_and_missing_knowledge_never_a_block() {
    let (_dir, layout) = fixture();
    let good = write_session(&layout, "TASK-101.md", MEMORY);
    let text = MEMORY
        .replace("task_id: TASK-101", "task_id: TASK-103")
        .replace("id: green-operator", "id: no-such-node")
        .replace("node_ref: lippmann-schwinger", "node_ref: ghost-node")
        .replace("strain-rate-formula", "other-formula");
    let unknown = write_session(&layout, "TASK-103.md", &text);
    let report = update(&layout, &options(), &[good, unknown]).unwrap();
    assert_eq!(report.applied.len(), 2, "{report:?}");
    let warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("TASK-103.md: nodes_used[1].id: no node has the id `no-such-node`"), "{warnings:?}");
    assert!(warnings[1].contains("pitfalls_discovered[0].node_ref: no node has the id `ghost-node`"), "{warnings:?}");
    let missing: Vec<(String, String)> = read_log(&layout)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.change {
            Change::Missing { suggested_id, .. } => Some((e.task, suggested_id)),
            _ => None,
        })
        .collect();
    for id in ["no-such-node", "ghost-node"] {
        assert!(missing.contains(&("TASK-103".to_owned(), id.to_owned())), "{id}: {missing:?}");
    }
    let log = read_log(&layout).unwrap();
    assert!(log.iter().any(|e| e.task == "TASK-103"
        && matches!(&e.change, Change::Pitfall { node: None, description, .. } if description == "Division by zero at k = 0")));
    let state = overlay(&layout);
    assert!(state["session_nodes"].get("session-task-103").is_some());
    assert!(state["nodes"].get("no-such-node").is_none());
    let rebuilt = compile(&layout, &options()).unwrap();
    assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), rebuilt.json);
}

/// `nodes_used` entries over the fixture's nodes.
fn used_entry() -> impl Strategy<Value = String> {
    let ids = [
        "lippmann-schwinger",
        "green-operator",
        "fft-galerkin-basics",
        "epsilon-regularisation",
        "repo-conventions",
        "mirror-src-green",
    ];
    (0..ids.len(), any::<bool>(), 0..3usize).prop_map(move |(i, useful, c)| {
        let coverage = ["sufficient", "missing-detail", "outdated"][c];
        format!("  - id: {}\n    useful: {useful}\n    coverage: {coverage}\n", ids[i])
    })
}

fn document(task: usize, used: &[String], pitfall: bool, knowledge: bool) -> String {
    let mut text = format!(
        "---\ntask_id: T-{task}\ntask_description: x\nphase_id: 3\ntimestamp: 2026-04-0{}\nagent_model: m\nloadout_used: l.md\nstatus: partial\ntests_passed: 1\ntests_total: 2\n",
        task + 1
    );
    if !used.is_empty() {
        text.push_str("nodes_used:\n");
        text.push_str(&used.concat());
    }
    if pitfall {
        text.push_str("pitfalls_discovered:\n  - node_ref: green-operator\n    description: d\n    severity: medium\n");
    }
    if knowledge {
        text.push_str(&format!("new_knowledge:\n  - suggested_id: idea-{task}\n    domain: fft-galerkin\n    content_draft: \"idea number {task}\"\n    status: tentative\n    source: agent\n"));
    }
    text.push_str("akms_schema: v2\n---\n");
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// NFR-D03: applying the same documents twice equals applying them once,
    /// and one run over several documents equals one run per document.
    #[test]
    fn nfr_d03_applying_twice_equals_once(
        docs in prop::collection::vec((prop::collection::vec(used_entry(), 0..5), any::<bool>(), any::<bool>()), 1..3)
    ) {
        let texts: Vec<String> = docs.iter().enumerate().map(|(i, (u, p, k))| document(i, u, *p, *k)).collect();
        let (dir, layout) = fixture();
        let paths: Vec<PathBuf> = texts.iter().enumerate().map(|(i, t)| write_session(&layout, &format!("t{i}.md"), t)).collect();
        update(&layout, &options(), &paths).unwrap();
        // 3.4: the incrementally written graph equals a rebuild from scratch.
        let rebuilt = compile(&layout, &options()).unwrap();
        prop_assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), rebuilt.json);
        let once = snapshot(dir.path());
        let again = update(&layout, &options(), &paths).unwrap();
        prop_assert!(again.applied.is_empty());
        prop_assert_eq!(snapshot(dir.path()), once.clone());

        let (dir2, layout2) = fixture();
        for (i, t) in texts.iter().enumerate() {
            let path = write_session(&layout2, &format!("t{i}.md"), t);
            update(&layout2, &options(), &[path]).unwrap();
        }
        prop_assert_eq!(snapshot(dir2.path()), once);
    }
}

/// Issue 18 item 2: a second document with the same task id (a second plan
/// reusing `TASK-101`) is applied as its own session node; "already applied"
/// is decided by content, and the first session node keeps its file.
#[test]
fn item_2_evidence_is_never_dropped_or_overwritten() {
    let (_dir, layout) = fixture();
    let first = write_session(&layout, "TASK-101.md", MEMORY);
    update(&layout, &options(), std::slice::from_ref(&first)).unwrap();
    let second_text = MEMORY.replace("Division by zero at k = 0", "Overflow in the second plan");
    let second = write_session(&layout, "plan2-TASK-101.md", &second_text);
    let report = update(&layout, &options(), std::slice::from_ref(&second)).unwrap();
    assert_eq!(report.applied.len(), 1, "the second document is not skipped: {report:?}");
    let session = report.applied[0].session.clone();
    assert_ne!(session, "session-task-101");
    assert!(session.starts_with("session-task-101-"), "{session}");
    let state = overlay(&layout);
    assert_eq!(state["session_nodes"]["session-task-101"]["content_ref"], "sessions/TASK-101.md");
    assert_eq!(state["session_nodes"][&session]["content_ref"], "sessions/plan2-TASK-101.md");
    // Its pitfall reaches the graph, on its own session node.
    let edges = state["local_edges"].as_array().unwrap();
    assert!(edges.iter().any(|e| e["to"] == session.as_str() && e["note"] == "Overflow in the second plan"));
    assert!(edges.iter().any(|e| e["to"] == "session-task-101" && e["note"] == "Division by zero at k = 0"));

    // Replaying either, or the same content under another name, changes nothing.
    let copy = write_session(&layout, "copy.md", &second_text);
    let again = update(&layout, &options(), &[first.clone(), second, copy]).unwrap();
    assert!(again.applied.is_empty(), "{again:?}");
    let skipped: Vec<&str> = again.skipped.iter().map(|d| d.session.as_str()).collect();
    assert_eq!(skipped, ["session-task-101", session.as_str(), session.as_str()]);

    // A file overwritten in place with new content is new evidence, under a
    // new session node; the old node still names its own file.
    let third_text = MEMORY.replace("Division by zero at k = 0", "Third time");
    std::fs::write(&first, &third_text).unwrap();
    let third = update(&layout, &options(), std::slice::from_ref(&first)).unwrap();
    assert_eq!(third.applied.len(), 1);
    let third_session = &third.applied[0].session;
    assert!(third_session != "session-task-101" && *third_session != session, "{third_session}");
    let state = overlay(&layout);
    assert_eq!(state["session_nodes"]["session-task-101"]["content_ref"], "sessions/TASK-101.md");
    assert_eq!(state["session_nodes"].as_object().unwrap().len(), 4, "three applied plus the fixture's");
    let rebuilt = compile(&layout, &options()).unwrap();
    assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), rebuilt.json);
}

/// A registry written before content hashes: its session node with the
/// document's own id and file still counts as the document's application.
#[test]
fn item_2_a_registry_without_hashes_still_skips_its_documents() {
    let (_dir, layout) = fixture();
    let doc = write_session(&layout, "TASK-101.md", MEMORY);
    update(&layout, &options(), std::slice::from_ref(&doc)).unwrap();
    let text = std::fs::read_to_string(layout.local_state()).unwrap();
    let legacy: String = text.lines().filter(|l| !l.contains("content_hash")).map(|l| format!("{l}\n")).collect();
    assert_ne!(legacy, text);
    std::fs::write(layout.local_state(), &legacy).unwrap();
    let again = update(&layout, &options(), &[doc]).unwrap();
    assert!(again.applied.is_empty());
    assert_eq!(again.skipped[0].session, "session-task-101");
}

/// Issue 18 item 8 (UR-04): the pitfall weight by severity and a new node's
/// confidence come from `propagation_config.yaml`.
#[test]
fn item_8_pitfall_weight_and_new_node_confidence_come_from_the_config() {
    let (_dir, layout) = fixture();
    std::fs::write(
        layout.propagation_config(),
        "akms_schema: v2\nconfidence:\n  new_node_confidence: 0.42\ngraph:\n  pitfall_weight: {high: 0.9}\n",
    )
    .unwrap();
    let doc = write_session(&layout, "TASK-101.md", MEMORY);
    update(&layout, &options(), &[doc]).unwrap();
    let state = overlay(&layout);
    let edge = state["local_edges"].as_array().unwrap().iter().find(|e| e["to"] == "session-task-101").unwrap();
    assert_eq!(edge["weight"].as_f64(), Some(0.9));
    let node = std::fs::read_to_string(layout.local_nodes().join("strain-rate-formula.md")).unwrap();
    assert!(node.contains("confidence: 0.42"), "{node}");
}
