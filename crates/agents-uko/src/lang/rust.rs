//! Rust: items, impls, docs, `use` trees, calls and type mentions.
//!
//! Layout decisions:
//! - Inline `mod x { .. }` is a `Namespace`; `mod x;` is an `Import` node
//!   named `x` with an import reference to `self::x` (resolved like any
//!   `self::` path: `x.rs` or `x/mod.rs` in the declaring file's module dir).
//! - Methods of an `impl` block go under the struct/enum/union/trait node of
//!   the implemented type when that type is defined in the same scope (or an
//!   enclosing one) of the same file, so their symbol path is `Type.method`.
//!   Otherwise they go under the enclosing scope (node 0 or the inline mod)
//!   with the simple name `method` and the symbol path `Type.method`.
//!   Associated consts become `Field`s, associated types `TypeAlias`es.
//! - `impl Trait for Type` adds an `Inherits` reference from the type node
//!   (or the enclosing scope when the type is not in the file) to the trait
//!   path as written without generics (`Display`, `fmt::Display`); trait
//!   supertraits (`trait A: B`) are `Inherits` too.
//! - `use` paths inside inline modules are rewritten relative to the file's
//!   module: in `mod tests { use super::*; }` the target is `self`; in
//!   `mod a { use self::b::C; }` it is `self::a::b::C`. Other paths keep
//!   their written form (leading `::` dropped).
//! - Calls: `f`, `Type::new`, `self.x`, `a.b().c` (receiver calls kept as
//!   `()` without arguments; an unnamed receiver is `_`), macros keep their
//!   `!` (`println!`). `Self::f` inside an impl/trait becomes `Type::f`.
//!   Calls written inside macro arguments (`assert_eq!(add(1, 2), 3)`) are
//!   found by a token heuristic: a path followed by a `(...)` group.
//!   Tuple-variant constructors `Some`, `Ok`, `Err` are not calls.
//! - Nodes are returned in source preorder (a node's children follow it).

use std::collections::HashMap;
use std::sync::LazyLock;

use tree_sitter::{Language, Node};

use crate::lang::{
    Analyzer, FileBuilder, child_of_kind, clean_doc, join_path, named_children, node_text, parse_or_warn,
    signature_until, written_against,
};
use crate::model::{FileAnalysis, NodeKind, RefKind, Reference, Span, SymbolNode, file_name};
use crate::resolve::{ResolveContext, dir_of};

static LANGUAGE: LazyLock<Language> = LazyLock::new(|| tree_sitter_rust::LANGUAGE.into());

/// Depth limit of the recursive helpers over expressions and token trees.
const MAX_DEPTH: usize = 48;

/// Type names never worth a `Mentions` reference.
const SKIP_TYPES: &[&str] =
    &["Self", "String", "Vec", "Option", "Box", "Fn", "FnMut", "FnOnce", "Send", "Sync", "Sized", "_"];

/// Call targets that are enum-variant constructors, not calls.
const SKIP_CALLS: &[&str] = &["Some", "Ok", "Err"];

pub struct RustAnalyzer;

impl Analyzer for RustAnalyzer {
    fn languages(&self) -> &'static [&'static str] {
        &["rust"]
    }

    fn analyze(&self, _language: &str, path: &str, text: &str) -> FileAnalysis {
        let mut builder = FileBuilder::new(NodeKind::Module, path, text);
        let Some(tree) = parse_or_warn(&mut builder, &LANGUAGE, "Rust", text) else {
            return builder.finish();
        };
        let root = tree.root_node();
        builder.set_doc(0, inner_docs(root, text));
        let mut walker = Walker { text, b: builder, types: HashMap::new(), renames: Vec::new(), typed: HashMap::new() };
        let ctx = Ctx { scope: 0, scope_chain: vec![0], mod_path: Vec::new(), self_type: None, generics: Vec::new() };
        walker.items(root, &ctx);
        let Walker { b, renames, .. } = walker;
        let mut analysis = b.finish();
        local_self_imports(&mut analysis);
        source_ordered(analysis, &renames)
    }

    fn resolve_import(&self, ctx: &ResolveContext<'_>, from_path: &str, reference: &Reference) -> Option<String> {
        resolve_rust_path(ctx, from_path, &reference.target)
    }
}

/// Where the walker is: the node new items go under, and what names mean.
#[derive(Clone)]
struct Ctx {
    /// The node new items are added under.
    scope: usize,
    /// Scopes (node 0, inline mods, fns) from the file down, for impl lookup.
    scope_chain: Vec<usize>,
    /// Inline `mod` names from the file down to here.
    mod_path: Vec<String>,
    /// The type of the enclosing impl/trait (what `Self` means).
    self_type: Option<String>,
    /// Generic parameter names in scope (never mentions).
    generics: Vec<String>,
}

struct Walker<'t> {
    text: &'t str,
    b: FileBuilder,
    /// Struct/enum/union/trait nodes by (scope node, name), for impl blocks.
    types: HashMap<(usize, String), usize>,
    /// Final simple names for nodes whose builder name was qualified.
    renames: Vec<(usize, String)>,
    /// Per function: its names whose type is plain ([`typed_locals`]).
    typed: HashMap<usize, HashMap<String, String>>,
}

impl<'t> Walker<'t> {
    fn t(&self, node: &Node<'_>) -> &'t str {
        node_text(node, self.text)
    }

    /// The items of a `source_file` or `declaration_list`: impl blocks last,
    /// so the types they implement already have nodes.
    fn items(&mut self, list: Node<'_>, ctx: &Ctx) {
        let mut cursor = list.walk();
        let children: Vec<Node<'_>> = list.named_children(&mut cursor).collect();
        for (i, child) in children.iter().enumerate().filter(|(_, c)| c.kind() != "impl_item") {
            self.item(*child, ctx, &children[..i]);
        }
        for (i, child) in children.iter().enumerate().filter(|(_, c)| c.kind() == "impl_item") {
            self.item(*child, ctx, &children[..i]);
        }
    }

    /// One item (anything else is ignored). `prev` are its preceding named
    /// siblings (doc comments, attributes).
    fn item(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        if ctx.scope_chain.len() > MAX_DEPTH {
            // Absurdly deep nesting: keep the stack bounded.
            return;
        }
        match node.kind() {
            "function_item" | "function_signature_item" => self.function(node, ctx, false, prev),
            "struct_item" | "union_item" => self.structure(node, ctx, prev),
            "enum_item" => self.enumeration(node, ctx, prev),
            "trait_item" => self.trait_item(node, ctx, prev),
            "impl_item" => self.impl_item(node, ctx),
            "mod_item" => self.module(node, ctx, prev),
            "use_declaration" => self.use_declaration(node, ctx, prev),
            "extern_crate_declaration" => {
                let name = node.child_by_field_name("name").map_or("", |n| self.t(&n));
                let sig = signature_until(&node, None, self.text);
                let idx = self.b.add(ctx.scope, NodeKind::Import, name, Span::of_node(&node), Some(sig), None);
                self.b.import(idx, name, vec![name.to_string()], false, Span::of_node(&node));
            }
            "const_item" | "static_item" => self.constant(node, ctx, NodeKind::Variable, prev),
            "type_item" => self.type_alias(node, ctx, prev),
            "macro_definition" => {
                if let Some(name) = node.child_by_field_name("name") {
                    let name = self.t(&name);
                    let doc = outer_docs(prev, self.text);
                    let sig = format!("macro_rules! {name}");
                    self.b.add(ctx.scope, NodeKind::Macro, name, Span::of_node(&node), Some(sig), doc);
                }
            }
            // A macro whose braces hold items adds them (their calls with
            // them); any other records the calls its tokens seem to make.
            "macro_invocation" => {
                if self.macro_items(node, ctx) {
                    self.macro_name_call(node, ctx.scope, ctx);
                } else {
                    self.macro_call(node, ctx.scope, ctx);
                }
            }
            // `thread_local!(..);`, `include!(..);` at item level.
            "expression_statement" => {
                if let Some(mac) = node.named_child(0).filter(|m| m.kind() == "macro_invocation") {
                    self.macro_call(mac, ctx.scope, ctx);
                }
            }
            "foreign_mod_item" => {
                if let Some(body) = node.child_by_field_name("body") {
                    self.items(body, ctx);
                }
            }
            _ => {}
        }
    }

    fn function(&mut self, node: Node<'_>, ctx: &Ctx, member: bool, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let kind = if has_test_attribute(prev, self.text) {
            NodeKind::Test
        } else if member {
            NodeKind::Method
        } else {
            NodeKind::Function
        };
        let sig = fn_signature(node, body, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, kind, name, Span::of_node(&node), Some(sig), doc);
        let mut generics = ctx.generics.clone();
        generic_names(node, self.text, &mut generics);
        for field in ["type_parameters", "parameters", "return_type"] {
            if let Some(part) = node.child_by_field_name(field) {
                self.mention_types(idx, part, &generics);
            }
        }
        if let Some(where_clause) = child_of_kind(node, "where_clause") {
            self.mention_types(idx, where_clause, &generics);
        }
        if let Some(body) = body {
            let typed = typed_locals(node, self.text, ctx.self_type.as_deref(), &generics);
            if !typed.is_empty() {
                self.typed.insert(idx, typed);
            }
            let mut inner = ctx.clone();
            inner.scope = idx;
            inner.scope_chain.push(idx);
            inner.generics = generics;
            self.body(body, idx, &inner);
        }
    }

