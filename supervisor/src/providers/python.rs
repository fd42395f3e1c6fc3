//! The `python` provider, compatible with the original lackpy's
//! `[[tools]]` entries (`provider = "python"`, `module`, `function`).
//!
//! One long-lived helper process per (workspace, interpreter, env) runs the
//! user's tool functions: `python3 -I -B -c <helper.py>` (isolated mode: no
//! `PYTHON*` variables, no user site-packages, no `.pyc` writes; the helper puts the workspace
//! first on `sys.path` itself), cwd = the workspace, environment cleared
//! except `PATH` ([`super::CHILD_PATH`]) and the tool's `env` table. It is
//! *not* jailed: tool modules are the operator's trusted code, like any tool
//! implementation; what reaches them is only what the supervisor authorized.
//!
//! Requests and replies are JSON lines ([`super::value`]'s tagged form) on
//! the helper's original stdin/stdout, which it moves off fds 0/1 before
//! importing anything, so a tool's `print` cannot corrupt the protocol (it
//! goes to the helper's stderr, which is discarded).
//!
//! `provider_config` keys: `module`, `function` (required), `python`
//! (interpreter, default `python3` looked up in lackpy's own `PATH`),
//! `timeout` (seconds per call, default [`DEFAULT_TIMEOUT_SECS`]),
//! `max_bytes` (reply size cap, default 8 MiB), `env` (table of strings),
//! `pass_env` (variable names copied from lackpy's own environment).
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

use super::pipes::{kill_group, read_line, PipeError};
use super::{cfg_env, cfg_f64, cfg_str, value, workspace_path, CHILD_PATH};
use crate::tools::fs::{fail, Workspace, READ_CAP};
use lackpy_policy::config::ToolSpec;
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
}

/// A running helper.
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    buf: Vec<u8>,
    next_id: u64,
}

type Slot = Arc<Mutex<Option<Helper>>>;

fn registry() -> &'static Mutex<HashMap<Key, Slot>> {
    static HELPERS: OnceLock<Mutex<HashMap<Key, Slot>>> = OnceLock::new();
    HELPERS.get_or_init(|| Mutex::new(HashMap::new()))
}

fn slot(key: Key) -> Slot {
    let mut map = match registry().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    map.entry(key).or_default().clone()
}

/// Number of helper processes currently alive (for tests and `doctor`).
pub fn live_helpers() -> usize {
    let map = match registry().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    map.values()
        .filter(|s| s.lock().map(|h| h.is_some()).unwrap_or(false))
        .count()
}

