//! Vector search: sentence embeddings of UKO nodes and nearest-neighbour lookup.
//!
//! Two halves, kept apart so either can be swapped:
//!
//! - an [`Embedder`] turns text into unit vectors. [`StaticEmbedder`] runs a static
//!   (model2vec-format) model distilled from all-MiniLM-L6-v2, read from local files
//!   only (`scripts/get-model.sh` makes it); nothing is downloaded at run time;
//! - a [`VectorBackend`] stores vectors keyed by node id and finds the nearest ones.
//!   [`LocalVectorIndex`] keeps them on disk beside the text index. The trait speaks
//!   only ids, paths, kinds and vectors, so a remote engine (Qdrant, pgvector) fits it
//!   without changing callers.
//!
//! # The local index
//! Vectors are unit length and stored as `i8` with one `f32` scale per row (a quarter of
//! `f32`'s size; cosine error below 1%). Below [`VectorOptions::ann_threshold`] rows a
//! search is exact: every row is scored. From the threshold up, a search asks an HNSW
//! graph (usearch) for four times the hits wanted and re-scores them exactly from the
//! stored rows, so the scores are the same whichever path found a row. The graph is kept in step on commit:
//! rows removed and added since it was saved are applied to it; it is rebuilt only when
//! it is missing or was written for another state of the rows.
//!
//! Files in the index directory, each replaced atomically on commit:
//! `vectors.bin`, the base (rows, ids, paths, kinds: each path and kind once, each id as
//! what it does not share with the one before; the model id and a generation number);
//! `vectors.delta`, what changed since the base was written (the base's generation, the
//! keys of its rows removed since, and the rows added since, laid out as in the base);
//! and `hnsw.usearch` + `hnsw.generation` (the graph, and the generation it matches).
//! Opening keeps the base's ids in the mapped file, decoded on demand (see `BaseIds`),
//! so a refresh of a few files does not copy hundreds of thousands of ids.
//! A commit writes the delta alone, so its cost follows the change, not the index;
//! once the delta's rows and removed keys pass [`MAX_DELTA_PERCENT`] of the base, the
//! commit writes a new base instead (and removes the delta). A delta written for another
//! base (a commit killed between the two) is ignored.
//!
//! Hits are ordered by score descending, then id ascending; equal inputs give equal
//! outputs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

/// Rows an exact scan scores side by side ([`LocalVectorIndex::score_rows`]).
const SCAN_BLOCK: usize = 8;
/// Rows an exact scan reads before it lets go of their pages ([`LocalVectorIndex::search_exact`]).
const SCAN_CHUNK: usize = 16_384;
/// Where `Iterator::sum` of `f32`s starts: negative zero, so that a sum of
/// nothing but negative zeros stays negative, as `score_row`'s does.
const SUM_START: f32 = -0.0;

use crate::{SearchError, SearchFilter};

/// Turns text into unit-length vectors.
pub trait Embedder: Send + Sync {
    /// Identifies the model's weights; vectors of different models never mix.
    fn model_id(&self) -> &str;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// One unit vector per text, in order.
    fn embed(&self, texts: &[String]) -> Vec<Vec<f32>>;
}

/// Longest text embedded, in model tokens; longer texts are cut.
const MAX_EMBED_TOKENS: usize = 256;

/// A static embedding model (model2vec format): the one bundled into the binary
/// ([`StaticEmbedder::bundled`]), or one loaded from a local directory holding
/// `config.json`, `tokenizer.json` and `model.safetensors`.
pub struct StaticEmbedder {
    model: model2vec_rs::model::StaticModel,
    id: String,
}

/// Name of the bundled model (and of the folder `scripts/get-model.sh` writes).
pub const BUNDLED_MODEL: &str = "minilm-code-static";

/// The bundled model's files, made by `scripts/get-model.sh` (recipe
/// `minilm-code-static/2`); CI checks that the recipe still makes these bytes.
mod bundled {
    pub const TOKENIZER: &[u8] = include_bytes!("../model/minilm-code-static/tokenizer.json");
    pub const WEIGHTS: &[u8] = include_bytes!("../model/minilm-code-static/model.safetensors");
    pub const CONFIG: &[u8] = include_bytes!("../model/minilm-code-static/config.json");
    pub const METADATA: &str = include_str!("../model/minilm-code-static/metadata.json");
}

impl StaticEmbedder {
    /// Loads the model in `dir`; a missing or unreadable file is an error naming it.
    pub fn load(dir: &Path) -> Result<StaticEmbedder, SearchError> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|source| SearchError::ModelFile { path, source })
        };
        let (tokenizer, weights, config) = (read("tokenizer.json")?, read("model.safetensors")?, read("config.json")?);
        let name = dir.file_name().map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned());
        StaticEmbedder::from_parts(&name, &tokenizer, &weights, &config, dir)
    }

    /// The model shipped inside the binary: nothing to download or install.
    pub fn bundled() -> Result<StaticEmbedder, SearchError> {
        let dir = Path::new("<bundled>").join(BUNDLED_MODEL);
        let model = StaticEmbedder::model(bundled::TOKENIZER, bundled::WEIGHTS, bundled::CONFIG, &dir)?;
        Ok(StaticEmbedder { id: StaticEmbedder::bundled_id(), model })
    }

    /// The [`Embedder::model_id`] of [`StaticEmbedder::bundled`], without
    /// loading the model (tens of milliseconds): what a refresh that changed
    /// nothing compares with the vector file's header.
    pub fn bundled_id() -> String {
        // The weights' SHA-256 is in the metadata (a test checks it against
        // the bytes): no need to hash 8 MB on every start.
        let digest = serde_json::from_str::<serde_json::Value>(bundled::METADATA)
            .ok()
            .and_then(|m| m["files"]["model.safetensors"].as_str().and_then(|h| h.get(..16)).map(str::to_owned));
        let digest = digest.unwrap_or_else(|| weights_digest(bundled::WEIGHTS));
        format!("{BUNDLED_MODEL}@{digest}")
    }

    fn from_parts(
        name: &str,
        tokenizer: &[u8],
        weights: &[u8],
        config: &[u8],
        dir: &Path,
    ) -> Result<StaticEmbedder, SearchError> {
        let model = StaticEmbedder::model(tokenizer, weights, config, dir)?;
        Ok(StaticEmbedder { id: format!("{name}@{}", weights_digest(weights)), model })
    }

    fn model(
        tokenizer: &[u8],
        weights: &[u8],
        config: &[u8],
        dir: &Path,
    ) -> Result<model2vec_rs::model::StaticModel, SearchError> {
        model2vec_rs::model::StaticModel::from_bytes(tokenizer, weights, config, Some(true))
            .map_err(|error| SearchError::Model { dir: dir.to_owned(), message: format!("{error:#}") })
    }
}

/// The first 16 hex digits of the weights' SHA-256: the model's version in its id.
fn weights_digest(weights: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(weights).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
        let dim = self.model.dim();
        let flat = self.model.encode_flat_with_args(texts, Some(MAX_EMBED_TOKENS));
        flat.chunks(dim).map(<[f32]>::to_vec).collect()
    }
}

/// One stored vector.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorDoc {
    /// The node URI; unique in an index.
    pub id: String,
    pub path: String,
    pub kind: String,
    /// Unit length, [`VectorBackend::dim`] long.
    pub vector: Vec<f32>,
}

/// One nearest neighbour.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorHit {
    pub id: String,
    pub path: String,
    /// Cosine similarity in [-1, 1], greater is nearer.
    pub score: f32,
}

/// A store of vectors with nearest-neighbour search; the contract matches
/// [`crate::TextBackend`]'s: writes are visible and durable after `commit`.
pub trait VectorBackend: Send + Sync {
    /// The name that selects this backend (`"local"`).
    fn name(&self) -> &'static str;
    /// Length of the stored vectors.
    fn dim(&self) -> usize;
    /// Adds the vectors, replacing any stored one with the same id.
    fn upsert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError>;
    /// Adds vectors the caller knows are not stored (ids new to the index and
    /// unique among them): [`VectorBackend::upsert`] without looking for what
    /// each replaces (for the local index, a scan of every row per call).
    fn insert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError> {
        self.upsert(docs)
    }
    /// Removes every vector whose path is one of `paths`.
    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError>;
    /// Makes the changes since the last commit durable and visible.
    fn commit(&mut self) -> Result<(), SearchError>;
    /// The `limit` stored vectors nearest `query`, by score descending then id ascending.
    fn search(&self, query: &[f32], limit: usize, filter: &SearchFilter) -> Result<Vec<VectorHit>, SearchError>;
    /// Number of committed vectors.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Knobs of [`LocalVectorIndex`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VectorOptions {
    /// From this many rows up, searches go through the HNSW graph.
    pub ann_threshold: usize,
    /// HNSW links per node.
    pub connectivity: usize,
    /// HNSW candidate list while building.
    pub expansion_add: usize,
    /// HNSW candidate list while searching (at least the number of hits asked for).
    pub expansion_search: usize,
}

impl Default for VectorOptions {
    fn default() -> VectorOptions {
        VectorOptions { ann_threshold: 1_000_000, connectivity: 16, expansion_add: 64, expansion_search: 128 }
    }
}

/// The base file's format: 03 is laid out as 02 and may have a delta file
/// beside it (a new magic, so that a build that knows no delta fails on it and
/// rebuilds, instead of missing the delta's rows); 02 stores each path and kind
/// once and each id as the bytes it does not share with the id before (ids of
/// one file's nodes share most of theirs); 01 stored three strings a row. 01
/// and 02 are still read, and rewritten as 03 on the next commit.
const MAGIC: &[u8; 8] = b"AGVEC03\n";
const MAGIC_V2: &[u8; 8] = b"AGVEC02\n";
const MAGIC_V1: &[u8; 8] = b"AGVEC01\n";
/// The delta file's format.
const MAGIC_DELTA: &[u8; 8] = b"AGVECD3\n";
const ROWS_FILE: &str = "vectors.bin";
const DELTA_FILE: &str = "vectors.delta";
/// A commit writes a new base once the delta (its rows plus the base rows it
/// removes) would pass this share of the base's rows, in percent.
pub const MAX_DELTA_PERCENT: usize = 10;
const GRAPH_FILE: &str = "hnsw.usearch";
const GRAPH_GENERATION_FILE: &str = "hnsw.generation";
/// The files of an index directory; a commit replaces each one it changes.
pub const FILES: [&str; 4] = [ROWS_FILE, DELTA_FILE, GRAPH_FILE, GRAPH_GENERATION_FILE];
/// What a commit writes before renaming it over one of [`FILES`] (the graph;
/// `vectors.tmp` and `hnsw.tmp` are what earlier versions wrote for the rows
/// and the generation, now written by [`agents_fs::atomic_write`]).
const TEMPORARY_FILES: [&str; 3] = ["vectors.tmp", "hnsw.usearch.tmp", "hnsw.tmp"];

