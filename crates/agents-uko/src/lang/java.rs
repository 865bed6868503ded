//! Java: package, imports, types and their members, tests, calls, mentions.
//!
//! Layout decisions:
//! - Node 0 gets the signature `package a.b` and, in `package-info.java`,
//!   the Javadoc above the package declaration. Types stay directly under
//!   node 0 (symbol paths `Store.save`, not package-qualified).
//! - Classes and records are `Class`; interfaces and `@interface`s are
//!   `Interface`; enums are `Enum` with constants as `Field`s (methods of a
//!   constant body go under the constant). Record components are `Field`s.
//!   Constructors (also compact ones) are `Method`s named like the class;
//!   overloads get `~2`, `~3`. Methods annotated `@Test`,
//!   `@ParameterizedTest`, `@RepeatedTest`, `@TestFactory`, `@TestTemplate`
//!   or `@Property` are `Test`s.
//! - Spans include annotations and modifiers (tree-sitter puts them inside
//!   the declaration); signatures leave annotations out.
//! - Docs: a `/** */` comment directly before the declaration.
//! - Imports: one `Import` node per declaration. `import a.b.C;` -> target
//!   `a.b.C`, names `["C"]`; `import a.b.*;` -> target `a.b`, names `["*"]`;
//!   `import static a.b.C.m;` -> target `a.b.C.m`, names `["m"]`;
//!   `import static a.b.C.*;` -> target `a.b.C`, names `["*"]`.
//!   Resolution: `a/b/C.java` as a unique path suffix; failing that, the
//!   trailing segments are dropped while the last one left is capitalized
//!   (static members, nested classes). A package wildcard stays unresolved.
//! - `extends`/`implements` are `Inherits` from the type; calls are
//!   `m`, `obj.m`, `Util.m`, `this.m`, `a.b().c`, and `new Foo()` is a call of
//!   `Foo` (`new Foo().m()` -> `Foo.m`); `super(..)`/`this(..)` are not.
//! - `Mentions` for types in fields, parameters, returns and `throws`,
//!   without primitives, type parameters and `java.lang` basics (`String`).

use std::collections::HashMap;
use std::sync::LazyLock;

use tree_sitter::{Language, Node};

use crate::lang::{
    Analyzer, FileBuilder, clean_doc, collapse, node_text, note_class, parse_or_warn, plain_comment_doc,
    preceding_comments, walk_preorder,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use crate::resolve::ResolveContext;

static LANGUAGE: LazyLock<Language> = LazyLock::new(|| tree_sitter_java::LANGUAGE.into());

const MAX_DEPTH: usize = 48;

/// `java.lang` types never worth a mention (and `var`).
const SKIP_TYPES: &[&str] = &[
    "String",
    "Object",
    "Integer",
    "Long",
    "Short",
    "Byte",
    "Character",
    "Boolean",
    "Double",
    "Float",
    "Void",
    "Number",
    "var",
];

const TEST_ANNOTATIONS: &[&str] =
    &["Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate", "Property"];

pub struct JavaAnalyzer;

impl Analyzer for JavaAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["java"]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let Some(tree) = parse_or_warn(&mut builder, &LANGUAGE, "Java", text) else {
            return builder.finish();
        };
        let root = tree.root_node();
        let mut walker = Walker { text, b: builder, depth: 0, fields: Vec::new() };
        let mut package = None;
        let mut cursor = root.walk();
        let children: Vec<Node<'_>> = root.named_children(&mut cursor).collect();
        for (i, &child) in children.iter().enumerate() {
            let prev = i.checked_sub(1).map(|k| children[k]);
            match child.kind() {
                "package_declaration" => {
                    let name = child.named_children(&mut child.walk()).find(|c| c.kind() != "annotation");
                    package = name.map(|n| format!("package {}", collapse(node_text(&n, text))));
                    walker.b.set_doc(0, javadoc(prev, text));
                }
                "import_declaration" => walker.import(child),
                _ => {
                    walker.declaration(child, 0, &[], prev);
                }
            }
        }
        let mut analysis = walker.b.finish();
        analysis.nodes[0].signature = package;
        analysis
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, _from_path: &str, reference: &Reference) -> Option<String> {
        let segs: Vec<&str> = reference.target.split('.').filter(|s| !s.is_empty()).collect();
        let class_file = |segs: &[&str]| ctx.unique_ending_with(&format!("{}.java", segs.join("/")));
        if segs.is_empty() {
            return None;
        }
        if let Some(found) = class_file(&segs) {
            return Some(found);
        }
        if reference.names.iter().any(|n| n == "*") {
            return None;
        }
        for k in (1..segs.len()).rev() {
            if !segs[k - 1].starts_with(|c: char| c.is_uppercase()) {
                break;
            }
            if let Some(found) = class_file(&segs[..k]) {
                return Some(found);
            }
        }
        None
    }
}

