//! `agents project context set/show`, end to end: views per phase and their
//! inheritance, ACMS settings, and bad values that change nothing.

mod common;

use std::path::Path;

use common::{agents, assert_one_error_line, dirs, json, ok};

/// A home with project `web`.
fn home_with_project() -> common::Dirs {
    let d = dirs();
    ok(&d.home, &["project", "create", "web"]);
    d
}

fn set(home: &Path, args: &[&str]) -> serde_json::Value {
    json(home, &[&["project", "context", "set", "web"], args].concat())
}

fn show(home: &Path) -> serde_json::Value {
    json(home, &["project", "context", "show", "web"])
}

#[test]
fn set_then_show_round_trips() {
    let d = home_with_project();
    let before = show(&d.home);
    assert_eq!(before["project"], "web");
    for phase in ["default", "strategize", "execute", "apply"] {
        assert_eq!(before["views"][phase]["source"], serde_json::Value::Null, "{phase} is unrestricted");
        assert_eq!(before["views"][phase]["view"]["include_paths"], serde_json::json!([]));
    }
    assert_eq!(
        before["settings"],
        serde_json::json!({
            "hot_max_tokens": 8000, "warm_max_decisions": 500, "cold_max_decisions": 5000, "strategies": [],
            "default_breadth": 2, "default_depth": null, "skeleton_ratio": null, "temporal_scope": "current",
            "auto_refresh": true
        })
    );

    #[rustfmt::skip]
    let set_out = set(&d.home, &[
        "--view", "strategize",
        "--include-resource", "core-*", "--exclude-resource", "core-legacy",
        "--include-path", "src", "--exclude-path", "src/generated/**", "--max-file-size", "1048576",
        "--hot-max-tokens", "4000", "--warm-max-decisions", "50", "--cold-max-decisions", "600",
        "--strategy", "arce", "--strategy", "simple-keyword", "--default-breadth", "0",
        "--default-depth", "signatures", "--skeleton-ratio", "0.5", "--temporal-scope", "recent",
        "--no-auto-refresh",
    ]);
    let shown = show(&d.home);
    assert_eq!(set_out, shown, "set prints what show prints");
    assert_eq!(shown["acms"]["tiers"]["hot_max_tokens"], 16000, "the engine's configuration, beside the project's");
    assert_eq!(shown["acms"]["pipeline"]["budget-packer"], "default");
    assert_eq!(
        shown["views"]["strategize"],
        serde_json::json!({"source": "strategize", "view": {
            "include_resources": ["core-*"], "exclude_resources": ["core-legacy"],
            "include_paths": ["src"], "exclude_paths": ["src/generated/**"],
            "max_file_size": 1048576, "max_total_size": null,
        }})
    );
    // Exclusions beat inclusions: the resolved view keeps both lists, and the
    // later phases see the same view, inherited.
    for phase in ["execute", "apply"] {
        assert_eq!(shown["views"][phase]["source"], "strategize");
        assert_eq!(shown["views"][phase]["view"], shown["views"]["strategize"]["view"]);
    }
    assert_eq!(shown["views"]["default"]["source"], serde_json::Value::Null, "default never inherits");
    assert_eq!(
        shown["settings"],
        serde_json::json!({
            "hot_max_tokens": 4000, "warm_max_decisions": 50, "cold_max_decisions": 600,
            "strategies": ["arce", "simple-keyword"], "default_breadth": 0, "default_depth": "SIGNATURES",
            "skeleton_ratio": 0.5, "temporal_scope": "recent", "auto_refresh": false
        })
    );
}

