//! The `python` provider, compatible with the original lackpy's
//! `[[tools]]` entries (`provider = "python"`, `module`, `function`).
//!
//! One long-lived helper process per (workspace, interpreter, env, jail)
//! runs the user's tool functions: `python3 -I -B -c <helper.py>
//! [python_path...]` (isolated mode: no `PYTHON*` variables, no user
//! site-packages, no `.pyc` writes), cwd = the workspace, environment
//! cleared except `PATH` ([`super::CHILD_PATH`]) and the tool's `env`.
//!
//! **Tool code is trusted code, so it never comes from the program-writable
//! set** (see [`crate::trusted`]). The workspace is never on `sys.path`.
//! Modules are found, in order, in:
//! 1. `<workspace>/.lackpy/tools/` — `NAME.py`, `PKG/__init__.py`,
//!    `PKG/MOD.py` — read by the supervisor beneath the workspace without
//!    following a symlink ([`lackpy_beneath`]) and sent to the helper as
//!    source text, which an in-memory finder serves (a changed file is
//!    re-executed on the next call);
//! 2. the `python_path` directories of the tool's config, each outside the
//!    workspace;
//! 3. the interpreter's own `sys.path` (its standard library and
//!    site-packages), the interpreter itself outside the workspace.
//!
//! A module found in the workspace itself (the original lackpy's place) is
//! a configuration error that names the file and where to move it.
//!
//! **The helper runs jailed** ([`crate::childjail`]): its own user, pid,
//! ipc, uts, cgroup and mount namespaces, no network unless `network =
//! true`, landlock (the interpreter's installation and `python_path`
//! read+execute, the workspace read-only — `workspace = "none" | "read" |
//! "write"` — `.lackpy/` hidden under an empty read-only tmpfs, no home
//! directory, `/tmp` or `/proc`), rlimits (`memory_mb`, default 2048; 64
//! processes; 256 files; no file writes unless `workspace = "write"`), never
//! the supervisor's environment. The interpreter behind a pyenv/asdf shim
//! is asked once, jailed too, from `/` (a workspace's `.python-version` is
//! program-writable and is not consulted).
//!
//! Requests and replies are JSON lines ([`super::value`]'s tagged form) on
//! the helper's original stdin/stdout, which it moves off fds 0/1 before
//! importing anything, so a tool's `print` cannot corrupt the protocol (it
//! goes to the helper's stderr, which is discarded).
//!
//! `provider_config` keys: `module`, `function` (required), `python`
//! (interpreter, default `python3` looked up in lackpy's own `PATH`),
//! `python_path` (list of directories), `workspace`, `network`,
//! `memory_mb`, `timeout` (seconds per call, default
//! [`DEFAULT_TIMEOUT_SECS`]), `max_bytes` (reply size cap, default 8 MiB),
//! `env` (table of strings), `pass_env` (variable names copied from
//! lackpy's own environment).
//!
//! Failures: a Python exception is a tool error whose message is
//! `"ExceptionType: message"`; its type is `FileNotFound`, `IsADirectory`,
//! `NotUtf8` or `Timeout` for `FileNotFoundError`, `IsADirectoryError`,
//! `UnicodeDecodeError`, `TimeoutError`, `BadArgument` when the arguments do
//! not bind to the function's signature, and `ToolFailed` otherwise. A
//! non-plain result is `ToolFailed` naming the type; instances of
//! subclasses of the plain types (`IntEnum`, `str` enums, namedtuples,
//! `OrderedDict`, `defaultdict`, `frozenset`) become their plain base value. A call that exceeds its
//! timeout is `Timeout` and the helper is killed (with its process group) and
//! restarted on the next call; a reply over the cap is `TooLarge` (helper
//! restarted); a helper that dies during a call is `ToolFailed` and the next
//! call gets a fresh one.

use super::child::{
    cfg_env, cfg_f64, cfg_str, config_path, spawn_jailed, workspace_path, CHILD_PATH,
};
use super::pipes::{kill_group, read_line, PipeError, Until};
use super::value;
use crate::call::RunContext;
use crate::childjail::{program_roots, Jail, Spec};
use crate::tools::fs::{Workspace, READ_CAP};
use lackpy_policy::config::{PythonTool, ToolSpec, WorkspaceAccess};
use lackpy_policy::wire::{Data, ToolFailure};
use std::collections::HashMap;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The helper script, embedded so no file has to be found at run time.
pub const HELPER_PY: &str = include_str!("helper.py");

/// Default per-call timeout, in seconds. Why 10: the default wall-clock
/// limit of a whole run; a tool call cannot usefully take longer.
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// Largest accepted `timeout` setting, in seconds (one hour).
const MAX_TIMEOUT_SECS: f64 = 3600.0;

