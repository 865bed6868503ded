//! Binding raw references to files and symbols across a resource.
//!
//! [`ResolveContext`] is what import resolution needs to know about the
//! resource: which files exist, found by exact path or by file name. Each
//! analyzer maps its language's specifiers to candidate paths and asks the
//! context which exist; an ambiguous or missing target stays unresolved (a
//! named external dependency), never bound to a wrong file.

use std::collections::{BTreeSet, HashMap};

use agents_core::text_arena::{TextArena, TextSpan};

use crate::model::file_name;
use crate::role::FileRole;

/// The files of a resource, for resolving import specifiers.
pub struct ResolveContext<'a> {
    files: &'a BTreeSet<String>,
    by_name: HashMap<&'a str, Vec<&'a str>>,
    /// The resource's Go modules: (the folder holding `go.mod`, the module
    /// path it declares), longest module path first.
    go_modules: Vec<(String, String)>,
}

impl<'a> ResolveContext<'a> {
    /// `files` are `/`-separated paths relative to the resource root.
    pub fn new(files: &'a BTreeSet<String>) -> ResolveContext<'a> {
        let mut by_name: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
        for path in files {
            by_name.entry(file_name(path)).or_default().push(path.as_str());
        }
        ResolveContext { files, by_name, go_modules: Vec::new() }
    }

    /// The context with the resource's Go modules (each `go.mod`'s folder and
    /// module path): a Go import under a module path is that module's folder.
    pub fn with_go_modules(mut self, mut modules: Vec<(String, String)>) -> ResolveContext<'a> {
        modules.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.cmp(b)));
        self.go_modules = modules;
        self
    }

    /// See [`ResolveContext::with_go_modules`].
    pub fn go_modules(&self) -> &[(String, String)] {
        &self.go_modules
    }

    pub fn exists(&self, path: &str) -> bool {
        self.files.contains(path)
    }

    /// The first of `candidates` that exists.
    pub fn first_existing<I, S>(&self, candidates: I) -> Option<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        candidates.into_iter().find(|c| self.exists(c.as_ref())).map(|c| c.as_ref().to_string())
    }

    /// Paths whose file name is `name`, sorted.
    pub fn with_file_name(&self, name: &str) -> &[&'a str] {
        self.by_name.get(name).map_or(&[], |v| v.as_slice())
    }

    /// Paths equal to `suffix` or ending with `/suffix`, sorted.
    pub fn ending_with(&self, suffix: &str) -> Vec<&'a str> {
        let suffix = suffix.trim_start_matches('/');
        self.with_file_name(file_name(suffix))
            .iter()
            .copied()
            .filter(|p| *p == suffix || p.ends_with(&format!("/{suffix}")))
            .collect()
    }

    /// The single path ending with `suffix`; `None` if none or several.
    pub fn unique_ending_with(&self, suffix: &str) -> Option<String> {
        match self.ending_with(suffix).as_slice() {
            [one] => Some(one.to_string()),
            _ => None,
        }
    }

    /// All paths, sorted.
    pub fn files(&self) -> &'a BTreeSet<String> {
        self.files
    }
}

/// The name a module file is imported by: its stem, or its folder's for a
/// package entry (`pkg/sub/__init__.py` is `sub`).
fn module_name(path: &str) -> &str {
    let (dir, file) = path.rsplit_once('/').unwrap_or(("", path));
    if ReExports::is_entry(path) {
        return dir.rsplit('/').next().unwrap_or(dir);
    }
    file.split('.').next().unwrap_or(file)
}

/// The module path a `go.mod` declares (`module github.com/gin-gonic/gin`).
pub fn go_module_path(go_mod: &str) -> Option<&str> {
    go_mod.lines().find_map(|line| {
        let line = line.split("//").next().unwrap_or("").trim();
        let path = line.strip_prefix("module")?.trim().trim_matches(['"', '`']);
        (!path.is_empty() && !path.contains(char::is_whitespace)).then_some(path)
    })
}

/// The directory part of a relative path (`""` at the root).
pub fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Joins `dir` and a relative `rel` and normalises `.` and `..`; `None` if
/// the result would leave the resource root.
pub fn join_normalized(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_normalise_and_stay_inside() {
        assert_eq!(join_normalized("src/a", "../b/c.ts").unwrap(), "src/b/c.ts");
        assert_eq!(join_normalized("", "./x.py").unwrap(), "x.py");
        assert_eq!(join_normalized("src", "../../etc"), None);
        assert_eq!(dir_of("src/a/b.rs"), "src/a");
        assert_eq!(dir_of("b.rs"), "");
    }

    #[test]
    fn suffix_lookup_refuses_ambiguity() {
        let files: BTreeSet<String> =
            ["src/util.h", "lib/util.h", "include/net/http.h", "x.h"].into_iter().map(String::from).collect();
        let ctx = ResolveContext::new(&files);
        assert_eq!(ctx.unique_ending_with("net/http.h").as_deref(), Some("include/net/http.h"));
        assert_eq!(ctx.unique_ending_with("util.h"), None);
        assert_eq!(ctx.unique_ending_with("x.h").as_deref(), Some("x.h"));
        assert_eq!(ctx.first_existing(["nope.h", "x.h"]).as_deref(), Some("x.h"));
    }
}

/// One symbol known to resolution, as given to [`SymbolTable::insert`] and
/// lent back by its lookups (the table keeps its own compact copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolEntry<'a> {
    pub path: &'a str,
    pub symbol_path: &'a str,
    pub name: &'a str,
    pub kind: crate::model::NodeKind,
}

/// A symbol as the table keeps it: its file's index, where its symbol path
/// and name lie in the table's text, its kind (24 bytes: a resource can hold
/// hundreds of thousands, which cost two allocations each as strings).
#[derive(Clone, Copy, Debug)]
struct Symbol {
    path: u32,
    symbol_path: TextSpan,
    name: TextSpan,
    kind: crate::model::NodeKind,
}

/// Every symbol of a resource by name and by file, for binding calls,
/// inheritance and type mentions.
#[derive(Default)]
pub struct SymbolTable {
    symbols: Vec<Symbol>,
    /// The symbols' symbol paths; a name is the end of its symbol path where
    /// it is one (nearly always), else kept after it.
    text: TextArena,
    /// Each file's path once, by index.
    paths: Vec<Box<str>>,
    path_index: HashMap<Box<str>, u32>,
    /// Symbol ids sorted by (name, id) and by (path, name, id), for lookups
    /// by binary search. Built by [`SymbolTable::finish`].
    by_name: Vec<u32>,
    by_file: Vec<u32>,
    /// (path, symbol path) of a function -> the type it declares it returns
    /// (Go's `func New() *Engine` -> `Engine`), for calls on what it returns.
    results: HashMap<SymbolKey, Box<str>>,
    /// (path, symbol path) of a Go struct -> the types of its package it
    /// embeds (`Engine` -> `RouterGroup`), whose methods are its own.
    embeds: HashMap<SymbolKey, Vec<Box<str>>>,
}

/// A symbol by (path, symbol path).
type SymbolKey = (Box<str>, Box<str>);

/// What a file's imports bring into scope, for name resolution.
#[derive(Clone, Debug, Default)]
pub struct FileScope {
    /// The file's own path.
    pub path: String,
    /// Paths its imports resolved to, in import order.
    pub imported_paths: Vec<String>,
    /// Local name (alias or imported name) -> the path it came from.
    pub aliases: HashMap<String, String>,
    /// Local name -> the name it has where it is defined, for an import
    /// that renames (`from m import b as c`: `c` -> `b`).
    pub renamed: HashMap<String, String>,
    /// A class of this file (symbol path) -> its resolved bases (path,
    /// symbol path), in order: where `self.m()` finds an inherited `m`.
    pub bases: HashMap<String, Vec<(String, String)>>,
    /// What the package entry files this file imports bring in (shared by
    /// every file of a run).
    pub reexports: std::sync::Arc<ReExports>,
    /// Local name -> the module specifier of an import that brings it in
    /// and resolves to no file of the resource (`from pathlib import Path`,
    /// `import node from '@astrojs/node'`): a guess binds such a name only
    /// to a symbol whose path names that module ([`names_module`]).
    pub external: HashMap<String, String>,
}

impl FileScope {
    /// Records an import of `module` that resolved to no file, bringing `names`.
    pub fn add_external(&mut self, module: &str, names: &[String]) {
        for n in names.iter().filter(|n| n.as_str() != "*") {
            let (_, local) = imported_name(n);
            self.external.entry(local.to_string()).or_insert_with(|| module.to_string());
        }
    }
}

