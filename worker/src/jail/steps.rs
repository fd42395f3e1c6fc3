//! The individual jail steps. Each is small, says why it exists, and maps
//! its failure to a [`JailError`] naming its [`Step`] and the errno. The
//! order they run in is [`super::Plan::run`]'s.
//!
//! Every step a plan for a forked child runs ([`super::Plan::for_launch`],
//! [`super::Plan::for_program`]) makes only raw, async-signal-safe
//! syscalls on memory prepared before the fork: no allocation, no locks.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

use super::plan::{ProgramSpec, Rlimit, ETC_FILES, SYSTEM_DIRS};
use super::{JailError, LayerStatus, Pid1Exit, Step};
use crate::ipc::IPC_FD;
use std::ffi::CStr;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `Err(step/what, errno)` when a raw call returned a negative value.
fn check(step: Step, what: &'static str, rc: libc::c_long) -> Result<(), JailError> {
    if rc < 0 {
        Err(JailError::at(step, what, errno()))
    } else {
        Ok(())
    }
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
        return Err(JailError::new(Step::UserNs, errno()));
    }
    Ok(())
}

fn write_proc_file(path: &'static CStr, content: &[u8]) -> Result<(), JailError> {
    let what = path.to_str().unwrap_or("/proc/self");
    // SAFETY: `path` is a NUL-terminated string; flags are plain ints.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(JailError::at(Step::IdMap, what, errno()));
    }
    // SAFETY: `content` is a valid buffer of content.len() bytes; fd is ours.
    let n = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    let e = errno();
    // SAFETY: closing the fd we just opened.
    unsafe { libc::close(fd) };
    if usize::try_from(n).ok() != Some(content.len()) {
        return Err(JailError::at(Step::IdMap, what, e));
    }
    Ok(())
}

/// Why: map only our own outer identity (the lines were prepared: to root
/// inside for a worker, to itself for a program), which an unprivileged
/// process may do; every other id stays unmapped (nobody). `setgroups`
/// must be denied first, so the process can never drop a group that was
/// protecting something.
pub fn write_id_maps(uid_map: &CStr, gid_map: &CStr) -> Result<(), JailError> {
    write_proc_file(c"/proc/self/setgroups", b"deny")?;
    write_proc_file(c"/proc/self/uid_map", uid_map.to_bytes())?;
    write_proc_file(c"/proc/self/gid_map", gid_map.to_bytes())?;
    Ok(())
}

/// Why: separate mount (for the empty root or the covered control
/// directory), pid (no host process is visible or signalable), net (no
/// interface but a down `lo`), ipc, uts and cgroup namespaces — whichever
/// `flags` the plan names.
pub fn unshare_others(flags: libc::c_int) -> Result<(), JailError> {
    // SAFETY: unshare takes only flags.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(JailError::new(Step::Namespaces, errno()));
    }
    Ok(())
}

/// Why: a new pid namespace applies to children only, so fork once: the
/// child is pid 1 of the namespace (its death kills everything in it) and
/// continues the jail; the parent stays outside, closes every descriptor
/// (so the peer of an IPC socket sees EOF when the child dies), is confined
/// to waiting and ends as the child ended ([`Pid1Exit`]). The child dies
/// with its parent (`PR_SET_PDEATHSIG`), and a pipe tells it whether the
/// parent already died before that was set. A raw `clone` (no fork
/// handlers run): async-signal-safe, also in the child of a threaded
/// process.
pub fn fork_pid1(
    exit: Pid1Exit,
    reaper: Option<&seccompiler::BpfProgram>,
) -> Result<(), JailError> {
    let mut pipe = [-1i32; 2];
    // SAFETY: `pipe` is a valid array of two ints.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(JailError::at(Step::Pid1Fork, "pipe2", errno()));
    }
    // SAFETY: a fork-style clone (no shared memory, no new stack): the
    // child continues on a copy of this single thread's state.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::c_ulong::from(libc::SIGCHLD.unsigned_abs()),
            0,
            0,
            0,
            0,
        )
    };
    if pid < 0 {
        return Err(JailError::at(Step::Pid1Fork, "clone", errno()));
    }
    if pid > 0 {
        match libc::pid_t::try_from(pid) {
            Ok(pid) => reap(pid, pipe[1], exit, reaper),
            // SAFETY: _exit never returns (a pid always fits a pid_t).
            Err(_) => unsafe { libc::_exit(4) },
        }
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
        return Err(JailError::at(Step::Pid1Fork, "parent died", libc::ESRCH));
    }
    Ok(())
}

