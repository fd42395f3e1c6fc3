//! The `command` provider: a tool is an argv template run without a shell,
//! by the supervisor, in a jail of its own.
//!
//! ```toml
//! [[tools]]
//! name = "grep_json"
//! provider = "command"
//! argv = ["rg", "--json", "--", "{pattern}", "."]
//! parse = "lines"          # "text" (default) | "lines" | "json" | "jsonl"
//! timeout = 5              # seconds, default 10
//! args = [{ name = "pattern", type = "str" }]
//! ```
//!
//! Templates. `{name}` names a declared argument; `{{`/`}}` are literal
//! braces. An item that is exactly `{name}` becomes exactly one argv item
//! holding the argument's `str()` (or is dropped when the argument is
//! `None`); a placeholder inside a larger item is plain text substitution
//! into that one item. Nothing is ever interpreted by a shell, so `;`,
//! `$(...)`, backticks, quotes and globs arrive literally. argv\[0\] must be
//! literal. Option injection: a value substituted at the *start* of an item
//! that begins with `-` is refused (`BadArgument`) unless a literal `--`
//! item comes earlier in argv, or the tool sets `allow_options = true`.
//! Containers and NUL bytes are refused. `stdin` (optional) is a template
//! string fed to the command's standard input.
//!
//! Trusted code: the program, and any literal argv item naming a script
//! (an executable file or one with a script ending, relative to the
//! workspace), must not lie in the program-writable set (a configuration
//! error naming the file, checked on every call); a command line that may
//! start Python with `-m` or `-c` gets `PYTHONSAFEPATH=1`, so the
//! workspace (its cwd) is not put on `sys.path`.
//!
//! Other `provider_config` keys: `ok_status` (exit codes that count as
//! success, default `[0]`), `max_bytes` (stdout cap, default 8 MiB,
//! `TooLarge` beyond), `memory_mb` (address-space limit, default 2048),
//! `env` (table of strings) and `pass_env` (names copied from lackpy's own
//! environment) — otherwise the environment is only `PATH` =
//! [`super::CHILD_PATH`] — and `writable` (see below).
//!
//! The jail ([`crate::childjail`], set up between `fork` and `exec`):
//! 1. its own process group (a timeout kills everything in it);
//! 2. new user (uid/gid mapped to the caller's), network (no interfaces:
//!    no network at all), IPC, UTS, cgroup and pid (step 7) namespaces;
//! 3. rlimits: no core dumps, CPU seconds = timeout + 1, address space
//!    `memory_mb`, 256 open files, file size 0 unless writable (64 MiB then),
//!    `max_procs` processes (default 64, counted in its user namespace;
//!    not enforced by the kernel when lackpy runs as root);
//! 4. `PR_SET_NO_NEW_PRIVS`;
//! 5. landlock (every filesystem and TCP right handled, plus signal and
//!    abstract-socket scoping): read+execute beneath `/usr /lib /lib64 /lib32
//!    /bin /sbin /opt`, on the resolved program file and beneath its
//!    installation and that of each `#!` interpreter it names
//!    ([`crate::childjail::program_roots`]; read-only when inside the
//!    workspace), read-only on the
//!    few `/etc` entries in [`crate::childjail::ETC_FILES`] (not `/etc/shadow`, keys, ...), read/write on
//!    `/dev/null`, read-only (files and directories, no execute) beneath the
//!    workspace — full write access to the workspace only when the tool's
//!    `effects_ceiling >= 2` *and* `writable = true`; nothing else (no /tmp,
//!    no home, no /proc);
//! 6. every inherited descriptor above 2 marked close-on-exec;
//!    cwd = the workspace, environment cleared;
//! 7. a new pid namespace with the command as its pid 1 (a parent outside
//!    relays its exit status): when the command ends or is killed, so is
//!    everything it started, even a process that left the group (`setsid`).
//!
//! A failure to set up any step fails the call (`ToolFailed`, naming it);
//! there is no unjailed fallback.

