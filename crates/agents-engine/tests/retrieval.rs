//! The retrieval strategies through `Engine::query`, over a small Python
//! repository with a git history and a synthetic embedding model: each
//! strategy ranks what it should first with provenance that slices back to
//! the source, depth and breadth are honoured, a missing backend falls back
//! along the spec's path and says why, and the search indexes follow the
//! files. (Exit codes, configuration files and the printed bytes are tested
//! through the binary in `agents-cli/tests/retrieval.rs`.)

use std::path::{Path, PathBuf};

use agents_core::config::ResolvedConfig;
use agents_engine::{Engine, EngineError, Home, QueryOptions, QueryRun};
use serde_json::Value;

#[path = "common/fixture_model.rs"]
mod fixture_model;

#[path = "common/history_repo.rs"]
mod history_repo;
use history_repo::{HISTORY, SYNONYMS, git};

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    /// The synthetic model's directory (outside the home).
    model: PathBuf,
    /// Where no model is.
    no_model: PathBuf,
    /// (full id, subject) of every commit, oldest first; empty without git.
    commits: Vec<(String, String)>,
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
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (home, repo) = (root.join("home"), root.join("repo"));
        std::fs::create_dir_all(&repo).unwrap();
        let mut commits = Vec::new();
        if with_git {
            git(&repo, &["init", "--quiet", "--initial-branch=main"], 0);
        }
        for (i, (path, content, subject)) in HISTORY.iter().enumerate() {
            let file = repo.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, content).unwrap();
            if with_git {
                git(&repo, &["add", path], i);
                git(&repo, &["commit", "--quiet", "--no-verify", "-m", subject], i);
                let id = git(&repo, &["rev-parse", "HEAD"], i);
                commits.push((id.trim().to_owned(), (*subject).to_owned()));
            }
        }
        let model = root.join("model");
        let mut texts: Vec<&str> = HISTORY.iter().flat_map(|(path, content, _)| [*path, *content]).collect();
        texts.extend(["module function method class import", "pause between attempts send request"]);
        fixture_model::write(&model, &texts, SYNONYMS);
        Fixture { _dir: tmp, home, repo, model, no_model: root.join("no-model"), commits }
    }

    /// The query `args` (as `agents query` flags) with the embedding model
    /// at `model`, on an engine opened for it as a command would.
    fn query(&self, model: &Path, args: &[&str]) -> Result<QueryRun, EngineError> {
        let mut config = ResolvedConfig::default();
        let toml = format!("[context.backends]\nembedding-model = {:?}\n", model.display().to_string());
        config.merge_file(&toml, self.home.join("config.toml")).unwrap();
        let engine = Engine::open(Home::new(&self.home), config)?;
        engine.query(&options(&self.repo, args))
    }

    /// The run's report with the fixture model; the query must succeed.
    fn json(&self, args: &[&str]) -> Value {
        let run = self.query(&self.model, args).unwrap_or_else(|e| panic!("{args:?} failed: {e}"));
        serde_json::to_value(run.report()).unwrap()
    }

    /// The same without an embedding model.
    fn json_without_model(&self, args: &[&str]) -> Value {
        let run = self.query(&self.no_model, args).unwrap_or_else(|e| panic!("{args:?} failed: {e}"));
        serde_json::to_value(run.report()).unwrap()
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.repo.join(path)).unwrap()
    }
}

/// `agents query` flags as query options: the tests read as the commands
/// they stand for.
fn options(repo: &Path, args: &[&str]) -> QueryOptions {
    let mut options = QueryOptions::new(repo);
    let o = &mut options.overrides;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap().to_string();
        match *arg {
            "--strategy" => o.strategies.push(value()),
            "--max-tokens" => o.max_tokens = Some(value().parse().unwrap()),
            "--temporal" => o.temporal = Some(value().parse().unwrap()),
            "--depth" => o.depth = Some(value().parse().unwrap()),
            "--focus" => o.focus.push(value()),
            "--breadth" => o.breadth = Some(value().parse().unwrap()),
            "--no-depth-gradient" => o.no_depth_gradient = true,
            "--plan" => options.plan = Some(value()),
            text => o.text = Some(text.to_owned()),
        }
    }
    options
}

