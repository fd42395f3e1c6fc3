//! `lackpy run [FILE|-] [--profile NAME | --tools a,b] [--workspace DIR] [--json]`:
//! validate a program and run it in a jailed, single-use worker.
//!
//! With `--json`, stdout carries exactly one contract object. Otherwise,
//! as a notebook shows a cell: the captured stdout, then the value's repr
//! (left out when it is `None`), on stdout; the one-line trace summary on
//! its own line and any error (with the source line and a caret) on
//! stderr; all of it escaped for the terminal ([`super::escape`]).

use super::common::{self, ProgramArgs};
use super::escape;
use lackpy_policy::wire::Limits;
use lackpy_supervisor::providers::Providers;
use lackpy_supervisor::{Prestarted, RunReport, RunRequest, Supervisor, SupervisorConfig};
use std::sync::Arc;

/// Arguments of `lackpy run`.
#[derive(clap::Args)]
#[command(
    after_help = "Every run is traced in WORKSPACE/.lackpy/traces: without --workspace that is\nthe current directory (created there if missing; `lackpy trace list` reads it).\n\nExit status: 0 ok, 1 runtime/tool/limit error, 2 validation error,\n3 usage or configuration error, 4 internal error."
)]
pub struct Args {
    #[command(flatten)]
    program: ProgramArgs,
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

/// The run's limits: `base` (the profile's) with the command line's
/// overrides.
fn limits_of(args: &Args, base: &Limits) -> Result<Limits, common::CliError> {
    let mut limits = base.clone();
    if let Some(t) = args.timeout {
        if !(t.is_finite() && t > 0.0) {
            return Err(common::CliError::Usage(
                "--timeout must be a positive number of seconds".to_string(),
            ));
        }
        limits.wall_ms = (t * 1000.0).ceil() as u64;
    }
    if let Some(f) = args.fuel {
        limits.fuel = f;
    }
    if let Some(m) = args.memory_mb {
        limits.memory_bytes = m.saturating_mul(1 << 20);
    }
    Ok(limits)
}

/// Options of `lackpy run` that change the worker's jail or mean no run.
const NOT_PRESTARTED: [&str; 6] = [
    "--memory-mb",
    "--timeout",
    "-h",
    "--help",
    "-V",
    "--version",
];

/// A worker started before the command line is parsed, when `argv` (the
/// arguments after the program name) is `run …` without an option that
/// changes the worker's jail (`--memory-mb` and `--timeout` set its address
/// space and CPU rlimits) or asks for no run (`--help`, `--version`). Its jail is
/// a guess (the full jail, the default limits), used only if it covers the
/// run's real jail and killed otherwise (`Prestarted`).
pub struct Early {
    /// The configuration it was spawned with ([`main`] goes on with it: the
    /// executable is opened once).
    cfg: SupervisorConfig,
    worker: Prestarted,
}

/// Start the [`Early`] worker for `argv`. `None` when the line is anything
/// else, or the worker could not be started: then [`main`] starts one after
/// parsing.
pub fn prestart(argv: &[std::ffi::OsString]) -> Option<Early> {
    if !prestartable(argv) {
        return None;
    }
    let cfg = SupervisorConfig::new().ok()?;
    let worker = Prestarted::spawn(&cfg, &Limits::default())?;
    Some(Early { cfg, worker })
}

/// Whether [`prestart`] may start a worker for `argv`.
fn prestartable(argv: &[std::ffi::OsString]) -> bool {
    if argv.first().map(|a| a.as_os_str()) != Some("run".as_ref()) {
        return false;
    }
    !argv.iter().skip(1).any(|a| {
        let a = a.as_encoded_bytes();
        NOT_PRESTARTED.iter().any(|o| {
            a.strip_prefix(o.as_bytes())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"="))
        })
    })
}