    fn structure(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let named_body = body.filter(|b| b.kind() == "field_declaration_list");
        let sig = signature_until(&node, named_body, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, NodeKind::Struct, name, Span::of_node(&node), Some(sig), doc);
        self.types.insert((ctx.scope, name.to_string()), idx);
        let mut generics = ctx.generics.clone();
        generic_names(node, self.text, &mut generics);
        match body {
            Some(list) if list.kind() == "field_declaration_list" => self.fields(list, idx, &generics),
            Some(list) => self.mention_types(idx, list, &generics),
            None => {}
        }
    }

    fn fields(&mut self, list: Node<'_>, parent: usize, generics: &[String]) {
        let mut cursor = list.walk();
        let children: Vec<Node<'_>> = list.named_children(&mut cursor).collect();
        for (i, &field) in children.iter().enumerate() {
            if field.kind() != "field_declaration" {
                continue;
            }
            let Some(name) = field.child_by_field_name("name") else { continue };
            let name = self.t(&name);
            let sig = signature_until(&field, None, self.text);
            let doc = outer_docs(&children[..i], self.text);
            let idx = self.b.add(parent, NodeKind::Field, name, Span::of_node(&field), Some(sig), doc);
            if let Some(ty) = field.child_by_field_name("type") {
                self.mention_types(idx, ty, generics);
            }
        }
    }

    fn enumeration(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let sig = signature_until(&node, body, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, NodeKind::Enum, name, Span::of_node(&node), Some(sig), doc);
        self.types.insert((ctx.scope, name.to_string()), idx);
        let mut generics = ctx.generics.clone();
        generic_names(node, self.text, &mut generics);
        let Some(body) = body else { return };
        let mut cursor = body.walk();
        let children: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
        for (i, &variant) in children.iter().enumerate() {
            if variant.kind() != "enum_variant" {
                continue;
            }
            let Some(vname) = variant.child_by_field_name("name") else { continue };
            let vname = self.t(&vname);
            let sig = signature_until(&variant, None, self.text);
            let doc = outer_docs(&children[..i], self.text);
            let v = self.b.add(idx, NodeKind::Field, vname, Span::of_node(&variant), Some(sig), doc);
            if let Some(vbody) = variant.child_by_field_name("body") {
                self.mention_types(v, vbody, &generics);
            }
        }
    }

    fn trait_item(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let sig = signature_until(&node, body, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, NodeKind::Trait, name, Span::of_node(&node), Some(sig), doc);
        self.types.insert((ctx.scope, name.to_string()), idx);
        if let Some(bounds) = node.child_by_field_name("bounds") {
            self.inherits_from_bounds(idx, bounds);
        }
        let mut inner = ctx.clone();
        inner.self_type = Some(name.to_string());
        generic_names(node, self.text, &mut inner.generics);
        if let Some(body) = body {
            self.members(body, idx, &inner);
        }
    }

    fn inherits_from_bounds(&mut self, from: usize, bounds: Node<'_>) {
        let mut cursor = bounds.walk();
        for bound in bounds.named_children(&mut cursor) {
            let target = type_base_name(bound, self.text);
            if !target.is_empty() {
                self.b.reference(from, RefKind::Inherits, target, Span::of_node(&bound));
            }
        }
    }

    /// Items of a trait or impl body, under `parent`.
    fn members(&mut self, body: Node<'_>, parent: usize, ctx: &Ctx) {
        let mut inner = ctx.clone();
        inner.scope = parent;
        let mut cursor = body.walk();
        let children: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
        for (i, &member) in children.iter().enumerate() {
            let prev = &children[..i];
            match member.kind() {
                "function_item" | "function_signature_item" => self.function(member, &inner, true, prev),
                "const_item" => self.constant(member, &inner, NodeKind::Field, prev),
                "type_item" | "associated_type" => self.type_alias(member, &inner, prev),
                "macro_invocation" => self.macro_call(member, parent, &inner),
                _ => {}
            }
        }
    }

    fn impl_item(&mut self, node: Node<'_>, ctx: &Ctx) {
        let Some(ty) = node.child_by_field_name("type") else { return };
        // `impl super::Db` / `impl crate::store::Db`: the type is `Db`.
        let type_name = last_segment(&type_base_name(ty, self.text)).to_string();
        let target = ctx.scope_chain.iter().rev().find_map(|s| self.types.get(&(*s, type_name.clone())).copied());
        let mut inner = ctx.clone();
        inner.self_type = Some(type_name.clone());
        generic_names(node, self.text, &mut inner.generics);
        if let Some(tr) = node.child_by_field_name("trait") {
            let trait_name = type_base_name(tr, self.text);
            self.b.reference(target.unwrap_or(ctx.scope), RefKind::Inherits, trait_name, Span::of_node(&tr));
        }
        let Some(body) = node.child_by_field_name("body") else { return };
        match target {
            Some(parent) => self.members(body, parent, &inner),
            // The type lives elsewhere: members go under the current scope
            // as `Type.member` (renamed to `member` afterwards).
            None => self.members_qualified(body, &type_name, &inner),
        }
    }

    /// Members of an impl whose type is not in the file: each is added
    /// under the scope with the qualified name `Type.member`.
    fn members_qualified(&mut self, body: Node<'_>, type_name: &str, ctx: &Ctx) {
        let mut cursor = body.walk();
        let children: Vec<Node<'_>> = body.named_children(&mut cursor).collect();
        for (i, &member) in children.iter().enumerate() {
            let prev = &children[..i];
            let (kind, name_node) = match member.kind() {
                "function_item" | "function_signature_item" => {
                    let kind = if has_test_attribute(prev, self.text) { NodeKind::Test } else { NodeKind::Method };
                    (kind, member.child_by_field_name("name"))
                }
                "const_item" => (NodeKind::Field, member.child_by_field_name("name")),
                "type_item" | "associated_type" => (NodeKind::TypeAlias, member.child_by_field_name("name")),
                "macro_invocation" => {
                    self.macro_call(member, ctx.scope, ctx);
                    continue;
                }
                _ => continue,
            };
            let Some(name_node) = name_node else { continue };
            let simple = self.t(&name_node);
            let qualified = format!("{type_name}.{simple}");
            let body_node = member.child_by_field_name("body");
            let sig = match member.kind() {
                "const_item" => const_signature(member, self.text),
                "function_item" | "function_signature_item" => fn_signature(member, body_node, self.text),
                _ => signature_until(&member, None, self.text),
            };
            let doc = outer_docs(prev, self.text);
            let idx = self.b.add(ctx.scope, kind, &qualified, Span::of_node(&member), Some(sig), doc);
            self.renames.push((idx, simple.to_string()));
            let mut generics = ctx.generics.clone();
            generic_names(member, self.text, &mut generics);
            for field in ["type_parameters", "parameters", "return_type", "type"] {
                if let Some(part) = member.child_by_field_name(field) {
                    self.mention_types(idx, part, &generics);
                }
            }
            if let Some(body_node) = body_node {
                let typed = typed_locals(member, self.text, Some(type_name), &generics);
                if !typed.is_empty() {
                    self.typed.insert(idx, typed);
                }
                let mut inner = ctx.clone();
                inner.scope = idx;
                inner.scope_chain.push(idx);
                inner.generics = generics;
                self.body(body_node, idx, &inner);
            } else if let Some(value) = member.child_by_field_name("value") {
                self.body(value, idx, ctx);
            }
        }
    }

    fn module(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let body = node.child_by_field_name("body");
        let sig = signature_until(&node, body, self.text);
        match body {
            None => {
                let doc = outer_docs(prev, self.text);
                let idx = self.b.add(ctx.scope, NodeKind::Import, name, Span::of_node(&node), Some(sig), doc);
                let target = relative_to_file(&format!("self::{name}"), &ctx.mod_path);
                self.b.import(idx, target, vec![name.to_string()], false, Span::of_node(&node));
            }
            Some(body) => {
                let doc = join_docs(outer_docs(prev, self.text), inner_docs(body, self.text));
                let idx = self.b.add(ctx.scope, NodeKind::Namespace, name, Span::of_node(&node), Some(sig), doc);
                let mut inner = ctx.clone();
                inner.scope = idx;
                inner.scope_chain.push(idx);
                inner.mod_path.push(name.to_string());
                self.items(body, &inner);
            }
        }
    }

