//! The plan an orchestration runs (5.8): phases of task records (4.5), each
//! with a scope (the files it may touch) and dependencies, and the waves the
//! tasks of a phase run in.
//!
//! A plan file is JSON:
//!
//! ```json
//! {
//!   "plan_name": "solver",
//!   "base_branch": "main",
//!   "phases": [
//!     {"phase": 1, "title": "Green operator", "tasks": [
//!       {"task_id": "T1", "title": "...", "objective": "...", "steps": ["..."],
//!        "scope": ["src/green.py"], "depends_on": [], "akms_tags": [], "akms_schema": "v2"}
//!     ]}
//!   ]
//! }
//! ```
//!
//! `plan_name` and `base_branch` fall back to `propagation_config.yaml`'s
//! `orchestrator` section. `model_context_limit` and `system_prompt_tokens`
//! (optional, tokens) are the agents' context window and system prompt: every
//! loadout's mode is chosen from them (spec 5.4); without a limit the mode is
//! `loadout.mode_selection.default_mode`.
//!
//! The file is read with a size cap ([`MAX_PLAN_BYTES`]) and must be a
//! regular file: a FIFO or device is refused without being read. Task records keep every field they came with; the
//! orchestrator only fills `akms_tags` (when empty) and `loadout_path`.
//!
//! Waves are the dependency levels of a phase's tasks (Kahn's algorithm, ties
//! by id). Two tasks whose scopes share a file must be ordered by a
//! dependency, so they never share a wave; a plan where they are not is
//! rejected before anything runs, naming both tasks and the file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use agents_akms::bounded::{Cap, read_text};
use agents_akms::vault::confine_lexically;

/// The largest plan file read.
pub const MAX_PLAN_BYTES: u64 = 16 * agents_akms::bounded::MIB;
const PLAN_CAP: Cap = Cap::new(MAX_PLAN_BYTES, "a fixed limit for plan files");

/// A problem with a plan file, naming the file and the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {field}: {message}", file.display())]
pub struct PlanError {
    pub file: PathBuf,
    pub field: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub plan_name: String,
    pub base_branch: Option<String>,
    /// The agents' context window, in tokens, when known.
    pub model_context_limit: Option<u64>,
    /// Tokens of the agents' system prompt.
    pub system_prompt_tokens: u64,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    pub phase: u32,
    pub title: String,
    pub tasks: Vec<Task>,
}

/// A problem with one field of a task record: the field (`scope[2]`) and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError { field: field.into(), message: message.into() }
    }
}

/// Why the tasks of a phase cannot be put in waves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaveError {
    /// A dependency that is no task of the phase.
    #[error("task `{task}` depends on `{dependency}`, which is not a task of phase {phase}")]
    UnknownDependency { task: String, dependency: String, phase: u32 },
    /// Tasks whose dependencies form a cycle (every task left unordered).
    #[error("the dependencies of {} form a cycle", quoted(tasks))]
    Cycle { tasks: Vec<String> },
    /// Two tasks with a scope file in common and no dependency between them;
    /// `wave` is the wave (1-based) both would run in, when it is the same.
    #[error(
        "tasks `{first}` and `{second}` both have `{path}` in their scope{} and neither depends on the other: \
         give one a `depends_on` the other so they run in different waves",
        match wave { Some(wave) => format!(" and would run in the same wave ({wave})"), None => String::new() }
    )]
    SharedScope { first: String, second: String, path: String, wave: Option<usize> },
}

/// A task record (4.5) with the fields the orchestrator reads pulled out;
/// `record` is the whole JSON object, unknown fields included.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub task_id: String,
    pub title: String,
    pub scope: Vec<String>,
    pub depends_on: Vec<String>,
    pub record: Map<String, Value>,
}

impl Plan {
    /// Reads and validates a plan file.
    pub fn read(file: &Path) -> Result<Plan, PlanError> {
        let text = read_text(file, None, PLAN_CAP).map_err(|e| PlanError {
            file: file.to_owned(),
            field: "(file)".into(),
            message: e.to_string(),
        })?;
        Plan::parse(file, &text)
    }

