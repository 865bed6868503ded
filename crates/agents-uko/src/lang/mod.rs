//! Language analyzers: one module per language family, all on tree-sitter,
//! plus a file-level fallback for every other text file.
//!
//! An [`Analyzer`] turns `(language, path, text)` into a [`FileAnalysis`]
//! and knows how its language's import specifiers map to files
//! ([`Analyzer::resolve_import`]). [`analyzer_for`] is the registry.
//! [`FileBuilder`] and the helpers below are shared by every analyzer so
//! symbol paths, spans, doc cleaning and syntax warnings work the same way
//! everywhere.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, Parser, Tree};

use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span, SymbolNode, file_name};
use crate::resolve::ResolveContext;

pub mod c;
pub mod classes;
pub mod fallback;
pub mod go;
pub mod java;
pub mod javascript;
pub mod languages;
pub mod markdown;
pub mod python;
pub mod query;
pub mod rust;
pub mod signature;

/// The version of what the analyzers produce (nodes, spans, signatures,
/// references) and of how `agents-acms` links their references. An index
/// records the version that built its graph, and a run that finds another
/// re-analyses every file, unchanged ones included: an upgrade never leaves
/// an index half built by the old analyzers. Bump it with any change to
/// their output; `tests::analyzer_version_follows_the_snapshots` fails when
/// the analyzers' snapshots change and this number does not.
pub const ANALYZER_VERSION: u32 = 34;

/// Extracts structure from files of some languages.
pub trait Analyzer: Send + Sync {
    /// Language names (as `agents-acms` detects them) this analyzer handles.
    fn languages(&self) -> &'static [&'static str];

    /// Extracts nodes and raw references. Never fails: a file that does not
    /// parse yields what the partial tree holds plus a warning.
    fn analyze(&self, language: &str, path: &str, text: &str) -> FileAnalysis;

    /// The indexed file an import reference (`RefKind::Import`) of `from_path`
    /// names, or `None` when it names something outside the resource
    /// (a package, the standard library, a system header). Must never guess:
    /// an ambiguous specifier stays unresolved.
    fn resolve_import(&self, _ctx: &ResolveContext<'_>, _from_path: &str, _reference: &Reference) -> Option<String> {
        None
    }
}

static ANALYZERS: &[&dyn Analyzer] = &[
    &python::PythonAnalyzer,
    &javascript::JavaScriptAnalyzer,
    &rust::RustAnalyzer,
    &go::GoAnalyzer,
    &java::JavaAnalyzer,
    &c::CAnalyzer,
    &markdown::MarkdownAnalyzer,
    &languages::RUBY,
    &languages::BASH,
    &languages::LUA,
    &languages::CSHARP,
    &languages::PHP,
    &languages::KOTLIN,
    &languages::SCALA,
    &languages::SWIFT,
    &languages::ZIG,
    &languages::HASKELL,
    &languages::ELIXIR,
];

/// The analyzer for a detected language; the file-level fallback for any other.
pub fn analyzer_for(language: &str) -> &'static dyn Analyzer {
    ANALYZERS.iter().copied().find(|a| a.languages().contains(&language)).unwrap_or(&fallback::FallbackAnalyzer)
}

/// Every language with a structural (tree-sitter) analyzer, sorted.
pub fn structured_languages() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = ANALYZERS.iter().flat_map(|a| a.languages().iter().copied()).collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Analyzes one file with the analyzer for its language.
pub fn analyze(language: &str, path: &str, text: &str) -> FileAnalysis {
    analyzer_for(language).analyze(language, path, text)
}

/// Parses `text` with a grammar. `None` only if the grammar cannot be loaded
/// (an ABI mismatch, a bug) or parsing was cancelled.
pub fn parse(language: &tree_sitter::Language, text: &str) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(language).ok()?;
    parser.parse(text, None)
}

/// A node's named children, without a cursor to manage.
pub fn named_children<'tree>(node: Node<'tree>) -> impl Iterator<Item = Node<'tree>> {
    (0..node.named_child_count() as u32).filter_map(move |i| node.named_child(i))
}

/// The source text of a node.
pub fn node_text<'t>(node: &Node<'_>, text: &'t str) -> &'t str {
    text.get(node.start_byte()..node.end_byte()).unwrap_or("")
}

/// Text of the named field of a node, if present.
pub fn field_text<'t>(node: &Node<'_>, field: &str, text: &'t str) -> Option<&'t str> {
    node.child_by_field_name(field).map(|n| node_text(&n, text))
}

