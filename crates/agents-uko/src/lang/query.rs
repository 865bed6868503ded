//! The query-driven analyzer: one analyzer for every language described by a
//! tree-sitter grammar plus a small declarative query file (in the spirit of
//! tree-sitter's `tags.scm`), kept under `src/lang/queries/*.scm`.
//!
//! # The capture vocabulary
//!
//! | capture | meaning |
//! |---|---|
//! | `@definition.<kind>` | a declaration; the node is its span. `<kind>` is a [`NodeKind`] name (`function`, `method`, `class`, `interface`, `trait`, `struct`, `enum`, `type_alias`, `field`, `variable`, `macro`, `test`, `namespace`) |
//! | `@name` | the declaration's name (text, whitespace collapsed, quotes of a string removed; several join with a space) |
//! | `@body` | the declaration's body: the signature is the text before it (the whole node, first line, when absent) |
//! | `@doc` | an explicit doc node (a docstring, an `@doc` attribute); without one the comments directly above the declaration are its doc |
//! | `@owner` | the type a declaration belongs to though declared outside it (a Go receiver): it goes under the file's type of that name, else under the file named `Owner.name` |
//! | `@inherits` | a superclass, mixin or embedded type: an `Inherits` reference from the innermost declaration containing it |
//! | `@mentions` | a type named in a declaration: a `Mentions` reference (once per target) from the innermost declaration containing it |
//! | `@import` | an import statement (an `Import` node under the file) |
//! | `@import.path` | the module it names (quotes stripped; several captures are joined with `.`): the reference's target |
//! | `@import.wildcard` | the import brings every name of the module (`import a.b._`): names `*` |
//! | `@import.name` | a name it brings into scope (default: the path's last segment; `.` is `*`, `_` none) |
//! | `@import.member` | the member of the module the statement takes (`const Pool = @import("pool.zig").Pool`, Lua `local f = require("m").f`): the name brought in is that member's, bound to `@import.name`; an import nested in such a statement (the `require` call) is the same import |
//! | `@call` | a call; `@call.name` is the callee as written (`f`, `obj.m`) |
//! | `@no_calls` | a region whose calls are none (Elixir's `@spec assign(t, atom) :: t` names types and the function it describes) |
//! | `@bind` | a name given a value (Lua's `local p = Path:new(...)`, a parameter, a loop variable); `@bind.name` is the name |
//! | `@bind.class` | the class of the value given (`Path`); a name every `@bind` of the file gives one class has its calls written against it (`p:rm()` is `Path:rm`) |
//!
//! Captures whose names start with `_` are for predicates only.
//!
//! # Structure
//!
//! Nesting comes from byte ranges: a declaration's parent is the innermost
//! declaration containing it, so the query only says *what* is declared.
//! A `function` whose parent is a type scope (class, interface, trait,
//! struct, enum) becomes a `Method`, a `variable` there a `Field`. When one node matches two patterns the
//! earlier pattern wins (one declaration = one `@name` node), so a query lists its specific patterns (tests)
//! before general ones (functions). A call belongs to the innermost
//! declaration containing it; the nodes of declarations and imports are never
//! calls themselves (Ruby's `require`, Elixir's `def` are call nodes).

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use tree_sitter::{Language, Query, QueryCursor, StreamingIterator};

