//! The strategy selector, the executor (time limit, circuit breaker,
//! fallback) and the enforcer's two size limits, driven with fake strategies
//! over an empty in-memory store.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agents_core::policy::ContextView;
use agents_core::request::ContextRequest;
use agents_core::tokens::{Encoding, Tokenizer};
use agents_store::SqliteStore;

use super::super::enforcer::{ContextBudgetEnforcer, FileFacts};
use super::super::{PipelineSettings, StageInput};
use super::*;
use crate::query::ContextSearch;
use crate::retrieval::registry::ContextStrategyRegistry;
use crate::retrieval::{
    BackendKind, Backends, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities, StrategyError,
};
use agents_pack::{DepthRenderer, Piece};

/// What a fake strategy does when asked to retrieve.
#[derive(Clone, Copy)]
enum Behaviour {
    /// One candidate, at once.
    Answer,
    /// An error.
    Fail,
    /// Works until the executor sets its cancel flag, then fails.
    UntilCancelled,
    /// Panics.
    Panic,
}

struct Fake {
    name: &'static str,
    caps: StrategyCapabilities,
    confidence: f64,
    behaviour: Behaviour,
    calls: AtomicUsize,
}

impl Fake {
    fn new(name: &'static str, behaviour: Behaviour) -> Fake {
        Fake { name, caps: StrategyCapabilities::default(), confidence: 0.5, behaviour, calls: AtomicUsize::new(0) }
    }

    fn graph(mut self, quality: f64, confidence: f64) -> Fake {
        self.caps =
            StrategyCapabilities { uses_graph: true, quality_score: quality, ..StrategyCapabilities::default() };
        self.confidence = confidence;
        self
    }

    fn text(mut self) -> Fake {
        self.caps = StrategyCapabilities { uses_text: true, ..StrategyCapabilities::default() };
        self
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl ContextStrategy for Fake {
    fn name(&self) -> &'static str {
        self.name
    }

    fn capabilities(&self) -> StrategyCapabilities {
        self.caps
    }

    fn can_handle(&self, _: &RetrievalQuery<'_>, _: &Backends<'_>) -> f64 {
        self.confidence
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        _: &Backends<'_>,
        _: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let fail = |reason: &str| StrategyError::NothingToDo { strategy: self.name.to_owned(), reason: reason.into() };
        match self.behaviour {
            Behaviour::Answer => Ok(vec![Candidate::new(
                format!("uko://r/{}.py", self.name),
                format!("{}.py", self.name),
                1.0,
                9,
                self.name,
            )]),
            Behaviour::Fail => Err(fail("broken on purpose")),
            Behaviour::UntilCancelled => {
                // A hang guard, not a timing: the executor stops it long before.
                let guard = Instant::now() + Duration::from_secs(20);
                let cancelled = || query.cancel.is_some_and(|c| c.load(Ordering::SeqCst));
                while !cancelled() && Instant::now() < guard {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(fail("stopped"))
            }
            Behaviour::Panic => panic!("a strategy bug"),
        }
    }
}

/// An empty store, and the backends over it: graph only (text, vector and
/// history missing).
struct Env {
    dir: tempfile::TempDir,
    store: Arc<SqliteStore>,
    search: ContextSearch,
    tokenizer: Tokenizer,
}

impl Env {
    fn new() -> Env {
        let store = Arc::new(SqliteStore::open_in_memory().unwrap());
        Env {
            dir: tempfile::tempdir().unwrap(),
            search: ContextSearch::new(store.clone()),
            store,
            tokenizer: Tokenizer::new(Encoding::O200kBase),
        }
    }

    fn backends(&self) -> Backends<'_> {
        let missing = [BackendKind::Text, BackendKind::Vector, BackendKind::Temporal]
            .into_iter()
            .map(|k| (k, format!("no {} backend in this test", k.as_str())))
            .collect::<BTreeMap<_, _>>();
        Backends {
            root: self.dir.path(),
            index_id: "index",
            store: self.store.as_ref(),
            search: &self.search,
            tokenizer: &self.tokenizer,
            text: None,
            vector: None,
            history: None,
            missing,
            owned: None,
        }
    }
}

fn registry(fakes: &[&Arc<Fake>], enabled: &[&str]) -> ContextStrategyRegistry {
    let custom: Vec<Arc<dyn ContextStrategy>> =
        fakes.iter().map(|f| (*f).clone() as Arc<dyn ContextStrategy>).collect();
    let enabled: Vec<String> = enabled.iter().map(|s| (*s).to_owned()).collect();
    ContextStrategyRegistry::with_custom(&custom, &enabled).unwrap()
}

fn query(request: &ContextRequest) -> RetrievalQuery<'_> {
    RetrievalQuery::for_tests(request)
}

