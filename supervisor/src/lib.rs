//! lackpy's supervisor: spawns jailed executor workers, answers their tool
//! calls, enforces limits, records traces. See README.md.
//!
//! The supervisor never runs untrusted code and never trusts a worker:
//! every frame is size-capped and decoded with limits, every tool call is
//! authorized against the run's profile and budget, and any protocol
//! violation kills the worker (its whole pid namespace) and ends the run
//! with a clear error. Workers are single-use.
#![warn(missing_docs)]

mod call;
pub mod childjail;
pub mod confine;
mod death;
pub mod freezer;
pub mod json;
pub mod launchers;
mod pool;
pub mod providers;
pub mod session;
pub mod sha256;
pub mod spawn;
pub mod tools;
pub mod trace;
pub mod trusted;

pub use pool::{greet, Prestarted, READY_TIMEOUT};

use lackpy_policy::config::ResolvedProfile;
use lackpy_policy::lang::Grade;
use lackpy_policy::wire::{Data, ErrorInfo, Limits};
use lackpy_worker::jail::{Filter, JailSpec};
use serde::Serialize;
use spawn::{ExeHandle, Worker};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use trace::{TraceEntry, TraceRecord};

/// Which jail layers are on. All on by default; the operator may lower
/// named layers (`[sandbox] lower = [...]`), and the level is then recorded
/// in every trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JailLevel {
    /// Namespaces and the empty root.
    pub namespaces: bool,
    /// rlimits.
    pub rlimits: bool,
    /// landlock.
    pub landlock: bool,
    /// seccomp.
    pub seccomp: bool,
}

impl Default for JailLevel {
    fn default() -> Self {
        JailLevel::full()
    }
}

impl JailLevel {
    /// Every layer on.
    pub fn full() -> Self {
        JailLevel {
            namespaces: true,
            rlimits: true,
            landlock: true,
            seccomp: true,
        }
    }

    /// Full, minus the named layers (`namespaces`, `rlimits`, `landlock`, `seccomp`).
    ///
    /// # Errors
    /// An unknown layer name.
    pub fn lowered<S: AsRef<str>>(names: &[S]) -> Result<Self, SupervisorError> {
        let mut l = JailLevel::full();
        for n in names {
            match n.as_ref() {
                "namespaces" => l.namespaces = false,
                "rlimits" => l.rlimits = false,
                "landlock" => l.landlock = false,
                "seccomp" => l.seccomp = false,
                other => {
                    return Err(SupervisorError::Config(format!(
                        "unknown jail layer {other:?} in [sandbox] lower (known: namespaces, rlimits, landlock, seccomp)"
                    )))
                }
            }
        }
        Ok(l)
    }

    /// The jail spec for an executor with these layers and `limits`.
    ///
    /// `RLIMIT_AS` is twice the accounted-memory limit plus 256 MiB (the
    /// interpreter's own accounting stops a program first; the rlimit backs
    /// it up, and must leave room for allocator overhead and the binary).
    /// `RLIMIT_CPU` is the wall-clock limit rounded up, plus one second.
    pub fn executor_spec(&self, limits: &Limits) -> JailSpec {
        let as_bytes = limits
            .memory_bytes
            .saturating_mul(2)
            .saturating_add(256 << 20);
        let cpu = limits.wall_ms.div_ceil(1000).saturating_add(1);
        JailSpec {
            namespaces: self.namespaces,
            rlimits: self.rlimits,
            landlock: self.landlock,
            seccomp: self.seccomp.then_some(Filter::Executor),
            keep_net: false,
            connect_port: None,
            as_bytes,
            cpu_seconds: cpu,
        }
    }
}

/// Supervisor setup errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// The executable could not be opened.
    #[error("cannot open the lackpy executable: {0}")]
    Exe(std::io::Error),
    /// Invalid configuration.
    #[error("configuration: {0}")]
    Config(String),
}

/// Supervisor configuration.
#[derive(Debug)]
pub struct SupervisorConfig {
    /// The lackpy executable (normally [`ExeHandle::current`]).
    pub exe: ExeHandle,
    /// Jail layers.
    pub jail_level: JailLevel,
    /// Pre-spawned, already-jailed workers kept ready (0 = spawn per run).
    pub pool_size: usize,
    /// Worker role argv after `__worker` (default `["executor"]`). Tests
    /// point this at the test-only `hostile`/`probe` roles, which exist only
    /// in binaries built with the `test-roles` feature.
    pub worker_role: Vec<String>,
    /// What run traces keep (`[trace]`).
    pub trace_limits: trace::TraceLimits,
}

