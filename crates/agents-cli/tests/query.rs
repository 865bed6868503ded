//! `agents query` through the real binary: the budget is a hard ceiling on
//! what is printed, the best match comes first, bad input exits 2.

use std::path::{Path, PathBuf};
use std::process::Output;

use agents_core::tokens::{TokenCounter, Tokenizer};
use serde_json::Value;

mod common;

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let common::Dirs { tmp: dir, home, repo, .. } = common::dirs();
        let write = |rel: &str, text: &str| {
            let p = repo.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "billing/invoice.py",
            "\"\"\"Invoices and their totals.\"\"\"\n\n\nclass Invoice:\n    \"\"\"A bill sent to a customer.\"\"\"\n\n    def total_amount(self):\n        \"\"\"Sum of the line items, with tax.\"\"\"\n        return sum(item.price for item in self.items) * 1.2\n\n    def send_reminder(self, days_late):\n        \"\"\"Email the customer about a late payment.\"\"\"\n        return f\"reminder after {days_late} days\"\n",
        );
        write(
            "shipping/parcel.py",
            "class Parcel:\n    \"\"\"A box on its way.\"\"\"\n\n    def weight(self):\n        return 3\n",
        );
        for i in 0..30 {
            write(
                &format!("misc/module_{i:02}.py"),
                &format!(
                    "def helper_{i}(value):\n    \"\"\"Unrelated helper number {i} that formats a value.\"\"\"\n    return str(value) * {i}\n"
                ),
            );
        }
        let mut ledger = String::from("\"\"\"The ledger: every posting of every account.\"\"\"\n\n");
        for i in 0..120 {
            ledger.push_str(&format!(
                "def post_entry_{i}(account, amount):\n    return account.balance + amount * {i}\n\n"
            ));
        }
        write("billing/ledger.py", &ledger);
        write("README.md", "# Shop\n\nInvoices, parcels and helpers.\n");
        Fixture { _dir: dir, home, repo }
    }

    fn query(&self, args: &[&str]) -> Output {
        common::agents(&self.home).arg("query").args(args).arg(&self.repo).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.query(&all);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }
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

fn count(text: &[u8]) -> usize {
    Tokenizer::default().count(&String::from_utf8_lossy(text))
}

#[test]
fn the_best_match_comes_first_with_provenance() {
    let fx = Fixture::new();
    let v = fx.json(&["late payment reminder", "--max-tokens", "2000"]);
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
    let again = fx.json(&["late payment reminder", "--max-tokens", "2000"]);
    assert_eq!(again["sync"]["files_indexed"], 0);
    assert_eq!(timeless(&again["fragments"]), timeless(&v["fragments"]), "identical inputs, identical output");
}

