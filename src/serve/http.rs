//! `lackpy serve --listen HOST:PORT`: MCP over the Streamable HTTP
//! transport (rmcp's `StreamableHttpService`), in front of the same
//! per-client rules, caps and quotas as the unix socket.
//!
//! Each request passes, in order:
//! 1. the TCP connection cap (`serve.http.max_connections`; at it the
//!    oldest connection that has not sent a request with a valid token is
//!    closed to make room, else the oldest idle keep-alive connection of
//!    the client holding the most connections, and only when every open
//!    connection has a request in progress the new connection gets a
//!    `503` and close) and, with TLS, a handshake bounded by the request
//!    timeout;
//! 2. hyper's header timeout (`request_timeout_seconds`: a slowloris peer
//!    is dropped) and header size bound;
//! 3. drain (`503` once SIGTERM arrived) and the path (`/mcp` only, else `404`);
//! 4. the bearer token: `Authorization: Bearer T` where SHA-256(T) is some
//!    rule's `token_sha256` (compared in constant time); otherwise `401`
//!    with `WWW-Authenticate: Bearer` and a JSON body saying what is missing;
//!    then the client's share of requests in progress (its
//!    `max_connections`, at most half of `serve.http.max_connections`;
//!    else `429` and close: [`HttpServer::open_request`]);
//! 5. the body: at most `max_body_bytes` (`413`), all of it within
//!    `request_timeout_seconds` (`408`), of at most
//!    [`MAX_REQUEST_VALUES`] JSON values, counted before anything parses
//!    it (`413`);
//! 6. rmcp: `Host` and `Origin` against `allowed_hosts` / `allowed_origins`
//!    (DNS-rebinding guard, `403`), `Accept`/`Content-Type`, JSON-RPC parsing
//!    (`400`/`422`), the session header, then the MCP server; before it, a
//!    POST in a session whose request id is in flight there already gets a
//!    JSON-RPC error ([`HttpServer::claim_id`]);
//! 7. the reply: rmcp answers a request in a session with an SSE stream; when
//!    that stream is one JSON-RPC response and ends within [`JSON_WINDOW`]
//!    (a quick run), it goes out as one `application/json` body instead
//!    (see [`json_when_quick`]; measured in docs/BENCHMARKS.md).
//!
//! Clients are kept apart by giving every rule its own
//! `StreamableHttpService` and session manager: an `Mcp-Session-Id` is a
//! random UUID minted by the server, known only to the manager of the rule
//! that created it, so another client presenting it gets `404 Session not
//! found`. A notebook session (`run_program(session=…)`) lives inside one
//! MCP session's server, so it is reachable only through that server-minted
//! handle and only with the token that created it.
//!
//! One MCP session (or one stateless request) takes one connection slot of
//! the rule (`max_connections`), exactly as one unix connection does; the
//! server made for it is created only after the caps admit it, and a refusal
//! becomes `429` (the client's cap) or `503` (the server's) with a JSON body
//! naming the cap. The session ends on `DELETE`, when it has been idle for
//! `idle_timeout_seconds`, or at the end of the drain; its runs are cancelled
//! then.

