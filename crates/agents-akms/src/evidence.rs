//! Evidence documents (spec 4.3, 4.4): the AgentMemory a task agent writes
//! and the Phase Completion Document (PCD) a phase agent writes, parsed and
//! validated through one validator.
//!
//! The two share their persistent zone (`nodes_used`, `nodes_missing`,
//! `lessons`, `pitfalls_discovered`, `new_knowledge`, FR-M08), checked by one
//! function; each adds its identity fields, and the PCD its ephemeral zone
//! (tasks, architecture state, assumptions, known issues, and
//! `next_phase_warnings`, which needs at least one entry, FR-M06). A document
//! with a top-level `task_id` is an AgentMemory, any other a PCD.
//!
//! Validation is pure (a path for messages and the text): every problem of a
//! document is collected as a [`Diagnostic`] naming file, line and field, and
//! a document with any error yields no [`Evidence`]. Whether the node ids a
//! document names exist is checked later, against the compiled graph
//! ([`crate::update`]), still before anything is written.

use std::path::{Path, PathBuf};

use serde::Serialize;
use yaml_serde::{Mapping, Value as Yaml};

use crate::diag::{Diagnostic, ProblemKind};
use crate::schema::{Checker, valid_id};
use crate::yaml::{check_schema, key_lines, parse_mapping, scalar_text, split_frontmatter};

/// Which kind of evidence a document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DocumentKind {
    AgentMemory,
    PhaseCompletion,
}

/// `nodes_used[].coverage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Coverage {
    Sufficient,
    MissingDetail,
    Outdated,
}

impl Coverage {
    pub fn as_str(self) -> &'static str {
        match self {
            Coverage::Sufficient => "sufficient",
            Coverage::MissingDetail => "missing-detail",
            Coverage::Outdated => "outdated",
        }
    }

    /// `missing-detail` and `outdated` are negative signals (a hit).
    pub fn is_negative(self) -> bool {
        self != Coverage::Sufficient
    }
}

/// One `nodes_used` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeUse {
    pub id: String,
    pub useful: bool,
    pub coverage: Coverage,
    pub note: Option<String>,
    /// Field path for messages, `nodes_used[i]`.
    #[serde(skip)]
    pub field: String,
}

/// One `nodes_missing` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeMissing {
    pub description: String,
    pub suggested_id: String,
    pub domain: String,
    pub tags: Vec<String>,
    pub priority: String,
}

/// One `pitfalls_discovered` entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pitfall {
    /// `None`: a pitfall tied to no existing node.
    pub node_ref: Option<String>,
    pub description: String,
    pub severity: String,
    #[serde(skip)]
    pub field: String,
}

/// One `new_knowledge` entry. `status` and `source` are checked to be
/// `tentative` and `agent`; `title`, `domain` and `tags` are optional
/// (defaults: the suggested id, `general`, the domain).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewKnowledge {
    pub suggested_id: String,
    pub title: String,
    pub domain: String,
    pub tags: Vec<String>,
    pub content_draft: String,
}

/// The domain of new knowledge that names none.
pub const DEFAULT_DOMAIN: &str = "general";
/// `pitfalls_discovered[].severity`.
pub const SEVERITIES: &[&str] = &["high", "medium", "low"];
/// `status` of a task or AgentMemory.
pub const OUTCOMES: &[&str] = &["complete", "partial", "failed", "deferred"];
const COVERAGES: &[&str] = &["sufficient", "missing-detail", "outdated"];
const PRIORITIES: &[&str] = &["high", "medium", "low"];
const IMPACTS: &[&str] = &["none", "low", "blocking"];

