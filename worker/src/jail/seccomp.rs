//! The seccomp allowlists, as commented data, and their installation.
//!
//! One table per filter: each row is (syscall, argument condition, why it
//! is needed). Everything not listed kills the whole process
//! (`SECCOMP_RET_KILL_PROCESS`); the supervisor reports a SIGSYS death as a
//! seccomp kill. The inferencer's filter is the executor's plus the rows of
//! [`INFERENCER_EXTRAS`], so its extra reach is visible in one place.
//!
//! The executor list was found empirically (strace of a jailed worker
//! running the interpreter and tool calls) and is checked both ways by
//! tests: in-process with an `Errno` mismatch action, and end to end by the
//! probe role.

use super::{JailError, Step};
use crate::ipc::IPC_FD;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// A seccomp failure (no errno: seccompiler's error says why).
fn seccomp_err(e: impl std::fmt::Display) -> JailError {
    JailError::detail(Step::Seccomp, e.to_string())
}

/// Which allowlist to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Executor workers: compute and talk on the IPC socket, nothing else.
    Executor,
    /// Inferencer workers: the executor's list plus one outbound TCP connection.
    Inferencer,
    /// The zygote that forks executors: the executor's list plus what
    /// forking and handing over a worker needs ([`ZYGOTE_EXTRAS`]). Its
    /// children stack [`compile_zygote_child`] on it before serving, which
    /// takes the extras away again.
    Zygote,
}

impl Filter {
    /// Name used in the jail spec.
    pub fn name(self) -> &'static str {
        match self {
            Filter::Executor => "executor",
            Filter::Inferencer => "inferencer",
            Filter::Zygote => "zygote",
        }
    }

    /// Inverse of [`Filter::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "executor" => Some(Filter::Executor),
            "inferencer" => Some(Filter::Inferencer),
            "zygote" => Some(Filter::Zygote),
            _ => None,
        }
    }
}

/// A condition on a syscall's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cond {
    /// Any arguments.
    Any,
    /// Argument 0 is the IPC socket.
    IpcFd,
    /// Argument 0 is stderr.
    Stderr,
    /// Argument 2 (`prot`) does not contain `PROT_EXEC`: no new executable memory.
    NoExec,
    /// Argument 0 is our own pid (tgkill for `abort()`).
    OwnPid,
    /// Argument 1 is `F_GETFD` (fcntl that only reads a descriptor's flags).
    GetFd,
    /// Argument 1 (the request) is `FIONBIO`: only toggling non-blocking mode.
    Fionbio,
    /// Argument 0 (clone flags) is exactly [`super::ZYGOTE_CLONE_FLAGS`].
    CloneWorker,
    /// Argument 0 (the prctl option) is this value.
    PrctlOption(i32),
    /// Argument 0 is pid 1 (tgkill by a zygote's worker: pid 1 of its namespace).
    Pid1,
}

/// One allowlist row.
#[derive(Debug, Clone, Copy)]
pub struct Allow {
    /// Syscall name (for humans and tests).
    pub name: &'static str,
    /// Syscall number on this architecture.
    pub nr: i64,
    /// Argument condition.
    pub cond: Cond,
    /// Who needs it.
    pub why: &'static str,
}

const fn row(name: &'static str, nr: i64, cond: Cond, why: &'static str) -> Allow {
    Allow {
        name,
        nr,
        cond,
        why,
    }
}

/// What an executor worker needs after the jail is in place.
#[rustfmt::skip]
pub const EXECUTOR: &[Allow] = &[
    row("recvmsg",         libc::SYS_recvmsg,         Cond::IpcFd,  "receive frames (MSG_TRUNC detection)"),
    row("sendto",          libc::SYS_sendto,          Cond::IpcFd,  "send frames (libc send())"),
    row("write",           libc::SYS_write,           Cond::Stderr, "panic messages and LACKPY_LOG diagnostics"),
    row("mmap",            libc::SYS_mmap,            Cond::NoExec, "allocator: large blocks (never PROT_EXEC)"),
    row("munmap",          libc::SYS_munmap,          Cond::Any,    "allocator: free large blocks"),
    row("mremap",          libc::SYS_mremap,          Cond::Any,    "allocator: realloc of large blocks"),
    row("mprotect",        libc::SYS_mprotect,        Cond::NoExec, "allocator: heap arenas (never PROT_EXEC)"),
    row("brk",             libc::SYS_brk,             Cond::Any,    "allocator: main heap"),
    row("madvise",         libc::SYS_madvise,         Cond::Any,    "allocator: return freed pages"),
    row("futex",           libc::SYS_futex,           Cond::Any,    "std locks (stdout, once-cells)"),
    row("getrandom",       libc::SYS_getrandom,       Cond::Any,    "HashMap seeds (std RandomState)"),
    row("clock_gettime",   libc::SYS_clock_gettime,   Cond::Any,    "Instant::now when the vDSO falls back"),
    row("sched_yield",     libc::SYS_sched_yield,     Cond::Any,    "spin loops in std/allocator"),
    row("rt_sigreturn",    libc::SYS_rt_sigreturn,    Cond::Any,    "return from the stack-overflow handler"),
    row("rt_sigprocmask",  libc::SYS_rt_sigprocmask,  Cond::Any,    "abort() masks signals"),
    row("rt_sigaction",    libc::SYS_rt_sigaction,    Cond::Any,    "stack-overflow handler resets SIGSEGV"),
    row("sigaltstack",     libc::SYS_sigaltstack,     Cond::Any,    "std's stack-overflow handler"),
    row("getpid",          libc::SYS_getpid,          Cond::Any,    "abort() raises SIGABRT at itself"),
    row("gettid",          libc::SYS_gettid,          Cond::Any,    "abort() raises SIGABRT at itself"),
    row("tgkill",          libc::SYS_tgkill,          Cond::OwnPid, "abort() raises SIGABRT at itself (own pid only)"),
    row("close",           libc::SYS_close,           Cond::Any,    "dropping descriptors at exit"),
    row("fcntl",           libc::SYS_fcntl,           Cond::GetFd,  "std's debug check when dropping an OwnedFd (F_GETFD only)"),
    row("exit",            libc::SYS_exit,            Cond::Any,    "thread exit"),
    row("exit_group",      libc::SYS_exit_group,      Cond::Any,    "process exit"),
    row("restart_syscall", libc::SYS_restart_syscall, Cond::Any,    "kernel restarts an interrupted call"),
];

