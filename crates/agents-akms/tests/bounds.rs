//! Bounded work for any input on the update path: evidence files that are
//! FIFOs, and `content_draft`s over the repository's limit, are refused with
//! an error naming the file (and the setting), and nothing changes.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use agents_akms::update::update;
use agents_akms::{CompileOptions, Layout};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");

const MEMORY: &str = "---\ntask_id: TASK-101\ntask_description: \"Fix strain-rate formula\"\nphase_id: 1\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase1-loadout.md\nstatus: complete\ntests_passed: 7\ntests_total: 7\nnew_knowledge:\n  - suggested_id: strain-rate-formula\n    title: \"Strain-rate formula\"\n    domain: fft-galerkin\n    content_draft: \"Use the symmetric gradient for the strain rate, and mind the factor of one half.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n\n## Task Notes\n";

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

/// The update of `documents`, run on another thread: its error message.
/// Panics when it does not end within 20 s (a hang guard, not a timing).
fn update_error(layout: &Layout, documents: Vec<PathBuf>) -> String {
    let layout = layout.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let options = CompileOptions { global_vault_display: "~/.claude/akms/nodes".into() };
        tx.send(update(&layout, &options, &documents).map(|_| ()).map_err(|e| e.to_string())).unwrap()
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the update ends").unwrap_err()
}

#[test]
fn a_content_draft_over_the_configured_limit_is_refused() {
    let (_dir, layout) = fixture();
    let config = layout.propagation_config();
    std::fs::write(&config, "akms_schema: v2\nlimits:\n  max_content_draft_bytes: 64\n").unwrap();
    let session = layout.knowledge().join("sessions/task-101.md");
    std::fs::write(&session, MEMORY).unwrap();
    let before = std::fs::read(layout.local_state()).unwrap();
    let error = update_error(&layout, vec![session]);
    assert_eq!(
        error,
        "knowledge/sessions/task-101.md:11: new_knowledge[0].content_draft: is 80 bytes, over the limit of 64 bytes (limits.max_content_draft_bytes in propagation_config.yaml)"
    );
    assert_eq!(std::fs::read(layout.local_state()).unwrap(), before, "nothing changed");
    assert!(!layout.local_nodes().join("strain-rate-formula.md").exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_as_evidence_is_refused_without_hanging() {
    let (_dir, layout) = fixture();
    let fifo = layout.knowledge().join("sessions/pipe.md");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let error = update_error(&layout, vec![fifo]);
    assert_eq!(error, "knowledge/sessions/pipe.md: is a FIFO (named pipe), not a regular file; it was not read");
}
