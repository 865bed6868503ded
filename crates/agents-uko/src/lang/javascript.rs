//! JavaScript, TypeScript and TSX: classes, interfaces, enums, type aliases,
//! namespaces, functions (declarations and arrow functions or function
//! expressions bound to a name), methods, fields, module variables,
//! ES imports and re-exports, `require`/`import()`, Jest/Mocha/Vitest tests,
//! JSDoc, and calls/inheritance/type mentions.
//!
//! One parse and one pre-order walk per file, on an explicit stack (no
//! recursion: minified bundles nest deeply). Spans cover the whole
//! declaration including `export`, `declare` and decorators, so a span starts
//! with `@`, `export`, `declare`, the declaration keyword (`class`,
//! `function`, `async`, `const`, ...), a member's modifiers or name, or, for a
//! test, the `describe`/`it`/`test` call. Signatures start at `export` (or the
//! keyword) and leave decorators and bodies out.
//!
//! Import `names`: for `import {a, b as c}` and `export {a} from` the
//! original names (`["a", "b"]`); for a default or namespace import, `import
//! x = require()` or `const x = require()` the local name; for
//! `const {a, b: c} = require()` the original keys; `["*"]` for `export *`.
//! `require()` and `import()` become an import reference from the enclosing
//! node (the file, a function, a test) without an `Import` node.

use std::collections::{HashMap, HashSet};

use tree_sitter::{Node, TreeCursor};

use crate::lang::{
    Analyzer, FileBuilder, clean_doc, field_text, implemented_below, named_children, node_text, note_class,
    parse_or_warn, preceding_comments, signature_until, strip_quotes, written_against,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span};
use crate::resolve::{ResolveContext, dir_of, join_normalized};

pub struct JavaScriptAnalyzer;

impl Analyzer for JavaScriptAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["javascript", "typescript", "tsx"]
    }

    fn analyze(&self, language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let grammar: tree_sitter::Language = match language {
            "typescript" => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            "tsx" => tree_sitter_typescript::LANGUAGE_TSX.into(),
            _ => tree_sitter_javascript::LANGUAGE.into(),
        };
        let Some(tree) = parse_or_warn(&mut builder, &grammar, language, text) else {
            return builder.finish();
        };
        let root = tree.root_node();
        let mut walker = Walker {
            text,
            b: builder,
            stack: Vec::new(),
            cursor: root.walk(),
            fields: HashSet::new(),
            frames: vec![Frame { parent: 0, names: Vec::new() }],
            typed: HashMap::new(),
            field_types: HashMap::new(),
            method_of: HashMap::new(),
        };
        walker.run(root);
        walker.b.finish()
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        resolve_js_import(ctx, from_path, &reference.target)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Module level: `const`/`let`/`var` define variables.
    Module,
    /// A TS namespace or ambient module body: like module level.
    Namespace,
    /// A class body: members.
    Class,
    /// An interface body or object type literal of a type alias: members.
    Interface,
    /// A function, method or test body; `ctor_of` is the class of a constructor.
    Function { ctor_of: Option<usize> },
}

/// Code that is neither module level nor a class or interface body.
const NESTED: Scope = Scope::Function { ctor_of: None };

#[derive(Clone, Copy)]
struct Ctx {
    /// The container of new definitions and the source of calls.
    parent: usize,
    /// The source of type mentions (a field or variable for its annotation).
    owner: usize,
    scope: Scope,
    /// The innermost frame of type parameter names.
    frame: usize,
}

/// Type parameter names in scope (`T`, `K`), which are not type mentions.
struct Frame {
    parent: usize,
    names: Vec<String>,
}

/// A queued node; `lead` is the first decorator of a class member.
type Item<'tree> = (Node<'tree>, Ctx, Option<Node<'tree>>);

struct Walker<'t, 'tree> {
    text: &'t str,
    b: FileBuilder,
    stack: Vec<Item<'tree>>,
    cursor: TreeCursor<'tree>,
    /// (class, name) of fields already defined.
    fields: HashSet<(usize, String)>,
    frames: Vec<Frame>,
    /// Per function: its names whose class is plain ([`typed_locals`]).
    typed: HashMap<usize, HashMap<String, String>>,
    /// Per class: its fields whose class is plain ([`field_classes`]).
    field_types: HashMap<usize, HashMap<String, String>>,
    /// Method node -> its class node.
    method_of: HashMap<usize, usize>,
}

