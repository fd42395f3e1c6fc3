//! Validation latency: a typical 20-line program (on the fast parser and,
//! with one `;` added, on the rustpython-parser fallback), and ~16/32/64 KiB
//! programs (to check that time grows linearly with size).
//!
//! Run: `cargo run --release -p lackpy-policy --example bench_validate`

use lackpy_policy::lang::{validate, Grade, Namespace, ToolEntry};
use lackpy_policy::wire::Limits;
use std::time::{Duration, Instant};

const TYPICAL: &str = r#"files = find_files("**/*.py")
todos = []
counts = {}
for path in files:
    text = read_file(path)
    lines = text.splitlines()
    counts[path] = len(lines)
    for i, line in enumerate(lines):
        if "TODO" in line:
            todos.append({"file": path, "line": i + 1, "text": line.strip()})
big = [p for p in files if counts[p] > 100]
ranked = sorted(counts.items(), key=lambda kv: kv[1], reverse=True)
top = ranked[:5]
summary = f"{len(files)} files, {len(todos)} TODOs"
if len(big) > 0:
    summary = summary + f", {len(big)} large"
by_file = sort_by(todos, "file")
print(summary)
names = [t["file"] for t in by_file]
{"summary": summary, "top": top, "todo_files": names}
"#;

fn ns() -> Namespace {
    let t = |n: &str, w, d| ToolEntry::new(n, &[], Grade { w, d });
    Namespace {
        tools: vec![t("read_file", 1, 1), t("find_files", 1, 1)],
    }
}

fn measure(src: &str, iters: usize) -> (Duration, Duration) {
    let ns = ns();
    let limits = Limits::default();
    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        let t = Instant::now();
        let r = validate(src, &ns, &limits);
        times.push(t.elapsed());
        assert!(r.is_ok(), "{:?}", r.err());
    }
    times.sort();
    let median = times[times.len() / 2];
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    (median, p99)
}

fn program_of(bytes: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() + TYPICAL.len() < bytes {
        // Rename variables so the repeated block stays realistic.
        s.push_str(&TYPICAL.replace("summary", &format!("summary{i}")));
        i += 1;
    }
    s
}

/// Median of CPython's `ast.parse` on `src`, in µs (None without python3).
fn cpython_parse_us(src: &str) -> Option<f64> {
    let script = "import ast, sys, timeit\nsrc = sys.stdin.read()\nt = timeit.repeat(lambda: ast.parse(src), number=200, repeat=15)\nts = sorted(x / 200 for x in t)\nprint(ts[len(ts) // 2] * 1e6)\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take()?.write_all(src.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn main() {
    // Profiling aid: `BENCH_LOOP=N [BENCH_PARSE_ONLY=1] bench_validate` runs
    // only the 20-line program N times (for `perf record`), printing nothing.
    if let Some(n) = std::env::var("BENCH_LOOP")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let parse_only = std::env::var_os("BENCH_PARSE_ONLY").is_some();
        let (ns, limits) = (ns(), Limits::default());
        for _ in 0..n {
            if parse_only {
                let r = rustpython_parser::parse(TYPICAL, rustpython_parser::Mode::Module, "<p>");
                assert!(r.is_ok());
            } else {
                assert!(validate(TYPICAL, &ns, &limits).is_ok());
            }
        }
        return;
    }
    println!(
        "rustpython-parser alone, 20-line program: median {:.1} µs",
        parse_only().as_secs_f64() * 1e6
    );
    let (m, p) = measure(TYPICAL, 5000);
    println!(
        "20-line program ({} bytes): median {:.1} µs, p99 {:.1} µs",
        TYPICAL.len(),
        m.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6
    );
    // The same program with one `;` (outside the fast parser's subset):
    // what validation costs on the rustpython-parser fallback path.
    let fallback = TYPICAL.replacen("todos = []\ncounts = {}", "todos = []; counts = {}", 1);
    let (fm, fp) = measure(&fallback, 5000);
    println!(
        "20-line program, fallback path (rustpython-parser): median {:.1} µs, p99 {:.1} µs",
        fm.as_secs_f64() * 1e6,
        fp.as_secs_f64() * 1e6
    );
    if let Some(py) = cpython_parse_us(TYPICAL) {
        println!(
            "CPython ast.parse alone, 20-line program: median {py:.1} µs (lackpy validate / CPython parse = {:.2})",
            m.as_secs_f64() * 1e6 / py
        );
    }
    for kib in [16usize, 32, 64] {
        let src = program_of(kib * 1024 - 256);
        let (m, p) = measure(&src, 200);
        let per = m.as_secs_f64() * 1e6 / (src.len() as f64 / 1024.0);
        println!(
            "{kib:>2} KiB program ({} bytes): median {:.0} µs, p99 {:.0} µs, {per:.1} µs/KiB",
            src.len(),
            m.as_secs_f64() * 1e6,
            p.as_secs_f64() * 1e6
        );
    }
}

/// Time of the parser alone on the 20-line program (for comparison).
#[allow(dead_code)]
fn parse_only() -> Duration {
    let mut times: Vec<Duration> = (0..5000)
        .map(|_| {
            let t = Instant::now();
            let r = rustpython_parser::parse(TYPICAL, rustpython_parser::Mode::Module, "<p>");
            let e = t.elapsed();
            assert!(r.is_ok());
            e
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}
