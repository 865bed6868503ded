//! `agents mcp` end to end: JSON-RPC over the real binary's stdio, and the
//! official Python MCP client (`mcp_client.py`) when it is installed.

mod common;
#[path = "common/fixture_model.rs"]
mod fixture_model;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

const RETRY_V1: &str = "import time\n\ndef retry(fn, attempts=3):\n    \"\"\"Call fn until it succeeds.\"\"\"\n    for attempt in range(attempts):\n        try:\n            return fn()\n        except OSError:\n            if attempt == attempts - 1:\n                raise\n";
const RETRY_V2: &str = "import time\n\ndef retry_with_backoff(fn, attempts=3):\n    \"\"\"Call fn until it succeeds, pausing between attempts.\"\"\"\n    delay = 0.1\n    for attempt in range(attempts):\n        try:\n            return fn()\n        except OSError:\n            if attempt == attempts - 1:\n                raise\n            time.sleep(delay)\n            delay = delay * 2\n";
const STRINGS: &str = "def title_case(text):\n    \"\"\"Capitalize every word.\"\"\"\n    return ' '.join(w.capitalize() for w in text.split())\n";

struct Fixture {
    _dirs: common::Dirs,
    home: PathBuf,
    repo: PathBuf,
}

impl Fixture {
    /// A repository with history: net/retry.py written twice, util/strings.py once.
    fn new() -> Fixture {
        let dirs = common::dirs();
        let (home, repo) = (dirs.home.clone(), dirs.repo.clone());
        common::git(&repo, &["init", "--quiet", "--initial-branch=main"], 0);
        for (n, (path, content, subject)) in [
            ("net/retry.py", RETRY_V1, "Add a retry helper"),
            ("util/strings.py", STRINGS, "Add string helpers"),
            ("net/retry.py", RETRY_V2, "Pause between retry attempts"),
        ]
        .into_iter()
        .enumerate()
        {
            let file = repo.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, content).unwrap();
            common::git(&repo, &["add", path], n);
            common::git(&repo, &["commit", "--quiet", "--no-verify", "-m", subject], n);
        }
        Fixture { _dirs: dirs, home, repo }
    }

    fn server(&self) -> Server {
        self.server_with(&["mcp"], &[])
    }

    fn server_with(&self, args: &[&str], env: &[(&str, &Path)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agents"))
            .args(args)
            .envs(env.iter().copied())
            .env("AGENTS_HOME", &self.home)
            .env_remove("AGENTS_LOG")
            .current_dir(&self.repo)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("agents mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Server { child, stdin: Some(stdin), stdout, next_id: 1 }
    }
}

/// A running `agents mcp`, spoken to in newline-delimited JSON-RPC.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and returns the response with its id (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the server closed stdout while {method} was pending");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin and waits: the server ends cleanly when its client goes.
    fn finish(mut self) -> std::process::Output {
        drop(self.stdin.take());
        self.child.wait_with_output().unwrap()
    }
}

fn handshake(server: &mut Server) -> Value {
    let init = server.request(
        "initialize",
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "agents-test", "version": "0"}
        }),
    );
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    init
}