use super::config::{ClientRule, HttpConfig, ServeConfig};
use super::conn::Activity;
use super::{ConnectionSlot, Refused, RefusedBy, Shared};
use crate::mcp::backend::Backend;
use crate::mcp::flow::MAX_REQUEST_VALUES;
use crate::mcp::server::LackpyServer;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::{Request, Response, StatusCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The MCP endpoint's path.
pub const MCP_PATH: &str = "/mcp";

/// Longest `Authorization` header value looked at.
const MAX_AUTH_HEADER: usize = 4096;

/// Largest request head (request line and headers) hyper buffers.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How long the reply to a POST in a session waits for its JSON-RPC
/// response before it starts as an SSE stream (see [`json_when_quick`]).
const JSON_WINDOW: Duration = Duration::from_millis(500);

/// Most SSE bytes held back while deciding; a larger response goes out as SSE.
const MAX_JSON_REPLY: usize = 8 << 20;

type HttpBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;
type Svc = StreamableHttpService<HttpSession, LocalSessionManager>;

/// What the service factory needs from the request that makes a server:
/// who the client is, and where to put a refusal.
struct CallCtx {
    shared: Arc<Shared>,
    cfg: Arc<ServeConfig>,
    rule: ClientRule,
    refused: Mutex<Option<Refused>>,
}

tokio::task_local! {
    static CALL: Arc<CallCtx>;
}

/// The MCP server of one HTTP session (or one stateless request): lackpy's
/// server over the client's backend, holding the client's connection slot
/// until rmcp drops it, which cancels its runs.
pub struct HttpSession {
    server: LackpyServer,
    backend: Arc<dyn Backend>,
    stop: watch::Sender<bool>,
    _slot: ConnectionSlot,
}

impl HttpSession {
    fn new(backend: Arc<dyn Backend>, slot: ConnectionSlot) -> Self {
        let (stop, rx) = watch::channel(false);
        HttpSession {
            server: LackpyServer::new(backend.clone(), rx),
            backend,
            stop,
            _slot: slot,
        }
    }
}

impl Drop for HttpSession {
    fn drop(&mut self) {
        self.stop.send_replace(true);
        self.backend.shutdown();
    }
}

impl ServerHandler for HttpSession {
    fn get_info(&self) -> ServerConfig {
        self.server.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.server.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.server.call_tool(request, context).await
    }
}

/// Make the server of a new session: admit the client under its caps.
fn make_session() -> Result<HttpSession, std::io::Error> {
    let ctx = CALL
        .try_with(Arc::clone)
        .map_err(|_| std::io::Error::other("lackpy serve: no client context for a new session"))?;
    let activity = Arc::new(Activity::default());
    // The backend of a workspace is made once (at startup, see
    // `Shared::warm`); only a workspace added by a reload blocks here.
    let admitted = tokio::task::block_in_place(|| {
        ctx.shared
            .admit_rule(&ctx.cfg, ctx.rule.clone(), activity, false)
    });
    match admitted {
        Ok((backend, slot)) => Ok(HttpSession::new(backend, slot)),
        Err(r) => {
            let message = r.message.clone();
            if let Ok(mut slot) = ctx.refused.lock() {
                *slot = Some(r);
            }
            Err(std::io::Error::other(message))
        }
    }
}

/// TLS settings from a PEM certificate chain and key.
///
/// # Errors
/// A file cannot be read or holds no usable certificate or key.
pub fn load_tls(cert: &Path, key: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| format!("{}: {e}", cert.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no PEM certificate", cert.display()));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

/// How long a connection accepted at the TCP cap waits for the slot of
/// the unproven connection it evicted (which gets 1 s to close).
const EVICT_WAIT: Duration = Duration::from_secs(2);

/// One TCP connection's standing under the TCP cap.
#[derive(Debug, Default)]
struct ConnState {
    /// A request on it carried a valid bearer token: evicted only while
    /// idle, and only when no unproven connection is left to evict.
    proven: std::sync::atomic::AtomicBool,
    /// The rule key of the last valid token sent on it.
    rule: Mutex<Option<String>>,
    /// Requests on it being answered (until their reply body is dropped):
    /// a connection with one is never evicted.
    busy: std::sync::atomic::AtomicUsize,
    /// Cancelled to close it (evicted for a newer connection at the cap).
    evict: CancellationToken,
}

/// One request being answered on a connection ([`ConnState::busy`]).
struct BusyGuard(Arc<ConnState>);

impl BusyGuard {
    fn new(conn: &Arc<ConnState>) -> Self {
        conn.busy.fetch_add(1, Ordering::SeqCst);
        BusyGuard(conn.clone())
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The HTTP front end: per-rule MCP services and the guards before them.
pub struct HttpServer {
    shared: Arc<Shared>,
    services: Mutex<HashMap<String, (Svc, Arc<LocalSessionManager>)>>,
    /// Cancelled at the end of the drain: every MCP session ends.
    pub cancel: CancellationToken,
    /// TCP connections being served now.
    open: std::sync::atomic::AtomicUsize,
    /// The one address the listener is bound to (not `0.0.0.0` or `::`):
    /// accepted as `Host` besides `allowed_hosts` ([`HttpServer::service_for`]).
    listen_ip: std::sync::OnceLock<std::net::IpAddr>,
    /// Connections that have not (yet) sent a request with a valid token,
    /// oldest first: at the TCP cap the oldest is closed for the new one
    /// ([`HttpServer::evict_one`]). Why: anyone who can connect could
    /// otherwise hold every slot (512 silent connections, renewed every
    /// `request_timeout_seconds`) and keep every client out.
    unproven: Mutex<std::collections::VecDeque<std::sync::Weak<ConnState>>>,
    /// Every connection holding a slot, oldest first: at the TCP cap with
    /// no unproven connection left, an idle one of the client holding the
    /// most is closed ([`HttpServer::evict_idle_proven`]).
    conns: Mutex<Vec<std::sync::Weak<ConnState>>>,
    /// Connections accepted at the TCP cap that wait for a slot
    /// ([`HttpServer::wait_for_slot`]), at most `max_connections`.
    waiting: std::sync::atomic::AtomicUsize,
    /// Connections evicted and not yet closed: slots about to be free.
    closing: std::sync::atomic::AtomicUsize,
    /// The JSON-RPC request ids of each session's POSTs being answered
    /// ([`HttpServer::claim_id`]).
    claims: Arc<Claims>,
    /// Requests being answered per rule key ([`HttpServer::open_request`]).
    requests: Arc<Mutex<HashMap<String, usize>>>,
}

/// One request of a rule being answered (until its reply body is dropped).
struct RequestGuard {
    requests: Arc<Mutex<HashMap<String, usize>>>,
    key: String,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let Ok(mut map) = self.requests.lock() else {
            return;
        };
        if let Some(n) = map.get_mut(&self.key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// Per session (`rule key`, `\n`, `Mcp-Session-Id`), the SHA-256 of each
/// JSON-RPC request id whose POST is being answered. At most one entry
/// per open POST, so bounded by the connection cap.
type Claims = Mutex<HashMap<String, std::collections::HashSet<String>>>;

/// A request id claimed in its session until the POST's reply body is
/// dropped (hyper took its last frame, or the client went away).
struct IdClaim {
    claims: Arc<Claims>,
    session: String,
    id: String,
}

impl Drop for IdClaim {
    fn drop(&mut self) {
        let Ok(mut map) = self.claims.lock() else {
            return;
        };
        if let Some(ids) = map.get_mut(&self.session) {
            ids.remove(&self.id);
            if ids.is_empty() {
                map.remove(&self.session);
            }
        }
    }
}

impl HttpServer {
    /// A front end over `shared`.
    pub fn new(shared: Arc<Shared>) -> Arc<Self> {
        Arc::new(HttpServer {
            shared,
            services: Mutex::new(HashMap::new()),
            cancel: CancellationToken::new(),
            open: std::sync::atomic::AtomicUsize::new(0),
            listen_ip: std::sync::OnceLock::new(),
            unproven: Mutex::new(std::collections::VecDeque::new()),
            conns: Mutex::new(Vec::new()),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            closing: std::sync::atomic::AtomicUsize::new(0),
            claims: Arc::new(Mutex::new(HashMap::new())),
            requests: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Count one request of `rule` as being answered, unless the rule has
    /// its share of the TCP slots in requests already: at most its own
    /// `max_connections` and at most half of `serve.http.max_connections`.
    /// The refusal is `429` with `Connection: close` (the slot is freed).
    /// Why: every request being answered holds a TCP connection, and an SSE
    /// stream (`GET /mcp`, up to 33 per session in rmcp; a long run's POST)
    /// holds it as long as the client likes: one token holder could hold
    /// every slot and keep every other client out (redteam-10, found with
    /// POSTs; GET streams do the same).
    fn open_request(
        &self,
        rule: &ClientRule,
        key: &str,
        cfg: &ServeConfig,
    ) -> Result<RequestGuard, Box<Response<HttpBody>>> {
        let share = rule
            .max_connections
            .min(cfg.http.max_connections / 2)
            .max(1);
        let mut map = self.requests.lock().map_err(|_| {
            Box::new(error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "lackpy serve: request table unavailable",
            ))
        })?;
        let n = map.entry(key.to_string()).or_insert(0);
        if *n >= share {
            let body = json!({"error": "client_requests", "message": format!(
                "lackpy serve: this client has {n} HTTP requests in progress (SSE streams and runs), its share of the connection slots: at most its max_connections ([[serve.clients]]) and half of serve.http.max_connections; close a stream or retry when one ends"
            )})
            .to_string();
            return Err(Box::new(
                Response::builder()
                    .status(StatusCode::TOO_MANY_REQUESTS)
                    .header(hyper::header::CONTENT_TYPE, "application/json")
                    .header(hyper::header::RETRY_AFTER, "1")
                    .header(hyper::header::CONNECTION, "close")
                    .body(Full::new(Bytes::from(body)).boxed())
                    .unwrap_or_else(|_| Response::new(Full::default().boxed())),
            ));
        }
        *n += 1;
        Ok(RequestGuard {
            requests: self.requests.clone(),
            key: key.to_string(),
        })
    }

    /// Claim the JSON-RPC request id of `body` (a POST in the known session
    /// `session` of rule `key`) for as long as its reply is being sent.
    /// `Ok(None)`: nothing to claim (not a request with an id). `Err`: the
    /// JSON-RPC error reply for a request whose id is already in flight in
    /// that session.
    /// Why: rmcp routes a session's responses by request id; a second
    /// pending request with the same id took the first one's route, and one
    /// of the two POSTs then never got its answer, its stream held open by
    /// keep-alives until the session idled out (redteam-10: 8 such POSTs
    /// held 8 connections for 300 s).
    fn claim_id(
        &self,
        key: &str,
        session: &str,
        body: &[u8],
    ) -> Result<Option<IdClaim>, Box<Response<HttpBody>>> {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<serde_json::Value>,
            method: Option<serde::de::IgnoredAny>,
        }
        // The body's values were counted already (`MAX_REQUEST_VALUES`);
        // only `id` is built. Anything that is not one request object is
        // left to rmcp, which refuses it or routes no response for it.
        let Ok(Head {
            id: Some(id),
            method: Some(_),
        }) = serde_json::from_slice::<Head>(body)
        else {
            return Ok(None);
        };
        if !(id.is_string() || id.is_number()) {
            return Ok(None);
        }
        let digest = lackpy_supervisor::sha256::hex(id.to_string().as_bytes());
        let session = format!("{key}\n{session}");
        let Ok(mut map) = self.claims.lock() else {
            return Ok(None);
        };
        if !map
            .entry(session.clone())
            .or_default()
            .insert(digest.clone())
        {
            let mut shown = id.to_string();
            if shown.len() > 64 {
                shown = format!("{}…", cut_chars(&shown, 64));
            }
            let body = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32600,
                "message": format!("lackpy serve: a request with id {shown} is already in flight in this session; JSON-RPC ids must be unique among a session's pending requests: send it with a fresh id"),
            }})
            .to_string();
            return Err(Box::new(
                Response::builder()
                    .status(StatusCode::OK)
                    .header(hyper::header::CONTENT_TYPE, "application/json")
                    .body(Full::new(Bytes::from(body)).boxed())
                    .unwrap_or_else(|_| Response::new(Full::default().boxed())),
            ));
        }
        Ok(Some(IdClaim {
            claims: self.claims.clone(),
            session,
            id: digest,
        }))
    }

    /// Keep `state` among the connections that may be evicted, forgetting
    /// those gone or proven once the lists outgrow `cap` twice.
    fn track_unproven(&self, state: &Arc<ConnState>, cap: usize) {
        if let Ok(mut q) = self.unproven.lock() {
            if q.len() >= cap.saturating_mul(2) {
                q.retain(|w| {
                    w.upgrade()
                        .is_some_and(|c| !c.proven.load(Ordering::SeqCst))
                });
            }
            q.push_back(Arc::downgrade(state));
        }
        if let Ok(mut all) = self.conns.lock() {
            if all.len() >= cap.saturating_mul(2) {
                all.retain(|w| w.strong_count() > 0);
            }
            all.push(Arc::downgrade(state));
        }
    }

    /// Close one connection to make room at the TCP cap: the oldest that
    /// has not sent a request with a valid token, else the oldest idle one
    /// of the client holding the most connections. Whether there was one.
    fn evict_one(&self) -> bool {
        self.evict_unproven() || self.evict_idle_proven()
    }

    /// Close the oldest open connection that has not sent a request with a
    /// valid token (nor been evicted already); whether there was one.
    fn evict_unproven(&self) -> bool {
        let Ok(mut q) = self.unproven.lock() else {
            return false;
        };
        while let Some(w) = q.pop_front() {
            let Some(c) = w.upgrade() else { continue };
            if c.proven.load(Ordering::SeqCst) || c.evict.is_cancelled() {
                continue;
            }
            c.evict.cancel();
            self.closing.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        false
    }

    /// Close the oldest idle keep-alive connection (no request being
    /// answered on it, not evicted already) of the client that holds the
    /// most open connections; whether there was one.
    /// Why: a client with a token could otherwise hold every slot with
    /// idle keep-alive connections, renewing each with a cheap request
    /// within `request_timeout_seconds`, and keep every other client out
    /// with `503` for as long as it liked (redteam-12). An idle keep-alive
    /// connection may be closed by a server at any time (RFC 9112 9.6);
    /// requests in progress are bounded per client already
    /// ([`HttpServer::open_request`]).
    fn evict_idle_proven(&self) -> bool {
        let Ok(mut all) = self.conns.lock() else {
            return false;
        };
        all.retain(|w| w.strong_count() > 0);
        let live: Vec<Arc<ConnState>> = all.iter().filter_map(std::sync::Weak::upgrade).collect();
        drop(all);
        let rule_of = |c: &ConnState| c.rule.lock().ok().and_then(|r| r.clone());
        let mut held: HashMap<String, usize> = HashMap::new();
        for c in &live {
            if let Some(k) = rule_of(c) {
                *held.entry(k).or_insert(0) += 1;
            }
        }
        let victim = live
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                c.proven.load(Ordering::SeqCst)
                    && c.busy.load(Ordering::SeqCst) == 0
                    && !c.evict.is_cancelled()
            })
            .max_by_key(|(i, c)| {
                let n = rule_of(c).and_then(|k| held.get(&k).copied()).unwrap_or(0);
                (n, std::cmp::Reverse(*i))
            })
            .map(|(_, c)| c.clone());
        match victim {
            Some(c) => {
                c.evict.cancel();
                self.closing.fetch_add(1, Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    /// A slot for a connection accepted at the TCP cap, within
    /// [`EVICT_WAIT`]. Unless one was `evicted` for it already, it closes
    /// a connection ([`HttpServer::evict_one`]) as soon as there is one to
    /// close: after a burst of new connections every evictable one may be
    /// closing already, while those waiting for their slots hold none yet.
    /// `None`: no slot came in time.
    /// Why retry: in such a burst a client with a token found only
    /// connections already evicted and got `503`, though slots were about
    /// to change hands (seen under load in CI).
    async fn wait_for_slot(
        &self,
        slots: Arc<tokio::sync::Semaphore>,
        mut evicted: bool,
    ) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let acquire = tokio::time::timeout(EVICT_WAIT, slots.acquire_owned());
        let mut acquire = std::pin::pin!(acquire);
        let mut tick = tokio::time::interval(Duration::from_millis(20));
        loop {
            tokio::select! {
                r = acquire.as_mut() => return r.ok().and_then(Result::ok),
                _ = tick.tick(), if !evicted => evicted = self.evict_one(),
            }
        }
    }

    /// End every session and connection, waiting up to `grace` for the
    /// last responses to be written.
    pub async fn close(&self, grace: Duration) {
        self.cancel.cancel();
        let deadline = tokio::time::Instant::now() + grace;
        while self.open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The MCP service of a rule (made at its first request). The HTTP
    /// settings are those in force when it is made.
    fn service_for(&self, key: &str, cfg: &ServeConfig) -> Option<(Svc, Arc<LocalSessionManager>)> {
        let mut map = self.services.lock().ok()?;
        if let Some(s) = map.get(key) {
            return Some(s.clone());
        }
        let h = &cfg.http;
        // The address the server listens on, as an IP literal, is always a
        // good `Host`: the DNS-rebinding guard is about names (an attacker's
        // name resolving to this address), and a literal is not one. So
        // `--listen 10.0.0.5:8443` answers `Host: 10.0.0.5:8443` without
        // listing it.
        let mut hosts = h.allowed_hosts.clone();
        if let Some(ip) = self.listen_ip.get().map(ToString::to_string) {
            if !hosts.is_empty() && !hosts.contains(&ip) {
                hosts.push(ip);
            }
        }
        let mut rmcp_cfg = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(h.allowed_origins.clone())
            .enforce_origin_validation()
            .with_legacy_session_mode(h.session_mode)
            .with_json_response(!h.session_mode)
            .with_max_request_body_bytes(h.max_body_bytes)
            .with_cancellation_token(self.cancel.child_token());
        if h.allowed_hosts.is_empty() {
            rmcp_cfg = rmcp_cfg.disable_allowed_hosts();
        }
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(Duration::from_secs(cfg.idle_timeout_seconds));
        manager.session_config.init_timeout = Some(Duration::from_secs(h.request_timeout_seconds));
        let manager = Arc::new(manager);
        let svc = StreamableHttpService::new(make_session, manager.clone(), rmcp_cfg);
        map.insert(key.to_string(), (svc.clone(), manager.clone()));
        Some((svc, manager))
    }

    /// Answer one request.
    async fn handle(
        self: Arc<Self>,
        req: Request<hyper::body::Incoming>,
        conn: Arc<ConnState>,
    ) -> Response<HttpBody> {
        let cfg = self.shared.config();
        let metrics = &self.shared.metrics;
        let busy = BusyGuard::new(&conn);
        // Counted before the draining check (both SeqCst): either this
        // request sees the drain and is refused, or the drain sees it and
        // waits for its reply.
        let post = (req.method() == hyper::Method::POST).then(|| PostGuard::new(&self.shared));
        if self.shared.is_draining() {
            metrics.http_rejected.fetch_add(1, Ordering::Relaxed);
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "draining",
                "lackpy serve: the server is shutting down; retry on another replica",
            );
        }
        if req.uri().path() != MCP_PATH {
            return error(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("lackpy serve: the MCP endpoint is {MCP_PATH}"),
            );
        }
        let rule = match authenticate(&cfg, req.headers()) {
            Ok(r) => {
                if let Ok(mut k) = conn.rule.lock() {
                    *k = Some(Shared::rule_key(&r));
                }
                conn.proven.store(true, Ordering::SeqCst);
                r
            }
            Err(resp) => {
                metrics.http_unauthorized.fetch_add(1, Ordering::Relaxed);
                return *resp;
            }
        };
        let key = Shared::rule_key(&rule);
        let in_progress = match self.open_request(&rule, &key, &cfg) {
            Ok(g) => g,
            Err(resp) => {
                metrics.http_rejected.fetch_add(1, Ordering::Relaxed);
                return *resp;
            }
        };
        let (parts, body) = req.into_parts();
        let body = match read_body(&cfg.http, &parts.headers, body).await {
            Ok(b) => b,
            Err(resp) => {
                metrics.http_rejected.fetch_add(1, Ordering::Relaxed);
                return *resp;
            }
        };
        // Counted before rmcp parses it: a body of many small values costs
        // far more parsed than its bytes, and bodies are parsed
        // concurrently (see `MAX_REQUEST_VALUES`).
        if lackpy_supervisor::providers::count_values(&body) > MAX_REQUEST_VALUES {
            metrics.http_rejected.fetch_add(1, Ordering::Relaxed);
            return error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_many_values",
                &format!(
                    "lackpy serve: the request body holds more than {MAX_REQUEST_VALUES} JSON values (MAX_REQUEST_VALUES); it was not parsed"
                ),
            );
        }
        let Some((svc, manager)) = self.service_for(&key, &cfg) else {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "lackpy serve: service table unavailable",
            );
        };
        let ctx = Arc::new(CallCtx {
            shared: self.shared.clone(),
            cfg: cfg.clone(),
            rule,
            refused: Mutex::new(None),
        });
        let session_id = parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let mut claim = None;
        if let (Some(_), Some(sid)) = (&post, &session_id) {
            if manager.sessions.read().await.contains_key(sid.as_str()) {
                match self.claim_id(&key, sid, &body) {
                    Ok(c) => claim = c,
                    Err(resp) => {
                        metrics.http_rejected.fetch_add(1, Ordering::Relaxed);
                        return *resp;
                    }
                }
            }
        }
        let delete = parts.method == hyper::Method::DELETE;
        if delete {
            // rmcp answers DELETE of an unknown session as if it ended one;
            // say plainly that this client has no such session.
            let id = parts
                .headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok());
            if let Some(id) = id {
                let known = manager.sessions.read().await.contains_key(id);
                if !known {
                    return error(
                        StatusCode::NOT_FOUND,
                        "session_not_found",
                        "lackpy serve: no such session for this client",
                    );
                }
            }
        }
        let req = Request::from_parts(parts, Full::new(body));
        let mut resp = CALL.scope(ctx.clone(), svc.handle(req)).await;
        // A session ended by DELETE: 204 (rmcp says 202, which clients such
        // as the Python SDK report as a failed termination).
        if delete && resp.status() == StatusCode::ACCEPTED {
            *resp.status_mut() = StatusCode::NO_CONTENT;
        }
        let refused = ctx.refused.lock().ok().and_then(|mut r| r.take());
        match refused {
            Some(r) => {
                tracing::warn!(reason = r.reason(), "refused an HTTP session");
                self.shared.metrics.count_refusal(&r);
                refusal(&r)
            }
            None => {
                let resp = match post {
                    Some(_) => json_when_quick(resp, JSON_WINDOW).await,
                    None => resp,
                };
                let (parts, body) = resp.into_parts();
                let body = Prefixed {
                    head: None,
                    rest: body,
                    _guard: Held {
                        _post: post.map(|mut g| {
                            g.claim = claim;
                            g
                        }),
                        _request: Some(in_progress),
                        _busy: Some(busy),
                    },
                };
                Response::from_parts(parts, body.boxed())
            }
        }
    }

    /// Accept connections on `listener` until `stop` turns true.
    pub async fn serve(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        tls: Option<tokio_rustls::TlsAcceptor>,
        mut stop: watch::Receiver<bool>,
    ) {
        let cfg = self.shared.config();
        if let Ok(a) = listener.local_addr() {
            if !a.ip().is_unspecified() {
                let _ = self.listen_ip.set(a.ip());
            }
        }
        let slots = Arc::new(tokio::sync::Semaphore::new(cfg.http.max_connections));
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = stop.wait_for(|s| *s) => return,
            };
            let (stream, peer) = match accepted {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let me = self.clone();
            let tls = tls.clone();
            let state = Arc::new(ConnState::default());
            let permit = match slots.clone().try_acquire_owned() {
                Ok(p) => p,
                Err(_) => {
                    // At the cap, a connection that never proved a token,
                    // else an idle one of the client holding the most,
                    // makes room; the new one waits for its slot in its own
                    // task. When every evictable one is already closing (and
                    // slots are about to change hands), at most
                    // `max_connections` more wait (each holds a socket) and
                    // try again; else `503` at once.
                    let cap = cfg.http.max_connections;
                    let evicted = self.evict_one();
                    if evicted
                        || (self.closing.load(Ordering::SeqCst) > 0
                            && self.waiting.load(Ordering::SeqCst) < cap)
                    {
                        self.waiting.fetch_add(1, Ordering::SeqCst);
                        let slots = slots.clone();
                        tokio::spawn(async move {
                            let got = me.wait_for_slot(slots, evicted).await;
                            me.waiting.fetch_sub(1, Ordering::SeqCst);
                            match got {
                                Some(permit) => {
                                    // Evictable only once it holds a slot.
                                    me.track_unproven(&state, cap);
                                    me.connection(stream, peer, tls, state).await;
                                    drop(permit);
                                }
                                None => {
                                    me.shared
                                        .metrics
                                        .http_rejected
                                        .fetch_add(1, Ordering::Relaxed);
                                    over_cap(stream, tls.is_some()).await;
                                }
                            }
                        });
                    } else {
                        self.shared
                            .metrics
                            .http_rejected
                            .fetch_add(1, Ordering::Relaxed);
                        tokio::spawn(over_cap(stream, tls.is_some()));
                    }
                    continue;
                }
            };
            me.track_unproven(&state, cfg.http.max_connections);
            tokio::spawn(async move {
                me.connection(stream, peer, tls, state).await;
                drop(permit);
            });
        }
    }

    async fn connection(
        self: Arc<Self>,
        stream: tokio::net::TcpStream,
        peer: SocketAddr,
        tls: Option<tokio_rustls::TlsAcceptor>,
        state: Arc<ConnState>,
    ) {
        let timeout = Duration::from_secs(self.shared.config().http.request_timeout_seconds);
        self.open.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        let evicted_at_end = state.evict.clone();
        match tls {
            None => self.serve_io(stream, state).await,
            Some(acceptor) => {
                let evicted = state.evict.clone();
                let shake = tokio::time::timeout(timeout, acceptor.accept(stream));
                tokio::select! {
                    r = shake => match r {
                        Ok(Ok(s)) => self.serve_io(s, state).await,
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    },
                    _ = evicted.cancelled() => tracing::debug!(%peer, "evicted during the TLS handshake"),
                }
            }
        }
        me.open.fetch_sub(1, Ordering::SeqCst);
        if evicted_at_end.is_cancelled() {
            me.closing.fetch_sub(1, Ordering::SeqCst);
        }
    }

    async fn serve_io<S>(self: Arc<Self>, io: S, state: Arc<ConnState>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let timeout = Duration::from_secs(self.shared.config().http.request_timeout_seconds);
        let me = self.clone();
        let evicted = state.evict.clone();
        let svc = hyper::service::service_fn(move |req| {
            let (me, state) = (me.clone(), state.clone());
            async move { Ok::<_, Infallible>(me.handle(req, state).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(hyper_util::rt::TokioTimer::new())
            .header_read_timeout(timeout)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(hyper_util::rt::TokioIo::new(io), svc);
        let mut conn = std::pin::pin!(conn);
        let cancel = self.cancel.clone();
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!("HTTP connection ended: {e}");
                }
            }
            _ = cancel.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
            }
            _ = evicted.cancelled() => {
                tracing::debug!("an unproven connection was closed at the TCP cap");
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
            }
        }
    }
}

/// Answer a connection over the TCP cap and close it.
async fn over_cap(mut stream: tokio::net::TcpStream, tls: bool) {
    use tokio::io::AsyncWriteExt;
    if !tls {
        let body = r#"{"error":"over_cap","message":"lackpy serve: too many HTTP connections open (serve.http.max_connections); retry later"}"#;
        let resp = format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ =
            tokio::time::timeout(Duration::from_secs(1), stream.write_all(resp.as_bytes())).await;
    }
    let _ = stream.shutdown().await;
}

/// A JSON error response: `{"error": code, "message": …}`.
fn error(status: StatusCode, code: &str, message: &str) -> Response<HttpBody> {
    let body = json!({"error": code, "message": message}).to_string();
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| Response::new(Full::default().boxed()))
}

/// `429` (the client's cap) or `503` (the server's), naming the cap.
fn refusal(r: &Refused) -> Response<HttpBody> {
    let status = match r.by {
        RefusedBy::ClientCap => StatusCode::TOO_MANY_REQUESTS,
        RefusedBy::ServerCap => StatusCode::SERVICE_UNAVAILABLE,
        RefusedBy::Peer => StatusCode::FORBIDDEN,
    };
    let body = json!({"error": r.reason(), "message": r.message, "data": r.data()}).to_string();
    Response::builder()
        .status(status)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::RETRY_AFTER, "1")
        .body(Full::new(Bytes::from(body)).boxed())
        .unwrap_or_else(|_| Response::new(Full::default().boxed()))
}

/// The rule of the request's bearer token, or the `401` saying why not.
fn authenticate(
    cfg: &ServeConfig,
    headers: &http::HeaderMap,
) -> Result<ClientRule, Box<Response<HttpBody>>> {
    let unauthorized = |error_attr: Option<&str>, message: &str| {
        let challenge = match error_attr {
            Some(e) => format!("Bearer realm=\"lackpy\", error=\"{e}\""),
            None => "Bearer realm=\"lackpy\"".to_string(),
        };
        let body = json!({"error": "unauthorized", "message": message}).to_string();
        Box::new(
            Response::builder()
                .status(StatusCode::UNAUTHORIZED)
                .header(hyper::header::WWW_AUTHENTICATE, challenge)
                .header(hyper::header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body)).boxed())
                .unwrap_or_else(|_| Response::new(Full::default().boxed())),
        )
    };
    let mut values = headers.get_all(hyper::header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Err(unauthorized(
            None,
            "lackpy serve: this endpoint needs a bearer token (Authorization: Bearer <token>); ask the operator for one",
        ));
    };
    if values.next().is_some() || value.len() > MAX_AUTH_HEADER {
        return Err(unauthorized(
            Some("invalid_request"),
            "lackpy serve: send exactly one Authorization header, at most 4096 bytes",
        ));
    }
    let value = value.as_bytes();
    let token = match value.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => value[7..].trim_ascii(),
        _ => {
            return Err(unauthorized(
                Some("invalid_request"),
                "lackpy serve: the Authorization header must be \"Bearer <token>\"",
            ))
        }
    };
    if token.is_empty() {
        return Err(unauthorized(
            Some("invalid_request"),
            "lackpy serve: the bearer token is empty",
        ));
    }
    match cfg.client_for_token(token) {
        Some(rule) => Ok(rule.clone()),
        None => Err(unauthorized(
            Some("invalid_token"),
            "lackpy serve: this bearer token is not accepted (no [[serve.clients]] rule has its token_sha256)",
        )),
    }
}

