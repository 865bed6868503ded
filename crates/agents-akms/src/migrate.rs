//! Schema migrations (spec 8.3): a version bump ships with a migration that
//! transforms every participating artifact in place and re-stamps its
//! `akms_schema`, after which a full build validates the migrated state.
//!
//! [`MIGRATIONS`] is the ordered registry: each entry is a plain function over
//! the repository's sources as text ([`Sources`]), moving files from one
//! version to the next. [`plan`] reads every source, runs the migrations in
//! order in memory and returns a [`Plan`] (which files change, which fields
//! move) without writing; [`Plan::write`] then writes every changed file
//! atomically. Any bad input aborts the plan, so nothing is written.
//!
//! The v1 -> v2 migration moves the experiential fields of
//! [`OVERLAY_FIELDS`] out of local and code-mirror node frontmatter into the
//! node's entry under `nodes:` in `knowledge/graph/local_state.yaml` (an
//! overlay value already there wins), and stamps `akms_schema: v2`. The
//! frontmatter is edited as text: the moved keys (with their indented or
//! `- ` continuation lines) are cut and the stamp's value replaced, so every
//! other line, comment and the body keep their bytes; the edit is checked by
//! re-parsing. The overlay, which only the graph-update step writes, is
//! re-serialised when fields are added to it.
//!
//! The global vault is read-only (spec 3.1): its v1 nodes are only reported as
//! needing migration upstream.
//!
//! Invariant: running the migrations on their own output changes nothing.

use std::path::{Path, PathBuf};

use serde::Serialize;
use yaml_serde::{Mapping, Value as Yaml};

use crate::bounded::{self, ReadError};
use crate::diag::{AkmsError, Diagnostic, ProblemKind};
use crate::overlay::parse_local_state;
use crate::vault::{Layout, markdown_files};
use crate::yaml::{SCHEMA_VERSION, parse_mapping, split_frontmatter};

/// The experiential fields of a v1 node that v2 keeps in the overlay
/// (spec 4.1 and 4.2, `nodes.<id>`). `confidence` stays: in v2 the node's
/// value is the intrinsic seed the overlay overrides.
pub const OVERLAY_FIELDS: &[&str] = &["activations", "last_activated", "activated_by_tasks", "session_refs"];

/// One step of the registry: moves files at `from` to `to`.
pub struct Migration {
    pub name: &'static str,
    pub from: &'static str,
    pub to: &'static str,
    /// Edits `sources` in memory and says which files it changed.
    pub apply: fn(&mut Sources) -> Result<Vec<FileChange>, Diagnostic>,
}

/// The migrations, oldest first.
pub static MIGRATIONS: &[Migration] = &[Migration { name: "v1-to-v2", from: "v1", to: "v2", apply: v1_to_v2 }];

/// A source file: where it is, and its text as the migrations leave it.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// The repository's writable sources.
#[derive(Debug, Clone, PartialEq)]
pub struct Sources {
    /// Local and code-mirror nodes.
    pub nodes: Vec<SourceFile>,
    /// The overlay's path, and its text when the file exists.
    pub local_state: (PathBuf, Option<String>),
}

/// What a migration did to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    pub path: PathBuf,
    /// The fields moved out of the file (empty for a re-stamp or the overlay).
    pub moved: Vec<String>,
}

/// What `migrate` would do, or did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Names of the migrations that changed something, in order.
    pub migrations: Vec<&'static str>,
    /// Changed files, relative to the repository, sorted.
    pub files: Vec<FileChange>,
    /// Global-vault nodes at an older version: migrate them upstream.
    pub upstream: Vec<PathBuf>,
    #[serde(skip)]
    writes: Vec<(PathBuf, String)>,
    #[serde(skip)]
    layout: Layout,
}