/// Whether `path` names the module an unresolved import was written
/// against. A path-like specifier (`astro/config`, `@astrojs/mdx`,
/// `../dist/content/content-layer.js`, `astro:middleware`): one of its
/// words is a folder or the file's stem. A dotted or Rust one
/// (`pydantic_core`, `com.squareup.moshi.JsonAdapter`, `bat::input::Input`):
/// its package (a class name last and a Rust crate name first left aside)
/// is consecutive folders, or the file's stem last. A runtime's own modules
/// (`node:path`) name none. What the tree holds under a package's name (a
/// monorepo's packages, a build's sources) is found so; a standard or
/// third-party module (`pathlib`, `linkedom`, `typing_extensions`,
/// `org.w3c.dom.Document`) has no namesake in the tree.
pub fn names_module(module: &str, path: &str) -> bool {
    if module.starts_with("node:") {
        return false;
    }
    let stem = |w: &str| w.rsplit_once('.').map_or(w, |(stem, _)| stem).to_string();
    let parts: Vec<String> = path.split('/').map(stem).collect();
    if module.contains('/') || (module.contains(':') && !module.contains("::")) {
        let generic =
            |w: &str| matches!(w, "" | "." | ".." | "src" | "lib" | "index" | "dist" | "js" | "ts" | "mjs" | "cjs");
        return module
            .split(['/', ':'])
            .map(|w| stem(w.trim_start_matches('@')))
            .filter(|w| !generic(w))
            .any(|w| parts.contains(&w));
    }
    let mut package: Vec<&str> = module.split(['.', ':']).filter(|s| !s.is_empty()).collect();
    if module.contains("::") && package.len() > 1 {
        package.remove(0);
    }
    if package.len() > 1 && package.last().is_some_and(|s| s.starts_with(char::is_uppercase)) {
        package.pop();
    }
    !package.is_empty() && parts.windows(package.len()).any(|w| w.iter().zip(&package).all(|(p, s)| p == s))
}

/// What package entry files (`__init__.py`, `index.ts`) bring in through
/// their own imports, for a name read through the package (`click.echo`,
/// `from click import echo`) that the entry file imports rather than
/// defines.
#[derive(Clone, Debug, Default)]
pub struct ReExports {
    /// Entry path -> local name -> (path, name defined there).
    names: HashMap<String, HashMap<String, (String, String)>>,
    /// Entry path -> the paths it imports everything from (`import *`), in order.
    everything: HashMap<String, Vec<String>>,
}

impl ReExports {
    /// Whether `path` is a package's entry file, whose imports are the
    /// package's names: Python's `__init__.py`, JavaScript's and
    /// TypeScript's `index` files, Rust's `lib.rs` and `mod.rs` (`pub use`).
    pub fn is_entry(path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        matches!(name, "__init__.py" | "lib.rs" | "mod.rs")
            || name.split_once('.').is_some_and(|(stem, ext)| {
                stem == "index" && matches!(ext, "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts")
            })
    }

    /// Records that `entry` imports `names` (as recorded: `b as c`, `*`) from `target`.
    pub fn add(&mut self, entry: &str, target: &str, names: &[String]) {
        for n in names {
            if n == "*" {
                let all = self.everything.entry(entry.to_string()).or_default();
                if !all.iter().any(|p| p == target) {
                    all.push(target.to_string());
                }
                continue;
            }
            let (original, local) = imported_name(n);
            self.names
                .entry(entry.to_string())
                .or_default()
                .entry(local.to_string())
                .or_insert_with(|| (target.to_string(), original.to_string()));
        }
    }

    /// Names the entries bring in (their local names), for re-resolving
    /// what names them.
    pub fn local_names(&self) -> impl Iterator<Item = &str> {
        self.names.values().flat_map(|m| m.keys().map(String::as_str))
    }

    /// Names defined elsewhere that the entries bring in under another one.
    pub fn originals(&self) -> impl Iterator<Item = &str> {
        self.names.values().flat_map(|m| m.values().map(|(_, o)| o.as_str()))
    }
}

impl SymbolTable {
    /// Adds a symbol (file nodes, with an empty symbol path, are reached by
    /// path and not added). Call [`SymbolTable::finish`] before resolving.
    /// A symbol past the 4 GiB the table's offsets reach is left out (its
    /// references stay unresolved).
    pub fn insert(&mut self, entry: SymbolEntry<'_>) {
        if entry.symbol_path.is_empty() {
            return;
        }
        let Some(path) = self.path_id(entry.path) else { return };
        let Some(symbol_path) = self.text.push(entry.symbol_path) else { return };
        let name = if entry.symbol_path.ends_with(entry.name) {
            let len = entry.name.len() as u32;
            TextSpan { start: symbol_path.start + symbol_path.len - len, len }
        } else {
            let Some(name) = self.text.push(entry.name) else { return };
            name
        };
        self.symbols.push(Symbol { path, symbol_path, name, kind: entry.kind });
    }

    /// [`SymbolTable::insert`], keeping what a Go function's or a Python
    /// function's or method's `signature` declares it returns
    /// ([`crate::lang::go::result_type`], [`crate::lang::python::result_type`]):
    /// `New().m` and `r.m` after `r := New()` are then that type's `m`.
    pub fn insert_signed(&mut self, entry: SymbolEntry<'_>, signature: &str) {
        let key = || (entry.path.into(), entry.symbol_path.into());
        let Declared { returns, embeds } = declared(entry.path, entry.kind, signature);
        if !embeds.is_empty() {
            self.embeds.insert(key(), embeds.into_iter().map(String::into_boxed_str).collect());
        }
        if let Some(ty) = returns {
            self.results.insert(key(), ty.into());
        }
        self.insert(entry);
    }

    /// The type names what the table holds refers to: what functions
    /// return and what structs embed. A table read by name reads these too,
    /// so resolution finds the types (and their embeddings) a small change's
    /// references read through.
    pub fn referenced_types(&self) -> BTreeSet<String> {
        let returned = self.results.values().map(|t| t.to_string());
        returned.chain(self.embeds.values().flatten().map(|t| t.to_string())).collect()
    }