    fn use_declaration(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(arg) = node.child_by_field_name("argument") else { return };
        let name = self.t(&arg).split_whitespace().collect::<Vec<_>>().join(" ");
        let sig = signature_until(&node, None, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, NodeKind::Import, &name, Span::of_node(&node), Some(sig), doc);
        let mut out = Vec::new();
        use_tree(arg, "", self.text, &mut out, 0);
        for (target, names) in out {
            let target = relative_to_file(&target, &ctx.mod_path);
            // An inline module's glob of its file (`mod tests { use
            // super::*; }`) imports nothing from elsewhere: the file's own
            // names bind as its names do.
            if target == "self" {
                continue;
            }
            self.b.import(idx, target, names, false, Span::of_node(&node));
        }
    }

    fn constant(&mut self, node: Node<'_>, ctx: &Ctx, kind: NodeKind, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let sig = const_signature(node, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, kind, name, Span::of_node(&node), Some(sig), doc);
        if let Some(ty) = node.child_by_field_name("type") {
            self.mention_types(idx, ty, &ctx.generics);
        }
        if let Some(value) = node.child_by_field_name("value") {
            self.body(value, idx, ctx);
        }
    }

    fn type_alias(&mut self, node: Node<'_>, ctx: &Ctx, prev: &[Node<'_>]) {
        let Some(name) = node.child_by_field_name("name") else { return };
        let name = self.t(&name);
        let sig = signature_until(&node, None, self.text);
        let doc = outer_docs(prev, self.text);
        let idx = self.b.add(ctx.scope, NodeKind::TypeAlias, name, Span::of_node(&node), Some(sig), doc);
        let mut generics = ctx.generics.clone();
        generic_names(node, self.text, &mut generics);
        if let Some(ty) = node.child_by_field_name("type") {
            self.mention_types(idx, ty, &generics);
        }
        if let Some(bounds) = node.child_by_field_name("bounds") {
            self.mention_types(idx, bounds, &generics);
        }
    }

    /// Calls (and nested items) in a function body or initializer; iterative.
    fn body(&mut self, node: Node<'_>, from: usize, ctx: &Ctx) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "call_expression" => {
                    if let Some(function) = n.child_by_field_name("function") {
                        let written = callee(function, self.text, ctx.self_type.as_deref(), 0);
                        // `router.route()` with `router: Router` is `Router.route`,
                        // and so is `Router::new().route()`.
                        let target = on_constructed(&written, &ctx.generics)
                            .or_else(|| written_against(&written, |object| self.typed.get(&from)?.get(object)))
                            .unwrap_or(written);
                        self.call(from, target, Span::of_node(&n));
                    }
                }
                "macro_invocation" => {
                    self.macro_call(n, from, ctx);
                    continue;
                }
                kind if is_item(kind) => {
                    // Only the body node itself: items inside are handled
                    // below, with their preceding siblings.
                    self.item(n, ctx, &[]);
                    continue;
                }
                _ => {}
            }
            let mut cursor = n.walk();
            let start = stack.len();
            if n.kind() == "block" {
                // Statements: nested items get their preceding siblings.
                let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
                for (i, &child) in children.iter().enumerate() {
                    if is_item(child.kind()) {
                        self.item(child, ctx, &children[..i]);
                    } else {
                        stack.push(child);
                    }
                }
            } else {
                stack.extend(n.named_children(&mut cursor));
            }
            stack[start..].reverse();
        }
    }

    fn call(&mut self, from: usize, target: String, span: Span) {
        if target.is_empty() || SKIP_CALLS.contains(&target.as_str()) {
            return;
        }
        self.b.reference(from, RefKind::Calls, target, span);
    }

    /// The items an item-level macro's braces hold when they are Rust items
    /// as written (`pin_project! { pub struct RouteFuture<E> { .. } }`,
    /// `thread_local! { static X: .. }`): tree-sitter leaves a macro's body as
    /// tokens, so the body alone is parsed again, at its own offsets, and its
    /// items added where the macro stands.
    /// A body that does not parse cleanly as items (`bitflags!`'s
    /// `struct F: u32`, `cfg_if!`) adds nothing.
    /// Returns whether it added any.
    fn macro_items(&mut self, node: Node<'_>, ctx: &Ctx) -> bool {
        let mut cursor = node.walk();
        let Some(body) = node.named_children(&mut cursor).find(|c| c.kind() == "token_tree") else { return false };
        let (start, end) = (body.start_byte(), body.end_byte());
        if !self.text[start..end].starts_with('{') || end - start < 3 {
            return false;
        }
        // Only the body is parsed (tree-sitter's included ranges): nodes keep
        // their offsets in the file, and a file of many macros is not read
        // once per macro.
        let (open, close) = (body.start_position(), body.end_position());
        let inner = tree_sitter::Range {
            start_byte: start + 1,
            end_byte: end - 1,
            start_point: tree_sitter::Point { row: open.row, column: open.column + 1 },
            end_point: tree_sitter::Point { row: close.row, column: close.column.saturating_sub(1) },
        };
        let mut parser = tree_sitter::Parser::new();
        if parser.set_language(&LANGUAGE).is_err() || parser.set_included_ranges(&[inner]).is_err() {
            return false;
        }
        let Some(tree) = parser.parse(self.text, None) else { return false };
        let root = tree.root_node();
        let mut items = root.walk();
        let declares = root.named_children(&mut items).any(|c| {
            matches!(
                c.kind(),
                "struct_item" | "enum_item" | "union_item" | "function_item" | "static_item" | "const_item"
            )
        });
        if root.has_error() || !declares {
            return false;
        }
        self.items(root, ctx);
        true
    }

    /// A macro invocation: a call of `name!`, plus calls written in its tokens.
    fn macro_call(&mut self, node: Node<'_>, from: usize, ctx: &Ctx) {
        self.macro_name_call(node, from, ctx);
        let mut cursor = node.walk();
        let trees: Vec<Node<'_>> = node.named_children(&mut cursor).filter(|c| c.kind() == "token_tree").collect();
        for tree in trees {
            self.token_calls(tree, from, ctx, 0);
        }
    }

    /// The call of `name!` a macro invocation is.
    fn macro_name_call(&mut self, node: Node<'_>, from: usize, ctx: &Ctx) {
        if let Some(mac) = node.child_by_field_name("macro") {
            let name = callee(mac, self.text, ctx.self_type.as_deref(), 0);
            self.call(from, format!("{name}!"), Span::of_node(&node));
        }
    }

    /// Heuristic calls inside a token tree: `path(`, `path!(`, `x.m(`.
    fn token_calls(&mut self, tree: Node<'_>, from: usize, ctx: &Ctx, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let mut path = String::new();
        let mut pending_sep: Option<&str> = None;
        let mut bang = false;
        let mut after_keyword = false;
        let mut cursor = tree.walk();
        let children: Vec<Node<'_>> = tree.children(&mut cursor).collect();
        for child in children {
            let kind = child.kind();
            match kind {
                "identifier" | "self" | "super" | "crate" => {
                    let mut word = self.t(&child);
                    if word == "Self"
                        && let Some(st) = ctx.self_type.as_deref()
                    {
                        word = st;
                    }
                    match pending_sep.take() {
                        Some(sep) if !path.is_empty() => {
                            path.push_str(sep);
                            path.push_str(word);
                        }
                        _ => {
                            path.clear();
                            path.push_str(word);
                        }
                    }
                    bang = false;
                }
                "::" | "." if !path.is_empty() && !bang => pending_sep = Some(kind),
                "!" if !path.is_empty() && pending_sep.is_none() => bang = true,
                "token_tree" => {
                    let opens_call = self.t(&child).starts_with('(');
                    if !path.is_empty() && pending_sep.is_none() && !after_keyword && (bang || opens_call) {
                        let target = if bang { format!("{path}!") } else { path.clone() };
                        self.call(from, target, Span::of_node(&child));
                        if bang {
                            path.clear();
                        } else {
                            path.push_str("()");
                        }
                    } else {
                        path.clear();
                    }
                    pending_sep = None;
                    bang = false;
                    self.token_calls(child, from, ctx, depth + 1);
                    after_keyword = false;
                    continue;
                }
                _ => {
                    path.clear();
                    pending_sep = None;
                    bang = false;
                }
            }
            after_keyword = matches!(kind, "fn" | "struct" | "enum" | "union" | "trait" | "mod" | "macro_rules!");
            if after_keyword {
                path.clear();
            }
        }
    }

    /// `Mentions` for the named types in a type, signature or bound.
    fn mention_types(&mut self, from: usize, node: Node<'_>, generics: &[String]) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            let target = match n.kind() {
                "type_identifier" => Some(self.t(&n).to_string()),
                "scoped_type_identifier" => {
                    let written = strip_generics(self.t(&n));
                    let first = written.split("::").next().unwrap_or("");
                    if generics.iter().any(|g| g == first) || first == "Self" { None } else { Some(written) }
                }
                "lifetime" | "primitive_type" | "self_parameter" => continue,
                _ => None,
            };
            if matches!(n.kind(), "type_identifier" | "scoped_type_identifier") {
                if let Some(target) = target
                    && !SKIP_TYPES.contains(&target.as_str())
                    && !generics.contains(&target)
                {
                    self.b.reference_once(from, RefKind::Mentions, target, Span::of_node(&n));
                }
                continue;
            }
            let mut cursor = n.walk();
            let start = stack.len();
            stack.extend(n.named_children(&mut cursor));
            stack[start..].reverse();
        }
    }
}

