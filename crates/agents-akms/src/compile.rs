//! The graph compiler (spec 5.2): the five-step merge of the global vault,
//! local nodes, code-mirror nodes and the local overlay into
//! `knowledge/graph/graph.json`, NetworkX node-link JSON.
//!
//! 1. global nodes (`node_origin: global`), sorted by id;
//! 2. local nodes, sorted by id; a local node with a global node's id is
//!    skipped with an id-collision warning (global wins, FR-O03);
//! 3. code-mirror nodes (`node_origin: code-mirror`), a step of their own;
//! 4. the overlay: node overrides (orphans are warnings), repo-local edges
//!    appended (structural edges are never removed or changed, FR-O05), and
//!    session nodes materialised (`domain: session`, `auto_update: true`);
//! 5. serialisation with sorted keys and a two-space indent.
//!
//! Edges are checked on the merged node set: a target must exist, and a
//! `pitfall` edge must point at a session node (FR-G11). Any error stops the
//! build before anything is written, so `graph.json` stays as it was.
//!
//! The output is a function of the sources only: no timestamp (the spec's
//! `generated_at` would break byte-identical rebuilds, NFR-D06), nodes in step
//! order and by id, links by (source, target), keys sorted.

use crate::graph::CompiledGraph;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value as Json, json};

use crate::bounded::{self, Cap, MAX_CONFIG_BYTES, MAX_OVERLAY_BYTES, MAX_SESSION_BYTES, ReadError};
use crate::config::{LimitsConfig, PropagationConfig, parse_config};
use crate::diag::{self, AkmsError, Diagnostic, ProblemKind};
use crate::overlay::{LocalState, parse_local_state};
use crate::schema::{Edge, EdgeType, Layer, Node, parse_node};
use crate::vault::{Layout, confine, confine_lexically, escape_diagnostic, markdown_files};
use crate::yaml::{SCHEMA_VERSION, sorted};

/// What the caller says about the build besides the layout.
#[derive(Debug, Clone, Default)]
pub struct CompileOptions {
    /// How the global vault is named in `graph.json` (as configured, e.g.
    /// `~/.claude/akms/nodes`, so the file does not depend on the machine).
    pub global_vault_display: String,
}

/// A compiled graph: the JSON text and what went into it.
#[derive(Debug, Clone, Serialize)]
pub struct Compiled {
    #[serde(skip)]
    pub json: String,
    /// The same graph, typed.
    #[serde(skip)]
    pub graph: CompiledGraph,
    pub node_count: usize,
    pub edge_count: usize,
    /// Nodes by origin: `global`, `local`, `code-mirror`, `session`.
    pub nodes_by_origin: BTreeMap<String, usize>,
    pub global_vault_found: bool,
    /// Warnings (errors stop compilation).
    pub warnings: Vec<Diagnostic>,
    /// The file each node was read from (as shown in messages: relative to
    /// the repository when inside it); session nodes are left out.
    #[serde(skip)]
    pub files: BTreeMap<String, PathBuf>,
}

/// A node of the merged graph with the file it came from.
struct Merged {
    node: Node,
    file: PathBuf,
    session: bool,
}

/// An edge of the merged graph and where it was declared.
struct Link {
    source: String,
    edge: Edge,
    origin: &'static str,
    file: PathBuf,
    from_overlay: bool,
}

/// Compiles the sources of `layout` without writing anything.
pub fn compile(layout: &Layout, options: &CompileOptions) -> Result<Compiled, AkmsError> {
    let (compiled, diagnostics) = run(layout, options);
    if let Some(error) = AkmsError::from_diagnostics(&diagnostics) {
        return Err(error);
    }
    Ok(compiled.expect("a compilation without errors has a result"))
}

/// Compiles and writes `knowledge/graph/graph.json` atomically; on any error
/// the previous file is left untouched.
pub fn build(layout: &Layout, options: &CompileOptions) -> Result<Compiled, AkmsError> {
    let compiled = compile(layout, options)?;
    let path = layout.graph_json();
    agents_fs::atomic_write(&path, compiled.json.as_bytes()).map_err(|source| AkmsError::Io { path, source })?;
    Ok(compiled)
}

/// Every problem of the whole tree (sources, overlay, config), sorted.
pub fn check(layout: &Layout, options: &CompileOptions) -> Vec<Diagnostic> {
    run(layout, options).1
}

/// The cap of `propagation_config.yaml`.
const CONFIG_CAP: Cap = Cap::new(MAX_CONFIG_BYTES, "a fixed limit for propagation_config.yaml");
/// The cap of `local_state.yaml`.
pub(crate) const OVERLAY_CAP: Cap = Cap::new(MAX_OVERLAY_BYTES, "a fixed limit for local_state.yaml");
/// The cap of an AgentMemory or PCD.
pub(crate) const SESSION_CAP: Cap = Cap::new(MAX_SESSION_BYTES, "a fixed limit for session files");

/// The repository's `propagation_config.yaml`, or the defaults without one.
pub fn read_config(layout: &Layout) -> Result<PropagationConfig, Vec<Diagnostic>> {
    let path = layout.propagation_config();
    let shown = layout.display(&path);
    match bounded::read_optional(&path, Some(&layout.knowledge()), CONFIG_CAP) {
        Ok(Some(text)) => parse_config(&shown, &text),
        Ok(None) => Ok(PropagationConfig::default()),
        Err(e) => Err(vec![e.diagnostic(&shown, None, None)]),
    }
}

/// The size caps of the repository's config (the defaults when it does not
/// parse: its problems are reported where it is read).
fn limits(layout: &Layout) -> LimitsConfig {
    read_config(layout).map(|config| config.limits).unwrap_or_default()
}