struct Walker<'t> {
    text: &'t str,
    b: FileBuilder,
    /// Nesting of type declarations being walked.
    depth: usize,
    /// The fields of the type declarations being walked (innermost last)
    /// whose type is plain: name -> type.
    fields: Vec<HashMap<String, String>>,
}

impl<'t> Walker<'t> {
    fn t(&self, node: &Node<'_>) -> &'t str {
        node_text(node, self.text)
    }

    fn import(&mut self, node: Node<'_>) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        let is_static = children.iter().any(|c| c.kind() == "static");
        let wildcard = children.iter().any(|c| c.kind() == "asterisk");
        let Some(path) = children.iter().find(|c| matches!(c.kind(), "scoped_identifier" | "identifier")) else {
            return;
        };
        let path: String = self.t(path).split_whitespace().collect();
        let (name, names) = if wildcard {
            (format!("{path}.*"), vec!["*".to_string()])
        } else {
            let last = path.rsplit('.').next().unwrap_or(&path).to_string();
            (path.clone(), vec![last])
        };
        let sig = format!("import {}{name}", if is_static { "static " } else { "" });
        let span = Span::of_node(&node);
        let idx = self.b.add(0, NodeKind::Import, &name, span, Some(sig), None);
        self.b.import(idx, path, names, false, span);
    }

    /// A type declaration under `parent`; `false` if `node` is not one.
    /// `prev` is its previous named sibling (a Javadoc comment or not).
    fn declaration(&mut self, node: Node<'_>, parent: usize, outer: &[String], prev: Option<Node<'_>>) -> bool {
        let kind = match node.kind() {
            "class_declaration" | "record_declaration" => NodeKind::Class,
            "interface_declaration" | "annotation_type_declaration" => NodeKind::Interface,
            "enum_declaration" => NodeKind::Enum,
            _ => return false,
        };
        let Some(name) = node.child_by_field_name("name") else { return true };
        if self.depth > MAX_DEPTH {
            // Absurdly deep nesting: keep the stack bounded.
            return true;
        }
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let sig = signature(node, body, self.text);
        let doc = doc_of(node, prev, self.text);
        let idx = self.b.add(parent, kind, name, Span::of_node(&node), Some(sig), doc);
        let mut generics = outer.to_vec();
        type_param_names(node, self.text, &mut generics);
        let mut cursor = node.walk();
        let parts: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for part in parts {
            match part.kind() {
                "superclass" | "super_interfaces" | "extends_interfaces" => self.inherits(idx, part),
                "type_parameters" => self.mention_types(idx, part, &generics),
                _ => {}
            }
        }
        if let Some(params) = node.child_by_field_name("parameters") {
            // Record components.
            let mut cursor = params.walk();
            let components: Vec<Node<'_>> = params.named_children(&mut cursor).collect();
            for component in components {
                let Some(cname) = component.child_by_field_name("name") else { continue };
                let cname = self.t(&cname);
                let sig = collapse(self.t(&component));
                let field = self.b.add(idx, NodeKind::Field, cname, Span::of_node(&component), Some(sig), None);
                if let Some(ty) = component.child_by_field_name("type") {
                    self.mention_types(field, ty, &generics);
                }
            }
        }
        if let Some(body) = body {
            self.depth += 1;
            self.members(body, idx, name, &generics);
            self.depth -= 1;
        }
        true
    }

    fn inherits(&mut self, from: usize, clause: Node<'_>) {
        let text = self.text;
        walk_preorder(clause, |n| {
            if !matches!(n.kind(), "type_identifier" | "scoped_type_identifier" | "generic_type") {
                return true;
            }
            let target = type_base_name(n, text);
            if !target.is_empty() {
                self.b.reference(from, RefKind::Inherits, target, Span::of_node(&n));
            }
            false
        });
    }

    fn members(&mut self, body: Node<'_>, parent: usize, type_name: &str, generics: &[String]) {
        let fields = field_types(body, self.text, generics);
        self.fields.push(fields);
        self.members_of(body, parent, type_name, generics);
        self.fields.pop();
    }

    fn members_of(&mut self, body: Node<'_>, parent: usize, type_name: &str, generics: &[String]) {
        let mut cursor = body.walk();
        let members: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
        for (i, &member) in members.iter().enumerate() {
            let prev = i.checked_sub(1).map(|k| members[k]);
            match member.kind() {
                "field_declaration" | "constant_declaration" => self.field(member, parent, generics, prev),
                "method_declaration" | "annotation_type_element_declaration" => {
                    self.method(member, parent, None, generics, prev)
                }
                "constructor_declaration" | "compact_constructor_declaration" => {
                    self.method(member, parent, Some(type_name), generics, prev)
                }
                "enum_constant" => self.enum_constant(member, parent, generics, prev),
                "enum_body_declarations" => self.members_of(member, parent, type_name, generics),
                "static_initializer" | "block" => self.body(member, parent, generics, &HashMap::new()),
                _ => {
                    self.declaration(member, parent, generics, prev);
                }
            }
        }
    }

    fn field(&mut self, node: Node<'_>, parent: usize, generics: &[String], prev: Option<Node<'_>>) {
        let ty = node.child_by_field_name("type");
        let head_end = ty.map_or(node.start_byte(), |t| t.end_byte());
        let head = collapse(self.text.get(signature_start(node)..head_end).unwrap_or(""));
        let doc = doc_of(node, prev, self.text);
        let mut cursor = node.walk();
        let declarators: Vec<Node<'_>> = node.children_by_field_name("declarator", &mut cursor).collect();
        for declarator in declarators {
            let Some(name) = declarator.child_by_field_name("name") else { continue };
            let name = self.t(&name);
            let dims = declarator.child_by_field_name("dimensions").map_or("", |d| self.t(&d));
            let sig = format!("{head} {name}{dims}");
            let idx = self.b.add(parent, NodeKind::Field, name, Span::of_node(&node), Some(sig), doc.clone());
            if let Some(ty) = ty {
                self.mention_types(idx, ty, generics);
            }
            let Some(value) = declarator.child_by_field_name("value") else { continue };
            match anonymous_class_body(value) {
                // `X = new TypeAdapter<T>() { read.. write.. }`: the class's
                // members under the field, as an enum constant's body; the
                // call of its type and its arguments' calls from the field.
                Some(class_body) => {
                    if let Some(ty) = value.child_by_field_name("type") {
                        let target = type_base_name(ty, self.text);
                        self.b.reference(idx, RefKind::Calls, target, Span::of_node(&value));
                    }
                    if let Some(args) = value.child_by_field_name("arguments") {
                        self.body(args, idx, generics, &HashMap::new());
                    }
                    self.members(class_body, idx, name, generics);
                }
                None => self.body(value, idx, generics, &HashMap::new()),
            }
        }
    }

    fn method(
        &mut self,
        node: Node<'_>,
        parent: usize,
        constructor_of: Option<&str>,
        outer: &[String],
        prev: Option<Node<'_>>,
    ) {
        let name = match constructor_of {
            Some(class) => node.child_by_field_name("name").map_or(class, |n| self.t(&n)),
            None => match node.child_by_field_name("name") {
                Some(n) => self.t(&n),
                None => return,
            },
        };
        let body = node.child_by_field_name("body");
        let kind = if has_test_annotation(node, self.text) { NodeKind::Test } else { NodeKind::Method };
        let sig = signature(node, body, self.text);
        let doc = doc_of(node, prev, self.text);
        let idx = self.b.add(parent, kind, name, Span::of_node(&node), Some(sig), doc);
        let mut generics = outer.to_vec();
        type_param_names(node, self.text, &mut generics);
        let return_type = node.child_by_field_name("type").map(|t| t.id());
        let mut cursor = node.walk();
        let parts: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        for part in parts {
            if matches!(part.kind(), "type_parameters" | "formal_parameters" | "throws")
                || Some(part.id()) == return_type
            {
                self.mention_types(idx, part, &generics);
            }
        }
        if let Some(body) = body {
            let locals = typed_locals(node, self.text, &generics);
            self.body(body, idx, &generics, &locals);
        }
    }

    fn enum_constant(&mut self, node: Node<'_>, parent: usize, generics: &[String], prev: Option<Node<'_>>) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let sig = signature(node, body, self.text);
        let doc = doc_of(node, prev, self.text);
        let idx = self.b.add(parent, NodeKind::Field, name, Span::of_node(&node), Some(sig), doc);
        if let Some(args) = node.child_by_field_name("arguments") {
            self.body(args, idx, generics, &HashMap::new());
        }
        if let Some(body) = body {
            self.members(body, idx, name, generics);
        }
    }