/// A validated evidence document: what the update step consumes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    pub kind: DocumentKind,
    /// The file, as given (used in messages).
    pub file: PathBuf,
    /// The session node representing the document: `session-<task id>` for an
    /// AgentMemory, `session-phase-<N>` for a PCD. The update adds a suffix
    /// of the document's content hash when another document already has
    /// that id ([`crate::update`]).
    pub session_id: String,
    /// What `activated_by_tasks` records: the task id, or `phase-<N>`.
    pub label: String,
    pub phase: i64,
    /// `YYYY-MM-DD`: the day of `timestamp` (AgentMemory) or `date` (PCD).
    pub date: String,
    /// The task's status; for a PCD the worst of its tasks' (failed, partial,
    /// deferred, complete).
    pub outcome: String,
    pub nodes_used: Vec<NodeUse>,
    pub nodes_missing: Vec<NodeMissing>,
    pub pitfalls: Vec<Pitfall>,
    pub new_knowledge: Vec<NewKnowledge>,
}

/// Parses and validates one AgentMemory or PCD with the default limits;
/// `file` names it in messages.
pub fn parse_evidence(file: &Path, text: &str) -> Result<Evidence, Vec<Diagnostic>> {
    parse_evidence_with(file, text, &crate::config::LimitsConfig::default())
}

/// [`parse_evidence`] with the repository's `limits` (a `content_draft`
/// over `limits.max_content_draft_bytes` is an error).
pub fn parse_evidence_with(
    file: &Path,
    text: &str,
    limits: &crate::config::LimitsConfig,
) -> Result<Evidence, Vec<Diagnostic>> {
    let Some(front) = split_frontmatter(text) else {
        return Err(vec![Diagnostic::error(
            ProblemKind::Yaml,
            file,
            Some(1),
            None,
            "no yaml frontmatter: an AgentMemory or PCD starts with a `---` line and its fields end with another"
                .into(),
        )]);
    };
    let map = parse_mapping(file, front.yaml, front.first_line).map_err(|d| vec![d])?;
    let lines = key_lines(front.yaml, front.first_line);
    if let Some(d) = check_schema(file, &map, &lines) {
        return Err(vec![d]);
    }
    let mut check = Checker { file, lines: &lines, map: &map, problems: Vec::new() };
    let kind = if map.contains_key("task_id") { DocumentKind::AgentMemory } else { DocumentKind::PhaseCompletion };
    let mut top = Fields { map: &map, at: String::new() };

    let (session_id, label, phase, date, outcome) = match kind {
        DocumentKind::AgentMemory => {
            let task_id = top.required_string(&mut check, "task_id");
            top.required_string(&mut check, "task_description");
            let phase = top.required_int(&mut check, "phase_id");
            let timestamp = top.required_date(&mut check, "timestamp");
            top.required_string(&mut check, "agent_model");
            top.required_path(&mut check, "loadout_used");
            let status = top.required_enum(&mut check, "status", OUTCOMES);
            top.optional_string(&mut check, "commit");
            top.required_int(&mut check, "tests_passed");
            top.required_int(&mut check, "tests_total");
            top.optional_string(&mut check, "completion_notes");
            let slug = task_id.as_deref().map(slug).unwrap_or_default();
            if task_id.is_some() && slug.is_empty() {
                check.invalid("task_id", "needs at least one letter or digit".into());
            }
            (format!("session-{slug}"), task_id.unwrap_or_default(), phase, timestamp, status)
        }
        DocumentKind::PhaseCompletion => {
            let phase = top.required_int(&mut check, "phase_id");
            top.required_path(&mut check, "plan_file");
            top.required_string(&mut check, "branch");
            let date = top.required_date(&mut check, "date");
            top.required_path(&mut check, "loadout_used");
            let outcome = ephemeral_zone(&mut check, &map);
            let phase_label = format!("phase-{}", phase.unwrap_or_default());
            (format!("session-{phase_label}"), phase_label, phase, date, Some(outcome))
        }
    };
    let zone = persistent_zone(&mut check, &map, limits);

    let mut problems = check.problems;
    crate::diag::sort(&mut problems);
    if problems.iter().any(Diagnostic::is_error) {
        return Err(problems);
    }
    let (Some(phase), Some(date), Some(outcome)) = (phase, date, outcome) else {
        return Err(problems);
    };
    Ok(Evidence {
        kind,
        file: file.to_path_buf(),
        session_id,
        label,
        phase,
        date,
        outcome,
        nodes_used: zone.nodes_used,
        nodes_missing: zone.nodes_missing,
        pitfalls: zone.pitfalls,
        new_knowledge: zone.new_knowledge,
    })
}

