//! The text backends' conformance suite: the [`TextBackend`] contract,
//! written once and run against every implementation (Tantivy and FTS5 in
//! this crate's tests, PostgreSQL in agents-postgres's).
//!
//! A case is a public function taking an [`Opener`] (what opens the backend
//! whose index lives in a directory, or is keyed by it); it panics, like any
//! test, when the backend breaks the contract.
//! [`crate::text_backend_conformance!`] expands to one `#[test]` per case.
//! Cases that only a backend with files can meet (damaged files, read-only
//! opens) stay in this crate's tests. The module exists with the
//! `conformance` cargo feature; it is test code.

use std::path::Path;

use crate::{SearchFilter, TextBackend, TextBackendKind, TextDoc};

/// Opens the text backend whose index `dir` holds (or names): opening the
/// same `dir` again opens the same index.
pub trait Opener {
    fn open(&self, dir: &Path) -> Box<dyn TextBackend>;
}

impl Opener for TextBackendKind {
    fn open(&self, dir: &Path) -> Box<dyn TextBackend> {
        crate::open_text_backend(*self, dir).unwrap_or_else(|error| panic!("open {self}: {error}"))
    }
}

/// Expands to one `#[test]` per case, each calling it with the opener that
/// `$opener` evaluates to (evaluated once per test; it may `return` to skip).
#[macro_export]
macro_rules! text_backend_conformance {
    ($opener:expr) => {
        $crate::text_backend_conformance!(@cases $opener;
            camel_snake_and_path_parts_are_found,
            whole_identifier_ranks_exact_name_first,
            name_boost_beats_body_mention,
            body_only_matches_and_scores_the_body_alone,
            upsert_replaces_by_id,
            delete_paths_removes_every_doc_of_a_file,
            changes_persist_across_reopen_only_after_commit,
            uncommitted_changes_are_invisible,
            filter_by_path_prefix_and_kind,
            ties_are_ordered_by_id,
            hostile_queries_do_not_fail,
            empty_query_finds_nothing,
            scores_depend_on_the_documents_not_on_their_history,
        );
    };
    (@cases $opener:expr; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                let opener = $opener;
                $crate::conformance::$case(&opener);
            }
        )*
    };
}

fn open(kind: &dyn Opener, dir: &Path) -> Box<dyn TextBackend> {
    kind.open(dir)
}

/// A fresh backend in a temporary directory, filled with `docs` and committed.
fn indexed(kind: &dyn Opener, docs: &[TextDoc]) -> (tempfile::TempDir, Box<dyn TextBackend>) {
    let dir = tempfile::tempdir().unwrap();
    let mut backend = open(kind, dir.path());
    backend.upsert(docs).unwrap();
    backend.commit().unwrap();
    (dir, backend)
}

fn doc(id: &str, path: &str, name: &str) -> TextDoc {
    TextDoc { id: id.into(), path: path.into(), name: name.into(), kind: "function".into(), ..TextDoc::default() }
}

fn ids(backend: &dyn TextBackend, query: &str, filter: &SearchFilter) -> Vec<String> {
    backend.search(query, 10, filter).unwrap().into_iter().map(|hit| hit.id).collect()
}

fn all() -> SearchFilter {
    SearchFilter::default()
}

pub fn camel_snake_and_path_parts_are_found(kind: &dyn Opener) {
    let (_dir, backend) = indexed(
        kind,
        &[
            doc("n:camel", "src/net.rs", "parseHttpRequest"),
            doc("n:other", "src/page.rs", "renderPage"),
            doc("n:snake", "src/io.py", "read_config_file"),
            doc("n:path", "src/agents/store.rs", "open"),
        ],
    );
    assert_eq!(ids(&*backend, "http request", &all()), ["n:camel"]);
    assert_eq!(ids(&*backend, "config", &all()), ["n:snake"]);
    assert_eq!(ids(&*backend, "ReadConfigFile", &all()), ["n:snake"]);
    // `rs` matches every Rust file; the whole file name ranks its own file first.
    assert_eq!(ids(&*backend, "store.rs", &all())[0], "n:path");
    assert_eq!(ids(&*backend, "agents", &all()), ["n:path"]);
}

