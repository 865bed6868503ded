//! Custom pipeline components and retrieval strategies: registered in one call
//! each, chosen by configuration, and invoked by a real assembly over real files.

use std::path::Path;
use std::sync::Arc;

use agents_acms::indexing::NoProgress;
use agents_acms::pipeline::components::{FileDependencies, FragmentOrderer, ScoredFragment};
use agents_acms::pipeline::{Component, PipelineBuilder};
use agents_acms::retrieval::{
    Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities, StrategyError,
};
use agents_core::config::ResolvedConfig;
use agents_core::request::ContextRequest;
use agents_engine::{AssembleOptions, Engine, Home, IndexMode};

/// Always proposes the README and the invoice module, whatever the request.
struct ReadmeFirst;

impl ContextStrategy for ReadmeFirst {
    fn name(&self) -> &'static str {
        "readme-first"
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
        let mut nodes = backends.store.uko_file_nodes(backends.index_id, "README.md")?;
        nodes.extend(backends.store.uko_file_nodes(backends.index_id, "billing/invoice.py")?);
        Ok(nodes
            .iter()
            .filter(|n| n.node.parent_uri.is_none())
            .map(|n| Candidate {
                note: Some("always first".to_owned()),
                ..Candidate::new(n.node.uri.clone(), n.node.path.clone(), 1.0, query.depth, self.name())
            })
            .collect())
    }
}

/// Reverse path order, to be told apart from the default orderer.
struct ReversePaths;

impl FragmentOrderer for ReversePaths {
    fn order(&self, mut packed: Vec<ScoredFragment>, _deps: &dyn FileDependencies) -> Vec<ScoredFragment> {
        packed.sort_by(|a, b| b.piece.path.cmp(&a.piece.path).then(b.piece.uko_node.cmp(&a.piece.uko_node)));
        packed
    }
}

/// The defaults with `toml` merged over them, as if read from DIR/config.toml.
fn config(toml: &str, dir: &Path) -> ResolvedConfig {
    let mut config = ResolvedConfig::default();
    config.merge_file(toml, dir.join("config.toml")).unwrap();
    config
}

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_custom_strategy_and_component_chosen_by_configuration_run() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    write(&repo, "README.md", "# Shop\n\nHow invoices are sent.\n");
    write(
        &repo,
        "billing/invoice.py",
        "def send_invoice(invoice):\n    \"\"\"Send the invoice.\"\"\"\n    return invoice\n",
    );
    let config = config(
        "[context.strategies]\nenabled = [\"readme-first\", \"simple-keyword\"]\n\n\
         [context.pipeline]\nfragment-orderer = \"reverse-paths\"\n\n\
         [context.backends]\nvector = \"none\"\n",
        tmp.path(),
    );
    let components = PipelineBuilder::new()
        .register("reverse-paths", Component::Orderer(Arc::new(ReversePaths)))
        .register_strategy(Arc::new(ReadmeFirst));
    let engine = Engine::open_with(Home::new(tmp.path().join("home")), config, components).unwrap();
    assert_eq!(engine.pipeline().implementations()[7], ("fragment-orderer", "reverse-paths"));
    let options = agents_acms::IndexOptions { wait_for_lock: true, ..engine.index_options() };
    let outcome = engine.index_path(&repo, IndexMode::Refresh, &options, &NoProgress).unwrap();
    let request = ContextRequest::builder().query("send the invoice").build().unwrap();
    let options = AssembleOptions {
        depth: 9,
        limit: 20,
        budget: engine.budget(None, Some(2000)).unwrap().0,
        ..AssembleOptions::default()
    };
    let (assembly, _, _) = engine.assemble(&outcome, &request, &options).unwrap();
    assert_eq!(assembly.selections[0].strategy, "readme-first", "{:?}", assembly.selections);
    assert!(assembly.context.strategies_used().contains(&"readme-first".to_owned()));
    // Keyword search (quality 0.3) scores under half of readme-first (1.0): the
    // selector leaves it out.
    let strategies: Vec<&str> = assembly.context.fragments().iter().filter_map(|f| f.provenance().strategy()).collect();
    assert!(!strategies.is_empty() && strategies.iter().all(|s| *s == "readme-first"), "{strategies:?}");
    let orderer = assembly.trace.iter().find(|s| s.component == "fragment-orderer").unwrap();
    assert_eq!(orderer.implementation, "reverse-paths");
    let paths: Vec<&str> = assembly.context.fragments().iter().map(|f| f.provenance().source_path()).collect();
    let mut reversed = paths.clone();
    reversed.sort_by(|a, b| b.cmp(a));
    // The file's module and, proposed beside it as a member of a leading file
    // whose text holds the query's words, `send_invoice`.
    let mut distinct = paths.clone();
    distinct.dedup();
    assert_eq!(distinct, ["billing/invoice.py", "README.md"], "the custom orderer decided the order");
    assert_eq!(paths, reversed);
}

#[test]
fn an_unknown_component_is_a_configuration_error_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let config = config("[context.pipeline]\nbudget-packer = \"magic\"\n", tmp.path());
    let error = Engine::open(Home::new(tmp.path().join("home")), config).err().unwrap();
    assert!(
        error.to_string().starts_with("context.pipeline.budget-packer: no budget-packer named \"magic\""),
        "{error}"
    );
}