/// What an inferencer needs on top of [`EXECUTOR`]: one HTTP connection to
/// the model endpoint (landlock restricts connect to its port).
#[rustfmt::skip]
pub const INFERENCER_EXTRAS: &[Allow] = &[
    row("socket",      libc::SYS_socket,     Cond::Any, "TCP socket to the model endpoint"),
    row("connect",     libc::SYS_connect,    Cond::Any, "connect to the endpoint (landlock: one port)"),
    row("read",        libc::SYS_read,       Cond::Any, "HTTP response"),
    row("write(any)",  libc::SYS_write,      Cond::Any, "HTTP request"),
    row("sendto(any)", libc::SYS_sendto,     Cond::Any, "HTTP request"),
    row("recvfrom",    libc::SYS_recvfrom,   Cond::Any, "HTTP response"),
    row("poll",        libc::SYS_poll,       Cond::Any, "request timeouts"),
    row("ppoll",       libc::SYS_ppoll,      Cond::Any, "request timeouts"),
    row("setsockopt",  libc::SYS_setsockopt, Cond::Any, "TCP_NODELAY, timeouts"),
    row("getsockopt",  libc::SYS_getsockopt, Cond::Any, "SO_ERROR after non-blocking connect"),
    row("fcntl(any)",  libc::SYS_fcntl,      Cond::Any, "non-blocking connect"),
    row("ioctl(FIONBIO)", libc::SYS_ioctl,   Cond::Fionbio, "std's TcpStream::connect_timeout sets and clears non-blocking mode"),
    row("clock_nanosleep", libc::SYS_clock_nanosleep, Cond::Any, "backoff pause between retries of the model call"),
];

/// What the zygote needs on top of [`EXECUTOR`]: fork a worker into its
/// own pid namespace, hand its descriptors over, reap it and
/// report its status. Everything else stays denied; in particular no
/// `execve`, no `clone3` and no clone flag combination but the one it uses.
#[rustfmt::skip]
pub const ZYGOTE_EXTRAS: &[Allow] = &[
    row("clone",          libc::SYS_clone,          Cond::CloneWorker, "fork one worker (new pid namespace, pidfd) — exactly these flags"),
    row("sendmsg",        libc::SYS_sendmsg,        Cond::IpcFd, "answer the supervisor with the worker's pid and pidfd"),
    row("wait4",          libc::SYS_wait4,          Cond::Any, "reap exited workers"),
    row("read",           libc::SYS_read,           Cond::Any, "drain the SIGCHLD signalfd"),
    row("write(any)",     libc::SYS_write,          Cond::Any, "report a reaped worker's status on its status pipe"),
    row("poll",           libc::SYS_poll,           Cond::Any, "wait for a request or a child's exit"),
    row("ppoll",          libc::SYS_ppoll,          Cond::Any, "wait for a request or a child's exit"),
    row("dup3",           libc::SYS_dup3,           Cond::Any, "child: its socket becomes fd 3"),
    row("close_range",    libc::SYS_close_range,    Cond::Any, "child: close every other descriptor"),
    row("prlimit64",      libc::SYS_prlimit64,      Cond::Any, "child: per-worker rlimits"),
    row("capset",         libc::SYS_capset,         Cond::Any, "child: drop the last capabilities"),
    row("prctl(PDEATHSIG)", libc::SYS_prctl,        Cond::PrctlOption(libc::PR_SET_PDEATHSIG), "child: die with the zygote"),
    row("prctl(NO_NEW_PRIVS)", libc::SYS_prctl,     Cond::PrctlOption(libc::PR_SET_NO_NEW_PRIVS), "child: seccompiler sets it before installing"),
    row("seccomp",        libc::SYS_seccomp,        Cond::Any, "child: install the executor filter"),
    row("tgkill(pid 1)",  libc::SYS_tgkill,         Cond::Pid1, "child: abort() raises SIGABRT at itself, pid 1 of its namespace (both filters judge it)"),
];

/// The rows of a filter.
pub fn table(filter: Filter) -> Vec<Allow> {
    let mut rows = EXECUTOR.to_vec();
    match filter {
        Filter::Executor => {}
        Filter::Inferencer => rows.extend_from_slice(INFERENCER_EXTRAS),
        Filter::Zygote => rows.extend_from_slice(ZYGOTE_EXTRAS),
    }
    rows
}

