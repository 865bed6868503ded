//! Storage tiers: where context fragments live between assemblies, and who
//! sees them (the spec's "Storage Tiers" and `ContextTierService`).
//!
//! Three backends, one small trait ([`TierBackend`]) so tests can drive each
//! directly:
//! - hot ([`HotTier`]): in memory, capped in tokens (`context.hot.max-tokens`),
//!   mirrored to a snapshot file (written atomically) so another process, a CLI
//!   call after a server, sees the same state;
//! - warm ([`WarmTier`]): SQLite rows through [`agents_store::WarmTierStore`],
//!   capped in entries (`context.warm.max-decisions`), kept
//!   `context.warm.retention-hours` after their last access;
//! - cold ([`ColdArchive`]): a zstd-compressed archive on disk, one file per
//!   fragment written atomically, capped in entries
//!   (`context.cold.max-decisions`), kept `context.cold.retention-days`.
//!
//! [`ContextTierManager`] owns the three and moves fragments between them;
//! [`ContextTierService`] is the policy on top: placement, promotion
//! (cold -> warm -> hot), demotion (hot -> warm -> cold, optionally summarised),
//! access tracking on every read, capacity enforcement by evicting the least
//! recently used fragment into the next tier down (cold evicts out), retention
//! sweeps, per-role and per-project views, and hit/miss metrics.
//!
//! Everything is deterministic: least recently used means the oldest
//! `last_accessed`, ties broken by fragment id; listings are sorted by id.
//! The clock is injected ([`Clock`]) so retention is testable.

mod cold;
mod hot;
mod warm;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use agents_core::ValidationError;
use agents_core::config::ContextConfig;
use agents_core::fragment::ContextTier;
use agents_core::tier::{ActorRole, TierBudget, TierMetrics, TieredFragment};
use agents_core::tokens::TokenCounter;
use agents_store::{StoreError, TierEntry, WarmTierStore};
use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

pub use agents_pack::summary::{extractive_summary, summary_lines};
pub use cold::ColdArchive;
pub use hot::HotTier;
pub use warm::WarmTier;

/// Errors of the tier service, each naming the fragment or file concerned.
#[derive(Debug, thiserror::Error)]
pub enum TierError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{path}: {source}", path = path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: unreadable tier file: {message}", path = path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("fragment `{0}` is in no tier")]
    NotFound(String),
    #[error("fragment `{id}` has {tokens} tokens, more than the hot tier's capacity of {capacity}{scope}")]
    TooLargeForHot { id: String, tokens: u64, capacity: u64, scope: String },
    #[error("fragment `{0}` is already in the hot tier")]
    AlreadyHottest(String),
    #[error("fragment `{0}` is already in the cold tier")]
    AlreadyColdest(String),
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

/// Moves a tier file that cannot be read (`{`, a truncated write) aside to
/// `<name>.damaged`, replacing an older one, and says so once on stderr: what it
/// held is not in the store, so it cannot be rebuilt, but it must not make every
/// later command fail. The caller goes on as if the file were absent.
pub(crate) fn set_aside(path: &Path, what: &str, message: &str) -> Result<(), TierError> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(".damaged");
    let aside = PathBuf::from(aside);
    match std::fs::rename(path, &aside) {
        // Another process set it aside first.
        Err(source) if source.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(TierError::Io { path: path.to_owned(), source }),
        Ok(()) => {}
    }
    tracing::warn!(
        "{} was unreadable ({message}); moved to {} and {what}",
        path.display(),
        aside.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
    );
    Ok(())
}

/// Where "now" comes from; tests inject a fixed or advancing clock.
pub type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(agents_core::ids::now_utc)
}

