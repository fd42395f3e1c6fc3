//! Runaways yield the CPUs to other runs: a run still computing after
//! `DEMOTE_AFTER` is demoted. While other runs are in flight (or ended less
//! than [`GRACE`] ago) a demoted worker is scheduled `SCHED_IDLE`, and while
//! they need every CPU but one (the front end's) it is stopped (`SIGSTOP`).
//! It is continued (`SIGCONT`) once that has not been so for [`GRACE`]: a
//! client sending quick calls back to back keeps the runaway stopped between
//! them too, not only during them. (The runaway's own supervisor thread
//! checks every [`CHECK_EVERY`].)
//!
//! Why not `SCHED_IDLE` alone: the scheduler still lets an idle-policy task
//! run out its slice when the task it displaced is merely runnable (it
//! yielded, or its own slice ended) rather than waking up, and the displaced
//! task then waits for the next tick. On a 2-core machine that put 2.5–4 ms
//! p99s on quick `lackpy mcp` calls while a runaway ran (1000 sequential
//! calls; ~1.1 ms without one). A stopped process takes no CPU at all.
//!
//! Why not `SCHED_IDLE` for good: an idle-policy task gets almost no CPU
//! while *any* other process wants it. Next to a CPU-bound neighbour that is
//! not lackpy's (a local model generating on every core, the delegate case)
//! a program that had merely computed for 20 ms then starved until its
//! wall-clock limit. The demotion is about other lackpy runs, so it holds
//! only while there are some: alone, a demoted worker goes back to the
//! supervisor's own policy and nice value. Going back needs `CAP_SYS_NICE`
//! (or an `RLIMIT_NICE` allowing it); where it is refused the worker stays
//! idle, as before, and nothing else changes.
//!
//! A frozen runaway keeps its wall-clock limit, its cancellation and its
//! SIGKILL at the end: nothing else about the run changes. It is kept
//! stopped for at most half its wall-clock limit in all (its budget), so a
//! long but legitimate program still has time to finish under steady load
//! (at `SCHED_IDLE` while others run, once the budget is spent). Only forked
//! (pooled) workers are frozen and moved between policies, through their
//! pidfd (never a reused pid: the pidfd says whether the pid still names
//! the worker). An exec'd worker (the pool was empty) keeps its policy: the
//! supervisor holds no pidfd for its jailed pid 1, so it could not safely
//! move it back, and `SCHED_IDLE` for good starved it next to any CPU-bound
//! process (a run measured 0 ms of CPU in 10 s beside three busy loops).

use crate::spawn::{pidfd_exited, pidfd_signal, set_sched_idle};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long after the last other run ended a stopped runaway stays stopped.
/// Why 2 ms: a client turning one result into its next call takes well
/// under that; a quiet spell longer than it gives the runaway the CPUs.
pub const GRACE: Duration = Duration::from_millis(2);

/// How often a demoted run's supervisor thread checks whether its worker
/// may continue ([`RunToken::tick`]).
pub const CHECK_EVERY: Duration = Duration::from_millis(2);

/// One demoted run's worker.
#[derive(Debug)]
struct Demoted {
    id: u64,
    pidfd: OwnedFd,
    /// Its pid, for the scheduling policy (`None`: left as it is; also once
    /// going back from `SCHED_IDLE` was refused, without `CAP_SYS_NICE`).
    pid: Option<libc::pid_t>,
    /// Whether it is `SCHED_IDLE` now.
    idle: bool,
    /// Since when it is stopped (`None`: running).
    stopped_at: Option<Instant>,
    /// How long it was stopped before `stopped_at`.
    stopped_for: Duration,
    /// How long it may be kept stopped in all; then it only runs at
    /// `SCHED_IDLE`, as before it was frozen.
    budget: Duration,
}

impl Demoted {
    fn stopped(&self) -> bool {
        self.stopped_at.is_some()
    }

    /// Whether its time stopped has used up its budget.
    fn spent(&self, now: Instant) -> bool {
        let current = self
            .stopped_at
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.stopped_for.saturating_add(current) >= self.budget
    }
}

#[derive(Debug, Default)]
struct State {
    /// Runs in flight that are not demoted.
    active: usize,
    demoted: Vec<Demoted>,
    next_id: u64,
    /// When the last non-demoted run ended.
    last_end: Option<Instant>,
}

/// Tracks runs in flight and freezes demoted workers while the others need
/// the CPUs (see the module docs).
#[derive(Debug)]
pub struct Freezer {
    state: Mutex<State>,
    /// Non-demoted runs in flight from which on demoted workers are stopped.
    /// Computed on first need (the first demotion): reading the CPU count
    /// (`available_parallelism` reads cgroup files) is a dozen syscalls a
    /// cold `lackpy run`, which never demotes, does not need to pay.
    crowded_at: OnceLock<usize>,
}

