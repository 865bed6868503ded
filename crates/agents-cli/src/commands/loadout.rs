//! `agents knowledge loadout|re-evaluate`: parse, call the engine's loadouts
//! ([`agents_engine::knowledge::loadout`]: a task record -> tags -> subgraph
//! query -> search within the node set -> `knowledge/loadouts/<task>-loadout.md`),
//! print.

use std::path::Path;

use agents_engine::knowledge::loadout::{self, Loadouts};
pub use agents_engine::knowledge::{LoadoutOptions, LoadoutReport};

use super::knowledge::{resolve, service, usage, waiting};
use crate::settings::Settings;

/// Opens the loadouts of the repository (`repo`, else the one holding the
/// current directory), holding its knowledge lock.
pub fn open(settings: &Settings, repo: Option<&Path>) -> anyhow::Result<Loadouts> {
    let cwd = std::env::current_dir()?;
    let (layout, _) = resolve(settings, repo)?;
    Loadouts::open(&service(settings), Some(&layout.repo_root), &cwd, &mut waiting(settings, &layout)).map_err(usage)
}

/// The loadout of one task file, as `agents orchestrate` asks for it before
/// dispatch ([`loadout::for_task`]).
pub(crate) fn for_task(
    settings: &Settings,
    repo: &Path,
    task: &Path,
    phase: Option<String>,
    options: &LoadoutOptions,
) -> anyhow::Result<LoadoutReport> {
    let (layout, _) = resolve(settings, Some(repo))?;
    loadout::for_task(&service(settings), repo, task, phase, options, &mut waiting(settings, &layout)).map_err(usage)
}

pub fn loadout_command(
    settings: &Settings,
    repo: Option<&Path>,
    task: Option<&Path>,
    plan: Option<&Path>,
    options: LoadoutOptions,
    force: bool,
) -> anyhow::Result<()> {
    let mut ctx = open(settings, repo)?;
    let reports = loadout::make_loadouts(&mut ctx, task, plan, &options, force).map_err(usage)?;
    print(settings, &reports)
}

fn print(settings: &Settings, reports: &[LoadoutReport]) -> anyhow::Result<()> {
    settings.printer.emit(&reports, || {
        let mut out = String::new();
        for r in reports {
            let verb = if r.reused { "reused" } else { "wrote" };
            let search = if r.qmd_available { "" } else { ", degraded: no search layer" };
            let available = r.available_context.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
            out.push_str(&format!(
                "{verb} {} ({}, {} nodes, available context {available}{search})\n",
                r.path, r.mode, r.node_count
            ));
        }
        out
    })
}

/// `agents knowledge re-evaluate`: regenerates every remembered loadout that
/// is not what would be generated now; reports only those.
pub fn re_evaluate(settings: &Settings, repo: Option<&Path>) -> anyhow::Result<()> {
    let mut ctx = open(settings, repo)?;
    let run = loadout::re_evaluate(&mut ctx).map_err(usage)?;
    for (name, task) in &run.orphaned {
        settings.printer.note(format!("warning: {name}: its task record {task} is gone; left as it was"));
    }
    if run.reports.is_empty() {
        settings.printer.note("every loadout is current");
    }
    print(settings, &run.reports)
}
