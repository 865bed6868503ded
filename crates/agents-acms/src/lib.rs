//! ACMS services: the context-management half of the engine.
//!
//! Today this holds repository indexing ([`indexing::RepoIndexingService`]):
//! walking a resource, detecting languages, hashing and counting tokens, and
//! persisting the result through the store, incrementally. Strategies, the
//! assembly pipeline, tiers and policies join it as they land. Nothing here
//! knows about clap or terminals: progress goes through [`indexing::Progress`].

pub mod graph;
pub mod indexing;
/// Language detection lives with the analyzers (`agents_uko::language`) so the
/// code mirror of `agents-akms` detects languages the way indexing does.
pub use agents_uko::language;
pub mod pipeline;
pub mod projects;
pub mod query;
pub mod retrieval;
pub mod tiers;
pub mod uko_index;
mod walk;

/// The indexers' advisory locks are agents-fs's.
pub use agents_fs::ResourceLock;
pub use indexing::{IndexError, IndexOptions, Progress, RepoIndexingService};
