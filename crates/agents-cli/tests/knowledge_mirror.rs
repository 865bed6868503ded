//! `agents knowledge mirror`, end to end on temporary git repositories: which
//! files are mirrored (against a base branch, or a `files_modified` list),
//! deterministic output, removal of a deleted file's mirror, docstring drift,
//! and the mirror nodes in the compiled graph, with the global vault untouched.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{agents, assert_one_error_line, dirs, git, parse, stderr, stdout};

/// A home, a global vault with one node, and a git repository whose `main`
/// holds three source files and a README, checked out on branch `phase1`.
struct Repo {
    _dirs: common::Dirs,
    home: PathBuf,
    vault: PathBuf,
    repo: PathBuf,
}

const GREET_PY: &str = "\"\"\"Greetings.\"\"\"\n\n\nclass Greeter:\n    \"\"\"Greets people.\"\"\"\n\n    def greet(self, name: str) -> str:\n        \"\"\"Greets someone.\n\n        Args:\n            name: who to greet.\n\n        Returns:\n            The greeting.\n        \"\"\"\n        return f\"hello {name}\"\n";

const MATH_RS: &str = "/// Adds two numbers.\n///\n/// # Arguments\n///\n/// * `a` - the first\n/// * `b` - the second\n///\n/// # Returns\n///\n/// The sum.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";

const UTIL_JS: &str = "/**\n * Doubles.\n * @param {number} x the value\n * @returns {number} twice x\n */\nexport function double(x) {\n  return 2 * x;\n}\n";

