//! `agents plan ...`: plans and their decision records.

use agents_store::Plan;

use agents_acms::retrieval::PlanContext;
use serde::Serialize;

use crate::cli::PlanCommand;
use crate::commands::project_context::parse_phase;
use crate::exit::UsageError;
use crate::output::table;
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: PlanCommand) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let store = engine.store();
    let printer = settings.printer;
    match cmd {
        PlanCommand::Create { title, parent, phase, project } => {
            if title.trim().is_empty() {
                return Err(UsageError("a plan needs a title".into()).into());
            }
            let phase = parse_phase("--phase", &phase)?;
            let project = project.map(|name| engine.projects().get(&name)).transpose()?;
            let project_id = project.as_ref().map(|p| p.project_id.as_str());
            let plan = store.create_plan(&title, parent.as_deref(), phase, project_id).map_err(usage_if_missing)?;
            printer.emit(&plan, || format!("Created plan {} ({}, phase {})", plan.plan_id, plan.title, plan.phase))
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
            let shown = store.plan(&plan)?.ok_or_else(|| UsageError(format!("plan `{plan}` not found")))?;
            let project = match &shown.project_id {
                Some(id) => store.projects()?.into_iter().find(|p| p.project_id == *id).map(|p| p.name),
                None => None,
            };
            let view = PlanShow { context: &context, phase: &shown.phase, project: project.as_deref() };
            printer.emit(&view, || {
                let mut out = format!("phase {}\n", shown.phase);
                if let Some(project) = &project {
                    out.push_str(&format!("project {project}\n"));
                }
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

/// What `plan show` prints: the plan's ancestry and decisions, its phase and
/// the name of its project.
#[derive(Serialize)]
struct PlanShow<'a> {
    #[serde(flatten)]
    context: &'a PlanContext,
    phase: &'a str,
    project: Option<&'a str>,
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
