//! The run over one repository: its lock, its saved state, the human gates
//! (start, approve, reject, abort, resume), the checkpoints, and where its
//! files go. The stages themselves are in [`crate::stages`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agents_akms::config::OrchestratorConfig;
use agents_fs::lock::{LockAttempt, ResourceLock};

use crate::error::{OrchestrateError, StageError};
use crate::git::Git;
use crate::knowledge::Knowledge;
use crate::plan::{self, Plan, PlanError};
use crate::state::{Event, Stage, State, Status, TaskStatus, status_label};
use crate::{pcd, process};

/// The largest `state.json` read.
pub(crate) const STATE_CAP: agents_akms::bounded::Cap =
    agents_akms::bounded::Cap::new(64 * agents_akms::bounded::MIB, "a fixed limit for state.json");
/// The largest task record read back.
pub(crate) const RECORD_CAP: agents_akms::bounded::Cap =
    agents_akms::bounded::Cap::new(agents_akms::bounded::MIB, "a fixed limit for task records");

/// `knowledge/orchestrator/.gitignore`: the folder is out of git's view.
pub(crate) const GITIGNORE: &[u8] = b"# agents orchestrate: run state, not project history\n*\n";

/// The clock of a real run: the current UTC time, ISO 8601.
pub fn utc_clock() -> String {
    agents_core::ids::to_iso(agents_core::ids::now_utc())
}

/// A run over one repository.
pub struct Orchestrator<'a> {
    /// The repository's root (its work tree).
    pub repo: PathBuf,
    /// The `orchestrator` section of its propagation config.
    pub config: &'a OrchestratorConfig,
    /// Its knowledge operations.
    pub knowledge: &'a dyn Knowledge,
    /// The time stamps of events and documents (injected for reproducible tests).
    pub clock: &'a (dyn Fn() -> String + Sync),
}

/// What running a stage produced for its checkpoint.
pub(crate) struct StageOutput {
    pub(crate) output: String,
    pub(crate) warnings: Vec<String>,
}

/// What running a stage gives: its checkpoint's content, or why it stopped.
pub(crate) type StageResult = Result<StageOutput, StageError>;

