//! The plans-and-decisions role: plans (a tree), the decisions recorded on
//! them, and the context last assembled for each.

use agents_core::policy::Phase;
use serde::{Deserialize, Serialize};

use crate::StoreError;

/// A plan: a unit of work whose decisions its child plans inherit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub plan_id: String,
    pub parent_id: Option<String>,
    pub title: String,
    pub created_at: String,
    /// The phase the plan is in: `default`, `strategize`, `execute` or `apply`
    /// (see [`agents_core::policy::Phase`]); it picks the project's context view.
    pub phase: String,
    /// The project whose context policy scopes the plan, if any.
    pub project_id: Option<String>,
}

/// A decision recorded on a plan, kept in the warm or cold tier (or hot while the
/// plan is active).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanDecision {
    pub decision_id: String,
    pub plan_id: String,
    pub title: String,
    pub body: String,
    /// `hot`, `warm` or `cold`.
    pub tier: String,
    pub created_at: String,
}

/// Plans, their decisions and their assembled payloads. Every method is one
/// transaction.
///
/// Guarantees (checked by `conformance::plans`):
/// - a plan reads back as created, with its phase and project; a parent or
///   project that does not exist is [`StoreError::NotFound`] naming it, and
///   nothing is created;
/// - [`PlanStore::plans`] and [`PlanStore::plan_decisions`] are oldest
///   first (ties by id);
/// - a decision's tier is `hot`, `warm` or `cold` ([`StoreError::Invalid`]
///   otherwise), and its plan must exist ([`StoreError::NotFound`]);
/// - a payload replaces the one before; a plan without one reads `None`;
///   storing one for an unknown plan is an error;
/// - unknown ids read as `None` or an empty list.
pub trait PlanStore: Send + Sync {
    /// Creates a plan in `phase` under `parent` and for `project_id` (each of
    /// which must exist when given).
    fn create_plan(
        &self,
        title: &str,
        parent: Option<&str>,
        phase: Phase,
        project_id: Option<&str>,
    ) -> Result<Plan, StoreError>;
    /// The plan with an id.
    fn plan(&self, plan_id: &str) -> Result<Option<Plan>, StoreError>;
    /// Every plan, oldest first.
    fn plans(&self) -> Result<Vec<Plan>, StoreError>;
    /// Records a decision on a plan; `tier` is `hot`, `warm` or `cold`.
    fn add_decision(&self, plan_id: &str, title: &str, body: &str, tier: &str) -> Result<PlanDecision, StoreError>;
    /// The decisions of a plan, oldest first.
    fn plan_decisions(&self, plan_id: &str) -> Result<Vec<PlanDecision>, StoreError>;
    /// Stores the context assembled for a plan (the pipeline's packed pieces as
    /// JSON), replacing the one before.
    fn set_plan_payload(&self, plan_id: &str, payload_json: &str) -> Result<(), StoreError>;
    /// The context last assembled for a plan.
    fn plan_payload(&self, plan_id: &str) -> Result<Option<String>, StoreError>;
}
