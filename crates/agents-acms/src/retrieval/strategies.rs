//! The six built-in strategies of the spec.
//!
//! | name | quality | backends | ranks by |
//! |---|---|---|---|
//! | `simple-keyword` | 0.3 | text | BM25 over node fields |
//! | `semantic-embedding` | 0.6 | vector | cosine between the query and node summaries |
//! | `breadth-depth-navigator` | 0.85 | graph (+ text for seeds) | decayed expansion from the focus |
//! | `arce` | 0.95 | text, vector, graph | 0.4 text + 0.4 vector + 0.2 personalised PageRank, refined over rounds; plus whole source files by BM25 over their text |
//! | `temporal-archaeology` | 0.5 | temporal, graph | commits whose messages match, then their files' neighbours |
//! | `plan-decision-context` | 0.7 | plans (warm/cold) | decisions of the plan's ancestors, nearest first |
//!
//! Every strategy returns candidates with scores in [0, 1], sorted by score then URI,
//! with the depth the request asks for at that distance from the focus.

use std::collections::{BTreeMap, HashMap, HashSet};

use agents_core::request::TemporalScope;
use agents_search::graph::{GraphBackend, GraphWalk};
use agents_search::{SearchFilter, code_tokens};

use super::store_graph::StoreGraph;
use super::{
    BackendKind, Backends, Candidate, ContextStrategy, PlanContext, RetrievalQuery, StrategyCapabilities,
    StrategyError, normalize, sort_candidates,
};

/// The built-in strategies, in the registry's order.
pub fn builtins() -> Vec<std::sync::Arc<dyn ContextStrategy>> {
    vec![
        std::sync::Arc::new(SimpleKeyword),
        std::sync::Arc::new(SemanticEmbedding),
        std::sync::Arc::new(BreadthDepthNavigator),
        std::sync::Arc::new(Arce),
        std::sync::Arc::new(TemporalArchaeology),
        std::sync::Arc::new(PlanDecisionContext),
    ]
}

/// Node kinds that are noise as results of their own unless asked for by kind.
fn is_minor_kind(kind: &str) -> bool {
    matches!(kind, "import" | "variable" | "field")
}

fn missing(strategy: &str, backends: &Backends<'_>, kind: BackendKind) -> StrategyError {
    StrategyError::MissingBackend {
        strategy: strategy.to_owned(),
        backend: kind,
        reason: backends.why_missing(kind).unwrap_or_default(),
    }
}

/// BM25 hits for `text` under `filter`, scores scaled so the best is 1.
fn text_scores(
    strategy: &str,
    text: &str,
    query: &RetrievalQuery<'_>,
    backends: &Backends<'_>,
    filter: &SearchFilter,
) -> Result<Vec<(String, String, f32)>, StrategyError> {
    Ok(scaled_to_best(text_hits(strategy, text, query, backends, filter)?))
}

/// The text backend's [`RetrievalQuery::pool`] best hits for `text` under `filter`.
fn text_hits(
    strategy: &str,
    text: &str,
    query: &RetrievalQuery<'_>,
    backends: &Backends<'_>,
    filter: &SearchFilter,
) -> Result<Vec<agents_search::TextHit>, StrategyError> {
    let backend = backends.text.ok_or_else(|| missing(strategy, backends, BackendKind::Text))?;
    Ok(backend.search(text, query.pool(), filter)?)
}

/// Hits as (id, path, score) with their scores scaled so the first (best) is 1.
fn scaled_to_best(hits: Vec<agents_search::TextHit>) -> Vec<(String, String, f32)> {
    let best = hits.first().map_or(1.0, |h| h.score.max(f32::MIN_POSITIVE));
    hits.into_iter().map(|h| (h.id, h.path, (h.score / best).clamp(0.0, 1.0))).collect()
}

/// Node kinds whose text is a whole file's: a module (a file an analyzer
/// parsed) and a file no analyzer parsed, of which [`is_whole_source_file`]
/// keeps the source. A Markdown document (`document`) is left out.
const WHOLE_FILE_KINDS: [&str; 2] = ["module", "file"];

/// Languages of source files no analyzer parses: single-file components,
/// whose files hold a project's code as much as its modules do.
const COMPONENT_LANGUAGES: [&str; 3] = ["astro", "svelte", "vue"];