    /// Parses and validates plan JSON; `file` names it in errors.
    pub fn parse(file: &Path, text: &str) -> Result<Plan, PlanError> {
        let error = |field: &str, message: String| PlanError { file: file.to_owned(), field: field.into(), message };
        let root: Value = serde_json::from_str(text)
            .map_err(|e| error(&format!("line {}", e.line()), format!("not valid JSON: {e}")))?;
        let Value::Object(root) = root else {
            return Err(error("(root)", "expected an object with `phases`".into()));
        };
        let plan_name =
            optional_string(&root, "plan_name").map_err(|e| error("plan_name", e.message))?.unwrap_or_default();
        if !plan_name.is_empty() && !is_branch_safe(&plan_name) {
            return Err(error("plan_name", format!("`{plan_name}` cannot be part of a branch name")));
        }
        let base_branch = optional_string(&root, "base_branch").map_err(|e| error("base_branch", e.message))?;
        let model_context_limit =
            optional_count(&root, "model_context_limit").map_err(|e| error("model_context_limit", e.message))?;
        let system_prompt_tokens = optional_count(&root, "system_prompt_tokens")
            .map_err(|e| error("system_prompt_tokens", e.message))?
            .unwrap_or(0);
        let Some(Value::Array(phases_json)) = root.get("phases") else {
            return Err(error("phases", "required: a list of phases".into()));
        };
        if phases_json.is_empty() {
            return Err(error("phases", "a plan needs at least one phase".into()));
        }
        let mut phases = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (p, phase) in phases_json.iter().enumerate() {
            let at = format!("phases[{p}]");
            let Value::Object(phase) = phase else {
                return Err(error(&at, "expected an object".into()));
            };
            let number = match phase.get("phase") {
                Some(Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|n| *n >= 1),
                _ => None,
            };
            let expected = p as u32 + 1;
            if number != Some(expected) {
                return Err(error(
                    &format!("{at}.phase"),
                    format!("expected {expected} (phases are numbered 1, 2, ...)"),
                ));
            }
            let title = optional_string(phase, "title")
                .map_err(|e| error(&format!("{at}.title"), e.message))?
                .unwrap_or_default();
            let Some(Value::Array(tasks_json)) = phase.get("tasks") else {
                return Err(error(&format!("{at}.tasks"), "required: a list of task records".into()));
            };
            let mut tasks = Vec::new();
            for (t, task) in tasks_json.iter().enumerate() {
                let at = format!("{at}.tasks[{t}]");
                let task = Task::from_record(task).map_err(|e| error(&format!("{at}.{}", e.field), e.message))?;
                if let Some(other) = seen.insert(task.task_id.clone(), at.clone()) {
                    return Err(error(
                        &format!("{at}.task_id"),
                        format!("`{}` is already the id of {other}", task.task_id),
                    ));
                }
                tasks.push(task);
            }
            phases.push(Phase { phase: expected, title, tasks });
        }
        let plan = Plan { plan_name, base_branch, model_context_limit, system_prompt_tokens, phases };
        for (p, phase) in plan.phases.iter().enumerate() {
            phase.waves().map_err(|e| error(&format!("phases[{p}]"), e.to_string()))?;
        }
        Ok(plan)
    }

    pub fn phase(&self, number: u32) -> Option<&Phase> {
        self.phases.iter().find(|p| p.phase == number)
    }

    pub fn tasks(&self) -> impl Iterator<Item = (&Phase, &Task)> {
        self.phases.iter().flat_map(|p| p.tasks.iter().map(move |t| (p, t)))
    }
}

