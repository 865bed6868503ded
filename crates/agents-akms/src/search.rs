//! The knowledge store as search documents: every node of the compiled graph,
//! with its body and its `content_ref` file, for the shared search engine
//! (`agents_search`'s text backends, the layer the context side uses), so a
//! loadout can retrieve passages scoped to a node set.
//!
//! A node's text is read from the file it was compiled from: the Markdown body
//! after its frontmatter, then the `content_ref` file when it exists inside the
//! node's layer (the same confinement the compiler applies). Documents are
//! sorted by id; reading never writes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::graph::CompiledGraph;
use agents_search::vector::Embedder;
use agents_search::{SearchError, SearchFilter, TextBackend, TextBackendKind, TextDoc};

use crate::bounded;
use crate::config::LimitsConfig;
use crate::schema::Layer;
use crate::vault::{Layout, confine, markdown_files};
use crate::yaml::{parse_mapping, split_frontmatter};

/// The kind every knowledge document is indexed under.
pub const KNOWLEDGE_KIND: &str = "knowledge";

/// The search documents of the nodes of `graph` (the compiled node-link
/// JSON), read from the sources of `layout`. Session nodes are materialised
/// by the overlay and have no source file: they are indexed with their title
/// and tags only.
pub fn documents(layout: &Layout, graph: &CompiledGraph) -> Vec<TextDoc> {
    let bodies = bodies(layout);
    let mut docs: Vec<TextDoc> = graph
        .nodes()
        .iter()
        .map(|node| {
            let id = node.id();
            let text = |key: &str| node.text(key).unwrap_or_default().to_owned();
            let tags: Vec<&str> = node.tags().collect();
            let (path, body) = bodies.get(id).cloned().unwrap_or_default();
            TextDoc {
                id: id.to_owned(),
                path,
                name: text("title"),
                kind: KNOWLEDGE_KIND.to_owned(),
                signature: tags.join(" "),
                doc: text("domain"),
                body,
            }
        })
        .collect();
    docs.sort_by(|a, b| a.id.cmp(&b.id));
    docs
}

/// Node id -> (the node file's path as shown to users, its text), over the
/// three layers; the first file of an id wins, as in the compiler.
fn bodies(layout: &Layout) -> BTreeMap<String, (String, String)> {
    let knowledge = layout.knowledge();
    let layers = [
        (layout.global_vault.clone(), Layer::Global),
        (layout.local_nodes(), Layer::Local),
        (layout.code_mirror(), Layer::CodeMirror),
    ];
    // Files are read as the compiler reads them: regular files inside their
    // layer, within the config's caps; anything else is left out.
    let limits = crate::compile::read_config(layout).map(|c| c.limits).unwrap_or_default();
    let mut out = BTreeMap::new();
    for (root, layer) in layers {
        let ref_root: &Path = if layer == Layer::Global { &layout.global_vault } else { &knowledge };
        for file in markdown_files(&root).0 {
            let Some((id, text)) = node_text(&file, ref_root, &limits) else { continue };
            out.entry(id).or_insert_with(|| (display(layout, layer, &file), text));
        }
    }
    out
}

/// A node file's path as users see it: under the repository relative to it,
/// in the global vault as `global-vault/<path in the vault>` (machine-independent).
fn display(layout: &Layout, layer: Layer, file: &Path) -> String {
    let shown = match (layer, file.strip_prefix(&layout.global_vault)) {
        (Layer::Global, Ok(inside)) => Path::new("global-vault").join(inside),
        _ => layout.display(file),
    };
    shown.to_string_lossy().replace('\\', "/")
}