/// An engine over a repository of `files` (path, text), with the fixture
/// model made from their words; the directory lives as long as the first value.
fn engine_over(files: &[(&str, &str)]) -> (tempfile::TempDir, Engine, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (home, repo, model) = (root.join("home"), root.join("repo"), root.join("model"));
    for (path, content) in files {
        std::fs::create_dir_all(repo.join(path).parent().unwrap()).unwrap();
        std::fs::write(repo.join(path), content).unwrap();
    }
    let texts: Vec<&str> = files.iter().flat_map(|(path, content)| [*path, *content]).collect();
    fixture_model::write(&model, &texts, &[]);
    let mut config = ResolvedConfig::default();
    let toml = format!("[context.backends]\nembedding-model = {:?}\n", model.display().to_string());
    config.merge_file(&toml, home.join("config.toml")).unwrap();
    let engine = Engine::open(Home::new(&home), config).unwrap();
    (tmp, engine, repo)
}

fn fragments(v: &Value) -> &Vec<Value> {
    v["fragments"].as_array().unwrap()
}

fn files(v: &Value) -> Vec<&str> {
    v["ranked_files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect()
}

fn depth(f: &Value) -> u64 {
    f["detail_depth"].as_u64().unwrap()
}

/// Where a fragment came from: its file, its `source_range` and the strategy
/// that proposed it.
fn source_path(f: &Value) -> &str {
    f["provenance"]["source_path"].as_str().unwrap()
}

fn source_range(f: &Value) -> &str {
    f["provenance"]["source_range"].as_str().unwrap()
}

fn strategy_of(f: &Value) -> &Value {
    &f["provenance"]["strategy"]
}

/// A fragment's note (`metadata.note`), if it has one.
fn note(f: &Value) -> Option<&str> {
    f["metadata"]["note"].as_str()
}

/// The fragment with the highest relevance score (the first of equals).
fn best(v: &Value) -> &Value {
    let mut best = &fragments(v)[0];
    for f in fragments(v) {
        if f["relevance_score"].as_f64().unwrap() > best["relevance_score"].as_f64().unwrap() {
            best = f;
        }
    }
    best
}

/// The fragments without their `created_at` timestamps, the only part of a
/// fragment that differs between identical queries.
fn timeless(fragments: &Value) -> Value {
    let mut fragments = fragments.clone();
    for f in fragments.as_array_mut().unwrap() {
        f.as_object_mut().unwrap().remove("created_at");
    }
    fragments
}

/// The text of a `source_range` ("l:c-l:c": lines 1-based, columns 0-based in
/// bytes, the end exclusive, as `agents_uko::model::Span` counts them).
fn slice<'a>(text: &'a str, range: &str) -> &'a str {
    let offset = |point: &str| -> usize {
        let (line, column) = point.split_once(':').unwrap_or_else(|| panic!("bad point in {range}"));
        let (line, column): (usize, usize) = (line.parse().unwrap(), column.parse().unwrap());
        assert!(line >= 1, "lines count from 1: {range}");
        let line_start = if line == 1 {
            0
        } else {
            text.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1).unwrap_or_else(|| panic!("{range}: no line"))
        };
        line_start + column
    };
    let (start, end) = range.split_once('-').unwrap_or_else(|| panic!("bad range {range}"));
    let (start, end) = (offset(start), offset(end));
    assert!(start < end && end <= text.len(), "{range} is outside the file ({} bytes)", text.len());
    &text[start..end]
}