use crate::lang::rust::source_ordered;
use crate::lang::{
    Analyzer, FileBuilder, clean_doc, collapse, note_class, parse_or_warn, plain_comment_doc, preceding_comments,
    strip_quotes, written_against,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use crate::resolve::{ResolveContext, dir_of, join_normalized};

/// Matches starting deeper in the tree are ignored: real declarations and
/// calls sit far above this, and pathological nesting (thousands of levels)
/// would otherwise make matching quadratic.
const MAX_START_DEPTH: u32 = 512;

/// How a language's import specifiers map to files, where that is decidable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportStyle {
    /// Never resolved (namespaces, packages, gems).
    None,
    /// A path relative to the importing file's directory, with this extension
    /// added when the specifier has none (`require_relative "x"`, `source ./x.sh`).
    Relative(&'static str),
    /// Relative to the importing file first (as [`ImportStyle::Relative`]),
    /// else a unique path suffix with this extension (Ruby's `require`,
    /// whose load path is usually `lib/`).
    RelativeOrSuffix(&'static str),
    /// A path (with `/` or ending in the extension) relative to the file, as
    /// [`ImportStyle::Relative`]; otherwise a namespace whose segments
    /// (split at `sep`) name a file with the extension as a unique path
    /// suffix, dropping leading segments (a PSR-4 or source-root prefix)
    /// while at least two remain: PHP's `use App\Models\User`, Kotlin's
    /// `import com.acme.Store`.
    PathOrNamespace { sep: char, ext: &'static str },
    /// Elixir module names: `MyApp.UserStore` names `my_app/user_store<ext>`
    /// as a unique path suffix.
    SnakeModule(&'static str),
    /// Dotted module names mapping to a unique path suffix with this
    /// extension (`require "a.b"` -> `a/b.lua` or `a/b/init.lua`).
    Dotted(&'static str),
}

impl ImportStyle {
    /// The file extension imports of this style may name.
    fn extension(self) -> Option<&'static str> {
        match self {
            ImportStyle::None => None,
            ImportStyle::Relative(ext)
            | ImportStyle::RelativeOrSuffix(ext)
            | ImportStyle::Dotted(ext)
            | ImportStyle::SnakeModule(ext)
            | ImportStyle::PathOrNamespace { ext, .. } => Some(ext).filter(|e| !e.is_empty()),
        }
    }
}

/// One language for the query analyzer.
pub struct QueryLanguage {
    /// Language names (as [`crate::language`] detects them).
    pub languages: &'static [&'static str],
    /// Display name for warnings.
    pub display: &'static str,
    /// The grammar.
    pub grammar: fn() -> Language,
    /// The query source (`include_str!` of `queries/<lang>.scm`).
    pub query: &'static str,
    /// Node kinds that are comments (for docs above a declaration).
    pub comment_kinds: &'static [&'static str],
    /// A prefix a comment must start with to be a doc comment (`///`, `---`);
    /// empty for any comment. A declaration without one takes what plain
    /// comments right above it say ([`plain_comment_doc`]).
    pub doc_prefix: &'static str,
    /// Line markers of doc comments that [`clean_doc`] does not know
    /// (Lua's `---` and `--`), longest first.
    pub doc_markers: &'static [&'static str],
    /// Node kinds a declaration's signature skips at its start (C#'s
    /// `attribute_list`); its span keeps them.
    pub signature_skips: &'static [&'static str],
    /// How imports resolve.
    pub imports: ImportStyle,
    /// Whether functions in a `namespace` are methods (Ruby modules are mixins).
    pub methods_in_namespaces: bool,
    /// Whether consecutive declarations of one name and kind are the clauses
    /// of one declaration (Haskell equations after their signature, Elixir's
    /// `def f(0)` / `def f(n)`): they merge into the first, spanning all.
    pub merge_clauses: bool,
    /// Haddock's reach (Haskell): a doc comment ([`Self::doc_prefix`])
    /// documents the next declaration across blank lines and plain comments
    /// (`-- See Note [...]` between them), and a block comment right above
    /// one is its doc too: a Haddock `{-| ... -}`, or a `{- ... -}` banner
    /// naming what follows (`[link2 l r]: merges two trees.`); else plain
    /// `--` comments right above.
    pub haddock_docs: bool,
    /// Lines at which a top-level declaration starts for certain (Bash's
    /// `name() {` at the left margin). When a file does not parse, the
    /// grammar's error recovery can swallow everything after the first
    /// broken construct; the file is then parsed again in pieces cut at these
    /// lines, each piece on its own, and the pieces' declarations are taken
    /// when they are more than the whole tree's.
    pub restarts: Option<Restarts>,
    /// A rewrite of the source the grammar reads instead of the file, one
    /// that moves no line and no byte outside what it changes (so every
    /// span found in it holds in the file), for a construct the grammar
    /// misreads; `None` from it: the file as it is.
    pub rewrite: Option<fn(&str) -> Option<String>>,
    /// Whether a definition written qualified (Lua's `function M.f`,
    /// `function Path:new`) is a member (a function: a method) named by its
    /// last segment (`f`, `new`), its symbol path staying as written:
    /// resolution looks symbols up by that name and never binds a bare name
    /// to a member, as for every other language's members.
    pub last_segment_names: bool,
}

/// Where a file that does not parse is cut into pieces ([`QueryLanguage::restarts`]).
#[derive(Clone, Copy)]
pub struct Restarts {
    /// A line at which a top-level declaration starts for certain.
    pub starts: fn(&str) -> bool,
    /// The line comment's marker: the comment lines right above a start go
    /// with it (they are its doc).
    pub comment: &'static str,
}

/// A [`QueryLanguage`] with its compiled query.
pub struct QueryAnalyzer {
    spec: &'static QueryLanguage,
    compiled: OnceLock<Option<Compiled>>,
}

struct Compiled {
    language: Language,
    query: Query,
    /// The [`NodeKind`] of each capture index that is a `definition.*`.
    definition: Vec<Option<NodeKind>>,
    name: Option<u32>,
    body: Option<u32>,
    doc: Option<u32>,
    inherits: Option<u32>,
    mentions: Option<u32>,
    owner: Option<u32>,
    import: Option<u32>,
    import_path: Option<u32>,
    import_name: Option<u32>,
    import_wildcard: Option<u32>,
    import_member: Option<u32>,
    call: Option<u32>,
    call_name: Option<u32>,
    no_calls: Option<u32>,
    bind: Option<u32>,
    bind_name: Option<u32>,
    bind_class: Option<u32>,
}

/// Why a query file does not load (a bug in the shipped `.scm`; the tests
/// load every one).
#[derive(Debug, thiserror::Error)]
pub enum QueryLoadError {
    #[error("{language}: query does not compile: {source}")]
    Query { language: &'static str, source: tree_sitter::QueryError },
    #[error("{language}: capture @{capture} names no node kind")]
    UnknownKind { language: &'static str, capture: String },
}

/// The text parsed again in pieces, cut before every line that starts a
/// declaration (and the comment lines right above it): each piece is parsed
/// alone (an included range, so positions stay those of the file), and an
/// error stays inside its piece.
fn parse_in_pieces(language: &Language, text: &str, restarts: Restarts) -> Vec<tree_sitter::Tree> {
    let mut cuts = vec![0];
    let mut offset = 0;
    // Where the run of comment lines just above this line starts.
    let mut comments_from = None;
    for line in text.split_inclusive('\n') {
        if (restarts.starts)(line) {
            let cut = comments_from.unwrap_or(offset);
            if cut > *cuts.last().unwrap_or(&0) {
                cuts.push(cut);
            }
        }
        if line.trim_start().starts_with(restarts.comment) {
            comments_from.get_or_insert(offset);
        } else {
            comments_from = None;
        }
        offset += line.len();
    }
    if cuts.len() < 2 {
        return Vec::new();
    }
    cuts.push(text.len());
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(language).is_err() {
        return Vec::new();
    }
    let mut row = 0;
    let mut pieces = Vec::new();
    for pair in cuts.windows(2) {
        let (start, end) = (pair[0], pair[1]);
        let piece = &text[start..end];
        let rows = piece.matches('\n').count();
        let end_point = match piece.rfind('\n') {
            Some(i) => tree_sitter::Point::new(row + rows, piece.len() - i - 1),
            None => tree_sitter::Point::new(row, piece.len()),
        };
        let range = tree_sitter::Range {
            start_byte: start,
            end_byte: end,
            start_point: tree_sitter::Point::new(row, 0),
            end_point,
        };
        row += rows;
        if parser.set_included_ranges(&[range]).is_ok()
            && let Some(tree) = parser.parse(text, None)
        {
            pieces.push(tree);
        }
    }
    pieces
}

/// A Bash function's first line at the left margin: `name() {`, `name ()`,
/// `function name`.
pub(crate) fn shell_function_start(line: &str) -> bool {
    if let Some(rest) = line.strip_prefix("function ") {
        return rest.trim_start().starts_with(|c: char| c.is_alphabetic() || c == '_');
    }
    let name = line.find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))).unwrap_or(line.len());
    name > 0 && line[name..].trim_start().starts_with("()")
}