/// The id and the text (body, then the content_ref file) of the node in `file`.
fn node_text(file: &Path, ref_root: &Path, limits: &LimitsConfig) -> Option<(String, String)> {
    // `markdown_files` keeps the file inside its layer.
    let source = bounded::read_text(file, None, limits.node_cap()).ok()?;
    let front = split_frontmatter(&source)?;
    let map = parse_mapping(file, front.yaml, front.first_line).ok()?;
    let field = |key: &str| map.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let id = field("id")?;
    let mut text = front.body.trim().to_owned();
    if let Some(content_ref) = field("content_ref")
        && let Ok(Some(path)) = confine(ref_root, &content_ref)
        && let Ok(content) = bounded::read_text(&path, Some(ref_root), limits.content_ref_cap())
    {
        // A content file with its own frontmatter contributes its body.
        let body = split_frontmatter(&content).map_or(content.as_str(), |f| f.body).trim().to_owned();
        if !body.is_empty() {
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            text.push_str(&body);
        }
    }
    Some((id, text))
}

/// Where a repository's knowledge search index lives under a search root:
/// one directory per repository, named by a hash of its path.
pub fn index_dir(search_root: &Path, repo_root: &Path) -> PathBuf {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(repo_root.to_string_lossy().as_bytes());
    let name = agents_core::digest::hex(&digest[..8]);
    search_root.join("knowledge").join(name)
}

/// The file in an index directory naming its live generation.
const CURRENT: &str = "CURRENT";

/// Rebuilds the knowledge search index in `dir` (engine `kind`) from `docs`
/// without readers ever seeing it missing or half built: the new index is
/// built in a fresh generation folder `dir/g-<time>-<pid>/`, then
/// `dir/CURRENT` is replaced atomically to name it, then every other entry
/// of `dir` (older generations, what a killed rebuild left, an index of the
/// old in-place layout) is removed. The caller holds the repository's
/// knowledge lock, so rebuilds never race.
pub fn rebuild_index(dir: &Path, kind: TextBackendKind, docs: &[TextDoc]) -> Result<(), SearchError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| SearchError::Io { path, action, source }
    };
    std::fs::create_dir_all(dir).map_err(io("create", dir))?;
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let generation = format!("g-{nanos:x}-{}", std::process::id());
    let target = dir.join(&generation);
    {
        let mut backend = agents_search::open_text_backend(kind, &target)?;
        backend.upsert(docs)?;
        backend.commit()?;
    }
    let current = dir.join(CURRENT);
    agents_fs::atomic_write(&current, generation.as_bytes()).map_err(io("write", &current))?;
    for entry in std::fs::read_dir(dir).map_err(io("read", dir))?.flatten() {
        let name = entry.file_name();
        if name == CURRENT || name == generation.as_str() {
            continue;
        }
        let path = entry.path();
        let removed = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
        if let Err(e) = removed {
            tracing::debug!(path = %path.display(), %e, "cannot remove an old knowledge index");
        }
    }
    Ok(())
}

/// Opens the knowledge search index in `dir` for reading only (no writer,
/// so no writer lock: any number of searches run beside each other and
/// beside a rebuild). `None` when there is no index. A rebuild that removes
/// the generation being opened makes the open retry on the new one; an
/// index that is there but cannot be read is an error. A reader that may
/// run beside a rebuild searches through [`with_index`].
pub fn open_index(dir: &Path, kind: TextBackendKind) -> Result<Option<Box<dyn TextBackend>>, SearchError> {
    Ok(open_current(dir, kind)?.map(|(backend, _)| backend))
}

/// Runs `f` on the knowledge search index in `dir` (`None` when there is
/// none), again on the new generation when a rebuild retired the one `f`
/// was reading (its files may go while it reads them).
pub fn with_index<T>(
    dir: &Path,
    kind: TextBackendKind,
    f: impl Fn(&dyn TextBackend) -> Result<T, SearchError>,
) -> Result<Option<T>, SearchError> {
    for _ in 0..8 {
        let Some((backend, generation)) = open_current(dir, kind)? else { return Ok(None) };
        match f(backend.as_ref()) {
            Ok(value) => return Ok(Some(value)),
            Err(error) if read_current(dir)? == generation => return Err(error),
            Err(_) => continue,
        }
    }
    Err(changing(dir))
}