/// What every successful retrieval by `strategy` must satisfy: it ran without
/// falling back, found something, tags every fragment with itself, lists
/// fragments in reading order (each file's fragments together, in source
/// order), stays within the budget, and every range slices the file (a
/// full-source fragment holds exactly that text).
fn assert_well_formed(fx: &Fixture, v: &Value, strategy: &str) {
    assert_eq!(v["requested_strategy"], strategy, "{v:#}");
    assert_eq!(v["strategy"], strategy, "{v:#}");
    assert_eq!(v["fallbacks"], serde_json::json!([]), "{v:#}");
    let fragments = fragments(v);
    assert!(!fragments.is_empty(), "{strategy} found nothing: {v:#}");
    assert!(v["candidates"].as_u64().unwrap() >= fragments.len() as u64);
    assert!(v["strategies_used"].as_array().unwrap().contains(&Value::from(strategy)), "{v:#}");
    for f in fragments {
        assert_eq!(strategy_of(f), strategy, "{f:#}");
        let path = source_path(f);
        let text = fx.read(path);
        let source = slice(&text, source_range(f));
        if depth(f) == 9 {
            assert!(f["content"].as_str().unwrap().contains(source), "{strategy}: depth 9 lacks its source: {f:#}");
        }
        let score = f["relevance_score"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&score), "{f:#}");
    }
    // Reading order: files by their best fragment's score, a file's fragments
    // together, its best first and the rest in source order.
    let start_line = |f: &Value| -> u64 { source_range(f).split(':').next().unwrap().parse().unwrap() };
    let score = |f: &Value| f["relevance_score"].as_f64().unwrap();
    let mut seen_files: Vec<&str> = Vec::new();
    for (i, f) in fragments.iter().enumerate() {
        let path = source_path(f);
        if seen_files.last() == Some(&path) {
            let lead = fragments.iter().position(|g| source_path(g) == path).unwrap();
            assert!(score(&fragments[lead]) > score(f), "{strategy}: {path} does not open with its best: {v:#}");
            if i > lead + 1 {
                assert!(start_line(&fragments[i - 1]) <= start_line(f), "{strategy}: not in source order: {v:#}");
            }
        } else {
            assert!(!seen_files.contains(&path), "{strategy}: {path} is split: {v:#}");
            if let Some(previous) = fragments[..i].iter().rev().find(|g| !source_path(g).is_empty()) {
                let lead = fragments.iter().position(|g| source_path(g) == source_path(previous)).unwrap();
                assert!(score(&fragments[lead]) > score(f), "{strategy}: files out of score order: {v:#}");
            }
            seen_files.push(path);
        }
    }
    // Strict scores: no two fragments tie.
    let mut scores: Vec<f64> = fragments.iter().map(score).collect();
    scores.sort_by(f64::total_cmp);
    assert!(scores.windows(2).all(|w| w[0] < w[1]), "{strategy}: tied scores: {v:#}");
    let total = v["total_tokens"].as_u64().unwrap();
    let available = v["budget"]["available_tokens"].as_u64().unwrap();
    assert!(total <= available, "{v:#}");
    assert!(v["rendered_tokens"].as_u64().unwrap() <= available, "{v:#}");
    let sum: u64 = fragments.iter().map(|f| f["token_count"].as_u64().unwrap()).sum();
    assert_eq!(sum, total, "the total is the sum of the fragments");
    assert!(v["backends"]["vector"].as_str().unwrap().starts_with("local ("), "{v:#}");
}

