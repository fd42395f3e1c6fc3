//! The child side of the jail: confine the current process, in the order
//! docs/ARCHITECTURE.md ("Jails") lists, according to a [`JailSpec`] the supervisor built and validated.
//!
//! [`enter`] is the one entry point; its body is the list of steps, one
//! line each. Every step is a small function with a "why" comment and its
//! own [`JailError`] variant carrying the errno, so a failed jail names the
//! step that failed (`SetupFailed{step, errno}` on the wire).
//!
//! Executors and inferencers differ only in [`JailSpec`] fields (seccomp
//! filter, kept network namespace, landlock connect port), never in branches.
//!
//! Must be called while the process is still single-threaded: landlock and
//! seccomp apply to the calling thread, and step 1 forks.

pub mod seccomp;
mod steps;

use std::fmt;

pub use seccomp::Filter;
pub use steps::wait_status;

/// What the jail should do. Built by the supervisor, passed to the worker on
/// its command line (see [`JailSpec::to_arg`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailSpec {
    /// Layer `namespaces`: new user, pid, net, mount, ipc, uts and cgroup
    /// namespaces, and an empty tmpfs root (`pivot_root`).
    pub namespaces: bool,
    /// Layer `rlimits`: address space, CPU seconds, NOFILE, NPROC=0, FSIZE=0, no core.
    pub rlimits: bool,
    /// Layer `landlock`: deny all filesystem access, and all TCP except `connect_port`.
    pub landlock: bool,
    /// Layer `seccomp`: the syscall allowlist to install last (`None` = layer lowered).
    pub seccomp: Option<Filter>,
    /// Keep the host network namespace (inferencer with a remote endpoint only).
    pub keep_net: bool,
    /// The one TCP port landlock lets the worker connect to (inferencer only).
    pub connect_port: Option<u16>,
    /// `RLIMIT_AS` in bytes.
    pub as_bytes: u64,
    /// `RLIMIT_CPU` in seconds.
    pub cpu_seconds: u64,
}

/// Names of the layers that can be lowered, in jail order.
pub const LAYERS: [&str; 4] = ["namespaces", "rlimits", "landlock", "seccomp"];

impl JailSpec {
    /// Every layer on, executor filter, address space and CPU from the given values.
    pub fn executor(as_bytes: u64, cpu_seconds: u64) -> Self {
        JailSpec {
            namespaces: true,
            rlimits: true,
            landlock: true,
            seccomp: Some(Filter::Executor),
            keep_net: false,
            connect_port: None,
            as_bytes,
            cpu_seconds,
        }
    }

    /// Compact command-line form, e.g. `ns=1,rl=1,ll=1,sc=executor,net=0,port=0,as=805306368,cpu=11`.
    pub fn to_arg(&self) -> String {
        format!(
            "ns={},rl={},ll={},sc={},net={},port={},as={},cpu={}",
            u8::from(self.namespaces),
            u8::from(self.rlimits),
            u8::from(self.landlock),
            self.seccomp.map_or("off", Filter::name),
            u8::from(self.keep_net),
            self.connect_port.unwrap_or(0),
            self.as_bytes,
            self.cpu_seconds
        )
    }

