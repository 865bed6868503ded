//! The reference orchestrator (5.8): the state machine that closes the
//! feedback loop. INIT -> PLAN -> TASK BREAKDOWN -> SCAFFOLD -> EXECUTE (per
//! phase) -> REVIEW (per phase) -> FINALIZE, with a human gate after every
//! stage: the stage's output, the AKMS status and warnings are written to a
//! checkpoint file, and nothing moves until someone approves, rejects (the
//! stage runs again), edits artifacts or aborts (everything kept).
//!
//! State lives in `knowledge/orchestrator/` as plain files: `state.json`
//! (stage, phase, gate, every task's status, the decision history),
//! `checkpoints/NN-<stage>.md`, `tasks/<task_id>.json` (the records agents
//! get), `logs/` (agent output). The folder is ignored by git (it carries
//! its own `.gitignore`), so switching phase branches never touches it.
//! Every stage saves progress as it goes, so a stop at any point (an abort,
//! a crash) is continued by [`Orchestrator::resume`].
//!
//! One process at a time: every command that moves the run (`run`,
//! `approve`, `reject`, `resume`, `abort` at a gate) holds the OS advisory
//! lock `knowledge/orchestrator/run.lock` (its pid written in it) while it
//! works, and a second one is refused naming that pid. Each agent runs in a
//! process group of its own, recorded in `state.json` while it runs; a run
//! that finds groups left by a killed one (still alive, with its marker)
//! stops them, and says so, before it starts anything.
//!
//! The orchestrator composes AKMS through the [`Knowledge`] seam (build,
//! tags, loadouts, evidence checks, update, mirror, status, review) and
//! never mutates the graph while agents run: evidence is collected per task
//! (`knowledge/sessions/<plan>-phase<N>-<task_id>.md`, a unique path each,
//! with `-2`, `-3`, ... when a file of that name exists: a session file is
//! never overwritten) and applied after the phase's last wave, serially (the
//! serialization point).
//!
//! Each wave's work is committed on the phase branch as the wave ends; the
//! partial edits a failed task left in its scope are first set aside in a
//! `git stash` entry (recorded in the task's state), so they never reach the
//! branch. The phase ends with its Phase Completion Document, validated as
//! `agents knowledge update` validates evidence; the next phase's agents get
//! it as their hand-off (`{handoff}`, `$AGENTS_HANDOFF`). FINALIZE shows the
//! merges at its gate and merges only when approved. A finished run's records
//! move to `knowledge/orchestrator/done/` when the next `run` starts.

mod dispatch;
mod error;
mod git;
mod knowledge;
mod orchestrator;
mod pcd;
mod plan;
mod process;
mod stages;
mod state;
#[cfg(test)]
mod tests;

pub use error::OrchestrateError;
pub use git::GitError;
pub use knowledge::{Knowledge, KnowledgeError, LoadoutSpec, check_memory};
pub use orchestrator::{Orchestrator, utc_clock};
pub use plan::PlanError;
pub use state::{AgentProcess, Event, Stage, State, Status, TaskState, TaskStatus, summary};
