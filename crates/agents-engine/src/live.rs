//! Live refresh: watched resources are refreshed soon after they change, so a
//! long-running process (`agents mcp`, `agents watch`) answers from an index
//! that is already current instead of walking the tree on every request.
//!
//! Each watched resource has a file-system watcher (`notify`: inotify,
//! FSEvents, ...) and a generation counter that every relevant event bumps.
//! A refresh records the generation it started at; its outcome stays valid
//! while the generation has not moved, so an edit made during a refresh is
//! never lost: it makes the next request (or the next debounced refresh)
//! refresh again. After `debounce` without events, a background thread
//! refreshes the index and its search indexes and reports it.
//!
//! Events under `.git` and under `$AGENTS_HOME` (the process's own writes)
//! are ignored, however the home is spelled (relative, through a symbolic
//! link): otherwise a home inside the repository would make every refresh
//! trigger the next. A watcher that cannot start (an inotify limit) is reported
//! and the resource is simply refreshed on every request, as without one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agents_acms::indexing::NoProgress;
use notify::{EventKind, RecursiveMode, Watcher};

use crate::{Engine, EngineError, IndexMode, IndexOutcome};

/// Quiet time after the last change before a watched resource is refreshed.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

/// What one background refresh did.
#[derive(Clone, Debug)]
pub struct LiveRefresh {
    /// The resource's root.
    pub root: PathBuf,
    /// The refreshed index and the search sync, or why the refresh failed.
    pub result: Result<(Arc<IndexOutcome>, agents_acms::query::SyncReport), Arc<EngineError>>,
    pub elapsed: Duration,
}

type OnRefresh = dyn Fn(&LiveRefresh) + Send + Sync;

/// The watched resources of one process.
pub struct LiveIndex {
    engine: Arc<Engine>,
    debounce: Duration,
    on_refresh: Arc<OnRefresh>,
    watched: Mutex<BTreeMap<PathBuf, Arc<Watched>>>,
    /// The refreshes callers share, by the path they asked for.
    flights: Mutex<BTreeMap<PathBuf, Arc<Flight>>>,
}

/// The refreshes of one path: at most one runs; callers that arrive while it
/// runs share the next.
#[derive(Default)]
struct Flight {
    state: Mutex<FlightState>,
    ended: std::sync::Condvar,
}

#[derive(Default)]
struct FlightState {
    running: bool,
    /// How many refreshes have started (each one's number).
    started: u64,
    /// The last refresh that succeeded: its number and outcome.
    last: Option<(u64, Arc<IndexOutcome>)>,
    /// Callers waiting for a refresh that started after them.
    waiting: usize,
}

impl Flight {
    fn lock(&self) -> std::sync::MutexGuard<'_, FlightState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The outcome of a refresh that started after this call: one that
    /// another caller runs, or `refresh` (when none runs, or the shared one
    /// failed: its error is its caller's).
    fn share<E>(&self, refresh: impl FnOnce() -> Result<IndexOutcome, E>) -> Result<Arc<IndexOutcome>, E> {
        let mut state = self.lock();
        let needed = state.started + 1;
        loop {
            if let Some((number, outcome)) = &state.last
                && *number >= needed
            {
                return Ok(outcome.clone());
            }
            if !state.running {
                break;
            }
            state.waiting += 1;
            state = self.ended.wait(state).unwrap_or_else(|e| e.into_inner());
            state.waiting -= 1;
        }
        state.running = true;
        state.started += 1;
        let number = state.started;
        drop(state);
        // Ends the run however `refresh` ends, a panic included.
        let _running = Running(self);
        let outcome = Arc::new(refresh()?);
        self.lock().last = Some((number, outcome.clone()));
        Ok(outcome)
    }
}

/// Marks a [`Flight`]'s refresh ended when dropped, and wakes its waiters.
struct Running<'a>(&'a Flight);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.lock().running = false;
        self.0.ended.notify_all();
    }
}

/// One watched resource.
struct Watched {
    root: PathBuf,
    /// Bumped by every relevant file-system event (shared with the watcher's callback).
    generation: Arc<AtomicU64>,
    /// The last refresh's outcome and the generation it started at.
    fresh: Mutex<Option<(u64, Arc<IndexOutcome>)>>,
    /// Kept alive for as long as the resource is watched.
    _watcher: notify::RecommendedWatcher,
}

impl Watched {
    /// The last outcome, if nothing changed since its refresh started.
    fn current(&self) -> Option<Arc<IndexOutcome>> {
        let fresh = self.fresh.lock().unwrap_or_else(|e| e.into_inner());
        match &*fresh {
            Some((generation, outcome)) if *generation == self.generation.load(Ordering::SeqCst) => {
                Some(outcome.clone())
            }
            _ => None,
        }
    }

