//! Tool confinement: the builtin tools whose path logic is lackpy's own
//! (`write_file`, `edit_file`, `find_definitions`, `find_callers`; see
//! `tools::call_confined` for why `read_file` and `find_files` are not) run
//! on *lanes*, threads that confined themselves with landlock before
//! serving any call: filesystem access only beneath one workspace (read,
//! or read and write for the writing tools), no TCP, no execute. The jail makes a bug in the worker harmless; this makes a bug
//! in a tool implementation (a path check gone wrong, a symlink race)
//! unable to reach outside the workspace either.
//!
//! A lane serves one (workspace, access) pair; a few lanes per pair let
//! concurrent runs call tools at once, and idle lanes are kept for the next
//! run. A call hands its job to a free lane and waits for the result; both
//! sides spin briefly before sleeping, so a call costs a couple of cache
//! line transfers rather than two wake-ups on the hot path (see the tool
//! call row of `docs/BENCHMARKS.md`).

use crate::call::RunContext;
use lackpy_policy::wire::{Data, ToolFailure};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// Lanes per (workspace, access). Why 4: calls of concurrent runs of one
/// workspace rarely overlap for long; more callers wait for a free lane.
const LANES_PER_KEY: usize = 4;
/// Most (workspace, access) pairs with lanes; the least recently used pair's
/// lanes end when a new pair needs room.
const MAX_KEYS: usize = 32;
/// How long each side spins for the other before sleeping.
const SPIN: Duration = Duration::from_micros(50);

/// What a confined lane may do with its workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read files and list directories.
    Read,
    /// Also create, write, rename and remove beneath the workspace.
    Write,
}

type Job = Box<dyn FnOnce() -> Result<Data, ToolFailure> + Send>;

const EMPTY: u8 = 0;
const POSTED: u8 = 1;
const DONE: u8 = 2;

/// One confined thread and its mailbox.
struct Lane {
    busy: AtomicBool,
    state: AtomicU8,
    job: Mutex<Option<(Job, Thread)>>,
    result: Mutex<Option<Result<Data, ToolFailure>>>,
    stop: AtomicBool,
    thread: Thread,
}

/// Why a lane could not be started.
fn lane_failure(e: impl std::fmt::Display) -> ToolFailure {
    ToolFailure::new("ToolFailed", format!("cannot confine the tool thread: {e}"))
}

impl Lane {
    fn start(workspace: &Path, access: Access) -> Result<Arc<Lane>, ToolFailure> {
        let ruleset = ruleset(workspace, access).map_err(lane_failure)?;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Arc<Lane>>(1);
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel::<Result<(), String>>(1);
        let handle = std::thread::Builder::new()
            .name("lackpy-tool".into())
            .spawn(move || {
                let confined = ruleset
                    .restrict_self()
                    .map_err(|e| e.to_string())
                    .and_then(|st| {
                        if st.ruleset == landlock::RulesetStatus::NotEnforced {
                            Err("landlock is not enforced on this kernel".to_string())
                        } else {
                            Ok(())
                        }
                    });
                let ok = confined.is_ok();
                let _ = ready_tx.send(confined);
                if !ok {
                    return;
                }
                if let Ok(lane) = rx.recv() {
                    serve(&lane);
                }
            })
            .map_err(lane_failure)?;
        let lane = Arc::new(Lane {
            busy: AtomicBool::new(false),
            state: AtomicU8::new(EMPTY),
            job: Mutex::new(None),
            result: Mutex::new(None),
            stop: AtomicBool::new(false),
            thread: handle.thread().clone(),
        });
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(lane_failure(e)),
            Err(e) => return Err(lane_failure(e)),
        }
        tx.send(lane.clone()).map_err(lane_failure)?;
        Ok(lane)
    }

    /// Run `job` on this lane (which the caller holds busy) and wait.
    fn call(&self, job: Job) -> Result<Data, ToolFailure> {
        if let Ok(mut j) = self.job.lock() {
            *j = Some((job, std::thread::current()));
        }
        self.state.store(POSTED, Ordering::Release);
        self.thread.unpark();
        let spin_until = Instant::now() + SPIN;
        while self.state.load(Ordering::Acquire) != DONE {
            if Instant::now() < spin_until {
                std::hint::spin_loop();
            } else {
                std::thread::park_timeout(Duration::from_millis(1));
            }
        }
        self.state.store(EMPTY, Ordering::Release);
        self.result
            .lock()
            .ok()
            .and_then(|mut r| r.take())
            .unwrap_or_else(|| Err(lane_failure("the tool thread lost the result")))
    }
}

/// A lane's loop: wait for a job (spinning briefly, then sleeping), run
/// it, post the result, wake the caller.
fn serve(lane: &Lane) {
    loop {
        let spin_until = Instant::now() + SPIN;
        while lane.state.load(Ordering::Acquire) != POSTED {
            if lane.stop.load(Ordering::Relaxed) {
                return;
            }
            if Instant::now() < spin_until {
                std::hint::spin_loop();
            } else {
                std::thread::park();
            }
        }
        let taken = lane.job.lock().ok().and_then(|mut j| j.take());
        let Some((job, caller)) = taken else {
            continue;
        };
        // A panicking tool is a failed call, not a dead lane.
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
            .unwrap_or_else(|_| Err(lane_failure("the tool panicked")));
        if let Ok(mut r) = lane.result.lock() {
            *r = Some(out);
        }
        lane.state.store(DONE, Ordering::Release);
        caller.unpark();
    }
}