/// Reads the sources of `layout` and plans every migration; writes nothing.
pub fn plan(layout: &Layout) -> Result<Plan, AkmsError> {
    let mut paths = Vec::new();
    for root in [layout.local_nodes(), layout.code_mirror()] {
        let (files, problems) = markdown_files(&root);
        if let Some(error) = AkmsError::from_diagnostics(&problems) {
            return Err(error);
        }
        paths.extend(files.into_iter().map(|file| (file, root.clone())));
    }
    let cap = crate::compile::read_config(layout).map(|c| c.limits).unwrap_or_default().node_cap();
    let refused = |path: &Path, e: ReadError| AkmsError::Invalid {
        problems: vec![e.diagnostic(&layout.display(path), None, None)],
    };
    let nodes = paths
        .into_iter()
        // `markdown_files` keeps each file inside its layer.
        .map(|(path, _root)| match bounded::read_text(&path, None, cap) {
            Ok(text) => Ok(SourceFile { text, path }),
            Err(e) => Err(refused(&path, e)),
        })
        .collect::<Result<Vec<_>, AkmsError>>()?;
    let overlay = layout.local_state();
    let overlay_text = bounded::read_optional(&overlay, Some(&layout.knowledge()), crate::compile::OVERLAY_CAP)
        .map_err(|e| refused(&overlay, e))?;
    let original = Sources { nodes, local_state: (overlay.clone(), overlay_text) };
    let mut sources = original.clone();
    let mut plan = Plan {
        migrations: Vec::new(),
        files: Vec::new(),
        upstream: Vec::new(),
        writes: Vec::new(),
        layout: layout.clone(),
    };
    for migration in MIGRATIONS {
        let changes = (migration.apply)(&mut sources).map_err(|mut d| {
            d.file = layout.display(&d.file);
            AkmsError::Invalid { problems: vec![d] }
        })?;
        if !changes.is_empty() {
            plan.migrations.push(migration.name);
        }
        for change in changes {
            match plan.files.iter_mut().find(|f| f.path == change.path) {
                Some(file) => file.moved.extend(change.moved),
                None => plan.files.push(change),
            }
        }
    }
    // The overlay first: a failure after it leaves the fields in both places,
    // and a second run completes the move.
    if let (Some(new), old) = (&sources.local_state.1, &original.local_state.1)
        && Some(new) != old.as_ref()
    {
        plan.writes.push((overlay, new.clone()));
    }
    for (new, old) in sources.nodes.iter().zip(&original.nodes) {
        if new.text != old.text {
            plan.writes.push((new.path.clone(), new.text.clone()));
        }
    }
    for file in &mut plan.files {
        file.path = layout.display(&file.path);
    }
    plan.files.sort_by(|a, b| a.path.cmp(&b.path));
    if layout.global_vault.is_dir() {
        for path in markdown_files(&layout.global_vault).0 {
            // Unreadable or malformed global nodes are for `validate` to report.
            let Ok(text) = bounded::read_text(&path, Some(&layout.global_vault), cap) else { continue };
            if version_of(&text).is_some_and(|v| v != SCHEMA_VERSION) {
                plan.upstream.push(path);
            }
        }
    }
    Ok(plan)
}

impl Plan {
    /// Writes every changed file as one unit through the journal of
    /// [`crate::lock`] (nodes lose their experiential fields only together
    /// with the overlay gaining them, even across a crash); `false` when
    /// there was nothing to do. The caller holds the repository's lock.
    pub fn write(&self) -> Result<bool, AkmsError> {
        let writes: Vec<(PathBuf, &str)> = self.writes.iter().map(|(p, t)| (p.clone(), t.as_str())).collect();
        if !writes.is_empty() {
            crate::lock::commit(&self.layout, &writes)?;
        }
        Ok(!self.writes.is_empty())
    }
}

/// The `akms_schema` of a node file, when its frontmatter parses.
fn version_of(text: &str) -> Option<String> {
    let front = split_frontmatter(text)?;
    let map = crate::yaml::parse_mapping(Path::new(""), front.yaml, front.first_line).ok()?;
    map.get("akms_schema").and_then(Yaml::as_str).map(str::to_owned)
}

