//! Benchmark: one `python`-provider call round trip (warm helper) and one
//! `command`-provider call (spawn + jail + exec + wait), medians and p99.
//! `cargo run --release -p lackpy-supervisor --example bench_providers`.

use lackpy_policy::config::{ArgSpec, ToolSpec};
use lackpy_policy::wire::Data;
use lackpy_supervisor::providers::{Providers, RunContext};
use lackpy_supervisor::tools::fs::Workspace;
use std::time::{Duration, Instant};

fn spec(name: &str, provider: &str, cfg: serde_json::Value, args: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        provider: provider.to_string(),
        provider_config: cfg.as_object().cloned().unwrap_or_default(),
        args: args
            .iter()
            .map(|a| ArgSpec {
                name: (*a).to_string(),
                type_name: "Any".to_string(),
                description: String::new(),
            })
            .collect(),
        ..ToolSpec::default()
    }
}

fn stats(label: &str, mut v: Vec<Duration>) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let med = v[v.len() / 2];
    let p99 = v[(v.len() * 99 / 100).min(v.len() - 1)];
    println!(
        "{label}: median {:.0} us, p99 {:.0} us ({} calls)",
        us(med),
        us(p99),
        v.len()
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("bench_tools.py"),
        "def add(a, b):\n    return a + b\n",
    )?;
    std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\ngamma\n")?;
    let ws = Workspace::open(dir.path())?;
    let providers = Providers::new();
    let run = RunContext::default();
    let call = |spec: &ToolSpec, args: &[Data]| {
        providers.call(spec, std::sync::Arc::new(args.to_vec()), &ws, &run)
    };

    let py = spec(
        "add",
        "python",
        serde_json::json!({"module": "bench_tools", "function": "add"}),
        &["a", "b"],
    );
    let args = [Data::Int(1), Data::Int(2)];
    let t0 = Instant::now();
    call(&py, &args).map_err(|e| e.message)?;
    println!(
        "python helper start + first call: {:.1} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut v = Vec::new();
    for _ in 0..2000 {
        let t = Instant::now();
        call(&py, &args).map_err(|e| e.message)?;
        v.push(t.elapsed());
    }
    stats("python call round trip (warm)", v);

    let cmd = spec(
        "grep",
        "command",
        serde_json::json!({"argv": ["grep", "-c", "--", "{p}", "notes.txt"], "parse": "text"}),
        &["p"],
    );
    let mut v = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        call(&cmd, &[Data::Str("a".into())]).map_err(|e| e.message)?;
        v.push(t.elapsed());
    }
    stats("command call (jailed grep)", v);
    providers.python().shutdown();
    Ok(())
}
