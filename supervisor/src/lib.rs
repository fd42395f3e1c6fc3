//! lackpy's supervisor: spawns jailed executor workers, answers their tool
//! calls, enforces limits, records traces. See README.md.
//!
//! The supervisor never runs untrusted code and never trusts a worker:
//! every frame is size-capped and decoded with limits, every tool call is
//! authorized against the run's profile and budget, and any protocol
//! violation kills the worker (its whole pid namespace) and ends the run
//! with a clear error. Workers are single-use.
#![warn(missing_docs)]

pub mod childjail;
pub mod confine;
pub mod freezer;
pub mod json;
pub mod mcp_cache;
pub mod mcp_source;
pub mod providers;
pub mod session;
pub mod sha256;
pub mod spawn;
pub mod tools;
pub mod trace;
pub mod trusted;

use lackpy_policy::config::ResolvedProfile;
use lackpy_policy::lang::Grade;
use lackpy_policy::wire::{
    Data, ErrorInfo, ErrorKind, FlatData, FromWorker, Limits, ToWorker, ToolSig, MAX_DATA_DEPTH,
    PROTOCOL_VERSION,
};
use lackpy_worker::ipc::FrameError;
use lackpy_worker::jail::{Filter, JailSpec};
use serde::Serialize;
use spawn::{ExeHandle, Greeting, Worker};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use trace::{TraceEntry, TraceRecord};

/// How long a fresh worker may take to jail itself and say `Ready`.
/// Why 5 s: jailing takes about a millisecond; only a wedged kernel or a
/// hostile worker takes longer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(5);

/// Pool workers started at once by the refill thread before it waits for
/// their greetings. Why 1: 2 in flight (one per core) measured no better
/// under `scripts/soak` on the loaded 2-core machine (174 vs 181–209
/// runs/s), since runs compete for the same CPUs; kept as a knob.
const REFILL_BATCH: usize = 1;

/// Pool workers forked at once by the zygote before the refill thread waits
/// for their greetings. Why 8: a fork costs the zygote well under a
/// millisecond and each child finishes its jail in parallel, so a burst of
/// runs that emptied the pool is refilled in one round.
const ZYGOTE_BATCH: usize = 8;

/// How long a run waits for a pooled worker when the pool is empty but a
/// zygote is refilling it, before it spawns a fresh worker itself.
/// Why 50 ms: a zygote refill takes about a millisecond; a fresh exec'd
/// worker costs several milliseconds of CPU that the refill would then
/// compete with.
const POOL_WAIT: Duration = Duration::from_millis(50);

/// How often the refill thread checks a full, idle pool for dead workers.
const POOL_CHECK: Duration = Duration::from_secs(1);

/// How long the supervisor polls for a worker's next frame before it sleeps.
/// Why 50 µs: a program between two tool calls usually computes for less;
/// longer computations cost the supervisor this much CPU once per frame.
const FRAME_SPIN: Duration = Duration::from_micros(50);

/// A run still computing after this long is demoted to the lowest CPU
/// priority. Why 20 ms: typical runs finish in well under a millisecond;
/// a program still busy after 20 ms is long-running, and its latency
/// matters less than everyone else's.
const DEMOTE_AFTER: Duration = Duration::from_millis(20);

/// How long to watch for frames sent after `Done` (ms), after a
/// [`FRAME_SPIN`] poll found neither a frame nor EOF.
/// Why: a well-behaved worker closes its socket right after `Done` (EOF ends
/// the wait at once); a hostile one that keeps talking is caught instead of
/// ignored.
const AFTER_DONE_WAIT_MS: i32 = 20;

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

struct Pool {
    workers: Mutex<VecDeque<Worker>>,
    cv: Condvar,
    stop: AtomicBool,
    /// A zygote is refilling the pool (refills take about a millisecond).
    fast: AtomicBool,
}

/// The supervisor. `Send + Sync`: front ends call [`Supervisor::run`] from many threads.
pub struct Supervisor {
    cfg: Arc<SupervisorConfig>,
    jobs: Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    bg: Option<std::thread::JoinHandle<()>>,
    role_override: Mutex<Option<Vec<String>>>,
    pool: Arc<Pool>,
    pool_spec: JailSpec,
    refill: Option<std::thread::JoinHandle<()>>,
    /// Stops demoted runaways while other runs need the CPUs.
    freezer: freezer::Freezer,
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
        let cfg = Arc::new(cfg);
        let pool = Arc::new(Pool {
            workers: Mutex::new(VecDeque::new()),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            fast: AtomicBool::new(false),
        });
        let pool_spec = cfg.jail_level.executor_spec(&Limits::default());
        let refill = if cfg.pool_size > 0 {
            let (cfg2, pool2, spec) = (Arc::clone(&cfg), Arc::clone(&pool), pool_spec.clone());
            // Workers die with the thread that spawned them (PR_SET_PDEATHSIG),
            // so pooled ones are spawned by this long-lived thread.
            Some(
                std::thread::Builder::new()
                    .name("lackpy-pool".into())
                    .spawn(move || refill_loop(&cfg2, &pool2, &spec))
                    .map_err(|e| {
                        SupervisorError::Config(format!("cannot start the pool thread: {e}"))
                    })?,
            )
        } else {
            None
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let bg = std::thread::Builder::new()
            .name("lackpy-bg".into())
            .spawn(move || background_loop(rx))
            .map_err(|e| {
                SupervisorError::Config(format!("cannot start the background thread: {e}"))
            })?;
        Ok(Supervisor {
            cfg,
            jobs: Mutex::new(Some(tx)),
            bg: Some(bg),
            role_override: Mutex::new(None),
            pool,
            pool_spec,
            refill,
            freezer: freezer::Freezer::new(),
        })
    }

