//! The one jail sequence: [`Plan::run`].
//!
//! Every process lackpy starts is confined by running a [`Plan`]: an
//! exec'd executor or inferencer worker (after exec, on itself,
//! [`Plan::for_worker`]), the supervisor's fork of any worker before it
//! execs (the launch: IPC socket, uid, parent death, [`Plan::for_launch`]),
//! and the programs the supervisor starts for the operator — `command`
//! tools, MCP servers, the python helper ([`Plan::for_program`], between
//! fork and exec), the zygote ([`Plan::for_zygote`]) and each worker it
//! forks ([`Plan::for_zygote_worker`]).
//!
//! What differs between them is data in the plan (which namespaces, how ids
//! are mapped, whether there is a pid-1 fork and how its outer parent ends,
//! the root, the rlimits, capabilities, landlock rules, which descriptors
//! stay, the seccomp filter); [`Plan::run`] has no branch per kind of
//! process. Everything that allocates is done when the plan is built; a
//! plan without a seccomp filter then runs with raw, async-signal-safe
//! syscalls only, so it may run in the child of a threaded process between
//! `fork` and `exec`. (Compiling a seccomp filter allocates: only plans run
//! by a single-threaded process on itself have one.)

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

use super::{seccomp, steps, Filter, JailError, JailSpec, JailStatus, LayerStatus, Step};
use std::ffi::CString;
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};

/// How the process left outside the new pid namespace (the parent of the
/// confined pid 1) ends once pid 1 has ended. It closes every descriptor,
/// sets no new privileges and no core dump, installs the plan's reaper
/// filter if it has one, waits, and never returns into the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pid1Exit {
    /// Exit with pid 1's code, or 128+N when signal N killed it (a
    /// worker's reaper; the supervisor reads 128+N as the signal).
    Code,
    /// Die of the signal that killed pid 1 (a program's parent: whoever
    /// waits for it sees the program's own death). Needs `kill` and
    /// `rt_sigaction`, which the reaper filter does not allow: plans that
    /// end this way have no reaper filter.
    SameSignal,
}

/// What the jailed process sees as its filesystem root.
#[derive(Debug)]
enum Root {
    /// The host's tree (confined by landlock rules).
    Host,
    /// An empty, read-only tmpfs (`pivot_root`); the host's tree detached.
    Empty,
    /// The host's tree with the workspace's control directory covered by an
    /// empty read-only tmpfs in the process's own mount namespace.
    HideControl {
        /// Its path.
        path: CString,
        /// Its (device, inode) when it was opened beneath the workspace.
        id: (u64, u64),
        /// The workspace's `.git` to make read-only: path, (device, inode).
        git: Option<(CString, (u64, u64))>,
    },
}

/// The control directory a program must not see: its path and the
/// (device, inode) it had when the supervisor opened it beneath the
/// workspace without following a symlink. The jailed process opens the
/// path again (`O_NOFOLLOW`) in its own mount namespace, checks it is that
/// same directory, and mounts onto `/proc/self/fd/N` of that descriptor:
/// never onto a path that could have been swapped between check and mount.
#[derive(Debug, Clone)]
pub struct ControlDir {
    /// Path of the directory.
    pub path: PathBuf,
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
    /// The workspace's `.git` (a directory, or a `gitdir:` file), when the
    /// program may write the workspace: covered by a read-only bind of
    /// itself in the program's mount namespace, so the program can neither
    /// write it (hooks, `core.fsmonitor`: code the user's git runs outside
    /// any jail) nor rename, remove or replace it (a mount point). Checked
    /// by identity like the control directory.
    pub git: Option<Pinned>,
}

/// An entry of the workspace pinned by identity: the jailed process opens
/// `path` again without following a symlink and acts on it only when it is
/// still this (device, inode).
#[derive(Debug, Clone)]
pub struct Pinned {
    /// Its path.
    pub path: PathBuf,
    /// Its device.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
}

