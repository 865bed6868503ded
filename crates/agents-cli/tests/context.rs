//! `agents context ...` and `agents project context inspect`, end to end:
//! entries in the hot, warm and cold tiers of a temporary home, what each role
//! sees of them in `agents query`, and bad input that exits 2 and changes nothing.

mod common;

use std::path::Path;

use common::{agents, assert_one_error_line, dirs, json, ok, parse};

/// `agents --json context add ARGS` with `text` on stdin; returns the entry.
fn add(home: &Path, args: &[&str], text: &str) -> serde_json::Value {
    let out = agents(home).args([&["--json", "context", "add"], args].concat()).write_stdin(text).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    parse(&out.stdout)
}

/// Runs a command expected to fail with exit 2 and one error line; returns it.
fn usage_error(home: &Path, args: &[&str], stdin: &str) -> String {
    let out = agents(home).args(args).write_stdin(stdin).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert_one_error_line(&out)
}

/// Project `web` linked to a repository with one Python file.
fn linked() -> common::Dirs {
    let d = dirs();
    std::fs::create_dir_all(d.repo.join("src")).unwrap();
    std::fs::write(
        d.repo.join("src/invoice.py"),
        "def send_invoice_reminder(invoice):\n    \"\"\"Email a reminder for an overdue invoice.\"\"\"\n    return invoice\n",
    )
    .unwrap();
    ok(&d.home, &["project", "create", "web"]);
    ok(&d.home, &["-q", "project", "link-resource", "web", d.repo.to_str().unwrap()]);
    d
}

