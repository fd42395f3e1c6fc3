//! The zygote role: a long-lived, pre-jailed parent that forks single-use
//! executor workers for the supervisor's warm pool.
//!
//! Spawning a worker from scratch costs an `execve` of this binary, a user
//! namespace, a network namespace (~0.8 ms alone), an empty root and the
//! rest of the jail — several milliseconds of CPU. The zygote pays that
//! once: it is exec'd like any worker, jails itself with
//! [`jail::enter_zygote`] (every layer, but no pid namespace of its own and
//! `CAP_SYS_ADMIN` kept inside its user namespace), and then only forks.
//! Each forked worker is pid 1 of a fresh pid namespace, finishes its own
//! jail ([`jail::ZygoteJail::confine_worker`]: rlimits, no capabilities, a
//! seccomp filter that takes the zygote's extras away), takes the
//! copy-on-write faults of the pages a run writes (`prefault.rs`), says
//! `Ready` on its own socket and serves exactly one run — the same single-use contract as
//! an exec'd worker. Workers share the zygote's empty network, mount, ipc,
//! uts and cgroup namespaces, in which they can do nothing (no sockets, no
//! mounts, no filesystem access, no IPC syscalls), and never see each other
//! (separate pid namespaces; a separate ipc namespace too when the seccomp
//! layer is lowered).
//!
//! Control protocol (seqpacket, fd 3, the supervisor is trusted here but
//! still bounded): the supervisor sends `b"F"` with two descriptors
//! attached — the worker's end of a fresh IPC socketpair and the write end
//! of a status pipe. The zygote answers with the worker's pid as an `i32`
//! (little endian) and the worker's pidfd attached, or with `-errno` and no
//! descriptor. When the worker exits, the zygote writes its raw wait status
//! (`i32`, little endian) to the status pipe and closes it. When the
//! supervisor closes the control socket the zygote exits, and every worker
//! dies with it (`PR_SET_PDEATHSIG`).

use crate::ipc::{self, Channel};
use crate::jail::{self, JailSpec, ZygoteJail};
use crate::role::{self, EXIT_SETUP};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

mod hugetext;
mod prefault;

/// The request byte: fork one worker.
pub const REQUEST_FORK: u8 = b'F';

/// Most workers alive at once (each holds one status pipe in the zygote).
/// Why 1024: far above any pool plus in-flight runs, and within the
/// zygote's descriptor limit.
pub const MAX_LIVE: usize = 1024;