/// A declaration's header: its text from its start up to `body` (or the
/// whole node when there is no body), with runs of whitespace collapsed and a
/// trailing `{` or `:` removed. Comments between the header and the body
/// (Python's `#:` attribute notes above a method's first statement) are not
/// part of it: the header ends where its last token before the body does.
pub fn signature_until(node: &Node<'_>, body: Option<Node<'_>>, text: &str) -> String {
    let end = body.map_or(node.end_byte(), |b| {
        let mut cursor = node.walk();
        let before: Vec<Node<'_>> =
            node.children(&mut cursor).take_while(|c| c.start_byte() < b.start_byte()).collect();
        // Only when the body is one of the node's own children (a Go struct's
        // fields sit deeper) and every child before it ends before it.
        if b.parent() != Some(*node) || before.iter().any(|c| c.end_byte() > b.start_byte()) {
            return b.start_byte();
        }
        before.iter().filter(|c| !c.kind().contains("comment")).map(|c| c.end_byte()).max().unwrap_or(b.start_byte())
    });
    let raw = text.get(node.start_byte()..end).unwrap_or("");
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.trim_end_matches(['{', ':', ' ', ';']).to_string()
}

/// Removes comment markers from a doc comment or docstring and trims
/// common indentation: `///`, `//!`, `//`, `/** */`, `/* */`, `#`,
/// Python string quotes (`"""`, `'''`, `r"""`, `"`), and leading `*` of
/// block comment lines. Returns `None` if nothing but markers remains.
pub fn clean_doc(raw: &str) -> Option<String> {
    let mut s = raw.trim();
    for prefix in ["r\"\"\"", "R\"\"\"", "u\"\"\"", "\"\"\"", "r'''", "'''", "/**", "/*!", "/*"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest;
            break;
        }
    }
    for suffix in ["\"\"\"", "'''", "*/"] {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest;
            break;
        }
    }
    if s.len() >= 2 && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\''))) {
        s = &s[1..s.len() - 1];
    }
    let lines: Vec<&str> = s
        .lines()
        .map(|line| {
            let t = line.trim_start();
            for marker in ["///", "//!", "//", "#!", "#"] {
                if let Some(rest) = t.strip_prefix(marker) {
                    return rest.strip_prefix(' ').unwrap_or(rest);
                }
            }
            if let Some(rest) = t.strip_prefix('*')
                && !rest.starts_with('/')
            {
                return rest.strip_prefix(' ').unwrap_or(rest);
            }
            line
        })
        .collect();
    // Trim common indentation of the non-empty lines after the first.
    let indent = lines
        .iter()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let line = if i == 0 { line.trim() } else { line.get(indent..).unwrap_or(line.trim_start()) };
        out.push(line.trim_end().to_string());
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    let joined = out.join("\n");
    if joined.trim().is_empty() { None } else { Some(joined) }
}

/// The comments that directly precede `node` (consecutive comment siblings
/// with no blank line between them and the node), cleaned. `is_comment`
/// says which node kinds are comments in the grammar.
pub fn preceding_comments(node: &Node<'_>, text: &str, is_comment: impl Fn(&Node<'_>) -> bool) -> Option<String> {
    let mut parts = Vec::new();
    let mut next_start_row = node.start_position().row;
    let mut current = node.prev_sibling();
    while let Some(sibling) = current {
        if !is_comment(&sibling) || sibling.end_position().row + 1 < next_start_row {
            break;
        }
        parts.push(node_text(&sibling, text));
        next_start_row = sibling.start_position().row;
        current = sibling.prev_sibling();
    }
    if parts.is_empty() {
        return None;
    }
    parts.reverse();
    let cleaned: Vec<String> = parts.iter().filter_map(|p| clean_doc(p)).collect();
    if cleaned.is_empty() { None } else { Some(cleaned.join("\n")) }
}

/// What a plain comment (not a doc comment) right above a declaration says
/// of it, as its doc where the language's doc comment is missing (Haskell's
/// `-- balanceL only checks whether the left subtree is too big`, a Zig
/// helper's `// ...`): `cleaned` (markers already removed) without the
/// lines that direct a tool (`eslint-disable`, `@ts-ignore`, `NOLINT`) or
/// only draw a rule, and nothing when what remains holds no word or reads as
/// code commented out (most lines ending in `;`, `{` or `}`).
pub fn plain_comment_doc(cleaned: &str) -> Option<String> {
    const DIRECTIVES: [&str; 12] = [
        "eslint",
        "@ts-",
        "prettier-ignore",
        "istanbul ignore",
        "c8 ignore",
        "nolint",
        "noqa",
        "type: ignore",
        "pragma:",
        "#region",
        "endregion",
        "#endregion",
    ];
    let lines: Vec<&str> = cleaned
        .lines()
        .filter(|line| {
            let lower = line.trim().to_lowercase();
            !DIRECTIVES.iter().any(|d| lower.starts_with(d)) && line.chars().any(char::is_alphanumeric)
        })
        .collect();
    let words = lines.iter().flat_map(|l| l.split(|c: char| !c.is_alphabetic())).filter(|w| w.len() >= 3).count();
    let code = lines.iter().filter(|l| l.trim_end().ends_with([';', '{', '}'])).count();
    if words == 0 || 2 * code >= lines.len() {
        return None;
    }
    Some(lines.join("\n").trim().to_owned())
}

