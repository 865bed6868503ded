//! Reading a file of an untrusted repository or vault with bounded work: the
//! one way this crate reads a node, a `content_ref` target, the overlay, the
//! config or a session file.
//!
//! A file is read only when
//! - its canonical path lies inside its root (when one is given), so a
//!   symbolic link cannot lead out of the layer;
//! - it is a regular file: a FIFO, socket, device or directory is refused
//!   without being read (it is opened with `O_NONBLOCK` and checked again on
//!   the open handle, so a FIFO swapped in cannot block either);
//! - its size is within its cap, checked from the metadata before reading and
//!   enforced while reading (`take(cap + 1)`), so a file growing meanwhile
//!   cannot exceed it.
//!
//! Each refusal is a [`ReadError`] whose message says why, for the caller to
//! turn into a diagnostic naming the file. The checks and the reads are
//! agents-fs's ([`agents_fs::read`], [`agents_fs::confine`]); this module
//! adds the caps' settings and the diagnostics.

use std::path::{Path, PathBuf};

use crate::diag::{Diagnostic, ProblemKind};

/// One mebibyte.
pub const MIB: u64 = 1024 * 1024;

/// Caps of files whose size no setting governs: the overlay, the config,
/// session files (AgentMemory and PCDs).
pub const MAX_OVERLAY_BYTES: u64 = 64 * MIB;
pub const MAX_CONFIG_BYTES: u64 = MIB;
pub const MAX_SESSION_BYTES: u64 = 4 * MIB;

/// A size cap and the setting (or fixed limit) it comes from, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub bytes: u64,
    /// How users change it, e.g. `limits.max_node_bytes in propagation_config.yaml`,
    /// or that it is fixed.
    pub setting: &'static str,
}

impl Cap {
    pub const fn new(bytes: u64, setting: &'static str) -> Cap {
        Cap { bytes, setting }
    }

    /// What is wrong with something of `size` bytes over this cap.
    pub fn exceeded(&self, size: u64) -> String {
        let (limit, setting) = (self.bytes, self.setting);
        let size = if size < 1024 { format!("{size} bytes") } else { format!("{} ({size} bytes)", human(size)) };
        let limit = if limit < 1024 {
            format!("{limit} bytes ({setting})")
        } else {
            format!("{} ({limit} bytes; {setting})", human(limit))
        };
        format!("is {size}, over the limit of {limit}")
    }
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("does not exist")]
    NotFound,
    #[error("is {0}, not a regular file; it was not read")]
    NotRegular(&'static str),
    #[error("leads outside {} through a symbolic link; it was not read", .0.display())]
    Outside(PathBuf),
    #[error("{}; it was not read", cap.exceeded(*size))]
    TooLarge { size: u64, cap: Cap },
    #[error("cannot read: {0}")]
    Io(std::io::Error),
}

impl ReadError {
    /// The problem kind of this refusal.
    pub fn kind(&self) -> ProblemKind {
        match self {
            ReadError::NotFound | ReadError::Io(_) => ProblemKind::Io,
            ReadError::NotRegular(_) => ProblemKind::NotRegularFile,
            ReadError::Outside(_) => ProblemKind::PathEscape,
            ReadError::TooLarge { .. } => ProblemKind::TooLarge,
        }
    }

    /// This refusal as an error diagnostic on `file` (and `field`, when the
    /// path came from one).
    pub fn diagnostic(&self, file: &Path, line: Option<usize>, field: Option<&str>) -> Diagnostic {
        Diagnostic::error(self.kind(), file, line, field, self.to_string())
    }
}

/// `bytes` with a binary unit, for messages.
fn human(bytes: u64) -> String {
    const GIB: u64 = 1024 * MIB;
    match bytes {
        b if b >= GIB => format!("{:.1} GiB", b as f64 / GIB as f64),
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.1} MiB", b as f64 / MIB as f64),
        b if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        b if b >= 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} bytes"),
    }
}

/// A refusal of agents-fs as this crate's, the cap's setting added.
fn from_fs(error: agents_fs::ReadError, cap: Cap) -> ReadError {
    match error {
        agents_fs::ReadError::NotFound { .. } => ReadError::NotFound,
        agents_fs::ReadError::NotRegular { kind, .. } => ReadError::NotRegular(kind),
        agents_fs::ReadError::TooLarge { size, .. } => ReadError::TooLarge { size, cap },
        agents_fs::ReadError::Io { source, .. } => ReadError::Io(source),
    }
}

fn unresolved(error: agents_fs::confine::ConfineError) -> ReadError {
    if error.source.kind() == std::io::ErrorKind::NotFound { ReadError::NotFound } else { ReadError::Io(error.source) }
}

/// Refuses `path` when its canonical form leaves `root` (when one is given).
fn confine(path: &Path, root: Option<&Path>) -> Result<(), ReadError> {
    match root {
        Some(root) if !inside(path, root)? => Err(ReadError::Outside(root.to_path_buf())),
        _ => Ok(()),
    }
}

