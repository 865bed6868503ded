//! Detail-depth rendering: every node at depths 0-9 (the spec's table).
//!
//! | depth | question | adds |
//! |---|---|---|
//! | 0 | what exists? | kind and name |
//! | 1 | how is it organised? | names of immediate children |
//! | 2 | key relationships? | `dependsOn` / `references` edges |
//! | 3 | purpose? | one-line summaries (doc first lines) of the node and children |
//! | 4 | structural shape? | signatures with types (a container child's members' too), size metadata |
//! | 5-8 | how does it work? | the source, 25 / 50 / 75 / 90 % of its lines; at 8, also a container's whole source around its members that other fragments of the answer show ([`render_around`]) |
//! | 9 | everything | the complete source |
//!
//! Each depth's text is the previous depth's text with more appended (for
//! 5-8, a longer prefix of the same source), save that from depth 2 the
//! imports leave `contains:` for `depends on:`, which lists each resolved to
//! its file or as an external name (one list of them, not two), and from
//! depth 4 the children the outline's signatures name leave it. Depth 9
//! shows the complete source under the title and the relationships, and
//! leaves out what the source itself shows (the children's names, summaries and signatures, the
//! node's signature and size, a summary its own lines hold): the whole
//! answer for fewer tokens. [`render_all`] keeps token counts from
//! decreasing with depth. Rendering is pure: the caller supplies the node,
//! its children, its resolved edges and the file text.

use agents_core::tokens::TokenCounter;

use crate::model::{NodeKind, RefKind, Span};
use crate::role::FileRole;

/// The deepest detail level.
pub const MAX_DEPTH: u8 = 9;

/// What rendering needs to know about one node.
#[derive(Clone, Debug)]
pub struct NodeView<'a> {
    pub kind: NodeKind,
    pub name: &'a str,
    /// `App.run`; empty for a file node.
    pub symbol_path: &'a str,
    /// File path relative to the resource root.
    pub path: &'a str,
    pub span: Span,
    pub signature: Option<&'a str>,
    pub doc: Option<&'a str>,
}

impl NodeView<'_> {
    /// How `child` is named under this node: its symbol path below this
    /// one's (its name, unless it was written qualified: Lua's `M.new` in a
    /// file), without the `~2` that tells overloads apart.
    pub fn child_name<'c>(&self, child: &NodeView<'c>) -> &'c str {
        let path = child.symbol_path.rsplit_once('~').map_or(child.symbol_path, |(path, _)| path);
        let below = if self.symbol_path.is_empty() {
            Some(path)
        } else {
            path.strip_prefix(self.symbol_path).and_then(|rest| rest.strip_prefix('.'))
        };
        below.filter(|below| below.ends_with(child.name)).unwrap_or(child.name)
    }

    /// `class App`, `function helper`, `module src/app.py`.
    pub fn title(&self) -> String {
        let name = if self.symbol_path.is_empty() { self.path } else { self.symbol_path };
        format!("{} {}", self.kind.as_str().replace('_', " "), name)
    }

    /// The doc comment's first line, unless that is already one of its
    /// tags (`:rtype: str`, `@param name`): a doc of tags only has no summary.
    fn summary(&self) -> Option<&str> {
        let first = self.doc?.lines().map(str::trim).find(|l| !l.is_empty())?;
        // A reST field (`:returns: the text`), not a role (`:class:\`App\``).
        let field = first.strip_prefix(':').and_then(|rest| rest.split_once(':')).is_some_and(|(name, value)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_alphanumeric() || c == '_' || c == ' ')
                && (value.is_empty() || value.starts_with(char::is_whitespace))
        });
        let tag = first.strip_prefix('@').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()));
        (!field && !tag).then_some(first)
    }
}

/// One outgoing edge, for depth 2 and deeper.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EdgeView {
    pub kind: RefKind,
    /// A file path, `path#Symbol`, or an external name as written.
    pub target: String,
    /// Whether the target lies outside the resource (unresolved).
    pub external: bool,
}

/// Everything [`render`] reads.
#[derive(Clone, Debug)]
pub struct RenderInput<'a> {
    pub node: NodeView<'a>,
    /// Immediate children in source order.
    pub children: Vec<NodeView<'a>>,
    /// For each child (same order), its own children: a class's methods, for
    /// the signatures at depth 4. Shorter than `children` (or empty) when not
    /// known; only [`is_container`] children are listed.
    pub members: Vec<Vec<NodeView<'a>>>,
    pub edges: Vec<EdgeView>,
    /// The whole text of the node's file.
    pub file_text: &'a str,
}

