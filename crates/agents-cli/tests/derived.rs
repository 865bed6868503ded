//! Files under `$AGENTS_HOME` derived from the store (search indexes, vectors,
//! the HNSW graph, tier files) through the real binary: damage to one is
//! repaired with one warning and the same answer; an index's history never
//! changes an answer; a resource unlinked leaves nothing behind; a root path
//! that is not UTF-8 is refused.

use std::path::{Path, PathBuf};

use serde_json::Value;

mod common;

/// A small generated repository, and a home whose vector searches go through
/// the HNSW graph (so the graph is one of the files tested).
struct Fixture {
    _dirs: common::Dirs,
    home: PathBuf,
    repo: PathBuf,
}

const QUERY: &str = "format the value of a helper";

fn write(repo: &Path, rel: &str, text: &str) {
    let path = repo.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn module(i: usize, extra: &str) -> String {
    format!(
        "\"\"\"Helpers of part {i}.\"\"\"\n\n\ndef helper_{i}(value):\n    \"\"\"Format value number {i}{extra}.\"\"\"\n    return str(value) * {i}\n\n\nclass Thing{i}:\n    def run(self):\n        return helper_{i}({i})\n"
    )
}

fn fill(repo: &Path) {
    for i in 0..16 {
        write(repo, &format!("pkg/m{i:02}.py"), &module(i, ""));
    }
    write(repo, "README.md", "# Helpers\n\nFormatting values.\n");
}

impl Fixture {
    fn new() -> Fixture {
        let dirs = common::dirs();
        let (home, repo) = (dirs.home.clone(), dirs.repo.clone());
        std::fs::write(home.join("config.toml"), "[context.backends]\nann-threshold = 1\n").unwrap();
        fill(&repo);
        Fixture { _dirs: dirs, home, repo }
    }

    /// The query as JSON, and stderr.
    fn query(&self, home: &Path) -> (Value, String) {
        let out =
            common::agents(home).args(["--json", "query", QUERY, "--max-tokens", "1500"]).arg(&self.repo).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{}", common::stderr(&out));
        (common::parse(&out.stdout), common::stderr(&out))
    }

    fn search_dir(&self) -> PathBuf {
        let resources: Vec<PathBuf> =
            std::fs::read_dir(self.home.join("search")).unwrap().map(|e| e.unwrap().path()).collect();
        assert_eq!(resources.len(), 1, "{resources:?}");
        resources[0].clone()
    }
}

/// What two answers must share: the context's hash, its files in order, and its
/// fragments with their scores, all but the time they were made, their ids and
/// the resource id (which differ between homes).
fn answer(v: &Value) -> (Value, Value, String) {
    let mut fragments = v["fragments"].clone();
    for f in fragments.as_array_mut().unwrap() {
        let f = f.as_object_mut().unwrap();
        f.remove("created_at");
        f.remove("fragment_id");
    }
    let resource = fragments[0]["provenance"]["resource_id"].as_str().unwrap().to_owned();
    let text = serde_json::to_string_pretty(&fragments).unwrap().replace(&resource, "RESOURCE");
    (v["context_hash"].clone(), v["ranked_files"].clone(), text)
}

fn warnings(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("WARN")).collect()
}

fn truncate(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len / 2).unwrap();
}

/// Each derived file, truncated or overwritten: the next query succeeds with
/// the answer of before and one warning naming what was rebuilt.
#[test]
fn a_damaged_derived_file_is_rebuilt_with_one_warning() {
    let fx = Fixture::new();
    let (before, stderr) = fx.query(&fx.home);
    assert!(warnings(&stderr).is_empty(), "{stderr}");
    assert!(before["backends"]["vector"].as_str().unwrap().starts_with("local"), "{:#}", before["backends"]);
    let search = fx.search_dir();
    let segment = |ext: &str| {
        let dir = search.join("tantivy-v2");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        files.sort();
        files.remove(0)
    };
    type Damage<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, &str, Damage<'_>)> = vec![
        ("vectors.bin truncated", "vector index", Box::new(|| truncate(&search.join("vector/vectors.bin")))),
        ("hnsw.usearch truncated", "hnsw.usearch", Box::new(|| truncate(&search.join("vector/hnsw.usearch")))),
        (
            "hnsw.usearch garbage",
            "hnsw.usearch",
            Box::new(|| std::fs::write(search.join("vector/hnsw.usearch"), "garbage ".repeat(100)).unwrap()),
        ),
        ("tantivy postings truncated", "text index", Box::new(|| truncate(&segment("idx")))),
        ("tantivy terms truncated", "text index", Box::new(|| truncate(&segment("term")))),
        (
            "tantivy meta.json garbage",
            "text index",
            Box::new(|| std::fs::write(search.join("tantivy-v2/meta.json"), "{").unwrap()),
        ),
        ("hot.json garbage", "hot.json", Box::new(|| std::fs::write(fx.home.join("tiers/hot.json"), "{").unwrap())),
    ];
    for (case, names, damage) in cases {
        damage();
        let (after, stderr) = fx.query(&fx.home);
        assert_eq!(answer(&after), answer(&before), "{case}: the same answer");
        let warned = warnings(&stderr);
        assert_eq!(warned.len(), 1, "{case}: one warning, got:\n{stderr}");
        assert!(warned[0].contains(names), "{case}: {}", warned[0]);
        // Repaired for good: the next query is quiet.
        let (again, stderr) = fx.query(&fx.home);
        assert!(warnings(&stderr).is_empty(), "{case}: {stderr}");
        assert_eq!(answer(&again), answer(&before), "{case}");
    }
}