impl SupervisorConfig {
    /// Defaults: this executable, full jail, no pool, executor role.
    ///
    /// # Errors
    /// When `/proc/self/exe` cannot be opened.
    pub fn new() -> Result<Self, SupervisorError> {
        Ok(SupervisorConfig {
            exe: ExeHandle::current().map_err(SupervisorError::Exe)?,
            jail_level: JailLevel::full(),
            pool_size: 0,
            worker_role: vec!["executor".into()],
            trace_limits: trace::TraceLimits::default(),
        })
    }
}

/// One run to perform.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Program text as received (checked for size and UTF-8 here).
    pub source: Vec<u8>,
    /// The active profile.
    pub profile: ResolvedProfile,
    /// Workspace directory for the file tools and traces.
    pub workspace: PathBuf,
    /// The run's limits.
    pub limits: Limits,
}

/// Session and cancellation options of a run ([`Supervisor::run_with`]).
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Variables bound before the program starts (a session's earlier
    /// cells). Names that a program could not assign (a `_` prefix, a
    /// builtin or tool name) are dropped; the program may read the rest.
    pub initial_vars: Vec<(String, Data)>,
    /// Report the plain-data top-level variables the program leaves in
    /// [`RunReport::vars`].
    pub want_vars: bool,
    /// Cancellation: when set (by another thread) while the run is in
    /// flight, the worker is SIGKILLed (its pid namespace dies with it)
    /// within about [`CANCEL_POLL_MS`] and the run ends with error kind
    /// `internal`, type `Cancelled`.
    pub cancel: Option<Arc<AtomicBool>>,
}

/// How often a cancellable run checks its cancel flag while waiting on
/// its worker. Why 20 ms: cancellation should feel immediate to a client
/// (well under a second) while costing a waiting thread ~50 wakeups/s.
pub const CANCEL_POLL_MS: i32 = 20;

/// The result of a run: serializes to exactly the CLI contract's object
/// (`ok value repr stdout grade trace error`).
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Whether the run succeeded.
    pub ok: bool,
    /// JSON form of the value.
    pub value: serde_json::Value,
    /// Python repr of the value, or null when the program ended in a statement.
    pub repr: Option<String>,
    /// Captured `print` output.
    pub stdout: String,
    /// The program's grade.
    pub grade: Grade,
    /// Every tool call.
    pub trace: Vec<TraceEntry>,
    /// Set when `ok` is false.
    pub error: Option<ErrorInfo>,
    /// Things the user should know that did not fail the run (e.g. a trace
    /// that was refused because its path is a symlink). Absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Run id (also in the trace file).
    #[serde(skip)]
    pub run_id: String,
    /// Jail level the run had.
    #[serde(skip)]
    pub jail_level: String,
    /// Tools the program names (from validation).
    #[serde(skip)]
    pub calls: Vec<String>,
    /// With [`RunOptions::want_vars`]: the plain-data top-level variables
    /// the program left (also after a runtime error; `None` when the worker
    /// never reported, e.g. validation failed, a limit killed it, or it was
    /// cancelled).
    #[serde(skip)]
    pub vars: Option<Vec<(String, Data)>>,
    /// Top-level variables the worker left out of `vars`: not plain data
    /// (ranges, iterators, views) or beyond the `result_bytes` bound.
    #[serde(skip)]
    pub skipped_vars: Vec<String>,
    /// The program ran in surrogate mode (it has a lone surrogate escape,
    /// `lackpy_policy::lang::surrogate`): placeholder characters
    /// (U+10F800..U+10FFFF) in `value` stand for surrogates, and JSON text
    /// of the report must go through [`json::null_surrogate_value`].
    #[serde(skip)]
    pub surrogates: bool,
}

impl RunReport {
    /// The process exit status the contract assigns.
    pub fn exit_code(&self) -> i32 {
        match &self.error {
            None => 0,
            Some(e) => e.exit_code(),
        }
    }
}

