//! The warm pool: workers jailed in advance by one long-lived refill
//! thread, forked by a zygote when one can be used (else exec'd one by
//! one), taken by runs whose limits fit the pool's jail.

use crate::death::{describe_status, internal, layer_of_step};
use crate::spawn::{self, Greeting, Worker};
use crate::{SupervisorConfig, SupervisorError};
use lackpy_policy::wire::{ErrorInfo, Limits};
use lackpy_worker::ipc::FrameError;
use lackpy_worker::jail::JailSpec;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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

/// How often the refill thread looks again at a pool that is short but not
/// yet due for a refill (see [`Pool::due`]): a pool left partly used is
/// topped up within this time of the last wake-up (and a wake-up lost
/// between the thread's check and its wait costs no more than this).
const SHORT_CHECK: Duration = Duration::from_millis(20);

struct Pool {
    workers: Mutex<VecDeque<Worker>>,
    /// Wakes the runs waiting for a worker (one was pushed, or the pool
    /// stops).
    cv: Condvar,
    /// Wakes the refill thread alone (a run has ended, a run waits for a
    /// worker, dead workers were pruned). Apart from `cv`, which wakes the
    /// runs waiting for a worker: runs waiting for a worker would otherwise
    /// wake each other in a loop.
    refill_cv: Condvar,
    stop: AtomicBool,
    /// A zygote is refilling the pool (refills take about a millisecond),
    /// so a run that finds it empty waits for a worker.
    zygote_refilling: AtomicBool,
    /// Runs waiting in [`WarmPool::take`] for a worker.
    waiting: AtomicUsize,
}