/// Validates the given files and directories one by one, each by where it
/// lies: under `local-nodes/` a local node, under `code-mirror/` a mirror
/// node, under `sessions/` an AgentMemory or PCD, `local_state.yaml` and
/// `propagation_config.yaml` by name, any other `.md` a global node. Cross-file checks need the whole tree ([`check`]).
pub fn check_paths(layout: &Layout, paths: &[PathBuf]) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let mut files = Vec::new();
    let limits = limits(layout);
    // Markdown found in a folder without frontmatter is content, not a node;
    // a file named on its own must be a node. The overlay and config found
    // in a folder are read only inside it (the walk confines the Markdown).
    let mut walked = BTreeSet::new();
    let mut found_in: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    for path in paths {
        if path.is_dir() {
            let (found, problems) = markdown_files(path);
            walked.extend(found.iter().cloned());
            files.extend(found);
            diagnostics.extend(problems.into_iter().map(|mut d| {
                d.file = layout.display(&d.file);
                d
            }));
            for name in ["local_state.yaml", "propagation_config.yaml"] {
                for candidate in [path.join(name), path.join("graph").join(name)] {
                    if std::fs::symlink_metadata(&candidate).is_ok() {
                        found_in.insert(candidate.clone(), path.clone());
                        files.push(candidate);
                    }
                }
            }
        } else {
            files.push(path.clone());
        }
    }
    files.sort();
    files.dedup();
    let (local, mirror) = (absolute(&layout.local_nodes()), absolute(&layout.code_mirror()));
    let sessions = absolute(&layout.knowledge().join("sessions"));
    for file in files {
        let shown = layout.display(&file);
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let cap = match name {
            "local_state.yaml" => OVERLAY_CAP,
            "propagation_config.yaml" => CONFIG_CAP,
            _ if absolute(&file).starts_with(&sessions) => SESSION_CAP,
            _ => limits.node_cap(),
        };
        let read = if walked.contains(&file) {
            read_node_file(&file, cap)
        } else {
            bounded::read_text(&file, found_in.get(&file).map(PathBuf::as_path), cap).map(Some)
        };
        let text = match read {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(e) => {
                diagnostics.push(e.diagnostic(&shown, None, None));
                continue;
            }
        };
        let problems = match name {
            "local_state.yaml" => parse_local_state(&shown, &text).err().unwrap_or_default(),
            "propagation_config.yaml" => parse_config(&shown, &text).err().unwrap_or_default(),
            _ if absolute(&file).starts_with(&sessions) => {
                crate::evidence::parse_evidence_with(&shown, &text, &limits).err().unwrap_or_default()
            }
            _ => {
                let full = absolute(&file);
                let layer = if full.starts_with(&local) {
                    Layer::Local
                } else if full.starts_with(&mirror) {
                    Layer::CodeMirror
                } else {
                    Layer::Global
                };
                parse_node(&shown, &text, layer).1
            }
        };
        diagnostics.extend(problems);
    }
    diag::sort(&mut diagnostics);
    diagnostics
}

