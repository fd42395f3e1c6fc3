//! Benchmark: `find_definitions` / `find_callers` over a generated
//! 100,000-line Python tree. Run with
//! `cargo run --release -p lackpy-supervisor --example bench_codeintel [LINES]`.
//! The bar: a cold scan in under one second (release build).

use lackpy_policy::config::ToolSpec;
use lackpy_policy::wire::Data;

use lackpy_supervisor::tools::fs::Workspace;
use std::fmt::Write as _;
use std::time::Instant;

fn module(i: usize, lines: usize) -> String {
    let mut s = format!("\"\"\"Generated module {i}.\"\"\"\nimport os\n\n");
    let mut n = 0;
    while s.lines().count() < lines {
        let _ = write!(
            s,
            "class Widget{i}_{n}(Base):\n    \"\"\"A widget.\"\"\"\n\n    def __init__(self, name: str, size: int = 3) -> None:\n        self.name = name\n        self.size = compute_size(size, factor=2)\n\n    def render(self, out, *args, **kw):\n        for k in range(self.size):\n            out.write(format_line(self.name, k))\n        return [helper_{n}(x) for x in args if x]\n\n\ndef helper_{n}(x, y=None):\n    if x is None:\n        return os.path.join('a', str(y))\n    return {{'x': x, 'y': transform(x, y)}}\n\n\n"
        );
        n += 1;
    }
    s
}

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        provider: "builtin".to_string(),
        ..ToolSpec::default()
    }
}

fn count(d: &Data) -> usize {
    match d {
        Data::List(v) => v.len(),
        _ => 0,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let total: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let per_file = 250;
    let dir = tempfile::tempdir()?;
    let mut lines = 0;
    let mut files = 0;
    while lines < total {
        let sub = dir
            .path()
            .join(format!("pkg{}/mod{}", files / 50, files % 50 / 10));
        std::fs::create_dir_all(&sub)?;
        let text = module(files, per_file);
        lines += text.lines().count();
        std::fs::write(sub.join(format!("m{files}.py")), text)?;
        files += 1;
    }
    println!(
        "generated {files} files, {lines} lines, in {}",
        dir.path().display()
    );
    let ws = Workspace::open(dir.path())?;
    let arg = |s: &str| vec![Data::Str(s.to_string())];
    for (label, tool, name) in [
        (
            "find_definitions (cold: read + parse + index)",
            "find_definitions",
            "render",
        ),
        (
            "find_definitions (warm: read + hash, cached index)",
            "find_definitions",
            "helper_3",
        ),
        ("find_callers (warm)", "find_callers", "compute_size"),
    ] {
        let t0 = Instant::now();
        let r =
            lackpy_supervisor::tools::call(tool, &spec(tool), &arg(name), &ws, &Default::default())
                .map_err(|e| e.message)?;
        let dt = t0.elapsed();
        println!(
            "{label}: {} results in {:.1} ms",
            count(&r),
            dt.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