/// Edits, deletions and additions over several runs leave the index where a
/// fresh index of the same files would be: same context, same hash.
#[test]
fn an_edited_index_answers_as_a_fresh_one() {
    let fx = Fixture::new();
    fx.query(&fx.home);
    write(&fx.repo, "pkg/m03.py", &module(3, ", then trim the value"));
    std::fs::remove_file(fx.repo.join("pkg/m05.py")).unwrap();
    fx.query(&fx.home);
    write(&fx.repo, "pkg/m07.py", &module(7, " as a helper value"));
    write(&fx.repo, "pkg/new.py", &module(40, " for the new helper"));
    std::fs::remove_file(fx.repo.join("pkg/m09.py")).unwrap();
    let (edited, _) = fx.query(&fx.home);
    let fresh_home = fx._dirs.root.join("fresh-home");
    std::fs::create_dir_all(&fresh_home).unwrap();
    std::fs::copy(fx.home.join("config.toml"), fresh_home.join("config.toml")).unwrap();
    let (fresh, _) = fx.query(&fresh_home);
    assert_eq!(fresh["sync"]["files_indexed"], 16, "the fresh home indexed everything");
    assert_eq!(answer(&edited), answer(&fresh));
}

/// `project unlink-resource` of a resource in no other project removes its
/// search indexes and its lock file along with its rows.
#[test]
fn unlinking_a_resource_removes_its_files() {
    let fx = Fixture::new();
    fx.query(&fx.home);
    let search = fx.search_dir();
    let resource = search.file_name().unwrap().to_string_lossy().into_owned();
    let lock = fx.home.join("locks").join(format!("{resource}.lock"));
    assert!(search.join("vector/vectors.bin").exists() && lock.exists());
    // Linked to a second project too: unlinking from one keeps everything.
    common::ok(&fx.home, &["project", "create", "other"]);
    common::ok(&fx.home, &["project", "link-resource", "other", fx.repo.to_str().unwrap()]);
    common::ok(&fx.home, &["project", "unlink-resource", "other", &resource]);
    assert!(search.exists() && lock.exists(), "still linked to project repo");
    common::ok(&fx.home, &["project", "unlink-resource", "repo", fx.repo.to_str().unwrap()]);
    assert!(!search.exists(), "search/{resource} is left behind");
    assert!(!lock.exists(), "the lock file is left behind");
    assert_eq!(std::fs::read_dir(fx.home.join("search")).unwrap().count(), 0);
}

/// A root whose path is not UTF-8 is refused by name before anything is
/// stored; indexing the directory its lossy spelling names is not an option.
#[cfg(unix)]
#[test]
fn a_root_path_that_is_not_utf8_is_refused() {
    use std::os::unix::ffi::OsStrExt;
    let dirs = common::dirs();
    let bad = dirs.root.join(std::ffi::OsStr::from_bytes(b"repo-\xff"));
    let lossy = dirs.root.join("repo-\u{fffd}");
    for dir in [&bad, &lossy] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("a.py"), "def a():\n    return 1\n").unwrap();
    }
    common::ok(&dirs.home, &["project", "create", "demo"]);
    let runs: [Vec<&std::ffi::OsStr>; 3] = [
        vec!["index".as_ref(), bad.as_os_str()],
        vec!["query".as_ref(), "a".as_ref(), bad.as_os_str()],
        vec!["project".as_ref(), "link-resource".as_ref(), "demo".as_ref(), bad.as_os_str()],
    ];
    for args in runs {
        let out = common::agents(&dirs.home).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", common::stderr(&out));
        let line = common::assert_one_error_line(&out);
        assert!(line.contains(&lossy.display().to_string()) && line.contains("not valid UTF-8"), "{line}");
    }
    let projects = common::json(&dirs.home, &["project", "list"]);
    assert!(projects.as_array().unwrap().iter().all(|p| p["resources"].as_array().unwrap().is_empty()), "{projects:#}");
}
