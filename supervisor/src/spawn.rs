//! Spawning and killing worker processes.
//!
//! A worker is this very executable, opened once as an `O_PATH` handle
//! ([`ExeHandle`]) and re-exec'd with `execveat(fd, "", AT_EMPTY_PATH)`
//! (no path is looked up) as `__worker <role> --jail <spec>`, from a
//! `clone(CLONE_VM | CLONE_VFORK)` child ([`vfork_exec`]). Before exec (in that child):
//! stdin/stdout are /dev/null, stderr is /dev/null unless `LACKPY_LOG` is
//! set, the environment is empty, and the jail's launch plan
//! ([`lackpy_worker::jail::Plan::for_launch`]) runs: the IPC socket onto
//! [`IPC_FD`], every other descriptor close-on-exec, a root supervisor's
//! worker as nobody (65534), tied to its spawning thread with
//! `PR_SET_PDEATHSIG`. The worker then jails itself.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

use lackpy_policy::wire::FromWorker;
pub use lackpy_worker::ipc::IPC_FD;
use lackpy_worker::ipc::{self, Channel, FrameError};
use lackpy_worker::jail::{JailError, JailSpec, Plan};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Instant;

/// An `O_PATH` handle on the lackpy executable, opened before anything else
/// so no file has to be found by name when a worker is spawned.
#[derive(Debug)]
pub struct ExeHandle {
    fd: OwnedFd,
}

impl ExeHandle {
    /// Open `/proc/self/exe` (the running binary).
    ///
    /// # Errors
    /// The `open` errno.
    pub fn current() -> std::io::Result<Self> {
        Self::open(Path::new("/proc/self/exe"))
    }

    /// Open another lackpy binary (tests use the one cargo built).
    ///
    /// # Errors
    /// The `open` errno.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `c` is NUL-terminated; O_PATH opens no data access.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // Move it above the worker's fixed descriptors (0-3): the child
        // dup2s the socket onto 3 and must not clobber the exe it execs.
        // SAFETY: fcntl on the descriptor we just opened.
        let high = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        let err = std::io::Error::last_os_error();
        // SAFETY: closing the original descriptor we own.
        unsafe { libc::close(fd) };
        if high < 0 {
            return Err(err);
        }
        // SAFETY: `high` was just returned by fcntl and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(high) };
        Ok(ExeHandle { fd })
    }
}

/// How a worker process is held: our own child (exec'd by [`spawn`]), or a
/// zygote's child (forked by [`Zygote::fork_worker`]) that we signal through
/// its pidfd and whose wait status the zygote writes to a pipe.
#[derive(Debug)]
enum Proc {
    Child(ExecChild),
    Forked {
        pid: u32,
        pidfd: OwnedFd,
        status: OwnedFd,
    },
}

/// A spawned worker: its process and our end of the socket. Dropping it
/// kills and reaps the process.
#[derive(Debug)]
pub struct Worker {
    child: Option<Proc>,
    /// Our end of the IPC socketpair.
    pub chan: Channel,
    /// The jail spec it was started with.
    pub spec: JailSpec,
    /// When it was spawned.
    pub spawned: Instant,
    status: Option<ExitStatus>,
}

/// What a worker said first.
#[derive(Debug)]
pub enum Greeting {
    /// Jailed and waiting for `Run`.
    Ready,
    /// A jail step failed.
    SetupFailed {
        /// Step name.
        step: String,
        /// errno.
        errno: i32,
        /// Operator detail.
        detail: String,
    },
}

