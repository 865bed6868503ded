//! The code-graph step of indexing: analyse changed files with the UKO
//! analyzers, write their nodes as they come, then resolve references once
//! every node is known.
//!
//! Memory stays bounded on large trees: a file's nodes go to the open write
//! transaction as soon as its chunk is parsed; only its raw references (a
//! few dozen bytes each) wait for resolution. References elsewhere that
//! pointed into a changed or removed file, or that name a symbol a changed
//! file defines, are resolved again, so edges stay right without
//! re-reading the resource.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use agents_store::{Change, IndexWrite, Naming, Rebinding, Reshaped, StoreError, UkoNode, UkoRef};
use agents_uko::lang::analyzer_for;
use agents_uko::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use agents_uko::resolve::{
    FileScope, ReExports, ResolveContext, SymbolEntry, SymbolTable, declared, imported_name, reference_head,
    reference_name, result_of_call,
};
use rayon::prelude::*;

/// Stored docs are capped: depth 3 shows a summary line and depth 9 shows
/// the source itself, so a long docstring adds nothing but bytes.
const MAX_DOC_CHARS: usize = 2000;
const MAX_SIGNATURE_CHARS: usize = 1000;

/// One freshly analysed file: its nodes ready to write, its references
/// waiting for resolution.
pub struct Analyzed {
    pub path: String,
    pub language: String,
    pub nodes: Vec<UkoNode>,
    pub pending: PendingRefs,
    pub warnings: usize,
    /// The first of them.
    pub first_warning: Option<String>,
}

/// A file's unresolved references in compact form: all of a file's strings
/// live in one buffer, so hundreds of thousands of references cost a few
/// allocations per file rather than one or two each.
pub struct PendingRefs {
    pub path: String,
    pub language: String,
    /// Every string below, back to back.
    strings: String,
    /// Symbol path of every node, by node index (the `from` of references).
    symbol_paths: Vec<(u32, u32)>,
    refs: Vec<RawRef>,
    /// Names imported by import references, by reference index (rare).
    names: Vec<(u32, Vec<String>)>,
}

struct RawRef {
    from: u32,
    kind: RefKind,
    system: bool,
    line: u32,
    target: (u32, u32),
}

impl PendingRefs {
    fn new(path: &str, language: &str, analysis: FileAnalysis) -> PendingRefs {
        let mut strings = String::new();
        let mut push = |s: &str| {
            let start = strings.len() as u32;
            strings.push_str(s);
            (start, s.len() as u32)
        };
        let symbol_paths = analysis.nodes.iter().map(|n| push(&n.symbol_path)).collect();
        let mut names = Vec::new();
        let refs = analysis
            .references
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                if !r.names.is_empty() {
                    names.push((i as u32, r.names));
                }
                RawRef {
                    from: r.from as u32,
                    kind: r.kind,
                    system: r.system,
                    line: r.span.start.line,
                    target: push(&r.target),
                }
            })
            .collect();
        strings.shrink_to_fit();
        PendingRefs { path: path.to_string(), language: language.to_string(), strings, symbol_paths, refs, names }
    }

    /// Reference `i` (`r`) in the analyzers' form.
    fn reference(&self, i: usize, r: &RawRef) -> Reference {
        Reference {
            from: r.from as usize,
            kind: r.kind,
            target: self.str(r.target).to_string(),
            names: self.names(i).to_vec(),
            system: r.system,
            span: Span::default(),
        }
    }

    fn str(&self, (start, len): (u32, u32)) -> &str {
        &self.strings[start as usize..(start + len) as usize]
    }

    fn symbol_path(&self, node: u32) -> &str {
        self.str(self.symbol_paths[node as usize])
    }

    /// The file's imports as (target, names), sorted.
    fn imports(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = (self.refs.iter().enumerate())
            .filter(|(_, r)| r.kind == RefKind::Import)
            .map(|(i, r)| (self.str(r.target).to_string(), self.names(i).to_vec()))
            .collect();
        out.sort();
        out
    }

    fn names(&self, reference: usize) -> &[String] {
        self.names.binary_search_by_key(&(reference as u32), |(i, _)| *i).map_or(&[], |at| &self.names[at].1)
    }
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
/// `file_hash` is the SHA-256 of the whole file, reused for a node that
/// spans all of it.
pub fn analyze(resource_id: &str, path: &str, language: &str, text: &str, file_hash: &str) -> Analyzed {
    // An analyzer bug must not take the whole run down: the file is then
    // indexed at file level, with a warning.
    let analysis = std::panic::catch_unwind(|| agents_uko::lang::analyze(language, path, text)).unwrap_or_else(|_| {
        tracing::warn!("{path}: the {language} analyzer failed; indexed at file level");
        let mut a = FileAnalysis::file_only(NodeKind::File, path, text);
        a.warnings.push("analyzer failed; indexed at file level".to_string());
        a
    });
    let nodes = graph_nodes(resource_id, path, language, text, file_hash, &analysis);
    let warnings = analysis.warnings.len();
    let first_warning = analysis.warnings.first().cloned();
    let pending = PendingRefs::new(path, language, analysis);
    Analyzed { path: path.to_string(), language: language.to_string(), nodes, pending, warnings, first_warning }
}

