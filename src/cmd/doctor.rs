//! `lackpy doctor`: which jail layers this kernel supports, found by really
//! spawning jailed workers (one per layer alone, then all together); and
//! for each `[mcp_servers]` table of the workspace, its jail and whether
//! the server starts in it and lists its tools, and which of their tools
//! another tool's name hides.
//!
//! Exit status: 0 all well; 4 a required jail layer or the full jail
//! fails; 1 the jail works but a configured MCP server fails (`"ok":
//! false` in `--json` for either); 3 a bad config.

use super::escape::line;
use lackpy_policy::wire::Limits;
use lackpy_supervisor::spawn::{self, ExeHandle, Greeting};
use lackpy_supervisor::JailLevel;
use lackpy_worker::jail::{landlock_abi, seccomp, Filter, JailError, Layer, Step, LAYERS};
use std::time::{Duration, Instant};

/// Arguments of `lackpy doctor`.
#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Layers to lower, comma-separated (default: the config's `[sandbox] lower`).
    #[arg(long, value_delimiter = ',', value_name = "LAYERS")]
    lower: Option<Vec<String>>,
    /// Workspace whose config gives `[sandbox] lower` and the MCP servers to check (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<std::path::PathBuf>,
}

#[derive(serde::Serialize)]
struct LayerReport {
    layer: &'static str,
    status: String,
    detail: String,
    hint: Option<String>,
}

/// Why a probe failed, and the layer of the jail step that failed (when
/// a step was named).
struct Failure {
    detail: String,
    layer: Option<Layer>,
}

/// Spawn an executor jailed with only `level`'s layers; report its greeting.
fn try_level(exe: &ExeHandle, level: JailLevel) -> Result<Duration, Failure> {
    let spec = level.executor_spec(&Limits::default());
    let t0 = Instant::now();
    let mut w = spawn::spawn(exe, "executor", &[], &spec).map_err(|e| Failure {
        layer: e
            .get_ref()
            .and_then(|e| e.downcast_ref::<JailError>())
            .map(JailError::layer),
        detail: format!("spawn failed: {e}"),
    })?;
    let g = w.greeting(Instant::now() + Duration::from_secs(5));
    let took = t0.elapsed();
    w.kill_and_reap();
    match g {
        Ok(Greeting::Ready) => Ok(took),
        Ok(Greeting::SetupFailed { step, detail, .. }) => Err(Failure {
            layer: Step::from_name(&step).map(Step::layer),
            detail,
        }),
        Err(e) => Err(Failure {
            detail: format!("worker failed: {e}"),
            layer: None,
        }),
    }
}

/// What to do when a step of `layer` fails on this host.
fn hint(layer: Layer) -> &'static str {
    match layer {
        Layer::Namespaces => "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; AppArmor: kernel.apparmor_restrict_unprivileged_userns=0)",
        Layer::Landlock => "boot with landlock in the LSM list (lsm=landlock,...) on Linux >= 5.13",
        Layer::Seccomp => "a kernel with CONFIG_SECCOMP_FILTER",
        Layer::Rlimits => "check the hard limits of the account running lackpy",
        Layer::Base => "a step every jail runs failed (no new privileges, capabilities, descriptors, parent death): lowering layers does not help; check what confines lackpy itself (a container's seccomp profile or capability set)",
    }
}