impl Orchestrator<'_> {
    /// The run's folder: `knowledge/orchestrator/`.
    pub fn dir(&self) -> PathBuf {
        self.repo.join("knowledge").join("orchestrator")
    }

    pub(crate) fn state_file(&self) -> PathBuf {
        self.dir().join("state.json")
    }

    pub(crate) fn abort_file(&self) -> PathBuf {
        self.dir().join("abort-requested")
    }

    /// The run lock, taken before anything moves; refused, naming the holder's
    /// pid, while another process holds it. Released when dropped (or when
    /// its process dies, however it dies).
    pub(crate) fn lock(&self) -> Result<ResourceLock, OrchestrateError> {
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

    pub(crate) fn git(&self) -> Git {
        Git::new(&self.repo)
    }

    /// The saved state, if an orchestration was started here.
    pub fn load(&self) -> Result<Option<State>, OrchestrateError> {
        let path = self.state_file();
        let text = match agents_akms::bounded::read_optional(&path, None, STATE_CAP) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(None),
            Err(source) => return Err(OrchestrateError::StateUnreadable { path, source }),
        };
        serde_json::from_str(&text).map(Some).map_err(|source| OrchestrateError::StateInvalid { path, source })
    }

    pub(crate) fn load_started(&self) -> Result<State, OrchestrateError> {
        self.load()?.ok_or_else(|| OrchestrateError::NotStarted(self.repo.clone()))
    }

    pub(crate) fn save(&self, state: &State) -> Result<(), OrchestrateError> {
        self.write_json(&self.state_file(), state)
    }

    /// Writes `value` as pretty JSON (a state, a task record), atomically.
    pub(crate) fn write_json(&self, path: &Path, value: &impl serde::Serialize) -> Result<(), OrchestrateError> {
        let mut json = serde_json::to_string_pretty(value)
            .map_err(|source| OrchestrateError::Serialize { path: path.to_owned(), source })?;
        json.push('\n');
        self.write(path, json.as_bytes())
    }

    pub(crate) fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), OrchestrateError> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|source| OrchestrateError::Io { path: parent.to_owned(), source })?;
        }
        agents_fs::atomic_write(path, bytes).map_err(|source| OrchestrateError::Io { path: path.to_owned(), source })
    }

    pub(crate) fn event(&self, state: &mut State, action: &str, reason: Option<String>) {
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
            dispatching: None,
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
                    Err(e) => {
                        let message = e.to_string();
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
            return Err(OrchestrateError::NoReason);
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
            return Err(OrchestrateError::Done);
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
            return Err(OrchestrateError::Done);
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
                return Err(OrchestrateError::Done);
            }
            Status::AwaitingApproval => {
                return Err(OrchestrateError::AtGate { stage: state.stage, checkpoint: state.checkpoint });
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

    pub(crate) fn awaiting(&self) -> Result<State, OrchestrateError> {
        let state = self.load_started()?;
        if state.status == Status::Done {
            return Err(OrchestrateError::NothingAwaitsDone { plan: state.plan_name });
        }
        if state.status != Status::AwaitingApproval {
            return Err(OrchestrateError::NothingAwaits { stage: state.stage, status: state.status });
        }
        Ok(state)
    }

    /// Stops the agents a killed run left (their process groups still
    /// alive, with its marker), before anything else starts; each is
    /// recorded in the history and logged. Returns what was stopped.
    pub(crate) fn stop_leftovers(&self, state: &mut State) -> Vec<String> {
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
        // An agent started just before the kill, not yet recorded: found by
        // the dispatch's marker.
        if let Some(marker) = state.dispatching.take() {
            for (pgid, task) in process::stop_marked(&marker) {
                let what = format!(
                    "the agent of task `{}` (process group {pgid}) was still running from a run that was killed; it was stopped",
                    task.as_deref().unwrap_or("?")
                );
                tracing::warn!("{what}");
                self.event(state, "stopped a leftover agent", Some(what.clone()));
                stopped.push(what);
            }
        }
        stopped
    }

    /// Runs the current stage and stops at its gate (or on failure or abort).
    pub(crate) fn run(&self, mut state: State) -> Result<State, OrchestrateError> {
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
            Err(e) => {
                let message = e.to_string();
                state.status = Status::Failed;
                self.event(&mut state, "failed", Some(message.clone()));
                state.message = Some(message);
            }
        }
        self.save(&state)?;
        Ok(state)
    }

    /// Writes the checkpoint of a finished stage; returns its path.
    pub(crate) fn checkpoint(&self, state: &State, out: &StageOutput) -> Result<String, OrchestrateError> {
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

    pub(crate) fn task_file(&self, task_id: &str) -> PathBuf {
        self.dir().join("tasks").join(format!("{task_id}.json"))
    }

    pub(crate) fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.repo).unwrap_or(path).to_string_lossy().replace('\\', "/")
    }

    /// Whether a file (or a link, even a dangling one) is at `relative`.
    pub(crate) fn taken(&self, relative: &str) -> bool {
        std::fs::symlink_metadata(self.repo.join(relative)).is_ok()
    }

    /// A session file (an AgentMemory's path) no other task, run or plan
    /// has: `knowledge/sessions/<plan>-phase<N>-<task>.md`, with `-2`, `-3`,
    /// ... when that file exists or another task of this run has it.
    pub(crate) fn session_file(&self, state: &State, phase: u32, task_id: &str) -> String {
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
    pub(crate) fn handoff_file(&self, state: &mut State, phase: u32) -> String {
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
    pub(crate) fn handoff_path(&self, state: &State, phase: u32) -> Option<PathBuf> {
        let file = state.handoffs.get(&phase)?;
        let path = self.repo.join(file);
        path.is_file().then_some(path)
    }

    /// The plan file as documents name it: relative to the repository (with
    /// `..` when it lies outside), as the evidence validator requires.
    pub(crate) fn plan_file_for_documents(&self, state: &State) -> String {
        let plan = std::fs::canonicalize(&state.plan_file).unwrap_or_else(|_| state.plan_file.clone());
        let repo = std::fs::canonicalize(&self.repo).unwrap_or_else(|_| self.repo.clone());
        pcd::relative_to(&plan, &repo).unwrap_or_else(|| {
            state.plan_file.file_name().map_or_else(|| "plan.json".to_owned(), |n| n.to_string_lossy().into_owned())
        })
    }

    /// Moves a finished run's records (state, task records, checkpoints,
    /// logs) to `knowledge/orchestrator/done/<plan>-<n>/`, so a new run
    /// starts clean; returns that folder.
    pub(crate) fn archive(&self, state: &State) -> Result<PathBuf, OrchestrateError> {
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
}
