//! `lackpy tools [--workspace DIR] [--profile NAME] [--json]`: list the
//! toolbox (the shipped builtins, `[[tools]]` from config and the tools of
//! `[mcp_servers]`), with the profiles that grant each tool, or the tools
//! of one profile. MCP tools hidden by another tool of the same name are
//! reported.

use super::common;
use super::escape;
use lackpy_policy::config::{Config, Kits, ToolSpec};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which profiles grant each tool (by tool name, profile names sorted;
/// `(default)` when the default selection, used when a call names no
/// profile, grants it). Profiles that do not resolve grant nothing.
pub fn grants(config: &Config, kits: &Kits) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut names: Vec<Option<String>> = config.profile_names(kits).into_iter().map(Some).collect();
    if config.default_profile.is_none() || config.default_names_nothing(kits) {
        names.push(None);
    }
    for name in names {
        let Ok(r) = config.resolve(name.as_deref(), None, kits) else {
            continue;
        };
        let label = name.unwrap_or_else(|| "(default)".to_string());
        for (_, t) in r.tools {
            let v = out.entry(t.name).or_default();
            if !v.contains(&label) {
                v.push(label.clone());
            }
        }
    }
    out
}

/// Arguments of `lackpy tools`.
///
/// Without `--profile`, lists every tool of the toolbox; with it, the tools
/// that profile grants (under the names programs use). Exit status 3 for a
/// missing workspace, bad config or unknown profile.
///
/// `--json` prints `{"tools": [{"name", "tool", "provider", "signature",
/// "description", "args": [{"name", "type", "description"}], "returns",
/// "grade": {"w", "d"}, "docs", "profiles": [...]}], "shadowed": [...]}`
/// (`profiles`: the profiles granting the tool, `(default)` for the
/// default selection; `shadowed`: one line per MCP tool left out because
/// another tool has its name).
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

/// The MCP servers of `config`, in precedence order: name, transport,
/// endpoint (the url of a remote server, the command of a stdio one) and
/// the host config file it came from. Header and env values are never
/// shown.
fn servers_json(config: &lackpy_policy::config::Config) -> Vec<serde_json::Value> {
    lackpy_supervisor::providers::mcp::all_servers(config)
        .into_iter()
        .map(|(name, s)| {
            let endpoint = if s.transport == "http" {
                s.url.clone().unwrap_or_default()
            } else {
                s.command.clone().unwrap_or_default()
            };
            serde_json::json!({
                "name": name,
                "transport": s.transport,
                "endpoint": endpoint,
                "headers": s.headers.names(),
                "origin": s.origin.as_ref().map(|p| p.display().to_string()),
            })
        })
        .collect()
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let (_ws, config, kits, shadowed) = match common::load_for_listing(args.workspace.clone()) {
        Ok(c) => c,
        Err(e) => return Ok(e.report("tools", args.json)),
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
            Err(e) => return Ok(common::CliError::Config(e).report("tools", args.json)),
        },
    };
    let granted = grants(&config, &kits);
    let profiles_of = |t: &ToolSpec| granted.get(&t.name).cloned().unwrap_or_default();
    if args.json {
        let list: Vec<serde_json::Value> = tools
            .iter()
            .map(|(a, t)| {
                let mut j = tool_json(a, t);
                j["profiles"] = serde_json::json!(profiles_of(t));
                j
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({ "tools": list, "shadowed": shadowed, "mcp_servers": servers_json(&config) })
        );
        return Ok(0);
    }
    for s in servers_json(&config) {
        // Where each server is: a url or a command (never its headers or env).
        let field = |k: &str| {
            s.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let from = field("origin");
        println!(
            "mcp server {} ({}): {}{}",
            escape::line(&field("name")),
            escape::line(&field("transport")),
            escape::line(&field("endpoint")),
            if from.is_empty() {
                String::new()
            } else {
                format!(" (from {})", escape::line(&from))
            }
        );
    }
    if tools.is_empty() {
        println!("(no tools)");
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
        let p = profiles_of(t);
        println!(
            "    profiles: {}",
            if p.is_empty() {
                "none (grant it with --tools or a profile)".to_string()
            } else {
                escape::line(&p.join(", ")).into_owned()
            }
        );
    }
    for c in &shadowed {
        println!("shadowed: {}", escape::line(c));
    }
    Ok(0)
}
