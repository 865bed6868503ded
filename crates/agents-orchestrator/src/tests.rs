//! A run end to end over a real git repository, with a stand-in for the
//! knowledge operations and a shell script for the agent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agents_akms::config::OrchestratorConfig;
use serde_json::Value;

use crate::orchestrator::STATE_CAP;
use crate::plan::Plan;
use crate::*;
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
    fn build(&self) -> Result<(), KnowledgeError> {
        Ok(())
    }
    fn derive_tags(&self, task_file: &Path) -> Result<Vec<String>, KnowledgeError> {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(task_file).unwrap()).unwrap();
        Ok(record["akms_tags"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_owned()).collect())
    }
    fn loadout(&self, task_file: &Path, spec: &LoadoutSpec) -> Result<PathBuf, KnowledgeError> {
        let id = task_file.file_stem().unwrap().to_string_lossy().into_owned();
        let path = PathBuf::from(format!("knowledge/loadouts/{id}-{}.md", spec.role));
        std::fs::create_dir_all(self.repo.join("knowledge/loadouts")).unwrap();
        std::fs::write(self.repo.join(&path), format!("# Loadout: {id}\n")).unwrap();
        self.loadouts.lock().unwrap().push(spec.clone());
        Ok(path)
    }
    fn check_memory(&self, memory: &Path) -> Result<(), KnowledgeError> {
        let text = std::fs::read_to_string(memory).unwrap();
        let name = memory.file_stem().unwrap().to_string_lossy().into_owned();
        // `<plan>-phase<N>-<task>[-<n>]`
        let id =
            name.split_once("-phase").map_or(name.as_str(), |(_, rest)| rest.split_once('-').map_or(rest, |r| r.1));
        let unsuffixed = id.rsplit_once('-').filter(|(_, n)| n.parse::<u32>().is_ok()).map_or(id, |(id, _)| id);
        if [id, unsuffixed].iter().any(|id| text.contains(&format!("task_id: {id}\n"))) {
            Ok(())
        } else {
            Err(KnowledgeError::Adapter("task_id: missing".into()))
        }
    }
    fn update(&self, documents: &[PathBuf]) -> Result<String, KnowledgeError> {
        let names = documents.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
        self.updates.lock().unwrap().push(names);
        Ok(format!("applied {} document(s)", documents.len()))
    }
    fn mirror(&self, files: &[String]) -> Result<String, KnowledgeError> {
        self.mirrored.lock().unwrap().push(files.to_vec());
        Ok(format!("mirrored {} file(s)", files.len()))
    }
    fn status(&self) -> Result<String, KnowledgeError> {
        Ok("3 nodes".into())
    }
    fn review(&self, _phase: u32) -> Result<String, KnowledgeError> {
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
        git(&repo, &["log", "--format=%H %s", "demo_phase-1"]).contains(&format!("{commit} demo: phase 1 wave 1 (T1)"))
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
    assert!(summary(&done).contains("start a new one with `agents orchestrate run PLAN.json`"), "{}", summary(&done));
    for e in [o.approve().unwrap_err(), o.resume().unwrap_err(), o.abort().unwrap_err(), o.reject("x").unwrap_err()] {
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
        agent_command:
            "echo {task_id} {handoff} \"$AGENTS_HANDOFF\" >> handoffs.log; sh agent.sh {task_id} {memory} {task_file}"
                .into(),
        review_roles: Vec::new(),
        ..config()
    };
    let clock = || "2026-11-30T00:00:00Z".to_owned();
    let o = Orchestrator { repo: repo.clone(), config: &config, knowledge: &knowledge, clock: &clock };
    let s = to_execute_gate(&o, &dir.path().join("plan.json"));
    let pcd = std::fs::read_to_string(repo.join(&s.handoffs[&1])).unwrap();
    // Valid for `agents knowledge update`: a relative plan file, real change summaries.
    agents_akms::evidence::parse_evidence(Path::new("handoff_phase_1.md"), &pcd).unwrap();
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
    let own = plan(serde_json::json!({"model_context_limit": 200000, "system_prompt_tokens": 9000, "phases": phases}));
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

/// A killed run's agent for task T1: a process group with `marker` and
/// `AGENTS_TASK_ID` in its environment (a `sleep` whose shell has exited),
/// still alive. Returns the group's id and the sleep's pid.
#[cfg(target_os = "linux")]
fn leftover_agent(marker: &str) -> (u32, u32) {
    let mut command = Command::new("sh");
    command
        .args(["-c", "sleep 300 > /dev/null 2>&1 & echo $!"])
        .env(process::RUN_MARKER_ENV, marker)
        .env("AGENTS_TASK_ID", "T1")
        .stdout(std::process::Stdio::piped());
    process::new_group(&mut command);
    let child = command.spawn().unwrap();
    let pgid = child.id();
    let out = child.wait_with_output().unwrap();
    let sleeper: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(live_group(sleeper), Some(pgid));
    (pgid, sleeper)
}

/// Makes the state that of a run killed mid-EXECUTE: Running, with T1's
/// agent ([`leftover_agent`]) recorded and still alive, or, with
/// `recorded` false, only the dispatch's marker saved (killed between
/// starting the agent and recording it). Returns the group's id and the
/// sleep's pid.
#[cfg(target_os = "linux")]
fn killed_mid_execute_as(o: &Orchestrator<'_>, recorded: bool) -> (u32, u32) {
    let (pgid, sleeper) = leftover_agent("killed-run");
    let mut state = o.load().unwrap().unwrap();
    (state.stage, state.phase, state.status) = (Stage::Execute, 1, Status::Running);
    if recorded {
        state.agents = vec![AgentProcess { task_id: "T1".into(), pid: pgid, pgid, marker: "killed-run".into() }];
    } else {
        state.dispatching = Some("killed-run".into());
    }
    o.save(&state).unwrap();
    (pgid, sleeper)
}

#[cfg(target_os = "linux")]
fn killed_mid_execute(o: &Orchestrator<'_>) -> (u32, u32) {
    killed_mid_execute_as(o, true)
}

/// `abort`, then whether the `sleeper` still ran after it (stopping it if so).
#[cfg(target_os = "linux")]
fn abort_leaving(o: &Orchestrator<'_>, sleeper: u32) -> (State, bool) {
    let s = o.abort();
    let alive = live_group(sleeper).is_some();
    if alive {
        let _ = Command::new("kill").arg(sleeper.to_string()).status();
    }
    (s.unwrap(), alive)
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
    let (s, alive) = abort_leaving(&o, sleeper);
    assert!(!alive, "the leftover agent {sleeper} still runs");
    assert!(s.agents.is_empty() && s.history.iter().any(|e| e.action == "stopped a leftover agent"));
    assert_eq!((s.stage, s.status), (Stage::Execute, Status::Aborted));
    assert_eq!(o.load().unwrap().unwrap(), s, "saved");
    assert!(!repo.join("runs.log").exists(), "nothing dispatched");

    // Killed between starting an agent and recording it: found by the
    // dispatch's marker, named by its task.
    let (_, sleeper) = killed_mid_execute_as(&o, false);
    let (s, alive) = abort_leaving(&o, sleeper);
    assert!(!alive, "the unrecorded agent {sleeper} still runs");
    let event = s.history.iter().rfind(|e| e.action == "stopped a leftover agent").expect("an event");
    assert!(event.reason.as_deref().unwrap_or_default().contains("the agent of task `T1`"), "{event:?}");
    assert_eq!(s.dispatching, None);
    assert_eq!(o.load().unwrap().unwrap(), s, "saved");
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
