//! The real backend: configuration from disk (`cmd::common`), the validator
//! (`lackpy_policy`), and the supervisor's warm pool of jailed workers.
//!
//! Config and kits are re-checked on every call (a few `stat`s; re-read and
//! re-parsed only when a file's mtime, size or inode changed), so edits to
//! `.lackpy/config.toml` take effect without restarting the server. The
//! jail level (`[sandbox] lower`) is read once, at startup.

use crate::cmd::common::{self, CliError};
use crate::mcp::backend::{
    failed_run, ArgInfo, Backend, Cancel, ProfileInfo, RunOutcome, RunRequest, ToolInfo,
    ValidateRequest,
};
use lackpy_policy::config::{Config, ConfigErrorKind, KitSource, Kits, ResolvedProfile, ToolSpec};
use lackpy_policy::wire::{ErrorInfo, ErrorKind};
use lackpy_supervisor::{Supervisor, SupervisorConfig};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Warm workers kept ready. Why 4: the target machines have 2 cores; 4
/// keeps both busy while two runs wait on tool calls, and a worker idles in
/// a few hundred KiB.
pub const POOL_SIZE: usize = 4;

/// Runs in flight at once per backend (beyond the pool, fresh workers are
/// spawned). Why 8: a cancelled run's worker is killed within
/// `lackpy_supervisor::CANCEL_POLL_MS`, but runs the client merely abandons
/// keep their slot until they end, so a few runaways must not starve other
/// calls; 8 CPU-bound workers on 2 cores still finish within their
/// wall-clock limits.
pub const MAX_IN_FLIGHT: usize = 8;

/// Largest doc file `resolve_doc` returns, in bytes (docs are hand-written
/// markdown; anything larger is a mistake).
const MAX_DOC_BYTES: u64 = 1024 * 1024;

/// Most (profile, tool list) resolutions kept per config stamp. Why 16: a
/// client names a handful of profiles; the key holds a client-chosen tool
/// list, so the cache must not grow with what clients send.
const MAX_RESOLVED: usize = 16;

/// Most bytes of trace records one `traces` call returns (newest first;
/// older ones left out). Why 8 MiB: a reply the size of the HTTP
/// transport's `MAX_JSON_REPLY`; a record can reach 1 MiB (`run_bytes`),
/// so `limit = 1000` could otherwise ask for a gigabyte.
const MAX_TRACES_BYTES: usize = 8 << 20;

/// What a call asked to run under: the profile name (the server's default
/// filled in) and the ad-hoc tool list.
type ResolveKey = (Option<String>, Option<Vec<String>>);

/// Profiles already resolved under the config files of `stamp`.
#[derive(Default)]
struct ResolvedCache {
    stamp: Option<common::ConfigStamp>,
    entries: Vec<(ResolveKey, ResolvedProfile)>,
}

/// Backend over the workspace's configuration and a supervisor.
pub struct RealBackend {
    workspace: PathBuf,
    default_profile: Option<String>,
    supervisor: Supervisor,
    /// The last successfully parsed config files, with their stamp.
    cache: std::sync::Mutex<Option<(common::ConfigStamp, Config, Kits)>>,
    /// Profiles resolved under those files, kept only while the config
    /// starts no MCP server (then a profile depends on the files alone;
    /// with servers, their discovered tools can change from call to call).
    resolved: std::sync::Mutex<ResolvedCache>,
}

impl RealBackend {
    /// A backend for `workspace` (must be a directory), with `default_profile`
    /// used when a call names neither a profile nor tools.
    ///
    /// # Errors
    /// The workspace is not a directory, or the supervisor cannot start.
    pub fn new(workspace: &Path, default_profile: Option<String>) -> anyhow::Result<Self> {
        Self::with_pool(workspace, default_profile, POOL_SIZE)
    }

