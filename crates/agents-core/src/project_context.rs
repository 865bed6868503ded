//! A project's ACMS pipeline settings: what `agents project context set` keeps
//! next to the project's [`ProjectContextPolicy`](crate::policy::ProjectContextPolicy).
//!
//! [`ProjectContextSettings`] holds the tier capacities (hot tokens, warm and
//! cold decisions), the preferred retrieval strategies, the default breadth,
//! depth and temporal scope of the project's context requests, the skeleton
//! ratio a child plan inherits, and whether context refreshes itself when a
//! resource changes. The default depth and the skeleton ratio are optional:
//! unset, the command's default depth and `context.budget.skeleton-ratio` of
//! the configuration apply; set, the project's value wins over both. [`Default`] is the spec's defaults; every other value is
//! built through [`ProjectContextSettingsBuilder`], which is also the serde
//! mirror, so stored JSON and code pass the same checks.

use serde::{Deserialize, Serialize};

use crate::error::{Validated, ValidationError, check_unit_interval};
use crate::request::{Depth, TemporalScope};

/// The names of the built-in retrieval strategies, in the spec's order.
pub const STRATEGY_NAMES: [&str; 6] = [
    "simple-keyword",
    "semantic-embedding",
    "breadth-depth-navigator",
    "arce",
    "temporal-archaeology",
    "plan-decision-context",
];

const MODEL: &str = "ProjectContextSettings";

/// A project's ACMS pipeline settings, validated.
///
/// Invariants: `hot_max_tokens`, `warm_max_decisions` and
/// `cold_max_decisions` are at least 1; `skeleton_ratio` lies in `[0, 1]`;
/// `strategies` holds names from [`STRATEGY_NAMES`], each at most once, in
/// order of preference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ProjectContextSettingsBuilder")]
pub struct ProjectContextSettings {
    hot_max_tokens: u64,
    warm_max_decisions: u64,
    cold_max_decisions: u64,
    strategies: Vec<String>,
    default_breadth: u32,
    default_depth: Option<Depth>,
    skeleton_ratio: Option<f64>,
    temporal_scope: TemporalScope,
    auto_refresh: bool,
}

/// Parts of [`ProjectContextSettings`] before validation, starting at the
/// spec's defaults; also its serde mirror (every field optional, unknown
/// fields rejected). Counts are signed so that zero and negative values reach
/// validation and are reported by field.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProjectContextSettingsBuilder {
    hot_max_tokens: i64,
    warm_max_decisions: i64,
    cold_max_decisions: i64,
    strategies: Vec<String>,
    default_breadth: i64,
    default_depth: Option<Depth>,
    skeleton_ratio: Option<f64>,
    temporal_scope: TemporalScope,
    auto_refresh: bool,
}

impl Default for ProjectContextSettingsBuilder {
    fn default() -> Self {
        ProjectContextSettingsBuilder {
            hot_max_tokens: ProjectContextSettings::DEFAULT_HOT_MAX_TOKENS as i64,
            warm_max_decisions: ProjectContextSettings::DEFAULT_WARM_MAX_DECISIONS as i64,
            cold_max_decisions: ProjectContextSettings::DEFAULT_COLD_MAX_DECISIONS as i64,
            strategies: Vec::new(),
            default_breadth: ProjectContextSettings::DEFAULT_BREADTH.into(),
            default_depth: None,
            skeleton_ratio: None,
            temporal_scope: TemporalScope::default(),
            auto_refresh: true,
        }
    }
}

fn at_least_one(field: &'static str, value: i64) -> Validated<u64> {
    u64::try_from(value)
        .ok()
        .filter(|&v| v >= 1)
        .ok_or_else(|| ValidationError::new(MODEL, field, format!("must be at least 1, got {value}")))
}