fn changing(dir: &Path) -> SearchError {
    SearchError::Io {
        path: dir.join(CURRENT),
        action: "open",
        source: std::io::Error::other("the index kept changing while it was read; try again"),
    }
}

/// The generation `dir/CURRENT` names, `None` without the file.
fn read_current(dir: &Path) -> Result<Option<String>, SearchError> {
    let current = dir.join(CURRENT);
    match std::fs::read_to_string(&current) {
        Ok(text) => Ok(Some(text.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SearchError::Io { path: current, action: "read", source }),
    }
}

/// The live index and the generation it is (`None`: the old in-place layout).
#[allow(clippy::type_complexity)]
fn open_current(
    dir: &Path,
    kind: TextBackendKind,
) -> Result<Option<(Box<dyn TextBackend>, Option<String>)>, SearchError> {
    let mut generation = read_current(dir)?;
    for _ in 0..8 {
        let Some(name) = &generation else {
            // The in-place layout of earlier versions: the index is `dir`.
            let old = ["meta.json", "fts5.db"].iter().any(|f| dir.join(f).is_file());
            return match old {
                true => Ok(Some((agents_search::open_text_reader(kind, dir)?, None))),
                false => Ok(None),
            };
        };
        if name.is_empty() || !Path::new(name).components().all(|c| matches!(c, std::path::Component::Normal(_))) {
            return Err(SearchError::Io {
                path: dir.join(CURRENT),
                action: "read",
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, format!("names `{name}`, not a folder")),
            });
        }
        match agents_search::open_text_reader(kind, &dir.join(name)) {
            Ok(backend) => return Ok(Some((backend, generation))),
            Err(error) => {
                let now = read_current(dir)?;
                if now == generation {
                    return Err(error);
                }
                generation = now;
            }
        }
    }
    Err(changing(dir))
}

/// One passage the search layer retrieved: a paragraph of a node's text.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Passage {
    pub node: String,
    /// The node file's path as users see it (see [`documents`]).
    pub path: String,
    /// 1-based line of the paragraph in the node's text (body, then content_ref).
    pub line: u32,
    pub text: String,
}

/// Longest passage kept, in characters.
const PASSAGE_CHARS: usize = 600;

/// The paragraphs of `body` (blank-line separated) with their 1-based lines.
pub fn paragraphs(body: &str) -> Vec<(u32, &str)> {
    let mut out = Vec::new();
    let mut start: Option<(u32, usize)> = None;
    let mut offset = 0usize;
    let mut end = 0usize;
    for (i, line) in body.split_inclusive('\n').enumerate() {
        let blank = line.trim().is_empty();
        match (blank, start) {
            (false, None) => start = Some((i as u32 + 1, offset)),
            (true, Some((n, from))) => {
                out.push((n, body[from..end].trim()));
                start = None;
            }
            _ => {}
        }
        offset += line.len();
        if !blank {
            end = offset;
        }
    }
    if let Some((n, from)) = start {
        out.push((n, body[from..end].trim()));
    }
    out
}

/// The paragraph of `body` holding the most of `words` (the first on a tie),
/// cut to 600 characters, with its line; `None` for an empty body.
pub fn best_passage(body: &str, words: &[String]) -> Option<(u32, String)> {
    let mut best: Option<(u32, &str, usize)> = None;
    for (line, paragraph) in paragraphs(body) {
        let lower = paragraph.to_lowercase();
        let hits = words.iter().filter(|w| lower.contains(w.as_str())).count();
        if best.is_none_or(|(_, _, most)| hits > most) {
            best = Some((line, paragraph, hits));
        }
    }
    let (line, paragraph, _) = best?;
    let mut text: String = paragraph.chars().take(PASSAGE_CHARS).collect();
    if paragraph.chars().count() > PASSAGE_CHARS {
        text.push('…');
    }
    Some((line, text))
}

/// Cosine a paragraph needs to bring its node in on meaning alone (without
/// a BM25 hit), by default (`loadout.semantic_floor` in
/// `propagation_config.yaml` sets it).
pub const SEMANTIC_FLOOR: f32 = 0.35;

