//! The Context Request Protocol (CRP): how an actor says what context it needs.
//!
//! A [`ContextRequest`] names a query, entities, focus nodes, how far to walk
//! (breadth), how much detail to render (depth) and how much the answer
//! matters (priority); every request starts one assembly cycle. Depth is an
//! integer `0..=9` or a named level such as `SIGNATURES`; names are resolved
//! per UKO domain through [`DetailLevelMaps`], where a domain's map inherits
//! the levels of its parent and may add its own.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Validated, ValidationError, check_unit_interval};
use crate::fragment::{MAX_DETAIL_DEPTH, check_items_non_blank, check_non_blank};

/// How far back in a node's history retrieval may look.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum TemporalScope {
    /// Only the current revision of every node (the default).
    #[default]
    Current,
    /// Current plus recent revisions.
    Recent,
    /// The whole history.
    All,
}

impl TemporalScope {
    pub const ALL: [TemporalScope; 3] = [TemporalScope::Current, TemporalScope::Recent, TemporalScope::All];

    pub fn as_str(self) -> &'static str {
        match self {
            TemporalScope::Current => "current",
            TemporalScope::Recent => "recent",
            TemporalScope::All => "all",
        }
    }
}

impl fmt::Display for TemporalScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TemporalScope {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<TemporalScope> {
        TemporalScope::ALL.into_iter().find(|scope| scope.as_str() == text).ok_or_else(|| {
            ValidationError::new(
                "ContextRequest",
                "temporal",
                format!("unknown temporal scope `{text}`, expected current, recent or all"),
            )
        })
    }
}

/// How the assembly ranks fragments (the spec's ranking strategies): what
/// survives a tight budget and the order files are delivered in.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RankingStrategy {
    /// By composite score, best first (the default).
    #[default]
    Relevance,
    /// Newest change first, then by score.
    Recency,
    /// Hot, then warm, then cold, each by score.
    Tiered,
}

impl RankingStrategy {
    pub const ALL: [RankingStrategy; 3] =
        [RankingStrategy::Relevance, RankingStrategy::Recency, RankingStrategy::Tiered];

    pub fn as_str(self) -> &'static str {
        match self {
            RankingStrategy::Relevance => "relevance",
            RankingStrategy::Recency => "recency",
            RankingStrategy::Tiered => "tiered",
        }
    }
}

impl fmt::Display for RankingStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RankingStrategy {
    type Err = ValidationError;

    fn from_str(text: &str) -> Validated<RankingStrategy> {
        RankingStrategy::ALL.into_iter().find(|r| r.as_str() == text).ok_or_else(|| {
            ValidationError::new(
                "ContextRequest",
                "ranking",
                format!("unknown ranking strategy `{text}`, expected relevance, recency or tiered"),
            )
        })
    }
}

/// Brings a level name to its canonical form: trimmed, uppercase, `-` as `_`
/// (`full-source` is `FULL_SOURCE`). Names start with a letter and hold only
/// letters, digits and `_`.
fn normalize_level_name(model: &'static str, field: &'static str, name: &str) -> Validated<String> {
    let canonical: String = name.trim().chars().map(|c| if c == '-' { '_' } else { c.to_ascii_uppercase() }).collect();
    let well_formed = canonical.starts_with(|c: char| c.is_ascii_alphabetic())
        && canonical.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if well_formed {
        Ok(canonical)
    } else {
        Err(ValidationError::new(
            model,
            field,
            format!("`{name}` is not a level name (a letter, then letters, digits or `_`)"),
        ))
    }
}

/// Checks that `depth` lies in `0..=9`.
fn check_depth(model: &'static str, field: &'static str, depth: i64) -> Validated<u8> {
    u8::try_from(depth).ok().filter(|&d| d <= MAX_DETAIL_DEPTH).ok_or_else(|| {
        ValidationError::new(model, field, format!("must be between 0 and {MAX_DETAIL_DEPTH}, got {depth}"))
    })
}

/// A requested detail depth: an integer `0..=9` or a named level.
///
/// Serialized as a JSON integer or string; a string of digits reads as the
/// integer. Named levels are kept in canonical form (see [`Depth::named`])
/// and resolved with [`DetailLevelMaps::resolve_depth`].
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "DepthWire", into = "DepthWire")]
pub struct Depth(DepthRepr);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum DepthRepr {
    Level(u8),
    Named(String),
}

/// A detail depth: an integer 0-9 (0 = the node's name, 9 = its full source)
/// or a named level such as `SIGNATURES` or `FULL_SOURCE`.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum DepthWire {
    Level(#[schemars(range(min = 0, max = 9))] i64),
    Named(String),
}