/// Checks that every name is a built-in strategy and none is given twice.
fn check_strategies(names: &[String]) -> Validated<()> {
    for (index, name) in names.iter().enumerate() {
        if !STRATEGY_NAMES.contains(&name.as_str()) {
            return Err(ValidationError::new(
                MODEL,
                "strategies",
                format!("unknown strategy `{name}`, expected one of {}", STRATEGY_NAMES.join(", ")),
            ));
        }
        if names[..index].contains(name) {
            return Err(ValidationError::new(MODEL, "strategies", format!("names strategy `{name}` twice")));
        }
    }
    Ok(())
}

impl ProjectContextSettingsBuilder {
    /// Token capacity of the hot tier (default 8000, at least 1).
    pub fn hot_max_tokens(mut self, tokens: i64) -> Self {
        self.hot_max_tokens = tokens;
        self
    }

    /// Decision capacity of the warm tier (default 500, at least 1).
    pub fn warm_max_decisions(mut self, decisions: i64) -> Self {
        self.warm_max_decisions = decisions;
        self
    }

    /// Decision capacity of the cold tier (default 5000, at least 1).
    pub fn cold_max_decisions(mut self, decisions: i64) -> Self {
        self.cold_max_decisions = decisions;
        self
    }

    /// Preferred strategies, best first (default none: the registry chooses).
    pub fn strategies(mut self, names: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.strategies = names.into_iter().map(Into::into).collect();
        self
    }

    /// Default dependency hops from the focus (default 2).
    pub fn default_breadth(mut self, breadth: i64) -> Self {
        self.default_breadth = breadth;
        self
    }

    /// The depth the project's queries start from (default unset: the
    /// command's own default).
    pub fn default_depth(mut self, depth: Depth) -> Self {
        self.default_depth = Some(depth);
        self
    }

    /// Share of a child plan's budget given to its parent's skeleton, in
    /// `[0, 1]` (default unset: `context.budget.skeleton-ratio`).
    pub fn skeleton_ratio(mut self, ratio: f64) -> Self {
        self.skeleton_ratio = Some(ratio);
        self
    }

    /// Default temporal scope (default current).
    pub fn temporal_scope(mut self, scope: TemporalScope) -> Self {
        self.temporal_scope = scope;
        self
    }

    /// Whether context refreshes when a resource changes (default true).
    pub fn auto_refresh(mut self, auto_refresh: bool) -> Self {
        self.auto_refresh = auto_refresh;
        self
    }

    /// Checks every constraint and builds the settings.
    pub fn build(self) -> Validated<ProjectContextSettings> {
        let hot_max_tokens = at_least_one("hot_max_tokens", self.hot_max_tokens)?;
        let warm_max_decisions = at_least_one("warm_max_decisions", self.warm_max_decisions)?;
        let cold_max_decisions = at_least_one("cold_max_decisions", self.cold_max_decisions)?;
        check_strategies(&self.strategies)?;
        let default_breadth = u32::try_from(self.default_breadth).map_err(|_| {
            ValidationError::new(
                MODEL,
                "default_breadth",
                format!("must be between 0 and {}, got {}", u32::MAX, self.default_breadth),
            )
        })?;
        if let Some(ratio) = self.skeleton_ratio {
            check_unit_interval(MODEL, "skeleton_ratio", ratio)?;
        }
        Ok(ProjectContextSettings {
            hot_max_tokens,
            warm_max_decisions,
            cold_max_decisions,
            strategies: self.strategies,
            default_breadth,
            default_depth: self.default_depth,
            skeleton_ratio: self.skeleton_ratio,
            temporal_scope: self.temporal_scope,
            auto_refresh: self.auto_refresh,
        })
    }
}

impl TryFrom<ProjectContextSettingsBuilder> for ProjectContextSettings {
    type Error = ValidationError;

    fn try_from(builder: ProjectContextSettingsBuilder) -> Validated<ProjectContextSettings> {
        builder.build()
    }
}

