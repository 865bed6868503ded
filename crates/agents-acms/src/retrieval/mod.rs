//! Retrieval: the context strategies, the backends they draw on, and the registry
//! that picks one and falls back when a backend is missing or failing.
//!
//! A strategy ([`ContextStrategy`]) declares what it needs ([`StrategyCapabilities`]),
//! says how well it can serve a request (`can_handle`, a confidence in [0, 1]) and ranks
//! [`Candidate`]s (`retrieve`); the pipeline's `assemble` on a `dyn ContextStrategy`
//! renders and packs them under a budget with the shared packer. Strategies never render
//! or count tokens themselves, so every path keeps the packer's budget invariant.
//!
//! The six built-ins live in [`strategies`]; the registry ([`registry`]) validates them
//! against the [`Backends`] at hand and walks the spec's degradation path
//! (arce -> breadth-depth-navigator -> semantic-embedding -> simple-keyword) when the
//! chosen one cannot run, reporting every step it took.

pub mod registry;
pub mod store_graph;
pub mod strategies;

use std::collections::BTreeMap;
use std::path::Path;

use agents_core::request::ContextRequest;
use agents_core::tokens::TokenCounter;
use agents_search::history::GitHistory;
use agents_search::vector::{Embedder, VectorBackend};
use agents_search::{SearchFilter, TextBackend};
use agents_store::Store;
use serde::Serialize;

pub use crate::query::Candidate;
use crate::query::{ContextSearch, QueryError};

/// The four kinds of backend a strategy may require.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Text,
    Vector,
    Graph,
    Temporal,
}

impl BackendKind {
    pub const ALL: [BackendKind; 4] =
        [BackendKind::Text, BackendKind::Vector, BackendKind::Graph, BackendKind::Temporal];

    pub fn as_str(self) -> &'static str {
        match self {
            BackendKind::Text => "text",
            BackendKind::Vector => "vector",
            BackendKind::Graph => "graph",
            BackendKind::Temporal => "temporal",
        }
    }

    pub fn parse(name: &str) -> Option<BackendKind> {
        BackendKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// What a strategy needs and how good it is (the spec's `StrategyCapabilities`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct StrategyCapabilities {
    pub uses_text: bool,
    pub uses_vector: bool,
    pub uses_graph: bool,
    pub uses_temporal: bool,
    /// Intrinsic quality in [0, 1].
    pub quality_score: f64,
    pub supports_depth_breadth: bool,
    pub supports_plan_hierarchy: bool,
}

impl Default for StrategyCapabilities {
    fn default() -> StrategyCapabilities {
        StrategyCapabilities {
            uses_text: false,
            uses_vector: false,
            uses_graph: false,
            uses_temporal: false,
            quality_score: 0.5,
            supports_depth_breadth: false,
            supports_plan_hierarchy: false,
        }
    }
}

impl StrategyCapabilities {
    /// The backends these capabilities require, in a fixed order.
    pub fn required(&self) -> Vec<BackendKind> {
        let flags = [self.uses_text, self.uses_vector, self.uses_graph, self.uses_temporal];
        BackendKind::ALL.into_iter().zip(flags).filter(|(_, on)| *on).map(|(k, _)| k).collect()
    }
}

/// A vector index and the model that queries it.
#[derive(Clone, Copy)]
pub struct VectorAccess<'a> {
    pub backend: &'a dyn VectorBackend,
    pub embedder: &'a dyn Embedder,
}

/// A plan's ancestry and decisions, for `plan-decision-context`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlanContext {
    /// The plan the request is for.
    pub plan_id: String,
    /// Its ancestors, nearest first, each with its decision records.
    pub ancestors: Vec<PlanDecisions>,
}

/// One plan and the decisions recorded on it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlanDecisions {
    pub plan_id: String,
    pub title: String,
    pub decisions: Vec<agents_store::PlanDecision>,
}

/// Everything a strategy may draw on for one resource; a missing backend is `None`
/// with its reason in `missing`.
pub struct Backends<'a> {
    pub root: &'a Path,
    pub index_id: &'a str,
    pub store: &'a dyn Store,
    pub search: &'a ContextSearch,
    pub tokenizer: &'a dyn TokenCounter,
    pub text: Option<&'a dyn TextBackend>,
    pub vector: Option<VectorAccess<'a>>,
    pub history: Option<&'a GitHistory>,
    /// Why each missing backend is missing.
    pub missing: BTreeMap<BackendKind, String>,
    /// The same backends owned, when the caller has them so: the executor then
    /// runs each strategy on a thread that keeps them, and can stop waiting for
    /// it at its time limit (see [`crate::pipeline::components::ParallelExecutor`]).
    pub owned: Option<std::sync::Arc<OwnedBackends>>,
}

/// The backends of [`Backends`], owned and shared: what a strategy's thread
/// keeps alive when the executor stops waiting for it.
pub struct OwnedBackends {
    pub root: std::path::PathBuf,
    pub index_id: String,
    pub store: std::sync::Arc<dyn Store>,
    pub search: ContextSearch,
    pub tokenizer: std::sync::Arc<dyn TokenCounter>,
    pub text: Option<std::sync::Arc<dyn TextBackend>>,
    pub vector: Option<(std::sync::Arc<dyn VectorBackend>, std::sync::Arc<dyn Embedder>)>,
    pub history: Option<std::sync::Arc<GitHistory>>,
    pub missing: BTreeMap<BackendKind, String>,
}

impl OwnedBackends {
    /// The borrowed view strategies work with, which carries `self` along.
    pub fn view(self: &std::sync::Arc<Self>) -> Backends<'_> {
        Backends {
            root: &self.root,
            index_id: &self.index_id,
            store: self.store.as_ref(),
            search: &self.search,
            tokenizer: self.tokenizer.as_ref(),
            text: self.text.as_deref(),
            vector: self
                .vector
                .as_ref()
                .map(|(backend, embedder)| VectorAccess { backend: backend.as_ref(), embedder: embedder.as_ref() }),
            history: self.history.as_deref(),
            missing: self.missing.clone(),
            owned: Some(self.clone()),
        }
    }
}

impl Backends<'_> {
    /// Whether a backend of `kind` can be used.
    pub fn has(&self, kind: BackendKind) -> bool {
        match kind {
            BackendKind::Text => self.text.is_some(),
            BackendKind::Vector => self.vector.is_some(),
            BackendKind::Graph => !self.missing.contains_key(&BackendKind::Graph),
            BackendKind::Temporal => self.history.is_some(),
        }
    }

    /// Why a backend of `kind` is unavailable, or `None` when it is available.
    pub fn why_missing(&self, kind: BackendKind) -> Option<String> {
        if self.has(kind) {
            return None;
        }
        Some(self.missing.get(&kind).cloned().unwrap_or_else(|| format!("no {} backend", kind.as_str())))
    }
}

/// A request with what the strategies need resolved: the depth as a number, how many
/// hits to draw from each backend, the path and kind filter.
#[derive(Clone, Debug)]
pub struct RetrievalQuery<'a> {
    pub request: &'a ContextRequest,
    /// The requested detail depth, 0-9.
    pub depth: u8,
    /// Candidates wanted; strategies draw [`RetrievalQuery::pool`] hits from each
    /// backend so that files are ranked on more evidence than gets packed.
    pub limit: usize,
    pub filter: SearchFilter,
    /// `context.strategies.arce.max-rounds`.
    pub arce_max_rounds: u32,
    /// `context.strategies.breadth-depth-navigator.max-hops`: the most hops any
    /// request's `breadth` may ask of the navigator.
    pub max_hops: u32,
    /// Set when the executor gives up on the strategy (its timeout passed).
    pub cancel: Option<&'a std::sync::atomic::AtomicBool>,
    pub deadline: Option<std::time::Instant>,
}

