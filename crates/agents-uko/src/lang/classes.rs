//! The ontology's language layer for analyzed nodes: which layer-3 class
//! (`uko-kt:DataClass`, `uko-swift:Actor`, `uko-go:ReceiverMethod`, ...) a
//! node of a language is, beyond its generic [`NodeKind`].
//!
//! The analyzers keep emitting the generic kinds the rest of the engine
//! understands (retrieval, rendering and the store read `NodeKind`); the
//! language class is added on top, as a second `rdf:type` in the RDF graph
//! (`agents uko query`, `agents uko export`). It is decided from what a node
//! already carries: its language, kind, names and signature (the
//! declaration's header, keywords included), and whether it is declared
//! outside its parent's span (Swift extension members). Every class returned
//! is declared in `docs/ontology/uko.ttl`, in the language's own namespace
//! (or is `uko-oo:Constructor`), and refines the meaning of the kind's class:
//! it descends from every layer-1 class the kind's class descends from, and
//! from the kind's class itself when that is of layer 1 or 2 (the test
//! `every_class_exists_and_refines_its_kind` checks this).

use crate::model::NodeKind;

/// What [`language_class`] reads of a node.
#[derive(Clone, Copy, Debug)]
pub struct NodeFacts<'a> {
    /// The detected language (`kotlin`, `cpp`, ...).
    pub language: &'a str,
    pub kind: NodeKind,
    /// The simple name (`save`; the file name for a module node).
    pub name: &'a str,
    /// `Store.save`; empty for a module node.
    pub symbol_path: &'a str,
    pub signature: Option<&'a str>,
    /// Whether the node's span lies outside its parent's (a member attached
    /// from elsewhere: a Swift extension's method, a Go receiver method).
    pub outside_parent: bool,
}