/// A lower-case identifier made of `text`: letters and digits kept (lower
/// case), runs of anything else one `-`, no `-` at either end.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches(['-', '.', '_']).to_owned()
}

/// The persistent zone, identical in both documents (FR-M08).
struct Zone {
    nodes_used: Vec<NodeUse>,
    nodes_missing: Vec<NodeMissing>,
    pitfalls: Vec<Pitfall>,
    new_knowledge: Vec<NewKnowledge>,
}

fn persistent_zone(check: &mut Checker, map: &Mapping, limits: &crate::config::LimitsConfig) -> Zone {
    let mut zone =
        Zone { nodes_used: Vec::new(), nodes_missing: Vec::new(), pitfalls: Vec::new(), new_knowledge: Vec::new() };
    for (at, item) in entries(check, map, "nodes_used") {
        let mut f = Fields { map: item, at: at.clone() };
        let id = f.required_id(check, "id");
        let useful = f.required_bool(check, "useful");
        let coverage = f.required_enum(check, "coverage", COVERAGES);
        let note = f.optional_string(check, "note");
        let coverage = match coverage.as_deref() {
            Some("sufficient") => Some(Coverage::Sufficient),
            Some("missing-detail") => Some(Coverage::MissingDetail),
            Some("outdated") => Some(Coverage::Outdated),
            _ => None,
        };
        if let (Some(id), Some(useful), Some(coverage)) = (id, useful, coverage) {
            zone.nodes_used.push(NodeUse { id, useful, coverage, note, field: at });
        }
    }
    for (at, item) in entries(check, map, "nodes_missing") {
        let mut f = Fields { map: item, at };
        let description = f.required_string(check, "description");
        let suggested_id = f.required_id(check, "suggested_id");
        let domain = f.required_string(check, "domain");
        let tags = f.optional_string_list(check, "tags");
        let priority = f.required_enum(check, "priority", PRIORITIES);
        if let (Some(description), Some(suggested_id), Some(domain), Some(priority)) =
            (description, suggested_id, domain, priority)
        {
            zone.nodes_missing.push(NodeMissing { description, suggested_id, domain, tags, priority });
        }
    }
    match map.get("lessons") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Mapping(lessons)) => {
            let mut f = Fields { map: lessons, at: "lessons".into() };
            f.optional_string_list(check, "worked");
            for (at, item) in entries(check, lessons, "failed") {
                let at = format!("lessons.{at}");
                let mut f = Fields { map: item, at };
                for key in ["what", "why", "fix"] {
                    f.required_string(check, key);
                }
            }
        }
        Some(other) => {
            check.invalid("lessons", format!("expected a mapping with worked and failed, found {}", scalar_text(other)))
        }
    }
    for (at, item) in entries(check, map, "pitfalls_discovered") {
        let mut f = Fields { map: item, at: at.clone() };
        let node_ref = match item.get("node_ref") {
            None => {
                check.missing(&format!("{at}.node_ref"));
                None
            }
            Some(Yaml::Null) => Some(None),
            Some(_) => f.required_id(check, "node_ref").map(Some),
        };
        let description = f.required_string(check, "description");
        let severity = f.required_enum(check, "severity", SEVERITIES);
        if let (Some(node_ref), Some(description), Some(severity)) = (node_ref, description, severity) {
            zone.pitfalls.push(Pitfall { node_ref, description, severity, field: at });
        }
    }
    for (at, item) in entries(check, map, "new_knowledge") {
        let mut f = Fields { map: item, at: at.clone() };
        let suggested_id = f.required_id(check, "suggested_id");
        let content_draft = f.required_string(check, "content_draft");
        let cap = limits.content_draft_cap();
        let content_draft = match content_draft {
            Some(draft) if draft.len() as u64 > cap.bytes => {
                let field = format!("{at}.content_draft");
                let line = check.lines.get("new_knowledge").copied();
                check.problems.push(Diagnostic::error(
                    ProblemKind::TooLarge,
                    check.file,
                    line,
                    Some(&field),
                    cap.exceeded(draft.len() as u64),
                ));
                None
            }
            draft => draft,
        };
        let status = f.required_string(check, "status");
        let source = f.required_string(check, "source");
        if let Some(status) = &status
            && status != "tentative"
        {
            check.invalid(
                &format!("{at}.status"),
                format!("new knowledge is always `tentative`, not `{status}` (FR-M04)"),
            );
        }
        if let Some(source) = &source
            && source != "agent"
        {
            check.invalid(&format!("{at}.source"), format!("new knowledge is always `agent`, not `{source}` (FR-M04)"));
        }
        let title = f.optional_string(check, "title");
        let domain = f.optional_string(check, "domain");
        if let Some(domain) = &domain
            && crate::schema::RESERVED_DOMAINS.contains(&domain.as_str())
        {
            check.invalid(&format!("{at}.domain"), format!("`{domain}` is reserved for nodes the system generates"));
        }
        let tags = f.optional_string_list(check, "tags");
        if let (Some(suggested_id), Some(content_draft)) = (suggested_id, content_draft) {
            let domain = domain.unwrap_or_else(|| DEFAULT_DOMAIN.to_owned());
            let tags = if tags.is_empty() { vec![domain.clone()] } else { tags };
            zone.new_knowledge.push(NewKnowledge {
                title: title.unwrap_or_else(|| suggested_id.clone()),
                suggested_id,
                domain,
                tags,
                content_draft,
            });
        }
    }
    zone
}

