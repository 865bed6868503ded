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

use agents_search::TextDoc;
use serde_json::Value;

use crate::schema::Layer;
use crate::vault::{Layout, confine, markdown_files};
use crate::yaml::{parse_mapping, split_frontmatter};

/// The kind every knowledge document is indexed under.
pub const KNOWLEDGE_KIND: &str = "knowledge";

/// The search documents of the nodes of `graph` (the compiled node-link
/// JSON), read from the sources of `layout`. Session nodes are materialised
/// by the overlay and have no source file: they are indexed with their title
/// and tags only.
pub fn documents(layout: &Layout, graph: &Value) -> Vec<TextDoc> {
    let bodies = bodies(layout);
    let mut docs: Vec<TextDoc> = graph["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|node| {
            let id = node.get("id")?.as_str()?;
            let text = |key: &str| node.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
            let tags: Vec<&str> =
                node.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
            let (path, body) = bodies.get(id).cloned().unwrap_or_default();
            Some(TextDoc {
                id: id.to_owned(),
                path,
                name: text("title"),
                kind: KNOWLEDGE_KIND.to_owned(),
                signature: tags.join(" "),
                doc: text("domain"),
                body,
            })
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
    let mut out = BTreeMap::new();
    for (root, layer) in layers {
        let ref_root: &Path = if layer == Layer::Global { &layout.global_vault } else { &knowledge };
        for file in markdown_files(&root).0 {
            let Some((id, text)) = node_text(&file, ref_root) else { continue };
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
fn node_text(file: &Path, ref_root: &Path) -> Option<(String, String)> {
    let source = std::fs::read_to_string(file).ok()?;
    let front = split_frontmatter(&source)?;
    let map = parse_mapping(file, front.yaml, front.first_line).ok()?;
    let field = |key: &str| map.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let id = field("id")?;
    let mut text = front.body.trim().to_owned();
    if let Some(content_ref) = field("content_ref")
        && let Ok(Some(path)) = confine(ref_root, &content_ref)
        && let Ok(content) = std::fs::read_to_string(path)
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
    let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    search_root.join("knowledge").join(name)
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
}