/// One tier's storage. Implementations keep their own lock; every method is
/// atomic on its own. The service, not the backend, enforces capacity.
pub trait TierBackend: Send + Sync {
    /// The tier this backend stores.
    fn tier(&self) -> ContextTier;
    /// Stores `fragment` (already labelled with this tier), replacing one with the same id.
    fn put(&self, fragment: TieredFragment) -> Result<(), TierError>;
    /// The fragment, without recording an access.
    fn get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError>;
    /// The fragment after recording one access at `at`.
    fn touch(&self, fragment_id: &str, at: DateTime<Utc>) -> Result<Option<TieredFragment>, TierError>;
    /// Removes the fragment and returns it.
    fn remove(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError>;
    /// Every fragment's entry, least recently used first (ties by id).
    fn entries(&self) -> Result<Vec<TierEntry>, TierError>;
    /// The fragments of `projects` (all with `None`), sorted by id.
    fn fragments(&self, projects: Option<&[String]>) -> Result<Vec<TieredFragment>, TierError>;
    /// Writes what is held only in memory to disk (a no-op for disk backends).
    fn persist(&self) -> Result<(), TierError> {
        Ok(())
    }
}

/// Capacities and retention of the tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TierSettings {
    pub hot_max_tokens: u64,
    pub warm_max_entries: u64,
    pub warm_retention_hours: u64,
    pub cold_max_entries: u64,
    pub cold_retention_days: u64,
}

impl TierSettings {
    /// From `[context.hot]`, `[context.warm]` and `[context.cold]`.
    pub fn from_config(context: &ContextConfig) -> TierSettings {
        TierSettings {
            hot_max_tokens: context.hot.max_tokens as u64,
            warm_max_entries: context.warm.max_decisions as u64,
            warm_retention_hours: context.warm.retention_hours,
            cold_max_entries: context.cold.max_decisions as u64,
            cold_retention_days: context.cold.retention_days,
        }
    }

    /// The capacity of `tier`: tokens for hot, entries for warm and cold.
    pub fn capacity(&self, tier: ContextTier) -> u64 {
        match tier {
            ContextTier::Hot => self.hot_max_tokens,
            ContextTier::Warm => self.warm_max_entries,
            ContextTier::Cold => self.cold_max_entries,
        }
    }
}

impl Default for TierSettings {
    fn default() -> Self {
        TierSettings::from_config(&ContextConfig::default())
    }
}

/// The capacity of `tier` in a project budget (hot in tokens, others in entries).
fn budget_capacity(budget: &TierBudget, tier: ContextTier) -> u64 {
    match tier {
        ContextTier::Hot => budget.hot_max_tokens(),
        ContextTier::Warm => budget.warm_max_decisions(),
        ContextTier::Cold => budget.cold_max_decisions(),
    }
}

/// A fragment moved by capacity enforcement or a sweep: from a tier to the
/// next one down, or out (`to: None`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Eviction {
    pub fragment_id: String,
    pub from: ContextTier,
    pub to: Option<ContextTier>,
}

/// What a retention sweep moved.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// Warm fragments not read within the warm retention, demoted to cold.
    pub demoted: Vec<String>,
    /// Cold fragments not read within the cold retention, dropped.
    pub expired: Vec<String>,
    /// Everything that moved, cascades included.
    pub evictions: Vec<Eviction>,
}

/// The fragments of some projects, tier by tier, each sorted by id (the spec's
/// `ScopedBackendView`). Reading a view records no access.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScopedView {
    pub projects: Vec<String>,
    pub tiers: BTreeMap<ContextTier, Vec<TieredFragment>>,
}

impl ScopedView {
    /// The fragments of `tier`.
    pub fn tier(&self, tier: ContextTier) -> &[TieredFragment] {
        self.tiers.get(&tier).map_or(&[], Vec::as_slice)
    }

    /// Every fragment, hottest tier first, by id within a tier.
    pub fn all(&self) -> impl Iterator<Item = &TieredFragment> {
        ContextTier::ALL.into_iter().flat_map(|tier| self.tier(tier))
    }

    /// Every fragment `role` may see, hottest tier first.
    pub fn visible_to(&self, role: ActorRole) -> impl Iterator<Item = &TieredFragment> {
        self.all().filter(move |f| f.visible_to(role))
    }
}

/// The three backends, and moving fragments between them.
pub struct ContextTierManager {
    hot: Box<dyn TierBackend>,
    warm: Box<dyn TierBackend>,
    cold: Box<dyn TierBackend>,
}