/// Run the subcommand.
pub fn main(args: Args) -> anyhow::Result<i32> {
    let exe = ExeHandle::current()?;
    let ws = args.workspace.clone().unwrap_or_else(|| ".".into());
    let ws = std::fs::canonicalize(&ws).unwrap_or(ws);
    // The workspace's config, read once: `[sandbox] lower` and the MCP
    // servers. (With --lower a broken config only hides the servers.)
    let config = super::common::load_files(&ws).map(|(c, _)| c);
    // Where the lowered layers come from: --lower, else the config.
    let (names, source) = match &args.lower {
        Some(l) => (l.clone(), "--lower".to_string()),
        None => match &config {
            Ok(c) => match &c.sandbox_lower {
                Some(l) => {
                    let file = c.files.last().map(|f| f.display().to_string());
                    (
                        l.clone(),
                        format!("[sandbox] lower in {}", file.unwrap_or_default()),
                    )
                }
                None => (Vec::new(), "default".to_string()),
            },
            Err(e) => return Ok(e.report("doctor", args.json)),
        },
    };
    let lowered = match JailLevel::lowered(&names) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("lackpy doctor: {e}");
            return Ok(3);
        }
    };
    let abi = landlock_abi();
    let mut layers = Vec::new();
    let mut failed = Vec::new();
    for name in LAYERS {
        let Ok(only) =
            JailLevel::lowered(&LAYERS.iter().filter(|l| **l != name).collect::<Vec<_>>())
        else {
            continue;
        };
        let enabled = match name {
            "namespaces" => lowered.namespaces,
            "rlimits" => lowered.rlimits,
            "landlock" => lowered.landlock,
            _ => lowered.seccomp,
        };
        let detail = match name {
            "namespaces" => "user, pid, net, mount, ipc, uts, cgroup namespaces; empty read-only tmpfs root (pivot_root)".to_string(),
            "rlimits" => {
                let s = JailLevel::full().executor_spec(&Limits::default());
                format!("AS={} MiB, CPU={} s, NOFILE=8, NPROC=0, FSIZE=0, CORE=0", s.as_bytes >> 20, s.cpu_seconds)
            }
            "landlock" => match abi {
                0 => "not available on this kernel".to_string(),
                1..=3 => format!("ABI {abi}: filesystem denied; TCP not restrictable (needs ABI 4)"),
                4 | 5 => format!("ABI {abi}: filesystem and TCP denied; no signal/abstract-socket scoping (needs ABI 6)"),
                _ => format!("ABI {abi}: filesystem, TCP, signals and abstract unix sockets denied"),
            },
            _ => format!(
                "executor allowlist of {} syscalls, anything else kills the worker",
                seccomp::table(Filter::Executor).len()
            ),
        };
        let (status, hint) = match try_level(&exe, only) {
            Ok(t) => {
                let partial = name == "landlock" && abi < 6;
                let st = if partial { "partial" } else { "active" };
                (format!("{st} ({} us)", t.as_micros()), None)
            }
            Err(e) => {
                if enabled {
                    failed.push(name);
                }
                // The failed step's layer, not the probed one: with only
                // `namespaces` on, a failed `no_new_privs` is no namespace
                // problem.
                let probed = match name {
                    "namespaces" => Layer::Namespaces,
                    "rlimits" => Layer::Rlimits,
                    "landlock" => Layer::Landlock,
                    _ => Layer::Seccomp,
                };
                let hint = hint(e.layer.unwrap_or(probed));
                (format!("unavailable: {}", e.detail), Some(hint.to_string()))
            }
        };
        let status = if enabled {
            status
        } else {
            format!("lowered by config; probe: {status}")
        };
        layers.push(LayerReport {
            layer: name,
            status,
            detail,
            hint,
        });
    }
    let full = try_level(&exe, lowered);
    let level = lowered.executor_spec(&Limits::default()).level();
    // The workspace's MCP servers: their jails, and whether they start.
    let providers = lackpy_supervisor::providers::Providers::new();
    let servers = match &config {
        Ok(c) => providers.mcp().check(c, &ws),
        Err(_) => Vec::new(),
    };
    let servers_failed: Vec<&str> = servers
        .iter()
        .filter(|s| s.error.is_some())
        .map(|s| s.name.as_str())
        .collect();
    // Tools of the servers that another tool's name hides (the servers
    // were just asked, so this reads what they listed).
    let shadowed = match &config {
        Ok(c) if lackpy_supervisor::providers::mcp::has_servers(c) => {
            let mut c = c.clone();
            providers.mcp().start(&mut c, &ws)
        }
        _ => Vec::new(),
    };
    if args.json {
        let v = serde_json::json!({
            "ok": failed.is_empty() && full.is_ok() && servers_failed.is_empty(),
            "mcp_tools_shadowed": shadowed,
            "jail_level": level,
            "jail_level_source": source,
            "landlock_abi": abi,
            "layers": layers,
            "full_jail": match &full { Ok(t) => serde_json::json!({"ok": true, "spawn_us": t.as_micros() as u64}), Err(e) => serde_json::json!({"ok": false, "error": e.detail, "hint": e.layer.map(hint)}) },
            "mcp_servers": servers,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        for l in &layers {
            println!("{:<11} {:<22} {}", l.layer, l.status, l.detail);
            if let Some(h) = &l.hint {
                println!("{:<11} hint: {h}", "");
            }
        }
        match &full {
            Ok(t) => println!(
                "jail level  {level} (from {source}): a jailed worker starts in {} us",
                t.as_micros()
            ),
            Err(e) => {
                println!(
                    "jail level  {level} (from {source}): FAILED: {}",
                    line(&e.detail)
                );
                if let Some(layer) = e.layer {
                    println!("{:<11} hint: {}", "", hint(layer));
                }
            }
        }
        for s in &servers {
            match (&s.tools, &s.error) {
                // Server names come from config; errors quote a server's stderr.
                (Some(n), _) => println!(
                    "mcp server  {:<22} {n} tools ({})",
                    line(&s.name),
                    line(&s.endpoint)
                ),
                (None, e) => println!(
                    "mcp server  {:<22} FAILED: {}",
                    line(&s.name),
                    line(e.as_deref().unwrap_or("unknown error"))
                ),
            }
            if !s.jail.is_empty() {
                println!("{:<11} jail: {}", "", line(&s.jail));
            }
        }
        for c in &shadowed {
            println!("mcp tool    shadowed: {}", line(c));
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "lackpy doctor: required jail layer(s) unavailable: {}; runs will fail (exit 4) unless an operator lowers them in [sandbox] lower",
            failed.join(", ")
        );
        return Ok(4);
    }
    if full.is_err() {
        return Ok(4);
    }
    if !servers_failed.is_empty() {
        eprintln!(
            "lackpy doctor: MCP server(s) failed: {}; their tools are unavailable",
            line(&servers_failed.join(", "))
        );
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failed step is hinted at by its own layer, not by the layer the
    /// probe had on: `no_new_privs` failing with only `namespaces` on is no
    /// namespace problem.
    #[test]
    fn hints_follow_the_failed_steps_layer() {
        let for_step = |s: &str| Step::from_name(s).map(|s| hint(s.layer()));
        assert_eq!(for_step("no_new_privs"), Some(hint(Layer::Base)));
        assert_eq!(for_step("capabilities"), Some(hint(Layer::Base)));
        assert_ne!(hint(Layer::Base), hint(Layer::Namespaces));
        assert_eq!(for_step("userns"), Some(hint(Layer::Namespaces)));
        assert_eq!(for_step("landlock"), Some(hint(Layer::Landlock)));
        assert_eq!(for_step("rlimits"), Some(hint(Layer::Rlimits)));
    }
}
