//! End-to-end tests of `agents uko ...` (show, types, stats, query, export):
//! every test runs the real executable against a temporary `$AGENTS_HOME`
//! and a small multi-language fixture repository (a Python package, a Rust
//! crate and a README) built in a temporary directory.
//!
//! Only [`agents`] knows how the binary is started; [`Fixture::uko`] adds
//! `--path REPO` so that the commands never depend on the working directory.
#![cfg(unix)]

use std::path::PathBuf;
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

mod common;
use common::{agents, parse, regex_escape, stderr, stdout};

/// A temporary home and the fixture repository `repo` next to it.
struct Fixture {
    _tmp: TempDir,
    root: PathBuf,
    home: PathBuf,
    repo: PathBuf,
}

impl Fixture {
    /// The standard fixture, written (not yet indexed: every `uko` command
    /// but `types` indexes or refreshes the resource first).
    fn new() -> Fixture {
        let d = common::dirs();
        let fx = Fixture { _tmp: d.tmp, root: d.root, home: d.home, repo: d.repo };
        for (path, text) in FILES {
            fx.write(path, text);
        }
        fx
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo.join(rel)).unwrap()
    }

    /// `agents uko ARGS --path REPO`.
    fn uko(&self, args: &[&str]) -> Command {
        let mut cmd = agents(&self.home);
        cmd.arg("uko").args(args).arg("--path").arg(&self.repo);
        cmd
    }

    /// `agents uko ARGS --path REPO --json`, asserting exit 0 and a quiet
    /// stderr, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let out = self.uko(args).arg("--json").assert().success();
        assert!(stderr(out.get_output()).is_empty(), "{args:?}: {}", stderr(out.get_output()));
        parse(&out.get_output().stdout)
    }

    /// `agents uko ARGS --path REPO` (text), asserting exit 0.
    fn text(&self, args: &[&str]) -> String {
        let out = self.uko(args).assert().success();
        stdout(out.get_output())
    }

    /// `agents uko show TARGET --depth DEPTH --json`: the one node it shows.
    fn show(&self, target: &str, depth: &str) -> Value {
        let v = self.json(&["show", target, "--depth", depth]);
        let shown = v.as_array().unwrap_or_else(|| panic!("show prints an array: {v:#}"));
        assert_eq!(shown.len(), 1, "{target}: exactly one match expected: {v:#}");
        shown[0].clone()
    }

    /// Rewrites the body of `Store.save` (the class and the method change,
    /// `Store.load` keeps its text but moves down one line).
    fn modify_save(&self) {
        let models = self.read("pkg/models.py");
        let changed = models
            .replace("        return len(self.items)\n", "        count = len(self.items)\n        return count\n");
        assert_ne!(models, changed);
        self.write("pkg/models.py", &changed);
    }
}

const MODELS_PY: &str = r#""""Models of the application."""

from .base import Base


class Store(Base):
    """Keeps items in memory."""

    def save(self, item):
        """Save one item."""
        self.items = getattr(self, "items", [])
        self.items.append(item)
        return len(self.items)

    def load(self):
        """Load every item."""
        return list(getattr(self, "items", []))
"#;

const BASE_PY: &str = r#"class Base:
    """The base of every model."""

    def describe(self):
        return type(self).__name__
"#;

const APP_PY: &str = r#"from .models import Store


def main():
    """Save one item."""
    return Store().save(1)
"#;

const LIB_RS: &str = "mod util;\n\n/// Doubles through the helper.\npub fn run() -> u32 {\n    util::helper() * 2\n}\n";

const UTIL_RS: &str = "/// The helper.\npub fn helper() -> u32 {\n    21\n}\n";

const README_MD: &str = "# Demo\n\nA fixture.\n\n## Usage\n\nRun it.\n\n## License\n\nMIT.\n";

const FILES: [(&str, &str); 7] = [
    ("pkg/__init__.py", ""),
    ("pkg/base.py", BASE_PY),
    ("pkg/models.py", MODELS_PY),
    ("pkg/app.py", APP_PY),
    ("src/lib.rs", LIB_RS),
    ("src/util.rs", UTIL_RS),
    ("README.md", README_MD),
];

/// The text of `class Store` in [`MODELS_PY`], from `class` to the last
/// character of its last statement.
fn store_class() -> &'static str {
    MODELS_PY[MODELS_PY.find("class Store").unwrap()..].trim_end()
}

/// Asserts that a failed command wrote nothing on stdout and exactly one
/// `error:` line on stderr, and returns that line.
fn assert_one_error_line(output: &Output) -> String {
    assert!(output.stdout.is_empty(), "stdout: {}", String::from_utf8_lossy(&output.stdout));
    common::assert_one_error_line(output)
}

