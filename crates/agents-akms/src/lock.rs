//! The knowledge writers' lock, and the journal that makes an update apply
//! whole or not at all.
//!
//! Lock: every command that writes a repository's `knowledge/` (build,
//! update, migrate, mirror, promote, suppress, tags, loadouts) holds the
//! repository's lock while it reads what it changes and writes it: the OS
//! advisory lock of the indexers ([`agents_fs::lock`]) on
//! `<locks>/knowledge-<hash of the repository's path>.lock`, outside the
//! repository so it never shows in `git status`. The kernel drops it when its
//! process dies, however it dies. A second writer waits for it, up to a
//! bound, then refuses naming the holder's pid. Readers (search, query,
//! status, loadout reads) never take it.
//!
//! Journal: a multi-file write ([`commit`]) first writes every new file's
//! bytes to `knowledge/.journal.json` (atomically: it is there whole or not
//! at all), then each file atomically, then removes the journal. A process
//! killed before the journal is complete changed nothing; one killed after
//! leaves the journal, which the next writer replays on taking the lock
//! ([`acquire`] calls [`recover`]), so the update lands whole. Recovery also
//! removes the temporary files (`.<name>.tmp-<pid>`) a killed writer left.

use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use agents_fs::atomic::{process_alive, temporary_pid};
use agents_fs::lock::{self, LockAttempt, ResourceLock};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::diag::AkmsError;
use crate::vault::Layout;

/// How long a writer waits for another by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(120);

/// How often a waiting writer tries the lock again.
const POLL: Duration = Duration::from_millis(20);

/// The repository's knowledge lock, held; released on drop.
#[derive(Debug)]
pub struct KnowledgeLock {
    _held: ResourceLock,
}

/// The lock file of the repository at `repo_root` under `locks_dir`: one per
/// repository, whatever path spelling reaches it.
pub fn lock_path(locks_dir: &Path, repo_root: &Path) -> PathBuf {
    let canonical = repo_root.canonicalize().unwrap_or_else(|_| repo_root.to_path_buf());
    let digest = Sha256::digest(canonical.to_string_lossy().as_bytes());
    let name = agents_core::digest::hex(&digest[..8]);
    lock::lock_path(locks_dir, &format!("knowledge-{name}"))
}

/// Takes the repository's knowledge lock, waiting up to `wait` for another
/// writer (`waiting` is told once, with the holder's pid, when it must wait),
/// then recovers what a killed writer left ([`recover`]). After `wait`, an
/// error naming the repository and the holder.
pub fn acquire(
    locks_dir: &Path,
    layout: &Layout,
    wait: Duration,
    waiting: &mut dyn FnMut(Option<u32>),
) -> Result<KnowledgeLock, AkmsError> {
    let path = lock_path(locks_dir, &layout.repo_root);
    let started = Instant::now();
    let mut told = false;
    loop {
        let attempt = lock::try_lock(&path).map_err(|source| AkmsError::Io { path: path.clone(), source })?;
        match attempt {
            LockAttempt::Acquired(held) => {
                let held = KnowledgeLock { _held: held };
                recover(layout)?;
                return Ok(held);
            }
            LockAttempt::Busy { pid } => {
                let elapsed = started.elapsed();
                if elapsed >= wait {
                    let holder = pid.map(|p| format!(" (pid {p})")).unwrap_or_default();
                    let message = format!(
                        "another knowledge writer{holder} holds this repository's lock (waited {} s); \
                         try again when it has finished",
                        wait.as_secs()
                    );
                    return Err(AkmsError::Io {
                        path: layout.knowledge(),
                        source: std::io::Error::new(std::io::ErrorKind::WouldBlock, message),
                    });
                }
                if !told {
                    waiting(pid);
                    told = true;
                }
                std::thread::sleep(POLL.min(wait - elapsed));
            }
        }
    }
}

/// Where the journal of a pending multi-file write lives.
pub fn journal_path(layout: &Layout) -> PathBuf {
    layout.knowledge().join(".journal.json")
}