/// The PCD's ephemeral zone; returns the phase outcome (the worst task status).
fn ephemeral_zone(check: &mut Checker, map: &Mapping) -> String {
    let mut worst = "complete";
    let rank = |s: &str| ["complete", "deferred", "partial", "failed"].iter().position(|x| *x == s).unwrap_or(0);
    for (at, item) in entries(check, map, "tasks") {
        let mut f = Fields { map: item, at };
        f.required_string(check, "task_id");
        f.required_string(check, "title");
        f.optional_string(check, "commit");
        f.required_int(check, "tests_passed");
        f.required_int(check, "tests_total");
        if let Some(status) = f.required_enum(check, "status", OUTCOMES)
            && rank(&status) > rank(worst)
        {
            worst = OUTCOMES.iter().find(|o| **o == status).copied().unwrap_or(worst);
        }
        f.required_string(check, "agent_model");
        f.optional_int(check, "review_score");
        f.optional_mapping(check, "review_breakdown");
    }
    match map.get("overall_test_status") {
        Some(Yaml::Mapping(_)) => {}
        None | Some(Yaml::Null) => check.missing("overall_test_status"),
        Some(other) => check.invalid(
            "overall_test_status",
            format!("expected a mapping of pass/total/skipped/fixed counts, found {}", scalar_text(other)),
        ),
    }
    for (list, keys) in [
        ("files_created", &["path", "description"][..]),
        ("files_modified", &["path", "changes"][..]),
        ("files_deleted", &["path", "reason"][..]),
        ("interfaces_added", &["name", "description"][..]),
        ("assumptions", &["claim", "where", "rationale", "risk_if_wrong"][..]),
    ] {
        for (at, item) in entries(check, map, list) {
            let mut f = Fields { map: item, at };
            for key in keys {
                f.required_string(check, key);
            }
        }
    }
    match map.get("known_issues") {
        None | Some(Yaml::Null) => {}
        Some(Yaml::Mapping(issues)) => {
            let mut f = Fields { map: issues, at: "known_issues".into() };
            f.optional_string_list(check, "bugs");
            f.optional_string_list(check, "coverage_gaps");
            for (at, item) in entries(check, issues, "failing_tests") {
                let at = format!("known_issues.{at}");
                let mut f = Fields { map: item, at };
                f.optional_string(check, "reason");
                f.optional_enum(check, "impact_on_next_phase", IMPACTS);
            }
        }
        Some(other) => check.invalid("known_issues", format!("expected a mapping, found {}", scalar_text(other))),
    }
    let mut top = Fields { map, at: String::new() };
    match map.get("next_phase_warnings") {
        None | Some(Yaml::Null) => check.missing("next_phase_warnings"),
        Some(_) => {
            if top.optional_string_list(check, "next_phase_warnings").is_empty() {
                check.invalid(
                    "next_phase_warnings",
                    "needs at least one entry, even if \"No warnings\" (FR-M06)".into(),
                );
            }
        }
    }
    top.optional_string(check, "recommended_start");
    worst.to_owned()
}