/// The parent outside the pid namespace: close every descriptor but the
/// pipe's write end `alive` (its hang-up tells pid 1 we died), no core dump, no new privileges, the
/// reaper's filter (best effort: pid 1 is the real jail), wait, and end as
/// pid 1 ended. Never returns.
fn reap(
    pid: libc::pid_t,
    alive: RawFd,
    exit: Pid1Exit,
    reaper: Option<&seccompiler::BpfProgram>,
) -> ! {
    let alive = alive.unsigned_abs();
    // SAFETY: closing every descriptor of this process but `alive`; it
    // uses none of them from here on.
    unsafe {
        if alive > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, alive - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, alive + 1, u32::MAX, 0u32);
    }
    let _ = setrlimit("RLIMIT_CORE", libc::RLIMIT_CORE, 0);
    let _ = set_no_new_privs();
    if let Some(prog) = reaper {
        let _ = seccompiler::apply_filter(prog);
    }
    let Some(status) = wait_status(pid) else {
        // SAFETY: _exit never returns and is always safe to call.
        unsafe { libc::_exit(4) };
    };
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        if exit == Pid1Exit::SameSignal {
            // SAFETY: default disposition for `sig`, then the same signal
            // at ourselves: our parent sees pid 1's own death.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::kill(libc::getpid(), sig);
            }
        }
        // SAFETY: _exit never returns (also for a signal whose default is
        // to be ignored).
        unsafe { libc::_exit(128 + sig) };
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        4
    };
    // SAFETY: _exit never returns; skipping atexit handlers is intended.
    unsafe { libc::_exit(code) }
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
        return Err(JailError::at(Step::Mount, what, errno()));
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
        return Err(JailError::new(Step::PivotRoot, errno()));
    }
    // SAFETY: pivot_root via syscall with two NUL-terminated "." paths.
    if unsafe { libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) } != 0 {
        return Err(JailError::new(Step::PivotRoot, errno()));
    }
    // SAFETY: "/" is NUL-terminated; MNT_DETACH lazily drops the old root.
    if unsafe { libc::umount2(c"/".as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(JailError::new(Step::UmountOldRoot, errno()));
    }
    // SAFETY: "/" is NUL-terminated.
    if unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
        return Err(JailError::new(Step::PivotRoot, errno()));
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

/// Step 2 of a program's jail: cover the control directory at `path`,
/// which must still be the directory `id` (device, inode), with an empty
/// read-only tmpfs in this process's own mount namespace (made private
/// first: nothing propagates back). The mount goes onto
/// `/proc/self/fd/N` of the descriptor that was checked, never onto a path
/// that could have been swapped in between.
pub fn hide_control(path: &CStr, id: (u64, u64)) -> Result<(), JailError> {
    mount(
        "/ private",
        Some(c"none"),
        c"/",
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    on_pinned(path, id, "control directory", |target, _| {
        mount(
            "control directory tmpfs",
            Some(c"lackpy-control"),
            target,
            Some(c"tmpfs"),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            Some(c"size=4k,nr_inodes=1,mode=0555"),
        )
        .map_err(|e| JailError::at(Step::HideControl, "mount tmpfs", e.errno()))
    })
}

/// Open `path` as `O_PATH` without following a final symlink and check it
/// is still the entry `id` (device, inode); the descriptor on success.
fn open_pinned(path: &CStr, id: (u64, u64), what: &'static str) -> Result<RawFd, JailError> {
    // SAFETY: `path` is NUL-terminated; O_PATH opens nothing for I/O.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(JailError::at(Step::HideControl, what, errno()));
    }
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one stat struct into `st`.
    let rc = unsafe { libc::fstat(fd, st.as_mut_ptr()) };
    let same = rc == 0 && {
        // SAFETY: fstat succeeded (rc == 0), so `st` is initialised.
        let st = unsafe { st.assume_init() };
        (st.st_dev, st.st_ino) == id
    };
    if !same {
        // SAFETY: closing the descriptor opened above, once.
        unsafe { libc::close(fd) };
        return Err(JailError::at(Step::HideControl, what, libc::ESTALE));
    }
    Ok(fd)
}

/// Run `act` on the entry `path`, pinned as `id` ([`open_pinned`]), given
/// its `/proc/self/fd/N` path and descriptor (never the path itself, which
/// could be swapped after the check); the descriptor is closed after.
fn on_pinned(
    path: &CStr,
    id: (u64, u64),
    what: &'static str,
    act: impl FnOnce(&CStr, RawFd) -> Result<(), JailError>,
) -> Result<(), JailError> {
    let fd = open_pinned(path, id, what)?;
    let mut buf = [0u8; 32];
    let rc = match fd_path(fd, &mut buf) {
        Some(target) => act(target, fd),
        None => Err(JailError::at(Step::HideControl, "fd path", libc::EBADF)),
    };
    // SAFETY: closing the descriptor opened by open_pinned, once.
    unsafe { libc::close(fd) };
    rc
}

/// The mount flags a read-only remount of the mount holding `fd` must keep:
/// in a user namespace the kernel locks `nosuid`, `nodev`, `noexec` and the
/// atime mode of mounts inherited from the parent namespace, and refuses a
/// remount that would change them (runc copies them from `statfs` too).
fn kept_mount_flags(fd: RawFd) -> Result<libc::c_ulong, JailError> {
    // fstatfs64, not fstatvfs: glibc's statvfs may read /proc/mounts
    // (stdio, allocation), which has no place between fork and exec.
    let mut sf = std::mem::MaybeUninit::<libc::statfs64>::uninit();
    // SAFETY: fstatfs64 writes one statfs64 struct into `sf`; O_PATH
    // descriptors are allowed.
    if unsafe { libc::fstatfs64(fd, sf.as_mut_ptr()) } != 0 {
        return Err(JailError::at(Step::HideControl, ".git statfs", errno()));
    }
    // SAFETY: fstatfs64 succeeded, so `sf` is initialised.
    let f = libc::c_ulong::try_from(unsafe { sf.assume_init() }.f_flags).unwrap_or(0);
    let has = |st: libc::c_ulong| f & st != 0;
    let mut flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    if has(libc::ST_NOATIME) {
        flags |= libc::MS_NOATIME;
    } else if !has(libc::ST_RELATIME) {
        flags |= libc::MS_STRICTATIME;
    }
    if has(libc::ST_NODIRATIME) {
        flags |= libc::MS_NODIRATIME;
    }
    Ok(flags)
}

/// Step 2b of a program's jail that may write the workspace: bind the
/// workspace's `.git` (directory or `gitdir:` file) onto itself and make
/// that bind read-only, in this process's own (private) mount namespace.
/// The program cannot write hooks or `core.fsmonitor` there (code the
/// user's git would run outside any jail), nor rename, remove or replace
/// it (a mount point). As with the control directory, it acts on the
/// descriptor of the checked entry (`/proc/self/fd/N`), and checks the
/// bind's root again before the read-only remount.
pub fn bind_read_only(path: &CStr, id: (u64, u64)) -> Result<(), JailError> {
    on_pinned(path, id, ".git open", |target, _| {
        let flags = libc::MS_BIND | libc::MS_REC;
        mount(".git bind", Some(target), target, None, flags, None)
            .map_err(|e| JailError::at(Step::HideControl, ".git bind", e.errno()))
    })?;
    // The path now leads to the bind's root (a lookup crosses into mounts).
    on_pinned(path, id, ".git reopen", |target, fd| {
        let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | kept_mount_flags(fd)?;
        mount(".git read-only", None, target, None, flags, None)
            .map_err(|e| JailError::at(Step::HideControl, ".git read-only", e.errno()))
    })
}

/// `/proc/self/fd/N`, NUL-terminated, written into `buf` (no allocation).
fn fd_path(fd: RawFd, buf: &mut [u8; 32]) -> Option<&CStr> {
    let prefix = b"/proc/self/fd/";
    buf.fill(0);
    buf.get_mut(..prefix.len())?.copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let mut n = fd.unsigned_abs();
    let mut len = 0;
    loop {
        *digits.get_mut(len)? = b"0123456789"[usize::try_from(n % 10).ok()?];
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        *buf.get_mut(prefix.len() + i)? = digits[len - 1 - i];
    }
    CStr::from_bytes_until_nul(buf).ok()
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
        return Err(JailError::at(Step::Rlimits, name, errno()));
    }
    Ok(())
}