fn compile(spec: &QueryLanguage) -> Result<Compiled, QueryLoadError> {
    let language = (spec.grammar)();
    let query =
        Query::new(&language, spec.query).map_err(|source| QueryLoadError::Query { language: spec.display, source })?;
    let mut definition = Vec::new();
    for name in query.capture_names() {
        let kind = match name.strip_prefix("definition.") {
            Some(kind) => Some(
                NodeKind::parse(kind)
                    .ok_or_else(|| QueryLoadError::UnknownKind { language: spec.display, capture: name.to_string() })?,
            ),
            None => None,
        };
        definition.push(kind);
    }
    let index = |name: &str| query.capture_index_for_name(name);
    Ok(Compiled {
        name: index("name"),
        body: index("body"),
        doc: index("doc"),
        inherits: index("inherits"),
        mentions: index("mentions"),
        owner: index("owner"),
        import: index("import"),
        import_path: index("import.path"),
        import_name: index("import.name"),
        import_wildcard: index("import.wildcard"),
        import_member: index("import.member"),
        call: index("call"),
        call_name: index("call.name"),
        no_calls: index("no_calls"),
        bind: index("bind"),
        bind_name: index("bind.name"),
        bind_class: index("bind.class"),
        definition,
        language,
        query,
    })
}

impl QueryAnalyzer {
    /// An analyzer for `spec`; the query compiles on first use.
    pub const fn new(spec: &'static QueryLanguage) -> QueryAnalyzer {
        QueryAnalyzer { spec, compiled: OnceLock::new() }
    }

    fn compiled(&self) -> Option<&Compiled> {
        self.compiled.get_or_init(|| compile(self.spec).map_err(|e| tracing::error!("{e}")).ok()).as_ref()
    }

    /// Compiles the query, reporting why it does not (for tests).
    pub fn check(&self) -> Result<(), QueryLoadError> {
        if self.compiled().is_some() { Ok(()) } else { compile(self.spec).map(|_| ()) }
    }
}

/// A declaration found by the query.
struct Def {
    start: usize,
    end: usize,
    node_id: usize,
    /// The name node: two patterns matching one declaration share it.
    name_id: usize,
    /// Index of the pattern that matched (earlier wins).
    pattern: usize,
    /// Where the name starts: names declared together keep source order.
    name_start: usize,
    /// The node holding the name when it is not the declaration itself.
    head_id: Option<usize>,
    /// `@owner`: the type this declaration belongs to (Go receivers).
    owner: Option<String>,
    kind: NodeKind,
    name: String,
    span: Span,
    signature: String,
    doc: Option<String>,
}

struct Import {
    /// The node's name: the path, `.*` added for a wildcard.
    name: String,
    path: String,
    names: Vec<String>,
    signature: String,
    span: Span,
}

/// One match of an import pattern. The matches of one pattern on one
/// statement merge (a pattern with one `(identifier) @import.path` matches
/// once per identifier of `import a.b.c`), in source order.
struct RawImport {
    node_id: usize,
    pattern: usize,
    signature: String,
    span: Span,
    parts: Vec<(usize, String)>,
    names: Vec<(usize, String)>,
    /// The `@import.wildcard` text (`*`, `_`).
    wildcard: Option<String>,
    /// The `@import.member` text.
    member: Option<String>,
}

/// A call, or an `@inherits`/`@mentions` outside a declaration's own match.
struct Found {
    kind: RefKind,
    /// Index of the pattern that matched: of two call patterns matching one
    /// call, the earlier wins.
    pattern: usize,
    start: usize,
    node_id: usize,
    target: String,
    span: Span,
}

