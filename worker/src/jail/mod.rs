//! The jail: the one implementation that confines every process lackpy
//! starts — executor workers (exec'd, and forked by a zygote), inferencer
//! workers, the zygote, and the programs the supervisor runs for the
//! operator (`command` tools, MCP servers, the python helper).
//!
//! - [`Plan`] (`plan.rs`) is a jail prepared as data, and [`Plan::run`] the
//!   one list of steps every plan runs, one line each; exec'd workers
//!   ([`Plan::for_worker`], from the [`JailSpec`] on their command line),
//!   the supervisor's fork of a worker before exec ([`Plan::for_launch`]),
//!   programs ([`Plan::for_program`], from a [`ProgramSpec`]), the zygote
//!   ([`Plan::for_zygote`], run by [`enter_zygote`]) and each worker it
//!   forks ([`Plan::for_zygote_worker`], run by
//!   [`ZygoteJail::confine_worker`]) differ only in the plan's fields,
//!   never in branches.
//! - `steps.rs` holds the steps: each is a small function with a "why"
//!   comment whose failure is a [`JailError`] naming its [`Step`] (and so
//!   its [`Layer`]) and the errno (`SetupFailed{step, errno}` on the wire;
//!   from a `pre_exec` hook, encoded in the spawn's error).
//! - `seccomp.rs` holds the syscall allowlists.
//!
//! A plan must run while its process is single-threaded (landlock and
//! seccomp apply to the calling thread, and the pid-1 step forks): a
//! worker on itself, or a forked child before exec.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

mod plan;
pub mod seccomp;
mod steps;

use std::fmt;

pub use plan::{ControlDir, Pid1Exit, Pinned, Plan, ProgramSpec, ETC_FILES, NOBODY, SYSTEM_DIRS};
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

/// Names of the layers that can be lowered, in jail order (see [`Layer`]).
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

/// One step of a jail, as named in `SetupFailed{step}`, in a failed
/// spawn's error and by `lackpy doctor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// The IPC socket moved onto [`crate::ipc::IPC_FD`] (worker launch).
    IpcFd = 1,
    /// A root supervisor's worker dropped to nobody (worker launch).
    DropUid,
    /// `PR_SET_PDEATHSIG`: dying with the parent.
    DieWithParent,
    /// `unshare(CLONE_NEWUSER)`.
    UserNs,
    /// Writing `/proc/self/{setgroups,uid_map,gid_map}`.
    IdMap,
    /// `unshare` of the other namespaces.
    Namespaces,
    /// The fork into the new pid namespace (the confined process is its pid 1).
    Pid1Fork,
    /// A mount call of the root switch.
    Mount,
    /// `pivot_root` into the empty tmpfs.
    PivotRoot,
    /// `umount2` of the old root.
    UmountOldRoot,
    /// Covering the workspace's control directory with an empty tmpfs.
    HideControl,
    /// `setrlimit`.
    Rlimits,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Dropping capabilities.
    Capabilities,
    /// Closing (or marking close-on-exec) inherited descriptors.
    CloseFds,
    /// The zygote's SIGCHLD descriptor.
    Sigchld,
    /// Landlock.
    Landlock,
    /// seccomp.
    Seccomp,
}

/// Every [`Step`], in discriminant order (for decoding).
const STEPS: [Step; 18] = [
    Step::IpcFd,
    Step::DropUid,
    Step::DieWithParent,
    Step::UserNs,
    Step::IdMap,
    Step::Namespaces,
    Step::Pid1Fork,
    Step::Mount,
    Step::PivotRoot,
    Step::UmountOldRoot,
    Step::HideControl,
    Step::Rlimits,
    Step::NoNewPrivs,
    Step::Capabilities,
    Step::CloseFds,
    Step::Sigchld,
    Step::Landlock,
    Step::Seccomp,
];

