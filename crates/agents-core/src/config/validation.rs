//! The checks the types do not express, and the errors every layer reports.

use std::fmt;

use super::layering::{Origin, dotted};
use super::schema::Config;

/// A line and column in a file, both counted from 1; columns count characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` of `text`.
    pub(super) fn at(text: &str, offset: usize) -> Position {
        let before = &text[..text.floor_char_boundary(offset)];
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Position { line: before.matches('\n').count() + 1, column: before[line_start..].chars().count() + 1 }
    }
}

/// Where a setting was made: its origin and, in a file, its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub origin: Origin,
    pub position: Option<Position>,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(Position { line, column }) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        Ok(())
    }
}

/// A configuration that cannot be used, with the place and key at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The text is not TOML, or the key of a flag is not a TOML key.
    #[error("{place}: {message}")]
    Syntax { place: Place, message: String },
    /// A key the schema does not have.
    #[error("{place}: unknown key `{key}`{}", expected_hint(expected))]
    UnknownKey { place: Place, key: String, expected: Vec<String> },
    /// A value of the wrong type, or a name that is not one of the choices.
    #[error("{place}: {key}: {message}")]
    WrongType { place: Place, key: String, message: String },
    /// A value of the right type outside its range.
    #[error("{place}: {key} {message}")]
    OutOfRange { place: Place, key: String, message: String },
}

fn expected_hint(expected: &[String]) -> String {
    match expected {
        [] => String::new(),
        [one] => format!(", expected `{one}`"),
        many => {
            format!(", expected one of {}", many.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", "))
        }
    }
}

/// A value outside its range: the dotted key and what is wrong with it.
pub(super) struct Violation {
    pub(super) key: String,
    pub(super) message: String,
}

fn violation(key: impl Into<String>, message: impl Into<String>) -> Violation {
    Violation { key: key.into(), message: message.into() }
}

/// The range checks that the types do not express.
pub(super) fn validate(config: &Config) -> Result<(), Violation> {
    let context = &config.context;
    at_least_one("context.hot.max-tokens", context.hot.max_tokens)?;
    at_least_one("context.warm.max-decisions", context.warm.max_decisions)?;
    at_least_one("context.warm.retention-hours", context.warm.retention_hours)?;
    at_least_one("context.cold.max-decisions", context.cold.max_decisions)?;
    at_least_one("context.cold.retention-days", context.cold.retention_days)?;
    at_least_one("context.strategies.arce.max-rounds", context.strategies.arce.max_rounds)?;
    at_least_one(
        "context.strategies.breadth-depth-navigator.max-hops",
        context.strategies.breadth_depth_navigator.max_hops,
    )?;
    at_least_one("context.file.max-size", context.file.max_size)?;
    if context.file.max_total_size < context.file.max_size {
        return Err(violation(
            "context.file.max-total-size",
            format!(
                "must be at least context.file.max-size ({}), got {}",
                context.file.max_size, context.file.max_total_size
            ),
        ));
    }
    at_least_one("context.budget.min-useful-budget", context.budget.min_useful_budget)?;
    at_least_one("context.executor.timeout-secs", context.executor.timeout_secs)?;
    at_least_one("context.executor.max-workers", context.executor.max_workers)?;
    at_least_one("context.executor.circuit-breaker-threshold", context.executor.circuit_breaker_threshold)?;
    unit_interval("context.query.min-relevance", context.query.min_relevance)?;
    unit_interval("context.budget.refresh-threshold", context.budget.refresh_threshold)?;
    unit_interval("context.budget.skeleton-ratio", context.budget.skeleton_ratio)?;

    let weights = &context.scorer;
    for (name, weight) in [
        ("relevance", weights.relevance),
        ("hierarchy", weights.hierarchy),
        ("quality", weights.quality),
        ("recency", weights.recency),
    ] {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(violation(
                format!("context.scorer.{name}"),
                format!("must be a non-negative number, got {weight}"),
            ));
        }
    }
    if weights.relevance + weights.hierarchy + weights.quality + weights.recency <= 0.0 {
        return Err(violation("context.scorer", "weights must not all be 0"));
    }

    for phase in [crate::policy::Phase::Strategize, crate::policy::Phase::Execute, crate::policy::Phase::Apply] {
        let Some(defaults) = context.phases.of(phase) else { continue };
        names(&format!("context.phases.{phase}.strategies"), &defaults.strategies, "strategy")?;
        let tiers = &defaults.tiers;
        if let Some(twice) = tiers.iter().enumerate().find_map(|(i, tier)| tiers[..i].contains(tier).then_some(tier)) {
            return Err(violation(format!("context.phases.{phase}.tiers"), format!("names tier `{twice}` twice")));
        }
    }

    let enabled = &context.strategies.enabled;
    if enabled.is_empty() {
        return Err(violation("context.strategies.enabled", "must name at least one strategy"));
    }
    names("context.strategies.enabled", enabled, "strategy")?;
    for (component, implementation) in context.pipeline.components() {
        if implementation.trim().is_empty() {
            return Err(violation(format!("context.pipeline.{component}"), "must name an implementation"));
        }
    }

    for (name, spec) in &config.models.specs {
        at_least_one(dotted(&["models", name, "context-window"]), spec.context_window)?;
    }
    if config.model(&config.models.default_model).is_none() {
        return Err(violation(
            "models.default-model",
            format!("names `{}`, which is not a model in [models]", config.models.default_model),
        ));
    }

    names("index.include", &config.index.include, "pattern")?;
    names("index.exclude", &config.index.exclude, "pattern")?;
    if config.global_vault.as_deref().is_some_and(|vault| vault.trim().is_empty()) {
        return Err(violation("global-vault", "must not be empty"));
    }
    // The value is never quoted back: it may hold a password.
    if let Some(url) = &config.store.url
        && !(url.starts_with("postgres://") || url.starts_with("postgresql://"))
    {
        return Err(violation("store.url", "must be a PostgreSQL URL: postgres://user:password@host:port/database"));
    }
    Ok(())
}

