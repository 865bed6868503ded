//! [`RepoIndexingService`]: turns a directory into a persistent file index.
//!
//! A run walks the resource ([`crate::walk`]), then, in parallel, reads each
//! candidate file, skips binaries, hashes it (SHA-256), detects its language
//! and counts its tokens with the shared tokenizer. The result is diffed
//! against the stored file list and committed in one transaction.
//!
//! Incremental refresh: a file whose size and mtime match the stored record
//! is not read at all; a file whose stat changed is re-hashed, and only if
//! the hash changed is it re-processed. The run reports added / changed /
//! removed / unchanged counts.
//!
//! Safety: a per-resource OS lock keeps two indexers off one index; the
//! stored file list changes only in the final commit, so a run killed midway
//! leaves the previous index intact, and [`RepoIndexingService::cleanup_stale_indexing`]
//! (run at start-up) marks its orphaned `indexing` row `stale`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use agents_core::digest::sha256_hex;
use agents_core::indexing::{FileRecord, GraphReport, IndexMetadata, IndexReport, IndexStatus, RepoIndex, SkipReason};
use agents_core::tokens::{TokenCounter, Tokenizer};
use agents_fs::read::{ReadError, RegularFile};
use agents_store::{IndexCommit, SkippedFile, Store, StoreError};
use agents_uko::lang::ANALYZER_VERSION;
use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;

use crate::language::{detect_language, needs_first_line};
use crate::uko_index::{self, Analyzed, Linker};
use crate::walk::{WalkEntry, WalkOptions, walk};
use agents_fs::lock::{self, LockAttempt, ResourceLock};

/// How many example paths a report keeps per skip reason.
const SKIP_EXAMPLES: usize = 5;
/// How many files' first syntax warning a report keeps.
const WARNING_EXAMPLES: usize = 5;
/// Files processed in parallel between two batches of graph writes: bounds
/// memory (a chunk's parsed nodes) on large trees.
const CHUNK: usize = 256;
/// Bytes inspected for NUL to decide that a file is binary (git's heuristic).
const BINARY_PROBE: usize = 8000;

/// Receives progress of a run. The CLI draws a bar; libraries pass [`NoProgress`].
pub trait Progress: Sync {
    /// A phase starts; `total` items will be reported with `advance`.
    fn start(&self, _phase: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
    fn finish(&self) {}
}

/// The phase a run reports once it found files to read (and not before): a
/// caller that will sync search indexes after it can start loading what the
/// sync needs then.
pub const PHASE_INDEXING: &str = "indexing";

/// Progress that goes nowhere.
pub struct NoProgress;
impl Progress for NoProgress {}

/// What to index under a resource, from configuration and flags.
#[derive(Clone, Debug, Default)]
pub struct IndexOptions {
    /// Globs (relative paths) a file must match to be indexed; empty = all.
    pub include_globs: Vec<String>,
    /// Globs that exclude files; exclusions win over inclusions.
    pub exclude_globs: Vec<String>,
    /// Files larger than this are skipped (`too_large`).
    pub max_file_size: Option<u64>,
    /// Once this many bytes are indexed, the remaining files (in path order)
    /// are skipped (`total_size_limit`).
    pub max_total_size: Option<u64>,
    /// Index hidden files and directories (dotfiles).
    pub hidden: bool,
    /// Descend into symlinked directories.
    pub follow_symlinks: bool,
    /// Wait for another indexer of the same resource instead of refusing.
    pub wait_for_lock: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{path}: no such directory", path = .0.display())]
    NotFound(PathBuf),
    #[error("{path}: not a directory", path = .0.display())]
    NotADirectory(PathBuf),
    #[error(
        "{path}: another indexer is already running on this resource{pid}; wait for it or pass --wait",
        path = .path.display(),
        pid = .pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Busy { path: PathBuf, pid: Option<u32> },
    #[error("invalid glob `{glob}`: {message}")]
    BadGlob { glob: String, message: String },
    #[error("{path}: {source}", path = .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl IndexOptions {
    /// Checks the options (globs) without touching anything, so callers can
    /// refuse bad input before their first write.
    pub fn validate(&self) -> Result<(), IndexError> {
        PathFilter::new(&self.include_globs, &self.exclude_globs).map(|_| ())
    }
}

/// Whether a run may trust stored size+mtime to skip reading a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Read and hash every file.
    Full,
    /// Read only files whose size or mtime changed.
    Refresh,
}

/// The repository indexing service of the spec.
pub struct RepoIndexingService {
    store: Arc<dyn Store>,
    tokenizer: Tokenizer,
    locks_dir: PathBuf,
    /// The analyzers' version this service builds graphs with
    /// ([`ANALYZER_VERSION`]; another one only in tests).
    analyzer_version: u32,
}

/// What processing one walked file produced, unless it was skipped.
enum Fresh {
    /// Same content as stored; `touched` when only the mtime changed.
    Unchanged { touched: bool },
    /// New or changed content, with its code-graph analysis.
    Record(FileRecord, Box<Analyzed>),
}

type Outcome = Result<Fresh, SkipReason>;

impl RepoIndexingService {
    pub fn new(store: Arc<dyn Store>, tokenizer: Tokenizer, locks_dir: PathBuf) -> RepoIndexingService {
        RepoIndexingService { store, tokenizer, locks_dir, analyzer_version: ANALYZER_VERSION }
    }

    /// Indexes `root` for `resource_id`, reading every file. The stored index
    /// is replaced by the result; counts are relative to what was stored.
    pub fn index_resource(
        &self,
        resource_id: &str,
        root: &Path,
        options: &IndexOptions,
        progress: &dyn Progress,
    ) -> Result<RepoIndex, IndexError> {
        self.run(resource_id, root, options, Mode::Full, progress)
    }

    /// Brings the index of `resource_id` up to date, reading only files whose
    /// size or modification time changed (a first refresh is a full index).
    pub fn refresh_index(
        &self,
        resource_id: &str,
        root: &Path,
        options: &IndexOptions,
        progress: &dyn Progress,
    ) -> Result<RepoIndex, IndexError> {
        self.run(resource_id, root, options, Mode::Refresh, progress)
    }

    /// The stored index with its files, or `None` if the resource has none.
    pub fn get_index(&self, resource_id: &str) -> Result<Option<RepoIndex>, IndexError> {
        let Some(metadata) = self.store.index_metadata(resource_id)? else { return Ok(None) };
        let files = self.store.file_records(&metadata.index_id)?;
        let report = self.store.last_report(&metadata.index_id)?;
        let languages = RepoIndex::language_stats(&files);
        Ok(Some(RepoIndex { metadata, files, languages, report }))
    }

    /// The summary row of the resource's index.
    pub fn get_index_status(&self, resource_id: &str) -> Result<Option<IndexMetadata>, IndexError> {
        Ok(self.store.index_metadata(resource_id)?)
    }

    /// Deletes the resource's index. Refuses while an indexer holds it.
    pub fn remove_index(&self, resource_id: &str) -> Result<bool, IndexError> {
        let path = lock::lock_path(&self.locks_dir, resource_id);
        let _lock = self.acquire(&path, false, &path)?;
        Ok(self.store.remove_index(resource_id)?)
    }

    /// Marks `indexing` rows whose indexer is gone (its lock is free) as
    /// `stale`, with a message. Returns how many were repaired.
    pub fn cleanup_stale_indexing(&self) -> Result<usize, IndexError> {
        let mut repaired = 0;
        for meta in self.store.indexes_with_status(IndexStatus::Indexing)? {
            let path = lock::lock_path(&self.locks_dir, &meta.resource_id);
            let attempt = lock::try_lock(&path).map_err(|source| IndexError::Io { path: path.clone(), source })?;
            if let LockAttempt::Acquired(_held) = attempt {
                // Re-check under the lock: the run may have finished meanwhile.
                let current = self.store.index_metadata(&meta.resource_id)?;
                if current.is_some_and(|m| m.status == IndexStatus::Indexing) {
                    self.store.set_index_status(
                        &meta.index_id,
                        IndexStatus::Stale,
                        Some(
                            "interrupted: the indexing process exited before finishing; the next index run repairs it",
                        ),
                    )?;
                    repaired += 1;
                }
            }
        }
        Ok(repaired)
    }

    /// Takes the resource's lock, waiting for an indexer (or another holder)
    /// to finish. Whatever else writes per-resource state (the text index)
    /// holds it while it does.
    pub fn lock_resource(&self, resource_id: &str, root: &Path) -> Result<ResourceLock, IndexError> {
        self.acquire(&lock::lock_path(&self.locks_dir, resource_id), true, root)
    }

