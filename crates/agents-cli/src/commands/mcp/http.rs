//! `agents serve`: the MCP tools of `agents mcp` over the protocol's
//! streamable HTTP transport (`rmcp`'s server on a small `hyper` HTTP/1.1
//! server), for many agents at once.
//!
//! | path | token | what |
//! |---|---|---|
//! | `GET /health` | no | `{"status": "ok", "name": "agents", "version": ...}` |
//! | `/mcp` (POST, GET, DELETE) | yes | the MCP endpoint: one session per client |
//! | anything else | yes | 404 |
//!
//! Every request but the health check must carry `Authorization: Bearer
//! TOKEN` ([`super::token`]); a missing or wrong one gets 401 and a JSON
//! error, and the header is taken off the request before `rmcp` sees it, so
//! no tool, log or trace downstream can show it. Each MCP session gets its
//! own [`ContextServer`] (its own context budget) over the one shared engine
//! ([`super::Shared`]), so the engine is opened once, not per client.
//!
//! Shutdown (SIGINT, SIGTERM) stops accepting, lets the requests in flight
//! finish for at most [`GRACE`], then ends the sessions and their event
//! streams and closes the connections.

use std::convert::Infallible;
use std::fmt::Display;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::token::{self, Token};
use super::{ContextServer, Shared};
use crate::exit::UsageError;
use crate::settings::Settings;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";

/// The health check's path.
pub const HEALTH_PATH: &str = "/health";

/// How long shutdown waits for the requests in flight.
pub const GRACE: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The body of every response.
pub type HttpBody = BoxBody<Bytes, Infallible>;

/// `agents serve`'s options, as the command line gives them.
#[derive(Debug)]
pub struct ServeOptions {
    pub bind: SocketAddr,
    /// The token file; `None`: `$AGENTS_HOME/serve/token`.
    pub token_file: Option<PathBuf>,
    /// Print the token and exit.
    pub print_token: bool,
    pub watch: bool,
    pub allow_roots: Vec<PathBuf>,
}

/// The HTTP application: the health check, the token check and the MCP
/// endpoint. Cheap to clone: one per connection.
#[derive(Clone)]
pub struct App {
    token: Arc<Token>,
    mcp: StreamableHttpService<ContextServer, LocalSessionManager>,
    in_flight: Arc<InFlight>,
}

impl App {
    /// The application over `shared`. `loopback` keeps `rmcp`'s check that
    /// the `Host` header names this machine (against DNS rebinding); a server
    /// bound to another address is reached by other names, so the check is
    /// off there (the token still guards it). `cancel` ends every session.
    pub fn new(shared: Arc<Shared>, token: Token, loopback: bool, cancel: CancellationToken) -> App {
        let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel);
        if !loopback {
            config = config.disable_allowed_hosts();
        }
        let mcp = StreamableHttpService::new(
            move || Ok(ContextServer::new(shared.clone())),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        App { token: Arc::new(token), mcp, in_flight: Arc::new(InFlight::default()) }
    }

    /// The answer to one request.
    pub async fn handle<B>(&self, mut request: Request<B>) -> Response<HttpBody>
    where
        B: hyper::body::Body + Send + 'static,
        B::Error: Display,
    {
        if request.uri().path() == HEALTH_PATH {
            return if matches!(*request.method(), Method::GET | Method::HEAD) {
                json_response(
                    StatusCode::OK,
                    &json!({"status": "ok", "name": "agents", "version": env!("CARGO_PKG_VERSION")}),
                )
            } else {
                error_response(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "the health check takes GET")
            };
        }
        if let Err(refusal) = self.authorize(request.headers()) {
            tracing::info!(method = %request.method(), path = request.uri().path(), "refused: {}", refusal.error);
            return refusal.response();
        }
        // Nothing after this point sees the token.
        request.headers_mut().remove(AUTHORIZATION);
        if request.uri().path() != MCP_PATH {
            return error_response(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("no such endpoint; the MCP endpoint is {MCP_PATH}, the health check {HEALTH_PATH}"),
            );
        }
        // A message or a session's end is in flight until its answer is
        // sent; a GET is a session's event stream, open as long as the
        // session, which shutdown ends.
        let guard = (request.method() != Method::GET).then(|| self.in_flight.enter());
        let ending = request.method() == Method::DELETE;
        let mut response = self.mcp.handle(request).await;
        if ending && response.status() == StatusCode::ACCEPTED {
            // A session ended: 204, which clients (the Python SDK) take for
            // success, where rmcp's 202 makes them warn that it failed.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        match guard {
            Some(guard) => response.map(|body| {
                body.map_frame(move |frame| {
                    let _held = &guard;
                    frame
                })
                .boxed()
            }),
            None => response,
        }
    }

    /// Whether the request carries the token.
    fn authorize(&self, headers: &http::HeaderMap) -> Result<(), Refusal> {
        let mut values = headers.get_all(AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(Refusal::missing());
        };
        let Some(given) = token::bearer(value.as_bytes()) else {
            return Err(Refusal::missing());
        };
        if self.token.matches(given) { Ok(()) } else { Err(Refusal::wrong()) }
    }
}