impl<'a> RetrievalQuery<'a> {
    /// The same query, stoppable through `cancel` and due by `deadline`.
    pub fn with_cancel<'b>(
        self,
        cancel: &'b std::sync::atomic::AtomicBool,
        deadline: std::time::Instant,
    ) -> RetrievalQuery<'b>
    where
        'a: 'b,
    {
        let query: RetrievalQuery<'b> = self;
        RetrievalQuery { cancel: Some(cancel), deadline: Some(deadline), ..query }
    }

    /// The query with its request copied, without a cancel flag or deadline:
    /// what a strategy's own thread keeps.
    pub fn to_owned_query(&self) -> OwnedQuery {
        OwnedQuery {
            request: self.request.clone(),
            depth: self.depth,
            limit: self.limit,
            filter: self.filter.clone(),
            arce_max_rounds: self.arce_max_rounds,
            max_hops: self.max_hops,
        }
    }

    /// Whether the strategy should stop now: cancelled, or past its deadline.
    pub fn should_stop(&self) -> bool {
        self.cancel.is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            || self.deadline.is_some_and(|d| std::time::Instant::now() >= d)
    }
    /// Hits drawn from each backend: four times the candidates wanted.
    pub fn pool(&self) -> usize {
        self.limit.saturating_mul(4).max(1)
    }

    /// The words to search for: the query text and the named entities.
    pub fn text(&self) -> String {
        let mut text = self.request.query().unwrap_or_default().to_owned();
        for entity in self.request.entities() {
            text.push(' ');
            text.push_str(entity);
        }
        text.trim().to_owned()
    }

    /// The depth for a node `hops` from the focus: with `depth_gradient`, nearer
    /// nodes get more detail (the requested depth at the focus, at most 4 one hop out,
    /// at most 2 beyond); without it, the requested depth everywhere.
    pub fn depth_at(&self, hops: u32) -> u8 {
        if !self.request.depth_gradient() {
            return self.depth;
        }
        match hops {
            0 => self.depth,
            1 => self.depth.min(4),
            _ => self.depth.min(2),
        }
    }

    /// [`RetrievalQuery::depth_at`] for ranked lists, where the best hits are the focus:
    /// relevance 0.7 and up counts as the focus, 0.4 and up as one hop.
    pub fn depth_for_score(&self, score: f32) -> u8 {
        self.depth_at(if score >= 0.7 {
            0
        } else if score >= 0.4 {
            1
        } else {
            2
        })
    }
}

#[cfg(test)]
impl<'a> RetrievalQuery<'a> {
    /// What the tests ask: the request at full depth, ten candidates, no
    /// filter, one ARCE round, two hops, no time limit.
    pub(crate) fn for_tests(request: &'a ContextRequest) -> RetrievalQuery<'a> {
        RetrievalQuery {
            request,
            depth: 9,
            limit: 10,
            filter: SearchFilter::default(),
            arce_max_rounds: 1,
            max_hops: 2,
            cancel: None,
            deadline: None,
        }
    }
}

/// A [`RetrievalQuery`] owning its request (see [`RetrievalQuery::to_owned_query`]).
#[derive(Clone, Debug)]
pub struct OwnedQuery {
    pub request: ContextRequest,
    pub depth: u8,
    pub limit: usize,
    pub filter: SearchFilter,
    pub arce_max_rounds: u32,
    pub max_hops: u32,
}

impl OwnedQuery {
    /// The query, borrowing the request from `self`.
    pub fn query(&self) -> RetrievalQuery<'_> {
        RetrievalQuery {
            request: &self.request,
            depth: self.depth,
            limit: self.limit,
            filter: self.filter.clone(),
            arce_max_rounds: self.arce_max_rounds,
            max_hops: self.max_hops,
            cancel: None,
            deadline: None,
        }
    }
}

/// Why a strategy could not produce candidates.
#[derive(Debug, thiserror::Error)]
pub enum StrategyError {
    #[error("strategy {strategy} needs the {} backend: {reason}", backend.as_str())]
    MissingBackend { strategy: String, backend: BackendKind, reason: String },
    #[error("strategy {strategy} has nothing to work from: {reason}")]
    NothingToDo { strategy: String, reason: String },
    #[error(transparent)]
    Query(#[from] QueryError),
}

impl From<agents_search::SearchError> for StrategyError {
    fn from(error: agents_search::SearchError) -> StrategyError {
        StrategyError::Query(QueryError::Search(error))
    }
}

impl From<agents_store::StoreError> for StrategyError {
    fn from(error: agents_store::StoreError) -> StrategyError {
        StrategyError::Query(QueryError::Store(error))
    }
}

/// A retrieval strategy (the spec's `ContextStrategy` protocol).
pub trait ContextStrategy: Send + Sync {
    /// The registered name, e.g. `simple-keyword`.
    fn name(&self) -> &'static str;
    fn capabilities(&self) -> StrategyCapabilities;
    /// Confidence in [0, 1] that this strategy serves `query` well with `backends`;
    /// 0 when it cannot run at all.
    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64;
    /// Ranked candidates, best first, scores in [0, 1].
    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError>;
}

pub use agents_uko::role::FileRole;

/// How much a file of this role counts against source code when files and
/// pieces are ranked: tests, documents and the rest come after the code they
/// describe unless they match much better.
pub fn prior_of(role: FileRole) -> f32 {
    match role {
        FileRole::Source => 1.0,
        FileRole::Stub => 0.6,
        FileRole::Example => 0.4,
        FileRole::Test => 0.4,
        FileRole::Doc => 0.3,
        FileRole::Generated => 0.2,
    }
}

/// How much a file's role counts when files are ranked ([`prior_of`]).
pub fn role_prior(path: &str) -> f32 {
    prior_of(FileRole::of(path))
}

/// Whether the node `uri` is a test module of its file or lies in one: its
/// symbol path (after `#`) is `tests`, or a segment before its own name is
/// `tests` or `test`, as Rust's `mod tests` gives `tests.can_extract_path`
/// (a method named `test` is not one). Such a piece of a source file is a
/// test for the ranker, as a test file's are: on the dev sets none of the 91
/// of them that reached a top 10 met an annotated span.
pub fn in_test_module(uri: &str) -> bool {
    let Some((_, symbol)) = uri.split_once('#') else { return false };
    let mut segments: Vec<&str> = symbol.split('.').collect();
    let own = segments.pop().unwrap_or_default();
    own == "tests" || segments.iter().any(|s| *s == "tests" || *s == "test")
}

/// The file roles a query asks for by name: a change to "examples: use
/// res.download" or a question about "the websocket example" wants those
/// files, which then rank as source does (no [`prior_of`], no ranker
/// penalty). Only examples and benchmarks: messages and questions mention
/// tests in passing ("add tests", "fix test") far more often than they ask
/// for them (waiving the test prior too cost the commit-message set a point
/// of MRR, 0.701 against 0.691, and moved the questions by 0.002), and they
/// name the documentation of code (docstrings, help text) more often than
/// prose files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RolesAsked {
    example: bool,
}