impl Step {
    /// The step's short name (`SetupFailed{step}` on the wire).
    pub fn name(self) -> &'static str {
        match self {
            Step::IpcFd => "ipc_fd",
            Step::DropUid => "drop_uid",
            Step::DieWithParent => "die_with_parent",
            Step::UserNs => "userns",
            Step::IdMap => "id_map",
            Step::Namespaces => "namespaces",
            Step::Pid1Fork => "pidns_fork",
            Step::Mount => "mount",
            Step::PivotRoot => "pivot_root",
            Step::UmountOldRoot => "umount_old_root",
            Step::HideControl => "hide_control",
            Step::Rlimits => "rlimits",
            Step::NoNewPrivs => "no_new_privs",
            Step::Capabilities => "capabilities",
            Step::CloseFds => "close_fds",
            Step::Sigchld => "sigchld",
            Step::Landlock => "landlock",
            Step::Seccomp => "seccomp",
        }
    }

    /// Inverse of [`Step::name`].
    pub fn from_name(name: &str) -> Option<Step> {
        STEPS.into_iter().find(|s| s.name() == name)
    }

    /// The layer the step belongs to: what an operator would have to lower
    /// (or fix on the host) for it not to run.
    pub fn layer(self) -> Layer {
        match self {
            Step::UserNs
            | Step::IdMap
            | Step::Namespaces
            | Step::Pid1Fork
            | Step::Mount
            | Step::PivotRoot
            | Step::UmountOldRoot
            | Step::HideControl => Layer::Namespaces,
            Step::Rlimits => Layer::Rlimits,
            Step::Landlock => Layer::Landlock,
            Step::Seccomp => Layer::Seccomp,
            Step::IpcFd
            | Step::DropUid
            | Step::DieWithParent
            | Step::NoNewPrivs
            | Step::Capabilities
            | Step::CloseFds
            | Step::Sigchld => Layer::Base,
        }
    }
}

/// A layer of the jail. The first four can be lowered by an operator
/// ([`LAYERS`]); [`Layer::Base`] is what every jail does whatever is
/// lowered (no new privileges, capabilities, descriptors, parent death).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// Namespaces and the root switch.
    Namespaces,
    /// Resource limits.
    Rlimits,
    /// Landlock.
    Landlock,
    /// seccomp.
    Seccomp,
    /// The steps no operator setting turns off.
    Base,
}

impl Layer {
    /// `namespaces`, `rlimits`, `landlock`, `seccomp` (as in [`LAYERS`]) or `base`.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Namespaces => "namespaces",
            Layer::Rlimits => "rlimits",
            Layer::Landlock => "landlock",
            Layer::Seccomp => "seccomp",
            Layer::Base => "base",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A jail step that failed: which step, its errno (0 when the failure has
/// none, e.g. a landlock ruleset the crate refused), which call of the
/// step, and an optional detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JailError {
    step: Step,
    errno: i32,
    what: &'static str,
    detail: Option<String>,
}

/// Tag in the high bits of an encoded [`JailError`] (see [`JailError::to_io`]).
const ENCODED_TAG: i32 = 0x4C00_0000;
/// Mask of the tag bits.
const ENCODED_MASK: i32 = 0x7F00_0000;
/// errno values are below 4096 (the kernel's `MAX_ERRNO`).
const ERRNO_BITS: u32 = 12;

impl JailError {
    /// `step` failed with `errno`.
    pub fn new(step: Step, errno: i32) -> Self {
        JailError {
            step,
            errno,
            what: "",
            detail: None,
        }
    }

    /// `step`'s call `what` failed with `errno`.
    pub fn at(step: Step, what: &'static str, errno: i32) -> Self {
        JailError {
            step,
            errno,
            what,
            detail: None,
        }
    }

    /// `step` failed without an errno; `detail` says why.
    pub fn detail(step: Step, detail: impl Into<String>) -> Self {
        JailError {
            step,
            errno: 0,
            what: "",
            detail: Some(detail.into()),
        }
    }

    /// The step that failed.
    pub fn kind(&self) -> Step {
        self.step
    }

    /// Short step name for `SetupFailed{step}` and `lackpy doctor`.
    pub fn step(&self) -> &'static str {
        self.step.name()
    }

    /// The layer of the failed step.
    pub fn layer(&self) -> Layer {
        self.step.layer()
    }

    /// The errno, or 0.
    pub fn errno(&self) -> i32 {
        self.errno
    }