/// The node rendered at `depth` (values above 9 render as 9).
pub fn render(input: &RenderInput<'_>, depth: u8) -> String {
    let depth = depth.min(MAX_DEPTH);
    if depth == MAX_DEPTH {
        return render_complete(input);
    }
    let mut out = input.node.title();
    out.push('\n');
    let names = child_names(input, depth);
    if !names.is_empty() {
        out.push_str(&format!("contains: {}\n", names.join(", ")));
    }
    if depth >= 2 {
        out.push_str(&relationships(input, false));
    }
    if depth >= 3 {
        if let Some(summary) = input.node.summary() {
            out.push_str(&format!("summary: {summary}\n"));
        }
        for child in &input.children {
            if let Some(summary) = child.summary() {
                out.push_str(&format!("- {}: {summary}\n", input.node.child_name(child)));
            }
        }
    }
    if depth >= 4 {
        if let Some(sig) = input.node.signature {
            out.push_str(&format!("signature: {sig}\n"));
        }
        let span = input.node.span;
        let lines = span.line_count();
        out.push_str(&format!(
            "size: lines {}-{} ({}), {}\n",
            span.start.line,
            span.start.line + lines - 1,
            plural(lines as usize, "line"),
            plural(input.children.len(), "member")
        ));
        // A header view: each child's signature, and under a class (or
        // struct, trait, ...) its members' signatures, so a module at
        // SIGNATURES shows its classes' methods too.
        for (i, child) in input.children.iter().enumerate() {
            if let Some(sig) = child.signature {
                out.push_str(&format!("  {sig}\n"));
            }
            if !is_container(child.kind) {
                continue;
            }
            for member in input.members.get(i).map(Vec::as_slice).unwrap_or_default() {
                if let Some(sig) = member.signature {
                    out.push_str(&format!("    {sig}\n"));
                }
            }
        }
    }
    if depth >= 5 {
        // Depths 5-8 (9 is `render_complete`): an excerpt from the start.
        let source = source_lines(input);
        let percent = match depth {
            5 => 25,
            6 => 50,
            7 => 75,
            _ => 90,
        };
        let total = source.len();
        let keep = (total * percent).div_ceil(100).max(1).min(total);
        push_source(&mut out, &source[..keep], total - keep);
    }
    out
}

/// The `contains:` entries at `depth` (none at 0): each child as `kind name`,
/// in source order. From depth 2 on, imports are left out when the edges
/// hold them: `depends on` lists each import, resolved to its file or
/// external by name; from depth 4, children whose signature (which names
/// them) the outline lists.
fn child_names(input: &RenderInput<'_>, depth: u8) -> Vec<String> {
    if depth == 0 {
        return Vec::new();
    }
    let imports_listed = depth >= 2 && input.edges.iter().any(|e| e.kind == RefKind::Import);
    // From depth 4 a child whose signature names it is listed by that line.
    let outlined = |c: &NodeView<'_>| depth >= 4 && c.signature.is_some_and(|sig| sig.contains(c.name));
    input
        .children
        .iter()
        .filter(|c| !(outlined(c) || imports_listed && c.kind == NodeKind::Import))
        .map(|c| format!("{} {}", c.kind.as_str().replace('_', " "), input.node.child_name(c)))
        .collect()
}

/// `lines` in a fence, then how many more the excerpt leaves out, if any.
fn push_source(out: &mut String, lines: &[&str], more: usize) {
    out.push_str("```\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    if more > 0 {
        out.push_str(&format!("... ({more} more {})\n", if more == 1 { "line" } else { "lines" }));
    }
    out.push_str("```\n");
}

/// Depth 9: the title, the relationships, the node's summary when its own
/// lines do not hold it (a doc comment above a Go or Rust function), and the
/// complete source.
fn render_complete(input: &RenderInput<'_>) -> String {
    render_around(input, &[])
}

/// Lines of a node's file that another fragment of the same answer shows
/// whole ([`render_around`]): 1-based, both ends included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShownElsewhere {
    pub first_line: u32,
    pub last_line: u32,
    /// How the marker names them: `function stale`, `method Group.invoke`.
    pub title: String,
}

