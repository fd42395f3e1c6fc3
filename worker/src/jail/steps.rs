//! The individual jail steps. Each is small, says why it exists, and maps
//! its failure to its own [`JailError`] variant with the errno.

use super::{JailError, LayerStatus};
use std::ffi::CStr;

/// The IPC socket's descriptor number in a worker.
pub const IPC_FD: i32 = 3;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// The uid/gid we run as outside, for the identity map.
pub fn outer_ids() -> (u32, u32) {
    // SAFETY: getuid/getgid cannot fail and touch no memory.
    unsafe { (libc::getuid(), libc::getgid()) }
}

/// Why: a user namespace gives this unprivileged process the capabilities it
/// needs for the other namespaces and mounts, all of them meaningless outside.
pub fn unshare_user() -> Result<(), JailError> {
    // SAFETY: unshare takes only flags.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        return Err(JailError::UnshareUser(errno()));
    }
    Ok(())
}

fn write_proc_file(
    path: &'static CStr,
    file: &'static str,
    content: &str,
) -> Result<(), JailError> {
    // SAFETY: `path` is a NUL-terminated string; flags are plain ints.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(JailError::IdMap {
            file,
            errno: errno(),
        });
    }
    // SAFETY: `content` is a valid buffer of content.len() bytes; fd is ours.
    let n = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    let e = errno();
    // SAFETY: closing the fd we just opened.
    unsafe { libc::close(fd) };
    if n < 0 || n as usize != content.len() {
        return Err(JailError::IdMap { file, errno: e });
    }
    Ok(())
}

/// Why: map only our own outer identity (to root inside), which an
/// unprivileged process may do; every other id stays unmapped (nobody).
/// `setgroups` must be denied first, so the worker can never drop a group
/// that was protecting something.
pub fn write_id_maps(uid: u32, gid: u32) -> Result<(), JailError> {
    write_proc_file(c"/proc/self/setgroups", "/proc/self/setgroups", "deny")?;
    write_proc_file(
        c"/proc/self/uid_map",
        "/proc/self/uid_map",
        &format!("0 {uid} 1"),
    )?;
    write_proc_file(
        c"/proc/self/gid_map",
        "/proc/self/gid_map",
        &format!("0 {gid} 1"),
    )?;
    Ok(())
}

/// Why: separate mount (for the empty root), pid (no host process is
/// visible or signalable), net (no interface but a down `lo`), ipc, uts and
/// cgroup namespaces.
pub fn unshare_others(keep_net: bool) -> Result<(), JailError> {
    let mut flags = libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP;
    if !keep_net {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare takes only flags.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(JailError::UnshareOthers(errno()));
    }
    Ok(())
}

/// Why: a new pid namespace applies to children only, so fork once: the
/// child is pid 1 of the namespace (its death kills everything in it) and
/// continues the jail; the parent only waits and exits with the child's
/// status (128+signal when killed, so the supervisor can name the signal).
/// The child dies with its parent (`PR_SET_PDEATHSIG`), and a pipe tells it
/// whether the parent already died before that was set.
pub fn fork_into_pid_namespace() -> Result<(), JailError> {
    let mut pipe = [-1i32; 2];
    // SAFETY: `pipe` is a valid array of two ints.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(JailError::Fork(errno()));
    }
    // SAFETY: the process is single-threaded here (enter() requires it), so
    // the child may keep running arbitrary Rust code after fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(JailError::Fork(errno()));
    }
    if pid > 0 {
        // Parent: drop our copy of the IPC socket so the supervisor sees EOF
        // when the child dies, then reap and mirror the child's end.
        // SAFETY: closing descriptors we own.
        unsafe {
            libc::close(IPC_FD);
            libc::close(pipe[0]);
        }
        // The reaper holds the namespace's capabilities but only ever waits:
        // confine it to wait4/exit (best effort; the child is the real jail).
        confine_reaper();
        let Some(status) = wait_status(pid) else {
            // SAFETY: _exit never returns and is always safe to call.
            unsafe { libc::_exit(4) };
        };
        let code = if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else if libc::WIFSIGNALED(status) {
            128 + libc::WTERMSIG(status)
        } else {
            4
        };
        // SAFETY: _exit never returns; skipping atexit handlers is intended.
        unsafe { libc::_exit(code) };
    }
    // Child: die with the parent.
    die_with_parent()?;
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(pipe[1]) };
    let mut pfd = libc::pollfd {
        fd: pipe[0],
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, zero timeout.
    let rc = unsafe { libc::poll(&mut pfd, 1, 0) };
    // SAFETY: closing the read end we own.
    unsafe { libc::close(pipe[0]) };
    if rc != 0 {
        // POLLHUP: every write end is closed, i.e. the parent already died.
        return Err(JailError::Fork(libc::ESRCH));
    }
    Ok(())
}

