//! `lackpy mcp` latency and throughput, driven by rmcp's client over a
//! child process, as an MCP host would (`scripts/bench mcp`).
//!
//! Prints: spawn → initialized; `run_program` p50/p99 over 200 sequential
//! calls in one session; throughput with 8 calls in flight; and how long
//! quick calls take (p50/p99 of 200, as sequential) while a runaway program
//! is running.
//!
//! With the argument `serve` it measures `lackpy serve` instead: the same
//! rmcp client over the unix socket and over Streamable HTTP (a session,
//! bearer token) against one server, calls interleaved in blocks, p50/p99
//! each and the HTTP − unix difference (`scripts/bench http`).
//!
//! Needs `target/release/lackpy` (the bench script builds it), or the
//! binary named by `LACKPY_BIN`.

use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::ServiceExt;
use serde_json::{json, Map, Value};
use std::io::BufRead;
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

/// The lackpy binary measured: `LACKPY_BIN` (for A/B runs of two builds)
/// or this checkout's release build.
fn lackpy_bin() -> anyhow::Result<std::path::PathBuf> {
    Ok(match std::env::var_os("LACKPY_BIN") {
        Some(b) => std::path::PathBuf::from(b),
        None => std::env::current_dir()?.join("target/release/lackpy"),
    })
}

/// A `lackpy mcp` child (`exe`) serving `ws`, with rmcp's client
/// initialized on its stdio.
async fn stdio_client(
    exe: &std::path::Path,
    ws: &std::path::Path,
) -> anyhow::Result<RunningService<RoleClient, ()>> {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.arg("mcp").arg("--workspace").arg(ws);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()?;
    Ok(().serve(transport).await?)
}

/// `bench_mcp runs N`: N fresh `lackpy mcp` servers, each initialized,
/// given 300 ms to fill its warm pool, checked once, then timed over
/// [`SEQUENTIAL`] sequential `run_program` calls of `1 + 1`. Prints one JSON
/// line, `{"p50_us": [...], "p99_us": [...]}` (one entry per server), for
/// scripts/bench_peers.py's five-run table.
async fn runs(n: usize) -> anyhow::Result<()> {
    let exe = lackpy_bin()?;
    let ws = tempfile::tempdir()?;
    let (mut p50s, mut p99s) = (Vec::new(), Vec::new());
    for _ in 0..n {
        let client = stdio_client(&exe, ws.path()).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let call = || {
            client
                .call_tool(CallToolRequestParams::new("run_program").with_arguments(args("1 + 1")))
        };
        let first = call().await?;
        let value = first
            .structured_content
            .as_ref()
            .and_then(|v| v.get("value"))
            .cloned();
        if first.is_error == Some(true) || value != Some(json!(2)) {
            anyhow::bail!("different answer: {value:?}");
        }
        let mut times = Vec::with_capacity(SEQUENTIAL);
        for _ in 0..SEQUENTIAL {
            let t = Instant::now();
            call().await?;
            times.push(t.elapsed());
        }
        times.sort();
        p50s.push(pct(&times, 0.5).as_secs_f64() * 1e6);
        p99s.push(pct(&times, 0.99).as_secs_f64() * 1e6);
        client.cancel().await?;
    }
    println!("{}", json!({"p50_us": p50s, "p99_us": p99s}));
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        return serve().await;
    }
    if std::env::args().nth(1).as_deref() == Some("runs") {
        let n = std::env::args()
            .nth(2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(5);
        return runs(n).await;
    }
    let exe = lackpy_bin()?;
    let ws = tempfile::tempdir()?;
    std::fs::write(ws.path().join("a.txt"), "hello\n")?;

    let t = Instant::now();
    let client = stdio_client(&exe, ws.path()).await?;
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

const SERVE_TOKEN: &str = "bench-token-rmcp-7d1e";
const SERVE_CALLS: usize = 400;
const SERVE_BLOCKS: usize = 4;

/// Time `n` sequential `run_program` `1 + 1` calls, each answer checked.
async fn timed_runs(
    client: &RunningService<RoleClient, ()>,
    n: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let r = client
            .call_tool(CallToolRequestParams::new("run_program").with_arguments(args("1 + 1")))
            .await?;
        times.push(t.elapsed());
        let value = r.structured_content.as_ref().and_then(|v| v.get("value"));
        if value != Some(&json!(2)) {
            anyhow::bail!("wrong result: {:?}", r.structured_content);
        }
    }
    Ok(times)
}