#[derive(Clone, Copy, Debug)]
struct Entry {
    key: u64,
    /// Where the entry's row lies in [`Rows`] and its scale in `scales`.
    slot: usize,
    /// The id in [`Names`]; unused (empty) for a row of the base file, whose
    /// id is decoded from the file when asked for ([`BaseIds`]).
    id: IdSpan,
    /// [`id_hash`] of the id: what [`VectorBackend::upsert`] compares before
    /// it decodes an id.
    id_hash: u64,
    path: Span,
    kind: Span,
}

/// Where an entry's id lies in [`Names`]: whole, or, for an id made of the
/// index's id prefix, the entry's path and a rest (a node URI:
/// `uko://<resource>/` + path + `#symbol`), the rest alone. A first sync
/// adds hundreds of thousands of rows before it writes them; their whole
/// ids were about 30 MB of its peak.
#[derive(Clone, Copy, Debug)]
enum IdSpan {
    Whole(Span),
    AfterPath(Span),
}

/// Base rows per group of [`BaseIds`]: decoding one id reads at most this
/// many records of the file.
const ID_GROUP: usize = 16;

/// The ids of the base file's rows, decoded on demand. Each id is stored as
/// what it does not share with the one before, so an id needs the ids
/// before it: opening keeps the whole id of every [`ID_GROUP`]th row and
/// where its record starts, and an id is decoded from its group's first.
/// Opening an index of hundreds of thousands of rows then copies no id
/// (which took a refresh of ten files about a tenth of a second), and a
/// small edit decodes only the ids it looks at.
#[derive(Default)]
struct BaseIds {
    /// Per group: the offset in the file of its first row's record, and that
    /// row's id in `text`.
    groups: Vec<(usize, Span)>,
    text: String,
}

/// An id decoded from the base file, and where the next row's record starts:
/// what lets [`encode`] read the ids in order without starting each from its
/// group.
#[derive(Default)]
struct IdCursor {
    /// The slot whose id `id` holds.
    slot: Option<usize>,
    next_record: usize,
    id: String,
}

/// The hash [`Entry::id_hash`] holds (in memory only: it is never written).
fn id_hash(id: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(id.as_bytes());
    hasher.finish()
}

/// Where one string lies in [`Names`].
#[derive(Clone, Copy, Debug)]
struct Span {
    start: usize,
    len: u32,
}

/// Every entry's strings in one buffer: opening an index of hundreds of
/// thousands of rows copies one block instead of allocating three strings a
/// row (which took a warm query about a hundred milliseconds). Strings of
/// removed rows stay until the process ends; the file holds only live ones.
#[derive(Default)]
struct Names {
    text: String,
    /// Spans of the paths and kinds pushed with [`Names::intern`]: every node
    /// of a file shares one copy of its path.
    interned: rustc_hash::FxHashMap<Box<str>, Span>,
}

impl Names {
    fn push(&mut self, s: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(s);
        Span { start, len: s.len() as u32 }
    }

    /// [`Names::push`] for a string that repeats (a path, a kind): stored once.
    fn intern(&mut self, s: &str) -> Span {
        if let Some(span) = self.interned.get(s) {
            return *span;
        }
        let span = self.push(s);
        self.interned.insert(Box::from(s), span);
        span
    }

    fn get(&self, span: Span) -> &str {
        &self.text[span.start..span.start + span.len as usize]
    }
}

/// Vectors in a directory, searched exactly or through HNSW; see the module docs.
pub struct LocalVectorIndex {
    dir: PathBuf,
    options: VectorOptions,
    model_id: String,
    dim: usize,
    entries: Vec<Entry>,
    names: Names,
    /// What the ids of added rows start with before their path (learnt from
    /// the first one that has its path after a `/`; see [`IdSpan`]).
    id_prefix: Option<Box<str>>,
    /// `dim` quantized components (i8 stored as bytes) per slot.
    rows: Rows,
    /// The ids of the slots the base file's map holds ([`Rows::base`]);
    /// `None` when those ids are in `names` (a file of the first format).
    base_ids: Option<BaseIds>,
    /// One per slot of `rows`.
    scales: Vec<f32>,
    next_key: u64,
    generation: u64,
    /// The base file's generation and first key not in it: rows with keys from
    /// it on are the delta's.
    base_generation: u64,
    base_next_key: u64,
    /// Rows the base file holds.
    base_len: usize,
    /// Keys of the base's rows removed since it was written.
    tombstones: Vec<u64>,
    /// Whether the next commit writes a whole new base (no base yet, one of an
    /// older format or another model).
    rewrite: bool,
    /// Keys removed and the first key added since the last commit, for the graph.
    removed_keys: Vec<u64>,
    first_new_key: u64,
    dirty: bool,
    graph: Option<usearch::Index>,
}

impl LocalVectorIndex {
    /// Opens the index in `dir` (creating it if missing) for vectors of `model_id`.
    /// Stored vectors of another model or length are dropped: they cannot be compared.
    pub fn open(
        dir: &Path,
        model_id: &str,
        dim: usize,
        options: VectorOptions,
    ) -> Result<LocalVectorIndex, SearchError> {
        std::fs::create_dir_all(dir).map_err(|source| SearchError::CreateDir { dir: dir.to_owned(), source })?;
        let mut index = LocalVectorIndex {
            dir: dir.to_owned(),
            options,
            model_id: model_id.to_owned(),
            dim,
            entries: Vec::new(),
            names: Names::default(),
            id_prefix: None,
            rows: Rows::default(),
            base_ids: None,
            scales: Vec::new(),
            next_key: 0,
            generation: 0,
            base_generation: 0,
            base_next_key: 0,
            base_len: 0,
            tombstones: Vec::new(),
            rewrite: true,
            removed_keys: Vec::new(),
            first_new_key: 0,
            dirty: false,
            graph: None,
        };
        let path = dir.join(ROWS_FILE);
        match map_file(&path) {
            Ok(map) => {
                let stored = decode(&map).map_err(|source| SearchError::Corrupt { path: path.clone(), source })?;
                index.next_key = stored.next_key;
                index.generation = stored.generation;
                if stored.model_id == model_id && stored.dim == dim {
                    index.base_len = stored.entries.len();
                    index.base_generation = stored.generation;
                    index.base_next_key = stored.next_key;
                    index.rewrite = !stored.current;
                    index.hold_base(map, stored);
                    index.apply_delta()?;
                } else {
                    // Another model: start over; commit rewrites the file.
                    index.dirty = true;
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(SearchError::Io { path, action: "read", source }),
        }
        index.first_new_key = index.next_key;
        index.graph = index.open_graph()?;
        Ok(index)
    }

    /// [`LocalVectorIndex::open`], repairing what cannot be read instead of failing
    /// (call it holding whatever keeps other writers of `dir` out):
    /// a damaged or foreign `hnsw.usearch` is rebuilt from the rows, and a damaged
    /// `vectors.bin` makes the index start empty (the caller refills it from its
    /// source: everything here is derived). The error that caused a repair comes
    /// back with the index, so the caller can say so. A graph missing while the rows
    /// call for one is built now, so searches go the same way whatever was deleted.
    pub fn open_or_reset(
        dir: &Path,
        model_id: &str,
        dim: usize,
        options: VectorOptions,
    ) -> Result<(LocalVectorIndex, Option<SearchError>), SearchError> {
        let remove = |names: &[&str]| {
            for name in names {
                let path = dir.join(name);
                match std::fs::remove_file(&path) {
                    Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                        return Err(SearchError::Io { path, action: "remove damaged file", source });
                    }
                    _ => {}
                }
            }
            Ok(())
        };
        // Half-written replacements a killed commit left behind.
        remove(&TEMPORARY_FILES)?;
        agents_fs::atomic::remove_stale_temporaries(dir, &[ROWS_FILE, DELTA_FILE, GRAPH_GENERATION_FILE])
            .map_err(|source| SearchError::Io { path: dir.to_owned(), action: "remove damaged file", source })?;
        let (mut index, damage) = match LocalVectorIndex::open(dir, model_id, dim, options) {
            Ok(index) => (index, None),
            Err(damage @ SearchError::Graph { .. }) => {
                remove(&[GRAPH_FILE, GRAPH_GENERATION_FILE])?;
                (LocalVectorIndex::open(dir, model_id, dim, options)?, Some(damage))
            }
            Err(damage) if damage.is_damage() => {
                remove(&FILES)?;
                (LocalVectorIndex::open(dir, model_id, dim, options)?, Some(damage))
            }
            Err(error) => return Err(error),
        };
        if index.graph.is_none() && !index.entries.is_empty() && index.entries.len() >= options.ann_threshold {
            // Built from nothing: the generation file goes first, so no stale
            // graph is taken as a base.
            remove(&[GRAPH_GENERATION_FILE])?;
            index.update_graph(index.generation)?;
        }
        Ok((index, damage))
    }

    /// Applies `vectors.delta` if it was written over the base just read.
    fn apply_delta(&mut self) -> Result<(), SearchError> {
        let path = self.dir.join(DELTA_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(SearchError::Io { path, action: "read", source }),
        };
        let corrupt = |source| SearchError::Corrupt { path: path.clone(), source };
        let delta = decode_delta(&bytes, &mut self.names, self.scales.len()).map_err(corrupt)?;
        if delta.base_generation != self.base_generation || delta.model_id != self.model_id || delta.dim != self.dim {
            // Written over another base (a commit killed between writing a new
            // base and removing the delta): what it says is in that base.
            return Ok(());
        }
        if delta.entries.iter().any(|e| e.key < self.base_next_key) || delta.next_key < self.base_next_key {
            return Err(corrupt(DecodeError::BadKey));
        }
        let mut tombstones = delta.tombstones;
        tombstones.sort_unstable();
        self.entries.retain(|e| tombstones.binary_search(&e.key).is_err());
        self.entries.extend(delta.entries);
        self.scales.extend(delta.scales);
        self.rows.added = bytes[delta.rows_offset..delta.rows_offset + delta.rows_len].to_vec();
        self.tombstones = tombstones;
        self.next_key = delta.next_key;
        self.generation = delta.generation;
        Ok(())
    }

    /// The model whose vectors this index holds.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Whether searches currently go through the HNSW graph.
    pub fn uses_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The row holding `key`. Rows are always in key order: keys are handed out
    /// increasing, removal keeps the order, and the file stores rows in order.
    fn row_of(&self, key: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&key, |e| e.key).ok()
    }

    fn graph_options(&self) -> usearch::IndexOptions {
        usearch::IndexOptions {
            dimensions: self.dim,
            metric: usearch::MetricKind::Cos,
            quantization: usearch::ScalarKind::I8,
            connectivity: self.options.connectivity,
            expansion_add: self.options.expansion_add,
            expansion_search: self.options.expansion_search,
            multi: false,
        }
    }

