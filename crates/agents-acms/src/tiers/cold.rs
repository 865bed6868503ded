//! The cold tier: a compressed archive on disk.
//!
//! One file per fragment, `<fragment id>.zst`: the stored fragment (with its
//! access statistics) as JSON, compressed with zstd. Every write goes through
//! [`agents_fs::atomic_write`] (temp file, fsync, rename), so a fragment is
//! either archived whole or not at all; one file per fragment keeps a read or
//! an access update to one small file, where a single archive would be
//! rewritten whole. Ids are checked to be ULIDs before they become file names.
//! A file that does not decode (a damaged disk, a hand edit) is moved aside to
//! `<id>.zst.damaged` with one warning and read as absent.

use std::path::{Path, PathBuf};

use agents_core::fragment::ContextTier;
use agents_core::ids::check_ulid;
use agents_core::tier::TieredFragment;
use agents_store::TierEntry;
use chrono::{DateTime, Utc};

use super::hot::entry;
use super::{TierBackend, TierError, set_aside};

/// zstd level: small text compresses well at the default level, and fast.
const LEVEL: i32 = 3;
const EXTENSION: &str = "zst";

/// The on-disk cold archive (see the module docs).
pub struct ColdArchive {
    dir: PathBuf,
}

impl ColdArchive {
    /// The archive in `dir`, created when missing.
    pub fn open(dir: PathBuf) -> Result<ColdArchive, TierError> {
        std::fs::create_dir_all(&dir).map_err(|source| TierError::Io { path: dir.clone(), source })?;
        Ok(ColdArchive { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a fragment id, or `None` for a string that is no ULID
    /// (which no stored fragment has).
    fn file(&self, fragment_id: &str) -> Option<PathBuf> {
        check_ulid("ColdArchive", "fragment_id", fragment_id).ok()?;
        Some(self.dir.join(format!("{fragment_id}.{EXTENSION}")))
    }

    fn read(&self, path: &Path) -> Result<Option<TieredFragment>, TierError> {
        let compressed = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(TierError::Io { path: path.to_path_buf(), source }),
        };
        let decoded = zstd::decode_all(compressed.as_slice())
            .map_err(|e| e.to_string())
            .and_then(|json| serde_json::from_slice::<TieredFragment>(&json).map_err(|e| e.to_string()));
        match decoded {
            Ok(fragment) => Ok(Some(fragment.with_tier(ContextTier::Cold))),
            // A damaged entry is set aside and read as absent.
            Err(message) => set_aside(path, "the fragment is dropped from the cold tier", &message).map(|()| None),
        }
    }

    fn write(&self, fragment: &TieredFragment) -> Result<(), TierError> {
        let path = self.file(fragment.fragment_id()).expect("a stored fragment's id is a ULID");
        let json = serde_json::to_vec(fragment).expect("fragment serialises");
        let compressed =
            zstd::encode_all(json.as_slice(), LEVEL).map_err(|source| TierError::Io { path: path.clone(), source })?;
        agents_fs::atomic_write(&path, &compressed).map_err(|source| TierError::Io { path, source })
    }

    /// Every archived fragment, sorted by id.
    fn all(&self) -> Result<Vec<TieredFragment>, TierError> {
        let io = |source| TierError::Io { path: self.dir.clone(), source };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == EXTENSION))
            .collect();
        paths.sort();
        let mut fragments = Vec::with_capacity(paths.len());
        for path in paths {
            // A file removed since the listing is simply gone.
            if let Some(fragment) = self.read(&path)? {
                fragments.push(fragment);
            }
        }
        Ok(fragments)
    }
}

impl TierBackend for ColdArchive {
    fn tier(&self) -> ContextTier {
        ContextTier::Cold
    }

    fn put(&self, fragment: TieredFragment) -> Result<(), TierError> {
        self.write(&fragment.with_tier(ContextTier::Cold))
    }

    fn get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        match self.file(fragment_id) {
            Some(path) => self.read(&path),
            None => Ok(None),
        }
    }

    fn touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, TierError> {
        let Some(fragment) = self.get(fragment_id)? else { return Ok(None) };
        let touched = fragment.record_access(at);
        self.write(&touched)?;
        Ok(Some(touched))
    }

    fn remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        let Some(path) = self.file(fragment_id) else { return Ok(None) };
        let Some(fragment) = self.read(&path)? else { return Ok(None) };
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(TierError::Io { path, source: e }),
            _ => Ok(Some(fragment)),
        }
    }

    fn entries(&self) -> Result<Vec<TierEntry>, TierError> {
        let mut entries: Vec<TierEntry> = self.all()?.iter().map(entry).collect();
        entries.sort_by(|a, b| (a.last_accessed, &a.fragment_id).cmp(&(b.last_accessed, &b.fragment_id)));
        Ok(entries)
    }

    fn fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, TierError> {
        let mut fragments = self.all()?;
        fragments.retain(|f| projects.is_none_or(|p| p.iter().any(|name| name == f.project_name())));
        Ok(fragments)
    }
}