/// v1 -> v2: experiential fields from node frontmatter into the overlay.
fn v1_to_v2(sources: &mut Sources) -> Result<Vec<FileChange>, Diagnostic> {
    const FROM: &str = "v1";
    let mut changes = Vec::new();
    let mut moved_state: Vec<(String, Mapping)> = Vec::new();
    for node in &mut sources.nodes {
        let file = node.path.as_path();
        // A file without frontmatter is content (for a `content_ref`), not a node.
        let Some(front) = split_frontmatter(&node.text) else { continue };
        let map = parse_mapping(file, front.yaml, front.first_line)?;
        if map.get("akms_schema").and_then(Yaml::as_str) != Some(FROM) {
            continue;
        }
        let moved: Vec<&str> = OVERLAY_FIELDS.iter().copied().filter(|f| map.contains_key(*f)).collect();
        if !moved.is_empty() {
            let Some(id) = map.get("id").and_then(Yaml::as_str) else {
                return Err(Diagnostic::error(
                    ProblemKind::MissingField,
                    file,
                    None,
                    Some("id"),
                    "a v1 node with experiential fields needs an id to key them in local_state.yaml".into(),
                ));
            };
            let state: Mapping = moved.iter().map(|f| (Yaml::from(*f), map[*f].clone())).collect();
            moved_state.push((id.to_owned(), state));
        }
        let yaml = edit_frontmatter(front.yaml, &moved);
        let mut expected = map.clone();
        for field in &moved {
            expected.remove(*field);
        }
        expected.insert("akms_schema".into(), SCHEMA_VERSION.into());
        if parse_mapping(file, &yaml, front.first_line).ok() != Some(expected) {
            return Err(Diagnostic::error(
                ProblemKind::Yaml,
                file,
                None,
                Some(moved.first().copied().unwrap_or("akms_schema")),
                "cannot edit this frontmatter safely; move the field into local_state.yaml by hand".into(),
            ));
        }
        // The frontmatter is a slice of the text: splice the edit in its place.
        let start = front.yaml.as_ptr() as usize - node.text.as_ptr() as usize;
        let end = start + front.yaml.len();
        node.text = format!("{}{yaml}{}", &node.text[..start], &node.text[end..]);
        changes.push(FileChange { path: node.path.clone(), moved: moved.iter().map(|f| (*f).to_owned()).collect() });
    }

    let (path, text) = &mut sources.local_state;
    let overlay_is_v1 = text.as_deref().is_some_and(|t| {
        crate::yaml::parse_mapping(path, t, 1).ok().and_then(|m| m.get("akms_schema").cloned()) == Some(FROM.into())
    });
    if moved_state.is_empty() && !overlay_is_v1 {
        return Ok(changes);
    }
    let mut overlay = match text.as_deref() {
        Some(t) => parse_mapping(path, t, 1)?,
        None => Mapping::new(),
    };
    overlay.insert("akms_schema".into(), SCHEMA_VERSION.into());
    let nodes = overlay.entry("nodes".into()).or_insert_with(|| Yaml::Mapping(Mapping::new()));
    if nodes.is_null() {
        *nodes = Yaml::Mapping(Mapping::new());
    }
    let Some(nodes) = nodes.as_mapping_mut() else {
        return Err(Diagnostic::error(
            ProblemKind::InvalidValue,
            path,
            None,
            Some("nodes"),
            "expected a mapping of node ids".into(),
        ));
    };
    // New entries in id order after the existing ones, whose order (a human's,
    // perhaps) stays: a migration's diff only adds lines (NFR-I05).
    moved_state.sort_by(|a, b| a.0.cmp(&b.0));
    for (id, state) in moved_state {
        let entry = nodes.entry(id.clone().into()).or_insert_with(|| Yaml::Mapping(Mapping::new()));
        let Some(entry) = entry.as_mapping_mut() else {
            return Err(Diagnostic::error(
                ProblemKind::InvalidValue,
                path,
                None,
                Some(&format!("nodes.{id}")),
                "expected a mapping of fields".into(),
            ));
        };
        for (field, value) in state {
            entry.entry(field).or_insert(value);
        }
    }
    if !overlay.contains_key("suppressed_edges") {
        overlay.insert("suppressed_edges".into(), Yaml::Sequence(Vec::new()));
    }
    let new = yaml_serde::to_string(&overlay).map_err(|e| {
        Diagnostic::error(ProblemKind::Yaml, path, None, None, format!("cannot write the overlay: {e}"))
    })?;
    parse_local_state(path, &new).map_err(|mut problems| problems.remove(0))?;
    *text = Some(new);
    changes.push(FileChange { path: path.clone(), moved: Vec::new() });
    Ok(changes)
}

