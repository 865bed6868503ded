//! `agents orchestrate run|status|approve|reject|abort|resume`: the reference
//! orchestrator of AKMS spec 5.8. Thin: the state machine is
//! `agents_orchestrator`; this module gives it the real knowledge
//! operations (build, tags, loadouts, evidence, update, mirror, health), a
//! clock, and a terminal to ask at the gates.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use agents_akms::CompileOptions;
use agents_orchestrator::{Knowledge, LoadoutSpec, Orchestrator, State, Status, summary};
use agents_akms::vault::Layout;

use super::feedback::{describe, health_of, review_text};
use super::knowledge::{derive_task_tags, index_knowledge, lock_knowledge, read_config, resolve};
use super::loadout::{LoadoutOptions, for_task};
use crate::cli::{OrchestrateArgs, OrchestrateCommand};
use crate::exit::UsageError;
use crate::settings::Settings;

/// The knowledge operations of one repository, as the orchestrator calls them.
struct RepoKnowledge<'a> {
    settings: &'a Settings,
    layout: Layout,
    options: CompileOptions,
}

fn message(e: anyhow::Error) -> String {
    format!("{e:#}")
}

impl Knowledge for RepoKnowledge<'_> {
    fn build(&self) -> Result<(), String> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(message)?;
        let compiled = agents_akms::build(&self.layout, &self.options).map_err(|e| e.to_string())?;
        index_knowledge(self.settings, &self.layout, &compiled).map_err(message)?;
        Ok(())
    }

    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, String> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(message)?;
        let report = derive_task_tags(&self.layout, &self.options, task_file, false).map_err(message)?;
        Ok(if report.kept.is_empty() { report.derived.into_iter().map(|d| d.tag).collect() } else { report.kept })
    }

    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, String> {
        let options = LoadoutOptions {
            role: spec.role.clone(),
            context_limit: spec.context_limit,
            system_prompt_tokens: spec.system_prompt_tokens,
            no_search: false,
        };
        let phase = Some(spec.phase.to_string());
        let report = for_task(self.settings, &self.layout.repo_root, task_file, phase, &options).map_err(message)?;
        Ok(PathBuf::from(report.path))
    }

    fn check_memory(&self, memory: &Path) -> Result<(), String> {
        let cap =
            agents_akms::bounded::Cap::new(agents_akms::bounded::MAX_SESSION_BYTES, "a fixed limit for session files");
        let text =
            agents_akms::bounded::read_text(memory, None, cap).map_err(|e| format!("{}: {e}", memory.display()))?;
        agents_akms::evidence::parse_evidence(memory, &text)
            .map(|_| ())
            .map_err(|problems| problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))
    }

    fn update(&self, documents: &[PathBuf]) -> Result<String, String> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(message)?;
        let report = agents_akms::update::update(&self.layout, &self.options, documents).map_err(|e| e.to_string())?;
        if let Some(compiled) = &report.compiled {
            index_knowledge(self.settings, &self.layout, compiled).map_err(message)?;
        }
        let mut out = String::new();
        for doc in &report.applied {
            out.push_str(&format!(
                "- applied `{}` as session `{}`\n",
                self.layout.display(&doc.file).display(),
                doc.session
            ));
            for entry in report.changes.iter().filter(|e| e.session == doc.session) {
                out.push_str(&format!("  - `{}`\n", describe(&entry.change)));
            }
        }
        for doc in &report.skipped {
            out.push_str(&format!("- skipped `{}`: already applied\n", self.layout.display(&doc.file).display()));
        }
        Ok(out)
    }

    fn mirror(&self, files: &[String]) -> Result<String, String> {
        let _lock = lock_knowledge(self.settings, &self.layout).map_err(message)?;
        let report = agents_akms::mirror::mirror_files(
            &self.layout.repo_root,
            files,
            &agents_akms::mirror::MirrorOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        let mut out = format!(
            "{} written, {} unchanged, {} removed, {} skipped",
            report.written.len(),
            report.unchanged.len(),
            report.removed.len(),
            report.skipped.len()
        );
        for drift in &report.drift {
            out.push_str(&format!("; docstring drift in `{}` (set to draft)", drift.file));
        }
        out.push('\n');
        Ok(out)
    }

    fn status(&self) -> Result<String, String> {
        let health = health_of(&self.layout, &self.options, None).map_err(message)?;
        let review = health.review();
        let tentative: Vec<&str> =
            health.nodes.iter().filter(|n| n.status == "tentative").map(|n| n.id.as_str()).collect();
        Ok(format!(
            "{} node(s) in the report table; tentative: {}; degraded: {}; new pitfalls: {}; dedup events: {}; id collisions: {}\n",
            health.nodes.len(),
            list(&tentative),
            list(&review.degraded.iter().map(String::as_str).collect::<Vec<_>>()),
            review.new_pitfalls.len(),
            review.dedup.len(),
            review.collisions.len(),
        ))
    }

    fn review(&self, phase: u32) -> Result<String, String> {
        let health = health_of(&self.layout, &self.options, Some(i64::from(phase))).map_err(message)?;
        Ok(format!("```text\n{}```\n", review_text(&health)))
    }
}

