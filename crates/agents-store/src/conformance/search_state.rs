//! Conformance cases of [`SearchStateStore`].

use super::indexed;
use crate::{FileIndexStore, ProjectStore, SearchStateStore};

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

/// A state reads back sorted by path with its digest; a later call upserts
/// `indexed`, then deletes `removed`, and replaces the digest.
pub fn search_state_round_trips_sorted_with_its_digest<S: SearchStateStore + ProjectStore + FileIndexStore>(
    make: &dyn Fn() -> S,
) {
    let store = make();
    let (_, meta) = indexed(&store, "/src/demo");
    let index = meta.index_id.as_str();
    assert!(store.search_state(index, "tantivy").unwrap().is_empty());
    assert_eq!(store.search_digest(index, "tantivy").unwrap(), None);

    store.set_search_state(index, "tantivy", &pairs(&[("b.py", "h1"), ("a.py", "h2")]), &[], "d1").unwrap();
    assert_eq!(store.search_state(index, "tantivy").unwrap(), pairs(&[("a.py", "h2"), ("b.py", "h1")]));
    assert_eq!(store.search_digest(index, "tantivy").unwrap().as_deref(), Some("d1"));

    let indexed = pairs(&[("a.py", "h3"), ("c.py", "h4")]);
    store.set_search_state(index, "tantivy", &indexed, &["b.py".to_owned(), "c.py".to_owned()], "d2").unwrap();
    assert_eq!(store.search_state(index, "tantivy").unwrap(), pairs(&[("a.py", "h3")]), "removed after indexed");
    assert_eq!(store.search_digest(index, "tantivy").unwrap().as_deref(), Some("d2"));
    store.set_search_state(index, "tantivy", &[], &[], "d3").unwrap();
    assert_eq!(store.search_state(index, "tantivy").unwrap(), pairs(&[("a.py", "h3")]), "nothing changed");
    assert_eq!(store.search_digest(index, "tantivy").unwrap().as_deref(), Some("d3"));
}

/// Each (index, backend) pair has a state and digest of its own.
pub fn backends_and_indexes_are_independent<S: SearchStateStore + ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (_, one) = indexed(&store, "/src/one");
    let (_, two) = indexed(&store, "/src/two");
    store.set_search_state(&one.index_id, "tantivy", &pairs(&[("a.py", "h")]), &[], "d").unwrap();
    assert!(store.search_state(&one.index_id, "vectors").unwrap().is_empty());
    assert_eq!(store.search_digest(&one.index_id, "vectors").unwrap(), None);
    assert!(store.search_state(&two.index_id, "tantivy").unwrap().is_empty());
    assert_eq!(store.search_digest(&two.index_id, "tantivy").unwrap(), None);
    store.set_search_state(&one.index_id, "vectors", &pairs(&[("z.py", "v")]), &["a.py".to_owned()], "v1").unwrap();
    assert_eq!(store.search_state(&one.index_id, "tantivy").unwrap(), pairs(&[("a.py", "h")]));
    assert_eq!(store.search_state(&one.index_id, "vectors").unwrap(), pairs(&[("z.py", "v")]));
}

/// Removing an index removes its search state and digests.
pub fn state_goes_with_its_index<S: SearchStateStore + ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let (r, meta) = indexed(&store, "/src/demo");
    store.set_search_state(&meta.index_id, "tantivy", &pairs(&[("a.py", "h")]), &[], "d").unwrap();
    assert!(store.remove_index(&r.resource_id).unwrap());
    assert!(store.search_state(&meta.index_id, "tantivy").unwrap().is_empty());
    assert_eq!(store.search_digest(&meta.index_id, "tantivy").unwrap(), None);
}