impl RolesAsked {
    /// A query that asks for no role by name.
    pub const NONE: RolesAsked = RolesAsked { example: false };

    /// The roles `query` names as a word: `example`, `examples`, `sample`,
    /// `samples`, `bench`, `benches`, `benchmark`, `benchmarks`, `profiling`,
    /// in any case.
    pub fn of(query: &str) -> RolesAsked {
        let example = query.split(|c: char| !c.is_alphanumeric()).any(|word| {
            matches!(
                word.to_ascii_lowercase().as_str(),
                "example"
                    | "examples"
                    | "sample"
                    | "samples"
                    | "bench"
                    | "benches"
                    | "benchmark"
                    | "benchmarks"
                    | "profiling"
            )
        });
        RolesAsked { example }
    }

    /// Whether the query asks for files of `role`.
    pub fn asks(self, role: FileRole) -> bool {
        role == FileRole::Example && self.example
    }

    /// [`role_prior`], or 1 when the query asks for the file's role.
    pub fn prior(self, path: &str) -> f32 {
        let role = FileRole::of(path);
        if self.asks(role) { 1.0 } else { prior_of(role) }
    }
}

/// What a file in an older copy of the code counts against the current one
/// when its candidates are scored ([`LegacyCopies`]).
pub const LEGACY_PRIOR: f32 = 0.3;

/// The folders of the candidates that hold an older major version of code the
/// tree also holds in its current form, as a project keeps its previous
/// version inside the package (pydantic's `pydantic/v1/` beside
/// `pydantic/`, zod's `src/v3/` beside `src/v4/`): both copies define the
/// same names in the same words, and a question means the current one. A
/// folder named `v<N>` is an older copy when the candidates hold a sibling
/// `v<M>` with `M > N`, or, for `v1`, when a file of its parent folder has the
/// name of one of its own files (Go's `v2/` module folder beside the root is
/// the newer copy, and is left alone). Read from the candidates' paths alone,
/// so only where both copies answer; a folder the query names (`v1`) is
/// never one.
#[derive(Clone, Debug, Default)]
pub struct LegacyCopies {
    folders: Vec<String>,
}

impl LegacyCopies {
    pub fn of<'a>(paths: impl IntoIterator<Item = &'a str>, query: &str) -> LegacyCopies {
        let named: std::collections::HashSet<String> =
            query.split(|c: char| !c.is_alphanumeric()).map(str::to_ascii_lowercase).collect();
        let version =
            |segment: &str| segment.strip_prefix('v').filter(|d| !d.is_empty()).and_then(|d| d.parse::<u32>().ok());
        // Per parent folder, the versions found under it; per parent folder,
        // the names of the files it holds itself.
        let mut versions: BTreeMap<&str, std::collections::BTreeSet<u32>> = BTreeMap::new();
        let mut files_in: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        let mut v1_files: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for path in paths {
            let (folder, file) = path.rsplit_once('/').unwrap_or(("", path));
            files_in.entry(folder).or_default().insert(file);
            let mut at = 0;
            for segment in path.split('/') {
                let end = at + segment.len();
                if end >= path.len() {
                    break; // the file name
                }
                if let Some(n) = version(segment) {
                    let parent = path[..at].trim_end_matches('/');
                    versions.entry(parent).or_default().insert(n);
                    if n == 1 && folder == &path[..end] {
                        v1_files.entry(parent).or_default().insert(file);
                    }
                }
                at = end + 1;
            }
        }
        let join = |parent: &str, n: u32| if parent.is_empty() { format!("v{n}") } else { format!("{parent}/v{n}") };
        let mut folders = Vec::new();
        for (parent, found) in &versions {
            let newest = found.iter().max().copied().unwrap_or(0);
            for &n in found.iter().filter(|&&n| n < newest) {
                folders.push(join(parent, n));
            }
        }
        for (parent, own) in &v1_files {
            if versions.get(parent).is_some_and(|v| v.iter().any(|&n| n > 1)) {
                continue; // already decided by its siblings
            }
            if files_in.get(parent).is_some_and(|theirs| own.iter().any(|f| theirs.contains(f))) {
                folders.push(join(parent, 1));
            }
        }
        folders.retain(|f| !named.contains(&f.rsplit('/').next().unwrap_or(f).to_ascii_lowercase()));
        LegacyCopies { folders }
    }

    /// Whether `path` lies in an older copy.
    pub fn holds(&self, path: &str) -> bool {
        self.folders.iter().any(|f| path.strip_prefix(f.as_str()).is_some_and(|rest| rest.starts_with('/')))
    }

    /// [`LEGACY_PRIOR`] for a path in an older copy, else 1.
    pub fn prior(&self, path: &str) -> f32 {
        if self.holds(path) { LEGACY_PRIOR } else { 1.0 }
    }

    pub fn is_empty(&self) -> bool {
        self.folders.is_empty()
    }
}

/// How strongly the query names the node `uri` (`uko://R/path#Outer.name`), in
/// [0, 1]: 1 when the query holds its qualified name (`Outer.name`,
/// `Outer::name`), or an identifier-like name of its own (one with `_` or an
/// inner capital) as a word, or a plain name of 4 characters or more together
/// with an enclosing name or written as the member of what holds it
/// (`res.download` for `lib/response.js#download`, `requests.post` for
/// `src/requests/api.py#post`); 0.5 for an identifier-like name the query holds
/// only as the qualifier of a member (`InteractivePrinter` in
/// `InteractivePrinter::print_line`) or only as a member of another
/// (`runEffects` of `OParser` in `ORunner.runEffects`); an ordinal of a name
/// defined again (`field_validator~4`) is ignored; 0.3 for a plain name of 4 characters or more alone
/// (`decorator`, `send`: many nodes share such words);
/// 0.5 when every word of a two-or-more-word name (`merge_settings`,
/// `mergeSettings`) is a word of the query. Short names (`get`, `run`)
/// match only written, case and all, as the member of what holds them
/// (`res.get`, `Data.Graph scc`): alone too many things share them. File
/// nodes never match.
pub fn name_match(query: &str, uri: &str) -> f64 {
    QueryNames::new(query).of(uri)
}

/// A query read once for [`name_match`]: its words (lower case, a set) and its
/// text without spaces, so matching each of many nodes parses nothing again.
pub struct QueryNames {
    words: std::collections::HashSet<String>,
    compact: String,
    /// The query split at white space, lower case.
    tokens: Vec<String>,
    /// Words in the query, repeats counted.
    length: usize,
    /// The query split at white space, as written.
    original: Vec<String>,
    /// [`QueryNames::is_lookup`], read once.
    lookup: bool,
}

/// Whether a word of the query is written as code: a qualified path
/// (`Router::nest`, `res.download`), a call (`sequence()`), or an
/// identifier with `_` or in camel case (`build_walker`, `getRssString`).
fn is_identifier_like(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !(is_name_char(c) || c == '(' || c == ')'));
    let core = word.trim_end_matches("()");
    if core.is_empty() || !core.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$') {
        return false;
    }
    let ident = |s: &str| s.len() >= 2 && s.chars().all(is_name_char);
    // A name marked with `$` (JavaScript's `$constructor`, `$ZodType`) is code.
    if core.starts_with('$') && ident(core) && core.chars().nth(1).is_some_and(|c| c.is_alphabetic() || c == '_') {
        return true;
    }
    let segments: Vec<&str> = core.split("::").flat_map(|s| s.split('.')).collect();
    if segments.len() >= 2 && segments.iter().all(|s| ident(s)) {
        return true;
    }
    // Camel case turns from a small letter to a capital (`getRss`,
    // `InputReader`); `ETag` and `URL` are words.
    let camel = core.as_bytes().windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
    ident(core) && (word.ends_with("()") || core.trim_matches('_').contains('_') || camel)
}

