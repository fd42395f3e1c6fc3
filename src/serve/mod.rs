//! `lackpy serve`: the long-running, multi-client service.
//!
//! One process listens on a unix socket. Each accepted connection is one MCP
//! session, framed exactly like the stdio transport (newline-delimited
//! JSON-RPC), served by the same `mcp::server` as `lackpy mcp` — one protocol
//! to learn. The peer is identified by `SO_PEERCRED` and matched against the
//! `[serve]` client rules ([`config`]); an unknown peer gets one JSON-RPC
//! error line and the connection is closed.
//!
//! Per client: the workspace and profiles its rule grants, concurrent-run and
//! runs-per-minute quotas, a tool-call budget per connection, and caps on
//! open connections, notebook sessions and the bytes those sessions keep.
//! For everyone: a bounded number of runs in flight (past it a call is
//! refused at once with a "busy, retry after" error: backpressure, never an
//! unbounded queue), of connections, and of notebook sessions and their bytes. A
//! connection over a cap gets one JSON-RPC error line naming the cap and is
//! closed ([`conn`]); a connection without a request or a run for
//! `idle_timeout_seconds` is closed, so idle connections cannot lock others
//! out. Backends (config + supervisor with its warm pool) are per workspace,
//! so one client's runs never see another's workspace; MCP sessions (and
//! their notebook variables) are per connection, and `traces` shows a client
//! only the runs it made.
//!
//! Signals: SIGTERM/SIGINT stop accepting, let in-flight runs finish for
//! `drain_seconds`, then kill the rest and exit 0; SIGHUP reloads the config.
//! Metrics (Prometheus text) and health checks (`/healthz`, `/readyz`) are
//! served on an optional second socket or TCP address ([`health`]).
//!
//! The same service also listens on TCP with `--listen` ([`http`]): MCP's
//! Streamable HTTP transport, clients authenticated by bearer token
//! (`token_sha256` rules), each MCP session one "connection" under the same
//! caps and quotas as a unix connection.

pub mod config;
pub mod conn;
pub mod health;
pub mod http;
pub mod metrics;

pub use conn::serve_connection;

use crate::mcp::backend::{
    failed_run, Backend, Cancel, ProfileInfo, RunOutcome, RunRequest, ToolInfo, ValidateRequest,
};
use crate::mcp::real::RealBackend;
use crate::mcp::session::{Budget, SessionLimits, Usage};
use config::{ClientRule, ServeConfig};
use conn::Activity;
use lackpy_policy::wire::{ErrorInfo, ErrorKind};
use metrics::Metrics;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How long a refused caller should wait before retrying.
const RETRY_AFTER_MS: u64 = 100;

/// Run ids a client's `traces` may show: its most recent runs. Why 1000:
/// the largest `traces` limit (`mcp::tools::TRACES_MAX`).
const OWN_RUNS: usize = 1000;

/// Quota state of one client rule, shared by all its connections.
#[derive(Default)]
struct ClientState {
    in_flight: AtomicUsize,
    /// Start times of runs in the last minute (bounded by runs_per_minute).
    recent: Mutex<VecDeque<Instant>>,
    /// Connections open now.
    connections: AtomicUsize,
    /// Sessions and bytes its connections keep now.
    sessions: Arc<Usage>,
    /// Ids of its most recent runs (at most [`OWN_RUNS`]).
    runs: Mutex<VecDeque<String>>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusedBy {
    /// No client rule matches the peer.
    Peer,
    /// The client has its `max_connections` open.
    ClientCap,
    /// The server has its `max_connections` open.
    ServerCap,
}

/// A refused connection: why, and the message for the peer.
#[derive(Debug, Clone)]
pub struct Refused {
    /// Which check refused it.
    pub by: RefusedBy,
    /// The message of the JSON-RPC error line.
    pub message: String,
    /// The cap that refused it (0 for [`RefusedBy::Peer`]).
    pub max: usize,
}

impl Refused {
    fn not_allowed(message: String) -> Self {
        Refused {
            by: RefusedBy::Peer,
            message,
            max: 0,
        }
    }

