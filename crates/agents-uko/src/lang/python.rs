//! Python: modules, classes, functions and methods, fields (class-level
//! assignments and `self.x = ...` in `__init__`), module variables, imports,
//! pytest/unittest tests, docstrings, and calls/inheritance/type mentions.
//!
//! One parse and one pre-order walk per file, on an explicit stack (no
//! recursion, so deeply nested generated code cannot overflow a thread's
//! stack). Node spans include decorators (`@property` and all), so a span
//! starts with `@`, `def`, `async`, `class`, `import`, `from`, `type` or the
//! assigned name; signatures leave decorators out.
//!
//! Import `names`: for `from m import a, b as c` the original names, a
//! renamed one with its local name (`["a", "b as c"]`: the resolver looks
//! `b` up in `m` or as a submodule, and binds `c` in the importing file),
//! `["*"]` for a wildcard; for `import a.b.c` the name it binds (`["a"]`);
//! for `import a.b as c` the alias (`["c"]`).

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, TreeCursor};

use crate::lang::{
    Analyzer, FileBuilder, clean_doc, field_text, implemented_below, named_children, node_text, note_class,
    parse_or_warn, preceding_comments, signature_until, written_against,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use crate::resolve::{ResolveContext, dir_of};

pub struct PythonAnalyzer;

impl Analyzer for PythonAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["python"]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
        let Some(tree) = parse_or_warn(&mut builder, &language, "Python", text) else {
            return builder.finish();
        };
        let root = tree.root_node();
        let mut walker = Walker {
            text,
            b: builder,
            stack: Vec::new(),
            cursor: root.walk(),
            members: HashMap::new(),
            typed: HashMap::new(),
            fields: HashMap::new(),
            method_of: HashMap::new(),
        };
        walker.run(root);
        walker.b.finish()
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        resolve_python_import(ctx, from_path, &reference.target, &reference.names)
    }
}

/// What kind of block the walk is in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Module level, including `if`/`try`/`with` blocks at module level.
    Module,
    /// A class body; `test` for `Test*` classes and `*TestCase` subclasses.
    Class { test: bool },
    /// A function body; `init_of` is the class when this is its `__init__`.
    Function { init_of: Option<usize> },
}

#[derive(Clone, Copy)]
struct Ctx {
    /// The container of new definitions and the source of calls.
    parent: usize,
    /// The source of type mentions (a field or variable for its annotation).
    owner: usize,
    scope: Scope,
    /// Inside a type annotation: names are type mentions.
    in_type: bool,
}

struct Walker<'t, 'tree> {
    text: &'t str,
    b: FileBuilder,
    stack: Vec<(Node<'tree>, Ctx)>,
    cursor: TreeCursor<'tree>,
    /// Names already defined as fields (per class) or variables (key 0).
    members: HashMap<usize, HashSet<String>>,
    /// Per function node: its names whose class is plain ([`typed_locals`]).
    typed: HashMap<usize, HashMap<String, String>>,
    /// Per class node: its attributes whose class is plain ([`field_classes`]).
    fields: HashMap<usize, HashMap<String, String>>,
    /// Method node -> its class node.
    method_of: HashMap<usize, usize>,
}

impl<'t, 'tree> Walker<'t, 'tree> {
    fn run(&mut self, root: Node<'tree>) {
        if let Some(doc) = docstring(root, self.text) {
            self.b.set_doc(0, Some(doc));
        }
        let ctx = Ctx { parent: 0, owner: 0, scope: Scope::Module, in_type: false };
        self.push_children(root, ctx);
        while let Some((node, ctx)) = self.stack.pop() {
            self.visit(node, ctx);
        }
    }

    /// Queues the named children of `node`, to be visited in source order.
    fn push_children(&mut self, node: Node<'tree>, ctx: Ctx) {
        let start = self.stack.len();
        self.cursor.reset(node);
        if self.cursor.goto_first_child() {
            loop {
                let child = self.cursor.node();
                if child.is_named() && child.kind() != "comment" {
                    self.stack.push((child, ctx));
                }
                if !self.cursor.goto_next_sibling() {
                    break;
                }
            }
        }
        self.stack[start..].reverse();
    }

