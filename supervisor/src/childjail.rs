//! The jail for processes the supervisor starts on the operator's behalf:
//! `command` tools (one process per call) and `[mcp_servers]` (one process
//! per server, kept for many calls).
//!
//! Everything that allocates is prepared in the parent ([`Jail::prepare`]);
//! [`Jail::enter`] runs between `fork` and `exec` (a `pre_exec` hook) and
//! makes only raw, async-signal-safe syscalls on that prepared data:
//! 1. new user (uid/gid mapped to the caller's), IPC, UTS, cgroup and pid
//!    namespaces, and a network namespace with no interfaces unless the
//!    spec keeps the host's network;
//! 2. rlimits (no core dumps; the spec's CPU, address space, data, file
//!    size, open files and processes);
//! 3. `PR_SET_NO_NEW_PRIVS`;
//! 4. landlock: every filesystem right handled (and every TCP right unless
//!    the network is kept), signals and abstract unix sockets scoped to the
//!    jail; allowed are read+execute beneath the system directories
//!    ([`SYSTEM_DIRS`]) and the spec's `read_exec` paths, read-only on the
//!    few `/etc` entries in [`ETC_FILES`] and the spec's `read_only` paths,
//!    read/write on `/dev/null`, full access beneath the spec's
//!    `read_write` paths, and nothing else (no /tmp, no home, no /proc);
//! 5. every inherited descriptor above 2 marked close-on-exec;
//! 6. the program runs as pid 1 of the new pid namespace, so when it ends
//!    or is killed, everything it started dies with it, also a process
//!    that left its process group with `setsid()`. The forked process stays
//!    outside as its parent: it closes every descriptor, waits, and ends
//!    the way the program ended (same status or signal). The program has
//!    `PR_SET_PDEATHSIG = SIGKILL`: killing that parent kills it.
//!
//! A step that fails fails the spawn; there is no unjailed fallback.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Directories a jailed program may read and execute from.
pub const SYSTEM_DIRS: &[&str] = &["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt"];

/// The only parts of `/etc` a jailed program may read: what the dynamic
/// loader, libc's user/time lookups and `/etc/alternatives` symlinks need.
/// Why not all of `/etc`: when lackpy runs as root, uid 0 inside the
/// program's user namespace still owns root's files (`/etc/shadow`, keys).
pub const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/alternatives",
    "/etc/magic",
    "/etc/mime.types",
    "/etc/locale.alias",
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/resolv.conf",
    "/etc/hosts",
];

/// What a jailed program may touch and how much it may use.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    /// Keep the host's network (no network namespace, TCP not restricted).
    pub network: bool,
    /// Paths readable and executable (directories: everything beneath).
    pub read_exec: Vec<PathBuf>,
    /// Paths readable only (files and directory listings, no execute).
    pub read_only: Vec<PathBuf>,
    /// Paths with every filesystem right.
    pub read_write: Vec<PathBuf>,
    /// `RLIMIT_CPU` in seconds.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_AS` in bytes.
    pub as_bytes: Option<u64>,
    /// `RLIMIT_DATA` in bytes.
    pub data_bytes: Option<u64>,
    /// `RLIMIT_FSIZE` in bytes (0: no regular file may be written).
    pub fsize: u64,
    /// `RLIMIT_NOFILE`.
    pub nofile: u64,
    /// Processes the program may run (itself and everything it forks).
    pub max_procs: u64,
    /// The workspace whose control directory (`.lackpy/`: config, kits,
    /// tool modules, traces) the program must neither see nor change. It
    /// is created when absent and the program may write the workspace (so
    /// it cannot create one itself),
    /// opened beneath the workspace without following a symlink, and
    /// covered in the program's own mount namespace by an empty read-only
    /// tmpfs: the program sees an empty directory it can neither write,
    /// rename nor remove (a mount point).
    pub hide_control_of: Option<PathBuf>,
}

/// Why a jail could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JailError {
    /// Landlock refused the ruleset.
    #[error("landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    /// The kernel has no landlock.
    #[error("landlock is not available on this kernel")]
    NoLandlock,
    /// The workspace's control directory could not be opened to hide it.
    #[error("control directory: {0}")]
    Control(#[from] lackpy_beneath::Error),
}

