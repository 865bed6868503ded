//! The errors of a run.

use std::path::PathBuf;

use crate::git::GitError;
use crate::plan::PlanError;

#[derive(Debug, thiserror::Error)]
pub enum OrchestrateError {
    #[error("no orchestration in {}: start one with `agents orchestrate run PLAN.json`", .0.display())]
    NotStarted(PathBuf),
    #[error("an orchestration is already under way in {} (stage {stage}, {status}); continue it with `agents orchestrate resume`, or abort it and remove the folder to start over", dir.display())]
    AlreadyStarted { dir: PathBuf, stage: &'static str, status: &'static str },
    #[error("{0}")]
    Plan(#[from] PlanError),
    #[error("{0}")]
    Git(#[from] GitError),
    #[error("{}: {message}", path.display())]
    State { path: PathBuf, message: String },
    #[error("the orchestration in {} is being run by {} (it holds {}): wait for it to stop at its gate, or ask it to stop with `agents orchestrate abort`", dir.display(), match pid { Some(pid) => format!("process {pid}"), None => "another process".to_owned() }, lock.display())]
    Busy { dir: PathBuf, lock: PathBuf, pid: Option<u32> },
    #[error("{0}")]
    Gate(String),
    #[error("cannot write {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}
