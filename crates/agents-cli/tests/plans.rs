//! `agents plan ...` and `agents query --plan` through the binary: flags,
//! exit codes, the printed text. The strategy's behaviour is tested on the
//! engine (`agents-engine/tests/plans.rs`).

mod common;

use common::{agents, assert_one_error_line, dirs, parse};

fn json(home: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let out = agents(home).arg("--json").args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    parse(&out.stdout)
}

/// Whether plan-decision-context contributed to the payload.
fn uses_plan_decisions(v: &serde_json::Value) -> bool {
    v["strategies_used"].as_array().unwrap().iter().any(|s| s == "plan-decision-context")
}

#[test]
fn decisions_of_the_plan_and_its_ancestors_come_back_nearest_first() {
    let d = dirs();
    std::fs::write(d.repo.join("pay.py"), "def charge(amount):\n    return amount\n").unwrap();
    let root = json(&d.home, &["plan", "create", "Payments v2"]);
    let root_id = root["plan_id"].as_str().unwrap().to_owned();
    json(
        &d.home,
        &["plan", "decide", &root_id, "Use idempotency keys", "--body", "Retries reuse the key.", "--tier", "cold"],
    );
    json(&d.home, &["plan", "decide", &root_id, "Scratch note", "--tier", "hot"]);
    let child = json(&d.home, &["plan", "create", "Retry charges", "--parent", &root_id]);
    let child_id = child["plan_id"].as_str().unwrap().to_owned();
    assert_eq!(child["parent_id"], root_id.as_str());
    json(&d.home, &["plan", "decide", &child_id, "Back off exponentially"]);

    let shown = json(&d.home, &["plan", "show", &child_id]);
    let ancestors = shown["ancestors"].as_array().unwrap();
    assert_eq!(ancestors.len(), 2);
    assert_eq!(ancestors[0]["plan_id"], child_id.as_str());
    assert_eq!(ancestors[1]["decisions"].as_array().unwrap().len(), 2);

    // What the strategy replays, and in which order, is tested on the engine
    // (agents-engine/tests/plans.rs); here, that --plan reaches it.
    let repo = d.repo.to_str().unwrap();
    let auto = json(&d.home, &["query", "retry charges", repo, "--plan", &child_id]);
    assert_eq!(auto["plan_id"], child_id.as_str());
    assert!(uses_plan_decisions(&auto), "{auto:#}");

    // Markdown names each record and why it is there.
    let text = agents(&d.home)
        .args(["query", "retry charges", repo, "--plan", &child_id, "--strategy", "plan-decision-context"])
        .output()
        .unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(&format!("## plan://{child_id}/decision/")), "{text}");
    assert!(text.contains("decision on plan \"Payments v2\" (cold tier)"), "{text}");
}