    /// Like [`RealBackend::new`] with `pool_size` warm workers (`lackpy serve`).
    ///
    /// # Errors
    /// The workspace is not a directory, or the supervisor cannot start.
    pub fn with_pool(
        workspace: &Path,
        default_profile: Option<String>,
        pool_size: usize,
    ) -> anyhow::Result<Self> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| anyhow::anyhow!("workspace {}: {e}", workspace.display()))?;
        if !workspace.is_dir() {
            anyhow::bail!("workspace {} is not a directory", workspace.display());
        }
        // The jail level is per process: read `[sandbox] lower` now. A config
        // that does not parse yet keeps the full jail (its errors surface on
        // every call until fixed).
        let (jail_level, trace_limits) = match common::load_files(&workspace) {
            Ok((config, _)) => (
                common::jail_level(&config).map_err(|e| anyhow::anyhow!("{e}"))?,
                config.trace.unwrap_or_default(),
            ),
            Err(e) => {
                tracing::warn!("config not loaded at startup ({e}); full jail");
                (lackpy_supervisor::JailLevel::full(), Default::default())
            }
        };
        let mut cfg = SupervisorConfig::new()?;
        cfg.pool_size = pool_size;
        cfg.jail_level = jail_level;
        cfg.trace_limits = trace_limits;
        let supervisor = Supervisor::new(cfg)?;
        Ok(RealBackend {
            workspace,
            default_profile,
            supervisor,
            cache: std::sync::Mutex::new(None),
            resolved: std::sync::Mutex::new(ResolvedCache::default()),
        })
    }

    /// The most recent traces whose run id `keep` accepts, newest first, at
    /// most `limit` (`lackpy serve` shows a client its own runs only).
    ///
    /// # Errors
    /// Never today; the signature matches [`Backend::traces`].
    pub fn traces_where(
        &self,
        limit: usize,
        keep: impl Fn(&str) -> bool,
    ) -> Result<Vec<Value>, ErrorInfo> {
        // Runs that already answered may still have their traces queued.
        self.supervisor.flush_traces();
        let latest =
            lackpy_supervisor::trace::read_latest(&self.workspace, limit, MAX_TRACES_BYTES, keep);
        Ok(latest
            .iter()
            .rev()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect())
    }

    /// Warm workers ready now.
    pub fn pool_ready(&self) -> usize {
        self.supervisor.pool_ready()
    }

    fn config(&self) -> Result<(Config, Kits), ErrorInfo> {
        self.config_at(common::config_stamp(&self.workspace))
            .map(|(c, k, _)| (c, k))
    }

    /// The config files as of `stamp` (parsed again only when it changed),
    /// with the tools of their MCP servers added, and whether they name no
    /// MCP server at all.
    fn config_at(&self, stamp: common::ConfigStamp) -> Result<(Config, Kits, bool), ErrorInfo> {
        let cached = match self.cache.lock() {
            Ok(c) => c
                .as_ref()
                .filter(|(s, _, _)| *s == stamp)
                .map(|(_, c, k)| (c.clone(), k.clone())),
            Err(_) => None,
        };
        let (mut config, kits) = match cached {
            Some(ck) => ck,
            None => {
                let (c, k) = common::load_files(&self.workspace).map_err(cli_error)?;
                if let Ok(mut slot) = self.cache.lock() {
                    *slot = Some((stamp, c.clone(), k.clone()));
                }
                (c, k)
            }
        };
        let no_servers = config.mcp_servers.is_empty()
            && config.mcp_host_configs.is_empty()
            && config.mcp_host_servers.is_empty();
        // Tools of `[mcp_servers]` (discovery is cached by the supervisor's
        // providers and in the workspace's tool-list cache, and retried
        // after a failure, so this stays per call).
        let _ =
            common::start_mcp_servers(&mut config, &self.workspace, self.supervisor.providers());
        Ok((config, kits, no_servers))
    }

    /// The profile a call runs under. Resolved again only when the config
    /// files changed (their stamp is taken on every call, so edits still
    /// apply to the next call) or when MCP servers are configured.
    fn resolve(
        &self,
        profile: Option<&str>,
        tools: Option<&[String]>,
    ) -> Result<ResolvedProfile, ErrorInfo> {
        let stamp = common::config_stamp(&self.workspace);
        let profile = profile.or(self.default_profile.as_deref());
        if let Ok(c) = self.resolved.lock() {
            if c.stamp.as_ref() == Some(&stamp) {
                let hit = c
                    .entries
                    .iter()
                    .find(|((p, t), _)| p.as_deref() == profile && t.as_deref() == tools);
                if let Some((_, p)) = hit {
                    return Ok(p.clone());
                }
            }
        }
        let (config, kits, no_servers) = self.config_at(stamp.clone())?;
        let resolved = config
            .resolve(profile, tools, &kits)
            .map_err(|e| config_error(&e))?;
        if no_servers {
            if let Ok(mut c) = self.resolved.lock() {
                if c.stamp.as_ref() != Some(&stamp) {
                    c.stamp = Some(stamp);
                    c.entries.clear();
                }
                if c.entries.len() >= MAX_RESOLVED {
                    c.entries.remove(0);
                }
                let key = (profile.map(String::from), tools.map(<[String]>::to_vec));
                c.entries.push((key, resolved.clone()));
            }
        }
        Ok(resolved)
    }

    fn profile_info(
        &self,
        config: &Config,
        kits: &Kits,
        name: &str,
        p: ResolvedProfile,
        is_default: bool,
    ) -> ProfileInfo {
        let description = config
            .profiles
            .get(name)
            .map(|d| d.description.clone())
            .or_else(|| kits.get(name).map(|k| k.description))
            .unwrap_or_default();
        ProfileInfo {
            name: p.name.clone(),
            description,
            tools: p
                .tools
                .iter()
                .map(|(alias, spec)| tool_info(alias, spec))
                .collect(),
            is_default,
        }
    }
}