    fn record(&self, generation: u64, outcome: Arc<IndexOutcome>) {
        let mut fresh = self.fresh.lock().unwrap_or_else(|e| e.into_inner());
        // A slower refresh that started earlier never replaces a newer one.
        if fresh.as_ref().is_none_or(|(held, _)| *held <= generation) {
            *fresh = Some((generation, outcome));
        }
    }
}

impl LiveIndex {
    /// `on_refresh` hears of every background refresh.
    pub fn new(
        engine: Arc<Engine>,
        debounce: Duration,
        on_refresh: impl Fn(&LiveRefresh) + Send + Sync + 'static,
    ) -> LiveIndex {
        LiveIndex {
            engine,
            debounce,
            on_refresh: Arc::new(on_refresh),
            watched: Mutex::new(BTreeMap::new()),
            flights: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The watched roots, sorted.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).keys().cloned().collect()
    }

    fn watched_for(&self, path: &Path) -> Option<Arc<Watched>> {
        let dir = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        watched.iter().rev().find(|(root, _)| dir.starts_with(root)).map(|(_, w)| w.clone())
    }

    /// Starts watching the resource rooted at `root` (no-op when watched).
    pub fn watch(&self, root: &Path) -> Result<(), notify::Error> {
        let root = root.canonicalize().map_err(notify::Error::io)?;
        let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if watched.contains_key(&root) {
            return Ok(());
        }
        let (tx, rx) = mpsc::channel::<()>();
        let mut ignored = vec![root.join(".git")];
        ignored.extend(spellings(self.engine.home().root()));
        let generation = Arc::new(AtomicU64::new(0));
        let bump = generation.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let relevant = match &event {
                Ok(e) if matches!(e.kind, EventKind::Access(_)) => false,
                Ok(e) if e.need_rescan() => true,
                Ok(e) => e.paths.is_empty() || e.paths.iter().any(|p| !ignored.iter().any(|i| p.starts_with(i))),
                // A lost event (an overflowing queue) may hide a change.
                Err(_) => true,
            };
            if relevant {
                bump.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(());
            }
        })?;
        watcher.watch(&root, RecursiveMode::Recursive)?;
        let entry = Arc::new(Watched { root: root.clone(), generation, fresh: Mutex::new(None), _watcher: watcher });
        let worker = Worker {
            engine: self.engine.clone(),
            watched: Arc::downgrade(&entry),
            debounce: self.debounce,
            on_refresh: self.on_refresh.clone(),
        };
        std::thread::Builder::new()
            .name("live-refresh".into())
            .spawn(move || worker.run(rx))
            .map_err(notify::Error::io)?;
        tracing::info!(root = %root.display(), "watching for changes");
        watched.insert(root, entry);
        Ok(())
    }

    /// The index of the resource holding `path`: the watched resource's last
    /// refresh while nothing changed since it started, else `refresh()`'s
    /// result (recorded for the next call when the resource is watched).
    ///
    /// Callers that need a refresh of the same path at the same time share
    /// one: a refresh that started after a caller asked answers it (so it
    /// sees every change made before the call), and the callers that arrive
    /// while one runs wait for it to end and share the next. A server whose
    /// many requests each refresh (`--no-watch`) then walks the tree once
    /// per round of requests, not once per request.
    pub fn outcome<E>(
        &self,
        path: &Path,
        refresh: impl FnOnce() -> Result<IndexOutcome, E>,
    ) -> Result<Arc<IndexOutcome>, E> {
        let flight = self.flight(path);
        let Some(watched) = self.watched_for(path) else { return flight.share(refresh) };
        if let Some(outcome) = watched.current() {
            return Ok(outcome);
        }
        let generation = watched.generation.load(Ordering::SeqCst);
        let outcome = flight.share(refresh)?;
        watched.record(generation, outcome.clone());
        Ok(outcome)
    }

    /// The shared refreshes of `path`.
    fn flight(&self, path: &Path) -> Arc<Flight> {
        let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
        flights.entry(path.to_path_buf()).or_default().clone()
    }

    /// Refreshes the resource at `root` now and records the outcome.
    pub fn refresh_now(&self, root: &Path) -> Result<Arc<IndexOutcome>, EngineError> {
        let outcome = Arc::new(refresh(&self.engine, root)?);
        if let Some(watched) = self.watched_for(root) {
            watched.record(watched.generation.load(Ordering::SeqCst), outcome.clone());
        }
        Ok(outcome)
    }
}

