//! The spec's tier acceptance criteria, one test each, over the real backends
//! (hot snapshot and cold archive in a temporary directory, warm in an
//! in-memory SQLite store), with an injected clock.

use std::sync::atomic::{AtomicI64, Ordering};

use agents_core::fragment::{ContextFragment, FragmentProvenance};
use agents_store::SqliteStore;
use chrono::TimeZone;
use proptest::prelude::*;

use super::*;

/// Counts one token per whitespace-separated word.
struct Words;
impl TokenCounter for Words {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

/// A clock the test moves by hand, in seconds from 2030-01-01.
#[derive(Clone, Default)]
struct TestClock(Arc<AtomicI64>);

impl TestClock {
    fn clock(&self) -> Clock {
        let seconds = self.0.clone();
        Arc::new(move || base() + Duration::seconds(seconds.load(Ordering::SeqCst)))
    }
    fn advance(&self, by: Duration) {
        self.0.fetch_add(by.num_seconds(), Ordering::SeqCst);
    }
}

fn base() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2030, 1, 1, 0, 0, 0).unwrap()
}

struct Fixture {
    dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    clock: TestClock,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
            store: Arc::new(SqliteStore::open_in_memory().unwrap()),
            clock: TestClock::default(),
        }
    }

    fn service(&self, settings: TierSettings) -> ContextTierService {
        ContextTierService::open(self.dir.path(), self.store.clone(), settings, Arc::new(Words))
            .unwrap()
            .with_clock(self.clock.clock())
    }
}

fn settings(hot: u64, warm: u64, cold: u64) -> TierSettings {
    TierSettings {
        hot_max_tokens: hot,
        warm_max_entries: warm,
        warm_retention_hours: 24,
        cold_max_entries: cold,
        cold_retention_days: 90,
    }
}

/// A fragment of `tokens` words for `project` in `tier`, created (and so last
/// accessed) `at` seconds after the base time; ids sort in creation order.
fn fragment(project: &str, tier: ContextTier, tokens: usize, at: i64) -> TieredFragment {
    let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CD", "notes.md").unwrap();
    let content = vec!["word"; tokens].join(" ");
    let f = ContextFragment::builder("context://x", content, tokens as u64, provenance)
        .tier(tier)
        .created_at(base() + Duration::seconds(at))
        .fragment_id(ulid::Ulid::from_parts(1_900_000_000_000 + at as u64, 7).to_string())
        .build()
        .unwrap();
    TieredFragment::new(f, project).unwrap()
}

fn ids(fragments: &[TieredFragment]) -> Vec<String> {
    fragments.iter().map(|f| f.fragment_id().to_owned()).collect()
}

fn tier_ids(service: &ContextTierService, tier: ContextTier) -> Vec<String> {
    let mut ids: Vec<String> =
        service.manager().backend(tier).entries().unwrap().into_iter().map(|e| e.fragment_id).collect();
    ids.sort();
    ids
}

#[test]
fn store_places_fragments_in_their_tier() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    for (i, tier) in ContextTier::ALL.into_iter().enumerate() {
        let f = fragment("web", tier, 5, i as i64);
        service.store(f.clone()).unwrap();
        assert_eq!(service.manager().locate(f.fragment_id()).unwrap(), Some(tier));
        let read = service.get(f.fragment_id()).unwrap().unwrap();
        assert_eq!((read.tier(), read.fragment().content()), (tier, f.fragment().content()));
    }
    let metrics = service.get_metrics().unwrap();
    for tier in ContextTier::ALL {
        assert_eq!(metrics.population_in(tier), 1, "{tier}");
    }
    // Looked up hot, warm, cold in turn: the cold read missed hot and warm first.
    assert_eq!(
        (metrics.hits_in(ContextTier::Hot), metrics.misses_in(ContextTier::Hot), metrics.misses_in(ContextTier::Warm)),
        (1, 2, 1)
    );
    assert!(service.get("01HZY3N6A8Q4W0R2T5V7X9B1CD").unwrap().is_none());
    assert_eq!(service.get_metrics().unwrap().misses_in(ContextTier::Cold), 1);
}