impl Analyzer for QueryAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        self.spec.languages
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let rewritten = self.spec.rewrite.and_then(|rewrite| rewrite(text));
        let text = rewritten.as_deref().unwrap_or(text);
        let Some(c) = self.compiled() else {
            builder.warn(format!("could not parse: the {} query failed to load", self.spec.display));
            return builder.finish();
        };
        let Some(tree) = parse_or_warn(&mut builder, &c.language, self.spec.display, text) else {
            return builder.finish();
        };
        let pieces = match self.spec.restarts {
            Some(restarts) if tree.root_node().has_error() => parse_in_pieces(&c.language, text, restarts),
            _ => Vec::new(),
        };
        let (mut defs, raw_imports, mut refs) = self.collect_recovering(c, &tree, &pieces, text);
        let (imports, absorbed) = self.merge_imports(raw_imports);
        // The first pattern to claim a name node wins; then outer declarations first.
        defs.sort_by_key(|d| (d.name_id, d.pattern));
        let mut seen = HashSet::new();
        defs.retain(|d| seen.insert(d.name_id));
        defs.sort_by_key(|d| (d.start, std::cmp::Reverse(d.end), d.name_start));
        let import_nodes: HashSet<usize> = imports.iter().map(|i| i.0).collect();
        defs.retain(|d| !import_nodes.contains(&d.node_id));
        let not_calls: HashSet<usize> = defs
            .iter()
            .flat_map(|d| [Some(d.node_id), d.head_id])
            .flatten()
            .chain(imports.iter().map(|i| i.0))
            .chain(absorbed)
            .collect();
        if self.spec.merge_clauses {
            merge_clauses(&mut defs);
        }
        refs.retain(|r| r.kind != RefKind::Calls || !not_calls.contains(&r.node_id));
        refs.sort_by_key(|r| (r.start, r.pattern));
        let mut calls_seen = HashSet::new();
        refs.retain(|r| r.kind != RefKind::Calls || calls_seen.insert(r.node_id));

        // Containment: one sweep over declarations and references in source
        // order with the stack of open declarations (end byte, index in `defs`).
        let mut enclosing: Vec<Option<usize>> = Vec::with_capacity(defs.len());
        let mut ref_from: Vec<Option<usize>> = Vec::with_capacity(refs.len());
        let mut open: Vec<(usize, usize)> = Vec::new();
        let mut r = 0;
        for (i, def) in defs.iter().enumerate() {
            while r < refs.len() && refs[r].start < def.start {
                while open.last().is_some_and(|&(end, _)| end <= refs[r].start) {
                    open.pop();
                }
                ref_from.push(first_of_siblings(&open, &defs));
                r += 1;
            }
            while open.last().is_some_and(|&(end, _)| end <= def.start) {
                open.pop();
            }
            // Names declared together (`a, b int`) share a node: siblings.
            let outer = open.iter().rev().find(|&&(_, d)| defs[d].node_id != def.node_id);
            enclosing.push(outer.map(|&(_, d)| d));
            open.push((def.end, i));
        }
        while r < refs.len() {
            while open.last().is_some_and(|&(end, _)| end <= refs[r].start) {
                open.pop();
            }
            ref_from.push(first_of_siblings(&open, &defs));
            r += 1;
        }

        // Nodes: declarations with an `@owner` (Go methods) and everything
        // inside them wait until every other declaration exists, then go under
        // the file-level type of that name (or under the file, named
        // `Owner.name`, when the file declares no such type).
        let deferred: Vec<bool> = {
            let mut d = vec![false; defs.len()];
            for i in 0..defs.len() {
                d[i] = defs[i].owner.is_some() || enclosing[i].is_some_and(|p| d[p]);
            }
            d
        };
        let mut node_of: Vec<usize> = vec![0; defs.len()];
        let mut types: HashMap<String, usize> = HashMap::new();
        let mut renames = Vec::new();
        for pass in [false, true] {
            for i in (0..defs.len()).filter(|&i| deferred[i] == pass) {
                let def = &defs[i];
                let (parent, name) = match (&def.owner, enclosing[i]) {
                    (Some(owner), _) => match types.get(owner) {
                        Some(&t) => (t, def.name.clone()),
                        None => (0, format!("{owner}.{}", def.name)),
                    },
                    (None, p) => (p.map_or(0, |p| node_of[p]), def.name.clone()),
                };
                let scope = builder.kind(parent);
                let member = scope.is_type_scope() || (self.spec.methods_in_namespaces && scope == NodeKind::Namespace);
                let kind = match def.kind {
                    NodeKind::Function if member => NodeKind::Method,
                    NodeKind::Variable if member => NodeKind::Field,
                    kind => kind,
                };
                // Lua's `function M.f`, `function Path:new`: a member of the
                // table, named by its last segment.
                let last = name
                    .rsplit_once(['.', ':'])
                    .map(|(_, last)| last)
                    .filter(|last| self.spec.last_segment_names && !last.is_empty());
                let kind = if last.is_some() && kind == NodeKind::Function { NodeKind::Method } else { kind };
                let idx = builder.add(parent, kind, &name, def.span, Some(def.signature.clone()), def.doc.clone());
                if let Some(last) = last {
                    builder.set_name(idx, last);
                }
                if name != def.name {
                    renames.push((idx, def.name.clone()));
                }
                if parent == 0 && (kind.is_type_scope() || kind == NodeKind::TypeAlias) {
                    types.entry(def.name.clone()).or_insert(idx);
                }
                node_of[i] = idx;
            }
        }
        for (found, from) in refs.into_iter().zip(ref_from) {
            let from = from.map_or(0, |d| node_of[d]);
            if found.kind == RefKind::Mentions {
                builder.reference_once(from, found.kind, found.target, found.span);
            } else {
                builder.reference(from, found.kind, found.target, found.span);
            }
        }
        for (_, import) in imports {
            let idx = builder.add(0, NodeKind::Import, &import.name, import.span, Some(import.signature), None);
            builder.import(idx, import.path, import.names, false, import.span);
        }
        let analysis = builder.finish();
        if deferred.contains(&true) { source_ordered(analysis, &renames) } else { analysis }
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        let target = reference.target.as_str();
        match self.spec.imports {
            ImportStyle::None => None,
            ImportStyle::Relative(ext) => self.resolve_relative(ctx, from_path, target, ext),
            ImportStyle::RelativeOrSuffix(ext) => {
                let relative = self.resolve_relative(ctx, from_path, target, ext);
                relative.or_else(|| ctx.unique_ending_with(&format!("/{}{ext}", target.trim_start_matches("./"))))
            }
            ImportStyle::PathOrNamespace { sep, ext } => {
                if target.contains('/') || target.ends_with(ext) {
                    return self.resolve_relative(ctx, from_path, target, "");
                }
                if reference.names.iter().any(|n| n == "*") {
                    return None;
                }
                let segments: Vec<&str> = target.split(sep).filter(|s| !s.is_empty()).collect();
                (0..segments.len().saturating_sub(1))
                    .find_map(|skip| ctx.unique_ending_with(&format!("{}{ext}", segments[skip..].join("/"))))
            }
            ImportStyle::SnakeModule(ext) => {
                let path: Vec<String> = target.split('.').map(snake_case).collect();
                if path.iter().any(String::is_empty) {
                    return None;
                }
                ctx.unique_ending_with(&format!("{}{ext}", path.join("/")))
            }
            ImportStyle::Dotted(ext) => {
                if target.is_empty() || target.contains(['/', '\\']) {
                    return None;
                }
                let base = target.replace('.', "/");
                ctx.unique_ending_with(&format!("{base}{ext}"))
                    .or_else(|| ctx.unique_ending_with(&format!("{base}/init{ext}")))
            }
        }
    }
}