/// Spawn a worker running `role` (and `role_args`) under `spec`.
///
/// # Errors
/// The socketpair or spawn errno.
pub fn spawn(
    exe: &ExeHandle,
    role: &str,
    role_args: &[String],
    spec: &JailSpec,
) -> std::io::Result<Worker> {
    let (ours, theirs) = ipc::socketpair()?;
    let theirs_fd = theirs.as_raw_fd();
    // SAFETY: getuid cannot fail.
    let is_root = unsafe { libc::geteuid() } == 0;
    let log = std::env::var_os("LACKPY_LOG").is_some();
    let mut argv: Vec<String> = vec![
        "lackpy-worker".into(),
        "__worker".into(),
        role.into(),
        "--jail".into(),
        spec.to_arg(),
    ];
    argv.extend(role_args.iter().cloned());
    let exec = ExecArgs::new(exe.fd.as_raw_fd(), &argv)?;
    let null_in = open_dev_null(libc::O_RDONLY)?;
    let null_out = open_dev_null(libc::O_WRONLY)?;
    let err_fd = if log {
        libc::STDERR_FILENO
    } else {
        null_out.as_raw_fd()
    };
    let launch = Plan::for_launch(theirs_fd, is_root);
    let child = vfork_exec(&Launch {
        plan: &launch,
        exec: &exec,
        stdio: [null_in.as_raw_fd(), null_out.as_raw_fd(), err_fd],
        error: std::sync::atomic::AtomicI32::new(0),
    })
    .map_err(JailError::explain_spawn)?;
    drop(theirs);
    Ok(Worker {
        child: Some(child),
        chan: Channel::new(ours),
        spec: spec.clone(),
        spawned: Instant::now(),
        status: None,
    })
}

/// `/dev/null` for a worker's stdio (close-on-exec here: the child dup2s it).
fn open_dev_null(flags: libc::c_int) -> std::io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated path; the descriptor returned is ours.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What the child of [`vfork_exec`] needs, prepared before the clone: it
/// only reads this (and writes `error`), allocating nothing.
struct Launch<'a> {
    plan: &'a Plan,
    exec: &'a ExecArgs,
    /// Descriptors to put on 0, 1 and 2.
    stdio: [RawFd; 3],
    /// The child's failure: a [`JailError::to_io`] code or an exec errno
    /// (0: it exec'd).
    error: std::sync::atomic::AtomicI32,
}

/// Bytes of the stack the child of [`vfork_exec`] runs on until exec.
/// Why 64 KiB: it runs the launch plan's raw syscalls and the
/// signal-disposition loop, a few hundred bytes of frames.
const LAUNCH_STACK: usize = 64 << 10;

/// Start a worker as `posix_spawn` does: `clone(CLONE_VM | CLONE_VFORK)`,
/// so the child borrows our address space until its `execveat` (this
/// thread waits meanwhile) instead of copying it. A `fork` of the
/// supervisor copied its page tables and made every page it then wrote
/// copy-on-write, and the exec threw that copy away: most of a spawn's
/// cost in the supervisor (perf; A/B in the commit that made this
/// change). The child runs on its own stack and only does what a fork's
/// child did (stdio, the launch plan's raw syscalls, the exec); the worker
/// it becomes is a fresh image, as before. Signals are blocked around the
/// clone and the child sets every handled signal back to its default
/// before unblocking, so no handler of ours runs on the shared memory.
fn vfork_exec(launch: &Launch<'_>) -> std::io::Result<Proc> {
    // Uninitialised: the child writes its frames before reading them.
    let mut stack: Vec<u8> = Vec::with_capacity(LAUNCH_STACK);
    // 16-byte aligned top of the child's stack (it grows down).
    let top = {
        let end = stack.as_mut_ptr().wrapping_add(LAUNCH_STACK);
        end.wrapping_sub((end as usize) & 15)
    };
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    let mut old = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initialises `all`; pthread_sigmask writes the
    // previous mask into `old`.
    let old = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
        old.assume_init()
    };
    let child_arg = ChildArg { launch, mask: old };
    let mut pidfd: libc::c_int = -1;
    // SAFETY: glibc's clone runs `launch_child` on `top` (a stack we own
    // and keep alive: with CLONE_VFORK this call returns only after the
    // child exec'd or exited) with `child_arg`, which outlives the child's
    // use of it for the same reason. CLONE_PIDFD stores the pidfd in
    // `pidfd`.
    let pid = unsafe {
        libc::clone(
            launch_child,
            top.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
            std::ptr::from_ref(&child_arg).cast_mut().cast(),
            std::ptr::from_mut(&mut pidfd),
        )
    };
    let clone_err = std::io::Error::last_os_error();
    // SAFETY: restoring this thread's mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(clone_err);
    }
    // SAFETY: CLONE_PIDFD gave us this descriptor; nobody else owns it.
    let pidfd = (pidfd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(pidfd) });
    let failed = launch.error.load(std::sync::atomic::Ordering::Relaxed);
    let mut child = ExecChild { pid, pidfd };
    if failed != 0 {
        // It exited without exec'ing: reap it, report why.
        let _ = child.wait();
        return Err(std::io::Error::from_raw_os_error(failed));
    }
    Ok(Proc::Child(child))
}

