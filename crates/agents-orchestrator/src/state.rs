//! What a run saves in `knowledge/orchestrator/state.json` (its stage, its
//! gate, every task's status, the decision history) and the one-screen
//! summary of it that `agents orchestrate status` shows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The stages of a run, in order; EXECUTE and REVIEW repeat per phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The plan is recorded.
    Init,
    /// The plan's phases and tasks are shown, with what would stop a run.
    Plan,
    /// The graph is built, the task records written and their tags derived.
    TaskBreakdown,
    /// The first phase branch is made, the compiled graph committed there.
    Scaffold,
    /// The agents of a phase run, wave by wave; then the PCD and the update.
    Execute,
    /// The reviewer roles run over the phase's changes.
    Review,
    /// The merges of the phase branches, shown at the gate, made on approval.
    Finalize,
    /// The run is finished.
    Done,
}

impl Stage {
    /// The stage's name as checkpoints and messages show it (`TASK BREAKDOWN`).
    pub fn label(self) -> &'static str {
        match self {
            Stage::Init => "INIT",
            Stage::Plan => "PLAN",
            Stage::TaskBreakdown => "TASK BREAKDOWN",
            Stage::Scaffold => "SCAFFOLD",
            Stage::Execute => "EXECUTE",
            Stage::Review => "REVIEW",
            Stage::Finalize => "FINALIZE",
            Stage::Done => "DONE",
        }
    }
}

/// Where the current stage stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The stage is running (or a run stopped without saying so: resume).
    Running,
    /// The stage finished; its checkpoint waits for a human.
    AwaitingApproval,
    /// The stage is to run (again): `resume` runs it.
    Ready,
    /// Stopped by a human; `resume` continues where it stood.
    Aborted,
    /// The stage could not finish; `message` says why; fix it and `resume`.
    Failed,
    /// The run is finished: its branches are merged.
    Done,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Not run yet, or to run again (after a rejection, an interruption).
    Pending,
    /// Its agent exited cleanly and wrote a valid AgentMemory.
    Complete,
    /// It did not complete; its `reason` says why.
    Failed,
}

/// A task of the run: where it runs, how it ended, where its files are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    /// Its phase.
    pub phase: u32,
    /// Its wave in the phase (1-based; 0 for a reviewer).
    pub wave: u32,
    /// Where it stands.
    pub status: TaskStatus,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The AgentMemory the agent writes, relative to the repository.
    pub memory: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loadout: Option<String>,
    /// The commit of the wave that holds the task's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Where a failed task's partial edits went (a stash entry), so they
    /// stay off the phase branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<String>,
}

/// An agent process while it runs: the `sh -c` of its command, which leads
/// its own process group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentProcess {
    pub task_id: String,
    pub pid: u32,
    pub pgid: u32,
    /// The value of `AGENTS_ORCHESTRATOR_RUN` in its environment, which tells
    /// its processes from another program's that reuses the group id.
    pub marker: String,
}

/// One decision or event, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// When, ISO 8601.
    pub at: String,
    /// The stage it happened in.
    pub stage: Stage,
    /// The phase it happened in (0 outside EXECUTE and REVIEW).
    pub phase: u32,
    /// What happened: `approved`, `rejected`, `failed`, `aborted`, ...
    pub action: String,
    /// A rejection's reason, a failure's message, what was merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `knowledge/orchestrator/state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The plan file, absolute.
    pub plan_file: PathBuf,
    /// The plan's name: the prefix of its phase branches.
    pub plan_name: String,
    /// The branch phase 1 starts from and the last merge goes into.
    pub base_branch: String,
    /// The current stage.
    pub stage: Stage,
    /// The phase of EXECUTE and REVIEW; 0 before the first.
    pub phase: u32,
    /// Where the current stage stands.
    pub status: Status,
    /// Why the stage failed, or what a rejection said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The current checkpoint, relative to the repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// The commit each phase started from.
    pub phase_start: BTreeMap<u32, String>,
    /// Every task of the breakdown (and every reviewer), by id.
    pub tasks: BTreeMap<String, TaskState>,
    /// Each phase's Phase Completion Document, relative to the repository.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handoffs: BTreeMap<u32, String>,
    /// The agents running now; entries left after the process that ran them
    /// is gone are stopped by the next run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentProcess>,
    /// The marker of the dispatch running now (its agents' value of
    /// `AGENTS_ORCHESTRATOR_RUN`), saved before its first agent starts: an
    /// agent a killed run had started but not yet recorded in
    /// [`State::agents`] is found by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<String>,
    /// Every decision and event, in order.
    pub history: Vec<Event>,
}

pub(crate) fn status_label(status: Status) -> &'static str {
    match status {
        Status::Running => "running",
        Status::AwaitingApproval => "awaiting approval",
        Status::Ready => "ready to run",
        Status::Aborted => "aborted",
        Status::Failed => "failed",
        Status::Done => "done",
    }
}

/// A one-screen summary of a state, for `agents orchestrate status`.
pub fn summary(state: &State) -> String {
    let mut out = format!(
        "plan {} ({}), base branch {}\nstage {}{}: {}\n",
        state.plan_name,
        state.plan_file.display(),
        state.base_branch,
        state.stage.label(),
        if matches!(state.stage, Stage::Execute | Stage::Review) {
            format!(" (phase {})", state.phase)
        } else {
            String::new()
        },
        status_label(state.status),
    );
    if let Some(message) = &state.message {
        out.push_str(&format!("  {message}\n"));
    }
    if let Some(checkpoint) = &state.checkpoint
        && state.status == Status::AwaitingApproval
    {
        out.push_str(&format!("checkpoint: {checkpoint}\n"));
    }
    if !state.tasks.is_empty() {
        out.push_str("tasks:\n");
        let mut tasks: Vec<(&String, &TaskState)> = state.tasks.iter().collect();
        tasks.sort_by(|a, b| (a.1.phase, a.1.wave, a.0).cmp(&(b.1.phase, b.1.wave, b.0)));
        for (id, t) in tasks {
            let status = match t.status {
                TaskStatus::Pending => "pending",
                TaskStatus::Complete => "complete",
                TaskStatus::Failed => "failed",
            };
            out.push_str(&format!("  phase {} wave {} {id}: {status}", t.phase, t.wave));
            if let Some(reason) = &t.reason {
                out.push_str(&format!(" ({reason})"));
            }
            if let Some(stash) = &t.set_aside {
                out.push_str(&format!(" [partial edits in stash {stash}: `git stash apply {stash}`]"));
            }
            out.push('\n');
        }
    }
    out.push_str(match state.status {
        Status::AwaitingApproval => "next: agents orchestrate approve | reject --reason \"...\" | abort\n",
        Status::Ready | Status::Aborted | Status::Failed | Status::Running => "next: agents orchestrate resume\n",
        Status::Done => "next: the run is finished; start a new one with `agents orchestrate run PLAN.json`\n",
    });
    out
}
