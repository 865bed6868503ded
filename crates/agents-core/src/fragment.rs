//! Fragments, budgets and assembled payloads: the values context flows in.
//!
//! A [`ContextFragment`] is the atomic unit every strategy returns and the
//! pipeline consumes: one UKO node rendered at one detail depth, with its
//! token count, relevance and provenance. A [`ContextBudget`] is the hard
//! token ceiling the pipeline packs into, and an [`AssembledContext`] (the
//! spec's `ContextPayload`) is what an actor finally receives.
//!
//! All of them are immutable values. Constructors and deserialization enforce
//! the spec's constraints, and derived values (available tokens, total tokens,
//! budget used, context hash, provenance map) are computed here from the parts
//! they derive from; a serialized derived value is checked, never trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::error::{Validated, ValidationError, check_unit_interval};
use crate::ids::{check_ulid, new_ulid, now_utc};

/// The deepest detail depth: 9 renders everything (`FULL_SOURCE`).
pub const MAX_DETAIL_DEPTH: u8 = 9;
/// Longest fragment content, in characters.
pub const MAX_CONTENT_CHARS: usize = 1_000_000;
/// Most metadata entries a fragment may carry.
pub const MAX_METADATA_ENTRIES: usize = 64;
/// Longest provenance source path, in bytes (the `indexed_files.path` column).
pub const MAX_SOURCE_PATH_BYTES: usize = 1024;
/// Relevance a fragment gets when its strategy gives none.
pub const DEFAULT_RELEVANCE_SCORE: f64 = 0.5;

/// Checks that `value` has something other than whitespace in it.
pub(crate) fn check_non_blank(model: &'static str, field: &'static str, value: &str) -> Validated<()> {
    if value.trim().is_empty() { Err(ValidationError::new(model, field, "must not be empty")) } else { Ok(()) }
}

/// Checks that every item of a list is non-blank, naming the first bad index.
pub(crate) fn check_items_non_blank(model: &'static str, field: &'static str, items: &[String]) -> Validated<()> {
    match items.iter().position(|item| item.trim().is_empty()) {
        Some(index) => Err(ValidationError::new(model, field, format!("item {index} must not be empty"))),
        None => Ok(()),
    }
}

/// Finishes `hasher` as lowercase hex.
fn sha256_hex(hasher: Sha256) -> String {
    use std::fmt::Write;
    hasher.finalize().iter().fold(String::with_capacity(64), |mut hex, byte| {
        let _ = write!(hex, "{byte:02x}");
        hex
    })
}

/// A byte or line range within a source file.
///
/// Written `42:1-87:0` (line:column to line:column) or `100-250` (bytes).
/// The start never lies after the end. Serialized as that string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceRange(RangeRepr);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum RangeRepr {
    Lines { start: (u32, u32), end: (u32, u32) },
    Bytes { start: u64, end: u64 },
}

impl SourceRange {
    const MODEL: &'static str = "FragmentProvenance";
    const FIELD: &'static str = "source_range";

    /// A line:column range; `(start_line, start_column)` must not come after the end.
    pub fn lines(start_line: u32, start_column: u32, end_line: u32, end_column: u32) -> Validated<SourceRange> {
        let (start, end) = ((start_line, start_column), (end_line, end_column));
        if start > end {
            return Err(ValidationError::new(
                Self::MODEL,
                Self::FIELD,
                format!("start {start_line}:{start_column} lies after end {end_line}:{end_column}"),
            ));
        }
        Ok(SourceRange(RangeRepr::Lines { start, end }))
    }

    /// A byte range; `start` must not exceed `end`.
    pub fn bytes(start: u64, end: u64) -> Validated<SourceRange> {
        if start > end {
            return Err(ValidationError::new(Self::MODEL, Self::FIELD, format!("start {start} lies after end {end}")));
        }
        Ok(SourceRange(RangeRepr::Bytes { start, end }))
    }

    /// `(start_line, start_column, end_line, end_column)` for a line range.
    pub fn line_span(&self) -> Option<(u32, u32, u32, u32)> {
        match self.0 {
            RangeRepr::Lines { start, end } => Some((start.0, start.1, end.0, end.1)),
            RangeRepr::Bytes { .. } => None,
        }
    }

    /// `(start, end)` for a byte range.
    pub fn byte_span(&self) -> Option<(u64, u64)> {
        match self.0 {
            RangeRepr::Bytes { start, end } => Some((start, end)),
            RangeRepr::Lines { .. } => None,
        }
    }
}

impl fmt::Display for SourceRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            RangeRepr::Lines { start, end } => {
                write!(f, "{}:{}-{}:{}", start.0, start.1, end.0, end.1)
            }
            RangeRepr::Bytes { start, end } => write!(f, "{start}-{end}"),
        }
    }
}

impl FromStr for SourceRange {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<SourceRange> {
        let malformed = || {
            ValidationError::new(
                Self::MODEL,
                Self::FIELD,
                format!("`{text}` is not `line:column-line:column` or `start-end`"),
            )
        };
        let (start, end) = text.trim().split_once('-').ok_or_else(malformed)?;
        match (start.split_once(':'), end.split_once(':')) {
            (Some((start_line, start_column)), Some((end_line, end_column))) => {
                let number = |part: &str| part.parse::<u32>().map_err(|_| malformed());
                SourceRange::lines(number(start_line)?, number(start_column)?, number(end_line)?, number(end_column)?)
            }
            (None, None) => {
                let number = |part: &str| part.parse::<u64>().map_err(|_| malformed());
                SourceRange::bytes(number(start)?, number(end)?)
            }
            _ => Err(malformed()),
        }
    }
}