/// The mappings of the list `key` with their field paths; a value that is not
/// a list, or an item that is not a mapping, is reported.
fn entries<'m>(check: &mut Checker, map: &'m Mapping, key: &str) -> Vec<(String, &'m Mapping)> {
    let prefix = |k: &str| k.to_owned();
    match map.get(key) {
        None | Some(Yaml::Null) => Vec::new(),
        Some(Yaml::Sequence(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| {
                let at = format!("{}[{i}]", prefix(key));
                match item {
                    Yaml::Mapping(m) => Some((at, m)),
                    other => {
                        check.invalid(&at, format!("expected a mapping, found {}", scalar_text(other)));
                        None
                    }
                }
            })
            .collect(),
        Some(other) => {
            check.invalid(key, format!("expected a list, found {}", scalar_text(other)));
            Vec::new()
        }
    }
}

/// Field checks on one mapping at a field path (`""` for the top level).
struct Fields<'m> {
    map: &'m Mapping,
    at: String,
}

impl Fields<'_> {
    fn path(&self, key: &str) -> String {
        if self.at.is_empty() { key.to_owned() } else { format!("{}.{key}", self.at) }
    }

    fn present(&self, check: &mut Checker, key: &str) -> Option<&Yaml> {
        match self.map.get(key) {
            None | Some(Yaml::Null) => {
                check.missing(&self.path(key));
                None
            }
            Some(value) => Some(value),
        }
    }

    fn optional_string(&mut self, check: &mut Checker, key: &str) -> Option<String> {
        match self.map.get(key) {
            None | Some(Yaml::Null) => None,
            Some(Yaml::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Yaml::String(_)) => {
                check.invalid(&self.path(key), "must not be empty".into());
                None
            }
            // A number or a bool written bare is still text here (a commit
            // hash of digits, a version).
            Some(Yaml::Number(n)) => Some(n.to_string()),
            Some(other) => {
                check.invalid(&self.path(key), format!("expected a string, found {}", scalar_text(other)));
                None
            }
        }
    }

    fn required_string(&mut self, check: &mut Checker, key: &str) -> Option<String> {
        self.present(check, key)?;
        self.optional_string(check, key)
    }

    fn required_id(&mut self, check: &mut Checker, key: &str) -> Option<String> {
        let id = self.required_string(check, key)?;
        if valid_id(&id) {
            Some(id)
        } else {
            check.invalid(&self.path(key), format!("`{id}` is not a lower-case identifier (a-z, 0-9, `-`, `_`, `.`)"));
            None
        }
    }

    fn required_path(&mut self, check: &mut Checker, key: &str) -> Option<String> {
        let path = self.required_string(check, key)?;
        if Path::new(&path).is_absolute() {
            check.invalid(&self.path(key), format!("`{path}` is absolute; it must be a relative path"));
            return None;
        }
        Some(path)
    }

    fn optional_enum(&mut self, check: &mut Checker, key: &str, allowed: &[&str]) -> Option<String> {
        let value = self.optional_string(check, key)?;
        if allowed.contains(&value.as_str()) {
            Some(value)
        } else {
            check.invalid(&self.path(key), format!("`{value}` is not one of {}", allowed.join(", ")));
            None
        }
    }

    fn required_enum(&mut self, check: &mut Checker, key: &str, allowed: &[&str]) -> Option<String> {
        self.present(check, key)?;
        self.optional_enum(check, key, allowed)
    }

    fn required_bool(&mut self, check: &mut Checker, key: &str) -> Option<bool> {
        match self.present(check, key)? {
            Yaml::Bool(b) => Some(*b),
            other => {
                check.invalid(&self.path(key), format!("expected true or false, found {}", scalar_text(other)));
                None
            }
        }
    }

    fn optional_int(&mut self, check: &mut Checker, key: &str) -> Option<i64> {
        match self.map.get(key) {
            None | Some(Yaml::Null) => None,
            Some(value) => match value.as_i64() {
                Some(n) if n >= 0 => Some(n),
                _ => {
                    check.invalid(
                        &self.path(key),
                        format!("expected a whole number of at least 0, found {}", scalar_text(value)),
                    );
                    None
                }
            },
        }
    }

    fn required_int(&mut self, check: &mut Checker, key: &str) -> Option<i64> {
        self.present(check, key)?;
        self.optional_int(check, key)
    }

    /// An ISO 8601 date or date-time; returns its `YYYY-MM-DD`.
    fn required_date(&mut self, check: &mut Checker, key: &str) -> Option<String> {
        let text = self.required_string(check, key)?;
        match iso_day(&text) {
            Some(day) => Some(day),
            None => {
                check.invalid(
                    &self.path(key),
                    format!("`{text}` is not an ISO 8601 date (YYYY-MM-DD, optionally THH:MM:SS)"),
                );
                None
            }
        }
    }

    fn optional_mapping(&mut self, check: &mut Checker, key: &str) {
        match self.map.get(key) {
            None | Some(Yaml::Null) | Some(Yaml::Mapping(_)) => {}
            Some(other) => check.invalid(&self.path(key), format!("expected a mapping, found {}", scalar_text(other))),
        }
    }

    fn optional_string_list(&mut self, check: &mut Checker, key: &str) -> Vec<String> {
        match self.map.get(key) {
            None | Some(Yaml::Null) => Vec::new(),
            Some(Yaml::Sequence(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Yaml::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                        other => check.invalid(
                            &format!("{}[{i}]", self.path(key)),
                            format!("expected a non-empty string, found {}", scalar_text(other)),
                        ),
                    }
                }
                out
            }
            Some(other) => {
                check.invalid(&self.path(key), format!("expected a list of strings, found {}", scalar_text(other)));
                Vec::new()
            }
        }
    }
}

