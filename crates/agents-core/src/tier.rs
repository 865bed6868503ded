//! Storage tiers: where fragments live between assemblies and who sees them.
//!
//! Fragments are kept hot (in memory, capped in tokens), warm (fast disk,
//! capped in decisions) or cold (archive, capped in decisions). Each actor
//! role sees a fixed set of tiers (reviewer: hot; executor: hot and warm;
//! strategist: all three), and every fragment belongs to one project so that
//! views can be scoped. These are the values the tier service stores, moves
//! and reports on; the service itself lives outside the core.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Validated, ValidationError};
use crate::fragment::{ContextFragment, ContextTier, check_items_non_blank, check_non_blank};

/// The role an actor plays, deciding which tiers it may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActorRole {
    /// Plans the work; sees hot, warm and cold.
    Strategist,
    /// Carries out a task; sees hot and warm.
    Executor,
    /// Checks the result; sees hot only.
    Reviewer,
}

impl ActorRole {
    pub const ALL: [ActorRole; 3] = [ActorRole::Strategist, ActorRole::Executor, ActorRole::Reviewer];

    pub fn as_str(self) -> &'static str {
        match self {
            ActorRole::Strategist => "strategist",
            ActorRole::Executor => "executor",
            ActorRole::Reviewer => "reviewer",
        }
    }

    /// The tiers this role sees, hottest first (the spec's visibility table).
    pub fn visible_tiers(self) -> &'static [ContextTier] {
        match self {
            ActorRole::Strategist => &[ContextTier::Hot, ContextTier::Warm, ContextTier::Cold],
            ActorRole::Executor => &[ContextTier::Hot, ContextTier::Warm],
            ActorRole::Reviewer => &[ContextTier::Hot],
        }
    }

    /// Whether this role sees fragments in `tier`.
    pub fn can_see(self, tier: ContextTier) -> bool {
        self.visible_tiers().contains(&tier)
    }
}

impl fmt::Display for ActorRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ActorRole {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<ActorRole> {
        ActorRole::ALL.into_iter().find(|role| role.as_str() == text).ok_or_else(|| {
            ValidationError::new(
                "ActorContextView",
                "role",
                format!("unknown role `{text}`, expected strategist, executor or reviewer"),
            )
        })
    }
}

/// A stored fragment: a [`ContextFragment`] placed in a tier, with access
/// tracking for LRU eviction and the project it belongs to.
///
/// The placement is the fragment's own [`tier`](ContextFragment::tier), so
/// the two can never disagree. `role_visibility` narrows who may see the
/// fragment: empty means every role whose tiers include the placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TieredFragmentRaw")]
pub struct TieredFragment {
    fragment: ContextFragment,
    access_count: u64,
    last_accessed: DateTime<Utc>,
    project_name: String,
    role_visibility: BTreeSet<ActorRole>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TieredFragmentRaw {
    fragment: ContextFragment,
    #[serde(default)]
    access_count: u64,
    last_accessed: Option<DateTime<Utc>>,
    project_name: String,
    #[serde(default)]
    role_visibility: BTreeSet<ActorRole>,
}

impl TieredFragment {
    /// `fragment` stored for `project_name`, in the fragment's tier, never
    /// accessed (`last_accessed` is its creation time), visible by tier.
    pub fn new(fragment: ContextFragment, project_name: impl Into<String>) -> Validated<TieredFragment> {
        let project_name = project_name.into();
        check_non_blank("TieredFragment", "project_name", &project_name)?;
        Ok(TieredFragment {
            last_accessed: fragment.created_at(),
            fragment,
            access_count: 0,
            project_name,
            role_visibility: BTreeSet::new(),
        })
    }

    /// The same fragment placed in `tier` (a promotion or demotion).
    pub fn with_tier(self, tier: ContextTier) -> TieredFragment {
        TieredFragment { fragment: self.fragment.with_tier(tier), ..self }
    }