/// Number of rlimits [`Jail::enter`] sets.
const RLIMITS: usize = 7;

/// A [`Spec`] made ready for [`Jail::enter`] (all allocation done).
#[derive(Debug)]
pub struct Jail {
    ruleset: OwnedFd,
    /// The control directory to cover: its path and the (device, inode)
    /// it had when opened beneath the workspace without following a
    /// symlink. The child opens the path again in its own mount namespace
    /// (`O_NOFOLLOW`), checks it is that same directory, and mounts onto
    /// `/proc/self/fd/N` of that descriptor: never onto a path that could
    /// have been swapped between the check and the mount.
    hide: Option<(CString, (u64, u64))>,
    uid_map: CString,
    gid_map: CString,
    flags: libc::c_int,
    limits: [(libc::__rlimit_resource_t, u64); RLIMITS],
}

/// `RLIM_INFINITY` for rlimits a spec leaves unset.
const UNLIMITED: u64 = libc::RLIM_INFINITY;

impl Jail {
    /// Build the landlock ruleset and everything else `enter` needs.
    ///
    /// # Errors
    /// [`JailError`] when landlock is missing or refuses the rules.
    pub fn prepare(spec: &Spec) -> Result<Self, JailError> {
        let mut flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS
            | libc::CLONE_NEWCGROUP
            | libc::CLONE_NEWPID;
        if !spec.network {
            flags |= libc::CLONE_NEWNET;
        }
        let hide = match &spec.hide_control_of {
            None => None,
            Some(ws) => {
                flags |= libc::CLONE_NEWNS;
                let path = ws.join(lackpy_beneath::CONTROL_DIR);
                let missing = || lackpy_beneath::Error::Io {
                    path: path.clone(),
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                };
                // Created first only for a program that could create it
                // (write access over the workspace); otherwise an absent
                // control directory has nothing to hide and stays absent.
                let writable = spec
                    .read_write
                    .iter()
                    .any(|p| ws.starts_with(p) || p.starts_with(ws));
                match lackpy_beneath::open_control(ws, writable)? {
                    None if !writable => {
                        flags &= !libc::CLONE_NEWNS;
                        None
                    }
                    None => return Err(missing().into()),
                    Some(dir) => {
                        let st = dir.own_stamp().ok_or_else(missing)?;
                        use std::os::unix::ffi::OsStrExt;
                        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| missing())?;
                        Some((c, (st.dev, st.ino)))
                    }
                }
            }
        };
        let uid = nix::unistd::getuid();
        let gid = nix::unistd::getgid();
        Ok(Self {
            ruleset: ruleset(spec)?,
            hide,
            // Digits and spaces only: never an interior NUL.
            uid_map: CString::new(format!("{uid} {uid} 1")).unwrap_or_default(),
            gid_map: CString::new(format!("{gid} {gid} 1")).unwrap_or_default(),
            flags,
            limits: [
                (libc::RLIMIT_CORE, 0),
                (libc::RLIMIT_CPU, spec.cpu_seconds.unwrap_or(UNLIMITED)),
                (libc::RLIMIT_AS, spec.as_bytes.unwrap_or(UNLIMITED)),
                (libc::RLIMIT_DATA, spec.data_bytes.unwrap_or(UNLIMITED)),
                (libc::RLIMIT_NOFILE, spec.nofile),
                (libc::RLIMIT_FSIZE, spec.fsize),
                // Counted per user namespace (Linux >= 5.14), so this bounds
                // only the program's own processes: no fork bomb. (The kernel
                // exempts uid 0: when lackpy runs as root this limit is void;
                // the pid namespace of step 6 still ends them all with the
                // program.) One more than `max_procs`: the program's parent
                // outside its pid namespace counts too.
                (libc::RLIMIT_NPROC, spec.max_procs.saturating_add(1)),
            ],
        })
    }

    /// Make `cmd` enter this jail between fork and exec (its `pre_exec`
    /// hook). The jail moves into the hook, so it lives as long as `cmd`.
    pub fn attach(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: `Jail::enter` only makes raw syscalls on memory prepared
        // before the fork (`self` is moved into the closure), so it is
        // async-signal-safe.
        unsafe {
            cmd.pre_exec(move || self.enter());
        }
    }

    /// The child side, between fork and exec. Only raw syscalls on data
    /// prepared beforehand: no allocation, no locks (the parent is
    /// threaded). Returns in the jailed process that is to exec the
    /// program; its parent outside the pid namespace never returns.
    ///
    /// # Errors
    /// The first step that failed.
    pub fn enter(&self) -> std::io::Result<()> {
        // Step 1: namespaces. Why: no network (unless kept), no SysV IPC
        // shared with the host, a pid namespace whose pid 1 is the program
        // (step 6), and a user namespace so the others need no privilege.
        // SAFETY: unshare with prepared constant flags in the
        // single-threaded child.
        check(libc::c_long::from(unsafe { libc::unshare(self.flags) }))?;
        // Map our uid/gid so files the program creates are ours.
        write_proc(c"/proc/self/uid_map", self.uid_map.as_bytes())?;
        write_proc(c"/proc/self/setgroups", b"deny")?;
        write_proc(c"/proc/self/gid_map", self.gid_map.as_bytes())?;
        // Step 1b: the control directory covered by an empty read-only
        // tmpfs in this process's own mount namespace (nothing propagates
        // back: the tree is made private first).
        if let Some((path, id)) = &self.hide {
            hide_control(path, *id)?;
        }
        // Step 2: rlimits. Why: bound CPU, memory and files even if a
        // timeout kill were late; no core dumps of whatever it read.
        for &(res, v) in &self.limits {
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            // SAFETY: `lim` is a valid rlimit on the stack.
            check(libc::c_long::from(unsafe { libc::setrlimit(res, &lim) }))?;
        }
        // Step 3: no privilege gain through exec (required by landlock too).
        // SAFETY: prctl with constant integer arguments.
        check(libc::c_long::from(unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        }))?;
        // Step 4: landlock, with the ruleset built before the fork.
        // SAFETY: the ruleset fd is owned by `self` and open; flags 0.
        check(unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            )
        })?;
        // Step 5: nothing but stdio crosses exec.
        // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets flags.
        check(unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        })?;
        // Step 6: the program runs as pid 1 of the new pid namespace; this
        // process stays outside as its parent.
        // SAFETY: a raw fork-style clone in the single-threaded child; no
        // memory is shared with the new process.
        let pid =
            unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0) };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            // The program-to-be. It dies if its parent outside is killed.
            // SAFETY: prctl with constant integer arguments.
            check(libc::c_long::from(unsafe {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0)
            }))?;
            return Ok(());
        }
        relay_exit(pid as libc::pid_t)
    }
}