fn is_item(kind: &str) -> bool {
    matches!(
        kind,
        "function_item"
            | "function_signature_item"
            | "struct_item"
            | "union_item"
            | "enum_item"
            | "trait_item"
            | "impl_item"
            | "mod_item"
            | "use_declaration"
            | "const_item"
            | "static_item"
            | "type_item"
            | "macro_definition"
            | "extern_crate_declaration"
            | "foreign_mod_item"
    )
}

/// A function header; a `where` clause loses its trailing comma.
fn fn_signature(node: Node<'_>, body: Option<Node<'_>>, text: &str) -> String {
    signature_until(&node, body, text).trim_end_matches([',', ' ']).to_string()
}

/// `pub const MAX: usize` (the header without the value).
fn const_signature(node: Node<'_>, text: &str) -> String {
    let value = node.child_by_field_name("value");
    signature_until(&node, value, text).trim_end_matches(['=', ' ']).to_string()
}

/// Adds the generic parameter names (types, lifetimes, consts) of an item.
fn generic_names(node: Node<'_>, text: &str, out: &mut Vec<String>) {
    let Some(params) = node.child_by_field_name("type_parameters") else { return };
    let mut cursor = params.walk();
    for param in params.named_children(&mut cursor) {
        if let Some(name) = param.child_by_field_name("name") {
            out.push(node_text(&name, text).to_string());
        } else if param.kind() == "type_identifier" {
            out.push(node_text(&param, text).to_string());
        }
    }
}

/// A type or trait path without generics, references or `dyn`:
/// `Point<'a, T>` -> `Point`, `fmt::Display` -> `fmt::Display`.
fn type_base_name(node: Node<'_>, text: &str) -> String {
    let mut node = node;
    loop {
        let inner = match node.kind() {
            "type_identifier" | "identifier" => return node_text(&node, text).to_string(),
            "scoped_type_identifier" | "scoped_identifier" => return strip_generics(node_text(&node, text)),
            "generic_type" | "reference_type" | "pointer_type" => node.child_by_field_name("type"),
            "dynamic_type" | "abstract_type" => node.child_by_field_name("trait"),
            "higher_ranked_trait_bound" => node.child_by_field_name("value"),
            "function_type" | "removed_trait_bound" | "lifetime" | "tuple_type" => None,
            _ => return node_text(&node, text).split_whitespace().collect(),
        };
        match inner {
            Some(inner) => node = inner,
            None => return String::new(),
        }
    }
}

/// Removes `<...>` groups and whitespace from a path and a leading `::`.
fn strip_generics(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0usize;
    for ch in path.chars() {
        match ch {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            c if depth == 0 && !c.is_whitespace() => out.push(c),
            _ => {}
        }
    }
    let out = out.replace("::::", "::");
    out.trim_start_matches("::").trim_end_matches("::").to_string()
}

/// The names of function `function` whose type is plain, name -> type:
/// parameters of a named type (`router: Router<S>`, `req: &mut Request`),
/// and variables bound once with one (`let r: Router = ..`,
/// `let r = Router::new()`, `Router::default()`, `Router { .. }`, `Self::new()`
/// in an impl). A name bound again anywhere in the function (a shadowing
/// `let`, a closure's or a pattern's binding) is left out: its type is not
/// certain.
fn typed_locals(
    function: Node<'_>,
    text: &str,
    self_type: Option<&str>,
    generics: &[String],
) -> HashMap<String, String> {
    // A type's path as written (`Self` read as the impl's type), when it
    // names a type of this code: not a generic parameter nor a std type.
    let named = |path: Node<'_>| -> Option<String> {
        let name: String = node_text(&path, text).split_whitespace().collect();
        let name = if name == "Self" { self_type?.to_string() } else { name };
        names_code_type(&name, generics).then_some(name)
    };
    let plain = |ty: Node<'_>| -> Option<String> {
        let mut ty = ty;
        while matches!(ty.kind(), "reference_type" | "generic_type") {
            ty = ty.child_by_field_name("type")?;
        }
        matches!(ty.kind(), "type_identifier" | "scoped_type_identifier").then(|| named(ty)).flatten()
    };
    let mut params: HashMap<String, Option<String>> = HashMap::new();
    if let Some(list) = function.child_by_field_name("parameters") {
        for param in named_children(list).filter(|p| p.kind() == "parameter") {
            if let Some(pattern) = param.child_by_field_name("pattern").filter(|p| p.kind() == "identifier") {
                let ty = param.child_by_field_name("type").and_then(plain);
                params.insert(node_text(&pattern, text).to_string(), ty);
            }
        }
    }
    let mut bindings: HashMap<&str, usize> = HashMap::new();
    let mut locals: Vec<(&str, String)> = Vec::new();
    let mut stack: Vec<Node<'_>> = function.child_by_field_name("body").into_iter().collect();
    while let Some(n) = stack.pop() {
        let pattern = match n.kind() {
            "let_declaration" | "let_condition" | "for_expression" | "match_arm" => n.child_by_field_name("pattern"),
            "closure_parameters" => Some(n),
            _ => None,
        };
        if let Some(pattern) = pattern {
            let mut ids = Vec::new();
            let mut walk = vec![pattern];
            while let Some(p) = walk.pop() {
                match p.kind() {
                    "identifier" => ids.push(node_text(&p, text)),
                    // A path in a pattern (`Some(x)`, `Kind::A`) binds nothing itself.
                    "scoped_identifier" | "type_identifier" => {}
                    _ => walk.extend(named_children(p)),
                }
            }
            for id in &ids {
                *bindings.entry(id).or_default() += 1;
            }
            if n.kind() == "let_declaration"
                && let [id] = ids.as_slice()
                && pattern.kind() == "identifier"
            {
                let ty = n.child_by_field_name("type").and_then(plain).or_else(|| {
                    let mut value = n.child_by_field_name("value")?;
                    if value.kind() == "try_expression" {
                        value = value.named_child(0)?;
                    }
                    match value.kind() {
                        "struct_expression" => plain(value.child_by_field_name("name")?),
                        "call_expression" => {
                            let function = value.child_by_field_name("function")?;
                            let path = function.child_by_field_name("path").filter(|p| {
                                function.kind() == "scoped_identifier"
                                    && matches!(p.kind(), "identifier" | "scoped_identifier")
                            })?;
                            let name = function.child_by_field_name("name").map(|n| node_text(&n, text))?;
                            matches!(name, "new" | "default").then(|| named(path)).flatten()
                        }
                        _ => None,
                    }
                });
                if let Some(ty) = ty {
                    locals.push((id, ty));
                }
            }
        }
        // A nested item is a node of its own; a closure's calls are this function's.
        if !is_item(n.kind()) {
            stack.extend(named_children(n));
        }
    }
    let mut typed: HashMap<String, String> = params
        .iter()
        .filter(|(name, _)| !bindings.contains_key(name.as_str()))
        .filter_map(|(name, ty)| Some((name.clone(), ty.clone()?)))
        .collect();
    for (name, ty) in locals {
        if bindings.get(name) == Some(&1) && !params.contains_key(name) {
            typed.insert(name.to_string(), ty);
        }
    }
    typed
}

/// Types of the standard library a method call is not bound through.
const STD_TYPES: &[&str] = &[
    "Option", "Result", "Vec", "String", "Box", "Arc", "Rc", "HashMap", "HashSet", "BTreeMap", "BTreeSet", "VecDeque",
    "Cow", "Mutex", "RwLock", "RefCell", "Cell", "Path", "PathBuf", "Duration", "Instant",
];

/// Whether the type path `path` (`Router`, `crate::routing::Router`) names
/// a type of this code: capitalised, not a generic parameter, not a std type.
fn names_code_type(path: &str, generics: &[String]) -> bool {
    let last = path.rsplit("::").next().unwrap_or(path);
    last.starts_with(|c: char| c.is_ascii_uppercase())
        && !generics.iter().any(|g| g == last)
        && !STD_TYPES.contains(&last)
}

/// A call on what a type's `new()` or `default()` makes, written against
/// that type as a local bound to it is (`Router::new().route` ->
/// `Router.route`): the type a plain path of this code names (not a
/// generic parameter nor a std type), the member a plain name. A longer
/// chain (`Router::new().route().layer`) stays as written.
fn on_constructed(written: &str, generics: &[String]) -> Option<String> {
    ["::new().", "::default()."].iter().find_map(|constructor| {
        let (ty, member) = written.split_once(constructor)?;
        let plain_type = !ty.contains(['.', '(', '<']) && names_code_type(ty, generics);
        let plain_member = !member.is_empty() && !member.contains(['.', '(', ':']);
        (plain_type && plain_member).then(|| format!("{ty}.{member}"))
    })
}

