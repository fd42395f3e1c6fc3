//! `lackpy trace list|show`: read the run traces of a workspace
//! (`<workspace>/.lackpy/traces/*.jsonl`, one JSON object per run).
//!
//! A trace holds program text, tool arguments and error messages, and the
//! files themselves sit in the workspace: every field shown to a human is
//! escaped for the terminal ([`super::escape::line`]), one field per line
//! at most; `--json` prints exact JSON.

use super::escape;
use lackpy_supervisor::trace::{read_latest_capped, TraceRecord};
use std::path::PathBuf;

/// Most bytes of trace lines `lackpy trace` holds (and prints), files read
/// newest first. Why a cap: the traces of a workspace reach `total_mb`
/// (512 MiB by default) and were all held and parsed for one `list`
/// (~1.3 GiB of memory for 330 MB of traces); 16 MiB is sixteen runs at
/// the default `run_bytes`, and hundreds of ordinary ones.
const MAX_READ_BYTES: usize = 16 << 20;

/// Arguments of `lackpy trace`.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
    /// Workspace whose traces to read (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// List recent runs, newest first.
    List {
        /// How many runs to show.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print a JSON array of trace records.
        #[arg(long)]
        json: bool,
    },
    /// Show one run in full.
    Show {
        /// The run id (a unique prefix is enough).
        run_id: String,
        /// Print the trace record as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let ws = args.workspace.unwrap_or_else(|| PathBuf::from("."));
    let capped_note = |what: &str| {
        eprintln!(
            "lackpy trace: {what}: at most {} MiB of trace records ({} JSON values) are read, newest first; older runs were left out",
            MAX_READ_BYTES >> 20,
            MAX_READ_BYTES / lackpy_supervisor::trace::BYTES_PER_VALUE
        );
    };
    match args.command {
        Sub::List { limit, json } => {
            let (all, capped) = read_latest_capped(&ws, limit, MAX_READ_BYTES, |_| true);
            if capped {
                capped_note(&format!("showing {} runs", all.len()));
            }
            let recent: Vec<&TraceRecord> = all.iter().rev().collect();
            if json {
                println!("{}", serde_json::to_string(&recent)?);
            } else {
                for r in recent {
                    let first = r.program.lines().next().unwrap_or("");
                    let first: String = first.chars().take(50).collect();
                    println!(
                        "{}  {}  {:<10} {:>3} calls  {:<9} {}",
                        escape::line(&r.run_id),
                        escape::line(r.time.get(..19).unwrap_or(&r.time)),
                        escape::line(&r.outcome),
                        r.calls.len(),
                        escape::line(&r.profile),
                        escape::line(&first)
                    );
                }
            }
            Ok(0)
        }
        Sub::Show { run_id, json } => {
            // Two matches are enough to tell an ambiguous prefix.
            let (all, capped) =
                read_latest_capped(&ws, 2, MAX_READ_BYTES, |id| id.starts_with(&run_id));
            if capped {
                capped_note(&format!("matches of {run_id:?}"));
            }
            let matches: Vec<&TraceRecord> = all.iter().collect();
            let r = match matches.as_slice() {
                [one] => *one,
                [] => {
                    eprintln!("lackpy trace: no run {run_id:?} in {}", ws.display());
                    return Ok(3);
                }
                _ => {
                    eprintln!(
                        "lackpy trace: {run_id:?} matches more than one run; give more of the id"
                    );
                    return Ok(3);
                }
            };
            if json {
                println!("{}", serde_json::to_string_pretty(r)?);
                return Ok(0);
            }
            let l = |s: &str| escape::line(s).into_owned();
            println!("run       {}", l(&r.run_id));
            println!("time      {}", l(&r.time));
            println!("profile   {}", l(&r.profile));
            println!("grade     {}", l(&r.grade.to_string()));
            println!("jail      {}", l(&r.jail_level.to_string()));
            println!("outcome   {}", l(&r.outcome));
            if let Some(e) = &r.error {
                println!("error     {}", l(&e.to_string()));
            }
            println!("duration  {} us", r.duration_us);
            println!("sha256    {}", l(&r.program_sha256));
            println!("program:");
            // Lines end at '\n' (or "\r\n") only: a lone CR, U+2028 or
            // U+2029 inside a line is shown escaped, never as a line break.
            for line in r.program.lines() {
                println!("    {}", l(line));
            }
            println!("calls ({}):", r.calls.len());
            for c in &r.calls {
                let args: Vec<String> = c.args.iter().map(|a| a.to_string()).collect();
                println!(
                    "    {}({}) {} {} us{}",
                    l(&c.tool),
                    l(&args.join(", ")),
                    if c.ok { "ok" } else { "FAILED" },
                    c.duration_us,
                    c.error
                        .as_ref()
                        .map_or(String::new(), |e| format!(": {}", l(&e.to_string())))
                );
            }
            Ok(0)
        }
    }
}
