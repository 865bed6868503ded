//! `agents context ...`: the current project's context entries, kept in the
//! hot, warm or cold tier by the ContextTierService.
//!
//! The project is `--project NAME`, or the project of the resource holding the
//! current directory. Every command first applies retention (a sweep) and the
//! project's tier capacities (`agents project context set --hot-max-tokens`
//! ...), then works through the service; bad input (an unknown id or tier, a
//! missing file) is a usage error and changes nothing.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};

use agents_acms::tiers::{ContextTierService, Eviction, TierError};
use agents_core::fragment::{ContextFragment, ContextTier, FragmentProvenance};
use agents_core::ids::new_ulid;
use agents_core::tier::{ActorRole, TieredFragment};
use agents_core::tokens::TokenCounter;
use agents_engine::Engine;
use agents_engine::{Project, Resource};
use anyhow::Context as _;
use serde::Serialize;

use crate::cli::{ContextAddArgs, ContextCommand, ProjectScope};
use crate::exit::UsageError;
use crate::output::{table, thousands};
use crate::settings::Settings;

pub fn run(settings: &Settings, cmd: ContextCommand) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let printer = settings.printer;
    let tiers = open_tiers(&engine)?;
    match cmd {
        ContextCommand::List { scope, tier, role } => {
            let (project, _) = resolve_project(&engine, &scope)?;
            prepare(&engine, &tiers, &project)?;
            let tier = tier.map(|t| parse_tier("--tier", &t)).transpose()?;
            let role = role.map(|r| parse_role("--role", &r)).transpose()?;
            let view = tiers.get_scoped_view(std::slice::from_ref(&project.name))?;
            let entries: Vec<EntryView> = view
                .all()
                .filter(|f| tier.is_none_or(|t| f.tier() == t))
                .filter(|f| role.is_none_or(|r| f.visible_to(r)))
                .map(|f| EntryView::new(f, false))
                .collect();
            printer.emit(&entries, || render_list(&project.name, &entries))
        }
        ContextCommand::Add(args) => add(settings, &engine, &tiers, *args),
        ContextCommand::Show { id } => {
            let found = tiers.get(&id)?.ok_or_else(|| not_found(&id))?;
            let view = EntryView::new(&found, true);
            printer.emit(&view, || render_show(&view))
        }
        ContextCommand::Clear { scope } => {
            let (project, _) = resolve_project(&engine, &scope)?;
            let removed = tiers.clear(std::slice::from_ref(&project.name))?;
            let view = serde_json::json!({ "project": project.name, "removed": removed });
            printer.emit(&view, || format!("Removed {removed} context entries of project {}", project.name))
        }
        ContextCommand::Promote { id } => {
            prepare_for(&engine, &tiers, &id)?;
            let (tier, evictions) = tiers.promote(&id).map_err(usage_if_bad)?;
            report_move(settings, &id, tier, &evictions)
        }
        ContextCommand::Demote { id, summarize } => {
            prepare_for(&engine, &tiers, &id)?;
            let (tier, evictions) = tiers.demote(&id, summarize).map_err(usage_if_bad)?;
            report_move(settings, &id, tier, &evictions)
        }
    }
}

/// The tier service, with a corrupt tier file reported as what it is.
pub fn open_tiers(engine: &Engine) -> anyhow::Result<ContextTierService> {
    engine
        .open_tiers()
        .with_context(|| format!("cannot open the context tiers in {}", engine.home().tiers_dir().display()))
}

/// Applies retention and the project's own tier capacities.
pub fn prepare(engine: &Engine, tiers: &ContextTierService, project: &Project) -> anyhow::Result<()> {
    Ok(engine.prepare_tiers(tiers, project)?)
}

/// [`prepare`] for the project of an existing entry.
fn prepare_for(engine: &Engine, tiers: &ContextTierService, id: &str) -> anyhow::Result<()> {
    let entry = tiers.peek(id)?.ok_or_else(|| not_found(id))?;
    if let Ok(project) = engine.projects().get(entry.project_name()) {
        prepare(engine, tiers, &project)?;
    }
    Ok(())
}

fn not_found(id: &str) -> anyhow::Error {
    UsageError(format!("no context entry `{id}` (see `agents context list`)")).into()
}

/// Refusals the user can act on are usage errors.
fn usage_if_bad(error: TierError) -> anyhow::Error {
    match error {
        TierError::NotFound(id) => not_found(&id),
        e @ (TierError::TooLargeForHot { .. } | TierError::AlreadyHottest(_) | TierError::AlreadyColdest(_)) => {
            UsageError(e.to_string()).into()
        }
        e => e.into(),
    }
}

pub fn parse_tier(flag: &str, text: &str) -> anyhow::Result<ContextTier> {
    text.parse::<ContextTier>().map_err(|e| UsageError(format!("{flag}: {}", e.message)).into())
}

pub fn parse_role(flag: &str, text: &str) -> anyhow::Result<ActorRole> {
    text.parse::<ActorRole>().map_err(|e| UsageError(format!("{flag}: {}", e.message)).into())
}