fn tool_info(alias: &str, spec: &ToolSpec) -> ToolInfo {
    ToolInfo {
        name: alias.to_string(),
        description: spec.description.clone(),
        args: spec
            .args
            .iter()
            .map(|a| ArgInfo {
                name: a.name.clone(),
                type_name: a.type_name.clone(),
                description: a.description.clone(),
            })
            .collect(),
        returns: spec.returns.clone(),
        grade_w: spec.grade_w,
        effects_ceiling: spec.effects_ceiling,
        provider: spec.provider.clone(),
        docs: spec.docs.clone(),
    }
}

/// A configuration problem as the contract's error object. Kind
/// `validation`: it is the caller's request (profile, tool list) or the
/// workspace's config that is wrong, not lackpy.
fn config_error(e: &lackpy_policy::config::ConfigError) -> ErrorInfo {
    let ty = match &*e.kind {
        ConfigErrorKind::UnknownProfile { .. } => "UnknownProfile",
        ConfigErrorKind::UnknownTool { .. } => "UnknownTool",
        _ => "ConfigError",
    };
    // A broken config file is the operator's to fix (kind `config`, as in
    // the CLI); an unknown profile or tool is the caller's request.
    let kind = if ty == "ConfigError" {
        ErrorKind::Config
    } else {
        ErrorKind::Validation
    };
    let mut info = ErrorInfo::new(kind, ty, e.to_string());
    info.line = e.line;
    if ty != "ConfigError" {
        info.hint = Some("call list_profiles or list_tools to see what is available".into());
    }
    info
}

fn cli_error(e: CliError) -> ErrorInfo {
    match e {
        CliError::Config(c) => config_error(&c),
        CliError::Usage(m) => ErrorInfo::new(ErrorKind::Validation, "ConfigError", m),
    }
}

impl Backend for RealBackend {
    fn run_program(&self, req: RunRequest, cancel: &Cancel) -> RunOutcome {
        if cancel.is_cancelled() {
            let e = ErrorInfo::new(
                ErrorKind::Internal,
                "Cancelled",
                "the run was cancelled before it started",
            );
            return RunOutcome {
                report: failed_run(e),
                vars: None,
                skipped_vars: Vec::new(),
                run_id: None,
            };
        }
        let profile = match self.resolve(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(p) => p,
            Err(e) => {
                return RunOutcome {
                    report: failed_run(e),
                    vars: None,
                    skipped_vars: Vec::new(),
                    run_id: None,
                }
            }
        };
        let limits = profile.limits.clone();
        let opts = lackpy_supervisor::RunOptions {
            initial_vars: req.initial_vars,
            want_vars: req.want_vars,
            cancel: Some(cancel.flag()),
        };
        let mut report = self.supervisor.run_with(
            lackpy_supervisor::RunRequest {
                source: req.program.into_bytes(),
                profile,
                workspace: self.workspace.clone(),
                limits,
            },
            &opts,
        );
        // A run that did not report variables (validation failed, a limit
        // or a cancel killed the worker) leaves the session unchanged.
        let vars = if req.want_vars {
            Some(report.vars.take().unwrap_or_default())
        } else {
            None
        };
        let skipped_vars = std::mem::take(&mut report.skipped_vars);
        // A value holding a lone surrogate (a program in surrogate mode)
        // cannot travel in JSON-RPC (its strings are Unicode scalar values):
        // say so, the repr is exact.
        if report.surrogates {
            lackpy_supervisor::json::null_surrogate_value(&mut report.value, &mut report.warnings);
        }
        let run_id = Some(std::mem::take(&mut report.run_id)).filter(|id| !id.is_empty());
        let report = serde_json::to_value(&report).unwrap_or_else(|e| {
            failed_run(ErrorInfo::new(
                ErrorKind::Internal,
                "InternalError",
                format!("cannot encode the report: {e}"),
            ))
        });
        RunOutcome {
            report,
            vars,
            skipped_vars,
            run_id,
        }
    }