#[test]
fn the_server_speaks_json_rpc_over_stdio() {
    let fx = Fixture::new();
    let mut server = fx.server();
    let init = handshake(&mut server);
    assert_eq!(init["result"]["serverInfo"]["name"], "agents", "{init:#}");
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init:#}");

    let tools = server.request("tools/list", json!({}));
    let mut names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "get_context_budget",
            "get_loadout",
            "index_status",
            "query_history",
            "record_session",
            "refresh_index",
            "request_context"
        ]
    );
    let schema = &tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "request_context").unwrap()
        ["inputSchema"];
    for field in ["query", "focus", "depth", "max_tokens", "temporal", "preferred_strategies", "path", "format"] {
        assert!(schema["properties"][field].is_object(), "{field}: {schema:#}");
    }

    // The first request indexes the repository; the context respects its budget.
    let reply = server
        .call("request_context", json!({"query": "pause between retry attempts", "max_tokens": 1200, "depth": 9}));
    let result = &reply["result"];
    assert_ne!(result["isError"], json!(true), "{reply:#}");
    let summary = &result["structuredContent"];
    assert_eq!(summary["available_tokens"], 1200, "{reply:#}");
    let used = summary["rendered_tokens"].as_u64().unwrap();
    assert!(used > 0 && used <= 1200, "{reply:#}");
    assert_eq!(summary["ranked_files"][0], "net/retry.py", "{reply:#}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("## net/retry.py") && text.contains("def retry_with_backoff"), "{text}");

    // The other tools.
    let history = server.call("query_history", json!({"file": "net/retry.py"}));
    let subjects: Vec<&str> = history["result"]["structuredContent"]["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects, ["Pause between retry attempts", "Add a retry helper"], "{history:#}");
    let revisions = server.call("query_history", json!({"node": "retry_with_backoff"}));
    assert_eq!(revisions["result"]["structuredContent"]["revisions"].as_array().unwrap().len(), 1, "{revisions:#}");
    let status = server.call("index_status", json!({}));
    assert_eq!(status["result"]["structuredContent"]["index"]["file_count"], 2, "{status:#}");
    let budget = server.call("get_context_budget", json!({"max_tokens": 3000}));
    assert_eq!(budget["result"]["structuredContent"]["available_tokens"], 3000, "{budget:#}");

    // An edit is seen by the next request.
    std::fs::write(fx.repo.join("util/strings.py"), format!("{STRINGS}\ndef shout(text):\n    return text.upper()\n"))
        .unwrap();
    let refreshed = server.call("refresh_index", json!({}));
    let report = &refreshed["result"]["structuredContent"]["report"];
    assert_eq!((report["changed"].as_u64(), report["unchanged"].as_u64()), (Some(1), Some(1)), "{refreshed:#}");

    // Malformed calls are protocol errors...
    let unknown = server.call("no_such_tool", json!({}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown:#}");
    let nameless = server.request("tools/call", json!({"arguments": {}}));
    assert!(nameless["error"]["code"].is_i64(), "{nameless:#}");
    server.send_line("this is not JSON-RPC");
    let unknown_method = server.request("context/please", json!({}));
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method:#}");
    // ...bad arguments are tool errors that say what to fix (as the protocol
    // asks, so a model can correct its call)...
    for (bad, says) in [
        (json!({"query": "retry", "max_tokens": "many"}), "expected u64"),
        (json!({"query": "retry", "depth": 12}), "depth"),
        (json!({"query": "   "}), "query"),
        (json!({"query": "retry", "phase": "later"}), "phase"),
    ] {
        let reply = server.call("request_context", bad.clone());
        assert_eq!(reply["result"]["isError"], true, "{bad}: {reply:#}");
        let message = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(message.contains(says), "{bad}: {message}");
    }
    let budgetless = server.call("get_context_budget", json!({"model": "no-such-model"}));
    assert!(budgetless["result"]["content"][0]["text"].as_str().unwrap().contains("no-such-model"), "{budgetless:#}");
    // ...and the server goes on serving.
    let again = server.call("request_context", json!({"query": "title case words", "max_tokens": 600}));
    assert!(again["result"]["structuredContent"]["rendered_tokens"].as_u64().unwrap() <= 600, "{again:#}");

    let out = server.finish();
    assert!(
        out.status.success(),
        "the server exits cleanly when stdin closes: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing after the last response");
}

const MEMORY: &str = "---\ntask_id: TASK-7\ntask_description: \"Retry with backoff\"\nphase_id: 1\ntimestamp: 2026-03-04T10:32:00\nagent_model: test-model\nloadout_used: loadouts/phase1.md\nstatus: complete\ntests_passed: 3\ntests_total: 3\nnodes_used: []\npitfalls_discovered:\n  - node_ref: null\n    description: \"Retries hide outages\"\n    severity: low\nakms_schema: v2\n---\n\n## Task Notes\n";

#[test]
fn fr_m03_record_session_validates_and_files_an_agent_memory() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.repo.join("knowledge/sessions")).unwrap();
    let mut server = fx.server();
    handshake(&mut server);
    let file = fx.repo.join("knowledge/sessions/TASK-7.md");

    // Malformed evidence is a tool error naming line and field; nothing is written.
    for (task, memory, says) in [
        ("TASK-7", MEMORY.replace("severity: low", "severity: dire"), "pitfalls_discovered[0].severity"),
        ("TASK-7", MEMORY.replace("akms_schema: v2", "akms_schema: v1"), "akms_schema"),
        ("TASK-8", MEMORY.to_owned(), "is not `TASK-8`"),
        ("../escape", MEMORY.to_owned(), "task_id"),
    ] {
        let reply = server.call("record_session", json!({"task_id": task, "memory": memory}));
        assert_eq!(reply["result"]["isError"], true, "{task}: {reply:#}");
        let message = reply["result"]["content"][0]["text"].as_str().unwrap();
        assert!(message.contains(says), "{says}: {message}");
        assert!(!file.exists());
    }

    let reply = server.call("record_session", json!({"task_id": "TASK-7", "memory": MEMORY}));
    assert_ne!(reply["result"]["isError"], json!(true), "{reply:#}");
    assert_eq!(reply["result"]["structuredContent"]["session"], "session-task-7", "{reply:#}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MEMORY);
    // The graph is never written by the tool.
    assert!(!fx.repo.join("knowledge/graph").exists());
    // The same text again is a no-op; other text for the task is refused.
    let again = server.call("record_session", json!({"task_id": "TASK-7", "memory": MEMORY}));
    assert_eq!(again["result"]["structuredContent"]["written"], false, "{again:#}");
    let other = server.call("record_session", json!({"task_id": "TASK-7", "memory": MEMORY.replace("3\n", "2\n")}));
    assert_eq!(other["result"]["isError"], true, "{other:#}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MEMORY);
    assert!(server.finish().status.success());
}

#[test]
fn get_loadout_returns_the_loadout_of_a_task_record_and_role() {
    let fx = Fixture::new();
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../agents-akms/tests/fixtures/golden");
    let vault = fx.home.join("vault");
    common::copy_tree(&golden.join("global"), &vault);
    common::copy_tree(&golden.join("repo/knowledge"), &fx.repo.join("knowledge"));
    let task = json!({"task_id": "phase2-task3", "akms_tags": ["green-operator"], "akms_schema": "v2"});

    // Before a build: a tool error that says what to run.
    let env = [("AKMS_GLOBAL_VAULT", vault.as_path())];
    let mut server = fx.server_with(&["mcp"], &env);
    handshake(&mut server);
    let reply = server.call("get_loadout", json!({"task": task}));
    assert_eq!(reply["result"]["isError"], true, "{reply:#}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("agents knowledge build"), "{reply:#}");

    let built = common::agents(&fx.home)
        .current_dir(&fx.repo)
        .env("AKMS_GLOBAL_VAULT", &vault)
        .args(["knowledge", "build"])
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", common::stderr(&built));
    let reply = server.call("get_loadout", json!({"task": task, "role": "physics_reviewer", "context_limit": 20000}));
    let result = &reply["result"];
    assert_ne!(result["isError"], json!(true), "{reply:#}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("---\ntask_id: phase2-task3\n"), "{text}");
    assert!(text.contains("agent_role: physics_reviewer\n") && text.contains("## Known Pitfalls"), "{text}");
    let report = &result["structuredContent"];
    assert_eq!(report["mode"], "routing", "{reply:#}");
    assert_eq!(report["path"], "knowledge/loadouts/phase2-task3-physics_reviewer-loadout.md", "{reply:#}");
    assert!(fx.repo.join("knowledge/loadouts/phase2-task3-physics_reviewer-loadout.md").exists());
    // Asked again: reused, the same text.
    let again = server.call("get_loadout", json!({"task": task, "role": "physics_reviewer", "context_limit": 20000}));
    assert_eq!(again["result"]["structuredContent"]["reused"], true, "{again:#}");
    assert_eq!(again["result"]["content"][0]["text"], result["content"][0]["text"]);
    // A record without task_id is a tool error naming the field.
    let bad = server.call("get_loadout", json!({"task": {"akms_schema": "v2"}}));
    assert_eq!(bad["result"]["isError"], true, "{bad:#}");
    assert!(bad["result"]["content"][0]["text"].as_str().unwrap().contains("task_id"), "{bad:#}");
    server.finish();
}

#[test]
fn an_edit_reaches_the_next_requests_without_refresh_index() {
    let fx = Fixture::new();
    let mut server = fx.server();
    handshake(&mut server);
    let ask = |server: &mut Server| {
        server.call("request_context", json!({"query": "shout loudly in upper case", "depth": 9}))
    };
    let before = ask(&mut server);
    assert!(!before["result"]["content"][0]["text"].as_str().unwrap().contains("def shout"), "{before:#}");
    // The server watches the repository (its project refreshes live by
    // default): the change is indexed after a short pause, unasked.
    std::fs::write(fx.repo.join("util/strings.py"), format!("{STRINGS}\ndef shout(text):\n    return text.upper()\n"))
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let reply = ask(&mut server);
        if reply["result"]["content"][0]["text"].as_str().unwrap().contains("def shout") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the edit never reached the context: {reply:#}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = server.finish();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_server_reopens_a_vector_index_another_process_changed() {
    let fx = Fixture::new();
    let model = fx.home.parent().unwrap().join("model");
    fixture_model::write(
        &model,
        &[
            RETRY_V1,
            RETRY_V2,
            STRINGS,
            "def give_up():\n    \"\"\"Stop trying and wait no more.\"\"\"\n",
            "module function",
        ],
        &[&["backoff", "pause", "wait", "sleep", "delay"]],
    );
    // Without watching, the server refreshes on each request and keeps its
    // vector index open between them.
    let mut server = fx.server_with(&["mcp", "--no-watch"], &[("AGENTS_EMBEDDING_MODEL", &model)]);
    handshake(&mut server);
    let semantic = json!({"query": "wait no more", "preferred_strategies": ["semantic-embedding"], "depth": 9});
    let before = server.call("request_context", semantic.clone());
    assert!(!before["result"]["content"][0]["text"].as_str().unwrap().contains("give_up"), "{before:#}");
    // Another process indexes a change and embeds it: the server's copy of the
    // vector index is stale, and the file list it compares against is current.
    std::fs::write(
        fx.repo.join("net/retry.py"),
        format!("{RETRY_V2}\ndef give_up():\n    \"\"\"Stop trying and wait no more.\"\"\"\n"),
    )
    .unwrap();
    let index = Command::new(env!("CARGO_BIN_EXE_agents"))
        .args(["index", "--wait"])
        .arg(&fx.repo)
        .env("AGENTS_HOME", &fx.home)
        .env("AGENTS_EMBEDDING_MODEL", &model)
        .output()
        .unwrap();
    assert!(index.status.success(), "{}", String::from_utf8_lossy(&index.stderr));
    let after = server.call("request_context", semantic);
    assert_eq!(after["result"]["structuredContent"]["strategies_used"][0], "semantic-embedding", "{after:#}");
    assert!(after["result"]["content"][0]["text"].as_str().unwrap().contains("def give_up"), "{after:#}");
    server.finish();
}

#[test]
fn agents_watch_prints_a_line_per_refresh() {
    let fx = Fixture::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agents"))
        .args(["--json", "watch", "--debounce-ms", "50"])
        .arg(&fx.repo)
        .env("AGENTS_HOME", &fx.home)
        .env_remove("AGENTS_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Lines arrive on a thread, so a missing one fails the test instead of hanging it.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut next = || -> Value {
        let line = rx.recv_timeout(std::time::Duration::from_secs(20));
        let line = line.unwrap_or_else(|e| {
            let _ = child.kill();
            panic!("no refresh line: {e}")
        });
        serde_json::from_str(&line).unwrap()
    };
    let first = next();
    assert_eq!((first["added"].as_u64(), first["search_files_indexed"].as_u64()), (Some(2), Some(2)), "{first}");
    std::fs::write(fx.repo.join("net/retry.py"), format!("{RETRY_V2}\ndef give_up():\n    pass\n")).unwrap();
    let changed = next();
    assert_eq!((changed["changed"].as_u64(), changed["unchanged"].as_u64()), (Some(1), Some(1)), "{changed}");
    assert_eq!(changed["search_files_indexed"], 1, "{changed}");
    std::fs::remove_file(fx.repo.join("util/strings.py")).unwrap();
    let removed = next();
    assert_eq!(
        (removed["removed"].as_u64(), removed["search_files_removed"].as_u64()),
        (Some(1), Some(1)),
        "{removed}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn the_python_mcp_client_talks_to_the_server() {
    let has_client = Command::new("python3").args(["-c", "import mcp"]).output().is_ok_and(|o| o.status.success());
    if !has_client {
        // CI installs the client (.ci/run) and sets this, so there the check always runs.
        assert!(
            std::env::var_os("AGENTS_REQUIRE_MCP_CLIENT").is_none(),
            "the Python `mcp` package is required: python3 -m pip install mcp"
        );
        eprintln!("skipped: the Python `mcp` package is not installed (python3 -m pip install mcp)");
        return;
    }
    let fx = Fixture::new();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_agents"))
        .arg(&fx.repo)
        .env("AGENTS_HOME", &fx.home)
        .env_remove("AGENTS_LOG")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("ok: malformed calls are protocol errors"), "{stdout}");
    println!("{stdout}");
}