impl ContextTierManager {
    /// A manager over three backends, one per tier.
    pub fn new(hot: Box<dyn TierBackend>, warm: Box<dyn TierBackend>, cold: Box<dyn TierBackend>) -> Self {
        debug_assert_eq!(
            [hot.tier(), warm.tier(), cold.tier()],
            [ContextTier::Hot, ContextTier::Warm, ContextTier::Cold]
        );
        ContextTierManager { hot, warm, cold }
    }

    /// The production backends: the hot snapshot at `dir/hot.json`, warm rows
    /// in `store`, the cold archive in `dir/cold/`.
    pub fn open(dir: &Path, store: Arc<dyn WarmTierStore>) -> Result<ContextTierManager, TierError> {
        Ok(ContextTierManager::new(
            Box::new(HotTier::open(dir.join("hot.json"))?),
            Box::new(WarmTier::new(store)),
            Box::new(ColdArchive::open(dir.join("cold"))?),
        ))
    }

    /// The backend of `tier`.
    pub fn backend(&self, tier: ContextTier) -> &dyn TierBackend {
        match tier {
            ContextTier::Hot => self.hot.as_ref(),
            ContextTier::Warm => self.warm.as_ref(),
            ContextTier::Cold => self.cold.as_ref(),
        }
    }

    /// The tier holding `fragment_id`, hottest first; records no access.
    pub fn locate(&self, fragment_id: &str) -> Result<Option<ContextTier>, TierError> {
        for tier in ContextTier::ALL {
            if self.backend(tier).get(fragment_id)?.is_some() {
                return Ok(Some(tier));
            }
        }
        Ok(None)
    }

    /// Writes in-memory state to disk.
    pub fn persist(&self) -> Result<(), TierError> {
        ContextTier::ALL.into_iter().try_for_each(|tier| self.backend(tier).persist())
    }
}

/// Fragment lifecycle across the tiers (see the module docs).
pub struct ContextTierService {
    manager: ContextTierManager,
    settings: TierSettings,
    /// Per-project capacities (the project's `--hot-max-tokens` ...), enforced
    /// within the project on top of the global ones.
    project_budgets: Mutex<BTreeMap<String, TierBudget>>,
    clock: Clock,
    tokenizer: Arc<dyn TokenCounter>,
    metrics: Mutex<TierMetrics>,
    /// The counters as last read or written: unchanged ones are not rewritten.
    metrics_saved: Mutex<TierMetrics>,
    /// Where hit and miss counters persist between processes.
    metrics_path: Option<PathBuf>,
}

impl ContextTierService {
    /// A service over `manager`, with in-memory metrics and the system clock.
    pub fn new(manager: ContextTierManager, settings: TierSettings, tokenizer: Arc<dyn TokenCounter>) -> Self {
        ContextTierService {
            manager,
            settings,
            project_budgets: Mutex::new(BTreeMap::new()),
            clock: system_clock(),
            tokenizer,
            metrics: Mutex::new(TierMetrics::default()),
            metrics_saved: Mutex::new(TierMetrics::default()),
            metrics_path: None,
        }
    }

    /// The production service under `dir` (`$AGENTS_HOME/tiers`): backends from
    /// [`ContextTierManager::open`], hit and miss counters in `dir/metrics.json`.
    pub fn open(
        dir: &Path,
        store: Arc<dyn WarmTierStore>,
        settings: TierSettings,
        tokenizer: Arc<dyn TokenCounter>,
    ) -> Result<ContextTierService, TierError> {
        let manager = ContextTierManager::open(dir, store)?;
        let path = dir.join("metrics.json");
        let metrics = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(metrics) => metrics,
                Err(error) => {
                    set_aside(&path, "the hit and miss counters start from zero", &error.to_string())?;
                    TierMetrics::default()
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TierMetrics::default(),
            Err(source) => return Err(TierError::Io { path, source }),
        };
        let mut service = ContextTierService::new(manager, settings, tokenizer);
        service.metrics_saved = Mutex::new(metrics.clone());
        service.metrics = Mutex::new(metrics);
        service.metrics_path = Some(path);
        Ok(service)
    }

