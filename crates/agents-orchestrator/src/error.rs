//! The errors of a run: [`OrchestrateError`], what the commands that move a
//! run return; [`StageError`], why a stage stopped (saved as the run's
//! message, shown by `agents orchestrate status`); [`JobError`], why a task
//! could not be dispatched (saved as the task's reason).

use std::path::PathBuf;

use agents_akms::bounded::ReadError;

use crate::git::GitError;
use crate::knowledge::KnowledgeError;
use crate::pcd::PcdError;
use crate::plan::{FieldError, PlanError, WaveError};
use crate::state::{Stage, Status, status_label};

/// What every message about a finished run says.
pub(crate) const START_NEW: &str =
    "start a new one with `agents orchestrate run PLAN.json` (this run's records move to knowledge/orchestrator/done/)";

/// Why a command on a run (start, approve, reject, abort, resume, load) was
/// refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum OrchestrateError {
    /// No run was started in this repository.
    #[error("no orchestration in {}: start one with `agents orchestrate run PLAN.json`", .0.display())]
    NotStarted(PathBuf),
    /// `run` while another run is under way.
    #[error("an orchestration is already under way in {} (stage {stage}, {status}); continue it with `agents orchestrate resume`, or abort it and remove the folder to start over", dir.display())]
    AlreadyStarted { dir: PathBuf, stage: &'static str, status: &'static str },
    /// The plan file cannot be read or is invalid.
    #[error("{0}")]
    Plan(#[from] PlanError),
    /// A git command failed: its repository, the command and git's stderr.
    #[error("{0}")]
    Git(#[from] GitError),
    /// `state.json` cannot be read (not a regular file, over its cap).
    #[error("{}: {source}", path.display())]
    StateUnreadable { path: PathBuf, source: ReadError },
    /// `state.json` holds no run's state.
    #[error("{}: line {}: not a valid orchestration state: {source}", path.display(), source.line())]
    StateInvalid { path: PathBuf, source: serde_json::Error },
    /// The state or a task record cannot be written as JSON.
    #[error("{}: {source}", path.display())]
    Serialize { path: PathBuf, source: serde_json::Error },
    /// Another process holds the run lock (its pid, when it wrote one).
    #[error("the orchestration in {} is being run by {} (it holds {}): wait for it to stop at its gate, or ask it to stop with `agents orchestrate abort`", dir.display(), match pid { Some(pid) => format!("process {pid}"), None => "another process".to_owned() }, lock.display())]
    Busy { dir: PathBuf, lock: PathBuf, pid: Option<u32> },
    /// `reject` without a reason.
    #[error("a rejection needs a reason (--reason)")]
    NoReason,
    /// The run is finished: there is nothing to resume or abort.
    #[error("the orchestration is already done: {START_NEW}")]
    Done,
    /// `approve` or `reject` on a finished run.
    #[error("nothing waits for approval: the orchestration of plan `{plan}` is done; {START_NEW}")]
    NothingAwaitsDone { plan: String },
    /// `approve` or `reject` while no gate waits.
    #[error("nothing waits for approval: {} is {}{}", stage.label(), status_label(*status), resume_hint(*status))]
    NothingAwaits { stage: Stage, status: Status },
    /// `resume` while a stage waits at its gate.
    #[error("{} waits at its gate: approve or reject it (see {})", stage.label(), checkpoint.as_deref().unwrap_or("the checkpoint"))]
    AtGate { stage: Stage, checkpoint: Option<String> },
    /// A file or folder of the run cannot be written.
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

fn resume_hint(status: Status) -> &'static str {
    match status {
        Status::Aborted | Status::Ready | Status::Failed | Status::Running => {
            " (continue with `agents orchestrate resume`)"
        }
        Status::AwaitingApproval | Status::Done => "",
    }
}

/// Why a stage could not finish: the run stops there, failed, with this as
/// its message, until the cause is fixed and the run resumed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StageError {
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error("{0}")]
    Git(#[from] GitError),
    /// Saving the state or writing one of the run's files failed.
    #[error("{0}")]
    Run(#[from] OrchestrateError),
    #[error("building the knowledge graph: {0}")]
    Build(KnowledgeError),
    #[error("the tags of task `{task}`: {source}")]
    Tags { task: String, source: KnowledgeError },
    #[error("updating the graph: {0}")]
    Update(KnowledgeError),
    #[error("regenerating the code mirror: {0}")]
    Mirror(KnowledgeError),
    #[error("the health report: {0}")]
    Health(KnowledgeError),
    #[error("the review report: {0}")]
    Review(KnowledgeError),
    #[error("phase {phase}: {source}")]
    Waves { phase: u32, source: WaveError },
    #[error("{} is not a git work tree: phases run on branches", .0.display())]
    NotARepository(PathBuf),
    #[error("the base branch `{0}` does not exist")]
    NoBaseBranch(String),
    #[error("the work tree has uncommitted changes ({}): commit or stash them so phase commits hold only the phase's work", .0.join(", "))]
    Uncommitted(Vec<String>),
    #[error("orchestrator.agent_command is not set in knowledge/graph/propagation_config.yaml")]
    NoAgentCommand,
    #[error("the plan has no phase {0}")]
    NoPhase(u32),
    #[error("task `{0}` is not in the breakdown: reject PLAN or TASK BREAKDOWN and run it again")]
    NotInBreakdown(String),
    #[error("the review task: {0}")]
    ReviewTask(FieldError),
    #[error("{0}")]
    Pcd(#[from] PcdError),
    #[error("the phase branch `{0}` does not exist")]
    NoPhaseBranch(String),
}

/// Why a task could not be dispatched: it fails with this as its reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JobError {
    /// Its task record cannot be written.
    #[error("{0}")]
    Record(#[from] OrchestrateError),
    /// Its loadout could not be made.
    #[error("its loadout: {0}")]
    Loadout(KnowledgeError),
    /// The folder of its AgentMemory cannot be created.
    #[error("cannot create {}: {source}", path.display())]
    Folder { path: PathBuf, source: std::io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::KnowledgeError;

    #[test]
    fn gate_refusals_name_the_stage_its_status_and_what_to_do() {
        let e = OrchestrateError::NothingAwaits { stage: Stage::Execute, status: Status::Failed };
        assert_eq!(
            e.to_string(),
            "nothing waits for approval: EXECUTE is failed (continue with `agents orchestrate resume`)"
        );
        let e = OrchestrateError::NothingAwaits { stage: Stage::Plan, status: Status::AwaitingApproval };
        assert_eq!(e.to_string(), "nothing waits for approval: PLAN is awaiting approval");
        let e = OrchestrateError::AtGate {
            stage: Stage::Review,
            checkpoint: Some("knowledge/orchestrator/checkpoints/05-review-phase-1.md".into()),
        };
        assert_eq!(
            e.to_string(),
            "REVIEW waits at its gate: approve or reject it (see knowledge/orchestrator/checkpoints/05-review-phase-1.md)"
        );
    }

    #[test]
    fn a_stage_failure_says_which_operation_failed_then_why() {
        let e = StageError::Update(KnowledgeError::Adapter("the knowledge lock is held by pid 7".into()));
        assert_eq!(e.to_string(), "updating the graph: the knowledge lock is held by pid 7");
        let e = JobError::Loadout(KnowledgeError::Adapter("no such role `x`".into()));
        assert_eq!(e.to_string(), "its loadout: no such role `x`");
        let e = StageError::Uncommitted(vec!["a.py".into(), "b.py".into()]);
        assert!(e.to_string().starts_with("the work tree has uncommitted changes (a.py, b.py): "), "{e}");
    }
}