/// Step 1b: cover the control directory at `path`, which must still be the
/// directory `id` (device, inode), with an empty read-only tmpfs in this
/// process's own mount namespace (made private first: nothing propagates
/// back). Raw syscalls only, on prepared data and the stack.
fn hide_control(path: &CString, id: (u64, u64)) -> std::io::Result<()> {
    // SAFETY: mount with NUL-terminated constant strings; no memory is written.
    check(libc::c_long::from(unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    }))?;
    // SAFETY: `path` is NUL-terminated; O_PATH opens nothing for I/O.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
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
        return Err(std::io::Error::from_raw_os_error(libc::ESTALE));
    }
    // "/proc/self/fd/" and the descriptor's digits, NUL-terminated, on the stack.
    let mut buf = [0u8; 32];
    let prefix = b"/proc/self/fd/";
    buf[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let mut n = fd as u32;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        buf[prefix.len() + i] = digits[len - 1 - i];
    }
    // SAFETY: `buf` is NUL-terminated (zero-filled beyond the digits); the
    // other strings are constants; no memory is written.
    let rc = unsafe {
        libc::mount(
            c"lackpy-control".as_ptr(),
            buf.as_ptr().cast(),
            c"tmpfs".as_ptr(),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            c"size=4k,nr_inodes=1,mode=0555".as_ptr().cast(),
        )
    };
    let e = std::io::Error::last_os_error();
    // SAFETY: closing the descriptor opened above, once.
    unsafe { libc::close(fd) };
    if rc != 0 {
        return Err(e);
    }
    Ok(())
}

