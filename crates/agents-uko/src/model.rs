//! What an analyzer extracts from one file: symbol nodes and the raw
//! references between them, before any cross-file resolution.
//!
//! Analyzers work on `(path, text)` values and know nothing of the store.
//! Node 0 of every [`FileAnalysis`] is the file itself; every other node has
//! a parent (its container), so `contains` edges are implicit in `parent`.
//! References name their targets as written (`os.path`, `./util`, `Base`,
//! `helper`); [`crate::resolve`] binds them to files and symbols later.

use serde::{Deserialize, Serialize};

/// The kind of a UKO node, each mapped to one ontology class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// A source file as a module (Python module, JS/TS module, Rust file, Go/Java/C file).
    Module,
    /// A named scope inside a file: Rust inline `mod`, C++ `namespace`, TS `namespace`.
    Namespace,
    Class,
    /// Java/TS/Go interfaces.
    Interface,
    /// Rust traits.
    Trait,
    /// Rust/Go/C/C++ structs and unions.
    Struct,
    Enum,
    /// `type X = ...`, `typedef`, Go `type X Y`.
    TypeAlias,
    /// A free function.
    Function,
    /// A function defined in a class, impl, interface or trait.
    Method,
    /// A field, property or enum member.
    Field,
    /// A module-level variable or constant.
    Variable,
    /// A macro (`macro_rules!`, `#define`).
    Macro,
    /// A test function or test class (`test_*`, `#[test]`, `TestXxx`, `@Test`, `describe/it`).
    Test,
    /// An import, use, include or require declaration.
    Import,
    /// A Markdown (or other prose) document.
    Document,
    /// A heading-delimited section of a document.
    Section,
    /// A file no analyzer understands: indexed whole, at file level.
    File,
}

impl NodeKind {
    pub const ALL: [NodeKind; 18] = [
        NodeKind::Module,
        NodeKind::Namespace,
        NodeKind::Class,
        NodeKind::Interface,
        NodeKind::Trait,
        NodeKind::Struct,
        NodeKind::Enum,
        NodeKind::TypeAlias,
        NodeKind::Function,
        NodeKind::Method,
        NodeKind::Field,
        NodeKind::Variable,
        NodeKind::Macro,
        NodeKind::Test,
        NodeKind::Import,
        NodeKind::Document,
        NodeKind::Section,
        NodeKind::File,
    ];

    /// The ontology class of this kind, as a CURIE of `docs/ontology/uko.ttl`.
    pub fn curie(self) -> &'static str {
        match self {
            NodeKind::Module => "uko-code:Module",
            NodeKind::Namespace => "uko-code:Namespace",
            NodeKind::Class => "uko-oo:Class",
            NodeKind::Interface => "uko-oo:Interface",
            NodeKind::Trait => "uko-rs:Trait",
            NodeKind::Struct => "uko-code:Struct",
            NodeKind::Enum => "uko-code:Enum",
            NodeKind::TypeAlias => "uko-code:TypeAlias",
            NodeKind::Function => "uko-code:Function",
            NodeKind::Method => "uko-oo:Method",
            NodeKind::Field => "uko-oo:Attribute",
            NodeKind::Variable => "uko-code:Variable",
            NodeKind::Macro => "uko-code:Macro",
            NodeKind::Test => "uko-code:Test",
            NodeKind::Import => "uko-code:Import",
            NodeKind::Document => "uko-doc:Document",
            NodeKind::Section => "uko-doc:Section",
            NodeKind::File => "uko-code:File",
        }
    }

    /// Stable lowercase name (the serde form).
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Module => "module",
            NodeKind::Namespace => "namespace",
            NodeKind::Class => "class",
            NodeKind::Interface => "interface",
            NodeKind::Trait => "trait",
            NodeKind::Struct => "struct",
            NodeKind::Enum => "enum",
            NodeKind::TypeAlias => "type_alias",
            NodeKind::Function => "function",
            NodeKind::Method => "method",
            NodeKind::Field => "field",
            NodeKind::Variable => "variable",
            NodeKind::Macro => "macro",
            NodeKind::Test => "test",
            NodeKind::Import => "import",
            NodeKind::Document => "document",
            NodeKind::Section => "section",
            NodeKind::File => "file",
        }
    }

    pub fn parse(s: &str) -> Option<NodeKind> {
        NodeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Kinds whose children are members (so a call `self.x()` resolves in them).
    pub fn is_type_scope(self) -> bool {
        matches!(self, NodeKind::Class | NodeKind::Interface | NodeKind::Trait | NodeKind::Struct | NodeKind::Enum)
    }

    /// Kinds that can be called.
    pub fn is_callable(self) -> bool {
        matches!(self, NodeKind::Function | NodeKind::Method | NodeKind::Test | NodeKind::Macro)
    }
}

