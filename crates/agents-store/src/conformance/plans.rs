//! Conformance cases of [`PlanStore`].

use agents_core::policy::Phase;

use crate::{PlanStore, ProjectStore, StoreError};

/// Plans read back as created, with their phase, parent and project, and
/// list oldest first; an unknown id reads as `None`.
pub fn plans_keep_their_phase_and_project<S: PlanStore + ProjectStore>(make: &dyn Fn() -> S) {
    let store = make();
    let p = store.create_project("web").unwrap();
    let root = store.create_plan("root", None, Phase::Default, None).unwrap();
    let child = store.create_plan("child", Some(&root.plan_id), Phase::Execute, Some(&p.project_id)).unwrap();
    assert_eq!((root.phase.as_str(), root.project_id.as_deref(), root.parent_id.as_deref()), ("default", None, None));
    assert_eq!((child.phase.as_str(), child.project_id.as_deref()), ("execute", Some(p.project_id.as_str())));
    assert_eq!((child.title.as_str(), child.parent_id.as_deref()), ("child", Some(root.plan_id.as_str())));
    assert_eq!(store.plan(&child.plan_id).unwrap().as_ref(), Some(&child));
    assert_eq!(store.plans().unwrap(), [root, child], "oldest first");
    assert_eq!(store.plan("01ARZ3NDEKTSV4RRFFQ69G5FAV").unwrap(), None);
}

/// An unknown parent or project is [`StoreError::NotFound`] naming it, and
/// no plan is created.
pub fn an_unknown_parent_or_project_is_named<S: PlanStore>(make: &dyn Fn() -> S) {
    let store = make();
    let error = store.create_plan("x", None, Phase::Apply, Some("NOPROJECT")).unwrap_err();
    assert!(matches!(&error, StoreError::NotFound { what: "project", name } if name == "NOPROJECT"), "{error:?}");
    assert!(error.to_string().contains("NOPROJECT"), "{error}");
    let error = store.create_plan("x", Some("NOPLAN"), Phase::Apply, None).unwrap_err();
    assert!(matches!(&error, StoreError::NotFound { what: "plan", name } if name == "NOPLAN"), "{error:?}");
    assert!(error.to_string().contains("NOPLAN"), "{error}");
    assert!(store.plans().unwrap().is_empty());
}

/// Decisions read back per plan, oldest first; the tier must be `hot`,
/// `warm` or `cold` and the plan must exist.
pub fn decisions_are_kept_per_plan_oldest_first<S: PlanStore>(make: &dyn Fn() -> S) {
    let store = make();
    let plan = store.create_plan("p", None, Phase::Default, None).unwrap();
    let other = store.create_plan("q", None, Phase::Default, None).unwrap();
    let first = store.add_decision(&plan.plan_id, "use sqlite", "embedded", "warm").unwrap();
    let elsewhere = store.add_decision(&other.plan_id, "x", "y", "hot").unwrap();
    let second = store.add_decision(&plan.plan_id, "use wal", "readers", "cold").unwrap();
    assert_eq!(
        (first.plan_id.as_str(), first.title.as_str(), first.body.as_str(), first.tier.as_str()),
        (plan.plan_id.as_str(), "use sqlite", "embedded", "warm")
    );
    assert_eq!(store.plan_decisions(&plan.plan_id).unwrap(), [first, second]);
    assert_eq!(store.plan_decisions(&other.plan_id).unwrap(), [elsewhere]);

    let error = store.add_decision(&plan.plan_id, "x", "y", "lukewarm").unwrap_err();
    assert!(matches!(error, StoreError::Invalid(_)), "{error:?}");
    let error = store.add_decision("NOPLAN", "x", "y", "hot").unwrap_err();
    assert!(matches!(&error, StoreError::NotFound { what: "plan", name } if name == "NOPLAN"), "{error:?}");
    assert_eq!(store.plan_decisions(&plan.plan_id).unwrap().len(), 2, "refused decisions are not kept");
    assert!(store.plan_decisions("NOPLAN").unwrap().is_empty());
}

/// A plan's payload replaces the one before; a plan without one, or an
/// unknown plan, reads `None`; an unknown plan cannot have one.
pub fn payloads_replace_the_one_before<S: PlanStore>(make: &dyn Fn() -> S) {
    let store = make();
    let plan = store.create_plan("p", None, Phase::Default, None).unwrap();
    let other = store.create_plan("q", None, Phase::Default, None).unwrap();
    assert_eq!(store.plan_payload(&plan.plan_id).unwrap(), None);
    store.set_plan_payload(&plan.plan_id, r#"{"pieces":[1]}"#).unwrap();
    store.set_plan_payload(&plan.plan_id, r#"{"pieces":[2]}"#).unwrap();
    assert_eq!(store.plan_payload(&plan.plan_id).unwrap().as_deref(), Some(r#"{"pieces":[2]}"#));
    assert_eq!(store.plan_payload(&other.plan_id).unwrap(), None);
    assert!(store.set_plan_payload("NOPLAN", "{}").is_err());
    assert_eq!(store.plan_payload("NOPLAN").unwrap(), None);
}
