//! `agents knowledge init|validate|build`, end to end on copies of the golden
//! fixture of `agents-akms` (global vault + local nodes + code mirror + overlay).

mod common;

use std::path::Path;
use std::process::Output;

use common::{
    Knowledge, agents, assert_one_error_line, dirs, knowledge, parse, stderr, stdout, tree_bytes as snapshot,
};

const FIXTURE: &str = common::GOLDEN;

/// `agents knowledge ARGS` run inside the repository with the fixture's vault.
fn run(k: &Knowledge, args: &[&str]) -> Output {
    agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &k.vault)
        .arg("knowledge")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn build_writes_the_golden_graph() {
    let k = knowledge();
    let out = run(&k, &["build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Built knowledge/graph/graph.json: 8 nodes (1 code-mirror, 4 global, 2 local, 1 session), 7 edges\n"
    );
    let warnings: Vec<String> = stderr(&out).lines().map(str::to_owned).collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings.iter().all(|w| w.starts_with("warning: ")));
    let built = std::fs::read_to_string(k.repo.join("knowledge/graph/graph.json")).unwrap();
    // The graph names the vault as configured (here the default), not as
    // $AKMS_GLOBAL_VAULT spells it: the fixture's bytes exactly.
    let expected = std::fs::read_to_string(Path::new(FIXTURE).join("expected-graph.json")).unwrap();
    assert_eq!(built, expected);
}

#[test]
fn nfr_d06_two_builds_give_identical_bytes() {
    let k = knowledge();
    assert!(run(&k, &["build"]).status.success());
    let first = std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap();
    assert!(run(&k, &["--repo", k.repo.to_str().unwrap(), "build"]).status.success());
    assert_eq!(std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap(), first);
}

#[test]
fn nfr_i01_nodes_edges_and_confidences_are_readable_as_plain_text() {
    let k = knowledge();
    assert!(run(&k, &["build"]).status.success());
    // graph.json is UTF-8 text, one attribute per line: a reader (or grep)
    // finds every node, every edge and every confidence without a tool.
    let text = std::fs::read_to_string(k.repo.join("knowledge/graph/graph.json")).unwrap();
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let graph: serde_json::Value = serde_json::from_str(&text).unwrap();
    for node in graph["nodes"].as_array().unwrap() {
        let id = node["id"].as_str().unwrap();
        assert!(lines.contains(&format!("\"id\": \"{id}\",").as_str()), "node {id} is not on a line of its own");
        let confidence = format!("\"confidence\": {},", node["confidence"]);
        assert!(lines.contains(&confidence.as_str()), "{id}: {confidence}");
    }
    for link in graph["links"].as_array().unwrap() {
        for end in ["source", "target"] {
            let line = format!("\"{end}\": {},", link[end]);
            let line = line.trim_end_matches(',');
            assert!(lines.iter().any(|l| l.trim_end_matches(',') == line), "{line}");
        }
    }
    // The sources are plain text as well: Markdown nodes and the YAML overlay,
    // the confidence of a node readable where a human left it.
    let overlay = std::fs::read_to_string(k.repo.join("knowledge/graph/local_state.yaml")).unwrap();
    assert!(overlay.lines().any(|l| l.trim_start().starts_with("confidence: ")), "{overlay}");
}