    fn validate(&self, req: ValidateRequest) -> Value {
        let profile = match self.resolve(req.profile.as_deref(), req.tools.as_deref()) {
            Ok(p) => p,
            Err(e) => return json!({"ok": false, "grade": null, "calls": [], "error": e}),
        };
        match lackpy_policy::validate(&req.program, &profile.namespace(), &profile.limits) {
            Ok(p) => json!({"ok": true, "grade": p.grade, "calls": p.calls, "error": null}),
            Err(errs) => {
                let first = lackpy_policy::first_error(errs);
                json!({"ok": false, "grade": null, "calls": [], "error": first})
            }
        }
    }

    fn profiles(&self) -> Result<Vec<ProfileInfo>, ErrorInfo> {
        let (config, kits) = self.config()?;
        let default_name = self
            .default_profile
            .clone()
            .or_else(|| config.default_profile.clone());
        let mut out = Vec::new();
        for name in config.profile_names(&kits) {
            match config.resolve(Some(&name), None, &kits) {
                Ok(p) => {
                    let is_default = default_name.as_deref() == Some(name.as_str());
                    out.push(self.profile_info(&config, &kits, &name, p, is_default));
                }
                Err(e) => tracing::warn!("profile {name}: {e}"),
            }
        }
        if !out.iter().any(|p| p.is_default) {
            let p = config
                .resolve(self.default_profile.as_deref(), None, &kits)
                .map_err(|e| config_error(&e))?;
            let name = p.name.clone();
            let mut info = self.profile_info(&config, &kits, &name, p, true);
            if info.description.is_empty() {
                info.description = "used when a call names neither a profile nor tools".into();
            }
            out.insert(0, info);
        }
        Ok(out)
    }

    fn profile(&self, name: Option<&str>) -> Result<ProfileInfo, ErrorInfo> {
        let (config, kits) = self.config()?;
        let wanted = name.or(self.default_profile.as_deref());
        let p = config
            .resolve(wanted, None, &kits)
            .map_err(|e| config_error(&e))?;
        let shown = p.name.clone();
        Ok(self.profile_info(&config, &kits, &shown, p, name.is_none()))
    }

    fn toolbox(&self) -> Result<Vec<ToolInfo>, ErrorInfo> {
        let (config, _) = self.config()?;
        Ok(config
            .toolbox()
            .tools
            .iter()
            .map(|t| tool_info(&t.name, t))
            .collect())
    }

    fn resolve_doc(&self, path: &str) -> Result<String, ErrorInfo> {
        let unknown = || {
            let mut e = ErrorInfo::new(
                ErrorKind::Validation,
                "UnknownDoc",
                format!("no tool or profile documents {path:?}"),
            );
            e.hint = Some("pass a path exactly as docs_index or describe_tool lists it".into());
            e
        };
        // Only paths that a tool or profile names are served.
        let (config, kits) = self.config()?;
        let tools = config.toolbox().tools;
        let tool = tools.iter().find(|t| t.docs.as_deref() == Some(path));
        let named = tool.is_some()
            || config
                .profiles
                .values()
                .any(|p| p.docs.as_deref() == Some(path))
            || kits
                .names()
                .iter()
                .any(|n| kits.get(n).is_some_and(|k| k.docs.as_deref() == Some(path)));
        if !named {
            return Err(unknown());
        }
        match read_doc(&self.workspace, path) {
            Ok(Some(text)) => Ok(text),
            Err(e @ lackpy_beneath::Error::BadName { .. })
            | Err(e @ lackpy_beneath::Error::Io { .. }) => Err(ErrorInfo::new(
                ErrorKind::Validation,
                "FileNotFound",
                e.to_string(),
            )),
            Err(e) => {
                let mut info = ErrorInfo::new(ErrorKind::Validation, "DocRefused", e.to_string());
                info.hint = Some(
                    "doc files are read without following symlinks, regular files only, within the size cap".into(),
                );
                Err(info)
            }
            // Builtins ship their docs as data: render the spec.
            Ok(None) => match tool {
                Some(t) => Ok(spec_markdown(t)),
                None => Err(ErrorInfo::new(
                    ErrorKind::Validation,
                    "FileNotFound",
                    format!("doc file {path:?} is not in the workspace"),
                )),
            },
        }
    }