    /// Number of ready workers in the pool right now.
    pub fn pool_ready(&self) -> usize {
        self.pool.workers.lock().map_or(0, |w| w.len())
    }

    /// The jail level string recorded in traces.
    pub fn jail_level(&self) -> String {
        self.pool_spec.level()
    }

    /// Test support: spawn fresh (unpooled) workers with this role argv
    /// (`None` restores the configured role). Only binaries built with the
    /// `test-roles` feature know any role but `executor`.
    pub fn set_worker_role(&self, role: Option<Vec<String>>) {
        if let Ok(mut r) = self.role_override.lock() {
            *r = role;
        }
    }

    /// Spawn a worker for `spec` and wait for its greeting.
    fn fresh_worker(&self, spec: &JailSpec) -> Result<Worker, ErrorInfo> {
        let role_argv = self
            .role_override
            .lock()
            .ok()
            .and_then(|r| r.clone())
            .unwrap_or_else(|| self.cfg.worker_role.clone());
        let (role, args) = role_argv
            .split_first()
            .map_or(("executor", &[][..]), |(r, a)| (r.as_str(), a));
        let mut w = spawn::spawn(&self.cfg.exe, role, args, spec)
            .map_err(|e| internal("WorkerSpawnFailed", format!("cannot spawn a worker: {e}")))?;
        greet(&mut w)?;
        Ok(w)
    }

    fn take_worker(&self, spec: &JailSpec) -> Result<Worker, ErrorInfo> {
        let fits = spec.namespaces == self.pool_spec.namespaces
            && spec.rlimits == self.pool_spec.rlimits
            && spec.landlock == self.pool_spec.landlock
            && spec.seccomp == self.pool_spec.seccomp
            && spec.as_bytes <= self.pool_spec.as_bytes
            && spec.cpu_seconds <= self.pool_spec.cpu_seconds;
        let overridden = self.role_override.lock().is_ok_and(|r| r.is_some());
        if fits && self.cfg.pool_size > 0 && !overridden {
            if let Some(w) = self.pool_take() {
                return Ok(w);
            }
        }
        self.fresh_worker(spec)
    }

    /// A worker from the pool; when it is empty but a zygote is refilling
    /// it, wait up to [`POOL_WAIT`] for one.
    fn pool_take(&self) -> Option<Worker> {
        let deadline = Instant::now() + POOL_WAIT;
        let mut q = self.pool.workers.lock().ok()?;
        loop {
            // Drop pooled workers that died meanwhile (e.g. with their zygote),
            // and tell the refill thread the pool is short: it only wakes
            // when told, and nothing else would tell it (no worker is taken),
            // so every later run would wait out POOL_WAIT and exec its own.
            let mut pruned = false;
            while q.front().is_some_and(|w| !w.idle_and_alive()) {
                if let Some(dead) = q.pop_front() {
                    self.dispose(dead);
                    pruned = true;
                }
            }
            if pruned {
                self.pool.cv.notify_all();
            }
            if let Some(w) = q.pop_front() {
                // The pool is short now. The refill thread is woken when this
                // run has ended (see `execute`), so forking the replacement
                // does not compete with the run for the CPU; only a pool
                // left empty is refilled at once. (While the pool is empty
                // the thread is busy refilling and needs no wake-up, so
                // waiting runs do not wake each other in a loop.)
                if q.is_empty() {
                    self.pool.cv.notify_all();
                }
                return Some(w);
            }
            let now = Instant::now();
            if now >= deadline
                || !self.pool.fast.load(Ordering::SeqCst)
                || self.pool.stop.load(Ordering::SeqCst)
            {
                return None;
            }
            q = self.pool.cv.wait_timeout(q, deadline - now).ok()?.0;
        }
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
            run_id: run_id.clone(),
            jail_level: spec.level(),
            calls: Vec::new(),
            vars: None,
            skipped_vars: Vec::new(),
        };
        self.execute(&req, opts, &spec, &mut report);
        report.ok = report.error.is_none();
        if !report.ok {
            report.value = serde_json::Value::Null;
            report.repr = None;
        }
        let limit_hit = report
            .error
            .as_ref()
            .filter(|e| e.kind == ErrorKind::Limit)
            .map(|e| e.type_name.clone());
        let rec = TraceRecord {
            run_id,
            time,
            program_sha256: sha256::hex(&req.source),
            program: String::from_utf8_lossy(&req.source).into_owned(),
            profile: req.profile.name.clone(),
            grade: serde_json::to_value(report.grade).unwrap_or_default(),
            jail_level: report.jail_level.clone(),
            calls: report.trace.clone(),
            outcome: match &report.error {
                None => "ok".into(),
                Some(e) => serde_json::to_value(e.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default(),
            },
            error: report
                .error
                .as_ref()
                .and_then(|e| serde_json::to_value(e).ok()),
            limit_hit,
            limits: serde_json::to_value(&req.limits).unwrap_or_default(),
            duration_us: started.elapsed().as_micros() as u64,
        };
        // A trace path that is a symlink is refused (never followed): say
        // so in the run's own report as well as on stderr.
        if let Err(e) = trace::check_writable(&req.workspace) {
            let w = format!("trace not written: {e}");
            eprintln!("lackpy: warning: {w}");
            report.warnings.push(w);
        }
        // Appended and fsync'd by the background thread, in order; dropping
        // the supervisor waits until every record is on disk.
        self.background(Job::Trace(
            req.workspace.clone(),
            Box::new(rec),
            self.cfg.trace_limits,
        ));
        // Trace entries in the contract object do not carry result sizes.
        for t in &mut report.trace {
            t.result_bytes = None;
        }
        report
    }