    /// A short name for logs and metrics.
    pub fn reason(&self) -> &'static str {
        match self.by {
            RefusedBy::Peer => "peer",
            RefusedBy::ClientCap => "client_max_connections",
            RefusedBy::ServerCap => "server_max_connections",
        }
    }

    /// The JSON-RPC error code of the refusal line.
    pub fn code(&self) -> i64 {
        match self.by {
            RefusedBy::Peer => conn::CODE_NOT_ALLOWED,
            _ => conn::CODE_OVER_CAP,
        }
    }

    /// The error's `data`: the config key of the cap and its value.
    pub fn data(&self) -> Value {
        match self.by {
            RefusedBy::Peer => Value::Null,
            RefusedBy::ClientCap => {
                json!({"limit": "serve.clients[].max_connections", "max": self.max})
            }
            RefusedBy::ServerCap => json!({"limit": "serve.max_connections", "max": self.max}),
        }
    }
}

impl Metrics {
    /// Count a refused connection under its reason.
    pub fn count_refusal(&self, r: &Refused) {
        let c = match r.by {
            RefusedBy::Peer => &self.refused_connections,
            RefusedBy::ClientCap => &self.refused_client_connections,
            RefusedBy::ServerCap => &self.refused_server_connections,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// An admitted connection's place under the caps; gives it back on drop.
pub struct ConnectionSlot {
    shared: Arc<Shared>,
    client: Arc<ClientState>,
    /// Seconds the connection may idle (the config at admission).
    pub idle_timeout_seconds: u64,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.client.connections.fetch_sub(1, Ordering::SeqCst);
        self.shared.connections.fetch_sub(1, Ordering::SeqCst);
        self.shared
            .metrics
            .connections
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// What every connection shares.
pub struct Shared {
    config: RwLock<Arc<ServeConfig>>,
    backends: Mutex<HashMap<PathBuf, Arc<RealBackend>>>,
    clients: Mutex<HashMap<String, Arc<ClientState>>>,
    /// Counters and gauges.
    pub metrics: Metrics,
    in_flight: AtomicUsize,
    /// Connections open now.
    connections: AtomicUsize,
    /// Connections' cancel tokens, so a drain deadline can stop every run.
    cancels: Mutex<Vec<Cancel>>,
    /// SIGTERM arrived: `/readyz` fails and new work is refused.
    draining: std::sync::atomic::AtomicBool,
    /// Every rule's backend was created (the pools are filling).
    warmed: std::sync::atomic::AtomicBool,
}

impl Shared {
    /// State for a server with `config`.
    pub fn new(config: ServeConfig) -> Arc<Self> {
        Arc::new(Shared {
            config: RwLock::new(Arc::new(config)),
            backends: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
            in_flight: AtomicUsize::new(0),
            connections: AtomicUsize::new(0),
            cancels: Mutex::new(Vec::new()),
            draining: std::sync::atomic::AtomicBool::new(false),
            warmed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Start draining: `/readyz` fails from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether SIGTERM arrived.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Create the backend (and so the warm pool) of every rule's workspace
    /// now rather than at the first client, so `/readyz` means "a run
    /// starts at once". Blocking. A workspace that cannot be served is
    /// reported and left to fail at admission, as before.
    pub fn warm(&self) {
        let cfg = self.config();
        for rule in &cfg.clients {
            if let Err(e) = self.backend_for(rule, cfg.pool_size) {
                tracing::warn!(workspace = %rule.workspace.display(), "cannot warm: {e:#}");
            }
        }
        self.warmed.store(true, Ordering::SeqCst);
    }

    /// Whether the server should get traffic, and why not: not draining,
    /// every workspace's backend created, and each pool has a warm worker
    /// (when `pool_size > 0`) unless runs are in flight.
    pub fn readiness(&self) -> Result<String, String> {
        if self.is_draining() {
            return Err("draining (SIGTERM received)".into());
        }
        if !self.warmed.load(Ordering::SeqCst) {
            return Err("starting: worker pools are being created".into());
        }
        let cfg = self.config();
        let b = self
            .backends
            .lock()
            .map_err(|_| "backend table poisoned".to_string())?;
        let mut lines = Vec::new();
        // A pool emptied by runs in flight is busy, not broken: only an idle
        // server without a warm worker (its refills failing) is not ready.
        let busy = self.in_flight() > 0;
        for (ws, x) in b.iter() {
            let ready = x.pool_ready();
            if cfg.pool_size > 0 && ready == 0 && !busy {
                return Err(format!("pool of {} has no warm worker", ws.display()));
            }
            lines.push(format!("{}: {ready} warm", ws.display()));
        }
        Ok(lines.join("\n"))
    }

    /// The config now in force.
    pub fn config(&self) -> Arc<ServeConfig> {
        self.config
            .read()
            .map_or_else(|p| p.into_inner().clone(), |c| c.clone())
    }

    /// Replace the config (SIGHUP). Connections already open keep the rule
    /// they were admitted with; new ones use the new rules.
    pub fn reload(&self, config: ServeConfig) {
        if let Ok(mut c) = self.config.write() {
            *c = Arc::new(config);
        }
    }

    /// Runs executing now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// MCP POSTs over HTTP whose reply is not written in full yet.
    pub fn posts_open(&self) -> u64 {
        self.metrics.http_posts_open.load(Ordering::SeqCst)
    }

    /// Warm workers ready across every backend.
    pub fn pool_ready(&self) -> usize {
        self.backends
            .lock()
            .map_or(0, |b| b.values().map(|x| x.pool_ready()).sum())
    }

    /// Kill every in-flight worker of every backend (end of drain).
    pub fn kill_all(&self) {
        if let Ok(c) = self.cancels.lock() {
            c.iter().for_each(Cancel::cancel);
        }
        if let Ok(b) = self.backends.lock() {
            b.values().for_each(|x| x.shutdown());
        }
    }

    fn backend_for(&self, rule: &ClientRule, pool_size: usize) -> anyhow::Result<Arc<RealBackend>> {
        let ws = rule.workspace.canonicalize()?;
        let mut map = self
            .backends
            .lock()
            .map_err(|_| anyhow::anyhow!("backend table poisoned"))?;
        if let Some(b) = map.get(&ws) {
            return Ok(b.clone());
        }
        let b = Arc::new(RealBackend::with_pool(&ws, None, pool_size)?);
        map.insert(ws, b.clone());
        Ok(b)
    }

    fn client_state(&self, key: &str) -> Arc<ClientState> {
        match self.clients.lock() {
            Ok(mut m) => m.entry(key.to_string()).or_default().clone(),
            Err(_) => Arc::new(ClientState::default()),
        }
    }

    /// Take a connection slot: the client's cap first (the more specific
    /// message), then the server's.
    fn take_connection(
        self: &Arc<Self>,
        cfg: &ServeConfig,
        rule: &ClientRule,
        client: &Arc<ClientState>,
    ) -> Result<ConnectionSlot, Refused> {
        let mine = &client.connections;
        let (by, max, message) = if !take_one(mine, rule.max_connections) {
            (
                RefusedBy::ClientCap,
                rule.max_connections,
                format!(
                    "lackpy serve: this client already has {} connections open (the maximum, serve.clients[].max_connections); close one and retry",
                    rule.max_connections
                ),
            )
        } else if !take_one(&self.connections, cfg.max_connections) {
            mine.fetch_sub(1, Ordering::SeqCst);
            (
                RefusedBy::ServerCap,
                cfg.max_connections,
                format!(
                    "lackpy serve: the server already has {} connections open (the maximum, serve.max_connections); retry later",
                    cfg.max_connections
                ),
            )
        } else {
            self.metrics.connections.fetch_add(1, Ordering::Relaxed);
            return Ok(ConnectionSlot {
                shared: self.clone(),
                client: client.clone(),
                idle_timeout_seconds: cfg.idle_timeout_seconds,
            });
        };
        Err(Refused { by, message, max })
    }

    /// The backend a peer may use and its connection slot, or why it is
    /// refused. `activity` is the connection's (runs keep it from idling out).
    ///
    /// # Errors
    /// Not allowed, over a connection cap, or its workspace cannot be served.
    pub fn admit(
        self: &Arc<Self>,
        uid: u32,
        gid: u32,
        activity: Arc<Activity>,
    ) -> Result<(Arc<dyn Backend>, ConnectionSlot), Refused> {
        let cfg = self.config();
        let Some(rule) = cfg.client_for(uid, gid).cloned() else {
            return Err(Refused::not_allowed(format!(
                "lackpy serve: peer uid {uid} gid {gid} is not allowed; add a [[serve.clients]] rule for it"
            )));
        };
        self.admit_rule(&cfg, rule, activity, true)
    }

    /// The quota key of a rule: its uid, else its gid, else its token digest
    /// (connections of one rule share its quotas).
    pub fn rule_key(rule: &ClientRule) -> String {
        match (rule.uid, rule.gid, &rule.token_sha256) {
            (Some(u), _, _) => format!("uid:{u}"),
            (None, Some(g), _) => format!("gid:{g}"),
            (None, None, Some(t)) => format!("token:{}", t.to_ascii_lowercase()),
            (None, None, None) => "nobody".into(),
        }
    }

    /// Admit a client already matched to `rule` (by peer credentials or by
    /// bearer token): connection caps, then its workspace's backend.
    ///
    /// # Errors
    /// Over a connection cap, draining, or the workspace cannot be served.
    ///
    /// `refuse_runs_when_draining`: whether a run asked for once SIGTERM
    /// has arrived is refused by the backend (a unix connection: its
    /// requests reach the backend directly). The HTTP front end refuses
    /// requests that come after SIGTERM itself (`503`) and serves those
    /// it read before, so its sessions pass `false`.
    pub fn admit_rule(
        self: &Arc<Self>,
        cfg: &ServeConfig,
        rule: ClientRule,
        activity: Arc<Activity>,
        refuse_runs_when_draining: bool,
    ) -> Result<(Arc<dyn Backend>, ConnectionSlot), Refused> {
        let key = Self::rule_key(&rule);
        let state = self.client_state(&key);
        let slot = self.take_connection(cfg, &rule, &state)?;
        let inner = self.backend_for(&rule, cfg.pool_size).map_err(|e| {
            Refused::not_allowed(format!(
                "lackpy serve: cannot serve workspace {}: {e:#}",
                rule.workspace.display()
            ))
        })?;
        let budgets = self.session_budgets(cfg, &rule, &state);
        Ok((
            Arc::new(ClientBackend {
                state,
                shared: self.clone(),
                inner,
                default_profile: rule.default_profile.clone(),
                rule,
                tool_calls: AtomicU64::new(0),
                max_in_flight: cfg.max_in_flight,
                cancels: Mutex::new(Vec::new()),
                activity,
                budgets,
                refuse_runs_when_draining,
            }),
            slot,
        ))
    }

    /// The client's and the server's session budgets, with the config keys
    /// a refusal names and the metrics it counts in.
    fn session_budgets(
        self: &Arc<Self>,
        cfg: &ServeConfig,
        rule: &ClientRule,
        state: &ClientState,
    ) -> Vec<Budget> {
        let counter = |server: bool| {
            let me = Arc::downgrade(self);
            let f: Arc<dyn Fn(crate::mcp::session::Refusal) + Send + Sync> =
                Arc::new(move |what| {
                    if let Some(s) = me.upgrade() {
                        s.metrics.session_refused(server, what);
                    }
                });
            Some(f)
        };
        vec![
            Budget {
                usage: state.sessions.clone(),
                max_sessions: rule.max_sessions,
                max_bytes: rule.max_session_bytes,
                scope: "this client".into(),
                sessions_key: "serve.clients[].max_sessions".into(),
                bytes_key: "serve.clients[].max_session_bytes".into(),
                on_refuse: counter(false),
            },
            Budget {
                usage: self.metrics.sessions.clone(),
                max_sessions: cfg.max_sessions,
                max_bytes: cfg.max_session_bytes,
                scope: "the server (all clients)".into(),
                sessions_key: "serve.max_sessions".into(),
                bytes_key: "serve.max_session_bytes".into(),
                on_refuse: counter(true),
            },
        ]
    }
}

/// One connection's view: the client's rule and quotas over the shared
/// backend of its workspace.
struct ClientBackend {
    shared: Arc<Shared>,
    inner: Arc<RealBackend>,
    rule: ClientRule,
    default_profile: Option<String>,
    state: Arc<ClientState>,
    tool_calls: AtomicU64,
    max_in_flight: usize,
    cancels: Mutex<Vec<Cancel>>,
    /// The connection's activity (a run in flight keeps it from idling out).
    activity: Arc<Activity>,
    /// Shared budgets this connection's sessions are charged to.
    budgets: Vec<Budget>,
    /// Refuse runs asked for after SIGTERM (see [`Shared::admit_rule`]).
    refuse_runs_when_draining: bool,
}

fn refusal(type_name: &str, message: String) -> ErrorInfo {
    let mut e = ErrorInfo::new(ErrorKind::Limit, type_name, message);
    e.hint = Some(format!("retry after {RETRY_AFTER_MS} ms"));
    e
}

/// Releases a run's quota slots however the run ends.
struct Slot<'a> {
    global: &'a AtomicUsize,
    client: &'a AtomicUsize,
    gauge: &'a AtomicU64,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.global.fetch_sub(1, Ordering::SeqCst);
        self.client.fetch_sub(1, Ordering::SeqCst);
        self.gauge.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ClientBackend {
    /// Profile rules: a restricted client may only name its profiles.
    fn check_profile(
        &self,
        profile: Option<&str>,
        tools: Option<&[String]>,
    ) -> Result<Option<String>, ErrorInfo> {
        let profile = profile
            .map(String::from)
            .or_else(|| self.default_profile.clone());
        let Some(allowed) = &self.rule.profiles else {
            return Ok(profile);
        };
        let denied = |what: String| {
            let mut e = ErrorInfo::new(ErrorKind::Validation, "ProfileNotAllowed", what);
            e.hint = Some(format!(
                "this client may use the profiles: {}",
                allowed.join(", ")
            ));
            e
        };
        if tools.is_some() {
            return Err(denied(
                "this client may not pass an ad-hoc tool list".into(),
            ));
        }
        match profile {
            Some(p) if allowed.contains(&p) => Ok(Some(p)),
            Some(p) => Err(denied(format!(
                "profile {p:?} is not allowed for this client"
            ))),
            None => match allowed.first() {
                Some(first) => Ok(Some(first.clone())),
                None => Err(denied("no profile is allowed for this client".into())),
            },
        }
    }

    /// Whether this client may start another run this minute (under
    /// `runs_per_minute`); records the run when it may.
    fn rate_ok(&self) -> bool {
        let Ok(mut recent) = self.state.recent.lock() else {
            return false;
        };
        let now = Instant::now();
        while recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
        {
            recent.pop_front();
        }
        if recent.len() >= self.rule.runs_per_minute as usize {
            return false;
        }
        recent.push_back(now);
        true
    }

    /// Take a run slot: global bound, client concurrency, client rate.
    fn acquire(&self) -> Result<Slot<'_>, ErrorInfo> {
        let global = &self.shared.in_flight;
        if !take_one(global, self.max_in_flight) {
            return Err(refusal(
                "busy",
                format!(
                    "server busy: {} runs in flight (the maximum); retry after {RETRY_AFTER_MS} ms",
                    self.max_in_flight
                ),
            ));
        }
        let client = &self.state.in_flight;
        // Checked in order; the rate check records this run when it passes.
        let refused = if client.fetch_add(1, Ordering::SeqCst) >= self.rule.max_concurrent {
            Some(refusal(
                "quota",
                format!(
                    "quota: this client already has {} runs in flight (max_concurrent); retry after {RETRY_AFTER_MS} ms",
                    self.rule.max_concurrent
                ),
            ))
        } else if !self.rate_ok() {
            Some(refusal(
                "quota",
                format!(
                    "quota: more than {} runs in the last minute (runs_per_minute)",
                    self.rule.runs_per_minute
                ),
            ))
        } else if self.tool_calls.load(Ordering::SeqCst) >= self.rule.max_tool_calls {
            let mut e = refusal(
                "quota",
                format!(
                    "quota: this connection used its {} tool calls (max_tool_calls)",
                    self.rule.max_tool_calls
                ),
            );
            e.hint = Some("open a new connection".into());
            Some(e)
        } else {
            None
        };
        if let Some(e) = refused {
            client.fetch_sub(1, Ordering::SeqCst);
            global.fetch_sub(1, Ordering::SeqCst);
            return Err(e);
        }
        self.shared.metrics.in_flight.fetch_add(1, Ordering::SeqCst);
        Ok(Slot {
            global,
            client,
            gauge: &self.shared.metrics.in_flight,
        })
    }
}

/// Count one more on `n` unless it is already at `max` (then nothing is
/// counted and the answer is false).
fn take_one(n: &AtomicUsize, max: usize) -> bool {
    if n.fetch_add(1, Ordering::SeqCst) >= max {
        n.fetch_sub(1, Ordering::SeqCst);
        return false;
    }
    true
}

fn track(list: &Mutex<Vec<Cancel>>, cancel: &Cancel) {
    if let Ok(mut c) = list.lock() {
        c.push(cancel.clone());
    }
}

fn forget(list: &Mutex<Vec<Cancel>>, cancel: &Cancel) {
    let flag = cancel.flag();
    if let Ok(mut c) = list.lock() {
        c.retain(|t| !Arc::ptr_eq(&t.flag(), &flag));
    }
}

fn outcome_of(report: &Value) -> &str {
    if report.get("ok").and_then(Value::as_bool) == Some(true) {
        return "ok";
    }
    report
        .pointer("/error/kind")
        .and_then(Value::as_str)
        .unwrap_or("internal")
}

impl Backend for ClientBackend {
    fn run_program(&self, mut req: RunRequest, cancel: &Cancel) -> RunOutcome {
        let started = Instant::now();
        let refuse = |e: ErrorInfo| {
            self.shared.metrics.record("refused", 0.0, 0);
            RunOutcome {
                report: failed_run(e),
                vars: None,
                skipped_vars: Vec::new(),
                run_id: None,
            }
        };
        // Draining: the runs in flight finish, a new one is not started
        // (with steady traffic the drain would otherwise never see zero
        // runs and end by killing them all at its deadline).
        if self.refuse_runs_when_draining && self.shared.is_draining() {
            let mut e = refusal(
                "draining",
                "lackpy serve: the server is shutting down (SIGTERM received); this run was not started".into(),
            );
            e.hint = Some("retry on another replica, or once the server is back".into());
            return refuse(e);
        }
        match self.check_profile(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(p) => req.profile = p,
            Err(e) => return refuse(e),
        }
        let slot = match self.acquire() {
            Ok(s) => s,
            Err(e) => return refuse(e),
        };
        let _busy = self.activity.busy();
        // Tracked while the run is in flight (bounded by the quotas), so a
        // closed connection or the drain deadline can stop it.
        track(&self.cancels, cancel);
        track(&self.shared.cancels, cancel);
        let out = self.inner.run_program(req, cancel);
        forget(&self.cancels, cancel);
        forget(&self.shared.cancels, cancel);
        drop(slot);
        if let Some(id) = &out.run_id {
            if let Ok(mut runs) = self.state.runs.lock() {
                if runs.len() >= OWN_RUNS {
                    runs.pop_front();
                }
                runs.push_back(id.clone());
            }
        }
        let calls = out
            .report
            .get("trace")
            .and_then(Value::as_array)
            .map_or(0, |t| t.len() as u64);
        self.tool_calls.fetch_add(calls, Ordering::SeqCst);
        self.shared.metrics.record(
            outcome_of(&out.report),
            started.elapsed().as_secs_f64(),
            calls,
        );
        out
    }

    fn validate(&self, mut req: ValidateRequest) -> Value {
        match self.check_profile(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(p) => req.profile = p,
            Err(e) => return json!({"ok": false, "grade": null, "calls": [], "error": e}),
        }
        self.inner.validate(req)
    }

    fn profiles(&self) -> Result<Vec<ProfileInfo>, ErrorInfo> {
        let all = self.inner.profiles()?;
        Ok(match &self.rule.profiles {
            None => all,
            Some(allowed) => all
                .into_iter()
                .filter(|p| allowed.contains(&p.name))
                .collect(),
        })
    }

    fn profile(&self, name: Option<&str>) -> Result<ProfileInfo, ErrorInfo> {
        let p = self.check_profile(name, None)?;
        self.inner.profile(p.as_deref())
    }

    fn toolbox(&self) -> Result<Vec<ToolInfo>, ErrorInfo> {
        self.inner.toolbox()
    }

    fn resolve_doc(&self, path: &str) -> Result<String, ErrorInfo> {
        self.inner.resolve_doc(path)
    }

    /// Only this client's own runs: the trace store is the workspace's,
    /// which other clients (and the operator's CLI runs) may share.
    fn traces(&self, limit: usize) -> Result<Vec<Value>, ErrorInfo> {
        let own: HashSet<String> = match self.state.runs.lock() {
            Ok(r) => r.iter().cloned().collect(),
            Err(_) => HashSet::new(),
        };
        self.inner.traces_where(limit, |id| own.contains(id))
    }

    fn session_policy(&self) -> (SessionLimits, Vec<Budget>) {
        let d = SessionLimits::default();
        let limits = SessionLimits {
            max_sessions: d.max_sessions.min(self.rule.max_sessions),
            max_bytes: d.max_bytes.min(self.rule.max_session_bytes),
            idle: d.idle,
        };
        (limits, self.budgets.clone())
    }

    fn delegate(&self, intent: &str, profile: Option<&str>) -> Value {
        match self.check_profile(profile, None) {
            Ok(p) => match self.acquire() {
                Ok(_slot) => {
                    let _busy = self.activity.busy();
                    self.inner.delegate(intent, p.as_deref())
                }
                Err(e) => failed_run(e),
            },
            Err(e) => failed_run(e),
        }
    }

    fn max_concurrent_runs(&self) -> usize {
        self.rule.max_concurrent.min(self.max_in_flight)
    }

    /// The connection closed: stop this connection's runs only (the backend
    /// is shared with other clients of the same workspace).
    fn shutdown(&self) {
        if let Ok(c) = self.cancels.lock() {
            c.iter().for_each(Cancel::cancel);
        }
    }
}

/// Load the serve config from `file` (or the defaults).
///
/// # Errors
/// The file cannot be read or is invalid.
pub fn load_config(file: Option<&Path>, workspace: &Path) -> Result<ServeConfig, String> {
    let uid = nix::unistd::geteuid().as_raw();
    match file {
        None => {
            let cfg = ServeConfig::default_for(workspace, uid);
            fit_open_files(cfg.max_connections)?;
            Ok(cfg)
        }
        Some(f) => {
            let meta = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
            if meta.len() > 1024 * 1024 {
                return Err(format!("{}: config file over 1 MiB", f.display()));
            }
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            let cfg = ServeConfig::parse(&text, f, workspace, uid)?;
            fit_open_files(cfg.max_connections)?;
            Ok(cfg)
        }
    }
}

/// Descriptors the server needs beyond one per connection: listening and
/// metrics sockets, workers' IPC sockets and pidfds, trace and config files.
const FD_RESERVE: u64 = 256;

/// Make sure `max_connections` connections fit under `RLIMIT_NOFILE`,
/// raising the soft limit towards the hard one if needed: a server that
/// runs out of descriptors cannot even accept the connection it would
/// refuse, and every client waits.
///
/// # Errors
/// The hard limit is too low for `serve.max_connections`.
pub fn fit_open_files(max_connections: usize) -> Result<(), String> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let need = (max_connections as u64).saturating_add(FD_RESERVE);
    let (soft, hard) =
        getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("reading RLIMIT_NOFILE: {e}"))?;
    if soft >= need {
        return Ok(());
    }
    if hard < need {
        return Err(format!(
            "serve.max_connections {max_connections} needs {need} open files but RLIMIT_NOFILE allows {hard}; lower serve.max_connections or raise the limit (LimitNOFILE= in the unit)"
        ));
    }
    setrlimit(Resource::RLIMIT_NOFILE, need, hard)
        .map_err(|e| format!("raising RLIMIT_NOFILE to {need}: {e}"))
}