/// How long a freshly spawned helper may take to import the first module is
/// part of the call's own timeout: nothing separate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    workspace: PathBuf,
    python: PathBuf,
    env: Vec<(String, String)>,
    /// `python_path` directories (outside the workspace).
    python_path: Vec<PathBuf>,
    /// `workspace = "none" | "read" | "write"`.
    ws_access: WorkspaceAccess,
    /// `network = true`.
    network: bool,
    /// `memory_mb`.
    memory_mb: u64,
}

/// Default memory (address space) of a helper, in MiB. Why 2048: an
/// interpreter with numeric libraries loaded needs a few hundred MiB.
const DEFAULT_MEMORY_MB: u64 = 2048;
/// Most files read from `.lackpy/tools/`, and their total size. Why: they
/// are sent to the helper on every change; a tools directory is hand-made.
const MAX_TOOL_FILES: usize = 256;
const MAX_TOOLS_BYTES: u64 = 4 * 1024 * 1024;
/// How deep `.lackpy/tools/` is searched for packages.
const MAX_TOOLS_DEPTH: usize = 4;

/// A running helper.
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    buf: Vec<u8>,
    next_id: u64,
    /// The tool modules it was last sent.
    sent: Option<Sources>,
}

/// Tool modules of `.lackpy/tools/` by dotted name: (source, file name, is a package).
type Sources = std::collections::BTreeMap<String, (String, String, bool)>;