/// The whole body, at most `max_body_bytes`, within the request timeout.
async fn read_body(
    h: &HttpConfig,
    headers: &http::HeaderMap,
    body: hyper::body::Incoming,
) -> Result<Bytes, Box<Response<HttpBody>>> {
    let too_large = || {
        Box::new(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            &format!(
                "lackpy serve: request body over {} bytes (serve.http.max_body_bytes)",
                h.max_body_bytes
            ),
        ))
    };
    let declared = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > h.max_body_bytes as u64) {
        return Err(too_large());
    }
    let limited = Limited::new(body, h.max_body_bytes);
    let timeout = Duration::from_secs(h.request_timeout_seconds);
    match tokio::time::timeout(timeout, limited.collect()).await {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(too_large())
            } else {
                Err(Box::new(error(
                    StatusCode::BAD_REQUEST,
                    "bad_body",
                    &format!("lackpy serve: reading the request body: {e}"),
                )))
            }
        }
        Err(_) => Err(Box::new(error(
            StatusCode::REQUEST_TIMEOUT,
            "too_slow",
            &format!(
                "lackpy serve: the request body did not arrive within {} s (serve.http.request_timeout_seconds)",
                h.request_timeout_seconds
            ),
        ))),
    }
}

/// What the SSE events read so far hold.
#[derive(Debug, PartialEq, Eq)]
enum SseSoFar {
    /// Only priming events and comments (or nothing).
    Nothing,
    /// One JSON-RPC response (its data), then nothing else.
    Response(Vec<u8>),
    /// A notification or server request, or more than one message: the
    /// client must get the stream.
    Stream,
}