    /// Parse [`JailSpec::to_arg`]'s form. Every key is required exactly once.
    ///
    /// # Errors
    /// A message naming the bad key or value.
    pub fn from_arg(arg: &str) -> Result<Self, String> {
        let mut fields: [Option<&str>; 8] = [None; 8];
        const KEYS: [&str; 8] = ["ns", "rl", "ll", "sc", "net", "port", "as", "cpu"];
        for part in arg.split(',') {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("jail spec: `{part}` is not key=value"))?;
            let idx = KEYS
                .iter()
                .position(|x| *x == k)
                .ok_or_else(|| format!("jail spec: unknown key `{k}`"))?;
            if fields[idx].replace(v).is_some() {
                return Err(format!("jail spec: duplicate key `{k}`"));
            }
        }
        let get =
            |i: usize| fields[i].ok_or_else(|| format!("jail spec: missing key `{}`", KEYS[i]));
        let flag = |i: usize| -> Result<bool, String> {
            match get(i)? {
                "0" => Ok(false),
                "1" => Ok(true),
                v => Err(format!(
                    "jail spec: `{}` must be 0 or 1, not `{v}`",
                    KEYS[i]
                )),
            }
        };
        let num = |i: usize| -> Result<u64, String> {
            get(i)?
                .parse::<u64>()
                .map_err(|_| format!("jail spec: `{}` is not a number", KEYS[i]))
        };
        let seccomp = match get(3)? {
            "off" => None,
            name => Some(
                Filter::from_name(name)
                    .ok_or_else(|| format!("jail spec: unknown filter `{name}`"))?,
            ),
        };
        let port =
            u16::try_from(num(5)?).map_err(|_| "jail spec: port out of range".to_string())?;
        Ok(JailSpec {
            namespaces: flag(0)?,
            rlimits: flag(1)?,
            landlock: flag(2)?,
            seccomp,
            keep_net: flag(4)?,
            connect_port: (port != 0).then_some(port),
            as_bytes: num(6)?,
            cpu_seconds: num(7)?,
        })
    }

    /// The jail level as recorded in traces: `full`, or `lowered(-a,-b)`.
    pub fn level(&self) -> String {
        let off: Vec<&str> = LAYERS
            .iter()
            .zip([
                self.namespaces,
                self.rlimits,
                self.landlock,
                self.seccomp.is_some(),
            ])
            .filter(|(_, on)| !on)
            .map(|(n, _)| *n)
            .collect();
        if off.is_empty() {
            "full".to_string()
        } else {
            format!("lowered(-{})", off.join(",-"))
        }
    }
}

/// A jail step that failed. Each variant names its step and carries the errno.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JailError {
    /// `unshare(CLONE_NEWUSER)`.
    #[error("unshare(CLONE_NEWUSER): {}", errno_name(*.0))]
    UnshareUser(i32),
    /// Writing `/proc/self/{setgroups,uid_map,gid_map}`.
    #[error("writing {file}: {}", errno_name(*errno))]
    IdMap {
        /// Which file.
        file: &'static str,
        /// errno.
        errno: i32,
    },
    /// `unshare` of the other namespaces.
    #[error("unshare(NEWNS|NEWPID|NEWNET|NEWIPC|NEWUTS|NEWCGROUP): {}", errno_name(*.0))]
    UnshareOthers(i32),
    /// `fork` into the new pid namespace, or the init's parent-death setup.
    #[error("fork into the pid namespace: {}", errno_name(*.0))]
    Fork(i32),
    /// A mount call of the root switch.
    #[error("mount({what}): {}", errno_name(*errno))]
    Mount {
        /// Which mount.
        what: &'static str,
        /// errno.
        errno: i32,
    },
    /// `pivot_root` into the empty tmpfs.
    #[error("pivot_root: {}", errno_name(*.0))]
    PivotRoot(i32),
    /// `umount2` of the old root.
    #[error("umount2(old root): {}", errno_name(*.0))]
    UmountOldRoot(i32),
    /// `setrlimit`.
    #[error("setrlimit({name}): {}", errno_name(*errno))]
    Rlimit {
        /// The resource.
        name: &'static str,
        /// errno.
        errno: i32,
    },
    /// `PR_SET_NO_NEW_PRIVS`.
    #[error("prctl(PR_SET_NO_NEW_PRIVS): {}", errno_name(*.0))]
    NoNewPrivs(i32),
    /// Dropping capabilities.
    #[error("dropping capabilities ({what}): {}", errno_name(*errno))]
    Capabilities {
        /// Which call.
        what: &'static str,
        /// errno.
        errno: i32,
    },
    /// `close_range` of inherited descriptors.
    #[error("close_range: {}", errno_name(*.0))]
    CloseFds(i32),
    /// Landlock could not be enforced.
    #[error("landlock: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
}