/// The node's complete source, laid out as at depth 9 (which is this with
/// nothing shown elsewhere), save the lines that other fragments of the
/// answer show whole (`shown`: a container's members
/// packed at full source): each such run is one line, indented as its first
/// line, naming what it holds and where it is. What a container adds to its
/// members once they are delivered (a module's top-level code, a class's
/// fields and the members left out), without delivering any line twice.
/// With something shown elsewhere, the tests the node holds are left out
/// the same way ([`test_runs`]): on the question sets they took about 1% of
/// every answer's tokens, and met no annotated line.
pub fn render_around(input: &RenderInput<'_>, shown: &[ShownElsewhere]) -> String {
    let mut out = input.node.title();
    out.push('\n');
    out.push_str(&relationships(input, true));
    let source = source_lines(input);
    if let Some(summary) = input.node.summary()
        && !source.iter().any(|line| line.contains(summary))
    {
        out.push_str(&format!("summary: {summary}\n"));
    }
    // Each run left out: (first line, last line, what the marker says).
    let mut runs: Vec<(u32, u32, String)> = shown
        .iter()
        .map(|s| {
            (
                s.first_line,
                s.last_line,
                format!("{}, lines {}-{}: in its own fragment", s.title, s.first_line, s.last_line),
            )
        })
        .collect();
    if !shown.is_empty() {
        runs.extend(test_runs(input, &source, shown));
    }
    runs.sort_by_key(|r| (r.0, std::cmp::Reverse(r.1)));
    out.push_str("```\n");
    let mut skip_to = 0;
    for (i, line) in source.iter().enumerate() {
        let number = input.node.span.start.line + i as u32;
        if number <= skip_to {
            continue;
        }
        if let Some((_, last, marker)) = runs.iter().find(|r| r.0 <= number && number <= r.1) {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}... ({marker})\n"));
            skip_to = *last;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("```\n");
    out
}

/// The tests a node holds that no fragment shows (Rust's `mod tests` and
/// `#[test]` functions, Zig's `test` blocks in a source file), as runs its
/// source around its members leaves out like them: a test tells an agent
/// what the code does only when it asks about tests, and then the tests come
/// as pieces of their own. Neighbouring tests (blank, attribute and comment
/// lines between) make one run, its attributes included. None in a test
/// file or a test module, whose tests are the code.
fn test_runs(input: &RenderInput<'_>, source: &[&str], shown: &[ShownElsewhere]) -> Vec<(u32, u32, String)> {
    let node = &input.node;
    let in_tests = |symbol_path: &str| symbol_path.split('.').any(|s| matches!(s, "tests" | "test"));
    if node.kind == NodeKind::Test || in_tests(node.symbol_path) || FileRole::of(node.path) == FileRole::Test {
        return Vec::new();
    }
    let first = node.span.start.line;
    let line = |number: u32| source.get(number.checked_sub(first)? as usize).map(|l| l.trim());
    let decoration =
        |number: u32| line(number).is_some_and(|l| l.is_empty() || l.starts_with("#[") || l.starts_with("//"));
    let overlaps_shown = |a: u32, b: u32| shown.iter().any(|s| s.first_line <= b && a <= s.last_line);
    let mut runs: Vec<(u32, u32, Vec<String>)> = Vec::new();
    for child in &input.children {
        let is_test = child.kind == NodeKind::Test
            || (child.kind == NodeKind::Namespace && matches!(child.name, "tests" | "test"));
        let (mut a, b) = (child.span.start.line, child.span.end.line);
        if !is_test || overlaps_shown(a, b) || a < first {
            continue;
        }
        while a > first && line(a - 1).is_some_and(|l| l.starts_with("#[")) {
            a -= 1;
        }
        let title = format!("{} {}", child.kind.as_str(), node.child_name(child));
        match runs.last_mut() {
            Some(run) if (run.1 + 1..a).all(decoration) && !overlaps_shown(run.1, a) => {
                run.1 = b;
                run.2.push(title);
            }
            _ => runs.push((a, b, vec![title])),
        }
    }
    runs.into_iter()
        .map(|(a, b, titles)| {
            let what = match titles.as_slice() {
                [one] => one.clone(),
                many => format!("{} tests", many.len()),
            };
            (a, b, format!("{what}, lines {a}-{b}: left out"))
        })
        .collect()
}

/// Depth 2's lines: the `dependsOn` edges an agent can follow, by use
/// (`import src/utils.py; import external os; calls src/utils.py#{quote,
/// unquote}`, one file's symbols grouped; a file imported whole not named
/// again when its symbols are), and the references; edges to the node's own
/// members (a class's method calling another) are left out: its children
/// list them. With the `complete` source below them, only what that source
/// cannot show is kept: where each name it uses lives in other files
/// (`src/utils.py#{quote, unquote}`, one file's targets together, the use
/// left to the source); unresolved targets (external imports, bases, type
/// names) and targets in the node's own file are names the source shows.
fn relationships(input: &RenderInput<'_>, complete: bool) -> String {
    let node = &input.node;
    let own = if node.symbol_path.is_empty() {
        format!("{}#", node.path)
    } else {
        format!("{}#{}.", node.path, node.symbol_path)
    };
    // A class naming itself (a constructor's return type, a classmethod's
    // `cls`) is no relationship either.
    let itself = own.strip_suffix('.').unwrap_or("");
    let same_file = format!("{}#", node.path);
    let mut edges: Vec<&EdgeView> =
        input.edges.iter().filter(|e| e.external || !(e.target.starts_with(&own) || e.target == itself)).collect();
    edges.sort();
    edges.dedup();
    let (mentions, depends): (Vec<&EdgeView>, Vec<&EdgeView>) = edges
        .into_iter()
        // An unresolved call (`options.get`, `bp.lstrip`, `print`) costs
        // tokens and tells an agent nothing it can open: only resolved calls,
        // and (without the complete source) external imports and bases, are kept.
        .filter(|e| !(e.external && (complete || e.kind == RefKind::Calls)))
        // Under the complete source, a target in the node's own file is a
        // name that source shows, in the file the fragment names: only other
        // files' targets add where to go.
        .filter(|e| !(complete && e.target.starts_with(&same_file)))
        .partition(|e| e.kind == RefKind::Mentions);
    let depends = named_by_symbols(depends, &mentions);
    let depends = if complete { complete_depends(depends) } else { depends };
    // A target depended on (a base class) is not referenced again.
    let mentions: Vec<&EdgeView> =
        mentions.into_iter().filter(|m| !depends.iter().any(|d| d.target == m.target)).collect();
    let mut out = String::new();
    if !depends.is_empty() {
        let listed = if complete { grouped(&depends) } else { by_use(&depends) };
        out.push_str(&format!("depends on: {listed}\n"));
    }
    if !mentions.is_empty() {
        out.push_str(&format!("references: {}\n", grouped(&mentions)));
    }
    out
}

/// `depends` without the files imported whole whose symbols are depended
/// on or `mentions`ed: those name where to look inside the file.
fn named_by_symbols<'e>(depends: Vec<&'e EdgeView>, mentions: &[&EdgeView]) -> Vec<&'e EdgeView> {
    let named_inside: std::collections::HashSet<&str> =
        depends.iter().chain(mentions).filter_map(|d| d.target.split_once('#').map(|(file, _)| file)).collect();
    depends
        .into_iter()
        .filter(|e| e.external || e.target.contains('#') || !named_inside.contains(e.target.as_str()))
        .collect()
}

