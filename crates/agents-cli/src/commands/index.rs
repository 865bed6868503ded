//! `agents index` and `agents status`.

use std::collections::BTreeMap;
use std::path::Path;

use agents_acms::indexing::IndexOptions;
use agents_acms::projects::canonical_dir;
use agents_acms::query::SyncReport;
use agents_core::indexing::{IndexMetadata, IndexReport, LanguageStats};
use agents_engine::{IndexMode, IndexOutcome};
use serde::Serialize;

use crate::cli::{IndexArgs, IndexFilterArgs, StatusArgs};
use crate::exit::UsageError;
use crate::output::{table, thousands};
use crate::progress::Bar;
use crate::settings::Settings;

/// What `agents index --json` prints.
#[derive(Serialize)]
pub struct IndexSummary<'a> {
    pub project: &'a str,
    pub resource_id: &'a str,
    pub path: &'a str,
    pub new_resource: bool,
    pub index: &'a IndexMetadata,
    pub report: Option<&'a IndexReport>,
    pub languages: &'a BTreeMap<String, LanguageStats>,
    /// What syncing the text and vector indexes did (absent with `--no-search`).
    pub search: Option<SyncReport>,
    /// Milliseconds that sync took: the report's `duration_ms` covers the
    /// files and the code graph only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search_ms: Option<u64>,
}

impl<'a> IndexSummary<'a> {
    pub fn of(outcome: &'a IndexOutcome) -> IndexSummary<'a> {
        IndexSummary {
            project: &outcome.project.name,
            resource_id: &outcome.resource.resource_id,
            path: &outcome.resource.path,
            new_resource: outcome.new_resource,
            index: &outcome.index.metadata,
            report: outcome.index.report.as_ref(),
            languages: &outcome.index.languages,
            search: None,
            search_ms: None,
        }
    }

    /// Brings the text and vector indexes up to date with the outcome, and
    /// records what that did and how long it took.
    pub fn sync_search(&mut self, engine: &agents_engine::Engine, outcome: &IndexOutcome) -> anyhow::Result<()> {
        let started = std::time::Instant::now();
        let sync = engine.sync_search(outcome)?;
        let elapsed_ms = started.elapsed().as_millis() as u64;
        tracing::info!(elapsed_ms, ?sync, "search indexes synced");
        self.search = Some(sync);
        self.search_ms = Some(elapsed_ms);
        Ok(())
    }
}

/// Applies per-run flags on top of the configured options.
pub fn apply_filters(mut options: IndexOptions, filters: &IndexFilterArgs) -> IndexOptions {
    options.include_globs.extend(filters.include.iter().cloned());
    options.exclude_globs.extend(filters.exclude.iter().cloned());
    if filters.max_file_size.is_some() {
        options.max_file_size = filters.max_file_size;
    }
    if filters.max_total_size.is_some() {
        options.max_total_size = filters.max_total_size;
    }
    options.hidden |= filters.hidden;
    options
}

pub fn index(settings: &Settings, args: IndexArgs) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let mut options = apply_filters(engine.index_options(), &args.filters);
    options.wait_for_lock = args.wait;
    let mode = if args.full { IndexMode::Full } else { IndexMode::Refresh };
    let bar = Bar::new(settings.progress);
    let progress = PreloadOnWork { inner: &bar, engine: (!args.no_search).then_some(&engine) };
    let outcome = engine.index_path(&args.path, mode, &options, &progress)?;
    let mut summary = IndexSummary::of(&outcome);
    if !args.no_search {
        summary.sync_search(&engine, &outcome)?;
    }
    settings.printer.emit(&summary, || render_summary(&summary))
}

/// Progress that, once the run finds files to read, starts loading the
/// embedding model the search sync after it will need: the model (tens of
/// milliseconds) then loads while the files are parsed, and a run that
/// changed nothing loads none.
struct PreloadOnWork<'a> {
    inner: &'a dyn agents_acms::indexing::Progress,
    engine: Option<&'a agents_engine::Engine>,
}

impl agents_acms::indexing::Progress for PreloadOnWork<'_> {
    fn start(&self, phase: &str, total: u64) {
        if phase == agents_acms::indexing::PHASE_INDEXING
            && let Some(engine) = self.engine
        {
            engine.preload_model();
        }
        self.inner.start(phase, total);
    }
    fn advance(&self, n: u64) {
        self.inner.advance(n);
    }
    fn finish(&self) {
        self.inner.finish();
    }
}