/// The callee of a call as written: `f`, `Type::new`, `self.x`, `a.b().c`.
fn callee(node: Node<'_>, text: &str, self_type: Option<&str>, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "_".to_string();
    }
    let recurse = |n: Option<Node<'_>>| n.map_or_else(|| "_".to_string(), |n| callee(n, text, self_type, depth + 1));
    match node.kind() {
        "identifier" | "type_identifier" => {
            let word = node_text(&node, text);
            match (word, self_type) {
                ("Self", Some(st)) => st.to_string(),
                _ => word.to_string(),
            }
        }
        "self" | "super" | "crate" | "field_identifier" | "metavariable" => node_text(&node, text).to_string(),
        "scoped_identifier" | "scoped_type_identifier" => {
            let name = node.child_by_field_name("name").map_or("", |n| node_text(&n, text));
            match node.child_by_field_name("path") {
                Some(path) => {
                    let prefix = callee(path, text, self_type, depth + 1);
                    if prefix.is_empty() { name.to_string() } else { format!("{prefix}::{name}") }
                }
                None => name.to_string(),
            }
        }
        "generic_type" | "generic_type_with_turbofish" => recurse(node.child_by_field_name("type")),
        "generic_function" => recurse(node.child_by_field_name("function")),
        "bracketed_type" => match node.named_child(0) {
            Some(q) if q.kind() == "qualified_type" => recurse(q.child_by_field_name("alias")),
            other => recurse(other),
        },
        "field_expression" => {
            let field = node.child_by_field_name("field").map_or("", |n| node_text(&n, text));
            format!("{}.{field}", recurse(node.child_by_field_name("value")))
        }
        "call_expression" => format!("{}()", recurse(node.child_by_field_name("function"))),
        "await_expression" | "try_expression" | "parenthesized_expression" => recurse(node.named_child(0)),
        _ => "_".to_string(),
    }
}

/// Flattens a use tree into `(target, names)` imports.
fn use_tree(node: Node<'_>, prefix: &str, text: &str, out: &mut Vec<(String, Vec<String>)>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    let join = |a: &str, b: &str| {
        let b = b.trim_start_matches("::");
        if a.is_empty() {
            b.to_string()
        } else if b.is_empty() {
            a.to_string()
        } else {
            format!("{a}::{b}")
        }
    };
    let path_of = |n: Node<'_>| strip_generics(node_text(&n, text));
    match node.kind() {
        "identifier" | "scoped_identifier" | "crate" | "super" | "metavariable" => {
            let full = join(prefix, &path_of(node));
            let name = last_segment(&full).to_string();
            out.push((full, vec![name]));
        }
        "self" => {
            if prefix.is_empty() {
                out.push(("self".to_string(), vec!["self".to_string()]));
            } else {
                out.push((prefix.to_string(), vec![last_segment(prefix).to_string()]));
            }
        }
        "use_as_clause" => {
            if let Some(path) = node.child_by_field_name("path") {
                use_tree(path, prefix, text, out, depth + 1);
            }
        }
        "use_wildcard" => {
            let path = node.named_child(0).map(path_of).unwrap_or_default();
            out.push((join(prefix, &path), vec!["*".to_string()]));
        }
        "scoped_use_list" => {
            let path = node.child_by_field_name("path").map(path_of).unwrap_or_default();
            if let Some(list) = node.child_by_field_name("list") {
                use_tree(list, &join(prefix, &path), text, out, depth + 1);
            }
        }
        "use_list" => {
            let mut names = Vec::new();
            let mut cursor = node.walk();
            for item in node.named_children(&mut cursor) {
                let simple = match item.kind() {
                    "identifier" => Some(node_text(&item, text).to_string()),
                    "self" if !prefix.is_empty() => Some(last_segment(prefix).to_string()),
                    "use_as_clause" => item
                        .child_by_field_name("path")
                        .filter(|p| p.kind() == "identifier")
                        .map(|p| node_text(&p, text).to_string()),
                    _ => None,
                };
                match simple {
                    Some(name) if !prefix.is_empty() => names.push(name),
                    _ => use_tree(item, prefix, text, out, depth + 1),
                }
            }
            if !names.is_empty() {
                out.push((prefix.to_string(), names));
            }
        }
        _ => {}
    }
}

/// `use self::X::*` (or `use self::X`) where `X` is no `mod X;` of the
/// file: an item of the file itself or a name another `use` of the file
/// brings in (`use self::PagingMode::*` in a function, after `use
/// crate::paging::PagingMode`). The first imports nothing from elsewhere and
/// is dropped, as `use super::*` in a file's inline `mod tests` is; the
/// second is read through that `use` (`crate::paging::PagingMode`). Left as
/// written, neither names a module file, and both showed as external.
fn local_self_imports(analysis: &mut FileAnalysis) {
    let declared: Vec<&str> = analysis
        .nodes
        .iter()
        .skip(1)
        .filter(|n| n.parent == Some(0) && n.kind != NodeKind::Import)
        .map(|n| n.name.as_str())
        .collect();
    let is_mod_declaration = |r: &Reference| {
        analysis.nodes.get(r.from).is_some_and(|n| {
            n.kind == NodeKind::Import
                && n.signature.as_deref().is_some_and(|s| s.split_whitespace().any(|w| w == "mod"))
        })
    };
    let modules: Vec<&str> = analysis
        .references
        .iter()
        .filter(|r| r.kind == RefKind::Import && is_mod_declaration(r))
        .filter_map(|r| r.target.strip_prefix("self::"))
        .collect();
    // Each name a `use` not starting at `self` brings in, and its full path.
    let mut imported: HashMap<&str, String> = HashMap::new();
    for r in &analysis.references {
        if r.kind != RefKind::Import || r.target == "self" || r.target.starts_with("self::") {
            continue;
        }
        for name in r.names.iter().filter(|n| *n != "*") {
            let full = if last_segment(&r.target) == name { r.target.clone() } else { format!("{}::{name}", r.target) };
            imported.entry(name.as_str()).or_insert(full);
        }
    }
    let mut rewritten: Vec<(usize, Option<String>)> = Vec::new();
    for (i, r) in analysis.references.iter().enumerate() {
        let Some(rest) = r.target.strip_prefix("self::").filter(|_| r.kind == RefKind::Import) else { continue };
        let (first, tail) = rest.split_once("::").map_or((rest, None), |(f, t)| (f, Some(t)));
        if modules.contains(&first) {
            continue;
        }
        if declared.contains(&first) {
            rewritten.push((i, None));
        } else if let Some(full) = imported.get(first) {
            rewritten.push((i, Some(tail.map_or_else(|| full.clone(), |t| format!("{full}::{t}")))));
        }
    }
    for (i, target) in rewritten.into_iter().rev() {
        match target {
            Some(target) => analysis.references[i].target = target,
            None => {
                analysis.references.remove(i);
            }
        }
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit("::").next().unwrap_or(path)
}

/// Rewrites a `self::`/`super::` path written inside inline modules
/// `mod_path` so it is relative to the file's module.
fn relative_to_file(path: &str, mod_path: &[String]) -> String {
    if mod_path.is_empty() {
        return path.to_string();
    }
    let segs: Vec<&str> = path.split("::").collect();
    let mut out: Vec<&str> = Vec::new();
    match segs[0] {
        "self" => {
            out.push("self");
            out.extend(mod_path.iter().map(String::as_str));
            out.extend(&segs[1..]);
        }
        "super" => {
            let supers = segs.iter().take_while(|s| **s == "super").count();
            if supers <= mod_path.len() {
                out.push("self");
                out.extend(mod_path[..mod_path.len() - supers].iter().map(String::as_str));
            } else {
                out.extend(std::iter::repeat_n("super", supers - mod_path.len()));
            }
            out.extend(&segs[supers..]);
        }
        _ => return path.to_string(),
    }
    out.join("::")
}

/// `#[test]`, `#[tokio::test]`, `#[rstest]`, `#[test_case(..)]` before an item.
fn has_test_attribute(prev: &[Node<'_>], text: &str) -> bool {
    for &sibling in prev.iter().rev() {
        match sibling.kind() {
            "attribute_item" => {
                if let Some(attr) = sibling.named_child(0)
                    && let Some(path) = attr.named_child(0)
                {
                    let path = node_text(&path, text);
                    let last = last_segment(path);
                    if last == "test" || matches!(path, "rstest" | "test_case" | "quickcheck" | "bench") {
                        return true;
                    }
                }
            }
            "line_comment" | "block_comment" => {}
            _ => return false,
        }
    }
    false
}

fn is_doc_comment(node: &Node<'_>, marker: &str) -> bool {
    matches!(node.kind(), "line_comment" | "block_comment") && node.child_by_field_name(marker).is_some()
}

/// Cleans a run of doc comments (in source order): consecutive line
/// comments are cleaned together so indentation in code blocks survives.
fn clean_doc_run(parts: &[(bool, String)]) -> Option<String> {
    let mut cleaned: Vec<String> = Vec::new();
    let mut lines = String::new();
    for (is_line, raw) in parts {
        if *is_line {
            lines.push_str(raw.trim_end_matches('\n'));
            lines.push('\n');
            continue;
        }
        if !lines.is_empty() {
            cleaned.extend(clean_doc(&lines));
            lines.clear();
        }
        cleaned.extend(clean_doc(raw));
    }
    if !lines.is_empty() {
        cleaned.extend(clean_doc(&lines));
    }
    if cleaned.is_empty() { None } else { Some(cleaned.join("\n")) }
}

/// The `///`, `/** */` and `#[doc = ".."]` docs before an item, skipping
/// attributes and plain comments in between.
fn outer_docs(prev: &[Node<'_>], text: &str) -> Option<String> {
    let mut parts: Vec<(bool, String)> = Vec::new();
    for &sibling in prev.iter().rev() {
        match sibling.kind() {
            "attribute_item" => {
                if let Some(doc) = doc_attribute(sibling, text) {
                    parts.push((false, doc));
                }
            }
            "line_comment" | "block_comment" => {
                if is_doc_comment(&sibling, "outer") {
                    parts.push((sibling.kind() == "line_comment", node_text(&sibling, text).to_string()));
                }
            }
            _ => break,
        }
    }
    parts.reverse();
    clean_doc_run(&parts)
}

/// `#[doc = "text"]` -> `text` (as a `///` line so cleaning is uniform).
fn doc_attribute(item: Node<'_>, text: &str) -> Option<String> {
    let attr = item.named_child(0)?;
    let path = attr.named_child(0)?;
    if node_text(&path, text) != "doc" {
        return None;
    }
    let value = attr.child_by_field_name("value")?;
    let raw = node_text(&value, text).trim_matches('"');
    Some(format!("/// {raw}"))
}

/// The `//!` and `/*! */` docs at the start of a file or inline module.
fn inner_docs(list: Node<'_>, text: &str) -> Option<String> {
    let mut parts: Vec<(bool, String)> = Vec::new();
    let mut cursor = list.walk();
    for child in list.named_children(&mut cursor) {
        match child.kind() {
            "line_comment" | "block_comment" => {
                if is_doc_comment(&child, "inner") {
                    parts.push((child.kind() == "line_comment", node_text(&child, text).to_string()));
                }
            }
            "inner_attribute_item" => {}
            _ => break,
        }
    }
    clean_doc_run(&parts)
}

fn join_docs(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    }
}

/// Renames nodes (`renames`: index -> simple name) and reorders nodes into
/// source preorder: each node follows its parent and precedes its later
/// siblings; references are ordered by position. Used by analyzers that
/// attach members to a container found later in the walk (impl blocks, Go
/// methods).
pub(super) fn source_ordered(mut analysis: FileAnalysis, renames: &[(usize, String)]) -> FileAnalysis {
    for (index, name) in renames {
        if let Some(node) = analysis.nodes.get_mut(*index) {
            node.name.clone_from(name);
        }
    }
    let n = analysis.nodes.len();
    let mut kids: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, node) in analysis.nodes.iter().enumerate().skip(1) {
        if let Some(p) = node.parent
            && p < n
        {
            kids[p].push(i);
        }
    }
    for list in &mut kids {
        list.sort_by_key(|&i| (analysis.nodes[i].span.start_byte, i));
    }
    let mut order = Vec::with_capacity(n);
    let mut stack = vec![0usize];
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(kids[i].iter().rev());
    }
    analysis.references.sort_by_key(|r| r.span.start_byte);
    if order.len() != n || order.iter().enumerate().all(|(a, b)| a == *b) {
        return analysis;
    }
    let mut new_index = vec![0usize; n];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    let mut old_nodes: Vec<Option<SymbolNode>> = analysis.nodes.into_iter().map(Some).collect();
    analysis.nodes = order
        .iter()
        .filter_map(|&old| {
            let mut node = old_nodes[old].take()?;
            node.parent = node.parent.map(|p| new_index[p]);
            Some(node)
        })
        .collect();
    for r in &mut analysis.references {
        r.from = new_index[r.from];
    }
    analysis
}