impl Depth {
    /// The spec's default depth, 3 ("what is each thing's purpose?").
    pub const DEFAULT_LEVEL: u8 = 3;
    const MODEL: &'static str = "ContextRequest";
    const FIELD: &'static str = "depth";

    /// An integer depth, `0..=9`.
    pub fn level(depth: u8) -> Validated<Depth> {
        check_depth(Self::MODEL, Self::FIELD, depth.into()).map(|d| Depth(DepthRepr::Level(d)))
    }

    /// A named level such as `SIGNATURES`; stored uppercase with `_`.
    pub fn named(name: &str) -> Validated<Depth> {
        normalize_level_name(Self::MODEL, Self::FIELD, name).map(|name| Depth(DepthRepr::Named(name)))
    }

    /// The integer depth, when given as one.
    pub fn as_level(&self) -> Option<u8> {
        match &self.0 {
            DepthRepr::Level(depth) => Some(*depth),
            DepthRepr::Named(_) => None,
        }
    }

    /// The canonical level name, when given as one.
    pub fn as_name(&self) -> Option<&str> {
        match &self.0 {
            DepthRepr::Named(name) => Some(name),
            DepthRepr::Level(_) => None,
        }
    }
}

impl Default for Depth {
    fn default() -> Self {
        Depth(DepthRepr::Level(Depth::DEFAULT_LEVEL))
    }
}

impl fmt::Display for Depth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            DepthRepr::Level(depth) => write!(f, "{depth}"),
            DepthRepr::Named(name) => f.write_str(name),
        }
    }
}

impl FromStr for Depth {
    type Err = ValidationError;

    /// `"4"` is level 4, anything else a level name (`"signatures"`).
    fn from_str(text: &str) -> Validated<Depth> {
        let text = text.trim();
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            let depth = text.parse::<i64>().unwrap_or(i64::MAX);
            return check_depth(Self::MODEL, Self::FIELD, depth).map(|d| Depth(DepthRepr::Level(d)));
        }
        Depth::named(text)
    }
}

impl TryFrom<DepthWire> for Depth {
    type Error = ValidationError;

    fn try_from(wire: DepthWire) -> Validated<Depth> {
        match wire {
            DepthWire::Level(depth) => check_depth(Self::MODEL, Self::FIELD, depth).map(|d| Depth(DepthRepr::Level(d))),
            DepthWire::Named(text) => text.parse(),
        }
    }
}

impl From<Depth> for DepthWire {
    fn from(depth: Depth) -> DepthWire {
        match depth.0 {
            DepthRepr::Level(depth) => DepthWire::Level(depth.into()),
            DepthRepr::Named(name) => DepthWire::Named(name),
        }
    }
}

/// The UKO domain of the built-in universal (Layer 0) levels.
pub const UNIVERSAL_DOMAIN: &str = "uko";

/// Named detail levels of one UKO domain, e.g. `uko-py`.
///
/// A map with a `parent` inherits the parent's levels (resolved through
/// [`DetailLevelMaps`]); its own entries add levels or override inherited ones.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "DetailLevelMapRaw")]
pub struct DetailLevelMap {
    domain: String,
    parent: Option<String>,
    levels: BTreeMap<String, u8>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DetailLevelMapRaw {
    domain: String,
    parent: Option<String>,
    #[serde(default)]
    levels: BTreeMap<String, i64>,
}

impl DetailLevelMap {
    const MODEL: &'static str = "DetailLevelMap";

    /// An empty map for `domain`, inheriting from the `parent` domain if given.
    pub fn new(domain: impl Into<String>, parent: Option<String>) -> Validated<DetailLevelMap> {
        let domain = domain.into();
        check_domain(Self::MODEL, "domain", &domain)?;
        if let Some(parent) = &parent {
            check_domain(Self::MODEL, "parent", parent)?;
            if *parent == domain {
                return Err(ValidationError::new(
                    Self::MODEL,
                    "parent",
                    format!("`{domain}` cannot inherit from itself"),
                ));
            }
        }
        Ok(DetailLevelMap { domain, parent, levels: BTreeMap::new() })
    }

    /// The built-in universal map: `MODULE_LISTING` = 0, `SIGNATURES` = 4,
    /// `FULL_SOURCE` = 9, in domain [`UNIVERSAL_DOMAIN`].
    pub fn universal() -> DetailLevelMap {
        let levels = [("MODULE_LISTING", 0), ("SIGNATURES", 4), ("FULL_SOURCE", MAX_DETAIL_DEPTH)];
        DetailLevelMap {
            domain: UNIVERSAL_DOMAIN.to_string(),
            parent: None,
            levels: levels.into_iter().map(|(name, depth)| (name.to_string(), depth)).collect(),
        }
    }

