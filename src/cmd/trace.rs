//! `lackpy trace list|show`: read the run traces of a workspace
//! (`<workspace>/.lackpy/traces/*.jsonl`, one JSON object per run).

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
                        r.run_id,
                        r.time.get(..19).unwrap_or(&r.time),
                        r.outcome,
                        r.calls.len(),
                        r.profile,
                        first
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
            println!("run       {}", r.run_id);
            println!("time      {}", r.time);
            println!("profile   {}", r.profile);
            println!("grade     {}", r.grade);
            println!("jail      {}", r.jail_level);
            println!("outcome   {}", r.outcome);
            if let Some(e) = &r.error {
                println!("error     {e}");
            }
            println!("duration  {} us", r.duration_us);
            println!("sha256    {}", r.program_sha256);
            println!("program:");
            for l in r.program.lines() {
                println!("    {l}");
            }
            println!("calls ({}):", r.calls.len());
            for c in &r.calls {
                let args: Vec<String> = c.args.iter().map(|a| a.to_string()).collect();
                println!(
                    "    {}({}) {} {} us{}",
                    c.tool,
                    args.join(", "),
                    if c.ok { "ok" } else { "FAILED" },
                    c.duration_us,
                    c.error.as_ref().map_or(String::new(), |e| format!(": {e}"))
                );
            }
            Ok(0)
        }
    }
}