/// Filters that make output deterministic: the fixture's paths, ULIDs,
/// timestamps, and the trailing spaces of borderless tables.
fn with_filters(fx: &Fixture, f: impl FnOnce()) {
    let filters: [(String, &str); 5] = [
        (regex_escape(fx.repo.to_str().unwrap()), "[REPO]"),
        (regex_escape(fx.home.to_str().unwrap()), "[HOME]"),
        (r"\b[0-9A-HJKMNP-TV-Z]{26}\b".into(), "[ULID]"),
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z".into(), "[TIMESTAMP]"),
        (r"(?m)[ \t]+$".into(), ""),
    ];
    let mut settings = insta::Settings::clone_current();
    for (regex, replacement) in filters {
        settings.add_filter(&regex, replacement);
    }
    settings.bind(f);
}

/// The text a `line:col-line:col` source range covers (lines 1-based,
/// columns 0-based byte offsets into the line).
fn slice_range<'t>(text: &'t str, range: &str) -> &'t str {
    let offset = |point: &str| {
        let (line, col) = point.split_once(':').unwrap_or_else(|| panic!("bad point `{point}` in `{range}`"));
        let (line, col): (usize, usize) = (line.parse().unwrap(), col.parse().unwrap());
        assert!(line >= 1, "lines are 1-based: {range}");
        let before: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
        before + col
    };
    let (start, end) = range.split_once('-').unwrap_or_else(|| panic!("bad range `{range}`"));
    &text[offset(start)..offset(end)]
}

/// An RFC 3339 UTC timestamp as (seconds part, nanoseconds), comparable
/// whatever the number of fractional digits.
fn instant(ts: &str) -> (String, u32) {
    let body = ts.strip_suffix('Z').unwrap_or_else(|| panic!("not a UTC timestamp: {ts}"));
    let (secs, frac) = body.split_once('.').unwrap_or((body, ""));
    assert_eq!(secs.len(), "2026-01-01T00:00:00".len(), "{ts}");
    assert!(frac.len() <= 9 && frac.chars().all(|c| c.is_ascii_digit()), "{ts}");
    (secs.to_string(), format!("{frac:0<9}").parse().unwrap())
}

/// The `name` column of a SELECT result in `--json`, after checking the
/// SPARQL-results shape.
fn bindings(v: &Value, var: &str) -> Vec<String> {
    let vars = v["head"]["vars"].as_array().unwrap_or_else(|| panic!("head.vars: {v:#}"));
    assert!(vars.iter().any(|x| x == var), "{var} not in head.vars: {v:#}");
    v["results"]["bindings"]
        .as_array()
        .unwrap_or_else(|| panic!("results.bindings: {v:#}"))
        .iter()
        .map(|b| b[var].as_str().unwrap_or_else(|| panic!("{var} unbound in {b}")).to_string())
        .collect()
}

// ---------------------------------------------------------------------------
// 1. `uko show`: depths, ranges, named levels and lookups
// ---------------------------------------------------------------------------

#[test]
fn show_depths_grow_from_the_name_to_the_full_source() {
    let fx = Fixture::new();
    let shown: Vec<Value> = (0..=9).map(|d| fx.show("pkg/models.py#Store", &d.to_string())).collect();

    let by_depth = shown[0]["tokens_by_depth"].clone();
    let counts: Vec<u64> = by_depth.as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    assert_eq!(counts.len(), 10, "{by_depth}");
    assert!(counts.windows(2).all(|w| w[0] <= w[1]), "token counts never decrease with depth: {counts:?}");
    assert!(counts[0] > 0 && counts[0] < counts[9], "{counts:?}");
    for (d, v) in shown.iter().enumerate() {
        assert_eq!(v["depth"], d as u64, "{v:#}");
        assert_eq!(v["tokens_by_depth"], by_depth, "every call reports the same counts");
        assert_eq!(v["tokens"], counts[d], "depth {d}: tokens is tokens_by_depth[{d}]");
        assert!(v["uri"].as_str().unwrap().starts_with("uko://"), "{v:#}");
        assert!(v["uri"].as_str().unwrap().ends_with("/pkg/models.py#Store"), "{v:#}");
        assert_eq!(v["kind"], "class");
        assert_eq!(v["path"], "pkg/models.py");
        assert_eq!(v["source_range"], "6:0-17:47");
    }
    let content: Vec<&str> = shown.iter().map(|v| v["content"].as_str().unwrap()).collect();

    // Depths 0-3 each append to the previous; 4 appends the outline, whose
    // signatures name the members `contains:` named; 5-8 append a prefix of
    // the source to depth 4, unless the complete source (depth 9, which
    // leaves out the header lines its source repeats) costs no more.
    assert_eq!(content[0], "class Store\n");
    for d in 1..=3 {
        assert!(content[d].starts_with(content[d - 1]), "depth {d} does not extend depth {}:\n{}", d - 1, content[d]);
    }
    for line in content[3].lines().filter(|l| !l.starts_with("contains: ")) {
        assert!(content[4].contains(line), "depth 4 lacks `{line}`:\n{}", content[4]);
    }
    for d in 5..=8 {
        assert!(
            content[d].starts_with(content[4]) || content[d] == content[9],
            "depth {d} neither extends depth 4 nor is the complete source:\n{}",
            content[d]
        );
    }
    assert!(content[1].contains("contains: method save, method load\n"), "{}", content[1]);
    assert!(!content[1].contains("depends on"), "{}", content[1]);
    assert!(content[2].contains("depends on: inherits pkg/base.py#Base"), "{}", content[2]);
    assert!(content[3].contains("summary: Keeps items in memory.\n"), "{}", content[3]);
    assert!(content[3].contains("- save: Save one item.\n- load: Load every item.\n"), "{}", content[3]);
    assert!(content[4].contains("signature: class Store(Base)\n"), "{}", content[4]);
    assert!(content[4].contains("size: lines 6-17 (12 lines), 2 members\n"), "{}", content[4]);
    assert!(content[4].contains("  def save(self, item)\n  def load(self)\n"), "{}", content[4]);
    assert!(!content[4].contains("```"), "no source before depth 5: {}", content[4]);
    for (d, text) in content.iter().enumerate().take(9).skip(5) {
        assert!(text.contains("```\nclass Store(Base):\n"), "depth {d}: {text}");
    }
    // Depth 9: the title, where the names it uses live, and the whole class,
    // exactly as written (its signature, members and docstring are in it).
    let full = format!("```\n{}\n```\n", store_class());
    assert_eq!(content[9], format!("class Store\ndepends on: pkg/base.py#Base\n{full}"));
    assert!(!content[9].contains("more lines"), "{}", content[9]);

    // The source range slices back to the class text.
    assert_eq!(slice_range(MODELS_PY, shown[9]["source_range"].as_str().unwrap()), store_class());
}

