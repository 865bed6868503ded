//! The domain model of the `agents` context engine.
//!
//! Pure values and the rules that make them valid: fragments, budgets,
//! context requests, policies and project context settings, tiers, index
//! records, configuration, and the token-counting service. Nothing here
//! touches the filesystem, a database, a terminal or the network; every
//! constructor enforces the spec's constraints and fails with a
//! [`ValidationError`] naming model and field.

pub mod config;
pub mod digest;
pub mod error;
pub mod fragment;
pub mod ids;
pub mod indexing;
pub mod memory;
pub mod policy;
pub mod project_context;
pub mod request;
pub mod text_arena;
pub mod tier;
pub mod tokens;

pub use error::{Validated, ValidationError};