/// Whether a whole file ranks in the whole-file list: a parsed source file
/// (its language has a structural analyzer other than Markdown's) or a
/// component ([`COMPONENT_LANGUAGES`]). Data, prose, templates, patches and
/// man pages are left out: in a tree with many of them (bat's syntax
/// assets, completions and manual) they took the list's head from the code
/// a change touches, while their own text still ranks as nodes. Measured on
/// the commit set: R@10 0.894 -> 0.898, MRR 0.710 -> 0.714 (bat 0.691 ->
/// 0.727; with every unparsed file kept, 0.895 and bat 0.691); questions
/// 0.702 -> 0.703 over all 430.
fn is_whole_source_file(path: &str, structured: &[&str]) -> bool {
    let language = agents_uko::language::detect_language(path, None);
    COMPONENT_LANGUAGES.contains(&language) || (language != "markdown" && structured.contains(&language))
}

/// BM25 hits for `text` among whole source files only ([`is_whole_source_file`]),
/// scores scaled so the best is 1; nothing when the request already restricts
/// kinds.
fn whole_file_scores(
    strategy: &str,
    text: &str,
    query: &RetrievalQuery<'_>,
    backends: &Backends<'_>,
) -> Result<Vec<(String, String, f32)>, StrategyError> {
    if !query.filter.kinds.is_empty() {
        return Ok(Vec::new());
    }
    let filter = SearchFilter {
        paths_prefix: query.filter.paths_prefix.clone(),
        kinds: WHOLE_FILE_KINDS.iter().map(|k| (*k).to_owned()).collect(),
        body_only: true,
    };
    let structured = agents_uko::lang::structured_languages();
    let mut hits = text_hits(strategy, text, query, backends, &filter)?;
    hits.retain(|h| is_whole_source_file(&h.path, &structured));
    Ok(scaled_to_best(hits))
}

/// Nearest node summaries to `text`, cosine scaled between the worst hit drawn (0) and the best (1).
fn vector_scores(
    strategy: &str,
    text: &str,
    query: &RetrievalQuery<'_>,
    backends: &Backends<'_>,
) -> Result<Vec<(String, String, f32)>, StrategyError> {
    let access = backends.vector.ok_or_else(|| missing(strategy, backends, BackendKind::Vector))?;
    let embedded = access.embedder.embed(&[text.to_owned()]);
    let Some(vector) = embedded.first() else { return Ok(Vec::new()) };
    let mut hits = access.backend.search(vector, query.pool(), &query.filter)?;
    // Orthogonal or opposite summaries are unrelated, not weakly related.
    hits.retain(|h| h.score > 0.0);
    // Cosines of a static model crowd together (the 200th hit often scores 80% of
    // the best): scale between the worst hit drawn and the best, so the list ranks
    // as sharply as BM25's does.
    let best = hits.first().map_or(1.0, |h| h.score);
    let floor = hits.last().map_or(0.0, |h| h.score).min(best);
    let range = (best - floor).max(f32::MIN_POSITIVE);
    Ok(hits.into_iter().map(|h| (h.id, h.path, ((h.score - floor) / range).clamp(0.0, 1.0))).collect())
}

fn candidates_from(strategy: &str, scored: Vec<(String, String, f32)>, query: &RetrievalQuery<'_>) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = scored
        .into_iter()
        .map(|(uri, path, score)| Candidate::new(uri, path, score, query.depth_for_score(score), strategy))
        .collect();
    sort_candidates(&mut out);
    out
}

/// The file node of `path`, if the path is indexed.
fn file_uri(backends: &Backends<'_>, path: &str) -> Result<Option<String>, StrategyError> {
    let nodes = backends.store.uko_file_nodes(backends.index_id, path)?;
    Ok(nodes.into_iter().find(|n| n.node.parent_uri.is_none()).map(|n| n.node.uri))
}