    /// `name` as a method of the class the Python function `found` declares
    /// it returns: what the function that runs declares, else what one of
    /// its `@overload`s before it does (the function itself often returns a
    /// type variable, `-> type[ModelT]`, where an overload says `->
    /// type[BaseModel]`); the class in the function's file first, else the
    /// one class of that name anywhere holding the method.
    fn python_returned(
        &self,
        found: SymbolEntry<'_>,
        name: &str,
        kind: crate::model::RefKind,
    ) -> Option<SymbolEntry<'_>> {
        let mut definitions: Vec<SymbolEntry<'_>> = self
            .in_file(found.path, found.name)
            .iter()
            .map(|&i| self.entry(i))
            .filter(|e| base_symbol(e.symbol_path) == base_symbol(found.symbol_path))
            .collect();
        definitions.sort_by_key(|e| std::cmp::Reverse(definition_order(e)));
        for definition in definitions {
            let Some(ty) = self.results.get(&(definition.path.into(), definition.symbol_path.into())) else {
                continue;
            };
            // `-> Self`: the class of the method.
            let ty = match &**ty {
                "Self" if definition.kind == crate::model::NodeKind::Method => {
                    definition.symbol_path.rsplit_once('.').map_or("", |(class, _)| class)
                }
                "Self" => continue,
                ty => ty,
            };
            let member = format!("{ty}.{name}");
            let methods: Vec<SymbolEntry<'_>> = self
                .named(name)
                .iter()
                .map(|&i| self.entry(i))
                .filter(|e| {
                    kind_fits(kind, e.kind)
                        && family_of(e.path) == Family::Python
                        && base_symbol(e.symbol_path) == member
                })
                .collect();
            let in_own_file = methods.iter().copied().filter(|e| e.path == found.path);
            if let Some(method) = last_definition(in_own_file).or_else(|| last_definition(methods.into_iter())) {
                return Some(method);
            }
        }
        None
    }

    /// `name` as a method of a type that the Go struct `ty` of the package
    /// in `dir` embeds, through up to four embeddings (`Engine.GET`:
    /// `RouterGroup.GET`), first embedded first.
    fn promoted<'s>(
        &'s self,
        dir: &str,
        ty: &str,
        name: &str,
        in_package: &dyn Fn(&str, &str) -> Option<SymbolEntry<'s>>,
    ) -> Option<SymbolEntry<'s>> {
        // Breadth first: a shallower embedding's method wins, as in Go.
        let mut level: Vec<&str> = vec![ty];
        let mut seen: Vec<&str> = Vec::new();
        for _ in 0..4 {
            let mut next = Vec::new();
            for ty in level {
                if seen.contains(&ty) {
                    continue;
                }
                seen.push(ty);
                let structs = self.named(ty).iter().map(|&i| self.entry(i)).filter(|e| {
                    e.kind == crate::model::NodeKind::Struct
                        && family_of(e.path) == Family::Go
                        && dir_of(e.path) == dir
                        && e.symbol_path == ty
                });
                for s in structs {
                    for embedded in self.embeds.get(&(s.path.into(), s.symbol_path.into())).into_iter().flatten() {
                        if let Some(found) = in_package(dir, &format!("{embedded}.{name}")) {
                            return Some(found);
                        }
                        next.push(&**embedded);
                    }
                }
            }
            level = next;
        }
        None
    }

    fn path_id(&mut self, path: &str) -> Option<u32> {
        // Symbols come file by file: the last path is the likeliest.
        if let Some(last) = self.paths.last()
            && **last == *path
        {
            return Some(self.paths.len() as u32 - 1);
        }
        if let Some(&id) = self.path_index.get(path) {
            return Some(id);
        }
        let id = u32::try_from(self.paths.len()).ok()?;
        self.paths.push(path.into());
        self.path_index.insert(path.into(), id);
        Some(id)
    }

    /// Builds the lookups once every symbol is inserted.
    pub fn finish(&mut self) {
        let ids = || (0..self.symbols.len() as u32).collect::<Vec<u32>>();
        let mut by_name = ids();
        by_name.sort_by(|&a, &b| self.entry(a).name.cmp(self.entry(b).name).then(a.cmp(&b)));
        let mut by_file = ids();
        by_file.sort_by(|&a, &b| {
            let (ea, eb) = (self.entry(a), self.entry(b));
            (ea.path, ea.name, a).cmp(&(eb.path, eb.name, b))
        });
        (self.by_name, self.by_file) = (by_name, by_file);
    }

    /// The symbol `id`.
    fn entry(&self, id: u32) -> SymbolEntry<'_> {
        let symbol = &self.symbols[id as usize];
        SymbolEntry {
            path: &self.paths[symbol.path as usize],
            symbol_path: self.text.get(symbol.symbol_path),
            name: self.text.get(symbol.name),
            kind: symbol.kind,
        }
    }

    /// Ids of the symbols named `name` in file `path`.
    fn in_file(&self, path: &str, name: &str) -> &[u32] {
        let key = |&id: &u32| {
            let e = self.entry(id);
            (e.path, e.name)
        };
        let start = self.by_file.partition_point(|id| key(id) < (path, name));
        let end = start + self.by_file[start..].partition_point(|id| key(id) == (path, name));
        &self.by_file[start..end]
    }

    /// Ids of the symbols named `name`.
    fn named(&self, name: &str) -> &[u32] {
        let start = self.by_name.partition_point(|&id| self.entry(id).name < name);
        let end = start + self.by_name[start..].partition_point(|&id| self.entry(id).name == name);
        &self.by_name[start..end]
    }

    pub fn len(&self) -> usize {
        self.symbols.len()
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    /// Binds a by-name reference written in `scope.path` inside the node
    /// `from_symbol_path` to a symbol, or `None` when the name is unknown or
    /// ambiguous. Order: `self`/`this` members of the enclosing type; a
    /// qualifier naming an import; the same file (innermost scope first);
    /// top-level symbols of imported files; a symbol unique in the resource.
    ///
    /// A call is never bound to the node it is written in (no self-loop),
    /// and a qualified call (`obj.m()`, `self.app.m()`) binds only when its
    /// qualifier proves the owner: a bare `self`/`this`/`cls`/`Self` (the
    /// enclosing type's member, else an inherited one through
    /// [`FileScope::bases`]; Go: the receiver or a typed parameter, which the
    /// analyzer writes as its type), `super` (a base's member), an imported
    /// module or type, or a type of this file (or Go package). An unknown
    /// qualifier leaves the call unresolved rather than bound to whatever
    /// same-named symbol is near.
    pub fn resolve(
        &self,
        scope: &FileScope,
        from_symbol_path: &str,
        kind: crate::model::RefKind,
        target: &str,
    ) -> Option<SymbolEntry<'_>> {
        let found = self.bind(scope, from_symbol_path, kind, target)?;
        let self_loop = found.path == scope.path && found.symbol_path == from_symbol_path;
        if self_loop && kind == crate::model::RefKind::Calls {
            return None;
        }
        Some(found)
    }

    fn bind(
        &self,
        scope: &FileScope,
        from_symbol_path: &str,
        kind: crate::model::RefKind,
        target: &str,
    ) -> Option<SymbolEntry<'_>> {
        let segments: Vec<&str> = segments(target).collect();
        let name = reference_name(target);
        if name.is_empty() {
            return None;
        }
        if segments.len() == 1
            && let (Some(original), Some(path)) = (scope.renamed.get(name), scope.aliases.get(name))
        {
            // `c()` after `from m import b as c`: `b` of `m`.
            let found = self.in_file(path, original).iter().map(|&i| self.entry(i));
            let found = last_definition(found.filter(|e| kind_fits(kind, e.kind) && !e.symbol_path.contains('.')));
            return found.or_else(|| self.reexported(scope, kind, path, original, &[]));
        }
        let is_call = kind == crate::model::RefKind::Calls;
        let family = family_of(&scope.path);
        let qualifier = (segments.len() > 1).then(|| segments[0]);
        let ids = self.named(name);
        // No symbol has the name, unless a package brings it in under
        // another (`click.Cmd` for `Command`).
        let via_entry = || scope.aliases.get(segments[0]).is_some_and(|p| ReExports::is_entry(p));
        if ids.is_empty() && !via_entry() {
            return None;
        }
        // `format!(..)`: a Rust macro invocation is a macro's, never a
        // function's of the same name (a test `fn format`).
        let macro_call = target.ends_with('!');
        let fits =
            |e: &SymbolEntry| kind_fits(kind, e.kind) && (!macro_call || e.kind == crate::model::NodeKind::Macro);
        let not_self = |e: &SymbolEntry| !(e.path == scope.path && e.symbol_path == from_symbol_path);
        // Symbols of one file with this name (files hold few; names can be
        // shared by thousands across a resource).
        let in_file = |path: &str| -> Vec<SymbolEntry<'_>> {
            self.in_file(path, name).iter().map(|&i| self.entry(i)).filter(fits).collect()
        };
        let top_level = |path: &str| -> Option<SymbolEntry<'_>> {
            last_definition(in_file(path).into_iter().filter(|e| !e.symbol_path.contains('.')))
        };
        // A Go package is its directory: the symbol of that package with
        // this exact symbol path.
        let in_package = |dir: &str, symbol_path: &str| -> Option<SymbolEntry<'_>> {
            unique(
                ids.iter()
                    .map(|&i| self.entry(i))
                    .filter(fits)
                    .filter(|e| family_of(e.path) == Family::Go && dir_of(e.path) == dir)
                    .filter(|e| e.symbol_path == symbol_path),
            )
        };
        let same_file = in_file(&scope.path);
        // Go: `New().Use` (and `r.Use` after `r := New()`, which the analyzer
        // writes so): a method of the type the function declares it returns,
        // in that function's package. Python the same (`ctx.find_object`
        // after `ctx = get_current_context()`), the class where the function
        // is or else the one class of that name holding the method.
        if matches!(family, Family::Go | Family::Python)
            && let Some(at) = segments.iter().position(|s| s.ends_with("()"))
        {
            let function = segments[..=at].join(".");
            let function = function.strip_suffix("()").filter(|f| at + 2 == segments.len() && !f.contains('('))?;
            let found = self.bind(scope, from_symbol_path, crate::model::RefKind::Calls, function)?;
            if family == Family::Go {
                let ty = self.results.get(&(found.path.into(), found.symbol_path.into()))?;
                let dir = dir_of(found.path);
                return in_package(dir, &format!("{ty}.{name}")).or_else(|| self.promoted(dir, ty, name, &in_package));
            }
            return self.python_returned(found, name, kind);
        }
        if let Some(q) = qualifier {
            if matches!(q, "self" | "this" | "Self" | "cls") {
                // `self.app.add_url_rule`: a member of a field, whose type
                // is unknown; never the enclosing type's own member.
                if segments.len() != 2 {
                    return None;
                }
                if family == Family::Lua {
                    // `self:m()` in `function Path:f()`: `Path:m` (or `Path.m`).
                    let owner = lua_owner(from_symbol_path)?;
                    let wanted = || lua_segments(owner).chain(std::iter::once(name));
                    return same_file.iter().copied().find(|e| lua_segments(e.symbol_path).eq(wanted()));
                }
                // The type's own member shadows its bases' (the caller
                // itself included: `resolve` drops that self-loop).
                if let Some(found) = innermost(&same_file, from_symbol_path, true) {
                    return Some(found);
                }
                // JavaScript's functions hung on an object (`res.download =
                // function download`, Express's whole API) are top level in
                // their file, and `this.sendFile` inside one is the object's
                // other function, hung the same way: the file's only
                // top-level function of that name.
                if family == Family::Js
                    && q == "this"
                    && !from_symbol_path.contains('.')
                    && let Some(found) = top_level(&scope.path).filter(|e| not_self(e))
                {
                    return Some(found);
                }
                return self.inherited(scope, from_symbol_path, name, kind);
            }
            if q == "super" {
                // A base class's member: never the enclosing type's own.
                return if segments.len() == 2 { self.inherited(scope, from_symbol_path, name, kind) } else { None };
            }
            let member = segments.join(".");
            if let Some(path) = scope.aliases.get(q) {
                // `module.func`, `Class.method` of an imported class, or
                // `module.Class.method`; a class imported under another
                // name (`Pool as BufferPool`) by the name it is defined as.
                let defined = match scope.renamed.get(q) {
                    Some(original) => format!("{original}.{}", segments[1..].join(".")),
                    None => member.clone(),
                };
                if let Some(e) =
                    last_definition(in_file(path).into_iter().filter(|e| same_symbol(family, e.symbol_path, &defined)))
                {
                    return Some(e);
                }
                let rest = segments[1..].join(".");
                if let Some(e) =
                    last_definition(in_file(path).into_iter().filter(|e| same_symbol(family, e.symbol_path, &rest)))
                {
                    return Some(e);
                }
                // `click.echo`: what the package's entry file imports.
                if let Some(e) = self.reexported(scope, kind, path, segments[1], &segments[2..]) {
                    return Some(e);
                }
                // `Router::new` after `use axum::Router`: a type the entry
                // file brings in, then its member.
                let original = scope.renamed.get(q).map_or(q, String::as_str);
                if let Some(e) = self.reexported(scope, kind, path, original, &segments[1..]) {
                    return Some(e);
                }
                if family == Family::Go && family_of(path) == Family::Go {
                    return in_package(dir_of(path), &rest);
                }
                if family == Family::Lua && segments.len() == 2 {
                    // `bit.lshift` after `local bit = require("plenary.bit")`:
                    // the module's table (`M.lshift`), or its top-level
                    // function, when one of the file's bears the name.
                    return unique(in_file(path).into_iter().filter(|e| lua_segments(e.symbol_path).count() <= 2));
                }
                if segments.len() == 2 {
                    return top_level(path);
                }
                return None;
            }
            // `Type.method` / `Type::new` written against a type of this
            // file (or, in Go, of this package).
            if let Some(e) = last_definition(
                same_file.iter().copied().filter(|e| not_self(e) && same_symbol(family, e.symbol_path, &member)),
            ) {
                return Some(e);
            }
            if family == Family::Go
                && let Some(e) = in_package(dir_of(&scope.path), &member).or_else(|| {
                    (segments.len() == 2).then(|| self.promoted(dir_of(&scope.path), q, name, &in_package))?
                })
            {
                return Some(e);
            }
            if is_call {
                // `obj.m()`: the owner is unknown.
                return None;
            }
        }
        // A bare name never means a method, except where members are in
        // scope unqualified (Java, C++).
        let in_scope = |e: &SymbolEntry| family.implicit_members() || e.kind != crate::model::NodeKind::Method;
        let visible: Vec<SymbolEntry<'_>> = same_file.iter().copied().filter(in_scope).filter(not_self).collect();
        if let Some(found) = innermost(&visible, from_symbol_path, false) {
            return Some(found);
        }
        if is_call && qualifier.is_none() && same_file.iter().any(|e| !not_self(e) && in_scope(e)) {
            // A recursive call: the name is the caller itself.
            return None;
        }
        if let Some(path) = scope.aliases.get(name) {
            if let Some(found) = last_definition(in_file(path).into_iter()) {
                return Some(found);
            }
            // `from click import echo`: what the package's entry file imports.
            if let Some(found) = self.reexported(scope, kind, path, name, &[]) {
                return Some(found);
            }
        }
        // Go: another file of the same package, before any import (only a
        // dot import brings bare names, and the package's own come first).
        let go_bare = family == Family::Go && qualifier.is_none();
        if go_bare && let Some(found) = in_package(dir_of(&scope.path), name) {
            return Some(found);
        }
        // A name the file imports from outside is not a namesake in a file
        // it imports otherwise (`from typing_extensions import Self` beside
        // `from ._internal import _generics`).
        let external = scope.external.get(qualifier.unwrap_or(name));
        for path in scope.imported_paths.iter().filter(|p| external.is_none_or(|m| names_module(m, p))) {
            if let Some(found) = top_level(path) {
                return Some(found);
            }
        }
        if go_bare {
            return None;
        }
        if is_call
            && self.in_file(&scope.path, name).iter().any(|&i| {
                let e = self.entry(i);
                e.kind == crate::model::NodeKind::Variable && e.symbol_path == name
            })
        {
            // The file binds the name itself, to a value (`var resolve =
            // path.resolve`, Lua `local eq = assert.are.same`): that
            // binding, not a namesake elsewhere in the resource.
            return None;
        }
        if qualifier.is_none() || !is_call {
            // Top-level symbols only: a nested function is not visible
            // outside the function that holds it. Nor, from the code a
            // project runs, a test's or a fixture's: the code never imports
            // them, and the guess bound `Pair` to a test folder's
            // `android/util/Pair.java`, `malloc` to a test framework's
            // override header.
            let from_tests = FileRole::of(&scope.path) == FileRole::Test;
            return unique(
                ids.iter()
                    .map(|&i| self.entry(i))
                    .filter(fits)
                    .filter(in_scope)
                    .filter(|e| family_of(e.path) == family)
                    .filter(|e| kind != crate::model::RefKind::Calls || !e.symbol_path.contains('.'))
                    .filter(|e| from_tests || FileRole::of(e.path) != FileRole::Test)
                    .filter(|e| external.is_none_or(|module| names_module(module, e.path))),
            );
        }
        None
    }
}

