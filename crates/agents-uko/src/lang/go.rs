//! Go: package, imports, types, functions, methods, tests, calls, mentions.
//!
//! Layout decisions:
//! - Node 0 gets the package doc (the comment block directly above the
//!   package clause) and the signature `package name`.
//! - One `Import` node per import spec, named by the import path; its
//!   reference's target is the path without quotes and its names are the
//!   alias or the last path segment (a `/vN` or `.vN` version suffix is
//!   skipped: `gopkg.in/yaml.v3` -> `yaml`); a dot import has names `["*"]`,
//!   a blank import `_` none.
//! - `type X struct` is a `Struct` with a `Field` per field name; embedded
//!   fields are `Inherits` references, and the struct's signature lists
//!   them (`type Engine struct { RouterGroup }`) for resolution to bind
//!   their methods as the struct's own. `type X interface` is an `Interface`
//!   with its method specs as `Method`s; embedded interfaces are `Inherits`.
//!   Other `type X Y` and `type X = Y` are `TypeAlias`es.
//! - Methods go under the receiver type's node when it is declared in the
//!   same file (symbol path `Type.Method`); otherwise under node 0 with the
//!   simple name `Method` and the symbol path `Type.Method`.
//! - `TestXxx`, `BenchmarkXxx`, `FuzzXxx` (with a `*testing.T/B/F` parameter
//!   or in a `_test.go` file) and `ExampleXxx` in `_test.go` files are `Test`s.
//! - Top-level `const`/`var` names are `Variable`s; a name in a group
//!   without its own comment takes the group's doc. Single declarations
//!   span from the keyword, grouped names span their spec.
//! - Calls: `f`, `fmt.Println`, `s.save`, `a.b().c`; builtins (`len`,
//!   `append`, ...) and conversions to predeclared types are not recorded.
//! - Import resolution: a Go import names a package (a directory), so it
//!   resolves to the package's first non-test `.go` file by sorted path.
//!   Without `go.mod` contents the module path is unknown, so the import
//!   path's trailing segments (at least two, or the whole path) are matched
//!   against directories under each ancestor of the importing file (and
//!   `vendor/<path>` there); the longest match wins, and several different
//!   directories at that length leave it unresolved. Standard-library paths
//!   (first segment without a dot and a known std root) stay unresolved.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Bound;
use std::sync::LazyLock;

use tree_sitter::{Language, Node};

use crate::lang::rust::source_ordered;
use crate::lang::{
    Analyzer, FileBuilder, child_of_kind, clean_doc, collapse, join_path, node_text, parse_or_warn, signature_until,
    walk_preorder, written_against,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use crate::resolve::{ResolveContext, dir_of, join_normalized};

static LANGUAGE: LazyLock<Language> = LazyLock::new(|| tree_sitter_go::LANGUAGE.into());

const MAX_DEPTH: usize = 48;

/// Predeclared types: never mentions, and calls of them are conversions.
const PREDECLARED_TYPES: &[&str] = &[
    "any",
    "bool",
    "byte",
    "comparable",
    "complex64",
    "complex128",
    "error",
    "float32",
    "float64",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "rune",
    "string",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "uintptr",
];

const BUILTINS: &[&str] = &[
    "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len", "make", "max", "min", "new",
    "panic", "print", "println", "real", "recover",
];

/// First segments of standard-library import paths.
const STD_ROOTS: &[&str] = &[
    "archive",
    "bufio",
    "builtin",
    "bytes",
    "cmp",
    "compress",
    "container",
    "context",
    "crypto",
    "database",
    "debug",
    "embed",
    "encoding",
    "errors",
    "expvar",
    "flag",
    "fmt",
    "go",
    "hash",
    "html",
    "image",
    "index",
    "internal",
    "io",
    "iter",
    "log",
    "maps",
    "math",
    "mime",
    "net",
    "os",
    "path",
    "plugin",
    "reflect",
    "regexp",
    "runtime",
    "slices",
    "sort",
    "strconv",
    "strings",
    "structs",
    "sync",
    "syscall",
    "testing",
    "text",
    "time",
    "unicode",
    "unique",
    "unsafe",
    "weak",
    "C",
];

pub struct GoAnalyzer;

impl Analyzer for GoAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["go"]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let Some(tree) = parse_or_warn(&mut builder, &LANGUAGE, "Go", text) else {
            return builder.finish();
        };
        let root = tree.root_node();
        let mut walker = Walker {
            text,
            test_file: path.ends_with("_test.go"),
            b: builder,
            types: HashMap::new(),
            renames: Vec::new(),
        };
        let mut package = None;
        let mut cursor = root.walk();
        let children: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
        for (i, child) in children.iter().enumerate().filter(|(_, c)| c.kind() != "method_declaration") {
            let at = At { list: &children, i };
            match child.kind() {
                "package_clause" => {
                    package = child.named_child(0).map(|n| format!("package {}", node_text(&n, text)));
                    walker.b.set_doc(0, go_doc(at, text));
                }
                "import_declaration" => walker.imports(at),
                "function_declaration" => walker.function(at),
                "type_declaration" => walker.types(at),
                "const_declaration" | "var_declaration" => walker.variables(at),
                _ => {}
            }
        }
        for (i, _) in children.iter().enumerate().filter(|(_, c)| c.kind() == "method_declaration") {
            walker.method(At { list: &children, i });
        }
        let Walker { b, renames, .. } = walker;
        let mut analysis = source_ordered(b.finish(), &renames);
        analysis.nodes[0].signature = package;
        analysis
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        resolve_go_import(ctx, from_path, &reference.target)
    }
}

struct Walker<'t> {
    text: &'t str,
    test_file: bool,
    b: FileBuilder,
    /// Top-level type nodes by name, for methods.
    types: HashMap<String, usize>,
    renames: Vec<(usize, String)>,
}