fn arch() -> TargetArch {
    #[cfg(target_arch = "aarch64")]
    {
        TargetArch::aarch64
    }
    #[cfg(not(target_arch = "aarch64"))]
    {
        TargetArch::x86_64
    }
}

/// `FIONBIO` as a filter operand (its C type differs between targets).
#[allow(clippy::unnecessary_cast)]
const FIONBIO: u64 = libc::FIONBIO as u64;

/// What `cond` tests: (argument, width, comparison, operand); `None` for
/// [`Cond::Any`]. `own_pid` is the pid [`Cond::OwnPid`] stands for.
fn test_of(cond: Cond, own_pid: u64) -> Option<(u8, SeccompCmpArgLen, SeccompCmpOp, u64)> {
    use SeccompCmpArgLen::{Dword, Qword};
    use SeccompCmpOp::{Eq, MaskedEq};
    Some(match cond {
        Cond::Any => return None,
        Cond::IpcFd => (0, Dword, Eq, u64::from(IPC_FD.unsigned_abs())),
        Cond::Stderr => (0, Dword, Eq, 2),
        Cond::NoExec => (2, Dword, MaskedEq(libc::PROT_EXEC as u64), 0),
        Cond::Fionbio => (1, Dword, Eq, FIONBIO),
        Cond::OwnPid => (0, Dword, Eq, own_pid),
        Cond::CloneWorker => (0, Qword, Eq, super::ZYGOTE_CLONE_FLAGS),
        Cond::Pid1 => (0, Dword, Eq, 1),
        Cond::PrctlOption(op) => (0, Dword, Eq, u64::from(op.unsigned_abs())),
        Cond::GetFd => (1, Dword, Eq, libc::F_GETFD as u64),
    })
}

fn rule(cond: Cond, own_pid: u64) -> Result<Option<SeccompRule>, seccompiler::BackendError> {
    let Some((arg, len, op, value)) = test_of(cond, own_pid) else {
        return Ok(None);
    };
    let c = SeccompCondition::new(arg, len, op, value)?;
    Ok(Some(SeccompRule::new(vec![c])?))
}

/// Compile `filter` with the given action for anything not allowed.
///
/// # Errors
/// a [`JailError`] of step `seccomp` if seccompiler rejects the table.
pub fn compile(filter: Filter, mismatch: SeccompAction) -> Result<BpfProgram, JailError> {
    // SAFETY: getpid cannot fail.
    let own_pid = unsafe { libc::getpid() }.unsigned_abs();
    compile_for_pid(filter, own_pid, mismatch)
}

/// [`compile`] for a process whose pid will be `own_pid` (the zygote
/// compiles its children's filter once: each child is pid 1 of its own
/// pid namespace).
///
/// # Errors
/// a [`JailError`] of step `seccomp` if seccompiler rejects the table.
pub fn compile_for_pid(
    filter: Filter,
    own_pid: u32,
    mismatch: SeccompAction,
) -> Result<BpfProgram, JailError> {
    hot_first(rules_of(filter, own_pid)?, mismatch)
}

/// seccompiler's rules for `filter`'s table, one entry per syscall.
fn rules_of(filter: Filter, own_pid: u32) -> Result<BTreeMap<i64, Vec<SeccompRule>>, JailError> {
    let err = |e: &dyn std::fmt::Display| seccomp_err(e.to_string());
    let own_pid = u64::from(own_pid);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // A syscall with any unconditional row is allowed outright.
    let mut unconditional = Vec::new();
    for a in table(filter) {
        match rule(a.cond, own_pid).map_err(|e| err(&e))? {
            None => unconditional.push(a.nr),
            Some(r) => rules.entry(a.nr).or_default().push(r),
        }
    }
    for nr in unconditional {
        rules.insert(nr, Vec::new());
    }
    Ok(rules)
}

/// The syscalls a worker makes on every tool call (or allocation) whose
/// rows test an argument, most frequent first: their blocks go first in
/// a compiled filter. Why: the kernel skips the filters for a syscall
/// they allow whatever its arguments (its per-syscall action cache), but
/// runs them for these, and seccompiler's chain is in syscall-number
/// order, so a worker's `recvmsg` (the receive and every readiness probe)
/// passed 40 instructions of other syscalls' tests in the zygote's filter
/// first. Order only: each syscall has one block, so which block comes
/// first decides nothing but the time it takes.
const HOT: &[i64] = &[
    libc::SYS_recvmsg,
    libc::SYS_sendto,
    libc::SYS_mmap,
    libc::SYS_mprotect,
];

