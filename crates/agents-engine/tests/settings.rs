//! Settings that are accepted act: `context.query.min-relevance`,
//! `context.file.max-total-size` in the default view, and the request's
//! `purpose` and `priority`, each seen by a real assembly over real files.

use std::path::Path;
use std::sync::{Arc, Mutex};

use agents_acms::indexing::NoProgress;
use agents_acms::pipeline::PipelineBuilder;
use agents_acms::retrieval::{
    Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities, StrategyError,
};
use agents_core::config::ResolvedConfig;
use agents_core::request::ContextRequest;
use agents_engine::{AssembleOptions, Engine, Home, IndexMode, IndexOutcome};

/// Proposes every file's node, `billing/*` at relevance 1.0, `misc/notes.py`
/// at 0.2 and `graph/walked.py` at 0.1 as reached by a graph walk (3 hops),
/// and records the text and candidate limit it was asked with.
struct Recorder {
    seen: Arc<Mutex<Vec<(String, usize)>>>,
}

impl ContextStrategy for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities { quality_score: 1.0, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, _query: &RetrievalQuery<'_>, _backends: &Backends<'_>) -> f64 {
        1.0
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        self.seen.lock().unwrap().push((query.text(), query.limit));
        let mut out = Vec::new();
        for path in ["billing/invoice.py", "billing/refund.py", "misc/notes.py", "graph/walked.py"] {
            for n in backends.store.uko_file_nodes(backends.index_id, path)? {
                if n.node.parent_uri.is_some() {
                    continue;
                }
                let score = match path {
                    "misc/notes.py" => 0.2,
                    "graph/walked.py" => 0.1,
                    _ => 1.0,
                };
                out.push(Candidate {
                    hops: path.starts_with("graph/").then_some(3),
                    ..Candidate::new(n.node.uri.clone(), n.node.path.clone(), score, 9, self.name())
                });
            }
        }
        Ok(out)
    }
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

struct Setup {
    _tmp: tempfile::TempDir,
    engine: Engine,
    outcome: IndexOutcome,
    seen: Arc<Mutex<Vec<(String, usize)>>>,
}

/// An engine with `toml` as its configuration (only the recorder enabled) over
/// a small repository.
fn setup(toml: &str) -> Setup {
    setup_with(toml, "def send_invoice(invoice):\n    \"\"\"Send the invoice.\"\"\"\n    return invoice\n")
}

/// [`setup`] with `invoice` as the text of `billing/invoice.py`.
fn setup_with(toml: &str, invoice: &str) -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(&repo, "billing/invoice.py", invoice);
    write(
        &repo,
        "billing/refund.py",
        "def refund(invoice):\n    \"\"\"Refund the invoice.\"\"\"\n    return invoice\n",
    );
    write(&repo, "misc/notes.py", "def unrelated_helper(x):\n    return x\n");
    write(&repo, "graph/walked.py", "def far_away(x):\n    return x\n");
    let mut config = ResolvedConfig::default();
    let toml =
        format!("[context.strategies]\nenabled = [\"recorder\"]\n\n[context.backends]\nvector = \"none\"\n\n{toml}");
    config.merge_file(&toml, tmp.path().join("config.toml")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let components = PipelineBuilder::new().register_strategy(Arc::new(Recorder { seen: seen.clone() }));
    let engine = Engine::open_with(Home::new(tmp.path().join("home")), config, components).unwrap();
    let options = agents_acms::IndexOptions { wait_for_lock: true, ..engine.index_options() };
    let outcome = engine.index_path(&repo, IndexMode::Refresh, &options, &NoProgress).unwrap();
    Setup { _tmp: tmp, engine, outcome, seen }
}

fn assemble(s: &Setup, request: &ContextRequest) -> agents_acms::pipeline::Assembly {
    let options =
        AssembleOptions { depth: 9, budget: s.engine.budget(None, Some(4000)).unwrap().0, ..Default::default() };
    s.engine.assemble(&s.outcome, request, &options).unwrap().0
}