    /// Maps the saved graph if it matches the rows' generation.
    fn open_graph(&self) -> Result<Option<usearch::Index>, SearchError> {
        if self.entries.len() < self.options.ann_threshold || self.stored_graph_generation() != Some(self.generation) {
            return Ok(None);
        }
        let path = self.dir.join(GRAPH_FILE);
        let graph = usearch::Index::new(&self.graph_options()).map_err(|e| self.graph_error(&path, "create", e))?;
        graph.view(&path.to_string_lossy()).map_err(|e| self.graph_error(&path, "map", e))?;
        Ok(Some(graph))
    }

    fn stored_graph_generation(&self) -> Option<u64> {
        let text = std::fs::read_to_string(self.dir.join(GRAPH_GENERATION_FILE)).ok()?;
        text.trim().parse().ok()
    }

    fn graph_error(&self, path: &Path, action: &'static str, error: impl std::fmt::Display) -> SearchError {
        SearchError::Graph { path: path.to_owned(), action, message: error.to_string() }
    }

    /// Brings the saved graph in step with the rows, or removes it below the threshold.
    fn update_graph(&mut self, previous_generation: u64) -> Result<(), SearchError> {
        let path = self.dir.join(GRAPH_FILE);
        self.graph = None;
        if self.entries.len() < self.options.ann_threshold {
            for name in [GRAPH_FILE, GRAPH_GENERATION_FILE] {
                let _ = std::fs::remove_file(self.dir.join(name));
            }
            return Ok(());
        }
        let graph = usearch::Index::new(&self.graph_options()).map_err(|e| self.graph_error(&path, "create", e))?;
        let incremental = self.stored_graph_generation() == Some(previous_generation) && path.exists();
        let to_add: Vec<usize> = if incremental {
            graph.load(&path.to_string_lossy()).map_err(|e| self.graph_error(&path, "load", e))?;
            for key in &self.removed_keys {
                graph.remove(*key).map_err(|e| self.graph_error(&path, "remove from", e))?;
            }
            (0..self.entries.len()).filter(|&row| self.entries[row].key >= self.first_new_key).collect()
        } else {
            (0..self.entries.len()).collect()
        };
        // One thread, rows in order: the same vectors always make the same graph,
        // so a rebuilt index answers exactly as the one before (parallel inserts
        // race, and the graph they make differs from run to run).
        graph
            .reserve_capacity_and_threads(graph.size() + to_add.len(), 1)
            .map_err(|e| self.graph_error(&path, "reserve", e))?;
        let dim = self.dim;
        let mut row_buffer: Vec<i8> = vec![0; dim];
        for &row in &to_add {
            // Cosine ignores the row's scale, so the quantized row goes in as it is.
            for (out, b) in row_buffer.iter_mut().zip(self.rows.row(self.entries[row].slot, dim)) {
                *out = *b as i8;
            }
            graph.add(self.entries[row].key, &row_buffer).map_err(|e| self.graph_error(&path, "add to", e))?;
        }
        let tmp = self.dir.join(format!("{GRAPH_FILE}.tmp"));
        graph.save(&tmp.to_string_lossy()).map_err(|e| self.graph_error(&tmp, "save", e))?;
        std::fs::rename(&tmp, &path).map_err(|source| SearchError::Io {
            path: path.clone(),
            action: "rename",
            source,
        })?;
        write_atomically(&self.dir.join(GRAPH_GENERATION_FILE), self.generation.to_string().as_bytes())?;
        self.graph = Some(graph);
        Ok(())
    }

    /// A row's score: the dot product of its dequantized values with `query`,
    /// summed in order (`Iterator::sum`), times its scale.
    fn score_row(&self, row: usize, query: &[f32]) -> f32 {
        let slot = self.entries[row].slot;
        let values = self.rows.row(slot, self.dim);
        let dot: f32 = values.iter().zip(query).map(|(v, q)| f32::from(*v as i8) * q).sum();
        dot * self.scales[slot]
    }

    fn keep(&self, row: usize, filter: &SearchFilter) -> bool {
        let e = &self.entries[row];
        let (path, kind) = (self.names.get(e.path), self.names.get(e.kind));
        (filter.paths_prefix.is_empty() || filter.paths_prefix.iter().any(|p| path.starts_with(p.as_str())))
            && (filter.kinds.is_empty() || filter.kinds.iter().any(|k| k == kind))
    }

    fn id(&self, row: usize) -> std::borrow::Cow<'_, str> {
        let entry = &self.entries[row];
        match (&self.base_ids, &self.rows.base) {
            (Some(ids), Some((map, _))) if entry.slot < self.rows.base_slots => {
                let mut cursor = IdCursor::default();
                ids.decode(map, entry.slot, &mut cursor);
                std::borrow::Cow::Owned(cursor.id)
            }
            _ => match entry.id {
                IdSpan::Whole(span) => std::borrow::Cow::Borrowed(self.names.get(span)),
                IdSpan::AfterPath(rest) => {
                    let mut id = String::new();
                    self.join_id(entry, rest, &mut id);
                    std::borrow::Cow::Owned(id)
                }
            },
        }
    }

    /// The id of `entry`, whose rest after its path is `rest`, into `out`.
    fn join_id(&self, entry: &Entry, rest: Span, out: &mut String) {
        out.clear();
        out.push_str(self.id_prefix.as_deref().unwrap_or_default());
        out.push_str(self.names.get(entry.path));
        out.push_str(self.names.get(rest));
    }

    /// Where `id` (of a row of `path`) goes in the names: its rest after the
    /// path when it has the index's prefix (learnt here if there is none
    /// yet), else whole.
    fn push_id(&mut self, id: &str, path: &str) -> IdSpan {
        if self.id_prefix.is_none()
            && !path.is_empty()
            && let Some(at) = id.find(path)
            && (at == 0 || id[..at].ends_with('/'))
        {
            self.id_prefix = Some(id[..at].into());
        }
        let prefix = self.id_prefix.as_deref().unwrap_or_default();
        match id.strip_prefix(prefix).and_then(|after| after.strip_prefix(path)) {
            Some(rest) if self.id_prefix.is_some() => IdSpan::AfterPath(self.names.push(rest)),
            _ => IdSpan::Whole(self.names.push(id)),
        }
    }

    /// [`LocalVectorIndex::id`] of `entry`, decoded into `cursor` or
    /// borrowed from the names: what [`encode_entries`] reads the ids with,
    /// in order, without starting each from its group.
    fn id_with<'a>(&'a self, entry: &Entry, cursor: &'a mut IdCursor) -> &'a str {
        match (&self.base_ids, &self.rows.base) {
            (Some(ids), Some((map, _))) if entry.slot < self.rows.base_slots => {
                ids.decode(map, entry.slot, cursor);
                &cursor.id
            }
            _ => match entry.id {
                IdSpan::Whole(span) => self.names.get(span),
                IdSpan::AfterPath(rest) => {
                    // The cursor no longer holds a base row's id.
                    cursor.slot = None;
                    self.join_id(entry, rest, &mut cursor.id);
                    &cursor.id
                }
            },
        }
    }

    fn hits(&self, mut scored: Vec<(f32, usize)>, limit: usize) -> Vec<VectorHit> {
        // Ties (equal scores) alone need ids, decoded as they come.
        let order =
            |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then_with(|| self.id(a.1).cmp(&self.id(b.1)));
        if scored.len() > limit && limit > 0 {
            scored.select_nth_unstable_by(limit - 1, order);
            scored.truncate(limit);
        }
        scored.sort_by(order);
        scored.truncate(limit);
        scored
            .into_iter()
            .map(|(score, row)| VectorHit {
                id: self.id(row).into_owned(),
                path: self.names.get(self.entries[row].path).to_owned(),
                score,
            })
            .collect()
    }

    /// Exact search: every row scored, [`SCAN_CHUNK`] rows at a time. The
    /// base file's pages a chunk read are let go of after it (they stay in
    /// the page cache, for the next scan): a scan of a large index would
    /// otherwise keep the whole file in the process's resident set.
    pub fn search_exact(&self, query: &[f32], limit: usize, filter: &SearchFilter) -> Vec<VectorHit> {
        let mut scored: Vec<(f32, usize)> = Vec::new();
        for chunk in (0..self.entries.len()).step_by(SCAN_CHUNK) {
            let end = (chunk + SCAN_CHUNK).min(self.entries.len());
            scored.par_extend((0..(end - chunk).div_ceil(SCAN_BLOCK)).into_par_iter().flat_map_iter(|block| {
                let start = chunk + block * SCAN_BLOCK;
                let end = (start + SCAN_BLOCK).min(end);
                let mut rows = [0usize; SCAN_BLOCK];
                let mut kept = 0;
                for row in (start..end).filter(|&row| self.keep(row, filter)) {
                    rows[kept] = row;
                    kept += 1;
                }
                let scores = self.score_rows(&rows[..kept], query);
                (0..kept).map(move |i| (scores[i], rows[i]))
            }));
            // The base's rows come first, in slot order.
            let base = self.entries[chunk..end].partition_point(|e| e.slot < self.rows.base_slots);
            if base > 0 {
                self.rows.release(self.entries[chunk].slot..self.entries[chunk + base - 1].slot + 1, self.dim);
            }
        }
        self.hits(scored, limit)
    }

    /// [`LocalVectorIndex::score_row`] of up to [`SCAN_BLOCK`] rows at once,
    /// bit for bit: each row's products are summed in the same order from the
    /// same start, but the rows' sums advance side by side, so the processor
    /// adds several at a time instead of waiting on one chain of additions
    /// (the exact scan was most of a warm query's time).
    fn score_rows(&self, rows: &[usize], query: &[f32]) -> [f32; SCAN_BLOCK] {
        let mut sums = [SUM_START; SCAN_BLOCK];
        let Some(&first) = rows.first() else { return sums };
        let len = self.dim.min(query.len());
        // Missing rows repeat the first; their sums are not returned.
        // A row's values and scale live in its entry's slot.
        let slot = |row: usize| self.entries[row].slot;
        let values: [&[u8]; SCAN_BLOCK] =
            std::array::from_fn(|i| &self.rows.row(slot(rows.get(i).copied().unwrap_or(first)), self.dim)[..len]);
        for (j, q) in query[..len].iter().enumerate() {
            for (sum, row) in sums.iter_mut().zip(&values) {
                *sum += f32::from(row[j] as i8) * q;
            }
        }
        for (sum, row) in sums.iter_mut().zip(rows) {
            *sum *= self.scales[slot(*row)];
        }
        sums
    }
}

/// [`LocalVectorIndex`]'s backend name.
pub const LOCAL_NAME: &str = "local";

impl VectorBackend for LocalVectorIndex {
    fn name(&self) -> &'static str {
        LOCAL_NAME
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn upsert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError> {
        // Hashes first: only an entry whose id hashes as one of the docs'
        // has its id decoded and compared.
        let hashes: rustc_hash::FxHashSet<u64> = docs.iter().map(|d| id_hash(&d.id)).collect();
        let replaced: HashSet<&str> = docs.iter().map(|d| d.id.as_str()).collect();
        let matching: Vec<u64> = (0..self.entries.len())
            .filter(|&row| hashes.contains(&self.entries[row].id_hash) && replaced.contains(&*self.id(row)))
            .map(|row| self.entries[row].key)
            .collect();
        if !matching.is_empty() {
            self.remove_rows(|e| matching.binary_search(&e.key).is_ok());
        }
        self.insert(docs)
    }