impl<'t> Walker<'t> {
    fn t(&self, node: &Node<'_>) -> &'t str {
        node_text(node, self.text)
    }

    fn imports(&mut self, at: At<'_, '_>) {
        let decl = at.node();
        let list = child_of_kind(decl, "import_spec_list");
        let single = list.is_none();
        let siblings = named_children(list.unwrap_or(decl));
        for (i, &spec) in siblings.iter().enumerate() {
            if spec.kind() != "import_spec" {
                continue;
            }
            let Some(path_node) = spec.child_by_field_name("path") else { continue };
            let path = self.t(&path_node).trim_matches(['"', '`']);
            if path.is_empty() {
                continue;
            }
            let alias = spec.child_by_field_name("name").map(|n| self.t(&n));
            let names = match alias {
                Some("_") => Vec::new(),
                Some(".") => vec!["*".to_string()],
                Some(alias) => vec![alias.to_string()],
                None => vec![package_name(path).to_string()],
            };
            let span_node = if single { decl } else { spec };
            let sig = format!("import {}", signature_until(&spec, None, self.text));
            let doc = go_doc(if single { at } else { At { list: &siblings, i } }, self.text);
            let idx = self.b.add(0, NodeKind::Import, path, Span::of_node(&span_node), Some(sig), doc);
            self.b.import(idx, path, names, false, Span::of_node(&spec));
        }
    }

    fn is_test(&self, node: Node<'_>, name: &str) -> bool {
        let params = node.child_by_field_name("parameters").map_or("", |p| self.t(&p));
        let takes_testing = ["*testing.T", "*testing.B", "*testing.F"].iter().any(|t| params.contains(t));
        let after = |prefix: &str| starts_word(name, prefix);
        ((after("Test") || after("Benchmark") || after("Fuzz")) && (takes_testing || self.test_file))
            || (after("Example") && self.test_file)
    }

    fn function(&mut self, at: At<'_, '_>) {
        let node = at.node();
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let kind = if self.is_test(node, name) { NodeKind::Test } else { NodeKind::Function };
        let body = node.child_by_field_name("body");
        let sig = func_signature(node, body, self.text);
        let doc = go_doc(at, self.text);
        let idx = self.b.add(0, kind, name, Span::of_node(&node), Some(sig), doc);
        let mut generics = Vec::new();
        type_param_names(node, self.text, &mut generics);
        self.signature_mentions(idx, node, &generics);
        if let Some(body) = body {
            let typed = typed_names(node, self.text, &generics);
            self.body(body, idx, &typed);
        }
    }

    fn method(&mut self, at: At<'_, '_>) {
        let node = at.node();
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let mut generics = Vec::new();
        let receiver = node
            .child_by_field_name("receiver")
            .and_then(|r| receiver_type(r, self.text, &mut generics))
            .unwrap_or_default();
        let body = node.child_by_field_name("body");
        let sig = func_signature(node, body, self.text);
        let doc = go_doc(at, self.text);
        let span = Span::of_node(&node);
        // Suite methods (`func (s *StoreSuite) TestSave()`, testify) in test files.
        let suite_test = self.test_file && starts_word(name, "Test");
        let kind = if suite_test { NodeKind::Test } else { NodeKind::Method };
        let idx = match self.types.get(&receiver) {
            Some(&parent) => self.b.add(parent, kind, name, span, Some(sig), doc),
            None if receiver.is_empty() => self.b.add(0, kind, name, span, Some(sig), doc),
            None => {
                let idx = self.b.add(0, kind, &format!("{receiver}.{name}"), span, Some(sig), doc);
                self.renames.push((idx, name.to_string()));
                idx
            }
        };
        self.signature_mentions(idx, node, &generics);
        if let Some(body) = body {
            let typed = typed_names(node, self.text, &generics);
            self.body(body, idx, &typed);
        }
    }

    fn signature_mentions(&mut self, idx: usize, node: Node<'_>, generics: &[String]) {
        for field in ["type_parameters", "parameters", "result"] {
            if let Some(part) = node.child_by_field_name(field) {
                self.mention_types(idx, part, generics);
            }
        }
    }

    fn types(&mut self, at: At<'_, '_>) {
        let decl = at.node();
        let siblings = named_children(decl);
        let is_spec = |n: &Node<'_>| matches!(n.kind(), "type_spec" | "type_alias");
        let single = siblings.iter().filter(|n| is_spec(n)).count() == 1;
        let group_doc = go_doc(at, self.text);
        for (i, &spec) in siblings.iter().enumerate() {
            if !is_spec(&spec) {
                continue;
            }
            let Some(name_node) = spec.child_by_field_name("name") else { continue };
            let name = self.t(&name_node);
            let span_node = if single { decl } else { spec };
            let own = || go_doc(At { list: &siblings, i }, self.text);
            let doc = if single { group_doc.clone() } else { own().or_else(|| group_doc.clone()) };
            let ty = spec.child_by_field_name("type");
            let mut generics = Vec::new();
            type_param_names(spec, self.text, &mut generics);
            let span = Span::of_node(&span_node);
            match ty.map(|t| t.kind()) {
                Some("struct_type") if spec.kind() == "type_spec" => {
                    let ty = ty.unwrap_or(spec);
                    let list = child_of_kind(ty, "field_declaration_list");
                    // The embedded types, whose methods the struct's own are
                    // (`type Engine struct { RouterGroup }`), as a class's
                    // bases are in its declaration line.
                    let embedded: Vec<String> = list
                        .map(named_children)
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(embedded_field)
                        .map(|t| collapse(self.t(&t)))
                        .collect();
                    let mut sig = format!("type {}", signature_until(&spec, list, self.text));
                    if !embedded.is_empty() {
                        sig = format!("{sig} {{ {} }}", embedded.join("; "));
                    }
                    let idx = self.b.add(0, NodeKind::Struct, name, span, Some(sig), doc);
                    self.types.insert(name.to_string(), idx);
                    if let Some(list) = list {
                        self.fields(list, idx, &generics);
                    }
                }
                Some("interface_type") if spec.kind() == "type_spec" => {
                    let ty = ty.unwrap_or(spec);
                    let brace = child_of_kind_any(ty, "{");
                    let header = signature_until(&spec, brace, self.text);
                    let sig = format!("type {header}");
                    let idx = self.b.add(0, NodeKind::Interface, name, span, Some(sig), doc);
                    self.types.insert(name.to_string(), idx);
                    self.interface_members(ty, idx, &generics);
                }
                _ => {
                    let sig = format!("type {}", signature_until(&spec, None, self.text));
                    let idx = self.b.add(0, NodeKind::TypeAlias, name, span, Some(sig), doc);
                    self.types.insert(name.to_string(), idx);
                    if let Some(ty) = ty {
                        self.mention_types(idx, ty, &generics);
                    }
                    if let Some(params) = spec.child_by_field_name("type_parameters") {
                        self.mention_types(idx, params, &generics);
                    }
                }
            }
        }
    }

    fn fields(&mut self, list: Node<'_>, parent: usize, generics: &[String]) {
        let siblings = named_children(list);
        for (i, &field) in siblings.iter().enumerate() {
            if field.kind() != "field_declaration" {
                continue;
            }
            if let Some(ty) = embedded_field(field) {
                let target = type_name(ty, self.text);
                if !target.is_empty() {
                    self.b.reference(parent, RefKind::Inherits, target, Span::of_node(&field));
                }
                continue;
            }
            let Some(ty) = field.child_by_field_name("type") else { continue };
            let mut cursor = field.walk();
            let names: Vec<Node<'_>> = field.children_by_field_name("name", &mut cursor).collect();
            let ty_text = collapse(self.t(&ty));
            let at = At { list: &siblings, i };
            let doc = go_doc(at, self.text).or_else(|| trailing_comment(at, self.text));
            for name in names {
                let name = self.t(&name);
                let sig = format!("{name} {ty_text}");
                let idx = self.b.add(parent, NodeKind::Field, name, Span::of_node(&field), Some(sig), doc.clone());
                self.mention_types(idx, ty, generics);
            }
        }
    }

    fn interface_members(&mut self, ty: Node<'_>, parent: usize, generics: &[String]) {
        let siblings = named_children(ty);
        for (i, &member) in siblings.iter().enumerate() {
            match member.kind() {
                "method_elem" => {
                    let Some(name) = member.child_by_field_name("name") else { continue };
                    let name = self.t(&name);
                    let sig = signature_until(&member, None, self.text);
                    let at = At { list: &siblings, i };
                    let doc = go_doc(at, self.text).or_else(|| trailing_comment(at, self.text));
                    let idx = self.b.add(parent, NodeKind::Method, name, Span::of_node(&member), Some(sig), doc);
                    self.signature_mentions(idx, member, generics);
                }
                "type_elem" => {
                    // An embedded interface; unions and `~T` are constraints.
                    if member.named_child_count() == 1
                        && let Some(inner) = member.named_child(0)
                        && matches!(inner.kind(), "type_identifier" | "qualified_type" | "generic_type")
                    {
                        let target = type_name(inner, self.text);
                        if !target.is_empty() && !PREDECLARED_TYPES.contains(&target.as_str()) {
                            self.b.reference(parent, RefKind::Inherits, target, Span::of_node(&member));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn variables(&mut self, at: At<'_, '_>) {
        let decl = at.node();
        let spec_kind = if decl.kind() == "const_declaration" { "const_spec" } else { "var_spec" };
        let keyword = if decl.kind() == "const_declaration" { "const" } else { "var" };
        let siblings = named_children(child_of_kind(decl, "var_spec_list").unwrap_or(decl));
        let single = siblings.iter().filter(|n| n.kind() == spec_kind).count() == 1;
        let group_doc = go_doc(at, self.text);
        for (i, &spec) in siblings.iter().enumerate() {
            if spec.kind() != spec_kind {
                continue;
            }
            let span_node = if single { decl } else { spec };
            let own = || go_doc(At { list: &siblings, i }, self.text);
            let doc = if single { group_doc.clone() } else { own().or_else(|| group_doc.clone()) };
            let ty = spec.child_by_field_name("type");
            let mut cursor = spec.walk();
            let names: Vec<Node<'_>> = spec.children_by_field_name("name", &mut cursor).collect();
            let mut first = None;
            for name in names {
                let name = self.t(&name);
                if name == "_" {
                    continue;
                }
                let sig = match ty {
                    Some(ty) => format!("{keyword} {name} {}", collapse(self.t(&ty))),
                    None => format!("{keyword} {name}"),
                };
                let idx = self.b.add(0, NodeKind::Variable, name, Span::of_node(&span_node), Some(sig), doc.clone());
                if let Some(ty) = ty {
                    self.mention_types(idx, ty, &[]);
                }
                first.get_or_insert(idx);
            }
            if let (Some(first), Some(value)) = (first, spec.child_by_field_name("value")) {
                // `var f = func(p Params) { p.M() }`: its literals' parameters.
                let typed = typed_names(value, self.text, &[]);
                self.body(value, first, &typed);
            }
        }
    }

    /// Calls in a body or initializer; iterative. A call of a method of the
    /// receiver or of a parameter whose declared type is a named type
    /// (`c.Next()` in `func (c *Context)`, `p.Color()` in `func f(p *Params)`)
    /// is written against that type (`Context.Next`, `Params.Color`), which
    /// resolution binds; any other qualifier stays as written.
    fn body(&mut self, node: Node<'_>, from: usize, typed: &HashMap<String, String>) {
        let text = self.text;
        walk_preorder(node, |n| {
            if n.kind() == "call_expression"
                && let Some(function) = n.child_by_field_name("function")
            {
                let written = callee(function, text, 0);
                let target = written_against(&written, |name| typed.get(name)).unwrap_or(written);
                let skip = target == "_"
                    || BUILTINS.contains(&target.as_str())
                    || PREDECLARED_TYPES.contains(&target.as_str());
                if !skip {
                    self.b.reference(from, RefKind::Calls, target, Span::of_node(&n));
                }
            }
            true
        });
    }

    fn mention_types(&mut self, from: usize, node: Node<'_>, generics: &[String]) {
        let text = self.text;
        walk_preorder(node, |n| match n.kind() {
            "type_identifier" | "qualified_type" => {
                let target: String = node_text(&n, text).split_whitespace().collect();
                if !PREDECLARED_TYPES.contains(&target.as_str()) && !generics.contains(&target) {
                    self.b.reference_once(from, RefKind::Mentions, target, Span::of_node(&n));
                }
                false
            }
            "identifier" | "field_identifier" | "comment" => false,
            _ => true,
        });
    }
}

/// `TestXxx`-style names: `prefix` alone or followed by a non-lowercase char.
fn starts_word(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|rest| rest.chars().next().is_none_or(|c| !c.is_lowercase()))
}

/// A func header; in a damaged declaration only its first line.
fn func_signature(node: Node<'_>, body: Option<Node<'_>>, text: &str) -> String {
    let sig = signature_until(&node, body, text);
    if !node.has_error() {
        return sig;
    }
    let first_line = node_text(&node, text).lines().next().unwrap_or("");
    collapse(first_line).trim_end_matches(['{', ' ']).to_string()
}

/// A node among its named siblings (which include its comments), so
/// doc lookups need no `prev_sibling` walks (linear in tree-sitter).
#[derive(Clone, Copy)]
struct At<'s, 'a> {
    list: &'s [Node<'a>],
    i: usize,
}

impl<'a> At<'_, 'a> {
    fn node(&self) -> Node<'a> {
        self.list[self.i]
    }
}

fn named_children<'a>(node: Node<'a>) -> Vec<Node<'a>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

fn child_of_kind_any<'a>(node: Node<'a>, kind: &str) -> Option<Node<'a>> {
    let mut cursor = node.walk();
    node.children(&mut cursor).find(|c| c.kind() == kind)
}

