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
//! runs-per-minute quotas, a tool-call budget per connection. For everyone:
//! a bounded number of runs in flight; past it a call is refused at once with
//! a "busy, retry after" error (backpressure, never an unbounded queue).
//! Backends (config + supervisor with its warm pool) are per workspace, so
//! one client's runs never see another's workspace; MCP sessions (and their
//! notebook variables) are per connection.
//!
//! Signals: SIGTERM/SIGINT stop accepting, let in-flight runs finish for
//! `drain_seconds`, then kill the rest and exit 0; SIGHUP reloads the config.
//! Metrics (Prometheus text) and a health check are served on an optional
//! second socket ([`metrics`]).

pub mod config;
pub mod metrics;

use crate::mcp::backend::{
    failed_run, Backend, Cancel, ProfileInfo, RunOutcome, RunRequest, ToolInfo, ValidateRequest,
};
use crate::mcp::real::RealBackend;
use config::{ClientRule, ServeConfig};
use lackpy_policy::wire::{ErrorInfo, ErrorKind};
use metrics::Metrics;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How long a refused caller should wait before retrying.
const RETRY_AFTER_MS: u64 = 100;

/// Quota state of one client rule, shared by all its connections.
#[derive(Default)]
struct ClientState {
    in_flight: AtomicUsize,
    /// Start times of runs in the last minute (bounded by runs_per_minute).
    recent: Mutex<std::collections::VecDeque<Instant>>,
}

/// What every connection shares.
pub struct Shared {
    config: RwLock<Arc<ServeConfig>>,
    backends: Mutex<HashMap<PathBuf, Arc<RealBackend>>>,
    clients: Mutex<HashMap<String, Arc<ClientState>>>,
    /// Counters and gauges.
    pub metrics: Metrics,
    in_flight: AtomicUsize,
    /// Connections' cancel tokens, so a drain deadline can stop every run.
    cancels: Mutex<Vec<Cancel>>,
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
            cancels: Mutex::new(Vec::new()),
        })
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

    /// The backend a peer may use, or why it is refused.
    ///
    /// # Errors
    /// A message for the peer: not allowed, or its workspace cannot be served.
    pub fn admit(self: &Arc<Self>, uid: u32, gid: u32) -> Result<Arc<dyn Backend>, String> {
        let cfg = self.config();
        let Some(rule) = cfg.client_for(uid, gid).cloned() else {
            return Err(format!(
                "lackpy serve: peer uid {uid} gid {gid} is not allowed; add a [[serve.clients]] rule for it"
            ));
        };
        let inner = self.backend_for(&rule, cfg.pool_size).map_err(|e| {
            format!(
                "lackpy serve: cannot serve workspace {}: {e:#}",
                rule.workspace.display()
            )
        })?;
        let key = match rule.uid {
            Some(u) => format!("uid:{u}"),
            None => format!("gid:{}", rule.gid.unwrap_or(0)),
        };
        Ok(Arc::new(ClientBackend {
            state: self.client_state(&key),
            shared: self.clone(),
            inner,
            default_profile: rule.default_profile.clone(),
            rule,
            tool_calls: AtomicU64::new(0),
            max_in_flight: cfg.max_in_flight,
            cancels: Mutex::new(Vec::new()),
        }))
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

    /// Take a run slot: global bound, client concurrency, client rate.
    fn acquire(&self) -> Result<Slot<'_>, ErrorInfo> {
        let global = &self.shared.in_flight;
        if global.fetch_add(1, Ordering::SeqCst) >= self.max_in_flight {
            global.fetch_sub(1, Ordering::SeqCst);
            return Err(refusal(
                "busy",
                format!(
                    "server busy: {} runs in flight (the maximum); retry after {RETRY_AFTER_MS} ms",
                    self.max_in_flight
                ),
            ));
        }
        let client = &self.state.in_flight;
        if client.fetch_add(1, Ordering::SeqCst) >= self.rule.max_concurrent {
            client.fetch_sub(1, Ordering::SeqCst);
            global.fetch_sub(1, Ordering::SeqCst);
            return Err(refusal(
                "quota",
                format!(
                    "quota: this client already has {} runs in flight (max_concurrent); retry after {RETRY_AFTER_MS} ms",
                    self.rule.max_concurrent
                ),
            ));
        }
        let rate_ok = match self.state.recent.lock() {
            Ok(mut recent) => {
                let now = Instant::now();
                while recent
                    .front()
                    .is_some_and(|t| now.duration_since(*t) > Duration::from_secs(60))
                {
                    recent.pop_front();
                }
                if recent.len() >= self.rule.runs_per_minute as usize {
                    false
                } else {
                    recent.push_back(now);
                    true
                }
            }
            Err(_) => false,
        };
        if !rate_ok {
            client.fetch_sub(1, Ordering::SeqCst);
            global.fetch_sub(1, Ordering::SeqCst);
            return Err(refusal(
                "quota",
                format!(
                    "quota: more than {} runs in the last minute (runs_per_minute)",
                    self.rule.runs_per_minute
                ),
            ));
        }
        if self.tool_calls.load(Ordering::SeqCst) >= self.rule.max_tool_calls {
            client.fetch_sub(1, Ordering::SeqCst);
            global.fetch_sub(1, Ordering::SeqCst);
            let mut e = refusal(
                "quota",
                format!(
                    "quota: this connection used its {} tool calls (max_tool_calls)",
                    self.rule.max_tool_calls
                ),
            );
            e.hint = Some("open a new connection".into());
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
            }
        };
        match self.check_profile(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(p) => req.profile = p,
            Err(e) => return refuse(e),
        }
        let slot = match self.acquire() {
            Ok(s) => s,
            Err(e) => return refuse(e),
        };
        // Tracked while the run is in flight (bounded by the quotas), so a
        // closed connection or the drain deadline can stop it.
        track(&self.cancels, cancel);
        track(&self.shared.cancels, cancel);
        let out = self.inner.run_program(req, cancel);
        forget(&self.cancels, cancel);
        forget(&self.shared.cancels, cancel);
        drop(slot);
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

    fn traces(&self, limit: usize) -> Result<Vec<Value>, ErrorInfo> {
        self.inner.traces(limit)
    }

    fn delegate(&self, intent: &str, profile: Option<&str>) -> Value {
        match self.check_profile(profile, None) {
            Ok(p) => match self.acquire() {
                Ok(_slot) => self.inner.delegate(intent, p.as_deref()),
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
        None => Ok(ServeConfig::default_for(workspace, uid)),
        Some(f) => {
            let meta = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
            if meta.len() > 1024 * 1024 {
                return Err(format!("{}: config file over 1 MiB", f.display()));
            }
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            ServeConfig::parse(&text, f, workspace, uid)
        }
    }
}