#[test]
fn promote_and_demote_move_one_tier_at_a_time() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    let f = fragment("web", ContextTier::Cold, 5, 0);
    let id = f.fragment_id().to_owned();
    service.store(f).unwrap();
    assert_eq!(service.promote(&id).unwrap().0, ContextTier::Warm);
    assert_eq!(service.manager().locate(&id).unwrap(), Some(ContextTier::Warm));
    assert_eq!(service.promote(&id).unwrap().0, ContextTier::Hot);
    assert!(matches!(service.promote(&id), Err(TierError::AlreadyHottest(_))));
    assert_eq!(service.demote(&id, false).unwrap().0, ContextTier::Warm);
    assert_eq!(service.demote(&id, false).unwrap().0, ContextTier::Cold);
    assert!(matches!(service.demote(&id, false), Err(TierError::AlreadyColdest(_))));
    assert_eq!(tier_ids(&service, ContextTier::Cold), std::slice::from_ref(&id));
    assert!(tier_ids(&service, ContextTier::Hot).is_empty() && tier_ids(&service, ContextTier::Warm).is_empty());
    assert!(matches!(service.promote("01HZY3N6A8Q4W0R2T5V7X9B1CD"), Err(TierError::NotFound(_))));
}

#[test]
fn demote_can_summarise_deterministically() {
    let fx = Fixture::new();
    let service = fx.service(settings(1000, 10, 10));
    let body: String = (0..40).map(|i| format!("def step_{i}(x):\n    return x + {i} plus more words\n\n")).collect();
    let tokens = Words.count(&body) as u64;
    let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CD", "steps.py").unwrap();
    let f = ContextFragment::builder("context://steps", body, tokens, provenance)
        .tier(ContextTier::Hot)
        .detail_depth(9)
        .build()
        .unwrap();
    let id = f.fragment_id().to_owned();
    service.store(TieredFragment::new(f, "web").unwrap()).unwrap();
    service.demote(&id, true).unwrap();
    let summarized = service.peek(&id).unwrap().unwrap();
    let content = summarized.fragment().content();
    assert!(summarized.fragment().token_count() <= (tokens / 4).max(32), "{content}");
    assert_eq!(summarized.fragment().token_count(), Words.count(content) as u64);
    assert!(content.starts_with("def step_0(x):\n") && content.contains("[summary: "), "{content}");
    assert_eq!(summarized.fragment().detail_depth(), 3);
    assert_eq!(summarized.fragment().metadata()["summarized_from_tokens"], tokens.to_string());
}

#[test]
fn evict_lru_removes_exactly_count_least_recently_used() {
    let fx = Fixture::new();
    let service = fx.service(settings(1000, 10, 10));
    let fragments: Vec<TieredFragment> = (0..5).map(|i| fragment("web", ContextTier::Hot, 3, i)).collect();
    for f in &fragments {
        service.store(f.clone()).unwrap();
    }
    // Reading the oldest two makes them the most recently used.
    fx.clock.advance(Duration::seconds(100));
    service.get(fragments[0].fragment_id()).unwrap();
    fx.clock.advance(Duration::seconds(1));
    service.get(fragments[1].fragment_id()).unwrap();

    assert_eq!(service.evict_lru(ContextTier::Hot, 2).unwrap(), 2);
    assert_eq!(tier_ids(&service, ContextTier::Warm), ids(&fragments[2..4]), "2 and 3 were least recently used");
    assert_eq!(
        tier_ids(&service, ContextTier::Hot),
        [fragments[0].fragment_id(), fragments[1].fragment_id(), fragments[4].fragment_id()]
    );
    assert_eq!(service.evict_lru(ContextTier::Hot, 10).unwrap(), 3, "only what is there");
    assert_eq!(service.evict_lru(ContextTier::Hot, 1).unwrap(), 0);
    assert_eq!(service.evict_lru(ContextTier::Cold, 1).unwrap(), 0);
    assert_eq!(service.evict_lru(ContextTier::Warm, 5).unwrap(), 5);
    assert_eq!(service.evict_lru(ContextTier::Cold, 2).unwrap(), 2, "cold evicts out");
    assert_eq!(service.get_metrics().unwrap().total_population(), 3);
}

