//! Test-only worker roles, compiled only with the `test-roles` feature (the
//! product binary has no way to reach them).
//!
//! - `probe ACTION [ARG]`: apply the production jail, say `Ready`, attempt
//!   one escape action with raw syscalls, and report `Stdout("denied <errno>")`
//!   or `Stdout("allowed <detail>")`, then `Done`. A seccomp kill (SIGSYS)
//!   means the worker dies without a report: also a denial.
//! - `hostile MODE`: apply the jail, say `Ready`, receive `Run`, then break
//!   the protocol in the way MODE names; the supervisor must kill it and
//!   report a clear error.

use crate::ipc::{Channel, CHUNK_BYTES};
use crate::jail::JailSpec;
use lackpy_policy::wire::{Data, FlatData, FromWorker, Node, Outcome, ToWorker, PROTOCOL_VERSION};
use std::ffi::CString;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn report(chan: &mut Channel, line: String) {
    let _ = chan.send(&FromWorker::Stdout(line), None);
    let _ = chan.send(
        &FromWorker::Done(Outcome {
            value: None,
            repr: None,
            error: None,
            fuel_used: 0,
            globals: Vec::new(),
            skipped_globals: Vec::new(),
        }),
        None,
    );
}

/// The socket families the probe tries to open.
pub const SOCKET_PROBES: &[&str] = &[
    "socket_inet",
    "socket_inet6",
    "socket_unix",
    "socket_netlink",
    "socket_packet",
];

/// Ways out of the process: run a program, make processes, trace or
/// reshape namespaces and mounts.
pub const PROCESS_PROBES: &[&str] = &[
    "execve",
    "fork",
    "clone_thread",
    "ptrace",
    "mount",
    "unshare",
    "setns",
    "chroot",
];

/// Kernel attack surface a program never needs.
pub const KERNEL_PROBES: &[&str] = &[
    "tiocsti",
    "keyctl",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "proc_self_mem",
];

/// What a zygote may do and its workers may not (its seccomp extras), and
/// the IPC a shared ipc namespace would expose.
pub const ZYGOTE_EXTRA_PROBES: &[&str] = &[
    "sysv_shm",
    "mq_open",
    "write_stdout",
    "dup3",
    "sendmsg_fd",
    "wait4",
    "prctl",
    "clone_worker",
];

/// Every action the probe role knows, in the order of the layer matrix in
/// SECURITY.md.
pub fn probe_actions() -> Vec<&'static str> {
    [
        &["read_file", "write_file", "list_root"][..],
        SOCKET_PROBES,
        &["connect"],
        PROCESS_PROBES,
        &["kill"],
        KERNEL_PROBES,
        &["raise_rlimit"],
        ZYGOTE_EXTRA_PROBES,
        &["alloc", "nothing"],
    ]
    .concat()
}

/// The probe role. `args` = [ACTION, optional ARG].
pub fn probe(spec: &JailSpec, args: &[String]) -> i32 {
    let mut chan = match super::ipc_channel() {
        Ok(c) => c,
        Err(_) => return super::EXIT_SETUP,
    };
    if super::jail_and_greet(&mut chan, spec).is_err() {
        return super::EXIT_SETUP;
    }
    probe_jailed(chan, args)
}

/// The probe after the jail and `Ready` (also what a zygote's child runs).
pub fn probe_jailed(mut chan: Channel, args: &[String]) -> i32 {
    // Wait for Run like an executor would (the supervisor sends it first).
    let _ = chan.recv::<ToWorker>(None);
    let action = args.first().map_or("nothing", String::as_str);
    let arg = args.get(1).cloned().unwrap_or_default();
    let rc = attempt(action, &arg);
    let line = match rc {
        Ok(detail) => format!("allowed {detail}"),
        Err(e) => format!("denied {e}"),
    };
    report(&mut chan, line);
    0
}