/// The text of a Markdown file found by [`markdown_files`] (which keeps it
/// inside its layer), when it is a node: `None` for content, a file without
/// frontmatter (a `content_ref` target), whatever its size; an error for a
/// node over `cap` or a file that is not regular.
fn read_node_file(file: &Path, cap: Cap) -> Result<Option<String>, ReadError> {
    match bounded::read_text(file, None, cap) {
        Ok(text) if crate::yaml::split_frontmatter(&text).is_none() => Ok(None),
        Ok(text) => Ok(Some(text)),
        Err(ReadError::TooLarge { .. }) if !starts_with_frontmatter(file) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether the file at `path` opens with a frontmatter line, from its first
/// bytes (an oversized file is not read whole to tell).
fn starts_with_frontmatter(path: &Path) -> bool {
    bounded::read_prefix(path, None, 8).is_ok_and(|head| {
        let head = head.strip_prefix("\u{feff}".as_bytes()).unwrap_or(&head);
        head.starts_with(b"---\n") || head.starts_with(b"---\r\n") || head.starts_with(b"--- ")
    })
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Loads one layer: its nodes sorted by id, duplicate ids reported. A file
/// is read only when it is a regular file within its cap (the walk keeps it
/// inside `root`).
fn load_layer(
    layout: &Layout,
    root: &Path,
    layer: Layer,
    cap: Cap,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(Node, PathBuf)> {
    let (files, problems) = markdown_files(root);
    diagnostics.extend(problems.into_iter().map(|mut d| {
        d.file = layout.display(&d.file);
        d
    }));
    let mut nodes: Vec<(Node, PathBuf)> = Vec::new();
    for file in files {
        let shown = layout.display(&file);
        match read_node_file(&file, cap) {
            Ok(None) => tracing::debug!(file = %shown.display(), "no frontmatter: not a node"),
            Ok(Some(text)) => {
                let (node, problems) = parse_node(&shown, &text, layer);
                diagnostics.extend(problems);
                nodes.extend(node.map(|n| (n, shown)));
            }
            Err(e) => diagnostics.push(e.diagnostic(&shown, None, None)),
        }
    }
    nodes.sort_by(|a, b| (&a.0.id, &a.1).cmp(&(&b.0.id, &b.1)));
    let mut unique: Vec<(Node, PathBuf)> = Vec::with_capacity(nodes.len());
    for (node, file) in nodes {
        if let Some((_, first)) = unique.last().filter(|(n, _)| n.id == node.id) {
            diagnostics.push(Diagnostic::error(
                ProblemKind::DuplicateId,
                &file,
                node.id_line,
                Some("id"),
                format!("`{}` is already the id of {} in the {} layer", node.id, first.display(), layer.as_str()),
            ));
        } else {
            unique.push((node, file));
        }
    }
    unique
}

/// The parsed node files of a repository (steps 1 to 3 before merging), so a
/// caller that changes a few files (the graph update) compiles again without
/// parsing every node twice. Compiling from `Sources` gives the same bytes
/// as compiling from disk when they hold the same texts.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Problems of the config and of the node files.
    diagnostics: Vec<Diagnostic>,
    global: Vec<(Node, PathBuf)>,
    local: Vec<(Node, PathBuf)>,
    mirror: Vec<(Node, PathBuf)>,
    global_vault_found: bool,
    /// The config's size caps (the defaults when it has problems).
    limits: LimitsConfig,
}

impl Sources {
    /// Reads and parses the config and every node file of the three layers.
    pub fn load(layout: &Layout) -> Sources {
        let mut diagnostics = Vec::new();
        // The config is a schema file too: a bad one stops the build.
        let limits = match read_config(layout) {
            Ok(config) => config.limits,
            Err(problems) => {
                diagnostics.extend(problems);
                LimitsConfig::default()
            }
        };
        let cap = limits.node_cap();
        let global = load_layer(layout, &layout.global_vault, Layer::Global, cap, &mut diagnostics);
        let local = load_layer(layout, &layout.local_nodes(), Layer::Local, cap, &mut diagnostics);
        let mirror = load_layer(layout, &layout.code_mirror(), Layer::CodeMirror, cap, &mut diagnostics);
        Sources { diagnostics, global, local, mirror, global_vault_found: layout.global_vault.is_dir(), limits }
    }

    /// Puts the local node file `path` with `text` in place of the one read
    /// from there (or adds it), parsed as `load` would have.
    pub fn set_local(&mut self, layout: &Layout, path: &Path, text: &str) {
        let shown = layout.display(path);
        self.local.retain(|(_, file)| file != &shown);
        let (node, problems) = parse_node(&shown, text, Layer::Local);
        self.diagnostics.extend(problems);
        if let Some(node) = node {
            if let Some((_, first)) = self.local.iter().find(|(n, _)| n.id == node.id) {
                self.diagnostics.push(Diagnostic::error(
                    ProblemKind::DuplicateId,
                    &shown,
                    node.id_line,
                    Some("id"),
                    format!("`{}` is already the id of {} in the local layer", node.id, first.display()),
                ));
                return;
            }
            self.local.push((node, shown));
            self.local.sort_by(|a, b| (&a.0.id, &a.1).cmp(&(&b.0.id, &b.1)));
        }
    }

    /// Compiles these sources with the overlay `state` (steps 4 and 5).
    pub fn compile(
        &self,
        layout: &Layout,
        options: &CompileOptions,
        state: &LocalState,
    ) -> Result<Compiled, AkmsError> {
        let (compiled, diagnostics) = merge(layout, options, self, state.clone(), Vec::new());
        if let Some(error) = AkmsError::from_diagnostics(&diagnostics) {
            return Err(error);
        }
        Ok(compiled.expect("a compilation without errors has a result"))
    }
}

/// The overlay as the compiler reads it: a missing file is an empty overlay;
/// problems are returned with the default state.
pub fn read_local_state(layout: &Layout) -> (LocalState, Vec<Diagnostic>) {
    let state_path = layout.local_state();
    let state_file = layout.display(&state_path);
    match bounded::read_optional(&state_path, Some(&layout.knowledge()), OVERLAY_CAP) {
        Ok(Some(text)) => match parse_local_state(&state_file, &text) {
            Ok(state) => (state, Vec::new()),
            Err(problems) => (LocalState::default(), problems),
        },
        Ok(None) => (LocalState::default(), Vec::new()),
        Err(e) => (LocalState::default(), vec![e.diagnostic(&state_file, None, None)]),
    }
}

/// The five steps; returns the compiled graph when there is no error, and
/// every diagnostic.
fn run(layout: &Layout, options: &CompileOptions) -> (Option<Compiled>, Vec<Diagnostic>) {
    let sources = Sources::load(layout);
    let (state, problems) = read_local_state(layout);
    merge(layout, options, &sources, state, problems)
}

/// Steps 1 to 3 over parsed sources (collisions, confinement), then the
/// overlay (4) and serialisation (5).
fn merge(
    layout: &Layout,
    options: &CompileOptions,
    sources: &Sources,
    state: LocalState,
    state_problems: Vec<Diagnostic>,
) -> (Option<Compiled>, Vec<Diagnostic>) {
    let mut diagnostics = sources.diagnostics.clone();
    diagnostics.extend(state_problems);
    let knowledge = layout.knowledge();
    let mut merged: BTreeMap<String, usize> = BTreeMap::new();
    let mut order: Vec<Merged> = Vec::new();

    // 1. Global nodes.
    let global_vault_found = sources.global_vault_found;
    for (node, file) in sources.global.iter().cloned() {
        push(&mut merged, &mut order, node, file, false);
    }
    // 2. Local nodes; global wins a collision.
    for (node, file) in sources.local.iter().cloned() {
        if let Some(&at) = merged.get(&node.id) {
            diagnostics.push(Diagnostic::warning(
                ProblemKind::IdCollision,
                &file,
                node.id_line,
                Some("id"),
                format!(
                    "`{}` is also a global node ({}); the global node wins and this one is skipped",
                    node.id,
                    order[at].file.display()
                ),
            ));
            continue;
        }
        push(&mut merged, &mut order, node, file, false);
    }
    // 3. Code-mirror nodes.
    for (node, file) in sources.mirror.iter().cloned() {
        if let Some(&at) = merged.get(&node.id) {
            diagnostics.push(Diagnostic::error(
                ProblemKind::DuplicateId,
                &file,
                node.id_line,
                Some("id"),
                format!("`{}` is already the id of {}", node.id, order[at].file.display()),
            ));
            continue;
        }
        push(&mut merged, &mut order, node, file, false);
    }
    // Paths read from nodes stay in their layer's root.
    for m in &order {
        let root = if m.node.layer == Layer::Global { &layout.global_vault } else { &knowledge };
        if let Some(content_ref) = &m.node.content_ref {
            let line = m.node.field_lines.get("content_ref").copied();
            let cap = sources.limits.content_ref_cap();
            check_content_ref(&m.file, line, "content_ref", content_ref, root, cap, &mut diagnostics);
        }
        if let Some(source_file) = &m.node.source_file
            && let Err(e) = confine_lexically(source_file)
        {
            let line = m.node.field_lines.get("source_file").copied();
            diagnostics.push(escape_diagnostic(&m.file, line, "source_file", source_file, &layout.repo_root, &e));
        }
    }

    // 4. The overlay.
    let state_file = layout.display(&layout.local_state());
    let nodes_line = state.lines.get("nodes").copied();
    for (id, overrides) in &state.nodes {
        let field = format!("nodes.{id}");
        let Some(&at) = merged.get(id) else {
            diagnostics.push(Diagnostic::warning(
                ProblemKind::OrphanedOverlay,
                &state_file,
                nodes_line,
                Some(&field),
                format!("orphaned overlay entry: no source has a node `{id}`"),
            ));
            continue;
        };
        if let Some(Json::Array(refs)) = overrides.get("session_refs") {
            for (i, r) in refs.iter().enumerate() {
                if let Some(r) = r.as_str()
                    && let Err(e) = confine_lexically(r)
                {
                    diagnostics.push(escape_diagnostic(
                        &state_file,
                        nodes_line,
                        &format!("{field}.session_refs[{i}]"),
                        r,
                        &knowledge,
                        &e,
                    ));
                }
            }
        }
        let node = &mut order[at].node;
        for (key, value) in overrides {
            if key == "confidence" && node.layer == Layer::CodeMirror {
                diagnostics.push(Diagnostic::warning(
                    ProblemKind::InvalidValue,
                    &state_file,
                    nodes_line,
                    Some(&format!("{field}.confidence")),
                    "a code-mirror node keeps confidence 1.0; the override is ignored".into(),
                ));
                continue;
            }
            node.attributes.insert(key.clone(), value.clone());
        }
    }
    let sessions_line = state.lines.get("session_nodes").copied();
    for (id, session) in &state.session_nodes {
        let field = format!("session_nodes.{id}");
        if let Some(&at) = merged.get(id) {
            diagnostics.push(Diagnostic::error(
                ProblemKind::DuplicateId,
                &state_file,
                sessions_line,
                Some(&field),
                format!("`{id}` is already the id of {}", order[at].file.display()),
            ));
            continue;
        }
        check_content_ref(
            &state_file,
            sessions_line,
            &format!("{field}.content_ref"),
            &session.content_ref,
            &knowledge,
            sources.limits.content_ref_cap(),
            &mut diagnostics,
        );
        let attributes: BTreeMap<String, Json> = [
            ("akms_schema", json!(SCHEMA_VERSION)),
            ("auto_update", json!(true)),
            ("confidence", json!(1.0)),
            ("content_ref", json!(session.content_ref)),
            ("domain", json!("session")),
            ("outcome", json!(session.outcome)),
            ("phase", json!(session.phase)),
            // Session records come from agents' AgentMemory files.
            ("source", json!("agent")),
            ("status", json!("established")),
            ("tags", json!(session.tags)),
            ("title", json!(session.title)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let node = Node {
            id: id.clone(),
            layer: Layer::Local,
            domain: "session".into(),
            confidence: 1.0,
            edges: Vec::new(),
            content_ref: Some(session.content_ref.clone()),
            source_file: None,
            attributes,
            id_line: sessions_line,
            field_lines: BTreeMap::new(),
        };
        push(&mut merged, &mut order, node, state_file.clone(), true);
    }

    // Edges: structural ones first, then the overlay's, appended.
    let mut links: Vec<Link> = Vec::new();
    for m in &order {
        let origin = if m.node.layer == Layer::Global { "global" } else { "local" };
        for edge in &m.node.edges {
            links.push(Link {
                source: m.node.id.clone(),
                edge: edge.clone(),
                origin,
                file: m.file.clone(),
                from_overlay: false,
            });
        }
    }
    // Without global nodes (a missing or empty vault, NFR-R04) an edge to
    // one cannot resolve: the repository still builds from its local
    // sources, the edge skipped with a warning.
    let no_global = sources.global.is_empty();
    let cold = |id: &str| {
        if no_global {
            format!(
                "no node has the id `{id}` (no global nodes: the global vault {} is missing or empty)",
                layout.global_vault.display()
            )
        } else {
            format!("no node has the id `{id}`")
        }
    };
    for (from, edge) in &state.local_edges {
        // An overlay edge naming a node no source has is orphaned, like an
        // orphaned node entry: a warning, never fatal (spec 4.2).
        let missing = [(from, "from"), (&edge.to, "to")].into_iter().find(|(id, _)| !merged.contains_key(*id));
        if let Some((id, end)) = missing {
            diagnostics.push(Diagnostic::warning(
                ProblemKind::OrphanedOverlay,
                &state_file,
                edge.line,
                Some(&format!("{}.{end}", edge.field)),
                format!("orphaned overlay edge `{from}` -> `{}`: {}; the edge is skipped", edge.to, cold(id)),
            ));
            continue;
        }
        links.push(Link {
            source: from.clone(),
            edge: edge.clone(),
            origin: "local",
            file: state_file.clone(),
            from_overlay: true,
        });
    }
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut kept: Vec<Link> = Vec::new();
    for link in links {
        let field = format!("{}.to", link.edge.field);
        let Some(&target) = merged.get(&link.edge.to) else {
            if no_global && link.origin == "local" {
                diagnostics.push(Diagnostic::warning(
                    ProblemKind::UnknownEdgeTarget,
                    &link.file,
                    link.edge.line,
                    Some(&field),
                    format!("edge `{}` -> `{}` skipped: {}", link.source, link.edge.to, cold(&link.edge.to)),
                ));
            } else {
                diagnostics.push(Diagnostic::error(
                    ProblemKind::UnknownEdgeTarget,
                    &link.file,
                    link.edge.line,
                    Some(&field),
                    format!("no node has the id `{}`", link.edge.to),
                ));
            }
            continue;
        };
        if link.edge.kind == EdgeType::Pitfall && !order[target].session {
            diagnostics.push(Diagnostic::error(
                ProblemKind::PitfallTarget,
                &link.file,
                link.edge.line,
                Some(&field),
                format!("a pitfall edge must point at a session node (domain: session); `{}` is not one", link.edge.to),
            ));
            continue;
        }
        if !seen.insert((link.source.clone(), link.edge.to.clone())) {
            let message = format!("`{}` already has an edge to `{}`", link.source, link.edge.to);
            if link.from_overlay {
                diagnostics.push(Diagnostic::warning(
                    ProblemKind::DuplicateEdge,
                    &link.file,
                    link.edge.line,
                    Some(&field),
                    format!("{message}; the local edge is skipped (existing edges are never changed)"),
                ));
            } else {
                diagnostics.push(Diagnostic::error(
                    ProblemKind::DuplicateEdge,
                    &link.file,
                    link.edge.line,
                    Some(&field),
                    message,
                ));
            }
            continue;
        }
        kept.push(link);
    }

    diag::sort(&mut diagnostics);
    if diagnostics.iter().any(Diagnostic::is_error) {
        return (None, diagnostics);
    }

    // 5. Serialise.
    let mut nodes_by_origin: BTreeMap<String, usize> = BTreeMap::new();
    let nodes: Vec<Json> = order
        .iter()
        .map(|m| {
            let origin = if m.session { "session" } else { m.node.layer.as_str() };
            *nodes_by_origin.entry(origin.to_owned()).or_default() += 1;
            let mut attributes = m.node.attributes.clone();
            attributes.insert("id".into(), json!(m.node.id));
            attributes.insert("node_origin".into(), json!(m.node.layer.as_str()));
            attributes.insert("confidence_default".into(), json!(m.node.confidence));
            if m.node.layer == Layer::CodeMirror {
                attributes.insert("auto_update".into(), json!(true));
            }
            Json::Object(attributes.into_iter().collect())
        })
        .collect();
    kept.sort_by(|a, b| (&a.source, &a.edge.to).cmp(&(&b.source, &b.edge.to)));
    let links: Vec<Json> = kept
        .iter()
        .map(|l| {
            let mut edge = json!({
                "source": l.source,
                "target": l.edge.to,
                "type": l.edge.kind.as_str(),
                "weight": l.edge.weight,
                "edge_origin": l.origin,
            });
            if let Some(note) = &l.edge.note {
                edge["note"] = json!(note);
            }
            edge
        })
        .collect();
    let graph = json!({
        "directed": true,
        "multigraph": false,
        "graph": {
            "akms_schema": SCHEMA_VERSION,
            "node_count": nodes.len(),
            "edge_count": links.len(),
            "global_vault": options.global_vault_display,
            "repo_id": state.repo_id,
        },
        "nodes": nodes,
        "links": links,
    });
    let graph = sorted(graph);
    let mut text = serde_json::to_string_pretty(&graph).expect("json values serialise");
    text.push('\n');
    // Every node above has a string id and every link string ends: the
    // shape `from_value` checks.
    let graph =
        CompiledGraph::from_value(graph).expect("the compiler writes a well-formed graph").with_version_of(&text);
    let warnings = diagnostics.clone();
    let files = order.iter().filter(|m| !m.session).map(|m| (m.node.id.clone(), m.file.clone())).collect();
    let compiled = Compiled {
        json: text,
        graph,
        node_count: order.len(),
        edge_count: kept.len(),
        nodes_by_origin,
        global_vault_found,
        warnings,
        files,
    };
    (Some(compiled), diagnostics)
}

fn push(merged: &mut BTreeMap<String, usize>, order: &mut Vec<Merged>, node: Node, file: PathBuf, session: bool) {
    merged.insert(node.id.clone(), order.len());
    order.push(Merged { node, file, session });
}

/// A `content_ref` must stay in `root` and name a regular file within `cap`
/// (checked from its metadata: nothing is read); a missing target is a
/// warning (NFR-R02).
fn check_content_ref(
    file: &Path,
    line: Option<usize>,
    field: &str,
    content_ref: &str,
    root: &Path,
    cap: Cap,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match confine(root, content_ref) {
        Ok(Some(path)) => {
            if let Err(e) = bounded::check_metadata(&path, cap) {
                let message = format!("`{content_ref}` {e}");
                diagnostics.push(Diagnostic::error(e.kind(), file, line, Some(field), message));
            }
        }
        Ok(None) => diagnostics.push(Diagnostic::warning(
            ProblemKind::MissingContentRef,
            file,
            line,
            Some(field),
            format!("`{content_ref}` does not exist under {}", root.display()),
        )),
        Err(e) => diagnostics.push(escape_diagnostic(file, line, field, content_ref, root, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden");

    /// A copy of the golden fixture in a temporary directory: `(dir, layout)`.
    fn fixture() -> (tempfile::TempDir, Layout) {
        let dir = tempfile::tempdir().unwrap();
        copy_tree(Path::new(FIXTURE), dir.path());
        let layout = Layout::new(dir.path().join("repo"), dir.path().join("global"));
        (dir, layout)
    }

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_tree(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    fn options() -> CompileOptions {
        CompileOptions { global_vault_display: "~/.claude/akms/nodes".into() }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The error lines of a failed build of `layout`.
    fn build_errors(layout: &Layout) -> Vec<String> {
        match compile(layout, &options()) {
            Ok(_) => panic!("expected errors"),
            Err(AkmsError::Invalid { problems }) => problems.iter().map(ToString::to_string).collect(),
            Err(other) => vec![other.to_string()],
        }
    }

    #[test]
    fn golden_fixture_compiles_to_the_committed_graph() {
        let (_dir, layout) = fixture();
        let compiled = compile(&layout, &options()).unwrap();
        let expected_path = Path::new(FIXTURE).join("expected-graph.json");
        if std::env::var_os("AKMS_BLESS").is_some() {
            std::fs::write(&expected_path, &compiled.json).unwrap();
        }
        let expected = std::fs::read_to_string(expected_path).unwrap();
        assert_eq!(compiled.json, expected, "set AKMS_BLESS=1 to rewrite the expected graph after a deliberate change");
        let warnings: Vec<String> = compiled.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(warnings.len(), 3, "{warnings:#?}");
    }

    #[test]
    fn nfr_i06_every_node_and_edge_records_its_origin() {
        let (_dir, layout) = fixture();
        let graph: Json = serde_json::from_str(&compile(&layout, &options()).unwrap().json).unwrap();
        for node in graph["nodes"].as_array().unwrap() {
            assert!(["global", "local", "code-mirror"].contains(&node["node_origin"].as_str().unwrap()), "{node}");
            assert!(node["confidence_default"].is_f64(), "{node}");
        }
        for link in graph["links"].as_array().unwrap() {
            assert!(["global", "local"].contains(&link["edge_origin"].as_str().unwrap()), "{link}");
        }
        let ls = graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "lippmann-schwinger").unwrap();
        assert_eq!((ls["confidence"].as_f64(), ls["confidence_default"].as_f64()), (Some(0.85), Some(0.9)));
        assert_eq!(ls["activations"], 7);
    }

    #[test]
    fn nfr_i04_ur_05_provenance_is_recorded_and_ur_02_incomplete_nodes_are_citizens() {
        let (_dir, layout) = fixture();
        let graph: Json = serde_json::from_str(&compile(&layout, &options()).unwrap().json).unwrap();
        let nodes = graph["nodes"].as_array().unwrap();
        for node in nodes {
            assert!(["human", "agent", "hybrid", "generated"].contains(&node["source"].as_str().unwrap()), "{node}");
        }
        let status = |id: &str| nodes.iter().find(|n| n["id"] == id).unwrap()["status"].clone();
        assert_eq!(status("solver-notes"), "draft");
        assert_eq!(status("green-operator"), "tentative");
    }

    #[test]
    fn nfr_d06_identical_sources_give_byte_identical_output_in_any_file_order() {
        let (dir, layout) = fixture();
        let first = build(&layout, &options()).unwrap().json;
        let second = build(&layout, &options()).unwrap().json;
        assert_eq!(first, second);
        assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), first);
        // The same sources under other file names and folders.
        let global = dir.path().join("global");
        std::fs::rename(global.join("green-operator.md"), global.join("a-first.md")).unwrap();
        std::fs::create_dir_all(global.join("zz")).unwrap();
        std::fs::rename(global.join("fft-galerkin-basics.md"), global.join("zz/0.md")).unwrap();
        let local = layout.local_nodes();
        std::fs::rename(local.join("repo-conventions.md"), local.join("0-conventions.md")).unwrap();
        assert_eq!(compile(&layout, &options()).unwrap().json, first);
    }

    #[test]
    fn nfr_r04_ur_01_missing_or_empty_global_vault_builds_from_local_sources() {
        let (dir, mut layout) = fixture();
        // Drop the overlay and the local edges into the global layer.
        std::fs::remove_file(layout.local_state()).unwrap();
        std::fs::remove_file(layout.local_nodes().join("epsilon-regularisation.md")).unwrap();
        for vault in [dir.path().join("missing"), dir.path().join("empty")] {
            std::fs::create_dir_all(dir.path().join("empty")).unwrap();
            layout.global_vault = vault;
            let compiled = build(&layout, &options()).unwrap();
            assert_eq!(compiled.nodes_by_origin.get("global"), None);
            assert_eq!(compiled.node_count, 3);
        }
        // No knowledge at all: an empty graph, not an error.
        let bare = Layout::new(dir.path().join("bare"), dir.path().join("missing"));
        assert_eq!(compile(&bare, &options()).unwrap().node_count, 0);
    }

    /// Issue 18 item 3: with the global vault missing, a repository whose
    /// overlay and local nodes have edges to global nodes still builds; the
    /// edges are skipped with warnings naming them.
    #[test]
    fn item_3_nfr_r04_edges_to_missing_global_nodes_are_skipped_with_a_warning() {
        let (dir, mut layout) = fixture();
        layout.global_vault = dir.path().join("missing");
        let compiled = compile(&layout, &options()).unwrap();
        let graph: Json = serde_json::from_str(&compiled.json).unwrap();
        assert!(graph["links"].as_array().unwrap().iter().all(|l| {
            let ids: Vec<&str> = graph["nodes"].as_array().unwrap().iter().filter_map(|n| n["id"].as_str()).collect();
            ids.contains(&l["source"].as_str().unwrap()) && ids.contains(&l["target"].as_str().unwrap())
        }));
        let skipped: Vec<String> = compiled
            .warnings
            .iter()
            .filter(|w| w.message.contains("skipped") && w.message.contains("missing or empty"))
            .map(ToString::to_string)
            .collect();
        assert!(
            skipped.iter().any(|w| w.contains("local_state.yaml") && w.contains("orphaned overlay edge")),
            "{skipped:#?}"
        );
        assert!(skipped.iter().any(|w| w.contains("epsilon-regularisation.md")), "{skipped:#?}");
        // With the vault present, an overlay edge to an unknown node is
        // orphaned too (a warning), but a node's edge to one is an error.
        let (_dir, layout) = fixture();
        let state = std::fs::read_to_string(layout.local_state()).unwrap();
        write(
            &layout.local_state(),
            &state.replace(
                "local_edges:\n",
                "local_edges:\n  - {from: green-operator, to: gone, type: requires, weight: 0.5}\n",
            ),
        );
        let compiled = compile(&layout, &options()).unwrap();
        let orphan = compiled.warnings.iter().find(|w| w.message.contains("`gone`")).unwrap();
        assert_eq!(orphan.kind, ProblemKind::OrphanedOverlay);
        assert_eq!(
            orphan.message,
            "orphaned overlay edge `green-operator` -> `gone`: no node has the id `gone`; the edge is skipped"
        );
    }

    #[test]
    fn nfr_r02_missing_content_ref_is_a_warning() {
        let (_dir, layout) = fixture();
        let compiled = compile(&layout, &options()).unwrap();
        let warning = compiled.warnings.iter().find(|w| w.kind == ProblemKind::MissingContentRef).unwrap();
        assert_eq!(warning.field.as_deref(), Some("content_ref"));
        assert!(warning.file.ends_with("local-nodes/epsilon-regularisation.md"));
    }

    #[test]
    fn fr_o03_global_wins_an_id_collision_and_it_is_flagged() {
        let (_dir, layout) = fixture();
        let compiled = compile(&layout, &options()).unwrap();
        let graph: Json = serde_json::from_str(&compiled.json).unwrap();
        let notes = graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == "solver-notes").unwrap();
        assert_eq!(notes["node_origin"], "global");
        assert_eq!(notes["title"], "Solver Notes (global)");
        let collision = compiled.warnings.iter().find(|w| w.kind == ProblemKind::IdCollision).unwrap();
        assert!(collision.file.ends_with("local-nodes/solver-notes.md"));
    }

    #[test]
    fn fr_o05_local_edges_are_appended_and_never_replace_existing_ones() {
        let (_dir, layout) = fixture();
        let state = std::fs::read_to_string(layout.local_state()).unwrap();
        // A local edge over an existing global edge is skipped with a warning.
        let state = state.replace(
            "local_edges:\n",
            "local_edges:\n  - {from: green-operator, to: lippmann-schwinger, type: contradicts, weight: 0.1}\n",
        );
        write(&layout.local_state(), &state);
        let compiled = compile(&layout, &options()).unwrap();
        assert!(compiled.warnings.iter().any(|w| w.kind == ProblemKind::DuplicateEdge));
        let graph: Json = serde_json::from_str(&compiled.json).unwrap();
        let links = graph["links"].as_array().unwrap();
        let refine =
            links.iter().find(|l| l["source"] == "green-operator" && l["target"] == "lippmann-schwinger").unwrap();
        assert_eq!((refine["type"].as_str(), refine["edge_origin"].as_str()), (Some("refines"), Some("global")));
        let appended =
            links.iter().find(|l| l["source"] == "epsilon-regularisation" && l["target"] == "green-operator").unwrap();
        assert_eq!(appended["edge_origin"], "local");
    }

    #[test]
    fn fr_g11_fr_u05_pitfall_edges_must_target_session_nodes() {
        let (_dir, layout) = fixture();
        let path = layout.global_vault.join("green-operator.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("type: feeds-into", "type: pitfall"));
        let errors = build_errors(&layout);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].ends_with("green-operator.md:9: edges[1].to: a pitfall edge must point at a session node (domain: session); `fft-galerkin-basics` is not one"), "{errors:?}");
    }

    #[test]
    fn an_edge_to_an_unknown_node_is_an_error() {
        let (_dir, layout) = fixture();
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("to: mirror-src-green", "to: no-such-node"));
        let errors = build_errors(&layout);
        assert_eq!(
            errors,
            ["knowledge/local-nodes/repo-conventions.md:9: edges[0].to: no node has the id `no-such-node`"]
        );
    }

    #[test]
    fn a_duplicate_id_within_one_layer_is_an_error() {
        let (_dir, layout) = fixture();
        let text = std::fs::read_to_string(layout.global_vault.join("green-operator.md")).unwrap();
        write(&layout.global_vault.join("zz/copy.md"), &text);
        let errors = build_errors(&layout);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("zz/copy.md:2: id: `green-operator` is already the id of"), "{errors:?}");
    }

    #[test]
    fn fr_g08_a_schema_version_mismatch_halts_the_build_and_graph_json_stays() {
        let (_dir, layout) = fixture();
        let before = build(&layout, &options()).unwrap().json;
        let path = layout.local_state();
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("akms_schema: v2", "akms_schema: v3"));
        let error = build(&layout, &options()).unwrap_err();
        assert!(matches!(error, AkmsError::SchemaVersion(_)), "{error}");
        assert_eq!(
            error.to_string(),
            "SchemaVersionError: knowledge/graph/local_state.yaml:1: akms_schema: schema version `v3` is not the current v2"
        );
        assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), before);
    }

    #[test]
    fn bad_input_leaves_graph_json_as_it_was() {
        let cases: [(&str, &str, &str, &str); 5] = [
            ("local-nodes/repo-conventions.md", "tags: [layout]", "tags: [layout", "invalid yaml"),
            ("local-nodes/repo-conventions.md", "domain: project\n", "", "domain: required field is missing"),
            (
                "local-nodes/repo-conventions.md",
                "status: established",
                "status: final",
                "status: `final` is not one of",
            ),
            (
                "graph/local_state.yaml",
                "suppressed_edges: []",
                "suppressed_edges: [x]",
                "suppressed_edges: is reserved",
            ),
            (
                "local-nodes/repo-conventions.md",
                "akms_schema",
                "content_ref: ../../etc/passwd\nakms_schema",
                "content_ref: `../../etc/passwd` leads outside",
            ),
        ];
        for (file, from, to, expect) in cases {
            let (_dir, layout) = fixture();
            let before = build(&layout, &options()).unwrap().json;
            let path = layout.knowledge().join(file);
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(text.contains(from), "{file} has no {from}");
            write(&path, &text.replacen(from, to, 1));
            let error = build(&layout, &options()).unwrap_err().to_string();
            assert!(error.contains(file) && error.contains(expect), "{file}: {error}");
            assert_eq!(std::fs::read_to_string(layout.graph_json()).unwrap(), before, "{file}");
        }
    }

    /// `f` run on another thread; panics when it does not end within 20 s
    /// (a hang guard, not a timing).
    fn ends<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(f()).unwrap());
        rx.recv_timeout(std::time::Duration::from_secs(20)).expect("no hang")
    }

    /// `check` and `compile` of `layout` on another thread: the error lines of
    /// both (they must agree that the tree is bad).
    fn errors_without_hanging(layout: &Layout) -> Vec<String> {
        let layout = layout.clone();
        ends(move || {
            let checked: Vec<String> =
                check(&layout, &options()).iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
            let built = build_errors(&layout);
            assert_eq!(checked, built);
            // Validating the folders reports the file problems too.
            let walked: Vec<String> = check_paths(&layout, &[layout.knowledge(), layout.global_vault.clone()])
                .iter()
                .filter(|d| d.is_error())
                .map(ToString::to_string)
                .collect();
            let file_problems: Vec<&String> =
                built.iter().filter(|e| !e.contains("content_ref") && !e.contains("rank_formula")).collect();
            for problem in file_problems {
                let file = problem.split(": ").next().unwrap();
                assert!(walked.iter().any(|w| w.starts_with(&format!("{file}: "))), "{problem} not in {walked:#?}");
            }
            built
        })
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_node_file_is_refused_without_hanging() {
        let (_dir, layout) = fixture();
        crate::bounded::tests::mkfifo(&layout.local_nodes().join("x.md"));
        let errors = errors_without_hanging(&layout);
        assert_eq!(errors, ["knowledge/local-nodes/x.md: is a FIFO (named pipe), not a regular file; it was not read"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_overlay_or_config_is_refused_without_hanging() {
        let (_dir, layout) = fixture();
        std::fs::remove_file(layout.local_state()).unwrap();
        crate::bounded::tests::mkfifo(&layout.local_state());
        crate::bounded::tests::mkfifo(&layout.propagation_config());
        let errors = errors_without_hanging(&layout);
        assert_eq!(
            errors,
            [
                "knowledge/graph/local_state.yaml: is a FIFO (named pipe), not a regular file; it was not read",
                "knowledge/graph/propagation_config.yaml: is a FIFO (named pipe), not a regular file; it was not read",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_content_ref_is_refused_without_hanging() {
        let (_dir, layout) = fixture();
        crate::bounded::tests::mkfifo(&layout.knowledge().join("pipe.md"));
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("akms_schema", "content_ref: pipe.md\nakms_schema"));
        let errors = errors_without_hanging(&layout);
        assert_eq!(
            errors,
            [
                "knowledge/local-nodes/repo-conventions.md:13: content_ref: `pipe.md` is a FIFO (named pipe), not a regular file; it was not read"
            ]
        );
    }

    #[test]
    fn a_content_ref_over_its_cap_is_refused_from_its_metadata() {
        let (_dir, layout) = fixture();
        // Sparse: 1 GB that takes no space and is never read.
        std::fs::File::create(layout.knowledge().join("huge.md")).unwrap().set_len(1 << 30).unwrap();
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("akms_schema", "content_ref: huge.md\nakms_schema"));
        let errors = errors_without_hanging(&layout);
        assert_eq!(
            errors,
            [
                "knowledge/local-nodes/repo-conventions.md:13: content_ref: `huge.md` is 1.0 GiB (1073741824 bytes), over the limit of 4 MiB (4194304 bytes; limits.max_content_ref_bytes in propagation_config.yaml); it was not read"
            ]
        );
        // The setting moves the cap (up to its ceiling).
        write(&layout.propagation_config(), "akms_schema: v2\nlimits:\n  max_content_ref_bytes: 67108864\n");
        assert!(build_errors(&layout)[0].contains("limit of 64 MiB"));
    }

    #[test]
    fn a_node_file_over_its_cap_is_an_error_and_big_content_is_not() {
        let (_dir, layout) = fixture();
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &format!("{text}{}", "body text\n".repeat(120_000)));
        // Content without frontmatter over the node cap is not a node: skipped, not refused.
        write(&layout.local_nodes().join("docs/long.md"), &"words\n".repeat(300_000));
        let errors = errors_without_hanging(&layout);
        assert_eq!(errors.len(), 1, "{errors:#?}");
        assert!(
            errors[0].starts_with("knowledge/local-nodes/repo-conventions.md: is 1.1 MiB (1200")
                && errors[0].ends_with("over the limit of 1 MiB (1048576 bytes; limits.max_node_bytes in propagation_config.yaml); it was not read"),
            "{}",
            errors[0]
        );
        write(&layout.propagation_config(), "akms_schema: v2\nlimits:\n  max_node_bytes: 2097152\n");
        assert!(compile(&layout, &options()).is_ok());
    }

    #[test]
    fn deeply_nested_yaml_and_rank_formulas_are_errors_naming_the_file() {
        let (_dir, layout) = fixture();
        let n = 100_000;
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("tags: [layout]", &format!("tags: {}x{}", "[".repeat(n), "]".repeat(n))));
        let errors = errors_without_hanging(&layout);
        assert_eq!(
            errors,
            ["knowledge/local-nodes/repo-conventions.md:5: invalid yaml: nested more than 100 levels deep"]
        );

        let (_dir, layout) = fixture();
        let formula = format!("{}confidence{}", "(".repeat(n), ")".repeat(n));
        write(
            &layout.propagation_config(),
            &format!(
                "akms_schema: v2\nquery_roles:\n  implementer:\n    edge_types: [requires]\n    rank_formula: \"{formula}\"\n"
            ),
        );
        let errors = errors_without_hanging(&layout);
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with(
                "knowledge/graph/propagation_config.yaml:2: query_roles.implementer.rank_formula: rank formula `(((("
            ),
            "{}",
            errors[0]
        );
        assert!(errors[0].ends_with("the formula is longer than 4096 characters at character 4096"), "{}", errors[0]);
    }

    #[cfg(unix)]
    #[test]
    fn links_to_dot_in_local_nodes_are_walked_once() {
        let (_dir, layout) = fixture();
        for name in ["a", "b"] {
            std::os::unix::fs::symlink(".", layout.local_nodes().join(name)).unwrap();
        }
        let walked = layout.clone();
        let compiled = ends(move || compile(&walked, &options())).unwrap();
        let repeated = compiled.warnings.iter().filter(|w| w.kind == ProblemKind::RepeatedDirectory).count();
        assert_eq!(repeated, 2, "{:#?}", compiled.warnings);
    }

    #[cfg(unix)]
    #[test]
    fn a_node_file_linked_from_outside_its_layer_is_not_read() {
        let (dir, layout) = fixture();
        write(&dir.path().join("secret.md"), "---\nid: secret\n---\n");
        std::os::unix::fs::symlink(dir.path().join("secret.md"), layout.local_nodes().join("leak.md")).unwrap();
        std::fs::remove_file(layout.local_state()).unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.md"), layout.local_state()).unwrap();
        let errors = errors_without_hanging(&layout);
        assert!(
            errors.iter().any(|e| e.starts_with("knowledge/local-nodes/leak.md: symbolic link leads outside")),
            "{errors:#?}"
        );
        assert!(errors.iter().any(|e| e.starts_with("knowledge/graph/local_state.yaml: leads outside")), "{errors:#?}");
    }

    #[test]
    fn fr_g08_a_config_with_another_schema_version_halts_the_build() {
        let (_dir, layout) = fixture();
        write(&layout.propagation_config(), "akms_schema: v1\n");
        assert!(matches!(compile(&layout, &options()), Err(AkmsError::SchemaVersion(_))));
        write(&layout.propagation_config(), crate::DEFAULT_CONFIG_YAML);
        assert!(compile(&layout, &options()).is_ok());
    }

    #[test]
    fn check_reports_every_problem_of_the_tree_at_once() {
        let (_dir, layout) = fixture();
        let path = layout.local_nodes().join("repo-conventions.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("status: established", "status: final"));
        write(&layout.propagation_config(), "akms_schema: v2\ngraph:\n  stale_days: 1\n");
        let path = layout.global_vault.join("green-operator.md");
        let text = std::fs::read_to_string(&path).unwrap();
        write(&path, &text.replace("confidence: 0.6", "confidence: high"));
        let all = check(&layout, &options());
        let errors: Vec<String> = all.iter().filter(|d| d.is_error()).map(ToString::to_string).collect();
        assert_eq!(errors.len(), 3, "{errors:#?}");
        // The invalid global node also leaves an overlay edge without its
        // target: orphaned, a warning.
        assert!(all.iter().any(|d| d.kind == ProblemKind::OrphanedOverlay && d.message.contains("`green-operator`")));
        let single = check_paths(&layout, &[layout.local_nodes()]);
        assert_eq!(single.iter().filter(|d| d.is_error()).count(), 1, "{single:#?}");
    }
}
