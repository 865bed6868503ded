//! The languages the query analyzer ([`crate::lang::query`]) handles: each
//! is a grammar, a query file under `queries/` and a few settings.

use crate::lang::query::{ImportStyle, QueryAnalyzer, QueryLanguage, Restarts, shell_function_start};

/// Ruby: modules (namespaces whose `def`s are methods), classes with their
/// superclass as `Inherits`, methods, constants, minitest/RSpec tests,
/// `require`/`require_relative` imports (resolved relative to the file,
/// else as a unique `<path>.rb` suffix), calls as `recv.m` or `m`.
pub static RUBY: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["ruby"],
    display: "Ruby",
    grammar: || tree_sitter_ruby::LANGUAGE.into(),
    query: include_str!("queries/ruby.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::RelativeOrSuffix(".rb"),
    methods_in_namespaces: true,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Bash: functions, top-level variables, `source`/`.` imports (relative to
/// the file; a path with a variable stays unresolved), commands as calls
/// (without builtins such as `echo`, `cd`, `local`).
pub static BASH: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["shell"],
    display: "Bash",
    grammar: || tree_sitter_bash::LANGUAGE.into(),
    query: include_str!("queries/bash.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::Relative(""),
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: Some(Restarts { starts: shell_function_start, comment: "#" }),
    rewrite: None,
    last_segment_names: false,
});

/// Lua: functions (`function M.f`, `function M:m`, `local function f`, and
/// `M.f = function`, `local f = function`, `M.f = wrap(function ... end)` at
/// the top of the file),
/// top-level variables, `require "a.b"` imports (`a/b.lua` or
/// `a/b/init.lua` as a unique path suffix; `local f = require("a.b").f`
/// imports `f`), calls. A function is named by its last segment (`new` of
/// `Path:new`), its symbol path as written.
pub static LUA: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["lua"],
    display: "Lua",
    grammar: || tree_sitter_lua::LANGUAGE.into(),
    query: include_str!("queries/lua.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "--",
    doc_markers: &["---", "--"],
    signature_skips: &[],
    imports: ImportStyle::Dotted(".lua"),
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: true,
});

