//! The database restarts under load: while the server is down every call is
//! one clear error (no panic, nothing half-written), and once it is back the
//! next calls succeed on new connections. Runs a throwaway server of its own
//! (`scripts/pg-test-server.sh`, stopped and started again on the same port)
//! where the test server is available; skipped otherwise, as the others are.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use agents_postgres::PostgresStore;
use agents_postgres::text::PgTextBackend;
use agents_search::{SearchFilter, TextBackend, TextDoc};
use agents_store::{CodeGraphStore, FileIndexStore, IndexCommit, ProjectStore, StoreError, UkoNode};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/pg-test-server.sh")
}

/// A server of the test's own in a temporary directory, stopped when dropped.
struct Server {
    dir: tempfile::TempDir,
}

impl Server {
    fn run(&self, action: &str) -> String {
        let out = Command::new("bash").arg(script()).arg(action).arg(self.dir.path()).output().unwrap();
        assert!(out.status.success(), "pg-test-server.sh {action}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("bash").arg(script()).arg("stop").arg(self.dir.path()).output();
    }
}

fn node(path: &str) -> UkoNode {
    UkoNode {
        uri: format!("uko://r/{path}"),
        path: path.to_owned(),
        symbol_path: String::new(),
        kind: "file".to_owned(),
        name: path.to_owned(),
        parent_uri: None,
        language: "python".to_owned(),
        start_byte: 0,
        end_byte: 1,
        start_line: 0,
        start_col: 0,
        end_line: 1,
        end_col: 0,
        signature: None,
        doc: None,
        content_hash: "h".to_owned(),
    }
}

fn doc(id: &str, name: &str) -> TextDoc {
    TextDoc {
        id: id.into(),
        path: format!("src/{id}.rs"),
        name: name.into(),
        kind: "function".into(),
        ..TextDoc::default()
    }
}

fn commit() -> IndexCommit {
    IndexCommit { file_count: 1, primary_language: "python".to_owned(), ..IndexCommit::default() }
}

#[test]
fn requests_during_a_restart_fail_clearly_and_later_ones_succeed() {
    if common::test_url().is_none() {
        return;
    }
    let server = Server { dir: tempfile::tempdir().unwrap() };
    let url = server.run("start");
    let password = url.split_once("://").and_then(|(_, r)| r.split_once('@')).and_then(|(u, _)| u.split_once(':'));
    let password = password.map(|(_, p)| p.to_owned()).unwrap_or_default();
    let store = Arc::new(PostgresStore::open(&url).unwrap());
    store.create_project("kept").unwrap();
    let resource = agents_core::ids::new_ulid();
    let index = store.ensure_index(&resource).unwrap();
    let mut text = PgTextBackend::open(store.clone(), "text");
    text.upsert(&[doc("a", "alpha")]).unwrap();
    text.commit().unwrap();

    // An indexing run and a text write are open when the server goes away.
    let mut run = store.begin_index_write(&index.index_id).unwrap();
    run.write_nodes("a.py", &[node("a.py")]).unwrap();
    text.upsert(&[doc("b", "beta")]).unwrap();
    server.run("stop");

    let outage: Vec<StoreError> = vec![
        run.finish(&commit()).unwrap_err(),
        store.project("kept").unwrap_err(),
        store.create_project("during").unwrap_err(),
    ];
    for error in &outage {
        let message = error.to_string();
        assert!(matches!(error, StoreError::Server { .. }), "{error:?}");
        assert!(message.starts_with("postgres://agents:***@127.0.0.1:"), "names the server: {message}");
        assert!(!message.contains(&password), "no password: {message}");
    }
    assert!(text.commit().is_err(), "the text write's transaction went with the server");
    assert!(text.search("alpha", 10, &SearchFilter::default()).is_err());

    assert_eq!(server.run("start"), url, "the same server again");
    // The pool's connections died with the server: new ones serve.
    assert!(store.project("kept").unwrap().is_some());
    assert!(store.project("during").unwrap().is_none(), "the failed write left nothing");
    store.create_project("after").unwrap();
    assert!(store.uko_all_nodes(&index.index_id).unwrap().is_empty(), "the interrupted run left no node");
    assert_ne!(store.index_metadata(&resource).unwrap().unwrap().status.as_str(), "ready");
    let hits: Vec<String> =
        text.search("alpha beta", 10, &SearchFilter::default()).unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(hits, ["a"], "the committed document, not the lost one");
    // The text index takes writes again on a new transaction.
    text.upsert(&[doc("c", "gamma")]).unwrap();
    text.commit().unwrap();
    assert_eq!(text.doc_count().unwrap(), 2);
    // And a run goes through.
    let mut run = store.begin_index_write(&index.index_id).unwrap();
    run.write_nodes("a.py", &[node("a.py")]).unwrap();
    run.finish(&commit()).unwrap();
    assert_eq!(store.uko_all_nodes(&index.index_id).unwrap().len(), 1);
}