fn paths(assembly: &agents_acms::pipeline::Assembly) -> Vec<String> {
    let mut paths: Vec<String> =
        assembly.context.fragments().iter().map(|f| f.provenance().source_path().to_owned()).collect();
    paths.sort();
    paths.dedup();
    paths
}

#[test]
fn a_candidate_below_context_query_min_relevance_only_fills_what_the_others_leave() {
    let request = ContextRequest::builder().query("invoice").build().unwrap();
    // The whole source of what ranks above the floor could fill the budget:
    // `misc/notes.py` (0.2, below the default 0.3) is left out. A node a graph
    // walk reached is the breadth's to decide.
    let long = format!(
        "def send_invoice(invoice):\n    \"\"\"Send the invoice.\"\"\"\n{}    return invoice\n",
        "    invoice = apply_the_next_adjustment(invoice)\n".repeat(1500)
    );
    let out = assemble(&setup_with("", &long), &request);
    assert_eq!(paths(&out), ["billing/invoice.py", "billing/refund.py", "graph/walked.py"]);
    assert_eq!(out.below_min_relevance, 1);
    // Room to spare: it fills what the others leave, ranked after them all.
    let out = assemble(&setup(""), &request);
    assert_eq!(paths(&out), ["billing/invoice.py", "billing/refund.py", "graph/walked.py", "misc/notes.py"]);
    assert_eq!(out.below_min_relevance, 0);
    let score = |path: &str| {
        out.context.fragments().iter().find(|f| f.provenance().source_path() == path).unwrap().relevance_score()
    };
    for path in ["billing/invoice.py", "billing/refund.py", "graph/walked.py"] {
        assert!(score(path) > score("misc/notes.py"), "{path}: {} <= {}", score(path), score("misc/notes.py"));
    }
    // A lower floor takes it in with the others.
    let lower = setup("[context.query]\nmin-relevance = 0.1\n");
    let out = assemble(&lower, &request);
    assert_eq!(paths(&out), ["billing/invoice.py", "billing/refund.py", "graph/walked.py", "misc/notes.py"]);
    assert_eq!(out.below_min_relevance, 0);
}

#[test]
fn context_file_max_total_size_limits_the_default_view() {
    let request = ContextRequest::builder().query("invoice").build().unwrap();
    let roomy = assemble(&setup(""), &request);
    let bytes = |a: &agents_acms::pipeline::Assembly| a.context.fragments().iter().map(|f| f.content().len()).sum();
    let full: usize = bytes(&roomy);
    assert!(full > 120, "{full}");
    assert!(roomy.enforcement.is_empty(), "{:?}", roomy.enforcement);
    // No project policy at all: the configuration's limit is the default view's.
    let tight = setup("[context.file]\nmax-size = 100\nmax-total-size = 100\n");
    let out = assemble(&tight, &request);
    assert!(bytes(&out) <= 100, "{} bytes, though the packer would deepen: {:?}", bytes(&out), out.enforcement);
    assert!(
        out.enforcement.iter().any(|e| e.reason.contains("max_total_size 100 bytes reached")),
        "{:?}",
        out.enforcement
    );
}

#[test]
fn the_requests_purpose_joins_the_retrieval_text_and_its_priority_scales_the_candidates() {
    let s = setup("");
    let plain = ContextRequest::builder().query("invoice").build().unwrap();
    assemble(&s, &plain);
    let urgent = ContextRequest::builder().query("invoice").purpose("fix refunds").priority(1.0).build().unwrap();
    assemble(&s, &urgent);
    let low = ContextRequest::builder().query("invoice").priority(0.0).build().unwrap();
    assemble(&s, &low);
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen[0].0, "invoice");
    assert_eq!(seen[1].0, "invoice fix refunds", "the purpose is searched for too");
    assert_eq!(seen[2].0, "invoice");
    // 4,000 tokens allow 50 candidates at the default priority 0.5; 1.0 takes
    // half as many again, 0.0 half.
    assert_eq!((seen[0].1, seen[1].1, seen[2].1), (50, 75, 25));
}