/// Classify the complete events in `buf` (an SSE body: events end with an
/// empty line; `data:` lines are joined with `\n`; `id:`, `retry:`,
/// `event:` and `:` comment lines carry no message).
fn sse_so_far(buf: &[u8]) -> SseSoFar {
    let mut found: Option<Vec<u8>> = None;
    let mut data: Vec<u8> = Vec::new();
    let mut has_data = false;
    // Only events followed by their blank line count; a partial tail waits.
    let mut lines = buf.split(|&b| b == b'\n').peekable();
    while let Some(raw) = lines.next() {
        if lines.peek().is_none() {
            break; // the unterminated last piece
        }
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        if line.is_empty() {
            if has_data && !data.is_empty() {
                if found.is_some() || !is_response(&data) {
                    return SseSoFar::Stream;
                }
                found = Some(std::mem::take(&mut data));
            }
            data.clear();
            has_data = false;
        } else if let Some(d) = line.strip_prefix(b"data:") {
            if has_data {
                data.push(b'\n');
            }
            data.extend_from_slice(d.strip_prefix(b" ").unwrap_or(d));
            has_data = true;
        }
    }
    match found {
        Some(d) => SseSoFar::Response(d),
        None => SseSoFar::Nothing,
    }
}

/// A JSON-RPC response: an object with `result` or `error` and no
/// `method` (checked without building the value).
fn is_response(data: &[u8]) -> bool {
    use serde::de::IgnoredAny;
    #[derive(serde::Deserialize)]
    struct Keys {
        method: Option<IgnoredAny>,
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
    }
    match serde_json::from_slice::<Keys>(data) {
        Ok(k) => k.method.is_none() && (k.result.is_some() || k.error.is_some()),
        Err(_) => false,
    }
}