    /// The same service reading time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> ContextTierService {
        self.clock = clock;
        self
    }

    pub fn settings(&self) -> &TierSettings {
        &self.settings
    }

    pub fn manager(&self) -> &ContextTierManager {
        &self.manager
    }

    /// Enforces `budget` within `project` from now on, on top of the global capacities.
    pub fn set_project_budget(&self, project: &str, budget: TierBudget) {
        lock(&self.project_budgets).insert(project.to_owned(), budget);
    }

    fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// Places `fragment` in its tier (replacing one with the same id wherever it
    /// is), first evicting least recently used fragments into the next tier down
    /// until it fits. Returns what moved.
    pub fn store(&self, fragment: TieredFragment) -> Result<Vec<Eviction>, TierError> {
        let tier = fragment.tier();
        self.check_fits(&fragment, tier)?;
        if let Some(old) = self.manager.locate(fragment.fragment_id())? {
            self.manager.backend(old).remove(fragment.fragment_id())?;
        }
        let mut evictions = Vec::new();
        self.make_room(tier, &fragment, &mut evictions)?;
        self.manager.backend(tier).put(fragment)?;
        self.persist()?;
        Ok(evictions)
    }

    /// The fragment, recording the access; looks hot, then warm, then cold,
    /// counting a hit in the tier that holds it and a miss in each before.
    pub fn get(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        let now = self.now();
        for tier in ContextTier::ALL {
            let found = self.manager.backend(tier).touch(fragment_id, now)?;
            let mut metrics = lock(&self.metrics);
            let counted = std::mem::take(&mut *metrics);
            *metrics = if found.is_some() { counted.with_hit(tier) } else { counted.with_miss(tier) };
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }

    /// The fragment wherever it is, without recording an access or counting.
    pub fn peek(&self, fragment_id: &str) -> Result<Option<TieredFragment>, TierError> {
        for tier in ContextTier::ALL {
            if let Some(found) = self.manager.backend(tier).get(fragment_id)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Moves the fragment one tier up (cold -> warm -> hot), making room there.
    /// Returns the new tier.
    pub fn promote(&self, fragment_id: &str) -> Result<(ContextTier, Vec<Eviction>), TierError> {
        let from = self.manager.locate(fragment_id)?.ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        let to = from.promoted().ok_or_else(|| TierError::AlreadyHottest(fragment_id.to_owned()))?;
        let fragment =
            self.manager.backend(from).get(fragment_id)?.ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        self.check_fits(&fragment, to)?;
        let evictions = self.move_fragment(from, to, fragment_id, Ok)?;
        self.persist()?;
        Ok((to, evictions))
    }

    /// Moves the fragment one tier down (hot -> warm -> cold), making room
    /// there; with `summarize`, its content becomes a deterministic extractive
    /// summary ([`extractive_summary`]) first. Returns the new tier.
    pub fn demote(&self, fragment_id: &str, summarize: bool) -> Result<(ContextTier, Vec<Eviction>), TierError> {
        let from = self.manager.locate(fragment_id)?.ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        let to = from.demoted().ok_or_else(|| TierError::AlreadyColdest(fragment_id.to_owned()))?;
        let evictions =
            self.move_fragment(from, to, fragment_id, |f| if summarize { self.summarized(f) } else { Ok(f) })?;
        self.persist()?;
        Ok((to, evictions))
    }

    /// Evicts the `count` least recently used fragments of `tier` into the next
    /// tier down (out of the store from cold), cascading capacity enforcement.
    /// Returns how many left `tier`.
    pub fn evict_lru(&self, tier: ContextTier, count: usize) -> Result<usize, TierError> {
        let victims: Vec<String> =
            self.manager.backend(tier).entries()?.into_iter().take(count).map(|e| e.fragment_id).collect();
        let mut evictions = Vec::new();
        for id in &victims {
            self.evict_one(tier, id, &mut evictions)?;
        }
        self.persist()?;
        Ok(victims.len())
    }

    /// Applies retention: warm fragments not read for `warm_retention_hours`
    /// move to cold; cold fragments not read for `cold_retention_days` are dropped.
    pub fn sweep(&self) -> Result<SweepReport, TierError> {
        let now = self.now();
        let mut report = SweepReport::default();
        let warm_cutoff = now - Duration::hours(self.settings.warm_retention_hours.min(i32::MAX as u64) as i64);
        for entry in self.manager.backend(ContextTier::Warm).entries()? {
            if entry.last_accessed < warm_cutoff {
                self.evict_one(ContextTier::Warm, &entry.fragment_id, &mut report.evictions)?;
                report.demoted.push(entry.fragment_id);
            }
        }
        let cold_cutoff = now - Duration::days(self.settings.cold_retention_days.min(i32::MAX as u64) as i64);
        for entry in self.manager.backend(ContextTier::Cold).entries()? {
            if entry.last_accessed < cold_cutoff {
                self.evict_one(ContextTier::Cold, &entry.fragment_id, &mut report.evictions)?;
                report.expired.push(entry.fragment_id);
            }
        }
        if !report.evictions.is_empty() {
            self.persist()?;
        }
        Ok(report)
    }

    /// What `role` sees of `projects`: the role's tiers (hot first, by id within
    /// a tier), less fragments restricted to other roles. Records an access on each.
    pub fn get_for_actor(&self, role: ActorRole, projects: &[String]) -> Result<Vec<TieredFragment>, TierError> {
        let now = self.now();
        let mut seen = Vec::new();
        for &tier in role.visible_tiers() {
            let backend = self.manager.backend(tier);
            for fragment in backend.fragments(Some(projects))? {
                if fragment.visible_to(role)
                    && let Some(touched) = backend.touch(fragment.fragment_id(), now)?
                {
                    seen.push(touched);
                }
            }
        }
        Ok(seen)
    }

    /// Every fragment of `projects`, tier by tier; other projects' fragments
    /// never appear. Records no access.
    pub fn get_scoped_view(&self, projects: &[String]) -> Result<ScopedView, TierError> {
        let mut tiers = BTreeMap::new();
        for tier in ContextTier::ALL {
            tiers.insert(tier, self.manager.backend(tier).fragments(Some(projects))?);
        }
        Ok(ScopedView { projects: projects.to_vec(), tiers })
    }

    /// Hits and misses since the counters began, and each tier's population now.
    pub fn get_metrics(&self) -> Result<TierMetrics, TierError> {
        let mut metrics = lock(&self.metrics).clone();
        for tier in ContextTier::ALL {
            metrics = metrics.with_population(tier, self.manager.backend(tier).entries()?.len() as u64);
        }
        Ok(metrics)
    }

    /// Removes the fragment from whatever tier holds it.
    pub fn remove(&self, fragment_id: &str) -> Result<TieredFragment, TierError> {
        let tier = self.manager.locate(fragment_id)?.ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        let removed = self
            .manager
            .backend(tier)
            .remove(fragment_id)?
            .ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        self.persist()?;
        Ok(removed)
    }

    /// Removes every fragment of `projects`; returns how many.
    pub fn clear(&self, projects: &[String]) -> Result<usize, TierError> {
        let mut removed = 0;
        for tier in ContextTier::ALL {
            let backend = self.manager.backend(tier);
            for fragment in backend.fragments(Some(projects))? {
                removed += usize::from(backend.remove(fragment.fragment_id())?.is_some());
            }
        }
        self.persist()?;
        Ok(removed)
    }

    /// Writes the hot snapshot and the counters to disk.
    pub fn persist(&self) -> Result<(), TierError> {
        self.manager.persist()?;
        if let Some(path) = &self.metrics_path {
            let metrics = lock(&self.metrics).clone();
            let mut saved = lock(&self.metrics_saved);
            if *saved != metrics {
                let json = serde_json::to_vec_pretty(&metrics).expect("metrics serialise");
                agents_fs::atomic_write(path, &json).map_err(|source| TierError::Io { path: path.clone(), source })?;
                *saved = metrics;
            }
        }
        Ok(())
    }

    /// Refuses a fragment that could never fit the hot tier.
    fn check_fits(&self, fragment: &TieredFragment, tier: ContextTier) -> Result<(), TierError> {
        if tier != ContextTier::Hot {
            return Ok(());
        }
        let tokens = fragment.fragment().token_count();
        let too_large = |capacity: u64, scope: String| TierError::TooLargeForHot {
            id: fragment.fragment_id().to_owned(),
            tokens,
            capacity,
            scope,
        };
        if tokens > self.settings.hot_max_tokens {
            return Err(too_large(self.settings.hot_max_tokens, String::new()));
        }
        if let Some(budget) = lock(&self.project_budgets).get(fragment.project_name())
            && tokens > budget.hot_max_tokens()
        {
            return Err(too_large(budget.hot_max_tokens(), format!(" for project {}", fragment.project_name())));
        }
        Ok(())
    }

    /// Takes the fragment out of `from`, transforms it, makes room in `to` and
    /// puts it there; on failure it goes back where it was.
    fn move_fragment(
        &self,
        from: ContextTier,
        to: ContextTier,
        fragment_id: &str,
        transform: impl FnOnce(TieredFragment) -> Result<TieredFragment, TierError>,
    ) -> Result<Vec<Eviction>, TierError> {
        let source = self.manager.backend(from);
        let taken = source.remove(fragment_id)?.ok_or_else(|| TierError::NotFound(fragment_id.to_owned()))?;
        let mut evictions = Vec::new();
        let moved = transform(taken.clone()).and_then(|fragment| {
            let fragment = fragment.with_tier(to);
            self.make_room(to, &fragment, &mut evictions)?;
            self.manager.backend(to).put(fragment)
        });
        if let Err(error) = moved {
            source.put(taken)?;
            return Err(error);
        }
        Ok(evictions)
    }

    /// Evicts from `tier` until `incoming` fits both the global capacity and its
    /// project's, least recently used first (ties by id).
    fn make_room(
        &self,
        tier: ContextTier,
        incoming: &TieredFragment,
        evictions: &mut Vec<Eviction>,
    ) -> Result<(), TierError> {
        let project = incoming.project_name();
        let project_capacity = lock(&self.project_budgets).get(project).map(|b| budget_capacity(b, tier));
        let weight = |tokens: u64| if tier == ContextTier::Hot { tokens } else { 1 };
        let incoming_weight = weight(incoming.fragment().token_count());
        let entries: Vec<TierEntry> = self
            .manager
            .backend(tier)
            .entries()?
            .into_iter()
            .filter(|e| e.fragment_id != incoming.fragment_id())
            .collect();
        let mut total: u64 = entries.iter().map(|e| weight(e.token_count)).sum();
        let mut in_project: u64 =
            entries.iter().filter(|e| e.project_name == project).map(|e| weight(e.token_count)).sum();
        let capacity = self.settings.capacity(tier);
        let mut victims = Vec::new();
        for entry in &entries {
            let over_global = total + incoming_weight > capacity;
            let over_project = project_capacity.is_some_and(|c| in_project + incoming_weight > c);
            if !over_global && !over_project {
                break;
            }
            // Over only the project's capacity: only the project's own entries go.
            if !over_global && entry.project_name != project {
                continue;
            }
            total -= weight(entry.token_count);
            if entry.project_name == project {
                in_project -= weight(entry.token_count);
            }
            victims.push(entry.fragment_id.clone());
        }
        for id in victims {
            self.evict_one(tier, &id, evictions)?;
        }
        Ok(())
    }

    /// Moves one fragment from `tier` to the next tier down (making room there
    /// in turn), or out of the store from cold.
    fn evict_one(&self, tier: ContextTier, fragment_id: &str, evictions: &mut Vec<Eviction>) -> Result<(), TierError> {
        let Some(fragment) = self.manager.backend(tier).remove(fragment_id)? else { return Ok(()) };
        let to = tier.demoted();
        evictions.push(Eviction { fragment_id: fragment_id.to_owned(), from: tier, to });
        if let Some(to) = to {
            let fragment = fragment.with_tier(to);
            self.make_room(to, &fragment, evictions)?;
            self.manager.backend(to).put(fragment)?;
        }
        Ok(())
    }

    /// The fragment with its content replaced by an extractive summary at most
    /// a quarter of its tokens (at least 32), depth at most 3 (one-line summaries).
    fn summarized(&self, tiered: TieredFragment) -> Result<TieredFragment, TierError> {
        let fragment = tiered.fragment();
        let original = fragment.token_count();
        let target = (original / 4).max(32) as usize;
        let summary = extractive_summary(fragment.content(), target, self.tokenizer.as_ref());
        if summary == fragment.content() {
            return Ok(tiered);
        }
        let tokens = self.tokenizer.count(&summary) as u64;
        let depth = fragment.detail_depth().min(3);
        let rebuilt = fragment
            .clone()
            .into_builder()
            .content(summary)
            .token_count(tokens)
            .detail_depth(depth)
            .metadata_entry("summarized_from_tokens", original.to_string())
            .build()?;
        let roles: BTreeSet<ActorRole> = tiered.role_visibility().clone();
        Ok(TieredFragment::new(rebuilt, tiered.project_name())?
            .with_role_visibility(roles)
            .with_access(tiered.access_count(), tiered.last_accessed()))
    }
}

impl Drop for ContextTierService {
    fn drop(&mut self) {
        // Access statistics recorded by reads since the last write.
        if let Err(error) = self.persist() {
            tracing::warn!(%error, "could not save the hot tier on exit");
        }
    }
}

/// The name context entries go by in an assembly (their run, their provenance).
pub const CONTEXT_ENTRIES: &str = "context-entries";

/// Stored fragments as inline candidates for the assembly pipeline, best
/// first: relevance by tier (hot 0.9, warm 0.75, cold 0.6) plus up to 0.1 for
/// the share of the query's words the fragment contains; ties by id. Each
/// carries its tier (the delivered fragment's `tier`) and, for a file or symbol
/// entry, its UKO node: an entry that does not fit is re-rendered from the node
/// at a shallower depth, or else summarised ([`crate::pipeline::piece::StoreRenderer`]).
pub fn entry_candidates(fragments: &[TieredFragment], query: &str) -> Vec<crate::query::Candidate> {
    let words: BTreeSet<String> = agents_search::code_tokens(query).into_iter().collect();
    let mut candidates: Vec<crate::query::Candidate> = fragments
        .iter()
        .map(|tiered| {
            let fragment = tiered.fragment();
            let base = match tiered.tier() {
                ContextTier::Hot => 0.9,
                ContextTier::Warm => 0.75,
                ContextTier::Cold => 0.6,
            };
            let own: BTreeSet<String> = agents_search::code_tokens(fragment.content()).into_iter().collect();
            let overlap = words.iter().filter(|w| own.contains(*w)).count() as f32 / words.len().max(1) as f32;
            let label = ["title", "source"].iter().find_map(|k| fragment.metadata().get(*k)).map_or("", String::as_str);
            crate::query::Candidate {
                note: Some(format!("context entry, {} tier: {label}", tiered.tier())),
                content: Some(format!("{}\n", fragment.content().trim_end())),
                entry: Some(crate::query::EntryOrigin {
                    tier: tiered.tier(),
                    // File and symbol entries name the UKO node they were taken from.
                    node: fragment.uko_node().starts_with("uko://").then(|| fragment.uko_node().to_owned()),
                }),
                ..crate::query::Candidate::new(
                    format!("context://{}/{}", tiered.project_name(), tiered.fragment_id()),
                    "",
                    (base + 0.1 * overlap).clamp(0.0, 1.0),
                    fragment.detail_depth(),
                    CONTEXT_ENTRIES,
                )
            }
        })
        .collect();
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.uri.cmp(&b.uri)));
    candidates
}

/// A poisoned lock holds plain data that is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests;
