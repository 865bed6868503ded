//! The code-graph step of indexing: analyse changed files with the UKO
//! analyzers, resolve their references, and prepare the store's UKO commit.
//!
//! Only files whose content changed are analysed. References elsewhere that
//! pointed into a changed or removed file, or that name a symbol a changed
//! file newly defines, are resolved again, so edges stay right without
//! re-reading the resource.

use std::collections::{BTreeSet, HashMap, HashSet};

use agents_store::{Store, StoreError, UkoCommit, UkoFile, UkoNode, UkoRef};
use agents_uko::lang::analyzer_for;
use agents_uko::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use agents_uko::resolve::{FileScope, ResolveContext, SymbolEntry, SymbolTable};
use sha2::{Digest, Sha256};

/// One freshly analysed file.
pub struct Analyzed {
    pub path: String,
    pub language: String,
    pub analysis: FileAnalysis,
    /// SHA-256 of each node's source text, parallel to `analysis.nodes`.
    pub node_hashes: Vec<String>,
}

/// Counts for the run report.
#[derive(Clone, Copy, Debug, Default)]
pub struct UkoStats {
    pub files_analyzed: u64,
    pub nodes: u64,
    pub references: u64,
    pub references_resolved: u64,
    pub re_resolved: u64,
    pub parse_warnings: u64,
}

/// Analyses one file's text (runs inside the parallel indexing pass).
pub fn analyze(path: &str, language: &str, text: &str) -> Analyzed {
    let analysis = agents_uko::lang::analyze(language, path, text);
    let node_hashes = analysis.nodes.iter().map(|n| hex_digest(n.span.slice(text).as_bytes())).collect();
    Analyzed { path: path.to_string(), language: language.to_string(), analysis, node_hashes }
}

/// The URI of a node: `uko://<resource>/<path>` or `...#<symbol_path>`.
pub fn node_uri(resource_id: &str, path: &str, symbol_path: &str) -> String {
    if symbol_path.is_empty() {
        format!("uko://{resource_id}/{path}")
    } else {
        format!("uko://{resource_id}/{path}#{symbol_path}")
    }
}

/// The symbol path part of a node URI (empty for a file).
fn symbol_path_of(uri: &str) -> &str {
    uri.split_once('#').map_or("", |(_, s)| s)
}

/// Builds the UKO commit for one run.
pub struct UkoPlan<'a> {
    pub store: &'a dyn Store,
    pub index_id: &'a str,
    pub resource_id: &'a str,
    /// Every file of the index after this run.
    pub files: &'a BTreeSet<String>,
    /// Language of every file after this run.
    pub languages: &'a HashMap<String, String>,
}