/// The reply to a POST as `application/json` when its SSE stream is nothing
/// but one JSON-RPC response and ends within `window`; otherwise the SSE
/// stream unchanged (what was read so far, then the rest, as it comes).
///
/// rmcp answers every request of a session with an SSE stream: a priming
/// event, the response, the end of the stream — three writes and, for the
/// client, a chunked body to parse. The transport lets the server answer a
/// request with either (clients must accept both), and a quick run is the
/// common case: one JSON body with a length is one write and one read. A
/// run that sends a notification first, or outlasts the window, keeps its
/// stream (and with it the priming event's resumability and keep-alives).
async fn json_when_quick(resp: Response<HttpBody>, window: Duration) -> Response<HttpBody> {
    let is_sse = resp.status() == StatusCode::OK
        && resp
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if !is_sse {
        return resp;
    }
    let (mut parts, mut body) = resp.into_parts();
    let mut buf: Vec<u8> = Vec::new();
    let deadline = tokio::time::Instant::now() + window;
    let mut so_far = SseSoFar::Nothing;
    let ended = loop {
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    so_far = sse_so_far(&buf);
                }
                if buf.len() > MAX_JSON_REPLY || so_far == SseSoFar::Stream {
                    break false;
                }
            }
            Ok(Some(Err(never))) => match never {},
            Ok(None) => break true,
            Err(_) => break false,
        }
    };
    if ended {
        if let SseSoFar::Response(data) = so_far {
            let h = &mut parts.headers;
            h.remove(hyper::header::CACHE_CONTROL);
            h.remove("x-accel-buffering");
            h.insert(
                hyper::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            return Response::from_parts(parts, Full::new(Bytes::from(data)).boxed());
        }
    }
    let head = (!buf.is_empty()).then(|| Bytes::from(buf));
    Response::from_parts(
        parts,
        Prefixed {
            head,
            rest: body,
            _guard: Held::default(),
        }
        .boxed(),
    )
}

