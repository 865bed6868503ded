//! Queries on one resource run beside each other (the resource's lock is a
//! writer's only), and a query that an index run overtakes answers from one
//! run, never from a mix of the old and the new.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use agents_acms::indexing::NoProgress;
use agents_acms::pipeline::PipelineBuilder;
use agents_acms::retrieval::{
    Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities, StrategyError,
};
use agents_core::config::ResolvedConfig;
use agents_core::request::ContextRequest;
use agents_engine::{AssembleOptions, Engine, Home, IndexMode, IndexOutcome};

/// How long a strategy waits for what a test promised before giving up: a
/// bound that keeps a broken build from hanging, never a measurement.
const GIVE_UP: Duration = Duration::from_secs(300);

/// Counts the strategies inside [`Gate::meet`] and whether two ever were at once.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    inside: usize,
    met: bool,
    /// Set by the test: a paused strategy may go on.
    released: bool,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Enters, and waits until a second strategy is inside too (or gives up).
    fn meet(&self) -> bool {
        let mut state = self.lock();
        state.inside += 1;
        if state.inside >= 2 {
            state.met = true;
            self.changed.notify_all();
        }
        let (mut state, _) = self.changed.wait_timeout_while(state, GIVE_UP, |s| !s.met).unwrap();
        state.inside -= 1;
        state.met
    }

    /// Says it is inside, then waits for [`Gate::release`] (or gives up).
    fn pause(&self) {
        let mut state = self.lock();
        state.inside += 1;
        self.changed.notify_all();
        let (mut state, _) = self.changed.wait_timeout_while(state, GIVE_UP, |s| !s.released).unwrap();
        state.inside -= 1;
    }

    /// Waits until a strategy is inside (or gives up).
    fn wait_for_one_inside(&self) -> bool {
        let state = self.lock();
        let (state, _) = self.changed.wait_timeout_while(state, GIVE_UP, |s| s.inside == 0).unwrap();
        state.inside > 0
    }

    fn release(&self) {
        self.lock().released = true;
        self.changed.notify_all();
    }
}

/// A strategy that proposes nothing itself: it meets another query's
/// strategy at the gate, or (with `pause`) holds the next query after the
/// test armed it inside the strategy until the test releases it.
struct AtTheGate {
    gate: Arc<Gate>,
    pause: bool,
    armed: AtomicBool,
    met: AtomicBool,
}

impl AtTheGate {
    fn new(gate: &Arc<Gate>, pause: bool) -> Arc<AtTheGate> {
        Arc::new(AtTheGate { gate: gate.clone(), pause, armed: AtomicBool::new(false), met: AtomicBool::new(false) })
    }
}

impl ContextStrategy for AtTheGate {
    fn name(&self) -> &'static str {
        "at-the-gate"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities { quality_score: 1.0, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, _query: &RetrievalQuery<'_>, _backends: &Backends<'_>) -> f64 {
        1.0
    }

