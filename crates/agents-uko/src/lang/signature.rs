//! Parameter names and the declared return of callables, for checks that
//! compare a docstring with the code (the code mirror's docstring drift).
//!
//! The analyzers record a callable's signature as text; this reads the same
//! tree-sitter grammars once more and, for each span an analyzer reported,
//! finds the function node inside it and lists its parameters by name. A
//! parameter without a plain name (a destructuring pattern, a type-only C or
//! Go parameter) is `None`, so a caller can tell "unnamed" from "absent".
//! Receivers (`self`, `cls`, `this`, Rust `&self`) are left out: docstrings
//! never document them.

use tree_sitter::{Node, Tree};

use super::{named_children, node_text, parse};
use crate::model::Span;

/// What a callable declares it returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Returns {
    /// The language or the declaration does not say (untyped Python and
    /// JavaScript, constructors).
    Unknown,
    /// It declares that nothing is returned: `-> None`, `: void`, `void`, a
    /// Rust or Go function without a result.
    Nothing,
    /// It declares a value of this type (as written).
    Value(String),
}

/// The parameters and return of one callable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Parameter names in order; `None` for a parameter without a plain name.
    pub params: Vec<Option<String>>,
    pub returns: Returns,
}

/// For each span (as an analyzer of `language` reported it for a function
/// or method of `text`), the signature of the callable it holds, or `None`
/// when the language has no structural analyzer or the span holds none.
pub fn signatures(language: &str, path: &str, text: &str, spans: &[Span]) -> Vec<Option<Signature>> {
    let Some(tree) = parse_for(language, path, text) else { return vec![None; spans.len()] };
    spans.iter().map(|span| signature_at(language, &tree, text, span)).collect()
}

fn parse_for(language: &str, path: &str, text: &str) -> Option<Tree> {
    match language {
        "python" => parse(&tree_sitter_python::LANGUAGE.into(), text),
        "javascript" => parse(&tree_sitter_javascript::LANGUAGE.into(), text),
        "typescript" => parse(&tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(), text),
        "tsx" => parse(&tree_sitter_typescript::LANGUAGE_TSX.into(), text),
        "rust" => parse(&tree_sitter_rust::LANGUAGE.into(), text),
        "go" => parse(&tree_sitter_go::LANGUAGE.into(), text),
        "java" => parse(&tree_sitter_java::LANGUAGE.into(), text),
        "c" | "cpp" => super::c::parse_c_family(language, path, text),
        _ => None,
    }
}

/// Node kinds that are callables, by language family.
fn is_callable(language: &str, kind: &str) -> bool {
    match language {
        "python" => kind == "function_definition",
        "javascript" | "typescript" | "tsx" => matches!(
            kind,
            "function_declaration"
                | "generator_function_declaration"
                | "function_expression"
                | "function"
                | "generator_function"
                | "arrow_function"
                | "method_definition"
                | "method_signature"
                | "abstract_method_signature"
                | "function_signature"
        ),
        "rust" => matches!(kind, "function_item" | "function_signature_item"),
        "go" => matches!(kind, "function_declaration" | "method_declaration" | "method_elem" | "method_spec"),
        "java" => matches!(kind, "method_declaration" | "constructor_declaration"),
        "c" | "cpp" => kind == "function_declarator",
        _ => false,
    }
}