// ---------------------------------------------------------------------------
// Import resolution.

/// Files that are crate roots: `lib.rs`, `main.rs`, `build.rs`, and files
/// directly in a package's `src/bin`, `tests`, `examples` or `benches`.
fn is_crate_root(ctx: &ResolveContext<'_>, path: &str) -> bool {
    let name = file_name(path);
    if matches!(name, "lib.rs" | "main.rs" | "build.rs") {
        return true;
    }
    let dir = dir_of(path);
    let parent = file_name(dir);
    let package = match parent {
        "bin" => {
            let src = dir_of(dir);
            if file_name(src) != "src" {
                return false;
            }
            dir_of(src)
        }
        "tests" | "examples" | "benches" => dir_of(dir),
        _ => return false,
    };
    ctx.exists(&join_path(package, "Cargo.toml"))
}

/// The directory holding the submodules of the module in `path`.
fn module_dir(ctx: &ResolveContext<'_>, path: &str) -> String {
    if file_name(path) == "mod.rs" || is_crate_root(ctx, path) {
        dir_of(path).to_string()
    } else {
        path.strip_suffix(".rs").unwrap_or(path).to_string()
    }
}

/// The file of the module whose directory is `dir`.
fn module_file(ctx: &ResolveContext<'_>, dir: &str) -> Option<String> {
    let mut candidates = Vec::with_capacity(4);
    if !dir.is_empty() {
        candidates.push(format!("{dir}.rs"));
    }
    candidates.push(join_path(dir, "mod.rs"));
    candidates.push(join_path(dir, "lib.rs"));
    candidates.push(join_path(dir, "main.rs"));
    ctx.first_existing(candidates)
}

/// Resolves `crate::`, `self::`, `super::` and local-module paths to the
/// file of the longest module prefix that exists.
fn resolve_rust_path(ctx: &ResolveContext<'_>, from_path: &str, target: &str) -> Option<String> {
    let segs: Vec<&str> = target.split("::").filter(|s| !s.is_empty()).collect();
    let first = *segs.first()?;
    let here = module_dir(ctx, from_path);
    let (base, rest, base_file_ok) = match first {
        "crate" => {
            let root = if is_crate_root(ctx, from_path) {
                dir_of(from_path).to_string()
            } else {
                let mut dir = dir_of(from_path);
                loop {
                    if ctx.exists(&join_path(dir, "lib.rs")) || ctx.exists(&join_path(dir, "main.rs")) {
                        break dir.to_string();
                    }
                    if dir.is_empty() {
                        return None;
                    }
                    dir = dir_of(dir);
                }
            };
            (root, &segs[1..], true)
        }
        "self" => (here, &segs[1..], false),
        "super" => {
            let supers = segs.iter().take_while(|s| **s == "super").count();
            let mut dir = here.as_str();
            for _ in 0..supers {
                if dir.is_empty() {
                    return None;
                }
                dir = dir_of(dir);
            }
            (dir.to_string(), &segs[supers..], true)
        }
        _ => (here, &segs[..], false),
    };
    for k in (1..=rest.len()).rev() {
        let dir = join_path(&base, &rest[..k].join("/"));
        if let Some(found) = ctx.first_existing([format!("{dir}.rs"), format!("{dir}/mod.rs")]) {
            return (found != from_path).then_some(found);
        }
    }
    if base_file_ok {
        let found = if first == "crate" {
            ctx.first_existing([join_path(&base, "lib.rs"), join_path(&base, "main.rs")])
        } else {
            module_file(ctx, &base)
        };
        return found.filter(|f| f != from_path);
    }
    if !matches!(first, "self" | "super") {
        return workspace_crate_path(ctx, from_path, first, &segs[1..]);
    }
    None
}