    fn insert(&mut self, docs: &[VectorDoc]) -> Result<(), SearchError> {
        // Every length is checked before any row is added: a bad batch adds nothing.
        if let Some(doc) = docs.iter().find(|doc| doc.vector.len() != self.dim) {
            return Err(SearchError::Dimension { id: doc.id.clone(), expected: self.dim, found: doc.vector.len() });
        }
        for doc in docs {
            let max = doc.vector.iter().fold(0.0_f32, |m, v| m.max(v.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            let slot = self.scales.len();
            self.rows.added.extend(doc.vector.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8 as u8));
            self.scales.push(scale);
            let entry = Entry {
                key: self.next_key,
                slot,
                id: self.push_id(&doc.id, &doc.path),
                id_hash: id_hash(&doc.id),
                path: self.names.intern(&doc.path),
                kind: self.names.intern(&doc.kind),
            };
            self.entries.push(entry);
            self.next_key += 1;
        }
        self.dirty = true;
        self.rows.spill_if_large(&self.dir, self.dim)
    }

    fn delete_paths(&mut self, paths: &[String]) -> Result<(), SearchError> {
        // Every entry's path is interned: an entry of one of these paths
        // holds its interned span, so spans are compared, not strings.
        let spans: rustc_hash::FxHashSet<usize> =
            paths.iter().filter_map(|p| self.names.interned.get(p.as_str())).map(|span| span.start).collect();
        if !spans.is_empty() && self.entries.iter().any(|e| spans.contains(&e.path.start)) {
            self.remove_rows(|e| spans.contains(&e.path.start));
            self.dirty = true;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<(), SearchError> {
        if !self.dirty {
            return Ok(());
        }
        let previous = self.generation;
        self.generation += 1;
        let first_added = self.entries.partition_point(|e| e.key < self.base_next_key);
        let delta = self.tombstones.len() + (self.entries.len() - first_added);
        if self.rewrite || delta * 100 > self.base_len * MAX_DELTA_PERCENT {
            // Streamed: the rows (hundreds of megabytes on a large tree) are
            // written from where they are, never copied into one buffer.
            write_atomically_with(&self.dir.join(ROWS_FILE), |w| write_encoded(self, w))?;
            // A delta left now would name the base before: ignored, but removed.
            let delta_path = self.dir.join(DELTA_FILE);
            match std::fs::remove_file(&delta_path) {
                Err(source) if source.kind() != std::io::ErrorKind::NotFound => {
                    return Err(SearchError::Io { path: delta_path, action: "remove", source });
                }
                _ => {}
            }
            self.base_generation = self.generation;
            self.base_next_key = self.next_key;
            self.base_len = self.entries.len();
            self.tombstones.clear();
            self.rewrite = false;
            self.adopt_base()?;
        } else {
            write_atomically(&self.dir.join(DELTA_FILE), &encode_delta(self, first_added))?;
        }
        self.update_graph(previous)?;
        self.removed_keys.clear();
        self.first_new_key = self.next_key;
        self.dirty = false;
        Ok(())
    }

    fn search(&self, query: &[f32], limit: usize, filter: &SearchFilter) -> Result<Vec<VectorHit>, SearchError> {
        if query.len() != self.dim {
            return Err(SearchError::Dimension { id: "query".to_owned(), expected: self.dim, found: query.len() });
        }
        let Some(graph) = &self.graph else { return Ok(self.search_exact(query, limit, filter)) };
        let path = self.dir.join(GRAPH_FILE);
        // The graph compares quantized rows: over-fetch, then re-score exactly.
        let wanted = (limit * 4).max(limit + 32);
        let found = if filter == &SearchFilter::default() {
            graph.search(query, wanted)
        } else {
            graph.filtered_search(query, wanted, |key| self.row_of(key).is_some_and(|r| self.keep(r, filter)))
        }
        .map_err(|e| self.graph_error(&path, "search", e))?;
        let scored = found
            .keys
            .iter()
            .filter_map(|key| self.row_of(*key))
            .map(|row| (self.score_row(row, query), row))
            .collect();
        Ok(self.hits(scored, limit))
    }

    fn len(&self) -> usize {
        self.entries.len()
    }
}

impl LocalVectorIndex {
    /// Reads the base file just written back as the rows and ids, as opening
    /// it would: the rows and ids held in memory (or spilled) since the last
    /// base go, and the next query reads them from the file's map.
    fn adopt_base(&mut self) -> Result<(), SearchError> {
        // What was held goes first: the file holds all of it, and both at
        // once were a first sync's peak.
        self.entries = Vec::new();
        self.names = Names::default();
        self.base_ids = None;
        self.scales = Vec::new();
        self.rows = Rows::default();
        let path = self.dir.join(ROWS_FILE);
        let read = map_file(&path)
            .map_err(|source| SearchError::Io { path: path.clone(), action: "read", source })
            .and_then(|map| match decode(&map) {
                Ok(stored) => Ok((map, stored)),
                Err(source) => Err(SearchError::Corrupt { path: path.clone(), source }),
            });
        let (map, stored) = match read {
            Ok(read) => read,
            Err(error) => {
                // Unreadable just after it was written: the index starts
                // over empty, and the next commit writes a whole base.
                self.base_len = 0;
                self.base_next_key = self.next_key;
                self.tombstones.clear();
                self.rewrite = true;
                self.dirty = true;
                return Err(error);
            }
        };
        self.hold_base(map, stored);
        Ok(())
    }

    /// Takes the rows, ids and scales of a base file decoded from `map` as
    /// the index's own (the delta's and added rows come after them).
    fn hold_base(&mut self, map: memmap2::Mmap, stored: Stored) {
        self.entries = stored.entries;
        self.names = stored.names;
        self.base_ids = stored.ids;
        self.scales = stored.scales;
        self.rows = Rows { base: Some((map, stored.rows_offset)), base_slots: self.entries.len(), ..Rows::default() };
    }

    /// Removes the entries `drop` picks; their rows stay in their slots (in
    /// memory, unused) until the process ends.
    fn remove_rows(&mut self, mut drop: impl FnMut(&Entry) -> bool) {
        let (removed, tombstones, base_next_key) = (&mut self.removed_keys, &mut self.tombstones, self.base_next_key);
        self.entries.retain(|entry| {
            if !drop(entry) {
                return true;
            }
            removed.push(entry.key);
            if entry.key < base_next_key {
                tombstones.push(entry.key);
            }
            false
        });
    }
}

struct Stored {
    model_id: String,
    dim: usize,
    next_key: u64,
    generation: u64,
    /// Whether the file is of the current format ([`MAGIC`]).
    current: bool,
    entries: Vec<Entry>,
    names: Names,
    /// The rows' ids, unless they are in `names` (the first format).
    ids: Option<BaseIds>,
    /// Where the rows start in the file.
    rows_offset: usize,
    scales: Vec<f32>,
}

/// The model and dimension of the vectors a saved index in `dir` holds, read
/// from its base file's header alone; `None` when there is no base file or it
/// is of an older format (which the next open rewrites).
pub fn saved_model(dir: &Path) -> Option<(String, usize)> {
    use std::io::Read;
    let mut head = Vec::with_capacity(1024);
    std::fs::File::open(dir.join(ROWS_FILE)).ok()?.take(1024).read_to_end(&mut head).ok()?;
    let mut r = Reader(&head);
    if r.take(MAGIC.len()).ok()? != MAGIC {
        return None;
    }
    let model_id = r.string().ok()?;
    let dim = r.u32().ok()? as usize;
    Some((model_id, dim))
}

/// A whole base file: every entry of `index`.
#[cfg(test)]
fn encode(index: &LocalVectorIndex) -> Vec<u8> {
    let mut out = Vec::new();
    write_encoded(index, &mut out).expect("writing to memory");
    out
}

/// `vectors.bin`: the header and entries, then the rows, each written to `w`
/// as they are read (only the entries' part is built in memory first).
fn write_encoded(index: &LocalVectorIndex, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(index.entries.len() * 48 + 64);
    head.extend_from_slice(MAGIC);
    put_str(&mut head, &index.model_id);
    head.extend_from_slice(&(index.dim as u32).to_le_bytes());
    head.extend_from_slice(&index.next_key.to_le_bytes());
    head.extend_from_slice(&index.generation.to_le_bytes());
    encode_entry_names(&mut head, index, &index.entries);
    w.write_all(&head)?;
    drop(head);
    index.rows.write_rows(index.entries.iter().map(|e| e.slot), index.dim, w)
}

/// A delta file: the base's removed keys and the entries from `first_added` on.
fn encode_delta(index: &LocalVectorIndex, first_added: usize) -> Vec<u8> {
    let added = &index.entries[first_added..];
    let mut out = Vec::with_capacity(added.len() * (index.dim + 48) + index.tombstones.len() * 8 + 64);
    out.extend_from_slice(MAGIC_DELTA);
    put_str(&mut out, &index.model_id);
    out.extend_from_slice(&(index.dim as u32).to_le_bytes());
    out.extend_from_slice(&index.next_key.to_le_bytes());
    out.extend_from_slice(&index.generation.to_le_bytes());
    out.extend_from_slice(&index.base_generation.to_le_bytes());
    let mut tombstones = index.tombstones.clone();
    tombstones.sort_unstable();
    out.extend_from_slice(&(tombstones.len() as u64).to_le_bytes());
    for key in tombstones {
        out.extend_from_slice(&key.to_le_bytes());
    }
    encode_entries(&mut out, index, added);
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The entries' count, names, keys and scales, then their rows.
fn encode_entries(out: &mut Vec<u8>, index: &LocalVectorIndex, entries: &[Entry]) {
    encode_entry_names(out, index, entries);
    for entry in entries {
        out.extend_from_slice(index.rows.row(entry.slot, index.dim));
    }
}

/// The entries' count, names, keys and scales ([`encode_entries`] without the rows).
fn encode_entry_names(out: &mut Vec<u8>, index: &LocalVectorIndex, entries: &[Entry]) {
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    // The distinct paths and kinds, in order of first use.
    let mut table: rustc_hash::FxHashMap<&str, u32> = rustc_hash::FxHashMap::default();
    let mut strings: Vec<&str> = Vec::new();
    for entry in entries {
        for name in [index.names.get(entry.path), index.names.get(entry.kind)] {
            if !table.contains_key(name) {
                table.insert(name, strings.len() as u32);
                strings.push(name);
            }
        }
    }
    out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    for name in &strings {
        put_str(out, name);
    }
    let mut previous = String::new();
    let mut cursor = IdCursor::default();
    for entry in entries {
        out.extend_from_slice(&entry.key.to_le_bytes());
        out.extend_from_slice(&index.scales[entry.slot].to_le_bytes());
        out.extend_from_slice(&table[index.names.get(entry.path)].to_le_bytes());
        out.extend_from_slice(&table[index.names.get(entry.kind)].to_le_bytes());
        let id = index.id_with(entry, &mut cursor);
        let shared = shared_prefix(&previous, id).min(u16::MAX as usize);
        out.extend_from_slice(&(shared as u16).to_le_bytes());
        put_str(out, &id[shared..]);
        previous.clear();
        previous.push_str(id);
    }
}

/// Length in bytes of the longest common prefix of `a` and `b` that ends on
/// a character boundary of both.
fn shared_prefix(a: &str, b: &str) -> usize {
    let mut n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !b.is_char_boundary(n) {
        n -= 1;
    }
    n
}

/// What is wrong with a `vectors.bin` that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Fewer bytes than the header or the rows need.
    #[error("the file ends early")]
    EndsEarly,
    /// A stored id, path or kind is not UTF-8.
    #[error("a name is not UTF-8")]
    NameNotUtf8,
    /// The file does not start with the index's magic bytes.
    #[error("not a vector index (bad magic)")]
    BadMagic,
    /// The row count does not fit this machine's address space.
    #[error("bad row count")]
    BadRowCount,
    /// More bytes than the rows take.
    #[error("trailing bytes after the rows")]
    TrailingBytes,
    /// A row names a path, kind or shared id prefix the file does not hold.
    #[error("a row refers to a name the file does not hold")]
    BadStringIndex,
    /// A delta's row has a key its base could hold.
    #[error("a delta row's key is not past its base's keys")]
    BadKey,
}

/// Reads the little-endian fields of a file.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::EndsEarly);
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        self.take(N)?.try_into().map_err(|_| DecodeError::EndsEarly)
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn string(&mut self) -> Result<String, DecodeError> {
        Ok(self.str()?.to_owned())
    }
    fn str(&mut self) -> Result<&'a str, DecodeError> {
        let len = self.u32()? as usize;
        std::str::from_utf8(self.take(len)?).map_err(|_| DecodeError::NameNotUtf8)
    }
}

/// The entries of a base or delta file, their slots numbered from `first_slot`.
struct DecodedEntries {
    entries: Vec<Entry>,
    /// The ids, when asked for on demand ([`BaseIds`]); else in the names.
    ids: Option<BaseIds>,
    scales: Vec<f32>,
    rows_offset: usize,
    rows_len: usize,
}

fn decode(bytes: &[u8]) -> Result<Stored, DecodeError> {
    let mut r = Reader(bytes);
    let magic = r.take(MAGIC.len())?;
    let v1 = magic == MAGIC_V1;
    if magic != MAGIC && magic != MAGIC_V2 && !v1 {
        return Err(DecodeError::BadMagic);
    }
    let current = magic == MAGIC;
    let model_id = r.string()?;
    let dim = r.u32()? as usize;
    let next_key = r.u64()?;
    let generation = r.u64()?;
    let mut names = Names::default();
    let decoded = decode_entries(bytes, &mut r, &mut names, 0, dim, v1, true)?;
    let DecodedEntries { entries, ids, scales, rows_offset, .. } = decoded;
    Ok(Stored { model_id, dim, next_key, generation, current, entries, names, ids, rows_offset, scales })
}

/// What a delta file holds.
struct Delta {
    model_id: String,
    dim: usize,
    next_key: u64,
    generation: u64,
    base_generation: u64,
    tombstones: Vec<u64>,
    entries: Vec<Entry>,
    scales: Vec<f32>,
    rows_offset: usize,
    rows_len: usize,
}

/// Decodes a delta file, its names pushed into `names` and its slots numbered
/// from `first_slot`; the caller checks that it belongs to its base.
fn decode_delta(bytes: &[u8], names: &mut Names, first_slot: usize) -> Result<Delta, DecodeError> {
    let mut r = Reader(bytes);
    if r.take(MAGIC_DELTA.len())? != MAGIC_DELTA {
        return Err(DecodeError::BadMagic);
    }
    let model_id = r.string()?;
    let dim = r.u32()? as usize;
    let next_key = r.u64()?;
    let generation = r.u64()?;
    let base_generation = r.u64()?;
    let count = usize::try_from(r.u64()?).map_err(|_| DecodeError::BadRowCount)?;
    let mut tombstones = Vec::with_capacity(count.min(bytes.len() / 8));
    for _ in 0..count {
        tombstones.push(r.u64()?);
    }
    let DecodedEntries { entries, scales, rows_offset, rows_len, .. } =
        decode_entries(bytes, &mut r, names, first_slot, dim, false, false)?;
    Ok(Delta {
        model_id,
        dim,
        next_key,
        generation,
        base_generation,
        tombstones,
        entries,
        scales,
        rows_offset,
        rows_len,
    })
}

/// Decodes what [`encode_entries`] wrote (or the first format's rows, `v1`),
/// which must end the file. With `lazy` (a base file), the ids are checked
/// and hashed but not kept: [`BaseIds`] decodes them again when asked.
#[allow(clippy::too_many_arguments)]
fn decode_entries(
    bytes: &[u8],
    r: &mut Reader<'_>,
    names: &mut Names,
    first_slot: usize,
    dim: usize,
    v1: bool,
    lazy: bool,
) -> Result<DecodedEntries, DecodeError> {
    let count = usize::try_from(r.u64()?).map_err(|_| DecodeError::BadRowCount)?;
    let mut entries = Vec::with_capacity(count.min(bytes.len()));
    let mut scales = Vec::with_capacity(count.min(bytes.len()));
    let mut ids = None;
    if v1 {
        names.text.reserve(bytes.len().saturating_sub(count.saturating_mul(dim)));
        for slot in first_slot..first_slot + count {
            let key = r.u64()?;
            scales.push(f32::from_bits(r.u32()?));
            let (id, path, kind) = (r.str()?, r.str()?, r.str()?);
            let (id_hash, id) = (id_hash(id), IdSpan::Whole(names.push(id)));
            entries.push(Entry { key, slot, id, id_hash, path: names.intern(path), kind: names.intern(kind) });
        }
    } else {
        let strings = r.u32()? as usize;
        let mut table = Vec::with_capacity(strings.min(bytes.len()));
        for _ in 0..strings {
            let name = r.str()?;
            table.push(names.intern(name));
        }
        if !lazy {
            // The ids' exact length, read ahead: growing the buffer as the ids
            // come cost a large delta copies and page faults.
            let mut ahead = Reader(r.0);
            let mut length = 0;
            for _ in 0..count {
                ahead.take(20)?;
                let shared = u16::from_le_bytes(ahead.array()?) as usize;
                length += shared + ahead.str()?.len();
            }
            names.text.reserve(length);
        }
        let mut base_ids =
            lazy.then(|| BaseIds { groups: Vec::with_capacity(count / ID_GROUP + 1), ..Default::default() });
        let lookup = |i: u32| table.get(i as usize).copied().ok_or(DecodeError::BadStringIndex);
        // The current id: each record cuts the one before and appends to it.
        let mut id = String::new();
        for (i, slot) in (first_slot..first_slot + count).enumerate() {
            let record = bytes.len() - r.0.len();
            let key = r.u64()?;
            scales.push(f32::from_bits(r.u32()?));
            let (path, kind) = (lookup(r.u32()?)?, lookup(r.u32()?)?);
            let shared = u16::from_le_bytes(r.array()?) as usize;
            let suffix = r.str()?;
            if !id.is_char_boundary(shared) {
                return Err(DecodeError::BadStringIndex);
            }
            id.truncate(shared);
            id.push_str(suffix);
            let span = match &mut base_ids {
                Some(base) => {
                    if i % ID_GROUP == 0 {
                        let start = base.text.len();
                        base.text.push_str(&id);
                        base.groups.push((record, Span { start, len: id.len() as u32 }));
                    }
                    IdSpan::Whole(Span { start: 0, len: 0 })
                }
                None => IdSpan::Whole(names.push(&id)),
            };
            entries.push(Entry { key, slot, id: span, id_hash: id_hash(&id), path, kind });
        }
        ids = base_ids;
    }
    if entries.windows(2).any(|pair| pair[0].key >= pair[1].key) {
        return Err(DecodeError::BadKey);
    }
    let rows_len = count.checked_mul(dim).ok_or(DecodeError::BadRowCount)?;
    let rows_offset = bytes.len() - r.0.len();
    r.take(rows_len)?;
    if !r.0.is_empty() {
        return Err(DecodeError::TrailingBytes);
    }
    Ok(DecodedEntries { entries, ids, scales, rows_offset, rows_len })
}

impl BaseIds {
    /// The id of base `slot` into `cursor`, read from `file` (the base file
    /// these groups were made from); from the record after the cursor's when
    /// it holds the slot before, else from the slot's group.
    fn decode(&self, file: &[u8], slot: usize, cursor: &mut IdCursor) {
        let mut next = match cursor.slot {
            Some(held) if held == slot => return,
            Some(held) if held + 1 == slot => cursor.next_record,
            _ => {
                let Some(&(record, span)) = self.groups.get(slot / ID_GROUP) else {
                    cursor.slot = None;
                    cursor.id.clear();
                    return;
                };
                cursor.id.clear();
                cursor.id.push_str(&self.text[span.start..span.start + span.len as usize]);
                cursor.slot = Some(slot - slot % ID_GROUP);
                cursor.next_record = skip_record(file, record);
                if cursor.slot == Some(slot) {
                    return;
                }
                cursor.next_record
            }
        };
        // Opening checked every record: what follows cannot fail on the
        // same bytes, and would leave the id as far as it got if it did.
        let start = cursor.slot.map_or(slot, |held| held + 1);
        for at in start..=slot {
            let mut r = Reader(file.get(next..).unwrap_or_default());
            let Ok(_) = r.take(20) else { break };
            let (Ok(shared), Ok(suffix)) = (r.array::<2>(), r.str()) else { break };
            let shared = u16::from_le_bytes(shared) as usize;
            if !cursor.id.is_char_boundary(shared) {
                break;
            }
            cursor.id.truncate(shared);
            cursor.id.push_str(suffix);
            cursor.slot = Some(at);
            next = file.len() - r.0.len();
        }
        cursor.next_record = next;
    }
}

/// Where the record after the one at `record` starts.
fn skip_record(file: &[u8], record: usize) -> usize {
    let mut r = Reader(file.get(record..).unwrap_or_default());
    let _ = r.take(22).and_then(|_| r.str());
    file.len() - r.0.len()
}

/// The quantized rows by slot: the base file's, mapped as opened (nothing is
/// read until a row is scored), then the delta's and those added since: in
/// memory up to [`SPILL_BYTES`], past it in a spill file. Removing an entry
/// leaves its row in place.
#[derive(Default)]
struct Rows {
    /// The base file's map and where its rows start in it.
    base: Option<(memmap2::Mmap, usize)>,
    /// Slots below this are the base's.
    base_slots: usize,
    /// The first rows added since the base, moved out of memory.
    spill: Option<Spill>,
    /// The rows added after the spilled ones.
    added: Vec<u8>,
}

/// Rows added since the base, written to an unnamed temporary file in the
/// index directory (gone when closed, even by a killed process) and mapped.
/// A first index of a large tree adds hundreds of thousands of rows before
/// its commit; held in memory, they were a hundred megabytes of the run's
/// peak, written once to the base and never read again.
struct Spill {
    file: std::fs::File,
    /// The file mapped, once written to; its first `slots` rows are the spilled ones.
    map: Option<memmap2::Mmap>,
    slots: usize,
}

/// Bytes of added rows kept in memory before they go to the spill file
/// (a few rows in this crate's tests, so that every history they try spills).
const SPILL_BYTES: usize = if cfg!(test) { 1 << 10 } else { 8 << 20 };

/// Spilled rows read at once by [`Rows::write_rows`].
const SPILL_READ_ROWS: usize = 4096;

impl Rows {
    fn row(&self, slot: usize, dim: usize) -> &[u8] {
        if let Some((map, offset)) = &self.base
            && slot < self.base_slots
        {
            return &map[offset + slot * dim..offset + (slot + 1) * dim];
        }
        let mut slot = slot - self.base_slots;
        if let Some(spill) = &self.spill {
            if let Some(map) = &spill.map
                && slot < spill.slots
            {
                return &map[slot * dim..(slot + 1) * dim];
            }
            slot -= spill.slots;
        }
        &self.added[slot * dim..(slot + 1) * dim]
    }