impl Task {
    /// A task from its JSON record; an error names the field.
    pub fn from_record(value: &Value) -> Result<Task, FieldError> {
        let Value::Object(record) = value else {
            return Err(FieldError::new("(task)", "expected a task record object"));
        };
        let task_id = match record.get("task_id") {
            Some(Value::String(s)) if is_task_id(s) => s.clone(),
            Some(Value::String(s)) => {
                return Err(FieldError::new(
                    "task_id",
                    format!("`{s}` may hold only letters, digits, `-`, `_` and `.`"),
                ));
            }
            _ => return Err(FieldError::new("task_id", "required: a string")),
        };
        let title = optional_string(record, "title")?.unwrap_or_default();
        let scope = string_list(record, "scope", true)?;
        for (i, path) in scope.iter().enumerate() {
            if path.is_empty() || Path::new(path).is_absolute() || confine_lexically(path).is_err() {
                return Err(FieldError::new(
                    format!("scope[{i}]"),
                    format!("`{path}` must be a relative path inside the repository"),
                ));
            }
        }
        let depends_on = string_list(record, "depends_on", false)?;
        if depends_on.contains(&task_id) {
            return Err(FieldError::new("depends_on", format!("`{task_id}` depends on itself")));
        }
        string_list(record, "akms_tags", false)?;
        match record.get("akms_schema") {
            None => {}
            Some(Value::String(v)) if v == agents_akms::SCHEMA_VERSION => {}
            Some(other) => {
                return Err(FieldError::new(
                    "akms_schema",
                    format!("expected `{}`, found {other}", agents_akms::SCHEMA_VERSION),
                ));
            }
        }
        let mut scope: Vec<String> = scope.into_iter().map(|p| normalize(&p)).collect();
        scope.sort();
        scope.dedup();
        Ok(Task { task_id, title, scope, depends_on, record: record.clone() })
    }

    /// The record as written to the task file: `akms_schema` set.
    pub fn record_json(&self) -> Value {
        let mut record = self.record.clone();
        record.entry("akms_schema").or_insert_with(|| agents_akms::SCHEMA_VERSION.into());
        record.entry("akms_tags").or_insert_with(|| Value::Array(Vec::new()));
        Value::Object(record)
    }
}

impl Phase {
    /// The tasks in dependency-ordered waves, each wave sorted by id; an
    /// error names the tasks of a cycle, an unknown dependency, or two tasks
    /// sharing a scope file with no dependency between them.
    pub fn waves(&self) -> Result<Vec<Vec<&Task>>, WaveError> {
        let by_id: BTreeMap<&str, &Task> = self.tasks.iter().map(|t| (t.task_id.as_str(), t)).collect();
        for task in &self.tasks {
            for dep in &task.depends_on {
                if !by_id.contains_key(dep.as_str()) {
                    return Err(WaveError::UnknownDependency {
                        task: task.task_id.clone(),
                        dependency: dep.clone(),
                        phase: self.phase,
                    });
                }
            }
        }
        let mut level: BTreeMap<&str, usize> = BTreeMap::new();
        let mut left: BTreeSet<&str> = by_id.keys().copied().collect();
        let mut waves: Vec<Vec<&Task>> = Vec::new();
        while !left.is_empty() {
            let ready: Vec<&str> = left
                .iter()
                .copied()
                .filter(|id| by_id[id].depends_on.iter().all(|d| level.contains_key(d.as_str())))
                .collect();
            if ready.is_empty() {
                return Err(WaveError::Cycle { tasks: left.iter().map(|id| (*id).to_owned()).collect() });
            }
            for id in &ready {
                left.remove(id);
                level.insert(id, waves.len());
            }
            waves.push(ready.iter().map(|id| by_id[id]).collect());
        }
        // Two tasks on one file need a dependency path between them.
        let mut owners: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for task in &self.tasks {
            for path in &task.scope {
                owners.entry(path).or_default().push(&task.task_id);
            }
        }
        for (path, tasks) in &owners {
            for (i, a) in tasks.iter().enumerate() {
                for b in &tasks[i + 1..] {
                    let (a, b) = if a < b { (*a, *b) } else { (*b, *a) };
                    if !depends(&by_id, a, b) && !depends(&by_id, b, a) {
                        return Err(WaveError::SharedScope {
                            first: a.to_owned(),
                            second: b.to_owned(),
                            path: (*path).to_owned(),
                            wave: (level[a] == level[b]).then_some(level[a] + 1),
                        });
                    }
                }
            }
        }
        Ok(waves)
    }
}

