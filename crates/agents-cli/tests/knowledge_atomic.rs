//! Crashes and concurrency on one repository's knowledge, end to end: an
//! update killed between its writes is finished by the next run; two updates
//! at once both land; searches run side by side and beside a build, and a
//! missing or unreadable search index is rebuilt, never an empty answer.

mod common;

use std::io::BufRead;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use common::{Knowledge, knowledge, parse, stderr, stdout, tree_bytes};

const MEMORY: &str = "---\ntask_id: TASK-101\ntask_description: \"Fix strain-rate formula\"\nphase_id: 2\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase2-loadout.md\nstatus: complete\ntests_passed: 7\ntests_total: 7\nnodes_used:\n  - id: lippmann-schwinger\n    useful: true\n    coverage: sufficient\n  - id: green-operator\n    useful: false\n    coverage: outdated\npitfalls_discovered:\n  - node_ref: lippmann-schwinger\n    description: \"Division by zero at k = 0\"\n    severity: high\nnew_knowledge:\n  - suggested_id: strain-rate-formula\n    title: \"Strain-rate formula\"\n    domain: fft-galerkin\n    content_draft: \"Use the symmetric gradient for the strain rate.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n\n## Task Notes\n";

/// The binary as a plain process (so several can run at once).
fn command(k: &Knowledge, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agents"));
    cmd.env("AGENTS_HOME", &k.home)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .env_remove("AGENTS_LOG")
        .env_remove("AGENTS_AKMS_FAILPOINT")
        .current_dir(&k.repo)
        .arg("knowledge")
        .args(args);
    cmd
}

fn run(k: &Knowledge, args: &[&str]) -> Output {
    command(k, args).output().unwrap()
}

