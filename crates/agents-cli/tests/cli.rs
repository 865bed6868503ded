//! End-to-end tests of the `agents` binary: every test runs the real
//! executable against a temporary `$AGENTS_HOME` and small fixture
//! repositories built in temporary directories.
//!
//! Only [`agents`] knows how the binary is started, so a change to its
//! interface (a renamed variable, a new required flag) is fixed in one place.
//! A few tests open the store directly (through `agents_store`) to set up
//! states the CLI cannot reach on its own, such as an interrupted indexer.
//!
//! The tests use symlinks, flock and non-UTF-8 file names, so they are Unix-only.
#![cfg(unix)]

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use agents_core::indexing::{FileRecord, IndexStatus};
use agents_store::{FileIndexStore, ProjectStore, SqliteStore};
use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

mod common;
use common::{agents, assert_one_error_line, parse, regex_escape, stderr, stdout};

/// A temporary home (created) and a fixture repository directory named
/// `repo` (created, empty), so the project derived from it is always `repo`.
struct Fixture {
    _tmp: TempDir,
    home: PathBuf,
    repo: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let d = common::dirs();
        Fixture { _tmp: d.tmp, home: d.home, repo: d.repo }
    }

    fn cmd(&self) -> Command {
        agents(&self.home)
    }

    fn db(&self) -> PathBuf {
        self.home.join("agents.db")
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        write(&self.repo, rel, content);
    }

    /// Runs `agents ARGS --json`, asserting exit 0, and parses stdout.
    fn json(&self, args: &[&str]) -> Value {
        let out = self.cmd().args(args).arg("--json").assert().success();
        parse(&out.get_output().stdout)
    }

    /// `agents index REPO --json EXTRA...`.
    fn index(&self, extra: &[&str]) -> Value {
        let repo = self.repo.to_str().unwrap();
        let mut args = vec!["index", repo];
        args.extend_from_slice(extra);
        self.json(&args)
    }

    fn project_list(&self) -> Value {
        self.json(&["project", "list"])
    }

    /// The file records of the index of `dir`, read from the store.
    fn stored_files(&self, dir: &Path) -> Vec<FileRecord> {
        let store = SqliteStore::open(&self.db()).unwrap();
        let resource = store.resource_by_path(dir.to_str().unwrap()).unwrap().expect("resource exists");
        let meta = store.index_metadata(&resource.resource_id).unwrap().expect("index exists");
        store.file_records(&meta.index_id).unwrap()
    }

    fn stored_paths(&self, dir: &Path) -> Vec<String> {
        self.stored_files(dir).into_iter().map(|f| f.path).collect()
    }
}

fn write(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

/// The counters of an index report, in a fixed order for compact asserts:
/// (added, changed, removed, unchanged, files_read).
fn counts(v: &Value) -> (u64, u64, u64, u64, u64) {
    let r = &v["report"];
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("report.{k} missing in {v:#}"));
    (n("added"), n("changed"), n("removed"), n("unchanged"), n("files_read"))
}