#[test]
fn source_ranges_slice_back_to_the_node_text_in_every_language() {
    let fx = Fixture::new();
    let cases: [(&str, &str, &str); 6] = [
        ("pkg/models.py#Store.save", MODELS_PY, "def save(self, item):"),
        ("pkg/models.py#Store.load", MODELS_PY, "def load(self):"),
        ("pkg/base.py#Base", BASE_PY, "class Base:"),
        ("src/util.rs#helper", UTIL_RS, "pub fn helper() -> u32 {"),
        ("src/lib.rs#run", LIB_RS, "pub fn run() -> u32 {"),
        ("pkg/models.py", MODELS_PY, ""),
    ];
    for (target, file, starts) in cases {
        let v = fx.show(target, "9");
        let range = v["source_range"].as_str().unwrap();
        let text = slice_range(file, range);
        assert!(text.starts_with(starts), "{target} {range}: {text:?}");
        if starts.is_empty() {
            assert_eq!(text, file, "a file node covers the whole file");
        } else {
            // Depth 9 shows the node's lines from the start of its first line.
            let content = v["content"].as_str().unwrap();
            assert!(content.contains(&format!("{text}\n```\n")), "{target}: {content}");
        }
    }
    let save = slice_range(MODELS_PY, fx.show("Store.save", "0")["source_range"].as_str().unwrap());
    assert!(save.ends_with("return len(self.items)") && !save.contains("def load"), "{save:?}");
    let helper = slice_range(UTIL_RS, fx.show("helper", "0")["source_range"].as_str().unwrap());
    assert_eq!(helper, "pub fn helper() -> u32 {\n    21\n}");
}

#[test]
fn named_depths_resolve_to_numbers() {
    let fx = Fixture::new();
    let target = "pkg/models.py#Store";
    assert_eq!(fx.show(target, "SIGNATURES"), fx.show(target, "4"));
    assert_eq!(fx.show(target, "FULL_SOURCE"), fx.show(target, "9"));
    assert_eq!(fx.show(target, "full-source"), fx.show(target, "9"), "names are case- and dash-insensitive");
    // A level of the Python map (uko-py), not of the generic table.
    assert_eq!(fx.show(target, "DOCSTRINGS"), fx.show(target, "3"));
    assert_eq!(fx.show(target, "DOCSTRINGS")["depth"], 3);
    // Text output shows the same depth in its header.
    let text = fx.text(&["show", target, "--depth", "SIGNATURES"]);
    assert!(text.contains(") depth 4, "), "{text}");
    // The default is depth 4.
    assert_eq!(fx.json(&["show", target])[0], fx.show(target, "4"));
}

#[test]
fn unknown_and_out_of_range_depths_are_usage_errors() {
    let fx = Fixture::new();
    let cases: [(&str, &str); 4] = [
        ("BOGUS", "unknown detail level `BOGUS` in domain `uko-py`"),
        ("10", "must be between 0 and 9, got 10"),
        ("-1", "is not a level name"),
        ("", "--depth"),
    ];
    for (depth, message) in cases {
        let out = fx.uko(&["show", "pkg/models.py#Store", &format!("--depth={depth}")]).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains("--depth"), "{depth:?}: {line}");
        assert!(line.contains(message), "{depth:?}: {line}");
    }
}

