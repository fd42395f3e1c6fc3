//! lackpy's side of `scripts/bench_peers.py`: runs the shared program set on
//! warm-pool workers (every jail layer on) and prints one JSON object, so the
//! Python driver can check answers against the peers and build the tables.
//!
//! ```text
//! cargo build --release --bin lackpy
//! cargo run --release -p lackpy-supervisor --example bench_peers_rs -- \
//!     target/release/lackpy WORKSPACE REPS < programs.json
//! ```
//!
//! stdin: `{"name": "program source", ...}`. stdout:
//! `{"warm": {name: {"value": .., "ok": .., "samples_us": [..]}},
//!   "toolcall_us": .., "tool_work_us": .., "pingpong_us": ..,
//!   "rss_kib": {"jailed": .., "reaper": ..}}`
//! (`tool_work_us`: the same `read_file` called in-process, no crossing;
//! `pingpong_us`: the floor under any crossing, a bare seqpacket round trip
//! between this process and a child, both waiting as lackpy's two sides do).
//!
//! `bench_peers_rs --pingpong-peer` (internal): the child of that
//! measurement, echoing every message on its stdin (a seqpacket socket).

mod bench_common;

use bench_common::{pool_supervisor, profile, ready_worker_rss, rss_kib, wait_pool};
use lackpy_policy::wire::Limits;
use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};
use lackpy_supervisor::{JailLevel, RunRequest, Supervisor};
use lackpy_worker::ipc::{Channel, SpinWait};
use serde_json::{json, Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn run(sup: &Supervisor, ws: &Path, prog: &str) -> (Duration, bool, Value) {
    wait_pool(sup);
    let t0 = Instant::now();
    let r = sup.run(RunRequest {
        source: prog.as_bytes().to_vec(),
        profile: profile(),
        workspace: ws.to_path_buf(),
        limits: Limits::default(),
    });
    let el = t0.elapsed();
    let v = if r.ok {
        r.value
    } else {
        json!({ "error": r.error })
    };
    (el, r.ok, v)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// How long each side of the ping-pong polls before it sleeps: as lackpy's
/// (`FRAME_SPIN` in the supervisor, `TOOL_RESULT_SPIN` in the worker).
const PINGPONG_SPIN: Duration = Duration::from_micros(50);

/// A message the size of a small `ToolCall` frame (`read_file('t.txt')`).
const PINGPONG_MSG: [u8; 24] = [7; 24];

/// The ping-pong's child: echo each message back until the parent closes.
fn pingpong_peer() -> Result<(), Box<dyn std::error::Error>> {
    use std::os::fd::AsFd;
    let mut chan = Channel::new(std::io::stdin().as_fd().try_clone_to_owned()?);
    chan.set_spin(PINGPONG_SPIN, SpinWait::Yield);
    while let Ok(msg) = chan.recv_payload(None) {
        chan.send_payload(&msg, None)?;
    }
    Ok(())
}

/// The floor under a tool call's crossing: one round trip of a small frame
/// over a `SOCK_SEQPACKET` socketpair between two processes (this one and a
/// child), framed and waited for as lackpy's two sides do it (length
/// prefix, poll for [`PINGPONG_SPIN`] yielding the CPU between tries, then
/// sleep), with no encoding, no tool and no trace. Median of 20 runs of 500
/// round trips, in µs per round trip.
fn pingpong_floor() -> Result<f64, Box<dyn std::error::Error>> {
    let (mine, theirs) = lackpy_worker::ipc::socketpair()?;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("--pingpong-peer")
        .stdin(std::process::Stdio::from(theirs))
        .spawn()?;
    let mut chan = Channel::new(mine);
    chan.set_spin(PINGPONG_SPIN, SpinWait::Yield);
    let round_trip = |chan: &mut Channel| -> Result<(), Box<dyn std::error::Error>> {
        chan.send_payload(&PINGPONG_MSG, None)?;
        if chan.recv_payload(None)? != PINGPONG_MSG {
            return Err("ping-pong: the echo differs".into());
        }
        Ok(())
    };
    for _ in 0..500 {
        round_trip(&mut chan)?;
    }
    let mut runs = Vec::with_capacity(20);
    for _ in 0..20 {
        let t0 = Instant::now();
        for _ in 0..500 {
            round_trip(&mut chan)?;
        }
        runs.push(t0.elapsed());
    }
    drop(chan);
    child.wait()?;
    Ok(median(&mut runs).as_secs_f64() * 1e6 / 500.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("--pingpong-peer") {
        return pingpong_peer();
    }
    let mut a = std::env::args().skip(1);
    let bin = PathBuf::from(a.next().unwrap_or_else(|| "target/release/lackpy".into()));
    let ws = PathBuf::from(a.next().ok_or("usage: bench_peers_rs BIN WORKSPACE REPS")?);
    let reps: usize = a.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let programs: Map<String, Value> = serde_json::from_str(&input)?;

    let sup = pool_supervisor(&bin)?;

    let mut warm = Map::new();
    for (name, src) in &programs {
        let src = src.as_str().unwrap_or_default();
        let (_, ok, value) = run(&sup, &ws, src);
        let mut samples = Vec::with_capacity(reps);
        if ok {
            for _ in 0..reps {
                samples.push(run(&sup, &ws, src).0.as_secs_f64() * 1e6);
            }
        }
        warm.insert(
            name.clone(),
            json!({"ok": ok, "value": value, "samples_us": samples}),
        );
    }

    // One tool-call round trip: (500 read_file calls − 500 constant
    // expressions) / 500, medians of 20 runs each, interleaved.
    let many = "for i in range(500):\n    read_file('t.txt')\n";
    let none = "for i in range(500):\n    'tiny'\n";
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        x.push(run(&sup, &ws, many).0);
        y.push(run(&sup, &ws, none).0);
    }
    let per = median(&mut x).saturating_sub(median(&mut y)).as_secs_f64() * 1e6 / 500.0;
    drop(sup);
    // Right after the tool calls, in the same minute of the machine.
    let pingpong = pingpong_floor().map_or(json!(null), |us| json!(us));

    // What the tool itself costs (the same read_file, called in-process,
    // median of 20 runs of 500): the rest of a round trip is the crossing.
    let spec = lackpy_supervisor::tools::builtin_spec("read_file").ok_or("no read_file")?;
    let fs_ws = lackpy_supervisor::tools::fs::Workspace::open(&ws)?;
    let arg = vec![lackpy_policy::wire::Data::Str("t.txt".into())];
    let mut z = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        for _ in 0..500 {
            let _ = lackpy_supervisor::tools::call(
                "read_file",
                &spec,
                &arg,
                &fs_ws,
                &Default::default(),
            );
        }
        z.push(t0.elapsed());
    }
    let tool_us = median(&mut z).as_secs_f64() * 1e6 / 500.0;

    // RSS of a Ready worker: the jailed pid 1 (and anything under it) plus its reaper.
    let rss = ready_worker_rss(&bin).map_or(
        json!(null),
        |(jailed, reaper)| json!({"jailed": jailed, "reaper": reaper}),
    );

    // A pooled worker as the pool gets it: forked by the zygote, Ready.
    // VmRSS counts the pages it shares with the zygote; Private_* are its own.
    let mut forked = json!(null);
    let exe = ExeHandle::open(&bin)?;
    let spec = JailLevel::full().executor_spec(&Limits::default());
    if let Ok(mut z) = spawn::Zygote::start(&exe, &["executor".to_string()], &spec) {
        if let Ok(mut w) = z.fork_worker(&spec) {
            if let (Ok(Greeting::Ready), Some(pid)) =
                (w.greeting(Instant::now() + Duration::from_secs(5)), w.pid())
            {
                forked = json!({
                    "rss": rss_kib(pid),
                    "private": private_kib(pid),
                    "zygote_rss": z.pid().map(rss_kib),
                });
            }
            w.kill_and_reap();
        }
    }

    println!(
        "{}",
        json!({"warm": warm, "toolcall_us": per, "tool_work_us": tool_us, "pingpong_us": pingpong,
               "rss_kib": rss, "forked_kib": forked})
    );
    Ok(())
}

/// Private_Clean + Private_Dirty of a process (pages no other process maps).
fn private_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|n| n.parse::<u64>().ok())
        .sum()
}