/// `struct sigaction` as the `rt_sigaction` syscall reads and writes it
/// (x86-64: handler, flags, restorer, an 8-byte mask; the handler comes
/// first everywhere, and all-zero bytes are the default everywhere). The
/// default (all zero) is `SIG_DFL` with no flag.
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: libc::sighandler_t,
    flags: libc::c_ulong,
    restorer: libc::sighandler_t,
    mask: u64,
}

/// The argument of [`launch_child`].
struct ChildArg<'a> {
    launch: &'a Launch<'a>,
    /// The signal mask the worker gets (the spawning thread's).
    mask: libc::sigset_t,
}

/// The child of [`vfork_exec`], on its own stack in our address space:
/// only async-signal-safe calls on memory prepared before the clone; it
/// execs or `_exit`s and never returns into Rust code of the parent.
extern "C" fn launch_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ChildArg` vfork_exec passed, alive until we
    // exec or exit (the parent is suspended until then).
    let arg = unsafe { &*arg.cast_const().cast::<ChildArg<'_>>() };
    let launch = arg.launch;
    let fail = |code: i32| -> libc::c_int {
        launch
            .error
            .store(code.max(1), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: _exit never returns; no atexit handler may run here.
        unsafe { libc::_exit(127) }
    };
    // Every handled signal back to its default, then the worker's mask
    // (signals are all blocked until then). SIGPIPE too: the supervisor
    // ignores it, the worker starts with the default, as `Command` did.
    // Raw rt_sigaction: libc's wrapper refuses its own internal signals,
    // whose handlers must not run here either.
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let mut cur = KernelSigaction::default();
        // SAFETY: reading the disposition of `sig` into `cur` (the
        // kernel's layout, an 8-byte mask).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                std::ptr::null::<KernelSigaction>(),
                std::ptr::from_mut(&mut cur),
                8usize,
            )
        };
        let ignored = cur.handler == libc::SIG_IGN;
        if rc == 0 && cur.handler != libc::SIG_DFL && (!ignored || sig == libc::SIGPIPE) {
            let dfl = KernelSigaction::default();
            // SAFETY: the default disposition for `sig`.
            unsafe {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    std::ptr::from_ref(&dfl),
                    std::ptr::null_mut::<KernelSigaction>(),
                    8usize,
                )
            };
        }
    }
    for (i, fd) in launch.stdio.iter().enumerate() {
        let target = i32::try_from(i).unwrap_or(0);
        // SAFETY: dup2 onto 0-2 of descriptors the parent keeps open until
        // we exec (dup2 clears close-on-exec on the copy).
        if unsafe { libc::dup2(*fd, target) } < 0 {
            return fail(errno());
        }
    }
    // SAFETY: the mask saved by the parent.
    unsafe { libc::sigprocmask(libc::SIG_SETMASK, &arg.mask, std::ptr::null_mut()) };
    if let Err(e) = launch.plan.enter() {
        return fail(e.raw_os_error().unwrap_or(libc::EIO));
    }
    let e = launch.exec.exec();
    fail(e.raw_os_error().unwrap_or(libc::EIO))
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// Our own child, exec'd by [`vfork_exec`]: its pid (stable while it is
/// unreaped) and its pidfd.
#[derive(Debug)]
struct ExecChild {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
}

impl ExecChild {
    fn id(&self) -> u32 {
        self.pid.unsigned_abs()
    }

    fn waitpid(&self, flags: libc::c_int) -> Option<Option<ExitStatus>> {
        let mut status = 0;
        loop {
            // SAFETY: waiting for our own unreaped child; `status` is valid.
            let r = unsafe { libc::waitpid(self.pid, &mut status, flags) };
            if r == self.pid {
                return Some(Some(ExitStatus::from_raw(status)));
            }
            if r == 0 {
                return None;
            }
            if errno() != libc::EINTR {
                return Some(None);
            }
        }
    }

    /// `Some(status)` if it has exited (`Some(None)`: cannot tell).
    fn try_wait(&mut self) -> Option<Option<ExitStatus>> {
        self.waitpid(libc::WNOHANG)
    }

    fn wait(&mut self) -> Option<ExitStatus> {
        self.waitpid(0).flatten()
    }

    fn kill(&mut self) {
        match &self.pidfd {
            Some(fd) => pidfd_signal(fd, libc::SIGKILL),
            // SAFETY: signalling our own unreaped child (its pid cannot
            // have been reused).
            None => unsafe {
                libc::kill(self.pid, libc::SIGKILL);
            },
        }
    }
}

/// A prepared `execveat(fd, "", argv, [], AT_EMPTY_PATH)`: everything
/// allocated before the fork.
struct ExecArgs {
    fd: RawFd,
    _strings: Vec<std::ffi::CString>,
    ptrs: Vec<*const libc::c_char>,
}

// SAFETY: the raw pointers point into `_strings`, owned by the same value
// and never mutated; the value is only read (in the forked child).
unsafe impl Send for ExecArgs {}
// SAFETY: as above; shared access is read-only.
unsafe impl Sync for ExecArgs {}

impl ExecArgs {
    fn new(fd: RawFd, argv: &[String]) -> std::io::Result<Self> {
        let strings = argv
            .iter()
            .map(|a| std::ffi::CString::new(a.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let mut ptrs: Vec<*const libc::c_char> = strings.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        Ok(ExecArgs {
            fd,
            _strings: strings,
            ptrs,
        })
    }

    /// Exec; returns only on failure.
    fn exec(&self) -> std::io::Error {
        let envp: [*const libc::c_char; 1] = [std::ptr::null()];
        // SAFETY: `ptrs` is a NUL-terminated array of NUL-terminated strings
        // alive for this call; envp is an empty NUL-terminated array; the
        // empty path with AT_EMPTY_PATH execs the descriptor itself.
        unsafe {
            libc::syscall(
                libc::SYS_execveat,
                self.fd,
                c"".as_ptr(),
                self.ptrs.as_ptr(),
                envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            )
        };
        std::io::Error::last_os_error()
    }
}

impl Proc {
    /// The exit status if the process has exited, without blocking (for a
    /// forked worker: waiting up to `wait_ms` for the zygote's report).
    /// `Some(None)`: it is gone but its status is unknown (the zygote died).
    fn try_status(&mut self, wait_ms: i32) -> Option<Option<ExitStatus>> {
        match self {
            Proc::Child(c) => c.try_wait(),
            Proc::Forked { status, .. } => read_status(status, wait_ms),
        }
    }

    fn kill(&mut self) {
        match self {
            Proc::Child(c) => c.kill(),
            Proc::Forked { pidfd, .. } => pidfd_signal(pidfd, libc::SIGKILL),
        }
    }

    /// After SIGKILL: reap. Our own child is waited for; a forked worker is
    /// reaped by its zygote, so only a status already reported is taken —
    /// nobody needs the status of a worker we killed, and waiting for the
    /// zygote here would hold the caller (and the worker's buffers) for
    /// nothing.
    fn wait(&mut self) -> Option<ExitStatus> {
        match self {
            Proc::Child(c) => c.wait(),
            Proc::Forked { status, .. } => read_status(status, 0).flatten(),
        }
    }
}

/// Send `sig` to the process `pidfd` names (exactly that process, never a
/// reused pid). A process that already exited makes it fail with ESRCH,
/// which callers may ignore: there is nothing left to signal.
pub fn pidfd_signal(pidfd: &OwnedFd, sig: libc::c_int) {
    // SAFETY: pidfd_send_signal on a pidfd the caller owns; no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        );
    }
}

/// Wait up to `wait_ms` for a status pipe to have something to say: the
/// status, or the zygote's hang-up (or an error, which reading reports).
fn status_ready(fd: &OwnedFd, wait_ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if rc < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return rc != 0;
    }
}

/// Read a forked worker's wait status from its status pipe, waiting up to
/// `wait_ms`. `None`: not yet; `Some(None)`: pipe closed without a status.
fn read_status(fd: &OwnedFd, wait_ms: i32) -> Option<Option<ExitStatus>> {
    if !status_ready(fd, wait_ms) {
        return None;
    }
    let mut buf = [0u8; 4];
    // SAFETY: reading at most 4 bytes into a live array from a pipe we own.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n == 4 {
        Some(Some(ExitStatus::from_raw(i32::from_le_bytes(buf))))
    } else {
        Some(None)
    }
}

impl Worker {
    /// Process id of the spawned process (outside the worker's pid namespace).
    pub fn pid(&self) -> Option<u32> {
        match self.child.as_ref()? {
            Proc::Child(c) => Some(c.id()),
            Proc::Forked { pid, .. } => Some(*pid),
        }
    }

    /// Whether a pooled (Ready, idle) worker is still usable: it has said
    /// nothing since `Ready` and has not hung up. (Pooled workers die when
    /// their zygote dies; a run must not be handed a dead one.)
    pub fn idle_and_alive(&self) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.chan.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd on a descriptor the channel owns; zero timeout.
        let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
        rc == 0
    }

    /// Give the worker the lowest CPU priority (`SCHED_IDLE`, else nice
    /// 19). Best effort; only while it is known to be alive. An exec'd worker's jailed process is
    /// the child of our (unreaped, so stable) reaper child. A forked
    /// worker's exit is reported by its zygote right after the reap; in
    /// that microsecond window its pid could name another process of the
    /// same user, which would merely run at a lower priority.
    pub fn lower_priority(&self) {
        let pid = match self.child.as_ref() {
            Some(Proc::Child(c)) => {
                let reaper = c.id();
                let kids =
                    std::fs::read_to_string(format!("/proc/{reaper}/task/{reaper}/children"))
                        .unwrap_or_default();
                match kids.split_whitespace().next().and_then(|k| k.parse().ok()) {
                    Some(jailed) => jailed,
                    None => return,
                }
            }
            Some(Proc::Forked { pid, status, .. }) => {
                // Exited already (reported, or the zygote is gone): leave the
                // status unread for whoever reaps it.
                if status_ready(status, 0) {
                    return;
                }
                *pid
            }
            None => return,
        };
        // SCHED_IDLE rather than nice 19: an idle-policy task runs only when
        // nothing else wants the CPU, a waking task always preempts it, and
        // the scheduler places waking tasks on CPUs that run only idle-policy
        // tasks, so a runaway costs other runs almost nothing. Nice 19 is
        // the fallback where the policy cannot be set.
        let Ok(spid) = libc::pid_t::try_from(pid) else {
            return;
        };
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler and setpriority with integer arguments
        // and a valid sched_param; they only change how the named process
        // (our worker) is scheduled.
        unsafe {
            if libc::sched_setscheduler(spid, libc::SCHED_IDLE, &param) != 0 {
                libc::setpriority(libc::PRIO_PROCESS, pid, 19);
            }
        }
    }

    /// CPU time a forked worker has used so far (its process CPU clock);
    /// `None` for an exec'd worker or when the clock cannot be read.
    pub fn cpu_time(&self) -> Option<std::time::Duration> {
        let Some(Proc::Forked { pid, .. }) = self.child.as_ref() else {
            return None;
        };
        let pid = libc::pid_t::try_from(*pid).ok()?;
        let mut clock: libc::clockid_t = 0;
        // SAFETY: clock_getcpuclockid writes one clockid_t into `clock`.
        if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
            return None;
        }
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec into `ts`.
        if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
            return None;
        }
        Some(std::time::Duration::new(
            u64::try_from(ts.tv_sec).ok()?,
            u32::try_from(ts.tv_nsec).ok()?,
        ))
    }

    /// A duplicate of a forked worker's pidfd (`None` for an exec'd worker
    /// or when `dup` fails).
    pub fn pidfd_dup(&self) -> Option<OwnedFd> {
        match self.child.as_ref() {
            Some(Proc::Forked { pidfd, .. }) => pidfd.try_clone().ok(),
            _ => None,
        }
    }

    /// Whether this worker was forked by a zygote (rather than exec'd).
    pub fn is_forked(&self) -> bool {
        matches!(self.child, Some(Proc::Forked { .. }))
    }

    /// Wait for the first frame until `deadline`.
    ///
    /// # Errors
    /// Any frame error, or an unexpected first message.
    pub fn greeting(&mut self, deadline: Instant) -> Result<Greeting, FrameError> {
        match self.chan.recv::<FromWorker>(Some(deadline))? {
            FromWorker::Ready { protocol } if protocol == lackpy_policy::wire::PROTOCOL_VERSION => {
                Ok(Greeting::Ready)
            }
            FromWorker::Ready { .. } => Err(FrameError::Malformed(
                "worker speaks another protocol version",
            )),
            FromWorker::SetupFailed {
                step,
                errno,
                detail,
            } => Ok(Greeting::SetupFailed {
                step,
                errno,
                detail,
            }),
            _ => Err(FrameError::Malformed(
                "first frame must be Ready or SetupFailed",
            )),
        }
    }

    /// SIGKILL the worker without waiting (reap later with [`Worker::kill_and_reap`]).
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            match child.try_status(0) {
                Some(st) => {
                    self.status = st;
                    self.child = None;
                }
                None => child.kill(),
            }
        }
    }

    /// SIGKILL the worker (its pid namespace dies with it) and reap it.
    /// Idempotent; returns the exit status.
    pub fn kill_and_reap(&mut self) -> Option<ExitStatus> {
        if let Some(mut child) = self.child.take() {
            // If it already exited, keep its real status.
            match child.try_status(0) {
                Some(st) => self.status = st,
                None => {
                    child.kill();
                    self.status = child.wait();
                }
            }
        }
        self.status
    }

    /// Wait (up to `deadline`) for the worker to exit on its own, then reap;
    /// SIGKILL it if it is still running at the deadline.
    pub fn reap_by(&mut self, deadline: Instant) -> Option<ExitStatus> {
        if let Some(child) = self.child.as_mut() {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let slice = i32::try_from(left.as_millis().min(5)).unwrap_or(5);
                match child.try_status(slice) {
                    Some(st) => {
                        self.status = st;
                        self.child = None;
                        break;
                    }
                    None if Instant::now() < deadline => {
                        if matches!(child, Proc::Child(_)) {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                        }
                    }
                    None => return self.kill_and_reap(),
                }
            }
        }
        self.status
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// The signal that ended a worker, seen through the reaper process
/// (which exits 128+N when the jailed pid 1 died of signal N).
pub fn death_signal(st: &ExitStatus) -> Option<i32> {
    st.signal()
        .or_else(|| st.code().filter(|c| *c > 128 && *c < 160).map(|c| c - 128))
}

/// A running zygote (see `lackpy_worker::zygote`): a pre-jailed process
/// that forks pool workers in a fraction of the cost of [`spawn`]. Dropping
/// it closes the control socket; the zygote exits and takes every worker it
/// forked with it.
#[derive(Debug)]
pub struct Zygote {
    proc: Worker,
}

/// How long the zygote may take to answer one fork request.
/// Why 2 s: a fork takes well under a millisecond; only a stuck or dead
/// zygote takes longer, and then it is replaced.
const ZYGOTE_ANSWER: std::time::Duration = std::time::Duration::from_secs(2);

impl Zygote {
    /// Spawn a zygote whose workers serve `child_role` (`["executor"]`)
    /// under `spec`, and wait for it to be jailed.
    ///
    /// # Errors
    /// The spawn errno, or a description of why the zygote did not come up.
    pub fn start(
        exe: &ExeHandle,
        child_role: &[String],
        spec: &JailSpec,
    ) -> Result<Zygote, String> {
        let mut proc = spawn(exe, "zygote", child_role, spec)
            .map_err(|e| format!("cannot spawn the zygote: {e}"))?;
        match proc.greeting(Instant::now() + std::time::Duration::from_secs(5)) {
            Ok(Greeting::Ready) => Ok(Zygote { proc }),
            Ok(Greeting::SetupFailed { step, detail, .. }) => {
                Err(format!("zygote jail step `{step}` failed: {detail}"))
            }
            Err(e) => Err(format!("zygote did not start: {e}")),
        }
    }

    /// Fork one worker (jailed by `spec`, which must be the zygote's). The
    /// worker still has to say `Ready` on its channel.
    ///
    /// # Errors
    /// A socket/pipe errno, the zygote's errno, or `ETIMEDOUT` / `EPIPE`
    /// when the zygote is stuck or gone (then drop and replace it).
    pub fn fork_worker(&mut self, spec: &JailSpec) -> std::io::Result<Worker> {
        let (ours, theirs) = ipc::socketpair()?;
        let mut p = [-1 as RawFd; 2];
        // SAFETY: `p` is a valid array of two ints that pipe2 fills in.
        if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: both descriptors were just returned by pipe2 and are ours alone.
        let (status_r, status_w) =
            unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) };
        let ctrl = self.proc.chan.raw_fd();
        ipc::send_fds(
            ctrl,
            &[lackpy_worker::zygote::REQUEST_FORK],
            &[theirs.as_raw_fd(), status_w.as_raw_fd()],
        )?;
        drop(theirs);
        drop(status_w);
        let mut buf = [0u8; 8];
        let (n, mut fds) = ipc::recv_fds(ctrl, &mut buf, Some(Instant::now() + ZYGOTE_ANSWER))?;
        if n == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EPIPE));
        }
        if n != 4 {
            return Err(std::io::Error::from_raw_os_error(libc::EPROTO));
        }
        let v = i32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]);
        if v <= 0 {
            return Err(std::io::Error::from_raw_os_error(if v < 0 {
                -v
            } else {
                libc::EPROTO
            }));
        }
        let pidfd = match (fds.pop(), fds.is_empty()) {
            (Some(fd), true) => fd,
            _ => return Err(std::io::Error::from_raw_os_error(libc::EPROTO)),
        };
        Ok(Worker {
            child: Some(Proc::Forked {
                pid: v.unsigned_abs(),
                pidfd,
                status: status_r,
            }),
            chan: Channel::new(ours),
            spec: spec.clone(),
            spawned: Instant::now(),
            status: None,
        })
    }

    /// The zygote's own pid.
    pub fn pid(&self) -> Option<u32> {
        self.proc.pid()
    }
}

/// Give memory the allocator keeps in its free lists back to the kernel
/// (glibc `malloc_trim(0)`: every arena, including the free pages inside
/// them). A long-running server calls it now and then: runs are served by
/// many threads, each allocating from its own arena, and freed memory would
/// otherwise stay resident (fragmentation, not a leak).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists under its
    // locks; it takes an integer and touches no memory of ours.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Keep the allocator to its one main heap arena (glibc `M_ARENA_MAX` = 1),
/// for a long-running server. Call before starting threads. Why: glibc gives
/// new threads their own arenas (up to 8 per core), a server's runs hop
/// between many blocking threads, and `malloc_trim` gives back the free top
/// of the main arena only, so the other arenas' tops stay resident. Measured
/// with `scripts/soak --faults` (4k runs, 8 clients, RSS at rest): default
/// arenas 36–38 MiB and +10–37 % growth; two arenas 13–19 MiB, still +4–38 %
/// (in use: 1.4 MiB); one arena 13 MiB, +3–5 %, same throughput (small
/// allocations are served from per-thread caches without the arena lock).
pub fn limit_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt sets one allocator parameter under the allocator's own
    // lock; it takes two integers and touches no memory of ours.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
        libc::mallopt(libc::M_MXFAST, 0);
    }
}