impl JailError {
    /// Short step name for `SetupFailed{step}` and `lackpy doctor`.
    pub fn step(&self) -> &'static str {
        match self {
            JailError::UnshareUser(_) => "userns",
            JailError::IdMap { .. } => "id_map",
            JailError::UnshareOthers(_) => "namespaces",
            JailError::Fork(_) => "pidns_fork",
            JailError::Mount { .. } => "mount",
            JailError::PivotRoot(_) => "pivot_root",
            JailError::UmountOldRoot(_) => "umount_old_root",
            JailError::Rlimit { .. } => "rlimits",
            JailError::NoNewPrivs(_) => "no_new_privs",
            JailError::Capabilities { .. } => "capabilities",
            JailError::CloseFds(_) => "close_fds",
            JailError::Landlock(_) => "landlock",
            JailError::Seccomp(_) => "seccomp",
        }
    }

    /// The errno, or 0.
    pub fn errno(&self) -> i32 {
        match self {
            JailError::UnshareUser(e)
            | JailError::UnshareOthers(e)
            | JailError::Fork(e)
            | JailError::PivotRoot(e)
            | JailError::UmountOldRoot(e)
            | JailError::NoNewPrivs(e)
            | JailError::CloseFds(e) => *e,
            JailError::IdMap { errno, .. }
            | JailError::Mount { errno, .. }
            | JailError::Rlimit { errno, .. }
            | JailError::Capabilities { errno, .. } => *errno,
            JailError::Landlock(_) | JailError::Seccomp(_) => 0,
        }
    }
}

/// `EPERM (1)`-style rendering of an errno.
pub fn errno_name(e: i32) -> String {
    let name = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINVAL => "EINVAL",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::ENOSPC => "ENOSPC",
        libc::EUSERS => "EUSERS",
        libc::ENOSYS => "ENOSYS",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        _ => "",
    };
    format!("{name} ({e}) {}", std::io::Error::from_raw_os_error(e)).replace("  ", " ")
}

/// Status of one layer after [`enter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerStatus {
    /// Applied fully.
    Active,
    /// Applied at a lower landlock ABI than requested (some rights not handled).
    Partial,
    /// Lowered by the operator (not applied).
    Off,
}

impl fmt::Display for LayerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LayerStatus::Active => "active",
            LayerStatus::Partial => "partial",
            LayerStatus::Off => "off",
        })
    }
}

/// What [`enter`] applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailStatus {
    /// Namespaces + empty root.
    pub namespaces: LayerStatus,
    /// rlimits.
    pub rlimits: LayerStatus,
    /// landlock, with the kernel's ABI.
    pub landlock: LayerStatus,
    /// Landlock ABI the kernel offers (0 = none).
    pub landlock_abi: u8,
    /// seccomp.
    pub seccomp: LayerStatus,
}

/// Confine the calling (single-threaded) process. Returns in the confined
/// process only: with namespaces on, the original process becomes a tiny
/// reaper that waits for the confined pid-1 child and exits with its status.
///
/// # Errors
/// The first step that failed.
pub fn enter(spec: &JailSpec) -> Result<JailStatus, JailError> {
    use steps::*;
    let (uid, gid) = outer_ids();
    // 1. namespaces: user first (gives us capabilities inside it), then the rest; fork into the pid ns.
    if spec.namespaces {
        unshare_user()?;
        write_id_maps(uid, gid)?;
        unshare_others(spec.keep_net)?;
        fork_into_pid_namespace()?;
        // 2. mount namespace: an empty, read-only tmpfs root; the host's tree detached.
        pivot_to_empty_root()?;
    }
    // 3. rlimits (after the fork, so NPROC=0 cannot stop it).
    if spec.rlimits {
        set_rlimits(spec.as_bytes, spec.cpu_seconds)?;
    }
    // 4. no new privileges, no capabilities, no inherited descriptors (environment is already empty).
    set_no_new_privs()?;
    drop_capabilities()?;
    close_inherited_fds()?;
    // 5. landlock: handle every fs/net right with no rule, i.e. deny them all.
    let (landlock, landlock_abi) = if spec.landlock {
        restrict_landlock(spec.connect_port)?
    } else {
        (LayerStatus::Off, landlock_abi())
    };
    // 6. seccomp LAST: from here on only the allowlisted syscalls exist.
    let seccomp = match spec.seccomp {
        Some(filter) => {
            seccomp::install(filter)?;
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
        namespaces: on(spec.namespaces),
        rlimits: on(spec.rlimits),
        landlock,
        landlock_abi,
        seccomp,
    })
}

