//! The conformance suite: the role traits' guarantees, written once and run
//! against every store implementation (tantivy's pattern).
//!
//! Each role has a module of cases; a case is a public function taking a
//! factory that makes a fresh, empty store, and panics (like any test) when
//! the store breaks a guarantee its trait documents. A case may use other
//! roles to set up what it reads (a code graph is written through the file
//! index); its bounds say which. [`crate::store_conformance!`] expands to one
//! `#[test]` per case:
//!
//! ```
//! use agents_store::SqliteStore;
//!
//! agents_store::store_conformance!(|| SqliteStore::open_in_memory().unwrap());
//! # fn main() {}
//! ```
//!
//! `store_conformance!(store: make)` runs the five roles of
//! [`crate::Store`] only, `store_conformance!(tiers: make)` the
//! [`crate::WarmTierStore`] cases only. The factory expression is evaluated
//! once per test and may own what its stores need (a temporary directory,
//! moved into the closure). The module exists with the `conformance` cargo
//! feature (and in this crate's own tests); it is test code, so a failed
//! check panics.

pub mod code_graph;
pub mod file_index;
pub mod plans;
pub mod projects;
pub mod search_state;
pub mod tiers;

use agents_core::indexing::{FileRecord, IndexMetadata};

use crate::{FileIndexStore, IndexCommit, ProjectStore, Resource};

/// Expands to one `#[test]` per conformance case, each calling the case with
/// the factory `$make` (a closure making a fresh, empty store), grouped in
/// one module per role (`projects::...`, `file_index::...`).
#[macro_export]
macro_rules! store_conformance {
    (store: $make:expr) => {
        $crate::store_conformance!(@cases $make;
            projects {
                projects_are_unique_and_sorted,
                resource_ids_derive_from_the_path,
                linking_is_idempotent_and_listings_are_sorted,
                last_unlink_deletes_the_resource_and_its_index,
                unknown_ids_read_as_nothing,
                project_context_round_trips_and_is_replaced_whole,
            }
            file_index {
                ensure_index_is_pending_and_idempotent,
                status_transitions_and_lookup,
                commit_replaces_files_and_marks_ready,
                a_rejected_commit_changes_nothing,
                skipped_files_are_replaced_whole,
                remove_index_deletes_files_and_report,
                index_write_dropped_without_finish_leaves_nothing,
                index_write_sees_its_own_rows_and_finish_publishes_them,
                index_write_reports_reshaped_symbols_and_finds_what_reads_them,
                readers_never_see_half_a_run,
            }
            code_graph {
                nodes_read_back_in_their_orders,
                refs_read_back_in_their_orders,
                neighbors_and_dependencies_equal_their_definitions,
                a_changed_node_gets_a_new_revision,
                refs_affected_by_a_change_are_found_and_rebound,
                refs_importing_a_file_are_found,
                stats_count_by_language_and_kind,
                unknown_ids_read_as_nothing,
            }
            plans {
                plans_keep_their_phase_and_project,
                an_unknown_parent_or_project_is_named,
                decisions_are_kept_per_plan_oldest_first,
                payloads_replace_the_one_before,
            }
            search_state {
                search_state_round_trips_sorted_with_its_digest,
                backends_and_indexes_are_independent,
                state_goes_with_its_index,
            }
        );
    };
    (tiers: $make:expr) => {
        $crate::store_conformance!(@cases $make;
            tiers {
                warm_rows_round_trip_and_track_access,
                a_put_replaces_the_fragment,
                entries_tie_by_id_and_fragments_filter_by_project,
                unknown_ids_read_as_nothing,
            }
        );
    };
    (@cases $make:expr; $($role:ident { $($case:ident),* $(,)? })*) => {
        $(
            mod $role {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    fn $case() {
                        let make = $make;
                        $crate::conformance::$role::$case(&make);
                    }
                )*
            }
        )*
    };
    ($make:expr) => {
        $crate::store_conformance!(store: $make);
        $crate::store_conformance!(tiers: $make);
    };
}

/// A python file record whose hash is `hash` repeated.
pub(crate) fn file(path: &str, hash: char, tokens: u64) -> FileRecord {
    FileRecord::new(
        path.into(),
        hash.to_string().repeat(64),
        tokens,
        tokens * 4,
        "python".into(),
        "2026-01-01T00:00:00.000000000Z".into(),
    )
    .expect("a valid file record")
}

/// A commit of `upserts` (python, counts from the records).
pub(crate) fn commit_of(upserts: Vec<FileRecord>) -> IndexCommit {
    IndexCommit {
        file_count: upserts.len() as u64,
        token_estimate: upserts.iter().map(|f| f.token_count).sum(),
        primary_language: "python".into(),
        upserts,
        ..IndexCommit::default()
    }
}

/// A project `demo` with the resource at `path` linked and its (pending) index.
pub(crate) fn indexed<S: ProjectStore + FileIndexStore + ?Sized>(store: &S, path: &str) -> (Resource, IndexMetadata) {
    let project = match store.project("demo").unwrap() {
        Some(p) => p,
        None => store.create_project("demo").unwrap(),
    };
    let resource = store.link_resource(&project.project_id, path, "demo").unwrap();
    let index = store.ensure_index(&resource.resource_id).unwrap();
    (resource, index)
}