impl Pool {
    /// Whether the refill thread should start workers now for a pool that
    /// holds `ready` of `size`. It is asked when a run has ended, when a run
    /// waits for a worker, and after [`SHORT_CHECK`] without either
    /// (`idle_topup`).
    ///
    /// Why not after every run: a refill (the zygote's fork, the child's
    /// jail steps, the greeting) costs more CPU than a short run, and on two
    /// cores refilling one worker after every run competed with the next
    /// run. So the pool is refilled in batches: when it is under half full
    /// at a run's end, when a run is waiting for a worker, or when it has
    /// been short for [`SHORT_CHECK`]. (Waiting for no run to be in flight
    /// instead starved the pool while a long run went on: quick runs beside
    /// it then waited for a refill each time it emptied.)
    fn due(&self, ready: usize, size: usize, idle_topup: bool) -> bool {
        ready < size && (self.waiting.load(Ordering::SeqCst) > 0 || ready * 2 < size || idle_topup)
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
    /// backs off for [`ZYGOTE_RETRY`]. `zygote_refilling` tells waiting runs whether a
    /// zygote is refilling the pool.
    fn worker(
        &mut self,
        cfg: &SupervisorConfig,
        role: &str,
        args: &[String],
        spec: &JailSpec,
        zygote_refilling: &AtomicBool,
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
                    zygote_refilling.store(true, Ordering::SeqCst);
                    return Some(w);
                }
                Err(e) => {
                    // It died or stopped answering: runs stop waiting for
                    // the pool until a replacement forks.
                    tracing::warn!("zygote failed to fork a worker ({e}); replacing it");
                    zygote_refilling.store(false, Ordering::SeqCst);
                    self.zygote = None;
                    if attempt == 1 {
                        self.retry_at = Instant::now() + ZYGOTE_RETRY;
                    }
                }
            }
        }
        zygote_refilling.store(false, Ordering::SeqCst);
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
            let mut idle_topup = false;
            while !pool.stop.load(Ordering::SeqCst) && !pool.due(q.len(), cfg.pool_size, idle_topup)
            {
                let short = q.len() < cfg.pool_size;
                let timed_out;
                (q, timed_out) = match pool
                    .refill_cv
                    .wait_timeout(q, if short { SHORT_CHECK } else { POOL_CHECK })
                {
                    Ok((q, t)) => (q, t.timed_out()),
                    Err(_) => return,
                };
                // A pool short for SHORT_CHECK without a wake-up is topped up.
                idle_topup = short && timed_out;
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
            .filter_map(|_| zyg.worker(cfg, role, args, spec, &pool.zygote_refilling))
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

/// Wait (at most [`READY_TIMEOUT`]) for a fresh worker's `Ready`;
/// `SetupFailed` and anything else kill the worker and become internal
/// errors that name the failed jail step (with a hint) or how it died.
/// Every worker the supervisor's callers start is greeted here: executors
/// and the inferencer alike.
///
/// # Errors
/// `JailSetupFailed`, `WorkerTimeout`, `WorkerDied` or `ProtocolViolation`.
pub fn greet(w: &mut Worker) -> Result<(), ErrorInfo> {
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

/// The warm pool of a [`crate::Supervisor`]: its workers, the refill
/// thread that keeps `pool_size` of them ready, and the jail they carry
/// (the default limits'). Dropping it stops the thread and kills the
/// workers left.
pub(crate) struct WarmPool {
    shared: Arc<Pool>,
    spec: JailSpec,
    size: usize,
    refill: Option<std::thread::JoinHandle<()>>,
}

impl WarmPool {
    /// A pool of `cfg.pool_size` workers (none and no thread for 0).
    pub(crate) fn start(cfg: &Arc<SupervisorConfig>) -> Result<Self, SupervisorError> {
        let shared = Arc::new(Pool {
            workers: Mutex::new(VecDeque::new()),
            cv: Condvar::new(),
            refill_cv: Condvar::new(),
            stop: AtomicBool::new(false),
            zygote_refilling: AtomicBool::new(false),
            waiting: AtomicUsize::new(0),
        });
        let spec = cfg.jail_level.executor_spec(&Limits::default());
        let refill = if cfg.pool_size > 0 {
            let (cfg2, pool2, spec2) = (Arc::clone(cfg), Arc::clone(&shared), spec.clone());
            // Workers die with the thread that spawned them (PR_SET_PDEATHSIG),
            // so pooled ones are spawned by this long-lived thread.
            Some(
                std::thread::Builder::new()
                    .name("lackpy-pool".into())
                    .spawn(move || refill_loop(&cfg2, &pool2, &spec2))
                    .map_err(|e| {
                        SupervisorError::Config(format!("cannot start the pool thread: {e}"))
                    })?,
            )
        } else {
            None
        };
        Ok(WarmPool {
            shared,
            spec,
            size: cfg.pool_size,
            refill,
        })
    }

    /// The jail pooled workers carry.
    pub(crate) fn spec(&self) -> &JailSpec {
        &self.spec
    }

    /// Number of ready workers right now.
    pub(crate) fn ready(&self) -> usize {
        self.shared.workers.lock().map_or(0, |w| w.len())
    }

    /// Whether a run jailed with `spec` may use a pooled worker: same
    /// layers, and rlimits no larger than the pool's.
    pub(crate) fn fits(&self, spec: &JailSpec) -> bool {
        self.size > 0 && covers(&self.spec, spec)
    }

    /// Tell the refill thread a run has ended (it refills the pool if it
    /// is due, see [`Pool::due`]).
    pub(crate) fn refill(&self) {
        self.shared.refill_cv.notify_all();
    }

    /// A worker from the pool; when it is empty but a zygote is refilling
    /// it, wait up to [`POOL_WAIT`] for one. Dead pooled workers found on
    /// the way go to `dispose`.
    pub(crate) fn take(&self, dispose: &dyn Fn(Worker)) -> Option<Worker> {
        let pool = &*self.shared;
        let deadline = Instant::now() + POOL_WAIT;
        let mut q = pool.workers.lock().ok()?;
        loop {
            // Drop pooled workers that died meanwhile (e.g. with their zygote),
            // and tell the refill thread the pool is short: it only wakes
            // when told, and nothing else would tell it (no worker is taken),
            // so every later run would wait out POOL_WAIT and exec its own.
            let mut pruned = false;
            while q.front().is_some_and(|w| !w.idle_and_alive()) {
                if let Some(dead) = q.pop_front() {
                    dispose(dead);
                    pruned = true;
                }
            }
            if pruned {
                pool.refill_cv.notify_all();
            }
            if let Some(w) = q.pop_front() {
                // The pool is short now. It is refilled in batches, when
                // this or another run has ended or a run waits for a worker
                // (`Pool::due`).
                return Some(w);
            }
            let now = Instant::now();
            if now >= deadline
                || !pool.zygote_refilling.load(Ordering::SeqCst)
                || pool.stop.load(Ordering::SeqCst)
            {
                return None;
            }
            // A waiting run makes a refill due: tell the refill thread.
            pool.waiting.fetch_add(1, Ordering::SeqCst);
            pool.refill_cv.notify_all();
            let r = pool.cv.wait_timeout(q, deadline - now);
            pool.waiting.fetch_sub(1, Ordering::SeqCst);
            q = r.ok()?.0;
        }
    }
}

impl Drop for WarmPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.cv.notify_all();
        self.shared.refill_cv.notify_all();
        if let Some(t) = self.refill.take() {
            let _ = t.join();
        }
        if let Ok(mut q) = self.shared.workers.lock() {
            q.clear(); // Worker::drop kills and reaps
        }
    }
}