fn stage<'a>(
    request: &'a ContextRequest,
    backends: &'a Backends<'a>,
    registry: &'a ContextStrategyRegistry,
    settings: &'a PipelineSettings,
) -> StageInput<'a> {
    StageInput {
        request,
        query: Some(query(request)),
        backends: Some(backends),
        registry: Some(registry),
        plan: None,
        settings,
    }
}

fn selection(name: &str) -> Selection {
    Selection { strategy: name.to_owned(), confidence: 1.0, quality: 0.5 }
}

/// Runs `f` on a thread and fails the test if it takes more than 20 s.
fn within_guard<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).expect("the executor returned")
}

#[test]
fn selector_takes_the_best_strategies_that_add_coverage_and_the_requested_ones() {
    let env = Env::new();
    let backends = env.backends();
    let best = Arc::new(Fake::new("best-graph", Behaviour::Answer).graph(0.9, 1.0));
    let same = Arc::new(Fake::new("second-graph", Behaviour::Answer).graph(0.8, 1.0));
    let own = Arc::new(Fake::new("own-content", Behaviour::Answer));
    let needs_text = Arc::new(Fake::new("needs-text", Behaviour::Answer).text());
    let declines = Arc::new(Fake::new("declines", Behaviour::Answer).graph(1.0, 0.0));
    let all = ["best-graph", "second-graph", "own-content", "needs-text", "declines", "simple-keyword"];
    let registry = registry(&[&best, &same, &own, &needs_text, &declines], &all);
    let settings = PipelineSettings::default();
    let request = ContextRequest::builder().query("ledger").build().unwrap();
    let chosen = DefaultSelector.select(&stage(&request, &backends, &registry, &settings)).unwrap();
    let names: Vec<&str> = chosen.iter().map(|s| s.strategy.as_str()).collect();
    // The second graph strategy adds no backend; the text one cannot run; the
    // one with confidence 0 declined; the one with content of its own always comes.
    assert_eq!(names, ["best-graph", "own-content"]);
    assert_eq!(chosen[0].confidence, 1.0);

    // At most max_workers run.
    let one = PipelineSettings { max_workers: 1, ..PipelineSettings::default() };
    let chosen = DefaultSelector.select(&stage(&request, &backends, &registry, &one)).unwrap();
    assert_eq!(chosen.iter().map(|s| s.strategy.as_str()).collect::<Vec<_>>(), ["best-graph"]);

    // Preferred strategies run as asked, even one the selector would pass over.
    let asked = ContextRequest::builder().query("ledger").preferred_strategies(["second-graph"]).build().unwrap();
    let chosen = DefaultSelector.select(&stage(&asked, &backends, &registry, &settings)).unwrap();
    assert_eq!(chosen, [Selection { strategy: "second-graph".into(), confidence: 1.0, quality: 0.8 }]);
    let unknown = ContextRequest::builder().query("ledger").preferred_strategies(["nope"]).build().unwrap();
    let error = DefaultSelector.select(&stage(&unknown, &backends, &registry, &settings)).unwrap_err();
    assert!(error.to_string().starts_with("unknown strategy \"nope\"; known: "), "{error}");
    let disabled = ContextRequest::builder().query("ledger").preferred_strategies(["arce"]).build().unwrap();
    let error = DefaultSelector.select(&stage(&disabled, &backends, &registry, &settings)).unwrap_err();
    assert!(matches!(error, PipelineError::DisabledStrategy(ref n) if n == "arce"), "{error}");

    // A required backend that is missing is an error naming it.
    let required = ContextRequest::builder().query("ledger").required_backends(["text"]).build().unwrap();
    let error = DefaultSelector.select(&stage(&required, &backends, &registry, &settings)).unwrap_err();
    assert!(error.to_string().contains("requires the text backend"), "{error}");

    // Nothing claims the request: the first enabled step of the fallback path.
    let registry = crate::retrieval::registry::ContextStrategyRegistry::with_custom(
        &[declines.clone() as Arc<dyn ContextStrategy>],
        &["declines".to_owned(), "simple-keyword".to_owned()],
    )
    .unwrap();
    let chosen = DefaultSelector.select(&stage(&request, &backends, &registry, &settings)).unwrap();
    assert_eq!(
        chosen.iter().map(|s| (s.strategy.as_str(), s.confidence)).collect::<Vec<_>>(),
        [("simple-keyword", 0.0)]
    );
}