fn graph_nodes(
    resource_id: &str,
    path: &str,
    language: &str,
    text: &str,
    file_hash: &str,
    a: &FileAnalysis,
) -> Vec<UkoNode> {
    let uris: Vec<String> = a.nodes.iter().map(|n| node_uri(resource_id, path, &n.symbol_path)).collect();
    a.nodes
        .iter()
        .enumerate()
        .map(|(i, n)| UkoNode {
            uri: uris[i].clone(),
            path: path.to_string(),
            symbol_path: n.symbol_path.clone(),
            kind: n.kind.as_str().to_string(),
            name: n.name.clone(),
            parent_uri: n.parent.map(|p| uris[p].clone()),
            language: language.to_string(),
            start_byte: n.span.start_byte as i64,
            end_byte: n.span.end_byte as i64,
            start_line: n.span.start.line as i64,
            start_col: n.span.start.column as i64,
            end_line: n.span.end.line as i64,
            end_col: n.span.end.column as i64,
            signature: n.signature.as_deref().map(|s| truncate(s, MAX_SIGNATURE_CHARS)),
            doc: n.doc.as_deref().map(|d| truncate(d, MAX_DOC_CHARS)),
            content_hash: if n.span.start_byte == 0 && n.span.end_byte == text.len() {
                file_hash.to_string()
            } else {
                agents_core::digest::sha256_hex(n.span.slice(text).as_bytes())
            },
        })
        .collect()
}

fn truncate(s: &str, max_chars: usize) -> String {
    match s.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
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
pub(crate) fn symbol_path_of(uri: &str) -> &str {
    uri.split_once('#').map_or("", |(_, s)| s)
}

/// Resolves the references of one run inside its write transaction.
pub struct Linker<'a> {
    pub resource_id: &'a str,
    /// Every file of the index after this run.
    pub files: &'a BTreeSet<String>,
    /// Language of every file after this run.
    pub languages: &'a HashMap<String, String>,
    /// The resource's Go modules: each `go.mod`'s folder and module path.
    pub go_modules: &'a [(String, String)],
}

/// What a run changed, for [`Linker::link`].
#[derive(Clone, Copy, Debug)]
pub struct RunChanges<'a> {
    /// Files analysed again, and files removed.
    pub changed_paths: &'a [String],
    /// What those files define anew, no longer, or with another signature
    /// ([`IndexWrite::write_nodes`]).
    pub reshaped: &'a [Reshaped],
    /// Files added or removed, and manifests changed.
    pub came_or_went: &'a [String],
}

