//! The one validation error of the domain model.
//!
//! Every constructor in this crate checks the spec's constraints and returns
//! this error naming the model and field that broke them, so a caller can
//! report "which value, where" without parsing a message.

/// A constraint of the spec was violated while building a domain value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {model}.{field}: {message}")]
pub struct ValidationError {
    /// The model being built, e.g. `ContextFragment`.
    pub model: &'static str,
    /// The offending field, e.g. `relevance_score`.
    pub field: &'static str,
    /// What is wrong, lowercase, no trailing period.
    pub message: String,
}

impl ValidationError {
    pub fn new(model: &'static str, field: &'static str, message: impl Into<String>) -> Self {
        ValidationError { model, field, message: message.into() }
    }
}

/// Shorthand for results of domain constructors.
pub type Validated<T> = Result<T, ValidationError>;

/// Checks that `value` lies in `[0, 1]` (and is not NaN).
pub fn check_unit_interval(model: &'static str, field: &'static str, value: f64) -> Validated<()> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ValidationError::new(model, field, format!("must be between 0.0 and 1.0, got {value}")))
    }
}
