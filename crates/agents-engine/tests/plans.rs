//! Plans and their decisions through the engine: recorded, shown with their
//! ancestry, replayed by the plan-decision-context strategy, and listed by
//! the history use case.

use agents_core::config::ResolvedConfig;
use agents_core::policy::Phase;
use agents_engine::history::HistoryQuery;
use agents_engine::{Engine, EngineError, Home, QueryOptions};
use serde_json::Value;

fn engine(dir: &std::path::Path) -> Engine {
    Engine::open(Home::new(dir.join("home")), ResolvedConfig::default()).unwrap()
}

#[test]
fn decisions_of_the_plan_and_its_ancestors_come_back_nearest_first() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().canonicalize().unwrap().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("pay.py"), "def charge(amount):\n    return amount\n").unwrap();
    let engine = engine(tmp.path());
    let root = engine.create_plan("Payments v2", None, Phase::Default, None).unwrap();
    engine.add_decision(&root.plan_id, "Use idempotency keys", "Retries reuse the key.", "cold").unwrap();
    engine.add_decision(&root.plan_id, "Scratch note", "", "hot").unwrap();
    let child = engine.create_plan("Retry charges", Some(&root.plan_id), Phase::Default, None).unwrap();
    assert_eq!(child.parent_id.as_deref(), Some(root.plan_id.as_str()));
    engine.add_decision(&child.plan_id, "Back off exponentially", "", "warm").unwrap();

    let shown = engine.plan_view(&child.plan_id).unwrap();
    assert_eq!(shown.context.ancestors.len(), 2);
    assert_eq!(shown.context.ancestors[0].plan_id, child.plan_id);
    assert_eq!(shown.context.ancestors[1].decisions.len(), 2);
    // The history use case lists the same decisions.
    let history =
        engine.history(&repo, &HistoryQuery { plan: Some(child.plan_id.clone()), ..HistoryQuery::default() }).unwrap();
    assert_eq!(history.decisions.unwrap().ancestors.len(), 2);
    assert!(history.commits.is_empty(), "not a git repository");

    let mut options = QueryOptions::new(&repo);
    options.overrides.text = Some("retry charges".into());
    options.plan = Some(child.plan_id.clone());
    options.overrides.strategies = vec!["plan-decision-context".into()];
    let out = serde_json::to_value(engine.query(&options).unwrap().report()).unwrap();
    assert_eq!(out["strategy"], "plan-decision-context");
    let fragments = out["fragments"].as_array().unwrap();
    let contents: Vec<&str> = fragments.iter().map(|f| f["content"].as_str().unwrap()).collect();
    // The plan's own decision first, then the ancestor's cold one; hot records
    // are the live context, not history, and are not replayed.
    assert_eq!(contents.len(), 2, "{contents:?}");
    assert!(contents[0].starts_with("Decision: Back off exponentially"));
    assert!(contents[1].contains("Use idempotency keys") && contents[1].contains("Retries reuse the key."));
    let scores: Vec<f64> = fragments.iter().map(|f| f["relevance_score"].as_f64().unwrap()).collect();
    assert!(scores[0] > scores[1]);
    // Inline records: their source is the record itself, and they are notes
    // saying why they are there.
    for f in fragments {
        assert!(f["uko_node"].as_str().unwrap().starts_with("plan://"));
        assert_eq!(f["provenance"]["source_path"], f["uko_node"], "{f:#}");
        assert_eq!(f["provenance"]["strategy"], "plan-decision-context", "{f:#}");
        assert_eq!(f["metadata"]["kind"], "note", "{f:#}");
    }
    assert!(fragments[0]["uko_node"].as_str().unwrap().starts_with(&format!("plan://{}/decision/", child.plan_id)));
    assert!(fragments[1]["uko_node"].as_str().unwrap().starts_with(&format!("plan://{}/decision/", root.plan_id)));
    assert_eq!(fragments[1]["metadata"]["note"], "decision on plan \"Payments v2\" (cold tier)");
    assert!(out["total_tokens"].as_u64().unwrap() <= out["budget"]["available_tokens"].as_u64().unwrap());

    // Without a preferred strategy, a plan brings its decisions in beside
    // whatever strategy the selector picks for the code.
    options.overrides.strategies.clear();
    let auto: Value = serde_json::to_value(engine.query(&options).unwrap().report()).unwrap();
    assert_eq!(auto["plan_id"], child.plan_id.as_str());
    let auto_contents: Vec<&str> =
        auto["fragments"].as_array().unwrap().iter().map(|f| f["content"].as_str().unwrap()).collect();
    assert!(auto_contents.iter().any(|c| c.starts_with("Decision: Back off exponentially")), "{auto:#}");
    assert!(auto_contents.iter().any(|c| c.contains("Use idempotency keys")), "{auto:#}");
    assert!(!auto_contents.iter().any(|c| c.contains("Scratch note")), "hot records are not replayed: {auto:#}");
}

#[test]
fn unknown_plans_parents_and_projects_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = engine(tmp.path());
    let refused = |e: EngineError| matches!(e, EngineError::PlanRefused(_) | EngineError::Project(_));
    assert!(refused(engine.add_decision("NOPE", "x", "", "hot").unwrap_err()));
    assert!(refused(engine.create_plan("child", Some("NOPE"), Phase::Default, None).unwrap_err()));
    assert!(refused(engine.create_plan("p", None, Phase::Default, Some("nope")).unwrap_err()));
    assert!(matches!(engine.plan_view("NOPE").unwrap_err(), EngineError::PlanNotFound(_)));
    assert!(engine.plans().unwrap().is_empty(), "nothing recorded");
}