/// Whether a worker jailed with `have` may serve a run that needs `want`:
/// the same layers, and rlimits no larger than `have`'s. (The rlimits back
/// up limits the interpreter and the supervisor enforce first: a run's
/// memory, fuel and wall clock are its own whatever the worker's rlimits.)
pub(crate) fn covers(have: &JailSpec, want: &JailSpec) -> bool {
    want.namespaces == have.namespaces
        && want.rlimits == have.rlimits
        && want.landlock == have.landlock
        && want.seccomp == have.seccomp
        && want.as_bytes <= have.as_bytes
        && want.cpu_seconds <= have.cpu_seconds
        && want.keep_net == have.keep_net
        && want.connect_port == have.connect_port
}

/// A fresh worker started before the supervisor that will run it exists,
/// so that its jail set-up (exec, namespaces, mounts, seccomp: most of a
/// cold `lackpy run`) overlaps the front end's own start (configuration,
/// the program's text, validation) on another CPU.
///
/// Started with a jail guessed before the configuration is read (the full
/// jail and the limits a front end knows so far); handed to the supervisor
/// with [`crate::Supervisor::adopt`], it serves the first fresh run only if
/// its jail [`covers`] the run's exactly as a pooled worker must (same
/// layers, rlimits no larger). Otherwise it is killed unused: a guess that
/// turned out wrong costs CPU, never a weaker jail. Dropping it kills it.
#[derive(Debug)]
pub struct Prestarted(Worker);

impl Prestarted {
    /// Spawn `cfg`'s worker role jailed by `cfg`'s jail level for `limits`
    /// (not yet greeted: its `Ready` is awaited when a run takes it).
    /// `None` when it cannot be spawned; the run then spawns its own
    /// worker and reports any error there.
    pub fn spawn(cfg: &SupervisorConfig, limits: &Limits) -> Option<Self> {
        let spec = cfg.jail_level.executor_spec(limits);
        let (role, args) = role_and_args(&cfg.worker_role);
        spawn::spawn(&cfg.exe, role, args, &spec)
            .ok()
            .map(Prestarted)
    }

    /// The worker's pid (its outermost process).
    pub fn pid(&self) -> Option<u32> {
        self.0.pid()
    }

    /// Whether its jail covers `spec` (see [`covers`]).
    pub(crate) fn covers(&self, spec: &JailSpec) -> bool {
        covers(&self.0.spec, spec)
    }

    /// The worker itself.
    pub(crate) fn into_worker(self) -> Worker {
        self.0
    }
}

/// A worker role argv (after `__worker`) as the role and its arguments;
/// empty means `executor`.
fn role_and_args(role_argv: &[String]) -> (&str, &[String]) {
    role_argv
        .split_first()
        .map_or(("executor", &[][..]), |(r, a)| (r.as_str(), a))
}

/// Spawn a fresh (unpooled) worker with role argv `role_argv` (after
/// `__worker`; empty means `executor`) jailed by `spec`, and wait for its
/// greeting.
pub(crate) fn fresh_worker(
    cfg: &SupervisorConfig,
    role_argv: &[String],
    spec: &JailSpec,
) -> Result<Worker, ErrorInfo> {
    let (role, args) = role_and_args(role_argv);
    let mut w = spawn::spawn(&cfg.exe, role, args, spec)
        .map_err(|e| internal("WorkerSpawnFailed", format!("cannot spawn a worker: {e}")))?;
    greet(&mut w)?;
    Ok(w)
}