    /// The file of the resource's lock (see [`RepoIndexingService::lock_resource`]).
    pub fn lock_file(&self, resource_id: &str) -> PathBuf {
        lock::lock_path(&self.locks_dir, resource_id)
    }

    fn acquire(&self, lock_path: &Path, wait: bool, root: &Path) -> Result<ResourceLock, IndexError> {
        let io = |source| IndexError::Io { path: lock_path.to_path_buf(), source };
        match lock::try_lock(lock_path).map_err(io)? {
            LockAttempt::Acquired(held) => Ok(held),
            LockAttempt::Busy { pid } if !wait => Err(IndexError::Busy { path: root.to_path_buf(), pid }),
            LockAttempt::Busy { .. } => {
                tracing::info!("waiting for another indexer of {}", root.display());
                lock::lock_blocking(lock_path).map_err(io)
            }
        }
    }

    fn run(
        &self,
        resource_id: &str,
        root: &Path,
        options: &IndexOptions,
        mode: Mode,
        progress: &dyn Progress,
    ) -> Result<RepoIndex, IndexError> {
        let started = Instant::now();
        check_root(root)?;
        let filter = PathFilter::new(&options.include_globs, &options.exclude_globs)?;
        let lock_path = lock::lock_path(&self.locks_dir, resource_id);
        // A refresh that would wait for the lock first looks without it: one
        // that finds nothing changed writes nothing, so the refreshes of many
        // readers (a server's requests) run beside each other. One that finds
        // a change takes the lock and looks again.
        let mut lock = match mode == Mode::Refresh && options.wait_for_lock {
            true => None,
            false => Some(self.acquire(&lock_path, options.wait_for_lock, root)?),
        };
        loop {
            let metadata = self.store.ensure_index(resource_id)?;
            // What the last run stored is read while the tree is walked.
            progress.start("walking", 0);
            let walk_options = WalkOptions {
                hidden: options.hidden,
                follow_symlinks: options.follow_symlinks,
                threads: rayon::current_num_threads().max(1),
            };
            let (walked, last) = std::thread::scope(|scope| {
                let loader = scope.spawn(|| -> Result<LastRun, StoreError> {
                    Ok(LastRun {
                        files: self.store.file_records(&metadata.index_id)?,
                        skips: self.store.skipped_files(&metadata.index_id)?,
                        analyzer_version: self.store.last_report(&metadata.index_id)?.map(|r| r.analyzer_version),
                    })
                });
                let walked = walk(root, &walk_options);
                match loader.join() {
                    Ok(last) => (walked, last),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            });
            let last = last?;
            // A graph built by other analyzers is rebuilt whole, unchanged
            // files included (a first index has nothing to rebuild).
            let reanalyse = !last.files.is_empty() && last.analyzer_version != Some(self.analyzer_version);
            let mut report = IndexReport {
                analyzer_version: self.analyzer_version,
                reanalysed: reanalyse,
                ..IndexReport::default()
            };
            for (reason, path) in walked.skipped {
                note_skip(&mut report, reason, path);
            }
            let candidates = plan_candidates(walked.files, &filter, options, &mut report);
            tracing::info!(files = candidates.len(), elapsed_ms = started.elapsed().as_millis() as u64, "walked");
            if mode == Mode::Refresh
                && metadata.status == IndexStatus::Ready
                && !reanalyse
                && last.unchanged(&candidates, options)
            {
                // Nothing to read and nothing to write: the stored index stands.
                for entry in &candidates {
                    if let Some(reason) = last.skip_reason(entry, options) {
                        note_skip(&mut report, reason, entry.rel_path.clone());
                    }
                }
                report.unchanged = last.files.len() as u64;
                report.duration_ms = started.elapsed().as_millis() as u64;
                // Without the lock, a run that committed while this one read
                // could have given it the metadata of one run and the files of
                // the next: the answer stands only if the run is the same after.
                if lock.is_some() || self.store.index_metadata(resource_id)?.as_ref() == Some(&metadata) {
                    tracing::info!(elapsed_ms = report.duration_ms, "nothing changed");
                    let languages = RepoIndex::language_stats(&last.files);
                    return Ok(RepoIndex { metadata, files: last.files, languages, report: Some(report) });
                }
            }
            if lock.is_none() {
                lock = Some(self.acquire(&lock_path, options.wait_for_lock, root)?);
                continue;
            }

            // Files will be read and counted: the tokenizer's tables (tens of
            // milliseconds to decode) are built while the stored records are
            // gathered and the write transaction opens. A thread that cannot
            // start only loses the head start.
            let tokenizer = self.tokenizer;
            let _ = std::thread::Builder::new().name("tokenizer-preload".into()).spawn(move || tokenizer.preload());
            self.store.set_index_status(&metadata.index_id, IndexStatus::Indexing, None)?;
            return match self.run_locked(&metadata, candidates, last, report, options, mode, progress, started) {
                Ok(index) => Ok(index),
                Err(err) => {
                    let message = err.to_string();
                    if let Err(store_err) =
                        self.store.set_index_status(&metadata.index_id, IndexStatus::Error, Some(&message))
                    {
                        tracing::warn!("could not record the failure of {}: {store_err}", root.display());
                    }
                    Err(err)
                }
            };
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_locked(
        &self,
        metadata: &IndexMetadata,
        candidates: Vec<WalkEntry>,
        last: LastRun,
        mut report: IndexReport,
        options: &IndexOptions,
        mode: Mode,
        progress: &dyn Progress,
        started: Instant,
    ) -> Result<RepoIndex, IndexError> {
        let stored: HashMap<String, FileRecord> = last.files.into_iter().map(|f| (f.path.clone(), f)).collect();
        let known_skips: HashMap<String, SkippedFile> = last.skips.into_iter().map(|f| (f.path.clone(), f)).collect();
        // Re-analysing, no stored record lets a file be passed over.
        let reanalyse = report.reanalysed;
        if reanalyse {
            tracing::info!(
                "the index was built by other analyzers (version {:?}, these are {}): re-analysing every file",
                last.analyzer_version,
                self.analyzer_version
            );
        }

        // One write transaction for the whole run: graph rows stream into it
        // chunk by chunk; nothing is visible (and a crash changes nothing)
        // until it commits.
        let mut writer = self.store.begin_index_write(&metadata.index_id)?;
        progress.start(PHASE_INDEXING, candidates.len() as u64);
        let mut commit = IndexCommit::default();
        let mut files: Vec<FileRecord> = Vec::with_capacity(candidates.len());
        let mut pending = Vec::new();
        let mut reshaped: BTreeSet<agents_store::Reshaped> = BTreeSet::new();
        let mut graph = GraphReport::default();
        // A first index has no other files whose references could rebind;
        // a re-analysis resolves every file's references afresh.
        let rebind_others = !stored.is_empty() && !reanalyse;
        // Two-stage pipeline: while the pool reads and parses chunk k+1, this
        // thread writes chunk k. Chunks keep memory bounded and the write
        // order (hence row ids) deterministic.
        let process_chunk = |chunk: &[WalkEntry]| -> Vec<(Outcome, Option<u64>)> {
            chunk
                .par_iter()
                .map(|entry| {
                    let record = if reanalyse { None } else { stored.get(&entry.rel_path) };
                    let known = Known { record, skip: known_skips.get(&entry.rel_path) };
                    let result = self.process(&metadata.resource_id, entry, known, options, mode);
                    progress.advance(1);
                    result
                })
                .collect()
        };
        let chunks: Vec<&[WalkEntry]> = candidates.chunks(CHUNK).collect();
        std::thread::scope(|scope| -> Result<(), IndexError> {
            let process_chunk = &process_chunk;
            let mut next = chunks.first().map(|&c| scope.spawn(move || process_chunk(c)));
            for (i, chunk) in chunks.iter().enumerate() {
                let outcomes = match next.take().map(|handle| handle.join()) {
                    Some(Ok(outcomes)) => outcomes,
                    Some(Err(panic)) => std::panic::resume_unwind(panic),
                    None => unreachable!("a chunk is always spawned before it is read"),
                };
                next = chunks.get(i + 1).map(|&c| scope.spawn(move || process_chunk(c)));
                let mut sink = Sink {
                    stored: &stored,
                    report: &mut report,
                    commit: &mut commit,
                    files: &mut files,
                    graph: &mut graph,
                    pending: &mut pending,
                    reshaped: &mut reshaped,
                    rebind_others,
                };
                sink.absorb(chunk, outcomes, writer.as_mut())?;
            }
            Ok(())
        })?;
        progress.finish();
        let kept: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let mut removed: Vec<String> = stored.keys().filter(|p| !kept.contains(p.as_str())).cloned().collect();
        removed.sort();
        report.removed = removed.len() as u64;
        if rebind_others {
            // What a removed file defined may have kept other files'
            // references from binding (two definitions of one name), or
            // bound them through it.
            for path in &removed {
                reshaped.extend(writer.write_nodes(path, &[])?);
            }
        }
        writer.retire_paths(&removed)?;
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            rss_mb = rss_mb(),
            "read, hashed, counted, parsed"
        );

        progress.start("linking", 0);
        let paths: BTreeSet<String> = files.iter().map(|f| f.path.clone()).collect();
        let languages: HashMap<String, String> = files.iter().map(|f| (f.path.clone(), f.language.clone())).collect();
        let changed_paths: Vec<String> =
            pending.iter().map(|p| p.path.clone()).chain(removed.iter().cloned()).collect();
        let go_modules = go_modules(&candidates);
        let linker = Linker {
            resource_id: &metadata.resource_id,
            files: &paths,
            languages: &languages,
            go_modules: &go_modules,
        };
        let reshaped: Vec<agents_store::Reshaped> = reshaped.into_iter().collect();
        // Files added or removed, and manifests changed, may move where
        // imports lead (a module's file, a package's entry, a Go module path).
        let manifest = |p: &str| matches!(p.rsplit('/').next(), Some("go.mod" | "Cargo.toml" | "package.json"));
        let came_or_went: Vec<String> = (commit.upserts.iter())
            .filter(|f| !stored.contains_key(&f.path) || manifest(&f.path))
            .map(|f| f.path.clone())
            .chain(removed.iter().cloned())
            .collect();
        let changes =
            uko_index::RunChanges { changed_paths: &changed_paths, reshaped: &reshaped, came_or_went: &came_or_went };
        let (stats, re_resolved) = linker.link(writer.as_mut(), pending, &changes, rebind_others)?;
        progress.finish();
        graph.references = stats.references;
        graph.references_resolved = stats.references_resolved;
        graph.re_resolved = stats.re_resolved;
        report.graph = graph;
        commit.uko.re_resolved = re_resolved;
        commit.removed = removed;
        tracing::info!(elapsed_ms = started.elapsed().as_millis() as u64, rss_mb = rss_mb(), "references resolved");

        let languages = RepoIndex::language_stats(&files);
        commit.file_count = files.len() as u64;
        commit.token_estimate = files.iter().map(|f| f.token_count).sum();
        commit.primary_language = RepoIndex::primary_language(&languages);
        report.duration_ms = started.elapsed().as_millis() as u64;
        commit.report = report.clone();
        let metadata = writer.finish(&commit)?;
        // The pool's threads parsed what this thread has just freed: each
        // hands its pages back before the next phase allocates elsewhere.
        rayon::broadcast(|_| agents_core::memory::release_freed_memory());
        agents_core::memory::release_freed_memory();
        report.duration_ms = started.elapsed().as_millis() as u64;
        tracing::info!(elapsed_ms = report.duration_ms, rss_mb = rss_mb(), "committed");
        Ok(RepoIndex { metadata, files, languages, report: Some(report) })
    }

    /// Reads, classifies and measures one file. Returns the outcome and the
    /// number of bytes read (`None` when the stored state was trusted).
    fn process(
        &self,
        resource_id: &str,
        entry: &WalkEntry,
        known: Known<'_>,
        options: &IndexOptions,
        mode: Mode,
    ) -> (Outcome, Option<u64>) {
        if options.max_file_size.is_some_and(|max| entry.size > max) {
            return (Err(SkipReason::TooLarge), None);
        }
        if mode == Mode::Refresh {
            if let Some(old) = known.record
                && old.size_bytes == entry.size
                && old.last_modified == entry.modified
            {
                return (Ok(Fresh::Unchanged { touched: false }), None);
            }
            if let Some(skip) = known.skip
                && skip.size_bytes == entry.size
                && skip.last_modified == entry.modified
            {
                return (Err(skip.reason), None);
            }
        }
        let bytes = match read_text(&entry.abs_path, entry.size, options.max_file_size) {
            Ok(Content::Text(bytes)) => bytes,
            Ok(Content::Binary { probed }) => return (Err(SkipReason::Binary), Some(probed)),
            Err(_) => return (Err(SkipReason::Unreadable), None),
        };
        let read = bytes.len() as u64;
        if options.max_file_size.is_some_and(|max| read > max) {
            return (Err(SkipReason::TooLarge), Some(read));
        }
        let content_hash = sha256_hex(&bytes);
        if let Some(old) = known.record
            && old.content_hash == content_hash
        {
            return (Ok(Fresh::Unchanged { touched: old.last_modified != entry.modified }), Some(read));
        }
        let text = String::from_utf8_lossy(&bytes);
        let first_line = needs_first_line(&entry.rel_path).then(|| text.lines().next().unwrap_or(""));
        let language = detect_language(&entry.rel_path, first_line);
        let record = FileRecord {
            path: entry.rel_path.clone(),
            content_hash,
            token_count: self.tokenizer.count(&text) as u64,
            size_bytes: read,
            language: language.to_string(),
            last_modified: entry.modified.clone(),
        };
        let analyzed = uko_index::analyze(resource_id, &entry.rel_path, language, &text, &record.content_hash);
        (Ok(Fresh::Record(record, Box::new(analyzed))), Some(read))
    }
}

/// What the last run of an index stored.
struct LastRun {
    /// Indexed files, sorted by path.
    files: Vec<FileRecord>,
    /// Files skipped for their content, sorted by path.
    skips: Vec<SkippedFile>,
    /// The analyzers' version its report records (`None` before a first run).
    analyzer_version: Option<u32>,
}

impl LastRun {
    /// Whether a refresh over `candidates` would find exactly what this run
    /// stored: every stored file walked again with the same size and mtime,
    /// every content-skipped file too, and nothing new (files too large to
    /// read aside, which are skipped unread either way).
    fn unchanged(&self, candidates: &[WalkEntry], options: &IndexOptions) -> bool {
        let files: HashMap<&str, &FileRecord> = self.files.iter().map(|f| (f.path.as_str(), f)).collect();
        let skips: HashMap<&str, &SkippedFile> = self.skips.iter().map(|f| (f.path.as_str(), f)).collect();
        let (mut files_seen, mut skips_seen) = (0usize, 0usize);
        for entry in candidates {
            let too_large = options.max_file_size.is_some_and(|max| entry.size > max);
            if let Some(old) = files.get(entry.rel_path.as_str()) {
                if too_large || old.size_bytes != entry.size || old.last_modified != entry.modified {
                    return false;
                }
                files_seen += 1;
            } else if let Some(skip) = skips.get(entry.rel_path.as_str()) {
                if too_large || skip.size_bytes != entry.size || skip.last_modified != entry.modified {
                    return false;
                }
                skips_seen += 1;
            } else if !too_large {
                return false;
            }
        }
        files_seen == self.files.len() && skips_seen == self.skips.len()
    }

    /// Why an unchanged refresh skips `entry`, if it does.
    fn skip_reason(&self, entry: &WalkEntry, options: &IndexOptions) -> Option<SkipReason> {
        if options.max_file_size.is_some_and(|max| entry.size > max) {
            return Some(SkipReason::TooLarge);
        }
        self.skips.binary_search_by(|s| s.path.as_str().cmp(&entry.rel_path)).ok().map(|i| self.skips[i].reason)
    }
}

/// Each `go.mod`'s folder and the module path it declares (a few small
/// files, read again by every run that links: Go imports of the module's own
/// packages resolve through them).
fn go_modules(candidates: &[WalkEntry]) -> Vec<(String, String)> {
    candidates
        .iter()
        .filter(|e| agents_uko::model::file_name(&e.rel_path) == "go.mod")
        .filter_map(|e| {
            let text = std::fs::read_to_string(&e.abs_path).ok()?;
            let module = agents_uko::resolve::go_module_path(&text)?;
            Some((agents_uko::resolve::dir_of(&e.rel_path).to_string(), module.to_string()))
        })
        .collect()
}

/// The walked files a run considers, in path order: filters and the
/// total-size cap are decided from the walk alone, before anything is read.
fn plan_candidates(
    walked: Vec<WalkEntry>,
    filter: &PathFilter,
    options: &IndexOptions,
    report: &mut IndexReport,
) -> Vec<WalkEntry> {
    let mut candidates: Vec<WalkEntry> = Vec::with_capacity(walked.len());
    let mut planned_size = 0u64;
    for f in walked {
        if !filter.allows(&f.rel_path) {
            note_skip(report, SkipReason::Excluded, f.rel_path);
            continue;
        }
        let too_large = options.max_file_size.is_some_and(|max| f.size > max);
        if !too_large && options.max_total_size.is_some_and(|cap| planned_size + f.size > cap) {
            note_skip(report, SkipReason::TotalSizeLimit, f.rel_path);
            continue;
        }
        if !too_large {
            planned_size += f.size;
        }
        candidates.push(f);
    }
    candidates
}

/// Where a chunk's outcomes accumulate, in path order.
struct Sink<'a> {
    stored: &'a HashMap<String, FileRecord>,
    report: &'a mut IndexReport,
    commit: &'a mut IndexCommit,
    files: &'a mut Vec<FileRecord>,
    graph: &'a mut GraphReport,
    pending: &'a mut Vec<uko_index::PendingRefs>,
    /// Symbols that changed files define anew, no longer define, or define
    /// with another signature.
    reshaped: &'a mut BTreeSet<agents_store::Reshaped>,
    /// Whether references of unchanged files will be re-bound (then
    /// `reshaped` is gathered).
    rebind_others: bool,
}

impl Sink<'_> {
    fn absorb(
        &mut self,
        chunk: &[WalkEntry],
        outcomes: Vec<(Outcome, Option<u64>)>,
        writer: &mut dyn agents_store::IndexWrite,
    ) -> Result<(), StoreError> {
        for (entry, (outcome, bytes_read)) in chunk.iter().zip(outcomes) {
            if let Some(bytes) = bytes_read {
                self.report.files_read += 1;
                self.report.bytes_read += bytes;
            }
            match outcome {
                Err(reason) => {
                    if reason == SkipReason::Binary {
                        self.commit.skipped.push(SkippedFile {
                            path: entry.rel_path.clone(),
                            size_bytes: entry.size,
                            last_modified: entry.modified.clone(),
                            reason,
                        });
                    }
                    note_skip(self.report, reason, entry.rel_path.clone());
                }
                Ok(Fresh::Unchanged { touched }) => {
                    let mut record = self.stored[&entry.rel_path].clone();
                    if touched {
                        record.last_modified = entry.modified.clone();
                        self.commit.touched.push((record.path.clone(), record.last_modified.clone()));
                    }
                    self.report.unchanged += 1;
                    self.files.push(record);
                }
                Ok(Fresh::Record(record, analyzed)) => {
                    if self.stored.contains_key(&record.path) {
                        self.report.changed += 1;
                    } else {
                        self.report.added += 1;
                    }
                    let reshaped = writer.write_nodes(&analyzed.path, &analyzed.nodes)?;
                    // Only other files' references rebind, and a first index
                    // has none (nor does a re-analysis: every file's
                    // references are resolved afresh).
                    if self.rebind_others {
                        self.reshaped.extend(reshaped);
                    }
                    self.graph.files_analyzed += 1;
                    self.graph.nodes += analyzed.nodes.len() as u64;
                    self.graph.parse_warnings += analyzed.warnings as u64;
                    if let Some(warning) = &analyzed.first_warning
                        && self.graph.warning_examples.len() < WARNING_EXAMPLES
                    {
                        self.graph.warning_examples.push(format!("{}: {warning}", analyzed.path));
                    }
                    self.pending.push(analyzed.pending);
                    self.commit.upserts.push(record.clone());
                    self.files.push(record);
                }
            }
        }
        Ok(())
    }
}