/// Perform one action; Ok = it worked (an escape unless harmless), Err = errno.
#[allow(clippy::undocumented_unsafe_blocks)] // test-only: raw syscalls on purpose
fn attempt(action: &str, arg: &str) -> Result<String, i32> {
    let check = |rc: i64| {
        if rc < 0 {
            Err(errno())
        } else {
            Ok(format!("rc={rc}"))
        }
    };
    let cpath = |p: &str| CString::new(p).unwrap_or_default();
    match action {
        "nothing" => Ok("nothing".into()),
        "read_file" => {
            let p = cpath(if arg.is_empty() { "/etc/passwd" } else { arg });
            let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDONLY) };
            if fd < 0 {
                return Err(errno());
            }
            let mut buf = [0u8; 256];
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            check(n as i64).map(|_| String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned())
        }
        "write_file" => {
            let p = cpath(if arg.is_empty() {
                "/tmp/lackpy-probe"
            } else {
                arg
            });
            let fd = unsafe { libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o644) };
            if fd < 0 {
                return Err(errno());
            }
            let n = unsafe { libc::write(fd, b"pwned".as_ptr().cast(), 5) };
            check(n as i64)
        }
        "list_root" => {
            let fd = unsafe { libc::open(c"/".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
            check(fd as i64)
        }
        "socket_inet" => check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) } as i64),
        "socket_inet6" => {
            check(unsafe { libc::socket(libc::AF_INET6, libc::SOCK_STREAM, 0) } as i64)
        }
        "socket_unix" => check(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) } as i64),
        "socket_netlink" => {
            check(unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0) } as i64)
        }
        "socket_packet" => {
            check(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) } as i64)
        }
        "connect" => {
            let port: u16 = arg.parse().unwrap_or(1);
            let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) };
            if fd < 0 {
                return Err(errno());
            }
            let addr = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: port.to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_be_bytes([127, 0, 0, 1]).to_be(),
                },
                sin_zero: [0; 8],
            };
            let rc = unsafe {
                libc::connect(
                    fd,
                    (&addr as *const libc::sockaddr_in).cast(),
                    std::mem::size_of::<libc::sockaddr_in>() as u32,
                )
            };
            check(rc as i64)
        }
        "execve" => {
            let argv = [c"/bin/sh".as_ptr(), std::ptr::null()];
            let envp = [std::ptr::null()];
            check(unsafe { libc::execve(c"/bin/sh".as_ptr(), argv.as_ptr(), envp.as_ptr()) } as i64)
        }
        "fork" => {
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                unsafe { libc::_exit(0) };
            }
            check(pid as i64)
        }
        "clone_thread" => std::thread::Builder::new()
            .spawn(|| ())
            .map(|_| "thread".to_string())
            .map_err(|e| e.raw_os_error().unwrap_or(-1)),
        "ptrace" => check(unsafe { libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0) }),
        "mount" => check(unsafe {
            libc::mount(
                c"none".as_ptr(),
                c"/".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            )
        } as i64),
        "unshare" => check(unsafe { libc::unshare(libc::CLONE_NEWUSER) } as i64),
        "setns" => check(unsafe { libc::setns(0, 0) } as i64),
        "chroot" => check(unsafe { libc::chroot(c"/".as_ptr()) } as i64),
        "kill" => {
            let pid: i32 = arg.parse().unwrap_or(1);
            check(unsafe { libc::kill(pid, libc::SIGKILL) } as i64)
        }
        "tiocsti" => {
            let c = b'x';
            check(unsafe { libc::ioctl(0, libc::TIOCSTI, &c) } as i64)
        }
        "keyctl" => check(unsafe { libc::syscall(libc::SYS_keyctl, 0, 0, 0, 0, 0) }),
        "bpf" => check(unsafe { libc::syscall(libc::SYS_bpf, 0, 0, 0) }),
        "perf_event_open" => {
            check(unsafe { libc::syscall(libc::SYS_perf_event_open, 0, 0, -1, -1, 0) })
        }
        "userfaultfd" => check(unsafe { libc::syscall(libc::SYS_userfaultfd, 0) }),
        "io_uring_setup" => check(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1, 0) }),
        "proc_self_mem" => {
            check(unsafe { libc::open(c"/proc/self/mem".as_ptr(), libc::O_RDWR) } as i64)
        }
        "raise_rlimit" => {
            let lim = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } as i64)
        }
        // SysV shared memory and POSIX message queues: nothing to share
        // with sibling workers in a common ipc namespace.
        "sysv_shm" => {
            check(unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) } as i64)
        }
        "mq_open" => check(unsafe {
            libc::syscall(
                libc::SYS_mq_open,
                c"lackpy-probe".as_ptr(),
                libc::O_CREAT | libc::O_RDWR,
                0o600,
                0,
            )
        }),
        // What a zygote may do and its workers may not.
        "write_stdout" => check(unsafe { libc::write(1, b"x".as_ptr().cast(), 1) } as i64),
        "dup3" => check(unsafe { libc::dup3(crate::ipc::IPC_FD, 50, 0) } as i64),
        "sendmsg_fd" => {
            // Pass a descriptor (our own socket) to the supervisor.
            let fd: libc::c_int = crate::ipc::IPC_FD;
            let mut cbuf = [0u64; 4];
            let mut iov = libc::iovec {
                iov_base: b"x".as_ptr() as *mut libc::c_void,
                iov_len: 1,
            };
            let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr().cast();
            msg.msg_controllen = unsafe { libc::CMSG_SPACE(4) } as _;
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&msg);
                (*c).cmsg_level = libc::SOL_SOCKET;
                (*c).cmsg_type = libc::SCM_RIGHTS;
                (*c).cmsg_len = libc::CMSG_LEN(4) as _;
                std::ptr::copy_nonoverlapping(&fd, libc::CMSG_DATA(c).cast(), 1);
            }
            check(unsafe { libc::sendmsg(crate::ipc::IPC_FD, &msg, 0) } as i64)
        }
        "wait4" => {
            let mut st = 0;
            check(unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } as i64)
        }
        "prctl" => check(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0) } as i64),
        "clone_worker" => {
            // The exact flags the zygote forks with.
            let pid = unsafe {
                libc::syscall(
                    libc::SYS_clone,
                    libc::CLONE_NEWPID | libc::SIGCHLD,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                )
            };
            if pid == 0 {
                unsafe { libc::_exit(0) };
            }
            check(pid)
        }
        "alloc" => {
            let mb: usize = arg.parse().unwrap_or(4096);
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            for _ in 0..mb {
                let mut v: Vec<u8> = Vec::new();
                if v.try_reserve_exact(1 << 20).is_err() {
                    return Err(libc::ENOMEM);
                }
                v.resize(1 << 20, 1);
                blocks.push(v);
            }
            Ok(format!("{} MiB", blocks.len()))
        }
        _ => Err(libc::ENOSYS),
    }
}