/// Wait for the child `pid` to end, retrying when interrupted: its raw
/// wait status, or `None` if waiting fails otherwise. Only
/// async-signal-safe calls, so a process forked from a threaded one may
/// use it (the command provider's parent outside the command's pid
/// namespace does).
pub fn wait_status(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid int to write into.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Some(status);
        }
        if r < 0 && errno() != libc::EINTR {
            return None;
        }
    }
}

/// Why: the reaper outside the pid namespace still holds every capability
/// of the user namespace; it needs nothing but `wait4` and `exit_group`.
fn confine_reaper() {
    let _ = set_no_new_privs();
    if let Ok(prog) = super::seccomp::compile_reaper() {
        let _ = seccompiler::apply_filter(&prog);
    }
}

fn mount(
    what: &'static str,
    src: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> Result<(), JailError> {
    let p = |c: Option<&CStr>| c.map_or(std::ptr::null(), CStr::as_ptr);
    // SAFETY: every pointer is NUL-terminated or null, valid for the call.
    let rc = unsafe { libc::mount(p(src), target.as_ptr(), p(fstype), flags, p(data).cast()) };
    if rc != 0 {
        return Err(JailError::Mount {
            what,
            errno: errno(),
        });
    }
    Ok(())
}

/// Why: nothing of the host filesystem must be reachable. Make our copy of
/// the mount tree private (so nothing propagates back), mount a tiny empty
/// tmpfs, pivot into it with `pivot_root(new, new)` and lazily unmount the
/// old root that now sits under it (nsjail's trick: no old-root directory
/// needed), then make the new root read-only.
pub fn pivot_to_empty_root() -> Result<(), JailError> {
    mount(
        "/ private",
        None,
        c"/",
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    // Any existing directory serves as the mount point: the mount is private.
    let target = [c"/tmp", c"/mnt", c"/proc"]
        .into_iter()
        .find(|p| {
            // SAFETY: `p` is NUL-terminated; F_OK check only.
            unsafe { libc::access(p.as_ptr(), libc::F_OK) == 0 }
        })
        .unwrap_or(c"/proc");
    mount(
        "tmpfs root",
        Some(c"none"),
        target,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        Some(c"size=16k,nr_inodes=16,mode=0500"),
    )?;
    // SAFETY: `target` is NUL-terminated.
    if unsafe { libc::chdir(target.as_ptr()) } != 0 {
        return Err(JailError::PivotRoot(errno()));
    }
    // SAFETY: pivot_root via syscall with two NUL-terminated "." paths.
    if unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) } != 0 {
        return Err(JailError::PivotRoot(errno()));
    }
    // SAFETY: "/" is NUL-terminated; MNT_DETACH lazily drops the old root.
    if unsafe { libc::umount2(c"/".as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(JailError::UmountOldRoot(errno()));
    }
    // SAFETY: "/" is NUL-terminated.
    if unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
        return Err(JailError::PivotRoot(errno()));
    }
    mount(
        "/ read-only",
        None,
        c"/",
        None,
        libc::MS_REMOUNT
            | libc::MS_BIND
            | libc::MS_RDONLY
            | libc::MS_NOSUID
            | libc::MS_NODEV
            | libc::MS_NOEXEC,
        None,
    )?;
    Ok(())
}

fn setrlimit(
    name: &'static str,
    res: libc::__rlimit_resource_t,
    value: u64,
) -> Result<(), JailError> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `lim` is a valid rlimit struct.
    if unsafe { libc::setrlimit(res, &lim) } != 0 {
        return Err(JailError::Rlimit {
            name,
            errno: errno(),
        });
    }
    Ok(())
}

/// Descriptors a jailed worker may hold: stdin/out/err (/dev/null or the
/// log), the IPC socket, and transient ones during landlock setup.
/// Why 8: 0–3 are open, landlock needs one more briefly; no later step opens any.
const NOFILE: u64 = 8;

