//! The retrieval strategies through the real binary, over a small Python
//! repository with a git history and a synthetic embedding model: a model in
//! the home is found, bad strategy names and configurations exit 2, and the
//! same query prints the same bytes. What each strategy finds is tested on
//! the engine (`agents-engine/tests/retrieval.rs`).

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

mod common;
#[path = "../../agents-engine/tests/common/fixture_model.rs"]
mod fixture_model;

/// The strategies that run without a plan.
const STRATEGIES: [&str; 5] =
    ["simple-keyword", "semantic-embedding", "breadth-depth-navigator", "arce", "temporal-archaeology"];

use common::history_repo::{HISTORY, SYNONYMS};

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    /// The synthetic model's directory (outside the home).
    model: PathBuf,
}

impl Fixture {
    /// The repository with its git history.
    fn new() -> Fixture {
        Fixture::build(true)
    }

    /// The same files in a directory that is not a git repository.
    fn without_git() -> Fixture {
        Fixture::build(false)
    }

    fn build(with_git: bool) -> Fixture {
        let common::Dirs { tmp, root, home, repo } = common::dirs();
        if with_git {
            common::git(&repo, &["init", "--quiet", "--initial-branch=main"], 0);
        }
        for (i, (path, content, subject)) in HISTORY.iter().enumerate() {
            let file = repo.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, content).unwrap();
            if with_git {
                common::git(&repo, &["add", path], i);
                common::git(&repo, &["commit", "--quiet", "--no-verify", "-m", subject], i);
            }
        }
        let model = root.join("model");
        let mut texts: Vec<&str> = HISTORY.iter().flat_map(|(path, content, _)| [*path, *content]).collect();
        texts.extend(["module function method class import", "pause between attempts send request"]);
        fixture_model::write(&model, &texts, SYNONYMS);
        Fixture { _dir: tmp, home, repo, model }
    }

    fn run(&self, model: &Path, args: &[&str]) -> Output {
        common::agents(&self.home)
            .env("AGENTS_EMBEDDING_MODEL", model)
            .arg("query")
            .args(args)
            .arg(&self.repo)
            .output()
            .unwrap()
    }

    /// `agents query --json ARGS REPO` with the fixture model, which must succeed.
    fn json(&self, args: &[&str]) -> Value {
        json_of(&self.run(&self.model, &with_json(args)), args)
    }
}

fn with_json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    all
}

fn json_of(out: &Output, args: &[&str]) -> Value {
    assert!(out.status.success(), "{args:?} failed:\n{}", common::stderr(out));
    common::parse(&out.stdout)
}

fn files(v: &Value) -> Vec<&str> {
    v["ranked_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect()
}

#[test]
fn a_model_in_the_home_is_found_without_configuration() {
    let fx = Fixture::new();
    let dir = fx.home.join("models").join("minilm-code-static");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::copy(fx.model.join(name), dir.join(name)).unwrap();
    }
    let out = common::agents(&fx.home)
        .env_remove("AGENTS_EMBEDDING_MODEL")
        .args(["--json", "query", "pause", "--strategy", "semantic-embedding"])
        .arg(&fx.repo)
        .output()
        .unwrap();
    let v = json_of(&out, &["pause"]);
    assert_eq!(v["strategy"], "semantic-embedding", "{v:#}");
    assert!(v["backends"]["vector"].as_str().unwrap().starts_with("local (minilm-code-static@"), "{v:#}");
    assert_eq!(files(&v)[0], "net/retry.py");
}