impl Default for ProjectContextSettings {
    fn default() -> Self {
        ProjectContextSettingsBuilder::default().build().expect("the spec's defaults are valid")
    }
}

impl ProjectContextSettings {
    pub const DEFAULT_HOT_MAX_TOKENS: u64 = 8000;
    pub const DEFAULT_WARM_MAX_DECISIONS: u64 = 500;
    pub const DEFAULT_COLD_MAX_DECISIONS: u64 = 5000;
    pub const DEFAULT_BREADTH: u32 = 2;

    /// A builder starting at the spec's defaults.
    pub fn builder() -> ProjectContextSettingsBuilder {
        ProjectContextSettingsBuilder::default()
    }

    /// A builder holding these settings, to change some and keep the rest.
    pub fn into_builder(self) -> ProjectContextSettingsBuilder {
        let signed = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        ProjectContextSettingsBuilder {
            hot_max_tokens: signed(self.hot_max_tokens),
            warm_max_decisions: signed(self.warm_max_decisions),
            cold_max_decisions: signed(self.cold_max_decisions),
            strategies: self.strategies,
            default_breadth: self.default_breadth.into(),
            default_depth: self.default_depth,
            skeleton_ratio: self.skeleton_ratio,
            temporal_scope: self.temporal_scope,
            auto_refresh: self.auto_refresh,
        }
    }

    pub fn hot_max_tokens(&self) -> u64 {
        self.hot_max_tokens
    }

    pub fn warm_max_decisions(&self) -> u64 {
        self.warm_max_decisions
    }

    pub fn cold_max_decisions(&self) -> u64 {
        self.cold_max_decisions
    }

    /// Preferred strategies, best first; empty = the registry chooses.
    pub fn strategies(&self) -> &[String] {
        &self.strategies
    }

    pub fn default_breadth(&self) -> u32 {
        self.default_breadth
    }

    /// The depth the project's queries start from, when set.
    pub fn default_depth(&self) -> Option<&Depth> {
        self.default_depth.as_ref()
    }

    /// The project's skeleton ratio, when set; it wins over
    /// `context.budget.skeleton-ratio`.
    pub fn skeleton_ratio(&self) -> Option<f64> {
        self.skeleton_ratio
    }

    pub fn temporal_scope(&self) -> TemporalScope {
        self.temporal_scope
    }

    pub fn auto_refresh(&self) -> bool {
        self.auto_refresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The field a builder's validation names, or `None` when it builds.
    fn rejected_field(builder: ProjectContextSettingsBuilder) -> Option<&'static str> {
        builder.build().err().map(|e| {
            assert_eq!(e.model, MODEL);
            e.field
        })
    }

    #[test]
    fn defaults_are_the_specs() {
        let s = ProjectContextSettings::default();
        assert_eq!((s.hot_max_tokens(), s.warm_max_decisions(), s.cold_max_decisions()), (8000, 500, 5000));
        assert!(s.strategies().is_empty());
        assert_eq!(s.default_breadth(), 2);
        assert_eq!(s.default_depth(), None, "unset: the command's default depth");
        assert_eq!(s.skeleton_ratio(), None, "unset: context.budget.skeleton-ratio");
        assert_eq!(s.temporal_scope(), TemporalScope::Current);
        assert!(s.auto_refresh());
    }

