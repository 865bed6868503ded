//! Conformance cases of [`ProjectStore`].

use agents_core::ids::stable_ulid;
use agents_core::policy::{ContextView, Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;

use crate::{FileIndexStore, ProjectStore, StoreError};

/// Project names are unique, read back as created, and list sorted by name.
pub fn projects_are_unique_and_sorted<S: ProjectStore>(make: &dyn Fn() -> S) {
    let store = make();
    let zeta = store.create_project("zeta").unwrap();
    store.create_project("alpha").unwrap();
    let error = store.create_project("zeta").unwrap_err();
    assert!(matches!(&error, StoreError::AlreadyExists { what: "project", name } if name == "zeta"), "{error:?}");
    let names: Vec<_> = store.projects().unwrap().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["alpha", "zeta"]);
    assert_eq!(store.project("zeta").unwrap(), Some(zeta));
}

/// A resource's id is `stable_ulid(&["resource", path])`: the same path has
/// the same id in two fresh stores, whatever the project or display name.
pub fn resource_ids_derive_from_the_path<S: ProjectStore>(make: &dyn Fn() -> S) {
    let (one, two) = (make(), make());
    let a = one.create_project("a").unwrap();
    let b = two.create_project("b").unwrap();
    let in_one = one.link_resource(&a.project_id, "/src/shared", "shared").unwrap();
    let in_two = two.link_resource(&b.project_id, "/src/shared", "other name").unwrap();
    assert_eq!(in_one.resource_id, in_two.resource_id);
    assert_eq!(in_one.resource_id, stable_ulid(&["resource", "/src/shared"]));
    let elsewhere = one.link_resource(&a.project_id, "/src/elsewhere", "elsewhere").unwrap();
    assert_ne!(elsewhere.resource_id, in_one.resource_id);
}

/// Linking twice is linking once; a resource is shared between projects;
/// every listing is sorted as documented and lookups round-trip.
pub fn linking_is_idempotent_and_listings_are_sorted<S: ProjectStore>(make: &dyn Fn() -> S) {
    let store = make();
    let web = store.create_project("web").unwrap();
    let api = store.create_project("api").unwrap();
    let y = store.link_resource(&web.project_id, "/src/y", "y").unwrap();
    let x = store.link_resource(&web.project_id, "/src/x", "x").unwrap();
    assert_eq!((x.path.as_str(), x.name.as_str()), ("/src/x", "x"));
    assert_eq!(store.link_resource(&web.project_id, "/src/x", "x").unwrap(), x, "linking again changes nothing");
    assert_eq!(store.link_resource(&api.project_id, "/src/x", "renamed").unwrap(), x, "shared, as first linked");

    assert_eq!(store.project_resources(&web.project_id).unwrap(), [x.clone(), y.clone()], "sorted by path");
    assert_eq!(store.project_resources(&api.project_id).unwrap(), std::slice::from_ref(&x));
    assert_eq!(store.resource_projects(&x.resource_id).unwrap(), [api, web.clone()], "sorted by name");
    assert_eq!(store.resource_projects(&y.resource_id).unwrap(), [web]);
    assert_eq!(store.resources().unwrap(), [x.clone(), y], "sorted by path");
    assert_eq!(store.resource(&x.resource_id).unwrap().as_ref(), Some(&x));
    assert_eq!(store.resource_by_path("/src/x").unwrap(), Some(x));
}

/// Unlinking the last project of a resource deletes the resource and its
/// index; unlinking again reports that no link existed.
pub fn last_unlink_deletes_the_resource_and_its_index<S: ProjectStore + FileIndexStore>(make: &dyn Fn() -> S) {
    let store = make();
    let a = store.create_project("a").unwrap();
    let b = store.create_project("b").unwrap();
    let r = store.link_resource(&a.project_id, "/src/x", "x").unwrap();
    store.link_resource(&b.project_id, "/src/x", "x").unwrap();
    store.ensure_index(&r.resource_id).unwrap();
    assert!(store.unlink_resource(&a.project_id, &r.resource_id).unwrap());
    assert!(store.resource(&r.resource_id).unwrap().is_some(), "still linked to b");
    assert!(store.index_metadata(&r.resource_id).unwrap().is_some());
    assert!(store.unlink_resource(&b.project_id, &r.resource_id).unwrap());
    assert!(store.resource(&r.resource_id).unwrap().is_none());
    assert!(store.resource_by_path("/src/x").unwrap().is_none());
    assert!(store.index_metadata(&r.resource_id).unwrap().is_none(), "the index goes with the resource");
    assert!(!store.unlink_resource(&b.project_id, &r.resource_id).unwrap());
    assert_eq!(store.projects().unwrap().len(), 2, "projects stay");
}

/// Unknown names and ids read as `None` or an empty list, not an error.
pub fn unknown_ids_read_as_nothing<S: ProjectStore>(make: &dyn Fn() -> S) {
    const NOPE: &str = "01ARZ3NDEKTSV4RRFFQ69G5FAV";
    let store = make();
    assert_eq!(store.project("nope").unwrap(), None);
    assert!(store.projects().unwrap().is_empty());
    assert!(store.resources().unwrap().is_empty());
    assert_eq!(store.resource(NOPE).unwrap(), None);
    assert_eq!(store.resource_by_path("/nope").unwrap(), None);
    assert!(store.project_resources(NOPE).unwrap().is_empty());
    assert!(store.resource_projects(NOPE).unwrap().is_empty());
    assert!(!store.unlink_resource(NOPE, NOPE).unwrap());
    assert_eq!(store.project_context(NOPE).unwrap(), None);
}

fn settings(hot_max_tokens: i64) -> ProjectContextSettings {
    ProjectContextSettings::builder().hot_max_tokens(hot_max_tokens).build().unwrap()
}

/// The context policy and settings read back equal (views rebuilt), are
/// replaced together, and cannot be set for an unknown project.
pub fn project_context_round_trips_and_is_replaced_whole<S: ProjectStore>(make: &dyn Fn() -> S) {
    let store = make();
    let p = store.create_project("web").unwrap();
    assert_eq!(store.project_context(&p.project_id).unwrap(), None);

    let view = ContextView::builder().exclude_paths(["target"]).build().unwrap();
    let policy = ProjectContextPolicy::new("web").unwrap().with_view(Phase::Execute, view);
    store.set_project_context(&p.project_id, &policy, &settings(100)).unwrap();
    let (read_policy, read_settings) = store.project_context(&p.project_id).unwrap().unwrap();
    assert_eq!((&read_policy, &read_settings), (&policy, &settings(100)));
    assert!(!read_policy.allows_path(Phase::Apply, "target/x"), "views are rebuilt on read");

    let empty = ProjectContextPolicy::new("web").unwrap();
    store.set_project_context(&p.project_id, &empty, &settings(200)).unwrap();
    assert_eq!(store.project_context(&p.project_id).unwrap(), Some((empty, settings(200))));

    let unknown = store.set_project_context("NOPE", &policy, &settings(1)).unwrap_err();
    assert!(matches!(&unknown, StoreError::NotFound { what: "project", name } if name == "NOPE"), "{unknown:?}");
}