/// What seccompiler would compile from `rules` (mismatch: `mismatch`,
/// match: allow), with the [`HOT`] syscalls' blocks first and the rest in
/// seccompiler's order.
///
/// seccompiler emits the architecture check, a load of the syscall
/// number, then per syscall one self-contained block (`jeq nr`, its rule
/// chain and returns, every jump relative and inside the block; a
/// different number falls through to the next block), then the mismatch
/// return. Each block is compiled alone here and the blocks concatenated
/// in the new order; the unit tests check the result decides every
/// (syscall, arguments) exactly as seccompiler's own chain does.
fn hot_first(
    mut rules: BTreeMap<i64, Vec<SeccompRule>>,
    mismatch: SeccompAction,
) -> Result<BpfProgram, JailError> {
    /// Architecture check (3) and the load of the syscall number (1).
    const HEAD: usize = 4;
    let err = |e: &dyn std::fmt::Display| seccomp_err(e.to_string());
    let mut order: Vec<i64> = HOT
        .iter()
        .copied()
        .filter(|nr| rules.contains_key(nr))
        .collect();
    order.extend(rules.keys().copied().filter(|nr| !HOT.contains(nr)));
    if order.is_empty() {
        let f = SeccompFilter::new(rules, mismatch, SeccompAction::Allow, arch())
            .map_err(|e| err(&e))?;
        return BpfProgram::try_from(f).map_err(|e| err(&e));
    }
    let mut out: BpfProgram = Vec::new();
    let mut tail = None;
    for nr in order {
        let chain = rules.remove(&nr).unwrap_or_default();
        let one = SeccompFilter::new(
            BTreeMap::from([(nr, chain)]),
            mismatch.clone(),
            SeccompAction::Allow,
            arch(),
        )
        .map_err(|e| err(&e))?;
        let prog = BpfProgram::try_from(one).map_err(|e| err(&e))?;
        let (Some(head), Some((last, block))) = (
            prog.get(..HEAD),
            prog.get(HEAD..).and_then(<[_]>::split_last),
        ) else {
            return Err(seccomp_err(
                "seccompiler emitted an unexpectedly short filter",
            ));
        };
        if out.is_empty() {
            out.extend_from_slice(head);
            tail = Some(last.clone());
        } else if out.get(..HEAD) != Some(head) || tail.as_ref() != Some(last) {
            return Err(seccomp_err(
                "seccompiler's filters differ in more than their syscall blocks",
            ));
        }
        out.extend_from_slice(block);
    }
    out.extend(tail);
    // The kernel's BPF_MAXINSNS (seccompiler applies the same bound).
    if out.len() >= 4096 {
        return Err(seccomp_err(format!(
            "a filter of {} instructions is too long",
            out.len()
        )));
    }
    Ok(out)
}

/// The filter a worker forked by the zygote stacks on the zygote's own
/// ([`Filter::Zygote`], which it inherits): a short deny-list that kills
/// exactly what the zygote may do and `target` may not, and lets the rest
/// through to the inherited filter. The two together allow what `target`
/// compiled for pid 1 allows, row for row: a syscall only the zygote needs
/// is killed outright, and one the zygote allows more widely (`write` on
/// any descriptor, `tgkill` of its children) is killed unless `target`'s
/// own condition holds.
///
/// Why not install `target` itself on top, as an exec'd worker does: the
/// kernel converts, checks and JIT-compiles a filter, and builds its
/// per-syscall cache by running it for every syscall number, at install;
/// for the full allowlist that was ~7 % of a pooled worker's CPU.
/// This filter is a fraction of the size, and every syscall the worker
/// makes still passes both.
///
/// # Errors
/// a [`JailError`] of step `seccomp` if a row's condition cannot be negated (a table
/// change the unit tests catch) or seccompiler rejects the result.
pub fn compile_zygote_child(target: Filter) -> Result<BpfProgram, JailError> {
    compile_zygote_child_with(target, SeccompAction::KillProcess)
}