/// What the store knows of a path from the previous run.
#[derive(Clone, Copy)]
struct Known<'a> {
    record: Option<&'a FileRecord>,
    skip: Option<&'a SkippedFile>,
}

enum Content {
    Text(Vec<u8>),
    /// NUL bytes in the first block; only `probed` bytes were read.
    Binary {
        probed: u64,
    },
}

/// Reads a file, stopping after the first block when it is binary, and one
/// byte past `limit` when it has one: a file that grew since it was walked
/// (or reports a size it does not have) cannot make a run read without end.
/// The walk listed only regular files; one replaced by a FIFO or a device
/// since then is refused by [`RegularFile::open`], which never blocks.
fn read_text(path: &Path, size_hint: u64, limit: Option<u64>) -> Result<Content, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let mut file = RegularFile::open(path)?.capped(limit);
    let capacity = size_hint.min(limit.unwrap_or(u64::MAX)).min(64 << 20) as usize;
    let mut bytes = Vec::with_capacity(capacity + 1);
    (&mut file).take(BINARY_PROBE as u64).read_to_end(&mut bytes).map_err(io)?;
    if bytes.contains(&0) {
        return Ok(Content::Binary { probed: bytes.len() as u64 });
    }
    file.read_to_end(&mut bytes).map_err(io)?;
    Ok(Content::Text(bytes))
}