    /// Calls in a body or initializer (and local types); iterative. A call
    /// on a local, a parameter or a field whose declared type is plain
    /// (`doc.select()` with `Document doc`, `this.parser.parse()`) is written
    /// against that type (`Document.select`), which resolution binds.
    fn body(&mut self, node: Node<'_>, from: usize, generics: &[String], locals: &HashMap<String, Option<String>>) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "method_invocation" => {
                    let name = n.child_by_field_name("name").map_or("", |m| self.t(&m));
                    let target = match n.child_by_field_name("object") {
                        Some(object) => {
                            let object = callee(object, self.text, 0);
                            let field = |name: &str| self.fields.last().and_then(|f| f.get(name)).cloned();
                            let typed = match object.strip_prefix("this.") {
                                Some(member) => field(member),
                                None => match locals.get(&object) {
                                    Some(local) => local.clone(),
                                    None => field(&object),
                                },
                            };
                            format!("{}.{name}", typed.unwrap_or(object))
                        }
                        None => name.to_string(),
                    };
                    self.b.reference(from, RefKind::Calls, target, Span::of_node(&n));
                }
                "method_reference" => {
                    // `Item::key`, `System.out::println`, `Foo::new`.
                    let count = n.child_count();
                    if let (Some(object), Some(last)) = (n.named_child(0), n.child(count.saturating_sub(1))) {
                        let object = match object.kind() {
                            "type_identifier" | "scoped_type_identifier" | "generic_type" => {
                                type_base_name(object, self.text)
                            }
                            _ => callee(object, self.text, 0),
                        };
                        let target = match last.kind() {
                            "new" => object,
                            "identifier" => format!("{object}.{}", self.t(&last)),
                            _ => String::new(),
                        };
                        if !target.is_empty() && target != "_" {
                            self.b.reference(from, RefKind::Calls, target, Span::of_node(&n));
                        }
                    }
                }
                "object_creation_expression" => {
                    if let Some(ty) = n.child_by_field_name("type") {
                        let target = type_base_name(ty, self.text);
                        self.b.reference(from, RefKind::Calls, target, Span::of_node(&n));
                    }
                }
                "class_declaration"
                | "record_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "annotation_type_declaration" => {
                    // Local types are rare: a linear sibling lookup is fine.
                    self.declaration(n, from, generics, n.prev_named_sibling());
                    continue;
                }
                _ => {}
            }
            let mut cursor = n.walk();
            let start = stack.len();
            stack.extend(n.named_children(&mut cursor));
            stack[start..].reverse();
        }
    }

    fn mention_types(&mut self, from: usize, node: Node<'_>, generics: &[String]) {
        let text = self.text;
        walk_preorder(node, |n| match n.kind() {
            "type_identifier" | "scoped_type_identifier" => {
                let target = type_base_name(n, text);
                if !target.is_empty() && !SKIP_TYPES.contains(&target.as_str()) && !generics.contains(&target) {
                    self.b.reference_once(from, RefKind::Mentions, target, Span::of_node(&n));
                }
                false
            }
            "marker_annotation" | "annotation" | "identifier" => false,
            _ => true,
        });
    }
}

