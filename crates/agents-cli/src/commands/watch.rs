//! `agents watch [PATH]`: keeps a resource's index and search indexes current
//! in the foreground, a line per refresh (a JSON object per line with
//! `--json`), until interrupted.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agents_engine::live::{LiveIndex, LiveRefresh};
use serde::Serialize;

use crate::commands::uko::refresh;
use crate::output::thousands;
use crate::settings::Settings;

/// One line of `agents watch --json`.
#[derive(Serialize)]
struct RefreshLine {
    root: String,
    added: u64,
    changed: u64,
    removed: u64,
    unchanged: u64,
    search_files_indexed: u64,
    search_files_removed: u64,
    elapsed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl RefreshLine {
    fn of(refresh: &LiveRefresh) -> RefreshLine {
        let mut line = RefreshLine {
            root: refresh.root.display().to_string(),
            added: 0,
            changed: 0,
            removed: 0,
            unchanged: 0,
            search_files_indexed: 0,
            search_files_removed: 0,
            elapsed_ms: refresh.elapsed.as_millis() as u64,
            error: None,
        };
        match &refresh.result {
            Ok((outcome, sync)) => {
                if let Some(report) = &outcome.index.report {
                    (line.added, line.changed, line.removed, line.unchanged) =
                        (report.added, report.changed, report.removed, report.unchanged);
                }
                (line.search_files_indexed, line.search_files_removed) = (sync.files_indexed, sync.files_removed);
            }
            Err(error) => line.error = Some(error.to_string()),
        }
        line
    }

    fn text(&self) -> String {
        match &self.error {
            Some(error) => format!("refresh of {} failed: {error}", self.root),
            None => format!(
                "refreshed {}: {} added, {} changed, {} removed, {} unchanged; search: {} files indexed, {} removed ({} ms)",
                self.root,
                thousands(self.added),
                thousands(self.changed),
                thousands(self.removed),
                thousands(self.unchanged),
                thousands(self.search_files_indexed),
                thousands(self.search_files_removed),
                thousands(self.elapsed_ms)
            ),
        }
    }
}

pub fn watch(settings: Settings, path: &Path, debounce_ms: u64) -> anyhow::Result<()> {
    let engine = Arc::new(settings.engine()?);
    let started = std::time::Instant::now();
    // The first refresh finds (or creates) the resource and its root; the
    // watcher starts next, and the refresh reported comes after it, so no
    // change made after the first line is missed.
    let initial = refresh(&settings, &engine, path)?;
    let root: std::path::PathBuf = initial.resource.path.clone().into();
    let json = settings.printer.json;
    let print = move |refresh: &LiveRefresh| {
        let line = RefreshLine::of(refresh);
        // One line per refresh, flushed at once (stdout is line-buffered).
        if json {
            println!("{}", serde_json::to_string(&line).unwrap_or_default());
        } else {
            println!("{}", line.text());
        }
    };
    let live = LiveIndex::new(engine.clone(), Duration::from_millis(debounce_ms), print);
    live.watch(&root)?;
    // Normally finds nothing: it catches what changed while the watcher started.
    let caught = refresh(&settings, &engine, &root)?;
    let changed = caught.index.report.as_ref().is_some_and(|r| r.added + r.changed + r.removed > 0);
    let outcome = if changed { caught } else { initial };
    let sync = engine.sync_search(&outcome)?;
    let first = LiveRefresh {
        root: outcome.resource.path.clone().into(),
        result: Ok((Arc::new(outcome), sync)),
        elapsed: started.elapsed(),
    };
    println!(
        "{}",
        if json { serde_json::to_string(&RefreshLine::of(&first))? } else { RefreshLine::of(&first).text() }
    );
    if !json {
        eprintln!("watching {} for changes (Ctrl-C to stop)", first.root.display());
    }
    loop {
        std::thread::park();
    }
}