/// A position in a file: line 1-based, column 0-based in bytes (as tree-sitter counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Point {
    pub line: u32,
    pub column: u32,
}

/// A region of a file. `start_byte..end_byte` slices the exact source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    pub start_byte: usize,
    pub end_byte: usize,
    pub start: Point,
    pub end: Point,
}

impl Span {
    /// The span of a whole text.
    pub fn of_text(text: &str) -> Span {
        let lines = text.split('\n').count() as u32;
        let last = text.rsplit('\n').next().unwrap_or("");
        Span {
            start_byte: 0,
            end_byte: text.len(),
            start: Point { line: 1, column: 0 },
            end: Point { line: lines, column: last.len() as u32 },
        }
    }

    /// The span of a tree-sitter node.
    pub fn of_node(node: &tree_sitter::Node<'_>) -> Span {
        let (s, e) = (node.start_position(), node.end_position());
        Span {
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            start: Point { line: s.row as u32 + 1, column: s.column as u32 },
            end: Point { line: e.row as u32 + 1, column: e.column as u32 },
        }
    }

    /// From this span's start to the end of `last`.
    pub fn through(self, last: Span) -> Span {
        Span { end_byte: last.end_byte, end: last.end, ..self }
    }

    /// `line:col-line:col`, the `sourceRange` of the ontology (lines 1-based,
    /// columns 0-based bytes, end exclusive).
    pub fn source_range(&self) -> String {
        format!("{}:{}-{}:{}", self.start.line, self.start.column, self.end.line, self.end.column)
    }

    /// The text this span covers (empty if out of bounds).
    pub fn slice<'t>(&self, text: &'t str) -> &'t str {
        text.get(self.start_byte..self.end_byte).unwrap_or("")
    }

    /// Number of lines covered (an end at column 0 of a line, as after a
    /// final newline, does not count that line).
    pub fn line_count(&self) -> u32 {
        let last =
            if self.end.column == 0 && self.end.line > self.start.line { self.end.line - 1 } else { self.end.line };
        last.saturating_sub(self.start.line) + 1
    }
}

/// One extracted symbol.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolNode {
    pub kind: NodeKind,
    /// The simple name (`run`); the file name for node 0.
    pub name: String,
    /// Dotted path of names from the file down to this node (`App.run`);
    /// empty for node 0. Unique within a file: analyzers append `~2`, `~3`
    /// to repeated paths (overloads, redefinitions).
    pub symbol_path: String,
    /// Index of the containing node in [`FileAnalysis::nodes`]; `None` only for node 0.
    pub parent: Option<usize>,
    /// The whole declaration, including its doc comment when the language
    /// puts it inside the declaration (Python docstrings).
    pub span: Span,
    /// The declaration header with types, without the body
    /// (`def run(self, n: int) -> str`, `pub fn add(a: i32) -> i32`).
    pub signature: Option<String>,
    /// The doc comment or docstring, with comment markers removed.
    pub doc: Option<String>,
}

/// How a reference depends on its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefKind {
    /// An import/use/include/require of a module or file (`dependsOn`).
    Import,
    /// Extends, implements, embeds (`dependsOn`).
    Inherits,
    /// A call of a function, method or macro (`dependsOn`).
    Calls,
    /// A mention of a type or name (`references`).
    Mentions,
}