#[test]
fn the_fixture_model_loads_and_puts_synonyms_together() {
    use agents_search::vector::{Embedder, StaticEmbedder};
    let fx = Fixture::new();
    let model = StaticEmbedder::load(&fx.model).unwrap();
    let texts: Vec<String> =
        ["pause", "Exponential BACKOFF", "wait", "shout", "pause xyzzy"].iter().map(|s| (*s).to_owned()).collect();
    let v = model.embed(&texts);
    let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
    assert!((cos(&v[0], &v[0]) - 1.0).abs() < 1e-5, "unit vectors");
    assert!((cos(&v[0], &v[2]) - 1.0).abs() < 1e-5, "synonyms share a vector");
    assert!((cos(&v[0], &v[1]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5, "{}", cos(&v[0], &v[1]));
    assert!(cos(&v[0], &v[3]).abs() < 1e-5, "unrelated words are orthogonal");
    assert!((cos(&v[0], &v[4]) - 1.0).abs() < 1e-5, "unknown words are skipped");
}

#[test]
fn every_strategy_runs_as_asked_and_ranks_the_right_file_first() {
    let fx = Fixture::new();
    let cases: [(&str, &[&str], &str); 5] = [
        ("simple-keyword", &["backoff"], "net/retry.py"),
        ("semantic-embedding", &["pause"], "net/retry.py"),
        ("breadth-depth-navigator", &["send request", "--focus", "run"], "app/main.py"),
        ("arce", &["pause between attempts"], "net/retry.py"),
        ("temporal-archaeology", &["backoff between retries", "--temporal", "recent"], "net/retry.py"),
    ];
    for (strategy, args, first) in cases {
        for budget in ["8000", "500"] {
            let v = fx.json(&[args, &["--strategy", strategy, "--max-tokens", budget]].concat());
            assert_well_formed(&fx, &v, strategy);
            assert_eq!(files(&v)[0], first, "{strategy}: {v:#}");
            assert_eq!(source_path(best(&v)), first, "{strategy}: {v:#}");
            assert!(v["total_tokens"].as_u64().unwrap() <= budget.parse().unwrap());
        }
    }
}

#[test]
fn semantic_search_finds_code_by_a_word_it_does_not_contain() {
    let fx = Fixture::new();
    assert!(!HISTORY.iter().any(|(_, content, _)| content.contains("pause")), "the fixture never says pause");
    let semantic = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    let first = best(&semantic);
    assert!(first["uko_node"].as_str().unwrap().ends_with("/net/retry.py#retry_with_backoff"), "{semantic:#}");
    assert_eq!(first["relevance_score"], 1.0);
    assert_eq!(first["detail_depth"], 9);
    assert_eq!(source_range(first), "6:0-19:29");
    assert!(files(&semantic).iter().all(|f| f.starts_with("net/")), "only code about backoff: {semantic:#}");
    // The words are not in the code, so BM25 has nothing.
    let keyword = fx.json(&["pause", "--strategy", "simple-keyword"]);
    assert_eq!(keyword["strategy"], "simple-keyword");
    assert_eq!(keyword["candidates"], 0, "{keyword:#}");
    assert_eq!(keyword["fragments"], serde_json::json!([]));
    assert_eq!(keyword["total_tokens"], 0);
}

#[test]
fn a_question_that_writes_a_function_as_code_gets_that_function() {
    let fx = Fixture::new();
    // Every other word of the question is about retrying; `strings.shout`
    // names the helper in util/strings.py as the member of its module.
    let v = fx.json(&["how does strings.shout differ from retrying calls with exponential backoff between attempts"]);
    let shout = fragments(&v)
        .iter()
        .find(|f| f["uko_node"].as_str().unwrap().ends_with("/util/strings.py#shout"))
        .unwrap_or_else(|| panic!("shout is not in the answer: {v:#}"));
    assert_eq!(shout["metadata"]["name_match"], "1.000000", "{shout:#}");
    assert_eq!(depth(shout), 9, "{shout:#}");
    // Not its namesake: no other `shout` is written as `strings.shout`.
    let v = fx.json(&["how does text.shout differ from retrying calls with exponential backoff between attempts"]);
    for f in fragments(&v).iter().filter(|f| f["uko_node"].as_str().unwrap().ends_with("#shout")) {
        assert_eq!(f["metadata"]["name_match"], "0.300000", "{f:#}");
    }
}

#[test]
fn a_look_up_of_a_qualified_name_gets_the_definition_before_a_wrapper_calling_it() {
    // `Parser.run_effects` writes the qualified name in its body; the
    // definition holds `Runner` only as its class's name.
    let files: [(&str, &str); 2] = [
        (
            "src/runner.py",
            "class Runner:\n    @staticmethod\n    def run_effects(effects):\n        for effect in effects:\n            effect.apply()\n",
        ),
        (
            "src/parser.py",
            "from .runner import Runner\n\n\nclass Parser:\n    def run_effects(self, effects):\n        return Runner.run_effects(effects)\n",
        ),
    ];
    let (_tmp, engine, repo) = engine_over(&files);
    let v = serde_json::to_value(engine.query(&options(&repo, &["Runner.run_effects"])).unwrap().report()).unwrap();
    let find = |suffix: &str| {
        let f = fragments(&v).iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(suffix));
        f.unwrap_or_else(|| panic!("no {suffix}: {v:#}")).clone()
    };
    let (definition, wrapper) = (find("/src/runner.py#Runner.run_effects"), find("/src/parser.py#Parser.run_effects"));
    // The look-up names the definition by its class too: every word met.
    let terms = definition["metadata"]["terms"].as_str().unwrap();
    let (met, of) = terms.split_once('/').unwrap();
    assert_eq!(met, of, "{definition:#}");
    let score = |f: &serde_json::Value| f["relevance_score"].as_f64().unwrap();
    assert!(score(&definition) > score(&wrapper), "{v:#}");
}

#[test]
fn tests_weigh_their_role_before_the_candidates_a_budget_allows_are_drawn() {
    // The tests repeat the question's words more often than the code they
    // test.
    let files: [(&str, &str); 3] = [
        (
            "src/settings.py",
            "def load_settings(text):\n    \"\"\"Read configuration text into settings.\"\"\"\n    return dict(parse_line(line) for line in text.splitlines())\n\n\ndef parse_line(line):\n    \"\"\"One line of configuration text as a setting.\"\"\"\n    return tuple(line.split('='))\n",
        ),
        (
            "tests/test_settings.py",
            "def test_load_settings_reads_configuration_text():\n    \"\"\"Configuration text becomes settings: read configuration text into settings.\"\"\"\n    assert load_settings('a=b') == {'a': 'b'}\n",
        ),
        (
            "tests/test_more_settings.py",
            "def test_settings_from_configuration_text():\n    \"\"\"Read configuration text into settings, configuration text again.\"\"\"\n    assert load_settings('') == {}\n",
        ),
    ];
    let (_tmp, engine, repo) = engine_over(&files);
    let args = ["read configuration text into settings", "--strategy", "arce"];
    let v = serde_json::to_value(engine.query(&options(&repo, &args)).unwrap().report()).unwrap();
    // The tests match the words better, but weigh a test's prior (0.4):
    // the code leads the strategy's own evidence, which the ranker reads.
    let evidence = |suffix: &str| {
        let f = fragments(&v).iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(suffix));
        let f = f.unwrap_or_else(|| panic!("no {suffix}: {v:#}"));
        f["metadata"]["evidence"].as_str().unwrap().parse::<f64>().unwrap()
    };
    assert_eq!(evidence("/src/settings.py#load_settings"), 1.0, "{v:#}");
    assert!(evidence("/tests/test_settings.py#test_load_settings_reads_configuration_text") < 0.6, "{v:#}");
}

