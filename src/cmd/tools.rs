//! `lackpy tools [--workspace DIR] [--profile NAME] [--json]`: list the
//! toolbox (the shipped builtins plus `[[tools]]` from config), or the tools
//! of one profile.

use super::common;
use super::escape;
use lackpy_policy::config::ToolSpec;
use std::path::PathBuf;

/// Arguments of `lackpy tools`.
///
/// Without `--profile`, lists every tool of the toolbox; with it, the tools
/// that profile grants (under the names programs use). Exit status 3 for a
/// missing workspace, bad config or unknown profile.
///
/// `--json` prints `{"tools": [{"name", "tool", "provider", "signature",
/// "description", "args": [{"name", "type", "description"}], "returns",
/// "grade": {"w", "d"}, "docs"}]}`.
#[derive(clap::Args)]
pub struct Args {
    /// Only the tools of this profile.
    #[arg(long)]
    profile: Option<String>,
    /// Workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// JSON form of one tool under the name `alias`.
pub fn tool_json(alias: &str, t: &ToolSpec) -> serde_json::Value {
    serde_json::json!({
        "name": alias,
        "tool": t.name,
        "provider": t.provider,
        "signature": t.signature_as(alias),
        "description": t.description,
        "args": t.args.iter().map(|a| serde_json::json!({
            "name": a.name, "type": a.type_name, "description": a.description,
        })).collect::<Vec<_>>(),
        "returns": t.returns,
        "grade": {"w": t.grade_w, "d": t.effects_ceiling},
        "docs": t.docs,
    })
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let (_, config, kits) = match common::load_for_listing(args.workspace.clone()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lackpy tools: {}", escape::line(&e.to_string()));
            return Ok(e.exit_code());
        }
    };
    let tools: Vec<(String, ToolSpec)> = match &args.profile {
        None => config
            .toolbox()
            .tools
            .into_iter()
            .map(|t| (t.name.clone(), t))
            .collect(),
        Some(p) => match config.resolve(Some(p), None, &kits) {
            Ok(r) => r.tools,
            Err(e) => {
                eprintln!(
                    "lackpy tools: config error: {}",
                    escape::line(&e.to_string())
                );
                return Ok(3);
            }
        },
    };
    if args.json {
        let list: Vec<serde_json::Value> = tools.iter().map(|(a, t)| tool_json(a, t)).collect();
        println!("{}", serde_json::json!({ "tools": list }));
        return Ok(0);
    }
    if tools.is_empty() {
        println!("(no tools)");
        return Ok(0);
    }
    for (alias, t) in &tools {
        let sig = t.signature_as(alias);
        let target = if alias != &t.name {
            format!(" (= {})", t.name)
        } else {
            String::new()
        };
        // Names, signatures and descriptions come from the configuration,
        // kits and MCP servers (workspace-controlled): escaped, and a
        // description's own lines each indented.
        println!(
            "{}{}  [w={} d={}, {}]",
            escape::line(&sig),
            escape::line(&target),
            t.grade_w,
            t.effects_ceiling,
            escape::line(&t.provider)
        );
        for line in t
            .description
            .split('\n')
            .filter(|_| !t.description.is_empty())
        {
            println!("    {}", escape::line(line));
        }
    }
    Ok(0)
}