/// `lackpy serve` with both listeners; the rmcp client over each.
async fn serve() -> anyhow::Result<()> {
    let exe = lackpy_bin()?;
    let dir = tempfile::tempdir()?;
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws)?;
    let sock = dir.path().join("s.sock");
    let cfg = dir.path().join("serve.toml");
    let digest = lackpy_supervisor::sha256::hex(SERVE_TOKEN.as_bytes());
    let uid = nix::unistd::geteuid().as_raw();
    std::fs::write(
        &cfg,
        format!(
            "[serve]\npool_size = 8\nmax_in_flight = 16\n\
             [[serve.clients]]\nuid = {uid}\nworkspace = {ws:?}\nmax_concurrent = 16\n\
             [[serve.clients]]\ntoken_sha256 = \"{digest}\"\nworkspace = {ws:?}\nmax_concurrent = 16\n"
        ),
    )?;
    let mut child = std::process::Command::new(&exe)
        .arg("serve")
        .arg("--socket")
        .arg(&sock)
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--config")
        .arg(&cfg)
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stderr"))?;
    let mut lines = std::io::BufReader::new(stderr).lines();
    let url = loop {
        let Some(line) = lines.next() else {
            anyhow::bail!("lackpy serve did not start");
        };
        let line = line?;
        if let Some(rest) = line.split("listening on http://").nth(1) {
            break format!("http://{}", rest.trim());
        }
    };
    // Drain the rest of stderr so the server never blocks on it.
    std::thread::spawn(move || for _ in lines {});
    let result = serve_measure(&sock, &url).await;
    let _ = child.kill();
    let _ = child.wait();
    result
}

async fn serve_measure(sock: &std::path::Path, url: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    while !sock.exists() {
        if t.elapsed() > Duration::from_secs(30) {
            anyhow::bail!("the unix socket did not appear");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Let the warm pool fill before timing runs.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let unix = ().serve(tokio::net::UnixStream::connect(sock).await?).await?;
    let config =
        || StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(SERVE_TOKEN);
    // rmcp's default client: no idle pooling, a new TCP connection per request.
    let http = ().serve(StreamableHttpClientTransport::from_config(config())).await?;
    // A keep-alive client, as lackpy's own remote MCP sources use.
    let pooled_client = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .tcp_nodelay(true)
        .build()?;
    let pooled = ()
        .serve(StreamableHttpClientTransport::with_client(
            pooled_client,
            config(),
        ))
        .await?;
    timed_runs(&unix, 20).await?;
    timed_runs(&http, 20).await?;
    timed_runs(&pooled, 20).await?;
    let (mut u, mut h, mut k) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SERVE_BLOCKS {
        u.extend(timed_runs(&unix, SERVE_CALLS / SERVE_BLOCKS).await?);
        h.extend(timed_runs(&http, SERVE_CALLS / SERVE_BLOCKS).await?);
        k.extend(timed_runs(&pooled, SERVE_CALLS / SERVE_BLOCKS).await?);
    }
    u.sort();
    h.sort();
    k.sort();
    let u50 = pct(&u, 0.5).as_secs_f64();
    println!("rmcp client, one session each, calls interleaved in blocks:\n");
    println!("| transport | calls | p50 ms | p99 ms | p50 − unix p50 |");
    println!("|---|---|---|---|---|");
    for (name, t) in [
        ("unix socket", &u),
        (
            "HTTP, session, bearer token, keep-alive (pooled reqwest client)",
            &k,
        ),
        (
            "HTTP, same, rmcp's default client (a new connection per request)",
            &h,
        ),
    ] {
        println!(
            "| {name} | {} | {:.3} | {:.3} | {:+.3} ms |",
            t.len(),
            pct(t, 0.5).as_secs_f64() * 1e3,
            pct(t, 0.99).as_secs_f64() * 1e3,
            (pct(t, 0.5).as_secs_f64() - u50) * 1e3
        );
    }
    println!(
        "\nrmcp: HTTP p50 - unix p50 = {:+.3} ms (keep-alive)",
        (pct(&k, 0.5).as_secs_f64() - u50) * 1e3
    );
    unix.cancel().await?;
    http.cancel().await?;
    pooled.cancel().await?;
    Ok(())
}
