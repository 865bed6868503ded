//! The stages of a run: PLAN, TASK BREAKDOWN, SCAFFOLD, EXECUTE (waves of
//! agents, the wave commits, the Phase Completion Document, then the
//! knowledge update: the serialization point), REVIEW and FINALIZE.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use crate::dispatch::{self, Job, Outcome};
use crate::error::{JobError, StageError};
use crate::git::{Change, GitError};
use crate::knowledge::LoadoutSpec;
use crate::orchestrator::{Orchestrator, RECORD_CAP, StageOutput, StageResult};
use crate::plan::{self, Plan, Task};
use crate::state::{AgentProcess, State, Status, TaskState, TaskStatus};
use crate::{pcd, process};

impl Orchestrator<'_> {
    pub(crate) fn plan_stage(&self, state: &State) -> StageResult {
        let plan = Plan::read(&state.plan_file)?;
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

    /// The end of a wave: the partial edits of its failed tasks (their scope
    /// files) are set aside in a stash entry and recorded, then the wave's
    /// work is committed on the phase branch.
    pub(crate) fn wave_end(
        &self,
        state: &mut State,
        phase: &plan::Phase,
        wave: usize,
        tasks: &[&Task],
    ) -> Result<(), StageError> {
        let git = self.git();
        for task in tasks {
            if state.tasks.get(&task.task_id).is_none_or(|t| t.status != TaskStatus::Failed) {
                continue;
            }
            let message = format!(
                "{}: partial edits of failed task {} (phase {}, wave {wave})",
                state.plan_name, task.task_id, phase.phase
            );
            let Some(stash) = git.set_aside(&task.scope, &message)? else { continue };
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
        let committed = git.commit_all(&format!(
            "{}: phase {} wave {wave} ({})",
            state.plan_name,
            phase.phase,
            if complete.is_empty() { "no task complete".to_owned() } else { complete.join(", ") }
        ))?;
        if committed {
            let head = git.head()?;
            for id in complete {
                if let Some(t) = state.tasks.get_mut(id) {
                    t.commit = Some(head.clone());
                }
            }
        }
        self.save(state)?;
        Ok(())
    }

    pub(crate) fn breakdown_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file)?;
        self.knowledge.build().map_err(StageError::Build)?;
        let mut out = String::new();
        let mut warnings = Vec::new();
        for phase in &plan.phases {
            let waves = phase.waves().map_err(|source| StageError::Waves { phase: phase.phase, source })?;
            out.push_str(&format!(
                "### Phase {}: {}\n\n| wave | task | scope | tags |\n|---|---|---|---|\n",
                phase.phase, phase.title
            ));
            for (w, wave) in waves.iter().enumerate() {
                for task in wave {
                    let file = self.task_file(&task.task_id);
                    // Keep a record a human already edited; write it otherwise.
                    if !file.exists() {
                        self.write_json(&file, &task.record_json())?;
                    }
                    let tags = self
                        .knowledge
                        .derive_tags(&file)
                        .map_err(|source| StageError::Tags { task: task.task_id.clone(), source })?;
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

    pub(crate) fn branch(&self, state: &State, phase: u32) -> String {
        format!("{}_phase-{phase}", state.plan_name)
    }

    pub(crate) fn scaffold_stage(&self, state: &mut State) -> StageResult {
        let git = self.git();
        if !git.is_repository() {
            return Err(StageError::NotARepository(self.repo.clone()));
        }
        if !git.branch_exists(&state.base_branch) {
            return Err(StageError::NoBaseBranch(state.base_branch.clone()));
        }
        // Changes under knowledge/ (the graph the breakdown built, the tag
        // log) are the orchestration's own and go into the scaffold commit.
        let dirty: Vec<String> = git.dirty()?.into_iter().filter(|p| !p.starts_with("knowledge/")).collect();
        if !dirty.is_empty() {
            return Err(StageError::Uncommitted(dirty));
        }
        let branch = self.branch(state, 1);
        git.switch_to(&branch, &state.base_branch)?;
        self.knowledge.build().map_err(StageError::Build)?;
        let committed = git.commit_all(&format!("{}: scaffold (knowledge graph)", state.plan_name))?;
        Ok(StageOutput {
            output: format!(
                "Phase 1 runs on `{branch}`, branched from `{}`{}.\n",
                state.base_branch,
                if committed { "; the compiled knowledge graph is committed there" } else { "" }
            ),
            warnings: Vec::new(),
        })
    }

    pub(crate) fn aborted(&self, state: &mut State) -> bool {
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

    pub(crate) fn execute_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file)?;
        let phase = plan.phase(state.phase).ok_or(StageError::NoPhase(state.phase))?.clone();
        let git = self.git();
        let branch = self.branch(state, phase.phase);
        let from = if phase.phase == 1 { state.base_branch.clone() } else { self.branch(state, phase.phase - 1) };
        git.switch_to(&branch, &from)?;
        if let std::collections::btree_map::Entry::Vacant(entry) = state.phase_start.entry(phase.phase) {
            entry.insert(git.head()?);
            self.save(state)?;
        }
        if self.config.agent_command.trim().is_empty() {
            return Err(StageError::NoAgentCommand);
        }
        let waves = phase.waves().map_err(|source| StageError::Waves { phase: phase.phase, source })?;
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
                    return Err(StageError::NotInBreakdown(task.task_id.clone()));
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
                    Err(e) => self.finish(state, &task.task_id, TaskStatus::Failed, Some(e.to_string())),
                }
            }
            self.save(state)?;
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
        ))?;
        let start = state.phase_start[&phase.phase].clone();
        let changes: Vec<Change> =
            git.changes_since(&start)?.into_iter().filter(|c| !c.path().starts_with("knowledge/")).collect();
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
        let counts = git.line_counts_since(&start)?;
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
        self.write(&pcd_path, text.as_bytes())?;
        self.save(state)?;
        let updated = if memories.is_empty() {
            "No AgentMemory to apply.".to_owned()
        } else {
            self.knowledge.update(&memories).map_err(StageError::Update)?
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
            self.knowledge.mirror(&mirrored).map_err(StageError::Mirror)?
        };
        git.commit_all(&format!(
            "{}: phase {} knowledge (evidence, code mirror, graph)",
            state.plan_name, phase.phase
        ))?;
        let health = self.knowledge.review(phase.phase).map_err(StageError::Health)?;
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
    pub(crate) fn job(
        &self,
        state: &mut State,
        task: &Task,
        spec: &LoadoutSpec,
        handoff: Option<PathBuf>,
    ) -> Result<Job, JobError> {
        let (role, phase) = (spec.role.as_str(), spec.phase);
        let task_file = self.task_file(&task.task_id);
        if !task_file.exists() {
            self.write_json(&task_file, &task.record_json())?;
        }
        let loadout = self.knowledge.loadout(&task_file, spec).map_err(JobError::Loadout)?;
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
            std::fs::create_dir_all(parent).map_err(|source| JobError::Folder { path: parent.to_owned(), source })?;
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

    pub(crate) fn finish(&self, state: &mut State, task_id: &str, status: TaskStatus, reason: Option<String>) {
        if let Some(t) = state.tasks.get_mut(task_id) {
            t.status = status;
            t.reason = reason;
        }
    }

    /// Runs jobs and checks each AgentMemory as its agent ends: a task is
    /// complete only when its agent exited cleanly and wrote a valid one.
    /// Each agent's process group is in the state while it runs, and each
    /// task's result as soon as it is known.
    pub(crate) fn dispatch(&self, state: &mut State, jobs: &[Job]) {
        if jobs.is_empty() {
            return;
        }
        let marker = process::new_marker();
        // Saved before the first agent starts: a kill between an agent's
        // start and its entry in `agents` leaves the marker to find it by.
        state.dispatching = Some(marker.clone());
        self.save_progress(state);
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
        state.dispatching = None;
        self.save_progress(state);
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
    pub(crate) fn save_progress(&self, state: &State) {
        if let Err(e) = self.save(state) {
            tracing::warn!(error = %e, "cannot save the orchestration state");
        }
    }

    pub(crate) fn review_stage(&self, state: &mut State) -> StageResult {
        let plan = Plan::read(&state.plan_file)?;
        let phase = plan.phase(state.phase).ok_or(StageError::NoPhase(state.phase))?.clone();
        let branch = self.branch(state, phase.phase);
        self.git().switch_to(&branch, &branch)?;
        if self.config.review_roles.is_empty() {
            return Ok(StageOutput {
                output: "No reviewer roles are configured (orchestrator.review_roles).\n".into(),
                warnings: Vec::new(),
            });
        }
        if self.config.agent_command.trim().is_empty() {
            return Err(StageError::NoAgentCommand);
        }
        let start = state.phase_start.get(&phase.phase).cloned().unwrap_or_else(|| "HEAD".into());
        let scope: Vec<String> = self
            .git()
            .changes_since(&start)?
            .into_iter()
            .map(|c| c.path().to_owned())
            .filter(|p| !p.starts_with("knowledge/"))
            .collect();
        let mut tags = BTreeSet::new();
        for task in &phase.tasks {
            if let Ok(text) = agents_akms::bounded::read_text(&self.task_file(&task.task_id), None, RECORD_CAP)
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
                "akms_schema": agents_akms::SCHEMA_VERSION,
            });
            let task = Task::from_record(&record).map_err(StageError::ReviewTask)?;
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
            self.write_json(&file, &task.record_json())?;
            let spec = LoadoutSpec::of(&plan, self.config, role, phase.phase);
            match self.job(state, &task, &spec, handoff.clone()) {
                Ok(job) => jobs.push(job),
                Err(e) => self.finish(state, &id, TaskStatus::Failed, Some(e.to_string())),
            }
        }
        self.save(state)?;
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
            self.knowledge.update(&memories).map_err(StageError::Update)?
        };
        self.git().commit_all(&format!("{}: phase {} review evidence", state.plan_name, phase.phase))?;
        let review = self.knowledge.review(phase.phase).map_err(StageError::Review)?;
        out.push_str(&format!(
            "\n### Update\n\n{}\n\n### Review report\n\n{}\n",
            updated.trim_end(),
            review.trim_end()
        ));
        Ok(StageOutput { output: out, warnings })
    }

    /// The merges FINALIZE makes, in reverse phase order: (phase, branch, into).
    pub(crate) fn merges(&self, state: &State, plan: &Plan) -> Vec<(u32, String, String)> {
        (1..=plan.phases.len() as u32)
            .rev()
            .map(|phase| {
                let into = if phase == 1 { state.base_branch.clone() } else { self.branch(state, phase - 1) };
                (phase, self.branch(state, phase), into)
            })
            .collect()
    }

    /// FINALIZE's gate: what approving it merges. Nothing is merged yet.
    pub(crate) fn finalize_stage(&self, state: &State) -> StageResult {
        let plan = Plan::read(&state.plan_file)?;
        let git = self.git();
        let mut out = String::from("Approving this gate merges, in reverse phase order:\n\n");
        for (_, branch, into) in self.merges(state, &plan) {
            if !git.branch_exists(&branch) {
                return Err(StageError::NoPhaseBranch(branch));
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
    pub(crate) fn merge_all(&self, state: &State, plan: &Plan) -> Result<String, GitError> {
        let git = self.git();
        let mut merged = Vec::new();
        for (phase, branch, into) in self.merges(state, plan) {
            git.merge(&branch, &into, &format!("{}: merge phase {phase} into {into}", state.plan_name))?;
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