#[test]
fn bad_plan_input_exits_2_and_records_nothing() {
    let d = dirs();
    for args in [
        vec!["plan", "decide", "NOPE", "x"],
        vec!["plan", "create", "child", "--parent", "NOPE"],
        vec!["plan", "show", "NOPE"],
        vec!["plan", "create", "  "],
    ] {
        let out = agents(&d.home).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_one_error_line(&out);
    }
    let plan = json(&d.home, &["plan", "create", "p"]);
    let id = plan["plan_id"].as_str().unwrap();
    let out = agents(&d.home).args(["plan", "decide", id, "x", "--tier", "lukewarm"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(assert_one_error_line(&out).contains("hot, warm or cold"));
    let plans = json(&d.home, &["plan", "list"]);
    assert_eq!(plans.as_array().unwrap().len(), 1);
    let shown = json(&d.home, &["plan", "show", id]);
    assert!(shown["ancestors"][0]["decisions"].as_array().unwrap().is_empty());
}

#[test]
fn plans_carry_their_phase_and_project() {
    let d = dirs();
    assert!(agents(&d.home).args(["project", "create", "web"]).output().unwrap().status.success());
    let plan = json(&d.home, &["plan", "create", "Ship it", "--phase", "execute", "--project", "web"]);
    let id = plan["plan_id"].as_str().unwrap();
    assert_eq!(plan["phase"], "execute");
    assert!(plan["project_id"].is_string());
    let shown = json(&d.home, &["plan", "show", id]);
    assert_eq!((&shown["phase"], &shown["project"]), (&"execute".into(), &"web".into()));
    let text = agents(&d.home).args(["plan", "show", id]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("phase execute\nproject web\n"), "{text}");

    let plain = json(&d.home, &["plan", "create", "Later"]);
    assert_eq!((&plain["phase"], &plain["project_id"]), (&"default".into(), &serde_json::Value::Null));
    assert_eq!(
        json(&d.home, &["plan", "show", plain["plan_id"].as_str().unwrap()])["project"],
        serde_json::Value::Null
    );

    for (args, message) in [
        (["plan", "create", "x", "--phase", "review"], "--phase: unknown phase `review`"),
        (["plan", "create", "x", "--project", "nope"], "project `nope` not found"),
    ] {
        let out = agents(&d.home).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(assert_one_error_line(&out).contains(message), "{args:?}");
    }
    assert_eq!(json(&d.home, &["plan", "list"]).as_array().unwrap().len(), 2);
}

/// Fragments of a payload that came from the parent's skeleton, and their tokens.
fn skeleton_tokens(v: &serde_json::Value) -> (usize, u64) {
    let skeleton: Vec<&serde_json::Value> =
        v["fragments"].as_array().unwrap().iter().filter(|f| f["metadata"]["role"] == "skeleton").collect();
    (skeleton.len(), skeleton.iter().map(|f| f["token_count"].as_u64().unwrap()).sum())
}

#[test]
fn a_child_payload_holds_each_node_once_and_the_configs_skeleton_ratio_applies_unless_the_project_sets_one() {
    let d = dirs();
    // A parent context of many signatures, and a child task about other code.
    let mut pay = String::new();
    for i in 0..24 {
        pay.push_str(&format!(
            "def settle_invoice_batch_{i}(ledger_account, invoice_batch, currency_code, settlement_date):\n    \"\"\"Settle invoice batch {i}.\"\"\"\n    return ledger_account\n\n"
        ));
    }
    std::fs::write(d.repo.join("pay.py"), pay).unwrap();
    std::fs::write(
        d.repo.join("audit.py"),
        "def write_audit_record(event):\n    \"\"\"Append an audit record.\"\"\"\n    return event\n",
    )
    .unwrap();
    std::fs::write(d.home.join("config.toml"), "[context.budget]\nskeleton-ratio = 0.05\n").unwrap();
    let repo = d.repo.to_str().unwrap();
    json(&d.home, &["project", "create", "web"]);
    json(&d.home, &["project", "link-resource", "web", repo]);
    // Stored settings without a skeleton ratio of their own.
    json(&d.home, &["project", "context", "set", "web", "--hot-max-tokens", "100"]);
    let root = json(&d.home, &["plan", "create", "Settle invoices"]);
    let root_id = root["plan_id"].as_str().unwrap().to_owned();
    json(&d.home, &["query", "settle invoice batch", repo, "--plan", &root_id, "--max-tokens", "4000"]);
    let child = json(&d.home, &["plan", "create", "Audit", "--parent", &root_id]);
    let child_id = child["plan_id"].as_str().unwrap().to_owned();

    // Retrieval kept to the audit code, so what the parent saw comes only
    // through the skeleton.
    let query = |id: &str, text: &str| {
        json(&d.home, &["query", text, repo, "--plan", id, "--max-tokens", "4000", "--under", "audit.py"])
    };
    let out = query(&child_id, "write audit record");
    let (count, tokens) = skeleton_tokens(&out);
    assert!(count > 0, "the child inherits a skeleton: {out:#}");
    assert!(tokens <= 200, "context.budget.skeleton-ratio 0.05 of 4000 holds, not a stored 0.2: {tokens}");

    // The project's own ratio wins over the configuration's.
    json(&d.home, &["project", "context", "set", "web", "--skeleton-ratio", "0.2"]);
    let (_, wider) = skeleton_tokens(&query(&child_id, "write audit record"));
    assert!(wider > 200 && wider <= 800, "the project's 0.2: {wider}");

    // A child asking about the parent's own code gets each node once.
    let overlapping = query(&child_id, "settle invoice batch audit");
    let mut nodes: Vec<&str> =
        overlapping["fragments"].as_array().unwrap().iter().map(|f| f["uko_node"].as_str().unwrap()).collect();
    let total = nodes.len();
    nodes.sort_unstable();
    nodes.dedup();
    assert_eq!(nodes.len(), total, "a node twice in {overlapping:#}");
}