    fn execute(
        &self,
        req: &RunRequest,
        opts: &RunOptions,
        spec: &JailSpec,
        report: &mut RunReport,
    ) {
        let limits = &req.limits;
        // Validate here first: an invalid program never reaches a worker.
        if req.source.len() as u64 > limits.source_bytes {
            report.error = Some(ErrorInfo::new(
                ErrorKind::Validation,
                "SourceTooLarge",
                format!(
                    "program is {} bytes; the limit is {}",
                    req.source.len(),
                    limits.source_bytes
                ),
            ));
            return;
        }
        let source = match std::str::from_utf8(&req.source) {
            Ok(s) => s,
            Err(e) => {
                report.error = Some(ErrorInfo::new(
                    ErrorKind::Validation,
                    "EncodingError",
                    format!(
                        "program is not valid UTF-8 (invalid byte at offset {})",
                        e.valid_up_to()
                    ),
                ));
                return;
            }
        };
        let ns = req.profile.namespace();
        let initial: Vec<(String, Data)> = opts
            .initial_vars
            .iter()
            .filter(|(n, _)| lackpy_policy::lang::is_predefinable(n, &ns))
            .cloned()
            .collect();
        let predefined: Vec<String> = initial.iter().map(|(n, _)| n.clone()).collect();
        let program =
            match lackpy_policy::validate_with_predefined(source, &ns, limits, &predefined) {
                Ok(p) => p,
                Err(errors) => {
                    report.error = Some(errors.into_iter().next().unwrap_or_else(|| {
                        ErrorInfo::new(ErrorKind::Validation, "ValidationError", "invalid program")
                    }));
                    return;
                }
            };
        report.grade = program.grade;
        report.calls = program.calls.clone();
        let ws = match tools::fs::Workspace::open(&req.workspace) {
            Ok(ws) => ws,
            Err(e) => {
                report.error = Some(internal(
                    "WorkspaceUnavailable",
                    format!("cannot open workspace {}: {e}", req.workspace.display()),
                ));
                return;
            }
        };
        let mut worker = match self.take_worker(spec) {
            Ok(w) => w,
            Err(e) => {
                report.error = Some(e);
                return;
            }
        };
        report.jail_level = worker.spec.level();
        let run = ToWorker::Run {
            protocol: PROTOCOL_VERSION,
            program: source.to_string(),
            tools: req
                .profile
                .tools
                .iter()
                .map(|(alias, s)| ToolSig {
                    name: alias.clone(),
                    args: s.args.iter().map(|a| a.name.clone()).collect(),
                })
                .collect(),
            limits: limits.clone(),
            globals: initial
                .iter()
                .map(|(n, d)| (n.clone(), d.to_flat()))
                .collect(),
            want_globals: opts.want_vars,
        };
        let deadline = Instant::now() + Duration::from_millis(limits.wall_ms);
        let mut token = self.freezer.start();
        let mut session = Session {
            req,
            ws: &ws,
            report,
            worker: &mut worker,
            deadline,
            calls: 0,
            cancel: opts.cancel.as_ref(),
            want_vars: opts.want_vars,
            started: Instant::now(),
            token: &mut token,
            budget: trace::RunBudget::new(&self.cfg.trace_limits),
        };
        session.drive(&run);
        // SIGKILL now (the pid namespace dies with it); the wait happens off
        // the run's critical path. A forked worker is reaped by its zygote:
        // dropping it only closes its descriptors.
        worker.kill();
        drop(token);
        self.dispose(worker);
        // Now replace the pooled worker this run may have taken.
        self.pool.cv.notify_all();
    }

    /// Wait (up to 5 s) until the traces of every run that has returned are
    /// on disk. Readers of the trace files in this process call it first, so
    /// a client that asks for traces right after a run sees that run.
    pub fn flush_traces(&self) {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.background(Job::Flush(tx));
        self.wake_background();
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }

    /// End the background thread's group-commit wait now.
    fn wake_background(&self) {
        if let Some(t) = self.bg.as_ref() {
            t.thread().unpark();
        }
    }

    /// Get rid of a killed (or dead) worker. A forked worker is reaped by
    /// its zygote, so dropping it only closes its descriptors; our own
    /// child is waited for on the background thread, off the caller's path.
    fn dispose(&self, worker: Worker) {
        if worker.is_forked() {
            drop(worker);
        } else {
            self.background(Job::Reap(Box::new(worker)));
        }
    }

    /// Hand work to the background thread (or do it here if it is gone).
    fn background(&self, job: Job) {
        let mut job = Some(job);
        if let Ok(tx) = self.jobs.lock() {
            if let Some(tx) = tx.as_ref() {
                if let Some(j) = job.take() {
                    if let Err(std::sync::mpsc::SendError(back)) = tx.send(j) {
                        job = Some(back);
                    }
                }
            }
        }
        if let Some(j) = job {
            j.run();
        }
    }
}

/// Work done after a run returns: reaping its worker, writing its trace.
enum Job {
    Reap(Box<Worker>),
    Trace(PathBuf, Box<TraceRecord>, trace::TraceLimits),
    /// Answer once every trace queued before this one is on disk.
    Flush(std::sync::mpsc::SyncSender<()>),
}