/// The request's focus as node URIs: URIs as given, paths as their file node,
/// anything else as the symbols of that name.
fn focus_nodes(query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> Result<Vec<String>, StrategyError> {
    let mut out = Vec::new();
    for focus in query.request.focus() {
        if focus.starts_with("uko://") {
            out.push(focus.clone());
        } else if let Some(uri) = file_uri(backends, focus.trim_start_matches("./"))? {
            out.push(uri);
        } else {
            let found = backends.store.uko_find(backends.index_id, focus)?;
            out.extend(found.into_iter().filter(|n| n.node.name == *focus).map(|n| n.node.uri).take(5));
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Looks up each candidate's node, drops what the filter excludes, marks minor
/// kinds (unless the filter asks for them) as evidence only, and fills in paths;
/// keeps at most `limit`.
fn keep_useful(
    backends: &Backends<'_>,
    filter: &SearchFilter,
    candidates: Vec<Candidate>,
    limit: usize,
) -> Result<Vec<Candidate>, StrategyError> {
    let mut out = Vec::new();
    for mut c in candidates {
        if out.len() >= limit {
            break;
        }
        let Some(node) = backends.store.uko_node(backends.index_id, &c.uri)? else { continue };
        let kind = &node.node.kind;
        let wanted = filter.kinds.is_empty() || filter.kinds.contains(kind);
        let in_paths = filter.paths_prefix.is_empty()
            || filter.paths_prefix.iter().any(|p| node.node.path.starts_with(p.as_str()));
        if wanted && in_paths {
            c.evidence_only = filter.kinds.is_empty() && is_minor_kind(kind);
            c.path = node.node.path;
            out.push(c);
        }
    }
    Ok(out)
}

fn walk(query: &RetrievalQuery<'_>, breadth: u32) -> GraphWalk {
    GraphWalk { breadth, decay: 0.6, max_nodes: (query.limit * 20).clamp(200, 2_000) }
}

/// `simple-keyword`: full-text BM25 over node names, signatures, docstrings and bodies.
pub struct SimpleKeyword;

impl ContextStrategy for SimpleKeyword {
    fn name(&self) -> &'static str {
        "simple-keyword"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities { uses_text: true, quality_score: 0.3, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        if backends.has(BackendKind::Text) && !code_tokens(&query.text()).is_empty() { 1.0 } else { 0.0 }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let scored = text_scores(self.name(), &query.text(), query, backends, &query.filter)?;
        keep_useful(backends, &query.filter, candidates_from(self.name(), scored, query), query.pool())
    }
}

/// `semantic-embedding`: the query's embedding against the node summaries'.
pub struct SemanticEmbedding;

impl ContextStrategy for SemanticEmbedding {
    fn name(&self) -> &'static str {
        "semantic-embedding"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities { uses_vector: true, quality_score: 0.6, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        if backends.has(BackendKind::Vector) && !query.text().is_empty() { 1.0 } else { 0.0 }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let scored = vector_scores(self.name(), &query.text(), query, backends)?;
        keep_useful(backends, &query.filter, candidates_from(self.name(), scored, query), query.pool())
    }
}

/// `breadth-depth-navigator`: expansion from the focus nodes (or, without a focus,
/// from the best text hits) by `breadth` hops, decaying per hop.
pub struct BreadthDepthNavigator;

/// Text hits used as seeds when a request names no focus.
const TEXT_SEEDS: usize = 5;

impl ContextStrategy for BreadthDepthNavigator {
    fn name(&self) -> &'static str {
        "breadth-depth-navigator"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities {
            uses_graph: true,
            quality_score: 0.85,
            supports_depth_breadth: true,
            ..StrategyCapabilities::default()
        }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        if !backends.has(BackendKind::Graph) {
            0.0
        } else if !query.request.focus().is_empty() {
            1.0
        } else if backends.has(BackendKind::Text) && !code_tokens(&query.text()).is_empty() {
            0.6
        } else {
            0.0
        }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        if !backends.has(BackendKind::Graph) {
            return Err(missing(self.name(), backends, BackendKind::Graph));
        }
        let focus = focus_nodes(query, backends)?;
        let seeds: Vec<(String, f32)> = if !focus.is_empty() {
            focus.into_iter().map(|uri| (uri, 1.0)).collect()
        } else if backends.has(BackendKind::Text) && !code_tokens(&query.text()).is_empty() {
            let hits = text_scores(self.name(), &query.text(), query, backends, &query.filter)?;
            hits.into_iter().take(TEXT_SEEDS).map(|(uri, _, score)| (uri, score)).collect()
        } else {
            return Err(StrategyError::NothingToDo {
                strategy: self.name().to_owned(),
                reason: "the request names no focus and has no query text".to_owned(),
            });
        };
        let store = StoreGraph { store: backends.store, index_id: backends.index_id };
        let breadth = query.request.breadth().min(query.max_hops);
        let graph = GraphBackend::gather(&store, &seeds, walk(query, breadth))?;
        let candidates = graph
            .expand()
            .into_iter()
            .map(|hit| Candidate {
                note: (hit.hops > 0).then(|| format!("{} hop(s) from the focus", hit.hops)),
                hops: Some(hit.hops),
                ..Candidate::new(hit.id, "", hit.score.clamp(0.0, 1.0), query.depth_at(hit.hops), self.name())
            })
            .collect();
        keep_useful(backends, &query.filter, candidates, query.pool())
    }
}

/// `arce`: text 40% + vector 40% + graph 20% (personalised PageRank seeded from the
/// fused hits), merged per node, the definitions the query writes as code held at
/// half the best ([`Arce::add_named`]); then up to `max_rounds` refinement rounds that
/// add the best hits' identifiers to the query and fold the new hits in at a quarter
/// weight; each node's score then weighs its file's role prior before the scores are
/// scaled to the best.
/// Beside the nodes, it ranks whole source files ([`is_whole_source_file`]) by BM25
/// over their body alone and returns them as [`Candidate::whole_file`] evidence:
/// a second file ranking that [`super::rank_paths`] fuses with the nodes' by
/// reciprocal rank.
pub struct Arce;

const ARCE_TEXT: f32 = 0.4;
const ARCE_VECTOR: f32 = 0.4;
const ARCE_GRAPH: f32 = 0.2;
/// Fused hits seeding the PageRank.
const ARCE_SEEDS: usize = 10;
/// Weight of hits found by a refined query.
const ARCE_REFINED: f32 = 0.25;
/// Share of the best fused score a definition the query writes as code is
/// held at ([`Arce::add_named`]). Measured over the 466 questions: 0.5 and 1
/// gave chunk NDCG@10 0.7425 and 0.7416 (0.7422 without); the commit set's
/// MRR 0.726 -> 0.728 at 0.5, docs/benchmarks.md.
const ARCE_NAMED: f32 = 0.5;
/// The most definitions one name written as code may bring in: a name more
/// of them bear (`init`, `new` in every class) does not tell which is meant.
const NAMED_MOST: usize = 5;

impl Arce {
    /// One round: text and vector hits for `text`, fused by weight.
    fn round(
        &self,
        text: &str,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
    ) -> Result<HashMap<String, (String, f32)>, StrategyError> {
        let mut fused: HashMap<String, (String, f32)> = HashMap::new();
        // The two searches are independent: each on its own core.
        let (text_hits, vector_hits) = rayon::join(
            || text_scores(self.name(), text, query, backends, &query.filter),
            || vector_scores(self.name(), text, query, backends),
        );
        for (weight, hits) in [(ARCE_TEXT, text_hits?), (ARCE_VECTOR, vector_hits?)] {
            for (uri, path, score) in hits {
                fused.entry(uri).or_insert((path, 0.0)).1 += weight * score;
            }
        }
        Ok(fused)
    }

    /// The definitions the query writes as code ([`super::QueryNames::writes_as_code`]:
    /// `requests.post`, `with_state`), looked up by name and held at
    /// [`ARCE_NAMED`] of the best fused score at least: a question that names
    /// where its path starts finds the start even when its other words
    /// describe the rest.
    fn add_named(
        &self,
        fused: &mut HashMap<String, (String, f32)>,
        text: &str,
        backends: &Backends<'_>,
    ) -> Result<(), StrategyError> {
        let names = super::QueryNames::new(text);
        let best = fused.values().map(|v| v.1).fold(0.0_f32, f32::max);
        for name in names.code_names() {
            let found = backends.store.uko_find(backends.index_id, &name)?;
            let named: Vec<_> = found
                .into_iter()
                .filter(|n| n.node.name == name && !is_minor_kind(&n.node.kind) && names.writes_as_code(&n.node.uri))
                .collect();
            if named.len() > NAMED_MOST {
                continue;
            }
            for n in named {
                let entry = fused.entry(n.node.uri.clone()).or_insert((n.node.path.clone(), 0.0));
                entry.1 = entry.1.max(ARCE_NAMED * best);
            }
        }
        Ok(())
    }

    /// Up to `max_rounds - 1` refinement rounds: the best hits' identifiers join the
    /// query, and the new hits are folded in at [`ARCE_REFINED`].
    fn refine(
        &self,
        text: &mut String,
        fused: &mut HashMap<String, (String, f32)>,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
    ) -> Result<(), StrategyError> {
        let mut words: HashSet<String> = code_tokens(text).into_iter().collect();
        for _ in 1..query.arce_max_rounds.max(1) {
            // Out of time: the first round's results stand.
            if query.should_stop() {
                break;
            }
            let mut added = Vec::new();
            for (uri, _) in best_of(fused, 3) {
                let name = uri.rsplit(['#', '.', '/']).next().unwrap_or_default();
                for word in code_tokens(name) {
                    if word.len() > 2 && words.insert(word.clone()) {
                        added.push(word);
                    }
                }
            }
            if added.is_empty() {
                break;
            }
            *text = format!("{text} {}", added.join(" "));
            for (uri, (path, score)) in self.round(text, query, backends)? {
                let entry = fused.entry(uri).or_insert((path, 0.0));
                entry.1 = entry.1.max(ARCE_REFINED * score);
            }
        }
        Ok(())
    }
}

/// A fused entry's path: its own, or its URI's when it came without one (a
/// node the graph walk reached).
fn path_of<'a>(uri: &'a str, path: &'a str) -> &'a str {
    if path.is_empty() { agents_pack::uri_path(uri) } else { path }
}

/// The best entries of a fused map, sorted by score then URI.
fn best_of(fused: &HashMap<String, (String, f32)>, n: usize) -> Vec<(String, f32)> {
    let mut all: Vec<(String, f32)> = fused.iter().map(|(uri, (_, s))| (uri.clone(), *s)).collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    all.truncate(n);
    all
}

impl ContextStrategy for Arce {
    fn name(&self) -> &'static str {
        "arce"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities {
            uses_text: true,
            uses_vector: true,
            uses_graph: true,
            quality_score: 0.95,
            supports_depth_breadth: true,
            ..StrategyCapabilities::default()
        }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        let ready = [BackendKind::Text, BackendKind::Vector, BackendKind::Graph].iter().all(|k| backends.has(*k));
        if ready && !code_tokens(&query.text()).is_empty() { 1.0 } else { 0.0 }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        for kind in [BackendKind::Text, BackendKind::Vector, BackendKind::Graph] {
            if !backends.has(kind) {
                return Err(missing(self.name(), backends, kind));
            }
        }
        let started = std::time::Instant::now();
        let mut text = query.text();
        // Whole files ranked as one document each: a change often touches the file
        // whose text mentions most of the description's words, scattered over
        // functions none of which matches well alone. A second file ranking beside
        // the nodes', fused with it by reciprocal rank when files are ranked.
        let (whole_files, first) = rayon::join(
            || whole_file_scores(self.name(), &text, query, backends),
            || self.round(&text, query, backends),
        );
        let (mut whole_files, mut fused) = (whole_files?, first?);
        self.add_named(&mut fused, &text, backends)?;
        let first_round = started.elapsed();
        // Graph: personalised PageRank from the first round's best hits (refined
        // hits weigh a quarter, so they seldom change the seeds), its walk on one
        // core while the refinement rounds search on the other.
        let mut seeds = best_of(&fused, ARCE_SEEDS);
        normalize(&mut seeds);
        let store = StoreGraph { store: backends.store, index_id: backends.index_id };
        let (graph, refined) = rayon::join(
            || GraphBackend::gather(&store, &seeds, walk(query, query.request.breadth().min(2))),
            || self.refine(&mut text, &mut fused, query, backends),
        );
        refined?;
        let graph = graph?;
        let rounds = started.elapsed();
        let mut hops = BTreeMap::new();
        for hit in graph.personalized_pagerank(0.85, 30) {
            hops.insert(hit.id.clone(), hit.hops);
            fused.entry(hit.id).or_insert((String::new(), 0.0)).1 += ARCE_GRAPH * hit.score;
        }
        tracing::debug!(
            first_round_ms = first_round.as_secs_f64() * 1e3,
            rounds_ms = rounds.as_secs_f64() * 1e3,
            graph_ms = (started.elapsed() - rounds).as_secs_f64() * 1e3,
            "arce"
        );
        // Tests, documents, examples and generated files weigh their role's
        // prior before the scores are scaled to the best, as they do when
        // files are ranked: a tree that vendors a test framework (cJSON's
        // Unity) no longer fills the candidates a budget allows with it, and
        // the source it should have drawn gets in. Measured over the 466
        // questions: chunk NDCG@10 0.7425 -> 0.7453, relevant lines at 8,000
        // tokens 0.831 -> 0.845; commit set R@10 0.898 -> 0.902
        // (docs/benchmarks.md).
        let asked = query.text();
        let roles = super::RolesAsked::of(&asked);
        // An older copy of the code the tree holds too (pydantic's `v1/`)
        // weighs [`super::LEGACY_PRIOR`] the same way.
        let legacy = super::LegacyCopies::of(
            fused.iter().map(|(uri, (path, _))| path_of(uri, path)).chain(whole_files.iter().map(|h| h.1.as_str())),
            &asked,
        );
        for (uri, (path, score)) in fused.iter_mut() {
            let path = path_of(uri, path);
            *score *= roles.prior(path) * legacy.prior(path);
        }
        for (_, path, score) in &mut whole_files {
            *score *= legacy.prior(path);
        }
        let best = fused.values().map(|v| v.1).fold(f32::MIN_POSITIVE, f32::max);
        let mut candidates: Vec<Candidate> = fused
            .into_iter()
            .map(|(uri, (path, score))| {
                let score = (score / best).clamp(0.0, 1.0);
                let hop = hops.get(&uri).copied().filter(|h| *h != u32::MAX);
                let depth = query.depth_for_score(score).min(query.depth_at(hop.unwrap_or(0)));
                Candidate { hops: hop, ..Candidate::new(uri, path, score, depth, self.name()) }
            })
            .collect();
        sort_candidates(&mut candidates);
        let mut candidates = keep_useful(backends, &query.filter, candidates, query.pool())?;
        candidates.extend(candidates_from(self.name(), whole_files, query).into_iter().map(|c| Candidate {
            depth: c.depth.min(4),
            evidence_only: true,
            whole_file: true,
            ..c
        }));
        Ok(candidates)
    }
}

/// `temporal-archaeology`: phase one scores the commits whose messages match the query
/// (BM25 over messages, newer commits weigh more) and ranks the files they touched,
/// noting the earlier node revisions the index kept for each (validFrom/validUntil);
/// phase two follows the graph one hop out of the best files.
pub struct TemporalArchaeology;

/// Commits read for `temporal: recent` (and by default) and for `temporal: all`.
const RECENT_COMMITS: usize = 300;
const ALL_COMMITS: usize = 5_000;
/// Files that seed phase two.
const TEMPORAL_SEEDS: usize = 5;

impl ContextStrategy for TemporalArchaeology {
    fn name(&self) -> &'static str {
        "temporal-archaeology"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities {
            uses_graph: true,
            uses_temporal: true,
            quality_score: 0.5,
            ..StrategyCapabilities::default()
        }
    }

    fn can_handle(&self, query: &RetrievalQuery<'_>, backends: &Backends<'_>) -> f64 {
        if !backends.has(BackendKind::Temporal) || code_tokens(&query.text()).is_empty() {
            0.0
        } else if query.request.temporal() == TemporalScope::Current {
            0.3
        } else {
            1.0
        }
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        backends: &Backends<'_>,
        _plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let history = backends.history.ok_or_else(|| missing(self.name(), backends, BackendKind::Temporal))?;
        let limit = if query.request.temporal() == TemporalScope::All { ALL_COMMITS } else { RECENT_COMMITS };
        let commits = history.commits(limit)?;
        let indexed: HashSet<String> =
            backends.store.file_records(backends.index_id)?.into_iter().map(|f| f.path).collect();
        let words: Vec<String> = {
            let mut w = code_tokens(&query.text());
            w.sort();
            w.dedup();
            w
        };
        let docs: Vec<Vec<String>> = commits.iter().map(|c| code_tokens(&c.message)).collect();
        let scores = bm25(&words, &docs);
        let mut files: HashMap<String, (f32, Vec<usize>)> = HashMap::new();
        for (i, (commit, score)) in commits.iter().zip(&scores).enumerate() {
            if *score <= 0.0 {
                continue;
            }
            let recency = 1.0 / (1.0 + i as f32 / 100.0);
            let spread = (commit.paths.len() as f32).sqrt();
            for path in commit.paths.iter().filter(|p| indexed.contains(*p)) {
                let entry = files.entry(path.clone()).or_insert((0.0, Vec::new()));
                entry.0 += score * recency / spread;
                entry.1.push(i);
            }
        }
        let mut ranked: Vec<(String, f32, Vec<usize>)> = files.into_iter().map(|(p, (s, c))| (p, s, c)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked.truncate(query.pool());
        let best = ranked.first().map_or(1.0, |r| r.1.max(f32::MIN_POSITIVE));
        let mut candidates = Vec::new();
        for (path, score, touched) in &ranked {
            if !query.filter.paths_prefix.is_empty() && !query.filter.paths_prefix.iter().any(|p| path.starts_with(p)) {
                continue;
            }
            let Some(uri) = file_uri(backends, path)? else { continue };
            let shown: Vec<String> = touched
                .iter()
                .take(3)
                .map(|&i| format!("{} {}", &commits[i].id[..7.min(commits[i].id.len())], subject(&commits[i].message)))
                .collect();
            let score = (score / best).clamp(0.0, 1.0);
            // The cold side: the node revisions the index kept for this file.
            let revisions = backends.store.uko_revisions(backends.index_id, &uri)?;
            let history = match revisions.iter().filter(|r| !r.is_current).count() {
                0 => String::new(),
                n => format!(
                    "; {n} earlier indexed revision(s) since {}",
                    revisions.last().map_or("", |r| r.valid_from.as_str())
                ),
            };
            candidates.push(Candidate {
                note: Some(format!("changed in {} matching commit(s): {}{history}", touched.len(), shown.join("; "))),
                ..Candidate::new(uri, path.clone(), score, query.depth_for_score(score), self.name())
            });
        }
        // Phase two: neighbours of the best files, at a discount.
        if backends.has(BackendKind::Graph) && !candidates.is_empty() {
            let seeds: Vec<(String, f32)> =
                candidates.iter().take(TEMPORAL_SEEDS).map(|c| (c.uri.clone(), c.score)).collect();
            let store = StoreGraph { store: backends.store, index_id: backends.index_id };
            let graph = GraphBackend::gather(&store, &seeds, walk(query, 1))?;
            let known: HashSet<String> = candidates.iter().map(|c| c.uri.clone()).collect();
            let extra: Vec<Candidate> = graph
                .expand()
                .into_iter()
                .filter(|hit| hit.hops > 0 && !known.contains(&hit.id))
                .map(|hit| Candidate {
                    note: Some("next to a file the matching commits changed".to_owned()),
                    hops: Some(hit.hops),
                    ..Candidate::new(hit.id, "", 0.5 * hit.score.clamp(0.0, 1.0), query.depth_at(hit.hops), self.name())
                })
                .collect();
            candidates.extend(keep_useful(backends, &query.filter, extra, query.pool())?);
        }
        sort_candidates(&mut candidates);
        candidates.truncate(query.pool());
        Ok(candidates)
    }
}

fn subject(message: &str) -> &str {
    message.lines().next().unwrap_or_default().trim()
}

/// BM25 (k1 1.2, b 0.75) of `query` words against each tokenized document.
fn bm25(query: &[String], docs: &[Vec<String>]) -> Vec<f32> {
    let n = docs.len() as f32;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f32 / n.max(1.0);
    let mut df: HashMap<&str, f32> = HashMap::new();
    for doc in docs {
        let unique: HashSet<&str> = doc.iter().map(String::as_str).collect();
        for word in query {
            if unique.contains(word.as_str()) {
                *df.entry(word).or_insert(0.0) += 1.0;
            }
        }
    }
    docs.iter()
        .map(|doc| {
            query
                .iter()
                .map(|word| {
                    let tf = doc.iter().filter(|w| *w == word).count() as f32;
                    let d = df.get(word.as_str()).copied().unwrap_or(0.0);
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let idf = ((n - d + 0.5) / (d + 0.5) + 1.0).ln();
                    idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * doc.len() as f32 / avg.max(1.0)))
                })
                .sum()
        })
        .collect()
}

