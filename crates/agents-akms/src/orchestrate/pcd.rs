//! The Phase Completion Document (4.4) a phase ends with, aggregated from
//! its tasks' AgentMemories, deterministically: the persistent zone is the
//! memories' `nodes_used`, `nodes_missing`, `lessons`, `pitfalls_discovered`
//! and `new_knowledge` concatenated in task-id order (pitfalls from several
//! agents about one node stay separate entries), the ephemeral zone comes
//! from the orchestrator's task table and from git (files created, modified,
//! deleted).

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::git::Change;
use crate::yaml::{split_frontmatter, to_json};

pub struct PhaseDocument {
    pub phase: u32,
    pub plan_file: String,
    pub branch: String,
    pub date: String,
    /// In the plan's order.
    pub tasks: Vec<TaskSummary>,
    pub changes: Vec<Change>,
}

pub struct TaskSummary {
    pub task_id: String,
    pub title: String,
    pub complete: bool,
    /// The AgentMemory of a complete task.
    pub memory: Option<PathBuf>,
    pub loadout: Option<String>,
    pub reason: Option<String>,
}

const PERSISTENT_LISTS: [&str; 4] = ["nodes_used", "nodes_missing", "pitfalls_discovered", "new_knowledge"];

/// The frontmatter of an AgentMemory as JSON.
fn memory_fields(path: &PathBuf) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let front = split_frontmatter(&text).ok_or_else(|| format!("{}: no YAML frontmatter", path.display()))?;
    let yaml: yaml_serde::Value =
        yaml_serde::from_str(front.yaml).map_err(|e| format!("{}: not valid YAML: {e}", path.display()))?;
    match to_json(&yaml) {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{}: the frontmatter is not a mapping", path.display())),
    }
}

/// The PCD file's text.
pub fn render(doc: &PhaseDocument) -> Result<String, String> {
    let mut tasks: Vec<&TaskSummary> = doc.tasks.iter().collect();
    tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let mut persistent: Map<String, Value> = PERSISTENT_LISTS.iter().map(|k| ((*k).to_owned(), json!([]))).collect();
    let (mut worked, mut failed) = (Vec::new(), Vec::new());
    let mut completion = Vec::new();
    let (mut passed, mut total) = (0u64, 0u64);
    let mut warnings = Vec::new();
    let mut failing = Vec::new();
    for task in &tasks {
        let memory = match &task.memory {
            Some(path) if task.complete => Some(memory_fields(path)?),
            _ => None,
        };
        let field = |key: &str| memory.as_ref().and_then(|m| m.get(key)).cloned();
        let tests_passed = field("tests_passed").and_then(|v| v.as_u64()).unwrap_or(0);
        let tests_total = field("tests_total").and_then(|v| v.as_u64()).unwrap_or(0);
        passed += tests_passed;
        total += tests_total;
        let status = match (&memory, task.complete) {
            (Some(m), true) => m.get("status").and_then(Value::as_str).unwrap_or("complete").to_owned(),
            _ => "failed".to_owned(),
        };
        completion.push(json!({
            "task_id": task.task_id,
            "title": task.title,
            "commit": field("commit").unwrap_or(Value::Null),
            "tests_passed": tests_passed,
            "tests_total": tests_total,
            "status": status,
            "agent_model": field("agent_model").unwrap_or_else(|| "unknown".into()),
        }));
        if let Some(reason) = &task.reason {
            warnings.push(format!("task {} did not complete: {reason}", task.task_id));
            failing.push(format!("{}: {reason}", task.task_id));
        }
        let Some(memory) = memory else { continue };
        for key in PERSISTENT_LISTS {
            if let (Some(Value::Array(items)), Some(Value::Array(all))) = (memory.get(key), persistent.get_mut(key)) {
                all.extend(items.iter().cloned());
            }
        }
        if let Some(lessons) = memory.get("lessons") {
            worked.extend(lessons["worked"].as_array().into_iter().flatten().cloned());
            failed.extend(lessons["failed"].as_array().into_iter().flatten().cloned());
        }
    }
    if warnings.is_empty() {
        warnings.push("No warnings".to_owned());
    }
    let listed = |want: fn(&Change) -> bool, key: &str, note: &str| -> Value {
        Value::Array(doc.changes.iter().filter(|c| want(c)).map(|c| json!({"path": c.path(), key: note})).collect())
    };
    let loadout_used = tasks.iter().find_map(|t| t.loadout.clone()).unwrap_or_default();
    let mut front = Map::new();
    front.insert("phase_id".into(), doc.phase.into());
    front.insert("plan_file".into(), doc.plan_file.clone().into());
    front.insert("branch".into(), doc.branch.clone().into());
    front.insert("date".into(), doc.date.clone().into());
    front.insert("loadout_used".into(), loadout_used.into());
    front.insert("tasks".into(), Value::Array(completion));
    front.insert("overall_test_status".into(), json!({"passed": passed, "total": total, "skipped": 0, "fixed": 0}));
    front.insert(
        "files_created".into(),
        listed(|c| matches!(c, Change::Added(_)), "description", "created in this phase"),
    );
    front.insert(
        "files_modified".into(),
        listed(|c| matches!(c, Change::Modified(_)), "changes", "modified in this phase"),
    );
    front
        .insert("files_deleted".into(), listed(|c| matches!(c, Change::Deleted(_)), "reason", "deleted in this phase"));
    front.insert("interfaces_added".into(), json!([]));
    front.insert("assumptions".into(), json!([]));
    front.insert("known_issues".into(), json!({"failing_tests": [], "bugs": failing, "coverage_gaps": []}));
    front.insert("next_phase_warnings".into(), json!(warnings));
    for (key, value) in persistent {
        front.insert(key, value);
    }
    front.insert("lessons".into(), json!({"worked": worked, "failed": failed}));
    front.insert("akms_schema".into(), crate::SCHEMA_VERSION.into());
    let yaml = yaml_serde::to_string(&Value::Object(front)).map_err(|e| format!("cannot write the PCD: {e}"))?;
    let mut body = format!(
        "---\n{yaml}---\n\n## Phase {} summary\n\nAggregated by `agents orchestrate` from the AgentMemories of phase {} on `{}`.\n\n",
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
    Ok(body)
}