    /// The same fragment after one more access at `at`.
    pub fn record_access(self, at: DateTime<Utc>) -> TieredFragment {
        TieredFragment { access_count: self.access_count.saturating_add(1), last_accessed: at, ..self }
    }

    /// The same fragment with access statistics restored (e.g. from a store).
    pub fn with_access(self, access_count: u64, last_accessed: DateTime<Utc>) -> TieredFragment {
        TieredFragment { access_count, last_accessed, ..self }
    }

    /// The same fragment visible only to `roles` (still subject to tier rules);
    /// an empty set restores visibility by tier alone.
    pub fn with_role_visibility(self, roles: impl IntoIterator<Item = ActorRole>) -> TieredFragment {
        TieredFragment { role_visibility: roles.into_iter().collect(), ..self }
    }

    pub fn fragment(&self) -> &ContextFragment {
        &self.fragment
    }

    /// The fragment, giving up the tier bookkeeping.
    pub fn into_fragment(self) -> ContextFragment {
        self.fragment
    }

    /// Shorthand for the fragment's id.
    pub fn fragment_id(&self) -> &str {
        self.fragment.fragment_id()
    }

    /// The tier the fragment is placed in.
    pub fn tier(&self) -> ContextTier {
        self.fragment.tier()
    }

    pub fn access_count(&self) -> u64 {
        self.access_count
    }

    pub fn last_accessed(&self) -> DateTime<Utc> {
        self.last_accessed
    }

    pub fn project_name(&self) -> &str {
        &self.project_name
    }

    /// Roles the fragment is restricted to; empty means no restriction.
    pub fn role_visibility(&self) -> &BTreeSet<ActorRole> {
        &self.role_visibility
    }

    /// Whether `role` may see this fragment: its tier is visible to the role,
    /// and the role is listed when the visibility is restricted.
    pub fn visible_to(&self, role: ActorRole) -> bool {
        role.can_see(self.tier()) && (self.role_visibility.is_empty() || self.role_visibility.contains(&role))
    }
}

impl TryFrom<TieredFragmentRaw> for TieredFragment {
    type Error = ValidationError;

    fn try_from(raw: TieredFragmentRaw) -> Validated<TieredFragment> {
        let tiered = TieredFragment::new(raw.fragment, raw.project_name)?.with_role_visibility(raw.role_visibility);
        let last_accessed = raw.last_accessed.unwrap_or(tiered.last_accessed);
        Ok(tiered.with_access(raw.access_count, last_accessed))
    }
}

/// Capacity of each tier: hot in tokens, warm and cold in decisions; all >= 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "TierBudgetRaw")]
pub struct TierBudget {
    hot_max_tokens: u64,
    warm_max_decisions: u64,
    cold_max_decisions: u64,
}

#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TierBudgetRaw {
    hot_max_tokens: u64,
    warm_max_decisions: u64,
    cold_max_decisions: u64,
}

impl Default for TierBudgetRaw {
    fn default() -> Self {
        let TierBudget { hot_max_tokens, warm_max_decisions, cold_max_decisions } = TierBudget::default();
        TierBudgetRaw { hot_max_tokens, warm_max_decisions, cold_max_decisions }
    }
}

impl TierBudget {
    pub const DEFAULT_HOT_MAX_TOKENS: u64 = 8000;
    pub const DEFAULT_WARM_MAX_DECISIONS: u64 = 500;
    pub const DEFAULT_COLD_MAX_DECISIONS: u64 = 5000;

    /// A budget with every capacity at least 1.
    pub fn new(hot_max_tokens: u64, warm_max_decisions: u64, cold_max_decisions: u64) -> Validated<TierBudget> {
        for (field, value) in [
            ("hot_max_tokens", hot_max_tokens),
            ("warm_max_decisions", warm_max_decisions),
            ("cold_max_decisions", cold_max_decisions),
        ] {
            if value < 1 {
                return Err(ValidationError::new("TierBudget", field, "must be at least 1, got 0"));
            }
        }
        Ok(TierBudget { hot_max_tokens, warm_max_decisions, cold_max_decisions })
    }