impl Linker<'_> {
    /// Writes resolved references for `pending` files and re-resolves
    /// affected references elsewhere (when `rebind_others`). Nodes of every
    /// file must already be written. Returns (refs written, resolved,
    /// rebound) and the re-resolutions to apply.
    pub fn link(
        &self,
        writer: &mut dyn IndexWrite,
        pending: Vec<PendingRefs>,
        changes: &RunChanges<'_>,
        rebind_others: bool,
    ) -> Result<(UkoStats, Vec<Rebinding>), StoreError> {
        let mut stats = UkoStats::default();
        if pending.is_empty() && changes.changed_paths.is_empty() {
            return Ok((stats, Vec::new()));
        }
        let ctx = ResolveContext::new(self.files).with_go_modules(self.go_modules.to_vec());
        // What the run's package entry files import, from memory.
        let mut reexports = ReExports::default();
        for file in pending.iter().filter(|f| ReExports::is_entry(&f.path)) {
            self.add_entry_imports(&mut reexports, file, &ctx);
        }
        // The importers' scopes read to find what they read through a changed
        // entry, kept for resolving those references below.
        let mut scopes: HashMap<String, FileScope> = HashMap::new();
        let affected = if rebind_others {
            self.to_rebind(writer, &pending, changes, &reexports, &ctx, &mut scopes)?
        } else {
            Vec::new()
        };
        self.add_stored_entries(writer, &mut reexports, &pending, &affected, &ctx)?;
        let reexports = std::sync::Arc::new(reexports);
        // The defined names of renamed imports (`b as c`) in the files of
        // affected references: their `c` binds to `b`.
        let mut renamed_originals: Vec<String> = Vec::new();
        let affected_paths: BTreeSet<&str> = affected.iter().map(|(_, r)| r.path.as_str()).collect();
        for path in affected_paths {
            for (_, r) in writer.file_refs(path)? {
                if r.kind == RefKind::Import.as_str() {
                    let renamed = r.names.iter().filter(|n| n.contains(" as "));
                    renamed_originals.extend(renamed.map(|n| imported_name(n).0.to_string()));
                }
            }
        }
        // Only the names references mention matter; for a small change they
        // are few and are read by name instead of reading every symbol.
        let mut wanted: BTreeSet<&str> = renamed_originals.iter().map(String::as_str).collect();
        wanted.extend(reexports.originals());
        for file in &pending {
            for (i, r) in file.refs.iter().enumerate() {
                if r.kind != RefKind::Import {
                    wanted.insert(reference_name(file.str(r.target)));
                    wanted.extend(result_of_call(file.str(r.target)));
                    // The type a call is written against (`Engine` of
                    // `Engine.GET`), whose embedded types may hold it.
                    wanted.insert(reference_head(file.str(r.target)));
                } else {
                    // The defined name of a renamed import.
                    wanted.extend(file.names(i).iter().filter(|n| n.contains(" as ")).map(|n| imported_name(n).0));
                }
            }
        }
        for (_, r) in &affected {
            wanted.insert(reference_name(&r.target));
            wanted.extend(result_of_call(&r.target));
            wanted.insert(reference_head(&r.target));
        }
        let table = self.symbol_table(writer, &wanted)?;
        // Resolve a chunk of files in parallel, then write it, in path order;
        // each chunk's pending references are freed once written (a first
        // index of a large tree holds tens of megabytes of them).
        let mut pending = pending.into_iter();
        loop {
            let chunk: Vec<PendingRefs> = pending.by_ref().take(256).collect();
            if chunk.is_empty() {
                break;
            }
            let resolved: Vec<Vec<UkoRef>> =
                chunk.par_iter().map(|f| self.resolve_file(f, &ctx, &table, &reexports)).collect();
            for (file, refs) in chunk.iter().zip(resolved) {
                stats.references += refs.len() as u64;
                stats.references_resolved += refs.iter().filter(|r| r.resolved_uri.is_some()).count() as u64;
                writer.write_refs(&file.path, &refs)?;
            }
        }
        let re_resolved = self.rebind(writer, affected, &mut scopes, &ctx, &table, &reexports)?;
        stats.re_resolved = re_resolved.len() as u64;
        Ok((stats, re_resolved))
    }

    /// The references of unchanged files whose binding this run's changes
    /// may move (docs/retrieval.md has the table), by ref id; `scopes` gets
    /// the scopes read on the way.
    fn to_rebind(
        &self,
        writer: &mut dyn IndexWrite,
        pending: &[PendingRefs],
        changes: &RunChanges<'_>,
        reexports: &ReExports,
        ctx: &ResolveContext<'_>,
        scopes: &mut HashMap<String, FileScope>,
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let RunChanges { changed_paths, came_or_went, .. } = *changes;
        // An import is no definition others bind to.
        let reshaped: Vec<&Reshaped> =
            changes.reshaped.iter().filter(|r| r.kind != NodeKind::Import.as_str()).collect();
        // Gone targets, and what a changed package entry file brings in
        // (`click.echo` once `__init__.py` imports `echo`).
        let brought: Vec<String> = reexports.local_names().map(str::to_string).collect();
        let mut by_id: BTreeMap<i64, UkoRef> = writer.refs_affected_by(changed_paths, &brought)?.into_iter().collect();
        for (id, r) in self.read_through_changed_entries(writer, pending, changed_paths, ctx, scopes)? {
            by_id.entry(id).or_insert(r);
        }
        // Every reference by a name defined anew (a name defined twice
        // binds nothing), those by a name no longer defined that bind
        // nothing (once defined binds that one), and those read through
        // a function or type that changed shape; the imports that may
        // lead to a file that came or went (`./mod.js` for `mod.js`).
        let of = |change: Change| -> Vec<String> {
            let names: BTreeSet<String> =
                reshaped.iter().filter(|r| r.change == change).map(|r| r.name.clone()).collect();
            names.into_iter().collect()
        };
        let (names, unbound_names) = (of(Change::Added), of(Change::Removed));
        let through = read_through(writer, &reshaped)?;
        let stems: BTreeSet<String> = came_or_went.iter().map(|p| file_stem(p).to_string()).collect();
        let stems: Vec<String> = stems.into_iter().collect();
        let naming =
            Naming { names: &names, unbound_names: &unbound_names, through: &through, imports_holding: &stems };
        let changed: HashSet<&str> = changed_paths.iter().map(String::as_str).collect();
        let named: HashSet<&str> = names.iter().map(String::as_str).collect();
        // The local names of renamed imports of those names, by file:
        // what is read through them binds anew too (`f()` after
        // `from m import getchar as f`).
        let mut aliases: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (id, r) in writer.refs_naming(&naming)? {
            if changed.contains(r.path.as_str()) {
                continue;
            }
            if r.kind == RefKind::Import.as_str() {
                for (original, local) in r.names.iter().map(|n| imported_name(n)) {
                    if original != local && named.contains(original) {
                        aliases.entry(r.path.clone()).or_default().insert(local.to_string());
                    }
                }
            }
            by_id.entry(id).or_insert(r);
        }
        for (path, locals) in &aliases {
            for (id, r) in writer.file_refs(path)? {
                let reads = |n: &str| locals.contains(n);
                if r.kind != RefKind::Import.as_str()
                    && (reads(reference_name(&r.target)) || reads(reference_head(&r.target)))
                {
                    by_id.entry(id).or_insert(r);
                }
            }
        }
        // Where an import leads depends on the files there are: one that
        // leads elsewhere now changes what its file reads through it, so
        // all of that file's references are resolved again. A package
        // entry, a crate root or a manifest that came, went or changed
        // (`__init__.py`, `main.rs`, `go.mod`) may move any import: then
        // every import is checked.
        let imports: Vec<(i64, UkoRef)> = if came_or_went.iter().any(|p| shapes_imports(p)) {
            writer.import_refs()?
        } else {
            by_id.iter().filter(|(_, r)| r.kind == RefKind::Import.as_str()).map(|(id, r)| (*id, r.clone())).collect()
        };
        let mut rescoped: BTreeSet<String> = BTreeSet::new();
        for (_, r) in imports.iter().filter(|(_, r)| !changed.contains(r.path.as_str())) {
            let language = self.languages.get(&r.path).map(String::as_str).unwrap_or("unknown");
            if analyzer_for(language).resolve_import(ctx, &r.path, &stored_reference(r)) != r.resolved_path {
                rescoped.insert(r.path.clone());
            }
        }
        for path in &rescoped {
            by_id.extend(writer.file_refs(path)?);
        }
        // A class whose base may bind anew: its own references too
        // (`self.m()` finds an inherited `m` through its bases).
        let classes: BTreeSet<(String, String)> = by_id
            .values()
            .filter(|r| r.kind == RefKind::Inherits.as_str())
            .map(|r| (r.path.clone(), symbol_path_of(&r.from_uri).to_string()))
            .collect();
        for (path, class) in &classes {
            for (id, r) in writer.file_refs(path)? {
                if r.kind != RefKind::Import.as_str() && within(symbol_path_of(&r.from_uri), class) {
                    by_id.entry(id).or_insert(r);
                }
            }
        }
        Ok(by_id.into_iter().collect())
    }

    /// `affected` resolved again, bases first (what the others find through
    /// them): the bindings that changed.
    fn rebind(
        &self,
        writer: &mut dyn IndexWrite,
        affected: Vec<(i64, UkoRef)>,
        scopes: &mut HashMap<String, FileScope>,
        ctx: &ResolveContext<'_>,
        table: &SymbolTable,
        reexports: &std::sync::Arc<ReExports>,
    ) -> Result<Vec<Rebinding>, StoreError> {
        let mut re_resolved = Vec::new();
        // The importers' scopes read above, with this run's re-exports.
        for scope in scopes.values_mut() {
            scope.reexports = std::sync::Arc::clone(reexports);
        }
        for (_, r) in &affected {
            if !scopes.contains_key(&r.path) {
                let mut scope = self.stored_scope(writer, &r.path, ctx)?;
                scope.reexports = std::sync::Arc::clone(reexports);
                scopes.insert(r.path.clone(), scope);
            }
        }
        // Bases first: what the others find through them.
        let (mut bases, others): (Vec<_>, Vec<_>) =
            affected.into_iter().partition(|(_, r)| r.kind == RefKind::Inherits.as_str());
        // `to_rebind` takes a class whole, so every base of a class with one
        // affected base is here: its bases are rebuilt from them, in the
        // order the stored scope reads them.
        bases.sort_by(|(a_id, a), (b_id, b)| {
            (&a.path, a.line, &a.target, a_id).cmp(&(&b.path, b.line, &b.target, b_id))
        });
        let mut rebased: BTreeMap<(String, String), Vec<(String, String)>> = BTreeMap::new();
        for (ref_id, r) in bases {
            let (uri, path) = self.resolve_stored(&r, &scopes[&r.path], ctx, table);
            let class_bases = rebased.entry((r.path.clone(), symbol_path_of(&r.from_uri).to_string())).or_default();
            if let (Some(uri), Some(path)) = (&uri, &path) {
                class_bases.push((path.clone(), symbol_path_of(uri).to_string()));
            }
            if uri != r.resolved_uri || path != r.resolved_path {
                re_resolved.push((ref_id, uri, path));
            }
        }
        for ((file, class), bases) in rebased {
            let scope = scopes.get_mut(&file).expect("every affected file has its scope");
            if bases.is_empty() {
                scope.bases.remove(&class);
            } else {
                scope.bases.insert(class, bases);
            }
        }
        for (ref_id, r) in others {
            let (uri, path) = self.resolve_stored(&r, &scopes[&r.path], ctx, table);
            if uri != r.resolved_uri || path != r.resolved_path {
                re_resolved.push((ref_id, uri, path));
            }
        }
        Ok(re_resolved)
    }

    /// The current symbols (as the open transaction sees them) named one of
    /// `wanted`; compact. Up to [`NAMED_LOOKUP_LIMIT`] names are looked up
    /// one by one; past it every symbol is read and those no reference names
    /// (locals, fields and parameters among them: a first index resolves by
    /// a few hundred thousand names) are dropped as they come.
    fn symbol_table(&self, writer: &mut dyn IndexWrite, wanted: &BTreeSet<&str>) -> Result<SymbolTable, StoreError> {
        let by_name = wanted.len() <= NAMED_LOOKUP_LIMIT;
        let filter: HashSet<&str> = if by_name { HashSet::new() } else { wanted.iter().copied().collect() };
        let mut table = SymbolTable::default();
        // Go structs always: resolution reads what they embed.
        let add = |table: &mut SymbolTable, path: &str, symbol_path: &str, name: &str, kind: &str, signature: &str| {
            let go_struct = kind == "struct" && path.ends_with(".go");
            if !(by_name || go_struct || filter.contains(name)) {
                return;
            }
            let Some(kind) = NodeKind::parse(kind) else { return };
            table.insert_signed(SymbolEntry { path, symbol_path, name, kind }, signature);
        };
        if by_name {
            let mut names: Vec<String> = wanted.iter().map(|s| s.to_string()).collect();
            let mut read: BTreeSet<String> = BTreeSet::new();
            // Then the types what was read refers to (what a function
            // returns, what a struct embeds), and theirs, as a full read
            // would have them.
            for _ in 0..4 {
                writer.for_each_symbol_named(&names, &mut |p, sp, n, k, sig| add(&mut table, p, sp, n, k, sig))?;
                read.extend(names);
                names = table.referenced_types().into_iter().filter(|t| !read.contains(t)).collect();
                if names.is_empty() {
                    break;
                }
            }
        } else {
            writer.for_each_symbol(&mut |p, sp, n, k, sig| add(&mut table, p, sp, n, k, sig))?;
        }
        table.finish();
        Ok(table)
    }

    fn uri_of(&self, e: SymbolEntry<'_>) -> String {
        node_uri(self.resource_id, e.path, e.symbol_path)
    }

    /// Adds to `out` (which holds the entries among `pending`) what the
    /// other entry files bring in that a pending file, or the file of an
    /// affected reference, imports: read from the store, entries imported by
    /// entries too, three levels deep.
    /// The references of unchanged files read through a name they bind to a
    /// changed (or removed) package entry whose imports changed (`pkg` of
    /// `pkg.echo`, `echo` after `from pkg import echo`), by id: the entry may
    /// no longer bring that name in, or bring it from elsewhere, though the
    /// old target still exists, so only resolving them again binds them as a
    /// fresh index would. An entry whose imports are what the store holds
    /// brings in the same names (what it defines is the gone and introduced
    /// names' business). The importers' scopes go to `scopes`.
    fn read_through_changed_entries(
        &self,
        writer: &mut dyn IndexWrite,
        pending: &[PendingRefs],
        changed_paths: &[String],
        ctx: &ResolveContext<'_>,
        scopes: &mut HashMap<String, FileScope>,
    ) -> Result<Vec<(i64, UkoRef)>, StoreError> {
        let mut entries: Vec<String> = Vec::new();
        for path in changed_paths.iter().filter(|p| ReExports::is_entry(p)) {
            let now = pending.iter().find(|f| &f.path == path).map(PendingRefs::imports);
            let mut before: Vec<(String, Vec<String>)> = (writer.file_refs(path)?.into_iter())
                .filter(|(_, r)| r.kind == RefKind::Import.as_str())
                .map(|(_, r)| (r.target, r.names))
                .collect();
            before.sort();
            if now.as_ref() != Some(&before) {
                entries.push(path.clone());
            }
        }
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let changed: HashSet<&str> = changed_paths.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        for (id, r) in writer.refs_importing(&entries)? {
            if changed.contains(r.path.as_str()) {
                continue;
            }
            if !scopes.contains_key(&r.path) {
                let scope = self.stored_scope(writer, &r.path, ctx)?;
                scopes.insert(r.path.clone(), scope);
            }
            if scopes[&r.path].aliases.get(reference_head(&r.target)).is_some_and(|p| entries.contains(p)) {
                out.push((id, r));
            }
        }
        Ok(out)
    }

    fn add_stored_entries(
        &self,
        writer: &mut dyn IndexWrite,
        out: &mut ReExports,
        pending: &[PendingRefs],
        affected: &[(i64, UkoRef)],
        ctx: &ResolveContext<'_>,
    ) -> Result<(), StoreError> {
        let pending_entries: HashSet<&str> =
            pending.iter().filter(|f| ReExports::is_entry(&f.path)).map(|f| f.path.as_str()).collect();
        // Entries the store holds are read only when something imports them
        // (none on a first index: every file is pending).
        if !self.files.iter().any(|p| ReExports::is_entry(p) && !pending_entries.contains(p.as_str())) {
            return Ok(());
        }
        let mut wanted: BTreeSet<String> = BTreeSet::new();
        for file in pending {
            wanted.extend(pending_imports(file, ctx).map(|(target, _)| target));
        }
        let affected_paths: BTreeSet<&str> = affected.iter().map(|(_, r)| r.path.as_str()).collect();
        for path in affected_paths {
            wanted.extend(self.stored_imports(writer, path, ctx)?.into_iter().map(|(target, _)| target));
        }
        let mut done: HashSet<String> = pending_entries.iter().map(|p| p.to_string()).collect();
        for _ in 0..3 {
            let next: Vec<String> =
                wanted.iter().filter(|p| ReExports::is_entry(p) && !done.contains(p.as_str())).cloned().collect();
            if next.is_empty() {
                break;
            }
            wanted.clear();
            for entry in next {
                for (target, names) in self.stored_imports(writer, &entry, ctx)? {
                    out.add(&entry, &target, &names);
                    wanted.insert(target);
                }
                done.insert(entry);
            }
        }
        Ok(())
    }

    /// Adds what the pending entry file `file` imports to `out`.
    fn add_entry_imports(&self, out: &mut ReExports, file: &PendingRefs, ctx: &ResolveContext<'_>) {
        for (target, names) in pending_imports(file, ctx) {
            out.add(&file.path, &target, names);
        }
    }

    /// The stored imports of `path` that resolve, with the names each brings.
    fn stored_imports(
        &self,
        writer: &mut dyn IndexWrite,
        path: &str,
        ctx: &ResolveContext<'_>,
    ) -> Result<Vec<(String, Vec<String>)>, StoreError> {
        let language = self.languages.get(path).map(String::as_str).unwrap_or("unknown");
        let analyzer = analyzer_for(language);
        let mut out = Vec::new();
        for (_, r) in writer.file_refs(path)? {
            if r.kind == RefKind::Import.as_str()
                && let Some(target) = analyzer.resolve_import(ctx, path, &stored_reference(&r))
            {
                out.push((target, r.names));
            }
        }
        Ok(out)
    }

    fn resolve_file(
        &self,
        file: &PendingRefs,
        ctx: &ResolveContext<'_>,
        table: &SymbolTable,
        reexports: &std::sync::Arc<ReExports>,
    ) -> Vec<UkoRef> {
        let analyzer = analyzer_for(&file.language);
        // Imports first: they make the scope other references resolve in.
        let mut scope =
            FileScope { path: file.path.clone(), reexports: std::sync::Arc::clone(reexports), ..FileScope::default() };
        let import_targets: Vec<Option<String>> = file
            .refs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if r.kind != RefKind::Import {
                    return None;
                }
                let target = analyzer.resolve_import(ctx, &file.path, &file.reference(i, r));
                scope_import(&mut scope, target.as_deref(), file.str(r.target), file.names(i));
                target
            })
            .collect();
        // Bases next: `self.m()` finds an inherited `m` through them.
        for r in file.refs.iter().filter(|r| r.kind == RefKind::Inherits) {
            let class = file.symbol_path(r.from);
            if let Some(e) = table.resolve(&scope, class, r.kind, file.str(r.target)) {
                let base = (e.path.to_string(), e.symbol_path.to_string());
                scope.bases.entry(class.to_string()).or_default().push(base);
            }
        }
        file.refs
            .iter()
            .zip(import_targets)
            .enumerate()
            .map(|(i, (r, import_target))| {
                let from_symbol = file.symbol_path(r.from);
                let target = file.str(r.target);
                let (resolved_uri, resolved_path) = match r.kind {
                    RefKind::Import => {
                        (import_target.as_ref().map(|p| node_uri(self.resource_id, p, "")), import_target)
                    }
                    _ => match table.resolve(&scope, from_symbol, r.kind, target) {
                        Some(e) => (Some(self.uri_of(e)), Some(e.path.to_string())),
                        None => (None, None),
                    },
                };
                UkoRef {
                    path: file.path.clone(),
                    from_uri: node_uri(self.resource_id, &file.path, from_symbol),
                    kind: r.kind.as_str().to_string(),
                    target: target.to_string(),
                    target_name: if r.kind == RefKind::Import { target_name(target) } else { reference_name(target) }
                        .to_string(),
                    names: file.names(i).to_vec(),
                    system: r.system,
                    line: r.line as i64,
                    resolved_uri,
                    resolved_path,
                }
            })
            .collect()
    }

    /// The import scope of an unchanged file, from its stored references,
    /// with imports re-resolved against the current file set.
    fn stored_scope(
        &self,
        writer: &mut dyn IndexWrite,
        path: &str,
        ctx: &ResolveContext<'_>,
    ) -> Result<FileScope, StoreError> {
        let mut scope = FileScope { path: path.to_string(), ..FileScope::default() };
        let language = self.languages.get(path).map(String::as_str).unwrap_or("unknown");
        for (_, r) in writer.file_refs(path)? {
            if r.kind == RefKind::Import.as_str() {
                let target = analyzer_for(language).resolve_import(ctx, path, &stored_reference(&r));
                scope_import(&mut scope, target.as_deref(), &r.target, &r.names);
            }
            if r.kind == RefKind::Inherits.as_str()
                && let (Some(uri), Some(base_path)) = (&r.resolved_uri, &r.resolved_path)
            {
                let base = (base_path.clone(), symbol_path_of(uri).to_string());
                scope.bases.entry(symbol_path_of(&r.from_uri).to_string()).or_default().push(base);
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
            let target = analyzer_for(language).resolve_import(ctx, &r.path, &stored_reference(r));
            return (target.as_ref().map(|p| node_uri(self.resource_id, p, "")), target);
        }
        match table.resolve(scope, symbol_path_of(&r.from_uri), kind, &r.target) {
            Some(e) => (Some(self.uri_of(e)), Some(e.path.to_string())),
            None => (None, None),
        }
    }
}

