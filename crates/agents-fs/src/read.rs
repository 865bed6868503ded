//! Reading a file of an untrusted tree (a repository, a vault) with bounded
//! work. A file is read only when it is a regular file: a FIFO, socket,
//! device or directory is refused without being read. It is opened with
//! `O_NONBLOCK` and checked again on the open handle, so a FIFO swapped in
//! between the look and the open cannot block either. A capped read stops
//! one byte past its cap, so a file growing meanwhile cannot make it read
//! without end.

use std::fs::{File, FileType, Metadata};
use std::io::{Read, Take};
use std::path::{Path, PathBuf};

/// Why a file was not read. Each message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing is there (or a symbolic link leads nowhere).
    #[error("{} does not exist", path.display())]
    NotFound {
        /// The file asked for.
        path: PathBuf,
    },
    /// A FIFO, socket, device or directory.
    #[error("{} is {kind}, not a regular file; it was not read", path.display())]
    NotRegular {
        /// The file asked for.
        path: PathBuf,
        /// What it is instead, e.g. `a FIFO (named pipe)`.
        kind: &'static str,
    },
    /// Larger than the cap: from its metadata, or found while reading.
    #[error("{} is {size} bytes, over the limit of {cap} bytes; it was not read", path.display())]
    TooLarge {
        /// The file asked for.
        path: PathBuf,
        /// Its size (or what was read of it: one byte past the cap).
        size: u64,
        /// The cap, in bytes.
        cap: u64,
    },
    /// Anything else the file system refused.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file asked for.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

impl ReadError {
    fn io(path: &Path, source: std::io::Error) -> ReadError {
        let path = path.to_path_buf();
        if source.kind() == std::io::ErrorKind::NotFound {
            ReadError::NotFound { path }
        } else {
            ReadError::Io { path, source }
        }
    }
}

/// What a file that is not regular is, for messages.
pub fn file_kind(file_type: FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_dir() { "a directory" } else { "not a regular file" }
}

fn check(path: &Path, metadata: &Metadata, cap: Option<u64>) -> Result<(), ReadError> {
    if !metadata.is_file() {
        return Err(ReadError::NotRegular { path: path.to_path_buf(), kind: file_kind(metadata.file_type()) });
    }
    match cap {
        Some(cap) if metadata.len() > cap => {
            Err(ReadError::TooLarge { path: path.to_path_buf(), size: metadata.len(), cap })
        }
        _ => Ok(()),
    }
}

/// Whether `path` (its target, for a symbolic link) is a regular file of at
/// most `cap` bytes (any size without one), from its metadata alone: nothing
/// is opened. Returns its size.
pub fn check_metadata(path: &Path, cap: Option<u64>) -> Result<u64, ReadError> {
    let metadata = std::fs::metadata(path).map_err(|e| ReadError::io(path, e))?;
    check(path, &metadata, cap)?;
    Ok(metadata.len())
}

/// A regular file, open for reading: checked before the open and again on
/// the handle.
#[derive(Debug)]
pub struct RegularFile {
    file: File,
    path: PathBuf,
    len: u64,
}

impl RegularFile {
    /// Opens `path` when it is a regular file, without blocking on a FIFO.
    pub fn open(path: &Path) -> Result<RegularFile, ReadError> {
        RegularFile::open_within(path, None)
    }

    /// [`RegularFile::open`], refusing a file over `cap` bytes by its
    /// metadata (before and after the open).
    fn open_within(path: &Path, cap: Option<u64>) -> Result<RegularFile, ReadError> {
        check_metadata(path, cap)?;
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NONBLOCK);
        }
        let file = options.open(path).map_err(|e| ReadError::io(path, e))?;
        // The handle's own metadata: what was opened, not what was looked at.
        let metadata = file.metadata().map_err(|e| ReadError::io(path, e))?;
        check(path, &metadata, cap)?;
        Ok(RegularFile { file, path: path.to_path_buf(), len: metadata.len() })
    }

    /// The size the open handle reported.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file was empty when opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A reader of the file that stops one byte past `cap` (when there is
    /// one), so the caller can tell a file that outgrew it.
    pub fn capped(self, cap: Option<u64>) -> Take<File> {
        self.file.take(cap.map_or(u64::MAX, |cap| cap.saturating_add(1)))
    }

    /// Everything in the file, at most `cap` bytes; [`ReadError::TooLarge`]
    /// when it holds more.
    fn read_all(self, cap: u64) -> Result<Vec<u8>, ReadError> {
        let path = self.path.clone();
        let mut bytes = Vec::with_capacity(usize::try_from(self.len.min(cap)).unwrap_or(0));
        self.capped(Some(cap)).read_to_end(&mut bytes).map_err(|e| ReadError::io(&path, e))?;
        let size = bytes.len() as u64;
        if size > cap {
            return Err(ReadError::TooLarge { path, size, cap });
        }
        Ok(bytes)
    }
}