/// Whether `from` depends on `to`, directly or through other tasks.
fn depends(by_id: &BTreeMap<&str, &Task>, from: &str, to: &str) -> bool {
    let mut stack = vec![from];
    let mut seen = BTreeSet::new();
    while let Some(id) = stack.pop() {
        for dep in by_id.get(id).map(|t| t.depends_on.as_slice()).unwrap_or_default() {
            if dep == to {
                return true;
            }
            if seen.insert(dep.as_str()) {
                stack.push(dep);
            }
        }
    }
    false
}

fn quoted(ids: &[String]) -> String {
    ids.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
}

fn optional_string(map: &Map<String, Value>, key: &str) -> Result<Option<String>, FieldError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(FieldError::new(key, format!("expected a string, found {other}"))),
    }
}

/// A non-negative whole number of tokens; a number given as a string says so.
fn optional_count(map: &Map<String, Value>, key: &str) -> Result<Option<u64>, FieldError> {
    let message = match map.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(count) => return Ok(Some(count)),
            None => format!("expected a whole number of tokens (0 or more), found {n}"),
        },
        Some(Value::String(s)) => format!("expected a number, found the string \"{s}\" (write it without quotes)"),
        Some(other) => format!("expected a whole number of tokens, found {other}"),
    };
    Err(FieldError::new(key, message))
}

fn string_list(map: &Map<String, Value>, key: &str, required: bool) -> Result<Vec<String>, FieldError> {
    match map.get(key) {
        None | Some(Value::Null) if !required => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_owned).ok_or_else(|| FieldError::new(format!("{key}[{i}]"), "expected a string"))
            })
            .collect(),
        _ => {
            Err(FieldError::new(key, format!("{}a list of strings", if required { "required: " } else { "expected " })))
        }
    }
}

fn normalize(path: &str) -> String {
    path.trim_start_matches("./").replace('\\', "/")
}

fn is_task_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s != "."
        && s != ".."
}