    fn traces(&self, limit: usize) -> Result<Vec<Value>, ErrorInfo> {
        self.traces_where(limit, |_| true)
    }

    fn delegate(&self, intent: &str, profile: Option<&str>) -> Value {
        use crate::cmd::delegate;
        // This server's supervisor (its warm pool, its MCP servers) and its
        // cached config.
        let loaded = self.config().and_then(|(config, kits)| {
            let name = profile.or(self.default_profile.as_deref());
            let profile = config
                .resolve(name, None, &kits)
                .map_err(|e| config_error(&e))?;
            Ok(common::Loaded {
                workspace: self.workspace.clone(),
                config,
                kits,
                profile,
            })
        });
        match loaded {
            Ok(l) => {
                delegate::delegate_with(&self.supervisor, &l, intent, &delegate::Options::default())
                    .0
            }
            Err(e) => delegate::usage_error(e.message).0,
        }
    }

    fn confirm_result(&self, run_id: &str, correct: bool) -> Value {
        crate::cmd::delegate::confirm_json(&self.workspace, run_id, correct)
    }

    fn max_concurrent_runs(&self) -> usize {
        MAX_IN_FLIGHT
    }
}

/// Read a doc file beneath the workspace with one `openat2` (no symlink
/// followed, regular files only, capped in size): the file may be swapped
/// by a program between any check and the open, so there is none.
/// `Ok(None)` when it does not exist.
fn read_doc(workspace: &Path, rel: &str) -> Result<Option<String>, lackpy_beneath::Error> {
    // `./` components are spelling only.
    let rel: Vec<&str> = rel.split('/').filter(|c| *c != ".").collect();
    lackpy_beneath::Dir::open(workspace)?.read_text(&rel.join("/"), MAX_DOC_BYTES)
}

/// Markdown for a tool whose doc file is not on disk.
fn spec_markdown(t: &ToolSpec) -> String {
    let mut s = format!("# {}\n\n`{}`\n\n{}\n", t.name, t.signature(), t.description);
    if !t.args.is_empty() {
        s.push_str("\n## Arguments\n\n");
        for a in &t.args {
            let ty = if a.type_name.is_empty() {
                String::new()
            } else {
                format!(" (`{}`)", a.type_name)
            };
            s.push_str(&format!("- `{}`{ty}: {}\n", a.name, a.description));
        }
    }
    if !t.returns.is_empty() {
        s.push_str(&format!("\nReturns `{}`.\n", t.returns));
    }
    s.push_str(&format!(
        "\nGrade: w={} d={}.\n",
        t.grade_w, t.effects_ceiling
    ));
    s
}

#[cfg(test)]
mod tests {

    /// A broken config file is the operator's (kind `config`, as in the
    /// CLI); an unknown profile is the caller's request (kind `validation`).
    #[test]
    fn config_errors_have_the_cli_kinds() {
        use lackpy_policy::config::{Config, Kits};
        let broken = Config::parse(
            "[sandbox]\ntimeout_seconds = \"x\"\n",
            std::path::Path::new("/ws/.lackpy/config.toml"),
        )
        .expect_err("a string timeout is a config error");
        let info = super::config_error(&broken);
        assert_eq!(info.kind, ErrorKind::Config, "{info:?}");
        assert_eq!(info.type_name, "ConfigError");
        let unknown = Config::default()
            .resolve(Some("nope"), None, &Kits::default())
            .expect_err("unknown profile");
        let info = super::config_error(&unknown);
        assert_eq!(info.kind, ErrorKind::Validation, "{info:?}");
        assert_eq!(info.type_name, "UnknownProfile");
    }
    use super::*;