/// Filters that make output deterministic: the fixture's paths, ULIDs,
/// timestamps, durations, and the trailing spaces of borderless tables.
fn snapshot_filters(fx: &Fixture) -> Vec<(String, String)> {
    vec![
        (regex_escape(fx.repo.to_str().unwrap()), "[REPO]".into()),
        (regex_escape(fx.home.to_str().unwrap()), "[HOME]".into()),
        (r"\b[0-9A-HJKMNP-TV-Z]{26}\b".into(), "[ULID]".into()),
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z".into(), "[TIMESTAMP]".into()),
        (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC".into(), "[DATETIME]".into()),
        (r"\b\d+\.\d{2} s\b".into(), "[SECONDS] s".into()),
        (r#""duration_ms": \d+"#.into(), r#""duration_ms": "[MS]""#.into()),
        (r#""search_ms": \d+"#.into(), r#""search_ms": "[MS]""#.into()),
        (r"(?m)[ \t]+$".into(), String::new()),
    ]
}

fn with_filters(fx: &Fixture, f: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    for (regex, replacement) in snapshot_filters(fx) {
        settings.add_filter(&regex, replacement);
    }
    settings.bind(f);
}

/// The standard mixed fixture. Indexed: 6 files (3 Python, 1 Rust,
/// 1 Markdown, 1 Latin-1 text); skipped: one binary and one dangling symlink;
/// invisible: a gitignored file, a gitignored directory and the dotfile.
fn mixed_repo(fx: &Fixture) {
    fx.write(
        "app.py",
        "import sys\n\n\ndef main(argv):\n    \"\"\"Entry point.\"\"\"\n    for arg in argv:\n        print(arg.upper())\n    return 0\n\n\nif __name__ == \"__main__\":\n    sys.exit(main(sys.argv[1:]))\n",
    );
    fx.write("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
    fx.write("src/nested/deep/util.py", "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n");
    fx.write("src/nested/helpers.py", "VALUE = 42\n");
    fx.write("README.md", "# Demo\n\nA small fixture repository.\n");
    fx.write("assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x10");
    fx.write("latin1.txt", b"caf\xe9 cr\xe8me br\xfbl\xe9e\n");
    fx.write(".gitignore", "build/\n*.log\n");
    fx.write("debug.log", "ignored log line\n");
    fx.write("build/generated.py", "GENERATED = True\n");
    std::os::unix::fs::symlink("does-not-exist.txt", fx.repo.join("dangling.txt")).unwrap();
}

const MIXED_INDEXED: [&str; 6] =
    ["README.md", "app.py", "latin1.txt", "src/lib.rs", "src/nested/deep/util.py", "src/nested/helpers.py"];

/// A text-only fixture (no binaries, no symlinks), for exact read counts.
fn text_repo(fx: &Fixture) {
    fx.write("a.py", "a = 1\n");
    fx.write("b.py", "b = 2\n");
    fx.write("pkg/c.rs", "fn c() {}\n");
    fx.write("pkg/sub/d.md", "# d\n");
}

// ---------------------------------------------------------------------------
// 1. index: first run, refresh, change, delete, --full
// ---------------------------------------------------------------------------

#[test]
fn first_index_counts_files_languages_and_skips() {
    let fx = Fixture::new();
    mixed_repo(&fx);
    let v = fx.index(&[]);

    assert_eq!(v["project"], "repo");
    assert_eq!(v["path"], fx.repo.to_str().unwrap());
    assert_eq!(v["new_resource"], true);
    assert_eq!(v["index"]["status"], "ready");
    assert_eq!(v["index"]["error_message"], Value::Null);
    assert_eq!(v["index"]["file_count"], 6);
    assert_eq!(v["index"]["primary_language"], "python");
    assert_eq!(counts(&v), (6, 0, 0, 0, 7), "6 text files and the binary are read");
    assert_eq!(v["report"]["skipped"], serde_json::json!({"binary": 1, "broken_symlink": 1}));
    assert_eq!(v["report"]["skipped_examples"]["binary"], serde_json::json!(["assets/logo.png"]));
    assert_eq!(v["report"]["skipped_examples"]["broken_symlink"], serde_json::json!(["dangling.txt"]));

    let langs = v["languages"].as_object().unwrap();
    let files: Vec<(&str, u64)> = langs.iter().map(|(k, s)| (k.as_str(), s["files"].as_u64().unwrap())).collect();
    assert_eq!(files, [("markdown", 1), ("python", 3), ("rust", 1), ("text", 1)]);
    let token_sum: u64 = langs.values().map(|s| s["tokens"].as_u64().unwrap()).sum();
    assert_eq!(v["index"]["token_estimate"], token_sum);
    assert!(token_sum > 0);

    // The store holds exactly the text files: no binary, no ignored files.
    assert_eq!(fx.stored_paths(&fx.repo), MIXED_INDEXED);
    // And the ids are ULIDs.
    for id in [&v["resource_id"], &v["index"]["index_id"], &v["index"]["resource_id"]] {
        let id = id.as_str().unwrap();
        assert_eq!(id.len(), 26, "{id}");
        assert!(id.chars().all(|c| c.is_ascii_digit() || (c.is_ascii_uppercase() && !"ILOU".contains(c))), "{id}");
    }
    assert_eq!(v["index"]["resource_id"], v["resource_id"]);

    // A second run changes nothing and reads nothing, not even the binary.
    let again = fx.index(&[]);
    assert_eq!(again["new_resource"], false);
    assert_eq!(counts(&again), (0, 0, 0, 6, 0));
    assert_eq!(again["report"]["bytes_read"], 0);
    assert_eq!(again["report"]["skipped"], v["report"]["skipped"]);
    assert_eq!(again["index"]["index_id"], v["index"]["index_id"]);
    assert_eq!(again["resource_id"], v["resource_id"]);
    assert_eq!(again["index"]["token_estimate"], v["index"]["token_estimate"]);
}

#[test]
fn refresh_reads_only_what_changed_and_full_rereads_everything() {
    let fx = Fixture::new();
    text_repo(&fx);
    let first = fx.index(&[]);
    assert_eq!(counts(&first), (4, 0, 0, 0, 4));
    assert_eq!(first["index"]["file_count"], 4);

    let unchanged = fx.index(&[]);
    assert_eq!(counts(&unchanged), (0, 0, 0, 4, 0), "a refresh with no changes reads nothing");

    // A different size guarantees the change is seen whatever the mtime resolution.
    fx.write("pkg/c.rs", "fn c() -> u32 { 42 }\n");
    let changed = fx.index(&[]);
    assert_eq!(counts(&changed), (0, 1, 0, 3, 1));
    assert_eq!(changed["index"]["file_count"], 4);

    std::fs::remove_file(fx.repo.join("b.py")).unwrap();
    let removed = fx.index(&[]);
    assert_eq!(counts(&removed), (0, 0, 1, 3, 0));
    assert_eq!(removed["index"]["file_count"], 3);
    assert_eq!(fx.stored_paths(&fx.repo), ["a.py", "pkg/c.rs", "pkg/sub/d.md"]);

    fx.write("new.py", "n = 3\n");
    let added = fx.index(&[]);
    assert_eq!(counts(&added), (1, 0, 0, 3, 1));

    let full = fx.index(&["--full"]);
    assert_eq!(counts(&full), (0, 0, 0, 4, 4), "--full reads every file but finds nothing changed");
    assert_eq!(full["index"]["status"], "ready");
    assert_eq!(full["index"]["file_count"], 4);
}

#[test]
fn index_defaults_to_the_current_directory_and_refreshes_from_a_subdirectory() {
    let fx = Fixture::new();
    text_repo(&fx);
    let out = fx.cmd().current_dir(&fx.repo).args(["index", "--json"]).assert().success();
    let v = parse(&out.get_output().stdout);
    assert_eq!(v["path"], fx.repo.to_str().unwrap());
    assert_eq!(v["new_resource"], true);

    // Indexing a directory inside the resource refreshes the resource itself.
    let out = fx.cmd().current_dir(fx.repo.join("pkg/sub")).args(["index", "--json"]).assert().success();
    let v2 = parse(&out.get_output().stdout);
    assert_eq!(v2["resource_id"], v["resource_id"]);
    assert_eq!(v2["new_resource"], false);
    assert_eq!(counts(&v2), (0, 0, 0, 4, 0));
    assert_eq!(fx.project_list().as_array().unwrap().len(), 1);
}

#[test]
fn index_filters_from_flags() {
    let fx = Fixture::new();
    text_repo(&fx);
    fx.write("big.py", "x = 1\n".repeat(100));
    let v = fx.index(&["--exclude", "pkg/**", "--max-file-size", "100"]);
    assert_eq!(v["index"]["file_count"], 2);
    assert_eq!(v["report"]["skipped"], serde_json::json!({"excluded": 2, "too_large": 1}));
    assert_eq!(fx.stored_paths(&fx.repo), ["a.py", "b.py"]);

    let v = fx.index(&["--include", "**/*.md"]);
    assert_eq!(v["index"]["file_count"], 1);
    assert_eq!(counts(&v), (1, 0, 2, 0, 1), "a.py and b.py leave, d.md arrives");
    assert_eq!(fx.stored_paths(&fx.repo), ["pkg/sub/d.md"]);

    fx.write(".hidden/e.py", "e = 5\n");
    let v = fx.index(&["--hidden"]);
    assert!(fx.stored_paths(&fx.repo).contains(&".hidden/e.py".to_string()), "{v:#}");
}

// ---------------------------------------------------------------------------
// 2 and 3. Text output (snapshots) and status
// ---------------------------------------------------------------------------

#[test]
fn index_text_output_snapshot() {
    let fx = Fixture::new();
    mixed_repo(&fx);
    let out = fx.cmd().arg("index").arg(&fx.repo).assert().success();
    let text = stdout(out.get_output());
    assert!(stderr(out.get_output()).is_empty(), "no progress or notes when piped");
    with_filters(&fx, || insta::assert_snapshot!("index_first_run_text", text));

    // The refresh line says "Refreshed" and the time line is still filtered.
    let out = fx.cmd().arg("index").arg(&fx.repo).assert().success();
    let text = stdout(out.get_output());
    assert!(text.starts_with(&format!("Refreshed {} (project repo, resource ", fx.repo.display())), "{text}");
    assert!(text.contains("0 added, 0 changed, 0 removed, 6 unchanged"), "{text}");
}

#[test]
fn index_json_output_snapshot() {
    let fx = Fixture::new();
    mixed_repo(&fx);
    let v = fx.index(&[]);
    with_filters(&fx, || insta::assert_json_snapshot!("index_first_run_json", v));
}

#[test]
fn status_after_indexing() {
    let fx = Fixture::new();
    mixed_repo(&fx);
    let indexed = fx.index(&[]);

    let out = fx.cmd().arg("status").arg(&fx.repo).assert().success();
    let text = stdout(out.get_output());
    with_filters(&fx, || insta::assert_snapshot!("status_text", text));

    let v = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(v["project"], serde_json::json!(["repo"]));
    assert_eq!(v["resource_id"], indexed["resource_id"]);
    assert_eq!(v["path"], fx.repo.to_str().unwrap());
    assert_eq!(v["index"], indexed["index"], "status shows the row the run committed");
    assert_eq!(v["report"]["added"], 6);
    assert_eq!(v["report"]["skipped"], indexed["report"]["skipped"]);

    // From a subdirectory, with the default path.
    let out = fx.cmd().current_dir(fx.repo.join("src/nested")).args(["status", "--json"]).assert().success();
    assert_eq!(parse(&out.get_output().stdout)["resource_id"], indexed["resource_id"]);
}

#[test]
fn status_outside_any_resource_is_a_usage_error() {
    let fx = Fixture::new();
    let out = fx.cmd().arg("status").arg(&fx.repo).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains(fx.repo.to_str().unwrap()), "{line}");
    assert!(line.contains("not inside an indexed resource"), "{line}");
    assert!(out.get_output().stdout.is_empty());

    let out = fx.cmd().args(["status", "/definitely/not/here"]).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains("no such directory"));
}

// ---------------------------------------------------------------------------
// 4. Projects and resources
// ---------------------------------------------------------------------------

#[test]
fn project_create_list_and_errors() {
    let fx = Fixture::new();
    assert_eq!(fx.project_list(), serde_json::json!([]));
    fx.cmd().args(["project", "list"]).assert().success().stdout(predicate::str::contains("No projects yet"));

    let out = fx.cmd().args(["project", "create", "demo"]).assert().success();
    let text = stdout(out.get_output());
    assert!(text.starts_with("Created project demo ("), "{text}");

    let created = fx.json(&["project", "create", "other.proj_2"]);
    assert_eq!(created["name"], "other.proj_2");
    assert_eq!(created["project_id"].as_str().unwrap().len(), 26);

    // Duplicate: refused with a clear message, nothing created.
    let out = fx.cmd().args(["project", "create", "demo"]).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("project `demo` already exists"), "{line}");

    for bad in ["a b", "-dash", "sl/ash", ""] {
        let out = fx.cmd().args(["project", "create", "--", bad]).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains("invalid project name"), "{bad}: {line}");
    }

    let list = fx.project_list();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["demo", "other.proj_2"]);
    assert!(list.as_array().unwrap().iter().all(|p| p["resources"] == serde_json::json!([])));
    assert_eq!(list[1]["project_id"], created["project_id"]);
}