    /// This error as an `io::Error` whose raw OS error carries the step
    /// and the errno: what a `pre_exec` hook returns, so that both reach
    /// the parent through the standard library's exec-error pipe (which
    /// carries one `i32`). [`JailError::from_io`] reads it back. `what`
    /// and `detail` do not cross (errors that have a detail happen before
    /// the fork).
    pub fn to_io(&self) -> std::io::Error {
        let errno = self.errno & ((1 << ERRNO_BITS) - 1);
        std::io::Error::from_raw_os_error(
            ENCODED_TAG | (i32::from(self.step as u8) << ERRNO_BITS) | errno,
        )
    }

    /// The [`JailError`] a `pre_exec` hook encoded with [`JailError::to_io`];
    /// `None` for any other error.
    pub fn from_io(e: &std::io::Error) -> Option<JailError> {
        let raw = e.raw_os_error()?;
        if raw & ENCODED_MASK != ENCODED_TAG {
            return None;
        }
        let idx = usize::try_from((raw >> ERRNO_BITS) & 0xff).ok()?;
        let step = *STEPS.get(idx.checked_sub(1)?)?;
        Some(JailError::new(step, raw & ((1 << ERRNO_BITS) - 1)))
    }

    /// A spawn error made readable: an error [`JailError::to_io`] encoded
    /// becomes an `io::Error` that displays as the jail step that failed
    /// (its kind from the errno); any other error is returned unchanged.
    pub fn explain_spawn(e: std::io::Error) -> std::io::Error {
        match JailError::from_io(&e) {
            Some(j) => {
                let kind = std::io::Error::from_raw_os_error(j.errno).kind();
                std::io::Error::new(kind, j)
            }
            None => e,
        }
    }
}

impl fmt::Display for JailError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.step.name())?;
        if !self.what.is_empty() {
            write!(f, " ({})", self.what)?;
        }
        match &self.detail {
            Some(d) => write!(f, ": {d}"),
            None => write!(f, ": {}", errno_name(self.errno)),
        }
    }
}

impl std::error::Error for JailError {}

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
        libc::ESRCH => "ESRCH",
        libc::EBADF => "EBADF",
        libc::ESTALE => "ESTALE",
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

