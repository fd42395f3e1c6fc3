//! Interpreter benchmark: a few compute-heavy programs timed under lackpy's
//! interpreter and under `python3` in the same run, printing medians, the
//! ratio, and the interpreter's peak accounted memory.
//!
//! `cargo run --release -p lackpy-worker --example bench_interp [-- RUNS [FILTER]]`
//!
//! Honesty rules: both systems run the same program text; CPython's timed
//! region is `exec` of the precompiled module plus clearing its globals (so
//! both sides free the program's objects inside the timed region, as a
//! lackpy run does before it returns; lackpy's region also includes parsing
//! and validation, so any bias is against lackpy); runs alternate between the two
//! systems (one CPython run, one lackpy run, ...) so that load changes on a
//! shared machine hit both alike; and the repr of each program's value is
//! compared, a mismatch failing the benchmark.
//!
//! Two ratios are printed: of the medians (the issue's measure) and of the
//! fastest runs, which a shared, loaded machine disturbs much less (noise
//! only ever adds time: a run that loses a scheduler slice to another
//! process is a whole slice slower).

use lackpy_policy::wire::{Data, Limits, ToolFailure};
use lackpy_worker::interp::{mem_peak, mem_peak_reset, run_source, Kwargs, ToolHost};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

struct NoTools;
impl ToolHost for NoTools {
    fn call(&mut self, _: &str, _: Vec<Data>, _: Kwargs) -> Result<Data, ToolFailure> {
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

/// CPython side: reads one JSON `[src]` per line, runs it once, answers
/// `{"ms": elapsed, "repr": repr(value of the last expression)}`. The last
/// expression statement's value is captured by turning it into an
/// assignment to a global (one STORE_NAME, outside nothing else).
const PY: &str = r#"
import sys, json, time, ast
cache = {}
missing = object()
for line in sys.stdin:
    (src,) = json.loads(line)
    if src not in cache:
        tree = ast.parse(src)
        last = tree.body[-1] if tree.body else None
        if isinstance(last, ast.Expr):
            tree.body[-1] = ast.Assign(targets=[ast.Name(id="lackpy_bench_value", ctx=ast.Store())], value=last.value)
            ast.fix_missing_locations(tree)
        cache[src] = compile(tree, "<bench>", "exec")
    code = cache[src]
    g = {}
    t = time.perf_counter()
    exec(code, g)
    v = g.get("lackpy_bench_value", missing)
    g.clear()
    ms = (time.perf_counter() - t) * 1000
    r = None if v is missing else repr(v)
    print(json.dumps({"ms": ms, "repr": r}), flush=True)
"#;

fn minimum(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// A running `python3` answering one program run per request.
struct Py {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Py {
    fn start() -> Option<Py> {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(PY)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Py {
            child,
            stdin,
            stdout,
        })
    }

    /// Run `src` once: (milliseconds, repr of the value).
    fn run(&mut self, src: &str) -> Option<(f64, Option<String>)> {
        let req = serde_json::to_string(&[src]).ok()?;
        writeln!(self.stdin, "{req}").ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).ok()?;
        let v: serde_json::Value = serde_json::from_str(&line).ok()?;
        let ms = v.get("ms")?.as_f64()?;
        let repr = v.get("repr").and_then(|r| r.as_str()).map(str::to_string);
        Some((ms, repr))
    }
}

impl Drop for Py {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
        let mut best = f64::INFINITY;
        for _ in 0..n {
            let mut out = String::new();
            let t = Instant::now();
            let r = run_source(&src, &[], &mut NoTools, &mut out, &Limits::default());
            best = best.min(t.elapsed().as_secs_f64() * 1000.0);
            if let Some(e) = r.error {
                eprintln!("{e:?}");
            }
        }
        // The fastest run, for quick comparisons while profiling.
        eprintln!("fastest of {n}: {best:.3} ms");
        return;
    }
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let filter = std::env::args().nth(2).unwrap_or_default();
    // LACKPY_BENCH_NOPY=1 skips CPython (for profiling the interpreter alone).
    let mut py = if std::env::var_os("LACKPY_BENCH_NOPY").is_some() {
        None
    } else {
        Py::start()
    };
    println!(
        "{:<22} {:>10} {:>10} {:>7} {:>9} {:>9} {:>7} {:>12}",
        "case", "lackpy ms", "python ms", "ratio", "min ms", "py min", "min rt", "peak mem KiB"
    );
    let mut logs = Vec::new();
    let mut min_logs = Vec::new();
    let mut mismatches = 0;
    for (name, src) in CASES {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let mut ts = Vec::new();
        let mut pts = Vec::new();
        let mut peak = 0;
        let mut ours_repr = None;
        let mut theirs_repr = None;
        for _ in 0..runs {
            // Alternate: one CPython run, then one lackpy run.
            if let Some(p) = py.as_mut() {
                match p.run(src) {
                    Some((ms, r)) => {
                        pts.push(ms);
                        theirs_repr = Some(r);
                    }
                    None => {
                        eprintln!("{name}: python3 failed");
                        py = None;
                    }
                }
            }
            let mut out = String::new();
            mem_peak_reset();
            let t = Instant::now();
            let r = run_source(src, &[], &mut NoTools, &mut out, &Limits::default());
            ts.push(t.elapsed().as_secs_f64() * 1000.0);
            if std::env::var_os("LACKPY_BENCH_VERBOSE").is_some() {
                eprintln!("{name}: run {} {:.2} ms", ts.len(), ts[ts.len() - 1]);
            }
            peak = mem_peak();
            if let Some(e) = r.error {
                eprintln!("{name}: {e:?}");
            }
            ours_repr = Some(r.repr);
        }
        if let (Some(a), Some(b)) = (&ours_repr, &theirs_repr) {
            if a != b {
                mismatches += 1;
                eprintln!("{name}: ANSWERS DIFFER\n  lackpy:  {a:?}\n  CPython: {b:?}");
            }
        }
        let ours_min = minimum(&ts);
        let ours = median(ts);
        if pts.is_empty() {
            println!(
                "{name:<22} {ours:>10.2} {:>10} {:>7} {ours_min:>9.2} {:>9} {:>7} {:>12}",
                "-",
                "-",
                "-",
                "-",
                peak / 1024
            );
        } else {
            let pm = minimum(&pts);
            let p = median(pts);
            let ratio = ours / p;
            let min_ratio = ours_min / pm;
            logs.push(ratio.ln());
            min_logs.push(min_ratio.ln());
            println!(
                "{name:<22} {ours:>10.2} {p:>10.2} {ratio:>7.2} {ours_min:>9.2} {pm:>9.2} {min_ratio:>7.2} {:>12}",
                peak / 1024
            );
        }
    }
    if !logs.is_empty() {
        let gm = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
        let mgm = (min_logs.iter().sum::<f64>() / min_logs.len() as f64).exp();
        println!(
            "geometric mean ratio (lackpy / CPython): {gm:.2} (medians), {mgm:.2} (fastest runs)"
        );
    }
    if mismatches > 0 {
        eprintln!("{mismatches} case(s) gave a different answer from CPython");
        std::process::exit(1);
    }
}