/// Resident memory in MB, for `-v` progress logs (Linux; 0 elsewhere).
fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096 / (1 << 20))
}

fn check_root(root: &Path) -> Result<(), IndexError> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(IndexError::NotADirectory(root.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(IndexError::NotFound(root.to_path_buf())),
        Err(source) => Err(IndexError::Io { path: root.to_path_buf(), source }),
    }
}

fn note_skip(report: &mut IndexReport, reason: SkipReason, path: String) {
    *report.skipped.entry(reason).or_default() += 1;
    let examples = report.skipped_examples.entry(reason).or_default();
    if examples.len() < SKIP_EXAMPLES {
        examples.push(path);
    }
}

/// Include/exclude globs over relative paths; exclusions win.
struct PathFilter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl PathFilter {
    fn new(include: &[String], exclude: &[String]) -> Result<PathFilter, IndexError> {
        Ok(PathFilter { include: build_globs(include)?, exclude: build_globs(exclude)? })
    }

    fn allows(&self, path: &str) -> bool {
        if self.exclude.as_ref().is_some_and(|set| set.is_match(path)) {
            return false;
        }
        self.include.as_ref().is_none_or(|set| set.is_match(path))
    }
}

fn build_globs(globs: &[String]) -> Result<Option<GlobSet>, IndexError> {
    if globs.is_empty() {
        return Ok(None);
    }
    let mut builder = GlobSetBuilder::new();
    for g in globs {
        let glob = Glob::new(g).map_err(|e| IndexError::BadGlob { glob: g.clone(), message: e.kind().to_string() })?;
        builder.add(glob);
    }
    builder.build().map(Some).map_err(|e| IndexError::BadGlob { glob: globs.join(", "), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agents_store::{FileIndexStore, ProjectStore, SqliteStore};
    use std::time::{Duration, SystemTime};

    pub(super) struct Fixture {
        _home: tempfile::TempDir,
        pub(super) repo: tempfile::TempDir,
        pub(super) store: Arc<SqliteStore>,
        pub(super) service: RepoIndexingService,
        pub(super) resource_id: String,
    }

    pub(super) fn fixture() -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&home.path().join("agents.db")).unwrap());
        let service = RepoIndexingService::new(store.clone(), Tokenizer::default(), home.path().join("locks"));
        let p = store.create_project("p").unwrap();
        let r = store.link_resource(&p.project_id, &repo.path().to_string_lossy(), "repo").unwrap();
        Fixture { _home: home, repo, store, service, resource_id: r.resource_id }
    }

    impl Fixture {
        /// Takes the resource's lock, as another indexer or a syncing query would.
        pub(super) fn hold_lock(&self) -> ResourceLock {
            match lock::try_lock(&lock::lock_path(&self.service.locks_dir, &self.resource_id)).unwrap() {
                LockAttempt::Acquired(l) => l,
                LockAttempt::Busy { .. } => panic!("busy"),
            }
        }

        pub(super) fn write(&self, rel: &str, content: &[u8]) {
            let path = self.repo.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        // These wait for the resource lock: another test of this binary that
        // spawns a process (walk's mkfifo) forks while a lock file is open, and
        // the child holds the lock until it execs, so a run right after may see
        // it busy. Refusing a busy lock is tested on its own, without waiting.
        pub(super) fn refresh(&self, options: &IndexOptions) -> RepoIndex {
            let options = IndexOptions { wait_for_lock: true, ..options.clone() };
            self.service.refresh_index(&self.resource_id, self.repo.path(), &options, &NoProgress).unwrap()
        }
        fn full(&self, options: &IndexOptions) -> RepoIndex {
            let options = IndexOptions { wait_for_lock: true, ..options.clone() };
            self.service.index_resource(&self.resource_id, self.repo.path(), &options, &NoProgress).unwrap()
        }
        fn set_mtime(&self, rel: &str, t: SystemTime) {
            let f = std::fs::File::options().write(true).open(self.repo.path().join(rel)).unwrap();
            f.set_modified(t).unwrap();
        }
    }

    fn report(index: &RepoIndex) -> &IndexReport {
        index.report.as_ref().unwrap()
    }

    #[test]
    fn a_graph_of_other_analyzers_is_rebuilt_whole_once() {
        let mut fx = fixture();
        fx.write("a.py", b"def one():\n    return 1\n");
        fx.write("b.py", b"def two():\n    return one()\n");
        fx.write("logo.png", b"\x89PNG\0\0");
        // Built by the analyzers before these.
        fx.service.analyzer_version = ANALYZER_VERSION - 1;
        let old = fx.refresh(&IndexOptions::default());
        assert_eq!((report(&old).analyzer_version, report(&old).reanalysed), (ANALYZER_VERSION - 1, false));

        fx.service.analyzer_version = ANALYZER_VERSION;
        let new = fx.refresh(&IndexOptions::default());
        let r = report(&new);
        assert!(r.reanalysed);
        assert_eq!((r.analyzer_version, r.changed, r.unchanged, r.added), (ANALYZER_VERSION, 2, 0, 0));
        assert_eq!(r.graph.files_analyzed, 2);
        assert_eq!(r.skipped.get(&SkipReason::Binary), Some(&1));
        assert_eq!(new.files, old.files, "same content, same records");
        let stored = fx.service.get_index(&fx.resource_id).unwrap().unwrap();
        assert_eq!(stored.report.map(|r| r.analyzer_version), Some(ANALYZER_VERSION));

        // Once rebuilt, a refresh reads nothing.
        let again = fx.refresh(&IndexOptions::default());
        let r = report(&again);
        assert_eq!((r.reanalysed, r.unchanged, r.files_read, r.graph.files_analyzed), (false, 2, 0, 0));

        // A report from before the version was recorded reads as version 0.
        let legacy: IndexReport = serde_json::from_str(
            r#"{"added":1,"changed":0,"removed":0,"unchanged":0,
            "skipped":{},"skipped_examples":{},"files_read":1,"bytes_read":1,"duration_ms":1}"#,
        )
        .unwrap();
        assert_eq!((legacy.analyzer_version, legacy.reanalysed), (0, false));
    }

    #[test]
    fn reading_stops_one_byte_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grown.txt");
        std::fs::write(&path, "x".repeat(10_000)).unwrap();
        // The walk saw 10 bytes; the file has 10,000 now.
        match read_text(&path, 10, Some(100)).unwrap() {
            Content::Text(bytes) => assert_eq!(bytes.len(), 101),
            Content::Binary { .. } => panic!("text expected"),
        }
        match read_text(&path, 10, None).unwrap() {
            Content::Text(bytes) => assert_eq!(bytes.len(), 10_000),
            Content::Binary { .. } => panic!("text expected"),
        }
        let fifo = dir.path().join("pipe");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        assert!(
            matches!(read_text(&fifo, 0, None), Err(ReadError::NotRegular { .. })),
            "a FIFO is refused, not opened"
        );
    }

    #[test]
    fn first_index_records_hash_tokens_language_and_status() {
        let fx = fixture();
        fx.write("src/app.py", b"def main():\n    print('hello world')\n");
        fx.write("src/big.py", "VALUES = [\n".repeat(20).as_bytes());
        fx.write("src/lib.rs", b"pub fn add(a: i32, b: i32) -> i32 { a + b }\n");
        fx.write("bin/tool", b"#!/usr/bin/env python3\nprint(1)\n");
        let status = fx.service.get_index_status(&fx.resource_id).unwrap();
        assert!(status.is_none());
        let index = fx.refresh(&IndexOptions::default());
        assert_eq!(index.metadata.status, IndexStatus::Ready);
        assert_eq!(report(&index).added, 4);
        let paths: Vec<_> = index.files.iter().map(|f| (f.path.as_str(), f.language.as_str())).collect();
        assert_eq!(
            paths,
            [("bin/tool", "python"), ("src/app.py", "python"), ("src/big.py", "python"), ("src/lib.rs", "rust")]
        );
        let app = &index.files[1];
        assert_eq!(app.content_hash, sha256_hex(b"def main():\n    print('hello world')\n"));
        assert_eq!(app.token_count as usize, Tokenizer::default().count("def main():\n    print('hello world')\n"));
        assert_eq!(index.metadata.token_estimate, index.files.iter().map(|f| f.token_count).sum::<u64>());
        assert_eq!(index.metadata.primary_language, "python");
        let stored = fx.service.get_index(&fx.resource_id).unwrap().unwrap();
        assert_eq!(stored.files, index.files);
        assert_eq!(stored.metadata.status, IndexStatus::Ready);
    }

    #[test]
    fn refresh_reads_only_changed_files_and_reprocesses_only_changed_hashes() {
        let fx = fixture();
        for i in 0..20 {
            fx.write(&format!("m{i:02}.py"), format!("x = {i}\n").as_bytes());
        }
        let opts = IndexOptions::default();
        fx.refresh(&opts);

        // No change: nothing is read.
        let idx = fx.refresh(&opts);
        let r = report(&idx);
        assert_eq!((r.added, r.changed, r.removed, r.unchanged, r.files_read), (0, 0, 0, 20, 0));

        // Content change, mtime-only change, deletion, addition.
        fx.write("m00.py", b"x = 'changed'\n");
        let later = SystemTime::now() + Duration::from_secs(60);
        fx.set_mtime("m01.py", later);
        std::fs::remove_file(fx.repo.path().join("m02.py")).unwrap();
        fx.write("new.py", b"y = 1\n");
        let idx = fx.refresh(&opts);
        let r = report(&idx);
        assert_eq!((r.added, r.changed, r.removed, r.unchanged), (1, 1, 1, 18));
        assert_eq!(r.files_read, 3, "only the changed, touched and new files are read");
        let by_path: HashMap<_, _> = idx.files.iter().map(|f| (f.path.as_str(), f)).collect();
        assert_eq!(by_path["m00.py"].content_hash, sha256_hex(b"x = 'changed'\n"));
        assert!(!by_path.contains_key("m02.py"));

        // The touched file's new mtime was stored, so the next refresh reads nothing.
        let idx = fx.refresh(&opts);
        assert_eq!(report(&idx).files_read, 0);
        assert_eq!(report(&idx).unchanged, 20);

        // A full index reads everything but still finds nothing changed.
        let idx = fx.full(&opts);
        let r = report(&idx);
        assert_eq!((r.added, r.changed, r.removed, r.unchanged, r.files_read), (0, 0, 0, 20, 20));
    }

    #[test]
    fn an_unchanged_refresh_writes_nothing_and_reports_what_a_full_pass_would() {
        let fx = fixture();
        fx.write("a.py", b"def f():\n    return 1\n");
        fx.write("b/c.rs", b"fn main() {}\n");
        fx.write("image.bin", b"\x89PNG\0\0data");
        fx.write("big.txt", &vec![b'a'; 2000]);
        let opts = IndexOptions { max_file_size: Some(1000), ..IndexOptions::default() };
        let first = fx.refresh(&opts);
        let before = fx.store.index_metadata(&fx.resource_id).unwrap().unwrap();

        let again = fx.refresh(&opts);
        let after = fx.store.index_metadata(&fx.resource_id).unwrap().unwrap();
        assert_eq!(after, before, "nothing was written");
        assert_eq!(again.files, first.files);
        let r = report(&again);
        assert_eq!((r.added, r.changed, r.removed, r.unchanged, r.files_read), (0, 0, 0, 2, 0));
        assert_eq!(r.skipped.get(&SkipReason::Binary), Some(&1));
        assert_eq!(r.skipped.get(&SkipReason::TooLarge), Some(&1));

        // A new file, or a stored file gone, is not "unchanged".
        fx.write("d.py", b"x = 1\n");
        assert_eq!(report(&fx.refresh(&opts)).added, 1);
        std::fs::remove_file(fx.repo.path().join("a.py")).unwrap();
        assert_eq!(report(&fx.refresh(&opts)).removed, 1);
        // Nor is an index whose last run failed.
        fx.store.set_index_status(&after.index_id, IndexStatus::Error, Some("boom")).unwrap();
        fx.refresh(&opts);
        let repaired = fx.store.index_metadata(&fx.resource_id).unwrap().unwrap();
        assert_eq!(repaired.status, IndexStatus::Ready);
    }

    #[test]
    fn skips_are_counted_by_reason() {
        let fx = fixture();
        fx.write("ok.txt", b"hello");
        fx.write("image.bin", b"\x89PNG\0\0\0data");
        fx.write("big.txt", &vec![b'a'; 2000]);
        fx.write("vendor/lib.js", b"var x;");
        fx.write("notes.md", b"# notes");
        let idx = fx.refresh(&IndexOptions::default());
        assert_eq!(report(&idx).skipped.get(&SkipReason::Binary), Some(&1));
        let idx = fx.refresh(&IndexOptions::default());
        assert_eq!(report(&idx).files_read, 0, "a known binary is not read again");
        assert_eq!(report(&idx).skipped.get(&SkipReason::Binary), Some(&1), "but still reported");
        let options = IndexOptions {
            max_file_size: Some(1000),
            exclude_globs: vec!["vendor/**".into()],
            ..IndexOptions::default()
        };
        let idx = fx.refresh(&options);
        let r = report(&idx);
        assert_eq!(r.skipped.get(&SkipReason::Binary), Some(&1));
        assert_eq!(r.skipped.get(&SkipReason::TooLarge), Some(&1));
        assert_eq!(r.skipped.get(&SkipReason::Excluded), Some(&1));
        assert_eq!(r.skipped_examples[&SkipReason::Binary], ["image.bin"]);
        let paths: Vec<_> = idx.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["notes.md", "ok.txt"]);

        let only_md = IndexOptions { include_globs: vec!["*.md".into()], ..options.clone() };
        let idx = fx.refresh(&only_md);
        assert_eq!(idx.files.len(), 1);
        assert_eq!(report(&idx).removed, 1, "ok.txt left the index");

        let capped = IndexOptions { max_total_size: Some(6), ..IndexOptions::default() };
        let idx = fx.refresh(&capped);
        // Decided from sizes before reading, in path order: big.txt (2000 B),
        // image.bin (11 B) and notes.md (7 B) do not fit, ok.txt (5 B) does,
        // and then vendor/lib.js (6 B) no longer fits.
        assert_eq!(report(&idx).skipped.get(&SkipReason::TotalSizeLimit), Some(&4));
        assert_eq!(idx.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["ok.txt"]);
    }

    #[test]
    fn bad_root_and_bad_glob_are_errors_that_change_nothing() {
        let fx = fixture();
        let err = fx
            .service
            .refresh_index(&fx.resource_id, Path::new("/no/such/dir"), &IndexOptions::default(), &NoProgress)
            .unwrap_err();
        assert!(matches!(err, IndexError::NotFound(_)));
        let opts = IndexOptions { exclude_globs: vec!["a[".into()], ..IndexOptions::default() };
        let err = fx.service.refresh_index(&fx.resource_id, fx.repo.path(), &opts, &NoProgress).unwrap_err();
        assert!(matches!(err, IndexError::BadGlob { .. }), "{err}");
        assert!(fx.service.get_index_status(&fx.resource_id).unwrap().is_none(), "no index row was created");
    }

    #[test]
    fn a_waiting_refresh_that_finds_nothing_changed_does_not_wait_for_the_lock() {
        let fx = fixture();
        fx.write("a.py", b"a = 1\n");
        fx.refresh(&IndexOptions::default());
        let held = fx.hold_lock();
        // Another holder of the lock (a query syncing, an indexer) does not
        // hold up a refresh that writes nothing.
        let waiting = IndexOptions { wait_for_lock: true, ..IndexOptions::default() };
        let idx = fx.service.refresh_index(&fx.resource_id, fx.repo.path(), &waiting, &NoProgress).unwrap();
        assert_eq!(report(&idx).unchanged, 1);
        assert_eq!(idx.files.len(), 1);
        drop(held);
    }

    #[test]
    fn concurrent_indexer_is_refused_and_orphans_are_repaired() {
        let fx = fixture();
        fx.write("a.py", b"a = 1\n");
        fx.refresh(&IndexOptions::default());
        let held = fx.hold_lock();
        let err = fx
            .service
            .refresh_index(&fx.resource_id, fx.repo.path(), &IndexOptions::default(), &NoProgress)
            .unwrap_err();
        assert!(matches!(err, IndexError::Busy { pid: Some(_), .. }), "{err}");

        // A live indexer's row is left alone ...
        let meta = fx.store.index_metadata(&fx.resource_id).unwrap().unwrap();
        fx.store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
        assert_eq!(fx.service.cleanup_stale_indexing().unwrap(), 0);
        // ... a dead one's is marked stale, and its files are intact.
        drop(held);
        assert_eq!(fx.service.cleanup_stale_indexing().unwrap(), 1);
        let meta = fx.store.index_metadata(&fx.resource_id).unwrap().unwrap();
        assert_eq!(meta.status, IndexStatus::Stale);
        assert!(meta.error_message.unwrap().contains("interrupted"));
        assert_eq!(fx.store.file_records(&meta.index_id).unwrap().len(), 1);
        // The next run repairs it.
        let idx = fx.refresh(&IndexOptions::default());
        assert_eq!(idx.metadata.status, IndexStatus::Ready);
        assert_eq!(report(&idx).unchanged, 1);
    }

    #[test]
    fn removing_an_index_deletes_its_files() {
        let fx = fixture();
        fx.write("a.py", b"a = 1\n");
        fx.refresh(&IndexOptions::default());
        assert!(fx.service.remove_index(&fx.resource_id).unwrap());
        assert!(fx.service.get_index(&fx.resource_id).unwrap().is_none());
        assert!(!fx.service.remove_index(&fx.resource_id).unwrap());
    }
}