/// C#: namespaces (block and file-scoped), classes and records, structs,
/// interfaces, enums with their members, methods, constructors, local
/// functions, properties and fields, delegates as type aliases; xUnit, NUnit
/// and MSTest tests; base types as `Inherits`; `using` directives as imports
/// (namespaces: never resolved to a file); calls and `new T()`. Docs are the
/// `///` comments above, XML tags removed.
pub static CSHARP: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["csharp"],
    display: "C#",
    grammar: || tree_sitter_c_sharp::LANGUAGE.into(),
    query: include_str!("queries/csharp.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "///",
    doc_markers: &[],
    signature_skips: &["attribute_list"],
    imports: ImportStyle::None,
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// PHP: namespaces, classes, interfaces, traits, enums and their cases,
/// methods (PHPUnit `test*` methods are tests), functions, properties,
/// constants; `extends`, `implements` and trait `use` as `Inherits`; `use`
/// imports (resolved as a unique `Segments/Of/Name.php` suffix, dropping a
/// PSR-4 prefix) and `require`/`include` of a literal path (relative);
/// calls as `f`, `$obj.m`, `Class.m`, `new Class`. Docs are `/** */` above.
pub static PHP: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["php"],
    display: "PHP",
    grammar: || tree_sitter_php::LANGUAGE_PHP.into(),
    query: include_str!("queries/php.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "/**",
    doc_markers: &[],
    signature_skips: &["attribute_list"],
    imports: ImportStyle::PathOrNamespace { sep: '\\', ext: ".php" },
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Kotlin: classes, interfaces, enums with their entries, objects and named
/// companions, functions (JUnit `@Test` ones are tests), secondary
/// constructors (`constructor`), properties, type aliases; supertypes as `Inherits`; imports (a unique
/// `segments/Name.kt` suffix; star imports unresolved); calls. Docs are
/// KDoc `/** */` above.
pub static KOTLIN: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["kotlin"],
    display: "Kotlin",
    grammar: || tree_sitter_kotlin_ng::LANGUAGE.into(),
    query: include_str!("queries/kotlin.scm"),
    comment_kinds: &["block_comment", "line_comment"],
    doc_prefix: "/**",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::PathOrNamespace { sep: '.', ext: ".kt" },
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: Some(kotlin_constructor_below_header),
    last_segment_names: false,
});

/// Kotlin's primary constructor on the line below its class header with a
/// visibility modifier, as ktfmt writes a long one (`public class Options`,
/// then `private constructor(`): the grammar ends the class at the line break
/// and loses it, and in error recovery the class around it too (moshi's
/// whole `JsonReader`). The modifier moves up to the header's line and the
/// line break after it (`public class Options private` / `constructor(`,
/// which the grammar reads), in the same bytes: no line and nothing after
/// the modifier moves.
fn kotlin_constructor_below_header(text: &str) -> Option<String> {
    if !text.contains("constructor") {
        return None;
    }
    let blank = |c: char| c == ' ' || c == '\t';
    let is_class_header = |line: &str| {
        let line = line.trim();
        !line.starts_with("//")
            && !line.starts_with('*')
            && !line.ends_with(['{', '(', ',', '=', ';'])
            && line.split_whitespace().any(|word| word == "class")
    };
    let mut out = String::new();
    let mut copied = 0;
    let mut line_start = 0;
    for (newline, _) in text.match_indices('\n') {
        let previous = &text[line_start..newline];
        line_start = newline + 1;
        let line = &text[line_start..];
        let indent = line.len() - line.trim_start_matches(blank).len();
        let after = &line[indent..];
        let Some(modifier) = ["private", "internal", "protected", "public"]
            .into_iter()
            .find(|m| after.strip_prefix(m).is_some_and(|rest| rest.starts_with(blank)))
        else {
            continue;
        };
        let rest = &after[modifier.len()..];
        let keyword = rest.trim_start_matches(blank);
        let gap = rest.len() - keyword.len();
        let opens = keyword.strip_prefix("constructor").is_some_and(|r| r.trim_start_matches(blank).starts_with('('));
        if !opens || !is_class_header(previous) {
            continue;
        }
        out.push_str(&text[copied..newline]);
        out.push(' ');
        out.push_str(modifier);
        out.push('\n');
        out.push_str(&line[..indent]);
        out.extend(std::iter::repeat_n(' ', gap - 1));
        copied = line_start + indent + modifier.len() + gap;
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// Scala (2 and 3): classes, objects, traits, enums and their cases,
/// functions (ScalaTest/MUnit `test("...")` blocks are tests), vals and vars,
/// type aliases; `extends`/`with` as `Inherits`; imports with selectors,
/// renames and wildcards (a unique `segments/Name.scala` suffix); calls and
/// `new T`. Docs are Scaladoc `/** */` above.
pub static SCALA: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["scala"],
    display: "Scala",
    grammar: || tree_sitter_scala::LANGUAGE.into(),
    query: include_str!("queries/scala.scm"),
    comment_kinds: &["comment", "block_comment"],
    doc_prefix: "/**",
    doc_markers: &[],
    signature_skips: &["annotation"],
    imports: ImportStyle::PathOrNamespace { sep: '.', ext: ".scala" },
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Swift: classes and actors, structs, enums with their cases, protocols,
/// functions, initializers, properties, type aliases; extension members
/// under the extended type (`@owner`); XCTest `test*` methods are tests;
/// inheritance and conformances as `Inherits`; `import` of modules (never a
/// file); calls. Docs are `///` comments above.
pub static SWIFT: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["swift"],
    display: "Swift",
    grammar: || tree_sitter_swift::LANGUAGE.into(),
    query: include_str!("queries/swift.scm"),
    comment_kinds: &["comment", "multiline_comment"],
    doc_prefix: "///",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::None,
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Zig: container declarations (`const S = struct {..}` as structs, unions
/// as structs, enums), functions (methods inside containers), fields,
/// `test "..."` blocks, file- and container-level constants; `@import`
/// imports (a relative `.zig` path resolves, `std` does not; `const P =
/// @import("pool.zig").Pool` imports `Pool` as `P`); calls. Docs
/// are `///` comments above.
pub static ZIG: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["zig"],
    display: "Zig",
    grammar: || tree_sitter_zig::LANGUAGE.into(),
    query: include_str!("queries/zig.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "///",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::Relative(""),
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Haskell: data types (as enums, their constructors and record fields as
/// fields), newtypes, type synonyms, type classes (as traits, with their
/// method signatures), instances (`Show Color`), functions (a signature and
/// its equations are one node); imports (with `as` aliases; `A.B.C`
/// resolves as a unique `A/B/C.hs` suffix); applications as calls. Docs are
/// Haddock `-- |` comments above, across blank lines and plain comments, or
/// a block comment right above (`{-| ... -}`, a `{- ... -}` banner), else
/// plain `--` comments right above.
pub static HASKELL: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["haskell"],
    display: "Haskell",
    grammar: || tree_sitter_haskell::LANGUAGE.into(),
    query: include_str!("queries/haskell.scm"),
    comment_kinds: &["haddock", "comment"],
    doc_prefix: "-- |",
    doc_markers: &["-- |", "-- ^", "--"],
    signature_skips: &[],
    imports: ImportStyle::PathOrNamespace { sep: '.', ext: ".hs" },
    methods_in_namespaces: false,
    merge_clauses: true,
    haddock_docs: true,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Elixir: modules, protocols and implementations (namespaces: `defimpl
/// Inspect` is `Inspect`), `def`/`defp` (clauses of one
/// function merge), macros, ExUnit `describe`/`test` blocks; `alias`,
/// `import`, `require` and `use` (`MyApp.UserStore` resolves as a unique
/// `my_app/user_store.ex` suffix); local and remote calls. Docs are
/// `@moduledoc` and `@doc` strings.
pub static ELIXIR: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["elixir"],
    display: "Elixir",
    grammar: || tree_sitter_elixir::LANGUAGE.into(),
    query: include_str!("queries/elixir.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "#",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::SnakeModule(".ex"),
    methods_in_namespaces: false,
    merge_clauses: true,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Go on the query analyzer: not registered (the hand-written
/// [`crate::lang::go`] stays; see `queries/go.scm` for why), kept as the proof
/// that the query form reproduces a hand-written analyzer's node set.
pub static GO_QUERY: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["go"],
    display: "Go",
    grammar: || tree_sitter_go::LANGUAGE.into(),
    query: include_str!("queries/go.scm"),
    comment_kinds: &["comment"],
    doc_prefix: "//",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::None,
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// Java on the query analyzer: not registered (the hand-written
/// [`crate::lang::java`] stays; see `queries/java.scm` for why), the second
/// proof that the query form reproduces a hand-written analyzer's node set.
pub static JAVA_QUERY: QueryAnalyzer = QueryAnalyzer::new(&QueryLanguage {
    languages: &["java"],
    display: "Java",
    grammar: || tree_sitter_java::LANGUAGE.into(),
    query: include_str!("queries/java.scm"),
    comment_kinds: &["block_comment", "line_comment"],
    doc_prefix: "/**",
    doc_markers: &[],
    signature_skips: &[],
    imports: ImportStyle::None,
    methods_in_namespaces: false,
    merge_clauses: false,
    haddock_docs: false,
    restarts: None,
    rewrite: None,
    last_segment_names: false,
});

/// The differences between two analyses of one file, as sorted lines:
/// `- ` for what only `hand` has, `+ ` for what only `query` has. Nodes
/// compare by kind, symbol path, name, line range and parent; references by
/// kind, source, target and names (imports, calls, inherits: mentions are
/// not part of the query form's contract).
#[cfg(test)]
pub(crate) fn differences(hand: &crate::model::FileAnalysis, query: &crate::model::FileAnalysis) -> Vec<String> {
    use std::collections::BTreeSet;

    use crate::model::{FileAnalysis, RefKind};
    let facts = |a: &FileAnalysis| -> BTreeSet<String> {
        let path = |i: usize| a.nodes[i].symbol_path.clone();
        let mut out = BTreeSet::new();
        for n in &a.nodes[1..] {
            let parent = n.parent.map(path).unwrap_or_default();
            let lines = format!("{}-{}", n.span.start.line, n.span.end.line);
            out.insert(format!("node {} {} ({}) lines {lines} in '{parent}'", n.kind.as_str(), n.symbol_path, n.name));
        }
        for r in a.references.iter().filter(|r| r.kind != RefKind::Mentions) {
            out.insert(format!("ref {} '{}' -> {} {:?}", r.kind.as_str(), path(r.from), r.target, r.names));
        }
        out
    };
    let (h, q) = (facts(hand), facts(query));
    let mut diff: Vec<String> = h.difference(&q).map(|f| format!("- {f}")).collect();
    diff.extend(q.difference(&h).map(|f| format!("+ {f}")));
    diff
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lang::Analyzer;
    use crate::lang::test_support::assert_spans_are_declarations;
    use crate::model::{FileAnalysis, NodeKind, RefKind};
    use crate::render::{EdgeView, NodeView, RenderInput, is_container, render};

    pub(crate) const RUBY_FIXTURE: &str = r#"# Stores items.
require "json"
require_relative "./model/item"

module Shop
  # Keeps items in memory.
  class Store < Base
    MAX = 100

    # Saves an item.
    def save(item, force: false)
      validate(item)
      @items.push(item)
      Audit.record(item)
    end

    def self.build(*args)
      new(*args)
    end
  end

  # Formats a price.
  def format_price(cents)
    format("%.2f", cents / 100.0)
  end
end

class StoreTest < Minitest::Test
  def test_saves
    assert_equal 1, Shop::Store.build.save(2)
  end
end

describe Shop::Store do
  it "saves items" do
    expect(store.save(1)).to be_truthy
  end
end
"#;

    pub(crate) const BASH_FIXTURE: &str = r#"#!/usr/bin/env bash
# Deploys the service.
set -euo pipefail

source ./lib/common.sh
. "$DIR/env.sh"

RETRIES=3
export TARGET="prod"

# Builds the image.
# Tags it with the commit.
build_image() {
  local tag="$1"
  docker build -t "app:$tag" .
  log_info "built $tag"
}

function deploy {
  build_image "$(git rev-parse HEAD)"
  kubectl apply -f deploy.yaml
}

deploy
"#;

    pub(crate) const LUA_FIXTURE: &str = r#"--- Stores items.
local json = require("cjson")
local util = require "app.util"

local M = {}

--- Creates a store.
-- @param opts table
function M.new(opts)
  local self = setmetatable({}, M)
  util.check(opts)
  return self
end

--- Saves an item.
function M:save(item)
  table.insert(self.items, item)
  self:flush()
end

local function helper(x)
  return tostring(x)
end

--- Empties the store.
M.reset = function(self)
  self.items = {}
end

local format = function(x)
  return string.format("%s", x)
end

M.load = async.wrap(function(path, callback)
  callback(format(path))
end, 2)

return M
"#;

    pub(crate) const CSHARP_FIXTURE: &str = r#"using System;
using System.Collections.Generic;
using Json = System.Text.Json;

namespace Shop.Storage
{
    /// <summary>Keeps items in memory.</summary>
    /// <remarks>Not thread-safe.</remarks>
    public class Store<T> : BaseStore<T>, IStore where T : Item
    {
        /// <summary>The most items.</summary>
        public const int Max = 100;
        private readonly List<T> items = new List<T>(), backup;

        /// <summary>The number of items.</summary>
        public int Count { get; private set; }

        public Store(int capacity) : base(capacity)
        {
            Init();
        }

        /// <summary>Saves an item.</summary>
        /// <param name="item">The item.</param>
        public async Task<bool> SaveAsync(T item, bool force = false)
        {
            Validate(item);
            items.Add(item);
            var audit = new Auditor(this);
            audit.Record<T>(item);
            return await Json.JsonSerializer.SerializeAsync(item);
        }
    }

    public interface IStore
    {
        int Count { get; }
        Task<bool> SaveAsync(Item item, bool force);
    }

    public enum Color { Red, Green }

    public delegate void Saved(Item item);

    public struct Point
    {
        public int X;
    }
}

namespace Shop.Tests
{
    public class StoreTests
    {
        [Fact]
        public void Saves()
        {
            Assert.True(new Store<Item>(1).SaveAsync(null).Result);
        }
    }
}
"#;

    /// The file node rendered at `depth`, with its children's members.
    fn render_file(analysis: &FileAnalysis, text: &str, depth: u8) -> String {
        let view = |i: usize| {
            let n = &analysis.nodes[i];
            NodeView {
                kind: n.kind,
                name: &n.name,
                symbol_path: &n.symbol_path,
                path: "fixture",
                span: n.span,
                signature: n.signature.as_deref(),
                doc: n.doc.as_deref(),
            }
        };
        let children = analysis.children(0);
        let members = children
            .iter()
            .map(|&c| {
                if is_container(analysis.nodes[c].kind) {
                    analysis.children(c).into_iter().map(view).collect()
                } else {
                    vec![]
                }
            })
            .collect();
        let edges = analysis
            .references
            .iter()
            .filter(|r| r.from == 0 && r.kind == RefKind::Import)
            .map(|r| EdgeView { kind: r.kind, target: r.target.clone(), external: true })
            .collect();
        let input = RenderInput {
            node: view(0),
            children: children.into_iter().map(view).collect(),
            members,
            edges,
            file_text: text,
        };
        render(&input, depth)
    }

    fn node<'a>(analysis: &'a FileAnalysis, path: &str) -> &'a crate::model::SymbolNode {
        analysis.nodes.iter().find(|n| n.symbol_path == path).unwrap_or_else(|| panic!("no {path}"))
    }

    fn refs(analysis: &FileAnalysis, kind: RefKind) -> Vec<(String, String)> {
        analysis
            .references
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| (analysis.nodes[r.from].symbol_path.clone(), r.target.clone()))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    pub(crate) const PHP_FIXTURE: &str = r#"<?php
namespace App\Store;

use App\Models\Item;
use Psr\Log\LoggerInterface as Logger;
require_once 'helpers.php';

/**
 * Keeps items in memory.
 */
final class Store extends BaseStore implements Countable
{
    use Timestamps;

    /** The most items. */
    const MAX = 100;

    private array $items = [];

    /**
     * Saves an item.
     */
    public function save(Item $item, bool $force = false): bool
    {
        $this->validate($item);
        Audit::record($item);
        $copy = new Item($item->id());
        return array_push($this->items, $copy) > 0;
    }
}

interface Countable
{
    public function count(): int;
}

enum Color: string
{
    case Red = 'r';
}

/** Formats a price. */
function format_price(int $cents): string
{
    return sprintf('%.2f', $cents / 100);
}

class StoreTest extends TestCase
{
    public function testSaves(): void
    {
        $this->assertTrue((new Store())->save(new Item()));
    }
}
"#;

    pub(crate) const KOTLIN_FIXTURE: &str = r#"package com.acme.store

import com.acme.model.Item
import kotlinx.coroutines.*
import org.junit.jupiter.api.Test as JTest

/** Keeps items in memory. */
class Store<T : Item>(private val capacity: Int) : BaseStore<T>(), Saver {
    /** The most items. */
    val max = 100

    constructor() : this(10) {
        init()
    }

    /**
     * Saves an item.
     */
    suspend fun save(item: T, force: Boolean = false): Boolean {
        validate(item)
        items.add(item)
        return Audit.record(item)
    }

    companion object Factory {
        fun create(): Store<Item> = Store(10)
    }
}

interface Saver {
    fun save(item: Item): Boolean
}

enum class Color { RED, GREEN }

typealias Items = List<Item>

/** Formats a price. */
fun formatPrice(cents: Int): String = "%.2f".format(cents / 100.0)

class StoreTest {
    @Test
    fun saves() {
        assertTrue(Store<Item>(1).size == 0)
    }
}
"#;

    pub(crate) const SCALA_FIXTURE: &str = r#"package com.acme.store

import scala.collection.mutable
import com.acme.model._
import com.acme.util.{Checks, Audit => Log}

/** Keeps items in memory. */
class Store[T <: Item](capacity: Int) extends BaseStore[T] with Saver {
  /** The most items. */
  val max = 100

  /** Saves an item. */
  def save(item: T, force: Boolean = false): Boolean = {
    Checks.notNull(item)
    items.append(item)
    validate(item)
  }
}

trait Saver {
  def save(item: Item): Boolean
}

object Store {
  def apply(): Store[Item] = new Store(10)
}

enum Color {
  case Red, Green
}

type Items = List[Item]

class StoreSuite extends munit.FunSuite {
  test("saves items") {
    assert(Store().save(null))
  }
}
"#;

    pub(crate) const SWIFT_FIXTURE: &str = r#"import Foundation
import XCTest

/// Keeps items in memory.
public class Store: BaseStore, Saver {
    /// The most items.
    let max = 100

    init(capacity: Int) {
        super.init()
        setup()
    }

    /// Saves an item.
    public func save(_ item: Item, force: Bool = false) -> Bool {
        validate(item)
        items.append(item)
        return Audit.record(item)
    }
}

extension Store {
    /// Counts items.
    func count() -> Int { return items.count }
}

protocol Saver {
    func save(_ item: Item, force: Bool) -> Bool
}

enum Color {
    case red, green
}

struct Point {
    var x: Int
}

typealias Items = [Item]

final class StoreTests: XCTestCase {
    func testSaves() {
        XCTAssertTrue(Store(capacity: 1).save(Item()))
    }
}
"#;

    pub(crate) const ZIG_FIXTURE: &str = r#"//! Stores items.
const std = @import("std");
const model = @import("model.zig");

/// The most items.
pub const max_items: usize = 100;

/// Keeps items in memory.
pub const Store = struct {
    items: std.ArrayList(Item),
    count: usize = 0,

    /// Saves an item.
    pub fn save(self: *Store, item: Item) !void {
        try validate(item);
        try self.items.append(item);
    }
};

pub const Color = enum { red, green };

fn validate(item: Item) !void {
    std.debug.assert(item.id > 0);
}

test "saves items" {
    var store = Store.init(std.testing.allocator);
    try store.save(.{ .id = 1 });
}
"#;

    pub(crate) const HASKELL_FIXTURE: &str = r#"module Shop.Store (Store, save) where

import qualified Data.Map as Map
import Shop.Model

-- | Keeps items in memory.
data Store = Store { items :: Map.Map String Item, capacity :: Int }

data Color = Red | Green

newtype Id = Id Int

type Items = [Item]

-- | Things that can be saved.
class Saver a where
  saveIt :: a -> Store -> Store

instance Show Color where
  show Red = "red"
  show Green = "green"

-- | Saves an item.
save :: Item -> Store -> Store
save item store = store { items = Map.insert (key item) item (items store) }

count :: Store -> Int
count store = length (items store)
"#;

    pub(crate) const ELIXIR_FIXTURE: &str = r#"defmodule Shop.Store do
  @moduledoc """
  Keeps items in memory.
  """
  alias Shop.Model.Item
  import Ecto.Query
  use GenServer

  @doc "Saves an item."
  def save(store, %Item{} = item) do
    validate(item)
    Repo.insert(item)
  end

  @doc """
  Counts the items.
  """
  @spec count(map) :: integer
  def count(%{items: items}), do: length(items)

  defp validate(nil), do: raise("missing")
  defp validate(item), do: Item.check(item)

  defmacro debug(expr) do
    quote do: IO.inspect(unquote(expr))
  end
end

defmodule Shop.StoreTest do
  use ExUnit.Case

  describe "save/2" do
    test "saves items" do
      assert Shop.Store.save(%{}, %Item{}) == :ok
    end
  end
end
"#;

    fn check(analyzer: &QueryAnalyzer, language: &str, path: &str, text: &str) -> FileAnalysis {
        analyzer.check().expect("the query compiles");
        let analysis = analyzer.analyze(language, path, text);
        assert!(analysis.warnings.is_empty(), "{:?}", analysis.warnings);
        assert_spans_are_declarations(&analysis, text);
        analysis
    }

    #[test]
    fn ruby_fixture() {
        let a = check(&RUBY, "ruby", "lib/shop/store.rb", RUBY_FIXTURE);
        assert_eq!(node(&a, "Shop").kind, NodeKind::Namespace);
        assert_eq!(node(&a, "Shop.Store").kind, NodeKind::Class);
        assert_eq!(node(&a, "Shop.Store").doc.as_deref(), Some("Keeps items in memory."));
        assert_eq!(node(&a, "Shop.Store.MAX").kind, NodeKind::Field);
        let save = node(&a, "Shop.Store.save");
        assert_eq!((save.kind, save.signature.as_deref()), (NodeKind::Method, Some("def save(item, force: false)")));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Shop.format_price").kind, NodeKind::Method);
        assert_eq!(node(&a, "StoreTest.test_saves").kind, NodeKind::Test);
        assert_eq!(node(&a, "Shop::Store.saves items").kind, NodeKind::Test);
        let imports: Vec<_> = a
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| (r.target.as_str(), r.names.clone()))
            .collect();
        assert_eq!(imports, [("json", vec!["json".to_string()]), ("./model/item", vec!["item".to_string()])]);
        assert_eq!(refs(&a, RefKind::Inherits), pairs(&[("Shop.Store", "Base"), ("StoreTest", "Minitest::Test")]));
        let calls = refs(&a, RefKind::Calls);
        assert!(calls.contains(&("Shop.Store.save".to_string(), "Audit.record".to_string())), "{calls:?}");
        assert!(calls.contains(&("Shop.Store.save".to_string(), "validate".to_string())), "{calls:?}");
        assert!(!calls.iter().any(|(_, t)| t == "require" || t == "it" || t == "describe"), "{calls:?}");
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, RUBY_FIXTURE, 4)));
    }

    #[test]
    fn a_broken_shell_function_keeps_the_functions_after_it() {
        // tree-sitter-bash cannot parse `$'...'` inside this expansion, and its
        // error recovery swallows the rest of the file: `later` was lost.
        let text = "# The first.\nfirst() {\n    echo one\n}\n\nbroken() {\n    x=\"${x/$'/:'*}\"\n}\n\n# The later one.\nlater() {\n    first\n}\n";
        let a = BASH.analyze("shell", "bin/tool.sh", text);
        assert!(!a.warnings.is_empty(), "the file still reports its syntax error");
        let names: Vec<(&str, u32, u32)> = a
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Function)
            .map(|n| (n.name.as_str(), n.span.start.line, n.span.end.line))
            .collect();
        // `broken` itself does not parse, in the file or alone.
        assert_eq!(names, [("first", 2, 4), ("later", 11, 13)]);
        assert_eq!(node(&a, "later").doc.as_deref(), Some("The later one."));
        assert!(refs(&a, RefKind::Calls).contains(&("later".to_string(), "first".to_string())));
        // The pieces are cut before a function's first line at the left margin.
        assert!(shell_function_start("deploy() {") && shell_function_start("function deploy {"));
        assert!(!shell_function_start("  indented() {") && !shell_function_start("x=1"));
    }

    #[test]
    fn bash_fixture() {
        let a = check(&BASH, "shell", "bin/deploy.sh", BASH_FIXTURE);
        let build = node(&a, "build_image");
        assert_eq!((build.kind, build.signature.as_deref()), (NodeKind::Function, Some("build_image()")));
        assert_eq!(build.doc.as_deref(), Some("Builds the image.\nTags it with the commit."));
        assert_eq!(node(&a, "deploy").signature.as_deref(), Some("function deploy"));
        assert_eq!(node(&a, "RETRIES").kind, NodeKind::Variable);
        assert_eq!(node(&a, "TARGET").kind, NodeKind::Variable);
        let imports: Vec<_> = a
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| (r.target.as_str(), r.names.clone()))
            .collect();
        assert_eq!(
            imports,
            [("./lib/common.sh", vec!["common".to_string()]), ("$DIR/env.sh", vec!["env".to_string()])]
        );
        assert_eq!(
            refs(&a, RefKind::Calls),
            pairs(&[
                ("build_image", "docker"),
                ("build_image", "log_info"),
                ("deploy", "build_image"),
                ("deploy", "git"),
                ("deploy", "kubectl"),
                ("", "deploy")
            ])
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, BASH_FIXTURE, 4)));
    }

    #[test]
    fn lua_fixture() {
        let a = check(&LUA, "lua", "app/store.lua", LUA_FIXTURE);
        let new = node(&a, "M.new");
        assert_eq!((new.kind, new.signature.as_deref()), (NodeKind::Method, Some("function M.new(opts)")));
        assert_eq!(new.doc.as_deref(), Some("Creates a store.\n@param opts table"));
        assert_eq!(node(&a, "M:save").doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "helper").signature.as_deref(), Some("local function helper(x)"));
        assert_eq!(node(&a, "M").kind, NodeKind::Variable);
        // Functions bound to a name, directly or through a wrapper.
        let reset = node(&a, "M.reset");
        assert_eq!((reset.kind, reset.signature.as_deref()), (NodeKind::Method, Some("M.reset = function(self)")));
        assert_eq!(reset.doc.as_deref(), Some("Empties the store."));
        assert_eq!(node(&a, "format").kind, NodeKind::Function);
        let load = node(&a, "M.load");
        assert_eq!(
            (load.kind, load.signature.as_deref()),
            (NodeKind::Method, Some("M.load = async.wrap(function(path, callback)"))
        );
        let imports: Vec<_> = a
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| (r.target.as_str(), r.names.clone()))
            .collect();
        assert_eq!(imports, [("cjson", vec!["json".to_string()]), ("app.util", vec!["util".to_string()])]);
        assert_eq!(
            refs(&a, RefKind::Calls),
            pairs(&[
                ("M.new", "setmetatable"),
                ("M.new", "util.check"),
                ("M:save", "table.insert"),
                ("M:save", "self:flush"),
                ("helper", "tostring"),
                ("format", "string.format"),
                ("M.load", "async.wrap"),
                ("M.load", "callback"),
                ("M.load", "format"),
            ])
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, LUA_FIXTURE, 4)));
    }

    #[test]
    fn imports_resolve_where_decidable() {
        let files: std::collections::BTreeSet<String> = [
            "lib/shop/model/item.rb",
            "lib/shop/store.rb",
            "lib/shop.rb",
            "bin/lib/common.sh",
            "app/util.lua",
            "app/db/init.lua",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let ctx = crate::resolve::ResolveContext::new(&files);
        let import = |target: &str| crate::model::Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: vec![],
            system: false,
            span: crate::model::Span::default(),
        };
        let r = |a: &QueryAnalyzer, from: &str, target: &str| a.resolve_import(&ctx, from, &import(target));
        assert_eq!(r(&RUBY, "lib/shop/store.rb", "./model/item").as_deref(), Some("lib/shop/model/item.rb"));
        assert_eq!(r(&RUBY, "spec/store_spec.rb", "shop/store").as_deref(), Some("lib/shop/store.rb"));
        assert_eq!(r(&RUBY, "lib/shop/store.rb", "json"), None);
        assert_eq!(r(&BASH, "bin/deploy.sh", "./lib/common.sh").as_deref(), Some("bin/lib/common.sh"));
        assert_eq!(r(&BASH, "bin/deploy.sh", "$DIR/env.sh"), None);
        assert_eq!(r(&LUA, "app/store.lua", "app.util").as_deref(), Some("app/util.lua"));
        assert_eq!(r(&LUA, "app/store.lua", "app.db").as_deref(), Some("app/db/init.lua"));
        assert_eq!(r(&LUA, "app/store.lua", "cjson"), None);
    }

    #[test]
    fn garbage_never_panics() {
        for (a, lang) in [
            (&RUBY, "ruby"),
            (&BASH, "shell"),
            (&LUA, "lua"),
            (&CSHARP, "csharp"),
            (&PHP, "php"),
            (&KOTLIN, "kotlin"),
            (&SCALA, "scala"),
            (&SWIFT, "swift"),
            (&ZIG, "zig"),
            (&HASKELL, "haskell"),
            (&ELIXIR, "elixir"),
            (&GO_QUERY, "go"),
            (&JAVA_QUERY, "java"),
        ] {
            a.check().expect("the query compiles");
            for text in ["", "def", "class <", "function (", "require", "é\u{feff}", "}}}{{{"] {
                let analysis = a.analyze(lang, "x", text);
                assert_spans_are_declarations(&analysis, text);
            }
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut text = "module M\n".repeat(3000);
        text.push_str(&"end\n".repeat(3000));
        text.push_str("def deep\n  a.b");
        text.push_str(&".c(1)".repeat(5000));
        text.push_str("\nend\n");
        let analysis = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || RUBY.analyze("ruby", "deep.rb", &text))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "deep"));
        assert!(analysis.nodes.iter().any(|n| n.symbol_path == "M.M"));
    }

    #[test]
    fn registered_by_language() {
        for lang in ["ruby", "shell", "lua", "csharp", "php", "kotlin", "scala", "swift", "zig", "haskell", "elixir"] {
            assert!(crate::lang::structured_languages().contains(&lang), "{lang}");
        }
    }

    /// The Go and Java ports against the hand-written analyzers on a real
    /// tree: `AGENTS_COMPARE_TREE=/path/to/repo [AGENTS_COMPARE_LANG=java]
    /// cargo test -p agents-uko --lib query_ports_on_a_tree -- --ignored
    /// --nocapture`. Prints node and reference counts and every difference
    /// except in calls (which only the hand-written Go analyzer writes against
    /// a typed receiver; `AGENTS_COMPARE_CALLS` prints those too).
    #[test]
    #[ignore = "needs a checkout named by AGENTS_COMPARE_TREE"]
    fn query_ports_on_a_tree() {
        let Ok(root) = std::env::var("AGENTS_COMPARE_TREE") else { return };
        let language = std::env::var("AGENTS_COMPARE_LANG").unwrap_or_else(|_| "go".to_string());
        let mut stack = vec![std::path::PathBuf::from(&root)];
        let (mut files, mut nodes, mut refs, mut typed, mut other) = (0, 0, 0, 0, Vec::new());
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|e| e == language.as_str()) {
                    let Ok(text) = std::fs::read_to_string(&p) else { continue };
                    let rel = p.strip_prefix(&root).map_or(p.display().to_string(), |r| r.display().to_string());
                    let hand = crate::lang::analyzer_for(&language).analyze(&language, &rel, &text);
                    let port = if language == "java" { &JAVA_QUERY } else { &GO_QUERY };
                    let query = port.analyze(&language, &rel, &text);
                    files += 1;
                    nodes += hand.nodes.len();
                    refs += hand.references.iter().filter(|r| r.kind != RefKind::Mentions).count();
                    for d in differences(&hand, &query) {
                        if d.contains("ref calls") && std::env::var("AGENTS_COMPARE_CALLS").is_err() {
                            typed += 1;
                        } else {
                            other.push(format!("{rel}: {d}"));
                        }
                    }
                }
            }
        }
        println!("{files} files, {nodes} nodes, {refs} references; {typed} call lines differ; other:");
        for d in &other {
            println!("{d}");
        }
        assert!(files > 0, "no .{language} files under {root}");
    }

    #[test]
    fn csharp_fixture() {
        let a = check(&CSHARP, "csharp", "src/Store.cs", CSHARP_FIXTURE);
        assert_eq!(node(&a, "Shop.Storage").kind, NodeKind::Namespace);
        let store = node(&a, "Shop.Storage.Store");
        assert_eq!(store.kind, NodeKind::Class);
        assert_eq!(store.doc.as_deref(), Some("Keeps items in memory.\nNot thread-safe."));
        let save = node(&a, "Shop.Storage.Store.SaveAsync");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("public async Task<bool> SaveAsync(T item, bool force = false)"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item.\nitem: The item."));
        assert_eq!(node(&a, "Shop.Storage.Store.Store").kind, NodeKind::Method);
        assert_eq!(node(&a, "Shop.Storage.Store.Count").kind, NodeKind::Field);
        assert_eq!(node(&a, "Shop.Storage.IStore").kind, NodeKind::Interface);
        assert_eq!(node(&a, "Shop.Storage.Color.Green").kind, NodeKind::Field);
        assert_eq!(node(&a, "Shop.Storage.Saved").kind, NodeKind::TypeAlias);
        assert_eq!(node(&a, "Shop.Storage.Point").kind, NodeKind::Struct);
        let test = node(&a, "Shop.Tests.StoreTests.Saves");
        assert_eq!((test.kind, test.signature.as_deref()), (NodeKind::Test, Some("public void Saves()")));
        let imports: Vec<_> = a
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Import)
            .map(|r| (r.target.as_str(), r.names.clone()))
            .collect();
        assert_eq!(
            imports,
            [
                ("System", vec!["System".to_string()]),
                ("System.Collections.Generic", vec!["Generic".to_string()]),
                ("System.Text.Json", vec!["Json".to_string()])
            ]
        );
        assert_eq!(
            refs(&a, RefKind::Inherits),
            pairs(&[("Shop.Storage.Store", "BaseStore"), ("Shop.Storage.Store", "IStore")])
        );
        let calls = refs(&a, RefKind::Calls);
        for expected in [
            ("Shop.Storage.Store.items", "List"),
            ("Shop.Storage.Store.SaveAsync", "items.Add"),
            ("Shop.Storage.Store.SaveAsync", "Auditor"),
            ("Shop.Storage.Store.SaveAsync", "audit.Record"),
            ("Shop.Tests.StoreTests.Saves", "Store().SaveAsync"),
        ] {
            assert!(calls.contains(&(expected.0.to_string(), expected.1.to_string())), "{expected:?} in {calls:?}");
        }
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, CSHARP_FIXTURE, 4)));
    }

    fn imports_of(a: &FileAnalysis) -> Vec<(String, Vec<String>)> {
        a.references.iter().filter(|r| r.kind == RefKind::Import).map(|r| (r.target.clone(), r.names.clone())).collect()
    }

    fn import(target: &str, names: &[&str]) -> (String, Vec<String>) {
        (target.to_string(), names.iter().map(|n| n.to_string()).collect())
    }

    fn assert_calls(a: &FileAnalysis, expected: &[(&str, &str)]) {
        let calls = refs(a, RefKind::Calls);
        for (from, target) in expected {
            assert!(calls.contains(&(from.to_string(), target.to_string())), "{from} -> {target} in {calls:?}");
        }
    }

    #[test]
    fn php_fixture() {
        let a = check(&PHP, "php", "src/Store/Store.php", PHP_FIXTURE);
        assert_eq!(node(&a, "App\\Store").kind, NodeKind::Namespace);
        let store = node(&a, "Store");
        assert_eq!((store.kind, store.doc.as_deref()), (NodeKind::Class, Some("Keeps items in memory.")));
        let save = node(&a, "Store.save");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("public function save(Item $item, bool $force = false): bool"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Store.MAX").kind, NodeKind::Field);
        assert_eq!(node(&a, "Store.$items").kind, NodeKind::Field);
        assert_eq!(node(&a, "Countable.count").kind, NodeKind::Method);
        assert_eq!(node(&a, "Color").kind, NodeKind::Enum);
        assert_eq!(node(&a, "Color.Red").kind, NodeKind::Field);
        assert_eq!(node(&a, "format_price").kind, NodeKind::Function);
        assert_eq!(node(&a, "StoreTest.testSaves").kind, NodeKind::Test);
        assert_eq!(
            imports_of(&a),
            [
                import("App\\Models\\Item", &["Item"]),
                import("Psr\\Log\\LoggerInterface", &["Logger"]),
                import("helpers.php", &["helpers"])
            ]
        );
        assert_eq!(
            refs(&a, RefKind::Inherits),
            pairs(&[
                ("Store", "BaseStore"),
                ("Store", "Countable"),
                ("Store", "Timestamps"),
                ("StoreTest", "TestCase")
            ])
        );
        assert_calls(
            &a,
            &[
                ("Store.save", "$this.validate"),
                ("Store.save", "Audit.record"),
                ("Store.save", "Item"),
                ("format_price", "sprintf"),
            ],
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, PHP_FIXTURE, 4)));
    }

    #[test]
    fn kotlin_constructors_below_their_headers_keep_their_classes() {
        // As ktfmt writes long headers: nested with an indent, and at the
        // top of the file without one.
        let text = "package a\n\npublic abstract class JsonReader {\n  /** Strings to select. */\n  public class Options\n  private  constructor(\n    internal val strings: Array<String>,\n  ) {\n    public fun strings(): List<String> = strings.toList()\n  }\n\n  public fun after(): Int = 1\n}\n\ninternal class Adapter<T>\ninternal constructor(private val t: T) : Base() {\n  fun read(): T = t\n}\n";
        let rewritten = kotlin_constructor_below_header(text).expect("rewritten");
        assert_eq!(rewritten.len(), text.len());
        assert_eq!(rewritten.matches('\n').count(), text.matches('\n').count());
        assert!(
            rewritten.contains("public class Options private\n   constructor(")
                && rewritten.contains("class Adapter<T> internal\nconstructor(")
        );
        let a = check(&KOTLIN, "kotlin", "src/a/JsonReader.kt", text);
        let options = node(&a, "JsonReader.Options");
        assert_eq!((options.kind, options.doc.as_deref()), (NodeKind::Class, Some("Strings to select.")));
        assert_eq!((options.span.start.line, options.span.end.line), (5, 10));
        assert_eq!(node(&a, "JsonReader.Options.strings").kind, NodeKind::Method);
        assert_eq!(node(&a, "JsonReader.after").kind, NodeKind::Method);
        assert_eq!(node(&a, "Adapter.read").span.start.line, 17);
        assert_eq!(kotlin_constructor_below_header("class A(val x: Int)\nprivate fun f() = 1\n"), None);
    }

    #[test]
    fn kotlin_fixture() {
        let a = check(&KOTLIN, "kotlin", "src/main/kotlin/com/acme/store/Store.kt", KOTLIN_FIXTURE);
        let store = node(&a, "Store");
        assert_eq!((store.kind, store.doc.as_deref()), (NodeKind::Class, Some("Keeps items in memory.")));
        let save = node(&a, "Store.save");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("suspend fun save(item: T, force: Boolean = false): Boolean"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Store.max").kind, NodeKind::Field);
        assert_eq!(node(&a, "Store.constructor").kind, NodeKind::Method);
        assert_eq!(node(&a, "Store.Factory.create").kind, NodeKind::Method);
        assert_eq!(node(&a, "Saver").kind, NodeKind::Interface);
        assert_eq!(node(&a, "Color").signature.as_deref(), Some("enum class Color"));
        assert_eq!(node(&a, "Color.GREEN").kind, NodeKind::Field);
        assert_eq!(node(&a, "Items").kind, NodeKind::TypeAlias);
        assert_eq!(node(&a, "formatPrice").kind, NodeKind::Function);
        assert_eq!(node(&a, "StoreTest.saves").kind, NodeKind::Test);
        assert_eq!(
            imports_of(&a),
            [
                import("com.acme.model.Item", &["Item"]),
                import("kotlinx.coroutines", &["*"]),
                import("org.junit.jupiter.api.Test", &["JTest"])
            ]
        );
        assert_eq!(refs(&a, RefKind::Inherits), pairs(&[("Store", "BaseStore"), ("Store", "Saver")]));
        assert_calls(
            &a,
            &[
                ("Store.save", "validate"),
                ("Store.save", "items.add"),
                ("Store.save", "Audit.record"),
                ("Store.Factory.create", "Store"),
            ],
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, KOTLIN_FIXTURE, 4)));
    }

    #[test]
    fn namespaced_imports_resolve_by_unique_suffix() {
        let files: std::collections::BTreeSet<String> =
            ["src/Models/Item.php", "src/Store/helpers.php", "src/main/kotlin/com/acme/model/Item.kt"]
                .into_iter()
                .map(String::from)
                .collect();
        let ctx = crate::resolve::ResolveContext::new(&files);
        let import = |target: &str, names: &[&str]| crate::model::Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: names.iter().map(|n| n.to_string()).collect(),
            system: false,
            span: crate::model::Span::default(),
        };
        let php = |target: &str| PHP.resolve_import(&ctx, "src/Store/Store.php", &import(target, &["x"]));
        assert_eq!(php("App\\Models\\Item").as_deref(), Some("src/Models/Item.php"));
        assert_eq!(php("helpers.php").as_deref(), Some("src/Store/helpers.php"));
        assert_eq!(php("Psr\\Log\\LoggerInterface"), None);
        let kt = |target: &str, names: &[&str]| {
            KOTLIN.resolve_import(&ctx, "src/main/kotlin/x/A.kt", &import(target, names))
        };
        assert_eq!(kt("com.acme.model.Item", &["Item"]).as_deref(), Some("src/main/kotlin/com/acme/model/Item.kt"));
        assert_eq!(kt("com.acme.model", &["*"]), None);
        assert_eq!(kt("kotlinx.coroutines.launch", &["launch"]), None);
    }

    #[test]
    fn scala_fixture() {
        let a = check(&SCALA, "scala", "src/main/scala/com/acme/store/Store.scala", SCALA_FIXTURE);
        let store = node(&a, "Store");
        assert_eq!((store.kind, store.doc.as_deref()), (NodeKind::Class, Some("Keeps items in memory.")));
        let save = node(&a, "Store.save");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("def save(item: T, force: Boolean = false): Boolean"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Store.max").kind, NodeKind::Field);
        assert_eq!(node(&a, "Saver").kind, NodeKind::Trait);
        assert_eq!(node(&a, "Saver.save").kind, NodeKind::Method);
        // The companion object is a second `Store`.
        assert_eq!(node(&a, "Store~2.apply").kind, NodeKind::Method);
        assert_eq!(node(&a, "Color.Green").kind, NodeKind::Field);
        assert_eq!(node(&a, "Items").kind, NodeKind::TypeAlias);
        assert_eq!(node(&a, "StoreSuite.saves items").kind, NodeKind::Test);
        assert_eq!(
            imports_of(&a),
            [
                import("scala.collection.mutable", &["mutable"]),
                import("com.acme.model", &["*"]),
                import("com.acme.util", &["Checks", "Log"])
            ]
        );
        assert_eq!(
            refs(&a, RefKind::Inherits),
            pairs(&[("Store", "BaseStore"), ("Store", "Saver"), ("StoreSuite", "munit.FunSuite")])
        );
        assert_calls(
            &a,
            &[("Store.save", "Checks.notNull"), ("Store.save", "items.append"), ("Store~2.apply", "Store")],
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, SCALA_FIXTURE, 4)));
    }

    #[test]
    fn swift_fixture() {
        let a = check(&SWIFT, "swift", "Sources/Store/Store.swift", SWIFT_FIXTURE);
        let store = node(&a, "Store");
        assert_eq!((store.kind, store.doc.as_deref()), (NodeKind::Class, Some("Keeps items in memory.")));
        let save = node(&a, "Store.save");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("public func save(_ item: Item, force: Bool = false) -> Bool"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Store.max").kind, NodeKind::Field);
        assert_eq!(node(&a, "Store.init").kind, NodeKind::Method);
        // Declared in an extension, listed under the type.
        let count = node(&a, "Store.count");
        assert_eq!((count.kind, count.doc.as_deref()), (NodeKind::Method, Some("Counts items.")));
        assert_eq!(node(&a, "Saver").kind, NodeKind::Interface);
        assert_eq!(node(&a, "Saver.save").kind, NodeKind::Method);
        assert_eq!(node(&a, "Color.green").kind, NodeKind::Field);
        assert_eq!(node(&a, "Point").kind, NodeKind::Struct);
        assert_eq!(node(&a, "Point.x").kind, NodeKind::Field);
        assert_eq!(node(&a, "Items").kind, NodeKind::TypeAlias);
        assert_eq!(node(&a, "StoreTests.testSaves").kind, NodeKind::Test);
        assert_eq!(imports_of(&a), [import("Foundation", &["Foundation"]), import("XCTest", &["XCTest"])]);
        assert_eq!(
            refs(&a, RefKind::Inherits),
            pairs(&[("Store", "BaseStore"), ("Store", "Saver"), ("StoreTests", "XCTestCase")])
        );
        assert_calls(&a, &[("Store.init", "setup"), ("Store.save", "items.append"), ("Store.save", "Audit.record")]);
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, SWIFT_FIXTURE, 4)));
    }

    #[test]
    fn zig_fixture() {
        let a = check(&ZIG, "zig", "src/store.zig", ZIG_FIXTURE);
        let store = node(&a, "Store");
        assert_eq!((store.kind, store.doc.as_deref()), (NodeKind::Struct, Some("Keeps items in memory.")));
        assert_eq!(store.signature.as_deref(), Some("pub const Store"));
        let save = node(&a, "Store.save");
        assert_eq!(save.kind, NodeKind::Method);
        assert_eq!(save.signature.as_deref(), Some("pub fn save(self: *Store, item: Item) !void"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!(node(&a, "Store.count").kind, NodeKind::Field);
        assert_eq!(node(&a, "Color").kind, NodeKind::Enum);
        assert_eq!(node(&a, "Color.green").kind, NodeKind::Field);
        assert_eq!(node(&a, "max_items").kind, NodeKind::Variable);
        assert_eq!(node(&a, "validate").kind, NodeKind::Function);
        assert_eq!(node(&a, "saves items").kind, NodeKind::Test);
        // An `@import` is an import, not also a variable.
        assert!(!a.nodes.iter().any(|n| n.kind == NodeKind::Variable && n.name == "std"));
        assert_eq!(imports_of(&a), [import("std", &["std"]), import("model.zig", &["model"])]);
        assert_calls(
            &a,
            &[("Store.save", "validate"), ("Store.save", "self.items.append"), ("validate", "std.debug.assert")],
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, ZIG_FIXTURE, 4)));
    }

    #[test]
    fn a_member_taken_from_an_import_is_that_import() {
        let zig = "const ThreadPool = @import(\"thread_pool.zig\").ThreadPool;\nconst BufferPool = @import(\"buffer.zig\").Pool;\n";
        let a = check(&ZIG, "zig", "src/worker.zig", zig);
        assert_eq!(
            imports_of(&a),
            [import("thread_pool.zig", &["ThreadPool"]), import("buffer.zig", &["Pool as BufferPool"])]
        );
        assert!(!a.nodes.iter().any(|n| n.kind == NodeKind::Variable), "imports, not variables");
        let lua = "local rotate = require(\"plenary.vararg\").rotate\nlocal util = require(\"luassert.util\")\nlocal eq = assert.are.same\n";
        let a = check(&LUA, "lua", "tests/rotate_spec.lua", lua);
        // One import for the first line: the `require` call inside is the same.
        assert_eq!(imports_of(&a), [import("plenary.vararg", &["rotate"]), import("luassert.util", &["util"])]);
        assert_eq!(node(&a, "eq").kind, NodeKind::Variable);
        assert!(refs(&a, RefKind::Calls).iter().all(|(_, t)| t != "require"), "an import is no call");
    }

    #[test]
    fn lua_functions_of_a_returned_or_bound_table() {
        let lua = "local M = {\n  -- Makes one.\n  new = function(opts)\n    return setmetatable(opts, M)\n  end,\n  size = 3,\n}\n\nreturn {\n  lt = function(a, b)\n    return a < b\n  end,\n  le = function(a, b) return compare(a, b) <= 0 end,\n}\n";
        let a = check(&LUA, "lua", "lua/ops.lua", lua);
        let new = node(&a, "M.new");
        assert_eq!((new.kind, new.span.start.line, new.doc.as_deref()), (NodeKind::Function, 3, Some("Makes one.")));
        assert_eq!((node(&a, "lt").kind, node(&a, "lt").span.start.line), (NodeKind::Function, 10));
        assert_eq!(node(&a, "le").signature.as_deref(), Some("le = function(a, b)"));
        assert!(a.nodes.iter().all(|n| !n.symbol_path.ends_with("size")), "{:?}", a.nodes);
        let le = a.nodes.iter().position(|n| n.symbol_path == "le").unwrap();
        assert!(a.references.iter().any(|r| r.from == le && r.target == "compare"), "{:?}", a.references);
    }

    #[test]
    fn lua_calls_on_a_value_a_constructor_made_are_written_against_its_table() {
        let lua = r#"local Path = require("plenary.path")

it("removes", function()
  local p = Path:new("a.lua")
  local q = Path.new("b.lua")
  p:rm()
  q:exists()
  local r = Path:new("c.lua")
  r:rm()
end)

local function touch(r, s)
  s:touch()
  local s = vim.fn.expand("x")
end
"#;
        let a = check(&LUA, "lua", "tests/path_spec.lua", lua);
        assert_eq!(imports_of(&a), [import("plenary.path", &["Path"])]);
        let calls: Vec<String> = refs(&a, RefKind::Calls).into_iter().map(|(_, t)| t).collect();
        assert!(calls.contains(&"Path:rm".to_string()), "{calls:?}");
        assert!(calls.contains(&"Path:exists".to_string()), "{calls:?}");
        // `r` is also a parameter, `s` also something else: written as they are.
        assert!(calls.contains(&"r:rm".to_string()), "{calls:?}");
        assert!(calls.contains(&"s:touch".to_string()), "{calls:?}");
        // The functions of a table are named by their last segment.
        let store = check(&LUA, "lua", "app/store.lua", LUA_FIXTURE);
        assert_eq!(node(&store, "M:save").name, "save");
        assert_eq!(node(&store, "M.new").name, "new");
    }

    #[test]
    fn haskell_fixture() {
        let a = check(&HASKELL, "haskell", "src/Shop/Store.hs", HASKELL_FIXTURE);
        assert_eq!(node(&a, "Store").kind, NodeKind::Enum);
        assert_eq!(node(&a, "Store.Store.items").kind, NodeKind::Field);
        assert_eq!(node(&a, "Color.Green").kind, NodeKind::Field);
        assert_eq!(node(&a, "Id").kind, NodeKind::Struct);
        assert_eq!(node(&a, "Items").kind, NodeKind::TypeAlias);
        let saver = node(&a, "Saver");
        assert_eq!((saver.kind, saver.doc.as_deref()), (NodeKind::Trait, Some("Things that can be saved.")));
        assert_eq!(node(&a, "Saver.saveIt").kind, NodeKind::Method);
        assert_eq!(node(&a, "Show Color").kind, NodeKind::Class);
        // Two equations, one method.
        let show = node(&a, "Show Color.show");
        assert_eq!((show.span.start.line, show.span.end.line), (20, 21));
        // The signature and the equation are one function.
        let save = node(&a, "save");
        assert_eq!(save.kind, NodeKind::Function);
        assert_eq!(save.signature.as_deref(), Some("save :: Item -> Store -> Store"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        assert_eq!((save.span.start.line, save.span.end.line), (24, 25));
        assert!(!a.nodes.iter().any(|n| n.symbol_path == "save~2"));
        assert_eq!(imports_of(&a), [import("Data.Map", &["Map"]), import("Shop.Model", &["Model"])]);
        assert_calls(&a, &[("save", "Map.insert"), ("count", "length")]);
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, HASKELL_FIXTURE, 4)));
    }

    #[test]
    fn haskell_docs_reach_across_blank_lines_and_banners() {
        let text = "module M where\n\n\
            -- | Builds a map from an ascending list in linear time.\n--\n-- > example\n\n\
            -- See Note [impl] elsewhere.\n\
            fromAsc :: [(k, a)] -> [a]\nfromAsc xs = map snd xs\n\n\
            {------------------------\n  [link2 l r]: merges two trees.\n------------------------}\n\
            link2 :: Int -> Int -> Int\nlink2 l r = l + r\n\n\
            {-| Glues two trees. -}\nglue :: Int -> Int\nglue x = x\n\n\
            {- A comment a blank line above. -}\n\nplain :: Int\nplain = 1\n\n\
            -- | Direct.\ndirect :: Int\ndirect = 2\n";
        let a = check(&HASKELL, "haskell", "src/M.hs", text);
        let doc = |name: &str| node(&a, name).doc.clone();
        assert_eq!(doc("fromAsc").as_deref(), Some("Builds a map from an ascending list in linear time.\n\n> example"));
        assert_eq!(doc("link2").as_deref(), Some("[link2 l r]: merges two trees."));
        assert_eq!(doc("glue").as_deref(), Some("Glues two trees."));
        assert_eq!(doc("plain"), None, "a plain block comment documents only what comes right below it");
        assert_eq!(doc("direct").as_deref(), Some("Direct."));
        // Without a Haddock comment, plain line comments right above say
        // what a declaration does; a rule of dashes or commented-out code
        // does not.
        let text = "module M where\n\n\
            -- Functions balanceL and balanceR are specialized versions of balance.\n\n\
            -- balanceL is called when the left subtree\n-- might have grown.\n\
            balanceL :: Int -> Int\nbalanceL x = x\n\n\
            --------------------\nrule :: Int\nrule = 1\n\n\
            -- | Haddock.\n\n-- plain note\nboth :: Int\nboth = 2\n";
        let a = check(&HASKELL, "haskell", "src/M.hs", text);
        let doc = |name: &str| node(&a, name).doc.clone();
        assert_eq!(doc("balanceL").as_deref(), Some("balanceL is called when the left subtree\nmight have grown."));
        assert_eq!(doc("rule"), None);
        assert_eq!(doc("both").as_deref(), Some("Haddock."), "a Haddock comment wins over a plain one");
    }

    #[test]
    fn plain_comments_right_above_document_what_has_no_doc_comment() {
        let text = "// Parses the head of a request.\n// It stops at the blank line.\nfn parseHead() void {}\n\n\
            /// Documented.\n// plain\nfn documented() void {}\n\n\
            // A note a blank line away.\n\nfn far() void {}\n\n\
            // const x = 1;\n// x += 2;\nfn commented() void {}\n";
        let a = check(&ZIG, "zig", "src/head.zig", text);
        let doc = |name: &str| node(&a, name).doc.clone();
        assert_eq!(doc("parseHead").as_deref(), Some("Parses the head of a request.\nIt stops at the blank line."));
        assert_eq!(doc("far"), None);
        assert_eq!(doc("commented"), None, "code commented out is not a description");
        assert!(doc("documented").is_some_and(|d| d.starts_with("Documented.")));
    }

    #[test]
    fn elixir_fixture() {
        let a = check(&ELIXIR, "elixir", "lib/shop/store.ex", ELIXIR_FIXTURE);
        let module = node(&a, "Shop.Store");
        assert_eq!((module.kind, module.doc.as_deref()), (NodeKind::Namespace, Some("Keeps items in memory.")));
        let save = node(&a, "Shop.Store.save");
        assert_eq!(save.kind, NodeKind::Function);
        assert_eq!(save.signature.as_deref(), Some("def save(store, %Item{} = item)"));
        assert_eq!(save.doc.as_deref(), Some("Saves an item."));
        // A `@spec` between the `@doc` and the definition.
        let count = node(&a, "Shop.Store.count");
        assert_eq!((count.doc.as_deref(), count.span.start.line), (Some("Counts the items."), 19));
        // Two clauses, one function.
        let validate = node(&a, "Shop.Store.validate");
        assert_eq!((validate.span.start.line, validate.span.end.line), (21, 22));
        assert!(!a.nodes.iter().any(|n| n.symbol_path == "Shop.Store.validate~2"));
        assert_eq!(node(&a, "Shop.Store.debug").kind, NodeKind::Macro);
        assert_eq!(node(&a, "Shop.StoreTest.save/2.saves items").kind, NodeKind::Test);
        assert_eq!(
            imports_of(&a),
            [
                import("Shop.Model.Item", &["Item"]),
                import("Ecto.Query", &["Query"]),
                import("GenServer", &["GenServer"]),
                import("ExUnit.Case", &["Case"])
            ]
        );
        assert_eq!(
            refs(&a, RefKind::Calls),
            pairs(&[
                ("Shop.Store.save", "validate"),
                ("Shop.Store.save", "Repo.insert"),
                ("Shop.Store.count", "length"),
                ("Shop.Store.validate", "Item.check"),
                ("Shop.Store.debug", "IO.inspect"),
                ("Shop.StoreTest.save/2.saves items", "assert"),
                ("Shop.StoreTest.save/2.saves items", "Shop.Store.save")
            ])
        );
        insta::assert_snapshot!(format!("{}\n{}", a.outline(), render_file(&a, ELIXIR_FIXTURE, 4)));
    }

    #[test]
    fn module_imports_resolve() {
        let files: std::collections::BTreeSet<String> =
            ["lib/shop/model/item.ex", "src/Shop/Model.hs", "src/model.zig"].into_iter().map(String::from).collect();
        let ctx = crate::resolve::ResolveContext::new(&files);
        let import = |target: &str| crate::model::Reference {
            from: 1,
            kind: RefKind::Import,
            target: target.to_string(),
            names: vec![],
            system: false,
            span: crate::model::Span::default(),
        };
        assert_eq!(
            ELIXIR.resolve_import(&ctx, "lib/shop/store.ex", &import("Shop.Model.Item")).as_deref(),
            Some("lib/shop/model/item.ex")
        );
        assert_eq!(ELIXIR.resolve_import(&ctx, "lib/shop/store.ex", &import("GenServer")), None);
        assert_eq!(
            HASKELL.resolve_import(&ctx, "src/Shop/Store.hs", &import("Shop.Model")).as_deref(),
            Some("src/Shop/Model.hs")
        );
        assert_eq!(HASKELL.resolve_import(&ctx, "src/Shop/Store.hs", &import("Data.Map")), None);
        assert_eq!(ZIG.resolve_import(&ctx, "src/store.zig", &import("model.zig")).as_deref(), Some("src/model.zig"));
        assert_eq!(ZIG.resolve_import(&ctx, "src/store.zig", &import("std")), None);
    }

    /// A real-repository smoke test for one language:
    /// `AGENTS_SMOKE_TREE=/path/to/checkout AGENTS_SMOKE_LANG=ruby cargo test
    /// -p agents-uko --lib smoke_on_a_tree -- --ignored --nocapture`. Prints
    /// files, nodes by kind, references by kind, imports resolved to a file
    /// of the tree, and files with syntax warnings (docs/languages.md).
    #[test]
    #[ignore = "needs a checkout named by AGENTS_SMOKE_TREE"]
    fn smoke_on_a_tree() {
        let (Ok(root), Ok(language)) = (std::env::var("AGENTS_SMOKE_TREE"), std::env::var("AGENTS_SMOKE_LANG")) else {
            return;
        };
        let mut stack = vec![std::path::PathBuf::from(&root)];
        let mut paths = Vec::new();
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = entry.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(rel) = p.strip_prefix(&root) {
                    paths.push(rel.display().to_string());
                }
            }
        }
        let all: std::collections::BTreeSet<String> = paths.iter().cloned().collect();
        let ctx = crate::resolve::ResolveContext::new(&all);
        let analyzer = crate::lang::analyzer_for(&language);
        let mut kinds = std::collections::BTreeMap::<&str, usize>::new();
        let mut ref_kinds = std::collections::BTreeMap::<&str, usize>::new();
        let (mut files, mut resolved, mut warned) = (0, 0, 0);
        for rel in &paths {
            let Ok(text) = std::fs::read_to_string(std::path::Path::new(&root).join(rel)) else { continue };
            let first = text.lines().next();
            if crate::language::detect_language(rel, first) != language {
                continue;
            }
            let a = analyzer.analyze(&language, rel, &text);
            files += 1;
            warned += usize::from(!a.warnings.is_empty());
            for n in &a.nodes[1..] {
                *kinds.entry(n.kind.as_str()).or_default() += 1;
            }
            for r in &a.references {
                *ref_kinds.entry(r.kind.as_str()).or_default() += 1;
                if r.kind == RefKind::Import && analyzer.resolve_import(&ctx, rel, r).is_some() {
                    resolved += 1;
                }
            }
        }
        println!(
            "{language}: {files} files ({warned} with syntax warnings); nodes {kinds:?}; references {ref_kinds:?}; imports resolved {resolved}"
        );
        assert!(files > 0, "no {language} files under {root}");
    }
}
