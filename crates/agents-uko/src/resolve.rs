//! Binding raw references to files and symbols across a resource.
//!
//! [`ResolveContext`] is what import resolution needs to know about the
//! resource: which files exist, found by exact path or by file name. Each
//! analyzer maps its language's specifiers to candidate paths and asks the
//! context which exist; an ambiguous or missing target stays unresolved (a
//! named external dependency), never bound to a wrong file.

use std::collections::{BTreeSet, HashMap};

use crate::model::file_name;

/// The files of a resource, for resolving import specifiers.
pub struct ResolveContext<'a> {
    files: &'a BTreeSet<String>,
    by_name: HashMap<&'a str, Vec<&'a str>>,
}

impl<'a> ResolveContext<'a> {
    /// `files` are `/`-separated paths relative to the resource root.
    pub fn new(files: &'a BTreeSet<String>) -> ResolveContext<'a> {
        let mut by_name: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
        for path in files {
            by_name.entry(file_name(path)).or_default().push(path.as_str());
        }
        ResolveContext { files, by_name }
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

/// One symbol known to resolution. Compact: a resource can hold hundreds of
/// thousands; the path is shared by every symbol of a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolEntry {
    pub path: std::sync::Arc<str>,
    pub symbol_path: Box<str>,
    pub name: Box<str>,
    pub kind: crate::model::NodeKind,
}

/// Every symbol of a resource by name and by file, for binding calls,
/// inheritance and type mentions.
#[derive(Default)]
pub struct SymbolTable {
    entries: Vec<SymbolEntry>,
    by_name: HashMap<String, Vec<u32>>,
    /// Entry ids sorted by (path, name), for (file, name) lookups by binary
    /// search: files can hold thousands of symbols. Built by [`SymbolTable::finish`].
    by_file: Vec<u32>,
}

/// What a file's imports bring into scope, for name resolution.
#[derive(Clone, Debug, Default)]
pub struct FileScope {
    /// The file's own path.
    pub path: String,
    /// Paths its imports resolved to, in import order.
    pub imported_paths: Vec<String>,
    /// Local name (alias or imported name) -> the path it came from.
    pub aliases: HashMap<String, String>,
}

impl SymbolTable {
    /// Adds a symbol (file nodes, with an empty symbol path, are reached by
    /// path and not added). Call [`SymbolTable::finish`] before resolving.
    pub fn insert(&mut self, entry: SymbolEntry) {
        if entry.symbol_path.is_empty() {
            return;
        }
        let id = self.entries.len() as u32;
        match self.by_name.get_mut(&*entry.name) {
            Some(ids) => ids.push(id),
            None => {
                self.by_name.insert(entry.name.to_string(), vec![id]);
            }
        }
        self.entries.push(entry);
    }

    /// Builds the (file, name) lookup once every symbol is inserted.
    pub fn finish(&mut self) {
        let mut ids: Vec<u32> = (0..self.entries.len() as u32).collect();
        ids.sort_by(|&a, &b| {
            let (a, b) = (&self.entries[a as usize], &self.entries[b as usize]);
            (&a.path, &a.name).cmp(&(&b.path, &b.name))
        });
        self.by_file = ids;
    }

    /// Ids of the symbols named `name` in file `path`.
    fn in_file(&self, path: &str, name: &str) -> &[u32] {
        let key = |&id: &u32| {
            let e = &self.entries[id as usize];
            (&*e.path, &*e.name)
        };
        let start = self.by_file.partition_point(|id| key(id) < (path, name));
        let end = start + self.by_file[start..].partition_point(|id| key(id) == (path, name));
        &self.by_file[start..end]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Binds a by-name reference written in `scope.path` inside the node
    /// `from_symbol_path` to a symbol, or `None` when the name is unknown or
    /// ambiguous. Order: `self`/`this` members of the enclosing type; a
    /// qualifier naming an import; the same file (innermost scope first);
    /// top-level symbols of imported files; a symbol unique in the resource.
    pub fn resolve(
        &self,
        scope: &FileScope,
        from_symbol_path: &str,
        kind: crate::model::RefKind,
        target: &str,
    ) -> Option<&SymbolEntry> {
        let segments: Vec<&str> = segments(target).collect();
        let name = reference_name(target);
        if name.is_empty() {
            return None;
        }
        let qualifier = (segments.len() > 1).then(|| segments[0]);
        let ids = self.by_name.get(name)?;
        let fits = |e: &&SymbolEntry| kind_fits(kind, e.kind);
        // Symbols of one file with this name (files hold few; names can be
        // shared by thousands across a resource).
        let in_file = |path: &str| -> Vec<&SymbolEntry> {
            self.in_file(path, name).iter().map(|&i| &self.entries[i as usize]).filter(fits).collect()
        };
        let top_level = |path: &str| -> Option<&SymbolEntry> {
            unique(in_file(path).into_iter().filter(|e| !e.symbol_path.contains('.')))
        };
        let same_file = in_file(&scope.path);
        if let Some(q) = qualifier {
            if matches!(q, "self" | "this" | "Self" | "cls") {
                return innermost(&same_file, from_symbol_path, true);
            }
            if q == "super" {
                // A base class's member: never the enclosing type's own.
                return None;
            }
            if let Some(path) = scope.aliases.get(q) {
                // `module.func`, or `Class.method` of an imported class.
                let member = format!("{q}.{name}");
                if let Some(e) = in_file(path).into_iter().find(|e| *e.symbol_path == *member) {
                    return Some(e);
                }
                return top_level(path);
            }
            // `Type.method` / `Type::new` written against a type of this file.
            if let Some(e) = same_file.iter().copied().find(|e| *e.symbol_path == *format!("{q}.{name}")) {
                return Some(e);
            }
        }
        if let Some(found) = innermost(&same_file, from_symbol_path, false) {
            return Some(found);
        }
        if let Some(path) = scope.aliases.get(name)
            && let Some(found) = unique(in_file(path).into_iter())
        {
            return Some(found);
        }
        for path in &scope.imported_paths {
            if let Some(found) = top_level(path) {
                return Some(found);
            }
        }
        if qualifier.is_none() || kind != crate::model::RefKind::Calls {
            return unique(ids.iter().map(|&i| &self.entries[i as usize]).filter(fits));
        }
        None
    }
}

/// The segments of a qualified reference (`a.b`, `A::b`, `p->b`).
fn segments(target: &str) -> impl DoubleEndedIterator<Item = &str> {
    target.split(['.', ':', '>', '-']).filter(|s| !s.is_empty() && *s != "<")
}

/// The simple name a by-name reference binds to: its last segment, without
/// a macro's `!` (`os.path.join` -> `join`, `Type::new` -> `new`).
pub fn reference_name(target: &str) -> &str {
    segments(target).next_back().unwrap_or("").trim_end_matches('!')
}

/// The candidate in the innermost scope enclosing `from` (longest shared
/// symbol-path prefix); with `members_only`, only members of a type.
fn innermost<'e>(same_file: &[&'e SymbolEntry], from: &str, members_only: bool) -> Option<&'e SymbolEntry> {
    let scope_of = |e: &SymbolEntry| e.symbol_path.rsplit_once('.').map_or("", |(p, _)| p).to_string();
    let mut best: Option<(usize, &SymbolEntry)> = None;
    for e in same_file {
        let parent = scope_of(e);
        if members_only && parent.is_empty() {
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

fn unique<'e>(mut it: impl Iterator<Item = &'e SymbolEntry>) -> Option<&'e SymbolEntry> {
    let first = it.next()?;
    if it.next().is_some() { None } else { Some(first) }
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

    fn entry(path: &str, symbol_path: &str, kind: NodeKind) -> SymbolEntry {
        let name = symbol_path.rsplit('.').next().unwrap();
        SymbolEntry { path: path.into(), symbol_path: symbol_path.into(), name: name.into(), kind }
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
        }
    }