impl QueryAnalyzer {
    /// `target` relative to the importing file's directory, as written or
    /// with `ext` added; never an absolute or variable (`$DIR/x`) path.
    fn resolve_relative(&self, ctx: &ResolveContext<'_>, from_path: &str, target: &str, ext: &str) -> Option<String> {
        if target.starts_with('/') || target.contains('$') {
            return None;
        }
        let joined = join_normalized(dir_of(from_path), target)?;
        let with_ext = format!("{joined}{ext}");
        [joined, with_ext].into_iter().find(|p| ctx.exists(p))
    }

    /// The doc comments directly above `node`; for the first statement of a
    /// body, those above the body (Ruby's `class A\n  # Doc\n  def m`,
    /// where the comment precedes the body node).
    fn doc_above(&self, node: tree_sitter::Node<'_>, text: &str) -> Option<String> {
        let spec = self.spec;
        let is_doc = |n: &tree_sitter::Node<'_>| {
            spec.comment_kinds.contains(&n.kind())
                && text.get(n.byte_range()).unwrap_or("").starts_with(spec.doc_prefix)
        };
        let anchor = match (node.prev_sibling(), node.parent()) {
            (None, Some(parent)) if parent.start_byte() == node.start_byte() => parent,
            _ => node,
        };
        if spec.haddock_docs {
            return haddock_doc(anchor, text, spec);
        }
        let Some(raw) = preceding_comments(&anchor, text, is_doc) else {
            // No doc comment: what a plain comment right above says.
            let plain = preceding_comments(&anchor, text, |n| spec.comment_kinds.contains(&n.kind()))?;
            return plain_comment_doc(&without_markers(&plain, spec.doc_markers));
        };
        if raw.starts_with('<') {
            return strip_xml_tags(&raw);
        }
        if spec.doc_markers.is_empty() {
            return Some(raw);
        }
        clean_doc(&without_markers(&raw, spec.doc_markers))
    }

    /// Import statements from the import matches: of two patterns matching
    /// one statement the earlier wins, and one pattern's matches merge.
    /// Returns (statement node id, import) in source order, and the node ids
    /// of the imports nested in a statement's own (not calls either).
    fn merge_imports(&self, mut raw: Vec<RawImport>) -> (Vec<(usize, Import)>, Vec<usize>) {
        // Statements never share a start with a different node of the same span.
        raw.sort_by_key(|i| (i.span.start_byte, i.span.end_byte, i.pattern));
        let mut merged: Vec<RawImport> = Vec::new();
        for import in raw {
            match merged.last_mut() {
                Some(last) if last.node_id == import.node_id && last.pattern == import.pattern => {
                    last.parts.extend(import.parts);
                    last.names.extend(import.names);
                    if last.wildcard.is_none() {
                        last.wildcard = import.wildcard;
                    }
                }
                Some(last) if last.node_id == import.node_id => {}
                _ => merged.push(import),
            }
        }
        // `local f = require("m").f`, `local Path = require("m")`: the
        // `require` call inside is the statement's own import, not a second one.
        let taking: Vec<Span> =
            merged.iter().filter(|i| i.member.is_some() || !i.names.is_empty()).map(|i| i.span).collect();
        let nested = |i: &RawImport| {
            i.member.is_none()
                && i.names.is_empty()
                && taking
                    .iter()
                    .any(|o| *o != i.span && o.start_byte <= i.span.start_byte && i.span.end_byte <= o.end_byte)
        };
        let absorbed: Vec<usize> = merged.iter().filter(|i| nested(i)).map(|i| i.node_id).collect();
        merged.retain(|i| !nested(i));
        let mut out = Vec::with_capacity(merged.len());
        for mut raw in merged {
            for list in [&mut raw.parts, &mut raw.names] {
                list.sort();
                list.dedup();
            }
            let path = raw.parts.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>().join(".");
            if path.is_empty() {
                continue;
            }
            let names: Vec<String> = raw.names.into_iter().map(|(_, n)| n).collect();
            // Go-style aliases: `.` imports every name, `_` none.
            let names = match names.first().map(String::as_str) {
                _ if raw.wildcard.is_some() => vec!["*".to_string()],
                None => {
                    let bare = self.spec.imports.extension().and_then(|e| path.strip_suffix(e)).unwrap_or(&path);
                    vec![default_import_name(bare).to_string()]
                }
                Some("_") => Vec::new(),
                Some(".") => vec!["*".to_string()],
                Some(_) => names,
            };
            // The member taken, bound to the statement's name: `b as c`.
            let names = match &raw.member {
                Some(member) => names
                    .into_iter()
                    .map(|n| if n == *member || n == "*" { n } else { format!("{member} as {n}") })
                    .collect(),
                None => names,
            };
            // A wildcard import's node is named as written (`a.b.*`, `a.b._`);
            // its target stays `a.b`.
            let name = raw.wildcard.as_ref().map_or_else(|| path.clone(), |w| format!("{path}.{w}"));
            out.push((raw.node_id, Import { name, path, names, signature: raw.signature, span: raw.span }));
        }
        (out, absorbed)
    }

    /// [`Self::collect`] over the whole tree, or over the `pieces` of a file
    /// that does not parse ([`QueryLanguage::restarts`]) when they declare
    /// more. The trees are all alive here, so node ids stay distinct.
    fn collect_recovering(
        &self,
        c: &Compiled,
        tree: &tree_sitter::Tree,
        pieces: &[tree_sitter::Tree],
        text: &str,
    ) -> (Vec<Def>, Vec<RawImport>, Vec<Found>) {
        let whole = self.collect(c, tree, text);
        if pieces.is_empty() {
            return whole;
        }
        let mut parts = (Vec::new(), Vec::new(), Vec::new());
        for piece in pieces {
            let (defs, imports, refs) = self.collect(c, piece, text);
            parts.0.extend(defs);
            parts.1.extend(imports);
            parts.2.extend(refs);
        }
        if parts.0.len() > whole.0.len() { parts } else { whole }
    }

    /// Runs the query once and turns its matches into owned records.
    fn collect(&self, c: &Compiled, tree: &tree_sitter::Tree, text: &str) -> (Vec<Def>, Vec<RawImport>, Vec<Found>) {
        let spec = self.spec;
        let mut defs = Vec::new();
        let mut imports = Vec::new();
        let mut calls = Vec::new();
        let mut quiet: Vec<std::ops::Range<usize>> = Vec::new();
        // (name node id, name, class) of each `@bind`.
        let mut bound: Vec<(usize, String, Option<String>)> = Vec::new();
        let mut cursor = QueryCursor::new();
        cursor.set_max_start_depth(Some(MAX_START_DEPTH));
        let mut matches = cursor.matches(&c.query, tree.root_node(), text.as_bytes());
        let t = |n: &tree_sitter::Node<'_>| text.get(n.byte_range()).unwrap_or("");
        while let Some(m) = matches.next() {
            let first = |index: Option<u32>| {
                index.and_then(|i| m.captures().iter().find(|cap| cap.index == i)).map(|cap| cap.node)
            };
            for cap in m.captures() {
                let kind = if Some(cap.index) == c.inherits {
                    RefKind::Inherits
                } else if Some(cap.index) == c.mentions {
                    RefKind::Mentions
                } else {
                    continue;
                };
                let target = collapse(t(&cap.node));
                if !target.is_empty() {
                    let (start, node_id, span) = (cap.node.start_byte(), cap.node.id(), Span::of_node(&cap.node));
                    calls.push(Found { kind, pattern: m.pattern_index, start, node_id, target, span });
                }
            }
            let definition = m
                .captures()
                .iter()
                .find_map(|cap| c.definition.get(cap.index as usize).copied().flatten().map(|k| (k, cap.node)));
            if let Some((kind, node)) = definition {
                // Several `@name` captures join with a space (`instance Show Color`).
                let name = m
                    .captures()
                    .iter()
                    .filter(|cap| Some(cap.index) == c.name)
                    .map(|cap| collapse(strip_quotes(t(&cap.node))))
                    .collect::<Vec<_>>()
                    .join(" ");
                if name.is_empty() {
                    continue;
                }
                let body = first(c.body);
                // The header starts after leading attributes (`[Fact]`).
                let mut walk = node.walk();
                let sig_start = node
                    .children(&mut walk)
                    .find(|n| !spec.signature_skips.contains(&n.kind()) && !spec.comment_kinds.contains(&n.kind()))
                    .map_or(node.start_byte(), |n| n.start_byte());
                let signature = match body {
                    Some(body) => {
                        // Up to the body, or to a comment between the header and the body.
                        let mut end = body.start_byte().max(sig_start);
                        let mut walk = node.walk();
                        if let Some(comment) = node
                            .children(&mut walk)
                            .find(|n| spec.comment_kinds.contains(&n.kind()) && n.start_byte() > node.start_byte())
                        {
                            end = end.min(comment.start_byte());
                        }
                        let raw = text.get(sig_start..end).unwrap_or("");
                        collapse(raw).trim_end_matches(['{', ':', ' ', ';', '=']).trim_end_matches(" do").to_string()
                    }
                    None => {
                        let raw = text.get(sig_start..node.end_byte()).unwrap_or("");
                        collapse(raw.lines().next().unwrap_or("")).trim_end_matches(['{', ' ', ';']).to_string()
                    }
                };
                let doc = match first(c.doc) {
                    Some(doc) => clean_doc(strip_quotes(t(&doc))),
                    None => self.doc_above(node, text),
                };
                let name_node = first(c.name).unwrap_or(node);
                // The call a name sits in (Elixir's `def save(a)` head) is no call.
                let head = name_node.parent().filter(|p| p.id() != node.id() && p.start_byte() >= node.start_byte());
                let head_id = head.map(|h| h.id());
                let (name_id, name_start) = (name_node.id(), name_node.start_byte());
                let owner = first(c.owner).map(|n| collapse(t(&n))).filter(|o| !o.is_empty());
                defs.push(Def {
                    start: node.start_byte(),
                    end: node.end_byte(),
                    node_id: node.id(),
                    name_id,
                    head_id,
                    name_start,
                    pattern: m.pattern_index,
                    owner,
                    kind,
                    name,
                    span: Span::of_node(&node),
                    signature,
                    doc,
                });
            } else if let Some(node) = first(c.import) {
                let captured = |index: Option<u32>, clean: &dyn Fn(&str) -> String| -> Vec<(usize, String)> {
                    m.captures()
                        .iter()
                        .filter(|cap| Some(cap.index) == index)
                        .map(|cap| (cap.node.start_byte(), clean(t(&cap.node))))
                        .collect()
                };
                imports.push(RawImport {
                    node_id: node.id(),
                    pattern: m.pattern_index,
                    signature: collapse(t(&node).lines().next().unwrap_or("")),
                    span: Span::of_node(&node),
                    parts: captured(c.import_path, &|s| strip_quotes(s).trim().to_string()),
                    names: captured(c.import_name, &collapse),
                    wildcard: first(c.import_wildcard).map(|w| collapse(t(&w))),
                    member: first(c.import_member).map(|w| collapse(t(&w))),
                });
            } else if let Some(node) = first(c.no_calls) {
                quiet.push(node.byte_range());
            } else if first(c.bind).is_some() {
                if let Some(name) = first(c.bind_name) {
                    let class = first(c.bind_class).map(|class| t(&class).to_string());
                    bound.push((name.id(), t(&name).to_string(), class));
                }
            } else if let Some(node) = first(c.call) {
                let target: Vec<String> = m
                    .captures()
                    .iter()
                    .filter(|cap| Some(cap.index) == c.call_name)
                    .map(|cap| {
                        // `new Store(1).Save` -> `Store(1).Save`.
                        let raw = t(&cap.node);
                        let raw = raw.strip_prefix("new").filter(|r| r.starts_with(char::is_whitespace)).unwrap_or(raw);
                        raw.split_whitespace().collect::<String>()
                    })
                    .collect();
                let target = erase_arguments(&target.join("."));
                if !target.is_empty() {
                    calls.push(Found {
                        kind: RefKind::Calls,
                        pattern: m.pattern_index,
                        start: node.start_byte(),
                        node_id: node.id(),
                        target,
                        span: Span::of_node(&node),
                    });
                }
            }
        }
        // `@no_calls` regions (typespecs) do not nest: the one starting last
        // before a call is the only one that can hold it.
        quiet.sort_by_key(|r| r.start);
        rewrite_calls_on_bound_names(&mut calls, bound);
        calls.retain(|f| {
            let before = quiet.partition_point(|r| r.start <= f.start);
            f.kind != RefKind::Calls || before == 0 || !quiet[before - 1].contains(&f.start)
        });
        (defs, imports, calls)
    }
}