impl<'t, 'tree> Walker<'t, 'tree> {
    fn run(&mut self, root: Node<'tree>) {
        let ctx = Ctx { parent: 0, owner: 0, scope: Scope::Module, frame: 0 };
        self.push_children(root, ctx);
        while let Some((node, ctx, lead)) = self.stack.pop() {
            self.visit(node, ctx, lead);
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
                    self.stack.push((child, ctx, None));
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
                self.stack.push((*node, *ctx, None));
            }
        }
    }

    /// Queues an object literal's members: its methods and the properties
    /// whose values are functions as members of `variable` (a class body's
    /// scope), the rest as the variable's value (`ctx`).
    fn push_object_members(&mut self, object: Node<'tree>, variable: usize, ctx: Ctx) {
        let members = Ctx { parent: variable, owner: variable, scope: Scope::Class, ..ctx };
        let start = self.stack.len();
        for child in named_children(object) {
            let is_function = child.kind() == "method_definition"
                || (child.kind() == "pair" && child.child_by_field_name("value").is_some_and(is_function_value));
            self.stack.push((child, if is_function { members } else { ctx }, None));
        }
        self.stack[start..].reverse();
    }

    /// `parse: (s) => {..}` in an object literal a variable holds: a method.
    fn pair_method(&mut self, node: Node<'tree>, ctx: Ctx) {
        let (Some(key), Some(value)) = (node.child_by_field_name("key"), node.child_by_field_name("value")) else {
            return self.push_children(node, ctx);
        };
        let name = strip_quotes(node_text(&key, self.text));
        let body = value.child_by_field_name("body").map_or(value.end_byte(), |b| b.start_byte());
        let signature = header(self.text, node.start_byte(), body);
        let doc = jsdoc(node, self.text);
        let index = self.b.add(ctx.parent, NodeKind::Method, name, Span::of_node(&node), Some(signature), doc);
        self.method_of.insert(index, ctx.parent);
        self.function_body(value, index, ctx, None);
    }

    /// Queues the members of a class body or interface, each with its
    /// leading decorators.
    fn push_members(&mut self, body: Node<'tree>, ctx: Ctx) {
        let start = self.stack.len();
        let mut lead = None;
        for child in named_children(body) {
            match child.kind() {
                "decorator" => {
                    lead.get_or_insert(child);
                }
                "comment" => {}
                _ => self.stack.push((child, ctx, lead.take())),
            }
        }
        self.stack[start..].reverse();
    }

    fn visit(&mut self, node: Node<'tree>, ctx: Ctx, lead: Option<Node<'tree>>) {
        match node.kind() {
            "comment" | "decorator" | "hash_bang_line" => {}
            "import_statement" => self.import_statement(node, ctx),
            "export_statement" => self.export_statement(node, ctx),
            "expression_statement" => self.expression_statement(node, ctx),
            "call_expression" => self.call(node, ctx),
            "new_expression" => {
                if let Some(callee) = node.child_by_field_name("constructor")
                    && let Some(name) = dotted(callee, self.text)
                    && !is_builtin_call(&name)
                {
                    self.reference(ctx.parent, RefKind::Calls, name, node);
                }
                self.push_children(node, ctx);
            }
            "jsx_opening_element" | "jsx_self_closing_element" => {
                // `<Button />` renders (calls) a component; `<div>` is intrinsic.
                if let Some(name) = node.child_by_field_name("name")
                    && let Some(name) = dotted(name, self.text)
                    && name.starts_with(|c: char| c.is_ascii_uppercase())
                {
                    self.reference(ctx.parent, RefKind::Calls, name, node);
                }
                self.push_children(node, ctx);
            }
            "type_identifier" => {
                let name = node_text(&node, self.text);
                if !self.is_type_parameter(ctx.frame, name) {
                    self.mention(ctx.owner, name.to_string(), node);
                }
            }
            "nested_type_identifier" => {
                let name: String = node_text(&node, self.text).split_whitespace().collect();
                self.mention(ctx.owner, name, node);
            }
            "method_definition" | "method_signature" | "abstract_method_signature"
                if matches!(ctx.scope, Scope::Class | Scope::Interface) =>
            {
                self.method(node, lead, ctx)
            }
            "pair" if ctx.scope == Scope::Class => self.pair_method(node, ctx),
            "public_field_definition" | "field_definition" | "property_signature"
                if matches!(ctx.scope, Scope::Class | Scope::Interface) =>
            {
                self.field(node, lead, ctx)
            }
            _ => {
                if !self.declaration(node, node, ctx) {
                    // Code inside a statement or expression: not module level, not members.
                    let scope = if matches!(ctx.scope, Scope::Function { .. }) { ctx.scope } else { NESTED };
                    self.push_children(node, Ctx { scope, ..ctx });
                }
            }
        }
    }

    /// Handles a declaration `decl` whose whole extent (with `export`,
    /// `declare`, decorators) is `outer`; `false` if `decl` is none.
    fn declaration(&mut self, decl: Node<'tree>, outer: Node<'tree>, ctx: Ctx) -> bool {
        match decl.kind() {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                let name = field_text(&decl, "name", self.text).unwrap_or("default");
                self.function(decl, outer, name, ctx);
            }
            "class_declaration" | "abstract_class_declaration" => {
                let name = field_text(&decl, "name", self.text).unwrap_or("default");
                self.class(decl, outer, name, sig_start(outer), ctx);
            }
            // A named class expression (`foo(class A {})`, or a declaration
            // that error recovery parsed as one).
            "class" if decl.child_by_field_name("name").is_some() => {
                let name = field_text(&decl, "name", self.text).unwrap_or("default");
                self.class(decl, outer, name, sig_start(outer), ctx);
            }
            "interface_declaration" => self.interface(decl, outer, ctx),
            "enum_declaration" => self.enumeration(decl, outer, ctx),
            "type_alias_declaration" => self.type_alias(decl, outer, ctx),
            "internal_module" | "module" => self.namespace(decl, outer, ctx),
            "lexical_declaration" | "variable_declaration" => self.variables(decl, outer, ctx),
            "ambient_declaration" => {
                // `declare ...`; `declare global { ... }` holds a block.
                for child in named_children(decl) {
                    if !self.declaration(child, outer, ctx) {
                        self.push_children(child, ctx);
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn function(&mut self, node: Node<'tree>, outer: Node<'tree>, name: &str, ctx: Ctx) {
        let body = node.child_by_field_name("body");
        if body.is_none() && implemented_below(outer, name, |n| overload_part(n, self.text)) {
            return; // an overload: its lines open the implementation's node
        }
        let first = first_overload(outer, name, self.text);
        let signature = header(self.text, sig_start(outer), body.map_or(node.end_byte(), |b| b.start_byte()));
        let doc = first.and_then(|f| jsdoc(f, self.text)).or_else(|| jsdoc(outer, self.text));
        let span = first.map_or_else(|| Span::of_node(&outer), |f| span_between(f, outer));
        let index = self.b.add(ctx.parent, NodeKind::Function, name, span, Some(signature), doc);
        self.function_body(node, index, ctx, None);
    }

    /// Queues a function's parameters, types and body inside node `index`.
    fn function_body(&mut self, function: Node<'tree>, index: usize, ctx: Ctx, ctor_of: Option<usize>) {
        let typed = typed_locals(function, self.text);
        if !typed.is_empty() {
            self.typed.insert(index, typed);
        }
        let frame = self.frame(function, ctx.frame);
        let inner = Ctx { parent: index, owner: index, scope: Scope::Function { ctor_of }, frame };
        self.push_children(function, inner);
    }

    fn class(&mut self, node: Node<'tree>, outer: Node<'tree>, name: &str, sig_from: usize, ctx: Ctx) {
        let body = node.child_by_field_name("body");
        let signature = header(self.text, sig_from, body.map_or(node.end_byte(), |b| b.start_byte()));
        let doc = jsdoc(outer, self.text);
        let index = self.b.add(ctx.parent, NodeKind::Class, name, Span::of_node(&outer), Some(signature), doc);
        // Decorators of `@Dec export class` sit on the export statement.
        let mut decorators: Vec<Node<'tree>> = named_children(node).filter(|c| c.kind() == "decorator").collect();
        if outer != node {
            decorators.extend(named_children(outer).filter(|c| c.kind() == "decorator"));
        }
        self.decorators(index, &decorators);
        let fields = body.map(|b| field_classes(b, self.text)).unwrap_or_default();
        if !fields.is_empty() {
            self.field_types.insert(index, fields);
        }
        let frame = self.frame(node, ctx.frame);
        let inner = Ctx { parent: index, owner: index, scope: Scope::Class, frame };
        let heritage_ctx = Ctx { scope: NESTED, ..inner };
        // Queued last to first: members, heritage, type parameters.
        if let Some(body) = body {
            self.push_members(body, inner);
        }
        for heritage in named_children(node).filter(|c| c.kind() == "class_heritage") {
            for clause in named_children(heritage) {
                if matches!(clause.kind(), "extends_clause" | "implements_clause") {
                    for item in named_children(clause) {
                        self.heritage(index, item, heritage_ctx);
                    }
                } else {
                    // JavaScript: `extends <expression>`.
                    self.heritage(index, clause, heritage_ctx);
                }
            }
        }
        self.push_all(&[(node.child_by_field_name("type_parameters"), heritage_ctx)]);
    }

    /// One `extends`/`implements` item: a base type or, for anything else, an
    /// expression whose calls and type arguments still count.
    fn heritage(&mut self, index: usize, item: Node<'tree>, ctx: Ctx) {
        let base = if item.kind() == "generic_type" { item.child_by_field_name("name") } else { Some(item) };
        if let Some(base) = base
            && let Some(target) = dotted(base, self.text)
        {
            self.reference(index, RefKind::Inherits, target, base);
            if item.kind() == "generic_type" {
                self.push_all(&[(item.child_by_field_name("type_arguments"), ctx)]);
            }
            return;
        }
        self.push_all(&[(Some(item), ctx)]);
    }

    fn decorators(&mut self, index: usize, decorators: &[Node<'tree>]) {
        for decorator in decorators {
            let Some(mut expr) = decorator.named_child(0) else { continue };
            if expr.kind() == "call_expression"
                && let Some(function) = expr.child_by_field_name("function")
            {
                expr = function;
            }
            if let Some(name) = dotted(expr, self.text) {
                self.reference(index, RefKind::Calls, name, *decorator);
            }
        }
    }

    fn interface(&mut self, node: Node<'tree>, outer: Node<'tree>, ctx: Ctx) {
        let Some(name) = field_text(&node, "name", self.text) else {
            return self.push_children(node, ctx);
        };
        let body = node.child_by_field_name("body");
        let signature = header(self.text, sig_start(outer), body.map_or(node.end_byte(), |b| b.start_byte()));
        let doc = jsdoc(outer, self.text);
        let index = self.b.add(ctx.parent, NodeKind::Interface, name, Span::of_node(&outer), Some(signature), doc);
        let frame = self.frame(node, ctx.frame);
        let inner = Ctx { parent: index, owner: index, scope: Scope::Interface, frame };
        let constraints = Ctx { scope: NESTED, ..inner };
        if let Some(body) = body {
            self.push_members(body, inner);
        }
        for clause in named_children(node).filter(|c| c.kind() == "extends_type_clause") {
            for item in named_children(clause) {
                self.heritage(index, item, constraints);
            }
        }
        self.push_all(&[(node.child_by_field_name("type_parameters"), constraints)]);
    }

    fn enumeration(&mut self, node: Node<'tree>, outer: Node<'tree>, ctx: Ctx) {
        let Some(name) = field_text(&node, "name", self.text) else {
            return self.push_children(node, ctx);
        };
        let body = node.child_by_field_name("body");
        let signature = header(self.text, sig_start(outer), body.map_or(node.end_byte(), |b| b.start_byte()));
        let doc = jsdoc(outer, self.text);
        let index = self.b.add(ctx.parent, NodeKind::Enum, name, Span::of_node(&outer), Some(signature), doc);
        for member in body.into_iter().flat_map(named_children) {
            let (name, signature) = match member.kind() {
                "enum_assignment" => match member.child_by_field_name("name") {
                    Some(n) => (n, Some(header(self.text, member.start_byte(), member.end_byte()))),
                    None => continue,
                },
                "property_identifier" | "string" => (member, None),
                _ => continue,
            };
            let name = strip_quotes(node_text(&name, self.text));
            let doc = jsdoc(member, self.text);
            self.b.add(index, NodeKind::Field, name, Span::of_node(&member), signature, doc);
        }
    }

    fn type_alias(&mut self, node: Node<'tree>, outer: Node<'tree>, ctx: Ctx) {
        let Some(name) = field_text(&node, "name", self.text) else {
            return self.push_children(node, ctx);
        };
        let value = node.child_by_field_name("value");
        let start = sig_start(outer);
        // `type Id = string | number` whole; a long or object type stops at `=`.
        let mut signature = header(self.text, start, node.end_byte());
        if let Some(value) = value
            && (value.kind() == "object_type" || signature.len() > 160)
        {
            signature = format!("{} =", header(self.text, start, value.start_byte()));
        }
        let doc = jsdoc(outer, self.text);
        let index = self.b.add(ctx.parent, NodeKind::TypeAlias, name, Span::of_node(&outer), Some(signature), doc);
        let frame = self.frame(node, ctx.frame);
        match value {
            Some(value) if value.kind() == "object_type" => {
                self.push_members(value, Ctx { parent: index, owner: index, scope: Scope::Interface, frame });
            }
            _ => {
                let inner = Ctx { owner: index, scope: NESTED, frame, ..ctx };
                self.push_all(&[(value, inner)]);
            }
        }
        let constraints = Ctx { owner: index, scope: NESTED, frame, ..ctx };
        self.push_all(&[(node.child_by_field_name("type_parameters"), constraints)]);
    }

    fn namespace(&mut self, node: Node<'tree>, outer: Node<'tree>, ctx: Ctx) {
        let Some(name_node) = node.child_by_field_name("name") else {
            return self.push_children(node, ctx);
        };
        let name: String = strip_quotes(node_text(&name_node, self.text)).split_whitespace().collect();
        let body = node.child_by_field_name("body");
        let signature = header(self.text, sig_start(outer), body.map_or(node.end_byte(), |b| b.start_byte()));
        let doc = jsdoc(outer, self.text);
        let index = self.b.add(ctx.parent, NodeKind::Namespace, &name, Span::of_node(&outer), Some(signature), doc);
        if let Some(body) = body {
            self.push_children(body, Ctx { parent: index, owner: index, scope: Scope::Namespace, ..ctx });
        }
    }

    /// `const`/`let`/`var`: functions and classes bound to a name anywhere,
    /// variables at module or namespace level, `require()` imports.
    fn variables(&mut self, node: Node<'tree>, outer: Node<'tree>, ctx: Ctx) {
        let declarators: Vec<Node<'tree>> =
            named_children(node).filter(|c| c.kind() == "variable_declarator").collect();
        let Some(first) = declarators.first() else {
            return self.push_children(node, ctx);
        };
        let head = header(self.text, sig_start(outer), first.start_byte());
        let single = declarators.len() == 1;
        let doc = jsdoc(outer, self.text);
        let module_level = matches!(ctx.scope, Scope::Module | Scope::Namespace);
        for declarator in declarators.iter().copied() {
            let span_node = if single { outer } else { declarator };
            let name_node = declarator.child_by_field_name("name");
            let value = declarator.child_by_field_name("value");
            let simple_name = name_node.filter(|n| n.kind() == "identifier").map(|n| node_text(&n, self.text));
            // `export const $ZodUnion = core.$constructor("$ZodUnion", (inst, def) => {..})`,
            // `const handler = wrap(async (req) => {..})`: the function a call wraps.
            let wrapped = value.map(unwrap_value).and_then(wrapped_function).filter(|_| module_level);
            let function = value.filter(|v| is_function_value(*v)).or(wrapped);
            match (simple_name, value) {
                (Some(name), Some(value)) if function.is_some() => {
                    let function = function.unwrap_or(value);
                    let body = function.child_by_field_name("body").map_or(function.end_byte(), |b| b.start_byte());
                    let signature = format!("{head} {}", header(self.text, declarator.start_byte(), body));
                    let index = self.b.add(
                        ctx.parent,
                        NodeKind::Function,
                        name,
                        Span::of_node(&span_node),
                        Some(signature),
                        doc.clone(),
                    );
                    let kind = declarator.child_by_field_name("type");
                    if function == value {
                        self.function_body(value, index, ctx, None);
                        self.push_all(&[(kind, Ctx { parent: index, owner: index, ..ctx })]);
                    } else {
                        // The wrapping call and everything in it, the function's body included, from the node.
                        let inner = Ctx { parent: index, owner: index, scope: NESTED, ..ctx };
                        self.push_all(&[(kind, inner), (Some(value), inner)]);
                    }
                }
                (Some(name), Some(value)) if value.kind() == "class" => {
                    let from = if single { sig_start(outer) } else { declarator.start_byte() };
                    self.class(value, span_node, name, from, ctx);
                }
                _ => {
                    let mut owner = ctx.owner;
                    if module_level && let Some(name_node) = name_node {
                        let mut names = Vec::new();
                        pattern_names(name_node, self.text, &mut names);
                        let end = value.map_or(declarator.end_byte(), |v| v.start_byte());
                        let signature = format!("{head} {}", header(self.text, declarator.start_byte(), end));
                        for name in names {
                            let span = Span::of_node(&span_node);
                            let index = self.b.add(
                                ctx.parent,
                                NodeKind::Variable,
                                name,
                                span,
                                Some(signature.clone()),
                                doc.clone(),
                            );
                            if owner == ctx.owner {
                                owner = index;
                            }
                        }
                    }
                    if let Some(value) = value
                        && let Some(spec) = import_call(value, self.text)
                    {
                        // `const x = require('./x')`, `const {a} = await import('./a')`.
                        let names = name_node.map(|n| imported_names(n, self.text)).unwrap_or_default();
                        self.b.import(ctx.parent, spec, names, false, Span::of_node(&value));
                        self.push_all(&[(declarator.child_by_field_name("type"), Ctx { owner, ..ctx })]);
                        continue;
                    }
                    if let (Some(local), Some(value)) = (simple_name, value)
                        && let Some((spec, member)) = import_member(value, self.text)
                    {
                        // `const etag = require('./utils').compileETag`:
                        // the module's `compileETag`, bound to `etag`.
                        let name = if member == local { local.to_string() } else { format!("{member} as {local}") };
                        self.b.import(ctx.parent, spec, vec![name], false, Span::of_node(&value));
                        self.push_all(&[(declarator.child_by_field_name("type"), Ctx { owner, ..ctx })]);
                        continue;
                    }
                    let typed = Ctx { owner, ..ctx };
                    // `export const service = { validate(o) {..}, parse: (s) => {..} }`:
                    // the object's functions are the variable's methods.
                    let object = value.map(unwrap_value).filter(|v| v.kind() == "object" && has_function_member(*v));
                    match object {
                        Some(object) if owner != ctx.owner => {
                            self.push_all(&[(declarator.child_by_field_name("type"), typed)]);
                            self.push_object_members(object, owner, typed);
                        }
                        _ => self.push_all(&[(declarator.child_by_field_name("type"), typed), (value, typed)]),
                    }
                }
            }
        }
    }

    fn method(&mut self, node: Node<'tree>, lead: Option<Node<'tree>>, ctx: Ctx) {
        let Some(name) = node.child_by_field_name("name").map(|n| strip_quotes(node_text(&n, self.text))) else {
            return self.push_children(node, ctx);
        };
        let body = node.child_by_field_name("body");
        if body.is_none() && ctx.scope == Scope::Class && implemented_below(node, name, |n| overload_part(n, self.text))
        {
            return; // an overload: its lines open the implementation's node
        }
        let own = lead.unwrap_or(node);
        let first = first_overload(own, name, self.text);
        let signature = signature_until(&node, body, self.text);
        let doc = first.and_then(|f| jsdoc(f, self.text)).or_else(|| jsdoc(own, self.text));
        let span = span_between(first.unwrap_or(own), node);
        let index = self.b.add(ctx.parent, NodeKind::Method, name, span, Some(signature), doc);
        self.member_decorators(index, lead, node);
        if ctx.scope == Scope::Class {
            self.method_of.insert(index, ctx.parent);
        }
        let ctor_of = (name == "constructor" && ctx.scope == Scope::Class).then_some(ctx.parent);
        if let Some(class) = ctor_of {
            self.parameter_properties(node, class);
        }
        self.function_body(node, index, ctx, ctor_of);
    }

    /// TS `constructor(private readonly db: Db)` declares field `db`.
    fn parameter_properties(&mut self, ctor: Node<'tree>, class: usize) {
        let Some(params) = ctor.child_by_field_name("parameters") else { return };
        for param in named_children(params) {
            let mut cursor = param.walk();
            let is_property = param
                .children(&mut cursor)
                .any(|c| matches!(c.kind(), "accessibility_modifier" | "readonly" | "override_modifier"));
            let Some(pattern) = param.child_by_field_name("pattern").filter(|p| p.kind() == "identifier") else {
                continue;
            };
            let name = node_text(&pattern, self.text);
            if is_property && self.fields.insert((class, name.to_string())) {
                let signature = header(self.text, param.start_byte(), param.end_byte());
                self.b.add(class, NodeKind::Field, name, Span::of_node(&param), Some(signature), None);
            }
        }
    }

    fn member_decorators(&mut self, index: usize, lead: Option<Node<'tree>>, member: Node<'tree>) {
        let mut decorators = Vec::new();
        let mut current = lead;
        while let Some(node) = current.filter(|n| *n != member) {
            if node.kind() == "decorator" {
                decorators.push(node);
            }
            current = node.next_named_sibling();
        }
        self.decorators(index, &decorators);
    }

    /// A class field or property, an interface property; one holding an
    /// arrow function or function expression is a method.
    fn field(&mut self, node: Node<'tree>, lead: Option<Node<'tree>>, ctx: Ctx) {
        let name_node = node.child_by_field_name("name").or_else(|| node.child_by_field_name("property"));
        let Some(name) = name_node.map(|n| strip_quotes(node_text(&n, self.text))) else {
            return self.push_children(node, ctx);
        };
        let first = lead.unwrap_or(node);
        let doc = jsdoc(first, self.text);
        let value = node.child_by_field_name("value");
        let span = span_between(first, node);
        if let Some(value) = value.filter(|v| matches!(v.kind(), "arrow_function" | "function_expression")) {
            let body = value.child_by_field_name("body").map_or(value.end_byte(), |b| b.start_byte());
            let signature = header(self.text, node.start_byte(), body);
            let index = self.b.add(ctx.parent, NodeKind::Method, name, span, Some(signature), doc);
            self.member_decorators(index, lead, node);
            self.function_body(value, index, ctx, None);
            return;
        }
        if !self.fields.insert((ctx.parent, name.to_string())) {
            return self.push_children(node, Ctx { scope: NESTED, ..ctx });
        }
        let end = value.map_or(node.end_byte(), |v| v.start_byte());
        let signature = header(self.text, node.start_byte(), end);
        let index = self.b.add(ctx.parent, NodeKind::Field, name, span, Some(signature), doc);
        self.member_decorators(index, lead, node);
        let type_ctx = Ctx { owner: index, scope: NESTED, ..ctx };
        self.push_all(&[(node.child_by_field_name("type"), type_ctx), (value, Ctx { scope: NESTED, ..ctx })]);
    }

    fn expression_statement(&mut self, node: Node<'tree>, ctx: Ctx) {
        let Some(expr) = node.named_child(0) else { return };
        if expr.kind() == "internal_module" {
            // `namespace A.B { ... }` parses as an expression statement.
            self.namespace(expr, node, ctx);
            return;
        }
        if ctx.scope == Scope::Module && expr.kind() == "call_expression" && self.named_callback(expr, node, ctx) {
            return;
        }
        // A chain (`req.get = req.header = function header() {}`) binds its last
        // value to every name: the innermost assignment holds the function.
        let mut innermost = expr;
        while let Some(inner) = innermost.child_by_field_name("right").filter(|r| r.kind() == "assignment_expression") {
            innermost = inner;
        }
        let expr = if innermost.child_by_field_name("right").is_some_and(is_function_value) { innermost } else { expr };
        if expr.kind() == "assignment_expression"
            && let (Some(left), Some(right)) = (expr.child_by_field_name("left"), expr.child_by_field_name("right"))
            && left.kind() == "member_expression"
            && let (Some(object), Some(property)) =
                (left.child_by_field_name("object"), left.child_by_field_name("property"))
        {
            let object = node_text(&object, self.text);
            let name = node_text(&property, self.text);
            match ctx.scope {
                // CommonJS: `exports.f = function () {}`, `module.exports.g = () => {}`,
                // and functions hung on an object at the top level (`res.send =
                // function send() {}`, `Foo.prototype.bar = function () {}`): each is
                // a function named by its property.
                Scope::Module if matches!(object, "exports" | "module.exports") || is_function_value(right) => {
                    if is_function_value(right) {
                        let index = self.statement_function(node, right, name, ctx);
                        self.function_body(right, index, ctx, None);
                        return;
                    }
                    if right.kind() == "class" && matches!(object, "exports" | "module.exports") {
                        self.class(right, node, name, node.start_byte(), ctx);
                        return;
                    }
                }
                // `this.x = ...` in a constructor declares field `x`.
                Scope::Function { ctor_of: Some(class) }
                    if object == "this"
                        && property.kind() == "property_identifier"
                        && self.fields.insert((class, name.to_string())) =>
                {
                    self.b.add(class, NodeKind::Field, name, Span::of_node(&node), None, None);
                }
                _ => {}
            }
        }
        self.push_children(node, ctx);
    }

    /// A call at the top of a file handed a named function expression
    /// (`defineGetter(req, 'protocol', function protocol() {})`): the statement
    /// defines function `protocol`, which the call registers somewhere. False
    /// when the call is not one (nothing is added then).
    fn named_callback(&mut self, call: Node<'tree>, statement: Node<'tree>, ctx: Ctx) -> bool {
        let (Some(function), Some(arguments)) =
            (call.child_by_field_name("function"), call.child_by_field_name("arguments"))
        else {
            return false;
        };
        if is_test_callee(function, self.text) || import_call(call, self.text).is_some() {
            return false;
        }
        let mut cursor = arguments.walk();
        let Some((value, name)) = arguments
            .named_children(&mut cursor)
            .filter(|a| a.kind() == "function_expression")
            .find_map(|a| a.child_by_field_name("name").map(|n| (a, node_text(&n, self.text))))
        else {
            return false;
        };
        let index = self.statement_function(statement, value, name, ctx);
        self.callee(index, function, call);
        let others = Ctx { parent: index, owner: index, scope: NESTED, ..ctx };
        let mut cursor = arguments.walk();
        let rest: Vec<_> =
            arguments.named_children(&mut cursor).filter(|a| *a != value).map(|a| (Some(a), others)).collect();
        self.push_all(&rest);
        self.function_body(value, index, ctx, None);
        true
    }

    /// Function `name`, whose value `value` a whole top-level `statement`
    /// binds: the statement is its span, its header up to the body its
    /// signature, the JSDoc above it its doc.
    fn statement_function(&mut self, statement: Node<'tree>, value: Node<'tree>, name: &str, ctx: Ctx) -> usize {
        let body = value.child_by_field_name("body").map_or(value.end_byte(), |b| b.start_byte());
        let signature = header(self.text, statement.start_byte(), body);
        let doc = jsdoc(statement, self.text);
        self.b.add(ctx.parent, NodeKind::Function, name, Span::of_node(&statement), Some(signature), doc)
    }

    /// A `Calls` reference from node `from` to the callee `function` of
    /// `call`, unless it is a builtin (`console.log`).
    /// `session.request()` with `session: Session` (or `new Session()`) is
    /// `Session.request`; `this.store.get()` in a method, with the class's
    /// field `store: DataStore`, is `DataStore.get`.
    fn callee(&mut self, from: usize, function: Node<'_>, call: Node<'_>) {
        if let Some(name) = dotted(function, self.text)
            && !is_builtin_call(&name)
        {
            let typed = written_against(&name, |object| self.typed.get(&from)?.get(object)).or_else(|| {
                // `this.store.get()` with `private store: DataStore`.
                let fields = self.field_types.get(self.method_of.get(&from)?)?;
                written_against(name.strip_prefix("this.")?, |field| fields.get(field))
            });
            self.reference(from, RefKind::Calls, typed.unwrap_or(name), call);
        }
    }

    fn call(&mut self, node: Node<'tree>, ctx: Ctx) {
        if let Some(spec) = import_call(node, self.text) {
            self.b.import(ctx.parent, spec, Vec::new(), false, Span::of_node(&node));
            return;
        }
        let Some(function) = node.child_by_field_name("function") else {
            return self.push_children(node, ctx);
        };
        let arguments = node.child_by_field_name("arguments");
        if is_test_callee(function, self.text)
            && let Some(name) = arguments.and_then(|a| a.named_child(0)).and_then(|a| literal_string(a, self.text))
        {
            let name: String = name.split_whitespace().collect::<Vec<_>>().join(" ");
            let index = self.b.add(ctx.parent, NodeKind::Test, &name, Span::of_node(&node), None, None);
            let inner = Ctx { parent: index, owner: index, scope: NESTED, ..ctx };
            self.push_all(&[(arguments, inner)]);
            return;
        }
        self.callee(ctx.parent, function, node);
        self.push_children(node, ctx);
    }

    fn import_statement(&mut self, node: Node<'tree>, ctx: Ctx) {
        let mut names = Vec::new();
        let mut source = node.child_by_field_name("source");
        for child in named_children(node) {
            match child.kind() {
                "import_clause" => {
                    for part in named_children(child) {
                        match part.kind() {
                            "identifier" => names.push(node_text(&part, self.text).to_string()),
                            "namespace_import" => {
                                names.extend(named_children(part).map(|n| node_text(&n, self.text).to_string()).take(1))
                            }
                            "named_imports" => {
                                for spec in named_children(part).filter(|s| s.kind() == "import_specifier") {
                                    if let Some(name) = field_text(&spec, "name", self.text) {
                                        names.push(strip_quotes(name).to_string());
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                "import_require_clause" => {
                    // TS `import fs = require('fs')`.
                    source = child.child_by_field_name("source");
                    names.extend(
                        named_children(child)
                            .filter(|n| n.kind() == "identifier")
                            .map(|n| node_text(&n, self.text).to_string())
                            .take(1),
                    );
                }
                _ => {}
            }
        }
        if let Some(source) = source {
            let spec = strip_quotes(node_text(&source, self.text)).to_string();
            self.import_node(node, ctx, spec, names);
        }
    }

    fn export_statement(&mut self, node: Node<'tree>, ctx: Ctx) {
        if let Some(source) = node.child_by_field_name("source") {
            // `export * from`, `export * as ns from`, `export {a, b as c} from`.
            let mut names = Vec::new();
            for child in named_children(node) {
                match child.kind() {
                    "export_clause" => {
                        for spec in named_children(child).filter(|s| s.kind() == "export_specifier") {
                            if let Some(name) = field_text(&spec, "name", self.text) {
                                names.push(strip_quotes(name).to_string());
                            }
                        }
                    }
                    "namespace_export" => {
                        names.extend(named_children(child).map(|n| strip_quotes(node_text(&n, self.text)).to_string()))
                    }
                    _ => {}
                }
            }
            if names.is_empty() {
                names.push("*".to_string());
            }
            let spec = strip_quotes(node_text(&source, self.text)).to_string();
            self.import_node(node, ctx, spec, names);
            return;
        }
        if let Some(decl) = node.child_by_field_name("declaration") {
            if !self.declaration(decl, node, ctx) {
                self.push_children(decl, ctx);
            }
            return;
        }
        if let Some(value) = node.child_by_field_name("value") {
            match value.kind() {
                "function_expression" | "arrow_function" | "generator_function" => {
                    let name = field_text(&value, "name", self.text).unwrap_or("default");
                    self.function(value, node, name, ctx);
                }
                "class" => {
                    let name = field_text(&value, "name", self.text).unwrap_or("default");
                    self.class(value, node, name, sig_start(node), ctx);
                }
                _ => self.push_all(&[(Some(value), ctx)]),
            }
        }
    }

    fn import_node(&mut self, statement: Node<'tree>, ctx: Ctx, spec: String, names: Vec<String>) {
        let span = Span::of_node(&statement);
        let index = self.b.add(ctx.parent, NodeKind::Import, &spec, span, None, None);
        self.b.import(index, spec, names, false, span);
    }

    /// A frame with the type parameters `node` declares, or `parent` if none.
    fn frame(&mut self, node: Node<'_>, parent: usize) -> usize {
        let Some(params) = node.child_by_field_name("type_parameters") else { return parent };
        let names: Vec<String> = named_children(params)
            .filter_map(|p| p.child_by_field_name("name"))
            .map(|n| node_text(&n, self.text).to_string())
            .collect();
        if names.is_empty() {
            return parent;
        }
        self.frames.push(Frame { parent, names });
        self.frames.len() - 1
    }

    fn is_type_parameter(&self, mut frame: usize, name: &str) -> bool {
        // `T`, `K`: type variables by convention (also `infer U`, mapped `[K in ...]`).
        if name.len() == 1 && name.starts_with(|c: char| c.is_ascii_uppercase()) {
            return true;
        }
        while frame != 0 {
            if self.frames[frame].names.iter().any(|n| n == name) {
                return true;
            }
            frame = self.frames[frame].parent;
        }
        false
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

/// Where a declaration's signature starts: after its decorators.
/// The names of `function` whose class is plain, name -> class: parameters
/// annotated with a class (`ctx: Context`, `ctx?: Context | undefined`)
/// and constants or variables declared with one (`const s: Session = ...`)
/// or by its constructor (`const session = new Session()`). A name declared
/// or assigned more than once anywhere in the function (its callbacks'
/// parameters and variables included, which may shadow it) is left out: its
/// class is not certain. Functions and classes declared by name inside are
/// nodes of their own, with their own names, and are not read.
fn typed_locals(function: Node<'_>, text: &str) -> HashMap<String, String> {
    let mut bindings: HashMap<&str, usize> = HashMap::new();
    let mut classes: HashMap<&str, String> = HashMap::new();
    let mut params = HashSet::new();
    let list = function.child_by_field_name("parameters").or_else(|| function.child_by_field_name("parameter"));
    for param in
        list.into_iter().flat_map(|l| if l.kind() == "identifier" { vec![l] } else { named_children(l).collect() })
    {
        let mut names = Vec::new();
        pattern_names(param.child_by_field_name("pattern").unwrap_or(param), text, &mut names);
        params.extend(names.iter().copied());
        if let ([name], Some(class)) =
            (names.as_slice(), param.child_by_field_name("type").and_then(|t| annotation_class(t, text)))
        {
            classes.insert(name, class);
        }
    }
    let mut stack: Vec<Node<'_>> = function.child_by_field_name("body").into_iter().collect();
    while let Some(n) = stack.pop() {
        let (bound, class) = match n.kind() {
            "variable_declarator" => {
                let class = n
                    .child_by_field_name("type")
                    .and_then(|t| annotation_class(t, text))
                    .or_else(|| n.child_by_field_name("value").and_then(|v| constructor_class(v, text)));
                (n.child_by_field_name("name"), class)
            }
            "assignment_expression" | "augmented_assignment_expression" => (n.child_by_field_name("left"), None),
            "required_parameter" | "optional_parameter" => (n.child_by_field_name("pattern"), None),
            "formal_parameters" => {
                // A nested function's plain JavaScript parameters (TypeScript's
                // are the parameter nodes below).
                let mut names = Vec::new();
                for p in named_children(n).filter(|p| !matches!(p.kind(), "required_parameter" | "optional_parameter"))
                {
                    pattern_names(p, text, &mut names);
                }
                for name in names {
                    *bindings.entry(name).or_default() += 1;
                }
                (None, None)
            }
            "arrow_function" => (n.child_by_field_name("parameter"), None),
            "catch_clause" => (n.child_by_field_name("parameter"), None),
            "for_in_statement" => (n.child_by_field_name("left"), None),
            _ => (None, None),
        };
        if let Some(bound) = bound {
            let mut names = Vec::new();
            pattern_names(bound, text, &mut names);
            for name in &names {
                *bindings.entry(name).or_default() += 1;
            }
            if let (Some(class), true) = (class, bound.kind() == "identifier") {
                classes.insert(node_text(&bound, text), class);
            }
        }
        // A function or class declared by name is a node with calls (and
        // names) of its own; a callback's calls are this function's.
        let own_node = matches!(
            n.kind(),
            "function_declaration"
                | "generator_function_declaration"
                | "class_declaration"
                | "class"
                | "method_definition"
        ) || (n.kind() == "variable_declarator"
            && n.child_by_field_name("value").is_some_and(is_function_value));
        if !own_node {
            stack.extend(named_children(n));
        }
    }
    classes
        .into_iter()
        .filter(|(name, _)| bindings.get(name).copied().unwrap_or(0) == usize::from(!params.contains(name)))
        .map(|(name, class)| (name.to_string(), class))
        .collect()
}

/// The fields of a class body whose class is plain, name -> class: declared
/// with one (`private store: DataStore`, the constructor's
/// `private readonly db: Db`), whatever is assigned to them, or else set
/// (`store = new DataStore()`, `this.store = new DataStore()` in a method)
/// only by that class's constructor or from a name of that class
/// (`this.store = store` with `store: DataStore`). Another kind of assignment to an
/// undeclared field (`this.store = load()`) leaves it out.
fn field_classes(body: Node<'_>, text: &str) -> HashMap<String, String> {
    let mut seen: HashMap<&str, Option<String>> = HashMap::new();
    let mut declared: HashMap<&str, String> = HashMap::new();
    for member in named_children(body) {
        match member.kind() {
            "public_field_definition" | "field_definition" => {
                let Some(name) = member.child_by_field_name("name").or_else(|| member.child_by_field_name("property"))
                else {
                    continue;
                };
                let name = node_text(&name, text);
                match member.child_by_field_name("type") {
                    Some(t) => {
                        if let Some(class) = annotation_class(t, text) {
                            declared.insert(name, class);
                        }
                    }
                    None => {
                        let class = member.child_by_field_name("value").and_then(|v| constructor_class(v, text));
                        note_class(&mut seen, name, class);
                    }
                }
            }
            "method_definition" => {
                let constructor =
                    member.child_by_field_name("name").is_some_and(|n| node_text(&n, text) == "constructor");
                if constructor && let Some(params) = member.child_by_field_name("parameters") {
                    for param in named_children(params) {
                        let mut cursor = param.walk();
                        let is_property = param
                            .children(&mut cursor)
                            .any(|c| matches!(c.kind(), "accessibility_modifier" | "readonly" | "override_modifier"));
                        if let (true, Some(pattern)) =
                            (is_property, param.child_by_field_name("pattern").filter(|p| p.kind() == "identifier"))
                        {
                            let class = param.child_by_field_name("type").and_then(|t| annotation_class(t, text));
                            match class {
                                Some(class) => {
                                    declared.insert(node_text(&pattern, text), class);
                                }
                                None => note_class(&mut seen, node_text(&pattern, text), None),
                            }
                        }
                    }
                }
                // `this.store = store` with `store: DataStore` (or a local of that class).
                let locals = typed_locals(member, text);
                let from_local = |value: Node<'_>| {
                    (value.kind() == "identifier").then(|| locals.get(node_text(&value, text)).cloned()).flatten()
                };
                let mut stack: Vec<Node<'_>> = member.child_by_field_name("body").into_iter().collect();
                while let Some(n) = stack.pop() {
                    if matches!(n.kind(), "assignment_expression" | "augmented_assignment_expression")
                        && let Some(left) = n.child_by_field_name("left").filter(|l| l.kind() == "member_expression")
                        && left.child_by_field_name("object").is_some_and(|o| o.kind() == "this")
                        && let Some(name) = left.child_by_field_name("property")
                    {
                        let class = (n.kind() == "assignment_expression")
                            .then(|| {
                                let value = n.child_by_field_name("right")?;
                                constructor_class(value, text).or_else(|| from_local(value))
                            })
                            .flatten();
                        note_class(&mut seen, node_text(&name, text), class);
                    }
                    if !matches!(
                        n.kind(),
                        "function_declaration" | "function_expression" | "class" | "class_declaration"
                    ) {
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

/// The class a type annotation names plainly (`: Context`, `: ns.Context`,
/// `: Context | undefined`), not a builtin type nor a generic one's argument.
fn annotation_class(annotation: Node<'_>, text: &str) -> Option<String> {
    let mut ty = annotation.named_child(0)?;
    loop {
        match ty.kind() {
            "type_identifier" | "nested_type_identifier" => {
                let name: String = node_text(&ty, text).split_whitespace().collect();
                let last = name.rsplit('.').next().unwrap_or(&name);
                return (last.starts_with(|c: char| c.is_ascii_uppercase()) && !is_builtin_type(last)).then_some(name);
            }
            "generic_type" => ty = ty.child_by_field_name("name")?,
            "union_type" => {
                let parts: Vec<Node<'_>> =
                    named_children(ty).filter(|p| !matches!(node_text(p, text), "undefined" | "null")).collect();
                match parts.as_slice() {
                    [one] => ty = *one,
                    _ => return None,
                }
            }
            "parenthesized_type" => ty = ty.named_child(0)?,
            _ => return None,
        }
    }
}

/// The class `new Session(...)` (or `new http.Session`) constructs.
fn constructor_class(value: Node<'_>, text: &str) -> Option<String> {
    let value = if value.kind() == "await_expression" { value.named_child(0)? } else { value };
    if value.kind() != "new_expression" {
        return None;
    }
    let name = dotted(value.child_by_field_name("constructor")?, text)?;
    let last = name.rsplit('.').next().unwrap_or(&name);
    (last.starts_with(|c: char| c.is_ascii_uppercase()) && !is_builtin_call(&name) && !is_builtin_type(last))
        .then_some(name)
}

fn sig_start(node: Node<'_>) -> usize {
    let mut cursor = node.walk();
    node.children(&mut cursor)
        .find(|c| !matches!(c.kind(), "decorator" | "comment"))
        .map_or(node.start_byte(), |c| c.start_byte())
}

/// `text[start..end]` as a one-line header: whitespace collapsed, without a
/// trailing `{`, `:`, `;`, `=` or `=>`.
fn header(text: &str, start: usize, end: usize) -> String {
    let raw = text.get(start..end.max(start)).unwrap_or("");
    let collapsed = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    let trimmed = collapsed.trim_end_matches(['{', ':', ' ', ';', '=']);
    let trimmed = trimmed.strip_suffix("=>").unwrap_or(trimmed);
    trimmed.trim_end_matches(['{', ':', ' ', ';', '=']).to_string()
}

/// The JSDoc (`/** ... */`) right before `node`, or one blank line above it
/// (express writes each `res.status = function status(code) {` one blank line
/// under its JSDoc): a `/**` block is a doc comment whatever the spacing.
fn jsdoc(node: Node<'_>, text: &str) -> Option<String> {
    // Finding siblings is linear in their number: look at the text first.
    if !text.get(..node.start_byte()).unwrap_or("").trim_end().ends_with("*/") {
        return None;
    }
    let is_jsdoc = |c: &Node<'_>| c.kind() == "comment" && node_text(c, text).starts_with("/**");
    if let Some(doc) = preceding_comments(&node, text, is_jsdoc) {
        return Some(doc);
    }
    let prev = node.prev_sibling().filter(is_jsdoc)?;
    let gap = text.get(prev.end_byte()..node.start_byte())?;
    (gap.trim().is_empty() && gap.matches('\n').count() <= 2).then(|| clean_doc(node_text(&prev, text))).flatten()
}

/// The name a TypeScript overload signature (`function f(a: string): T;`,
/// a class's `m(a: string): T;`) or a definition (`function f(a) {..}`,
/// `m(a) {..}`) declares, `export` unwrapped, and whether it has a body.
fn overload_part<'t>(node: Node<'_>, text: &'t str) -> Option<(&'t str, bool)> {
    let decl = if node.kind() == "export_statement" { node.child_by_field_name("declaration")? } else { node };
    match decl.kind() {
        "function_signature" | "function_declaration" | "method_signature" | "method_definition" => {
            Some((field_text(&decl, "name", text)?, decl.child_by_field_name("body").is_some()))
        }
        _ => None,
    }
}

/// The first of the overload signatures of `name` right above the
/// definition `outer` (comments between them allowed), whose lines, doc and
/// all, belong to the definition's node: one function, not one node per
/// signature (zod's `flatten(): ..; flatten<U>(..): ..; flatten(..) {..}`).
fn first_overload<'t>(outer: Node<'t>, name: &str, text: &str) -> Option<Node<'t>> {
    let mut first = None;
    let mut prev = outer.prev_named_sibling();
    while let Some(node) = prev {
        if node.kind() != "comment" {
            match overload_part(node, text) {
                Some((n, false)) if n == name => first = Some(node),
                _ => break,
            }
        }
        prev = node.prev_named_sibling();
    }
    first
}

fn span_between(first: Node<'_>, last: Node<'_>) -> Span {
    Span::of_node(&first).through(Span::of_node(&last))
}

/// `name`, `a.b.c`, `this.x`, `super.m` when `node` is an identifier or a
/// chain of property accesses on one (optional chaining normalised to `.`);
/// `None` for anything else (`f().x`, `a[0].b`).
fn dotted(node: Node<'_>, text: &str) -> Option<String> {
    let mut parts = Vec::new();
    let mut current = node;
    loop {
        match current.kind() {
            "identifier" | "type_identifier" | "this" | "property_identifier" | "private_property_identifier" => {
                parts.push(node_text(&current, text));
                break;
            }
            "super" if !parts.is_empty() => {
                parts.push("super");
                break;
            }
            "member_expression" | "nested_identifier" | "nested_type_identifier" => {
                let property = current
                    .child_by_field_name("property")
                    .or_else(|| current.child_by_field_name("name"))
                    .filter(|p| {
                        matches!(
                            p.kind(),
                            "property_identifier" | "private_property_identifier" | "identifier" | "type_identifier"
                        )
                    })?;
                parts.push(node_text(&property, text));
                current = current.child_by_field_name("object").or_else(|| current.child_by_field_name("module"))?;
            }
            _ => return None,
        }
    }
    parts.reverse();
    Some(parts.join("."))
}

/// The specifier of `require('x')` or `import('x')` (possibly awaited).
fn import_call<'t>(node: Node<'_>, text: &'t str) -> Option<&'t str> {
    let call = if node.kind() == "await_expression" { node.named_child(0)? } else { node };
    if call.kind() != "call_expression" {
        return None;
    }
    let function = call.child_by_field_name("function")?;
    let is_import =
        function.kind() == "import" || (function.kind() == "identifier" && node_text(&function, text) == "require");
    if !is_import {
        return None;
    }
    let arguments = call.child_by_field_name("arguments")?;
    if arguments.named_child_count() != 1 {
        return None;
    }
    literal_string(arguments.named_child(0)?, text)
}

/// The specifier and member of `require('x').m` (or `(await import('x')).m`).
fn import_member<'t>(node: Node<'_>, text: &'t str) -> Option<(&'t str, &'t str)> {
    if node.kind() != "member_expression" {
        return None;
    }
    let property = node.child_by_field_name("property").filter(|p| p.kind() == "property_identifier")?;
    let mut object = node.child_by_field_name("object")?;
    if object.kind() == "parenthesized_expression" {
        object = object.named_child(0)?;
    }
    Some((import_call(object, text)?, node_text(&property, text)))
}

/// The value of a string literal or a template string without substitutions.
fn literal_string<'t>(node: Node<'_>, text: &'t str) -> Option<&'t str> {
    match node.kind() {
        "string" => Some(strip_quotes(node_text(&node, text))),
        "template_string" if !named_children(node).any(|c| c.kind() == "template_substitution") => {
            Some(strip_quotes(node_text(&node, text)))
        }
        _ => None,
    }
}

/// `describe`, `it`, `test` (Jest, Mocha, Vitest, Playwright), with
/// modifiers (`it.only`, `test.describe.serial`) and tables (`test.each(t)`).
/// A value that makes what it is bound to a function.
/// A value without the TypeScript around it (`{..} satisfies T`, `{..} as
/// T`, parentheses).
fn unwrap_value(mut node: Node<'_>) -> Node<'_> {
    while matches!(node.kind(), "satisfies_expression" | "as_expression" | "parenthesized_expression") {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// The function literal a call passes as an argument (`wrap(fn)`,
/// `$constructor("name", (inst, def) => {..})`), when the value is such a call.
fn wrapped_function(value: Node<'_>) -> Option<Node<'_>> {
    if value.kind() != "call_expression" {
        return None;
    }
    named_children(value.child_by_field_name("arguments")?).find(|a| is_function_value(*a))
}

/// Whether an object literal holds a method or a property whose value is a function.
fn has_function_member(object: Node<'_>) -> bool {
    named_children(object).any(|c| {
        c.kind() == "method_definition"
            || (c.kind() == "pair" && c.child_by_field_name("value").is_some_and(is_function_value))
    })
}

fn is_function_value(node: Node<'_>) -> bool {
    matches!(node.kind(), "arrow_function" | "function_expression" | "generator_function")
}

fn is_test_callee(node: Node<'_>, text: &str) -> bool {
    match node.kind() {
        "identifier" => matches!(
            node_text(&node, text),
            "describe" | "it" | "test" | "suite" | "fdescribe" | "xdescribe" | "fit" | "xit" | "xtest"
        ),
        "member_expression" => {
            let property = field_text(&node, "property", text);
            let modifier = matches!(
                property,
                Some(
                    "only"
                        | "skip"
                        | "todo"
                        | "concurrent"
                        | "failing"
                        | "fixme"
                        | "describe"
                        | "parallel"
                        | "serial"
                        | "sequential"
                        | "each"
                )
            );
            modifier && node.child_by_field_name("object").is_some_and(|o| is_test_callee(o, text))
        }
        "call_expression" => {
            // `test.each(table)('name %s', fn)`
            node.child_by_field_name("function").is_some_and(|f| {
                f.kind() == "member_expression"
                    && field_text(&f, "property", text) == Some("each")
                    && is_test_callee(f, text)
            })
        }
        _ => false,
    }
}

/// The names a binding pattern binds: `x`, `{a, b: c}` -> `a`, `c`, `[d, ...e]`.
fn pattern_names<'t>(node: Node<'_>, text: &'t str, out: &mut Vec<&'t str>) {
    match node.kind() {
        "identifier" | "shorthand_property_identifier_pattern" => out.push(node_text(&node, text)),
        "pair_pattern" => {
            if let Some(value) = node.child_by_field_name("value") {
                pattern_names(value, text, out);
            }
        }
        "assignment_pattern" | "object_assignment_pattern" => {
            if let Some(left) = node.child_by_field_name("left") {
                pattern_names(left, text, out);
            }
        }
        "object_pattern" | "array_pattern" | "rest_pattern" => {
            for child in named_children(node) {
                pattern_names(child, text, out);
            }
        }
        _ => {}
    }
}

/// The names `const <pattern> = require()` imports: the local name of a
/// whole module, the original keys of a destructuring.
fn imported_names(pattern: Node<'_>, text: &str) -> Vec<String> {
    match pattern.kind() {
        "identifier" => vec![node_text(&pattern, text).to_string()],
        "object_pattern" => named_children(pattern)
            .filter_map(|p| match p.kind() {
                "shorthand_property_identifier_pattern" => Some(node_text(&p, text)),
                "pair_pattern" => p.child_by_field_name("key").map(|k| strip_quotes(node_text(&k, text))),
                "object_assignment_pattern" => p.child_by_field_name("left").map(|l| node_text(&l, text)),
                _ => None,
            })
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// Global functions and namespaces whose calls say nothing about the project.
fn is_builtin_call(name: &str) -> bool {
    let root = name.split('.').next().unwrap_or(name);
    if name.contains('.') {
        return matches!(
            root,
            "console"
                | "Math"
                | "JSON"
                | "Object"
                | "Array"
                | "Promise"
                | "Number"
                | "String"
                | "Reflect"
                | "Symbol"
                | "Date"
                | "Intl"
        );
    }
    matches!(
        name,
        "require"
            | "parseInt"
            | "parseFloat"
            | "isNaN"
            | "isFinite"
            | "setTimeout"
            | "setInterval"
            | "clearTimeout"
            | "clearInterval"
            | "setImmediate"
            | "queueMicrotask"
            | "structuredClone"
            | "encodeURIComponent"
            | "decodeURIComponent"
            | "encodeURI"
            | "decodeURI"
            | "String"
            | "Number"
            | "Boolean"
            | "Symbol"
            | "BigInt"
            | "Array"
            | "Object"
            | "Promise"
            | "Map"
            | "Set"
            | "WeakMap"
            | "WeakSet"
            | "WeakRef"
            | "Date"
            | "RegExp"
            | "Error"
            | "TypeError"
            | "RangeError"
            | "SyntaxError"
            | "URL"
            | "URLSearchParams"
    )
}

/// Global and utility types, which name nothing in the project.
fn is_builtin_type(name: &str) -> bool {
    matches!(
        name,
        "Promise"
            | "PromiseLike"
            | "Array"
            | "ReadonlyArray"
            | "ArrayLike"
            | "Record"
            | "Partial"
            | "Required"
            | "Readonly"
            | "Pick"
            | "Omit"
            | "Exclude"
            | "Extract"
            | "NonNullable"
            | "ReturnType"
            | "Parameters"
            | "InstanceType"
            | "ConstructorParameters"
            | "Awaited"
            | "Map"
            | "Set"
            | "WeakMap"
            | "WeakSet"
            | "ReadonlyMap"
            | "ReadonlySet"
            | "Date"
            | "RegExp"
            | "Error"
            | "Function"
            | "Object"
            | "String"
            | "Number"
            | "Boolean"
            | "Symbol"
            | "BigInt"
            | "Iterable"
            | "Iterator"
            | "IterableIterator"
            | "AsyncIterable"
            | "AsyncIterator"
            | "AsyncIterableIterator"
            | "Generator"
            | "AsyncGenerator"
            | "PropertyKey"
            | "ArrayBuffer"
            | "Uint8Array"
    )
}

/// Relative (`./`, `../`) and root (`/`) specifiers to files: exact, with an
/// extension, a TS source for a `.js` specifier, or a directory index. Bare
/// specifiers (packages, `node:` builtins, path aliases) stay unresolved.
fn resolve_js_import(ctx: &ResolveContext<'_>, from_path: &str, target: &str) -> Option<String> {
    // Bundler suffixes: `./a.svg?raw`, `./b#x`.
    let spec = target.split(['?', '#']).next().unwrap_or(target);
    let base = if spec == "." || spec == ".." || spec.starts_with("./") || spec.starts_with("../") {
        join_normalized(dir_of(from_path), spec)?
    } else if spec.starts_with('/') && !spec.starts_with("//") {
        join_normalized("", spec)?
    } else {
        return None;
    };
    const EXTENSIONS: [&str; 11] =
        [".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".json", ".vue"];
    let mut candidates: Vec<String> = Vec::new();
    if !base.is_empty() {
        candidates.push(base.clone());
        // A `.js` specifier in TypeScript names the `.ts` source.
        for (js, sources) in [
            (".js", [".ts", ".tsx"]),
            (".jsx", [".tsx", ".tsx"]),
            (".mjs", [".mts", ".mts"]),
            (".cjs", [".cts", ".cts"]),
        ] {
            if let Some(stem) = base.strip_suffix(js) {
                candidates.extend(sources.iter().map(|s| format!("{stem}{s}")));
            }
        }
        candidates.extend(EXTENSIONS.iter().map(|e| format!("{base}{e}")));
    }
    let index = if base.is_empty() { "index".to_string() } else { format!("{base}/index") };
    candidates.extend(EXTENSIONS.iter().map(|e| format!("{index}{e}")));
    ctx.first_existing(candidates)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn analyze(language: &str, path: &str, text: &str) -> FileAnalysis {
        JavaScriptAnalyzer.analyze(language, path, text)
    }

    const TS: &str = r#"import React, { useState as useS, type FC } from 'react';
import * as path from "node:path";
import type { Shape as ShapeType } from './types';
import './side-effect';
export * from './c';
export * as ns from './ns';
export { a, b as bb } from '../d';
import fs = require('fs');

/** A shape with an area. */
export interface Shape<T> extends Base, Other<T> {
  /** The name. */
  readonly name: string;
  area(unit: Unit): number;
  [key: string]: unknown;
}

/** Colors. */
export enum Color {
  /** Red. */
  Red = 1,
  Green,
}

export type Id = string | number;

/** Options. */
type Options = { verbose?: boolean; logger: Logger };

declare module 'foo' {
  export function bar(): void;
}

namespace NS.Inner {
  export const x: Config = load();
}

/**
 * A widget.
 */
@Component({ selector: 'w' })
export default class Widget<T extends Shape<T>> extends BaseWidget<T> implements Renderable, ns.Thing {
  private count: number = 0;
  static readonly KIND = "w";
  #secret = new Secret();

  constructor(private readonly svc: Service, public x?: number, plain: string) {
    super();
    this.count = 1;
    this.extra = plain;
  }

  /** Renders. */
  @Input()
  @Other
  async render(opts: RenderOptions): Promise<void> {
    this.helper(opts);
    await this.svc.load().then((r) => r);
    const m = await import('./lazy');
    foo.bar.baz();
    console.log(JSON.stringify(opts));
    f()();
  }

  get size(): number {
    return this.count;
  }

  set size(v: number) {
    this.count = v;
  }

  /** Flattens. */
  flatten(): string[];
  // the depth form
  flatten(depth: number): string[];
  flatten(depth?: number): string[] {
    return this.items(depth);
  }

  handler = (e: Event): void => {
    this.render(e as RenderOptions);
  };
}

/** Adds two numbers. */
export const add = async (a: number, b: number): Promise<number> => compute(a, b);
const MAX: number = 10, MIN = 0;
let counter = 0;

export function identity<U>(x: U): U {
  function nested(): void {}
  return x;
}

/** Overloaded. */
export function overload(a: string): void;
export function overload(a: number): void;
export function overload(a: unknown): void {}

function* gen(): Generator<Item> {
  yield new Item();
}

describe('Widget', () => {
  beforeEach(() => setup());
  it('renders', async () => {
    expect(render()).toBe(true);
  });
  test.each([1, 2])('works %d', (n) => {
    check(n);
  });
  it.skip(`template name`, () => {});
});
"#;

    const TSX: &str = r#"import React from 'react';
import { Icon } from './icon';

/** Props. */
type Props = { title: string; onClick?: () => void };

/** A button. */
export const Button: React.FC<Props> = ({ title, onClick }) => {
  const [count, setCount] = useState(0);
  const handle = () => onClick?.();
  return (
    <button onClick={handle}>
      {title}
      <Icon name="x" />
      <Layout.Row />
    </button>
  );
};

export default function App(): JSX.Element {
  return <Button title="hi" />;
}
"#;

    const JS: &str = r#"'use strict';
const fs = require('fs');
const { join, resolve: res } = require('path');
const util = require('./util');
require('./side');

/**
 * Loads things.
 * @param {string} p
 */
function load(p) {
  const cfg = require('../config.json');
  return fs.readFileSync(join(p, cfg.name));
}

class Loader extends events.EventEmitter {
  static defaults = {};
  #cache = new Map();
  name;

  constructor(name) {
    super();
    this.name = name;
    this.size = 0;
  }

  async *items() {
    yield* this.#cache.values();
  }

  get count() {
    return util.count(this);
  }
}

module.exports = { load, Loader };
/**
 * Helps.
 */

exports.helper = function (a) {
  return util.go(a);
};
module.exports.other = (b) => b;
const lazy = async () => (await import('./lazy.js')).default;
exports.get = exports.fetch = function fetch(key) {
  return util.get(key);
};
defineGetter(exports, 'size', function size() {
  return util.count(this);
});
"#;

    #[test]
    fn typescript_outline() {
        insta::assert_snapshot!(analyze("typescript", "src/widget.ts", TS).outline());
    }

    #[test]
    fn tsx_outline() {
        insta::assert_snapshot!(analyze("tsx", "src/App.tsx", TSX).outline());
    }

    #[test]
    fn commonjs_outline() {
        insta::assert_snapshot!(analyze("javascript", "lib/loader.js", JS).outline());
    }

    #[test]
    fn a_member_taken_from_a_require_is_an_import_of_that_member() {
        let text = "var compileETag = require('./utils').compileETag;\nvar etag = require('./utils').compileETag;\nconst resolve = (await import('node:path')).resolve;\nvar mime = require('send').mime.lookup;\n";
        let analysis = analyze("javascript", "lib/application.js", text);
        let imports: Vec<(&str, Vec<String>)> = analysis
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| (r.target.as_str(), r.names.clone()))
            .collect();
        assert_eq!(
            imports,
            [
                ("./utils", vec!["compileETag".to_string()]),
                ("./utils", vec!["compileETag as etag".to_string()]),
                ("node:path", vec!["resolve".to_string()]),
                // A member of a member: the module only.
                ("send", vec![]),
            ]
        );
    }

    /// The targets of a file's calls, in order.
    fn calls_of(language: &str, path: &str, text: &str) -> Vec<String> {
        analyze(language, path, text)
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Calls)
            .map(|r| r.target.clone())
            .collect()
    }

    #[test]
    fn calls_on_names_of_a_plain_class_are_written_against_it() {
        let text = r#"
export async function dev(settings: AstroSettings, ctx?: Context | undefined, n: number, list: Array<Item>) {
  const contentLayer = new ContentLayer({ settings });
  await contentLayer.sync();
  ctx.fail();
  n.toFixed();
  list.push(1);
  const store: DataStore = load();
  store.get("a");
  let twice = new Builder();
  twice = other();
  twice.build();
  const map = new Map();
  map.get("k");
  items.forEach((settings) => settings.update());
  const { a } = new Pair();
  a.first();
}
class Server {
  handle(req: Request) {
    req.body();
  }
}
"#;
        let calls = calls_of("typescript", "src/dev.ts", text);
        assert_eq!(
            calls,
            [
                "ContentLayer",
                "ContentLayer.sync",
                "Context.fail",
                "n.toFixed",
                "list.push",
                "load",
                "DataStore.get",
                "Builder",
                "other",
                "twice.build",
                "map.get",
                "items.forEach",
                "settings.update",
                "Pair",
                "a.first",
                "Request.body"
            ]
        );
        // JavaScript: constructors only.
        let text = "function send(body) {\n  const view = new View(name);\n  view.render(body);\n}\n";
        let calls = calls_of("javascript", "lib/response.js", text);
        assert_eq!(calls, ["View", "View.render"]);
    }

    #[test]
    fn calls_on_fields_of_a_plain_class_are_written_against_it() {
        let text = r#"
export class ContentLayer {
  #store: DataStore;
  private logger: Logger;
  watcher = new Watcher();
  cache = new Cache();
  plain = 1;
  constructor(private settings: AstroSettings, readonly n: number, store: DataStore, cfg: Config) {
    this.#store = store;
    this.cfg = cfg;
    this.logger = makeLogger();
    this.queue = new Queue();
    this.cache = load();
  }
  sync() {
    this.#store.get();
    this.logger.warn();
    this.settings.config();
    this.watcher.close();
    this.queue.add();
    this.cache.clear();
    this.n.toFixed();
    this.cfg.read();
  }
}
"#;
        let calls = calls_of("typescript", "src/content.ts", text);
        assert_eq!(
            calls,
            [
                "Watcher",
                "Cache",
                "makeLogger",
                "Queue",
                "load",
                "DataStore.get",
                "Logger.warn",
                "AstroSettings.config",
                "Watcher.close",
                "Queue.add",
                "this.cache.clear",
                "this.n.toFixed",
                "Config.read"
            ]
        );
    }

    #[test]
    fn functions_hung_on_objects_at_the_top_level_are_functions() {
        let text = "var res = Object.create(proto);\n/**\n * Send a response.\n */\nres.send = function send(body) {\n  this.end(body);\n};\nFoo.prototype.bar = () => 1;\nres.count = 0;\nfunction f() { inner.x = function () {}; }\n";
        let analysis = analyze("javascript", "lib/response.js", text);
        let functions: Vec<(&str, Option<&str>)> = analysis
            .nodes
            .iter()
            .filter(|s| s.kind == NodeKind::Function)
            .map(|s| (s.name.as_str(), s.doc.as_deref()))
            .collect();
        // `res.count = 0` is no function, and assignments inside a function body
        // are statements of that function, not declarations.
        assert_eq!(functions, [("send", Some("Send a response.")), ("bar", None), ("f", None)]);
    }

    #[test]
    fn chained_assignments_and_named_callbacks_at_the_top_level_are_functions() {
        let text = "/** Get a header. */\nreq.get =\nreq.header = function header(name) {\n  return name;\n};\n\n/** The protocol. */\ndefineGetter(req, 'protocol', function protocol() {\n  return this.get('X-Forwarded-Proto');\n});\ndefineGetter(req, 'anon', function () {});\nreq.a = req.b = 0;\ndescribe('suite', function named() {});\n";
        let analysis = analyze("javascript", "lib/request.js", text);
        let functions: Vec<(&str, Option<&str>, Option<&str>)> = analysis
            .nodes
            .iter()
            .filter(|s| s.kind == NodeKind::Function)
            .map(|s| (s.name.as_str(), s.doc.as_deref(), s.signature.as_deref()))
            .collect();
        // An anonymous callback and a value chain define nothing; a test suite
        // stays a test.
        assert_eq!(
            functions,
            [
                ("header", Some("Get a header."), Some("req.get = req.header = function header(name)")),
                ("protocol", Some("The protocol."), Some("defineGetter(req, 'protocol', function protocol()")),
            ]
        );
        let protocol = analysis.nodes.iter().position(|s| s.name == "protocol").unwrap();
        let calls: Vec<&str> =
            analysis.references.iter().filter(|r| r.from == protocol).map(|r| r.target.as_str()).collect();
        assert!(calls.contains(&"defineGetter") && calls.contains(&"this.get"), "{calls:?}");
        assert!(analysis.nodes.iter().any(|s| s.kind == NodeKind::Test && s.name == "suite"));
    }

    #[test]
    fn syntax_error_keeps_partial_tree() {
        let text = "import { a } from './a';\n\nexport function ok(x: number) {\n  return a(x) +;\n}\n\nclass After extends Base {\n  m() { return ok(1); }\n}\n\nconst broken = (x: number => x +;\n\nclass Lost {\n  n() {}\n}\n";
        let analysis = analyze("typescript", "src/broken.ts", text);
        assert!(!analysis.warnings.is_empty());
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn declaration_edge_cases() {
        let text = r#"@Dec class A {}
declare global {
  interface Window { app: App }
}
declare const VERSION: string;
export declare function f(a: string): void;
export default async () => 1;
const B = class Named extends A {};
abstract class Abs<K extends Key> {
  abstract m(): K;
  protected abstract n(x: Map<string, Entry>): void;
}
type Mapped<T> = { [K in keyof T]: T[K] extends infer U ? U : Fallback };
let v = x satisfies Foo;
export = Abs;
foo(class Inline {});
for (let i = 0; i < 3; i++) {
  const inner = i;
}
class Holder {
  static defaults = { build() { return make(); } };
}
"#;
        insta::assert_snapshot!(analyze("typescript", "src/edge.ts", text).outline());
    }

    #[test]
    fn spans_slice_back_to_declarations() {
        for (language, text) in [("typescript", TS), ("tsx", TSX), ("javascript", JS)] {
            let analysis = analyze(language, "src/x", text);
            let lines: Vec<&str> = text.split('\n').collect();
            let offset = |p: crate::model::Point| {
                lines[..p.line as usize - 1].iter().map(|l| l.len() + 1).sum::<usize>() + p.column as usize
            };
            for node in &analysis.nodes[1..] {
                let slice = node.span.slice(text);
                assert_eq!(&text[offset(node.span.start)..offset(node.span.end)], slice);
                let first = slice.split(|c: char| c.is_whitespace() || c == '(').next().unwrap();
                let ok = match node.kind {
                    NodeKind::Import => first == "import" || first == "export",
                    NodeKind::Test => ["describe", "it", "test"].iter().any(|t| first.starts_with(t)),
                    NodeKind::Method | NodeKind::Field => {
                        first.starts_with('@')
                            || slice.starts_with(node.name.as_str())
                            || matches!(first, "async" | "get" | "set" | "static" | "private" | "public" | "readonly")
                            || slice.starts_with("this.")
                    }
                    _ => {
                        first.starts_with('@')
                            || matches!(
                                first,
                                "export"
                                    | "declare"
                                    | "class"
                                    | "interface"
                                    | "enum"
                                    | "type"
                                    | "namespace"
                                    | "module"
                                    | "function"
                                    | "function*"
                                    | "async"
                                    | "const"
                                    | "let"
                                    | "var"
                                    | "exports.helper"
                                    | "module.exports.other"
                                    | "exports.get"
                                    | "defineGetter"
                            )
                            || first.starts_with(node.name.as_str())
                    }
                };
                assert!(ok, "{language}: {:?} {} starts with {first:?}", node.kind, node.symbol_path);
                if let Some(sig) = &node.signature {
                    assert!(!sig.starts_with('@'), "signature without decorators: {sig}");
                }
            }
        }
    }

    #[test]
    fn a_function_a_top_level_call_wraps_is_the_variable() {
        let text = "/** The union of its options. */\nexport const $Union: Ctor<$Union> = core.$constructor(\"$Union\", (inst, def) => {\n  inst.parse = (payload, ctx) => handleResults(payload, ctx);\n});\n\nconst limit = Math.max(1, 2);\n\nfunction inner() {\n  const local = wrap(() => 1);\n}\n";
        let a = analyze("typescript", "src/core/schemas.ts", text);
        let union = a.nodes.iter().position(|n| n.symbol_path == "$Union").unwrap();
        let node = &a.nodes[union];
        assert_eq!((node.kind, node.span.start.line, node.span.end.line), (NodeKind::Function, 2, 4));
        assert_eq!(node.doc.as_deref(), Some("The union of its options."));
        assert_eq!(
            node.signature.as_deref(),
            Some("export const $Union: Ctor<$Union> = core.$constructor(\"$Union\", (inst, def)")
        );
        let from =
            |target: &str| a.references.iter().filter(|r| r.target == target).map(|r| r.from).collect::<Vec<_>>();
        assert_eq!(from("core.$constructor"), [union]);
        assert_eq!(from("handleResults"), [union]);
        // A call without a function stays a variable; inside a function nothing is bound.
        let limit = a.nodes.iter().find(|n| n.symbol_path == "limit").unwrap();
        assert_eq!(limit.kind, NodeKind::Variable);
        assert!(a.nodes.iter().all(|n| !n.symbol_path.ends_with("local")), "{:?}", a.nodes);
    }

    #[test]
    fn an_object_a_variable_holds_brings_its_functions() {
        let text = "import { verify } from './verify';\n\n/** The service every image goes through. */\nexport const baseService: ImageService = {\n\tpropertiesToHash: ['src'],\n\t/** Checks the options. */\n\tvalidateOptions(options) {\n\t\tverify(options);\n\t\treturn this.normalize(options);\n\t},\n\tgetURL: (options) => {\n\t\treturn encode(options.src);\n\t},\n\tlabel: format('x'),\n} satisfies Partial<ImageService>;\n\nconst plain = { a: 1, b: compute() };\n";
        let a = analyze("typescript", "src/assets/service.ts", text);
        let node = |path: &str| a.nodes.iter().position(|n| n.symbol_path == path).unwrap_or_else(|| panic!("{path}"));
        let validate = node("baseService.validateOptions");
        let get_url = node("baseService.getURL");
        assert_eq!((a.nodes[validate].kind, a.nodes[validate].span.start.line), (NodeKind::Method, 7));
        assert_eq!(a.nodes[validate].doc.as_deref(), Some("Checks the options."));
        assert_eq!((a.nodes[get_url].kind, a.nodes[get_url].span.end.line), (NodeKind::Method, 13));
        assert_eq!(a.nodes[get_url].signature.as_deref(), Some("getURL: (options)"));
        assert_eq!(a.nodes[node("baseService")].kind, NodeKind::Variable);
        // Calls come from the method that makes them; a value's stay the module's.
        let from =
            |target: &str| a.references.iter().filter(|r| r.target == target).map(|r| r.from).collect::<Vec<_>>();
        assert_eq!(from("verify"), [validate]);
        assert_eq!(from("encode"), [get_url]);
        assert_eq!(from("format"), [0]);
        // An object without functions stays a plain variable.
        assert!(a.nodes.iter().all(|n| !n.symbol_path.starts_with("plain.")), "{:?}", a.nodes);
        assert_eq!(from("compute"), [0]);
    }

    #[test]
    fn overload_signatures_open_their_implementation() {
        let analysis = analyze("typescript", "src/widget.ts", TS);
        let find = |path: &str| analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap();
        for (path, first, last) in [
            ("overload", "export function overload(a: string): void;", "export function overload(a: unknown): void {}"),
            ("Widget.flatten", "flatten(): string[];", "return this.items(depth);\n  }"),
        ] {
            let node = find(path);
            assert!(node.span.slice(TS).starts_with(first), "{path}: {}", node.span.slice(TS));
            assert!(node.span.slice(TS).ends_with(last), "{path}: {}", node.span.slice(TS));
            assert!(!analysis.nodes.iter().any(|n| n.symbol_path == format!("{path}~2")), "{path}");
        }
        assert_eq!(find("overload").doc.as_deref(), Some("Overloaded."));
        assert_eq!(find("Widget.flatten").doc.as_deref(), Some("Flattens."));
        // Signatures with no implementation below stay nodes of their own.
        assert!(analysis.nodes.iter().any(|n| n.symbol_path.ends_with("bar")));
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "Shape.area"));
    }

    #[test]
    fn jsdoc_and_decorators() {
        let analysis = analyze("typescript", "src/widget.ts", TS);
        let find = |path: &str| analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap();
        assert_eq!(find("Widget").doc.as_deref(), Some("A widget."));
        assert!(!find("Widget").span.slice(TS).starts_with("/**"));
        assert!(find("Widget").span.slice(TS).starts_with("@Component"));
        assert_eq!(find("Widget").signature.as_deref().unwrap().split(' ').next(), Some("export"));
        assert_eq!(find("Widget.render").doc.as_deref(), Some("Renders."));
        assert!(find("Widget.render").span.slice(TS).starts_with("@Input()"));
        assert_eq!(find("add").doc.as_deref(), Some("Adds two numbers."));
        assert_eq!(find("Shape.name").doc.as_deref(), Some("The name."));
        assert_eq!(find("Color.Red").doc.as_deref(), Some("Red."));
    }

    #[test]
    fn a_jsdoc_one_blank_line_above_its_definition_is_its_doc() {
        let text = "/*!\n * app\n * MIT Licensed\n */\n\n/**\n * Set the status `code`.\n */\n\nres.status = function status(code) {\n  return this;\n};\n\n/**\n * Far away.\n */\n\n\nres.send = function send(body) {};\n\n// plain\n\nres.end = function end() {};\n";
        let analysis = analyze("javascript", "lib/response.js", text);
        let find = |path: &str| analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap();
        assert_eq!(find("status").doc.as_deref(), Some("Set the status `code`."));
        // Two blank lines part them; a plain comment is no doc.
        assert_eq!(find("send").doc, None);
        assert_eq!(find("end").doc, None);
    }

    #[test]
    fn jsx_in_javascript() {
        let text = "import { Row } from './row';\nexport default function List({ items }) {\n  return <ul>{items.map((i) => <Row key={i} />)}</ul>;\n}\n";
        let analysis = analyze("javascript", "src/List.jsx", text);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        let outline = analysis.outline();
        assert!(outline.contains("function List [2:0-4:1]"), "{outline}");
        assert!(outline.contains("calls List -> Row @3"), "{outline}");
    }

    #[test]
    fn minified_nesting_does_not_overflow() {
        let text = format!("var x = {}1{};\n", "(".repeat(20_000), ")".repeat(20_000));
        let analysis = analyze("javascript", "a.min.js", &text);
        assert_eq!(analysis.nodes[1].name, "x");
    }

    #[test]
    fn resolves_imports() {
        let files: BTreeSet<String> = [
            "src/app.ts",
            "src/util.ts",
            "src/types.d.ts",
            "src/components/index.tsx",
            "src/components/Button.tsx",
            "src/legacy.js",
            "src/data.json",
            "src/esm.mts",
            "lib/index.js",
            "index.ts",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let ctx = ResolveContext::new(&files);
        let r = |from: &str, target: &str| {
            let reference = Reference {
                from: 0,
                kind: RefKind::Import,
                target: target.to_string(),
                names: Vec::new(),
                system: false,
                span: Span::default(),
            };
            JavaScriptAnalyzer.resolve_import(&ctx, from, &reference)
        };
        assert_eq!(r("src/app.ts", "./util").as_deref(), Some("src/util.ts"));
        assert_eq!(r("src/app.ts", "./util.js").as_deref(), Some("src/util.ts"));
        assert_eq!(r("src/app.ts", "./util.ts").as_deref(), Some("src/util.ts"));
        assert_eq!(r("src/app.ts", "./types").as_deref(), Some("src/types.d.ts"));
        assert_eq!(r("src/app.ts", "./components").as_deref(), Some("src/components/index.tsx"));
        assert_eq!(r("src/components/index.tsx", "./Button").as_deref(), Some("src/components/Button.tsx"));
        assert_eq!(r("src/components/Button.tsx", "../legacy").as_deref(), Some("src/legacy.js"));
        assert_eq!(r("src/components/Button.tsx", "../data.json").as_deref(), Some("src/data.json"));
        assert_eq!(r("src/app.ts", "./esm.mjs").as_deref(), Some("src/esm.mts"));
        assert_eq!(r("src/app.ts", "/lib").as_deref(), Some("lib/index.js"));
        assert_eq!(r("src/app.ts", "..").as_deref(), Some("index.ts"));
        assert_eq!(r("src/app.ts", "./util?raw").as_deref(), Some("src/util.ts"));
        // Missing, escaping and bare specifiers stay unresolved.
        assert_eq!(r("src/app.ts", "./missing"), None);
        assert_eq!(r("src/app.ts", "../../outside"), None);
        assert_eq!(r("src/app.ts", "react"), None);
        assert_eq!(r("src/app.ts", "@scope/pkg"), None);
        assert_eq!(r("src/app.ts", "node:fs"), None);
        assert_eq!(r("src/app.ts", "util"), None);
        assert_eq!(r("src/app.ts", "//cdn.example.com/x.js"), None);
    }
}
