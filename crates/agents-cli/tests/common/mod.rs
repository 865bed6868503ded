//! What every end-to-end test file shares: how the binary is started and
//! the temporary directories it runs in. Only [`agents`] knows how the
//! binary is started, so a change to its interface is fixed in one place.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use tempfile::TempDir;

/// The binary, with `$AGENTS_HOME` set to `home`, logging left at its default
/// and the working directory set to `home` (tests that rely on the default
/// `.` path override it with `current_dir`).
pub fn agents(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agents"));
    cmd.env("AGENTS_HOME", home).env_remove("AGENTS_LOG").env_remove("RUST_BACKTRACE").current_dir(home);
    cmd
}

/// A temporary directory holding a home and an empty repository named
/// `repo` (so the project derived from it is always `repo`), all canonical
/// so paths printed by the binary match ours exactly.
pub struct Dirs {
    pub tmp: TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
    pub repo: PathBuf,
}

pub fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let home = root.join("home");
    let repo = root.join("repo");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&repo).unwrap();
    Dirs { tmp, root, home, repo }
}

/// Stdout parsed as JSON, with the text in the panic message when it is not.
pub fn parse(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", String::from_utf8_lossy(bytes)))
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

/// Asserts that a failed command wrote exactly one line, an `error:` line.
pub fn assert_one_error_line(output: &Output) -> String {
    let err = stderr(output);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got:\n{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    lines[0].to_string()
}

/// Escapes regex metacharacters, for insta filters that match a literal path.
pub fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Runs `agents ARGS` with `$AGENTS_HOME` at `home` and asserts it succeeded;
/// returns stdout.
pub fn ok(home: &Path, args: &[&str]) -> String {
    let out = agents(home).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    stdout(&out)
}

/// [`ok`] with `--json`, parsed.
pub fn json(home: &Path, args: &[&str]) -> serde_json::Value {
    parse(ok(home, &[&["--json"], args].concat()).as_bytes())
}

/// Copies the tree at `from` into `to` (created), files and folders.
/// The golden knowledge fixture of `agents-akms`: a global vault, a
/// repository with local nodes, a code mirror and an overlay, and the graph
/// it compiles to.
pub const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../agents-akms/tests/fixtures/golden");

/// A home, and the golden fixture copied to `<root>/global` (the vault) and
/// `<root>/repo` (without `expected-graph.json`).
pub struct Knowledge {
    pub _dirs: Dirs,
    pub home: PathBuf,
    pub vault: PathBuf,
    pub repo: PathBuf,
}

pub fn knowledge() -> Knowledge {
    let d = dirs();
    std::fs::remove_dir_all(&d.repo).unwrap();
    copy_tree(Path::new(GOLDEN), &d.root);
    std::fs::remove_file(d.root.join("expected-graph.json")).unwrap();
    Knowledge { home: d.home.clone(), vault: d.root.join("global"), repo: d.root.join("repo"), _dirs: d }
}

#[allow(unused_imports)] // Not every test crate compares trees.
pub use tree::{copy_tree, snapshot as tree_bytes};

#[path = "../../../agents-engine/tests/common/history_repo.rs"]
pub mod history_repo;
#[allow(unused_imports)] // Not every test crate runs git.
pub use history_repo::git;
#[path = "../../../agents-engine/tests/common/shop_repo.rs"]
pub mod shop_repo;
#[path = "../../../agents-engine/tests/common/tree.rs"]
pub mod tree;
