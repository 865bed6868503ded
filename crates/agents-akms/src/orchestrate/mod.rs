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

pub mod dispatch;
pub mod git;
pub mod pcd;
pub mod plan;
pub mod process;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use agents_fs::lock::{LockAttempt, ResourceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::OrchestratorConfig;
use dispatch::{Job, Outcome};

/// The largest `state.json` read.
const STATE_CAP: crate::bounded::Cap =
    crate::bounded::Cap::new(64 * crate::bounded::MIB, "a fixed limit for state.json");
/// The largest task record read back.
const RECORD_CAP: crate::bounded::Cap = crate::bounded::Cap::new(crate::bounded::MIB, "a fixed limit for task records");

/// What every message about a finished run says.
const START_NEW: &str =
    "start a new one with `agents orchestrate run PLAN.json` (this run's records move to knowledge/orchestrator/done/)";

/// `knowledge/orchestrator/.gitignore`: the folder is out of git's view.
const GITIGNORE: &[u8] = b"# agents orchestrate: run state, not project history\n*\n";
use git::{Change, Git, GitError};
use plan::{Plan, PlanError, Task};

/// The AKMS operations a run composes; the CLI implements it with the real
/// compiler, loadouts and updater, tests with stand-ins. Errors are messages
/// for the checkpoint. `check_memory` is called from the threads that wait
/// for agents, as each one ends.
pub trait Knowledge: Sync {
    /// Compiles `graph.json` from the sources.
    fn build(&self) -> Result<(), String>;
    /// Fills a record's empty `akms_tags` by derivation (4.5), logging where
    /// each came from; returns the record's tags afterwards.
    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, String>;
    /// Writes the loadout of the task in `task_file` as `spec` asks, sets the
    /// record's `loadout_path`, and returns the loadout's path.
    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, String>;
    /// Validates an AgentMemory (4.3).
    fn check_memory(&self, memory: &Path) -> Result<(), String>;
    /// Applies evidence documents (AgentMemory or PCD) and recompiles;
    /// returns a summary of what changed.
    fn update(&self, documents: &[PathBuf]) -> Result<String, String>;
    /// Regenerates the code mirror of these repository paths.
    fn mirror(&self, files: &[String]) -> Result<String, String>;
    /// The AKMS status for a checkpoint: node changes, pitfalls, tentative nodes.
    fn status(&self) -> Result<String, String>;
    /// The review report (5.7, FR-R01) of a phase.
    fn review(&self, phase: u32) -> Result<String, String>;
}

/// How the orchestrator asks for a loadout: the role, the phase (recorded in
/// the loadout's header) and the agents' context budget, from which the
/// loadout's mode is chosen (spec 5.4; the plan's `model_context_limit` and
/// `system_prompt_tokens`, else the `orchestrator` settings').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadoutSpec {
    pub role: String,
    pub phase: u32,
    pub context_limit: Option<u64>,
    pub system_prompt_tokens: u64,
}

impl LoadoutSpec {
    /// The loadout of `role` in `phase` of `plan`, with the plan's budget,
    /// else the one `config` sets for every plan.
    pub fn of(plan: &Plan, config: &crate::config::OrchestratorConfig, role: &str, phase: u32) -> LoadoutSpec {
        LoadoutSpec {
            role: role.to_owned(),
            phase,
            context_limit: plan.model_context_limit.or(config.model_context_limit),
            system_prompt_tokens: match plan.system_prompt_tokens {
                0 => config.system_prompt_tokens,
                tokens => tokens,
            },
        }
    }
}

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

fn status_label(status: Status) -> &'static str {
    match status {
        Status::Running => "running",
        Status::AwaitingApproval => "awaiting approval",
        Status::Ready => "ready to run",
        Status::Aborted => "aborted",
        Status::Failed => "failed",
        Status::Done => "done",
    }
}

/// A run over one repository.
pub struct Orchestrator<'a> {
    pub repo: PathBuf,
    pub config: &'a OrchestratorConfig,
    pub knowledge: &'a dyn Knowledge,
    /// The time stamps of events and documents (injected for reproducible tests).
    pub clock: &'a (dyn Fn() -> String + Sync),
}

/// What running a stage produced for its checkpoint.
struct StageOutput {
    output: String,
    warnings: Vec<String>,
}

type StageResult = Result<StageOutput, String>;