#[test]
fn the_printed_context_never_exceeds_the_budget() {
    let fx = Fixture::new();
    for budget in ["500", "700", "1000", "1500", "3000", "8000"] {
        let out = fx.query(&["helper value invoice parcel", "--max-tokens", budget]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let budget: usize = budget.parse().unwrap();
        assert!(count(&out.stdout) <= budget, "{budget}: printed {} tokens", count(&out.stdout));
        let v = fx.json(&["helper value invoice parcel", "--max-tokens", &budget.to_string()]);
        assert_eq!(v["budget"]["available_tokens"], budget as u64, "{v:#}");
        // The JSON reports what the Markdown printed: preamble and fragments.
        assert_eq!(v["rendered_tokens"].as_u64().unwrap() as usize, count(&out.stdout), "{budget}");
        assert!(v["is_within_budget"].as_bool().unwrap(), "{v:#}");
        let total = v["total_tokens"].as_u64().unwrap() as usize;
        assert!(total <= budget, "{budget}: {total}");
        let sum: u64 = v["fragments"].as_array().unwrap().iter().map(|f| f["token_count"].as_u64().unwrap()).sum();
        assert_eq!(sum as usize, total);
    }
}

#[test]
fn every_format_keeps_the_hard_budget_and_reports_what_it_printed() {
    let fx = Fixture::new();
    for budget in ["500", "1000", "3000"] {
        for format in ["md", "xml", "json"] {
            let args = ["helper value invoice parcel ledger", "--max-tokens", budget, "--format", format];
            let out = fx.query(&args);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let printed = count(&out.stdout);
            let budget: usize = budget.parse().unwrap();
            assert!(printed <= budget, "{format} at {budget}: printed {printed} tokens");
            // The run's report counts the text in the format it went out in.
            let v = fx.json(&args);
            assert_eq!(v["rendered_tokens"].as_u64().unwrap() as usize, printed, "{format} at {budget}");
            assert!(v["is_within_budget"].as_bool().unwrap(), "{v:#}");
            assert_eq!(v["remaining_tokens"].as_u64().unwrap() as usize, budget - printed, "{format} at {budget}");
            for f in v["fragments"].as_array().unwrap() {
                let content = f["content"].as_str().unwrap();
                assert_eq!(f["token_count"].as_u64().unwrap() as usize, count(content.as_bytes()), "{f:#}");
            }
            if format == "json" {
                let delivered: Value = serde_json::from_slice(&out.stdout).unwrap();
                assert_eq!(delivered["rendered_tokens"].as_u64().unwrap() as usize, printed);
                assert!(delivered["fragments"].as_array().is_some_and(|f| !f.is_empty()), "{delivered:#}");
            }
        }
    }
}

#[test]
fn language_levels_work_in_query_depth_as_in_uko_show() {
    let fx = Fixture::new();
    let requested = |depth: &str| -> Vec<String> {
        let v = fx.json(&["late payment reminder", "--depth", depth, "--no-depth-gradient", "--max-tokens", "2000"]);
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
    let out = fx.query(&["late payment reminder", "--depth", "NOPE_LEVEL"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NOPE_LEVEL") && stderr.contains("DOCSTRINGS"), "{stderr}");
}

#[test]
fn an_unknown_depth_level_is_refused_before_anything_is_indexed() {
    let fx = Fixture::new();
    let out = fx.query(&["late payment reminder", "--depth", "NOPE_LEVEL"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NOPE_LEVEL"));
    let db = fx.home.join("agents.db");
    let resources: i64 = if db.exists() {
        rusqlite::Connection::open(&db).unwrap().query_row("SELECT COUNT(*) FROM resources", [], |r| r.get(0)).unwrap()
    } else {
        0
    };
    assert_eq!(resources, 0, "nothing was indexed");
}

#[test]
fn a_module_at_signatures_shows_its_classes_method_signatures() {
    let fx = Fixture::new();
    let args = ["invoice reminder", "--type", "module", "--under", "billing/invoice.py", "--no-depth-gradient"];
    let v = fx.json(&[&args[..], &["--depth", "SIGNATURES", "--max-tokens", "2000"]].concat());
    let module = &v["fragments"][0];
    assert_eq!(module["detail_depth"], 4, "{v:#}");
    let content = module["content"].as_str().unwrap();
    assert!(content.contains("  class Invoice"), "{content}");
    assert!(
        content.contains("    def total_amount(self)") && content.contains("    def send_reminder(self, days_late)"),
        "the class's methods, under it: {content}"
    );
}

#[test]
fn the_ranking_strategy_is_a_request_field_and_a_flag() {
    let fx = Fixture::new();
    // Every file last changed long ago but the parcel module, changed now.
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    for entry in walk(&fx.repo) {
        std::fs::File::options().write(true).open(&entry).unwrap().set_modified(old).unwrap();
    }
    let parcel = fx.repo.join("shipping/parcel.py");
    std::fs::File::options().write(true).open(&parcel).unwrap().set_modified(std::time::SystemTime::now()).unwrap();
    let first = |v: &Value| v["fragments"][0]["provenance"]["source_path"].as_str().unwrap().to_owned();
    let args = ["late payment reminder weight", "--max-tokens", "3000"];
    let relevance = fx.json(&args);
    assert_eq!(first(&relevance), "billing/invoice.py", "{relevance:#}");
    // Newest change first: the parcel module leads.
    let recency = fx.json(&[&args[..], &["--ranking", "recency"]].concat());
    assert_eq!(first(&recency), "shipping/parcel.py", "{recency:#}");
    // The same from a request file.
    let file = fx._dir.path().join("request.json");
    std::fs::write(&file, r#"{"query": "late payment reminder weight", "ranking": "recency", "max_tokens": 3000}"#)
        .unwrap();
    let from_file = fx.json(&["--request", file.to_str().unwrap()]);
    assert_eq!(first(&from_file), "shipping/parcel.py", "{from_file:#}");
    // Tiered: code is warm, so the relevance order.
    let tiered = fx.json(&[&args[..], &["--ranking", "tiered"]].concat());
    assert_eq!(first(&tiered), "billing/invoice.py", "{tiered:#}");
    let out = fx.query(&["late payment", "--ranking", "alphabetical"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("alphabetical") && stderr.contains("relevance, recency or tiered"), "{stderr}");
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
fn tight_budgets_fall_back_to_shallower_depths() {
    let fx = Fixture::new();
    let depths = |v: &Value| -> Vec<u64> {
        v["fragments"].as_array().unwrap().iter().map(|f| f["detail_depth"].as_u64().unwrap()).collect()
    };
    // The whole ledger module is far more than 500 tokens: it comes at a
    // shallower depth instead of not at all.
    let args = ["ledger posting account", "--type", "module", "--under", "billing/ledger.py"];
    let roomy = fx.json(&[&args[..], &["--max-tokens", "20000"]].concat());
    let tight = fx.json(&[&args[..], &["--max-tokens", "500"]].concat());
    assert_eq!(depths(&roomy), [9]);
    assert_eq!(tight["fragments"].as_array().unwrap().len(), 1, "{tight:#}");
    assert!([4, 2, 0].contains(&depths(&tight)[0]), "{:?}", depths(&tight));
    assert!(tight["total_tokens"].as_u64().unwrap() <= 500);
    // A named depth is honoured.
    let sigs = fx.json(&["invoice total amount tax", "--depth", "SIGNATURES"]);
    assert!(depths(&sigs).iter().all(|d| *d <= 4), "{:?}", depths(&sigs));
}

#[test]
fn no_source_is_packed_twice() {
    let fx = Fixture::new();
    let v = fx.json(&["invoice total amount tax reminder", "--max-tokens", "8000"]);
    let fragments = v["fragments"].as_array().unwrap();
    let with_source: Vec<&str> = fragments
        .iter()
        .filter(|f| f["detail_depth"].as_u64().unwrap() >= 5)
        .map(|f| f["uko_node"].as_str().unwrap())
        .collect();
    for a in &with_source {
        for b in &with_source {
            let nested = b.len() > a.len() && b.starts_with(a) && matches!(&b[a.len()..a.len() + 1], "#" | ".");
            assert!(!nested, "{b} is inside {a}, both with source");
        }
    }
}

#[test]
fn concurrent_queries_take_turns_and_agree() {
    let fx = Fixture::new();
    let spawn = || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agents"));
        cmd.env("AGENTS_HOME", &fx.home)
            .env_remove("AGENTS_LOG")
            .args(["--json", "query", "late payment reminder"])
            .arg(&fx.repo)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        cmd.spawn().unwrap()
    };
    // From an empty home: they race to create the store, index, and build the text index.
    let children: Vec<_> = (0..3).map(|_| spawn()).collect();
    let outputs: Vec<Output> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let mut fragments = Vec::new();
    for out in &outputs {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        fragments.push(timeless(&v["fragments"]));
    }
    assert!(fragments.windows(2).all(|w| w[0] == w[1]), "every query sees the same context");
}

#[test]
fn filters_restrict_what_is_searched() {
    let fx = Fixture::new();
    let v = fx.json(&["helper value", "--under", "misc/", "--type", "function"]);
    let fragments = v["fragments"].as_array().unwrap();
    assert!(!fragments.is_empty());
    assert!(fragments.iter().all(|f| f["provenance"]["source_path"].as_str().unwrap().starts_with("misc/")), "{v:#}");
    assert!(fragments.iter().all(|f| f["metadata"]["kind"] == "function"), "{v:#}");
}

#[test]
fn bad_input_exits_2_and_changes_nothing() {
    let fx = Fixture::new();
    for (args, needle) in [
        (vec!["anything", "--max-tokens", "100"], "min-useful-budget"),
        (vec!["((( )))"], "the query is empty"),
        (vec!["x", "--depth", "DEEPEST"], "--depth"),
    ] {
        let out = fx.query(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: ") && err.contains(needle), "{args:?}: {err}");
    }
    let missing = common::agents(&fx.home).args(["query", "x", "/definitely/not/here"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(!Path::new(&fx.home).join("search").exists() || fx.home.join("agents.db").exists());
}

#[test]
fn a_request_file_carries_every_crp_field_and_flags_override_it() {
    let fx = Fixture::new();
    let file = fx.home.join("request.json");
    std::fs::create_dir_all(&fx.home).unwrap();
    std::fs::write(
        &file,
        r#"{"query": "late payment reminder", "max_tokens": 1500, "depth": "SIGNATURES",
            "uko_types": ["method"], "breadth": 1, "priority": 0.9, "purpose": "fix reminders"}"#,
    )
    .unwrap();
    let v = fx.json(&["--request", file.to_str().unwrap()]);
    assert_eq!(v["budget"]["available_tokens"], 1500, "{v:#}");
    assert_eq!(v["query"], "late payment reminder");
    let fragments = v["fragments"].as_array().unwrap();
    assert!(!fragments.is_empty(), "{v:#}");
    assert!(fragments.iter().all(|f| f["detail_depth"].as_u64().unwrap() <= 4), "{v:#}");
    assert!(fragments.iter().all(|f| f["metadata"]["kind"] == "method"), "{v:#}");
    // A flag given too wins over the file.
    let v = fx.json(&["--request", file.to_str().unwrap(), "--max-tokens", "900"]);
    assert_eq!(v["budget"]["available_tokens"], 900);
    // A bad file names itself, the line and the field; nothing runs.
    std::fs::write(&file, "{\n  \"query\": \"x\",\n  \"bredth\": 2\n}").unwrap();
    let out = fx.query(&["--request", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let line = common::assert_one_error_line(&out);
    assert!(line.contains("request.json: line 3") && line.contains("bredth"), "{line}");
}

#[test]
fn xml_output_and_the_explained_trace() {
    let fx = Fixture::new();
    let out = fx.query(&["--format", "xml", "--explain", "late payment reminder"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let xml = common::stdout(&out);
    assert!(xml.starts_with("<context plan_id=\"adhoc\""), "{xml}");
    assert!(xml.contains("path=\"billing/invoice.py\"") && xml.trim_end().ends_with("</context>"), "{xml}");
    let trace = common::stderr(&out);
    // The ten components, by their `context.pipeline.*` keys.
    for (component, _) in agents_core::config::PipelineConfig::default().components() {
        assert!(trace.contains(component), "{component} missing from the trace:\n{trace}");
    }
}

#[test]
fn a_model_sizes_the_budget_from_its_window() {
    let fx = Fixture::new();
    // gpt-4: 8,192 tokens, less the 4,096 kept for the response.
    let v = fx.json(&["--model", "gpt-4", "late payment reminder"]);
    assert_eq!(v["budget"]["available_tokens"], 4096, "{v:#}");
    assert_eq!(v["budget_derivation"]["context_window"], 8192);
    let v = fx.json(&["--model", "gpt-4", "--max-tokens", "1000", "late payment reminder"]);
    assert_eq!(v["budget"]["available_tokens"], 1000);
    let out = fx.query(&["--model", "gpt-0", "late payment reminder"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::assert_one_error_line(&out).contains("unknown model \"gpt-0\""));
}