pub fn whole_identifier_ranks_exact_name_first(kind: &dyn Opener) {
    let (_dir, backend) = indexed(
        kind,
        &[
            TextDoc { body: "parse http request".into(), ..doc("n:a", "src/a.rs", "parse_http") },
            doc("n:b", "src/b.rs", "http_request_parser"),
            doc("n:c", "src/c.rs", "parse_http_request"),
            doc("n:d", "src/d.rs", "request"),
        ],
    );
    let hits = ids(&*backend, "parse_http_request", &all());
    assert_eq!(hits[0], "n:c", "{hits:?}");
    assert_eq!(hits.len(), 4);
}

pub fn name_boost_beats_body_mention(kind: &dyn Opener) {
    let (_dir, backend) = indexed(
        kind,
        &[
            TextDoc { body: "opens a socket and returns".into(), ..doc("n:1", "src/a.rs", "connect") },
            TextDoc { body: "calls connect and returns".into(), ..doc("n:0", "src/b.rs", "helper") },
        ],
    );
    let hits = backend.search("connect", 10, &all()).unwrap();
    assert_eq!(hits.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["n:1", "n:0"]);
    assert!(hits[0].score > hits[1].score, "{hits:?}");
    assert_eq!(hits[0].path, "src/a.rs");
}

pub fn body_only_matches_and_scores_the_body_alone(kind: &dyn Opener) {
    let (_dir, backend) = indexed(
        kind,
        &[
            TextDoc { body: "opens a socket".into(), ..doc("n:1", "src/connect.rs", "connect") },
            TextDoc { body: "calls connect, then connect again".into(), ..doc("n:2", "src/b.rs", "helper") },
            TextDoc { body: "calls connect once, then waits a while".into(), ..doc("n:3", "src/c.rs", "waiter") },
        ],
    );
    let body_only = SearchFilter { body_only: true, ..all() };
    let hits = backend.search("connect", 10, &body_only).unwrap();
    assert_eq!(hits.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["n:2", "n:3"], "{hits:?}");
    assert!(hits[0].score > hits[1].score, "{hits:?}");
    // Without it, the name and path still win.
    assert_eq!(ids(&*backend, "connect", &all())[0], "n:1");
}

pub fn upsert_replaces_by_id(kind: &dyn Opener) {
    let (_dir, mut backend) = indexed(kind, &[doc("n:1", "src/a.rs", "alpha"), doc("n:2", "src/a.rs", "beta")]);
    backend.upsert(&[doc("n:1", "src/moved.rs", "gamma")]).unwrap();
    backend.commit().unwrap();
    assert_eq!(backend.doc_count().unwrap(), 2);
    assert!(ids(&*backend, "alpha", &all()).is_empty());
    let hits = backend.search("gamma", 10, &all()).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].id.as_str(), hits[0].path.as_str()), ("n:1", "src/moved.rs"));

    // The same id twice in one batch: the last one wins.
    backend.upsert(&[doc("n:3", "src/c.rs", "delta"), doc("n:3", "src/c.rs", "epsilon")]).unwrap();
    backend.commit().unwrap();
    assert_eq!(backend.doc_count().unwrap(), 3);
    assert!(ids(&*backend, "delta", &all()).is_empty());
    assert_eq!(ids(&*backend, "epsilon", &all()), ["n:3"]);
}

pub fn delete_paths_removes_every_doc_of_a_file(kind: &dyn Opener) {
    let (_dir, mut backend) = indexed(
        kind,
        &[
            doc("n:1", "src/a.rs", "shared one"),
            doc("n:2", "src/a.rs", "shared two"),
            doc("n:3", "src/a.rs", "shared three"),
            doc("n:4", "src/b.rs", "shared four"),
            doc("n:5", "src/c.rs", "shared five"),
        ],
    );
    backend.delete_paths(&["src/a.rs".into(), "src/c.rs".into(), "src/missing.rs".into()]).unwrap();
    backend.delete_paths(&[]).unwrap();
    backend.commit().unwrap();
    assert_eq!(backend.doc_count().unwrap(), 1);
    assert_eq!(ids(&*backend, "shared", &all()), ["n:4"]);
}