/// Why: the kernel, not only the interpreter or a tool's timeout, bounds
/// memory, CPU, files and processes; no core dump can leak memory to disk.
pub fn set_rlimits(limits: &[Rlimit]) -> Result<(), JailError> {
    for &(name, res, value) in limits {
        setrlimit(name, res, value)?;
    }
    Ok(())
}

/// A worker's rlimits: address space, CPU, no core dump, `nofile`
/// descriptors, no new process (NPROC=0 — the pid-1 fork is already
/// done), no file can grow (FSIZE=0), no locked memory, no message queue.
pub fn worker_rlimits(as_bytes: u64, cpu_seconds: u64, nofile: u64) -> [Rlimit; 8] {
    [
        ("RLIMIT_AS", libc::RLIMIT_AS, as_bytes),
        ("RLIMIT_CPU", libc::RLIMIT_CPU, cpu_seconds),
        ("RLIMIT_CORE", libc::RLIMIT_CORE, 0),
        ("RLIMIT_NOFILE", libc::RLIMIT_NOFILE, nofile),
        ("RLIMIT_NPROC", libc::RLIMIT_NPROC, 0),
        ("RLIMIT_FSIZE", libc::RLIMIT_FSIZE, 0),
        ("RLIMIT_MEMLOCK", libc::RLIMIT_MEMLOCK, 0),
        ("RLIMIT_MSGQUEUE", libc::RLIMIT_MSGQUEUE, 0),
    ]
}