/// Run the subcommand; `early` is what [`prestart`] started, if anything.
pub fn main(args: Args, early: Option<Early>) -> anyhow::Result<i32> {
    // The worker starts jailing itself now (if it did not before the
    // command line was parsed), on the other CPU, while this thread reads
    // the configuration, the program and validates it. Its jail is a guess
    // (the full jail, the default limits with the command line's): the
    // supervisor uses it only if it covers the run's real jail and kills it
    // otherwise (`Prestarted`).
    let (mut sup_cfg, early) = match early {
        Some(Early { cfg, worker }) => (cfg, Some(worker)),
        None => {
            let cfg = SupervisorConfig::new()?;
            let worker = limits_of(&args, &Limits::default())
                .ok()
                .and_then(|l| Prestarted::spawn(&cfg, &l));
            (cfg, worker)
        }
    };
    let providers = Arc::new(Providers::new());
    let mut loaded = match common::load(&args.program.select, &providers) {
        Ok(l) => l,
        Err(e) => return Ok(e.report("run", args.program.json)),
    };
    let limits = match limits_of(&args, &loaded.profile.limits) {
        Ok(l) => l,
        Err(e) => return Ok(e.report("run", args.program.json)),
    };
    let source = match args.program.source.read(limits.source_bytes) {
        Ok(s) => s,
        Err(e) => return Ok(e.report("run", args.program.json)),
    };
    let jail_level = match common::jail_level(&loaded.config) {
        Ok(l) => l,
        Err(e) => return Ok(e.report("run", args.program.json)),
    };
    sup_cfg.jail_level = jail_level;
    sup_cfg.trace_limits = loaded.config.trace.unwrap_or_default();
    let sup = Supervisor::with_providers(sup_cfg, providers)?;
    if let Some(w) = early {
        sup.adopt(w);
    }
    let mut report = sup.run(RunRequest {
        source: source.clone(),
        profile: loaded.profile.clone(),
        workspace: loaded.workspace.clone(),
        limits,
    });
    if let Some(e) = report.error.as_mut() {
        common::explain_unknown_tools(std::slice::from_mut(e), &mut loaded);
    }
    if args.program.json {
        use std::io::Write;
        // Surrogate mode: a value holding a lone surrogate is null (strict
        // JSON cannot carry it); the repr is exact.
        if report.surrogates {
            lackpy_supervisor::json::null_surrogate_value(&mut report.value, &mut report.warnings);
        }
        let line = serde_json::to_string(&report)?;
        // A closed pipe (`lackpy run --json | head -c1`) is not an error.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    } else {
        print_human(&report, &String::from_utf8_lossy(&source));
    }
    Ok(report.exit_code())
}

fn print_human(report: &RunReport, source: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    // As a notebook shows a cell: what it printed, then its value (none
    // for `None`, so a program ending in `print(...)` shows only the print).
    if !report.stdout.is_empty() {
        let _ = out.write_all(escape::block(&report.stdout).as_bytes());
        if !report.stdout.ends_with('\n') {
            let _ = writeln!(out);
        }
    }
    if let Some(r) = report.repr.as_deref().filter(|r| *r != "None") {
        let _ = writeln!(out, "{}", escape::line(r));
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
        // Escaped piece by piece inside (its own line structure is kept).
        eprint!("error: {}", common::render_error(source, e));
    }
}

#[cfg(test)]
mod tests {
    use super::prestartable;

    fn line(args: &[&str]) -> Vec<std::ffi::OsString> {
        args.iter().map(Into::into).collect()
    }

    #[test]
    fn only_a_plain_run_is_prestarted() {
        assert!(prestartable(&line(&["run", "--json", "-c", "1 + 1"])));
        assert!(prestartable(&line(&["run", "--fuel", "9", "prog.py"])));
        assert!(!prestartable(&line(&["validate", "-c", "1"])));
        assert!(!prestartable(&line(&[])));
        // Options that change the worker's rlimits, or mean no run.
        for opt in [
            &["--memory-mb", "512"][..],
            &["--memory-mb=512"],
            &["--timeout", "3"],
            &["--timeout=3"],
            &["-h"],
            &["--help"],
            &["--version"],
        ] {
            let mut a = vec!["run", "-c", "1"];
            a.extend_from_slice(opt);
            assert!(!prestartable(&line(&a)), "{a:?}");
        }
        // A lookalike is not the option.
        assert!(prestartable(&line(&["run", "--timeouts-file", "-c", "1"])));
    }
}