#[cfg(test)]
mod graph_tests {
    use super::*;

    use super::tests::{Fixture as Repo, fixture as repo};
    use agents_store::CodeGraphStore;
    use std::collections::BTreeMap;

    impl Repo {
        fn put(&self, rel: &str, text: &str) {
            self.write(rel, text.as_bytes());
        }
        fn update(&self) -> RepoIndex {
            self.refresh(&IndexOptions::default())
        }
        fn uri(&self, rest: &str) -> String {
            format!("uko://{}/{rest}", self.resource_id)
        }
    }

    const LIB_V1: &str = "mod util;\n\npub fn run() -> u32 {\n    util::helper()\n}\n\npub fn stable() {}\n";
    const UTIL: &str = "pub fn helper() -> u32 {\n    42\n}\n";

    #[test]
    fn nodes_edges_and_provenance_are_stored() {
        let r = repo();
        r.put("src/lib.rs", LIB_V1);
        r.put("src/util.rs", UTIL);
        let idx = r.update();
        let graph = &report(&idx).graph;
        assert_eq!(graph.files_analyzed, 2);
        assert!(graph.nodes >= 5, "{graph:?}");
        let index_id = &idx.metadata.index_id;
        let run = r.store.uko_node(index_id, &r.uri("src/lib.rs#run")).unwrap().expect("run is a node");
        assert_eq!(run.node.kind, "function");
        assert_eq!(run.node.parent_uri.as_deref(), Some(r.uri("src/lib.rs").as_str()));
        // The stored range slices back to exactly the declaration.
        let slice = &LIB_V1[run.node.start_byte as usize..run.node.end_byte as usize];
        assert!(slice.starts_with("pub fn run() -> u32 {") && slice.ends_with('}'), "{slice:?}");
        // `mod util;` resolved to the file, the call to the function in it.
        let refs = r.store.uko_refs_within(index_id, &r.uri("src/lib.rs")).unwrap();
        let import = refs.iter().find(|x| x.kind == "import").expect("mod util is an import");
        assert_eq!(import.resolved_path.as_deref(), Some("src/util.rs"));
        let call = refs.iter().find(|x| x.kind == "calls" && x.target.ends_with("helper")).expect("a call");
        assert_eq!(call.resolved_uri.as_deref(), Some(r.uri("src/util.rs#helper").as_str()));
    }