/// The comment block directly above a declaration (adjacent comments, no
/// blank line in between, none trailing an earlier line), without `//go:`,
/// `//line` and `// +build` directives. Line comments are cleaned together
/// so blank `//` lines keep paragraphs.
fn go_doc(at: At<'_, '_>, text: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    let mut next_row = at.node().start_position().row;
    for k in (0..at.i).rev() {
        let sibling = at.list[k];
        if sibling.kind() != "comment" || sibling.end_position().row + 1 < next_row {
            break;
        }
        // A comment trailing the previous declaration's line is not ours.
        if k > 0
            && at.list[k - 1].kind() != "comment"
            && at.list[k - 1].end_position().row == sibling.start_position().row
        {
            break;
        }
        parts.push(node_text(&sibling, text));
        next_row = sibling.start_position().row;
    }
    parts.reverse();
    let mut cleaned: Vec<String> = Vec::new();
    let mut lines = String::new();
    for part in parts {
        if part.starts_with("//") {
            let body = part.trim_start_matches('/').trim_start();
            if !(part.starts_with("//go:") || body.starts_with("+build") || part.starts_with("//line ")) {
                lines.push_str(part);
                lines.push('\n');
            }
            continue;
        }
        if !lines.is_empty() {
            cleaned.extend(clean_doc(&lines));
            lines.clear();
        }
        cleaned.extend(clean_doc(part));
    }
    if !lines.is_empty() {
        cleaned.extend(clean_doc(&lines));
    }
    if cleaned.is_empty() { None } else { Some(cleaned.join("\n")) }
}

