//! Exit codes and the one-line rendering of errors.
//!
//! Bad input (a path that is not there, an invalid name or glob, a broken
//! configuration file) exits 2; operational failures exit 1.

use agents_acms::indexing::IndexError;
use agents_acms::projects::ProjectError;
use agents_core::config::ConfigError;
use agents_engine::EngineError;

pub const SUCCESS: u8 = 0;
pub const FAILURE: u8 = 1;
pub const USAGE: u8 = 2;

/// An error caused by what the user asked for, raised by the CLI itself.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The error and its causes on one line, without repeating a cause that the
/// message already includes.
pub fn render(err: &anyhow::Error) -> String {
    let mut out = err.to_string();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

pub fn code_for(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<UsageError>() || cause.is::<ConfigError>() {
            return USAGE;
        }
        if let Some(e) = cause.downcast_ref::<ProjectError>() {
            return project_code(e);
        }
        if let Some(e) = cause.downcast_ref::<IndexError>() {
            return index_code(e);
        }
        if let Some(agents_acms::graph::GraphError::NotFound(_)) = cause.downcast_ref() {
            return USAGE;
        }
        if let Some(e) = cause.downcast_ref::<agents_engine::knowledge::KnowledgeError>() {
            return if e.is_bad_input() { USAGE } else { FAILURE };
        }
        if let Some(e) = cause.downcast_ref::<EngineError>() {
            return match e {
                EngineError::Project(e) => project_code(e),
                EngineError::Index(e) => index_code(e),
                EngineError::Query(agents_acms::query::QueryError::EmptyQuery) => USAGE,
                EngineError::PlanNotFound(_) => USAGE,
                EngineError::Strategy(agents_acms::retrieval::registry::RegistryError::Exhausted { .. }) => FAILURE,
                EngineError::Strategy(_) => USAGE,
                EngineError::Store(_) | EngineError::Query(_) => FAILURE,
                EngineError::UnknownModel { .. }
                | EngineError::WindowTooSmall { .. }
                | EngineError::ZeroMaxTokens { .. }
                | EngineError::Invalid(_)
                | EngineError::NoResource(_)
                | EngineError::UnknownDepth { .. }
                | EngineError::AmbiguousDepth { .. }
                | EngineError::NotIndexed { .. }
                | EngineError::PlanRefused(_) => USAGE,
                EngineError::Rdf(_) => FAILURE,
                EngineError::Knowledge(e) => {
                    if e.is_bad_input() {
                        USAGE
                    } else {
                        FAILURE
                    }
                }
                EngineError::Tier(_) => FAILURE,
                EngineError::Pipeline(e) => {
                    use agents_acms::pipeline::PipelineError as P;
                    match e {
                        P::NoStrategyRan(_) | P::MissingBackend { .. } | P::Invalid(_) => FAILURE,
                        _ => USAGE,
                    }
                }
            };
        }
    }
    FAILURE
}

fn project_code(e: &ProjectError) -> u8 {
    match e {
        ProjectError::InvalidName(_)
        | ProjectError::UnknownProject(_)
        | ProjectError::NotFound(_)
        | ProjectError::NotADirectory(_)
        | ProjectError::NotUtf8(_)
        | ProjectError::NotLinked { .. } => USAGE,
        ProjectError::Store(agents_store::StoreError::AlreadyExists { .. }) => USAGE,
        ProjectError::Io { .. } | ProjectError::Store(_) => FAILURE,
    }
}

fn index_code(e: &IndexError) -> u8 {
    match e {
        IndexError::NotFound(_) | IndexError::NotADirectory(_) | IndexError::BadGlob { .. } => USAGE,
        IndexError::Busy { .. } | IndexError::Io { .. } | IndexError::Store(_) => FAILURE,
    }
}
