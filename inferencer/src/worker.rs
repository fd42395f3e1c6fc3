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
