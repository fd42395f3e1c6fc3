//! `lackpy mcp` latency and throughput, driven by rmcp's client over a
//! child process, as an MCP host would (`scripts/bench mcp`).
//!
//! Prints: spawn → initialized; `run_program` p50/p99 over 200 sequential
//! calls in one session; throughput with 8 calls in flight; and how long
//! quick calls take (p50/p99 of 200, as sequential) while a runaway program
//! is running.
//!
//! Needs `target/release/lackpy` (the bench script builds it), or the
//! binary named by `LACKPY_BIN`.

use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};

const SEQUENTIAL: usize = 200;
const CONCURRENT_CALLS: usize = 200;
const IN_FLIGHT: usize = 8;

fn args(program: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("program".into(), json!(program));
    m
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// Print `label: p50 … · p99 …` of `times`.
fn report(label: &str, mut times: Vec<Duration>) {
    times.sort();
    let (p50, p99) = (pct(&times, 0.5), pct(&times, 0.99));
    println!("{label}: p50 {} · p99 {}", ms(p50), ms(p99));
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    // LACKPY_BIN picks another build (for A/B runs of two binaries).
    let exe = match std::env::var_os("LACKPY_BIN") {
        Some(b) => std::path::PathBuf::from(b),
        None => std::env::current_dir()?.join("target/release/lackpy"),
    };
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("a.txt"), "hello\n")?;

    let t = Instant::now();
    let mut cmd = tokio::process::Command::new(&exe);
    cmd.arg("mcp").arg("--workspace").arg(ws.path());
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    let client = ().serve(transport).await?;
    let init = t.elapsed();
    println!("spawn → initialized: {}", ms(init));

    // Let the warm pool fill before timing runs.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (label, program) in [("1 + 1", "1 + 1"), ("read_file", "len(read_file('a.txt'))")] {
        let mut times = Vec::with_capacity(SEQUENTIAL);
        for _ in 0..SEQUENTIAL {
            let t = Instant::now();
            let r = client
                .call_tool(CallToolRequestParams::new("run_program").with_arguments(args(program)))
                .await?;
            times.push(t.elapsed());
            if r.is_error == Some(true) {
                anyhow::bail!("run failed: {:?}", r.structured_content);
            }
        }
        report(
            &format!("run_program `{label}` ×{SEQUENTIAL} sequential"),
            times,
        );
    }

    let mut times = Vec::with_capacity(SEQUENTIAL);
    for _ in 0..SEQUENTIAL {
        let t = Instant::now();
        client
            .call_tool(
                CallToolRequestParams::new("validate")
                    .with_arguments(args("len(read_file('a.txt'))")),
            )
            .await?;
        times.push(t.elapsed());
    }
    report(&format!("validate ×{SEQUENTIAL} sequential"), times);

    let peer = client.peer().clone();
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    let mut issued = 0;
    let mut done = 0;
    while done < CONCURRENT_CALLS {
        while issued < CONCURRENT_CALLS && set.len() < IN_FLIGHT {
            let p = peer.clone();
            set.spawn(async move {
                p.call_tool(
                    CallToolRequestParams::new("run_program")
                        .with_arguments(args("sum(range(100))")),
                )
                .await
            });
            issued += 1;
        }
        if let Some(r) = set.join_next().await {
            r??;
            done += 1;
        }
    }
    let el = t.elapsed();
    println!(
        "run_program ×{CONCURRENT_CALLS}, {IN_FLIGHT} in flight: {:.0} calls/s ({} total)",
        CONCURRENT_CALLS as f64 / el.as_secs_f64(),
        ms(el)
    );

    let p = peer.clone();
    let runaway = tokio::spawn(async move {
        p.call_tool(
            CallToolRequestParams::new("run_program")
                .with_arguments(args("n = 0\nfor i in range(1000000000000):\n    n += 1\nn")),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // As many calls as the sequential measurement above, so the two p99s
    // are the same statistic.
    let mut during = Vec::with_capacity(SEQUENTIAL);
    for _ in 0..SEQUENTIAL {
        let t = Instant::now();
        client
            .call_tool(CallToolRequestParams::new("run_program").with_arguments(args("1 + 1")))
            .await?;
        during.push(t.elapsed());
    }
    report(
        &format!("run_program while a runaway runs ({SEQUENTIAL} calls)"),
        during,
    );
    runaway.abort();
    client.cancel().await?;
    Ok(())
}