/// The one flag set the zygote forks a worker with: a new pid namespace
/// (the worker is its pid 1), a pidfd for the supervisor, SIGCHLD to the
/// zygote. The zygote's seccomp filter allows `clone` with exactly these
/// flags and nothing else.
///
/// No ipc namespace per worker: the workers of one zygote share its
/// private one (never the host's), and with the seccomp layer on none of
/// them can reach it — every SysV IPC and POSIX message-queue syscall is
/// killed. Creating and tearing one down per worker cost ~10 % of a pooled
/// worker's CPU (an mqueue mount, sysctl tables, and an RCU grace period
/// on the way out). When the operator lowers the seccomp layer, each worker
/// gets its own again ([`ZYGOTE_CLONE_FLAGS_NO_SECCOMP`]).
pub const ZYGOTE_CLONE_FLAGS: u64 = (libc::CLONE_NEWPID | libc::CLONE_PIDFD | libc::SIGCHLD) as u64;

/// [`ZYGOTE_CLONE_FLAGS`] plus a new ipc namespace: the fork flags when the
/// seccomp layer is lowered (then nothing else keeps sibling workers'
/// SysV IPC apart).
pub const ZYGOTE_CLONE_FLAGS_NO_SECCOMP: u64 = ZYGOTE_CLONE_FLAGS | libc::CLONE_NEWIPC as u64;

/// What [`enter_zygote`] prepared for the workers it will fork.
pub struct ZygoteJail {
    /// The filter each worker stacks on the zygote's, compiled once
    /// ([`seccomp::compile_zygote_child`]: together they allow exactly the
    /// executor list for pid 1); `None` when the seccomp layer is lowered.
    child_filter: Option<seccompiler::BpfProgram>,
    /// The worker rlimits (`None` when the rlimits layer is lowered).
    rlimits: Option<(u64, u64)>,
    /// Readable when a worker exited (SIGCHLD, blocked, via signalfd).
    sigchld: std::os::fd::OwnedFd,
}

impl fmt::Debug for ZygoteJail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZygoteJail")
            .field("child_filter", &self.child_filter.as_ref().map(Vec::len))
            .field("rlimits", &self.rlimits)
            .field("sigchld", &self.sigchld)
            .finish()
    }
}

/// Confine the calling (single-threaded) process as a *zygote*: the long-lived
/// parent of pooled executor workers. It gets every layer a worker gets —
/// user, mount (empty read-only root), net, ipc, uts and cgroup namespaces,
/// no-new-privs, a locked-down capability state, landlock, seccomp — except
/// that it stays in the supervisor's pid namespace, keeps `CAP_SYS_ADMIN`
/// in its own user namespace (to give each worker a pid namespace) and its
/// filter ([`Filter::Zygote`]) also allows forking a worker and handing it
/// over. Each forked worker then finishes its own jail with
/// [`ZygoteJail::confine_worker`].
///
/// Requires the namespaces layer (the zygote is pointless without it).
///
/// # Errors
/// The first step that failed.
pub fn enter_zygote(spec: &JailSpec) -> Result<ZygoteJail, JailError> {
    use steps::*;
    if !spec.namespaces {
        return Err(JailError::UnshareOthers(libc::EINVAL));
    }
    let (uid, gid) = outer_ids();
    unshare_user()?;
    write_id_maps(uid, gid)?;
    unshare_zygote_namespaces(spec.keep_net)?;
    pivot_to_empty_root()?;
    if spec.rlimits {
        set_zygote_rlimits(spec.as_bytes)?;
    }
    set_no_new_privs()?;
    keep_only_sys_admin()?;
    close_inherited_fds()?;
    let sigchld = sigchld_fd()?;
    if spec.landlock {
        restrict_landlock(spec.connect_port)?;
    }
    let child_filter = match spec.seccomp {
        Some(f) => Some(seccomp::compile_zygote_child(f)?),
        None => None,
    };
    if spec.seccomp.is_some() {
        seccomp::install(Filter::Zygote)?;
    }
    Ok(ZygoteJail {
        child_filter,
        rlimits: spec.rlimits.then_some((spec.as_bytes, spec.cpu_seconds)),
        sigchld,
    })
}