/// A comment on the same line after a field or method spec.
fn trailing_comment(at: At<'_, '_>, text: &str) -> Option<String> {
    let next = at.list.get(at.i + 1)?;
    if next.kind() != "comment" || next.start_position().row != at.node().end_position().row {
        return None;
    }
    clean_doc(node_text(next, text))
}

/// Type parameter names of a function or type spec.
fn type_param_names(node: Node<'_>, text: &str, out: &mut Vec<String>) {
    let Some(params) = node.child_by_field_name("type_parameters") else { return };
    let mut cursor = params.walk();
    for decl in params.named_children(&mut cursor) {
        let mut inner = decl.walk();
        out.extend(decl.children_by_field_name("name", &mut inner).map(|n| node_text(&n, text).to_string()));
    }
}

/// The receiver and parameters of a function or method (its function
/// literals' too) whose declared type is a named type (`*Context` ->
/// `Context`, `*gin.Context` -> `gin.Context`), and the variables declared
/// once with one (`var w Writer`, `e := &Engine{...}`, `n := new(node)`):
/// name -> type. A parameter declared twice with different types, or
/// declared again by `:=`, `var` or `range` anywhere in the function, and a
/// variable declared more than once, are left out: their type is not
/// certain.
fn typed_names(function: Node<'_>, text: &str, generics: &[String]) -> HashMap<String, String> {
    let mut typed: HashMap<String, String> = HashMap::new();
    let mut unsure: HashSet<String> = HashSet::new();
    let mut params: HashSet<String> = HashSet::new();
    // Locals declared with a plain type, and how often each name is declared.
    let mut locals: Vec<(String, String)> = Vec::new();
    let mut declarations: HashMap<String, usize> = HashMap::new();
    let mut stack = vec![function];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "parameter_declaration" | "variadic_parameter_declaration" => {
                let ty = n.child_by_field_name("type");
                let ty = match ty {
                    Some(ty) if n.kind() == "parameter_declaration" => type_name(ty, text),
                    _ => String::new(),
                };
                let base = ty.rsplit('.').next().unwrap_or("");
                let certain =
                    !ty.is_empty() && !generics.iter().any(|g| g == base) && !PREDECLARED_TYPES.contains(&base);
                let mut cursor = n.walk();
                for name in n.children_by_field_name("name", &mut cursor) {
                    let name = node_text(&name, text).to_string();
                    params.insert(name.clone());
                    match typed.get(&name) {
                        _ if !certain => {
                            unsure.insert(name);
                        }
                        Some(other) if *other != ty => {
                            unsure.insert(name);
                        }
                        _ => {
                            typed.insert(name, ty.clone());
                        }
                    }
                }
            }
            "short_var_declaration" | "range_clause" | "var_spec" | "const_spec" => {
                let left = n.child_by_field_name("left").or_else(|| n.child_by_field_name("name"));
                let mut ids = Vec::new();
                if let Some(left) = left {
                    collect_kind_deep(left, "identifier", &mut ids);
                }
                let mut cursor = n.walk();
                for name in n.children_by_field_name("name", &mut cursor) {
                    ids.push(name);
                }
                // In source order: `r, err := New()` gives `r` the result.
                ids.sort_by_key(|id| id.start_byte());
                ids.dedup_by(|a, b| a.id() == b.id());
                let declared = match (n.kind(), ids.as_slice()) {
                    ("short_var_declaration", [first, _, ..]) => {
                        first_result(n, text).map(|f| (node_text(first, text).to_string(), f))
                    }
                    ("short_var_declaration" | "var_spec", [one]) => declared_type(n, text)
                        .filter(|ty| {
                            let base = ty.rsplit('.').next().unwrap_or("");
                            !generics.iter().any(|g| g == base) && !PREDECLARED_TYPES.contains(&base)
                        })
                        .map(|ty| (node_text(one, text).to_string(), ty)),
                    _ => None,
                };
                for id in &ids {
                    *declarations.entry(node_text(id, text).to_string()).or_default() += 1;
                }
                locals.extend(declared);
            }
            _ => {}
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    typed.retain(|name, _| name != "_" && !unsure.contains(name) && !declarations.contains_key(name));
    for (name, ty) in locals {
        if declarations.get(&name) == Some(&1) && !unsure.contains(&name) && !params.contains(&name) && name != "_" {
            typed.insert(name, ty);
        }
    }
    typed
}