use super::child::{cfg_env, cfg_f64, spawn_jailed_for_call, workspace_path, CHILD_PATH};
use super::pipes::{kill_group, read_both, PipeError, Until};
use super::value;
use crate::call::RunContext;
use crate::childjail::{program_roots, Jail, Spec};
use crate::tools::fs::{Workspace, READ_CAP};
use lackpy_policy::config::{CommandTool, Parse, Seg, ToolSpec};
use lackpy_policy::wire::{Data, ToolFailure};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Default per-call timeout in seconds (the default wall clock of a run).
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;
/// Default address-space limit of a command, in MiB.
pub const DEFAULT_MEMORY_MB: u64 = 2048;
/// Default process limit of a command (itself and everything it forks).
pub const DEFAULT_MAX_PROCS: u64 = 64;
/// Bytes of a failing command's stderr quoted in the error message.
const STDERR_QUOTE: usize = 2048;
fn config_err(tool: &str, msg: impl std::fmt::Display) -> ToolFailure {
    ToolFailure::new(
        "ToolFailed",
        format!("command tool {tool:?} is misconfigured: {msg}"),
    )
}

fn arg_text(
    tool: &str,
    names: &[&str],
    args: &[Data],
    i: usize,
) -> Result<Option<String>, ToolFailure> {
    let name = names.get(i).copied().unwrap_or("arg");
    let Some(d) = args.get(i) else {
        return Err(ToolFailure::new(
            "BadArgument",
            format!("{tool}() missing required argument: '{name}'"),
        ));
    };
    if *d == Data::None {
        return Ok(None);
    }
    let Some(s) = value::scalar_text(d) else {
        return Err(ToolFailure::new(
            "BadArgument",
            format!(
                "{tool}() argument '{name}' must be str, int, float, bool or None, not {}",
                d.type_name()
            ),
        ));
    };
    if s.contains('\0') {
        return Err(ToolFailure::new(
            "BadArgument",
            format!("{tool}() argument '{name}' contains a NUL character"),
        ));
    }
    Ok(Some(s))
}

/// Expand the argv template with the call's arguments.
fn expand_argv(
    c: &CommandTool,
    spec: &ToolSpec,
    args: &[Data],
) -> Result<Vec<String>, ToolFailure> {
    let tool = spec.name.as_str();
    let names: Vec<&str> = spec.args.iter().map(|a| a.name.as_str()).collect();
    let mut out = Vec::with_capacity(c.argv.len());
    let mut after_dashdash = false;
    for item in &c.argv {
        if let Some(i) = item.whole_arg() {
            // A whole item: exactly one argv item, or none for None.
            if let Some(s) = arg_text(tool, &names, args, i)? {
                check_option(tool, &names, i, &s, after_dashdash || c.allow_options)?;
                out.push(s);
            }
            continue;
        }
        let mut s = String::new();
        for (j, seg) in item.0.iter().enumerate() {
            match seg {
                Seg::Lit(l) => s.push_str(l),
                Seg::Arg(i) => {
                    let v = arg_text(tool, &names, args, *i)?.unwrap_or_else(|| "None".into());
                    if j == 0 {
                        check_option(tool, &names, *i, &v, after_dashdash || c.allow_options)?;
                    }
                    s.push_str(&v);
                }
            }
        }
        if item.literal() == Some("--") {
            after_dashdash = true;
        }
        out.push(s);
    }
    if out.first().is_none_or(String::is_empty) {
        return Err(config_err(tool, "'argv' is empty"));
    }
    Ok(out)
}

fn check_option(
    tool: &str,
    names: &[&str],
    i: usize,
    s: &str,
    allowed: bool,
) -> Result<(), ToolFailure> {
    if !allowed && s.starts_with('-') {
        let name = names.get(i).copied().unwrap_or("arg");
        return Err(ToolFailure::new(
            "BadArgument",
            format!(
                "{tool}() argument '{name}' starts with '-' and would be read as an option; \
                 the tool's argv needs a \"--\" before it (or allow_options = true)"
            ),
        ));
    }
    Ok(())
}

fn expand_stdin(
    c: &CommandTool,
    spec: &ToolSpec,
    args: &[Data],
) -> Result<Option<Vec<u8>>, ToolFailure> {
    let Some(t) = &c.stdin else {
        return Ok(None);
    };
    let tool = spec.name.as_str();
    let names: Vec<&str> = spec.args.iter().map(|a| a.name.as_str()).collect();
    let mut s = String::new();
    for seg in &t.0 {
        match seg {
            Seg::Lit(l) => s.push_str(l),
            Seg::Arg(i) => {
                s.push_str(&arg_text(tool, &names, args, *i)?.unwrap_or_else(|| "None".into()));
            }
        }
    }
    Ok(Some(s.into_bytes()))
}