/// Whether `outer`, a declaration of `name` with no body (a TypeScript
/// overload signature, a Python `typing.overload` stub), is followed,
/// through further such declarations of it and comments, by its
/// implementation. `part` reads a sibling as the name it declares and
/// whether it has a body; `None` for anything else.
pub fn implemented_below<'t, 's>(
    outer: Node<'t>,
    name: &str,
    part: impl Fn(Node<'t>) -> Option<(&'s str, bool)>,
) -> bool {
    let mut next = outer.next_named_sibling();
    while let Some(node) = next {
        if node.kind() != "comment" {
            match part(node) {
                Some((n, true)) if n == name => return true,
                Some((n, false)) if n == name => {}
                _ => return false,
            }
        }
        next = node.next_named_sibling();
    }
    false
}

/// Builds a [`FileAnalysis`]: node 0 is the file; [`FileBuilder::add`]
/// computes unique symbol paths.
pub struct FileBuilder {
    analysis: FileAnalysis,
    seen: HashMap<String, u32>,
    /// (from, kind, target) already recorded by [`FileBuilder::reference_once`].
    recorded: HashSet<(usize, RefKind, String)>,
}

impl FileBuilder {
    pub fn new(kind: NodeKind, path: &str, text: &str) -> FileBuilder {
        FileBuilder {
            analysis: FileAnalysis::file_only(kind, path, text),
            seen: HashMap::new(),
            recorded: HashSet::new(),
        }
    }

    /// Adds a node under `parent` and returns its index.
    pub fn add(
        &mut self,
        parent: usize,
        kind: NodeKind,
        name: &str,
        span: Span,
        signature: Option<String>,
        doc: Option<String>,
    ) -> usize {
        let parent_path = &self.analysis.nodes[parent].symbol_path;
        let base = if parent_path.is_empty() { name.to_string() } else { format!("{parent_path}.{name}") };
        let count = self.seen.entry(base.clone()).or_insert(0);
        *count += 1;
        let symbol_path = if *count == 1 { base } else { format!("{base}~{count}") };
        self.analysis.nodes.push(SymbolNode {
            kind,
            name: name.to_string(),
            symbol_path,
            parent: Some(parent),
            span,
            signature,
            doc,
        });
        self.analysis.nodes.len() - 1
    }

    /// Records a reference by name (a call, inheritance or mention).
    pub fn reference(&mut self, from: usize, kind: RefKind, target: impl Into<String>, span: Span) {
        let target = target.into();
        if target.is_empty() {
            return;
        }
        self.analysis.references.push(Reference { from, kind, target, names: Vec::new(), system: false, span });
    }

    /// Records a reference unless the same (from, kind, target) was already
    /// recorded this way: a node that calls `save` ten times depends on it once.
    pub fn reference_once(&mut self, from: usize, kind: RefKind, target: impl Into<String>, span: Span) {
        let target = target.into();
        if target.is_empty() || !self.recorded.insert((from, kind, target.clone())) {
            return;
        }
        self.reference(from, kind, target, span);
    }

    /// Records an import of module `target` bringing `names` into scope.
    pub fn import(&mut self, from: usize, target: impl Into<String>, names: Vec<String>, system: bool, span: Span) {
        let target = target.into();
        if target.is_empty() {
            return;
        }
        self.analysis.references.push(Reference { from, kind: RefKind::Import, target, names, system, span });
    }

    /// Sets the doc of an existing node (e.g. a module docstring on node 0).
    pub fn set_doc(&mut self, index: usize, doc: Option<String>) {
        self.analysis.nodes[index].doc = doc;
    }

    /// Names node `index` `name`, its symbol path unchanged.
    pub fn set_name(&mut self, index: usize, name: &str) {
        self.analysis.nodes[index].name = name.to_string();
    }

    pub fn kind(&self, index: usize) -> NodeKind {
        self.analysis.nodes[index].kind
    }