impl RefKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RefKind::Import => "import",
            RefKind::Inherits => "inherits",
            RefKind::Calls => "calls",
            RefKind::Mentions => "mentions",
        }
    }

    pub fn parse(s: &str) -> Option<RefKind> {
        [RefKind::Import, RefKind::Inherits, RefKind::Calls, RefKind::Mentions].into_iter().find(|k| k.as_str() == s)
    }

    /// The ontology property this reference becomes.
    pub fn property(self) -> &'static str {
        match self {
            RefKind::Mentions => "uko:references",
            _ => "uko:dependsOn",
        }
    }
}

/// A reference from a node to something named, unresolved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Index of the referring node (the import node for imports, the
    /// enclosing function/class for calls and mentions).
    pub from: usize,
    pub kind: RefKind,
    /// The target as written: a module specifier for imports (`os.path`,
    /// `..models`, `./util.js`, `crate::store::Db`, `"net/http"`, `stdio.h`),
    /// a (possibly qualified) name otherwise (`Base`, `self.save`, `fmt.Println`).
    pub target: String,
    /// For imports: the names brought into scope (`from x import a, b` ->
    /// `["a", "b"]`; `use a::{b, c}` -> `["b", "c"]`); empty otherwise.
    pub names: Vec<String>,
    /// For C/C++ includes: `true` for `<system.h>`; for others `false`.
    pub system: bool,
    pub span: Span,
}

/// Everything extracted from one file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileAnalysis {
    /// Node 0 is the file (Module, Document or File).
    pub nodes: Vec<SymbolNode>,
    pub references: Vec<Reference>,
    /// Problems met while parsing (syntax errors: the tree is partial),
    /// each a short message with a line number.
    pub warnings: Vec<String>,
}

impl FileAnalysis {
    /// The file node alone, for files without structure.
    pub fn file_only(kind: NodeKind, path: &str, text: &str) -> FileAnalysis {
        FileAnalysis {
            nodes: vec![SymbolNode {
                kind,
                name: file_name(path).to_string(),
                symbol_path: String::new(),
                parent: None,
                span: Span::of_text(text),
                signature: None,
                doc: None,
            }],
            references: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Indices of the direct children of `index`, in source order.
    pub fn children(&self, index: usize) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.nodes.len()).filter(|&i| self.nodes[i].parent == Some(index)).collect();
        out.sort_by_key(|&i| (self.nodes[i].span.start_byte, i));
        out
    }
}

impl FileAnalysis {
    /// A compact, deterministic text dump for snapshot tests and debugging:
    /// one line per node (indented by depth) and one per reference.
    pub fn outline(&self) -> String {
        let mut out = String::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let mut depth = 0;
            let mut p = node.parent;
            while let Some(j) = p {
                depth += 1;
                p = self.nodes[j].parent;
            }
            out.push_str(&format!(
                "{}{} {} [{}]",
                "  ".repeat(depth),
                node.kind.as_str(),
                if i == 0 { node.name.as_str() } else { node.symbol_path.as_str() },
                node.span.source_range()
            ));
            if let Some(sig) = &node.signature {
                out.push_str(&format!(" sig={sig:?}"));
            }
            if let Some(doc) = &node.doc {
                let first = doc.lines().next().unwrap_or("");
                out.push_str(&format!(" doc={first:?}"));
            }
            out.push('\n');
        }
        for r in &self.references {
            let from = &self.nodes[r.from];
            let from = if r.from == 0 { "<file>" } else { from.symbol_path.as_str() };
            out.push_str(&format!("{} {} -> {}", r.kind.as_str(), from, r.target));
            if !r.names.is_empty() {
                out.push_str(&format!(" {:?}", r.names));
            }
            if r.system {
                out.push_str(" (system)");
            }
            out.push_str(&format!(" @{}\n", r.span.start.line));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

/// The last segment of a `/`-separated path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
