//! UKO, the Unified Knowledge Ontology: the ontology, its loader, the
//! tree-sitter code analyzers and detail-depth rendering.
//!
//! Works on `(path, text)` values: nothing here reads files or touches the
//! store. The indexer (in `agents-acms`) feeds files in and persists what
//! comes out.

pub mod lang;
pub mod language;
pub mod model;
pub mod ontology;
pub mod rdf;
pub mod render;
pub mod resolve;
pub mod role;