    #[test]
    fn bad_values_name_their_field() {
        let b = ProjectContextSettings::builder;
        assert_eq!(rejected_field(b().hot_max_tokens(0)), Some("hot_max_tokens"));
        assert_eq!(rejected_field(b().hot_max_tokens(-5)), Some("hot_max_tokens"));
        assert_eq!(rejected_field(b().warm_max_decisions(0)), Some("warm_max_decisions"));
        assert_eq!(rejected_field(b().cold_max_decisions(-1)), Some("cold_max_decisions"));
        assert_eq!(rejected_field(b().default_breadth(-1)), Some("default_breadth"));
        assert_eq!(rejected_field(b().skeleton_ratio(1.5)), Some("skeleton_ratio"));
        assert_eq!(rejected_field(b().skeleton_ratio(-0.1)), Some("skeleton_ratio"));
        assert_eq!(rejected_field(b().skeleton_ratio(f64::NAN)), Some("skeleton_ratio"));
        assert_eq!(rejected_field(b().strategies(["magic"])), Some("strategies"));
        assert_eq!(rejected_field(b().strategies(["arce", "arce"])), Some("strategies"));
        let error = b().strategies(["arce", "grep"]).build().unwrap_err();
        assert!(error.to_string().contains("unknown strategy `grep`"), "{error}");

        for ratio in [0.0, 1.0] {
            assert_eq!(rejected_field(b().skeleton_ratio(ratio)), None);
        }
        assert_eq!(rejected_field(b().default_breadth(0).hot_max_tokens(1)), None);
        assert_eq!(rejected_field(b().strategies(STRATEGY_NAMES)), None);
    }

    #[test]
    fn into_builder_changes_one_setting_and_keeps_the_rest() {
        let s = ProjectContextSettings::builder()
            .hot_max_tokens(1200)
            .strategies(["arce", "simple-keyword"])
            .default_depth("signatures".parse().unwrap())
            .temporal_scope(TemporalScope::Recent)
            .auto_refresh(false)
            .build()
            .unwrap();
        let changed = s.clone().into_builder().skeleton_ratio(0.5).build().unwrap();
        assert_eq!(changed.skeleton_ratio(), Some(0.5));
        assert_ne!(changed, s);
        assert_eq!(changed.strategies(), ["arce", "simple-keyword"]);
        assert_eq!(changed.default_depth().and_then(|d| d.as_name()), Some("SIGNATURES"));
    }

    #[test]
    fn unset_depth_and_skeleton_ratio_stay_unset_and_a_stored_value_is_explicit() {
        let json = serde_json::to_string(&ProjectContextSettings::default()).unwrap();
        assert!(json.contains(r#""default_depth":null"#) && json.contains(r#""skeleton_ratio":null"#), "{json}");
        assert_eq!(serde_json::from_str::<ProjectContextSettings>(&json).unwrap(), ProjectContextSettings::default());
        let stored: ProjectContextSettings =
            serde_json::from_str(r#"{"skeleton_ratio":0.2,"default_depth":"SIGNATURES"}"#).unwrap();
        assert_eq!(stored.skeleton_ratio(), Some(0.2));
        assert_eq!(stored.default_depth().map(ToString::to_string).as_deref(), Some("SIGNATURES"));
    }

    #[test]
    fn settings_round_trip_through_json() {
        let s = ProjectContextSettings::builder()
            .warm_max_decisions(7)
            .strategies(["plan-decision-context"])
            .default_depth(Depth::level(9).unwrap())
            .temporal_scope(TemporalScope::All)
            .build()
            .unwrap();
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains(r#""warm_max_decisions":7"#) && json.contains(r#""temporal_scope":"all""#), "{json}");
        assert_eq!(serde_json::from_str::<ProjectContextSettings>(&json).unwrap(), s);

        let partial: ProjectContextSettings = serde_json::from_str(r#"{"hot_max_tokens":100}"#).unwrap();
        assert_eq!(partial, ProjectContextSettings::builder().hot_max_tokens(100).build().unwrap());
        for bad in [
            r#"{"hot_max_tokens":0}"#,
            r#"{"skeleton_ratio":1.5}"#,
            r#"{"strategies":["grep"]}"#,
            r#"{"default_depth":12}"#,
            r#"{"temporal_scope":"yesterday"}"#,
            r#"{"hot-max-tokens":100}"#,
            r#"{"colour":"red"}"#,
        ] {
            assert!(serde_json::from_str::<ProjectContextSettings>(bad).is_err(), "{bad}");
        }
    }
}