fn signature_at(language: &str, tree: &Tree, text: &str, span: &Span) -> Option<Signature> {
    let outer = tree.root_node().descendant_for_byte_range(span.start_byte, span.end_byte)?;
    // The first callable in pre-order: the span's own node, or the function
    // inside an export, a decorated definition or a variable declaration.
    let mut stack = vec![outer];
    while let Some(node) = stack.pop() {
        if is_callable(language, node.kind()) {
            return Some(read(language, node, text));
        }
        let children: Vec<Node<'_>> = named_children(node).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

fn read(language: &str, function: Node<'_>, text: &str) -> Signature {
    let params = match (function.child_by_field_name("parameters"), function.child_by_field_name("parameter")) {
        (Some(list), _) => named_children(list).flat_map(|p| param(language, p, text)).collect(),
        (None, Some(single)) => vec![Some(node_text(&single, text).to_owned())],
        (None, None) => Vec::new(),
    };
    let mut params: Vec<Option<String>> = params;
    if language == "python" && matches!(params.first(), Some(Some(first)) if first == "self" || first == "cls") {
        params.remove(0);
    }
    Signature { params, returns: returns(language, function, text) }
}

/// The parameters one entry of a parameter list declares: none for a
/// receiver, a separator or a comment, `None` for an unnamed parameter, and
/// several for Go's `a, b int`.
fn param(language: &str, p: Node<'_>, text: &str) -> Vec<Option<String>> {
    entry(language, p, text)
        .map_or_else(Vec::new, |names| names.map_or_else(|| vec![None], |n| n.into_iter().map(Some).collect()))
}

/// [`param`] as `None` (skip), `Some(None)` (unnamed) or the names.
fn entry(language: &str, p: Node<'_>, text: &str) -> Option<Option<Vec<String>>> {
    let name = |n: Node<'_>| Some(Some(vec![node_text(&n, text).to_owned()]));
    let kind = p.kind();
    if kind.contains("comment") || matches!(kind, "keyword_separator" | "positional_separator" | "attribute_item") {
        return None;
    }
    match language {
        "python" => match kind {
            "identifier" => name(p),
            "typed_parameter" => match named_children(p).next() {
                Some(n) if n.kind() == "identifier" => name(n),
                Some(n) => splat_name(n, text),
                None => Some(None),
            },
            "default_parameter" | "typed_default_parameter" => match p.child_by_field_name("name") {
                Some(n) if n.kind() == "identifier" => name(n),
                _ => Some(None),
            },
            "list_splat_pattern" | "dictionary_splat_pattern" => splat_name(p, text),
            _ => Some(None),
        },
        "javascript" | "typescript" | "tsx" => {
            let pattern = match kind {
                "required_parameter" | "optional_parameter" => p.child_by_field_name("pattern")?,
                _ => p,
            };
            js_pattern(pattern, text)
        }
        "rust" => match kind {
            "self_parameter" | "variadic_parameter" => None,
            "parameter" => match p.child_by_field_name("pattern") {
                Some(n) if n.kind() == "identifier" => name(n),
                Some(n) if n.kind() == "self" => None,
                _ => Some(None),
            },
            _ => Some(None),
        },
        "go" => {
            let names: Vec<Node<'_>> = {
                let mut cursor = p.walk();
                p.children_by_field_name("name", &mut cursor).collect()
            };
            if names.is_empty() {
                Some(None)
            } else {
                Some(Some(names.iter().map(|n| node_text(n, text).to_owned()).collect()))
            }
        }
        "java" => match kind {
            "formal_parameter" => p.child_by_field_name("name").map_or(Some(None), name),
            "spread_parameter" => named_children(p)
                .find(|c| c.kind() == "variable_declarator")
                .and_then(|d| d.child_by_field_name("name"))
                .map_or(Some(None), name),
            "receiver_parameter" => None,
            _ => Some(None),
        },
        "c" | "cpp" => match kind {
            "variadic_parameter" | "variadic_parameter_declaration" => None,
            "parameter_declaration" | "optional_parameter_declaration" => match p.child_by_field_name("declarator") {
                Some(d) => Some(first_identifier(d, text).map(|n| vec![n])),
                // `f(void)` declares no parameter at all.
                None if p.child_by_field_name("type").is_some_and(|t| node_text(&t, text) == "void") => None,
                None => Some(None),
            },
            _ => Some(None),
        },
        _ => Some(None),
    }
}

fn splat_name(n: Node<'_>, text: &str) -> Option<Option<Vec<String>>> {
    Some(named_children(n).find(|c| c.kind() == "identifier").map(|c| vec![node_text(&c, text).to_owned()]))
}

fn js_pattern(pattern: Node<'_>, text: &str) -> Option<Option<Vec<String>>> {
    match pattern.kind() {
        "identifier" => Some(Some(vec![node_text(&pattern, text).to_owned()])),
        "this" => None,
        "assignment_pattern" => pattern.child_by_field_name("left").map_or(Some(None), |l| js_pattern(l, text)),
        "rest_pattern" => splat_name(pattern, text),
        _ => Some(None),
    }
}

/// The identifier a C declarator declares (`*name`, `name[]`, `&name`).
fn first_identifier(declarator: Node<'_>, text: &str) -> Option<String> {
    let mut stack = vec![declarator];
    while let Some(node) = stack.pop() {
        if node.kind() == "identifier" {
            return Some(node_text(&node, text).to_owned());
        }
        if node.kind() == "parameter_list" {
            continue;
        }
        let children: Vec<Node<'_>> = named_children(node).collect();
        stack.extend(children.into_iter().rev());
    }
    None
}

fn returns(language: &str, function: Node<'_>, text: &str) -> Returns {
    let field = |name: &str| function.child_by_field_name(name).map(|n| node_text(&n, text).trim().to_owned());
    match language {
        "python" => match field("return_type") {
            Some(t) if t == "None" => Returns::Nothing,
            Some(t) => Returns::Value(t),
            None => Returns::Unknown,
        },
        "javascript" | "typescript" | "tsx" => match field("return_type") {
            Some(t) => {
                let t = t.trim_start_matches(':').trim().to_owned();
                if t == "void" { Returns::Nothing } else { Returns::Value(t) }
            }
            None => Returns::Unknown,
        },
        "rust" => match field("return_type") {
            Some(t) if t == "()" => Returns::Nothing,
            Some(t) => Returns::Value(t),
            None => Returns::Nothing,
        },
        "go" => field("result").map_or(Returns::Nothing, Returns::Value),
        "java" => match (function.kind(), field("type")) {
            ("method_declaration", Some(t)) if t == "void" => Returns::Nothing,
            ("method_declaration", Some(t)) => Returns::Value(t),
            _ => Returns::Unknown,
        },
        "c" | "cpp" => {
            // The declarator sits in a definition or declaration whose `type`
            // is the return type; a pointer declarator in between returns `T*`.
            let Some(parent) = function.parent() else { return Returns::Unknown };
            match parent.child_by_field_name("type").map(|t| node_text(&t, text).trim().to_owned()) {
                Some(t) if t == "void" && parent.child_by_field_name("declarator") == Some(function) => {
                    Returns::Nothing
                }
                Some(t) => Returns::Value(t),
                None => Returns::Unknown,
            }
        }
        _ => Returns::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::analyze;
    use crate::model::NodeKind;

    /// The signature of every callable of `text`, by symbol path.
    fn sigs(language: &str, path: &str, text: &str) -> Vec<(String, Vec<Option<String>>, Returns)> {
        let analysis = analyze(language, path, text);
        let callables: Vec<_> = analysis.nodes.iter().filter(|n| n.kind.is_callable()).collect();
        let spans: Vec<Span> = callables.iter().map(|n| n.span).collect();
        signatures(language, path, text, &spans)
            .into_iter()
            .zip(&callables)
            .map(|(s, n)| {
                let s = s.unwrap_or_else(|| panic!("no signature for {}", n.symbol_path));
                (n.symbol_path.clone(), s.params, s.returns)
            })
            .collect()
    }

    fn names(list: &[&str]) -> Vec<Option<String>> {
        list.iter().map(|n| if n.is_empty() { None } else { Some((*n).to_owned()) }).collect()
    }

    #[test]
    fn python_parameters_and_returns() {
        let text = "class A:\n    def m(self, a: int, b=1, *args, c: str = 'x', **kw) -> None:\n        pass\n\n@dec\ndef f(x, /, y, *, z):\n    return x\n\ndef g((a, b)) -> int:\n    return 1\n";
        let got = sigs("python", "a.py", text);
        assert_eq!(got[0], ("A.m".into(), names(&["a", "b", "args", "c", "kw"]), Returns::Nothing));
        assert_eq!(got[1], ("f".into(), names(&["x", "y", "z"]), Returns::Unknown));
        assert_eq!(got[2].2, Returns::Value("int".into()));
    }

    #[test]
    fn typescript_and_javascript_parameters() {
        let ts = "export function f(a: number, b?: string, ...rest: number[]): void {}\nclass C { m(this: C, {x}: P, d = 2): number { return 1 } }\nexport const g = (y: number) => y;\n";
        let got = sigs("typescript", "a.ts", ts);
        assert_eq!(got[0].1, names(&["a", "b", "rest"]));
        assert_eq!(got[0].2, Returns::Nothing);
        let m = got.iter().find(|g| g.0 == "C.m").unwrap();
        assert_eq!(m.1, names(&["", "d"]));
        assert_eq!(m.2, Returns::Value("number".into()));
        let g = got.iter().find(|g| g.0 == "g").unwrap();
        assert_eq!(g.1, names(&["y"]));
        let js = "function h(a, b = 1, ...c) { return a }\n";
        assert_eq!(sigs("javascript", "a.js", js)[0], ("h".into(), names(&["a", "b", "c"]), Returns::Unknown));
    }

    #[test]
    fn rust_go_java_c_parameters() {
        let rs = "impl S { pub fn m(&self, mut a: u8, (b, c): (u8, u8)) -> u8 { a } }\nfn f(x: i32) {}\n";
        let got = sigs("rust", "a.rs", rs);
        let m = got.iter().find(|g| g.0.ends_with('m')).unwrap();
        assert_eq!(m.1, names(&["a", ""]));
        assert_eq!(m.2, Returns::Value("u8".into()));
        assert_eq!(got.iter().find(|g| g.0 == "f").unwrap().2, Returns::Nothing);

        let go = "package p\nfunc (s *S) M(a, b int, rest ...string) (int, error) { return 0, nil }\nfunc F() {}\n";
        let got = sigs("go", "a.go", go);
        assert_eq!(got[0].1, names(&["a", "b", "rest"]));
        assert_eq!(got[0].2, Returns::Value("(int, error)".into()));
        assert_eq!(got[1].2, Returns::Nothing);

        let java = "class A { A(int x) {} void run(String a, int... more) {} int get() { return 1; } }\n";
        let got = sigs("java", "A.java", java);
        let by = |name: &str| got.iter().find(|g| g.0.ends_with(name)).unwrap().clone();
        assert_eq!(by("run").1, names(&["a", "more"]));
        assert_eq!(by("run").2, Returns::Nothing);
        assert_eq!(by("get").2, Returns::Value("int".into()));
        assert_eq!(by("A.A").2, Returns::Unknown);

        let c = "void f(int a, char *b, int) {}\nint g(void) { return 0; }\n";
        let got = sigs("c", "a.c", c);
        assert_eq!(got[0].1, names(&["a", "b", ""]));
        assert_eq!(got[0].2, Returns::Nothing);
        assert_eq!(got[1].1, names(&[]));
        assert_eq!(got[1].2, Returns::Value("int".into()));
        let _ = NodeKind::Function;
    }
}
