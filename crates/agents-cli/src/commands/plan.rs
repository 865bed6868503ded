//! `agents plan ...`: plans and their decision records.

use agents_store::Plan;

use crate::cli::PlanCommand;
use crate::exit::UsageError;
use crate::output::table;
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: PlanCommand) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let store = engine.store();
    let printer = settings.printer;
    match cmd {
        PlanCommand::Create { title, parent } => {
            if title.trim().is_empty() {
                return Err(UsageError("a plan needs a title".into()).into());
            }
            let plan = store.create_plan(&title, parent.as_deref()).map_err(usage_if_missing)?;
            printer.emit(&plan, || format!("Created plan {} ({})", plan.plan_id, plan.title))
        }
        PlanCommand::Decide { plan, title, body, tier } => {
            if title.trim().is_empty() {
                return Err(UsageError("a decision needs a title".into()).into());
            }
            if !matches!(tier.as_str(), "hot" | "warm" | "cold") {
                return Err(UsageError(format!("--tier: `{tier}` is not hot, warm or cold")).into());
            }
            let decision = store.add_decision(&plan, &title, &body, &tier).map_err(usage_if_missing)?;
            printer.emit(&decision, || format!("Recorded decision {} on plan {}", decision.decision_id, plan))
        }
        PlanCommand::Show { plan } => {
            let context = engine.plan_context(&plan).map_err(|e| UsageError(e.to_string()))?;
            printer.emit(&context, || {
                let mut out = String::new();
                for (i, ancestor) in context.ancestors.iter().enumerate() {
                    let role = if i == 0 { "plan" } else { "ancestor" };
                    out.push_str(&format!("{role} {} {}\n", ancestor.plan_id, ancestor.title));
                    for d in &ancestor.decisions {
                        out.push_str(&format!("  [{}] {}\n", d.tier, d.title));
                    }
                }
                out
            })
        }
        PlanCommand::List => {
            let plans: Vec<Plan> = store.plans()?;
            printer.emit(&plans, || {
                if plans.is_empty() {
                    return "No plans yet: `agents plan create TITLE`\n".into();
                }
                let mut t = table(&["plan", "parent", "title"]);
                for p in &plans {
                    t.add_row(vec![
                        p.plan_id.clone(),
                        p.parent_id.clone().unwrap_or_else(|| "-".into()),
                        p.title.clone(),
                    ]);
                }
                format!("{t}\n")
            })
        }
    }
}

/// A plan that does not exist is the user's mistake (exit 2), not a failure.
fn usage_if_missing(error: agents_store::StoreError) -> anyhow::Error {
    match error {
        agents_store::StoreError::NotFound { .. } | agents_store::StoreError::Invalid(_) => {
            UsageError(error.to_string()).into()
        }
        other => other.into(),
    }
}