    /// Token capacity of the hot tier.
    pub fn hot_max_tokens(&self) -> u64 {
        self.hot_max_tokens
    }

    /// Decision capacity of the warm tier.
    pub fn warm_max_decisions(&self) -> u64 {
        self.warm_max_decisions
    }

    /// Decision capacity of the cold tier.
    pub fn cold_max_decisions(&self) -> u64 {
        self.cold_max_decisions
    }
}

impl Default for TierBudget {
    fn default() -> Self {
        TierBudget {
            hot_max_tokens: Self::DEFAULT_HOT_MAX_TOKENS,
            warm_max_decisions: Self::DEFAULT_WARM_MAX_DECISIONS,
            cold_max_decisions: Self::DEFAULT_COLD_MAX_DECISIONS,
        }
    }
}

impl TryFrom<TierBudgetRaw> for TierBudget {
    type Error = ValidationError;

    fn try_from(raw: TierBudgetRaw) -> Validated<TierBudget> {
        TierBudget::new(raw.hot_max_tokens, raw.warm_max_decisions, raw.cold_max_decisions)
    }
}

/// What one actor may see: its role, the projects it works in, and the
/// tiers it reads by default (the role's visible tiers unless narrowed).
///
/// An empty project list sees nothing: scoping isolates by default.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ActorContextViewRaw")]
pub struct ActorContextView {
    role: ActorRole,
    projects: BTreeSet<String>,
    tiers: BTreeSet<ContextTier>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActorContextViewRaw {
    role: ActorRole,
    #[serde(default)]
    projects: Vec<String>,
    tiers: Option<Vec<ContextTier>>,
}

impl ActorContextView {
    const MODEL: &'static str = "ActorContextView";

    /// A view for `role` over `projects`, reading all the role's tiers.
    pub fn new(role: ActorRole, projects: impl IntoIterator<Item = impl Into<String>>) -> Validated<ActorContextView> {
        let projects: Vec<String> = projects.into_iter().map(Into::into).collect();
        check_items_non_blank(Self::MODEL, "projects", &projects)?;
        Ok(ActorContextView {
            role,
            projects: projects.into_iter().collect(),
            tiers: role.visible_tiers().iter().copied().collect(),
        })
    }

    /// The same view reading only `tiers`: at least one, all visible to the role.
    pub fn with_tiers(self, tiers: impl IntoIterator<Item = ContextTier>) -> Validated<ActorContextView> {
        let tiers: BTreeSet<ContextTier> = tiers.into_iter().collect();
        if tiers.is_empty() {
            return Err(ValidationError::new(Self::MODEL, "tiers", "must name at least one tier"));
        }
        if let Some(hidden) = tiers.iter().find(|tier| !self.role.can_see(**tier)) {
            return Err(ValidationError::new(
                Self::MODEL,
                "tiers",
                format!("a {} cannot see the {hidden} tier", self.role),
            ));
        }
        Ok(ActorContextView { tiers, ..self })
    }

    pub fn role(&self) -> ActorRole {
        self.role
    }

    /// Projects in scope, sorted.
    pub fn projects(&self) -> &BTreeSet<String> {
        &self.projects
    }

    /// Tiers read, coldest first.
    pub fn tiers(&self) -> &BTreeSet<ContextTier> {
        &self.tiers
    }

    /// Whether this view shows `fragment`: its project is in scope, its tier
    /// is read, and it is visible to the role.
    pub fn includes(&self, fragment: &TieredFragment) -> bool {
        self.projects.contains(fragment.project_name())
            && self.tiers.contains(&fragment.tier())
            && fragment.visible_to(self.role)
    }
}

impl TryFrom<ActorContextViewRaw> for ActorContextView {
    type Error = ValidationError;