    /// Lets go of the base file's pages holding the rows of `slots`: the
    /// process maps them again from the page cache when they are read next.
    fn release(&self, slots: std::ops::Range<usize>, dim: usize) {
        #[cfg(unix)]
        if let Some((map, offset)) = &self.base {
            let (start, end) = (offset + slots.start * dim, (offset + slots.end * dim).min(map.len()));
            if start < end {
                // SAFETY: the map is of a file opened read-only and shared,
                // never changed in place (commits write a new file and rename
                // it): pages let go of read back as they were. A failure only
                // leaves them resident.
                let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
            }
        }
        #[cfg(not(unix))]
        let _ = (slots, dim);
    }

    /// The spill file's index of `slot`, if its row is there.
    fn spilled(&self, slot: usize) -> Option<usize> {
        let spill = self.spill.as_ref()?;
        let index = slot.checked_sub(self.base_slots)?;
        (index < spill.slots).then_some(index)
    }

    /// Moves the rows held in memory to the spill file once they pass
    /// [`SPILL_BYTES`]; on an error nothing moves.
    fn spill_if_large(&mut self, dir: &Path, dim: usize) -> Result<(), SearchError> {
        use std::io::{Seek, Write};
        if self.added.len() < SPILL_BYTES || dim == 0 {
            return Ok(());
        }
        let failed = |source| SearchError::Io { path: dir.to_owned(), action: "spill vector rows into", source };
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(Spill { file: tempfile::tempfile_in(dir).map_err(failed)?, map: None, slots: 0 }),
        };
        (&spill.file)
            .seek(std::io::SeekFrom::Start((spill.slots * dim) as u64))
            .and_then(|_| (&spill.file).write_all(&self.added))
            .map_err(failed)?;
        // SAFETY: the file is this index's alone (unnamed, never reopened) and
        // only ever written past what a map of it shows, so what a map shows
        // never changes while it lives.
        let map = unsafe { memmap2::Mmap::map(&spill.file) }.map_err(failed)?;
        spill.map = Some(map);
        spill.slots += self.added.len() / dim;
        self.added.clear();
        Ok(())
    }