#[test]
fn show_finds_files_symbol_paths_names_and_uris() {
    let fx = Fixture::new();
    let store = fx.show("pkg/models.py#Store", "0");
    let uri = store["uri"].as_str().unwrap().to_string();
    let resource = uri.strip_prefix("uko://").unwrap().split('/').next().unwrap().to_string();
    assert_eq!(resource.len(), 26, "a ULID: {uri}");

    // (target, uri suffix, kind, depth 0 text)
    let cases: [(&str, &str, &str, &str); 11] = [
        ("Store", "pkg/models.py#Store", "class", "class Store\n"),
        (uri.as_str(), "pkg/models.py#Store", "class", "class Store\n"),
        ("Store.save", "pkg/models.py#Store.save", "method", "method Store.save\n"),
        ("save", "pkg/models.py#Store.save", "method", "method Store.save\n"),
        ("pkg/models.py#Store.load", "pkg/models.py#Store.load", "method", "method Store.load\n"),
        ("pkg/models.py", "pkg/models.py", "module", "module pkg/models.py\n"),
        ("./pkg/models.py", "pkg/models.py", "module", "module pkg/models.py\n"),
        ("Base", "pkg/base.py#Base", "class", "class Base\n"),
        ("helper", "src/util.rs#helper", "function", "function helper\n"),
        ("src/lib.rs", "src/lib.rs", "module", "module src/lib.rs\n"),
        ("README.md", "README.md", "document", "document README.md\n"),
    ];
    for (target, suffix, kind, text) in cases {
        let v = fx.show(target, "0");
        assert_eq!(v["uri"], format!("uko://{resource}/{suffix}"), "{target}");
        assert_eq!(v["kind"], kind, "{target}");
        assert_eq!(v["content"], text, "{target}");
    }

    // Relationships across files and languages, at depth 2.
    let main = fx.show("main", "2");
    // `Store().save(1)`: the constructor call and the method of what it made.
    assert_eq!(main["content"], "function main\ndepends on: calls pkg/models.py#{Store, Store.save}\n");
    // The module imported whole is named by the symbols used from it.
    let app = fx.show("pkg/app.py", "2")["content"].as_str().unwrap().to_string();
    assert!(app.contains("depends on: calls pkg/models.py#{Store, Store.save}\n"), "{app}");
    assert_eq!(fx.show("run", "2")["content"], "function run\ndepends on: calls src/util.rs#helper\n");
    let lib = fx.show("src/lib.rs", "2")["content"].as_str().unwrap().to_string();
    // From depth 2 its imports are in `depends on` alone, resolved to a file
    // (here named by the symbol used from it).
    assert!(lib.contains("contains: function run\n"), "{lib}");
    assert!(lib.contains("depends on: calls src/util.rs#helper\n"), "{lib}");
    let readme = fx.show("README.md", "1")["content"].as_str().unwrap().to_string();
    assert!(readme.contains("contains: section Demo"), "{readme}");
}

#[test]
fn unknown_targets_fail_with_a_clear_message() {
    let fx = Fixture::new();
    for target in ["Nope", "pkg/models.py#Nope", "nope.py", "pkg"] {
        let out = fx.uko(&["show", target]).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains(&format!("no node matches `{target}`")), "{line}");
        assert!(line.contains("give a file path, `path#Symbol`, or a symbol name"), "{line}");
    }
    // A path that does not exist is a usage error.
    let out = agents(&fx.home).args(["uko", "show", "Store", "--path"]).arg(fx.root.join("missing")).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains("no such directory"));
}

// ---------------------------------------------------------------------------
// 2. Text output
// ---------------------------------------------------------------------------

#[test]
fn show_text_output_snapshot() {
    let fx = Fixture::new();
    let out = fx.uko(&["show", "pkg/models.py", "--depth", "2"]).assert().success();
    assert!(stderr(out.get_output()).is_empty(), "no progress or notes when piped");
    let text = stdout(out.get_output());
    with_filters(&fx, || insta::assert_snapshot!("uko_show_models_depth_2", text));
}

#[test]
fn stats_counts_nodes_and_resolved_references_per_language() {
    let fx = Fixture::new();
    let v = fx.json(&["stats"]);
    let nodes = v["nodes"].as_array().unwrap_or_else(|| panic!("nodes: {v:#}"));
    let count = |lang: &str, kind: &str| {
        nodes.iter().find(|n| n[0] == lang && n[1] == kind).map_or(0, |n| n[2].as_u64().unwrap())
    };
    assert_eq!(count("python", "module"), 4, "{v:#}");
    assert_eq!(count("python", "class"), 2, "{v:#}");
    assert_eq!(count("python", "method"), 3, "{v:#}");
    assert_eq!(count("rust", "module"), 2, "{v:#}");
    assert_eq!(count("rust", "function"), 2, "{v:#}");
    assert_eq!(count("markdown", "document"), 1, "{v:#}");
    let mut languages: Vec<&str> = nodes.iter().map(|n| n[0].as_str().unwrap()).collect();
    languages.dedup();
    assert_eq!(languages, ["markdown", "python", "rust"], "{v:#}");

    // refs: [language, kind, total, resolved]
    let refs = v["refs"].as_array().unwrap_or_else(|| panic!("refs: {v:#}"));
    let reference = |lang: &str, kind: &str| {
        let r = refs.iter().find(|r| r[0] == lang && r[1] == kind).unwrap_or_else(|| panic!("{lang} {kind}: {v:#}"));
        (r[2].as_u64().unwrap(), r[3].as_u64().unwrap())
    };
    let (imports, resolved) = reference("python", "import");
    assert!(imports > 0 && resolved > 0, "python imports resolve: {v:#}");
    assert_eq!((imports, resolved), (2, 2), "both relative imports resolve");
    assert_eq!(reference("python", "inherits"), (1, 1));
    assert_eq!(reference("rust", "import"), (1, 1), "`mod util;` resolves to src/util.rs");
    assert_eq!(reference("rust", "calls"), (1, 1), "`util::helper()` resolves");
    let (calls, calls_ok) = reference("python", "calls");
    assert!(calls_ok >= 1 && calls_ok <= calls, "`Store()` resolves: {v:#}");

    let text = fx.text(&["stats"]);
    with_filters(&fx, || insta::assert_snapshot!("uko_stats_text", text));
}

