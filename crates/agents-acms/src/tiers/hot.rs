//! The hot tier: fragments in memory, mirrored to a snapshot file.
//!
//! Reads never touch the disk. Changes mark the tier dirty and
//! [`TierBackend::persist`] writes the snapshot atomically (temp file, fsync,
//! rename), so a crash leaves the previous snapshot whole. Before a change the
//! tier reloads a snapshot another process wrote since it last looked (when it
//! has nothing unsaved of its own): a CLI call and a long-running server see
//! the same hot tier, the last writer winning a race. A snapshot that is not
//! JSON (a torn or damaged file) is moved aside to `hot.json.damaged` with one
//! warning and the tier starts empty: its fragments live nowhere else.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use agents_core::fragment::ContextTier;
use agents_core::tier::TieredFragment;
use agents_store::TierEntry;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{TierBackend, TierError, lock, set_aside};

/// The snapshot file's format version.
const SNAPSHOT_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Snapshot {
    version: u32,
    fragments: Vec<TieredFragment>,
}

#[derive(Default)]
struct HotState {
    fragments: BTreeMap<String, TieredFragment>,
    dirty: bool,
    /// The snapshot's (modified, length) when last read or written.
    seen: Option<(SystemTime, u64)>,
}

/// The in-memory hot tier (see the module docs).
pub struct HotTier {
    state: Mutex<HotState>,
    snapshot: Option<PathBuf>,
}

impl HotTier {
    /// A hot tier kept in memory only.
    pub fn in_memory() -> HotTier {
        HotTier { state: Mutex::new(HotState::default()), snapshot: None }
    }

    /// The hot tier mirrored at `snapshot`, loading it when it exists.
    pub fn open(snapshot: PathBuf) -> Result<HotTier, TierError> {
        let tier = HotTier { state: Mutex::new(HotState::default()), snapshot: Some(snapshot) };
        {
            let mut state = lock(&tier.state);
            tier.reload(&mut state)?;
        }
        Ok(tier)
    }

    fn stamp(&self) -> Option<(SystemTime, u64)> {
        let meta = std::fs::metadata(self.snapshot.as_ref()?).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }

    /// Reads the snapshot if it changed since it was last read or written.
    fn reload(&self, state: &mut HotState) -> Result<(), TierError> {
        let Some(path) = &self.snapshot else { return Ok(()) };
        let stamp = self.stamp();
        if state.dirty || stamp == state.seen {
            return Ok(());
        }
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                state.fragments.clear();
                state.seen = None;
                return Ok(());
            }
            Err(source) => return Err(TierError::Io { path: path.clone(), source }),
        };
        let snapshot: Snapshot = match serde_json::from_slice(&bytes) {
            Ok(snapshot) => snapshot,
            Err(error) => {
                set_aside(path, "the hot tier starts empty", &error.to_string())?;
                state.fragments.clear();
                state.seen = None;
                return Ok(());
            }
        };
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(TierError::Corrupt {
                path: path.clone(),
                message: format!("snapshot version {} (this build reads {SNAPSHOT_VERSION})", snapshot.version),
            });
        }
        state.fragments = snapshot
            .fragments
            .into_iter()
            .map(|f| (f.fragment_id().to_owned(), f.with_tier(ContextTier::Hot)))
            .collect();
        state.seen = stamp;
        Ok(())
    }

    /// Total tokens held.
    pub fn tokens(&self) -> u64 {
        lock(&self.state).fragments.values().map(|f| f.fragment().token_count()).sum()
    }
}

impl TierBackend for HotTier {
    fn tier(&self) -> ContextTier {
        ContextTier::Hot
    }

    fn put(&self, fragment: TieredFragment) -> Result<(), TierError> {
        let mut state = lock(&self.state);
        self.reload(&mut state)?;
        state.fragments.insert(fragment.fragment_id().to_owned(), fragment.with_tier(ContextTier::Hot));
        state.dirty = true;
        Ok(())
    }

    fn get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        Ok(lock(&self.state).fragments.get(fragment_id).cloned())
    }

    fn touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, TierError> {
        let mut state = lock(&self.state);
        let Some(slot) = state.fragments.get_mut(fragment_id) else { return Ok(None) };
        let touched = slot.clone().record_access(at);
        *slot = touched.clone();
        state.dirty = true;
        Ok(Some(touched))
    }

    fn remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        let mut state = lock(&self.state);
        self.reload(&mut state)?;
        let removed = state.fragments.remove(fragment_id);
        state.dirty |= removed.is_some();
        Ok(removed)
    }

    fn entries(&self) -> Result<Vec<TierEntry>, TierError> {
        let state = lock(&self.state);
        let mut entries: Vec<TierEntry> = state.fragments.values().map(entry).collect();
        entries.sort_by(|a, b| (a.last_accessed, &a.fragment_id).cmp(&(b.last_accessed, &b.fragment_id)));
        Ok(entries)
    }

    fn fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, TierError> {
        let state = lock(&self.state);
        Ok(state
            .fragments
            .values()
            .filter(|f| projects.is_none_or(|p| p.iter().any(|name| name == f.project_name())))
            .cloned()
            .collect())
    }

    fn persist(&self) -> Result<(), TierError> {
        let Some(path) = &self.snapshot else { return Ok(()) };
        let mut state = lock(&self.state);
        if !state.dirty {
            return Ok(());
        }
        let snapshot = Snapshot { version: SNAPSHOT_VERSION, fragments: state.fragments.values().cloned().collect() };
        let json = serde_json::to_vec(&snapshot).expect("snapshot serialises");
        agents_fs::atomic_write(path, &json).map_err(|source| TierError::Io { path: path.clone(), source })?;
        state.dirty = false;
        state.seen = self.stamp();
        Ok(())
    }
}

/// The eviction view of a stored fragment.
pub(super) fn entry(fragment: &TieredFragment) -> TierEntry {
    TierEntry {
        fragment_id: fragment.fragment_id().to_owned(),
        project_name: fragment.project_name().to_owned(),
        token_count: fragment.fragment().token_count(),
        access_count: fragment.access_count(),
        last_accessed: fragment.last_accessed(),
    }
}