/// What the capability step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Caps {
    /// Nothing (a program's uid inside is its own: exec drops them).
    Keep,
    /// Lock securebits, empty the bounding and ambient sets and every
    /// capability set (a worker).
    DropAll,
    /// As `DropAll`, but `CAP_SYS_ADMIN` stays effective (the zygote: it
    /// gives each forked worker a pid namespace).
    KeepSysAdmin,
    /// Clear the capability sets only (a zygote's forked worker: securebits,
    /// bounding and ambient sets were locked down by the zygote).
    ClearSets,
}

/// What the SIGCHLD step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sigchld {
    /// Nothing.
    Leave,
    /// Block it and make a descriptor of it (the zygote).
    Descriptor,
    /// Unblock it (a zygote's forked worker does not keep the zygote's mask).
    Unblock,
}

/// The seccomp step.
#[derive(Debug)]
enum Seccomp {
    /// Compile and install this allowlist (allocates: self-jail only).
    Install(Filter),
    /// Stack this compiled program (a zygote's forked worker).
    Stack(seccompiler::BpfProgram),
}

/// One rlimit to set: its name (for errors), resource and value.
pub(super) type Rlimit = (&'static str, libc::__rlimit_resource_t, u64);

/// A worker's rlimits: none when the spec turns the layer off.
fn worker_rlimits(spec: &JailSpec) -> Vec<Rlimit> {
    if spec.rlimits {
        steps::worker_rlimits(spec.as_bytes, spec.cpu_seconds, WORKER_NOFILE).to_vec()
    } else {
        Vec::new()
    }
}

/// A confined process's jail, prepared. Built by [`Plan::for_worker`],
/// [`Plan::for_launch`], [`Plan::for_program`], [`Plan::for_zygote`] or
/// [`Plan::for_zygote_worker`]; run by [`Plan::run`].
#[derive(Debug)]
pub struct Plan {
    /// Socket to move onto [`crate::ipc::IPC_FD`] (a worker launch).
    ipc_socket: Option<RawFd>,
    /// New user namespace and the `uid_map` / `gid_map` lines to write.
    user_ns: Option<(CString, CString)>,
    /// The other namespaces (`CLONE_NEW*` flags, 0 for none).
    unshare: libc::c_int,
    /// Fork so the confined process is pid 1 of the new pid namespace.
    pid1: Option<Pid1Exit>,
    /// The reaper's filter (compiled beforehand: installing does not allocate).
    reaper: Option<seccompiler::BpfProgram>,
    root: Root,
    rlimits: Vec<Rlimit>,
    /// A root supervisor's worker becomes nobody.
    as_nobody: bool,
    /// `PR_SET_PDEATHSIG` (after the uid change, which clears it).
    die_with_parent: bool,
    no_new_privs: bool,
    capabilities: Caps,
    /// The landlock ruleset's descriptor (-1: none), taken and closed
    /// when enforced (an atomic so that a shared plan can run: a
    /// `pre_exec` hook must be `Sync`).
    ruleset: AtomicI32,
    /// What enforcing the ruleset amounts to.
    landlock: LayerStatus,
    /// Landlock ABI of the kernel (reported in [`JailStatus`]).
    landlock_abi: u8,
    /// Descriptors from this number up are closed (or, before an exec,
    /// marked close-on-exec).
    close_fds: Option<(u32, bool)>,
    /// After the descriptor step; a created descriptor is left in
    /// `sigchld_fd` (-1: none) for [`Plan::take_sigchld`].
    sigchld: Sigchld,
    sigchld_fd: AtomicI32,
    /// The filter, last.
    seccomp: Option<Seccomp>,
}

/// uid/gid a root supervisor drops its workers to.
/// Why: even the single outer identity mapped into the worker's user
/// namespace must own nothing.
pub const NOBODY: u32 = 65534;

/// Stack of an exec'd worker's main thread.
/// Why 64 MiB: room for the interpreter's recursion (it grows on demand).
const WORKER_STACK: u64 = 64 << 20;

/// Descriptors a jailed worker may hold: stdin/out/err (/dev/null or the
/// log) and the IPC socket. Why 8: 0–3 are open and nothing after the jail
/// opens any (the landlock ruleset, opened before, is closed once enforced).
pub(super) const WORKER_NOFILE: u64 = 8;

/// A line of `/proc/self/{uid,gid}_map`: `inside outside 1`.
pub(super) fn id_map_line(inside: u32, outside: u32) -> CString {
    // Digits and spaces only: never an interior NUL.
    CString::new(format!("{inside} {outside} 1")).unwrap_or_default()
}

/// The reaper's filter, compiled once per process.
fn reaper_filter() -> Option<seccompiler::BpfProgram> {
    static REAPER: std::sync::OnceLock<Option<seccompiler::BpfProgram>> =
        std::sync::OnceLock::new();
    REAPER
        .get_or_init(|| seccomp::compile_reaper().ok())
        .clone()
}

/// What a program the supervisor starts (a `command` tool, an MCP server,
/// the python helper) may touch and how much it may use. The supervisor
/// builds it; [`Plan::for_program`] turns it into a plan.
#[derive(Debug, Clone, Default)]
pub struct ProgramSpec {
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
    /// tool modules, traces) the program must neither see nor change. The
    /// supervisor opens it (creating it when absent and the program may
    /// write the workspace, so it cannot create one itself) beneath the
    /// workspace without following a symlink and passes its identity to
    /// [`Plan::for_program`] as a [`ControlDir`]; in the program's own
    /// mount namespace it is covered by an empty read-only tmpfs: the
    /// program sees an empty directory it can neither write, rename nor
    /// remove (a mount point).
    pub hide_control_of: Option<PathBuf>,
}

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

/// `RLIM_INFINITY` for rlimits a spec leaves unset.
const UNLIMITED: u64 = libc::RLIM_INFINITY;

impl Plan {
    /// The jail an exec'd worker (executor, inferencer) puts itself in,
    /// per `spec`: user (uid 0 inside = ours outside), mount, pid, net
    /// (unless kept), ipc, uts and cgroup namespaces with the worker as pid 1
    /// and its reaper outside; an empty read-only root; the worker rlimits;
    /// no new privileges, no capabilities; landlock denying every
    /// filesystem and TCP right (but the connect port); every descriptor
    /// above the IPC socket closed; the seccomp filter last.
    ///
    /// # Errors
    /// [`Step::Landlock`] when the ruleset cannot be built.
    pub fn for_worker(spec: &JailSpec) -> Result<Plan, JailError> {
        let (uid, gid) = steps::outer_ids();
        let mut unshare = libc::CLONE_NEWNS
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS
            | libc::CLONE_NEWCGROUP;
        if !spec.keep_net {
            unshare |= libc::CLONE_NEWNET;
        }
        let ns = spec.namespaces;
        let abi = steps::landlock_abi();
        let landlock = if spec.landlock {
            Some(steps::landlock_ruleset(true, spec.connect_port, None)?)
        } else {
            None
        };
        let (ruleset, landlock) = ruleset_parts(landlock);
        Ok(Plan {
            ipc_socket: None,
            user_ns: ns.then(|| (id_map_line(0, uid), id_map_line(0, gid))),
            unshare: if ns { unshare } else { 0 },
            pid1: ns.then_some(Pid1Exit::Code),
            reaper: if ns { reaper_filter() } else { None },
            root: if ns { Root::Empty } else { Root::Host },
            rlimits: worker_rlimits(spec),
            as_nobody: false,
            die_with_parent: false,
            no_new_privs: true,
            capabilities: Caps::DropAll,
            ruleset,
            landlock,
            landlock_abi: abi,
            close_fds: Some((first_closed_fd(), false)),
            sigchld: Sigchld::Leave,
            sigchld_fd: AtomicI32::new(-1),
            seccomp: spec.seccomp.map(Seccomp::Install),
        })
    }

    /// The jail a zygote puts itself in (after exec), per its workers'
    /// `spec`: every layer a worker gets — user, mount (empty read-only
    /// root), net, ipc, uts and cgroup namespaces, no new privileges,
    /// landlock, descriptors closed, seccomp — except that it stays in the
    /// supervisor's pid namespace (no pid-1 fork), its rlimits let it live
    /// long and fork (no CPU or process limit), it keeps `CAP_SYS_ADMIN`
    /// in its own user namespace, it gets a SIGCHLD descriptor, and its
    /// filter is [`Filter::Zygote`].
    ///
    /// # Errors
    /// [`Step::Namespaces`] without the namespaces layer (a zygote is
    /// pointless without it); [`Step::Landlock`] when the ruleset cannot
    /// be built.
    pub fn for_zygote(spec: &JailSpec) -> Result<Plan, JailError> {
        if !spec.namespaces {
            return Err(JailError::at(
                Step::Namespaces,
                "a zygote needs the namespaces layer",
                libc::EINVAL,
            ));
        }
        let mut plan = Plan::for_worker(spec)?;
        plan.unshare = steps::zygote_namespaces(spec.keep_net);
        plan.pid1 = None;
        plan.reaper = None;
        plan.rlimits = if spec.rlimits {
            steps::zygote_rlimits(spec.as_bytes)
        } else {
            Vec::new()
        };
        plan.capabilities = Caps::KeepSysAdmin;
        plan.sigchld = Sigchld::Descriptor;
        plan.seccomp = spec.seccomp.map(|_| Seccomp::Install(Filter::Zygote));
        Ok(plan)
    }

    /// The rest of the jail of a worker a zygote forked (pid 1 of its own
    /// pid namespace, its socket already on [`crate::ipc::IPC_FD`]), per
    /// the workers' `spec`: the worker rlimits (NPROC=0 from here on),
    /// death with the zygote, the last capability dropped, every other
    /// descriptor closed, SIGCHLD unblocked, and `child_filter` (see
    /// [`seccomp::compile_zygote_child`]) stacked on the inherited zygote
    /// filter last: the pair allows exactly the executor list. Built once
    /// by the zygote, run by each forked worker.
    pub fn for_zygote_worker(
        spec: &JailSpec,
        child_filter: Option<seccompiler::BpfProgram>,
    ) -> Plan {
        let mut plan = Plan::forked();
        plan.rlimits = worker_rlimits(spec);
        plan.capabilities = Caps::ClearSets;
        plan.close_fds = Some((first_closed_fd(), false));
        plan.sigchld = Sigchld::Unblock;
        plan.seccomp = child_filter.map(Seccomp::Stack);
        plan
    }

    /// The SIGCHLD descriptor [`Plan::run`] created (a zygote's plan), once.
    pub fn take_sigchld(&self) -> Option<OwnedFd> {
        let fd = self.sigchld_fd.swap(-1, Ordering::Relaxed);
        // SAFETY: the plan owned this descriptor and gave it up (swap).
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The supervisor's forked child of any exec'd worker (executor,
    /// inferencer, zygote), between fork and exec: the IPC socket `sock`
    /// onto [`crate::ipc::IPC_FD`], every other descriptor above it
    /// close-on-exec, a 64 MiB stack, a root supervisor's worker as nobody
    /// (65534), and death with the spawning thread. The worker then jails
    /// itself ([`Plan::for_worker`]).
    pub fn for_launch(sock: RawFd, as_nobody: bool) -> Plan {
        let mut plan = Plan::forked();
        plan.ipc_socket = Some(sock);
        plan.rlimits = vec![("RLIMIT_STACK", libc::RLIMIT_STACK, WORKER_STACK)];
        plan.as_nobody = as_nobody;
        plan
    }

    /// What [`Plan::for_launch`] and [`Plan::for_zygote_worker`] start
    /// from: no new namespace, the host root, no rlimit, capabilities
    /// kept, no landlock, no filter; death with the parent, and every
    /// descriptor above [`crate::ipc::IPC_FD`] close-on-exec.
    fn forked() -> Plan {
        Plan {
            ipc_socket: None,
            user_ns: None,
            unshare: 0,
            pid1: None,
            reaper: None,
            root: Root::Host,
            rlimits: Vec::new(),
            as_nobody: false,
            die_with_parent: true,
            no_new_privs: false,
            capabilities: Caps::Keep,
            ruleset: AtomicI32::new(-1),
            landlock: LayerStatus::Off,
            landlock_abi: 0,
            close_fds: Some((first_closed_fd(), true)),
            sigchld: Sigchld::Leave,
            sigchld_fd: AtomicI32::new(-1),
            seccomp: None,
        }
    }

    /// The jail of a program the supervisor starts (between fork and exec):
    /// user (our uid/gid mapped to themselves), ipc, uts, cgroup and pid
    /// namespaces, a network namespace with no interfaces unless the spec
    /// keeps the network, and a mount namespace when `control` is to be
    /// covered; the program is pid 1 of its pid namespace, so when it ends
    /// or is killed everything it started dies with it (also a process
    /// that left its process group with `setsid()`); its parent outside
    /// ends as it ended (same status or signal), and the program has
    /// `PR_SET_PDEATHSIG = SIGKILL` towards it. Then the spec's rlimits
    /// (no core dumps, CPU, address space, data, file size, open files,
    /// processes), no new privileges, landlock (every filesystem right
    /// handled, every TCP right unless the network is kept, signals and
    /// abstract unix sockets scoped; allowed are read+execute beneath
    /// [`SYSTEM_DIRS`] and the spec's `read_exec` paths, read-only on
    /// [`ETC_FILES`] and the spec's `read_only` paths, read/write on
    /// `/dev/null`, read on `/dev/{u,}random` and `/dev/zero`, everything
    /// beneath the spec's `read_write` paths, and nothing else: no /tmp, no
    /// home, no /proc), and every descriptor above 2 close-on-exec.
    ///
    /// `spec.hide_control_of` is not read here: the caller opens that
    /// control directory and passes its identity as `control` (the
    /// supervisor's `childjail::Jail::prepare` does).
    ///
    /// # Errors
    /// [`Step::Landlock`] when landlock is missing or refuses the rules.
    pub fn for_program(
        spec: &ProgramSpec,
        control: Option<&ControlDir>,
    ) -> Result<Plan, JailError> {
        let mut unshare =
            libc::CLONE_NEWIPC | libc::CLONE_NEWUTS | libc::CLONE_NEWCGROUP | libc::CLONE_NEWPID;
        if !spec.network {
            unshare |= libc::CLONE_NEWNET;
        }
        let root = match control {
            None => Root::Host,
            Some(c) => {
                unshare |= libc::CLONE_NEWNS;
                use std::os::unix::ffi::OsStrExt;
                let path = CString::new(c.path.as_os_str().as_bytes()).map_err(|_| {
                    JailError::detail(Step::HideControl, "control directory path has a NUL byte")
                })?;
                let git = c
                    .git
                    .as_ref()
                    .map(|g| {
                        CString::new(g.path.as_os_str().as_bytes())
                            .map(|p| (p, (g.dev, g.ino)))
                            .map_err(|_| {
                                JailError::detail(Step::HideControl, ".git path has a NUL byte")
                            })
                    })
                    .transpose()?;
                Root::HideControl {
                    path,
                    id: (c.dev, c.ino),
                    git,
                }
            }
        };
        let (uid, gid) = steps::outer_ids();
        let (ruleset, landlock) = ruleset_parts(Some(steps::landlock_ruleset(
            !spec.network,
            None,
            Some(spec),
        )?));
        Ok(Plan {
            ipc_socket: None,
            user_ns: Some((id_map_line(uid, uid), id_map_line(gid, gid))),
            unshare,
            pid1: Some(Pid1Exit::SameSignal),
            // No filter on a program's parent: it runs only our own code,
            // and a seccomp filter on it made every command call ~0.9 ms
            // slower (measured: a command tool called 20 times per run).
            reaper: None,
            root,
            rlimits: vec![
                ("RLIMIT_CORE", libc::RLIMIT_CORE, 0),
                (
                    "RLIMIT_CPU",
                    libc::RLIMIT_CPU,
                    spec.cpu_seconds.unwrap_or(UNLIMITED),
                ),
                (
                    "RLIMIT_AS",
                    libc::RLIMIT_AS,
                    spec.as_bytes.unwrap_or(UNLIMITED),
                ),
                (
                    "RLIMIT_DATA",
                    libc::RLIMIT_DATA,
                    spec.data_bytes.unwrap_or(UNLIMITED),
                ),
                ("RLIMIT_NOFILE", libc::RLIMIT_NOFILE, spec.nofile),
                ("RLIMIT_FSIZE", libc::RLIMIT_FSIZE, spec.fsize),
                // Counted per user namespace (Linux >= 5.14), so this bounds
                // only the program's own processes: no fork bomb. (The kernel
                // exempts uid 0: when lackpy runs as root this limit is void;
                // the pid namespace still ends them all with the program.)
                // One more than `max_procs`: the program's parent outside its
                // pid namespace counts too.
                (
                    "RLIMIT_NPROC",
                    libc::RLIMIT_NPROC,
                    spec.max_procs.saturating_add(1),
                ),
            ],
            as_nobody: false,
            die_with_parent: false,
            no_new_privs: true,
            capabilities: Caps::Keep,
            ruleset,
            landlock,
            landlock_abi: 0,
            // Nothing but stdio crosses exec.
            close_fds: Some((libc::STDERR_FILENO.unsigned_abs() + 1, true)),
            sigchld: Sigchld::Leave,
            sigchld_fd: AtomicI32::new(-1),
            seccomp: None,
        })
    }

    /// Run the jail's steps on the calling (single-threaded) process, in
    /// this order. Returns in the confined process only: with a pid-1 fork,
    /// the original process stays outside as pid 1's parent, waits, and
    /// ends as pid 1 ended ([`Pid1Exit`]). The landlock ruleset is consumed
    /// (closed); a plan is run once.
    ///
    /// # Errors
    /// The first step that failed.
    pub fn run(&self) -> Result<JailStatus, JailError> {
        use steps::*;
        // 0. The IPC socket onto its fixed descriptor (worker launch).
        if let Some(sock) = self.ipc_socket {
            socket_to_ipc_fd(sock)?;
        }
        // 1. Namespaces: user first (it gives this process the capabilities
        //    the others need, meaningless outside), its id maps, the rest;
        //    then fork so the confined process is pid 1 of the new pid ns.
        if let Some((uid_map, gid_map)) = &self.user_ns {
            unshare_user()?;
            write_id_maps(uid_map, gid_map)?;
        }
        if self.unshare != 0 {
            unshare_others(self.unshare)?;
        }
        if let Some(exit) = self.pid1 {
            fork_pid1(exit, self.reaper.as_ref())?;
        }
        // 2. The root: an empty read-only tmpfs, or the host's tree with
        //    the control directory covered.
        match &self.root {
            Root::Host => {}
            Root::Empty => pivot_to_empty_root()?,
            Root::HideControl { path, id, git } => {
                hide_control(path, *id)?;
                if let Some((git, id)) = git {
                    bind_read_only(git, *id)?;
                }
            }
        }
        // 3. rlimits (after the fork, so NPROC=0 cannot stop it).
        set_rlimits(&self.rlimits)?;
        // 4. Identity: nobody for a root supervisor's worker; death with
        //    the parent (after the uid change, which clears it).
        if self.as_nobody {
            drop_to_nobody()?;
        }
        if self.die_with_parent {
            die_with_parent()?;
        }
        // 5. No new privileges, no capabilities.
        if self.no_new_privs {
            set_no_new_privs()?;
        }
        match self.capabilities {
            Caps::Keep => {}
            Caps::DropAll => drop_capabilities()?,
            Caps::KeepSysAdmin => keep_only_sys_admin()?,
            Caps::ClearSets => clear_capabilities()?,
        }
        // 6. Landlock, with the ruleset built beforehand.
        let ruleset = self.ruleset.swap(-1, Ordering::Relaxed);
        let landlock = if ruleset >= 0 {
            // SAFETY: the plan owned this descriptor and gave it up (swap).
            let ruleset = unsafe { OwnedFd::from_raw_fd(ruleset) };
            restrict_landlock(&ruleset)?;
            self.landlock
        } else {
            LayerStatus::Off
        };
        // 7. No inherited descriptor beyond the kept ones.
        if let Some((first, cloexec)) = self.close_fds {
            close_inherited_fds(first, cloexec)?;
        }
        match self.sigchld {
            Sigchld::Leave => {}
            Sigchld::Descriptor => {
                let fd = sigchld_fd()?;
                self.sigchld_fd.store(fd.into_raw_fd(), Ordering::Relaxed);
            }
            Sigchld::Unblock => unblock_sigchld()?,
        }
        // 8. seccomp LAST: from here on only the allowlisted syscalls exist.
        let seccomp = match &self.seccomp {
            Some(Seccomp::Install(filter)) => {
                seccomp::install(*filter)?;
                LayerStatus::Active
            }
            Some(Seccomp::Stack(prog)) => {
                seccompiler::apply_filter(prog)
                    .map_err(|e| JailError::detail(Step::Seccomp, e.to_string()))?;
                LayerStatus::Active
            }
            None => LayerStatus::Off,
        };
        let on = |b: bool| {
            if b {
                LayerStatus::Active
            } else {
                LayerStatus::Off
            }
        };
        Ok(JailStatus {
            namespaces: on(self.user_ns.is_some()),
            rlimits: on(!self.rlimits.is_empty()),
            landlock,
            landlock_abi: self.landlock_abi,
            seccomp,
        })
    }

    /// [`Plan::run`] as a `pre_exec` hook needs it: a failed step becomes
    /// an `io::Error` carrying the step and errno ([`JailError::to_io`]),
    /// which reaches the parent as the spawn's error
    /// ([`JailError::explain_spawn`] reads it).
    ///
    /// # Errors
    /// The encoded [`JailError`] of the first step that failed.
    pub fn enter(&self) -> std::io::Result<()> {
        self.run().map(drop).map_err(|e| e.to_io())
    }

    /// Make `cmd` enter this jail between fork and exec (its `pre_exec`
    /// hook). The plan moves into the hook, so it lives as long as `cmd`.
    /// Spawn errors of `cmd` then carry the failed step: pass them through
    /// [`JailError::explain_spawn`].
    pub fn attach(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: a plan without a seccomp filter (the only kind the
        // constructors for a forked child build) runs raw syscalls on
        // memory prepared before the fork (`self` moves into the closure):
        // async-signal-safe.
        unsafe {
            cmd.pre_exec(move || self.enter());
        }
    }

    /// [`Plan::attach`], and the jail's outer process dies with the thread
    /// that spawns it (`PR_SET_PDEATHSIG`). For a child that thread
    /// outlives: a command tool's run (the thread waits on it), an MCP
    /// server started from a runtime thread (which lives as long as the
    /// process). A supervisor killed mid-call then leaves nothing running.
    /// Not for a child started from a thread that may end before it.
    pub fn attach_dying_with_spawner(self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        // SAFETY: as in `attach`; `die_with_parent` is one raw prctl.
        unsafe {
            cmd.pre_exec(move || {
                super::steps::die_with_parent().map_err(|e| e.to_io())?;
                self.enter()
            });
        }
    }
}

impl Drop for Plan {
    fn drop(&mut self) {
        for owned in [&self.ruleset, &self.sigchld_fd] {
            let fd = owned.swap(-1, Ordering::Relaxed);
            if fd >= 0 {
                // SAFETY: the plan still owns this descriptor (never taken).
                drop(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
}

/// A built ruleset as a plan holds it: its descriptor (-1: none) and status.
fn ruleset_parts(built: Option<(OwnedFd, LayerStatus)>) -> (AtomicI32, LayerStatus) {
    match built {
        Some((fd, status)) => (AtomicI32::new(fd.into_raw_fd()), status),
        None => (AtomicI32::new(-1), LayerStatus::Off),
    }
}

/// The first descriptor a worker does not keep: the one after the IPC socket.
pub(super) fn first_closed_fd() -> u32 {
    crate::ipc::IPC_FD.unsigned_abs() + 1
}