/// Confine the calling (single-threaded) worker per `spec`
/// ([`Plan::for_worker`], then [`Plan::run`]). Returns in the confined
/// process only: with namespaces on, the original process becomes a tiny
/// reaper that waits for the confined pid-1 child and exits with its status.
///
/// # Errors
/// The first step that failed.
pub fn enter(spec: &JailSpec) -> Result<JailStatus, JailError> {
    Plan::for_worker(spec)?.run()
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
pub const ZYGOTE_CLONE_FLAGS: u64 =
    (libc::CLONE_NEWPID | libc::CLONE_PIDFD | libc::SIGCHLD).unsigned_abs() as u64;

/// [`ZYGOTE_CLONE_FLAGS`] plus a new ipc namespace: the fork flags when the
/// seccomp layer is lowered (then nothing else keeps sibling workers'
/// SysV IPC apart).
pub const ZYGOTE_CLONE_FLAGS_NO_SECCOMP: u64 =
    ZYGOTE_CLONE_FLAGS | libc::CLONE_NEWIPC.unsigned_abs() as u64;

/// What [`enter_zygote`] prepared for the workers it will fork.
#[derive(Debug)]
pub struct ZygoteJail {
    /// Each forked worker's rest of the jail ([`Plan::for_zygote_worker`]).
    worker: Plan,
    /// Whether the workers stack a filter (the seccomp layer is on).
    filtered: bool,
    /// Readable when a worker exited (SIGCHLD, blocked, via signalfd).
    sigchld: std::os::fd::OwnedFd,
}

/// Confine the calling (single-threaded) process as a *zygote*: the long-lived
/// parent of pooled executor workers. It gets every layer a worker gets —
/// user, mount (empty read-only root), net, ipc, uts and cgroup namespaces,
/// no-new-privs, a locked-down capability state, landlock, seccomp — except
/// that it stays in the supervisor's pid namespace, keeps `CAP_SYS_ADMIN`
/// in its own user namespace (to give each worker a pid namespace) and its
/// filter ([`Filter::Zygote`]) also allows forking a worker and handing it
/// over ([`Plan::for_zygote`]). Each forked worker then finishes its own
/// jail with [`ZygoteJail::confine_worker`] ([`Plan::for_zygote_worker`]).
///
/// Requires the namespaces layer (the zygote is pointless without it).
///
/// # Errors
/// The first step that failed.
pub fn enter_zygote(spec: &JailSpec) -> Result<ZygoteJail, JailError> {
    // Compiled first (it allocates): the filter each worker stacks.
    let child_filter = match spec.seccomp {
        Some(f) => Some(seccomp::compile_zygote_child(f)?),
        None => None,
    };
    let plan = Plan::for_zygote(spec)?;
    plan.run()?;
    let sigchld = plan
        .take_sigchld()
        .ok_or_else(|| JailError::at(Step::Sigchld, "signalfd", libc::EBADF))?;
    Ok(ZygoteJail {
        filtered: child_filter.is_some(),
        worker: Plan::for_zygote_worker(spec, child_filter),
        sigchld,
    })
}

impl ZygoteJail {
    /// The `clone` flags to fork a worker with: [`ZYGOTE_CLONE_FLAGS`], or
    /// [`ZYGOTE_CLONE_FLAGS_NO_SECCOMP`] when the seccomp layer is lowered
    /// (no child filter).
    pub fn clone_flags(&self) -> u64 {
        if self.filtered {
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
    /// socket already on [`crate::ipc::IPC_FD`]): run the rest of its jail
    /// ([`Plan::for_zygote_worker`]: rlimits, death with the zygote, the
    /// last capability dropped, descriptors, SIGCHLD, the worker's filter
    /// stacked last).
    ///
    /// # Errors
    /// The first step that failed.
    pub fn confine_worker(&self) -> Result<(), JailError> {
        self.worker.run().map(drop)
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
        let e = JailError::new(Step::PivotRoot, libc::EINVAL);
        assert_eq!(e.step(), "pivot_root");
        assert_eq!(e.errno(), libc::EINVAL);
        assert!(e.to_string().starts_with("pivot_root: EINVAL (22)"), "{e}");
    }

    #[test]
    fn steps_name_their_layer() {
        let layer = |s: &str| Step::from_name(s).map(Step::layer);
        assert_eq!(layer("userns"), Some(Layer::Namespaces));
        assert_eq!(layer("hide_control"), Some(Layer::Namespaces));
        assert_eq!(layer("rlimits"), Some(Layer::Rlimits));
        assert_eq!(layer("landlock"), Some(Layer::Landlock));
        assert_eq!(layer("seccomp"), Some(Layer::Seccomp));
        // Not a lowerable layer's: doctor must not blame the namespaces.
        assert_eq!(layer("no_new_privs"), Some(Layer::Base));
        assert_eq!(layer("capabilities"), Some(Layer::Base));
        assert_eq!(layer("close_fds"), Some(Layer::Base));
        assert_eq!(layer("bogus"), None);
        for s in STEPS {
            assert_eq!(Step::from_name(s.name()), Some(s));
        }
    }

    #[test]
    fn encoded_errors_survive_the_exec_pipe() {
        for s in STEPS {
            let e = JailError::at(s, "call", libc::EACCES);
            let io = e.to_io();
            // Only the raw i32 crosses the standard library's pipe.
            let back = std::io::Error::from_raw_os_error(io.raw_os_error().unwrap_or(0));
            let d = JailError::from_io(&back).expect("decodes");
            assert_eq!((d.kind(), d.errno()), (s, libc::EACCES));
            assert_eq!(d.layer(), s.layer());
        }
        assert_eq!(
            JailError::from_io(&std::io::Error::from_raw_os_error(libc::ENOENT)),
            None
        );
        let shown = JailError::explain_spawn(JailError::new(Step::Landlock, libc::EPERM).to_io());
        assert!(
            shown.to_string().starts_with("landlock: EPERM (1)"),
            "{shown}"
        );
        assert_eq!(shown.kind(), std::io::ErrorKind::PermissionDenied);
    }
}