fn at_least_one<T>(key: impl Into<String>, value: T) -> Result<(), Violation>
where
    T: PartialOrd + From<u8> + fmt::Display,
{
    if value >= T::from(1) { Ok(()) } else { Err(violation(key, format!("must be at least 1, got {value}"))) }
}

fn unit_interval(key: &str, value: f64) -> Result<(), Violation> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(violation(key, format!("must be between 0 and 1, got {value}")))
    }
}

/// A list of names: none empty, none twice.
fn names(key: &str, list: &[String], what: &str) -> Result<(), Violation> {
    for (index, name) in list.iter().enumerate() {
        if name.trim().is_empty() {
            return Err(violation(key, format!("must not contain an empty {what}")));
        }
        if list[..index].contains(name) {
            return Err(violation(key, format!("names {what} `{name}` twice")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::*;
    use crate::config::*;

    #[test]
    fn unknown_key_names_key_file_and_position() {
        let text = "[context.hot]\nmax-tokens = 1000\n\n[context.warm]\nmax-decisons = 5\n";
        assert_eq!(
            rejection(text),
            "config.toml:5:1: unknown key `context.warm.max-decisons`, \
             expected one of `max-decisions`, `retention-hours`"
        );
        assert_eq!(
            rejection("context.hot.max-tokns = 1\n"),
            "config.toml:1:13: unknown key `context.hot.max-tokns`, expected `max-tokens`"
        );
        assert!(rejection("[contxt]\n").starts_with("config.toml:1:2: unknown key `contxt`, expected one of"));
        assert!(
            rejection("[models.gpt-4o]\nwindow = 1\n")
                .starts_with("config.toml:2:1: unknown key `models.gpt-4o.window`")
        );
    }

    #[test]
    fn wrong_type_names_key_and_position() {
        assert_eq!(
            rejection("[context]\nhot.max-tokens = \"lots\"\n"),
            "config.toml:2:18: context.hot.max-tokens: invalid type: string \"lots\", expected usize"
        );
        assert_eq!(
            rejection("[context.hot]\nmax-tokens = -1\n"),
            "config.toml:2:14: context.hot.max-tokens: invalid value: integer `-1`, expected usize"
        );
        let error = rejection("[context.strategies]\nenabled = [\"simple-keyword\", 3]\n");
        assert!(error.starts_with("config.toml:2:"), "{error}");
        assert!(error.contains("context.strategies.enabled: invalid type: integer `3`"), "{error}");
        let error = rejection("[tokenizer]\nencoding = \"p50k_base\"\n");
        assert!(error.starts_with("config.toml:2:12: tokenizer.encoding: unknown variant `p50k_base`"), "{error}");
        let error = rejection("[tokenizer]\nimplementation = \"tiktoken\"\n");
        assert!(error.contains("tokenizer.implementation: unknown variant `tiktoken`"), "{error}");
        assert_eq!(
            rejection("[models]\ngpt-4o = 5\n"),
            "config.toml:2:10: models.gpt-4o: invalid type: integer `5`, expected struct ModelSpec"
        );
        assert_eq!(rejection("\ncontext = []\n"), "config.toml:2:1: context: expected a table");
        let error = rejection("[models.my-model]\nencoding = \"o200k_base\"\n");
        assert!(error.contains("models.my-model: missing field `context-window`"), "{error}");
    }

    #[test]
    fn syntax_error_has_a_position() {
        let error = rejection("[context.hot]\nmax-tokens = = 3\n");
        assert!(error.starts_with("config.toml:2:"), "{error}");
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let cases: &[(&str, &str, &str)] = &[
            ("context.hot.max-tokens", "0", "must be at least 1, got 0"),
            ("context.warm.max-decisions", "0", "must be at least 1, got 0"),
            ("context.warm.retention-hours", "0", "must be at least 1, got 0"),
            ("context.cold.max-decisions", "0", "must be at least 1, got 0"),
            ("context.cold.retention-days", "0", "must be at least 1, got 0"),
            ("context.strategies.arce.max-rounds", "0", "must be at least 1, got 0"),
            ("context.strategies.breadth-depth-navigator.max-hops", "0", "must be at least 1, got 0"),
            ("context.file.max-size", "0", "must be at least 1, got 0"),
            ("context.file.max-total-size", "10", "must be at least context.file.max-size (1048576), got 10"),
            ("context.budget.min-useful-budget", "0", "must be at least 1, got 0"),
            ("context.executor.timeout-secs", "0", "must be at least 1, got 0"),
            ("context.executor.max-workers", "0", "must be at least 1, got 0"),
            ("context.executor.circuit-breaker-threshold", "0", "must be at least 1, got 0"),
            ("context.query.min-relevance", "1.5", "must be between 0 and 1, got 1.5"),
            ("context.budget.refresh-threshold", "-0.1", "must be between 0 and 1, got -0.1"),
            ("context.budget.skeleton-ratio", "1.5", "must be between 0 and 1, got 1.5"),
            ("context.budget.skeleton-ratio", "nan", "must be between 0 and 1, got NaN"),
            ("context.scorer.recency", "-1", "must be a non-negative number, got -1"),
            ("context.strategies.enabled", "[]", "must name at least one strategy"),
            ("context.strategies.enabled", "[\"\"]", "must not contain an empty strategy"),
            ("context.strategies.enabled", "[\"arce\", \"arce\"]", "names strategy `arce` twice"),
            ("context.pipeline.budget-packer", "\"\"", "must name an implementation"),
            ("models.gpt-4o.context-window", "0", "must be at least 1, got 0"),
            ("models.default-model", "\"gpt-9\"", "names `gpt-9`, which is not a model in [models]"),
            ("index.exclude", "[\"\"]", "must not contain an empty pattern"),
            ("global-vault", "\" \"", "must not be empty"),
            (
                "store.url",
                "\"mysql://x:secret@h/db\"",
                "must be a PostgreSQL URL: postgres://user:password@host:port/database",
            ),
        ];
        for (key, value, message) in cases {
            // From a file: the message names the file and the key's position.
            let (table, leaf) = key.rsplit_once('.').unwrap_or(("", key));
            let text = if table.is_empty() {
                format!("{leaf} = {value}\n")
            } else {
                format!("# comment\n[{table}]\n{leaf} = {value}\n")
            };
            let expected = if table.is_empty() { "config.toml:1:1" } else { "config.toml:3:1" };
            assert_eq!(rejection(&text), format!("{expected}: {key} {message}"));
            // From a flag: the message names the flag.
            let mut resolved = ResolvedConfig::default();
            let error = resolved.set_override(key, value, Origin::Flag("--set".into())).unwrap_err();
            assert_eq!(error.to_string(), format!("flag --set: {key} {message}"));
            assert_eq!(resolved, ResolvedConfig::default(), "a rejected override changes nothing");
        }
        let error = rejection("[context.scorer]\nrelevance = 0\nhierarchy = 0\nquality = 0\nrecency = 0\n");
        assert_eq!(error, "config.toml: context.scorer weights must not all be 0");
    }

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(Position::at("ab\ncé\nd", 0), Position { line: 1, column: 1 });
        assert_eq!(Position::at("ab\ncé\nd", 3), Position { line: 2, column: 1 });
        assert_eq!(Position::at("ab\ncé\nd", 7), Position { line: 3, column: 1 });
        assert_eq!(Position::at("é=", 2), Position { line: 1, column: 2 });
    }
}