/// The body of an anonymous class a field is initialised with (`new T() {
/// ... }`), when the value is one.
fn anonymous_class_body(value: Node<'_>) -> Option<Node<'_>> {
    if value.kind() != "object_creation_expression" {
        return None;
    }
    let mut cursor = value.walk();
    value.named_children(&mut cursor).find(|c| c.kind() == "class_body")
}

/// Where a declaration's signature starts: after its annotations.
fn signature_start(node: Node<'_>) -> usize {
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "modifiers" => {
                let mut inner = child.walk();
                let first = child.children(&mut inner).find(|m| {
                    !matches!(m.kind(), "marker_annotation" | "annotation" | "line_comment" | "block_comment")
                });
                if let Some(first) = first {
                    return first.start_byte();
                }
            }
            "line_comment" | "block_comment" => {}
            _ => return child.start_byte(),
        }
    }
    node.start_byte()
}

/// The header of a declaration without annotations and body:
/// `public static <T> List<T> of(T... items)`.
fn signature(node: Node<'_>, body: Option<Node<'_>>, text: &str) -> String {
    let end = body.map_or(node.end_byte(), |b| b.start_byte());
    let start = signature_start(node).min(end);
    collapse(text.get(start..end).unwrap_or("")).trim_end_matches(['{', ';', ' ']).to_string()
}

/// The `/** */` comment directly before a declaration (`prev`, its
/// previous named sibling).
fn javadoc(prev: Option<Node<'_>>, text: &str) -> Option<String> {
    let prev = prev?;
    let raw = node_text(&prev, text);
    if prev.kind() == "block_comment" && raw.starts_with("/**") && raw != "/**/" { clean_doc(raw) } else { None }
}

/// The Javadoc of `node` ([`javadoc`] of `prev`, its previous named
/// sibling), else what plain comments right above it say of it.
fn doc_of(node: Node<'_>, prev: Option<Node<'_>>, text: &str) -> Option<String> {
    javadoc(prev, text).or_else(|| {
        let plain = preceding_comments(&node, text, |c| matches!(c.kind(), "line_comment" | "block_comment"))?;
        plain_comment_doc(&plain)
    })
}

