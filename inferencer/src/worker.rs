//! The inferencer worker role and its IPC messages.
//!
//! The worker is the `lackpy` binary re-exec'd as `__worker inferencer`,
//! jailed like an executor except that its seccomp filter is `inferencer`,
//! landlock lets it connect to one TCP port (the model endpoint's), and the
//! network namespace is kept. It receives one [`ToInferencer::Generate`]
//! (a conversation and a resolved endpoint — the host already resolved to
//! an address by the supervisor, since the jail has no resolver files),
//! makes the model call with [`crate::http::generate`], answers with
//! [`FromInferencer::Generated`], and exits. It never sees files, tools or
//! results: text in, text out.

use crate::http::{Generation, InferError, Request};
use bincode::{Decode, Encode};
use lackpy_worker::jail::JailSpec;
use lackpy_worker::role::{ipc_channel, jail_and_greet, EXIT_SETUP};

/// Version of the inferencer messages; bump when they change shape.
pub const INFERENCER_PROTOCOL: u32 = 1;

/// Supervisor → inferencer worker.
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub enum ToInferencer {
    /// Make one model call.
    Generate {
        /// Must equal [`INFERENCER_PROTOCOL`].
        protocol: u32,
        /// The call.
        request: Request,
    },
}

/// Inferencer worker → supervisor (after the `Ready` greeting).
#[derive(Debug, Clone, PartialEq, Encode, Decode)]
pub enum FromInferencer {
    /// The model's answer, or why there is none.
    Generated(Result<Generation, InferError>),
}

/// The `__worker inferencer` role: jail, greet, serve one call, exit.
/// Returns the process exit status.
pub fn role(spec: &JailSpec) -> i32 {
    let mut chan = match ipc_channel() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("lackpy inferencer worker: {msg}");
            return EXIT_SETUP;
        }
    };
    // Before the jail (which forks and installs the allowlist last): the
    // extra socket restriction below, inherited by everything after it.
    if let Err(detail) = restrict_sockets() {
        let _ = chan.send(
            &lackpy_policy::wire::FromWorker::SetupFailed {
                step: "seccomp_sockets".into(),
                errno: 0,
                detail,
            },
            None,
        );
        return EXIT_SETUP;
    }
    if jail_and_greet(&mut chan, spec).is_err() {
        return EXIT_SETUP;
    }
    let msg = match chan.recv::<ToInferencer>(None) {
        Ok(m) => m,
        Err(_) => return EXIT_SETUP,
    };
    let ToInferencer::Generate { protocol, request } = msg;
    let reply = if protocol == INFERENCER_PROTOCOL {
        crate::http::generate(&request)
    } else {
        Err(InferError::Worker(format!(
            "protocol {protocol} is not {INFERENCER_PROTOCOL}"
        )))
    };
    match chan.send(&FromInferencer::Generated(reply), None) {
        Ok(()) => 0,
        Err(_) => EXIT_SETUP,
    }
}

/// The inferencer's jail: the executor's layers, with the `inferencer`
/// seccomp filter, the host network namespace kept (the endpoint, loopback
/// included, is reached through it), and landlock allowing TCP connect to
/// `port` only. `cpu_seconds` bounds the worker's CPU time.
pub fn jail_spec(port: u16, cpu_seconds: u64) -> JailSpec {
    JailSpec {
        namespaces: true,
        rlimits: true,
        landlock: true,
        seccomp: Some(lackpy_worker::jail::Filter::Inferencer),
        keep_net: true,
        connect_port: Some(port),
        // Why 1 GiB: TLS and JSON of a bounded answer need far less; the
        // answer itself is capped by max_response_bytes.
        as_bytes: 1 << 30,
        cpu_seconds,
    }
}

/// Socket types other than `SOCK_STREAM` (the low 4 bits of `socket`'s type).
const NON_STREAM_TYPES: [u64; 6] = [
    libc_consts::SOCK_DGRAM,
    libc_consts::SOCK_RAW,
    libc_consts::SOCK_RDM,
    libc_consts::SOCK_SEQPACKET,
    libc_consts::SOCK_DCCP,
    libc_consts::SOCK_PACKET,
];

