//! Per-resource indexer locks: an OS advisory lock on a file under
//! `$AGENTS_HOME/locks/`, so two indexers never write one index at once.
//!
//! The kernel drops the lock when its process dies, however it dies. That is
//! what lets startup tell a live indexer (lock held) from an orphaned
//! `indexing` row left by a killed one (lock free).

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// A held lock; released on drop.
#[derive(Debug)]
pub struct ResourceLock {
    _file: File,
}

/// Outcome of trying to take a lock.
pub enum LockAttempt {
    /// Taken; held until the lock is dropped.
    Acquired(ResourceLock),
    /// Held by another process, whose pid is given when it wrote one.
    Busy { pid: Option<u32> },
}

/// The lock file of `resource_id` under `locks_dir`.
pub fn lock_path(locks_dir: &Path, resource_id: &str) -> PathBuf {
    locks_dir.join(format!("{resource_id}.lock"))
}

fn open(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

/// Writes our pid over the file's content without ever leaving it empty,
/// so a concurrent reader sees the old pid or the new one.
fn stamp(file: &mut File) -> std::io::Result<()> {
    let pid = std::process::id().to_string();
    file.seek(SeekFrom::Start(0))?;
    file.write_all(pid.as_bytes())?;
    file.set_len(pid.len() as u64)?;
    file.flush()
}

/// Takes the lock if free; never blocks.
pub fn try_lock(path: &Path) -> std::io::Result<LockAttempt> {
    let mut file = open(path)?;
    match file.try_lock() {
        Ok(()) => {
            stamp(&mut file)?;
            Ok(LockAttempt::Acquired(ResourceLock { _file: file }))
        }
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            Ok(LockAttempt::Busy { pid: text.trim().parse().ok() })
        }
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// Waits until the lock is free, then takes it.
pub fn lock_blocking(path: &Path) -> std::io::Result<ResourceLock> {
    let mut file = open(path)?;
    file.lock()?;
    stamp(&mut file)?;
    Ok(ResourceLock { _file: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = lock_path(dir.path(), "R");
        let held = match try_lock(&path).unwrap() {
            LockAttempt::Acquired(l) => l,
            LockAttempt::Busy { .. } => panic!("fresh lock busy"),
        };
        match try_lock(&path).unwrap() {
            LockAttempt::Busy { pid } => assert_eq!(pid, Some(std::process::id())),
            LockAttempt::Acquired(_) => panic!("lock taken twice"),
        }
        drop(held);
        assert!(matches!(try_lock(&path).unwrap(), LockAttempt::Acquired(_)));
    }
}
