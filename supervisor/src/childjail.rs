//! Asking for the jail of a process the supervisor starts on the
//! operator's behalf: `command` tools (one process per call),
//! `[mcp_servers]` (one process per server, kept for many calls) and the
//! python helper. The jail itself is the workers' one
//! ([`lackpy_worker::jail`]: [`Plan::for_program`] says what it does, step
//! by step); what is the supervisor's own is here: which paths a program
//! needs ([`program_roots`], [`project_root`]), and opening the
//! workspace's control directory so the jail can cover it.
//!
//! [`Jail::prepare`] does everything that allocates, in the parent;
//! [`Jail::attach`] (or [`Jail::attach_dying_with_spawner`]) runs the plan
//! between `fork` and `exec` with raw, async-signal-safe syscalls only. A
//! step that fails fails the spawn, naming the step and errno (pass the
//! spawn's error through [`JailError::explain_spawn`]); there is no
//! unjailed fallback.

#![deny(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::ptr_as_ptr
)]

use lackpy_worker::jail::{ControlDir, Pinned, Plan, Step};
pub use lackpy_worker::jail::{JailError, ProgramSpec as Spec, ETC_FILES, SYSTEM_DIRS};
use std::path::{Path, PathBuf};

/// A [`Spec`] made ready to run between fork and exec (all allocation done).
#[derive(Debug)]
pub struct Jail {
    plan: Plan,
}

impl Jail {
    /// Open the control directory to hide (see [`Spec::hide_control_of`])
    /// and build the jail's plan.
    ///
    /// # Errors
    /// [`JailError`] (step `hide_control` or `landlock`) when the control
    /// directory cannot be opened, or landlock is missing or refuses the
    /// rules.
    pub fn prepare(spec: &Spec) -> Result<Self, JailError> {
        let control = match &spec.hide_control_of {
            None => None,
            Some(ws) => control_dir(ws, spec)?,
        };
        Ok(Jail {
            plan: Plan::for_program(spec, control.as_ref())?,
        })
    }

    /// Make `cmd` enter this jail between fork and exec (its `pre_exec`
    /// hook). The jail moves into the hook, so it lives as long as `cmd`.
    pub fn attach(self, cmd: &mut std::process::Command) {
        self.plan.attach(cmd);
    }

    /// [`Jail::attach`], and the jail's outer process dies with the thread
    /// that spawns it: for a child that thread outlives (see
    /// `Plan::attach_dying_with_spawner`).
    pub fn attach_dying_with_spawner(self, cmd: &mut std::process::Command) {
        self.plan.attach_dying_with_spawner(cmd);
    }
}

/// The control directory of `ws` to cover, opened beneath the workspace
/// without following a symlink: created first only for a program that
/// could create it (write access over the workspace); otherwise an absent
/// control directory has nothing to hide and stays absent (`None`).
fn control_dir(ws: &Path, spec: &Spec) -> Result<Option<ControlDir>, JailError> {
    let path = ws.join(lackpy_beneath::CONTROL_DIR);
    let fail = |what: &dyn std::fmt::Display| {
        JailError::detail(
            Step::HideControl,
            format!("control directory {}: {what}", path.display()),
        )
    };
    let writable = spec
        .read_write
        .iter()
        .any(|p| ws.starts_with(p) || p.starts_with(ws));
    let workspace = lackpy_beneath::Dir::open(ws).map_err(|e| fail(&e))?;
    match lackpy_beneath::control_dir(&workspace, writable).map_err(|e| fail(&e))? {
        None if !writable => Ok(None),
        None => Err(fail(&"missing")),
        Some(dir) => {
            let st = dir.own_stamp().ok_or_else(|| fail(&"missing"))?;
            Ok(Some(ControlDir {
                path: path.clone(),
                dev: st.dev,
                ino: st.ino,
                git: if writable {
                    git_entry(ws, &workspace)
                } else {
                    None
                },
            }))
        }
    }
}