fn has_test_annotation(node: Node<'_>, text: &str) -> bool {
    let Some(modifiers) = node.named_children(&mut node.walk()).find(|c| c.kind() == "modifiers") else {
        return false;
    };
    let mut cursor = modifiers.walk();
    modifiers.named_children(&mut cursor).any(|m| {
        matches!(m.kind(), "marker_annotation" | "annotation")
            && m.child_by_field_name("name").is_some_and(|n| {
                let name = node_text(&n, text);
                TEST_ANNOTATIONS.contains(&name.rsplit('.').next().unwrap_or(name))
            })
    })
}

fn type_param_names(node: Node<'_>, text: &str, out: &mut Vec<String>) {
    let Some(params) = node.child_by_field_name("type_parameters") else { return };
    let mut cursor = params.walk();
    for param in params.named_children(&mut cursor) {
        let mut inner = param.walk();
        if let Some(name) =
            param.named_children(&mut inner).find(|c| matches!(c.kind(), "type_identifier" | "identifier"))
        {
            out.push(node_text(&name, text).to_string());
        }
    }
}

/// A type without type arguments: `Map<K, V>` -> `Map`, `a.b.C<T>` -> `a.b.C`.
/// The plain type a declaration's `type` names: a class or interface, not
/// a primitive, an array, `var` or a type parameter (`List<Item>` -> `List`).
fn plain_type(ty: Node<'_>, text: &str, generics: &[String]) -> Option<String> {
    let name = type_base_name(ty, text);
    let last = name.rsplit('.').next().unwrap_or(&name);
    (last.starts_with(|c: char| c.is_ascii_uppercase()) && !generics.iter().any(|g| g == last)).then_some(name)
}

/// The fields a type's body declares with a plain type: name -> type.
fn field_types(body: Node<'_>, text: &str, generics: &[String]) -> HashMap<String, String> {
    let mut fields = HashMap::new();
    let mut cursor = body.walk();
    for member in body.named_children(&mut cursor).filter(|m| m.kind() == "field_declaration") {
        let Some(ty) = member.child_by_field_name("type").and_then(|t| plain_type(t, text, generics)) else { continue };
        let mut inner = member.walk();
        for declarator in member.children_by_field_name("declarator", &mut inner) {
            if declarator.child_by_field_name("dimensions").is_none()
                && let Some(name) = declarator.child_by_field_name("name")
            {
                fields.insert(node_text(&name, text).to_string(), ty.clone());
            }
        }
    }
    fields
}

/// The parameters and locals of a method or constructor: name -> its type
/// when plain (`Document doc`, `var doc = new Document(..)`), `None` when it
/// is not or when two declarations of the name (in sibling blocks) disagree.
/// Every local, a lambda's parameters included, hides a field of its name.
fn typed_locals(method: Node<'_>, text: &str, generics: &[String]) -> HashMap<String, Option<String>> {
    let mut locals: HashMap<String, Option<String>> = HashMap::new();
    let mut declare =
        |name: Node<'_>, ty: Option<String>| note_class(&mut locals, node_text(&name, text).to_string(), ty);
    let mut stack = vec![method];
    while let Some(n) = stack.pop() {
        let ty = || n.child_by_field_name("type").and_then(|t| plain_type(t, text, generics));
        match n.kind() {
            "formal_parameter" | "enhanced_for_statement" | "resource" => {
                if let Some(name) = n.child_by_field_name("name") {
                    let ty = if n.child_by_field_name("dimensions").is_some() { None } else { ty() };
                    declare(name, ty);
                }
            }
            "spread_parameter" | "catch_formal_parameter" => {
                let mut cursor = n.walk();
                let names: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
                for part in names {
                    if part.kind() == "variable_declarator" {
                        if let Some(name) = part.child_by_field_name("name") {
                            declare(name, None);
                        }
                    } else if part.kind() == "identifier" {
                        declare(part, None);
                    }
                }
            }
            "local_variable_declaration" => {
                let declared = n.child_by_field_name("type");
                let is_var = declared.is_some_and(|t| node_text(&t, text) == "var");
                let mut cursor = n.walk();
                for declarator in n.children_by_field_name("declarator", &mut cursor) {
                    let Some(name) = declarator.child_by_field_name("name") else { continue };
                    let ty = if declarator.child_by_field_name("dimensions").is_some() {
                        None
                    } else if is_var {
                        declarator
                            .child_by_field_name("value")
                            .filter(|v| v.kind() == "object_creation_expression")
                            .and_then(|v| v.child_by_field_name("type"))
                            .and_then(|t| plain_type(t, text, generics))
                    } else {
                        ty()
                    };
                    declare(name, ty);
                }
            }
            "lambda_expression" => {
                if let Some(params) = n.child_by_field_name("parameters") {
                    if params.kind() == "identifier" {
                        declare(params, None);
                    } else if params.kind() == "inferred_parameters" {
                        let mut cursor = params.walk();
                        let names: Vec<Node<'_>> = params.named_children(&mut cursor).collect();
                        for name in names {
                            declare(name, None);
                        }
                    }
                }
            }
            _ => {}
        }
        let mut cursor = n.walk();
        stack.extend(n.named_children(&mut cursor));
    }
    locals
}