#[test]
fn phases_inherit_along_the_chain() {
    let d = home_with_project();
    set(&d.home, &["--exclude-path", "target"]);
    let execute = json(&d.home, &["project", "context", "show", "web", "--view", "execute"]);
    let views = execute["views"].as_object().unwrap();
    assert_eq!(views.keys().collect::<Vec<_>>(), ["execute"], "--view shows one phase");
    assert_eq!(views["execute"]["source"], "default");
    assert_eq!(views["execute"]["view"]["exclude_paths"], serde_json::json!(["target"]));

    set(&d.home, &["--view", "execute", "--include-path", "src"]);
    let shown = show(&d.home);
    let source = |phase: &str| shown["views"][phase]["source"].clone();
    assert_eq!(
        (source("strategize"), source("execute"), source("apply")),
        ("default".into(), "execute".into(), "execute".into())
    );
    assert_eq!(shown["views"]["apply"]["view"]["exclude_paths"], serde_json::json!([]), "a view replaces, not merges");

    let text = ok(&d.home, &["project", "context", "show", "web", "--view", "apply"]);
    assert!(text.contains("apply       from execute"), "{text}");

    set(&d.home, &["--view", "execute", "--clear-view"]);
    assert_eq!(show(&d.home)["views"]["apply"]["source"], "default");
}

#[test]
fn a_settings_update_keeps_the_other_settings_and_the_views() {
    let d = home_with_project();
    set(&d.home, &["--exclude-resource", "legacy", "--hot-max-tokens", "100", "--strategy", "arce"]);
    set(&d.home, &["--skeleton-ratio", "0.1", "--auto-refresh"]);
    let shown = show(&d.home);
    let settings = &shown["settings"];
    assert_eq!((settings["hot_max_tokens"].as_u64(), settings["skeleton_ratio"].as_f64()), (Some(100), Some(0.1)));
    assert_eq!(settings["strategies"], serde_json::json!(["arce"]));
    assert_eq!(settings["warm_max_decisions"], 500, "never set: the default");
    assert_eq!(shown["views"]["default"]["view"]["exclude_resources"], serde_json::json!(["legacy"]));

    set(&d.home, &["--no-auto-refresh"]);
    assert_eq!(show(&d.home)["settings"]["auto_refresh"], false);
    set(&d.home, &["--hot-max-tokens", "7"]);
    assert_eq!(show(&d.home)["settings"]["auto_refresh"], false, "untouched without the flag");
}