/// `axum_core::response::X` in a workspace: the crate whose directory is
/// `axum-core` or `axum_core` (one of them, anywhere in the resource) with a
/// `src/lib.rs`, then the deepest module of the path that exists there.
fn workspace_crate_path(ctx: &ResolveContext<'_>, from_path: &str, krate: &str, rest: &[&str]) -> Option<String> {
    let mut libs: Vec<&str> = Vec::new();
    for dir in [krate.replace('_', "-"), krate.to_string()] {
        for lib in ctx.ending_with(&format!("{dir}/src/lib.rs")) {
            if !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    let [lib] = libs.as_slice() else { return None };
    let src = dir_of(lib);
    for k in (1..=rest.len()).rev() {
        let dir = join_path(src, &rest[..k].join("/"));
        if let Some(found) = ctx.first_existing([format!("{dir}.rs"), format!("{dir}/mod.rs")]) {
            return (found != from_path).then_some(found);
        }
    }
    (*lib != from_path).then(|| lib.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    const FIXTURE: &str = r#"//! Storage layer for points.
//!
//! Second paragraph.

use std::collections::HashMap;
use crate::shapes::circle::Circle;
use super::geometry::{Angle, Vector as Vec2};
use std::{fmt::{self, Display}, io};
pub use self::inner::Thing as T;
use prelude::*;
mod store;
pub mod api;

/// A point in space.
///
/// ```
///     let p = Point::origin();
/// ```
#[derive(Debug, Clone)]
pub struct Point<'a, T: Clone> {
    /// X coordinate.
    pub x: i32,
    #[serde(skip)]
    label: &'a str,
    data: Vec<Angle<T>>,
}

/// A tuple struct.
pub struct Meters(pub f64, Unit);

union Bits { int: u32, float: f32 }

/// Shapes we draw.
pub enum Shape {
    /// A circle.
    Circle { radius: f64, center: Point<'static, u8> },
    Square(f64),
    Empty,
}

/// Things that draw.
pub trait Draw: Clone + fmt::Debug {
    /// Draws on a canvas.
    fn draw(&self, canvas: &mut Canvas) -> Result<(), DrawError>;
    fn name(&self) -> String {
        Self::default_name()
    }
    type Output;
    const SIDES: usize;
}

impl<'a, T: Clone> Point<'a, T> {
    /// Creates a point.
    pub fn new(x: i32) -> Self {
        let data = Vec::new();
        Self::check(x);
        helpers::validate(x).unwrap();
        println!("new point {}", describe(x));
        Point { x, label: "", data }
    }

    fn check(x: i32) -> bool {
        x > 0
    }
}

impl Draw for Shape {
    fn draw(&self, canvas: &mut Canvas) -> Result<(), DrawError> {
        self.render(canvas);
        canvas.paint(self).await?.flush();
        Ok(())
    }
    type Output = ();
    const SIDES: usize = 0;
}

impl fmt::Display for Remote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

pub const MAX_POINTS: usize = 1024;
static mut COUNTER: u64 = compute(3);
pub type PointMap = HashMap<String, Point<'static, i32>>;

/// Squares a value.
macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

/// Adds two numbers.
pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

async fn run<F: Fn() -> u8>(job: F, cfg: &Config) -> io::Result<()>
where
    F: Send + Worker,
{
    let c = || job();
    c();
    Ok(())
}

mod nested {
    //! Inner module.
    use super::Point;
    pub fn inner() -> Point<'static, u8> {
        todo!()
    }
    struct Hidden;
    impl Hidden {
        fn peek(&self) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(1, 2), 3);
    }

    #[tokio::test]
    async fn runs() {}

    fn helper() {}
}
"#;

    fn analyze(text: &str) -> FileAnalysis {
        RustAnalyzer.analyze("rust", "src/geo/points.rs", text)
    }

    use crate::lang::test_support::assert_spans_are_declarations;

    fn assert_provenance(analysis: &FileAnalysis, text: &str) {
        assert_spans_are_declarations(analysis, text);
        for node in &analysis.nodes[1..] {
            let slice = node.span.slice(text);
            assert!(!slice.is_empty(), "{} has an empty span", node.symbol_path);
            let first = slice.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap();
            let ok = [
                "pub",
                "fn",
                "struct",
                "enum",
                "union",
                "trait",
                "mod",
                "use",
                "const",
                "static",
                "type",
                "async",
                "unsafe",
                "extern",
                "macro_rules",
            ]
            .contains(&first)
                || slice.starts_with(node.name.as_str());
            assert!(ok, "{} span starts with {:?}", node.symbol_path, &slice[..slice.len().min(20)]);
        }
        for r in &analysis.references {
            assert!(!r.span.slice(text).is_empty());
        }
    }

    #[test]
    fn outline_of_a_realistic_file() {
        let analysis = analyze(FIXTURE);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        assert_provenance(&analysis, FIXTURE);
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn items_inside_an_item_macros_braces_are_nodes_where_they_stand() {
        let text = r#"use pin_project_lite::pin_project;
pin_project! {
    /// Response future for [`Route`].
    pub struct RouteFuture<E> {
        #[pin]
        inner: Oneshot<E>,
        top_level: bool,
    }
}

impl<E> RouteFuture<E> {
    fn new(inner: Oneshot<E>) -> Self { Self { inner, top_level: true } }
}

thread_local! { static DEPTH: Cell<u32> = Cell::new(0); }

bitflags! {
    pub struct Flags: u32 { const A = 1; }
}

vec_like! { 1, 2, 3 }
"#;
        let analysis = analyze(text);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        assert_provenance(&analysis, text);
        let future = analysis.nodes.iter().find(|n| n.symbol_path == "RouteFuture").unwrap();
        assert_eq!(future.kind, NodeKind::Struct);
        assert_eq!(future.doc.as_deref(), Some("Response future for [`Route`]."));
        assert!(future.span.slice(text).starts_with("pub struct RouteFuture<E> {"));
        assert!(future.span.slice(text).ends_with("top_level: bool,\n    }"));
        let new = analysis.nodes.iter().find(|n| n.symbol_path == "RouteFuture.new").unwrap();
        assert_eq!(analysis.nodes[new.parent.unwrap()].symbol_path, "RouteFuture");
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "DEPTH"));
        // Bodies that are not Rust items as written add nothing.
        assert!(!analysis.nodes.iter().any(|n| n.name == "Flags" || n.name == "A"));
    }

    #[test]
    fn docs_keep_code_block_indentation() {
        let analysis = analyze(FIXTURE);
        let point = analysis.nodes.iter().find(|n| n.symbol_path == "Point").unwrap();
        assert_eq!(point.doc.as_deref(), Some("A point in space.\n\n```\n    let p = Point::origin();\n```"));
        assert_eq!(analysis.nodes[0].doc.as_deref(), Some("Storage layer for points.\n\nSecond paragraph."));
        let remote_fmt = analysis.nodes.iter().find(|n| n.symbol_path == "Remote.fmt").unwrap();
        assert_eq!(remote_fmt.name, "fmt");
        assert_eq!(remote_fmt.parent, Some(0));
        // Preorder: every parent precedes its children.
        for (i, node) in analysis.nodes.iter().enumerate() {
            assert!(node.parent.is_none_or(|p| p < i));
        }
    }

    #[test]
    fn doc_forms() {
        let text = "/*! Block inner. */\n#![allow(dead_code)]\n\n/** Block outer. */\n#[doc = \"Attr doc.\"]\n// plain\n#[inline]\nfn f() {}\n\n// not a doc\nfn g() {}\n";
        let analysis = analyze(text);
        assert_eq!(analysis.nodes[0].doc.as_deref(), Some("Block inner."));
        let f = analysis.nodes.iter().find(|n| n.name == "f").unwrap();
        assert_eq!(f.doc.as_deref(), Some("Block outer.\nAttr doc."));
        let g = analysis.nodes.iter().find(|n| n.name == "g").unwrap();
        assert_eq!(g.doc, None);
    }

    #[test]
    fn calls_on_what_a_constructor_makes_are_written_against_its_type() {
        let generics = vec!["S".to_string()];
        assert_eq!(on_constructed("Router::new().route", &generics).as_deref(), Some("Router.route"));
        assert_eq!(on_constructed("axum::Router::default().layer", &generics).as_deref(), Some("axum::Router.layer"));
        assert_eq!(on_constructed("Router::new().route().layer", &generics), None, "a longer chain");
        assert_eq!(on_constructed("Vec::new().push", &generics), None, "a std type");
        assert_eq!(on_constructed("S::default().get", &generics), None, "a generic parameter");
        assert_eq!(on_constructed("router::new().route", &generics), None, "not a type");
        assert_eq!(on_constructed("Router::with_state().route", &generics), None, "not a constructor");
    }

    #[test]
    fn calls_on_names_of_a_plain_type_are_written_against_it() {
        let text = r#"
impl Server {
    fn serve(&self, router: Router<S>, req: &mut Request, n: usize, opt: Option<Config>) {
        router.route("/");
        req.body();
        n.pow(2);
        opt.unwrap();
        let app = App::new();
        app.run();
        let me = Self::default();
        me.stop();
        let b = Builder { x: 1 };
        b.build();
        let s: Store = load()?;
        s.get();
        let v = Vec::new();
        v.push(1);
        let t = Twice::new();
        let t = t.clone();
        t.call();
        items.iter().for_each(|conn| conn.poll());
        if let Some(req) = next() {
            req.body();
        }
        Router::new().route("/").layer(l);
        Self::new().stop();
    }
}
"#;
        let analysis = analyze(text);
        let calls = crate::lang::test_support::call_targets(&analysis);
        assert_eq!(
            calls,
            [
                "Router.route",
                "req.body",
                "n.pow",
                "opt.unwrap",
                "App::new",
                "App.run",
                "Server::default",
                "Server.stop",
                "Builder.build",
                "load",
                "Store.get",
                "Vec::new",
                "v.push",
                "Twice::new",
                "t.clone",
                "t.call",
                "items.iter().for_each",
                "items.iter",
                "conn.poll",
                "next",
                "req.body",
                // What a constructor makes is of its type; a longer chain stays.
                "Router::new().route().layer",
                "Router.route",
                "Router::new",
                "Server.stop",
                "Server::new"
            ]
        );
    }

    #[test]
    fn item_level_macros_are_calls() {
        let text = "lazy_static! { static ref X: u8 = make(); }\nthread_local!(static Y: u8 = init());\n";
        let analysis = analyze(text);
        let calls: Vec<(usize, &str)> = analysis.references.iter().map(|r| (r.from, r.target.as_str())).collect();
        // `lazy_static!`'s braces hold a static as tree-sitter reads it
        // (`static ref`): a node, calling `make` itself.
        assert_eq!(calls, [(0, "lazy_static!"), (1, "make"), (0, "thread_local!"), (0, "init")]);
        assert_eq!(analysis.nodes[1].symbol_path, "X");
    }

    #[test]
    fn syntax_errors_still_extract() {
        let text = "/// Broken.\npub(crate) fn broken( {\n    let x = ;\n}\n\nstruct After { a: u8 }\n";
        let analysis = analyze(text);
        assert!(!analysis.warnings.is_empty());
        assert_provenance(&analysis, text);
        insta::assert_snapshot!(analysis.outline());
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut text = String::new();
        text.push_str(&"mod m { ".repeat(3000));
        text.push_str(&"}".repeat(3000));
        text.push_str("\nfn f() { ");
        text.push_str(&"{ ".repeat(3000));
        text.push_str("g();");
        text.push_str(&" }".repeat(3000));
        text.push_str(" let x = 1");
        text.push_str(&" + a.b()".repeat(20000));
        text.push_str("; y");
        text.push_str(&".c()".repeat(5000));
        text.push_str("; }\nfn h(x: ");
        text.push_str(&"&".repeat(3000));
        text.push_str("T) {}\nimpl X for ");
        text.push_str(&"&".repeat(3000));
        text.push_str("Y {}\n");
        let analysis = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || analyze(&text))
            .unwrap()
            .join()
            .expect("no stack overflow");
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "f"));
    }

    #[test]
    fn garbage_never_panics() {
        for text in ["", "fn", "impl", "impl X for {", "use ::{", "mod a { mod b { impl C {", "\u{feff}é fn é() {}"] {
            let analysis = analyze(text);
            assert_provenance(&analysis, text);
        }
    }

    fn files(paths: &[&str]) -> BTreeSet<String> {
        paths.iter().map(|p| p.to_string()).collect()
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
    fn paths_into_a_workspace_crate_resolve_to_its_modules() {
        let set = files(&[
            "axum/src/lib.rs",
            "axum/src/extract/mod.rs",
            "axum/src/extract/ws.rs",
            "axum-core/src/lib.rs",
            "axum-core/src/response/mod.rs",
            "examples/chat/src/main.rs",
            "a/dup/src/lib.rs",
            "b/dup/src/lib.rs",
        ]);
        let ctx = ResolveContext::new(&set);
        let r = |from: &str, target: &str| RustAnalyzer.resolve_import(&ctx, from, &import(target));
        let main = "examples/chat/src/main.rs";
        assert_eq!(r(main, "axum::extract").as_deref(), Some("axum/src/extract/mod.rs"));
        assert_eq!(r(main, "axum::extract::ws::Message").as_deref(), Some("axum/src/extract/ws.rs"));
        assert_eq!(r(main, "axum::Router").as_deref(), Some("axum/src/lib.rs"), "the crate root");
        assert_eq!(
            r("axum/src/lib.rs", "axum_core::response::IntoResponse").as_deref(),
            Some("axum-core/src/response/mod.rs")
        );
        assert_eq!(r(main, "dup::Thing"), None, "two crates named dup");
        assert_eq!(r(main, "tokio::net::TcpListener"), None, "not in the workspace");
    }

    #[test]
    fn resolves_module_paths() {
        let set = files(&[
            "Cargo.toml",
            "build.rs",
            "helper.rs",
            "src/lib.rs",
            "src/main.rs",
            "src/store.rs",
            "src/store/db.rs",
            "src/api/mod.rs",
            "src/api/routes.rs",
            "src/bin/tool.rs",
            "src/bin/util.rs",
            "tests/it.rs",
            "tests/common/mod.rs",
        ]);
        let ctx = ResolveContext::new(&set);
        let r = |from: &str, target: &str| RustAnalyzer.resolve_import(&ctx, from, &import(target));
        // `mod x;` declarations.
        assert_eq!(r("src/lib.rs", "self::store").as_deref(), Some("src/store.rs"));
        assert_eq!(r("src/lib.rs", "self::api").as_deref(), Some("src/api/mod.rs"));
        assert_eq!(r("src/store.rs", "self::db").as_deref(), Some("src/store/db.rs"));
        assert_eq!(r("src/api/mod.rs", "self::routes").as_deref(), Some("src/api/routes.rs"));
        assert_eq!(r("src/lib.rs", "self::missing"), None);
        assert_eq!(r("build.rs", "self::helper").as_deref(), Some("helper.rs"));
        assert_eq!(r("src/bin/tool.rs", "self::util").as_deref(), Some("src/bin/util.rs"));
        assert_eq!(r("tests/it.rs", "self::common").as_deref(), Some("tests/common/mod.rs"));
        // crate:: paths: the longest existing module prefix.
        assert_eq!(r("src/api/routes.rs", "crate::store::db::Row").as_deref(), Some("src/store/db.rs"));
        assert_eq!(r("src/api/routes.rs", "crate::store::Store").as_deref(), Some("src/store.rs"));
        assert_eq!(r("src/api/routes.rs", "crate::Config").as_deref(), Some("src/lib.rs"));
        assert_eq!(r("src/api/routes.rs", "crate::store").as_deref(), Some("src/store.rs"));
        // super:: and self::.
        assert_eq!(r("src/api/routes.rs", "super::Api").as_deref(), Some("src/api/mod.rs"));
        assert_eq!(r("src/api/routes.rs", "super::super::store::Store").as_deref(), Some("src/store.rs"));
        assert_eq!(r("src/store/db.rs", "super::Store").as_deref(), Some("src/store.rs"));
        assert_eq!(r("src/store.rs", "super::api::routes").as_deref(), Some("src/api/routes.rs"));
        assert_eq!(r("src/store.rs", "self::db::Row").as_deref(), Some("src/store/db.rs"));
        // Local module written without a prefix (2018 uniform paths).
        assert_eq!(r("src/store.rs", "db::Row").as_deref(), Some("src/store/db.rs"));
        // Stays unresolved: std, external crates, the file itself, above the root.
        assert_eq!(r("src/lib.rs", "std::collections::HashMap"), None);
        assert_eq!(r("src/lib.rs", "serde::Deserialize"), None);
        assert_eq!(r("src/lib.rs", "self"), None);
        assert_eq!(r("src/store.rs", "self::Store"), None);
        assert_eq!(r("src/lib.rs", "crate::Config"), None);
        assert_eq!(r("src/lib.rs", "super::super::super::x"), None);
    }

    #[test]
    fn a_test_modules_glob_of_its_file_is_no_import() {
        let text = "use std::io;\n\nfn run() {}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::run as go;\n}\n";
        let a = analyze(text);
        let targets: Vec<&str> =
            a.references.iter().filter(|r| r.kind == RefKind::Import).map(|r| r.target.as_str()).collect();
        // Neither the glob of the file itself (`self` once rewritten) nor
        // `super::run`, an item of the file, imports anything from elsewhere.
        assert_eq!(targets, ["std::io"], "{targets:?}");
        assert!(a.nodes.iter().any(|n| n.kind == NodeKind::Import && n.name == "super::*"), "the use stays a node");
    }

    #[test]
    fn a_self_path_to_a_name_the_file_imports_reads_through_that_import() {
        let text = "use crate::paging::PagingMode;\nmod output;\n\nenum Local { A }\n\nfn run() {\n    use self::PagingMode::*;\n    use self::Local::*;\n    use self::output::Out;\n}\n";
        let a = analyze(text);
        let mut targets: Vec<&str> =
            a.references.iter().filter(|r| r.kind == RefKind::Import).map(|r| r.target.as_str()).collect();
        targets.sort_unstable();
        // Through `use crate::paging::PagingMode`; `Local` is the file's own
        // (no import); `output` is a `mod output;`, its file.
        assert_eq!(
            targets,
            ["crate::paging::PagingMode", "crate::paging::PagingMode", "self::output", "self::output::Out"],
            "{targets:?}"
        );
    }

    #[test]
    fn use_paths_in_inline_modules_are_file_relative() {
        assert_eq!(relative_to_file("super", &["tests".into()]), "self");
        assert_eq!(relative_to_file("self::b::C", &["a".into()]), "self::a::b::C");
        assert_eq!(relative_to_file("super::super::x", &["a".into()]), "super::x");
        assert_eq!(relative_to_file("crate::x", &["a".into()]), "crate::x");
        assert_eq!(relative_to_file("super::x", &[]), "super::x");
    }
}