// ---------------------------------------------------------------------------
// 3. History
// ---------------------------------------------------------------------------

#[test]
fn history_lists_revisions_newest_first() {
    let fx = Fixture::new();
    let first = fx.json(&["show", "Store.save", "--history"]);
    let revisions = first[0]["revisions"].as_array().unwrap_or_else(|| panic!("{first:#}"));
    assert_eq!(revisions.len(), 1, "{first:#}");
    assert_eq!(revisions[0]["is_current"], true);
    assert_eq!(revisions[0]["valid_until"], Value::Null);
    assert_eq!(revisions[0]["revision_of"], Value::Null);
    // Without --history there is no `revisions` key.
    assert!(fx.json(&["show", "Store.save"])[0].get("revisions").is_none());

    fx.modify_save();
    let v = fx.json(&["show", "Store.save", "--history", "--depth", "9"]);
    assert!(v[0]["content"].as_str().unwrap().contains("        return count\n"), "the new body: {v:#}");
    assert_eq!(v[0]["source_range"], "9:4-14:20");
    let revisions = v[0]["revisions"].as_array().unwrap_or_else(|| panic!("{v:#}"));
    assert_eq!(revisions.len(), 2, "{v:#}");
    let (new, old) = (&revisions[0], &revisions[1]);
    assert_eq!(old["node_id"], first[0]["revisions"][0]["node_id"], "the oldest revision is the first one");
    assert_eq!(old["valid_from"], first[0]["revisions"][0]["valid_from"]);
    assert_eq!(new["is_current"], true);
    assert_eq!(old["is_current"], false);
    assert_eq!(new["valid_until"], Value::Null, "the current revision is open-ended");
    assert_eq!(old["valid_until"], new["valid_from"], "the old one ends when the new one starts");
    assert_eq!(new["revision_of"], old["node_id"]);
    assert_ne!(new["content_hash"], old["content_hash"]);
    let (old_from, old_until) = (old["valid_from"].as_str().unwrap(), old["valid_until"].as_str().unwrap());
    assert!(instant(old_from) < instant(old_until), "{old_from} < {old_until}");
    assert!(new["node_id"].as_i64().unwrap() > old["node_id"].as_i64().unwrap(), "newest first");
    for rev in revisions {
        assert_eq!(rev["uri"], v[0]["uri"]);
        assert_eq!(rev["symbol_path"], "Store.save");
        assert_eq!(rev["kind"], "method");
    }
    assert_eq!((old["end_line"].as_i64(), new["end_line"].as_i64()), (Some(13), Some(14)));

    // The class changed with it; `load` kept its text (one revision) but
    // its stored range moved down one line and still slices correctly.
    assert_eq!(fx.json(&["show", "Store", "--history"])[0]["revisions"].as_array().unwrap().len(), 2);
    let load = fx.json(&["show", "Store.load", "--history", "--depth", "9"]);
    assert_eq!(load[0]["revisions"].as_array().unwrap().len(), 1, "{load:#}");
    let models = fx.read("pkg/models.py");
    let range = load[0]["source_range"].as_str().unwrap();
    assert_eq!(range, "16:4-18:47");
    assert!(slice_range(&models, range).starts_with("def load(self):"));
    assert!(load[0]["content"].as_str().unwrap().contains("    def load(self):\n"), "{load:#}");

    // Text output: one line per revision, newest first.
    let text = fx.text(&["show", "Store.save", "--history", "--depth", "0"]);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("  revision ")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].ends_with(&format!(" .. now (replaces {})", old["node_id"])), "{text}");
    assert!(lines[1].contains(&format!("valid {old_from} .. {old_until}")), "{text}");
}

// ---------------------------------------------------------------------------
// 4. SPARQL
// ---------------------------------------------------------------------------