impl Orchestrator<'_> {
    pub fn dir(&self) -> PathBuf {
        self.repo.join("knowledge").join("orchestrator")
    }

    fn state_file(&self) -> PathBuf {
        self.dir().join("state.json")
    }

    fn abort_file(&self) -> PathBuf {
        self.dir().join("abort-requested")
    }

    /// The run lock, taken before anything moves; refused, naming the holder's
    /// pid, while another process holds it. Released when dropped (or when
    /// its process dies, however it dies).
    fn lock(&self) -> Result<ResourceLock, OrchestrateError> {
        let gitignore = self.dir().join(".gitignore");
        if !gitignore.exists() {
            self.write(&gitignore, GITIGNORE)?;
        }
        let lock = self.dir().join("run.lock");
        // A process forked by another thread holds a copy of a just-released
        // lock's descriptor until it execs: a busy lock gets a moment more.
        let start = std::time::Instant::now();
        loop {
            match agents_fs::lock::try_lock(&lock) {
                Ok(LockAttempt::Acquired(held)) => return Ok(held),
                Ok(LockAttempt::Busy { .. }) if start.elapsed() < Duration::from_millis(300) => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(LockAttempt::Busy { pid }) => return Err(OrchestrateError::Busy { dir: self.dir(), lock, pid }),
                Err(source) => return Err(OrchestrateError::Io { path: lock, source }),
            }
        }
    }

    fn git(&self) -> Git {
        Git::new(&self.repo)
    }

    /// The saved state, if an orchestration was started here.
    pub fn load(&self) -> Result<Option<State>, OrchestrateError> {
        let path = self.state_file();
        let text = match crate::bounded::read_optional(&path, None, STATE_CAP) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(e) => return Err(OrchestrateError::State { path, message: e.to_string() }),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| OrchestrateError::State {
            path,
            message: format!("line {}: not a valid orchestration state: {e}", e.line()),
        })
    }

    fn load_started(&self) -> Result<State, OrchestrateError> {
        self.load()?.ok_or_else(|| OrchestrateError::NotStarted(self.repo.clone()))
    }

    fn save(&self, state: &State) -> Result<(), OrchestrateError> {
        let mut json = serde_json::to_string_pretty(state)
            .map_err(|e| OrchestrateError::State { path: self.state_file(), message: e.to_string() })?;
        json.push('\n');
        self.write(&self.state_file(), json.as_bytes())
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), OrchestrateError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|source| OrchestrateError::Io { path: parent.to_owned(), source })?;
        }
        agents_fs::atomic_write(path, bytes).map_err(|source| OrchestrateError::Io { path: path.to_owned(), source })
    }

    fn event(&self, state: &mut State, action: &str, reason: Option<String>) {
        state.history.push(Event {
            at: (self.clock)(),
            stage: state.stage,
            phase: state.phase,
            action: action.into(),
            reason,
        });
    }

    /// INIT: records the plan and starts PLAN, which stops at its gate.
    pub fn start(&self, plan_file: &Path) -> Result<State, OrchestrateError> {
        let _lock = self.lock()?;
        if let Some(done) = self.load()?.filter(|s| s.status == Status::Done) {
            let archive = self.archive(&done)?;
            tracing::info!("the finished run of plan `{}` is kept in {}", done.plan_name, archive.display());
        }
        if let Some(state) = self.load()? {
            return Err(OrchestrateError::AlreadyStarted {
                dir: self.dir(),
                stage: state.stage.label(),
                status: status_label(state.status),
            });
        }
        let plan = Plan::read(plan_file)?;
        let plan_file = std::path::absolute(plan_file).unwrap_or_else(|_| plan_file.to_owned());
        let plan_name = if plan.plan_name.is_empty() { self.config.plan_name.clone() } else { plan.plan_name.clone() };
        if plan_name.is_empty() || !plan::is_branch_safe(&plan_name) {
            return Err(OrchestrateError::Plan(PlanError {
                file: plan_file,
                field: "plan_name".into(),
                message: "needed to name the phase branches: set it in the plan or as orchestrator.plan_name".into(),
            }));
        }
        let base_branch = plan.base_branch.clone().unwrap_or_else(|| self.config.base_branch.clone());
        self.write(&self.dir().join(".gitignore"), GITIGNORE)?;
        let mut state = State {
            plan_file,
            plan_name,
            base_branch,
            stage: Stage::Init,
            phase: 0,
            status: Status::Running,
            message: None,
            checkpoint: None,
            phase_start: BTreeMap::new(),
            tasks: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            agents: Vec::new(),
            history: Vec::new(),
        };
        self.event(&mut state, "started", None);
        state.stage = Stage::Plan;
        self.run(state)
    }

    /// The gate's approval: the next stage runs, up to its own gate.
    pub fn approve(&self) -> Result<State, OrchestrateError> {
        let _lock = self.lock()?;
        let mut state = self.awaiting()?;
        self.event(&mut state, "approved", None);
        let plan = Plan::read(&state.plan_file)?;
        let last = plan.phases.len() as u32;
        match state.stage {
            Stage::Init | Stage::Plan => state.stage = Stage::TaskBreakdown,
            Stage::TaskBreakdown => state.stage = Stage::Scaffold,
            Stage::Scaffold => (state.stage, state.phase) = (Stage::Execute, 1),
            Stage::Execute => state.stage = Stage::Review,
            Stage::Review if state.phase < last => (state.stage, state.phase) = (Stage::Execute, state.phase + 1),
            Stage::Review => state.stage = Stage::Finalize,
            Stage::Finalize | Stage::Done => {
                // The gate came first; now the merges it showed.
                state.status = Status::Running;
                self.save(&state)?;
                match self.merge_all(&state, &plan) {
                    Ok(merged) => {
                        state.stage = Stage::Done;
                        state.status = Status::Done;
                        state.checkpoint = None;
                        self.event(&mut state, "merged", Some(merged));
                    }
                    Err(message) => {
                        state.status = Status::Failed;
                        self.event(&mut state, "failed", Some(message.clone()));
                        state.message =
                            Some(format!("{message}; fix it, then `agents orchestrate resume` shows the merges again"));
                    }
                }
                self.save(&state)?;
                return Ok(state);
            }
        }
        state.checkpoint = None;
        state.message = None;
        self.run(state)
    }

    /// The gate's rejection: the reason is recorded and the stage is to run
    /// again (`resume`); for EXECUTE and REVIEW the phase's failed tasks are
    /// dispatched again.
    pub fn reject(&self, reason: &str) -> Result<State, OrchestrateError> {
        if reason.trim().is_empty() {
            return Err(OrchestrateError::Gate("a rejection needs a reason (--reason)".into()));
        }
        let _lock = self.lock()?;
        let mut state = self.awaiting()?;
        self.event(&mut state, "rejected", Some(reason.trim().to_owned()));
        for task in state.tasks.values_mut() {
            if task.phase == state.phase && task.status == TaskStatus::Failed {
                task.status = TaskStatus::Pending;
                task.reason = None;
                task.set_aside = None;
            }
        }
        state.status = Status::Ready;
        state.message = Some(format!("rejected: {}", reason.trim()));
        self.save(&state)?;
        Ok(state)
    }

    /// Stops the run with everything kept. A stage another process runs
    /// notices between waves (an abort request file); a waiting one stops at
    /// once, and so does one whose process was killed (the run lock is free
    /// while its state says running), its leftover agents stopped.
    pub fn abort(&self) -> Result<State, OrchestrateError> {
        let state = self.load_started()?;
        if state.status == Status::Done {
            return Err(OrchestrateError::Gate(format!("the orchestration is already done: {START_NEW}")));
        }
        let _lock = match self.lock() {
            Ok(lock) => lock,
            Err(OrchestrateError::Busy { .. }) => {
                self.write(&self.abort_file(), b"abort requested\n")?;
                return Ok(state);
            }
            Err(e) => return Err(e),
        };
        // Reread what the last holder of the lock saved.
        let mut state = self.load_started()?;
        if state.status == Status::Done {
            return Err(OrchestrateError::Gate(format!("the orchestration is already done: {START_NEW}")));
        }
        self.stop_leftovers(&mut state);
        self.event(&mut state, "aborted", None);
        state.status = Status::Aborted;
        self.save(&state)?;
        Ok(state)
    }

    /// Continues a stopped run: a stage that was aborted, rejected, failed
    /// or interrupted runs (again), skipping the tasks already complete.
    pub fn resume(&self) -> Result<State, OrchestrateError> {
        let _lock = self.lock()?;
        let mut state = self.load_started()?;
        match state.status {
            Status::Done => {
                return Err(OrchestrateError::Gate(format!("the orchestration is already done: {START_NEW}")));
            }
            Status::AwaitingApproval => {
                return Err(OrchestrateError::Gate(format!(
                    "{} waits at its gate: approve or reject it (see {})",
                    state.stage.label(),
                    state.checkpoint.as_deref().unwrap_or("the checkpoint")
                )));
            }
            Status::Aborted => {
                // Aborted at a gate: back to the gate.
                if let Some(checkpoint) = &state.checkpoint
                    && self.repo.join(checkpoint).exists()
                {
                    self.event(&mut state, "resumed", None);
                    state.status = Status::AwaitingApproval;
                    self.save(&state)?;
                    return Ok(state);
                }
            }
            _ => {}
        }
        let _ = std::fs::remove_file(self.abort_file());
        self.event(&mut state, "resumed", None);
        self.run(state)
    }

    fn awaiting(&self) -> Result<State, OrchestrateError> {
        let state = self.load_started()?;
        if state.status == Status::Done {
            return Err(OrchestrateError::Gate(format!(
                "nothing waits for approval: the orchestration of plan `{}` is done; {START_NEW}",
                state.plan_name
            )));
        }
        if state.status != Status::AwaitingApproval {
            return Err(OrchestrateError::Gate(format!(
                "nothing waits for approval: {} is {}{}",
                state.stage.label(),
                status_label(state.status),
                match state.status {
                    Status::Aborted | Status::Ready | Status::Failed | Status::Running =>
                        " (continue with `agents orchestrate resume`)",
                    _ => "",
                }
            )));
        }
        Ok(state)
    }

    /// Stops the agents a killed run left (their process groups still
    /// alive, with its marker), before anything else starts; each is
    /// recorded in the history and logged. Returns what was stopped.
    fn stop_leftovers(&self, state: &mut State) -> Vec<String> {
        let mut stopped = Vec::new();
        for agent in std::mem::take(&mut state.agents) {
            match process::stop_leftover(agent.pgid, &agent.marker) {
                process::Leftover::Stopped => {
                    let what = format!(
                        "the agent of task `{}` (pid {}, process group {}) was still running from a run that was killed; it was stopped",
                        agent.task_id, agent.pid, agent.pgid
                    );
                    tracing::warn!("{what}");
                    self.event(state, "stopped a leftover agent", Some(what.clone()));
                    stopped.push(what);
                }
                process::Leftover::Foreign => tracing::info!(
                    "process group {} of task `{}`'s agent now belongs to another program; left alone",
                    agent.pgid,
                    agent.task_id
                ),
                process::Leftover::Gone => {}
            }
        }
        stopped
    }

    /// Runs the current stage and stops at its gate (or on failure or abort).
    fn run(&self, mut state: State) -> Result<State, OrchestrateError> {
        let _ = std::fs::remove_file(self.abort_file());
        let leftovers = self.stop_leftovers(&mut state);
        state.status = Status::Running;
        state.message = None;
        self.save(&state)?;
        let result = match state.stage {
            Stage::Init | Stage::Plan => self.plan_stage(&state),
            Stage::TaskBreakdown => self.breakdown_stage(&mut state),
            Stage::Scaffold => self.scaffold_stage(&mut state),
            Stage::Execute => self.execute_stage(&mut state),
            Stage::Review => self.review_stage(&mut state),
            Stage::Finalize => self.finalize_stage(&state),
            Stage::Done => Ok(StageOutput { output: "Done.".into(), warnings: Vec::new() }),
        };
        let result = result.map(|mut out| {
            out.warnings.splice(0..0, leftovers);
            out
        });
        if state.status == Status::Aborted {
            self.event(&mut state, "aborted", None);
            self.save(&state)?;
            return Ok(state);
        }
        match result {
            Ok(out) => {
                let checkpoint = self.checkpoint(&state, &out)?;
                state.checkpoint = Some(checkpoint);
                state.status = Status::AwaitingApproval;
                self.event(&mut state, "awaiting approval", None);
            }
            Err(message) => {
                state.status = Status::Failed;
                self.event(&mut state, "failed", Some(message.clone()));
                state.message = Some(message);
            }
        }
        self.save(&state)?;
        Ok(state)
    }

    /// Writes the checkpoint of a finished stage; returns its path.
    fn checkpoint(&self, state: &State, out: &StageOutput) -> Result<String, OrchestrateError> {
        let n = state.history.iter().filter(|e| e.action == "awaiting approval").count() + 1;
        let phase = if matches!(state.stage, Stage::Execute | Stage::Review) {
            format!("-phase-{}", state.phase)
        } else {
            String::new()
        };
        let slug = state.stage.label().to_lowercase().replace(' ', "-");
        let relative = format!("knowledge/orchestrator/checkpoints/{n:02}-{slug}{phase}.md");
        let akms = self.knowledge.status().unwrap_or_else(|e| format!("(the AKMS status is unavailable: {e})"));
        let mut text = format!(
            "# Checkpoint {n}: {}{}\n\nPlan `{}`, plan file `{}`.\n\n## Stage output\n\n{}\n\n## AKMS status\n\n{}\n\n## Warnings\n\n",
            state.stage.label(),
            if phase.is_empty() { String::new() } else { format!(", phase {}", state.phase) },
            state.plan_name,
            state.plan_file.display(),
            out.output.trim_end(),
            akms.trim_end(),
        );
        if out.warnings.is_empty() {
            text.push_str("None.\n");
        }
        for warning in &out.warnings {
            text.push_str(&format!("- {warning}\n"));
        }
        text.push_str(&format!(
            "\n## Actions\n\n\
             - approve: `agents orchestrate approve`\n\
             - reject with a reason (the stage runs again on `agents orchestrate resume`): \
             `agents orchestrate reject --reason \"...\"`\n\
             - edit artifacts: the plan (`{}`) and the task records (`knowledge/orchestrator/tasks/`), then approve or reject\n\
             - abort, keeping everything: `agents orchestrate abort`; continue later with `agents orchestrate resume`\n",
            state.plan_file.display()
        ));
        self.write(&self.repo.join(&relative), text.as_bytes())?;
        Ok(relative)
    }

    fn plan_stage(&self, state: &State) -> StageResult {
        let plan = Plan::read(&state.plan_file).map_err(|e| e.to_string())?;
        let mut out = format!(
            "{} phase(s), {} task(s); phase branches `{}_phase-1` .. `{}_phase-{}` from `{}`.\n\n| phase | title | tasks |\n|---|---|---|\n",
            plan.phases.len(),
            plan.tasks().count(),
            state.plan_name,
            state.plan_name,
            plan.phases.len(),
            state.base_branch
        );
        for phase in &plan.phases {
            let ids: Vec<&str> = phase.tasks.iter().map(|t| t.task_id.as_str()).collect();
            out.push_str(&format!("| {} | {} | {} |\n", phase.phase, phase.title, ids.join(", ")));
        }
        let mut warnings = Vec::new();
        if self.config.agent_command.trim().is_empty() {
            warnings.push(
                "orchestrator.agent_command is not set in knowledge/graph/propagation_config.yaml: EXECUTE cannot dispatch tasks"
                    .to_owned(),
            );
        }
        if !self.git().is_repository() {
            warnings.push(format!("{} is not a git work tree: SCAFFOLD will stop", self.repo.display()));
        }
        Ok(StageOutput { output: out, warnings })
    }

    fn task_file(&self, task_id: &str) -> PathBuf {
        self.dir().join("tasks").join(format!("{task_id}.json"))
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.repo).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }

    /// Whether a file (or a link, even a dangling one) is at `relative`.
    fn taken(&self, relative: &str) -> bool {
        std::fs::symlink_metadata(self.repo.join(relative)).is_ok()
    }

    /// A session file (an AgentMemory's path) no other task, run or plan
    /// has: `knowledge/sessions/<plan>-phase<N>-<task>.md`, with `-2`, `-3`,
    /// ... when that file exists or another task of this run has it.
    fn session_file(&self, state: &State, phase: u32, task_id: &str) -> String {
        let stem = format!("knowledge/sessions/{}-phase{phase}-{task_id}", state.plan_name.replace('/', "-"));
        let free = |p: &String| {
            !self.taken(p) && !self.taken(&format!("{p}.invalid")) && !state.tasks.values().any(|t| &t.memory == p)
        };
        let mut n = 1u32;
        loop {
            let candidate = if n == 1 { format!("{stem}.md") } else { format!("{stem}-{n}.md") };
            if free(&candidate) {
                return candidate;
            }
            n += 1;
        }
    }

    /// The Phase Completion Document of `phase`, chosen once and recorded:
    /// `knowledge/sessions/handoff_phase_<N>.md` (spec 4.4), or, when another
    /// run's file has that name, `<plan>-handoff_phase_<N>.md` (then `-2`, ...).
    fn handoff_file(&self, state: &mut State, phase: u32) -> String {
        if let Some(file) = state.handoffs.get(&phase) {
            return file.clone();
        }
        let plain = format!("knowledge/sessions/handoff_phase_{phase}.md");
        let file = if self.taken(&plain) {
            let stem = format!("knowledge/sessions/{}-handoff_phase_{phase}", state.plan_name.replace('/', "-"));
            let mut n = 1u32;
            loop {
                let candidate = if n == 1 { format!("{stem}.md") } else { format!("{stem}-{n}.md") };
                if !self.taken(&candidate) {
                    break candidate;
                }
                n += 1;
            }
        } else {
            plain
        };
        state.handoffs.insert(phase, file.clone());
        file
    }

    /// The written Phase Completion Document of `phase`, absolute, if any.
    fn handoff_path(&self, state: &State, phase: u32) -> Option<PathBuf> {
        let file = state.handoffs.get(&phase)?;
        let path = self.repo.join(file);
        path.is_file().then_some(path)
    }

    /// The plan file as documents name it: relative to the repository (with
    /// `..` when it lies outside), as the evidence validator requires.
    fn plan_file_for_documents(&self, state: &State) -> String {
        let plan = std::fs::canonicalize(&state.plan_file).unwrap_or_else(|_| state.plan_file.clone());
        let repo = std::fs::canonicalize(&self.repo).unwrap_or_else(|_| self.repo.clone());
        pcd::relative_to(&plan, &repo).unwrap_or_else(|| {
            state.plan_file.file_name().map_or_else(|| "plan.json".to_owned(), |n| n.to_string_lossy().into_owned())
        })
    }

    /// Moves a finished run's records (state, task records, checkpoints,
    /// logs) to `knowledge/orchestrator/done/<plan>-<n>/`, so a new run
    /// starts clean; returns that folder.
    fn archive(&self, state: &State) -> Result<PathBuf, OrchestrateError> {
        let done = self.dir().join("done");
        let mut n = 1u32;
        let target = loop {
            let candidate = done.join(format!("{}-{n}", state.plan_name.replace('/', "-")));
            if std::fs::symlink_metadata(&candidate).is_err() {
                break candidate;
            }
            n += 1;
        };
        std::fs::create_dir_all(&target).map_err(|source| OrchestrateError::Io { path: target.clone(), source })?;
        for name in ["tasks", "checkpoints", "logs", "state.json"] {
            let from = self.dir().join(name);
            if std::fs::symlink_metadata(&from).is_ok() {
                std::fs::rename(&from, target.join(name))
                    .map_err(|source| OrchestrateError::Io { path: from.clone(), source })?;
            }
        }
        Ok(target)
    }

    /// The end of a wave: the partial edits of its failed tasks (their scope
    /// files) are set aside in a stash entry and recorded, then the wave's
    /// work is committed on the phase branch.
    fn wave_end(&self, state: &mut State, phase: &plan::Phase, wave: usize, tasks: &[&Task]) -> Result<(), String> {
        let git = self.git();
        for task in tasks {
            if state.tasks.get(&task.task_id).is_none_or(|t| t.status != TaskStatus::Failed) {
                continue;
            }
            let message = format!(
                "{}: partial edits of failed task {} (phase {}, wave {wave})",
                state.plan_name, task.task_id, phase.phase
            );
            let Some(stash) = git.set_aside(&task.scope, &message).map_err(|e| e.to_string())? else { continue };
            self.event(state, "set aside partial edits", Some(set_aside_note(task, &stash)));
            if let Some(t) = state.tasks.get_mut(&task.task_id) {
                t.set_aside = Some(stash);
            }
        }
        let complete: Vec<&str> = tasks
            .iter()
            .filter(|t| state.tasks.get(&t.task_id).is_some_and(|s| s.status == TaskStatus::Complete))
            .map(|t| t.task_id.as_str())
            .collect();
        let committed = git
            .commit_all(&format!(
                "{}: phase {} wave {wave} ({})",
                state.plan_name,
                phase.phase,
                if complete.is_empty() { "no task complete".to_owned() } else { complete.join(", ") }
            ))
            .map_err(|e| e.to_string())?;
        if committed {
            let head = git.head().map_err(|e| e.to_string())?;
            for id in complete {
                if let Some(t) = state.tasks.get_mut(id) {
                    t.commit = Some(head.clone());
                }
            }
        }
        self.save(state).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn breakdown_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file).map_err(|e| e.to_string())?;
        self.knowledge.build().map_err(|e| format!("building the knowledge graph: {e}"))?;
        let mut out = String::new();
        let mut warnings = Vec::new();
        for phase in &plan.phases {
            let waves = phase.waves().map_err(|e| format!("phase {}: {e}", phase.phase))?;
            out.push_str(&format!(
                "### Phase {}: {}\n\n| wave | task | scope | tags |\n|---|---|---|---|\n",
                phase.phase, phase.title
            ));
            for (w, wave) in waves.iter().enumerate() {
                for task in wave {
                    let file = self.task_file(&task.task_id);
                    // Keep a record a human already edited; write it otherwise.
                    if !file.exists() {
                        let mut json = serde_json::to_string_pretty(&task.record_json()).map_err(|e| e.to_string())?;
                        json.push('\n');
                        self.write(&file, json.as_bytes()).map_err(|e| e.to_string())?;
                    }
                    let tags = self.knowledge.derive_tags(&file)?;
                    if tags.is_empty() {
                        warnings
                            .push(format!("task `{}` has no tags: its loadout will hold no knowledge", task.task_id));
                    }
                    out.push_str(&format!(
                        "| {} | {} | {} | {} |\n",
                        w + 1,
                        task.task_id,
                        task.scope.join(", "),
                        tags.join(", ")
                    ));
                    let memory = self.session_file(state, phase.phase, &task.task_id);
                    let entry = state.tasks.entry(task.task_id.clone()).or_insert_with(|| TaskState {
                        phase: phase.phase,
                        wave: w as u32 + 1,
                        status: TaskStatus::Pending,
                        reason: None,
                        memory,
                        loadout: None,
                        commit: None,
                        set_aside: None,
                    });
                    (entry.phase, entry.wave) = (phase.phase, w as u32 + 1);
                }
            }
            out.push('\n');
        }
        // Tasks the plan no longer has are forgotten.
        let ids: BTreeSet<&str> = plan.tasks().map(|(_, t)| t.task_id.as_str()).collect();
        state.tasks.retain(|id, _| ids.contains(id.as_str()));
        out.push_str("Tags come from each record's `akms_tags`, or by derivation when it is empty (logged in `knowledge/logs/tag-derivation.jsonl`). The task records are in `knowledge/orchestrator/tasks/`.\n");
        Ok(StageOutput { output: out, warnings })
    }

    fn branch(&self, state: &State, phase: u32) -> String {
        format!("{}_phase-{phase}", state.plan_name)
    }

    fn scaffold_stage(&self, state: &mut State) -> StageResult {
        let git = self.git();
        if !git.is_repository() {
            return Err(format!("{} is not a git work tree: phases run on branches", self.repo.display()));
        }
        if !git.branch_exists(&state.base_branch) {
            return Err(format!("the base branch `{}` does not exist", state.base_branch));
        }
        // Changes under knowledge/ (the graph the breakdown built, the tag
        // log) are the orchestration's own and go into the scaffold commit.
        let dirty: Vec<String> =
            git.dirty().map_err(|e| e.to_string())?.into_iter().filter(|p| !p.starts_with("knowledge/")).collect();
        if !dirty.is_empty() {
            return Err(format!(
                "the work tree has uncommitted changes ({}): commit or stash them so phase commits hold only the phase's work",
                dirty.join(", ")
            ));
        }
        let branch = self.branch(state, 1);
        git.switch_to(&branch, &state.base_branch).map_err(|e| e.to_string())?;
        self.knowledge.build().map_err(|e| format!("building the knowledge graph: {e}"))?;
        let committed =
            git.commit_all(&format!("{}: scaffold (knowledge graph)", state.plan_name)).map_err(|e| e.to_string())?;
        Ok(StageOutput {
            output: format!(
                "Phase 1 runs on `{branch}`, branched from `{}`{}.\n",
                state.base_branch,
                if committed { "; the compiled knowledge graph is committed there" } else { "" }
            ),
            warnings: Vec::new(),
        })
    }

    fn aborted(&self, state: &mut State) -> bool {
        if state.status == Status::Aborted {
            true
        } else if self.abort_file().exists() {
            let _ = std::fs::remove_file(self.abort_file());
            state.status = Status::Aborted;
            true
        } else {
            false
        }
    }

    fn execute_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file).map_err(|e| e.to_string())?;
        let phase = plan.phase(state.phase).ok_or_else(|| format!("the plan has no phase {}", state.phase))?.clone();
        let git = self.git();
        let branch = self.branch(state, phase.phase);
        let from = if phase.phase == 1 { state.base_branch.clone() } else { self.branch(state, phase.phase - 1) };
        git.switch_to(&branch, &from).map_err(|e| e.to_string())?;
        if let std::collections::btree_map::Entry::Vacant(entry) = state.phase_start.entry(phase.phase) {
            entry.insert(git.head().map_err(|e| e.to_string())?);
            self.save(state).map_err(|e| e.to_string())?;
        }
        if self.config.agent_command.trim().is_empty() {
            return Err("orchestrator.agent_command is not set in knowledge/graph/propagation_config.yaml".into());
        }
        let waves = phase.waves()?;
        let spec = |role: &str| LoadoutSpec::of(&plan, self.config, role, phase.phase);
        // The previous phase's Phase Completion Document: this phase's hand-off.
        let handoff = (phase.phase > 1).then(|| self.handoff_path(state, phase.phase - 1)).flatten();
        let mut warnings = Vec::new();
        for (w, wave) in waves.iter().enumerate() {
            if self.aborted(state) {
                return Ok(StageOutput { output: String::new(), warnings });
            }
            let mut jobs: Vec<Job> = Vec::new();
            for task in wave {
                let Some(task_state) = state.tasks.get(&task.task_id) else {
                    return Err(format!(
                        "task `{}` is not in the breakdown: reject PLAN or TASK BREAKDOWN and run it again",
                        task.task_id
                    ));
                };
                if task_state.status != TaskStatus::Pending {
                    continue;
                }
                // A task whose dependency failed does not run.
                if let Some(dep) = task
                    .depends_on
                    .iter()
                    .find(|d| state.tasks.get(d.as_str()).is_some_and(|t| t.status == TaskStatus::Failed))
                {
                    self.finish(
                        state,
                        &task.task_id,
                        TaskStatus::Failed,
                        Some(format!("blocked: its dependency `{dep}` failed")),
                    );
                    continue;
                }
                match self.job(state, task, &spec("implementer"), handoff.clone()) {
                    Ok(job) => jobs.push(job),
                    Err(e) => self.finish(state, &task.task_id, TaskStatus::Failed, Some(e)),
                }
            }
            self.save(state).map_err(|e| e.to_string())?;
            self.dispatch(state, &jobs);
            if state.status == Status::Aborted {
                return Ok(StageOutput { output: String::new(), warnings });
            }
            // A wave that ran nothing this time (a resumed run) was ended before.
            if !jobs.is_empty() {
                self.wave_end(state, &phase, w + 1, wave)?;
            }
            let failed: Vec<String> = wave
                .iter()
                .filter_map(|t| {
                    let s = &state.tasks[&t.task_id];
                    (s.status == TaskStatus::Failed)
                        .then(|| format!("task `{}` failed: {}", t.task_id, s.reason.as_deref().unwrap_or("")))
                })
                .collect();
            warnings.extend(failed);
        }
        if self.aborted(state) {
            return Ok(StageOutput { output: String::new(), warnings });
        }
        // The serialization point: agents are done; now the graph changes.
        let complete: Vec<&Task> =
            phase.tasks.iter().filter(|t| state.tasks[&t.task_id].status == TaskStatus::Complete).collect();
        git.commit_all(&format!(
            "{}: phase {} work ({} task(s) complete)",
            state.plan_name,
            phase.phase,
            complete.len()
        ))
        .map_err(|e| e.to_string())?;
        let start = state.phase_start[&phase.phase].clone();
        let changes: Vec<Change> = git
            .changes_since(&start)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|c| !c.path().starts_with("knowledge/"))
            .collect();
        let scoped: BTreeSet<&str> = phase.tasks.iter().flat_map(|t| t.scope.iter().map(String::as_str)).collect();
        let outside: Vec<&str> = changes.iter().map(Change::path).filter(|p| !scoped.contains(p)).collect();
        if !outside.is_empty() {
            warnings.push(format!("changed outside every task's scope: {}", outside.join(", ")));
        }
        let set_aside: Vec<String> = phase
            .tasks
            .iter()
            .filter_map(|t| state.tasks[&t.task_id].set_aside.as_deref().map(|stash| set_aside_note(t, stash)))
            .collect();
        warnings.extend(set_aside.iter().cloned());
        let memories: Vec<PathBuf> = complete.iter().map(|t| self.repo.join(&state.tasks[&t.task_id].memory)).collect();
        let counts = git.line_counts_since(&start).map_err(|e| e.to_string())?;
        let mut pcd_warnings = set_aside.clone();
        pcd_warnings.extend(warnings.iter().filter(|w| w.starts_with("changed outside")).cloned());
        let document = pcd::PhaseDocument {
            phase: phase.phase,
            plan_file: self.plan_file_for_documents(state),
            branch: branch.clone(),
            date: (self.clock)(),
            tasks: phase
                .tasks
                .iter()
                .map(|t| {
                    let s = &state.tasks[&t.task_id];
                    pcd::TaskSummary {
                        task_id: t.task_id.clone(),
                        title: t.title.clone(),
                        complete: s.status == TaskStatus::Complete,
                        memory: (s.status == TaskStatus::Complete).then(|| self.repo.join(&s.memory)),
                        loadout: s.loadout.clone(),
                        reason: s.reason.clone(),
                        scope: t.scope.clone(),
                        commit: s.commit.clone(),
                    }
                })
                .collect(),
            changes: changes
                .iter()
                .map(|c| {
                    let (added, removed) = counts.get(c.path()).copied().unwrap_or((None, None));
                    pcd::FileChange { change: c.clone(), added, removed }
                })
                .collect(),
            warnings: pcd_warnings,
            recommended_start: plan
                .phase(phase.phase + 1)
                .and_then(|next| next.waves().ok())
                .and_then(|waves| waves.first().and_then(|w| w.first()).map(|t| t.task_id.clone())),
        };
        let pcd_rel = self.handoff_file(state, phase.phase);
        let pcd_path = self.repo.join(&pcd_rel);
        let text = pcd::render(&document, Path::new(&pcd_rel))?;
        self.write(&pcd_path, text.as_bytes()).map_err(|e| e.to_string())?;
        self.save(state).map_err(|e| e.to_string())?;
        let updated = if memories.is_empty() {
            "No AgentMemory to apply.".to_owned()
        } else {
            self.knowledge.update(&memories).map_err(|e| format!("updating the graph: {e}"))?
        };
        let mirrored: Vec<String> = changes
            .iter()
            .filter(|c| !matches!(c, Change::Deleted(_)))
            .map(|c| c.path().to_owned())
            .chain(changes.iter().filter(|c| matches!(c, Change::Deleted(_))).map(|c| c.path().to_owned()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mirror = if mirrored.is_empty() {
            "No source file changed.".to_owned()
        } else {
            self.knowledge.mirror(&mirrored).map_err(|e| format!("regenerating the code mirror: {e}"))?
        };
        git.commit_all(&format!("{}: phase {} knowledge (evidence, code mirror, graph)", state.plan_name, phase.phase))
            .map_err(|e| e.to_string())?;
        let health = self.knowledge.review(phase.phase).map_err(|e| format!("the health report: {e}"))?;
        let mut out = format!("On `{branch}`.\n\n| task | wave | status | note |\n|---|---|---|---|\n");
        for task in &phase.tasks {
            let s = &state.tasks[&task.task_id];
            let status = match s.status {
                TaskStatus::Complete => "complete",
                TaskStatus::Failed => "failed",
                TaskStatus::Pending => "pending",
            };
            out.push_str(&format!(
                "| {} | {} | {status} | {} |\n",
                task.task_id,
                s.wave,
                s.reason.as_deref().unwrap_or("")
            ));
        }
        out.push_str(&format!("\nFiles changed: {}.\n\nPhase Completion Document: `{}`.\n\n### Update\n\n{}\n\n### Code mirror\n\n{}\n\n### Health report\n\n{}\n",
            if changes.is_empty() { "none".to_owned() } else { changes.iter().map(|c| format!("`{}`", c.path())).collect::<Vec<_>>().join(", ") },
            self.relative(&pcd_path), updated.trim_end(), mirror.trim_end(), health.trim_end()));
        Ok(StageOutput { output: out, warnings })
    }

    /// A job for a task: its loadout written and its AgentMemory path cleared
    /// (a path this run chose for this task: never another run's file).
    fn job(&self, state: &mut State, task: &Task, spec: &LoadoutSpec, handoff: Option<PathBuf>) -> Result<Job, String> {
        let (role, phase) = (spec.role.as_str(), spec.phase);
        let task_file = self.task_file(&task.task_id);
        if !task_file.exists() {
            let mut json = serde_json::to_string_pretty(&task.record_json()).map_err(|e| e.to_string())?;
            json.push('\n');
            self.write(&task_file, json.as_bytes()).map_err(|e| e.to_string())?;
        }
        let loadout = self.knowledge.loadout(&task_file, spec).map_err(|e| format!("its loadout: {e}"))?;
        let memory_rel = match state.tasks.get(&task.task_id) {
            // Never dispatched, yet a file has its name (another run's, on
            // this branch): a name of its own instead, the file kept.
            Some(t) if t.loadout.is_none() && self.taken(&t.memory) => {
                let fresh = self.session_file(state, phase, &task.task_id);
                tracing::info!("`{}` exists; task `{}` writes `{fresh}` instead", t.memory, task.task_id);
                fresh
            }
            Some(t) => t.memory.clone(),
            None => self.session_file(state, phase, &task.task_id),
        };
        if let Some(t) = state.tasks.get_mut(&task.task_id) {
            t.memory = memory_rel.clone();
        }
        let memory = self.repo.join(&memory_rel);
        // A stale memory from this task's earlier try must not pass for this one's.
        let _ = std::fs::remove_file(&memory);
        if let Some(parent) = memory.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        let loadout_rel = self.relative(&self.repo.join(&loadout));
        if let Some(t) = state.tasks.get_mut(&task.task_id) {
            t.loadout = Some(loadout_rel);
        }
        Ok(Job {
            task_id: task.task_id.clone(),
            task_file,
            loadout: self.repo.join(loadout),
            memory,
            role: role.to_owned(),
            phase,
            handoff,
            log: self.dir().join("logs").join(format!("phase-{phase}")).join(format!("{}.log", task.task_id)),
        })
    }

    fn finish(&self, state: &mut State, task_id: &str, status: TaskStatus, reason: Option<String>) {
        if let Some(t) = state.tasks.get_mut(task_id) {
            t.status = status;
            t.reason = reason;
        }
    }

    /// Runs jobs and checks each AgentMemory as its agent ends: a task is
    /// complete only when its agent exited cleanly and wrote a valid one.
    /// Each agent's process group is in the state while it runs, and each
    /// task's result as soon as it is known.
    fn dispatch(&self, state: &mut State, jobs: &[Job]) {
        if jobs.is_empty() {
            return;
        }
        let marker = process::new_marker();
        let setup = dispatch::Dispatch {
            template: &self.config.agent_command,
            repo: &self.repo,
            parallel: self.config.max_parallel.max(1) as usize,
            timeout: Duration::from_secs(self.config.task_timeout_seconds.max(1)),
            marker: &marker,
        };
        let shared = Mutex::new(state);
        let started = |job: &Job, pid: u32| {
            let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
            state.agents.push(AgentProcess { task_id: job.task_id.clone(), pid, pgid: pid, marker: marker.clone() });
            self.save_progress(&state);
        };
        let done = |job: &Job, outcome: &Outcome| {
            let (status, reason) = match outcome {
                Outcome::Interrupted(_) => {
                    // Not ended: the task stays pending for `resume`.
                    let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
                    state.agents.retain(|a| a.task_id != job.task_id);
                    self.save_progress(&state);
                    return;
                }
                Outcome::Failed(reason) => (TaskStatus::Failed, Some(reason.clone())),
                Outcome::Exited if !job.memory.exists() => (
                    TaskStatus::Failed,
                    Some(format!("the agent wrote no AgentMemory at {}", self.relative(&job.memory))),
                ),
                Outcome::Exited => match self.knowledge.check_memory(&job.memory) {
                    Ok(()) => (TaskStatus::Complete, None),
                    Err(e) => (TaskStatus::Failed, Some(format!("invalid AgentMemory: {e}"))),
                },
            };
            if status == TaskStatus::Failed {
                // Invalid evidence never reaches the graph, nor a commit.
                let _ = std::fs::rename(&job.memory, job.memory.with_extension("md.invalid"));
            }
            let mut state = shared.lock().unwrap_or_else(|e| e.into_inner());
            state.agents.retain(|a| a.task_id != job.task_id);
            self.finish(&mut state, &job.task_id, status, reason);
            self.save_progress(&state);
        };
        dispatch::run_jobs(&setup, jobs, &started, &done);
        let state = shared.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(signal) = process::interrupted() {
            // The agents are stopped; now the orchestrator ends as the
            // signal meant, its state saved for `resume`.
            self.event(state, "interrupted", Some(format!("signal {signal}: the running agents were stopped")));
            self.save_progress(state);
            process::reraise();
            // Still here (the signal's disposition does not end the
            // process): the stage stops as on an abort.
            state.status = Status::Aborted;
        }
    }

    /// Saves progress while agents run; a failed save is retried by the next
    /// one and by the stage's end, which reports its error.
    fn save_progress(&self, state: &State) {
        if let Err(e) = self.save(state) {
            tracing::warn!(error = %e, "cannot save the orchestration state");
        }
    }

    fn review_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file).map_err(|e| e.to_string())?;
        let phase = plan.phase(state.phase).ok_or_else(|| format!("the plan has no phase {}", state.phase))?.clone();
        let branch = self.branch(state, phase.phase);
        self.git().switch_to(&branch, &branch).map_err(|e| e.to_string())?;
        if self.config.review_roles.is_empty() {
            return Ok(StageOutput {
                output: "No reviewer roles are configured (orchestrator.review_roles).\n".into(),
                warnings: Vec::new(),
            });
        }
        if self.config.agent_command.trim().is_empty() {
            return Err("orchestrator.agent_command is not set in knowledge/graph/propagation_config.yaml".into());
        }
        let start = state.phase_start.get(&phase.phase).cloned().unwrap_or_else(|| "HEAD".into());
        let scope: Vec<String> = self
            .git()
            .changes_since(&start)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|c| c.path().to_owned())
            .filter(|p| !p.starts_with("knowledge/"))
            .collect();
        let mut tags = BTreeSet::new();
        for task in &phase.tasks {
            if let Ok(text) = crate::bounded::read_text(&self.task_file(&task.task_id), None, RECORD_CAP)
                && let Ok(record) = serde_json::from_str::<Value>(&text)
            {
                tags.extend(
                    record["akms_tags"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned),
                );
            }
        }
        let mut jobs = Vec::new();
        let mut warnings = Vec::new();
        // Reviewers get the phase's own Phase Completion Document.
        let handoff = self.handoff_path(state, phase.phase);
        for role in &self.config.review_roles {
            let id = format!("phase{}-review-{}", phase.phase, role.replace('_', "-"));
            let record = serde_json::json!({
                "task_id": id,
                "title": format!("Review of phase {} ({role})", phase.phase),
                "objective": format!("Review the changes of phase {}: {}", phase.phase, phase.title),
                "scope": scope,
                "akms_tags": tags,
                "akms_schema": crate::SCHEMA_VERSION,
            });
            let task = Task::from_record(&record).map_err(|(f, m)| format!("the review task: {f}: {m}"))?;
            let memory = self.session_file(state, phase.phase, &id);
            let entry = state.tasks.entry(id.clone()).or_insert_with(|| TaskState {
                phase: phase.phase,
                wave: 0,
                status: TaskStatus::Pending,
                reason: None,
                memory,
                loadout: None,
                commit: None,
                set_aside: None,
            });
            if entry.status != TaskStatus::Pending {
                continue;
            }
            let file = self.task_file(&id);
            let mut json = serde_json::to_string_pretty(&task.record_json()).map_err(|e| e.to_string())?;
            json.push('\n');
            self.write(&file, json.as_bytes()).map_err(|e| e.to_string())?;
            let spec = LoadoutSpec::of(&plan, self.config, role, phase.phase);
            match self.job(state, &task, &spec, handoff.clone()) {
                Ok(job) => jobs.push(job),
                Err(e) => self.finish(state, &id, TaskStatus::Failed, Some(e)),
            }
        }
        self.save(state).map_err(|e| e.to_string())?;
        self.dispatch(state, &jobs);
        if state.status == Status::Aborted {
            return Ok(StageOutput { output: String::new(), warnings });
        }
        let mut memories = Vec::new();
        let mut out = format!("On `{branch}`.\n\n| reviewer | status | note |\n|---|---|---|\n");
        for role in &self.config.review_roles {
            let id = format!("phase{}-review-{}", phase.phase, role.replace('_', "-"));
            let s = &state.tasks[&id];
            match s.status {
                TaskStatus::Complete => memories.push(self.repo.join(&s.memory)),
                _ => warnings.push(format!("reviewer `{role}` failed: {}", s.reason.as_deref().unwrap_or(""))),
            }
            out.push_str(&format!(
                "| {role} | {} | {} |\n",
                if s.status == TaskStatus::Complete { "complete" } else { "failed" },
                s.reason.as_deref().unwrap_or("")
            ));
        }
        let updated = if memories.is_empty() {
            "No reviewer evidence to apply.".to_owned()
        } else {
            self.knowledge.update(&memories).map_err(|e| format!("updating the graph: {e}"))?
        };
        self.git()
            .commit_all(&format!("{}: phase {} review evidence", state.plan_name, phase.phase))
            .map_err(|e| e.to_string())?;
        let review = self.knowledge.review(phase.phase).map_err(|e| format!("the review report: {e}"))?;
        out.push_str(&format!(
            "\n### Update\n\n{}\n\n### Review report\n\n{}\n",
            updated.trim_end(),
            review.trim_end()
        ));
        Ok(StageOutput { output: out, warnings })
    }

    /// The merges FINALIZE makes, in reverse phase order: (phase, branch, into).
    fn merges(&self, state: &State, plan: &Plan) -> Vec<(u32, String, String)> {
        (1..=plan.phases.len() as u32)
            .rev()
            .map(|phase| {
                let into = if phase == 1 { state.base_branch.clone() } else { self.branch(state, phase - 1) };
                (phase, self.branch(state, phase), into)
            })
            .collect()
    }

    /// FINALIZE's gate: what approving it merges. Nothing is merged yet.
    fn finalize_stage(&self, state: &State) -> StageResult {
        let plan = Plan::read(&state.plan_file).map_err(|e| e.to_string())?;
        let git = self.git();
        let mut out = String::from("Approving this gate merges, in reverse phase order:\n\n");
        for (_, branch, into) in self.merges(state, &plan) {
            if !git.branch_exists(&branch) {
                return Err(format!("the phase branch `{branch}` does not exist"));
            }
            out.push_str(&format!("- `{branch}` into `{into}`\n"));
        }
        out.push_str(&format!(
            "\nNothing is merged until then; `{}` is as it was. A conflict undoes its merge and stops here.\n",
            state.base_branch
        ));
        Ok(StageOutput { output: out, warnings: Vec::new() })
    }

    /// The merges of an approved FINALIZE; a conflict is undone and named.
    fn merge_all(&self, state: &State, plan: &Plan) -> Result<String, String> {
        let git = self.git();
        let mut merged = Vec::new();
        for (phase, branch, into) in self.merges(state, plan) {
            git.merge(&branch, &into, &format!("{}: merge phase {phase} into {into}", state.plan_name))
                .map_err(|e| e.to_string())?;
            merged.push(format!("`{branch}` into `{into}`"));
        }
        Ok(format!("merged {}", merged.join(", ")))
    }
}