#[test]
fn an_older_copy_of_the_code_weighs_less_than_the_current_one() {
    // The package keeps its previous major version inside it (`pkg/v1/`),
    // whose copy of the function matches the question's words better.
    let files: [(&str, &str); 3] = [
        (
            "pkg/settings.py",
            "def load_settings(text):\n    \"\"\"Read configuration text into settings.\"\"\"\n    return dict(line.split('=') for line in text.splitlines())\n",
        ),
        (
            "pkg/v1/settings.py",
            "def load_settings(text):\n    \"\"\"Read configuration text into settings: configuration text read into settings.\"\"\"\n    return dict(line.split('=') for line in text.splitlines())\n",
        ),
        ("pkg/main.py", "def main():\n    return 0\n"),
    ];
    let (_tmp, engine, repo) = engine_over(&files);
    let ask = |query: &str| {
        let args = [query, "--strategy", "arce"];
        serde_json::to_value(engine.query(&options(&repo, &args)).unwrap().report()).unwrap()
    };
    let evidence = |v: &serde_json::Value, suffix: &str| {
        let f = fragments(v).iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(suffix));
        let f = f.unwrap_or_else(|| panic!("no {suffix}: {v:#}"));
        f["metadata"]["evidence"].as_str().unwrap().parse::<f64>().unwrap()
    };
    let v = ask("read configuration text into settings");
    assert_eq!(evidence(&v, "/pkg/settings.py#load_settings"), 1.0, "{v:#}");
    assert!(evidence(&v, "/pkg/v1/settings.py#load_settings") < 0.5, "{v:#}");
    assert_eq!(source_path(best(&v)), "pkg/settings.py", "{v:#}");
    // A question that names the version asks for the old copy.
    let v = ask("read configuration text into settings in v1");
    assert_eq!(evidence(&v, "/pkg/v1/settings.py#load_settings"), 1.0, "{v:#}");
}