/// The search layer of a loadout (the spec's qmd role), always scoped to
/// `nodes` (never an open-ended search): BM25 over the shared text index
/// finds the matching nodes and each one's paragraph holding most of the
/// query's words. With an embedding model, every paragraph of the node set is
/// also compared with the query: a node's passage is its paragraph with the
/// best cosine plus word share, and a node without a BM25 hit joins when a
/// paragraph reaches `semantic_floor` ([`SEMANTIC_FLOOR`] by default). Sorted by (path, line) whatever the
/// engines' ranking (NFR-D04).
pub fn scoped_passages(
    backend: &dyn TextBackend,
    embedder: Option<&dyn Embedder>,
    docs: &BTreeMap<String, TextDoc>,
    nodes: &[String],
    query: &str,
    semantic_floor: f32,
) -> Result<Vec<Passage>, SearchError> {
    let deep = (backend.doc_count()? as usize).max(nodes.len());
    let hits: std::collections::BTreeSet<String> = backend
        .search(query, deep, &SearchFilter::default())?
        .into_iter()
        .map(|hit| hit.id)
        .filter(|id| nodes.contains(id))
        .collect();
    let words = agents_search::code_tokens(query);
    let mut out: Vec<Passage> = Vec::new();
    match embedder {
        None => {
            for id in &hits {
                let Some(doc) = docs.get(id) else { continue };
                let Some((line, text)) = best_passage(&doc.body, &words) else { continue };
                out.push(Passage { node: id.clone(), path: doc.path.clone(), line, text });
            }
        }
        Some(embedder) => {
            let mut texts = vec![query.to_owned()];
            let mut owners: Vec<(&str, u32, &str)> = Vec::new();
            for id in nodes {
                let Some(doc) = docs.get(id) else { continue };
                for (line, paragraph) in paragraphs(&doc.body) {
                    owners.push((id.as_str(), line, paragraph));
                    texts.push(paragraph.to_owned());
                }
            }
            let vectors = embedder.embed(&texts);
            let Some((query_vector, rest)) = vectors.split_first() else { return Ok(out) };
            let mut best: BTreeMap<&str, (f32, f32, u32, &str)> = BTreeMap::new();
            for ((id, line, paragraph), vector) in owners.iter().zip(rest) {
                let cosine: f32 = query_vector.iter().zip(vector).map(|(a, b)| a * b).sum();
                let lower = paragraph.to_lowercase();
                let share =
                    words.iter().filter(|w| lower.contains(w.as_str())).count() as f32 / words.len().max(1) as f32;
                let score = cosine + share;
                let entry = best.entry(id).or_insert((f32::MIN, cosine, *line, paragraph));
                if score > entry.0 {
                    *entry = (score, cosine.max(entry.1), *line, paragraph);
                } else {
                    entry.1 = entry.1.max(cosine);
                }
            }
            for (id, (_, top_cosine, line, paragraph)) in best {
                if !hits.contains(id) && top_cosine < semantic_floor {
                    continue;
                }
                let Some(doc) = docs.get(id) else { continue };
                let mut text: String = paragraph.chars().take(PASSAGE_CHARS).collect();
                if paragraph.chars().count() > PASSAGE_CHARS {
                    text.push('…');
                }
                out.push(Passage { node: id.to_owned(), path: doc.path.clone(), line, text });
            }
        }
    }
    out.sort_by(|a, b| (&a.path, a.line, &a.node).cmp(&(&b.path, b.line, &b.node)));
    out.dedup();
    Ok(out)
}