impl UkoPlan<'_> {
    pub fn build(&self, analyzed: Vec<Analyzed>, removed: Vec<String>) -> Result<(UkoCommit, UkoStats), StoreError> {
        let mut stats = UkoStats::default();
        if analyzed.is_empty() && removed.is_empty() {
            return Ok((UkoCommit::default(), stats));
        }
        let changed: HashSet<&str> =
            analyzed.iter().map(|a| a.path.as_str()).chain(removed.iter().map(String::as_str)).collect();

        // Symbols: stored ones of unchanged files, plus the fresh ones.
        let stored = self.store.uko_symbols(self.index_id)?;
        let mut old_names_in_changed: HashSet<String> = HashSet::new();
        let mut table = SymbolTable::default();
        for s in &stored {
            if changed.contains(s.path.as_str()) {
                old_names_in_changed.insert(s.name.clone());
                continue;
            }
            if let Some(kind) = NodeKind::parse(&s.kind) {
                table.insert(SymbolEntry {
                    uri: s.uri.clone(),
                    path: s.path.clone(),
                    symbol_path: s.symbol_path.clone(),
                    name: s.name.clone(),
                    kind,
                });
            }
        }
        let mut new_names: BTreeSet<String> = BTreeSet::new();
        for a in &analyzed {
            for n in a.analysis.nodes.iter().skip(1) {
                if !old_names_in_changed.contains(&n.name) {
                    new_names.insert(n.name.clone());
                }
                table.insert(SymbolEntry {
                    uri: node_uri(self.resource_id, &a.path, &n.symbol_path),
                    path: a.path.clone(),
                    symbol_path: n.symbol_path.clone(),
                    name: n.name.clone(),
                    kind: n.kind,
                });
            }
        }
        let ctx = ResolveContext::new(self.files);

        let mut commit = UkoCommit { removed_paths: removed.clone(), ..UkoCommit::default() };
        for a in &analyzed {
            stats.files_analyzed += 1;
            stats.parse_warnings += a.analysis.warnings.len() as u64;
            let file = self.file_commit(a, &ctx, &table);
            stats.nodes += file.nodes.len() as u64;
            stats.references += file.refs.len() as u64;
            stats.references_resolved += file.refs.iter().filter(|r| r.resolved_uri.is_some()).count() as u64;
            commit.files.push(file);
        }

        // References in unchanged files that may now bind differently.
        if !stored.is_empty() {
            let changed_paths: Vec<String> = changed.iter().map(|s| s.to_string()).collect();
            let names: Vec<String> = new_names.into_iter().collect();
            let affected = self.store.uko_refs_affected_by(self.index_id, &changed_paths, &names)?;
            let mut scopes: HashMap<String, FileScope> = HashMap::new();
            for (ref_id, r) in affected {
                if !scopes.contains_key(&r.path) {
                    let scope = self.stored_scope(&r.path, &ctx)?;
                    scopes.insert(r.path.clone(), scope);
                }
                let scope = &scopes[&r.path];
                let (uri, path) = self.resolve_stored(&r, scope, &ctx, &table);
                if uri != r.resolved_uri || path != r.resolved_path {
                    commit.re_resolved.push((ref_id, uri, path));
                    stats.re_resolved += 1;
                }
            }
        }
        Ok((commit, stats))
    }

    fn file_commit(&self, a: &Analyzed, ctx: &ResolveContext<'_>, table: &SymbolTable) -> UkoFile {
        let nodes = &a.analysis.nodes;
        let uris: Vec<String> = nodes.iter().map(|n| node_uri(self.resource_id, &a.path, &n.symbol_path)).collect();
        let analyzer = analyzer_for(&a.language);
        let mut out = UkoFile { path: a.path.clone(), ..UkoFile::default() };
        for (i, n) in nodes.iter().enumerate() {
            out.nodes.push(UkoNode {
                uri: uris[i].clone(),
                path: a.path.clone(),
                symbol_path: n.symbol_path.clone(),
                kind: n.kind.as_str().to_string(),
                name: n.name.clone(),
                parent_uri: n.parent.map(|p| uris[p].clone()),
                language: a.language.clone(),
                start_byte: n.span.start_byte as i64,
                end_byte: n.span.end_byte as i64,
                start_line: n.span.start.line as i64,
                start_col: n.span.start.column as i64,
                end_line: n.span.end.line as i64,
                end_col: n.span.end.column as i64,
                signature: n.signature.clone(),
                doc: n.doc.clone(),
                content_hash: a.node_hashes[i].clone(),
            });
        }
        // Imports first: they make the scope other references resolve in.
        let mut scope = FileScope { path: a.path.clone(), ..FileScope::default() };
        let mut import_targets: Vec<Option<String>> = Vec::with_capacity(a.analysis.references.len());
        for r in &a.analysis.references {
            let target = (r.kind == RefKind::Import).then(|| analyzer.resolve_import(ctx, &a.path, r)).flatten();
            if let Some(path) = &target {
                add_import(&mut scope, path, &r.names);
            }
            import_targets.push(target);
        }
        for (r, import_target) in a.analysis.references.iter().zip(import_targets) {
            let (resolved_uri, resolved_path) = match r.kind {
                RefKind::Import => (import_target.as_ref().map(|p| node_uri(self.resource_id, p, "")), import_target),
                _ => match table.resolve(&scope, &nodes[r.from].symbol_path, r.kind, &r.target) {
                    Some(e) => (Some(e.uri.clone()), Some(e.path.clone())),
                    None => (None, None),
                },
            };
            out.refs.push(UkoRef {
                path: a.path.clone(),
                from_uri: uris[r.from].clone(),
                kind: r.kind.as_str().to_string(),
                target: r.target.clone(),
                target_name: target_name(&r.target).to_string(),
                names: r.names.clone(),
                system: r.system,
                line: r.span.start.line as i64,
                resolved_uri,
                resolved_path,
            });
        }
        out
    }

    /// The import scope of an unchanged file, from its stored references,
    /// with imports re-resolved against the current file set.
    fn stored_scope(&self, path: &str, ctx: &ResolveContext<'_>) -> Result<FileScope, StoreError> {
        let mut scope = FileScope { path: path.to_string(), ..FileScope::default() };
        let language = self.languages.get(path).map(String::as_str).unwrap_or("unknown");
        for (_, r) in self.store.uko_file_refs(self.index_id, path)? {
            if r.kind == RefKind::Import.as_str()
                && let Some(target) = analyzer_for(language).resolve_import(ctx, path, &as_reference(&r))
            {
                add_import(&mut scope, &target, &r.names);
            }
        }
        Ok(scope)
    }

    fn resolve_stored(
        &self,
        r: &UkoRef,
        scope: &FileScope,
        ctx: &ResolveContext<'_>,
        table: &SymbolTable,
    ) -> (Option<String>, Option<String>) {
        let Some(kind) = RefKind::parse(&r.kind) else { return (None, None) };
        if kind == RefKind::Import {
            let language = self.languages.get(&r.path).map(String::as_str).unwrap_or("unknown");
            let target = analyzer_for(language).resolve_import(ctx, &r.path, &as_reference(r));
            return (target.as_ref().map(|p| node_uri(self.resource_id, p, "")), target);
        }
        match table.resolve(scope, symbol_path_of(&r.from_uri), kind, &r.target) {
            Some(e) => (Some(e.uri.clone()), Some(e.path.clone())),
            None => (None, None),
        }
    }
}