/// Whether `name` can be part of a git branch name without quoting trouble.
pub fn is_branch_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(['-', '.'])
        && !name.contains("..")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(tasks: Value) -> Result<Plan, PlanError> {
        let text = json!({"plan_name": "p", "phases": [{"phase": 1, "tasks": tasks}]}).to_string();
        Plan::parse(Path::new("plan.json"), &text)
    }

    fn task(id: &str, scope: &[&str], deps: &[&str]) -> Value {
        json!({"task_id": id, "title": id, "scope": scope, "depends_on": deps, "akms_tags": []})
    }

    fn wave_ids(plan: &Plan) -> Vec<Vec<String>> {
        plan.phases[0].waves().unwrap().iter().map(|w| w.iter().map(|t| t.task_id.clone()).collect()).collect()
    }

    #[test]
    fn tasks_run_in_dependency_ordered_waves_sorted_by_id() {
        let p = plan(json!([
            task("c", &["c.py"], &["a"]),
            task("b", &["b.py"], &[]),
            task("a", &["a.py"], &[]),
            task("d", &["d.py"], &["c", "b"]),
        ]))
        .unwrap();
        assert_eq!(wave_ids(&p), [vec!["a", "b"], vec!["c"], vec!["d"]]);
    }

    #[test]
    fn two_tasks_on_one_file_without_a_dependency_are_rejected_naming_both_and_the_file() {
        let e = plan(json!([task("t2", &["src/x.py"], &[]), task("t1", &["./src/x.py", "y.py"], &[])])).unwrap_err();
        assert_eq!(e.field, "phases[0]");
        assert!(e.to_string().starts_with("plan.json: phases[0]: tasks `t1` and `t2` both have `src/x.py`"), "{e}");
        assert!(e.message.contains("same wave (1)"), "{e}");
        // With a dependency they are in different waves.
        let p = plan(json!([task("t2", &["src/x.py"], &["t1"]), task("t1", &["src/x.py"], &[])])).unwrap();
        assert_eq!(wave_ids(&p), [vec!["t1"], vec!["t2"]]);
        // Different waves but no dependency path: still an error.
        let e = plan(json!([task("a", &["s.py"], &[]), task("b", &["b.py"], &[]), task("c", &["s.py"], &["b"]),]))
            .unwrap_err();
        assert!(e.message.contains("tasks `a` and `c` both have `s.py`") && !e.message.contains("same wave"), "{e}");
    }

    #[test]
    fn cycles_unknown_dependencies_and_bad_fields_name_the_place() {
        let e = plan(json!([task("a", &[], &["b"]), task("b", &[], &["a"]), task("c", &[], &[])])).unwrap_err();
        assert!(e.message.contains("`a`, `b` form a cycle"), "{e}");
        let e = plan(json!([task("a", &[], &["zz"])])).unwrap_err();
        assert!(e.message.contains("depends on `zz`, which is not a task of phase 1"), "{e}");
        let e = plan(json!([task("a", &["../etc/passwd"], &[])])).unwrap_err();
        assert_eq!(e.field, "phases[0].tasks[0].scope[0]");
        let e = plan(json!([task("a", &[], &[]), task("a", &[], &[])])).unwrap_err();
        assert_eq!(e.field, "phases[0].tasks[1].task_id");
        let e = plan(json!([{"task_id": "x y", "scope": []}])).unwrap_err();
        assert_eq!(e.field, "phases[0].tasks[0].task_id");
        let e = plan(json!([{"task_id": "x"}])).unwrap_err();
        assert_eq!(e.field, "phases[0].tasks[0].scope");
        let e = Plan::parse(Path::new("plan.json"), "{\"phases\": [{\"phase\": 2, \"tasks\": []}]}").unwrap_err();
        assert_eq!(e.field, "phases[0].phase");
        let e = Plan::parse(Path::new("plan.json"), "{\n\"phases\": [,]}").unwrap_err();
        assert!(e.to_string().starts_with("plan.json: line 2: not valid JSON"), "{e}");
        let e = Plan::parse(Path::new("plan.json"), "{\"plan_name\": \"a b\", \"phases\": []}").unwrap_err();
        assert_eq!(e.field, "plan_name");
    }

    #[cfg(unix)]
    #[test]
    fn plan_files_are_read_bounded_a_fifo_or_an_oversized_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("plan.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(Plan::read(&path).map(|_| ()));
        });
        let e = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("no hang").unwrap_err();
        assert!(e.to_string().contains("plan.json: (file): is a FIFO"), "{e}");
        let big = dir.path().join("big.json");
        std::fs::File::create(&big).unwrap().set_len(MAX_PLAN_BYTES + 1).unwrap();
        let e = Plan::read(&big).unwrap_err();
        assert!(e.to_string().contains("big.json") && e.message.contains("over the limit"), "{e}");
    }

    #[test]
    fn the_loadout_budget_comes_from_the_plan_and_a_number_as_a_string_says_so() {
        let text = json!({"model_context_limit": 128000, "system_prompt_tokens": 4000,
            "phases": [{"phase": 1, "tasks": []}]});
        let p = Plan::parse(Path::new("plan.json"), &text.to_string()).unwrap();
        assert_eq!((p.model_context_limit, p.system_prompt_tokens), (Some(128000), 4000));
        let p = Plan::parse(Path::new("plan.json"), "{\"phases\": [{\"phase\": 1, \"tasks\": []}]}").unwrap();
        assert_eq!((p.model_context_limit, p.system_prompt_tokens), (None, 0));
        let text = json!({"model_context_limit": "128000", "phases": [{"phase": 1, "tasks": []}]});
        let e = Plan::parse(Path::new("plan.json"), &text.to_string()).unwrap_err();
        assert_eq!(e.field, "model_context_limit");
        assert!(e.message.contains("found the string \"128000\" (write it without quotes)"), "{e}");
    }

    #[test]
    fn records_keep_their_fields() {
        let p = plan(json!([{"task_id": "a", "scope": ["x"], "priority": 3}])).unwrap();
        let record = p.phases[0].tasks[0].record_json();
        assert_eq!(record["priority"], 3);
        assert_eq!(record["akms_schema"], "v2");
        assert_eq!(record["akms_tags"], json!([]));
    }
}