#[test]
fn fr_o01_fr_o08_nfr_r03_no_command_writes_under_the_global_vault() {
    let k = knowledge();
    let before = snapshot(&k.vault);
    let vault = k.vault.to_str().unwrap().to_owned();
    let node = k.vault.join("green-operator.md").to_str().unwrap().to_owned();
    let memory = "---\ntask_id: T-1\ntask_description: d\nphase_id: 1\ntimestamp: 2026-01-01\nagent_model: m\nloadout_used: l.md\nstatus: complete\ntests_passed: 1\ntests_total: 1\nnodes_used:\n  - {id: green-operator, useful: false, coverage: outdated}\n  - {id: lippmann-schwinger, useful: true, coverage: sufficient}\nakms_schema: v2\n---\n";
    std::fs::write(k.repo.join("knowledge/sessions/T-1.md"), memory).unwrap();
    let commands: [&[&str]; 15] = [
        &["init"],
        &["update", "knowledge/sessions/T-1.md"],
        &["status"],
        &["review"],
        &["promote", "epsilon-regularisation"],
        &["suppress", "green-operator"],
        &["validate"],
        &["validate", &vault],
        &["validate", &node],
        &["build"],
        &["--json", "build"],
        &["search", "green operator"],
        &["query", "--tags", "green-operator"],
        &["--repo", &vault, "init"],
        &["--repo", &vault, "build"],
    ];
    for args in commands {
        let out = run(&k, args);
        if args[0] == "--repo" {
            let line = assert_one_error_line(&out);
            assert!(line.ends_with("is inside the global vault, which is read-only"), "{line}");
        } else {
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        }
    }
    // A failing build too.
    let state = k.repo.join("knowledge/graph/local_state.yaml");
    let text = std::fs::read_to_string(&state).unwrap();
    std::fs::write(&state, text.replace("suppressed_edges: []", "suppressed_edges: [x]")).unwrap();
    assert_eq!(run(&k, &["build"]).status.code(), Some(2));
    assert_eq!(before, snapshot(&k.vault));
}