/// The name an import brings into scope when the query names none: a file
/// path's stem (`./lib/common.sh` -> `common`, `gopkg.in/yaml.v3` ->
/// `yaml`), else a dotted or `::`
/// module's last segment (`app.util` -> `util`).
fn default_import_name(path: &str) -> &str {
    let is_version = |s: &str| s.len() > 1 && s.starts_with('v') && s[1..].chars().all(|c| c.is_ascii_digit());
    if path.contains(['/', '\\']) {
        // A Go major-version segment names no package: `kit/v2` -> `kit`.
        let mut segments = path.rsplit(['/', '\\']).filter(|s| !s.is_empty() && *s != "." && *s != "..");
        let mut file = segments.next().unwrap_or(path);
        if is_version(file) {
            file = segments.next().unwrap_or(file);
        }
        return file.split('.').find(|s| !s.is_empty()).unwrap_or(file);
    }
    path.rsplit(['.', ':']).find(|s| !s.is_empty()).unwrap_or(path)
}

/// Calls on a name every `@bind` of the file gives a value of one class
/// (`@bind.class`; a binding without one states none) written against that
/// class: `p:rm()` after `local p = Path:new(...)` is `Path:rm`, which
/// resolution binds. One name node matched as both keeps its class.
fn rewrite_calls_on_bound_names(calls: &mut [Found], mut bound: Vec<(usize, String, Option<String>)>) {
    if bound.is_empty() {
        return;
    }
    bound.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| b.2.is_some().cmp(&a.2.is_some())));
    bound.dedup_by_key(|b| b.0);
    let mut classes = HashMap::new();
    for (_, name, class) in bound {
        note_class(&mut classes, name, class);
    }
    for call in calls.iter_mut().filter(|f| f.kind == RefKind::Calls) {
        if let Some(target) = written_against(&call.target, |object| classes.get(object).and_then(Option::as_ref)) {
            call.target = target;
        }
    }
}