/// Why: no exec (if one ever became possible) can gain privileges, and it
/// is what lets an unprivileged process install seccomp and landlock.
pub fn set_no_new_privs() -> Result<(), JailError> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(JailError::new(Step::NoNewPrivs, errno()));
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
        return Err(JailError::at(
            Step::Capabilities,
            "PR_SET_SECUREBITS",
            errno(),
        ));
    }
    for cap in 0..64 {
        // SAFETY: prctl with integer arguments.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 {
            match errno() {
                libc::EINVAL => break, // past the last capability this kernel knows
                libc::EPERM => break,  // not ours to drop: no CAP_SETPCAP (no userns)
                e => return Err(JailError::at(Step::Capabilities, "PR_CAPBSET_DROP", e)),
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
        return Err(JailError::at(
            Step::Capabilities,
            "PR_CAP_AMBIENT_CLEAR_ALL",
            errno(),
        ));
    }
    Ok(())
}

/// Why: nothing inherited may cross into the jail but the kept descriptors
/// (below `first`). Before an exec they are marked close-on-exec (the exec
/// itself, or the standard library's error pipe, still needs them); a
/// worker jailing itself closes them for real.
pub fn close_inherited_fds(first: u32, cloexec: bool) -> Result<(), JailError> {
    let flags = if cloexec {
        libc::CLOSE_RANGE_CLOEXEC
    } else {
        0
    };
    // SAFETY: close_range with integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, flags) };
    check(Step::CloseFds, "close_range", rc)
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

/// Why: an independent second wall. Every filesystem right is handled
/// (and every TCP right when `handle_net`), and signals and abstract unix
/// sockets are scoped to the jail; allowed is only what the rules name. A
/// worker has no rule at all (an inferencer one: TCP connect to
/// `connect_port`, its model endpoint's); a program (`program`) may read
/// and execute beneath [`SYSTEM_DIRS`] and its `read_exec` paths, read
/// [`ETC_FILES`] and its `read_only` paths, read/write `/dev/null`, read
/// `/dev/{u,}random` and `/dev/zero`, and do anything beneath its
/// `read_write` paths. Built before the jail runs (it allocates): the
/// ruleset's descriptor and what enforcing it will amount to (partial on
/// a kernel below ABI 6, which cannot handle every right).
pub fn landlock_ruleset(
    handle_net: bool,
    connect_port: Option<u16>,
    program: Option<&ProgramSpec>,
) -> Result<(OwnedFd, LayerStatus), JailError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, NetPort, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope, ABI,
    };
    let abi = landlock_abi();
    let newest = ABI::V7;
    let err = |e: landlock::RulesetError| JailError::detail(Step::Landlock, e.to_string());
    let mut rs = Ruleset::default()
        .handle_access(AccessFs::from_all(newest))
        .map_err(err)?;
    if handle_net {
        rs = rs.handle_access(AccessNet::from_all(newest)).map_err(err)?;
    }
    let mut created = rs
        .scope(Scope::from_all(newest))
        .map_err(err)?
        .create()
        .map_err(err)?;
    if let Some(p) = program {
        let read_only = AccessFs::ReadFile | AccessFs::ReadDir;
        created = created
            .add_rules(path_beneath_rules(SYSTEM_DIRS, AccessFs::from_read(newest)))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                &p.read_exec,
                AccessFs::from_read(newest),
            ))
            .map_err(err)?
            .add_rules(path_beneath_rules(ETC_FILES, read_only))
            .map_err(err)?
            .add_rules(path_beneath_rules(&p.read_only, read_only))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                &p.read_write,
                AccessFs::from_all(newest),
            ))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                ["/dev/null"],
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
            .map_err(err)?
            .add_rules(path_beneath_rules(
                ["/dev/urandom", "/dev/random", "/dev/zero"],
                AccessFs::ReadFile,
            ))
            .map_err(err)?;
    }
    if let Some(port) = connect_port {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(err)?;
    }
    let fd: Option<OwnedFd> = created.into();
    let fd = fd.ok_or_else(|| {
        JailError::detail(
            Step::Landlock,
            format!(
                "not enforced by this kernel (ABI {abi}); lower the `landlock` layer in [sandbox] to run without it"
            ),
        )
    })?;
    // ABI 6 handles every right asked for (filesystem, TCP, scopes).
    let status = if abi >= 6 {
        LayerStatus::Active
    } else {
        LayerStatus::Partial
    };
    Ok((fd, status))
}

