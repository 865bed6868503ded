//! The HTTP service in process: a real listener on 127.0.0.1:0, spoken to
//! with hyper's client, over an engine in a scratch home.

use http::HeaderMap;
use serde_json::Value;
use tokio::net::TcpStream;

use super::*;
use crate::cli::GlobalArgs;

const RETRY: &str = "import time\n\ndef retry_with_backoff(fn, attempts=3):\n    \"\"\"Call fn until it succeeds, pausing between attempts.\"\"\"\n    delay = 0.1\n    for attempt in range(attempts):\n        try:\n            return fn()\n        except OSError:\n            if attempt == attempts - 1:\n                raise\n            time.sleep(delay)\n            delay = delay * 2\n";

/// A server on a free port over a scratch home and repository.
struct Harness {
    _tmp: tempfile::TempDir,
    addr: SocketAddr,
    token: String,
    app: App,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
}

async fn start() -> Harness {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let (home, repo) = (root.join("home"), root.join("repo"));
    std::fs::create_dir_all(repo.join("net")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(repo.join("net/retry.py"), RETRY).unwrap();
    let global = GlobalArgs { home: Some(home.clone()), config: None, json: false, quiet: true, verbose: 0 };
    let settings = Settings::resolve(&global).unwrap();
    let shared = super::super::open_in(settings, false, repo, &[], "agents serve").unwrap();
    let (token, _) = token::load_or_create(&token::default_path(&home)).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cancel = CancellationToken::new();
    let secret = token.reveal().to_owned();
    let app = App::new(shared, token, true, cancel.child_token());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(run(
        listener,
        app.clone(),
        cancel,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(30),
    ));
    Harness { _tmp: tmp, addr, token: secret, app, stop: Some(stop), server }
}

/// A response: status, headers and the whole body as text.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The JSON-RPC message answering request `id`, from a JSON body or an
    /// event stream.
    fn message(&self, id: u64) -> Value {
        let is_stream = self.headers.get(CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let messages: Vec<Value> = if is_stream {
            self.body
                .lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .filter_map(|data| serde_json::from_str(data.trim()).ok())
                .collect()
        } else {
            vec![self.json()]
        };
        messages
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to request {id} in {} {}", self.status, self.body))
    }
}

impl Harness {
    /// One request on a new connection.
    async fn send(&self, method: Method, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Answer {
        let stream = TcpStream::connect(self.addr).await.unwrap();
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
        tokio::spawn(connection);
        let mut request = Request::builder().method(method).uri(path).header(http::header::HOST, self.addr.to_string());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = request.body(Full::new(Bytes::from(body))).unwrap();
        let response = sender.send_request(request).await.unwrap();
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        Answer { status: parts.status, headers: parts.headers, body: String::from_utf8(body.to_vec()).unwrap() }
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// A JSON-RPC message to the MCP endpoint with the token (and a session).
    async fn post(&self, session: Option<&str>, message: &Value) -> Answer {
        let bearer = self.bearer();
        let mut headers = vec![("authorization", bearer.as_str()), ("accept", "application/json, text/event-stream")];
        headers.push(("content-type", "application/json"));
        if let Some(session) = session {
            headers.push(("mcp-session-id", session));
            headers.push(("mcp-protocol-version", "2025-06-18"));
        }
        self.send(Method::POST, MCP_PATH, &headers, Some(message)).await
    }

    /// Initializes a session; returns its id.
    async fn session(&self) -> String {
        let init = self
            .post(
                None,
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "agents-test", "version": "0"}
                }}),
            )
            .await;
        assert_eq!(init.status, StatusCode::OK, "{}", init.body);
        let reply = init.message(1);
        assert_eq!(reply["result"]["serverInfo"]["name"], "agents", "{reply}");
        let session = init.headers.get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
        let initialized =
            self.post(Some(&session), &json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        assert_eq!(initialized.status, StatusCode::ACCEPTED, "{}", initialized.body);
        session
    }

    async fn call(&self, session: &str, id: u64, tool: &str, arguments: Value) -> Value {
        let answer = self
            .post(
                Some(session),
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.message(id)
    }

    /// Stops the server and waits for it.
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        self.server.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_health_check_needs_no_token_and_tells_no_secret() {
    let server = start().await;
    let health = server.send(Method::GET, HEALTH_PATH, &[], None).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.json(), json!({"status": "ok", "name": "agents", "version": env!("CARGO_PKG_VERSION")}));
    assert!(!health.body.contains(&server.token));
    let post = server.send(Method::POST, HEALTH_PATH, &[], None).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(post.json()["error"], "method_not_allowed");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_wrong_token_gets_401_with_a_json_error() {
    let server = start().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}
    }});
    let accept = ("accept", "application/json, text/event-stream");
    let wrong = format!("Bearer {}", "0".repeat(server.token.len()));
    let truncated = format!("Bearer {}", &server.token[..server.token.len() - 1]);
    let basic = format!("Basic {}", server.token);
    for (headers, error) in [
        (vec![accept], "unauthorized"),
        (vec![accept, ("authorization", "Bearer")], "unauthorized"),
        (vec![accept, ("authorization", basic.as_str())], "unauthorized"),
        (vec![accept, ("authorization", wrong.as_str())], "invalid_token"),
        (vec![accept, ("authorization", truncated.as_str())], "invalid_token"),
    ] {
        let answer = server.send(Method::POST, MCP_PATH, &headers, Some(&initialize)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{headers:?}: {}", answer.body);
        let body = answer.json();
        assert_eq!(body["error"], error, "{body}");
        assert!(body["message"].as_str().unwrap().contains("--print-token"), "{body}");
        assert!(!answer.body.contains(&server.token), "the token leaked: {}", answer.body);
        let challenge = answer.headers.get(WWW_AUTHENTICATE).unwrap().to_str().unwrap();
        assert!(challenge.starts_with("Bearer"), "{challenge}");
    }
    // Two Authorization headers, one of them right, are refused too.
    let bearer = server.bearer();
    let twice = server
        .send(
            Method::POST,
            MCP_PATH,
            &[accept, ("authorization", &bearer), ("authorization", &wrong)],
            Some(&initialize),
        )
        .await;
    assert_eq!(twice.status, StatusCode::UNAUTHORIZED);
    // Every path but the health check is guarded; with the token an unknown one is 404.
    let unknown = server.send(Method::GET, "/admin", &[], None).await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    let unknown = server.send(Method::GET, "/admin", &[("authorization", &bearer)], None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.json()["error"], "not_found");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_initializes_lists_the_tools_and_requests_context() {
    let server = start().await;
    let session = server.session().await;
    let list = server.post(Some(&session), &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    let tools: Vec<String> = list.message(2)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    for tool in ["request_context", "query_history", "get_context_budget", "index_status", "refresh_index"] {
        assert!(tools.iter().any(|t| t == tool), "{tool} missing from {tools:?}");
    }
    let reply =
        server.call(&session, 3, "request_context", json!({"query": "retry with backoff", "max_tokens": 1200})).await;
    let result = &reply["result"];
    assert_ne!(result["isError"], json!(true), "{reply}");
    let summary = &result["structuredContent"];
    assert_eq!(summary["available_tokens"], 1200, "{summary}");
    assert!(summary["rendered_tokens"].as_u64().unwrap() <= 1200, "{summary}");
    assert!(summary["ranked_files"].as_array().unwrap().contains(&json!("net/retry.py")), "{summary}");
    // A path outside the roots names the serving command in its advice.
    let outside = server.call(&session, 4, "index_status", json!({"path": "/"})).await;
    assert_eq!(outside["result"]["isError"], true, "{outside}");
    // The session ends on DELETE; its id is then unknown.
    let bearer = server.bearer();
    let deleted =
        server.send(Method::DELETE, MCP_PATH, &[("authorization", &bearer), ("mcp-session-id", &session)], None).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    let gone = server.post(Some(&session), &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_at_once_share_the_engine_and_keep_their_own_budgets() {
    let server = start().await;
    let (a, b) = tokio::join!(server.session(), server.session());
    assert_ne!(a, b);
    let (first, second) = tokio::join!(
        server.call(&a, 2, "request_context", json!({"query": "retry with backoff", "max_tokens": 900})),
        server.call(&b, 2, "request_context", json!({"query": "pause between attempts", "max_tokens": 700})),
    );
    for (reply, budget) in [(&first, 900), (&second, 700)] {
        assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
        assert_eq!(reply["result"]["structuredContent"]["available_tokens"], budget, "{reply}");
    }
    // Session a spent tokens; a third session has spent none.
    let c = server.session().await;
    let spent_a = server.call(&a, 3, "get_context_budget", json!({})).await;
    let spent_c = server.call(&c, 3, "get_context_budget", json!({})).await;
    let used = |reply: &Value| reply["result"]["structuredContent"]["used_tokens"].as_u64().unwrap();
    assert!(used(&spent_a) > 0, "{spent_a}");
    assert_eq!(used(&spent_c), 0, "{spent_c}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_mid_request_leaves_the_server_serving_others() {
    let server = start().await;
    let session = server.session().await;
    let gone = {
        let addr = server.addr;
        let bearer = server.bearer();
        let session = session.clone();
        tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
            tokio::spawn(connection);
            let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
                "name": "refresh_index", "arguments": {}
            }});
            let request = Request::builder()
                .method(Method::POST)
                .uri(MCP_PATH)
                .header(http::header::HOST, addr.to_string())
                .header("authorization", bearer)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", session)
                .body(Full::new(Bytes::from(message.to_string())))
                .unwrap();
            let _ = sender.send_request(request).await;
        })
    };
    // Once the request is in the server, the client goes away.
    while server.app.in_flight.count.load(Ordering::SeqCst) == 0 && !gone.is_finished() {
        tokio::task::yield_now().await;
    }
    gone.abort();
    let _ = gone.await;
    let other = server.session().await;
    let reply = server.call(&other, 2, "request_context", json!({"query": "retry", "max_tokens": 500})).await;
    assert_ne!(reply["result"]["isError"], json!(true), "{reply}");
    // The first session, whose client went away mid-request, is served too.
    let again = server.call(&session, 10, "index_status", json!({})).await;
    assert_ne!(again["result"]["isError"], json!(true), "{again}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_request_in_flight_then_refuses_connections() {
    let server = start().await;
    let session = server.session().await;
    let addr = server.addr;
    let request = {
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "request_context", "arguments": {"query": "retry", "max_tokens": 600}
        }});
        let bearer = server.bearer();
        let session = session.clone();
        let server_addr = server.addr;
        tokio::spawn(async move {
            let stream = TcpStream::connect(server_addr).await.unwrap();
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.unwrap();
            tokio::spawn(connection);
            let request = Request::builder()
                .method(Method::POST)
                .uri(MCP_PATH)
                .header(http::header::HOST, server_addr.to_string())
                .header("authorization", bearer)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18")
                .body(Full::new(Bytes::from(message.to_string())))
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        })
    };
    while server.app.in_flight.count.load(Ordering::SeqCst) == 0 && !request.is_finished() {
        tokio::task::yield_now().await;
    }
    server.stop().await;
    let (status, body) = request.await.unwrap();
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body.contains("\"id\":7") && body.contains("rendered_tokens"), "{body}");
    assert!(TcpStream::connect(addr).await.is_err(), "the listener is closed");
}
