//! `agents project ...`: projects and their resources (`project context` lives
//! in its own module).

use agents_engine::{Project, Resource};
use serde::Serialize;

use crate::cli::ProjectCommand;
use crate::commands::index::{IndexSummary, apply_filters, render_summary};
use crate::output::table;
use crate::progress::Bar;
use crate::settings::Settings;

#[derive(Serialize)]
struct ProjectView<'a> {
    #[serde(flatten)]
    project: &'a Project,
    resources: &'a [Resource],
}

pub fn run(settings: &Settings, cmd: ProjectCommand) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let printer = settings.printer;
    match cmd {
        ProjectCommand::Create { name } => {
            let project = engine.projects().create(&name)?;
            printer.emit(&project, || format!("Created project {} ({})", project.name, project.project_id))
        }
        ProjectCommand::List => {
            let projects = engine.projects().list()?;
            let views: Vec<ProjectView<'_>> =
                projects.iter().map(|(p, r)| ProjectView { project: p, resources: r }).collect();
            printer.emit(&views, || {
                if views.is_empty() {
                    return "No projects yet: `agents index PATH` or `agents project create NAME`\n".into();
                }
                let mut t = table(&["project", "resource", "path"]);
                for v in &views {
                    if v.resources.is_empty() {
                        t.add_row(vec![v.project.name.clone(), "-".into(), "-".into()]);
                    }
                    for r in v.resources {
                        t.add_row(vec![v.project.name.clone(), r.resource_id.clone(), r.path.clone()]);
                    }
                }
                format!("{t}\n")
            })
        }
        ProjectCommand::LinkResource { project, path, filters } => {
            let options = apply_filters(engine.index_options(), &filters);
            let bar = Bar::new(settings.progress);
            let outcome = engine.link_and_index(&project, &path, &options, &bar)?;
            let summary = IndexSummary::of(&outcome);
            printer.emit(&summary, || render_summary(&summary))
        }
        ProjectCommand::UnlinkResource { project, resource } => {
            let project = engine.projects().get(&project)?;
            let removed = engine.unlink_resource(&project, &resource)?;
            printer.emit(&removed, || format!("Unlinked {} from project {}", removed.path, project.name))
        }
        ProjectCommand::Context(cmd) => crate::commands::project_context::run(settings, cmd),
    }
}
