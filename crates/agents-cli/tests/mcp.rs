//! `agents mcp` end to end: JSON-RPC over the real binary's stdio, and the
//! official Python MCP client (`mcp_client.py`) when it is installed.

mod common;
#[path = "../../agents-engine/tests/common/fixture_model.rs"]
mod fixture_model;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

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
        self.server_in(&self.repo, args, env)
    }

    /// A server started in `dir`.
    fn server_in(&self, dir: &Path, args: &[&str], env: &[(&str, &Path)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_agents"))
            .args(args)
            .envs(env.iter().copied())
            .env("AGENTS_HOME", &self.home)
            .env_remove("AGENTS_LOG")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("agents mcp starts");
        let stdin = child.stdin.take().unwrap();
        // Lines are read on a thread, so a missing reply fails the test
        // instead of hanging it.
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, replies) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Server { child, stdin: Some(stdin), replies, next_id: 1 }
    }
}

/// A running `agents mcp`, spoken to in newline-delimited JSON-RPC.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The lines the server writes.
    replies: std::sync::mpsc::Receiver<String>,
    next_id: u64,
}

impl Server {
    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    fn send_line(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next message the server writes (a minute at most: a hang guard).
    fn next_message(&mut self) -> Value {
        let line = self.replies.recv_timeout(std::time::Duration::from_secs(60)).unwrap_or_else(|e| {
            let _ = self.child.kill();
            panic!("no message from the server: {e}")
        });
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request and returns the response with its id (skipping notifications).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next_message();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin and waits: the server ends cleanly when its client goes.
    /// The output's stdout holds the lines written after the last one read.
    fn finish(mut self) -> std::process::Output {
        drop(self.stdin.take());
        let status = self.child.wait().unwrap();
        let rest: Vec<String> = self.replies.iter().collect();
        std::process::Output { status, stdout: rest.join("\n").into_bytes(), stderr: Vec::new() }
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
    // The same text again is a no-op.
    let again = server.call("record_session", json!({"task_id": "TASK-7", "memory": MEMORY}));
    assert_eq!(again["result"]["structuredContent"]["written"], false, "{again:#}");
    assert!(server.finish().status.success());
}

/// Issue 19 item 1: `request_context` keeps the budget in the format it
/// returns, and its structured result counts that text.
#[test]
fn request_context_keeps_the_budget_in_every_format() {
    use agents_core::tokens::{TokenCounter, Tokenizer};
    let fx = Fixture::new();
    // Many small functions: the Markdown fills the budget, and the markup of
    // XML and JSON around each one would overflow it.
    for i in 0..40 {
        let text = format!(
            "def retry_helper_{i}(value):\n    \"\"\"Retry helper {i} for <value> & co.\"\"\"\n    return value * {i}\n"
        );
        std::fs::write(fx.repo.join(format!("net/helper_{i:02}.py")), text).unwrap();
    }
    let mut server = fx.server();
    handshake(&mut server);
    for format in ["md", "xml", "json"] {
        let reply = server.call(
            "request_context",
            json!({"query": "retry helper value", "max_tokens": 800, "depth": 9, "format": format}),
        );
        let result = &reply["result"];
        assert_ne!(result["isError"], json!(true), "{reply:#}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let tokens = Tokenizer::default().count(text) as u64;
        let summary = &result["structuredContent"];
        assert!(tokens <= 800, "{format}: {tokens} tokens for a budget of 800");
        assert_eq!(summary["rendered_tokens"].as_u64(), Some(tokens), "{format}: {summary:#}");
        assert_eq!(summary["is_within_budget"], true, "{format}: {summary:#}");
        assert!(summary["fragments"].as_u64().unwrap() > 0, "{format}: {summary:#}");
        match format {
            "xml" => assert!(text.starts_with("<context ") && text.trim_end().ends_with("</context>"), "{text}"),
            "json" => {
                let v: Value = serde_json::from_str(text).unwrap();
                assert_eq!(v["rendered_tokens"].as_u64(), Some(tokens), "{v:#}");
            }
            _ => assert!(text.contains("## net/"), "{text}"),
        }
    }
    assert!(server.finish().status.success());
}

/// Issue 18 item 2: other content for a recorded task id (a second plan
/// reusing it) never overwrites the recorded file; it is filed beside it.
#[test]
fn item_2_record_session_never_overwrites_a_recorded_session() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.repo.join("knowledge/sessions")).unwrap();
    let mut server = fx.server();
    handshake(&mut server);
    let file = fx.repo.join("knowledge/sessions/TASK-7.md");
    server.call("record_session", json!({"task_id": "TASK-7", "memory": MEMORY}));
    let second = MEMORY.replace("3\n", "2\n");
    let other = server.call("record_session", json!({"task_id": "TASK-7", "memory": second}));
    assert_ne!(other["result"]["isError"], json!(true), "{other:#}");
    assert_eq!(other["result"]["structuredContent"]["written"], true, "{other:#}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), MEMORY, "the recorded file is kept");
    let beside = std::path::PathBuf::from(other["result"]["structuredContent"]["file"].as_str().unwrap());
    assert_ne!(beside, file);
    assert!(beside.file_name().unwrap().to_str().unwrap().starts_with("TASK-7-"), "{beside:?}");
    assert_eq!(std::fs::read_to_string(&beside).unwrap(), second);
    // Recording the second text again finds it: nothing new.
    let again = server.call("record_session", json!({"task_id": "TASK-7", "memory": second}));
    assert_eq!(again["result"]["structuredContent"]["written"], false, "{again:#}");
    assert_eq!(std::fs::read_dir(fx.repo.join("knowledge/sessions")).unwrap().count(), 2);
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

/// The text of a tool result.
#[test]
fn get_context_budget_returns_what_the_session_has_left_and_when_to_refresh() {
    let fx = Fixture::new();
    let mut server = fx.server();
    handshake(&mut server);
    let fresh = server.call("get_context_budget", json!({"max_tokens": 4000}));
    let fresh = &fresh["result"]["structuredContent"];
    assert_eq!((fresh["available_tokens"].as_u64(), fresh["remaining_tokens"].as_u64()), (Some(4000), Some(4000)));
    assert_eq!((fresh["used_tokens"].as_u64(), fresh["needs_refresh"].as_bool()), (Some(0), Some(false)));

    let reply = server.call("request_context", json!({"query": "pause between retry attempts", "max_tokens": 3000}));
    let delivered = reply["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    assert!(!delivered.is_empty(), "{reply:#}");
    let after = server.call("get_context_budget", json!({}));
    let after = &after["result"]["structuredContent"];
    let used = after["used_tokens"].as_u64().unwrap();
    assert!(used > 0 && used <= 3000, "{after:#}");
    assert_eq!(after["available_tokens"], 4000, "the session's budget, not a fresh one: {after:#}");
    assert_eq!(after["remaining_tokens"].as_u64(), Some(4000 - used), "{after:#}");
    assert_eq!(after["requests"], 1);
    // The payload was assembled for 3,000 tokens; the session has 4,000 - used
    // left: it needs a refresh once that moved more than 30% away.
    let left = (4000 - used) as f64;
    assert_eq!(after["needs_refresh"].as_bool(), Some((left - 3000.0).abs() / 3000.0 > 0.30), "{after:#}");

    server.call("request_context", json!({"query": "title case words", "max_tokens": 3000}));
    let spent = server.call("get_context_budget", json!({}));
    let spent = &spent["result"]["structuredContent"];
    assert!(spent["used_tokens"].as_u64().unwrap() > used, "{spent:#}");
    assert_eq!(spent["requests"], 2);
    let left = spent["remaining_tokens"].as_u64().unwrap();
    assert_eq!(left, 4000u64.saturating_sub(spent["used_tokens"].as_u64().unwrap()));
    assert_eq!(spent["needs_refresh"].as_bool(), Some((left as f64 - 3000.0).abs() / 3000.0 > 0.30), "{spent:#}");
    assert!(server.finish().status.success());
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {reply:#}"))
}

/// Whether `agents status` knows a resource holding `path`.
fn is_indexed(home: &Path, path: &Path) -> bool {
    common::agents(home).arg("status").arg(path).output().unwrap().status.success()
}

#[test]
fn request_paths_are_confined_to_the_working_directory_allowed_roots_and_linked_resources() {
    let fx = Fixture::new();
    let outside = fx.home.parent().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.py"), "def secret_token():\n    return 'hunter2'\n").unwrap();
    std::os::unix::fs::symlink(&outside, fx.repo.join("escape")).unwrap();
    let mut server = fx.server();
    handshake(&mut server);
    let absolute = outside.to_str().unwrap();
    let refused = [
        ("request_context", json!({"query": "secret token", "path": absolute})),
        ("request_context", json!({"query": "secret token", "path": "../outside"})),
        ("request_context", json!({"query": "secret token", "path": "escape"})),
        ("request_context", json!({"query": "secret token", "path": "../../../../../../.."})),
        ("index_status", json!({"path": absolute})),
        ("refresh_index", json!({"path": "escape"})),
        ("query_history", json!({"path": "../outside"})),
        ("get_loadout", json!({"task": {"task_id": "t"}, "path": absolute})),
        ("record_session", json!({"task_id": "TASK-7", "memory": MEMORY, "path": absolute})),
    ];
    for (tool, arguments) in refused {
        let reply = server.call(tool, arguments.clone());
        assert_eq!(reply["result"]["isError"], true, "{tool} {arguments}: {reply:#}");
        let message = text(&reply);
        let shown = arguments["path"].as_str().unwrap();
        assert!(message.contains(&format!("path `{shown}`")), "{tool}: {message}");
        // The file-system root gets its own refusal; everything else says how to allow it.
        if !shown.ends_with("..") {
            assert!(message.contains("outside") && message.contains("--allow-root"), "{tool}: {message}");
        }
    }
    // A path that does not exist outside the roots is refused the same way,
    // so the answer tells nothing about what exists there.
    for path in [outside.join("nope").to_str().unwrap(), "escape/nope", "../outside/../outside/nope"] {
        let missing = server.call("index_status", json!({"path": path}));
        assert!(text(&missing).contains("outside"), "{path}: {missing:#}");
    }
    // One inside is reported missing.
    let missing = server.call("index_status", json!({"path": "net/nope"}));
    assert!(text(&missing).contains("net/nope") && !text(&missing).contains("outside"), "{missing:#}");
    assert!(!is_indexed(&fx.home, &outside), "nothing outside the roots was indexed");
    assert!(!fx.repo.join("knowledge").exists() && !outside.join("knowledge").exists());

    // Under the working directory: allowed.
    let inside = server.call("request_context", json!({"query": "retry", "path": "net"}));
    assert_ne!(inside["result"]["isError"], json!(true), "{inside:#}");
    server.finish();

    // --allow-root admits a directory, and a linked resource stays readable
    // by a server that does not name it.
    let mut server = fx.server_with(&["mcp", "--allow-root", absolute], &[]);
    handshake(&mut server);
    let allowed = server.call("request_context", json!({"query": "secret token", "path": absolute, "depth": 9}));
    assert_ne!(allowed["result"]["isError"], json!(true), "{allowed:#}");
    assert!(text(&allowed).contains("def secret_token"), "{allowed:#}");
    server.finish();
    let mut server = fx.server();
    handshake(&mut server);
    let linked = server.call("index_status", json!({"path": absolute}));
    assert_ne!(linked["result"]["isError"], json!(true), "{linked:#}");
    server.finish();

    // An --allow-root that is not a directory stops the server at once.
    let out = common::agents(&fx.home).args(["mcp", "--allow-root"]).arg(outside.join("nope")).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("--allow-root"), "{}", common::stderr(&out));
}

#[test]
fn the_file_system_root_and_the_home_folder_are_never_indexed_unless_linked() {
    let fx = Fixture::new();
    let user_home = fx.home.parent().unwrap().join("user");
    std::fs::create_dir_all(user_home.join("project")).unwrap();
    std::fs::write(user_home.join("project/notes.py"), "def remember():\n    pass\n").unwrap();
    let above_home = fx.home.parent().unwrap();
    let env = [("HOME", user_home.as_path())];
    // Even named as roots, `/`, the home folder and the folders holding it are refused.
    let args = ["mcp", "--allow-root", "/", "--allow-root", above_home.to_str().unwrap()];
    let mut server = fx.server_with(&args, &env);
    handshake(&mut server);
    for (path, says) in [
        ("/", "the file-system root"),
        (user_home.to_str().unwrap(), "home folder"),
        (above_home.to_str().unwrap(), "home folder"),
        ("/..", "the file-system root"),
    ] {
        let reply = server.call("request_context", json!({"query": "remember", "path": path}));
        assert_eq!(reply["result"]["isError"], true, "{path}: {reply:#}");
        assert!(text(&reply).contains(says) && text(&reply).contains("link-resource"), "{path}: {reply:#}");
    }
    assert!(!is_indexed(&fx.home, &user_home));
    // A project inside the home folder is fine.
    let project = user_home.join("project");
    let reply = server.call("index_status", json!({"path": project.to_str().unwrap()}));
    assert!(text(&reply).contains("not inside an indexed resource"), "{reply:#}");
    server.finish();

    // A server started in the home folder (or at `/`, as some clients do)
    // does not take it as a root: a project there needs --allow-root or a link.
    for dir in [user_home.as_path(), Path::new("/")] {
        let mut server = fx.server_in(dir, &["mcp"], &env);
        handshake(&mut server);
        let reply = server.call("index_status", json!({"path": project.to_str().unwrap()}));
        assert!(text(&reply).contains("outside"), "{}: {reply:#}", dir.display());
        let reply = server.call("index_status", json!({"path": "etc"}));
        assert_eq!(reply["result"]["isError"], true, "{}: {reply:#}", dir.display());
        server.finish();
    }
    let mut server = fx.server_in(&user_home, &["mcp", "--allow-root", project.to_str().unwrap()], &env);
    handshake(&mut server);
    let reply = server.call("index_status", json!({"path": "project"}));
    assert!(text(&reply).contains("not inside an indexed resource"), "{reply:#}");
    server.finish();

    // Linked on purpose, the home folder is readable.
    let linked = common::agents(&fx.home).args(["index"]).arg(&user_home).output().unwrap();
    assert!(linked.status.success(), "{}", common::stderr(&linked));
    let mut server = fx.server_with(&["mcp"], &env);
    handshake(&mut server);
    let reply = server.call("index_status", json!({"path": user_home.to_str().unwrap()}));
    assert_ne!(reply["result"]["isError"], json!(true), "{reply:#}");
    server.finish();
}

#[test]
fn malformed_messages_are_answered_and_the_server_goes_on() {
    let fx = Fixture::new();
    let mut server = fx.server();
    handshake(&mut server);
    let lines: [(&[u8], i64); 8] = [
        (b"this is not JSON-RPC\n", -32700),
        (b"\0\0\0\0\n", -32700),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"\xff\xfe\"}\n", -32700),
        (b"[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]\n", -32600),
        (b"\"ping\"\n", -32600),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 41}\n", -32600),
        (b"{\"jsonrpc\": \"1.0\", \"id\": 42, \"method\": \"tools/list\"}\n", -32600),
        (b"{\"jsonrpc\": \"2.0\", \"id\": 43, \"method\": \"tools/call\", \"params\": {\"name\": \"index_status\", \"arguments\": []}}\n", -32602),
    ];
    for (line, code) in lines {
        server.send_bytes(line);
        let reply = server.next_message();
        let shown = String::from_utf8_lossy(line);
        assert_eq!(reply["error"]["code"], code, "{shown}: {reply:#}");
        assert!(reply["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{shown}: {reply:#}");
        let id = match code {
            -32700 => Value::Null,
            _ => serde_json::from_str::<Value>(&shown).ok().map(|v| v["id"].clone()).unwrap_or(Value::Null),
        };
        assert_eq!(reply["id"], id, "{shown}: {reply:#}");
    }
    let array = server.request("tools/call", json!({"name": "index_status", "arguments": ["path"]}));
    assert_eq!(array["error"]["code"], -32602, "{array:#}");
    assert!(array["error"]["message"].as_str().unwrap().contains("arguments"), "{array:#}");

    // A budget of 0 is refused, not changed.
    for (tool, arguments) in [
        ("request_context", json!({"query": "retry", "max_tokens": 0})),
        ("get_context_budget", json!({"max_tokens": 0})),
    ] {
        let reply = server.call(tool, arguments);
        assert_eq!(reply["result"]["isError"], true, "{tool}: {reply:#}");
        assert!(text(&reply).contains("max_tokens: 0"), "{tool}: {reply:#}");
        assert!(!text(&reply).contains("budget of 1"), "{tool}: {reply:#}");
    }

    // The server still serves.
    let tools = server.request("tools/list", json!({}));
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools:#}");
    let out = server.finish();
    assert!(out.status.success());
}

#[test]
fn a_query_answers_while_another_resource_waits_to_write() {
    let fx = Fixture::new();
    let big = fx.home.parent().unwrap().join("big");
    for i in 0..2000 {
        let dir = big.join(format!("d{}", i / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}.py")), format!("def func_{i}(x):\n    return x + {i}\n")).unwrap();
    }
    let mut server = fx.server_with(&["mcp", "--allow-root", big.to_str().unwrap()], &[]);
    handshake(&mut server);
    let warm = server.call("request_context", json!({"query": "retry", "max_tokens": 800}));
    assert_ne!(warm["result"]["isError"], json!(true), "{warm:#}");

    // Another writer holds the database: the server's index run of the big
    // tree waits for it with the write connection, as a long run would.
    let db = rusqlite::Connection::open(fx.home.join("agents.db")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    let call = |id: u64, tool: &str, arguments: Value| {
        let params = json!({"name": tool, "arguments": arguments});
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    };
    // The index run first, then a status and a query on the indexed repository.
    server.send(&call(100, "request_context", json!({"query": "func", "path": big.to_str().unwrap()})));
    server.send(&call(101, "index_status", json!({})));
    server.send(&call(102, "request_context", json!({"query": "retry", "max_tokens": 800})));
    let mut order = Vec::new();
    while !(order.contains(&101) && order.contains(&102)) {
        match server.replies.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(line) => {
                let reply: Value = serde_json::from_str(&line).unwrap();
                assert_ne!(reply["result"]["isError"], json!(true), "{reply:#}");
                order.push(reply["id"].as_u64().unwrap_or(0));
            }
            Err(_) => {
                let _ = server.child.kill();
                panic!("the queries waited for the writer (answered: {order:?})");
            }
        }
    }
    db.execute_batch("ROLLBACK").unwrap();
    let big_reply = loop {
        let reply = server.next_message();
        if reply["id"] == 100 {
            break reply;
        }
    };
    order.sort_unstable();
    assert_eq!(order, [101, 102], "the queries answered before the index run: {order:?}");
    assert_ne!(big_reply["result"]["isError"], json!(true), "{big_reply:#}");
    assert!(text(&big_reply).contains("func_"), "{big_reply:#}");
    assert!(server.finish().status.success());
}

#[test]
fn agents_query_refuses_a_budget_of_0_instead_of_changing_it() {
    let fx = Fixture::new();
    let out = common::agents(&fx.home).args(["query", "retry", "--max-tokens", "0"]).arg(&fx.repo).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    let line = common::assert_one_error_line(&out);
    assert!(line.contains("max_tokens: 0") && !line.contains("budget of 1"), "{line}");
    assert!(!is_indexed(&fx.home, &fx.repo), "nothing was indexed");
}