    #[test]
    fn self_calls_bind_to_the_enclosing_type() {
        let t = table();
        let s = scope("a.py", &[]);
        assert_eq!(t.resolve(&s, "App.run", RefKind::Calls, "self.save").unwrap().symbol_path.as_ref(), "App.save");
        assert_eq!(t.resolve(&s, "main", RefKind::Calls, "save").unwrap().symbol_path.as_ref(), "save");
        assert_eq!(t.resolve(&s, "App.run", RefKind::Calls, "save").unwrap().symbol_path.as_ref(), "App.save");
        assert!(t.resolve(&s, "App.save", RefKind::Calls, "super.save").is_none(), "super is not self");
    }

    #[test]
    fn imports_disambiguate_and_ambiguity_stays_unresolved() {
        let t = table();
        assert_eq!(t.resolve(&scope("d.py", &["c.py"]), "", RefKind::Inherits, "Base").unwrap().path.as_ref(), "c.py");
        assert!(t.resolve(&scope("d.py", &[]), "", RefKind::Inherits, "Base").is_none(), "two Bases, no import");
        assert_eq!(t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "only_here").unwrap().path.as_ref(), "c.py");
        assert!(t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "print").is_none());
        let mut s = scope("d.py", &[]);
        s.aliases.insert("bmod".into(), "b.py".into());
        assert_eq!(t.resolve(&s, "", RefKind::Calls, "bmod.helper").unwrap().path.as_ref(), "b.py");
        let mut s = scope("d.py", &["a.py"]);
        s.aliases.insert("App".into(), "a.py".into());
        let found = t.resolve(&s, "main", RefKind::Calls, "App.save").unwrap();
        assert_eq!(
            (found.path.as_ref(), found.symbol_path.as_ref()),
            ("a.py", "App.save"),
            "a method of an imported class"
        );
        assert!(
            t.resolve(&scope("d.py", &[]), "", RefKind::Calls, "os.only_here").is_none(),
            "qualified by an unknown module"
        );
        assert!(t.resolve(&scope("a.py", &[]), "", RefKind::Inherits, "save").is_none(), "a function is not a base");
    }
}