#[test]
fn temporal_archaeology_names_the_commit_that_matched() {
    let fx = Fixture::new();
    let v = fx.json(&["backoff between retries", "--strategy", "temporal-archaeology", "--temporal", "recent"]);
    let (id, subject) = &fx.commits[4];
    assert_eq!(subject, "Add exponential backoff between retries");
    // The file the commit changed leads (its function, which the graph walk
    // reached and the chunk ranker puts first, or the file itself), and the
    // file's fragment names the commit.
    assert_eq!(source_path(best(&v)), "net/retry.py", "{v:#}");
    let module = fragments(&v)
        .iter()
        .find(|f| source_path(f) == "net/retry.py" && f["metadata"]["kind"] == "module")
        .unwrap_or_else(|| panic!("the changed file is packed: {v:#}"));
    assert_eq!(module["metadata"]["evidence"], "1.000000", "{v:#}");
    let expected = format!("changed in 1 matching commit(s): {} {subject}", &id[..7]);
    assert_eq!(note(module), Some(expected.as_str()), "{v:#}");
    // Only that commit matches, and it touched only net/retry.py: its file
    // ranks first. Phase two also proposed its graph neighbours (the function it
    // contains, the import in net/http.py); net/http.py, known only through an
    // import, is represented by its file at structure depth (`ranked_files`
    // lists the files of the packed context).
    assert_eq!(files(&v), ["net/retry.py", "net/http.py"], "{v:#}");
    for f in fragments(&v) {
        match source_path(f) {
            "net/retry.py" => {}
            "net/http.py" => assert!(f["detail_depth"].as_u64().unwrap() <= 4, "{v:#}"),
            other => panic!("unexpected file {other}: {v:#}"),
        }
    }
    assert!(v["candidates"].as_u64().unwrap() > fragments(&v).len() as u64, "{v:#}");
    assert_eq!(v["backends"]["temporal"], "git history");
    // Phase two adds the file's neighbours at a discount; at depth 4 the file
    // carries no source, so its function is packed too.
    let shallow = fx.json(&["backoff between retries", "--strategy", "temporal-archaeology", "--depth", "4"]);
    assert_well_formed(&fx, &shallow, "temporal-archaeology");
    let retry: Vec<&Value> = fragments(&shallow).iter().filter(|f| source_path(f) == "net/retry.py").collect();
    assert_eq!(retry.len(), 2, "two fragments of net/retry.py: {shallow:#}");
    let by_kind = |kind: &str| *retry.iter().find(|f| f["metadata"]["kind"] == kind).expect(kind);
    let (file, function) = (by_kind("module"), by_kind("function"));
    assert_eq!(note(file), note(module));
    assert!(function["uko_node"].as_str().unwrap().ends_with("/net/retry.py#retry_with_backoff"), "{shallow:#}");
    assert_eq!(note(function), Some("next to a file the matching commits changed"));
    // Half of the file's score after one contains-hop (decay 0.6, weight 0.9):
    // the strategy's evidence (`relevance_score` is the final ranking score).
    let evidence: f64 = function["metadata"]["evidence"].as_str().unwrap().parse().unwrap();
    assert!((evidence - 0.5 * 0.6 * 0.9).abs() < 1e-6, "{evidence}");
    // `all` reads the whole history; here it is the same answer.
    let all = fx.json(&["backoff between retries", "--strategy", "temporal-archaeology", "--temporal", "all"]);
    assert_eq!(timeless(&all["fragments"]), timeless(&v["fragments"]));
}

#[test]
fn a_requested_depth_caps_every_fragment() {
    let fx = Fixture::new();
    let cases: [(&str, &[&str]); 5] = [
        ("simple-keyword", &["backoff"]),
        ("semantic-embedding", &["pause"]),
        ("breadth-depth-navigator", &["send request", "--focus", "run"]),
        ("arce", &["pause between attempts"]),
        ("temporal-archaeology", &["backoff between retries", "--temporal", "recent"]),
    ];
    for (strategy, args) in cases {
        let v = fx.json(&[args, &["--strategy", strategy, "--depth", "2"]].concat());
        assert_well_formed(&fx, &v, strategy);
        let depths: Vec<u64> = fragments(&v).iter().map(depth).collect();
        assert!(depths.iter().all(|d| *d <= 2), "{strategy}: {depths:?}");
        assert!(fragments(&v).iter().all(|f| !f["content"].as_str().unwrap().contains("```")), "no source at depth 2");
    }
}

#[test]
fn breadth_decides_how_far_the_navigator_walks() {
    let fx = Fixture::new();
    let navigate = |focus: &str, breadth: &str| {
        let v =
            fx.json(&["http client", "--strategy", "breadth-depth-navigator", "--focus", focus, "--breadth", breadth]);
        assert_well_formed(&fx, &v, "breadth-depth-navigator");
        v
    };
    // From the function `run`: its calls reach net/http.py in one hop, and
    // send_request's call reaches net/retry.py in the next.
    let one = navigate("run", "1");
    assert!(files(&one).contains(&"net/http.py"), "{one:#}");
    assert!(!files(&one).contains(&"net/retry.py"), "{one:#}");
    let two = navigate("run", "2");
    assert!(files(&two).contains(&"net/retry.py"), "{two:#}");
    assert!(!files(&two).contains(&"util/strings.py"), "nothing links to util/strings.py: {two:#}");
    // From the file app/main.py, the first hop is the file's own members (its
    // import and `run`), the second what they import and call, the third what
    // that calls.
    let file_one = navigate("app/main.py", "1");
    assert_eq!(files(&file_one), ["app/main.py"], "{file_one:#}");
    let file_two = navigate("app/main.py", "2");
    assert!(files(&file_two).contains(&"net/http.py") && !files(&file_two).contains(&"net/retry.py"), "{file_two:#}");
    let file_three = navigate("app/main.py", "3");
    assert!(files(&file_three).contains(&"net/retry.py"), "{file_three:#}");
    // Each fragment past the focus says how far it is.
    for f in fragments(&two) {
        let note = note(f);
        if f["uko_node"].as_str().unwrap().ends_with("/app/main.py#run") {
            assert_eq!(note, None, "the focus itself");
        } else {
            assert!(note.is_some_and(|n| n.ends_with("hop(s) from the focus")), "{f:#}");
        }
    }
}

