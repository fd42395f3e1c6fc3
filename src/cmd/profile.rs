//! `lackpy profile list|info|create`: the profiles of a workspace
//! (`[profiles.NAME]` tables in config and `.lackpy/kits/NAME.profile|.kit` files).

use super::common;
use super::escape;
use super::tools::tool_json;
use lackpy_policy::config::{render_kit, Config, Kit, Kits, ResolvedProfile};
use std::path::{Path, PathBuf};

/// Arguments of `lackpy profile`.
///
/// Exit status: 0 ok; 3 for a missing workspace, bad config, an unknown
/// profile or tool, or (for `create`) an existing profile without `--force`.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  lackpy profile list\n  lackpy profile info filesystem\n  lackpy profile info read_file,find_files\n  lackpy profile create readonly --tools read_file find_files --description \"Read-only tools\""
)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
    /// Workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    workspace: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// List the profiles: config tables and kit files, with their tools and grade.
    List,
    /// Show a profile's tools, grade and limits (NAME may also be a comma-separated tool list).
    Info {
        /// Profile name, `none`, or `tool_a,tool_b`.
        name: String,
    },
    /// Create `.lackpy/kits/NAME.kit` with the given tools (an existing `NAME.profile` is replaced instead).
    Create {
        /// Name of the new profile (letters, digits, `-`, `_`).
        name: String,
        /// Tools it grants (names from `lackpy tools`).
        #[arg(long, num_args = 1.., value_delimiter = ',', required = true)]
        tools: Vec<String>,
        /// One-line description.
        #[arg(long, default_value = "")]
        description: String,
        /// Path of a markdown doc file, relative to the workspace.
        #[arg(long)]
        docs: Option<String>,
        /// Overwrite an existing kit file of that name.
        #[arg(long)]
        force: bool,
    },
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let (ws, config, kits, _clashes) = match common::load_for_listing(args.workspace.clone()) {
        Ok(c) => c,
        Err(e) => return Ok(e.report("profile", args.json)),
    };
    match args.command {
        Sub::List => list(&config, &kits, args.json),
        Sub::Info { name } => info(&config, &kits, &name, args.json),
        Sub::Create {
            name,
            tools,
            description,
            docs,
            force,
        } => create(
            &ws,
            &config,
            &kits,
            &name,
            &tools,
            description,
            docs,
            force,
            args.json,
        ),
    }
}

fn profile_json(
    r: &ResolvedProfile,
    source: &str,
    description: &str,
    docs: Option<&str>,
) -> serde_json::Value {
    let g = r.grade();
    serde_json::json!({
        "name": r.name,
        "source": source,
        "description": description,
        "docs": docs,
        "tools": r.tools.iter().map(|(a, t)| tool_json(a, t)).collect::<Vec<_>>(),
        "grade": {"w": g.w, "d": g.d},
        "limits": r.limits,
    })
}

/// (source, description, docs) of a named profile.
fn describe(config: &Config, kits: &Kits, name: &str) -> (String, String, Option<String>) {
    let m = config.profile_meta(Some(name), kits);
    (m.source, m.description, m.docs)
}

fn list(config: &Config, kits: &Kits, json: bool) -> anyhow::Result<i32> {
    let names = config.profile_names(kits);
    let mut out = Vec::new();
    let mut text = String::new();
    for name in &names {
        let (source, description, docs) = describe(config, kits, name);
        match config.resolve(Some(name), None, kits) {
            Ok(r) => {
                let g = r.grade();
                let tools: Vec<&str> = r.tools.iter().map(|(a, _)| a.as_str()).collect();
                text.push_str(&format!(
                    "{}  [{}, w={} d={}]  {}\n",
                    escape::line(name),
                    escape::line(&source),
                    g.w,
                    g.d,
                    escape::line(&description)
                ));
                text.push_str(&format!(
                    "    tools: {}\n",
                    if tools.is_empty() {
                        "(none)".to_string()
                    } else {
                        escape::line(&tools.join(", ")).into_owned()
                    }
                ));
                out.push(profile_json(&r, &source, &description, docs.as_deref()));
            }
            Err(e) => {
                text.push_str(&format!(
                    "{}  [{}]  error: {}\n",
                    escape::line(name),
                    escape::line(&source),
                    escape::line(&e.to_string())
                ));
                out.push(
                    serde_json::json!({"name": name, "source": source, "error": e.to_string()}),
                );
            }
        }
    }
    if json {
        println!(
            "{}",
            serde_json::json!({"profiles": out, "default": config.default_profile})
        );
    } else if names.is_empty() {
        println!("(no profiles; the default is the read-only builtins read_file, find_files)");
    } else {
        if let Some(d) = &config.default_profile {
            text.push_str(&format!("default: {}\n", escape::line(d)));
        }
        print!("{text}");
    }
    Ok(0)
}