/// The targets a complete source's header depends on, each once: how each
/// is used (called, inherited, imported) the source shows, so one file's
/// targets are listed together whatever the use.
fn complete_depends(mut kept: Vec<&EdgeView>) -> Vec<&EdgeView> {
    kept.sort_by(|a, b| a.target.cmp(&b.target));
    kept.dedup_by(|a, b| a.target == b.target);
    kept
}

/// Sorted edges by use, each use named once before its targets
/// (`import src/util.py; import external os, sys; calls src/util.py#{quote,
/// unquote}`): the resolved targets of one kind, then its external ones.
fn by_use(edges: &[&EdgeView]) -> String {
    let mut uses: Vec<(RefKind, bool, Vec<&EdgeView>)> = Vec::new();
    for e in edges {
        match uses.iter_mut().find(|(kind, external, _)| *kind == e.kind && *external == e.external) {
            Some((_, _, of_use)) => of_use.push(e),
            None => uses.push((e.kind, e.external, vec![e])),
        }
    }
    uses.sort_by_key(|(kind, external, _)| (*kind, *external));
    let shown: Vec<String> = uses
        .iter()
        .map(|(kind, external, of_use)| {
            format!("{}{} {}", kind.as_str(), if *external { " external" } else { "" }, grouped(of_use))
        })
        .collect();
    shown.join("; ")
}

/// Sorted edges as `file#symbol` targets, consecutive ones of one file
/// grouped as `file#{a, b}`.
fn grouped(edges: &[&EdgeView]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for e in edges {
        let (file, symbol) = match e.target.split_once('#') {
            Some((file, symbol)) if !e.external => (file, Some(symbol)),
            _ => (e.target.as_str(), None),
        };
        match (groups.last_mut(), symbol) {
            (Some((f, symbols)), Some(symbol)) if *f == file && !symbols.is_empty() => symbols.push(symbol),
            _ => groups.push((file, symbol.into_iter().collect())),
        }
    }
    let shown: Vec<String> = groups
        .into_iter()
        .map(|(file, symbols)| match symbols.as_slice() {
            [] => file.to_string(),
            [one] => format!("{file}#{one}"),
            many => format!("{file}#{{{}}}", many.join(", ")),
        })
        .collect();
    shown.join(", ")
}