/// Kill every helper (they also exit by themselves when lackpy exits: their
/// stdin closes).
pub fn shutdown() {
    let map = match registry().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    for s in map.values() {
        let mut h = match s.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(mut helper) = h.take() {
            kill_group(&mut helper.child);
        }
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
    Err(fail(
        "ToolFailed",
        format!("python interpreter {name:?} not found in PATH"),
    ))
}

/// The real interpreter behind `found` (a pyenv/asdf shim needs its
/// environment to pick a version, which the helper does not get): asked
/// once per (interpreter, workspace) with lackpy's own environment, so a
/// workspace's `.python-version` is honoured; cached.
fn real_python(found: &Path, workspace: &Path) -> Result<PathBuf, ToolFailure> {
    static RESOLVED: OnceLock<Mutex<HashMap<(PathBuf, PathBuf), PathBuf>>> = OnceLock::new();
    let map = RESOLVED.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (found.to_path_buf(), workspace.to_path_buf());
    if let Some(p) = map.lock().ok().and_then(|m| m.get(&key).cloned()) {
        return Ok(p);
    }
    let mut child = Command::new(found)
        .args(["-I", "-c", "import sys; sys.stdout.write(sys.executable)"])
        .current_dir(workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| {
            fail(
                "ToolFailed",
                format!("cannot start python {}: {e}", found.display()),
            )
        })?;
    let Some(stdout) = child.stdout.take() else {
        kill_group(&mut child);
        return Err(fail("ToolFailed", "python helper pipes unavailable"));
    };
    let mut buf = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(DEFAULT_TIMEOUT_SECS as u64);
    let got = super::pipes::read_all(&stdout, &mut buf, deadline, 4096);
    kill_group(&mut child);
    let path = match got {
        Ok(()) => String::from_utf8(buf).ok().map(PathBuf::from),
        Err(_) => None,
    }
    .filter(|p| p.is_absolute() && is_executable(p))
    .ok_or_else(|| {
        fail(
            "ToolFailed",
            format!("{} did not report a usable interpreter", found.display()),
        )
    })?;
    if let Ok(mut m) = map.lock() {
        m.insert(key, path.clone());
    }
    Ok(path)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn spawn(key: &Key) -> Result<Helper, ToolFailure> {
    let mut cmd = Command::new(&key.python);
    // -I: isolated (no PYTHON* variables, no user site, no cwd on sys.path;
    // the helper adds the workspace itself). -B: write no .pyc files into
    // the workspace (a read-only tool must not leave files behind).
    cmd.arg("-I")
        .arg("-B")
        .arg("-c")
        .arg(HELPER_PY)
        .current_dir(&key.workspace)
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
    let mut child = cmd.spawn().map_err(|e| {
        fail(
            "ToolFailed",
            format!(
                "cannot start the python helper {}: {e}",
                key.python.display()
            ),
        )
    })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        kill_group(&mut child);
        return Err(fail("ToolFailed", "python helper pipes unavailable"));
    };
    Ok(Helper {
        child,
        stdin,
        stdout,
        buf: Vec::new(),
        next_id: 1,
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
pub fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    let tool = spec.name.as_str();
    let (Some(module), Some(function)) = (cfg_str(spec, "module"), cfg_str(spec, "function"))
    else {
        return Err(fail(
            "ToolFailed",
            format!("python tool {tool:?} needs 'module' and 'function' in its config"),
        ));
    };
    let timeout = cfg_f64(spec, "timeout")
        .or_else(|| cfg_f64(spec, "timeout_seconds"))
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
        .min(MAX_TIMEOUT_SECS);
    let timeout = super::clamp_timeout_secs(timeout);
    let cap = cfg_f64(spec, "max_bytes").map_or(READ_CAP as usize, |b| b as usize);
    let workspace = workspace_path(ws)?;
    let found = find_python(cfg_str(spec, "python").unwrap_or("python3"))?;
    let key = Key {
        python: real_python(&found, &workspace)?,
        workspace,
        env: cfg_env(spec)?,
    };
    let slot = slot(key.clone());
    // One call at a time per helper: wait for another run's call, but not
    // past this call's own timeout (already cut to the run's deadline).
    let wait_until = Instant::now() + Duration::from_secs_f64(timeout);
    let mut guard = loop {
        match slot.try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(p)) => break p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                if Instant::now() >= wait_until {
                    return Err(fail(
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
        return Err(fail("ToolFailed", "python helper unavailable"));
    };
    let id = helper.next_id;
    helper.next_id += 1;
    let req = serde_json::json!({
        "id": id,
        "module": module,
        "function": function,
        "args": args.iter().map(value::to_tagged).collect::<Vec<_>>(),
    });
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
        return Err(fail(
            "ToolFailed",
            format!("python helper for {tool} is gone ({how}; {e}); a fresh one will start on the next call"),
        ));
    }
    let reply = match read_line(&helper.stdout, &mut helper.buf, deadline, cap) {
        Ok(l) => l,
        Err(e) => {
            let out = match e {
                PipeError::Timeout => {
                    kill_group(&mut helper.child);
                    fail(
                        "Timeout",
                        format!(
                            "{tool}() did not return within {timeout} s; its python helper was killed"
                        ),
                    )
                }
                PipeError::TooLarge => {
                    kill_group(&mut helper.child);
                    fail(
                        "TooLarge",
                        format!("{tool}() returned more than {cap} bytes"),
                    )
                }
                PipeError::Eof => {
                    let how = describe_exit(&mut helper.child);
                    fail(
                        "ToolFailed",
                        format!(
                            "the python helper crashed during {tool}() ({how}); a fresh one will start on the next call"
                        ),
                    )
                }
                PipeError::Io(e) => {
                    kill_group(&mut helper.child);
                    fail("ToolFailed", format!("python helper I/O error: {e}"))
                }
            };
            *guard = None;
            return Err(out);
        }
    };
    let parsed: serde_json::Value = match serde_json::from_slice(&reply) {
        Ok(v) => v,
        Err(e) => {
            kill_group(&mut helper.child);
            *guard = None;
            return Err(fail(
                "ToolFailed",
                format!("{tool}(): malformed reply from the python helper: {e}"),
            ));
        }
    };
    if parsed.get("id").and_then(serde_json::Value::as_u64) != Some(id) {
        kill_group(&mut helper.child);
        *guard = None;
        return Err(fail(
            "ToolFailed",
            format!("{tool}(): python helper answered out of turn; restarted"),
        ));
    }
    drop(guard);
    if parsed.get("ok").and_then(serde_json::Value::as_bool) == Some(true) {
        let v = parsed.get("value").unwrap_or(&serde_json::Value::Null);
        return value::from_tagged(v, 0)
            .map_err(|e| fail("ToolFailed", format!("{tool}(): bad result: {e}")));
    }
    let err = parsed.get("error");
    let ty = err
        .and_then(|e| e.get("type"))
        .and_then(|t| t.as_str())
        .unwrap_or("ToolFailed");
    let ty = match ty {
        "FileNotFound" | "IsADirectory" | "NotUtf8" | "Timeout" | "BadArgument" => ty,
        _ => "ToolFailed",
    };
    let msg = err
        .and_then(|e| e.get("message"))
        .and_then(|m| m.as_str())
        .unwrap_or("unknown error");
    Err(fail(ty, msg.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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

    #[test]
    fn helper_round_trips_and_fails_cleanly() {
        if !python_available() {
            eprintln!("python3 not found; skipping");
            return;
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("mytools.py"), MODULE).unwrap();
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
        assert_eq!(e.type_name, "ToolFailed");
        assert!(
            e.message.contains("non-plain value of type 'object'"),
            "{}",
            e.message
        );
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
        assert_eq!(e.type_name, "FileNotFound");
        assert!(
            e.message.starts_with("FileNotFoundError: "),
            "{}",
            e.message
        );

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
        assert!(call(&t, &[], &ws)
            .unwrap_err()
            .message
            .contains("needs 'module'"));
    }
}