impl SymbolTable {
    /// `name` (with `rest`, a member path under it) read through the package
    /// entry file `entry` that imports it: the symbol where it is defined,
    /// through up to three entries (`pkg/__init__.py` importing from
    /// `pkg/sub/__init__.py`).
    fn reexported(
        &self,
        scope: &FileScope,
        kind: crate::model::RefKind,
        entry: &str,
        name: &str,
        rest: &[&str],
    ) -> Option<SymbolEntry<'_>> {
        // The symbol `path` defines at the symbol path `parts`.
        let find = |path: &str, parts: &[&str]| -> Option<SymbolEntry<'_>> {
            let wanted = parts.join(".");
            last_definition(
                self.in_file(path, parts.last()?)
                    .iter()
                    .map(|&i| self.entry(i))
                    .filter(|e| kind_fits(kind, e.kind) && redefined_as(family_of(path), e.symbol_path) == wanted),
            )
        };
        let (mut at, mut name, mut rest) = (entry.to_string(), name.to_string(), rest);
        for _ in 0..3 {
            let Some((path, original)) = scope.reexports.names.get(&at).and_then(|m| m.get(&name)) else {
                let all = scope.reexports.everything.get(&at)?;
                let parts: Vec<&str> = std::iter::once(name.as_str()).chain(rest.iter().copied()).collect();
                return all.iter().find_map(|path| find(path, &parts));
            };
            let parts: Vec<&str> = std::iter::once(original.as_str()).chain(rest.iter().copied()).collect();
            if let Some(found) = find(path, &parts) {
                return Some(found);
            }
            // `from . import dataclasses` in the entry: the name is that
            // module itself, and what follows lies in it (or, for a
            // subpackage, is read through it).
            let whole_module = module_name(path) == original && !rest.is_empty();
            if whole_module && let Some(found) = find(path, rest) {
                return Some(found);
            }
            if !ReExports::is_entry(path) {
                return None;
            }
            if whole_module {
                (at, name, rest) = (path.clone(), rest[0].to_string(), &rest[1..]);
            } else {
                (at, name) = (path.clone(), original.clone());
            }
        }
        None
    }

    /// `name` as a member of a base of the class enclosing `from` (bases of
    /// bases too, while they are classes of this file), first base first.
    fn inherited(
        &self,
        scope: &FileScope,
        from: &str,
        name: &str,
        kind: crate::model::RefKind,
    ) -> Option<SymbolEntry<'_>> {
        let mut owner = from;
        let bases = loop {
            if let Some(bases) = scope.bases.get(owner) {
                break bases;
            }
            owner = owner.rsplit_once('.')?.0;
        };
        let mut queue: std::collections::VecDeque<&(String, String)> = bases.iter().collect();
        let mut seen: Vec<&(String, String)> = Vec::new();
        while let Some(base) = queue.pop_front() {
            if seen.contains(&base) || seen.len() > 32 {
                continue;
            }
            seen.push(base);
            let (path, class) = base;
            let member = format!("{class}.{name}");
            let found = self.in_file(path, name).iter().map(|&i| self.entry(i));
            if let Some(e) = found.filter(|e| kind_fits(kind, e.kind)).find(|e| e.symbol_path == member) {
                return Some(e);
            }
            if *path == scope.path
                && let Some(more) = scope.bases.get(class)
            {
                queue.extend(more);
            }
        }
        None
    }
}

/// Source languages that share a namespace for resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Python,
    Js,
    Rust,
    Go,
    Java,
    C,
    Lua,
    Other,
}

impl Family {
    /// Whether a type's members are in scope by bare name inside its methods.
    fn implicit_members(self) -> bool {
        matches!(self, Family::Java | Family::C | Family::Other)
    }
}

/// What resolution reads of a definition's signature
/// ([`SymbolTable::insert_signed`]): the type a Go function or a Python
/// function or method declares it returns, the types a Go struct embeds.
/// A signature change that leaves it the same binds nothing anew.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    pub returns: Option<String>,
    pub embeds: Vec<String>,
}

/// What a definition of `kind` in the file at `path` declares in `signature`.
pub fn declared(path: &str, kind: crate::model::NodeKind, signature: &str) -> Declared {
    use crate::model::NodeKind;
    match (family_of(path), kind) {
        (Family::Go, NodeKind::Function) => {
            Declared { returns: crate::lang::go::result_type(signature), ..Declared::default() }
        }
        (Family::Python, NodeKind::Function | NodeKind::Method) => {
            Declared { returns: crate::lang::python::result_type(signature), ..Declared::default() }
        }
        (Family::Go, NodeKind::Struct) => {
            Declared { embeds: crate::lang::go::embedded_types(signature), ..Declared::default() }
        }
        _ => Declared::default(),
    }
}

fn family_of(path: &str) -> Family {
    let ext = file_name(path).rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "py" | "pyi" => Family::Python,
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Family::Js,
        "rs" => Family::Rust,
        "go" => Family::Go,
        "java" | "kt" | "scala" => Family::Java,
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" => Family::C,
        "lua" => Family::Lua,
        _ => Family::Other,
    }
}

/// A Lua symbol path's segments: a function is named as written, a method
/// with `:` (`Path:new`), a table's function with `.` (`M.channel.counter`).
fn lua_segments(symbol_path: &str) -> impl Iterator<Item = &str> {
    symbol_path.split(['.', ':'])
}

/// The table a Lua method belongs to, which `self` is inside it: `Path` of
/// `Path:mkdir` (and of a function nested in it), `M` of `M.rshift`.
fn lua_owner(from_symbol_path: &str) -> Option<&str> {
    match from_symbol_path.split_once(':') {
        Some((owner, _)) => Some(owner),
        None => from_symbol_path.rsplit_once('.').map(|(owner, _)| owner),
    }
}

