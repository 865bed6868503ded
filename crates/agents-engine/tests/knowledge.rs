//! The knowledge service, called directly on copies of the golden fixture of
//! `agents-akms` (global vault + local nodes + code mirror + overlay): tags
//! derived and written back, the graph built and indexed for search in one
//! step, sessions recorded. (`agents knowledge` itself, its output and exit
//! codes, is tested in `agents-cli/tests/knowledge*.rs`.)

use std::path::{Path, PathBuf};

use agents_engine::Home;
use agents_engine::knowledge::{KnowledgeError, KnowledgeService, Vault};

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../agents-akms/tests/fixtures/golden");

struct Knowledge {
    _dir: tempfile::TempDir,
    vault: PathBuf,
    repo: PathBuf,
    service: KnowledgeService,
}

#[path = "common/tree.rs"]
mod tree;
use tree::{copy_tree, snapshot};

fn knowledge() -> Knowledge {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_tree(Path::new(GOLDEN), &root);
    let vault = root.join("global");
    let config = agents_core::config::Config { global_vault: Some(vault.display().to_string()), ..Default::default() };
    let service = KnowledgeService::new(Home::new(root.join("home")), &config);
    Knowledge { _dir: dir, vault, repo: root.join("repo"), service }
}

impl Knowledge {
    fn vault(&self) -> Vault {
        self.service.resolve(None, &self.repo).unwrap()
    }
}

fn no_lock(_: Option<u32>, _: std::time::Duration) {}