fn info(config: &Config, kits: &Kits, name: &str, json: bool) -> anyhow::Result<i32> {
    let r = match config.resolve(Some(name), None, kits) {
        Ok(r) => r,
        Err(e) => {
            eprintln!(
                "lackpy profile: config error: {}",
                escape::line(&e.to_string())
            );
            return Ok(3);
        }
    };
    let (source, description, docs) = describe(config, kits, name);
    if json {
        println!(
            "{}",
            profile_json(&r, &source, &description, docs.as_deref())
        );
        return Ok(0);
    }
    let g = r.grade();
    let mut s = format!(
        "profile: {}  ({})\n",
        escape::line(&r.name),
        escape::line(&source)
    );
    if !description.is_empty() {
        s.push_str(&format!("description: {}\n", escape::line(&description)));
    }
    if let Some(d) = &docs {
        s.push_str(&format!("docs: {}\n", escape::line(d)));
    }
    s.push_str(&format!("grade: w={} d={}\n", g.w, g.d));
    s.push_str("tools:\n");
    if r.tools.is_empty() {
        s.push_str("    (none)\n");
    }
    for (alias, t) in &r.tools {
        let sig = t.signature_as(alias);
        let target = if alias != &t.name {
            format!(" (= {})", t.name)
        } else {
            String::new()
        };
        s.push_str(&format!(
            "    {}{}  [w={} d={}]\n",
            escape::line(&sig),
            escape::line(&target),
            t.grade_w,
            t.effects_ceiling
        ));
    }
    let l = &r.limits;
    s.push_str(&format!(
        "limits: wall {} ms, fuel {}, memory {} bytes, stdout {} bytes, {} tool calls, result {} bytes, source {} bytes, depth {}, writes {} bytes\n",
        l.wall_ms, l.fuel, l.memory_bytes, l.stdout_bytes, l.tool_calls, l.result_bytes, l.source_bytes, l.max_depth, l.write_bytes
    ));
    print!("{s}");
    Ok(0)
}

/// A kit name safe to use as a file name.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name != "none"
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[allow(clippy::too_many_arguments)]
fn create(
    ws: &Path,
    config: &Config,
    kits: &Kits,
    name: &str,
    tools: &[String],
    description: String,
    docs: Option<String>,
    force: bool,
    json: bool,
) -> anyhow::Result<i32> {
    if !valid_name(name) {
        eprintln!("lackpy profile: invalid profile name {name:?}: use letters, digits, '-' and '_' (and not \"none\")");
        return Ok(3);
    }
    let tools: Vec<String> = tools
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    // Every tool must exist in the toolbox.
    if let Err(e) = config.resolve(None, Some(&tools), kits) {
        eprintln!("lackpy profile: {}", escape::line(&e.to_string()));
        return Ok(3);
    }
    let dir = ws.join(".lackpy").join("kits");
    // An existing `.profile` (which wins over a `.kit`) is the file to replace.
    let file = if dir.join(format!("{name}.profile")).is_file() {
        format!("{name}.profile")
    } else {
        format!("{name}.kit")
    };
    let path = dir.join(&file);
    if config.profiles.contains_key(name) {
        eprintln!("lackpy profile: a [profiles.{name}] table already exists in the config; choose another name");
        return Ok(3);
    }
    if path.exists() && !force {
        eprintln!(
            "lackpy profile: {} already exists (use --force to overwrite)",
            path.display()
        );
        return Ok(3);
    }
    let kit = Kit {
        name: name.to_string(),
        description,
        docs,
        tools,
    };
    let body = render_kit(&kit);
    // Beneath the workspace's descriptor, never through a symlink.
    let write = || -> Result<(), lackpy_beneath::Error> {
        lackpy_beneath::open_control(ws, true)?
            .and_then(|ctl| ctl.subdir("kits", true).transpose())
            .transpose()?
            .map_or(Ok(()), |kits| kits.write_atomic(&file, body.as_bytes()))
    };
    if let Err(e) = write() {
        eprintln!("lackpy profile: cannot write {}: {e}", path.display());
        return Ok(3);
    }
    if json {
        println!(
            "{}",
            serde_json::json!({"created": path, "name": name, "tools": kit.tools})
        );
    } else {
        println!("created {}", path.display());
    }
    Ok(0)
}