impl Serialize for SourceRange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SourceRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a fragment came from: the spec's `sourceResource`, `sourcePath` and
/// `sourceRange`, plus the strategy that retrieved it (scoring weighs strategy
/// quality, and the preamble summarises contributions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ProvenanceRaw")]
pub struct FragmentProvenance {
    resource_id: String,
    source_path: String,
    source_range: Option<SourceRange>,
    strategy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProvenanceRaw {
    resource_id: String,
    source_path: String,
    source_range: Option<SourceRange>,
    strategy: Option<String>,
}

impl FragmentProvenance {
    const MODEL: &'static str = "FragmentProvenance";

    /// Provenance in resource `resource_id` (a ULID) at `source_path`
    /// (relative to the resource root, 1-1024 bytes).
    pub fn new(resource_id: impl Into<String>, source_path: impl Into<String>) -> Validated<FragmentProvenance> {
        let (resource_id, source_path) = (resource_id.into(), source_path.into());
        check_ulid(Self::MODEL, "resource_id", &resource_id)?;
        check_non_blank(Self::MODEL, "source_path", &source_path)?;
        if source_path.len() > MAX_SOURCE_PATH_BYTES {
            return Err(ValidationError::new(
                Self::MODEL,
                "source_path",
                format!("must be at most {MAX_SOURCE_PATH_BYTES} bytes, got {}", source_path.len()),
            ));
        }
        Ok(FragmentProvenance { resource_id, source_path, source_range: None, strategy: None })
    }

    /// The same provenance narrowed to `range` within the file.
    pub fn with_source_range(self, range: SourceRange) -> FragmentProvenance {
        FragmentProvenance { source_range: Some(range), ..self }
    }

    /// The same provenance, recording the strategy that retrieved the fragment.
    pub fn with_strategy(self, strategy: impl Into<String>) -> Validated<FragmentProvenance> {
        let strategy = strategy.into();
        check_non_blank(Self::MODEL, "strategy", &strategy)?;
        Ok(FragmentProvenance { strategy: Some(strategy), ..self })
    }

    /// ULID of the resource the node was extracted from.
    pub fn resource_id(&self) -> &str {
        &self.resource_id
    }

    /// File path within the resource, `/`-separated.
    pub fn source_path(&self) -> &str {
        &self.source_path
    }

    /// Range within the file, when narrower than the whole file.
    pub fn source_range(&self) -> Option<SourceRange> {
        self.source_range
    }

    /// Name of the strategy that retrieved the fragment, if recorded.
    pub fn strategy(&self) -> Option<&str> {
        self.strategy.as_deref()
    }
}

impl TryFrom<ProvenanceRaw> for FragmentProvenance {
    type Error = ValidationError;

    fn try_from(raw: ProvenanceRaw) -> Validated<FragmentProvenance> {
        let mut provenance = FragmentProvenance::new(raw.resource_id, raw.source_path)?;
        if let Some(range) = raw.source_range {
            provenance = provenance.with_source_range(range);
        }
        if let Some(strategy) = raw.strategy {
            provenance = provenance.with_strategy(strategy)?;
        }
        Ok(provenance)
    }
}

/// Priority tier of a fragment: `hot > warm > cold`.
///
/// On a [`ContextFragment`] this is the sort-priority label used while
/// assembling; the tier service uses the same values as storage placement.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextTier {
    /// File archive; historical context, strategists only.
    Cold,
    /// Fast disk; the default placement.
    #[default]
    Warm,
    /// In memory; visible to every role.
    Hot,
}

impl ContextTier {
    /// Every tier, hottest first.
    pub const ALL: [ContextTier; 3] = [ContextTier::Hot, ContextTier::Warm, ContextTier::Cold];

    pub fn as_str(self) -> &'static str {
        match self {
            ContextTier::Hot => "hot",
            ContextTier::Warm => "warm",
            ContextTier::Cold => "cold",
        }
    }

    /// The next hotter tier (cold -> warm -> hot), `None` from hot.
    pub fn promoted(self) -> Option<ContextTier> {
        match self {
            ContextTier::Cold => Some(ContextTier::Warm),
            ContextTier::Warm => Some(ContextTier::Hot),
            ContextTier::Hot => None,
        }
    }

    /// The next colder tier (hot -> warm -> cold), `None` from cold.
    pub fn demoted(self) -> Option<ContextTier> {
        match self {
            ContextTier::Hot => Some(ContextTier::Warm),
            ContextTier::Warm => Some(ContextTier::Cold),
            ContextTier::Cold => None,
        }
    }
}

impl fmt::Display for ContextTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ContextTier {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<ContextTier> {
        ContextTier::ALL.into_iter().find(|tier| tier.as_str() == text).ok_or_else(|| {
            ValidationError::new(
                "ContextFragment",
                "tier",
                format!("unknown tier `{text}`, expected hot, warm or cold"),
            )
        })
    }
}

/// The atomic unit of context: one UKO node rendered at one detail depth.
///
/// Build with [`ContextFragment::builder`]; change with
/// [`ContextFragment::into_builder`], which re-validates on `build`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FragmentBuilder")]
pub struct ContextFragment {
    fragment_id: String,
    uko_node: String,
    content: String,
    detail_depth: u8,
    token_count: u64,
    relevance_score: f64,
    provenance: FragmentProvenance,
    tier: ContextTier,
    metadata: BTreeMap<String, String>,
    #[serde(serialize_with = "crate::ids::serialize_fixed_time")]
    created_at: DateTime<Utc>,
}