/// Why: the kernel, not only the interpreter, bounds memory and CPU; no core
/// dump can leak memory to disk; no new process can be created (NPROC=0 —
/// the pid-1 fork is already done); no file can grow (FSIZE=0); few fds.
pub fn set_rlimits(as_bytes: u64, cpu_seconds: u64) -> Result<(), JailError> {
    setrlimit("RLIMIT_AS", libc::RLIMIT_AS, as_bytes)?;
    setrlimit("RLIMIT_CPU", libc::RLIMIT_CPU, cpu_seconds)?;
    setrlimit("RLIMIT_CORE", libc::RLIMIT_CORE, 0)?;
    setrlimit("RLIMIT_NOFILE", libc::RLIMIT_NOFILE, NOFILE)?;
    setrlimit("RLIMIT_NPROC", libc::RLIMIT_NPROC, 0)?;
    setrlimit("RLIMIT_FSIZE", libc::RLIMIT_FSIZE, 0)?;
    setrlimit("RLIMIT_MEMLOCK", libc::RLIMIT_MEMLOCK, 0)?;
    setrlimit("RLIMIT_MSGQUEUE", libc::RLIMIT_MSGQUEUE, 0)?;
    Ok(())
}

/// Why: no exec (if one ever became possible) can gain privileges, and it
/// is what lets an unprivileged process install seccomp and landlock.
pub fn set_no_new_privs() -> Result<(), JailError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(JailError::NoNewPrivs(errno()));
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
/// SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
/// SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED.
const SECUREBITS_LOCKED_DOWN: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;

/// Why: root inside the user namespace holds every capability there
/// (mounts, namespaces, raw sockets on its own netns...). Lock the
/// securebits so uid 0 never implies capabilities again, empty the bounding
/// and ambient sets, then clear effective/permitted/inheritable. Without
/// namespaces the process is unprivileged already, and the calls that need
/// CAP_SETPCAP are skipped when they fail with EPERM.
pub fn drop_capabilities() -> Result<(), JailError> {
    drop_capabilities_keeping_sets()?;
    capset(0, 0)
}

/// Securebits, bounding and ambient sets (everything but capset).
fn drop_capabilities_keeping_sets() -> Result<(), JailError> {
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS_LOCKED_DOWN, 0, 0, 0) };
    if rc != 0 && errno() != libc::EPERM {
        return Err(JailError::Capabilities {
            what: "PR_SET_SECUREBITS",
            errno: errno(),
        });
    }
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            match errno() {
                libc::EINVAL => break, // past the last capability this kernel knows
                libc::EPERM => break,  // not ours to drop: no CAP_SETPCAP (no userns)
                e => {
                    return Err(JailError::Capabilities {
                        what: "PR_CAPBSET_DROP",
                        errno: e,
                    })
                }
            }
        }
    }
    // SAFETY: prctl with integer arguments.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    if rc != 0 && errno() != libc::EINVAL {
        return Err(JailError::Capabilities {
            what: "PR_CAP_AMBIENT_CLEAR_ALL",
            errno: errno(),
        });
    }
    Ok(())
}

/// Why: the supervisor already marked every descriptor above the socket
/// close-on-exec; close them for real in case anything was opened since.
pub fn close_inherited_fds() -> Result<(), JailError> {
    // SAFETY: close_range with integer arguments; fds 0–3 stay open.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, IPC_FD as u32 + 1, u32::MAX, 0u32) };
    if rc != 0 {
        return Err(JailError::CloseFds(errno()));
    }
    Ok(())
}

/// The kernel's landlock ABI version (0 when landlock is unavailable).
pub fn landlock_abi() -> u8 {
    const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
    // SAFETY: the documented version query: null attr, size 0, version flag.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u8::try_from(v).unwrap_or(0)
}

