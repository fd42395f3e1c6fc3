//! `lackpy trace list|show`: read the run traces of a workspace
//! (`<workspace>/.lackpy/traces/*.jsonl`, one JSON object per run).
//!
//! A trace holds program text, tool arguments and error messages, and the
//! files themselves sit in the workspace: every field shown to a human is
//! escaped for the terminal ([`super::escape::line`]), one field per line
//! at most; `--json` prints exact JSON.

use super::escape;
use lackpy_supervisor::trace::{read_all, TraceRecord};
use std::path::PathBuf;

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
    let mut all = read_all(&ws);
    all.sort_by(|a, b| a.time.cmp(&b.time));
    match args.command {
        Sub::List { limit, json } => {
            let recent: Vec<&TraceRecord> = all.iter().rev().take(limit).collect();
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
            let matches: Vec<&TraceRecord> = all
                .iter()
                .filter(|r| r.run_id.starts_with(&run_id))
                .collect();
            let r = match matches.as_slice() {
                [one] => *one,
                [] => {
                    eprintln!("lackpy trace: no run {run_id:?} in {}", ws.display());
                    return Ok(3);
                }
                _ => {
                    eprintln!(
                        "lackpy trace: {run_id:?} matches {} runs; give more of the id",
                        matches.len()
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
