//! The Phase Completion Document (4.4) a phase ends with, aggregated from
//! its tasks' AgentMemories and git, deterministically.
//!
//! - The persistent zone is the memories' `nodes_used`, `nodes_missing`,
//!   `lessons`, `pitfalls_discovered` and `new_knowledge` concatenated in
//!   task-id order (pitfalls from several agents about one node stay separate
//!   entries).
//! - The ephemeral zone (the hand-off to the next phase) comes from git and
//!   from what the agents reported: every file the phase created, modified or
//!   deleted, with its real change summary (the lines added and removed, the
//!   tasks whose scope holds it, and the agent's own words when its
//!   AgentMemory lists the file under `files_created`, `files_modified` or
//!   `files_deleted`); the `interfaces_added`, `assumptions`, `known_issues`
//!   and `next_phase_warnings` the agents reported; failing tests from their
//!   counts; failed tasks and new pitfalls as warnings.
//!
//! The document is checked with the validator `agents knowledge update`
//! uses ([`agents_akms::evidence::parse_evidence`]) before it is written: a PCD
//! the project's own tools would reject is never handed off.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use agents_akms::Diagnostic;
use agents_akms::bounded::{Cap, MAX_SESSION_BYTES, ReadError, read_text};
use agents_akms::{parse_yaml_mapping as parse_mapping, split_frontmatter, yaml_to_json as to_json};

use crate::git::Change;

const SESSION_CAP: Cap = Cap::new(MAX_SESSION_BYTES, "a fixed limit for session files");

/// Why a Phase Completion Document could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PcdError {
    /// An AgentMemory that cannot be read (not a regular file, over its cap).
    #[error("{}: {source}", path.display())]
    Unreadable { path: PathBuf, source: ReadError },
    /// An AgentMemory without YAML frontmatter.
    #[error("{}: no YAML frontmatter", path.display())]
    NoFrontmatter { path: PathBuf },
    /// Frontmatter that is not YAML, or nested too deep; the diagnostic names
    /// the file and the line.
    #[error("{0}")]
    Yaml(Diagnostic),
    /// Frontmatter that is YAML but not a mapping of fields.
    #[error("{}: the frontmatter is not a mapping", path.display())]
    NotAMapping { path: PathBuf },
    /// The document's frontmatter could not be written as YAML.
    #[error("cannot write the PCD: {0}")]
    Serialize(yaml_serde::Error),
    /// The document the validator of `agents knowledge update` would refuse:
    /// its errors, one per problem.
    #[error(
        "the Phase Completion Document would not pass `agents knowledge update`'s validator, so it was not written: {}",
        problems.iter().filter(|d| d.is_error()).map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Invalid { file: PathBuf, problems: Vec<Diagnostic> },
}

pub struct PhaseDocument {
    pub phase: u32,
    /// The plan file as the validator accepts it: relative (to the repository).
    pub plan_file: String,
    pub branch: String,
    pub date: String,
    /// In the plan's order.
    pub tasks: Vec<TaskSummary>,
    pub changes: Vec<FileChange>,
    /// The orchestrator's own warnings for the next phase (edits outside
    /// every scope, partial edits set aside).
    pub warnings: Vec<String>,
    /// The task the next phase begins with, when there is one.
    pub recommended_start: Option<String>,
}

pub struct TaskSummary {
    pub task_id: String,
    pub title: String,
    pub complete: bool,
    /// The AgentMemory of a complete task.
    pub memory: Option<PathBuf>,
    pub loadout: Option<String>,
    pub reason: Option<String>,
    /// The files the task may touch.
    pub scope: Vec<String>,
    /// The commit that holds its work, when it has one.
    pub commit: Option<String>,
}

/// One path the phase changed, with its line counts (`None` for a binary file).
pub struct FileChange {
    pub change: Change,
    pub added: Option<u64>,
    pub removed: Option<u64>,
}

const PERSISTENT_LISTS: [&str; 4] = ["nodes_used", "nodes_missing", "pitfalls_discovered", "new_knowledge"];

/// What a field an agent left out reads as.
const NOT_REPORTED: &str = "(not reported)";

/// The frontmatter of an AgentMemory as JSON, read bounded and depth-checked.
fn memory_fields(path: &Path) -> Result<Map<String, Value>, PcdError> {
    let text =
        read_text(path, None, SESSION_CAP).map_err(|source| PcdError::Unreadable { path: path.to_owned(), source })?;
    let front = split_frontmatter(&text).ok_or_else(|| PcdError::NoFrontmatter { path: path.to_owned() })?;
    let map = parse_mapping(path, front.yaml, front.first_line).map_err(PcdError::Yaml)?;
    match to_json(&yaml_serde::Value::Mapping(map)) {
        Value::Object(map) => Ok(map),
        _ => Err(PcdError::NotAMapping { path: path.to_owned() }),
    }
}