/// Whether `path` (its target, for a symbolic link) is a regular file within
/// `cap`, from its metadata alone: nothing is opened.
pub fn check_metadata(path: &Path, cap: Cap) -> Result<(), ReadError> {
    agents_fs::read::check_metadata(path, Some(cap.bytes)).map(drop).map_err(|e| from_fs(e, cap))
}

/// Whether `path`'s canonical form lies inside `root`'s; `Ok(false)` when it
/// leads out.
pub fn inside(path: &Path, root: &Path) -> Result<bool, ReadError> {
    agents_fs::within(path, root).map_err(unresolved)
}

/// The UTF-8 text of the regular file `path`, at most `cap` bytes, refused
/// when its canonical path leaves `root` (when one is given).
pub fn read_text(path: &Path, root: Option<&Path>, cap: Cap) -> Result<String, ReadError> {
    let bytes = read_bytes(path, root, cap)?;
    String::from_utf8(bytes).map_err(|_| {
        ReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8"))
    })
}

/// The bytes of the regular file `path`, as [`read_text`].
pub fn read_bytes(path: &Path, root: Option<&Path>, cap: Cap) -> Result<Vec<u8>, ReadError> {
    confine(path, root)?;
    agents_fs::read_capped(path, cap.bytes).map_err(|e| from_fs(e, cap))
}

/// The first `n` bytes (or fewer) of the regular file `path`, without the
/// rest: enough to tell a node (frontmatter) from content.
pub fn read_prefix(path: &Path, root: Option<&Path>, n: u64) -> Result<Vec<u8>, ReadError> {
    confine(path, root)?;
    agents_fs::read_prefix(path, n).map_err(|e| from_fs(e, Cap::new(u64::MAX - 1, "none")))
}

/// [`read_text`] for a file that may be missing: `Ok(None)` then.
pub fn read_optional(path: &Path, root: Option<&Path>, cap: Cap) -> Result<Option<String>, ReadError> {
    match read_text(path, root, cap) {
        Ok(text) => Ok(Some(text)),
        Err(ReadError::NotFound) if std::fs::symlink_metadata(path).is_err() => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    const CAP: Cap = Cap::new(16, "limits.test in p.yaml");

    #[test]
    fn reads_a_regular_file_within_its_cap_and_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "hello").unwrap();
        assert_eq!(read_text(&dir.path().join("a.md"), Some(dir.path()), CAP).unwrap(), "hello");
        assert!(matches!(read_text(&dir.path().join("b.md"), None, CAP), Err(ReadError::NotFound)));
        assert_eq!(read_optional(&dir.path().join("b.md"), None, CAP).unwrap(), None);
        std::fs::write(dir.path().join("bin"), [0xff, 0xfe]).unwrap();
        assert!(read_text(&dir.path().join("bin"), None, CAP).unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn a_file_over_its_cap_is_refused_from_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.md");
        // Sparse: a terabyte-sized file costs nothing to make or to refuse.
        std::fs::File::create(&big).unwrap().set_len(1 << 40).unwrap();
        let err = read_text(&big, None, CAP).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { size, .. } if size == 1 << 40), "{err}");
        assert_eq!(
            err.to_string(),
            "is 1024.0 GiB (1099511627776 bytes), over the limit of 16 bytes (limits.test in p.yaml); it was not read"
        );
        std::fs::write(&big, "x".repeat(17)).unwrap();
        assert_eq!(read_text(&big, None, CAP).unwrap_err().kind(), ProblemKind::TooLarge);
        std::fs::write(&big, "x".repeat(16)).unwrap();
        assert_eq!(read_text(&big, None, CAP).unwrap().len(), 16);
        assert_eq!(read_prefix(&big, None, 4).unwrap(), b"xxxx");
    }

    #[test]
    fn a_directory_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_text(dir.path(), None, CAP).unwrap_err();
        assert_eq!(err.to_string(), "is a directory, not a regular file; it was not read");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.md");
        mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(read_text(&fifo, None, CAP).map_err(|e| e.to_string())).unwrap());
        let got = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("reading a FIFO must not block");
        assert_eq!(got.unwrap_err(), "is a FIFO (named pipe), not a regular file; it was not read");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_root_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(dir.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link.md")).unwrap();
        let err = read_text(&root.join("link.md"), Some(&root), CAP).unwrap_err();
        assert_eq!(err.kind(), ProblemKind::PathEscape);
        assert!(err.to_string().contains("leads outside"), "{err}");
        // Without a root the same link is read.
        assert_eq!(read_text(&root.join("link.md"), None, CAP).unwrap(), "s");
    }

    /// Makes a FIFO at `path` (tests only).
    #[cfg(unix)]
    pub(crate) fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }
}