/// The `YYYY-MM-DD` of an ISO 8601 date or date-time, checked for a real
/// month and day.
pub fn iso_day(text: &str) -> Option<String> {
    let text = text.trim();
    let day = text.get(..10)?;
    let rest = &text[10..];
    if !(rest.is_empty() || rest.starts_with('T') || rest.starts_with(' ')) {
        return None;
    }
    let bytes = day.as_bytes();
    let digits = |r: std::ops::Range<usize>| bytes[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..4) && bytes[4] == b'-' && digits(5..7) && bytes[7] == b'-' && digits(8..10)) {
        return None;
    }
    let month: u32 = day[5..7].parse().ok()?;
    let dom: u32 = day[8..10].parse().ok()?;
    ((1..=12).contains(&month) && (1..=31).contains(&dom)).then(|| day.to_owned())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub const MEMORY: &str = "---\ntask_id: TASK-101\ntask_description: \"Fix strain-rate formula\"\nphase_id: 1\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase1-loadout.md\nstatus: complete\ncommit: abc1234\ntests_passed: 7\ntests_total: 7\nnodes_used:\n  - id: lippmann-schwinger\n    useful: true\n    coverage: sufficient\n  - id: green-operator\n    useful: false\n    coverage: outdated\n    note: \"sign convention changed\"\nnodes_missing:\n  - description: \"Boundary handling\"\n    suggested_id: boundary-handling\n    domain: fft-galerkin\n    tags: [boundary]\n    priority: medium\nlessons:\n  worked:\n    - \"Small steps\"\n  failed:\n    - what: \"Big bang\"\n      why: \"Too much at once\"\n      fix: \"Split it\"\npitfalls_discovered:\n  - node_ref: lippmann-schwinger\n    description: \"Division by zero at k = 0\"\n    severity: high\n  - node_ref: null\n    description: \"Flaky CI\"\n    severity: low\nnew_knowledge:\n  - suggested_id: strain-rate-formula\n    title: \"Strain-rate formula\"\n    domain: fft-galerkin\n    content_draft: \"Use the symmetric gradient for the strain rate.\"\n    status: tentative\n    source: agent\nakms_schema: v2\n---\n\n## Task Notes\n\nFree text.\n";

    pub const PCD: &str = "---\nphase_id: 2\nplan_file: plans/plan.md\nbranch: plan_phase-2\ndate: 2026-03-05\nloadout_used: loadouts/phase2-loadout.md\ntasks:\n  - task_id: TASK-201\n    title: \"Solver\"\n    commit: null\n    tests_passed: 3\n    tests_total: 4\n    status: partial\n    agent_model: test-model\noverall_test_status: {passed: 3, total: 4, skipped: 0, fixed: 0}\nfiles_modified:\n  - path: src/green.py\n    changes: \"regularised\"\nnext_phase_warnings:\n  - \"No warnings\"\nnodes_used:\n  - id: fft-galerkin-basics\n    useful: true\n    coverage: sufficient\nakms_schema: v2\n---\n";

    fn errors(text: &str) -> Vec<String> {
        parse_evidence(Path::new("s.md"), text).unwrap_err().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn fr_m03_parses_an_agent_memory() {
        let e = parse_evidence(Path::new("s.md"), MEMORY).unwrap();
        assert_eq!(e.kind, DocumentKind::AgentMemory);
        assert_eq!(e.session_id, "session-task-101");
        assert_eq!((e.label.as_str(), e.phase, e.date.as_str()), ("TASK-101", 1, "2026-03-04"));
        assert_eq!(e.nodes_used.len(), 2);
        assert_eq!(e.nodes_used[1].coverage, Coverage::Outdated);
        assert_eq!(e.pitfalls[1].node_ref, None);
        assert_eq!(e.new_knowledge[0].domain, "fft-galerkin");
        assert_eq!(e.nodes_missing[0].suggested_id, "boundary-handling");
    }

    #[test]
    fn fr_m08_a_pcd_goes_through_the_same_validator() {
        let e = parse_evidence(Path::new("h.md"), PCD).unwrap();
        assert_eq!(e.kind, DocumentKind::PhaseCompletion);
        assert_eq!(
            (e.session_id.as_str(), e.label.as_str(), e.outcome.as_str()),
            ("session-phase-2", "phase-2", "partial")
        );
        // The persistent zone of an AgentMemory is checked the same way in a PCD.
        let bad = PCD.replace("coverage: sufficient", "coverage: fine");
        assert_eq!(
            errors(&bad),
            ["s.md:21: nodes_used[0].coverage: `fine` is not one of sufficient, missing-detail, outdated"]
        );
        let bad = MEMORY.replace("coverage: sufficient", "coverage: fine");
        assert_eq!(
            errors(&bad),
            ["s.md:12: nodes_used[0].coverage: `fine` is not one of sufficient, missing-detail, outdated"]
        );
    }

    #[test]
    fn fr_m06_a_pcd_needs_next_phase_warnings() {
        let empty = PCD.replace("next_phase_warnings:\n  - \"No warnings\"", "next_phase_warnings: []");
        assert_eq!(
            errors(&empty),
            ["s.md:19: next_phase_warnings: needs at least one entry, even if \"No warnings\" (FR-M06)"]
        );
        let missing = PCD.replace("next_phase_warnings:\n  - \"No warnings\"\n", "");
        assert_eq!(errors(&missing), ["s.md: next_phase_warnings: required field is missing"]);
    }

    #[test]
    fn every_problem_names_file_line_and_field() {
        let text = MEMORY
            .replace("phase_id: 1", "phase_id: one")
            .replace("useful: true", "useful: yes-please")
            .replace("severity: high", "severity: dire")
            .replace("    status: tentative\n", "    status: established\n")
            .replace("agent_model: test-model\n", "");
        let got = errors(&text);
        for want in [
            "s.md: agent_model: required field is missing",
            "s.md:4: phase_id: expected a whole number of at least 0, found `one`",
            "s.md:11: nodes_used[0].useful: expected true or false, found `yes-please`",
            "s.md:32: pitfalls_discovered[0].severity: `dire` is not one of high, medium, low",
            "s.md:39: new_knowledge[0].status: new knowledge is always `tentative`, not `established` (FR-M04)",
        ] {
            assert!(got.iter().any(|g| g == want), "{want} not in {got:#?}");
        }
        assert_eq!(errors(&text).len(), 5, "{:?}", errors(&text));
        assert!(errors("no frontmatter")[0].contains("no yaml frontmatter"));
        assert!(errors(&MEMORY.replace("akms_schema: v2", "akms_schema: v1"))[0].contains("schema version"));
        assert!(
            errors(&MEMORY.replace("timestamp: 2026-03-04T10:32:00", "timestamp: yesterday"))[0]
                .contains("timestamp: `yesterday` is not an ISO 8601 date")
        );
        assert!(errors("---\ntask_id: [\n---\n")[0].contains("invalid yaml"));
    }

    proptest::proptest! {
        /// Bad input is rejected, never a panic: the examples with a run of
        /// bytes replaced anywhere, and arbitrary text.
        #[test]
        fn nfr_r01_mangled_evidence_never_panics(at in 0usize..2000, len in 0usize..12, with in "[ -~\n]{0,12}", base in 0usize..2) {
            let text = [MEMORY, PCD][base];
            let mut at = at % text.len();
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            let mut end = (at + len).min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let mangled = format!("{}{with}{}", &text[..at], &text[end..]);
            let _ = parse_evidence(Path::new("s.md"), &mangled);
        }

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
            let _ = parse_evidence(Path::new("s.md"), &format!("---\n{text}\n---\n"));
            let _ = parse_evidence(Path::new("s.md"), &text);
        }
    }

    #[test]
    fn a_content_draft_over_its_limit_is_an_error_naming_the_setting() {
        let big = "x".repeat(1024 * 1024);
        let text = MEMORY.replace("Use the symmetric gradient for the strain rate.", &big);
        let problems = parse_evidence(Path::new("s.md"), &text).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].kind, ProblemKind::TooLarge);
        assert_eq!(
            problems[0].to_string(),
            "s.md:40: new_knowledge[0].content_draft: is 1 MiB (1048576 bytes), over the limit of 256 KiB (262144 bytes; limits.max_content_draft_bytes in propagation_config.yaml)"
        );
        let raised = crate::config::LimitsConfig { max_content_draft_bytes: 16 * 1024 * 1024, ..Default::default() };
        assert!(parse_evidence_with(Path::new("s.md"), &text, &raised).is_ok());
    }

    #[test]
    fn slugs_and_days() {
        assert_eq!(slug("TASK-101"), "task-101");
        assert_eq!(slug("  Phase 2 / task 3 "), "phase-2-task-3");
        assert_eq!(iso_day("2026-03-04T10:32:00").as_deref(), Some("2026-03-04"));
        assert_eq!(iso_day("2026-13-04"), None);
        assert_eq!(iso_day("2026-03-04x"), None);
    }
}
