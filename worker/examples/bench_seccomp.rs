//! What a worker's seccomp filters cost per syscall: a loop of failing
//! `recvmsg(IPC_FD, MSG_DONTWAIT)` (a readiness probe: its filter rows test
//! the descriptor, so every stacked filter runs) and of `sched_yield`
//! (allowed whatever its arguments: the kernel's action cache skips the
//! filters), with no filter, under the pooled worker's stack (the zygote's
//! filter and the child's deny-list) and under an exec'd worker's filter.
//!
//! `cargo run --release -p lackpy-worker --example bench_seccomp [-- CALLS]`
//!
//! Each measurement runs in a fresh child process (a filter cannot be
//! removed), the three alternating over 3 rounds; per child the thread CPU
//! time of the fastest of 7 loops, which a loaded machine disturbs little
//! (wall time there mostly measures the other processes).

use lackpy_worker::ipc::IPC_FD;
use lackpy_worker::jail::seccomp::{self, Filter};
use seccompiler::SeccompAction;
use std::os::fd::AsRawFd;
use std::process::Command;

const MODES: [&str; 3] = ["none", "pooled", "execd"];

/// Thread CPU time in ns.
fn cpu_ns() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the kernel to fill in.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 * 1e9 + t.tv_nsec as f64
}

/// The child: install `mode`'s filters, time the loops, print
/// "recvmsg_ns yield_ns" on stderr (stdout is not allowed under the filters).
fn child(mode: &str, calls: usize) -> Result<(), Box<dyn std::error::Error>> {
    let (a, _b) = lackpy_worker::ipc::socketpair()?;
    // SAFETY: moves our socket onto IPC_FD, where the filters allow it.
    if unsafe { libc::dup2(a.as_raw_fd(), IPC_FD) } != IPC_FD {
        return Err("dup2".into());
    }
    let errno = SeccompAction::Errno(1000);
    match mode {
        "none" => {}
        "pooled" => {
            let z = seccomp::compile_for_pid(Filter::Zygote, std::process::id(), errno)?;
            seccompiler::apply_filter(&z)?;
            seccompiler::apply_filter(&seccomp::compile_zygote_child(Filter::Executor)?)?;
        }
        "execd" => {
            let e = seccomp::compile_for_pid(Filter::Executor, std::process::id(), errno)?;
            seccompiler::apply_filter(&e)?;
        }
        m => return Err(format!("unknown mode {m}").into()),
    }
    let mut buf = [0u8; 64];
    let (mut recv, mut yld) = (f64::MAX, f64::MAX);
    for _ in 0..7 {
        let t0 = cpu_ns();
        for _ in 0..calls {
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: an all-zero msghdr is valid; it points at one iovec over `buf`.
            let mut hdr: libc::msghdr = unsafe { std::mem::zeroed() };
            hdr.msg_iov = &mut iov;
            hdr.msg_iovlen = 1;
            // SAFETY: `hdr` describes `buf`, alive for the call.
            if unsafe { libc::recvmsg(IPC_FD, &mut hdr, libc::MSG_DONTWAIT) } >= 0 {
                return Err("recvmsg: a message arrived".into());
            }
        }
        recv = recv.min((cpu_ns() - t0) / calls as f64);
        let t0 = cpu_ns();
        for _ in 0..calls {
            // SAFETY: sched_yield takes no arguments.
            unsafe { libc::sched_yield() };
        }
        yld = yld.min((cpu_ns() - t0) / calls as f64);
    }
    eprintln!("{recv:.0} {yld:.0}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        let calls = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200_000);
        return child(args.get(2).map_or("", String::as_str), calls);
    }
    let calls: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let exe = std::env::current_exe()?;
    let mut best = [(f64::MAX, f64::MAX); 3];
    for _ in 0..3 {
        for (i, mode) in MODES.iter().enumerate() {
            let out = Command::new(&exe)
                .args(["--child", mode, &calls.to_string()])
                .output()?;
            let text = String::from_utf8_lossy(&out.stderr);
            let v: Vec<f64> = text
                .split_whitespace()
                .filter_map(|s| s.parse().ok())
                .collect();
            let [r, y] = v[..] else {
                return Err(format!("{mode}: unexpected output {text:?}").into());
            };
            best[i] = (best[i].0.min(r), best[i].1.min(y));
        }
    }
    println!("| filters | failing recvmsg | sched_yield |\n|---|---|---|");
    for (mode, (r, y)) in MODES.iter().zip(best) {
        println!("| {mode} | {r:.0} ns | {y:.0} ns |");
    }
    println!(
        "\nThread CPU time per syscall, fastest of 7 loops of {calls}, best of 3 interleaved \
         children; load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}