/// Parts of a [`ContextFragment`] before validation; also its serde mirror,
/// so JSON and the builder go through the same checks.
///
/// `fragment_id` and `created_at` are generated at `build` when not set.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FragmentBuilder {
    #[serde(default)]
    fragment_id: Option<String>,
    uko_node: String,
    content: String,
    #[serde(default)]
    detail_depth: u8,
    token_count: u64,
    #[serde(default = "default_relevance_score")]
    relevance_score: f64,
    provenance: FragmentProvenance,
    #[serde(default)]
    tier: ContextTier,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    created_at: Option<DateTime<Utc>>,
}

fn default_relevance_score() -> f64 {
    DEFAULT_RELEVANCE_SCORE
}

impl FragmentBuilder {
    /// Use this id instead of a fresh ULID.
    pub fn fragment_id(mut self, fragment_id: impl Into<String>) -> Self {
        self.fragment_id = Some(fragment_id.into());
        self
    }

    /// UKO URI of the source node.
    pub fn uko_node(mut self, uko_node: impl Into<String>) -> Self {
        self.uko_node = uko_node.into();
        self
    }

    /// Rendered text, at most [`MAX_CONTENT_CHARS`] characters.
    pub fn content(mut self, content: impl Into<String>) -> Self {
        self.content = content.into();
        self
    }

    /// Resolved depth, `0..=9` (default 0).
    pub fn detail_depth(mut self, detail_depth: u8) -> Self {
        self.detail_depth = detail_depth;
        self
    }

    /// Exact token count of the content.
    pub fn token_count(mut self, token_count: u64) -> Self {
        self.token_count = token_count;
        self
    }

    /// Score in `[0, 1]` (default 0.5).
    pub fn relevance_score(mut self, relevance_score: f64) -> Self {
        self.relevance_score = relevance_score;
        self
    }

    pub fn provenance(mut self, provenance: FragmentProvenance) -> Self {
        self.provenance = provenance;
        self
    }

    /// Priority tier (default warm).
    pub fn tier(mut self, tier: ContextTier) -> Self {
        self.tier = tier;
        self
    }

    /// Replaces all metadata (at most [`MAX_METADATA_ENTRIES`] entries).
    pub fn metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Adds or replaces one metadata entry.
    pub fn metadata_entry(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Use this creation time instead of now.
    pub fn created_at(mut self, created_at: DateTime<Utc>) -> Self {
        self.created_at = Some(created_at);
        self
    }

    /// Checks every constraint and builds the fragment.
    pub fn build(self) -> Validated<ContextFragment> {
        const M: &str = "ContextFragment";
        let fragment_id = self.fragment_id.unwrap_or_else(new_ulid);
        check_ulid(M, "fragment_id", &fragment_id)?;
        check_non_blank(M, "uko_node", &self.uko_node)?;
        let chars = self.content.chars().count();
        if chars > MAX_CONTENT_CHARS {
            return Err(ValidationError::new(
                M,
                "content",
                format!("must be at most {MAX_CONTENT_CHARS} characters, got {chars}"),
            ));
        }
        if self.detail_depth > MAX_DETAIL_DEPTH {
            return Err(ValidationError::new(
                M,
                "detail_depth",
                format!("must be between 0 and {MAX_DETAIL_DEPTH}, got {}", self.detail_depth),
            ));
        }
        check_unit_interval(M, "relevance_score", self.relevance_score)?;
        if self.metadata.len() > MAX_METADATA_ENTRIES {
            return Err(ValidationError::new(
                M,
                "metadata",
                format!("must have at most {MAX_METADATA_ENTRIES} entries, got {}", self.metadata.len()),
            ));
        }
        if self.metadata.keys().any(|key| key.trim().is_empty()) {
            return Err(ValidationError::new(M, "metadata", "keys must not be empty"));
        }
        Ok(ContextFragment {
            fragment_id,
            uko_node: self.uko_node,
            content: self.content,
            detail_depth: self.detail_depth,
            token_count: self.token_count,
            relevance_score: self.relevance_score,
            provenance: self.provenance,
            tier: self.tier,
            metadata: self.metadata,
            created_at: self.created_at.unwrap_or_else(now_utc),
        })
    }
}

impl TryFrom<FragmentBuilder> for ContextFragment {
    type Error = ValidationError;

    fn try_from(builder: FragmentBuilder) -> Validated<ContextFragment> {
        builder.build()
    }
}

impl ContextFragment {
    /// Starts a fragment from its required parts; every other field takes the
    /// spec default (depth 0, relevance 0.5, warm, no metadata, new id, now).
    pub fn builder(
        uko_node: impl Into<String>,
        content: impl Into<String>,
        token_count: u64,
        provenance: FragmentProvenance,
    ) -> FragmentBuilder {
        FragmentBuilder {
            fragment_id: None,
            uko_node: uko_node.into(),
            content: content.into(),
            detail_depth: 0,
            token_count,
            relevance_score: DEFAULT_RELEVANCE_SCORE,
            provenance,
            tier: ContextTier::default(),
            metadata: BTreeMap::new(),
            created_at: None,
        }
    }

    /// A builder holding this fragment's values (id and time included), to
    /// derive a changed fragment: a new score, a shallower rendering.
    pub fn into_builder(self) -> FragmentBuilder {
        FragmentBuilder {
            fragment_id: Some(self.fragment_id),
            uko_node: self.uko_node,
            content: self.content,
            detail_depth: self.detail_depth,
            token_count: self.token_count,
            relevance_score: self.relevance_score,
            provenance: self.provenance,
            tier: self.tier,
            metadata: self.metadata,
            created_at: Some(self.created_at),
        }
    }

