//! Interpreter benchmark: a few compute-heavy programs timed under lackpy's
//! interpreter and under `python3` in the same run, printing medians, the
//! ratio, and the interpreter's peak accounted memory.
//!
//! `cargo run --release -p lackpy-worker --example bench_interp [-- RUNS]`

use lackpy_policy::wire::{Data, Limits, ToolFailure};
use lackpy_worker::interp::{run_source, value, ToolHost};
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

struct NoTools;
impl ToolHost for NoTools {
    fn call(&mut self, _: &str, _: Vec<Data>, _: Vec<(String, Data)>) -> Result<Data, ToolFailure> {
        Err(ToolFailure {
            type_name: "ToolFailed".into(),
            message: "no tools in benchmarks".into(),
        })
    }
}

const CASES: &[(&str, &str)] = &[
    (
        "dict_string_loops",
        "d = {}\nfor i in range(300):\n    for j in range(300):\n        k = str(i % 37) + ':' + str(j % 11)\n        d[k] = d.get(k, 0) + i * j\n(len(d), sum(d.values()))",
    ),
    ("list_comp_100k", "xs = [i * 2 + 1 for i in range(100000)]\nlen(xs)"),
    (
        "sort_key_lambda",
        "xs = [(i * 7919) % 10007 for i in range(50000)]\nys = sorted(xs, key=lambda x: (x % 100, -x))\nys[:3]",
    ),
    (
        "bigint_factorial",
        "f = 1\nfor i in range(1, 1200):\n    f = f * i\ns = 0\nfor i in range(300):\n    s = s + f % (i + 7)\ns",
    ),
    (
        "string_methods",
        "words = ('alpha beta gamma delta epsilon ' * 4000).split()\nout = [w.upper().replace('A', 'x') for w in words if w.startswith(('a', 'b', 'g'))]\n(len(out), '-'.join(out)[:40], sum(len(w) for w in words))",
    ),
    (
        "fstrings_and_floats",
        "parts = [f'{i:05d}|{i / 7:.3f}' for i in range(30000)]\nlen(''.join(parts))",
    ),
    (
        "counting_words",
        "text = ' '.join(str(i % 97) for i in range(60000))\ncounts = {}\nfor w in text.split():\n    counts[w] = counts.get(w, 0) + 1\nsorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3]",
    ),
];

const PY: &str = r#"
import sys, json, time, statistics
cases = json.load(sys.stdin)
runs = int(sys.argv[1])
out = {}
for name, src in cases:
    code = compile(src, name, "exec")
    ts = []
    for _ in range(runs):
        g = {}
        t = time.perf_counter()
        exec(code, g)
        ts.append((time.perf_counter() - t) * 1000)
    out[name] = statistics.median(ts)
print(json.dumps(out))
"#;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // `bench_interp --prog FILE N`: run one program N times (for profiling).
    if std::env::args().nth(1).as_deref() == Some("--prog") {
        let src = std::fs::read_to_string(std::env::args().nth(2).unwrap_or_default())
            .unwrap_or_default();
        let n: usize = std::env::args()
            .nth(3)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        for _ in 0..n {
            let mut out = String::new();
            let r = run_source(&src, &[], &mut NoTools, &mut out, &Limits::default());
            if let Some(e) = r.error {
                eprintln!("{e:?}");
            }
        }
        return;
    }
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let filter = std::env::args().nth(2).unwrap_or_default();
    // LACKPY_BENCH_NOPY=1 skips CPython (for profiling the interpreter alone).
    let py = if std::env::var_os("LACKPY_BENCH_NOPY").is_some() {
        None
    } else {
        python_times(runs)
    };
    println!(
        "{:<22} {:>10} {:>10} {:>7} {:>12}",
        "case", "lackpy ms", "python ms", "ratio", "peak mem KiB"
    );
    let mut logs = Vec::new();
    for (name, src) in CASES {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let mut ts = Vec::new();
        let mut peak = 0;
        for _ in 0..runs {
            let mut out = String::new();
            value::mem_peak_reset();
            let t = Instant::now();
            let r = run_source(src, &[], &mut NoTools, &mut out, &Limits::default());
            ts.push(t.elapsed().as_secs_f64() * 1000.0);
            peak = value::mem_peak();
            if let Some(e) = r.error {
                eprintln!("{name}: {e:?}");
            }
        }
        let ours = median(ts);
        let theirs = py
            .as_ref()
            .and_then(|p| p.get(*name))
            .and_then(|v| v.as_f64());
        match theirs {
            Some(p) => {
                let ratio = ours / p;
                logs.push(ratio.ln());
                println!(
                    "{name:<22} {ours:>10.2} {p:>10.2} {ratio:>7.2} {:>12}",
                    peak / 1024
                );
            }
            None => println!(
                "{name:<22} {ours:>10.2} {:>10} {:>7} {:>12}",
                "-",
                "-",
                peak / 1024
            ),
        }
    }
    if !logs.is_empty() {
        let gm = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
        println!("geometric mean ratio (lackpy / CPython): {gm:.2}");
    }
}

fn python_times(runs: usize) -> Option<serde_json::Map<String, serde_json::Value>> {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PY)
        .arg(runs.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let input = serde_json::to_string(CASES).ok()?;
    child.stdin.as_mut()?.write_all(input.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    serde_json::from_slice(&out.stdout).ok()
}