/// Whether `symbol_path` is the member written `dotted` (`Path.new`): the
/// same text, or in Lua the same segments (`Path:new`).
fn same_symbol(family: Family, symbol_path: &str, dotted: &str) -> bool {
    redefined_as(family, symbol_path) == dotted
        || (family == Family::Lua && lua_segments(symbol_path).eq(dotted.split('.')))
}

/// An import name as recorded: `(original, local)`; a renamed import is
/// recorded as `"b as c"` -> `("b", "c")`.
pub fn imported_name(name: &str) -> (&str, &str) {
    name.split_once(" as ").unwrap_or((name, name))
}

/// The segments of a qualified reference (`a.b`, `A::b`, `p->b`).
fn segments(target: &str) -> impl DoubleEndedIterator<Item = &str> {
    target.split(['.', ':', '>', '-']).filter(|s| !s.is_empty() && *s != "<")
}

/// The name a reference is read through: its first segment (`pkg` of
/// `pkg.echo`, `Type` of `Type::new`).
pub fn reference_head(target: &str) -> &str {
    segments(target).next().unwrap_or("")
}

/// The function whose result a reference is read through (`New` of
/// `New().Use` and `gin.New().Use`), which resolution looks up too.
pub fn result_of_call(target: &str) -> Option<&str> {
    segments(target).find_map(|s| s.strip_suffix("()")).filter(|f| !f.is_empty() && !f.contains(['(', ')']))
}

/// The simple name a by-name reference binds to: its last segment, without
/// a macro's `!` (`os.path.join` -> `join`, `Type::new` -> `new`).
pub fn reference_name(target: &str) -> &str {
    segments(target).next_back().unwrap_or("").trim_end_matches('!')
}

/// The candidate in the innermost scope enclosing `from` (longest shared
/// symbol-path prefix); with `members_only`, only members of a type.
fn innermost<'e>(same_file: &[SymbolEntry<'e>], from: &str, members_only: bool) -> Option<SymbolEntry<'e>> {
    let scope_of = |e: &SymbolEntry| e.symbol_path.rsplit_once('.').map_or("", |(p, _)| p).to_string();
    let mut best: Option<(usize, SymbolEntry<'e>)> = None;
    for &e in same_file {
        let parent = scope_of(&e);
        if members_only && (parent.is_empty() || e.kind == crate::model::NodeKind::Function) {
            continue;
        }
        let encloses = parent.is_empty() || from == parent || from.starts_with(&format!("{parent}."));
        if !encloses {
            continue;
        }
        let depth = if parent.is_empty() { 0 } else { parent.split('.').count() };
        if best.is_none_or(|(d, b)| depth > d || (depth == d && e.symbol_path < b.symbol_path)) {
            best = Some((depth, e));
        }
    }
    best.map(|(_, e)| e)
}

fn unique<'e>(mut it: impl Iterator<Item = SymbolEntry<'e>>) -> Option<SymbolEntry<'e>> {
    let first = it.next()?;
    if it.next().is_some() { None } else { Some(first) }
}

/// A symbol path without the `~N` that marks a further definition of one
/// symbol in one file (`get_current_context~2`).
fn base_symbol(symbol_path: &str) -> &str {
    match symbol_path.rsplit_once('~') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => symbol_path,
    }
}

/// The symbol a definition defines again where the last definition is the
/// one that runs (Python, JavaScript and TypeScript: `f~2` is `f`); in
/// other languages a further definition is an overload or a variant in its
/// own right, named as written.
fn redefined_as(family: Family, symbol_path: &str) -> &str {
    if matches!(family, Family::Python | Family::Js) { base_symbol(symbol_path) } else { symbol_path }
}

/// The one symbol of `it`, or, when they are all definitions of one symbol
/// in one file (`f`, `f~2`, `f~3`: Python's `@overload`s before the
/// function, a redefinition, TypeScript's overload signatures), the last,
/// which is the one that runs.
fn last_definition<'e>(it: impl Iterator<Item = SymbolEntry<'e>>) -> Option<SymbolEntry<'e>> {
    let all: Vec<SymbolEntry<'e>> = it.collect();
    let first = *all.first()?;
    let same = |e: &SymbolEntry| e.path == first.path && base_symbol(e.symbol_path) == base_symbol(first.symbol_path);
    if !all.iter().all(same) {
        return None;
    }
    all.into_iter().max_by_key(definition_order)
}

/// Which definition of its symbol in its file a symbol is: 1 for `f`, 2
/// for `f~2`.
fn definition_order(e: &SymbolEntry) -> u32 {
    e.symbol_path.rsplit_once('~').and_then(|(_, n)| n.parse::<u32>().ok()).unwrap_or(1)
}

/// Whether a symbol of kind `target` can be what a reference of `kind` means.
fn kind_fits(kind: crate::model::RefKind, target: crate::model::NodeKind) -> bool {
    use crate::model::{NodeKind as N, RefKind as R};
    let is_type = matches!(target, N::Class | N::Interface | N::Trait | N::Struct | N::Enum | N::TypeAlias);
    match kind {
        R::Calls => target.is_callable() || matches!(target, N::Class | N::Struct),
        R::Inherits => is_type,
        R::Mentions => is_type,
        R::Import => matches!(target, N::Module | N::Namespace),
    }
}

#[cfg(test)]
mod table_tests {
    use super::*;
    use crate::model::{NodeKind, RefKind};

    fn entry<'a>(path: &'a str, symbol_path: &'a str, kind: NodeKind) -> SymbolEntry<'a> {
        // A further definition (`f~2`) is named as the first.
        let name = base_symbol(symbol_path).rsplit(['.', ':']).next().unwrap();
        SymbolEntry { path, symbol_path, name, kind }
    }

    fn table() -> SymbolTable {
        let mut t = SymbolTable::default();
        for e in [
            entry("a.py", "App", NodeKind::Class),
            entry("a.py", "App.save", NodeKind::Method),
            entry("a.py", "save", NodeKind::Function),
            entry("a.py", "helper", NodeKind::Function),
            entry("b.py", "helper", NodeKind::Function),
            entry("b.py", "Base", NodeKind::Class),
            entry("c.py", "Base", NodeKind::Class),
            entry("c.py", "only_here", NodeKind::Function),
        ] {
            t.insert(e);
        }
        t.finish();
        t
    }

    fn scope(path: &str, imports: &[&str]) -> FileScope {
        FileScope {
            path: path.into(),
            imported_paths: imports.iter().map(|s| s.to_string()).collect(),
            aliases: HashMap::new(),
            renamed: HashMap::new(),
            bases: HashMap::new(),
            reexports: Default::default(),
            external: HashMap::new(),
        }
    }

    #[test]
    fn a_macro_invocation_binds_a_macro_never_a_function_of_its_name() {
        let mut t = SymbolTable::default();
        t.insert(entry("src/text.rs", "format", NodeKind::Function));
        t.insert(entry("src/lib.rs", "square", NodeKind::Macro));
        t.finish();
        let s = scope("src/main.rs", &[]);
        assert!(t.resolve(&s, "main", RefKind::Calls, "format!").is_none(), "`fn format` is no `format!`");
        assert_eq!(t.resolve(&s, "main", RefKind::Calls, "format").map(|e| e.path), Some("src/text.rs"));
        assert_eq!(t.resolve(&s, "main", RefKind::Calls, "square!").map(|e| e.path), Some("src/lib.rs"));
    }

    #[test]
    fn a_name_imported_from_outside_binds_only_where_its_module_is() {
        let mut t = SymbolTable::default();
        t.insert(entry("src/click/types.py", "Path", NodeKind::Class));
        t.insert(entry("packages/astro/src/config/index.ts", "defineConfig", NodeKind::Function));
        t.finish();
        let mut s = scope("src/click/_termui_impl.py", &[]);
        s.add_external("pathlib", &["Path".to_string()]);
        assert!(t.resolve(&s, "f", RefKind::Calls, "Path").is_none(), "pathlib's Path is not click's");
        let mut s = scope("examples/app/astro.config.mjs", &[]);
        s.add_external("astro/config", &["defineConfig".to_string()]);
        let found = t.resolve(&s, "", RefKind::Calls, "defineConfig").map(|e| e.path);
        assert_eq!(found, Some("packages/astro/src/config/index.ts"), "the monorepo's own package");
        assert!(names_module("../../../dist/content/content-layer.js", "packages/astro/src/content/content-layer.ts"));
        assert!(names_module("pydantic_core", "pydantic-core/python/pydantic_core/_pydantic_core.pyi"));
        assert!(names_module("@astrojs/mdx", "packages/integrations/mdx/src/index.ts"));
        assert!(!names_module("node:path", "packages/internal-helpers/src/path.ts"));
        assert!(!names_module("Control.Monad.Zip", "containers/src/Data/Sequence/Internal.hs"));
        assert!(!names_module("org.w3c.dom.Document", "src/main/java/org/jsoup/nodes/Document.java"));
        assert!(names_module(
            "com.squareup.moshi.JsonAdapter",
            "moshi/src/main/java/com/squareup/moshi/JsonAdapter.kt"
        ));
        assert!(names_module("bat::input::Input", "src/input.rs"));
        assert!(names_module("astro:middleware", "packages/astro/src/core/middleware/index.ts"));
        // Imported otherwise, a file does not lend the name either.
        let mut s = scope("pydantic/main.py", &["src/click/types.py"]);
        s.add_external("typing_extensions", &["Path".to_string()]);
        assert!(t.resolve(&s, "f", RefKind::Mentions, "Path").is_none());
    }