/// Hops from the focus, read from a navigator fragment's note (none: the focus).
fn hops(f: &Value) -> u64 {
    note(f).map_or(0, |n| n.split_once(' ').unwrap().0.parse().unwrap())
}

#[test]
fn the_depth_gradient_gives_the_focus_the_most_detail() {
    let fx = Fixture::new();
    // The gradient is on by default; --no-depth-gradient turns it off.
    let args = ["send request", "--strategy", "breadth-depth-navigator", "--focus", "run", "--depth", "9"];
    let v = fx.json(&args);
    assert_well_formed(&fx, &v, "breadth-depth-navigator");
    let focus = best(&v);
    assert!(focus["uko_node"].as_str().unwrap().ends_with("/app/main.py#run"), "the focus scores best: {v:#}");
    assert_eq!(depth(focus), 9);
    let mut seen_hops = std::collections::BTreeSet::new();
    for f in fragments(&v) {
        // RetrievalQuery::depth_at: the requested depth at the focus, at most 4 one hop out, 2 beyond.
        let cap = match hops(f) {
            0 => 9,
            1 => 4,
            _ => 2,
        };
        assert!(depth(f) <= cap, "{} hop(s) at depth {}: {f:#}", hops(f), depth(f));
        seen_hops.insert(hops(f));
    }
    assert!(seen_hops.contains(&1) && seen_hops.contains(&2), "the walk reached two hops: {v:#}");
    // Without the gradient, nodes one hop out keep their source (a class
    // whose methods are packed stays at signatures: its source would repeat them).
    let flat = fx.json(&[&args[..], &["--no-depth-gradient"]].concat());
    assert_well_formed(&fx, &flat, "breadth-depth-navigator");
    assert!(fragments(&flat).iter().any(|f| hops(f) == 1 && depth(f) == 9), "{flat:#}");
    let graded = fragments(&v).iter().find(|f| f["uko_node"].as_str().unwrap().ends_with("#HttpClient")).unwrap();
    assert_eq!((hops(graded), depth(graded)), (1, 4), "{v:#}");
}

