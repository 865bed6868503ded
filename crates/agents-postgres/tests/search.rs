//! The text backends' conformance suite (`agents_search::conformance`, the
//! cases Tantivy and FTS5 pass) run against [`PgTextBackend`] on the test
//! server, and the vector backend's behaviour on pgvector. Skipped (saying
//! why) without `AGENTS_TEST_POSTGRES_URL`, unless `AGENTS_REQUIRE_POSTGRES=1`.

mod common;

use std::path::Path;
use std::sync::Arc;

use agents_postgres::PostgresStore;
use agents_postgres::text::PgTextBackend;
use agents_postgres::vector::PgVectorBackend;
use agents_search::vector::{VectorBackend, VectorDoc};
use agents_search::{SearchFilter, TextBackend, TextDoc};

/// Opens the text index keyed by a directory's name (the suite makes a fresh
/// temporary directory per index) in a store on the test server.
struct Pg {
    store: Arc<PostgresStore>,
}

impl agents_search::conformance::Opener for Pg {
    fn open(&self, dir: &Path) -> Box<dyn TextBackend> {
        Box::new(PgTextBackend::open(self.store.clone(), &dir.display().to_string()))
    }
}

mod postgres {
    agents_search::text_backend_conformance!({
        let Some(url) = crate::common::test_url() else { return };
        crate::Pg { store: std::sync::Arc::new(crate::common::fresh_store(&url)) }
    });
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

/// Documents with bodies of several lengths sharing some words.
fn bodies(round: usize) -> Vec<TextDoc> {
    (0..40)
        .map(|i| TextDoc {
            id: format!("n:{i}"),
            path: format!("src/f{}.rs", i % 7),
            name: format!("parse_item_{i}"),
            kind: if i % 3 == 0 { "class" } else { "function" }.into(),
            signature: format!("fn parse_item_{i}(token: Token) -> Item"),
            doc: "Parses one item of the input.".repeat(1 + i % 4),
            body: format!("let token = next_token(); {} round {round}", "item value ".repeat(1 + (i * round) % 9)),
        })
        .collect()
}

#[test]
fn loads_in_parts_and_compactions_change_no_score() {
    let Some(url) = common::test_url() else { return };
    let store = Arc::new(common::fresh_store(&url));
    // Loaded a few documents at a time, replaced and deleted over several commits.
    let mut parts = PgTextBackend::open(store.clone(), "parts").with_load_postings(25);
    for round in 0..4 {
        for chunk in bodies(round).chunks(7) {
            parts.upsert(chunk).unwrap();
        }
        parts.delete_paths(&["src/f3.rs".to_owned()]).unwrap();
        parts.commit().unwrap();
    }
    let mut wanted = bodies(3);
    wanted.retain(|d| d.path != "src/f3.rs");
    // Replaced and deleted while still in the write buffer.
    let mut buffered = PgTextBackend::open(store.clone(), "buffered");
    for round in 0..4 {
        buffered.upsert(&bodies(round)).unwrap();
        buffered.delete_paths(&["src/f3.rs".to_owned()]).unwrap();
    }
    buffered.commit().unwrap();
    let mut whole = PgTextBackend::open(store.clone(), "whole");
    whole.insert(&wanted).unwrap();
    whole.commit().unwrap();
    assert_eq!(parts.doc_count().unwrap(), whole.doc_count().unwrap());
    assert_eq!(buffered.doc_count().unwrap(), whole.doc_count().unwrap());
    let everything = SearchFilter::default();
    for query in ["parse item", "token value", "round 3", "parse_item_12 input", "Item"] {
        let b = whole.search(query, 50, &everything).unwrap();
        assert!(!b.is_empty(), "{query}");
        assert_eq!(parts.search(query, 50, &everything).unwrap(), b, "{query}");
        assert_eq!(buffered.search(query, 50, &everything).unwrap(), b, "{query}");
    }
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