/// Why a request was refused (401).
struct Refusal {
    error: &'static str,
    message: &'static str,
    challenge: &'static str,
}

impl Refusal {
    fn missing() -> Refusal {
        Refusal {
            error: "unauthorized",
            message: "this server needs a bearer token: send the header `Authorization: Bearer TOKEN`; \
                      `agents serve --print-token` on the server's machine prints the token",
            challenge: "Bearer realm=\"agents\"",
        }
    }

    fn wrong() -> Refusal {
        Refusal {
            error: "invalid_token",
            message: "the bearer token is wrong: `agents serve --print-token` on the server's machine prints the \
                      right one",
            challenge: "Bearer realm=\"agents\", error=\"invalid_token\"",
        }
    }

    fn response(&self) -> Response<HttpBody> {
        let mut response = error_response(StatusCode::UNAUTHORIZED, self.error, self.message);
        response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static(self.challenge));
        response
    }
}

/// A JSON error: `{"error": CODE, "message": TEXT}`.
fn error_response(status: StatusCode, error: &str, message: &str) -> Response<HttpBody> {
    json_response(status, &json!({"error": error, "message": message}))
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response<HttpBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// The requests in flight, and a wake-up when there are none.
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    idle: tokio::sync::Notify,
}

/// One request in flight, until dropped.
struct InFlightGuard(Arc<InFlight>);

impl InFlight {
    fn enter(self: &Arc<Self>) -> InFlightGuard {
        self.count.fetch_add(1, Ordering::SeqCst);
        InFlightGuard(self.clone())
    }

    /// Returns once no request is in flight.
    async fn idle(&self) {
        loop {
            // Created before the check, so a wake-up between the two is kept.
            let idle = self.idle.notified();
            if self.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Serves `listener` until `shutdown` completes, then shuts down gracefully:
/// no new connections, the requests in flight get `grace` to finish,
/// `cancel` ends the sessions, and the connections close.
pub async fn run(
    listener: TcpListener,
    app: App,
    cancel: CancellationToken,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    tokio::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before
                    // it was accepted: the server goes on.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |request| {
            let app = app.clone();
            async move { Ok::<_, Infallible>(app.handle(request).await) }
        });
        let connection = graceful.watch(http.serve_connection(hyper_util::rt::TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A client that goes away mid-request ends its connection only.
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: no new connections; waiting for the requests in flight");
    // Connections close once their current request is answered.
    let closed = tokio::spawn(graceful.shutdown());
    if tokio::time::timeout(grace, app.in_flight.idle()).await.is_err() {
        tracing::warn!(
            requests = app.in_flight.count.load(Ordering::SeqCst),
            grace_s = grace.as_secs(),
            "requests still running after the grace period are dropped"
        );
    }
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), closed).await;
}

/// Completes on SIGINT or SIGTERM.
async fn signalled() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; stop the server with SIGINT");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `agents serve`: serves until SIGINT or SIGTERM (or prints the token).
pub fn serve(settings: Settings, options: ServeOptions) -> anyhow::Result<()> {
    let token_file = options.token_file.clone().unwrap_or_else(|| token::default_path(settings.home.root()));
    let (token, made) = token::load_or_create(&token_file).map_err(|e| UsageError(e.to_string()))?;
    if options.print_token {
        writeln!(std::io::stdout(), "{}", token.reveal())?;
        return Ok(());
    }
    if made {
        tracing::info!(file = %token_file.display(), "made a new bearer token");
    }
    let printer = settings.printer;
    let shared = super::open(settings, options.watch, &options.allow_roots, "agents serve")?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        let listener = TcpListener::bind(options.bind)
            .await
            .map_err(|e| UsageError(format!("--bind {}: cannot listen there: {e}", options.bind)))?;
        let address = listener.local_addr()?;
        let started = json!({
            "event": "listening",
            "address": address.to_string(),
            "url": format!("http://{address}{MCP_PATH}"),
            "health": format!("http://{address}{HEALTH_PATH}"),
            "token_file": token_file.display().to_string(),
            "version": env!("CARGO_PKG_VERSION"),
        });
        // A reader that went away is no reason not to serve.
        let mut stdout = std::io::stdout().lock();
        let _ = if printer.json {
            writeln!(stdout, "{started}")
        } else if !printer.quiet {
            writeln!(
                stdout,
                "agents serve: MCP on http://{address}{MCP_PATH} (health: {HEALTH_PATH}); bearer token in {} \
                 (`agents serve --print-token` prints it); stop with Ctrl-C",
                token_file.display()
            )
        } else {
            Ok(())
        };
        let _ = stdout.flush();
        drop(stdout);
        let cancel = CancellationToken::new();
        let app = App::new(shared, token, address.ip().is_loopback(), cancel.child_token());
        run(listener, app, cancel, signalled(), GRACE).await;
        anyhow::Ok(())
    });
    // Tool calls still running on blocking threads get a moment, not forever.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

#[cfg(test)]
mod tests;
