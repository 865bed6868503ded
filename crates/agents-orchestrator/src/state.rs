//! What a run saves in `knowledge/orchestrator/state.json` (its stage, its
//! gate, every task's status, the decision history) and the one-screen
//! summary of it that `agents orchestrate status` shows.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Init,
    Plan,
    TaskBreakdown,
    Scaffold,
    Execute,
    Review,
    Finalize,
    Done,
}

impl Stage {
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
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    Complete,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskState {
    pub phase: u32,
    pub wave: u32,
    pub status: TaskStatus,
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
    pub at: String,
    pub stage: Stage,
    pub phase: u32,
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `knowledge/orchestrator/state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub plan_file: PathBuf,
    pub plan_name: String,
    pub base_branch: String,
    pub stage: Stage,
    /// The phase of EXECUTE and REVIEW; 0 before the first.
    pub phase: u32,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The current checkpoint, relative to the repository.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// The commit each phase started from.
    pub phase_start: BTreeMap<u32, String>,
    pub tasks: BTreeMap<String, TaskState>,
    /// Each phase's Phase Completion Document, relative to the repository.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handoffs: BTreeMap<u32, String>,
    /// The agents running now; entries left after the process that ran them
    /// is gone are stopped by the next run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentProcess>,
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