/// Every mode the hostile role knows.
pub const HOSTILE_MODES: &[&str] = &[
    "garbage",
    "oversized_prefix",
    "oversized_chunk",
    "truncated",
    "unknown_tool",
    "out_of_profile",
    "bad_arg_count",
    "bad_arg_type",
    "deep_args",
    "flood",
    "after_done",
    "bad_id",
    "silent",
    "exit_early",
    "exit_zero",
    "stdout_flood",
    "setup_failed",
    "wrong_protocol",
    "spin",
    "alloc_abort",
];

/// The hostile role. `args` = [MODE].
pub fn hostile(spec: &JailSpec, args: &[String]) -> i32 {
    let mut chan = match super::ipc_channel() {
        Ok(c) => c,
        Err(_) => return super::EXIT_SETUP,
    };
    let mode = args.first().map_or("garbage", String::as_str);
    if mode == "setup_failed" {
        let _ = chan.send(
            &FromWorker::SetupFailed {
                step: "pivot_root".into(),
                errno: libc::EINVAL,
                detail: "pretend".into(),
            },
            None,
        );
        return super::EXIT_SETUP;
    }
    if mode == "wrong_protocol" {
        let _ = chan.send(
            &FromWorker::Ready {
                protocol: PROTOCOL_VERSION + 1,
            },
            None,
        );
        return 0;
    }
    if super::jail_and_greet(&mut chan, spec).is_err() {
        return super::EXIT_SETUP;
    }
    let Ok(ToWorker::Run { limits, .. }) = chan.recv::<ToWorker>(None) else {
        return super::EXIT_SETUP;
    };
    let call = |id: u64, name: &str, args: Vec<FlatData>| FromWorker::ToolCall {
        id,
        name: name.into(),
        args,
        kwargs: vec![],
    };
    let s = |x: &str| Data::Str(x.into()).to_flat();
    let done = FromWorker::Done(Outcome {
        value: None,
        repr: Some("None".into()),
        error: None,
        fuel_used: 0,
        globals: Vec::new(),
        skipped_globals: Vec::new(),
    });
    let _ = match mode {
        "garbage" => chan.send_payload(
            &[0xff, 0xfe, 0x00, 0x13, 0x37, 0xff, 0xff, 0xff, 0xff],
            None,
        ),
        "oversized_prefix" => chan.send_raw(&u32::MAX.to_le_bytes(), None),
        "oversized_chunk" => chan.send_raw(&vec![0u8; CHUNK_BYTES + 1], None),
        "truncated" => {
            let mut first = ((CHUNK_BYTES * 3) as u32).to_le_bytes().to_vec();
            first.resize(CHUNK_BYTES, 7);
            let _ = chan.send_raw(&first, None);
            return 0; // and die mid-frame
        }
        "unknown_tool" => chan.send(&call(1, "no_such_tool", vec![]), None),
        "out_of_profile" => chan.send(&call(1, "write_file", vec![s("x.txt"), s("pwned")]), None),
        "bad_arg_count" => chan.send(&call(1, "read_file", vec![s("a"), s("b"), s("c")]), None),
        "bad_arg_type" => chan.send(&call(1, "read_file", vec![Data::Int(7).to_flat()]), None),
        "deep_args" => chan.send(
            &call(1, "read_file", vec![FlatData(vec![Node::List(1); 100_000])]),
            None,
        ),
        "flood" => {
            let mut r = Ok(());
            for id in 1..=limits.tool_calls.saturating_add(5) {
                r = chan.send(&call(id, "find_files", vec![s("nothing-matches-*")]), None);
                if r.is_err() || chan.recv::<ToWorker>(None).is_err() {
                    break;
                }
            }
            r
        }
        "after_done" => {
            let _ = chan.send(&done, None);
            chan.send(&FromWorker::Stdout("late".into()), None)
        }
        "bad_id" => chan.send(&call(42, "find_files", vec![s("*")]), None),
        "silent" | "spin" => {
            // Never answer: the supervisor's deadline must end the run.
            let mut x: u64 = 0;
            loop {
                if mode == "spin" {
                    x = x.wrapping_add(1);
                    std::hint::black_box(x);
                } else {
                    let _ = chan.recv::<ToWorker>(None);
                }
            }
        }
        "exit_early" => return 3,
        // A clean exit without `Done`: the supervisor reads once more after
        // the exit, finds nothing, and reports a death.
        "exit_zero" => return 0,
        "alloc_abort" => {
            // Reserve address space until RLIMIT_AS makes an allocation fail:
            // Rust aborts (SIGABRT), which the supervisor reports as `memory`.
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![0u8; 64 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "stdout_flood" => {
            let chunk = "A".repeat(60_000);
            let mut r = Ok(());
            for _ in 0..(limits.stdout_bytes / 60_000 + 5) {
                r = chan.send(&FromWorker::Stdout(chunk.clone()), None);
                if r.is_err() {
                    break;
                }
            }
            r
        }
        _ => return super::EXIT_SETUP,
    };
    // Linger so the supervisor, not our exit, ends the run.
    let _ = chan.recv::<ToWorker>(None);
    let _ = chan.recv::<ToWorker>(None);
    0
}