/// One run's registration with the [`Freezer`]; dropping it ends the run
/// there ([`Freezer::end`]).
#[derive(Debug)]
pub struct RunToken<'a> {
    freezer: &'a Freezer,
    id: u64,
    demoted: bool,
}

impl RunToken<'_> {
    /// This run was demoted; `pidfd` (a duplicate, kept until the run ends)
    /// names its worker, which may be kept stopped for `budget` in all
    /// (so a long run still gets part of its wall-clock limit to compute
    /// in). Without a pidfd the run only stops counting as active.
    /// `pid` is the worker's pid for its scheduling policy: with a pidfd it
    /// is `SCHED_IDLE` only while other runs are in flight; without one (an
    /// exec'd worker) its policy is left as it is.
    pub fn demote(&mut self, pidfd: Option<OwnedFd>, pid: Option<libc::pid_t>, budget: Duration) {
        if self.demoted {
            return;
        }
        self.demoted = true;
        self.freezer.demoted(self.id, pidfd, pid, budget);
    }

    /// Whether this run was demoted.
    pub fn is_demoted(&self) -> bool {
        self.demoted
    }

    /// Continue stopped runaways if the other runs have been gone for
    /// [`GRACE`] (called by a demoted run every [`CHECK_EVERY`]).
    pub fn tick(&self) {
        self.freezer.tick();
    }
}

impl Drop for RunToken<'_> {
    fn drop(&mut self) {
        self.freezer.end(self.id, self.demoted);
    }
}

impl Freezer {
    /// A freezer for this machine: demoted workers are stopped while the
    /// other runs in flight number at least the CPUs minus one (at least 1).
    pub fn new() -> Self {
        Freezer {
            state: Mutex::new(State::default()),
            crowded_at: OnceLock::new(),
        }
    }

    /// A freezer that stops demoted workers from `crowded_at` other runs on.
    pub fn with_threshold(crowded_at: usize) -> Self {
        Freezer {
            state: Mutex::new(State::default()),
            crowded_at: OnceLock::from(crowded_at.max(1)),
        }
    }