    fn tool_names(p: &ResolvedProfile) -> Vec<&str> {
        p.tools.iter().map(|(alias, _)| alias.as_str()).collect()
    }

    /// Resolved profiles are reused only while the config files are
    /// unchanged: an edit applies to the next call, and the cache stays
    /// bounded whatever tool lists clients send.
    #[test]
    fn resolved_profiles_follow_config_edits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path();
        let b = RealBackend::with_pool(ws, None, 0).expect("backend");
        let p = b.resolve(Some("p"), None).expect_err("no profile p yet");
        assert_eq!(p.type_name, "UnknownProfile");
        std::fs::create_dir_all(ws.join(".lackpy")).expect("mkdir");
        std::fs::write(
            ws.join(".lackpy/config.toml"),
            "[profiles.p]\ntools = [\"read_file\"]\n",
        )
        .expect("write");
        let p = b.resolve(Some("p"), None).expect("profile p");
        assert_eq!(tool_names(&p), ["read_file"]);
        // Cached: the same answer.
        let again = b.resolve(Some("p"), None).expect("profile p");
        assert_eq!(tool_names(&again), ["read_file"]);
        // An edit (another size, so the stamp differs even within one
        // mtime tick) applies at once.
        std::fs::write(
            ws.join(".lackpy/config.toml"),
            "[profiles.p]\ntools = [\"find_files\", \"read_file\"]\n",
        )
        .expect("write");
        let edited = b.resolve(Some("p"), None).expect("profile p");
        assert_eq!(tool_names(&edited), ["find_files", "read_file"]);
        // An ad-hoc list is its own entry, not the profile's.
        let adhoc = b
            .resolve(None, Some(&["find_files".to_string()]))
            .expect("ad-hoc");
        assert_eq!(tool_names(&adhoc), ["find_files"]);
        let p = b.resolve(Some("p"), None).expect("profile p");
        assert_eq!(tool_names(&p), ["find_files", "read_file"]);
        // Many distinct lists: the cache keeps at most MAX_RESOLVED.
        for n in 0..(3 * MAX_RESOLVED) {
            let tools = vec!["read_file".to_string(); n % 7 + 1];
            let _ = b.resolve(Some(&format!("q{n}")), None);
            let _ = b.resolve(None, Some(&tools));
        }
        let held = b.resolved.lock().map(|c| c.entries.len()).unwrap_or(0);
        assert!(held <= MAX_RESOLVED, "{held} entries");
        // Removing the config removes the profile.
        std::fs::remove_file(ws.join(".lackpy/config.toml")).expect("rm");
        let gone = b.resolve(Some("p"), None).expect_err("profile p removed");
        assert_eq!(gone.type_name, "UnknownProfile");
    }

    #[test]
    fn docs_never_leave_the_workspace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().canonicalize().expect("canon");
        std::fs::create_dir_all(ws.join("docs")).expect("mkdir");
        std::fs::write(ws.join("docs/a.md"), "# a").expect("write");
        let ok = |p: &str| read_doc(&ws, p).ok().flatten();
        assert_eq!(ok("docs/a.md").as_deref(), Some("# a"));
        assert_eq!(ok("./docs/a.md").as_deref(), Some("# a"));
        assert_eq!(ok("docs/missing.md"), None);
        assert!(read_doc(&ws, "../etc/passwd").is_err());
        assert!(read_doc(&ws, "/etc/passwd").is_err());
        std::os::unix::fs::symlink("/etc/passwd", ws.join("docs/evil.md")).expect("symlink");
        assert!(read_doc(&ws, "docs/evil.md").is_err_and(|e| e.is_symlink()));
        // A symlink that stays inside is refused too (a program could swap it).
        std::os::unix::fs::symlink("a.md", ws.join("docs/in.md")).expect("symlink");
        assert!(read_doc(&ws, "docs/in.md").is_err_and(|e| e.is_symlink()));
        // A FIFO neither hangs nor reads.
        nix::unistd::mkfifo(
            &ws.join("docs/f.md"),
            nix::sys::stat::Mode::from_bits_truncate(0o644),
        )
        .expect("mkfifo");
        assert!(read_doc(&ws, "docs/f.md").is_err());
    }
}