/// The type a one-name declaration gives its variable plainly: `var x T`,
/// `x := T{...}`, `x := &T{...}`, `x := new(T)`.
fn declared_type(declaration: Node<'_>, text: &str) -> Option<String> {
    if let Some(ty) = declaration.child_by_field_name("type") {
        return Some(type_name(ty, text)).filter(|t| !t.is_empty());
    }
    let values = declaration.child_by_field_name("right").or_else(|| declaration.child_by_field_name("value"))?;
    let mut value = match values.kind() {
        "expression_list" if values.named_child_count() == 1 => values.named_child(0)?,
        "expression_list" => return None,
        _ => values,
    };
    if value.kind() == "unary_expression" && value.child_by_field_name("operator").is_some_and(|o| o.kind() == "&") {
        value = value.child_by_field_name("operand")?;
    }
    let ty = match value.kind() {
        "composite_literal" => type_name(value.child_by_field_name("type")?, text),
        "call_expression" if value.child_by_field_name("function").is_some_and(|f| node_text(&f, text) == "new") => {
            type_name(value.child_by_field_name("arguments")?.named_child(0)?, text)
        }
        "call_expression" => return called_function(value, text),
        _ => return None,
    };
    Some(ty).filter(|t| !t.is_empty())
}

/// What a declaration of several names (`r, err := New()`) gives the first:
/// the result of its one call, as [`called_function`] writes it.
fn first_result(declaration: Node<'_>, text: &str) -> Option<String> {
    let values = declaration.child_by_field_name("right")?;
    let value = match values.kind() {
        "expression_list" if values.named_child_count() == 1 => values.named_child(0)?,
        "expression_list" => return None,
        _ => values,
    };
    (value.kind() == "call_expression").then(|| called_function(value, text)).flatten()
}

/// A call of a function or of a package's function, written as what it
/// returns: `New()`, `gin.New()` (resolution reads the type the function
/// declares it returns: `New().Use` is `Engine.Use`; a method's call,
/// `c.Copy()`, is written the same and binds nothing, `c` being no
/// package). A builtin, a call of a call or of a literal is none.
fn called_function(call: Node<'_>, text: &str) -> Option<String> {
    let function = call.child_by_field_name("function")?;
    let name = match function.kind() {
        "identifier" => node_text(&function, text).to_string(),
        "selector_expression" => {
            let operand = function.child_by_field_name("operand").filter(|o| o.kind() == "identifier")?;
            let field = function.child_by_field_name("field")?;
            format!("{}.{}", node_text(&operand, text), node_text(&field, text))
        }
        _ => return None,
    };
    let base = name.rsplit('.').next().unwrap_or(&name);
    (!PREDECLARED_TYPES.contains(&base) && !BUILTINS.contains(&name.as_str())).then(|| format!("{name}()"))
}

/// The type a Go function's signature declares it returns first, when it
/// is a plain type of the function's own package: `Engine` of `func New(opts
/// ...OptionFunc) *Engine`, `Context` of `func CreateTestContext(w
/// http.ResponseWriter) (c *Context, r *Engine)`; none for a predeclared,
/// qualified, generic or composite type, or a generic function.
pub fn result_type(signature: &str) -> Option<String> {
    let rest = signature.strip_prefix("func")?.trim_start();
    // After a balanced group opened at the start of `s`, what follows.
    let after_group = |s: &str, open: char, close: char| -> Option<(String, String)> {
        let mut depth = 0;
        for (i, c) in s.char_indices() {
            if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return Some((s[1..i].to_string(), s[i + 1..].trim_start().to_string()));
                }
            }
        }
        None
    };
    let rest = if rest.starts_with('(') { after_group(rest, '(', ')')?.1 } else { rest.to_string() };
    let at = rest.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
    let rest = &rest[at..];
    if !rest.starts_with('(') {
        return None;
    }
    let results = after_group(rest, '(', ')')?.1;
    let results = results.trim_end_matches('{').trim();
    let first = if results.starts_with('(') {
        let inside = after_group(results, '(', ')')?.0;
        let first = inside.split(',').next()?.trim().to_string();
        first.rsplit(' ').next()?.to_string()
    } else {
        results.to_string()
    };
    let ty = first.trim_start_matches('*');
    let plain = !ty.is_empty() && ty.chars().all(|c| c.is_alphanumeric() || c == '_');
    (plain && !PREDECLARED_TYPES.contains(&ty)).then(|| ty.to_string())
}

/// The type of an embedded field (`RouterGroup`, `*sync.Mutex`): a field
/// declaration with a type and no name.
fn embedded_field(field: Node<'_>) -> Option<Node<'_>> {
    let embedded = field.kind() == "field_declaration" && field.child_by_field_name("name").is_none();
    embedded.then(|| field.child_by_field_name("type")).flatten()
}

/// The types a Go struct's signature says it embeds, when they are plain
/// types of its own package: `RouterGroup` of `type Engine struct {
/// RouterGroup; *sync.Mutex }` (a qualified one is another package's).
pub fn embedded_types(signature: &str) -> Vec<String> {
    let Some((_, inside)) = signature.split_once("struct {") else { return Vec::new() };
    let inside = inside.trim_end().strip_suffix('}').unwrap_or(inside);
    inside
        .split(';')
        .map(|t| t.trim().trim_start_matches('*'))
        .map(|t| t.split_once('[').map_or(t, |(base, _)| base))
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .map(str::to_string)
        .collect()
}

/// The receiver's type name (`Store` for `(s *Store)` or `(l List[T])`),
/// adding the receiver's type parameters to `generics`.
fn receiver_type(receiver: Node<'_>, text: &str, generics: &mut Vec<String>) -> Option<String> {
    let param = child_of_kind(receiver, "parameter_declaration")?;
    let mut ty = param.child_by_field_name("type")?;
    while matches!(ty.kind(), "pointer_type" | "parenthesized_type") {
        ty = ty.named_child(0)?;
    }
    if ty.kind() == "generic_type" {
        if let Some(args) = ty.child_by_field_name("type_arguments") {
            let mut ids = Vec::new();
            collect_kind_deep(args, "type_identifier", &mut ids);
            generics.extend(ids.iter().map(|n| node_text(n, text).to_string()));
        }
        ty = ty.child_by_field_name("type")?;
    }
    Some(node_text(&ty, text).to_string())
}

fn collect_kind_deep<'a>(node: Node<'a>, kind: &str, out: &mut Vec<Node<'a>>) {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.kind() == kind {
            out.push(n);
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
}