#[test]
fn a_strategy_past_the_time_limit_is_reported_and_the_others_kept() {
    let env = Arc::new(Env::new());
    let slow = Arc::new(Fake::new("slow", Behaviour::UntilCancelled));
    let quick = Arc::new(Fake::new("quick", Behaviour::Answer));
    // The fallback path's last step, which must not start once the time is up.
    let keyword = Arc::new(Fake::new("simple-keyword", Behaviour::Answer));
    let (s, q, k) = (slow.clone(), quick.clone(), keyword.clone());
    let (runs, breaker) = within_guard(move || {
        let backends = env.backends();
        let registry = registry(&[&s, &q, &k], &["slow", "quick", "simple-keyword"]);
        let settings = PipelineSettings { timeout_secs: 1, max_workers: 1, ..PipelineSettings::default() };
        let request = ContextRequest::builder().query("ledger").build().unwrap();
        let breaker = Arc::new(CircuitBreaker::default());
        let executor = ParallelExecutor::with_breaker(breaker.clone());
        // One worker: `quick` waits behind `slow` and finds the time spent.
        let runs = executor
            .execute(&stage(&request, &backends, &registry, &settings), &[selection("slow"), selection("quick")]);
        (runs.into_iter().map(|r| (r.selected, r.strategy, r.error, r.candidates.len())).collect::<Vec<_>>(), breaker)
    });
    let timed_out = Some("timed out after 1 s (context.executor.timeout-secs)".to_owned());
    assert_eq!(runs, [("slow".to_owned(), None, timed_out.clone(), 0), ("quick".to_owned(), None, timed_out, 0)]);
    assert_eq!((slow.calls(), quick.calls()), (1, 0), "nothing starts after the limit");
    assert_eq!(keyword.calls(), 0, "no fallback starts after the limit");
    assert_eq!((breaker.failures("slow"), breaker.failures("quick")), (1, 1));
}

#[test]
fn parallel_strategies_share_one_time_limit_and_a_quick_one_is_kept() {
    let env = Arc::new(Env::new());
    let slow = Arc::new(Fake::new("slow", Behaviour::UntilCancelled));
    let quick = Arc::new(Fake::new("quick", Behaviour::Answer));
    let (s, q) = (slow.clone(), quick.clone());
    let runs = within_guard(move || {
        let backends = env.backends();
        let registry = registry(&[&s, &q], &["slow", "quick"]);
        let settings = PipelineSettings { timeout_secs: 1, max_workers: 4, ..PipelineSettings::default() };
        let request = ContextRequest::builder().query("ledger").build().unwrap();
        let runs = ParallelExecutor::default()
            .execute(&stage(&request, &backends, &registry, &settings), &[selection("slow"), selection("quick")]);
        runs.into_iter().map(|r| (r.selected, r.strategy, r.error.is_some(), r.candidates.len())).collect::<Vec<_>>()
    });
    assert_eq!(runs, [("slow".to_owned(), None, true, 0), ("quick".to_owned(), Some("quick".to_owned()), false, 1)]);
}

/// Ignores its cancel flag: blocks until the test releases it.
struct Stuck {
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    finished: std::sync::atomic::AtomicBool,
}

impl ContextStrategy for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities::default()
    }

    fn can_handle(&self, _: &RetrievalQuery<'_>, _: &Backends<'_>) -> f64 {
        1.0
    }

    fn retrieve(
        &self,
        _: &RetrievalQuery<'_>,
        _: &Backends<'_>,
        _: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        // A hang guard: the test releases it long before.
        let _ = self.release.lock().unwrap().recv_timeout(Duration::from_secs(20));
        self.finished.store(true, Ordering::SeqCst);
        Ok(Vec::new())
    }
}

