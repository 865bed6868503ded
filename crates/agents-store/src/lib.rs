//! The store: every byte of engine state that lives in a database.
//!
//! This is the only crate that speaks SQL. Callers see narrow traits, one per
//! role, so a shared server database (PostgreSQL, planned for teams) can be a
//! second implementation without touching the services:
//!
//! - [`ProjectStore`]: projects, resources and project context policies;
//! - [`FileIndexStore`]: repository indexes, their file lists and the
//!   transaction of an indexing run ([`IndexWrite`]);
//! - [`CodeGraphStore`]: reads of the UKO code graph (nodes, revisions,
//!   references);
//! - [`PlanStore`]: plans, decisions and assembled payloads;
//! - [`SearchStateStore`]: what each search index holds;
//! - [`WarmTierStore`]: the warm context tier (kept apart: the tier service
//!   needs nothing else).
//!
//! [`Store`] is the union of the first five, what the services hold as
//! `Arc<dyn Store>`; any type implementing the five is a [`Store`].
//! Each trait documents its guarantees, and the `conformance` module (cargo
//! feature `conformance`) checks them against any implementation.
//! [`SqliteStore`] is the embedded default: one `agents.db` file under
//! `$AGENTS_HOME`, WAL mode, versioned migrations, every multi-row change
//! inside one transaction.
//!
//! Invariants:
//! - `repo_indexes` and `indexed_files` have exactly the columns of the spec's
//!   Database Schema; extra state lives in extra tables.
//! - a file list is replaced only by [`FileIndexStore::commit_index`] (or
//!   [`IndexWrite::finish`]), atomically with the index row's transition to
//!   `ready`; a process killed before that leaves the previous file list
//!   intact.

mod code_graph;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
mod file_index;
mod migrations;
mod plans;
mod projects;
mod search_state;
mod sqlite;
mod tiers;

/// Atomic writes are agents-fs's; re-exported for the store's callers.
pub use agents_fs::atomic_write;
pub use code_graph::{
    CodeGraphStore, Rebinding, UkoCommit, UkoFile, UkoNode, UkoNodeRecord, UkoRef, UkoStatsRows, UkoSymbol,
    neighbors_from_parts,
};
pub use error::StoreError;
pub use file_index::{
    Change, FileIndexStore, IndexCommit, IndexWrite, Naming, NamingSets, RefFacts, Reshaped, SkippedFile, brings,
    loose, names_word, reads_through,
};
pub use plans::{Plan, PlanDecision, PlanStore};
pub use projects::{Project, ProjectStore, Resource};
pub use search_state::SearchStateStore;
pub use sqlite::SqliteStore;
pub use tiers::{TierEntry, WarmTierStore};

/// Everything the services use of the database: the union of the role
/// traits. Implemented for every type that implements them all, so a new
/// store implements the roles and nothing else; `Arc<dyn Store>` calls every
/// role's methods.
pub trait Store: ProjectStore + FileIndexStore + CodeGraphStore + PlanStore + SearchStateStore + Send + Sync {}

impl<T> Store for T where T: ProjectStore + FileIndexStore + CodeGraphStore + PlanStore + SearchStateStore + Send + Sync {}