/// A file name's stem (`mod` of `src/mod.rs`, `cJSON` of `cJSON.h`).
fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().filter(|s| !s.is_empty()).unwrap_or(name)
}

/// Whether the file at `path` decides where imports of other files lead: a
/// package entry (`__init__.py`, `index.ts`, `mod.rs`), a crate root
/// (`main.rs`, `lib.rs`) or a manifest (`go.mod`, `Cargo.toml`, `package.json`).
fn shapes_imports(path: &str) -> bool {
    ReExports::is_entry(path)
        || matches!(path.rsplit('/').next(), Some("main.rs" | "lib.rs" | "go.mod" | "Cargo.toml" | "package.json"))
}

/// Whether `symbol` is `scope` or inside it (`C.m` in `C`).
fn within(symbol: &str, scope: &str) -> bool {
    symbol.strip_prefix(scope).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
}

/// The names through which a reference's binding may have changed with
/// `reshaped`: the functions and types among them (`f` of `f().m`, `Engine`
/// of `Engine.GET`), and the functions whose signature names one of those
/// types (`New` of `New().GET`, which returns `*Engine`): a reference read
/// through them binds to a member of the type resolution finds there. A
/// signature change counts only when what resolution reads of it changed
/// ([`declared`]: the declared result, a Go struct's embeddings).
fn read_through(writer: &mut dyn IndexWrite, reshaped: &[&Reshaped]) -> Result<Vec<String>, StoreError> {
    let kind = |r: &Reshaped| NodeKind::parse(&r.kind);
    let counts = |r: &&&Reshaped| match (&r.change, kind(r)) {
        (Change::Signature { before, after }, Some(k)) => {
            let read = |s: &Option<String>| declared(&r.path, k, s.as_deref().unwrap_or(""));
            read(before) != read(after)
        }
        (Change::Signature { .. }, None) => false,
        _ => true,
    };
    let reshaped: Vec<&Reshaped> = reshaped.iter().filter(counts).copied().collect();
    let is_type = |k: Option<NodeKind>| {
        matches!(
            k,
            Some(
                NodeKind::Class
                    | NodeKind::Struct
                    | NodeKind::Interface
                    | NodeKind::Trait
                    | NodeKind::Enum
                    | NodeKind::TypeAlias
            )
        )
    };
    let types: Vec<String> = reshaped.iter().filter(|r| is_type(kind(r))).map(|r| r.name.clone()).collect();
    let mut names: BTreeSet<String> = reshaped
        .iter()
        .filter(|r| is_type(kind(r)) || matches!(kind(r), Some(NodeKind::Function | NodeKind::Method)))
        .map(|r| r.name.clone())
        .collect();
    names.extend(writer.functions_mentioning(&types)?);
    Ok(names.into_iter().collect())
}