/// The supervisor. `Send + Sync`: front ends call [`Supervisor::run`] from many threads.
pub struct Supervisor {
    cfg: Arc<SupervisorConfig>,
    role_override: Mutex<Option<Vec<String>>>,
    /// Trace commits and reaps (`trace.rs`); dropped first, so every
    /// trace is on disk before the pool goes.
    bg: trace::Background,
    /// The warm pool (`pool.rs`).
    pool: pool::WarmPool,
    /// Stops demoted runaways while other runs need the CPUs.
    freezer: freezer::Freezer,
    /// Provider state: python helpers, MCP servers, the host's tools.
    providers: Arc<providers::Providers>,
    /// A worker started before this supervisor ([`Supervisor::adopt`]),
    /// for the next fresh run whose jail it covers.
    prestarted: Mutex<Option<pool::Prestarted>>,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// Start a supervisor; with `pool_size > 0`, a background thread keeps
    /// that many jailed workers ready (jailed with the default limits'
    /// rlimits; runs needing more get a fresh worker).
    ///
    /// # Errors
    /// Configuration errors.
    pub fn new(cfg: SupervisorConfig) -> Result<Self, SupervisorError> {
        Supervisor::with_providers(cfg, Arc::new(providers::Providers::new()))
    }

    /// [`Supervisor::new`] with `providers` as its provider state (a front
    /// end that started the MCP servers of a config with them before the
    /// supervisor existed). Nothing else shares a supervisor's providers.
    ///
    /// # Errors
    /// Configuration errors.
    pub fn with_providers(
        cfg: SupervisorConfig,
        providers: Arc<providers::Providers>,
    ) -> Result<Self, SupervisorError> {
        let cfg = Arc::new(cfg);
        let pool = pool::WarmPool::start(&cfg)?;
        let bg = trace::Background::start().map_err(|e| {
            SupervisorError::Config(format!("cannot start the background thread: {e}"))
        })?;
        Ok(Supervisor {
            cfg,
            role_override: Mutex::new(None),
            bg,
            pool,
            freezer: freezer::Freezer::new(),
            providers,
            prestarted: Mutex::new(None),
        })
    }

    /// Keep `worker` (started with this supervisor's configuration before
    /// the supervisor existed, see [`Prestarted`]) for the next run that
    /// needs a fresh worker. It is used only if its jail covers that run's
    /// (same layers, rlimits no larger), else killed unused; a worker
    /// already kept is killed.
    pub fn adopt(&self, worker: Prestarted) {
        let old = self
            .prestarted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(worker);
        drop(old);
    }

    /// This supervisor's providers: its python helpers, its MCP servers
    /// (start them with [`providers::mcp::McpServers::start`] before
    /// resolving a profile that names their tools) and its host tools.
    pub fn providers(&self) -> &Arc<providers::Providers> {
        &self.providers
    }

    /// What run traces keep.
    pub(crate) fn trace_limits(&self) -> trace::TraceLimits {
        self.cfg.trace_limits
    }

    /// Number of ready workers in the pool right now.
    pub fn pool_ready(&self) -> usize {
        self.pool.ready()
    }

    /// The jail level string recorded in traces.
    pub fn jail_level(&self) -> String {
        self.pool.spec().level()
    }

    /// Test support: spawn fresh (unpooled) workers with this role argv
    /// (`None` restores the configured role). Only binaries built with the
    /// `test-roles` feature know any role but `executor`.
    pub fn set_worker_role(&self, role: Option<Vec<String>>) {
        if let Ok(mut r) = self.role_override.lock() {
            *r = role;
        }
    }

    /// A pooled worker when `spec` fits the pool (and no test role is
    /// set), else a fresh one.
    fn take_worker(&self, spec: &JailSpec) -> Result<Worker, ErrorInfo> {
        let role = self.role_override.lock().ok().and_then(|r| r.clone());
        let early = self
            .prestarted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(early) = early {
            let usable = role.is_none() && early.covers(spec);
            let mut w = early.into_worker();
            if usable {
                pool::greet(&mut w)?;
                return Ok(w);
            }
            // Its jail does not cover this run's (or a test role is set):
            // never used, killed, reaped off the run's path.
            w.kill();
            self.bg.dispose(w);
        }
        if role.is_none() && self.pool.fits(spec) {
            if let Some(w) = self.pool.take(&|dead| self.bg.dispose(dead)) {
                return Ok(w);
            }
        }
        let role = role.unwrap_or_else(|| self.cfg.worker_role.clone());
        pool::fresh_worker(&self.cfg, &role, spec)
    }