/// Whether a word written before a name reads as the name's type or module:
/// an identifier path (`Data.Map`, `axum::routing`, `requests.sessions`) or an
/// identifier in upper camel case (`JsonUtf8Reader`); not a word of prose
/// (`Where`, `e.g.`) nor another function's name (`tryAlloc allocType`).
fn is_qualifier_word(word: &str) -> bool {
    let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
    let segments: Vec<&str> = word.split(['.', ':']).filter(|s| !s.is_empty()).collect();
    let identifier = |s: &str| {
        s.starts_with(|c: char| c.is_alphabetic() || c == '_') && s.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    if segments.is_empty() || !segments.iter().all(|s| identifier(s)) {
        return false;
    }
    if segments.len() >= 2 {
        return segments.iter().all(|s| s.len() >= 2);
    }
    // A type's name in upper camel case; a lower camel one (`tryAlloc`) is a
    // function's or a variable's, listed beside the name, not holding it.
    word.starts_with(char::is_uppercase)
        && word.chars().skip(1).any(char::is_uppercase)
        && word.chars().any(char::is_lowercase)
}

/// Whether `qualifier` (`data.map`, `jsonutf8reader`, lower case) names
/// what holds the node `symbol` of the file `path`: one of the node's
/// enclosing names, or folders and the file's stem in that order
/// (`containers/src/Data/Map/Internal.hs` for `Data.Map`), the stem perhaps
/// written short (3 characters or more, and 3 fewer than the stem: `res`
/// for `lib/response.js`, as Express writes it; `Node` is not `Nodes.java`).
fn qualifies(qualifier: &str, path: &str, symbol: &[&str]) -> bool {
    let plain = |s: &str| s.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_')).to_lowercase();
    let wanted: Vec<String> = qualifier.split(['.', ':']).map(plain).filter(|s| !s.is_empty()).collect();
    let Some(last) = wanted.last() else { return false };
    if symbol.iter().rev().skip(1).any(|s| plain(s) == *last) {
        return true;
    }
    let lower = path.to_lowercase();
    let mut parts: Vec<String> = lower.split('/').map(str::to_owned).collect();
    if let Some(file) = parts.pop() {
        parts.push(plain(file.split('.').next().unwrap_or(&file)));
    }
    let stem = parts.len() - 1;
    let mut wanted = wanted.iter().peekable();
    for (i, part) in parts.iter().enumerate() {
        // The file's stem may be written short (`res` for `response.js`), by
        // three letters at least and three fewer (`Node` is not `Nodes.java`).
        let short = |w: &str| i == stem && w.len() >= 3 && part.len() >= w.len() + 3 && part.starts_with(w);
        if wanted.peek().is_some_and(|w| *w == part || short(w)) {
            wanted.next();
        }
    }
    wanted.peek().is_none()
}

/// A character of a name as code writes it: JavaScript's names may hold `$`
/// (`$constructor`, `$ZodType`).
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

impl QueryNames {
    pub fn new(query: &str) -> QueryNames {
        // A word with `$` is one name (`$constructor` is not `constructor`).
        let words = query
            .split(|c: char| !is_name_char(c))
            .filter(|w| !w.is_empty() && *w != "$")
            .map(str::to_lowercase)
            .collect();
        let compact = query.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_lowercase();
        let original: Vec<String> = query.split_whitespace().map(str::to_owned).collect();
        let tokens: Vec<String> = original.iter().map(|t| t.to_lowercase()).collect();
        let mut names = QueryNames { words, compact, length: tokens.len(), tokens, original, lookup: false };
        names.lookup = names.reads_as_lookup();
        names
    }

    /// Whether the query reads as a look-up of a name (`InteractivePrinter::print_line`,
    /// `where is AsyncConsumer defined`): a few words at most, or up to
    /// [`LOOKUP_CODE_WORDS`] that name the code first (`ExitCode enum, its
    /// exit method and merge_exitcodes`, `where is the build_walker method
    /// that configures the walker`: past `where is the`, the first word is
    /// written as code, [`is_identifier_like`]). A question about behaviour
    /// that happens to hold an identifier is not one, nor a question asking
    /// how ([`QueryNames::asks_how`]), nor a commit message, which names its
    /// change first (`add ResponseAxumBodyLayer for ...`).
    pub fn is_lookup(&self) -> bool {
        self.lookup
    }

    /// [`QueryNames::is_lookup`], worked out.
    fn reads_as_lookup(&self) -> bool {
        if self.length <= LOOKUP_WORDS {
            return true;
        }
        let framing = |w: &str| matches!(w.to_lowercase().as_str(), "where" | "is" | "are" | "the" | "a" | "an");
        self.length <= LOOKUP_CODE_WORDS
            && !self.asks_how()
            && self.original.iter().find(|w| !framing(w)).is_some_and(|w| is_identifier_like(w))
    }

    /// Whether the query asks how something works or comes about, as
    /// architecture and flow questions do ("how are blueprints registered on
    /// the app", "what happens when the queue is full", "trace the call path
    /// from ..."): it opens with `how` (not `how many`, `much`, `long` or
    /// `often`), `what happens`, `walk through`, `trace`, `explain` or
    /// `lifecycle`. The answer to one is a path through several functions.
    pub fn asks_how(&self) -> bool {
        let word = |i: usize| self.tokens.get(i).map(|t| t.trim_matches(|c: char| !c.is_alphanumeric()));
        match word(0) {
            Some("how") => !matches!(word(1), Some("many" | "much" | "long" | "often")),
            Some("what") => word(1) == Some("happens"),
            Some("walk") => word(1) == Some("through"),
            Some("trace" | "explain" | "lifecycle") => true,
            _ => false,
        }
    }

    /// Each place the query holds `lower` as a whole identifier: the
    /// identifier qualifying it there (`x` in `x.lower`, `x::lower`), or,
    /// where it starts its word, the word before when that reads as a type
    /// or module name ([`is_qualifier_word`]: `Data.Map` in `Data.Map
    /// insertWith`), and whether it qualifies a member itself (`lower.y`,
    /// `lower::y`).
    fn occurrences(&self, lower: &str) -> Vec<(Option<&str>, bool)> {
        let ident = is_name_char;
        let mut found = Vec::new();
        for (i, token) in self.tokens.iter().enumerate() {
            let mut from = 0;
            while let Some(at) = token[from..].find(lower) {
                let (start, end) = (from + at, from + at + lower.len());
                from = end;
                let (before, after) = (&token[..start], &token[end..]);
                let qualified = before.strip_suffix("::").or_else(|| before.strip_suffix('.'));
                if after.starts_with(ident) || (qualified.is_none() && before.ends_with(ident)) {
                    continue; // part of a longer identifier
                }
                let qualifier = match qualified {
                    Some(q) => q.rsplit(|c: char| !ident(c)).next().filter(|q| !q.is_empty()),
                    None if before.is_empty() && i > 0 && is_qualifier_word(&self.original[i - 1]) => {
                        Some(self.tokens[i - 1].as_str())
                    }
                    None => None,
                };
                let member = after
                    .strip_prefix("::")
                    .or_else(|| after.strip_prefix('.'))
                    .is_some_and(|m| m.starts_with(|c: char| c.is_alphabetic() || c == '_'));
                found.push((qualifier, member));
            }
        }
        found
    }

    /// Whether the query, spaces left out, holds `needle` as a whole
    /// identifier path: `printer::print_line` is not in
    /// `interactiveprinter::print_line`, nor `a.run` in `a.run_all`.
    fn holds_identifier(&self, needle: &str) -> bool {
        let ident = is_name_char;
        self.compact.match_indices(needle).any(|(at, _)| {
            !self.compact[..at].ends_with(ident) && !self.compact[at + needle.len()..].starts_with(ident)
        })
    }

    /// The names the query writes as code ([`is_identifier_like`]): the last
    /// segment of each such word (`post` of `requests.post`, `JSON` of
    /// `ctx.JSON()`, `with_state`), as written, each once, in query order.
    pub fn code_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for word in self.original.iter().filter(|w| is_identifier_like(w)) {
            let core = word.trim_matches(|c: char| !(is_name_char(c) || c == '(' || c == ')'));
            let core = core.trim_end_matches("()");
            if let Some(name) = core.rsplit(['.', ':']).next().filter(|n| n.len() >= 3)
                && !out.iter().any(|o| o == name)
            {
                out.push(name.to_owned());
            }
        }
        out
    }

    /// Whether the query writes the node `uri` as code: [`QueryNames::of`] is 1,
    /// or its name is written as the member of what holds it (`requests.post`
    /// for `src/requests/api.py#post`, `res.render` for
    /// `lib/response.js#render`) in any query, not only a look-up.
    pub fn writes_as_code(&self, uri: &str) -> bool {
        if self.of(uri) >= 1.0 {
            return true;
        }
        let Some((_, symbol)) = uri.split_once('#') else { return false };
        let path = agents_pack::uri_path(uri);
        let segments: Vec<&str> = symbol.split(['.', ':']).map(without_ordinal).filter(|s| !s.is_empty()).collect();
        let Some(name) = segments.last().copied() else { return false };
        self.original.iter().any(|w| w.contains(name) && is_identifier_like(w))
            && self
                .occurrences(&name.to_lowercase())
                .iter()
                .any(|(q, member)| !member && q.is_some_and(|q| qualifies(q, path, &segments)))
    }

    /// [`name_match`] of the node `uri` against this query.
    pub fn of(&self, uri: &str) -> f64 {
        let Some((_, symbol)) = uri.split_once('#') else { return 0.0 };
        // A name defined more than once in its scope carries its ordinal
        // (`field_validator~4`: the implementation after three overloads);
        // the query names it without.
        let segments: Vec<&str> = symbol.split(['.', ':']).map(without_ordinal).filter(|s| !s.is_empty()).collect();
        let Some(name) = segments.last().copied() else { return 0.0 };
        let lower = name.to_lowercase();
        let has = |w: &str| self.words.contains(&w.to_lowercase());
        if segments.len() >= 2 {
            let outer = segments[segments.len() - 2].to_lowercase();
            if self.holds_identifier(&format!("{outer}.{lower}")) || self.holds_identifier(&format!("{outer}::{lower}"))
            {
                return 1.0;
            }
        }
        if self.words.contains(&lower) {
            // An identifier, not a word: `version_option`, `HTTPAdapter`, `isTTY`.
            let distinctive = name.contains(['_', '$']) || name.chars().skip(1).any(char::is_uppercase);
            if distinctive {
                // Named only to qualify a member (`InteractivePrinter::print_line`
                // asks for the method, not the struct), or only as the member
                // of another (`ORunner.runEffects` for `OParser.runEffects`): half.
                let path = agents_pack::uri_path(uri);
                let found = self.occurrences(&lower);
                let only_qualifier = found.iter().all(|(_, member)| *member);
                let only_of_other = found.iter().all(|(q, _)| q.is_some_and(|q| !qualifies(q, path, &segments)));
                return if !found.is_empty() && (only_qualifier || only_of_other) { 0.5 } else { 1.0 };
            }
            // Written as a member of what holds it: `res.download` for
            // lib/response.js's `download`, `Data.Map insert` (a top-level
            // node only, in the case the query writes it). Measured over the
            // 466 questions, in look-ups alone and in every query: chunk
            // NDCG@10 0.7418 and 0.7422.
            let as_member = |written: &dyn Fn(&String) -> bool| {
                let path = agents_pack::uri_path(uri);
                segments.len() == 1
                    && self.original.iter().any(written)
                    && self
                        .occurrences(&lower)
                        .iter()
                        .any(|(q, member)| !member && q.is_some_and(|q| qualifies(q, path, &segments)))
            };
            if name.len() >= 4 {
                // An enclosing name the query holds too; a constructor's
                // (`Range.Range`) is its own name, not a second word.
                let outer =
                    segments.iter().rev().skip(1).any(|s| s.len() >= 3 && !s.eq_ignore_ascii_case(name) && has(s));
                return if outer || as_member(&|w| w.contains(name)) { 1.0 } else { 0.3 };
            }
            // A short name (`scc`, `get`) names nothing alone; written as the
            // member of what holds it (`Data.Graph scc`, `res.get`), as
            // itself, case and all (`Data.Map` writes a module, not the
            // function `map`), it names the node.
            let itself = |w: &String| w.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|part| part == name);
            return if name.len() >= 2 && as_member(&itself) { 1.0 } else { 0.0 };
        }
        let parts = agents_search::code_tokens(name);
        let parts: Vec<&String> = parts.iter().filter(|p| **p != lower).collect();
        if parts.len() >= 2 && parts.iter().all(|p| self.words.contains(*p)) {
            return 0.5;
        }
        0.0
    }
}