#[test]
fn link_and_unlink_resources() {
    let fx = Fixture::new();
    text_repo(&fx);
    fx.cmd().args(["project", "create", "demo"]).assert().success();
    fx.cmd().args(["project", "create", "second"]).assert().success();

    // Linking indexes.
    let linked = fx.json(&["project", "link-resource", "demo", fx.repo.to_str().unwrap()]);
    assert_eq!(linked["project"], "demo");
    assert_eq!(linked["new_resource"], true);
    assert_eq!(linked["path"], fx.repo.to_str().unwrap());
    assert_eq!(linked["index"]["status"], "ready");
    assert_eq!(linked["index"]["file_count"], 4);
    assert_eq!(counts(&linked), (4, 0, 0, 0, 4));
    let rid = linked["resource_id"].as_str().unwrap().to_string();

    // Linking the same directory to a second project shares the resource.
    let shared = fx.json(&["project", "link-resource", "second", fx.repo.to_str().unwrap()]);
    assert_eq!(shared["resource_id"], rid.as_str());
    assert_eq!(shared["new_resource"], false);
    assert_eq!(counts(&shared), (0, 0, 0, 4, 0));

    let list = fx.project_list();
    for p in list.as_array().unwrap() {
        assert_eq!(p["resources"][0]["resource_id"], rid.as_str(), "{p:#}");
        assert_eq!(p["resources"][0]["path"], fx.repo.to_str().unwrap());
        assert_eq!(p["resources"][0]["name"], "repo");
    }
    let status = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(status["project"], serde_json::json!(["demo", "second"]));

    // Unlink by path from one project: the resource survives for the other.
    let out = fx.cmd().args(["project", "unlink-resource", "demo"]).arg(&fx.repo).assert().success();
    assert_eq!(stdout(out.get_output()).trim(), format!("Unlinked {} from project demo", fx.repo.display()));
    let status = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(status["project"], serde_json::json!(["second"]));
    assert_eq!(status["index"]["file_count"], 4);

    // Unlinking again: not linked any more.
    let out = fx.cmd().args(["project", "unlink-resource", "demo"]).arg(&fx.repo).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains("is not linked to project `demo`"));

    // Unlink by id from the last project: the resource and its index are gone.
    let removed = fx.json(&["project", "unlink-resource", "second", &rid]);
    assert_eq!(removed["resource_id"], rid.as_str());
    assert_eq!(removed["path"], fx.repo.to_str().unwrap());
    fx.cmd().arg("status").arg(&fx.repo).assert().code(2);
    let list = fx.project_list();
    assert!(list.as_array().unwrap().iter().all(|p| p["resources"] == serde_json::json!([])), "{list:#}");
}

