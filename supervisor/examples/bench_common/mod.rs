//! What the supervisor's run benchmarks share (`bench_run`, `bench_peers_rs`):
//! the profile they run with, a warm-pool supervisor, and the RSS of a
//! Ready worker.

use lackpy_policy::config::ResolvedProfile;
use lackpy_policy::wire::Limits;
use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};
use lackpy_supervisor::{JailLevel, Supervisor, SupervisorConfig};
use std::path::Path;
use std::time::{Duration, Instant};

/// The benchmarks' profile: `read_file` and `find_files`, default limits.
pub fn profile() -> ResolvedProfile {
    ResolvedProfile {
        name: "bench".into(),
        tools: ["read_file", "find_files"]
            .iter()
            .filter_map(|t| lackpy_supervisor::tools::builtin_spec(t).map(|s| (t.to_string(), s)))
            .collect(),
        limits: Limits::default(),
    }
}

/// VmRSS of a process in KiB (0 when it cannot be read).
pub fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// A supervisor over the binary `bin` with every jail layer on and a warm
/// pool of two executors.
pub fn pool_supervisor(bin: &Path) -> Result<Supervisor, Box<dyn std::error::Error>> {
    let cfg = SupervisorConfig {
        exe: ExeHandle::open(bin)?,
        jail_level: JailLevel::full(),
        pool_size: 2,
        worker_role: vec!["executor".into()],
        trace_limits: Default::default(),
    };
    Ok(Supervisor::new(cfg)?)
}

/// Wait (at most 5 s) until the pool holds a Ready worker.
pub fn wait_pool(sup: &Supervisor) {
    let t0 = Instant::now();
    while sup.pool_ready() < 1 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// RSS in KiB of a freshly spawned Ready executor: `(jailed, reaper)`, the
/// jailed pid 1 with anything under it and its reaper (the direct child).
pub fn ready_worker_rss(bin: &Path) -> Option<(u64, u64)> {
    let exe = ExeHandle::open(bin).ok()?;
    let spec = JailLevel::full().executor_spec(&Limits::default());
    let mut w = spawn::spawn(&exe, "executor", &[], &spec).ok()?;
    let mut rss = None;
    if let (Ok(Greeting::Ready), Some(pid)) =
        (w.greeting(Instant::now() + Duration::from_secs(5)), w.pid())
    {
        let kids =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        let inner: u64 = kids
            .split_whitespace()
            .filter_map(|k| k.parse().ok())
            .map(rss_kib)
            .sum();
        rss = Some((inner, rss_kib(pid)));
    }
    w.kill_and_reap();
    rss
}
