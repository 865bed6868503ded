//! `agents serve` end to end: the real binary on a free port, its token
//! file, health check and shutdown, and the official Python MCP client over
//! streamable HTTP (`mcp_http_client.py`) when it is installed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const RETRY: &str = "import time\n\ndef retry_with_backoff(fn, attempts=3):\n    \"\"\"Call fn until it succeeds, pausing between attempts.\"\"\"\n    delay = 0.1\n    for attempt in range(attempts):\n        try:\n            return fn()\n        except OSError:\n            if attempt == attempts - 1:\n                raise\n            time.sleep(delay)\n            delay = delay * 2\n";

/// A running `agents serve --bind 127.0.0.1:0 --json`.
struct Server {
    child: Child,
    /// The start-up line.
    started: Value,
    /// Where the server's stderr (its log) goes.
    log: PathBuf,
}

impl Server {
    /// Starts the server in `repo` with `AGENTS_LOG=trace` (the most it
    /// logs) and reads its start-up line.
    fn start(home: &Path, repo: &Path, args: &[&str]) -> Server {
        let log = home.join("serve.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_agents"))
            .args(["serve", "--bind", "127.0.0.1:0", "--json"])
            .args(args)
            .env("AGENTS_HOME", home)
            .env("AGENTS_LOG", "trace")
            .current_dir(repo)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("agents serve starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let started = serde_json::from_str(&line).unwrap_or_else(|e| {
            let _ = child.kill();
            panic!("no start-up line ({e}): {line:?}\n{}", std::fs::read_to_string(&log).unwrap_or_default())
        });
        Server { child, started, log }
    }

    fn address(&self) -> &str {
        self.started["address"].as_str().unwrap()
    }

    /// Sends SIGTERM and waits (a minute at most: a hang guard) for a clean exit.
    fn terminate(mut self) -> String {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(status.success(), "{status}\n{log}");
        log
    }
}

/// A GET over a plain socket: the status line and the body.
fn get(address: &str, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_owned(), body.to_owned())
}

fn fixture() -> common::Dirs {
    let dirs = common::dirs();
    std::fs::create_dir_all(dirs.repo.join("net")).unwrap();
    std::fs::write(dirs.repo.join("net/retry.py"), RETRY).unwrap();
    dirs
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn print_token_makes_the_token_once_and_reuses_it() {
    let dirs = fixture();
    let first = common::ok(&dirs.home, &["serve", "--print-token"]);
    let token = first.trim();
    assert_eq!(token.len(), 64, "{first}");
    let file = dirs.home.join("serve/token");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
    assert_eq!(common::ok(&dirs.home, &["serve", "--print-token"]), first);

    let elsewhere = dirs.root.join("elsewhere/token");
    let other = common::ok(&dirs.home, &["serve", "--print-token", "--token-file", elsewhere.to_str().unwrap()]);
    assert_ne!(other, first);
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), other);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = common::agents(&dirs.home).args(["serve", "--print-token"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let error = common::assert_one_error_line(&out);
        assert!(error.contains(&file.display().to_string()) && error.contains("chmod 600"), "{error}");
        assert!(!error.contains(token), "{error}");
    }
}

#[test]
fn serve_reports_its_port_answers_health_and_stops_on_sigterm() {
    let dirs = fixture();
    let server = Server::start(&dirs.home, &dirs.repo, &[]);
    let token = std::fs::read_to_string(dirs.home.join("serve/token")).unwrap().trim().to_owned();
    let started = &server.started;
    assert_eq!(started["event"], "listening");
    assert_eq!(started["token_file"], dirs.home.join("serve/token").display().to_string());
    let address = server.address().to_owned();
    assert!(address.starts_with("127.0.0.1:") && !address.ends_with(":0"), "{started}");
    assert_eq!(started["url"], format!("http://{address}/mcp"));
    assert!(!started.to_string().contains(&token), "{started}");

    let (status, body) = get(&address, "/health");
    assert!(status.contains(" 200 "), "{status}");
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["version"], env!("CARGO_PKG_VERSION"));
    let (status, body) = get(&address, "/mcp");
    assert!(status.contains(" 401 "), "{status}");
    assert!(body.contains("unauthorized"), "{body}");

    // A second server cannot take the same port: one clear error.
    let out = common::agents(&dirs.home).args(["serve", "--bind", &address]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let error = common::assert_one_error_line(&out);
    assert!(error.contains(&format!("--bind {address}")), "{error}");

    let log = server.terminate();
    assert!(!log.contains(&token), "the token is in the log");
    assert!(TcpStream::connect(&address).is_err(), "still listening after SIGTERM");
}

#[test]
fn the_python_mcp_client_talks_to_the_server_over_http() {
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
    let dirs = fixture();
    let server = Server::start(&dirs.home, &dirs.repo, &[]);
    let base = format!("http://{}", server.address());
    let token_file = dirs.home.join("serve/token");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_http_client.py");
    let out = Command::new("python3").arg(&script).arg(&base).arg(&token_file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let log = std::fs::read_to_string(&server.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        panic!("{stdout}\n{stderr}\nserver log (last lines, newest first):\n{}", tail.join("\n"));
    }
    for step in [
        "ok: a wrong token: 401",
        "ok: the client with a wrong token is refused",
        "ok: two sessions at once",
        "ok: a client went away while its tool call ran",
        "ok: after clients went away mid-request the server still serves",
    ] {
        assert!(stdout.contains(step), "{step} missing from:\n{stdout}");
    }
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_owned();
    let log = server.terminate();
    assert!(!log.contains(&token), "the token is in the log");
    println!("{stdout}");
}