/// The language-layer class of a node as a CURIE, or `None` when the
/// generic class of its kind says all the ontology knows about it.
pub fn language_class(node: &NodeFacts<'_>) -> Option<&'static str> {
    let sig = node.signature.unwrap_or("").trim();
    let head = head(sig, node.name);
    let word = |w: &str| head.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|x| x == w);
    let owner = owner_name(node.symbol_path);
    let is_constructor = node.kind == NodeKind::Method && owner == Some(node.name);
    use NodeKind as K;
    match (node.language, node.kind) {
        ("go", K::Method) if sig.starts_with("func (") => Some("uko-go:ReceiverMethod"),
        ("go", K::TypeAlias) if sig.starts_with("type ") && !is_go_alias(sig, node.name) => Some("uko-go:DefinedType"),
        ("go", K::Test) if node.name.starts_with("Benchmark") => Some("uko-go:Benchmark"),
        ("go", K::Test) if node.name.starts_with("Fuzz") => Some("uko-go:Fuzz"),
        ("go", K::Test) if node.name.starts_with("Example") => Some("uko-go:Example"),

        ("c", K::Module) if node.name.ends_with(".h") => Some("uko-c:Header"),
        ("c", K::Macro) if is_function_like_macro(sig, node.name) => Some("uko-c:FunctionLikeMacro"),
        ("c", K::Macro) if sig.starts_with("#") => Some("uko-c:ObjectLikeMacro"),
        ("c", K::TypeAlias) if sig.starts_with("typedef") => Some("uko-c:Typedef"),
        ("c", K::Struct) if sig.starts_with("union") || sig.starts_with("typedef union") => Some("uko-c:Union"),
        ("c", K::Function) if word("static") => Some("uko-c:StaticFunction"),

        ("cpp", K::Module) if [".h", ".hpp", ".hh", ".hxx"].iter().any(|e| node.name.ends_with(e)) => {
            Some("uko-cpp:Header")
        }
        ("cpp", K::Namespace) => Some("uko-cpp:Namespace"),
        ("cpp", K::Class) if sig.starts_with("template") => Some("uko-cpp:ClassTemplate"),
        ("cpp", K::Function) if sig.starts_with("template") => Some("uko-cpp:FunctionTemplate"),
        ("cpp", K::TypeAlias) if sig.starts_with("template") => Some("uko-cpp:AliasTemplate"),
        ("cpp", K::Method) if node.name.starts_with('~') => Some("uko-cpp:Destructor"),
        ("cpp", K::Method) if is_constructor => Some("uko-oo:Constructor"),
        ("cpp", K::Method) if head.trim_end().ends_with("::") => Some("uko-cpp:OutOfLineDefinition"),
        ("cpp", K::Test) if ["TEST(", "TEST_F(", "TEST_P("].iter().any(|p| sig.starts_with(p)) => {
            Some("uko-cpp:GoogleTest")
        }
        ("cpp", K::Test) if sig.starts_with("TEST_CASE(") => Some("uko-cpp:CatchTestCase"),

        ("ruby", K::Namespace) if sig.starts_with("module") => Some("uko-rb:Module"),
        ("ruby", K::Method) if sig.starts_with("def self.") => Some("uko-rb:SingletonMethod"),
        ("ruby", K::Test) if !sig.starts_with("def ") => Some("uko-rb:SpecBlock"),

        ("shell", K::Module) => Some("uko-sh:Script"),
        ("shell", K::Function) => Some("uko-sh:Function"),
        ("shell", K::Variable) if sig.starts_with("export ") || sig.starts_with("declare -x") => {
            Some("uko-sh:EnvironmentVariable")
        }
        ("shell", K::Variable) => Some("uko-sh:ShellVariable"),

        ("lua", K::Function) if sig.starts_with("local ") => Some("uko-lua:LocalFunction"),
        // A table's function (`function M.new`, `M.reset = function`) is a
        // method; one declared with `:` takes `self`.
        ("lua", K::Method) if sig.split('(').next().unwrap_or("").contains(':') => Some("uko-lua:TableMethod"),
        ("lua", K::Method) => Some("uko-lua:TableFunction"),
        ("lua", K::Variable) if sig.starts_with("local ") => Some("uko-lua:LocalVariable"),

        ("csharp", K::Namespace) => Some("uko-cs:Namespace"),
        ("csharp", K::Class) if word("record") => Some("uko-cs:Record"),
        ("csharp", K::Field) if is_csharp_property(sig, node.name) => Some("uko-cs:Property"),
        ("csharp", K::TypeAlias) if word("delegate") => Some("uko-cs:Delegate"),
        ("csharp", K::Method) if is_constructor => Some("uko-oo:Constructor"),

        ("php", K::Namespace) => Some("uko-php:Namespace"),
        ("php", K::Trait) => Some("uko-php:Trait"),
        ("php", K::Enum) if after_name(sig, node.name).trim_start().starts_with(':') => Some("uko-php:BackedEnum"),
        ("php", K::Field) if node.name.starts_with('$') => Some("uko-php:Property"),
        ("php", K::Field) if word("const") => Some("uko-php:ClassConstant"),

        ("kotlin", K::Class) if word("companion") => Some("uko-kt:CompanionObject"),
        ("kotlin", K::Class) if word("object") => Some("uko-kt:Object"),
        ("kotlin", K::Class) if word("data") => Some("uko-kt:DataClass"),
        ("kotlin", K::Class) if word("sealed") => Some("uko-kt:SealedClass"),
        ("kotlin", K::Method) if node.name == "constructor" => Some("uko-kt:SecondaryConstructor"),
        ("kotlin", K::Function) if word("fun") && head.trim_end().ends_with('.') => Some("uko-kt:ExtensionFunction"),
        ("kotlin", K::Field) if word("val") || word("var") => Some("uko-kt:Property"),

        ("scala", K::Class) if word("object") => Some("uko-scala:Object"),
        ("scala", K::Class) if word("case") => Some("uko-scala:CaseClass"),
        ("scala", K::Trait) => Some("uko-scala:Trait"),

        ("swift", K::Interface) => Some("uko-swift:Protocol"),
        ("swift", K::Class) if word("actor") => Some("uko-swift:Actor"),
        ("swift", K::Method) if node.name == "init" => Some("uko-swift:Initializer"),
        ("swift", K::Method) if node.outside_parent => Some("uko-swift:ExtensionMethod"),

        ("zig", K::Struct) => Some("uko-zig:Struct"),
        ("zig", K::Enum) => Some("uko-zig:Enum"),
        ("zig", K::Test) => Some("uko-zig:TestBlock"),
        ("zig", K::Variable) if word("const") => Some("uko-zig:Constant"),

        ("haskell", K::Enum) if sig.starts_with("data") => Some("uko-hs:DataType"),
        ("haskell", K::Struct) if sig.starts_with("newtype") => Some("uko-hs:Newtype"),
        ("haskell", K::TypeAlias) if sig.starts_with("type") => Some("uko-hs:TypeSynonym"),
        ("haskell", K::Trait) => Some("uko-hs:TypeClass"),
        ("haskell", K::Class) if sig.starts_with("instance") => Some("uko-hs:Instance"),
        ("haskell", K::Field) if node.name.starts_with(char::is_uppercase) => Some("uko-hs:DataConstructor"),
        ("haskell", K::Field) => Some("uko-hs:RecordField"),
        ("haskell", K::Function) => Some("uko-hs:Function"),

        ("elixir", K::Namespace) if sig.starts_with("defmodule") => Some("uko-ex:Module"),
        ("elixir", K::Namespace) if sig.starts_with("defprotocol") => Some("uko-ex:Protocol"),
        ("elixir", K::Namespace) if sig.starts_with("defimpl") => Some("uko-ex:Impl"),
        ("elixir", K::Function) if sig.starts_with("defp ") || sig.starts_with("defp(") => {
            Some("uko-ex:PrivateFunction")
        }
        ("elixir", K::Macro) => Some("uko-ex:Macro"),
        ("elixir", K::Test) if sig.starts_with("describe") => Some("uko-ex:Describe"),
        _ => None,
    }
}