    /// The same fragment labelled with another tier (always valid).
    pub fn with_tier(self, tier: ContextTier) -> ContextFragment {
        ContextFragment { tier, ..self }
    }

    /// Stable ULID of this fragment.
    pub fn fragment_id(&self) -> &str {
        &self.fragment_id
    }

    /// UKO URI of the source node.
    pub fn uko_node(&self) -> &str {
        &self.uko_node
    }

    pub fn content(&self) -> &str {
        &self.content
    }

    /// `0` (MODULE_LISTING) through `9` (FULL_SOURCE).
    pub fn detail_depth(&self) -> u8 {
        self.detail_depth
    }

    pub fn token_count(&self) -> u64 {
        self.token_count
    }

    pub fn relevance_score(&self) -> f64 {
        self.relevance_score
    }

    pub fn provenance(&self) -> &FragmentProvenance {
        &self.provenance
    }

    pub fn tier(&self) -> ContextTier {
        self.tier
    }

    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    pub fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }

    /// SHA-256 of the content, lowercase hex; what content-hash dedup compares.
    pub fn content_hash(&self) -> String {
        sha256_hex(Sha256::new_with_prefix(self.content.as_bytes()))
    }
}

/// The token ceiling an assembly packs into.
///
/// Invariant: `max_tokens >= 1` and `reserved_tokens < max_tokens`, so
/// [`available_tokens`](ContextBudget::available_tokens) is always at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "BudgetWire", into = "BudgetWire")]
pub struct ContextBudget {
    max_tokens: u64,
    reserved_tokens: u64,
}

/// Serialized form of a budget: the spec lists `available_tokens` as a
/// (computed) field, so it is written out and checked when read back.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetWire {
    #[serde(default = "default_max_tokens")]
    max_tokens: u64,
    #[serde(default = "default_reserved_tokens")]
    reserved_tokens: u64,
    #[serde(default)]
    available_tokens: Option<u64>,
}

fn default_max_tokens() -> u64 {
    ContextBudget::DEFAULT_MAX_TOKENS
}

fn default_reserved_tokens() -> u64 {
    ContextBudget::DEFAULT_RESERVED_TOKENS
}

impl ContextBudget {
    pub const DEFAULT_MAX_TOKENS: u64 = 4096;
    pub const DEFAULT_RESERVED_TOKENS: u64 = 512;
    const MODEL: &'static str = "ContextBudget";

    /// A budget of `max_tokens` (>= 1) of which `reserved_tokens`
    /// (< `max_tokens`) are kept for the system prompt.
    pub fn new(max_tokens: u64, reserved_tokens: u64) -> Validated<ContextBudget> {
        if max_tokens < 1 {
            return Err(ValidationError::new(Self::MODEL, "max_tokens", "must be at least 1, got 0"));
        }
        if reserved_tokens >= max_tokens {
            return Err(ValidationError::new(
                Self::MODEL,
                "reserved_tokens",
                format!("must be less than max_tokens ({max_tokens}), got {reserved_tokens}"),
            ));
        }
        Ok(ContextBudget { max_tokens, reserved_tokens })
    }

    pub fn max_tokens(&self) -> u64 {
        self.max_tokens
    }

    pub fn reserved_tokens(&self) -> u64 {
        self.reserved_tokens
    }

    /// `max_tokens - reserved_tokens`: what fragments may use; at least 1.
    pub fn available_tokens(&self) -> u64 {
        self.max_tokens - self.reserved_tokens
    }
}

impl Default for ContextBudget {
    fn default() -> Self {
        ContextBudget { max_tokens: Self::DEFAULT_MAX_TOKENS, reserved_tokens: Self::DEFAULT_RESERVED_TOKENS }
    }
}

impl TryFrom<BudgetWire> for ContextBudget {
    type Error = ValidationError;

    fn try_from(wire: BudgetWire) -> Validated<ContextBudget> {
        let budget = ContextBudget::new(wire.max_tokens, wire.reserved_tokens)?;
        match wire.available_tokens {
            Some(given) if given != budget.available_tokens() => Err(ValidationError::new(
                Self::MODEL,
                "available_tokens",
                format!("must equal max_tokens - reserved_tokens ({}), got {given}", budget.available_tokens()),
            )),
            _ => Ok(budget),
        }
    }
}

impl From<ContextBudget> for BudgetWire {
    fn from(budget: ContextBudget) -> BudgetWire {
        BudgetWire {
            max_tokens: budget.max_tokens,
            reserved_tokens: budget.reserved_tokens,
            available_tokens: Some(budget.available_tokens()),
        }
    }
}

/// SHA-256 (lowercase hex) of the assembled content: each fragment's content
/// in order, each preceded by its byte length as a big-endian `u64` so that
/// different splits of the same text never share a hash.
pub fn context_hash(fragments: &[ContextFragment]) -> String {
    let mut hasher = Sha256::new();
    for fragment in fragments {
        hasher.update((fragment.content.len() as u64).to_be_bytes());
        hasher.update(fragment.content.as_bytes());
    }
    sha256_hex(hasher)
}

/// The fused, budget-respecting payload delivered to an actor.
///
/// `total_tokens`, `budget_used`, `context_hash` and `provenance_map` are
/// computed from the fragments at `build`. The payload may exceed its budget
/// (so callers can detect it with [`is_within_budget`](Self::is_within_budget));
/// `budget_used` is then clamped to 1.0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "AssembledContextRaw")]
pub struct AssembledContext {
    payload_id: String,
    plan_id: String,
    fragments: Vec<ContextFragment>,
    total_tokens: u64,
    budget: ContextBudget,
    budget_used: f64,
    strategies_used: Vec<String>,
    context_hash: String,
    preamble: Option<String>,
    provenance_map: BTreeMap<String, FragmentProvenance>,
    #[serde(serialize_with = "crate::ids::serialize_fixed_time")]
    assembled_at: DateTime<Utc>,
}