    /// The same map with level `name` set to `depth` (`0..=9`); other entries
    /// are kept, and inherited levels stay visible through the parent.
    pub fn with_level(mut self, name: &str, depth: u8) -> Validated<DetailLevelMap> {
        let name = normalize_level_name(Self::MODEL, "levels", name)?;
        let depth = check_depth(Self::MODEL, "levels", depth.into())?;
        self.levels.insert(name, depth);
        Ok(self)
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The domain this map inherits from.
    pub fn parent(&self) -> Option<&str> {
        self.parent.as_deref()
    }

    /// This map's own levels (not the inherited ones), by canonical name.
    pub fn levels(&self) -> &BTreeMap<String, u8> {
        &self.levels
    }

    /// This map's own depth for `name` (any case), ignoring the parent.
    pub fn get(&self, name: &str) -> Option<u8> {
        let name = normalize_level_name(Self::MODEL, "levels", name).ok()?;
        self.levels.get(&name).copied()
    }
}

impl TryFrom<DetailLevelMapRaw> for DetailLevelMap {
    type Error = ValidationError;

    fn try_from(raw: DetailLevelMapRaw) -> Validated<DetailLevelMap> {
        let mut map = DetailLevelMap::new(raw.domain, raw.parent)?;
        for (name, depth) in raw.levels {
            let depth = check_depth(Self::MODEL, "levels", depth)?;
            map = map.with_level(&name, depth)?;
        }
        Ok(map)
    }
}

fn check_domain(model: &'static str, field: &'static str, domain: &str) -> Validated<()> {
    check_non_blank(model, field, domain)?;
    if domain.chars().any(char::is_whitespace) {
        return Err(ValidationError::new(model, field, format!("`{domain}` must not contain whitespace")));
    }
    Ok(())
}

/// The known detail-level maps, by domain; resolves names through parents.
///
/// Invariant: every parent named by a map is present and the parent links
/// form no cycle. [`Default`] holds the universal map only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetailLevelMaps {
    maps: BTreeMap<String, DetailLevelMap>,
}

impl Default for DetailLevelMaps {
    fn default() -> Self {
        let universal = DetailLevelMap::universal();
        DetailLevelMaps { maps: BTreeMap::from([(universal.domain.clone(), universal)]) }
    }
}

impl DetailLevelMaps {
    const MODEL: &'static str = "DetailLevelMaps";

    /// The collection with `map` added, or replacing the map of its domain.
    /// Its parent must already be present, and no cycle may form.
    pub fn insert(mut self, map: DetailLevelMap) -> Validated<DetailLevelMaps> {
        let mut parent = map.parent.as_deref();
        while let Some(domain) = parent {
            if domain == map.domain {
                return Err(ValidationError::new(
                    Self::MODEL,
                    "parent",
                    format!("`{}` would inherit from itself", map.domain),
                ));
            }
            let Some(ancestor) = self.maps.get(domain) else {
                return Err(ValidationError::new(Self::MODEL, "parent", format!("unknown parent domain `{domain}`")));
            };
            parent = ancestor.parent.as_deref();
        }
        self.maps.insert(map.domain.clone(), map);
        Ok(self)
    }

    /// The collection with level `name` = `depth` inserted into the map of `domain`.
    pub fn with_level(mut self, domain: &str, name: &str, depth: u8) -> Validated<DetailLevelMaps> {
        let map = self.maps.remove(domain).ok_or_else(|| unknown_domain(domain))?;
        let map = map.with_level(name, depth)?;
        self.maps.insert(domain.to_string(), map);
        Ok(self)
    }

    /// The map of `domain`, if known.
    pub fn get(&self, domain: &str) -> Option<&DetailLevelMap> {
        self.maps.get(domain)
    }

    /// Every map, by domain.
    pub fn maps(&self) -> &BTreeMap<String, DetailLevelMap> {
        &self.maps
    }