/// Enforce a ruleset built by [`landlock_ruleset`] on this thread.
pub fn restrict_landlock(ruleset: &OwnedFd) -> Result<(), JailError> {
    // SAFETY: the ruleset fd is open (borrowed); flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    check(Step::Landlock, "landlock_restrict_self", rc)
}

/// Why (zygote): the zygote gets every namespace a worker gets except the
/// pid namespace, which each forked worker gets for itself (so it is pid 1
/// of a namespace holding nothing else, and the zygote, staying in the
/// supervisor's pid namespace, hands the supervisor a pid it can name).
pub fn zygote_namespaces(keep_net: bool) -> libc::c_int {
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWCGROUP;
    if !keep_net {
        flags |= libc::CLONE_NEWNET;
    }
    flags
}

/// Descriptors the zygote may hold: its control socket, the signalfd, and
/// one status pipe per live worker (bounded by `MAX_LIVE` in the zygote loop).
pub const ZYGOTE_NOFILE: u64 = 1100;

/// Why (zygote): the zygote itself never dumps core, writes files or locks
/// memory, and its address space is bounded like a worker's; CPU and NPROC
/// stay as they are because it lives long and forks (each child sets its
/// own with [`worker_rlimits`]).
pub fn zygote_rlimits(as_bytes: u64) -> Vec<Rlimit> {
    worker_rlimits(as_bytes, 0, ZYGOTE_NOFILE)
        .into_iter()
        .filter(|(_, res, _)| *res != libc::RLIMIT_CPU && *res != libc::RLIMIT_NPROC)
        .collect()
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
    let rc = unsafe { libc::syscall(libc::SYS_capset, &raw mut hdr, data.as_ptr()) };
    check(Step::Capabilities, "capset", rc)
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

/// Die when the parent (the reaper, the zygote, the spawning thread) dies.
pub fn die_with_parent() -> Result<(), JailError> {
    let sig = libc::c_ulong::from(libc::SIGKILL.unsigned_abs());
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig, 0, 0, 0) };
    check(
        Step::DieWithParent,
        "PR_SET_PDEATHSIG",
        libc::c_long::from(rc),
    )
}