/// The spec's other name for [`AssembledContext`].
pub type ContextPayload = AssembledContext;

/// Parts of an [`AssembledContext`] before validation.
///
/// `payload_id` and `assembled_at` are generated at `build` when not set.
#[derive(Clone, Debug, PartialEq)]
pub struct AssembledContextBuilder {
    payload_id: Option<String>,
    plan_id: String,
    fragments: Vec<ContextFragment>,
    budget: ContextBudget,
    strategies_used: Vec<String>,
    preamble: Option<String>,
    assembled_at: Option<DateTime<Utc>>,
}

impl AssembledContextBuilder {
    /// Use this id instead of a fresh ULID.
    pub fn payload_id(mut self, payload_id: impl Into<String>) -> Self {
        self.payload_id = Some(payload_id.into());
        self
    }

    /// The fragments, in delivery order; ids must be distinct.
    pub fn fragments(mut self, fragments: Vec<ContextFragment>) -> Self {
        self.fragments = fragments;
        self
    }

    /// Names of the strategies that contributed, in order.
    pub fn strategies_used(mut self, strategies: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.strategies_used = strategies.into_iter().map(Into::into).collect();
        self
    }

    /// Structure summary placed before the fragments (the generator keeps it
    /// within its 200-token cap).
    pub fn preamble(mut self, preamble: impl Into<String>) -> Self {
        self.preamble = Some(preamble.into());
        self
    }

    /// Use this assembly time instead of now.
    pub fn assembled_at(mut self, assembled_at: DateTime<Utc>) -> Self {
        self.assembled_at = Some(assembled_at);
        self
    }

    /// Checks the parts, computes the derived fields and builds the payload.
    pub fn build(self) -> Validated<AssembledContext> {
        const M: &str = "AssembledContext";
        let payload_id = self.payload_id.unwrap_or_else(new_ulid);
        check_ulid(M, "payload_id", &payload_id)?;
        check_non_blank(M, "plan_id", &self.plan_id)?;
        check_items_non_blank(M, "strategies_used", &self.strategies_used)?;
        let mut seen = BTreeSet::new();
        if let Some(duplicate) = self.fragments.iter().find(|f| !seen.insert(f.fragment_id.as_str())) {
            return Err(ValidationError::new(
                M,
                "fragments",
                format!("fragment `{}` appears more than once", duplicate.fragment_id),
            ));
        }
        let total_tokens = self
            .fragments
            .iter()
            .try_fold(0u64, |sum, f| sum.checked_add(f.token_count))
            .ok_or_else(|| ValidationError::new(M, "total_tokens", "sum of token counts overflows"))?;
        let budget_used = (total_tokens as f64 / self.budget.available_tokens() as f64).min(1.0);
        let mut provenance_map = BTreeMap::new();
        for fragment in &self.fragments {
            provenance_map.entry(fragment.uko_node.clone()).or_insert_with(|| fragment.provenance.clone());
        }
        Ok(AssembledContext {
            payload_id,
            plan_id: self.plan_id,
            context_hash: context_hash(&self.fragments),
            fragments: self.fragments,
            total_tokens,
            budget: self.budget,
            budget_used,
            strategies_used: self.strategies_used,
            preamble: self.preamble,
            provenance_map,
            assembled_at: self.assembled_at.unwrap_or_else(now_utc),
        })
    }
}

/// Serde mirror of [`AssembledContext`]; derived fields may be omitted and
/// are checked against the recomputed value when present.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AssembledContextRaw {
    payload_id: String,
    plan_id: String,
    #[serde(default)]
    fragments: Vec<ContextFragment>,
    total_tokens: Option<u64>,
    budget: ContextBudget,
    budget_used: Option<f64>,
    #[serde(default)]
    strategies_used: Vec<String>,
    context_hash: Option<String>,
    preamble: Option<String>,
    provenance_map: Option<BTreeMap<String, FragmentProvenance>>,
    assembled_at: DateTime<Utc>,
}

impl TryFrom<AssembledContextRaw> for AssembledContext {
    type Error = ValidationError;

    fn try_from(raw: AssembledContextRaw) -> Validated<AssembledContext> {
        const M: &str = "AssembledContext";
        let mut builder = AssembledContext::builder(raw.plan_id, raw.budget)
            .payload_id(raw.payload_id)
            .fragments(raw.fragments)
            .strategies_used(raw.strategies_used)
            .assembled_at(raw.assembled_at);
        builder.preamble = raw.preamble;
        let payload = builder.build()?;
        let mismatch = |field: &'static str| ValidationError::new(M, field, "does not match the fragments");
        if raw.total_tokens.is_some_and(|given| given != payload.total_tokens) {
            return Err(mismatch("total_tokens"));
        }
        if raw.budget_used.is_some_and(|given| !given.is_finite() || (given - payload.budget_used).abs() > 1e-9) {
            return Err(mismatch("budget_used"));
        }
        if raw.context_hash.is_some_and(|given| given != payload.context_hash) {
            return Err(mismatch("context_hash"));
        }
        if raw.provenance_map.is_some_and(|given| given != payload.provenance_map) {
            return Err(mismatch("provenance_map"));
        }
        Ok(payload)
    }
}

