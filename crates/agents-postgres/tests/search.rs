//! The text backends' suite (agents-search's `tests/backends.rs`), its
//! cases copied as they are, run against [`PgTextBackend`] on the test server;
//! and the vector backend's behaviour on pgvector. Skipped (saying why) without
//! `AGENTS_TEST_POSTGRES_URL`, unless `AGENTS_REQUIRE_POSTGRES=1`.

mod common;

use std::path::Path;
use std::sync::Arc;

use agents_postgres::PostgresStore;
use agents_postgres::text::PgTextBackend;
use agents_postgres::vector::PgVectorBackend;
use agents_search::vector::{VectorBackend, VectorDoc};
use agents_search::{SearchFilter, TextBackend, TextDoc};

/// The backend "kind" of the copied cases: a store on the test server.
struct Pg {
    store: Arc<PostgresStore>,
}

macro_rules! backend_suite {
    ($($case:ident),* $(,)?) => {
        mod postgres {
            $(#[test] fn $case() {
                let Some(url) = crate::common::test_url() else { return };
                let pg = super::Pg { store: Arc::new(crate::common::fresh_store(&url)) };
                super::$case(&pg)
            })*
            use super::Arc;
        }
    };
}

backend_suite!(
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

/// The text index keyed by `dir` (a fresh temporary directory per index, as the copied cases make).
fn open(kind: &Pg, dir: &Path) -> Box<dyn TextBackend> {
    Box::new(PgTextBackend::open(kind.store.clone(), &dir.display().to_string()))
}

/// A fresh backend filled with `docs` and committed.
fn indexed(kind: &Pg, docs: &[TextDoc]) -> (tempfile::TempDir, Box<dyn TextBackend>) {
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

fn camel_snake_and_path_parts_are_found(kind: &Pg) {
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

fn whole_identifier_ranks_exact_name_first(kind: &Pg) {
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

fn name_boost_beats_body_mention(kind: &Pg) {
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

fn body_only_matches_and_scores_the_body_alone(kind: &Pg) {
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

fn upsert_replaces_by_id(kind: &Pg) {
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

fn delete_paths_removes_every_doc_of_a_file(kind: &Pg) {
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

fn changes_persist_across_reopen_only_after_commit(kind: &Pg) {
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

fn uncommitted_changes_are_invisible(kind: &Pg) {
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

fn filter_by_path_prefix_and_kind(kind: &Pg) {
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

fn ties_are_ordered_by_id(kind: &Pg) {
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

fn hostile_queries_do_not_fail(kind: &Pg) {
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

fn empty_query_finds_nothing(kind: &Pg) {
    let (_dir, backend) = indexed(kind, &[doc("n:1", "src/a.rs", "anything")]);
    for query in ["", "   ", "()\"*:-", "\n\t"] {
        assert!(backend.search(query, 10, &all()).unwrap().is_empty(), "query {query:?}");
    }
}

/// Two indexes holding the same documents score alike: one built at once, one
/// that replaced and deleted documents over several commits.
fn scores_depend_on_the_documents_not_on_their_history(kind: &Pg) {
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

fn history_docs(round: usize) -> Vec<TextDoc> {
    (0..12)
        .map(|i| TextDoc {
            body: format!("parse {} {}", "date ".repeat(i % 4 + round), "token ".repeat(i)),
            doc: "parse the date".repeat(i % 3),
            ..doc(&format!("n:{i:02}"), &format!("src/f{}.rs", i % 5), &format!("parse_date_{i}"))
        })
        .collect()
}

#[test]
fn text_indexes_of_two_keys_are_independent() {
    let Some(url) = common::test_url() else { return };
    let store = Arc::new(common::fresh_store(&url));
    let mut one = PgTextBackend::open(store.clone(), "one");
    let two = PgTextBackend::open(store.clone(), "two");
    one.upsert(&[doc("n:1", "src/a.rs", "alpha")]).unwrap();
    one.commit().unwrap();
    assert_eq!((one.doc_count().unwrap(), two.doc_count().unwrap()), (1, 0));
    assert!(ids(&two, "alpha", &all()).is_empty());
    assert_eq!(one.name(), "postgres");
}

fn unit(dim: usize, hot: usize) -> Vec<f32> {
    let mut v = vec![0.0; dim];
    v[hot] = 1.0;
    v
}

fn vdoc(id: &str, path: &str, vector: Vec<f32>) -> VectorDoc {
    VectorDoc { id: id.into(), path: path.into(), kind: "function".into(), vector }
}

#[test]
fn vectors_are_found_nearest_first_with_filters_and_ties_by_id() {
    let Some(url) = common::test_url() else { return };
    let store = Arc::new(common::fresh_store(&url));
    let mut backend = PgVectorBackend::open(store.clone(), &common::fresh_schema(), 4).unwrap();
    assert_eq!((backend.name(), backend.dim(), backend.len()), ("pgvector", 4, 0));
    let mut near = unit(4, 0);
    near[1] = 0.5;
    backend
        .upsert(&[
            vdoc("n:b", "src/b.rs", unit(4, 0)),
            vdoc("n:a", "src/a.rs", unit(4, 0)),
            vdoc("n:c", "src/c.rs", near),
            vdoc("n:d", "lib/d.rs", unit(4, 2)),
        ])
        .unwrap();
    assert_eq!(backend.len(), 0, "invisible before the commit");
    backend.commit().unwrap();
    assert_eq!(backend.len(), 4);
    let hits = backend.search(&unit(4, 0), 10, &all()).unwrap();
    let order: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(order, ["n:a", "n:b", "n:c", "n:d"], "{hits:?}");
    assert!((hits[0].score - 1.0).abs() < 1e-6 && hits[0].score == hits[1].score, "{hits:?}");
    assert!(hits[3].score.abs() < 1e-6, "orthogonal: {hits:?}");
    assert_eq!(backend.search(&unit(4, 0), 1, &all()).unwrap()[0].id, "n:a");
    let src = SearchFilter { paths_prefix: vec!["lib/".into()], ..all() };
    assert_eq!(
        backend.search(&unit(4, 0), 10, &src).unwrap().iter().map(|h| h.id.as_str()).collect::<Vec<_>>(),
        ["n:d"]
    );
    backend.delete_paths(&["src/a.rs".into()]).unwrap();
    backend.upsert(&[vdoc("n:b", "src/b.rs", unit(4, 3))]).unwrap();
    backend.commit().unwrap();
    assert_eq!(backend.len(), 3);
    assert_eq!(backend.search(&unit(4, 3), 1, &all()).unwrap()[0].id, "n:b", "replaced by id");
    let error = backend.upsert(&[vdoc("n:x", "src/x.rs", vec![1.0; 3])]).unwrap_err();
    assert!(error.to_string().contains("3 dimensions"), "{error}");
    // Another machine opening the same key sees the committed vectors.
    let reopened = PgVectorBackend::open(store, backend.key(), 4).unwrap();
    assert_eq!(reopened.len(), 3);
}

#[test]
fn the_hnsw_index_answers_as_the_exact_scan_does() {
    let Some(url) = common::test_url() else { return };
    let store = Arc::new(common::fresh_store(&url));
    let key = common::fresh_schema();
    let mut exact = PgVectorBackend::open(store.clone(), &key, 8).unwrap();
    let docs: Vec<VectorDoc> = (0..40)
        .map(|i| {
            let mut v: Vec<f32> = (0..8).map(|d| ((i * 7 + d * 3) % 11) as f32 - 5.0).collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            v.iter_mut().for_each(|x| *x /= norm);
            vdoc(&format!("n:{i:02}"), &format!("src/f{}.rs", i % 4), v)
        })
        .collect();
    exact.upsert(&docs).unwrap();
    exact.commit().unwrap();
    assert!(!exact.has_hnsw(), "40 rows are scanned exactly: no HNSW graph to maintain");
    let mut ann = PgVectorBackend::open(store, &key, 8).unwrap().with_ann_threshold(10);
    ann.commit().unwrap();
    assert!(ann.has_hnsw(), "a commit at the threshold builds the key's HNSW index");
    // Equal distances may come back in either order from the graph: compare
    // the distances found (the vectors repeat every 11 rows).
    let scores = |hits: &[agents_search::vector::VectorHit]| -> Vec<i64> {
        hits.iter().map(|h| (h.score * 1e4).round() as i64).collect()
    };
    for probe in [0, 13, 27] {
        let query = &docs[probe].vector;
        let (a, b) = (exact.search(query, 5, &all()).unwrap(), ann.search(query, 5, &all()).unwrap());
        assert_eq!(scores(&a), scores(&b), "{a:?}\n{b:?}");
        assert!((b[0].score - 1.0).abs() < 1e-5, "a stored vector is found at distance 0: {b:?}");
        let filtered = SearchFilter { paths_prefix: vec!["src/f1.rs".into()], ..all() };
        let (a, b) = (exact.search(query, 5, &filtered).unwrap(), ann.search(query, 5, &filtered).unwrap());
        assert_eq!(scores(&a), scores(&b), "filtered: {a:?}\n{b:?}");
        assert!(b.iter().all(|h| h.path == "src/f1.rs"), "{b:?}");
    }
}

#[test]
fn a_database_without_pgvector_is_a_clear_error() {
    let Some(url) = common::test_url() else { return };
    // scripts/pg-test-server.sh makes `agents_plain` beside `agents`, without the extension.
    let Some((server, _)) = url.rsplit_once('/') else { panic!("the test URL names a database") };
    let store = Arc::new(PostgresStore::open(&format!("{server}/agents_plain")).unwrap());
    let error = PgVectorBackend::open(store, "k", 4).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("pgvector extension is not installed") && text.contains("CREATE EXTENSION vector"), "{text}");
    assert!(text.contains("/agents_plain"), "names the database: {text}");
}