/// The workspace's own `.git` (a directory, or a `gitdir:` file), pinned
/// for the jail to make read-only; `None` when there is none. A `.git`
/// that is a symlink is not followed and stays as it is (logged): the bind
/// would cover whatever it points to, which the program may have chosen.
fn git_entry(ws: &Path, workspace: &lackpy_beneath::Dir) -> Option<Pinned> {
    use lackpy_beneath::Kind;
    let st = workspace.stamp(".git")?;
    match st.kind {
        Kind::Dir | Kind::File => Some(Pinned {
            path: ws.join(".git"),
            dev: st.dev,
            ino: st.ino,
        }),
        Kind::Symlink | Kind::Other => {
            tracing::warn!(
                workspace = %ws.display(),
                "the workspace's .git is not a directory or file: not made read-only for a writable child"
            );
            None
        }
    }
}

/// The directory a program file belongs to, for granting it read+execute:
/// the installation prefix when the file sits in a `bin`, `sbin` or `shims`
/// directory (`~/.pyenv/shims/python3` → `~/.pyenv`, `venv/bin/python` →
/// `venv`), else its own directory. Never `/` or the home directory itself
/// (then only the file).
pub fn install_root(program: &Path) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let too_wide = |p: &Path| p.parent().is_none() || Some(p) == home.as_deref();
    let Some(dir) = program.parent() else {
        return program.to_path_buf();
    };
    let in_bin = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| matches!(n, "bin" | "sbin" | "shims"));
    if in_bin {
        if let Some(prefix) = dir.parent().filter(|p| !too_wide(p)) {
            return prefix.to_path_buf();
        }
    }
    if too_wide(dir) {
        program.to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// How many `#!` interpreters deep [`program_roots`] follows a script (the
/// kernel's own limit on nested interpreters).
const MAX_SHEBANG_DEPTH: usize = 4;

/// The file `name` as `execvp` would find it on `PATH` (or `name` itself
/// when it contains a `/`).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The interpreter a `#!` script names: the first word of its first line,
/// or for `#!/usr/bin/env [-S] [-options] NAME` the program `NAME` found on
/// `PATH`. `None` for anything that is not a readable `#!` script.
fn shebang_interpreter(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head.get(..n)?.strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interp = words.next()?;
    if Path::new(interp).file_name().is_some_and(|f| f == "env") {
        let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return find_on_path(name);
    }
    Some(PathBuf::from(interp))
}

/// What a program needs to read and execute to start: the installation
/// ([`install_root`]) of the program as found and of its canonical target,
/// then the same for each `#!` interpreter in turn (a script in a virtual
/// environment needs the Python the environment links to, wherever that
/// is installed).
pub fn program_roots(program: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut next = Some(program.to_path_buf());
    for _ in 0..=MAX_SHEBANG_DEPTH {
        let Some(p) = next.take() else { break };
        out.push(install_root(&p));
        let real = std::fs::canonicalize(&p).ok();
        if let Some(r) = &real {
            out.push(install_root(r));
        }
        next = shebang_interpreter(real.as_deref().unwrap_or(&p));
    }
    out.sort();
    out.dedup();
    out
}

/// Files whose presence marks a directory as a project's root.
const PROJECT_MARKERS: &[&str] = &[
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "Cargo.toml",
    "go.mod",
    "node_modules",
    ".git",
];

/// How many directories up [`project_root`] looks.
const PROJECT_DEPTH: usize = 6;

/// The project a file belongs to: the nearest directory above it (at most
/// [`PROJECT_DEPTH`] up) holding a project marker (`package.json`,
/// `pyproject.toml`, `.git`, ...), so that a server script started as
/// `node build/index.js` can read its `node_modules`. Never `/` or the home
/// directory; `None` when there is no such directory.
pub fn project_root(file: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dir = file.parent();
    for _ in 0..PROJECT_DEPTH {
        let d = dir?;
        if d.parent().is_none() || Some(d) == home.as_deref() {
            return None;
        }
        if PROJECT_MARKERS.iter().any(|m| d.join(m).exists()) {
            return Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Run `sh -c script` in `cwd` under the jail of `spec`: (exit code, stdout).
    fn sh(spec: &Spec, cwd: &Path, script: &str) -> std::io::Result<(Option<i32>, String)> {
        let jail = Jail::prepare(spec).map_err(std::io::Error::other)?;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", script])
            .current_dir(cwd)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        jail.attach(&mut cmd);
        let out = cmd.output().map_err(JailError::explain_spawn)?;
        Ok((
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ))
    }

    fn base_spec() -> Spec {
        Spec {
            nofile: 64,
            max_procs: 16,
            ..Spec::default()
        }
    }

    /// A program (here a shell, as a `command` tool or MCP server would be
    /// started) runs under the one jail: pid 1 of its own pid namespace,
    /// the workspace's `.lackpy` an empty unwritable directory, no /proc,
    /// no home, no `/etc/shadow`.
    #[test]
    fn program_runs_in_the_one_jail() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".lackpy")).unwrap();
        std::fs::write(ws.join(".lackpy/config.toml"), "secret").unwrap();
        let spec = Spec {
            read_write: vec![ws.clone()],
            hide_control_of: Some(ws.clone()),
            fsize: 1 << 20,
            ..base_spec()
        };
        let script = "echo pid=$$; ls -A .lackpy; echo listed; \
            cat .lackpy/config.toml && echo READ; \
            echo x > .lackpy/new && echo WROTE; \
            ls /proc >/dev/null 2>&1 && echo PROC; \
            cat /etc/shadow >/dev/null 2>&1 && echo SHADOW; \
            echo ok > here.txt && echo wrote-ws";
        let (code, out) = sh(&spec, &ws, script).unwrap();
        assert_eq!(code, Some(0), "{out}");
        assert_eq!(out, "pid=1\nlisted\nwrote-ws\n");
        assert_eq!(
            std::fs::read_to_string(ws.join(".lackpy/config.toml")).unwrap(),
            "secret"
        );
        assert!(!ws.join(".lackpy/new").exists());
        assert!(ws.join("here.txt").exists());
    }

    /// Without `network`, a program has no network: not even the host's
    /// loopback (its own network namespace, and landlock denies TCP).
    #[test]
    fn program_cannot_reach_the_network() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let d = tempfile::tempdir().unwrap();
        // bash's /dev/tcp, else python3: the test needs one of them.
        let connect = if Path::new("/bin/bash").exists() {
            format!("/bin/bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo CONNECTED")
        } else {
            assert!(
                find_on_path("python3").is_some(),
                "the network test needs bash or python3"
            );
            format!(
                "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' && echo CONNECTED"
            )
        };
        let mut spec = base_spec();
        spec.read_exec = find_on_path("python3")
            .map(|p| program_roots(&p))
            .unwrap_or_default();
        let (_, out) = sh(&spec, d.path(), &connect).unwrap();
        assert_eq!(out, "", "a jailed program reached the host's loopback");
        // The same command with `network` kept does connect: the check
        // above can fail.
        spec.network = true;
        let (_, out) = sh(&spec, d.path(), &connect).unwrap();
        assert_eq!(out, "CONNECTED\n");
    }

    /// A step that fails in the forked child reaches the parent with its
    /// step, layer and errno: raising `RLIMIT_NOFILE` past the hard limit
    /// (needs a capability of the host's user namespace) fails the
    /// `rlimits` step.
    #[test]
    fn a_failing_step_names_step_and_layer() {
        let d = tempfile::tempdir().unwrap();
        let spec = Spec {
            nofile: 1 << 40,
            ..base_spec()
        };
        let e = sh(&spec, d.path(), "true").unwrap_err();
        let j = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<JailError>())
            .unwrap_or_else(|| panic!("not a jail error: {e:?}"));
        assert_eq!(j.step(), "rlimits");
        assert_eq!(j.layer(), lackpy_worker::jail::Layer::Rlimits);
        assert_eq!(j.errno(), libc::EPERM);
        assert!(e.to_string().starts_with("rlimits: EPERM (1)"), "{e}");
    }

    /// A control directory swapped after it was checked is not covered
    /// blindly: the child finds another inode and fails `hide_control`.
    #[test]
    fn a_swapped_control_dir_fails_hide_control() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".lackpy")).unwrap();
        let spec = Spec {
            hide_control_of: Some(ws.clone()),
            ..base_spec()
        };
        let jail = Jail::prepare(&spec).unwrap();
        std::fs::rename(ws.join(".lackpy"), ws.join("old")).unwrap();
        std::fs::create_dir(ws.join(".lackpy")).unwrap();
        let mut cmd = std::process::Command::new("/bin/true");
        jail.attach(&mut cmd);
        let e = cmd.status().map_err(JailError::explain_spawn).unwrap_err();
        let j = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<JailError>())
            .unwrap_or_else(|| panic!("not a jail error: {e:?}"));
        assert_eq!((j.step(), j.errno()), ("hide_control", libc::ESTALE));
        assert_eq!(j.layer(), lackpy_worker::jail::Layer::Namespaces);
    }

    #[test]
    fn shebang_chains_and_projects() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        // A "venv" whose python links to an interpreter installed elsewhere.
        let inst = root.join("inst/bin");
        std::fs::create_dir_all(&inst).unwrap();
        std::fs::write(inst.join("python9"), "#!/bin/sh\n").unwrap();
        let venv = root.join("proj/.venv/bin");
        std::fs::create_dir_all(&venv).unwrap();
        std::os::unix::fs::symlink(inst.join("python9"), venv.join("python")).unwrap();
        let script = venv.join("my-server");
        std::fs::write(
            &script,
            format!("#!{}\nimport x\n", venv.join("python").display()),
        )
        .unwrap();
        let roots = program_roots(&script);
        assert!(roots.contains(&root.join("proj/.venv")), "{roots:?}");
        assert!(roots.contains(&root.join("inst")), "{roots:?}");
        assert!(roots.contains(&PathBuf::from("/bin")), "{roots:?}");
        // `#!/usr/bin/env NAME` is looked up on PATH.
        let envs = root.join("envs");
        std::fs::write(&envs, "#!/usr/bin/env -S sh -e\n").unwrap();
        let roots = program_roots(&envs);
        assert!(
            roots
                .iter()
                .any(|r| r == Path::new("/usr") || r.ends_with("bin")),
            "{roots:?}"
        );
        // The project a script belongs to.
        std::fs::write(root.join("proj/package.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("proj/build")).unwrap();
        assert_eq!(
            project_root(&root.join("proj/build/index.js")),
            Some(root.join("proj"))
        );
        assert_eq!(project_root(&root.join("inst/bin/python9")), None);
    }

    #[test]
    fn install_roots() {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let h = Path::new(&home);
        assert_eq!(
            install_root(&h.join(".pyenv/shims/python3")),
            h.join(".pyenv")
        );
        assert_eq!(
            install_root(Path::new("/srv/app/venv/bin/python")),
            Path::new("/srv/app/venv")
        );
        assert_eq!(
            install_root(Path::new("/srv/tools/server.py")),
            Path::new("/srv/tools")
        );
        // Never the home directory or `/` as a whole.
        assert_eq!(install_root(&h.join("bin/tool")), h.join("bin"));
        assert_eq!(install_root(&h.join("tool")), h.join("tool"));
        assert_eq!(install_root(Path::new("/tool")), Path::new("/tool"));
        assert_eq!(install_root(Path::new("/bin/sh")), Path::new("/bin"));
    }
}