    /// Queues `nodes` (in source order), skipping absent ones.
    fn push_all(&mut self, nodes: &[(Option<Node<'tree>>, Ctx)]) {
        for (node, ctx) in nodes.iter().rev() {
            if let Some(node) = node {
                self.stack.push((*node, *ctx));
            }
        }
    }

    fn visit(&mut self, node: Node<'tree>, ctx: Ctx) {
        match node.kind() {
            "decorator" | "comment" | "future_import_statement" => {}
            "decorated_definition" => {
                let decorators: Vec<Node<'tree>> = named_children(node).filter(|c| c.kind() == "decorator").collect();
                match node.child_by_field_name("definition") {
                    Some(def) if def.kind() == "function_definition" => self.function(def, node, &decorators, ctx),
                    Some(def) if def.kind() == "class_definition" => self.class(def, node, &decorators, ctx),
                    _ => self.push_children(node, ctx),
                }
            }
            "function_definition" => self.function(node, node, &[], ctx),
            "class_definition" => self.class(node, node, &[], ctx),
            "import_statement" => self.import(node, ctx),
            "import_from_statement" => self.import_from(node, ctx),
            "type_alias_statement" => self.type_alias(node, ctx),
            "expression_statement" => self.statement(node, ctx),
            "type" => self.push_children(node, Ctx { in_type: true, ..ctx }),
            "identifier" | "attribute" if ctx.in_type => {
                if let Some(name) = dotted(node, self.text) {
                    self.mention(ctx.owner, name, node);
                }
            }
            "string" if ctx.in_type => {
                // A forward reference: `"Item"`, `"mod.Other"`.
                let inner = strip_quotes(node_text(&node, self.text));
                if is_dotted_name(inner) {
                    self.mention(ctx.owner, inner.to_string(), node);
                }
            }
            "generic_type" | "subscript" if ctx.in_type => {
                // `Literal["a", "b"]` holds values, not types.
                let base = node.named_child(0).and_then(|b| dotted(b, self.text));
                if !base.is_some_and(|b| b == "Literal" || b.ends_with(".Literal")) {
                    self.push_children(node, ctx);
                }
            }
            "keyword_argument" if ctx.in_type => {
                if let Some(value) = node.child_by_field_name("value") {
                    self.stack.push((value, ctx));
                }
            }
            "call" => {
                if let Some(callee) = node.child_by_field_name("function")
                    && let Some(name) = dotted(callee, self.text)
                    && !is_builtin_call(&name)
                {
                    // `ctx.fail()` with `ctx: Context` is `Context.fail`;
                    // `self.parser.parse_args()` with `self.parser = OptionParser()`
                    // is `OptionParser.parse_args`.
                    let typed =
                        written_against(&name, |object| self.typed.get(&ctx.parent)?.get(object)).or_else(|| {
                            let fields = self.fields.get(self.method_of.get(&ctx.parent)?)?;
                            written_against(name.strip_prefix("self.")?, |field| fields.get(field))
                        });
                    self.reference(ctx.parent, RefKind::Calls, typed.unwrap_or(name), node);
                }
                self.push_children(node, Ctx { in_type: false, ..ctx });
            }
            _ => self.push_children(node, ctx),
        }
    }

    fn function(&mut self, def: Node<'tree>, outer: Node<'tree>, decorators: &[Node<'tree>], ctx: Ctx) {
        let Some(name) = field_text(&def, "name", self.text) else {
            return self.push_children(def, ctx);
        };
        let kind = match ctx.scope {
            Scope::Class { test: true } if is_test_name(name) => NodeKind::Test,
            Scope::Class { .. } => NodeKind::Method,
            Scope::Module if is_test_name(name) => NodeKind::Test,
            _ => NodeKind::Function,
        };
        if overload_part(outer, self.text) == Some((name, false))
            && implemented_below(outer, name, |n| overload_part(n, self.text))
        {
            // A `typing.overload` stub above its implementation is no node of
            // its own: the implementation is the function (its docstring and
            // body), and the stubs, often longer than it (pydantic's six
            // forms of `Field`, 245 lines), only restate its parameters.
            return;
        }
        let body = def.child_by_field_name("body");
        let signature = signature_until(&def, body, self.text);
        let doc = body.and_then(|b| docstring(b, self.text));
        let index = self.b.add(ctx.parent, kind, name, Span::of_node(&outer), Some(signature), doc);
        let typed = typed_locals(def, self.text);
        if !typed.is_empty() {
            self.typed.insert(index, typed);
        }
        if matches!(ctx.scope, Scope::Class { .. }) {
            self.method_of.insert(index, ctx.parent);
        }
        self.decorators(index, decorators);
        let init_of = match ctx.scope {
            Scope::Class { .. } if name == "__init__" => Some(ctx.parent),
            _ => None,
        };
        let inner = Ctx { parent: index, owner: index, scope: Scope::Function { init_of }, in_type: false };
        self.push_all(&[
            (def.child_by_field_name("parameters"), inner),
            (def.child_by_field_name("return_type"), inner),
            (body, inner),
        ]);
    }

    fn class(&mut self, def: Node<'tree>, outer: Node<'tree>, decorators: &[Node<'tree>], ctx: Ctx) {
        let Some(name) = field_text(&def, "name", self.text) else {
            return self.push_children(def, ctx);
        };
        let body = def.child_by_field_name("body");
        let signature = signature_until(&def, body, self.text);
        let doc = body.and_then(|b| docstring(b, self.text));
        let index = self.b.add(ctx.parent, NodeKind::Class, name, Span::of_node(&outer), Some(signature), doc);
        self.decorators(index, decorators);
        let fields = body.map(|b| field_classes(b, self.text)).unwrap_or_default();
        if !fields.is_empty() {
            self.fields.insert(index, fields);
        }
        let mut test = name.starts_with("Test");
        if let Some(bases) = def.child_by_field_name("superclasses") {
            for base in named_children(bases) {
                // `Base`, `mod.Mixin`, `Generic[T]`; not `metaclass=Meta`.
                let base = if base.kind() == "subscript" { base.child_by_field_name("value") } else { Some(base) };
                if let Some(base) = base
                    && let Some(target) = dotted(base, self.text)
                {
                    test |= target.ends_with("TestCase");
                    self.reference(index, RefKind::Inherits, target, base);
                }
            }
        }
        let inner = Ctx { parent: index, owner: index, scope: Scope::Class { test }, in_type: false };
        self.push_all(&[(body, inner)]);
    }

    /// Records each decorator (`@property`, `@app.route(...)`) as a call from the decorated node.
    fn decorators(&mut self, index: usize, decorators: &[Node<'tree>]) {
        for decorator in decorators {
            let Some(mut expr) = decorator.named_child(0) else { continue };
            if expr.kind() == "call"
                && let Some(function) = expr.child_by_field_name("function")
            {
                expr = function;
            }
            if let Some(name) = dotted(expr, self.text)
                && !is_builtin_call(&name)
            {
                self.reference(index, RefKind::Calls, name, *decorator);
            }
        }
    }

    fn type_alias(&mut self, node: Node<'tree>, ctx: Ctx) {
        let left = node.child_by_field_name("left");
        let name_node = left.and_then(|l| {
            let inner = l.named_child(0)?;
            if inner.kind() == "generic_type" { inner.named_child(0) } else { Some(inner) }
        });
        let Some(name) = name_node.map(|n| node_text(&n, self.text)) else {
            return self.push_children(node, ctx);
        };
        let signature = signature_until(&node, None, self.text);
        let doc = comments_before(node, self.text);
        let index = self.b.add(ctx.parent, NodeKind::TypeAlias, name, Span::of_node(&node), Some(signature), doc);
        let inner = Ctx { owner: index, ..ctx };
        self.push_all(&[(node.child_by_field_name("right"), inner)]);
    }

    fn import(&mut self, node: Node<'tree>, ctx: Ctx) {
        for child in named_children(node) {
            let (module, bound) = match child.kind() {
                "dotted_name" => {
                    // `import a.b.c` binds `a`.
                    let module = compact(node_text(&child, self.text));
                    let bound = module.split('.').next().unwrap_or_default().to_string();
                    (module, bound)
                }
                "aliased_import" => {
                    let module = child.child_by_field_name("name").map(|n| compact(node_text(&n, self.text)));
                    let alias = field_text(&child, "alias", self.text).map(str::to_string);
                    match (module, alias) {
                        (Some(m), Some(a)) => (m, a),
                        _ => continue,
                    }
                }
                _ => continue,
            };
            self.import_node(node, ctx, module, vec![bound]);
        }
    }

    fn import_from(&mut self, node: Node<'tree>, ctx: Ctx) {
        let Some(module) = node.child_by_field_name("module_name") else { return };
        let module = compact(node_text(&module, self.text));
        let mut names = Vec::new();
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            if child.kind() == "wildcard_import" {
                names.push("*".to_string());
            } else if node.field_name_for_child(i as u32) == Some("name") {
                let original =
                    if child.kind() == "aliased_import" { child.child_by_field_name("name") } else { Some(child) };
                let alias =
                    if child.kind() == "aliased_import" { field_text(&child, "alias", self.text) } else { None };
                if let Some(original) = original {
                    let original = compact(node_text(&original, self.text));
                    names.push(match alias {
                        Some(alias) if alias != original => format!("{original} as {alias}"),
                        _ => original,
                    });
                }
            }
        }
        self.import_node(node, ctx, module, names);
    }

    fn import_node(&mut self, statement: Node<'tree>, ctx: Ctx, module: String, names: Vec<String>) {
        let span = Span::of_node(&statement);
        let index = self.b.add(ctx.parent, NodeKind::Import, &module, span, None, None);
        self.b.import(index, module, names, false, span);
    }

    /// An expression statement: assignments define variables and fields.
    fn statement(&mut self, node: Node<'tree>, ctx: Ctx) {
        let Some(assignment) = node.named_child(0).filter(|n| n.kind() == "assignment") else {
            return self.push_children(node, ctx);
        };
        // `x = y = 1` chains assignments in `right`.
        let mut targets = Vec::new();
        let mut current = Some(assignment);
        let mut last = assignment;
        while let Some(a) = current.filter(|a| a.kind() == "assignment") {
            if let Some(left) = a.child_by_field_name("left") {
                targets.push(left);
            }
            last = a;
            current = a.child_by_field_name("right");
        }
        let annotation = assignment.child_by_field_name("type");
        let mut owner = ctx.owner;
        let (container, kind) = match ctx.scope {
            Scope::Module => (Some(0), NodeKind::Variable),
            Scope::Class { .. } => (Some(ctx.parent), NodeKind::Field),
            Scope::Function { init_of } => (init_of, NodeKind::Field),
        };
        if let Some(container) = container {
            let in_init = matches!(ctx.scope, Scope::Function { .. });
            let mut names = Vec::new();
            for target in &targets {
                assigned_names(*target, in_init, self.text, &mut names);
            }
            if !names.is_empty() {
                let signature = annotation.and_then(|t| {
                    let left = assignment.child_by_field_name("left")?;
                    let raw = self.text.get(left.start_byte()..t.end_byte())?;
                    Some(raw.split_whitespace().collect::<Vec<_>>().join(" "))
                });
                let doc = attribute_docstring(node, self.text).or_else(|| comments_before(node, self.text));
                for name in names {
                    if !self.members.entry(container).or_default().insert(name.to_string()) {
                        continue;
                    }
                    let index = self.b.add(container, kind, name, Span::of_node(&node), signature.clone(), doc.clone());
                    if !in_init && owner == ctx.owner {
                        owner = index;
                    }
                }
            }
        }
        let value_ctx = Ctx { in_type: false, ..ctx };
        let mut queue: Vec<(Option<Node<'tree>>, Ctx)> = targets.iter().map(|t| (Some(*t), value_ctx)).collect();
        queue.push((annotation, Ctx { owner, in_type: true, ..ctx }));
        queue.push((last.child_by_field_name("right"), value_ctx));
        self.push_all(&queue);
    }

    fn reference(&mut self, from: usize, kind: RefKind, target: String, node: Node<'_>) {
        self.b.reference_once(from, kind, target, Span::of_node(&node));
    }

    fn mention(&mut self, from: usize, name: String, node: Node<'_>) {
        if !is_builtin_type(&name) {
            self.reference(from, RefKind::Mentions, name, node);
        }
    }
}

/// The name a function definition declares and whether it is an
/// implementation, not a `typing.overload` stub (`@overload`,
/// `@t.overload`, `@typing.overload`).
fn overload_part<'t>(node: Node<'_>, text: &'t str) -> Option<(&'t str, bool)> {
    let def = if node.kind() == "decorated_definition" { node.child_by_field_name("definition")? } else { node };
    if def.kind() != "function_definition" {
        return None;
    }
    let stub = node.kind() == "decorated_definition"
        && named_children(node).any(|d| {
            d.kind() == "decorator"
                && d.named_child(0)
                    .and_then(|e| dotted(e, text))
                    .is_some_and(|n| n.rsplit('.').next() == Some("overload"))
        });
    Some((field_text(&def, "name", text)?, !stub))
}

fn is_comment(node: &Node<'_>) -> bool {
    node.kind() == "comment"
}

/// The docstring of a module or block: its first statement, if a string literal.
fn docstring(block: Node<'_>, text: &str) -> Option<String> {
    let first = named_children(block).find(|n| n.kind() != "comment")?;
    if first.kind() != "expression_statement" || first.named_child_count() != 1 {
        return None;
    }
    let string = first.named_child(0).filter(|s| s.kind() == "string")?;
    clean_doc(node_text(&string, text))
}

/// The `#` comments right above `node`.
fn comments_before(node: Node<'_>, text: &str) -> Option<String> {
    // Finding siblings is linear in their number: look at the text first.
    let before = text.get(..node.start_byte())?.trim_end_matches([' ', '\t']);
    let before = before.strip_suffix('\n')?;
    let line = before.rsplit('\n').next()?;
    if !line.trim_start().starts_with('#') {
        return None;
    }
    preceding_comments(&node, text, is_comment)
}

/// An attribute docstring: a string literal statement right after an assignment.
fn attribute_docstring(statement: Node<'_>, text: &str) -> Option<String> {
    // Finding siblings is linear in their number: look at the text first.
    let after = text.get(statement.end_byte()..)?.trim_start();
    if !after.trim_start_matches(['r', 'R', 'u', 'U']).starts_with(['"', '\'']) {
        return None;
    }
    let next = statement.next_named_sibling()?;
    if next.kind() != "expression_statement"
        || next.named_child_count() != 1
        || next.start_position().row > statement.end_position().row + 1
    {
        return None;
    }
    let string = next.named_child(0).filter(|s| s.kind() == "string")?;
    clean_doc(node_text(&string, text))
}

/// The names an assignment target binds: identifiers (in tuples too) at
/// module or class level; `self.x` attributes in `__init__`.
fn assigned_names<'t>(target: Node<'_>, in_init: bool, text: &'t str, out: &mut Vec<&'t str>) {
    match target.kind() {
        "identifier" if !in_init => out.push(node_text(&target, text)),
        "attribute" if in_init => {
            let object = target.child_by_field_name("object");
            if object.is_some_and(|o| o.kind() == "identifier" && node_text(&o, text) == "self")
                && let Some(attr) = target.child_by_field_name("attribute")
            {
                out.push(node_text(&attr, text));
            }
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" => {
            for child in named_children(target) {
                assigned_names(child, in_init, text, out);
            }
        }
        _ => {}
    }
}

/// `name` or `a.b.c` when `node` is an identifier or a chain of attribute
/// accesses on one, without whitespace; `None` for anything else
/// (`a[0].b`). A call inside the chain names what it makes: `Store().save`
/// is `Store.save` (a class's constructor), `get_current_context().find_object`
/// keeps the call (a function's result, which resolution reads through its
/// declared return type).
fn dotted(node: Node<'_>, text: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    let mut current = node;
    // The next name is a called function's (`f` of `f().x`).
    let mut called = false;
    let push = |parts: &mut Vec<String>, name: &str, called: &mut bool| {
        // `super().__init__` reads the base class, as `super.__init__`.
        let function = std::mem::take(called) && name != "super" && !is_class_name(name);
        parts.push(if function { format!("{name}()") } else { name.to_string() });
    };
    loop {
        match current.kind() {
            "identifier" => {
                push(&mut parts, node_text(&current, text), &mut called);
                break;
            }
            "attribute" => {
                push(&mut parts, field_text(&current, "attribute", text)?, &mut called);
                current = current.child_by_field_name("object")?;
            }
            // Only a call of a plain (dotted) name.
            "call" if !parts.is_empty() => {
                current = current.child_by_field_name("function")?;
                if !matches!(current.kind(), "identifier" | "attribute") {
                    return None;
                }
                called = true;
            }
            _ => return None,
        }
    }
    parts.reverse();
    Some(parts.join("."))
}

/// The names of `def` whose class is plain, name -> type: parameters
/// annotated with a class (`ctx: Context`, `ctx: "Context"`,
/// `ctx: Context | None`, `t.Optional[Context]`) that the function never
/// rebinds (assignment, loop, `with ... as`, walrus, `global`/`nonlocal`),
/// and locals bound once only, by a class's constructor
/// (`session = sessions.Session()`, `with Session() as session`), with
/// an annotation (`ctx: Context = make()`), or by a function's result
/// (`ctx = get_current_context()`: the call, [`call_result`]). A nested function has its own
/// scope (and none of the outer one's names).
fn typed_locals(def: Node<'_>, text: &str) -> HashMap<String, String> {
    let mut typed = HashMap::new();
    let mut params = HashSet::new();
    if let Some(list) = def.child_by_field_name("parameters") {
        for param in named_children(list) {
            let mut names = HashSet::new();
            let name = match param.kind() {
                "typed_parameter" => param.named_child(0),
                _ => param.child_by_field_name("name"),
            };
            bound_names(name.unwrap_or(param), text, &mut names, 0);
            params.extend(names);
        }
    }
    for param in def.child_by_field_name("parameters").into_iter().flat_map(named_children) {
        let name = match param.kind() {
            "typed_parameter" => param.named_child(0).filter(|n| n.kind() == "identifier"),
            "typed_default_parameter" => param.child_by_field_name("name"),
            _ => None,
        };
        let ty = param.child_by_field_name("type").and_then(|t| t.named_child(0));
        if let (Some(name), Some(ty)) = (name, ty)
            && let Some(ty) = annotation_class(ty, text, 0)
        {
            typed.insert(node_text(&name, text).to_string(), ty);
        }
    }
    // How often the body binds each name, and the class of a binding that
    // names one (the last one seen: a name bound twice keeps none).
    let mut bindings: HashMap<&str, usize> = HashMap::new();
    let mut constructed: HashMap<&str, String> = HashMap::new();
    if let Some(body) = def.child_by_field_name("body") {
        let mut stack = vec![body];
        while let Some(n) = stack.pop() {
            let (bound, value) = match n.kind() {
                "assignment" => (n.child_by_field_name("left"), n.child_by_field_name("right")),
                "augmented_assignment" | "for_statement" | "for_in_clause" => (n.child_by_field_name("left"), None),
                "as_pattern" => (n.child_by_field_name("alias"), n.named_child(0)),
                "named_expression" => (n.child_by_field_name("name"), n.child_by_field_name("value")),
                // A lambda's calls are this function's; its parameters shadow.
                "lambda_parameters" => (Some(n), None),
                "global_statement" | "nonlocal_statement" => (Some(n), None),
                _ => (None, None),
            };
            if let Some(bound) = bound {
                let mut names = HashSet::new();
                bound_names(bound, text, &mut names, 0);
                for name in &names {
                    *bindings.entry(name).or_default() += 1;
                }
                let single = bound.kind() == "identifier"
                    || (bound.kind() == "as_pattern_target"
                        && bound.named_child(0).is_some_and(|c| c.kind() == "identifier"));
                // `with f() as x` binds what `__enter__` returns, which a
                // function's own result type does not say.
                let returned = matches!(n.kind(), "assignment" | "named_expression");
                let class = n
                    .child_by_field_name("type")
                    .and_then(|t| annotation_class(t.named_child(0).unwrap_or(t), text, 0))
                    .or_else(|| value.and_then(|v| constructor_class(v, text)))
                    .or_else(|| value.filter(|_| returned).and_then(|v| call_result(v, text)));
                if let (true, Some(class), [name]) = (single, class, names.into_iter().collect::<Vec<_>>().as_slice()) {
                    constructed.insert(name, class);
                }
            }
            // A nested function or class binds its names in its own scope.
            if !matches!(n.kind(), "function_definition" | "class_definition") {
                stack.extend(named_children(n));
            }
        }
    }
    typed.retain(|name, _| !bindings.contains_key(name.as_str()));
    for (name, class) in constructed {
        if bindings.get(name) == Some(&1) && !params.contains(name) {
            typed.insert(name.to_string(), class);
        }
    }
    typed
}

/// The attributes of a class whose class is plain, name -> class: annotated
/// in the class body or on `self` in its methods (`parser: OptionParser`,
/// `self.jar: CookieJar = ...`), whatever else is assigned to them, or else
/// set there only by that class's constructor (`self.parser =
/// OptionParser()`) or from a name of that class (`self.parser = parser`
/// with `parser: OptionParser`). Another kind of assignment to an attribute
/// without an annotation (`self.parser = None`, `self.a, self.b = ...`,
/// `self.n += 1`) leaves it out.
fn field_classes(body: Node<'_>, text: &str) -> HashMap<String, String> {
    let mut seen: HashMap<&str, Option<String>> = HashMap::new();
    let mut declared: HashMap<&str, String> = HashMap::new();
    let annotated = |assignment: Node<'_>| {
        let t = assignment.child_by_field_name("type")?;
        annotation_class(t.named_child(0).unwrap_or(t), text, 0)
    };
    // A constructor's class, or what a function returns (`self.session =
    // make_session()`: [`call_result`]).
    let constructed = |assignment: Node<'_>| {
        let value = assignment.child_by_field_name("right")?;
        constructor_class(value, text).or_else(|| call_result(value, text))
    };
    for statement in named_children(body) {
        let statement = match statement.kind() {
            "decorated_definition" => statement.child_by_field_name("definition").unwrap_or(statement),
            _ => statement,
        };
        match statement.kind() {
            "expression_statement" => {
                if let Some(a) = statement.named_child(0).filter(|a| a.kind() == "assignment")
                    && let Some(left) = a.child_by_field_name("left").filter(|l| l.kind() == "identifier")
                {
                    match annotated(a) {
                        Some(class) => {
                            declared.insert(node_text(&left, text), class);
                        }
                        None => note_class(&mut seen, node_text(&left, text), constructed(a)),
                    }
                }
            }
            "function_definition" => {
                // `self.parser = parser` with `parser: OptionParser` (or a local of that class).
                let locals = typed_locals(statement, text);
                let from_local = |assignment: Node<'_>| {
                    let right = assignment.child_by_field_name("right").filter(|r| r.kind() == "identifier")?;
                    locals.get(node_text(&right, text)).cloned()
                };
                let mut stack: Vec<Node<'_>> = statement.child_by_field_name("body").into_iter().collect();
                while let Some(n) = stack.pop() {
                    if matches!(n.kind(), "assignment" | "augmented_assignment") {
                        let Some(left) = n.child_by_field_name("left") else { continue };
                        let mut attributes = Vec::new();
                        self_attributes(left, text, &mut attributes, 0);
                        let single = left.kind() == "attribute";
                        let plain = single && n.kind() == "assignment";
                        for name in attributes {
                            match plain.then(|| annotated(n)).flatten() {
                                Some(class) => {
                                    declared.insert(name, class);
                                }
                                None => note_class(
                                    &mut seen,
                                    name,
                                    plain.then(|| constructed(n).or_else(|| from_local(n))).flatten(),
                                ),
                            }
                        }
                    }
                    if !matches!(n.kind(), "function_definition" | "class_definition" | "lambda") {
                        stack.extend(named_children(n));
                    }
                }
            }
            _ => {}
        }
    }
    // A declared type holds whatever is assigned.
    for (name, class) in declared {
        seen.insert(name, Some(class));
    }
    seen.into_iter().filter_map(|(name, class)| Some((name.to_string(), class?))).collect()
}

/// The `x` of each `self.x` a binding target assigns.
fn self_attributes<'t>(node: Node<'_>, text: &'t str, out: &mut Vec<&'t str>, depth: usize) {
    match node.kind() {
        "attribute" => {
            if node.child_by_field_name("object").is_some_and(|o| node_text(&o, text) == "self")
                && let Some(name) = node.child_by_field_name("attribute")
            {
                out.push(node_text(&name, text));
            }
        }
        "pattern_list" | "tuple_pattern" | "list_pattern" | "parenthesized_expression" if depth < 8 => {
            for child in named_children(node) {
                self_attributes(child, text, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// The class a constructor call names (`Session()`, `sessions.Session(...)`):
/// a call of a plain dotted name whose last part is capitalised
/// ([`is_class_name`]).
fn constructor_class(value: Node<'_>, text: &str) -> Option<String> {
    plain_callee(value, text).filter(|name| is_class_name(name.rsplit('.').next().unwrap_or(name)))
}

/// The callee of a call of a plain dotted name (`sessions.Session`,
/// `self.make_context`), or `None` for another expression.
fn plain_callee(value: Node<'_>, text: &str) -> Option<String> {
    if value.kind() != "call" {
        return None;
    }
    let callee = value.child_by_field_name("function")?;
    if !matches!(callee.kind(), "identifier" | "attribute") {
        return None;
    }
    dotted(callee, text)
}

/// Identifiers a binding target binds (not those inside `a.b` or `a[i]`).
fn bound_names<'t>(node: Node<'_>, text: &'t str, out: &mut HashSet<&'t str>, depth: usize) {
    match node.kind() {
        "identifier" => {
            out.insert(node_text(&node, text));
        }
        "attribute" | "subscript" => {}
        _ if depth < 32 => {
            for child in named_children(node) {
                bound_names(child, text, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// `typing`'s names and the like, which an annotation names without naming
/// a class of the code.
const TYPING: &[&str] = &[
    "Any",
    "Callable",
    "Optional",
    "Union",
    "Iterable",
    "Iterator",
    "Sequence",
    "Mapping",
    "MutableMapping",
    "Type",
    "Dict",
    "List",
    "Tuple",
    "Set",
    "FrozenSet",
    "Awaitable",
    "Coroutine",
    "Generator",
    "Self",
    "IO",
];

/// Capitalised generic containers and protocols of `typing`,
/// `collections.abc` and `collections` beyond [`TYPING`]: a function
/// returning one of them returns no class of the code.
const GENERIC_CONTAINERS: &[&str] = &[
    "AbstractSet",
    "Annotated",
    "AsyncGenerator",
    "AsyncIterable",
    "AsyncIterator",
    "ChainMap",
    "ClassVar",
    "Collection",
    "Container",
    "ContextManager",
    "AbstractContextManager",
    "AsyncContextManager",
    "Counter",
    "DefaultDict",
    "Deque",
    "Final",
    "ItemsView",
    "KeysView",
    "Literal",
    "Match",
    "MutableSequence",
    "MutableSet",
    "OrderedDict",
    "Pattern",
    "Reversible",
    "TypeGuard",
    "TypeIs",
    "ValuesView",
];

/// The class an annotation names, if it names one plainly.
fn annotation_class(node: Node<'_>, text: &str, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let class = |name: &str| {
        let last = name.rsplit('.').next().unwrap_or(name);
        (last.starts_with(|c: char| c.is_ascii_uppercase()) && !TYPING.contains(&last)).then(|| name.to_string())
    };
    match node.kind() {
        "identifier" | "attribute" => class(&dotted(node, text)?),
        "string" => {
            let inner = strip_quotes(node_text(&node, text));
            if is_dotted_name(inner) { class(inner) } else { None }
        }
        // `Context | None`
        "binary_operator" | "union_type" => {
            let parts: Vec<Node<'_>> =
                named_children(node).filter(|c| !matches!(c.kind(), "none") && node_text(c, text) != "None").collect();
            match parts.as_slice() {
                [one] => annotation_class(
                    one.named_child(0).filter(|_| one.kind() == "type").unwrap_or(*one),
                    text,
                    depth + 1,
                ),
                _ => None,
            }
        }
        // `Optional[Context]`
        "subscript" | "generic_type" => {
            let base = dotted(node.named_child(0)?, text)?;
            if base != "Optional" && !base.ends_with(".Optional") {
                return None;
            }
            let mut inner = node.named_child(1)?;
            while matches!(inner.kind(), "type_parameter" | "type") {
                inner = inner.named_child(0)?;
            }
            annotation_class(inner, text, depth + 1)
        }
        _ => None,
    }
}

/// The class a Python function's signature declares it returns, as
/// written: `Context` of `def f() -> Context`, `-> "Context"`, `-> Context |
/// None`, `-> t.Optional[Context]`, `-> core.Context`, `-> type['Context']`
/// (the class itself); `Self` for `-> Self`
/// (the class of the method, which resolution knows); none for a builtin, a
/// generic (`list[Context]`, `Iterator[Context]`), a union of two classes or
/// another of `typing`'s names. Calls on what the function returns
/// (`get_current_context().find_object`, and `ctx.find_object` after `ctx =
/// get_current_context()`) are then that class's.
pub fn result_type(signature: &str) -> Option<String> {
    let (_, ret) = signature.rsplit_once("->")?;
    // A forward reference: `"Context"`, `'Context | None'`.
    let unquoted = |s: &str| {
        let s = s.trim();
        ['"', '\'']
            .iter()
            .find_map(|&q| s.strip_prefix(q)?.strip_suffix(q))
            .map_or(s.to_string(), |inner| inner.trim().to_string())
    };
    let ret = unquoted(ret.trim().trim_end_matches(':'));
    let parts: Vec<String> = ret.split('|').map(unquoted).filter(|p| p != "None").collect();
    let [one] = parts.as_slice() else { return None };
    // `Optional[C]`; and `type[C]`, the class itself, whose class methods
    // are called on it.
    let one = ["Optional[", "t.Optional[", "typing.Optional[", "type[", "Type[", "t.Type[", "typing.Type["]
        .iter()
        .find_map(|prefix| one.strip_prefix(prefix)?.strip_suffix(']'))
        .map_or(one.clone(), unquoted);
    // A generic class of the code (`ParamType[t.Any]`): the class; a
    // container or `typing`'s own (`Iterator[C]`, `Deque[C]`) says nothing
    // of what is called on it.
    let one = match one.split_once('[') {
        Some((base, _)) if one.ends_with(']') => {
            let last = base.rsplit('.').next().unwrap_or(base);
            if TYPING.contains(&last) || GENERIC_CONTAINERS.contains(&last) {
                return None;
            }
            base
        }
        _ => one.as_str(),
    };
    if !is_dotted_name(one) {
        return None;
    }
    let last = one.rsplit('.').next().unwrap_or(one);
    if last == "Self" {
        return Some("Self".to_string());
    }
    (is_class_name(last) && !TYPING.contains(&last)).then(|| last.to_string())
}

/// What a call of a function returns, written as the call (`get_current_context()`
/// for `get_current_context(silent=True)`, `self.make_context()`): a call of
/// a plain dotted name whose last part is not capitalised (a capitalised one
/// is a class's constructor, [`constructor_class`]), which resolution reads
/// through the function's declared result ([`result_type`]).
fn call_result(value: Node<'_>, text: &str) -> Option<String> {
    let name = plain_callee(value, text)?;
    (!is_class_name(name.rsplit('.').next().unwrap_or(&name))).then(|| format!("{name}()"))
}

/// Whether a name is written as a class's: capitalised, after any leading
/// underscores (`Session`, `_ApplyInferredDiscriminator`).
fn is_class_name(name: &str) -> bool {
    name.trim_start_matches('_').starts_with(|c: char| c.is_ascii_uppercase())
}

/// `a . b` -> `a.b`; `..pkg` stays.
fn compact(s: &str) -> String {
    s.split_whitespace().collect()
}

fn strip_quotes(s: &str) -> &str {
    let s = s.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    for q in ["\"\"\"", "'''", "\"", "'"] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            return inner.trim();
        }
    }
    s
}

fn is_dotted_name(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|part| {
            let mut chars = part.chars();
            chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
                && chars.all(|c| c.is_alphanumeric() || c == '_')
        })
}

/// pytest and unittest naming: `test_x`, `test`, `testSomething`.
fn is_test_name(name: &str) -> bool {
    match name.strip_prefix("test") {
        Some(rest) => rest.is_empty() || rest.starts_with('_') || rest.starts_with(|c: char| c.is_ascii_uppercase()),
        None => false,
    }
}

/// Builtins whose calls say nothing about the project.
fn is_builtin_call(name: &str) -> bool {
    matches!(
        name,
        "print"
            | "len"
            | "range"
            | "str"
            | "int"
            | "float"
            | "bool"
            | "bytes"
            | "list"
            | "dict"
            | "set"
            | "frozenset"
            | "tuple"
            | "object"
            | "type"
            | "isinstance"
            | "issubclass"
            | "super"
            | "getattr"
            | "setattr"
            | "hasattr"
            | "delattr"
            | "iter"
            | "next"
            | "enumerate"
            | "zip"
            | "map"
            | "filter"
            | "sorted"
            | "reversed"
            | "min"
            | "max"
            | "sum"
            | "any"
            | "all"
            | "abs"
            | "round"
            | "open"
            | "repr"
            | "hash"
            | "id"
            | "callable"
            | "vars"
            | "dir"
            | "format"
            | "chr"
            | "ord"
            | "divmod"
            | "property"
            | "staticmethod"
            | "classmethod"
            | "Exception"
            | "ValueError"
            | "TypeError"
            | "KeyError"
            | "IndexError"
            | "RuntimeError"
            | "AttributeError"
            | "NotImplementedError"
            | "AssertionError"
            | "OSError"
    )
}

/// Builtin and `typing` types, which name nothing in the project, and
/// one-letter type variables (`T`).
fn is_builtin_type(name: &str) -> bool {
    if name.len() == 1 && name.starts_with(|c: char| c.is_ascii_uppercase()) {
        return true;
    }
    let last = match name.split_once('.') {
        Some(("typing" | "t" | "typing_extensions" | "collections" | "builtins", _)) => {
            name.rsplit('.').next().unwrap_or(name)
        }
        Some(_) => return false,
        None => name,
    };
    matches!(
        last,
        "int"
            | "str"
            | "float"
            | "bool"
            | "bytes"
            | "bytearray"
            | "complex"
            | "object"
            | "list"
            | "dict"
            | "set"
            | "frozenset"
            | "tuple"
            | "type"
            | "None"
            | "Any"
            | "Optional"
            | "Union"
            | "List"
            | "Dict"
            | "Set"
            | "FrozenSet"
            | "Tuple"
            | "Type"
            | "Callable"
            | "Iterable"
            | "Iterator"
            | "Generator"
            | "AsyncIterable"
            | "AsyncIterator"
            | "AsyncGenerator"
            | "Awaitable"
            | "Coroutine"
            | "Sequence"
            | "MutableSequence"
            | "Mapping"
            | "MutableMapping"
            | "Literal"
            | "Final"
            | "ClassVar"
            | "Annotated"
            | "Generic"
            | "Protocol"
            | "NoReturn"
            | "Never"
            | "Self"
            | "TypeAlias"
            | "TypeGuard"
            | "IO"
            | "TextIO"
            | "BinaryIO"
            | "Collection"
            | "DefaultDict"
            | "OrderedDict"
            | "Deque"
            | "Counter"
    )
}

/// Python import resolution; see [`PythonAnalyzer::resolve_import`].
///
/// Relative specifiers resolve against the importing file's package; absolute
/// ones against the resource root, the root above the importing file's
/// top-level package, `src/`, `lib/` and (for scripts outside packages) the
/// file's own directory, then by a unique path suffix of two or more segments,
/// then by ever shorter prefixes of the dotted name.
fn resolve_python_import(ctx: &ResolveContext<'_>, from_path: &str, target: &str, names: &[String]) -> Option<String> {
    // `b as c` is looked up as `b`.
    let names: Vec<String> = names.iter().map(|n| crate::resolve::imported_name(n).0.to_string()).collect();
    let names = names.as_slice();
    if target.starts_with('.') {
        let dots = target.len() - target.trim_start_matches('.').len();
        let rest = &target[dots..];
        if !rest.is_empty() && !is_dotted_name(rest) {
            return None;
        }
        let mut dir = dir_of(from_path);
        for _ in 1..dots {
            if dir.is_empty() {
                return None; // escapes the resource root
            }
            dir = dir_of(dir);
        }
        let module = join(dir, &rest.replace('.', "/"));
        return resolve_module(ctx, &module, rest.is_empty(), names);
    }
    if !is_dotted_name(target) {
        return None;
    }
    let segments: Vec<&str> = target.split('.').collect();
    // Submodule candidates: not the `a` that `import a.b` binds.
    let names: Vec<String> = names.iter().filter(|n| n.as_str() != segments[0]).cloned().collect();
    let roots = source_roots(ctx, from_path);
    for k in (1..=segments.len()).rev() {
        let rel = segments[..k].join("/");
        let names = if k == segments.len() { names.as_slice() } else { &[] };
        for root in &roots {
            if let Some(found) = resolve_module(ctx, &join(root, &rel), false, names) {
                return Some(found);
            }
        }
        if k >= 2 {
            // Unique across `rel.py` and `rel/__init__.py` (a `.pyi` stub
            // only where its `.py` is absent).
            let mut found: Vec<&str> = Vec::new();
            for suffix in [format!("{rel}.py"), format!("{rel}/__init__.py")] {
                found.extend(ctx.ending_with(&suffix));
            }
            for suffix in [format!("{rel}.pyi"), format!("{rel}/__init__.pyi")] {
                for stub in ctx.ending_with(&suffix) {
                    if !ctx.exists(&stub[..stub.len() - 1]) {
                        found.push(stub);
                    }
                }
            }
            if let [one] = found.as_slice() {
                return Some(one.to_string());
            }
        }
    }
    None
}

/// `module` (a `/` path without extension) as a module file or package;
/// for a package, `names` that are its submodules come first.
fn resolve_module(ctx: &ResolveContext<'_>, module: &str, package_only: bool, names: &[String]) -> Option<String> {
    if !package_only && !module.is_empty() {
        for ext in [".py", ".pyi"] {
            let candidate = format!("{module}{ext}");
            if ctx.exists(&candidate) {
                return Some(candidate);
            }
        }
    }
    let prefix = if module.is_empty() { String::new() } else { format!("{module}/") };
    for name in names {
        if name == "*" || !is_dotted_name(name) || name.contains('.') {
            continue;
        }
        let found = ctx.first_existing([
            format!("{prefix}{name}.py"),
            format!("{prefix}{name}.pyi"),
            format!("{prefix}{name}/__init__.py"),
            format!("{prefix}{name}/__init__.pyi"),
        ]);
        if found.is_some() {
            return found;
        }
    }
    ctx.first_existing([format!("{prefix}__init__.py"), format!("{prefix}__init__.pyi")])
}

fn is_package(ctx: &ResolveContext<'_>, dir: &str) -> bool {
    ctx.exists(&format!("{dir}/__init__.py")) || ctx.exists(&format!("{dir}/__init__.pyi"))
}

/// The directories absolute imports are tried under, in order.
fn source_roots<'p>(ctx: &ResolveContext<'_>, from_path: &'p str) -> Vec<&'p str> {
    let mut roots = vec![""];
    let own = dir_of(from_path);
    let mut dir = own;
    let mut top = None;
    while !dir.is_empty() && is_package(ctx, dir) {
        top = Some(dir);
        dir = dir_of(dir);
    }
    if let Some(top) = top {
        roots.push(dir_of(top));
    }
    roots.extend(["src", "lib"]);
    if top.is_none() {
        // A script outside any package imports its siblings.
        roots.push(own);
    }
    let mut seen = HashSet::new();
    roots.retain(|r| seen.insert(*r));
    roots
}

fn join(dir: &str, rel: &str) -> String {
    match (dir.is_empty(), rel.is_empty()) {
        (true, _) => rel.to_string(),
        (_, true) => dir.to_string(),
        _ => format!("{dir}/{rel}"),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn analyze(text: &str) -> FileAnalysis {
        PythonAnalyzer.analyze("python", "pkg/inventory.py", text)
    }

    const MODULE: &str = r#"#!/usr/bin/env python3
"""Inventory models.

Stores items and their prices.
"""
from __future__ import annotations

import os
import os.path as osp, sys
from . import utils
from ..core.base import Base as CoreBase, Mixin
from .sub import *
from typing import (Optional,
    List)

# Largest inventory size.
MAX_ITEMS: int = 10
a, b = 1, 2
a = 3
DEFAULT = make_default()


@dataclass
class Item(CoreBase, mod.Mixin, metaclass=Meta):
    """An item in stock.

    Has a name and a price.
    """

    count: int = 0
    kind = "plain"
    """The kind of item."""

    def __init__(self, name: str, tags: List[Tag] = None) -> None:
        self.name = name
        self.price: float = 0.0
        self.name = name.strip()
        self.a, self.count = 1, 2
        super().__init__()
        if tags:
            self.tags = tags

    @property
    def label(self) -> Optional["Label"]:
        '''The label.'''
        return os.path.join(self.name, helper(x)(y))

    @app.route("/save", methods=["POST"])
    async def save(self, *args, db: storage.Database, **kwargs) -> "mod.Result":
        await self.db.save(self)

        def inner(x):
            return validate(x)

        class Local:
            pass

        return lambda q: q

    class Meta:
        ordering = ["name"]


def test_item():
    assert Item("a").label


class TestItem(unittest.TestCase):
    def setUp(self):
        self.item = Item("b")

    def test_label(self):
        self.assertEqual(self.item.label, "b")


if __name__ == "__main__":
    main()
"#;

    #[test]
    fn calls_on_a_parameter_annotated_with_a_class_are_written_against_it() {
        let text = r#"
def handle(self, ctx: Context, cmd: "core.Command", opt: Context | None, o2: t.Optional[Group], n: int, a: Any, c2: Context):
    ctx.fail("x")
    cmd.make_context()
    opt.find_object()
    o2.command()
    n.bit_length()
    a.anything()
    ctx.obj.method()
    ctx.obj = 1
    c2.fail()
    for c2 in items:
        pass

    def inner(ctx):
        ctx.fail()
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "Context.fail",
                "core.Command.make_context",
                "Context.find_object",
                "Group.command",
                "n.bit_length",
                "a.anything",
                "ctx.obj.method",
                "c2.fail",
                "ctx.fail"
            ]
        );
    }

    #[test]
    fn calls_on_a_local_bound_once_by_a_constructor_are_written_against_its_class() {
        let text = r#"
def request(method, url, **kwargs):
    with sessions.Session() as session:
        return session.request(method=method, url=url)

def run(conn):
    jar = RequestsCookieJar()
    jar.set("a", 1)
    parser: OptionParser = make_parser()
    parser.parse_args()
    twice = Builder()
    twice = other()
    twice.build()
    conn = Connection()
    conn.close()
    lower = factory()
    lower.make()
    CONST = URL()
    CONST.join()
    a, b = Pair()
    a.first()
    cb = Callback()
    cb.fire()
    fn = lambda cb: cb.fire()

    def inner():
        jar.clear()
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "sessions.Session",
                "sessions.Session.request",
                "RequestsCookieJar",
                "RequestsCookieJar.set",
                "make_parser",
                "OptionParser.parse_args",
                "Builder",
                "other",
                "twice.build",
                "Connection",
                "conn.close",
                "factory",
                "factory().make",
                "URL",
                "URL.join",
                "Pair",
                "a.first",
                "Callback",
                "cb.fire",
                "jar.clear"
            ]
        );
    }

    #[test]
    fn calls_on_what_a_function_returns_keep_the_call() {
        let text = r#"
def decorator(f):
    ctx = get_current_context()
    ctx.find_object(object_type)
    get_current_context().ensure_object(dict)
    cmd = self.resolve_command(ctx, args)
    cmd.make_context(name)
    Store().save()
    _Apply(schema).apply(s)
    super().__init__(message)
    with make_session() as session:
        session.close()
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "get_current_context",
                "get_current_context().find_object",
                "get_current_context().ensure_object",
                "self.resolve_command",
                "self.resolve_command().make_context",
                "Store.save",
                "Store",
                "_Apply.apply",
                "_Apply",
                "super.__init__",
                "make_session",
                "session.close"
            ]
        );
    }

    #[test]
    fn a_signature_declares_the_class_its_function_returns() {
        let r = |s: &str| super::result_type(s);
        assert_eq!(r("def get_current_context(silent: bool = False) -> Context | None").as_deref(), Some("Context"));
        assert_eq!(r("def f() -> \"Context\"").as_deref(), Some("Context"));
        assert_eq!(r("def f() -> 'Context | None'").as_deref(), Some("Context"));
        assert_eq!(r("def f() -> None | core.Context").as_deref(), Some("Context"));
        assert_eq!(r("def f() -> t.Optional[Context]").as_deref(), Some("Context"));
        assert_eq!(r("def f(self) -> Self").as_deref(), Some("Self"));
        assert_eq!(r("def import_cached_field_info() -> type['FieldInfo']").as_deref(), Some("FieldInfo"));
        assert_eq!(r("def f() -> _Private").as_deref(), Some("_Private"));
        assert_eq!(r("def convert_type(ty: t.Any) -> ParamType[t.Any]").as_deref(), Some("ParamType"));
        assert_eq!(r("async def f(x: Callable[[int], str] = g) -> Response:").as_deref(), Some("Response"));
        for none in [
            "def f()",
            "def f() -> None",
            "def f() -> str",
            "def f() -> list[Context]",
            "def f() -> Iterator[Context]",
            "def f() -> t.Deque[Context]",
            "def f() -> dict[str, Context]",
            "def f() -> A | B",
            "def f() -> Any",
            "def f() -> t.Any",
        ] {
            assert_eq!(r(none), None, "{none}");
        }
    }

    #[test]
    fn calls_on_an_attribute_only_ever_set_to_one_class_are_written_against_it() {
        let text = r#"
class Command:
    formatter: HelpFormatter
    jar: CookieJar = CookieJar()

    def __init__(self, name, ctx2: Context):
        self.ctx2 = ctx2
        self.parser = OptionParser()
        self.ctx: Context = make()
        self.maybe = Builder()
        self.count = 0
        self.a, self.b = Pair(), Pair()
        self.session = requests.session()

    def reset(self):
        self.maybe = None
        self.count += 1
        self.formatter = make_formatter()

    def run(self):
        self.parser.parse_args()
        self.ctx.fail()
        self.formatter.write()
        self.jar.clear()
        self.maybe.build()
        self.a.first()
        self.parser.inner.deep()
        self.ctx2.exit()
        self.session.get(url)

    def nested(self):
        def helper():
            self.parser.exit()
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "CookieJar",
                "OptionParser",
                "make",
                "Builder",
                "Pair",
                "requests.session",
                "make_formatter",
                "OptionParser.parse_args",
                "Context.fail",
                "HelpFormatter.write",
                "CookieJar.clear",
                "self.maybe.build",
                "self.a.first",
                "self.parser.inner.deep",
                "Context.exit",
                "requests.session().get",
                "self.parser.exit"
            ]
        );
    }

    #[test]
    fn overload_stubs_above_their_implementation_are_no_nodes() {
        let text = r#"import typing as t
from typing import overload


@t.overload
def pick(x: int) -> int: ...


# the str form
@overload
def pick(x: str) -> str: ...


def pick(x):
    """Picks."""
    return x


class Box:
    @overload
    def get(self, i: int) -> int: ...
    @overload
    def get(self, i: slice) -> list: ...
    def get(self, i):
        return self.items[i]


@overload
def only_stubs(x: int) -> int: ...
@overload
def only_stubs(x: str) -> str: ...
"#;
        let analysis = analyze(text);
        let find = |path: &str| analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap();
        let pick = find("pick");
        assert!(pick.span.slice(text).starts_with("def pick(x):"), "{}", pick.span.slice(text));
        assert_eq!(pick.doc.as_deref(), Some("Picks."));
        assert!(find("Box.get").span.slice(text).starts_with("def get(self, i):"));
        let paths: Vec<&str> = analysis.nodes.iter().map(|n| n.symbol_path.as_str()).collect();
        assert!(!paths.iter().any(|p| p.starts_with("pick~") || p.starts_with("Box.get~")), "{paths:?}");
        // Stubs with no implementation below (a `.pyi` file's) stay nodes.
        assert!(paths.contains(&"only_stubs") && paths.contains(&"only_stubs~2"), "{paths:?}");
    }

    #[test]
    fn module_outline() {
        insta::assert_snapshot!(analyze(MODULE).outline());
    }

    #[test]
    fn modern_syntax_outline() {
        let text = r#"type Vec[T] = list[T]


class Box[T](Generic[T], Base[T]):
    value: "Item"

    def get(self, a: pkg.Thing | None, b: dict[str, Item]) -> T: ...


def g(x: Optional["Item"], mode: Literal["r", "w"] = "r") -> typing.List[Entry]:
    x = y = 3
    return x


try:
    import json
except ImportError:
    json = None
"#;
        insta::assert_snapshot!(analyze(text).outline());
    }

    #[test]
    fn syntax_error_keeps_partial_tree() {
        let text = "import os\n\ndef ok(a):\n    return a\n\ndef broken(:\n    pass\n\nclass After:\n    def m(self):\n        return ok(1)\n";
        let analysis = analyze(text);
        assert!(!analysis.warnings.is_empty());
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn spans_slice_back_to_declarations() {
        let analysis = analyze(MODULE);
        for node in &analysis.nodes[1..] {
            let slice = node.span.slice(MODULE);
            let first = slice.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '@')).next().unwrap();
            let ok = match node.kind {
                NodeKind::Function | NodeKind::Method | NodeKind::Test => {
                    first.starts_with('@') || first == "def" || first == "async"
                }
                NodeKind::Class => first.starts_with('@') || first == "class",
                NodeKind::Import => first == "import" || first == "from",
                // `a, b = 1, 2` defines both from one statement.
                NodeKind::Variable | NodeKind::Field => {
                    let targets = slice.split(['=', ':']).next().unwrap();
                    targets.split(',').any(|t| t.trim().trim_start_matches("self.") == node.name)
                }
                _ => false,
            };
            assert!(ok, "{:?} {} starts with {first:?}", node.kind, node.symbol_path);
            if let Some(sig) = &node.signature {
                assert!(!sig.starts_with('@'), "signature without decorators: {sig}");
            }
            // The outline's range is the span's.
            let (s, e) = (node.span.start, node.span.end);
            let lines: Vec<&str> = MODULE.split('\n').collect();
            let start = lines[..s.line as usize - 1].iter().map(|l| l.len() + 1).sum::<usize>() + s.column as usize;
            let end = lines[..e.line as usize - 1].iter().map(|l| l.len() + 1).sum::<usize>() + e.column as usize;
            assert_eq!(&MODULE[start..end], slice);
        }
        assert_eq!(analysis.nodes[0].doc.as_deref(), Some("Inventory models.\n\nStores items and their prices."));
    }

    #[test]
    fn a_signature_ends_at_its_colon_not_at_a_comment_above_the_body() {
        let text = "class A:\n    def __init__(\n        self, name: str,\n    ) -> None:\n        #: the name it has.\n        self.name = name\n";
        let analysis = analyze(text);
        let init = analysis.nodes.iter().find(|n| n.name == "__init__").unwrap();
        assert_eq!(init.signature.as_deref(), Some("def __init__( self, name: str, ) -> None"));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let text = format!("x = {}1{}\n", "(".repeat(20_000), ")".repeat(20_000));
        let analysis = analyze(&text);
        assert_eq!(analysis.nodes[1].name, "x");
    }

    fn resolve(files: &BTreeSet<String>, from: &str, target: &str, names: &[&str]) -> Option<String> {
        let ctx = ResolveContext::new(files);
        let reference = Reference {
            from: 0,
            kind: RefKind::Import,
            target: target.to_string(),
            names: names.iter().map(|n| n.to_string()).collect(),
            system: false,
            span: Span::default(),
        };
        PythonAnalyzer.resolve_import(&ctx, from, &reference)
    }

    #[test]
    fn resolves_imports() {
        let files: BTreeSet<String> = [
            "app/__init__.py",
            "app/models.py",
            "app/views/__init__.py",
            "app/views/list.py",
            "app/util/helpers.py",
            "app/util/strings.pyi",
            "src/core/__init__.py",
            "src/core/base.py",
            "src/core/sub/deep.py",
            "scripts/run.py",
            "scripts/helper.py",
            "a/logging.py",
            "b/logging.py",
            "one/two/config.py",
            "x/one/two/config.py",
            "vendor/google/protobuf/message.py",
            "setup.py",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let r = |from, target, names: &[&str]| resolve(&files, from, target, names);
        // Relative imports.
        assert_eq!(r("app/views/list.py", "..models", &["Item"]).as_deref(), Some("app/models.py"));
        assert_eq!(r("app/views/list.py", ".", &["list"]).as_deref(), Some("app/views/list.py"));
        assert_eq!(r("app/views/list.py", ".", &["nothing"]).as_deref(), Some("app/views/__init__.py"));
        assert_eq!(r("app/models.py", ".views", &["list"]).as_deref(), Some("app/views/list.py"));
        assert_eq!(r("app/models.py", ".views", &["View"]).as_deref(), Some("app/views/__init__.py"));
        assert_eq!(r("app/models.py", ".util", &["helpers"]).as_deref(), Some("app/util/helpers.py"));
        assert_eq!(r("app/models.py", ".util.strings", &["x"]).as_deref(), Some("app/util/strings.pyi"));
        assert_eq!(r("app/models.py", ".util", &["Other"]), None); // namespace package, no __init__
        assert_eq!(r("app/models.py", "..", &["setup"]).as_deref(), Some("setup.py"));
        assert_eq!(r("app/models.py", "...", &["x"]), None); // escapes the root
        assert_eq!(r("app/views/list.py", "....x", &[]), None);
        // Absolute imports from the root and from a source root.
        assert_eq!(r("scripts/run.py", "app.models", &["app"]).as_deref(), Some("app/models.py"));
        assert_eq!(r("scripts/run.py", "app.views", &["list"]).as_deref(), Some("app/views/list.py"));
        assert_eq!(r("scripts/run.py", "app", &["app"]).as_deref(), Some("app/__init__.py"));
        assert_eq!(r("scripts/run.py", "app.views", &["app"]).as_deref(), Some("app/views/__init__.py"));
        assert_eq!(r("src/core/sub/deep.py", "core.base", &["Base"]).as_deref(), Some("src/core/base.py"));
        assert_eq!(r("tests/test_x.py", "core", &["core"]).as_deref(), Some("src/core/__init__.py"));
        // A script's sibling; not from inside a package.
        assert_eq!(r("scripts/run.py", "helper", &["helper"]).as_deref(), Some("scripts/helper.py"));
        assert_eq!(r("app/models.py", "helper", &["helper"]), None);
        // Longest existing prefix of the dotted name.
        assert_eq!(r("scripts/run.py", "app.models.Item", &["app"]).as_deref(), Some("app/models.py"));
        // A unique suffix of two segments or more.
        assert_eq!(
            r("tools/x.py", "google.protobuf.message", &["M"]).as_deref(),
            Some("vendor/google/protobuf/message.py")
        );
        // Stdlib, third-party, ambiguous and bare names stay unresolved.
        assert_eq!(r("scripts/run.py", "os", &["os"]), None);
        assert_eq!(r("scripts/run.py", "os.path", &["join"]), None);
        assert_eq!(r("scripts/run.py", "numpy", &["np"]), None);
        assert_eq!(r("tools/x.py", "logging", &["logging"]), None);
        assert_eq!(r("tools/x.py", "two.config", &["config"]), None);
        assert_eq!(r("tools/x.py", "not a module", &[]), None);
    }
}