/// `yaml` without the top-level keys `remove` (each with its continuation
/// lines), its `akms_schema` value replaced by the current version.
fn edit_frontmatter(yaml: &str, remove: &[&str]) -> String {
    let top_key = |line: &str| -> Option<String> {
        let first = line.chars().next()?;
        if first.is_whitespace() || matches!(first, '#' | '-') {
            return None;
        }
        Some(line.split_once(':')?.0.trim().trim_matches(['"', '\'']).to_owned())
    };
    let mut out = String::with_capacity(yaml.len());
    let mut skipping = false;
    let mut blanks = String::new();
    for line in yaml.split_inclusive('\n') {
        if line.trim().is_empty() {
            blanks.push_str(line);
            continue;
        }
        let continuation = line.starts_with([' ', '\t', '-']);
        if skipping && continuation {
            blanks.clear();
            continue;
        }
        out.push_str(&std::mem::take(&mut blanks));
        let key = top_key(line);
        skipping = key.as_deref().is_some_and(|k| remove.contains(&k));
        if skipping {
            continue;
        }
        if key.as_deref() == Some("akms_schema")
            && let Some((name, rest)) = line.split_once(':')
        {
            let value = rest.split('#').next().unwrap_or_default().trim().trim_matches(['"', '\'']);
            out.push_str(&format!("{name}:{}", rest.replacen(value, SCHEMA_VERSION, 1)));
            continue;
        }
        out.push_str(line);
    }
    out.push_str(&blanks);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_NODE: &str = "---\n# identity\nid: epsilon\ntitle: \"Epsilon\"\ndomain: fft\ntags: [numerics]\nstatus: tentative\nconfidence: 0.5 # seed\nsource: agent\nactivations: 3\nlast_activated: 2025-06-01\nactivated_by_tasks:\n  - phase1-task2\nsession_refs:\n- sessions/a.md\n\nedges:\n  - to: other\n    type: requires\n    weight: 0.8\nakms_schema: v1   # stamp\n---\n## content_draft\n\nactivations: 9 in the body stays\n";

    fn sources(nodes: &[&str], overlay: Option<&str>) -> Sources {
        Sources {
            nodes: nodes
                .iter()
                .enumerate()
                .map(|(i, t)| SourceFile { path: PathBuf::from(format!("n{i}.md")), text: (*t).to_owned() })
                .collect(),
            local_state: (PathBuf::from("local_state.yaml"), overlay.map(str::to_owned)),
        }
    }

    #[test]
    fn spec_8_3_v1_experiential_fields_move_into_the_overlay_and_the_node_is_restamped() {
        let mut s = sources(&[V1_NODE], None);
        let changes = v1_to_v2(&mut s).unwrap();
        assert_eq!(changes[0].moved, ["activations", "last_activated", "activated_by_tasks", "session_refs"]);
        let expected = "---\n# identity\nid: epsilon\ntitle: \"Epsilon\"\ndomain: fft\ntags: [numerics]\nstatus: tentative\nconfidence: 0.5 # seed\nsource: agent\n\nedges:\n  - to: other\n    type: requires\n    weight: 0.8\nakms_schema: v2   # stamp\n---\n## content_draft\n\nactivations: 9 in the body stays\n";
        assert_eq!(s.nodes[0].text, expected);
        let overlay = s.local_state.1.unwrap();
        let state = parse_local_state(Path::new("local_state.yaml"), &overlay).unwrap();
        let entry = &state.nodes["epsilon"];
        assert_eq!(entry["activations"], 3);
        assert_eq!(entry["last_activated"], "2025-06-01");
        assert_eq!(entry["activated_by_tasks"], serde_json::json!(["phase1-task2"]));
        assert_eq!(entry["session_refs"], serde_json::json!(["sessions/a.md"]));
    }

    #[test]
    fn spec_3_4_migrating_twice_changes_nothing_the_second_time() {
        let mut s = sources(&[V1_NODE], Some("akms_schema: v2\nnodes:\n  other:\n    confidence: 0.4\n"));
        v1_to_v2(&mut s).unwrap();
        let once = s.clone();
        assert!(v1_to_v2(&mut s).unwrap().is_empty());
        assert_eq!(s, once);
    }

    #[test]
    fn nfr_i05_the_written_overlay_is_block_yaml_whose_diff_only_adds_lines() {
        let zeta = V1_NODE.replace("id: epsilon", "id: zeta");
        let overlay =
            "akms_schema: v2\nnodes:\n  other:\n    confidence: 0.4\n    activations: 2\nsuppressed_edges: []\n";
        let mut s = sources(&[&zeta, V1_NODE], Some(overlay));
        v1_to_v2(&mut s).unwrap();
        let written = s.local_state.1.unwrap();
        // Human-readable: block style, one field or list item per line.
        assert!(!written.contains('{') && !written.contains("[\""), "{written}");
        // Git-diffable: every line that was there is still there, in order;
        // the migrated nodes come after, sorted by id.
        let mut lines = written.lines();
        for old in overlay.lines().filter(|l| !l.starts_with("suppressed_edges")) {
            assert!(lines.any(|l| l == old), "{old:?} moved or changed in\n{written}");
        }
        let epsilon = written.find("\n  epsilon:\n").unwrap();
        let zeta = written.find("\n  zeta:\n").unwrap();
        assert!(written.find("\n  other:\n").unwrap() < epsilon && epsilon < zeta, "{written}");
        assert!(written.lines().any(|l| l.trim() == "- sessions/a.md"), "{written}");
    }

    #[test]
    fn an_overlay_value_already_there_wins_and_other_entries_stay() {
        let overlay = "akms_schema: v2\nnodes:\n  epsilon:\n    activations: 10\n  other:\n    confidence: 0.4\nsuppressed_edges: []\n";
        let mut s = sources(&[V1_NODE], Some(overlay));
        v1_to_v2(&mut s).unwrap();
        let state = parse_local_state(Path::new("l.yaml"), s.local_state.1.as_deref().unwrap()).unwrap();
        assert_eq!(state.nodes["epsilon"]["activations"], 10);
        assert_eq!(state.nodes["epsilon"]["last_activated"], "2025-06-01");
        assert_eq!(state.nodes["other"]["confidence"], 0.4);
    }

    #[test]
    fn v2_nodes_and_content_files_are_left_and_v1_nodes_without_experience_only_restamped() {
        let v2 = V1_NODE.replace("akms_schema: v1", "akms_schema: v2");
        let bare = "---\nid: a\nakms_schema: \"v1\"\n---\nbody\n";
        let content = "# Notes\n\nactivations: 3\n";
        let mut s = sources(&[&v2, bare, content], None);
        let changes = v1_to_v2(&mut s).unwrap();
        assert_eq!(changes, [FileChange { path: "n1.md".into(), moved: vec![] }]);
        assert_eq!(s.nodes[0].text, v2, "local v2 nodes may carry experiential fields (4.1.4)");
        assert_eq!(s.nodes[1].text, "---\nid: a\nakms_schema: \"v2\"\n---\nbody\n");
        assert_eq!(s.nodes[2].text, content, "a file without frontmatter is content");
        assert_eq!(s.local_state.1, None);
    }

    #[test]
    fn malformed_yaml_names_the_file_and_aborts() {
        let mut s = sources(&[V1_NODE, "---\nid: [a\n---\n"], None);
        let error = v1_to_v2(&mut s).unwrap_err();
        assert!(error.to_string().starts_with("n1.md:"), "{error}");
        let missing_id = V1_NODE.replace("id: epsilon\n", "");
        let error = v1_to_v2(&mut sources(&[&missing_id], None)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "n0.md: id: a v1 node with experiential fields needs an id to key them in local_state.yaml"
        );
    }

    #[test]
    fn the_registry_is_ordered_and_chains() {
        for pair in MIGRATIONS.windows(2) {
            assert_eq!(pair[0].to, pair[1].from);
        }
        assert_eq!(MIGRATIONS.last().unwrap().to, SCHEMA_VERSION);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_among_the_nodes_stops_the_plan_without_hanging() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().join("repo"), dir.path().join("global"));
        std::fs::create_dir_all(layout.local_nodes()).unwrap();
        std::fs::write(layout.local_nodes().join("a.md"), V1_NODE).unwrap();
        crate::bounded::tests::mkfifo(&layout.local_nodes().join("x.md"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(plan(&layout).map(|_| ()).map_err(|e| e.to_string())).unwrap());
        let error = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("no hang").unwrap_err();
        assert_eq!(error, "knowledge/local-nodes/x.md: is a FIFO (named pipe), not a regular file; it was not read");
    }
}