impl Job {
    fn run(self) {
        match self {
            Job::Reap(mut w) => {
                w.kill_and_reap();
            }
            Job::Trace(ws, rec, limits) => {
                if let Err(e) = trace::append_many(&ws, &[&rec], &limits) {
                    trace_warning(&ws, &e);
                }
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

/// Most jobs handled per batch of [`background_loop`].
const BG_BATCH: usize = 256;

/// How long [`background_loop`] waits for more runs' traces before writing a
/// batch. Why 10 ms: a busy server then pays one `fdatasync` (a disk flush,
/// and a VM exit on this kind of machine) and one wake-up of this thread
/// per ~20 back-to-back runs instead of per run or two, and a trace is
/// still on disk milliseconds after its run ended. Nobody waits on it:
/// results go out before their traces are written, a
/// [`Supervisor::flush_traces`] ends the wait at once, and so does the
/// supervisor shutting down (`lackpy run` exits without waiting).
/// (`lackpy mcp`, 300 sequential calls, interleaved: 2 ms → 10 ms took this
/// thread from 1.19 to 0.44 context switches per call and p50 from
/// 0.71–0.90 to 0.68–0.70 ms on a loaded machine.)
const GROUP_COMMIT: Duration = Duration::from_millis(10);

/// Reaps and trace appends, off the runs' critical path. Jobs that queued
/// up meanwhile (and, when there are traces, those arriving within
/// [`GROUP_COMMIT`], a wait no new job interrupts) are handled as one
/// batch: the traces grouped by workspace in arrival order with one
/// `fdatasync` per file (group commit), then the flush requests are
/// answered, then the reaps.
fn background_loop(rx: std::sync::mpsc::Receiver<Job>) {
    use std::sync::mpsc::TryRecvError;
    let mut files = trace::TraceFiles::default();
    let mut limits = trace::TraceLimits::default();
    while let Ok(first) = rx.recv() {
        let since = Instant::now();
        let mut batch = vec![first];
        let mut closed = false;
        loop {
            while batch.len() < BG_BATCH {
                match rx.try_recv() {
                    Ok(j) => batch.push(j),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        closed = true;
                        break;
                    }
                }
            }
            let wait = !closed
                && batch.len() < BG_BATCH
                && batch.iter().any(|j| matches!(j, Job::Trace(..)))
                && !batch.iter().any(|j| matches!(j, Job::Flush(_)));
            let left = GROUP_COMMIT.saturating_sub(since.elapsed());
            if !wait || left.is_zero() {
                break;
            }
            // Sleep through the window without being woken by every run's
            // job (senders do not wake this thread): only a flush request
            // or the supervisor shutting down unparks it.
            std::thread::park_timeout(left);
        }
        let mut traces: Vec<(PathBuf, Vec<Box<TraceRecord>>)> = Vec::new();
        let mut flushes = Vec::new();
        let mut reaps = Vec::new();
        for job in batch {
            match job {
                Job::Trace(ws, rec, l) => {
                    limits = l;
                    match traces.iter_mut().find(|(w, _)| *w == ws) {
                        Some((_, recs)) => recs.push(rec),
                        None => traces.push((ws, vec![rec])),
                    }
                }
                Job::Flush(done) => flushes.push(done),
                reap => reaps.push(reap),
            }
        }
        for (ws, recs) in traces {
            let refs: Vec<&TraceRecord> = recs.iter().map(|r| &**r).collect();
            if let Err(e) = files.append_many(&ws, &refs, &limits) {
                trace_warning(&ws, &e);
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
        // Reaps last: a killed worker's exit (its namespaces torn down)
        // proceeds meanwhile, so the wait overlaps the trace's fdatasync
        // instead of coming before it (`lackpy run` waits for both).
        for reap in reaps {
            reap.run();
        }
    }
}

fn trace_warning(ws: &std::path::Path, e: &lackpy_beneath::Error) {
    tracing::warn!(
        "could not write the trace to {}: {e}",
        trace::trace_dir(ws).display()
    );
    // A refused symlink was already reported with the run (stderr and the
    // report's warnings) by `trace::check_writable`.
    if !e.is_symlink() {
        eprintln!(
            "lackpy: warning: trace not written ({}): {e}",
            trace::trace_dir(ws).display()
        );
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // Finish pending traces and reaps first.
        if let Ok(mut tx) = self.jobs.lock() {
            tx.take();
        }
        self.wake_background();
        if let Some(t) = self.bg.take() {
            let _ = t.join();
        }
        self.pool.stop.store(true, Ordering::SeqCst);
        self.pool.cv.notify_all();
        if let Some(t) = self.refill.take() {
            let _ = t.join();
        }
        if let Ok(mut q) = self.pool.workers.lock() {
            q.clear(); // Worker::drop kills and reaps
        }
    }
}

/// The refill thread's source of workers: the zygote when it can be used,
/// else a fresh exec per worker.
struct WorkerSource {
    zygote: Option<spawn::Zygote>,
    /// Whether this pool's workers can come from a zygote at all.
    usable: bool,
    /// Earliest time to try starting a zygote again after a failure.
    retry_at: Instant,
}

/// Wait before retrying a zygote that failed to start or answer.
const ZYGOTE_RETRY: Duration = Duration::from_secs(5);

impl WorkerSource {
    fn new(cfg: &SupervisorConfig, spec: &JailSpec) -> Self {
        // The zygote needs its namespaces, and its children serve only the
        // roles `lackpy_worker::role::after_jail` knows.
        let role = cfg.worker_role.first().map(String::as_str);
        let usable = spec.namespaces
            && matches!(role, Some("executor") | Some("probe"))
            && std::env::var_os("LACKPY_NO_ZYGOTE").is_none();
        WorkerSource {
            zygote: None,
            usable,
            retry_at: Instant::now(),
        }
    }

    /// One pool worker: forked by the zygote when there is one (starting it
    /// if needed), else exec'd. A zygote that fails to fork is replaced at
    /// once, one time; only a zygote that cannot start (or fails again)
    /// backs off for [`ZYGOTE_RETRY`]. `fast` tells waiting runs whether a
    /// zygote is refilling the pool.
    fn worker(
        &mut self,
        cfg: &SupervisorConfig,
        role: &str,
        args: &[String],
        spec: &JailSpec,
        fast: &AtomicBool,
    ) -> Option<Worker> {
        for attempt in 0..2 {
            if self.usable && self.zygote.is_none() && Instant::now() >= self.retry_at {
                match spawn::Zygote::start(&cfg.exe, &cfg.worker_role, spec) {
                    Ok(z) => self.zygote = Some(z),
                    Err(e) => {
                        tracing::warn!("{e}; pool workers are exec'd one by one until it starts");
                        self.retry_at = Instant::now() + ZYGOTE_RETRY;
                    }
                }
            }
            let Some(z) = self.zygote.as_mut() else {
                break;
            };
            match z.fork_worker(spec) {
                Ok(w) => {
                    fast.store(true, Ordering::SeqCst);
                    return Some(w);
                }
                Err(e) => {
                    // It died or stopped answering: runs stop waiting for
                    // the pool until a replacement forks.
                    tracing::warn!("zygote failed to fork a worker ({e}); replacing it");
                    fast.store(false, Ordering::SeqCst);
                    self.zygote = None;
                    if attempt == 1 {
                        self.retry_at = Instant::now() + ZYGOTE_RETRY;
                    }
                }
            }
        }
        fast.store(false, Ordering::SeqCst);
        spawn::spawn(&cfg.exe, role, args, spec).ok()
    }
}

fn refill_loop(cfg: &SupervisorConfig, pool: &Pool, spec: &JailSpec) {
    let (role, args) = cfg
        .worker_role
        .split_first()
        .map_or(("executor", &[][..]), |(r, a)| (r.as_str(), a));
    let mut zyg = WorkerSource::new(cfg, spec);
    let mut backoff = Duration::from_millis(10);
    loop {
        let missing = {
            let Ok(mut q) = pool.workers.lock() else {
                return;
            };
            while !pool.stop.load(Ordering::SeqCst) && q.len() >= cfg.pool_size {
                q = match pool.cv.wait_timeout(q, POOL_CHECK) {
                    Ok((q, _)) => q,
                    Err(_) => return,
                };
                // A full but idle pool can die whole (its zygote killed):
                // find out now, not when the next run finds it dead.
                q.retain(Worker::idle_and_alive);
            }
            cfg.pool_size.saturating_sub(q.len())
        };
        if pool.stop.load(Ordering::SeqCst) {
            return;
        }
        // Start up to REFILL_BATCH workers before waiting for any greeting:
        // a worker spends its start-up (jail, greeting) on its own, so
        // several in flight keep both cores busy instead of one at a time.
        let batch = if zyg.zygote.is_some() {
            ZYGOTE_BATCH
        } else {
            REFILL_BATCH
        };
        let started: Vec<Worker> = (0..missing.clamp(1, batch))
            .filter_map(|_| zyg.worker(cfg, role, args, spec, &pool.fast))
            .collect();
        let mut ready = 0usize;
        for mut w in started {
            if greet(&mut w).is_ok() {
                ready += 1;
                if let Ok(mut q) = pool.workers.lock() {
                    q.push_back(w);
                }
                pool.cv.notify_all();
            }
        }
        if ready == 0 {
            // A jail that cannot be set up fails every run with a clear
            // error from a fresh spawn; do not spin here. (Single workers
            // that die before `Ready` — killed from outside — do not count
            // as long as others in the batch come up.)
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(2));
        } else {
            backoff = Duration::from_millis(10);
        }
    }
}

fn internal(type_name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new(ErrorKind::Internal, type_name, message)
}

fn limit(type_name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new(ErrorKind::Limit, type_name, message)
}

/// Wait for `Ready`; `SetupFailed` and anything else become internal errors.
fn greet(w: &mut Worker) -> Result<(), ErrorInfo> {
    match w.greeting(Instant::now() + READY_TIMEOUT) {
        Ok(Greeting::Ready) => Ok(()),
        Ok(Greeting::SetupFailed {
            step,
            errno,
            detail,
        }) => {
            w.kill_and_reap();
            let mut e = internal(
                "JailSetupFailed",
                format!(
                    "the jail could not be set up: step `{step}` failed: {detail} (errno {errno})"
                ),
            );
            e.hint = Some(format!(
                "run `lackpy doctor` to see which layers this kernel supports; an operator may lower a layer with [sandbox] lower = [\"{}\"]",
                layer_of_step(&step)
            ));
            Err(e)
        }
        Err(FrameError::Timeout) => {
            w.kill_and_reap();
            Err(internal(
                "WorkerTimeout",
                "the worker did not start within 5 s",
            ))
        }
        Err(FrameError::Closed | FrameError::Truncated { .. }) => {
            let st = w.reap_by(Instant::now() + Duration::from_secs(1));
            Err(internal(
                "WorkerDied",
                format!("the worker died while starting ({})", describe_status(st)),
            ))
        }
        Err(e) => {
            w.kill_and_reap();
            Err(internal(
                "ProtocolViolation",
                format!("worker broke the protocol while starting: {e}"),
            ))
        }
    }
}

fn layer_of_step(step: &str) -> &'static str {
    match step {
        "rlimits" => "rlimits",
        "landlock" => "landlock",
        "seccomp" => "seccomp",
        _ => "namespaces",
    }
}

fn describe_status(st: Option<std::process::ExitStatus>) -> String {
    match st {
        None => "status unknown".into(),
        Some(s) => match spawn::death_signal(&s) {
            Some(sig) => format!("killed by signal {sig} ({})", signal_name(sig)),
            None => format!("exit status {}", s.code().unwrap_or(-1)),
        },
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGBUS => "SIGBUS",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => "signal",
    }
}

/// One run's conversation with its worker.
struct Session<'a, 't> {
    req: &'a RunRequest,
    ws: &'a tools::fs::Workspace,
    report: &'a mut RunReport,
    worker: &'a mut Worker,
    deadline: Instant,
    calls: u64,
    cancel: Option<&'a Arc<AtomicBool>>,
    want_vars: bool,
    /// When the run was handed to the worker.
    started: Instant,
    /// Freezes this run's worker while it is demoted (its CPU priority
    /// lowered once it computed past [`DEMOTE_AFTER`]) and others run.
    token: &'a mut freezer::RunToken<'t>,
    /// Bounds what this run's trace entries keep.
    budget: trace::RunBudget,
}

enum Step {
    Continue,
    Finished,
}

impl Session<'_, '_> {
    /// Check and keep the variables a worker reported: names a program
    /// could assign, well-formed data, `result_bytes` in total.
    fn take_vars(
        &mut self,
        globals: &[(String, FlatData)],
        skipped: Vec<String>,
    ) -> Result<(), ErrorInfo> {
        let ns = self.req.profile.namespace();
        let cap = self.req.limits.result_bytes;
        let mut total = 0u64;
        let mut vars = Vec::with_capacity(globals.len());
        for (name, flat) in globals {
            if !lackpy_policy::lang::is_predefinable(name, &ns) {
                return Err(self.violation(format!("reported a variable named {name:?}")));
            }
            total = total
                .saturating_add(flat.0.iter().map(node_bytes).sum::<u64>())
                .saturating_add(name.len() as u64);
            if total > cap.saturating_mul(2) {
                return Err(self.violation("reported variables beyond the size bound".into()));
            }
            match Data::from_flat(flat, MAX_DATA_DEPTH) {
                Ok(d) => vars.push((name.clone(), d)),
                Err(e) => return Err(self.violation(format!("malformed variable {name}: {e}"))),
            }
        }
        self.report.vars = Some(vars);
        self.report.skipped_vars = skipped;
        Ok(())
    }

    fn drive(&mut self, run: &ToWorker) {
        self.worker.chan.set_spin(FRAME_SPIN);
        if let Err(e) = self.worker.chan.send(run, Some(self.deadline)) {
            self.report.error = Some(self.frame_error(e));
            return;
        }
        loop {
            if let Err(e) = self.wait_or_cancel() {
                self.report.error = Some(e);
                return;
            }
            let msg = match self.worker.chan.recv::<FromWorker>(Some(self.deadline)) {
                Ok(m) => m,
                Err(e) => {
                    self.report.error = Some(self.frame_error(e));
                    return;
                }
            };
            match self.handle(msg) {
                Ok(Step::Continue) => {}
                Ok(Step::Finished) => return,
                Err(e) => {
                    self.report.error = Some(e);
                    return;
                }
            }
        }
    }

    /// A worker that has computed for [`DEMOTE_AFTER`] gets the lowest CPU
    /// priority (`SCHED_IDLE`), so a runaway program on a shared server yields
    /// the cores to short runs instead of slowing every other client down.
    /// CPU time, not wall time, where the worker's clock can be read: a
    /// short run that is merely slow because others crowd the CPUs is not a
    /// runaway, and must not be demoted (and then stopped, see
    /// [`freezer`]) for it.
    fn demote_if_long(&mut self) {
        if self.token.is_demoted() || self.started.elapsed() < DEMOTE_AFTER {
            return;
        }
        if self.worker.cpu_time().is_some_and(|cpu| cpu < DEMOTE_AFTER) {
            return;
        }
        self.worker.lower_priority();
        // Kept stopped for at most half the run's wall-clock limit.
        let budget = self.deadline.saturating_duration_since(self.started) / 2;
        self.token.demote(self.worker.pidfd_dup(), budget);
    }

    /// With a cancel flag: wait until the worker has something to say (a
    /// frame or a hang-up) or the deadline passes, checking the flag every
    /// [`CANCEL_POLL_MS`]; when it is set, SIGKILL the worker and end.
    fn wait_or_cancel(&mut self) -> Result<(), ErrorInfo> {
        // Without a cancel flag the receive itself spins, then sleeps until
        // the deadline (see `Channel::set_spin` in `drive`).
        let Some(flag) = self.cancel else {
            return Ok(());
        };
        // The worker's next frame (a tool call, Done) often follows within
        // microseconds: poll briefly before sleeping in slices.
        if self.worker.chan.spin_readable(FRAME_SPIN) {
            return Ok(());
        }
        loop {
            if flag.load(Ordering::SeqCst) {
                self.worker.kill_and_reap();
                let mut e = internal("Cancelled", "the run was cancelled by the client");
                e.hint = Some("the worker was killed; no variables were kept from this run".into());
                return Err(e);
            }
            // Checked every slice: a runaway computes without sending frames.
            self.demote_if_long();
            let slice = if self.token.is_demoted() {
                // A demoted worker may be stopped while others run; see
                // whether it may continue.
                self.token.tick();
                freezer::CHECK_EVERY.as_millis() as i32
            } else {
                CANCEL_POLL_MS
            };
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // recv reports the timeout.
                return Ok(());
            }
            let wait = i32::try_from(left.as_millis())
                .unwrap_or(i32::MAX)
                .clamp(1, slice);
            let mut pfd = libc::pollfd {
                fd: self.worker.chan.raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is one valid pollfd on a descriptor the channel owns.
            let rc = unsafe { libc::poll(&mut pfd, 1, wait) };
            if rc > 0 {
                // Readable, hung up or errored: recv tells which.
                return Ok(());
            }
            if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return Ok(());
            }
        }
    }

    /// A frame error while a run is in progress.
    fn frame_error(&mut self, e: FrameError) -> ErrorInfo {
        match e {
            FrameError::Timeout => {
                self.worker.kill_and_reap();
                limit(
                    "timeout",
                    format!(
                        "the run exceeded the wall-clock limit of {} ms",
                        self.req.limits.wall_ms
                    ),
                )
            }
            FrameError::Closed | FrameError::Truncated { .. } | FrameError::Io(_) => {
                let st = self.worker.reap_by(Instant::now() + Duration::from_secs(1));
                classify_death(st, &self.req.limits)
            }
            other => {
                self.worker.kill_and_reap();
                internal("ProtocolViolation", format!("worker killed: {other}"))
            }
        }
    }

    fn violation(&mut self, what: String) -> ErrorInfo {
        self.worker.kill_and_reap();
        internal("ProtocolViolation", format!("worker killed: {what}"))
    }

    fn handle(&mut self, msg: FromWorker) -> Result<Step, ErrorInfo> {
        match msg {
            FromWorker::ToolCall {
                id,
                name,
                args,
                kwargs,
            } => {
                self.calls += 1;
                if id != self.calls {
                    return Err(
                        self.violation(format!("tool call id {id}, expected {}", self.calls))
                    );
                }
                // Borrowed from the request (not from `self`), so no copy.
                let req = self.req;
                let frame = session::CallFrame {
                    name: &name,
                    args: &args,
                    kwargs: &kwargs,
                };
                let t0 = Instant::now();
                // Every check happens in `authorize`, before any provider
                // runs; the trace shows the call as bound (keywords in their
                // positions) or, when refused, the arguments as decoded.
                let (shown, result) = match session::authorize(
                    &req.profile,
                    self.calls,
                    req.limits.tool_calls,
                    frame,
                ) {
                    Ok(call) => {
                        let ws = self.ws;
                        // Builtin tools poll the deadline and the cancel flag.
                        let cancel = self.cancel.cloned();
                        // Builtins run on a confined lane (`confine`): the
                        // arguments are shared with it, not copied.
                        let args = Arc::new(call.args);
                        let r = providers::with_run(self.deadline, cancel, || {
                            tools::call_confined(call.spec, args.clone(), ws)
                        });
                        (Arc::try_unwrap(args).unwrap_or_else(|a| (*a).clone()), r)
                    }
                    Err(session::Refusal::Violation(what)) => return Err(self.violation(what)),
                    Err(session::Refusal::OverBudget { limit: max }) => {
                        self.worker.kill_and_reap();
                        return Err(limit(
                            "tool_calls",
                            format!("the program made more than {max} tool calls"),
                        ));
                    }
                    Err(session::Refusal::Refused { failure, args }) => (args, Err(failure)),
                };
                let duration_us = t0.elapsed().as_micros() as u64;
                // A call that used up the run's time (its timeout was cut to
                // the deadline) is traced as failed, and the run ends as any
                // run out of time.
                let out_of_time = Instant::now() >= self.deadline;
                let result = if out_of_time {
                    Err(tools::fs::fail(
                        "Timeout",
                        "the run's wall-clock limit was reached",
                    ))
                } else {
                    result
                };
                let (reply, entry_err, bytes) = match result {
                    Ok(d) => {
                        let flat = d.to_flat();
                        let bytes = flat.0.iter().map(node_bytes).sum::<u64>();
                        (Ok(flat), None, Some(bytes))
                    }
                    Err(f) => {
                        let msg = self
                            .budget
                            .message(format!("{}: {}", f.type_name, f.message));
                        (Err(f), Some(msg), None)
                    }
                };
                self.report.trace.push(TraceEntry {
                    tool: name,
                    args: shown.iter().map(|a| self.budget.arg(a)).collect(),
                    ok: entry_err.is_none(),
                    duration_us,
                    error: entry_err,
                    result_bytes: bytes,
                });
                if out_of_time {
                    return Err(self.frame_error(FrameError::Timeout));
                }
                let msg = ToWorker::ToolResult { id, result: reply };
                match self.worker.chan.send(&msg, Some(self.deadline)) {
                    Ok(()) => Ok(Step::Continue),
                    Err(FrameError::TooLarge { len, max }) => {
                        self.worker.kill_and_reap();
                        Err(limit(
                            "result",
                            format!(
                                "a tool result of {len} bytes exceeds the {max}-byte frame limit"
                            ),
                        ))
                    }
                    Err(e) => Err(self.frame_error(e)),
                }
            }
            FromWorker::Stdout(chunk) => {
                let cap = self.req.limits.stdout_bytes;
                if (self.report.stdout.len() + chunk.len()) as u64 > cap {
                    self.worker.kill_and_reap();
                    return Err(limit(
                        "output",
                        format!("the program printed more than {cap} bytes"),
                    ));
                }
                self.report.stdout.push_str(&chunk);
                Ok(Step::Continue)
            }
            FromWorker::Done(outcome) => {
                // Anything after Done is a violation. A well-behaved worker
                // closes its socket right after Done, so EOF follows within
                // microseconds: poll for it briefly before sleeping. (Sleeping
                // at once put a wake-up, and on a busy machine a wait for a
                // CPU, on every run's path: `lackpy mcp` with a runaway
                // running, 1000 sequential calls, spent p50 44 µs and p99
                // 2.6 ms in this wait.)
                let readable = self.worker.chan.spin_readable(FRAME_SPIN);
                let wait = if readable { 0 } else { AFTER_DONE_WAIT_MS };
                if self.worker.chan.has_pending(wait) {
                    return Err(self.violation("sent a frame after Done".into()));
                }
                if self.want_vars {
                    self.take_vars(&outcome.globals, outcome.skipped_globals.clone())?;
                }
                if let Some(e) = outcome.error {
                    self.report.error = Some(e.0);
                    return Ok(Step::Finished);
                }
                let value = match outcome
                    .value
                    .as_ref()
                    .map(|f| Data::from_flat(f, MAX_DATA_DEPTH))
                {
                    None => None,
                    Some(Ok(v)) => Some(v),
                    Some(Err(e)) => {
                        return Err(self.violation(format!("malformed result value: {e}")))
                    }
                };
                let cap = self.req.limits.result_bytes;
                if let Some(r) = &outcome.repr {
                    if r.len() as u64 > cap {
                        return Err(limit(
                            "result",
                            format!("the result's repr is {} bytes; the limit is {cap}", r.len()),
                        ));
                    }
                }
                self.report.value = value
                    .as_ref()
                    .map_or(serde_json::Value::Null, json::to_json);
                self.report.repr = if value.is_some() { outcome.repr } else { None };
                Ok(Step::Finished)
            }
            FromWorker::Ready { .. } | FromWorker::SetupFailed { .. } => {
                Err(self.violation("sent a greeting in the middle of a run".into()))
            }
        }
    }
}

/// Approximate encoded size of a node (for the trace's result_bytes).
fn node_bytes(n: &lackpy_policy::wire::Node) -> u64 {
    use lackpy_policy::wire::Node;
    match n {
        Node::Str(s) | Node::BigInt(s) => s.len() as u64 + 2,
        _ => 2,
    }
}

/// Why a worker died without `Done`.
fn classify_death(st: Option<std::process::ExitStatus>, limits: &Limits) -> ErrorInfo {
    let sig = st.as_ref().and_then(spawn::death_signal);
    match sig {
        Some(libc::SIGSYS) => internal(
            "SeccompKill",
            "worker killed by seccomp: it made a system call outside the allowlist",
        ),
        Some(libc::SIGXCPU) => limit(
            "timeout",
            format!(
                "the run exceeded its CPU time limit ({} ms wall)",
                limits.wall_ms
            ),
        ),
        // Under RLIMIT_AS a failed allocation aborts (SIGABRT) and a stack
        // that cannot grow faults (SIGSEGV); safe Rust has no other source of
        // either, so both mean the worker ran out of address space.
        Some(sig @ (libc::SIGABRT | libc::SIGSEGV)) => limit(
            "memory",
            format!(
                "the worker ran out of its address-space limit ({}; memory limit {} bytes)",
                signal_name(sig),
                limits.memory_bytes
            ),
        ),
        Some(libc::SIGXFSZ) => internal("WorkerDied", "worker tried to write a file (SIGXFSZ)"),
        _ => internal(
            "WorkerDied",
            format!(
                "the worker died without finishing the run ({})",
                describe_status(st)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supervisor_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Supervisor>();
        check::<RunReport>();
    }

    #[test]
    fn jail_levels() {
        assert_eq!(
            JailLevel::lowered::<&str>(&[]).ok(),
            Some(JailLevel::full())
        );
        let l = JailLevel::lowered(&["landlock", "seccomp"]).ok();
        assert_eq!(
            l.map(|l| l.executor_spec(&Limits::default()).level()),
            Some("lowered(-landlock,-seccomp)".into())
        );
        assert!(JailLevel::lowered(&["bogus"]).is_err());
        let s = JailLevel::full().executor_spec(&Limits::default());
        assert_eq!(s.as_bytes, 768 << 20);
        assert_eq!(s.cpu_seconds, 11);
    }

    #[test]
    fn report_serializes_to_the_contract_keys() {
        let r = RunReport {
            ok: true,
            value: serde_json::json!(2),
            repr: Some("2".into()),
            stdout: String::new(),
            grade: Grade::default(),
            trace: vec![TraceEntry {
                tool: "read_file".into(),
                args: vec![serde_json::json!("a.txt")],
                ok: true,
                duration_us: 3,
                error: None,
                result_bytes: None,
            }],
            error: None,
            warnings: Vec::new(),
            run_id: "x".into(),
            jail_level: "full".into(),
            calls: vec![],
            vars: None,
            skipped_vars: vec![],
        };
        let v = serde_json::to_value(&r).unwrap_or_default();
        let mut keys: Vec<_> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        assert_eq!(
            keys,
            ["error", "grade", "ok", "repr", "stdout", "trace", "value"]
        );
        let t = &v["trace"][0];
        let mut tk: Vec<_> = t
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        tk.sort();
        assert_eq!(tk, ["args", "duration_us", "error", "ok", "tool"]);
    }
}