fn list(items: &[&str]) -> String {
    if items.is_empty() { "none".to_owned() } else { items.join(", ") }
}

pub fn run(settings: &Settings, args: OrchestrateArgs) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, args.repo.as_deref())?;
    let config = read_config(&layout)?;
    let knowledge = RepoKnowledge { settings, layout: layout.clone(), options };
    let clock = || agents_core::ids::to_iso(agents_core::ids::now_utc());
    let orchestrator = Orchestrator {
        repo: layout.repo_root.clone(),
        config: &config.orchestrator,
        knowledge: &knowledge,
        clock: &clock,
    };
    let interactive = !args.no_interactive
        && !settings.printer.json
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let gate_error = |e: agents_orchestrator::OrchestrateError| -> anyhow::Error {
        match e {
            agents_orchestrator::OrchestrateError::Io { .. }
            | agents_orchestrator::OrchestrateError::Git(_) => e.into(),
            other => UsageError(other.to_string()).into(),
        }
    };
    let state = match args.command {
        OrchestrateCommand::Run { plan } => orchestrator.start(&plan).map_err(gate_error)?,
        OrchestrateCommand::Status => {
            let state = orchestrator.load().map_err(gate_error)?.ok_or_else(|| {
                UsageError(format!(
                    "no orchestration in {}: start one with `agents orchestrate run PLAN.json`",
                    layout.repo_root.display()
                ))
            })?;
            return settings.printer.emit(&state, || summary(&state));
        }
        OrchestrateCommand::Approve => orchestrator.approve().map_err(gate_error)?,
        OrchestrateCommand::Reject { reason } => orchestrator.reject(&reason).map_err(gate_error)?,
        OrchestrateCommand::Abort => orchestrator.abort().map_err(gate_error)?,
        OrchestrateCommand::Resume => orchestrator.resume().map_err(gate_error)?,
    };
    let state = if interactive { ask(&orchestrator, state).map_err(gate_error)? } else { state };
    settings.printer.emit(&state, || {
        let mut out = summary(&state);
        if state.status == Status::AwaitingApproval
            && let Some(checkpoint) = &state.checkpoint
        {
            out = format!("checkpoint written: {checkpoint}\n{out}");
        }
        out
    })?;
    if state.status == Status::Failed {
        return Err(UsageError(format!(
            "{} failed: {}",
            state.stage.label(),
            state.message.as_deref().unwrap_or("see `agents orchestrate status`")
        ))
        .into());
    }
    Ok(())
}

/// The gate on a terminal: show the checkpoint, take the human's action,
/// until the run stops somewhere that is not a gate or they quit.
fn ask(orchestrator: &Orchestrator<'_>, mut state: State) -> Result<State, agents_orchestrator::OrchestrateError> {
    let stdin = std::io::stdin();
    while state.status == Status::AwaitingApproval {
        if let Some(checkpoint) = &state.checkpoint
            && let Ok(text) = std::fs::read_to_string(orchestrator.repo.join(checkpoint))
        {
            println!("{text}");
        }
        print!("[a]pprove, [r]eject with a reason, [e]dit the plan, a[b]ort, [q]uit and decide later: ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        if stdin.lock().read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        state = match line.trim() {
            "a" | "approve" => orchestrator.approve()?,
            "r" | "reject" => {
                print!("reason: ");
                let _ = std::io::stdout().flush();
                let mut reason = String::new();
                let _ = stdin.lock().read_line(&mut reason);
                orchestrator.reject(&reason)?;
                // The stage runs again at once, as `resume` would.
                orchestrator.resume()?
            }
            "e" | "edit" => {
                let editor =
                    std::env::var("VISUAL").or_else(|_| std::env::var("EDITOR")).unwrap_or_else(|_| "vi".into());
                let _ = std::process::Command::new(&editor).arg(&state.plan_file).status();
                state
            }
            "b" | "abort" => orchestrator.abort()?,
            "q" | "quit" => break,
            _ => state,
        };
    }
    Ok(state)
}