    /// The map of `domain`, then its parent, and so on to the root.
    fn chain<'a>(&'a self, domain: &str) -> Validated<impl Iterator<Item = &'a DetailLevelMap>> {
        let first = self.maps.get(domain).ok_or_else(|| unknown_domain(domain))?;
        Ok(std::iter::successors(Some(first), |map| map.parent.as_deref().and_then(|p| self.maps.get(p))))
    }

    /// The depth of level `name` (any case) in `domain`: the domain's own
    /// entry, else the nearest ancestor's.
    pub fn resolve(&self, domain: &str, name: &str) -> Validated<u8> {
        let canonical = normalize_level_name("ContextRequest", "depth", name)?;
        self.chain(domain)?.find_map(|map| map.levels.get(&canonical).copied()).ok_or_else(|| {
            ValidationError::new(
                "ContextRequest",
                "depth",
                format!("unknown detail level `{canonical}` in domain `{domain}`"),
            )
        })
    }

    /// The integer depth `depth` stands for in `domain`.
    pub fn resolve_depth(&self, domain: &str, depth: &Depth) -> Validated<u8> {
        match &depth.0 {
            DepthRepr::Level(level) => Ok(*level),
            DepthRepr::Named(name) => self.resolve(domain, name),
        }
    }

    /// Every level visible in `domain`: inherited ones plus its own, the
    /// nearest definition winning.
    pub fn effective_levels(&self, domain: &str) -> Validated<BTreeMap<String, u8>> {
        let mut levels = BTreeMap::new();
        for map in self.chain(domain)? {
            for (name, depth) in &map.levels {
                levels.entry(name.clone()).or_insert(*depth);
            }
        }
        Ok(levels)
    }
}

fn unknown_domain(domain: &str) -> ValidationError {
    ValidationError::new(DetailLevelMaps::MODEL, "domain", format!("unknown domain `{domain}`"))
}

/// A structured request for context, issued by an actor through CRP.
///
/// Build with [`ContextRequest::builder`]; [`Default`] is the spec's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ContextRequestBuilder")]
pub struct ContextRequest {
    query: Option<String>,
    entities: Vec<String>,
    uko_types: Vec<String>,
    focus: Vec<String>,
    breadth: u32,
    depth: Depth,
    depth_gradient: bool,
    temporal: TemporalScope,
    ranking: RankingStrategy,
    max_tokens: Option<u64>,
    preferred_strategies: Vec<String>,
    required_backends: Vec<String>,
    priority: f64,
    purpose: String,
}

/// Parts of a [`ContextRequest`] before validation, starting at the spec's
/// defaults; also its serde mirror (every field optional, unknown fields
/// rejected), so JSON and code go through the same checks.
/// Its JSON schema (every field documented) is what the MCP server's
/// `request_context` tool publishes.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ContextRequestBuilder {
    /// What the context is for, in natural language.
    query: Option<String>,
    /// Named entities (symbols, concepts) the context must cover.
    entities: Vec<String>,
    /// Only nodes of these UKO types: function, class, method, module, file, ...
    uko_types: Vec<String>,
    /// Nodes to start from: file paths, `uko://` URIs or symbol names.
    focus: Vec<String>,
    /// Graph hops from the focus (default 2).
    breadth: u32,
    /// Detail depth: 0-9 or a named level (default 3).
    #[schemars(with = "DepthWire")]
    depth: Depth,
    /// More detail near the focus, less further out (default true).
    depth_gradient: bool,
    /// History to consider: current (default), recent or all.
    temporal: TemporalScope,
    /// Ranking strategy: relevance (default), recency (newest change first)
    /// or tiered (hot, warm, cold); decides what survives a tight budget and
    /// the order files come in.
    ranking: RankingStrategy,
    /// Token budget for the whole context (default 8000).
    max_tokens: Option<u64>,
    /// Strategies to run first: simple-keyword, semantic-embedding,
    /// breadth-depth-navigator, arce, temporal-archaeology, plan-decision-context.
    preferred_strategies: Vec<String>,
    /// Backends the request needs: text, vector, graph, temporal.
    required_backends: Vec<String>,
    /// 0.0 = background, 1.0 = critical (default 0.5).
    priority: f64,
    /// Why the context is needed.
    purpose: String,
}

impl Default for ContextRequestBuilder {
    fn default() -> Self {
        ContextRequestBuilder {
            query: None,
            entities: Vec::new(),
            uko_types: Vec::new(),
            focus: Vec::new(),
            breadth: ContextRequest::DEFAULT_BREADTH,
            depth: Depth::default(),
            depth_gradient: true,
            temporal: TemporalScope::default(),
            ranking: RankingStrategy::default(),
            max_tokens: None,
            preferred_strategies: Vec::new(),
            required_backends: Vec::new(),
            priority: ContextRequest::DEFAULT_PRIORITY,
            purpose: String::new(),
        }
    }
}