/// The spellings under which events about `path` arrive: the watcher reports
/// paths under the canonical root, so a home given relative (`.agents`) or
/// through a symbolic link is matched by its canonical path; its absolute
/// spelling is kept too, for a home not yet created.
fn spellings(path: &Path) -> Vec<PathBuf> {
    let mut spellings: Vec<PathBuf> =
        [path.canonicalize().ok(), std::path::absolute(path).ok()].into_iter().flatten().collect();
    spellings.dedup();
    spellings
}

fn refresh(engine: &Engine, root: &Path) -> Result<IndexOutcome, EngineError> {
    let options = agents_acms::IndexOptions { wait_for_lock: true, ..engine.index_options() };
    engine.index_path(root, IndexMode::Refresh, &options, &NoProgress)
}

/// The background refresher of one watched resource.
struct Worker {
    engine: Arc<Engine>,
    watched: std::sync::Weak<Watched>,
    debounce: Duration,
    on_refresh: Arc<OnRefresh>,
}

impl Worker {
    fn run(self, rx: mpsc::Receiver<()>) {
        while rx.recv().is_ok() {
            // Wait for quiet: every further event restarts the wait.
            loop {
                match rx.recv_timeout(self.debounce) {
                    Ok(()) => continue,
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            let Some(watched) = self.watched.upgrade() else { return };
            let generation = watched.generation.load(Ordering::SeqCst);
            let started = Instant::now();
            let result = refresh(&self.engine, &watched.root).and_then(|outcome| {
                let sync = self.engine.sync_search(&outcome)?;
                Ok((Arc::new(outcome), sync))
            });
            let result = match result {
                Ok((outcome, sync)) => {
                    watched.record(generation, outcome.clone());
                    Ok((outcome, sync))
                }
                Err(error) => Err(Arc::new(error)),
            };
            (self.on_refresh)(&LiveRefresh { root: watched.root.clone(), result, elapsed: started.elapsed() });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Home;
    use agents_core::config::ResolvedConfig;

    /// Polls `done` for up to ten seconds: file-system events arrive
    /// asynchronously, so these tests wait for effects instead of sleeping.
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// A repository with one file, and an engine whose home is `home` under
    /// the temporary directory (or inside the repository).
    fn setup(home_in_repo: bool) -> (tempfile::TempDir, PathBuf, Arc<Engine>) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("a.py"), "def a():\n    return 1\n").unwrap();
        let home = if home_in_repo { repo.join(".agents") } else { tmp.path().join("home") };
        let engine = Engine::open(Home::new(home), ResolvedConfig::default()).unwrap();
        (tmp, repo, Arc::new(engine))
    }

    #[test]
    fn an_unchanged_resource_answers_from_its_last_refresh_and_a_change_refreshes_it() {
        let (_tmp, repo, engine) = setup(false);
        let refreshes = Arc::new(Mutex::new(Vec::<LiveRefresh>::new()));
        let heard = refreshes.clone();
        let live = LiveIndex::new(engine.clone(), Duration::from_millis(50), move |r| {
            heard.lock().unwrap().push(r.clone());
        });
        let calls = AtomicU64::new(0);
        let refresh_counted = || {
            calls.fetch_add(1, Ordering::SeqCst);
            refresh(&engine, &repo)
        };
        // Unwatched: every call refreshes.
        live.outcome(&repo, refresh_counted).unwrap();
        live.outcome(&repo, refresh_counted).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        live.watch(&repo).unwrap();
        assert_eq!(live.roots(), std::slice::from_ref(&repo));
        let first = live.outcome(&repo, refresh_counted).unwrap();
        let again = live.outcome(&repo.join("."), refresh_counted).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3, "the second call is answered from the first");
        assert!(Arc::ptr_eq(&first, &again));

        // A change: the background refresh indexes it and reports it, and the
        // next call answers from that refresh.
        std::fs::write(repo.join("b.py"), "def b():\n    return 2\n").unwrap();
        assert!(eventually(|| !refreshes.lock().unwrap().is_empty()), "no background refresh");
        let heard = refreshes.lock().unwrap()[0].clone();
        let (outcome, sync) = heard.result.clone().unwrap();
        assert_eq!(outcome.index.report.as_ref().unwrap().added, 1);
        assert_eq!(sync.files_indexed, 2, "the search indexes' first sync: a.py and b.py");
        assert!(eventually(|| {
            let latest = live.outcome(&repo, refresh_counted).unwrap();
            latest.index.files.iter().any(|f| f.path == "b.py")
        }));
        let settled = calls.load(Ordering::SeqCst);
        live.outcome(&repo, refresh_counted).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), settled, "settled again: no refresh");
    }

    /// `path` relative to the current directory, however deep that is.
    #[test]
    fn callers_arriving_during_a_refresh_share_the_next_one() {
        let (_tmp, repo, engine) = setup(false);
        let live = LiveIndex::new(engine.clone(), DEFAULT_DEBOUNCE, |_| {});
        // Borrowed, so that the first caller's thread can own its channel ends.
        let (live, repo, engine) = (&live, &repo, &engine);
        let (inside_tx, inside_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let calls = Arc::new(AtomicU64::new(0));
        std::thread::scope(|scope| {
            // The first caller's refresh runs until the test lets it end.
            let first = scope.spawn(move || {
                live.outcome(repo, || {
                    inside_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    refresh(engine, repo)
                })
            });
            inside_rx.recv().unwrap();
            let later: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        live.outcome(repo, || {
                            calls.fetch_add(1, Ordering::SeqCst);
                            refresh(engine, repo)
                        })
                    })
                })
                .collect();
            let flight = live.flight(repo);
            assert!(eventually(|| flight.lock().waiting == 3), "the later callers never waited");
            go_tx.send(()).unwrap();
            first.join().unwrap().unwrap();
            let outcomes: Vec<Arc<IndexOutcome>> = later.into_iter().map(|c| c.join().unwrap().unwrap()).collect();
            assert_eq!(calls.load(Ordering::SeqCst), 1, "one refresh, started after them, answered all three");
            assert!(outcomes.iter().all(|o| Arc::ptr_eq(o, &outcomes[0])));
        });
        // Alone, a caller refreshes for itself.
        live.outcome(repo, || {
            calls.fetch_add(1, Ordering::SeqCst);
            refresh(engine, repo)
        })
        .unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    fn relative_to_cwd(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        let mut relative = PathBuf::new();
        for _ in cwd.components().skip(1) {
            relative.push("..");
        }
        relative.join(path.strip_prefix("/").unwrap())
    }

    /// A home inside the repository given relative or through a symbolic
    /// link: the engine's own writes (a refresh and its search sync) are not
    /// changes, so nothing refreshes again and again.
    #[test]
    fn the_home_is_ignored_however_it_is_spelled() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(repo.join(".agents")).unwrap();
        std::fs::write(repo.join("a.py"), "def a():\n    return 1\n").unwrap();
        let link = tmp.path().join("home-link");
        std::os::unix::fs::symlink(repo.join(".agents"), &link).unwrap();
        for home in [relative_to_cwd(&repo.join(".agents")), link] {
            assert!(!home.starts_with(&repo), "{}", home.display());
            let engine = Arc::new(Engine::open(Home::new(&home), ResolvedConfig::default()).unwrap());
            let refreshes = Arc::new(AtomicU64::new(0));
            let heard = refreshes.clone();
            let live = LiveIndex::new(engine.clone(), Duration::from_millis(20), move |_| {
                heard.fetch_add(1, Ordering::SeqCst);
            });
            live.watch(&repo).unwrap();
            let watched = live.watched_for(&repo).unwrap();
            let outcome = live.refresh_now(&repo).unwrap();
            engine.sync_search(&outcome).unwrap();
            std::fs::write(home.join("scratch"), "x").unwrap();
            // Events arrive within milliseconds; none of these may count.
            std::thread::sleep(Duration::from_millis(300));
            assert_eq!(watched.generation.load(Ordering::SeqCst), 0, "{}", home.display());
            assert_eq!(refreshes.load(Ordering::SeqCst), 0, "{}", home.display());
            std::fs::write(repo.join("b.py"), "x = 1\n").unwrap();
            assert!(eventually(|| refreshes.load(Ordering::SeqCst) > 0), "a source change still counts");
        }
    }

    #[test]
    fn changes_inside_git_and_the_home_are_not_changes() {
        let (_tmp, repo, engine) = setup(true);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let live = LiveIndex::new(engine.clone(), Duration::from_millis(20), |_| {});
        live.watch(&repo).unwrap();
        let calls = AtomicU64::new(0);
        let refresh_counted = || {
            calls.fetch_add(1, Ordering::SeqCst);
            refresh(&engine, &repo)
        };
        live.outcome(&repo, refresh_counted).unwrap();
        let watched = live.watched_for(&repo).unwrap();
        std::fs::write(repo.join(".git").join("index"), "x").unwrap();
        std::fs::create_dir_all(engine.home().root().join("scratch")).unwrap();
        // Events arrive within milliseconds; none of these may count.
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(watched.generation.load(Ordering::SeqCst), 0);
        live.outcome(&repo, refresh_counted).unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1, "still answered from the first refresh");
        std::fs::write(repo.join("c.py"), "x = 1\n").unwrap();
        assert!(eventually(|| watched.generation.load(Ordering::SeqCst) > 0), "a source change counts");
    }
}