    pub fn warn(&mut self, message: impl Into<String>) {
        self.analysis.warnings.push(message.into());
    }

    /// Adds up to five "syntax error" warnings for ERROR/MISSING nodes.
    pub fn syntax_warnings(&mut self, tree: &Tree) {
        if !tree.root_node().has_error() {
            return;
        }
        let mut found = Vec::new();
        collect_errors(tree.root_node(), &mut found);
        for (line, missing) in found.iter().take(5) {
            let what = if *missing { "missing syntax" } else { "syntax error" };
            self.warn(format!("line {line}: {what}; the tree is partial"));
        }
        if found.is_empty() {
            self.warn("syntax error; the tree is partial");
        }
    }

    pub fn finish(self) -> FileAnalysis {
        self.analysis
    }
}

/// ERROR and MISSING nodes in document order (at most five), found with an
/// explicit stack so a deeply nested broken tree cannot overflow ours.
fn collect_errors(root: Node<'_>, out: &mut Vec<(usize, bool)>) {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if out.len() >= 5 {
            return;
        }
        if node.is_error() || node.is_missing() {
            out.push((node.start_position().row + 1, node.is_missing()));
            continue;
        }
        if !node.has_error() {
            continue;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
}

/// Records that `name` is given a value of `class` (`None`: of no class the
/// code states): a name keeps its class only while every binding agrees,
/// which is what lets an analyzer write `x.m()` as `Class.m`.
pub fn note_class<K: std::hash::Hash + Eq>(seen: &mut HashMap<K, Option<String>>, name: K, class: Option<String>) {
    match seen.get(&name) {
        Some(known) if *known != class => {
            seen.insert(name, None);
        }
        Some(_) => {}
        None => {
            seen.insert(name, class);
        }
    }
}

/// A call `object.member` (Lua's `object:member` too) written against the
/// class `class_of(object)` names (`ctx.fail` with `ctx: Context` ->
/// `Context.fail`, `p:rm` -> `Path:rm`), which resolution binds; `None`
/// when the object's class is unknown or the member is itself a chain or a
/// call (`ctx.obj.m`, `f().m`, Rust's `Self::new`).
pub fn written_against<'s>(target: &str, class_of: impl FnOnce(&str) -> Option<&'s String>) -> Option<String> {
    let (object, rest) = target.split_at(target.find(['.', ':'])?);
    let (separator, member) = rest.split_at(1);
    if member.is_empty() || member.contains(['.', '(', ':']) {
        return None;
    }
    Some(format!("{}{separator}{member}", class_of(object)?))
}

/// Runs of whitespace collapsed to one space.
pub fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first named child of `node` of a kind.
pub fn child_of_kind<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).find(|c| c.kind() == kind)
}

/// `dir/rest`, or `rest` at the root.
pub fn join_path(dir: &str, rest: &str) -> String {
    if dir.is_empty() { rest.to_string() } else { format!("{dir}/{rest}") }
}

/// A string literal's contents: one pair of `"`, `'` or `` ` `` quotes removed.
pub fn strip_quotes(s: &str) -> &str {
    for q in ['"', '\'', '`'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner;
        }
    }
    s
}

/// Parses `text` for an analyzer, or records on `builder` why it could not;
/// the syntax warnings of a partial tree are recorded too.
pub fn parse_or_warn(
    builder: &mut FileBuilder,
    language: &tree_sitter::Language,
    display: &str,
    text: &str,
) -> Option<Tree> {
    let Some(tree) = parse(language, text) else {
        builder.warn(format!("could not parse: the {display} grammar failed to load"));
        return None;
    };
    builder.syntax_warnings(&tree);
    Some(tree)
}

/// Every node under `root` in document order, with an explicit stack so a
/// deeply nested tree cannot overflow ours. `visit` returns whether to visit
/// a node's children.
pub fn walk_preorder<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        if !visit(node) {
            continue;
        }
        let mut cursor = node.walk();
        let start = stack.len();
        stack.extend(node.named_children(&mut cursor));
        stack[start..].reverse();
    }
}

/// The file's name without extension, for module-style names.
pub fn file_stem(path: &str) -> &str {
    let name = file_name(path);
    name.split_once('.').map_or(name, |(stem, _)| stem)
}