/// A callee as written with its inner calls' arguments, index expressions
/// and type arguments dropped: `a.b(x, y).c` -> `a.b().c`, `f[int]` -> `f`,
/// `c.Errors[0].Error` -> `c.Errors.Error`, `a.M<T>` -> `a.M`, as the
/// hand-written analyzers write them. A `>` outside brackets stays (`->`).
fn erase_arguments(callee: &str) -> String {
    let mut out = String::with_capacity(callee.len());
    let mut depth = 0usize;
    let mut brackets = 0usize;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for ch in callee.chars() {
        // Inside an argument, a string or char literal's parentheses are text.
        if let Some(q) = quote {
            match ch {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                c if c == q => quote = None,
                _ => {}
            }
            continue;
        }
        match ch {
            '"' | '\'' if depth > 0 => quote = Some(ch),
            '[' | '<' => brackets += 1,
            ']' | '>' if brackets > 0 => brackets -= 1,
            _ if brackets > 0 => {}
            '(' => {
                if depth == 0 {
                    out.push('(');
                }
                depth += 1;
            }
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    out.push(')');
                }
            }
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// A Haskell declaration's doc ([`QueryLanguage::haddock_docs`]): among
/// the comments between `node` and the declaration before it, the nearest
/// Haddock `-- |` (or `{-|`) comment, whatever blank lines and plain
/// comments lie between; else a block comment ending on the line right
/// above `node`; else the plain line comments right above it
/// ([`plain_comment_doc`]). Markers, delimiters and rules of dashes are
/// left out.
fn haddock_doc(node: tree_sitter::Node<'_>, text: &str, spec: &QueryLanguage) -> Option<String> {
    let comment = |n: &tree_sitter::Node<'_>| spec.comment_kinds.contains(&n.kind());
    let body = |n: &tree_sitter::Node<'_>| text.get(n.byte_range()).unwrap_or("");
    let mut current = node.prev_sibling();
    let mut nearest = None;
    while let Some(sibling) = current.filter(comment) {
        let raw = body(&sibling);
        if raw.starts_with(spec.doc_prefix) || raw.starts_with("{-|") {
            return haddock_text(raw, spec);
        }
        nearest.get_or_insert(sibling);
        current = sibling.prev_sibling();
    }
    let nearest = nearest?;
    if body(&nearest).starts_with("{-") {
        return if nearest.end_position().row + 1 >= node.start_position().row {
            haddock_text(body(&nearest), spec)
        } else {
            None
        };
    }
    // Plain line comments right above: what they say of the declaration.
    let plain = preceding_comments(&node, text, |n| comment(n) && body(n).starts_with("--"))?;
    plain_comment_doc(&without_markers(&plain, spec.doc_markers))
}

/// The text of a Haddock line or block comment without its markers.
fn haddock_text(raw: &str, spec: &QueryLanguage) -> Option<String> {
    match raw.strip_prefix("{-").map(|r| r.strip_suffix("-}").unwrap_or(r)) {
        Some(block) => {
            let lines: Vec<&str> =
                block.trim_start_matches('|').lines().map(|line| line.trim().trim_matches('-').trim()).collect();
            clean_doc(&lines.join("\n"))
        }
        None => clean_doc(&without_markers(raw, spec.doc_markers)),
    }
}

/// `raw` with each line's doc marker (the first of `markers` it starts
/// with, and one space after it) left out.
fn without_markers(raw: &str, markers: &[&str]) -> String {
    let lines: Vec<&str> = raw
        .lines()
        .map(|line| {
            let t = line.trim_start();
            markers.iter().find_map(|m| t.strip_prefix(m)).map_or(line, |rest| rest.strip_prefix(' ').unwrap_or(rest))
        })
        .collect();
    lines.join("\n")
}

/// An XML doc comment (C#'s `<summary>`) as text: tags removed, a
/// `<see cref="X"/>` kept as `X`, blank lines dropped.
fn strip_xml_tags(doc: &str) -> Option<String> {
    let mut out = String::with_capacity(doc.len());
    let mut rest = doc;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('>') else {
            rest = &rest[open..];
            break;
        };
        let tag = &rest[open + 1..open + close];
        if let Some(at) = tag.find("cref=\"").or_else(|| tag.find("name=\"")) {
            let value = &tag[at..];
            let value = value.split('"').nth(1).unwrap_or("");
            out.push_str(value);
            if !tag.ends_with('/') && tag.starts_with("param") {
                out.push_str(": ");
            }
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    let lines: Vec<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if lines.is_empty() { None } else { Some(lines.join("\n")) }
}

/// The innermost open declaration, or the first of the names declared with
/// it (`a, b = f()`: the call belongs to `a`, as in the hand-written analyzers).
fn first_of_siblings(open: &[(usize, usize)], defs: &[Def]) -> Option<usize> {
    let &(_, top) = open.last()?;
    open.iter().map(|&(_, d)| d).find(|&d| defs[d].node_id == defs[top].node_id)
}

/// Merges consecutive sibling declarations of one name and kind (sorted by
/// start) into the first: its span grows to the last clause's end.
fn merge_clauses(defs: &mut Vec<Def>) {
    let mut out: Vec<Def> = Vec::with_capacity(defs.len());
    for def in defs.drain(..) {
        if let Some(last) = out.last_mut()
            && last.name == def.name
            && last.kind == def.kind
            && last.owner == def.owner
            && last.end <= def.start
        {
            last.end = def.end;
            last.span.end_byte = def.span.end_byte;
            last.span.end = def.span.end;
            if last.doc.is_none() {
                last.doc = def.doc;
            }
            continue;
        }
        out.push(def);
    }
    *defs = out;
}

/// `UserStore` -> `user_store`, `HTTPClient` -> `http_client` (Elixir's
/// `Macro.underscore` for one segment).
fn snake_case(segment: &str) -> String {
    let chars: Vec<char> = segment.chars().collect();
    let mut out = String::with_capacity(segment.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let prev_lower = i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if i > 0 && (prev_lower || (next_lower && chars[i - 1].is_uppercase())) {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_callees_normalise() {
        assert_eq!(snake_case("UserStore"), "user_store");
        assert_eq!(snake_case("HTTPClient"), "http_client");
        assert_eq!(snake_case("MyApp2"), "my_app2");
        assert_eq!(erase_arguments("a.b(x,y).c"), "a.b().c");
        assert_eq!(erase_arguments("getTyped[bool]"), "getTyped");
        assert_eq!(erase_arguments("audit.Record<T>"), "audit.Record");
        assert_eq!(erase_arguments("Store<Item>(1).SaveAsync"), "Store().SaveAsync");
        assert_eq!(erase_arguments("newHTTPServer(x)"), "newHTTPServer()");
        assert_eq!(erase_arguments("b.add(\")\\\"(\", ')').build"), "b.add().build");
        assert_eq!(erase_arguments("$a->b"), "$a->b");
        assert_eq!(default_import_name("./lib/common.sh"), "common");
        assert_eq!(default_import_name("gopkg.in/yaml.v3"), "yaml");
        assert_eq!(default_import_name("github.com/acme/kit/v2"), "kit");
        assert_eq!(default_import_name("app.util"), "util");
        assert_eq!(
            strip_xml_tags("<summary>Saves.</summary>\n<param name=\"x\">The x.</param>").as_deref(),
            Some("Saves.\nx: The x.")
        );
    }
}
