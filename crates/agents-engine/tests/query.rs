//! `Engine::query`, the use case behind `agents query` and the MCP
//! `request_context`, called directly: the best match comes first, depths
//! and filters are honoured, the project's policy is enforced, and a session
//! spends what was delivered. (What only the binary can show, the printed
//! text against the budget, exit codes and concurrent processes, is tested
//! in `agents-cli/tests/query.rs`.)

use std::path::{Path, PathBuf};

use agents_acms::pipeline::PipelineError;
use agents_core::config::ResolvedConfig;
use agents_core::policy::{ContextView, Phase, ProjectContextPolicy};
use agents_core::project_context::ProjectContextSettings;
use agents_core::request::{ContextRequest, Depth, RankingStrategy};
use agents_engine::session::SessionBudget;
use agents_engine::{Engine, EngineError, Home, QueryOptions, QueryRun, RequestOverrides};
use serde_json::Value;

#[path = "common/shop_repo.rs"]
mod shop_repo;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    engine: Engine,
}

impl Fixture {
    /// The repository of `agents-cli/tests/query.rs`: an invoice module, a
    /// parcel module, 30 unrelated helpers, a long ledger and a README.
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, repo) = (root.join("home"), root.join("repo"));
        shop_repo::write(&repo);
        let engine = Engine::open(Home::new(&home), ResolvedConfig::default()).unwrap();
        Fixture { _dir: dir, home, repo, engine }
    }

    /// Options for `text` over the fixture's repository.
    fn options(&self, text: &str) -> QueryOptions {
        let mut options = QueryOptions::new(&self.repo);
        options.overrides.text = Some(text.to_owned());
        options
    }

    fn run(&self, options: &QueryOptions) -> QueryRun {
        self.engine.query(options).unwrap()
    }

    /// The run's report as `agents query --json` prints it.
    fn report(&self, options: &QueryOptions) -> Value {
        serde_json::to_value(self.run(options).report()).unwrap()
    }
}