/// A body: `head`, then whatever `rest` still yields; holding `guard`
/// (an MCP POST stays counted until hyper has taken the last frame, or
/// the client went away and the body was dropped).
struct Prefixed {
    head: Option<Bytes>,
    rest: HttpBody,
    _guard: Held,
}

/// What a reply body holds until it is dropped.
#[derive(Default)]
struct Held {
    /// An MCP POST (and its request id's claim).
    _post: Option<PostGuard>,
    /// The rule's count of requests in progress.
    _request: Option<RequestGuard>,
    /// The connection's request in progress (it is not idle).
    _busy: Option<BusyGuard>,
}

impl hyper::body::Body for Prefixed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        if let Some(head) = self.head.take() {
            return std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(head))));
        }
        std::pin::Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.rest.is_end_stream()
    }
}

/// One MCP POST being answered: counted in the metrics' `http_posts_open`
/// (which the drain waits for) until dropped, and holding its request id's
/// claim in its session, if any.
struct PostGuard {
    shared: Arc<Shared>,
    claim: Option<IdClaim>,
}

impl PostGuard {
    fn new(shared: &Arc<Shared>) -> Self {
        shared
            .metrics
            .http_posts_open
            .fetch_add(1, Ordering::SeqCst);
        PostGuard {
            shared: shared.clone(),
            claim: None,
        }
    }
}