fn ok(k: &Knowledge, args: &[&str]) -> String {
    let out = run(k, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn spawn(k: &Knowledge, args: &[&str]) -> Child {
    command(k, args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

fn session(repo: &Path, name: &str, text: &str) -> String {
    std::fs::write(repo.join("knowledge/sessions").join(name), text).unwrap();
    format!("knowledge/sessions/{name}")
}

/// The ids of the nodes of the compiled graph.
fn graph_nodes(repo: &Path) -> Vec<String> {
    let graph = parse(&std::fs::read(repo.join("knowledge/graph/graph.json")).unwrap());
    graph["nodes"].as_array().unwrap().iter().filter_map(|n| n["id"].as_str().map(str::to_owned)).collect()
}

type Tree = std::collections::BTreeMap<std::path::PathBuf, String>;

/// The repository's files, with the (per-test) vault path made `VAULT`.
fn tree(k: &Knowledge) -> Tree {
    let vault = k.vault.to_string_lossy().into_owned();
    tree_bytes(&k.repo)
        .into_iter()
        .map(|(path, bytes)| (path, String::from_utf8_lossy(&bytes).replace(&vault, "VAULT")))
        .collect()
}

/// The repository's files are `expected`, byte for byte (naming the files that differ).
fn assert_same(k: &Knowledge, expected: &Tree, case: &str) {
    let found = tree(k);
    let differ: Vec<_> = found
        .keys()
        .chain(expected.keys())
        .filter(|path| found.get(*path) != expected.get(*path))
        .map(|path| path.display().to_string())
        .collect();
    assert!(differ.is_empty(), "{case}: {differ:?}");
}

#[test]
fn an_update_killed_between_its_writes_is_finished_by_the_next_run_as_a_clean_run_would() {
    // The failpoints exist in debug builds only.
    if !cfg!(debug_assertions) {
        return;
    }
    let clean = knowledge();
    let doc = session(&clean.repo, "TASK-101.md", MEMORY);
    ok(&clean, &["update", &doc]);
    let expected = tree(&clean);
    // Killed (abort, as kill -9: nothing runs after) once the journal is
    // written, after the new node, and after the "applied" marker.
    for failpoint in ["journal-written", "after-write-1", "after-write-3"] {
        let k = knowledge();
        let doc = session(&k.repo, "TASK-101.md", MEMORY);
        let killed = command(&k, &["update", &doc]).env("AGENTS_AKMS_FAILPOINT", failpoint).output().unwrap();
        assert!(!killed.status.success(), "{failpoint}: {}", stderr(&killed));
        assert!(k.repo.join("knowledge/.journal.json").exists(), "{failpoint}");
        // What a write killed mid-file leaves.
        let stale = k.repo.join("knowledge/graph/.graph.json.tmp-4000000000");
        std::fs::write(&stale, "{").unwrap();
        let out = ok(&k, &["update", &doc]);
        assert!(out.contains("skipped knowledge/sessions/TASK-101.md: session-task-101 was already applied"), "{out}");
        assert!(!stale.exists(), "{failpoint}");
        assert_same(&k, &expected, failpoint);
    }
    // Killed before the journal is complete: nothing was applied, and the
    // rerun applies it.
    let k = knowledge();
    let doc = session(&k.repo, "TASK-101.md", MEMORY);
    let before = tree_bytes(&k.repo);
    std::fs::write(k.repo.join("knowledge/.journal.json.tmp-4000000000"), "{\"akms_jou").unwrap();
    ok(&k, &["validate"]);
    assert_ne!(tree_bytes(&k.repo), before, "the planted temporary file is there");
    let out = ok(&k, &["update", &doc]);
    assert!(out.contains("applied knowledge/sessions/TASK-101.md as session-task-101"), "{out}");
    assert_same(&k, &expected, "no journal");
}

#[test]
fn two_updates_of_different_sessions_at_once_both_land() {
    let k = knowledge();
    ok(&k, &["build"]);
    let second = MEMORY
        .replace("TASK-101", "TASK-102")
        .replace("suggested_id: strain-rate-formula", "suggested_id: stress-divergence")
        .replace("title: \"Strain-rate formula\"", "title: \"Stress divergence check\"")
        .replace("Use the symmetric gradient for the strain rate.", "Check the divergence of the stress field.");
    let docs = [session(&k.repo, "TASK-101.md", MEMORY), session(&k.repo, "TASK-102.md", &second)];
    let runs: Vec<Child> = docs.iter().map(|doc| spawn(&k, &["update", doc])).collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stdout(&out).contains("applied knowledge/sessions/TASK-10"), "{}", stdout(&out));
    }
    // Both session nodes (the overlay's "applied" markers) are registered.
    let overlay = std::fs::read_to_string(k.repo.join("knowledge/graph/local_state.yaml")).unwrap();
    let nodes = graph_nodes(&k.repo);
    for id in ["session-task-101", "session-task-102"] {
        assert!(overlay.contains(&format!("{id}:")), "{id}: {overlay}");
        assert!(nodes.iter().any(|n| n == id), "{id}: {nodes:?}");
    }
    assert!(k.repo.join("knowledge/local-nodes/strain-rate-formula.md").exists());
    assert!(k.repo.join("knowledge/local-nodes/stress-divergence.md").exists());
    // graph.json is the build of the result, and the search index has both.
    let graph = std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap();
    ok(&k, &["build"]);
    assert_eq!(std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap(), graph);
    let hits = parse(&run(&k, &["--json", "search", "stress divergence symmetric gradient"]).stdout);
    let nodes: Vec<&str> = hits.as_array().unwrap().iter().filter_map(|h| h["node"].as_str()).collect();
    assert!(nodes.contains(&"stress-divergence") && nodes.contains(&"strain-rate-formula"), "{hits:#}");
}

#[test]
fn searches_run_side_by_side_and_beside_a_build() {
    let k = knowledge();
    ok(&k, &["build"]);
    let mut runs: Vec<Child> = (0..6).map(|_| spawn(&k, &["--json", "search", "green operator"])).collect();
    runs.push(spawn(&k, &["build"]));
    runs.extend((0..6).map(|_| spawn(&k, &["--json", "search", "green operator"])));
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        if !stdout(&out).starts_with("Built") {
            assert!(!parse(&out.stdout).as_array().unwrap().is_empty(), "{}", stdout(&out));
        }
    }
}

#[test]
fn a_missing_or_unreadable_search_index_is_rebuilt_never_an_empty_answer() {
    let k = knowledge();
    ok(&k, &["build"]);
    let expected = parse(&run(&k, &["--json", "search", "green operator"]).stdout);
    assert!(!expected.as_array().unwrap().is_empty());
    // Gone (a killed build of an older version, a cleaned cache).
    std::fs::remove_dir_all(k.home.join("search")).unwrap();
    let out = run(&k, &["--json", "search", "green operator"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(parse(&out.stdout), expected);
    // There but unreadable: rebuilt, with a warning.
    let index = std::fs::read_dir(k.home.join("search/knowledge")).unwrap().next().unwrap().unwrap().path();
    let current = index.join("tantivy/CURRENT");
    let live = std::fs::read_to_string(&current).unwrap();
    std::fs::remove_file(index.join("tantivy").join(live.trim()).join("meta.json")).unwrap();
    let out = run(&k, &["search", "green operator"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("rebuilding the knowledge search index"), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("## "), "{}", stdout(&out));
    assert_eq!(parse(&run(&k, &["--json", "search", "green operator"]).stdout), expected);
    // Without graph.json to rebuild from: a clear error, non-zero.
    std::fs::remove_dir_all(k.home.join("search")).unwrap();
    std::fs::remove_file(k.repo.join("knowledge/graph/graph.json")).unwrap();
    let out = run(&k, &["search", "green operator"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("run `agents knowledge build` first"), "{}", stderr(&out));
}

#[test]
fn a_writer_refuses_clearly_when_another_holds_the_lock_past_the_wait() {
    let k = knowledge();
    ok(&k, &["build"]);
    // Hold the repository's lock as another writer would.
    let layout = agents_akms::Layout::new(&k.repo, k.vault.clone());
    let held =
        agents_akms::lock::acquire(&k.home.join("locks"), &layout, std::time::Duration::ZERO, &mut |_| {}).unwrap();
    let graph = std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap();
    let out = command(&k, &["build"]).env("AGENTS_KNOWLEDGE_WAIT", "0").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("another knowledge writer (pid {})", std::process::id())), "{err}");
    // Readers do not wait for it.
    let out = run(&k, &["--json", "search", "green operator"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A writer that may wait says so, and goes on once the lock is free.
    let mut waiting = spawn(&k, &["build"]);
    let mut lines = std::io::BufReader::new(waiting.stderr.take().unwrap()).lines();
    let line = lines.next().expect("the waiter says it waits").unwrap();
    assert!(line.contains("waiting for another knowledge writer of"), "{line}");
    drop(held);
    let out = waiting.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    assert_eq!(std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap(), graph);
}

#[test]
fn a_migrate_killed_between_its_writes_is_finished_by_the_next_run() {
    if !cfg!(debug_assertions) {
        return;
    }
    // A v1 node whose experiential fields move into the overlay: two files.
    let v1 = |k: &Knowledge| {
        let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
        let text = std::fs::read_to_string(&node).unwrap();
        let old = text
            .replace("activations: 2\nakms_schema: v2", "activations: 2\nlast_activated: 2025-05-01\nakms_schema: v1");
        std::fs::write(&node, old).unwrap();
    };
    let clean = knowledge();
    v1(&clean);
    ok(&clean, &["migrate"]);
    let expected = tree(&clean);
    let k = knowledge();
    v1(&k);
    let killed = command(&k, &["migrate"]).env("AGENTS_AKMS_FAILPOINT", "after-write-1").output().unwrap();
    assert!(!killed.status.success(), "{}", stderr(&killed));
    let out = ok(&k, &["migrate"]);
    assert!(out.starts_with("Nothing to migrate"), "{out}");
    assert_same(&k, &expected, "migrate");
}
