//! How a worker's death, or a failed start, is reported: the `ErrorInfo`
//! a run ends with (see "How a worker's death is reported" in README.md).

use crate::spawn;
use lackpy_policy::wire::{ErrorInfo, ErrorKind, Limits};

/// An `internal` error of type `type_name`.
pub(crate) fn internal(type_name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new(ErrorKind::Internal, type_name, message)
}

/// A `limit` error of type `type_name`.
pub(crate) fn limit(type_name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new(ErrorKind::Limit, type_name, message)
}

/// Why a worker died without `Done`.
pub(crate) fn classify_death(st: Option<std::process::ExitStatus>, limits: &Limits) -> ErrorInfo {
    let sig = st.as_ref().and_then(spawn::death_signal);
    match sig {
        Some(libc::SIGSYS) => internal(
            "SeccompKill",
            "worker killed by seccomp: it made a system call outside the allowlist",
        ),
        Some(libc::SIGXCPU) => limit(
            "timeout",
            format!(
                "the run exceeded its CPU time limit ({} ms wall)",
                limits.wall_ms
            ),
        ),
        // Under RLIMIT_AS a failed allocation aborts (SIGABRT) and a stack
        // that cannot grow faults (SIGSEGV); safe Rust has no other source of
        // either, so both mean the worker ran out of address space.
        Some(sig @ (libc::SIGABRT | libc::SIGSEGV)) => limit(
            "memory",
            format!(
                "the worker ran out of its address-space limit ({}; memory limit {} bytes)",
                signal_name(sig),
                limits.memory_bytes
            ),
        ),
        Some(libc::SIGXFSZ) => internal("WorkerDied", "worker tried to write a file (SIGXFSZ)"),
        _ => internal(
            "WorkerDied",
            format!(
                "the worker died without finishing the run ({})",
                describe_status(st)
            ),
        ),
    }
}

pub(crate) fn layer_of_step(step: &str) -> &'static str {
    match step {
        "rlimits" => "rlimits",
        "landlock" => "landlock",
        "seccomp" => "seccomp",
        _ => "namespaces",
    }
}

pub(crate) fn describe_status(st: Option<std::process::ExitStatus>) -> String {
    match st {
        None => "status unknown".into(),
        Some(s) => match spawn::death_signal(&s) {
            Some(sig) => format!("killed by signal {sig} ({})", signal_name(sig)),
            None => format!("exit status {}", s.code().unwrap_or(-1)),
        },
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGBUS => "SIGBUS",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => "signal",
    }
}