fn ids(entries: &serde_json::Value) -> Vec<String> {
    entries.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

fn id(entry: &serde_json::Value) -> String {
    entry["id"].as_str().unwrap().to_owned()
}

#[test]
fn add_list_show_clear() {
    let d = linked();
    let home = &d.home;
    let note = add(home, &["--project", "web", "--tier", "hot", "--title", "vat"], "Invoices use the EU VAT rules.\n");
    let file = add(home, &["--project", "web", "--file", d.repo.join("src/invoice.py").to_str().unwrap()], "");
    let symbol = add(home, &["--project", "web", "--symbol", "send_invoice_reminder", "--tier", "cold"], "");
    assert_eq!(
        (note["tier"].as_str(), note["kind"].as_str(), note["title"].as_str()),
        (Some("hot"), Some("text"), Some("vat"))
    );
    assert_eq!(
        (file["tier"].as_str(), file["kind"].as_str(), file["source"].as_str()),
        (Some("warm"), Some("file"), Some("src/invoice.py"))
    );
    assert_eq!(symbol["kind"], "symbol");
    assert!(symbol["source"].as_str().unwrap().ends_with("src/invoice.py#send_invoice_reminder"), "{symbol}");

    // Listed hottest tier first, from a fresh process each time (the hot tier's snapshot).
    let listed = json(home, &["context", "list", "--project", "web"]);
    assert_eq!(ids(&listed), [id(&note), id(&file), id(&symbol)]);
    assert_eq!(ids(&json(home, &["context", "list", "--project", "web", "--tier", "warm"])), [id(&file)]);
    assert_eq!(ids(&json(home, &["context", "list", "--project", "web", "--role", "reviewer"])), [id(&note)]);

    let shown = json(home, &["context", "show", &id(&symbol)]);
    assert!(shown["content"].as_str().unwrap().contains("def send_invoice_reminder(invoice):"), "{shown}");
    assert_eq!(shown["access_count"], 1, "a show is a read");
    assert_eq!(json(home, &["context", "show", &id(&symbol)])["access_count"], 2);
    let text = ok(home, &["context", "show", &id(&note)]);
    assert!(text.contains("(hot tier, project web)") && text.ends_with("Invoices use the EU VAT rules.\n"), "{text}");

    // Without --project: the project of the resource holding the current directory.
    let out = agents(home).args(["--json", "context", "list"]).current_dir(&d.repo).output().unwrap();
    assert_eq!(ids(&parse(&out.stdout)), ids(&listed));

    assert_eq!(json(home, &["context", "clear", "--project", "web"])["removed"], 3);
    assert_eq!(json(home, &["context", "list", "--project", "web"]), serde_json::json!([]));
    let text = ok(home, &["context", "list", "--project", "web"]);
    assert!(text.starts_with("No context entries in project web"), "{text}");
}

#[test]
fn promote_and_demote_move_entries_between_tiers() {
    let d = linked();
    let home = &d.home;
    let long: String = (0..60).map(|i| format!("def step_{i}():\n    return {i} + some more words here\n\n")).collect();
    let entry = add(home, &["--project", "web", "--tier", "cold"], &long);
    let entry_id = id(&entry);
    assert_eq!(json(home, &["context", "promote", &entry_id])["tier"], "warm");
    assert_eq!(json(home, &["context", "promote", &entry_id])["tier"], "hot");
    let error = usage_error(home, &["context", "promote", &entry_id], "");
    assert!(error.contains("already in the hot tier"), "{error}");
    assert_eq!(json(home, &["context", "demote", &entry_id, "--summarize"])["tier"], "warm");
    let shown = json(home, &["context", "show", &entry_id]);
    assert!(shown["tokens"].as_u64().unwrap() < entry["tokens"].as_u64().unwrap() / 2, "{shown}");
    assert!(shown["content"].as_str().unwrap().contains("[summary: "), "{shown}");
    assert_eq!(shown["metadata"]["summarized_from_tokens"], entry["tokens"].to_string());
}

#[test]
fn query_includes_the_entries_the_role_sees() {
    let d = linked();
    let home = &d.home;
    let repo = d.repo.to_str().unwrap();
    let hot = add(home, &["--project", "web", "--tier", "hot"], "Reminders go out by email only, never by SMS.\n");
    let cold = add(home, &["--project", "web", "--tier", "cold"], "In 2019 reminders were sent by SMS.\n");
    let nodes = |v: &serde_json::Value| -> Vec<String> {
        v["fragments"].as_array().unwrap().iter().map(|f| f["uko_node"].as_str().unwrap().to_owned()).collect()
    };
    let executor = json(home, &["query", "send invoice reminder", repo]);
    let seen = nodes(&executor);
    assert!(seen.contains(&format!("context://web/{}", id(&hot))), "{seen:?}");
    assert!(!seen.contains(&format!("context://web/{}", id(&cold))), "executors do not see cold: {seen:?}");
    assert!(executor["strategies_used"].as_array().unwrap().iter().any(|s| s == "context-entries"), "{executor:#}");
    assert!(seen.iter().any(|n| n.contains("src/invoice.py")), "code still comes: {seen:?}");

    let strategist = nodes(&json(home, &["query", "send invoice reminder", repo, "--role", "strategist"]));
    assert!(strategist.contains(&format!("context://web/{}", id(&cold))), "{strategist:?}");
    let reviewer = nodes(&json(home, &["query", "send invoice reminder", repo, "--role", "reviewer"]));
    assert!(reviewer.contains(&format!("context://web/{}", id(&hot))), "{reviewer:?}");
    let markdown = ok(home, &["query", "send invoice reminder", repo]);
    assert!(markdown.contains("Reminders go out by email only"), "{markdown}");
    let error = usage_error(home, &["query", "send invoice reminder", repo, "--role", "admin"], "");
    assert!(error.contains("--role: unknown role `admin`"), "{error}");
}

#[test]
fn list_shows_a_title_or_a_one_line_preview_of_each_entry() {
    let d = linked();
    let home = &d.home;
    add(home, &["--project", "web"], "\n\n  Refunds are issued within 14 days of the request.\nSecond line.\n");
    add(home, &["--project", "web", "--title", "vat rules"], "Invoices use the EU VAT rules.\n");
    let long = format!("{}\n", "word ".repeat(40));
    add(home, &["--project", "web"], &long);
    let listed = json(home, &["context", "list", "--project", "web"]);
    let mut previews: Vec<&str> = listed.as_array().unwrap().iter().map(|e| e["preview"].as_str().unwrap()).collect();
    previews.sort();
    let cut = format!("{}…", "word ".repeat(12));
    assert_eq!(previews, ["Refunds are issued within 14 days of the request.", "vat rules", cut.as_str()]);
    let text = ok(home, &["context", "list", "--project", "web"]);
    assert!(text.contains("Refunds are issued within 14 days of the request. (stdin)"), "{text}");
    assert!(text.contains("vat rules (stdin)"), "{text}");
}

#[test]
fn an_entry_that_does_not_fit_is_rendered_again_from_its_node_and_keeps_its_tier() {
    let d = linked();
    let home = &d.home;
    let repo = d.repo.to_str().unwrap();
    // Imports first, the definitions far below: cutting it to its opening lines
    // would keep only the imports.
    let mut text: String = (0..30).map(|i| format!("import ledger_module_{i}\n")).collect();
    for i in 0..3 {
        text.push_str(&format!("\n\ndef post_ledger_entry_{i}(entry):\n"));
        text.extend((0..60).map(|j| format!("    total_{j} = entry.amount * {j} + entry.fee - entry.discount\n")));
    }
    std::fs::write(d.repo.join("src/ledger.py"), &text).unwrap();
    let file =
        add(home, &["--project", "web", "--tier", "hot", "--file", d.repo.join("src/ledger.py").to_str().unwrap()], "");
    let out = json(home, &["query", "send invoice reminder", repo, "--max-tokens", "3000"]);
    let uri = format!("context://web/{}", id(&file));
    let fragments = out["fragments"].as_array().unwrap();
    let entry = fragments.iter().find(|f| f["uko_node"] == uri.as_str()).unwrap_or_else(|| panic!("{out:#}"));
    assert_eq!(entry["tier"], "hot", "{entry:#}");
    let content = entry["content"].as_str().unwrap();
    assert!(entry["detail_depth"].as_u64().unwrap() < 9, "{entry:#}");
    assert!(!content.contains("more lines"), "{content}");
    assert!(content.contains("post_ledger_entry_2"), "the definitions, not the imports: {content}");
    // Retrieved code is warm, entries keep their own tier.
    assert!(fragments.iter().filter(|f| f["uko_node"] != uri.as_str()).all(|f| f["tier"] == "warm"), "{out:#}");
}

#[test]
fn inspect_reports_metrics_distribution_and_visibility() {
    let d = linked();
    let home = &d.home;
    let hot = add(home, &["--project", "web", "--tier", "hot"], "one two three\n");
    add(home, &["--project", "web", "--tier", "warm", "--role-visibility", "strategist"], "four five\n");
    add(home, &["--project", "web", "--symbol", "send_invoice_reminder", "--depth", "4", "--tier", "cold"], "");
    ok(&d.home, &["project", "create", "other"]);
    add(home, &["--project", "other", "--tier", "hot"], "not web's\n");
    ok(home, &["context", "show", &id(&hot)]);

    let report = json(home, &["project", "context", "inspect", "web"]);
    assert_eq!(report["project"], "web");
    assert_eq!(report["metrics"]["population"], serde_json::json!({"hot": 2, "warm": 1, "cold": 1}), "all projects");
    assert_eq!(report["metrics"]["hits"]["hot"], 1);
    for (tier, entries) in [("hot", 1), ("warm", 1), ("cold", 1)] {
        assert_eq!(report["by_tier"][tier]["entries"], entries, "{tier}: only web's");
    }
    assert_eq!(report["by_kind"]["symbol"]["entries"], 1);
    assert_eq!(report["by_depth"]["4"]["entries"], 1);
    assert_eq!(report["visibility"]["reviewer"], serde_json::json!([id(&hot)]));
    assert_eq!(report["visibility"]["executor"], serde_json::json!([id(&hot)]), "the warm one is for strategists");
    assert_eq!(report["visibility"]["strategist"].as_array().unwrap().len(), 3);
    assert_eq!(report["tiers"]["hot_max_tokens"], 16000);

    let text = ok(home, &["project", "context", "inspect", "web"]);
    insta::assert_snapshot!("project_context_inspect_text", text);
    let error = usage_error(home, &["project", "context", "inspect", "nope"], "");
    assert!(error.contains("nope"), "{error}");
}

#[test]
fn project_capacity_evicts_into_the_next_tier() {
    let d = linked();
    let home = &d.home;
    ok(home, &["-q", "project", "context", "set", "web", "--hot-max-tokens", "12"]);
    let first = add(home, &["--project", "web", "--tier", "hot"], "alpha beta gamma delta epsilon\n");
    let out = agents(home)
        .args(["context", "add", "--project", "web", "--tier", "hot"])
        .write_stdin("zeta eta theta iota kappa\n")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(common::stderr(&out).contains(&format!("evicted {} from hot to warm", id(&first))));
    assert_eq!(ids(&json(home, &["context", "list", "--project", "web", "--tier", "warm"])), [id(&first)]);
    let error = usage_error(home, &["context", "add", "--project", "web", "--tier", "hot"], &"word ".repeat(40));
    assert!(error.contains("more than the hot tier's capacity of 12 for project web"), "{error}");
}

#[test]
fn bad_input_exits_2_and_changes_nothing() {
    let d = linked();
    let home = &d.home;
    let cases: &[(&[&str], &str, &str)] = &[
        (&["context", "show", "01HZY3N6A8Q4W0R2T5V7X9B1CD"], "", "no context entry `01HZY3N6A8Q4W0R2T5V7X9B1CD`"),
        (&["context", "promote", "not-an-id"], "", "no context entry `not-an-id`"),
        (&["context", "add", "--project", "web", "--tier", "lukewarm"], "x", "--tier: unknown tier `lukewarm`"),
        (&["context", "add", "--project", "web", "--role-visibility", "admin"], "x", "--role-visibility: unknown role"),
        (&["context", "add", "--project", "web", "--file", "missing.txt"], "", "--file missing.txt: cannot read"),
        (&["context", "add", "--project", "web", "--symbol", "no_such_symbol"], "", "no node matches `no_such_symbol`"),
        (&["context", "add", "--project", "web"], "   \n", "stdin is empty"),
        (&["context", "add", "--project", "nope"], "x", "nope"),
        (&["context", "list", "--project", "web", "--tier", "tepid"], "", "--tier: unknown tier `tepid`"),
        (&["context", "list"], "", "is in no linked resource: give --project NAME"),
    ];
    for (args, stdin, expected) in cases {
        let error = usage_error(home, args, stdin);
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    assert_eq!(json(home, &["context", "list", "--project", "web"]), serde_json::json!([]));
}