    fn retrieve(
        &self,
        _query: &RetrievalQuery<'_>,
        _backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        if self.pause {
            if self.armed.swap(false, Ordering::SeqCst) {
                self.gate.pause();
            }
        } else if self.gate.meet() {
            self.met.store(true, Ordering::SeqCst);
        }
        Ok(Vec::new())
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An engine whose queries run the gate strategy beside keyword search, with
/// a strategy time limit far beyond anything the gate waits for.
fn engine(home: &Path, strategy: Arc<AtTheGate>) -> Engine {
    let mut config = ResolvedConfig::default();
    config
        .merge_file(
            "[context.strategies]\nenabled = [\"at-the-gate\", \"simple-keyword\"]\n\n\
             [context.executor]\ntimeout-secs = 3600\n",
            home.join("config.toml"),
        )
        .unwrap();
    Engine::open_with(Home::new(home), config, PipelineBuilder::new().register_strategy(strategy)).unwrap()
}

fn index(engine: &Engine, repo: &Path) -> IndexOutcome {
    // Never waits: an index run that had to wait for a query would fail here.
    let options = agents_acms::IndexOptions { wait_for_lock: false, ..engine.index_options() };
    engine.index_path(repo, IndexMode::Refresh, &options, &NoProgress).unwrap()
}

/// The fragments' paths and contents, in order.
fn answer(engine: &Engine, outcome: &IndexOutcome, query: &str) -> Vec<(String, String)> {
    let request =
        ContextRequest::builder().query(query).preferred_strategies(["at-the-gate", "simple-keyword"]).build().unwrap();
    let options = AssembleOptions {
        depth: 9,
        limit: 20,
        budget: engine.budget(None, Some(4000)).unwrap().0,
        ..AssembleOptions::default()
    };
    let (assembly, _, _) = engine.assemble(outcome, &request, &options).unwrap();
    assembly
        .context
        .fragments()
        .iter()
        .map(|f| (f.provenance().source_path().to_owned(), f.content().to_owned()))
        .collect()
}

#[test]
fn two_queries_on_one_resource_are_inside_their_strategies_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(&repo, "billing/invoice.py", "def send_invoice(invoice):\n    \"\"\"Send the invoice.\"\"\"\n    return 1\n");
    let gate = Arc::new(Gate::default());
    let strategy = AtTheGate::new(&gate, false);
    let engine = engine(&tmp.path().join("home"), strategy.clone());
    let outcome = index(&engine, &repo);
    engine.sync_search(&outcome).unwrap();

    // Each query's strategy waits at the gate until the other's arrives: they
    // only both finish if they were inside at the same time.
    let answers: Vec<Vec<(String, String)>> = std::thread::scope(|scope| {
        let queries: Vec<_> = (0..2).map(|_| scope.spawn(|| answer(&engine, &outcome, "send the invoice"))).collect();
        queries.into_iter().map(|q| q.join().unwrap()).collect()
    });
    assert!(strategy.met.load(Ordering::SeqCst), "the two queries' strategies never ran at the same time");
    assert_eq!(answers[0], answers[1]);
    assert_eq!(answers[0][0].0, "billing/invoice.py", "{answers:?}");
    // And alone, the same answer.
    gate.lock().met = true;
    assert_eq!(answer(&engine, &outcome, "send the invoice"), answers[0]);
}

#[test]
fn a_query_overtaken_by_an_index_run_answers_from_the_new_run_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(
        &repo,
        "billing/invoice.py",
        "def send_invoice(invoice):\n    \"\"\"Mail the quarterly invoice.\"\"\"\n    return 1\n",
    );
    write(&repo, "billing/refund.py", "def refund(order):\n    \"\"\"Give the money back.\"\"\"\n    return 2\n");
    let gate = Arc::new(Gate::default());
    let strategy = AtTheGate::new(&gate, true);
    let engine = engine(&tmp.path().join("home"), strategy.clone());
    let before = index(&engine, &repo);
    engine.sync_search(&before).unwrap();
    let old = answer(&engine, &before, "quarterly invoice");
    assert!(old.iter().any(|(_, text)| text.contains("send_invoice")), "{old:?}");
    strategy.armed.store(true, Ordering::SeqCst);

    let overtaken = std::thread::scope(|scope| {
        let query = scope.spawn(|| answer(&engine, &before, "quarterly invoice"));
        assert!(gate.wait_for_one_inside(), "the query never reached its strategy");
        // While the query is inside a strategy (its keyword search may have
        // read the old text index already), the file changes and a run
        // indexes it: it does not wait for the query.
        write(
            &repo,
            "billing/invoice.py",
            "def post_quarterly_invoice(invoice):\n    \"\"\"Post the quarterly invoice.\"\"\"\n    return 3\n",
        );
        let after = index(&engine, &repo);
        assert_eq!(after.index.report.as_ref().unwrap().changed, 1);
        gate.release();
        query.join().unwrap()
    });
    let after = index(&engine, &repo);
    let new = answer(&engine, &after, "quarterly invoice");
    assert!(new.iter().any(|(_, text)| text.contains("post_quarterly_invoice")), "{new:?}");
    assert!(new.iter().all(|(_, text)| !text.contains("send_invoice")), "{new:?}");
    assert!(overtaken == old || overtaken == new, "a mix of two runs:\n{overtaken:#?}\nold: {old:#?}\nnew: {new:#?}");
}