    #[test]
    fn a_run_naming_more_symbols_than_a_lookup_by_name_takes_still_resolves() {
        // More distinct names than `NAMED_LOOKUP_LIMIT`: the symbol table is
        // read whole and keeps only the names references use.
        let r = repo();
        r.put("src/lib.rs", LIB_V1);
        r.put("src/util.rs", UTIL);
        let calls: String = (0..crate::uko_index::NAMED_LOOKUP_LIMIT + 10).map(|i| format!("    f{i}();\n")).collect();
        r.put("src/many.rs", &format!("pub fn many() {{\n{calls}}}\n\nfn f7() {{}}\n"));
        let idx = r.update();
        let index_id = &idx.metadata.index_id;
        let refs = r.store.uko_refs_within(index_id, &r.uri("src/lib.rs#run")).unwrap();
        let call = refs.iter().find(|x| x.kind == "calls" && x.target.ends_with("helper")).expect("a call");
        assert_eq!(call.resolved_uri.as_deref(), Some(r.uri("src/util.rs#helper").as_str()));
        let refs = r.store.uko_refs_within(index_id, &r.uri("src/many.rs#many")).unwrap();
        let resolved: Vec<&str> = refs.iter().filter_map(|x| x.resolved_uri.as_deref()).collect();
        assert_eq!(resolved, [r.uri("src/many.rs#f7").as_str()]);
    }