/// [`compile_zygote_child`] with the given action for what it denies.
///
/// Emitted as classic BPF by hand rather than through seccompiler: the
/// kernel's cost of installing a filter grows with its length (conversion,
/// JIT, the per-syscall cache), and on this project's 2-core VM a
/// fork + install + exit measured ~2.5 µs per instruction on top of
/// ~70 µs fixed. seccompiler spends a 64-bit compare and a jump table
/// entry on every row (79 instructions here); this is one `jeq` per denied
/// syscall plus the few argument tests (~25).
fn compile_zygote_child_with(target: Filter, deny: SeccompAction) -> Result<BpfProgram, JailError> {
    let zygote = table(Filter::Zygote);
    // The worker is pid 1 of its own namespace.
    let normalize = |c: Cond| if c == Cond::OwnPid { Cond::Pid1 } else { c };
    let wanted = table(target);
    if let Some(a) = wanted.iter().find(|a| !zygote.iter().any(|z| z.nr == a.nr)) {
        return Err(seccomp_err(format!(
            "{} is not in the zygote's filter, so no worker of it can have it",
            a.name
        )));
    }
    // Per syscall the zygote may make: killed outright (no tests), let
    // through to the inherited filter (absent), or killed unless one of
    // `target`'s argument tests holds.
    let mut denied: BTreeMap<u32, Vec<ArgTest>> = BTreeMap::new();
    let mut nrs: Vec<i64> = zygote.iter().map(|a| a.nr).collect();
    nrs.sort_unstable();
    nrs.dedup();
    for nr in nrs {
        let nr32 = u32::try_from(nr)
            .map_err(|_| seccomp_err(format!("syscall number {nr} out of range")))?;
        let mut allowed: Vec<Cond> = zygote
            .iter()
            .filter(|a| a.nr == nr)
            .map(|a| a.cond)
            .collect();
        let mut want: Vec<Cond> = wanted
            .iter()
            .filter(|a| a.nr == nr)
            .map(|a| normalize(a.cond))
            .collect();
        allowed.sort_unstable();
        allowed.dedup();
        want.sort_unstable();
        want.dedup();
        if want.is_empty() {
            denied.insert(nr32, Vec::new());
        } else if want.contains(&Cond::Any) || want == allowed {
            // The inherited filter already judges it exactly.
        } else {
            let tests = want
                .into_iter()
                .map(|c| {
                    test_of(c, 1)
                        .ok_or_else(|| format!("{c:?} has no test"))
                        .and_then(arg_test)
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(seccomp_err)?;
            denied.insert(nr32, tests);
        }
    }
    // The hot syscalls this filter lets through go first, before the
    // denied ones' tests (it allows them either way; see [`HOT`]).
    let fast: Vec<u32> = HOT
        .iter()
        .filter_map(|&nr| u32::try_from(nr).ok())
        .filter(|nr| !denied.contains_key(nr))
        .collect();
    emit_deny_list(&denied, &fast, u32::from(deny)).map_err(seccomp_err)
}

/// One argument test of a deny-list entry (the syscall is let through
/// when any of its tests holds).
#[derive(Debug, Clone, Copy)]
struct ArgTest {
    arg: u8,
    /// Compare the whole 64-bit argument (else only its low 32 bits).
    qword: bool,
    /// Mask applied to the low word before comparing.
    mask: Option<u32>,
    value: u64,
}

fn arg_test(
    (arg, len, op, value): (u8, SeccompCmpArgLen, SeccompCmpOp, u64),
) -> Result<ArgTest, String> {
    let qword = matches!(len, SeccompCmpArgLen::Qword);
    let mask = match op {
        SeccompCmpOp::Eq => None,
        SeccompCmpOp::MaskedEq(m) if !qword => {
            Some(u32::try_from(m).map_err(|_| format!("mask {m:#x} wider than 32 bits"))?)
        }
        other => return Err(format!("cannot emit the argument test {other:?}")),
    };
    if arg > 5 || (!qword && value > u64::from(u32::MAX)) {
        return Err(format!(
            "argument test out of range: arg {arg}, value {value:#x}"
        ));
    }
    Ok(ArgTest {
        arg,
        qword,
        mask,
        value,
    })
}

/// Classic BPF for a deny-list: foreign architectures and the listed
/// syscalls get `deny_ret` (the latter unless one of their tests holds),
/// everything else is allowed (and judged by the filters beneath). The
/// syscalls in `fast` (none of them denied) are tested first, so the
/// frequent ones are let through without passing every denied number.
fn emit_deny_list(
    denied: &BTreeMap<u32, Vec<ArgTest>>,
    fast: &[u32],
    deny_ret: u32,
) -> Result<BpfProgram, String> {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20;
    const ALU_AND_K: u16 = 0x54;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const ALLOW: u32 = 0x7fff_0000;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;
    #[cfg(not(target_arch = "aarch64"))]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    /// A jump target: the next instruction, the shared allow or deny
    /// return, or the start of syscall `n`'s tests.
    #[derive(Clone, Copy, PartialEq)]
    enum To {
        Next,
        /// Past the next `n` instructions.
        Skip(usize),
        Allow,
        Deny,
        Tests(u32),
    }
    enum Ins {
        Ld(u32),
        And(u32),
        Jeq(u32, To, To),
        Ret(u32),
        /// Where syscall `n`'s tests start (emits nothing).
        Mark(u32),
        /// Where the shared returns are (emits nothing).
        AllowHere,
        DenyHere,
    }
    let arg_lo = |a: u8| 16 + 8 * u32::from(a);
    let mut code = vec![
        Ins::Ld(4),
        Ins::Jeq(AUDIT_ARCH, To::Next, To::Deny),
        Ins::Ld(0),
    ];
    for &nr in fast {
        if denied.contains_key(&nr) {
            return Err(format!("syscall {nr} is both denied and let through first"));
        }
        code.push(Ins::Jeq(nr, To::Allow, To::Next));
    }
    for (&nr, tests) in denied {
        let to = if tests.is_empty() {
            To::Deny
        } else {
            To::Tests(nr)
        };
        code.push(Ins::Jeq(nr, to, To::Next));
    }
    code.push(Ins::Ret(ALLOW));
    for (&nr, tests) in denied.iter().filter(|(_, t)| !t.is_empty()) {
        code.push(Ins::Mark(nr));
        for t in tests {
            code.push(Ins::Ld(arg_lo(t.arg)));
            if let Some(m) = t.mask {
                code.push(Ins::And(m));
            }
            let lo = (t.value & 0xffff_ffff) as u32;
            if t.qword {
                // Low word equal, then high word equal: allowed. A low
                // word that differs skips the high-word test (2 ahead).
                code.push(Ins::Jeq(lo, To::Next, To::Skip(2)));
                code.push(Ins::Ld(arg_lo(t.arg) + 4));
                code.push(Ins::Jeq((t.value >> 32) as u32, To::Allow, To::Next));
            } else {
                code.push(Ins::Jeq(lo, To::Allow, To::Next));
            }
        }
        code.push(Ins::Ret(deny_ret));
    }
    code.push(Ins::DenyHere);
    code.push(Ins::Ret(deny_ret));
    code.push(Ins::AllowHere);
    code.push(Ins::Ret(ALLOW));
    // Resolve: positions of the emitted instructions and of the marks.
    let mut pos = Vec::with_capacity(code.len());
    let mut n = 0usize;
    for ins in &code {
        pos.push(n);
        if !matches!(ins, Ins::Mark(_) | Ins::AllowHere | Ins::DenyHere) {
            n += 1;
        }
    }
    let target = |to: To| -> Option<usize> {
        code.iter().zip(&pos).find_map(|(ins, &p)| match (ins, to) {
            (Ins::AllowHere, To::Allow) | (Ins::DenyHere, To::Deny) => Some(p),
            (Ins::Mark(m), To::Tests(t)) if *m == t => Some(p),
            _ => None,
        })
    };
    let mut out = Vec::with_capacity(n);
    for (i, ins) in code.iter().enumerate() {
        let here = pos[i];
        let off = |to: To| -> Result<u8, String> {
            let t = match to {
                To::Next => here + 1,
                To::Skip(k) => here + 1 + k,
                other => target(other).ok_or("unresolved jump")?,
            };
            t.checked_sub(here + 1)
                .and_then(|d| u8::try_from(d).ok())
                .ok_or_else(|| "jump out of range".to_string())
        };
        let f = |code: u16, jt: u8, jf: u8, k: u32| sock_filter { code, jt, jf, k };
        match *ins {
            Ins::Ld(o) => out.push(f(LD_W_ABS, 0, 0, o)),
            Ins::And(m) => out.push(f(ALU_AND_K, 0, 0, m)),
            Ins::Ret(k) => out.push(f(RET_K, 0, 0, k)),
            Ins::Jeq(k, t, e) => out.push(f(JEQ_K, off(t)?, off(e)?, k)),
            Ins::Mark(_) | Ins::AllowHere | Ins::DenyHere => {}
        }
    }
    Ok(out)
}

/// The reaper's allowlist: it waits for the jailed pid 1 and exits.
#[rustfmt::skip]
pub const REAPER: &[Allow] = &[
    row("wait4",           libc::SYS_wait4,           Cond::Any, "waitpid for the jailed pid 1"),
    row("exit_group",      libc::SYS_exit_group,      Cond::Any, "exit with the child's status"),
    row("exit",            libc::SYS_exit,            Cond::Any, "thread exit"),
    row("rt_sigreturn",    libc::SYS_rt_sigreturn,    Cond::Any, "signal return"),
    row("restart_syscall", libc::SYS_restart_syscall, Cond::Any, "wait4 restarted after a signal"),
];

/// Compile [`REAPER`] (kill on anything else).
///
/// # Errors
/// a [`JailError`] of step `seccomp` if seccompiler rejects it.
pub fn compile_reaper() -> Result<BpfProgram, JailError> {
    let rules: BTreeMap<i64, Vec<SeccompRule>> =
        REAPER.iter().map(|a| (a.nr, Vec::new())).collect();
    let f = SeccompFilter::new(
        rules,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        arch(),
    )
    .map_err(|e| seccomp_err(e.to_string()))?;
    BpfProgram::try_from(f).map_err(|e| seccomp_err(e.to_string()))
}

/// Install `filter` on the calling thread; anything else kills the process.
///
/// # Errors
/// a [`JailError`] of step `seccomp` when compiling or `seccomp(2)` fails.
pub fn install(filter: Filter) -> Result<(), JailError> {
    let prog = compile(filter, SeccompAction::KillProcess)?;
    seccompiler::apply_filter(&prog).map_err(|e| seccomp_err(e.to_string()))
}

#[cfg(test)]
#[allow(clippy::undocumented_unsafe_blocks)]
mod tests {
    use super::*;

    const DENIED: i32 = 1000;

    /// Run `f` in a fresh thread under the executor filter with an Errno
    /// mismatch action (the seccompiler way), so the test survives denials.
    fn under_filter<T: Send + 'static>(
        filter: Filter,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        std::thread::spawn(move || {
            let prog = compile(filter, SeccompAction::Errno(DENIED as u32)).unwrap();
            seccompiler::apply_filter(&prog).unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    #[test]
    fn executor_denies_world_access() {
        let results = under_filter(Filter::Executor, || {
            let mut r = Vec::new();
            let open = unsafe { libc::open(c"/etc/passwd".as_ptr(), libc::O_RDONLY) };
            r.push(("open", open, errno()));
            let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
            r.push(("socket", sock, errno()));
            let w = unsafe { libc::write(1, b"x".as_ptr().cast(), 1) };
            r.push(("write(1)", i32::try_from(w).unwrap_or(0), errno()));
            let m = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    4096,
                    libc::PROT_READ | libc::PROT_EXEC,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            r.push((
                "mmap(exec)",
                if m == libc::MAP_FAILED { -1 } else { 0 },
                errno(),
            ));
            let k = unsafe { libc::kill(1, 0) };
            r.push(("kill", k, errno()));
            let p = unsafe { libc::syscall(libc::SYS_ptrace, 0, 0, 0, 0) };
            r.push(("ptrace", i32::try_from(p).unwrap_or(0), errno()));
            let u = unsafe { libc::unshare(libc::CLONE_NEWUSER) };
            r.push(("unshare", u, errno()));
            let e = unsafe { libc::syscall(libc::SYS_execve, c"/bin/true".as_ptr(), 0, 0) };
            r.push(("execve", i32::try_from(e).unwrap_or(0), errno()));
            r
        });
        for (name, rc, e) in results {
            assert_eq!((name, rc, e), (name, -1, DENIED), "{name} was not denied");
        }
    }

    #[test]
    fn executor_allows_what_the_interpreter_needs() {
        under_filter(Filter::Executor, || {
            // Allocation, including growth that goes through mmap/mremap.
            let mut v: Vec<u8> = Vec::new();
            for i in 0..(4u32 << 20) {
                v.push(i.to_le_bytes()[0]);
            }
            let mut m = std::collections::HashMap::new();
            m.insert("k", v.len());
            assert_eq!(m["k"], 4 << 20);
            let w = unsafe { libc::write(2, b"".as_ptr().cast(), 0) };
            assert_eq!(w, 0);
            let _ = std::time::Instant::now();
        });
    }

    #[test]
    fn inferencer_extras_are_visible_and_allowed() {
        assert!(INFERENCER_EXTRAS.iter().any(|a| a.name == "connect"));
        assert!(!EXECUTOR
            .iter()
            .any(|a| a.nr == libc::SYS_connect || a.nr == libc::SYS_socket));
        let fd = under_filter(Filter::Inferencer, || unsafe {
            libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0)
        });
        assert!(fd >= 0);
        unsafe { libc::close(fd) };
    }

    /// A classic-BPF evaluator for what seccompiler emits, over
    /// `struct seccomp_data` (nr, arch, ip, args[6]).
    fn eval(prog: &BpfProgram, nr: u32, args: [u64; 6]) -> u32 {
        eval_steps(prog, nr, args).0
    }

    /// [`eval`], with how many instructions ran.
    fn eval_steps(prog: &BpfProgram, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&0xC000_003Eu32.to_ne_bytes()); // AUDIT_ARCH_X86_64
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut a, mut pc, mut steps) = (0u32, 0usize, 0usize);
        loop {
            let ins = &prog[pc];
            pc += 1;
            steps += 1;
            let k = ins.k;
            match ins.code {
                0x20 => {
                    let o = k as usize;
                    a = u32::from_ne_bytes(data[o..o + 4].try_into().unwrap());
                }
                0x54 => a &= k,
                0x05 => pc += k as usize,
                0x15 | 0x25 | 0x35 | 0x45 => {
                    let t = match ins.code {
                        0x15 => a == k,
                        0x25 => a > k,
                        0x35 => a >= k,
                        _ => a & k != 0,
                    };
                    pc += if t { ins.jt } else { ins.jf } as usize;
                }
                0x06 => return (k, steps),
                c => panic!("unexpected BPF opcode {c:#x}"),
            }
        }
    }

    /// Argument values that hit every condition of the tables.
    fn probe_values() -> [u64; 13] {
        [
            0u64,
            1,
            2,
            3,
            4242,
            libc::F_GETFD as u64,
            FIONBIO,
            libc::PROT_READ as u64,
            (libc::PROT_READ | libc::PROT_EXEC) as u64,
            super::super::ZYGOTE_CLONE_FLAGS,
            libc::PR_SET_PDEATHSIG as u64,
            libc::PR_SET_NO_NEW_PRIVS as u64,
            u64::MAX,
        ]
    }

    /// `a` and `b` return the same action for every syscall number, with
    /// argument values that hit every condition; returns how many inputs.
    fn same_decisions(a: &BpfProgram, b: &BpfProgram) -> usize {
        let values = probe_values();
        let mut checked = 0;
        for nr in 0..460u32 {
            for &v0 in &values {
                for &v1 in &values {
                    for &v2 in &[0u64, libc::PROT_EXEC as u64, 3, libc::F_GETFD as u64] {
                        let args = [v0, v1, v2, 0, 0, 0];
                        assert_eq!(
                            eval(a, nr, args),
                            eval(b, nr, args),
                            "syscall {nr} args {args:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        checked
    }

    /// Putting the hot syscalls first changes no decision: every filter
    /// decides every (syscall, arguments) as seccompiler's own chain of
    /// the same rules (in syscall-number order) does, for both mismatch
    /// actions, with the same number of instructions.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn hot_first_decides_as_seccompiler_does() {
        for filter in [Filter::Executor, Filter::Inferencer, Filter::Zygote] {
            for mismatch in [
                SeccompAction::KillProcess,
                SeccompAction::Errno(DENIED as u32),
            ] {
                let ours = compile_for_pid(filter, 4242, mismatch.clone()).unwrap();
                let theirs = BpfProgram::try_from(
                    SeccompFilter::new(
                        rules_of(filter, 4242).unwrap(),
                        mismatch,
                        SeccompAction::Allow,
                        arch(),
                    )
                    .unwrap(),
                )
                .unwrap();
                assert_eq!(ours.len(), theirs.len(), "{filter:?}");
                assert_ne!(ours, theirs, "{filter:?}: nothing was reordered");
                assert!(same_decisions(&ours, &theirs) > 100_000);
            }
        }
    }

    /// The child filter's fast path changes no decision either.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn deny_list_fast_path_decides_as_without() {
        let with = compile_zygote_child(Filter::Executor).unwrap();
        let zygote = table(Filter::Zygote);
        // The same deny-list without the fast path: rebuilt from `with`
        // by dropping the `jeq nr → allow` entries right after the load.
        let fast = HOT
            .iter()
            .filter(|&&nr| zygote.iter().any(|z| z.nr == nr))
            .count();
        assert!(fast >= 2);
        let mut without: BpfProgram = with[..3].to_vec();
        without.extend_from_slice(&with[3 + fast..]);
        // Jumps are relative and none crosses the removed entries but
        // theirs, so the rest of the program is unchanged.
        for ins in &with[3..3 + fast] {
            assert_eq!(ins.code, 0x15, "not a jeq");
        }
        assert!(same_decisions(&with, &without) > 100_000);
    }

    /// A worker's per-call syscalls are judged within a few instructions
    /// by each of its filters (they passed 18–42 before).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn hot_syscalls_are_judged_first() {
        const ALLOW: u32 = 0x7fff_0000;
        let progs = [
            (
                "executor",
                compile_for_pid(Filter::Executor, 1, SeccompAction::KillProcess).unwrap(),
            ),
            (
                "zygote",
                compile_for_pid(Filter::Zygote, 4242, SeccompAction::KillProcess).unwrap(),
            ),
            (
                "zygote child",
                compile_zygote_child(Filter::Executor).unwrap(),
            ),
        ];
        for (name, prog) in &progs {
            for (nr, args, most) in [
                (libc::SYS_recvmsg, [3u64, 0, 0x40, 0, 0, 0], 8),
                (libc::SYS_sendto, [3, 0, 0, 0x4040, 0, 0], 12),
            ] {
                let (action, steps) = eval_steps(prog, u32::try_from(nr).unwrap(), args);
                assert_eq!(action, ALLOW, "{name}: syscall {nr}");
                assert!(
                    steps <= most,
                    "{name}: syscall {nr} took {steps} instructions"
                );
            }
        }
    }

    /// The zygote's filter with the child filter stacked on it allows
    /// exactly what the executor filter compiled for pid 1 allows: every
    /// syscall number, with argument values that hit every condition.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn zygote_child_stack_equals_the_executor_filter() {
        const ALLOW: u32 = 0x7fff_0000;
        let zygote = compile_for_pid(Filter::Zygote, 4242, SeccompAction::KillProcess).unwrap();
        let child = compile_zygote_child(Filter::Executor).unwrap();
        let exec = compile_for_pid(Filter::Executor, 1, SeccompAction::KillProcess).unwrap();
        let values = probe_values();
        let mut checked = 0;
        for nr in 0..460u32 {
            for &v0 in &values {
                for &v1 in &values {
                    for &v2 in &[0u64, libc::PROT_EXEC as u64, 3] {
                        let args = [v0, v1, v2, 0, 0, 0];
                        let stacked =
                            eval(&zygote, nr, args) == ALLOW && eval(&child, nr, args) == ALLOW;
                        let alone = eval(&exec, nr, args) == ALLOW;
                        assert_eq!(stacked, alone, "syscall {nr} args {args:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 100_000);
        // And it is much smaller than the list it stands for (installing a
        // filter costs per instruction).
        assert!(
            child.len() <= 32 && child.len() * 4 < exec.len(),
            "{} vs {}",
            child.len(),
            exec.len()
        );
    }

    #[test]
    fn zygote_child_filter_denies_the_zygote_extras() {
        let results = std::thread::spawn(|| {
            let z = compile(Filter::Zygote, SeccompAction::Errno(DENIED as u32)).unwrap();
            seccompiler::apply_filter(&z).unwrap();
            let c =
                compile_zygote_child_with(Filter::Executor, SeccompAction::Errno(DENIED as u32))
                    .unwrap();
            seccompiler::apply_filter(&c).unwrap();
            let mut r = Vec::new();
            let w = unsafe { libc::write(1, b"x".as_ptr().cast(), 1) };
            r.push(("write(1)", w as i64, errno()));
            let mut b = [0u8; 1];
            let n = unsafe { libc::read(0, b.as_mut_ptr().cast(), 1) };
            r.push(("read", n as i64, errno()));
            let d = unsafe { libc::dup3(2, 100, 0) };
            r.push(("dup3", d as i64, errno()));
            let mut st = 0;
            let wt = unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) };
            r.push(("wait4", wt as i64, errno()));
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let g = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
            r.push(("prlimit64", g as i64, errno()));
            let p = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 9) };
            r.push(("prctl", p as i64, errno()));
            let cr = unsafe { libc::syscall(libc::SYS_close_range, 1000, 1001, 0) };
            r.push(("close_range", cr, errno()));
            let t = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), 0, 0) };
            r.push(("tgkill(own pid, not 1)", t, errno()));
            let sc = unsafe { libc::syscall(libc::SYS_seccomp, 0, 0, 0) };
            r.push(("seccomp", sc, errno()));
            let w2 = unsafe { libc::write(2, b"".as_ptr().cast(), 0) };
            r.push((
                "write(2) still allowed",
                if w2 == 0 { -1 } else { 0 },
                DENIED,
            ));
            r
        })
        .join()
        .unwrap();
        for (name, rc, e) in results {
            assert_eq!((name, rc, e), (name, -1, DENIED), "{name} was not denied");
        }
    }

    #[test]
    fn every_row_explains_itself() {
        for a in table(Filter::Inferencer) {
            assert!(!a.why.is_empty(), "{} has no reason", a.name);
        }
    }
}