#[test]
fn an_unknown_strategy_exits_2_and_lists_the_known_ones() {
    let fx = Fixture::new();
    let out = fx.run(&fx.model, &["backoff", "--strategy", "fastest"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let line = common::assert_one_error_line(&out);
    assert!(line.contains("unknown strategy \"fastest\""), "{line}");
    for known in STRATEGIES.iter().chain(&["plan-decision-context"]) {
        assert!(line.contains(known), "{known} missing from: {line}");
    }
}

#[test]
fn a_strategy_left_out_of_the_configuration_exits_2() {
    let fx = Fixture::new();
    std::fs::write(fx.home.join("config.toml"), "[context.strategies]\nenabled = [\"simple-keyword\"]\n").unwrap();
    for strategy in ["arce", "semantic-embedding", "temporal-archaeology"] {
        let out = fx.run(&fx.model, &["backoff", "--strategy", strategy]);
        assert_eq!(out.status.code(), Some(2), "{strategy}: {}", common::stderr(&out));
        let line = common::assert_one_error_line(&out);
        assert!(line.contains(strategy) && line.contains("context.strategies.enabled"), "{line}");
    }
    // The enabled one runs, and is the one chosen without --strategy.
    for args in [&["backoff", "--strategy", "simple-keyword"][..], &["backoff"]] {
        let v = fx.json(args);
        assert_eq!(v["strategy"], "simple-keyword", "{args:?}: {v:#}");
        assert_eq!(v["fallbacks"], serde_json::json!([]));
    }
    // An unknown name in the configuration is a configuration error.
    std::fs::write(fx.home.join("config.toml"), "[context.strategies]\nenabled = [\"fastest\"]\n").unwrap();
    let out = fx.run(&fx.model, &["backoff"]);
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let line = common::assert_one_error_line(&out);
    assert!(line.contains("context.strategies.enabled") && line.contains("fastest"), "{line}");
}

/// JSON output with its clock readings removed (`assembled_at`, every
/// fragment's `created_at`, and the timings of the assembly, of the trace and
/// of the strategy runs), printed back; everything else, ids included, is the same on every run.
fn untimed(json: &str) -> String {
    let mut v = common::parse(json.as_bytes());
    v.as_object_mut().unwrap().remove("assembled_at").expect("assembled_at");
    v.as_object_mut().unwrap().remove("assembly_micros").expect("assembly_micros");
    for f in v["fragments"].as_array_mut().unwrap() {
        f.as_object_mut().unwrap().remove("created_at").expect("created_at");
    }
    for step in v["trace"].as_array_mut().unwrap() {
        step.as_object_mut().unwrap().remove("micros").expect("micros");
        // The executor's detail times each run: "arce 3 ms; ...".
        if let Some(detail) = step["detail"].as_str() {
            let parts: Vec<String> = detail
                .split("; ")
                .map(|part| match part.strip_suffix(" ms").and_then(|p| p.rsplit_once(' ')) {
                    Some((run, ms)) if ms.parse::<u64>().is_ok() => format!("{run} _ ms"),
                    _ => part.to_owned(),
                })
                .collect();
            step["detail"] = Value::from(parts.join("; "));
        }
    }
    for run in v["runs"].as_array_mut().unwrap() {
        run.as_object_mut().unwrap().remove("elapsed_ms").expect("elapsed_ms");
    }
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn the_same_query_prints_the_same_bytes() {
    let fx = Fixture::new();
    let index = common::agents(&fx.home).env("AGENTS_EMBEDDING_MODEL", &fx.model).arg("index").arg(&fx.repo).output();
    assert!(index.as_ref().unwrap().status.success(), "{}", common::stderr(index.as_ref().unwrap()));
    for strategy in STRATEGIES {
        let args = ["--json", "pause between attempts", "--strategy", strategy, "--temporal", "all", "--focus", "run"];
        let first = fx.run(&fx.model, &args);
        let second = fx.run(&fx.model, &args);
        assert!(first.status.success(), "{}", common::stderr(&first));
        // Byte for byte, but for the timestamps and timings: when the payload
        // was assembled, when each fragment was made, how long each step took.
        let (one, two) = (common::parse(&first.stdout), common::parse(&second.stdout));
        assert_eq!(one["payload_id"], two["payload_id"], "{strategy}: payload ids are content-addressed");
        assert_eq!(untimed(&common::stdout(&first)), untimed(&common::stdout(&second)), "{strategy}");
        let v = one;
        assert_eq!(v["sync"]["files_indexed"], 0, "agents index already synced the search indexes: {v:#}");
        assert_eq!(v["strategy"], strategy);
    }
    // Markdown too.
    let args = ["pause between attempts", "--strategy", "arce"];
    assert_eq!(common::stdout(&fx.run(&fx.model, &args)), common::stdout(&fx.run(&fx.model, &args)));
}

#[test]
fn a_disabled_strategy_never_runs_as_a_fallback() {
    let fx = Fixture::without_git();
    std::fs::write(fx.home.join("config.toml"), "[context.strategies]\nenabled = [\"temporal-archaeology\"]\n")
        .unwrap();
    // The only enabled strategy needs git; nothing else may stand in for it.
    let out = fx.run(&fx.model, &["backoff"]);
    assert_eq!(out.status.code(), Some(1), "{}", common::stdout(&out));
    let line = common::assert_one_error_line(&out);
    assert!(
        line.contains("no strategy could serve the request") && line.contains("context.strategies.enabled"),
        "{line}"
    );
}

#[test]
fn a_refresh_that_changed_nothing_finds_the_search_indexes_current_unless_their_files_say_otherwise() {
    let fx = Fixture::new();
    let index = |what: &str| {
        let out = common::agents(&fx.home)
            .env("AGENTS_EMBEDDING_MODEL", &fx.model)
            .args(["--json", "index"])
            .arg(&fx.repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "{what}: {}", common::stderr(&out));
        common::parse(&out.stdout)["search"].clone()
    };
    let first = index("first");
    let files = first["files_indexed"].as_u64().unwrap();
    assert!(files > 0 && first["vectors_indexed"].as_u64().unwrap() > 0, "{first:#}");
    assert_eq!(index("again")["files_indexed"], 0, "nothing changed, nothing re-indexed");

    // The text index lost: found without opening it, and rebuilt.
    let search = fx.home.join("search");
    let resource = std::fs::read_dir(&search).unwrap().next().unwrap().unwrap().path();
    let text = std::fs::read_dir(&resource)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("tantivy"))
        .unwrap();
    std::fs::remove_dir_all(&text).unwrap();
    let rebuilt = index("text lost");
    assert_eq!(rebuilt["files_indexed"], files, "{rebuilt:#}");

    // A vector file whose header names another format: the full check opens
    // it, finds it unreadable and rebuilds it.
    let vectors = resource.join("vector").join("vectors.bin");
    let mut bytes = std::fs::read(&vectors).unwrap();
    bytes[..8].copy_from_slice(b"AGVECXX\n");
    std::fs::write(&vectors, bytes).unwrap();
    let re_embedded = index("vector header damaged");
    assert!(re_embedded["vectors_indexed"].as_u64().unwrap() > 0, "{re_embedded:#}");
    assert_eq!(index("after the rebuild")["files_indexed"], 0);
}