pub use agents_pack::without_ordinal;

/// Files ranked by the evidence of their scored parts: the best eight scores of a
/// file, halving in weight (`s1 + s2/2 + s3/4 ...`), times its [`role_prior`];
/// best first, ties by path.
pub fn path_evidence<'a>(scored: impl IntoIterator<Item = (&'a str, f32)>) -> Vec<(String, f32)> {
    path_evidence_asked(scored, RolesAsked::NONE)
}

/// [`path_evidence`] with the prior of the roles the query asks for waived
/// ([`RolesAsked::prior`]).
pub fn path_evidence_asked<'a>(
    scored: impl IntoIterator<Item = (&'a str, f32)>,
    roles: RolesAsked,
) -> Vec<(String, f32)> {
    let mut by_file: std::collections::HashMap<&str, Vec<f32>> = std::collections::HashMap::new();
    for (path, score) in scored {
        by_file.entry(path).or_default().push(score);
    }
    let mut files: Vec<(String, f32)> = by_file
        .into_iter()
        .map(|(path, mut scores)| {
            scores.sort_by(|a, b| b.total_cmp(a));
            let evidence: f32 = scores.iter().take(8).enumerate().map(|(i, s)| s * 0.5f32.powi(i as i32)).sum();
            (path.to_owned(), evidence * roles.prior(path))
        })
        .collect();
    files.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    files
}