#[test]
fn bad_values_exit_2_name_the_flag_and_change_nothing() {
    let d = home_with_project();
    set(&d.home, &["--include-path", "src", "--hot-max-tokens", "100"]);
    let before = ok(&d.home, &["project", "context", "show", "web"]);
    for (args, flag) in [
        (&["--max-file-size", "0"][..], "--max-file-size"),
        (&["--max-total-size", "-5"], "--max-total-size"),
        (&["--view", "review", "--include-path", "docs"], "--view"),
        (&["--skeleton-ratio", "1.5"], "--skeleton-ratio"),
        (&["--strategy", "arce", "--strategy", "grep"], "--strategy"),
        (&["--hot-max-tokens", "0"], "--hot-max-tokens"),
        (&["--cold-max-decisions", "-1"], "--cold-max-decisions"),
        (&["--default-breadth", "-1"], "--default-breadth"),
        (&["--default-depth", "12"], "--default-depth"),
        (&["--temporal-scope", "yesterday"], "--temporal-scope"),
        (&["--include-path", "src/[a"], "--include-path"),
        (&["--exclude-resource", " "], "--exclude-resource"),
    ] {
        // A valid view and a valid setting ride along: neither may be written.
        let out = agents(&d.home)
            .args(["project", "context", "set", "web", "--exclude-path", "target", "--warm-max-decisions", "9"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = assert_one_error_line(&out);
        assert!(line.starts_with(&format!("error: {flag}: ")), "{args:?}: {line}");
    }
    let out = agents(&d.home).args(["project", "context", "set", "web", "--skeleton-ratio", "1.5"]).output().unwrap();
    assert!(assert_one_error_line(&out).contains("between 0.0 and 1.0, got 1.5"));
    assert_eq!(ok(&d.home, &["project", "context", "show", "web"]), before);

    for args in
        [&["project", "context", "set", "nope", "--hot-max-tokens", "5"][..], &["project", "context", "show", "nope"]]
    {
        let out = agents(&d.home).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(assert_one_error_line(&out).contains("project `nope` not found"));
    }
    let out = agents(&d.home).args(["project", "context", "show", "web", "--view", "review"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).contains("--view: unknown phase `review`"));
}

#[test]
fn an_unknown_default_depth_level_exits_2_and_a_language_level_is_stored() {
    let d = home_with_project();
    let before = show(&d.home);
    let out =
        agents(&d.home).args(["project", "context", "set", "web", "--default-depth", "NOPE_LEVEL"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line = assert_one_error_line(&out);
    assert!(line.starts_with("error: --default-depth: unknown detail level `NOPE_LEVEL`"), "{line}");
    assert!(line.contains("SIGNATURES") && line.contains("DOCSTRINGS"), "the known levels are named: {line}");
    assert_eq!(show(&d.home), before, "nothing was stored");
    // A level of a language's map (Python's DOCSTRINGS) is a known level.
    assert_eq!(set(&d.home, &["--default-depth", "docstrings"])["settings"]["default_depth"], "DOCSTRINGS");
}

/// How the project's default depth applies is tested on the engine
/// (`agents-engine/tests/project_context.rs`); here, that `--default-depth`
/// set by the command reaches `agents query`.
#[test]
fn the_projects_default_depth_is_the_depth_a_query_starts_from() {
    let d = linked_repo();
    let repo = d.repo.to_str().unwrap();
    set(&d.home, &["--default-depth", "MODULE_LISTING"]);
    let listed = json(&d.home, &["query", "send invoice reminder", repo]);
    let depths: Vec<u64> =
        listed["fragments"].as_array().unwrap().iter().map(|f| f["detail_depth"].as_u64().unwrap()).collect();
    assert!(!depths.is_empty() && depths.iter().all(|&d| d == 0), "{listed:#}");
}

#[test]
fn show_text() {
    let d = home_with_project();
    #[rustfmt::skip]
    set(&d.home, &[
        "--include-resource", "core-*", "--exclude-resource", "core-legacy", "--exclude-path", "target",
        "--max-total-size", "200000", "--strategy", "breadth-depth-navigator", "--default-depth", "4",
    ]);
    set(&d.home, &["--view", "apply", "--include-path", "src/**", "--max-file-size", "65536"]);
    let text = ok(&d.home, &["project", "context", "show", "web"]);
    insta::assert_snapshot!("project_context_show_text", text);
}

/// A repository with code under `src/` and generated code under `gen/`, linked to `web`.
fn linked_repo() -> common::Dirs {
    let d = home_with_project();
    std::fs::create_dir_all(d.repo.join("src")).unwrap();
    std::fs::create_dir_all(d.repo.join("gen")).unwrap();
    std::fs::write(
        d.repo.join("src/invoice.py"),
        "def send_invoice_reminder(invoice):\n    \"\"\"Email a reminder for an overdue invoice.\"\"\"\n    return invoice\n",
    )
    .unwrap();
    std::fs::write(
        d.repo.join("gen/invoice_pb.py"),
        "def send_invoice_reminder_pb(invoice):\n    \"\"\"Generated invoice reminder stub.\"\"\"\n    return invoice\n",
    )
    .unwrap();
    ok(&d.home, &["project", "link-resource", "web", d.repo.to_str().unwrap()]);
    d
}

/// What each phase's view lets a query see is tested on the engine; here,
/// that a view set by the command and `--phase` reach `agents query`.
#[test]
fn the_policy_view_decides_what_a_query_may_see() {
    let d = linked_repo();
    let repo = d.repo.to_str().unwrap();
    set(&d.home, &["--view", "execute", "--exclude-path", "gen"]);
    let execute = json(&d.home, &["query", "send invoice reminder", repo, "--phase", "execute"]);
    let paths: Vec<&str> = execute["fragments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["provenance"]["source_path"].as_str().unwrap())
        .collect();
    assert!(!paths.is_empty() && paths.iter().all(|p| p.starts_with("src/")), "{execute:#}");
}

#[test]
fn simulate_prints_the_assembled_summary_with_the_stored_policy() {
    let d = linked_repo();
    set(&d.home, &["--exclude-path", "gen"]);
    let out = json(&d.home, &["project", "context", "simulate", "web", "send invoice reminder"]);
    assert_eq!(out["project"], "web");
    assert!(out["fragments"].as_u64().unwrap() >= 1, "{out:#}");
    assert_eq!(out["files"], serde_json::json!(["src/invoice.py"]));
    assert_eq!(out["is_within_budget"], true);
    let components: Vec<&str> =
        out["trace"].as_array().unwrap().iter().map(|s| s["component"].as_str().unwrap()).collect();
    // The ten components, by their `context.pipeline.*` keys.
    for (c, _) in agents_core::config::PipelineConfig::default().components() {
        assert!(components.contains(&c), "{c} did not run: {components:?}");
    }
    let text = ok(&d.home, &["project", "context", "simulate", "web", "send invoice reminder"]);
    assert!(text.starts_with("Dry run for project web"), "{text}");
    let unknown = agents(&d.home).args(["project", "context", "simulate", "nope", "x"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert_one_error_line(&unknown);
}

#[test]
fn the_phase_sets_default_strategies_depth_and_tiers_and_the_config_changes_them() {
    let d = linked_repo();
    let repo = d.repo.to_str().unwrap();
    for (tier, text) in
        [("hot", "Hot note: invoice reminders go out daily."), ("warm", "Warm note: invoice reminder wording.")]
    {
        let out = agents(&d.home)
            .args(["context", "add", "--project", "web", "--tier", tier])
            .write_stdin(text)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let query = |phase: &str| json(&d.home, &["query", "send invoice reminder", repo, "--phase", phase]);
    let entries = |v: &serde_json::Value| -> Vec<String> {
        v["fragments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["uko_node"].as_str().unwrap().starts_with("context://"))
            .map(|f| f["content"].as_str().unwrap().split(':').next().unwrap().to_owned())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    // The depth code is rendered at (an entry keeps its own).
    let max_depth = |v: &serde_json::Value| {
        v["fragments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["uko_node"].as_str().unwrap().starts_with("uko://"))
            .map(|f| f["detail_depth"].as_u64().unwrap())
            .max()
    };
    let selected = |v: &serde_json::Value| -> Vec<String> {
        v["selections"].as_array().unwrap().iter().map(|s| s["strategy"].as_str().unwrap().to_owned()).collect()
    };

    let default = query("default");
    assert_eq!(entries(&default), ["Hot note", "Warm note"], "{default:#}");
    assert_eq!(max_depth(&default), Some(9));
    // apply: minimal, signatures and the hot tier only.
    let apply = query("apply");
    assert_eq!(entries(&apply), ["Hot note"], "{apply:#}");
    assert!(max_depth(&apply).unwrap() <= 4, "{apply:#}");
    // strategize: the graph walk and the semantic search.
    let strategize = query("strategize");
    assert_eq!(selected(&strategize), ["breadth-depth-navigator", "semantic-embedding"], "{strategize:#}");
    assert_ne!(selected(&default), selected(&strategize));

    // [context.phases.*] changes them.
    std::fs::write(
        d.home.join("config.toml"),
        "[context.phases.apply]\ndepth = 9\ntiers = [\"warm\"]\nstrategies = [\"simple-keyword\"]\n",
    )
    .unwrap();
    let configured = query("apply");
    assert_eq!(entries(&configured), ["Warm note"], "{configured:#}");
    assert_eq!(max_depth(&configured), Some(9));
    assert_eq!(selected(&configured), ["simple-keyword"]);
    std::fs::write(d.home.join("config.toml"), "[context.phases.apply]\ntiers = [\"lukewarm\"]\n").unwrap();
    let out = agents(&d.home).args(["query", "send invoice reminder", repo, "--phase", "apply"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).contains("context.phases.apply.tiers"));
}