/// The journal: every file of one write, by path relative to `knowledge/`.
#[derive(Serialize, Deserialize)]
struct Journal {
    akms_journal: u32,
    writes: Vec<JournalWrite>,
}

#[derive(Serialize, Deserialize)]
struct JournalWrite {
    path: String,
    text: String,
}

/// Writes `writes` (absolute paths under `knowledge/`, in order) as one
/// unit through the journal; if a write fails, the files written are put
/// back and the journal removed. The caller holds the lock.
pub(crate) fn commit(layout: &Layout, writes: &[(PathBuf, &str)]) -> Result<(), AkmsError> {
    commit_until(layout, writes, None)
}

/// [`commit`], stopping (as if killed) after `stop_after` file writes when
/// given: the journal is left for [`recover`]. The test seam of a crash.
pub(crate) fn commit_until(
    layout: &Layout,
    writes: &[(PathBuf, &str)],
    stop_after: Option<usize>,
) -> Result<(), AkmsError> {
    let knowledge = layout.knowledge();
    let mut journal = Journal { akms_journal: 1, writes: Vec::new() };
    for (path, text) in writes {
        let relative = path.strip_prefix(&knowledge).map_err(|_| AkmsError::Io {
            path: path.clone(),
            source: std::io::Error::other("an update writes only under knowledge/"),
        })?;
        journal
            .writes
            .push(JournalWrite { path: relative.to_string_lossy().replace('\\', "/"), text: (*text).to_owned() });
    }
    let journal_file = journal_path(layout);
    let bytes = serde_json::to_vec(&journal)
        .map_err(|e| AkmsError::Io { path: journal_file.clone(), source: std::io::Error::other(e.to_string()) })?;
    agents_fs::atomic_write(&journal_file, &bytes)
        .map_err(|source| AkmsError::Io { path: journal_file.clone(), source })?;
    failpoint("journal-written");

    let mut previous: Vec<(&Path, Option<Vec<u8>>)> = Vec::new();
    for (i, (path, text)) in writes.iter().enumerate() {
        previous.push((path, std::fs::read(path).ok()));
        if let Err(source) = agents_fs::atomic_write(path, text.as_bytes()) {
            for (path, bytes) in previous.iter().rev() {
                let _ = match bytes {
                    Some(bytes) => agents_fs::atomic_write(path, bytes),
                    None => std::fs::remove_file(path),
                };
            }
            let _ = std::fs::remove_file(&journal_file);
            return Err(AkmsError::Io { path: path.clone(), source });
        }
        if stop_after == Some(i + 1) {
            return Err(AkmsError::Io {
                path: journal_file,
                source: std::io::Error::other("stopped as if killed (test seam)"),
            });
        }
        failpoint(&format!("after-write-{}", i + 1));
    }
    std::fs::remove_file(&journal_file).map_err(|source| AkmsError::Io { path: journal_file, source })
}