fn setup() -> Repo {
    let d = dirs();
    let vault = d.root.join("global");
    std::fs::create_dir_all(&vault).unwrap();
    std::fs::write(
        vault.join("concept.md"),
        "---\nid: concept\ntitle: \"Concept\"\ndomain: d\ntags: [c]\nstatus: established\nconfidence: 0.9\nsource: human\nakms_schema: v2\n---\nBody.\n",
    )
    .unwrap();
    let repo = d.repo.clone();
    write(&repo, "src/greet.py", GREET_PY);
    write(&repo, "src/math.rs", MATH_RS);
    write(&repo, "web/util.js", UTIL_JS);
    write(&repo, "README.md", "# Repo\n");
    git(&repo, &["init", "-q", "-b", "main"], 0);
    git(&repo, &["add", "-A"], 0);
    git(&repo, &["commit", "-q", "-m", "base"], 0);
    git(&repo, &["checkout", "-q", "-b", "phase1"], 1);
    Repo { home: d.home.clone(), vault, repo, _dirs: d }
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `agents knowledge ARGS` inside the repository, with the test's vault.
fn run(r: &Repo, args: &[&str]) -> Output {
    agents(&r.home)
        .current_dir(&r.repo)
        .env("AKMS_GLOBAL_VAULT", &r.vault)
        .arg("knowledge")
        .args(args)
        .output()
        .unwrap()
}

fn ok(r: &Repo, args: &[&str]) -> Output {
    let out = run(r, args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

fn json(r: &Repo, args: &[&str]) -> serde_json::Value {
    let out = agents(&r.home)
        .current_dir(&r.repo)
        .env("AKMS_GLOBAL_VAULT", &r.vault)
        .args(["--json", "knowledge"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    parse(&out.stdout)
}

/// The mirror files, relative to knowledge/code-mirror, with their bytes.
fn mirrors(r: &Repo) -> BTreeMap<String, Vec<u8>> {
    let root = r.repo.join("knowledge/code-mirror");
    let mut files = BTreeMap::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
                files.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_owned()).collect()
}

#[test]
fn nfr_b02_mirror_against_the_base_branch_picks_only_changed_files() {
    let r = setup();
    // Committed on the branch, staged, and untracked changes all count.
    write(&r.repo, "src/greet.py", &GREET_PY.replace("hello", "hi"));
    git(&r.repo, &["commit", "-q", "-am", "change greet"], 2);
    write(&r.repo, "web/extra.ts", "export function f(a: number): number {\n  return a;\n}\n");
    write(&r.repo, "cmd/main.go", "package main\n\n// Run runs.\nfunc Run(n int) int { return n }\n");
    git(&r.repo, &["add", "cmd/main.go"], 3);
    write(&r.repo, "README.md", "# Repo\n\nMore.\n");

    let report = json(&r, &["mirror", "--base", "main"]);
    assert_eq!(report["base"], "main");
    assert_eq!(names(&report["files"]), ["README.md", "cmd/main.go", "src/greet.py", "web/extra.ts"]);
    assert_eq!(
        names(&report["written"]),
        [
            "knowledge/code-mirror/cmd/main.go.md",
            "knowledge/code-mirror/src/greet.py.md",
            "knowledge/code-mirror/web/extra.ts.md"
        ]
    );
    assert_eq!(report["skipped"][0]["file"], "README.md");
    assert_eq!(report["semantic_drift_check"], "off");
    let files: Vec<String> = mirrors(&r).into_keys().collect();
    assert_eq!(files, ["cmd/main.go.md", "src/greet.py.md", "web/extra.ts.md"]);

    // Without --base: the configured base branch, main by default.
    let again = json(&r, &["mirror"]);
    assert_eq!(again["base"], "main");
    assert_eq!(again["unchanged"].as_array().unwrap().len(), 3);
}

#[test]
fn fr_c02_a_mirror_holds_docstrings_and_full_source_with_4_7_frontmatter() {
    let r = setup();
    ok(&r, &["mirror", "--files", "src/greet.py", "--phase", "2"]);
    let text = std::fs::read_to_string(r.repo.join("knowledge/code-mirror/src/greet.py.md")).unwrap();
    let front = text.split("---\n").nth(1).unwrap();
    assert!(front.starts_with("id: mirror-src-greet.py\ntitle: \"Code Mirror: src/greet.py\"\ndomain: code-mirror\nstatus: established\nconfidence: 1.0\nsource: generated\nauto_update: true\ncontent_ref: \"code-mirror/src/greet.py.md\"\nsource_file: \"src/greet.py\"\nsource_hash: sha256:"), "{front}");
    assert!(front.ends_with("language: python\ngenerated_by_phase: 2\nakms_schema: v2\n"), "{front}");
    assert!(!front.contains("tags"));
    assert!(
        text.contains("## `Greeter.greet` (method, lines 7-16)\n\nGreets someone.\n\nArgs:\n    name: who to greet.")
    );
    assert!(
        text.contains("```python\ndef greet(self, name: str) -> str:\n    \"\"\"Greets someone.\n\n    Args:\n"),
        "{text}"
    );
    assert!(text.contains("```python\nclass Greeter:\n"), "{text}");
    let out = ok(&r, &["validate", "knowledge/code-mirror"]);
    assert_eq!(stdout(&out), "No problems found\n");
}

#[test]
fn fr_m07_mirror_from_files_modified() {
    let r = setup();
    let absolute = r.repo.join("src/math.rs").to_str().unwrap().to_owned();
    let report = json(&r, &["mirror", "--files", "web/util.js", &absolute, "./web/util.js"]);
    assert_eq!(report["base"], serde_json::Value::Null);
    assert_eq!(names(&report["files"]), ["./web/util.js", "src/math.rs", "web/util.js"]);
    assert_eq!(
        names(&report["written"]),
        ["knowledge/code-mirror/src/math.rs.md", "knowledge/code-mirror/web/util.js.md"]
    );
    assert!(report["drift"].as_array().unwrap().is_empty());
    let files: Vec<String> = mirrors(&r).into_keys().collect();
    assert_eq!(files, ["src/math.rs.md", "web/util.js.md"]);
    let js = String::from_utf8(mirrors(&r)["web/util.js.md"].clone()).unwrap();
    assert!(js.contains("## `double` (function, lines 6-8)\n\nDoubles.\n@param {number} x the value"), "{js}");
    assert!(js.contains("```javascript\nexport function double(x) {"), "{js}");
}

#[test]
fn nfr_d01_mirror_output_is_deterministic() {
    let r = setup();
    for (path, text) in
        [("src/greet.py", GREET_PY.replace("hello", "hey")), ("src/math.rs", MATH_RS.replace("+", "+ 0 +"))]
    {
        write(&r.repo, path, &text);
    }
    ok(&r, &["mirror"]);
    let first = mirrors(&r);
    assert_eq!(first.len(), 2);
    let out = ok(&r, &["mirror"]);
    assert_eq!(mirrors(&r), first, "a second run writes the same bytes");
    assert!(stdout(&out).contains("2 unchanged"), "{}", stdout(&out));
    // From scratch, too.
    std::fs::remove_dir_all(r.repo.join("knowledge/code-mirror")).unwrap();
    ok(&r, &["mirror", "--files", "src/math.rs", "src/greet.py"]);
    assert_eq!(mirrors(&r), first);
}

#[test]
fn a_deleted_source_file_loses_its_mirror() {
    let r = setup();
    ok(&r, &["mirror", "--files", "src/greet.py", "src/math.rs"]);
    git(&r.repo, &["rm", "-q", "src/greet.py"], 2);
    git(&r.repo, &["commit", "-q", "-m", "drop greet"], 2);
    let report = json(&r, &["mirror", "--base", "main"]);
    assert_eq!(names(&report["removed"]), ["knowledge/code-mirror/src/greet.py.md"]);
    let files: Vec<String> = mirrors(&r).into_keys().collect();
    assert_eq!(files, ["src/math.rs.md"]);
    assert!(!r.repo.join("knowledge/code-mirror/src/greet.py.md").exists());
}

#[test]
fn fr_c03_docstring_drift_sets_status_draft_and_is_printed() {
    let r = setup();
    write(&r.repo, "src/greet.py", &GREET_PY.replace("def greet(self, name: str)", "def greet(self, person: str)"));
    write(&r.repo, "src/math.rs", &MATH_RS.replace(" -> i32", ""));
    let out = ok(&r, &["mirror", "--base", "main"]);
    let err = stderr(&out);
    assert!(
        err.contains("drift: src/greet.py: `Greeter.greet` (line 7): documents `name`, not in the signature; does not document `person`"),
        "{err}"
    );
    assert!(
        err.contains(
            "drift: src/math.rs: `add` (line 11): documents a return value, but the signature returns nothing"
        ),
        "{err}"
    );
    assert!(stdout(&out).contains("draft     knowledge/code-mirror/src/greet.py.md (docstring drift)"));
    let py = String::from_utf8(mirrors(&r)["src/greet.py.md"].clone()).unwrap();
    assert!(py.contains("status: draft\n"), "{py}");
    assert!(py.contains("docstring_drift:\n  - symbol: \"Greeter.greet\"\n    line: 7\n    extra_params: [\"name\"]\n    missing_params: [\"person\"]\n"), "{py}");
    // In sync again: established again.
    write(&r.repo, "src/greet.py", GREET_PY);
    let report = json(&r, &["mirror", "--files", "src/greet.py"]);
    assert!(report["drift"].as_array().unwrap().is_empty());
    let py = String::from_utf8(mirrors(&r)["src/greet.py.md"].clone()).unwrap();
    assert!(py.contains("status: established\n") && !py.contains("docstring_drift"));
}

#[test]
fn the_compiled_graph_holds_the_mirror_nodes_and_the_global_vault_is_untouched() {
    let r = setup();
    let before = common_snapshot(&r.vault);
    write(&r.repo, "src/greet.py", &GREET_PY.replace("name: str)", "person: str)"));
    ok(&r, &["mirror", "--files", "src/greet.py", "src/math.rs", "web/util.js"]);
    let out = ok(&r, &["build"]);
    assert!(stdout(&out).contains("(3 code-mirror, 1 global)"), "{}", stdout(&out));
    let graph: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.repo.join("knowledge/graph/graph.json")).unwrap()).unwrap();
    let node = |id: &str| graph["nodes"].as_array().unwrap().iter().find(|n| n["id"] == id).cloned().unwrap();
    let math = node("mirror-src-math.rs");
    assert_eq!(math["node_origin"], "code-mirror");
    assert_eq!(math["source"], "generated");
    assert_eq!(math["auto_update"], true);
    assert_eq!(math["source_file"], "src/math.rs");
    assert!(math.get("tags").is_none());
    let greet = node("mirror-src-greet.py");
    assert_eq!(greet["status"], "draft");
    assert_eq!(greet["docstring_drift"][0]["extra_params"], serde_json::json!(["name"]));
    assert_eq!(common_snapshot(&r.vault), before, "the global vault is read-only");
}

fn common_snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        files.insert(path.clone(), std::fs::read(&path).unwrap());
    }
    files
}