/// The signature before the node's name (`data class ` of
/// `data class Point(...)`); the whole signature when the name is not in it.
fn head<'s>(sig: &'s str, name: &str) -> &'s str {
    let simple = name.rsplit(['.', ':']).next().unwrap_or(name);
    find_word(sig, simple).map_or(sig, |at| &sig[..at])
}

/// The signature after the node's name; empty when the name is not in it.
fn after_name<'s>(sig: &'s str, name: &str) -> &'s str {
    find_word(sig, name).map_or("", |at| &sig[at + name.len()..])
}

/// Where `word` first stands alone in `text` (not inside a longer identifier).
fn find_word(text: &str, word: &str) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).map(|(at, _)| at).find(|&at| {
        let before = text[..at].chars().next_back().is_none_or(|c| !ident(c));
        let after = text[at + word.len()..].chars().next().is_none_or(|c| !ident(c));
        before && after
    })
}

/// The name of the declaration a member belongs to: `Circle` of `geo.Circle.make`.
fn owner_name(symbol_path: &str) -> Option<&str> {
    let mut parts = symbol_path.rsplit('.');
    parts.next()?;
    parts.next()
}

/// `type ID = string` (and `type L[T any] = []T`) is an alias; `type Count int` is not.
fn is_go_alias(sig: &str, name: &str) -> bool {
    let rest = after_name(sig, name).trim_start();
    let rest = match rest.strip_prefix('[') {
        Some(generic) => generic.split_once(']').map_or("", |(_, r)| r).trim_start(),
        None => rest,
    };
    rest.starts_with('=')
}

/// `#define NAME(args)`: the parenthesis right after the name.
fn is_function_like_macro(sig: &str, name: &str) -> bool {
    sig.starts_with('#') && after_name(sig, name).starts_with('(')
}