/// A named type without pointer or type arguments: `*pkg.T[int]` -> `pkg.T`.
fn type_name(node: Node<'_>, text: &str) -> String {
    let mut node = node;
    loop {
        let inner = match node.kind() {
            "type_identifier" | "qualified_type" => return node_text(&node, text).split_whitespace().collect(),
            "pointer_type" | "parenthesized_type" => node.named_child(0),
            "generic_type" => node.child_by_field_name("type"),
            _ => None,
        };
        match inner {
            Some(inner) => node = inner,
            None => return String::new(),
        }
    }
}

/// The callee as written: `f`, `fmt.Println`, `s.save`, `a.b().c`.
fn callee(node: Node<'_>, text: &str, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "_".to_string();
    }
    let recurse = |n: Option<Node<'_>>| n.map_or_else(|| "_".to_string(), |n| callee(n, text, depth + 1));
    match node.kind() {
        "identifier" | "field_identifier" | "package_identifier" | "type_identifier" => {
            node_text(&node, text).to_string()
        }
        "selector_expression" => {
            let field = node.child_by_field_name("field").map_or("", |n| node_text(&n, text));
            format!("{}.{field}", recurse(node.child_by_field_name("operand")))
        }
        "call_expression" => format!("{}()", recurse(node.child_by_field_name("function"))),
        "parenthesized_expression" => recurse(node.named_child(0)),
        "index_expression" => recurse(node.child_by_field_name("operand")),
        "generic_type" => recurse(node.child_by_field_name("type")),
        _ => "_".to_string(),
    }
}

/// The package name an import path brings into scope by default.
fn package_name(path: &str) -> &str {
    let mut segs = path.rsplit('/');
    let last = segs.next().unwrap_or(path);
    let is_version = |s: &str| s.len() > 1 && s.starts_with('v') && s[1..].chars().all(|c| c.is_ascii_digit());
    if is_version(last)
        && let Some(prev) = segs.next()
    {
        return prev;
    }
    match last.rsplit_once('.') {
        Some((stem, version)) if is_version(version) && !stem.is_empty() => stem,
        _ => last,
    }
}

/// The first non-test `.go` file directly in `dir`, by sorted path.
fn first_go_file(files: &BTreeSet<String>, dir: &str) -> Option<String> {
    let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
    let mut from = prefix.clone();
    loop {
        let next = files.range::<str, _>((Bound::Included(from.as_str()), Bound::Unbounded)).next()?;
        let rest = next.strip_prefix(prefix.as_str())?;
        match rest.find('/') {
            // Skip the whole subdirectory: `sub0` sorts right after `sub/...`.
            Some(i) => from = format!("{prefix}{}0", &rest[..i]),
            None if rest.ends_with(".go") && !rest.ends_with("_test.go") => return Some(next.clone()),
            None => from = format!("{next}\u{0}"),
        }
    }
}

