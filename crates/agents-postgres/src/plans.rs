//! [`PlanStore`] for [`PostgresStore`].

use agents_core::ids::{new_ulid, now_utc, to_iso};
use agents_core::policy::Phase;
use agents_store::{Plan, PlanDecision, PlanStore, StoreError};
use postgres::Row;

use crate::PostgresStore;
use crate::projects::require_row;

const PLAN_COLUMNS: &str = "plan_id, parent_id, title, created_at, phase, project_id";

fn plan_from_row(row: &Row) -> Plan {
    Plan {
        plan_id: row.get(0),
        parent_id: row.get(1),
        title: row.get(2),
        created_at: row.get(3),
        phase: row.get(4),
        project_id: row.get(5),
    }
}

fn decision_from_row(row: &Row) -> PlanDecision {
    PlanDecision {
        decision_id: row.get(0),
        plan_id: row.get(1),
        title: row.get(2),
        body: row.get(3),
        tier: row.get(4),
        created_at: row.get(5),
    }
}

impl PlanStore for PostgresStore {
    fn create_plan(
        &self,
        title: &str,
        parent: Option<&str>,
        phase: Phase,
        project_id: Option<&str>,
    ) -> Result<Plan, StoreError> {
        let plan = Plan {
            plan_id: new_ulid(),
            parent_id: parent.map(str::to_owned),
            title: title.to_owned(),
            created_at: to_iso(now_utc()),
            phase: phase.as_str().to_owned(),
            project_id: project_id.map(str::to_owned),
        };
        self.write(|c| {
            if let Some(parent) = parent {
                require_row(c, ("plans", "plan_id"), "plan", parent)?;
            }
            if let Some(project_id) = project_id {
                require_row(c, ("projects", "project_id"), "project", project_id)?;
            }
            c.execute(
                &format!("INSERT INTO plans ({PLAN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)"),
                &[&plan.plan_id, &plan.parent_id, &plan.title, &plan.created_at, &plan.phase, &plan.project_id],
            )?;
            Ok(())
        })?;
        Ok(plan)
    }

    fn plan(&self, plan_id: &str) -> Result<Option<Plan>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt(&format!("SELECT {PLAN_COLUMNS} FROM plans WHERE plan_id = $1"), &[&plan_id])?
                .map(|r| plan_from_row(&r)))
        })
    }

    fn plans(&self) -> Result<Vec<Plan>, StoreError> {
        self.read(|c| {
            Ok(c.query(&format!("SELECT {PLAN_COLUMNS} FROM plans ORDER BY created_at, plan_id"), &[])?
                .iter()
                .map(plan_from_row)
                .collect())
        })
    }

    fn add_decision(&self, plan_id: &str, title: &str, body: &str, tier: &str) -> Result<PlanDecision, StoreError> {
        if !matches!(tier, "hot" | "warm" | "cold") {
            return Err(StoreError::Invalid(agents_core::ValidationError::new(
                "PlanDecision",
                "tier",
                format!("`{tier}` is not hot, warm or cold"),
            )));
        }
        let decision = PlanDecision {
            decision_id: new_ulid(),
            plan_id: plan_id.to_owned(),
            title: title.to_owned(),
            body: body.to_owned(),
            tier: tier.to_owned(),
            created_at: to_iso(now_utc()),
        };
        self.write(|c| {
            require_row(c, ("plans", "plan_id"), "plan", plan_id)?;
            c.execute(
                "INSERT INTO plan_decisions (decision_id, plan_id, title, body, tier, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[
                    &decision.decision_id,
                    &decision.plan_id,
                    &decision.title,
                    &decision.body,
                    &decision.tier,
                    &decision.created_at,
                ],
            )?;
            Ok(())
        })?;
        Ok(decision)
    }

    fn plan_decisions(&self, plan_id: &str) -> Result<Vec<PlanDecision>, StoreError> {
        self.read(|c| {
            Ok(c.query(
                "SELECT decision_id, plan_id, title, body, tier, created_at FROM plan_decisions \
                 WHERE plan_id = $1 ORDER BY created_at, decision_id",
                &[&plan_id],
            )?
            .iter()
            .map(decision_from_row)
            .collect())
        })
    }

    fn set_plan_payload(&self, plan_id: &str, payload_json: &str) -> Result<(), StoreError> {
        let now = to_iso(now_utc());
        self.write(|c| {
            require_row(c, ("plans", "plan_id"), "plan", plan_id)?;
            c.execute(
                "INSERT INTO plan_payloads (plan_id, payload_json, assembled_at) VALUES ($1, $2, $3) \
                 ON CONFLICT (plan_id) DO UPDATE SET payload_json = excluded.payload_json, \
                 assembled_at = excluded.assembled_at",
                &[&plan_id, &payload_json, &now],
            )?;
            Ok(())
        })
    }

    fn plan_payload(&self, plan_id: &str) -> Result<Option<String>, StoreError> {
        self.read(|c| {
            Ok(c.query_opt("SELECT payload_json FROM plan_payloads WHERE plan_id = $1", &[&plan_id])?.map(|r| r.get(0)))
        })
    }
}