#[test]
fn unknown_project_and_bad_paths_are_usage_errors() {
    let fx = Fixture::new();
    text_repo(&fx);
    let repo = fx.repo.to_str().unwrap();
    for args in [["project", "link-resource", "nope", repo], ["project", "unlink-resource", "nope", repo]] {
        let out = fx.cmd().args(args).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains("project `nope` not found"), "{line}");
    }
    fx.cmd().args(["project", "create", "demo"]).assert().success();
    let missing = fx.repo.join("missing");
    let out = fx.cmd().args(["project", "link-resource", "demo"]).arg(&missing).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains("no such directory"));
    let out = fx.cmd().args(["project", "link-resource", "demo"]).arg(fx.repo.join("a.py")).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains("not a directory"));
    assert_eq!(fx.project_list()[0]["resources"], serde_json::json!([]));
}

// ---------------------------------------------------------------------------
// 5. Configuration
// ---------------------------------------------------------------------------

fn config_entries(v: &Value) -> Vec<(String, Value, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (e["key"].as_str().unwrap().to_string(), e["value"].clone(), e["source"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn config_show_defaults_and_file_sources() {
    let fx = Fixture::new();
    let entries = config_entries(&fx.json(&["config", "show"]));
    assert!(entries.len() > 20, "{entries:?}");
    assert!(entries.iter().all(|(_, _, source)| source == "default"), "{entries:?}");
    let keys: Vec<&str> = entries.iter().map(|(k, _, _)| k.as_str()).collect();
    for key in ["context.hot.max-tokens", "index.hidden", "index.exclude", "tokenizer.encoding"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    let hot = entries.iter().find(|(k, _, _)| k == "context.hot.max-tokens").unwrap();
    assert_eq!(hot.1, 16000);

    // The text form is a table with the same keys.
    fx.cmd()
        .args(["config", "show"])
        .assert()
        .success()
        .stdout(predicate::str::contains("context.hot.max-tokens").and(predicate::str::contains("default")));

    // A config.toml in the home: its key names the file as source.
    let file = fx.home.join("config.toml");
    std::fs::write(&file, "[context.hot]\nmax-tokens = 32000\n").unwrap();
    let entries = config_entries(&fx.json(&["config", "show"]));
    let hot = entries.iter().find(|(k, _, _)| k == "context.hot.max-tokens").unwrap();
    assert_eq!(hot.1, 32000);
    assert_eq!(hot.2, file.to_str().unwrap());
    let from_file: Vec<&str> = entries.iter().filter(|(_, _, s)| s != "default").map(|(k, _, _)| k.as_str()).collect();
    assert_eq!(from_file, ["context.hot.max-tokens"]);

    let path = fx.json(&["config", "path"]);
    assert_eq!(path["path"], file.to_str().unwrap());
    assert_eq!(path["exists"], true);
    assert_eq!(path["home"], fx.home.to_str().unwrap());

    // --config replaces the home's file.
    let other = fx.home.join("other.toml");
    std::fs::write(&other, "[index]\nhidden = true\n").unwrap();
    let out = fx.cmd().args(["config", "show", "--json", "--config"]).arg(&other).assert().success();
    let entries = config_entries(&parse(&out.get_output().stdout));
    let hidden = entries.iter().find(|(k, _, _)| k == "index.hidden").unwrap();
    assert_eq!((&hidden.1, hidden.2.as_str()), (&Value::Bool(true), other.to_str().unwrap()));
    let hot = entries.iter().find(|(k, _, _)| k == "context.hot.max-tokens").unwrap();
    assert_eq!((&hot.1, hot.2.as_str()), (&serde_json::json!(16000), "default"));
}

#[test]
fn config_path_before_init() {
    let fx = Fixture::new();
    let v = fx.json(&["config", "path"]);
    assert_eq!(v["path"], fx.home.join("config.toml").to_str().unwrap());
    assert_eq!(v["exists"], false);
    fx.cmd().args(["config", "path"]).assert().success().stdout(predicate::str::contains("agents config init"));
}

#[test]
fn config_init_writes_a_parsable_file_and_refuses_to_overwrite() {
    let fx = Fixture::new();
    let file = fx.home.join("config.toml");
    let v = fx.json(&["config", "init"]);
    assert_eq!(v["path"], file.to_str().unwrap());
    assert_eq!(v["exists"], true);
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(!written.is_empty());

    // The written file parses: show works and reports the same values as the defaults.
    let entries = config_entries(&fx.json(&["config", "show"]));
    let defaults = {
        let empty = tempfile::tempdir().unwrap();
        let out = agents(empty.path()).args(["config", "show", "--json"]).assert().success();
        config_entries(&parse(&out.get_output().stdout))
    };
    let values = |e: &[(String, Value, String)]| e.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect::<Vec<_>>();
    assert_eq!(values(&entries), values(&defaults), "the default file sets the default values");
    // And other commands accept it.
    fx.cmd().args(["project", "list"]).assert().success();

    // A second init refuses and leaves the (edited) file alone.
    let edited = format!("{written}\n# my edit\n");
    std::fs::write(&file, &edited).unwrap();
    let out = fx.cmd().args(["config", "init"]).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("already exists") && line.contains("--force"), "{line}");
    assert!(line.contains(file.to_str().unwrap()), "{line}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);

    // --force overwrites with the default again.
    fx.cmd().args(["config", "init", "--force"]).assert().success();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
}

#[test]
fn broken_configuration_is_a_usage_error_naming_key_file_and_line() {
    let fx = Fixture::new();
    let file = fx.home.join("config.toml");
    let path = file.to_str().unwrap();

    std::fs::write(&file, "[context.hot]\nmax-tokns = 32000\n").unwrap();
    // Every command reads the configuration first.
    for args in [&["config", "show"][..], &["project", "list"], &["index", "."]] {
        let out = fx.cmd().args(args).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains("max-tokns"), "{args:?}: {line}");
        assert!(line.contains(&format!("{path}:2:")), "{args:?}: the file and line 2 are named: {line}");
    }
    assert!(!fx.db().exists(), "nothing was created in the home");

    std::fs::write(&file, "[context.hot]\nmax-tokens = \"many\"\n").unwrap();
    let out = fx.cmd().args(["config", "show"]).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("context.hot.max-tokens"), "{line}");
    assert!(line.contains(path), "{line}");

    std::fs::write(&file, "this is = = not toml\n").unwrap();
    let out = fx.cmd().args(["config", "show"]).assert().code(2);
    assert!(assert_one_error_line(out.get_output()).contains(path));

    std::fs::remove_file(&file).unwrap();
    let missing = fx.home.join("missing.toml");
    let out = fx.cmd().args(["config", "show", "--config"]).arg(&missing).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains(missing.to_str().unwrap()), "{line}");
}

// ---------------------------------------------------------------------------
// 6. Bad input to index
// ---------------------------------------------------------------------------

#[test]
fn index_bad_paths_are_usage_errors_that_change_nothing() {
    let fx = Fixture::new();
    text_repo(&fx);

    let missing = fx.repo.join("no-such-dir");
    let out = fx.cmd().arg("index").arg(&missing).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains(missing.to_str().unwrap()) && line.contains("no such directory"), "{line}");
    assert!(out.get_output().stdout.is_empty());

    let file = fx.repo.join("a.py");
    let out = fx.cmd().arg("index").arg(&file).assert().code(2);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("not a directory"), "{line}");

    // --json does not turn errors into JSON on stdout.
    let out = fx.cmd().arg("index").arg(&missing).arg("--json").assert().code(2);
    assert!(out.get_output().stdout.is_empty());
    assert_one_error_line(out.get_output());

    assert_eq!(fx.project_list(), serde_json::json!([]), "no project was created");
}