/// Read every module of `<workspace>/.lackpy/tools/` beneath the workspace
/// (no symlink followed: one is an error), bounded in count, size and depth.
fn tool_sources(workspace: &Path) -> Result<Sources, ToolFailure> {
    let refuse = |e: lackpy_beneath::Error| {
        ToolFailure::new(
            "ToolFailed",
            format!("configuration error: python tool modules: {e}"),
        )
    };
    let mut out = Sources::new();
    let Some(ctl) = lackpy_beneath::open_control(workspace, false).map_err(refuse)? else {
        return Ok(out);
    };
    let Some(tools) = ctl.subdir("tools", false).map_err(refuse)? else {
        return Ok(out);
    };
    let mut total = 0u64;
    // (directory, dotted prefix, depth)
    let mut stack = vec![(tools, String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        for (name, kind) in dir.entries(MAX_TOOL_FILES).map_err(refuse)? {
            let valid = |n: &str| {
                !n.is_empty()
                    && !n.starts_with(|c: char| c.is_ascii_digit())
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            };
            match kind {
                lackpy_beneath::Kind::Symlink => {
                    return Err(refuse(lackpy_beneath::Error::Symlink {
                        path: dir.path().join(&name),
                    }))
                }
                lackpy_beneath::Kind::Dir if valid(&name) && depth < MAX_TOOLS_DEPTH => {
                    if let Some(sub) = dir.subdir(&name, false).map_err(refuse)? {
                        let dotted = format!("{prefix}{name}");
                        // A directory is a package (namespace package when
                        // it has no __init__.py).
                        out.entry(dotted.clone()).or_insert((
                            String::new(),
                            sub.path().display().to_string(),
                            true,
                        ));
                        stack.push((sub, format!("{dotted}."), depth + 1));
                    }
                }
                lackpy_beneath::Kind::File => {
                    let Some(stem) = name.strip_suffix(".py").filter(|s| valid(s)) else {
                        continue;
                    };
                    if out.len() >= MAX_TOOL_FILES {
                        return Err(refuse(lackpy_beneath::Error::TooLarge {
                            path: dir.path().to_path_buf(),
                            cap: MAX_TOOL_FILES as u64,
                        }));
                    }
                    let left = MAX_TOOLS_BYTES.saturating_sub(total);
                    let Some(text) = dir.read_text(&name, left).map_err(refuse)? else {
                        continue;
                    };
                    total += text.len() as u64;
                    let file = dir.path().join(&name).display().to_string();
                    if stem == "__init__" {
                        let pkg = prefix.trim_end_matches('.').to_string();
                        if !pkg.is_empty() {
                            out.insert(pkg, (text, file, true));
                        }
                    } else {
                        out.insert(format!("{prefix}{stem}"), (text, file, false));
                    }
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// The tool's own module where the original lackpy looked for it (the
/// workspace), when it is there: a configuration error.
fn module_in_workspace(workspace: &Path, module: &str) -> Option<PathBuf> {
    let rel: PathBuf = module.split('.').collect();
    [rel.with_extension("py"), rel.join("__init__.py")]
        .into_iter()
        .map(|p| workspace.join(p))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

type Slot = Arc<Mutex<Option<Helper>>>;

/// The python helper processes of one [`super::Providers`], one per
/// (workspace, interpreter, environment, jail). Dropping it kills them
/// (they also exit by themselves when lackpy exits: their stdin closes).
#[derive(Default)]
pub struct Helpers {
    map: Mutex<HashMap<Key, Slot>>,
}

impl Helpers {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Slot>> {
        match self.map.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn slot(&self, key: Key) -> Slot {
        self.map().entry(key).or_default().clone()
    }

    /// Number of helper processes currently alive (for tests and `doctor`).
    pub fn live(&self) -> usize {
        self.map()
            .values()
            .filter(|s| s.lock().map(|h| h.is_some()).unwrap_or(false))
            .count()
    }

    /// Kill every helper.
    pub fn shutdown(&self) {
        for s in self.map().values() {
            let mut h = match s.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            if let Some(mut helper) = h.take() {
                kill_group(&mut helper.child);
            }
        }
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Find an interpreter: a name with a `/` is used as given; a bare name is
/// looked up in lackpy's own `PATH` (the user's python, venv or pyenv, as
/// the original lackpy ran tools in the user's interpreter).
fn find_python(name: &str) -> Result<PathBuf, ToolFailure> {
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| CHILD_PATH.into());
    for dir in std::env::split_paths(&path) {
        let cand = dir.join(name);
        if is_executable(&cand) {
            return Ok(cand);
        }
    }
    Err(ToolFailure::new(
        "ToolFailed",
        format!("python interpreter {name:?} not found in PATH"),
    ))
}

/// The real interpreter behind `found` (a pyenv/asdf shim needs its
/// environment to pick a version, which the helper does not get): asked
/// once per interpreter, jailed (read+execute of the shim's installation
/// only, no network, no workspace), from `/`, with lackpy's `PATH`,
/// `HOME` and `PYENV_*`/`ASDF_*` variables: a workspace's
/// `.python-version` is program-writable and is not consulted; cached.
fn real_python(found: &Path) -> Result<PathBuf, ToolFailure> {
    static RESOLVED: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    let map = RESOLVED.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(p) = map.lock().ok().and_then(|m| m.get(found).cloned()) {
        return Ok(p);
    }
    let jail = Jail::prepare(&Spec {
        read_exec: program_roots(found),
        nofile: 64,
        max_procs: 16,
        cpu_seconds: Some(DEFAULT_TIMEOUT_SECS as u64),
        ..Spec::default()
    })
    .map_err(|e| ToolFailure::new("ToolFailed", format!("cannot jail python: {e}")))?;
    let mut cmd = Command::new(found);
    cmd.args(["-I", "-c", "import sys; sys.stdout.write(sys.executable)"])
        .current_dir("/")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0);
    for (k, v) in std::env::vars_os() {
        let keep = k.to_str().is_some_and(|k| {
            matches!(k, "PATH" | "HOME") || k.starts_with("PYENV_") || k.starts_with("ASDF_")
        });
        if keep {
            cmd.env(k, v);
        }
    }
    let mut child = spawn_jailed(jail, &mut cmd, || {
        format!("cannot start python {}", found.display())
    })?;
    let Some(stdout) = child.stdout.take() else {
        kill_group(&mut child);
        return Err(ToolFailure::new(
            "ToolFailed",
            "python helper pipes unavailable",
        ));
    };
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(DEFAULT_TIMEOUT_SECS as u64);
    let got = super::pipes::read_all(&stdout, &mut buf, &deadline.into(), 4096);
    kill_group(&mut child);
    let path = match got {
        Ok(()) => String::from_utf8(buf).ok().map(PathBuf::from),
        Err(_) => None,
    }
    .filter(|p| p.is_absolute() && is_executable(p))
    .ok_or_else(|| {
        ToolFailure::new(
            "ToolFailed",
            format!(
                "{} did not report a usable interpreter (it runs jailed: only its own installation is readable)",
                found.display()
            ),
        )
    })?;
    if let Ok(mut m) = map.lock() {
        m.insert(found.to_path_buf(), path.clone());
    }
    Ok(path)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn spawn(key: &Key) -> Result<Helper, ToolFailure> {
    let (read_only, read_write) = match key.ws_access {
        WorkspaceAccess::None => (vec![], vec![]),
        WorkspaceAccess::Read => (vec![key.workspace.clone()], vec![]),
        WorkspaceAccess::Write => (vec![], vec![key.workspace.clone()]),
    };
    let mut read_exec = program_roots(&key.python);
    read_exec.extend(key.python_path.iter().cloned());
    let jail = Jail::prepare(&Spec {
        network: key.network,
        read_exec,
        read_only,
        fsize: if read_write.is_empty() {
            0
        } else {
            64 * 1024 * 1024
        },
        read_write,
        as_bytes: Some(key.memory_mb.saturating_mul(1024 * 1024)),
        nofile: 256,
        max_procs: 64,
        hide_control_of: Some(key.workspace.clone()),
        ..Spec::default()
    })
    .map_err(|e| ToolFailure::new("ToolFailed", format!("cannot jail the python helper: {e}")))?;
    let mut cmd = Command::new(&key.python);
    // -I: isolated (no PYTHON* variables, no user site, no cwd on sys.path).
    // -B: write no .pyc files (a read-only tool must not leave files behind).
    cmd.arg("-I")
        .arg("-B")
        .arg("-c")
        .arg(HELPER_PY)
        .args(&key.python_path)
        .current_dir(if key.ws_access == WorkspaceAccess::None {
            Path::new("/")
        } else {
            &key.workspace
        })
        .env_clear()
        .env("PATH", CHILD_PATH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group, so a timeout kills whatever the tool forked.
        .process_group(0);
    for (k, v) in &key.env {
        cmd.env(k, v);
    }
    let mut child = spawn_jailed(jail, &mut cmd, || {
        format!(
            "cannot start the python helper {} in its jail",
            key.python.display()
        )
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        kill_group(&mut child);
        return Err(ToolFailure::new(
            "ToolFailed",
            "python helper pipes unavailable",
        ));
    };
    Ok(Helper {
        child,
        stdin,
        stdout,
        buf: Vec::new(),
        next_id: 1,
        sent: None,
    })
}

fn describe_exit(child: &mut Child) -> String {
    // The helper closed its stdout; give it a moment to finish dying.
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                return match (st.code(), st.signal()) {
                    (Some(c), _) => format!("exit status {c}"),
                    (None, Some(s)) => format!("killed by signal {s}"),
                    _ => "exited".to_string(),
                }
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                kill_group(child);
                return "closed its output".to_string();
            }
        }
    }
}

/// Run one call of a `python`-provider tool.
///
/// # Errors
/// See the module documentation.
pub fn call(
    helpers: &Helpers,
    py: &PythonTool,
    spec: &ToolSpec,
    args: &[Data],
    ws: &Workspace,
    run: &RunContext,
) -> Result<Data, ToolFailure> {
    let tool = spec.name.as_str();
    let (module, function) = (py.module.as_str(), py.function.as_str());
    let timeout = cfg_f64(spec, "timeout")
        .or_else(|| cfg_f64(spec, "timeout_seconds"))
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
        .min(MAX_TIMEOUT_SECS);
    let timeout = run.clamp_timeout_secs(timeout);
    let cap = cfg_f64(spec, "max_bytes").map_or(READ_CAP as usize, |b| b as usize);
    let workspace = workspace_path(ws)?;
    let untrusted = |what: &str, p: &Path| {
        ToolFailure::new(
            "ToolFailed",
            format!("{tool}: {}", crate::trusted::refusal(what, p, &workspace)),
        )
    };
    let found = find_python(cfg_str(spec, "python").unwrap_or("python3"))?;
    if crate::trusted::in_writable_set(&found, &workspace) {
        return Err(untrusted("the python interpreter", &found));
    }
    let python = real_python(&found)?;
    if crate::trusted::in_writable_set(&python, &workspace) {
        return Err(untrusted("the python interpreter", &python));
    }
    let python_path = match spec.provider_config.get("python_path") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|p| p.as_str().map(|s| config_path(s, &workspace)))
                    .collect::<Option<Vec<PathBuf>>>()
            })
            .ok_or_else(|| {
                ToolFailure::new(
                    "ToolFailed",
                    format!("tool {tool:?}: python_path must be a list of directories"),
                )
            })?,
    };
    if let Some(p) = python_path
        .iter()
        .find(|p| crate::trusted::in_writable_set(p, &workspace))
    {
        return Err(untrusted("the python_path directory", p));
    }
    let sources = tool_sources(&workspace)?;
    let top = module.split('.').next().unwrap_or(module);
    if !sources.contains_key(top) {
        if let Some(p) = module_in_workspace(&workspace, module) {
            return Err(untrusted(&format!("the tool module {module:?} at"), &p));
        }
    }
    let ws_access = match cfg_str(spec, "workspace") {
        None | Some("read") => WorkspaceAccess::Read,
        Some("none") => WorkspaceAccess::None,
        Some("write") => WorkspaceAccess::Write,
        Some(other) => {
            return Err(ToolFailure::new(
                "ToolFailed",
                format!(
                "tool {tool:?}: workspace must be \"none\", \"read\" or \"write\", not {other:?}"
            ),
            ))
        }
    };
    let key = Key {
        python,
        workspace,
        env: cfg_env(spec)?,
        python_path,
        ws_access,
        network: spec
            .provider_config
            .get("network")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        memory_mb: cfg_f64(spec, "memory_mb")
            .filter(|m| *m >= 1.0)
            .map_or(DEFAULT_MEMORY_MB, |m| m as u64),
    };
    let slot = helpers.slot(key.clone());
    // One call at a time per helper: wait for another run's call, but not
    // past this call's own timeout (already cut to the run's deadline),
    // nor once the run is cancelled.
    let wait_until = Instant::now() + Duration::from_secs_f64(timeout);
    let mut guard = loop {
        match slot.try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                run.check()?;
                if Instant::now() >= wait_until {
                    return Err(ToolFailure::new(
                        "Timeout",
                        format!(
                            "{tool}() could not start within {timeout} s: the workspace's python helper was busy with another run's call"
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    };
    // A helper that died between calls (killed from outside) is replaced.
    if let Some(h) = guard.as_mut() {
        if !matches!(h.child.try_wait(), Ok(None)) {
            kill_group(&mut h.child);
            *guard = None;
        }
    }
    if guard.is_none() {
        *guard = Some(spawn(&key)?);
    }
    let Some(helper) = guard.as_mut() else {
        return Err(ToolFailure::new("ToolFailed", "python helper unavailable"));
    };
    let id = helper.next_id;
    helper.next_id += 1;
    let mut req = serde_json::json!({
        "id": id,
        "module": module,
        "function": function,
        "args": args.iter().map(value::to_tagged).collect::<Vec<_>>(),
    });
    if helper.sent.as_ref() != Some(&sources) {
        let map: serde_json::Map<String, serde_json::Value> = sources
            .iter()
            .map(|(name, (source, file, package))| {
                (
                    name.clone(),
                    serde_json::json!({"source": source, "filename": file, "package": package}),
                )
            })
            .collect();
        req["sources"] = serde_json::Value::Object(map);
        helper.sent = Some(sources);
    }
    let mut line = req.to_string().into_bytes();
    line.push(b'\n');
    let deadline = Instant::now() + Duration::from_secs_f64(timeout);
    if let Err(e) = helper
        .stdin
        .write_all(&line)
        .and_then(|()| helper.stdin.flush())
    {
        let how = describe_exit(&mut helper.child);
        *guard = None;
        return Err(ToolFailure::new(
            "ToolFailed",
            format!("python helper for {tool} is gone ({how}; {e}); a fresh one will start on the next call"),
        ));
    }
    let until = Until::new(deadline, run.cancel.clone());
    let reply = match read_line(&helper.stdout, &mut helper.buf, &until, cap) {
        Ok(l) => l,
        Err(e) => {
            let out = match e {
                PipeError::Cancelled => {
                    kill_group(&mut helper.child);
                    ToolFailure::new(
                        "Timeout",
                        format!(
                            "the run was cancelled during {tool}(); its python helper was killed"
                        ),
                    )
                }
                PipeError::Timeout => {
                    kill_group(&mut helper.child);
                    ToolFailure::new(
                        "Timeout",
                        format!(
                            "{tool}() did not return within {timeout} s; its python helper was killed"
                        ),
                    )
                }
                PipeError::TooLarge => {
                    kill_group(&mut helper.child);
                    ToolFailure::new(
                        "TooLarge",
                        format!("{tool}() returned more than {cap} bytes"),
                    )
                }
                PipeError::Eof => {
                    let how = describe_exit(&mut helper.child);
                    ToolFailure::new(
                        "ToolFailed",
                        format!(
                            "the python helper crashed during {tool}() ({how}); a fresh one will start on the next call"
                        ),
                    )
                }
                PipeError::Io(e) => {
                    kill_group(&mut helper.child);
                    ToolFailure::new("ToolFailed", format!("python helper I/O error: {e}"))
                }
            };
            *guard = None;
            return Err(out);
        }
    };
    let seed = value::TaggedSeed::new(value::MAX_VALUES);
    let parsed = match decode_reply(&reply, &seed) {
        Ok(r) => r,
        Err(e) => {
            kill_group(&mut helper.child);
            *guard = None;
            if let Some(over) = seed.too_many() {
                return Err(ToolFailure::new("TooLarge", format!("{tool}(): {over}")));
            }
            return Err(ToolFailure::new(
                "ToolFailed",
                format!("{tool}(): malformed reply from the python helper: {e}"),
            ));
        }
    };
    if parsed.id != Some(id) {
        kill_group(&mut helper.child);
        *guard = None;
        return Err(ToolFailure::new(
            "ToolFailed",
            format!("{tool}(): python helper answered out of turn; restarted"),
        ));
    }
    drop(guard);
    if parsed.ok == Some(true) {
        return Ok(parsed.value.unwrap_or(Data::None));
    }
    let err = parsed.error.unwrap_or_default();
    let ty = err.ty.as_deref().unwrap_or("ToolFailed");
    let ty = match ty {
        "FileNotFound" | "IsADirectory" | "NotUtf8" | "Timeout" | "BadArgument" => ty,
        _ => "ToolFailed",
    };
    let msg = err.message.unwrap_or_else(|| "unknown error".to_string());
    Err(ToolFailure::new(ty, msg))
}

/// One reply line of the helper: `{"id": N, "ok": true, "value": tagged}`
/// or `{"id": N, "ok": false, "error": {"type": T, "message": M}}`.
struct Reply {
    id: Option<u64>,
    ok: Option<bool>,
    value: Option<Data>,
    error: Option<ReplyError>,
}

/// The `error` member of a [`Reply`].
#[derive(Default, serde::Deserialize)]
struct ReplyError {
    #[serde(rename = "type", default)]
    ty: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Decode a reply line, its value straight into [`Data`] through `seed`
/// (which bounds how many values it builds: a `serde_json::Value` of the
/// whole line first cost ~310 MiB for 8 MiB of `[],[],…`).
fn decode_reply(line: &[u8], seed: &value::TaggedSeed) -> Result<Reply, serde_json::Error> {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    struct V<'a>(&'a value::TaggedSeed);
    impl<'de> Visitor<'de> for V<'_> {
        type Value = Reply;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a reply object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reply, A::Error> {
            let mut r = Reply {
                id: None,
                ok: None,
                value: None,
                error: None,
            };
            while let Some(k) = map.next_key::<String>()? {
                match k.as_str() {
                    "id" => r.id = map.next_value()?,
                    "ok" => r.ok = map.next_value()?,
                    "value" if r.value.is_none() => r.value = Some(map.next_value_seed(self.0)?),
                    "error" => r.error = map.next_value()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(r)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let r = (&mut de).deserialize_map(V(seed))?;
    de.end()?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `e` is of type `ty` and its message contains `needle`.
    fn assert_failure(e: &ToolFailure, ty: &str, needle: &str) {
        assert_eq!(e.type_name, ty, "{}", e.message);
        assert!(e.message.contains(needle), "{}", e.message);
    }

    /// A call outside any run, with this test binary's helpers.
    fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
        static HELPERS: OnceLock<Helpers> = OnceLock::new();
        let py = match lackpy_policy::config::Provider::of(spec) {
            Ok(lackpy_policy::config::Provider::Python(py)) => py,
            Ok(_) => panic!("not a python tool"),
            Err(e) => return Err(ToolFailure::new("ToolFailed", e.to_string())),
        };
        super::call(
            HELPERS.get_or_init(Helpers::default),
            &py,
            spec,
            args,
            ws,
            &RunContext::default(),
        )
    }

    fn python_available() -> bool {
        find_python("python3").is_ok()
    }

    fn tool(name: &str, function: &str, timeout: f64) -> ToolSpec {
        let mut t = ToolSpec {
            name: name.into(),
            provider: "python".into(),
            ..ToolSpec::default()
        };
        t.provider_config.insert("module".into(), "mytools".into());
        t.provider_config.insert("function".into(), function.into());
        t.provider_config.insert("timeout".into(), timeout.into());
        t
    }

    const MODULE: &str = r#"
import os, time, sys
def add(a, b):
    return a + b
def echo(x):
    return x
def shout(s):
    print("noise on stdout", s)
    sys.stdout.write("more\n")
    return s.upper()
def bad(x):
    raise ValueError("bad value: %r" % (x,))
def obj():
    return [1, {"k": object()}]
def crash():
    os._exit(3)
def hang():
    time.sleep(60)
def big():
    return "x" * 5000
def missing():
    return open("nope.txt").read()
def cwd():
    return (os.getcwd(), sorted(k for k in os.environ if k not in ("LC_CTYPE",)))
import collections, enum
class Color(enum.IntEnum):
    RED = 3
class Mode(str, enum.Enum):
    FAST = "fast"
Point = collections.namedtuple("Point", "x y")
def subclasses():
    return [Color.RED, Mode.FAST, Point(1, 2.5), collections.OrderedDict(a=1),
            collections.defaultdict(list, b=[True]), frozenset([7])]
def rec():
    a = []
    a.append(a)
    return a
"#;

    /// A workspace with `module` as `.lackpy/tools/mytools.py`.
    fn workspace_with(module: &str) -> tempfile::TempDir {
        assert!(
            python_available(),
            "python3 is required for the python provider's tests"
        );
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join(".lackpy/tools")).unwrap();
        std::fs::write(d.path().join(".lackpy/tools/mytools.py"), module).unwrap();
        d
    }

    const HOSTILE: &str = r#"
import os, socket
def attempt(what, arg):
    try:
        if what == "read":
            with open(arg, "rb") as f:
                return "read:" + f.read(200).decode("latin-1")
        if what == "write":
            with open(arg, "w") as f:
                f.write("pwned")
            return "wrote"
        if what == "list":
            return "list:" + ",".join(sorted(os.listdir(arg)))
        if what == "connect":
            s = socket.create_connection(("127.0.0.1", int(arg)), timeout=2)
            s.close()
            return "connected"
        if what == "ppid_environ":
            with open("/proc/%d/environ" % os.getppid(), "rb") as f:
                return "read:" + f.read(200).decode("latin-1")
        if what == "import_csv":
            import csv
            return "csv:" + str(getattr(csv, "HIJACKED", False))
        if what == "version":
            return VERSION
    except BaseException as e:
        return "denied:" + type(e).__name__
VERSION = 1
"#;

    #[test]
    fn hostile_module_is_jailed() {
        let d = workspace_with(HOSTILE);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        std::fs::write(d.path().join(".lackpy/config.toml"), "# cfg").unwrap();
        // A program-written csv.py in the workspace must not shadow the stdlib.
        std::fs::write(d.path().join("csv.py"), "HIJACKED = True\n").unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let ws = Workspace::open(d.path()).unwrap();
        let s = |x: &str| Data::Str(x.into());
        let t = tool("attempt", "attempt", 10.0);
        let go = |what: &str, arg: &str| match call(&t, &[s(what), s(arg)], &ws).unwrap() {
            Data::Str(v) => v,
            other => panic!("{other:?}"),
        };
        let secret = outside.path().join("secret");
        assert!(go("read", secret.to_str().unwrap()).starts_with("denied"));
        assert!(go("ppid_environ", "").starts_with("denied"));
        assert!(go("read", "/etc/shadow").starts_with("denied"));
        assert!(go("write", outside.path().join("x").to_str().unwrap()).starts_with("denied"));
        assert!(go("write", "in_ws.txt").starts_with("denied"));
        assert!(go("write", ".lackpy/config.toml").starts_with("denied"));
        assert_eq!(go("list", ".lackpy"), "list:");
        assert!(go("read", ".lackpy/config.toml").starts_with("denied"));
        assert_eq!(go("read", "csv.py"), "read:HIJACKED = True\n");
        assert_eq!(go("import_csv", ""), "csv:False");
        assert!(go("connect", &port).starts_with("denied"));
        assert!(!outside.path().join("x").exists());
        assert!(!d.path().join("in_ws.txt").exists());
        assert_eq!(
            std::fs::read_to_string(d.path().join(".lackpy/config.toml")).unwrap(),
            "# cfg"
        );
        // An edited module is re-executed on the next call.
        std::fs::write(
            d.path().join(".lackpy/tools/mytools.py"),
            HOSTILE.replace("VERSION = 1", "VERSION = 2"),
        )
        .unwrap();
        assert_eq!(call(&t, &[s("version"), s("")], &ws).unwrap(), Data::Int(2));
    }

    #[test]
    fn modules_in_the_program_writable_set_are_refused() {
        let d = workspace_with("def f():\n    return 1\n");
        let ws = Workspace::open(d.path()).unwrap();
        // The original lackpy's place: the workspace itself.
        std::fs::write(d.path().join("wsmod.py"), "def f():\n    return 2\n").unwrap();
        let mut t = tool("f", "f", 10.0);
        t.provider_config.insert("module".into(), "wsmod".into());
        let e = call(&t, &[], &ws).unwrap_err();
        assert!(e.message.contains("configuration error"), "{}", e.message);
        assert!(e.message.contains("wsmod.py"), "{}", e.message);
        // A python_path inside the workspace.
        std::fs::create_dir_all(d.path().join("lib")).unwrap();
        let mut t = tool("f", "f", 10.0);
        t.provider_config
            .insert("python_path".into(), serde_json::json!(["lib"]));
        let e = call(&t, &[], &ws).unwrap_err();
        assert!(e.message.contains("python_path"), "{}", e.message);
        // A symlinked module in .lackpy/tools is refused, not followed.
        std::os::unix::fs::symlink(
            d.path().join("wsmod.py"),
            d.path().join(".lackpy/tools/l.py"),
        )
        .unwrap();
        let e = call(&tool("f", "f", 10.0), &[], &ws).unwrap_err();
        assert!(e.message.contains("symlink"), "{}", e.message);
    }

    #[test]
    fn helper_round_trips_and_fails_cleanly() {
        let d = workspace_with(MODULE);
        let ws = Workspace::open(d.path()).unwrap();
        let s = |x: &str| Data::Str(x.into());

        let v = call(
            &tool("add", "add", 10.0),
            &[Data::Int(2), Data::BigInt("99999999999999999999".into())],
            &ws,
        )
        .unwrap();
        assert_eq!(v, Data::BigInt("100000000000000000001".into()));
        let rich = Data::Dict(vec![
            (
                Data::Int(1),
                Data::Tuple(vec![Data::Float(0.1), Data::None]),
            ),
            (s("k"), Data::Set(vec![s("a")])),
        ]);
        assert_eq!(
            call(
                &tool("echo", "echo", 10.0),
                std::slice::from_ref(&rich),
                &ws
            )
            .unwrap(),
            rich
        );
        assert_eq!(
            call(&tool("shout", "shout", 10.0), &[s("hi")], &ws).unwrap(),
            s("HI")
        );

        let e = call(&tool("bad", "bad", 10.0), &[Data::Int(1)], &ws).unwrap_err();
        assert_eq!(
            (e.type_name.as_str(), e.message.as_str()),
            ("ToolFailed", "ValueError: bad value: 1")
        );
        let e = call(&tool("bad", "bad", 10.0), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
        let e = call(&tool("obj", "obj", 10.0), &[], &ws).unwrap_err();
        assert_failure(&e, "ToolFailed", "non-plain value of type 'object'");
        assert_eq!(
            call(&tool("sub", "subclasses", 10.0), &[], &ws).unwrap(),
            Data::List(vec![
                Data::Int(3),
                s("fast"),
                Data::Tuple(vec![Data::Int(1), Data::Float(2.5)]),
                Data::Dict(vec![(s("a"), Data::Int(1))]),
                Data::Dict(vec![(s("b"), Data::List(vec![Data::Bool(true)]))]),
                Data::Set(vec![Data::Int(7)]),
            ])
        );
        let e = call(&tool("rec", "rec", 10.0), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        let e = call(&tool("missing", "missing", 10.0), &[], &ws).unwrap_err();
        assert_failure(&e, "FileNotFound", "FileNotFoundError: ");

        let (cwd, env) = match call(&tool("cwd", "cwd", 10.0), &[], &ws).unwrap() {
            Data::Tuple(v) => (v[0].clone(), v[1].clone()),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            cwd,
            Data::Str(d.path().canonicalize().unwrap().to_string_lossy().into())
        );
        assert_eq!(env, Data::List(vec![s("PATH")]));

        let e = call(&tool("crash", "crash", 10.0), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        assert!(e.message.contains("crashed"), "{}", e.message);
        assert!(e.message.contains("exit status 3"), "{}", e.message);
        // A fresh helper answers the next call.
        assert_eq!(
            call(
                &tool("add", "add", 10.0),
                &[Data::Int(1), Data::Int(2)],
                &ws
            )
            .unwrap(),
            Data::Int(3)
        );

        let t0 = Instant::now();
        let e = call(&tool("hang", "hang", 0.5), &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "Timeout");
        assert!(t0.elapsed() < Duration::from_secs(5));
        assert_eq!(
            call(&tool("add", "add", 10.0), &[s("a"), s("b")], &ws).unwrap(),
            s("ab")
        );

        let mut t = tool("big", "big", 10.0);
        t.provider_config.insert("max_bytes".into(), 1000.into());
        assert_eq!(call(&t, &[], &ws).unwrap_err().type_name, "TooLarge");

        let mut t = tool("x", "nothere", 10.0);
        let e = call(&t, &[], &ws).unwrap_err();
        assert!(e.message.contains("has no function"), "{}", e.message);
        t.provider_config
            .insert("module".into(), "no_such_module".into());
        let e = call(&t, &[], &ws).unwrap_err();
        assert!(e.message.contains("cannot import module"), "{}", e.message);
        t.provider_config.remove("module");
        let e = call(&t, &[], &ws).unwrap_err();
        assert!(e.message.contains("module: missing"), "{}", e.message);
    }

    /// A reply of more values than one reply to the worker can carry is
    /// refused while it is decoded: 1.5 million `[]` (6 MB of reply) were
    /// parsed into `serde_json::Value`s and converted whole (~300 MiB for a
    /// full 8 MiB reply) before the worker's frame refused them.
    #[test]
    fn a_reply_of_too_many_values_is_refused_while_decoded() {
        let ws_dir = workspace_with("def flood(n):\n    return [[]] * n\n");
        let ws = Workspace::open(ws_dir.path()).unwrap();
        let t = tool("flood", "flood", 30.0);
        let e = call(&t, &[Data::Int(1_500_000)], &ws).unwrap_err();
        assert_failure(&e, "TooLarge", "MAX_VALUES");
        // Under the bound it works, with a fresh helper.
        let r = call(&t, &[Data::Int(400_000)], &ws).unwrap();
        assert!(matches!(r, Data::List(v) if v.len() == 400_000));
    }
}