#[test]
fn ties_in_last_access_are_broken_by_id() {
    let fx = Fixture::new();
    let service = fx.service(settings(1000, 10, 10));
    let same_time: Vec<TieredFragment> = (0..3)
        .map(|i| {
            let f = fragment("web", ContextTier::Warm, 1, i);
            f.clone().with_access(0, base())
        })
        .collect();
    for f in same_time.iter().rev() {
        service.store(f.clone()).unwrap();
    }
    service.evict_lru(ContextTier::Warm, 1).unwrap();
    assert_eq!(tier_ids(&service, ContextTier::Cold), [same_time[0].fragment_id()]);
}

#[test]
fn role_visibility_follows_the_spec_table() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    let hot = fragment("web", ContextTier::Hot, 1, 0);
    let warm = fragment("web", ContextTier::Warm, 1, 1);
    let cold = fragment("web", ContextTier::Cold, 1, 2);
    let strategist_only = fragment("web", ContextTier::Hot, 1, 3).with_role_visibility([ActorRole::Strategist]);
    for f in [&hot, &warm, &cold, &strategist_only] {
        service.store(f.clone()).unwrap();
    }
    let projects = ["web".to_owned()];
    let seen = |role| ids(&service.get_for_actor(role, &projects).unwrap());
    assert_eq!(seen(ActorRole::Reviewer), ids(std::slice::from_ref(&hot)));
    assert_eq!(seen(ActorRole::Executor), ids(&[hot.clone(), warm.clone()]));
    assert_eq!(seen(ActorRole::Strategist), ids(&[hot.clone(), strategist_only.clone(), warm, cold]));
    let read = service.peek(hot.fragment_id()).unwrap().unwrap();
    assert_eq!(read.access_count(), 3, "every actor read counts");
}

#[test]
fn projects_are_isolated() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    let web: Vec<TieredFragment> =
        ContextTier::ALL.iter().enumerate().map(|(i, t)| fragment("web", *t, 1, i as i64)).collect();
    let api: Vec<TieredFragment> =
        ContextTier::ALL.iter().enumerate().map(|(i, t)| fragment("api", *t, 1, 10 + i as i64)).collect();
    for f in web.iter().chain(&api) {
        service.store(f.clone()).unwrap();
    }
    let view = service.get_scoped_view(&["web".to_owned()]).unwrap();
    assert_eq!(view.all().map(|f| f.project_name()).collect::<Vec<_>>(), ["web"; 3]);
    assert_eq!(view.all().count(), 3);
    let both = service.get_scoped_view(&["web".to_owned(), "api".to_owned()]).unwrap();
    assert_eq!(both.tier(ContextTier::Warm).len(), 2);
    assert!(service.get_scoped_view(&[]).unwrap().all().next().is_none(), "no project, nothing");
    let strategist = service.get_for_actor(ActorRole::Strategist, &["api".to_owned()]).unwrap();
    assert!(strategist.iter().all(|f| f.project_name() == "api") && strategist.len() == 3);
    assert_eq!(service.clear(&["api".to_owned()]).unwrap(), 3);
    assert_eq!(service.get_metrics().unwrap().total_population(), 3, "web untouched");
}