#[test]
fn without_a_model_vector_strategies_fall_back_and_say_why() {
    let fx = Fixture::new();
    let arce = fx.json_without_model(&["pause between attempts", "--strategy", "arce"]);
    assert_eq!(arce["requested_strategy"], "arce");
    assert_eq!(arce["strategy"], "breadth-depth-navigator", "{arce:#}");
    let steps = arce["fallbacks"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{arce:#}");
    assert_eq!(steps[0]["strategy"], "arce");
    let reason = steps[0]["reason"].as_str().unwrap();
    assert!(reason.contains("vector") && reason.contains("no embedding model"), "{reason}");
    assert!(reason.contains(&fx.no_model.display().to_string()), "the reason names where it looked: {reason}");
    assert!(!fragments(&arce).is_empty());
    assert!(fragments(&arce).iter().all(|f| strategy_of(f) == "breadth-depth-navigator"), "{arce:#}");
    assert!(arce["backends"]["vector"].as_str().unwrap().starts_with("unavailable: "), "{arce:#}");

    let semantic = fx.json_without_model(&["backoff", "--strategy", "semantic-embedding"]);
    assert_eq!(semantic["strategy"], "simple-keyword", "{semantic:#}");
    let steps = semantic["fallbacks"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{semantic:#}");
    assert_eq!(steps[0]["strategy"], "semantic-embedding");
    assert!(steps[0]["reason"].as_str().unwrap().contains("vector"), "{semantic:#}");
    assert_eq!(files(&semantic)[0], "net/retry.py");

    // Strategies that need no vectors run as asked.
    for strategy in ["simple-keyword", "breadth-depth-navigator", "temporal-archaeology"] {
        let v = fx.json_without_model(&["backoff between retries", "--strategy", strategy, "--temporal", "recent"]);
        assert_eq!(v["strategy"], strategy, "{v:#}");
        assert_eq!(v["fallbacks"], serde_json::json!([]));
    }
}

#[test]
fn temporal_archaeology_outside_git_falls_back_and_says_why() {
    let fx = Fixture::without_git();
    let v = fx.json(&["backoff between retries", "--strategy", "temporal-archaeology", "--temporal", "recent"]);
    assert_eq!(v["requested_strategy"], "temporal-archaeology");
    // Off the degradation path, so the walk starts at its top.
    assert_eq!(v["strategy"], "arce", "{v:#}");
    let steps = v["fallbacks"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{v:#}");
    assert_eq!(steps[0]["strategy"], "temporal-archaeology");
    let reason = steps[0]["reason"].as_str().unwrap();
    assert!(reason.contains("temporal") && reason.contains("not in a git repository"), "{reason}");
    assert!(v["backends"]["temporal"].as_str().unwrap().starts_with("unavailable"), "{v:#}");
    assert_eq!(files(&v)[0], "net/retry.py");
    // Without a model as well, arce is passed over too.
    let bare = fx.json_without_model(&["backoff", "--strategy", "temporal-archaeology"]);
    let passed: Vec<&str> =
        bare["fallbacks"].as_array().unwrap().iter().map(|s| s["strategy"].as_str().unwrap()).collect();
    assert_eq!(passed, ["temporal-archaeology", "arce"], "{bare:#}");
    assert_eq!(bare["strategy"], "breadth-depth-navigator");
}

#[test]
fn plan_decision_context_without_a_plan_falls_back() {
    let fx = Fixture::new();
    let v = fx.json(&["backoff", "--strategy", "plan-decision-context"]);
    assert_eq!(v["requested_strategy"], "plan-decision-context");
    assert_eq!(v["strategy"], "arce", "{v:#}");
    assert_eq!(
        v["fallbacks"],
        serde_json::json!([{ "strategy": "plan-decision-context", "reason": "cannot handle this request" }])
    );
    assert_eq!(files(&v)[0], "net/retry.py");
    // A plan that does not exist is bad input.
    let error = fx.query(&fx.model, &["backoff", "--strategy", "plan-decision-context", "--plan", "no-such-plan"]);
    let error = error.unwrap_err();
    assert!(matches!(&error, EngineError::PlanNotFound(id) if id == "no-such-plan"), "{error}");
}

#[test]
fn search_indexes_follow_changes_file_by_file() {
    let fx = Fixture::new();
    let first = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    let file_count = HISTORY.iter().map(|(path, _, _)| *path).collect::<std::collections::BTreeSet<_>>().len() as u64;
    assert_eq!(first["sync"]["files_indexed"], file_count, "{first:#}");
    let all_vectors = first["sync"]["vectors_indexed"].as_u64().unwrap();
    assert!(all_vectors > file_count, "every file and its functions are embedded: {first:#}");

    // Nothing changed: nothing is read again.
    let again = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    assert_eq!(again["sync"]["files_indexed"], 0);
    assert_eq!(again["sync"]["vectors_indexed"], 0);

    // One file changed: only its nodes are indexed and embedded again, and the
    // new function is found by meaning at once.
    let path = "util/strings.py";
    let text = format!("{}\ndef wait_a_little():\n    \"\"\"Sleep before the next try.\"\"\"\n", fx.read(path));
    std::fs::write(fx.repo.join(path), text).unwrap();
    let changed = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    assert_eq!(changed["sync"]["files_indexed"], 1, "{changed:#}");
    let re_embedded = changed["sync"]["vectors_indexed"].as_u64().unwrap();
    assert!(re_embedded >= 2 && re_embedded < all_vectors, "{changed:#}");
    assert!(
        fragments(&changed).iter().any(|f| f["uko_node"].as_str().unwrap().ends_with("#wait_a_little")),
        "{changed:#}"
    );

    // A deleted file leaves both indexes.
    std::fs::remove_file(fx.repo.join(path)).unwrap();
    let removed = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    assert_eq!(removed["sync"]["files_removed"], 1, "{removed:#}");
    assert!(files(&removed).iter().all(|f| *f != path), "{removed:#}");
    let keyword = fx.json(&["wait_a_little", "--strategy", "simple-keyword"]);
    assert!(files(&keyword).iter().all(|f| *f != path), "{keyword:#}");

    // Search indexes lost on disk are rebuilt, though the file list is the one
    // they were last brought up to date with.
    std::fs::remove_dir_all(fx.home.join("search")).unwrap();
    let rebuilt = fx.json(&["pause", "--strategy", "semantic-embedding"]);
    assert_eq!(rebuilt["sync"]["files_indexed"], file_count - 1, "{rebuilt:#}");
    assert!(rebuilt["sync"]["vectors_indexed"].as_u64().unwrap() > 0, "{rebuilt:#}");
}