    /// Validate and run one program. Never panics on hostile input; every
    /// outcome, including internal failures, is a report (and a trace line).
    pub fn run(&self, req: RunRequest) -> RunReport {
        self.run_with(req, &RunOptions::default())
    }

    /// [`Supervisor::run`] with session variables and cancellation (see
    /// [`RunOptions`]).
    pub fn run_with(&self, req: RunRequest, opts: &RunOptions) -> RunReport {
        let started = Instant::now();
        let time = trace::now_rfc3339();
        let run_id = trace::new_run_id();
        let spec = self.cfg.jail_level.executor_spec(&req.limits);
        let mut report = RunReport {
            ok: false,
            value: serde_json::Value::Null,
            repr: None,
            stdout: String::new(),
            grade: Grade::default(),
            trace: Vec::new(),
            error: None,
            warnings: Vec::new(),
            run_id,
            jail_level: spec.level(),
            calls: Vec::new(),
            vars: None,
            skipped_vars: Vec::new(),
            surrogates: false,
        };
        let used = self.execute(&req, opts, &spec, &mut report);
        report.ok = report.error.is_none();
        if !report.ok {
            report.value = serde_json::Value::Null;
            report.repr = None;
        }
        let rec = TraceRecord::of_run(&req, &report, time, started.elapsed());
        // A trace path that is a symlink is refused (never followed): say
        // so in the run's own report as well as on stderr.
        if let Err(e) = trace::check_writable(&req.workspace) {
            let w = format!("trace not written: {e}");
            eprintln!("lackpy: warning: {w}");
            report.warnings.push(w);
        }
        // Appended and fsync'd by the background thread, in order; dropping
        // the supervisor waits until every record is on disk.
        self.bg
            .commit(req.workspace.clone(), rec, self.cfg.trace_limits);
        // The killed worker's reap is queued after its trace, so the
        // background thread starts the trace's fdatasync while the kernel
        // tears the worker's namespaces down, instead of after.
        if let Some(worker) = used {
            self.bg.dispose(worker);
            // Now the pool may be refilled (in batches: `pool::Pool::due`).
            self.pool.refill();
        }
        // Trace entries in the contract object do not carry result sizes.
        for t in &mut report.trace {
            t.result_bytes = None;
        }
        report
    }

    /// Validate and run `req`, filling `report`. Returns the worker it used,
    /// killed, for the caller to dispose of once the trace is queued.
    fn execute(
        &self,
        req: &RunRequest,
        opts: &RunOptions,
        spec: &JailSpec,
        report: &mut RunReport,
    ) -> Option<Worker> {
        // Validate here first: an invalid program never reaches a worker.
        let checked = session::check_program(req, opts, report)?;
        let ws = match tools::fs::Workspace::open(&req.workspace) {
            Ok(ws) => ws,
            Err(e) => {
                report.error = Some(death::internal(
                    "WorkspaceUnavailable",
                    format!("cannot open workspace {}: {e}", req.workspace.display()),
                ));
                return None;
            }
        };
        let mut worker = match self.take_worker(spec) {
            Ok(w) => w,
            Err(e) => {
                report.error = Some(e);
                return None;
            }
        };
        report.jail_level = worker.spec.level();
        let mut token = self.freezer.start();
        session::Session::new(req, opts, &ws, report, &mut worker, &mut token, self)
            .drive(&checked.run_message(req, opts));
        // SIGKILL now (the pid namespace dies with it); the wait happens off
        // the run's critical path. A forked worker is reaped by its zygote:
        // dropping it only closes its descriptors.
        worker.kill();
        drop(token);
        Some(worker)
    }

    /// Wait (up to 5 s) until the traces of every run that has returned are
    /// on disk. Readers of the trace files in this process call it first, so
    /// a client that asks for traces right after a run sees that run.
    pub fn flush_traces(&self) {
        self.bg.flush();
    }
}

#[cfg(test)]
mod tests;