#[test]
fn capacity_eviction_cascades_down_and_out() {
    let fx = Fixture::new();
    // Hot holds 10 tokens, warm 2 entries, cold 1.
    let service = fx.service(settings(10, 2, 1));
    let f: Vec<TieredFragment> = (0..6).map(|i| fragment("web", ContextTier::Hot, 4, i)).collect();
    service.store(f[0].clone()).unwrap();
    service.store(f[1].clone()).unwrap();
    let evicted = service.store(f[2].clone()).unwrap();
    assert_eq!(
        evicted,
        [Eviction { fragment_id: f[0].fragment_id().into(), from: ContextTier::Hot, to: Some(ContextTier::Warm) }]
    );
    service.store(f[3].clone()).unwrap();
    service.store(f[4].clone()).unwrap();
    // f0, f1, f2 left hot in turn; warm keeps 2, so f0 went on to cold.
    assert_eq!(tier_ids(&service, ContextTier::Hot), ids(&f[3..5]));
    assert_eq!(tier_ids(&service, ContextTier::Warm), ids(&f[1..3]));
    assert_eq!(tier_ids(&service, ContextTier::Cold), ids(&f[0..1]));
    let evicted = service.store(f[5].clone()).unwrap();
    let moves: Vec<(ContextTier, Option<ContextTier>)> = evicted.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(
        moves,
        [
            (ContextTier::Hot, Some(ContextTier::Warm)),
            (ContextTier::Warm, Some(ContextTier::Cold)),
            (ContextTier::Cold, None)
        ],
        "one store, three moves"
    );
    assert!(service.peek(f[0].fragment_id()).unwrap().is_none(), "evicted out of cold");
    let too_big = fragment("web", ContextTier::Hot, 11, 50);
    assert!(matches!(service.store(too_big), Err(TierError::TooLargeForHot { capacity: 10, .. })));
}

#[test]
fn project_budgets_evict_within_the_project() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    service.set_project_budget("web", TierBudget::new(5, 10, 10).unwrap());
    let api = fragment("api", ContextTier::Hot, 4, 0);
    let web0 = fragment("web", ContextTier::Hot, 3, 1);
    let web1 = fragment("web", ContextTier::Hot, 3, 2);
    for f in [&api, &web0, &web1] {
        service.store(f.clone()).unwrap();
    }
    assert_eq!(tier_ids(&service, ContextTier::Hot), ids(&[api, web1]), "web's own oldest made room");
    assert_eq!(tier_ids(&service, ContextTier::Warm), ids(&[web0]));
}

#[test]
fn retention_sweep_demotes_stale_warm_and_drops_stale_cold() {
    let fx = Fixture::new();
    let service = fx.service(settings(100, 10, 10));
    let warm_old = fragment("web", ContextTier::Warm, 1, 0);
    let warm_read = fragment("web", ContextTier::Warm, 1, 1);
    let cold_old = fragment("web", ContextTier::Cold, 1, 2);
    for f in [&warm_old, &warm_read, &cold_old] {
        service.store(f.clone()).unwrap();
    }
    fx.clock.advance(Duration::hours(23));
    service.get(warm_read.fragment_id()).unwrap();
    fx.clock.advance(Duration::hours(2));
    let report = service.sweep().unwrap();
    assert_eq!(report.demoted, ids(std::slice::from_ref(&warm_old)));
    assert!(report.expired.is_empty());
    assert_eq!(tier_ids(&service, ContextTier::Warm), ids(std::slice::from_ref(&warm_read)));

    fx.clock.advance(Duration::days(89));
    let report = service.sweep().unwrap();
    // 89 days and 25 hours after they were last read: cold_old and warm_old
    // (whose access time moved with it) have outlived the cold retention;
    // warm_read went cold in this sweep and is not yet expired.
    assert_eq!(report.demoted, ids(std::slice::from_ref(&warm_read)));
    assert_eq!(report.expired, ids(&[warm_old, cold_old]));
    assert_eq!(tier_ids(&service, ContextTier::Cold), ids(&[warm_read]));
}