pub fn render_summary(s: &IndexSummary<'_>) -> String {
    let mut out = String::new();
    let verb = if s.new_resource { "Indexed" } else { "Refreshed" };
    out.push_str(&format!("{verb} {} (project {}, resource {})\n", s.path, s.project, s.resource_id));
    let m = s.index;
    if let Some(r) = s.report {
        out.push_str(&format!(
            "  files      {} indexed: {} added, {} changed, {} removed, {} unchanged\n",
            thousands(m.file_count),
            thousands(r.added),
            thousands(r.changed),
            thousands(r.removed),
            thousands(r.unchanged)
        ));
        out.push_str(&format!("  read       {} files, {:.1} MB\n", thousands(r.files_read), r.bytes_read as f64 / 1e6));
        if r.reanalysed {
            out.push_str(&format!(
                "  analyzers  version {}: the graph was built by other analyzers, so every file was parsed again\n",
                r.analyzer_version
            ));
        }
        if r.skipped_total() > 0 {
            let parts: Vec<String> =
                r.skipped.iter().map(|(reason, n)| format!("{} {}", thousands(*n), reason.as_str())).collect();
            out.push_str(&format!("  skipped    {}\n", parts.join(", ")));
        }
    }
    if let Some(g) = s.report.map(|r| &r.graph).filter(|g| g.files_analyzed > 0 || g.re_resolved > 0) {
        let resolved = if g.references == 0 { 0.0 } else { 100.0 * g.references_resolved as f64 / g.references as f64 };
        out.push_str(&format!(
            "  graph      {} files parsed: {} nodes, {} references ({resolved:.0}% resolved), {} rebound{}\n",
            thousands(g.files_analyzed),
            thousands(g.nodes),
            thousands(g.references),
            thousands(g.re_resolved),
            if g.parse_warnings > 0 {
                format!(", {} syntax warnings", thousands(g.parse_warnings))
            } else {
                String::new()
            }
        ));
        for example in &g.warning_examples {
            out.push_str(&format!("  warning    {example}\n"));
        }
    }
    if let Some(sync) = &s.search {
        out.push_str(&format!(
            "  search     {} files re-indexed: {} text documents, {} vectors\n",
            thousands(sync.files_indexed),
            thousands(sync.docs_indexed),
            thousands(sync.vectors_indexed)
        ));
    }
    out.push_str(&format!("  tokens     {} (primary language: {})\n", thousands(m.token_estimate), m.primary_language));
    if let Some(r) = s.report {
        let seconds = |ms: u64| ms as f64 / 1000.0;
        match s.search_ms {
            Some(search_ms) => out.push_str(&format!(
                "  time       {:.2} s (files and graph {:.2} s, text and vectors {:.2} s)\n",
                seconds(r.duration_ms + search_ms),
                seconds(r.duration_ms),
                seconds(search_ms)
            )),
            None => out.push_str(&format!("  time       {:.2} s\n", seconds(r.duration_ms))),
        }
    }
    out.push_str(&render_languages(s.languages));
    out
}

fn render_languages(languages: &BTreeMap<String, LanguageStats>) -> String {
    const SHOWN: usize = 10;
    if languages.is_empty() {
        return String::new();
    }
    let mut rows: Vec<(&String, &LanguageStats)> = languages.iter().collect();
    rows.sort_by(|a, b| b.1.tokens.cmp(&a.1.tokens).then_with(|| a.0.cmp(b.0)));
    let mut t = table(&["language", "files", "tokens"]);
    for (lang, stats) in rows.iter().take(SHOWN) {
        t.add_row(vec![lang.to_string(), thousands(stats.files), thousands(stats.tokens)]);
    }
    if rows.len() > SHOWN {
        let rest = &rows[SHOWN..];
        t.add_row(vec![
            format!("({} more)", rest.len()),
            thousands(rest.iter().map(|r| r.1.files).sum()),
            thousands(rest.iter().map(|r| r.1.tokens).sum()),
        ]);
    }
    for i in 1..=2 {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
    format!("\n{t}\n")
}

/// What `agents status` prints and the MCP server's `index_status` returns.
#[derive(Serialize)]
pub struct StatusView {
    pub project: Vec<String>,
    pub resource_id: String,
    pub path: String,
    pub index: Option<IndexMetadata>,
    pub report: Option<IndexReport>,
}

/// The index status of the resource holding `path`.
pub fn status_of(engine: &agents_engine::Engine, path: &Path) -> anyhow::Result<StatusView> {
    let dir = canonical_dir(path)?;
    let resource = engine.projects().resource_containing(&dir)?.ok_or_else(|| {
        UsageError(format!("{}: not inside an indexed resource; run `agents index` there first", dir.display()))
    })?;
    let projects = engine.projects().projects_of(&resource)?;
    let index = engine.indexing().get_index_status(&resource.resource_id)?;
    let report = match &index {
        Some(m) => engine.index_report(&m.index_id)?,
        None => None,
    };
    Ok(StatusView {
        project: projects.into_iter().map(|p| p.name).collect(),
        resource_id: resource.resource_id,
        path: resource.path,
        index,
        report,
    })
}

pub fn status(settings: &Settings, args: StatusArgs) -> anyhow::Result<()> {
    let engine = settings.engine()?;
    let view = status_of(&engine, &args.path)?;
    settings.printer.emit(&view, || render_status(&view, Path::new(&view.path)))
}

fn render_status(v: &StatusView, path: &Path) -> String {
    let mut out = format!("{} (project {}, resource {})\n", path.display(), v.project.join(", "), v.resource_id);
    match &v.index {
        None => out.push_str("  status     not indexed\n"),
        Some(m) => {
            out.push_str(&format!("  status     {}\n", m.status));
            if let Some(msg) = &m.error_message {
                out.push_str(&format!("  message    {msg}\n"));
            }
            out.push_str(&format!("  indexed at {}\n", m.indexed_at.format("%Y-%m-%d %H:%M:%S UTC")));
            out.push_str(&format!(
                "  files      {}, {} tokens, primary language {}\n",
                thousands(m.file_count),
                thousands(m.token_estimate),
                m.primary_language
            ));
        }
    }
    if let Some(r) = &v.report {
        out.push_str(&format!(
            "  last run   {} added, {} changed, {} removed, {} unchanged, {} skipped; files and graph in {:.2} s\n",
            r.added,
            r.changed,
            r.removed,
            r.unchanged,
            r.skipped_total(),
            r.duration_ms as f64 / 1000.0
        ));
    }
    out
}
