//! A project's stored context policy and settings, as `Engine::query` applies
//! them: the phase's view decides what a query may see, and the project's
//! default depth is where a query starts. (Setting them from flags is tested
//! in `agents-cli/tests/project_context.rs`.)

use std::path::PathBuf;

use agents_core::config::ResolvedConfig;
use agents_core::policy::{ContextView, Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
use agents_core::request::Depth;
use agents_engine::{Engine, Home, Project, QueryOptions};
use serde_json::Value;

struct Linked {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    engine: Engine,
    project: Project,
}

/// A repository with hand-written code in `src/` and generated code in
/// `gen/`, linked to the project `web`.
fn linked_repo() -> Linked {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(repo.join("gen")).unwrap();
    std::fs::write(
        repo.join("src/invoice.py"),
        "def send_invoice_reminder(invoice):\n    \"\"\"Email a reminder for an overdue invoice.\"\"\"\n    return invoice\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("gen/invoice_pb.py"),
        "def send_invoice_reminder_pb(invoice):\n    \"\"\"Generated invoice reminder stub.\"\"\"\n    return invoice\n",
    )
    .unwrap();
    let engine = Engine::open(Home::new(root.join("home")), ResolvedConfig::default()).unwrap();
    let project = engine.projects().get_or_create("web").unwrap();
    engine.projects().link(&project, &repo).unwrap();
    Linked { _dir: dir, repo, engine, project }
}

impl Linked {
    fn query(&self, phase: Phase, depth: Option<Depth>) -> Value {
        let mut options = QueryOptions::new(&self.repo);
        options.overrides.text = Some("send invoice reminder".into());
        options.overrides.depth = depth;
        options.phase = phase;
        serde_json::to_value(self.engine.query(&options).unwrap().report()).unwrap()
    }

    fn set(&self, policy: &ProjectContextPolicy, settings: &ProjectContextSettings) {
        self.engine.set_project_context(&self.project, policy, settings).unwrap();
    }
}

fn paths(v: &Value) -> Vec<String> {
    v["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["provenance"]["source_path"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_policy_view_decides_what_a_query_may_see() {
    let l = linked_repo();
    let open = l.query(Phase::Default, None);
    assert!(paths(&open).iter().any(|p| p.starts_with("gen/")), "{open:#}");
    let execute = ContextView::builder().exclude_paths(["gen"]).build().unwrap();
    let policy = ProjectContextPolicy::new("web").unwrap().with_view(Phase::Execute, execute);
    l.set(&policy, &ProjectContextSettings::default());
    // The execute view excludes gen/; the default view (and so strategize) does not.
    let execute = l.query(Phase::Execute, None);
    assert!(!paths(&execute).is_empty() && paths(&execute).iter().all(|p| p.starts_with("src/")), "{execute:#}");
    assert!(execute["enforcement"].as_array().unwrap().iter().any(|e| e["path"] == "gen/invoice_pb.py"), "{execute:#}");
    let strategize = l.query(Phase::Strategize, None);
    assert!(paths(&strategize).iter().any(|p| p.starts_with("gen/")), "{strategize:#}");
}

#[test]
fn the_projects_default_depth_is_the_depth_a_query_starts_from() {
    let l = linked_repo();
    let depths = |v: &Value| -> Vec<u64> {
        v["fragments"].as_array().unwrap().iter().map(|f| f["detail_depth"].as_u64().unwrap()).collect()
    };
    let unset = l.query(Phase::Default, None);
    assert!(depths(&unset).contains(&9), "without a project depth, the query's own 9: {unset:#}");
    let settings =
        ProjectContextSettings::builder().default_depth(Depth::named("MODULE_LISTING").unwrap()).build().unwrap();
    l.set(&ProjectContextPolicy::new("web").unwrap(), &settings);
    let listed = l.query(Phase::Default, None);
    assert!(!depths(&listed).is_empty() && depths(&listed).iter().all(|&d| d == 0), "{listed:#}");
    let given = l.query(Phase::Default, Some(Depth::level(9).unwrap()));
    assert!(depths(&given).contains(&9), "the query's depth wins over the project's: {given:#}");
}