#[test]
fn hot_snapshot_survives_reopening() {
    let fx = Fixture::new();
    let hot = fragment("web", ContextTier::Hot, 2, 0);
    let warm = fragment("web", ContextTier::Warm, 2, 1);
    {
        let service = fx.service(settings(100, 10, 10));
        service.store(hot.clone()).unwrap();
        service.store(warm.clone()).unwrap();
        fx.clock.advance(Duration::seconds(30));
        service.get(hot.fragment_id()).unwrap();
        // Dropping the service saves the access recorded since the last write.
    }
    let reopened = fx.service(settings(100, 10, 10));
    let read = reopened.peek(hot.fragment_id()).unwrap().unwrap();
    assert_eq!((read.tier(), read.access_count()), (ContextTier::Hot, 1));
    assert_eq!(read.last_accessed(), base() + Duration::seconds(30));
    assert_eq!(reopened.get_metrics().unwrap().hits_in(ContextTier::Hot), 1, "counters persist too");
    assert_eq!(reopened.manager().locate(warm.fragment_id()).unwrap(), Some(ContextTier::Warm));

    // A second process's change shows up in a long-lived one before its next write.
    let other = fx.service(settings(100, 10, 10));
    other.remove(hot.fragment_id()).unwrap();
    drop(other);
    let second = fragment("web", ContextTier::Hot, 2, 5);
    reopened.store(second.clone()).unwrap();
    assert_eq!(tier_ids(&reopened, ContextTier::Hot), ids(&[second]));

    // A snapshot of a build that writes another format is refused, not overwritten.
    std::fs::write(fx.dir.path().join("hot.json"), br#"{"version": 99, "fragments": []}"#).unwrap();
    let error = ContextTierService::open(fx.dir.path(), fx.store.clone(), settings(1, 1, 1), Arc::new(Words)).err();
    assert!(matches!(error, Some(TierError::Corrupt { .. })), "{error:?}");
}

#[test]
fn damaged_tier_files_are_set_aside_and_the_tiers_open() {
    let fx = Fixture::new();
    let (hot, cold) = (fragment("web", ContextTier::Hot, 2, 0), fragment("web", ContextTier::Cold, 2, 1));
    let warm = fragment("web", ContextTier::Warm, 2, 2);
    {
        let service = fx.service(settings(100, 10, 10));
        for f in [&hot, &warm, &cold] {
            service.store(f.clone()).unwrap();
        }
        service.get(hot.fragment_id()).unwrap();
    }
    let path = |name: &str| fx.dir.path().join(name);
    let cold_file = format!("cold/{}.zst", cold.fragment_id());
    for (name, bytes) in [("hot.json", &b"{"[..]), ("metrics.json", b"{\"hits\": "), (cold_file.as_str(), b"\x28\xb5")]
    {
        std::fs::write(path(name), bytes).unwrap();
    }
    let service = fx.service(settings(100, 10, 10));
    assert!(tier_ids(&service, ContextTier::Hot).is_empty(), "the hot tier starts empty");
    assert_eq!(tier_ids(&service, ContextTier::Warm), ids(std::slice::from_ref(&warm)), "the store's tier is whole");
    assert!(tier_ids(&service, ContextTier::Cold).is_empty(), "the damaged cold entry reads as absent");
    assert_eq!(service.get_metrics().unwrap().hits_in(ContextTier::Hot), 0, "counters start from zero");
    for name in ["hot.json", "metrics.json", cold_file.as_str()] {
        assert!(!std::fs::read(path(&format!("{name}.damaged"))).unwrap().is_empty(), "{name} kept aside");
        assert!(!path(name).exists(), "{name}");
    }
    // Writing works again, and a reopened service reads what was written.
    service.store(hot.clone()).unwrap();
    drop(service);
    let reopened = fx.service(settings(100, 10, 10));
    assert_eq!(tier_ids(&reopened, ContextTier::Hot), ids(&[hot]));
}

#[test]
fn backends_work_on_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let backends: Vec<Box<dyn TierBackend>> = vec![
        Box::new(HotTier::in_memory()),
        Box::new(WarmTier::new(Arc::new(SqliteStore::open_in_memory().unwrap()))),
        Box::new(ColdArchive::open(dir.path().join("cold")).unwrap()),
    ];
    for backend in &backends {
        let tier = backend.tier();
        let a = fragment("web", tier, 2, 0);
        let b = fragment("api", tier, 3, 1);
        backend.put(b.clone()).unwrap();
        backend.put(a.clone()).unwrap();
        assert_eq!(backend.get(a.fragment_id()).unwrap().as_ref(), Some(&a), "{tier}");
        assert_eq!(ids(&backend.fragments(None).unwrap()), ids(&[a.clone(), b.clone()]), "{tier}: by id");
        assert_eq!(ids(&backend.fragments(Some(&["api".to_owned()])).unwrap()), ids(std::slice::from_ref(&b)));
        let touched = backend.touch(a.fragment_id(), base() + Duration::days(1)).unwrap().unwrap();
        assert_eq!(touched.access_count(), 1);
        let lru: Vec<String> = backend.entries().unwrap().into_iter().map(|e| e.fragment_id).collect();
        assert_eq!(lru, ids(&[b.clone(), a.clone()]), "{tier}: least recently used first");
        assert_eq!(backend.remove(a.fragment_id()).unwrap().map(|f| f.access_count()), Some(1));
        assert_eq!(backend.get(a.fragment_id()).unwrap(), None);
        assert_eq!(backend.get("../../etc/passwd").unwrap(), None, "{tier}: not an id");
    }
    let archived: Vec<_> =
        std::fs::read_dir(dir.path().join("cold")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(archived.len(), 1, "one compressed file per fragment, no temp files: {archived:?}");
}

/// An operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    Store(ContextTier, usize),
    Get(usize),
    Promote(usize),
    Demote(usize, bool),
    Evict(ContextTier, usize),
    Sweep(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let tier = prop_oneof![Just(ContextTier::Hot), Just(ContextTier::Warm), Just(ContextTier::Cold)];
    prop_oneof![
        4 => (tier.clone(), 1usize..15).prop_map(|(t, n)| Op::Store(t, n)),
        2 => (0usize..40).prop_map(Op::Get),
        2 => (0usize..40).prop_map(Op::Promote),
        2 => (0usize..40, any::<bool>()).prop_map(|(i, s)| Op::Demote(i, s)),
        1 => (tier, 0usize..4).prop_map(|(t, n)| Op::Evict(t, n)),
        1 => (0i64..60).prop_map(Op::Sweep),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever happens, hot never holds more tokens than its capacity, warm and
    /// cold never more entries than theirs, and no fragment is in two tiers.
    #[test]
    fn capacities_hold_after_any_sequence(ops in prop::collection::vec(op(), 1..40)) {
        let fx = Fixture::new();
        let service = fx.service(settings(20, 4, 3));
        let mut stored: Vec<String> = Vec::new();
        for (step, op) in ops.into_iter().enumerate() {
            let pick = |i: usize| stored.get(i % stored.len().max(1)).cloned().unwrap_or_default();
            let result = match op {
                Op::Store(tier, tokens) => {
                    let f = fragment(if step % 3 == 0 { "api" } else { "web" }, tier, tokens, step as i64);
                    stored.push(f.fragment_id().to_owned());
                    service.store(f).map(drop)
                }
                Op::Get(i) => service.get(&pick(i)).map(drop),
                Op::Promote(i) => service.promote(&pick(i)).map(drop),
                Op::Demote(i, summarize) => service.demote(&pick(i), summarize).map(drop),
                Op::Evict(tier, n) => service.evict_lru(tier, n).map(drop),
                Op::Sweep(hours) => {
                    fx.clock.advance(Duration::hours(hours));
                    service.sweep().map(drop)
                }
            };
            // Refusals (too large for hot, already hottest, gone) are fine; IO is not.
            if let Err(error) = result {
                prop_assert!(
                    !matches!(error, TierError::Io { .. } | TierError::Store(_) | TierError::Corrupt { .. }),
                    "{error}"
                );
            }
            fx.clock.advance(Duration::seconds(1));
            let hot_tokens: u64 =
                service.manager().backend(ContextTier::Hot).entries().unwrap().iter().map(|e| e.token_count).sum();
            prop_assert!(hot_tokens <= 20, "hot holds {hot_tokens} tokens");
            prop_assert!(tier_ids(&service, ContextTier::Warm).len() <= 4);
            prop_assert!(tier_ids(&service, ContextTier::Cold).len() <= 3);
            let mut all: Vec<String> = ContextTier::ALL.iter().flat_map(|t| tier_ids(&service, *t)).collect();
            let count = all.len();
            all.sort();
            all.dedup();
            prop_assert_eq!(all.len(), count, "a fragment in two tiers");
        }
    }
}