impl AssembledContext {
    /// Starts a payload for plan `plan_id` assembled under `budget`.
    pub fn builder(plan_id: impl Into<String>, budget: ContextBudget) -> AssembledContextBuilder {
        AssembledContextBuilder {
            payload_id: None,
            plan_id: plan_id.into(),
            fragments: Vec::new(),
            budget,
            strategies_used: Vec::new(),
            preamble: None,
            assembled_at: None,
        }
    }

    /// ULID of this payload.
    pub fn payload_id(&self) -> &str {
        &self.payload_id
    }

    /// The plan this payload was assembled for.
    pub fn plan_id(&self) -> &str {
        &self.plan_id
    }

    /// The fragments, in delivery order.
    pub fn fragments(&self) -> &[ContextFragment] {
        &self.fragments
    }

    /// Sum of the fragments' token counts.
    pub fn total_tokens(&self) -> u64 {
        self.total_tokens
    }

    pub fn budget(&self) -> &ContextBudget {
        &self.budget
    }

    /// `total_tokens / available_tokens`, clamped to `[0, 1]`.
    pub fn budget_used(&self) -> f64 {
        self.budget_used
    }

    pub fn strategies_used(&self) -> &[String] {
        &self.strategies_used
    }

    /// See [`context_hash`].
    pub fn context_hash(&self) -> &str {
        &self.context_hash
    }

    pub fn preamble(&self) -> Option<&str> {
        self.preamble.as_deref()
    }

    /// Provenance per UKO node URI; the first fragment of a node wins.
    pub fn provenance_map(&self) -> &BTreeMap<String, FragmentProvenance> {
        &self.provenance_map
    }

    pub fn assembled_at(&self) -> DateTime<Utc> {
        self.assembled_at
    }

    /// True when the fragments fit in the budget's available tokens.
    pub fn is_within_budget(&self) -> bool {
        self.total_tokens <= self.budget.available_tokens()
    }

    /// Available tokens not used by the fragments (0 when over budget).
    pub fn remaining_tokens(&self) -> u64 {
        self.budget.available_tokens().saturating_sub(self.total_tokens)
    }