/// `plan-decision-context`: the decisions recorded on the plan's ancestors (nearest
/// first), from the warm and cold tiers.
pub struct PlanDecisionContext;

impl ContextStrategy for PlanDecisionContext {
    fn name(&self) -> &'static str {
        "plan-decision-context"
    }

    fn capabilities(&self) -> StrategyCapabilities {
        StrategyCapabilities { quality_score: 0.7, supports_plan_hierarchy: true, ..StrategyCapabilities::default() }
    }

    fn can_handle(&self, _query: &RetrievalQuery<'_>, _backends: &Backends<'_>) -> f64 {
        // Without a plan there is nothing to walk; the registry asks with the plan.
        0.0
    }

    fn retrieve(
        &self,
        query: &RetrievalQuery<'_>,
        _backends: &Backends<'_>,
        plan: Option<&PlanContext>,
    ) -> Result<Vec<Candidate>, StrategyError> {
        let plan = plan.ok_or_else(|| StrategyError::NothingToDo {
            strategy: self.name().to_owned(),
            reason: "the request is for no plan (give --plan)".to_owned(),
        })?;
        let words: HashSet<String> = code_tokens(&query.text()).into_iter().collect();
        let mut candidates = Vec::new();
        for (distance, ancestor) in plan.ancestors.iter().enumerate() {
            let base = 1.0 / (1.0 + distance as f32 * 0.25);
            for decision in ancestor.decisions.iter().filter(|d| d.tier != "hot") {
                let text = format!("{}\n{}", decision.title, decision.body);
                let overlap = code_tokens(&text).iter().filter(|w| words.contains(*w)).count() as f32;
                let score = (base * (0.8 + 0.2 * (overlap / words.len().max(1) as f32))).clamp(0.0, 1.0);
                let uri = format!("plan://{}/decision/{}", ancestor.plan_id, decision.decision_id);
                candidates.push(Candidate {
                    note: Some(format!("decision on plan {:?} ({} tier)", ancestor.title, decision.tier)),
                    content: Some(format!("Decision: {}\n{}\n", decision.title, decision.body.trim_end())),
                    ..Candidate::new(uri, "", score, query.depth, self.name())
                });
            }
        }
        sort_candidates(&mut candidates);
        Ok(candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::bm25;
    use super::*;
    use agents_core::request::ContextRequest;
    use agents_core::tokens::{Encoding, Tokenizer};
    use agents_search::{TextBackendKind, TextDoc};
    use agents_store::SqliteStore;

    #[test]
    fn whole_files_ranked_by_their_text_are_source_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = agents_search::open_text_backend(TextBackendKind::Tantivy, dir.path()).unwrap();
        let doc = |path: &str, kind: &str, body: &str| TextDoc {
            id: format!("uko://r/{path}"),
            path: path.into(),
            kind: kind.into(),
            body: body.into(),
            ..TextDoc::default()
        };
        text.insert(&[
            doc("src/retry.py", "module", "def retry(request): pause before the next attempt"),
            doc("README.md", "document", "retry the request: retry, pause, retry again"),
            doc("assets/retry.txt.in", "file", "retry request pause retry request pause"),
            doc("data/retry.json", "file", "{\"retry\": \"request\", \"pause\": \"retry request\"}"),
            doc("src/Retry.vue", "file", "<script>retry(request); pause()</script>"),
            doc("src/retry.py#retry", "function", "retry the request after a pause"),
        ])
        .unwrap();
        text.commit().unwrap();
        let store = std::sync::Arc::new(SqliteStore::open_in_memory().unwrap());
        let search = crate::query::ContextSearch::new(store.clone());
        let tokenizer = Tokenizer::new(Encoding::O200kBase);
        let backends = Backends {
            root: dir.path(),
            index_id: "index",
            store: store.as_ref(),
            search: &search,
            tokenizer: &tokenizer,
            text: Some(text.as_ref()),
            vector: None,
            history: None,
            missing: Default::default(),
            owned: None,
        };
        let request = ContextRequest::builder().query("retry the request after a pause").build().unwrap();
        let query = RetrievalQuery::for_tests(&request);
        let files = whole_file_scores("arce", "retry the request after a pause", &query, &backends).unwrap();
        let paths: Vec<&str> = files.iter().map(|(_, path, _)| path.as_str()).collect();
        // The document, the template and the data mention the words more
        // often: none ranks as a whole file, nor does the function; a
        // component no analyzer parses does.
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, ["src/Retry.vue", "src/retry.py"], "{files:?}");
        assert_eq!(files[0].2, 1.0);
    }

    #[test]
    fn bm25_prefers_documents_with_rarer_matching_words() {
        let docs: Vec<Vec<String>> =
            ["fix header parsing in the client", "update docs", "fix the build", "refactor header handling"]
                .iter()
                .map(|s| agents_search::code_tokens(s))
                .collect();
        let scores = bm25(&["header".into(), "parsing".into()], &docs);
        assert!(scores[0] > scores[3] && scores[3] > 0.0);
        assert_eq!(scores[1], 0.0);
    }
}