    fn report(index: &RepoIndex) -> &IndexReport {
        index.report.as_ref().unwrap()
    }

    #[test]
    fn the_stores_neighbour_query_equals_its_parts_for_every_node_and_edge_kind() {
        let r = repo();
        r.put("src/lib.rs", LIB_V1);
        r.put("src/util.rs", UTIL);
        let idx = r.update();
        let index_id = &idx.metadata.index_id;
        let mut uris: Vec<String> = r.store.uko_all_nodes(index_id).unwrap().into_iter().map(|n| n.node.uri).collect();
        uris.push(r.uri("src/gone.rs#nothing"));
        let mut kinds = std::collections::BTreeSet::new();
        for uri in &uris {
            let fast = r.store.uko_neighbors(index_id, uri).unwrap();
            assert_eq!(fast, agents_store::neighbors_from_parts(r.store.as_ref(), index_id, uri).unwrap(), "{uri}");
            kinds.extend(fast.into_iter().map(|(_, kind, outgoing)| (kind, outgoing)));
        }
        // Containment both ways, and resolved references both ways, were compared.
        for kind in [("contains", false), ("contains", true), ("calls", true), ("calls", false)] {
            assert!(kinds.contains(&(kind.0.to_owned(), kind.1)), "{kind:?} in {kinds:?}");
        }
    }

    #[test]
    fn revisions_are_kept_across_refreshes() {
        let r = repo();
        r.put("src/lib.rs", LIB_V1);
        r.put("src/util.rs", UTIL);
        let first = r.update();
        let index_id = first.metadata.index_id.clone();
        let run_uri = r.uri("src/lib.rs#run");
        let stable_uri = r.uri("src/lib.rs#stable");
        let stable_v1 = r.store.uko_node(&index_id, &stable_uri).unwrap().unwrap();

        // Change `run`, leave `stable` alone but move it down a line.
        r.put(
            "src/lib.rs",
            &LIB_V1.replace("util::helper()", "util::helper() + 1").replace("\npub fn stable", "\n\npub fn stable"),
        );
        let second = r.update();
        assert_eq!(report(&second).graph.files_analyzed, 1, "only the changed file is parsed");
        let revisions = r.store.uko_revisions(&index_id, &run_uri).unwrap();
        assert_eq!(revisions.len(), 2, "{revisions:#?}");
        let (new, old) = (&revisions[0], &revisions[1]);
        assert!(new.is_current && !old.is_current);
        assert_eq!(new.revision_of, Some(old.node_id));
        assert_eq!(old.valid_until.as_deref(), Some(new.valid_from.as_str()));
        // An unchanged symbol keeps its revision; only its position moved.
        let stable_v2 = r.store.uko_node(&index_id, &stable_uri).unwrap().unwrap();
        assert_eq!(stable_v2.node_id, stable_v1.node_id);
        assert_eq!(stable_v2.node.start_line, stable_v1.node.start_line + 1);
        assert_eq!(r.store.uko_revisions(&index_id, &stable_uri).unwrap().len(), 1);

        // Deleting the function retires it; history stays readable.
        r.put("src/lib.rs", "mod util;\n\npub fn stable() {}\n");
        r.update();
        assert!(r.store.uko_node(&index_id, &run_uri).unwrap().is_none());
        let revisions = r.store.uko_revisions(&index_id, &run_uri).unwrap();
        assert_eq!(revisions.len(), 2);
        assert!(revisions.iter().all(|x| !x.is_current && x.valid_until.is_some()));
    }

    #[test]
    fn edges_into_a_changed_file_are_rebound() {
        let r = repo();
        r.put("src/lib.rs", LIB_V1);
        r.put("src/util.rs", UTIL);
        let idx = r.update();
        let index_id = idx.metadata.index_id.clone();
        let call = |r: &Repo| {
            r.store
                .uko_refs_within(&index_id, &r.uri("src/lib.rs#run"))
                .unwrap()
                .into_iter()
                .find(|x| x.kind == "calls" && x.target.ends_with("helper"))
                .unwrap()
        };
        assert!(call(&r).resolved_uri.is_some());
        // The callee disappears: the caller's edge (in an unchanged file) is unbound.
        r.put("src/util.rs", "pub fn other() {}\n");
        let idx = r.update();
        assert_eq!(report(&idx).graph.files_analyzed, 1);
        assert!(report(&idx).graph.re_resolved >= 1);
        assert_eq!(call(&r).resolved_uri, None);
        // It comes back: the edge binds again.
        r.put("src/util.rs", UTIL);
        r.update();
        assert_eq!(call(&r).resolved_uri.as_deref(), Some(r.uri("src/util.rs#helper").as_str()));
    }

    /// What the call to `target` in `app.py`'s `main` resolved to.
    fn bound_in_main(r: &Repo, index_id: &str, target: &str) -> Option<String> {
        r.store
            .uko_refs_within(index_id, &r.uri("app.py#main"))
            .unwrap()
            .into_iter()
            .find(|x| x.kind == "calls" && x.target == target)
            .unwrap()
            .resolved_uri
    }

    #[test]
    fn a_name_read_through_a_package_binds_where_the_package_imports_it_from() {
        let r = repo();
        r.put("pkg/__init__.py", "from .utils import echo\n");
        r.put("pkg/utils.py", "def echo(m):\n    return m\n\ndef style(t):\n    return t\n\ndef extra():\n    pass\n");
        r.put(
            "app.py",
            "import pkg\nfrom pkg import style\n\ndef main():\n    pkg.echo(style('hi'))\n    pkg.extra()\n",
        );
        let idx = r.update();
        let bound = |r: &Repo, target: &str| bound_in_main(r, &idx.metadata.index_id, target);
        assert_eq!(bound(&r, "pkg.echo").as_deref(), Some(r.uri("pkg/utils.py#echo").as_str()));
        // `style` is not imported by the package; the unique namesake rule finds it.
        assert_eq!(bound(&r, "style").as_deref(), Some(r.uri("pkg/utils.py#style").as_str()));
        assert_eq!(bound(&r, "pkg.extra"), None, "the package does not bring it in");
        // Only the package's entry file changes: what it now brings in binds
        // in the unchanged caller.
        r.put("pkg/__init__.py", "from .utils import echo, extra\n");
        let idx = r.update();
        assert_eq!(report(&idx).graph.files_analyzed, 1);
        assert_eq!(bound(&r, "pkg.extra").as_deref(), Some(r.uri("pkg/utils.py#extra").as_str()));
        // Only the caller changes: the entry is read back from the store.
        r.put("app.py", "import pkg\n\ndef main():\n    pkg.echo(1)\n    pkg.other()\n");
        r.update();
        assert_eq!(bound(&r, "pkg.echo").as_deref(), Some(r.uri("pkg/utils.py#echo").as_str()));
        assert_eq!(bound(&r, "pkg.other"), None);
    }