#[test]
fn query_select_returns_sparql_results_json() {
    let fx = Fixture::new();
    let methods = "SELECT ?name WHERE { ?m a uko-oo:Method ; uko:name ?name } ORDER BY ?name";
    let v = fx.json(&["query", methods]);
    assert_eq!(v["head"]["vars"], serde_json::json!(["name"]), "{v:#}");
    assert_eq!(bindings(&v, "name"), ["describe", "load", "save"]);

    // Only Store's: node IRIs come back as the original URIs.
    let q = r#"SELECT ?m ?name WHERE { ?c uko:name "Store" ; uko:contains ?m . ?m a uko-oo:Method ; uko:name ?name } ORDER BY ?name"#;
    let v = fx.json(&["query", q]);
    assert_eq!(bindings(&v, "name"), ["load", "save"]);
    let uris = bindings(&v, "m");
    assert!(uris[1].starts_with("uko://") && uris[1].ends_with("/pkg/models.py#Store.save"), "{uris:?}");

    // Edges: the inheritance and the imports.
    let v = fx.json(&["query", "SELECT ?o WHERE { ?s uko:inheritsFrom ?o }"]);
    let bases = bindings(&v, "o");
    assert_eq!(bases.len(), 1);
    assert!(bases[0].ends_with("/pkg/base.py#Base"), "{bases:?}");
    let v = fx.json(&["query", "SELECT ?o WHERE { ?s uko:imports ?o } ORDER BY ?o"]);
    let imported = bindings(&v, "o");
    let mut paths: Vec<&str> = imported
        .iter()
        .map(|u| u.strip_prefix("uko://").and_then(|rest| rest.split_once('/')).unwrap_or_else(|| panic!("{u}")).1)
        .collect();
    paths.sort();
    assert_eq!(paths, ["pkg/base.py", "pkg/models.py", "src/util.rs"]);

    // Text: an aligned table with a row count.
    let text = fx.text(&["query", methods]);
    assert_eq!(text, "name\n--------\ndescribe\nload\nsave\n(3 rows)\n");
}