fn with(options: QueryOptions, f: impl FnOnce(&mut RequestOverrides)) -> QueryOptions {
    let mut options = options;
    f(&mut options.overrides);
    options
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

#[test]
fn the_best_match_comes_first_with_provenance() {
    let fx = Fixture::new();
    let options = with(fx.options("late payment reminder"), |o| o.max_tokens = Some(2000));
    let v = fx.report(&options);
    // Fragments come in reading order (files by their best score, symbols in
    // source order): the best match's file comes first, and the best match is
    // the fragment with the top score.
    let fragments = v["fragments"].as_array().unwrap();
    assert_eq!(v["ranked_files"][0], "billing/invoice.py", "{v:#}");
    assert_eq!(fragments[0]["provenance"]["source_path"], "billing/invoice.py", "{v:#}");
    let score = |f: &Value| f["relevance_score"].as_f64().unwrap();
    let best = fragments.iter().max_by(|a, b| score(a).total_cmp(&score(b))).unwrap();
    assert_eq!(best["provenance"]["source_path"], "billing/invoice.py", "{v:#}");
    assert!(best["uko_node"].as_str().unwrap().ends_with("#Invoice.send_reminder"), "{v:#}");
    assert_eq!(best["relevance_score"], 1.0);
    assert_eq!(fragments.iter().filter(|f| score(f) == 1.0).count(), 1, "one best match: {v:#}");
    // The range slices back to the method.
    let range = best["provenance"]["source_range"].as_str().unwrap();
    let (start, _) = range.split_once('-').unwrap();
    let line: usize = start.split(':').next().unwrap().parse().unwrap();
    let text = std::fs::read_to_string(fx.repo.join("billing/invoice.py")).unwrap();
    assert!(text.lines().nth(line - 1).unwrap().trim_start().starts_with("def send_reminder"));
    assert_eq!(v["sync"]["files_indexed"], 34, "the first query indexes the text of every file");
    // The second query reuses the text index.
    let again = fx.report(&options);
    assert_eq!(again["sync"]["files_indexed"], 0);
    assert_eq!(timeless(&again["fragments"]), timeless(&v["fragments"]), "identical inputs, identical output");
}

#[test]
fn language_levels_work_in_query_depth_as_in_uko_show() {
    let fx = Fixture::new();
    let requested = |depth: &str| -> Vec<String> {
        let options = with(fx.options("late payment reminder"), |o| {
            o.depth = Some(depth.parse().unwrap());
            o.no_depth_gradient = true;
            o.max_tokens = Some(2000);
        });
        let v = fx.report(&options);
        let fragments = v["fragments"].as_array().unwrap();
        assert!(!fragments.is_empty(), "{v:#}");
        fragments.iter().map(|f| f["metadata"]["requested_depth"].as_str().unwrap().to_owned()).collect()
    };
    // The Python map's own level, in a Python repository.
    assert!(requested("DOCSTRINGS").iter().all(|d| d == "3"));
    assert!(requested("docstrings").iter().all(|d| d == "3"), "any case");
    // A level only another language's map names, as `uko show` resolves it.
    assert!(requested("IMPL_LISTING").iter().all(|d| d == "1"));
    assert!(requested("SIGNATURES").iter().all(|d| d == "4"));
}

#[test]
fn an_unknown_depth_level_is_refused_before_anything_is_indexed() {
    let fx = Fixture::new();
    let options = with(fx.options("late payment reminder"), |o| o.depth = Some("NOPE_LEVEL".parse().unwrap()));
    let error = fx.engine.query(&options).unwrap_err();
    assert!(matches!(error, EngineError::UnknownDepth { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("NOPE_LEVEL") && message.contains("DOCSTRINGS"), "{message}");
    assert!(fx.engine.store().resources().unwrap().is_empty(), "nothing was indexed");
}

#[test]
fn a_module_at_signatures_shows_its_classes_method_signatures() {
    let fx = Fixture::new();
    let mut options = with(fx.options("invoice reminder"), |o| {
        o.kinds = vec!["module".into()];
        o.no_depth_gradient = true;
        o.depth = Some("SIGNATURES".parse().unwrap());
        o.max_tokens = Some(2000);
    });
    options.under = vec!["billing/invoice.py".into()];
    let v = fx.report(&options);
    let module = &v["fragments"][0];
    assert_eq!(module["detail_depth"], 4, "{v:#}");
    let content = module["content"].as_str().unwrap();
    assert!(content.contains("  class Invoice"), "{content}");
    assert!(
        content.contains("    def total_amount(self)") && content.contains("    def send_reminder(self, days_late)"),
        "the class's methods, under it: {content}"
    );
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

#[test]
fn the_ranking_strategy_is_a_request_field_and_an_override() {
    let fx = Fixture::new();
    // Every file last changed long ago but the parcel module, changed now.
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    for entry in walk(&fx.repo) {
        std::fs::File::options().write(true).open(&entry).unwrap().set_modified(old).unwrap();
    }
    let parcel = fx.repo.join("shipping/parcel.py");
    std::fs::File::options().write(true).open(&parcel).unwrap().set_modified(std::time::SystemTime::now()).unwrap();
    let first = |v: &Value| v["fragments"][0]["provenance"]["source_path"].as_str().unwrap().to_owned();
    let base = with(fx.options("late payment reminder weight"), |o| o.max_tokens = Some(3000));
    let relevance = fx.report(&base);
    assert_eq!(first(&relevance), "billing/invoice.py", "{relevance:#}");
    // Newest change first: the parcel module leads.
    let recency = fx.report(&with(base.clone(), |o| o.ranking = Some(RankingStrategy::Recency)));
    assert_eq!(first(&recency), "shipping/parcel.py", "{recency:#}");
    // The same from a whole request (a request file, a tool call).
    let mut from_request = QueryOptions::new(&fx.repo);
    from_request.request = Some(
        ContextRequest::builder()
            .query("late payment reminder weight")
            .ranking(RankingStrategy::Recency)
            .max_tokens(3000),
    );
    let from_request = fx.report(&from_request);
    assert_eq!(first(&from_request), "shipping/parcel.py", "{from_request:#}");
    // Tiered: code is warm, so the relevance order.
    let tiered = fx.report(&with(base, |o| o.ranking = Some(RankingStrategy::Tiered)));
    assert_eq!(first(&tiered), "billing/invoice.py", "{tiered:#}");
}

#[test]
fn tight_budgets_fall_back_to_shallower_depths() {
    let fx = Fixture::new();
    let depths = |v: &Value| -> Vec<u64> {
        v["fragments"].as_array().unwrap().iter().map(|f| f["detail_depth"].as_u64().unwrap()).collect()
    };
    // The whole ledger module is far more than 500 tokens: it comes at a
    // shallower depth instead of not at all.
    let ledger = |max_tokens: u64| {
        let mut options = with(fx.options("ledger posting account"), |o| {
            o.kinds = vec!["module".into()];
            o.max_tokens = Some(max_tokens);
        });
        options.under = vec!["billing/ledger.py".into()];
        fx.report(&options)
    };
    let roomy = ledger(20_000);
    let tight = ledger(500);
    assert_eq!(depths(&roomy), [9]);
    assert_eq!(tight["fragments"].as_array().unwrap().len(), 1, "{tight:#}");
    assert!([4, 2, 0].contains(&depths(&tight)[0]), "{:?}", depths(&tight));
    assert!(tight["total_tokens"].as_u64().unwrap() <= 500);
    // A named depth is honoured.
    let sigs = fx.report(&with(fx.options("invoice total amount tax"), |o| {
        o.depth = Some(Depth::named("SIGNATURES").unwrap());
    }));
    assert!(depths(&sigs).iter().all(|d| *d <= 4), "{:?}", depths(&sigs));
}

#[test]
fn no_source_is_packed_twice() {
    let fx = Fixture::new();
    let v = fx.report(&with(fx.options("invoice total amount tax reminder"), |o| o.max_tokens = Some(8000)));
    let fragments = v["fragments"].as_array().unwrap();
    let with_source: Vec<&serde_json::Value> =
        fragments.iter().filter(|f| f["detail_depth"].as_u64().unwrap() >= 5).collect();
    let mut around = 0;
    for outer in &with_source {
        for inner in &with_source {
            let (a, b) = (outer["uko_node"].as_str().unwrap(), inner["uko_node"].as_str().unwrap());
            let nested = b.len() > a.len() && b.starts_with(a) && matches!(&b[a.len()..a.len() + 1], "#" | ".");
            if !nested {
                continue;
            }
            // Only a container around its members holds one with source, and
            // it leaves the member's lines out, naming them.
            assert_eq!(outer["detail_depth"], 8, "{b} is inside {a}, both with source");
            let range = inner["provenance"]["source_range"].as_str().unwrap();
            let first = range.split(':').next().unwrap();
            let content = outer["content"].as_str().unwrap();
            assert!(content.contains(&format!(", lines {first}-")), "{a} repeats {b}: {content}");
            around += 1;
        }
    }
    // The billing module is small: it comes whole around the pieces of it
    // that rank best.
    assert!(around > 0, "{v:#}");
}

#[test]
fn filters_restrict_what_is_searched() {
    let fx = Fixture::new();
    let mut options = with(fx.options("helper value"), |o| o.kinds = vec!["function".into()]);
    options.under = vec!["misc/".into()];
    let v = fx.report(&options);
    let fragments = v["fragments"].as_array().unwrap();
    assert!(!fragments.is_empty());
    assert!(fragments.iter().all(|f| f["provenance"]["source_path"].as_str().unwrap().starts_with("misc/")), "{v:#}");
    assert!(fragments.iter().all(|f| f["metadata"]["kind"] == "function"), "{v:#}");
}

#[test]
fn a_model_sizes_the_budget_from_its_window() {
    let fx = Fixture::new();
    // gpt-4: 8,192 tokens, less the 4,096 kept for the response.
    let mut options = fx.options("late payment reminder");
    options.model = Some("gpt-4".into());
    let v = fx.report(&options);
    assert_eq!(v["budget"]["available_tokens"], 4096, "{v:#}");
    assert_eq!(v["budget_derivation"]["context_window"], 8192);
    let v = fx.report(&with(options.clone(), |o| o.max_tokens = Some(1000)));
    assert_eq!(v["budget"]["available_tokens"], 1000);
    options.model = Some("gpt-0".into());
    let error = fx.engine.query(&options).unwrap_err();
    assert!(matches!(error, EngineError::UnknownModel { .. }), "{error}");
}

#[test]
fn a_budget_below_the_minimum_and_an_empty_query_are_refused() {
    let fx = Fixture::new();
    let error = fx.engine.query(&with(fx.options("anything"), |o| o.max_tokens = Some(100))).unwrap_err();
    assert!(matches!(error, EngineError::Pipeline(PipelineError::BudgetTooSmall { budget: 100, .. })), "{error}");
    let error = fx.engine.query(&fx.options("((( )))")).unwrap_err();
    assert!(error.to_string().contains("the query is empty"), "{error}");
    assert!(fx.engine.store().resources().unwrap().is_empty(), "nothing was indexed");
}

#[test]
fn a_resource_the_phase_view_excludes_is_refused() {
    let fx = Fixture::new();
    let options = fx.options("late payment reminder");
    // The first query links the repository to a project named after it.
    let run = fx.run(&options);
    let project = run.outcome.project.clone();
    let execute = ContextView::builder().exclude_resources([run.outcome.resource.name.clone()]).build().unwrap();
    let policy = ProjectContextPolicy::new(&project.name).unwrap().with_view(Phase::Execute, execute);
    let settings = ProjectContextSettings::builder().build().unwrap();
    fx.engine.set_project_context(&project, &policy, &settings).unwrap();
    // The default phase still reads it; the execute phase may not.
    fx.run(&options);
    let mut execute = options;
    execute.phase = Phase::Execute;
    let error = fx.engine.query(&execute).unwrap_err();
    assert!(
        matches!(&error, EngineError::Pipeline(PipelineError::ResourceExcluded { phase, .. }) if phase == "execute"),
        "{error}"
    );
}

#[test]
fn a_dry_run_over_a_project_uses_its_first_resource() {
    let fx = Fixture::new();
    let run = fx.run(&fx.options("late payment reminder"));
    let mut simulate = QueryOptions::new(fx.home.join("nowhere"));
    simulate.project = Some(run.outcome.project.name.clone());
    simulate.overrides.text = Some("late payment reminder".into());
    let dry = fx.run(&simulate);
    assert_eq!(dry.outcome.resource.path, run.outcome.resource.path);
    let empty = fx.engine.projects().get_or_create("empty").unwrap();
    simulate.project = Some(empty.name);
    let error = fx.engine.query(&simulate).unwrap_err();
    assert!(matches!(error, EngineError::NoResource(_)), "{error}");
}

#[test]
fn a_session_spends_what_each_run_delivered() {
    let fx = Fixture::new();
    let session = SessionBudget::default();
    let options = with(fx.options("late payment reminder"), |o| o.max_tokens = Some(2000));
    let run = fx.run(&options);
    // Not sized yet: the first delivered run sizes it (8,000 without a model).
    fx.engine.record_run(&session, None, &run);
    let status = serde_json::to_value(fx.engine.session_budget(&session, None, None).unwrap()).unwrap();
    assert_eq!(status["available_tokens"], 8000, "{status:#}");
    assert_eq!(status["used_tokens"].as_u64().unwrap() as usize, run.assembly.rendered_tokens, "{status:#}");
    assert_eq!(status["requests"], 1);
    // Resizing keeps what was spent.
    let resized = serde_json::to_value(fx.engine.session_budget(&session, None, Some(3000)).unwrap()).unwrap();
    assert_eq!(resized["available_tokens"], 3000);
    assert_eq!(resized["used_tokens"], status["used_tokens"]);
    assert!(fx.engine.session_budget(&session, None, Some(0)).is_err(), "max_tokens 0 leaves no budget");
}

/// `files` written under a fresh repository, queried once with `text`: the
/// `--json` report.
fn query_tree(files: &[(&str, &str)], text: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (home, repo) = (root.join("home"), root.join("repo"));
    for (path, content) in files {
        let file = repo.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, content).unwrap();
    }
    let engine = Engine::open(Home::new(&home), ResolvedConfig::default()).unwrap();
    let mut options = QueryOptions::new(&repo);
    options.overrides.text = Some(text.to_owned());
    serde_json::to_value(engine.query(&options).unwrap().report()).unwrap()
}

#[test]
fn a_c_prototype_brings_its_definition_with_the_headers_words() {
    // The header documents the API; the source file defines it without a
    // comment. A question in the header's words gets the definition, whose
    // body is the answer, ahead of the one-line prototype.
    let files = [
        (
            "include/journal.h",
            "#ifndef JOURNAL_H\n#define JOURNAL_H\n\nstruct journal;\n\n\
             /* Write every pending record to the journal file and flush it to disk. */\n\
             int journal_sync(struct journal *j);\n\n\
             /* Open the journal kept at path, creating it when missing. */\n\
             struct journal *journal_open(const char *path);\n\n#endif\n",
        ),
        (
            "src/journal.c",
            "#include \"journal.h\"\n#include <stdio.h>\n\n\
             struct journal { FILE *fp; int n; char **rows; };\n\n\
             int journal_sync(struct journal *j) {\n    for (int i = 0; i < j->n; i++) {\n        \
             fputs(j->rows[i], j->fp);\n    }\n    j->n = 0;\n    return fflush(j->fp);\n}\n\n\
             struct journal *journal_open(const char *path) {\n    static struct journal one;\n    \
             one.fp = fopen(path, \"a\");\n    return one.fp ? &one : NULL;\n}\n",
        ),
        ("src/util.c", "int clamp(int v, int lo, int hi) {\n    return v < lo ? lo : v > hi ? hi : v;\n}\n"),
    ];
    let v = query_tree(&files, "write pending records to the journal and flush them to disk");
    let fragments = v["fragments"].as_array().unwrap();
    let score = |f: &Value| f["relevance_score"].as_f64().unwrap();
    let of = |uri_end: &str| fragments.iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(uri_end));
    let definition = of("src/journal.c#journal_sync").unwrap_or_else(|| panic!("no definition: {v:#}"));
    assert!(
        definition["metadata"]["note"].as_str().is_some_and(|n| n.contains("include/journal.h")),
        "the note names the header: {definition:#}"
    );
    assert_eq!(definition["detail_depth"], 9, "{definition:#}");
    assert!(definition["content"].as_str().unwrap().contains("fflush(j->fp)"), "{definition:#}");
    if let Some(prototype) = of("include/journal.h#journal_sync") {
        assert!(score(definition) > score(prototype), "{v:#}");
    }
    // The header, whose comments hold the question's words, stands nearly as
    // high as the source file: the two lead the answer, the definition among
    // its first two pieces.
    let files: Vec<&str> = v["ranked_files"].as_array().unwrap().iter().take(2).filter_map(Value::as_str).collect();
    assert!(files.contains(&"src/journal.c") && files.contains(&"include/journal.h"), "{v:#}");
    let mut by_score: Vec<&Value> = fragments.iter().collect();
    by_score.sort_by(|a, b| score(b).total_cmp(&score(a)));
    assert!(by_score.iter().take(2).any(|f| std::ptr::eq(*f, definition)), "{v:#}");
}

#[test]
fn an_interface_method_brings_its_one_implementation() {
    // Java: the interface documents the method, the class that implements
    // it holds the code under another symbol path.
    let files = [
        (
            "src/main/java/shop/Journal.java",
            "package shop;\n\npublic interface Journal {\n    \
             /** Write every pending record to the journal file and flush it to disk. */\n    \
             int sync();\n\n    /** How many records wait. */\n    int pending();\n}\n",
        ),
        (
            "src/main/java/shop/FileJournal.java",
            "package shop;\n\nimport java.io.Writer;\nimport java.util.List;\n\n\
             public class FileJournal implements Journal {\n    private Writer out;\n    private List<String> rows;\n\n    \
             public int sync() {\n        for (String row : rows) {\n            out.write(row);\n        }\n        \
             rows.clear();\n        out.flush();\n        return 0;\n    }\n\n    \
             public int pending() {\n        return rows.size();\n    }\n}\n",
        ),
    ];
    let v = query_tree(&files, "write pending records to the journal and flush them to disk");
    let fragments = v["fragments"].as_array().unwrap();
    let implementation = fragments
        .iter()
        .find(|f| f["uko_node"].as_str().unwrap().ends_with("FileJournal.java#FileJournal.sync"))
        .unwrap_or_else(|| panic!("no implementation: {v:#}"));
    assert!(
        implementation["metadata"]["note"].as_str().is_some_and(|n| n.contains("Journal.java")),
        "the note names the interface's file: {implementation:#}"
    );
    assert!(implementation["content"].as_str().unwrap().contains("out.flush()"), "{implementation:#}");
    assert!(
        !fragments.iter().any(|f| f["uko_node"].as_str().unwrap().ends_with("/Journal.java#Journal.sync")),
        "the declaration gave its place: {v:#}"
    );
}

#[test]
fn a_look_up_written_as_an_objects_member_brings_what_the_function_calls() {
    // Express hangs its functions on `res` in `lib/response.js`: the look-up
    // `res.download` names `download` (the file's stem written short), and
    // what it calls on `this` comes with it, past sixty functions elsewhere
    // that all say "res download".
    let fillers: String = (0..60)
        .map(|i| {
            format!(
                "function resDownloadVariant{i}(res) {{\n  // res download variant {i}\n  return res + {i};\n}}\n\n"
            )
        })
        .collect();
    let files = [
        (
            "lib/response.js",
            "var res = Object.create(null);\n\n\
             res.download = function download(path) {\n  var full = path + '/';\n  return this.sendFile(full);\n};\n\n\
             res.sendFile = function sendFile(path) {\n  return stream(path).pipe(out);\n};\n\n\
             module.exports = res;\n",
        ),
        ("lib/variants.js", fillers.as_str()),
    ];
    let v = query_tree(&files, "res.download");
    let fragments = v["fragments"].as_array().unwrap();
    let of = |uri_end: &str| fragments.iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(uri_end));
    let named = of("lib/response.js#download").unwrap_or_else(|| panic!("no named function: {v:#}"));
    // At full source its header leaves out what its own file holds (the
    // source shows `this.sendFile`), but the graph binds the call: the helper
    // comes as what `download` calls.
    assert_eq!(named["detail_depth"], 9, "{named:#}");
    let header = named["content"].as_str().unwrap().lines().take(3).collect::<Vec<_>>().join("\n");
    assert!(!header.contains("depends on"), "{header}");
    let helper = of("lib/response.js#sendFile").unwrap_or_else(|| panic!("no sendFile: {v:#}"));
    assert_eq!(helper["metadata"]["note"], "called by download", "{helper:#}");
}

#[test]
fn a_look_up_brings_the_helpers_the_named_function_calls() {
    // `fetch_page` calls two helpers whose names and text share nothing with
    // the look-up, in a file beside sixty functions that all say "fetch
    // page": no strategy proposes the helpers, the call does.
    let fillers: String = (0..60)
        .map(|i| {
            format!(
                "def fetch_page_variant_{i}(url):\n    \"\"\"Fetch page variant {i}.\"\"\"\n    return url * {i}\n\n"
            )
        })
        .collect();
    let files = [
        (
            "shop/pages.py",
            "def fetch_page(url):\n    \"\"\"Fetch the page at url.\"\"\"\n    raw = _pull(url)\n    return _tidy(raw)\n\n\n\
             def _tidy(raw):\n    return raw.strip().lower()\n\n\n\
             def _pull(url):\n    with open(url) as handle:\n        return handle.read()\n",
        ),
        ("shop/variants.py", fillers.as_str()),
    ];
    let v = query_tree(&files, "fetch_page");
    let fragments = v["fragments"].as_array().unwrap();
    let of = |uri_end: &str| fragments.iter().find(|f| f["uko_node"].as_str().unwrap().ends_with(uri_end));
    of("shop/pages.py#fetch_page").unwrap_or_else(|| panic!("no named function: {v:#}"));
    for helper in ["shop/pages.py#_tidy", "shop/pages.py#_pull"] {
        let f = of(helper).unwrap_or_else(|| panic!("no {helper}: {v:#}"));
        assert_eq!(f["metadata"]["note"], "called by fetch_page", "{f:#}");
    }
}
