//! `lackpy run [FILE|-] [--profile NAME | --tools a,b] [--workspace DIR] [--json]`:
//! validate a program and run it in a jailed, single-use worker.
//!
//! With `--json`, stdout carries exactly one contract object. Otherwise:
//! the value's repr, then the captured stdout, on stdout; a one-line trace
//! summary and any error (with the source line and a caret) on stderr.

use super::common::Select;
use lackpy_policy::config::{ResolvedProfile, ToolSpec};
use lackpy_policy::wire::Limits;
use lackpy_supervisor::{JailLevel, RunReport, RunRequest, Supervisor, SupervisorConfig};
use std::io::Read;
use std::path::PathBuf;

/// Arguments of `lackpy run`.
#[derive(clap::Args)]
pub struct Args {
    /// Program file, or `-` for stdin (the default).
    #[arg(value_name = "FILE|-")]
    file: Option<String>,
    /// Program text given inline instead of a file.
    #[arg(
        short = 'c',
        long = "code",
        value_name = "PROGRAM",
        conflicts_with = "file"
    )]
    code: Option<String>,
    #[command(flatten)]
    select: Select,
    /// Print one JSON object (the contract) instead of human-readable output.
    #[arg(long)]
    json: bool,
    /// Wall-clock limit in seconds (overrides the profile's).
    #[arg(long, value_name = "SECS")]
    timeout: Option<f64>,
    /// Interpreter step budget (overrides the profile's).
    #[arg(long)]
    fuel: Option<u64>,
    /// Memory limit in MiB (overrides the profile's).
    #[arg(long, value_name = "MIB")]
    memory_mb: Option<u64>,
}

/// Exit status for usage and configuration errors.
const EXIT_USAGE: i32 = 3;

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let source = match read_source(&args) {
        Ok(s) => s,
        Err(msg) => {
            eprintln!("lackpy run: {msg}");
            return Ok(EXIT_USAGE);
        }
    };
    let workspace = args
        .select
        .workspace
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    if !workspace.is_dir() {
        eprintln!(
            "lackpy run: workspace {} is not a directory",
            workspace.display()
        );
        return Ok(EXIT_USAGE);
    }
    let profile = match resolve_profile(&args.select) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("lackpy run: {msg}");
            return Ok(EXIT_USAGE);
        }
    };
    let mut limits = profile.limits.clone();
    if let Some(t) = args.timeout {
        if !(t.is_finite() && t > 0.0) {
            eprintln!("lackpy run: --timeout must be a positive number of seconds");
            return Ok(EXIT_USAGE);
        }
        limits.wall_ms = (t * 1000.0).ceil() as u64;
    }
    if let Some(f) = args.fuel {
        limits.fuel = f;
    }
    if let Some(m) = args.memory_mb {
        limits.memory_bytes = m.saturating_mul(1 << 20);
    }
    let mut cfg = SupervisorConfig::new()?;
    cfg.jail_level = JailLevel::full();
    let sup = Supervisor::new(cfg)?;
    let report = sup.run(RunRequest {
        source: source.clone(),
        profile,
        workspace,
        limits,
    });
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_human(&report, &String::from_utf8_lossy(&source));
    }
    Ok(report.exit_code())
}

fn read_source(args: &Args) -> Result<Vec<u8>, String> {
    if let Some(code) = &args.code {
        return Ok(code.clone().into_bytes());
    }
    // Read at most a little past the largest source any profile allows, so
    // a huge stdin cannot exhaust memory; the size check happens in validation.
    const READ_CAP: u64 = 16 * 1024 * 1024;
    let mut buf = Vec::new();
    match args.file.as_deref() {
        None | Some("-") => {
            std::io::stdin()
                .take(READ_CAP)
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read stdin: {e}"))?;
        }
        Some(path) => {
            let f = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
            f.take(READ_CAP)
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read {path}: {e}"))?;
        }
    }
    Ok(buf)
}

/// The profile for this run. (Until the config loader lands: `--tools`
/// picks builtins by name; no flag gives the read-only default.)
fn resolve_profile(sel: &Select) -> Result<ResolvedProfile, String> {
    if let Some(name) = &sel.profile {
        return Err(format!(
            "profile {name:?} not found (profiles from config are not supported by this build yet)"
        ));
    }
    let (name, wanted): (&str, Vec<String>) = match &sel.tools {
        Some(list) => (
            "(tools)",
            list.iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        ),
        None => ("(default)", vec!["read_file".into(), "find_files".into()]),
    };
    let mut tools: Vec<(String, ToolSpec)> = Vec::new();
    for t in wanted {
        let spec = lackpy_supervisor::tools::builtin_spec(&t)
            .ok_or_else(|| format!("unknown tool {t:?} in --tools"))?;
        if !tools.iter().any(|(n, _)| *n == t) {
            tools.push((t, spec));
        }
    }
    Ok(ResolvedProfile {
        name: name.to_string(),
        tools,
        limits: Limits::default(),
    })
}

fn print_human(report: &RunReport, source: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Some(r) = &report.repr {
        let _ = writeln!(out, "{r}");
    }
    if !report.stdout.is_empty() {
        let _ = out.write_all(report.stdout.as_bytes());
        if !report.stdout.ends_with('\n') {
            let _ = writeln!(out);
        }
    }
    let _ = out.flush();
    let n = report.trace.len();
    let failed = report.trace.iter().filter(|t| !t.ok).count();
    let us: u64 = report.trace.iter().map(|t| t.duration_us).sum();
    eprintln!(
        "-- {n} tool call{}{}, {us} us in tools, grade w={} d={}, run {}",
        if n == 1 { "" } else { "s" },
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        report.grade.w,
        report.grade.d,
        report.run_id
    );
    if let Some(e) = &report.error {
        eprintln!("error: {}: {}", e.type_name, e.message);
        if let Some(line) = e.line {
            let text = source
                .lines()
                .nth(line.saturating_sub(1) as usize)
                .unwrap_or("");
            eprintln!(
                "  --> line {line}{}",
                e.col.map_or(String::new(), |c| format!(", column {c}"))
            );
            eprintln!("   | {text}");
            if let Some(col) = e.col {
                eprintln!("   | {}^", " ".repeat(col.saturating_sub(1) as usize));
            }
        }
        if let Some(h) = &e.hint {
            eprintln!("hint: {h}");
        }
    }
}