pub fn changes_persist_across_reopen_only_after_commit(kind: &dyn Opener) {
    let dir = tempfile::tempdir().unwrap();
    let index_dir = dir.path().join("nested/text");
    {
        let mut backend = open(kind, &index_dir);
        backend.upsert(&[doc("n:1", "src/a.rs", "persisted")]).unwrap();
        backend.commit().unwrap();
        backend.upsert(&[doc("n:2", "src/b.rs", "discarded")]).unwrap();
    }
    let backend = open(kind, &index_dir);
    assert_eq!(backend.doc_count().unwrap(), 1);
    assert_eq!(ids(&*backend, "persisted", &all()), ["n:1"]);
    assert!(ids(&*backend, "discarded", &all()).is_empty());
}

pub fn uncommitted_changes_are_invisible(kind: &dyn Opener) {
    let (_dir, mut backend) = indexed(kind, &[doc("n:1", "src/a.rs", "visible")]);
    backend.upsert(&[doc("n:2", "src/b.rs", "pending")]).unwrap();
    backend.delete_paths(&["src/a.rs".into()]).unwrap();
    assert_eq!(backend.doc_count().unwrap(), 1);
    assert!(ids(&*backend, "pending", &all()).is_empty());
    assert_eq!(ids(&*backend, "visible", &all()), ["n:1"]);
    backend.commit().unwrap();
    assert_eq!(ids(&*backend, "pending", &all()), ["n:2"]);
    assert!(ids(&*backend, "visible", &all()).is_empty());
}

pub fn filter_by_path_prefix_and_kind(kind: &dyn Opener) {
    let (_dir, backend) = indexed(
        kind,
        &[
            doc("n:1", "src/store/db.rs", "token"),
            TextDoc { kind: "class".into(), ..doc("n:2", "src/store/model.rs", "token") },
            doc("n:3", "src/search/index.rs", "token"),
            doc("n:4", "tests/store.rs", "token"),
            doc("n:5", "src/storage.rs", "token"),
        ],
    );
    let filter = |paths: &[&str], kinds: &[&str]| SearchFilter {
        paths_prefix: paths.iter().map(|p| p.to_string()).collect(),
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        body_only: false,
    };
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    assert_eq!(sorted(ids(&*backend, "token", &filter(&["src/store/"], &[]))), ["n:1", "n:2"]);
    assert_eq!(sorted(ids(&*backend, "token", &filter(&["src/stor"], &[]))), ["n:1", "n:2", "n:5"]);
    assert_eq!(sorted(ids(&*backend, "token", &filter(&["src/search/", "tests/"], &[]))), ["n:3", "n:4"]);
    assert_eq!(ids(&*backend, "token", &filter(&[], &["class"])), ["n:2"]);
    assert_eq!(ids(&*backend, "token", &filter(&["src/store/"], &["function"])), ["n:1"]);
    assert!(ids(&*backend, "token", &filter(&["nowhere/"], &[])).is_empty());
    assert!(ids(&*backend, "token", &filter(&[], &["module"])).is_empty());
    assert_eq!(ids(&*backend, "token", &filter(&[""], &[])).len(), 5);

    // Filters select, they do not score.
    let unfiltered = backend.search("token", 10, &all()).unwrap();
    let filtered = backend.search("token", 10, &filter(&["src/"], &["class"])).unwrap();
    let same = unfiltered.iter().find(|hit| hit.id == "n:2").unwrap();
    assert_eq!(filtered[0].score, same.score);
}