    /// Other runs in flight from which on demoted workers are stopped: the
    /// CPUs minus one (at least 1) unless given.
    fn crowded_at(&self) -> usize {
        *self.crowded_at.get_or_init(|| {
            let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
            cpus.saturating_sub(1).max(1)
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stop or continue every demoted worker as the count of other runs
    /// (and the [`GRACE`] after the last one) requires.
    fn apply(&self, st: &mut State) {
        if st.demoted.is_empty() {
            return;
        }
        let recent = st.last_end.is_some_and(|t| t.elapsed() < GRACE);
        let crowded = st.active >= self.crowded_at() || recent;
        let others = st.active > 0 || recent;
        let now = Instant::now();
        for d in &mut st.demoted {
            if let Some(pid) = d.pid {
                if others != d.idle && !pidfd_exited(&d.pidfd) {
                    if set_sched_idle(pid, others) {
                        d.idle = others;
                    } else if !others {
                        // Refused: it stays idle, and is not asked again.
                        d.pid = None;
                    }
                }
            }
            let stop = crowded && !d.spent(now);
            match (d.stopped_at, stop) {
                (None, true) => {
                    pidfd_signal(&d.pidfd, libc::SIGSTOP);
                    d.stopped_at = Some(now);
                }
                (Some(t), false) => {
                    pidfd_signal(&d.pidfd, libc::SIGCONT);
                    d.stopped_for = d
                        .stopped_for
                        .saturating_add(now.saturating_duration_since(t));
                    d.stopped_at = None;
                }
                _ => {}
            }
        }
    }

    /// A run starts; it counts as active until its token is demoted or
    /// dropped.
    pub fn start(&self) -> RunToken<'_> {
        let mut st = self.lock();
        st.active += 1;
        st.next_id = st.next_id.wrapping_add(1);
        let id = st.next_id;
        self.apply(&mut st);
        RunToken {
            freezer: self,
            id,
            demoted: false,
        }
    }

    fn demoted(&self, id: u64, pidfd: Option<OwnedFd>, pid: Option<libc::pid_t>, budget: Duration) {
        let mut st = self.lock();
        st.active = st.active.saturating_sub(1);
        if let Some(pidfd) = pidfd {
            st.demoted.push(Demoted {
                id,
                pidfd,
                pid,
                idle: false,
                stopped_at: None,
                stopped_for: Duration::ZERO,
                budget,
            });
        }
        self.apply(&mut st);
    }

    /// The run `id` ended (its worker killed or exited).
    fn end(&self, id: u64, demoted: bool) {
        let mut st = self.lock();
        if demoted {
            if let Some(i) = st.demoted.iter().position(|d| d.id == id) {
                let d = st.demoted.swap_remove(i);
                if d.stopped() {
                    // Let a worker that is still alive run to its end (a
                    // kill already sent acts on a stopped one too).
                    pidfd_signal(&d.pidfd, libc::SIGCONT);
                }
            }
        } else {
            st.active = st.active.saturating_sub(1);
            st.last_end = Some(Instant::now());
        }
        self.apply(&mut st);
    }

    fn tick(&self) {
        let mut st = self.lock();
        self.apply(&mut st);
    }

    /// How many demoted workers are `SCHED_IDLE` right now (for tests).
    pub fn idle(&self) -> usize {
        self.lock().demoted.iter().filter(|d| d.idle).count()
    }

    /// How many demoted workers are stopped right now (for tests).
    pub fn stopped(&self) -> usize {
        self.lock().demoted.iter().filter(|d| d.stopped()).count()
    }
}

impl Default for Freezer {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sleeping child process, its pid and a pidfd for it.
    fn sleeper() -> (std::process::Child, libc::pid_t, OwnedFd) {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as libc::pid_t;
        // SAFETY: pidfd_open of our own child; the fd is owned below.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        assert!(fd >= 0);
        // SAFETY: a fresh descriptor we own.
        let pidfd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
        (child, pid, pidfd)
    }

    /// A real child process frozen and thawed through its pidfd.
    #[test]
    fn stops_demoted_workers_while_others_run() {
        let (mut child, pid, pidfd) = sleeper();
        let state = |pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap()
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string()
        };
        let f = Freezer::with_threshold(1);
        let mut runaway = f.start();
        runaway.demote(Some(pidfd), None, Duration::from_secs(5));
        // Alone: it keeps running.
        assert_eq!(f.stopped(), 0);
        let quick = f.start();
        assert_eq!(f.stopped(), 1);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(state(pid), "T");
        drop(quick);
        // Stopped through the grace period, then continued by a tick.
        assert_eq!(f.stopped(), 1);
        std::thread::sleep(GRACE + Duration::from_millis(1));
        runaway.tick();
        assert_eq!(f.stopped(), 0);
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(state(pid), "S");
        // Ending a stopped runaway continues it (then it can be reaped).
        let quick = f.start();
        assert_eq!(f.stopped(), 1);
        drop(runaway);
        assert_eq!(f.stopped(), 0);
        drop(quick);
        // A stop budget: once spent, the runaway is continued for good.
        let dup = |fd: &OwnedFd| fd.try_clone().unwrap();
        let fd2 = {
            // SAFETY: pidfd_open of our own child; the fd is owned below.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            assert!(fd >= 0);
            // SAFETY: a fresh descriptor we own.
            unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) }
        };
        let mut runaway = f.start();
        runaway.demote(Some(dup(&fd2)), None, Duration::from_millis(20));
        let quick = f.start();
        assert_eq!(f.stopped(), 1);
        std::thread::sleep(Duration::from_millis(30));
        runaway.tick();
        assert_eq!(f.stopped(), 0, "the budget was spent");
        drop(quick);
        drop(runaway);
        // Two quick runs on a threshold of two.
        let f = Freezer::with_threshold(2);
        let a = f.start();
        let b = f.start();
        drop((a, b));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// A demoted worker is `SCHED_IDLE` only while other runs are in flight:
    /// alone it goes back to the supervisor's policy, so a CPU-bound
    /// neighbour that is not lackpy's cannot starve it (as root; an
    /// unprivileged supervisor cannot go back, and then it stays idle).
    #[test]
    fn idle_only_while_other_runs_are_in_flight() {
        let (mut child, pid, pidfd) = sleeper();
        // Field 41 of /proc/PID/stat: the scheduling policy.
        let policy = |pid| -> i64 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let rest = stat.rsplit(')').next().unwrap();
            rest.split_whitespace()
                .nth(41 - 3)
                .unwrap()
                .parse()
                .unwrap()
        };
        let idle = i64::from(libc::SCHED_IDLE);
        let f = Freezer::with_threshold(4);
        let mut runaway = f.start();
        runaway.demote(Some(pidfd), Some(pid), Duration::from_secs(5));
        // Alone: its policy is left as it was.
        assert_eq!(f.idle(), 0);
        assert_eq!(policy(pid), i64::from(libc::SCHED_OTHER));
        // Another run (not enough to crowd the CPUs): idle, not stopped.
        let quick = f.start();
        assert_eq!((f.idle(), f.stopped()), (1, 0));
        assert_eq!(policy(pid), idle);
        drop(quick);
        // Within the grace period it stays idle; after it, a tick restores it.
        std::thread::sleep(GRACE + Duration::from_millis(1));
        runaway.tick();
        // SAFETY: geteuid has no arguments and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(f.idle(), 0);
            assert_eq!(policy(pid), i64::from(libc::SCHED_OTHER));
        } else {
            eprintln!("not checked: going back from SCHED_IDLE needs CAP_SYS_NICE (not root)");
            assert_eq!(policy(pid), idle);
        }
        drop(runaway);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