    #[test]
    fn the_code_a_project_runs_binds_no_name_of_a_test_by_a_guess() {
        let mut t = SymbolTable::default();
        t.insert(entry("src/test/java/android/util/Pair.java", "Pair", NodeKind::Class));
        t.insert(entry("tests/helpers.py", "make_app", NodeKind::Function));
        t.insert(entry("app/factory.py", "make_app", NodeKind::Function));
        t.finish();
        let s = scope("src/main/java/com/x/Json.java", &[]);
        assert!(t.resolve(&s, "f", RefKind::Calls, "Pair").is_none());
        // The source's namesake is then the one.
        let s = scope("app/main.py", &[]);
        assert_eq!(t.resolve(&s, "f", RefKind::Calls, "make_app").map(|e| e.path), Some("app/factory.py"));
        // A test binds either way; an import is no guess.
        let s = scope("tests/test_x.py", &[]);
        assert!(t.resolve(&s, "f", RefKind::Calls, "make_app").is_none(), "two namesakes");
        let s = scope("app/main.py", &["tests/helpers.py"]);
        assert_eq!(t.resolve(&s, "f", RefKind::Calls, "make_app").map(|e| e.path), Some("tests/helpers.py"));
    }

    #[test]
    fn a_name_that_does_not_end_its_symbol_path_is_found_by_that_name_alone() {
        let mut t = SymbolTable::default();
        t.insert(SymbolEntry { path: "a.go", symbol_path: "Server.ServeHTTP", name: "serve", kind: NodeKind::Method });
        t.insert(entry("a.go", "helper", NodeKind::Function));
        t.insert(entry("b.go", "helper", NodeKind::Function));
        t.insert(SymbolEntry { path: "b.go", symbol_path: "", name: "b.go", kind: NodeKind::File });
        t.finish();
        assert_eq!(t.len(), 3, "a file node is reached by path, not kept");
        let found: Vec<SymbolEntry> = t.named("serve").iter().map(|&i| t.entry(i)).collect();
        assert_eq!(
            found,
            [SymbolEntry { path: "a.go", symbol_path: "Server.ServeHTTP", name: "serve", kind: NodeKind::Method }]
        );
        assert!(t.named("ServeHTTP").is_empty());
        assert_eq!(t.named("helper").len(), 2);
        let in_b: Vec<&str> = t.in_file("b.go", "helper").iter().map(|&i| t.entry(i).path).collect();
        assert_eq!(in_b, ["b.go"]);
    }

    #[test]
    fn self_calls_bind_to_the_enclosing_type() {
        let t = table();
        let s = scope("a.py", &[]);
        assert_eq!(t.resolve(&s, "App.run", RefKind::Calls, "self.save").unwrap().symbol_path, "App.save");
        assert_eq!(t.resolve(&s, "main", RefKind::Calls, "save").unwrap().symbol_path, "save");
        assert_eq!(
            t.resolve(&s, "App.run", RefKind::Calls, "save").unwrap().symbol_path,
            "save",
            "a bare name in a Python method is not a method"
        );
        assert!(t.resolve(&s, "App.save", RefKind::Calls, "super.save").is_none(), "super is not self");
    }

    #[test]
    fn a_call_on_a_field_of_self_is_not_the_enclosing_method() {
        // flask: `self.app.add_url_rule(...)` inside `add_url_rule`.
        let mut t = SymbolTable::default();
        t.insert(entry("flask/blueprints.py", "BlueprintSetupState", NodeKind::Class));
        t.insert(entry("flask/blueprints.py", "BlueprintSetupState.add_url_rule", NodeKind::Method));
        t.finish();
        let s = scope("flask/blueprints.py", &[]);
        let from = "BlueprintSetupState.add_url_rule";
        assert!(t.resolve(&s, from, RefKind::Calls, "self.app.add_url_rule").is_none());
        assert!(t.resolve(&s, from, RefKind::Calls, "self.add_url_rule").is_none(), "no self-loop");
        assert!(t.resolve(&s, from, RefKind::Calls, "add_url_rule").is_none(), "no self-loop");
    }

    #[test]
    fn self_and_super_calls_find_inherited_members_through_resolved_bases() {
        // requests: `PreparedRequest(RequestEncodingMixin, RequestHooksMixin)`
        // calls `self.register_hook`, defined on `RequestHooksMixin`.
        let mut t = SymbolTable::default();
        for (path, symbol, kind) in [
            ("models.py", "Mixin", NodeKind::Class),
            ("models.py", "Hooks", NodeKind::Class),
            ("models.py", "Hooks.register_hook", NodeKind::Method),
            ("models.py", "Prepared", NodeKind::Class),
            ("models.py", "Prepared.prepare_hooks", NodeKind::Method),
            ("base.py", "Root", NodeKind::Class),
            ("base.py", "Root.__init__", NodeKind::Method),
            ("base.py", "Root.fail", NodeKind::Method),
        ] {
            t.insert(entry(path, symbol, kind));
        }
        t.finish();
        let mut s = scope("models.py", &[]);
        let base = |p: &str, c: &str| (p.to_string(), c.to_string());
        s.bases.insert("Prepared".into(), vec![base("models.py", "Mixin"), base("models.py", "Hooks")]);
        s.bases.insert("Hooks".into(), vec![base("base.py", "Root")]);
        let bound = |from: &str, target: &str| {
            t.resolve(&s, from, RefKind::Calls, target).map(|e| format!("{}#{}", e.path, e.symbol_path))
        };
        assert_eq!(
            bound("Prepared.prepare_hooks", "self.register_hook").as_deref(),
            Some("models.py#Hooks.register_hook")
        );
        assert_eq!(bound("Prepared.prepare_hooks", "self.fail").as_deref(), Some("base.py#Root.fail"), "a base's base");
        assert_eq!(bound("Hooks.register_hook", "super.__init__").as_deref(), Some("base.py#Root.__init__"));
        assert_eq!(bound("Prepared.prepare_hooks", "self.missing"), None);
        assert_eq!(bound("Prepared.prepare_hooks", "self.prepare_hooks"), None, "its own, not a base's");
        assert_eq!(bound("Prepared.prepare_hooks", "other.register_hook"), None);
    }

    #[test]
    fn a_call_is_never_bound_to_its_caller() {
        let t = table();
        assert!(t.resolve(&scope("a.py", &[]), "helper", RefKind::Calls, "helper").is_none(), "recursion");
        assert!(
            t.resolve(&scope("a.py", &["b.py"]), "helper", RefKind::Calls, "helper").is_none(),
            "the name is the caller, not b.py's helper"
        );
    }

    #[test]
    fn an_unknown_qualifier_leaves_a_call_unresolved() {
        let t = table();
        let s = scope("a.py", &["b.py"]);
        assert!(t.resolve(&s, "main", RefKind::Calls, "obj.save").is_none(), "not a.py's save");
        assert!(t.resolve(&s, "main", RefKind::Calls, "obj.helper").is_none(), "not an imported helper");
        assert!(t.resolve(&s, "main", RefKind::Calls, "obj.only_here").is_none(), "not the unique one");
        assert_eq!(t.resolve(&s, "main", RefKind::Calls, "helper").unwrap().path, "a.py");
    }

    #[test]
    fn members_are_in_bare_scope_only_where_the_language_says_so() {
        let mut t = SymbolTable::default();
        t.insert(entry("App.java", "App", NodeKind::Class));
        t.insert(entry("App.java", "App.save", NodeKind::Method));
        t.insert(entry("app.ts", "App", NodeKind::Class));
        t.insert(entry("app.ts", "App.save", NodeKind::Method));
        t.finish();
        let found = t.resolve(&scope("App.java", &[]), "App.run", RefKind::Calls, "save").unwrap();
        assert_eq!(found.symbol_path, "App.save", "Java: implicit this");
        assert!(t.resolve(&scope("app.ts", &[]), "App.run", RefKind::Calls, "save").is_none(), "TS needs this.");
        let found = t.resolve(&scope("app.ts", &[]), "App.run", RefKind::Calls, "this.save").unwrap();
        assert_eq!(found.symbol_path, "App.save");
    }

    #[test]
    fn this_in_a_javascript_function_hung_on_an_object_is_the_files_function_of_that_name() {
        let mut t = SymbolTable::default();
        t.insert(entry("lib/response.js", "download", NodeKind::Function));
        t.insert(entry("lib/response.js", "sendFile", NodeKind::Function));
        t.insert(entry("lib/other.js", "render", NodeKind::Function));
        t.insert(entry("lib/view.js", "View", NodeKind::Class));
        t.insert(entry("lib/view.js", "View.render", NodeKind::Method));
        t.insert(entry("lib/view.js", "lookup", NodeKind::Function));
        t.insert(entry("app.py", "download", NodeKind::Function));
        t.insert(entry("app.py", "send_file", NodeKind::Function));
        t.finish();
        let found = t.resolve(&scope("lib/response.js", &[]), "download", RefKind::Calls, "this.sendFile").unwrap();
        assert_eq!((found.path, found.symbol_path), ("lib/response.js", "sendFile"));
        // Not another file's, not the caller itself, not a function nested in it.
        assert!(t.resolve(&scope("lib/response.js", &[]), "download", RefKind::Calls, "this.render").is_none());
        assert!(t.resolve(&scope("lib/response.js", &[]), "download", RefKind::Calls, "this.download").is_none());
        assert!(t.resolve(&scope("lib/response.js", &[]), "download.inner", RefKind::Calls, "this.sendFile").is_none());
        // A class method's `this` is its class: a top-level function is not a member.
        assert!(t.resolve(&scope("lib/view.js", &[]), "View.render", RefKind::Calls, "this.lookup").is_none());
        // Python's `self` stays a parameter of a method.
        assert!(t.resolve(&scope("app.py", &[]), "download", RefKind::Calls, "self.send_file").is_none());
    }