fn add_import(scope: &mut FileScope, path: &str, names: &[String]) {
    if !scope.imported_paths.iter().any(|p| p == path) {
        scope.imported_paths.push(path.to_string());
    }
    for n in names.iter().filter(|n| n.as_str() != "*") {
        scope.aliases.entry(n.clone()).or_insert_with(|| path.to_string());
    }
}

/// A stored reference back in the analyzers' form, for re-resolution.
fn as_reference(r: &UkoRef) -> Reference {
    Reference {
        from: 0,
        kind: RefKind::parse(&r.kind).unwrap_or(RefKind::Mentions),
        target: r.target.clone(),
        names: r.names.clone(),
        system: r.system,
        span: Span::default(),
    }
}

/// The last segment of a dotted, `::` or `->` qualified name.
pub fn target_name(target: &str) -> &str {
    target.rsplit(['.', ':', '>', '/']).find(|s| !s.is_empty()).unwrap_or(target).trim_end_matches('!')
}

fn hex_digest(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_and_names() {
        assert_eq!(node_uri("R", "src/a.py", ""), "uko://R/src/a.py");
        assert_eq!(node_uri("R", "src/a.py", "App.run"), "uko://R/src/a.py#App.run");
        assert_eq!(symbol_path_of("uko://R/src/a.py#App.run"), "App.run");
        assert_eq!(symbol_path_of("uko://R/src/a.py"), "");
        assert_eq!(target_name("os.path.join"), "join");
        assert_eq!(target_name("Type::new"), "new");
        assert_eq!(target_name("ptr->next"), "next");
        assert_eq!(target_name("println!"), "println");
        assert_eq!(target_name("./util"), "util");
    }
}