/// The landlock ruleset of a lane: every filesystem right handled, allowed
/// only beneath `workspace` (read, or everything but execute for
/// [`Access::Write`]); TCP bind and connect handled with no rule.
fn ruleset(
    workspace: &Path,
    access: Access,
) -> Result<landlock::RulesetCreated, landlock::RulesetError> {
    use landlock::{
        path_beneath_rules, Access as _, AccessFs, AccessNet, Ruleset, RulesetAttr,
        RulesetCreatedAttr, ABI,
    };
    let abi = ABI::V7;
    let all = AccessFs::from_all(abi);
    let allowed = match access {
        Access::Read => AccessFs::from_read(abi) & !AccessFs::Execute,
        Access::Write => all & !AccessFs::Execute,
    };
    Ruleset::default()
        .handle_access(all)?
        .handle_access(AccessNet::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules([workspace], allowed))
}

type Lanes = HashMap<(PathBuf, Access), (Vec<Arc<Lane>>, u64)>;

fn lanes() -> &'static Mutex<(Lanes, u64)> {
    static LANES: OnceLock<Mutex<(Lanes, u64)>> = OnceLock::new();
    LANES.get_or_init(|| Mutex::new((HashMap::new(), 0)))
}

/// Take a free lane of (workspace, access), starting one if there are fewer
/// than [`LANES_PER_KEY`]; `None` when all are busy.
fn take(workspace: &Path, access: Access) -> Result<Option<Arc<Lane>>, ToolFailure> {
    let mut g = lanes()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (map, clock) = &mut *g;
    *clock += 1;
    let now = *clock;
    let key = (workspace.to_path_buf(), access);
    if let Some((v, used)) = map.get_mut(&key) {
        *used = now;
        if let Some(l) = v.iter().find(|l| {
            l.busy
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) {
            return Ok(Some(l.clone()));
        }
        if v.len() >= LANES_PER_KEY {
            return Ok(None);
        }
    }
    if !map.contains_key(&key) && map.len() >= MAX_KEYS {
        // Evict the least recently used pair whose lanes are all idle.
        let victim = map
            .iter()
            .filter(|(_, (v, _))| v.iter().all(|l| !l.busy.load(Ordering::Acquire)))
            .min_by_key(|(_, (_, used))| *used)
            .map(|(k, _)| k.clone());
        if let Some(k) = victim {
            if let Some((v, _)) = map.remove(&k) {
                for l in v {
                    l.stop.store(true, Ordering::Relaxed);
                    l.thread.unpark();
                }
            }
        }
    }
    let lane = Lane::start(workspace, access)?;
    lane.busy.store(true, Ordering::Release);
    map.entry(key)
        .or_insert_with(|| (Vec::new(), now))
        .0
        .push(lane.clone());
    Ok(Some(lane))
}

/// Run `job` (a builtin tool call on `workspace`, which must be the
/// canonical workspace path) on a confined lane; while every lane is busy,
/// wait for one until `run`'s deadline.
///
/// # Errors
/// The tool's own failure; `ToolFailed` when no lane could be confined;
/// `Timeout` when no lane became free before the run's deadline.
pub fn run(
    workspace: &Path,
    access: Access,
    run: &RunContext,
    job: impl FnOnce() -> Result<Data, ToolFailure> + Send + 'static,
) -> Result<Data, ToolFailure> {
    let job: Job = Box::new(job);
    loop {
        if let Some(lane) = take(workspace, access)? {
            let out = lane.call(job);
            lane.busy.store(false, Ordering::Release);
            return out;
        }
        run.check()?;
        std::thread::sleep(Duration::from_micros(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_cannot_leave_its_workspace() {
        let ws = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("in.txt"), "in").unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let root = ws.path().canonicalize().unwrap();
        let secret = outside.path().join("secret");
        let read = |p: PathBuf| {
            run(&root, Access::Read, &RunContext::default(), move || {
                std::fs::read_to_string(&p)
                    .map(Data::Str)
                    .map_err(|e| ToolFailure::new("ToolFailed", e.to_string()))
            })
        };
        assert_eq!(read(root.join("in.txt")).unwrap(), Data::Str("in".into()));
        assert!(read(secret.clone()).is_err());
        assert!(read(PathBuf::from("/etc/passwd")).is_err());
        // Read lanes cannot write; write lanes can, inside only.
        let w = root.join("new.txt");
        let write = |access, p: PathBuf| {
            run(&root, access, &RunContext::default(), move || {
                std::fs::write(&p, "x")
                    .map(|()| Data::Bool(true))
                    .map_err(|e| ToolFailure::new("ToolFailed", e.to_string()))
            })
        };
        assert!(write(Access::Read, w.clone()).is_err());
        assert!(write(Access::Write, w.clone()).is_ok());
        assert!(write(Access::Write, outside.path().join("x")).is_err());
        assert!(!outside.path().join("x").exists());
        // A panicking job is a failed call; the lane lives on.
        assert!(run(&root, Access::Read, &RunContext::default(), || panic!(
            "boom"
        ))
        .is_err());
        assert!(read(root.join("in.txt")).is_ok());
        // No network from a lane.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let r = run(&root, Access::Read, &RunContext::default(), move || {
            std::net::TcpStream::connect(addr)
                .map(|_| Data::Bool(true))
                .map_err(|e| ToolFailure::new("ToolFailed", e.to_string()))
        });
        assert!(r.is_err());
    }
}