/// In debug builds, `AGENTS_AKMS_FAILPOINT=<name>` aborts the process at
/// that point (as `kill -9` would), for the crash tests of the binary.
fn failpoint(name: &str) {
    #[cfg(debug_assertions)]
    if std::env::var_os("AGENTS_AKMS_FAILPOINT").is_some_and(|v| v == name) {
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = name;
}

/// Finishes what a killed writer left: replays a complete journal (then
/// removes it) and removes stale temporary files. The caller holds the lock.
/// A journal that is not ours to replay (unreadable, or naming a path
/// outside `knowledge/`) is an error naming it, and nothing is written.
pub fn recover(layout: &Layout) -> Result<(), AkmsError> {
    let journal_file = journal_path(layout);
    let shown = layout.display(&journal_file);
    let bad = |message: String| AkmsError::Io {
        path: shown.clone(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, message),
    };
    match std::fs::read(&journal_file) {
        Ok(bytes) => {
            let journal: Journal = serde_json::from_slice(&bytes)
                .map_err(|e| bad(format!("not a knowledge journal ({e}); remove it to go on")))?;
            let knowledge = layout.knowledge();
            let real = knowledge.canonicalize().map_err(|source| AkmsError::Io { path: knowledge.clone(), source })?;
            let mut targets = Vec::new();
            for write in &journal.writes {
                let relative = Path::new(&write.path);
                if write.path.is_empty() || !relative.components().all(|c| matches!(c, Component::Normal(_))) {
                    return Err(bad(format!("names `{}`, which is not a path inside knowledge/", write.path)));
                }
                let target = knowledge.join(relative);
                // A folder on the way that leads out (a symbolic link) is refused.
                let mut parent = target.parent().map(Path::to_path_buf).unwrap_or_else(|| knowledge.clone());
                while !parent.exists() && parent != knowledge {
                    parent = parent.parent().map(Path::to_path_buf).unwrap_or_else(|| knowledge.clone());
                }
                if !parent.canonicalize().is_ok_and(|p| p.starts_with(&real)) {
                    return Err(bad(format!("names `{}`, which leads outside knowledge/", write.path)));
                }
                if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) {
                    return Err(bad(format!("names `{}`, which is a symbolic link", write.path)));
                }
                targets.push((target, write.text.as_str()));
            }
            tracing::info!(files = targets.len(), "replaying the knowledge journal of an interrupted write");
            for (target, text) in &targets {
                agents_fs::atomic_write(target, text.as_bytes())
                    .map_err(|source| AkmsError::Io { path: target.clone(), source })?;
            }
            std::fs::remove_file(&journal_file)
                .map_err(|source| AkmsError::Io { path: journal_file.clone(), source })?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(AkmsError::Io { path: journal_file, source }),
    }
    remove_stale_temporaries(layout);
    Ok(())
}

/// The folders knowledge writers write into (the last two with their
/// subfolders).
fn written_dirs(layout: &Layout) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let k = layout.knowledge();
    let flat = vec![k.clone(), k.join("graph"), k.join("logs"), k.join("loadouts"), k.join("cache").join("search")];
    (flat, vec![layout.local_nodes(), layout.code_mirror()])
}