/// Files ranked from two lists fused by reciprocal rank: the files by the evidence
/// of their parts ([`path_evidence`] over the scored nodes), and the files by their
/// whole-file scores (the items flagged `true`, see [`Candidate::whole_file`]),
/// times their [`role_prior`]. A file at rank `r` (from 0) of a list earns
/// `weight / (RRF_K + r + 1)` from it; best first, ties by path. Without whole-file
/// items this is exactly the order of [`path_evidence`].
pub fn rank_paths<'a>(scored: impl IntoIterator<Item = (&'a str, f32, bool)>) -> Vec<String> {
    rank_paths_named(
        scored.into_iter().map(|(path, score, whole_file)| (path, score, whole_file, 0.0)),
        RolesAsked::NONE,
    )
}

/// [`rank_paths`] with a third list: the files defining a node the query names
/// outright ([`QueryNames::of`] = 1: `InteractivePrinter::print_line`,
/// `version_option`), by the evidence of those nodes, weighing
/// [`NAMED_WEIGHT`]. A short file that mentions a name many times no longer
/// outranks the file that defines it on the strength of its whole-file score.
/// The roles the query asks for rank as source ([`RolesAsked::prior`]).
pub fn rank_paths_named<'a>(
    scored: impl IntoIterator<Item = (&'a str, f32, bool, f64)>,
    roles: RolesAsked,
) -> Vec<String> {
    fuse_paths_named(scored, roles).into_iter().map(|(path, _)| path).collect()
}