    /// Writes the rows of `slots`, in order. Spilled rows are read from the
    /// file, consecutive ones together, not through its map: pages read
    /// through a map stay in the process's resident set, pages read with
    /// `read` only in the page cache.
    fn write_rows(
        &self,
        slots: impl Iterator<Item = usize>,
        dim: usize,
        w: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut buffer = Vec::new();
        // The spilled rows waiting to be read: the first one's index and how many.
        let mut run: Option<(usize, usize)> = None;
        let mut flush = |run: &mut Option<(usize, usize)>, w: &mut dyn std::io::Write| -> std::io::Result<()> {
            use std::io::{Read, Seek};
            let (Some((first, count)), Some(spill)) = (run.take(), &self.spill) else { return Ok(()) };
            buffer.resize(count * dim, 0);
            (&spill.file).seek(std::io::SeekFrom::Start((first * dim) as u64))?;
            (&spill.file).read_exact(&mut buffer)?;
            w.write_all(&buffer)
        };
        for slot in slots {
            match (self.spilled(slot), &mut run) {
                (Some(index), Some((first, count))) if *first + *count == index && *count < SPILL_READ_ROWS => {
                    *count += 1;
                }
                (Some(index), _) => {
                    flush(&mut run, w)?;
                    run = Some((index, 1));
                }
                (None, _) => {
                    flush(&mut run, w)?;
                    w.write_all(self.row(slot, dim))?;
                }
            }
        }
        flush(&mut run, w)
    }
}

/// Maps `path` read-only.
fn map_file(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the map is read-only, and `vectors.bin` is never changed in place:
    // commits write a new file and rename it over the old one, so a mapped file's
    // contents stay as they were for as long as the map lives.
    unsafe { memmap2::Mmap::map(&file) }
}