fn check(r: libc::c_long) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn ruleset(spec: &Spec) -> Result<OwnedFd, JailError> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreatedAttr,
        Scope, ABI,
    };
    let abi = ABI::V7;
    let mut rs = Ruleset::default().handle_access(AccessFs::from_all(abi))?;
    if !spec.network {
        rs = rs.handle_access(AccessNet::from_all(abi))?;
    }
    let created = rs
        .scope(Scope::from_all(abi))?
        .create()?
        .add_rules(path_beneath_rules(SYSTEM_DIRS, AccessFs::from_read(abi)))?
        .add_rules(path_beneath_rules(
            ETC_FILES,
            AccessFs::ReadFile | AccessFs::ReadDir,
        ))?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            AccessFs::ReadFile | AccessFs::WriteFile,
        ))?
        .add_rules(path_beneath_rules(
            ["/dev/urandom", "/dev/random", "/dev/zero"],
            AccessFs::ReadFile,
        ))?
        .add_rules(path_beneath_rules(
            &spec.read_exec,
            AccessFs::from_read(abi),
        ))?
        .add_rules(path_beneath_rules(
            &spec.read_only,
            AccessFs::ReadFile | AccessFs::ReadDir,
        ))?
        .add_rules(path_beneath_rules(
            &spec.read_write,
            AccessFs::from_all(abi),
        ))?;
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or(JailError::NoLandlock)
}

/// The parent outside the program's pid namespace (step 6): close every
/// descriptor, wait for the program, end as it ended. Never returns.
fn relay_exit(pid: libc::pid_t) -> ! {
    // SAFETY: closing every descriptor of this process, which execs
    // nothing and uses none of them from here on.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    let Some(status) = lackpy_worker::jail::wait_status(pid) else {
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(127) };
    };
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        // SAFETY: default disposition for `sig`, then the same signal at
        // ourselves: the supervisor sees the program's own death.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
        }
        // SAFETY: _exit never returns (for a signal whose default is to
        // be ignored).
        unsafe { libc::_exit(128 + sig) };
    }
    // SAFETY: _exit never returns.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}

fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the fd is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `data` is a valid buffer of `data.len()` bytes.
    let n = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let e = std::io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is closed once.
    unsafe { libc::close(fd) };
    if n < 0 {
        return Err(e);
    }
    Ok(())
}

