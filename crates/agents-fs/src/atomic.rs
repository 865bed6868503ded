//! Atomic file writes: temp file in the same directory, fsync, rename, fsync
//! the directory. A reader sees the old bytes or the new, never a mix, and a
//! crash leaves no half-written file under the real name. A process killed
//! mid-write leaves its temporary file `.<name>.tmp-<pid>`;
//! [`remove_stale_temporaries`] clears those of processes that are gone.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    atomic_write_with(path, |file| file.write_all(bytes))
}

/// [`atomic_write`] of what `write` writes, streamed through a buffer: a
/// large file (the vector rows) never needs a second copy in memory. An
/// error from `write` leaves `path` as it was and no temporary file.
pub fn atomic_write_with(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
        write(&mut file)?;
        let file = file.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The pid in an atomic write's temporary file name `.<name>.tmp-<pid>`;
/// `None` for any other name.
pub fn temporary_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, pid) = rest.rsplit_once(".tmp-")?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process with this pid runs (Linux: `/proc/<pid>`; elsewhere
/// unknown, taken as gone: callers remove temporaries only where no other
/// process writes, under a lock or on open).
pub fn process_alive(pid: u32) -> bool {
    cfg!(target_os = "linux") && Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the temporary files in `dir` that atomic writes of `names` left
/// when their process was killed (its pid is no longer running). Returns
/// how many were removed.
pub fn remove_stale_temporaries(dir: &Path, names: &[&str]) -> std::io::Result<usize> {
    let mut removed = 0;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let of_ours =
            names.iter().any(|n| name.strip_prefix('.').is_some_and(|rest| rest.starts_with(&format!("{n}.tmp-"))));
        if of_ours && temporary_pid(&name).is_some_and(|pid| !process_alive(pid)) && entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/config.toml");
        atomic_write(&path, b"one").unwrap();
        atomic_write(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let names: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_streamed_write_lands_whole_and_a_failed_one_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.bin");
        let big = vec![7u8; 3 << 20];
        atomic_write_with(&path, |w| {
            w.write_all(b"head")?;
            w.write_all(&big)
        })
        .unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 4 + big.len());
        let failed = atomic_write_with(&path, |w| {
            w.write_all(&big)?;
            Err(std::io::Error::other("encoder gave up"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "encoder gave up");
        assert_eq!(std::fs::read(&path).unwrap().len(), 4 + big.len(), "the old file stays");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary left");
    }

    #[test]
    fn failure_leaves_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("is-a-dir");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), "x").unwrap();
        assert!(atomic_write(&target, b"new").is_err());
        assert!(target.join("keep").exists());
    }

    #[test]
    fn temporaries_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(temporary_pid(".graph.json.tmp-123"), Some(123));
        assert_eq!(temporary_pid("graph.json.tmp-123"), None);
        assert_eq!(temporary_pid(".graph.json.tmp-"), None);
        assert_eq!(temporary_pid(".graph.json.tmp-12a"), None);
        // No pid reaches four billion, so that process is gone.
        let dead = dir.path().join(".rows.bin.tmp-4000000000");
        let live = dir.path().join(format!(".rows.bin.tmp-{}", std::process::id()));
        let other = dir.path().join(".other.tmp-4000000000");
        for path in [&dead, &live, &other] {
            std::fs::write(path, "half").unwrap();
        }
        assert_eq!(remove_stale_temporaries(dir.path(), &["rows.bin"]).unwrap(), 1);
        assert!(!dead.exists());
        assert!(live.exists() || !cfg!(target_os = "linux"), "a running writer's file is kept");
        assert!(other.exists(), "only the named files' temporaries are removed");
        assert_eq!(remove_stale_temporaries(&dir.path().join("missing"), &["x"]).unwrap(), 0);
    }
}