    /// True when the available budget moved from this payload's by more than
    /// `threshold` (a fraction, e.g. 0.30) of it, so the payload should be
    /// reassembled.
    pub fn needs_refresh(&self, new_available: u64, threshold: f64) -> bool {
        let old = self.budget.available_tokens();
        let change = old.abs_diff(new_available) as f64 / old as f64;
        change > threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RESOURCE: &str = "01HZY3N6A8Q4W0R2T5V7X9B1CD";

    fn provenance(path: &str) -> FragmentProvenance {
        FragmentProvenance::new(RESOURCE, path).unwrap()
    }

    fn fragment(node: &str, content: &str, tokens: u64) -> ContextFragment {
        ContextFragment::builder(node, content, tokens, provenance("src/lib.rs")).build().unwrap()
    }

    /// Builds from `builder` and asserts it fails on `field`.
    fn check_rejects(builder: FragmentBuilder, field: &str) {
        let error = builder.build().unwrap_err();
        assert_eq!((error.model, error.field), ("ContextFragment", field), "{error}");
    }

    fn payload(fragments: Vec<ContextFragment>, budget: ContextBudget) -> AssembledContext {
        AssembledContext::builder("plan-1", budget)
            .fragments(fragments)
            .strategies_used(["simple-keyword"])
            .build()
            .unwrap()
    }

    #[test]
    fn fragment_defaults_match_the_spec() {
        let f = fragment("uko://a", "fn a()", 3);
        check_ulid("T", "id", f.fragment_id()).unwrap();
        assert_eq!(f.detail_depth(), 0);
        assert_eq!(f.relevance_score(), 0.5);
        assert_eq!(f.tier(), ContextTier::Warm);
        assert!(f.metadata().is_empty());
        assert!(f.provenance().source_range().is_none());
    }

    #[test]
    fn fragment_rejects_each_broken_constraint() {
        let base = || ContextFragment::builder("uko://a", "x", 1, provenance("a.rs"));
        check_rejects(base().uko_node("  "), "uko_node");
        check_rejects(base().fragment_id("nope"), "fragment_id");
        check_rejects(base().content("é".repeat(MAX_CONTENT_CHARS + 1)), "content");
        check_rejects(base().detail_depth(10), "detail_depth");
        check_rejects(base().relevance_score(1.01), "relevance_score");
        check_rejects(base().relevance_score(-0.1), "relevance_score");
        check_rejects(base().relevance_score(f64::NAN), "relevance_score");
        let many = (0..=MAX_METADATA_ENTRIES).map(|i| (format!("k{i}"), "v".to_string())).collect();
        check_rejects(base().metadata(many), "metadata");
        check_rejects(base().metadata_entry("", "v"), "metadata");
        // The limits themselves are allowed.
        base().content("é".repeat(MAX_CONTENT_CHARS)).detail_depth(9).relevance_score(1.0).build().unwrap();
    }

    #[test]
    fn provenance_rejects_bad_parts() {
        assert_eq!(FragmentProvenance::new("res", "a.rs").unwrap_err().field, "resource_id");
        assert_eq!(FragmentProvenance::new(RESOURCE, "").unwrap_err().field, "source_path");
        assert_eq!(FragmentProvenance::new(RESOURCE, "a".repeat(1025)).unwrap_err().field, "source_path");
        assert_eq!(provenance("a.rs").with_strategy(" ").unwrap_err().field, "strategy");
    }

    #[test]
    fn source_ranges_parse_and_print() {
        for text in ["42:1-87:0", "100-250", "3:4-3:4"] {
            assert_eq!(text.parse::<SourceRange>().unwrap().to_string(), text);
        }
        assert_eq!("42:1-87:0".parse::<SourceRange>().unwrap().line_span(), Some((42, 1, 87, 0)));
        assert_eq!("100-250".parse::<SourceRange>().unwrap().byte_span(), Some((100, 250)));
        for bad in ["", "42", "42:1-87", "a-b", "9-3", "5:2-5:1", "-1-2"] {
            let error = bad.parse::<SourceRange>().unwrap_err();
            assert_eq!(error.field, "source_range", "{bad}");
        }
    }

    #[test]
    fn fragment_round_trips_through_json() {
        let range = SourceRange::lines(42, 1, 87, 0).unwrap();
        let f =
            ContextFragment::builder("uko://py/mod#f", "def f(): ...", 5, provenance("m.py").with_source_range(range))
                .detail_depth(4)
                .relevance_score(0.75)
                .tier(ContextTier::Hot)
                .metadata_entry("language", "python")
                .build()
                .unwrap();
        let json = serde_json::to_string(&f).unwrap();
        assert!(json.contains(r#""source_range":"42:1-87:0""#), "{json}");
        assert!(json.contains(r#""tier":"hot""#), "{json}");
        assert_eq!(serde_json::from_str::<ContextFragment>(&json).unwrap(), f);
    }

    #[test]
    fn fragment_json_is_validated_and_defaulted() {
        let minimal = format!(
            r#"{{"uko_node":"uko://a","content":"x","token_count":1,
                "provenance":{{"resource_id":"{RESOURCE}","source_path":"a.rs"}}}}"#
        );
        let f: ContextFragment = serde_json::from_str(&minimal).unwrap();
        assert_eq!((f.detail_depth(), f.relevance_score(), f.tier()), (0, 0.5, ContextTier::Warm));
        let bad = minimal.replace(r#""token_count":1"#, r#""token_count":1,"relevance_score":2.0"#);
        let error = serde_json::from_str::<ContextFragment>(&bad).unwrap_err().to_string();
        assert!(error.contains("ContextFragment.relevance_score"), "{error}");
        let unknown = minimal.replace(r#""token_count":1"#, r#""token_count":1,"colour":"red""#);
        assert!(serde_json::from_str::<ContextFragment>(&unknown).is_err());
        let bad_resource = minimal.replace(RESOURCE, "resource-1");
        assert!(serde_json::from_str::<ContextFragment>(&bad_resource).is_err());
    }

    #[test]
    fn into_builder_keeps_identity() {
        let f = fragment("uko://a", "full body", 40);
        let shallower = f.clone().into_builder().detail_depth(2).content("sig").token_count(4).build().unwrap();
        assert_eq!((shallower.fragment_id(), shallower.created_at()), (f.fragment_id(), f.created_at()));
        assert_eq!(shallower.token_count(), 4);
        assert_eq!(f.clone().with_tier(ContextTier::Cold).tier(), ContextTier::Cold);
    }

    #[test]
    fn tiers_order_by_priority_and_step() {
        assert!(ContextTier::Hot > ContextTier::Warm && ContextTier::Warm > ContextTier::Cold);
        assert_eq!(ContextTier::Cold.promoted(), Some(ContextTier::Warm));
        assert_eq!(ContextTier::Hot.promoted(), None);
        assert_eq!(ContextTier::Hot.demoted(), Some(ContextTier::Warm));
        assert_eq!(ContextTier::Cold.demoted(), None);
        for tier in ContextTier::ALL {
            assert_eq!(tier.as_str().parse::<ContextTier>().unwrap(), tier);
            assert_eq!(serde_json::to_string(&tier).unwrap(), format!("\"{tier}\""));
        }
        assert_eq!("lukewarm".parse::<ContextTier>().unwrap_err().field, "tier");
    }

    #[test]
    fn budget_defaults_and_limits() {
        let budget = ContextBudget::default();
        assert_eq!((budget.max_tokens(), budget.reserved_tokens(), budget.available_tokens()), (4096, 512, 3584));
        assert_eq!(ContextBudget::new(0, 0).unwrap_err().field, "max_tokens");
        assert_eq!(ContextBudget::new(10, 10).unwrap_err().field, "reserved_tokens");
        assert_eq!(ContextBudget::new(1, 0).unwrap().available_tokens(), 1);
    }

    #[test]
    fn budget_serializes_available_tokens_and_checks_it() {
        let json = serde_json::to_string(&ContextBudget::new(100, 10).unwrap()).unwrap();
        assert_eq!(json, r#"{"max_tokens":100,"reserved_tokens":10,"available_tokens":90}"#);
        assert_eq!(serde_json::from_str::<ContextBudget>(&json).unwrap(), ContextBudget::new(100, 10).unwrap());
        assert_eq!(serde_json::from_str::<ContextBudget>("{}").unwrap(), ContextBudget::default());
        let lie = r#"{"max_tokens":100,"reserved_tokens":10,"available_tokens":5}"#;
        assert!(serde_json::from_str::<ContextBudget>(lie).unwrap_err().to_string().contains("available_tokens"));
        let bad = r#"{"max_tokens":100,"reserved_tokens":100}"#;
        assert!(serde_json::from_str::<ContextBudget>(bad).unwrap_err().to_string().contains("reserved_tokens"));
    }

    #[test]
    fn payload_computes_totals_and_budget_math() {
        let budget = ContextBudget::new(110, 10).unwrap();
        let p = payload(vec![fragment("uko://a", "a", 30), fragment("uko://b", "b", 45)], budget);
        assert_eq!(p.total_tokens(), 75);
        assert!(p.is_within_budget());
        assert_eq!(p.remaining_tokens(), 25);
        assert!((p.budget_used() - 0.75).abs() < 1e-12);
        assert_eq!(p.provenance_map().keys().collect::<Vec<_>>(), ["uko://a", "uko://b"]);

        let exact = payload(vec![fragment("uko://a", "a", 100)], budget);
        assert!(exact.is_within_budget());
        assert_eq!((exact.remaining_tokens(), exact.budget_used()), (0, 1.0));

        let over = payload(vec![fragment("uko://a", "a", 101)], budget);
        assert!(!over.is_within_budget());
        assert_eq!((over.remaining_tokens(), over.budget_used()), (0, 1.0));

        let empty = payload(Vec::new(), budget);
        assert_eq!((empty.total_tokens(), empty.budget_used(), empty.remaining_tokens()), (0, 0.0, 100));
    }

    #[test]
    fn payload_rejects_bad_parts() {
        let f = fragment("uko://a", "a", 1);
        let builder = || AssembledContext::builder("plan", ContextBudget::default());
        let error = builder().fragments(vec![f.clone(), f.clone()]).build().unwrap_err();
        assert_eq!(error.field, "fragments");
        assert_eq!(AssembledContext::builder(" ", ContextBudget::default()).build().unwrap_err().field, "plan_id");
        assert_eq!(builder().payload_id("x").build().unwrap_err().field, "payload_id");
        assert_eq!(builder().strategies_used([""]).build().unwrap_err().field, "strategies_used");
    }

    #[test]
    fn context_hash_follows_contents_in_order() {
        let (a, b) = (fragment("uko://a", "ab", 1), fragment("uko://b", "c", 1));
        let hash = context_hash(&[a.clone(), b.clone()]);
        assert_eq!(hash.len(), 64);
        assert!(hash.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(hash, context_hash(&[b.clone(), a.clone()]));
        let (a2, b2) = (fragment("uko://x", "a", 1), fragment("uko://y", "bc", 1));
        assert_ne!(hash, context_hash(&[a2, b2]), "different splits of the same text");
        assert_eq!(payload(vec![a, b], ContextBudget::default()).context_hash(), hash);
        // SHA-256 of the empty input.
        assert_eq!(context_hash(&[]), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(
            fragment("uko://a", "", 0).content_hash(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn payload_round_trips_and_checks_derived_fields() {
        let p = AssembledContext::builder("plan-7", ContextBudget::new(1000, 100).unwrap())
            .fragments(vec![fragment("uko://a", "alpha", 7), fragment("uko://b", "beta", 6)])
            .strategies_used(["simple-keyword", "breadth-depth-navigator"])
            .preamble("two fragments")
            .build()
            .unwrap();
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(serde_json::from_value::<AssembledContext>(json.clone()).unwrap(), p);
        for (field, value) in [
            ("total_tokens", serde_json::json!(12)),
            ("context_hash", serde_json::json!("00")),
            ("budget_used", serde_json::json!(0.5)),
            ("provenance_map", serde_json::json!({})),
        ] {
            let mut tampered = json.clone();
            tampered[field] = value;
            let error = serde_json::from_value::<AssembledContext>(tampered).unwrap_err().to_string();
            assert!(error.contains(&format!("AssembledContext.{field}")), "{error}");
        }
        let mut minimal = json.clone();
        for field in ["total_tokens", "context_hash", "budget_used", "provenance_map"] {
            minimal.as_object_mut().unwrap().remove(field);
        }
        assert_eq!(serde_json::from_value::<AssembledContext>(minimal).unwrap(), p);
    }

    #[test]
    fn refresh_triggers_only_beyond_the_threshold() {
        let p = payload(Vec::new(), ContextBudget::new(1100, 100).unwrap());
        assert!(!p.needs_refresh(1000, 0.30));
        assert!(!p.needs_refresh(1300, 0.30), "exactly the threshold is not more than it");
        assert!(p.needs_refresh(1301, 0.30));
        assert!(p.needs_refresh(699, 0.30));
        assert!(!p.needs_refresh(700, 0.30));
        assert!(p.needs_refresh(0, 0.30));
    }

    proptest! {
        #[test]
        fn budget_invariants_hold(max in 0u64..100_000, reserved in 0u64..100_000, counts in prop::collection::vec(0u64..5_000, 0..8)) {
            match ContextBudget::new(max, reserved) {
                Err(_) => prop_assert!(max == 0 || reserved >= max),
                Ok(budget) => {
                    prop_assert!(budget.available_tokens() >= 1);
                    prop_assert_eq!(budget.available_tokens() + budget.reserved_tokens(), budget.max_tokens());
                    let fragments: Vec<_> = counts.iter().map(|&n| fragment("uko://n", "x", n)).collect();
                    let p = payload(fragments, budget);
                    let total: u64 = counts.iter().sum();
                    prop_assert_eq!(p.total_tokens(), total);
                    prop_assert_eq!(p.is_within_budget(), total <= budget.available_tokens());
                    prop_assert!((0.0..=1.0).contains(&p.budget_used()));
                    if p.is_within_budget() {
                        prop_assert_eq!(p.remaining_tokens() + total, budget.available_tokens());
                    } else {
                        prop_assert_eq!(p.remaining_tokens(), 0);
                    }
                    let back: ContextBudget = serde_json::from_str(&serde_json::to_string(&budget).unwrap()).unwrap();
                    prop_assert_eq!(back, budget);
                }
            }
        }
    }
}