/// The mappings of the list `key` of a memory (anything else is left out).
fn items<'a>(memory: &'a Map<String, Value>, key: &str) -> impl Iterator<Item = &'a Map<String, Value>> {
    memory.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_object)
}

/// `item[key]` as text, when it is a non-empty string (or a number or boolean).
fn text(item: &Map<String, Value>, key: &str) -> Option<String> {
    match item.get(key)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// An entry of `keys`, each an agent's text or [`NOT_REPORTED`]; `None` when
/// the entry has none of them (nothing was reported).
fn entry(item: &Map<String, Value>, keys: &[&str], defaults: &[(&str, String)]) -> Option<Value> {
    if keys.iter().all(|k| text(item, k).is_none()) {
        return None;
    }
    let mut out = Map::new();
    for key in keys {
        let default = defaults.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        out.insert((*key).to_owned(), text(item, key).or(default).unwrap_or_else(|| NOT_REPORTED.to_owned()).into());
    }
    Some(Value::Object(out))
}

fn lines(change: &FileChange) -> String {
    match (change.added, change.removed) {
        (Some(a), Some(r)) => format!("+{a} -{r} lines"),
        _ => "binary".to_owned(),
    }
}

/// The PCD file's text, validated as `agents knowledge update` validates it;
/// `file` names the document in the validator's messages.
pub fn render(doc: &PhaseDocument, file: &Path) -> Result<String, PcdError> {
    let mut tasks: Vec<&TaskSummary> = doc.tasks.iter().collect();
    tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let mut memories: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    for task in &tasks {
        if let (Some(path), true) = (&task.memory, task.complete) {
            memories.insert(&task.task_id, memory_fields(path)?);
        }
    }
    let mut persistent: Map<String, Value> = PERSISTENT_LISTS.iter().map(|k| ((*k).to_owned(), json!([]))).collect();
    let (mut worked, mut failed) = (Vec::new(), Vec::new());
    let mut completion = Vec::new();
    let (mut passed, mut total) = (0u64, 0u64);
    // Failures first, then what the agents said, then the pitfalls they found.
    let (mut warnings, mut told, mut pitfalls) = (Vec::new(), Vec::new(), Vec::new());
    let (mut bugs, mut gaps, mut failing_tests) = (Vec::new(), Vec::new(), Vec::new());
    let (mut interfaces, mut assumptions) = (Vec::new(), Vec::new());
    for task in &tasks {
        let memory = memories.get(task.task_id.as_str());
        let field = |key: &str| memory.and_then(|m| m.get(key)).cloned();
        let tests_passed = field("tests_passed").and_then(|v| v.as_u64()).unwrap_or(0);
        let tests_total = field("tests_total").and_then(|v| v.as_u64()).unwrap_or(0);
        passed += tests_passed;
        total += tests_total;
        let status = match memory {
            Some(m) => m.get("status").and_then(Value::as_str).unwrap_or("complete").to_owned(),
            None => "failed".to_owned(),
        };
        let commit = memory.and_then(|m| text(m, "commit")).or_else(|| task.commit.clone());
        completion.push(json!({
            "task_id": task.task_id,
            "title": if task.title.trim().is_empty() { &task.task_id } else { &task.title },
            "commit": commit,
            "tests_passed": tests_passed,
            "tests_total": tests_total,
            "status": status,
            "agent_model": field("agent_model").filter(Value::is_string).unwrap_or_else(|| "unknown".into()),
        }));
        if !task.complete {
            let reason = task.reason.as_deref().unwrap_or("no reason recorded");
            warnings.push(format!("task {} did not complete: {reason}", task.task_id));
            bugs.push(format!("{}: {reason}", task.task_id));
        }
        let Some(memory) = memory else { continue };
        if tests_passed < tests_total {
            failing_tests.push(json!({
                "tests": format!("task {}", task.task_id),
                "reason": format!("{} of {tests_total} test(s) fail", tests_total - tests_passed),
                "impact_on_next_phase": "low",
            }));
        }
        for key in PERSISTENT_LISTS {
            if let (Some(Value::Array(items)), Some(Value::Array(all))) = (memory.get(key), persistent.get_mut(key)) {
                all.extend(items.iter().cloned());
            }
        }
        if let Some(lessons) = memory.get("lessons") {
            worked.extend(lessons["worked"].as_array().into_iter().flatten().cloned());
            failed.extend(lessons["failed"].as_array().into_iter().flatten().cloned());
        }
        let by = [("where", format!("task {}", task.task_id))];
        interfaces.extend(items(memory, "interfaces_added").filter_map(|i| entry(i, &["name", "description"], &[])));
        assumptions.extend(
            items(memory, "assumptions")
                .filter_map(|i| entry(i, &["claim", "where", "rationale", "risk_if_wrong"], &by)),
        );
        if let Some(issues) = memory.get("known_issues").and_then(Value::as_object) {
            let strings = |key: &str| -> Vec<String> {
                issues
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            };
            bugs.extend(strings("bugs").into_iter().map(|b| format!("{}: {b}", task.task_id)));
            gaps.extend(strings("coverage_gaps").into_iter().map(|g| format!("{}: {g}", task.task_id)));
            for item in items(issues, "failing_tests") {
                let impact = text(item, "impact_on_next_phase")
                    .filter(|i| ["none", "low", "blocking"].contains(&i.as_str()))
                    .unwrap_or_else(|| "low".into());
                failing_tests.push(json!({
                    "tests": item.get("tests").cloned().unwrap_or_else(|| format!("task {}", task.task_id).into()),
                    "reason": text(item, "reason").unwrap_or_else(|| NOT_REPORTED.into()),
                    "impact_on_next_phase": impact,
                }));
            }
        }
        for warning in memory.get("next_phase_warnings").and_then(Value::as_array).into_iter().flatten() {
            if let Some(w) = warning.as_str().filter(|w| !w.trim().is_empty() && *w != "No warnings") {
                told.push(format!("{}: {}", task.task_id, w.trim()));
            }
        }
        for pitfall in items(memory, "pitfalls_discovered") {
            if let Some(description) = text(pitfall, "description") {
                let node = text(pitfall, "node_ref").map_or_else(String::new, |n| format!(" on `{n}`"));
                let severity = text(pitfall, "severity").unwrap_or_else(|| "unrated".into());
                pitfalls.push(format!("pitfall{node} ({severity}, from {}): {description}", task.task_id));
            }
        }
    }
    warnings.extend(doc.warnings.iter().cloned());
    warnings.extend(told);
    warnings.extend(pitfalls);
    if warnings.is_empty() {
        warnings.push("No warnings".to_owned());
    }

    // Architecture state: git's list, each with its real change summary.
    let reported = |list: &str, key: &str, path: &str| -> Vec<String> {
        memories
            .iter()
            .flat_map(|(id, m)| {
                items(m, list)
                    .filter(|i| i.get("path").and_then(Value::as_str).map(|p| p.trim_start_matches("./")) == Some(path))
                    .filter_map(|i| text(i, key))
                    .map(move |t| format!("{id}: {t}"))
            })
            .collect()
    };
    let owners = |path: &str| -> String {
        let by: Vec<String> = tasks
            .iter()
            .filter(|t| t.complete && t.scope.iter().any(|s| s == path))
            .map(|t| {
                if t.title.is_empty() {
                    format!("task {}", t.task_id)
                } else {
                    format!("task {} ({})", t.task_id, t.title)
                }
            })
            .collect();
        if by.is_empty() { "outside every task's scope".to_owned() } else { by.join(", ") }
    };
    let (mut created, mut modified, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for change in &doc.changes {
        let path = change.change.path();
        match &change.change {
            Change::Added(_) => {
                let mut words = reported("files_created", "description", path);
                words.push(format!("created by {}, {}", owners(path), lines(change)));
                created.push(json!({"path": path, "description": words.join("; ")}));
            }
            Change::Modified(_) => {
                let mut words = reported("files_modified", "changes", path);
                words.push(format!("{} by {}", lines(change), owners(path)));
                modified.push(json!({"path": path, "changes": words.join("; ")}));
            }
            Change::Deleted(_) => {
                let mut words = reported("files_deleted", "reason", path);
                words.push(format!("deleted by {} ({})", owners(path), lines(change)));
                deleted.push(json!({"path": path, "reason": words.join("; ")}));
            }
        }
    }

    let loadouts: BTreeSet<&str> = tasks.iter().filter_map(|t| t.loadout.as_deref()).collect();
    let loadout_used = loadouts.iter().next().map_or_else(|| "knowledge/loadouts".to_owned(), |l| (*l).to_owned());
    let mut front = Map::new();
    front.insert("phase_id".into(), doc.phase.into());
    front.insert("plan_file".into(), doc.plan_file.clone().into());
    front.insert("branch".into(), doc.branch.clone().into());
    front.insert("date".into(), doc.date.clone().into());
    front.insert("loadout_used".into(), loadout_used.into());
    if loadouts.len() > 1 {
        front.insert("loadouts".into(), json!(loadouts));
    }
    front.insert("tasks".into(), Value::Array(completion));
    front.insert("overall_test_status".into(), json!({"passed": passed, "total": total, "skipped": 0, "fixed": 0}));
    front.insert("files_created".into(), Value::Array(created));
    front.insert("files_modified".into(), Value::Array(modified));
    front.insert("files_deleted".into(), Value::Array(deleted));
    front.insert("interfaces_added".into(), Value::Array(interfaces));
    front.insert("assumptions".into(), Value::Array(assumptions));
    front.insert("known_issues".into(), json!({"failing_tests": failing_tests, "bugs": bugs, "coverage_gaps": gaps}));
    front.insert("next_phase_warnings".into(), json!(warnings));
    if let Some(start) = &doc.recommended_start {
        front.insert("recommended_start".into(), start.clone().into());
    }
    for (key, value) in persistent {
        front.insert(key, value);
    }
    front.insert("lessons".into(), json!({"worked": worked, "failed": failed}));
    front.insert("akms_schema".into(), agents_akms::SCHEMA_VERSION.into());
    let yaml = yaml_serde::to_string(&Value::Object(front)).map_err(PcdError::Serialize)?;
    let mut body = format!(
        "---\n{yaml}---\n\n## Phase {} summary\n\nAggregated by `agents orchestrate` from the AgentMemories of phase {} on `{}` and its git history.\n\n",
        doc.phase, doc.phase, doc.branch
    );
    for task in &tasks {
        body.push_str(&format!(
            "- {} ({}): {}\n",
            task.task_id,
            task.title,
            if task.complete {
                "complete".to_owned()
            } else {
                format!("failed: {}", task.reason.as_deref().unwrap_or(""))
            }
        ));
    }
    if let Err(problems) = agents_akms::evidence::parse_evidence(file, &body) {
        return Err(PcdError::Invalid { file: file.to_owned(), problems });
    }
    Ok(body)
}

/// `path` relative to `base` (both absolute), with `..` where it lies
/// outside; `None` when they share no root (another drive).
pub fn relative_to(path: &Path, base: &Path) -> Option<String> {
    let path: Vec<_> = path.components().collect();
    let base: Vec<_> = base.components().collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    if common == 0 {
        return None;
    }
    let mut parts: Vec<String> = vec!["..".to_owned(); base.len() - common];
    parts.extend(path[common..].iter().map(|c| c.as_os_str().to_string_lossy().into_owned()));
    Some(if parts.is_empty() { ".".to_owned() } else { parts.join("/") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_climb_out_of_the_base() {
        assert_eq!(relative_to(Path::new("/a/b/plan.json"), Path::new("/a/repo")).unwrap(), "../b/plan.json");
        assert_eq!(relative_to(Path::new("/a/repo/p.json"), Path::new("/a/repo")).unwrap(), "p.json");
    }

    fn summary(dir: &Path, id: &str, memory: &str) -> TaskSummary {
        let path = dir.join(format!("{id}.md"));
        std::fs::write(&path, memory).unwrap();
        TaskSummary {
            task_id: id.into(),
            title: format!("Task {id}"),
            complete: true,
            memory: Some(path),
            loadout: Some(format!("knowledge/loadouts/{id}-implementer-loadout.md")),
            reason: None,
            scope: vec![format!("src/{id}.py"), "src/old.py".into()],
            commit: Some("abc123".into()),
        }
    }

    #[test]
    fn a_deeply_nested_or_oversized_memory_is_refused_not_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let deep = format!("---\ntask_id: T1\nx: {}1{}\n---\n", "[".repeat(5000), "]".repeat(5000));
        let doc = PhaseDocument {
            phase: 1,
            plan_file: "plan.json".into(),
            branch: "p_phase-1".into(),
            date: "2026-11-30".into(),
            tasks: vec![summary(dir.path(), "T1", &deep)],
            changes: Vec::new(),
            warnings: Vec::new(),
            recommended_start: None,
        };
        let e = render(&doc, Path::new("handoff_phase_1.md")).unwrap_err().to_string();
        assert!(e.contains("T1.md") && e.contains("nested more than"), "{e}");
        let big = dir.path().join("T1.md");
        std::fs::File::create(&big).unwrap().set_len(MAX_SESSION_BYTES + 1).unwrap();
        let e = render(&doc, Path::new("handoff_phase_1.md")).unwrap_err().to_string();
        assert!(e.contains("T1.md") && e.contains("over the limit"), "{e}");
    }
}
