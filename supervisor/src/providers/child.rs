//! What every provider that runs a child process (`python`, `command`,
//! `mcp`) shares: the workspace's path, the settings of its
//! `provider_config` and the environment the child gets.

use crate::tools::fs::Workspace;
use lackpy_policy::config::ToolSpec;
use lackpy_policy::wire::ToolFailure;
use std::path::{Path, PathBuf};

/// The workspace's path (for a child's cwd and for keying helpers), read
/// back from its descriptor so the path is the directory actually opened.
///
/// # Errors
/// `ToolFailed` when the kernel cannot name the directory.
pub fn workspace_path(ws: &Workspace) -> Result<PathBuf, ToolFailure> {
    std::fs::read_link(format!("/proc/self/fd/{}", ws.fd())).map_err(|e| {
        ToolFailure::new(
            "ToolFailed",
            format!("cannot determine the workspace directory: {e}"),
        )
    })
}

/// A string setting of a tool's `provider_config`.
pub(crate) fn cfg_str<'a>(spec: &'a ToolSpec, key: &str) -> Option<&'a str> {
    spec.provider_config.get(key).and_then(|v| v.as_str())
}

/// A non-negative number setting of `provider_config` (ints or floats).
pub(crate) fn cfg_f64(spec: &ToolSpec, key: &str) -> Option<f64> {
    spec.provider_config
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// The child environment a tool's config passes: `pass_env = ["NAME", ...]`
/// copies those variables from lackpy's own environment (when set), then
/// the `env` table (string values) adds or overrides. Sorted by name.
pub(crate) fn cfg_env(spec: &ToolSpec) -> Result<Vec<(String, String)>, ToolFailure> {
    let bad =
        |what: String| ToolFailure::new("ToolFailed", format!("tool {:?}: {what}", spec.name));
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(p) = spec.provider_config.get("pass_env") {
        let Some(names) = p.as_array() else {
            return Err(bad("pass_env must be a list of variable names".into()));
        };
        for n in names {
            let Some(n) = n.as_str() else {
                return Err(bad("pass_env must be a list of variable names".into()));
            };
            if let Some(v) = std::env::var_os(n).and_then(|v| v.into_string().ok()) {
                out.push((n.to_string(), v));
            }
        }
    }
    let Some(v) = spec.provider_config.get("env") else {
        out.sort();
        return Ok(out);
    };
    let Some(map) = v.as_object() else {
        return Err(bad("provider_config env must be a table of strings".into()));
    };
    for (k, v) in map {
        let Some(s) = v.as_str() else {
            return Err(bad(format!("env.{k} must be a string")));
        };
        if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
            return Err(bad(format!("env.{k} is not a valid variable")));
        }
        out.retain(|(name, _)| name != k);
        out.push((k.clone(), s.to_string()));
    }
    out.sort();
    Ok(out)
}

/// Start `cmd` in `jail`: a failure is a `ToolFailed` whose message is
/// `what` and the jail step (with its errno) that failed.
pub(crate) fn spawn_jailed(
    jail: crate::childjail::Jail,
    cmd: &mut std::process::Command,
    what: impl FnOnce() -> String,
) -> Result<std::process::Child, ToolFailure> {
    jail.attach(cmd);
    spawn_attached(cmd, what)
}

/// [`spawn_jailed`] for a child the calling thread waits on until it ends
/// (a command tool's run): it dies with that thread, so with the supervisor.
pub(crate) fn spawn_jailed_for_call(
    jail: crate::childjail::Jail,
    cmd: &mut std::process::Command,
    what: impl FnOnce() -> String,
) -> Result<std::process::Child, ToolFailure> {
    jail.attach_dying_with_spawner(cmd);
    spawn_attached(cmd, what)
}

/// Spawn `cmd`, whose jail is attached; a failed jail step is explained.
fn spawn_attached(
    cmd: &mut std::process::Command,
    what: impl FnOnce() -> String,
) -> Result<std::process::Child, ToolFailure> {
    cmd.spawn().map_err(|e| {
        let e = crate::childjail::JailError::explain_spawn(e);
        ToolFailure::new("ToolFailed", format!("{}: {e}", what()))
    })
}

/// The minimal `PATH` a provider's child process gets unless config passes one.
pub const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A configured path: `~/` is the home directory, a relative path is
/// relative to the workspace.
pub(crate) fn config_path(p: &str, workspace: &Path) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ if p == "~" => std::env::var_os("HOME").map_or_else(|| PathBuf::from(p), PathBuf::from),
        _ => workspace.join(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_from_config_and_pass_env() {
        let mut spec = ToolSpec {
            name: "t".into(),
            provider: "command".into(),
            ..ToolSpec::default()
        };
        spec.provider_config.insert(
            "pass_env".into(),
            serde_json::json!(["PATH", "LACKPY_SURELY_UNSET_VAR"]),
        );
        spec.provider_config
            .insert("env".into(), serde_json::json!({"B": "2", "A": "1"}));
        let env = cfg_env(&spec).unwrap();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, vec!["A", "B", "PATH"]);
        spec.provider_config
            .insert("env".into(), serde_json::json!({"A": 1}));
        assert!(cfg_env(&spec).is_err());
        spec.provider_config
            .insert("pass_env".into(), serde_json::json!("PATH"));
        assert!(cfg_env(&spec).is_err());
    }

    #[test]
    fn workspace_path_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        assert_eq!(
            workspace_path(&ws).unwrap(),
            d.path().canonicalize().unwrap()
        );
    }
}