/// Writes `bytes` to `path` atomically ([`agents_fs::atomic_write`]: a
/// temporary file, synced, renamed, then the directory synced).
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SearchError> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// [`write_atomically`] of what `write` writes, streamed
/// ([`agents_fs::atomic_write_with`]).
fn write_atomically_with(
    path: &Path,
    write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), SearchError> {
    agents_fs::atomic_write_with(path, write).map_err(|source| SearchError::Io {
        path: path.to_owned(),
        action: "write atomically",
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u64, dim: usize) -> Vec<f32> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut v: Vec<f32> = (0..dim)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
            })
            .collect();
        let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
        v.iter_mut().for_each(|a| *a /= norm);
        v
    }

    fn docs(n: usize, dim: usize) -> Vec<VectorDoc> {
        (0..n)
            .map(|i| VectorDoc {
                id: format!("uko://r/f{}.py#s{i}", i % 7),
                path: format!("f{}.py", i % 7),
                kind: if i % 2 == 0 { "function" } else { "class" }.to_owned(),
                vector: unit(i as u64 + 1, dim),
            })
            .collect()
    }

    /// The shipped bytes are the ones the recipe recorded (metadata.json, written
    /// by scripts/distill-model.py; CI re-runs the recipe and compares).
    #[test]
    fn the_bundled_model_is_the_recipes_output_and_separates_related_texts() {
        use sha2::Digest;
        let meta: serde_json::Value = serde_json::from_str(bundled::METADATA).unwrap();
        assert_eq!(meta["recipe_id"], "minilm-code-static/2");
        for (name, bytes) in [
            ("model.safetensors", bundled::WEIGHTS),
            ("tokenizer.json", bundled::TOKENIZER),
            ("config.json", bundled::CONFIG),
        ] {
            let sha: String = sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(meta["files"][name].as_str(), Some(sha.as_str()), "{name}");
        }
        let model = StaticEmbedder::bundled().unwrap();
        assert_eq!(model.dim(), 256);
        assert_eq!(model.model_id(), StaticEmbedder::bundled_id());
        // The id names the weights as hashing them would.
        assert_eq!(model.model_id(), format!("minilm-code-static@{}", weights_digest(bundled::WEIGHTS)));
        let texts: Vec<String> = [
            "retry a request with exponential backoff",
            "fn retry_with_backoff(request: Request, attempts: u32) sleep delay doubles",
            "def render_thumbnail(image, width, height) resize picture",
        ]
        .map(str::to_owned)
        .to_vec();
        let v = model.embed(&texts);
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.1, "{} vs {}", cos(&v[0], &v[1]), cos(&v[0], &v[2]));
    }

    fn open(dir: &Path, threshold: usize) -> LocalVectorIndex {
        let options = VectorOptions { ann_threshold: threshold, ..VectorOptions::default() };
        LocalVectorIndex::open(dir, "test-model", 32, options).unwrap()
    }

    #[test]
    fn the_blocked_scan_scores_every_row_bit_for_bit_as_one_row_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = open(dir.path(), usize::MAX);
        let mut docs = docs(203, 32);
        // A row of zeros against a query of negative values: products of
        // negative zero, whose sum's sign depends on where it starts.
        docs[5].vector = vec![0.0; 32];
        index.upsert(&docs).unwrap();
        index.commit().unwrap();
        // Rows replaced after the commit (few enough for a delta) keep their
        // old slots empty, so a row's place in the entries and its slot part
        // (as after an edit).
        let mut replaced: Vec<VectorDoc> = docs[10..15].to_vec();
        for (i, doc) in replaced.iter_mut().enumerate() {
            doc.vector = unit(500 + i as u64, 32);
        }
        index.upsert(&replaced).unwrap();
        index.commit().unwrap();
        assert!((0..index.len()).any(|row| index.entries[row].slot != row), "slots and rows part");
        for query in [unit(999, 32), vec![-0.25; 32], docs[7].vector.clone()] {
            let rows: Vec<usize> = (0..index.len()).collect();
            for block in rows.chunks(SCAN_BLOCK) {
                let blocked = index.score_rows(block, &query);
                for (i, row) in block.iter().enumerate() {
                    assert_eq!(blocked[i].to_bits(), index.score_row(*row, &query).to_bits(), "row {row}");
                }
            }
            // A filter that keeps some rows of a block scores those alone.
            let filter = SearchFilter { kinds: vec!["class".into()], ..SearchFilter::default() };
            let hits = index.search_exact(&query, 500, &filter);
            assert_eq!(hits.len(), docs.iter().filter(|d| d.kind == "class").count());
            for hit in &hits {
                let row = (0..index.len()).find(|r| index.id(*r) == hit.id).unwrap();
                assert_eq!(hit.score.to_bits(), index.score_row(row, &query).to_bits(), "{}", hit.id);
            }
        }
    }

    #[test]
    fn exact_search_finds_the_vector_itself_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = open(dir.path(), usize::MAX);
        let docs = docs(200, 32);
        index.upsert(&docs).unwrap();
        index.commit().unwrap();
        let hits = index.search(&docs[42].vector, 3, &SearchFilter::default()).unwrap();
        assert_eq!(hits[0].id, docs[42].id);
        assert!(hits[0].score > 0.99, "{}", hits[0].score);
        assert!(hits[1].score < hits[0].score);
    }

    #[test]
    fn the_same_vectors_always_make_the_same_graph() {
        let docs = docs(600, 32);
        let build = || {
            let dir = tempfile::tempdir().unwrap();
            let mut index = open(dir.path(), 0);
            index.upsert(&docs).unwrap();
            index.commit().unwrap();
            assert!(index.uses_graph());
            (
                std::fs::read(dir.path().join(GRAPH_FILE)).unwrap(),
                index.search(&unit(7, 32), 10, &SearchFilter::default()).unwrap(),
            )
        };
        let (a, b) = (build(), build());
        assert!(a.0 == b.0, "the saved graphs differ");
        assert_eq!(a.1, b.1);
    }

    #[test]
    fn approximate_and_exact_search_agree_on_small_sets() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = open(dir.path(), 0);
        let docs = docs(600, 32);
        index.upsert(&docs).unwrap();
        index.commit().unwrap();
        assert!(index.uses_graph());
        // HNSW is approximate: the graph's hits, re-scored exactly, must be nearly
        // the exact ones.
        let overlap = |a: &[VectorHit], b: &[VectorHit]| a.iter().filter(|h| b.iter().any(|e| e.id == h.id)).count();
        for probe in [0, 17, 99, 300, 599] {
            let query = unit(10_000 + probe, 32);
            let ann = index.search(&query, 10, &SearchFilter::default()).unwrap();
            let exact = index.search_exact(&query, 10, &SearchFilter::default());
            assert!(overlap(&ann, &exact) >= 9, "probe {probe}: {ann:?} vs {exact:?}");
            assert!(ann.windows(2).all(|w| w[0].score >= w[1].score), "probe {probe}: re-scored, best first");
        }
        let filter = SearchFilter { paths_prefix: vec!["f3".into()], kinds: vec!["class".into()], body_only: false };
        let query = unit(5, 32);
        let ann = index.search(&query, 5, &filter).unwrap();
        assert!(overlap(&ann, &index.search_exact(&query, 5, &filter)) >= 4);
        assert!(ann.iter().all(|h| h.path == "f3.py"));
    }

    #[test]
    fn reopening_keeps_rows_and_updates_the_graph_incrementally() {
        let dir = tempfile::tempdir().unwrap();
        let all = docs(300, 32);
        {
            let mut index = open(dir.path(), 100);
            index.upsert(&all[..250]).unwrap();
            index.commit().unwrap();
            assert!(index.uses_graph());
        }
        let mut index = open(dir.path(), 100);
        assert!(index.uses_graph(), "the saved graph matches the rows");
        assert_eq!(index.len(), 250);
        index.delete_paths(&["f0.py".to_owned()]).unwrap();
        index.upsert(&all[250..]).unwrap();
        index.commit().unwrap();
        let reopened = open(dir.path(), 100);
        assert_eq!(reopened.len(), index.len());
        assert!(reopened.entries.iter().all(|e| reopened.names.get(e.path) != "f0.py" || e.key >= 250));
        let query = all[260].vector.clone();
        let hits = reopened.search(&query, 5, &SearchFilter::default()).unwrap();
        assert_eq!(hits[0].id, all[260].id);
        assert_eq!(hits, reopened.search_exact(&query, 5, &SearchFilter::default()));
    }

    #[test]
    fn another_model_starts_over_and_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = open(dir.path(), usize::MAX);
        index.upsert(&docs(10, 32)).unwrap();
        index.commit().unwrap();
        let other = LocalVectorIndex::open(dir.path(), "other-model", 32, VectorOptions::default()).unwrap();
        assert_eq!(other.len(), 0);
        std::fs::write(dir.path().join(ROWS_FILE), b"garbage").unwrap();
        let error = LocalVectorIndex::open(dir.path(), "test-model", 32, VectorOptions::default()).err().unwrap();
        assert!(error.to_string().contains("vectors.bin"), "{error}");
    }

    /// `vectors.bin` as format 01 wrote it (three strings a row).
    fn encode_v1(index: &LocalVectorIndex) -> Vec<u8> {
        let mut out = MAGIC_V1.to_vec();
        let put_str = |out: &mut Vec<u8>, s: &str| {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        };
        put_str(&mut out, &index.model_id);
        out.extend_from_slice(&(index.dim as u32).to_le_bytes());
        out.extend_from_slice(&index.next_key.to_le_bytes());
        out.extend_from_slice(&index.generation.to_le_bytes());
        out.extend_from_slice(&(index.entries.len() as u64).to_le_bytes());
        for (row, entry) in index.entries.iter().enumerate() {
            out.extend_from_slice(&entry.key.to_le_bytes());
            out.extend_from_slice(&index.scales[entry.slot].to_le_bytes());
            put_str(&mut out, &index.id(row));
            for span in [entry.path, entry.kind] {
                put_str(&mut out, index.names.get(span));
            }
        }
        for entry in &index.entries {
            out.extend_from_slice(index.rows.row(entry.slot, index.dim));
        }
        out
    }

    #[test]
    fn the_compact_format_round_trips_and_the_first_one_is_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut all = docs(40, 32);
        // Ids that share nothing, all of the one before, or stop inside a character.
        all[3].id = "other://ä/β".into();
        all[4].id = "other://ä/β".into();
        all[5].id = "other://ä/γ#é".into();
        all[6].id = String::new();
        all[7].path = "dir/ü.py".into();
        let names = |index: &LocalVectorIndex| -> Vec<(u64, String, String, String)> {
            let mut rows: Vec<_> = index
                .entries
                .iter()
                .enumerate()
                .map(|(row, e)| {
                    (e.key, index.id(row).into_owned(), index.names.get(e.path).into(), index.names.get(e.kind).into())
                })
                .collect();
            rows.sort();
            rows
        };
        let (expected, v1) = {
            let mut index = open(dir.path(), 1000);
            // Upserted twice: the second replaces the first.
            index.upsert(&all).unwrap();
            index.upsert(&all[..5]).unwrap();
            index.commit().unwrap();
            (names(&index), encode_v1(&index))
        };
        let reopened = open(dir.path(), 1000);
        assert_eq!(names(&reopened), expected);
        let query = unit(3, 32);
        let hits = reopened.search(&query, 40, &SearchFilter::default()).unwrap();
        std::fs::write(dir.path().join(ROWS_FILE), &v1).unwrap();
        let old = open(dir.path(), 1000);
        assert_eq!(names(&old), expected);
        assert_eq!(old.search(&query, 40, &SearchFilter::default()).unwrap(), hits);
        // The compact file is smaller than the first format's for the same rows.
        assert!(std::fs::read(dir.path().join(ROWS_FILE)).unwrap().len() == v1.len());
        assert!(encode(&old).len() < v1.len());
    }

    #[test]
    fn damaged_files_are_repaired_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let options = VectorOptions { ann_threshold: 100, ..VectorOptions::default() };
        let reopen = || LocalVectorIndex::open_or_reset(dir.path(), "test-model", 32, options).unwrap();
        let all = docs(300, 32);
        let query = unit(7, 32);
        let (before, graph_bytes) = {
            let mut index = open(dir.path(), 100);
            index.upsert(&all).unwrap();
            index.commit().unwrap();
            (index.search(&query, 10, &SearchFilter::default()).unwrap(), std::fs::read(dir.path().join(GRAPH_FILE)))
        };
        let graph_bytes = graph_bytes.unwrap();
        // What a killed commit leaves: a process of a pid no system reaches.
        let killed = [".vectors.bin.tmp-4000000000", ".hnsw.generation.tmp-4000000000"];
        for name in TEMPORARY_FILES.iter().chain(&killed) {
            std::fs::write(dir.path().join(name), b"half-written").unwrap();
        }
        let (_, reported) = reopen();
        assert!(reported.is_none());
        assert!(
            TEMPORARY_FILES.iter().chain(&killed).all(|name| !dir.path().join(name).exists()),
            "leftovers are removed"
        );
        // A damaged or missing graph is rebuilt from the rows, the same graph as before.
        for damage in [&b""[..], &graph_bytes[..graph_bytes.len() / 2], b"garbage"] {
            std::fs::write(dir.path().join(GRAPH_FILE), damage).unwrap();
            let (index, reported) = reopen();
            assert!(matches!(reported, Some(SearchError::Graph { .. })), "{reported:?}");
            assert!(index.uses_graph() && index.len() == 300);
            assert_eq!(index.search(&query, 10, &SearchFilter::default()).unwrap(), before);
            assert!(std::fs::read(dir.path().join(GRAPH_FILE)).unwrap() == graph_bytes, "the graph differs");
        }
        std::fs::remove_file(dir.path().join(GRAPH_FILE)).unwrap();
        std::fs::remove_file(dir.path().join(GRAPH_GENERATION_FILE)).unwrap();
        let (index, reported) = reopen();
        assert!(reported.is_none() && index.uses_graph(), "a missing graph is built without complaint");
        // Damaged rows: the index starts empty, graph and all, for the caller to refill.
        let rows = std::fs::read(dir.path().join(ROWS_FILE)).unwrap();
        std::fs::write(dir.path().join(ROWS_FILE), &rows[..rows.len() - 1]).unwrap();
        let (mut index, reported) = reopen();
        assert!(matches!(reported, Some(SearchError::Corrupt { .. })), "{reported:?}");
        assert!(index.is_empty() && !index.uses_graph());
        assert!(!dir.path().join(GRAPH_FILE).exists());
        index.upsert(&all).unwrap();
        index.commit().unwrap();
        assert_eq!(index.search(&query, 10, &SearchFilter::default()).unwrap(), before);
        // Another model's vectors are no damage.
        let (other, reported) = LocalVectorIndex::open_or_reset(dir.path(), "other", 32, options).unwrap();
        assert!(reported.is_none() && other.is_empty());
    }

    #[test]
    fn insert_adds_like_upsert_into_an_empty_index_and_a_bad_batch_adds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let all = docs(60, 32);
        let mut inserted = open(&dir.path().join("a"), 1000);
        inserted.insert(&all).unwrap();
        let mut upserted = open(&dir.path().join("b"), 1000);
        upserted.upsert(&all).unwrap();
        let query = unit(11, 32);
        let filter = SearchFilter::default();
        assert_eq!(inserted.search(&query, 60, &filter).unwrap(), upserted.search(&query, 60, &filter).unwrap());
        let mut bad = docs(3, 32);
        bad[2].vector.pop();
        assert!(inserted.insert(&bad).is_err());
        assert_eq!(inserted.len(), 60, "nothing of the bad batch was added");
    }

    #[test]
    fn rows_past_the_memory_share_are_spilled_read_alike_and_gone_after_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let all = docs(1090, 32);
        let mut index = open(dir.path(), usize::MAX);
        index.insert(&all[..1000]).unwrap();
        let spilled = index.rows.spill.as_ref().map_or(0, |spill| spill.slots);
        assert!(spilled > 0 && index.rows.added.len() < SPILL_BYTES, "spilled {spilled}");
        // Searched before the commit (spilled rows through their map), after
        // it (the base file) and reopened: the same answers.
        let before = answers(&index);
        index.commit().unwrap();
        assert!(index.rows.spill.is_none() && index.rows.added.is_empty(), "the base file holds the rows now");
        assert_eq!(answers(&index), before);
        assert_eq!(answers(&open(dir.path(), usize::MAX)), before);
        // A delta (under a tenth of the base) whose rows were spilled too.
        index.upsert(&all[1000..]).unwrap();
        assert!(index.rows.spill.is_some());
        let after = answers(&index);
        index.commit().unwrap();
        assert!(dir.path().join(DELTA_FILE).exists(), "a delta, not a new base");
        assert_eq!(answers(&index), after);
        assert_eq!(answers(&open(dir.path(), usize::MAX)), after);
    }

    #[test]
    fn ids_kept_as_their_rest_after_the_path_and_whole_ones_read_back_alike() {
        let dir = tempfile::tempdir().unwrap();
        let mut docs = docs(40, 32);
        // Ids of other forms: no path in it, a path under another prefix,
        // the path itself.
        docs[3].id = "plain-id".into();
        docs[4].id = format!("other://x/{}#s4", docs[4].path);
        docs[5].id = docs[5].path.clone();
        let mut index = open(dir.path(), usize::MAX);
        index.insert(&docs).unwrap();
        assert!(matches!(index.entries[0].id, IdSpan::AfterPath(_)));
        assert!(matches!(index.entries[3].id, IdSpan::Whole(_)));
        let ids =
            |index: &LocalVectorIndex| -> Vec<String> { (0..index.len()).map(|r| index.id(r).into_owned()).collect() };
        let expected: Vec<String> = docs.iter().map(|d| d.id.clone()).collect();
        assert_eq!(ids(&index), expected);
        let before = answers(&index);
        index.commit().unwrap();
        assert_eq!(ids(&index), expected);
        assert_eq!(answers(&open(dir.path(), usize::MAX)), before);
        // Replacing by id finds the rows whatever form their id was kept in.
        index.upsert(&docs[2..6]).unwrap();
        assert_eq!(index.len(), 40);
    }

    /// A document of the generated histories: id `n`, in file `f{n % 9}.py`.
    fn numbered(n: usize, seed: u64) -> VectorDoc {
        VectorDoc {
            id: format!("uko://r/f{}.py#s{n:03}", n % 9),
            path: format!("f{}.py", n % 9),
            kind: if n.is_multiple_of(2) { "function" } else { "class" }.to_owned(),
            vector: unit(seed, 32),
        }
    }

    /// Every hit of a few queries with and without a filter, scores as bits.
    fn answers(index: &LocalVectorIndex) -> Vec<Vec<(String, String, u32)>> {
        let filters = [SearchFilter::default(), SearchFilter { paths_prefix: vec!["f3".into()], ..Default::default() }];
        let mut out = vec![vec![(String::new(), String::new(), index.len() as u32)]];
        for seed in [1, 77, 500] {
            for filter in &filters {
                let hits = index.search(&unit(seed, 32), 1000, filter).unwrap();
                out.push(hits.into_iter().map(|h| (h.id, h.path, h.score.to_bits())).collect());
            }
        }
        out
    }

    /// One step of a vector index's history.
    #[derive(Clone, Debug)]
    enum Step {
        Upsert(Vec<(usize, u64)>),
        DeletePath(usize),
        Commit,
        Reopen,
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            4 => proptest::collection::vec((0..400usize, 0..10_000u64), 1..8).prop_map(Step::Upsert),
            1 => (0..9usize).prop_map(Step::DeletePath),
            3 => Just(Step::Commit),
            1 => Just(Step::Reopen),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 32, ..Default::default() })]

        /// An index changed by a history of upserts, deletions, commits and
        /// reopenings (so through deltas over a base, and new bases) answers
        /// as a fresh index of the vectors it ends with, reopened or not.
        #[test]
        fn an_edited_index_answers_as_a_fresh_one(
            first in 100..400usize,
            steps in proptest::collection::vec(step(), 1..30),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut index = open(&dir.path().join("edited"), 1000);
            let mut held: std::collections::BTreeMap<String, VectorDoc> = std::collections::BTreeMap::new();
            let docs: Vec<VectorDoc> = (0..first).map(|n| numbered(n, n as u64 + 1)).collect();
            index.insert(&docs).unwrap();
            index.commit().unwrap();
            held.extend(docs.into_iter().map(|d| (d.id.clone(), d)));
            let mut pending = held.clone();
            for step in steps {
                match step {
                    Step::Upsert(batch) => {
                        // Ids unique within a batch, as a sync sends them.
                        let mut seen = std::collections::HashSet::new();
                        let docs: Vec<VectorDoc> = batch
                            .iter()
                            .filter(|(n, _)| seen.insert(*n))
                            .map(|(n, seed)| numbered(*n, *seed))
                            .collect();
                        index.upsert(&docs).unwrap();
                        pending.extend(docs.into_iter().map(|d| (d.id.clone(), d)));
                    }
                    Step::DeletePath(n) => {
                        let path = format!("f{n}.py");
                        index.delete_paths(std::slice::from_ref(&path)).unwrap();
                        pending.retain(|_, d| d.path != path);
                    }
                    Step::Commit => {
                        index.commit().unwrap();
                        held = pending.clone();
                    }
                    Step::Reopen => {
                        drop(index);
                        index = open(&dir.path().join("edited"), 1000);
                        pending = held.clone();
                    }
                }
            }
            index.commit().unwrap();
            let mut fresh = open(&dir.path().join("fresh"), 1000);
            fresh.insert(&pending.into_values().collect::<Vec<_>>()).unwrap();
            fresh.commit().unwrap();
            proptest::prop_assert_eq!(answers(&index), answers(&fresh));
            drop(index);
            proptest::prop_assert_eq!(answers(&open(&dir.path().join("edited"), 1000)), answers(&fresh));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config { cases: 24, ..Default::default() })]

        /// The base file's ids, decoded on demand in any order (one cursor
        /// carried from each to the next, or a fresh one each time), are the
        /// ids written, whatever they share with the ones before.
        #[test]
        fn base_ids_decode_in_any_order(
            ids in proptest::collection::btree_set("(uko://r/)?[ab/#ä]{0,6}", 1..80),
            order in proptest::collection::vec(0..80usize, 0..120),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let ids: Vec<String> = ids.into_iter().collect();
            {
                let mut index = open(dir.path(), usize::MAX);
                let docs: Vec<VectorDoc> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, id)| VectorDoc {
                        id: id.clone(),
                        path: "p.py".into(),
                        kind: "function".into(),
                        vector: unit(i as u64 + 1, 32),
                    })
                    .collect();
                index.insert(&docs).unwrap();
                index.commit().unwrap();
            }
            let index = open(dir.path(), usize::MAX);
            proptest::prop_assert!(index.base_ids.is_some());
            let mut cursor = IdCursor::default();
            for row in order.into_iter().map(|i| i % ids.len()).chain(0..ids.len()) {
                let entry = index.entries[row];
                proptest::prop_assert_eq!(index.id_with(&entry, &mut cursor), ids[row].as_str());
                proptest::prop_assert_eq!(index.id(row), ids[row].as_str());
                proptest::prop_assert_eq!(entry.id_hash, id_hash(&ids[row]));
            }
        }
    }

    /// A small change writes a delta and leaves the base alone; past the
    /// share, a commit writes a new base and removes the delta; a delta
    /// written over another base (a commit killed before removing it) is
    /// ignored; a base of the format before is rewritten on the next commit.
    #[test]
    fn small_commits_write_a_delta_and_large_ones_a_new_base() {
        let dir = tempfile::tempdir().unwrap();
        let (base, delta) = (dir.path().join(ROWS_FILE), dir.path().join(DELTA_FILE));
        let mut index = open(dir.path(), 1000);
        index.insert(&(0..300).map(|n| numbered(n, n as u64)).collect::<Vec<_>>()).unwrap();
        index.commit().unwrap();
        let first_base = std::fs::read(&base).unwrap();
        assert!(!delta.exists());
        index.upsert(&[numbered(5, 9_000), numbered(1_000, 9_001)]).unwrap();
        index.commit().unwrap();
        assert_eq!(std::fs::read(&base).unwrap(), first_base, "the base is left as it was");
        let old_delta = std::fs::read(&delta).unwrap();
        assert!(old_delta.len() < first_base.len() / 20, "{} bytes", old_delta.len());
        let expected = answers(&index);
        assert_eq!(answers(&open(dir.path(), 1000)), expected);
        // Past the share: a new base, no delta.
        index.upsert(&(0..40).map(|n| numbered(n, n as u64 + 50_000)).collect::<Vec<_>>()).unwrap();
        index.commit().unwrap();
        assert!(!delta.exists());
        assert_ne!(std::fs::read(&base).unwrap(), first_base);
        let expected = answers(&index);
        // The delta of the base before, put back, is ignored.
        std::fs::write(&delta, &old_delta).unwrap();
        assert_eq!(answers(&open(dir.path(), 1000)), expected);
        // A base of the format before takes a delta only once rewritten.
        let mut bytes = std::fs::read(&base).unwrap();
        bytes[..8].copy_from_slice(MAGIC_V2);
        std::fs::write(&base, &bytes).unwrap();
        std::fs::remove_file(&delta).unwrap();
        let mut index = open(dir.path(), 1000);
        assert_eq!(answers(&index), expected);
        index.delete_paths(&["f1.py".to_owned()]).unwrap();
        index.commit().unwrap();
        assert_eq!(&std::fs::read(&base).unwrap()[..8], MAGIC);
        assert!(!delta.exists());
        // A damaged delta is damage: the index starts over.
        index.upsert(&[numbered(7, 1)]).unwrap();
        index.commit().unwrap();
        let written = std::fs::read(&delta).unwrap();
        std::fs::write(&delta, &written[..written.len() - 3]).unwrap();
        drop(index);
        let options = VectorOptions { ann_threshold: 1000, ..VectorOptions::default() };
        let (index, damage) = LocalVectorIndex::open_or_reset(dir.path(), "test-model", 32, options).unwrap();
        assert!(matches!(damage, Some(SearchError::Corrupt { .. })), "{damage:?}");
        assert!(index.is_empty());
    }

    #[test]
    fn upsert_replaces_by_id_and_checks_the_length() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = open(dir.path(), usize::MAX);
        let mut d = docs(3, 32);
        index.upsert(&d).unwrap();
        d[1].vector = unit(99, 32);
        index.upsert(&d[1..2]).unwrap();
        index.commit().unwrap();
        assert_eq!(index.len(), 3);
        assert_eq!(index.search(&d[1].vector, 1, &SearchFilter::default()).unwrap()[0].id, d[1].id);
        let bad = VectorDoc { vector: vec![1.0], ..d[0].clone() };
        assert!(matches!(index.upsert(&[bad]), Err(SearchError::Dimension { .. })));
    }
}