/// A C# property's signature shows its accessors or `=>` body after the name.
fn is_csharp_property(sig: &str, name: &str) -> bool {
    let rest = after_name(sig, name).trim_start();
    rest.starts_with("=>")
        || rest.strip_prefix('{').is_some_and(|accessors| {
            let first = accessors.trim_start();
            ["get", "set", "init", "private", "protected", "internal", "public", "["]
                .iter()
                .any(|a| first.starts_with(a))
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::model::FileAnalysis;
    use crate::ontology::{Ontology, layer_of};

    /// Each language's fixture (the one its analyzer's tests use) plus a few
    /// constructs the fixtures lack.
    fn cases() -> Vec<(&'static str, &'static str, String)> {
        use crate::lang::{c, go, languages as l};
        vec![
            ("go", "store.go", go::tests::FIXTURE.to_string()),
            ("c", "geometry.h", c::tests::HEADER.to_string()),
            ("c", "geometry.c", c::tests::SOURCE.to_string()),
            ("cpp", "shapes.cpp", c::tests::CPP.to_string()),
            ("ruby", "store.rb", l::tests::RUBY_FIXTURE.to_string()),
            ("shell", "deploy.sh", l::tests::BASH_FIXTURE.to_string()),
            ("lua", "store.lua", l::tests::LUA_FIXTURE.to_string()),
            ("csharp", "Store.cs", l::tests::CSHARP_FIXTURE.to_string()),
            (
                "csharp",
                "Money.cs",
                "public record Money(decimal Amount);\npublic class Cart {\n    public decimal Total => 0;\n}\n".into(),
            ),
            ("php", "Store.php", l::tests::PHP_FIXTURE.to_string()),
            ("php", "Stamps.php", "<?php\ntrait Stamps {\n    public function stamp(): void {}\n}\n".into()),
            ("kotlin", "Store.kt", l::tests::KOTLIN_FIXTURE.to_string()),
            (
                "kotlin",
                "Money.kt",
                "data class Money(val cents: Long)\nobject Registry {\n    fun all() = 1\n}\n\
                 sealed class Result\nfun String.shout(): String = uppercase()\n"
                    .into(),
            ),
            ("scala", "Store.scala", l::tests::SCALA_FIXTURE.to_string()),
            ("scala", "Money.scala", "case class Money(cents: Long)\n".into()),
            ("swift", "Store.swift", l::tests::SWIFT_FIXTURE.to_string()),
            ("swift", "Bank.swift", "actor Bank {\n    func deposit() {}\n}\n".into()),
            ("zig", "store.zig", l::tests::ZIG_FIXTURE.to_string()),
            ("haskell", "Store.hs", l::tests::HASKELL_FIXTURE.to_string()),
            ("elixir", "store.ex", l::tests::ELIXIR_FIXTURE.to_string()),
            (
                "elixir",
                "size.ex",
                "defprotocol Size do\n  def size(data)\nend\n\ndefimpl Size, for: Map do\n  def size(map), do: map_size(map)\nend\n"
                    .into(),
            ),
        ]
    }

    fn analyze(language: &str, path: &str, text: &str) -> FileAnalysis {
        crate::lang::analyzer_for(language).analyze(language, path, text)
    }

    fn facts<'a>(language: &'a str, a: &'a FileAnalysis, i: usize) -> NodeFacts<'a> {
        let node = &a.nodes[i];
        let outside_parent = node.parent.is_some_and(|p| {
            let parent = &a.nodes[p];
            p != 0 && (node.span.start_byte >= parent.span.end_byte || node.span.end_byte <= parent.span.start_byte)
        });
        NodeFacts {
            language,
            kind: node.kind,
            name: &node.name,
            symbol_path: &node.symbol_path,
            signature: node.signature.as_deref(),
            outside_parent,
        }
    }

    #[test]
    fn language_classes_of_the_fixtures() {
        let mut out = String::new();
        let mut seen = BTreeSet::new();
        for (language, path, text) in cases() {
            let a = analyze(language, path, &text);
            out.push_str(&format!("{language} {path}\n"));
            for i in 0..a.nodes.len() {
                let node = &a.nodes[i];
                if let Some(class) = language_class(&facts(language, &a, i)) {
                    seen.insert(class);
                    let name = if node.symbol_path.is_empty() { &node.name } else { &node.symbol_path };
                    out.push_str(&format!("  {} {name}: {class}\n", node.kind.as_str()));
                }
            }
        }
        insta::assert_snapshot!(out);
        // Every class the rules can give shows up at least once.
        let ttl = Ontology::builtin_ttl();
        let declared: BTreeSet<&str> = ttl
            .lines()
            .filter(|l| l.starts_with("uko-") && !l.contains(' ') && !l.ends_with(":Levels"))
            .filter(|l| layer_of(l) == Some(3))
            .filter(|l| !["uko-py:", "uko-ts:", "uko-rs:", "uko-java:"].iter().any(|p| l.starts_with(p)))
            .filter(|l| *l != "uko-zig:Container")
            .collect();
        let missing: Vec<&&str> = declared.iter().filter(|c| !seen.contains(**c)).collect();
        let known_unseen = ["uko-c:Union", "uko-cpp:Header", "uko-cpp:AliasTemplate", "uko-go:Fuzz", "uko-go:Example"];
        let missing: Vec<&&str> = missing.into_iter().filter(|c| !known_unseen.contains(c)).collect();
        assert!(missing.is_empty(), "classes no fixture node gets: {missing:?}");
    }

    #[test]
    fn every_class_exists_and_refines_its_kind() {
        let ontology = Ontology::builtin();
        for (language, path, text) in cases() {
            let a = analyze(language, path, &text);
            for i in 0..a.nodes.len() {
                let Some(class) = language_class(&facts(language, &a, i)) else { continue };
                let kind = a.nodes[i].kind.curie();
                assert!(ontology.class(class).is_some(), "{class} is declared");
                let domain = ontology.domain_for_language(language);
                assert!(
                    class.starts_with(&format!("{domain}:")) || class == "uko-oo:Constructor",
                    "{class} in {domain}"
                );
                if layer_of(kind) != Some(3) {
                    assert!(ontology.is_subclass_of(class, kind), "{class} refines {kind}");
                }
                for ancestor in ontology.resolve_inheritance(kind) {
                    if layer_of(&ancestor) == Some(1) {
                        assert!(ontology.is_subclass_of(class, &ancestor), "{class} is a {ancestor} like {kind}");
                    }
                }
            }
        }
    }

    #[test]
    fn rules_read_the_signature() {
        let node = |language, kind, name, symbol_path, signature| NodeFacts {
            language,
            kind,
            name,
            symbol_path,
            signature: Some(signature),
            outside_parent: false,
        };
        let class = |n: NodeFacts<'_>| language_class(&n);
        assert_eq!(class(node("go", NodeKind::TypeAlias, "ID", "ID", "type ID = string")), None);
        assert_eq!(class(node("go", NodeKind::TypeAlias, "L", "L", "type L[T any] = []T")), None);
        assert_eq!(class(node("go", NodeKind::TypeAlias, "C", "C", "type C int")), Some("uko-go:DefinedType"));
        assert_eq!(
            class(node("go", NodeKind::Test, "FuzzX", "FuzzX", "func FuzzX(f *testing.F)")),
            Some("uko-go:Fuzz")
        );
        assert_eq!(
            class(node("c", NodeKind::Struct, "u", "u", "typedef union {...} u")),
            Some("uko-c:Union"),
            "a typedef'd union"
        );
        assert_eq!(
            class(node("c", NodeKind::Macro, "MAX", "MAX", "#define MAX (1 + 2)")),
            Some("uko-c:ObjectLikeMacro")
        );
        assert_eq!(class(node("cpp", NodeKind::Module, "a.hpp", "", "")), Some("uko-cpp:Header"));
        assert_eq!(
            class(node("csharp", NodeKind::Field, "X", "P.X", "public int X { get; private set; }")),
            Some("uko-cs:Property")
        );
        assert_eq!(class(node("csharp", NodeKind::Field, "X", "P.X", "public int X")), None, "a field");
        assert_eq!(class(node("kotlin", NodeKind::Function, "f", "f", "fun f(x: List<A.B>)")), None);
        assert_eq!(
            class(node("kotlin", NodeKind::Function, "f", "f", "fun <T> T.f()")),
            Some("uko-kt:ExtensionFunction")
        );
        assert_eq!(class(node("python", NodeKind::Class, "A", "A", "class A")), None, "no layer for this language");
        let no_sig = NodeFacts { signature: None, ..node("zig", NodeKind::Variable, "x", "x", "") };
        assert_eq!(language_class(&no_sig), None);
    }
}
