//! AKMS, the knowledge half of `agents`: knowledge nodes (Markdown files with
//! YAML frontmatter), their schema and validation by layer, the local overlay
//! and the propagation config, and the compiler that merges them into a
//! NetworkX node-link `graph.json`.
//!
//! The flow: [`vault`] finds the files and keeps every path a node names
//! inside its layer's root; [`schema`], [`overlay`] and [`config`] parse and
//! validate (collecting every problem as a [`Diagnostic`] naming file, line and
//! field); [`compile`] runs the five-step merge and writes `graph.json`
//! atomically; [`mirror`] generates the code mirror of source files (with
//! the docstring-drift check of [`drift`]); [`evidence`] and [`update`] fold
//! AgentMemory and PCD evidence into the overlay and local nodes, [`health`]
//! reports on the result; [`migrate`] upgrades older sources to the current schema;
//! [`lock`] keeps writers of one repository apart and replays an update a
//! killed process left half written. The global vault is only ever read, and
//! every file is read through [`bounded`] (regular files inside their root,
//! under a size cap).
//!
//! This crate knows nothing of clap or terminal output; configuration (the
//! global vault's directory) is resolved by the caller and passed in.

pub mod bounded;
pub mod compile;
pub mod config;
pub mod diag;
pub mod drift;
pub mod evidence;
pub mod formula;
pub mod graph;
pub mod health;
pub mod loadout;
pub mod lock;
pub mod migrate;
pub mod mirror;
pub mod overlay;
pub mod query;
pub mod schema;
pub mod search;
pub mod tags;
pub mod update;
pub mod vault;
mod yaml;

pub use compile::{CompileOptions, Compiled, build, check, check_paths, compile, read_config};
pub use config::{DEFAULT_CONFIG_YAML, PropagationConfig};
pub use diag::{AkmsError, Diagnostic, ProblemKind, Severity};
pub use graph::{CompiledGraph, GraphError, GraphLink, GraphNode};
pub use mirror::{MirrorOptions, MirrorReport, changed_files, mirror_files};
pub use vault::Layout;
pub use yaml::{
    Frontmatter, SCHEMA_VERSION, parse_mapping as parse_yaml_mapping, split_frontmatter, to_json as yaml_to_json,
};