/// Run the zygote on fd 3 until the supervisor closes it. `child_role` is
/// the role argv each forked worker serves (`executor`, or in test builds
/// `probe ACTION ARG`). Returns the exit status.
pub fn run(spec: &JailSpec, child_role: &[String]) -> i32 {
    let mut chan = match role::ipc_channel() {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("lackpy zygote: {msg}");
            return EXIT_SETUP;
        }
    };
    // Before the jail: its seccomp filter allows no new executable memory.
    // When it cannot be moved, workers fault the text in as before.
    hugetext::move_text();
    let jail = jail::enter_zygote(spec);
    if jail.is_ok() {
        role::warm_up();
    }
    if role::greet(&mut chan, jail.as_ref().map(|_| ())).is_err() {
        return EXIT_SETUP;
    }
    match jail {
        Ok(jail) => serve(&chan, &jail, child_role),
        Err(_) => EXIT_SETUP,
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn serve(chan: &Channel, jail: &ZygoteJail, child_role: &[String]) -> i32 {
    let ctrl = chan.raw_fd();
    let sig = jail.sigchld_fd();
    let mut live: Vec<(i32, OwnedFd)> = Vec::new();
    let mut buf = [0u8; 8];
    loop {
        let mut fds = [
            libc::pollfd {
                fd: ctrl,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sig,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfds, no timeout.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if rc < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return EXIT_SETUP;
        }
        if fds[1].revents != 0 {
            drain_signalfd(sig);
            reap(&mut live);
        }
        if fds[0].revents == 0 {
            continue;
        }
        let (n, mut passed) = match ipc::recv_fds(ctrl, &mut buf, None) {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return EXIT_SETUP,
        };
        if n == 0 {
            // The supervisor is gone: exit; the workers die with us.
            return 0;
        }
        if n != 1 || buf[0] != REQUEST_FORK || passed.len() != 2 {
            reply(ctrl, -libc::EINVAL, None);
            continue;
        }
        reap(&mut live);
        if live.len() >= MAX_LIVE {
            reply(ctrl, -libc::EAGAIN, None);
            continue;
        }
        let (sock, status) = match (passed.pop(), passed.pop()) {
            (Some(status), Some(sock)) => (sock, status),
            _ => continue,
        };
        match fork_worker(jail, &sock, child_role) {
            Ok((pid, pidfd)) => {
                reply(ctrl, pid, Some(pidfd.as_raw_fd()));
                live.push((pid, status));
            }
            Err(e) => reply(ctrl, -e, None),
        }
        // `sock` (the worker's end) and `pidfd` close here: the worker and
        // the supervisor hold their own.
    }
}

fn reply(ctrl: RawFd, value: i32, fd: Option<RawFd>) {
    let _ = ipc::send_fds(ctrl, &value.to_le_bytes(), fd.as_slice());
}

fn drain_signalfd(sig: RawFd) {
    let mut buf = [0u8; 128 * 8];
    loop {
        // SAFETY: `buf` is a valid writable buffer; `sig` is our non-blocking signalfd.
        let n = unsafe { libc::read(sig, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            return;
        }
    }
}

/// Reap every exited worker and report its status on its pipe.
fn reap(live: &mut Vec<(i32, OwnedFd)>) {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a valid int to write into.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if let Some(i) = live.iter().position(|(p, _)| *p == pid) {
            let (_, fd) = live.swap_remove(i);
            let bytes = status.to_le_bytes();
            // SAFETY: writing 4 bytes from a live array to a pipe we own.
            // A supervisor that stopped listening gives EPIPE (SIGPIPE is
            // ignored by the Rust runtime); nothing to do about it.
            let _ = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        }
    }
}

/// Fork one worker. In the parent: its pid and pidfd. The child never returns.
fn fork_worker(
    jail: &ZygoteJail,
    sock: &OwnedFd,
    child_role: &[String],
) -> Result<(i32, OwnedFd), i32> {
    let mut pidfd: libc::c_int = -1;
    // SAFETY: a raw clone with fork semantics (no CLONE_VM, no new stack):
    // the child gets a copy of this single-threaded process and continues
    // below; with CLONE_PIDFD the kernel writes the pidfd into `pidfd`
    // (the parent_tid argument, third on every architecture).
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            jail.clone_flags(),
            0usize,
            &mut pidfd as *mut libc::c_int,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // The worker. Never return into the zygote's loop, not even by
        // unwinding: whatever happens, this process ends here.
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            worker_main(jail, sock.as_raw_fd(), child_role)
        }))
        .unwrap_or(EXIT_SETUP);
        // SAFETY: _exit never returns; nothing of the zygote's state may
        // run its destructors in this copy.
        unsafe { libc::_exit(code) };
    }
    // SAFETY: CLONE_PIDFD succeeded, so `pidfd` is a fresh descriptor we own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    Ok((pid as i32, pidfd))
}

/// In the forked worker: socket to fd 3, finish the jail, greet, serve.
fn worker_main(jail: &ZygoteJail, sock: RawFd, child_role: &[String]) -> i32 {
    // SAFETY: dup3 onto fd 3 replaces this copy's control socket with the
    // worker's socket (flags 0: not close-on-exec, though nothing execs).
    if unsafe { libc::dup3(sock, ipc::IPC_FD, 0) } < 0 {
        return EXIT_SETUP;
    }
    // SAFETY: fd 3 now is the worker's socket, owned by nothing else in this
    // process (the zygote's Channel value for fd 3 is never used or dropped
    // here: this process ends with _exit).
    let mut chan = Channel::new(unsafe { OwnedFd::from_raw_fd(ipc::IPC_FD) });
    let confined = jail.confine_worker();
    if confined.is_ok() {
        prefault::shared_writable();
    }
    if role::greet(&mut chan, confined.as_ref().map(|_| ())).is_err() || confined.is_err() {
        return EXIT_SETUP;
    }
    role::after_jail(chan, child_role)
}