#[test]
fn index_bad_glob_is_a_usage_error() {
    let fx = Fixture::new();
    text_repo(&fx);
    let repo = fx.repo.to_str().unwrap();

    for (flag, glob) in [("--exclude", "a["), ("--include", "{a,b")] {
        let out = fx.cmd().args(["index", repo, flag, glob]).assert().code(2);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains(&format!("invalid glob `{glob}`")), "{line}");
    }
    // Nothing was written: no project, no resource, no index.
    assert_eq!(fx.project_list(), serde_json::json!([]));
}

#[test]
fn index_bad_glob_leaves_an_existing_index_untouched() {
    let fx = Fixture::new();
    text_repo(&fx);
    fx.index(&[]);
    let repo = fx.repo.to_str().unwrap();
    let status_before = fx.json(&["status", repo]);
    let projects_before = fx.project_list();
    let files_before = fx.stored_files(&fx.repo);

    fx.write("a.py", "a = 'changed, but the run must not happen'\n");
    let out = fx.cmd().args(["index", repo, "--exclude", "a["]).assert().code(2);
    assert_one_error_line(out.get_output());

    assert_eq!(fx.json(&["status", repo]), status_before);
    assert_eq!(fx.project_list(), projects_before);
    assert_eq!(fx.stored_files(&fx.repo), files_before);
}