#[test]
fn a_strategy_that_ignores_its_cancel_flag_does_not_hold_the_executor() {
    let (release, rx) = std::sync::mpsc::channel();
    let stuck = Arc::new(Stuck { release: std::sync::Mutex::new(rx), finished: Default::default() });
    let quick = Arc::new(Fake::new("quick", Behaviour::Answer));
    let (s, q) = (stuck.clone(), quick.clone());
    let runs = within_guard(move || {
        let env = Env::new();
        // Owned backends, as the engine gives them: the strategies' threads keep them.
        let owned = Arc::new(crate::retrieval::OwnedBackends {
            root: env.dir.path().to_path_buf(),
            index_id: "index".to_owned(),
            store: env.store.clone(),
            search: ContextSearch::new(env.store.clone()),
            tokenizer: Arc::new(env.tokenizer),
            text: None,
            vector: None,
            history: None,
            missing: env.backends().missing,
        });
        let backends = owned.view();
        let custom: Vec<Arc<dyn ContextStrategy>> = vec![s, q];
        let registry =
            ContextStrategyRegistry::with_custom(&custom, &["stuck".to_owned(), "quick".to_owned()]).unwrap();
        let settings = PipelineSettings { timeout_secs: 1, ..PipelineSettings::default() };
        let request = ContextRequest::builder().query("ledger").build().unwrap();
        let runs = ParallelExecutor::default()
            .execute(&stage(&request, &backends, &registry, &settings), &[selection("stuck"), selection("quick")]);
        runs.into_iter().map(|r| (r.selected, r.error, r.candidates.len())).collect::<Vec<_>>()
    });
    // The executor returned while the strategy is still blocked.
    assert!(!stuck.finished.load(Ordering::SeqCst));
    let timed_out = Some("timed out after 1 s (context.executor.timeout-secs)".to_owned());
    assert_eq!(runs, [("stuck".to_owned(), timed_out, 0), ("quick".to_owned(), None, 1)]);
    release.send(()).unwrap();
}

#[test]
fn the_circuit_opens_after_consecutive_failures_and_a_success_closes_it() {
    let env = Env::new();
    let backends = env.backends();
    let broken = Arc::new(Fake::new("broken", Behaviour::Fail));
    let fine = Arc::new(Fake::new("fine", Behaviour::Answer));
    // Only `broken` and `fine` are enabled: nothing on the fallback path runs.
    let registry = registry(&[&broken, &fine], &["broken", "fine"]);
    let settings = PipelineSettings { circuit_breaker_threshold: 2, ..PipelineSettings::default() };
    let request = ContextRequest::builder().query("ledger").build().unwrap();
    let breaker = Arc::new(CircuitBreaker::default());
    let executor = ParallelExecutor::with_breaker(breaker.clone());
    let input = stage(&request, &backends, &registry, &settings);
    for _ in 0..2 {
        let runs = executor.execute(&input, &[selection("broken"), selection("fine")]);
        assert!(runs[0].error.as_deref().unwrap().contains("broken on purpose"), "{:?}", runs[0].error);
        assert_eq!(runs[1].candidates.len(), 1);
    }
    let runs = executor.execute(&input, &[selection("broken"), selection("fine")]);
    assert_eq!(runs[0].error.as_deref(), Some("circuit open after 2 consecutive failures"));
    assert_eq!(broken.calls(), 2, "an open circuit is not called");
    assert_eq!((runs[1].strategy.as_deref(), fine.calls()), (Some("fine"), 3));
    // A success clears the count.
    breaker.record("broken", true);
    assert!(!breaker.is_open("broken", 2));
    executor.execute(&input, &[selection("broken")]);
    assert_eq!((broken.calls(), breaker.failures("broken")), (3, 1));
    // A threshold of 0 never opens.
    assert!(!breaker.is_open("broken", 0));
}

#[test]
fn a_failing_strategy_falls_back_along_the_path_and_a_panic_is_a_failure() {
    let env = Env::new();
    let backends = env.backends();
    let flaky = Arc::new(Fake::new("flaky", Behaviour::Fail));
    let bug = Arc::new(Fake::new("bug", Behaviour::Panic));
    let keyword = Arc::new(Fake::new("simple-keyword", Behaviour::Answer));
    let registry = registry(&[&flaky, &bug, &keyword], &["flaky", "bug", "arce", "simple-keyword"]);
    let settings = PipelineSettings::default();
    let request = ContextRequest::builder().query("ledger").build().unwrap();
    let breaker = Arc::new(CircuitBreaker::default());
    let runs = ParallelExecutor::with_breaker(breaker.clone())
        .execute(&stage(&request, &backends, &registry, &settings), &[selection("flaky"), selection("bug")]);
    let run = &runs[0];
    assert_eq!(
        (run.selected.as_str(), run.strategy.as_deref(), run.candidates.len()),
        ("flaky", Some("simple-keyword"), 1)
    );
    let steps: Vec<(&str, &str)> = run.fallbacks.iter().map(|f| (f.strategy.as_str(), f.reason.as_str())).collect();
    assert_eq!(steps[0].0, "flaky");
    assert!(steps[0].1.contains("broken on purpose"), "{steps:?}");
    assert_eq!(steps[1].0, "arce");
    assert!(steps[1].1.contains("requires the text backend"), "{steps:?}");
    assert_eq!(breaker.failures("flaky"), 0, "a run that fell back to an answer is a success");
    assert_eq!(runs[1].error.as_deref(), Some("the strategy panicked"));
    assert_eq!(breaker.failures("bug"), 1);
}

