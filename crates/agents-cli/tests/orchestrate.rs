//! `agents orchestrate`, end to end (AKMS spec 5.8): the golden fixture's
//! repository under git, a scripted stand-in agent, two phases and three
//! tasks, gates answered by command.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{agents, dirs, parse, stderr, stdout};

/// The stand-in agent: `agent.sh TASK_ID MEMORY PHASE`. It appends to the
/// file named after its task (in its scope), and writes an AgentMemory that
/// says `green-operator` was outdated; T2 writes an invalid one; T1 asks for
/// an abort (as a human would, mid-EXECUTE) when `abort-once` exists. With
/// `$HOLD` set, T1 starts a background `sleep`, writes its pid and its own to
/// `$HOLD`, and waits (at most 20 s) for `$HOLD/go`.
const AGENT: &str = r##"#!/bin/sh
set -e
id="$1"; memory="$2"; phase="$3"
echo "$id" >> runs.log
if [ "$id" = T1 ] && [ -n "$HOLD" ]; then
  sleep 300 > /dev/null 2>&1 &
  echo $! > "$HOLD/grandchild"; echo $$ > "$HOLD/agent"
  i=0; while [ ! -e "$HOLD/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
  kill $! 2> /dev/null || true
fi
if [ "$id" = T1 ] && [ -e abort-once ]; then rm abort-once; "$AGENTS_BIN" orchestrate abort > /dev/null; fi
mkdir -p src
echo "# work of $id" >> "src/$id.py"
if [ "$id" = T2 ]; then printf -- '---\ntask_id: T2\nstatus: finished\n---\n' > "$memory"; exit 0; fi
cat > "$memory" <<EOF
---
task_id: $id
task_description: "stand-in work"
phase_id: $phase
timestamp: 2026-11-30T00:00:00
agent_model: stand-in
loadout_used: loadouts/$id-loadout.md
status: complete
tests_passed: 1
tests_total: 1
nodes_used:
  - id: green-operator
    useful: false
    coverage: outdated
pitfalls_discovered:
  - node_ref: lippmann-schwinger
    description: "pitfall seen by $id"
    severity: low
akms_schema: v2
---

## Task Notes
EOF
"##;

struct Setup {
    _k: common::Knowledge,
    home: PathBuf,
    vault: PathBuf,
    repo: PathBuf,
    plan: PathBuf,
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn setup() -> Setup {
    let k = common::knowledge();
    let repo = k.repo.clone();
    let config = agents_akms_default_config()
        .replace("  plan_name: \"\"                 # used for phase-branch naming", "  plan_name: demo");
    let config = config
        .replace("  agent_command: \"\"", "  agent_command: \"sh agent.sh {task_id} {memory} {phase}\"")
        .replace("  review_roles: [code_reviewer, physics_reviewer]", "  review_roles: [code_reviewer]");
    std::fs::write(repo.join("knowledge/graph/propagation_config.yaml"), config).unwrap();
    std::fs::write(repo.join("agent.sh"), AGENT).unwrap();
    std::fs::write(repo.join(".gitignore"), "runs.log\nabort-once\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    let task = |id: &str, deps: &[&str]| {
        serde_json::json!({"task_id": id, "title": format!("Task {id}"), "objective": "Regularise the Green operator",
            "scope": [format!("src/{id}.py")], "depends_on": deps, "akms_tags": ["green-operator"], "akms_schema": "v2"})
    };
    let plan = serde_json::json!({"plan_name": "demo", "phases": [
        {"phase": 1, "title": "first", "tasks": [task("T1", &[]), task("T2", &["T1"])]},
        {"phase": 2, "title": "second", "tasks": [task("T3", &[])]},
    ]});
    let plan_file = k._dirs.root.join("plan.json");
    std::fs::write(&plan_file, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    Setup { home: k.home.clone(), vault: k.vault.clone(), repo, plan: plan_file, _k: k }
}

/// The default propagation config, as `agents knowledge init` writes it.
fn agents_akms_default_config() -> String {
    let d = dirs();
    std::fs::create_dir_all(d.repo.join(".git")).unwrap();
    let out = agents(&d.home).current_dir(&d.repo).args(["knowledge", "init"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read_to_string(d.repo.join("knowledge/graph/propagation_config.yaml")).unwrap()
}

fn run(s: &Setup, args: &[&str]) -> Output {
    agents(&s.home)
        .current_dir(&s.repo)
        .env("AKMS_GLOBAL_VAULT", &s.vault)
        .env("AGENTS_BIN", env!("CARGO_BIN_EXE_agents"))
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .arg("orchestrate")
        .args(args)
        .output()
        .unwrap()
}

/// Runs an orchestrate command and returns its `--json` state.
fn step(s: &Setup, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = run(s, &all);
    assert!(out.status.success(), "{args:?}: {}\n{}", stderr(&out), stdout(&out));
    parse(&out.stdout)
}

fn at(state: &serde_json::Value) -> (String, u64, String) {
    (
        state["stage"].as_str().unwrap().to_owned(),
        state["phase"].as_u64().unwrap(),
        state["status"].as_str().unwrap().to_owned(),
    )
}

fn confidence(repo: &Path, id: &str) -> f64 {
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("knowledge/graph/graph.json")).unwrap()).unwrap();
    graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).unwrap()["confidence"].as_f64().unwrap()
}

#[test]
fn two_phases_three_tasks_gates_by_command_a_failed_task_an_abort_mid_execute_and_merged_branches() {
    let s = setup();
    let plan = s.plan.to_str().unwrap();
    let state = step(&s, &["run", plan]);
    assert_eq!(at(&state), ("plan".into(), 0, "awaiting_approval".into()));
    let checkpoint = std::fs::read_to_string(s.repo.join(state["checkpoint"].as_str().unwrap())).unwrap();
    assert!(checkpoint.contains("## AKMS status") && checkpoint.contains("## Actions"), "{checkpoint}");
    assert_eq!(at(&step(&s, &["approve"])), ("task_breakdown".into(), 0, "awaiting_approval".into()));
    assert_eq!(at(&step(&s, &["approve"])), ("scaffold".into(), 0, "awaiting_approval".into()));
    assert_eq!(git(&s.repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "demo_phase-1");
    let before = confidence(&s.repo, "green-operator");

    // EXECUTE phase 1; T1's agent aborts the run in the middle.
    std::fs::write(s.repo.join("abort-once"), "").unwrap();
    let state = step(&s, &["approve"]);
    assert_eq!(at(&state), ("execute".into(), 1, "aborted".into()));
    assert_eq!(state["tasks"]["T1"]["status"], "complete");
    assert_eq!(state["tasks"]["T2"]["status"], "pending");
    assert_eq!(confidence(&s.repo, "green-operator"), before, "no graph mutation while agents run");
    let status = run(&s, &["status"]);
    assert!(stdout(&status).contains("EXECUTE (phase 1): aborted"), "{}", stdout(&status));
    let state = step(&s, &["resume"]);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    let runs = std::fs::read_to_string(s.repo.join("runs.log")).unwrap();
    assert_eq!(runs.lines().filter(|l| *l == "T1").count(), 1, "T1 is not run again: {runs}");
    assert_eq!(state["tasks"]["T2"]["status"], "failed");
    assert!(state["tasks"]["T2"]["reason"].as_str().unwrap().starts_with("invalid AgentMemory"), "{state:#}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.repo.join("knowledge/orchestrator/tasks/T1.json")).unwrap())
            .unwrap();
    assert!(record["loadout_path"].as_str().unwrap().starts_with("knowledge/loadouts/T1"), "{record:#}");
    // The evidence reached the graph after the wave, and the review shows it.
    let after = confidence(&s.repo, "green-operator");
    assert!(after < before, "{before} -> {after}");
    let checkpoint = std::fs::read_to_string(s.repo.join(state["checkpoint"].as_str().unwrap())).unwrap();
    let degraded = checkpoint.lines().find(|l| l.starts_with("degraded confidence")).unwrap_or_default();
    assert!(degraded.contains("green-operator"), "{checkpoint}");
    assert!(checkpoint.contains("task `T2` failed: invalid AgentMemory"), "{checkpoint}");
    assert!(s.repo.join("knowledge/sessions/handoff_phase_1.md").exists());
    assert!(s.repo.join("knowledge/code-mirror/src/T1.py.md").exists(), "the code mirror of the phase's files");

    // REVIEW, then phase 2 on its own branch from phase 1.
    assert_eq!(at(&step(&s, &["approve"])), ("review".into(), 1, "awaiting_approval".into()));
    let state = step(&s, &["approve"]);
    assert_eq!(at(&state), ("execute".into(), 2, "awaiting_approval".into()), "{state:#}");
    assert_eq!(git(&s.repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "demo_phase-2");
    assert_eq!(state["tasks"]["T3"]["status"], "complete");
    assert_eq!(at(&step(&s, &["approve"])), ("review".into(), 2, "awaiting_approval".into()));
    assert_eq!(at(&step(&s, &["approve"])), ("finalize".into(), 2, "awaiting_approval".into()));
    let main_before = git(&s.repo, &["rev-parse", "main"]);
    let checkpoint =
        std::fs::read_to_string(s.repo.join(step(&s, &["status"])["checkpoint"].as_str().unwrap())).unwrap();
    assert!(checkpoint.contains("Approving this gate merges"), "{checkpoint}");
    assert_eq!(git(&s.repo, &["rev-parse", "main"]), main_before, "FINALIZE's gate comes before the merge");
    let state = step(&s, &["approve"]);
    assert_eq!(state["status"], "done");
    assert_eq!(git(&s.repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
    // A finished run says how to start the next.
    let status = run(&s, &["status"]);
    assert!(stdout(&status).contains("start a new one with `agents orchestrate run PLAN.json`"), "{}", stdout(&status));
    let again = run(&s, &["approve"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("agents orchestrate run PLAN.json"), "{}", stderr(&again));
    for file in ["src/T1.py", "src/T3.py", "knowledge/sessions/handoff_phase_2.md"] {
        assert!(s.repo.join(file).exists(), "{file} merged into main");
    }
    assert!(git(&s.repo, &["status", "--porcelain"]).trim().is_empty());
    // Pitfalls several agents found on one node stay separate edges, one per session.
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.repo.join("knowledge/graph/graph.json")).unwrap()).unwrap();
    let targets: Vec<&str> = graph["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["source"] == "lippmann-schwinger" && l["type"] == "pitfall")
        .map(|l| l["target"].as_str().unwrap())
        .collect();
    let distinct: std::collections::BTreeSet<&str> = targets.iter().copied().collect();
    assert!(targets.len() >= 5 && distinct.len() == targets.len(), "{targets:?}");
    // Both phase branches were made; the log shows each merge.
    let branches = git(&s.repo, &["branch", "--list", "demo_phase-*"]);
    assert!(branches.contains("demo_phase-1") && branches.contains("demo_phase-2"), "{branches}");
    let log = git(&s.repo, &["log", "--format=%s", "main"]);
    assert!(log.contains("merge phase 2 into demo_phase-1") && log.contains("merge phase 1 into main"), "{log}");
}

#[test]
fn a_scope_conflict_is_rejected_before_anything_runs_and_gates_refuse_out_of_turn_commands() {
    let s = setup();
    let out = run(&s, &["approve"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no orchestration in"), "{}", stderr(&out));
    let plan = serde_json::json!({"plan_name": "demo", "phases": [{"phase": 1, "tasks": [
        {"task_id": "A", "scope": ["src/x.py"], "akms_tags": []},
        {"task_id": "B", "scope": ["src/x.py"], "akms_tags": []}]}]});
    std::fs::write(&s.plan, plan.to_string()).unwrap();
    let out = run(&s, &["run", s.plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("tasks `A` and `B` both have `src/x.py` in their scope"), "{err}");
    assert!(!s.repo.join("knowledge/orchestrator/state.json").exists(), "nothing started");
}

/// `agents orchestrate ARGS` started in the background with `$HOLD` set
/// (T1's agent waits there).
#[cfg(target_os = "linux")]
fn spawn(s: &Setup, args: &[&str], hold: &Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_agents"))
        .env("AGENTS_HOME", &s.home)
        .env_remove("AGENTS_LOG")
        .current_dir(&s.repo)
        .env("AKMS_GLOBAL_VAULT", &s.vault)
        .env("AGENTS_BIN", env!("CARGO_BIN_EXE_agents"))
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .env("HOLD", hold)
        .arg("orchestrate")
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Hang guard: waits at most 20 s for `path`, else stops `child` and fails.
#[cfg(target_os = "linux")]
fn wait_for(path: &Path, child: &mut std::process::Child) {
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(path).is_ok_and(|t| t.ends_with('\n')) {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{} never appeared", path.display());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Hang guard: waits at most 20 s for `child` to end, else kills it and fails.
#[cfg(target_os = "linux")]
fn finish(mut child: std::process::Child) -> Output {
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the orchestrator did not end");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Whether `pid` runs (a zombie does not).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !matches!(stat[stat.rfind(')').unwrap() + 1..].split_whitespace().next(), Some("Z" | "X")))
}

#[cfg(target_os = "linux")]
fn pid_in(path: &Path) -> u32 {
    std::fs::read_to_string(path).unwrap().trim().parse().unwrap()
}

/// Up to the SCAFFOLD gate, ready for EXECUTE.
#[cfg(target_os = "linux")]
fn to_scaffold(s: &Setup) {
    step(s, &["run", s.plan.to_str().unwrap()]);
    step(s, &["approve"]);
    assert_eq!(at(&step(s, &["approve"])), ("scaffold".into(), 0, "awaiting_approval".into()));
}

#[cfg(target_os = "linux")]
#[test]
fn a_second_command_while_a_run_holds_the_lock_is_refused_naming_its_pid() {
    let s = setup();
    to_scaffold(&s);
    let hold = tempfile::tempdir().unwrap();
    let mut running = spawn(&s, &["approve"], hold.path());
    let pid = running.id();
    wait_for(&hold.path().join("agent"), &mut running);
    let refused = run(&s, &["resume"]);
    let refused_run = run(&s, &["run", s.plan.to_str().unwrap()]);
    std::fs::write(hold.path().join("go"), "").unwrap();
    let out = finish(running);
    assert!(out.status.success(), "{}", stderr(&out));
    for refused in [refused, refused_run] {
        assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
        let err = stderr(&refused);
        assert!(err.contains(&format!("is being run by process {pid}")), "{err}");
    }
    let runs = std::fs::read_to_string(s.repo.join("runs.log")).unwrap();
    assert_eq!(runs.lines().filter(|l| *l == "T1").count(), 1, "T1 dispatched once: {runs}");
}

#[cfg(target_os = "linux")]
#[test]
fn sigterm_to_the_orchestrator_stops_its_agents_whole_and_resume_runs_them_again() {
    use std::os::unix::process::ExitStatusExt;
    let s = setup();
    to_scaffold(&s);
    let hold = tempfile::tempdir().unwrap();
    let mut running = spawn(&s, &["approve"], hold.path());
    wait_for(&hold.path().join("agent"), &mut running);
    let grandchild = pid_in(&hold.path().join("grandchild"));
    let kill = std::process::Command::new("kill").args(["-TERM", &running.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let out = finish(running);
    assert_eq!(out.status.signal(), Some(15), "it ends by the signal, after stopping its agents");
    assert!(!alive(grandchild), "the agent's background process {grandchild} outlived the orchestrator");
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.repo.join("knowledge/orchestrator/state.json")).unwrap())
            .unwrap();
    assert_eq!(state["tasks"]["T1"]["status"], "pending", "{state:#}");
    assert!(state.get("agents").is_none(), "{state:#}");
    assert_eq!(state["history"].as_array().unwrap().last().unwrap()["action"], "interrupted");
    let state = step(&s, &["resume"]);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    assert_eq!(state["tasks"]["T1"]["status"], "complete");
}

#[cfg(target_os = "linux")]
#[test]
fn resume_after_the_orchestrator_was_killed_stops_its_leftover_agents_first() {
    let s = setup();
    to_scaffold(&s);
    let hold = tempfile::tempdir().unwrap();
    let mut running = spawn(&s, &["approve"], hold.path());
    wait_for(&hold.path().join("agent"), &mut running);
    let (agent, grandchild) = (pid_in(&hold.path().join("agent")), pid_in(&hold.path().join("grandchild")));
    running.kill().unwrap(); // SIGKILL: nothing is cleaned up
    let _ = finish(running);
    assert!(alive(agent) && alive(grandchild), "SIGKILL leaves the agents running");
    let out = run(&s, &["--json", "resume"]);
    let (agent_alive, grandchild_alive) = (alive(agent), alive(grandchild));
    std::fs::write(hold.path().join("go"), "").unwrap(); // lets a survivor end
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!agent_alive && !grandchild_alive, "the killed run's agent still runs");
    let err = stderr(&out);
    assert!(err.contains("the agent of task `T1`") && err.contains("was stopped"), "{err}");
    let state = parse(&out.stdout);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    let checkpoint = std::fs::read_to_string(s.repo.join(state["checkpoint"].as_str().unwrap())).unwrap();
    assert!(checkpoint.contains("was still running from a run that was killed"), "{checkpoint}");
}

/// The stand-in agent of the hand-off tests: it notes the hand-off it got,
/// writes its scope file and an AgentMemory that reports the file, an
/// interface, an assumption, a failing test and a pitfall.
const HANDOFF_AGENT: &str = r##"#!/bin/sh
set -e
id="$1"; memory="$2"; phase="$3"
echo "$id phase=$phase handoff=$AGENTS_HANDOFF" >> handoffs.log
mkdir -p src
echo "def $id(): pass" >> "src/$id.py"
cat > "$memory" <<EOF
---
task_id: $id
task_description: "stand-in work"
phase_id: $phase
timestamp: 2026-11-30T00:00:00
agent_model: stand-in
loadout_used: knowledge/loadouts/$id-implementer-loadout.md
status: complete
tests_passed: 1
tests_total: 2
nodes_used: []
pitfalls_discovered:
  - node_ref: lippmann-schwinger
    description: "pitfall seen by $id"
    severity: high
files_created:
  - path: src/$id.py
    description: "the $id entry point"
interfaces_added:
  - name: "$id()"
    description: "runs $id"
assumptions:
  - claim: "grids are periodic"
    rationale: "the FFT needs it"
    risk_if_wrong: "aliasing"
akms_schema: v2
---
EOF
"##;

#[test]
fn phases_hand_off_a_pcd_that_knowledge_update_accepts_with_real_change_summaries() {
    let s = setup();
    std::fs::write(s.repo.join("agent.sh"), HANDOFF_AGENT).unwrap();
    std::fs::write(s.repo.join(".gitignore"), "runs.log\nabort-once\nhandoffs.log\n").unwrap();
    git(&s.repo, &["commit", "-q", "-am", "hand-off agent"]);
    let task = |id: &str| {
        serde_json::json!({"task_id": id, "title": format!("Task {id}"), "scope": [format!("src/{id}.py")],
            "akms_tags": ["green-operator"], "akms_schema": "v2"})
    };
    let plan = serde_json::json!({"plan_name": "demo", "model_context_limit": 200000, "system_prompt_tokens": 8000,
        "phases": [{"phase": 1, "tasks": [task("T1")]}, {"phase": 2, "tasks": [task("T3")]}]});
    std::fs::write(&s.plan, plan.to_string()).unwrap();
    step(&s, &["run", s.plan.to_str().unwrap()]);
    step(&s, &["approve"]);
    step(&s, &["approve"]);
    let state = step(&s, &["approve"]);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    assert_eq!(state["tasks"]["T1"]["memory"], "knowledge/sessions/demo-phase1-T1.md");

    // The PCD: a relative plan file and the hand-off from git and the agents.
    let pcd = std::fs::read_to_string(s.repo.join("knowledge/sessions/handoff_phase_1.md")).unwrap();
    assert!(pcd.contains("plan_file: ../plan.json\n"), "{pcd}");
    assert!(!pcd.contains("modified in this phase") && !pcd.contains("created in this phase"), "{pcd}");
    assert!(pcd.contains("description: 'T1: the T1 entry point; created by task T1 (Task T1), +1 -0 lines'"), "{pcd}");
    assert!(pcd.contains("name: T1()") && pcd.contains("claim: grids are periodic") && pcd.contains("where: task T1"));
    assert!(pcd.contains("reason: 1 of 2 test(s) fail"), "{pcd}");
    assert!(pcd.contains("pitfall on `lippmann-schwinger` (high, from T1): pitfall seen by T1"), "{pcd}");
    assert!(pcd.contains("recommended_start: T3"), "{pcd}");

    // The loadout: the phase in its header, the mode chosen from the plan's budget.
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.repo.join("knowledge/orchestrator/tasks/T1.json")).unwrap())
            .unwrap();
    let loadout = std::fs::read_to_string(s.repo.join(record["loadout_path"].as_str().unwrap())).unwrap();
    assert!(loadout.contains("\nphase: 1\n"), "{loadout}");
    let available = loadout.lines().find(|l| l.starts_with("available_context: ")).unwrap();
    assert!(available != "available_context: null" && available.len() > "available_context: ".len(), "{loadout}");

    // Phase 2's agent gets phase 1's PCD.
    step(&s, &["approve"]);
    let state = step(&s, &["approve"]);
    assert_eq!(at(&state), ("execute".into(), 2, "awaiting_approval".into()), "{state:#}");
    let log = std::fs::read_to_string(s.repo.join("handoffs.log")).unwrap();
    let handoff = s.repo.join("knowledge/sessions/handoff_phase_1.md");
    assert!(log.contains("T1 phase=1 handoff=\n"), "{log}");
    assert!(log.contains(&format!("T3 phase=2 handoff={}\n", handoff.display())), "{log}");

    // `agents knowledge update` accepts the generated PCD.
    for _ in 0..3 {
        step(&s, &["approve"]);
    }
    let out = agents(&s.home)
        .current_dir(&s.repo)
        .env("AKMS_GLOBAL_VAULT", &s.vault)
        .env("SOURCE_DATE_EPOCH", "1764460800")
        .args(["knowledge", "update", "knowledge/sessions/handoff_phase_1.md"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stderr(&out), stdout(&out));
}

/// The scripted agent of the cold-start test, by role. Every agent notes its
/// environment and keeps a copy of its loadout. In phase 1, T1 drafts new
/// knowledge (`kernel-regularisation`) and, with `$UNKNOWN_NODE` set, names a
/// node no graph has; the phase-1 reviewer reports a pitfall on the new node.
const COLD_AGENT: &str = r##"#!/bin/sh
set -e
id="$1"; memory="$2"; phase="$3"
echo "$id role=$AGENTS_ROLE phase=$phase handoff=$AGENTS_HANDOFF" >> e2e.log
mkdir -p seen
cp "$AGENTS_LOADOUT" "seen/$id-phase$phase.md"
used="nodes_used: []"; pitfalls="pitfalls_discovered: []"; knowledge="new_knowledge: []"
if [ "$AGENTS_ROLE" = implementer ]; then
  mkdir -p src; echo "# $id, phase $phase" >> "src/$id.py"
  if [ "$id" = T1 ]; then
    if [ -n "$UNKNOWN_NODE" ]; then used="nodes_used: [{id: $UNKNOWN_NODE, useful: false, coverage: missing-detail}]"; fi
    knowledge="new_knowledge: [{suggested_id: kernel-regularisation, title: Kernel regularisation, domain: solver, tags: [kernel], content_draft: Regularise the Green kernel at k = 0., status: tentative, source: agent}]"
  fi
elif [ "$phase" = 1 ]; then
  pitfalls="pitfalls_discovered: [{node_ref: kernel-regularisation, description: regularise before the FFT not after, severity: high}]"
fi
cat > "$memory" <<EOF
---
task_id: $id
task_description: "scripted work for $(basename "$memory")"
phase_id: $phase
timestamp: 2026-11-30T00:00:00
agent_model: scripted
loadout_used: knowledge/loadouts/$id.md
status: complete
tests_passed: 1
tests_total: 1
$used
$pitfalls
$knowledge
akms_schema: v2
---
EOF
"##;

/// The "Done when" run of issue 18, whole: it needs the evidence side of
/// items 2 and 3 (an unknown node is a warning; "already applied" is decided
/// by content), which `agents knowledge update` provides separately.
#[test]
fn the_loop_works_from_a_cold_start_over_two_phases_and_two_plans_reusing_a_task_id() {
    cold_start(true);
}

/// The orchestrator's side of the cold-start run: no tags, no global vault,
/// two phases, the reviewer's pitfall in phase 2's loadout, the hand-off in
/// its environment, and a second plan reusing `T1` with its own session file.
#[test]
fn the_orchestrator_runs_two_phases_from_a_cold_start_and_a_second_plan_reusing_a_task_id() {
    cold_start(false);
}

fn cold_start(unknown_node: bool) {
    let d = dirs();
    let repo = d.repo.clone();
    git(&repo, &["init", "-q", "-b", "main"]);
    let no_vault = d.root.join("no-global-vault");
    let cli = |args: &[&str]| {
        agents(&d.home)
            .current_dir(&repo)
            .env("AKMS_GLOBAL_VAULT", &no_vault)
            .env("SOURCE_DATE_EPOCH", "1764460800")
            .env("UNKNOWN_NODE", if unknown_node { "no-such-node" } else { "" })
            .args(args)
            .output()
            .unwrap()
    };
    let out = cli(&["knowledge", "init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let config_file = repo.join("knowledge/graph/propagation_config.yaml");
    let config = std::fs::read_to_string(&config_file)
        .unwrap()
        .replace("  agent_command: \"\"", "  agent_command: \"sh agent.sh {task_id} {memory} {phase}\"")
        .replace("  review_roles: [code_reviewer, physics_reviewer]", "  review_roles: [code_reviewer]");
    std::fs::write(&config_file, config).unwrap();
    std::fs::write(repo.join("agent.sh"), COLD_AGENT).unwrap();
    std::fs::write(repo.join(".gitignore"), "e2e.log\nseen/\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "cold start"]);
    let step = |args: &[&str]| {
        let mut all = vec!["--json", "orchestrate"];
        all.extend_from_slice(args);
        let out = cli(&all);
        assert!(out.status.success(), "{args:?}: {}\n{}", stderr(&out), stdout(&out));
        parse(&out.stdout)
    };
    let task = |id: &str, title: &str| serde_json::json!({"task_id": id, "title": title, "scope": [format!("src/{id}.py")], "akms_tags": []});
    let alpha = d.root.join("alpha.json");
    let plan = serde_json::json!({"plan_name": "alpha", "phases": [
        {"phase": 1, "tasks": [task("T1", "Set up the solver")]},
        {"phase": 2, "tasks": [task("T2", "Apply the kernel regularisation")]}]});
    std::fs::write(&alpha, plan.to_string()).unwrap();

    // Phase 1: no tags, no nodes, an unknown node in the evidence.
    step(&["run", alpha.to_str().unwrap()]);
    step(&["approve"]);
    step(&["approve"]);
    let state = step(&["approve"]);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    assert_eq!(state["tasks"]["T1"]["status"], "complete", "{state:#}");
    let loadout = std::fs::read_to_string(repo.join("seen/T1-phase1.md")).unwrap();
    assert!(loadout.contains("node_count: 0"), "{loadout}");
    let alpha_t1 = std::fs::read(repo.join("knowledge/sessions/alpha-phase1-T1.md")).unwrap();
    // REVIEW: the reviewer's pitfall on the node phase 1 drafted.
    let state = step(&["approve"]);
    assert_eq!(at(&state), ("review".into(), 1, "awaiting_approval".into()), "{state:#}");

    // Phase 2: the pitfall is in T2's loadout, the hand-off in its environment.
    let state = step(&["approve"]);
    assert_eq!(at(&state), ("execute".into(), 2, "awaiting_approval".into()), "{state:#}");
    let loadout = std::fs::read_to_string(repo.join("seen/T2-phase2.md")).unwrap();
    assert!(loadout.contains("kernel-regularisation"), "{loadout}");
    let pitfalls = loadout.split("## Known Pitfalls").nth(1).unwrap_or_default();
    assert!(pitfalls.contains("regularise before the FFT not after"), "{loadout}");
    let log = std::fs::read_to_string(repo.join("e2e.log")).unwrap();
    let handoff = repo.join("knowledge/sessions/handoff_phase_1.md");
    assert!(log.contains(&format!("T2 role=implementer phase=2 handoff={}\n", handoff.display())), "{log}");
    for _ in 0..3 {
        step(&["approve"]);
    }
    assert_eq!(step(&["status"])["status"], "done");

    // A second plan reuses T1: its own session file, applied, the first kept.
    let beta = d.root.join("beta.json");
    let plan =
        serde_json::json!({"plan_name": "beta", "phases": [{"phase": 1, "tasks": [task("T1", "Tidy the solver")]}]});
    std::fs::write(&beta, plan.to_string()).unwrap();
    step(&["run", beta.to_str().unwrap()]);
    step(&["approve"]);
    step(&["approve"]);
    let state = step(&["approve"]);
    assert_eq!(at(&state), ("execute".into(), 1, "awaiting_approval".into()), "{state:#}");
    assert_eq!(state["tasks"]["T1"]["memory"], "knowledge/sessions/beta-phase1-T1.md");
    assert_eq!(std::fs::read(repo.join("knowledge/sessions/alpha-phase1-T1.md")).unwrap(), alpha_t1);
    assert!(repo.join("knowledge/sessions/beta-phase1-T1.md").exists());
    if unknown_node {
        let checkpoint = std::fs::read_to_string(repo.join(state["checkpoint"].as_str().unwrap())).unwrap();
        assert!(checkpoint.contains("- applied `knowledge/sessions/beta-phase1-T1.md`"), "{checkpoint}");
    }
}
