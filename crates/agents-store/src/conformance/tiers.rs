//! Conformance cases of [`WarmTierStore`].

use agents_core::fragment::{ContextFragment, ContextTier, FragmentProvenance};
use agents_core::tier::TieredFragment;
use chrono::{DateTime, TimeZone, Utc};

use crate::{TierEntry, WarmTierStore};

const UNKNOWN: &str = "01HZY3N6A8Q4W0R2T5V7X9B1CD";

fn fragment(id: &str, project: &str, tokens: u64) -> TieredFragment {
    let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CE", "src/lib.rs").unwrap();
    let f = ContextFragment::builder("uko://a", "body", tokens, provenance)
        .fragment_id(id)
        .tier(ContextTier::Warm)
        .build()
        .unwrap();
    TieredFragment::new(f, project).unwrap()
}

fn at(second: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, second).unwrap()
}

fn ids(entries: Vec<TierEntry>) -> Vec<String> {
    entries.into_iter().map(|e| e.fragment_id).collect()
}

/// Fragments read back equal; `warm_get` records no access, `warm_touch`
/// records one; entries are least recently used first; removal returns
/// the fragment once.
pub fn warm_rows_round_trip_and_track_access<S: WarmTierStore>(make: &dyn Fn() -> S) {
    let store = make();
    let a = fragment("01HZY3N6A8Q4W0R2T5V7X9B1C1", "web", 10).with_access(0, at(5));
    let b = fragment("01HZY3N6A8Q4W0R2T5V7X9B1C2", "api", 20).with_access(0, at(1));
    store.warm_put(&a).unwrap();
    store.warm_put(&b).unwrap();
    assert_eq!(store.warm_get(a.fragment_id()).unwrap().as_ref(), Some(&a));
    assert_eq!(store.warm_get(a.fragment_id()).unwrap().map(|f| f.access_count()), Some(0), "a get is no access");

    assert_eq!(ids(store.warm_entries().unwrap()), [b.fragment_id(), a.fragment_id()], "least recent first");
    let entry = store.warm_entries().unwrap().remove(1);
    assert_eq!(
        (entry.project_name.as_str(), entry.token_count, entry.access_count, entry.last_accessed),
        ("web", 10, 0, at(5))
    );
    let touched = store.warm_touch(b.fragment_id(), at(9)).unwrap().unwrap();
    assert_eq!((touched.access_count(), touched.last_accessed()), (1, at(9)));
    assert_eq!(store.warm_get(b.fragment_id()).unwrap(), Some(touched));
    assert_eq!(ids(store.warm_entries().unwrap()), [a.fragment_id(), b.fragment_id()]);

    assert_eq!(store.warm_fragments(Some(&["web".to_owned()])).unwrap(), std::slice::from_ref(&a));
    assert_eq!(store.warm_fragments(None).unwrap().len(), 2);
    assert_eq!(store.warm_remove(a.fragment_id()).unwrap(), Some(a.clone()));
    assert_eq!(store.warm_remove(a.fragment_id()).unwrap(), None);
    assert_eq!(store.warm_entries().unwrap().len(), 1);
}

/// A put with an existing id replaces the fragment and its access counts.
pub fn a_put_replaces_the_fragment<S: WarmTierStore>(make: &dyn Fn() -> S) {
    let store = make();
    let id = "01HZY3N6A8Q4W0R2T5V7X9B1C1";
    store.warm_put(&fragment(id, "web", 10).with_access(3, at(2))).unwrap();
    let replacement = fragment(id, "api", 30).with_access(7, at(4));
    store.warm_put(&replacement).unwrap();
    assert_eq!(store.warm_get(id).unwrap(), Some(replacement));
    let entries = store.warm_entries().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].project_name.as_str(), entries[0].token_count, entries[0].access_count), ("api", 30, 7));
}

/// Entries last used at the same moment are ordered by id; fragments are
/// sorted by id and filtered by project name.
pub fn entries_tie_by_id_and_fragments_filter_by_project<S: WarmTierStore>(make: &dyn Fn() -> S) {
    let store = make();
    let c = fragment("01HZY3N6A8Q4W0R2T5V7X9B1C3", "web", 1).with_access(0, at(1));
    let a = fragment("01HZY3N6A8Q4W0R2T5V7X9B1C1", "api", 1).with_access(0, at(1));
    let b = fragment("01HZY3N6A8Q4W0R2T5V7X9B1C2", "web", 1).with_access(0, at(1));
    for f in [&c, &a, &b] {
        store.warm_put(f).unwrap();
    }
    assert_eq!(ids(store.warm_entries().unwrap()), [a.fragment_id(), b.fragment_id(), c.fragment_id()]);
    assert_eq!(store.warm_fragments(None).unwrap(), [a.clone(), b.clone(), c.clone()]);
    assert_eq!(store.warm_fragments(Some(&["web".to_owned()])).unwrap(), [b, c]);
    assert_eq!(store.warm_fragments(Some(&["web".to_owned(), "api".to_owned()])).unwrap().len(), 3);
    assert!(store.warm_fragments(Some(&[])).unwrap().is_empty());
    assert!(store.warm_fragments(Some(&["nope".to_owned()])).unwrap().is_empty());
}

/// An unknown id reads, touches and removes as `None`.
pub fn unknown_ids_read_as_nothing<S: WarmTierStore>(make: &dyn Fn() -> S) {
    let store = make();
    assert_eq!(store.warm_get(UNKNOWN).unwrap(), None);
    assert_eq!(store.warm_touch(UNKNOWN, at(1)).unwrap(), None);
    assert_eq!(store.warm_remove(UNKNOWN).unwrap(), None);
    assert!(store.warm_entries().unwrap().is_empty());
    assert!(store.warm_fragments(None).unwrap().is_empty());
}