#[test]
fn bad_paths_and_unknown_bases_are_bad_input() {
    let r = setup();
    let out = run(&r, &["mirror", "--files", "src/greet.py", "../outside.py"]);
    assert_eq!(out.status.code(), Some(2));
    let line = assert_one_error_line(&out);
    assert!(line.contains("../outside.py: files: leads outside"), "{line}");
    assert!(!r.repo.join("knowledge").exists(), "nothing is written");
    let out = run(&r, &["mirror", "--base", "no-such-branch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).contains("base branch `no-such-branch` not found"));
    let plain = r.repo.parent().unwrap().join("plain");
    std::fs::create_dir_all(plain.join("knowledge")).unwrap();
    let out = run(&r, &["--repo", plain.to_str().unwrap(), "mirror"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).ends_with("not a git repository; name the files to mirror instead"));
    // The read-only global vault is never a repository to mirror into.
    let vault = r.vault.to_str().unwrap().to_owned();
    let out = run(&r, &["--repo", &vault, "mirror", "--files", "concept.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).ends_with("is inside the global vault, which is read-only"));
}

#[test]
fn the_semantic_check_is_a_configured_hook_that_never_runs() {
    let r = setup();
    write(
        &r.repo,
        "knowledge/graph/propagation_config.yaml",
        "akms_schema: v2\nmodel_routing:\n  semantic_drift_check: true\n  model: some-model\n",
    );
    write(&r.repo, "src/greet.py", &GREET_PY.replace("hello", "hi"));
    let out = ok(&r, &["mirror"]);
    assert!(stderr(&out).contains("semantic docstring-drift check; it is not run"), "{}", stderr(&out));
    assert_eq!(json(&r, &["mirror"])["semantic_drift_check"], "configured, not run");
}