/// Removes `.<name>.tmp-<pid>` files (what [`agents_fs::atomic_write`]
/// leaves when killed) whose process is gone, or is this one (which holds
/// the lock and is not writing).
fn remove_stale_temporaries(layout: &Layout) {
    let (flat, deep) = written_dirs(layout);
    let mut stack: Vec<(PathBuf, bool, usize)> = flat.into_iter().map(|d| (d, false, 0)).collect();
    stack.extend(deep.into_iter().map(|d| (d, true, 0)));
    while let Some((dir, recurse, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let name = entry.file_name().to_string_lossy().into_owned();
            if kind.is_dir() {
                if recurse && depth < 64 {
                    stack.push((entry.path(), true, depth + 1));
                }
                continue;
            }
            if kind.is_file()
                && let Some(pid) = temporary_pid(&name)
                && (pid == std::process::id() || !process_alive(pid))
            {
                tracing::debug!(file = %entry.path().display(), "removing a temporary file an interrupted write left");
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(dir: &Path) -> Layout {
        let layout = Layout::new(dir.join("repo"), dir.join("global"));
        std::fs::create_dir_all(layout.knowledge().join("graph")).unwrap();
        layout
    }

    #[test]
    fn a_second_writer_waits_for_the_first_and_gives_up_after_the_bound_naming_the_holder() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = layout(tmp.path());
        let locks = tmp.path().join("locks");
        let first = acquire(&locks, &layout, Duration::ZERO, &mut |_| {}).unwrap();
        let mut told = None;
        let err = acquire(&locks, &layout, Duration::from_millis(50), &mut |pid| told = Some(pid)).unwrap_err();
        assert_eq!(told, Some(Some(std::process::id())), "the waiter is told who it waits for");
        let text = err.to_string();
        assert!(text.contains(&format!("(pid {})", std::process::id())), "{text}");
        assert!(text.contains("holds this repository's lock"), "{text}");
        assert!(!err.is_bad_input());
        // Another spelling of the same repository is the same lock.
        let dotted = Layout::new(layout.repo_root.join("..").join("repo"), PathBuf::new());
        assert!(acquire(&locks, &dotted, Duration::ZERO, &mut |_| {}).is_err());
        drop(first);
        // Freed: a waiter gets it.
        let holder = std::thread::spawn({
            let (locks, layout) = (locks.clone(), layout.clone());
            move || {
                let held = acquire(&locks, &layout, Duration::ZERO, &mut |_| {}).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                drop(held);
            }
        });
        std::thread::sleep(Duration::from_millis(20));
        assert!(acquire(&locks, &layout, Duration::from_secs(20), &mut |_| {}).is_ok());
        holder.join().unwrap();
    }

    #[test]
    fn a_journal_left_by_a_killed_write_is_replayed_and_stale_temporaries_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = layout(tmp.path());
        let k = layout.knowledge();
        let a = k.join("local-nodes/a.md");
        let b = k.join("graph/local_state.yaml");
        let err = commit_until(&layout, &[(a.clone(), "A"), (b.clone(), "B")], Some(1)).unwrap_err();
        assert!(err.to_string().contains("test seam"));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "A");
        assert!(!b.exists(), "the second file is not written yet");
        // Leftovers of a killed atomic write: a dead pid's and ours.
        let dead = k.join("graph/.graph.json.tmp-4000000000");
        let ours = k.join(format!("local-nodes/sub/.x.md.tmp-{}", std::process::id()));
        let foreign = k.join("graph/.notes.tmp-abc");
        for file in [&dead, &ours, &foreign] {
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, "partial").unwrap();
        }
        let _held = acquire(&tmp.path().join("locks"), &layout, Duration::ZERO, &mut |_| {}).unwrap();
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "B");
        assert!(!journal_path(&layout).exists());
        assert!(!dead.exists() && !ours.exists());
        assert!(foreign.exists(), "only atomic-write temporaries are removed");
        // Nothing left to do: recovering again is a no-op.
        recover(&layout).unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "A");
    }

    #[test]
    fn a_journal_naming_a_path_outside_knowledge_is_refused_and_nothing_written() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = layout(tmp.path());
        let outside = tmp.path().join("victim");
        for path in ["../../victim", "/etc/x", "graph/../../../victim", ""] {
            let journal = format!(r#"{{"akms_journal":1,"writes":[{{"path":"{path}","text":"owned"}}]}}"#);
            std::fs::write(journal_path(&layout), journal).unwrap();
            let err = recover(&layout).unwrap_err().to_string();
            assert!(err.contains("knowledge/.journal.json"), "{err}");
            assert!(!outside.exists());
        }
        #[cfg(unix)]
        {
            std::fs::create_dir_all(&outside).unwrap();
            std::os::unix::fs::symlink(&outside, layout.knowledge().join("out")).unwrap();
            let journal = r#"{"akms_journal":1,"writes":[{"path":"out/x","text":"owned"}]}"#;
            std::fs::write(journal_path(&layout), journal).unwrap();
            let err = recover(&layout).unwrap_err().to_string();
            assert!(err.contains("leads outside knowledge/"), "{err}");
            assert!(!outside.join("x").exists());
        }
        std::fs::write(journal_path(&layout), "{not json").unwrap();
        assert!(recover(&layout).unwrap_err().to_string().contains("not a knowledge journal"));
    }

    #[test]
    fn temporary_names() {
        assert_eq!(temporary_pid(".graph.json.tmp-123"), Some(123));
        assert_eq!(temporary_pid("graph.json.tmp-123"), None);
        assert_eq!(temporary_pid(".graph.json.tmp-"), None);
        assert_eq!(temporary_pid(".a.tmp-1x"), None);
    }
}