/// The directory a program file belongs to, for granting it read+execute:
/// the installation prefix when the file sits in a `bin`, `sbin` or `shims`
/// directory (`~/.pyenv/shims/python3` → `~/.pyenv`, `venv/bin/python` →
/// `venv`), else its own directory. Never `/` or the home directory itself
/// (then only the file).
pub fn install_root(program: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let too_wide = |p: &Path| p.parent().is_none() || Some(p) == home.as_deref();
    let Some(dir) = program.parent() else {
        return program.to_path_buf();
    };
    let in_bin = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| matches!(n, "bin" | "sbin" | "shims"));
    if in_bin {
        if let Some(prefix) = dir.parent().filter(|p| !too_wide(p)) {
            return prefix.to_path_buf();
        }
    }
    if too_wide(dir) {
        program.to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// How many `#!` interpreters deep [`program_roots`] follows a script (the
/// kernel's own limit on nested interpreters).
const MAX_SHEBANG_DEPTH: usize = 4;

/// The file `name` as `execvp` would find it on `PATH` (or `name` itself
/// when it contains a `/`).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The interpreter a `#!` script names: the first word of its first line,
/// or for `#!/usr/bin/env [-S] [-options] NAME` the program `NAME` found on
/// `PATH`. `None` for anything that is not a readable `#!` script.
fn shebang_interpreter(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head.get(..n)?.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interp = words.next()?;
    if Path::new(interp).file_name().is_some_and(|f| f == "env") {
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return find_on_path(name);
    }
    Some(PathBuf::from(interp))
}

/// What a program needs to read and execute to start: the installation
/// ([`install_root`]) of the program as found and of its canonical target,
/// then the same for each `#!` interpreter in turn (a script in a virtual
/// environment needs the Python the environment links to, wherever that
/// is installed).
pub fn program_roots(program: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut next = Some(program.to_path_buf());
    for _ in 0..=MAX_SHEBANG_DEPTH {
        let Some(p) = next.take() else { break };
        out.push(install_root(&p));
        let real = std::fs::canonicalize(&p).ok();
        if let Some(r) = &real {
            out.push(install_root(r));
        }
        next = shebang_interpreter(real.as_deref().unwrap_or(&p));
    }
    out.sort();
    out.dedup();
    out
}

/// Files whose presence marks a directory as a project's root.
const PROJECT_MARKERS: &[&str] = &[
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Cargo.toml",
    "go.mod",
    "node_modules",
    ".git",
];

/// How many directories up [`project_root`] looks.
const PROJECT_DEPTH: usize = 6;

/// The project a file belongs to: the nearest directory above it (at most
/// [`PROJECT_DEPTH`] up) holding a project marker (`package.json`,
/// `pyproject.toml`, `.git`, ...), so that a server script started as
/// `node build/index.js` can read its `node_modules`. Never `/` or the home
/// directory; `None` when there is no such directory.
pub fn project_root(file: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dir = file.parent();
    for _ in 0..PROJECT_DEPTH {
        let d = dir?;
        if d.parent().is_none() || Some(d) == home.as_deref() {
            return None;
        }
        if PROJECT_MARKERS.iter().any(|m| d.join(m).exists()) {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn shebang_chains_and_projects() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        // A "venv" whose python links to an interpreter installed elsewhere.
        let inst = root.join("inst/bin");
        std::fs::create_dir_all(&inst).unwrap();
        std::fs::write(inst.join("python9"), "#!/bin/sh\n").unwrap();
        let venv = root.join("proj/.venv/bin");
        std::fs::create_dir_all(&venv).unwrap();
        std::os::unix::fs::symlink(inst.join("python9"), venv.join("python")).unwrap();
        let script = venv.join("my-server");
        std::fs::write(
            &script,
            format!("#!{}\nimport x\n", venv.join("python").display()),
        )
        .unwrap();
        let roots = program_roots(&script);
        assert!(roots.contains(&root.join("proj/.venv")), "{roots:?}");
        assert!(roots.contains(&root.join("inst")), "{roots:?}");
        assert!(roots.contains(&PathBuf::from("/bin")), "{roots:?}");
        // `#!/usr/bin/env NAME` is looked up on PATH.
        let envs = root.join("envs");
        std::fs::write(&envs, "#!/usr/bin/env -S sh -e\n").unwrap();
        let roots = program_roots(&envs);
        assert!(
            roots
                .iter()
                .any(|r| r == Path::new("/usr") || r.ends_with("bin")),
            "{roots:?}"
        );
        // The project a script belongs to.
        std::fs::write(root.join("proj/package.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("proj/build")).unwrap();
        assert_eq!(
            project_root(&root.join("proj/build/index.js")),
            Some(root.join("proj"))
        );
        assert_eq!(project_root(&root.join("inst/bin/python9")), None);
    }

    #[test]
    fn install_roots() {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let h = Path::new(&home);
        assert_eq!(
            install_root(&h.join(".pyenv/shims/python3")),
            h.join(".pyenv")
        );
        assert_eq!(
            install_root(Path::new("/srv/app/venv/bin/python")),
            Path::new("/srv/app/venv")
        );
        assert_eq!(
            install_root(Path::new("/srv/tools/server.py")),
            Path::new("/srv/tools")
        );
        // Never the home directory or `/` as a whole.
        assert_eq!(install_root(&h.join("bin/tool")), h.join("bin"));
        assert_eq!(install_root(&h.join("tool")), h.join("tool"));
        assert_eq!(install_root(Path::new("/tool")), Path::new("/tool"));
        assert_eq!(install_root(Path::new("/bin/sh")), Path::new("/bin"));
    }
}