// ---------------------------------------------------------------------------
// 7. Corrupted database
// ---------------------------------------------------------------------------

#[test]
fn corrupted_database_is_reported_and_left_untouched() {
    let fx = Fixture::new();
    text_repo(&fx);
    let garbage: Vec<u8> = (0..8192u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    std::fs::write(fx.db(), &garbage).unwrap();

    for args in
        [&["index", fx.repo.to_str().unwrap()][..], &["status", fx.repo.to_str().unwrap()], &["project", "list"]]
    {
        let out = fx.cmd().args(args).assert().code(1);
        let line = assert_one_error_line(out.get_output());
        assert!(line.contains(fx.db().to_str().unwrap()), "{args:?}: names the database: {line}");
        assert!(line.contains("not a valid agents database"), "{args:?}: {line}");
        assert!(out.get_output().stdout.is_empty());
    }
    assert_eq!(std::fs::read(fx.db()).unwrap(), garbage, "the file is byte-identical");
    let mut names: Vec<String> =
        std::fs::read_dir(&fx.home).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["agents.db"], "no journal, WAL or lock files were created");

    // Configuration commands do not need the store.
    fx.cmd().args(["config", "show"]).assert().success();
}

// ---------------------------------------------------------------------------
// 8. Interrupted indexer
// ---------------------------------------------------------------------------

fn set_status_indexing(fx: &Fixture, resource_id: &str) -> String {
    let store = SqliteStore::open(&fx.db()).unwrap();
    let meta = store.index_metadata(resource_id).unwrap().unwrap();
    store.set_index_status(&meta.index_id, IndexStatus::Indexing, None).unwrap();
    meta.index_id
}

#[test]
fn interrupted_indexer_is_repaired_to_stale_then_reindexed() {
    let fx = Fixture::new();
    mixed_repo(&fx);
    let indexed = fx.index(&[]);
    let rid = indexed["resource_id"].as_str().unwrap();
    let files_before = fx.stored_files(&fx.repo);

    // A killed indexer leaves its row `indexing` and holds no lock.
    set_status_indexing(&fx, rid);

    // Any command that opens the store repairs it at start-up.
    let status = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(status["index"]["status"], "stale");
    let message = status["index"]["error_message"].as_str().unwrap();
    assert!(message.contains("interrupted"), "{message}");
    assert_eq!(status["index"]["file_count"], 6, "the previous index is intact");
    assert_eq!(fx.stored_files(&fx.repo), files_before);

    // In text mode the repair is announced on stderr.
    set_status_indexing(&fx, rid);
    let out = fx.cmd().arg("status").arg(&fx.repo).assert().success();
    let err = stderr(out.get_output());
    assert!(err.contains("repaired 1 index(es)"), "{err}");
    let text = stdout(out.get_output());
    assert!(text.contains("  status     stale\n"), "{text}");
    assert!(text.contains("  message    interrupted"), "{text}");
    // Repaired once: the next command has nothing to repair.
    let out = fx.cmd().arg("status").arg(&fx.repo).assert().success();
    assert!(stderr(out.get_output()).is_empty());

    // The next index run brings it back to ready, with the same files.
    let v = fx.index(&[]);
    assert_eq!(v["index"]["status"], "ready");
    assert_eq!(v["index"]["error_message"], Value::Null);
    assert_eq!(v["index"]["file_count"], 6);
    let (added, changed, removed, unchanged, _) = counts(&v);
    assert_eq!((added, changed, removed, unchanged), (0, 0, 0, 6));
    assert_eq!(fx.stored_files(&fx.repo), files_before);
    assert_eq!(fx.json(&["status", fx.repo.to_str().unwrap()])["index"]["status"], "ready");
}