    fn try_from(raw: ActorContextViewRaw) -> Validated<ActorContextView> {
        let view = ActorContextView::new(raw.role, raw.projects)?;
        match raw.tiers {
            Some(tiers) => view.with_tiers(tiers),
            None => Ok(view),
        }
    }
}

/// Hit and miss counters and population per tier, as a snapshot. Every tier
/// has an entry in each map (zero when unused).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "TierMetricsRaw")]
pub struct TierMetrics {
    hits: BTreeMap<ContextTier, u64>,
    misses: BTreeMap<ContextTier, u64>,
    population: BTreeMap<ContextTier, u64>,
}

#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TierMetricsRaw {
    hits: BTreeMap<ContextTier, u64>,
    misses: BTreeMap<ContextTier, u64>,
    population: BTreeMap<ContextTier, u64>,
}

fn zero_filled(mut counts: BTreeMap<ContextTier, u64>) -> BTreeMap<ContextTier, u64> {
    for tier in ContextTier::ALL {
        counts.entry(tier).or_insert(0);
    }
    counts
}

impl From<TierMetricsRaw> for TierMetrics {
    fn from(raw: TierMetricsRaw) -> TierMetrics {
        TierMetrics::new(raw.hits, raw.misses, raw.population)
    }
}

impl Default for TierMetrics {
    fn default() -> Self {
        TierMetrics::new(BTreeMap::new(), BTreeMap::new(), BTreeMap::new())
    }
}

impl TierMetrics {
    /// Metrics from per-tier counts; tiers left out count zero.
    pub fn new(
        hits: BTreeMap<ContextTier, u64>,
        misses: BTreeMap<ContextTier, u64>,
        population: BTreeMap<ContextTier, u64>,
    ) -> TierMetrics {
        TierMetrics { hits: zero_filled(hits), misses: zero_filled(misses), population: zero_filled(population) }
    }

    /// The same metrics with one more hit in `tier`.
    pub fn with_hit(mut self, tier: ContextTier) -> TierMetrics {
        *self.hits.entry(tier).or_insert(0) += 1;
        self
    }

    /// The same metrics with one more miss in `tier`.
    pub fn with_miss(mut self, tier: ContextTier) -> TierMetrics {
        *self.misses.entry(tier).or_insert(0) += 1;
        self
    }

    /// The same metrics with `tier` holding `count` fragments.
    pub fn with_population(mut self, tier: ContextTier, count: u64) -> TierMetrics {
        self.population.insert(tier, count);
        self
    }

    pub fn hits(&self) -> &BTreeMap<ContextTier, u64> {
        &self.hits
    }

    pub fn misses(&self) -> &BTreeMap<ContextTier, u64> {
        &self.misses
    }

    pub fn population(&self) -> &BTreeMap<ContextTier, u64> {
        &self.population
    }

    pub fn hits_in(&self, tier: ContextTier) -> u64 {
        self.hits[&tier]
    }

    pub fn misses_in(&self, tier: ContextTier) -> u64 {
        self.misses[&tier]
    }

    pub fn population_in(&self, tier: ContextTier) -> u64 {
        self.population[&tier]
    }

    /// Fragments across all tiers.
    pub fn total_population(&self) -> u64 {
        self.population.values().sum()
    }