/// Linux socket constants (stable ABI values).
mod libc_consts {
    pub const AF_INET: u64 = 2;
    pub const AF_INET6: u64 = 10;
    pub const SOCK_DGRAM: u64 = 2;
    pub const SOCK_RAW: u64 = 3;
    pub const SOCK_RDM: u64 = 4;
    pub const SOCK_SEQPACKET: u64 = 5;
    pub const SOCK_DCCP: u64 = 6;
    pub const SOCK_PACKET: u64 = 10;
    /// `EACCES`.
    pub const EACCES: u32 = 13;
}

/// Narrow `socket()` to TCP: only `AF_INET`/`AF_INET6` with `SOCK_STREAM`;
/// anything else fails with `EACCES`. Why: the inferencer keeps the host
/// network namespace, and landlock governs TCP connect only, so without
/// this a compromised worker could open UDP, netlink or abstract UNIX
/// sockets there. Installed on the calling thread (with no_new_privs),
/// before the jail's allowlist, and stacked with it.
///
/// # Errors
/// The step that failed.
pub fn restrict_sockets() -> Result<(), String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as C,
        SeccompFilter, SeccompRule,
    };
    use std::collections::BTreeMap;
    let err = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    let mut rules: Vec<SeccompRule> = Vec::new();
    // Any domain but AF_INET and AF_INET6.
    let not_inet = vec![
        C::new(0, Len::Dword, Op::Ne, libc_consts::AF_INET).map_err(|e| err("condition", &e))?,
        C::new(0, Len::Dword, Op::Ne, libc_consts::AF_INET6).map_err(|e| err("condition", &e))?,
    ];
    rules.push(SeccompRule::new(not_inet).map_err(|e| err("rule", &e))?);
    // Any type but SOCK_STREAM (flags such as SOCK_CLOEXEC live above bit 4).
    for t in NON_STREAM_TYPES {
        let c = C::new(1, Len::Dword, Op::MaskedEq(0xf), t).map_err(|e| err("condition", &e))?;
        rules.push(SeccompRule::new(vec![c]).map_err(|e| err("rule", &e))?);
    }
    let mut map = BTreeMap::new();
    map.insert(nix::libc::SYS_socket, rules);
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| err("arch", &e))?;
    let filter = SeccompFilter::new(
        map,
        SeccompAction::Allow,
        SeccompAction::Errno(libc_consts::EACCES),
        arch,
    )
    .map_err(|e| err("filter", &e))?;
    let prog: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err("compile", &e))?;
    nix::sys::prctl::set_no_new_privs().map_err(|e| err("no_new_privs", &e))?;
    seccompiler::apply_filter(&prog).map_err(|e| err("apply", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seccompiler way: install in a spawned thread (filters are
    /// per-thread), then check each kind of socket.
    #[test]
    fn only_tcp_sockets_after_restrict() {
        let r = std::thread::spawn(|| {
            restrict_sockets()?;
            let tcp = std::net::TcpListener::bind("127.0.0.1:0")
                .map(|_| ())
                .map_err(|e| e.to_string());
            let udp = std::net::UdpSocket::bind("127.0.0.1:0")
                .map(|_| ())
                .map_err(|e| e.raw_os_error());
            let unix = std::os::unix::net::UnixDatagram::unbound()
                .map(|_| ())
                .map_err(|e| e.raw_os_error());
            let unix_stream = std::os::unix::net::UnixListener::bind("/nonexistent-dir/x")
                .map(|_| ())
                .map_err(|e| e.raw_os_error());
            Ok::<_, String>((tcp, udp, unix, unix_stream))
        })
        .join();
        let Ok(Ok((tcp, udp, unix, unix_stream))) = r else {
            panic!("thread failed: {r:?}")
        };
        assert_eq!(tcp, Ok(()));
        assert_eq!(udp, Err(Some(13)));
        assert_eq!(unix, Err(Some(13)));
        assert_eq!(unix_stream, Err(Some(13)));
    }
}