    #[test]
    fn a_nested_function_is_not_bound_from_another_file() {
        let mut t = SymbolTable::default();
        t.insert(entry("fetch.ts", "FetchState", NodeKind::Class));
        t.insert(entry("fetch.ts", "FetchState.create", NodeKind::Method));
        t.insert(entry("fetch.ts", "FetchState.create.resolve", NodeKind::Function));
        t.finish();
        assert!(t.resolve(&scope("env.ts", &[]), "make", RefKind::Calls, "resolve").is_none());
        let found = t.resolve(&scope("fetch.ts", &[]), "FetchState.create", RefKind::Calls, "resolve").unwrap();
        assert_eq!(found.symbol_path, "FetchState.create.resolve", "inside its function it is");
    }

    #[test]
    fn a_name_the_file_binds_to_a_value_is_not_a_namesake_elsewhere() {
        let mut t = SymbolTable::default();
        t.insert(entry("lib/view.js", "resolve", NodeKind::Function));
        t.insert(entry("lib/response.js", "resolve", NodeKind::Variable));
        t.insert(entry("lib/response.js", "send", NodeKind::Function));
        t.finish();
        // `var resolve = require('node:path').resolve` in response.js.
        assert!(t.resolve(&scope("lib/response.js", &[]), "send", RefKind::Calls, "resolve").is_none());
        // Elsewhere the unique namesake is still found.
        let found = t.resolve(&scope("lib/app.js", &[]), "send", RefKind::Calls, "resolve").unwrap();
        assert_eq!(found.path, "lib/view.js");
    }

    #[test]
    fn a_class_imported_under_another_name_is_found_by_its_own() {
        let mut t = SymbolTable::default();
        t.insert(entry("src/buffer.zig", "Pool", NodeKind::Struct));
        t.insert(entry("src/buffer.zig", "Pool.init", NodeKind::Method));
        t.finish();
        // `const BufferPool = @import("buffer.zig").Pool;`
        let mut s = scope("src/worker.zig", &["src/buffer.zig"]);
        s.aliases.insert("BufferPool".into(), "src/buffer.zig".into());
        s.renamed.insert("BufferPool".into(), "Pool".into());
        assert_eq!(t.resolve(&s, "run", RefKind::Calls, "BufferPool").unwrap().symbol_path, "Pool");
        assert_eq!(t.resolve(&s, "run", RefKind::Calls, "BufferPool.init").unwrap().symbol_path, "Pool.init");
    }

    #[test]
    fn a_name_read_through_a_package_binds_where_its_entry_file_imports_it_from() {
        let mut t = SymbolTable::default();
        for e in [
            entry("src/click/utils.py", "echo", NodeKind::Function),
            entry("src/click/core.py", "Command", NodeKind::Class),
            entry("src/click/core.py", "Command.invoke", NodeKind::Method),
            entry("src/click/types.py", "Choice", NodeKind::Class),
            entry("src/click/_compat.py", "echo", NodeKind::Function),
        ] {
            t.insert(e);
        }
        t.finish();
        let mut reexports = ReExports::default();
        reexports.add("src/click/__init__.py", "src/click/utils.py", &["echo".to_string()]);
        reexports.add("src/click/__init__.py", "src/click/sub/__init__.py", &["Command as Cmd".to_string()]);
        reexports.add("src/click/sub/__init__.py", "src/click/core.py", &["Command".to_string()]);
        reexports.add("src/click/__init__.py", "src/click/types.py", &["*".to_string()]);
        reexports.add("src/click/__init__.py", "src/click/utils.py", &["utils".to_string()]);
        let mut s = scope("tests/test_basic.py", &["src/click/__init__.py"]);
        s.aliases.insert("click".into(), "src/click/__init__.py".into());
        s.aliases.insert("echo".into(), "src/click/__init__.py".into());
        s.aliases.insert("Cmd".into(), "src/click/__init__.py".into());
        s.reexports = std::sync::Arc::new(reexports);
        let bound = |target: &str| t.resolve(&s, "test_run", RefKind::Calls, target).map(|e| (e.path, e.symbol_path));
        assert_eq!(bound("click.echo"), Some(("src/click/utils.py", "echo")));
        assert_eq!(bound("echo"), Some(("src/click/utils.py", "echo")), "`from click import echo`");
        // Through a second entry, renamed there, and a member under it.
        assert_eq!(bound("click.Cmd"), Some(("src/click/core.py", "Command")));
        assert_eq!(bound("click.Cmd.invoke"), Some(("src/click/core.py", "Command.invoke")));
        // `from .types import *`.
        assert_eq!(bound("click.Choice"), Some(("src/click/types.py", "Choice")));
        // `from . import utils` in the entry: `click.utils.echo`.
        assert_eq!(bound("click.utils.echo"), Some(("src/click/utils.py", "echo")));
        assert_eq!(bound("click.missing"), None);
        // `from click import Cmd` (`use axum::Router`): the name the entry
        // brings in, read as a qualifier.
        assert_eq!(bound("Cmd.invoke"), Some(("src/click/core.py", "Command.invoke")));
        assert_eq!(bound("Cmd.missing"), None);
        assert!(ReExports::is_entry("src/click/__init__.py") && ReExports::is_entry("packages/a/src/index.ts"));
        assert!(ReExports::is_entry("axum/src/routing/mod.rs") && ReExports::is_entry("axum/src/lib.rs"));
        assert!(!ReExports::is_entry("src/click/core.py") && !ReExports::is_entry("src/indexer.ts"));
    }

    #[test]
    fn go_methods_of_an_embedded_struct_are_the_embedding_ones() {
        let mut t = SymbolTable::default();
        t.insert_signed(entry("gin.go", "Engine", NodeKind::Struct), "type Engine struct { RouterGroup; sync.Mutex }");
        t.insert_signed(entry("gin.go", "New", NodeKind::Function), "func New() *Engine");
        t.insert(entry("gin.go", "Engine.Run", NodeKind::Method));
        t.insert_signed(entry("routergroup.go", "RouterGroup", NodeKind::Struct), "type RouterGroup struct { *Base }");
        t.insert(entry("routergroup.go", "RouterGroup.GET", NodeKind::Method));
        t.insert_signed(entry("base.go", "Base", NodeKind::Struct), "type Base struct");
        t.insert(entry("base.go", "Base.Deep", NodeKind::Method));
        t.insert(entry("other/x.go", "RouterGroup.POST", NodeKind::Method));
        t.finish();
        let s = scope("gin_test.go", &[]);
        let bound = |target: &str| t.resolve(&s, "TestX", RefKind::Calls, target).map(|e| (e.path, e.symbol_path));
        assert_eq!(bound("Engine.GET"), Some(("routergroup.go", "RouterGroup.GET")));
        assert_eq!(bound("New().GET"), Some(("routergroup.go", "RouterGroup.GET")));
        assert_eq!(bound("Engine.Deep"), Some(("base.go", "Base.Deep")), "two embeddings deep");
        assert_eq!(bound("Engine.Run"), Some(("gin.go", "Engine.Run")), "its own first");
        assert_eq!(bound("Engine.POST"), None, "another package's RouterGroup");
        assert_eq!(
            crate::lang::go::embedded_types("type E struct { *RouterGroup; sync.Mutex; List[T] }"),
            ["RouterGroup", "List"]
        );
        assert!(crate::lang::go::embedded_types("type E struct").is_empty());
        let types: Vec<String> = t.referenced_types().into_iter().collect();
        assert_eq!(types, ["Base", "Engine", "RouterGroup"], "what functions return and structs embed");
    }