/// The imports of a pending file that resolve: (target path, names brought).
fn pending_imports<'f>(
    file: &'f PendingRefs,
    ctx: &ResolveContext<'_>,
) -> impl Iterator<Item = (String, &'f [String])> {
    let analyzer = analyzer_for(&file.language);
    file.refs.iter().enumerate().filter(|(_, r)| r.kind == RefKind::Import).filter_map(move |(i, r)| {
        analyzer.resolve_import(ctx, &file.path, &file.reference(i, r)).map(|target| (target, file.names(i)))
    })
}

/// An import in a file's scope: its names bound to the file of the tree it
/// resolved to, else noted as coming from `module`, a module outside the tree.
fn scope_import(scope: &mut FileScope, resolved: Option<&str>, module: &str, names: &[String]) {
    match resolved {
        Some(path) => add_import(scope, path, names),
        None => scope.add_external(module, names),
    }
}

fn add_import(scope: &mut FileScope, path: &str, names: &[String]) {
    if !scope.imported_paths.iter().any(|p| p == path) {
        scope.imported_paths.push(path.to_string());
    }
    for n in names.iter().filter(|n| n.as_str() != "*") {
        // `b as c` (a renamed Python import) binds `c`, defined as `b`.
        let (original, local) = imported_name(n);
        scope.aliases.entry(local.to_string()).or_insert_with(|| path.to_string());
        if original != local {
            scope.renamed.entry(local.to_string()).or_insert_with(|| original.to_string());
        }
    }
}