    /// Every reference of the index as (file, line, kind, target, what it
    /// resolved to without the resource's id), sorted.
    fn bindings(r: &Repo, index_id: &str) -> Vec<(String, i64, String, String, Option<String>)> {
        let local = |uri: String| uri.split_once(&format!("uko://{}/", r.resource_id)).map(|(_, rest)| rest.to_owned());
        let mut out: Vec<_> = r
            .store
            .uko_all_refs(index_id)
            .unwrap()
            .into_iter()
            .map(|x| (x.path, x.line, x.kind, x.target, x.resolved_uri.and_then(local)))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_refreshed_package_entry_binds_its_importers_as_a_fresh_index_does() {
        let files = |init: &str| {
            [
                ("pkg/__init__.py", init.to_owned()),
                ("pkg/utils.py", "def echo(m):\n    return m\n\ndef extra():\n    pass\n".to_owned()),
                ("pkg/other.py", "def echo(m):\n    return m\n".to_owned()),
                ("app.py", "import pkg\n\ndef main():\n    pkg.echo(1)\n    pkg.extra()\n".to_owned()),
                ("cli.py", "from pkg import echo\n\ndef run():\n    echo(2)\n".to_owned()),
            ]
        };
        let r = repo();
        for (path, text) in files("from .utils import echo, extra\n") {
            r.put(path, &text);
        }
        let idx = r.update();
        assert_eq!(
            bound_in_main(&r, &idx.metadata.index_id, "pkg.extra").as_deref(),
            Some(r.uri("pkg/utils.py#extra").as_str())
        );
        // Only the entry changes: it drops `extra` and takes `echo` from
        // elsewhere. The old targets still exist, yet the unchanged files'
        // calls bind as a fresh index of the same tree binds them.
        let after = "from .other import echo\n";
        r.put("pkg/__init__.py", after);
        let idx = r.update();
        assert_eq!(report(&idx).graph.files_analyzed, 1);
        let index_id = idx.metadata.index_id.clone();
        assert_eq!(bound_in_main(&r, &index_id, "pkg.extra"), None, "the package does not bring it in any more");
        assert_eq!(bound_in_main(&r, &index_id, "pkg.echo").as_deref(), Some(r.uri("pkg/other.py#echo").as_str()));
        let fresh = repo();
        for (path, text) in files(after) {
            fresh.put(path, &text);
        }
        let fresh_idx = fresh.update();
        assert_eq!(bindings(&r, &index_id), bindings(&fresh, &fresh_idx.metadata.index_id));
    }

    /// Runs `steps` over `start` (each a list of writes, `None` removing the
    /// file), refreshing after each; after every step the refreshed graph's
    /// bindings must be a fresh index's of the same files. Returns the
    /// binding of `(file, target)` after each step.
    fn refresh_as_fresh(
        start: &[(&str, &str)],
        steps: &[&[(&str, Option<&str>)]],
        watch: (&str, &str),
    ) -> Vec<Option<String>> {
        let r = repo();
        let mut files: BTreeMap<String, String> = BTreeMap::new();
        for (path, text) in start {
            r.put(path, text);
            files.insert(path.to_string(), text.to_string());
        }
        r.update();
        let mut seen = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            for (path, text) in step.iter() {
                match text {
                    Some(text) => {
                        r.put(path, text);
                        files.insert(path.to_string(), text.to_string());
                    }
                    None => {
                        std::fs::remove_file(r.repo.path().join(path)).unwrap();
                        files.remove(*path);
                    }
                }
            }
            let idx = r.update();
            let fresh = repo();
            for (path, text) in &files {
                fresh.put(path, text);
            }
            let fresh_idx = fresh.update();
            let refreshed = bindings(&r, &idx.metadata.index_id);
            assert_eq!(refreshed, bindings(&fresh, &fresh_idx.metadata.index_id), "step {}", i + 1);
            let watched = refreshed.iter().find(|b| b.0 == watch.0 && b.3 == watch.1);
            seen.push(watched.and_then(|b| b.4.clone()));
        }
        seen
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_namesake_comes_and_goes() {
        let echo = "def echo(m):\n    return m\n";
        let seen = refresh_as_fresh(
            &[("a.py", echo), ("b.py", echo), ("app.py", "def main():\n    echo(1)\n")],
            &[&[("b.py", Some("def other(m):\n    return m\n"))], &[("b.py", Some(echo))], &[("b.py", None)]],
            ("app.py", "echo"),
        );
        // Two definitions bind nothing; one binds it.
        assert_eq!(seen, [Some("a.py#echo".to_owned()), None, Some("a.py#echo".to_owned())]);
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_declared_result_changes() {
        let m = |result: &str| {
            format!(
                "class A:\n    def run(self):\n        pass\n\n\nclass B:\n    def run(self):\n        pass\n\n\n\
                 def make() -> {result}:\n    return {result}()\n"
            )
        };
        let (to_a, to_b) = (m("A"), format!("# now B\n{}", m("B")));
        let seen = refresh_as_fresh(
            &[("m.py", &to_a), ("app.py", "from m import make\n\ndef main():\n    make().run()\n")],
            &[&[("m.py", Some(&to_b))], &[("m.py", Some(&to_a))]],
            ("app.py", "make().run"),
        );
        assert_eq!(seen, [Some("m.py#B.run".to_owned()), Some("m.py#A.run".to_owned())]);
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_struct_stops_embedding() {
        let engine = |field: &str| {
            format!(
                "package g\n\ntype Engine struct {{\n\t{field}\n}}\n\nfunc New() *Engine {{\n\treturn &Engine{{}}\n}}\n"
            )
        };
        let seen = refresh_as_fresh(
            &[
                ("go.mod", "module example.com/g\n"),
                ("engine.go", &engine("RouterGroup")),
                ("group.go", "package g\n\ntype RouterGroup struct{}\n\nfunc (g *RouterGroup) GET() {}\n"),
                ("app.go", "package g\n\nfunc run() {\n\tNew().GET()\n}\n"),
            ],
            &[&[("engine.go", Some(&engine("name string")))], &[("engine.go", Some(&engine("RouterGroup")))]],
            ("app.go", "New().GET"),
        );
        assert_eq!(seen, [None, Some("group.go#RouterGroup.GET".to_owned())]);
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_an_imported_file_goes_and_comes_back() {
        let util = "def helper():\n    pass\n";
        let seen = refresh_as_fresh(
            &[("pkg/util.py", util), ("app.py", "from pkg.util import helper\n\ndef main():\n    helper()\n")],
            &[&[("pkg/util.py", None)], &[("pkg/util.py", Some(util))]],
            ("app.py", "pkg.util"),
        );
        assert_eq!(seen, [None, Some("pkg/util.py".to_owned())]);
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_base_class_comes_and_goes() {
        let base = "class Base:\n    def send(self):\n        pass\n";
        let seen = refresh_as_fresh(
            &[
                ("base.py", base),
                ("app.py", "from base import Base\n\nclass Sub(Base):\n    def go(self):\n        self.send()\n"),
            ],
            &[&[("base.py", Some("class Other:\n    def send(self):\n        pass\n"))], &[("base.py", Some(base))]],
            ("app.py", "self.send"),
        );
        assert_eq!(seen, [None, Some("base.py#Base.send".to_owned())]);
        // Only the base binds anew (a namesake class goes): the subclass's
        // `self.send` follows, though no `send` changed.
        let seen = refresh_as_fresh(
            &[
                ("base.py", base),
                ("other.py", "class Base:\n    def other(self):\n        pass\n"),
                ("app.py", "class Sub(Base):\n    def go(self):\n        self.send()\n"),
            ],
            &[&[("other.py", Some("class Thing:\n    def other(self):\n        pass\n"))]],
            ("app.py", "self.send"),
        );
        assert_eq!(seen, [Some("base.py#Base.send".to_owned())]);
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_package_module_comes_back() {
        let module = "class X:\n    pass\n";
        let seen = refresh_as_fresh(
            &[("pkg/__init__.py", "VERSION = 1\n"), ("pkg/mod.py", module), ("app.py", "from pkg.mod import X\n")],
            &[&[("pkg/mod.py", None)], &[("pkg/mod.py", Some(module))]],
            ("app.py", "pkg.mod"),
        );
        assert_eq!(seen[1].as_deref(), Some("pkg/mod.py"));
    }

    #[test]
    fn a_refresh_binds_as_a_fresh_index_when_a_crate_root_or_a_renamed_import_changes() {
        let main = "mod util;\nmod other;\n\nfn main() {\n    util::helper();\n}\n";
        let seen = refresh_as_fresh(
            &[
                ("src/main.rs", main),
                ("src/util.rs", "pub fn helper() {}\n"),
                ("src/other.rs", "use crate::util::helper;\n\npub fn run() {\n    helper();\n}\n"),
            ],
            &[&[("src/main.rs", None)], &[("src/main.rs", Some(main))]],
            ("src/other.rs", "helper"),
        );
        assert_eq!(seen.last().cloned().flatten().as_deref(), Some("src/util.rs#helper"));
        let getchar = "def getchar():\n    pass\n";
        let seen = refresh_as_fresh(
            &[("m.py", getchar), ("app.py", "from m import getchar as f\n\ndef main():\n    f()\n")],
            &[&[("m.py", Some("def other():\n    pass\n"))], &[("m.py", Some(getchar))]],
            ("app.py", "f"),
        );
        assert_eq!(seen, [None, Some("m.py#getchar".to_owned())]);
    }

    #[test]
    fn an_unparseable_file_is_still_indexed_with_a_warning() {
        let r = repo();
        r.put("src/broken.rs", "pub fn ok() {}\n\nfn broken( {\n    let x = ;\n}\n");
        let idx = r.update();
        assert_eq!(idx.files.len(), 1);
        assert!(report(&idx).graph.parse_warnings >= 1);
        assert_eq!(report(&idx).graph.warning_examples, ["src/broken.rs: line 3: missing syntax; the tree is partial"]);
        let nodes = r.store.uko_file_nodes(&idx.metadata.index_id, "src/broken.rs").unwrap();
        assert_eq!(nodes[0].node.kind, "module");
        assert!(nodes.iter().any(|n| n.node.name == "ok"), "the parsable part is still extracted");
    }
}