/// Why: an independent second wall. Handling every filesystem and TCP
/// right with no rule denies them all; scoping stops signals and abstract
/// unix sockets towards anything outside the sandbox. An inferencer gets
/// exactly one rule: TCP connect to its model endpoint's port.
pub fn restrict_landlock(connect_port: Option<u16>) -> Result<(LayerStatus, u8), JailError> {
    use landlock::{
        Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, Scope, ABI,
    };
    let abi = landlock_abi();
    let newest = ABI::V7;
    let err = |e: landlock::RulesetError| JailError::Landlock(e.to_string());
    let mut created = Ruleset::default()
        .handle_access(AccessFs::from_all(newest))
        .map_err(err)?
        .handle_access(AccessNet::from_all(newest))
        .map_err(err)?
        .scope(Scope::from_all(newest))
        .map_err(err)?
        .create()
        .map_err(err)?;
    if let Some(port) = connect_port {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    let status = created.restrict_self().map_err(err)?;
    let layer = match status.ruleset {
        RulesetStatus::FullyEnforced => LayerStatus::Active,
        RulesetStatus::PartiallyEnforced => LayerStatus::Partial,
        RulesetStatus::NotEnforced => {
            return Err(JailError::Landlock(format!(
                "not enforced by this kernel (ABI {abi}); lower the `landlock` layer in [sandbox] to run without it"
            )))
        }
    };
    Ok((layer, abi))
}

/// Why (zygote): the zygote gets every namespace a worker gets except the
/// pid namespace, which each forked worker gets for itself (so it is pid 1
/// of a namespace holding nothing else, and the zygote, staying in the
/// supervisor's pid namespace, hands the supervisor a pid it can name).
pub fn unshare_zygote_namespaces(keep_net: bool) -> Result<(), JailError> {
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWCGROUP;
    if !keep_net {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare takes only flags.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(JailError::UnshareOthers(errno()));
    }
    Ok(())
}

/// Descriptors the zygote may hold: its control socket, the signalfd, and
/// one status pipe per live worker (bounded by `MAX_LIVE` in the zygote loop).
pub const ZYGOTE_NOFILE: u64 = 1100;

/// Why (zygote): the zygote itself never dumps core, writes files or locks
/// memory, and its address space is bounded like a worker's; CPU and NPROC
/// stay as they are because it lives long and forks (each child sets its
/// own with [`set_rlimits`]).
pub fn set_zygote_rlimits(as_bytes: u64) -> Result<(), JailError> {
    setrlimit("RLIMIT_AS", libc::RLIMIT_AS, as_bytes)?;
    setrlimit("RLIMIT_CORE", libc::RLIMIT_CORE, 0)?;
    setrlimit("RLIMIT_NOFILE", libc::RLIMIT_NOFILE, ZYGOTE_NOFILE)?;
    setrlimit("RLIMIT_FSIZE", libc::RLIMIT_FSIZE, 0)?;
    setrlimit("RLIMIT_MEMLOCK", libc::RLIMIT_MEMLOCK, 0)?;
    setrlimit("RLIMIT_MSGQUEUE", libc::RLIMIT_MSGQUEUE, 0)?;
    Ok(())
}

fn capset(effective: u32, permitted: u32) -> Result<(), JailError> {
    let mut hdr = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [
        CapData {
            effective,
            permitted,
            inheritable: 0,
        },
        CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        },
    ];
    // SAFETY: capset reads one header and two data structs (version 3 layout).
    if unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) } != 0 {
        return Err(JailError::Capabilities {
            what: "capset",
            errno: errno(),
        });
    }
    Ok(())
}

/// Why (zygote): like [`drop_capabilities`] (securebits locked, bounding and
/// ambient sets empty), except that `CAP_SYS_ADMIN` stays effective in the
/// zygote's user namespace: creating each worker's pid namespace needs it.
/// Every worker clears it ([`clear_capabilities`]) before running anything.
pub fn keep_only_sys_admin() -> Result<(), JailError> {
    drop_capabilities_but(1 << CAP_SYS_ADMIN)
}

/// Why (forked worker): the last capability inherited from the zygote goes;
/// the bounding set and securebits were already locked down by the zygote.
pub fn clear_capabilities() -> Result<(), JailError> {
    capset(0, 0)
}

fn drop_capabilities_but(keep: u32) -> Result<(), JailError> {
    drop_capabilities_keeping_sets()?;
    capset(keep, keep)
}

/// `CAP_SYS_ADMIN` (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;

/// Die when the parent (the reaper, or the zygote) dies.
pub fn die_with_parent() -> Result<(), JailError> {
    // SAFETY: prctl with integer arguments.
    if unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(JailError::Fork(errno()));
    }
    Ok(())
}

fn sigchld_set() -> libc::sigset_t {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the set; sigaddset adds a valid signal.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), libc::SIGCHLD);
        set.assume_init()
    }
}

/// Why (zygote): exited workers are noticed through a descriptor the loop
/// polls alongside the control socket, not through a signal handler.
pub fn sigchld_fd() -> Result<std::os::fd::OwnedFd, JailError> {
    use std::os::fd::FromRawFd;
    let set = sigchld_set();
    // SAFETY: `set` is an initialised sigset; no old mask wanted.
    if unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(JailError::Fork(errno()));
    }
    // SAFETY: -1 creates a new signalfd for the initialised `set`.
    let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(JailError::Fork(errno()));
    }
    // SAFETY: `fd` was just returned by signalfd and is owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A forked worker does not inherit the zygote's blocked SIGCHLD.
pub fn unblock_sigchld() -> Result<(), JailError> {
    let set = sigchld_set();
    // SAFETY: `set` is an initialised sigset; no old mask wanted.
    if unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(JailError::Fork(errno()));
    }
    Ok(())
}