pub fn ties_are_ordered_by_id(kind: &dyn Opener) {
    let docs: Vec<TextDoc> = ["n:4", "n:1", "n:5", "n:3", "n:2"]
        .iter()
        .map(|id| TextDoc { body: "same body".into(), ..doc(id, "src/same.rs", "tied") })
        .collect();
    // Two commits, so Tantivy holds the ties in two segments.
    let (_dir, mut backend) = indexed(kind, &docs[..2]);
    backend.upsert(&docs[2..]).unwrap();
    backend.commit().unwrap();
    let hits = backend.search("tied", 10, &all()).unwrap();
    assert_eq!(hits.iter().map(|hit| hit.id.as_str()).collect::<Vec<_>>(), ["n:1", "n:2", "n:3", "n:4", "n:5"]);
    assert!(hits.windows(2).all(|pair| pair[0].score == pair[1].score));
    let cut = ids(&*backend, "tied", &all());
    for limit in 1..=5 {
        let limited: Vec<String> = backend.search("tied", limit, &all()).unwrap().into_iter().map(|h| h.id).collect();
        assert_eq!(limited, cut[..limit], "limit {limit}");
    }
    assert!(backend.search("tied", 0, &all()).unwrap().is_empty());
    assert_eq!(backend.search("tied", usize::MAX, &all()).unwrap().len(), 5);
}

pub fn hostile_queries_do_not_fail(kind: &dyn Opener) {
    let (_dir, backend) = indexed(kind, &[TextDoc { body: "foo bar x".into(), ..doc("n:1", "src/a.rs", "foo") }]);
    for query in [
        "foo(bar) AND \"x",
        "\"",
        "\"\"",
        "*",
        "foo*",
        "NOT foo",
        "foo OR",
        "AND OR NOT NEAR",
        "name:foo",
        "-foo +bar",
        "{} [] ^ ~2 \\ '",
        "NEAR(foo bar, 2)",
        "ключ 鍵 🔑 \u{0}",
        &"x".repeat(10_000),
    ] {
        let result = backend.search(query, 10, &all());
        assert!(result.is_ok(), "query {query:?}: {result:?}");
    }
    assert_eq!(ids(&*backend, "foo(bar) AND \"x", &all()), ["n:1"]);
}

pub fn empty_query_finds_nothing(kind: &dyn Opener) {
    let (_dir, backend) = indexed(kind, &[doc("n:1", "src/a.rs", "anything")]);
    for query in ["", "   ", "()\"*:-", "\n\t"] {
        assert!(backend.search(query, 10, &all()).unwrap().is_empty(), "query {query:?}");
    }
}

/// Two indexes holding the same documents score alike: one built at once, one
/// that replaced and deleted documents over several commits.
pub fn scores_depend_on_the_documents_not_on_their_history(kind: &dyn Opener) {
    let dir = tempfile::tempdir().unwrap();
    let mut edited = open(kind, dir.path());
    for round in 0..3 {
        edited.upsert(&history_docs(round)).unwrap();
        edited.upsert(&[doc("n:gone", "src/gone.rs", "parse_date_gone")]).unwrap();
        edited.commit().unwrap();
    }
    edited.delete_paths(&["src/gone.rs".to_owned(), "src/f4.rs".to_owned()]).unwrap();
    edited.commit().unwrap();
    let mut wanted = history_docs(2);
    wanted.retain(|d| d.path != "src/f4.rs");
    let (_fresh_dir, fresh) = indexed(kind, &wanted);
    assert_eq!(edited.doc_count().unwrap(), fresh.doc_count().unwrap());
    for query in ["parse date", "token", "parse_date_3 date"] {
        let (a, b) = (edited.search(query, 20, &all()).unwrap(), fresh.search(query, 20, &all()).unwrap());
        assert!(!a.is_empty());
        assert_eq!(a, b, "{query}");
    }
    // Reopening changes nothing either.
    drop(edited);
    let reopened = open(kind, dir.path());
    assert_eq!(reopened.search("parse date", 20, &all()).unwrap(), fresh.search("parse date", 20, &all()).unwrap());
}

/// Documents of every size, so that field lengths (and so BM25) differ.
fn history_docs(round: usize) -> Vec<TextDoc> {
    (0..12)
        .map(|i| TextDoc {
            body: format!("parse {} {}", "date ".repeat(i % 4 + round), "token ".repeat(i)),
            doc: "parse the date".repeat(i % 3),
            ..doc(&format!("n:{i:02}"), &format!("src/f{}.rs", i % 5), &format!("parse_date_{i}"))
        })
        .collect()
}