/// Checks shared by the analyzers' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use crate::model::{FileAnalysis, RefKind};

    /// Every span slices back to its declaration: non-empty, starting at a
    /// token boundary, containing the node's name.
    pub fn assert_spans_are_declarations(analysis: &FileAnalysis, text: &str) {
        let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        for node in &analysis.nodes[1..] {
            let slice = node.span.slice(text);
            let what = format!("{} {:?}", node.symbol_path, &slice[..slice.len().min(30)]);
            assert!(!slice.is_empty() && !slice.starts_with(char::is_whitespace), "{what}");
            let before = text[..node.span.start_byte].chars().next_back();
            assert!(before.is_none_or(|c| c.is_whitespace() || "{(,;".contains(c)), "{what} after {before:?}");
            assert!(flat(slice).contains(&flat(&node.name)), "{what} lacks its name");
        }
        for r in &analysis.references {
            assert!(!r.span.slice(text).is_empty(), "{r:?}");
        }
    }

    /// The targets of the analysis's calls, in order.
    pub fn call_targets(analysis: &FileAnalysis) -> Vec<&str> {
        analysis.references.iter().filter(|r| r.kind == RefKind::Calls).map(|r| r.target.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analyzers' snapshots (`src/lang/snapshots`, bodies without insta's
    /// header) digested, with the [`ANALYZER_VERSION`] they go with.
    const SNAPSHOTS_OF_VERSION: (u32, &str) = (34, "252407f7eb8acc4861bdcffdb40c65f612cb554201658f032ea5074dff420322");

    #[test]
    fn plain_comments_say_what_they_describe_and_nothing_else() {
        assert_eq!(
            plain_comment_doc("Region of the buffer still free.").as_deref(),
            Some("Region of the buffer still free.")
        );
        assert_eq!(
            plain_comment_doc("pragma: no cover\nKeeps the cache warm.").as_deref(),
            Some("Keeps the cache warm.")
        );
        for nothing in ["#region Helpers", "eslint-disable-next-line no-console", "----------", "x = 1;\ny += x;", "ok"]
        {
            assert_eq!(plain_comment_doc(nothing), None, "{nothing}");
        }
    }

    #[test]
    fn analyzer_version_follows_the_snapshots() {
        use sha2::{Digest, Sha256};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lang/snapshots");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".snap"))
            .collect();
        names.sort();
        let mut hasher = Sha256::new();
        for name in &names {
            let text = std::fs::read_to_string(dir.join(name)).unwrap().replace("\r\n", "\n");
            // insta's header (`---`, source, expression, `---`) names the
            // test, not the output.
            let body =
                text.strip_prefix("---\n").and_then(|t| t.split_once("\n---\n")).map_or(text.as_str(), |(_, b)| b);
            hasher.update(name.as_bytes());
            hasher.update([0]);
            hasher.update(body.as_bytes());
            hasher.update([0]);
        }
        let digest = agents_core::digest::hex(&hasher.finalize());
        assert!(
            SNAPSHOTS_OF_VERSION == (ANALYZER_VERSION, digest.as_str()),
            "the analyzers' snapshots changed (or ANALYZER_VERSION did): an index built by the old \
             analyzers must be re-analysed, so bump ANALYZER_VERSION (it is {ANALYZER_VERSION}) and set \
             SNAPSHOTS_OF_VERSION to (the new version, \"{digest}\")"
        );
    }

    #[test]
    fn clean_doc_strips_markers() {
        assert_eq!(clean_doc("/// Adds two.\n/// Returns sum.").unwrap(), "Adds two.\nReturns sum.");
        assert_eq!(clean_doc("/**\n * Parses.\n * @param x the x\n */").unwrap(), "Parses.\n@param x the x");
        assert_eq!(clean_doc("\"\"\"Run it.\n\n    Details here.\n    \"\"\"").unwrap(), "Run it.\n\nDetails here.");
        assert_eq!(clean_doc("# comment").unwrap(), "comment");
        assert_eq!(clean_doc("//"), None);
        assert_eq!(clean_doc("'single'").unwrap(), "single");
    }

    #[test]
    fn builder_makes_unique_paths() {
        let mut b = FileBuilder::new(NodeKind::Module, "a/b.py", "x");
        let c = b.add(0, NodeKind::Class, "C", Span::default(), None, None);
        let m1 = b.add(c, NodeKind::Method, "m", Span::default(), None, None);
        let m2 = b.add(c, NodeKind::Method, "m", Span::default(), None, None);
        let a = b.finish();
        assert_eq!(a.nodes[0].name, "b.py");
        assert_eq!(a.nodes[c].symbol_path, "C");
        assert_eq!(a.nodes[m1].symbol_path, "C.m");
        assert_eq!(a.nodes[m2].symbol_path, "C.m~2");
        assert_eq!(a.children(c), [m1, m2]);
    }
}