/// Resolve the program the way `execvp` would, but in lackpy's own `PATH`
/// (the jail grants read+execute on the resolved file).
fn find_program(tool: &str, name: &str) -> Result<PathBuf, ToolFailure> {
    use std::os::unix::fs::PermissionsExt;
    let ok = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return if p.is_absolute() && ok(&p) {
            Ok(p)
        } else {
            Err(config_err(
                tool,
                format!("program {name:?} is not an executable absolute path"),
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| CHILD_PATH.into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| ok(p))
        .ok_or_else(|| {
            ToolFailure::new(
                "ToolFailed",
                format!("{tool}: program {name:?} not found in PATH"),
            )
        })
}

/// Most lines a `lines` or `jsonl` tool's output may have: more values
/// than one reply to the worker can carry (its decoder counts each at a
/// wire node's size in memory). Why check before building them: 8 MiB of
/// empty lines built 8 million values (over 600 MiB of supervisor memory)
/// only for the reply to refuse them.
const MAX_LINES: usize =
    lackpy_policy::wire::MAX_FRAME_BYTES / std::mem::size_of::<lackpy_policy::wire::Node>();

fn parse_output(c: &CommandTool, spec: &ToolSpec, out: Vec<u8>) -> Result<Data, ToolFailure> {
    let tool = spec.name.as_str();
    if matches!(c.parse, Parse::Lines | Parse::JsonLines)
        && out.iter().filter(|b| **b == b'\n').count() >= MAX_LINES
    {
        return Err(ToolFailure::new(
            "TooLarge",
            format!("{tool}: the command printed more than {MAX_LINES} lines"),
        ));
    }
    let text = String::from_utf8(out).map_err(|_| {
        ToolFailure::new(
            "NotUtf8",
            format!("{tool}: the command's output is not UTF-8"),
        )
    })?;
    // Decoded straight into values, at most as many as the reply carries
    // (all lines of `jsonl` together).
    let mut left = value::MAX_VALUES;
    let mut json = |s: &str| -> Result<Data, ToolFailure> {
        let (d, n) = value::plain_from_slice(s.as_bytes(), left).map_err(|e| match e {
            value::JsonError::TooManyValues { .. } => ToolFailure::new(
                "TooLarge",
                format!(
                    "{tool}: the output holds more than {} JSON values (MAX_VALUES: what one reply to the program can carry)",
                    value::MAX_VALUES
                ),
            ),
            value::JsonError::Invalid(e) => {
                ToolFailure::new("ToolFailed", format!("{tool}: output is not JSON: {e}"))
            }
        })?;
        left -= n;
        Ok(d)
    };
    match c.parse {
        Parse::Text => Ok(Data::Str(text)),
        Parse::Lines => Ok(Data::List(
            text.lines().map(|l| Data::Str(l.to_string())).collect(),
        )),
        Parse::Json => json(&text),
        Parse::JsonLines => Ok(Data::List(
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(&mut json)
                .collect::<Result<_, _>>()?,
        )),
    }
}

/// Run one call of a `command`-provider tool.
///
/// # Errors
/// `BadArgument` for arguments the template refuses, `Timeout`, `TooLarge`,
/// `NotUtf8`, and `ToolFailed` for a failing command (status and stderr
/// quoted), a misconfigured tool, or a jail that cannot be set up.
pub fn call(
    c: &CommandTool,
    spec: &ToolSpec,
    args: &[Data],
    ws: &Workspace,
    run: &RunContext,
) -> Result<Data, ToolFailure> {
    let tool = spec.name.as_str();
    let argv = expand_argv(c, spec, args)?;
    let input = expand_stdin(c, spec, args)?;
    let timeout = cfg_f64(spec, "timeout")
        .or_else(|| cfg_f64(spec, "timeout_seconds"))
        .unwrap_or(DEFAULT_TIMEOUT_SECS)
        .min(3600.0);
    let timeout = run.clamp_timeout_secs(timeout);
    let cap = cfg_f64(spec, "max_bytes").map_or(READ_CAP as usize, |b| b as usize);
    let memory_mb = cfg_f64(spec, "memory_mb").map_or(DEFAULT_MEMORY_MB, |m| m as u64);
    let writable = spec.effects_ceiling >= 2 && c.writable;
    let ok_status = &c.ok_status;
    let env = cfg_env(spec)?;
    let ws_path = workspace_path(ws)?;
    let program = find_program(tool, &argv[0])?;
    if crate::trusted::in_writable_set(&program, &ws_path) {
        return Err(ToolFailure::new(
            "ToolFailed",
            format!(
                "{tool}: {}",
                crate::trusted::refusal("the program", &program, &ws_path)
            ),
        ));
    }
    // A literal argument naming a script the program could have written
    // (`["python3", "tool.py"]`, `["/bin/sh", "run.sh"]`; cwd is the
    // workspace): the interpreter would run a program's code.
    for lit in c.argv.iter().skip(1).filter_map(|t| t.literal()) {
        let script = crate::trusted::script_in_writable_set(lit, &ws_path, |t| ws_path.join(t));
        if let Some(p) = script {
            return Err(ToolFailure::new(
                "ToolFailed",
                format!(
                    "{tool}: {}",
                    crate::trusted::refusal("the script", &p, &ws_path)
                ),
            ));
        }
    }
    // A launcher that takes code from its working directory, the
    // workspace (`make`, `npm run`, `cargo`…), judged on the command line
    // as it will run (the program's values expanded).
    if !c.trust_workspace_code {
        if let Some(why) = crate::launchers::reads_workspace_code(&argv[0], &argv[1..], &ws_path) {
            return Err(ToolFailure::new(
                "ToolFailed",
                format!(
                    "{tool}: {}",
                    crate::launchers::refusal(&why, &ws_path, "[[tools]] entry")
                ),
            ));
        }
    }
    let jail_err = |e: crate::childjail::JailError| {
        ToolFailure::new(
            "ToolFailed",
            format!("{tool}: cannot jail the command ({e})"),
        )
    };
    // The program, and the installation of it and of each `#!` interpreter
    // it names (a script in a virtualenv needs the Python it links to);
    // inside the workspace only readable, the program file itself aside.
    let (mut read_only, mut read_exec): (Vec<PathBuf>, Vec<PathBuf>) = program_roots(&program)
        .into_iter()
        .partition(|p| p.starts_with(&ws_path));
    read_exec.push(program.clone());
    let read_write = if writable {
        vec![ws_path.clone()]
    } else {
        read_only.push(ws_path.clone());
        vec![]
    };
    let jail = Jail::prepare(&Spec {
        network: false,
        read_exec,
        read_only,
        read_write,
        cpu_seconds: Some(timeout.ceil() as u64 + 1),
        as_bytes: Some(memory_mb.saturating_mul(1024 * 1024)),
        data_bytes: None,
        fsize: if writable { 64 * 1024 * 1024 } else { 0 },
        nofile: 256,
        max_procs: cfg_f64(spec, "max_procs").map_or(DEFAULT_MAX_PROCS, |n| n as u64),
        hide_control_of: Some(ws_path.clone()),
    })
    .map_err(jail_err)?;
    // No code or configuration from the workspace, the command's cwd.
    let guard = crate::trusted::cwd_guard(&argv[0], &program, &argv[1..]);
    let mut cmd = Command::new(&program);
    cmd.arg0(&argv[0])
        .args(&guard.args_before)
        .args(&argv[1..])
        .current_dir(&ws_path)
        .env_clear()
        .env("PATH", CHILD_PATH)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in &guard.env {
        cmd.env(k, v);
    }
    for (k, v) in &env {
        cmd.env(k, v);
    }
    let t0 = Instant::now();
    let mut child = spawn_jailed_for_call(jail, &mut cmd, || {
        format!("{tool}: cannot start {:?} in its jail", argv[0])
    })?;
    let deadline = t0 + Duration::from_secs_f64(timeout);
    // Feed stdin from a thread: a command that does not read it must not
    // block us; the thread ends when the pipe closes (EPIPE once killed).
    let feeder = match (input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => Some(std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        })),
        _ => None,
    };
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group(&mut child);
        return Err(ToolFailure::new("ToolFailed", "command pipes unavailable"));
    };
    let until = Until::new(deadline, run.cancel.clone());
    // Why a wait on the command ended early, as the call's failure.
    let failure = |e: PipeError| match e {
        PipeError::Cancelled => ToolFailure::new(
            "Timeout",
            format!("the run was cancelled during {tool}(); the command was killed"),
        ),
        PipeError::Timeout => ToolFailure::new(
            "Timeout",
            format!("{tool}() did not finish within {timeout} s; the command was killed"),
        ),
        PipeError::TooLarge => ToolFailure::new(
            "TooLarge",
            format!("{tool}() printed more than {cap} bytes"),
        ),
        PipeError::Eof | PipeError::Io(_) => ToolFailure::new(
            "ToolFailed",
            format!("{tool}(): reading the command's output failed"),
        ),
    };
    let read = read_both(&stdout, &stderr, &until, cap, STDERR_QUOTE);
    let result = match read {
        Ok(x) => x,
        Err(e) => {
            kill_group(&mut child);
            if let Some(f) = feeder {
                let _ = f.join();
            }
            return Err(failure(e));
        }
    };
    // Both pipes closed: wait for the exit, still bounded by the deadline
    // and the cancel flag.
    let status = loop {
        let ended = until.ended();
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if ended.is_none() => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                kill_group(&mut child);
                return Err(failure(ended.unwrap_or(PipeError::Timeout)));
            }
        }
    };
    // Anything it left behind in its group goes too.
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let (out, err) = result;
    match (status.code(), status.signal()) {
        (Some(code), _) if ok_status.contains(&i64::from(code)) => parse_output(c, spec, out),
        (code, sig) => {
            if sig == Some(libc::SIGXCPU) {
                return Err(ToolFailure::new(
                    "Timeout",
                    format!("{tool}() exceeded its CPU time"),
                ));
            }
            let how = match (code, sig) {
                (Some(c), _) => format!("exited with status {c}"),
                (None, Some(s)) => format!("was killed by signal {s}"),
                _ => "failed".to_string(),
            };
            let stderr = String::from_utf8_lossy(&err);
            let stderr = stderr.trim();
            Err(ToolFailure::new(
                "ToolFailed",
                if stderr.is_empty() {
                    format!("{tool}(): {} {how}", argv[0])
                } else {
                    format!("{tool}(): {} {how}: {stderr}", argv[0])
                },
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed settings, as the dispatcher gets them.
    fn typed(spec: &ToolSpec) -> Result<CommandTool, ToolFailure> {
        match lackpy_policy::config::Provider::of(spec) {
            Ok(lackpy_policy::config::Provider::Command(c)) => Ok(c),
            Ok(_) => Err(config_err(&spec.name, "not a command tool")),
            Err(e) => Err(config_err(&spec.name, e)),
        }
    }

    /// A call outside any run.
    fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
        super::call(&typed(spec)?, spec, args, ws, &RunContext::default())
    }

    fn expand_argv(spec: &ToolSpec, args: &[Data]) -> Result<Vec<String>, ToolFailure> {
        super::expand_argv(&typed(spec)?, spec, args)
    }
    use lackpy_policy::config::ArgSpec;

    fn tool(argv: &[&str], args: &[&str]) -> ToolSpec {
        let mut t = ToolSpec {
            name: "t".into(),
            provider: "command".into(),
            args: args
                .iter()
                .map(|a| ArgSpec {
                    name: (*a).into(),
                    type_name: "str".into(),
                    description: String::new(),
                })
                .collect(),
            grade_w: 1,
            ..ToolSpec::default()
        };
        t.provider_config.insert(
            "argv".into(),
            serde_json::Value::Array(argv.iter().map(|s| (*s).into()).collect()),
        );
        t
    }

    /// Output of more lines than one reply can carry is refused before a
    /// value per line is built (8 MiB of newlines built 8 million).
    #[test]
    fn too_many_lines_are_refused_before_building_them() {
        let mut t = tool(&["/bin/cat"], &[]);
        t.provider_config.insert("parse".into(), "lines".into());
        let c = typed(&t).unwrap();
        let e = parse_output(&c, &t, vec![b'\n'; MAX_LINES]).unwrap_err();
        assert_eq!(e.type_name, "TooLarge");
        assert!(e.message.contains("lines"), "{}", e.message);
        let v = parse_output(&c, &t, vec![b'\n'; MAX_LINES / 2]).unwrap();
        assert!(matches!(v, Data::List(l) if l.len() == MAX_LINES / 2));
    }

    fn s(x: &str) -> Data {
        Data::Str(x.into())
    }

    #[test]
    fn templates_expand_as_whole_items() {
        let t = tool(&["echo", "--", "{a}", "x={b}!", "{{lit}}"], &["a", "b"]);
        assert_eq!(
            expand_argv(&t, &[s("; rm -rf x"), Data::Int(3)]).unwrap(),
            vec!["echo", "--", "; rm -rf x", "x=3!", "{lit}"]
        );
        assert_eq!(
            expand_argv(&t, &[Data::None, Data::Bool(true)]).unwrap(),
            vec!["echo", "--", "x=True!", "{lit}"]
        );
        let e = expand_argv(&t, &[s("a")]).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
        let e = expand_argv(&t, &[Data::List(vec![]), s("b")]).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
        let e = expand_argv(&t, &[s("a\0b"), s("b")]).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
    }

    #[test]
    fn option_injection_is_refused_without_dashdash() {
        let t = tool(&["grep", "{p}", "f"], &["p"]);
        let e = expand_argv(&t, &[s("--include=/etc/passwd")]).unwrap_err();
        assert_eq!(e.type_name, "BadArgument");
        assert!(e.message.contains("starts with '-'"));
        assert_eq!(
            expand_argv(&t, &[s("a-b")]).unwrap(),
            vec!["grep", "a-b", "f"]
        );
        let mut t2 = t.clone();
        t2.provider_config
            .insert("allow_options".into(), true.into());
        assert_eq!(
            expand_argv(&t2, &[s("-i")]).unwrap(),
            vec!["grep", "-i", "f"]
        );
        // Embedded after a literal prefix is fine: the item is the prefix's.
        let t3 = tool(&["grep", "--regexp={p}"], &["p"]);
        assert_eq!(
            expand_argv(&t3, &[s("-x")]).unwrap(),
            vec!["grep", "--regexp=-x"]
        );
    }

    #[test]
    fn misconfigurations_are_clear() {
        for (argv, msg) in [
            (vec!["{p}"], "must be literal"),
            (vec!["echo", "{q}"], "not one of its declared args"),
            (vec!["echo", "{p"], "unclosed"),
            (vec!["echo", "p}"], "single '}'"),
        ] {
            let e = expand_argv(&tool(&argv, &["p"]), &[s("x")]).unwrap_err();
            assert_eq!(e.type_name, "ToolFailed");
            assert!(e.message.contains(msg), "{}", e.message);
        }
        let mut t = tool(&["echo"], &[]);
        t.provider_config.remove("argv");
        assert!(expand_argv(&t, &[]).unwrap_err().message.contains("argv"));
    }

    /// A command installed in a virtualenv (a `#!` script whose Python is
    /// installed elsewhere) runs in the jail.
    #[test]
    fn virtualenv_script_runs_jailed() {
        let d = tempfile::tempdir().unwrap();
        let venv = d.path().join("venv");
        let made = std::process::Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .output();
        // python3 (with venv) is required by the test suite (scripts/test).
        assert!(
            made.is_ok_and(|o| o.status.success()),
            "python3 -m venv failed: this test needs it"
        );
        let script = venv.join("bin/hello");
        std::fs::write(
            &script,
            format!(
                "#!{}\nimport sys\nprint('hello from', sys.prefix == sys.base_prefix and 'base' or 'venv')\n",
                venv.join("bin/python").display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ws_dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(ws_dir.path()).unwrap();
        let t = tool(&[script.to_str().unwrap()], &[]);
        assert_eq!(call(&t, &[], &ws).unwrap(), s("hello from venv\n"));
    }

    #[test]
    fn runs_jailed_and_literal() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.txt"), "one\ntwo\n").unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let t = tool(&["/bin/echo", "--", "{x}"], &["x"]);
        for evil in [
            "; rm -rf a.txt",
            "$(touch pwned)",
            "`touch pwned`",
            "a.txt && id",
            "*",
        ] {
            let v = call(&t, &[s(evil)], &ws).unwrap();
            assert_eq!(v, s(&format!("-- {evil}\n")));
        }
        assert!(!d.path().join("pwned").exists());
        assert!(d.path().join("a.txt").exists());

        let mut cat = tool(&["cat", "a.txt"], &[]);
        cat.provider_config.insert("parse".into(), "lines".into());
        assert_eq!(
            call(&cat, &[], &ws).unwrap(),
            Data::List(vec![s("one"), s("two")])
        );

        // Outside the workspace: denied by landlock (home, /tmp), no network.
        let outside = tool(&["cat", "{p}"], &["p"]);
        let e = call(&outside, &[s("/proc/self/status")], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed", "{}", e.message);
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("secret"), "s").unwrap();
        let e = call(
            &outside,
            &[s(&other.path().join("secret").to_string_lossy())],
            &ws,
        )
        .unwrap_err();
        assert!(e.message.contains("Permission denied"), "{}", e.message);

        // Read-only workspace unless writable.
        let touch = tool(&["sh", "-c", "echo hi > made.txt"], &[]);
        assert!(call(&touch, &[], &ws).is_err());
        assert!(!d.path().join("made.txt").exists());
        let mut wt = touch.clone();
        wt.effects_ceiling = 3;
        wt.provider_config.insert("writable".into(), true.into());
        call(&wt, &[], &ws).unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("made.txt")).unwrap(),
            "hi\n"
        );

        // stdin, json, status, timeout, cap, env.
        let mut j = tool(&["cat"], &["v"]);
        j.provider_config
            .insert("stdin".into(), "{{\"k\": [{v}]}}".into());
        j.provider_config.insert("parse".into(), "json".into());
        assert_eq!(
            call(&j, &[Data::Int(7)], &ws).unwrap(),
            Data::Dict(vec![(s("k"), Data::List(vec![Data::Int(7)]))])
        );
        let f = tool(&["sh", "-c", "echo oops >&2; exit 4"], &[]);
        let e = call(&f, &[], &ws).unwrap_err();
        assert_eq!(e.message, "t(): sh exited with status 4: oops");
        let mut f2 = f.clone();
        f2.provider_config
            .insert("ok_status".into(), serde_json::json!([0, 4]));
        assert_eq!(call(&f2, &[], &ws).unwrap(), s(""));
        let mut slow = tool(&["sleep", "30"], &[]);
        slow.provider_config.insert("timeout".into(), 0.3.into());
        let t0 = Instant::now();
        assert_eq!(call(&slow, &[], &ws).unwrap_err().type_name, "Timeout");
        assert!(t0.elapsed() < Duration::from_secs(5));
        let mut big = tool(&["sh", "-c", "yes | head -c 100000"], &[]);
        big.provider_config.insert("max_bytes".into(), 1000.into());
        assert_eq!(call(&big, &[], &ws).unwrap_err().type_name, "TooLarge");
        // A fork bomb is bounded by max_procs: count the children that ran.
        let mut bomb = tool(
            &[
                "sh",
                "-c",
                "i=0; while [ $i -lt 100 ]; do (echo x >> forks.txt; sleep 1) >/dev/null 2>&1 & \
                 i=$((i+1)); done 2>/dev/null; sleep 0.5; wc -l < forks.txt",
            ],
            &[],
        );
        bomb.effects_ceiling = 3;
        bomb.provider_config.insert("writable".into(), true.into());
        bomb.provider_config.insert("max_procs".into(), 10.into());
        let n: i64 = match call(&bomb, &[], &ws).unwrap() {
            Data::Str(t) => t.trim().parse().unwrap(),
            other => panic!("{other:?}"),
        };
        // The kernel exempts (init-namespace) root from RLIMIT_NPROC.
        if !nix::unistd::getuid().is_root() {
            assert!((1..10).contains(&n), "{n} children ran");
        }
        // Nothing it starts outlives it, not even a process that left its
        // process group (setsid): the command is pid 1 of its own pid
        // namespace. The marker argument lets us look for survivors.
        let marker = format!("{}", 4_000_000 + std::process::id() % 1_000_000);
        let escape = tool(
            &["sh", "-c", &format!("setsid sleep {marker} & echo started")],
            &[],
        );
        assert_eq!(call(&escape, &[], &ws).unwrap(), s("started\n"));
        let t0 = Instant::now();
        let survivor = || {
            std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
                std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
            })
        };
        while survivor() && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!survivor(), "a setsid() child of a command outlived it");
        let envt = tool(&["env"], &[]);
        assert_eq!(
            call(&envt, &[], &ws).unwrap(),
            s(&format!("PATH={CHILD_PATH}\n"))
        );
        let shadow = tool(&["cat", "/etc/shadow"], &[]);
        assert!(call(&shadow, &[], &ws).is_err());
        let passwd = tool(&["head", "-c", "1", "/etc/passwd"], &[]);
        assert!(call(&passwd, &[], &ws).is_ok());
        let net = tool(&["cat", "/sys/class/net/lo/operstate"], &[]);
        let _ = call(&net, &[], &ws); // /sys is not granted: must fail, not hang
        assert!(call(&net, &[], &ws).is_err());
    }
}