/// [`rank_paths_named`]'s files with their fused scores, best first: the sum
/// over the lists of `weight / (RRF_K + r + 1)`, so a file the head of every
/// list names stands well clear of one that only a single list puts first.
pub fn fuse_paths_named<'a>(
    scored: impl IntoIterator<Item = (&'a str, f32, bool, f64)>,
    roles: RolesAsked,
) -> Vec<(String, f32)> {
    let (mut nodes, mut files, mut named) = (Vec::new(), Vec::new(), Vec::new());
    for (path, score, whole_file, name) in scored {
        if whole_file {
            files.push((path, score));
        } else {
            nodes.push((path, score));
            if name >= 1.0 {
                named.push((path, score));
            }
        }
    }
    let by_nodes = path_evidence_asked(nodes, roles);
    let mut fused: std::collections::HashMap<String, f32> = std::collections::HashMap::new();
    let lists = [
        (1.0, by_nodes),
        (WHOLE_FILE_WEIGHT, path_evidence_asked(files, roles)),
        (NAMED_WEIGHT, path_evidence_asked(named, roles)),
    ];
    for (weight, list) in lists {
        for (rank, (path, _)) in list.into_iter().enumerate() {
            *fused.entry(path).or_default() += weight / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut ranked: Vec<(String, f32)> = fused.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked
}

/// The most words a query may have to read as a look-up ([`QueryNames::is_lookup`]).
const LOOKUP_WORDS: usize = 5;
/// The most words of a look-up that names the code first
/// ([`QueryNames::is_lookup`]). Measured over the 466 questions (49 of the
/// 166 symbol look-ups run past five words), holding a word written as code
/// anywhere: 9, 12 and 15 words gave chunk NDCG@10 0.7412, 0.7417 and
/// 0.7408 (0.7406 at five alone); at 12 with that word first, 0.7419 and
/// the commit set unchanged, docs/benchmarks.md.
const LOOKUP_CODE_WORDS: usize = 12;

/// Weight of the named-definitions list in [`rank_paths_named`].
const NAMED_WEIGHT: f32 = 1.0;

/// Reciprocal-rank constant of [`rank_paths`]: small, so the head of each list
/// counts most. With [`WHOLE_FILE_WEIGHT`], the middle of the plateau measured on
/// the dev localization set (K 4-8 by weight 0.5-0.8 all within a point).
const RRF_K: f32 = 6.0;
/// Weight of the whole-file list in [`rank_paths`] (the nodes' list weighs 1).
const WHOLE_FILE_WEIGHT: f32 = 0.7;

/// Scales scores so the best is 1 (all zero stays zero).
pub(crate) fn normalize(scores: &mut [(String, f32)]) {
    let best = scores.iter().map(|s| s.1).fold(0.0_f32, f32::max);
    if best > 0.0 {
        scores.iter_mut().for_each(|s| s.1 /= best);
    }
}

/// Sorts candidates by score descending, then URI, so ties come back the same way.
pub(crate) fn sort_candidates(candidates: &mut [Candidate]) {
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.uri.cmp(&b.uri)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_are_told_by_their_symbol_path() {
        assert!(in_test_module("uko://r/src/a.rs#tests"));
        assert!(in_test_module("uko://r/src/a.rs#tests.extracts"));
        assert!(in_test_module("uko://r/src/a.rs#path.tests.helper.run"));
        assert!(!in_test_module("uko://r/src/re.js#Regex.test"));
        assert!(!in_test_module("uko://r/src/a.rs#testing.run"));
        assert!(!in_test_module("uko://r/src/a.rs"));
    }

    #[test]
    fn without_whole_files_paths_rank_by_their_parts_evidence() {
        let scored =
            [("src/a.rs", 1.0, false), ("src/b.rs", 0.7, false), ("src/b.rs", 0.7, false), ("src/c.rs", 0.2, false)];
        // b: 0.7 + 0.35 beats a's single 1.0.
        assert_eq!(rank_paths(scored), ["src/b.rs", "src/a.rs", "src/c.rs"]);
        let evidence: Vec<String> =
            path_evidence(scored.iter().map(|(p, s, _)| (*p, *s))).into_iter().map(|(p, _)| p).collect();
        assert_eq!(rank_paths(scored), evidence);
    }

    #[test]
    fn a_file_defining_what_a_look_up_names_outranks_one_that_mentions_it_often() {
        // decorations.rs is short and says `InteractivePrinter` five times: it
        // leads the whole-file list; printer.rs defines the method asked for.
        let scored = [
            ("src/printer.rs", 1.0, false, 1.0),
            ("src/decorations.rs", 0.39, false, 0.0),
            ("src/decorations.rs", 0.35, false, 0.0),
            ("src/decorations.rs", 0.35, false, 0.0),
            ("src/decorations.rs", 1.0, true, 0.0),
            ("src/other.rs", 0.8, true, 0.0),
            ("src/printer.rs", 0.53, true, 0.0),
        ];
        let unnamed = scored.map(|(p, s, w, _)| (p, s, w));
        assert_eq!(rank_paths(unnamed)[0], "src/decorations.rs", "without the named list");
        assert_eq!(
            rank_paths_named(scored, RolesAsked::NONE),
            ["src/printer.rs", "src/decorations.rs", "src/other.rs"]
        );
        // A look-up is a few words; a question about behaviour is not.
        assert!(QueryNames::new("InteractivePrinter::print_line").is_lookup());
        assert!(QueryNames::new("where is AsyncConsumer defined").is_lookup());
        assert!(!QueryNames::new("how does the printer decide when to call print_line for each input").is_lookup());
        // Longer, it names the code first; a commit message names its change first.
        assert!(QueryNames::new("ExitCode enum, its exit method and merge_exitcodes").is_lookup());
        assert!(QueryNames::new("where is the build_walker method that configures the walker").is_lookup());
        assert!(QueryNames::new("sequence() helper that chains middleware handlers").is_lookup());
        assert!(!QueryNames::new("axum: add ResponseAxumBodyLayer for mapping response bodies").is_lookup());
        assert!(!QueryNames::new("the function that resolves the astro config file path").is_lookup());
        assert!(!QueryNames::new("how does Router::nest hand requests to the nested router").is_lookup());
        assert!(
            !QueryNames::new("InputReader struct and its read_line method and every other word of this long query")
                .is_lookup()
        );
    }

    #[test]
    fn words_written_as_code_are_told_from_prose() {
        for code in ["Router::nest", "res.download", "sequence()", "build_walker", "getRssString", "`PathUrl.new`"] {
            assert!(is_identifier_like(code), "{code}");
        }
        for prose in ["Where", "axum:", "refactor(binding):", "e.g.", "the", "URL", "1.5", "ETag"] {
            assert!(!is_identifier_like(prose), "{prose}");
        }
    }

    #[test]
    fn how_questions_are_told_by_their_opening() {
        for query in [
            "how are blueprints registered on the app",
            "How does shell tab completion work?",
            "what happens when a channel's queue is at capacity",
            "walk through the request from the socket to the handler",
            "trace the call path from requests.post down to the pool",
            "lifecycle of an async websocket consumer",
        ] {
            assert!(QueryNames::new(query).asks_how(), "{query}");
        }
        for query in [
            "how many threads are used by default when -j is not given",
            "how long does a session cookie live",
            "terminate each printed result with a NUL byte",
            "what is the default theme",
            "work out how long the system has been running",
        ] {
            assert!(!QueryNames::new(query).asks_how(), "{query}");
        }
    }

    #[test]
    fn whole_files_join_the_ranking_by_reciprocal_rank() {
        let scored = [
            ("src/a.rs", 1.0, false),
            ("src/b.rs", 0.9, false),
            ("src/c.rs", 0.8, false),
            ("src/b.rs", 1.0, true),
            ("src/c.rs", 0.5, true),
        ];
        // With K = 6 and weight 0.7: b 1/8 + 0.7/7, c 1/9 + 0.7/8, a 1/7.
        assert_eq!(rank_paths(scored), ["src/b.rs", "src/c.rs", "src/a.rs"]);
        // A file only the whole-file list knows still ranks.
        let only_whole = [("src/a.rs", 1.0, false), ("src/z.rs", 1.0, true)];
        assert_eq!(rank_paths(only_whole), ["src/a.rs", "src/z.rs"]);
    }

    #[test]
    fn the_query_names_a_node_by_its_qualified_or_identifier_like_name() {
        let uri = "uko://R/src/sessions.py#Session.merge_environment_settings";
        assert_eq!(name_match("where is Session.merge_environment_settings defined", uri), 1.0);
        assert_eq!(name_match("merge_environment_settings", uri), 1.0);
        assert_eq!(name_match("how are environment settings merged", uri), 0.0);
        assert_eq!(name_match("merge environment settings", uri), 0.5);
        assert_eq!(name_match("HTTPAdapter send method", "uko://R/a.py#HTTPAdapter.send"), 1.0);
        assert_eq!(name_match("Router::nest", "uko://R/src/routing/mod.rs#Router.nest"), 1.0);
        // The ordinal of a name defined again (after overloads) is not part of it.
        assert_eq!(name_match("field_validator decorator", "uko://R/f.py#field_validator~4"), 1.0);
        assert_eq!(name_match("Printer::print_line", "uko://R/p.rs#Printer.print_line~2"), 1.0);
        // A type named only to qualify its member is half named.
        let printer = "uko://R/src/printer.rs#InteractivePrinter";
        assert_eq!(name_match("InteractivePrinter::print_line", printer), 0.5);
        assert_eq!(name_match("where is InteractivePrinter.print_line", printer), 0.5);
        assert_eq!(name_match("InteractivePrinter::print_line and InteractivePrinter", printer), 1.0);
        assert_eq!(name_match("the InteractivePrinter.", printer), 1.0);
        assert_eq!(name_match("MyInteractivePrinter::new", printer), 0.0);
        // A qualified name inside a longer one is not it: the trait's method
        // is not the one `InteractivePrinter::print_line` names.
        let trait_method = "uko://R/src/printer.rs#Printer.print_line";
        assert_eq!(name_match("InteractivePrinter::print_line", trait_method), 0.5);
        assert_eq!(name_match("Printer::print_line_numbers", trait_method), 0.0);
        assert_eq!(name_match("(Printer::print_line)", trait_method), 1.0);
        // A member of another type is half named; of its own, or alone, fully.
        let other = "uko://R/s/OParser.scala#OParser~2.runEffects";
        assert_eq!(name_match("ORunner.runEffects", other), 0.5);
        assert_eq!(name_match("ORunner.runEffects", "uko://R/s/ORunner.scala#ORunner.runEffects"), 1.0);
        assert_eq!(name_match("OParser.runEffects", other), 1.0);
        assert_eq!(name_match("where is runEffects defined", other), 1.0);
        assert_eq!(name_match("ORunner.runEffects or runEffects", other), 1.0);
        // A type or module written before the name qualifies it too: the
        // node it names, by an enclosing name or by its file's path, fully;
        // another of the same name, half.
        let map = "uko://R/containers/src/Data/Map/Internal.hs#insertWith";
        let int_map = "uko://R/containers/src/Data/IntMap/Internal.hs#insertWith";
        assert_eq!(name_match("Data.Map insertWith", map), 1.0);
        assert_eq!(name_match("Data.Map insertWith", int_map), 0.5);
        assert_eq!(name_match("Data.IntMap insertWith", int_map), 1.0);
        let utf8 = "uko://R/moshi/-JsonUtf8Reader.kt#-JsonUtf8Reader.skipValue";
        let value = "uko://R/moshi/-JsonValueReader.kt#-JsonValueReader.skipValue";
        assert_eq!(name_match("JsonUtf8Reader skipValue", utf8), 1.0);
        assert_eq!(name_match("JsonUtf8Reader skipValue", value), 0.5);
        assert_eq!(name_match("`JsonUtf8Reader` skipValue and JsonValueReader", value), 0.5);
        // A plain name written as the member of what holds it, in a look-up:
        // its file's stem, perhaps written short, or its folders.
        let download = "uko://R/lib/response.js#download";
        assert_eq!(name_match("res.download", download), 1.0);
        assert_eq!(name_match("response.download", download), 1.0);
        assert_eq!(name_match("req.download", download), 0.3);
        assert_eq!(name_match("re.download", download), 0.3);
        // A plural stem is another file, not the name written short.
        assert_eq!(name_match("Node.wrap", "uko://R/org/jsoup/nodes/Nodes.java#wrap"), 0.3);
        assert_eq!(name_match("Data.Map insert", "uko://R/containers/src/Data/Map/Internal.hs#insert"), 1.0);
        assert_eq!(name_match("Data.Map insert", "uko://R/containers/src/Data/Set/Internal.hs#insert"), 0.3);
        // In a question too.
        assert_eq!(name_match("how does res.download set the attachment header and stream the file", download), 1.0);
        assert_eq!(name_match("how does req.download set the attachment header", download), 0.3);
        // A word of prose before it qualifies nothing.
        assert_eq!(name_match("Where is skipValue", value), 1.0);
        assert_eq!(name_match("e.g. skipValue", value), 1.0);
        assert_eq!(name_match("peek skipValue", value), 1.0);
        assert_eq!(name_match("tryAlloc skipValue", value), 1.0);
        // Inside a longer identifier it is not named at all.
        assert_eq!(name_match("InteractivePrinter::print_line MyInteractivePrinter", printer), 0.5);
        // Plain words alone say little; short names and files nothing.
        assert_eq!(name_match("the version decorator", "uko://R/d.py#argument.decorator"), 0.3);
        assert_eq!(name_match("the version of a decorator argument", "uko://R/d.py#argument.decorator"), 1.0);
        // A constructor's enclosing name is its own: one plain word, not two.
        assert_eq!(name_match("references in the 128-159 range", "uko://R/Range.java#Range.Range~3"), 0.3);
        assert_eq!(name_match("decode a character", "uko://R/Token.java#Token.Character.Character"), 0.3);
        assert_eq!(name_match("get the value", "uko://R/d.py#get"), 0.0);
        assert_eq!(name_match("sessions", "uko://R/src/sessions.py"), 0.0);
        // A short name written qualified by what holds it names it.
        let scc = "uko://R/containers/src/Data/Graph.hs#scc";
        assert_eq!(name_match("Data.Graph scc strongly connected components", scc), 1.0);
        assert_eq!(name_match("scc strongly connected components", scc), 0.0);
        assert_eq!(name_match("Data.Map scc", scc), 0.0);
        assert_eq!(name_match("res.get a header", "uko://R/lib/response.js#get"), 1.0);
        assert_eq!(name_match("req.get a header", "uko://R/lib/response.js#get"), 0.0);
        // A module path is not its last segment's function, nor a plural.
        assert_eq!(name_match("union of two Data.Map maps", "uko://R/containers/src/Data/Map/Internal.hs#map"), 0.0);
        // A name marked with `$` is that name, not the plain word.
        assert_eq!(name_match("$constructor", "uko://R/core.ts#$constructor~2"), 1.0);
        assert_eq!(name_match("$constructor", "uko://R/core.ts#Doc.constructor"), 0.0);
        assert_eq!(name_match("$ZodRegistry class", "uko://R/registries.ts#$ZodRegistry"), 1.0);
        assert_eq!(name_match("the constructor", "uko://R/core.ts#$constructor"), 0.0);
    }

    #[test]
    fn an_older_copy_of_the_code_is_found_beside_the_current_one() {
        // Sibling versions: the lower is the older copy, at any depth below.
        let zod = ["src/v3/types.ts", "src/v4/core/schemas.ts", "src/v4/classic/parse.ts", "src/index.ts"];
        let legacy = LegacyCopies::of(zod, "how is a value parsed");
        assert!(legacy.holds("src/v3/types.ts"));
        assert!(!legacy.holds("src/v4/core/schemas.ts") && !legacy.holds("src/index.ts"));
        assert_eq!(legacy.prior("src/v3/types.ts"), LEGACY_PRIOR);
        assert_eq!(legacy.prior("src/v4/core/schemas.ts"), 1.0);
        // A `v1` folder repeating its parent's file names.
        let pydantic = ["pydantic/v1/fields.py", "pydantic/fields.py", "pydantic/main.py"];
        assert!(LegacyCopies::of(pydantic, "fields").holds("pydantic/v1/fields.py"));
        // Not when the parent holds none of its names, nor for a newer
        // version folder beside the root (Go's `v2/` module).
        assert!(LegacyCopies::of(["api/v1/users.go", "api/server.go"], "users").is_empty());
        assert!(LegacyCopies::of(["v2/client.go", "client.go"], "client").is_empty());
        // One copy alone is no older copy; a version the query names is none.
        assert!(LegacyCopies::of(["src/v3/types.ts"], "types").is_empty());
        assert!(LegacyCopies::of(zod, "safeParse in zod v3").is_empty());
        assert!(LegacyCopies::of(pydantic, "the V1 fields").is_empty());
        // A version is a folder, not a file, nor a word with more after it.
        assert!(LegacyCopies::of(["src/v1", "src/v2/a.ts", "src/v1beta1/b.ts"], "a").is_empty());
    }

    #[test]
    fn names_written_as_code_are_read_from_the_query() {
        let names =
            QueryNames::new("trace requests.post down to the pool, via ctx.JSON() and with_state (twice: with_state)");
        assert_eq!(names.code_names(), ["post", "JSON", "with_state"]);
        assert!(QueryNames::new("how are blueprints registered on the app").code_names().is_empty());
        // A name of fewer than three characters is no name to look up.
        assert!(QueryNames::new("where is a.b").code_names().is_empty());
        assert_eq!(QueryNames::new("$constructor and $").code_names(), ["$constructor"]);
    }

    #[test]
    fn a_query_writes_a_node_as_code_by_its_qualified_name() {
        let names = QueryNames::new("trace the call path from the top-level requests.post helper down to the pool");
        assert!(names.writes_as_code("uko://R/src/requests/api.py#post"));
        // Another module's `post` is not the one `requests.post` names, nor
        // is a file node.
        assert!(!names.writes_as_code("uko://R/src/httpx/client.py#post"));
        assert!(!names.writes_as_code("uko://R/src/requests/api.py"));
        // Three letters are enough when qualified: `app.get` is Express's.
        let names = QueryNames::new("how do app.get and app.post register routes");
        assert!(names.writes_as_code("uko://R/lib/application.js#get"));
        assert!(!names.writes_as_code("uko://R/lib/router/index.js#get"));
        // What `of` names outright is written as code too.
        assert!(
            QueryNames::new("how does with_state reach the extractor")
                .writes_as_code("uko://R/src/routing/mod.rs#Router.with_state")
        );
    }

    #[test]
    fn a_role_weighs_its_prior() {
        assert!(role_prior("src/a.py") > role_prior("src/a.pyi"));
        assert!(role_prior("src/a.pyi") > role_prior("tests/a.py"));
    }

    #[test]
    fn the_roles_a_query_names_rank_as_source() {
        let examples = RolesAsked::of("examples: use updated res.download in Example");
        assert!(examples.asks(FileRole::Example) && !examples.asks(FileRole::Test));
        assert!(RolesAsked::of("speed up the profiling harness").asks(FileRole::Example));
        // Words, not parts of words; tests and documents are never asked for.
        for query in ["fix the test of the router", "update the docs and the README", "sampled counterexample"] {
            assert_eq!(RolesAsked::of(query), RolesAsked::NONE, "{query}");
        }
        assert_eq!(examples.prior("examples/a.py"), 1.0);
        assert_eq!(examples.prior("tests/a.py"), role_prior("tests/a.py"));
        let scored = [("src/x.rs", 0.8, false, 0.0), ("examples/x.rs", 1.0, false, 0.0)];
        assert_eq!(rank_paths_named(scored, RolesAsked::NONE), ["src/x.rs", "examples/x.rs"]);
        assert_eq!(rank_paths_named(scored, examples), ["examples/x.rs", "src/x.rs"]);
    }

    #[test]
    fn whole_files_are_ranked_with_their_role_prior() {
        let scored = [("src/x.rs", 1.0, false), ("tests/x.rs", 1.0, true), ("src/y.rs", 0.5, true)];
        // The test file's 0.4 prior puts src/y.rs first in the whole-file list:
        // x 1/7, y 0.7/7, the test 0.7/8.
        assert_eq!(rank_paths(scored), ["src/x.rs", "src/y.rs", "tests/x.rs"]);
    }
}