#[test]
fn query_ask_and_subclass_reasoning() {
    let fx = Fixture::new();
    let v = fx.json(&["query", r#"ASK { ?c a uko-oo:Class ; uko:name "Store" }"#]);
    assert_eq!(v, serde_json::json!({ "head": {}, "boolean": true }));
    let v = fx.json(&["query", r#"ASK { ?c a uko-oo:Class ; uko:name "Nope" }"#]);
    assert_eq!(v["boolean"], false);
    assert_eq!(fx.text(&["query", "ASK { ?m a uko-oo:Method }"]), "true\n");

    // Nodes carry only their own class; the ontology's subclass chain
    // (Method -> Member/Callable) is reached with rdfs:subClassOf*.
    assert_eq!(fx.json(&["query", "ASK { ?m a uko-code:Callable }"])["boolean"], false);
    let q = "SELECT ?name WHERE { ?m a/rdfs:subClassOf* uko-code:Callable ; uko:name ?name } ORDER BY ?name";
    let names = bindings(&fx.json(&["query", q]), "name");
    assert_eq!(names, ["describe", "helper", "load", "main", "run", "save"]);
    let q = "SELECT ?name ?class WHERE { ?m a ?class ; uko:name ?name . ?class rdfs:subClassOf* uko-code:Callable . \
             FILTER(?name IN (\"save\", \"load\", \"helper\")) } ORDER BY ?name";
    let v = fx.json(&["query", q]);
    assert_eq!(bindings(&v, "name"), ["helper", "load", "save"]);
    assert_eq!(bindings(&v, "class"), ["uko-code:Function", "uko-oo:Method", "uko-oo:Method"], "CURIEs");
}

#[test]
fn malformed_sparql_is_a_usage_error_with_a_position() {
    let fx = Fixture::new();
    let cases: [(&str, &str); 3] = [
        ("SELECT ?x\nWHERE { ?x a }", "at line 2, column "),
        ("SELEC ?x", "at line 1, column "),
        ("SELECT ?x WHERE { ?x a undeclared:Foo }", "prefix not found"),
    ];
    for (sparql, message) in cases {
        for json in [false, true] {
            let mut cmd = fx.uko(&["query", sparql]);
            if json {
                cmd.arg("--json");
            }
            let out = cmd.assert().code(2);
            let line = assert_one_error_line(out.get_output());
            assert!(line.starts_with("error: sparql syntax error at line "), "{sparql:?}: {line}");
            assert!(line.contains(message), "{sparql:?}: {line}");
        }
    }
}

// ---------------------------------------------------------------------------
// 5. Turtle export
// ---------------------------------------------------------------------------

#[test]
fn export_writes_deterministic_turtle() {
    let fx = Fixture::new();
    let first = fx.root.join("out.ttl");
    let text = fx.text(&["export", "--format", "ttl", "-o", first.to_str().unwrap()]);
    assert!(text.starts_with("Wrote ") && text.ends_with(&format!(" triples to {}\n", first.display())), "{text}");
    let turtle = std::fs::read_to_string(&first).unwrap();
    for needle in [
        "@prefix uko: <https://cleveragents.ai/ontology/uko#> .",
        "uko:dependsOn",
        "uko:imports",
        "uko:inheritsFrom",
        "uko:calls",
        "uko:contains",
        "uko:sourceRange \"6:0-17:47\"",
        "a uko-oo:Method",
        "a uko-code:Function",
        "a uko-doc:Document",
        "uko:validFrom",
    ] {
        assert!(turtle.contains(needle), "missing {needle:?}:\n{turtle}");
    }
    assert!(!turtle.contains("uko:isRevisionOf"), "no revisions yet");
    assert!(!turtle.contains("owl:Class"), "the ontology is not exported");

    // Same graph, same bytes: to a second file (with --json) and to stdout.
    let second = fx.root.join("again.ttl");
    let v = fx.json(&["export", "--output", second.to_str().unwrap()]);
    assert_eq!(v["path"], second.to_str().unwrap());
    let triples = v["triples"].as_u64().unwrap();
    assert_eq!(text, format!("Wrote {triples} triples to {}\n", first.display()));
    assert_eq!(std::fs::read(&second).unwrap(), turtle.as_bytes(), "export is deterministic");
    let out = fx.uko(&["export"]).assert().success();
    assert_eq!(stdout(out.get_output()), turtle, "stdout export is the file's content");
    assert!(stderr(out.get_output()).is_empty());

    // After a change, the history is exported with the revision chain.
    fx.modify_save();
    let v = fx.json(&["export", "-o", first.to_str().unwrap()]);
    assert!(v["triples"].as_u64().unwrap() > triples, "{v:#}");
    let changed = std::fs::read_to_string(&first).unwrap();
    assert!(changed.contains("uko:isRevisionOf"), "{changed}");
    assert!(changed.contains("#Store.save~rev"), "retired revisions get their own IRI: {changed}");
    assert!(changed.contains("uko:validUntil"), "{changed}");
    assert!(changed.contains("uko:isCurrent false"), "{changed}");
    let again = fx.uko(&["export"]).assert().success();
    assert_eq!(stdout(again.get_output()), changed, "still deterministic with history");
}

#[test]
fn export_and_query_see_the_language_layer_classes() {
    let fx = Fixture::new();
    fx.write(
        "app/Money.kt",
        "package app\n\ndata class Money(val cents: Long)\n\nobject Registry {\n    fun all(): List<Money> = listOf()\n}\n",
    );
    fx.write("app/Bank.swift", "actor Bank {\n    init() {}\n}\n\nextension Bank {\n    func audit() {}\n}\n");
    let turtle = fx.text(&["export"]);
    for needle in [
        "@prefix uko-kt: <https://cleveragents.ai/ontology/uko/kt#> .",
        "a uko-kt:DataClass , uko-oo:Class ;",
        "a uko-kt:Object , uko-oo:Class ;",
        "a uko-oo:Class , uko-swift:Actor ;",
        "a uko-oo:Method , uko-swift:Initializer ;",
        "a uko-oo:Method , uko-swift:ExtensionMethod ;",
    ] {
        assert!(turtle.contains(needle), "missing {needle:?}:\n{turtle}");
    }
    // Queries on the generic classes see the same nodes as before.
    let classes = "SELECT ?name WHERE { ?c a uko-oo:Class ; uko:language ?l ; uko:name ?name \
                   FILTER(?l IN (\"kotlin\", \"swift\")) } ORDER BY ?name";
    assert_eq!(bindings(&fx.json(&["query", classes]), "name"), ["Bank", "Money", "Registry"]);
    let kotlin = "SELECT ?name WHERE { ?c a/rdfs:subClassOf* uko-kt:Object ; uko:name ?name } ORDER BY ?name";
    assert_eq!(bindings(&fx.json(&["query", kotlin]), "name"), ["Registry"]);
    let python = "SELECT ?c WHERE { ?c a ?class ; uko:language \"python\" FILTER(STRSTARTS(STR(?class), \
                  \"https://cleveragents.ai/ontology/uko/kt#\")) }";
    assert!(bindings(&fx.json(&["query", python]), "c").is_empty(), "no language class for Python");

    // Each language's detail-level map names its depths.
    assert_eq!(fx.show("app/Money.kt", "KDOC")["depth"], 3);
    assert_eq!(fx.show("app/Bank.swift", "attributes")["depth"], 5);
}

#[test]
fn export_output_paths() {
    let fx = Fixture::new();
    // Missing parent directories are created; no temporary file is left.
    let nested = fx.root.join("new/deeper/graph.ttl");
    fx.json(&["export", "-o", nested.to_str().unwrap()]);
    assert!(std::fs::read_to_string(&nested).unwrap().contains("uko:sourceRange"));
    let entries: Vec<String> = std::fs::read_dir(nested.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["graph.ttl"]);

    // A relative path is relative to the working directory.
    let out = agents(&fx.home)
        .current_dir(&fx.root)
        .args(["uko", "export", "-o", "rel.ttl", "--path", "repo"])
        .assert()
        .success();
    assert!(stdout(out.get_output()).ends_with(" triples to rel.ttl\n"));
    assert_eq!(std::fs::read(fx.root.join("rel.ttl")).unwrap(), std::fs::read(&nested).unwrap());

    // A directory cannot be overwritten; the message names it.
    let target = fx.root.join("new");
    let out = fx.uko(&["export", "-o", target.to_str().unwrap()]).assert().failure();
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("directory") && line.contains(&format!("cannot write {}", target.display())), "{line}");

    // Only Turtle is offered.
    let out = fx.uko(&["export", "--format", "json"]).assert().code(2);
    assert!(stderr(out.get_output()).contains("possible values: ttl"));
}

// ---------------------------------------------------------------------------
// 6. The ontology and help
// ---------------------------------------------------------------------------

#[test]
fn types_prints_the_class_tree_and_json() {
    let fx = Fixture::new();
    let out = agents(&fx.home).args(["uko", "types"]).assert().success();
    let text = stdout(out.get_output());
    assert!(text.starts_with("uko:InformationUnit — Information unit\n"), "{text}");
    assert!(text.contains("uko-oo:Method — Method"), "{text}");
    assert!(text.contains("(also under "), "multiple parents are marked: {text}");
    assert!(text.contains("(see under "), "{text}");
    assert!(text.contains("uko-code:Callable — Callable"), "{text}");

    let out = agents(&fx.home).args(["uko", "types", "--json"]).assert().success();
    let v = parse(&out.get_output().stdout);
    let classes = v.as_array().unwrap_or_else(|| panic!("an array: {v:#}"));
    assert!(classes.len() > 20, "{}", classes.len());
    let curies: Vec<&str> = classes.iter().map(|c| c["curie"].as_str().unwrap()).collect();
    for c in classes {
        let curie = c["curie"].as_str().unwrap();
        assert!(c["layer"].is_u64(), "{c}");
        assert!(c["label"].is_string() && c["iri"].as_str().unwrap().starts_with("https://"), "{c}");
        let parents = c["parents"].as_array().unwrap_or_else(|| panic!("{c}"));
        for p in parents {
            assert!(curies.contains(&p.as_str().unwrap()), "{curie}: unknown parent {p}");
        }
        if parents.is_empty() {
            assert_eq!(c["layer"], 0, "roots are in the core layer: {c}");
            assert!(text.contains(&format!("\n{curie} — ")) || text.starts_with(curie), "a root of the tree: {curie}");
        }
        assert!(text.contains(&format!("{curie} — ")), "every class is in the tree: {curie}");
    }
    let root = classes.iter().find(|c| c["curie"] == "uko:InformationUnit").unwrap();
    assert_eq!((root["layer"].as_u64(), root["parents"].as_array().map(Vec::len)), (Some(0), Some(0)));
    let method = classes.iter().find(|c| c["curie"] == "uko-oo:Method").unwrap();
    assert!(method["parents"].as_array().unwrap().iter().any(|p| p == "uko-code:Callable"), "{method}");
    assert!(method["layer"].as_u64().unwrap() > 0);
    assert!(!fx.home.join("agents.db").exists(), "types needs no store");
}

#[test]
fn help_works_for_every_uko_command() {
    let fx = Fixture::new();
    for sub in [&[][..], &["show"], &["types"], &["stats"], &["query"], &["export"]] {
        let out = agents(&fx.home).arg("uko").args(sub).arg("--help").assert().success();
        let text = stdout(out.get_output());
        let usage = ["Usage: agents", "uko"].iter().chain(sub.iter()).copied().collect::<Vec<_>>().join(" ");
        assert!(text.contains(&usage), "{sub:?}: {text}");
    }
    // Missing arguments are usage errors.
    for args in [&["uko"][..], &["uko", "show"], &["uko", "query"], &["uko", "frobnicate"]] {
        let out = agents(&fx.home).args(args).assert().code(2);
        assert!(out.get_output().stdout.is_empty(), "{args:?}");
    }
    assert!(!fx.home.join("agents.db").exists(), "help does not create the store");
}

#[test]
fn renamed_imports_bind_and_stay_bound_after_their_module_changes() {
    let fx = Fixture::new();
    fx.write("pkg/kinds.py", "def is_prepared(x):\n    return True\n");
    fx.write(
        "pkg/check.py",
        "from .kinds import is_prepared as _is_prepared\n\n\ndef check(x):\n    return _is_prepared(x)\n",
    );
    let edge = "calls pkg/kinds.py#is_prepared";
    let content = fx.show("pkg/check.py#check", "2")["content"].as_str().unwrap().to_string();
    assert!(content.contains(edge), "{content}");
    // A refresh re-resolves the references into the changed module.
    fx.write("pkg/kinds.py", "def is_prepared(x):\n    return x is not None\n");
    let content = fx.show("pkg/check.py#check", "2")["content"].as_str().unwrap().to_string();
    assert!(content.contains(edge), "after the refresh: {content}");
}