fn type_base_name(node: Node<'_>, text: &str) -> String {
    match node.kind() {
        "type_identifier" | "identifier" => node_text(&node, text).to_string(),
        "scoped_type_identifier" | "generic_type" => {
            let mut out = String::new();
            let mut depth = 0usize;
            for ch in node_text(&node, text).chars() {
                match ch {
                    '<' => depth += 1,
                    '>' => depth = depth.saturating_sub(1),
                    c if depth == 0 && !c.is_whitespace() => out.push(c),
                    _ => {}
                }
            }
            // Annotations on type parts (`a.@N B`) are rare; drop them.
            if out.contains('@') { out.rsplit('.').next().unwrap_or("").to_string() } else { out }
        }
        _ => String::new(),
    }
}

/// The receiver of a call as written: `obj`, `this`, `a.b`, `a.b()`.
fn callee(node: Node<'_>, text: &str, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "_".to_string();
    }
    match node.kind() {
        "identifier" | "this" | "super" | "type_identifier" => node_text(&node, text).to_string(),
        "field_access" => {
            let field = node.child_by_field_name("field").map_or("", |f| node_text(&f, text));
            let object =
                node.child_by_field_name("object").map_or_else(|| "_".to_string(), |o| callee(o, text, depth + 1));
            format!("{object}.{field}")
        }
        "scoped_identifier" => collapse(node_text(&node, text)),
        "method_invocation" => {
            let name = node.child_by_field_name("name").map_or("", |m| node_text(&m, text));
            match node.child_by_field_name("object") {
                Some(object) => format!("{}.{name}()", callee(object, text, depth + 1)),
                None => format!("{name}()"),
            }
        }
        "object_creation_expression" => {
            let ty = node.child_by_field_name("type").map(|t| type_base_name(t, text)).unwrap_or_default();
            if ty.is_empty() { "_".to_string() } else { ty }
        }
        "parenthesized_expression" => {
            node.named_child(0).map_or_else(|| "_".to_string(), |n| callee(n, text, depth + 1))
        }
        _ => "_".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const FIXTURE: &str = r#"/*
 * Copyright 2024 The Authors.
 */
package com.example.store;

import java.util.List;
import java.util.*;
import java.io.IOException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static com.example.util.Checks.*;
import com.example.model.Item;

/**
 * Keeps items in memory.
 *
 * @param <T> the item type
 */
@Service
public class Store<T extends Item> extends BaseStore<T> implements Saver, AutoCloseable {
    /** The most items a store holds. */
    private static final int MAX = 100;
    private final Map<String, T> items = new HashMap<>(), backup;
    private Item[] recent;

    /** Creates a store. */
    public Store(Map<String, T> items) {
        super(items);
        this.items = items;
    }

    public Store() {
        this(new HashMap<>());
    }

    /**
     * Builds a list.
     */
    @SafeVarargs
    public static <U> List<U> of(U... xs) throws IOException {
        Checks.notNull(xs);
        validate(xs.length);
        return List.of(xs);
    }

    @Override
    public void save(T item) {
        this.items.put(item.key(), item);
        new Auditor(this).record(item);
        Supplier<Store> make = Store::new;
        items.values().stream().map(Item::key).forEach(System.out::println);
        Runnable r = () -> flush();
    }

    /** A nested helper. */
    static class Cursor implements Iterator<Item> {
        private int pos;
        public boolean hasNext() { return pos < MAX; }
        public Item next() { return null; }
    }

    @Test
    void savesItems() {
        assertEquals(1, new Store<Item>().size());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2})
    void savesMany(int n) {}

    @org.junit.jupiter.api.RepeatedTest(3)
    void repeats() {}
}

/** Saves things. */
interface Saver extends AutoCloseable {
    int LIMIT = 10;
    void save(Item item);
    default int size() { return 0; }
}

/** Colors. */
enum Color implements Named {
    /** Red. */
    RED,
    GREEN("g") {
        @Override
        String label() { return "green"; }
    };

    private final String code;

    Color() { this("r"); }

    Color(String code) { this.code = code; }

    String label() { return code; }
}

/** A point. */
record Point(int x, int y) implements Shape {
    Point {
        Checks.positive(x);
    }

    double norm() { return Math.sqrt(x * x + y * y); }
}