/// [`scoped_passages`] through a cache under `knowledge/cache/search/`, keyed
/// by (graph_version, a hash of the model, the query and the node set) (NFR-D05): the
/// same inputs read the same file. The cache is written atomically; a file
/// that cannot be read is recomputed.
#[allow(clippy::too_many_arguments)]
pub fn cached_passages(
    layout: &Layout,
    graph_version: &str,
    backend: &dyn TextBackend,
    embedder: Option<&dyn Embedder>,
    docs: &BTreeMap<String, TextDoc>,
    nodes: &[String],
    query: &str,
    semantic_floor: f32,
) -> Result<Vec<Passage>, SearchError> {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&str> = nodes.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    // The model and the cut-off are part of the key: other passages.
    let model = embedder.map_or("bm25", |e| e.model_id());
    let key = format!("{model}\n{semantic_floor}\n{query}\n{}", sorted.join("\n"));
    let digest = Sha256::digest(key.as_bytes());
    let hash = agents_core::digest::hex(&digest[..8]);
    let path = layout.knowledge().join("cache").join("search").join(format!("{graph_version}-{hash}.json"));
    // A cache entry is a regular file inside knowledge/ (a FIFO planted under
    // its name is refused, not waited on); anything else is recomputed.
    let cap = bounded::Cap::new(bounded::MAX_OVERLAY_BYTES, "a fixed limit for cached passages");
    if let Ok(text) = bounded::read_text(&path, Some(&layout.knowledge()), cap)
        && let Ok(passages) = serde_json::from_str::<Vec<Passage>>(&text)
    {
        return Ok(passages);
    }
    let passages = scoped_passages(backend, embedder, docs, nodes, query, semantic_floor)?;
    let mut json = serde_json::to_string_pretty(&passages).unwrap_or_default();
    json.push('\n');
    agents_fs::atomic_write(&path, json.as_bytes()).map_err(|source| SearchError::Io {
        path: path.clone(),
        action: "write the passage cache",
        source,
    })?;
    Ok(passages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn node_bodies_and_content_refs_become_search_documents() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("repo"), tmp.path().join("global"));
        write(
            &layout.global_vault.join("green.md"),
            "---\nid: green\ncontent_ref: docs/green.md\n---\nThe Green operator in Fourier space.\n",
        );
        write(&layout.global_vault.join("docs/green.md"), "Derivation: convolution becomes a product.\n");
        write(
            &layout.local_nodes().join("eps.md"),
            "---\nid: eps\ncontent_ref: ../../../etc/passwd\n---\nRegularise.\n",
        );
        let graph = serde_json::json!({"nodes": [
            {"id": "green", "title": "Green Operator", "tags": ["green-operator", "spectral"], "domain": "physics"},
            {"id": "eps", "title": "Epsilon", "tags": ["numerics"]},
            {"id": "session-1", "title": "Session: 1", "tags": ["fft"]}
        ]});
        let graph = CompiledGraph::from_value(graph).unwrap();
        let docs = documents(&layout, &graph);
        let ids: Vec<&str> = docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["eps", "green", "session-1"]);
        let green = &docs[1];
        assert_eq!(
            (docs[0].path.as_str(), green.path.as_str()),
            ("knowledge/local-nodes/eps.md", "global-vault/green.md")
        );
        assert_eq!(green.body, "The Green operator in Fourier space.\n\nDerivation: convolution becomes a product.");
        assert_eq!(
            (green.name.as_str(), green.signature.as_str(), green.kind.as_str()),
            ("Green Operator", "green-operator spectral", "knowledge")
        );
        // A content_ref leaving its layer is never read.
        assert_eq!(docs[0].body, "Regularise.");
        // A node without a source file keeps its title and tags.
        assert_eq!((docs[2].body.as_str(), docs[2].name.as_str()), ("", "Session: 1"));
    }

    #[cfg(unix)]
    #[test]
    fn fifo_and_oversized_content_refs_are_left_out_without_hanging() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("repo"), tmp.path().join("global"));
        for (id, target) in [("pipe", "pipe.md"), ("huge", "huge.md"), ("ok", "ok.md")] {
            write(
                &layout.local_nodes().join(format!("{id}.md")),
                &format!("---\nid: {id}\ncontent_ref: {target}\n---\nBody of {id}.\n"),
            );
        }
        crate::bounded::tests::mkfifo(&layout.knowledge().join("pipe.md"));
        crate::bounded::tests::mkfifo(&layout.local_nodes().join("fifo.md"));
        std::fs::File::create(layout.knowledge().join("huge.md")).unwrap().set_len(1 << 30).unwrap();
        write(&layout.knowledge().join("ok.md"), "Content of ok.\n");
        let graph =
            CompiledGraph::from_value(serde_json::json!({"nodes": [{"id": "huge"}, {"id": "ok"}, {"id": "pipe"}]}))
                .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(documents(&layout, &graph)).unwrap());
        let docs = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("no hang");
        let bodies: Vec<(&str, &str)> = docs.iter().map(|d| (d.id.as_str(), d.body.as_str())).collect();
        assert_eq!(
            bodies,
            [("huge", "Body of huge."), ("ok", "Body of ok.\n\nContent of ok."), ("pipe", "Body of pipe.")]
        );
    }

    #[test]
    fn paragraphs_carry_their_first_line() {
        let body = "# T\n\nOne\ntwo\n  \n\nThree\n";
        assert_eq!(paragraphs(body), [(1, "# T"), (3, "One\ntwo"), (7, "Three")]);
        assert_eq!(best_passage(body, &["three".into()]), Some((7, "Three".into())));
        assert_eq!(best_passage("", &[]), None);
    }

    #[test]
    fn nfr_d04_nfr_d05_passages_stay_in_the_node_set_sorted_by_path_and_line_and_cached() {
        let tmp = tempfile::tempdir().unwrap();
        let layout = Layout::new(tmp.path().join("repo"), tmp.path().join("global"));
        let doc = |id: &str, path: &str, body: &str| TextDoc {
            id: id.into(),
            path: path.into(),
            name: id.into(),
            kind: KNOWLEDGE_KIND.into(),
            signature: String::new(),
            doc: String::new(),
            body: body.into(),
        };
        let docs = [
            doc("b", "global-vault/b.md", "Intro.\n\nThe green operator at zero frequency."),
            doc("a", "knowledge/local-nodes/a.md", "Green operator regularisation."),
            doc("c", "global-vault/c.md", "Green operator, outside the node set."),
        ];
        let mut backend =
            agents_search::open_text_backend(TextBackendKind::Tantivy, &tmp.path().join("index")).unwrap();
        backend.upsert(&docs).unwrap();
        backend.commit().unwrap();
        let by_id: BTreeMap<String, TextDoc> = docs.iter().map(|d| (d.id.clone(), d.clone())).collect();
        let nodes = vec!["a".to_owned(), "b".to_owned()];
        let passages =
            scoped_passages(backend.as_ref(), None, &by_id, &nodes, "green operator frequency", SEMANTIC_FLOOR)
                .unwrap();
        let found: Vec<(&str, &str, u32)> =
            passages.iter().map(|p| (p.node.as_str(), p.path.as_str(), p.line)).collect();
        assert_eq!(found, [("b", "global-vault/b.md", 3), ("a", "knowledge/local-nodes/a.md", 1)]);

        // Cached per (graph_version, query): the second call reads the file.
        let first =
            cached_passages(&layout, "v1", backend.as_ref(), None, &by_id, &nodes, "green operator", SEMANTIC_FLOOR)
                .unwrap();
        let dir = layout.knowledge().join("cache").join("search");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(files.len(), 1);
        assert!(files[0].file_name().unwrap().to_string_lossy().starts_with("v1-"));
        let mut edited = first.clone();
        edited[0].text = "from the cache".into();
        std::fs::write(&files[0], serde_json::to_string(&edited).unwrap()).unwrap();
        let again =
            cached_passages(&layout, "v1", backend.as_ref(), None, &by_id, &nodes, "green operator", SEMANTIC_FLOOR)
                .unwrap();
        assert_eq!(again, edited);
        // Another graph version is another entry.
        let other =
            cached_passages(&layout, "v2", backend.as_ref(), None, &by_id, &nodes, "green operator", SEMANTIC_FLOOR)
                .unwrap();
        assert_eq!(other, first);
        // A FIFO under an entry's name is recomputed, not waited on.
        #[cfg(unix)]
        {
            let v2 = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("v2-"))
                .unwrap();
            std::fs::remove_file(&v2).unwrap();
            crate::bounded::tests::mkfifo(&v2);
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    let got = cached_passages(
                        &layout,
                        "v2",
                        backend.as_ref(),
                        None,
                        &by_id,
                        &nodes,
                        "green operator",
                        SEMANTIC_FLOOR,
                    );
                    tx.send(got.unwrap()).unwrap();
                });
                let got = rx.recv_timeout(std::time::Duration::from_secs(20));
                if got.is_err() {
                    // Unblock the reader so the scope can end, then fail.
                    let _ = std::fs::write(&v2, "[]");
                }
                assert_eq!(got.expect("no hang"), first);
            });
            assert!(v2.is_file(), "the entry is a regular file again");
        }
    }

    fn docs(n: usize) -> Vec<TextDoc> {
        (0..n)
            .map(|i| TextDoc {
                id: format!("node-{i}"),
                path: format!("global-vault/node-{i}.md"),
                name: format!("Node {i}"),
                kind: KNOWLEDGE_KIND.into(),
                signature: String::new(),
                doc: String::new(),
                body: format!("The green operator, variant {i}."),
            })
            .collect()
    }

    #[test]
    fn many_concurrent_searches_all_succeed_and_a_rebuild_beside_them_never_shows_a_missing_index() {
        for kind in TextBackendKind::ALL {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("index");
            assert!(open_index(&dir, kind).unwrap().is_none(), "no index yet");
            rebuild_index(&dir, kind, &docs(3)).unwrap();
            let stop = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|scope| {
                let readers: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| {
                            let mut searches = 0;
                            while searches < 5 || !stop.load(std::sync::atomic::Ordering::Relaxed) {
                                let hits = with_index(&dir, kind, |backend| {
                                    backend.search("green operator", 10, &SearchFilter::default())
                                })
                                .unwrap()
                                .expect("the index is never missing");
                                assert!(hits.len() >= 3, "{kind}: {hits:?}");
                                searches += 1;
                            }
                        })
                    })
                    .collect();
                // A reader holds an index open across rebuilds, too.
                let held = open_index(&dir, kind).unwrap().unwrap();
                for n in 4..8 {
                    rebuild_index(&dir, kind, &docs(n)).unwrap();
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                for reader in readers {
                    reader.join().unwrap();
                }
                assert_eq!(held.doc_count().unwrap(), 3, "{kind}");
            });
            let backend = open_index(&dir, kind).unwrap().unwrap();
            assert_eq!(backend.doc_count().unwrap(), 7, "{kind}");
            // Old generations are gone: CURRENT and the live one are left.
            assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "{kind}");
        }
    }

    #[test]
    fn a_killed_rebuild_leaves_the_live_index_and_the_next_rebuild_clears_its_leftovers() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        rebuild_index(&dir, TextBackendKind::Tantivy, &docs(2)).unwrap();
        // A rebuild killed half-way: a generation never made current, a temporary pointer.
        let mut half = agents_search::open_text_backend(TextBackendKind::Tantivy, &dir.join("g-0-1")).unwrap();
        half.upsert(&docs(1)).unwrap();
        drop(half);
        std::fs::write(dir.join(".CURRENT.tmp-1"), "g-0-1").unwrap();
        let backend = open_index(&dir, TextBackendKind::Tantivy).unwrap().unwrap();
        assert_eq!(backend.search("green", 10, &SearchFilter::default()).unwrap().len(), 2);
        rebuild_index(&dir, TextBackendKind::Tantivy, &docs(3)).unwrap();
        let names: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(!dir.join("g-0-1").exists());
    }

    #[test]
    fn an_index_that_cannot_be_read_is_an_error_not_an_empty_result() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("index");
        rebuild_index(&dir, TextBackendKind::Tantivy, &docs(2)).unwrap();
        let live = std::fs::read_to_string(dir.join("CURRENT")).unwrap();
        std::fs::remove_file(dir.join(&live).join("meta.json")).unwrap();
        assert!(open_index(&dir, TextBackendKind::Tantivy).is_err());
        std::fs::write(dir.join("CURRENT"), "../elsewhere").unwrap();
        assert!(open_index(&dir, TextBackendKind::Tantivy).is_err());
        // The old in-place layout is still read.
        let old = tmp.path().join("old");
        let mut backend = agents_search::open_text_backend(TextBackendKind::Tantivy, &old).unwrap();
        backend.upsert(&docs(2)).unwrap();
        backend.commit().unwrap();
        drop(backend);
        assert_eq!(open_index(&old, TextBackendKind::Tantivy).unwrap().unwrap().doc_count().unwrap(), 2);
    }

    /// Words as one-hot axes of a 64-dimensional space (by a byte sum): a
    /// text's vector is its normalised word count.
    struct Words;
    impl Embedder for Words {
        fn model_id(&self) -> &str {
            "words"
        }
        fn dim(&self) -> usize {
            64
        }
        fn embed(&self, texts: &[String]) -> Vec<Vec<f32>> {
            texts
                .iter()
                .map(|t| {
                    let mut v = vec![0f32; 64];
                    for w in agents_search::code_tokens(t) {
                        v[w.bytes().map(usize::from).sum::<usize>() % 64] += 1.0;
                    }
                    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                    v.iter().map(|x| x / norm).collect()
                })
                .collect()
        }
    }

    #[test]
    fn with_an_embedding_model_the_closest_paragraph_is_the_passage_and_meaning_alone_can_bring_a_node() {
        let tmp = tempfile::tempdir().unwrap();
        let doc = |id: &str, body: &str| TextDoc {
            id: id.into(),
            path: format!("global-vault/{id}.md"),
            name: id.into(),
            kind: KNOWLEDGE_KIND.into(),
            signature: String::new(),
            doc: String::new(),
            body: body.into(),
        };
        let docs = [
            doc("a", "Spectral solvers.\n\nGreen operator regularisation at zero."),
            // Shares no indexed word with the query's BM25 terms... but its
            // paragraph is close in the toy model's space.
            doc("b", "Unrelated start.\n\nzero regularisation green"),
        ];
        let mut backend =
            agents_search::open_text_backend(TextBackendKind::Tantivy, &tmp.path().join("index")).unwrap();
        backend.upsert(&docs[..1]).unwrap();
        backend.commit().unwrap();
        let by_id: BTreeMap<String, TextDoc> = docs.iter().map(|d| (d.id.clone(), d.clone())).collect();
        let nodes = vec!["a".to_owned(), "b".to_owned()];
        let query = "green operator regularisation";
        let bm25 = scoped_passages(backend.as_ref(), None, &by_id, &nodes, query, SEMANTIC_FLOOR).unwrap();
        assert_eq!(bm25.iter().map(|p| p.node.as_str()).collect::<Vec<_>>(), ["a"]);
        let hybrid = scoped_passages(backend.as_ref(), Some(&Words), &by_id, &nodes, query, SEMANTIC_FLOOR).unwrap();
        let found: Vec<(&str, u32)> = hybrid.iter().map(|p| (p.node.as_str(), p.line)).collect();
        assert_eq!(found, [("a", 3), ("b", 3)]);
        // Issue 18 item 8: the cut-off is a setting; at 1.0 meaning alone
        // brings no node.
        let strict = scoped_passages(backend.as_ref(), Some(&Words), &by_id, &nodes, query, 1.0).unwrap();
        assert_eq!(strict.iter().map(|p| p.node.as_str()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(crate::config::PropagationConfig::default().loadout.semantic_floor as f32, SEMANTIC_FLOOR);
    }
}