impl ZygoteJail {
    /// The `clone` flags to fork a worker with: [`ZYGOTE_CLONE_FLAGS`], or
    /// [`ZYGOTE_CLONE_FLAGS_NO_SECCOMP`] when the seccomp layer is lowered
    /// (no child filter).
    pub fn clone_flags(&self) -> u64 {
        if self.child_filter.is_some() {
            ZYGOTE_CLONE_FLAGS
        } else {
            ZYGOTE_CLONE_FLAGS_NO_SECCOMP
        }
    }

    /// The signalfd that becomes readable when a forked worker exits.
    pub fn sigchld_fd(&self) -> std::os::fd::RawFd {
        use std::os::fd::AsRawFd;
        self.sigchld.as_raw_fd()
    }

    /// In a freshly forked worker (pid 1 of its own pid namespace, its
    /// socket already on fd 3): die with the zygote, close every other
    /// descriptor, set the worker rlimits (NPROC=0 from here on), drop the
    /// last capability, and install the worker's filter last (stacked on
    /// the inherited zygote filter, the pair allows exactly the executor
    /// list).
    ///
    /// # Errors
    /// The first step that failed.
    pub fn confine_worker(&self) -> Result<(), JailError> {
        use steps::*;
        die_with_parent()?;
        unblock_sigchld()?;
        close_inherited_fds()?;
        if let Some((as_bytes, cpu)) = self.rlimits {
            set_rlimits(as_bytes, cpu)?;
        }
        clear_capabilities()?;
        if let Some(prog) = &self.child_filter {
            seccompiler::apply_filter(prog).map_err(|e| JailError::Seccomp(e.to_string()))?;
        }
        Ok(())
    }
}

/// The landlock ABI version the running kernel offers (0 if none).
pub fn landlock_abi() -> u8 {
    steps::landlock_abi()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_roundtrip() {
        let mut s = JailSpec::executor(1 << 30, 11);
        assert_eq!(JailSpec::from_arg(&s.to_arg()), Ok(s.clone()));
        assert_eq!(s.level(), "full");
        s.landlock = false;
        s.seccomp = None;
        s.connect_port = Some(11434);
        assert_eq!(JailSpec::from_arg(&s.to_arg()), Ok(s.clone()));
        assert_eq!(s.level(), "lowered(-landlock,-seccomp)");
    }

    #[test]
    fn spec_rejects_bad_input() {
        let good = JailSpec::executor(1, 1).to_arg();
        assert!(JailSpec::from_arg("").is_err());
        assert!(JailSpec::from_arg(&format!("{good},ns=1"))
            .unwrap_err()
            .contains("duplicate"));
        assert!(JailSpec::from_arg(&good.replace("ns=1", "ns=2")).is_err());
        assert!(JailSpec::from_arg(&good.replace("sc=executor", "sc=bogus")).is_err());
        assert!(JailSpec::from_arg(&good.replace("port=0", "port=70000")).is_err());
        assert!(JailSpec::from_arg(&good.replace(",cpu=1", ""))
            .unwrap_err()
            .contains("missing"));
        assert!(JailSpec::from_arg(&format!("{good},x=1"))
            .unwrap_err()
            .contains("unknown"));
    }

    #[test]
    fn errors_name_their_step() {
        let e = JailError::PivotRoot(libc::EINVAL);
        assert_eq!(e.step(), "pivot_root");
        assert_eq!(e.errno(), libc::EINVAL);
        assert!(e.to_string().starts_with("pivot_root: EINVAL (22)"), "{e}");
    }
}
