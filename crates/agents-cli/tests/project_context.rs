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
            "default_breadth": 2, "default_depth": 3, "skeleton_ratio": 0.2, "temporal_scope": "current",
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

#[test]
fn the_policy_view_decides_what_a_query_may_see() {
    let d = linked_repo();
    let paths = |v: &serde_json::Value| -> Vec<String> {
        v["fragments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["provenance"]["source_path"].as_str().unwrap().to_owned())
            .collect()
    };
    let repo = d.repo.to_str().unwrap();
    let open = json(&d.home, &["query", "send invoice reminder", repo]);
    assert!(paths(&open).iter().any(|p| p.starts_with("gen/")), "{open:#}");
    set(&d.home, &["--view", "execute", "--exclude-path", "gen"]);
    // The execute view excludes gen/; the default view (and so strategize) does not.
    let execute = json(&d.home, &["query", "send invoice reminder", repo, "--phase", "execute"]);
    assert!(!paths(&execute).is_empty() && paths(&execute).iter().all(|p| p.starts_with("src/")), "{execute:#}");
    assert!(execute["enforcement"].as_array().unwrap().iter().any(|e| e["path"] == "gen/invoice_pb.py"), "{execute:#}");
    let strategize = json(&d.home, &["query", "send invoice reminder", repo, "--phase", "strategize"]);
    assert!(paths(&strategize).iter().any(|p| p.starts_with("gen/")), "{strategize:#}");
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