#[test]
fn live_indexer_lock_is_respected() {
    let fx = Fixture::new();
    text_repo(&fx);
    let indexed = fx.index(&[]);
    let rid = indexed["resource_id"].as_str().unwrap();

    // Pretend to be a live indexer: hold the resource's lock and mark the row.
    let lock_path = fx.home.join("locks").join(format!("{rid}.lock"));
    let lock = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&lock_path);
    let lock = lock.unwrap();
    lock.try_lock().unwrap();
    std::fs::write(&lock_path, std::process::id().to_string()).unwrap();
    set_status_indexing(&fx, rid);

    // Start-up cleanup leaves a live indexer's row alone.
    let status = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(status["index"]["status"], "indexing");

    // A second indexer is refused (exit 1), naming the holder.
    let out = fx.cmd().arg("index").arg(&fx.repo).assert().code(1);
    let line = assert_one_error_line(out.get_output());
    assert!(line.contains("another indexer is already running"), "{line}");
    assert!(line.contains(&format!("(pid {})", std::process::id())), "{line}");
    assert!(line.contains("--wait"), "{line}");

    // Once the holder is gone, the row is repaired and indexing works.
    drop(lock);
    let v = fx.index(&[]);
    assert_eq!(v["index"]["status"], "ready");
    assert_eq!(counts(&v), (0, 0, 0, 4, 0));
}

// ---------------------------------------------------------------------------
// 9. Concurrent indexers
// ---------------------------------------------------------------------------

const MANY_FILES: u64 = 3000;

/// A repository of `MANY_FILES` small files in 30 directories and an empty
/// home: both indexers race to create the database, the project, the
/// resource and the first index.
fn many_files_fixture() -> Fixture {
    let fx = Fixture::new();
    for i in 0..MANY_FILES {
        fx.write(&format!("d{:02}/f{i:04}.py", i % 30), format!("value_{i} = {i}\n"));
    }
    fx
}

/// Starts two `agents index` processes at once and waits for both.
fn run_two_indexers(fx: &Fixture, extra: &[&str]) -> [Output; 2] {
    let spawn = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agents"));
        cmd.env("AGENTS_HOME", &fx.home)
            .env_remove("AGENTS_LOG")
            .current_dir(&fx.home)
            .arg("index")
            .arg(&fx.repo)
            .arg("--json")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap()
    };
    let (a, b) = (spawn(), spawn());
    [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()]
}

fn assert_full_and_ready(fx: &Fixture) {
    let status = fx.json(&["status", fx.repo.to_str().unwrap()]);
    assert_eq!(status["index"]["status"], "ready", "{status:#}");
    assert_eq!(status["index"]["file_count"], MANY_FILES);
    assert_eq!(fx.stored_files(&fx.repo).len() as u64, MANY_FILES);
}

#[test]
fn concurrent_indexers_one_wins_the_other_is_refused_cleanly() {
    let fx = many_files_fixture();
    let outputs = run_two_indexers(&fx, &[]);
    let mut winners = 0;
    for out in &outputs {
        match out.status.code() {
            Some(0) => {
                winners += 1;
                let v = parse(&out.stdout);
                assert_eq!(v["index"]["status"], "ready");
                assert_eq!(v["index"]["file_count"], MANY_FILES);
            }
            code => {
                let err = stderr(out);
                assert_eq!(code, Some(1), "{err}");
                assert!(err.contains("another indexer is already running"), "unexpected failure: {err}");
                assert!(out.stdout.is_empty());
            }
        }
    }
    assert!(winners >= 1, "at least one indexer succeeds");
    assert_full_and_ready(&fx);
}

#[test]
fn concurrent_indexers_with_wait_both_succeed() {
    let fx = many_files_fixture();
    let outputs = run_two_indexers(&fx, &["--wait"]);
    for out in &outputs {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        let v = parse(&out.stdout);
        assert_eq!(v["index"]["status"], "ready");
        assert_eq!(v["index"]["file_count"], MANY_FILES);
    }
    // Between them, each file was added exactly once.
    let added: u64 = outputs.iter().map(|o| parse(&o.stdout)["report"]["added"].as_u64().unwrap()).sum();
    assert_eq!(added, MANY_FILES);
    assert_full_and_ready(&fx);

    // Again with every file re-read (--full), on an existing index.
    let outputs = run_two_indexers(&fx, &["--wait", "--full"]);
    for out in &outputs {
        assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
        assert_eq!(counts(&parse(&out.stdout)), (0, 0, 0, MANY_FILES, MANY_FILES));
    }
    assert_full_and_ready(&fx);
}

// ---------------------------------------------------------------------------
// 10. Help and usage errors
// ---------------------------------------------------------------------------

