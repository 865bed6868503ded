//! Running agents: the configured command template (`orchestrator.
//! agent_command`) with a job's values put in, shell-quoted, through
//! `sh -c`; the jobs of a wave in parallel up to a limit, each under a
//! timeout. Each agent runs in a process group of its own ([`crate::process`]):
//! a timeout stops the whole group, and what an agent leaves running when it
//! exits is stopped too. The agent's output goes to a log file per job;
//! nothing here reads or writes the knowledge graph.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process;

/// One agent run: the values of the template's placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub task_id: String,
    pub task_file: PathBuf,
    pub loadout: PathBuf,
    pub memory: PathBuf,
    pub role: String,
    pub phase: u32,
    /// The hand-off the agent gets: the previous phase's Phase Completion
    /// Document (for a reviewer, its own phase's); `None` in phase 1.
    pub handoff: Option<PathBuf>,
    /// Where the agent's stdout and stderr go.
    pub log: PathBuf,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Exit status 0.
    Exited,
    /// A non-zero exit, a signal, a timeout or a failed start: the reason.
    Failed(String),
    /// The orchestrator itself got this signal (SIGINT, SIGTERM, SIGHUP) and
    /// stopped the agent: the task did not end, either way.
    Interrupted(i32),
}

/// What is wrong with the command template (`orchestrator.agent_command`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` with no `}` after it.
    #[error("an unclosed `{{` in `{template}`")]
    Unclosed { template: String },
    /// A `{name}` that is no placeholder; `known` lists those that are.
    #[error("unknown placeholder `{{{name}}}` (known: {})", known.join(", "))]
    UnknownPlaceholder { name: String, known: Vec<String> },
}

/// The command line of `job`: every `{name}` of the template replaced by the
/// shell-quoted value; an unknown placeholder is an error naming it.
pub fn command_line(template: &str, repo: &Path, job: &Job) -> Result<String, TemplateError> {
    let values: BTreeMap<&str, String> = [
        ("task_id", job.task_id.clone()),
        ("task_file", job.task_file.display().to_string()),
        ("loadout", job.loadout.display().to_string()),
        ("memory", job.memory.display().to_string()),
        ("role", job.role.clone()),
        ("phase", job.phase.to_string()),
        ("repo", repo.display().to_string()),
        ("handoff", job.handoff.as_ref().map(|h| h.display().to_string()).unwrap_or_default()),
    ]
    .into_iter()
    .collect();
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            return Err(TemplateError::Unclosed { template: template.to_owned() });
        };
        let name = &after[..close];
        let value = values.get(name).ok_or_else(|| TemplateError::UnknownPlaceholder {
            name: name.to_owned(),
            known: values.keys().map(|k| (*k).to_owned()).collect(),
        })?;
        out.push_str(&shell_quote(value));
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn shell_quote(value: &str) -> String {
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+".contains(c)) {
        value.to_owned()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// How jobs run.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch<'a> {
    /// The command template (`orchestrator.agent_command`).
    pub template: &'a str,
    /// The repository: the agents' working directory and `{repo}`.
    pub repo: &'a Path,
    /// At most this many agents at once.
    pub parallel: usize,
    /// Each agent's process group is stopped after this long.
    pub timeout: Duration,
    /// The value of [`process::RUN_MARKER_ENV`] in every agent's environment.
    pub marker: &'a str,
}

/// Runs the jobs, at most `parallel` at once, each stopped after `timeout`;
/// the outcomes come back in the jobs' order. `started` is told of each
/// agent's pid (its process group's id) once it runs, and `done` of each job
/// as it ends, its process group stopped (both from the worker thread), so a
/// caller can save progress. If the orchestrator gets SIGINT, SIGTERM or
/// SIGHUP meanwhile, every agent is stopped and no other starts; the caller
/// then saves and calls [`process::reraise`].
pub fn run_jobs(
    dispatch: &Dispatch<'_>,
    jobs: &[Job],
    started: &(dyn Fn(&Job, u32) + Sync),
    done: &(dyn Fn(&Job, &Outcome) + Sync),
) -> Vec<Outcome> {
    let parallel = dispatch.parallel;
    let _guard = process::InterruptGuard::install();
    let next = Mutex::new(0usize);
    let outcomes: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..parallel.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = {
                        let mut next = next.lock().unwrap_or_else(|e| e.into_inner());
                        let i = *next;
                        *next += 1;
                        i
                    };
                    let Some(job) = jobs.get(i) else { break };
                    if process::interrupted().is_some() {
                        break;
                    }
                    let outcome = run_one(dispatch, job, started);
                    done(job, &outcome);
                    outcomes.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(outcome);
                }
            });
        }
    });
    outcomes
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Outcome::Failed("never ran".into())))
        .collect()
}