/// `--project NAME`, or the project of the resource holding the current
/// directory; with the resource the entry's symbols come from, if any.
fn resolve_project(engine: &Engine, scope: &ProjectScope) -> anyhow::Result<(Project, Option<Resource>)> {
    if let Some(name) = &scope.project {
        let project = engine.projects().get(name)?;
        let resource = engine.first_resource(&project)?;
        return Ok((project, resource));
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let resource = engine.projects().resource_containing(&cwd)?.ok_or_else(|| {
        UsageError(format!(
            "{} is in no linked resource: give --project NAME, or `agents index` it first",
            cwd.display()
        ))
    })?;
    let project = engine.projects().projects_of(&resource)?.into_iter().next().ok_or_else(|| {
        UsageError(format!("resource {} is linked to no project: give --project NAME", resource.path))
    })?;
    Ok((project, Some(resource)))
}

fn add(settings: &Settings, engine: &Engine, tiers: &ContextTierService, args: ContextAddArgs) -> anyhow::Result<()> {
    let tier = parse_tier("--tier", &args.tier)?;
    let roles =
        args.role_visibility.iter().map(|r| parse_role("--role-visibility", r)).collect::<Result<Vec<_>, _>>()?;
    let (project, resource) = resolve_project(engine, &args.scope)?;
    let id = new_ulid();
    let tokenizer = engine.tokenizer();
    let (uko_node, content, depth, provenance, kind, source) = match (&args.file, &args.symbol) {
        (Some(file), _) => {
            let text = std::fs::read_to_string(file)
                .map_err(|e| UsageError(format!("--file {}: cannot read: {e}", file.display())))?;
            let absolute = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            let inside = resource.as_ref().and_then(|r| {
                absolute.strip_prefix(&r.path).ok().map(|rel| (r, rel.to_string_lossy().replace('\\', "/")))
            });
            let (uri, provenance) = match &inside {
                Some((r, rel)) => {
                    (format!("uko://{}/{rel}", r.resource_id), FragmentProvenance::new(&r.resource_id, rel)?)
                }
                None => (
                    format!("context://{}/{id}", project.name),
                    FragmentProvenance::new(&project.project_id, absolute.to_string_lossy())?,
                ),
            };
            let source = inside.map_or_else(|| absolute.display().to_string(), |(_, rel)| rel);
            (uri, text, 9, provenance, "file", source)
        }
        (None, Some(symbol)) => {
            let resource = resource.ok_or_else(|| {
                UsageError(format!("project {} has no linked resource to find --symbol {symbol} in", project.name))
            })?;
            let outcome = crate::commands::uko::refresh(settings, engine, Path::new(&resource.path))?;
            let index_id = &outcome.index.metadata.index_id;
            let nodes = engine.graph().find(&outcome.resource.resource_id, index_id, symbol)?;
            let node = match nodes.as_slice() {
                [] => return Err(UsageError(format!("--symbol: no symbol `{symbol}` in {}", resource.path)).into()),
                [node] => node,
                many => {
                    let names: Vec<&str> = many.iter().take(5).map(|n| n.node.uri.as_str()).collect();
                    return Err(UsageError(format!(
                        "--symbol: `{symbol}` names {} symbols ({}); give `path#Symbol`",
                        many.len(),
                        names.join(", ")
                    ))
                    .into());
                }
            };
            let level = crate::commands::uko::resolve_depth(&args.depth, &node.node.language)?;
            let root = PathBuf::from(&outcome.resource.path);
            let rendered = engine.graph().render(&root, index_id, node, level, &tokenizer)?;
            let mut provenance = FragmentProvenance::new(&outcome.resource.resource_id, &node.node.path)?;
            if let Ok(range) = rendered.source_range.parse() {
                provenance = provenance.with_source_range(range);
            }
            (rendered.uri.clone(), rendered.content, level, provenance, "symbol", rendered.uri)
        }
        (None, None) => {
            let mut stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(
                    UsageError("nothing to add: give --file PATH, --symbol NAME, or text on stdin".into()).into()
                );
            }
            let mut text = String::new();
            stdin.read_to_string(&mut text).context("cannot read stdin")?;
            if text.trim().is_empty() {
                return Err(UsageError("nothing to add: stdin is empty (give --file or --symbol)".into()).into());
            }
            let uri = format!("context://{}/{id}", project.name);
            (uri, text, 9, FragmentProvenance::new(&project.project_id, "stdin")?, "text", "stdin".to_owned())
        }
    };
    let mut builder = ContextFragment::builder(uko_node, content.clone(), tokenizer.count(&content) as u64, provenance)
        .fragment_id(&id)
        .detail_depth(depth)
        .tier(tier)
        .metadata_entry("kind", kind)
        .metadata_entry("source", &source);
    if let Some(title) = args.title.as_deref().filter(|t| !t.trim().is_empty()) {
        builder = builder.metadata_entry("title", title);
    }
    let fragment = builder.build().map_err(|e| UsageError(e.to_string()))?;
    let entry = TieredFragment::new(fragment, &project.name)?.with_role_visibility(roles);
    prepare(engine, tiers, &project)?;
    let evictions = tiers.store(entry.clone()).map_err(usage_if_bad)?;
    for e in &evictions {
        settings.printer.note(eviction_line(e));
    }
    let view = EntryView::new(&entry, false);
    settings.printer.emit(&view, || {
        format!(
            "Added context entry {id} to project {} ({} tier, {} tokens, {kind} {source})",
            project.name, tier, view.tokens
        )
    })
}