/// What the record of a failed task's set-aside edits says.
fn set_aside_note(task: &Task, stash: &str) -> String {
    format!(
        "the partial edits of failed task `{}` ({}) were kept off the phase branch in stash {stash}: `git stash apply {stash}` brings them back",
        task.task_id,
        task.scope.join(", ")
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;
    use std::sync::Mutex;

    /// Stand-in AKMS: loadouts are small files, evidence is checked for its
    /// task id, and every update and mirror call is recorded.
    #[derive(Default)]
    struct Fake {
        repo: PathBuf,
        updates: Mutex<Vec<Vec<String>>>,
        mirrored: Mutex<Vec<Vec<String>>>,
        loadouts: Mutex<Vec<LoadoutSpec>>,
    }

    impl Knowledge for Fake {
        fn build(&self) -> Result<(), String> {
            Ok(())
        }
        fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, String> {
            let record: Value = serde_json::from_str(&std::fs::read_to_string(task_file).unwrap()).unwrap();
            Ok(record["akms_tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect())
        }
        fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, String> {
            let id = task_file.file_stem().unwrap().to_string_lossy().into_owned();
            let path = PathBuf::from(format!("knowledge/loadouts/{id}-{}.md", spec.role));
            std::fs::create_dir_all(self.repo.join("knowledge/loadouts")).unwrap();
            std::fs::write(self.repo.join(&path), format!("# Loadout: {id}\n")).unwrap();
            self.loadouts.lock().unwrap().push(spec.clone());
            Ok(path)
        }
        fn check_memory(&self, memory: &Path) -> Result<(), String> {
            let text = std::fs::read_to_string(memory).unwrap();
            let name = memory.file_stem().unwrap().to_string_lossy().into_owned();
            // `<plan>-phase<N>-<task>[-<n>]`
            let id =
                name.split_once("-phase").map_or(name.as_str(), |(_, rest)| rest.split_once('-').map_or(rest, |r| r.1));
            let unsuffixed = id.rsplit_once('-').filter(|(_, n)| n.parse::<u32>().is_ok()).map_or(id, |(id, _)| id);
            if [id, unsuffixed].iter().any(|id| text.contains(&format!("task_id: {id}\n"))) {
                Ok(())
            } else {
                Err("task_id: missing".into())
            }
        }
        fn update(&self, documents: &[PathBuf]) -> Result<String, String> {
            let names = documents.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
            self.updates.lock().unwrap().push(names);
            Ok(format!("applied {} document(s)", documents.len()))
        }
        fn mirror(&self, files: &[String]) -> Result<String, String> {
            self.mirrored.lock().unwrap().push(files.to_vec());
            Ok(format!("mirrored {} file(s)", files.len()))
        }
        fn status(&self) -> Result<String, String> {
            Ok("3 nodes".into())
        }
        fn review(&self, _phase: u32) -> Result<String, String> {
            Ok("no degraded nodes".into())
        }
    }

    fn git(repo: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The stand-in agent: appends to the files of its scope, counts its
    /// runs, writes its AgentMemory; T3 writes an invalid one, T4 fails, and
    /// T1 asks for an abort when `abort-once` exists.
    const AGENT: &str = r#"#!/bin/sh
set -e
id="$1"; memory="$2"; task="$3"
echo "$id" >> runs.log
for f in $(sed -n 's/.*"scope": \[\(.*\)\].*/\1/p' "$task" | tr -d '" ,' ); do :; done
case "$id" in
  T4) exit 1 ;;
esac
if [ "$id" = T1 ] && [ -e abort-once ]; then rm abort-once; touch knowledge/orchestrator/abort-requested; fi
mkdir -p src
echo "work of $id" >> "src/$id.py"
if [ "$id" = T3 ]; then printf -- '---\nstatus: complete\n---\n' > "$memory"; exit 0; fi
printf -- '---\ntask_id: %s\nstatus: complete\ntests_passed: 2\ntests_total: 2\nagent_model: stand-in\nnodes_used: []\npitfalls_discovered:\n  - node_ref: green\n    description: pitfall seen by %s\n    severity: low\nakms_schema: v2\n---\n' "$id" "$id" > "$memory"
"#;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        std::fs::write(repo.join("README.md"), "demo\n").unwrap();
        std::fs::write(repo.join("agent.sh"), AGENT).unwrap();
        std::fs::write(repo.join(".gitignore"), "runs.log\nabort-once\nhandoffs.log\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "init"]);
        let plan = serde_json::json!({
            "plan_name": "demo",
            "phases": [
                {"phase": 1, "title": "first", "tasks": [
                    {"task_id": "T1", "title": "one", "scope": ["src/T1.py"], "akms_tags": ["fft"]},
                    {"task_id": "T2", "title": "two", "scope": ["src/T2.py", "src/shared.py"], "depends_on": ["T1"], "akms_tags": []},
                    {"task_id": "T4", "title": "four", "scope": ["src/T4.py"], "akms_tags": []},
                ]},
                {"phase": 2, "title": "second", "tasks": [
                    {"task_id": "T3", "title": "three", "scope": ["src/T3.py"], "akms_tags": []},
                    {"task_id": "T5", "title": "five", "scope": ["src/T5.py", "src/shared.py"], "akms_tags": []},
                ]},
            ]
        });
        std::fs::write(dir.path().join("plan.json"), serde_json::to_string_pretty(&plan).unwrap()).unwrap();
        (dir, repo)
    }

    fn config() -> OrchestratorConfig {
        OrchestratorConfig {
            agent_command: "sh agent.sh {task_id} {memory} {task_file}".into(),
            review_roles: vec!["code_reviewer".into()],
            ..OrchestratorConfig::default()
        }
    }

    #[test]
    fn two_phases_with_gates_a_failed_task_an_abort_mid_execute_and_merged_branches() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = config();
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let s = o.start(&dir.path().join("plan.json")).unwrap();
        assert_eq!((s.stage, s.status), (Stage::Plan, Status::AwaitingApproval));
        assert!(o.start(&dir.path().join("plan.json")).is_err(), "a second start is refused");
        assert!(o.resume().is_err(), "a gate is not resumed past");
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::TaskBreakdown, Status::AwaitingApproval));
        assert_eq!(s.tasks["T2"].wave, 2);
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Scaffold, Status::AwaitingApproval), "{:?}", s.message);
        assert_eq!(git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "demo_phase-1");

        // EXECUTE phase 1: T1's agent asks for an abort during wave 1.
        std::fs::write(repo.join("abort-once"), "").unwrap();
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.phase, s.status), (Stage::Execute, 1, Status::Aborted));
        assert_eq!(s.tasks["T1"].status, TaskStatus::Complete);
        assert_eq!(s.tasks["T2"].status, TaskStatus::Pending);
        assert!(knowledge.updates.lock().unwrap().is_empty(), "no graph mutation before the phase ends");
        assert!(o.approve().is_err());
        let s = o.resume().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Execute, Status::AwaitingApproval), "{:?}", s.message);
        let runs = std::fs::read_to_string(repo.join("runs.log")).unwrap();
        assert_eq!(runs.lines().filter(|l| *l == "T1").count(), 1, "a complete task is not run again: {runs}");
        assert_eq!(s.tasks["T2"].status, TaskStatus::Complete);
        assert_eq!(s.tasks["T4"].status, TaskStatus::Failed);
        assert!(s.tasks["T4"].reason.as_deref().unwrap().contains("status 1"));
        assert_eq!(
            *knowledge.updates.lock().unwrap(),
            [vec!["demo-phase1-T1.md".to_owned(), "demo-phase1-T2.md".to_owned()]]
        );
        assert_eq!(*knowledge.mirrored.lock().unwrap(), [vec!["src/T1.py".to_owned(), "src/T2.py".to_owned()]]);
        let checkpoint = std::fs::read_to_string(repo.join(s.checkpoint.as_ref().unwrap())).unwrap();
        assert!(checkpoint.contains("## AKMS status\n\n3 nodes"), "{checkpoint}");
        assert!(checkpoint.contains("- task `T4` failed: "), "{checkpoint}");
        let pcd = std::fs::read_to_string(repo.join("knowledge/sessions/handoff_phase_1.md")).unwrap();
        assert!(pcd.contains("pitfall seen by T1") && pcd.contains("pitfall seen by T2"), "{pcd}");
        assert!(pcd.contains("next_phase_warnings:\n- 'task T4 did not complete"), "{pcd}");

        // A rejection reruns the failed task; approve moves on to REVIEW.
        let s = o.reject("T4 must pass").unwrap();
        assert_eq!(s.status, Status::Ready);
        assert_eq!(s.tasks["T4"].status, TaskStatus::Pending);
        let s = o.resume().unwrap();
        assert_eq!(s.tasks["T4"].status, TaskStatus::Failed);
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.phase, s.status), (Stage::Review, 1, Status::AwaitingApproval), "{:?}", s.message);
        assert_eq!(s.tasks["phase1-review-code-reviewer"].status, TaskStatus::Complete);

        // Phase 2: T3's AgentMemory is invalid; it fails and never reaches the graph.
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.phase, s.status), (Stage::Execute, 2, Status::AwaitingApproval), "{:?}", s.message);
        assert!(s.tasks["T3"].reason.as_deref().unwrap().starts_with("invalid AgentMemory"));
        assert!(!knowledge.updates.lock().unwrap().iter().flatten().any(|d| d.ends_with("T3.md")));
        assert_eq!(git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "demo_phase-2");
        let s = o.approve().unwrap();
        assert_eq!(s.stage, Stage::Review);
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Finalize, Status::AwaitingApproval), "{:?}", s.message);
        let s = o.approve().unwrap();
        assert_eq!(s.status, Status::Done);
        assert_eq!(git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
        for file in ["src/T1.py", "src/T2.py", "src/T5.py", "knowledge/sessions/handoff_phase_2.md"] {
            assert!(repo.join(file).exists(), "{file} merged into main");
        }
        assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty());
        let actions: Vec<&str> = s.history.iter().map(|e| e.action.as_str()).collect();
        assert!(actions.contains(&"rejected") && actions.contains(&"aborted") && actions.contains(&"resumed"));
    }

    #[test]
    fn a_scope_conflict_is_refused_before_anything_runs() {
        let (dir, repo) = setup();
        let plan = serde_json::json!({"plan_name": "demo", "phases": [{"phase": 1, "tasks": [
            {"task_id": "A", "scope": ["src/x.py"]}, {"task_id": "B", "scope": ["src/x.py"]}]}]});
        std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = config();
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let e = o.start(&dir.path().join("plan.json")).unwrap_err().to_string();
        assert!(e.contains("tasks `A` and `B` both have `src/x.py` in their scope"), "{e}");
        assert!(!o.dir().join("state.json").exists());
    }

    #[test]
    fn a_merge_conflict_stops_at_finalize_with_the_base_branch_untouched() {
        let (dir, repo) = setup();
        let plan = serde_json::json!({"plan_name": "c", "phases": [{"phase": 1, "tasks": [
            {"task_id": "T1", "scope": ["README.md"]}]}]});
        std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig { review_roles: Vec::new(), ..config() };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        o.start(&dir.path().join("plan.json")).unwrap();
        for _ in 0..2 {
            o.approve().unwrap();
        }
        let s = o.approve().unwrap(); // EXECUTE
        assert_eq!(s.status, Status::AwaitingApproval, "{:?}", s.message);
        // Someone changes src/T1.py on main meanwhile.
        git(&repo, &["checkout", "-q", "main"]);
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/T1.py"), "conflicting\n").unwrap();
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "meanwhile"]);
        let main_before = git(&repo, &["rev-parse", "main"]);
        let s = o.approve().unwrap(); // REVIEW (no reviewers)
        assert_eq!(s.stage, Stage::Review);
        let s = o.approve().unwrap(); // FINALIZE: its gate, nothing merged yet
        assert_eq!((s.stage, s.status), (Stage::Finalize, Status::AwaitingApproval), "{:?}", s.message);
        let s = o.approve().unwrap(); // the merge, which conflicts
        assert_eq!((s.stage, s.status), (Stage::Finalize, Status::Failed));
        assert!(s.message.as_deref().unwrap().contains("conflicts in src/T1.py"), "{:?}", s.message);
        assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);
        assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty(), "no half merge left");
        // `resume` shows the merges again at the gate.
        let s = o.resume().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Finalize, Status::AwaitingApproval), "{:?}", s.message);
    }

    /// A one-phase plan (no reviewers) in `dir`/`name`, its tasks writing
    /// their scope files.
    fn one_phase_plan(dir: &Path, name: &str, plan_name: &str, tasks: &[&str]) -> PathBuf {
        let tasks: Vec<Value> = tasks
            .iter()
            .map(|id| serde_json::json!({"task_id": id, "title": format!("task {id}"), "scope": [format!("src/{id}.py")]}))
            .collect();
        let plan = serde_json::json!({"plan_name": plan_name, "phases": [{"phase": 1, "tasks": tasks}]});
        let file = dir.join(name);
        std::fs::write(&file, plan.to_string()).unwrap();
        file
    }

    /// From `start` to EXECUTE's gate.
    fn to_execute_gate(o: &Orchestrator<'_>, plan: &Path) -> State {
        o.start(plan).unwrap();
        o.approve().unwrap();
        o.approve().unwrap();
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Execute, Status::AwaitingApproval), "{:?}", s.message);
        s
    }

    #[cfg(unix)]
    #[test]
    fn a_state_file_that_is_a_fifo_or_too_big_is_refused_not_read() {
        let (_dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = config();
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        std::fs::create_dir_all(o.dir()).unwrap();
        let state = o.dir().join("state.json");
        let made = Command::new("mkfifo").arg(&state).status().unwrap();
        assert!(made.success());
        // A hang guard: a blocking read of the FIFO would never return.
        let (tx, rx) = std::sync::mpsc::channel();
        let repo2 = repo.clone();
        std::thread::spawn(move || {
            let knowledge = Fake { repo: repo2.clone(), ..Fake::default() };
            let config = OrchestratorConfig::default();
            let clock = || "t".to_owned();
            let o = Orchestrator { repo: repo2, config: &config, knowledge: &knowledge, clock: &clock };
            let _ = tx.send(o.load().map(|_| ()).map_err(|e| e.to_string()));
        });
        let e = rx.recv_timeout(Duration::from_secs(20)).expect("load returned").unwrap_err();
        assert!(e.contains("state.json") && e.contains("FIFO"), "{e}");
        std::fs::remove_file(&state).unwrap();
        std::fs::File::create(&state).unwrap().set_len(STATE_CAP.bytes + 1).unwrap();
        let e = o.load().unwrap_err().to_string();
        assert!(e.contains("state.json") && e.contains("over the limit"), "{e}");
    }

    #[test]
    fn the_finalize_gate_comes_before_the_merge() {
        let (dir, repo) = setup();
        let plan = one_phase_plan(dir.path(), "plan.json", "demo", &["T1"]);
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig { review_roles: Vec::new(), ..config() };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        to_execute_gate(&o, &plan);
        let main_before = git(&repo, &["rev-parse", "main"]);
        assert_eq!(o.approve().unwrap().stage, Stage::Review);
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Finalize, Status::AwaitingApproval), "{:?}", s.message);
        assert_eq!(git(&repo, &["rev-parse", "main"]), main_before, "nothing merged before the gate");
        let checkpoint = std::fs::read_to_string(repo.join(s.checkpoint.as_ref().unwrap())).unwrap();
        assert!(checkpoint.contains("Approving this gate merges") && checkpoint.contains("`demo_phase-1` into `main`"));
        let s = o.approve().unwrap();
        assert_eq!(s.status, Status::Done);
        assert_ne!(git(&repo, &["rev-parse", "main"]), main_before, "merged once approved");
        assert!(repo.join("src/T1.py").exists());
        assert!(s.history.iter().any(|e| e.action == "merged"));
    }

    #[test]
    fn a_failed_tasks_partial_edits_are_not_committed_to_the_phase_branch() {
        let (dir, repo) = setup();
        let plan = one_phase_plan(dir.path(), "plan.json", "demo", &["T1", "T6"]);
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        // T6 edits its file, then fails.
        let config = OrchestratorConfig {
            agent_command: "if [ {task_id} = T6 ]; then mkdir -p src; echo partial > src/T6.py; exit 1; fi; \
                            sh agent.sh {task_id} {memory} {task_file}"
                .into(),
            review_roles: Vec::new(),
            ..config()
        };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let s = to_execute_gate(&o, &plan);
        assert_eq!(s.tasks["T6"].status, TaskStatus::Failed);
        let tree = git(&repo, &["ls-tree", "-r", "--name-only", "demo_phase-1"]);
        assert!(tree.contains("src/T1.py") && !tree.contains("src/T6.py"), "{tree}");
        assert!(!repo.join("src/T6.py").exists(), "the partial edit is out of the work tree");
        assert!(git(&repo, &["status", "--porcelain"]).trim().is_empty());
        // Recorded where it went, and it can be brought back.
        let stash = s.tasks["T6"].set_aside.clone().expect("recorded");
        assert!(s.history.iter().any(|e| e.action == "set aside partial edits"));
        let checkpoint = std::fs::read_to_string(repo.join(s.checkpoint.as_ref().unwrap())).unwrap();
        assert!(checkpoint.contains(&format!("git stash apply {stash}")), "{checkpoint}");
        let pcd = std::fs::read_to_string(repo.join(&s.handoffs[&1])).unwrap();
        assert!(pcd.contains(&format!("stash {stash}")), "{pcd}");
        // T1's work is in a commit of its own wave, recorded.
        let commit = s.tasks["T1"].commit.clone().expect("T1's commit");
        assert!(
            git(&repo, &["log", "--format=%H %s", "demo_phase-1"])
                .contains(&format!("{commit} demo: phase 1 wave 1 (T1)"))
        );
        assert!(summary(&s).contains(&format!("[partial edits in stash {stash}: `git stash apply {stash}`]")));
        git(&repo, &["stash", "apply", &stash]);
        assert_eq!(std::fs::read_to_string(repo.join("src/T6.py")).unwrap(), "partial\n");
    }

    #[test]
    fn session_files_are_never_overwritten_by_a_second_plan_reusing_a_task_id() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig { review_roles: Vec::new(), ..config() };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let first = one_phase_plan(dir.path(), "first.json", "demo", &["T1"]);
        let s = to_execute_gate(&o, &first);
        assert_eq!(s.tasks["T1"].memory, "knowledge/sessions/demo-phase1-T1.md");
        for _ in 0..3 {
            o.approve().unwrap();
        }
        let first_memory = std::fs::read(repo.join("knowledge/sessions/demo-phase1-T1.md")).unwrap();
        let first_pcd = std::fs::read(repo.join("knowledge/sessions/handoff_phase_1.md")).unwrap();
        // A second plan of the same name reuses T1 (and phase 1).
        let second = one_phase_plan(dir.path(), "second.json", "demo", &["T1"]);
        let s = to_execute_gate(&o, &second);
        assert_eq!(s.tasks["T1"].memory, "knowledge/sessions/demo-phase1-T1-2.md");
        assert_eq!(s.handoffs[&1], "knowledge/sessions/demo-handoff_phase_1.md");
        assert_eq!(std::fs::read(repo.join("knowledge/sessions/demo-phase1-T1.md")).unwrap(), first_memory);
        assert_eq!(std::fs::read(repo.join("knowledge/sessions/handoff_phase_1.md")).unwrap(), first_pcd);
        assert!(repo.join("knowledge/sessions/demo-phase1-T1-2.md").exists());
        assert_eq!(knowledge.updates.lock().unwrap().last().unwrap(), &["demo-phase1-T1-2.md".to_owned()]);
        assert!(o.dir().join("done/demo-1/state.json").exists(), "the finished run's records were kept");
    }

    #[test]
    fn a_session_file_that_appears_at_a_tasks_name_before_its_dispatch_is_kept() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig { review_roles: Vec::new(), ..config() };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let plan = one_phase_plan(dir.path(), "plan.json", "demo", &["T1"]);
        o.start(&plan).unwrap();
        o.approve().unwrap();
        o.approve().unwrap(); // SCAFFOLD, on the phase branch
        // Another run's session file appears under T1's name on this branch.
        std::fs::create_dir_all(repo.join("knowledge/sessions")).unwrap();
        std::fs::write(repo.join("knowledge/sessions/demo-phase1-T1.md"), "earlier evidence\n").unwrap();
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.status), (Stage::Execute, Status::AwaitingApproval), "{:?}", s.message);
        assert_eq!(s.tasks["T1"].memory, "knowledge/sessions/demo-phase1-T1-2.md");
        let kept = std::fs::read_to_string(repo.join("knowledge/sessions/demo-phase1-T1.md")).unwrap();
        assert_eq!(kept, "earlier evidence\n");
        assert_eq!(s.tasks["T1"].status, TaskStatus::Complete);
    }

    #[test]
    fn a_finished_run_tells_how_to_start_a_new_one_and_the_next_starts_clean() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig { review_roles: Vec::new(), ..config() };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let first = one_phase_plan(dir.path(), "first.json", "one", &["T1"]);
        to_execute_gate(&o, &first);
        for _ in 0..3 {
            o.approve().unwrap();
        }
        let done = o.load().unwrap().unwrap();
        assert_eq!(done.status, Status::Done);
        assert!(
            summary(&done).contains("start a new one with `agents orchestrate run PLAN.json`"),
            "{}",
            summary(&done)
        );
        for e in [o.approve().unwrap_err(), o.resume().unwrap_err(), o.abort().unwrap_err(), o.reject("x").unwrap_err()]
        {
            assert!(e.to_string().contains("agents orchestrate run PLAN.json"), "{e}");
        }
        // The next run starts; the old task record does not leak into it.
        let second = one_phase_plan(dir.path(), "second.json", "two", &["T1"]);
        let s = o.start(&second).unwrap();
        assert_eq!((s.plan_name.as_str(), s.stage), ("two", Stage::Plan));
        assert!(o.dir().join("done/one-1/tasks/T1.json").exists());
        assert!(!o.dir().join("tasks/T1.json").exists());
    }

    #[test]
    fn phases_hand_off_the_previous_pcd_and_loadouts_get_the_phase_and_the_plans_context_budget() {
        let (dir, repo) = setup();
        let plan = serde_json::json!({"plan_name": "h", "model_context_limit": 200000, "system_prompt_tokens": 9000,
        "phases": [
            {"phase": 1, "tasks": [{"task_id": "T1", "title": "one", "scope": ["src/T1.py"]}]},
            {"phase": 2, "tasks": [{"task_id": "T2", "title": "two", "scope": ["src/T2.py"]}]},
        ]});
        std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = OrchestratorConfig {
            agent_command: "echo {task_id} {handoff} \"$AGENTS_HANDOFF\" >> handoffs.log; sh agent.sh {task_id} {memory} {task_file}".into(),
            review_roles: Vec::new(),
            ..config()
        };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        let s = to_execute_gate(&o, &dir.path().join("plan.json"));
        let pcd = std::fs::read_to_string(repo.join(&s.handoffs[&1])).unwrap();
        // Valid for `agents knowledge update`: a relative plan file, real change summaries.
        crate::evidence::parse_evidence(Path::new("handoff_phase_1.md"), &pcd).unwrap();
        assert!(pcd.contains("plan_file: ../plan.json\n"), "{pcd}");
        assert!(pcd.contains("created by task T1 (one), +1 -0 lines"), "{pcd}");
        assert!(pcd.contains("recommended_start: T2"), "{pcd}");
        o.approve().unwrap();
        let s = o.approve().unwrap();
        assert_eq!((s.stage, s.phase, s.status), (Stage::Execute, 2, Status::AwaitingApproval), "{:?}", s.message);
        let log = std::fs::read_to_string(repo.join("handoffs.log")).unwrap();
        let handoff = repo.join("knowledge/sessions/handoff_phase_1.md").display().to_string();
        assert_eq!(log, format!("T1  \nT2 {handoff} {handoff}\n"));
        let specs = knowledge.loadouts.lock().unwrap().clone();
        let spec = |role: &str, phase| LoadoutSpec {
            role: role.into(),
            phase,
            context_limit: Some(200000),
            system_prompt_tokens: 9000,
        };
        assert_eq!(specs, [spec("implementer", 1), spec("implementer", 2)]);
    }

    #[test]
    fn the_context_budget_comes_from_the_plan_else_from_the_orchestrator_settings() {
        let plan = |text: serde_json::Value| Plan::parse(Path::new("plan.json"), &text.to_string()).unwrap();
        let phases = serde_json::json!([{"phase": 1, "tasks": [{"task_id": "T1", "title": "one", "scope": ["a.py"]}]}]);
        let settings = OrchestratorConfig { model_context_limit: Some(128000), system_prompt_tokens: 4000, ..config() };
        let bare = plan(serde_json::json!({"phases": phases}));
        let spec = LoadoutSpec::of(&bare, &settings, "implementer", 1);
        assert_eq!((spec.context_limit, spec.system_prompt_tokens), (Some(128000), 4000));
        let own =
            plan(serde_json::json!({"model_context_limit": 200000, "system_prompt_tokens": 9000, "phases": phases}));
        let spec = LoadoutSpec::of(&own, &settings, "implementer", 1);
        assert_eq!((spec.context_limit, spec.system_prompt_tokens), (Some(200000), 9000));
        let spec = LoadoutSpec::of(&bare, &config(), "implementer", 1);
        assert_eq!((spec.context_limit, spec.system_prompt_tokens), (None, 0), "unset: the loadout's default");
    }

    /// Waits for `path` to exist, as a hang guard at most 20 s.
    fn wait_for(path: &Path) {
        let start = std::time::Instant::now();
        while !path.exists() {
            assert!(start.elapsed() < Duration::from_secs(20), "{} never appeared", path.display());
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The process group of a live process, from /proc; None once it is
    /// gone or a zombie.
    #[cfg(target_os = "linux")]
    fn live_group(pid: u32) -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        if matches!(fields[0], "Z" | "X") { None } else { fields[2].parse().ok() }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_second_resume_while_a_run_holds_the_lock_is_refused_naming_its_pid() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        // T1's agent writes its pid and waits for `go` (at most 20 s).
        let config = OrchestratorConfig {
            agent_command: "if [ {task_id} = T1 ]; then echo $$ > ../T1.pid; i=0; \
                            while [ ! -e ../go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; fi; \
                            sh agent.sh {task_id} {memory} {task_file}"
                .into(),
            ..config()
        };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        o.start(&dir.path().join("plan.json")).unwrap();
        o.approve().unwrap();
        o.approve().unwrap(); // SCAFFOLD
        std::thread::scope(|scope| {
            let running = scope.spawn(|| o.approve()); // EXECUTE phase 1
            wait_for(&dir.path().join("T1.pid"));
            let start = std::time::Instant::now();
            let during = loop {
                let state = o.load().unwrap().unwrap();
                if state.agents.iter().any(|a| a.task_id == "T1") || start.elapsed() > Duration::from_secs(20) {
                    break state;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let refused = o.resume();
            let others_refused = o.approve().is_err() && o.reject("no").is_err();
            std::fs::write(dir.path().join("go"), "").unwrap();
            let e = refused.unwrap_err();
            assert!(matches!(e, OrchestrateError::Busy { pid: Some(pid), .. } if pid == std::process::id()), "{e:?}");
            let message = e.to_string();
            assert!(message.contains(&format!("process {}", std::process::id())), "{message}");
            assert!(others_refused, "every command that moves the run is refused");
            // The running agent is in the state, with its process group.
            let agent = during.agents.iter().find(|a| a.task_id == "T1").expect("T1's agent recorded");
            let pid: u32 = std::fs::read_to_string(dir.path().join("T1.pid")).unwrap().trim().parse().unwrap();
            assert_eq!(agent.pgid, agent.pid);
            if let Some(group) = live_group(pid) {
                assert_eq!(group, agent.pgid, "the agent leads its own process group");
            }
            let s = running.join().unwrap().unwrap();
            assert_eq!((s.stage, s.status), (Stage::Execute, Status::AwaitingApproval), "{:?}", s.message);
            assert!(s.agents.is_empty(), "no agent left recorded: {:?}", s.agents);
        });
        let runs = std::fs::read_to_string(repo.join("runs.log")).unwrap();
        assert_eq!(runs.lines().filter(|l| *l == "T1").count(), 1, "T1 dispatched once: {runs}");
        // The lock went with the run: the next command moves on.
        assert_eq!(o.approve().unwrap().stage, Stage::Review);
    }

    /// Makes the state that of a run killed mid-EXECUTE: Running, with T1's
    /// agent (a process group with the run's marker: a `sleep` whose shell
    /// has exited) still alive. Returns the group's id and the sleep's pid.
    #[cfg(target_os = "linux")]
    fn killed_mid_execute(o: &Orchestrator<'_>) -> (u32, u32) {
        let mut command = Command::new("sh");
        command
            .args(["-c", "sleep 300 > /dev/null 2>&1 & echo $!"])
            .env(process::RUN_MARKER_ENV, "killed-run")
            .stdout(std::process::Stdio::piped());
        process::new_group(&mut command);
        let child = command.spawn().unwrap();
        let pgid = child.id();
        let out = child.wait_with_output().unwrap();
        let sleeper: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        assert_eq!(live_group(sleeper), Some(pgid));
        let mut state = o.load().unwrap().unwrap();
        (state.stage, state.phase, state.status) = (Stage::Execute, 1, Status::Running);
        state.agents = vec![AgentProcess { task_id: "T1".into(), pid: pgid, pgid, marker: "killed-run".into() }];
        o.save(&state).unwrap();
        (pgid, sleeper)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn abort_after_a_killed_run_stops_its_leftover_agents() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        let config = config();
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        o.start(&dir.path().join("plan.json")).unwrap();
        let (_, sleeper) = killed_mid_execute(&o);
        let s = o.abort();
        let alive = live_group(sleeper).is_some();
        if alive {
            let _ = Command::new("kill").arg(sleeper.to_string()).status();
        }
        let s = s.unwrap();
        assert!(!alive, "the leftover agent {sleeper} still runs");
        assert!(s.agents.is_empty() && s.history.iter().any(|e| e.action == "stopped a leftover agent"));
        assert_eq!((s.stage, s.status), (Stage::Execute, Status::Aborted));
        assert_eq!(o.load().unwrap().unwrap(), s, "saved");
        assert!(!repo.join("runs.log").exists(), "nothing dispatched");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn resume_after_a_killed_run_stops_its_leftover_agents_before_dispatching() {
        let (dir, repo) = setup();
        let knowledge = Fake { repo: repo.clone(), ..Fake::default() };
        // Each agent first notes whether the leftover still runs.
        let check = dir.path().join("check.sh");
        std::fs::write(
            &check,
            "p=$(cat \"$1\"); s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -c1)\n\
             if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo leftover-alive >> runs.log; fi\n",
        )
        .unwrap();
        let leftover_pid = dir.path().join("leftover.pid");
        let config = OrchestratorConfig {
            agent_command: format!(
                "sh '{}' '{}'; sh agent.sh {{task_id}} {{memory}} {{task_file}}",
                check.display(),
                leftover_pid.display()
            ),
            ..config()
        };
        let clock = || "2026-11-30T00:00:00Z".to_owned();
        let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
        o.start(&dir.path().join("plan.json")).unwrap();
        o.approve().unwrap();
        o.approve().unwrap(); // SCAFFOLD

        let (pgid, sleeper) = killed_mid_execute(&o);
        std::fs::write(&leftover_pid, sleeper.to_string()).unwrap();

        let s = o.resume();
        let alive = live_group(sleeper).is_some();
        if alive {
            let _ = Command::new("kill").arg(sleeper.to_string()).status();
        }
        let s = s.unwrap();
        assert!(!alive, "the leftover agent {sleeper} still runs");
        assert_eq!((s.stage, s.status), (Stage::Execute, Status::AwaitingApproval), "{:?}", s.message);
        let runs = std::fs::read_to_string(repo.join("runs.log")).unwrap();
        assert!(runs.contains("T1") && !runs.contains("leftover-alive"), "stopped before any dispatch: {runs}");
        let event = s.history.iter().find(|e| e.action == "stopped a leftover agent").expect("reported");
        assert!(event.reason.as_deref().unwrap().contains(&format!("task `T1` (pid {pgid}, process group {pgid})")));
        let checkpoint = std::fs::read_to_string(repo.join(s.checkpoint.as_ref().unwrap())).unwrap();
        assert!(checkpoint.contains("was still running from a run that was killed"), "{checkpoint}");
        assert!(s.agents.is_empty());
    }
}