/// `s` cut to at most `max` characters.
fn cut_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

impl Drop for PostGuard {
    fn drop(&mut self) {
        self.shared
            .metrics
            .http_posts_open
            .fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A body that yields `chunks`, then ends (or, with `hang`, never ends).
    struct Chunks {
        chunks: VecDeque<&'static str>,
        hang: bool,
    }

    impl hyper::body::Body for Chunks {
        type Data = Bytes;
        type Error = Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
            match self.chunks.pop_front() {
                Some(c) => Poll::Ready(Some(Ok(hyper::body::Frame::data(Bytes::from(c))))),
                None if self.hang => Poll::Pending,
                None => Poll::Ready(None),
            }
        }
    }

    fn sse(chunks: &[&'static str], hang: bool) -> Response<HttpBody> {
        Response::builder()
            .header(hyper::header::CONTENT_TYPE, "text/event-stream")
            .header(hyper::header::CACHE_CONTROL, "no-cache")
            .header("mcp-session-id", "abc")
            .body(
                Chunks {
                    chunks: chunks.iter().copied().collect(),
                    hang,
                }
                .boxed(),
            )
            .unwrap_or_else(|_| Response::new(Full::default().boxed()))
    }

    async fn reply(r: Response<HttpBody>) -> (String, String, Option<String>) {
        let r = json_when_quick(r, Duration::from_millis(200)).await;
        let ct = r
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let sid = r
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        // A hanging stream: read what is there within a short time.
        let mut body = r.into_body();
        let mut out = Vec::new();
        while let Ok(Some(Ok(f))) =
            tokio::time::timeout(Duration::from_millis(50), body.frame()).await
        {
            if let Ok(d) = f.into_data() {
                out.extend_from_slice(&d);
            }
        }
        (ct, String::from_utf8_lossy(&out).into_owned(), sid)
    }

    const PRIMING: &str = "id: 0\nretry: 3000\ndata:\n\n";
    const RESPONSE: &str = "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"x\":1}}\n\n";
    const NOTE: &str =
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n";

    #[tokio::test]
    async fn a_quick_single_response_becomes_json() {
        let (ct, body, sid) = reply(sse(&[PRIMING, RESPONSE], false)).await;
        assert_eq!(ct, "application/json");
        assert_eq!(body, r#"{"jsonrpc":"2.0","id":7,"result":{"x":1}}"#);
        assert_eq!(sid.as_deref(), Some("abc"), "other headers are kept");
        // Split across frames anywhere, CRLF line ends.
        let (ct, body, _) = reply(sse(
            &[
                "id: 0\r\ndata:\r\n\r\nda",
                "ta: {\"id\":1,\"error\":{}}\r\n",
                "\r\n",
            ],
            false,
        ))
        .await;
        assert_eq!(
            (ct.as_str(), body.as_str()),
            ("application/json", r#"{"id":1,"error":{}}"#)
        );
    }

    #[tokio::test]
    async fn notifications_slow_runs_and_non_responses_keep_the_stream() {
        // A notification before the response: the client gets every event.
        let (ct, body, _) = reply(sse(&[PRIMING, NOTE, RESPONSE], false)).await;
        assert_eq!(ct, "text/event-stream");
        assert_eq!(body, format!("{PRIMING}{NOTE}{RESPONSE}"));
        // No response within the window: the stream, with what was read.
        let (ct, body, _) = reply(sse(&[PRIMING], true)).await;
        assert_eq!((ct.as_str(), body.as_str()), ("text/event-stream", PRIMING));
        // A response but the stream does not end: stays a stream.
        let (ct, body, _) = reply(sse(&[PRIMING, RESPONSE], true)).await;
        assert_eq!(ct, "text/event-stream");
        assert_eq!(body, format!("{PRIMING}{RESPONSE}"));
        // Two responses, or data that is not a JSON-RPC response.
        let (ct, _, _) = reply(sse(&[RESPONSE, RESPONSE], false)).await;
        assert_eq!(ct, "text/event-stream");
        let (ct, body, _) = reply(sse(&["data: not json\n\n"], false)).await;
        assert_eq!(
            (ct.as_str(), body.as_str()),
            ("text/event-stream", "data: not json\n\n")
        );
        // An empty stream stays what it was.
        let (ct, body, _) = reply(sse(&[], false)).await;
        assert_eq!((ct.as_str(), body.as_str()), ("text/event-stream", ""));
    }
}