fn strings(items: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    items.into_iter().map(Into::into).collect()
}

impl ContextRequestBuilder {
    /// Natural-language query; must not be blank when given.
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Named entities to focus on.
    pub fn entities(mut self, entities: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.entities = strings(entities);
        self
    }

    /// UKO types to filter by.
    pub fn uko_types(mut self, uko_types: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.uko_types = strings(uko_types);
        self
    }

    /// URIs or identifiers to focus on.
    pub fn focus(mut self, focus: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.focus = strings(focus);
        self
    }

    /// Dependency hops outward from the focus (default 2).
    pub fn breadth(mut self, breadth: u32) -> Self {
        self.breadth = breadth;
        self
    }

    /// Detail depth (default 3).
    pub fn depth(mut self, depth: Depth) -> Self {
        self.depth = depth;
        self
    }

    /// Whether items closer to the focus get more detail (default true).
    pub fn depth_gradient(mut self, depth_gradient: bool) -> Self {
        self.depth_gradient = depth_gradient;
        self
    }

    /// Temporal scope (default current).
    pub fn temporal(mut self, temporal: TemporalScope) -> Self {
        self.temporal = temporal;
        self
    }

    /// Ranking strategy (default relevance).
    pub fn ranking(mut self, ranking: RankingStrategy) -> Self {
        self.ranking = ranking;
        self
    }

    /// Token budget ceiling for this request (default none).
    pub fn max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Strategies to prefer, by name.
    pub fn preferred_strategies(mut self, strategies: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.preferred_strategies = strings(strategies);
        self
    }

    /// Backends that must be available, by name.
    pub fn required_backends(mut self, backends: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.required_backends = strings(backends);
        self
    }

    /// 0.0 = background, 1.0 = critical (default 0.5).
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = priority;
        self
    }

    /// Why this context is needed (default empty).
    pub fn purpose(mut self, purpose: impl Into<String>) -> Self {
        self.purpose = purpose.into();
        self
    }

    /// Checks every constraint and builds the request.
    pub fn build(self) -> Validated<ContextRequest> {
        const M: &str = "ContextRequest";
        if let Some(query) = &self.query {
            check_non_blank(M, "query", query)?;
        }
        check_items_non_blank(M, "entities", &self.entities)?;
        check_items_non_blank(M, "uko_types", &self.uko_types)?;
        check_items_non_blank(M, "focus", &self.focus)?;
        check_items_non_blank(M, "preferred_strategies", &self.preferred_strategies)?;
        check_items_non_blank(M, "required_backends", &self.required_backends)?;
        check_unit_interval(M, "priority", self.priority)?;
        Ok(ContextRequest {
            query: self.query,
            entities: self.entities,
            uko_types: self.uko_types,
            focus: self.focus,
            breadth: self.breadth,
            depth: self.depth,
            depth_gradient: self.depth_gradient,
            temporal: self.temporal,
            ranking: self.ranking,
            max_tokens: self.max_tokens,
            preferred_strategies: self.preferred_strategies,
            required_backends: self.required_backends,
            priority: self.priority,
            purpose: self.purpose,
        })
    }
}

impl TryFrom<ContextRequestBuilder> for ContextRequest {
    type Error = ValidationError;

    fn try_from(builder: ContextRequestBuilder) -> Validated<ContextRequest> {
        builder.build()
    }
}

impl Default for ContextRequest {
    fn default() -> Self {
        ContextRequestBuilder::default().build().expect("the spec defaults are valid")
    }
}

impl ContextRequest {
    pub const DEFAULT_BREADTH: u32 = 2;
    pub const DEFAULT_PRIORITY: f64 = 0.5;

    /// A builder at the spec's defaults.
    pub fn builder() -> ContextRequestBuilder {
        ContextRequestBuilder::default()
    }

    /// A builder holding this request's values, to derive a changed request.
    pub fn into_builder(self) -> ContextRequestBuilder {
        ContextRequestBuilder {
            query: self.query,
            entities: self.entities,
            uko_types: self.uko_types,
            focus: self.focus,
            breadth: self.breadth,
            depth: self.depth,
            depth_gradient: self.depth_gradient,
            temporal: self.temporal,
            ranking: self.ranking,
            max_tokens: self.max_tokens,
            preferred_strategies: self.preferred_strategies,
            required_backends: self.required_backends,
            priority: self.priority,
            purpose: self.purpose,
        }
    }

    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    pub fn entities(&self) -> &[String] {
        &self.entities
    }

    pub fn uko_types(&self) -> &[String] {
        &self.uko_types
    }

