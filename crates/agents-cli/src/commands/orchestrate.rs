//! `agents orchestrate run|status|approve|reject|abort|resume`: the reference
//! orchestrator of AKMS spec 5.8. Thin: the state machine is the
//! `agents_orchestrator` crate; this module parses the command, gives the
//! run the repository's knowledge operations ([`knowledge::RepoKnowledge`],
//! the trait's one implementation), a clock and a terminal to ask at the
//! gates, and renders the state.

mod knowledge;

use std::io::{BufRead, IsTerminal, Write};

use agents_orchestrator::{OrchestrateError, Orchestrator, State, Status, summary};

use super::knowledge::{read_config, resolve};
use crate::cli::{OrchestrateArgs, OrchestrateCommand};
use crate::exit::UsageError;
use crate::settings::Settings;
use knowledge::RepoKnowledge;

/// A refusal (no run, a gate that does not wait, a bad plan, a busy run) is
/// bad input; a file or git failure is not.
fn gate_error(e: OrchestrateError) -> anyhow::Error {
    match e {
        OrchestrateError::Io { .. } | OrchestrateError::Git(_) => e.into(),
        other => UsageError(other.to_string()).into(),
    }
}

pub fn run(settings: &Settings, args: OrchestrateArgs) -> anyhow::Result<()> {
    let (layout, options) = resolve(settings, args.repo.as_deref())?;
    let config = read_config(&layout)?;
    let knowledge = RepoKnowledge { settings, layout: layout.clone(), options };
    let orchestrator = Orchestrator {
        repo: layout.repo_root.clone(),
        config: &config.orchestrator,
        knowledge: &knowledge,
        clock: &agents_orchestrator::utc_clock,
    };
    let interactive = !args.no_interactive
        && !settings.printer.json
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let state = match args.command {
        OrchestrateCommand::Run { plan } => orchestrator.start(&plan).map_err(gate_error)?,
        OrchestrateCommand::Status => {
            let state = orchestrator
                .load()
                .map_err(gate_error)?
                .ok_or_else(|| gate_error(OrchestrateError::NotStarted(layout.repo_root.clone())))?;
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
fn ask(orchestrator: &Orchestrator<'_>, mut state: State) -> Result<State, OrchestrateError> {
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