/// Why (worker launch): the worker finds its IPC socket on a fixed
/// descriptor, [`IPC_FD`], open across exec (`dup2` clears close-on-exec;
/// when it already is that descriptor, clear it by hand).
pub fn socket_to_ipc_fd(sock: RawFd) -> Result<(), JailError> {
    let rc = if sock == IPC_FD {
        // SAFETY: fcntl on our own descriptor.
        unsafe { libc::fcntl(sock, libc::F_SETFD, 0) }
    } else {
        // SAFETY: dup2 on descriptors we own.
        unsafe { libc::dup2(sock, IPC_FD) }
    };
    check(Step::IpcFd, "dup2", libc::c_long::from(rc))
}

/// Why (worker launch of a root supervisor): even the single outer
/// identity mapped into the worker's user namespace must own nothing.
/// Raw syscalls, not libc's setuid: in a forked child only this thread
/// exists. The uid change makes the process non-dumpable, which hides
/// `/proc/self/fd` (the exec path) from the new uid; nothing secret is
/// held here, so it is made dumpable again.
pub fn drop_to_nobody() -> Result<(), JailError> {
    use super::plan::NOBODY;
    // SAFETY: setgroups(0, NULL) clears supplementary groups.
    let rc = unsafe { libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) };
    check(Step::DropUid, "setgroups", rc)?;
    // SAFETY: integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_setresgid, NOBODY, NOBODY, NOBODY) };
    check(Step::DropUid, "setresgid", rc)?;
    // SAFETY: integer arguments.
    let rc = unsafe { libc::syscall(libc::SYS_setresuid, NOBODY, NOBODY, NOBODY) };
    check(Step::DropUid, "setresuid", rc)?;
    // SAFETY: prctl with integer arguments.
    let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0) };
    check(Step::DropUid, "PR_SET_DUMPABLE", libc::c_long::from(rc))
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
        return Err(JailError::at(Step::Sigchld, "sigprocmask", errno()));
    }
    // SAFETY: -1 creates a new signalfd for the initialised `set`.
    let fd = unsafe { libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(JailError::at(Step::Sigchld, "signalfd", errno()));
    }
    // SAFETY: `fd` was just returned by signalfd and is owned by nobody else.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// A forked worker does not inherit the zygote's blocked SIGCHLD.
pub fn unblock_sigchld() -> Result<(), JailError> {
    let set = sigchld_set();
    // SAFETY: `set` is an initialised sigset; no old mask wanted.
    if unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) } != 0 {
        return Err(JailError::at(Step::Sigchld, "sigprocmask", errno()));
    }
    Ok(())
}