#[test]
fn fr_t04_fr_t05_tags_are_derived_written_back_and_logged() {
    let k = knowledge();
    let vault = k.vault();
    let task = k.repo.join("task.json");
    std::fs::write(
        &task,
        r#"{"task_id": "T-1", "title": "Regularise the FFT-Galerkin Basics solver",
            "objective": "Stable green operator at zero frequency", "steps": ["touch the spectral part"],
            "scope": ["docs/lippmann-schwinger-derivation.md"], "akms_tags": [], "akms_schema": "v2"}"#,
    )
    .unwrap();
    let vault_before = snapshot(&k.vault);

    let dry = k.service.derive_task_tags(&vault, &task, true).unwrap();
    assert!(!dry.written);
    assert!(std::fs::read_to_string(&task).unwrap().contains(r#""akms_tags": []"#), "a dry run writes nothing");

    let report = k.service.derive_task_tags(&vault, &task, false).unwrap();
    let derived: Vec<&str> = report.derived.iter().map(|d| d.tag.as_str()).collect();
    // Scope: the content_ref of lippmann-schwinger; text: the title "FFT-Galerkin
    // Basics" (whole words), and tags found in the text as substrings.
    assert_eq!(derived, ["fft", "fft-galerkin", "galerkin", "green-operator", "micromechanics", "solver", "spectral"]);
    let json = serde_json::to_value(&report).unwrap();
    let green = &json["derived"].as_array().unwrap().iter().find(|d| d["tag"] == "green-operator").unwrap()["sources"];
    assert_eq!(green[0]["rule"], "scope_content_ref", "{green}");
    assert!(report.written);

    // Written back: the task keeps every field, with the tags filled in.
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&task).unwrap()).unwrap();
    assert_eq!(record["akms_tags"].as_array().unwrap().len(), derived.len());
    let mut keys: Vec<&String> = record.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["akms_schema", "akms_tags", "objective", "scope", "steps", "task_id", "title"]);
    assert_eq!(record["steps"][0], "touch the spectral part");
    // Logged with where each tag came from.
    let log = std::fs::read_to_string(k.repo.join("knowledge/logs/tag-derivation.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1);
    assert!(log.contains(r#""task_id":"T-1""#) && log.contains("scope_content_ref"), "{log}");

    // An author's tags (here, now the derived ones) are kept; nothing is rewritten.
    let again = k.service.derive_task_tags(&vault, &task, false).unwrap();
    assert_eq!((again.written, again.kept.len()), (false, derived.len()));
    assert_eq!(std::fs::read_to_string(k.repo.join("knowledge/logs/tag-derivation.jsonl")).unwrap(), log);

    // Bad records are the caller's input, naming file and field.
    std::fs::write(&task, r#"{"task_id": "T-2", "akms_schema": "v1", "akms_tags": []}"#).unwrap();
    let error = k.service.derive_task_tags(&vault, &task, false).unwrap_err();
    assert!(error.is_bad_input() && error.to_string().contains("SchemaVersionError"), "{error}");
    std::fs::write(&task, r#"{"task_id": "T-3", "akms_schema": "v2", "akms_tags": "fft"}"#).unwrap();
    let error = k.service.derive_task_tags(&vault, &task, false).unwrap_err();
    assert!(error.is_bad_input() && error.to_string().contains("akms_tags"), "{error}");
    assert_eq!(vault_before, snapshot(&k.vault));
}

#[test]
fn build_indexes_node_text_and_search_returns_passages_scoped_to_a_node_set() {
    let k = knowledge();
    let vault = k.vault();
    let search =
        |text: &str, nodes: &[String]| k.service.search(&vault, text, nodes, 10, &mut |e| panic!("{e}"), &mut no_lock);
    // Before a build there is nothing to search.
    let error = search("derivation", &[]).unwrap_err();
    assert!(matches!(&error, KnowledgeError::Invalid(m) if m.contains("agents knowledge build")), "{error}");
    let _lock = k.service.lock(&vault.layout, &mut no_lock).unwrap();
    let compiled = k.service.build(&vault).unwrap();
    assert!(compiled.node_count > 0);
    drop(_lock);

    // The wrapper node's body and its content_ref document are both its text.
    let hits = search("plain document without frontmatter", &[]).unwrap();
    assert_eq!(hits[0].node, "lippmann-schwinger", "{hits:#?}");
    assert!(hits[0].passage.contains("A plain document without frontmatter"), "{hits:#?}");
    assert_eq!(hits[0].file, "global-vault/lippmann-schwinger.md", "{hits:#?}");

    // Scoped to a node set, other nodes never appear.
    let scoped = search("green operator", &["epsilon-regularisation".to_owned()]).unwrap();
    assert!(scoped.iter().all(|h| h.node == "epsilon-regularisation"), "{scoped:#?}");

    // The same sources answer the same way.
    let again = search("plain document without frontmatter", &[]).unwrap();
    assert_eq!(serde_json::to_value(&again).unwrap(), serde_json::to_value(&hits).unwrap());
}

#[test]
fn a_session_is_recorded_once_and_never_overwritten() {
    let k = knowledge();
    let memory = |notes: &str| {
        format!(
            "---\ntask_id: T-9\ntask_description: \"Retry with backoff\"\nphase_id: 1\n\
             timestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase1.md\n\
             status: complete\ntests_passed: 3\ntests_total: 3\nnodes_used: []\npitfalls_discovered: []\n\
             akms_schema: v2\n---\n\n## Task Notes\n{notes}\n"
        )
    };
    let repo = Some(k.repo.clone());
    let first = k.service.record_session(&k.repo, repo.clone(), "T-9", &memory("first")).unwrap();
    assert!(first.written && first.file.ends_with("knowledge/sessions/T-9.md"), "{first:?}");
    // The same text again: a no-op.
    let same = k.service.record_session(&k.repo, repo.clone(), "T-9", &memory("first")).unwrap();
    assert!(!same.written && same.file == first.file, "{same:?}");
    // Other text for the same task goes beside it.
    let other = k.service.record_session(&k.repo, repo.clone(), "T-9", &memory("second")).unwrap();
    assert!(other.written && other.file != first.file, "{other:?}");
    assert!(std::fs::read_to_string(&first.file).unwrap().contains("first"));
    // A task id that is not a file name, or one the document does not carry, is refused.
    for (task, text) in [("../x", memory("x")), ("T-10", memory("x"))] {
        let error = k.service.record_session(&k.repo, repo.clone(), task, &text).unwrap_err();
        assert!(error.is_bad_input(), "{error}");
    }
}