/// Whether a node's members belong in its parent's header view (depth 4):
/// classes, interfaces, traits, structs, namespaces and test classes.
pub fn is_container(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Class
            | NodeKind::Interface
            | NodeKind::Trait
            | NodeKind::Struct
            | NodeKind::Namespace
            | NodeKind::Test
    )
}

/// The node's source lines, starting at the beginning of its first line so
/// indentation is kept.
fn source_lines<'t>(input: &RenderInput<'t>) -> Vec<&'t str> {
    let text = input.file_text;
    let span = input.node.span;
    let start = text.get(..span.start_byte.min(text.len())).and_then(|before| before.rfind('\n')).map_or(0, |i| i + 1);
    let end = span.end_byte.min(text.len());
    text.get(start..end).unwrap_or("").lines().collect()
}

fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// Every depth's rendering with its token count, depth 0 first, with token
/// counts that never decrease: at depths 5-8 an excerpt's `... (N more
/// lines)` marker can cost more than the lines it leaves out, and depth 9
/// leaves out the header lines its source repeats, so a shallower depth can
/// cost more than a deeper one; the deeper text (cheaper, and with more
/// detail) is then used instead.
pub fn render_all(input: &RenderInput<'_>, tokenizer: &dyn TokenCounter) -> Vec<(u8, String, usize)> {
    let mut all: Vec<(u8, String, usize)> = (0..=MAX_DEPTH)
        .map(|d| {
            let text = render(input, d);
            let tokens = tokenizer.count(&text);
            (d, text, tokens)
        })
        .collect();
    for d in (0..MAX_DEPTH as usize).rev() {
        if all[d].2 >= all[d + 1].2 {
            let (_, text, tokens) = all[d + 1].clone();
            all[d].1 = text;
            all[d].2 = tokens;
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Point;
    use agents_core::tokens::Tokenizer;

    fn span_of(text: &str, needle: &str) -> Span {
        let start = text.find(needle).unwrap();
        let end = start + needle.len();
        let line = |b: usize| text[..b].matches('\n').count() as u32 + 1;
        let col = |b: usize| (b - text[..b].rfind('\n').map_or(0, |i| i + 1)) as u32;
        Span {
            start_byte: start,
            end_byte: end,
            start: Point { line: line(start), column: col(start) },
            end: Point { line: line(end), column: col(end) },
        }
    }

    const FILE: &str = "import os\n\nclass App(Base):\n    \"\"\"Runs the service.\"\"\"\n\n    def run(self, n: int) -> str:\n        \"\"\"Run n times.\"\"\"\n        return helper(n)\n\n    def stop(self):\n        os.exit(0)\n";

    fn input() -> RenderInput<'static> {
        let class_text = &FILE[FILE.find("class App").unwrap()..];
        let run_text = "def run(self, n: int) -> str:\n        \"\"\"Run n times.\"\"\"\n        return helper(n)";
        RenderInput {
            node: NodeView {
                kind: NodeKind::Class,
                name: "App",
                symbol_path: "App",
                path: "src/app.py",
                span: span_of(FILE, class_text.trim_end()),
                signature: Some("class App(Base)"),
                doc: Some("Runs the service."),
            },
            children: vec![
                NodeView {
                    kind: NodeKind::Method,
                    name: "run",
                    symbol_path: "App.run",
                    path: "src/app.py",
                    span: span_of(FILE, run_text),
                    signature: Some("def run(self, n: int) -> str"),
                    doc: Some("Run n times."),
                },
                NodeView {
                    kind: NodeKind::Method,
                    name: "stop",
                    symbol_path: "App.stop",
                    path: "src/app.py",
                    span: span_of(FILE, "def stop(self):\n        os.exit(0)"),
                    signature: Some("def stop(self)"),
                    doc: None,
                },
            ],
            edges: vec![
                EdgeView { kind: RefKind::Inherits, target: "src/base.py#Base".into(), external: false },
                EdgeView { kind: RefKind::Calls, target: "os.exit".into(), external: true },
            ],
            members: vec![],
            file_text: FILE,
        }
    }

    #[test]
    fn a_doc_opening_with_a_tag_has_no_summary() {
        let mut i = input();
        for (doc, summary) in [
            (":rtype: str", None),
            ("\n  :param n: how many\n  :returns: the text", None),
            ("@param n how many", None),
            (":class:`App` runs the service.", Some(":class:`App` runs the service.")),
            ("@ 2x speed", Some("@ 2x speed")),
            ("Runs the service.\n:rtype: str", Some("Runs the service.")),
        ] {
            i.node.doc = Some(doc);
            assert_eq!(i.node.summary(), summary, "{doc:?}");
        }
        i.node.doc = Some(":rtype: str");
        assert!(!render(&i, 3).contains("summary:"), "{}", render(&i, 3));
    }

    #[test]
    fn depths_add_detail_as_the_table_says() {
        let i = input();
        assert_eq!(render(&i, 0), "class App\n");
        assert!(render(&i, 1).contains("contains: method run, method stop"));
        assert!(!render(&i, 1).contains("depends on"));
        assert!(render(&i, 2).contains("depends on: inherits src/base.py#Base\n"), "{}", render(&i, 2));
        assert!(!render(&i, 2).contains("os.exit"), "unresolved calls are left out: {}", render(&i, 2));
        assert!(render(&i, 3).contains("summary: Runs the service.\n- run: Run n times."));
        let d4 = render(&i, 4);
        assert!(d4.contains("signature: class App(Base)") && d4.contains("  def run(self, n: int) -> str"));
        assert!(d4.contains("size: lines 3-11 (9 lines), 2 members"), "{d4}");
        assert!(render(&i, 5).contains("... ("));
        let d9 = render(&i, 9);
        assert!(d9.contains(FILE[FILE.find("class App").unwrap()..].trim_end()));
        assert!(!d9.contains("more lines"));
    }

    #[test]
    fn around_its_members_a_node_shows_the_rest_of_its_source() {
        let i = input();
        // `run` (lines 6-8) is shown by a fragment of its own.
        let run = ShownElsewhere { first_line: 6, last_line: 8, title: "method App.run".to_owned() };
        let around = render_around(&i, std::slice::from_ref(&run));
        assert_eq!(
            around,
            "class App\ndepends on: src/base.py#Base\n```\nclass App(Base):\n    \"\"\"Runs the service.\"\"\"\n\n    ... (method App.run, lines 6-8: in its own fragment)\n\n    def stop(self):\n        os.exit(0)\n```\n"
        );
        // Nothing shown elsewhere: the complete source, as at depth 9.
        assert_eq!(render_around(&i, &[]), render(&i, 9));
        // Nested runs: the outer one names them all.
        let class = ShownElsewhere { first_line: 3, last_line: 11, title: "class App".to_owned() };
        let all = render_around(&i, &[run, class]);
        assert!(all.contains("```\n... (class App, lines 3-11: in its own fragment)\n```\n"), "{all}");
    }

    #[test]
    fn around_its_members_a_source_file_leaves_its_tests_out() {
        const RS: &str = "pub fn add(a: i32) -> i32 {\n    a + 1\n}\n\n#[test]\nfn adds() {\n    assert_eq!(add(1), 2);\n}\n\n#[test]\nfn adds_zero() {\n    assert_eq!(add(0), 1);\n}\n\npub fn sub(a: i32) -> i32 {\n    a - 1\n}\n";
        let view = |kind, name: &'static str, path: &'static str, text: &str| NodeView {
            kind,
            name,
            symbol_path: name,
            path,
            span: span_of(RS, text),
            signature: None,
            doc: None,
        };
        let module = |path: &'static str| RenderInput {
            node: NodeView { symbol_path: "", ..view(NodeKind::Module, path, path, RS.trim_end()) },
            children: vec![
                view(NodeKind::Function, "add", path, "pub fn add(a: i32) -> i32 {\n    a + 1\n}"),
                view(NodeKind::Test, "adds", path, "fn adds() {\n    assert_eq!(add(1), 2);\n}"),
                view(NodeKind::Test, "adds_zero", path, "fn adds_zero() {\n    assert_eq!(add(0), 1);\n}"),
                view(NodeKind::Function, "sub", path, "pub fn sub(a: i32) -> i32 {\n    a - 1\n}"),
            ],
            members: Vec::new(),
            edges: Vec::new(),
            file_text: RS,
        };
        let add = ShownElsewhere { first_line: 1, last_line: 3, title: "function add".to_owned() };
        let around = render_around(&module("src/lib.rs"), std::slice::from_ref(&add));
        // The two tests, their attributes and the blank line between them
        // are one run; `sub`, shown nowhere else, stays.
        assert!(around.contains("\n\n... (2 tests, lines 5-13: left out)\n\npub fn sub"), "{around}");
        assert!(!around.contains("assert_eq!"), "{around}");
        // A test file's tests are its code; with nothing shown elsewhere the
        // source is complete.
        assert!(
            render_around(&module("tests/lib_test.rs"), std::slice::from_ref(&add)).contains("assert_eq!(add(0), 1)")
        );
        assert_eq!(render_around(&module("src/lib.rs"), &[]), render(&module("src/lib.rs"), 9));
    }

    #[test]
    fn the_complete_source_is_not_repeated_by_its_header() {
        let mut i = input();
        i.edges.extend([
            EdgeView { kind: RefKind::Calls, target: "src/app.py#App.stop".into(), external: false },
            EdgeView { kind: RefKind::Calls, target: "src/app.py#helper".into(), external: false },
            EdgeView { kind: RefKind::Import, target: "src/util.py".into(), external: false },
            EdgeView { kind: RefKind::Calls, target: "src/util.py#quote".into(), external: false },
            EdgeView { kind: RefKind::Calls, target: "src/util.py#unquote".into(), external: false },
            EdgeView { kind: RefKind::Mentions, target: "src/util.py#Token".into(), external: false },
            EdgeView { kind: RefKind::Mentions, target: "src/base.py#Base".into(), external: false },
            EdgeView { kind: RefKind::Import, target: "src/kinds.py".into(), external: false },
            EdgeView { kind: RefKind::Mentions, target: "src/kinds.py#Kind".into(), external: false },
            EdgeView { kind: RefKind::Mentions, target: "_t.CertType".into(), external: true },
            EdgeView { kind: RefKind::Inherits, target: "Generic".into(), external: true },
        ]);
        let d9 = render(&i, 9);
        // Unresolved names are in the source shown; an outline keeps them.
        assert!(!d9.contains("CertType") && !d9.contains("Generic"), "{d9}");
        let d4 = render(&i, 4);
        assert!(d4.contains("references: _t.CertType, src/kinds.py#Kind, src/util.py#Token\n"), "{d4}");
        assert!(d4.contains("; inherits external Generic;"), "{d4}");
        assert!(d9.starts_with("class App\ndepends on: "), "{d9}");
        for repeated in ["contains:", "signature:", "size:", "summary:", "- run:", "\n  def run(self, n: int) -> str\n"]
        {
            assert!(!d9.contains(repeated), "`{repeated}` is in the source shown: {d9}");
        }
        // Other files' targets only, one file's together whatever their use
        // (a file imported whole named by the symbols used from it); the
        // class's own methods are its children, and `helper`, in its own
        // file, a name its source shows.
        // Each target once: `Base`, depended on, is not referenced again, and
        // `src/kinds.py`, imported whole, is named by the `Kind` referenced.
        assert!(d9.contains("depends on: src/base.py#Base, src/util.py#{quote, unquote}\n"), "{d9}");
        assert!(d9.contains("references: src/kinds.py#Kind, src/util.py#Token\n"), "{d9}");
        let header = &d9[..d9.find("```").unwrap()];
        assert!(!header.contains("App.stop") && !header.contains("helper"), "{d9}");
        // An outline names every use, by use, its own file's too; a file
        // imported whole is named by the symbols used from it.
        assert!(d4.contains("calls src/app.py#helper, src/util.py#{quote, unquote}\n"), "{d4}");
        assert!(!d4.contains("import src/util.py"), "{d4}");
        // A summary the source does not hold (a doc comment above a Rust or Go
        // function lies outside its span) is kept.
        i.node.doc = Some("Serves the requests.");
        assert!(render(&i, 9).contains("summary: Serves the requests.\n```"), "{}", render(&i, 9));
        let all = render_all(&i, &Tokenizer::default());
        assert!(all.windows(2).all(|w| w[0].2 <= w[1].2), "{all:?}");
    }

    #[test]
    fn from_depth_two_the_imports_are_listed_once_in_depends_on() {
        let class = input();
        let child = |kind, name| NodeView { kind, name, symbol_path: name, ..class.node.clone() };
        let module = RenderInput {
            node: NodeView { kind: NodeKind::Module, name: "app.py", symbol_path: "", ..class.node.clone() },
            children: vec![
                child(NodeKind::Import, "os"),
                child(NodeKind::Import, ".util"),
                child(NodeKind::Function, "load"),
                child(NodeKind::Function, "load"),
                child(NodeKind::Class, "App"),
            ],
            members: vec![],
            edges: vec![
                EdgeView { kind: RefKind::Import, target: "os".into(), external: true },
                EdgeView { kind: RefKind::Import, target: "src/util.py".into(), external: false },
            ],
            file_text: FILE,
        };
        assert!(
            render(&module, 1).contains("contains: import os, import .util, function load, function load, class App\n")
        );
        let d2 = render(&module, 2);
        assert!(d2.contains("contains: function load, function load, class App\n"), "{d2}");
        assert!(d2.contains("depends on: import src/util.py; import external os\n"), "{d2}");
        // From depth 4 the outline names `App` by its signature; the
        // `load`s, whose signature does not name them, stay listed.
        let d4 = render(&module, 4);
        assert!(
            d4.contains("contains: function load, function load\n") && d4.contains("\n  class App(Base)\n"),
            "{d4}"
        );
        let imports_only = RenderInput { children: module.children[..2].to_vec(), ..module.clone() };
        assert!(!render(&imports_only, 2).contains("contains"), "{}", render(&imports_only, 2));
        // Without the import edges (a caller that supplies none) the
        // children still name the imports.
        let no_edges = RenderInput { edges: vec![], ..module.clone() };
        assert!(
            render(&no_edges, 2)
                .contains("contains: import os, import .util, function load, function load, class App\n")
        );
    }

    #[test]
    fn a_module_at_signatures_shows_its_classes_method_signatures() {
        let class = input();
        let module = RenderInput {
            node: NodeView {
                kind: NodeKind::Module,
                name: "app.py",
                symbol_path: "",
                path: "src/app.py",
                span: Span::of_text(FILE),
                signature: None,
                doc: None,
            },
            children: vec![class.node.clone()],
            members: vec![class.children.clone()],
            edges: vec![],
            file_text: FILE,
        };
        let d4 = render(&module, 4);
        assert!(
            d4.contains("  class App(Base)\n    def run(self, n: int) -> str\n    def stop(self)\n"),
            "the methods under their class: {d4}"
        );
        assert!(!render(&module, 3).contains("def run"), "signatures start at depth 4");
        let all = render_all(&module, &Tokenizer::default());
        assert!(all.windows(2).all(|w| w[0].2 <= w[1].2));
    }

    #[test]
    fn every_depth_extends_the_previous_and_tokens_never_decrease() {
        let i = input();
        let all = render_all(&i, &Tokenizer::default());
        for pair in all.windows(2) {
            let ((d0, _, t0), (d1, _, t1)) = (&pair[0], &pair[1]);
            assert!(t0 <= t1, "tokens({d0})={t0} > tokens({d1})={t1}");
        }
        for d in 0..3u8 {
            assert!(render(&i, d + 1).starts_with(render(&i, d).trim_end_matches('\n')));
        }
        // At 4 the outline's signatures name the children `contains:` named.
        let (d3, d4) = (render(&i, 3), render(&i, 4));
        for line in d3.lines() {
            match line.strip_prefix("contains: ") {
                Some(names) => {
                    for name in names.split(", ").map(|n| n.rsplit(' ').next().unwrap()) {
                        assert!(d4.lines().any(|l| l.starts_with("  ") && l.contains(name)), "{name}: {d4}");
                    }
                }
                None => assert!(d4.contains(line), "{line}: {d4}"),
            }
        }
        assert!(!d4.contains("contains:"), "{d4}");
    }

    #[test]
    fn a_costly_excerpt_marker_never_makes_a_depth_cheaper_than_the_one_below() {
        // Two short lines: the marker at 5-8 costs more than the omitted line.
        let text = "x = 1\ny = 2\n";
        let i = RenderInput {
            node: NodeView {
                kind: NodeKind::Module,
                name: "m.py",
                symbol_path: "",
                path: "m.py",
                span: Span::of_text(text),
                signature: None,
                doc: None,
            },
            children: vec![],
            edges: vec![],
            members: vec![],
            file_text: text,
        };
        let all = render_all(&i, &Tokenizer::default());
        for pair in all.windows(2) {
            assert!(pair[0].2 <= pair[1].2, "{:?} > {:?}", pair[0], pair[1]);
        }
        assert_eq!(all[5].1, all[9].1, "the whole text is cheaper than an excerpt of it");
    }

    #[test]
    fn a_file_without_structure_renders_whole_at_nine() {
        let text = "line one\nline two\nline three\nline four\n";
        let i = RenderInput {
            node: NodeView {
                kind: NodeKind::File,
                name: "notes.txt",
                symbol_path: "",
                path: "docs/notes.txt",
                span: Span::of_text(text),
                signature: None,
                doc: None,
            },
            children: vec![],
            edges: vec![],
            members: vec![],
            file_text: text,
        };
        assert_eq!(render(&i, 0), "file docs/notes.txt\n");
        assert!(render(&i, 5).contains("line one\n... (3 more lines)"));
        assert!(render(&i, 4).contains("size: lines 1-4 (4 lines), 0 members"), "a final newline is not a line");
        assert!(render(&i, 9).contains("line four\n```"));
    }
}