    /// `hits / (hits + misses)` in `tier`; `None` before any lookup.
    pub fn hit_rate(&self, tier: ContextTier) -> Option<f64> {
        let (hits, misses) = (self.hits_in(tier), self.misses_in(tier));
        let lookups = hits + misses;
        (lookups > 0).then(|| hits as f64 / lookups as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::FragmentProvenance;
    use chrono::TimeZone;

    fn fragment(tier: ContextTier) -> ContextFragment {
        let provenance = FragmentProvenance::new("01HZY3N6A8Q4W0R2T5V7X9B1CD", "src/lib.rs").unwrap();
        ContextFragment::builder("uko://a", "body", 2, provenance).tier(tier).build().unwrap()
    }

    fn stored(tier: ContextTier, project: &str) -> TieredFragment {
        TieredFragment::new(fragment(tier), project).unwrap()
    }

    #[test]
    fn roles_see_the_spec_tiers() {
        use ContextTier::{Cold, Hot, Warm};
        assert_eq!(ActorRole::Strategist.visible_tiers(), [Hot, Warm, Cold]);
        assert_eq!(ActorRole::Executor.visible_tiers(), [Hot, Warm]);
        assert_eq!(ActorRole::Reviewer.visible_tiers(), [Hot]);
        assert!(!ActorRole::Reviewer.can_see(Warm) && !ActorRole::Executor.can_see(Cold));
        for role in ActorRole::ALL {
            assert_eq!(role.as_str().parse::<ActorRole>().unwrap(), role);
            assert_eq!(serde_json::to_string(&role).unwrap(), format!("\"{role}\""));
        }
        assert_eq!("admin".parse::<ActorRole>().unwrap_err().field, "role");
    }

    #[test]
    fn tiered_fragment_tracks_placement_and_access() {
        let f = stored(ContextTier::Cold, "web");
        assert_eq!((f.tier(), f.access_count(), f.last_accessed()), (ContextTier::Cold, 0, f.fragment().created_at()));
        let promoted = f.clone().with_tier(ContextTier::Cold.promoted().unwrap());
        assert_eq!((promoted.tier(), promoted.fragment().tier()), (ContextTier::Warm, ContextTier::Warm));
        let at = Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap();
        let touched = promoted.record_access(at).record_access(at);
        assert_eq!((touched.access_count(), touched.last_accessed()), (2, at));
        assert_eq!(touched.fragment_id(), f.fragment_id());
        assert_eq!(TieredFragment::new(fragment(ContextTier::Hot), " ").unwrap_err().field, "project_name");
    }

    #[test]
    fn visibility_combines_tier_and_role_restriction() {
        let warm = stored(ContextTier::Warm, "web");
        assert!(warm.visible_to(ActorRole::Strategist) && warm.visible_to(ActorRole::Executor));
        assert!(!warm.visible_to(ActorRole::Reviewer));
        let restricted = warm.with_role_visibility([ActorRole::Strategist, ActorRole::Reviewer]);
        assert!(restricted.visible_to(ActorRole::Strategist));
        assert!(!restricted.visible_to(ActorRole::Executor), "not listed");
        assert!(!restricted.visible_to(ActorRole::Reviewer), "listed, but the tier is hidden from reviewers");
    }

    #[test]
    fn actor_views_scope_by_project_tier_and_role() {
        let executor = ActorContextView::new(ActorRole::Executor, ["web", "api"]).unwrap();
        assert_eq!(executor.tiers().iter().copied().collect::<Vec<_>>(), [ContextTier::Warm, ContextTier::Hot]);
        assert!(executor.includes(&stored(ContextTier::Hot, "web")));
        assert!(executor.includes(&stored(ContextTier::Warm, "api")));
        assert!(!executor.includes(&stored(ContextTier::Cold, "web")), "executors do not see cold");
        assert!(!executor.includes(&stored(ContextTier::Hot, "other")), "other projects are isolated");

        let hot_only = executor.clone().with_tiers([ContextTier::Hot]).unwrap();
        assert!(!hot_only.includes(&stored(ContextTier::Warm, "web")));
        assert_eq!(executor.clone().with_tiers([ContextTier::Cold]).unwrap_err().field, "tiers");
        assert_eq!(executor.with_tiers([]).unwrap_err().field, "tiers");
        assert_eq!(ActorContextView::new(ActorRole::Reviewer, [""]).unwrap_err().field, "projects");
        let nobody = ActorContextView::new(ActorRole::Strategist, Vec::<String>::new()).unwrap();
        assert!(!nobody.includes(&stored(ContextTier::Hot, "web")));
    }

    #[test]
    fn tier_budget_defaults_and_limits() {
        let budget = TierBudget::default();
        assert_eq!(
            (budget.hot_max_tokens(), budget.warm_max_decisions(), budget.cold_max_decisions()),
            (8000, 500, 5000)
        );
        assert_eq!(TierBudget::new(0, 1, 1).unwrap_err().field, "hot_max_tokens");
        assert_eq!(TierBudget::new(1, 0, 1).unwrap_err().field, "warm_max_decisions");
        assert_eq!(TierBudget::new(1, 1, 0).unwrap_err().field, "cold_max_decisions");
        assert_eq!(serde_json::from_str::<TierBudget>("{}").unwrap(), budget);
        let json = serde_json::to_string(&TierBudget::new(1, 2, 3).unwrap()).unwrap();
        assert_eq!(json, r#"{"hot_max_tokens":1,"warm_max_decisions":2,"cold_max_decisions":3}"#);
        assert_eq!(serde_json::from_str::<TierBudget>(&json).unwrap(), TierBudget::new(1, 2, 3).unwrap());
        let error = serde_json::from_str::<TierBudget>(r#"{"warm_max_decisions":0}"#).unwrap_err().to_string();
        assert!(error.contains("TierBudget.warm_max_decisions"), "{error}");
        assert!(serde_json::from_str::<TierBudget>(r#"{"lukewarm":1}"#).is_err());
    }

    #[test]
    fn metrics_count_per_tier() {
        let metrics = TierMetrics::default()
            .with_hit(ContextTier::Hot)
            .with_hit(ContextTier::Hot)
            .with_miss(ContextTier::Hot)
            .with_population(ContextTier::Warm, 7)
            .with_population(ContextTier::Cold, 3);
        assert_eq!((metrics.hits_in(ContextTier::Hot), metrics.misses_in(ContextTier::Hot)), (2, 1));
        assert_eq!(metrics.hit_rate(ContextTier::Hot), Some(2.0 / 3.0));
        assert_eq!(metrics.hit_rate(ContextTier::Cold), None);
        assert_eq!(metrics.total_population(), 10);
        assert_eq!(metrics.hits().len(), 3, "every tier has an entry");
        let json = serde_json::to_string(&metrics).unwrap();
        assert_eq!(serde_json::from_str::<TierMetrics>(&json).unwrap(), metrics);
        let sparse: TierMetrics = serde_json::from_str(r#"{"hits":{"hot":1}}"#).unwrap();
        assert_eq!((sparse.hits_in(ContextTier::Hot), sparse.population_in(ContextTier::Cold)), (1, 0));
    }

    #[test]
    fn tiered_values_round_trip_through_json() {
        let at = Utc.with_ymd_and_hms(2030, 1, 2, 3, 4, 5).unwrap();
        let f = stored(ContextTier::Hot, "web").record_access(at).with_role_visibility([ActorRole::Reviewer]);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<TieredFragment>(&json).unwrap(), f);
        let bad = json.replace(r#""project_name":"web""#, r#""project_name":"""#);
        assert!(serde_json::from_str::<TieredFragment>(&bad).unwrap_err().to_string().contains("project_name"));

        let view = ActorContextView::new(ActorRole::Executor, ["web"]).unwrap().with_tiers([ContextTier::Hot]).unwrap();
        let json = serde_json::to_string(&view).unwrap();
        assert_eq!(json, r#"{"role":"executor","projects":["web"],"tiers":["hot"]}"#);
        assert_eq!(serde_json::from_str::<ActorContextView>(&json).unwrap(), view);
        let defaulted: ActorContextView = serde_json::from_str(r#"{"role":"reviewer","projects":["web"]}"#).unwrap();
        assert_eq!(defaulted.tiers().len(), 1);
        let widened = r#"{"role":"reviewer","projects":["web"],"tiers":["cold"]}"#;
        assert!(serde_json::from_str::<ActorContextView>(widened).is_err());
    }
}