/// A stored reference back in the analyzers' form, for re-resolution.
fn stored_reference(r: &UkoRef) -> Reference {
    Reference {
        from: 0,
        kind: RefKind::parse(&r.kind).unwrap_or(RefKind::Mentions),
        target: r.target.clone(),
        names: r.names.clone(),
        system: r.system,
        span: Span::default(),
    }
}

/// Past this many distinct names, reading every symbol is cheaper than
/// looking names up one by one.
pub(crate) const NAMED_LOOKUP_LIMIT: usize = 5000;

/// The last segment of an import specifier (`os.path`, `./util`, `crate::a::b`).
pub fn target_name(target: &str) -> &str {
    target.rsplit(['.', ':', '>', '/']).find(|s| !s.is_empty()).unwrap_or(target).trim_end_matches('!')
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
        assert_eq!(truncate("héllo", 2), "hé…");
        assert_eq!(truncate("hi", 2), "hi");
    }

    #[test]
    fn renamed_python_imports_bind_their_local_names() {
        // requests: `from . import _types as _t` and
        // `from ._types import is_prepared as _is_prepared`.
        let mut table = SymbolTable::default();
        for (path, symbol) in
            [("src/_types.py", "is_prepared"), ("src/_types.py", "has_read"), ("src/x.py", "has_read")]
        {
            table.insert(SymbolEntry { path, symbol_path: symbol, name: symbol, kind: NodeKind::Function });
        }
        table.finish();
        let mut scope = FileScope { path: "src/adapters.py".into(), ..FileScope::default() };
        add_import(&mut scope, "src/_types.py", &["_types as _t".to_string()]);
        add_import(&mut scope, "src/_types.py", &["is_prepared as _is_prepared".to_string()]);
        let bound = |target: &str| table.resolve(&scope, "send", RefKind::Calls, target).map(|e| e.path.to_string());
        assert_eq!(bound("_t.has_read").as_deref(), Some("src/_types.py"));
        assert_eq!(bound("_is_prepared").as_deref(), Some("src/_types.py"));
        assert_eq!(bound("obj.has_read"), None, "not a module qualifier");
    }
}