fn run_one(dispatch: &Dispatch<'_>, job: &Job, started: &(dyn Fn(&Job, u32) + Sync)) -> Outcome {
    let (repo, timeout) = (dispatch.repo, dispatch.timeout);
    let line = match command_line(dispatch.template, repo, job) {
        Ok(line) => line,
        Err(e) => return Outcome::Failed(format!("orchestrator.agent_command: {e}")),
    };
    if let Some(parent) = job.log.parent()
        && let Err(e) = std::fs::create_dir_all(parent)
    {
        return Outcome::Failed(format!("cannot create {}: {e}", parent.display()));
    }
    let log = match std::fs::File::create(&job.log) {
        Ok(f) => f,
        Err(e) => return Outcome::Failed(format!("cannot write {}: {e}", job.log.display())),
    };
    let Ok(err_log) = log.try_clone() else {
        return Outcome::Failed(format!("cannot write {}", job.log.display()));
    };
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(&line)
        .current_dir(repo)
        .env("AGENTS_TASK_ID", &job.task_id)
        .env("AGENTS_TASK_FILE", &job.task_file)
        .env("AGENTS_LOADOUT", &job.loadout)
        .env("AGENTS_MEMORY", &job.memory)
        .env("AGENTS_ROLE", &job.role)
        .env("AGENTS_PHASE", job.phase.to_string())
        .env("AGENTS_HANDOFF", job.handoff.as_ref().map(|h| h.as_os_str()).unwrap_or_default())
        .env(process::RUN_MARKER_ENV, dispatch.marker)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log);
    process::new_group(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Outcome::Failed(format!("cannot start `{line}`: {e}")),
    };
    started(job, child.id());
    let start = Instant::now();
    loop {
        let status = child.try_wait();
        if let Ok(Some(_)) = status {
            process::stop_remains(&child);
        }
        match status {
            Ok(Some(status)) if status.success() => return Outcome::Exited,
            Ok(Some(status)) => {
                return Outcome::Failed(match status.code() {
                    Some(code) => format!("the agent exited with status {code} (log: {})", job.log.display()),
                    None => format!("the agent was killed by a signal (log: {})", job.log.display()),
                });
            }
            Ok(None) if let Some(signal) = process::interrupted() => {
                process::stop(&mut child);
                return Outcome::Interrupted(signal);
            }
            Ok(None) if start.elapsed() >= timeout => {
                process::stop(&mut child);
                return Outcome::Failed(format!(
                    "the agent ran past the {} s timeout and was stopped (log: {})",
                    timeout.as_secs(),
                    job.log.display()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => {
                process::stop(&mut child);
                return Outcome::Failed(format!("cannot wait for the agent: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(dir: &Path, id: &str) -> Job {
        Job {
            task_id: id.into(),
            task_file: dir.join(format!("{id}.json")),
            loadout: dir.join("it's a loadout.md"),
            memory: dir.join(format!("{id}.md")),
            role: "implementer".into(),
            phase: 2,
            handoff: Some(dir.join("handoff_phase_1.md")),
            log: dir.join("logs").join(format!("{id}.log")),
        }
    }

    #[test]
    fn placeholders_are_shell_quoted_and_unknown_ones_named() {
        let j = job(Path::new("/r"), "T1");
        let line = command_line("agent --loadout {loadout} --task {task_id} -p {phase}", Path::new("/r"), &j).unwrap();
        assert_eq!(line, r"agent --loadout '/r/it'\''s a loadout.md' --task T1 -p 2");
        let e = command_line("agent {model}", Path::new("/r"), &j).unwrap_err().to_string();
        assert!(e.starts_with("unknown placeholder `{model}`"), "{e}");
        assert!(command_line("agent {task_id", Path::new("/r"), &j).is_err());
    }

    #[test]
    fn phases_hand_off_through_a_placeholder_and_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = job(dir.path(), "a");
        first.handoff = None;
        let jobs = [first, job(dir.path(), "b")];
        let template = "printf '%s|%s' {handoff} \"$AGENTS_HANDOFF\" > {memory}";
        let dispatch =
            Dispatch { template, repo: dir.path(), parallel: 1, timeout: Duration::from_secs(20), marker: "m" };
        let outcomes = run_jobs(&dispatch, &jobs, &|_, _| {}, &|_, _| {});
        assert_eq!(outcomes, [Outcome::Exited, Outcome::Exited]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.md")).unwrap(), "|", "phase 1: no hand-off");
        let handoff = dir.path().join("handoff_phase_1.md").display().to_string();
        assert_eq!(std::fs::read_to_string(dir.path().join("b.md")).unwrap(), format!("{handoff}|{handoff}"));
    }

    #[test]
    fn jobs_run_in_parallel_with_outcomes_in_order_and_a_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let jobs: Vec<Job> = ["a", "b", "c"].iter().map(|id| job(dir.path(), id)).collect();
        let template =
            "if [ {task_id} = b ]; then exit 3; fi; if [ {task_id} = c ]; then sleep 5; fi; echo ran > {memory}";
        let seen = Mutex::new(Vec::new());
        let dispatch =
            Dispatch { template, repo: dir.path(), parallel: 2, timeout: Duration::from_millis(600), marker: "m" };
        let outcomes = run_jobs(&dispatch, &jobs, &|_, _| {}, &|job, _| {
            seen.lock().unwrap().push(job.task_id.clone());
        });
        assert_eq!(outcomes[0], Outcome::Exited);
        assert!(matches!(&outcomes[1], Outcome::Failed(m) if m.contains("status 3")), "{:?}", outcomes[1]);
        assert!(matches!(&outcomes[2], Outcome::Failed(m) if m.contains("timeout")), "{:?}", outcomes[2]);
        assert_eq!(std::fs::read_to_string(dir.path().join("a.md")).unwrap(), "ran\n");
        let mut seen = seen.into_inner().unwrap();
        seen.sort();
        assert_eq!(seen, ["a", "b", "c"]);
    }

    /// Whether `pid` is a live process (a zombie waiting for its parent is not).
    #[cfg(target_os = "linux")]
    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !matches!(stat[stat.rfind(')').unwrap() + 1..].split_whitespace().next(), Some("Z" | "X"))
        })
    }

    /// Runs one job whose agent starts `sleep 300` in the background and
    /// writes its pid to `{memory}`; `started` waits for that pid, so the
    /// timeout only counts once the grandchild exists. Returns the outcome
    /// and the grandchild's pid.
    #[cfg(target_os = "linux")]
    fn with_grandchild(template: &str, timeout: Duration) -> (Outcome, u32) {
        let dir = tempfile::tempdir().unwrap();
        let jobs = [job(dir.path(), "g")];
        let pid_file = dir.path().join("g.md");
        let dispatch = Dispatch { template, repo: dir.path(), parallel: 1, timeout, marker: "m" };
        let wait_for_pid = |_: &Job, _: u32| {
            let guard = Instant::now();
            while std::fs::read_to_string(&pid_file).map_or(true, |t| !t.ends_with('\n')) {
                assert!(guard.elapsed() < Duration::from_secs(20), "the agent never wrote its grandchild's pid");
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        let outcome = run_jobs(&dispatch, &jobs, &wait_for_pid, &|_, _| {}).remove(0);
        let pid = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        (outcome, pid)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_timeout_stops_the_agents_whole_process_group() {
        let (outcome, grandchild) =
            with_grandchild("sleep 300 > /dev/null 2>&1 & echo $! > {memory}; wait", Duration::from_millis(1));
        assert!(matches!(&outcome, Outcome::Failed(m) if m.contains("timeout")), "{outcome:?}");
        let alive = alive(grandchild);
        if alive {
            // Never leave it behind, even when the assertion fails.
            let _ = Command::new("kill").arg(grandchild.to_string()).status();
        }
        assert!(!alive, "the agent's background process {grandchild} outlived the timeout");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn what_an_agent_leaves_running_when_it_exits_is_stopped() {
        let (outcome, grandchild) =
            with_grandchild("sleep 300 > /dev/null 2>&1 & echo $! > {memory}", Duration::from_secs(600));
        assert_eq!(outcome, Outcome::Exited);
        let alive = alive(grandchild);
        if alive {
            let _ = Command::new("kill").arg(grandchild.to_string()).status();
        }
        assert!(!alive, "the agent's background process {grandchild} outlived it");
    }
}