    #[test]
    fn python_calls_on_what_a_function_returns_bind_to_its_declared_class() {
        let mut t = SymbolTable::default();
        // Two `@overload`s before the function that runs.
        t.insert_signed(entry("click/globals.py", "get_current_context", NodeKind::Function), "def f() -> Context");
        t.insert_signed(entry("click/globals.py", "get_current_context~2", NodeKind::Function), "def f() -> Context");
        t.insert_signed(
            entry("click/globals.py", "get_current_context~3", NodeKind::Function),
            "def get_current_context(silent: bool = False) -> Context | None",
        );
        t.insert(entry("click/core.py", "Context", NodeKind::Class));
        t.insert(entry("click/core.py", "Context.find_object", NodeKind::Method));
        t.insert_signed(entry("click/core.py", "Context.scope", NodeKind::Method), "def scope(self) -> Self");
        t.insert_signed(entry("click/core.py", "make", NodeKind::Function), "def make() -> Missing");
        t.insert(entry("other/core.py", "Context", NodeKind::Class));
        t.insert_signed(entry("click/types.py", "convert_type", NodeKind::Function), "def f(ty: None) -> StringType");
        t.insert_signed(entry("click/types.py", "convert_type~2", NodeKind::Function), "def f(ty) -> ParamType[t.Any]");
        t.insert(entry("click/types.py", "ParamType.to_info_dict", NodeKind::Method));
        t.insert_signed(entry("click/types.py", "create_model", NodeKind::Function), "def f() -> type[BaseModel]");
        t.insert_signed(entry("click/types.py", "create_model~2", NodeKind::Function), "def f() -> type[ModelT]");
        t.insert(entry("click/types.py", "BaseModel.model_rebuild", NodeKind::Method));
        t.finish();
        let mut s = scope("click/decorators.py", &["click/globals.py", "click/core.py"]);
        s.aliases.insert("types".into(), "click/types.py".into());
        s.aliases.insert("get_current_context".into(), "click/globals.py".into());
        s.aliases.insert("make".into(), "click/core.py".into());
        let bound = |target: &str| t.resolve(&s, "pass_obj", RefKind::Calls, target).map(|e| (e.path, e.symbol_path));
        assert_eq!(bound("get_current_context"), Some(("click/globals.py", "get_current_context~3")), "the last");
        assert_eq!(bound("get_current_context().find_object"), Some(("click/core.py", "Context.find_object")));
        assert_eq!(bound("make().find_object"), None, "no class Missing");
        assert_eq!(bound("types.convert_type"), Some(("click/types.py", "convert_type~2")), "module.f: the last");
        assert_eq!(bound("types.convert_type().to_info_dict"), Some(("click/types.py", "ParamType.to_info_dict")));
        assert_eq!(
            bound("types.create_model().model_rebuild"),
            Some(("click/types.py", "BaseModel.model_rebuild")),
            "an overload's class when the function returns a type variable"
        );
        assert_eq!(bound("get_current_context().missing"), None);
        let inside = scope("click/core.py", &[]);
        let found = t.resolve(&inside, "Context.invoke", RefKind::Calls, "self.scope().find_object").unwrap();
        assert_eq!((found.path, found.symbol_path), ("click/core.py", "Context.find_object"), "`-> Self`");
        assert_eq!(base_symbol("f~12"), "f");
        assert_eq!(base_symbol("a~b"), "a~b");
    }

    #[test]
    fn a_bare_name_binds_only_within_its_language() {
        let t = table();
        assert!(t.resolve(&scope("web/x.ts", &[]), "", RefKind::Calls, "only_here").is_none());
        assert_eq!(t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "only_here").unwrap().path, "c.py");
    }

    #[test]
    fn go_receiver_calls_and_bare_calls_bind_within_the_package() {
        let mut t = SymbolTable::default();
        t.insert(entry("context.go", "Context", NodeKind::Struct));
        t.insert(entry("context.go", "Context.Abort", NodeKind::Method));
        t.insert(entry("utils.go", "isASCII", NodeKind::Function));
        t.insert(entry("render/render.go", "isASCII", NodeKind::Function));
        t.insert(entry("render/render.go", "Context.Abort", NodeKind::Method));
        t.insert(entry("render/json.go", "JSON.Render", NodeKind::Method));
        t.finish();
        let s = scope("response.go", &[]);
        let found = t.resolve(&s, "Context.Header", RefKind::Calls, "Context.Abort").unwrap();
        assert_eq!((found.path, found.symbol_path), ("context.go", "Context.Abort"));
        assert_eq!(t.resolve(&s, "Context.Header", RefKind::Calls, "isASCII").unwrap().path, "utils.go");
        assert!(t.resolve(&s, "Context.Header", RefKind::Calls, "w.Abort").is_none(), "not the receiver");
        // What a function declares it returns: `New().Abort` after `r := New()`.
        let mut t2 = SymbolTable::default();
        t2.insert_signed(entry("gin.go", "New", NodeKind::Function), "func New() *Context");
        t2.insert(entry("context.go", "Context.Abort", NodeKind::Method));
        t2.insert(entry("context.go", "Context", NodeKind::Struct));
        t2.insert_signed(entry("render/render.go", "New", NodeKind::Function), "func New() string");
        t2.finish();
        let found = t2.resolve(&scope("gin_test.go", &[]), "TestX", RefKind::Calls, "New().Abort").unwrap();
        assert_eq!((found.path, found.symbol_path), ("context.go", "Context.Abort"));
        assert!(t2.resolve(&scope("gin_test.go", &[]), "TestX", RefKind::Calls, "New().Abort().Abort").is_none());
        let other = scope("render/json.go", &[]);
        assert!(
            t2.resolve(&other, "f", RefKind::Calls, "New().Abort").is_none(),
            "that package's New returns nothing known"
        );
        assert_eq!(result_of_call("gin.New().Use"), Some("New"));
        assert_eq!(result_of_call("c.Next"), None);
        let mut s = scope("gin.go", &["render/render.go"]);
        s.aliases.insert("render".into(), "render/render.go".into());
        assert_eq!(t.resolve(&s, "New", RefKind::Calls, "render.isASCII").unwrap().path, "render/render.go");
        let found = t.resolve(&s, "New", RefKind::Calls, "render.JSON.Render").unwrap();
        assert_eq!((found.path, found.symbol_path), ("render/json.go", "JSON.Render"), "pkg.Type.M");
        // A bare name is the package's own before an imported package's.
        assert_eq!(
            t.resolve(&scope("gin.go", &["render/render.go"]), "New", RefKind::Calls, "isASCII").unwrap().path,
            "utils.go"
        );
    }

    #[test]
    fn imports_disambiguate_and_ambiguity_stays_unresolved() {
        let t = table();
        assert_eq!(t.resolve(&scope("d.py", &["c.py"]), "", RefKind::Inherits, "Base").unwrap().path, "c.py");
        assert!(t.resolve(&scope("d.py", &[]), "", RefKind::Inherits, "Base").is_none(), "two Bases, no import");
        assert_eq!(t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "only_here").unwrap().path, "c.py");
        assert!(t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "print").is_none());
        let mut s = scope("d.py", &[]);
        s.aliases.insert("bmod".into(), "b.py".into());
        assert_eq!(t.resolve(&s, "", RefKind::Calls, "bmod.helper").unwrap().path, "b.py");
        let mut s = scope("d.py", &["a.py"]);
        s.aliases.insert("App".into(), "a.py".into());
        let found = t.resolve(&s, "main", RefKind::Calls, "App.save").unwrap();
        assert_eq!((found.path, found.symbol_path), ("a.py", "App.save"), "a method of an imported class");
        assert!(
            t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "os.only_here").is_none(),
            "qualified by an unknown module"
        );
        assert!(t.resolve(&scope("a.py", &[]), "", RefKind::Inherits, "save").is_none(), "a function is not a base");
    }

    #[test]
    fn lua_methods_bind_through_self_their_table_and_the_module_that_holds_it() {
        // plenary.nvim: `function Path:new`, `function M.lshift`: members,
        // each named by its last segment.
        let mut t = SymbolTable::default();
        for (path, symbol_path, kind) in [
            ("lua/path.lua", "Path", NodeKind::Variable),
            ("lua/path.lua", "Path:new", NodeKind::Method),
            ("lua/path.lua", "Path:absolute", NodeKind::Method),
            ("lua/path.lua", "Path:mkdir", NodeKind::Method),
            ("lua/bit.lua", "M.lshift", NodeKind::Method),
            ("lua/bit.lua", "M.rshift", NodeKind::Method),
            ("lua/bit.lua", "band", NodeKind::Function),
            ("lua/bit.lua", "band.inner", NodeKind::Function),
        ] {
            t.insert(entry(path, symbol_path, kind));
        }
        t.finish();
        let bound = |s: &FileScope, from: &str, target: &str| {
            t.resolve(s, from, RefKind::Calls, target).map(|e| format!("{}#{}", e.path, e.symbol_path))
        };
        let here = scope("lua/path.lua", &[]);
        assert_eq!(bound(&here, "Path:mkdir", "self:absolute").as_deref(), Some("lua/path.lua#Path:absolute"));
        assert_eq!(bound(&here, "Path:mkdir", "Path:new").as_deref(), Some("lua/path.lua#Path:new"));
        assert_eq!(bound(&here, "Path:mkdir", "Path.new").as_deref(), Some("lua/path.lua#Path:new"));
        // A table's function is never a bare name; a function nested in one is.
        let bits = scope("lua/bit.lua", &[]);
        assert_eq!(bound(&bits, "M.rshift", "lshift"), None);
        assert_eq!(bound(&bits, "band", "inner").as_deref(), Some("lua/bit.lua#band.inner"));
        // Through `local Path = require("path")` and `local bit = require("bit")`.
        let mut spec = scope("tests/path_spec.lua", &["lua/path.lua", "lua/bit.lua"]);
        spec.aliases.insert("Path".into(), "lua/path.lua".into());
        spec.aliases.insert("bit".into(), "lua/bit.lua".into());
        assert_eq!(bound(&spec, "", "Path:absolute").as_deref(), Some("lua/path.lua#Path:absolute"));
        assert_eq!(bound(&spec, "", "bit.lshift").as_deref(), Some("lua/bit.lua#M.lshift"));
        assert_eq!(bound(&spec, "", "self:absolute"), None, "no table around");
        assert_eq!(bound(&spec, "", "p:absolute"), None, "an unknown value");
    }
}