#[test]
fn help_works_for_every_command() {
    let fx = Fixture::new();
    let commands: &[&[&str]] = &[
        &[],
        &["index"],
        &["status"],
        &["project"],
        &["project", "create"],
        &["project", "list"],
        &["project", "link-resource"],
        &["project", "unlink-resource"],
        &["project", "context"],
        &["project", "context", "set"],
        &["project", "context", "show"],
        &["config"],
        &["config", "show"],
        &["config", "path"],
        &["config", "init"],
    ];
    for command in commands {
        let out = fx.cmd().args(*command).arg("--help").assert().success();
        let text = stdout(out.get_output());
        let usage = ["Usage: agents"].iter().chain(command.iter()).copied().collect::<Vec<_>>().join(" ");
        assert!(text.contains(&usage), "{command:?}: {text}");
        assert!(stderr(out.get_output()).is_empty());
        // `help SUBCOMMAND` prints the same.
        fx.cmd().arg("help").args(*command).assert().success().stdout(text);
    }
    fx.cmd().arg("-h").assert().success().stdout(predicate::str::contains("Commands:"));
    fx.cmd().arg("--version").assert().success().stdout(predicate::str::starts_with("agents "));
    assert!(!fx.db().exists(), "help does not create the store");
}

#[test]
fn usage_errors_exit_2() {
    let fx = Fixture::new();
    let cases: &[&[&str]] = &[
        &["frobnicate"],
        &[],
        &["project"],
        &["project", "frobnicate"],
        &["project", "create"],
        &["config", "frobnicate"],
        &["index", "--no-such-flag"],
        &["index", "--max-file-size", "lots"],
        &["index", "a", "b"],
    ];
    for args in cases {
        let out = fx.cmd().args(*args).assert().code(2);
        let err = stderr(out.get_output());
        assert!(err.contains("Usage:") || err.contains("error:"), "{args:?}: {err}");
        assert!(out.get_output().stdout.is_empty(), "{args:?}");
    }
    let out = fx.cmd().arg("frobnicate").assert().code(2);
    assert!(stderr(out.get_output()).contains("unrecognized subcommand 'frobnicate'"));
}

// ---------------------------------------------------------------------------
// 11. Non-UTF-8 content, odd names, symlinks
// ---------------------------------------------------------------------------

#[test]
fn symlinks_leading_out_of_the_repository_are_never_read_or_served() {
    let fx = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "hunter2 topsecretpassword\n").unwrap();
    std::fs::create_dir(outside.path().join("keys")).unwrap();
    std::fs::write(outside.path().join("keys/id.py"), "KEY = 'topsecretpassword'\n").unwrap();
    fx.write("app.py", "def login(password):\n    return password == 'x'\n");
    std::os::unix::fs::symlink(outside.path().join("secret.txt"), fx.repo.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("keys"), fx.repo.join("keys")).unwrap();
    for follow in ["false", "true"] {
        std::fs::write(fx.home.join("config.toml"), format!("[index]\nfollow-symlinks = {follow}\n")).unwrap();
        let v = fx.index(&[]);
        assert_eq!(v["report"]["skipped"]["outside_root"], 2, "follow={follow}: {v}");
        let paths: Vec<String> = fx.stored_files(&fx.repo).into_iter().map(|f| f.path).collect();
        assert_eq!(paths, ["app.py"], "follow={follow}");
        let out = fx.cmd().args(["query", "topsecretpassword hunter2"]).arg(&fx.repo).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("app.py"), "follow={follow}: {text}");
        for leaked in ["leak.txt", "keys/id.py", "KEY = ", "hunter2 topsecretpassword"] {
            assert!(!text.contains(leaked), "follow={follow}: {leaked} in {text}");
        }
    }
}

#[test]
fn latin1_content_odd_names_and_symlinks() {
    let fx = Fixture::new();
    fx.write("latin1.py", b"# -*- coding: latin-1 -*-\nname = 'Jos\xe9'\n");
    fx.write("dir with space/file name.md", "# spaced\n");
    fx.write("ünïcödé/naïve.rs", "fn naïve() {}\n");
    // A file name that is not UTF-8.
    let raw = fx.repo.join(OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&raw, "latin-1 name\n").unwrap();
    std::os::unix::fs::symlink("gone/away.py", fx.repo.join("dangling.py")).unwrap();
    std::os::unix::fs::symlink("latin1.py", fx.repo.join("alias.py")).unwrap();

    let v = fx.index(&[]);
    assert_eq!(v["index"]["status"], "ready");
    assert_eq!(v["report"]["skipped"], serde_json::json!({"broken_symlink": 1}));
    assert_eq!(v["report"]["skipped_examples"]["broken_symlink"], serde_json::json!(["dangling.py"]));
    assert_eq!(v["index"]["file_count"], 5);

    let files = fx.stored_files(&fx.repo);
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["alias.py", "caf\u{fffd}.txt", "dir with space/file name.md", "latin1.py", "ünïcödé/naïve.rs"]);
    let latin1 = files.iter().find(|f| f.path == "latin1.py").unwrap();
    assert_eq!(latin1.language, "python", "indexed as text, not skipped as binary");
    assert!(latin1.token_count > 0);
    assert_eq!(latin1.size_bytes, std::fs::metadata(fx.repo.join("latin1.py")).unwrap().len());

    // Nothing is re-read on refresh, odd names included.
    assert_eq!(counts(&fx.index(&[])), (0, 0, 0, 5, 0));
    // The text output shows the skip.
    fx.cmd()
        .arg("index")
        .arg(&fx.repo)
        .assert()
        .success()
        .stdout(predicate::str::contains("skipped    1 broken_symlink"));
}