fn eviction_line(e: &Eviction) -> String {
    match e.to {
        Some(to) => format!("evicted {} from {} to {to} (capacity)", e.fragment_id, e.from),
        None => format!("evicted {} out of the {} tier (capacity)", e.fragment_id, e.from),
    }
}

fn report_move(settings: &Settings, id: &str, tier: ContextTier, evictions: &[Eviction]) -> anyhow::Result<()> {
    for e in evictions {
        settings.printer.note(eviction_line(e));
    }
    let view = serde_json::json!({ "id": id, "tier": tier, "evictions": evictions });
    settings.printer.emit(&view, || format!("Moved context entry {id} to the {tier} tier"))
}

/// One entry as listed (`content` only for `show`).
#[derive(Serialize)]
struct EntryView {
    id: String,
    project: String,
    tier: ContextTier,
    kind: String,
    source: String,
    title: Option<String>,
    /// The title, or else the first non-blank line of the content (at most
    /// [`PREVIEW_CHARS`] characters): what the entry is about, at a glance.
    preview: String,
    tokens: u64,
    depth: u8,
    access_count: u64,
    last_accessed: String,
    created_at: String,
    role_visibility: Vec<ActorRole>,
    uko_node: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
}

impl EntryView {
    fn new(entry: &TieredFragment, with_content: bool) -> EntryView {
        let fragment = entry.fragment();
        let meta = |key: &str| fragment.metadata().get(key).cloned();
        EntryView {
            id: entry.fragment_id().to_owned(),
            project: entry.project_name().to_owned(),
            tier: entry.tier(),
            kind: meta("kind").unwrap_or_else(|| "fragment".to_owned()),
            source: meta("source").unwrap_or_default(),
            title: meta("title"),
            preview: meta("title").unwrap_or_else(|| preview(fragment.content())),
            tokens: fragment.token_count(),
            depth: fragment.detail_depth(),
            access_count: entry.access_count(),
            last_accessed: agents_core::ids::to_iso(entry.last_accessed()),
            created_at: agents_core::ids::to_iso(fragment.created_at()),
            role_visibility: entry.role_visibility().iter().copied().collect(),
            uko_node: fragment.uko_node().to_owned(),
            metadata: if with_content { fragment.metadata().clone() } else { BTreeMap::new() },
            content: with_content.then(|| fragment.content().to_owned()),
        }
    }

    fn roles(&self) -> String {
        if self.role_visibility.is_empty() {
            "by tier".to_owned()
        } else {
            self.role_visibility.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(",")
        }
    }
}

/// Most characters of an entry's preview in `agents context list`.
const PREVIEW_CHARS: usize = 60;

/// The first non-blank line of `content`, trimmed, cut to [`PREVIEW_CHARS`]
/// characters (with `…` when cut).
fn preview(content: &str) -> String {
    let line = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    let mut chars = line.chars();
    let mut out: String = chars.by_ref().take(PREVIEW_CHARS).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

fn render_list(project: &str, entries: &[EntryView]) -> String {
    if entries.is_empty() {
        return format!("No context entries in project {project} (add one with `agents context add`)\n");
    }
    let mut t = table(&["id", "tier", "kind", "tokens", "depth", "reads", "roles", "entry"]);
    for e in entries {
        // The title or the first line, then where the entry came from.
        let source = if e.preview.is_empty() { e.source.clone() } else { format!("{} ({})", e.preview, e.source) };
        t.add_row([
            e.id.clone(),
            e.tier.to_string(),
            e.kind.clone(),
            thousands(e.tokens),
            e.depth.to_string(),
            e.access_count.to_string(),
            e.roles(),
            source,
        ]);
    }
    format!("Context entries of project {project}\n{t}\n")
}

fn render_show(e: &EntryView) -> String {
    let mut out = format!(
        "{} ({} tier, project {})\n  kind       {}\n  source     {}\n  node       {}\n  tokens     {}\n  depth      {}\n  reads      {} (last {})\n  created    {}\n  roles      {}\n",
        e.id,
        e.tier,
        e.project,
        e.kind,
        e.source,
        e.uko_node,
        thousands(e.tokens),
        e.depth,
        e.access_count,
        e.last_accessed,
        e.created_at,
        e.roles()
    );
    if let Some(title) = &e.title {
        out.push_str(&format!("  title      {title}\n"));
    }
    out.push('\n');
    out.push_str(e.content.as_deref().unwrap_or_default());
    out
}