    pub fn focus(&self) -> &[String] {
        &self.focus
    }

    pub fn breadth(&self) -> u32 {
        self.breadth
    }

    pub fn depth(&self) -> &Depth {
        &self.depth
    }

    pub fn depth_gradient(&self) -> bool {
        self.depth_gradient
    }

    pub fn temporal(&self) -> TemporalScope {
        self.temporal
    }

    pub fn ranking(&self) -> RankingStrategy {
        self.ranking
    }

    pub fn max_tokens(&self) -> Option<u64> {
        self.max_tokens
    }

    pub fn preferred_strategies(&self) -> &[String] {
        &self.preferred_strategies
    }

    pub fn required_backends(&self) -> &[String] {
        &self.required_backends
    }

    pub fn priority(&self) -> f64 {
        self.priority
    }

    pub fn purpose(&self) -> &str {
        &self.purpose
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Builds `builder` and asserts it fails on `field` of `ContextRequest`.
    fn check_rejects(builder: ContextRequestBuilder, field: &str) {
        let error = builder.build().unwrap_err();
        assert_eq!((error.model, error.field), ("ContextRequest", field), "{error}");
    }

    fn python_maps() -> DetailLevelMaps {
        let python = DetailLevelMap::new("uko-py", Some(UNIVERSAL_DOMAIN.into()))
            .unwrap()
            .with_level("CLASS_OUTLINE", 2)
            .unwrap();
        DetailLevelMaps::default().insert(python).unwrap()
    }

    #[test]
    fn defaults_match_the_spec_table() {
        let request = ContextRequest::default();
        assert_eq!(request.query(), None);
        assert!(request.entities().is_empty() && request.uko_types().is_empty() && request.focus().is_empty());
        assert_eq!(request.breadth(), 2);
        assert_eq!(request.depth().as_level(), Some(3));
        assert!(request.depth_gradient());
        assert_eq!(request.temporal(), TemporalScope::Current);
        assert_eq!(request.max_tokens(), None);
        assert!(request.preferred_strategies().is_empty() && request.required_backends().is_empty());
        assert_eq!(request.priority(), 0.5);
        assert_eq!(request.purpose(), "");
        assert_eq!(serde_json::from_str::<ContextRequest>("{}").unwrap(), request);
    }

    #[test]
    fn the_ranking_strategy_is_a_request_field() {
        assert_eq!(ContextRequest::default().ranking(), RankingStrategy::Relevance);
        let request: ContextRequest = serde_json::from_str(r#"{"query": "q", "ranking": "recency"}"#).unwrap();
        assert_eq!(request.ranking(), RankingStrategy::Recency);
        let again: ContextRequest = serde_json::from_str(&serde_json::to_string(&request).unwrap()).unwrap();
        assert_eq!(again, request);
        assert_eq!(
            request.into_builder().ranking(RankingStrategy::Tiered).build().unwrap().ranking(),
            RankingStrategy::Tiered
        );
        let error = serde_json::from_str::<ContextRequest>(r#"{"ranking": "alphabetical"}"#).unwrap_err();
        assert!(error.to_string().contains("alphabetical"), "{error}");
        assert_eq!("tiered".parse::<RankingStrategy>().unwrap(), RankingStrategy::Tiered);
        let error = "newest".parse::<RankingStrategy>().unwrap_err();
        assert_eq!((error.model, error.field), ("ContextRequest", "ranking"));
    }

    #[test]
    fn every_constraint_is_rejected_with_its_field() {
        check_rejects(ContextRequest::builder().query("  "), "query");
        check_rejects(ContextRequest::builder().entities(["a", ""]), "entities");
        check_rejects(ContextRequest::builder().uko_types([""]), "uko_types");
        check_rejects(ContextRequest::builder().focus([" "]), "focus");
        check_rejects(ContextRequest::builder().preferred_strategies([""]), "preferred_strategies");
        check_rejects(ContextRequest::builder().required_backends([""]), "required_backends");
        check_rejects(ContextRequest::builder().priority(1.5), "priority");
        check_rejects(ContextRequest::builder().priority(-0.01), "priority");
        check_rejects(ContextRequest::builder().priority(f64::NAN), "priority");
        assert_eq!(Depth::level(10).unwrap_err().field, "depth");
        assert_eq!(Depth::named("").unwrap_err().field, "depth");
        assert_eq!(Depth::named("9LIVES").unwrap_err().field, "depth");
        assert_eq!(Depth::named("full source").unwrap_err().field, "depth");
        ContextRequest::builder().breadth(0).max_tokens(0).priority(0.0).build().unwrap();
    }

    #[test]
    fn json_is_validated_and_strict() {
        for (json, field) in [
            (r#"{"priority": 2}"#, "priority"),
            (r#"{"depth": 12}"#, "depth"),
            (r#"{"depth": -1}"#, "depth"),
            (r#"{"depth": "??"}"#, "depth"),
            (r#"{"query": ""}"#, "query"),
        ] {
            let error = serde_json::from_str::<ContextRequest>(json).unwrap_err().to_string();
            assert!(error.contains(&format!("ContextRequest.{field}")), "{json}: {error}");
        }
        for json in [r#"{"breadth": -1}"#, r#"{"max_tokens": -5}"#, r#"{"temporal": "future"}"#, r#"{"colour": 1}"#] {
            assert!(serde_json::from_str::<ContextRequest>(json).is_err(), "{json}");
        }
    }

    #[test]
    fn depth_reads_integers_and_names() {
        let from_json = |json: &str| serde_json::from_str::<Depth>(json).unwrap();
        assert_eq!(from_json("4"), Depth::level(4).unwrap());
        assert_eq!(from_json(r#""4""#), Depth::level(4).unwrap());
        assert_eq!(from_json(r#""signatures""#).as_name(), Some("SIGNATURES"));
        assert_eq!(from_json(r#""full-source""#).as_name(), Some("FULL_SOURCE"));
        assert_eq!(serde_json::to_string(&Depth::level(9).unwrap()).unwrap(), "9");
        assert_eq!(serde_json::to_string(&Depth::named("Signatures").unwrap()).unwrap(), r#""SIGNATURES""#);
        assert_eq!("7".parse::<Depth>().unwrap().as_level(), Some(7));
        assert_eq!("99999999999999999999".parse::<Depth>().unwrap_err().field, "depth");
        assert_eq!(Depth::named("MODULE_LISTING").unwrap().to_string(), "MODULE_LISTING");
    }

    #[test]
    fn universal_levels_resolve() {
        let maps = DetailLevelMaps::default();
        for (name, depth) in [("MODULE_LISTING", 0), ("SIGNATURES", 4), ("full_source", 9)] {
            assert_eq!(maps.resolve(UNIVERSAL_DOMAIN, name).unwrap(), depth, "{name}");
        }
        assert_eq!(maps.resolve_depth(UNIVERSAL_DOMAIN, &Depth::level(6).unwrap()).unwrap(), 6);
        assert_eq!(maps.resolve(UNIVERSAL_DOMAIN, "CLASS_OUTLINE").unwrap_err().field, "depth");
        assert_eq!(maps.resolve("uko-nope", "SIGNATURES").unwrap_err().field, "domain");
    }

    #[test]
    fn child_maps_inherit_and_extend_their_parent() {
        let maps = python_maps();
        let named = |name| Depth::named(name).unwrap();
        assert_eq!(maps.resolve_depth("uko-py", &named("CLASS_OUTLINE")).unwrap(), 2);
        assert_eq!(maps.resolve_depth("uko-py", &named("SIGNATURES")).unwrap(), 4, "inherited");
        assert!(maps.resolve("uko", "CLASS_OUTLINE").is_err(), "the parent does not see the child's level");
        assert_eq!(maps.get("uko-py").unwrap().get("signatures"), None, "own entries only");

        // Inserting into the child keeps the inherited levels and may override them.
        let maps = maps.with_level("uko-py", "signatures", 5).unwrap().with_level("uko-py", "DOCSTRINGS", 3).unwrap();
        let levels = maps.effective_levels("uko-py").unwrap();
        let expected =
            [("CLASS_OUTLINE", 2), ("DOCSTRINGS", 3), ("FULL_SOURCE", 9), ("MODULE_LISTING", 0), ("SIGNATURES", 5)];
        assert_eq!(levels, expected.into_iter().map(|(n, d)| (n.to_string(), d)).collect());
        assert_eq!(maps.resolve("uko", "SIGNATURES").unwrap(), 4, "the parent keeps its own value");

        // A grandchild sees both ancestors.
        let django = DetailLevelMap::new("uko-py-django", Some("uko-py".into())).unwrap();
        let maps = maps.insert(django).unwrap();
        assert_eq!(maps.resolve("uko-py-django", "CLASS_OUTLINE").unwrap(), 2);
        assert_eq!(maps.resolve("uko-py-django", "MODULE_LISTING").unwrap(), 0);
    }

    #[test]
    fn maps_reject_bad_levels_parents_and_cycles() {
        let map = DetailLevelMap::new("uko-rs", Some("uko".into())).unwrap();
        assert_eq!(map.clone().with_level("DEEP", 10).unwrap_err().field, "levels");
        assert_eq!(map.clone().with_level("", 1).unwrap_err().field, "levels");
        assert_eq!(DetailLevelMap::new("", None).unwrap_err().field, "domain");
        assert_eq!(DetailLevelMap::new("a b", None).unwrap_err().field, "domain");
        assert_eq!(DetailLevelMap::new("x", Some("x".into())).unwrap_err().field, "parent");
        let orphan = DetailLevelMap::new("uko-ts", Some("uko-web".into())).unwrap();
        assert_eq!(DetailLevelMaps::default().insert(orphan).unwrap_err().field, "parent");
        let cyclic_root = DetailLevelMap::new("uko", Some("uko-py".into())).unwrap();
        assert_eq!(python_maps().insert(cyclic_root).unwrap_err().field, "parent");
        assert_eq!(DetailLevelMaps::default().with_level("uko-go", "X", 1).unwrap_err().field, "domain");
    }

    #[test]
    fn detail_level_maps_round_trip_through_json() {
        let map = python_maps().get("uko-py").unwrap().clone();
        let json = serde_json::to_string(&map).unwrap();
        assert_eq!(json, r#"{"domain":"uko-py","parent":"uko","levels":{"CLASS_OUTLINE":2}}"#);
        assert_eq!(serde_json::from_str::<DetailLevelMap>(&json).unwrap(), map);
        let bad = r#"{"domain":"uko-py","parent":"uko","levels":{"CLASS_OUTLINE":-2}}"#;
        assert!(serde_json::from_str::<DetailLevelMap>(bad).unwrap_err().to_string().contains("DetailLevelMap.levels"));
    }

    #[test]
    fn temporal_scope_parses_and_serializes() {
        for scope in TemporalScope::ALL {
            assert_eq!(scope.as_str().parse::<TemporalScope>().unwrap(), scope);
            assert_eq!(serde_json::to_string(&scope).unwrap(), format!("\"{scope}\""));
        }
        assert_eq!("future".parse::<TemporalScope>().unwrap_err().field, "temporal");
    }

    #[test]
    fn into_builder_derives_a_changed_request() {
        let request = ContextRequest::builder().query("where is auth").breadth(4).build().unwrap();
        let changed = request.clone().into_builder().breadth(1).build().unwrap();
        assert_eq!((changed.query(), changed.breadth()), (Some("where is auth"), 1));
    }

    fn name() -> impl Strategy<Value = String> {
        "[a-z][a-z0-9_.:/-]{0,12}"
    }

    fn depth() -> impl Strategy<Value = Depth> {
        prop_oneof![
            (0u8..=9).prop_map(|d| Depth::level(d).unwrap()),
            "[A-Za-z][A-Za-z0-9_-]{0,10}".prop_map(|n| Depth::named(&n).unwrap()),
        ]
    }

    fn request() -> impl Strategy<Value = ContextRequest> {
        let lists = (
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(name(), 0..3),
        );
        let scalars = (
            prop::option::of("[a-z ]{0,20}[a-z]"),
            any::<u32>(),
            depth(),
            any::<bool>(),
            prop::sample::select(TemporalScope::ALL.to_vec()),
            prop::option::of(any::<u64>()),
            (0u32..=1000).prop_map(|k| f64::from(k) / 1000.0),
            ".{0,20}",
        );
        (lists, scalars).prop_map(
            |(
                (entities, uko_types, focus, strategies, backends),
                (query, breadth, depth, gradient, temporal, max_tokens, priority, purpose),
            )| {
                let mut builder = ContextRequest::builder()
                    .entities(entities)
                    .uko_types(uko_types)
                    .focus(focus)
                    .preferred_strategies(strategies)
                    .required_backends(backends)
                    .breadth(breadth)
                    .depth(depth)
                    .depth_gradient(gradient)
                    .temporal(temporal)
                    .priority(priority)
                    .purpose(purpose);
                if let Some(query) = query {
                    builder = builder.query(query);
                }
                if let Some(max_tokens) = max_tokens {
                    builder = builder.max_tokens(max_tokens);
                }
                builder.build().unwrap()
            },
        )
    }

    proptest! {
        #[test]
        fn valid_requests_round_trip_through_json(request in request()) {
            let json = serde_json::to_string(&request).unwrap();
            prop_assert_eq!(serde_json::from_str::<ContextRequest>(&json).unwrap(), request);
        }
    }
}