/// The bytes of the regular file `path`, refused when it holds more than
/// `cap`: from its metadata first, without reading, and while reading.
pub fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, ReadError> {
    RegularFile::open_within(path, Some(cap))?.read_all(cap)
}

/// The first `n` bytes (or fewer) of the regular file `path`, without the
/// rest.
pub fn read_prefix(path: &Path, n: u64) -> Result<Vec<u8>, ReadError> {
    let mut bytes = Vec::new();
    RegularFile::open(path)?.file.take(n).read_to_end(&mut bytes).map_err(|e| ReadError::io(path, e))?;
    Ok(bytes)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn reads_a_regular_file_within_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        std::fs::write(&path, "hello").unwrap();
        assert_eq!(read_capped(&path, 16).unwrap(), b"hello");
        assert_eq!(read_prefix(&path, 2).unwrap(), b"he");
        let missing = dir.path().join("b.md");
        let err = read_capped(&missing, 16).unwrap_err();
        assert!(matches!(&err, ReadError::NotFound { path } if *path == missing), "{err}");
        assert!(err.to_string().contains("b.md"), "{err}");
    }

    #[test]
    fn a_file_over_its_cap_is_refused_from_its_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.md");
        // Sparse: a terabyte-sized file costs nothing to make or to refuse.
        std::fs::File::create(&big).unwrap().set_len(1 << 40).unwrap();
        let err = read_capped(&big, 16).unwrap_err();
        assert!(matches!(err, ReadError::TooLarge { size, cap: 16, .. } if size == 1 << 40), "{err}");
        assert_eq!(
            err.to_string(),
            format!("{} is 1099511627776 bytes, over the limit of 16 bytes; it was not read", big.display())
        );
        std::fs::write(&big, "x".repeat(17)).unwrap();
        assert!(matches!(read_capped(&big, 16), Err(ReadError::TooLarge { size: 17, .. })));
        std::fs::write(&big, "x".repeat(16)).unwrap();
        assert_eq!(read_capped(&big, 16).unwrap().len(), 16);
        assert_eq!(read_prefix(&big, 4).unwrap(), b"xxxx");
    }

    #[test]
    fn a_capped_reader_stops_one_byte_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grown.txt");
        std::fs::write(&path, "x".repeat(10_000)).unwrap();
        let mut bytes = Vec::new();
        RegularFile::open(&path).unwrap().capped(Some(100)).read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len(), 101);
        bytes.clear();
        RegularFile::open(&path).unwrap().capped(None).read_to_end(&mut bytes).unwrap();
        assert_eq!(bytes.len(), 10_000);
    }

    #[test]
    fn a_directory_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_capped(dir.path(), 16).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: "a directory", .. }), "{err}");
        assert!(err.to_string().ends_with("is a directory, not a regular file; it was not read"), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.md");
        mkfifo(&fifo);
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || tx.send(read_capped(&path, 16).map_err(|e| e.to_string())).unwrap());
        let got = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("reading a FIFO must not block");
        assert_eq!(
            got.unwrap_err(),
            format!("{} is a FIFO (named pipe), not a regular file; it was not read", fifo.display())
        );
        assert!(matches!(RegularFile::open(&fifo), Err(ReadError::NotRegular { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused() {
        let err = read_capped(Path::new("/dev/zero"), 16).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: "a device", .. }), "{err}");
    }

    /// Makes a FIFO at `path` (tests only).
    #[cfg(unix)]
    pub(crate) fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo").arg(path).status().expect("mkfifo runs");
        assert!(status.success(), "mkfifo {}", path.display());
    }
}