// ------------------------------------------------------------ the enforcer

/// File sizes by path.
struct Sizes(BTreeMap<&'static str, u64>);

impl FileFacts for Sizes {
    fn size(&self, path: &str) -> Option<u64> {
        self.0.get(path).copied()
    }

    fn modified(&self, _: &str) -> Option<i64> {
        None
    }
}

/// Renders any node but `gone` at depth 2 as a one-line signature.
struct Signatures;

impl DepthRenderer for Signatures {
    fn render(&self, piece: &Piece, depth: u8) -> Option<String> {
        (depth == 2 && !piece.uko_node.ends_with("gone")).then(|| format!("def {}\n", piece.uko_node))
    }
}

fn file_piece(name: &str, path: &str, content: &str) -> ScoredFragment {
    let mut piece = Piece { relevance: 0.5, ..Piece::new(name, "function", path, content, 9) };
    piece.measure(&Tokenizer::new(Encoding::O200kBase));
    ScoredFragment { piece, score: 0.5, parts: ScoreParts::default() }
}

fn outcome(kept: &[ScoredFragment]) -> Vec<(&str, u8)> {
    kept.iter().map(|s| (s.piece.uko_node.as_str(), s.piece.depth)).collect()
}

#[test]
fn a_file_over_max_file_size_is_summarised_or_else_excluded() {
    let view = ContextView::builder().max_file_size(1_000).build().unwrap();
    let facts = Sizes(BTreeMap::from([("big.py", 5_000), ("small.py", 100), ("gone.py", 5_000)]));
    let body = "x = 1\n".repeat(20);
    let scored = vec![
        file_piece("big", "big.py", &body),
        file_piece("small", "small.py", &body),
        file_piece("gone", "gone.py", &body),
    ];
    let tok = Tokenizer::new(Encoding::O200kBase);
    let (kept, actions) = ContextBudgetEnforcer.enforce(scored, &view, &facts, &Signatures, &tok);
    assert_eq!(outcome(&kept), [("big", 2), ("small", 9)]);
    assert_eq!(kept[0].piece.content, "def big\n");
    let acts: Vec<(&str, &str)> = actions.iter().map(|a| (a.uko_node.as_str(), a.action)).collect();
    assert_eq!(acts, [("big", "summarised"), ("gone", "excluded")]);
    assert_eq!(actions[0].reason, "file is 5000 bytes, over max_file_size 1000: depth 2");
}

#[test]
fn past_max_total_size_the_rest_are_summarised_while_they_fit_else_excluded() {
    // Each piece is 100 bytes whole and 7 bytes summarised.
    let body = "y".repeat(99) + "\n";
    let view = ContextView::builder().max_total_size(225).build().unwrap();
    let scored: Vec<ScoredFragment> =
        ["n1", "n2", "n3", "n4", "n5", "n6"].iter().map(|n| file_piece(n, "a.py", &body)).collect();
    let tok = Tokenizer::new(Encoding::O200kBase);
    let facts = Sizes(BTreeMap::new());
    let (kept, actions) = ContextBudgetEnforcer.enforce(scored, &view, &facts, &Signatures, &tok);
    // 100 + 100 whole, then 7 + 7 + 7 summarised (221), then nothing fits.
    assert_eq!(outcome(&kept), [("n1", 9), ("n2", 9), ("n3", 2), ("n4", 2), ("n5", 2)]);
    let total: usize = kept.iter().map(|s| s.piece.content.len()).sum();
    assert!(total <= 225, "{total}");
    let acts: Vec<(&str, &str)> = actions.iter().map(|a| (a.uko_node.as_str(), a.action)).collect();
    assert_eq!(acts, [("n3", "summarised"), ("n4", "summarised"), ("n5", "summarised"), ("n6", "excluded")]);
    assert_eq!(actions[3].reason, "max_total_size 225 bytes reached");
    // Without limits nothing changes.
    let scored: Vec<ScoredFragment> = ["a", "b"].iter().map(|n| file_piece(n, "a.py", &body)).collect();
    let (kept, actions) = ContextBudgetEnforcer.enforce(scored, &ContextView::default(), &facts, &Signatures, &tok);
    assert_eq!((outcome(&kept), actions.len()), (vec![("a", 9), ("b", 9)], 0));
}
