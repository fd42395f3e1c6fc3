//! Benchmarks of the jailed execution path, printed side by side.
//!
//! ```text
//! cargo build --release --bin lackpy
//! cargo run --release -p lackpy-supervisor --example bench_run [-- PATH/TO/lackpy]
//! ```
//!
//! - cold: whole `lackpy run --json -c '1+1'` process (every jail layer on), median of 50;
//! - warm: `Supervisor::run` on a worker from the warm pool (a small
//!   loop-and-dict program), p50/p99 of 200;
//! - one tool-call round trip: (1000 `read_file` calls − 0 calls) / 1000;
//! - worker RSS of a Ready worker (the jailed pid 1 and its reaper);
//! - the same machine's alternatives: `unshare(1)`, `bwrap`, `python3`.

mod bench_common;

use bench_common::{pool_supervisor, profile, ready_worker_rss, wait_pool};
use lackpy_policy::wire::Limits;
use lackpy_supervisor::{RunRequest, Supervisor};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn time_cmd(argv: &[&str], n: usize) -> Option<Duration> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let st = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .ok()?;
        v.push(t0.elapsed());
        if !st.success() {
            return None;
        }
    }
    Some(pct(&mut v, 0.5))
}

fn main() {
    let bin: PathBuf = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/release/lackpy"));
    let bin_s = bin.to_string_lossy().to_string();
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::write(ws.path().join("t.txt"), "tiny\n").expect("write");
    let ws_s = ws.path().to_string_lossy().to_string();

    println!("lackpy jailed execution benchmarks ({bin_s})");
    println!("{:-<72}", "");
    let cold = time_cmd(
        &[&bin_s, "run", "--json", "--workspace", &ws_s, "-c", "1+1"],
        50,
    );
    println!(
        "{:<52} {}",
        "cold `lackpy run` of 1+1 (median of 50)",
        cold.map_or("failed".into(), ms)
    );

    let sup = pool_supervisor(&bin).expect("supervisor");
    let run = |sup: &Supervisor, prog: &str| {
        let t0 = Instant::now();
        let r = sup.run(RunRequest {
            source: prog.as_bytes().to_vec(),
            profile: profile(),
            workspace: ws.path().to_path_buf(),
            limits: Limits::default(),
        });
        assert!(r.ok, "{prog}: {:?}", r.error);
        t0.elapsed()
    };
    let small =
        "d = {}\nfor i in range(100):\n    d[i % 7] = d.get(i % 7, 0) + i\nsorted(d.items())\n";
    let mut warm = Vec::new();
    for _ in 0..200 {
        wait_pool(&sup);
        warm.push(run(&sup, small));
    }
    let (p50, p99) = (pct(&mut warm, 0.5), pct(&mut warm, 0.99));
    println!(
        "{:<52} p50 {}  p99 {}",
        "warm-pool run, small loop+dict program (200 runs)",
        ms(p50),
        ms(p99)
    );

    let many = "for i in range(1000):\n    read_file('t.txt')\n";
    let none = "for i in range(1000):\n    'tiny'\n";
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..20 {
        wait_pool(&sup);
        a.push(run(&sup, many));
        wait_pool(&sup);
        b.push(run(&sup, none));
    }
    let per = pct(&mut a, 0.5).saturating_sub(pct(&mut b, 0.5)) / 1000;
    println!(
        "{:<52} {:.1} us",
        "one tool-call round trip (read_file, median)",
        per.as_secs_f64() * 1e6
    );
    drop(sup);

    // RSS of a Ready worker: the reaper (direct child) and the jailed pid 1.
    if let Some((jailed, reaper)) = ready_worker_rss(&bin) {
        println!(
            "{:<52} jailed {} KiB + reaper {} KiB",
            "executor worker RSS (Ready, VmRSS)", jailed, reaper
        );
    }

    println!("{:-<72}", "");
    println!("alternatives on this machine (median of 20):");
    let alts: [(&str, Vec<&str>); 4] = [
        (
            "unshare -Urnmpif --mount-proc true",
            vec!["unshare", "-Urnmpif", "--mount-proc", "true"],
        ),
        (
            "bwrap --unshare-all --ro-bind / / true",
            vec!["bwrap", "--unshare-all", "--ro-bind", "/", "/", "true"],
        ),
        (
            "python3 -I -S -c pass",
            vec!["python3", "-I", "-S", "-c", "pass"],
        ),
        ("python3 -c pass", vec!["python3", "-c", "pass"]),
    ];
    for (name, argv) in alts {
        let found = Path::new("/usr/bin").join(argv[0]).exists()
            || Path::new("/bin").join(argv[0]).exists();
        let r = if found { time_cmd(&argv, 20) } else { None };
        println!("  {:<50} {}", name, r.map_or("unavailable".into(), ms));
    }
}