fn resolve_go_import(ctx: &ResolveContext<'_>, from_path: &str, import: &str) -> Option<String> {
    let files = ctx.files();
    if import.starts_with("./") || import.starts_with("../") {
        let dir = join_normalized(dir_of(from_path), import)?;
        return first_go_file(files, &dir);
    }
    // A package of one of the resource's own modules: its folder there.
    for (dir, module) in ctx.go_modules() {
        let Some(rest) = import.strip_prefix(module.as_str()) else { continue };
        if rest.is_empty() || rest.starts_with('/') {
            let rest = rest.trim_start_matches('/');
            let folder = if rest.is_empty() { dir.clone() } else { join_path(dir, rest) };
            if let Some(found) = first_go_file(files, &folder) {
                return Some(found);
            }
        }
    }
    let segs: Vec<&str> = import.split('/').filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    if !first.contains('.') && STD_ROOTS.contains(&first) {
        return None;
    }
    let n = segs.len();
    let mut best_len = 0;
    let mut best: Vec<String> = Vec::new();
    let mut consider = |len: usize, dir: String| {
        if first_go_file(files, &dir).is_none() || len < best_len {
            return;
        }
        if len > best_len {
            best_len = len;
            best.clear();
        }
        if !best.contains(&dir) {
            best.push(dir);
        }
    };
    let mut ancestor = dir_of(from_path);
    loop {
        consider(n + 1, join_path(ancestor, &format!("vendor/{}", segs.join("/"))));
        for k in (1..=n).rev().filter(|&k| k >= 2 || k == n) {
            consider(k, join_path(ancestor, &segs[n - k..].join("/")));
        }
        if ancestor.is_empty() {
            break;
        }
        ancestor = dir_of(ancestor);
    }
    match best.as_slice() {
        [one] => first_go_file(files, one),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const FIXTURE: &str = r#"// Copyright 2024 The Authors.

// Package store persists items for the service.
//
// It is safe for concurrent use.
package store

import "fmt"

import (
	"context"
	"sync"

	f "example.com/proj/internal/format"
	_ "embed"
	. "strings"
	yaml "gopkg.in/yaml.v3"
	"github.com/acme/kit/v2"
)

// Limits of the store.
const (
	// MaxItems bounds the store.
	MaxItems       = 100
	minItems int   = 1
	_              = 0
)

// Default is the shared store.
var Default = New(f.Options())

// Store keeps items in memory.
type Store struct {
	sync.Mutex
	*Base
	items map[string]*Item // by key
	// hits and misses count lookups.
	hits, misses int
	Name string `json:"name"`
}

// Saver saves items.
type Saver interface {
	io.Closer
	// Save stores it.
	Save(ctx context.Context, it *Item) error
}

// Number is a numeric constraint.
type Number interface {
	~int | ~float64
}

type ID = string
type Count int

type (
	// Empty is empty.
	Empty struct{}
	Handler func(ctx context.Context) error
)

// List is a generic list.
type List[T any] struct {
	xs []T
}

// New makes a store.
func New(opts format.Options) *Store {
	return &Store{items: make(map[string]*Item)}
}

// Save saves it.
//
//go:noinline
func (s *Store) Save(ctx context.Context, it *Item) error {
	s.Lock()
	defer s.Unlock()
	s.save(it)
	fmt.Println("saved", len(s.items))
	go func() { notify(ctx) }()
	return s.backend().Put(ctx, it)
}

func (l List[T]) Len() int { return len(l.xs) }

func (r *Remote) Fetch() {}

func Map[T, U any](xs []T, fn func(T) U) []U {
	out := make([]U, 0, len(xs))
	return out
}

func TestSave(t *testing.T) {
	t.Run("x", func(t *testing.T) { New(nil).Save(context.Background(), nil) })
}

func BenchmarkSave(b *testing.B) {}

func Testify() {}
"#;

    fn analyze(path: &str, text: &str) -> FileAnalysis {
        GoAnalyzer.analyze("go", path, text)
    }

    use crate::lang::test_support::assert_spans_are_declarations;

    fn assert_provenance(analysis: &FileAnalysis, text: &str) {
        assert_spans_are_declarations(analysis, text);
        for node in &analysis.nodes[1..] {
            let slice = node.span.slice(text);
            assert!(!slice.is_empty(), "{} has an empty span", node.symbol_path);
            let ok = ["func", "type", "const", "var", "import"].iter().any(|k| slice.starts_with(k))
                || slice.starts_with(node.name.as_str())
                || (node.kind == NodeKind::Import && slice.trim_start_matches(|c: char| c != '"').contains(&node.name))
                || node.kind == NodeKind::Field;
            assert!(ok, "{} span starts with {:?}", node.symbol_path, &slice[..slice.len().min(20)]);
        }
    }

    #[test]
    fn calls_on_the_receiver_and_typed_parameters_are_written_against_their_type() {
        let text = "package gin\n\nfunc (c *Context) Next() {\n\tc.Abort()\n\tc.engine.Handle()\n\tother.Abort()\n}\n\nfunc free(c *Context, p *render.JSON, n int) {\n\tc.Abort()\n\tp.Render()\n\tn.Bad()\n}\n\nfunc shadow(c *Context) {\n\tc.Abort()\n\tgo func(c *Engine) { c.Run() }(nil)\n}\n\nvar formatter = func(p Params) string {\n\treturn p.Color()\n}\n\nfunc reassigned(c *Context) {\n\tfor _, c := range list {\n\t\tc.Abort()\n\t}\n}\n";
        let analysis = analyze("context.go", text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "Context.Abort",
                "c.engine.Handle",
                "other.Abort",
                "Context.Abort",
                "render.JSON.Render",
                "n.Bad",
                "c.Abort",
                "c.Run",
                "Params.Color",
                "c.Abort"
            ]
        );
    }

    #[test]
    fn calls_on_variables_declared_once_with_a_plain_type_are_written_against_it() {
        let text = "package gin\n\nfunc New() *Engine {\n\tengine := &Engine{trees: nil}\n\tengine.Use()\n\tvar w responseWriter\n\tw.reset()\n\tn := new(node)\n\tn.addRoute()\n\tr := render.JSON{}\n\tr.Render()\n\tx := build()\n\tx.Run()\n\tt := T{}\n\tt, u := T{}, 1\n\tt.Do()\n\tvar i int\n\ti.Bad()\n\tc, _ := CreateTestContext(w)\n\tc.Next()\n\tg := gin.New()\n\tg.Use()\n\tk, err := c.Copy(), 1\n\tk.Next()\n\treturn engine\n}\n";
        let analysis = analyze("gin.go", text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "Engine.Use",
                "responseWriter.reset",
                "node.addRoute",
                "render.JSON.Render",
                "build",
                // What a function returns: resolution reads its declared result type.
                "build().Run",
                "t.Do",
                "i.Bad",
                "CreateTestContext",
                "CreateTestContext().Next",
                "gin.New",
                "gin.New().Use",
                "CreateTestContext().Copy",
                // Two values: neither is typed.
                "k.Next"
            ]
        );
    }

    #[test]
    fn a_function_returns_the_plain_type_its_signature_declares_first() {
        assert_eq!(result_type("func New(opts ...OptionFunc) *Engine").as_deref(), Some("Engine"));
        assert_eq!(result_type("func processAccounts(accounts Accounts) authPairs").as_deref(), Some("authPairs"));
        let pair = "func CreateTestContext(w http.ResponseWriter) (c *Context, r *Engine)";
        assert_eq!(result_type(pair).as_deref(), Some("Context"));
        assert_eq!(result_type("func Load() (*Config, error) {").as_deref(), Some("Config"));
        assert_eq!(result_type("func (e *Engine) allocateContext(n uint16) *Context").as_deref(), Some("Context"));
        for none in [
            "func (c *Context) Next()",
            "func Name() string",
            "func Get() (value any, exists bool)",
            "func Default() *gin.Engine",
            "func Map[K comparable](k K) *Tree",
            "func Items() []Item",
            "func Handler() func(*Context)",
        ] {
            assert_eq!(result_type(none), None, "{none}");
        }
    }

    #[test]
    fn outline_of_a_realistic_file() {
        let analysis = analyze("internal/store/store.go", FIXTURE);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        assert_provenance(&analysis, FIXTURE);
        assert_eq!(analysis.nodes[0].signature.as_deref(), Some("package store"));
        assert_eq!(
            analysis.nodes[0].doc.as_deref(),
            Some("Package store persists items for the service.\n\nIt is safe for concurrent use.")
        );
        let save = analysis.nodes.iter().find(|n| n.symbol_path == "Store.Save").unwrap();
        assert_eq!(save.doc.as_deref(), Some("Save saves it."));
        let fetch = analysis.nodes.iter().find(|n| n.symbol_path == "Remote.Fetch").unwrap();
        assert_eq!((fetch.name.as_str(), fetch.parent), ("Fetch", Some(0)));
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn tests_need_the_testing_shape() {
        let text = "package x\n\ntype Suite struct{}\n\nfunc (s *Suite) TestSave() {}\n\nfunc (s *Suite) helper() {}\n\nfunc TestLoad(t *testing.T) {}\n\nfunc Testify() {}\n\nfunc ExampleLoad() {}\n";
        let kinds = |path: &str| -> Vec<(String, NodeKind)> {
            analyze(path, text).nodes[1..].iter().map(|n| (n.symbol_path.clone(), n.kind)).collect()
        };
        let in_test_file = kinds("x_test.go");
        assert!(in_test_file.contains(&("Suite.TestSave".to_string(), NodeKind::Test)));
        assert!(in_test_file.contains(&("Suite.helper".to_string(), NodeKind::Method)));
        assert!(in_test_file.contains(&("TestLoad".to_string(), NodeKind::Test)));
        assert!(in_test_file.contains(&("Testify".to_string(), NodeKind::Function)));
        assert!(in_test_file.contains(&("ExampleLoad".to_string(), NodeKind::Test)));
        let in_source = kinds("x.go");
        assert!(in_source.contains(&("Suite.TestSave".to_string(), NodeKind::Method)));
        assert!(in_source.contains(&("TestLoad".to_string(), NodeKind::Test)));
        assert!(in_source.contains(&("ExampleLoad".to_string(), NodeKind::Function)));
    }

    #[test]
    fn syntax_errors_still_extract() {
        let text = "package main\n\n// Store stores.\ntype Store struct{ n int }\n\n// Half is broken.\nfunc Half() {\n\tx := ;\n\tfmt.Println(x)\n}\n\n// Later works.\nfunc (s *Store) Later() int { return helper() }\n\nfunc (s Store) broken( {\n";
        let analysis = analyze("main.go", text);
        assert!(!analysis.warnings.is_empty());
        assert_provenance(&analysis, text);
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut text = String::from("package p\n\nfunc f() {\n");
        text.push_str(&"func() { ".repeat(2000));
        text.push_str("g()");
        text.push_str(&" }()".repeat(2000));
        text.push_str("\nx := 1");
        text.push_str(&" + a.b()".repeat(20000));
        text.push_str("\ny");
        text.push_str(&".c()".repeat(5000));
        text.push_str("\n}\n\ntype T struct { a ");
        text.push_str(&"*".repeat(3000));
        text.push_str("U }\n");
        let analysis = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || GoAnalyzer.analyze("go", "p.go", &text))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "f"));
    }

    #[test]
    fn garbage_never_panics() {
        for text in ["", "package", "func (", "type X struct {", "import (", "var (\n a, b =", "é\u{feff}"] {
            let analysis = analyze("x.go", text);
            assert_provenance(&analysis, text);
        }
    }

    #[test]
    fn package_names_skip_versions() {
        assert_eq!(package_name("gopkg.in/yaml.v3"), "yaml");
        assert_eq!(package_name("github.com/acme/kit/v2"), "kit");
        assert_eq!(package_name("net/http"), "http");
        assert_eq!(package_name("fmt"), "fmt");
    }

    fn import(target: &str) -> Reference {
        Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: Vec::new(),
            system: false,
            span: Span::default(),
        }
    }

    #[test]
    fn resolves_packages_by_path_suffix() {
        let set: BTreeSet<String> = [
            "go.mod",
            "main.go",
            "cmd/server/main.go",
            "internal/store/store_test.go",
            "internal/store/store.go",
            "internal/store/a_helpers.go",
            "internal/store/sub/deep.go",
            "internal/format/format.go",
            "pkg/util/util.go",
            "lib/util/util.go",
            "onlytests/x/x_test.go",
            "vendor/github.com/acme/kit/kit.go",
            "legacy/old.go",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let ctx = ResolveContext::new(&set);
        let r = |from: &str, target: &str| GoAnalyzer.resolve_import(&ctx, from, &import(target));
        assert_eq!(
            r("cmd/server/main.go", "example.com/proj/internal/store").as_deref(),
            Some("internal/store/a_helpers.go")
        );
        assert_eq!(r("main.go", "example.com/proj/internal/format").as_deref(), Some("internal/format/format.go"));
        assert_eq!(r("main.go", "example.com/proj/internal/store/sub").as_deref(), Some("internal/store/sub/deep.go"));
        assert_eq!(r("main.go", "github.com/acme/kit").as_deref(), Some("vendor/github.com/acme/kit/kit.go"));
        assert_eq!(r("cmd/server/main.go", "myapp/pkg/util").as_deref(), Some("pkg/util/util.go"));
        assert_eq!(r("cmd/server/main.go", "../../legacy").as_deref(), Some("legacy/old.go"));
        // Unresolved: std, unknown, a single-segment suffix, ambiguity, test-only packages.
        assert_eq!(r("main.go", "fmt"), None);
        assert_eq!(r("main.go", "net/http"), None);
        assert_eq!(r("main.go", "internal/store"), None);
        assert_eq!(r("main.go", "github.com/other/lib/store"), None);
        assert_eq!(r("main.go", "example.com/proj/util"), None);
        assert_eq!(r("main.go", "example.com/x/onlytests/x"), None);
        // The resource's own module (`go.mod` at the root): a one-segment
        // package under it, and the module's root package.
        let with_module = ResolveContext::new(&set).with_go_modules(vec![(String::new(), "example.com/x".into())]);
        let r = |target: &str| GoAnalyzer.resolve_import(&with_module, "main.go", &import(target));
        assert_eq!(r("example.com/x/legacy").as_deref(), Some("legacy/old.go"));
        assert_eq!(r("example.com/x").as_deref(), Some("main.go"));
        assert_eq!(r("example.com/x/onlytests/x"), None, "a test-only package");
        assert_eq!(r("example.com/xy/legacy"), None, "not under the module path");
        assert_eq!(
            crate::resolve::go_module_path("// c\nmodule github.com/gin-gonic/gin // x\n\ngo 1.21\n"),
            Some("github.com/gin-gonic/gin")
        );
        assert_eq!(crate::resolve::go_module_path("go 1.21\n"), None);
        // Two packages with the same suffix above the importing file: ambiguous.
        let nested: BTreeSet<String> =
            ["pkg/util/u.go", "svc/pkg/util/u.go", "svc/main.go"].into_iter().map(String::from).collect();
        let ctx = ResolveContext::new(&nested);
        assert_eq!(GoAnalyzer.resolve_import(&ctx, "svc/main.go", &import("example.com/pkg/util")), None);
        assert_eq!(
            GoAnalyzer.resolve_import(&ctx, "main.go", &import("example.com/pkg/util")).as_deref(),
            Some("pkg/util/u.go")
        );
    }

    #[test]
    fn go_query_matches_the_hand_written_analyzer() {
        let path = "store/store.go";
        let hand = analyze(path, FIXTURE);
        let query = crate::lang::languages::GO_QUERY.analyze("go", path, FIXTURE);
        let diff = crate::lang::languages::differences(&hand, &query);
        insta::assert_snapshot!(diff.join("\n"));
    }
}