@interface Marker {
    String value() default "";
}
"#;

    fn analyze(text: &str) -> FileAnalysis {
        JavaAnalyzer.analyze("java", "src/main/java/com/example/store/Store.java", text)
    }

    use crate::lang::test_support::assert_spans_are_declarations;

    fn assert_provenance(analysis: &FileAnalysis, text: &str) {
        assert_spans_are_declarations(analysis, text);
        for node in &analysis.nodes[1..] {
            let slice = node.span.slice(text);
            assert!(!slice.is_empty(), "{} has an empty span", node.symbol_path);
            let ok = slice.starts_with('@')
                || [
                    "public",
                    "private",
                    "protected",
                    "static",
                    "final",
                    "abstract",
                    "class",
                    "interface",
                    "enum",
                    "record",
                    "import",
                    "void",
                    "default",
                ]
                .iter()
                .any(|k| slice.starts_with(k))
                || slice.starts_with(node.name.as_str())
                || node.kind == NodeKind::Field
                || node.kind == NodeKind::Method;
            assert!(ok, "{} span starts with {:?}", node.symbol_path, &slice[..slice.len().min(20)]);
        }
    }

    #[test]
    fn calls_on_names_of_a_plain_type_are_written_against_it() {
        let text = r#"package org.jsoup.parser;

class Parser<T> {
    private final TreeBuilder treeBuilder;
    private ParseErrorList errors;
    private int count;
    private T value;

    Document parse(String html, Element context, int depth, T item) {
        Document doc = treeBuilder.parse(html);
        doc.select("a");
        context.attr("x");
        html.length();
        this.errors.clear();
        value.get();
        item.get();
        var reader = new CharacterReader(html);
        reader.consume();
        for (Node child : doc.childNodes()) {
            child.remove();
        }
        list.forEach(errors -> errors.add());
        Node[] nodes = doc.nodes();
        nodes.clone();
        return doc;
    }
}
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "TreeBuilder.parse",
                "Document.select",
                "Element.attr",
                "String.length",
                "ParseErrorList.clear",
                "value.get",
                "item.get",
                "CharacterReader",
                "CharacterReader.consume",
                "Document.childNodes",
                "Node.remove",
                "list.forEach",
                "errors.add",
                "Document.nodes",
                "nodes.clone"
            ]
        );
    }

    #[test]
    fn outline_of_a_realistic_file() {
        let analysis = analyze(FIXTURE);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        assert_provenance(&analysis, FIXTURE);
        assert_eq!(analysis.nodes[0].signature.as_deref(), Some("package com.example.store"));
        let of = analysis.nodes.iter().find(|n| n.symbol_path == "Store.of").unwrap();
        assert_eq!(of.signature.as_deref(), Some("public static <U> List<U> of(U... xs) throws IOException"));
        assert_eq!(of.doc.as_deref(), Some("Builds a list."));
        assert!(of.span.slice(FIXTURE).starts_with("@SafeVarargs"));
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn an_anonymous_class_a_field_holds_brings_its_methods() {
        let text = r#"package com.google.gson.internal.bind;

public final class TypeAdapters {
  public static final TypeAdapter<InetAddress> INET_ADDRESS =
      new TypeAdapter<InetAddress>() {
        private final Pattern ipAddressPattern = Pattern.compile(".*:.*");

        @Override
        public InetAddress read(JsonReader in) throws IOException {
          return InetAddress.getByName(in.nextString());
        }

        @Override
        public void write(JsonWriter out, InetAddress value) throws IOException {
          out.value(value.getHostAddress());
        }
      };

  public static final TypeAdapterFactory INET_ADDRESS_FACTORY = newFactory(InetAddress.class, INET_ADDRESS);
}
"#;
        let analysis = analyze(text);
        let node = |path: &str| analysis.nodes.iter().position(|n| n.symbol_path == path);
        let read = node("TypeAdapters.INET_ADDRESS.read").expect("read under its field");
        assert!(
            node("TypeAdapters.INET_ADDRESS.write").is_some()
                && node("TypeAdapters.INET_ADDRESS.ipAddressPattern").is_some()
        );
        assert_eq!(analysis.nodes[read].kind, NodeKind::Method);
        assert_eq!(analysis.nodes[read].span.start.line, 8, "from its annotations");
        // Calls count once, from the innermost declaration.
        let from = |target: &str| {
            analysis
                .references
                .iter()
                .filter(|r| r.kind == RefKind::Calls && r.target == target)
                .map(|r| r.from)
                .collect::<Vec<_>>()
        };
        assert_eq!(from("InetAddress.getByName"), [read]);
        assert_eq!(from("TypeAdapter"), [node("TypeAdapters.INET_ADDRESS").unwrap()]);
        assert_eq!(from("newFactory"), [node("TypeAdapters.INET_ADDRESS_FACTORY").unwrap()]);
    }

    #[test]
    fn package_info_doc_and_local_types() {
        let text = "/** The store package. */\npackage com.example.store;\n";
        let analysis = JavaAnalyzer.analyze("java", "com/example/store/package-info.java", text);
        assert_eq!(analysis.nodes[0].doc.as_deref(), Some("The store package."));
        let text = "class A {\n    void run() {\n        /** Local. */\n        class Local { void go() { work(); } }\n        new Runnable() { public void run() { tick(); } };\n    }\n}\n";
        let analysis = analyze(text);
        assert_provenance(&analysis, text);
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        assert_eq!(paths, ["", "A", "A.run", "A.run.Local", "A.run.Local.go"]);
        let local = &analysis.nodes[3];
        assert_eq!(local.doc.as_deref(), Some("Local."));
        let calls: Vec<(&str, &str)> = analysis
            .references
            .iter()
            .map(|r| (analysis.nodes[r.from].symbol_path.as_str(), r.target.as_str()))
            .collect();
        assert_eq!(calls, [("A.run.Local.go", "work"), ("A.run", "Runnable"), ("A.run", "tick")]);
    }

    #[test]
    fn plain_comments_right_above_document_what_has_no_javadoc() {
        let text = "class A {\n    // Follows redirects until the limit.\n    @Override\n    void follow() {}\n\n    /** Javadoc. */\n    void documented() {}\n\n    // eslint-disable-line\n    void directive() {}\n}\n";
        let analysis = analyze(text);
        let doc = |name: &str| analysis.nodes.iter().find(|n| n.name == name).unwrap().doc.clone();
        assert_eq!(doc("follow").as_deref(), Some("Follows redirects until the limit."));
        assert_eq!(doc("documented").as_deref(), Some("Javadoc."));
        assert_eq!(doc("directive"), None);
    }

    #[test]
    fn syntax_errors_still_extract() {
        let text = "package a;\n\n/** Broken. */\npublic class Broken {\n    void half( {\n        call();\n    }\n\n    /** Works. */\n    int works() { return helper(); }\n}\n";
        let analysis = analyze(text);
        assert!(!analysis.warnings.is_empty());
        assert_provenance(&analysis, text);
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut text = String::new();
        text.push_str(&"class C { ".repeat(2000));
        text.push_str(&"}".repeat(2000));
        text.push_str("\nclass D { void f() { int x = 1");
        text.push_str(&" + a.b()".repeat(20000));
        text.push_str("; y");
        text.push_str(&".c()".repeat(5000));
        text.push_str("; } }\n");
        let analysis = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || analyze(&text))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "D.f"));
    }

    #[test]
    fn garbage_never_panics() {
        for text in ["", "class", "import static ;", "enum E { A(", "@interface", "record R(", "é\u{feff}"] {
            let analysis = analyze(text);
            assert_provenance(&analysis, text);
        }
    }

    fn import(target: &str, names: &[&str]) -> Reference {
        Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: names.iter().map(|n| n.to_string()).collect(),
            system: false,
            span: Span::default(),
        }
    }

    #[test]
    fn resolves_class_paths() {
        let set: BTreeSet<String> = [
            "src/main/java/com/example/model/Item.java",
            "src/main/java/com/example/util/Checks.java",
            "src/main/java/com/example/store/Store.java",
            "src/main/java/com/example/Outer.java",
            "a/src/com/example/Dup.java",
            "b/src/com/example/Dup.java",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let ctx = ResolveContext::new(&set);
        let from = "src/main/java/com/example/store/Store.java";
        let r = |target: &str, names: &[&str]| JavaAnalyzer.resolve_import(&ctx, from, &import(target, names));
        assert_eq!(
            r("com.example.model.Item", &["Item"]).as_deref(),
            Some("src/main/java/com/example/model/Item.java")
        );
        assert_eq!(
            r("com.example.util.Checks.notNull", &["notNull"]).as_deref(),
            Some("src/main/java/com/example/util/Checks.java")
        );
        assert_eq!(r("com.example.util.Checks", &["*"]).as_deref(), Some("src/main/java/com/example/util/Checks.java"));
        assert_eq!(r("com.example.Outer.Inner", &["Inner"]).as_deref(), Some("src/main/java/com/example/Outer.java"));
        // Unresolved: the JDK, a package wildcard, ambiguity, lowercase members of unknown classes.
        assert_eq!(r("java.util.List", &["List"]), None);
        assert_eq!(r("java.util", &["*"]), None);
        assert_eq!(r("com.example.model", &["*"]), None);
        assert_eq!(r("com.example.Dup", &["Dup"]), None);
        assert_eq!(r("org.junit.jupiter.api.Assertions.assertEquals", &["assertEquals"]), None);
    }

    #[test]
    fn java_query_matches_the_hand_written_analyzer() {
        let path = "src/main/java/com/example/store/Store.java";
        let hand = analyze(FIXTURE);
        let query = crate::lang::languages::JAVA_QUERY.analyze("java", path, FIXTURE);
        let diff = crate::lang::languages::differences(&hand, &query);
        insta::assert_snapshot!(diff.join("\n"));
    }
}
