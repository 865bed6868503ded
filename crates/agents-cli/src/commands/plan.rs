//! `agents plan ...`: plans and their decision records.

use agents_engine::services::PlanView;

use crate::cli::PlanCommand;
use crate::commands::project_context::parse_phase;
use crate::exit::UsageError;
use crate::output::table;
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: PlanCommand) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let printer = settings.printer;
    match cmd {
        PlanCommand::Create { title, parent, phase, project } => {
            if title.trim().is_empty() {
                return Err(UsageError("a plan needs a title".into()).into());
            }
            let phase = parse_phase("--phase", &phase)?;
            let plan = engine.create_plan(&title, parent.as_deref(), phase, project.as_deref())?;
            printer.emit(&plan, || format!("Created plan {} ({}, phase {})", plan.plan_id, plan.title, plan.phase))
        }
        PlanCommand::Decide { plan, title, body, tier } => {
            if title.trim().is_empty() {
                return Err(UsageError("a decision needs a title".into()).into());
            }
            if !matches!(tier.as_str(), "hot" | "warm" | "cold") {
                return Err(UsageError(format!("--tier: `{tier}` is not hot, warm or cold")).into());
            }
            let decision = engine.add_decision(&plan, &title, &body, &tier)?;
            printer.emit(&decision, || format!("Recorded decision {} on plan {}", decision.decision_id, plan))
        }
        PlanCommand::Show { plan } => {
            let view: PlanView = engine.plan_view(&plan).map_err(|e| UsageError(e.to_string()))?;
            printer.emit(&view, || {
                let context = &view.context;
                let mut out = format!("phase {}\n", view.phase);
                if let Some(project) = &view.project {
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
            let plans = engine.plans()?;
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