#[test]
fn init_creates_the_layout_and_a_commented_default_config() {
    let d = dirs();
    std::fs::create_dir_all(d.repo.join(".git")).unwrap();
    std::fs::create_dir_all(d.repo.join("src/deep")).unwrap();
    let out = agents(&d.home).current_dir(d.repo.join("src/deep")).args(["knowledge", "init"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for dir in ["local-nodes", "code-mirror", "sessions", "loadouts", "graph"] {
        assert!(d.repo.join("knowledge").join(dir).is_dir(), "{dir}");
    }
    let config = std::fs::read_to_string(d.repo.join("knowledge/graph/propagation_config.yaml")).unwrap();
    assert!(config.starts_with("# AKMS propagation config"));
    assert!(config.contains("akms_schema: v2") && config.contains("physics_reviewer:"));
    // Again: everything is kept, nothing rewritten.
    std::fs::write(d.repo.join("knowledge/graph/propagation_config.yaml"), "akms_schema: v2\n").unwrap();
    let out = agents(&d.home).current_dir(&d.repo).args(["--json", "knowledge", "init"]).output().unwrap();
    let report = parse(&out.stdout);
    assert_eq!(report["created"], serde_json::json!([]));
    assert_eq!(
        std::fs::read_to_string(d.repo.join("knowledge/graph/propagation_config.yaml")).unwrap(),
        "akms_schema: v2\n"
    );
}

#[test]
fn ur_01_nfr_r04_a_fresh_repository_builds_without_a_global_vault() {
    let d = dirs();
    let missing = d.root.join("no-vault");
    let run = |args: &[&str]| {
        agents(&d.home).current_dir(&d.repo).env("AKMS_GLOBAL_VAULT", &missing).args(args).output().unwrap()
    };
    assert!(run(&["knowledge", "init"]).status.success());
    let out = run(&["knowledge", "build"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Built knowledge/graph/graph.json: 0 nodes, 0 edges\n");
    assert!(stderr(&out).contains("no global vault at"), "{}", stderr(&out));
    let graph = parse(&std::fs::read(d.repo.join("knowledge/graph/graph.json")).unwrap());
    assert_eq!(graph["nodes"], serde_json::json!([]));
}

#[test]
fn the_global_vault_comes_from_the_environment_then_the_configuration() {
    let k = knowledge();
    std::fs::write(k.home.join("config.toml"), format!("global-vault = {:?}\n", k.vault.to_str().unwrap())).unwrap();
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env_remove("AKMS_GLOBAL_VAULT")
        .args(["--json", "knowledge", "validate"])
        .output()
        .unwrap();
    assert_eq!(parse(&out.stdout)["global_vault"], k.vault.to_str().unwrap());
    let other = k.home.join("elsewhere");
    let out = agents(&k.home)
        .current_dir(&k.repo)
        .env("AKMS_GLOBAL_VAULT", &other)
        .args(["--json", "knowledge", "validate"])
        .output()
        .unwrap();
    assert_eq!(parse(&out.stdout)["global_vault"], other.to_str().unwrap());
}

/// Issue 18 item 8: graph.json names the vault as the repository configures
/// it; another spelling of the same vault in the environment (a symbolic
/// link) changes neither graph.json nor its graph_version.
#[test]
fn item_8_graph_json_records_the_vault_as_configured_not_as_the_environment_spells_it() {
    let k = knowledge();
    let build = |vault: &Path| {
        let out = agents(&k.home)
            .current_dir(&k.repo)
            .env("AKMS_GLOBAL_VAULT", vault)
            .args(["knowledge", "build"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        std::fs::read(k.repo.join("knowledge/graph/graph.json")).unwrap()
    };
    let direct = build(&k.vault);
    let link = k.home.join("vault-link");
    std::os::unix::fs::symlink(&k.vault, &link).unwrap();
    assert_eq!(build(&link), direct);
    let graph = parse(&direct);
    assert_eq!(graph["graph"]["global_vault"], "~/.claude/akms/nodes");
}

#[test]
fn validate_reports_every_problem_at_once_and_exits_2() {
    let k = knowledge();
    let node = k.repo.join("knowledge/local-nodes/repo-conventions.md");
    let text = std::fs::read_to_string(&node).unwrap();
    std::fs::write(&node, text.replace("status: established", "status: final").replace("weight: 1", "weight: 3"))
        .unwrap();
    let out = run(&k, &["validate"]);
    assert_eq!(out.status.code(), Some(2));
    let report = stdout(&out);
    assert!(
        report.contains("error: knowledge/local-nodes/repo-conventions.md:6: status: `final` is not one of"),
        "{report}"
    );
    assert!(report.contains("error: knowledge/local-nodes/repo-conventions.md:9: edges[0].weight: expected a number from 0.0 to 1.0, found `3`"), "{report}");
    assert_eq!(assert_one_error_line(&out), "error: 2 errors in the knowledge sources");
    let json = parse(&run(&k, &["--json", "validate"]).stdout);
    assert_eq!((json["errors"].as_u64(), json["warnings"].as_u64()), (Some(2), Some(3)));
}

#[test]
fn bad_input_is_one_error_line_naming_file_and_field_and_graph_json_stays() {
    let cases: [(&str, &str, &str, &str); 7] = [
        (
            "local-nodes/repo-conventions.md",
            "tags: [layout]",
            "tags: [layout",
            "knowledge/local-nodes/repo-conventions.md:6: invalid yaml",
        ),
        (
            "local-nodes/repo-conventions.md",
            "domain: project\n",
            "",
            "knowledge/local-nodes/repo-conventions.md: domain: required field is missing",
        ),
        (
            "local-nodes/repo-conventions.md",
            "type: implements",
            "type: uses",
            "repo-conventions.md:9: edges[0].type: `uses` is not one of",
        ),
        (
            "local-nodes/repo-conventions.md",
            "to: mirror-src-green",
            "to: nowhere",
            "repo-conventions.md:9: edges[0].to: no node has the id `nowhere`",
        ),
        (
            "local-nodes/repo-conventions.md",
            "type: implements",
            "type: pitfall",
            "repo-conventions.md:9: edges[0].to: a pitfall edge must point at a session node",
        ),
        (
            "graph/local_state.yaml",
            "suppressed_edges: []",
            "suppressed_edges: [x]",
            "local_state.yaml:35: suppressed_edges: is reserved in schema v2",
        ),
        (
            "local-nodes/repo-conventions.md",
            "akms_schema",
            "content_ref: ../../etc/passwd\nakms_schema",
            "repo-conventions.md:13: content_ref: `../../etc/passwd` leads outside",
        ),
    ];
    for (file, from, to, expect) in cases {
        let k = knowledge();
        assert!(run(&k, &["build"]).status.success());
        let graph = k.repo.join("knowledge/graph/graph.json");
        let before = std::fs::read(&graph).unwrap();
        let path = k.repo.join("knowledge").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let out = run(&k, &["build"]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", stderr(&out));
        let line = assert_one_error_line(&out);
        assert!(line.contains(expect), "{line}");
        assert_eq!(std::fs::read(&graph).unwrap(), before, "{expect}");
    }
    // A duplicate id within one layer.
    let k = knowledge();
    std::fs::copy(
        k.repo.join("knowledge/local-nodes/repo-conventions.md"),
        k.repo.join("knowledge/local-nodes/copy.md"),
    )
    .unwrap();
    let line = assert_one_error_line(&run(&k, &["build"]));
    assert!(line.contains("local-nodes/repo-conventions.md:2: id: `repo-conventions` is already the id of knowledge/local-nodes/copy.md in the local layer"), "{line}");
}

#[test]
fn fr_g08_a_schema_version_mismatch_is_a_schema_version_error() {
    let k = knowledge();
    let node = k.vault.join("fft-galerkin-basics.md");
    let text = std::fs::read_to_string(&node).unwrap();
    std::fs::write(&node, text.replace("akms_schema: v2", "akms_schema: v1")).unwrap();
    let out = run(&k, &["build"]);
    assert_eq!(out.status.code(), Some(2));
    let line = assert_one_error_line(&out);
    assert!(
        line.starts_with("error: SchemaVersionError: ")
            && line.ends_with("fft-galerkin-basics.md:10: akms_schema: schema version `v1` is not the current v2"),
        "{line}"
    );
    assert!(!k.repo.join("knowledge/graph/graph.json").exists());
}

#[test]
fn nfr_i02_graph_json_loads_in_networkx() {
    let k = knowledge();
    assert!(run(&k, &["build"]).status.success());
    let graph = k.repo.join("knowledge/graph/graph.json");
    let script = r#"
import json, sys
import networkx as nx
data = json.load(open(sys.argv[1]))
try:
    g = nx.node_link_graph(data, edges="links")   # networkx >= 3.4
except TypeError:
    g = nx.node_link_graph(data, link="links")    # older releases
assert g.is_directed() and not g.is_multigraph()
assert g.number_of_nodes() == 8 and g.number_of_edges() == 7, (g.number_of_nodes(), g.number_of_edges())
ls = g.nodes["lippmann-schwinger"]
assert ls["confidence"] == 0.85 and ls["confidence_default"] == 0.9 and ls["node_origin"] == "global", ls
assert ls["tags"] == ["green-operator", "micromechanics", "spectral"] and ls["activations"] == 7, ls
assert g.nodes["mirror-src-green"]["node_origin"] == "code-mirror"
assert g.nodes["session-phase2-task3"]["domain"] == "session"
e = g.edges["lippmann-schwinger", "session-phase2-task3"]
assert e["type"] == "pitfall" and e["edge_origin"] == "local" and e["weight"] == 0.8, e
assert g.edges["lippmann-schwinger", "fft-galerkin-basics"]["edge_origin"] == "global"
assert g.graph["akms_schema"] == "v2" and g.graph["repo_id"] == "example-repo"
print("networkx", nx.__version__, "ok")
"#;
    let probe = std::process::Command::new("python3").args(["-c", "import networkx"]).output();
    let available = probe.as_ref().is_ok_and(|o| o.status.success());
    if !available {
        assert!(
            std::env::var_os("AGENTS_REQUIRE_NETWORKX").is_none(),
            "AGENTS_REQUIRE_NETWORKX is set but `python3 -c 'import networkx'` fails"
        );
        eprintln!("skipped: python3 with networkx is not available (pip install networkx)");
        return;
    }
    let out = std::process::Command::new("python3").arg("-c").arg(script).arg(&graph).output().unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains(" ok"));
}

/// What tags are derived, written back and logged is tested on the engine's
/// knowledge service (`agents-engine/tests/knowledge.rs`); here, the command:
/// `--dry-run`, the report, one error line and exit 2 for a bad record.
#[test]
fn fr_t04_fr_t05_tags_are_derived_written_back_and_logged() {
    let k = knowledge();
    let task = k.repo.join("task.json");
    std::fs::write(
        &task,
        r#"{"task_id": "T-1", "title": "Regularise the FFT-Galerkin Basics solver",
            "scope": ["docs/lippmann-schwinger-derivation.md"], "akms_tags": [], "akms_schema": "v2"}"#,
    )
    .unwrap();
    let task_arg = task.to_str().unwrap();
    let dry = run(&k, &["--json", "tags", "--task", task_arg, "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(parse(&dry.stdout)["written"], false);
    assert!(std::fs::read_to_string(&task).unwrap().contains(r#""akms_tags": []"#), "a dry run writes nothing");
    let out = run(&k, &["tags", "--task", task_arg]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("green-operator  <- scope") && text.contains("wrote akms_tags to"), "{text}");
    std::fs::write(&task, r#"{"task_id": "T-2", "akms_schema": "v1", "akms_tags": []}"#).unwrap();
    let bad = run(&k, &["tags", "--task", task_arg]);
    assert_eq!(bad.status.code(), Some(2));
    let line = assert_one_error_line(&bad);
    assert!(line.contains("akms_schema") && line.contains("SchemaVersionError"), "{line}");
}

/// What the search finds is tested on the engine's knowledge service; here,
/// the command's error before a build and its output after.
#[test]
fn build_indexes_node_text_and_search_returns_passages_scoped_to_a_node_set() {
    let k = knowledge();
    let line = assert_one_error_line(&run(&k, &["search", "derivation"]));
    assert!(line.contains("agents knowledge build"), "{line}");
    assert!(run(&k, &["build"]).status.success());
    let out = run(&k, &["--json", "search", "plain document without frontmatter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(parse(&out.stdout)[0]["node"], "lippmann-schwinger");
    let scoped = parse(&run(&k, &["--json", "search", "green operator", "--node", "epsilon-regularisation"]).stdout);
    assert!(scoped.as_array().unwrap().iter().all(|h| h["node"] == "epsilon-regularisation"), "{scoped:#}");
    let text = stdout(&run(&k, &["search", "plain document without frontmatter"]));
    assert!(text.starts_with("## lippmann-schwinger ("), "{text}");
}

#[test]
fn spec_8_3_migrate_moves_v1_experiential_fields_into_the_overlay_idempotently() {
    let k = knowledge();
    let vault_before = snapshot(&k.vault);
    let node = k.repo.join("knowledge/local-nodes/epsilon-regularisation.md");
    let state = k.repo.join("knowledge/graph/local_state.yaml");
    let v2_text = std::fs::read_to_string(&node).unwrap();
    let v1_text = v2_text
        .replace("activations: 2\nakms_schema: v2", "activations: 2\nlast_activated: 2025-05-01\nakms_schema: v1");
    std::fs::write(&node, &v1_text).unwrap();
    assert_eq!(run(&k, &["build"]).status.code(), Some(2), "a v1 node halts the build");

    let before = snapshot(&k.repo);
    let dry = run(&k, &["migrate", "--dry-run"]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(
        stdout(&dry),
        "would migrate knowledge/graph/local_state.yaml\nwould migrate knowledge/local-nodes/epsilon-regularisation.md: moved activations, last_activated to local_state.yaml\nDry run, nothing written (v1-to-v2)\n"
    );
    assert_eq!(before, snapshot(&k.repo), "--dry-run writes nothing");

    let out = run(&k, &["--json", "migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = parse(&out.stdout);
    assert_eq!(report["migrations"], serde_json::json!(["v1-to-v2"]));
    assert_eq!(report["files"][1]["path"], "knowledge/local-nodes/epsilon-regularisation.md");
    assert_eq!(report["files"][1]["moved"], serde_json::json!(["activations", "last_activated"]));
    assert_eq!(report["written"], true);
    let migrated = std::fs::read_to_string(&node).unwrap();
    assert_eq!(migrated, v2_text.replace("activations: 2\n", ""), "only the moved lines and the stamp change");
    let overlay = std::fs::read_to_string(&state).unwrap();
    let overlay = agents_akms::overlay::parse_local_state(&state, &overlay).unwrap();
    assert_eq!(overlay.nodes["epsilon-regularisation"]["activations"], 2);
    assert_eq!(overlay.nodes["epsilon-regularisation"]["last_activated"], "2025-05-01");
    assert_eq!(overlay.nodes["lippmann-schwinger"]["activations"], 7, "other entries stay");

    let after = snapshot(&k.repo);
    let again = run(&k, &["--json", "migrate"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(parse(&again.stdout)["written"], false);
    assert_eq!(parse(&again.stdout)["files"], serde_json::json!([]));
    assert_eq!(after, snapshot(&k.repo), "a second run changes nothing");

    let build = run(&k, &["build"]);
    assert!(build.status.success(), "{}", stderr(&build));

    // A v1 global node is reported for upstream migration, never rewritten.
    let global = k.vault.join("green-operator.md");
    let text = std::fs::read_to_string(&global).unwrap().replace("akms_schema: v2", "akms_schema: v1");
    std::fs::write(&global, text).unwrap();
    let vault_v1 = snapshot(&k.vault);
    let out = run(&k, &["--json", "migrate"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(parse(&out.stdout)["upstream"][0], global.to_str().unwrap());
    let text = run(&k, &["migrate"]);
    assert!(
        stderr(&text).contains("green-operator.md: an older schema in the read-only global vault"),
        "{}",
        stderr(&text)
    );
    assert_eq!(vault_v1, snapshot(&k.vault));
    std::fs::write(&global, &vault_before[global.strip_prefix(&k.vault).unwrap()]).unwrap();
    assert_eq!(vault_before, snapshot(&k.vault));

    // Bad input: one error line naming the file, exit 2, nothing written.
    std::fs::write(&node, v1_text.replace("tags: [green-operator, numerics]", "tags: [green-operator")).unwrap();
    let before = snapshot(&k.repo);
    let out = run(&k, &["migrate"]);
    assert_eq!(out.status.code(), Some(2));
    let line = assert_one_error_line(&out);
    assert!(line.contains("knowledge/local-nodes/epsilon-regularisation.md:"), "{line}");
    assert_eq!(before, snapshot(&k.repo));
}

#[test]
fn fr_q02_query_returns_the_roles_subgraph_ranked_and_deterministic() {
    let k = knowledge();
    let line = assert_one_error_line(&run(&k, &["query", "--tags", "green-operator"]));
    assert!(line.contains("agents knowledge build"), "{line}");
    assert!(run(&k, &["build"]).status.success());

    let out = run(&k, &["--json", "query", "--tags", "green-operator", "--role", "physics_reviewer"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = parse(&out.stdout);
    let seeds: Vec<&str> = s["seeds"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(seeds, ["epsilon-regularisation", "green-operator", "lippmann-schwinger"]);
    let nodes: Vec<&str> = s["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node"].as_str().unwrap_or_else(|| n["id"].as_str().unwrap()))
        .collect();
    for seed in &seeds {
        assert!(nodes.contains(seed), "every seed is kept: {s:#}");
    }
    // Ranked best first (physics_reviewer ranks by confidence), ties by id;
    // the pitfall-connected session node joins after them, regardless of rank.
    let all = s["nodes"].as_array().unwrap();
    let ranks: Vec<f64> = all.iter().filter(|n| n["pitfall"] == false).map(|n| n["rank"].as_f64().unwrap()).collect();
    assert!(ranks.windows(2).all(|w| w[0] >= w[1]), "{ranks:?}");
    let pitfalls: Vec<&str> = all.iter().filter(|n| n["pitfall"] == true).map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(pitfalls, ["session-phase2-task3"], "{s:#}");
    assert_eq!(
        stdout(&run(&k, &["--json", "query", "--tags", "green-operator", "--role", "physics_reviewer"])),
        stdout(&out)
    );

    // A task seeds the query with its tags (derived when it has none).
    let task = k.repo.join("task.json");
    std::fs::write(
        &task,
        r#"{"task_id": "T", "scope": ["docs/lippmann-schwinger-derivation.md"], "akms_tags": [], "akms_schema": "v2"}"#,
    )
    .unwrap();
    let by_task = parse(&run(&k, &["--json", "query", "--task", task.to_str().unwrap()]).stdout);
    assert!(by_task["tags"].as_array().unwrap().iter().any(|t| t == "green-operator"), "{by_task:#}");
    assert!(std::fs::read_to_string(&task).unwrap().contains(r#""akms_tags": []"#), "query never writes the task");

    // Bad requests: exit 2, one line.
    let line = assert_one_error_line(&run(&k, &["query", "--tags", "fft", "--role", "poet"]));
    assert!(line.contains("unknown role `poet`") && line.contains("implementer"), "{line}");
    let line = assert_one_error_line(&run(&k, &["query"]));
    assert!(line.contains("no seed tags"), "{line}");
}
